#!/usr/bin/env python3
"""No circles between source files: reads the symbols each object file
defines and uses (nm), draws an edge from a file to every file whose
function or variable it names, and fails when the edges close a circle,
printing each circle with the symbols on its edges.  Calls through tables
(a strategy's or a back end's function pointers) are not edges: that is how
a lower layer reaches code above it (docs/architecture.md).

Usage: no_cycles.py OBJECT...   (names are shown from the part after
'.dir/' of an object's path: 'core/engine.c')."""
import collections
import subprocess
import sys


def name_of(path):
    head, _, tail = path.rpartition(".dir/")
    if "/" not in tail and head:  # a folder's own target: mpiio/errors.c
        tail = head.rsplit("/", 1)[-1].replace("aggio_", "", 1) + "/" + tail
    return tail[:-2] if tail.endswith(".o") else tail


def external(symbol):
    """The MPI library's names: libaggio-mpiio defines some MPI_* calls for
    the program, which the MPI library's other code may reach; they are the
    program's interface, not an edge between aggio's files."""
    return symbol.startswith(("MPI_", "PMPI_", "mpi_", "pmpi_"))


def read_symbols(objects):
    defined, used = {}, collections.defaultdict(set)
    for obj in objects:
        out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
        me = name_of(obj)
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in "TDBRVWC" and not external(f[2]):
                defined[f[2]] = me
            elif len(f) == 2 and f[0] == "U" and not external(f[1]):
                used[me].add(f[1])
    return defined, used


def graph(defined, used):
    edges = collections.defaultdict(dict)  # a -> b -> symbols
    for a, syms in used.items():
        for s in syms:
            b = defined.get(s)
            if b and b != a:
                edges[a].setdefault(b, []).append(s)
    return edges


def circles(nodes, edges):
    """Tarjan's strongly connected components, without recursion."""
    index, low, on, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, {}))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def main(objects):
    if not objects:
        print("no object files given", file=sys.stderr)
        return 2
    defined, used = read_symbols(objects)
    edges = graph(defined, used)
    nodes = sorted(set(defined.values()) | set(used))
    found = circles(nodes, edges)
    nedges = sum(len(v) for v in edges.values())
    print(f"{len(nodes)} files, {nedges} edges between them, {len(found)} circles")
    for comp in found:
        print("circle: " + " ".join(comp))
        for a in comp:
            for b, syms in sorted(edges.get(a, {}).items()):
                if b in comp:
                    print(f"  {a} -> {b}: {', '.join(sorted(syms)[:6])}")
    return 1 if found else 0


if __name__ == "__main__":
    # CMake's $<TARGET_OBJECTS:...> arrives as one ';'-separated argument
    sys.exit(main([o for a in sys.argv[1:] for o in a.split(";") if o]))

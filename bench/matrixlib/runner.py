"""Running the matrix: building aggio-bench, the settle step between runs,
one launch of aggio-bench per (repetition, configuration), and the traced
run rendered by `aggio report`."""
import json
import os
import shlex
import shutil
import subprocess
import sys
import time

from . import plan

DROP_CACHES = "/proc/sys/vm/drop_caches"


# ---- building -------------------------------------------------------------------

def build(repo, flavor, build_dir, log):
    """Configures and builds aggio-bench with this MPI; returns the binary."""
    f = plan.FLAVORS[flavor]
    cfg = ["cmake", "-S", repo, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
           "-DAGGIO_BUILD_TESTS=OFF"]
    if flavor == "mpich":
        cfg += [f"-DMPI_C_COMPILER={shutil.which(f['cc'])}",
                f"-DMPIEXEC_EXECUTABLE={shutil.which(f['mpiexec'])}"]
    jobs = str(min(os.cpu_count() or 2, 2))
    for cmd in (cfg, ["cmake", "--build", build_dir, "--target", "aggio-bench", "-j", jobs]):
        print("+", shlex.join(cmd), flush=True)
        p = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT)
        if p.returncode:
            raise SystemExit(f"matrix: build for {flavor} failed (log: {log.name})")
    return find_binary(build_dir)


def refresh(build_dir, log):
    """A build directory given on the command line is brought up to date
    first: a stale library would be measured as if it were the tree's
    (a run once measured a build older than the source it reported on)."""
    if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
        return find_binary(build_dir)
    jobs = str(min(os.cpu_count() or 2, 2))
    cmd = ["cmake", "--build", build_dir, "--target", "aggio-bench", "-j", jobs]
    print("+", shlex.join(cmd), flush=True)
    if subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode:
        raise SystemExit(f"matrix: bringing {build_dir} up to date failed (log: {log.name})")
    return find_binary(build_dir)


def find_binary(build_dir):
    for sub in ("bench/aggio-bench", "aggio-bench"):
        path = os.path.join(build_dir, sub)
        if os.access(path, os.X_OK):
            return path
    raise SystemExit(f"matrix: no aggio-bench in {build_dir}")


# ---- the settle step ------------------------------------------------------------

def can_drop_caches():
    return os.geteuid() == 0 and os.access(DROP_CACHES, os.W_OK)


def settle(pause, drop):
    """Between runs: write back dirty pages, drop the page cache where
    permitted, let the device go quiet.  Returns True if it dropped."""
    os.sync()
    dropped = False
    if drop:
        try:
            with open(DROP_CACHES, "w") as f:
                f.write("3\n")
            dropped = True
        except OSError:
            pass
    if pause > 0:
        time.sleep(pause)
    return dropped


# ---- one run --------------------------------------------------------------------

def command(cell, binary, json_path=None):
    cmd = cell["launch"] + [binary] + cell["bench"]
    return cmd + ["--json", json_path] if json_path else cmd


def run_one(cell, rep, binary, json_path, timeout, log):
    """Launches one repetition of one cell; returns its result: the JSON
    record, or the error."""
    env = dict(os.environ, **plan.FLAVORS[cell["flavor"]]["env"])
    if cell.get("stats"):  # node-local runs: bytes across nodes, from aggio's statistics
        env["AGGIO_STATS"] = "1"
    cmd = command(cell, binary, json_path)
    before = len(read_jsonl(json_path))
    t0 = time.time()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        rc, out = "timeout", f"timed out after {timeout} s"
    seconds = time.time() - t0
    log.write(f"$ {shlex.join(cmd)}\n{out}\n")
    log.flush()
    recs = read_jsonl(json_path)[before:]
    record = recs[-1] if recs and rc == 0 else None
    remove_data(cell["path"])
    return {"cell": cell, "rep": rep, "rc": rc, "seconds": seconds, "record": record,
            "error": None if record else last_error(out, rc),
            "moved": moved_bytes(out) if cell.get("stats") else None}


def moved_bytes(out):
    """(bytes crossing nodes, bytes copied within nodes) summed over the
    statistics blocks aggio printed at each close, or None without any."""
    crossing = within = 0
    found = False
    for line in out.splitlines():
        key, sep, value = line.strip().partition(": ")
        if sep and key in ("bytes crossing nodes", "bytes copied within nodes"):
            found = True
            n = int(value.split()[0]) if value.split() and value.split()[0].isdigit() else 0
            if key == "bytes crossing nodes":
                crossing += n
            else:
                within += n
    return (crossing, within) if found else None


def results_from(records, sched, missing):
    """The results of an earlier run from its JSON records: each scheduled
    run takes the next record with its label, in order; a run without one
    had failed (its error: `missing`)."""
    by_label = {}
    for rec in records:
        by_label.setdefault(rec.get("label"), []).append(rec)
    results = []
    for rep, cell in sched:
        label = f"{cell['flavor']}/{cell['np']}/{cell['pattern']}/{cell['config']}"
        recs = by_label.get(label) or []
        rec = recs.pop(0) if recs else None
        results.append({"cell": cell, "rep": rep, "rc": 0 if rec else "missing", "seconds": 0.0,
                        "record": rec, "error": None if rec else missing})
    return results


def remove_data(path):
    """Leaves no files behind, even after a failure."""
    data_dir, base = os.path.split(path)
    if not os.path.isdir(data_dir):
        return
    for name in os.listdir(data_dir):
        if name.startswith(base):
            os.unlink(os.path.join(data_dir, name))


def read_jsonl(path):
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def last_error(out, rc):
    lines = [l for l in out.splitlines() if l.strip()]
    msg = next((l for l in reversed(lines) if "aggio-bench" in l or "rror" in l),
               lines[-1] if lines else "")
    return f"exit {rc}: {msg[:160]}"


# ---- the traced run -------------------------------------------------------------

def aggio_tool(repo):
    """The command of the `aggio` report tool: installed, or from the tree."""
    if shutil.which("aggio"):
        return ["aggio"], {}
    tree = os.path.join(repo, "python")
    if os.path.isdir(os.path.join(tree, "aggio")):
        path = os.pathsep.join(filter(None, [tree, os.environ.get("PYTHONPATH")]))
        return [sys.executable, "-m", "aggio"], {"PYTHONPATH": path}
    return None, {}


def html_report(repo, cell, binary, out_dir, timeout, log):
    """One traced aggio run of the cell's pattern (aggio_strategy=auto),
    rendered by `aggio report`; returns the HTML path or None."""
    tool, tool_env = aggio_tool(repo)
    if tool is None:
        return None
    trace = os.path.join(out_dir, f"aggio-{cell['pattern']}.trc")
    html = os.path.join(out_dir, "report.html")
    bench = [a for a in cell["bench"] if a not in ("-r", "-C", "-W", "-R", "--drop-caches")]
    steps = [(plan.FLAVORS[cell["flavor"]]["env"],
              cell["launch"] + [binary] + bench + ["--hint", f"aggio_trace={trace}"]),
             (tool_env, tool + ["report", trace, "-o", html])]
    for env, cmd in steps:
        log.write(f"$ {shlex.join(cmd)}\n")
        log.flush()
        try:
            p = subprocess.run(cmd, env=dict(os.environ, **env), stdout=log,
                               stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        if p.returncode:
            return None
    remove_data(cell["path"])
    return html

#!/usr/bin/env python3
"""Unit tests of bench/matrix's planning, figures and report (no MPI, no
runs): the patterns' aggio-bench and IOR command lines, rank counts, the
interleaved order, ratios against the best FPP and MPI-IO configurations,
memory and 4 KiB call figures, targets, and the report's tables;
bench/exchange's plan and table; and bench/subfiling's launches.

  bench/tests/matrix_tests.py [-v]

CTest runs it as bench.matrix.unit.  Nothing runs at import; main(argv)
runs the tests.
"""
import datetime
import os
import sys
import unittest


def load():
    """The matrixlib modules, from bench/ next to this directory."""
    bench_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if bench_dir not in sys.path:
        sys.path.insert(0, bench_dir)
    from matrixlib import figures, plan, report
    return plan, figures, report


def load_runner():
    load()
    from matrixlib import runner
    return runner


def opts(plan, mode="full", **over):
    """plan.plan()'s options for a mode, as bench/matrix resolves them."""
    m = plan.MODES[mode]
    o = {"flavors": ["openmpi", "mpich"], "patterns": [p.name for p in plan.PATTERNS],
         "ranks": dict(m["ranks"]), "base_ranks": dict(m["base_ranks"]),
         "configs": m["configs"], "only": None, "bytes": m["bytes"],
         "min_segments": m["min_segments"], "segments": {}, "dir": "/data",
         "verify": False, "drop_caches": True}
    o.update(over)
    return o


def flag(args, name):
    return args[args.index(name) + 1]


class Patterns(unittest.TestCase):
    def setUp(self):
        self.plan, _, _ = load()

    def cells(self, pattern, **over):
        groups = self.plan.plan(opts(self.plan, patterns=[pattern], **over))
        return [c for g in groups for c in g]

    def test_ior_hard_is_io500s_pattern_at_6000_calls(self):
        for c in self.cells("ior-hard"):
            b = c["bench"]
            self.assertNotIn("--pattern", b)  # aggio-bench's default: segmented
            self.assertEqual((flag(b, "-t"), flag(b, "-b")), ("47008", "47008"))
            self.assertGreaterEqual(int(flag(b, "-s")), 6000)
            self.assertTrue({"-w", "-r", "-e"} <= set(b))

    def test_ior_hard_mpiio_reproduces_ior_command_line(self):
        c = next(c for c in self.cells("ior-hard") if c["config"] == "MPIIO-romio" and c["np"] == 4)
        self.assertEqual(c["ior"], ["mpiexec", "-n", "4", "ior", "-a", "MPIIO", "-c", "-t", "47008",
                                    "-b", "47008", "-s", "6000", "-w", "-r", "-C", "-e"])
        aggio = next(c for c in self.cells("ior-hard") if c["config"] == "AGGIO-auto" and c["np"] == 4)
        self.assertEqual(aggio["ior"], c["ior"])  # the same calls, through aggio

    def test_fpp_ior_command_line(self):
        c = next(c for c in self.cells("ior-hard") if c["config"] == "FPP-odirect")
        self.assertEqual(c["ior"][4:8], ["-a", "POSIX", "-F", "--posix.odirect"])

    def test_segmented_1m_at_least_256_segments(self):
        for c in self.cells("segmented-1m"):
            b = c["bench"]
            self.assertEqual((flag(b, "-t"), flag(b, "-b")), (str(1 << 20), str(1 << 20)))
            self.assertGreaterEqual(int(flag(b, "-s")), 256)

    def test_batched_records_have_no_ior_command_line(self):
        for c in self.cells("strided-batched"):
            self.assertIsNone(c["ior"])
            self.assertEqual(flag(c["bench"], "--pattern"), "strided")
            self.assertGreater(int(flag(c["bench"], "-b")), 47008)

    def test_segments_override(self):
        cells = self.cells("ior-hard", segments={"ior-hard": 30})
        self.assertEqual({flag(c["bench"], "-s") for c in cells}, {"30"})

    def test_small_mode_scales_ior_hard_by_bytes(self):
        cells = self.cells("ior-hard", **{k: v for k, v in opts(self.plan, "small").items()
                                          if k not in ("flavors", "patterns")})
        self.assertEqual({flag(c["bench"], "-s") for c in cells},
                         {str(128 * (1 << 20) // (4 * 47008))})

    def test_4k_calls_fixed_call_count_writes_only(self):
        cells = self.cells("4k-calls")
        for c in cells:
            b = c["bench"]
            self.assertEqual((flag(b, "-t"), flag(b, "-b"), flag(b, "-s")), ("4096", "4096", "5000"))
            self.assertNotIn("-r", b)
            self.assertNotIn("-e", b)
        names = {c["config"] for c in cells if c["flavor"] == "openmpi"}
        self.assertIn("MPIIO-independent", names)
        self.assertIn("MPIIO-romio", names)
        self.assertFalse(any(n.startswith("FPP") for n in names))

    def test_independent_mpiio_only_in_4k_calls(self):
        self.assertFalse(any(c["config"] == "MPIIO-independent" for c in self.cells("ior-hard")))


class Ranks(unittest.TestCase):
    def setUp(self):
        self.plan, _, _ = load()

    def test_parse(self):
        self.assertEqual(self.plan.parse_ranks(["openmpi=2,4,8", "mpich=2"]),
                         {"openmpi": (2, 4, 8), "mpich": (2,)})
        for bad in (["openmpi"], ["lam=2"], ["openmpi=0"], ["openmpi="]):
            with self.assertRaises(ValueError):
                self.plan.parse_ranks(bad)

    def test_full_mode_rank_counts(self):
        groups = self.plan.plan(opts(self.plan))
        counts = {}
        for g in groups:
            counts.setdefault((g[0]["flavor"], g[0]["pattern"]), []).append(g[0]["np"])
        self.assertEqual(counts[("openmpi", "ior-hard")], [2, 4, 8])
        self.assertEqual(counts[("openmpi", "segmented-1m")], [2, 4, 8])
        self.assertEqual(counts[("mpich", "ior-hard")], [2])
        self.assertEqual(counts[("openmpi", "hacc-soa")], [4])
        self.assertEqual(counts[("openmpi", "4k-calls")], [4])
        self.assertEqual(counts[("mpich", "4k-calls")], [2])

    def test_launcher(self):
        groups = self.plan.plan(opts(self.plan, patterns=["ior-hard"]))
        c = next(c for g in groups for c in g if c["config"] == "MPIIO-romio" and c["np"] == 8)
        self.assertEqual(c["launch"], ["mpiexec", "-n", "8", "--oversubscribe", "--mca", "io",
                                       "romio321"])
        m = next(c for g in groups for c in g if c["flavor"] == "mpich")
        self.assertEqual(m["launch"][:3], ["mpiexec.mpich", "-n", "2"])
        self.assertFalse(any(c["config"].startswith("MPIIO-ompio") for g in groups for c in g
                             if c["flavor"] == "mpich"))


class Order(unittest.TestCase):
    def setUp(self):
        self.plan, _, _ = load()

    def test_report_from_earlier_records(self):
        """--report-from: each scheduled run takes the next record of its
        label, in order; a run without one is a failure."""
        runner = load_runner()
        cells = [{"flavor": "openmpi", "np": 2, "pattern": "ior-hard", "config": c}
                 for c in ("FPP", "AGGIO-auto")]
        sched = [(rep, c) for rep in range(2) for c in cells]
        recs = [{"label": "openmpi/2/ior-hard/FPP", "n": 1},
                {"label": "openmpi/2/ior-hard/AGGIO-auto", "n": 2},
                {"label": "openmpi/2/ior-hard/FPP", "n": 3}]
        res = runner.results_from(recs, sched, "gone")
        self.assertEqual([r["record"]["n"] if r["record"] else None for r in res], [1, 2, 3, None])
        self.assertEqual(res[3]["error"], "gone")

    def test_interleaved_every_repetition(self):
        groups = self.plan.plan(opts(self.plan, patterns=["ior-hard", "hacc-aos"]))
        sched = self.plan.schedule(groups, 3)
        self.assertEqual(len(sched), 3 * sum(len(g) for g in groups))
        pos = 0
        for g in groups:
            names = [c["config"] for c in g]
            chunk = sched[pos:pos + 3 * len(g)]
            self.assertEqual([c["config"] for _, c in chunk], names * 3)  # A B C, A B C, A B C
            self.assertEqual([r for r, _ in chunk], [r for r in range(3) for _ in names])
            pos += len(chunk)

    def test_nodelocal_mode(self):
        """Issue 11's cases: the four patterns at 8 ranks (Open MPI), node_local,
        two_phase and independent on 4x2 and 2x4 emulated nodes, K = 1, 2, 4
        aggregators per node next to ROMIO and OMPIO; other modes leave them out."""
        m = self.plan.MODES["nodelocal"]
        o = opts(self.plan, "nodelocal", flavors=["openmpi"], patterns=list(m["patterns"]))
        groups = self.plan.plan(o)
        self.assertEqual(sorted({g[0]["pattern"] for g in groups}),
                         ["hacc-soa", "ior-hard", "segmented-1m", "subarray"])
        names = {c["config"] for g in groups for c in g}
        for want in ("AGGIO-node_local-4x2", "AGGIO-two_phase-2x4", "AGGIO-independent-4x2",
                     "AGGIO-node_local-2x4-cb4", "MPIIO-romio-cb2", "MPIIO-ompio-cb4",
                     "MPIIO-romio"):
            self.assertIn(want, names)
        cell = next(c for g in groups for c in g if c["config"] == "AGGIO-node_local-4x2")
        self.assertEqual(cell["np"], 8)
        self.assertIn("aggio_emulate_nodes=4", cell["bench"])
        self.assertIn("aggio_strategy=node_local", cell["bench"])
        self.assertTrue(cell["stats"])
        full = {c["config"] for g in self.plan.plan(opts(self.plan)) for c in g}
        self.assertFalse(full & self.plan.NODE_CONFIG_NAMES)
        self.assertIn("AGGIO-node_local", full)

    def test_moved_bytes_from_statistics(self):
        runner = load_runner()
        out = ("aggio stats for file \"x\"\n  bytes crossing nodes: 0\n"
               "  bytes copied within nodes: 4096\naggio stats end\n"
               "  bytes crossing nodes: 10\n  bytes copied within nodes: 6\n")
        self.assertEqual(runner.moved_bytes(out), (10, 4102))
        self.assertIsNone(runner.moved_bytes("no statistics"))
        _, _, report = load()
        cell = {"flavor": "openmpi", "np": 8, "pattern": "ior-hard",
                "config": "AGGIO-node_local-4x2"}
        text = "\n".join(report.moved_section([{"cell": cell, "moved": (0, 4096)},
                                                {"cell": cell, "moved": (0, 4100)},
                                                {"cell": cell, "moved": None}]))
        self.assertIn("## Bytes across nodes", text)
        self.assertIn("| 0, 0 | 4096, 4100 |", text)
        self.assertEqual(report.moved_section([{"cell": cell, "moved": None}]), [])

    def test_strategy_list_is_the_one_source(self):
        aggio = [c.name for c in self.plan.CONFIGS
                 if c.kind == "aggio" and c.name not in self.plan.NODE_CONFIG_NAMES]
        self.assertEqual(aggio, [f"AGGIO-{s}" for s in self.plan.AGGIO_STRATEGIES] +
                         ["AGGIO-subfiles"])
        self.assertIn(self.plan.DEFAULT_AGGIO, aggio)

    def test_subfiles_are_as_many_as_ranks(self):
        groups = self.plan.plan(opts(self.plan, only=["AGGIO-subfiles"]))
        cells = [c for g in groups for c in g]
        self.assertTrue(cells)
        for c in cells:
            self.assertIn(f"aggio_subfiles={c['np']}", c["bench"])


def record(write=None, read=None, peak=(20000, 21000), base=(10000, 10000), data=(1 << 20,) * 2,
           cb=16 << 20, calls=None, strategy="two_phase"):
    """A JSON record of aggio-bench as the matrix reads it (one repetition)."""
    rec = {"hints": {"cb_buffer_size": str(cb)}, "fs": {"type": "ext4"},
           "mpi": {"flavor": "openmpi", "library": "Open MPI v4.1.4"},
           "memory": {"peak_kib": list(peak), "baseline_kib": list(base),
                      "data_bytes": list(data), "peak_kib_max": max(peak)},
           "write": None, "read": None}
    if write is not None:
        rec["write"] = {"strategy": strategy, "reps": [
            {"bw_durable_MiBps": write, "bw_buffered_MiBps": 2 * write, "write": 0.5}]}
    if read is not None:
        rec["read"] = {"strategy": strategy, "reps": [{"bw_MiBps": read}]}
    if calls is not None:
        rec["calls"] = {"write": calls, "read": 0, "mode": "explicit"}
    return rec


def result(pattern, config, kind, rep, rec, np=4, flavor="openmpi"):
    cell = {"flavor": flavor, "np": np, "pattern": pattern, "config": config, "kind": kind,
            "launch": ["mpiexec", "-n", str(np)], "bench": ["-w"], "ior": None, "layout": ["-s", "1"]}
    return {"cell": cell, "rep": rep, "rc": 0, "seconds": 1.0, "record": rec,
            "error": None if rec else "exit 1: boom"}


# ior-hard, three repetitions: write, read medians below.
IOR_HARD = {"FPP": ("fpp", [1000, 1200, 1100], [2000, 2100, 1900]),
            "FPP-odirect": ("fpp", [1500, 1400, 1600], [2500, 2400, 2600]),
            "POSIX": ("posix", [700, 800, 900], [900, 1000, 1100]),
            "MPIIO-romio": ("mpiio", [400, 500, 600], [300, 350, 400]),
            "MPIIO-ompio": ("mpiio", [200, 300, 250], [500, 450, 400]),
            "AGGIO-auto": ("aggio", [750, 600, 900], [600, 500, 550]),
            "AGGIO-two_phase": ("aggio", [800, 850, 820], [100, 150, 200])}


def ior_hard_results():
    out = []
    for rep in range(3):
        for name, (kind, w, r) in IOR_HARD.items():
            out.append(result("ior-hard", name, kind, rep, record(w[rep], r[rep])))
    return out


class Figures(unittest.TestCase):
    def setUp(self):
        self.plan, self.fig, self.report = load()
        self.groups = self.fig.summarize(ior_hard_results())
        self.group = self.groups[("openmpi", 4, "ior-hard")]

    def test_min_median_max(self):
        self.assertEqual(self.group["AGGIO-auto"]["write"], (600, 750, 900))
        self.assertEqual(self.group["MPIIO-ompio"]["read"], (400, 450, 500))
        self.assertEqual(self.group["FPP"]["buffered"], (2000, 2200, 2400))

    def test_references_are_the_best_of_their_kind(self):
        w = self.fig.references(self.group, "write")
        self.assertEqual(w["fpp"], (1500, "FPP-odirect"))
        self.assertEqual(w["mpiio"], (500, "MPIIO-romio"))
        self.assertEqual(w["peer"], (800, "POSIX"))
        r = self.fig.references(self.group, "read")
        self.assertEqual(r["fpp"], (2500, "FPP-odirect"))
        self.assertEqual(r["mpiio"], (450, "MPIIO-ompio"))

    def test_summary_ratios(self):
        rows = {r["direction"]: r for r in self.fig.summary_rows(self.groups)}
        self.assertAlmostEqual(rows["write"]["auto_mpiio"], 750 / 500)
        self.assertAlmostEqual(rows["write"]["auto_fpp"], 750 / 1500)
        self.assertEqual(rows["write"]["best_aggio_name"], "AGGIO-two_phase")
        self.assertAlmostEqual(rows["write"]["best_mpiio"], 820 / 500)
        self.assertAlmostEqual(rows["read"]["auto_mpiio"], 550 / 450)

    def test_targets(self):
        t = {(x["what"]): x for x in self.fig.targets(self.groups)}
        w = t["durable write ≥ 1.5× best MPI-IO"]
        self.assertAlmostEqual(w["value"], 1.5)
        self.assertEqual(w["state"], "met")
        self.assertEqual(t["durable write ≥ 0.8× FPP O_DIRECT"]["state"], "**MISSED**")
        self.assertEqual(t["cold-cache read ≥ 1.2× best MPI-IO"]["state"], "met")
        self.assertEqual(t["durable write ≥ 0.95× best peer"]["state"], "**MISSED**")
        self.assertNotIn("durable write ≥ 0.9× FPP O_DIRECT", t)  # segmented-1m only

    def test_memory_within_allowance(self):
        m = self.group["AGGIO-auto"]["memory"]
        # growth 11000 KiB on rank 1; allowance 2 × 16 MiB + 1 MiB = 33792 KiB
        self.assertEqual(m, (11000, 33792))
        t = [x for x in self.fig.targets(self.groups) if x["what"].startswith("peak RSS")]
        self.assertEqual(t[0]["state"], "met")
        self.assertEqual(self.group["AGGIO-auto"]["peak_kib"], 21000)

    def test_memory_over_allowance(self):
        rec = record(100, 100, peak=(10000 + 40000, 20000), cb=1 << 20)
        self.assertEqual(self.fig.memory_overhead(rec), (40000, 3072))

    def test_failed_repetition_counts(self):
        results = ior_hard_results() + [result("ior-hard", "AGGIO-auto", "aggio", 3, None)]
        s = self.fig.summarize(results)[("openmpi", 4, "ior-hard")]["AGGIO-auto"]
        self.assertEqual((s["ok"], s["runs"]), (3, 4))
        self.assertEqual(s["errors"], ["exit 1: boom"])

    def test_4k_calls(self):
        results = []
        for rep, (mpiio, aggio) in enumerate([(40000, 10000), (50000, 20000), (60000, 15000)]):
            results.append(result("4k-calls", "MPIIO-romio", "mpiio", rep,
                                  record(1, calls=mpiio // 2)))
            results.append(result("4k-calls", "AGGIO-auto", "aggio", rep,
                                  record(1, calls=aggio // 2)))
        groups = self.fig.summarize(results)
        m = self.fig.micro_rows(groups)[0]
        rows = {r["config"]: r for r in m["rows"]}
        self.assertEqual(rows["MPIIO-romio"]["calls_per_s"], (40000, 50000, 60000))
        self.assertAlmostEqual(rows["AGGIO-auto"]["us_per_call"], 1e6 / 15000)
        self.assertAlmostEqual(rows["AGGIO-auto"]["cost_vs_mpiio"], 50000 / 15000)
        t = self.fig.micro_targets(groups)[0]
        self.assertEqual((t["against"], t["state"]), ("MPIIO-romio", "**MISSED**"))


class Report(unittest.TestCase):
    def test_sections(self):
        plan, fig, report = load()
        results = ior_hard_results()
        for r in results:
            r["cell"]["ior"] = ["mpiexec", "-n", "4", "ior", "-a", "MPIIO", "-c", "-t", "47008"]
        info = {"mode": "full", "started": datetime.datetime(2026, 1, 1), "elapsed": 60.0,
                "dir": "/data", "ranks": {"openmpi": (2, 4, 8)}, "base_ranks": {"openmpi": (4,)},
                "bytes": 1 << 29, "reps": 3, "dropped": True, "settle": 2.0, "drop_caches": True,
                "verify": False, "argv": [], "json_rel": "bench-full.jsonl"}
        text = report.report(info, results, ["notes here"])
        for part in ("## Patterns and the IOR command lines they reproduce",
                     "`mpiexec -n 4 ior -a MPIIO -c -t 47008`", "## Targets",
                     "## aggio against the references", "## Every configuration",
                     "### openmpi, 4 ranks, ior-hard", "| AGGIO-auto | 600 / 750 / 900 | 0.50× | 1.50× |",
                     "A B C, A B C", "notes here", "## Commands"):
            self.assertIn(part, text)


def load_script(name):
    """bench/<name> (a script without .py) as a module."""
    import importlib.machinery
    import importlib.util
    load()
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), name)
    loader = importlib.machinery.SourceFileLoader(f"bench_{name}", path)
    spec = importlib.util.spec_from_loader(f"bench_{name}", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def load_exchange():
    return load_script("exchange")


class Exchange(unittest.TestCase):
    """bench/exchange: rma against two_sided, interleaved, with emulated nodes."""

    def setUp(self):
        self.ex = load_exchange()

    def args(self, *argv):
        import argparse
        parser = argparse.ArgumentParser()
        self.ex.setup_parser(parser)
        return parser.parse_args(list(argv))

    def test_cases_and_interleaving(self):
        sched, reps = self.ex.plan_runs(self.args())
        self.assertEqual(reps, 3)
        self.assertEqual(len(sched), 2 * 2 * 3 * 2)  # layouts, patterns, reps, exchanges
        order = [(c["layout"], c["pattern"], c["exchange"]) for _, c in sched[:4]]
        self.assertEqual(order, [("4x2", "ior-hard", "two_sided"), ("4x2", "ior-hard", "rma"),
                                 ("4x2", "ior-hard", "two_sided"), ("4x2", "ior-hard", "rma")])
        for _, c in sched:
            b = c["bench"]
            self.assertEqual(c["launch"][c["launch"].index("-n") + 1], "8")
            self.assertIn(f"aggio_exchange={c['exchange']}", b)
            self.assertIn("aggio_strategy=two_phase", b)
            nodes = {"4x2": 4, "2x4": 2}[c["layout"]]
            self.assertIn(f"aggio_emulate_nodes={nodes}", b)
            self.assertIn("-W", b)
            self.assertIn("-R", b)
            if c["pattern"] == "ior-hard":
                self.assertEqual(flag(b, "-t"), "47008")
                self.assertEqual(flag(b, "-b"), "47008")

    def test_extra_flags_and_selection(self):
        sched, _ = self.ex.plan_runs(self.args("--quick", "--layouts", "2x4", "--patterns",
                                               "segmented", "--extra", "--hint aggio_storage=null"))
        self.assertEqual(len(sched), 2)
        self.assertIn("aggio_storage=null", sched[0][1]["bench"])
        with self.assertRaises(SystemExit):
            self.ex.plan_runs(self.args("--layouts", "3x3"))

    def test_table_ratio(self):
        def rec(x, w, r):
            return {"hints": {"aggio_exchange_selected": x}, "ok": True,
                    "write": {"reps": [{"bw_durable_MiBps": w}]},
                    "read": {"reps": [{"bw_MiBps": r}]}}
        res = [{"cell": {"layout": "4x2", "pattern": "ior-hard", "exchange": "two_sided"},
                "record": rec("two_sided", 100.0, 200.0), "error": None},
               {"cell": {"layout": "4x2", "pattern": "ior-hard", "exchange": "rma"},
                "record": rec("rma", 150.0, 100.0), "error": None}]
        text = self.ex.table(res)
        self.assertIn("| 4x2 | ior-hard | rma (rma) | 150 (150–150) | 100 (100–100) | 1.50 | "
                      "0.50 | 1/1 |", text)


def file_bytes(flags, ranks):
    """The bytes of the file aggio-bench's flags make at `ranks` ranks
    (bench/patterns.c: segmented -s x ranks x -b; HACC -s x ranks x
    --particles x 38)."""
    segs = int(flag(flags, "-s"))
    if "--particles" in flags:
        return segs * ranks * int(flag(flags, "--particles")) * 38
    b = flag(flags, "-b")
    return segs * ranks * (int(b[:-1]) << 20 if b.endswith("m") else int(b))


class Subfiling(unittest.TestCase):
    """bench/subfiling: every launch of a group on a file of --bytes, the
    readers at any rank count over the writers' file."""

    def setUp(self):
        self.sf = load_script("subfiling")

    def test_patterns_include_hacc(self):
        self.assertEqual(set(self.sf.PATTERNS),
                         {"segmented-1m", "ior-hard", "hacc-aos", "hacc-soa"})

    def test_every_reader_reads_the_file_written(self):
        total = 512 << 20
        for pattern in self.sf.PATTERNS:
            for n, most in ((2, 8), (4, 8), (8, 8), (2, 2)):
                groups = self.sf.runs_of("openmpi", pattern, n, most, total, "/data")
                launches = [x for g in groups for x in g]
                self.assertEqual([x[0] for x in launches],
                                 ["FPP", "FPP-odirect", "AGGIO-shared", "AGGIO-subfiles-2p",
                                  "AGGIO-subfiles"]
                                 + [f"read-by-{r}" for r in self.sf.readers(n, most)])
                sizes = {file_bytes(flags, r) for _, r, flags, _ in launches}
                self.assertEqual(len(sizes), 1, (pattern, n))
                size = sizes.pop()
                self.assertLessEqual(size, total)
                self.assertGreater(size, total * 0.99, (pattern, n))
                for label, r, flags, _ in launches:
                    self.assertEqual("-F" in flags, label.startswith("FPP"))
                    self.assertEqual("-R" in flags, label.startswith("read-by-"))
                    if pattern.startswith("hacc-"):
                        self.assertEqual(flag(flags, "--pattern"), pattern)
                        self.assertEqual(flag(flags, "-s"), "1")

    def test_a_read_of_part_of_the_file_fails(self):
        recs = {"AGGIO-subfiles": {"bytes": {"file": 100}},
                "read-by-1": {"bytes": {"read": 100}}, "read-by-2": {"bytes": {"read": 50}},
                "read-by-4": None}
        group = [(label, 1, [], "/nonexistent/f") for label in recs]
        self.sf.launch_one = lambda args, binary, key, *rest: recs[key[3]]
        failures = self.sf.run_group(None, "aggio-bench", ("openmpi", "hacc-aos", 2), group,
                                     None, {})
        self.assertEqual(failures, ["openmpi hacc-aos N=2 read-by-2: read 50 of the 100 bytes "
                                    "written", "openmpi hacc-aos N=2 read-by-4"])

    def test_dry_run_prints_hacc_launches(self):
        import contextlib
        import io
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = self.sf.main(["--dry-run", "--quick", "--binary", "mpich=aggio-bench",
                                   "--json", os.path.join(tmp, "r.jsonl"),
                                   "--dir", os.path.join(tmp, "d")])
        self.assertEqual(rc, 0)
        text = out.getvalue()
        for pattern in ("hacc-aos", "hacc-soa"):
            self.assertIn(f"[mpich {pattern} 2] read-by-1: mpiexec.mpich -n 1 aggio-bench", text)
            self.assertIn(f"--pattern {pattern} -s 1", text)


def main(argv):
    prog = unittest.main(module=__name__, argv=["matrix_tests"] + argv, exit=False)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

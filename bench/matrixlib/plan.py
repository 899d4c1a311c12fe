"""What the matrix runs: patterns, configurations, rank counts, and the order.

Every name is declared once here: the patterns (with the IOR command line
each reproduces), the configurations (aggio's strategies come from the one
list AGGIO_STRATEGIES), the modes.  plan() turns the command line into
comparison groups, one per (MPI flavour, ranks, pattern), and schedule()
interleaves the configurations of a group in every repetition:
A B C, A B C, ...  Pure functions; nothing runs at import.
"""
import collections
import os

MIB = 1 << 20
RECORD = 47008  # IO-500 ior-hard's record size

# aggio's strategies, as the aggio_strategy hint names them.  The only list
# of them in bench/: configurations and tests derive theirs from it.
AGGIO_STRATEGIES = ("auto", "independent", "two_phase", "write_behind", "node_local")

# How the matrix launches each MPI library.  Open MPI runs as root only with
# the two variables; --oversubscribe lets 8 ranks run on 2 cores.
FLAVORS = {
    "openmpi": {"cc": "mpicc", "mpiexec": "mpiexec", "flags": ("--oversubscribe",),
                "env": {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}},
    "mpich": {"cc": "mpicc.mpich", "mpiexec": "mpiexec.mpich", "flags": (), "env": {}},
}

# name, kind, flavours (None: all), launcher flags, aggio-bench flags.
# kind: fpp (the N:N reference), posix (POSIX pwrite into the shared file),
# mpiio (the MPI library's collective MPI-IO), independent (its
# independent calls; 4 KiB calls only), aggio.  "@romio" is the launcher
# flag that selects ROMIO (Open MPI only).
Config = collections.namedtuple("Config", "name kind flavors launch flags")


def _configurations():
    fixed = [
        Config("FPP", "fpp", None, (), ("-a", "POSIX", "-F")),
        Config("FPP-odirect", "fpp", None, (), ("-a", "POSIX", "-F", "-B")),
        Config("POSIX", "posix", None, (), ("-a", "POSIX")),
        Config("MPIIO-ompio", "mpiio", ("openmpi",), ("--mca", "io", "ompio"), ("-a", "MPIIO", "-c")),
        Config("MPIIO-ompio-2ph", "mpiio", ("openmpi",),
               ("--mca", "io", "ompio", "--mca", "fcoll", "two_phase"), ("-a", "MPIIO", "-c")),
        Config("MPIIO-romio", "mpiio", None, ("@romio",), ("-a", "MPIIO", "-c")),
        Config("MPIIO-romio-cb", "mpiio", None, ("@romio",),
               ("-a", "MPIIO", "-c", "--hint", "romio_cb_write=enable")),
        Config("MPIIO-independent", "independent", None, (), ("-a", "MPIIO")),
    ]
    # subfiling (docs/subfiling.md): as many subfiles as ranks ({ranks} is
    # the run's rank count), auto's strategy; on one node `auto` would give
    # a single subfile
    subfiles = Config("AGGIO-subfiles", "aggio", None, (),
                      ("-a", "AGGIO", "-c", "--hint", "aggio_subfiles={ranks}"))
    return tuple(fixed) + tuple(
        Config(f"AGGIO-{s}", "aggio", None, (), ("-a", "AGGIO", "-c", "--hint", f"aggio_strategy={s}"))
        for s in AGGIO_STRATEGIES) + (subfiles,)


# Node-local aggregation (issue 11), on emulated nodes: 8 ranks as 4 nodes
# x 2 ranks and as 2 x 4 (aggio_emulate_nodes; MPICH's 2 ranks become 2 x 1),
# node_local against two_phase, independent and auto on the same layout; then
# K aggregators per node (cb_config_list=*:K, K = 1, 2, 4) in two_phase and
# node_local next to ROMIO and OMPIO with the same cb_config_list (the MPI
# libraries see the one real node).  Only the nodelocal mode runs these.
NODE_LAYOUTS = ((4, 2), (2, 4))
NODE_AGGREGATORS = (1, 2, 4)


def _node_configurations():
    out = []
    aggio = ("-a", "AGGIO", "-c")
    for nodes, ppn in NODE_LAYOUTS:
        emulate = ("--hint", f"aggio_emulate_nodes={nodes}")
        for s in ("node_local", "two_phase", "independent", "auto"):
            out.append(Config(f"AGGIO-{s}-{nodes}x{ppn}", "aggio", None, (),
                              aggio + ("--hint", f"aggio_strategy={s}") + emulate))
    emulate = ("--hint", "aggio_emulate_nodes=2")
    for k in NODE_AGGREGATORS:
        cbl = ("--hint", f"cb_config_list=*:{k}")
        for s in ("two_phase", "node_local"):
            out.append(Config(f"AGGIO-{s}-2x4-cb{k}", "aggio", None, (),
                              aggio + ("--hint", f"aggio_strategy={s}") + emulate + cbl))
        out.append(Config(f"MPIIO-romio-cb{k}", "mpiio", None, ("@romio",),
                          ("-a", "MPIIO", "-c", "--hint", "romio_cb_write=enable") + cbl))
        out.append(Config(f"MPIIO-ompio-cb{k}", "mpiio", ("openmpi",), ("--mca", "io", "ompio"),
                          ("-a", "MPIIO", "-c") + cbl))
    return tuple(out)


NODE_CONFIGS = _node_configurations()
NODE_CONFIG_NAMES = frozenset(c.name for c in NODE_CONFIGS)
CONFIGS = _configurations() + NODE_CONFIGS
PEER_KINDS = ("posix", "mpiio")  # shared-file configurations that are not aggio
DEFAULT_AGGIO = "AGGIO-auto"     # the configuration targets are judged on

# A pattern of the matrix: the aggio-bench --pattern it runs, whether it
# runs at every rank count of --ranks (scaling) or at --base-ranks, whether
# its size flags are IOR's own (then the IOR command line it reproduces is
# printed), and the bytes one segment holds per rank (0: not segment-sized).
Pattern = collections.namedtuple("Pattern", "name bench scaling ior micro per_segment doc")

PATTERNS = (
    Pattern("ior-hard", "segmented", True, True, False, RECORD,
            "IO-500 ior-hard: one 47008-byte record per collective call per rank"),
    Pattern("segmented-1m", "segmented", True, True, False, MIB,
            "the HPE seed's case: one 1 MiB block per collective call per rank"),
    Pattern("segmented-64m", "segmented", True, True, False, 64 * MIB,
            "the HPE seed's large-transfer case: one 64 MiB block per collective call per rank"),
    Pattern("segmented", "segmented", False, True, False, 0,
            "IOR's segmented layout with 1 MiB transfers, 4 segments"),
    Pattern("strided-batched", "strided", False, False, False, 0,
            "ior-hard's records, hundreds per rank in each collective call (not IO-500)"),
    Pattern("hacc-aos", "hacc-aos", False, False, False, 0, "HACC-IO, array of structures"),
    Pattern("hacc-soa", "hacc-soa", False, False, False, 0, "HACC-IO, structure of arrays"),
    Pattern("random", "random", False, False, False, 0, "random 0-2 MiB per rank per call"),
    Pattern("subarray", "subarray", False, False, False, 0, "3-D subarray view, two time steps"),
    Pattern("4k-calls", "segmented", False, True, True, 4096,
            "4 KiB collective write calls: calls per second"),
)

# Per mode: bytes per run (all ranks), repetitions, per-run timeout (s), the
# pause of the settle step (s), rank counts, configurations (None: all),
# the fewest segments of the segment-sized patterns.
MODES = {
    "quick": {"bytes": 8 * MIB, "reps": 1, "timeout": 60, "settle": 0.0,
              "ranks": {"openmpi": (4,), "mpich": (2,)},
              "base_ranks": {"openmpi": (4,), "mpich": (2,)},
              "configs": ("FPP", "POSIX", "MPIIO-romio", "AGGIO-auto"),
              "min_segments": {"4k-calls": 100}},
    "small": {"bytes": 128 * MIB, "reps": 1, "timeout": 120, "settle": 0.2,
              "ranks": {"openmpi": (4,)}, "base_ranks": {"openmpi": (4,)},
              "configs": None, "min_segments": {"4k-calls": 1000}},
    "full": {"bytes": 512 * MIB, "reps": 3, "timeout": 900, "settle": 1.0,
             "ranks": {"openmpi": (2, 4, 8), "mpich": (2,)},
             "base_ranks": {"openmpi": (4,), "mpich": (2,)},
             "configs": None,
             "min_segments": {"ior-hard": 6000, "segmented-1m": 256, "4k-calls": 5000}},
    # bench/matrix --nodelocal: issue 11's measurements (see NODE_LAYOUTS)
    "nodelocal": {"bytes": 512 * MIB, "reps": 3, "timeout": 900, "settle": 1.0,
                  "ranks": {"openmpi": (8,), "mpich": (2,)},
                  "base_ranks": {"openmpi": (8,), "mpich": (2,)},
                  "configs": tuple(c.name for c in NODE_CONFIGS)
                  + ("MPIIO-ompio", "MPIIO-romio", "MPIIO-romio-cb", "AGGIO-auto"),
                  "patterns": ("segmented-1m", "ior-hard", "hacc-soa", "subarray"),
                  "min_segments": {"ior-hard": 6000, "segmented-1m": 256}},
}


def pattern(name):
    for p in PATTERNS:
        if p.name == name:
            return p
    raise ValueError(f"unknown pattern {name!r}; known: {', '.join(p.name for p in PATTERNS)}")


def config(name):
    for c in CONFIGS:
        if c.name == name:
            return c
    raise ValueError(f"unknown configuration {name!r}; known: {', '.join(c.name for c in CONFIGS)}")


# ---- parsing ------------------------------------------------------------------

def parse_size(text):
    """'512m' -> bytes (binary suffixes k, m, g)."""
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(text[-1].lower(), 1)
    return int(float(text.rstrip("kKmMgG")) * mult)


def parse_ranks(items):
    """['openmpi=2,4,8', 'mpich=2'] -> {'openmpi': (2, 4, 8), 'mpich': (2,)}."""
    out = {}
    for item in items:
        flavor, sep, counts = item.partition("=")
        if not sep or flavor not in FLAVORS:
            raise ValueError(f"ranks: want FLAVOR=N[,N...] with FLAVOR in "
                             f"{', '.join(FLAVORS)}, got {item!r}")
        nums = tuple(int(n) for n in counts.split(",") if n)
        if not nums or min(nums) < 1:
            raise ValueError(f"ranks: no positive count in {item!r}")
        out[flavor] = nums
    return out


def parse_segments(items):
    """['ior-hard=6000'] -> {'ior-hard': 6000}."""
    out = {}
    for item in items:
        name, sep, n = item.partition("=")
        if not sep or pattern(name).per_segment == 0 or int(n) < 1:
            raise ValueError(f"segments: want PATTERN=N for a segment-sized pattern, got {item!r}")
        out[name] = int(n)
    return out


# ---- sizes ----------------------------------------------------------------------

def segments(pat, total, np, minimum=0, override=None):
    """Segments of a segment-sized pattern: about `total` bytes over np
    ranks, at least `minimum`, or exactly `override`.  The 4 KiB calls are
    a call count, whatever the bytes: `minimum` (1000 if none)."""
    if override:
        return override
    if pat.micro:
        return minimum or 1000
    return max(minimum, total // (np * pat.per_segment), 1)


def pattern_flags(pat, total, np, minimum=0, override=None):
    """aggio-bench size flags of a pattern that move about `total` bytes."""
    per_rank = max(total // np, 64 * 1024)
    if pat.per_segment:  # one -t == -b block per segment and rank: one call each
        s = segments(pat, total, np, minimum, override)
        return ["-t", str(pat.per_segment), "-b", str(pat.per_segment), "-s", str(s)]
    if pat.name == "segmented":  # 1 MiB transfers, 4 segments
        t = MIB if per_rank >= 4 * MIB else 64 * 1024
        return ["-t", str(t), "-b", str(max(per_rank // 4 // t, 1) * t), "-s", "4"]
    if pat.name == "strided-batched":  # k records per rank per call, 4 calls
        k = max(per_rank // 4 // RECORD, 1)
        return ["-t", str(RECORD), "-b", str(k * RECORD), "-s", "4"]
    if pat.name in ("hacc-aos", "hacc-soa"):
        return ["--particles", str(max(per_rank // 38, 1)), "-s", "1"]
    if pat.name == "random":  # 0..2 MiB per rank per call: 1 MiB on average
        return ["-b", "2m", "-s", str(max(total // (np * MIB), 1))]
    if pat.name == "subarray":  # two time steps
        return ["-b", str(per_rank // 2), "-s", "2"]
    raise ValueError(pat.name)


def access_flags(pat):
    """What each run does: write (fsync inside the timing) then read back
    what the next rank wrote; 4 KiB calls: writes only, no fsync."""
    return ["-w"] if pat.micro else ["-w", "-r", "-C", "-e"]


def ior_command(pat, cfg, np, size_flags):
    """The IOR command line that makes the same calls, or None.  aggio's
    configurations make the calls of IOR's MPIIO back end through aggio."""
    if not pat.ior:
        return None
    api = {"fpp": ["-a", "POSIX", "-F"], "posix": ["-a", "POSIX"],
           "mpiio": ["-a", "MPIIO", "-c"], "aggio": ["-a", "MPIIO", "-c"],
           "independent": ["-a", "MPIIO"]}[cfg.kind]
    if "-B" in cfg.flags:
        api = api + ["--posix.odirect"]
    return ["mpiexec", "-n", str(np), "ior"] + api + list(size_flags) + access_flags(pat)


# ---- the plan -------------------------------------------------------------------

def launcher_flags(cfg, flavor):
    out = []
    for a in cfg.launch:
        if a == "@romio":
            out += ["--mca", "io", "romio321"] if flavor == "openmpi" else []
        else:
            out.append(a)
    return out


def runs_kind(pat, kind):
    """Bandwidth patterns leave out MPI-IO's independent calls (IOR's
    non-collective MPIIO); 4 KiB calls leave out file per process."""
    return kind != "fpp" if pat.micro else kind != "independent"


def configs_for(pat, flavor, mode_configs=None, only=None):
    """The configurations a group runs, in table order; the node-local
    ones only where the mode or --configs names them."""
    named = set(mode_configs or ()) | set(only or ())
    return [c for c in CONFIGS
            if (not c.flavors or flavor in c.flavors) and runs_kind(pat, c.kind)
            and (not mode_configs or c.name in mode_configs)
            and (not only or c.name in only)
            and (c.name not in NODE_CONFIG_NAMES or c.name in named)]


def config_flags(cfg, np):
    """A configuration's aggio-bench flags for a run of np ranks ({ranks})."""
    return [a.replace("{ranks}", str(np)) for a in cfg.flags]


def make_cell(opts, flavor, np, pat, cfg):
    """One configuration of one group: how to launch it."""
    f = FLAVORS[flavor]
    minimum = opts["min_segments"].get(pat.name, 0)
    size = pattern_flags(pat, opts["bytes"], np, minimum, opts["segments"].get(pat.name))
    path = os.path.join(opts["dir"], f"{flavor}-{np}-{pat.name}-{cfg.name}")
    layout = (["--pattern", pat.bench] if pat.bench != "segmented" else []) + size
    bench = ["-o", path, "-i", "1", "--label", f"{flavor}/{np}/{pat.name}/{cfg.name}"]
    bench += access_flags(pat) + layout + config_flags(cfg, np)
    if opts["verify"] and not pat.micro:
        bench += ["-W", "-R"]
    if opts["drop_caches"] and not pat.micro:
        bench += ["--drop-caches"]
    launch = [f["mpiexec"], "-n", str(np)] + list(f["flags"]) + launcher_flags(cfg, flavor)
    return {"flavor": flavor, "np": np, "pattern": pat.name, "config": cfg.name,
            "kind": cfg.kind, "launch": launch, "bench": bench, "path": path,
            "ior": ior_command(pat, cfg, np, size), "layout": layout,
            "stats": cfg.kind == "aggio" and cfg.name in NODE_CONFIG_NAMES}


def plan(opts):
    """Comparison groups, in run order: for each flavour, each pattern, each
    rank count (--ranks for scaling patterns, --base-ranks for the others),
    the list of cells of its configurations.

    opts: flavors, patterns, ranks, base_ranks, configs (mode's), only
    (--configs), bytes, min_segments, segments, dir, verify, drop_caches."""
    groups = []
    for flavor in opts["flavors"]:
        for name in opts["patterns"]:
            pat = pattern(name)
            counts = (opts["ranks"] if pat.scaling else opts["base_ranks"]).get(flavor, ())
            for np in counts:
                cfgs = configs_for(pat, flavor, opts["configs"], opts["only"])
                if cfgs:
                    groups.append([make_cell(opts, flavor, np, pat, c) for c in cfgs])
    return groups


def schedule(groups, reps):
    """Run order: group by group; inside a group every repetition runs every
    configuration once, in table order (A B C, A B C, ...), so that the
    configurations compared are measured side by side."""
    return [(rep, cell) for group in groups for rep in range(reps) for cell in group]

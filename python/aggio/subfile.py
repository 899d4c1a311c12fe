"""Show, join or split a subfiled file (docs/subfiling.md).

A subfiled file is a small text file, the layout, at the logical file's
name, and M subfiles beside it, as the hint aggio_subfiles writes them.

Exit status: 0 when done, 1 when FILE is not what the action needs (info and
join want a layout, split an ordinary file), the layout is malformed, a
subfile is missing, or a read or write failed (nothing is left half done: the
result appears by a rename, last), 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import stat
import subprocess
import sys
import tempfile

from . import benchrun  # the MPI join's tool and launcher, for either MPI library
from .argtypes import parse_size, positive_int
from .subfile_layout import (FORMAT_VERSION, Layout, LayoutError, NotALayout, format_layout,
                             logical_size, name_problem, parse_layout, runs, shares,
                             starts_like_layout, subfile_name)

DEFAULT_STRIPE = 1 << 20
STRIPE_ALIGN = 4096         # what the C library's hint accepts (direct I/O's alignment)
CHUNK = 64 << 20            # one copy_file_range call at most
BUFFER = 8 << 20            # one read at most, where the copy goes through memory
# copy_file_range refuses these where the kernel or a file system cannot
# copy between the two files; read and write then do it.
NO_FAST_COPY = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP}


class SubfileError(Exception):
    """An input that does not fit the action, said in one line."""


def stripe_size(text: str) -> int:
    value = parse_size(text)
    if value <= 0 or value % STRIPE_ALIGN:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive multiple of "
                                         f"{STRIPE_ALIGN}")
    return value


# --- reading a layout --------------------------------------------------------

def read_head(path: str) -> bytes:
    """The first bytes of `path`, enough to tell a layout (which must be a
    regular file) from an ordinary file."""
    with open(path, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise SubfileError(f"{path} is not a regular file")
        return f.read(64)


def read_layout(path: str) -> Layout:
    if not starts_like_layout(read_head(path)):
        raise SubfileError(f"{path} is an ordinary file, not a subfiled layout")
    with open(path, "rb") as f:
        data = f.read()
    try:
        return parse_layout(data)
    except NotALayout:          # it changed since read_head
        raise SubfileError(f"{path} is an ordinary file, not a subfiled layout") from None
    except LayoutError as exc:
        raise SubfileError(f"{path}: not a valid layout: {exc}") from None


def subfile_paths(path: str, layout: Layout) -> list[str]:
    directory = os.path.dirname(path)
    return [os.path.join(directory, name) for name in layout.names]


def subfile_sizes(paths: list[str]) -> list[int | None]:
    """Each subfile's size, None where it is missing."""
    sizes = []
    for k, p in enumerate(paths):
        try:
            st = os.stat(p)
        except FileNotFoundError:
            sizes.append(None)
            continue
        if not stat.S_ISREG(st.st_mode):
            raise SubfileError(f"subfile {k} ({p}) is not a regular file")
        sizes.append(st.st_size)
    return sizes


def same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_not_layout(path: str, paths: list[str]) -> None:
    # A subfile that is the layout itself would be deleted with the result
    # of an in-place join.
    for k, p in enumerate(paths):
        if same_file(p, path):
            raise SubfileError(f"subfile {k} ({p}) is the layout file itself")


def load(path: str) -> tuple[Layout, list[str], list[int]]:
    """The layout, its subfiles' paths and sizes, every subfile present."""
    layout = read_layout(path)
    paths = subfile_paths(path, layout)
    check_not_layout(path, paths)
    sizes = subfile_sizes(paths)
    missing = [k for k, z in enumerate(sizes) if z is None]
    if missing:
        raise SubfileError(missing_message(paths, missing))
    return layout, paths, sizes


def missing_message(paths: list[str], missing: list[int]) -> str:
    k = missing[0]
    more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
    return f"subfile {k} ({paths[k]}) is missing{more}"


# --- copying -----------------------------------------------------------------

class Copier:
    """Copies byte ranges between descriptors: copy_file_range where the
    kernel and the file systems allow (no trip through user space, and a
    reflink on some file systems), else pread and pwrite."""

    def __init__(self):
        self.fast = hasattr(os, "copy_file_range")

    def copy(self, src: int, dst: int, src_off: int, dst_off: int, length: int,
             name: str) -> None:
        while length > 0:
            n = self._once(src, dst, src_off, dst_off, min(length, CHUNK))
            if n == 0:
                raise SubfileError(f"{name} ended early (changed while being copied?)")
            src_off, dst_off, length = src_off + n, dst_off + n, length - n

    def _once(self, src: int, dst: int, src_off: int, dst_off: int, length: int) -> int:
        if self.fast:
            try:
                return os.copy_file_range(src, dst, length, src_off, dst_off)
            except OSError as exc:
                if exc.errno not in NO_FAST_COPY:
                    raise
                self.fast = False
        data = os.pread(src, min(length, BUFFER), src_off)
        written = 0
        while written < len(data):
            written += os.pwrite(dst, data[written:], dst_off + written)
        return len(data)


# --- writing safely ------------------------------------------------------------

def create_temp(directory: str, name: str, mode: int) -> tuple[int, str]:
    """A new file beside the final one (a rename must not cross file
    systems), with the mode the result should have."""
    fd, path = tempfile.mkstemp(prefix=f".{name}.", suffix=".aggio-tmp", dir=directory)
    try:
        os.fchmod(fd, mode)
    except OSError:
        os.close(fd)
        os.unlink(path)
        raise
    return fd, path


def finish(fd: int) -> None:
    """fsync and close: the data is on disk before the rename publishes it."""
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_directory(directory: str) -> None:
    """Makes the renames durable; some file systems cannot fsync a
    directory, and the data is already safe, so that is not an error."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def remove_quietly(paths) -> None:
    for p in paths:
        with contextlib.suppress(OSError):
            os.unlink(p)


def mode_of(path: str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode) & 0o777


def refuse_existing(paths: list[str], force: bool) -> None:
    if force:
        return
    for p in paths:
        if os.path.lexists(p):
            raise SubfileError(f"{p} exists (--force replaces it)")


# --- info ----------------------------------------------------------------------

def info(path: str) -> tuple[dict, str | None]:
    """What the layout says and what is on disk, and the problem if any."""
    layout = read_layout(path)
    paths = subfile_paths(path, layout)
    check_not_layout(path, paths)
    sizes = subfile_sizes(paths)
    missing = [k for k, z in enumerate(sizes) if z is None]
    result = {
        "path": path, "format": FORMAT_VERSION, "stripe_size": layout.stripe_size,
        "subfiles": [{"index": k, "name": n, "size": z, "missing": z is None}
                     for k, (n, z) in enumerate(zip(layout.names, sizes))],
        # the logical size needs every subfile's size
        "logical_size": None if missing else logical_size(sizes, layout.stripe_size),
    }
    return result, missing_message(paths, missing) if missing else None


def render_info(result: dict) -> str:
    width = max(len(s["name"]) for s in result["subfiles"])
    size = result["logical_size"]
    lines = [f"{result['path']}: subfiled file, format {result['format']}",
             f"stripe size  {result['stripe_size']} bytes",
             f"subfiles     {len(result['subfiles'])}"]
    for s in result["subfiles"]:
        lines.append(f"  {s['index']:>4}  {s['name']:<{width}}  "
                     + ("missing" if s["missing"] else f"{s['size']} bytes"))
    lines.append(f"logical size {size} bytes" if size is not None
                 else "logical size unknown (a subfile is missing)")
    return "\n".join(lines)


def run_info(args) -> int:
    result, problem = info(args.file)
    print(json.dumps(result, indent=1) if args.json else render_info(result))
    if problem:
        print(f"aggio subfile info: {problem}", file=sys.stderr)
        return 1
    return 0


# --- join ----------------------------------------------------------------------

def join(path: str, out: str | None, force: bool, fill=None) -> int:
    """Writes the single file (at OUT, else over the layout, removing the
    subfiles after the rename); returns its size.  fill(fd, tmp, layout,
    paths, sizes, size) writes the temporary file and closes fd: by default
    this process copies every stripe (serial); join_mpi passes an MPI job."""
    layout, paths, sizes = load(path)
    target = out if out is not None else path
    if out is not None:
        check_join_target(path, paths, out)
        refuse_existing([out], force)
    size = logical_size(sizes, layout.stripe_size)
    directory = os.path.dirname(target) or "."
    fd, tmp = create_temp(directory, os.path.basename(target), mode_of(path))
    try:
        (fill or copy_serially)(fd, tmp, layout, paths, sizes, size)
        if out is not None:     # OUT may have appeared during the copy
            refuse_existing([out], force)
        os.replace(tmp, target)
    except BaseException:
        remove_quietly([tmp])
        raise
    sync_directory(directory)
    if out is None:
        remove_subfiles(paths)
    return size


def copy_serially(fd: int, tmp: str, layout: Layout, paths: list[str], sizes: list[int],
                  size: int) -> None:
    with contextlib.ExitStack() as stack:
        sources = []
        try:
            for p in paths:
                sources.append(os.open(p, os.O_RDONLY))
                stack.callback(os.close, sources[-1])
        except BaseException:
            os.close(fd)
            raise
        write_joined(sources, paths, fd, sizes, layout.stripe_size, size)


# --- join with MPI ----------------------------------------------------------------
# aggio-subfile-join (src/tools/aggio_subfile_join.c) reads the subfiled
# file through libaggio and writes the single file from every rank of an
# MPI job.  Looked for in $AGGIO_SUBFILE_JOIN, PATH, then the build
# directories of the source tree this package sits in.

def find_join_tool() -> str:
    try:
        found = benchrun.locate_program("aggio-subfile-join", "src",
                                        os.environ.get("AGGIO_SUBFILE_JOIN"))
    except ValueError as exc:
        raise SubfileError(f"AGGIO_SUBFILE_JOIN={exc}: not an executable") from None
    if not found:
        raise SubfileError("aggio-subfile-join not found (build aggio: scripts/build openmpi; "
                           "or set AGGIO_SUBFILE_JOIN): leave --mpi out for the serial join")
    return found


def run_join_tool(path: str, tmp: str, nranks: int, mpiexec: str | None) -> None:
    """The MPI job that writes the single file at tmp (which exists)."""
    tool = find_join_tool()
    cmd, env, _ = benchrun.launcher(tool, nranks, mpiexec)
    env.pop("AGGIO_HINTS", None)
    try:
        proc = subprocess.run(cmd + [tool, path, tmp, "--force"], capture_output=True, text=True,
                              env=env)
    except OSError as exc:
        raise SubfileError(f"cannot start {cmd[0]}: {exc.strerror}") from None
    if proc.returncode != 0:
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-3:]
        raise SubfileError(f"the MPI join failed (exit {proc.returncode}): " + " / ".join(tail))


def join_mpi(path: str, out: str | None, force: bool, nranks: int,
             mpiexec: str | None) -> int:
    """join() with the copy made by an MPI job of nranks ranks."""
    def by_mpi(fd, tmp, *_):
        os.close(fd)
        run_join_tool(path, tmp, nranks, mpiexec)
    return join(path, out, force, by_mpi)


def check_join_target(path: str, paths: list[str], out: str) -> None:
    if same_file(out, path):
        raise SubfileError(f"{out} is FILE itself: leave OUT out to join in place")
    for k, p in enumerate(paths):
        if same_file(out, p):
            raise SubfileError(f"{out} is subfile {k}, which the join reads")


def write_joined(sources: list[int], paths: list[str], fd: int, sizes: list[int],
                 stripe: int, size: int) -> None:
    """Copies every subfile's stripes to their logical offsets, then sets
    the size: the holes (subfiles shorter than their share) read as zeros.
    Closes fd."""
    try:
        copier = Copier()
        for k, sub_off, log_off, length in runs(sizes, stripe):
            copier.copy(sources[k], fd, sub_off, log_off, length, paths[k])
        os.ftruncate(fd, size)
    except BaseException:
        os.close(fd)
        raise
    finish(fd)


def remove_subfiles(paths: list[str]) -> None:
    """After the rename: the single file is safe, the subfiles are leftovers."""
    failed = []
    for p in paths:
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass
        except OSError as exc:
            failed.append(f"{p} ({exc.strerror})")
    sync_directory(os.path.dirname(paths[0]) or ".")
    if failed:
        raise SubfileError(f"joined, but could not remove subfile(s) {', '.join(failed)}")


def run_join(args) -> int:
    if args.mpi:
        size = join_mpi(args.file, args.out, args.force, args.mpi, args.mpiexec)
    else:
        size = join(args.file, args.out, args.force)
    print(f"{args.file}: joined into {args.out or args.file} ({size} bytes)")
    return 0


# --- split ---------------------------------------------------------------------

def split(path: str, out: str | None, count: int, stripe: int, force: bool) -> int:
    """Writes the subfiles and the layout (at OUT, else over FILE, renamed
    last, so that a crash before leaves FILE as it was); returns the size."""
    if starts_like_layout(read_head(path)):
        raise SubfileError(f"{path} is already a subfiled layout (join it first)")
    target = out if out is not None else path
    directory = os.path.dirname(target) or "."
    base = os.path.basename(target)
    if not base:
        raise SubfileError(f"{target} names a directory, not a file")
    layout = Layout(stripe, tuple(subfile_name(base, k, count) for k in range(count)))
    problem = name_problem(layout.names[0])
    if problem:
        raise SubfileError(f"cannot name the subfiles after {base!r}: {problem}")
    text = format_layout(layout).encode("ascii")
    finals = [os.path.join(directory, n) for n in layout.names]
    check_split_target(path, out, finals)
    refuse_existing(finals + ([out] if out is not None else []), force)
    with open(path, "rb") as src:
        size = os.fstat(src.fileno()).st_size
        write_split(src.fileno(), path, finals, shares(size, stripe, count), stripe,
                    text, target, mode_of(path))
    return size


def check_split_target(path: str, out: str | None, finals: list[str]) -> None:
    if out is not None and same_file(out, path):
        raise SubfileError(f"{out} is FILE itself: leave OUT out to split in place")
    for k, p in enumerate(finals):
        if same_file(p, path):
            raise SubfileError(f"subfile {k} would be {p}, which is FILE itself")


def write_split(src: int, path: str, finals: list[str], sizes: list[int], stripe: int,
                text: bytes, target: str, mode: int) -> None:
    directory = os.path.dirname(target) or "."
    temps, fds, renamed = [], [], []
    try:
        for final in finals:
            fd, tmp = create_temp(directory, os.path.basename(final), mode)
            fds.append(fd)
            temps.append(tmp)
        copier = Copier()
        for k, sub_off, log_off, length in runs(sizes, stripe):
            copier.copy(src, fds[k], log_off, sub_off, length, path)
        while fds:
            finish(fds.pop())
        layout_fd, layout_tmp = create_temp(directory, os.path.basename(target), mode)
        temps.append(layout_tmp)
        write_all(layout_fd, text)
        for tmp, final in zip(temps, finals):
            os.replace(tmp, final)
            renamed.append(final)
        sync_directory(directory)
        os.replace(layout_tmp, target)      # last: FILE or OUT becomes the layout
    except BaseException:
        for fd in fds:
            os.close(fd)
        remove_quietly(temps[len(renamed):] + renamed)
        raise
    sync_directory(directory)


def write_all(fd: int, data: bytes) -> None:
    try:
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
    except BaseException:
        os.close(fd)
        raise
    finish(fd)


def run_split(args) -> int:
    size = split(args.file, args.out, args.subfiles, args.stripe, args.force)
    print(f"{args.file}: split into {args.subfiles} subfiles of stripe {args.stripe}, "
          f"layout at {args.out or args.file} ({size} bytes)")
    return 0


# --- the command line ----------------------------------------------------------

ACTIONS = {"info": run_info, "join": run_join, "split": run_split}


def setup_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = actions.add_parser(
        "info", help="the layout, the subfiles' sizes and the logical size",
        description="Print the layout's format, stripe size and subfiles, each subfile's "
                    "size, and the logical size derived from them.")
    p.add_argument("file", metavar="FILE", help="the layout (the logical file's name)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = actions.add_parser(
        "join", help="make the single ordinary file (serial, or an MPI job with --mpi N)",
        description="Write the single ordinary file: at OUT (the subfiled file stays), or "
                    "in place (a temporary file beside FILE, renamed over it, then the "
                    "subfiles removed; a crash before the rename leaves FILE as it was).  "
                    "Serial by default: one process copies every byte; --mpi N runs "
                    "aggio-subfile-join on N ranks (libaggio reads, every rank writes).")
    p.add_argument("file", metavar="FILE", help="the layout")
    p.add_argument("out", nargs="?", metavar="OUT", help="where to write (default: FILE)")
    p.add_argument("--force", action="store_true", help="replace OUT if it exists")
    p.add_argument("--mpi", type=positive_int, metavar="N",
                   help="copy with an MPI job of N ranks (aggio-subfile-join)")
    p.add_argument("--mpiexec", metavar="CMD",
                   help="the launcher (default: the one of aggio-subfile-join's MPI library)")
    p = actions.add_parser(
        "split", help="store an ordinary file as M subfiles and a layout (serial)",
        description="Write M subfiles named OUT.subfile.K.of.M beside OUT and the layout at "
                    "OUT, or in place (temporaries, the layout renamed over FILE last).  "
                    "Serial: one process copies every byte.")
    p.add_argument("file", metavar="FILE", help="an ordinary file")
    p.add_argument("out", nargs="?", metavar="OUT", help="the layout to write (default: FILE)")
    p.add_argument("--subfiles", type=positive_int, required=True, metavar="M",
                   help="how many subfiles")
    p.add_argument("--stripe", type=stripe_size, default=DEFAULT_STRIPE, metavar="SIZE",
                   help="stripe size, a multiple of 4096, k/m/g suffixes (default 1m)")
    p.add_argument("--force", action="store_true",
                   help="replace OUT and subfiles of the same names if they exist")
    return parser


def parse_args(parser: argparse.ArgumentParser, argv: list[str] | None):
    # argparse (3.11) leaves an optional positional that follows an option,
    # as in `split FILE --subfiles 4 OUT`, unmatched: take it as OUT here.
    args, extra = parser.parse_known_args(argv)
    if len(extra) == 1 and not extra[0].startswith("-") and getattr(args, "out", 0) is None:
        args.out = extra[0]
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def describe(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return str(exc)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(setup_parser(argparse.ArgumentParser(
        prog="aggio subfile", description=__doc__.split("\n\n")[1].replace("\n", " "))), argv)
    try:
        return ACTIONS[args.action](args)
    except (SubfileError, ValueError, OSError) as exc:
        print(f"aggio subfile {args.action}: {describe(exc)}", file=sys.stderr)
        return 1

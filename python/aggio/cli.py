"""aggio: I/O reports and findings with fixes from aggio traces and Darshan
logs, replays of a log's access pattern through aggio-bench, the
conversion of subfiled files, and the draining of stage directories."""
from __future__ import annotations

import argparse
import sys

from . import __version__, advise, replay, report, stage, subfile, tune

# Each subcommand is a module with setup_parser(parser) and main(argv).
SUBCOMMANDS = {"report": report, "advise": advise, "replay": replay, "tune": tune,
               "subfile": subfile, "stage": stage}

DESCRIPTION = ("I/O reports and findings with fixes from aggio traces and Darshan logs, "
               "replays of a log's access pattern through aggio-bench, subfiled files "
               "shown, joined into one file or split, and staged writes drained into their "
               "final files.")
EPILOG = ("Run `aggio COMMAND --help` for a command's options.  Exit status: 0 when the "
          "inputs were read, 1 when an input cannot be read (or a run failed), 2 for bad "
          "arguments.")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aggio", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"aggio {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in SUBCOMMANDS.items():
        module.setup_parser(sub.add_parser(name, help=module.__doc__.split("\n")[0]))
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in SUBCOMMANDS:
        try:
            build_parser().parse_args(argv)   # prints help, version or a usage error
        except SystemExit as exc:
            return int(exc.code or 0)
        return 2
    return SUBCOMMANDS[argv[0]].main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())

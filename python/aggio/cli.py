"""`aggio` command line: one module per subcommand, each with setup_parser()
and main(argv).  Nothing is parsed or run at import time."""
from __future__ import annotations

import argparse
import sys

from . import advise, report

SUBCOMMANDS = {"report": report, "advise": advise}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aggio", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module in SUBCOMMANDS.items():
        module.setup_parser(sub.add_parser(name, help=module.__doc__.split("\n")[0]))
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in SUBCOMMANDS:
        build_parser().parse_args(argv)   # prints usage / error and exits
        return 2
    return SUBCOMMANDS[argv[0]].main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())

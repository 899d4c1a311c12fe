"""Hints as users paste them, in the three forms the findings give:

* aggio's `AGGIO_HINTS` and Cray MPICH's `MPICH_MPIIO_HINTS`, both
  `pattern:key=value:key=value,pattern2:...` (docs/hints.md, "AGGIO_HINTS");
  a value holding `:` or `,` (cb_config_list=*:1) is quoted Cray's way,
  `cb_config_list=#*:1#`, which aggio's parser (src/plan/hints.c) reads too.
  The two differ in which entries apply: every matching one in order for
  AGGIO_HINTS (later wins), only the first matching one for Cray, so the
  Cray form puts each file's entry first with the every-file hints in it;
* a hints file, `key value` per line: ROMIO reads it from `ROMIO_HINTS`,
  aggio from `AGGIO_HINTS_FILE`.  It applies to every file the program opens.

Only hints that docs/hints.md documents are emitted (KNOWN_HINTS, checked
against that page and against aggio's own parser by the tests).
"""
from __future__ import annotations

# key -> what the value is (as docs/hints.md); aggio_* keys are aggio's own
# and are left out of the Cray form, which MPICH alone reads.
KNOWN_HINTS = {
    "romio_cb_write": "tristate", "romio_cb_read": "tristate", "cb_nodes": "integer",
    "cb_buffer_size": "size", "cb_config_list": "text", "striping_unit": "size",
    "striping_factor": "integer", "romio_no_indep_rw": "bool",
    "romio_ds_write": "tristate", "romio_ds_read": "tristate",
    "aggio_strategy": "strategy", "aggio_direct_io": "tristate",
    "aggio_node_shm": "tristate", "aggio_pipeline": "tristate",
    "aggio_write_behind": "tristate", "aggio_write_behind_size": "size",
    "aggio_node_aggregators": "integer",
    "aggio_placement": "text", "aggio_topology_file": "text",
}


class HintError(ValueError):
    """A hint that aggio's documentation does not define, or cannot be written."""


def aggio_only(key: str) -> bool:
    return key.startswith("aggio_")


def check(hints: dict) -> None:
    for key, value in hints.items():
        if key not in KNOWN_HINTS:
            raise HintError(f"{key} is not a hint documented in docs/hints.md")
        text = str(value)
        if not text or "#" in text or "\n" in text or "=" in text:
            raise HintError(f"{key}={text!r} cannot be written in the hint syntaxes")


def quote(value) -> str:
    """A value as the colon syntax needs it: #...# around ':' or ','."""
    text = str(value)
    return f"#{text}#" if (":" in text or "," in text) else text


def pattern_for(path: str) -> str:
    """A file-name pattern for one file: its path, with '?' standing in for
    the characters the colon syntax cannot carry in a pattern."""
    if not path or path.startswith("<"):
        return "*"
    return "".join("?" if c in ":,#=" or c.isspace() else c for c in path)


def first_match_order(entries: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    """Entries written for "every matching entry, later wins" (AGGIO_HINTS)
    rewritten for "first matching entry only" (MPICH_MPIIO_HINTS): each
    file's entry first, holding the every-file ("*") hints under its own,
    then the every-file entry for the other files."""
    every: dict = {}
    for pattern, hints in entries:
        if pattern == "*":
            every.update(hints)
    own = [(p, {**every, **h}) for p, h in entries if p != "*"]
    return own + ([("*", every)] if every else [])


def env_value(entries: list[tuple[str, dict]], cray: bool = False) -> str:
    """`pattern:key=value:...,pattern:...` for AGGIO_HINTS (or, with cray,
    MPICH_MPIIO_HINTS: first-match order, aggio_* keys left out, entries
    left empty dropped)."""
    parts = []
    for pattern, hints in (first_match_order(entries) if cray else entries):
        check(hints)
        pairs = [f"{k}={quote(v)}" for k, v in hints.items() if not (cray and aggio_only(k))]
        if pairs:
            parts.append(":".join([pattern, *pairs]))
    return ",".join(parts)


def file_text(hints: dict) -> str:
    """Hints-file lines, `key value`."""
    check(hints)
    return "\n".join(f"{k} {v}" for k, v in hints.items())


def forms(hints: dict, path: str = "") -> list[tuple[str, str]]:
    """[(kind, text)]: the same hints as AGGIO_HINTS, MPICH_MPIIO_HINTS and a
    hints file.  The Cray form is left out when every hint is aggio's own."""
    pattern = pattern_for(path)
    out = [("aggio-hints", f'export AGGIO_HINTS="{env_value([(pattern, hints)])}"')]
    cray = env_value([(pattern, hints)], cray=True)
    if cray:
        out.append(("cray-hints", f'export MPICH_MPIIO_HINTS="{cray}"'))
    out.append(("romio-hints", file_text(hints)))
    return out

"""The trace format is declared once, in src/observe/trace.h: the Python reader's
NumPy types and operation codes, and the tables of docs/trace-format.md,
must say what the C header says."""
import os
import re

import numpy as np
import pytest

from aggio import trace

REPO = os.path.join(os.path.dirname(__file__), "..", "..")
HEADER_H = os.path.join(REPO, "src", "observe", "trace.h")
DOC = os.path.join(REPO, "docs", "trace-format.md")

pytestmark = pytest.mark.skipif(
    not (os.path.isfile(HEADER_H) and os.path.isfile(DOC)),
    reason="src/observe/trace.h or docs/trace-format.md not found (the Python tool alone, "
           "outside the aggio repository)")

# trace.h's type names -> NumPy's, and the document's names -> trace.h's
C_TO_NUMPY = {"char8": "S8", "u16": "<u2", "u32": "<u4", "u64": "<u8", "i32": "<i4",
              "i64": "<i8", "f64": "<f8"}
DOC_TO_C = {"char[8]": "char8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
            "int32": "i32", "int64": "i64", "float64": "f64"}


def _header_text():
    with open(HEADER_H, encoding="utf-8") as f:
        return f.read()


def _macro_body(text, name):
    """The body of `#define name(X) ...` (continuation lines joined)."""
    m = re.search(rf"#define {name}\(X\)((?:[^\n]*\\\n)*[^\n]*)", text)
    assert m, f"{name} not found in trace.h"
    return m.group(1).replace("\\\n", " ")


def c_fields(name):
    """[(field, offset, type)] of one X-macro field list in trace.h."""
    body = _macro_body(_header_text(), name)
    return [(f, int(o), t) for f, o, t in re.findall(r"X\((\w+), (\d+), (\w+)\)", body)]


def c_ops():
    """{code: (NAME, text, layer)} of AGGIO_TRACE_OPS."""
    body = _macro_body(_header_text(), "AGGIO_TRACE_OPS")
    return {int(c): (n, t, layer) for n, c, t, layer in
            re.findall(r'X\((\w+), (\d+), "(\w+)", (\w+)\)', body)}


def c_define(name):
    m = re.search(rf"#define {name} (\S+)", _header_text())
    assert m, name
    return m.group(1).strip('"')


def doc_table(heading):
    """Rows (lists of cells) of the first table after a `## heading` line."""
    with open(DOC, encoding="utf-8") as f:
        lines = f.read().split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(f"## {heading}"))
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip("|").split("|")])
        elif rows:
            break
    return rows[2:]  # without the heading row and the |---| row


def doc_fields(heading):
    return [(row[2], int(row[0]), DOC_TO_C[row[1]]) for row in doc_table(heading)]


def dtype_fields(dtype):
    return [(name, dtype.fields[name][1], dtype.fields[name][0].str.replace("|", ""))
            for name in dtype.names]


@pytest.mark.parametrize("c_list, dtype, heading", [
    ("AGGIO_TRACE_HEADER_FIELDS", trace.HEADER, "Header"),
    ("AGGIO_TRACE_RANK_FIELDS", trace.RANK_ENTRY, "Rank table"),
    ("AGGIO_TRACE_RECORD_FIELDS", trace.RECORD, "Records")])
def test_layouts_agree(c_list, dtype, heading):
    declared = c_fields(c_list)
    assert declared, f"{c_list} is empty"
    as_numpy = [(f, o, C_TO_NUMPY[t]) for f, o, t in declared]
    assert dtype_fields(dtype) == as_numpy, f"aggio/trace.py differs from trace.h's {c_list}"
    assert doc_fields(heading) == declared, f"the {heading} table differs from trace.h"


def test_sizes_magic_version_and_flags():
    assert c_define("AGGIO_TRACE_MAGIC").encode() == trace.MAGIC
    assert int(c_define("AGGIO_TRACE_VERSION")) == trace.VERSION
    assert int(c_define("AGGIO_TRACE_HEADER_SIZE")) == trace.HEADER_SIZE == trace.HEADER.itemsize
    assert int(c_define("AGGIO_TRACE_RANK_ENTRY_SIZE")) == trace.RANK_ENTRY_SIZE
    assert int(c_define("AGGIO_TRACE_RECORD_SIZE")) == trace.RECORD.itemsize
    assert int(c_define("AGGIO_TRACE_FLAG_COLLECTIVE")) == trace.FLAG_API_COLLECTIVE
    assert int(c_define("AGGIO_TRACE_FLAG_AGGREGATOR")) == trace.FLAG_POSIX_AGGREGATOR


def test_operation_codes_agree():
    ops = c_ops()
    assert {code: text for code, (_, text, _) in ops.items()} == trace.OP_NAMES
    posix = {code for code, (_, _, layer) in ops.items() if layer == "POSIX"}
    assert min(posix) == trace.POSIX_FIRST_OP and max(set(ops) - posix) < trace.POSIX_FIRST_OP
    assert sorted(trace.OP.values()) == sorted(ops)
    documented = {int(row[0]): (row[1], row[2].split()[0]) for row in _op_rows()}
    assert documented == {code: (text, layer) for code, (_, text, layer) in ops.items()}


def _op_rows():
    """The operation-code table (`| op | name | layer |`) of the document."""
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    rows = []
    for line in text[text.index("| op | name | layer |"):].split("\n")[2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def test_record_dtype_is_what_the_writer_writes(tmp_path):
    """A record written by write_trace reads back field by field at the
    offsets trace.h gives (the reader and writer share the dtype, so this
    checks the bytes, not the dtype against itself)."""
    rec = trace.make_records(1)
    rec["t_start"], rec["t_end"], rec["offset"] = 1.5, 2.5, 123
    rec["length"], rec["type_size"], rec["op"], rec["flags"], rec["rank"] = 7, 4, 34, 1, 0
    path = str(tmp_path / "one.trc")
    trace.write_trace(path, rec, 1)
    raw = open(path, "rb").read()
    start = int(np.frombuffer(raw[48:56], "<u8")[0])
    for field, offset, ctype in c_fields("AGGIO_TRACE_RECORD_FIELDS"):
        value = np.frombuffer(raw, C_TO_NUMPY[ctype], count=1, offset=start + offset)[0]
        assert value == rec[field][0], field

"""API offsets under a file view become bytes when the view is contiguous
(the set_view record holds the displacement and etype size)."""
from builders import TraceBuilder

from aggio import trace as fmt
from aggio.model import MPIIO, READ, WRITE
from aggio.sources.trace import load_traces


def _api_offsets(job):
    data = (job.ops["kind"] == READ) | (job.ops["kind"] == WRITE)
    ops = job.ops[(job.ops["layer"] == MPIIO) & data]
    return sorted(int(o) for o in ops["offset"])


def test_contiguous_view_offsets_become_bytes(tmp_path):
    b = TraceBuilder(1).open_all()
    b.op(0, "write_at", offset=100, length=10, type_size=1)
    # view: displacement 8, etype MPI_INT (4 bytes), contiguous filetype
    b.op(0, "set_view", offset=8, length=4, type_size=4,
         flags=fmt.FLAG_API_COLLECTIVE | fmt.FLAG_VIEW_CONTIGUOUS)
    b.op(0, "write_at", offset=3, length=2, type_size=4)
    b.close_all()
    job = load_traces([b.write(tmp_path / "v.trc")])
    assert _api_offsets(job) == [8 + 3 * 4, 100]
    assert not any("non-contiguous" in n for n in job.notes)


def test_strided_view_offsets_are_kept_and_noted(tmp_path):
    b = TraceBuilder(1).open_all()
    b.op(0, "set_view", offset=0, length=1, type_size=64, flags=fmt.FLAG_API_COLLECTIVE)
    b.op(0, "write_at", offset=5, length=1, type_size=64)
    b.close_all()
    job = load_traces([b.write(tmp_path / "s.trc")])
    assert _api_offsets(job) == [5]
    assert any("non-contiguous" in n for n in job.notes)


def test_offsets_without_a_position_stay_unknown_under_a_view(tmp_path):
    # Offset -1 means "not known" in the format; the view must not turn it
    # into a byte offset (0 + -1 * 4 would be -4), and a damaged
    # displacement that would map an offset below 0 keeps the etype
    # offset.  Found by the trace fuzzer.
    b = TraceBuilder(1).open_all()
    b.op(0, "set_view", offset=0, length=4, type_size=4,
         flags=fmt.FLAG_API_COLLECTIVE | fmt.FLAG_VIEW_CONTIGUOUS)
    b.op(0, "write_at", offset=-1, length=2, type_size=4)
    b.op(0, "set_view", offset=-1, length=8, type_size=8,
         flags=fmt.FLAG_API_COLLECTIVE | fmt.FLAG_VIEW_CONTIGUOUS)
    b.op(0, "write_at", offset=0, length=1, type_size=8)
    b.close_all()
    job = load_traces([b.write(tmp_path / "n.trc")])
    assert _api_offsets(job) == [-1, 0]
    assert (job.ops["offset"] >= -1).all()

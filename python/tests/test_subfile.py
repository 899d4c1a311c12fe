"""aggio subfile info|join|split on real files, and the layout's mapping
(docs/subfiling.md, format 1) against a byte-by-byte reference."""
import json
import os
import random
import re

import pytest

from aggio import cli
from aggio.subfile import Copier
from aggio.subfile_layout import (Layout, LayoutError, NotALayout, format_layout, locate,
                                  logical_offset, logical_size, parse_layout, runs, share,
                                  shares, subfile_end, subfile_name)
from paths import ROOT

MIB = 1 << 20


# --- a reference that deals stripes out one by one -----------------------------

def dealt(stripe, count, length):
    """{logical byte: (K, offset in K)} for bytes [0, length), by dealing
    stripes round-robin like cards: no division anywhere."""
    where, filled, k = {}, [0] * count, 0
    for start in range(0, length, stripe):
        for b in range(start, min(start + stripe, length)):
            where[b] = (k, filled[k])
            filled[k] += 1
        k = k + 1 if k + 1 < count else 0
    return where


GEOMETRIES = [(1, 1), (1, 3), (3, 1), (4, 2), (3, 5), (5, 3), (7, 4)]


@pytest.mark.parametrize("stripe,count", GEOMETRIES)
def test_locate_and_its_inverse_match_dealing(stripe, count):
    for b, (k, off) in dealt(stripe, count, 4 * stripe * count + 3).items():
        assert locate(b, stripe, count) == (k, off)
        assert logical_offset(k, off, stripe, count) == b


@pytest.mark.parametrize("stripe,count", GEOMETRIES)
def test_shares_match_dealing(stripe, count):
    span = 3 * stripe * count + 2
    where = dealt(stripe, count, span)
    for length in range(span):
        counted = [0] * count
        for b in range(length):
            counted[where[b][0]] += 1
        assert shares(length, stripe, count) == counted
        assert [share(length, k, stripe, count) for k in range(count)] == counted


@pytest.mark.parametrize("stripe,count", GEOMETRIES)
def test_logical_size_is_one_past_the_last_byte_held(stripe, count):
    span = 3 * stripe * count
    where = dealt(stripe, count, span + stripe * count)
    rng = random.Random(stripe * 100 + count)
    for _ in range(200):
        sizes = [rng.randrange(0, span // count + 2) for _ in range(count)]
        held = [b for b, (k, off) in where.items() if off < sizes[k]]
        assert logical_size(sizes, stripe) == (max(held) + 1 if held else 0)
        for k, z in enumerate(sizes):
            mine = [b for b, (kk, off) in where.items() if kk == k and off < z]
            assert subfile_end(k, z, stripe, count) == (max(mine) + 1 if mine else 0)


@pytest.mark.parametrize("stripe,count", GEOMETRIES)
def test_logical_size_of_the_shares_is_the_length(stripe, count):
    for length in range(4 * stripe * count):
        assert logical_size(shares(length, stripe, count), stripe) == length


@pytest.mark.parametrize("stripe,count", GEOMETRIES)
def test_runs_cover_exactly_the_bytes_held(stripe, count):
    where = dealt(stripe, count, 4 * stripe * count)
    rng = random.Random(count * 10 + stripe)
    for _ in range(100):
        sizes = [rng.randrange(0, 3 * stripe + 2) for _ in range(count)]
        covered = {}
        last = -1
        for k, sub_off, log_off, length in runs(sizes, stripe):
            assert log_off > last and length > 0          # logical order, no overlap
            last = log_off + length - 1
            for d in range(length):
                covered[log_off + d] = (k, sub_off + d)
        held = {b: kd for b, kd in where.items() if kd[1] < sizes[kd[0]]}
        assert covered == held


def test_runs_of_one_subfile_are_one_piece():
    assert list(runs([10 * 4096 + 5], 4096)) == [(0, 0, 0, 10 * 4096 + 5)]


# --- the layout's text ----------------------------------------------------------

def doc_example() -> str:
    """The example layout in docs/subfiling.md, unindented."""
    doc = open(os.path.join(ROOT, "docs", "subfiling.md")).read()
    section = doc.split("## The layout file, format 1", 1)[1]
    block = re.search(r"\n\n((?:    .*\n)+)", section).group(1)
    return "".join(line[4:] + "\n" for line in block.rstrip("\n").split("\n"))


def test_the_text_is_the_docs_example_byte_for_byte():
    layout = Layout(1048576, tuple(subfile_name("ckpt.h5", k, 4) for k in range(4)))
    assert format_layout(layout) == doc_example()
    assert parse_layout(doc_example().encode()) == layout


def test_the_text_round_trips():
    for layout in (Layout(1, ("x",)), Layout(4096, ("a b", "c", "d.e")),
                   Layout(65536, tuple(subfile_name("f", k, 12) for k in range(12)))):
        assert parse_layout(format_layout(layout).encode()) == layout


def good_text() -> str:
    return format_layout(Layout(4096, ("f.subfile.0.of.2", "f.subfile.1.of.2")))


def edited(old: str, new: str) -> bytes:
    text = good_text()
    assert old in text
    return text.replace(old, new, 1).encode()


@pytest.mark.parametrize("data,words", [
    (edited("format 1", "format 2"), "format 2"),
    (edited("format 1", "format x"), "format version"),
    (edited("stripe_size 4096\nsubfiles 2", "subfiles 2\nstripe_size 4096"), "out of order"),
    (edited("subfile 0 f.subfile.0.of.2", "subfile 0 d/f"), "'/'"),
    (edited("subfile 1 f.subfile.1.of.2", "subfile 1 .."), "directory"),
    (edited("subfile 1 f.subfile.1.of.2", "subfile 1 "), "empty"),
    (edited("subfile 1 f.subfile.1.of.2", "subfile 1 f.subfile.0.of.2"), "two subfiles"),
    (edited("subfiles 2", "subfiles 3"), "2 subfile lines"),
    (edited("subfiles 2", "subfiles 1"), "more subfile lines"),
    (edited("subfiles 2", "subfiles 0"), "out of range"),
    (edited("stripe_size 4096", "stripe_size 0"), "out of range"),
    (edited("stripe_size 4096", "stripe_size -4096"), "whole number"),
    (edited("stripe_size 4096", "stripe_size 04096"), "whole number"),
    (edited("stripe_size 4096", "stripe_size 4096 bytes"), "'stripe_size N'"),
    (edited("subfile 1 f", "subfile 2 f"), "'subfile 1 NAME'"),
    (edited("end\n", "mtime 5\nend\n"), "unknown key"),
    (edited("end\n", "end\nmore\n"), "after 'end'"),
    (edited("end\n", "end"), "newline"),
    (edited("end\n", ""), "no 'end' line"),
    (edited("subfile 0 f", "subfile 0 \u00e9f"), "not ASCII"),
    (edited("subfile 0 f", "subfile 0 \tf"), "printable"),
    (good_text().encode()[:40], "newline"),
])
def test_a_malformed_layout_is_refused(data, words):
    with pytest.raises(LayoutError) as exc:
        parse_layout(data)
    assert words in str(exc.value)


def test_an_ordinary_file_is_not_a_layout():
    for data in (b"", b"hello\n", b"\x89HDF\r\n\x1a\n", b"aggio subfiled"):
        with pytest.raises(NotALayout):
            parse_layout(data)


def test_names_that_cannot_be_written_are_refused():
    with pytest.raises(LayoutError):
        format_layout(Layout(4096, ("a/b",)))


# --- the command on real files ----------------------------------------------------

def run(*argv):
    return cli.main(["subfile", *map(str, argv)])


def make(path, size, seed=1):
    data = random.Random(seed).randbytes(size)
    path.write_bytes(data)
    return data


def info_json(path, capsys):
    capsys.readouterr()
    assert run("info", "--json", path) == 0
    return json.loads(capsys.readouterr().out)


def leftovers(directory):
    return [p for p in os.listdir(directory) if p.endswith(".aggio-tmp")]


@pytest.mark.parametrize("stripe", [4096, 65536])
@pytest.mark.parametrize("count", [1, 2, 3, 7])
@pytest.mark.parametrize("kind", ["0", "1", "4095", "SM", "SM+1", "odd"])
def test_split_then_join_gives_the_same_bytes(tmp_path, capsys, stripe, count, kind):
    size = {"0": 0, "1": 1, "4095": 4095, "SM": stripe * count, "SM+1": stripe * count + 1,
            "odd": 3 * MIB + 12345 + count}[kind]
    data = make(tmp_path / "orig", size, seed=size)
    assert run("split", tmp_path / "orig", "--subfiles", count, "--stripe", stripe,
               tmp_path / "lay") == 0
    assert (tmp_path / "orig").read_bytes() == data        # left as it was
    names = [subfile_name("lay", k, count) for k in range(count)]
    assert (tmp_path / "lay").read_text() == format_layout(Layout(stripe, tuple(names)))
    assert [os.path.getsize(tmp_path / n) for n in names] == shares(size, stripe, count)
    shown = info_json(tmp_path / "lay", capsys)
    assert shown["logical_size"] == size == os.path.getsize(tmp_path / "orig")
    assert shown["stripe_size"] == stripe and len(shown["subfiles"]) == count
    assert run("join", tmp_path / "lay", tmp_path / "back") == 0
    assert (tmp_path / "back").read_bytes() == data
    assert all((tmp_path / n).exists() for n in names)     # join to OUT keeps them
    assert not leftovers(tmp_path)


def test_the_default_stripe_is_1_mib_and_suffixes_work(tmp_path):
    make(tmp_path / "f", 5 * MIB + 7)
    assert run("split", tmp_path / "f", "--subfiles", 2, tmp_path / "a") == 0
    assert parse_layout((tmp_path / "a").read_bytes()).stripe_size == MIB
    assert run("split", tmp_path / "f", "--subfiles", 2, "--stripe", "64k", tmp_path / "b") == 0
    assert parse_layout((tmp_path / "b").read_bytes()).stripe_size == 65536


def test_out_may_come_after_the_options(tmp_path):
    make(tmp_path / "f", 10000)
    assert run("split", tmp_path / "f", "--subfiles", 3, "--stripe", "4k", tmp_path / "o") == 0
    assert (tmp_path / "o").read_bytes().startswith(b"aggio subfiled file, format 1\n")


def test_subfiles_go_beside_out(tmp_path):
    data = make(tmp_path / "f", 70000)
    (tmp_path / "d").mkdir()
    assert run("split", tmp_path / "f", "--subfiles", 2, "--stripe", "4k",
               tmp_path / "d" / "x.h5") == 0
    assert sorted(os.listdir(tmp_path / "d")) == ["x.h5", "x.h5.subfile.0.of.2",
                                                  "x.h5.subfile.1.of.2"]
    assert run("join", tmp_path / "d" / "x.h5", tmp_path / "j") == 0
    assert (tmp_path / "j").read_bytes() == data


def write_layout(directory, name, stripe, contents):
    """A subfiled file made by hand: subfile K holds contents[K]."""
    names = [subfile_name(name, k, len(contents)) for k in range(len(contents))]
    for n, c in zip(names, contents):
        (directory / n).write_bytes(c)
    (directory / name).write_text(format_layout(Layout(stripe, tuple(names))))
    return directory / name


def test_holes_read_as_zeros_and_a_later_subfile_sets_the_size(tmp_path, capsys):
    s = 4096
    a, c = b"A" * s, b"C" * 100
    lay = write_layout(tmp_path, "h", s, [a, b"", c])     # subfile 1 holds nothing
    assert info_json(lay, capsys)["logical_size"] == 2 * s + 100
    assert run("join", lay, tmp_path / "out") == 0
    assert (tmp_path / "out").read_bytes() == a + bytes(s) + c


def test_a_short_subfile_leaves_a_hole_inside(tmp_path, capsys):
    s = 4096
    first = bytes(range(256)) * 32                          # two stripes of subfile 0
    lay = write_layout(tmp_path, "h", s, [first, b"", b"C" * 10])
    # subfile 0's second stripe is logical stripe 3: it sets the size
    assert info_json(lay, capsys)["logical_size"] == 4 * s
    assert run("join", lay, tmp_path / "out") == 0
    expect = first[:s] + bytes(s) + b"C" * 10 + bytes(s - 10) + first[s:]
    assert (tmp_path / "out").read_bytes() == expect


def test_all_empty_subfiles_join_to_an_empty_file(tmp_path, capsys):
    lay = write_layout(tmp_path, "e", 4096, [b"", b""])
    assert info_json(lay, capsys)["logical_size"] == 0
    assert run("join", lay) == 0
    assert (tmp_path / "e").read_bytes() == b"" and os.listdir(tmp_path) == ["e"]


def test_split_and_join_in_place(tmp_path):
    data = make(tmp_path / "ckpt.h5", 2 * MIB + 333)
    os.chmod(tmp_path / "ckpt.h5", 0o640)
    assert run("split", tmp_path / "ckpt.h5", "--subfiles", 4, "--stripe", "64k") == 0
    names = [subfile_name("ckpt.h5", k, 4) for k in range(4)]
    assert sorted(os.listdir(tmp_path)) == sorted(["ckpt.h5", *names])
    assert parse_layout((tmp_path / "ckpt.h5").read_bytes()).names == tuple(names)
    for n in ["ckpt.h5", *names]:
        assert os.stat(tmp_path / n).st_mode & 0o777 == 0o640
    assert run("join", tmp_path / "ckpt.h5") == 0
    assert os.listdir(tmp_path) == ["ckpt.h5"]              # subfiles removed, no temporaries
    assert (tmp_path / "ckpt.h5").read_bytes() == data
    assert os.stat(tmp_path / "ckpt.h5").st_mode & 0o777 == 0o640


def test_info_prints_the_subfiles(tmp_path, capsys):
    make(tmp_path / "f", 9000)
    assert run("split", tmp_path / "f", "--subfiles", 2, "--stripe", "4k", tmp_path / "l") == 0
    capsys.readouterr()
    assert run("info", tmp_path / "l") == 0
    out = capsys.readouterr().out
    assert "format 1" in out and "stripe size  4096 bytes" in out and "subfiles     2" in out
    assert re.search(r"0  l\.subfile\.0\.of\.2  4904 bytes", out)
    assert "logical size 9000 bytes" in out


def test_the_fallback_copy_gives_the_same_bytes(tmp_path):
    data = make(tmp_path / "src", 3 * MIB + 5)
    copier = Copier()
    copier.fast = False             # pread and pwrite, as without copy_file_range
    src = os.open(tmp_path / "src", os.O_RDONLY)
    dst = os.open(tmp_path / "dst", os.O_WRONLY | os.O_CREAT)
    try:
        copier.copy(src, dst, 100, 7, len(data) - 100, "src")
    finally:
        os.close(src)
        os.close(dst)
    assert (tmp_path / "dst").read_bytes() == bytes(7) + data[100:]


# --- bad inputs: exit 1, one line, no traceback ------------------------------------

def fails(capsys, *argv, words):
    capsys.readouterr()
    assert run(*argv) == 1
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err
    assert err.startswith("aggio subfile ") and err.count("\n") == 1
    return err


def test_an_ordinary_file_is_not_info_or_join_material(tmp_path, capsys):
    make(tmp_path / "plain", 5000)
    (tmp_path / "empty").write_bytes(b"")
    for f in ("plain", "empty"):
        fails(capsys, "info", tmp_path / f, words="is an ordinary file, not a subfiled layout")
        fails(capsys, "join", tmp_path / f, words="ordinary file")
    assert os.path.getsize(tmp_path / "plain") == 5000


def test_what_is_not_a_file(tmp_path, capsys):
    fails(capsys, "info", tmp_path / "nothing", words="No such file")
    fails(capsys, "join", tmp_path, words="directory")
    fails(capsys, "split", tmp_path / "nothing", "--subfiles", 2, words="No such file")


def test_a_layout_is_not_split(tmp_path, capsys):
    lay = write_layout(tmp_path, "l", 4096, [b"x", b"y"])
    before = lay.read_bytes()
    fails(capsys, "split", lay, "--subfiles", 3, words="already a subfiled layout")
    assert lay.read_bytes() == before and len(os.listdir(tmp_path)) == 3


def test_a_missing_subfile(tmp_path, capsys):
    lay = write_layout(tmp_path, "l", 4096, [b"x" * 5000, b"y", b"z"])
    os.unlink(tmp_path / subfile_name("l", 1, 3))
    capsys.readouterr()
    assert run("info", lay) == 1
    out, err = capsys.readouterr()
    assert "missing" in out and "logical size unknown" in out
    assert err == f"aggio subfile info: subfile 1 ({tmp_path / 'l.subfile.1.of.3'}) is missing\n"
    capsys.readouterr()
    assert run("info", "--json", lay) == 1
    shown = json.loads(capsys.readouterr().out)
    assert shown["logical_size"] is None and shown["subfiles"][1]["missing"]
    fails(capsys, "join", lay, words="subfile 1")
    assert lay.read_bytes().startswith(b"aggio subfiled file")   # left as it was
    assert not leftovers(tmp_path)


@pytest.mark.parametrize("old,new,words", [
    ("format 1", "format 2", "format 2, which this aggio does not know"),
    ("subfile 0 l.subfile.0.of.2", "subfile 0 ../l.subfile.0.of.2", "'/'"),
    ("subfiles 2", "subfiles 3", "2 subfile lines, but 'subfiles 3'"),
    ("stripe_size 4096\nsubfiles 2", "subfiles 2\nstripe_size 4096", "out of order"),
])
def test_a_malformed_layout_exits_1(tmp_path, capsys, old, new, words):
    lay = write_layout(tmp_path, "l", 4096, [b"x", b"y"])
    lay.write_text(lay.read_text().replace(old, new, 1))
    for action in ("info", "join"):
        err = fails(capsys, action, lay, words=words)
        assert "not a valid layout" in err


def test_a_subfile_that_is_the_layout_itself(tmp_path, capsys):
    (tmp_path / "l").write_text(format_layout(Layout(4096, ("l",))))
    fails(capsys, "join", tmp_path / "l", words="the layout file itself")
    assert (tmp_path / "l").exists()


def test_join_does_not_replace_out_unless_forced(tmp_path, capsys):
    data = make(tmp_path / "f", 20000)
    assert run("split", tmp_path / "f", "--subfiles", 2, "--stripe", "4k", tmp_path / "l") == 0
    (tmp_path / "out").write_bytes(b"keep")
    fails(capsys, "join", tmp_path / "l", tmp_path / "out", words="exists (--force")
    assert (tmp_path / "out").read_bytes() == b"keep"
    assert run("join", "--force", tmp_path / "l", tmp_path / "out") == 0
    assert (tmp_path / "out").read_bytes() == data
    fails(capsys, "join", "--force", tmp_path / "l", tmp_path / "l.subfile.1.of.2",
          words="is subfile 1")
    fails(capsys, "join", "--force", tmp_path / "l", tmp_path / "l", words="FILE itself")
    assert not leftovers(tmp_path)


def test_split_does_not_replace_subfiles_unless_forced(tmp_path, capsys):
    data = make(tmp_path / "f", 20000)
    (tmp_path / "f.subfile.1.of.2").write_bytes(b"someone's")
    fails(capsys, "split", tmp_path / "f", "--subfiles", 2, words="exists (--force")
    assert (tmp_path / "f").read_bytes() == data
    assert run("split", "--force", tmp_path / "f", "--subfiles", 2, "--stripe", "4k") == 0
    assert run("join", tmp_path / "f") == 0
    assert (tmp_path / "f").read_bytes() == data


@pytest.mark.parametrize("argv", [
    ["--subfiles", "0"], ["--subfiles", "2", "--stripe", "1000"],
    ["--subfiles", "2", "--stripe", "0"], ["--subfiles", "2", "--stripe", "-4k"],
    ["--subfiles", "2", "--stripe", "1.5m"], [],
])
def test_bad_split_arguments_exit_2(tmp_path, capsys, argv):
    make(tmp_path / "f", 10)
    with pytest.raises(SystemExit) as exc:
        run("split", tmp_path / "f", *argv)
    assert exc.value.code == 2 and "Traceback" not in capsys.readouterr().err


def test_extra_arguments_exit_2(tmp_path):
    with pytest.raises(SystemExit) as exc:
        run("join", tmp_path / "a", tmp_path / "b", tmp_path / "c")
    assert exc.value.code == 2

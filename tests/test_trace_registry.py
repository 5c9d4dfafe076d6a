"""The trace format registry (issue 21): every registered format is detected and round-trips; a format
registered by a test, or published by an installed package's entry point, is found by read_trace,
write_trace, detect_format and `perfmod replay --help`; docs/usage.md's table is the registry's."""

import shutil
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from perfmod.apps.traces import synthetic
from perfmod.trace import Call, TraceBuilder, TraceError, detect_format, read_trace, trace_formats, write_trace
from perfmod.trace.formats import registry
from perfmod.trace.formats.registry import TraceFormat, format_table, register_format

DATA = Path(__file__).parent / "data"
#: a file of each read-only format (a new read-only format must add one: test_every_read_only_format_has_a_sample)
SAMPLES = {"dumpi": DATA / "dumpi"}  # a directory of dumpi2ascii rank files
WRITABLE = [f.name for f in trace_formats() if f.write is not None]
READ_ONLY = [f.name for f in trace_formats() if f.write is None]
P2P = {int(Call.SEND): "send", int(Call.ISEND): "send", int(Call.RECV): "recv", int(Call.IRECV): "recv"}


def _messages(trace):
    """Per rank: the multiset of (send|recv, peer, bytes) of its point-to-point calls."""
    out = Counter()
    for r, c, p, n in zip(trace.rank, trace.call, trace.peer, trace.nbytes, strict=True):
        if int(c) in P2P:
            out[(int(r), P2P[int(c)], int(p), int(n))] += 1
    return out


def _written(fmt, tmp_path):
    trace = synthetic("minimd", 8, 2, allreduces=0)  # point-to-point only: GOAL expands collectives
    ext = fmt.extensions[0] if fmt.extensions else ""
    return trace, write_trace(trace, tmp_path / f"t{ext}", format=fmt.name)


@pytest.mark.parametrize("name", WRITABLE)
def test_every_writable_format_round_trips_the_messages(name, tmp_path):
    fmt = registry.trace_format(name)
    trace, path = _written(fmt, tmp_path)
    back = read_trace(path)
    assert back.nprocs == trace.nprocs
    # 8 ranks x 6 swaps x (forward, reverse) x 2 iterations, each a send and a receive
    assert _messages(back) == _messages(trace) and sum(_messages(trace).values()) == 8 * 6 * 2 * 2 * 2


@pytest.mark.parametrize("name", WRITABLE)
def test_every_writable_format_is_detected_by_extension_and_by_content(name, tmp_path):
    fmt = registry.trace_format(name)
    _, path = _written(fmt, tmp_path)
    if fmt.extensions:
        assert path.suffix in fmt.extensions and detect_format(path) == name
    renamed = path.with_name(path.stem + "-renamed.data")  # an extension no format owns: sniffed
    shutil.copyfile(path, renamed)
    assert detect_format(renamed) == name


@pytest.mark.parametrize("name", READ_ONLY)
def test_every_read_only_format_has_a_sample_that_is_detected_and_read(name, tmp_path):
    assert name in SAMPLES, f"read-only format {name!r}: add a sample file to SAMPLES"
    sample = SAMPLES[name]
    assert detect_format(sample) == name
    renamed = tmp_path / "sample.data"
    (shutil.copytree if sample.is_dir() else shutil.copyfile)(sample, renamed)
    assert detect_format(renamed) == name
    assert len(read_trace(sample)) > 0
    with pytest.raises(TraceError, match=f"cannot write format '{name}'"):
        write_trace(read_trace(sample), tmp_path / "out", format=name)


def test_unknown_files_and_formats_name_the_file_and_the_known_formats(tmp_path):
    junk = tmp_path / "junk.data"
    junk.write_text("hello world\n")
    known = ", ".join(f.name for f in trace_formats())
    with pytest.raises(TraceError, match=f"junk.data: not a trace perfmod can read \\(expected one of {known}\\)"):
        detect_format(junk)
    with pytest.raises(TraceError, match="unknown trace format 'nope'"):
        read_trace(junk, format="nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TraceError, match="empty: not a directory of trace"):
        detect_format(tmp_path / "empty")


# ---- a toy format of blocking calls: "TOY <nprocs>", then one "<rank> <call> <peer> <nbytes>" line per event ------

def _write_toy(trace, path):
    lines = [f"TOY {trace.nprocs}"]
    lines += [f"{r} {int(c)} {p} {n}" for r, c, p, n in zip(trace.rank, trace.call, trace.peer, trace.nbytes,
                                                            strict=True)]
    Path(path).write_text("\n".join(lines) + "\n")
    return Path(path)


def _read_toy(path):
    head, *rows = Path(path).read_text().splitlines()
    b = TraceBuilder(int(head.split()[1]), source=str(path))
    for row in rows:
        r, c, p, n = (int(v) for v in row.split())
        b.append(r, Call(c), peer=p, nbytes=n)
    return b.build(validate=False)


TOY = TraceFormat(name="toy", files="a toy text trace (`.toy`)", extensions=(".toy",),
                  guess_can_open=lambda path, head: head.startswith(b"TOY "), read=_read_toy, write=_write_toy,
                  module=__name__)


@pytest.fixture
def scratch_registry(monkeypatch):
    """The registry as it is, restored after the test."""
    registry.trace_formats()  # the built-ins registered before the copy
    monkeypatch.setattr(registry, "_FORMATS", dict(registry._FORMATS))
    monkeypatch.setattr(registry, "_plugins_loaded", True)


def test_a_registered_toy_format_is_read_written_detected_and_in_the_replay_help(scratch_registry, tmp_path,
                                                                                capsys):
    from perfmod.workflow.cli import main

    register_format(TOY)
    b = TraceBuilder(4)
    for r in range(4):  # pairs (0, 1), (2, 3): the even rank sends 1 KiB first, the odd one answers 2 KiB
        peer = r ^ 1
        calls = [(Call.SEND, 1024), (Call.RECV, 2048)] if r % 2 == 0 else [(Call.RECV, 1024), (Call.SEND, 2048)]
        for call, n in calls:
            b.append(r, call, peer=peer, nbytes=n)
    trace = b.build()
    path = write_trace(trace, tmp_path / "j.toy")
    assert path.read_text().startswith("TOY 4\n")
    assert detect_format(path) == "toy"
    renamed = tmp_path / "j.data"
    shutil.copyfile(path, renamed)
    assert detect_format(renamed) == "toy"
    back = read_trace(renamed)
    np.testing.assert_array_equal(back.call, trace.call)
    np.testing.assert_array_equal(back.nbytes, trace.nbytes)
    assert _messages(back) == _messages(trace) and len(back) == 8
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    assert "toy: a toy text trace (.toy)" in " ".join(capsys.readouterr().out.split())
    assert main(["replay", str(path), "--platform", "lassen", "--model", "postal", "--top", "1"]) == 0
    assert "| `toy` | a toy text trace (`.toy`) | `.toy` | yes |" in format_table()


def test_a_format_cannot_take_a_name_or_an_extension_twice(scratch_registry):
    register_format(TOY)
    with pytest.raises(ValueError, match="'toy' is already registered"):
        register_format(TOY)
    other = TraceFormat(name="toy2", files="", extensions=(".toy",), guess_can_open=TOY.guess_can_open,
                        read=_read_toy)
    with pytest.raises(ValueError, match=r"extension \.toy belongs to 'toy'"):
        register_format(other)
    with pytest.raises(ValueError, match="lower-case"):
        TraceFormat(name="x", files="", extensions=(".TOY",), guess_can_open=TOY.guess_can_open, read=_read_toy)


def test_an_installed_package_registers_a_format_by_entry_point(scratch_registry, monkeypatch, tmp_path):
    """A distribution on sys.path that publishes ``perfmod.trace_formats = toy = toyfmt:TOY`` (its metadata
    written here as pip would) is registered at the first lookup."""
    (tmp_path / "toyfmt.py").write_text(
        "from perfmod.trace.formats.registry import TraceFormat\n"
        "TOY = TraceFormat(name='toy', files='toy', extensions=('.toy',), guess_can_open=lambda p, h: False,\n"
        "                  read=lambda path: None)\n")
    info = tmp_path / "toyfmt-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toyfmt\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{registry.ENTRY_POINT_GROUP}]\ntoy = toyfmt:TOY\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_plugins_loaded", False)
    assert "toy" in [f.name for f in trace_formats()]
    sys.modules.pop("toyfmt", None)


def test_docs_usage_shows_the_registry_table_and_the_library_page_each_built_in_format():
    """docs/usage.md holds the table format_table() renders between its markers (paste the message's table there
    when this fails); docs/library.md says what carries over for each format perfmod ships."""
    docs = Path(__file__).parents[1] / "docs"
    text = (docs / "usage.md").read_text()
    start, end = "<!-- trace formats:", "<!-- end of trace formats -->"
    block = text[text.index(start):text.index(end)].split("\n", 1)[1].strip()
    assert block == format_table(), f"docs/usage.md: replace the trace format table by\n{format_table()}"
    library = (docs / "library.md").read_text()
    missing = [f.module for f in trace_formats() if f.module.startswith("perfmod.") and f"`{f.module}`" not in library]
    assert not missing, f"docs/library.md's trace format table lacks {missing}"

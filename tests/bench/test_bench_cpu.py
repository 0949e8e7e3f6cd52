"""The CPU decode benchmark's table (decode/bench_cpu.py): its shape, never its times."""

from __future__ import annotations

import pytest

from cinegpu.bench import decode_cpu as bench_cpu
from conftest import CONFORMANCE, needs_conformance


@needs_conformance
def test_manifest_streams_lists_each_present_part1_stream_once():
    streams = bench_cpu.manifest_streams(CONFORMANCE, "part1")
    names = [p.name for p in streams]
    assert len(names) == len(set(names)) >= 20
    assert all(n.startswith(("p0_", "p1_")) for n in names)
    assert "p0_07.j2k" not in names  # listed, but absent (MANIFEST_NOTES.md)


@needs_conformance
@pytest.mark.slow  # 68 s on a fresh clone (numba compiling the one-thread decode), CI's slow pass
def test_table_rows_and_text_on_two_tiny_streams():
    streams = [CONFORMANCE / "part1/codestreams/p0_11.j2k", CONFORMANCE / "part1/codestreams/p1_07.j2k"]
    rows = bench_cpu.table(streams, repeat=1)
    assert [r.stream for r in rows] == ["p0_11.j2k", "p1_07.j2k"]
    for r in rows:
        assert r.ours_ms is not None and r.ours_ms > 0 and r.first_ms is not None and r.first_ms > 0
        if r.opj_ms is not None:  # OpenJPEG installed
            assert r.ratio == r.ours_ms / r.opj_ms and r.first_ratio == r.first_ms / r.opj_first_ms
            assert r.opj_first_ms > 0
    text = bench_cpu.format_table(rows).splitlines()
    assert text[0].startswith("# ours:")
    assert text[1].split() == ["stream", "first", "ms", "opj", "1st", "ratio", "ours", "ms", "opj", "ms", "ratio",
                                "printed"]
    assert [line.split()[0] for line in text[2:4]] == ["p0_11.j2k", "p1_07.j2k"]
    if any(r.ratio is not None for r in rows):
        assert text[4].startswith("first call: median ratio ") and text[5].startswith("warm: median ratio ")


def test_main_says_what_it_cannot_read(tmp_path, capsys):
    with pytest.raises(SystemExit, match="no such file or folder"):
        bench_cpu.main([str(tmp_path / "absent")])
    with pytest.raises(SystemExit, match="no codestream or JP2 file among"):
        bench_cpu.main([str(tmp_path)])
    assert capsys.readouterr().out == ""     # no table started


@needs_conformance
@pytest.mark.slow  # numba's one-thread decode compiling on a fresh clone, as above
def test_main_times_the_streams_of_a_folder(tmp_path, capsys):
    for name in ("p0_11.j2k", "p1_07.j2k"):
        (tmp_path / name).write_bytes((CONFORMANCE / "part1/codestreams" / name).read_bytes())
    (tmp_path / "readme.txt").write_text("not a stream")
    bench_cpu.main(["--repeat", "1", str(tmp_path)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("# ours:") and [line.split()[0] for line in lines[2:4]] == ["p0_11.j2k", "p1_07.j2k"]
    assert all(float(line.split()[1]) > 0 for line in lines[2:4])

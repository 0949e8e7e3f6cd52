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


def test_median_rows_takes_each_columns_median_over_the_runs():
    runs = [[bench_cpu.Row("a.j2k", 2.0, 1.0, 1, 9.0, 3.0), bench_cpu.Row("b.j2k", None, 4.0, None, None, 5.0)],
            [bench_cpu.Row("a.j2k", 4.0, 2.0, 2, 3.0, 1.0), bench_cpu.Row("b.j2k", 6.0, 8.0, None, 7.0, 5.0)],
            [bench_cpu.Row("a.j2k", 3.0, 6.0, 1, 6.0, 2.0), bench_cpu.Row("b.j2k", None, 2.0, None, None, None)]]
    a, b = bench_cpu.median_rows(runs)
    assert a == bench_cpu.Row("a.j2k", 3.0, 2.0, 1, 6.0, 2.0)
    assert a.first_ratio == 3.0 and a.ratio == 1.5
    # refused in two runs of three: the one that decoded it; opj_decompress never printed: None
    assert b == bench_cpu.Row("b.j2k", 6.0, 4.0, None, 7.0, 5.0)
    with pytest.raises(ValueError, match="differ"):
        bench_cpu.median_rows([[bench_cpu.Row("a.j2k", 1.0, 1.0)], [bench_cpu.Row("c.j2k", 1.0, 1.0)]])


@needs_conformance
@pytest.mark.slow  # two fresh processes, each loading numba's one-thread decode
def test_runs_time_the_table_in_fresh_processes_and_take_medians(tmp_path, capsys):
    for name in ("p0_11.j2k", "p1_07.j2k"):
        (tmp_path / name).write_bytes((CONFORMANCE / "part1/codestreams" / name).read_bytes())
    bench_cpu.main(["--repeat", "1", "--runs", "2", str(tmp_path)])
    lines = capsys.readouterr().out.splitlines()
    runs = [line.split(":")[0] for line in lines if line.startswith("run ") and "first call" in line]
    if bench_cpu.peers._libopenjp2() is not None:   # each run's summary, as it ends (ratios need OpenJPEG)
        assert runs == ["run 1 of 2", "run 2 of 2"]
    head = lines.index(next(line for line in lines if line.startswith("# ours:")))
    assert lines[head].endswith("each column the median of 2 runs in fresh processes")
    assert [line.split()[0] for line in lines[head + 2 : head + 4]] == ["p0_11.j2k", "p1_07.j2k"]
    assert all(float(line.split()[1]) > 0 for line in lines[head + 2 : head + 4])

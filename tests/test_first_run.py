"""The first run compiles on purpose and says so (media/first_run.py)."""

from __future__ import annotations

from cinegpu.jobs.first_run import PARTS, compile_kernels, stamp_path


def test_compiles_once_saying_what_it_does(tmp_path):
    lines: list[str] = []
    seconds = compile_kernels(tmp_path, progress=False, say=lines.append)
    assert seconds is not None and seconds > 0
    assert stamp_path(tmp_path).is_file()
    assert "first run only" in lines[0] and lines[1].startswith("compiled in")
    lines.clear()
    assert compile_kernels(tmp_path, progress=False, say=lines.append) is None
    assert lines == []
    assert PARTS == ("encoder", "decoder")

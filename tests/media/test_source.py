"""Naming a sequence's frame files (cinegpu.media.source)."""

from __future__ import annotations

import pytest

from cinegpu.media.errors import MediaError
from cinegpu.media.source import folder_frames, frame_files


def test_frame_files_take_files_and_folders_in_natural_order(tmp_path):
    folder = tmp_path / "frames"
    folder.mkdir()
    for name in ("f10.j2c", "f2.J2C", "f1.jp2", "notes.txt", "f3.jph"):
        (folder / name).write_bytes(b"x")
    (folder / "sub.j2c").mkdir()        # a folder with a codestream's suffix is not a frame
    one = tmp_path / "one.j2k"
    one.write_bytes(b"x")
    got = frame_files([one, folder])
    assert [p.name for p in got] == ["one.j2k", "f1.jp2", "f2.J2C", "f3.jph", "f10.j2c"]
    assert folder_frames(folder) == got[1:]
    with pytest.raises(MediaError, match="no such file or folder"):
        frame_files([tmp_path / "absent"])

"""Writing decoded images (cinegpu.media.images.write): each file renamed into place once whole."""

from __future__ import annotations

import numpy as np
import pytest
import tifffile

from cinegpu.media.images import write as write_module
from cinegpu.media.images.write import write_image
from helpers.pgx import read_pgx


def _planes(n: int) -> list[np.ndarray]:
    return [np.full((3, 5), 100 * (k + 1), np.uint16) for k in range(n)]


@pytest.mark.parametrize("name", ["a.tif", "a.png", "a.pgx"])
def test_an_image_is_written_whole_and_nothing_else_is_left(tmp_path, name):
    written = write_image(tmp_path / name, _planes(3), [12] * 3, [False] * 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in written)
    if name.endswith(".pgx"):
        assert [p.name for p in written] == ["a_0.pgx", "a_1.pgx", "a_2.pgx"]
        assert np.array_equal(read_pgx(written[2]), _planes(3)[2])
    elif name.endswith(".tif"):
        assert tifffile.imread(written[0]).shape == (3, 5, 3)


@pytest.mark.parametrize("name, writer", [("a.tif", "write_tiff"), ("a.png", "write_png"), ("a.pgx", "write_pgx")])
def test_a_write_cut_short_leaves_the_old_image_and_no_partial_file(tmp_path, monkeypatch, name, writer):
    """A write that fails half-way (a full disk, a signal) has written part of a file: the
    image's name keeps what it held before, and the partial file goes."""
    first = write_image(tmp_path / name, _planes(2), [12] * 2, [False] * 2)
    before = {p.name: p.read_bytes() for p in first}

    def half_then_fail(path, *args, **kwargs):
        with open(path, "wb") as f:
            f.write(b"half an image")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(write_module, writer, half_then_fail)
    with pytest.raises(OSError, match="No space left"):
        write_image(tmp_path / name, _planes(2), [12] * 2, [False] * 2)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before

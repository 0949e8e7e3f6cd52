"""media/png.py against an independent PNG reader (libpng through imagecodecs)."""

from __future__ import annotations

import imagecodecs
import numpy as np
import pytest

from cinegpu.media.images.png import read_png16, write_png, write_png16


@pytest.mark.parametrize("shape,dtype", [((5, 7), np.uint8), ((5, 7, 2), np.uint8),
                                         ((300, 9, 3), np.uint16), ((4, 1, 4), np.uint16),
                                         ((2049, 3, 1), np.uint16)])
def test_libpng_reads_what_we_write(tmp_path, shape, dtype):
    rng = np.random.default_rng(sum(shape))
    a = rng.integers(0, np.iinfo(dtype).max + 1, shape, dtype=dtype)
    write_png(tmp_path / "a.png", a)
    back = imagecodecs.png_decode((tmp_path / "a.png").read_bytes())
    assert back.dtype == dtype
    assert np.array_equal(back.reshape(a.shape), a)


def test_significant_bits_are_recorded(tmp_path):
    a = np.full((3, 4, 3), 4095 << 4, np.uint16)
    write_png(tmp_path / "a.png", a, significant_bits=12)
    data = (tmp_path / "a.png").read_bytes()
    at = data.index(b"sBIT")
    assert data[at - 4:at] == (3).to_bytes(4, "big") and data[at + 4:at + 7] == bytes([12] * 3)
    assert data.index(b"sBIT") < data.index(b"IDAT")
    with pytest.raises(ValueError, match="significant bits 17"):
        write_png(tmp_path / "b.png", a, significant_bits=17)


def test_screenshot_writer_round_trips_and_refuses_other_shapes(tmp_path):
    a = np.arange(2 * 3 * 4, dtype=np.uint16).reshape(2, 3, 4) * 1000
    write_png16(tmp_path / "rgb.png", a)
    assert np.array_equal(read_png16(tmp_path / "rgb.png"), a[:, :, :3])
    write_png16(tmp_path / "rgba.png", a, alpha=True)
    assert np.array_equal(read_png16(tmp_path / "rgba.png"), a)
    with pytest.raises(ValueError, match="uint16"):
        write_png16(tmp_path / "x.png", a.astype(np.uint8))
    with pytest.raises(ValueError, match="1-4"):
        write_png(tmp_path / "x.png", np.zeros((2, 2, 5), np.uint8))

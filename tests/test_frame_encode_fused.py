"""Which entry point FrameEncoders' IMF R'G'B' path takes on the cuda back end, checked
without a GPU (a recording stand-in for the encoder, the upload left out): uint8 and uint16
images go to ``Encoder.encode_planes`` as the three component views of the image with
``code_values=(top, bits)`` (the code values computed in the forward stage's colour kernel);
float32 images, which the colour kernels do not read, take ``gpu.code_values``' int32 planes
first, as before.  That both give the same codestream is the gpu-marked
tests/test_encode_code_values_gpu.py."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from cinegpu.jobs.frame_encode import FUSED_CODE_VALUES, FrameEncoders


class _Recorder:
    """What FrameEncoders calls of an Encoder on this path, recorded."""

    def __init__(self):
        self.calls = []

    def encode_planes(self, planes, precisions, signed=None, *, code_values=None):
        self.calls.append((list(planes), precisions, signed, code_values))
        return b"coded"


def _imf_cuda(bits: int) -> tuple[FrameEncoders, _Recorder]:
    """An IMF FrameEncoders made on the CPU, then pointed at a recording cuda encoder."""
    fe = FrameEncoders(profile="imf-2k", fps=24, bitrate=200, colorspace="rec709",
                       backend="cpu", bits=bits)
    if not fe.ours:
        pytest.skip("cinegpu.encode is not importable")
    rec = _Recorder()
    fe.backend = "cuda"
    fe._local.encoder = rec
    fe._on_gpu = lambda enc, a, convert: convert(a)     # no upload: the image as it is
    return fe, rec


@pytest.mark.parametrize("dtype,top", [(np.uint16, None), (np.uint8, None), (np.uint16, 4095.0)])
def test_integer_images_take_the_fused_entry_point(dtype, top):
    fe, rec = _imf_cuda(12)
    img = np.arange(4 * 5 * 3).reshape(4, 5, 3).astype(dtype)
    assert fe.encode(img, top) == b"coded"
    (planes, precisions, signed, code_values), = rec.calls
    want_top = float(np.iinfo(dtype).max) if top is None else top
    assert precisions == 12 and signed is None and code_values == (want_top, 12)
    assert len(planes) == 3
    for c, p in enumerate(planes):                      # views of the image, read in place
        assert p.shape == (4, 5) and np.shares_memory(p, img)
        np.testing.assert_array_equal(p, img[:, :, c])


def test_float_images_keep_the_two_kernel_path(monkeypatch):
    fe, rec = _imf_cuda(10)
    made = []

    def code_values(image, top, bits):
        made.append((image, top, bits))
        return ("x", "y", "z")
    monkeypatch.setitem(sys.modules, "cinegpu.encode.gpu",
                        types.SimpleNamespace(code_values=code_values))
    img = np.zeros((4, 5, 3), np.float32)
    assert np.dtype(np.float32) not in FUSED_CODE_VALUES
    assert fe.encode(img) == b"coded"
    assert len(made) == 1 and made[0][0] is img and made[0][1:] == (1.0, 10)
    assert rec.calls == [(["x", "y", "z"], 10, None, None)]


def test_fused_types_are_ones_the_colour_kernels_read():
    """FUSED_CODE_VALUES are input types of the batched colour kernels (gpu._COLOUR_INPUTS
    lists u8, u16, i16 and i32; gpu.py needs CuPy, so the list is read from its source)."""
    from pathlib import Path
    src = (Path(__file__).resolve().parents[1] / "cinegpu" / "encode" / "gpu.py").read_text()
    table = src.split("_COLOUR_INPUTS = {", 1)[1].split("}", 1)[0]
    for d in FUSED_CODE_VALUES:
        assert f"np.dtype(np.{d.name})" in table, d

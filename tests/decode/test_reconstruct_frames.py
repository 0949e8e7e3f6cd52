"""Frames of one geometry reconstructed together (``Decoder.reconstruct_frames``: each
reconstruction kernel launched once for a batch's frames) against each frame decoded alone."""

from __future__ import annotations

import numpy as np
import pytest

from cinegpu.decode import decode
from cinegpu.decode.decoder import Decoder
from cinegpu.decode.pipeline import FramePipeline
from cinegpu.encode import encode


def _frames(reversible: bool, n: int = 4, size=(47, 61), seed: int = 7) -> list[bytes]:
    """``n`` RGB codestreams of one geometry and different pictures (the MCT on)."""
    rng = np.random.default_rng(seed + reversible)
    h, w = size
    ramp = np.add.outer(np.arange(h), np.arange(w))
    out = []
    for k in range(n):
        image = np.stack([(ramp * (k + c + 1) + rng.integers(0, 40, (h, w))) % 1024 for c in range(3)], axis=-1)
        out.append(encode(image.astype(np.uint16), bits=10, reversible=reversible, levels=3, backend="cpu"))
    return out


def _equal_to_the_cpu(got, data: bytes, reversible: bool) -> None:
    want = decode(data)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        a = a.get() if hasattr(a, "get") else a
        assert a.shape == b.shape and a.dtype == b.dtype
        assert np.abs(a.astype(np.int64) - b).max() <= (0 if reversible else 1)


def test_frames_of_the_cpu_back_end_are_reconstructed_one_by_one():
    """No device buffer to share: each frame as :meth:`Decoder.reconstruct` gives it."""
    frames = _frames(True, 2)
    dec = Decoder("cpu")
    preps = [dec.prepare(f) for f in frames]
    coeffs = [dec.entropy_decode(p)[0] for p in preps]
    assert dec._frames_together(preps, coeffs, [None, None]) is None
    for got, prep, c in zip(dec.reconstruct_frames(preps, coeffs, [None, None]), preps, coeffs):
        for a, b in zip(got, dec.reconstruct(prep, c)):
            assert np.array_equal(a, b)


def _batch(dec: Decoder, frames: list[bytes]):
    preps = [dec.prepare(f) for f in frames]
    launched = dec.tier1_gpu_launch_batch([(p, dec.tier2(p)[0]) for p in preps])
    return preps, [c for c, _ in launched]


@pytest.mark.gpu
@pytest.mark.parametrize("reversible", [True, False], ids=["53", "97"])
@pytest.mark.parametrize("to_host", [True, False], ids=["host", "device"])
def test_a_batch_is_reconstructed_together_as_each_frame_alone(reversible, to_host):
    frames = _frames(reversible)
    dec = Decoder("cuda")
    preps, coeffs = _batch(dec, frames)
    assert dec._frames_together(preps, coeffs, [None] * len(frames)) is not None
    outs = dec.reconstruct_frames(preps, coeffs, [None] * len(frames), to_host=to_host)
    for got, data in zip(outs, frames):
        assert all(isinstance(a, np.ndarray) == to_host for a in got)
        _equal_to_the_cpu(got, data, reversible)


@pytest.mark.gpu
def test_frames_of_other_geometries_or_components_are_not_taken_together():
    """A batch mixing sizes, or asking for some components, goes frame by frame, right."""
    dec = Decoder("cuda")
    mixed = _frames(True, 2) + _frames(True, 1, size=(40, 33))
    preps, coeffs = _batch(dec, mixed)
    assert dec._frames_together(preps, coeffs, [None] * 3) is None
    for got, data in zip(dec.reconstruct_frames(preps, coeffs, [None] * 3, to_host=True), mixed):
        _equal_to_the_cpu(got, data, True)
    same = _frames(True, 2)
    preps, coeffs = _batch(dec, same)
    assert dec._frames_together(preps, coeffs, [[0, 1, 2], [0, 1, 2]]) is None


@pytest.mark.gpu
@pytest.mark.parametrize("to_host", [True, False], ids=["host", "device"])
def test_pipeline_batches_decode_as_the_cpu(to_host):
    frames = _frames(False, 5) * 2
    with FramePipeline(backend="cuda", workers=2, batch=4, to_host=to_host) as pipe:
        results = list(pipe.map(frames))
    for (_, frame), data in zip(results, frames):
        assert not isinstance(frame, Exception), frame
        assert frame.timings["gpu"] > 0
        _equal_to_the_cpu(frame.components, data, False)

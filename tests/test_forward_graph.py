"""The forward stage replayed as a CUDA graph (encode/forward_graph.py, EncoderSettings(graphs=True))
against the same encoder kernel by kernel (graphs=False) and the CPU back end: every frame of
a sequence of different images gives the same codestream (so the graph reads each frame's
own samples and its outputs are rewritten), for Part-1 and HTJ2K, reversible and
irreversible, from host images, device images and device planes (encode_planes), through a
change of geometry and back (gpu-marked)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import require_cuda

cupy = require_cuda()  # skips the module without CuPy or a device

from cinegpu.encode import Encoder, EncoderSettings  # noqa: E402
from cinegpu.bench.encode import synthetic_frame  # noqa: E402

pytestmark = pytest.mark.gpu

CASES = [
    ("j2k 9/7", dict(base_step=2.0)),
    ("j2k 5/3", dict(reversible=True)),
    ("j2k dci-2k", dict(profile="dci-2k")),
    ("htj2k 9/7", dict(codec="htj2k", base_step=4.0, codeblock=(64, 64))),
    ("htj2k 5/3", dict(codec="htj2k", reversible=True, codeblock=(64, 64))),
    ("htj2k budget", dict(codec="htj2k", bitrate=40_000_000, fps=24, codeblock=(64, 64))),
]


def _frames(opts, n=5):
    h, w = (1080, 2048) if opts.get("profile") == "dci-2k" else (200, 328)
    return [synthetic_frame(w, h, seed=k) for k in range(n)]


@pytest.mark.parametrize("name,opts", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("source", ["host", "device"])
def test_graph_replays_give_each_frames_codestream(name, opts, source):
    frames = _frames(opts)
    with Encoder(EncoderSettings.of(backend="cpu", **opts)) as ref:
        want = [ref.encode(f, bits=12) for f in frames]
    assert len(set(want)) == len(want)           # the frames differ, so would the streams
    with Encoder(EncoderSettings.of(backend="cuda", graphs=True, **opts)) as enc, \
            Encoder(EncoderSettings.of(backend="cuda", graphs=False, **opts)) as eager:
        for k, f in enumerate(frames):
            src = cupy.asarray(f) if source == "device" else f
            assert enc.encode(src, bits=12) == want[k], f"frame {k} with the graph"
            assert eager.encode(src, bits=12) == want[k], f"frame {k} kernel by kernel"
        assert enc._graphs.captured == 1         # frames 2.. were replays of one graph
        assert eager._graphs is None


def test_graph_follows_geometry_changes_and_planes():
    """Two sizes interleaved (two graphs), then encode_planes of int32 device planes."""
    opts = dict(codec="htj2k", base_step=3.0, codeblock=(64, 64))
    small = [synthetic_frame(160, 96, seed=k) for k in range(3)]
    large = [synthetic_frame(328, 200, seed=10 + k) for k in range(3)]
    seq = [f for pair in zip(small, large) for f in pair]
    with Encoder(EncoderSettings.of(backend="cpu", **opts)) as ref:
        want = [ref.encode(f, bits=12) for f in seq]
    with Encoder(EncoderSettings.of(backend="cuda", **opts)) as enc:
        got = [enc.encode(f, bits=12) for f in seq]
        assert enc._graphs.captured == 2
        planes = [[cupy.asarray(f[:, :, c].astype(np.int32)) for c in range(3)] for f in small]
        again = [enc.encode_planes(p, 12) for p in planes]
    assert got == want
    assert again == want[0::2]

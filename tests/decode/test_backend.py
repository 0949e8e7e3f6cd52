"""Back-end selection (``cinegpu.decode.backend``) and the transform back-end protocol.

One ``select_backend`` serves the decoder, the pipeline, the encoder and mastering; a CUDA
back end asked for on a machine without CuPy raises ``BackendUnavailable`` (not a
``CodestreamError``: the input is not at fault) naming what is missing and how to install it.
Every transform back end satisfies ``TransformBackend``; the numpy reference's fused entry
points are the compositions of its unfused functions.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from cinegpu.decode import BackendUnavailable, CodestreamError
from cinegpu.decode import transform as ref
from cinegpu.decode.backend import BACKEND_NAMES, ENCODER_NAMES, TIER1_PLACES, Backend, gpu_tier1_of, select_backend
from cinegpu.decode.transform.backend import TransformBackend
from cinegpu.decode.transform.dwt import _band_sizes, level_rects


@pytest.fixture
def no_cupy(monkeypatch):
    """CuPy made unimportable (``import cupy`` raises ImportError)."""
    monkeypatch.setitem(sys.modules, "cupy", None)


def test_names_and_their_backends():
    assert select_backend("numpy") == Backend("numpy") and select_backend("numpy").transform is ref
    cpu = select_backend("cpu")
    assert (cpu.name, cpu.gpu_tier1, cpu.cuda, cpu.xp) == ("cpu", False, False, np)
    from cinegpu.decode.transform import cpu_backend

    assert cpu.transform is cpu_backend
    with pytest.raises(ValueError, match="unknown back end 'gpu'"):
        select_backend("gpu")
    with pytest.raises(ValueError, match="unknown back end 'numpy'"):   # not an encoder back end
        select_backend("numpy", names=ENCODER_NAMES)
    assert set(ENCODER_NAMES) < set(BACKEND_NAMES)


def test_tier1_places_are_the_decoders_gpu_tier1():
    """``--tier1``'s names: auto leaves the back end's default, gpu and cpu say it."""
    assert [gpu_tier1_of(p) for p in TIER1_PLACES] == [None, True, False]
    with pytest.raises(ValueError, match="'fpga': one of auto, gpu, cpu"):
        gpu_tier1_of("fpga")


def test_tier1_on_the_gpu_of_a_cpu_pipeline_is_refused_before_any_worker_starts():
    from cinegpu.decode.pipeline import FramePipeline

    with pytest.raises(ValueError, match="tier-1 on the GPU needs the cuda back end, not cpu"):
        FramePipeline(backend="cpu", workers=1, gpu_tier1=True)
    from cinegpu.decode.decoder import Decoder

    with pytest.raises(ValueError, match="tier-1 on the GPU needs the cuda back end, not cpu"):
        Decoder("cpu", gpu_tier1=True)      # the rule is the decoder's: nothing drops it silently


def test_cuda_without_cupy_is_backend_unavailable(no_cupy):
    with pytest.raises(BackendUnavailable) as info:
        select_backend("cuda")
    err = info.value
    assert not isinstance(err, CodestreamError) and isinstance(err, RuntimeError)
    assert "CuPy is not installed" in str(err) and "pip install 'cinegpu[cuda13]'" in str(err)
    assert err.backend == "cuda" and err.missing.startswith("CuPy is not installed")


def test_auto_without_cupy_takes_the_cpu(no_cupy):
    assert select_backend("auto") == Backend("cpu")
    assert select_backend("auto", names=ENCODER_NAMES).name == "cpu"


def test_every_caller_selects_the_same_way(no_cupy):
    """Decoder, pipeline, encoder and mastering: one rule, one error."""
    from cinegpu.decode.decoder import Decoder
    from cinegpu.decode.pipeline import FramePipeline
    from cinegpu.encode.encoder import Encoder, EncoderSettings
    from cinegpu.jobs.frame_encode import pick_backend

    assert Decoder("auto").backend == "cpu" and Decoder("numpy").transform is ref
    assert pick_backend("auto") == "cpu"
    with Encoder(EncoderSettings.of(backend="auto")) as enc:
        assert enc.backend == "cpu"
    for make in (lambda: Decoder("cuda"), lambda: FramePipeline(backend="cuda", workers=1),
                 lambda: Encoder(EncoderSettings.of(backend="cuda")), lambda: pick_backend("cuda")):
        with pytest.raises(BackendUnavailable, match="cinegpu\\[cuda13\\]"):
            make()
    with pytest.raises(ValueError, match="unknown back end 'numpy'"):
        Encoder(EncoderSettings.of(backend="numpy"))


def test_transform_modules_satisfy_the_protocol():
    from cinegpu.decode.transform import cpu_backend

    assert isinstance(ref, TransformBackend)
    assert isinstance(cpu_backend, TransformBackend)
    assert isinstance(select_backend("numpy").transform, TransformBackend)


def _bands(rng, rect, nlevels):
    """int32 tier-1 output shaped for ``rect`` (coarsest level first) and step sizes."""
    levels = []
    for u0, v0, u1, v1 in level_rects(rect, nlevels)[::-1]:
        (nl, nh), (ml, mh) = _band_sizes(u0, u1), _band_sizes(v0, v1)
        levels.append((*(rng.integers(-3000, 3000, s).astype(np.int32) for s in ((ml, nh), (mh, nl), (mh, nh))),
                       (u0, v0, u1, v1)))
    u0, v0, u1, v1 = levels[0][3] if levels else rect
    shape = (_band_sizes(v0, v1)[0], _band_sizes(u0, u1)[0]) if levels else (v1 - v0, u1 - u0)
    return rng.integers(-3000, 3000, shape).astype(np.int32), levels, rng.uniform(0.05, 0.6, 1 + 3 * nlevels).tolist()


def _composed(ll, levels, deltas, reversible):
    lv = [(*(ref.dequantize(b, d, reversible) for b, d in zip(bands[:3], deltas[1 + 3 * j : 4 + 3 * j])), bands[3])
          for j, bands in enumerate(levels)]
    return (ref.idwt_53 if reversible else ref.idwt_97)(ref.dequantize(ll, deltas[0], reversible), lv)


@pytest.mark.parametrize("reversible", [True, False], ids=["53", "97"])
@pytest.mark.parametrize("nlevels", [0, 1, 3])
@pytest.mark.parametrize("rect", [(0, 0, 17, 9), (1, 3, 40, 23)])
def test_numpy_fused_entry_points_are_the_composition(rect, nlevels, reversible):
    rng = np.random.default_rng(nlevels + 10 * reversible)
    comps = [_bands(rng, rect, nlevels) for _ in range(3)]
    for ll, levels, deltas in comps:
        np.testing.assert_array_equal(ref.dequantize_idwt(ll, levels, deltas, reversible),
                                      _composed(ll, levels, deltas, reversible))
    precisions, signed = [12, 10, 8], [False, True, False]
    planes = (ref.inverse_rct if reversible else ref.inverse_ict)(*(_composed(*c, reversible) for c in comps))
    want = [ref.to_samples(p, pr, sg) for p, pr, sg in zip(planes, precisions, signed)]
    got = ref.reconstruct_mct(comps, reversible, precisions, signed)
    assert len(got) == 3
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    with pytest.raises(ValueError, match="step sizes"):
        ref.dequantize_idwt(comps[0][0], comps[0][1], comps[0][2] + [1.0], reversible)

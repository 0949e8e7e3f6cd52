"""The GPU stage alone (bench/gpu_stage.py): it decodes what decode() decodes, and is timed."""

from __future__ import annotations

import pytest

from cinegpu.bench.gpu_stage import gpu_stage_rate
from cinegpu.decode.decoder import Decoder
from cinegpu.decode.pipeline import tiny_codestream
from cinegpu.media.samples import BARS_2K


@pytest.mark.gpu
def test_the_gpu_stage_alone_decodes_what_decode_does(gpu):
    # two frames of different plans and sizes, cycled through batches of three
    small = tiny_codestream()
    rate = gpu_stage_rate([BARS_2K.read_bytes(), small], batch=3, seconds=0.2)
    assert rate.identical
    assert rate.batch == 3 and rate.frames >= 12 and rate.frames % 3 == 0
    assert rate.fps > 0


def test_the_gpu_stage_needs_gpu_tier1():
    with pytest.raises(ValueError, match="tier-1 on the GPU"):
        gpu_stage_rate([BARS_2K.read_bytes()], batch=2, decoder=Decoder("cpu"))
    with pytest.raises(ValueError, match="batch"):
        gpu_stage_rate([BARS_2K.read_bytes()], batch=0)

"""``cinegpu bench``'s figures of how busy each side of the pipeline was (bench/decode.py)."""

from __future__ import annotations

import pytest

from cinegpu.bench.decode import busy_lines


def test_cpu_back_end_counts_everything_in_the_workers():
    # 10 frames in 2 s with 2 workers: 3 s of their work is 75 % of the 4 s they had
    stages = {"parse": 0.01, "tier2": 0.5, "tier1": 2.0, "reconstruct": 0.5}
    lines, busy = busy_lines(stages, 2.0, 2, 1, cuda=False, gpu_tier1=False)
    assert busy == {"workers": pytest.approx(0.75)}
    assert lines == ["  busy over the run: the workers 75 % (tier-2, tier-1, reconstruction)"]


def test_gpu_tier1_leaves_tier2_to_the_workers():
    stages = {"parse": 0.1, "tier2": 6.0, "tier1": 0.6, "gpu": 0.25, "reconstruct": 0.25, "launch": 0.1}
    lines, busy = busy_lines(stages, 1.0, 15, 1, cuda=True, gpu_tier1=True)
    assert busy == pytest.approx({"workers": 0.4, "gpu_tier1": 0.6, "gpu_reconstruct": 0.25})
    assert lines[0] == ("  busy over the run: the workers 40 % (tier-2), tier-1 on the GPU 60 %, "
                        "the GPU's reconstruction 25 %")
    assert "streams" in lines[1]


def test_the_split_and_several_gpus():
    # tier-1 in the workers (the design card's split), the reconstruction spread over 2 GPUs
    stages = {"tier2": 1.0, "tier1": 8.0, "gpu": 0.8, "reconstruct": 1.0, "upload": 0.1}
    _, busy = busy_lines(stages, 1.0, 10, 2, cuda=True, gpu_tier1=False)
    assert busy == pytest.approx({"workers": 0.9, "gpu_reconstruct": 0.4})

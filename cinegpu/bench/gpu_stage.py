"""The GPU stage's own rate: what ``cinegpu bench --batch N`` could reach were the workers and
the pipeline's process free.

The frames' tier-2 is done once, beforehand, in this process, and its output laid in
page-locked memory (as the pipeline's slots are); then tier-1 and the reconstruction of batches
of ``batch`` frames are launched as :meth:`SegmentsMode.finish_batch
<cinegpu.decode.pipeline_modes.SegmentsMode.finish_batch>` launches them: tier-1 on one stream,
the reconstruction on a second, of higher priority, waiting for its batch's tier-1 only, so
that one batch's reconstruction runs beside the next batch's tier-1. Nothing else runs: the
rate is the GPU's (and the launches' host time, which the pipeline also pays). A pipeline
whose rate is near it is bound by the GPU's kernels; one far below it, by the workers or the
pipeline's process (the busy figures say which).

The first batch's frames are checked against the same frames decoded one by one
(:meth:`~cinegpu.decode.decoder.Decoder.decode`): the stage timed is the one that decodes them.
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from dataclasses import dataclass

import numpy as np

from cinegpu.decode.decoder import Decoder
from cinegpu.decode.pipeline_modes import stream_pair
from cinegpu.decode.tile import TileSegments

__all__ = ["AHEAD", "GpuStageRate", "gpu_stage_rate"]

#: Batches queued on the GPU beyond the one it is at (the host's launches run that far ahead).
AHEAD = 2


@dataclass(frozen=True)
class GpuStageRate:
    """What :func:`gpu_stage_rate` measured."""

    fps: float          #: frames a second
    frames: int         #: frames timed
    batch: int          #: frames a launch
    identical: bool     #: the first batch's frames equal the same frames decoded one by one


def _pinned(xp, a: np.ndarray) -> np.ndarray:
    """``a`` copied into page-locked host memory (a numpy array over CuPy's pinned pool)."""
    a = np.ascontiguousarray(a)
    out = np.frombuffer(xp.cuda.alloc_pinned_memory(max(a.nbytes, 1)), a.dtype, a.size).reshape(a.shape)
    out[...] = a
    return out


def _page_locked(xp, seg: TileSegments | None) -> TileSegments | None:
    """A tile's tier-2 output as the pipeline's workers leave it: page-locked, with its work order
    and the scratch entries a slot needs (without them each launch would work them out on the host)."""
    from cinegpu.decode.tier1 import gpu as t1gpu  # noqa: PLC0415  (optional: CuPy, which tier1.gpu imports)

    if seg is None:
        return None
    order = seg.order if seg.order is not None else t1gpu.work_order(seg.table, seg.seg_passes, np)
    entries = seg.entries if seg.entries is not None else t1gpu.scratch_entries(seg.table)
    return dataclasses.replace(seg, coded=_pinned(xp, seg.coded), table=_pinned(xp, seg.table),
                               seg_lengths=_pinned(xp, seg.seg_lengths), seg_passes=_pinned(xp, seg.seg_passes),
                               order=_pinned(xp, np.asarray(order, np.int32)), entries=entries)


def gpu_stage_rate(frames: list[bytes], batch: int, seconds: float = 2.0, decoder: Decoder | None = None) -> GpuStageRate:
    """Time tier-1 and reconstruction of ``frames`` (cycled) in batches of ``batch`` on the
    current GPU for about ``seconds`` (after two batches untimed); ``decoder``: a ``cuda``
    :class:`Decoder` with GPU tier-1 (made here by default)."""
    if batch < 1:
        raise ValueError("batch must be >= 1")
    dec = decoder or Decoder("cuda", gpu_tier1=True)
    if not dec.selected.cuda or not dec.gpu_tier1:
        raise ValueError("the GPU stage needs the cuda back end with tier-1 on the GPU")
    xp = dec.xp
    distinct = frames[:batch]
    preps = [dec.prepare(f) for f in distinct]
    segments = [[_page_locked(xp, s) for s in dec.tier2(p)[0]] for p in preps]
    items = [(preps[k % len(preps)], segments[k % len(preps)]) for k in range(batch)]
    tier1_stream, recon_stream = stream_pair(xp)
    kept = deque()      # (coefficients, their reconstruction's end) of the latest batches

    def launch():
        with tier1_stream:
            launched = dec.tier1_gpu_launch_batch(items)
            tier1_done = xp.cuda.Event(disable_timing=True)
            tier1_done.record()
        recon_stream.wait_event(tier1_done)
        with recon_stream:
            planes = dec.reconstruct_frames([p for p, _ in items], [c for c, _ in launched], [None] * batch,
                                            to_host=False)
            read = xp.cuda.Event(disable_timing=True)
            read.record()
        kept.append((launched, read))
        if len(kept) > AHEAD:
            # a batch's coefficients go back to the tier-1 stream's memory only once the other
            # stream has read them: that stream's later launches wait for it; and this thread
            # queues at most AHEAD batches beyond the GPU (as the pipeline's slots bound it)
            _, read_before = kept.popleft()
            tier1_stream.wait_event(read_before)
            read_before.synchronize()
        return planes

    first = launch()
    launch()
    xp.cuda.Device().synchronize()
    identical = all(all(np.array_equal(xp.asnumpy(a), b) for a, b in zip(planes, dec.decode(data).components))
                    for planes, data in zip(first, distinct))
    del first
    launches, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        launch()
        launches += 1
    xp.cuda.Device().synchronize()
    wall = time.perf_counter() - t0
    return GpuStageRate(launches * batch / wall, launches * batch, batch, identical)

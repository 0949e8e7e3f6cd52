"""The decode pipeline's messages: what travels between :class:`~cinegpu.decode.pipeline.FramePipeline`
and its worker processes, and where the arrays lie in a shared-memory slot.

Every message is a frozen dataclass defined at module level, so it pickles by name through a
``multiprocessing`` pipe. Only small things travel that way (the codestream's bytes, the
:class:`DecodeRequest`, tile reports, where arrays lie); the arrays themselves are written
into the frame's shared-memory slot and described by :class:`ArraySpec`.

- worker to pipeline, while it starts: the worker pool's own :class:`~cinegpu.decode.workers.Busy`
  (a kernel compiled), then :class:`~cinegpu.decode.workers.Ready` (kernels loaded) or
  :class:`~cinegpu.decode.workers.Broken`;
- pipeline to worker, per frame: a :class:`WorkerTask` (built from the :class:`Job` this
  process keeps), or :class:`StopWorker`;
- worker to pipeline, per frame, a :class:`Reply`: :class:`Failed`, :class:`GrowSlot` (the
  slot is too small: grow it and send the frame again), or what was written into the slot:
  :class:`CoefficientsWritten`, :class:`SamplesWritten`, :class:`SegmentsWritten`.

What a worker writes for a frame, and how this process finishes it, is the frame's mode
(:mod:`cinegpu.decode.pipeline_modes`), which travels in the task.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .decoder import Prepared
from .request import DecodeRequest
from .tile import TileReport

#: Arrays in a slot start on 8-byte boundaries.
ALIGN = 8


def aligned(nbytes: int) -> int:
    """``nbytes`` rounded up to the next multiple of :data:`ALIGN` (bytes)."""
    return -(-nbytes // ALIGN) * ALIGN


@dataclass(frozen=True)
class ArraySpec:
    """Where one array lies in a slot: byte offset, shape and dtype (numpy's ``dtype.str``)."""

    offset: int
    shape: tuple[int, ...]
    dtype: str

    def view(self, buf) -> np.ndarray:
        """The array, as a view of ``buf`` (the slot's memory): no copy."""
        return np.ndarray(self.shape, np.dtype(self.dtype), buffer=buf, offset=self.offset)


def packed_nbytes(arrays) -> int:
    """Bytes that :func:`store_arrays` needs for ``arrays`` (None entries take none)."""
    return sum(aligned(a.nbytes) for a in arrays if a is not None)


def store_arrays(buf, arrays, offset: int = 0) -> tuple[tuple[ArraySpec | None, ...], int]:
    """Copy ``arrays`` back to back into ``buf`` from byte ``offset``: where each lies (None
    for a None entry) and the offset after the last."""
    specs = []
    for a in arrays:
        if a is None:
            specs.append(None)
            continue
        spec = ArraySpec(offset, a.shape, a.dtype.str)
        spec.view(buf)[...] = a
        specs.append(spec)
        offset += aligned(a.nbytes)
    return tuple(specs), offset


def load_arrays(buf, specs, copy: bool = True) -> list:
    """The arrays ``specs`` describe in ``buf``: copies (the slot is reused next) or views."""
    views = [None if s is None else s.view(buf) for s in specs]
    return [v.copy() if copy and v is not None else v for v in views]


@dataclass(frozen=True)
class TileArrays:
    """One tile's tier-2 output in a slot: tier-1's plain arrays, as
    :class:`~cinegpu.decode.tile.TileSegments` holds them, with the GPU launch's hints."""

    table: ArraySpec
    seg_lengths: ArraySpec
    seg_passes: ArraySpec
    coded: ArraySpec
    order: ArraySpec        #: the kernel's work order of the rows (tier1.gpu.work_order)
    entries: int            #: scratch entries one kernel slot needs (tier1.gpu.scratch_entries)


# --- pipeline to worker ----------------------------------------------------
@dataclass(frozen=True)
class StopWorker:
    """Tells a worker to detach its slots and exit."""


@dataclass(frozen=True)
class WorkerTask:
    """One frame for a worker: decode the codestream, the first ``data_len`` bytes of the
    shared-memory slot named ``slot_name``, as ``request`` says, and write what ``mode`` says
    into the slot from :func:`input_bytes` (``data_len``) on.  The codestream travels through
    the slot, not the pipe: a 4K frame (1.3 MB) through a pipe held the pipeline's process
    0.34 ms.  ``size``: the coefficients this process planned for the frame (int32 samples);
    the worker checks that its own plan agrees."""

    seq: int
    data_len: int
    slot_name: str
    size: int
    request: DecodeRequest
    mode: object            #: a :class:`~cinegpu.decode.pipeline_modes.FrameMode`


@dataclass(frozen=True)
class Job:
    """A frame as this process keeps it from submission until its reply: its headers and
    plans (``prep``, made for ``request``), its slot's index and its mode, chosen once, at
    submission. It never leaves this process (``prep`` holds views of the codestream); its
    :meth:`task` does."""

    seq: int
    key: object
    prep: Prepared
    data: bytes
    slot: int
    mode: object            #: a :class:`~cinegpu.decode.pipeline_modes.FrameMode`
    request: DecodeRequest
    submitted: float = field(default_factory=time.perf_counter)

    def task(self, slot_name: str) -> WorkerTask:
        """What is sent to the worker that decodes this frame into slot ``slot_name``."""
        return WorkerTask(self.seq, len(self.data), slot_name, self.prep.size, self.request, self.mode)


def input_bytes(data_len: int) -> int:
    """Bytes at the start of a slot kept for a codestream of ``data_len`` bytes (a multiple of
    64, so that what follows is aligned)."""
    return -(-data_len // 64) * 64


# --- worker to pipeline ----------------------------------------------------
@dataclass(frozen=True)
class Reply:
    """A worker's answer for frame ``seq``."""

    seq: int


@dataclass(frozen=True)
class Failed(Reply):
    """The frame failed: a :class:`~cinegpu.decode.errors.CodestreamError` (bad input) or a
    :class:`~cinegpu.decode.errors.PipelineError` (a bug in the worker, or, made here, a worker
    that died with the frame)."""

    error: Exception


@dataclass(frozen=True)
class GrowSlot(Reply):
    """The slot is too small for what the frame's mode writes: ``nbytes`` are needed. Nothing
    was written; the frame is sent again once its slot has grown."""

    nbytes: int


@dataclass(frozen=True)
class Written(Reply):
    """The worker wrote the frame into its slot; ``reports``: each tile's (tier-2, tier-1)."""

    reports: list[TileReport]


@dataclass(frozen=True)
class CoefficientsWritten(Written):
    """The slot holds the frame's coefficients: ``size`` int32 values from byte 0, laid out
    per tile and subband as the plans say."""


@dataclass(frozen=True)
class SamplesWritten(Written):
    """The slot holds the decoded samples: one plane per component (None: not wanted), and
    the seconds the worker spent reconstructing them."""

    planes: tuple[ArraySpec | None, ...]
    reconstruct_s: float


@dataclass(frozen=True)
class SegmentsWritten(Written):
    """The slot holds tier-1's input, per planned tile."""

    tiles: tuple[TileArrays, ...]

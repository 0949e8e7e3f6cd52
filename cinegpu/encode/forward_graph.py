"""The encoder's forward stage on the GPU replayed as a CUDA graph, per geometry.

A 4K frame's forward stage (:func:`.gpu.forward_tile_cuda`: colour transform, five DWT levels
of three components, quantisation of 48 bands) is about a hundred kernel launches and as many
allocations, issued one by one from Python, which encoders in threads of one process cannot
overlap (the interpreter lock).  :class:`ForwardGraphs` records that sequence once per geometry
with CUDA stream capture and replays it: the host then copies the frame into the graph's own
input buffers (an interleaved image in one device-to-device copy, separate planes one copy
kernel each) and launches the graph.  Replayed, the encoder's "forward" time (with the
guard-bit check that waits for it) was measured well under the kernel-by-kernel time on the GPU
machine, for one encoder thread coding 4K frames from GPU memory (docs/performance.md).

* The first frame of a geometry runs eagerly (it compiles and loads the kernels and fills the
  graph's private memory pool); the second is captured, and every later one is replayed.
* Every buffer the graph touches comes from a memory pool of its own (:class:`cupy.cuda.MemoryPool`
  made current for the calling thread only while capturing), kept as long as the graph: no
  other allocation can be given memory the graph writes.
* The outputs (each tile's int32 coefficients in plan layout) are the same arrays every
  frame; a replay overwrites them, in stream order, so an encoder reads them before its next
  frame is queued (:class:`.encoder.Encoder` encodes one frame at a time on its own stream).
* A capture that fails (an operation the driver will not record) leaves that geometry eager;
  the codestream is the same either way (GPU tests compare them frame by frame).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cupy

__all__ = ["ForwardGraphs", "interleaved"]

#: geometries kept per encoder (a sequence has one; the rest are dropped oldest first)
KEEP = 4
#: cudaStreamCaptureModeRelaxed: the capture does not forbid other threads' CUDA calls
RELAXED = 2


@dataclass
class _Entry:
    """One geometry's state: its input buffers, private pool, outputs and graph."""
    pool: cupy.cuda.MemoryPool
    inputs: list
    keep: object                 # what the key refers to (the plans), so ids stay unique
    whole: object = None         # the interleaved input buffer whose views are the inputs
    graph: object = None
    outputs: list = field(default_factory=list)
    eager: bool = False          # capture failed: always run eagerly
    runs: int = 0


class ForwardGraphs:
    """Per :class:`.encoder.Encoder` (cuda back end): ``run(key, keep, comps, build, stream)``
    returns ``build(inputs)`` for components ``comps`` (CuPy 2-D planes, any strides), as a
    replay of the graph recorded for ``key`` when there is one.  ``build`` must queue only
    stream-ordered GPU work on the current stream (no copy back to the host) and return the
    list of output arrays; ``keep``: the object ``key`` names by identity (kept alive)."""

    def __init__(self, keep: int = KEEP):
        self._keep = keep
        self._items: dict = {}

    def run(self, key, keep, comps, build, stream) -> list:
        image = interleaved(comps)
        key = (key, image is not None)
        entry = self._items.get(key)
        if entry is None:
            if len(self._items) >= self._keep:
                self._items.pop(next(iter(self._items)))
            pool = cupy.cuda.MemoryPool()
            with cupy.cuda.using_allocator(pool.malloc):
                if image is not None:        # one buffer like the image, its views the inputs
                    whole = cupy.empty(image.shape, image.dtype)
                    inputs = [whole[:, :, i] for i in range(len(comps))]
                else:
                    whole, inputs = None, [cupy.empty(c.shape, c.dtype) for c in comps]
            entry = self._items[key] = _Entry(pool, inputs, keep, whole)
        if entry.whole is not None:
            entry.whole.data.copy_from_device_async(image.data, image.nbytes, stream)
        else:
            for buf, c in zip(entry.inputs, comps):
                buf[...] = c
        entry.runs += 1
        if entry.graph is not None:
            entry.graph.launch(stream)
            return entry.outputs
        with cupy.cuda.using_allocator(entry.pool.malloc):
            if entry.eager or entry.runs == 1:        # the first frame warms kernels and pool
                return build(entry.inputs)
            graph, outputs = _capture(stream, lambda: build(entry.inputs))
        if graph is None:
            entry.eager = True
            with cupy.cuda.using_allocator(entry.pool.malloc):
                return build(entry.inputs)
        entry.graph, entry.outputs = graph, outputs
        graph.launch(stream)
        return outputs

    @property
    def captured(self) -> int:
        """How many geometries are replayed as graphs (tests, benchmarks)."""
        return sum(e.graph is not None for e in self._items.values())


def interleaved(comps):
    """The C-contiguous (H, W, C) CuPy array whose components ``comps`` are, in order (as
    :func:`.encoder._split` makes them), or None: such an image is copied into the graph's
    input in one piece rather than component by component."""
    base = getattr(comps[0], "base", None) if comps else None
    if not isinstance(base, cupy.ndarray) or base.ndim != 3 or base.shape[2] != len(comps) \
            or not base.flags.c_contiguous:
        return None
    for i, c in enumerate(comps):
        if c.base is not base or c.shape != base.shape[:2] or c.strides != base.strides[:2] \
                or c.data.ptr != base.data.ptr + i * base.itemsize:
            return None
    return base


def _capture(stream, work):
    """(graph, work's result) recorded on ``stream``, or (None, None) when the driver refuses
    (the stream is left out of capture mode either way)."""
    try:
        try:
            stream.begin_capture(RELAXED)
        except TypeError:
            stream.begin_capture()
    except cupy.cuda.runtime.CUDARuntimeError:
        return None, None
    try:
        out = work()
    except Exception as exc:
        try:
            stream.end_capture()
        except cupy.cuda.runtime.CUDARuntimeError:
            pass                     # the capture was invalidated by what failed
        if isinstance(exc, cupy.cuda.runtime.CUDARuntimeError):
            return None, None        # an operation that cannot be captured: run eagerly
        raise
    try:
        graph = stream.end_capture()
    except cupy.cuda.runtime.CUDARuntimeError:
        return None, None
    return graph, out

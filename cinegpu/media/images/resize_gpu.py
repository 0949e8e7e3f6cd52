"""The Lanczos resize (:mod:`.resize`) on the GPU: the two passes of ``cuda/resize.cu``, twins
of the numba passes :func:`.resize.resample_fast` runs, bit for bit (the same taps from
:func:`.resize.lanczos_taps`, the same float32 products summed in the same order, no fused
multiply-add), which the gpu-marked tests hold them to.

Mastering on the GPU fits a frame that must be resized here, on the encoder's stream, after
sending it up as read (:meth:`cinegpu.jobs.frame_encode.FrameEncoders.encode_fitted`): the
host neither resizes nor sends up float32 samples. Importing this module needs CuPy.
"""

from __future__ import annotations

from pathlib import Path

import cupy

from cinegpu.decode import nvrtc

from .resize import lanczos_taps

__all__ = ["resample_on_device"]

SOURCE = Path(__file__).with_name("cuda") / "resize.cu"


def resample_on_device(image, n_out: int, axis: int, start: int = 0, count: int | None = None):
    """:func:`.resize.resample_fast` of an (H, W, C) CuPy ``image`` (any real dtype, taken as
    float32) along ``axis`` 0 or 1: output pixels ``start`` .. ``start + count - 1`` of
    ``n_out``, a float32 CuPy array on the current device and stream."""
    n_in = image.shape[axis]
    count = n_out - start if count is None else count
    if n_in == n_out:
        return image[(slice(None),) * axis + (slice(start, start + count),)]
    if image.ndim != 3 or axis not in (0, 1):
        raise ValueError(f"resample_on_device takes (H, W, C) images along axis 0 or 1, not "
                         f"{image.shape} along {axis}")
    idx, w = lanczos_taps(n_in, n_out, start, count)
    taps = idx.shape[1]
    idx_d, w_d = cupy.asarray(idx), cupy.asarray(w)
    src = cupy.ascontiguousarray(image, dtype=cupy.float32)
    h, wid, channels = src.shape
    if axis == 0:
        out = cupy.empty((count, wid, channels), cupy.float32)
        nvrtc.launch_1d(nvrtc.kernel(SOURCE, "resize_rows"), out.size,
                        (src, idx_d, w_d, out, cupy.int64(count), cupy.int64(taps), cupy.int64(wid * channels)))
    else:
        out = cupy.empty((h, count, channels), cupy.float32)
        nvrtc.launch_1d(nvrtc.kernel(SOURCE, "resize_columns"), out.size,
                        (src, idx_d, w_d, out, cupy.int64(h), cupy.int64(count), cupy.int64(taps),
                         cupy.int64(channels), cupy.int64(wid * channels)))
    return out

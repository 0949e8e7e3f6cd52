"""Stand-ins for the GPU side of mastering's upload seam
(:class:`cinegpu.jobs.frame_uploads.FrameUploads`), so that its policy runs without a GPU: a
fake encoders object's ``upload_run(run)`` stands in for the mapped uploads, its
``send_run(run, direct)`` for the ring; :class:`HostFitting` gives a fake the fitting step of
:meth:`cinegpu.jobs.frame_encode.FrameEncoders.encode_fitted`, on the host."""

from __future__ import annotations

import contextlib

import numpy as np

from cinegpu.jobs.frame_uploads import FrameUploads, UploadSettings
from cinegpu.media.images.frames import fit


class Uploader:
    """An uploader as :class:`cinegpu.encode.mapped_upload.MappedUploads` and
    :class:`cinegpu.encode.ring_upload.RingUploads` are used by the seam: ``upload(run, *how)``
    is ``send(run, *how)``; ``closed`` counts the calls of :meth:`close`."""

    def __init__(self, send):
        self.send, self.closed = send, 0

    def upload(self, run, *how):
        return self.send(run, *how)

    def close(self) -> None:
        self.closed += 1


def seam_of(encoders, settings: UploadSettings = UploadSettings()) -> FrameUploads:
    """The upload seam of a fake ``encoders`` (which needs ``uploads_runs`` and
    ``input_buffer``, and ``upload_run``/``send_run`` where frames go up), its GPU paths its
    ``upload_run`` and ``send_run``, its stream a no-op."""
    if not hasattr(encoders, "on_stream"):
        encoders.on_stream = contextlib.nullcontext
    return FrameUploads(encoders, settings, mapped=lambda: Uploader(encoders.upload_run),
                        ring=lambda: Uploader(encoders.send_run))


class HostFitting:
    """A fake encoders object's ``encode_fitted``: the frame fitted on the host
    (:func:`cinegpu.media.images.frames.fit`), then handed to its own ``encode``."""

    def encode_fitted(self, image, width: int, height: int, placement=None):
        return self.encode(fit(np.asarray(image), width, height, placement))

"""``decode()``: the one-call interface of DESIGN.md."""

from __future__ import annotations

import numpy as np

from .decoder import Decoder


def decode(data, *, reduce: int = 0, layers: int | None = None, backend: str = "cpu",
           strict: bool = True, components=None) -> list[np.ndarray]:
    """Decode a JPEG 2000 codestream (.j2c/.j2k) or JP2 file (.jp2).

    Returns one 2-D integer array per component at its own size (divided by
    2**reduce), after the inverse colour transform, DC level shift and
    clipping to the component's precision. ``layers`` decodes only the first
    N quality layers. Bad input raises :class:`CodestreamError`; with
    ``strict=False`` damaged parts are concealed instead. ``components``
    selects and orders the components returned (the inverse MCT is then
    skipped unless components 0-2 are all selected).
    """
    frame = Decoder(backend).decode(data, reduce=reduce, layers=layers, strict=strict, components=components)
    return frame.components

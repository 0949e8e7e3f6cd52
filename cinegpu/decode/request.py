"""What to decode out of a frame: the options :func:`~cinegpu.decode.decode`,
:class:`~cinegpu.decode.decoder.Decoder` and the pipeline's
:class:`~cinegpu.decode.pipeline.FramePipeline` share, as one frozen value.

How to decode (the back end, GPU tier-1, the memory and pixel limits) belongs to the
:class:`~cinegpu.decode.decoder.Decoder`; a :class:`DecodeRequest` says which part of each
frame is wanted and how faults are met, so one request serves every frame of a reel and
travels unchanged to the pipeline's worker processes.
"""

from __future__ import annotations

from dataclasses import dataclass

from .area import Area
from .strictness import Strictness

__all__ = ["DecodeRequest"]


@dataclass(frozen=True, kw_only=True)
class DecodeRequest:
    """The per-frame decode options, built by keyword: ``DecodeRequest(reduce=1, strict=False)``.

    ``reduce``: resolution levels discarded (T.800 B.5; the image is ``2**reduce`` times smaller).
    ``layers``: decode only the first N quality layers (B.12; None: all).
    ``strict``: a bool or a :class:`~cinegpu.decode.strictness.Strictness`; strict raises on the
    first fault, lenient (the default) decodes what the peers decode and conceals damage, reporting both.
    ``components``: the component indices returned, in that order (None: all); kept as a tuple.
    ``area``: a rectangle (x0, y0, x1, y1) of the reference grid to decode instead of the whole
    image (:mod:`cinegpu.decode.area`; None: all of it); kept as an :class:`~.area.Area`.
    The values are checked where a frame is decoded (``reduce >= 0``, ``layers >= 1``,
    ``components`` within the frame's, ``area`` within its image), as the loose keyword options
    always were; an empty area raises ValueError at once.
    """

    reduce: int = 0
    layers: int | None = None
    strict: bool | Strictness = False
    components: tuple[int, ...] | None = None
    area: Area | None = None

    def __post_init__(self) -> None:
        if self.components is not None and not isinstance(self.components, tuple):
            object.__setattr__(self, "components", tuple(self.components))
        if self.area is not None and not isinstance(self.area, Area):
            object.__setattr__(self, "area", Area.of(self.area))

    @classmethod
    def given(cls, request: DecodeRequest | None, *, defaults: DecodeRequest | None = None,
              **options) -> DecodeRequest:
        """The request a call was given: ``request`` itself, or one made of the call's loose
        keyword ``options`` (``reduce=``, ``layers=``, ...), which must then be left at their
        ``defaults`` (the call's own, ``DecodeRequest()`` unless said); both raise TypeError."""
        if request is None:
            return cls(**options)
        defaults = _DEFAULT if defaults is None and cls is DecodeRequest else defaults or cls()
        # the usual call passes its options as the very default values: nothing to build
        for k, v in options.items():
            if getattr(defaults, k) is not v:
                break
        else:
            return request
        if cls(**options) != defaults:
            raise TypeError("give either request= or its options (reduce=, layers=, strict=, components=, area=), "
                            "not both")
        return request


#: the default request (frozen), which :meth:`DecodeRequest.given` compares loose options with
_DEFAULT = DecodeRequest()

"""Where an input frame lands in the DCI image area: crop, scale and placement, in pixels.

``cinegpu master --crop L,T,R,B --scale fit|fill|none`` (issue 55, item 3).  A frame is first
cut by its :class:`Crop` (pixels off the left, top, right and bottom), then scaled into the
image area the container chooses (DCI DCSS 1.4.5 section 3.2.1.2: flat 1998x1080 / 3996x2160,
scope 2048x858 / 4096x1716, full 2048x1080 / 4096x2160):

- ``fit``: the whole picture inside the area, its aspect ratio kept (the scale the smaller of
  area / picture on the two axes), centred, the rest black (letterbox above and below,
  pillarbox left and right);
- ``fill``: the area covered (the larger of the two scales), the excess cut off centred;
- ``none``: the picture at its own size, centred: padded with black where smaller than the
  area, cut where larger; pixels 1:1.

The scaled size is the cropped size times the scale, rounded half to even as Python's
``round`` does (exact: the scale is a :class:`~fractions.Fraction`), so the limiting axis of
``fit`` and ``fill`` is exactly the area's.  Centring puts an odd pixel of padding or of cut on
the right (bottom).  :func:`place` does the arithmetic once per job (every frame has the first
frame's size); :func:`cinegpu.media.images.frames.fit` applies it to the pixels, resizing with
a Lanczos (a = 3) filter.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import NamedTuple

__all__ = ["SCALES", "Axis", "Crop", "Placement", "place"]

#: the ``--scale`` modes, the first the default
SCALES = ("fit", "fill", "none")


@dataclass(frozen=True)
class Crop:
    """Pixels cut from each side of an input frame before it is scaled: ``left``, ``top``,
    ``right``, ``bottom`` (each >= 0; ValueError otherwise)."""

    left: int = 0
    top: int = 0
    right: int = 0
    bottom: int = 0

    def __post_init__(self):
        sides = (self.left, self.top, self.right, self.bottom)
        if any(isinstance(v, bool) or int(v) != v for v in sides):
            raise ValueError(f"--crop wants whole numbers of pixels, got {self}")
        if min(sides) < 0:
            raise ValueError(f"--crop {self}: pixels cut from a side cannot be negative")
        for name, v in zip(("left", "top", "right", "bottom"), sides):
            object.__setattr__(self, name, int(v))

    @classmethod
    def parse(cls, text: str) -> Crop:
        """``L,T,R,B``: four whole numbers of pixels, none negative (ValueError, one line)."""
        parts = [p.strip() for p in str(text).split(",")]
        try:
            if len(parts) != 4:
                raise ValueError
            values = [int(p) for p in parts]
        except ValueError:
            raise ValueError(f"--crop wants L,T,R,B (four whole numbers of pixels cut from the "
                             f"left, top, right and bottom), got {text!r}") from None
        return cls(*values)

    @classmethod
    def of(cls, value) -> Crop:
        """A Crop from a Crop, a text ``L,T,R,B`` or four numbers (left, top, right, bottom);
        None: no crop."""
        if value is None:
            return cls()
        if isinstance(value, Crop):
            return value
        if isinstance(value, str):
            return cls.parse(value)
        values = tuple(value)
        if len(values) != 4:
            raise ValueError(f"--crop wants four numbers (left, top, right, bottom), got {value!r}")
        return cls(*values)

    def __str__(self) -> str:
        return f"{self.left},{self.top},{self.right},{self.bottom}"

    def __bool__(self) -> bool:
        return any((self.left, self.top, self.right, self.bottom))

    def size(self, width: int, height: int) -> tuple[int, int]:
        """(width, height) in pixels of a ``width`` x ``height`` frame once cropped;
        ValueError where the crop leaves nothing."""
        w, h = width - self.left - self.right, height - self.top - self.bottom
        if w < 1 or h < 1:
            raise ValueError(f"--crop {self} leaves nothing of a {width}x{height} input frame "
                             f"({w}x{h} pixels)")
        return w, h


class Axis(NamedTuple):
    """One axis of a placement, in pixels: the picture's ``scaled`` length (after the crop
    and the scale) in an area ``area`` long.  Centred: the black before and after it
    (:attr:`pad_before`, :attr:`pad_after`) where it is shorter, the part cut before and after
    (:attr:`cut_before`, :attr:`cut_after`) where it is longer; :attr:`shown` of its pixels
    are in the area."""

    scaled: int
    area: int

    @property
    def pad_before(self) -> int:
        return max(0, (self.area - self.scaled) // 2)

    @property
    def pad_after(self) -> int:
        return max(0, self.area - self.scaled) - self.pad_before

    @property
    def cut_before(self) -> int:
        return max(0, (self.scaled - self.area) // 2)

    @property
    def cut_after(self) -> int:
        return max(0, self.scaled - self.area) - self.cut_before

    @property
    def shown(self) -> int:
        return min(self.scaled, self.area)


@dataclass(frozen=True)
class Placement:
    """How a ``width`` x ``height`` input frame becomes an ``area_width`` x ``area_height``
    picture (pixels): cut by ``crop``, resized to ``scaled_width`` x ``scaled_height`` by the
    ``scale`` mode (:data:`SCALES`) and centred (:attr:`x`, :attr:`y`).  ``area``: the image
    area's name (flat, scope, full; for IMF ``input``: the cropped input's size).  Made by
    :func:`place`."""

    width: int
    height: int
    crop: Crop
    scale: str
    area_width: int
    area_height: int
    scaled_width: int
    scaled_height: int
    area: str = ""

    @property
    def cropped(self) -> tuple[int, int]:
        """(width, height) after the crop."""
        return self.crop.size(self.width, self.height)

    @property
    def x(self) -> Axis:
        return Axis(self.scaled_width, self.area_width)

    @property
    def y(self) -> Axis:
        return Axis(self.scaled_height, self.area_height)

    @property
    def resized(self) -> bool:
        """Whether the pixels are resampled (the scaled size is not the cropped size)."""
        return (self.scaled_width, self.scaled_height) != self.cropped

    @property
    def identity(self) -> bool:
        """Whether the frame is the picture as it is: no crop, no resize, no padding."""
        return not self.crop and (self.width, self.height) == (self.scaled_width, self.scaled_height) \
            == (self.area_width, self.area_height)

    def describe(self) -> str:
        """One line for the plan and the summary, such as ``1920x1080 cropped 0,140,0,140 to
        1920x800, scaled (fit) to 1998x832 in the flat area 1998x1080: letterbox 124 px top
        and bottom``."""
        text = f"{self.width}x{self.height}"
        if self.crop:
            text += " cropped {} to {}x{}".format(self.crop, *self.cropped)
        size = f"{self.scaled_width}x{self.scaled_height}"
        text += f", scaled ({self.scale}) to {size}" if self.resized else f", kept at {size} ({self.scale})"
        where = f"the {self.area} area" if self.area and self.area != "input" else "the area"
        text += f" in {where} {self.area_width}x{self.area_height}"
        parts = [_side("pillarbox", self.x.pad_before, self.x.pad_after, "left", "right", "each side"),
                 _side("letterbox", self.y.pad_before, self.y.pad_after, "top", "bottom", "top and bottom"),
                 _side("cut", self.x.cut_before, self.x.cut_after, "left", "right", "left and right"),
                 _side("cut", self.y.cut_before, self.y.cut_after, "top", "bottom", "top and bottom")]
        parts = [p for p in parts if p]
        return text + ": " + (", ".join(parts) if parts else "fills the area")


def _side(what: str, before: int, after: int, first: str, second: str, both: str) -> str:
    """``letterbox 124 px top and bottom``, ``pillarbox 39 px left, 40 px right`` or ''."""
    if not before and not after:
        return ""
    if before == after:
        return f"{what} {before} px {both}"
    return f"{what} {before} px {first}, {after} px {second}"


def place(width: int, height: int, area_width: int, area_height: int, crop: Crop = Crop(),
          scale: str = "fit", area: str = "") -> Placement:
    """The :class:`Placement` of a ``width`` x ``height`` input frame cut by ``crop`` and
    scaled by ``scale`` (:data:`SCALES`) into an ``area_width`` x ``area_height`` area (all in
    pixels); ValueError for a crop that leaves nothing or an unknown mode."""
    if scale not in SCALES:
        raise ValueError(f"--scale must be one of {', '.join(SCALES)}, got {scale!r}")
    if area_width < 1 or area_height < 1:
        raise ValueError(f"an image area of {area_width}x{area_height} pixels holds nothing")
    cw, ch = crop.size(width, height)
    if scale == "none":
        sw, sh = cw, ch
    else:
        kx, ky = Fraction(area_width, cw), Fraction(area_height, ch)
        k = min(kx, ky) if scale == "fit" else max(kx, ky)
        sw, sh = max(1, round(cw * k)), max(1, round(ch * k))
    return Placement(width, height, crop, scale, area_width, area_height, sw, sh, area)

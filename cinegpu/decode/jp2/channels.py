"""JP2 channels (T.800 I.5.3.6): what the Channel Definition box (cdef) makes of the components.

After the palette (pclr/cmap, :func:`~cinegpu.decode.jp2.boxes.apply_palette`) the image has
*channels*; cdef says what each one is: a colour channel (Typ 0) associated with colour 1..n
of the colour space (R, G, B; or Y, Cb, Cr; or grey), an opacity (Typ 1) or premultiplied
opacity (Typ 2) channel, or unspecified (Typ 65535). :func:`channel_order` puts the colour
channels first, in association order, then the others in their channel order, so an RGBA
picture comes out R, G, B, A whatever order the codestream stores them in. OpenJPEG's
``opj_jp2_apply_cdef`` swaps each colour channel into position association - 1, which gives the
same colour channels; its order of the rest may differ when there are two or more of them.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidSegment, LenientWarning
from .boxes import JP2Header, apply_palette

#: cdef Typ values (Table I.17)
COLOUR, OPACITY, PREMULTIPLIED, UNSPECIFIED = 0, 1, 2, 65535
#: Asoc values that associate a channel with no one colour: the whole image, or none
WHOLE_IMAGE, NO_ASSOCIATION = 0, 65535


@dataclass(frozen=True)
class ChannelOrder:
    """Where each output channel comes from, and which one is the alpha."""

    order: tuple[int, ...]  #: output k is channel order[k]
    #: the output index of the first opacity (or premultiplied opacity) channel, else None
    alpha: int | None = None
    premultiplied: bool = False

    def apply(self, items: list) -> list:
        return [items[i] for i in self.order]


def channel_order(header: JP2Header | None, channels: int, strict: bool = False) -> ChannelOrder:
    """The output order of ``channels`` channels under the header's cdef (identity without one).

    A cdef that names a channel outside 0..channels-1, associates one with a colour beyond
    ``channels`` or leaves one out raises :class:`InvalidSegment` (OpenJPEG refuses such files
    too: "Invalid component index", "Incomplete channel definitions"). One that describes a
    channel twice (I.5.3.6 wants each once) raises it when ``strict``; else it is decoded as
    OpenJPEG decodes it (its swaps replayed, :func:`openjpeg_order`), with a
    :class:`~cinegpu.decode.errors.LenientWarning`.
    """
    if header is None or not header.cdef:
        return ChannelOrder(tuple(range(channels)))
    seen: set[int] = set()
    twice = None
    for cn, typ, asoc in header.cdef:
        if cn >= channels:
            raise InvalidSegment(f"cdef: channel {cn} of {channels}")
        if cn in seen and twice is None:
            twice = InvalidSegment(f"cdef: channel {cn} described twice")
        if asoc not in (WHOLE_IMAGE, NO_ASSOCIATION) and asoc > channels:
            raise InvalidSegment(f"cdef: channel {cn} associated with colour {asoc} of {channels}")
        seen.add(cn)
    if len(seen) != channels:
        missing = min(set(range(channels)) - seen)
        raise InvalidSegment(f"cdef: channel {missing} not described (cdef lists {len(seen)} of {channels})")
    if twice is not None:
        if strict:
            raise twice
        warnings.warn(LenientWarning(f"{twice}; decoded in the order OpenJPEG gives"), stacklevel=3)
        return openjpeg_order(header.cdef, channels)
    colour = sorted((asoc, cn) for cn, typ, asoc in header.cdef
                    if typ == COLOUR and asoc not in (WHOLE_IMAGE, NO_ASSOCIATION))
    first = [cn for _, cn in colour]
    rest = [cn for cn in range(channels) if cn not in set(first)]
    order = tuple(first + rest)
    types = {cn: typ for cn, typ, _ in header.cdef}
    alpha = next((k for k, cn in enumerate(order) if types[cn] in (OPACITY, PREMULTIPLIED)), None)
    return ChannelOrder(order, alpha, alpha is not None and types[order[alpha]] == PREMULTIPLIED)


def openjpeg_order(cdef, channels: int) -> ChannelOrder:
    """The order OpenJPEG's ``opj_jp2_apply_cdef`` leaves ``channels`` channels in, replayed:
    each colour entry in turn swaps its channel into position Asoc - 1 (the alpha marks go
    with the channels), and the later entries follow the swap. Used for a cdef that names a
    channel twice, where the order of :func:`channel_order` is not defined."""
    source = list(range(channels))  # what each position holds
    marks = [0] * channels  # the Typ OpenJPEG sets on the channel at each position
    cns = [cn for cn, _, _ in cdef]
    for i, (_, typ, asoc) in enumerate(cdef):
        cn = cns[i]
        if asoc in (WHOLE_IMAGE, NO_ASSOCIATION):
            marks[cn] = typ
            continue
        acn = asoc - 1
        if cn != acn and typ == COLOUR:
            source[cn], source[acn] = source[acn], source[cn]
            marks[cn], marks[acn] = marks[acn], marks[cn]
            cns[i + 1:] = [acn if c == cn else cn if c == acn else c for c in cns[i + 1:]]
        marks[cn] = typ
    alpha = next((k for k, m in enumerate(marks) if m in (OPACITY, PREMULTIPLIED)), None)
    return ChannelOrder(tuple(source), alpha, alpha is not None and marks[alpha] == PREMULTIPLIED)


def apply_channels(components: list[np.ndarray], header: JP2Header | None,
                   strict: bool = False) -> tuple[list[np.ndarray], ChannelOrder]:
    """Palette (pclr/cmap), then cdef's order: the channels of a JP2 file, and that order."""
    if header is None:
        return components, ChannelOrder(tuple(range(len(components))))
    out = apply_palette(components, header)
    order = channel_order(header, len(out), strict)
    return order.apply(out), order


def channel_depths(header: JP2Header | None, precisions: list[tuple[int, bool]]) -> list[tuple[int, bool]]:
    """(bits, signed) of each channel before cdef's reordering: the components' own
    ``precisions`` (Ssiz), or for a palette the columns' (pclr Bi) as cmap maps them."""
    if header is None or header.palette is None or not header.cmap:
        return list(precisions)
    out = []
    for cmp_, mtyp, pcol in header.cmap:
        if mtyp == 1 and pcol < len(header.palette_bits):
            out.append(header.palette_bits[pcol])
        else:
            out.append(precisions[cmp_] if cmp_ < len(precisions) else (16, False))
    return out

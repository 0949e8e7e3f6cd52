"""Which input channel feeds which channel of a DCP's sound track: ``--channel-map``.

A map names channels of the track's layout (:data:`.inputs.LAYOUTS`: 5.1's L R C LFE Ls Rs,
or 7.1DS's L R C LFE Lss Rss Lrs Rrs) and, for each, an input channel counted from 1 across
the files given, in order (a 6-channel file then a stereo one: 1-6, then 7-8):

    L=1,R=2,C=3,LFE=4,Ls=5,Rs=6      one channel each (a layout channel left out is silent)
    C=1                              a mono file into the centre only

or names a preset of a common stem order (:data:`PRESETS`), the input read in that order:

    smpte    L R C LFE Ls Rs (5.1) / L R C LFE Lss Rss Lrs Rrs (7.1): SMPTE ST 428-12, ITU order
    film     L C R Ls Rs LFE (5.1) / L C R Lss Rss Lrs Rrs LFE (7.1): the "film" (Dolby/SDDS) order
    dts      L R Ls Rs C LFE (5.1): DTS's order

A map naming a 7.1 channel (Lss, Rss, Lrs, Rrs) makes a 7.1 track, else 5.1.
"""

from __future__ import annotations

from dataclasses import replace

from cinegpu.media.errors import MediaError, UnsupportedMedia
from cinegpu.media.sound.inputs import FIVE_ONE, SEVEN_ONE, SoundInput, at_track_rate, checked_headers

__all__ = ["PRESETS", "map_channels", "open_mapped_sound", "parse_channel_map"]

#: Preset stem orders: name -> {input channel count: the layout channel of each, in order}.
PRESETS = {
    "smpte": {6: FIVE_ONE.inputs, 8: SEVEN_ONE.inputs},
    "film": {6: ("L", "C", "R", "Ls", "Rs", "LFE"), 8: ("L", "C", "R", "Lss", "Rss", "Lrs", "Rrs", "LFE")},
    "dts": {6: ("L", "R", "Ls", "Rs", "C", "LFE")},
}


def parse_channel_map(text: str) -> dict[str, int] | str:
    """``--channel-map``'s text: a preset's name (:data:`PRESETS`), or {layout channel: input
    channel, from 1}; ValueError naming what is wrong (an unknown channel, a number that is
    not one, a channel given twice)."""
    text = text.strip()
    if text in PRESETS:
        return text
    known = dict.fromkeys(FIVE_ONE.inputs + SEVEN_ONE.inputs)
    out: dict[str, int] = {}
    for item in text.split(","):
        label, sep, number = (part.strip() for part in item.partition("="))
        if not sep:
            raise ValueError(f"--channel-map wants CHANNEL=INPUT,... (such as L=1,R=2,C=3,LFE=4,"
                             f"Ls=5,Rs=6) or a preset ({', '.join(PRESETS)}), got {item!r}")
        label = next((k for k in known if k.lower() == label.lower()), label)
        if label not in known:
            raise ValueError(f"--channel-map: {label!r} is no channel of 5.1 or 7.1 "
                             f"({' '.join(known)})")
        if label in out:
            raise ValueError(f"--channel-map: {label} is given twice")
        if not number.isdigit() or int(number) < 1:
            raise ValueError(f"--channel-map {label}: want an input channel from 1, got {number!r}")
        out[label] = int(number)
    return out


def map_channels(sound: SoundInput, mapping: dict[str, int] | str) -> SoundInput:
    """``sound`` with its layout channels fed as ``mapping`` says (:func:`parse_channel_map`):
    MediaError for an input channel past the files' channels, or a preset for another count
    of channels."""
    flat = [(f, c) for f, info in enumerate(sound.files) for c in range(info.channels)]
    if isinstance(mapping, str):
        order = PRESETS[mapping].get(len(flat))
        if order is None:
            raise MediaError(sound.files[0].path, f"--channel-map {mapping}: a preset of "
                             f"{' or '.join(map(str, PRESETS[mapping]))} channels, the input has {len(flat)}")
        mapping = {label: k for k, label in enumerate(order, 1)}
    layout = SEVEN_ONE if any(label in mapping for label in SEVEN_ONE.inputs[4:]) else FIVE_ONE
    for label, k in mapping.items():
        if label not in layout.inputs:
            raise MediaError(None, f"--channel-map: {label} is not a channel of {layout.name}")
        if k > len(flat):
            raise MediaError(sound.files[-1].path, f"--channel-map {label}={k}: the input has "
                                                   f"{len(flat)} channels")
    order = tuple(flat[mapping[label] - 1] if label in mapping else None for label in layout.inputs)
    silent = [label for label in layout.inputs if label not in mapping]
    said = ", ".join(f"{label} from input {mapping[label]}" for label in layout.inputs if label in mapping)
    note = f"channels mapped into {layout.name}: {said}" + (f"; {', '.join(silent)} silent" if silent else "")
    return replace(sound, layout=layout, order=order, mapping=note)


def open_mapped_sound(paths, language: str | None, mapping: dict[str, int] | str) -> SoundInput:
    """The sound of ``paths`` (WAV files of any channel counts, of one rate and length) with
    its channels placed as ``mapping`` says (:func:`map_channels`), at a rate a track carries;
    MediaError naming the file and the problem."""
    infos = checked_headers(paths, language)
    first = infos[0]
    for info in infos[1:]:
        if info.rate != first.rate:
            raise UnsupportedMedia(info.path, f"{info.rate} Hz; {first.path.name} is {first.rate} Hz")
        if info.frames != first.frames:
            raise MediaError(info.path, f"{info.frames} samples long; {first.path.name} is "
                                        f"{first.frames}: mapped files must be of equal length")
    plain = SoundInput(infos, FIVE_ONE, first.rate, first.frames, (None,) * 6, language)
    return at_track_rate(map_channels(plain, mapping))

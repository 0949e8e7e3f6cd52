"""The sound of a composition being mastered: WAV files -> channels of a DCP sound track.

Input is one multichannel WAV, or one mono WAV per channel, in the order of a layout:

    5.1    6 channels  L R C LFE Ls Rs            track: 6 channels, as given
    7.1DS  8 channels  L R C LFE Lss Rss Lrs Rrs  track: 12 channels, Lrs and Rrs on 11 and 12
    stereo 2 channels  L R (one file)             track: 5.1, C LFE Ls Rs silent
    mono   1 channel   C (one file)               track: 5.1, all but C silent

A stereo or mono mix goes into a DCP's 5.1 track as DCP-o-matic maps it by default (stereo to
L and R, mono to the centre), since cinema servers and processors expect a 5.1 or 7.1 track. An
IMF package carries stereo as it is, a Standard Stereo soundfield of 2 channels (ST 2067-8,
:meth:`SoundInput.for_imf`); mono is not written there.

A DCP's channels are numbered by SMPTE ST 428-12 / ST 429-2 Annex A and the ISDCF's
"Recommendations for Audio Channels" (Doc 4), as libdcp numbers them: 1 L, 2 R, 3 C, 4 LFE,
5 Ls/Lss, 6 Rs/Rss, 7 HI, 8 VI, 9 and 10 unused, 11 Lrs (back surround left), 12 Rrs. So 7.1 is
carried in 12 channels with 7 to 10 silent (DCP-o-matic and libdcp do the same). An 8-channel
WAVE_FORMAT_EXTENSIBLE file whose channel mask is 0x63F (FL FR FC LFE BL BR SL SR, the
Microsoft order: back before side) is read in that order; any other 8-channel file in the
order above.

Samples are 24-bit in the track (ST 428-2): 16-bit input is shifted up 8 bits (exact),
32-bit input keeps its top 24 bits. The rate is 48000 or 96000 Hz (input at another rate from
8 to 384 kHz, 44.1 kHz say, is converted to 48000 Hz as it is read, :mod:`.sound_resample`),
and each picture frame carries ``rate / edit rate`` samples per channel (2000 at 48 kHz and
24 fps), which must be a whole number (ST 429-3 frame wrapping: one element of sound per
picture edit unit). Length against the picture (``picture frames * samples per frame``):
shorter by more than one frame is refused; shorter by up to one frame is padded with silence;
longer is cut at the picture's end, with a warning (:meth:`SoundInput.fit`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Iterator

import numpy as np

from cinegpu.media.errors import MediaError, UnsupportedMedia
from cinegpu.media.sound.resample import MAX_RATIO, ResampledWav, resampled_length, resampler_missing
from cinegpu.media.sound.wav import WavInfo, read_samples, read_wav_info

__all__ = ["LAYOUTS", "Layout", "SoundInput", "at_track_rate", "checked_headers", "open_sound"]

#: Sample rates a DCP carries (ST 428-2), Hz.
RATES = (48000, 96000)
#: The rate sound at any other rate is converted to, and the input rates taken for that (Hz).
CONVERT_TO = 48000
CONVERT_FROM = (CONVERT_TO // MAX_RATIO, 384000)
#: Edit units read from the files at a time.
BATCH = 48

#: MCA channel labels (ST 377-4, ST 429-2 Annex A): symbol -> (name, label dictionary UL).
_MCA = "060e2b340401010d030201"
CHANNEL_LABELS = {
    "L": ("Left", _MCA + "0100000000"), "R": ("Right", _MCA + "0200000000"),
    "C": ("Center", _MCA + "0300000000"), "LFE": ("LFE", _MCA + "0400000000"),
    "Ls": ("Left Surround", _MCA + "0500000000"), "Rs": ("Right Surround", _MCA + "0600000000"),
    "Lss": ("Left Side Surround", _MCA + "0700000000"),
    "Rss": ("Right Side Surround", _MCA + "0800000000"),
    "Lrs": ("Left Rear Surround", _MCA + "0900000000"),
    "Rrs": ("Right Rear Surround", _MCA + "0a00000000"),
}


@dataclass(frozen=True)
class Layout:
    """A soundfield: its input channels in order, and where each goes in the track file.

    ``positions``: 0-based track channel of each input channel; ``track_channels``: channels in
    the track file; ``symbol``/``name``/``ul``: the MCA soundfield group label (ST 377-4);
    ``isdcf``: the soundfield code of the CPL's MainSoundConfiguration (ST 429-16)."""

    name: str
    inputs: tuple[str, ...]
    positions: tuple[int, ...]
    track_channels: int
    symbol: str
    ul: str
    isdcf: str

    def track_labels(self) -> list[str | None]:
        """The label of each track channel (None: unused, silent)."""
        out: list[str | None] = [None] * self.track_channels
        for label, pos in zip(self.inputs, self.positions):
            out[pos] = label
        return out

    @property
    def configuration(self) -> str:
        """MainSoundConfiguration (ST 429-16 / ISDCF): ``51/L,R,C,LFE,Ls,Rs``."""
        return f"{self.isdcf}/" + ",".join(lab or "-" for lab in self.track_labels())


FIVE_ONE = Layout("5.1", ("L", "R", "C", "LFE", "Ls", "Rs"), (0, 1, 2, 3, 4, 5), 6,
                  "sg51", _MCA[:-2] + "0201" + "00000000", "51")
SEVEN_ONE = Layout("7.1DS", ("L", "R", "C", "LFE", "Lss", "Rss", "Lrs", "Rrs"),
                   (0, 1, 2, 3, 4, 5, 10, 11), 12, "sg71", _MCA[:-2] + "0202" + "00000000", "71")
#: IMF's Standard Stereo soundfield (ST 2067-8 Table 3: group label 20h 01h; its channels are
#: ST 428-12's L and R). Not a DCP layout.
STEREO = Layout("Standard Stereo", ("L", "R"), (0, 1), 2, "sgST",
                _MCA[:-2] + "0220" + "01000000", "ST")
#: Input channel count -> layout.
LAYOUTS = {6: FIVE_ONE, 8: SEVEN_ONE}
#: A one-file mix of fewer channels -> (its name, the 5.1 channels its channels go to), as
#: DCP-o-matic maps it by default; the other channels of the 5.1 track are silent.
MIXES_IN_5_1 = {2: ("stereo", ("L", "R")), 1: ("mono", ("C",))}
#: WAVE_FORMAT_EXTENSIBLE channel mask of 7.1 in Microsoft order: FL FR FC LFE BL BR SL SR.
MASK_7_1_MS = 0x63F
#: Input channel -> 7.1DS input position for that order (BL -> Lrs, SL -> Lss).
_MS_7_1 = (0, 1, 2, 3, 6, 7, 4, 5)
#: An RFC 5646 language tag, as far as a CPL's xs:language allows.
LANGUAGE = re.compile(r"[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*")


@dataclass(frozen=True)
class SoundInput:
    """Checked sound input: ``files`` (one multichannel file, or one mono file per input
    channel), their ``layout``, ``rate`` (Hz) and length ``frames`` (samples per channel);
    ``order``: for each input channel of the layout, (file index, channel in that file), or
    None where that channel is silent (a stereo or mono mix in a 5.1 track); ``mapping``: how
    such a mix was placed, in words (None: every channel of the layout given);
    ``source_rate``: the files' rate where it is converted to ``rate`` as they are read
    (:class:`.sound_resample.ResampledWav`; ``frames`` then counts samples at ``rate``);
    ``gain_db``: a gain in dB applied to every sample as it is read (rounded, and clipped to
    the 24-bit range)."""

    files: tuple[WavInfo, ...]
    layout: Layout
    rate: int
    frames: int
    order: tuple[tuple[int, int] | None, ...]
    language: str | None = None
    mapping: str | None = None
    source_rate: int | None = None
    gain_db: float = 0.0

    @property
    def note(self) -> str | None:
        """What was done to the sound on its way into the track, in words (None: nothing)."""
        done = ([self.mapping] if self.mapping else []) + \
            ([f"sound converted from {self.source_rate} Hz to {self.rate} Hz (libsoxr, very "
              "high quality)"] if self.source_rate else []) + \
            ([f"gain {self.gain_db:+g} dB"] if self.gain_db else [])
        return "; ".join(done) or None

    def _readers(self) -> list:
        """Per file, a call (start, count) -> its samples at :attr:`rate` (read in order),
        with :attr:`gain_db` applied."""
        if self.source_rate is None:
            readers = [lambda start, n, info=info: read_samples(info, start, n)
                       for info in self.files]
        else:
            readers = [ResampledWav(info, self.rate).read for info in self.files]
        if not self.gain_db:
            return readers
        factor = 10.0 ** (self.gain_db / 20.0)
        return [lambda start, n, read=read: _gained(read(start, n), factor) for read in readers]

    def samples_per_frame(self, edit_rate) -> int:
        """Samples per channel in one edit unit; MediaError unless a whole number."""
        spf = Fraction(self.rate) / Fraction(edit_rate)
        if spf.denominator != 1:
            raise MediaError(self.files[0].path, f"{self.rate} Hz at {edit_rate} fps is "
                             f"{float(spf):.3f} samples a frame, not a whole number")
        return int(spf)

    def fit(self, picture_frames: int, edit_rate) -> str | None:
        """Check the length against ``picture_frames`` at ``edit_rate``: MediaError if the sound
        is shorter by more than one frame; a warning (text) if it is longer (the end is cut)
        or shorter by less than a frame (padded with silence); None if it is exact."""
        spf = self.samples_per_frame(edit_rate)
        return self._fit(picture_frames * spf, spf, picture_frames, edit_rate)

    def imf_samples(self, picture_frames: int, edit_rate) -> int:
        """Samples per channel of an IMF sound track as long as ``picture_frames`` at
        ``edit_rate`` (its edit rate is the sample rate, ST 2067-2); MediaError unless that
        is a whole number (48 kHz at 29.97 fps: a multiple of 5 frames)."""
        need = Fraction(self.rate) * picture_frames / Fraction(edit_rate)
        if need.denominator != 1:
            step = (Fraction(self.rate) / Fraction(edit_rate)).denominator
            raise MediaError(None, f"{picture_frames} frames at {edit_rate} fps last "
                                   f"{float(need):.1f} samples at {self.rate} Hz, not a whole "
                                   f"number: IMF sound must last as long as the picture "
                                   f"(use a multiple of {step} frames)")
        return int(need)

    def for_imf(self) -> "SoundInput":
        """This sound as an IMF track carries it: a stereo mix as Standard Stereo (2 channels,
        :data:`STEREO`) rather than in 5.1; UnsupportedMedia for a mono one."""
        if self.mapping is None:
            return self
        if self.files[0].channels != 2:
            raise UnsupportedMedia(self.files[0].path, f"{self.files[0].channels} channel: an "
                                   "IMF package takes stereo, 5.1 or 7.1 sound here (mono is "
                                   "not written)")
        return replace(self, layout=STEREO, order=((0, 0), (0, 1)), mapping=None)

    def fit_imf(self, picture_frames: int, edit_rate) -> str | None:
        """:meth:`fit` for an IMF track (:meth:`imf_samples`): the same limits, in samples;
        UnsupportedMedia for sound an IMF track does not carry (:meth:`for_imf`)."""
        self.for_imf()
        need = self.imf_samples(picture_frames, edit_rate)
        spf = -(-self.rate // Fraction(edit_rate))
        return self._fit(need, int(spf), picture_frames, edit_rate)

    def _fit(self, need: int, spf: int, picture_frames: int, edit_rate) -> str | None:
        where = self.files[0].path if len(self.files) == 1 else None
        have = f"{self.frames} samples ({self.frames / self.rate:.3f} s)"
        if self.frames < need - spf:
            raise MediaError(where, f"sound is {have}, shorter than the picture's {need} "
                                    f"({picture_frames} frames at {edit_rate} fps, "
                                    f"{spf} samples a frame)")
        if self.frames < need:
            return (f"sound is {need - self.frames} samples shorter than the picture; the last "
                    "frame is padded with silence")
        if self.frames > need:
            return (f"sound is {have}, longer than the picture's {need} samples; "
                    f"the last {self.frames - need} samples are cut")
        return None

    def sample_blocks(self, count: int, block: int = 48000) -> Iterator[bytes]:
        """``count`` sample frames of the input channels in layout order (no unused channels:
        an IMF track carries ``len(layout.inputs)`` channels), 24-bit little-endian signed,
        in blocks of up to ``block`` sample frames; silence past the end of the input."""
        width = len(self.layout.inputs)
        readers = self._readers()
        for start in range(0, count, block):
            n = min(block, count - start)
            out = np.zeros((n, width), np.int32)
            data = [read(start, n) for read in readers]
            for k, where in enumerate(self.order):
                if where is not None:
                    got = data[where[0]][:, where[1]]
                    out[:len(got), k] = got
            yield out.astype("<i4").view(np.uint8).reshape(-1, 4)[:, :3].tobytes()

    def edit_units(self, count: int, edit_rate) -> Iterator[bytes]:
        """``count`` edit units of the track: each ``samples_per_frame`` sample frames of
        ``layout.track_channels`` 24-bit little-endian signed samples (ST 382 / BWF order),
        silence past the end of the input."""
        spf = self.samples_per_frame(edit_rate)
        width = self.layout.track_channels
        readers = self._readers()
        for first in range(0, count, BATCH):
            n = min(BATCH, count - first)
            block = np.zeros((n * spf, width), np.int32)
            start = first * spf
            data = [read(start, n * spf) for read in readers]
            for where, pos in zip(self.order, self.layout.positions):
                if where is not None:
                    got = data[where[0]][:, where[1]]
                    block[:len(got), pos] = got
            raw = block.astype("<i4").view(np.uint8).reshape(-1, 4)[:, :3].tobytes()
            step = spf * width * 3
            for k in range(n):
                yield raw[k * step:(k + 1) * step]


def _gained(samples: np.ndarray, factor: float) -> np.ndarray:
    """24-bit ``samples`` times ``factor``, rounded, clipped to the 24-bit range."""
    top = (1 << 23) - 1
    return np.clip(np.rint(samples * factor), -top - 1, top).astype(np.int32)


def open_sound(paths, language: str | None = None) -> SoundInput:
    """Read and check the headers of the sound input (nothing else is read): one multichannel
    WAV or one mono WAV per channel, 6 (5.1) or 8 (7.1) channels, 48000 or 96000 Hz, mono files
    of equal rate and length; or one stereo or mono WAV, placed in a 5.1 track
    (:data:`MIXES_IN_5_1`). MediaError naming the file and the problem."""
    return _at_track_rate(_open(checked_headers(paths, language), language))


def checked_headers(paths, language: str | None = None) -> tuple[WavInfo, ...]:
    """The WAV headers of ``paths``, each at a rate a track carries or converts from, and
    ``language`` an RFC 5646 tag; MediaError naming the file and the problem."""
    paths = list(paths)
    if not paths:
        raise MediaError(None, "no sound files given")
    if language is not None and not LANGUAGE.fullmatch(language):
        raise MediaError(None, f"sound language {language!r} is not an RFC 5646 tag such "
                               "as en-US")
    infos = tuple(read_wav_info(p) for p in paths)
    for info in infos:
        if info.rate not in RATES:
            why = resampler_missing()
            if why or not CONVERT_FROM[0] <= info.rate <= CONVERT_FROM[1]:
                raise UnsupportedMedia(info.path, f"sample rate {info.rate} Hz; DCP and IMF "
                                       "sound is 48000 or 96000 Hz (ST 428-2, ST 2067-2), "
                                       + (f"and converting it needs {why}" if why else
                                          f"and {CONVERT_FROM[0]} to {CONVERT_FROM[1]} Hz is "
                                          f"converted to {CONVERT_TO}"))
    return infos


def at_track_rate(s: SoundInput) -> SoundInput:
    """``s`` converted to :data:`CONVERT_TO` Hz where its rate is not one a track carries."""
    return _at_track_rate(s)


def _at_track_rate(s: SoundInput) -> SoundInput:
    """``s`` converted to :data:`CONVERT_TO` Hz where its rate is not one a track carries."""
    if s.rate in RATES:
        return s
    return replace(s, rate=CONVERT_TO, source_rate=s.rate,
                   frames=resampled_length(s.frames, s.rate, CONVERT_TO))


def _open(infos: tuple[WavInfo, ...], language: str | None) -> SoundInput:
    """The layout and order of checked headers (:func:`open_sound`), at the files' rate."""
    supported = " or ".join(f"{n} ({lay.name})" for n, lay in LAYOUTS.items())
    if len(infos) == 1 and infos[0].channels in MIXES_IN_5_1:
        info = infos[0]
        name, labels = MIXES_IN_5_1[info.channels]
        order = tuple((0, labels.index(lab)) if lab in labels else None
                      for lab in FIVE_ONE.inputs)
        silent = ", ".join(lab for lab in FIVE_ONE.inputs if lab not in labels)
        return SoundInput(infos, FIVE_ONE, info.rate, info.frames, order, language,
                          f"{name} sound: {' and '.join(labels)} of a 5.1 track, {silent} silent")
    if len(infos) == 1:
        info = infos[0]
        layout = LAYOUTS.get(info.channels)
        if layout is None:
            raise UnsupportedMedia(info.path, f"{info.channels} channels; the CPL declares "
                                              f"{supported} channels (or a stereo or mono "
                                              "file in 5.1)")
        order = _MS_7_1 if layout is SEVEN_ONE and info.channel_mask == MASK_7_1_MS \
            else range(info.channels)
        # input channel k of the layout is file channel inverse(order)[k]
        inverse = [0] * info.channels
        for file_ch, k in enumerate(order):
            inverse[k] = file_ch
        return SoundInput(infos, layout, info.rate, info.frames,
                          tuple((0, c) for c in inverse), language)
    for info in infos:
        if info.channels != 1:
            raise UnsupportedMedia(info.path, f"{info.channels} channels; with several sound "
                                              "files each must be mono (one per channel)")
    layout = LAYOUTS.get(len(infos))
    if layout is None:
        raise UnsupportedMedia(None, f"{len(infos)} mono sound files; the CPL declares "
                                     f"{supported} channels")
    first = infos[0]
    for k, info in enumerate(infos[1:], 1):
        if info.rate != first.rate:
            raise UnsupportedMedia(info.path, f"{info.rate} Hz; {first.path.name} "
                                              f"({layout.inputs[0]}) is {first.rate} Hz")
        if info.frames != first.frames:
            raise MediaError(info.path, f"{layout.inputs[k]} is {info.frames} samples long; "
                                        f"{first.path.name} ({layout.inputs[0]}) is "
                                        f"{first.frames}: mono files must be of equal length")
    return SoundInput(infos, layout, first.rate, first.frames,
                      tuple((k, 0) for k in range(len(infos))), language)

"""A composition's sound, read by picture frame across reel joins.

Each reel (IMF segment) plays its picture for ``D_r`` frames at the composition edit rate ``E``
and, beside it, its MainSound asset (ST 429-7 8.x; IMF ST 2067-3 main audio sequence): a track
file, an entry point and a duration in the asset's own edit rate. On one sample timeline at the
composition sample rate ``F`` (Hz), picture frame ``f`` begins at sample ``floor(f * F / E)``
(exact when ``F / E`` is whole: 2000 at 24 fps, 2002 at 24000/1001 fps for 48 kHz), and reel
``r``'s sound starts at the sample where its first picture frame starts, at its entry point.

Bad input is told, not fatal (:attr:`CompositionSound.warnings`): a reel whose sound is shorter
than its picture is padded with silence; a reel without sound, with another sample rate or bit
depth than the composition's, or whose track cannot be read, plays silence; a track with another
channel count than the composition's (the first reel's, or the CPL's ST 429-16
``MainSoundConfiguration`` when declared) has its channels cut or padded with silent ones.
An encrypted track (ST 429-6) plays with the key its CPL ``KeyId`` names among the
composition's keys (the picture's Source's ``keys``); without it, the reel plays silence.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from cinegpu.media.errors import MediaError
from cinegpu.media.security.key_ring import CompositionKeys, check_track_key
from cinegpu.media.package.read import Composition, local, parse_xml
from cinegpu.media.sound.track import SoundDescriptor, SoundTrack


@dataclass
class SoundReel:
    """One reel's sound on the composition's sample timeline (all counts in sample frames)."""

    first_frame: int          # the reel's first picture frame in the composition
    frames: int               # picture frames of the reel
    start: int                # composition sample where the reel begins
    length: int               # composition samples the reel's picture lasts
    track: SoundTrack | None  # None: silence
    entry: int = 0            # first sample of the track played
    source: int = 0           # samples played from the track per repeat
    played: int = 0           # samples of sound the CPL gives the reel, repeats included


def declared_configuration(comp: Composition) -> tuple[str | None, Fraction | None]:
    """ST 429-16 ``MainSoundConfiguration`` ("51/L,R,C,LFE,Ls,Rs") and ``MainSoundSampleRate``
    of a SMPTE CPL's CompositionMetadataAsset, or None where absent."""
    config = rate = None
    try:
        root = parse_xml(comp.path)
    except MediaError:
        return None, None
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        name = local(el)
        if name == "MainSoundConfiguration" and el.text and config is None:
            config = el.text.strip()
        elif name == "MainSoundSampleRate" and el.text and rate is None:
            parts = el.text.split()
            if len(parts) == 2 and all(p.isdigit() for p in parts) and int(parts[1]):
                rate = Fraction(int(parts[0]), int(parts[1]))
    return config, rate


def configuration_channels(config: str) -> int:
    """Channels a ST 429-16 MainSoundConfiguration lists (after the "/": one name or "-" each)."""
    names = config.split("/", 1)[-1]
    return len([n for n in names.split(",") if n.strip()])


class CompositionSound:
    """The sound of a composition's picture timeline.

    ``sample_rate`` is in Hz, ``channels`` and ``bits`` are the composition's (the first
    readable reel's); ``read_frames`` returns int32 (sample frames, channels), values at
    ``bits`` precision as :class:`~cinegpu.media.sound.track.SoundTrack` gives them.
    """

    def __init__(self, comp: Composition, picture_frames: list[int], edit_rate: Fraction,
                 keys: CompositionKeys | None = None):
        self.edit_rate = edit_rate
        self.warnings: list[str] = []
        self.config, declared_rate = declared_configuration(comp)
        tracks: dict[str, SoundTrack] = {}
        self._tracks = tracks
        assets = []
        for reel in comp.reels:
            sounds = reel.of_kind("sound")
            if len(sounds) > 1:
                self.warnings.append(f"reel {reel.id}: {len(sounds)} sound tracks; the first plays")
            asset = sounds[0] if sounds else None
            track = None
            if asset is not None:
                try:
                    if asset.path is None:
                        raise MediaError(comp.path, f"sound asset {asset.id} is not in the ASSETMAP")
                    name = str(asset.path)
                    track = tracks.get(name) or _open_track(asset, reel.id, keys)
                    tracks[name] = track
                except MediaError as exc:
                    self.warnings.append(f"reel {reel.id}: sound not played: {exc}")
            assets.append((reel.id, asset, track))
        first = next((t.descriptor for _, _, t in assets if t is not None), None)
        self.descriptor: SoundDescriptor | None = first
        self.sample_rate = declared_rate or (first.sample_rate if first else Fraction(48000))
        self.bits = first.bits if first else 24
        self.channels = first.channels if first else 0
        if self.config and first is not None:
            declared = configuration_channels(self.config)
            if declared != first.channels:
                self.warnings.append(f"the CPL declares {declared} channels "
                                     f"({self.config}), the sound track has {first.channels}; "
                                     f"playing the track's {first.channels}")
        self.samples_per_frame = self.sample_rate / edit_rate
        self.reels: list[SoundReel] = []
        frame = 0
        for (rid, asset, track), frames in zip(assets, picture_frames):
            start = self.sample_of_frame(frame)
            sr = SoundReel(frame, frames, start, self.sample_of_frame(frame + frames) - start,
                           self._checked(rid, track))
            if sr.track is not None and asset is not None:
                self._place(sr, rid, asset)
            self.reels.append(sr)
            frame += frames
        self.sample_count = self.sample_of_frame(frame)

    def _checked(self, rid: str, track: SoundTrack | None) -> SoundTrack | None:
        if track is None:
            return None
        d = track.descriptor
        if d.sample_rate != self.sample_rate or d.bits != self.bits:
            self.warnings.append(f"reel {rid}: {os_name(track)} is {d.sample_rate} Hz {d.bits}-bit, "
                                 f"the composition {self.sample_rate} Hz {self.bits}-bit; the reel "
                                 f"plays silence (no resampling)")
            return None
        if d.channels != self.channels:
            self.warnings.append(f"reel {rid}: {os_name(track)} has {d.channels} channels, the "
                                 f"composition {self.channels}; channels cut or padded with silence")
        return track

    def _place(self, sr: SoundReel, rid: str, asset) -> None:
        """The reel's entry point and duration, from the asset's edit rate to samples."""
        assert sr.track is not None
        rate = asset.edit_rate or self.edit_rate
        per_unit = self.sample_rate / rate
        sr.entry = math.floor(asset.entry_point * per_unit)
        repeats = max(1, asset.repeat_count)
        sr.source = math.floor(asset.duration // repeats * per_unit)
        sr.played = sr.source * repeats
        have = sr.track.sample_count
        if sr.entry + sr.source > have:
            self.warnings.append(f"reel {rid}: the CPL plays samples {sr.entry}..{sr.entry + sr.source}"
                                 f" of {os_name(sr.track)}, which has {have}; silence past its end")
            sr.source = max(0, have - sr.entry)
            sr.played = sr.source * repeats
        if sr.played < sr.length:
            ms = (sr.length - sr.played) * 1000 / float(self.sample_rate)
            self.warnings.append(f"reel {rid}: sound is {ms:.1f} ms shorter than the picture "
                                 f"({sr.played} of {sr.length} samples); silence after it")

    def sample_of_frame(self, f: int) -> int:
        """The composition sample (at ``sample_rate``) where picture frame ``f`` begins."""
        return math.floor(f * self.sample_rate / self.edit_rate)

    def read_frames(self, f0: int, f1: int) -> np.ndarray:
        """The sound of picture frames ``[f0, f1)``, int32 (sample frames, channels)."""
        return self.read_samples(self.sample_of_frame(f0), self.sample_of_frame(f1))

    def read_samples(self, s0: int, s1: int) -> np.ndarray:
        """Composition samples ``[s0, s1)``, int32 (s1 - s0, channels); silence where no reel
        gives sound. A track that fails to read mid-play is told once and plays silence."""
        out = np.zeros((max(0, s1 - s0), self.channels), np.int32)
        for sr in self.reels:
            a, b = max(s0, sr.start), min(s1, sr.start + min(sr.length, sr.played))
            if a >= b or sr.track is None or not sr.source:
                continue
            pos = a
            while pos < b:   # one piece per repeat of the source
                k = (pos - sr.start) % sr.source
                n = min(b - pos, sr.source - k)
                try:
                    pcm = sr.track.read_samples(sr.entry + k, sr.entry + k + n)
                except MediaError as exc:
                    self.warnings.append(f"sound of {os_name(sr.track)} not read: {exc}; silence")
                    sr.track = None
                    break
                c = min(self.channels, pcm.shape[1])
                out[pos - s0:pos - s0 + n, :c] = pcm[:, :c]
                pos += n
        return out

    def summary(self) -> str:
        """One line: channels, layout, rate, bits, duration."""
        d = self.descriptor
        channels = d.channels_text() if d else f"{self.channels} channels (no sound)"
        return (f"{channels}, {self.sample_rate} Hz, {self.bits}-bit, "
                f"{self.sample_count / float(self.sample_rate):.3f} s")

    def close(self) -> None:
        for t in self._tracks.values():
            t.close()


def _open_track(asset, reel_id: str, keys: CompositionKeys | None) -> SoundTrack:
    """The sound track file of ``asset``; encrypted (its CPL ``KeyId``), with its key from
    ``keys``, checked against the file's check value (ST 429-6)."""
    key = None
    if keys is not None and asset.key_id:
        key = keys.key(asset.key_id, kind="sound", asset_id=asset.id, reel_id=reel_id, path=asset.path)
    track = SoundTrack(asset.path, key)
    if key is not None:
        try:
            check_track_key(track.mxf, key, kind="sound", asset_id=asset.id, reel_id=reel_id,
                            key_id=asset.key_id, where=keys.where(asset.key_id))
        except BaseException:
            track.close()
            raise
    return track


def os_name(track: SoundTrack) -> str:
    return os.path.basename(track.path)


def open_composition_sound(source) -> CompositionSound | None:
    """The sound of a :class:`~cinegpu.media.source.Source` opened from a package, or None when
    it has no composition or its composition has no sound assets."""
    comp = getattr(source, "composition", None)
    if comp is None or source.edit_rate is None:
        return None
    if not any(r.of_kind("sound") for r in comp.reels):
        return None
    frames = [s.duration for s in source.spans]
    if len(frames) != len(comp.reels):
        frames = [sum(a.duration for a in r.of_kind("picture", "stereo-picture")) for r in comp.reels]
    return CompositionSound(comp, frames, source.edit_rate, getattr(source, "keys", None))

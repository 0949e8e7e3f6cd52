"""The main header an encoder wrote, handed to the MXF writer with its codestream: the encoder's
own parse of it (Encoder.header, FrameEncoders.last_header) is what parsing the codestream
gives, a track file written with the handed headers is byte for byte the one written without
(only the first frame's header is read then), and a handed header is checked as a parsed one."""

from __future__ import annotations

import itertools
import threading
import uuid
from datetime import datetime, timezone

import numpy as np
import pytest

from cinegpu.encode import Encoder, EncoderSettings
from cinegpu.media.errors import MediaError
from cinegpu.media.mxf import write as mxf_write
from cinegpu.media.mxf.imf_write import IMFPictureTrackWriter
from cinegpu.media.mxf.write import J2KHeader, PictureTrackWriter, parse_j2k_header


def _frames(shape, count: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 65536, shape).astype(np.uint16) for _ in range(count)]


def test_the_encoder_keeps_the_header_it_wrote():
    """Encoder.header: None before a frame; then the parse of the main header it wrote, the
    very SIZ, COD, QCD (and CAP) parsing the codestream gives, where its guard bits were raised
    for the frame (G 0 asked, 1 written), and for HT code-blocks."""
    y, x = np.mgrid[0:61, 0:83]
    p = (((x // 2) + (y // 2)) % 2) * 65535
    img = np.stack([p, 65535 - p, p], -1).astype(np.uint16)
    with Encoder(EncoderSettings.of(backend="cpu", reversible=True, guard_bits=0,
                                    base_step=0.5, levels=3)) as enc:
        assert enc.header is None
        data = enc.encode(img, bits=16)
        assert J2KHeader.of(enc.header) == parse_j2k_header(data)
        assert parse_j2k_header(data).qcd[0] >> 5 == 1              # G raised for this frame
    for codec in ("j2k", "htj2k"):
        with Encoder(EncoderSettings.of(backend="cpu", codec=codec, bitrate=2e6, fps=24)) as enc:
            for image in _frames((48, 64, 3), 2):
                data = enc.encode(image, bits=16)
                assert J2KHeader.of(enc.header) == parse_j2k_header(data)


def _masters(profile: str, count: int, **kw) -> list[tuple[bytes, J2KHeader]]:
    """``count`` frames mastered as ``cinegpu master`` encodes them on the CPU, each with the
    header its encoder hands over."""
    from cinegpu.jobs.frame_encode import FrameEncoders
    with FrameEncoders(profile=profile, fps=24, colorspace="rec709", backend="cpu", **kw) as enc:
        assert enc.last_header() is None
        out = []
        for image in _frames((1080, 2048, 3), count):
            data = enc.encode(image)
            out.append((data, enc.last_header()))
        other = []                   # another thread's encoder has coded nothing
        t = threading.Thread(target=lambda: other.append(enc.last_header()))
        t.start()
        t.join()
        assert other == [None]
    return out


def _track(writer, path, frames, hand: bool, monkeypatch) -> tuple[bytes, int]:
    """The bytes of a track file of ``frames`` (with their headers where ``hand``), its random
    ids and time fixed; how many frames' headers the writer parsed."""
    ids = itertools.count(1)
    parsed = []
    real = mxf_write.parse_j2k_header
    with monkeypatch.context() as m:
        m.setattr(uuid, "uuid4", lambda: uuid.UUID(int=next(ids)))
        m.setattr(mxf_write, "parse_j2k_header", lambda d: parsed.append(1) or real(d))
        with writer(path, edit_rate=24, asset_id=uuid.UUID(int=99)) as w:
            w.created = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
            for data, header in frames:
                w.write(data, header if hand else None)
            w.close()
    return path.read_bytes(), len(parsed)


@pytest.mark.parametrize("writer, profile, kw", [
    (PictureTrackWriter, "2k", dict(bitrate=None)),
    (IMFPictureTrackWriter, "imf-2k", dict(bitrate=100, bits=12, codec="htj2k")),
])
def test_a_track_file_written_with_the_handed_headers_is_the_same(tmp_path, monkeypatch, writer,
                                                                  profile, kw):
    """DCI and IMF HTJ2K: the frames' track file with the headers their encoder handed over
    is byte for byte the one whose writer parsed every frame's header; it read only the
    first's."""
    frames = _masters(profile, 3, **kw)
    assert all(h == parse_j2k_header(d) for d, h in frames)
    without, parsed = _track(writer, tmp_path / "a.mxf", frames, False, monkeypatch)
    assert parsed == 3
    handed, parsed = _track(writer, tmp_path / "b.mxf", frames, True, monkeypatch)
    assert parsed == 1 and handed == without


def test_a_handed_header_is_checked_as_a_parsed_one(tmp_path):
    """The first frame's handed header must be its own (the descriptor repeats it); a later
    frame's handed header of another size is refused as its parsed header would be."""
    with Encoder(EncoderSettings.of(backend="cpu")) as enc:
        small = enc.encode(_frames((32, 48, 3), 1)[0], bits=16)
        large = enc.encode(_frames((48, 64, 3), 1)[0], bits=16)
    with pytest.raises(MediaError, match="frame 0: the main header handed with it is not its own"):
        with PictureTrackWriter(tmp_path / "a.mxf", edit_rate=24) as w:
            w.write(small, parse_j2k_header(large))
    for hand in (False, True):
        with pytest.raises(MediaError, match=r"frame 1 is 64x48 \(Rsiz 0\); the track is 48x32"):
            with PictureTrackWriter(tmp_path / "b.mxf", edit_rate=24) as w:
                w.write(small, parse_j2k_header(small) if hand else None)
                w.write(large, parse_j2k_header(large) if hand else None)

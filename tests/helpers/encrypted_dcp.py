"""A small one-reel SMPTE DCP made in the tests, in the clear or encrypted (ST 429-6): picture
(small distinct codestreams from the project's encoder), 5.1 sound (position-coded samples) and
an ST 428-7 subtitle in a timed-text track file, each track file encrypted with its own content
key when asked, the CPL naming each KeyId.  The CPL, PKL and ASSETMAP are written here, not by
``media/dcp_write.py``: the test chooses the CPL id (a KDM names it) and the key ids."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from cinegpu.media.mxf.sound_write import SoundTrackWriter
from cinegpu.media.mxf.timed_text_write import TimedTextTrackWriter
from cinegpu.media.mxf.write import EssenceEncryption, write_track
from cinegpu.media.security.content_keys import TrackKey, new_track_key
from cinegpu.media.sound.inputs import FIVE_ONE
from cinegpu.media.subtitles.write import NS_DCST

FPS = 24
RATE = 48000
SPF = RATE // FPS            # sample frames per edit unit
SUBTITLE_TEXT = "SECRET LINE"


@lru_cache(maxsize=1)
def frames(n: int = 6) -> tuple[bytes, ...]:
    """``n`` distinct 64 x 48 12-bit three-component codestreams (reversible)."""
    from cinegpu.encode import encode

    rng = np.random.default_rng(16)
    out = []
    for i in range(n):
        img = np.zeros((48, 64, 3), np.uint16)
        img[..., 0] = (i * 600) % 4096
        img[8:40, 8 + 4 * i:24 + 4 * i, 1] = 3000
        img[..., 2] = rng.integers(0, 4096, (48, 64))
        out.append(encode(img, reversible=True, bits=12, backend="cpu"))
    return tuple(out)


def pcm(units: int) -> bytes:
    """24-bit little-endian samples of 6 channels: channel c of sample frame s holds s * 8 + c."""
    s = np.arange(units * SPF, dtype=np.int64)[:, None] * 8 + np.arange(6)[None, :]
    v = (s % (1 << 23)).astype("<i4").view(np.uint8).reshape(-1, 4)[:, :3]
    return v.tobytes()


def subtitle_document(rid: uuid.UUID) -> bytes:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<SubtitleReel xmlns="{NS_DCST}"><Id>urn:uuid:{rid}</Id><ContentTitleText>t</ContentTitleText>
<IssueDate>2026-01-01T00:00:00+00:00</IssueDate><ReelNumber>1</ReelNumber><Language>en</Language>
<EditRate>24 1</EditRate><TimeCodeRate>24</TimeCodeRate><SubtitleList><Font Size="42">
<Subtitle SpotNumber="1" TimeIn="00:00:00:00" TimeOut="00:00:00:05" FadeUpTime="00:00:00:00" FadeDownTime="00:00:00:00">
<Text Valign="bottom" Vposition="10">{SUBTITLE_TEXT}</Text></Subtitle></Font></SubtitleList></SubtitleReel>""".encode()


@dataclass
class Made:
    root: Path
    cpl_id: str
    title: str
    keys: dict[str, TrackKey] = field(default_factory=dict)     # by kind: picture, sound, subtitle
    codestreams: tuple[bytes, ...] = ()
    files: dict[str, Path] = field(default_factory=dict)


def make_dcp(folder: Path, *, encrypt: bool, cpl_id: str | None = None, title: str = "ENCRYPTION_TEST",
             keys: dict[str, TrackKey] | None = None, sound: bool = True, subtitles: bool = True,
             n: int = 6) -> Made:
    """The DCP in ``folder`` (created); with ``encrypt``, each track file under ``keys`` (by kind,
    new ones by default)."""
    folder.mkdir(parents=True)
    cs = frames(n)
    made = Made(folder, cpl_id or str(uuid.uuid4()), title, codestreams=cs)
    if encrypt:
        made.keys = dict(keys or {"picture": new_track_key("MDIK"), "sound": new_track_key("MDAK"),
                                  "subtitle": new_track_key("MDSK")})

    def enc(kind):
        k = made.keys.get(kind)
        return None if k is None else EssenceEncryption(k.key, uuid.UUID(k.key_id))

    ids = {k: uuid.uuid4() for k in ("picture", "sound", "subtitle")}
    made.files["picture"] = folder / "picture.mxf"
    write_track(made.files["picture"], list(cs), edit_rate=FPS, asset_id=ids["picture"], encryption=enc("picture"))
    if sound:
        made.files["sound"] = folder / "sound.mxf"
        data = pcm(n)
        with SoundTrackWriter(made.files["sound"], edit_rate=FPS, rate=RATE, layout=FIVE_ONE,
                              asset_id=ids["sound"], encryption=enc("sound")) as w:
            for u in range(n):
                w.write(data[u * SPF * 18:(u + 1) * SPF * 18])
            w.close()
    if subtitles:
        made.files["subtitle"] = folder / "subtitle.mxf"
        rid = uuid.uuid4()
        with TimedTextTrackWriter(made.files["subtitle"], edit_rate=FPS, duration=n, resource_id=rid,
                                  namespace=NS_DCST, language="en", asset_id=ids["subtitle"],
                                  encryption=enc("subtitle")) as w:
            w.write(subtitle_document(rid), [])
            w.close()
    _documents(made, ids, n)
    return made


def _asset(tag: str, aid: uuid.UUID, n: int, key: TrackKey | None, extra: str = "") -> str:
    key_id = f"<KeyId>urn:uuid:{key.key_id}</KeyId>" if key else ""
    return (f"<{tag}><Id>urn:uuid:{aid}</Id><EditRate>24 1</EditRate><IntrinsicDuration>{n}</IntrinsicDuration>"
            f"<EntryPoint>0</EntryPoint><Duration>{n}</Duration>{key_id}{extra}</{tag}>")


def _documents(made: Made, ids: dict, n: int) -> None:
    root, k = made.root, made.keys
    assets = [_asset("MainPicture", ids["picture"], n, k.get("picture"),
                     "<FrameRate>24 1</FrameRate><ScreenAspectRatio>64 48</ScreenAspectRatio>")]
    if "sound" in made.files:
        assets.append(_asset("MainSound", ids["sound"], n, k.get("sound")))
    if "subtitle" in made.files:
        assets.append(_asset("MainSubtitle", ids["subtitle"], n, k.get("subtitle")))
    cpl = (f'<?xml version="1.0" encoding="UTF-8"?>\n'
           f'<CompositionPlaylist xmlns="http://www.smpte-ra.org/schemas/429-7/2006/CPL">'
           f"<Id>urn:uuid:{made.cpl_id}</Id><AnnotationText>{made.title}</AnnotationText>"
           f"<IssueDate>2026-01-01T00:00:00+00:00</IssueDate><Issuer>tests</Issuer><Creator>tests</Creator>"
           f"<ContentTitleText>{made.title}</ContentTitleText><ContentKind>test</ContentKind>"
           f"<ReelList><Reel><Id>urn:uuid:{uuid.uuid4()}</Id><AssetList>{''.join(assets)}</AssetList></Reel>"
           f"</ReelList></CompositionPlaylist>")
    (root / "cpl.xml").write_text(cpl)
    files = {uuid.UUID(made.cpl_id): root / "cpl.xml", **{ids[kind]: p for kind, p in made.files.items()}}
    pkl_id = uuid.uuid4()
    pkl_assets = "".join(
        f"<Asset><Id>urn:uuid:{aid}</Id><Hash>AAAAAAAAAAAAAAAAAAAAAAAAAAA=</Hash><Size>{p.stat().st_size}</Size>"
        f"<Type>{'text/xml' if p.suffix == '.xml' else 'application/mxf'}</Type></Asset>"
        for aid, p in files.items())
    (root / "pkl.xml").write_text(
        f'<?xml version="1.0" encoding="UTF-8"?>\n<PackingList xmlns="http://www.smpte-ra.org/schemas/429-8/2007/PKL">'
        f"<Id>urn:uuid:{pkl_id}</Id><IssueDate>2026-01-01T00:00:00+00:00</IssueDate><Issuer>tests</Issuer>"
        f"<Creator>tests</Creator><AssetList>{pkl_assets}</AssetList></PackingList>")
    files[pkl_id] = root / "pkl.xml"
    am_assets = "".join(
        f"<Asset><Id>urn:uuid:{aid}</Id>{'<PackingList>true</PackingList>' if aid == pkl_id else ''}"
        f"<ChunkList><Chunk><Path>{p.name}</Path></Chunk></ChunkList></Asset>" for aid, p in files.items())
    (root / "ASSETMAP.xml").write_text(
        f'<?xml version="1.0" encoding="UTF-8"?>\n<AssetMap xmlns="http://www.smpte-ra.org/schemas/429-9/2007/AM">'
        f"<Id>urn:uuid:{uuid.uuid4()}</Id><Creator>tests</Creator><VolumeCount>1</VolumeCount>"
        f"<IssueDate>2026-01-01T00:00:00+00:00</IssueDate><Issuer>tests</Issuer>"
        f"<AssetList>{am_assets}</AssetList></AssetMap>")


def key_lines(made: Made) -> list[str]:
    """Every key's hex, to look for in outputs that must not hold them."""
    return [k.key.hex() for k in made.keys.values()] + [k.key.hex().upper() for k in made.keys.values()]


def no_key_in(made: dict, *texts: str) -> None:
    """No content key of ``made["enc"]`` (as hex) in any of ``texts`` (output, logs, reprs)."""
    for t in texts:
        for hexkey in key_lines(made["enc"]):
            assert hexkey not in t

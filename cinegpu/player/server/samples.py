"""A small library for trying the server (and for its tests), made with OpenJPEG and ffmpeg.

:func:`make_library` writes, under one folder:

- ``seq/``: a sequence of ``frames`` tiny RGB codestreams (``opj_compress``);
- ``dcp/``: a SMPTE DCP of two reels (one ffmpeg MXF track file each), CPL id :data:`DCP_CPL`;
- ``broken/``: a sequence with a truncated frame and a frame of garbage;
- ``missing/``: a DCP whose second reel's track file is named in the ASSETMAP but absent,
  CPL id :data:`MISSING_CPL`.

The DCP XML is the minimum :mod:`cinegpu.media.package.read` reads (no hashes or signatures).
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path

import numpy as np

__all__ = ["make_library", "DCP_CPL", "MISSING_CPL", "sequence_id", "tools_missing"]

DCP_CPL = "0a1b2c3d-0000-4000-8000-00000000d0c1"
MISSING_CPL = "0a1b2c3d-0000-4000-8000-00000000d0c2"


def tools_missing(dcp: bool = True) -> list[str]:
    return [t for t in ("opj_compress", *(("ffmpeg",) if dcp else ())) if shutil.which(t) is None]


def sequence_id(library: Path, folder: Path) -> str:
    """The library id of a frame folder (see :mod:`.library`)."""
    from .library import SEQUENCE_NS  # noqa: PLC0415
    from cinegpu.media.package.read import relpath  # noqa: PLC0415
    return str(uuid.uuid5(SEQUENCE_NS, relpath(folder.resolve(), library.resolve())))


def _frames(folder: Path, count: int, width: int, height: int, unique: int = 8) -> list[Path]:
    """``count`` codestreams cycling through ``unique`` different pictures."""
    folder.mkdir(parents=True, exist_ok=True)
    yy, xx = np.mgrid[0:height, 0:width]
    made = []
    for k in range(min(unique, count)):
        img = np.stack([(xx * 4 + k * 29) % 256, (yy * 7 + k * 13) % 256, np.full_like(xx, k * 31 % 256)], -1)
        ppm = folder / f"_src{k}.ppm"
        ppm.write_bytes(f"P6\n{width} {height}\n255\n".encode() + img.astype(np.uint8).tobytes())
        out = folder / f"_u{k}.j2c"
        subprocess.run(["opj_compress", "-i", str(ppm), "-o", str(out), "-n", "3"], check=True,
                       capture_output=True, timeout=60)
        ppm.unlink()
        made.append(out)
    files = []
    for n in range(count):
        f = folder / f"f{n:05d}.j2c"
        shutil.copyfile(made[n % len(made)], f)
        files.append(f)
    for m in made:
        m.unlink()
    return files


def _mxf(frames: list[Path], out: Path) -> None:
    listing = out.with_suffix(".txt")
    listing.write_text("".join(f"file '{f}'\n" for f in frames))
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "concat", "-safe", "0", "-r", "24", "-i", str(listing),
                    "-c:v", "copy", "-f", "mxf", str(out)], check=True, capture_output=True, timeout=120)
    listing.unlink()


def _urn() -> str:
    return f"urn:uuid:{uuid.uuid4()}"


def _dcp(folder: Path, cpl_id: str, title: str, reels: list[list[Path]], *, drop_last: bool = False) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    assets, reel_xml = [], []
    for i, frames in enumerate(reels):
        mxf = folder / f"picture_{i + 1}.mxf"
        _mxf(frames, mxf)
        aid = str(uuid.uuid4())
        assets.append((aid, mxf.name))
        n = len(frames)
        reel_xml.append(
            f"<Reel><Id>{_urn()}</Id><AssetList><MainPicture><Id>urn:uuid:{aid}</Id><EditRate>24 1</EditRate>"
            f"<IntrinsicDuration>{n}</IntrinsicDuration><EntryPoint>0</EntryPoint><Duration>{n}</Duration>"
            f"<FrameRate>24 1</FrameRate><ScreenAspectRatio>1998 1080</ScreenAspectRatio></MainPicture>"
            f"</AssetList></Reel>")
    for f in {f.parent for r in reels for f in r}:
        shutil.rmtree(f)
    if drop_last:
        (folder / assets[-1][1]).unlink()
    (folder / "cpl.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<CompositionPlaylist xmlns="http://www.smpte-ra.org/schemas/429-7/2006/CPL">'
        f"<Id>urn:uuid:{cpl_id}</Id><ContentTitleText>{title}</ContentTitleText><ContentKind>test</ContentKind>"
        f"<EditRate>24 1</EditRate><ReelList>{''.join(reel_xml)}</ReelList></CompositionPlaylist>\n")
    pkl_id = str(uuid.uuid4())
    (folder / "pkl.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<PackingList xmlns="http://www.smpte-ra.org/schemas/429-8/2007/PKL"><Id>urn:uuid:{pkl_id}</Id>'
        f"<AssetList><Asset><Id>urn:uuid:{cpl_id}</Id><Size>1</Size><Type>text/xml</Type></Asset>"
        + "".join(f"<Asset><Id>urn:uuid:{a}</Id><Size>1</Size><Type>application/mxf</Type></Asset>"
                  for a, _ in assets) + "</AssetList></PackingList>\n")
    chunks = [(pkl_id, "pkl.xml", True), (cpl_id, "cpl.xml", False)] + [(a, p, False) for a, p in assets]
    (folder / "ASSETMAP.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<AssetMap xmlns="http://www.smpte-ra.org/schemas/429-9/2007/AM"><Id>{_urn()}</Id><AssetList>'
        + "".join(f"<Asset><Id>urn:uuid:{i}</Id>{'<PackingList>true</PackingList>' if pkl else ''}"
                  f"<ChunkList><Chunk><Path>{p}</Path></Chunk></ChunkList></Asset>" for i, p, pkl in chunks)
        + "</AssetList></AssetMap>\n")


def make_library(root, *, frames: int = 48, width: int = 64, height: int = 36, dcp: bool = True) -> Path:
    """Write the library described in the module docstring under ``root``; ``root``."""
    root = Path(root)
    _frames(root / "seq", frames, width, height)
    broken = _frames(root / "broken", 24, width, height)
    data = broken[5].read_bytes()
    broken[5].write_bytes(data[: len(data) // 2])              # truncated: concealed by resilient decoding
    broken[9].write_bytes(b"\xff\x4f\xff\x51" + bytes(range(256)) * 2)   # garbage after SOC SIZ
    if dcp:
        tmp = root / "_tmp"
        _dcp(root / "dcp", DCP_CPL, "Two reels", [_frames(tmp / "r1", 24, width, height),
                                                   _frames(tmp / "r2", 24, width, height)])
        _dcp(root / "missing", MISSING_CPL, "Missing reel", [_frames(tmp / "m1", 12, width, height),
                                                             _frames(tmp / "m2", 12, width, height)],
             drop_last=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return root

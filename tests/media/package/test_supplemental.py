"""Supplemental packages (VF): a package whose CPL uses an original version's (OV's) picture
track file, which only the OV's ASSETMAP names. ``open_source(vf, ov=[ov])`` and the ``--ov``
flags of ``play``, ``info`` and ``check`` resolve it; without the OV the error names the missing
asset ids and suggests ``--ov``; ``check`` reports the OV's assets as such and hashes them
against the CPL.

The VF is built here: a new sound track file and a new CPL that plays the OV's picture from
entry point 6, with its own PKL and ASSETMAP listing only what the VF carries.
"""

from __future__ import annotations

import shutil
import uuid
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest
from lxml import etree

from cinegpu.jobs.demo import demo_frame
from cinegpu.jobs.master_job import MasterJob
from cinegpu.jobs.mastering import master
from cinegpu.media import CorruptMedia, open_source
from cinegpu.media.mxf.read import MXFFile
from cinegpu.media.mxf.sound_write import SoundTrackWriter
from cinegpu.media.package.dcp_write import NS_PKL, DCPWriter, file_hash
from cinegpu.media.sound.inputs import open_sound
from cinegpu.player.cli import main
from conftest import HAVE_ASDCPLIB
from helpers.mastering import HAVE_ENCODER
from helpers.sound_util import tones, write_wav

NS = "http://www.smpte-ra.org/schemas/429-7/2006/CPL"
ENTRY, LENGTH = 6, 24


def _set(el, tag: str, value) -> None:
    el.find(f"{{{NS}}}{tag}").text = str(value)


def _make_vf(ov: Path, vf: Path, wav: Path) -> tuple[str, str]:
    """The VF at ``vf``: a new sound of ``wav`` and a CPL playing the OV's picture from ENTRY
    for LENGTH frames; (the OV picture's asset id, the VF's sound asset id)."""
    vf.mkdir()
    s = open_sound([wav])
    sid = uuid.uuid4()
    sound = vf / f"pcm_{sid}.mxf"
    with SoundTrackWriter(sound, edit_rate=24, rate=s.rate, layout=s.layout, asset_id=sid) as w:
        for unit in s.edit_units(LENGTH, 24):
            w.write(unit)
        w.close()
    cpl_doc = etree.parse(str(next(ov.glob("cpl_*.xml"))))
    root = cpl_doc.getroot()
    cpl_id = uuid.uuid4()
    _set(root, "Id", f"urn:uuid:{cpl_id}")
    pic = root.find(f".//{{{NS}}}MainPicture")
    _set(pic, "EntryPoint", ENTRY)
    _set(pic, "Duration", LENGTH)
    snd = root.find(f".//{{{NS}}}MainSound")
    for tag, value in (("Id", f"urn:uuid:{sid}"), ("IntrinsicDuration", LENGTH), ("EntryPoint", 0),
                       ("Duration", LENGTH), ("Hash", file_hash(sound))):
        _set(snd, tag, value)
    cpl = vf / f"cpl_{cpl_id}.xml"
    cpl_doc.write(str(cpl), xml_declaration=True, encoding="UTF-8")
    writer = SimpleNamespace(PKL_NAMESPACE=NS_PKL, PKL_HASH_ALGORITHM=False, PKL_ORIGINAL_NAMES=True,
                             title="VF", issuer="test", tmp=vf, signer=None,
                             issued=datetime.now(timezone.utc).replace(microsecond=0).isoformat())
    pkl_id = uuid.uuid4()
    pkl = vf / f"pkl_{pkl_id}.xml"
    DCPWriter._write_pkl(writer, pkl, pkl_id, [(cpl_id, cpl, "text/xml", file_hash(cpl)),
                                               (sid, sound, "application/mxf", file_hash(sound))])
    DCPWriter._write_assetmap(writer, [(pkl_id, pkl, True), (cpl_id, cpl, False), (sid, sound, False)])
    DCPWriter._write_volindex(writer)
    return pic.find(f"{{{NS}}}Id").text[9:], str(sid)


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    if not HAVE_ENCODER:
        pytest.skip("no encoder: cinegpu.encode nor opj_compress")
    base = tmp_path_factory.mktemp("vf")
    pictures = [demo_frame(9 * i, 96, 54) for i in range(5)]
    ov = base / "OV"
    master(MasterJob.of(lambda i: pictures[i], 5, ov, title="OV", frames=30, workers=2,
                        processes=1,
                        sound=open_sound([write_wav(base / "ov.wav", tones(30 * 2000, 6, seed=1))])),
           progress=False)
    vf = base / "VF"
    picture_id, sound_id = _make_vf(ov, vf, write_wav(base / "vf.wav", tones(LENGTH * 2000, 6, seed=2)))
    return ov, vf, picture_id, sound_id


def test_without_its_ov_the_error_names_the_missing_asset_and_suggests_ov(packages, tmp_path):
    ov, vf, picture_id, _ = packages
    with pytest.raises(CorruptMedia, match=rf"not in the ASSETMAP \(ASSETMAP.xml\): picture {picture_id}; .*--ov DIR"):
        open_source(vf)
    other = tmp_path / "other"
    shutil.copytree(vf, other)                 # a package that lacks the picture too
    with pytest.raises(CorruptMedia, match=rf"nor in the OV package\(s\) .*other: picture {picture_id}"):
        open_source(vf, ov=[other])


def test_with_its_ov_the_vf_plays_the_ovs_picture_from_its_entry_point(packages):
    ov, vf, _, sound_id = packages
    whole = MXFFile(next(ov.glob("j2c_*.mxf")))
    with open_source(vf, ov=[ov]) as media:
        assert (media.frame_count, media.edit_rate) == (LENGTH, 24)
        assert [media.frame(k) for k in (0, 1, LENGTH - 1)] == \
            [whole.frame(ENTRY + k) for k in (0, 1, LENGTH - 1)]
        assert media.frame(0) != whole.frame(0)
        reel = media.composition.reels[0]
        assert reel.of_kind("picture")[0].ov == ov and reel.of_kind("sound")[0].ov is None
        assert reel.of_kind("sound")[0].path.parent == vf
    # a CPL file given directly resolves the same way
    with open_source(next(vf.glob("cpl_*.xml")), ov=[ov]) as media:
        assert media.frame_count == LENGTH


def test_check_reports_the_ovs_assets_as_such(packages, tmp_path, capsys):
    ov, vf, picture_id, _ = packages
    assert main(["check", str(vf), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert f"picture asset {picture_id} is not in the ASSETMAP; if this is a supplemental " in out
    assert main(["check", str(vf), "--ov", str(ov), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert f"note: picture asset {picture_id} of cpl_" in out and f"is in the OV {ov} (j2c_" in out
    assert "PROBLEM" not in out and "OK" in out
    changed = tmp_path / "changed"
    shutil.copytree(ov, changed)
    mxf = next(changed.glob("j2c_*.mxf"))
    data = bytearray(mxf.read_bytes())
    data[-100] ^= 1
    mxf.write_bytes(bytes(data))
    assert main(["check", str(vf), "--ov", str(changed), "--no-progress"]) == 1
    assert "does not match the CPL's" in capsys.readouterr().out


def test_info_and_play_take_ov(packages, gl, capsys):
    ov, vf, _, _ = packages
    assert main(["info", str(vf), "--ov", str(ov)]) == 0
    out = capsys.readouterr().out
    assert f"original version (OV): {ov}, 1 CPL asset(s) resolved there" in out
    assert "picture: not readable" not in out
    assert main(["play", str(vf), "--ov", str(ov), "--headless", "--backend", "cpu", "--fps", "4",
                 "--frames", "4", "--threads"]) == 0
    out = capsys.readouterr().out
    assert "played 4 frames" in out and "errors 0" in out
    assert main(["play", str(vf), "--headless", "--frames", "1"]) == 2
    assert "--ov DIR" in capsys.readouterr().err


def test_clairmeta_takes_the_vf_built_here_with_its_ov(packages):
    """The VF this file builds is one ClairMeta accepts (its remarks: the CPL keeps the OV's
    title, and without asdcplib, which cannot probe it, the picture is an external reference;
    with asdcplib (CI) the OV's picture is found through ``-ov`` and probed)."""
    import subprocess
    import sys
    try:
        import clairmeta  # noqa: F401  (probe: is ClairMeta installed)
    except ImportError:
        pytest.skip("ClairMeta not installed")
    ov, vf, _, _ = packages
    run = subprocess.run([sys.executable, "-m", "clairmeta.cli", "check", "-type", "dcp", str(vf),
                          "-ov", str(ov)], capture_output=True, text=True, timeout=300)
    report = run.stdout + run.stderr
    assert "Check succeeded" in report and "Error(s):" not in report, report
    if HAVE_ASDCPLIB:
        assert "Missing dependency" not in report and "external reference" not in report, report
    else:
        assert "external reference" in report, report

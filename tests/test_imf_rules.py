"""The App #2E rules check (:mod:`cinegpu.media.package.imf_rules`): our masters in each mode keep the
rules photon enforces (ST 2067-21), the photon sample packages pass, and packages broken on
purpose (a 12-bit picture under the 2016 identification, a Ccap15 B above the bound) are
flagged. The identification chosen per picture and the Ccap15 B bound are checked as facts."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess

import numpy as np
import pytest

from cinegpu.decode import decode
from cinegpu.decode.codestream import imf
from cinegpu.encode.quant import steps_for
from cinegpu.media import open_source
from cinegpu.media.package.imf_rules import check_imf_package, errors, header_of, ht_findings
from cinegpu.player.cli import main

from conftest import needs_dcp_samples
from test_imf_write import _frames

#: (name, extra options): the modes we master, small (96x54, one frame each)
QUICK = (
    ("j2k-rgb-10", ["--codec", "j2k", "--bits", "10"]),
    ("j2k-rgb-12", ["--codec", "j2k", "--bits", "12"]),
    ("ht97-rgb-12", ["--codec", "htj2k", "--bits", "12"]),
    ("ht53-rgb-12", ["--codec", "htj2k", "--lossless", "--bits", "12"]),
    ("ht97-422-10", ["--codec", "htj2k", "--bits", "10", "--sampling", "ycbcr422"]),
)
SLOW = (
    ("ht97-rgb-10", ["--codec", "htj2k", "--bits", "10"]),
    ("ht53-rgb-10", ["--codec", "htj2k", "--lossless", "--bits", "10"]),
    ("j2k-422-12", ["--codec", "j2k", "--bits", "12", "--sampling", "ycbcr422"]),
    ("j2k-444-10", ["--codec", "j2k", "--bits", "10", "--sampling", "ycbcr444"]),
    ("ht53-422-12", ["--codec", "htj2k", "--lossless", "--bits", "12", "--sampling", "ycbcr422"]),
    ("ht97-422-12", ["--codec", "htj2k", "--bits", "12", "--sampling", "ycbcr422"]),
    ("ht53-444-10-25", ["--codec", "htj2k", "--lossless", "--bits", "10", "--sampling",
                        "ycbcr444", "--fps", "25"]),
    ("ht97-444-10-30", ["--codec", "htj2k", "--bits", "10", "--sampling", "ycbcr444", "--fps",
                        "30"]),
)
assert len(QUICK) == 5 and len(SLOW) == 8


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    return _frames(tmp_path_factory.mktemp("rules") / "in", 1, 96, 54)


def _master(src, out, extra):
    fps = [] if "--fps" in extra else ["--fps", "24"]
    rc = main(["master", str(src), "-o", str(out), "--format", "imf", *fps, "--frames", "1",
               "--title", "rules", "--quiet", "--workers", "1", *extra])
    assert rc == 0
    return out


def _cpl_app(package) -> str:
    text = next(package.glob("CPL_*.xml")).read_text()
    return re.search(r"ApplicationIdentification>([^<]+)<", text).group(1)


@pytest.mark.parametrize("name, extra", QUICK)
def test_our_masters_keep_the_rules(src, tmp_path, name, extra):
    out = _master(src, tmp_path / name, extra)
    assert check_imf_package(out) == []
    want = imf.APP_2E_2016 if name in ("j2k-rgb-10",) else imf.APP_2E_2021
    assert _cpl_app(out) == want


@pytest.mark.slow
@pytest.mark.parametrize("name, extra", SLOW)
def test_our_masters_keep_the_rules_sweep(src, tmp_path, name, extra):
    out = _master(src, tmp_path / name, extra)
    assert check_imf_package(out) == []


@needs_dcp_samples
@pytest.mark.parametrize("name", ["photon-imf-htj2k-1080p", "photon-imf-phdr-4k-j2k"])
def test_photon_samples_have_no_errors(dcp_samples, name):
    found = check_imf_package(dcp_samples / name)
    assert errors(found) == []
    if "htj2k" in name:      # their CPRL: the warning photon gives
        assert {f.what for f in found} == {"progression order 4 is not RPCL"}


# -- packages broken on purpose ---------------------------------------------------------------
def test_12_bit_under_the_2016_identification_is_flagged(src, tmp_path):
    out = _master(src, tmp_path / "p", ["--codec", "j2k", "--bits", "12"])
    cpl = next(out.glob("CPL_*.xml"))
    cpl.write_text(cpl.read_text().replace(imf.APP_2E_2021, imf.APP_2E_2016))
    found = errors(check_imf_package(out))
    assert len(found) == 1 and "12-bit" in found[0].what and "2016" in found[0].rule


def test_htj2k_under_the_2016_identification_is_flagged(src, tmp_path):
    out = _master(src, tmp_path / "p", ["--codec", "htj2k", "--lossless", "--bits", "10"])
    cpl = next(out.glob("CPL_*.xml"))
    cpl.write_text(cpl.read_text().replace(imf.APP_2E_2021, imf.APP_2E_2016))
    assert any("HTJ2K picture coding label" in f.what for f in errors(check_imf_package(out)))


def test_bad_ccap15_is_flagged(src, tmp_path):
    out = _master(src, tmp_path / "p", ["--codec", "htj2k", "--bits", "12"])
    cs = bytearray(_first(out))
    at = cs.index(b"\xff\x50") + 8                   # CAP, Lcap, Pcap: the Ccap15 word
    ccap15 = struct.unpack(">H", cs[at:at + 2])[0]
    for magb, level in ((11, "warning"), (14, "error")):       # B 19 (> 14), B 22 (> 21)
        cs[at:at + 2] = struct.pack(">H", (ccap15 & ~0x1F) | magb)
        found = [f for f in ht_findings(header_of(bytes(cs)), "frame") if "parameter B" in f.what]
        assert [f.level for f in found] == [level]
    cs[at:at + 2] = struct.pack(">H", ccap15 & ~0x20)            # HTREV with the 9/7
    assert any("HTREV" in f.what for f in ht_findings(header_of(bytes(cs)), "frame"))


def _first(package) -> bytes:
    track = open_source(next(package.glob("IMAGE_*.mxf")))
    try:
        return track.frame(0)
    finally:
        track.close()


# -- facts ------------------------------------------------------------------------------------
@pytest.mark.parametrize("ht, ycbcr, sampling, bits, fps, want", [
    (False, False, 1, 10, 24, imf.APP_2E_2016), (False, False, 1, 12, 24, imf.APP_2E_2021),
    (False, True, 2, 10, 24, imf.APP_2E_2016), (False, True, 2, 12, 24, imf.APP_2E_2021),
    (False, True, 1, 10, 24, imf.APP_2E_2016), (False, True, 1, 12, 24, None),
    (True, False, 1, 10, 24, imf.APP_2E_2021), (True, True, 1, 10, 24, None),
    (True, True, 1, 10, 25, imf.APP_2E_2021),
])
def test_identification_per_picture(ht, ycbcr, sampling, bits, fps, want):
    assert imf.identification(ht, ycbcr, sampling, bits, 1920, 1080, fps) == want


def test_ccap15_b_of_our_97_steps_keeps_the_bound():
    """Our 12-bit R'G'B' 9/7 steps with one guard bit count B 14 (the photon HTJ2K sample's
    value and the ST 2067-21 bound); 10-bit steps are clamped to B 11."""
    for bits, mct, levels in ((12, True, 5), (12, False, 5), (10, True, 5), (12, True, 6)):
        limit = imf.ht_b_limit(bits, False, mct, levels)
        steps = steps_for(levels, bits, False, mct=mct, max_b=limit, guard_bits=1)
        assert imf.ht_magb_b(steps, 1, levels, False) == limit
    assert [imf.ht_b_limit(b, False, True, 5) for b in (10, 12)] == [11, 14]
    assert [imf.ht_b_limit(b, True, True, 5) for b in (10, 12)] == [14, 16]
    assert all(imf.magb_b(imf.ccap15_magb(B)) >= B for B in range(60))


PEERS = ("ojph_expand", "grk_decompress", "opj_decompress")


@pytest.mark.slow
@pytest.mark.parametrize("tool", PEERS)
def test_peers_decode_our_rpcl_97_frames_as_we_do(src, tmp_path, tool):
    """An RPCL HTJ2K 9/7 frame (clamped steps, one guard bit): each peer's samples within one
    code value of ours (the 9/7's float rounding)."""
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} not installed")
    out = _master(src, tmp_path / "p", ["--codec", "htj2k", "--bits", "12"])
    (tmp_path / "f.j2c").write_bytes(_first(out))
    run = subprocess.run([tool, "-i", str(tmp_path / "f.j2c"), "-o", str(tmp_path / "f.ppm")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-1000:]
    from test_imf_ht_sound import _read_ppm16
    theirs = _read_ppm16(tmp_path / "f.ppm")
    ours = np.stack([np.asarray(p, np.int64) for p in decode(_first(out))], axis=-1)
    assert np.abs(theirs - ours).max() <= 1

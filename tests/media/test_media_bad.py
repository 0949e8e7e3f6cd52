"""Bad input to cinegpu.media: each case a MediaError naming file and offset, or a check problem."""

from __future__ import annotations

import random
import shutil
import struct
import time
from pathlib import Path

import pytest

from cinegpu.media import MediaError, describe, open_source
from cinegpu.media.j2k_profile import parse_profile
from cinegpu.media.mxf.read import MXFFile
from cinegpu.media.package.check import check, sha1_base64
from conftest import DCP_SAMPLES, needs_dcp_samples

SAMPLES = DCP_SAMPLES
SMPTE = SAMPLES / "libdcp-dcp_test1-smpte-2k"
pytestmark = needs_dcp_samples


def patched(tmp_path, data: bytes, name="video.mxf") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def read_all(path: Path) -> None:
    with open_source(path) as src:
        for n in range(min(src.frame_count, 32)):
            src.frame(n)


def test_truncated_mxf(tmp_path):
    data = (SMPTE / "video.mxf").read_bytes()
    for cut in (10, 100, 1000, 5000, 16500, 17000, 31100, len(data) - 30):
        p = patched(tmp_path, data[:cut])
        with pytest.raises(MediaError) as info:
            read_all(p)
        err = info.value
        assert err.path == str(p) and str(p) in str(err), (cut, err)
        assert err.offset is not None or "no header partition" in str(err) or cut < 1000, (cut, err)


def test_klv_length_past_end(tmp_path):
    data = bytearray((SMPTE / "video.mxf").read_bytes())
    essence = 16524                       # the first essence KLV (see test_media_samples)
    assert data[essence + 12] == 0x15
    lsize = data[essence + 16] & 0x7F
    data[essence + 17:essence + 17 + lsize] = (10 ** 6).to_bytes(lsize, "big")
    p = patched(tmp_path, bytes(data))
    with pytest.raises(MediaError, match="runs past the end") as info:
        read_all(p)
    assert info.value.offset == essence and f"at byte {essence}" in str(info.value)


def test_metadata_length_past_end(tmp_path):
    data = bytearray((SMPTE / "video.mxf").read_bytes())
    pos = 1608                            # the Preface set
    data[pos + 16:pos + 17] = b"\x84"
    data[pos + 17:pos + 21] = struct.pack(">I", 0x7FFFFFF0)
    with pytest.raises(MediaError, match="past the end") as info:
        MXFFile(patched(tmp_path, bytes(data)))
    assert info.value.offset == pos


def test_wrong_index_entry(tmp_path):
    src = SMPTE / "video.mxf"
    with MXFFile(src) as m:
        seg = m.index_segments[0]
        at = seg.entries_offset + 3 * seg.entry_size + 3
        good = seg.stream_offset(3)
    data = bytearray(src.read_bytes())
    data[at:at + 8] = struct.pack(">Q", good + 7)
    p = patched(tmp_path, bytes(data))
    with MXFFile(p) as m:
        assert m.frame(2)[:2] == b"\xff\x4f"
        with pytest.raises(MediaError, match="index entry for frame 3") as info:
            m.frame(3)
        assert info.value.offset is not None and info.value.path == str(p)
    data[at:at + 8] = struct.pack(">Q", 1 << 40)
    with pytest.raises(MediaError, match="past its partition"):
        MXFFile(patched(tmp_path, bytes(data))).frame(3)


def test_index_entry_count_short(tmp_path):
    data = bytearray((SMPTE / "video.mxf").read_bytes())
    with MXFFile(SMPTE / "video.mxf") as m:
        seg = m.index_segments[0]
    count_at = seg.entries_offset - 8
    data[count_at:count_at + 4] = struct.pack(">I", 30)
    with pytest.raises(MediaError, match="IndexEntryArray") as info:
        MXFFile(patched(tmp_path, bytes(data)))
    assert info.value.offset == count_at


def test_missing_asset(smpte_dcp):
    (smpte_dcp / "video.mxf").unlink()
    with pytest.raises(MediaError, match="missing") as info:
        open_source(smpte_dcp)
    assert info.value.path == str(smpte_dcp / "video.mxf")
    report = check(smpte_dcp, progress=False)
    assert not report.ok and any("video.mxf: missing" in p for p in report.problems)


def test_renamed_asset(smpte_dcp):
    (smpte_dcp / "video.mxf").rename(smpte_dcp / "picture.mxf")
    with pytest.raises(MediaError, match="missing"):
        open_source(smpte_dcp)
    report = check(smpte_dcp, progress=False)
    assert any("video.mxf: missing" in p for p in report.problems)
    assert any("picture.mxf: extra file" in w for w in report.warnings)


def test_asset_not_in_assetmap(smpte_dcp):
    am = smpte_dcp / "ASSETMAP.xml"
    am.write_text(am.read_text().replace("5407b210-4441-4e97-8b16-8bdc7c12da54",
                                         "00000000-4441-4e97-8b16-8bdc7c12da54"))
    with pytest.raises(MediaError, match="not in the ASSETMAP") as info:
        open_source(smpte_dcp)
    assert "cpl_" in str(info.value)
    assert not check(smpte_dcp, progress=False).ok


@pytest.mark.parametrize("victim", ["ASSETMAP.xml", "cpl_6affb8ee-0020-4dff-a53c-17652f6358ab.xml",
                                    "pkl_d199d58b-5ef8-4d49-b270-07e590ccb280.xml"])
def test_malformed_xml(smpte_dcp, victim):
    path = smpte_dcp / victim
    path.write_text(path.read_text()[:400])
    with pytest.raises(MediaError, match=r"malformed XML \(line \d+") as info:
        open_source(smpte_dcp)
    assert info.value.path == str(path)
    report = check(smpte_dcp, progress=False)
    assert not report.ok and victim in report.problems[0]


def test_bad_cpl_values(smpte_dcp):
    cpl = smpte_dcp / "cpl_6affb8ee-0020-4dff-a53c-17652f6358ab.xml"
    cpl.write_text(cpl.read_text().replace("<EntryPoint>0</EntryPoint>", "<EntryPoint>5</EntryPoint>", 1))
    with pytest.raises(MediaError, match="exceeds intrinsic duration"):
        open_source(smpte_dcp)
    cpl.write_text(cpl.read_text().replace("<EntryPoint>5</EntryPoint>", "<EntryPoint>x</EntryPoint>"))
    with pytest.raises(MediaError, match="not an integer"):
        open_source(smpte_dcp)


def test_entry_point_respected(smpte_dcp):
    cpl = smpte_dcp / "cpl_6affb8ee-0020-4dff-a53c-17652f6358ab.xml"
    text = cpl.read_text()
    pic = text.index("<MainPicture>")
    text = text[:pic] + text[pic:].replace("<EntryPoint>0</EntryPoint>", "<EntryPoint>4</EntryPoint>", 1) \
        .replace("<Duration>24</Duration>", "<Duration>20</Duration>", 1)
    cpl.write_text(text)
    with open_source(smpte_dcp) as src, MXFFile(smpte_dcp / "video.mxf") as m:
        assert src.frame_count == 20
        assert src.frame(0) == m.frame(4) and src.frame(19) == m.frame(23)


def test_hash_and_size_mismatch(smpte_dcp):
    audio = smpte_dcp / "audio.mxf"
    data = bytearray(audio.read_bytes())
    data[-100] ^= 0xFF
    audio.write_bytes(bytes(data))
    report = check(smpte_dcp, progress=False)
    assert not report.ok and any("audio.mxf: SHA-1" in p for p in report.problems)
    audio.write_bytes(bytes(data) + b"x")
    report = check(smpte_dcp, progress=False)
    assert any("audio.mxf: 881327 bytes, the PKL says 881326" in p for p in report.problems)
    from cinegpu.player.cli import main
    assert main(["check", "--no-progress", str(smpte_dcp)]) == 1


def test_stale_assetmap_length(smpte_dcp):
    """A CPL changed and its PKL brought up to date (as after re-signing) but not the ASSETMAP:
    its Length is stale, which check reports naming the asset and both sizes (ClairMeta does);
    a Length that is no number is a problem too, and one left out (optional) is not."""
    cpl = smpte_dcp / "cpl_6affb8ee-0020-4dff-a53c-17652f6358ab.xml"
    cpl.write_bytes(cpl.read_bytes() + b"<!-- changed -->\n")
    assert cpl.stat().st_size == 8559 + 17
    pkl = smpte_dcp / "pkl_d199d58b-5ef8-4d49-b270-07e590ccb280.xml"
    pkl.write_text(pkl.read_text()
                   .replace("skI+5b/9LA/y6h0mcyxysJYanxI=", sha1_base64(cpl))
                   .replace("<Size>8559</Size>", f"<Size>{8559 + 17}</Size>"))
    report = check(smpte_dcp, progress=False)
    assert report.problems == [
        f"{cpl.name}: 8576 bytes, the ASSETMAP.xml's Length for asset "
        "6affb8ee-0020-4dff-a53c-17652f6358ab says 8559"], report.text()
    from cinegpu.player.cli import main
    assert main(["check", "--no-progress", str(smpte_dcp)]) == 1
    assetmap = smpte_dcp / "ASSETMAP.xml"
    text = assetmap.read_text()
    assetmap.write_text(text.replace("<Length>8559</Length>", "<Length>lots</Length>"))
    assert [p for p in check(smpte_dcp, progress=False).problems if "Length" in p] == [
        f"{cpl.name}: the ASSETMAP.xml's Length for asset 6affb8ee-0020-4dff-a53c-17652f6358ab "
        "is not a number of bytes: 'lots'"]
    assetmap.write_text(text.replace("<Length>8559</Length>", ""))
    assert check(smpte_dcp, progress=False).ok


def test_not_media(tmp_path):
    junk = patched(tmp_path, b"\x00" * 100, "junk.mxf")
    with pytest.raises(MediaError, match="not an MXF file"):
        open_source(junk)
    with pytest.raises(MediaError, match="not a JPEG 2000 codestream"):
        parse_profile(b"\x00\x01\x02\x03")
    with pytest.raises(MediaError, match="no such file"):
        open_source(tmp_path / "nothing")
    xml = patched(tmp_path, b"<a/>", "x.xml")
    with pytest.raises(MediaError, match="XML root <a>"):
        describe(xml)


def test_truncated_codestream_headers():
    cs = (SAMPLES / "libdcp-dcp_test1-smpte-2k" / "video.mxf").read_bytes()
    with MXFFile(SMPTE / "video.mxf") as m:
        cs = m.frame(0)
    for cut in range(0, 200, 7):
        with pytest.raises(MediaError):
            parse_profile(cs[:cut])


def sample_frame() -> bytes:
    with MXFFile(SMPTE / "video.mxf") as m:
        return m.frame(0)


def jp2_of(cs: bytes) -> bytes:
    """A minimal JP2 file around ``cs``: signature, ftyp, an empty jp2h, jp2c."""
    def box(kind, body):
        return struct.pack(">I4s", 8 + len(body), kind) + body
    return (b"\x00\x00\x00\x0cjP  \r\n\x87\n" + box(b"ftyp", b"jp2 \x00\x00\x00\x00jp2 ")
            + box(b"jp2h", b"") + box(b"jp2c", cs))


def test_profile_of_a_jp2_file_is_its_codestream_s():
    cs = sample_frame()
    raw, wrapped = parse_profile(cs), parse_profile(jp2_of(cs))
    assert wrapped.summary() == raw.summary() and wrapped.markers == raw.markers
    assert wrapped.dci_problems() == raw.dci_problems() == ("DCI 2K", [])
    base = len(jp2_of(b""))                       # where the codestream starts in the file
    with pytest.raises(MediaError, match="SIZ must follow SOC") as info:
        parse_profile(jp2_of(cs[:2] + cs[4:]), "x.jp2")
    assert info.value.offset == base + 2 and info.value.path == "x.jp2"
    no_jp2c = jp2_of(cs)[:base - 8]
    with pytest.raises(MediaError, match="JP2 file without a contiguous codestream box"):
        parse_profile(no_jp2c)


def test_profile_wants_eoc():
    cs = sample_frame()
    assert cs[-2:] == b"\xff\xd9"
    with pytest.raises(MediaError, match="codestream ends without EOC") as info:
        parse_profile(cs[:-2])
    assert info.value.offset == len(cs) - 2


def test_profile_reads_reserved_markers_as_the_decoder_does():
    """A reserved marker without a segment (0xFF30..0xFF3F, T.800 A.1.3) is skipped."""
    cs = sample_frame()
    cut = 2 + 2 + struct.unpack(">H", cs[4:6])[0]   # after SIZ
    prof = parse_profile(cs[:cut] + b"\xff\x30" + cs[cut:])
    assert prof.markers == parse_profile(cs).markers and prof.dci_problems()[1] == []


@pytest.mark.parametrize("sample", ["libdcp-dcp_test1-smpte-2k/video.mxf",
                                    "libdcp-dcp_test3-interop-2k/j2c_c6035f97-b07d-4e1c-944d-603fc2ddc242.mxf",
                                    "photon-imf-phdr-4k-j2k/VIDEO_23e9a145-f2da-4183-86b2-1c399db41afb.mxf"])
def test_fuzz_mxf_headers(tmp_path, sample):
    """Mutated header metadata, partition packs, index tables and RIP: only MediaError, quickly."""
    data = (SAMPLES / sample).read_bytes()
    with MXFFile(SAMPLES / sample) as m:
        hot = [(0, 6000)] + [(p.offset, p.offset + 200) for p in m.partitions] + \
              [(s.offset, s.offset + 420) for s in m.index_segments] + [(len(data) - 60, len(data))]
    rng = random.Random(1234)
    p = tmp_path / "fuzz.mxf"
    raised = 0
    for i in range(150):
        buf = bytearray(data)
        for _ in range(rng.choice((1, 1, 2, 4, 16))):
            lo, hi = rng.choice(hot)
            at = rng.randrange(lo, min(hi, len(buf)))
            buf[at] = rng.choice((0, 0xFF, 0x80, 0x7F, rng.randrange(256), buf[at] ^ (1 << rng.randrange(8))))
        if rng.random() < 0.1:
            buf = buf[:rng.randrange(len(buf))]
        p.write_bytes(bytes(buf))
        t0 = time.perf_counter()
        try:
            with open_source(p) as src:
                for n in range(min(src.frame_count, 30)):
                    src.frame(n)
                    src.frame_size(n)
            describe(p)
        except MediaError:
            raised += 1
        assert time.perf_counter() - t0 < 2.0, f"mutation {i} took too long"
    assert raised > 10


def test_imf_repeat_count_and_entry_point(tmp_path):
    src = SAMPLES / "photon-imf-phdr-4k-j2k"
    dst = tmp_path / "imf"
    shutil.copytree(src, dst)
    cpl = next(dst.glob("CPL_*.xml"))
    text = cpl.read_text()
    image = text.index("<cc:MainImageSequence")
    head, tail = text[:image], text[image:]
    tail = tail.replace("<EntryPoint>0</EntryPoint>", "<EntryPoint>20</EntryPoint>", 1) \
        .replace("<SourceDuration>24</SourceDuration>",
                 "<SourceDuration>3</SourceDuration><RepeatCount>2</RepeatCount>", 1)
    cpl.write_text(head + tail)
    with open_source(dst) as s, MXFFile(next(dst.glob("VIDEO_*.mxf"))) as m:
        assert s.kind == "imf" and s.frame_count == 6
        assert [s.frame(n) for n in range(6)] == [m.frame(k) for k in (20, 21, 22, 20, 21, 22)]

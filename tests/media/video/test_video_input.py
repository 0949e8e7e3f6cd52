"""Video files in for mastering (:mod:`cinegpu.media.video`): frame count, frame accuracy in any
order (against ffmpeg's own decode of each frame), bit depth kept, pickling, colour tags, the
frame-rate rules, bad files as one MediaError, the file's sound, and ``cinegpu master clip.mov``
end to end.  The clips are made by the ``ffmpeg`` command (used only to make them and to decode
reference frames); the library reads them through PyAV."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from cinegpu.media import CorruptMedia, MediaError, UnsupportedMedia
from helpers.sound_util import s24le

av = pytest.importorskip("av", minversion="18", reason="PyAV 18+ (pip install av) reads video files")
pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None,
                                reason="the ffmpeg command makes the test clips")

from cinegpu.media.video.frames import _decoder, open_video  # noqa: E402  (after the PyAV skip)
from cinegpu.media.video.sound import video_sound  # noqa: E402  (after the PyAV skip)

SIZE = "256x144"
TAGS = "setparams=colorspace=bt709:color_primaries=bt709:color_trc=bt709:range=tv"
#: six distinct tones, 5.1
TONES = "aevalsrc=" + "|".join(f"0.4*sin({220 * (c + 1)}*2*PI*t)" for c in range(6)) + \
    ":s=48000:c=5.1"


def _ffmpeg(*args: str) -> None:
    run = subprocess.run(["ffmpeg", "-v", "error", "-y", *args], capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr.decode()[-1500:]


def _testsrc(rate: str = "24", frames: int = 48, size: str = SIZE) -> list[str]:
    """The moving test pattern (a frame counter in it), ``frames`` frames of it."""
    return ["-f", "lavfi", "-i", f"testsrc2=size={size}:rate={rate},trim=end_frame={frames}"]


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> dict[str, Path]:
    """The clips, made once: ProRes 422 HQ 10-bit + 5.1 PCM (.mov), H.264 8-bit + stereo AAC
    with B-frames (.mp4), FFV1 16-bit R'G'B' with a keyframe every 10 frames (.mkv), H.264 at
    24000/1001 (.mp4), variable-rate ones (.mp4, .mkv), a DNxHR .mxf."""
    d = tmp_path_factory.mktemp("clips")
    c = {k: d / n for k, n in (("prores", "pr.mov"), ("h264", "h.mp4"), ("ffv1", "f.mkv"),
                                ("ntsc", "n.mp4"), ("vfr_mp4", "v.mp4"), ("vfr_mkv", "v.mkv"),
                                ("dnxhr", "d.mxf"))}
    _ffmpeg(*_testsrc(), "-f", "lavfi", "-i", TONES, "-t", "2", "-vf", TAGS, "-c:v", "prores_ks",
            "-profile:v", "3", "-pix_fmt", "yuv422p10le", "-c:a", "pcm_s24le", str(c["prores"]))
    _ffmpeg(*_testsrc(), "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000", "-t", "2", "-vf",
            TAGS, "-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "12", "-bf", "2", "-c:a", "aac",
            "-ac", "2", str(c["h264"]))
    _ffmpeg(*_testsrc(), "-c:v", "ffv1", "-g", "10", "-pix_fmt", "gbrp16le", str(c["ffv1"]))
    _ffmpeg(*_testsrc("24000/1001"), "-vf", TAGS, "-c:v", "libx264", "-g", "24", str(c["ntsc"]))
    vfr = "setpts='if(lt(N,24),N/24,N/24+0.02*(N-24))/TB'"
    for k in ("vfr_mp4", "vfr_mkv"):
        _ffmpeg(*_testsrc(), "-vf", vfr, "-fps_mode", "vfr", "-c:v",
                "libx264" if k == "vfr_mp4" else "ffv1", str(c[k]))
    _ffmpeg(*_testsrc(frames=24), "-c:v", "dnxhd", "-profile:v", "dnxhr_hq", "-pix_fmt",
            "yuv422p", str(c["dnxhr"]))
    return c


def _reference(path: Path, k: int, width: int, height: int, matrix: str = "bt709") -> np.ndarray:
    """Frame ``k`` of ``path`` as the ffmpeg command decodes and converts it (rgb48le, the
    same libswscale flags, the matrix and range told), int64 (H, W, 3)."""
    scale = f"scale=in_color_matrix={matrix}:in_range=tv:out_range=pc:" \
            "flags=bicubic+full_chroma_int+accurate_rnd"
    run = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-vf",
                          f"select=eq(n\\,{k}),{scale},format=rgb48le", "-frames:v", "1",
                          "-f", "rawvideo", "-"], capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr.decode()[-1500:]
    return np.frombuffer(run.stdout, "<u2").reshape(height, width, 3).astype(np.int64)


def _planes_420(path: Path, k: int, v) -> np.ndarray:
    """Frame ``k`` of a 4:2:0 8-bit ``path`` as the ffmpeg command decodes it: its planes (bit
    exact by the codec's standard), (H * 3 / 2, W) uint8 as PyAV lays them out.  (Its R'G'B'
    is not compared: PyAV's libswscale sites 4:2:0 chroma by the frame's chroma location,
    ffmpeg 5.1's does not.)"""
    run = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-vf", f"select=eq(n\\,{k})",
                          "-frames:v", "1", "-pix_fmt", "yuv420p", "-f", "rawvideo", "-"],
                         capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr.decode()[-1500:]
    return np.frombuffer(run.stdout, np.uint8).reshape(v.height * 3 // 2, v.width)


# -- the picture -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,count,rate,bits,codec", [
    ("prores", 48, Fraction(24), 10, "prores"),
    ("h264", 48, Fraction(24), 8, "h264"),
    ("ffv1", 48, Fraction(24), 16, "ffv1"),
    ("ntsc", 48, Fraction(24000, 1001), 8, "h264"),
    ("dnxhr", 24, Fraction(24), 8, "dnxhd"),
])
def test_the_facts_of_each_clip(clips, name, count, rate, bits, codec):
    v = open_video(clips[name])
    assert (v.count, v.rate, v.bits, v.codec, v.width, v.height) == \
        (count, rate, bits, codec, 256, 144)
    assert isinstance(v.rate, Fraction) and len(v) == count
    first = v(0)
    assert first.dtype == np.uint16 and first.shape == (144, 256, 3)


@pytest.mark.parametrize("name", ["prores", "h264", "ffv1", "ntsc", "dnxhr"])
def test_frames_in_any_order_are_the_frames_in_order(clips, name):
    """Random-order reads equal sequential reads, from a pickled copy (as an encoder process
    gets it) too; every frame differs from the next (none repeated, none skipped)."""
    v = open_video(clips[name])
    in_order = [v(i) for i in range(v.count)]
    copy = pickle.loads(pickle.dumps(v))
    assert copy == v
    for i in np.random.default_rng(5).permutation(v.count):
        assert np.array_equal(copy(int(i)), in_order[i]), i
    assert all(not np.array_equal(a, b) for a, b in zip(in_order, in_order[1:]))


def test_threads_reading_a_few_frames_apart_make_no_seek(clips, tmp_path):
    """Mastering's threads each ask for their next frame, a few apart: an intra-only stream
    (ProRes) is decoded forward across the gap, the frames between kept for the threads that
    ask next, rather than sought (a seek flushes libavcodec's frame threads)."""
    from concurrent.futures import ThreadPoolExecutor
    clip = tmp_path / "own.mov"             # a decoder of its own, no frames kept by other tests
    shutil.copyfile(clips["prores"], clip)
    v = open_video(clip)
    assert v.intra
    order = [3, 1, 2, 6, 4, 5, 7, 12, 8, 9, 10, 11]
    reader = _decoder(v, os.getpid())
    got = {0: v(0)}             # positioned at the start (a seek, unless there already)
    seeks = reader.seeks
    pools = [ThreadPoolExecutor(1) for _ in range(6)]      # six threads, in turn
    try:
        for k, i in enumerate(order):
            got[i] = pools[k % 6].submit(v, i).result()
    finally:
        for pool in pools:
            pool.shutdown()
    assert reader.seeks == seeks
    in_order = [v(i) for i in range(13)]
    assert all(np.array_equal(got[i], in_order[i]) for i in range(13))


def _counted_reader(clips, tmp_path):
    """A copy of the ProRes clip opened (a decoder of its own, no frames kept by other tests),
    its process's reader, and the list its decoded frames are added to as they come."""
    clip = tmp_path / "own.mov"
    shutil.copyfile(clips["prores"], clip)
    v = open_video(clip)
    reader = _decoder(v, os.getpid())
    decoded = []
    frames = reader._frames

    def counted():
        for frame in frames():
            decoded.append(frame)
            yield frame
    reader._frames = counted
    return v, reader, decoded


def test_a_process_asking_every_sixteenth_frame_seeks_rather_than_decode_the_others(clips, tmp_path):
    """Mastering's encoder processes take turns: one of them asks for frames many apart, and
    the frames between are other processes'. An intra-only stream is sought to each, not
    decoded forward across the others' frames (work thrown away)."""
    v, reader, decoded = _counted_reader(clips, tmp_path)
    got = [v(i) for i in (3, 19, 35)]
    # each seek lands on the frame before (a quarter frame early, then the keyframe before)
    assert reader.seeks == 3 and len(decoded) == 6 and set(reader.ahead) <= {2, 18, 34}
    assert np.array_equal(got[1], open_video(clips["prores"])(19))


def test_an_encoder_process_dealt_runs_decodes_its_own_frames_only(clips, tmp_path):
    """One encoder process of four, four threads, reading the frames mastering's dealer gives
    it: dealt in runs (a video file's way, ``VideoFrames.sequential``) it decodes its runs
    and a frame before each; dealt one by one (every fourth frame) it decodes more, other
    processes' frames among them (how many depends on the order its threads ask in)."""
    from concurrent.futures import ThreadPoolExecutor

    from cinegpu.jobs.frame_dealing import FrameDealer
    from helpers.dealing import deal_all

    counts = {}
    for runs in (True, False):
        folder = tmp_path / ("runs" if runs else "one-by-one")
        folder.mkdir()
        v, _, decoded = _counted_reader(clips, folder)
        assert v.sequential
        mine = deal_all(FrameDealer(4, 8, 4 if runs else 1), v.count)[0]
        with ThreadPoolExecutor(4) as pool:
            got = list(pool.map(v.planes, mine))
        assert len(got) == len(mine) >= 8
        runs_of_mine = 1 + sum(b != a + 1 for a, b in zip(mine, mine[1:]))
        counts[runs] = (len(mine), len(decoded))
        if runs:
            assert len(decoded) <= len(mine) + 2 * runs_of_mine, (mine, len(decoded))
        else:
            assert len(decoded) > len(mine), (mine, len(decoded))
    # per frame of its own, the process dealt one by one decodes more than the one dealt runs
    assert counts[False][1] * counts[True][0] > counts[True][1] * counts[False][0], counts


@pytest.mark.parametrize("name,matrix", [("prores", "bt709"), ("h264", "bt709"),
                                         ("ffv1", "bt709"), ("ntsc", "bt709")])
def test_each_frame_is_the_one_ffmpeg_decodes(clips, name, matrix):
    """Frames 0, 13, 30 and the last are ffmpeg's decode of that frame number (within 1/256
    of the 16-bit range; 0 here), and nearer it than their neighbours are."""
    v = open_video(clips[name])
    planes = v.decoded if v.pix_fmt == "yuv420p" else None
    for k in (0, 13, 30, v.count - 1):
        if planes is not None:           # the decoded frame itself (v(k) converts it)
            ref = _planes_420(clips[name], k, v).astype(np.int64)
            got = planes(k).to_ndarray().astype(np.int64)
            assert np.array_equal(got, ref), k
            assert all(not np.array_equal(planes(j).to_ndarray(), ref)
                       for j in (k - 1, k + 1) if 0 <= j < v.count), k
            continue
        ref = _reference(clips[name], k, v.width, v.height, matrix)
        got = v(k).astype(np.int64)
        err = np.abs(got - ref)
        assert err.max() <= 256, k
        for j in (k - 1, k + 1):
            if 0 <= j < v.count:
                assert np.abs(v(j).astype(np.int64) - ref).mean() > 4 * err.mean() + 200, (k, j)


def test_more_threads_than_the_window_decode_forward_too(clips, tmp_path):
    """Many reader threads (24): the window decoded forward grows to one more than the threads
    counted, so a thread asking 22 frames past the next one is served by decoding forward,
    and the frames between wait for the others."""
    from concurrent.futures import ThreadPoolExecutor
    clip = tmp_path / "own.mov"             # a decoder of its own, no frames kept by other tests
    shutil.copyfile(clips["prores"], clip)
    v = open_video(clip)
    reader = _decoder(v, os.getpid())
    v(0)
    seeks = reader.seeks
    pools = [ThreadPoolExecutor(1) for _ in range(24)]     # 24 lasting threads

    def ask(thread: int, i: int):
        pools[thread].submit(v.planes, i).result()
    try:
        for i in range(1, 25):      # each thread its frame, in turn
            ask(i - 1, i)
        assert reader.seeks == seeks and len(reader.readers) == 25 and reader.forward == 2
        ask(0, 47)                  # 22 past the next (25): forward, 25..46 kept
        for i in range(25, 47):
            ask(i - 24, i)
    finally:
        for pool in pools:
            pool.shutdown()
    assert reader.seeks == seeks


def test_an_edit_list_that_leaves_frames_out_is_followed(clips, tmp_path):
    """An MP4 cut without re-encoding (``-ss`` with ``-c copy``: the samples from the keyframe
    before, an edit list showing from the cut): the frames ffmpeg shows, not the samples."""
    cut = tmp_path / "cut.mp4"
    _ffmpeg("-ss", "0.6", "-i", str(clips["h264"]), "-an", "-c", "copy", str(cut))
    run = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v",
                          "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", str(cut)],
                         capture_output=True, text=True, timeout=60)
    v = open_video(cut)
    assert v.count == int(run.stdout) < 48
    for k in (0, v.count - 1):
        assert np.array_equal(v.decoded(k).to_ndarray(), _planes_420(cut, k, v)), k


def test_ten_bits_stay_ten_bits(tmp_path):
    """A grey ramp of 1024 steps: from ProRes 10-bit more than 256 levels come back (about
    876, its narrow range), from H.264 8-bit at most 256."""
    ramp = ["-f", "lavfi", "-i", "nullsrc=s=1024x32:r=24,format=gray16le,geq=lum='X*64'",
            "-frames:v", "2"]
    ten, eight = tmp_path / "ramp.mov", tmp_path / "ramp.mp4"
    _ffmpeg(*ramp, "-vf", TAGS, "-c:v", "prores_ks", "-profile:v", "3", "-pix_fmt",
            "yuv422p10le", str(ten))
    _ffmpeg(*ramp, "-vf", TAGS, "-c:v", "libx264", "-qp", "0", "-pix_fmt", "yuv444p", str(eight))
    levels = {p.suffix: len(np.unique(open_video(p)(0)[8:24, :, 1])) for p in (ten, eight)}
    assert levels[".mov"] > 800 and levels[".mp4"] <= 256, levels


@pytest.mark.parametrize("tags,colorspace", [
    ("", "rec709"),
    (TAGS, "rec709"),
    ("setparams=color_primaries=smpte432:color_trc=bt709:colorspace=bt709", "p3d65"),
    ("setparams=color_primaries=smpte431:color_trc=bt709:colorspace=bt709", "dcip3"),
])
def test_colour_tags_map_to_masters_colorspaces(tmp_path, tags, colorspace):
    clip = tmp_path / "c.mkv"
    _ffmpeg(*_testsrc(frames=2, size="64x36"), *(["-vf", tags] if tags else []),
            "-c:v", "ffv1", str(clip))
    assert open_video(clip).colorspace == colorspace


@pytest.mark.parametrize("tags,words", [
    ("setparams=color_primaries=bt2020:color_trc=bt709:colorspace=bt2020nc", "BT.2020"),
    ("setparams=color_primaries=bt2020:color_trc=smpte2084:colorspace=bt2020nc", "PQ"),
])
def test_colours_master_does_not_take_are_refused_with_the_way_out(tmp_path, tags, words):
    clip = tmp_path / "c.mkv"
    _ffmpeg(*_testsrc(frames=2, size="64x36"), "-vf", tags, "-c:v", "ffv1", str(clip))
    with pytest.raises(UnsupportedMedia, match=f"{words}.*--colorspace"):
        open_video(clip).colorspace


# -- bad input ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["vfr_mp4", "vfr_mkv"])
def test_a_variable_frame_rate_is_refused(clips, name):
    """Refused when probed (mp4: its average rate; mkv: its last frames off the grid), or at
    the first frame off the grid, naming the file."""
    with pytest.raises(UnsupportedMedia, match="variable frame rate") as e:
        v = open_video(clips[name])
        for i in range(v.count):
            v(i)
    assert e.value.path == str(clips[name])


def test_bad_files_are_one_media_error(tmp_path, clips):
    data = clips["prores"].read_bytes()
    cut = tmp_path / "cut.mov"                     # moov at the end: nothing to read
    cut.write_bytes(data[:len(data) // 2])
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(bytes(range(256)) * 64)
    sound_only = tmp_path / "sound.mov"
    _ffmpeg("-f", "lavfi", "-i", "sine=f=440:sample_rate=48000", "-t", "1", "-c:a", "pcm_s24le",
            str(sound_only))
    unknown = tmp_path / "unknown.mov"            # ProRes 422 HQ's sample entry renamed
    assert data.count(b"apch") == 1
    unknown.write_bytes(data.replace(b"apch", b"zzzz"))
    for path, kind, words in ((cut, CorruptMedia, "not a video file"),
                              (unknown, UnsupportedMedia, "codec FFmpeg does not decode"),
                              (junk, CorruptMedia, "not a video file"),
                              (sound_only, UnsupportedMedia, "no video stream"),
                              (tmp_path / "none.mov", MediaError, "no such file")):
        with pytest.raises(kind, match=words) as e:
            open_video(path)
        assert e.value.path == str(path)


def test_a_stream_cut_short_is_refused(tmp_path, clips):
    """The index at the front (faststart) and the samples cut: the container's 48 frames are
    not believed; the stream is found to end early."""
    fast = tmp_path / "fast.mov"
    _ffmpeg("-i", str(clips["prores"]), "-c", "copy", "-an", "-movflags", "+faststart", str(fast))
    cut = tmp_path / "cut.mov"
    cut.write_bytes(fast.read_bytes()[:fast.stat().st_size * 2 // 3])
    with pytest.raises(CorruptMedia, match="truncated or damaged") as e:
        v = open_video(cut)
        for i in range(v.count):
            v(i)
    assert e.value.path == str(cut)


def test_a_picture_larger_than_the_limit_is_refused_before_decoding(clips):
    with pytest.raises(UnsupportedMedia, match="256x144 pixels is larger than the 128x72"):
        open_video(clips["prores"], limit=(128, 72))
    with pytest.raises(UnsupportedMedia, match="larger than"):
        open_video(clips["prores"]).within((200, 200))


def test_a_frame_past_the_end_and_a_changed_file_are_media_errors(tmp_path, clips):
    clip = tmp_path / "c.mov"
    shutil.copyfile(clips["prores"], clip)
    v = open_video(clip)
    with pytest.raises(MediaError, match="frame 48"):
        v(48)
    clip.write_bytes(clip.read_bytes()[:-10])
    with pytest.raises(MediaError, match="changed since"):
        pickle.loads(pickle.dumps(v))(3)


# -- the sound --------------------------------------------------------------------------------------
def _pcm(path: Path, channels: int) -> np.ndarray:
    run = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-map", "0:a:0", "-f", "s24le",
                          "-"], capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr.decode()[-1000:]
    return s24le(run.stdout, channels)


def test_the_files_sound_is_its_pcm(clips, tmp_path):
    """5.1 PCM: six channels of a 5.1 input, sample for sample ffmpeg's; the temporary WAV
    goes with the value."""
    from cinegpu.media.sound.wav import read_samples
    s = video_sound(open_video(clips["prores"]), folder=tmp_path, language="en")
    assert (s.layout.name, s.rate, s.frames, s.language) == ("5.1", 48000, 96000, "en")
    assert s.fit(48, 24) is None
    assert np.array_equal(read_samples(s.files[0], 0, s.frames), _pcm(clips["prores"], 6))
    copy = pickle.loads(pickle.dumps(s))           # without the folder's owner
    assert copy == s and copy.folder is None
    folder = Path(s.folder.name)
    del s
    assert not folder.exists()


def test_stereo_aac_goes_into_5_1_and_a_speed_change_follows_the_picture(clips, tmp_path):
    v = open_video(clips["h264"])
    s = video_sound(v, folder=tmp_path)
    assert s.layout.name == "5.1" and "stereo" in s.mapping and s.rate == 48000
    assert abs(s.frames - 96000) < 1024                # AAC's last frame, its priming dropped
    ntsc = video_sound(open_video(clips["prores"]), folder=tmp_path, speed=Fraction(25, 24))
    assert ntsc.source_rate == 50000 and ntsc.rate == 48000          # 4% faster, as PAL
    assert video_sound(open_video(clips["ffv1"])) is None              # no audio stream


# -- cinegpu master ------------------------------------------------------------------------------
def test_a_rate_no_package_takes_is_refused_unless_fps_says(clips, tmp_path, capsys):
    from cinegpu.player.cli import main
    rc = main(["master", str(clips["ntsc"]), "-o", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert "24000/1001 fps (23.976) is not a DCI 2K rate" in err and "--fps" in err
    rc = main(["master", str(clips["vfr_mp4"]), "-o", str(tmp_path / "o"), "--quiet"])
    assert rc == 2 and "variable frame rate" in capsys.readouterr().err


def _job_of(monkeypatch, argv: list[str]):
    """The job ``cinegpu master ARGV`` builds (nothing encoded), its exit status and stderr."""
    from cinegpu.player.cli import main
    jobs = []

    def stand_in(job, **_):
        jobs.append(job)
        raise ValueError("stood in for mastering")
    monkeypatch.setattr("cinegpu.jobs.mastering.master", stand_in)
    rc = main(["master", *map(str, argv), "--title", "t"])
    return (jobs[0] if jobs else None), rc


def test_fps_masters_the_frames_one_for_one_and_the_sound_follows(tmp_path, monkeypatch, capsys):
    """23.976 fps with stereo AAC at --fps 24: 48 frames in, the sound declared at 48048 Hz
    (the same samples 0.1% faster) and converted to 48 kHz; one line says so."""
    clip = tmp_path / "ntsc.mp4"
    _ffmpeg(*_testsrc("24000/1001"), "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000",
            "-t", "2.002", "-c:v", "libx264", "-c:a", "aac", "-ac", "2", str(clip))
    job, rc = _job_of(monkeypatch, [clip, "-o", tmp_path / "o", "--fps", "24"])
    err = capsys.readouterr().err
    assert job is not None, err
    assert job.picture.fps == 24 and job.input.count == 48 and job.picture.colorspace == "rec709"
    assert "mastered one for one at 24 fps: 2.002 s become 2.000 s, its sound follows" in err
    sound = job.composition.sound
    assert (sound.source_rate, sound.rate) == (48048, 48000)


@pytest.mark.parametrize("given,colorspace", [((), "p3d65"), (("--colorspace", "rec709"), "rec709")])
def test_the_files_colour_tags_unless_colorspace_is_given(tmp_path, monkeypatch, capsys, given,
                                                          colorspace):
    clip = tmp_path / "p3.mkv"
    _ffmpeg(*_testsrc(frames=24, size="64x36"), "-vf",
            "setparams=color_primaries=smpte432:color_trc=bt709:colorspace=bt709", "-c:v", "ffv1",
            str(clip))
    job, _ = _job_of(monkeypatch, [clip, "-o", tmp_path / "o", "--quiet", *given])
    assert job is not None, capsys.readouterr().err
    assert (job.picture.colorspace, job.picture.fps, job.composition.sound) == \
        (colorspace, 24, None)


@pytest.mark.slow  # long: 24 frames encoded into a 2K DCP on the CPU (~8 s), then ClairMeta
def test_master_a_prores_clip_with_its_sound(clips, tmp_path, capsys):
    from cinegpu.media import open_source
    from cinegpu.player.cli import main
    from helpers.mastering import clairmeta_ok
    from helpers.sound_util import ffmpeg_pcm
    clip = tmp_path / "clip.mov"
    _ffmpeg(*_testsrc(frames=24), "-f", "lavfi", "-i", TONES, "-t", "1", "-vf", TAGS, "-c:v",
            "prores_ks", "-profile:v", "3", "-pix_fmt", "yuv422p10le", "-c:a", "pcm_s24le",
            str(clip))
    out = tmp_path / "dcp"
    rc = main(["master", str(clip), "-o", str(out), "--quiet", "--backend", "cpu",
               "--title", "t"])
    err = capsys.readouterr().err
    assert rc == 0, err
    with open_source(out) as src:
        assert len(src) == 24
    (pcm,) = out.glob("pcm_*.mxf")
    want = _pcm(clip, 6)
    assert want.shape == (48000, 6) and np.abs(want).max() > 1 << 20
    assert np.array_equal(ffmpeg_pcm(pcm, 6), want)
    assert not list(tmp_path.glob(".cinegpu-sound-*"))
    clairmeta_ok(out)                       # "" where ClairMeta is not installed

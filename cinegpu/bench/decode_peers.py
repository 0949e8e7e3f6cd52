"""Other decoders on this machine, run on the same frames for comparison.

Each peer is timed on whole files, start-up and writing raw output to a
temporary folder included (that is what a user of the tool gets), over a bounded sample
(:data:`SAMPLE_FRAMES` frames, :data:`BUDGET_S` seconds) after one untimed warm-up run; the
caller prints the ratio against our own decode of the same frames.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import re
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class PeerResult:
    name: str
    frames: int
    seconds: float  #: wall time for all frames
    note: str = ""

    @property
    def fps(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else float("inf")


class PeerFailed(Exception):
    """A peer decoder failed on one frame: ``str()`` names the frame, the exit code and the
    last line the tool printed."""


#: At most this many frames of a peer's run are timed (the first ones, in order) ...
SAMPLE_FRAMES = 64
#: ... and no frame is started once its run has taken this many seconds: a peer many times
#: slower than us must not hold a benchmark of thousands of repeated frames for minutes.
BUDGET_S = 20.0


def _run_files(argv_for, files: list[Path], processes: int, budget_s: float = BUDGET_S) -> tuple[int, float]:
    """Run the peer on the first :data:`SAMPLE_FRAMES` of ``files``, ``processes`` at once,
    after one untimed run on the first (the tool and its libraries loaded, as our decoder is
    warmed before its clock), starting no frame once ``budget_s`` seconds have passed:
    (frames decoded, wall seconds)."""
    sample = files[:SAMPLE_FRAMES]
    with tempfile.TemporaryDirectory(prefix="cinegpu-peer-") as tmp:
        def one(k_file) -> int:
            k, f = k_file
            if k >= 0 and time.perf_counter() - t0 > budget_s:
                return 0
            argv = argv_for(f, Path(tmp) / f"out_{k}.raw")
            run = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if run.returncode != 0:
                said = run.stderr.decode(errors="replace").strip().splitlines()
                raise PeerFailed(f"failed on {f.name} (frame {max(k, 0)}): exit code {run.returncode}"
                                 + (f": {said[-1][:200]}" if said else ""))
            return 1

        t0 = time.perf_counter()
        one((-1, sample[0]))                 # warm-up, untimed
        t0 = time.perf_counter()
        if processes <= 1:
            done = sum(one(item) for item in enumerate(sample))
        else:
            with ThreadPoolExecutor(processes) as pool:
                done = sum(pool.map(one, enumerate(sample)))
        return done, time.perf_counter() - t0


def _timed(name: str, argv_for, files: list[Path], processes: int) -> PeerResult:
    """The peer's frames and wall time over a bounded sample of ``files`` (:func:`_run_files`),
    or a result with no frames whose note says where it failed or that it could not start."""
    try:
        frames, seconds = _run_files(argv_for, files, processes)
    except PeerFailed as exc:
        return PeerResult(name, 0, 0.0, note=str(exc))
    except OSError as exc:                   # the tool would not start
        return PeerResult(name, 0, 0.0, note=f"could not start: {exc}")
    return PeerResult(name, frames, seconds)


def opj_decompress(files: list[Path], threads: int = 1, processes: int = 1) -> PeerResult | None:
    """OpenJPEG's ``opj_decompress``: ``threads`` per frame, ``processes`` frames at once."""
    exe = shutil.which("opj_decompress")
    if exe is None:
        return None
    return _timed(f"opj_decompress ({threads} thread{'s' if threads > 1 else ''} x {processes} proc)",
                  lambda f, o: [exe, "-i", str(f), "-o", str(o), "-threads", str(threads), "-quiet"],
                  files, processes)


def ojph_expand(files: list[Path], processes: int = 1, suffix: str = ".ppm") -> PeerResult | None:
    """OpenJPH's ``ojph_expand`` (HTJ2K only, one thread a process): ``processes`` frames at once,
    each written as ``suffix`` says (its writers: ``.ppm`` three components of one size, colour
    transform applied; ``.pgm`` one; ``.yuv`` planar, any sampling, without a colour transform)."""
    exe = shutil.which("ojph_expand")
    if exe is None:
        return None
    return _timed(f"ojph_expand (1 thread x {processes} proc)",
                  lambda f, o: [exe, "-i", str(f), "-o", str(o.with_suffix(suffix))], files, processes)


def have_opj_decompress() -> bool:
    return shutil.which("opj_decompress") is not None


def opj_decode_time(path: Path, threads: int = 1) -> tuple[float | None, float] | None:
    """One ``opj_decompress -threads N`` run on ``path``, writing PGX to a temporary folder:
    (its reported "decode time" in ms, or None where it prints none; the process's wall time
    in ms), or None when it fails or is not installed."""
    exe = shutil.which("opj_decompress")
    if exe is None:
        return None
    with tempfile.TemporaryDirectory(prefix="cinegpu-peer-") as tmp:
        t0 = time.perf_counter()
        run = subprocess.run([exe, "-i", str(path), "-o", str(Path(tmp) / "out.pgx"), "-threads", str(threads)],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        wall = (time.perf_counter() - t0) * 1e3
    if run.returncode != 0:
        return None
    said = re.search(rb"decode time: (\d+(?:\.\d+)?) ms", run.stdout)
    return (float(said.group(1)) if said else None), wall


def _libopenjp2():
    """OpenJPEG's library (what opj_decompress runs) through ctypes, or None where absent."""

    name = ctypes.util.find_library("openjp2") or "libopenjp2.so.7"
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return None
    p, i = ctypes.c_void_p, ctypes.c_int
    for fn, res, args in (
        ("opj_create_decompress", p, [i]),
        ("opj_stream_create_default_file_stream", p, [ctypes.c_char_p, i]),
        ("opj_set_default_decoder_parameters", None, [p]),
        ("opj_setup_decoder", i, [p, p]),
        ("opj_codec_set_threads", i, [p, i]),
        ("opj_read_header", i, [p, p, ctypes.POINTER(p)]),
        ("opj_decode", i, [p, p, p]),
        ("opj_end_decompress", i, [p, p]),
        ("opj_image_destroy", None, [p]),
        ("opj_stream_destroy", None, [p]),
        ("opj_destroy_codec", None, [p]),
    ):
        getattr(lib, fn).restype, getattr(lib, fn).argtypes = res, args
    return lib


@contextmanager
def _opj_decoded(lib, path: Path, threads: int = 1):
    """libopenjp2's decode of ``path``: yields (image pointer, milliseconds of opj_read_header
    + opj_decode + opj_end_decompress, the span opj_decompress reports as its "decode time"),
    or (None, None) where it failed; frees the image, stream and codec after."""

    params = ctypes.create_string_buffer(1 << 16)  # opj_dparameters_t is far smaller
    lib.opj_set_default_decoder_parameters(params)
    stream = lib.opj_stream_create_default_file_stream(str(path).encode(), 1)
    codec = lib.opj_create_decompress(2 if Path(path).suffix.lower() == ".jp2" else 0)  # JP2 / J2K
    image = ctypes.c_void_p()
    try:
        ok = (stream and codec and lib.opj_setup_decoder(codec, params)
              and lib.opj_codec_set_threads(codec, threads))
        t0 = time.perf_counter()
        ok = ok and (lib.opj_read_header(stream, codec, ctypes.byref(image))
                     and lib.opj_decode(codec, stream, image) and lib.opj_end_decompress(codec, stream))
        ms = (time.perf_counter() - t0) * 1e3
        yield (image, ms) if ok else (None, None)
    finally:
        if image:
            lib.opj_image_destroy(image)
        if stream:
            lib.opj_stream_destroy(stream)
        if codec:
            lib.opj_destroy_codec(codec)


def openjpeg_decode_ms(path: Path, threads: int = 1, repeat: int = 5) -> float | None:
    """Milliseconds libopenjp2 takes to decode ``path`` in this process: the median of
    ``repeat`` runs after one untimed run, each timed around ``opj_read_header``, ``opj_decode``
    and ``opj_end_decompress`` (the span opj_decompress reports as its "decode time", to the
    microsecond instead of the millisecond). None: no libopenjp2, or it failed."""
    times = openjpeg_first_and_warm_ms(path, threads, repeat)
    return None if times is None else times[1]


def openjpeg_first_and_warm_ms(path: Path, threads: int = 1, repeat: int = 5) -> tuple[float, float] | None:
    """(milliseconds of libopenjp2's first decode of ``path`` in this process, the median of
    ``repeat`` decodes after it), each timed as :func:`openjpeg_decode_ms` times them. None:
    no libopenjp2, or it failed."""
    lib = _libopenjp2()
    if lib is None:
        return None

    def once() -> float | None:
        with _opj_decoded(lib, path, threads) as (_, ms):
            return ms

    first = once()
    if first is None:
        return None
    times = [once() for _ in range(repeat)]
    return None if None in times else (first, sorted(times)[len(times) // 2])


def openjpeg_components(path: Path) -> list | None:
    """Each component of ``path`` (a .j2c/.j2k codestream, or .jp2) as libopenjp2 decodes it,
    int64 arrays at the component's own size, before any colour conversion (opj_decompress
    turns three components with subsampled chroma into RGB as if they were sYCC; the library
    does not). None: no libopenjp2, or it failed."""

    lib = _libopenjp2()
    if lib is None:
        return None
    u32 = ctypes.c_uint32

    class Comp(ctypes.Structure):       # opj_image_comp_t (OpenJPEG 2.x)
        _fields_ = [("dx", u32), ("dy", u32), ("w", u32), ("h", u32), ("x0", u32), ("y0", u32),
                    ("prec", u32), ("bpp", u32), ("sgnd", u32), ("resno_decoded", u32),
                    ("factor", u32), ("data", ctypes.POINTER(ctypes.c_int32)), ("alpha", ctypes.c_uint16)]

    class Image(ctypes.Structure):      # opj_image_t
        _fields_ = [("x0", u32), ("y0", u32), ("x1", u32), ("y1", u32), ("numcomps", u32),
                    ("color_space", ctypes.c_int), ("comps", ctypes.POINTER(Comp)),
                    ("icc_profile_buf", ctypes.c_void_p), ("icc_profile_len", u32)]

    with _opj_decoded(lib, path) as (image, _):
        if image is None:
            return None
        img = ctypes.cast(image, ctypes.POINTER(Image)).contents
        return [np.ctypeslib.as_array(img.comps[k].data, shape=(img.comps[k].w * img.comps[k].h,))
                .astype(np.int64).reshape(img.comps[k].h, img.comps[k].w) for k in range(img.numcomps)]


def grk_decompress(files: list[Path], threads: int = 1, processes: int = 1) -> PeerResult | None:
    """Grok's ``grk_decompress`` (``-H`` threads)."""
    exe = shutil.which("grk_decompress")
    if exe is None:
        return None
    return _timed(f"grk_decompress ({threads} thread{'s' if threads > 1 else ''} x {processes} proc)",
                  lambda f, o: [exe, "-i", str(f), "-o", str(o), "-H", str(threads)], files, processes)


def nvjpeg2000(frames: list[bytes], batch: int = 1, *, warm_batches: int = 4,
               timed_batches: int = 8) -> PeerResult | None:
    """NVIDIA nvJPEG2000 through nvImageCodec (``nvidia.nvimgcodec``), on the GPU.

    Decodes to device memory, ``batch`` frames per call, the frames taken in turn (cycling
    through ``frames``), every call a whole batch. ``warm_batches`` calls run before the clock
    (the first call of a batch size pays for its set-up, and the peer is warmed at least as
    much as we warm ourselves), then at least ``timed_batches`` calls, and at least one pass
    over ``frames``, are timed. None when the package or a GPU is missing.
    """
    try:
        from nvidia import nvimgcodec  # noqa: PLC0415  (optional: nvImageCodec, probed)
    except Exception:
        return None
    if not frames:
        return PeerResult("nvJPEG2000 (nvImageCodec)", 0, 0.0, note="no frames")
    try:
        import cupy  # noqa: PLC0415  (optional: CuPy)

        dec = nvimgcodec.Decoder()
        position = 0

        def run(calls: int) -> None:
            nonlocal position
            for _ in range(calls):
                chunk = [frames[(position + k) % len(frames)] for k in range(batch)]
                position += batch
                out = dec.decode(chunk) if batch > 1 else [dec.decode(chunk[0])]
                del out
            cupy.cuda.runtime.deviceSynchronize()

        run(max(1, warm_batches))
        calls = max(timed_batches, -(-len(frames) // batch))
        t0 = time.perf_counter()
        run(calls)
        secs = time.perf_counter() - t0
    except Exception as exc:
        return PeerResult("nvJPEG2000 (nvImageCodec)", 0, 0.0, note=f"failed: {exc}")
    return PeerResult(f"nvJPEG2000 (nvImageCodec, batch {batch})", calls * batch, secs)

"""Peer encoders on the same frames: ``opj_compress -cinema2K/-cinema4K`` (OpenJPEG) as the
quality and speed reference of the DCI encoder, ``grk_compress -cinema2K/-cinema4K`` (Grok, its
own thread pool over a folder of frames) and nvJPEG2000 (nvImageCodec) as the speed peers,
``opj_decompress`` as the reference decoder of our codestreams.  Used by the tests and by
:mod:`cinegpu.bench.encode`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cinegpu.decode.codestream import dci

__all__ = ["EncodePeer", "grk_compress_dci", "have_grk", "have_opj", "nvjpeg2000_encode", "opj_compress_dci", "opj_decode", "psnr", "read_pgx", "write_ppm"]


def have_opj() -> bool:
    return all(shutil.which(t) for t in ("opj_compress", "opj_decompress", "opj_dump"))


def have_grk() -> bool:
    return shutil.which("grk_compress") is not None


def read_pgx(path: Path) -> np.ndarray:
    """A PGX file (opj_decompress's per-component output): 'PG ML|LM +|- bits w h\\n' + samples."""
    data = Path(path).read_bytes()
    end = data.index(b"\n")
    m = re.match(rb"PG\s*(ML|LM)\s*([+-])?\s*(\d+)\s+(\d+)\s+(\d+)", data[:end])
    if m is None:
        raise ValueError(f"{path}: not a PGX header")
    order, sign, bits, w, h = m.group(1), m.group(2), int(m.group(3)), int(m.group(4)), int(m.group(5))
    size = 1 if bits <= 8 else 2 if bits <= 16 else 4
    kind = "i" if sign == b"-" else "u"
    dt = np.dtype(f"{'>' if order == b'ML' else '<'}{kind}{size}")
    return np.frombuffer(data[end + 1:end + 1 + w * h * size], dt).reshape(h, w).astype(np.int64)


def opj_decode(data: bytes) -> list[np.ndarray]:
    """Decode a codestream with opj_decompress; one int64 array per component."""
    with tempfile.TemporaryDirectory(prefix="cinegpu-opj-") as tmp:
        src = Path(tmp) / "in.j2c"
        src.write_bytes(data)
        subprocess.run(["opj_decompress", "-i", str(src), "-o", str(Path(tmp) / "out.pgx")],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        files = sorted(Path(tmp).glob("out*.pgx"),
                       key=lambda p: int(re.findall(r"(\d+)", p.stem)[-1]) if "_" in p.stem else 0)
        return [read_pgx(f) for f in files]


def write_ppm(path: Path, image: np.ndarray, maxval: int = 4095) -> None:
    """A binary PPM (P6, 16-bit big-endian samples): what opj_compress reads as 12 bit."""
    h, w, _ = image.shape
    Path(path).write_bytes(b"P6\n%d %d\n%d\n" % (w, h, maxval) + image.astype(">u2").tobytes())


def opj_compress_dci(image: np.ndarray, profile: str, fps: int = 24) -> tuple[bytes, float]:
    """``opj_compress -cinema2K/-cinema4K fps`` on a (H, W, 3) 12-bit image:
    (codestream, seconds of the opj_compress run, file writing included).  ``profile``: a
    DCI profile in either spelling ("dci-2k" or "2k", :func:`cinegpu.decode.codestream.dci.profile`)."""
    profile = dci.profile(profile).name
    flag = {"dci-2k": "-cinema2K", "dci-4k": "-cinema4K"}[profile]
    with tempfile.TemporaryDirectory(prefix="cinegpu-opj-") as tmp:
        src, dst = Path(tmp) / "in.ppm", Path(tmp) / "out.j2c"
        write_ppm(src, image)
        argv = ["opj_compress", "-i", str(src), "-o", str(dst), flag]
        if profile == "dci-2k":
            argv.append(str(fps))
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        secs = time.perf_counter() - t0
        return dst.read_bytes(), secs


def grk_compress_dci(images: list[np.ndarray], profile: str, fps: int = 24,
                     threads: int = 0) -> tuple[list[bytes], float]:
    """``grk_compress -cinema2K/-cinema4K fps`` on (H, W, 3) 12-bit images, all in one run over a
    folder of PPM files (Grok's batch mode, as its users master a sequence; ``-H threads``, 0:
    Grok's default, every core): (codestreams in order, seconds of the grk_compress run, the
    reading of the PPM files and the writing of the codestreams included, the writing of the
    PPM files not).  ``profile`` in either spelling, as :func:`opj_compress_dci`."""
    profile = dci.profile(profile).name
    flag = {"dci-2k": "-w", "dci-4k": "-x"}[profile]  # -cinema2K, -cinema4k
    with tempfile.TemporaryDirectory(prefix="cinegpu-grk-") as tmp:
        src, dst = Path(tmp) / "in", Path(tmp) / "out"
        src.mkdir()
        dst.mkdir()
        names = [f"f{k:06d}" for k in range(len(images))]
        for name, image in zip(names, images):
            write_ppm(src / f"{name}.ppm", image)
        argv = ["grk_compress", "-y", str(src), "-a", str(dst), "-O", "j2k", flag, str(fps)]
        if threads > 0:
            argv += ["-H", str(threads)]
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        secs = time.perf_counter() - t0
        return [(dst / f"{name}.j2k").read_bytes() for name in names], secs


def psnr(reference: np.ndarray, decoded, bits: int = 12) -> float:
    """PSNR in dB over all samples; ``decoded`` an array or list of component arrays."""
    ref = np.asarray(reference, np.float64)
    out = np.stack(decoded, -1) if isinstance(decoded, list) else np.asarray(decoded)
    out = out.reshape(ref.shape).astype(np.float64)
    mse = np.mean((ref - out) ** 2)
    return float("inf") if mse == 0 else float(10 * np.log10(((1 << bits) - 1) ** 2 / mse))


@dataclass
class EncodePeer:
    """One peer encoder's run: frames per second, mean PSNR of what it wrote (decoded by
    cinegpu), its largest codestream, or a note on why it did not run."""

    fps: float = 0.0
    psnr: float = 0.0
    max_bytes: int = 0
    note: str = ""


def nvjpeg2000_encode(frames: list[np.ndarray], batch: int = 1, *, bits: int = 12,
                      target_psnr: float | None = None, ht: bool = False,
                      lossless: bool = False, step: float | None = None,
                      codeblock: tuple[int, int] = (64, 64),
                      resolutions: int = 6, psnr_frames: int | None = None) -> EncodePeer | None:
    """NVIDIA's nvJPEG2000 encoder through nvImageCodec (``nvidia.nvimgcodec``) on frames of
    ``bits``-bit samples held as uint16 (told to it as their precision, so that it codes
    ``bits`` bit-planes as we do), from device memory, ``batch`` frames per call, warmed up
    on the first batch.  ``target_psnr`` (dB against the ``bits``-bit peak): its PSNR
    quality target, to compare speed at the same quality as ours; None: its default lossy
    setting.  It has no byte budget, so it cannot be held to the DCI caps.  ``ht``: its HTJ2K
    encoder (which takes no PSNR target: ``lossless`` (5/3 + RCT) or a quantisation ``step``),
    raw codestreams of ``codeblock`` blocks and ``resolutions`` resolutions, the component
    transform on.  ``psnr_frames``: PSNR over the first that many frames only (None: all;
    0: none, reported as nan).  None when the package or a GPU is missing."""
    try:
        from nvidia import nvimgcodec
        import cupy
    except Exception:  # noqa: BLE001 - probing is quiet
        return None
    from cinegpu.decode import decode
    try:
        enc = nvimgcodec.Encoder()
        dev = [cupy.asarray(f) for f in frames]
        images = [nvimgcodec.as_image(d, precision=bits) for d in dev]
        params = None if target_psnr is None else nvimgcodec.EncodeParams(
            quality_type=nvimgcodec.QualityType.PSNR, quality_value=float(target_psnr))
        if ht:
            j2k = nvimgcodec.Jpeg2kEncodeParams(
                code_block_size=tuple(codeblock), num_resolutions=resolutions,
                bitstream_type=nvimgcodec.Jpeg2kBitstreamType.J2K, mct_mode=1, ht=True)
            quality = (dict(quality_type=nvimgcodec.QualityType.LOSSLESS) if lossless else
                       dict(quality_type=nvimgcodec.QualityType.QUANTIZATION_STEP,
                            quality_value=float(step)))
            params = nvimgcodec.EncodeParams(jpeg2k_encode_params=j2k, **quality)

        def run(chunk):
            if batch > 1:
                return enc.encode(chunk, "jpeg2k", params=params)
            return [enc.encode(chunk[0], "jpeg2k", params=params)]

        run(images[:batch])
        cupy.cuda.runtime.deviceSynchronize()
        t0 = time.perf_counter()
        out = []
        for k in range(0, len(images), batch):
            out += run(images[k:k + batch])
        cupy.cuda.runtime.deviceSynchronize()
        secs = time.perf_counter() - t0
        data = [bytes(o) for o in out]
        k = len(frames) if psnr_frames is None else psnr_frames
        quality = float(np.mean([psnr(f, decode(d)) for f, d in zip(frames[:k], data[:k])])) \
            if k else float("nan")
    except Exception as exc:  # noqa: BLE001 - a peer's failure is reported, not raised
        return EncodePeer(note=f"failed: {type(exc).__name__}: {exc}")
    return EncodePeer(len(frames) / secs, quality, max(map(len, data)))

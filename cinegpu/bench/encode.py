"""DCI encoder benchmark: our encoder against ``opj_compress -cinema2K/-cinema4K`` on
the same synthetic 12-bit X'Y'Z' frames; PSNR of each decoded stream against the
source, frames per second of each, and the ratios.

    python -m cinegpu.bench.encode [--profile dci-2k dci-4k] [--frames N]
        [--backend auto|cpu|cuda] [--workers N] [--threads N] [--processes P T]
        [--opj-processes N] [--grk-threads N] [--nvjpeg2000] [--rate-on auto|cpu|gpu|both]

``cinegpu master`` end to end (image in, DCP out) is timed by :mod:`cinegpu.bench.master`
(the media layer: this module stays below it).

Not a timed test: numbers depend on the machine.  OpenJPEG's time is the
opj_compress process (PPM read and file write included), ``--opj-processes``
frames at once; ours is :meth:`Encoder.encode` from the array, workers warm.

What this benchmark measured, dated, with the machine and the command line of each run (GPU
and CPU, beside OpenJPEG, Grok and nvJPEG2000): docs/performance.md, "DCI encoding and
mastering".
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from cinegpu.decode import decode
from cinegpu.decode.codestream import dci

from cinegpu.encode.encoder import Encoder, EncoderSettings
from cinegpu.bench.encode_peers import grk_compress_dci, have_grk, have_opj, opj_compress_dci, psnr

__all__ = ["opj_encode_frames", "synthetic_frame", "main"]


def synthetic_frame(width: int, height: int, seed: int = 0, bits: int = 12) -> np.ndarray:
    """(height, width, 3) uint16 test content at ``bits``: ramps, a sine field, an XOR
    texture, a checkerboard patch and film-grain-like noise, so the DCI caps bind."""
    rng = np.random.default_rng(seed)
    top = (1 << bits) - 1
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    s = top / 4095.0
    img = np.stack([
        ((x * 2 + y + seed * 7) % 4096) * s,
        (2048 + 1500 * np.sin(x / 37.0 + seed) * np.cos(y / 53.0)) * s,
        ((x.astype(np.int64) ^ y.astype(np.int64)) & 4095) * s,
    ], -1) * 0.8
    img += rng.normal(0, 60 * s, img.shape)
    y0, y1, x0, x1 = height * 5 // 18, height * 13 // 20, width // 4, width * 3 // 4
    board = ((x[y0:y1, x0:x1] // 16 + y[y0:y1, x0:x1] // 16 + seed) % 2) * 400 * s
    img[y0:y1, x0:x1] += board[..., None]
    return np.clip(np.rint(img), 0, top).astype(np.uint16)


def _ours(frames, profile, fps, backend, workers, rate_on_gpu=None):
    with Encoder(EncoderSettings.of(profile=profile, fps=fps, backend=backend, workers=workers,
                                    rate_on_gpu=rate_on_gpu)) as enc:
        enc.encode(frames[0][:256, :256] if profile == "generic" else frames[0], bits=12)  # warm
        t0 = time.perf_counter()
        out = [enc.encode(f, bits=12) for f in frames]
        secs = time.perf_counter() - t0
        return out, secs, enc.timings


def dci_options(profile, fps, backend, rate_on_gpu=None) -> dict:
    """The :meth:`EncoderSettings.of` options of this benchmark's encoders (one tier-1 worker
    each)."""
    return dict(profile=profile, fps=fps, backend=backend, workers=1, rate_on_gpu=rate_on_gpu)


class _ThreadEncoders:
    """A warm :class:`Encoder` per calling thread (and, on the GPU, its own CUDA stream), as
    ``cinegpu master`` runs them, each made with ``options`` (:meth:`EncoderSettings.of`'s):
    ``encode(frame)`` of ``bits``-bit samples; ``close()`` ends them all."""

    def __init__(self, options: dict, bits: int = 12):
        import threading
        self._args, self._bits = dict(options), bits
        self._local, self._made = threading.local(), []

    def encode(self, frame) -> bytes:
        enc = getattr(self._local, "enc", None)
        if enc is None:
            enc = self._local.enc = Encoder(EncoderSettings.of(**self._args))
            self._made.append(enc)
        return enc.encode(frame, bits=self._bits)

    def close(self) -> None:
        for e in self._made:
            e.close()


def _ours_threads(frames, profile, fps, backend, threads, rate_on_gpu=None):
    """Frames spread over ``threads`` threads, each with its own warm encoder
    (:class:`_ThreadEncoders`)."""
    encoders = _ThreadEncoders(dci_options(profile, fps, backend, rate_on_gpu))
    try:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(encoders.encode, frames[:1] * threads * 2))  # warm every thread
            t0 = time.perf_counter()
            out = list(pool.map(encoders.encode, frames))
            secs = time.perf_counter() - t0
    finally:
        encoders.close()
    return out, secs


def opj_encode_frames(frames, profile, fps, processes):
    """``opj_compress -cinema2K/-cinema4K`` on ``frames`` (12-bit X'Y'Z'), ``processes`` at
    once: (codestreams, seconds)."""
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max(1, processes)) as pool:
        out = list(pool.map(lambda f: opj_compress_dci(f, profile, fps)[0], frames))
    return out, time.perf_counter() - t0


def _process_main(shm_name: str, shape, dtype: str, ks, options: dict, threads,
                  ready, go, out, on_device: bool = False) -> None:
    """One encoder process of :func:`ours_processes`: frames ``ks`` of the shared block
    (``on_device``: copied to the GPU first), coded by ``threads`` threads with a warm
    :class:`Encoder` (``options``) each, once ``go`` is set; puts (codestreams by frame,
    wall-clock start, end)."""
    from multiprocessing import shared_memory
    shm = shared_memory.SharedMemory(name=shm_name)
    encoders = _ThreadEncoders(options)
    enc_one = encoders.encode
    try:
        frames = np.ndarray(shape, np.dtype(dtype), buffer=shm.buf)
        mine = {k: frames[k] for k in ks}
        with ThreadPoolExecutor(threads) as pool:
            try:
                if on_device:
                    import cupy  # noqa: PLC0415
                    mine = {k: cupy.asarray(f) for k, f in mine.items()}
                list(pool.map(enc_one, [mine[ks[0]]] * threads * 2))  # warm every thread
            except Exception as exc:
                ready.put(f"{type(exc).__name__}: {exc}")
                raise
            ready.put(None)
            go.wait()
            t0 = time.time()
            coded = list(pool.map(enc_one, (mine[k] for k in ks)))
            t1 = time.time()
        del frames, mine
        out.put((dict(zip(ks, coded)), t0, t1))
    finally:
        encoders.close()
        shm.close()


def ours_processes(frames, options: dict, processes: int, threads: int,
                   on_device: bool = False):
    """Frames (12-bit) dealt out to ``processes`` spawned processes of ``threads`` threads each
    (one warm :class:`Encoder` made with ``options`` a thread), read from one shared-memory
    block (``on_device``: each process copies its frames to the GPU before the clock, as
    GPU-memory rows compare), all started together after every thread is warm: (codestreams
    in order, seconds from the first start to the last end), as ``cinegpu master`` runs its
    encoder processes on a long job."""
    import multiprocessing as mp
    from multiprocessing import shared_memory
    block = np.stack(frames)
    shm = shared_memory.SharedMemory(create=True, size=block.nbytes)
    try:
        np.ndarray(block.shape, block.dtype, buffer=shm.buf)[:] = block
        ctx = mp.get_context("spawn")
        ready, out, go = ctx.Queue(), ctx.Queue(), ctx.Event()
        procs = [ctx.Process(target=_process_main, daemon=True,
                             args=(shm.name, block.shape, block.dtype.str,
                                   list(range(p, len(frames), processes)), options,
                                   threads, ready, go, out, on_device))
                 for p in range(processes)]
        for pr in procs:
            pr.start()
        for _ in procs:
            failed = ready.get(timeout=600)
            if failed is not None:
                for pr in procs:
                    pr.kill()
                raise RuntimeError(f"an encoder process failed while warming up: {failed}")
        go.set()
        res = [out.get(timeout=600) for _ in procs]
        for pr in procs:
            pr.join()
    finally:
        shm.close()
        shm.unlink()
    coded = {k: v for r in res for k, v in r[0].items()}
    return [coded[k] for k in range(len(frames))], max(r[2] for r in res) - min(r[1] for r in res)


def run(profile: str, frames: int, fps: int, backend: str, workers: int, processes: int,
        threads: int = 0, nvjpeg2000: bool = False, rate_on_gpu=None, grk_threads: int = 0,
        encoder_processes: tuple[int, int] | None = None, emit=print) -> dict:
    """One profile's row, each part printed through ``emit`` as soon as it is measured (a
    progress line before each); ``rate_on_gpu`` as :class:`Encoder`'s, or "both": each, in
    turn, the second's figures under "gpu_rate" (and its codestreams checked identical).
    ``encoder_processes`` (P, T): also in P processes of T threads (:func:`ours_processes`).
    The peers, where installed: opj_compress in ``processes`` processes, grk_compress over the
    frames in ``grk_threads`` threads (0: all cores), nvJPEG2000 when ``nvjpeg2000``."""
    w, h = dci.PROFILES[profile].container
    src = [synthetic_frame(w, h, seed=k) for k in range(frames)]
    first = False if rate_on_gpu == "both" else rate_on_gpu
    emit(f"{profile}: {frames} frames")
    emit("  ... cinegpu, one encoder")
    ours, t_ours, stages = _ours(src, profile, fps, backend, workers, first)
    p_ours = np.mean([psnr(s, decode(d)) for s, d in zip(src, ours)])
    row = {"profile": profile, "frames": frames, "ours_fps": frames / t_ours,
           "ours_psnr": p_ours, "ours_bytes": max(len(d) for d in ours), "stages": stages}
    emit(f"  cinegpu       PSNR {p_ours:.2f} dB  {row['ours_fps']:.3f} fps  max {row['ours_bytes']} bytes  "
         "stages (last frame, s): " + ", ".join(f"{k} {v:.3f}" for k, v in stages.items()))
    if threads > 1:
        emit(f"  ... cinegpu, {threads} threads")
        par, t_par = _ours_threads(src, profile, fps, backend, threads, first)
        row.update(threads=threads, par_fps=frames / t_par,
                   par_psnr=np.mean([psnr(s, decode(d)) for s, d in zip(src, par)]),
                   par_bytes=max(len(d) for d in par))
        emit(f"  cinegpu x{threads} threads  PSNR {row['par_psnr']:.2f} dB  {row['par_fps']:.3f} fps  "
             f"max {row['par_bytes']} bytes")
    if encoder_processes:
        pp, pt = encoder_processes
        emit(f"  ... cinegpu, {pp} processes x {pt} threads")
        coded, t_pp = ours_processes(src, dci_options(profile, fps, backend, first), pp, pt)
        row.update(proc=(pp, pt), proc_fps=frames / t_pp, proc_same=coded == ours,
                   proc_bytes=max(len(d) for d in coded))
        emit(f"  cinegpu {pp} processes x {pt} threads  {row['proc_fps']:.3f} fps  max {row['proc_bytes']} "
             f"bytes  same codestreams as one encoder: {row['proc_same']}")
    if rate_on_gpu == "both":
        emit("  ... cinegpu, rate control on the GPU")
        again, t_again, st = _ours(src, profile, fps, backend, workers, True)
        g = {"fps": frames / t_again, "stages": st, "same": again == ours}
        if threads > 1:
            par2, t_par2 = _ours_threads(src, profile, fps, backend, threads, True)
            g.update(par_fps=frames / t_par2, par_same=par2 == par)
        row["gpu_rate"] = g
        emit("  (above: rate control on the CPU) rate control on the GPU: "
             f"{g['fps']:.3f} fps" + (f", x{threads} threads {g['par_fps']:.3f} fps" if "par_fps" in g else "")
             + f"  same codestreams: {g['same'] and g.get('par_same', True)}  stages: "
             + ", ".join(f"{k} {v:.3f}" for k, v in g["stages"].items()))
    best = max(row["ours_fps"], row.get("par_fps", 0.0), row.get("proc_fps", 0.0),
               *(() if "gpu_rate" not in row else (row["gpu_rate"]["fps"], row["gpu_rate"].get("par_fps", 0.0))))
    if nvjpeg2000:
        _nvjpeg2000_rows(src, p_ours, best, row, emit)
    if have_opj():
        emit(f"  ... opj_compress, {processes} processes")
        theirs, t_opj = opj_encode_frames(src, profile, fps, processes)
        row.update(opj_fps=frames / t_opj,
                   opj_psnr=np.mean([psnr(s, decode(d)) for s, d in zip(src, theirs)]),
                   opj_bytes=max(len(d) for d in theirs))
        emit(f"  opj_compress  PSNR {row['opj_psnr']:.2f} dB  {row['opj_fps']:.3f} fps  max {row['opj_bytes']} bytes")
        emit(f"  ratio         PSNR {p_ours - row['opj_psnr']:+.2f} dB  speed x{best / row['opj_fps']:.2f}")
    if have_grk():
        emit(f"  ... grk_compress, {grk_threads or 'all'} threads")
        theirs, t_grk = grk_compress_dci(src, profile, fps, grk_threads)
        row.update(grk_fps=frames / t_grk,
                   grk_psnr=np.mean([psnr(s, decode(d)) for s, d in zip(src, theirs)]),
                   grk_bytes=max(len(d) for d in theirs))
        emit(f"  grk_compress  PSNR {row['grk_psnr']:.2f} dB  {row['grk_fps']:.3f} fps  max {row['grk_bytes']} "
             f"bytes  ours/theirs PSNR {p_ours - row['grk_psnr']:+.2f} dB  speed x{best / row['grk_fps']:.2f}")
    return row


def _nvjpeg2000_rows(src, p_ours: float, best: float, row: dict, emit) -> None:
    """nvJPEG2000 at its default quality and held to our PSNR (precision 12 bits, as ours), in
    batches of 1 and 16, each printed as measured; nothing where nvImageCodec or a GPU is
    missing."""
    from cinegpu.bench.encode_peers import nvjpeg2000_encode
    for batch, label, target in ((1, "", None), (1, "_same", p_ours), (16, "", None), (16, "_same", p_ours)):
        what = f"nvJPEG2000 batch {batch} " + ("PSNR target = ours" if target else "default quality")
        emit(f"  ... {what}")
        res = nvjpeg2000_encode(src, batch, target_psnr=target)
        if res is None:          # no nvImageCodec or no GPU: no row, and no more tries
            emit("  nvJPEG2000: nvImageCodec or a GPU missing")
            return
        row[f"nvj_{batch}{label}"] = res
        emit(f"  {what}  {res.note}" if res.fps == 0 else (
            f"  {what}  PSNR {res.psnr:.2f} dB  {res.fps:.3f} fps  max {res.max_bytes} bytes  "
            f"ours/theirs x{best / res.fps:.2f}"))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", nargs="+", default=["dci-2k", "dci-4k"])
    ap.add_argument("--frames", type=int, default=2)
    ap.add_argument("--fps", type=int, default=24)
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--opj-processes", type=int, default=1)
    ap.add_argument("--grk-threads", type=int, default=0,
                    help="grk_compress's thread count (0: all cores)")
    ap.add_argument("--threads", type=int, default=0,
                    help="also encode the frames in N threads, one warm encoder each")
    ap.add_argument("--processes", type=int, nargs=2, default=None, metavar=("P", "T"),
                    help="also encode the frames in P processes of T threads each")
    ap.add_argument("--rate-on", choices=["auto", "cpu", "gpu", "both"], default="auto",
                    help="PCRD-opt on the CPU or the GPU (auto: where tier-1 ran), or both "
                         "in turn (their codestreams compared)")
    ap.add_argument("--nvjpeg2000", action="store_true",
                    help="also time NVIDIA's nvJPEG2000 encoder (nvImageCodec), if importable")
    a = ap.parse_args(argv)
    for profile in a.profile:
        rate = {"auto": None, "cpu": False, "gpu": True, "both": "both"}[a.rate_on]
        run(profile, a.frames, a.fps, a.backend, a.workers or 1, a.opj_processes, a.threads, a.nvjpeg2000, rate,
            a.grk_threads, a.processes, emit=lambda line: print(line, flush=True))

if __name__ == "__main__":
    main()

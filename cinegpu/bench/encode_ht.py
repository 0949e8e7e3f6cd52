"""HTJ2K encoder benchmark: ours (the numba HT block coder on the CPU, or the CUDA kernel on the
GPU, in N threads) against ``ojph_compress``, ``grk_compress -M 64`` and nvJPEG2000's HT encoder
on the same synthetic 12-bit RGB frames, in one run.

    python -m cinegpu.bench.encode_ht [--size 2k|4k] [--frames N] [--distinct K]
        [--backend auto|cpu|cuda] [--threads N] [--workers N] [--budget BYTES] [--nvjpeg2000]
        [--kernels-only] [--repeat N] [--processes P T [P T ...]] [--no-budget]

Rows (5 levels, 64 x 64 blocks for every encoder):

* lossless (5/3 + RCT): ours, OpenJPH (one process a frame, ``--threads`` at once), Grok (one
  run over a folder of the frames, ``--threads`` threads), nvJPEG2000 HT (``--nvjpeg2000``:
  batches of 1 and 16, from device memory);
* 9/7 + ICT at a byte budget (``--budget``, default: the lossless size / 8): ours in its
  byte-budget mode, and ours in its quantisation mode (no budget, ``base_step`` bisected to
  the largest stream within the budget); OpenJPH (``-qstep``) and nvJPEG2000 HT (its
  quantisation step) bisected the same way, so PSNR compares at about equal sizes.  Grok 10
  ignores ``-r``/``-q`` with ``-M 64``, so it appears in the lossless row only.

On the GPU, "kernel" rows first compare the two cleanup-pass kernels of
:mod:`.tier1.ht_gpu` on the frame's own coefficients (the forward stage run once, every block
at plane 0): ``ht_enc_blocks`` (one thread a code-block) and ``ht_enc_blocks_warp`` (one warp
a code-block, T.814 clause 7 split over the lanes), each as ms per frame and fps of the coding
kernels alone (CUDA events, ``--repeat`` runs) and of the whole ``ht_encode_rows_cuda`` (with
the lengths' read-back, gather and download), lossless and 9/7; the two must give the same
bytes.  ``--kernels-only`` stops there; otherwise the lossless rows also show the whole
encoder with ``EncoderSettings(ht_kernel="thread")`` beside the default (the warp kernel).

``--processes P T``: ours also in P spawned processes of T threads each (one warm encoder a
thread, frames from one shared-memory block, :func:`.bench.ours_processes`, as ``cinegpu
master`` runs its encoder processes; on the GPU also with each process's frames copied to
GPU memory first), for the lossless and the quantisation rows; the bytes must equal one
encoder's.  Several pairs give several rows.  ``--no-budget`` leaves out the
byte-budget row.

Every stream is decoded with :func:`cinegpu.decode.decode` for PSNR (the peers decode our
streams to the same samples: tests/test_ht_encode.py).  The peers' times are their processes
(PPM read, file write); ours is :meth:`Encoder.encode` from host arrays, warm (on the GPU also
from device arrays: "from GPU memory").  Frames cycle over ``--distinct`` different images.
Not a timed test: numbers depend on the machine.

Measured on the 2-core development machine (no GPU), 2K, 2 frames, ``--workers 2``:

    lossless  cinegpu        5483254 bytes   5.68 fps  exact
    lossless  ojph_compress  5481687 bytes   9.57 fps  exact
    lossless  grk -M 64      5481699 bytes   6.54 fps  exact
    9/7       cinegpu         677505 bytes   3.19 fps  52.03 dB  (budget 685406)
    9/7       ojph_compress   676250 bytes  17.32 fps  52.22 dB  (-qstep 0.003265)
"""

from __future__ import annotations

import argparse
import functools
import shutil
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from cinegpu.decode import decode

from cinegpu.bench.encode import ours_processes
from cinegpu.encode.encoder import Encoder, EncoderSettings

SIZES = {"2k": (2048, 1080), "4k": (4096, 2160)}
#: the coding options every row shares (the peers are given the same)
HT = dict(codec="htj2k", codeblock=(64, 64), levels=5)


def synthetic_frame(w: int, h: int, seed: int = 0) -> np.ndarray:
    """(h, w, 3) uint16 12-bit: smooth gradients, texture, edges and a little noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    base = 1800 + 1200 * np.sin(x / 97.0 + seed) * np.cos(y / 71.0)
    tex = 300 * np.sin(x / 3.1 + y / 5.3) * (((x // 256) + (y // 256) + seed) % 2)
    out = np.empty((h, w, 3), np.uint16)
    for c in range(3):
        v = base * (0.8 + 0.15 * c) + tex + rng.normal(0, 12, (h, w)) + (x > w / 2) * 400 * c
        out[:, :, c] = np.clip(v, 0, 4095)
    return out


def psnr(a: np.ndarray, stream: bytes) -> float:
    got = np.stack(decode(stream), -1).astype(np.float64)
    mse = float(((got - a) ** 2).mean())
    return float("inf") if mse == 0 else 10 * np.log10(4095.0 ** 2 / mse)


def _mean_psnr(frames, streams) -> float:
    return float(np.mean([psnr(f, d) for f, d in zip(frames, streams)]))


def _ppm(a: np.ndarray, path: Path) -> None:
    h, w, _ = a.shape
    path.write_bytes(f"P6 {w} {h} 4095\n".encode() + a.astype(">u2").tobytes())


def ours(frames, threads, backend, workers=1, **opts) -> tuple[list[bytes], float]:
    """Every frame coded by :class:`Encoder` in ``threads`` threads (one warm encoder each):
    (codestreams, seconds)."""
    local = threading.local()
    made = []

    def one(f):
        enc = getattr(local, "enc", None)
        if enc is None:
            enc = local.enc = Encoder(EncoderSettings.of(backend=backend, workers=workers, **HT, **opts))
            made.append(enc)
        return enc.encode(f, bits=12)

    try:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, frames[:1] * threads * 2))  # warm: compilation, geometry
            t0 = time.perf_counter()
            out = list(pool.map(one, frames))
            return out, time.perf_counter() - t0
    finally:
        for e in made:
            e.close()


def _processes(cmds, threads) -> float:
    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda c: subprocess.run(c, check=True, capture_output=True, timeout=600),
                      cmds))
    return time.perf_counter() - t0


def _ojph(src: list[Path], out: Path, threads: int, *options) -> tuple[list[bytes], float]:
    cmds = [["ojph_compress", "-i", str(p), "-o", str(out / f"{p.stem}.j2c"), "-num_decomps",
             "5", "-block_size", "{64,64}", *options] for p in src]
    secs = _processes(cmds, threads)
    return [(out / f"{p.stem}.j2c").read_bytes() for p in src], secs


def _grk(folder: Path, out: Path, threads: int) -> tuple[list[bytes], float]:
    t0 = time.perf_counter()
    subprocess.run(["grk_compress", "-y", str(folder), "-a", str(out), "-O", "j2k", "-M", "64",
                    "-n", "6", "-b", "64,64", "-H", str(threads)],
                   check=True, capture_output=True, timeout=600)
    secs = time.perf_counter() - t0
    return [p.read_bytes() for p in sorted(out.glob("*.j2k"))], secs


def _bisect(code, fits, lo: float, hi: float, rounds: int = 12):
    """The largest result of ``code(q)`` for which ``fits`` holds, q searched on a log scale
    between ``lo`` (too large a result) and ``hi`` (fits): (q, result) or None."""
    best = None
    a, b = np.log(lo), np.log(hi)
    for _ in range(rounds):
        q = float(np.exp((a + b) / 2))
        res = code(q)
        if fits(res):
            b = np.log(q)
            if best is None or len(res) > len(best[1]):
                best = q, res
        else:
            a = np.log(q)
    return best


def _peer_row(kind: str, name: str, run, frames, note: str = "", distinct: int | None = None) -> None:
    """A peer's row (``run()``: (codestreams, seconds)), or one line naming the peer and why it
    failed (it could not start, exited with an error, or ran past its time), as ``cinegpu
    bench`` reports a failing peer; the benchmark goes on with the next row."""
    try:
        streams, secs = run()
    except subprocess.CalledProcessError as exc:
        said = (exc.stderr or b"").decode(errors="replace").strip().splitlines()
        print(f"{kind:<9} {name:<26} failed: exit code {exc.returncode}" + (f": {said[-1][:200]}" if said else ""),
              flush=True)
        return
    except subprocess.TimeoutExpired as exc:
        print(f"{kind:<9} {name:<26} failed: ran past {exc.timeout:.0f} s", flush=True)
        return
    except OSError as exc:
        print(f"{kind:<9} {name:<26} could not start: {exc}", flush=True)
        return
    _row(kind, name, streams, secs, frames, note, distinct)


def _row(kind, name, streams, secs, frames, note="", distinct=None):
    """Print one row; PSNR over the first ``distinct`` frames (the frames cycle over that
    many images, so the others repeat them)."""
    size = max(len(d) for d in streams)
    q = _mean_psnr(frames[:distinct], streams[:distinct])
    quality = ("exact" if q == float("inf") else "NOT EXACT") if kind == "lossless" else \
        f"{q:6.2f} dB"
    print(f"{kind:<9} {name:<26} {size:>9} bytes  {len(streams) / secs:8.2f} fps  {quality}"
          + (f"  ({note})" if note else ""), flush=True)
    return len(streams) / secs


def frame_coefficients(enc: Encoder, image: np.ndarray):
    """The forward stage of ``enc`` (cuda back end) on ``image`` as :meth:`Encoder.encode`
    runs it before the cleanup passes: (flats, plans), the tiles' int32 coefficients on the
    GPU and their plans."""
    from dataclasses import replace  # noqa: PLC0415

    from cinegpu.encode.encoder import _precisions, _split  # noqa: PLC0415
    from cinegpu.encode.encoder import RSIZ_HT  # noqa: PLC0415
    from cinegpu.encode.presets import make_params  # noqa: PLC0415
    with enc.on_stream():
        comps = _split(image)
        if enc.backend == "cuda":
            comps = enc._upload(image, comps)
        precs, sgn = _precisions(comps, 12, False)
        params = make_params([c.shape for c in comps], precs, sgn, enc.coding)
        params = replace(params, Rsiz=params.Rsiz | RSIZ_HT)
        cs, plans = enc._geometry(params)
        flats = enc._forward(comps, params, plans)
        _, _, plans, flats = enc._guard_bits(params, cs, plans, flats)
    return flats, plans


def kernel_rows(image: np.ndarray, repeat: int) -> None:
    """Print the "kernel" rows: each HT cleanup-pass kernel on one frame's coefficients,
    lossless and 9/7, as ms per frame and fps (module docstring)."""
    import cupy  # noqa: PLC0415

    from cinegpu.encode.tier1.ht_gpu import coding_ms, ht_encode_rows_cuda  # noqa: PLC0415
    names = {"thread": "ht_enc_blocks (thread/blk)", "auto": "ht_enc_blocks_warp"}
    for kind, reversible in (("lossless", True), ("9/7", False)):
        with Encoder(EncoderSettings.of(backend="cuda", workers=1, reversible=reversible, **HT)) as enc:
            flats, plans = frame_coefficients(enc, image)
            with enc.on_stream():
                outs = {}
                for kernel, name in names.items():
                    ms = 0.0
                    for plan, flat in zip(plans, flats):
                        n = plan.cb.shape[0]
                        ms += coding_ms(flat, plan.cb, np.arange(n), np.zeros(n, np.int64),
                                        kernel=kernel, repeat=repeat)
                    t0 = time.perf_counter()
                    for _ in range(repeat):
                        outs[kernel] = [ht_encode_rows_cuda(flat, plan.cb, np.arange(
                            plan.cb.shape[0]), np.zeros(plan.cb.shape[0], np.int64),
                            kernel=kernel) for plan, flat in zip(plans, flats)]
                    cupy.cuda.get_current_stream().synchronize()
                    whole = (time.perf_counter() - t0) * 1e3 / repeat
                    size = sum(int(o[1][-1]) for o in outs[kernel])
                    print(f"{'kernel':<9} {name:<26} {size:>9} bytes  {1e3 / ms:8.2f} fps  "
                          f"{ms:7.3f} ms/frame coding kernels, {whole:7.3f} ms/frame "
                          f"({1e3 / whole:.1f} fps) ht_encode_rows_cuda  ({kind})", flush=True)
                same = all(all(np.array_equal(a, b) for a, b in zip(x, y))
                           for x, y in zip(outs["thread"], outs["auto"]))
                print(f"{'kernel':<9} {kind}: the two kernels' outputs "
                      f"{'are identical' if same else 'DIFFER'}", flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="2k")
    ap.add_argument("--frames", type=int, default=2)
    ap.add_argument("--distinct", type=int, default=2,
                    help="different images the frames cycle over")
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--threads", type=int, default=1, help="our encoders at once, and the "
                    "peers' processes or threads")
    ap.add_argument("--workers", type=int, default=2, help="tier-1 threads of each encoder")
    ap.add_argument("--budget", type=int, default=None,
                    help="bytes a frame for the 9/7 rows (default: the lossless size / 8)")
    ap.add_argument("--kernels-only", action="store_true",
                    help="on the GPU, only the rows comparing the HT cleanup-pass kernels")
    ap.add_argument("--repeat", type=int, default=20,
                    help="runs of each kernel row (timings are their mean)")
    ap.add_argument("--nvjpeg2000", action="store_true",
                    help="also time nvJPEG2000's HT encoder (nvImageCodec), if importable")
    ap.add_argument("--processes", type=int, nargs="+", default=[], metavar="P T",
                    help="also ours in P processes of T threads each (pairs)")
    ap.add_argument("--no-budget", action="store_true", help="leave out the byte-budget row")
    args = ap.parse_args(argv)
    if len(args.processes) % 2:
        ap.error("--processes takes pairs: P T [P T ...]")
    args.processes = list(zip(args.processes[::2], args.processes[1::2]))
    w, h = SIZES[args.size]
    images = [synthetic_frame(w, h, seed=k) for k in range(max(1, min(args.distinct,
                                                                       args.frames)))]
    frames = [images[k % len(images)] for k in range(args.frames)]
    row = functools.partial(_row, distinct=len(images))
    backend = args.backend
    with Encoder(EncoderSettings(backend=backend, workers=1)) as probe:
        on_gpu = probe.backend == "cuda"
    print(f"{args.size} {w}x{h} 12-bit RGB, {args.frames} frame(s) over {len(images)} images, "
          f"ours on {'the GPU' if on_gpu else 'the CPU'} in {args.threads} thread(s)", flush=True)
    if on_gpu:
        kernel_rows(images[0], args.repeat)
        if args.kernels_only:
            return
    elif args.kernels_only:
        print("--kernels-only: the kernel rows need the cuda back end")
        return
    device_frames = None
    if on_gpu:
        import cupy  # noqa: PLC0415
        device_frames = [cupy.asarray(f) for f in frames]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        folder = tmp / "in"
        folder.mkdir()
        for k, f in enumerate(frames):
            _ppm(f, folder / f"f{k:06d}.ppm")
        src = sorted(folder.glob("*.ppm"))

        def run_ours(label, kind, note="", also_device=True, **opts):
            data, secs = ours(frames, args.threads, backend, args.workers, **opts)
            fps = row(kind, f"cinegpu {label}", data, secs, frames, note)
            if device_frames is not None and also_device:
                again, secs = ours(device_frames, args.threads, backend, args.workers, **opts)
                assert again == data, "device and host input gave different codestreams"
                row(kind, f"cinegpu {label} (GPU memory)", again, secs, frames, note)
            for pp, pt in (args.processes if also_device else ()):
                for gpu_memory in (False, True) if device_frames is not None else (False,):
                    again, secs = ours_processes(frames, dict(backend=backend,
                                                              workers=args.workers, **HT,
                                                              **opts), pp, pt, gpu_memory)
                    assert again == data, "processes and one encoder gave other codestreams"
                    row(kind, f"cinegpu {label} {pp}x{pt} processes"
                        + (" (GPU memory)" if gpu_memory else ""), again, secs, frames, note)
            return data, fps

        data, _ = run_ours("", "lossless", reversible=True)
        if on_gpu:  # the whole encoder with the one-thread-a-block HT kernel, to compare
            run_ours("ht_kernel=thread", "lossless", reversible=True, ht_kernel="thread")
        lossless = max(len(d) for d in data)
        if shutil.which("ojph_compress"):
            out = tmp / "ojph"
            out.mkdir()
            _peer_row("lossless", "ojph_compress", lambda: _ojph(src, out, args.threads, "-reversible", "true"),
                      frames, f"{args.threads} processes", len(images))
        if shutil.which("grk_compress"):
            out = tmp / "grk"
            out.mkdir()
            _peer_row("lossless", "grk_compress -M 64", lambda: _grk(folder, out, args.threads), frames,
                      f"{args.threads} threads", len(images))
        if args.nvjpeg2000:
            _nvjpeg2000_rows(frames, len(images), "lossless", dict(lossless=True))

        budget = args.budget or lossless // 8
        if not args.no_budget:
            run_ours("budget", "9/7", f"budget {budget}", False, bitrate=budget * 8 * 24,
                     fps=24)
        found = _bisect(lambda q: ours(images[:1], 1, backend, args.workers,
                                       base_step=q)[0][0],
                        lambda d: len(d) <= budget, 1e-3, 64.0)
        if found is not None:
            run_ours("quantisation", "9/7", f"base_step {found[0]:.5f}", base_step=found[0])
        if shutil.which("ojph_compress"):
            out = tmp / "q"
            out.mkdir()
            try:
                found = _bisect(lambda q: _ojph(src[:1], out, 1, "-qstep", f"{q:.6f}")[0][0],
                                lambda d: len(d) <= budget, 2e-4, 0.5)
            except (subprocess.SubprocessError, OSError) as exc:
                print(f"{'9/7':<9} {'ojph_compress':<26} failed while finding its step: {exc}", flush=True)
                found = None
            if found is not None:
                _peer_row("9/7", "ojph_compress", lambda: _ojph(src, out, args.threads, "-qstep", f"{found[0]:.6f}"),
                          frames, f"-qstep {found[0]:.6f}, {args.threads} processes", len(images))
        if args.nvjpeg2000:
            from cinegpu.bench.encode_peers import nvjpeg2000_encode  # noqa: PLC0415

            def one_size(q):
                res = nvjpeg2000_encode(images[:1], 1, ht=True, step=q, psnr_frames=0)
                return b"" if res is None or res.fps == 0 else b"\0" * res.max_bytes
            found = _bisect(one_size, lambda d: 0 < len(d) <= budget, 1e-3, 256.0)
            if found is not None:
                _nvjpeg2000_rows(frames, len(images), "9/7", dict(step=found[0]))


def _nvjpeg2000_rows(frames, distinct, kind, opts) -> None:
    from cinegpu.bench.encode_peers import nvjpeg2000_encode  # noqa: PLC0415
    for batch in (1, 16):
        res = nvjpeg2000_encode(frames, batch, ht=True, psnr_frames=distinct, **opts)
        if res is None:
            print(f"{kind:<9} nvJPEG2000 HT: nvImageCodec or a GPU missing")
            return
        if res.fps == 0:
            print(f"{kind:<9} nvJPEG2000 HT batch {batch}: {res.note}")
            continue
        quality = ("exact" if res.psnr == float("inf") else "NOT EXACT") \
            if kind == "lossless" else f"{res.psnr:6.2f} dB"
        note = "" if "step" not in opts else f"step {opts['step']:.5f}, "
        print(f"{kind:<9} {'nvJPEG2000 HT batch ' + str(batch):<26} {res.max_bytes:>9} bytes  "
              f"{res.fps:8.2f} fps  {quality}  ({note}GPU memory)", flush=True)


if __name__ == "__main__":
    main()

"""What decryption (SMPTE ST 429-6) adds to reading a frame: ``python -m cinegpu.bench.decrypt
[FRAME.j2c ...] [--frames N] [--threads N]``.

The codestreams given (default: the shipped 2K sample) are written twice into track files in a
temporary folder, one in the clear and one encrypted (AES-128-CBC with the MIC), and each is
read through :class:`~.mxf.MXFFile` as the player's sources read frames (``frame(n)``: index
lookup, read, and for the encrypted one AES-128-CBC decryption and the HMAC-SHA-1 check).  The
files are read once before timing, so both come from the page cache and the difference is the
decryption's.  With ``--threads N`` the same frames are read by N threads at once, as the
decode-ahead source's threads do, to show whether decryption serialises on the GIL
(``cryptography`` releases it inside OpenSSL).  Times are ms per frame, best of the runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from cinegpu.media.mxf.read import MXFFile
from cinegpu.media.mxf.write import EssenceEncryption, write_track
from cinegpu.media.samples import BARS_2K

SAMPLE = BARS_2K
RUNS = 5


@dataclass(frozen=True)
class DecryptCost:
    """ms per frame of reading the clear and the encrypted track file with ``threads`` readers,
    for frames of ``frame_bytes`` bytes on average."""

    frame_bytes: int
    threads: int
    clear_ms: float
    encrypted_ms: float

    @property
    def added_ms(self) -> float:
        return self.encrypted_ms - self.clear_ms

    def line(self) -> str:
        return (f"{self.frame_bytes / 1e6:.2f} MB/frame, {self.threads} reader thread(s): clear "
                f"{self.clear_ms:.3f} ms/frame, encrypted {self.encrypted_ms:.3f} ms/frame, decryption "
                f"adds {self.added_ms:.3f} ms/frame ({self.frame_bytes / 1e3 / max(self.added_ms, 1e-9):.0f} MB/s)")


def _read_all(mxf: MXFFile, frames: int, threads: int) -> float:
    """Seconds to read frames 0..frames-1 (split over ``threads`` threads)."""
    def work(k: int) -> None:
        for n in range(k, frames, threads):
            mxf.frame(n % mxf.frame_count, "left")   # a 3D file: the left eye

    t0 = time.perf_counter()
    if threads == 1:
        work(0)
    else:
        pool = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
    return time.perf_counter() - t0


def measure(codestreams: list[bytes], *, frames: int = 48, threads: int = 1, folder=None) -> DecryptCost:
    """The :class:`DecryptCost` of ``frames`` frames cycling through ``codestreams``."""
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        clear, enc = Path(tmp) / "clear.mxf", Path(tmp) / "enc.mxf"
        key = os.urandom(16)
        stream = [codestreams[i % len(codestreams)] for i in range(frames)]
        write_track(clear, stream, edit_rate=24)
        write_track(enc, stream, edit_rate=24, encryption=EssenceEncryption(key, uuid.uuid4()))
        best = {}
        with MXFFile(clear) as c, MXFFile(enc, key=key) as e:
            for name, m in (("clear", c), ("enc", e)):
                _read_all(m, frames, 1)         # into the page cache
                best[name] = min(_read_all(m, frames, threads) for _ in range(RUNS))
        del key
    size = sum(len(s) for s in stream) // len(stream)
    return DecryptCost(size, threads, best["clear"] * 1e3 / frames, best["enc"] * 1e3 / frames)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m cinegpu.bench.decrypt", description=__doc__.split("\n\n")[0])
    p.add_argument("frames", nargs="*", type=Path, help="codestream files (default: the shipped 2K sample)")
    p.add_argument("--frames", dest="count", type=int, default=48, help="frames per track file (default 48)")
    p.add_argument("--threads", type=int, nargs="+", default=[1], help="reader threads (several: one run each)")
    args = p.parse_args(argv)
    files = args.frames or [SAMPLE]
    try:
        codestreams = [f.read_bytes() for f in files]
    except OSError as exc:
        print(f"bench_decrypt: {exc}", file=sys.stderr)
        return 2
    for n in args.threads:
        print(measure(codestreams, frames=max(1, args.count), threads=max(1, n)).line())
    return 0


if __name__ == "__main__":
    sys.exit(main())

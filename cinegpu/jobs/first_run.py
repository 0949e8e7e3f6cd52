"""The first run: numba compiles the CPU encoder and decoder the first time they run.

On a fresh two-core machine that takes minutes, and a progress bar sitting at 0% (or a player
printing nothing) looks hung. So the demo compiles first, on purpose and saying so: it encodes
and decodes one demo frame through the same code the mastering and the player use, stage by
stage, with a progress bar, and leaves a stamp (named after the cinegpu and numba versions) in
the cache folder, so that later runs neither compile nor say anything. Compiled code itself is
kept by numba's on-disk cache (``cache=True``) in one folder per user
(:mod:`cinegpu.decode.kernel_cache`), which every copy of the same source reuses: a reinstall,
an editable install beside a regular one.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

__all__ = ["STAGES", "cache_root", "compile_kernels", "stamp_path"]

#: What is compiled, in order, as the progress bar names it.
STAGES = ("encoder: colour, wavelet, tier-1, rate control, tier-2",
          "decoder: tier-2, tier-1, reconstruction")


def cache_root() -> Path:
    """cinegpu's cache folder: ``$XDG_CACHE_HOME/cinegpu`` (``~/.cache/cinegpu`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cinegpu"


def stamp_path(cache: Path) -> Path:
    """The stamp in ``cache`` saying this version's kernels were compiled on this machine."""
    import numba
    from importlib.metadata import PackageNotFoundError, version

    try:
        ours = version("cinegpu")
    except PackageNotFoundError:
        ours = "source"
    return Path(cache) / f"compiled-cinegpu-{ours}-numba-{numba.__version__}"


def compile_kernels(cache: Path, *, progress: bool = True, say=print) -> float | None:
    """Compile the CPU encoder's and decoder's kernels unless ``cache``'s stamp says they are;
    seconds taken, or None when there was nothing to do. ``say`` gets one line before and
    one after."""
    stamp = stamp_path(cache)
    if stamp.is_file():
        return None
    from tqdm import tqdm

    from cinegpu.decode.decoder import Decoder

    from cinegpu.jobs.demo import demo_frame
    from cinegpu.jobs.frame_encode import FrameEncoders
    from cinegpu.media.images.frames import fit

    say("compiling the CPU encoder and decoder (first run only, about a minute; "
        "later runs start in seconds)")
    t0 = time.perf_counter()
    with tqdm(total=len(STAGES), unit="stage", disable=None if progress else True,
              bar_format="{desc}: {n_fmt}/{total_fmt} {bar} {elapsed}") as bar:
        bar.set_description(STAGES[0])
        with FrameEncoders(profile="2k", fps=24, bitrate=None, colorspace="rec709",
                           backend="cpu") as encoders:
            data = encoders.encode(fit(demo_frame(0), 2048, 1080))
        bar.update(1)
        bar.set_description(STAGES[1])
        Decoder("cpu").decode(data)
        bar.update(1)
    seconds = time.perf_counter() - t0
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(f"compiled in {seconds:.1f} s\n")
    say(f"compiled in {seconds:.0f} s")
    return seconds

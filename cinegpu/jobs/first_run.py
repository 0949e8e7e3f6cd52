"""The first run: numba compiles the CPU encoder and decoder the first time they run.

On a fresh two-core machine that takes minutes, and a progress bar sitting at 0% (or a player
printing nothing) looks hung. So the demo compiles first, on purpose and saying so: it encodes
a demo frame and decodes a sample one through the same code the mastering and the player use,
the encoder and the decoder at once in processes of their own, with a bar that ticks per
function compiled, and leaves a stamp (named after the cinegpu and numba versions) in
the cache folder, so that later runs neither compile nor say anything. Compiled code itself is
kept by numba's on-disk cache (``cache=True``) in one folder per user
(:mod:`cinegpu.decode.kernel_cache`), which every copy of the same source reuses: a reinstall,
an editable install beside a regular one.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import sys
import time
from pathlib import Path

from numba.core import event as numba_event
from numba.core.registry import CPUDispatcher
from tqdm import tqdm

import cinegpu

__all__ = ["PARTS", "cache_root", "compile_kernels", "stamp_path"]

#: What is compiled, each part in a process of its own at the same time (the cores of a
#: two-core machine both compiling), as the bar names them.
PARTS = ("encoder", "decoder")
#: The DCI 2K frame the decoder's part decodes (the demo's picture is of the same kind).
SAMPLE = Path(__file__).resolve().parents[1] / "media" / "samples" / "bars_2k.j2c"


def cache_root() -> Path:
    """cinegpu's cache folder: ``$XDG_CACHE_HOME/cinegpu`` (``~/.cache/cinegpu`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cinegpu"


def stamp_path(cache: Path) -> Path:
    """The stamp in ``cache`` saying this version's kernels were compiled on this machine."""
    import numba

    return Path(cache) / f"compiled-cinegpu-{cinegpu.__version__}-numba-{numba.__version__}"


def compile_kernels(cache: Path, *, progress: bool = True, say=print) -> float | None:
    """Compile the CPU encoder's and decoder's kernels unless ``cache``'s stamp says they are;
    seconds taken, or None when there was nothing to do. ``say`` gets one line before and
    one after.

    The parts (:data:`PARTS`) compile at once, each in a process of its own that encodes or
    decodes one frame, and numba's cache (:mod:`cinegpu.decode.kernel_cache`) hands this
    process and every later one what they compiled; the bar ticks once a function is compiled
    (the count estimated from the kernels their modules define) and shows the one in hand,
    its clock moving each second. A part that fails leaves its kernels to be compiled when
    they are first used, as they would have been without this step."""
    stamp = stamp_path(cache)
    if stamp.is_file():
        return None
    say("compiling the CPU encoder and decoder (first run only; later runs start in seconds)")
    t0 = time.perf_counter()
    failed = _compile_parts(progress)
    seconds = time.perf_counter() - t0
    for part, why in failed.items():
        say(f"the {part} did not compile ahead ({why}); it compiles when first used")
    if not failed:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(f"compiled in {seconds:.1f} s\n")
    say(f"compiled in {seconds:.0f} s")
    return seconds


def _compile_parts(progress: bool) -> dict[str, str]:
    """Run every part in a spawned process, drawing their progress; the parts that failed,
    with why."""
    ctx = mp.get_context("spawn")
    messages = ctx.Queue()
    procs = {part: ctx.Process(target=_compile_part, args=(part, messages), daemon=True,
                               name=f"cinegpu-compile-{part}") for part in PARTS}
    for proc in procs.values():
        proc.start()
    totals: dict[str, int] = {}
    ended: dict[str, str | None] = {}
    with tqdm(total=0, unit="function", disable=None if progress else True, desc="compiling",
              bar_format="{desc}: {n_fmt}/{total_fmt} functions {bar} {elapsed}<{remaining} {postfix}") as bar:
        while len(ended) < len(procs):
            try:
                kind, part, value = messages.get(timeout=0.5)
            except queue.Empty:
                for part, proc in procs.items():
                    if part not in ended and proc.exitcode is not None:
                        ended[part] = f"its process ended (exit code {proc.exitcode})"
                bar.refresh()       # the clock moves while a long function compiles
                continue
            if kind == "total":
                totals[part] = value
                bar.total = sum(totals.values())
            elif kind == "compiled":
                bar.update(1)
                bar.set_postfix_str(value[-40:])
            else:                   # "done" (None) or "failed" (why)
                ended[part] = value
        bar.n = max(bar.n, bar.total)
        bar.set_postfix_str("")
    for proc in procs.values():
        proc.join(timeout=5)
    return {part: why for part, why in ended.items() if why is not None}


class _Ticks(numba_event.Listener):
    """Posts the name of every cinegpu function numba finishes compiling."""

    def __init__(self, part: str, messages) -> None:
        self.part, self.messages = part, messages

    def on_start(self, ev) -> None:
        pass

    def on_end(self, ev) -> None:
        func = getattr(ev.data.get("dispatcher"), "py_func", None)
        if func is not None and func.__module__.startswith("cinegpu."):
            self.messages.put(("compiled", self.part, f"{func.__module__}.{func.__qualname__}"))


def _kernel_count() -> int:
    """The numba kernels the cinegpu modules loaded so far define: what a part may compile."""
    return sum(isinstance(v, CPUDispatcher) for name, mod in list(sys.modules.items())
               if name.startswith("cinegpu.") and mod is not None for v in vars(mod).values())


def _compile_part(part: str, messages) -> None:
    """One part, in a process of its own: the encoder codes a demo frame, the decoder decodes
    the sample frame; what numba compiles goes to its cache (and is posted to ``messages``)."""
    try:
        numba_event.register("numba:compile", _Ticks(part, messages))
        if part == "encoder":
            from cinegpu.jobs.demo import demo_frame
            from cinegpu.jobs.frame_encode import FrameEncoders
            from cinegpu.media.images.frames import fit

            messages.put(("total", part, _kernel_count()))
            with FrameEncoders(profile="2k", fps=24, bitrate=None, colorspace="rec709",
                               backend="cpu") as encoders:
                encoders.encode(fit(demo_frame(0), 2048, 1080))
        else:
            from cinegpu.decode.decoder import Decoder

            messages.put(("total", part, _kernel_count()))
            Decoder("cpu").decode(SAMPLE.read_bytes())
        messages.put(("done", part, None))
    except Exception as exc:        # reported by the parent: the kernels then compile on first use
        messages.put(("failed", part, f"{type(exc).__name__}: {exc}"))

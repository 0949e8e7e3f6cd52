"""The first run: numba compiles the CPU encoder and decoder the first time they run.

On a fresh two-core machine that takes a minute or more, and a progress bar sitting at 0% (or
a player printing nothing) looks hung. So the demo compiles first, on purpose and saying so,
with a bar that ticks per function compiled, and leaves a stamp (named after the cinegpu and
numba versions) in the cache folder, so that later runs neither compile nor say anything.
Compiled code itself is kept by numba's on-disk cache (``cache=True``) in one folder per user
(:mod:`cinegpu.decode.kernel_cache`), which every copy of the same source reuses: a reinstall,
an editable install beside a regular one.

What is compiled is :data:`ENTRY_KERNELS`: the kernels the encoder and the decoder call from
Python (the demo's path, a DCI 2K frame encoded and decoded on the CPU, is
:data:`DEMO_KERNELS`; HTJ2K code-blocks add :data:`HTJ2K_KERNELS`), each with the
argument types those calls give, so each can be compiled by its signature
(``dispatcher.compile``) without running anything. Every kernel they call is compiled with
them. The entries go, largest first, to as many spawned processes as there are cores (each
takes the next when done), so both cores of a two-core machine compile until the end; a
decode and an encode, one after the other, would leave one core idle and compile the kernels
they share twice. ``tests/jobs/test_first_run.py`` checks that the encoder and the decoder
call these kernels with exactly these signatures (any other would be compiled again).
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import queue
import sys
import time
from pathlib import Path

import numba
from numba import types as nb_types
from numba.core import event as numba_event
from numba.core.registry import CPUDispatcher
from tqdm import tqdm

import cinegpu
from cinegpu.decode.cpus import usable_cores
from cinegpu.decode.kernel_cache import cache_root, skip_blas_probe
from cinegpu.jobs import prebuilt

__all__ = ["DECODER_KERNELS", "DEMO_KERNELS", "ENTRY_KERNELS", "HTJ2K_KERNELS", "MAX_PROCESSES", "cache_root",
           "compile_entries", "compile_kernels", "entry_kernel", "signature", "stamp_path"]

#: The kernels the CPU encoder and decoder call from Python, largest
#: compile first ("module:function" -> argument types: ``DT[N]`` an N-dimensional C-contiguous
#: array of DT, with ``r`` read-only; ``int`` an int64; ``( ... )`` a tuple of what it holds).
ENTRY_KERNELS = {
    "cinegpu.encode.tier1.tile:_encode_rows": "i32[1] i64[2] i64[1] int int",
    "cinegpu.decode.tier1.codeblock:decode_codeblocks_ebcot": "u8[1] i64[2] i32[1] i32[1] i32[1]",
    "cinegpu.decode.transform.frame_numba:frame_samples": "i32[1] i64[2] i64[2] f32[2] i32[2] f32[1] i64[2] i32[1]",
    "cinegpu.decode.tier1.codeblock:decode_codeblocks_mixed": "u8[1] i64[2] i32[1] i32[1] i32[1]",
    "cinegpu.decode.tier2.packets:read_frame_packets":
        "u8[1]r u8[1]r i64[2] i64[2] i64[2] i64[2] i64[2] i8[1] int i64[2]",
    "cinegpu.decode.tier2.progression:_tile_orders": "i64[2] i64[2] i64[2] i64[2] i64[1] i64[1]",
    "cinegpu.encode.tier2.packets:write_headers":
        "i64[2] i64[2] i64[2] int i64[2] i64[1] i64[1] i64[1] i64[1] int u8[1] i64[1] i64[1] i64[2] i64[1]",
    "cinegpu.decode.plan_numba:tiles_tables":
        "i64[2] i64[1] i64[2] i64[2] i64[2] f64[1] i64[2] int i64[2]"
        " ( i64[2] i64[2] i64[2] f64[1] i64[2] i64[2] i64[2] i8[1] i64[2] i64[2] f32[2] i32[2] f32[1] ) i64[2]",
    "cinegpu.decode.plan_numba:tiles_counts": "i64[2] i64[1] i64[2] i64[2] i64[2] i64[2] int i64[2]",
    "cinegpu.decode.reconstruct:_frame_items": "i64[2] i64[2] i64[2] i64[2] i64[2] i64[2] i64[2] i64[1]",
    "cinegpu.decode.tier2.packets:gather_segments": "u8[1]r i64[2] int i64[2]",
    "cinegpu.encode.tier2.packets:gather_packets": "u8[1] i64[1] i64[2] i64[1] u8[1]r int int u8[1]",
    "cinegpu.decode.reconstruct:_place_planes": "i64[2] i64[1] i64[2] i64[1]",
    "cinegpu.encode.blocks:_body_bytes": "i64[1] i64[1] i64[1]",
    "cinegpu.encode.early_stop:_histogram": "i32[1] i64[1]",
}
#: What only HTJ2K code-blocks (T.814) need: compiled ahead for the decoding commands, not for
#: the demo, whose DCI frames have none.
HTJ2K_KERNELS = ("cinegpu.decode.tier1.codeblock:decode_codeblocks_mixed",)
#: The demo's path: a DCI 2K frame encoded and decoded on the CPU.
DEMO_KERNELS = tuple(name for name in ENTRY_KERNELS if name not in HTJ2K_KERNELS)
#: The decoder's entries alone: what playing, decoding and checking need.
DECODER_KERNELS = tuple(name for name in ENTRY_KERNELS if name.startswith("cinegpu.decode."))
#: At most this many compiling processes (each holds numba and its compiler, ~0.5 GB).
MAX_PROCESSES = 8
_DTYPES = {"u8": nb_types.uint8, "i8": nb_types.int8, "i32": nb_types.int32, "i64": nb_types.int64,
           "f32": nb_types.float32, "f64": nb_types.float64}


def stamp_path(cache: Path, encoder: bool = True) -> Path:
    """The stamp in ``cache`` saying this version's :data:`DEMO_KERNELS` (without
    ``encoder``: :data:`DECODER_KERNELS`) were compiled on this machine."""

    return Path(cache) / (f"compiled-cinegpu-{cinegpu.__version__}-numba-{numba.__version__}"
                          f"{'' if encoder else '-decoder'}")


def signature(text: str) -> tuple:
    """numba's argument types for an :data:`ENTRY_KERNELS` text."""
    stack: list[list] = [[]]
    for token in text.split():
        if token == "(":
            stack.append([])
        elif token == ")":
            inner = stack.pop()
            stack[-1].append(nb_types.Tuple(inner))
        elif token == "int":
            stack[-1].append(nb_types.int64)
        else:
            dtype, rest = token.split("[")
            ndim, flags = rest.split("]")
            stack[-1].append(nb_types.Array(_DTYPES[dtype], int(ndim), "C", readonly=flags == "r"))
    (args,) = stack
    return tuple(args)


def entry_kernel(name: str):
    """The dispatcher an :data:`ENTRY_KERNELS` name (``module:function``) stands for."""
    module, function = name.split(":")
    return getattr(importlib.import_module(module), function)


def compile_kernels(cache: Path, *, progress: bool = True, say=print, encoder: bool = True) -> float | None:
    """Compile :data:`DEMO_KERNELS` (without ``encoder``: :data:`DECODER_KERNELS`, HTJ2K's
    included, for a command that only decodes) unless ``cache``'s stamp says they are (what
    one set left uncompiled, the other finds in numba's cache); seconds taken, or None
    when there was nothing to do. ``say`` gets one line before and one after.

    The kernels are shared out to spawned processes (one per core, at most
    :data:`MAX_PROCESSES`), and numba's cache (:mod:`cinegpu.decode.kernel_cache`) hands this
    process and every later one what they compiled; the bar ticks once a function is compiled
    (the count estimated from the kernels their modules define) and shows the one in hand, its
    clock moving each second. A kernel that fails to compile is left to be compiled when it is
    first used, as it would have been without this step.

    The kernels shipped compiled with the package (:mod:`cinegpu.jobs.prebuilt`) are put in
    numba's cache first where they fit this machine, and the processes then only load them
    (seconds); where they do not, the line before says why and what follows compiles."""
    stamp = stamp_path(cache, encoder)
    if stamp.is_file():
        return None
    names = DEMO_KERNELS if encoder else DECODER_KERNELS
    what = "encoder and decoder" if encoder else "decoder"
    t0 = time.perf_counter()
    shipped = prebuilt.install()
    if shipped.why is None:
        say(f"loading the CPU {what} compiled ahead (first run only)")
    else:
        say(f"compiling the CPU {what} (first run only; later runs start in seconds): "
            f"the kernels shipped compiled do not fit here ({shipped.why})")
    failed = compile_entries(names, progress)
    seconds = time.perf_counter() - t0
    for name, why in failed.items():
        say(f"{name} did not compile ahead ({why}); it compiles when first used")
    if not failed:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(f"ready in {seconds:.1f} s\n")
    say(f"{'loaded' if shipped.why is None else 'compiled'} in {seconds:.0f} s")
    return seconds


def _kernel_count(names) -> int:
    """The numba kernels the cinegpu modules loaded with the entries ``names`` define
    (imported here, not compiled): about how many functions the processes compile."""
    for name in names:
        importlib.import_module(name.split(":")[0])
    return sum(isinstance(v, CPUDispatcher) for name, mod in list(sys.modules.items())
               if name.startswith("cinegpu.") and mod is not None for v in vars(mod).values())


def compile_entries(names, progress: bool) -> dict[str, str]:
    """Compile the entry kernels ``names`` in spawned processes, drawing their progress; the
    kernels that failed (or whose process died), with why."""
    ctx = mp.get_context("spawn")
    todo, messages = ctx.Queue(), ctx.Queue()
    for name in names:
        todo.put(name)
    count = max(1, min(usable_cores(), len(names), MAX_PROCESSES))
    for _ in range(count):
        todo.put(None)                                  # one "no more" for each process
    procs = [ctx.Process(target=_compile_entries, args=(todo, messages), daemon=True,
                         name=f"cinegpu-compile-{i}") for i in range(count)]
    for proc in procs:
        proc.start()
    failed: dict[str, str] = {}
    done = 0
    with tqdm(total=_kernel_count(names), unit="function", disable=None if progress else True, desc="compiling",
              bar_format="{desc}: {n_fmt}/{total_fmt} functions {bar} {elapsed}<{remaining} {postfix}") as bar:
        while done < len(names):
            try:
                kind, value = messages.get(timeout=0.5)
            except queue.Empty:
                if all(p.exitcode is not None for p in procs):
                    failed["the compiling processes"] = "they ended before every kernel was compiled"
                    break
                bar.refresh()       # the clock moves while a long function compiles
                continue
            if kind == "compiled":
                bar.update(1)
                bar.set_postfix_str(value[-40:])
            elif kind == "failed":
                name, why = value
                failed[name] = why
                done += 1
            else:                   # "done"
                done += 1
        bar.n = max(bar.n, bar.total)
        bar.set_postfix_str("")
    for proc in procs:
        proc.join(timeout=5)
    return failed


class _Ticks(numba_event.Listener):
    """Posts the name of every cinegpu function numba finishes compiling."""

    def __init__(self, messages) -> None:
        self.messages = messages

    def on_start(self, ev) -> None:
        pass

    def on_end(self, ev) -> None:
        func = getattr(ev.data.get("dispatcher"), "py_func", None)
        if func is not None and func.__module__.startswith("cinegpu."):
            self.messages.put(("compiled", f"{func.__module__}.{func.__qualname__}"))


def _compile_entries(todo, messages) -> None:
    """In a process of its own: compile the entry kernels named on ``todo`` until its None,
    each by its signature; what numba compiles goes to its cache (and is posted to
    ``messages``), then ``("done", name)`` or ``("failed", (name, why))``."""
    skip_blas_probe()       # a process of cinegpu's own: numba starts sooner
    numba_event.register("numba:compile", _Ticks(messages))
    while (name := todo.get()) is not None:
        try:
            entry_kernel(name).compile(signature(ENTRY_KERNELS[name]))
        except Exception as exc:        # reported by the parent: the kernel then compiles on first use
            messages.put(("failed", (name, f"{type(exc).__name__}: {exc}")))
        else:
            messages.put(("done", name))

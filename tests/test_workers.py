"""The worker pool under the decode pipeline and mastering's encoder processes
(cinegpu.decode.workers): its start clock counts silence, not work; failures name the worker
and what ended it, in the owner's error family."""

import multiprocessing as mp
import os
import time

import numba
import pytest

from cinegpu.decode.workers import Broken, Busy, Ready, WorkerPool, announce_compiles


class StartError(Exception):
    """The owner's error family, for the test."""


def _busy_then_ready(conn) -> None:
    """Works on its start for 6 s, saying so every 0.5 s, then is ready and echoes."""
    for k in range(12):
        time.sleep(0.5)
        conn.send(Busy(f"step {k}"))
    conn.send(Ready())
    while (msg := conn.recv()) != "stop":
        conn.send(("echo", msg))


def _silent(conn) -> None:
    time.sleep(30)


def _broken(conn) -> None:
    conn.send(Broken("no encoders: the GPU is gone"))


def _dies(conn) -> None:
    os._exit(3)


def _ready_then_dies(conn) -> None:
    conn.send(Ready())
    conn.recv()
    os._exit(5)


def _pool(target, count=1) -> WorkerPool:
    return WorkerPool(target, count, name="test worker", error=StartError)


def test_a_worker_busy_longer_than_the_silence_still_starts():
    pool = _pool(_busy_then_ready)
    try:
        pool.start()
        t0 = time.monotonic()
        pool.await_ready(0, silence=4.0)          # 6 s of work, never 4 s silent (once imported)
        assert time.monotonic() - t0 >= 6.0
        pool.send(0, 42)
        assert pool.wait(30) == [(True, 0)]
        assert pool.conns[0].recv() == ("echo", 42)
    finally:
        pool.close("stop", idle=lambda i: True, timeout=10)
    assert pool.procs == [None]


def test_a_silent_worker_fails_to_start_naming_it():
    pool = _pool(_silent)
    try:
        pool.start()
        with pytest.raises(StartError, match=r"^test worker 0 did not start: silent for 1 s$"):
            pool.await_ready(0, silence=1.0)
    finally:
        pool.close("stop", idle=lambda i: False, timeout=0)


def test_a_broken_start_and_an_end_while_starting_are_the_owners_errors():
    pool = _pool(_broken)
    try:
        pool.start()
        with pytest.raises(StartError, match=r"^test worker 0 could not start: no encoders: the GPU is gone$"):
            pool.await_ready(0, silence=60)
    finally:
        pool.close("stop", idle=lambda i: True, timeout=5)
    pool = WorkerPool(_dies, 2, name="test worker", error=StartError, where=lambda i: f"coder {i} (GPU {i})")
    try:
        pool.start()
        with pytest.raises(StartError, match=r"^coder 1 \(GPU 1\) ended \(exit code 3\) while starting$"):
            pool.await_ready(1, silence=60)
    finally:
        pool.close("stop", idle=lambda i: True, timeout=5)


def test_a_cancel_ends_the_wait():
    pool = _pool(_silent)
    try:
        pool.start()
        t0 = time.monotonic()
        with pytest.raises(StartError, match="closed while it started"):
            pool.await_ready(0, silence=60, cancelled=lambda: time.monotonic() - t0 > 0.3)
        assert time.monotonic() - t0 < 10
    finally:
        pool.close("stop", idle=lambda i: False, timeout=0)


def test_an_end_is_reported_after_the_last_message_and_the_worker_replaced():
    pool = _pool(_ready_then_dies)
    try:
        pool.start()
        pool.await_ready(0, silence=60)
        pool.send(0, "go")
        seen = []
        while (False, 0) not in seen:
            seen += pool.wait(30)
        with pytest.raises(StartError, match=r"^test worker 0 ended \(exit code 5\) while working$"):
            raise pool.ended(0, "while working")
        pool.forget(0)
        pool.start(0)                              # a new one in its place
        pool.await_ready(0, silence=60)
        assert pool.procs[0].is_alive()
    finally:
        pool.close("stop", idle=lambda i: False, timeout=0)


def _triple(x):
    return 3 * x


def test_compiles_are_announced_as_work():
    """Each cinegpu kernel numba compiles while a worker starts is one Busy naming it; others
    are not announced."""
    here, there = mp.Pipe()
    ours = _triple
    ours.__module__ = "cinegpu.decode.example"      # as if it were one of cinegpu's kernels
    theirs = lambda x: x + 1                        # noqa: E731
    stop = announce_compiles(there)
    try:
        numba.njit(theirs)(1)
        assert not here.poll(0)
        assert numba.njit(ours)(2) == 6
        assert here.poll(5)
        msg = here.recv()
        assert isinstance(msg, Busy) and msg.what == "compiled cinegpu.decode.example._triple"
    finally:
        stop()
        ours.__module__ = __name__
    numba.njit(lambda x: x * 2)(1)
    assert not here.poll(0)

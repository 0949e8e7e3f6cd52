"""The mastering writer's thread (media/write_behind.py): order, errors, a stop mid-way."""

import threading

import pytest

from cinegpu.media.errors import MediaError
from cinegpu.jobs.write_behind import WriteBehind


def test_frames_are_written_in_order_by_another_thread():
    written, threads = [], set()

    def write(data):
        written.append(data)
        threads.add(threading.get_ident())

    behind = WriteBehind(write, depth=2)
    for k in range(50):
        behind.put(bytes([k]))
    behind.finish()
    assert written == [bytes([k]) for k in range(50)]
    assert threads and threading.get_ident() not in threads
    assert behind.first_s is not None and behind.last_s >= behind.first_s and behind.cpu_s >= 0


def test_the_writers_error_is_raised_to_the_putting_thread_and_later_frames_are_dropped():
    written = []
    failed = threading.Event()

    def write(data):
        if data == b"3":
            failed.set()
            raise MediaError("out/picture.mxf", "disk full")
        written.append(data)

    behind = WriteBehind(write, depth=1)
    with pytest.raises(MediaError, match="disk full"):
        for k in range(1000):
            behind.put(str(k).encode())
            if failed.is_set() and k > 10:
                behind.finish()
    assert written == [b"0", b"1", b"2"]


def test_finish_raises_an_error_of_the_last_frame():
    def write(data):
        if data == b"last":
            raise MediaError(None, "the reels hold fewer frames")

    behind = WriteBehind(write)
    behind.put(b"first")
    behind.put(b"last")
    with pytest.raises(MediaError, match="fewer frames"):
        behind.finish()


def test_stop_drops_what_waits_and_ends_the_thread():
    entered, gate, written = threading.Event(), threading.Event(), []

    def write(data):
        entered.set()
        gate.wait(5)
        written.append(data)

    behind = WriteBehind(write, depth=4)
    for k in range(4):
        behind.put(bytes([k]))
    assert entered.wait(5)            # frame 0 is being written, 1-3 wait
    timer = threading.Timer(0.2, gate.set)
    timer.start()
    behind.stop()
    timer.join()
    assert written == [b"\x00"] and not behind._thread.is_alive()


def test_depth_must_be_positive():
    with pytest.raises(ValueError, match="depth"):
        WriteBehind(lambda data: None, depth=0)

"""Shared-memory segments left by a killed player are reclaimed (decode/shm.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from cinegpu.decode.shm import PREFIX, SHM_FOLDER, create_segment, reclaim_orphans, segment_exists, segment_owner
from conftest import SAMPLE

pytestmark = pytest.mark.skipif(not SHM_FOLDER.is_dir(), reason="no /dev/shm on this system")

LEAK = """
import os, sys
from multiprocessing import resource_tracker
from cinegpu.decode.shm import create_segment
seg = create_segment(4096)
resource_tracker.unregister(seg._name, "shared_memory")   # as if the tracker died with us
print(seg.name, flush=True)
os._exit(0)
"""


def test_names_say_whose_they_are():
    seg = create_segment(64)
    try:
        assert seg.name.startswith(PREFIX) and segment_owner(seg.name) == os.getpid()
        assert (SHM_FOLDER / seg.name).exists()
        assert seg.name not in reclaim_orphans()          # ours, and we are alive
        assert (SHM_FOLDER / seg.name).exists()
    finally:
        seg.close()
        seg.unlink()
    assert segment_owner("psm_1234") is None and segment_owner(f"{PREFIX}12x_ab") is None


def test_a_segment_exists_until_unlinked(tmp_path):
    seg = create_segment(64)
    try:
        assert segment_exists(seg.name)
    finally:
        seg.close()
        seg.unlink()
    assert not segment_exists(seg.name)
    assert segment_exists("anything", folder=tmp_path / "not-a-folder")     # cannot tell: kept


def test_a_dead_process_segment_is_reclaimed():
    run = subprocess.run([sys.executable, "-c", LEAK], capture_output=True, text=True, timeout=120)
    name = run.stdout.strip()
    assert run.returncode == 0 and name.startswith(PREFIX), run.stderr
    assert (SHM_FOLDER / name).exists()                   # left behind
    assert name in reclaim_orphans()
    assert not (SHM_FOLDER / name).exists()


def _ours(pid: int) -> set[str]:
    return {p.name for p in SHM_FOLDER.iterdir() if segment_owner(p.name) == pid}


@pytest.mark.slow
def test_a_player_killed_with_its_workers_leaves_nothing_after_the_next_start(tmp_path):
    """SIGKILL to the player's whole process group (workers and resource tracker too): its
    slots stay in /dev/shm until the next pipeline starts, which reclaims them."""
    player = subprocess.Popen([sys.executable, "-m", "cinegpu.player.cli", "play", str(SAMPLE),
                               "--headless", "--loop", "--frames", "1000000", "--workers", "1",
                               "--backend", "cpu"], cwd=tmp_path, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        while not _ours(player.pid) and time.monotonic() < deadline and player.poll() is None:
            time.sleep(0.2)
        assert _ours(player.pid), "the player made no slot"
    finally:
        os.killpg(player.pid, signal.SIGKILL)
        player.wait(30)
    time.sleep(1.0)
    left = _ours(player.pid)
    print(f"left by the killed player: {len(left)} segment(s)")
    from cinegpu.decode.pipeline import FramePipeline

    FramePipeline(backend="cpu", workers=1).close()
    assert not _ours(player.pid), f"still there after a new pipeline started: {left}"

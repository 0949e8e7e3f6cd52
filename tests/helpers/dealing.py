"""Frames dealt to mastering's encoder processes to the end, as :class:`ProcessCoders` deals
them (``cinegpu.jobs.frame_dealing``), the processes finishing frames at random."""

from __future__ import annotations

import random

from cinegpu.jobs.frame_dealing import FrameDealer


def deal_all(dealer: FrameDealer, frames: int, seed: int = 0) -> list[list[int]]:
    """Every frame dealt, processes finishing their oldest frame at random while none has
    room: each process's frames in the order it got them."""
    rng = random.Random(seed)
    held: list[list[int]] = [[] for _ in range(dealer.processes)]
    got: list[list[int]] = [[] for _ in range(dealer.processes)]
    for i in range(frames):
        while not dealer.has_room([len(h) for h in held]):
            busy = [p for p in range(dealer.processes) if held[p]]
            assert busy, "no room while every process is idle"
            held[rng.choice(busy)].pop(0)
        p = dealer.deal([len(h) for h in held])
        held[p].append(i)
        got[p].append(i)
        assert len(held[p]) <= dealer.capacity
    return got

"""Dealing input frames to mastering's encoder processes (``cinegpu.jobs.frame_dealing``):
one at a time to the process holding the fewest, or in runs of consecutive frames (a video
file, which each process decodes in order), never past a process's capacity, to the end."""

from __future__ import annotations

import pytest

from cinegpu.jobs.frame_dealing import FrameDealer
from helpers.dealing import deal_all


def test_one_at_a_time_goes_to_the_process_holding_the_fewest():
    dealer = FrameDealer(3, 4)
    assert [dealer.deal(held) for held in ([0, 0, 0], [1, 0, 0], [1, 1, 0], [2, 1, 1])] == [0, 1, 2, 1]
    assert dealer.has_room([4, 4, 3]) and not dealer.has_room([4, 4, 4])


@pytest.mark.parametrize("processes,threads", [(4, 4), (2, 8), (8, 2), (3, 5)])
def test_runs_are_consecutive_frames_and_every_frame_is_dealt(processes, threads):
    got = deal_all(FrameDealer(processes, 2 * threads, threads), 500, seed=processes)
    assert sorted(i for frames in got for i in frames) == list(range(500))
    for frames in got:
        starts = [k for k in range(len(frames)) if k == 0 or frames[k] != frames[k - 1] + 1]
        runs = [frames[a:b] for a, b in zip(starts, [*starts[1:], len(frames)])]
        assert all(len(r) % threads == 0 or r[-1] == 499 for r in runs), runs[:4]
        assert all(r[0] % threads == 0 for r in runs)


def test_a_run_waits_for_room_for_all_of_it():
    dealer = FrameDealer(2, 4, 3)
    assert not dealer.has_room([2, 2])          # 2 free in each: a run of 3 fits in neither
    assert dealer.has_room([1, 3]) and dealer.deal([1, 3]) == 0
    assert dealer.has_room([4, 0]) is False     # the run's process is full: it waits for it
    assert dealer.deal([2, 0]) == 0 and dealer.deal([3, 0]) == 0 and dealer.deal([3, 0]) == 1


def test_a_run_longer_than_a_process_holds_is_refused():
    with pytest.raises(ValueError, match="want 1..capacity"):
        FrameDealer(2, 4, 5)

"""The playback clock and scheduler, driven by a fake clock (no GL, no decoding)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from cinegpu.player.clock import PlaybackClock, Scheduler


class FakeTime:
    def __init__(self, t: float = 100.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


def _clock(n=48, rate=24, **kw):
    now = FakeTime()
    return PlaybackClock(Fraction(rate), n, now=now, **kw), now


def test_due_frame_follows_elapsed_time_at_the_edit_rate():
    clock, now = _clock(rate=Fraction(24000, 1001))
    clock.play()
    assert clock.due() == 0
    now.advance(1001 / 24000 * 10)          # exactly the presentation time of frame 10
    assert clock.due() == 10
    now.advance(1001 / 24000 * 0.999)
    assert clock.due() == 10
    assert clock.presentation_time(10) == pytest.approx(100.0 + 10 * 1001 / 24000)


def test_paused_clock_holds_and_resume_continues_from_there():
    clock, now = _clock()
    clock.play()
    now.advance(5 / 24 + 0.01)
    clock.pause()
    now.advance(3.0)
    assert clock.due() == 5 and not clock.playing
    clock.toggle()
    assert clock.due() == 5
    now.advance(2 / 24)
    assert clock.due() == 7


def test_step_pauses_and_clamps():
    clock, now = _clock(n=10)
    clock.play()
    now.advance(3 / 24)
    clock.step(1)
    assert (clock.due(), clock.playing) == (4, False)
    clock.step(-10)
    assert clock.due() == 0
    clock.step(+100)
    assert clock.due() == 9


def test_seek_seconds_home_end():
    clock, now = _clock(n=24 * 60)
    clock.play()
    now.advance(30.0)
    clock.seek_seconds(+10)
    assert clock.due() == 40 * 24
    clock.seek_seconds(-10)
    assert clock.due() == 30 * 24
    assert clock.playing
    clock.home()
    assert clock.due() == 0
    clock.end()
    assert clock.due() == 24 * 60 - 1
    now.advance(1 / 24)
    assert clock.due() is None and clock.ended


def test_loop_wraps_the_media_frame_but_not_the_timeline():
    clock, now = _clock(n=10, loop=True)
    clock.play()
    now.advance(23 / 24)
    assert clock.timeline() == 23 and clock.due() == 3
    assert clock.upcoming(4) == [3, 4, 5, 6]
    now.advance(6 / 24)
    assert clock.upcoming(3) == [9, 0, 1]


def _run(scheduler, now, ready, ticks, dt):
    shown = []
    for _ in range(ticks):
        n = scheduler.tick(ready)
        if n is not None:
            shown.append(n)
        now.advance(dt)
    return shown


def test_scheduler_shows_every_frame_when_ready():
    clock, now = _clock(n=10)
    s = Scheduler(clock)
    clock.play()
    shown = _run(s, now, lambda n: True, 40, 1 / 96)
    s.finish()
    assert shown == list(range(10))
    assert (s.stats.shown, s.stats.dropped, s.stats.late) == (10, 0, 0)


def test_scheduler_drops_frames_that_are_never_ready_and_never_slows_the_clock():
    clock, now = _clock(n=12)
    s = Scheduler(clock)
    clock.play()
    shown = _run(s, now, lambda n: n % 3 != 1, 12 * 4 + 4, 1 / 96)
    s.finish()
    assert shown == [0, 2, 3, 5, 6, 8, 9, 11]
    assert (s.stats.shown, s.stats.dropped) == (8, 4)
    assert now.t == pytest.approx(100.0 + 52 / 96)          # the clock ran on regardless
    assert clock.ended


def test_scheduler_counts_a_frame_shown_after_its_first_due_tick_as_late():
    clock, now = _clock(n=4)
    s = Scheduler(clock)
    clock.play()
    arrivals = {0: 0.0, 1: 1 / 24 + 0.01, 2: 2 / 24, 3: 3 / 24}   # frame 1 arrives 10 ms late
    def ready(n):
        return now.t - 100.0 >= arrivals[n] - 1e-12
    shown = _run(s, now, ready, 32, 1 / 192)
    s.finish()
    assert shown == [0, 1, 2, 3]
    assert (s.stats.shown, s.stats.late, s.stats.dropped) == (4, 1, 0)


def test_scheduler_slow_draws_drop_the_frames_in_between():
    clock, now = _clock(n=24)
    s = Scheduler(clock)
    clock.play()
    shown = _run(s, now, lambda n: True, 12, 2 / 24)      # a draw loop at half the edit rate
    s.finish()
    assert shown == list(range(0, 24, 2))
    assert (s.stats.shown, s.stats.dropped) == (12, 12)


def test_seek_and_step_are_not_counted_as_drops():
    clock, now = _clock(n=24 * 30)
    s = Scheduler(clock)
    clock.play()
    _run(s, now, lambda n: True, 4, 1 / 24)
    clock.seek_seconds(+10)
    shown = _run(s, now, lambda n: True, 2, 1 / 24)
    assert shown == [10 * 24 + 4, 10 * 24 + 5]
    clock.step(-1)                          # pauses at the frame due (246), then back one
    assert clock.due() == 10 * 24 + 5
    assert s.tick(lambda n: True) is None   # already on screen
    clock.step(-1)
    assert s.tick(lambda n: True) == 10 * 24 + 4
    clock.step(+1)
    assert s.tick(lambda n: True) == 10 * 24 + 5
    assert s.stats.dropped == 0 and s.stats.shown == 8


def test_paused_frame_that_is_not_ready_is_shown_when_it_arrives():
    clock, now = _clock(n=10)
    s = Scheduler(clock)
    clock.seek(5)
    assert s.tick(lambda n: False) is None
    assert s.tick(lambda n: True) == 5
    assert s.tick(lambda n: True) is None
    assert s.stats.late == 0


def test_loop_playback_keeps_counting_across_the_wrap():
    clock, now = _clock(n=5, loop=True)
    s = Scheduler(clock)
    clock.play()
    shown = _run(s, now, lambda n: True, 12 * 2, 1 / 48)
    assert shown == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1]
    assert s.stats.dropped == 0


def test_bad_arguments():
    with pytest.raises(ValueError):
        PlaybackClock(0, 10)
    with pytest.raises(ValueError):
        PlaybackClock(24, 0)


def test_finish_at_a_frame_limit_counts_the_unshown_positions_as_dropped():
    clock, now = _clock(n=5, loop=True)
    s = Scheduler(clock)
    clock.play()
    _run(s, now, lambda n: n != 3, 9 * 2, 1 / 48)        # 9 positions, media frame 3 never ready
    s.finish(12)
    assert (s.stats.shown, s.stats.dropped) == (7, 5)    # 3 and 8 dropped, 9..11 never reached


def test_summary_lists_dropped_positions_as_ranges():
    from cinegpu.player.clock import PlaybackStats, ranges_text

    stats = PlaybackStats()
    stats.drop(range(2, 5))
    stats.drop(range(9, 10))
    assert stats.dropped == 4 and stats.dropped_at == [2, 3, 4, 9]
    assert ranges_text(stats.dropped_at) == "2-4, 9"
    assert ranges_text([]) == ""

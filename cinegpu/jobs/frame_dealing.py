"""Which encoder process codes which input frame (:class:`.frame_coders.ProcessCoders`).

Frames are dealt out in submission order (0, 1, 2 ...), each to a process with room:

- one at a time (``run`` 1), each to the process holding the fewest: image files, which any
  process reads as cheaply whatever frame it is given;
- in runs of ``run`` consecutive frames, a run to a process with room for all of it: a video
  file, which each process decodes itself, in order. Dealt one at a time, a process of P was
  sent about every P-th frame and its decoder went through the others' frames to reach its own
  (intra or not: a seek flushes the decoder's frame threads); dealt in runs, it decodes its
  run's frames and seeks once to the next run.
"""

from __future__ import annotations

__all__ = ["FrameDealer"]


class FrameDealer:
    """Deals frames to ``processes`` processes of ``capacity`` frames each, in runs of
    ``run`` (1..capacity). The caller says what each process holds (``held``: a count per
    process) at every question."""

    def __init__(self, processes: int, capacity: int, run: int = 1) -> None:
        if processes < 1 or capacity < 1 or not 1 <= run <= capacity:
            raise ValueError(f"a run of {run} frames for processes of {capacity}: want 1..capacity")
        self.processes, self.capacity, self.run = processes, capacity, run
        self._owner: int | None = None      # the process of the run being dealt
        self._left = 0                      # frames of that run still to deal

    def has_room(self, held: list[int]) -> bool:
        """Whether the next frame can be dealt now."""
        if self._left:
            return held[self._owner] < self.capacity
        return min(held) <= self.capacity - self.run

    def deal(self, held: list[int]) -> int:
        """The process the next frame goes to (call only where :meth:`has_room`)."""
        if not self._left:
            self._owner = min(range(self.processes), key=lambda p: held[p])
            self._left = self.run
        self._left -= 1
        return self._owner

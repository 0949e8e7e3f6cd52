"""Playback in the tests: :func:`play_headless` plays a package or a folder headless on the CPU
back end with a screenshot of the frames asked for, :func:`reference_picture` is what a frame
must look like (the CPU decoder, then the numpy output transform), and :class:`FakeWindow` and
:class:`FakePresenter` stand in for the GL window and presenter of a player or an engine.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cinegpu.decode import transform
from cinegpu.decode.decoder import Decoder
from cinegpu.media import open_source


def reference_picture(codestream: bytes, xyz: bool, precision: int) -> np.ndarray:
    """Decode with the CPU back end, then the numpy output transform: (H, W, 3) uint16."""
    comps = Decoder("cpu").decode(codestream).components
    if xyz:
        return transform.xyz_to_rgb(*comps, primaries="p3d65", out_bits=16, in_bits=precision)
    planes = comps[:3] if len(comps) >= 3 else comps * 3
    top = (1 << precision) - 1
    return np.stack([np.rint(p.astype(np.float64) * 65535 / top) for p in planes], -1).astype(np.uint16)


def play_headless(path, tmp_path: Path, shots=None, **settings):
    """``cinegpu play``'s code on ``path``, headless on the CPU back end, with a screenshot
    ``tmp_path / shot{n}.png`` of each frame n of ``shots`` (by default every frame) and the
    other ``PlaySettings`` given: (its summary, {n: screenshot})."""
    from cinegpu.player.commands.play import play
    from cinegpu.player.settings import PlaySettings

    media = open_source(path)
    shots = range(media.frame_count) if shots is None else shots
    files = {n: tmp_path / f"shot{n}.png" for n in shots}
    try:
        summary = play(media, PlaySettings(headless=True, backend="cpu", screenshots=files, **settings))
    finally:
        media.close()
    return summary, files


class FakeWindow:
    """A window of ``size`` (width, height) pixels that flips nothing."""

    def __init__(self, size=(16, 9)):
        self.size = size

    def get_framebuffer_size(self):
        return self.size

    def flip(self):
        pass


class FakePresenter:
    """A presenter that draws nothing."""

    converts_xyz = True     # X'Y'Z' planes drawn (as nothing) as they are

    def draw(self, *args, **kwargs):
        pass

    def close(self):
        pass

"""The GL surface cinegpu draws on: a pyglet window, or an offscreen EGL one (headless).

pyglet decides between X11/EGL when ``pyglet.window`` is first imported, so
:func:`open_window` sets the options before importing it; in one process the
first choice stays.  Headless is chosen when asked for, or when there is no
display (no ``DISPLAY`` / ``WAYLAND_DISPLAY``).
"""

from __future__ import annotations

import os

import pyglet

from .errors import NO_STEREO, NoStereoDisplay

__all__ = ["NO_STEREO", "NoStereoDisplay", "has_display", "open_window"]


def has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def open_window(width: int, height: int, *, headless: bool, title: str = "cinegpu", stereo: bool = False):
    """A pyglet window with a current GL 3.3+ core context; hidden and vsync off when headless.
    ``stereo``: with left and right back buffers (quad-buffered stereo), else
    :class:`NoStereoDisplay` (a display, or EGL, may hand a mono config for a stereo one: the
    config given is checked)."""
    if headless:
        pyglet.options["headless"] = True
    pyglet.options["shadow_window"] = False
    pyglet.options["debug_gl"] = False       # errors are checked by name in cinegpu.interop.gl
    import pyglet.gl as gl  # noqa: PLC0415  (pyglet.gl: after the headless choice above)
    from pyglet import window as pyglet_window  # noqa: PLC0415  (pyglet.window: after the headless choice above)

    config = gl.Config(major_version=3, minor_version=3, forward_compatible=True, double_buffer=True,
                       **({"stereo": True} if stereo else {}))
    kwargs = dict(width=max(1, width), height=max(1, height), caption=title, visible=not headless,
                  vsync=not headless, resizable=not headless)
    try:
        window = pyglet_window.Window(config=config, **kwargs)
    except pyglet_window.NoSuchConfigException:
        if stereo:
            raise NoStereoDisplay("a stereo OpenGL config", NO_STEREO) from None
        window = pyglet_window.Window(**kwargs)
    if stereo and not window.config.stereo:
        window.close()
        raise NoStereoDisplay("a stereo OpenGL config", NO_STEREO)
    window.switch_to()
    return window

"""Video: the picture (:mod:`.frames`) and sound (:mod:`.sound`) of a video file (QuickTime,
MP4, MXF, Matroska) read for mastering through FFmpeg's libraries (PyAV).  This module itself
imports no PyAV, so that a command can tell a video INPUT from an image one cheaply."""

from __future__ import annotations

from pathlib import Path

__all__ = ["VIDEO_SUFFIXES", "is_video"]

#: File name suffixes read as video (QuickTime, MPEG-4 Part 14, MXF ST 377-1, Matroska).
VIDEO_SUFFIXES = (".mov", ".mp4", ".m4v", ".mxf", ".mkv")


def is_video(path) -> bool:
    """Whether ``path`` names a video file by its suffix (:data:`VIDEO_SUFFIXES`)."""
    return Path(path).suffix.lower() in VIDEO_SUFFIXES

"""FFmpeg's EBU R 128 meter (the ``ebur128`` filter, peak=true) as the loudness tests' reference:
:func:`ffmpeg_ebur128` runs it on a file and gives its last figures at 0.001 precision (the
``lavfi.r128.*`` metadata of the last frame, not the summary's 0.1), :func:`write_pcm_wav` a
plain 24-bit WAV that FFmpeg reads (``sound_util.write_wav``'s odd LIST chunk it refuses)."""

from __future__ import annotations

import math
import subprocess
import wave
from pathlib import Path

import numpy as np


def ffmpeg_ebur128(path: Path) -> dict:
    """``{"I": LUFS, "LRA": LU, "true_peak": dBTP, "true_peaks": [dBTP per channel]}`` of the whole
    file as ``ffmpeg -af ebur128=peak=true`` measures it."""
    run = subprocess.run(["ffmpeg", "-nostats", "-hide_banner", "-i", str(path), "-af",
                          "ebur128=peak=true:metadata=1,ametadata=print:file=-", "-f", "null", "-"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-1000:]
    last: dict[str, str] = {}
    for line in run.stdout.splitlines():
        if line.startswith("lavfi.r128."):
            key, _, value = line[len("lavfi.r128."):].partition("=")
            last[key] = value

    def db(v: str) -> float | None:
        return 20 * math.log10(float(v)) if float(v) > 0 else None

    peaks = [db(last[k]) for k in sorted((k for k in last if k.startswith("true_peaks_ch")),
                                         key=lambda k: int(k[len("true_peaks_ch"):]))]
    return {"I": float(last["I"]), "LRA": float(last["LRA"]), "true_peak": db(last["true_peak"]),
            "true_peaks": peaks}


def write_pcm_wav(path: Path, samples: np.ndarray, rate: int = 48000) -> Path:
    """``samples`` (n, channels), 24-bit values, as a plain WAVE_FORMAT_PCM file."""
    with wave.open(str(path), "wb") as w:
        w.setnchannels(samples.shape[1])
        w.setsampwidth(3)
        w.setframerate(rate)
        w.writeframes(np.ascontiguousarray(samples, "<i4").view(np.uint8).reshape(-1, 4)[:, :3].tobytes())
    return path

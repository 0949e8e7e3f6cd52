"""The QC report's plots, drawn with matplotlib (the Agg back end: no display) from the
figures :mod:`.gather` collected, each returned as PNG bytes for the page to inline.

* :func:`bitrate_plot`: Mbit/s of each frame (bytes x 8 x edit rate / 10^6) over the
  composition's time (s), DCI's 250 Mbit/s cap and the 230 Mbit/s safe level, the reel joins,
  and the frames ``check --decode`` found failing (red crosses);
* :func:`level_plot`: momentary (400 ms) and short-term (3 s) loudness (LUFS, EBU Tech 3341)
  over time, and the integrated loudness;
* :func:`timeline_plot`: each subtitle or caption track's cues (in to out, s) per reel;
* :func:`psnr_plot`: a reel's PSNR (dB) per frame against the source, per component and over
  all (``cinegpu master --report``), each eye of a 3D picture; frames decoded exactly
  (infinite PSNR, null in the JSON) are left out.

Each series is cut to at most :data:`.gather.MAX_POINTS` points (a bucket's largest value),
so a feature's plot costs what a short's does.
"""

from __future__ import annotations

import io

import numpy as np

from .gather import downsample

__all__ = ["bitrate_plot", "level_plot", "psnr_plot", "timeline_plot"]

#: Plot size, inches, and resolution, dots per inch (a 1000 x 300 pixel image).
SIZE, DPI = (10.0, 3.0), 100


def _pyplot():
    import matplotlib  # noqa: PLC0415  (optional: the report extra; and ~300 ms to import)
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt  # noqa: PLC0415  (optional: the report extra)
    return plt


def _png(fig, plt) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=DPI)
    plt.close(fig)
    return buf.getvalue()


def _reel_joins(ax, comp: dict) -> None:
    fps = comp.get("fps") or 24.0
    for reel in comp["reels"][1:]:
        ax.axvline(reel["first_frame"] / fps, color="0.6", linewidth=0.8, linestyle=":")


def bitrate_plot(comp: dict) -> bytes | None:
    """The picture's bit rate per frame (see the module); None without frame sizes."""
    fps = comp.get("fps")
    sizes = [s for r in comp["reels"] for s in r["picture"].get("sizes_bytes", [])]
    if not sizes or not fps:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=SIZE)
    mbps = np.asarray(sizes, np.float64) * 8 * fps / 1e6
    idx, val = downsample(mbps)
    ax.plot(idx / fps, val, linewidth=0.8, color="tab:blue", label="Mbit/s per frame")
    pic = comp["picture"]
    if "cap_mbps" in pic:
        ax.axhline(pic["cap_mbps"], color="tab:red", linewidth=1, label=f"DCI cap {pic['cap_mbps']:g}")
        ax.axhline(pic["safe_mbps"], color="tab:orange", linewidth=1, linestyle="--",
                   label=f"safe {pic['safe_mbps']:g}")
    bad = [f["composition_frame"] for r in comp["reels"] for f in r["picture"].get("decode_faults", [])]
    if bad:
        bad = bad[:5000]
        ys = [mbps[min(f, len(mbps) - 1)] for f in bad]
        ax.plot(np.asarray(bad) / fps, ys, "x", color="red", label="decode failed")
    _reel_joins(ax, comp)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("Mbit/s")
    ax.set_ylim(0, max(float(mbps.max()), pic.get("cap_mbps", 0)) * 1.08 or 1)
    ax.set_xlim(0, max(len(sizes) / fps, 1 / fps))
    ax.legend(loc="lower right", fontsize="small")
    ax.grid(alpha=0.3)
    return _png(fig, plt)


def level_plot(comp: dict) -> bytes | None:
    """Momentary and short-term loudness over time (see the module); None without sound figures."""
    sound = comp.get("sound") or {}
    level = sound.get("level")
    if not level or not level["momentary_seconds"]:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=SIZE)

    def series(values):
        return np.asarray([np.nan if v is None else v for v in values], np.float64)

    m = series(level["momentary_lufs"])
    ax.plot(level["momentary_seconds"], m, linewidth=0.6, color="tab:blue", alpha=0.6, label="momentary (400 ms)")
    if level["short_term_seconds"]:
        ax.plot(level["short_term_seconds"], series(level["short_term_lufs"]), linewidth=1.2,
                color="tab:green", label="short-term (3 s)")
    integrated = sound["loudness"]["integrated_lufs"]
    if integrated is not None:
        ax.axhline(integrated, color="tab:red", linewidth=1, linestyle="--",
                   label=f"integrated {integrated:.1f} LUFS")
    _reel_joins(ax, comp)
    finite = m[np.isfinite(m)]
    low = max(-70.0, float(finite.min()) - 3) if len(finite) else -70.0
    high = float(finite.max()) + 3 if len(finite) else 0.0
    ax.set_ylim(low, max(high, low + 10))
    ax.set_xlim(0, comp.get("seconds") or None)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("LUFS")
    ax.legend(loc="lower right", fontsize="small")
    ax.grid(alpha=0.3)
    return _png(fig, plt)


def timeline_plot(comp: dict) -> bytes | None:
    """The subtitle and caption cues, one row per track and reel (see the module); None
    without cues."""
    rows = [(f"reel {r['number']} {t['kind']}", t["cues"]) for r in comp["reels"] for t in r["timed_text"]]
    if not any(cues for _, cues in rows):
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(SIZE[0], max(1.6, 0.5 + 0.35 * len(rows))))
    for y, (_, cues) in enumerate(rows):
        spans = [(c["in"], c["out"] - c["in"]) for c in cues[:20000]]
        ax.broken_barh(spans, (y - 0.35, 0.7), color="tab:purple")
    ax.set_yticks(range(len(rows)), [name for name, _ in rows], fontsize="small")
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.invert_yaxis()
    _reel_joins(ax, comp)
    ax.set_xlim(0, comp.get("seconds") or None)
    ax.set_xlabel("time (s)")
    ax.grid(axis="x", alpha=0.3)
    return _png(fig, plt)


def _low_points(values: list) -> tuple[np.ndarray, np.ndarray]:
    """(indices, dB) of a PSNR series cut to :data:`.gather.MAX_POINTS` points, each bucket by
    its lowest value (the dips survive); None (lossless) as NaN, which is not drawn."""
    v = np.asarray([np.nan if x is None else x for x in values], np.float64)
    idx, low = downsample(-v)
    low = -low
    low[~np.isfinite(low)] = np.nan
    return idx, low


def psnr_plot(reel: dict, components: list[str], fps: float | None) -> bytes | None:
    """One reel's PSNR per frame (see the module): a line per component and the overall one
    (a 3D picture's right eye dashed) over the reel's frames; None where every frame decoded
    exactly (nothing finite to draw)."""
    eyes = reel["eyes"]
    if all(v is None for e in eyes for v in e["overall_db"]):
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=SIZE)
    colours = ("tab:red", "tab:green", "tab:blue")
    for e in eyes:
        style = "--" if e["eye"] == "right" else "-"
        tag = f" ({e['eye']})" if e["eye"] else ""
        for name, series, colour in zip(components, e["components_db"], colours):
            idx, db = _low_points(series)
            ax.plot(reel["first_frame"] + idx, db, style, linewidth=0.8, color=colour, label=f"{name}{tag}")
        idx, db = _low_points(e["overall_db"])
        ax.plot(reel["first_frame"] + idx, db, style, linewidth=1.2, color="black", label=f"all{tag}")
    ax.set_xlabel("composition frame" + (f" ({fps:g} fps)" if fps else ""))
    ax.set_ylabel("PSNR (dB)")
    ax.set_xlim(reel["first_frame"] - 0.5, reel["first_frame"] + max(reel["frames"], 1) - 0.5)
    ax.legend(loc="lower right", fontsize="small", ncol=2)
    ax.grid(alpha=0.3)
    return _png(fig, plt)

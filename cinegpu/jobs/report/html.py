"""The QC report as one self-contained HTML page: every image inline (``data:image/png;base64``),
the style sheet in the page, no script and no link to anything outside it, so it opens offline
and can be mailed as one file.  Every text from the package is escaped."""

from __future__ import annotations

import base64
from html import escape

from .gather import Gathered
from .plots import bitrate_plot, level_plot, psnr_plot, timeline_plot

__all__ = ["render"]

STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; max-width: 1100px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.05em; margin-top: 1.4em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.6em; text-align: right; }
th { background: #f3f3f3; } td.l, th.l { text-align: left; }
.ok { color: #1a7f37; font-weight: bold; } .bad { color: #c62828; font-weight: bold; }
.warn { color: #9a6700; } .note { color: #555; }
img.plot { width: 100%; max-width: 1000px; }
.thumbs { display: flex; flex-wrap: wrap; gap: 8px; }
figure { margin: 0; font-size: 0.8em; text-align: center; }
"""


def _img(png: bytes | None, alt: str, cls: str = "plot") -> str:
    if not png:
        return ""
    data = base64.b64encode(png).decode("ascii")
    return f'<img class="{cls}" alt="{escape(alt)}" src="data:image/png;base64,{data}">'


def _v(value, digits: int = 1, unit: str = "") -> str:
    if value is None:
        return "&ndash;"
    if isinstance(value, float):
        return f"{value:,.{digits}f}{unit}"
    if isinstance(value, int):
        return f"{value:,}{unit}"
    return escape(str(value)) + unit


def _lines(items: list[str], cls: str, label: str) -> str:
    return "".join(f'<li class="{cls}">{label}: {escape(t)}</li>' for t in items)


def _checks(checks: dict) -> str:
    verdict = '<span class="ok">OK</span>' if checks["ok"] else '<span class="bad">FAILED</span>'
    ran = " and ".join({"hashes": "sizes and hashes against the PKLs", "decode": "every frame decoded"}[r]
                       for r in checks["ran"]) or "nothing"
    out = [f"<h2>Checks</h2><p>Checked: {escape(ran)}. Verdict: {verdict}</p><ul>"]
    out.append(_lines(checks["problems"], "bad", "problem"))
    out.append(_lines([f["text"] for f in checks["faults"]], "bad", "decode failed"))
    out.append(_lines(checks["warnings"], "warn", "warning"))
    out.append(_lines(checks["notes"], "note", "note"))
    out.append("</ul>")
    return "".join(out)


def _picture(comp: dict) -> str:
    out = ["<h3>Picture</h3>", _img(bitrate_plot(comp), "bit rate per frame")]
    rows = [("composition", comp["picture"], "", [])]
    rows += [(f"reel {r['number']}", r["picture"], r["picture"].get("track") or "",
              r["picture"].get("decode_faults", [])) for r in comp["reels"]]
    out.append('<table><tr><th class="l">what</th><th class="l">track</th><th>frames</th><th>min bytes</th>'
               "<th>mean bytes</th><th>max bytes</th><th>mean Mbit/s</th><th>max Mbit/s</th>"
               "<th>over cap</th><th>above safe</th><th>decode faults</th></tr>")
    for name, p, track, faults in rows:
        over = p.get("over_cap")
        cls = ' class="bad"' if over else ""
        out.append(f'<tr><td class="l">{escape(name)}</td><td class="l">{escape(track)}</td>'
                   f"<td>{_v(p.get('frames'))}</td><td>{_v(p.get('min_bytes'))}</td>"
                   f"<td>{_v(p.get('mean_bytes'), 0)}</td><td>{_v(p.get('max_bytes'))}</td>"
                   f"<td>{_v(p.get('mean_mbps'), 2)}</td><td>{_v(p.get('max_mbps'), 2)}</td>"
                   f"<td{cls}>{_v(over)}</td><td>{_v(p.get('above_safe'))}</td><td>{len(faults)}</td></tr>")
    out.append("</table>")
    for r in comp["reels"]:
        p = r["picture"]
        if p.get("error"):
            out.append(f'<p class="warn">reel {r["number"]}: {escape(p["error"])}</p>')
        if p.get("decode_faults"):
            out.append(f"<p>reel {r['number']}: frames that failed to decode</p><ul>"
                       + _lines([f"frame {f['composition_frame']} (track frame {f['frame']}"
                                 + (f", {f['eye']} eye" if f["eye"] else "") + f"): {f['error']}"
                                 for f in p["decode_faults"][:200]], "bad", "failed") + "</ul>")
    return "".join(out)


def _db_row(name: str, eye, frames: int, lossless: int, overall: dict, per: dict) -> str:
    cells = "".join(f"<td>{_v(s['mean_db'], 2)}</td>" for s in per.values())
    return (f'<tr><td class="l">{escape(name)}</td><td class="l">{escape(eye or "")}</td><td>{_v(frames)}</td>'
            f"<td>{_v(lossless)}</td><td>{_v(overall['min_db'], 2)}</td><td>{_v(overall['mean_db'], 2)}</td>"
            f"<td>{_v(overall['max_db'], 2)}</td>{cells}</tr>")


def _psnr(comp: dict) -> str:
    """The master's PSNR against its source (``cinegpu master --report``): a plot and a row
    per reel and eye; nothing for a report of ``check``."""
    psnr = comp.get("psnr")
    if psnr is None:
        return ""
    names = psnr["components"]
    out = ["<h3>PSNR against the source</h3>",
           f"<p>Each frame decoded and compared with the code values handed to the encoder "
           f"({escape(', '.join(names))}, {psnr['bits']} bits, peak {psnr['peak']}): 10 log10(peak&sup2; / MSE) "
           f"dB per component and over all samples; a frame decoded exactly is lossless (infinite PSNR, "
           f"not drawn).</p>"]
    if psnr["lossless"]:
        out.append('<p class="ok">Lossless: every frame decoded exactly.</p>')
    for reel in psnr["reels"]:
        out.append(_img(psnr_plot(reel, names, comp.get("fps")), f"PSNR per frame, reel {reel['number']}"))
    heads = "".join(f"<th>mean {escape(n)} dB</th>" for n in names)
    out.append('<table><tr><th class="l">what</th><th class="l">eye</th><th>codestreams</th><th>lossless</th>'
               f"<th>min dB</th><th>mean dB</th><th>max dB</th>{heads}</tr>")
    eyes = [e for r in psnr["reels"] for e in r["eyes"]]
    both = "both" if any(e["eye"] for e in eyes) else None
    out.append(_db_row("composition", both, psnr["codestreams"], sum(e["lossless_frames"] for e in eyes),
                       psnr["overall"], psnr["per_component"]))
    for reel in psnr["reels"]:
        for e in reel["eyes"]:
            out.append(_db_row(f"reel {reel['number']}", e["eye"], e["frames"], e["lossless_frames"],
                               e["overall"], e["per_component"]))
    out.append("</table>")
    return "".join(out)


def _loudness_row(name: str, track: str, lo: dict) -> str:
    channels = ", ".join(_v(v) for v in lo["channel_true_peak_dbtp"])
    per = ", ".join(_v(v) for v in lo["channel_integrated_lufs"])
    return (f'<tr><td class="l">{escape(name)}</td><td class="l">{escape(track)}</td>'
            f"<td>{_v(lo['integrated_lufs'])}</td><td>{_v(lo['range_lu'])}</td><td>{_v(lo['true_peak_dbtp'])}</td>"
            f"<td>{_v(lo['sample_peak_dbfs'])}</td><td class=\"l\">{per}</td><td class=\"l\">{channels}</td></tr>")


def _sound(comp: dict) -> str:
    sound = comp.get("sound")
    if sound is None:
        return "<h3>Sound</h3><p>No sound.</p>"
    out = ["<h3>Sound</h3>"]
    if sound.get("error"):
        out.append(f'<p class="warn">{escape(sound["error"])}</p>')
    else:
        labels = ", ".join(sound["labels"]) if sound["labels"] else "unlabelled"
        out.append(f"<p>{escape(sound['summary'])}; channels {escape(labels)}; BS.1770-4 weights "
                   f"{escape(', '.join(f'{w:g}' for w in sound['weights']))}. Loudness per ITU-R BS.1770-4 / "
                   f"EBU R 128 (LUFS), range per EBU Tech 3342 (LU), true peak oversampled to 192 kHz or more (dBTP).</p>")
        out.append(_img(level_plot(comp), "loudness over time"))
        out.append('<table><tr><th class="l">what</th><th class="l">track</th><th>integrated LUFS</th>'
                   "<th>range LU</th><th>true peak dBTP</th><th>sample peak dBFS</th>"
                   '<th class="l">per channel LUFS</th><th class="l">per channel dBTP</th></tr>')
        out.append(_loudness_row("composition", "", sound["loudness"]))
        for r in comp["reels"]:
            s = r.get("sound") or {}
            if "loudness" in s:
                out.append(_loudness_row(f"reel {r['number']}", s.get("track") or "", s["loudness"]))
            else:
                out.append(f'<tr><td class="l">reel {r["number"]}</td><td class="l" colspan="7">'
                           f'{escape(s.get("error", "no sound"))}</td></tr>')
        out.append("</table>")
    out.append("<ul>" + _lines(sound.get("warnings", []), "warn", "warning") + "</ul>")
    return "".join(out)


def _timed_text(comp: dict) -> str:
    tracks = [(r, t) for r in comp["reels"] for t in r["timed_text"]]
    if not tracks:
        return "<h3>Subtitles and captions</h3><p>None.</p>"
    out = [f"<h3>Subtitles and captions</h3><p>{comp['cue_count']} cue(s).</p>",
           _img(timeline_plot(comp), "cue timeline"),
           '<table><tr><th class="l">reel</th><th class="l">kind</th><th class="l">track</th>'
           '<th class="l">language</th><th>cues</th><th>first in (s)</th><th>last out (s)</th></tr>']
    for r, t in tracks:
        cues = t["cues"]
        out.append(f'<tr><td class="l">{r["number"]}</td><td class="l">{escape(t["kind"])}</td>'
                   f'<td class="l">{escape(t["track"] or "")}</td><td class="l">{escape(t.get("language") or "")}</td>'
                   f"<td>{t['cue_count']}</td><td>{_v(cues[0]['in'], 3) if cues else '&ndash;'}</td>"
                   f"<td>{_v(cues[-1]['out'], 3) if cues else '&ndash;'}</td></tr>")
    out.append("</table>")
    for r, t in tracks:
        if t.get("error"):
            out.append(f'<p class="warn">reel {r["number"]} {escape(t["kind"])}: {escape(t["error"])}</p>')
        out.append("<ul>" + _lines(t.get("warnings", []), "warn", "warning") + "</ul>")
    return "".join(out)


def _thumbnails(comp: dict, index: int, gathered: Gathered) -> str:
    out = ["<h3>Thumbnails</h3><div class=\"thumbs\">"]
    for t in comp["thumbnails"]:
        if "frame" not in t or (index, t["frame"]) not in gathered.thumbnails:
            out.append(f'<p class="warn">{escape(t.get("error", ""))}</p>')
            continue
        frame = t["frame"]
        out.append(f"<figure>{_img(gathered.thumbnails[(index, frame)], f'frame {frame}', 'thumb')}"
                   f"<figcaption>frame {frame}, {t['seconds']:.1f} s</figcaption></figure>")
    out.append("</div>")
    return "".join(out)


def _composition(comp: dict, index: int, gathered: Gathered) -> str:
    return "".join([
        f"<h2>Composition: {escape(comp['title'])}</h2>",
        f'<table><tr><th class="l">CPL</th><td class="l">{escape(comp["cpl"])}</td></tr>'
        f'<tr><th class="l">id</th><td class="l">{escape(comp["id"])}</td></tr>'
        f'<tr><th class="l">kind</th><td class="l">{escape(comp["content_kind"] or "")} ({escape(comp["flavour"])})</td></tr>'
        f'<tr><th class="l">edit rate</th><td class="l">{escape(comp["edit_rate"] or "unknown")}</td></tr>'
        f'<tr><th class="l">length</th><td class="l">{comp["frames"]} frames ({_v(comp["seconds"], 3)} s), '
        f'{len(comp["reels"])} reel(s){", stereoscopic" if comp["stereoscopic"] else ""}</td></tr></table>',
        _picture(comp), _psnr(comp), _sound(comp), _timed_text(comp), _thumbnails(comp, index, gathered)])


def render(gathered: Gathered) -> str:
    """The report page of ``gathered`` (see the module)."""
    d = gathered.data
    title = f"QC report: {d['package']['root']}"
    body = [f"<h1>{escape(title)}</h1>",
            f"<p>{escape(d['package']['kind'])}, {d['package']['assets']} assets; made by cinegpu "
            f"{escape(d['cinegpu'])} at {escape(d['generated'])}.</p>", _checks(d["checks"])]
    body += [_composition(c, i, gathered) for i, c in enumerate(d["compositions"])]
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"<style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")

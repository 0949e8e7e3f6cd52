"""The differential harness (issue 48): codestreams made by other encoders with random seeded
options, decoded by cinegpu (lenient, the default, and strict) and by ``opj_decompress``.

A case is one seed. It picks an encoder (``opj_compress``, ``grk_compress``, ``ojph_compress``
for HTJ2K, FFmpeg's own JPEG 2000 encoder (its integer 9/7 or 5/3, its rate control, its
tiles), or cinegpu's own encoder, whose quality layers are cut from each code-block's
pass lengths after rate control, not terminated, as Kakadu-style encoders cut them), a
synthetic image (tests/helpers/peers.py: 1-4 components, 8-16 bits, odd sizes, sometimes signed or
sub-sampled) and options: 1-8 layers at rates that cut code-blocks mid-pass, every
progression order, code-blocks 4x4..64x64 and every mode switch (Grok's HT code-blocks too),
tiles, tile-parts, image and tile offsets, precincts, SOP/EPH, PLT/TLM, 5/3 and 9/7. Some cases
also cut the codestream at a random byte of its tile data.

What must hold (:func:`check`):

* a whole stream that OpenJPEG decodes, ours decodes too (lenient): reversible identical,
  irreversible within 1; strict decodes the same samples, or refuses it while lenient warned
  of what it tolerated (a departure the encoder made);
* a stream cut short: where OpenJPEG decodes it, ours decodes it (lenient) to the same
  component shapes, and warns;
* a stream neither decodes is fine; one only ours decodes is fine too (we decode more).

A stream OpenJPEG's decoder reads only in part is checked for a whole decode instead (every
component of its size by B-2) and a warning: a tile of more than 255 tile-parts (opj_compress
writes them, its TPsot wrapping; opj_decompress stops at the part whose TPsot equals the
wrapped TNsot).
"""

from __future__ import annotations

import random
import shutil
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cinegpu.decode import CodestreamError, LenientWarning, decode
from cinegpu.decode.codestream.header import parse_codestream
from cinegpu.encode import encode
from helpers.peers import Image, image_planes, read_pgx, write_input

ENCODERS = {"opj": "opj_compress", "grk": "grk_compress", "ojph": "ojph_compress", "cinegpu": None,
            "ffmpeg": "ffmpeg"}
PROGRESSIONS = ("LRCP", "RLCP", "RPCL", "PCRL", "CPRL")


@dataclass(frozen=True)
class DiffCase:
    """One seeded case: the encoder, its input image and options, and where to cut."""

    seed: int
    tool: str
    img: Image
    args: tuple  #: the encoder's arguments (cinegpu: keyword pairs for ``encode``)
    lossy: bool
    cut: float | None = None  #: keep this share of the bytes after the main header (None: all)

    @property
    def id(self) -> str:
        return f"{self.seed}-{self.tool}{'-cut' if self.cut is not None else ''}"


def available(tool: str) -> bool:
    return tool == "cinegpu" or shutil.which(ENCODERS[tool]) is not None


def _levels(rng: random.Random, img: Image, top: int = 6) -> int:
    return rng.randint(0, max(0, min(top, int(np.log2(max(min(img.w, img.h), 1))) - 1)))


def _rates(rng: random.Random) -> list[float]:
    n = rng.choice([1, 1, 2, 3, 5, 8])
    return sorted({round(rng.uniform(2.0, 90.0), 1) for _ in range(n)}, reverse=True)


def _precincts(rng: random.Random) -> str:
    return ",".join(f"[{2 ** rng.randint(4, 8)},{2 ** rng.randint(4, 8)}]" for _ in range(rng.randint(1, 3)))


def _image(rng: random.Random, seed: int, tool: str) -> Image:
    w, h = rng.randint(9, 160), rng.randint(9, 130)
    if tool == "ojph":  # PGM/PPM input
        return Image(w=w, h=h, n=rng.choice([1, 3]), bits=rng.choice([8, 8, 12, 16]), seed=seed)
    if tool == "ffmpeg":  # raw video of 8 or 16 bits, grey or RGB (written by make_stream)
        return Image(w=w, h=h, n=rng.choice([1, 3]), bits=rng.choice([8, 8, 16]), fmt="raw", seed=seed)
    n = rng.choice([1, 1, 2, 3, 3, 4])
    if n == 1:
        return Image(w=w, h=h, n=1, bits=rng.choice([8, 9, 10, 12, 14, 16]), signed=rng.random() < 0.2,
                     fmt="pgx", seed=seed)
    # opj_compress refuses raw input of 9-11 and 13-15 bits
    bits = rng.choice([8, 8, 12, 16])
    # not 4:2:0 over three components: opj_decompress takes those for sYCC and converts them
    sub = ((1, 1), (1, 2), (2, 1)) if n == 3 and rng.random() < 0.15 else ()
    return Image(w=w, h=h, n=n, bits=bits, signed=rng.random() < 0.1, fmt="raw", sub=sub, seed=seed)


def _part1_args(rng: random.Random, img: Image, grok: bool) -> tuple[list[str], bool]:
    a = ["-n", str(_levels(rng, img) + 1)]
    lossy = rng.random() < 0.5
    if lossy:
        a.append("-I")
    if rng.random() < 0.8:
        a += ["-r", ",".join(str(r) for r in _rates(rng))]
    a += ["-p", rng.choice(PROGRESSIONS)]
    a += ["-b", f"{2 ** rng.randint(2, 6)},{2 ** rng.randint(2, 6)}"]
    if grok and rng.random() < 0.25:
        a += ["-M", "64"]       # HTJ2K code-blocks (Part 15) by Grok's own HT block coder
    elif rng.random() < 0.5:
        a += ["-M", str(rng.randint(1, 63))]
    if rng.random() < 0.3:
        a += ["-t", f"{rng.randint(8, max(img.w, 8))},{rng.randint(8, max(img.h, 8))}"]
        if rng.random() < 0.3:
            a += ["-T", f"{rng.randint(0, 7)},{rng.randint(0, 7)}", "-d", f"{rng.randint(7, 20)},{rng.randint(7, 20)}"]
    elif rng.random() < 0.15:
        a += ["-d", f"{rng.randint(0, 30)},{rng.randint(0, 30)}"]
    if rng.random() < 0.3:
        a += ["-c", _precincts(rng)]
    if rng.random() < 0.2:
        a.append("-S" if grok else "-SOP")
    if rng.random() < 0.2:
        a.append("-E" if grok else "-EPH")
    if rng.random() < 0.2:
        a += ["-u" if grok else "-TP", rng.choice("RLC")]
    if rng.random() < 0.2:
        a.append("-L" if grok else "-PLT")
    if not grok and rng.random() < 0.2:
        a.append("-TLM")
    if img.sub:
        a += ["-Y" if grok else "-mct", "0"]
    return a, lossy


def _ojph_args(rng: random.Random, img: Image) -> tuple[list[str], bool]:
    a = ["-num_decomps", str(_levels(rng, img, 5))]
    lossy = rng.random() < 0.5
    a += ["-reversible", "false" if lossy else "true"]
    if lossy:
        a += ["-qstep", str(rng.choice([0.001, 0.004, 0.01, 0.05, 0.2]))]
    a += ["-block_size", f"{{{2 ** rng.randint(3, 6)},{2 ** rng.randint(3, 6)}}}"]
    a += ["-prog_order", rng.choice(PROGRESSIONS)]
    if rng.random() < 0.3:
        a += ["-precincts", ",".join(f"{{{2 ** rng.randint(6, 8)},{2 ** rng.randint(6, 8)}}}"
                                     for _ in range(rng.randint(1, 2)))]
    if rng.random() < 0.3:
        a += ["-tile_size", f"{{{rng.randint(33, max(img.w, 33))},{rng.randint(33, max(img.h, 33))}}}"]
    if img.n == 3 and rng.random() < 0.3:
        a += ["-colour_trans", "false"]
    return a, lossy


#: FFmpeg's raw input for an :class:`Image` of ``(components, bits)``, and the pixel formats its
#: encoder may be asked to code it as (not sub-sampled chroma: opj_decompress would convert it)
FFMPEG_FORMATS = {(1, 8): ("gray", ("gray",)), (1, 16): ("gray16le", ("gray16le",)),
                  (3, 8): ("rgb24", ("rgb24", "yuv444p")), (3, 16): ("rgb48le", ("rgb48le",))}


def _ffmpeg_args(rng: random.Random, img: Image) -> tuple[list[str], bool]:
    """Output options of FFmpeg's ``jpeg2000`` encoder: pixel format, wavelet (``dwt97int``, its
    integer 9/7, is irreversible), progression, tiles, SOP/EPH and quality layers at
    compression ratios (its rate control cuts code-blocks)."""
    pred = rng.choice(["dwt97int", "dwt53"])
    a = ["-pix_fmt", rng.choice(FFMPEG_FORMATS[img.n, img.bits][1]), "-pred", pred,
         "-prog", rng.choice(PROGRESSIONS).lower(), "-sop", str(int(rng.random() < 0.3)),
         "-eph", str(int(rng.random() < 0.3))]
    if rng.random() < 0.5:
        a += ["-tile_width", str(rng.randint(16, max(img.w, 16))), "-tile_height", str(rng.randint(16, max(img.h, 16)))]
    if rng.random() < 0.6:
        a += ["-layer_rates", ",".join(map(str, sorted(rng.sample(range(2, 60), rng.randint(1, 3)), reverse=True)))]
    return a, pred == "dwt97int"


def _cinegpu_args(rng: random.Random, img: Image) -> tuple[tuple, bool]:
    lossy = rng.random() < 0.6
    kw: dict = {"levels": _levels(rng, img, 5), "reversible": not lossy,
                "codeblock": (2 ** rng.randint(2, 6), 2 ** rng.randint(2, 6)),
                "progression": rng.choice(PROGRESSIONS), "style": rng.choice([0, 0, 0, 1, 2, 4, 8, 16, 32, 63])}
    samples = img.w * img.h * img.n * img.bits
    if rng.random() < 0.7:  # layers cut by rate control, each block's bytes truncated at pass ends
        kw["layers"] = rng.choice([1, 2, 3, 5, 8])
        kw["bitrate"] = int(samples * rng.uniform(0.05, 0.6) * 24 / 8) * 8
    if lossy:
        kw["quantization"] = rng.choice(["expounded", "expounded", "derived"])
        kw["guard_bits"] = rng.choice([None, 1, 2, 3])
        kw["base_step"] = rng.choice([0.5, 1.0, 4.0, 16.0])
    if rng.random() < 0.3:
        kw["tiles"] = (rng.randint(16, max(img.w, 16)), rng.randint(16, max(img.h, 16)))
    if rng.random() < 0.3:
        kw["precincts"] = [(2 ** rng.randint(4, 7), 2 ** rng.randint(4, 7))] * (kw["levels"] + 1)
    return tuple(sorted(kw.items())), lossy


#: the sample depths of :func:`make_case`'s ``deep`` images (OpenJPEG decodes up to 31 bits;
#: at 24 bits opj_compress's streams with rates decode far from the source image, in OpenJPEG
#: and here alike, so only agreement with OpenJPEG is asked)
DEEP_BITS = (17, 18, 20, 22, 24)


def make_case(seed: int, tools: tuple[str, ...] = tuple(ENCODERS), cut_share: float = 0.25, *,
              deep: bool = False) -> DiffCase:
    """The case of ``seed``: its encoder among ``tools``, image, options and cut. ``deep``:
    a one-component PGX image of :data:`DEEP_BITS` bits instead (``opj_compress`` only: the
    other encoders take at most 16), the options drawn as for any other."""
    rng = random.Random(seed)
    tool = rng.choice(tools)
    img = _image(rng, seed, tool)
    if deep:
        if tool != "opj":
            raise ValueError(f"deep images are for opj_compress, not {tool}")
        img = Image(w=img.w, h=img.h, n=1, bits=random.Random(seed).choice(DEEP_BITS), fmt="pgx", seed=seed)
    if tool == "ojph":
        args, lossy = _ojph_args(rng, img)
    elif tool == "cinegpu":
        args, lossy = _cinegpu_args(rng, img)
    elif tool == "ffmpeg":
        args, lossy = _ffmpeg_args(rng, img)
    else:
        args, lossy = _part1_args(rng, img, grok=tool == "grk")
    cut = round(rng.uniform(0.02, 0.98), 3) if rng.random() < cut_share else None
    return DiffCase(seed, tool, img, tuple(args), lossy, cut)


class EncoderRefused(Exception):
    """The encoder would not make this case (options it does not take together)."""


def make_stream(case: DiffCase, folder: Path) -> bytes:
    """The codestream of ``case`` (whole); :class:`EncoderRefused` when the encoder declines."""
    if case.tool == "cinegpu":
        planes = image_planes(case.img)
        try:
            return encode(planes if case.img.sub else np.stack(planes, -1) if case.img.n > 1 else planes[0],
                          bits=case.img.bits, signed=case.img.signed, backend="cpu", **dict(case.args))
        except ValueError as exc:  # options the encoder refuses (its checks say which)
            raise EncoderRefused(str(exc)) from exc
    out = folder / "x.j2k"
    if case.tool == "ffmpeg":
        cmd = _ffmpeg_command(case, folder, out)
    else:
        src, extra = write_input(case.img, folder)
        cmd = [ENCODERS[case.tool], "-i", str(src), "-o", str(out), *extra, *case.args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0 or not out.exists() or out.stat().st_size == 0:
        raise EncoderRefused(f"{' '.join(cmd[:1] + list(case.args))}: {(p.stdout + p.stderr)[-300:]}")
    return out.read_bytes()


def made_streams(seeds, tools: tuple[str, ...], root: Path, cut_share: float = 0.25):
    """(seed, case, its codestream, its folder) for each of ``seeds`` whose encoder made a
    stream (the case's folder under ``root``, made here; the cases of :func:`make_case`)."""
    for seed in seeds:
        case = make_case(seed, tools, cut_share)
        folder = root / str(seed)
        folder.mkdir()
        try:
            data = make_stream(case, folder)
        except EncoderRefused:
            continue
        yield seed, case, data, folder


def _ffmpeg_command(case: DiffCase, folder: Path, out: Path) -> list[str]:
    """FFmpeg's command that codes ``case``'s image (written here as raw video: grey, or RGB
    interleaved; 16 bits little-endian) into the codestream ``out``."""
    img = case.img
    src = folder / "in.rgb"
    planes = image_planes(img)
    pixels = planes[0] if img.n == 1 else np.stack(planes, -1)
    src.write_bytes(pixels.astype("<u2" if img.bits > 8 else "u1").tobytes())
    return ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", FFMPEG_FORMATS[img.n, img.bits][0],
            "-s", f"{img.w}x{img.h}", "-i", str(src), "-frames:v", "1", "-c:v", "jpeg2000", "-format", "j2k",
            *case.args, "-update", "1", "-f", "image2", str(out)]


def opj_decode(data: bytes, folder: Path, partial: bool = False) -> list[np.ndarray] | None:
    """What ``opj_decompress`` writes per component (PGX), or None where it fails;
    ``partial``: with ``-allow-partial`` (OpenJPEG's leniency for a codestream cut short)."""
    ref = folder / "ref"
    shutil.rmtree(ref, ignore_errors=True)
    ref.mkdir()
    src = folder / "in.j2k"
    src.write_bytes(data)
    p = subprocess.run(["opj_decompress", "-i", str(src), "-o", str(ref / "out.pgx"),
                        *(["-allow-partial"] if partial else [])], capture_output=True, text=True, timeout=120)
    files = sorted(ref.glob("out*.pgx"), key=lambda f: int(f.stem.rpartition("_")[2] or 0) if f.stem != "out" else -1)
    if p.returncode != 0 or not files:
        return None
    return [read_pgx(f) for f in files]


def _ours(data: bytes, strict: bool) -> tuple[list[np.ndarray] | None, list[str], str | None]:
    """(components or None, LenientWarning lines, the error's text)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", LenientWarning)
        try:
            got = decode(data, strict=strict)
            error = None
        except CodestreamError as exc:
            got, error = None, str(exc)
    return got, [str(w.message) for w in seen if issubclass(w.category, LenientWarning)], error


def _peak(got: list[np.ndarray], ref: list[np.ndarray]) -> int | None:
    """The largest sample difference, or None where the components' number or shapes differ."""
    if len(got) != len(ref) or any(g.shape != r.shape for g, r in zip(got, ref)):
        return None
    return max((int(np.abs(g.astype(np.int64) - r).max()) for g, r in zip(got, ref) if g.size), default=0)


def _parts_per_tile(data: bytes) -> int:
    try:
        cs = parse_codestream(data, strict=False)
    except CodestreamError:
        return 0
    return max((len(t.parts) for t in cs.tiles.values()), default=0)


def cut_stream(data: bytes, share: float) -> bytes:
    """``data`` cut at ``share`` of the bytes after its main header (never inside the header)."""
    try:
        start = parse_codestream(data, main_only=True).main_end
    except CodestreamError:
        start = 0
    return data[: start + int((len(data) - start) * share)]


def check(case: DiffCase, data: bytes, folder: Path) -> list[str]:
    """What ``case`` breaks of the rules in the module docstring (empty: it agrees)."""
    if case.cut is not None:
        data = cut_stream(data, case.cut)
    ref = opj_decode(data, folder, partial=case.cut is not None)
    lenient, said, error = _ours(data, strict=False)
    problems = []
    if ref is None:
        return problems  # OpenJPEG refuses it: ours may refuse or decode
    if lenient is None:
        return [f"OpenJPEG decodes it, ours refuses: {error}"]
    peak = _peak(lenient, ref)
    if case.cut is not None:
        if peak is None:
            problems.append("component shapes differ from OpenJPEG's")
        if not said:
            problems.append("a cut stream decoded without a warning")
        return problems
    if _parts_per_tile(data) > 255:  # OpenJPEG reads such a tile only in part (module docstring)
        # the components' sizes by B-2 (the source planes' ignore an odd origin of sub-sampled ones)
        sizes = [(h, w) for w, h in parse_codestream(data, main_only=True).siz.component_sizes(0)]
        if lenient is None or [g.shape for g in lenient] != sizes or not said:
            problems.append("a tile of more than 255 tile-parts: not decoded whole with a warning")
        return problems
    allowed = 1 if case.lossy else 0
    if peak is None or peak > allowed:
        problems.append(f"lenient: peak error {peak} against OpenJPEG (allowed {allowed})")
    strict, _, strict_error = _ours(data, strict=True)
    if strict is None:
        if not said:
            problems.append(f"strict refuses ({strict_error}) but lenient warned of nothing")
    elif _peak(strict, lenient) != 0:
        problems.append("strict and lenient decode different samples")
    return problems

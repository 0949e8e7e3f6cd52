"""The frame decoder: codestream in, component arrays out.

:class:`Decoder` keeps decode plans between frames (a reel's frames share
their main header), so only tier-2, tier-1 and reconstruction run per frame.
:func:`cinegpu.decode.decode` is a one-shot wrapper around it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np

from .codestream.header import Codestream, parse_codestream, tile_part_ppm_headers
from .errors import UnsupportedFeature
from .jp2 import apply_palette, read_jp2
from .plan import TilePlan, build_tile_plan, check_plan
from .reconstruct import reconstruct_tile
from .tile import TileReport, decode_tile

log = logging.getLogger("cinegpu.decode")

#: Plans kept per decoder (one per distinct tile header and reduce level).
PLAN_CACHE_SIZE = 4096


@dataclass
class Frame:
    """A decoded frame: one array per component, and what was concealed."""

    components: list[np.ndarray]
    reports: list[TileReport] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: seconds per stage: "parse" (headers, plan), "tier2", "tier1", "reconstruct"
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def damaged(self) -> bool:
        return any(r.faults for r in self.reports)


def _sample_dtype(precision: int, signed: bool):
    if signed:
        return np.int8 if precision <= 8 else np.int16 if precision <= 16 else np.int32
    return np.uint8 if precision <= 8 else np.uint16 if precision <= 16 else np.int32


def select_backend(backend: str):
    """(transform module, array module, name) for "cpu", "cuda" or "auto"."""
    from . import transform

    if backend == "cpu":
        return transform, np, "cpu"
    if backend in ("cuda", "auto"):
        try:
            import cupy

            if cupy.cuda.is_available():
                from .transform import cuda_backend

                return cuda_backend, cupy, "cuda"
        except Exception as exc:  # probing is quiet: any import or driver failure
            if backend == "cuda":
                raise UnsupportedFeature(f"CUDA back end unavailable: {exc}") from None
        if backend == "cuda":
            raise UnsupportedFeature("CUDA back end unavailable: no CUDA device")
        return transform, np, "cpu"
    raise ValueError(f"unknown back end {backend!r}: use 'cpu', 'cuda' or 'auto'")


class Decoder:
    """Decodes frames, reusing plans across frames with the same headers."""

    def __init__(self, backend: str = "cpu") -> None:
        self.transform, self.xp, self.backend = select_backend(backend)
        self._plans: dict[tuple, TilePlan] = {}

    def plan(self, cs: Codestream, t: int, reduce: int) -> TilePlan:
        tile = cs.tiles.get(t)
        h = tile.header if tile is not None else None
        tile_key = None if h is None else repr((h.cod, h.coc, h.qcd, h.qcc, h.rgn, h.poc))
        main_end = min((p.offset for tl in cs.tiles.values() for p in tl.parts), default=len(cs.data))
        key = (bytes(cs.data[:main_end]) if main_end < 1 << 16 else hash(bytes(cs.data[:main_end])),
               t, reduce, tile_key)
        plan = self._plans.get(key)
        if plan is None:
            plan = build_tile_plan(cs, t, reduce)
            check_plan(plan)
            if len(self._plans) >= PLAN_CACHE_SIZE:
                self._plans.clear()
            self._plans[key] = plan
        return plan

    def decode(self, data, *, reduce: int = 0, layers: int | None = None, strict: bool = True,
               components=None) -> Frame:
        """Decode a codestream or JP2 file into a :class:`Frame`.

        ``strict``: raise on the first fault; otherwise conceal damaged tiles
        and code-blocks (zeros) and report them in ``Frame.reports``.
        ``components``: indices to decode (None: all); the result then holds
        only those, in that order, and skips the inverse MCT unless 0-2 are
        all among them.
        """
        if reduce < 0:
            raise ValueError("reduce must be >= 0")
        if layers is not None and layers < 1:
            raise ValueError("layers must be >= 1")
        t0 = time.perf_counter()
        codestream, jp2 = read_jp2(data)
        cs = parse_codestream(codestream, strict=strict)
        if components is not None:
            components = [int(c) for c in components]
            if not components or any(not 0 <= c < cs.siz.Csiz for c in components):
                raise ValueError(f"components {components} outside 0..{cs.siz.Csiz - 1}")
        frame = self._decode_codestream(cs, reduce, layers, strict, components)
        t = frame.timings
        t["tier2"] = sum(r.tier2_s for r in frame.reports)
        t["tier1"] = sum(r.tier1_s for r in frame.reports)
        t["parse"] = time.perf_counter() - t0 - t["tier2"] - t["tier1"] - t["reconstruct"]
        if components is not None:
            frame.components = [frame.components[c] for c in components]
        if jp2 is not None:
            frame.components = apply_palette(frame.components, jp2)
        return frame

    def _decode_codestream(self, cs: Codestream, reduce: int, layers, strict: bool, components) -> Frame:
        s = cs.siz
        out = []
        for c in range(s.Csiz):
            w, h = s.component_size(c, reduce)
            out.append(np.zeros((h, w), _sample_dtype(s.precision(c), s.signed(c))))
        ppm = tile_part_ppm_headers(cs)
        frame = Frame(out, warnings=list(cs.warnings))
        recon = 0.0
        for t in range(s.num_tiles):
            plan = self.plan(cs, t, reduce)
            coeffs, report = decode_tile(cs, plan, cs.tiles.get(t), layers=layers, ppm=ppm, strict=strict)
            frame.reports.append(report)
            if self.xp is not np:
                coeffs = self.xp.asarray(coeffs)
            t0 = time.perf_counter()
            planes = reconstruct_tile(plan, coeffs, s, self.transform, self.xp, components)
            for c, (tc, plane) in enumerate(zip(plan.components, planes)):
                if plane is None:
                    continue
                res = tc.resolutions[tc.decoded - 1]
                cx0 = -(-s.XOsiz // (s.XRsiz[c] << reduce))
                cy0 = -(-s.YOsiz // (s.YRsiz[c] << reduce))
                if self.xp is not np:
                    plane = self.xp.asnumpy(plane)
                out[c][res.y0 - cy0 : res.y1 - cy0, res.x0 - cx0 : res.x1 - cx0] = plane
            recon += time.perf_counter() - t0
        frame.timings["reconstruct"] = recon
        return frame

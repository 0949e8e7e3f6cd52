"""QCD and QCC, quantization default and per component (T.800 A.6.4, A.6.5)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidSegment
from .reader import SegmentReader

QUANT_NONE = 0  #: no quantization (reversible): exponents only
QUANT_DERIVED = 1  #: scalar derived: one (exponent, mantissa) for LL, E-5 for the rest
QUANT_EXPOUNDED = 2  #: scalar expounded: one pair per subband


@dataclass(frozen=True)
class Quantization:
    """Sqcd/Sqcc and SPqcd/SPqcc: guard bits and per-subband (epsilon, mu).

    ``steps`` lists (exponent, mantissa) in subband order LL, then
    (HL, LH, HH) per level from the lowest resolution (Table A.30).
    For QUANT_NONE the mantissa is 0.
    """

    style: int
    guard_bits: int
    steps: tuple[tuple[int, int], ...]

    def listed_steps(self, levels: int) -> list[tuple[int, int]]:
        """(epsilon_b, mu_b) of every subband of ``levels`` decomposition levels this segment gives
        a step size for, in Table A.30 order (:meth:`step` of each): all 3 levels + 1 of them for
        derived quantization (E-5), else the ones listed, at most that many."""
        if self.style == QUANT_DERIVED:
            eps0, mu0 = self.steps[0]
            return [(eps0, mu0)] + [(eps0 - (k - 1) // 3, mu0) for k in range(1, 3 * levels + 1)]
        return list(self.steps[: 3 * levels + 1])

    def step(self, band_index: int, levels: int, missing: tuple[int, int] | None = None) -> tuple[int, int]:
        """(epsilon_b, mu_b) of subband ``band_index`` (0 = LL, 1.. = as listed).

        For derived quantization, E-5: epsilon_b = epsilon_0 - NL + n_b,
        where n_b is the level of the band counted from the finest (levels
        for LL); ``band_index`` k >= 1 lies at n_b = levels - (k - 1) // 3.
        A band past the ones listed (A.6.4 wants one per subband) raises
        :class:`InvalidSegment`, or, with ``missing`` given, takes that pair (lenient
        decoding: what OpenJPEG's decoder holds for it, see ``decode/plan.py``).
        """
        if self.style == QUANT_DERIVED:
            eps0, mu0 = self.steps[0]
            nb = levels if band_index == 0 else levels - (band_index - 1) // 3
            return eps0 - levels + nb, mu0
        if band_index >= len(self.steps):
            if missing is not None:
                return missing
            raise InvalidSegment(
                f"quantization lists {len(self.steps)} subbands, band {band_index} needed"
            )
        return self.steps[band_index]


@dataclass(frozen=True)
class QCC:
    component: int
    quantization: Quantization


def _parse_quantization(r: SegmentReader, name: str) -> Quantization:
    at = r.pos
    s = r.u8()
    style, guard = s & 0x1F, s >> 5
    if style == QUANT_NONE:
        steps = tuple((v >> 3, 0) for v in r.raw(r.remaining))
    elif style in (QUANT_DERIVED, QUANT_EXPOUNDED):
        if r.remaining % 2:
            raise InvalidSegment(f"{name}: odd number of bytes of 16-bit step sizes", at)
        steps = tuple((v >> 11, v & 0x7FF) for v in r.u16s(r.remaining // 2))
    else:
        raise InvalidSegment(f"{name}: quantization style {style} is not in Table A.28", at)
    if not steps or (style == QUANT_DERIVED and len(steps) != 1):
        raise InvalidSegment(f"{name}: {len(steps)} step sizes for style {style}", at)
    if len(steps) > 3 * 32 + 1:
        raise InvalidSegment(f"{name}: {len(steps)} step sizes, more than 97 subbands", at)
    r.finish()
    return Quantization(style, guard, steps)


def parse_qcd(r: SegmentReader) -> Quantization:
    return _parse_quantization(r, "QCD")


def parse_qcc(r: SegmentReader, csiz: int) -> QCC:
    at = r.pos
    component = r.u8() if csiz < 257 else r.u16()
    if component >= csiz:
        raise InvalidSegment(f"QCC: component {component} of {csiz}", at)
    return QCC(component, _parse_quantization(r, "QCC"))

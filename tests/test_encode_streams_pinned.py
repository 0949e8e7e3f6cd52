"""Pinned codestreams: the SHA-256 of whole codestreams from fixed inputs, recorded with the
tier-2 packet writer and codestream join as they were before their rewrite (i18: packet
headers and body runs in one compiled call, one join of views).  The rewrite moved bytes,
not what they are, so every stream here must stay byte-identical.  Re-recorded once since, for
the HT 9/7 cases alone: CAP's Ccap15 B is now counted as T.814's reference software and
photon count it (one byte of the CAP segment changed, nothing else); and for the two HT
budget cases when the budget's rounds began to interpolate between a size that fits and one
that does not (they fill more of their budgets: 694,480 of 700,000 bytes, was 687,976;
8,895 of 9,000, was 8,336); and for those two again when the budget's bit estimate became
quad by quad (other planes chosen: 694,505 bytes at 50.45 dB, was 694,480 at 50.34; 8,919 at
49.74 dB, was 8,895 at 49.46; OpenJPH decodes both within 1 code value of ours); and for
the two Part-1 budget cases when the rounds of Part-1 rate control began to follow the
header bytes' growth with the body (they fill more of their budgets: 299,988 of 300,000
bytes at 49.537 dB, was 299,712 at 49.536; 5,990 of 6,000 at 49.638 dB, was 5,980 at
49.636; OpenJPEG decodes both to our samples).

The cases cover the HT path (lossless 5/3, 9/7 at a quantisation step, a byte budget) at 2K
and at small odd sizes with tiles, precincts, layers and other progressions, and the Part-1
path through the same writer (layers, DCI tile-parts per component, a budget).  When an
intended change of the encoder alters these streams, record the new hashes with
``python tests/test_encode_streams_pinned.py`` and say why in the commit.
"""

from __future__ import annotations

import hashlib
import sys

import numpy as np
import pytest

from cinegpu.encode import Encoder, EncoderSettings


def _image(w: int, h: int, seed: int, comps: int = 3, bits: int = 12) -> np.ndarray:
    """(h, w, comps) uint16: gradients, a texture in checkers, edges and a little noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    top = (1 << bits) - 1
    base = top * (0.45 + 0.3 * np.sin(x / 37.0 + seed) * np.cos(y / 23.0))
    tex = top * 0.07 * np.sin(x / 3.1 + y / 5.3) * (((x // 32) + (y // 32) + seed) % 2)
    out = np.empty((h, w, comps), np.uint16)
    for c in range(comps):
        v = base * (0.8 + 0.1 * c) + tex + rng.normal(0, top / 300, (h, w)) + (x > w / 2) * 90 * c
        out[:, :, c] = np.clip(np.rint(v), 0, top)
    return out


HT = dict(codec="htj2k", codeblock=(64, 64), levels=5)
#: name -> (width, height, seed, Encoder options)
CASES = {
    "ht-2k-lossless": (2048, 1080, 1, dict(HT, reversible=True)),
    "ht-2k-97-step": (2048, 1080, 2, dict(HT, base_step=1.0)),
    "ht-2k-97-budget": (2048, 1080, 3, dict(HT, bitrate=8 * 24 * 700_000)),
    "ht-odd-lossless": (331, 197, 4, dict(codec="htj2k", reversible=True)),
    "ht-odd-97-tiles": (259, 131, 5, dict(codec="htj2k", base_step=0.5, tiles=(128, 96),
                                          codeblock=(16, 32))),
    "ht-odd-layers-rpcl": (143, 77, 6, dict(codec="htj2k", reversible=True, layers=3,
                                            progression="RPCL", codeblock=(8, 16),
                                            precincts=[(5, 5), (5, 5), (6, 6), (6, 6)],
                                            levels=3)),
    "ht-odd-budget-pcrl": (211, 163, 7, dict(codec="htj2k", bitrate=8 * 24 * 9000,
                                             progression="PCRL", codeblock=(16, 16),
                                             precincts=[(6, 6)] * 6)),
    "j2k-odd-layers": (167, 93, 8, dict(reversible=True, layers=3, codeblock=(16, 16),
                                        progression="CPRL")),
    "j2k-odd-budget": (201, 117, 9, dict(bitrate=8 * 24 * 6000, layers=2, codeblock=(32, 16),
                                         precincts=[(5, 5)] * 6, style=0x04)),
    "j2k-dci-2k": (2048, 1080, 10, dict(profile="dci-2k", bitrate=8 * 24 * 300_000)),
}

PINNED = {
    'ht-2k-97-budget': 'c95dbceabd2e2f8bd18721bc1c1d116da416b12fb030700654dfae02df7c3144',  # 694505 bytes
    'ht-2k-97-step': 'f0a3090399e47713dd0f0da50b4a3b9d82f1a1380db20f1de42a3a84e8848feb',  # 5002246 bytes
    'ht-2k-lossless': '0ba5078a13905b2b24093e1c9105fa2edd1f35bce7a23875c603a062385dd373',  # 5812134 bytes
    'ht-odd-97-tiles': 'd8787673ae52e81b2acff22770e1e6827138ededbed907eeff98295ffb41b963',  # 96096 bytes
    'ht-odd-budget-pcrl': 'ab309d38d7f0f0d4b084956a722f97f5de39284bf71994fdd1cf598ada357e05',  # 8919 bytes
    'ht-odd-layers-rpcl': '94f2f6077344272cae535414116e7264af29fef68b3ed492500be672c59cbab5',  # 31940 bytes
    'ht-odd-lossless': 'bdd362d384ac340ffe6350b17187c562d1ad251f3a86989f660655b2377026ff',  # 174442 bytes
    'j2k-dci-2k': 'c5b3b0e4adbe545f74e9daa769d2bfd999f8eb8dc0e5394009181d2033335598',  # 299988 bytes
    'j2k-odd-budget': '5482c8bfadb70a512fa6b0613ff78d3a182f2052125f97fa2abcbfcbc68f66b9',  # 5990 bytes
    'j2k-odd-layers': '83a4d8a55fdd092b0e6a95975adf3a9d75490c809c93bff3bdad8f7094373abd',  # 40800 bytes
}


def stream(name: str) -> bytes:
    w, h, seed, opts = CASES[name]
    with Encoder(EncoderSettings.of(backend="cpu", workers=2, **opts)) as enc:
        return enc.encode(_image(w, h, seed), bits=12)


def test_case_count():
    assert len(CASES) == 10 and set(PINNED) == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_stream_is_pinned(name):
    assert hashlib.sha256(stream(name)).hexdigest() == PINNED[name]


if __name__ == "__main__":
    names = sys.argv[1:] or sorted(CASES)
    for n in names:
        d = stream(n)
        print(f"    {n!r}: {hashlib.sha256(d).hexdigest()!r},  # {len(d)} bytes")

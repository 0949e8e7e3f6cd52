"""The DCI codestream facts (``decode/codestream/dci.py``) and the names of the profiles."""

from __future__ import annotations

from fractions import Fraction

import pytest

from cinegpu.decode.codestream import dci


def test_profile_names_map_both_spellings():
    assert dci.profile("dci-2k") is dci.profile("2k") is dci.DCI_2K
    assert dci.profile("dci-4k") is dci.profile("4k") is dci.DCI_4K
    assert list(dci.PROFILES) == ["dci-2k", "dci-4k"]
    for bad in ("", "2K", "8k", "generic", "dci-8k"):
        with pytest.raises(ValueError, match="no DCI profile"):
            dci.profile(bad)


def test_profile_for_a_picture():
    assert dci.profile_for(1998) is dci.profile_for(2048) is dci.DCI_2K
    assert dci.profile_for(2049) is dci.profile_for(3996) is dci.DCI_4K
    assert dci.profile_for(1998, Rsiz=4) is dci.DCI_4K
    assert dci.profile_for(1998, Rsiz=3) is dci.DCI_2K


def test_byte_caps_of_dci_facts_md():
    """OpenJPEG's OPJ_CINEMA_24_CS / _48_CS and _COMP figures, and libdcp's warning level."""
    assert dci.bytes_per_frame(dci.FRAME_BITRATE, 24) == 1_302_083
    assert dci.bytes_per_frame(dci.FRAME_BITRATE, 48) == 651_041
    assert dci.bytes_per_frame(dci.COMPONENT_BITRATE, 24) == 1_041_666
    assert dci.bytes_per_frame(dci.COMPONENT_BITRATE, 48) == 520_833
    assert dci.bytes_per_frame(dci.FRAME_BITRATE_SAFE, Fraction(24)) == 1_197_916


def test_encoder_caps_are_the_facts():
    from cinegpu.encode import DCI_COMPONENT_BITRATE, DCI_FRAME_BITRATE, dci_caps
    assert (DCI_FRAME_BITRATE, DCI_COMPONENT_BITRATE) == (250_000_000, 200_000_000)
    for p in dci.PROFILES.values():
        for fps in p.frame_rates:
            assert dci_caps(fps) == dci_caps(Fraction(fps)) == dci_caps(float(fps)) == \
                (int(250e6 / 8 / fps), int(200e6 / 8 / fps))


def test_precincts_per_resolution():
    assert dci.DCI_2K.precincts() == ((7, 7),) + ((8, 8),) * 5
    assert dci.DCI_4K.precincts() == ((7, 7),) + ((8, 8),) * 6


def test_params_take_keywords_only():
    from cinegpu.encode.presets import Coding, Params, make_params
    p = make_params([(1080, 2048)] * 3, [12] * 3, [False] * 3,
                    Coding(profile="dci-2k", fps=24, bitrate=None, reversible=False, levels=None,
                           codeblock=(64, 64), progression="LRCP", layers=1, tiles=None, precincts=None,
                           style=0, quantization="expounded", guard_bits=None))
    assert (p.Rsiz, p.levels, p.guard_bits, p.precincts, p.progression) == \
        (3, 5, 1, dci.DCI_2K.precincts(), dci.PROGRESSION)
    with pytest.raises(TypeError):
        Params("generic", 0)   # type: ignore[misc]

"""DecodeRequest (decode/request.py): the per-frame options decode(), Decoder and the pipeline
share, built by keyword; the old keyword arguments build the same request."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from cinegpu.decode import DecodeRequest, decode
from cinegpu.decode.decoder import Decoder
from cinegpu.decode.pipeline import tiny_codestream
from cinegpu.decode.strictness import LENIENT
from helpers.conformance import CONFORMANCE

FRAME = CONFORMANCE / "part1" / "codestreams" / "p0_04.j2k"


def test_a_request_is_frozen_keyword_built_and_keeps_components_as_a_tuple():
    request = DecodeRequest(components=np.array([1, 0]))
    assert request.components == (1, 0) and isinstance(request.components, tuple)
    with pytest.raises(AttributeError):
        request.reduce = 2
    with pytest.raises(TypeError):
        DecodeRequest(1)
    request = DecodeRequest(reduce=1, layers=2, strict=LENIENT, components=[2, 0])
    assert pickle.loads(pickle.dumps(request)) == request


@pytest.mark.skipif(not FRAME.exists(), reason="../shared/conformance is absent")
def test_a_request_decodes_as_its_keywords_do():
    data = FRAME.read_bytes()
    request = DecodeRequest(reduce=1, layers=1, components=(2, 0))
    want = decode(data, reduce=1, layers=1, components=[2, 0])
    for got in (decode(data, request=request), Decoder("cpu").decode(data, request=request).components):
        assert len(got) == 2 and all(np.array_equal(a, b) for a, b in zip(got, want))
    assert Decoder("cpu").prepare(data, request=request).reduce == 1


def test_a_request_or_its_keywords_not_both():
    data = tiny_codestream()
    request = DecodeRequest(strict=False)
    assert Decoder("cpu").decode(data, request=request).components[0].tolist() == [[128]]
    with pytest.raises(TypeError):
        decode(data, request=request, reduce=1)
    with pytest.raises(TypeError):
        Decoder("cpu").decode(data, request=request, components=[0])
    with pytest.raises(TypeError):
        Decoder("cpu").prepare(data, request=request, layers=1)

"""Property-based tests of the playback server's API from its own OpenAPI document (schemathesis).

Requests are generated from ``/api/v1/openapi.json`` of a real server process (127.0.0.1,
headless, CPU back end, decode threads) that has a composition loaded, so play / pause / seek /
step act on a player.  Both valid (positive) and schema-violating (negative) requests are sent;
no answer may be a 5xx, every answer must have a status code and a body the document declares,
and every request that violates the schema must be refused with a 4xx.
Examples are bounded per operation (``max_examples``) and every request has a timeout.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, settings  # noqa: E402  (after importorskip: schemathesis)
from schemathesis.checks import not_a_server_error  # noqa: E402  (after importorskip: schemathesis)
from schemathesis.specs.openapi.checks import (  # noqa: E402  (after importorskip: schemathesis)
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from cinegpu.player.server.client import ServerProcess, request  # noqa: E402  (after importorskip: schemathesis)
from cinegpu.player.server.samples import DCP_CPL  # noqa: E402  (after importorskip: schemathesis)
from helpers.server import sample_library, stopped_cleanly  # noqa: E402  (after importorskip: schemathesis)

pytestmark = pytest.mark.slow

MAX_EXAMPLES = 25
CALLS: list[tuple] = []         # (method, path, status) of every generated request
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance, negative_data_rejection]


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    library = sample_library(tmp_path_factory, frames=24, dcp=True)
    s = ServerProcess(library, "--backend", "cpu", "--threads", "--workers", "1")
    code, st = request(f"{s.url}/api/v1/load", "POST", {"cpl": DCP_CPL, "loop": True}, timeout=120, token=s.token)
    assert code == 200, st
    yield s
    stopped_cleanly(s)
    print(f"\n{len(CALLS)} generated requests, statuses {sorted({c for *_, c in CALLS})}")


@pytest.fixture(scope="module")
def api_schema(live_server):
    from schemathesis.generation import GenerationMode

    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/v1/openapi.json",
                                           headers={"Authorization": f"Bearer {live_server.token}"})
    schema.config.update(base_url=live_server.url)
    schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
    return schema


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_no_server_errors(case, live_server):
    generated = dict(case.query or {})
    if case.path == "/api/v1/events":
        case.query = {**generated, "max_seconds": 0.2}    # a stream ends: bounded
    response = case.call(timeout=30, headers={"Authorization": f"Bearer {live_server.token}",
                                              "Content-Type": "application/json"})
    CALLS.append((case.method, case.path, response.status_code))
    assert response.status_code < 500, (case.method, case.path, case.body, response.status_code, response.text)
    case.validate_response(response, checks=checks_for(generated, case.path, response.request.url))


def checks_for(generated: dict, path: str, sent_url: str) -> list:
    """The checks that apply to a request as it was really sent.  A schema-violating query
    can reach the server valid: ``max_seconds`` is overwritten here (to bound the stream), and
    a parameter whose generated value is empty (``[]``, None) is not sent at all.  The server
    cannot refuse what it never received, so negative-data rejection is not asked of it then
    (every other check still runs)."""
    sent = set(parse_qs(urlsplit(sent_url).query, keep_blank_values=True))
    repaired = path == "/api/v1/events" and "max_seconds" in generated
    if repaired or set(generated) - sent:
        return [c for c in CHECKS if c is not negative_data_rejection]
    return CHECKS


def test_negative_checks_stay_on_for_requests_sent_as_generated():
    url = "http://h/api/v1/events?max_events=x&max_seconds=0.2"
    assert negative_data_rejection in checks_for({"max_events": "x"}, "/api/v1/events", url)
    assert negative_data_rejection not in checks_for({"max_events": "x", "q": []}, "/api/v1/events", url)
    assert negative_data_rejection not in checks_for({"max_seconds": "x"}, "/api/v1/events", url)

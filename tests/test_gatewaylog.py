"""A request through the gateway is one typed record in the sample (benchkit.gatewaylog):
the shapes the gateway has written read as it and write back the same, and samples
stored before it load and are stored again byte for byte."""

import json

import msgspec
import pytest
from test_store import sample

from benchkit.gatewaylog import GatewayRequest
from benchkit.sample import ENCODER, Record
from benchkit.store import Store

# As the gateway filled them in (benchkit.gateway.server), in its order; the first as a
# real run of the replay driver stored it.
RELAYED = {"started": 1796460617.66534, "method": "GET",
           "path": "/api/v1/repos/benchkit-trial-20261205-085005-7dcd42/benchkit-20261205-"
                   "085005-9eb75b/issues", "user_agent": "curl/7.88.1", "bytes_in": 0,
           "scope": "repo", "status": 200, "bytes_out": 12431, "duration": 0.002858}
REFUSED = {"started": 1.5, "method": "GET", "path": "/api/v1/repos/other/private",
           "user_agent": "curl/8.5.0", "bytes_in": 0, "scope": "refused",
           "reason": "outside the trial's repository", "status": 403, "bytes_out": 98,
           "duration": 0.0004}
BAD_TOKEN = {"started": 2.0, "method": "GET", "path": "/api/v1/user", "user_agent": "",
             "bytes_in": 0, "scope": "refused", "reason": "the harness's own token",
             "problem": "the harness's own token", "status": 401, "bytes_out": 60,
             "duration": 0.0001}
NO_TOKEN = {"started": 3.0, "method": "GET", "path": "/api/v1/version", "user_agent": "tea",
            "bytes_in": 0, "scope": "unauthorized", "status": 401, "bytes_out": 60,
            "duration": 0.0001}
# the schema's required fields alone: a request recorded with nothing more
FIRST = {"method": "GET", "path": "/api/v1/version", "scope": "global", "status": 200}


@pytest.mark.parametrize("entry", [RELAYED, REFUSED, BAD_TOKEN, NO_TOKEN, FIRST],
                         ids=["relayed", "refused", "bad-token", "no-token", "first"])
def test_each_shape_the_gateway_wrote_reads_as_the_record_and_writes_back_the_same(entry):
    request = GatewayRequest.of(entry)
    assert msgspec.json.encode(request) == msgspec.json.encode(entry)
    assert request.method == entry["method"] and request.server_error() is False


def test_a_too_large_body_keeps_its_fields_in_the_records_order():
    """The one path that filled the fields in another order (a body refused before it
    was read: scope and reason before bytes_in): the same fields and values, stored in
    the record's order."""
    entry = {"started": 4.0, "method": "POST", "path": "/api/v1/repos/o/r/issues",
             "user_agent": "curl/8.5.0", "scope": "refused", "reason": "a body over 1 MiB",
             "bytes_in": 0, "status": 413, "bytes_out": 80, "duration": 0.2}
    assert msgspec.to_builtins(GatewayRequest.of(entry)) == entry


def test_a_5xx_is_a_server_error():
    assert GatewayRequest.of({**RELAYED, "status": 502}).server_error()


def test_a_sample_stored_before_the_record_loads_and_is_stored_again_the_same(tmp_path):
    old = sample(requests=[RELAYED, REFUSED, BAD_TOKEN, NO_TOKEN])  # dicts, as before
    line = ENCODER.encode(old)
    loaded = msgspec.json.decode(line, type=Record)
    assert all(isinstance(r, GatewayRequest) for r in loaded.requests)
    assert ENCODER.encode(loaded) == line
    assert [r.scope for r in loaded.requests] == ["repo", "refused", "refused", "unauthorized"]
    stored = Store(tmp_path).append(loaded)
    assert stored.requests == loaded.requests
    written, = (tmp_path / "raw-api" / "close-issue.jsonl").read_text().splitlines()
    assert json.loads(written)["requests"] == [RELAYED, REFUSED, BAD_TOKEN, NO_TOKEN]
    assert written.encode() == line

"""The model service's part in a run, from the events the CLI emitted: what the sample
keeps (`model_service`) and the line `benchkit show` prints."""

from benchkit.agent.service import at_fault, describe, evidence


def retry(at, attempt, delay_ms, status=529, error="overloaded"):
    return {"event": "api_retry", "at": at, "attempt": attempt, "max_retries": 10,
            "retry_delay_ms": delay_ms, "error_status": status, "error": error}


def test_ten_overload_retries_are_counted_over_the_time_they_took():
    delays = [500, 1000, 2000, 4000, 8000, 16000, 32000, 40000, 40000, 40000]
    events, at = [], 117.0
    for attempt, delay in enumerate(delays, start=1):
        events.append(retry(at, attempt, delay))
        at += delay / 1000
    found = evidence(events)
    assert found == {"retries": {"count": 10, "over_s": 183.5, "statuses": {"529": 10},
                                 "error": "overloaded", "status": 529}}
    assert describe(found) == "overload: 10 retries over 184 s (10x HTTP 529)"
    assert at_fault(found, duration_s=300) and not at_fault(found, duration_s=1000)


def test_a_stall_and_a_request_a_cap_cut_short_are_named():
    found = evidence([{"event": "request", "stop_reason": None, "complete": False},
                      {"event": "model_stall", "request": 3, "idle_s": 300.2, "streaming": True}])
    assert describe(found) == ("model stream stalled 300 s (request 3, mid-stream); "
                               "1 stream(s) broken before message_stop")
    assert at_fault(found, duration_s=1000)
    cut = evidence([{"event": "model_outstanding", "request": 2, "for_s": 61.0, "by": "turn cap"}])
    assert at_fault(cut, duration_s=1000)
    assert describe(cut) == "a model request (request 2) outstanding 61 s when the turn cap ended the run"


def test_stop_reasons_are_noted_but_are_not_the_services_time():
    found = evidence([{"event": "request", "stop_reason": "refusal", "complete": True},
                      {"event": "request", "stop_reason": "max_tokens", "complete": True},
                      {"event": "request", "stop_reason": "end_turn", "complete": True}])
    assert found == {"refusal": 1, "max_tokens": 1}
    assert describe(found) == "1 refusal; 1 max_tokens stop"
    assert not at_fault(found, duration_s=10)


def test_a_clean_run_has_no_evidence():
    assert evidence([{"event": "request", "stop_reason": "end_turn", "complete": True}]) is None
    assert describe(None) == "" and not at_fault(None, duration_s=10)

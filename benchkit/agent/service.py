"""The model service's part in one agent run, from what the CLI itself emitted.

The CLI reports each retry of an API request as a system message `api_retry`
(attempt, max_retries, retry_delay_ms, error_status, error), and its stream events
show every request it began (`message_start`), how each ended (`stop_reason` in
`message_delta`) and any that broke before `message_stop`. The driver adds what it saw
itself: a request left without a stream event past the idle limit (a stall), and a
request still outstanding when the backstop or the turn cap ended the run. This is the
evidence a real run has; the transcript keeps it (benchkit.agent.transcript), and
`evidence` sums it for the sample (`model_service`), so `benchkit show` can say
"overload: 10 retries over 183 s" or "model stream stalled 300 s".
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from benchkit.agent.driver import Driver
from benchkit.evidence import (
    API_RETRY,
    MODEL_OUTSTANDING,
    MODEL_STALL,
    REQUEST,
    ApiRetryEvent,
    Event,
    ModelService,
)

# The failure classes of the model service's faults: harness errors, never the arm's.
MODEL_SERVICE = "model-service"      # overload, rate limit, 5xx, broken or stalled streams
MODEL_CREDENTIALS = "model-credentials"  # 401/403: the whole run stops (exit 2)
REFUSAL = "refusal"                  # the model's safeguards stopped the response
SERVICE_CLASSES = (MODEL_SERVICE, MODEL_CREDENTIALS, REFUSAL)
# The CLI's `error` words for a retried status, and what show calls them.
_KINDS = {529: "overload", 503: "overload", 429: "rate limit", 401: "credentials refused",
          403: "credentials refused"}


def retry_event(data: dict, at: float) -> ApiRetryEvent:
    """The transcript event of one `api_retry` system message."""
    return {"event": API_RETRY, "at": round(at, 3), "attempt": data.get("attempt"),
            "max_retries": data.get("max_retries"), "retry_delay_ms": data.get("retry_delay_ms"),
            "error_status": data.get("error_status"), "error": data.get("error")}


def evidence(transcript: list[Event]) -> ModelService | None:
    """What the transcript shows of the model service's faults; None when nothing."""
    retries = [e for e in transcript if e["event"] == API_RETRY]
    requests = [e for e in transcript if e["event"] == REQUEST]
    broken = sum(1 for e in requests if e.get("complete") is False)
    stops = Counter(e.get("stop_reason") for e in requests if e.get("stop_reason"))
    stall = next((e for e in transcript if e["event"] == MODEL_STALL), None)
    outstanding = next((e for e in transcript if e["event"] == MODEL_OUTSTANDING),
                       None)
    found: ModelService = {}
    if retries:
        statuses = Counter(str(e.get("error_status")) for e in retries)
        last = retries[-1]
        span = (last["at"] + (last.get("retry_delay_ms") or 0) / 1000) - retries[0]["at"]
        found["retries"] = {"count": len(retries), "over_s": round(max(span, 0.0), 1),
                            "statuses": dict(statuses),
                            "error": last.get("error"), "status": last.get("error_status")}
    if broken:
        found["broken_streams"] = broken
    for reason in ("refusal", "max_tokens"):
        if stops.get(reason):
            found[reason] = stops[reason]
    if stall is not None:
        found["stall"] = {"request": stall.get("request"), "idle_s": stall.get("idle_s"),
                          "streaming": stall.get("streaming")}
    if outstanding is not None:
        found["outstanding"] = {"request": outstanding.get("request"),
                                "for_s": outstanding.get("for_s"), "by": outstanding.get("by")}
    return found or None


# The share of a capped run's time the service's retries must have taken for the cap
# to be the service's: a short retry early on leaves the rest of the run the agent's.
RETRY_SHARE = 0.25


def at_fault(found: ModelService | None, duration_s: float) -> bool:
    """Whether the model service took the time of a run a cap ended: a stall, a model
    request outstanding at the cap (none is while one of the agent's tools runs), or
    retries whose waits spanned at least RETRY_SHARE of the run."""
    found = found or {}
    retries = found.get("retries")
    retried = retries.get("over_s", 0.0) if retries else 0.0
    return "stall" in found or "outstanding" in found or \
        (retried > 0 and retried >= RETRY_SHARE * duration_s)


def describe(found: ModelService | None) -> str:
    """One line for people: "overload: 10 retries over 183 s", "model stream stalled
    300 s (request 3, mid-stream)"; "" when there is nothing to say."""
    if not found:
        return ""
    parts = []
    if "retries" in found:
        retries = found["retries"]
        status = retries.get("status")
        kind = _KINDS.get(status) or (  # no status: the request got no answer at all
            "connection error" if status is None else str(retries.get("error") or "error")
            .replace("_", " "))
        parts.append(f"{kind}: {retries['count']} retr{'y' if retries['count'] == 1 else 'ies'} "
                     f"over {retries['over_s']:.0f} s ({_statuses(retries['statuses'])})")
    if "stall" in found:
        stall = found["stall"]
        where = "mid-stream" if stall.get("streaming") else "before its first byte"
        parts.append(f"model stream stalled {stall.get('idle_s', 0):.0f} s "
                     f"(request {stall.get('request')}, {where})")
    if "outstanding" in found:
        out = found["outstanding"]
        parts.append(f"a model request (request {out.get('request')}) outstanding "
                     f"{out.get('for_s', 0):.0f} s when the {out.get('by')} ended the run")
    if "broken_streams" in found:
        parts.append(f"{found['broken_streams']} stream(s) broken before message_stop")
    for count, words in ((found.get("refusal"), "refusal"),
                         (found.get("max_tokens"), "max_tokens stop")):
        if count:
            parts.append(f"{count} {words}{'s' if count > 1 else ''}")
    return "; ".join(parts)


def credential_source(driver: Driver) -> str:
    """Which credentials a driver hands the CLI, in words (never their value)."""
    if driver.base_url:
        return f"the API key given for the model at {driver.base_url}"
    if os.environ.get("ANTHROPIC_BASE_URL"):
        where = f" for ANTHROPIC_BASE_URL={os.environ['ANTHROPIC_BASE_URL']}"
    else:
        where = ""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"):
        if os.environ.get(name):
            return f"the key in ${name}{where}"
    config = driver.config_dir or os.environ.get("CLAUDE_CONFIG_DIR") \
        or Path.home() / ".claude"
    return f"the Claude login in {config}{where}"


def _statuses(statuses: dict) -> str:
    return ", ".join(f"{count}x HTTP {status}" if status != "None" else f"{count}x no response"
                     for status, count in statuses.items())

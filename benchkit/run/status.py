"""How a `benchkit run` ended, and the one function that makes its exit status of it.

    RunEnd        the last phase the run reached and what it came back with
    exit_status   0 done; 1 a harness error, a halt, nothing could run on the host, or
                  a user or repository of the run left behind;
                  2 the run could not go on: bad input, or a document, tool, host,
                  credential or store that cannot be used (before the trials nothing was
                  spent; in them, what ran is kept); 128 + the signal that stopped it

Every phase of a run (benchkit.run.execution) ends in a RunEnd; nothing else decides
the status (tests/run/test_run_status.py holds each code to the phases it comes from).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from benchkit.exits import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK

# pre-flight: the documents, tools, Claude credentials, host and sandbox; plan: what
# can run, within the budget, into the store; host: the host started and the run's own
# user made; probe: the host's and each arm's tool probe; trials: the loop (or the
# rounds), the failure replay and the report.
Phase = Literal["pre-flight", "plan", "host", "probe", "trials"]


@dataclass(frozen=True)
class RunEnd:
    phase: Phase
    # What kept the run from going on, as it was said (a failed check, nothing to run,
    # a budget that fits nothing, a store that takes no sample, the model service
    # refusing the credentials): exit 2.
    blocked: str | None = None
    stopped: int | None = None  # 128 + the signal that stopped it: 130, 143, 129
    halted: str | None = None   # an unexpected error (or a full disk) halted the trials
    harness_errors: int = 0     # trials recorded as harness errors (never scored)
    ran_nothing: bool = False   # no chosen cell could run on this host
    left_behind: bool = False   # a user or repository the run could not delete (said)


def exit_status(end: RunEnd) -> int:
    """The run's exit status: a stop first (whatever else happened, the person stopped
    it), then what blocked it, then trouble in the trials."""
    if end.stopped is not None:
        return end.stopped
    if end.blocked is not None:
        return EXIT_BAD_INPUT
    if end.halted or end.harness_errors or end.ran_nothing or end.left_behind:
        return EXIT_FAILED
    return EXIT_OK

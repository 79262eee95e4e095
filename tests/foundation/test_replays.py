"""A failure replay's verdict is one typed record (benchkit.replays), written and read
through it: lines the store already holds decode, and a verdict is stored as the very
bytes the dicts before it wrote."""

import json

from benchkit.replays import FailureReplay, Replayed, decode, encode
from benchkit.scrub import scrub
from benchkit.store import Store

# A line as benchkit.run.failures wrote it before the record (every version since the
# failure replay came wrote these fields in this order): a verdict on a trial ...
OLD = ('{"trial": "4b1d0c5e6f7a8b9c0d1e2f3a4b5c6d7e", "arm": "tea", "task": '
       '"close-csv-export-issue", "verdict": "not reproducible", "at": '
       '"2026-12-04T05:46:13.123456+00:00", "outcome": "failed", "failure_class": "checker", '
       '"differences": ["issue #2: state is open, expected closed — «CSV»"], "replay": '
       '{"id": "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b", "calls": 2, "outcome": "passed", '
       '"failure_class": null, "differences": [], "error": null, "transcript": '
       '"transcripts/tea/9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b.jsonl"}}')
# ... and one settle_host_error wrote for a host 5xx (a replay that met it again).
PROVOKED = ('{"trial": "0123456789abcdef0123456789abcdef", "arm": "raw-api", "task": '
            '"add-issue-dependency", "verdict": "provoked", "at": "2026-12-04T21:13:14+00:00", '
            '"outcome": "failed", "failure_class": "host-error-provoked", "differences": [], '
            '"replay": {"id": "fedcba9876543210fedcba9876543210", "calls": 1, "outcome": '
            '"harness-error", "failure_class": "host-5xx", "differences": [], "error": '
            '"the host answered 500", "transcript": null}}')

# ... and, since a replay's audit counts, its leaks; and the line written before a
# replay starts, which a kill leaves alone.
LEAKED = ('{"trial": "aaaabbbbccccddddeeeeffff00001111", "arm": "raw-api", "task": '
          '"close-csv-export-issue", "verdict": "leaked", "at": "2026-12-05T08:00:00+00:00", '
          '"outcome": "failed", "failure_class": "checker", "differences": [], "replay": '
          '{"id": "11112222333344445555666677778888", "calls": 2, "outcome": "invalid", '
          '"failure_class": "leak", "differences": [], "error": null, "leaks": ["GET '
          '/api/v1/repos/o/R was refused by the gateway: outside the trial"], "transcript": '
          'null}}')
PENDING = ('{"trial": "aaaabbbbccccddddeeeeffff00001111", "arm": "raw-api", "task": '
           '"close-csv-export-issue", "verdict": "pending", "at": "2026-12-05T07:59:59+00:00"}')


def test_old_lines_decode_and_encode_back_to_the_same_bytes():
    for line in (OLD, PROVOKED, LEAKED, PENDING):
        entry = decode(line)
        assert isinstance(entry, FailureReplay) and encode(entry) == line
    old = decode(OLD)
    assert old is not None and old.verdict == "not reproducible"
    assert old.replay.outcome == "passed" and old.replay.transcript.startswith("transcripts/")
    assert old.differences == ["issue #2: state is open, expected closed — «CSV»"]
    leaked, pending = decode(LEAKED), decode(PENDING)
    assert leaked.replay.leaks and not pending.replay and pending.verdict == "pending"


def test_the_store_appends_and_reads_the_record_and_skips_what_is_no_verdict(tmp_path):
    store = Store(tmp_path / "results")
    store.root.mkdir()
    store.failure_replays_path.write_text(
        "\n".join([OLD, "not json", '{"trial": 3}', json.dumps({"trial": "x", "arm": "a"})])
        + "\n", encoding="utf-8")
    later = FailureReplay(trial="0123456789abcdef0123456789abcdef", arm="raw-api", task="t",
                          verdict="reproducible", at="2026-12-05T09:00:00+00:00",
                          outcome="failed", failure_class="checker", differences=["d"],
                          replay=Replayed(id="r" * 32, calls=1, outcome="failed",
                                          failure_class="checker", differences=["d"],
                                          error="token s3cret in an error", transcript=None))
    store.append_failure_replay(later, secrets=["s3cret"])
    found = store.failure_replays()
    assert set(found) == {decode(OLD).trial, later.trial}  # the malformed lines are skipped
    stored = store.failure_replays_path.read_text(encoding="utf-8").splitlines()[-1]
    assert "s3cret" not in stored and stored == scrub(encode(later), ["s3cret"])
    assert found[later.trial] == decode(stored) and found[later.trial].replay.calls == 1

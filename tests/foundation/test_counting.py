"""benchkit.counting's groups grown one sample at a time (the run loop's ledger) are the
groups of the whole store at once (the report); and a leak of the agent's own counts as
a failure of its arm, where one not of its doing and a harness error count for nothing."""

import random

import msgspec
from synthetic import sample

from benchkit import counting
from benchkit.sample import Sample


def test_groups_grown_one_sample_at_a_time_are_the_batch_groups():
    rng = random.Random(3)
    samples = [msgspec.convert(sample(rng.choice(["a", "b"]), rng.choice(["t1", "t2"]),
                                      outcome=rng.choice(["passed", "failed", "harness-error"]),
                                      started_at=f"2026-07-{rng.randint(10, 28)}T12:00:00+00:00",
                                      tool_version=rng.choice([None, "1.0"])), Sample)
               for _ in range(200)]
    grown: dict = {}
    for position, one in enumerate(samples):
        counting.add_sample(grown, one, position)
    batch = counting.group_samples(samples)
    assert list(grown) == list(batch)
    assert [(g.last, g.newest, g.count, g.members) for g in grown.values()] == \
        [(g.last, g.newest, g.count, g.members) for g in batch.values()]
    assert len(batch) > 4  # several groups, or the comparison says little


def test_a_leak_of_the_agents_own_counts_as_a_failure_of_its_cell():
    def one(outcome, failure_class=None):
        return msgspec.convert(sample("a", "t1", outcome=outcome, failure_class=failure_class),
                               Sample)
    kept = [one("passed"), one("invalid", "leak"), one("invalid", "leak-foreign"),
            one("unaudited"), one("harness-error", "host-5xx"), one("failed")]
    replayed = one("failed")
    kept.append(replayed)
    overruled = counting.overruled(kept, frozenset({replayed.id}))  # its replay leaked
    placed = counting.place_groups(counting.group_samples(overruled),
                                   counting.Current(arms={"a": None}, tasks={"t1": (None, None)},
                                                    model=None))
    counted = placed.counting(("a", "t1"), estimated=False)
    assert sorted((s.outcome, s.failure_class) for s in counted) == [
        ("failed", "checker"), ("invalid", "leak"), ("invalid", "replay-leak"), ("passed", None)]
    assert placed.excluded[("a", "t1")] == {("invalid", "leak"): 1, ("invalid", "leak-foreign"): 1,
                                            ("invalid", "replay-leak"): 1, ("unaudited", "audit"): 1,
                                            ("harness-error", "host-5xx"): 1}

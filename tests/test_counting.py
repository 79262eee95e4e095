"""benchkit.counting's groups grown one sample at a time (the run loop's ledger) are the
groups of the whole store at once (the report)."""

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

"""Aggregation on synthetic stores: what counts, how it is averaged, how sure it is."""

import json
import random

import msgspec
import pytest
from synthetic import sample, write_store

from benchkit.fingerprint import arm_fingerprint
from benchkit.report import build_report, load_store
from benchkit.report.grid import CellRow, Gap, TaskRow
from benchkit.report.matrix import ArmEntry, Matrix, TaskEntry
from benchkit.report.model import ArmRow, ExclusionRow
from benchkit.report.render import CSV_COLUMNS, as_data, render
from benchkit.statistics.intervals import ALL_METRICS
from benchkit.surface import Surface


def matrix_of(arms, tasks, **options) -> Matrix:
    """tasks: ids (tier read) or TaskEntry objects."""
    entries = tuple(t if isinstance(t, TaskEntry) else TaskEntry(t, "read") for t in tasks)
    return Matrix(arms=tuple(a if isinstance(a, ArmEntry) else ArmEntry(a) for a in arms),
                  tasks=entries, model="claude-sonnet-4-5", **options)


def report_of(tmp_path, samples, matrix, name="results"):
    store = write_store(tmp_path / name, samples)
    return build_report(load_store(store), matrix)


def costing(cost: float) -> dict:
    """Tokens whose cost-equivalent is exactly `cost` (fresh input only)."""
    return {"input": int(cost), "cache_write": 0, "cache_read": 0, "output": 0}


def row(report, arm, table="headline"):
    rows = {"headline": report.headline, "common": report.common and report.common.rows,
            "comparison": report.comparison and report.comparison.rows}[table]
    return next(r for r in rows if r.arm == arm)


def test_partial_matrix_marks_cells_below_floor_and_shows_missing_ones(tmp_path):
    matrix = matrix_of(["full", "partial"], ["t1", "t2", "t3"])
    samples = [sample("full", t) for t in ("t1", "t2", "t3") for _ in range(3)]
    samples += [sample("partial", "t1") for _ in range(3)] + [sample("partial", "t2")]
    report = report_of(tmp_path, samples, matrix)

    partial = row(report, "partial")
    assert (partial.tasks, partial.covered, partial.tasks_total) == (2, 1, 3)
    assert partial.coverage == pytest.approx(1 / 3)
    assert row(report, "full").covered == 3
    statuses = {(c.arm, r.task): c.status
                for r in report.coverage.rows for c in r.cells}
    assert statuses[("partial", "t2")] == "below"
    assert statuses[("partial", "t3")] == "missing"
    assert report.coverage.below_floor == [Gap(arm="partial", task="t2", samples=1)]
    assert report.coverage.missing == [Gap(arm="partial", task="t3", samples=0)]
    assert "The matrix is partial" in report.notes[0]

    markdown = render(report, "md")
    assert "| t2 | read | 3 ✓ | 1 ▽ |" in markdown
    assert "| t3 | read | 3 ✓ | ✗ |" in markdown
    # The missing cells in one line (per arm), the full matrix below it.
    assert "**Missing: 1 cell** without a valid measured sample (partial 1); 1 below the floor of 3." in markdown
    assert markdown.index("**Missing: 1 cell**") < markdown.index("| t3 | read | 3 ✓ | ✗ |")
    assert "| partial | **" in markdown and "1/3 (1 below floor)" in markdown


def test_common_task_headline_corrects_what_uneven_coverage_flatters(tmp_path):
    # "partial" is dearer than "full" on every task it ran, but skipped the dear task.
    matrix = matrix_of(["full", "partial"], ["easy1", "easy2", "hard"])
    samples = [sample("full", t, tokens=costing(1500)) for t in ("easy1", "easy2") for _ in range(3)]
    samples += [sample("full", "hard", tokens=costing(12000)) for _ in range(3)]
    samples += [sample("partial", t, tokens=costing(2000)) for t in ("easy1", "easy2") for _ in range(3)]
    report = report_of(tmp_path, samples, matrix)

    naive = [r.arm for r in report.headline]
    assert naive == ["partial", "full"]  # the naive headline flatters the partial arm
    assert row(report, "full").cost.value == pytest.approx(5000)
    common = report.common
    assert common.tasks == ["easy1", "easy2"]
    assert [r.arm for r in common.rows] == ["full", "partial"]
    assert row(report, "full", "common").cost.value == pytest.approx(1500)
    assert any("ran different tasks" in n and "2 tasks all of them ran" in n for n in report.notes)

    comparison = report.comparison
    assert comparison.reference == "full"
    (difference,) = comparison.rows
    assert difference.arm == "partial" and difference.tasks == 2
    assert difference.difference.value == pytest.approx(500)
    assert difference.distinguishable
    markdown = render(report, "md")
    first = markdown.index("Ranked on the **2 tasks every arm ran** (of 3 scored)")
    later = markdown.index("### All-task means: not comparable between arms")
    assert first < markdown.index("| full | **1,500") < later < markdown.index("| full | **5,000")


def test_common_task_headline_names_what_an_arm_s_tool_cannot_do(tmp_path, shipped_tree):
    """tea's reference marks read-review-body unsupported: the report says so where it
    compares the arms on their common tasks (the matrix reads refs.d)."""
    from benchkit.report.matrix import matrix_from_tree
    tea = next(a for a in matrix_from_tree(shipped_tree).arms if a.id == "tea")
    assert "read-review-body" in tea.unsupported and "COMMENT review" in tea.unsupported["read-review-body"]
    matrix = matrix_of(["raw-api", ArmEntry("tea", unsupported=tea.unsupported)],
                       ["read-open-issue-count", "read-review-body"])
    samples = [sample("raw-api", t) for t in ("read-open-issue-count", "read-review-body")]
    samples += [sample("tea", "read-open-issue-count")]
    report = report_of(tmp_path, samples, matrix)
    assert [(u.arm, u.task) for u in report.common.unsupported] == [("tea", "read-review-body")]
    assert "- tea leaves out read-review-body, unsupported by its tool: tea shows no COMMENT" in render(report, "md")
    assert "tea leaves out read-review-body, unsupported by its tool" in render(report, "html")


def test_no_all_task_table_when_every_arm_ran_the_same_tasks(tmp_path):
    matrix = matrix_of(["a", "b"], ["t1", "t2"])
    samples = [sample(arm, t) for arm in ("a", "b") for t in ("t1", "t2")]
    report = report_of(tmp_path, samples, matrix)
    assert report.common.tasks == ["t1", "t2"] and not report.common.uneven
    markdown = render(report, "md")
    assert "Ranked on the **2 tasks every arm ran** (of 2 scored)." in markdown
    assert "All-task means" not in markdown


def noisy(arm, tasks, trials, rng, centre=20000, spread=8000):
    return [sample(arm, t, tokens=costing(centre + rng.uniform(-spread, spread)),
                   outcome="passed" if rng.random() < 0.8 else "failed")
            for t in tasks for _ in range(trials)]


def width(figure):
    return figure.high - figure.low


def test_intervals_narrow_with_more_samples(tmp_path):
    tasks = [f"t{i}" for i in range(6)]
    matrix = matrix_of(["a"], tasks)
    few = report_of(tmp_path, noisy("a", tasks, 3, random.Random(1)), matrix, "few")
    many = report_of(tmp_path, noisy("a", tasks, 30, random.Random(2)), matrix, "many")
    # Ten times the trials: about a third of the width where nothing bounds it; success
    # rates near 100% are clipped at the top, so they narrow less.
    for metric, factor in (("cost", 0.6), ("raw", 0.6), ("success", 0.75)):
        narrow, wide = getattr(row(many, "a"), metric), getattr(row(few, "a"), metric)
        assert narrow.low <= narrow.value <= narrow.high
        assert wide.low <= wide.value <= wide.high
        assert width(narrow) < factor * width(wide), metric


def test_intervals_are_point_wide_without_variation(tmp_path):
    matrix = matrix_of(["a"], ["t1", "t2"])
    samples = [sample("a", t, tokens=costing(1000)) for t in ("t1", "t2") for _ in range(3)]
    cost = row(report_of(tmp_path, samples, matrix), "a").cost
    assert cost.low == cost.value == cost.high == pytest.approx(1000)


def test_invalid_and_harness_error_samples_are_left_out_and_counted(tmp_path):
    matrix = matrix_of(["a", "b"], ["t1", "t2"])
    clean = [sample(arm, t, tokens=costing(1000 + 100 * i), turns=3 + i)
             for arm in ("a", "b") for t in ("t1", "t2") for i in range(3)]
    dirty = clean + [  # invalid, but not of the agent's doing (a foreign tool offered)
        sample("a", "t1", outcome="invalid", tokens=costing(90000), turns=20,
               failure_class="leak-foreign"),
        sample("a", "t2", outcome="invalid", tokens=costing(90000), failure_class="leak-foreign"),
        sample("b", "t1", outcome="harness-error", tokens=costing(0), turns=0),
        sample("b", "t1", outcome="harness-error", failure_class="seeding"),
        sample("b", "t2", outcome="harness-error", failure_class="sdk-startup"),
        sample("b", "t2", outcome="unaudited", tokens=costing(90000)),
    ]
    before = report_of(tmp_path, clean, matrix, name="clean")
    after = report_of(tmp_path, dirty, matrix, name="dirty")

    assert after.headline == before.headline
    assert after.totals.invalid == 2 and after.totals.harness_error == 3
    assert after.totals.unaudited == 1
    assert after.totals.measured == before.totals.measured == 12
    assert after.exclusions == [
        ExclusionRow(arm="a", invalid=2, unaudited=0, harness_error=0,
                     classes={"invalid: leak-foreign": 2}),
        ExclusionRow(arm="b", invalid=0, unaudited=1, harness_error=3,
                     classes={"harness-error: host": 1, "harness-error: sdk-startup": 1,
                              "harness-error: seeding": 1, "unaudited: audit": 1})]
    cell = next(c for r in after.coverage.rows if r.task == "t1"
                for c in r.cells if c.arm == "b")
    assert (cell.samples, cell.excluded) == (3, 2)
    assert any("6 samples left out" in n and "3 harness errors" in n
               and "1 unaudited (the audit could not read its evidence)" in n
               for n in after.notes)


def test_a_leak_of_the_agents_own_is_listed_and_counted_as_a_failure_of_its_arm(tmp_path):
    """An agent must not escape a failing trial by sending what the gateway refuses:
    its leak is flagged and listed with the excluded, and counted in success and pass^k
    as a failure (a replay's leak alike: benchkit.counting.overruled)."""
    matrix = matrix_of(["a", "b"], ["t1", "t2"])
    clean = [sample(arm, t, tokens=costing(1000)) for arm in ("a", "b")
             for t in ("t1", "t2") for _ in range(3)]
    leaked = clean + [sample("a", "t1", outcome="invalid", failure_class="leak",
                             tokens=costing(1000)),
                      sample("a", "t2", outcome="invalid", failure_class="replay-leak",
                             tokens=costing(1000))]
    before = report_of(tmp_path, clean, matrix, name="clean")
    after = report_of(tmp_path, leaked, matrix, name="leaked")
    assert row(before, "a").success.value == 1.0 and row(before, "a").pass_k.value == 1.0
    assert row(after, "a").success.value == pytest.approx(0.75)  # 3 of 4 in each task
    assert row(after, "a").pass_k.value < 1.0 and row(after, "b") == row(before, "b")
    assert after.totals.invalid == after.totals.leaks_counted == 2
    assert after.totals.measured == 14
    assert after.exclusions == [ExclusionRow(arm="a", invalid=2, unaudited=0, harness_error=0,
                                             classes={"invalid: leak": 1,
                                                      "invalid: replay-leak": 1})]
    assert not any("left out" in n for n in after.notes)
    assert any("2 samples invalid for a leak of the agent's own" in n for n in after.notes)


def test_a_crashed_trial_is_charged_to_its_arm_as_a_failure(tmp_path):
    """`kill -9 $PPID` from the agent's shell ends its trial `crashed`: counted, not passed."""
    matrix = matrix_of(["a"], ["t1"])
    passed = [sample("a", "t1", tokens=costing(1000)) for _ in range(3)]
    crashed = passed + [sample("a", "t1", outcome="crashed", tokens=costing(1000))]
    before = row(report_of(tmp_path, passed, matrix, name="passed"), "a")
    after = row(report_of(tmp_path, crashed, matrix, name="crashed"), "a")
    assert before.success.value == 1.0
    assert after.success.value == pytest.approx(0.75)
    assert after.cost.value == before.cost.value  # charged like the others


def test_a_cell_with_only_excluded_samples_is_missing(tmp_path):
    matrix = matrix_of(["a"], ["t1", "t2"])
    samples = [sample("a", "t1")] * 3 + [sample("a", "t2", outcome="harness-error")]
    report = report_of(tmp_path, samples, matrix)
    assert report.coverage.missing == [Gap(arm="a", task="t2", samples=0)]
    assert row(report, "a").tasks == 1


def test_changed_task_fingerprint_separates_old_samples(tmp_path):
    current, old = "a" * 16, "b" * 16
    matrix = matrix_of(["arm"], [TaskEntry("t1", "read", fingerprint=current), "t2"])
    samples = [sample("arm", "t1", tokens=costing(50000), fingerprints={"task": old})
               for _ in range(4)]
    samples += [sample("arm", t, tokens=costing(1000), fingerprints={"task": current})
                for t in ("t1", "t2") for _ in range(3)]
    report = report_of(tmp_path, samples, matrix)

    assert row(report, "arm").cost.value == pytest.approx(1000)
    assert row(report, "arm").samples == 6
    (other,) = report.other_versions
    assert (other.arm, other.task, other.changed, other.estimated, other.samples, other.valid,
            other.success) == ("arm", "t1", ["task"], False, 4, 4, 1.0)
    assert other.cost == pytest.approx(50000)
    assert "| arm | t1 | task | 4 | 4 | 100% | 50,000 |" in render(report, "md")


def test_samples_of_two_tool_versions_are_kept_apart(tmp_path):
    """The newest tool version an arm ran is the current one; the other's samples are
    reported apart, each version in its own row, never averaged in."""
    document = "d" * 16
    matrix = matrix_of([ArmEntry("tea", fingerprint=document)], ["t1", "t2"])

    def ran(version, when, cost, task="t1", **options):
        return sample("tea", task, tokens=costing(cost), tool_version=version,
                      started_at=f"2026-07-{when}T12:00:00+00:00",
                      fingerprints={"arm": arm_fingerprint(document, version)}, **options)

    samples = [ran("tea 0.12.0", "10", 70000) for _ in range(2)]
    samples += [ran("tea 0.13.0", "14", 50000) for _ in range(3)]
    samples += [ran("tea 0.14.0", "17", 1000, task) for task in ("t1", "t2") for _ in range(3)]
    samples += [ran("tea 0.13.0", "14", 0, "t2", outcome="harness-error")]
    report = report_of(tmp_path, samples, matrix)

    assert report.tool_versions == {"tea": "tea 0.14.0"}
    assert row(report, "tea").samples == 6
    assert row(report, "tea").cost.value == pytest.approx(1000)
    assert [(r.task, r.changed, r.samples, r.cost) for r in report.other_versions] == [
        ("t1", ["tool tea 0.12.0"], 2, pytest.approx(70000)),
        ("t1", ["tool tea 0.13.0"], 3, pytest.approx(50000)),
        ("t2", ["tool tea 0.13.0"], 1, None)]
    assert report.totals.harness_error == 0  # an old version's error is not the current arm's
    markdown = render(report, "md")
    assert "tea `tea 0.14.0`" in markdown
    assert "| tea | t1 | tool tea 0.13.0 | 3 | 3 | 100% | 50,000 |" in markdown


def test_a_newer_tool_the_host_failed_on_does_not_set_the_measured_samples_aside(tmp_path):
    """Only a trial that reached the agent makes a tool version current: one run of a
    new version that the host failed at once leaves the arm's headline where it was."""
    document = "d" * 16
    matrix = matrix_of([ArmEntry("tea", fingerprint=document)], ["t1"])

    def ran(version, when, **options):
        return sample("tea", "t1", tokens=costing(2000), tool_version=version,
                      started_at=f"2026-07-{when}T12:00:00+00:00",
                      fingerprints={"arm": arm_fingerprint(document, version)}, **options)

    samples = [ran("tea 0.14.0", "10") for _ in range(3)] + [
        ran("tea 0.15.0", "17", outcome="harness-error") for _ in range(5)]
    report = report_of(tmp_path, samples, matrix)
    assert report.tool_versions == {"tea": "tea 0.14.0"}
    assert row(report, "tea").samples == 3
    assert [(r.changed, r.samples) for r in report.other_versions] == [
        (["tool tea 0.15.0"], 5)]


def test_samples_of_two_surfaces_of_one_tool_version_are_never_pooled(tmp_path):
    """One version string, two builds that show the agent different tool schemas: the
    newest surface is current, the other's samples are reported apart; samples from
    before surfaces were recorded still load, and sit apart too. The report gives the
    current surface's ambient size, its tokens labelled estimates."""
    document = "d" * 16
    matrix = matrix_of([ArmEntry("gitea-mcp", fingerprint=document)], ["t1"])
    old_surface = Surface(tools=[{"name": "list_issues", "description": "", "inputSchema": {}}],
                          skill="", bootstrap="Use the tools.", shown="Use the tools.")
    new_surface = Surface(tools=old_surface.tools * 2, skill="", bootstrap="Use the tools.",
                          shown="Use the tools.")

    def ran(surface, when, cost):
        digest = None if surface is None else surface.digest
        extra = {} if surface is None else {
            "tool_surface": digest, "ambient_size": msgspec.to_builtins(surface.ambient_size)}
        return sample("gitea-mcp", "t1", tokens=costing(cost), tool_version="a5dd03c",
                      started_at=f"2026-07-{when}T12:00:00+00:00",
                      fingerprints={"arm": arm_fingerprint(document, "a5dd03c", digest)}, **extra)

    samples = ([ran(None, "09", 90000)] + [ran(old_surface, "10", 70000) for _ in range(2)]
               + [ran(new_surface, "17", 1000) for _ in range(3)])
    report = report_of(tmp_path, samples, matrix)

    assert report.tool_versions == {"gitea-mcp": "a5dd03c"}
    assert row(report, "gitea-mcp").samples == 3
    assert row(report, "gitea-mcp").cost.value == pytest.approx(1000)
    assert sorted((r.changed, r.samples) for r in report.other_versions) == [
        (["tool a5dd03c, surface " + old_surface.digest], 2),
        (["tool a5dd03c, surface unknown"], 1)]
    schemas = new_surface.ambient_size.schemas
    assert report.ambient_size["gitea-mcp"].bytes == {
        "skill": 0, "schemas": schemas, "bootstrap": 14, "total": schemas + 14}
    assert report.ambient_size["gitea-mcp"].tokens_estimated["total"] == -(-(schemas + 14) // 4)
    markdown = render(report, "md")
    assert "Tool surface of each arm" in markdown
    assert "tokens estimated at 4 bytes a token" in markdown
    assert f"| gitea-mcp | 0 B (0~) | {schemas:,} B" in markdown
    assert markdown.count("`a5dd03c`") == 1  # its version said once, in the tools line
    assert "Tool surface of each arm" in render(report, "html")


def test_a_sample_whose_arm_fingerprint_does_not_fit_its_tool_version_is_another_arm(tmp_path):
    document = "d" * 16
    matrix = matrix_of([ArmEntry("tea", fingerprint=document)], ["t1"])
    samples = [sample("tea", "t1", tool_version="tea 0.14.0", started_at="2026-07-18T00:00:00+00:00",
                      fingerprints={"arm": arm_fingerprint(document, "tea 0.14.0")}),
               sample("tea", "t1", tool_version="tea 0.14.0", fingerprints={"arm": document}),
               sample("tea", "t1", fingerprints={"arm": document})]  # a sample from before
    report = report_of(tmp_path, samples, matrix)
    assert report.totals.measured == 1
    assert sorted(r.changed for r in report.other_versions) == [
        ["arm"], ["tool version unknown"]]


def test_samples_of_retired_tasks_and_arms_are_reported_apart(tmp_path):
    matrix = matrix_of(["arm"], ["t1"])
    samples = [sample("arm", "t1"), sample("arm", "gone"), sample("old-arm", "t1")]
    report = report_of(tmp_path, samples, matrix)
    changed = {(r.arm, r.task): r.changed for r in report.other_versions}
    assert changed == {("arm", "gone"): ["task not in the tree"],
                       ("old-arm", "t1"): ["arm not in the tree"]}
    assert report.totals.measured == 1


def test_each_cell_counts_the_prompt_of_its_newest_sample(tmp_path):
    old, new, blank = "1" * 16, "2" * 16, "f" * 16
    matrix = matrix_of(["arm"], ["t1", "t2"])
    samples = [sample("arm", "t1", tokens=costing(9000), fingerprints={"prompt": old})
               for _ in range(3)]
    samples += [sample("arm", "t1", tokens=costing(1000), fingerprints={"prompt": new})
                for _ in range(3)]
    # A harness error after them assembled no prompt: it neither sets nor loses the version.
    samples += [sample("arm", "t1", outcome="harness-error", fingerprints={"prompt": blank})]
    samples += [sample("arm", "t2", tokens=costing(3000), fingerprints={"prompt": old})]
    report = report_of(tmp_path, samples, matrix)

    cells = {c.task: c for c in report.cells}
    assert cells["t1"].samples == 3 and cells["t1"].cost == pytest.approx(1000)
    assert cells["t2"].samples == 1  # its newest prompt is still the old wording
    assert [(r.task, r.changed, r.samples) for r in report.other_versions] == [
        ("t1", ["prompt"], 3)]
    assert report.totals.harness_error == 1


def test_pass_k_matches_hand_computed_values(tmp_path):
    # (passes, trials) per task; pass^3 = C(c,3)/C(n,3), averaged over tasks with n >= 3.
    cells = {"t1": (3, 3), "t2": (2, 3), "t3": (4, 5), "t4": (5, 6), "t5": (1, 2)}
    matrix = matrix_of(["a"], list(cells))
    samples = [sample("a", task, outcome="passed" if i < passes else "failed")
               for task, (passes, trials) in cells.items() for i in range(trials)]
    report = report_of(tmp_path, samples, matrix)
    expected = {"t1": 1.0, "t2": 0.0, "t3": 4 / 10, "t4": 10 / 20, "t5": None}
    assert {c.task: c.pass_k for c in report.cells} == pytest.approx(expected)
    headline = row(report, "a")
    assert headline.pass_k.value == pytest.approx((1 + 0 + 0.4 + 0.5) / 4)
    assert headline.pass_k_tasks == 4
    assert headline.success.value == pytest.approx((1 + 2 / 3 + 4 / 5 + 5 / 6 + 1 / 2) / 5)

    k2 = report_of(tmp_path, samples, matrix_of(["a"], list(cells), pass_k=2), name="k2")
    assert k2.pass_k == 2
    assert row(k2, "a").pass_k.value == pytest.approx((1 + 1 / 3 + 6 / 10 + 10 / 15 + 0) / 5)


def test_arm_figures_are_means_over_tasks_of_task_means(tmp_path):
    matrix = matrix_of(["a"], ["t1", "t2"])
    samples = [sample("a", "t1", tokens=costing(1000), turns=2) for _ in range(10)]
    samples += [sample("a", "t2", tokens=costing(3000), turns=10)]
    figures = row(report_of(tmp_path, samples, matrix), "a")
    assert figures.cost.value == pytest.approx(2000)  # not the per-sample 1,182
    assert figures.turns.value == pytest.approx(6)


def test_cost_equivalent_tokens_weigh_components_and_reweight(tmp_path):
    matrix = matrix_of(["unsplit", "split"], ["t1"])
    samples = [
        sample("unsplit", "t1", tokens={"input": 100, "cache_write": 1000, "cache_read": 10000,
                                        "output": 10}),
        sample("split", "t1", tokens={"input": 100, "cache_write": 1000, "cache_write_5m": 400,
                                      "cache_write_1h": 600, "cache_read": 10000, "output": 10}),
    ]
    report = report_of(tmp_path, samples, matrix)
    # 100 + 1000 x 1.25 (an unsplit write counts at 5 min) + 10000 x 0.1 + 10 x 5
    assert row(report, "unsplit").cost.value == pytest.approx(2400)
    assert row(report, "split").cost.value == pytest.approx(100 + 500 + 1200 + 1000 + 50)
    assert row(report, "split").raw.value == 11110
    for entry in report.components:
        assert sum(entry.shares.values()) == pytest.approx(1)
        assert sum(entry.weighted.values()) == pytest.approx(row(report, entry.arm).cost.value)

    heavier = report_of(tmp_path, samples, matrix.reweighted({"output": 10, "cache_read": 0}),
                        name="reweighted")
    assert row(heavier, "unsplit").cost.value == pytest.approx(100 + 1250 + 0 + 100)
    assert heavier.weights["output"] == 10
    with pytest.raises(ValueError, match="unknown token component outputs"):
        matrix.reweighted({"outputs": 2})


def test_replay_samples_stay_out_of_the_headline(tmp_path):
    matrix = matrix_of(["a"], ["t1"])
    samples = [sample("a", "t1", tokens=costing(1000)) for _ in range(3)]
    samples += [sample("a", "t1", tokens=costing(77000), driver="replay") for _ in range(2)]
    report = report_of(tmp_path, samples, matrix)
    assert row(report, "a").cost.value == pytest.approx(1000)
    (replay,) = report.replay
    assert replay.cost.value == pytest.approx(77000) and replay.samples == 2
    assert replay.estimated
    assert [c.kind for c in report.cells] == ["measured", "replay-estimate"]
    markdown = render(report, "md")
    measured, replay_section = markdown.split("## Replay (estimates): headline")
    assert "cost-equivalent tokens (est.)" in replay_section and "**77,000~**" in replay_section
    assert "77,000" not in measured
    # The estimates keep the measured layout: headline, tiers, components, per task.
    for part in ("by tier", "by token component", "per task"):
        assert f"## Replay (estimates): {part}" in replay_section
    assert report.estimates.headline[0].cost.value == pytest.approx(77000)


def test_unreadable_lines_are_named_and_the_rest_of_the_file_is_read(tmp_path):
    matrix = matrix_of(["a"], ["t1"])
    store = write_store(tmp_path / "results", [sample("a", "t1")])
    cell = store / "a" / "t1.jsonl"
    broken = dict(sample("a", "t1"), turns="many")
    with cell.open("a") as handle:
        handle.write('{"torn": \n' + json.dumps(broken) + "\n" + json.dumps(sample("a", "t1")) + "\n")
    contents = load_store(store)
    assert len(contents.samples) == 2
    assert [p.split(": ")[0] for p in contents.problems] == [f"{cell}:2", f"{cell}:3"]
    assert "turns" in contents.problems[1]
    report = build_report(contents, matrix)
    assert report.totals.unreadable == 2
    assert "2 unreadable lines in the store" in render(report, "md")


def test_only_a_real_difference_is_distinguishable_from_noise(tmp_path):
    tasks = [f"t{i}" for i in range(8)]
    matrix = matrix_of(["base", "same", "dearer"], tasks)
    rng = random.Random(5)
    samples = noisy("base", tasks, 5, rng, spread=3000) + noisy("same", tasks, 5, rng, spread=3000)
    samples += noisy("dearer", tasks, 5, rng, centre=26000, spread=3000)
    report = report_of(tmp_path, samples, matrix)
    rows = {r.arm: r for r in report.comparison.rows}
    reference = report.comparison.reference
    assert reference in ("base", "same")
    other = "same" if reference == "base" else "base"
    assert not rows[other].distinguishable
    assert rows[other].difference.low < 0 < rows[other].difference.high
    assert rows["dearer"].distinguishable and rows["dearer"].difference.low > 0
    assert rows["dearer"].relative == pytest.approx(0.3, abs=0.1)


def test_the_same_store_renders_the_same_report(tmp_path):
    matrix = matrix_of(["a", "b"], ["t1", "t2", "t3"])
    rng = random.Random(3)
    samples = noisy("a", ["t1", "t2", "t3"], 3, rng) + noisy("b", ["t1", "t2"], 4, rng)
    first = report_of(tmp_path, samples, matrix, name="one")
    again = build_report(load_store(tmp_path / "one"), matrix)
    assert render(first, "json") == render(again, "json")
    assert render(first, "html") == render(again, "html")


def test_bonus_table_shows_applicability_and_outcomes(tmp_path):
    bonus = TaskEntry("bonus-search", "bonus", scored=False,
                      applicability={"a": "first-class", "b": "not-applicable"})
    matrix = matrix_of(["a", "b"], ["t1", bonus])
    samples = [sample("a", "t1"), sample("b", "t1")]
    samples += [sample("a", "bonus-search", "bonus", tokens=costing(4000)),
                sample("a", "bonus-search", "bonus", outcome="failed", tokens=costing(6000))]
    report = report_of(tmp_path, samples, matrix)
    assert row(report, "a").tasks_total == 1  # bonus never in the headline
    (operation,) = report.bonus
    a, b = operation.arms
    assert (a.applicability, a.status, a.samples, a.passes, a.cost.value) == (
        "first-class", "measured", 2, 1, 5000)
    assert (b.applicability, b.status, b.samples) == ("not-applicable", "not applicable", 0)
    statuses = {c.arm: c.status for r in report.coverage.rows
                if r.task == "bonus-search" for c in r.cells}
    assert statuses == {"a": "below", "b": "n/a"}
    assert "| bonus-search | first-class · 1/2 passed · 50% (" in render(report, "md")
    assert "| not applicable |" in render(report, "md")


def test_the_json_export_writes_the_records_field_by_field(tmp_path):
    """A default is left out of the JSON (a headline row has no `estimated`, an arm
    without samples no component `total`); every metric is a field of the rows that show
    one, and the CSV's columns are a cell row's fields."""
    matrix = matrix_of(["a", "silent"], ["t1"])
    samples = [sample("a", "t1"), sample("a", "t1", driver="replay")]
    exported = json.loads(render(report_of(tmp_path, samples, matrix), "json"))
    assert "estimated" not in exported["headline"][0]
    assert exported["replay"][0]["estimated"] is True
    components = {c["arm"]: c for c in exported["components"]}
    assert list(components["silent"]) == ["arm", "tokens", "weighted", "shares"]
    assert list(components["a"]) == ["arm", "tokens", "weighted", "total", "shares"]
    for record in (ArmRow, TaskRow, CellRow):
        assert set(ALL_METRICS) <= set(record.__struct_fields__), record
    assert sorted(CSV_COLUMNS) == sorted(CellRow.__struct_fields__)
    with pytest.raises(TypeError, match="cannot hold a object"):
        as_data(msgspec.structs.replace(report_of(tmp_path, samples, matrix, "again"),
                                        model=object()))

"""Arms compared only on the tasks both ran, in every section and format the rendered
report has: the replay's estimates, the tier tables and the tier heat map, whose colour
also never calls an arm best when it succeeds less. And what a report option cannot do
is said: a --baseline with nothing to compare, a weight that is no weight. Estimates
are marked one way everywhere (the mark after the figure)."""

import json
import re

import pytest
from click.testing import CliRunner
from conftest import CHECKOUT
from report_tables import md_row
from synthetic import sample, write_store

from benchkit.cli import main
from benchkit.report import current_matrix
from benchkit.report.charts import BELOW_BEST, CHEAP

MATRIX = current_matrix(CHECKOUT)
ARMS = {a.id: a for a in MATRIX.arms}
READS = [t for t in MATRIX.scored_tasks if t.tier == "read"]


def current(arm: str, task, output: int, **figures) -> dict:
    """A sample of the current tree whose cost is output x the suite's output weight."""
    return sample(arm, task.id, task.tier, tokens={"input": 0, "cache_write": 0,
                                                   "cache_read": 0, "output": output},
                  fingerprints={"task": task.fingerprint, "arm": ARMS[arm].fingerprint,
                                "seed": task.seed_fingerprint,
                                "model": MATRIX.model_fingerprint}, **figures)


def report(store, *options) -> dict:
    """The four formats `benchkit report` renders of the store."""
    out = store.parent / "reports"
    done = CliRunner().invoke(main, ["report", "--store", str(store), "--reports", str(out),
                                     *options], env={"BENCHKIT_ROOT": str(CHECKOUT)},
                              catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return {kind: (out / f"report.{kind}").read_text() for kind in ("md", "html", "json", "csv")}


def heat_colours(html: str, kind: str, tier: str) -> dict[str, str]:
    """arm -> the fill of its cell in the tier heat map of `kind` ("tiers" measured,
    "tiers replay")."""
    chart = re.search(rf'<svg class="chart {kind}".*?</svg>', html, re.S).group(0)
    return {arm: fill for fill, arm in re.findall(
        rf'fill="(#[0-9a-f]{{6}})" rx="3"><title>([\w-]+), {tier}:', chart)}


def rgb(colour: str) -> tuple:
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


@pytest.fixture(scope="module")
def replay_rendered(tmp_path_factory):
    """Replay only: raw-api replayed every read task, tea all but the last, which is
    raw-api's dearest by far; on the tasks both ran raw-api costs half of tea."""
    samples = []
    for task in READS:
        samples += [current("raw-api", task, 20_000 if task is READS[-1] else 1000,
                            driver="replay", cost_usd=None) for _ in range(2)]
        if task is not READS[-1]:
            samples += [current("tea", task, 2000, driver="replay", cost_usd=None)
                        for _ in range(2)]
    store = write_store(tmp_path_factory.mktemp("replay") / "results", samples)
    return report(store, "--baseline", "gitea-axi")


def test_replay_estimates_are_compared_on_the_tasks_both_replayed(replay_rendered):
    common = len(READS) - 1
    weight = MATRIX.weights["output"]
    data = json.loads(replay_rendered["json"])
    shared = {r["arm"]: r for r in data["estimates"]["common"]["rows"]}
    assert len(data["estimates"]["common"]["tasks"]) == common
    assert shared["raw-api"]["cost"]["value"] == pytest.approx(1000 * weight)
    assert shared["tea"]["cost"]["value"] == pytest.approx(2000 * weight)
    assert all(r["estimated"] for r in data["estimates"]["common"]["rows"])

    md = replay_rendered["md"]
    heading = "## Replay (estimates): headline"  # the first table ranks on common tasks
    # raw-api and tea replayed; the other arms have none, and the table says so
    assert (f"Ranked on the **{common} tasks every arm with samples replayed** (of "
            f"{len(MATRIX.scored_tasks)} scored): {len(MATRIX.arms) - 2} of {len(MATRIX.arms)} "
            "arms have none") in md
    assert md_row(md, "raw-api", heading)[1] == f"**{1000 * weight:,.0f}~**"
    assert md_row(md, "tea", heading)[1] == f"**{2000 * weight:,.0f}~**"
    later = "### All-task means: not comparable between arms"
    assert md.index(heading) < md.index(later)
    assert md_row(md, "raw-api", later)[1] != f"**{1000 * weight:,.0f}~**"
    assert f"Ranked on the <strong>{common} tasks every arm with samples replayed</strong>" \
        in replay_rendered["html"]


def test_the_tier_tables_compare_arms_on_the_tier_s_common_tasks(replay_rendered):
    weight = MATRIX.weights["output"]
    common = len(READS) - 1
    row = md_row(replay_rendered["md"], "read", "## Replay (estimates): by tier")
    raw_api = row[2 + list(ARMS).index("raw-api")]
    assert f"on the {common} common: {1000 * weight:,.0f}~" in raw_api
    tier = next(t for t in json.loads(replay_rendered["json"])["estimates"]["tiers"]
                if t["tier"] == "read")
    arms = {a["arm"]: a for a in tier["arms"]}
    assert tier["common"] == common
    assert arms["raw-api"]["cost"] > arms["tea"]["cost"]  # over all it ran: dearer
    assert arms["raw-api"]["relative"] == pytest.approx(1.0)  # like for like: cheapest
    assert arms["tea"]["relative"] == pytest.approx(2.0)
    colours = heat_colours(replay_rendered["html"], "tiers replay", "read")
    assert rgb(colours["raw-api"]) == CHEAP and rgb(colours["tea"]) != CHEAP


def test_a_cheaper_arm_that_fails_is_never_coloured_the_best(tmp_path):
    """tea costs a tenth of raw-api on every read task and never passes: raw-api, at
    the tier's best success, is green; tea is marked below it, not green."""
    samples = []
    for task in READS:
        samples += [current("raw-api", task, 1000) for _ in range(3)]
        samples += [current("tea", task, 100, outcome="failed") for _ in range(3)]
    rendered = report(write_store(tmp_path / "results", samples))
    colours = heat_colours(rendered["html"], "tiers", "read")
    assert rgb(colours["raw-api"]) == CHEAP
    assert colours["tea"] == BELOW_BEST
    tier = next(t for t in json.loads(rendered["json"])["tiers"] if t["tier"] == "read")
    arms = {a["arm"]: a for a in tier["arms"]}
    assert arms["tea"]["below_best"] and not arms["raw-api"].get("below_best", False)
    assert arms["raw-api"]["relative"] == pytest.approx(1.0)
    assert "below the tier's best success" in rendered["html"]


def test_a_baseline_the_report_cannot_apply_is_said(replay_rendered):
    said = "--baseline gitea-axi is not applied"
    assert any(note.startswith(said) for note in json.loads(replay_rendered["json"])["notes"])
    assert said in replay_rendered["md"] and said in replay_rendered["html"]


@pytest.mark.parametrize("weight", ["output=-1", "output=nan", "cache_read=inf"])
def test_a_negative_or_infinite_weight_is_refused(tmp_path, weight):
    store = write_store(tmp_path / "results", [current("tea", READS[0], 100)])
    done = CliRunner().invoke(main, ["report", "--store", str(store), "--reports",
                                     str(tmp_path / "reports"), "--weight", weight],
                              env={"BENCHKIT_ROOT": str(CHECKOUT)})
    assert done.exit_code == 2
    assert f"{weight!r}: a weight is a number of at least 0" in done.output
    assert not (tmp_path / "reports").exists()


def test_an_estimate_s_mark_follows_its_figure_everywhere(tmp_path):
    """`~` after the figure (12,345~), never before it (~12,345): replay figures, an
    ambient size's estimated tokens, an imputed cost."""
    sized = {"ambient_size": {"skill": 4000, "schemas": 0, "bootstrap": 400}}
    samples = [current("raw-api", task, 1000, **sized) for task in READS]
    part = [0, 0, 0, 0, 0]
    anatomy = {"requests": 1, "ambient": part, "carried": part, "tool_output": part,
               "model_output": [0, 0, 0, 0, 900], "ambient_tokens": 0, "tool_results": 0,
               "tool_result_bytes": 0, "estimated": True}
    samples += [current("raw-api", task, 900, driver="replay", cost_usd=None, anatomy=anatomy,
                        **sized) for task in READS]
    rendered = report(write_store(tmp_path / "results", samples))
    for kind in ("md", "html"):
        text = rendered[kind]
        assert "1,100~" in text and "900~" in text, kind  # ambient tokens; a replay figure
        assert re.findall(r".{20}~[\d$].{10}", text) == [], kind
    chart = re.search(r'<svg class="chart anatomy".*?</svg>', rendered["html"], re.S).group(0)
    replayed = f"{900 * MATRIX.weights['output']:,.0f}~"
    assert f">{replayed}</text>" in chart and ">raw-api (replay)</text>" in chart
    assert " ~<" not in chart


def test_a_cell_only_replayed_is_not_marked_missing(tmp_path):
    """After a passing main job (raw-api replayed on every scored task) the coverage
    matrix shows each raw-api cell replayed, not a red `missing`; the arms never run
    stay missing."""
    scored = MATRIX.scored_tasks
    rendered = report(write_store(tmp_path / "results", [
        current("raw-api", task, 1000, driver="replay", cost_usd=None) for task in scored]))
    coverage = json.loads(rendered["json"])["coverage"]
    assert {g["arm"] for g in coverage["missing"]} == set(ARMS) - {"raw-api"}
    assert len(coverage["replayed"]) == len(scored)
    column = 2 + list(ARMS).index("raw-api")
    md = rendered["md"]
    for task in scored:
        assert md_row(md, task.id, "## Coverage")[column] == "~ +1 replay"
    assert f"; {len(scored)} replayed only (estimates, no measured sample yet)" in md
    cells = re.findall(r'<td class="num (\w+)"[^>]*><a href="trials/raw-api/', rendered["html"])
    assert cells and set(cells) == {"replayed"}

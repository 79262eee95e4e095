"""The report reads right to a newcomer (each a paper cut once seen): its first table
says when arms have no samples rather than claiming every arm ran the tasks, says its
figures are per trial, why raw tokens can exceed cost-equivalent ones and what the
imputed cost is, beside the table; the replay's caveat is said once; the tool surface
and the first request are not both called "ambient"; the HTML shows no Markdown
backticks; replay figures left out of the figures keep their `~`.

A store where raw-api alone replayed, once with an older curl too, rendered by the real
`benchkit report` against the shipped tree."""

import html
import re

import pytest
from click.testing import CliRunner
from conftest import CHECKOUT
from synthetic import sample, write_store

from benchkit.cli import main
from benchkit.fingerprint import arm_fingerprint
from benchkit.report import current_matrix
from benchkit.report.render import REFERENCE_BYTES

MATRIX = current_matrix(CHECKOUT)
ARM = next(a for a in MATRIX.arms if a.id == "raw-api")


def replayed(task, version: str, day: int) -> dict:
    return sample("raw-api", task.id, task.tier, driver="replay", tool_version=version,
                  started_at=f"2026-07-{day:02d}T12:00:00+00:00",
                  ambient_size={"skill": 0, "schemas": 0, "bootstrap": 241},
                  tokens={"input": 0, "cache_write": 2000, "cache_read": 30000, "output": 100},
                  fingerprints={"task": task.fingerprint,
                                "arm": arm_fingerprint(ARM.fingerprint, version),
                                "seed": task.seed_fingerprint, "model": MATRIX.model_fingerprint},
                  anatomy={"requests": 2, "ambient": [0, 2000, 0, 0, 0], "carried": [0, 0, 0, 30000, 0],
                           "tool_output": [0] * 5, "model_output": [0, 0, 0, 0, 100],
                           "ambient_tokens": 2000, "tool_results": 1, "tool_result_bytes": 0,
                           "estimated": True})


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reading")
    tasks = MATRIX.scored_tasks[:3]
    store = write_store(tmp / "results", [replayed(t, "curl 7.0.0", 1) for t in tasks]
                        + [replayed(t, "curl 8.0.0", 2) for t in tasks])
    done = CliRunner().invoke(main, ["report", "--store", str(store), "--reports",
                                     str(tmp / "reports")], env={"BENCHKIT_ROOT": str(CHECKOUT)},
                              catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return {kind: (tmp / "reports" / f"report.{kind}").read_text() for kind in ("md", "html")}


def visible(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", re.sub(r"<style.*?</style>", "", page, flags=re.S)))


def test_the_first_table_says_which_arms_have_no_samples(rendered):
    others = [a.id for a in MATRIX.arms if a.id != "raw-api"]
    said = (f"Ranked on the **3 tasks every arm with samples replayed** (of "
            f"{len(MATRIX.scored_tasks)} scored): {len(others)} of {len(MATRIX.arms)} arms have "
            f"none ({', '.join(others)})")
    assert said in rendered["md"]
    assert "every arm with samples replayed" in visible(rendered["html"])


def test_the_first_table_is_read_beside_it(rendered):
    """Per trial, why raw tokens exceed cost-equivalent ones, what the imputed cost is:
    right under the table, before the next section."""
    md = rendered["md"]
    head = md[md.index("## Replay (estimates): headline"):md.index("## Replay (estimates): by tier")]
    assert "Every figure is **per trial**" in head
    assert "Raw tokens count every token once, cache reads included" in head
    assert "_Imputed cost_: the US dollars the SDK reports at list prices for the estimated usage" in head
    page = visible(rendered["html"])
    assert "Every figure is per trial" in page and "Imputed cost: the US dollars" in page


def test_the_replay_caveat_is_said_once(rendered):
    assert rendered["md"].count(REFERENCE_BYTES) == 1
    assert visible(rendered["html"]).count(REFERENCE_BYTES) == 1


def test_ambient_names_no_two_figures(rendered):
    """The tool surface's static size and the first request's measured prompt are told
    apart by their names: neither is "ambient" on the page."""
    for text in (rendered["md"], visible(rendered["html"])):
        assert "Tool surface of each arm" in text and "first request's prompt, tokens" in text
        assert "mbient" not in text


def test_the_html_shows_no_markdown_backticks(rendered):
    page = visible(rendered["html"])
    assert "`" not in page
    assert "<code>tea pulls N</code>" in rendered["html"]  # a refs.d reason's code span


def test_replay_figures_left_out_keep_their_mark(rendered):
    md = rendered["md"]
    part = md[md.index("Other versions:"):]
    row = next(line for line in part.splitlines() if line.startswith("| raw-api |"))
    assert "(replay, est.)" in row and row.rstrip(" |").endswith("~")

"""The report's first screen compares like with like: a store where raw-api ran every
scored task and the other arms 6 (the shape that once ranked gitea-mcp ahead of a
raw-api cheaper on every task both ran), measured and replayed, rendered by the real
`benchkit report`. Every table and chart that compares arms compares them on the tasks
all of them ran, or says it does not; an arm sharing no task with the rest is listed
apart; replay figures say they are the bytes of each arm's references; and in headless
Chromium at 1,400 px no chart clips a label or a legend.

The truth (cost-equivalent tokens per trial, output tokens x the suite's weight 5):
raw-api costs 1,000 on the 6 common tasks and 5,000 on its 14 others (3,800 over its
20); tea 1,500 and gitea-mcp 3,000 on the 6 (1.5x and 3x raw-api); gitea-axi ran 2
multi-step tasks no other arm but raw-api ran: set apart. Replay: the same, and
gitea-mcp-search at 2,000 on the 6.
"""

import json
import re
import shutil
import tempfile

import pytest
from click.testing import CliRunner
from conftest import CHECKOUT
from report_tables import html_table_captioned, md_row
from synthetic import sample, write_store
from test_report_comparisons import heat_colours, rgb
from test_report_html import CHROMIUM, Browser
from test_report_trials import Page

from benchkit.cli import main
from benchkit.report import current_matrix
from benchkit.report.render import REFERENCE_BYTES

MATRIX = current_matrix(CHECKOUT)
ARMS = {a.id: a for a in MATRIX.arms}
SCORED = MATRIX.scored_tasks
COMMON = SCORED[:6]  # the 4 read tasks and 2 single-mutation ones
APART = [t for t in SCORED if t.tier == "multi-step"][:2]
OUTPUT = {"raw-api": 200, "tea": 300, "gitea-mcp": 600, "gitea-mcp-search": 400}
ELSEWHERE = 1000  # raw-api's output on the tasks only it ran
WEIGHT = MATRIX.weights["output"]


def current(arm: str, task, output: int, driver: str) -> dict:
    """A passing sample of the current tree whose cost is output x the output weight,
    all of it the model's output in its cost anatomy."""
    part = [0, 0, 0, 0, output]
    return sample(arm, task.id, task.tier, driver=driver, cost_usd=None,
                  tokens={"input": 0, "cache_write": 0, "cache_read": 0, "output": output},
                  fingerprints={"task": task.fingerprint, "arm": ARMS[arm].fingerprint,
                                "seed": task.seed_fingerprint, "model": MATRIX.model_fingerprint},
                  anatomy={"requests": 2, "ambient": [0] * 5, "carried": [0] * 5,
                           "tool_output": [0] * 5, "model_output": part, "ambient_tokens": 0,
                           "tool_results": 1, "tool_result_bytes": 200,
                           "estimated": driver == "replay"})


def samples(driver: str) -> list[dict]:
    found = []
    for _ in range(MATRIX.floor):
        for task in SCORED:
            found.append(current("raw-api", task, OUTPUT["raw-api"] if task in COMMON
                                 else ELSEWHERE, driver))
        for arm in ("tea", "gitea-mcp") + (("gitea-mcp-search",) if driver == "replay" else ()):
            found += [current(arm, task, OUTPUT[arm], driver) for task in COMMON]
        found += [current("gitea-axi", task, 500, driver) for task in APART]
    return found


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("like")
    store = write_store(tmp / "results", samples("claude") + samples("replay"))
    done = CliRunner().invoke(main, ["report", "--store", str(store), "--reports",
                                     str(tmp / "reports")], env={"BENCHKIT_ROOT": str(CHECKOUT)},
                              catch_exceptions=False)
    assert done.exit_code == 0, done.output
    files = {kind: (tmp / "reports" / f"report.{kind}").read_text() for kind in ("md", "html", "json")}
    return {**files, "path": tmp / "reports" / "report.html"}


def tokens(output: int, estimated: bool = False) -> str:
    return f"{output * WEIGHT:,.0f}" + ("~" if estimated else "")


def section(md: str, heading: str) -> str:
    """The markdown from the heading to the next heading of its level or higher."""
    start = md.index(heading + "\n")
    body = start + len(heading) + 1
    level = len(heading.split(" ")[0])
    end = re.search(rf"^#{{1,{level}}} ", md[body:], re.M)
    return md[start:body + end.start()] if end else md[start:]


def ranked_arms(table: str) -> list[str]:
    return [line.split(" | ")[0].lstrip("| ") for line in table.splitlines()
            if line.startswith("| ") and "**" in line]


def test_the_truth_would_mislead_on_all_task_means():
    all_tasks = (6 * OUTPUT["raw-api"] + 14 * ELSEWHERE) / 20
    assert all_tasks > OUTPUT["gitea-mcp"] > OUTPUT["tea"] > OUTPUT["raw-api"]


@pytest.mark.parametrize("kind", ["measured", "replay"])
def test_the_first_markdown_table_ranks_on_the_common_tasks(rendered, kind):
    md, estimated = rendered["md"], kind == "replay"
    ran = "replayed" if estimated else "ran"
    head = section(md, "## Replay (estimates): headline" if estimated else "## Measured: headline")
    first, _, later = head.partition("### All-task means: not comparable between arms")
    # gitea-mcp-search replayed only: the measured table says it has no samples
    assert f"Ranked on the **6 tasks every arm {ran}** (of {len(SCORED)} scored)" in first \
        if estimated else ("Ranked on the **6 tasks every arm with samples ran** (of "
                           f"{len(SCORED)} scored): 1 of 5 arms have none (gitea-mcp-search)") in first
    want = ["raw-api", "tea"] + (["gitea-mcp-search"] if estimated else []) + ["gitea-mcp"]
    assert ranked_arms(first) == want  # raw-api first: cheapest on the tasks all ran
    assert md_row(first, "raw-api")[1].startswith(f"**{tokens(200, estimated)}")
    assert md_row(first, "tea")[1].startswith(f"**{tokens(300, estimated)}")
    coverage = md_row(first, "tea")[7]  # each arm's own coverage beside the ranking
    assert coverage == (f"6/{len(SCORED)} replayed" if estimated else f"6/{len(SCORED)}")
    assert (f"Not ranked, sharing no task with the arms above: gitea-axi (2/{len(SCORED)} "
            f"tasks {ran})") in first
    # The all-task means after it, labelled: raw-api's flatters the arms that ran 6.
    assert "the arms ran different tasks, so these means do not rank them" in later
    assert md_row(later, "raw-api")[1].startswith(f"**{tokens(760, estimated)}")
    assert ranked_arms(later)[-2:] == ["gitea-axi", "raw-api"] or ranked_arms(later)[-1] == "raw-api"
    if estimated:
        assert REFERENCE_BYTES in head.split("Ranked on the")[0]  # next to the figures


@pytest.mark.parametrize("kind", ["measured", "replay"])
def test_the_components_compare_on_the_common_tasks_and_say_so(rendered, kind):
    estimated = kind == "replay"
    part = section(rendered["md"], "## Replay (estimates): by token component" if estimated
                   else "## Measured: by token component")
    ran = "replayed" if estimated else "ran"
    assert f"On the 6 tasks every arm {ran}, as the first table ranks them (not ranked: gitea-axi)." in part
    assert md_row(part, "raw-api")[-1] == tokens(200, estimated)  # not its all-task 3,800
    assert "| gitea-axi (not ranked: no task in common with the ranked arms) |" in part
    if estimated:  # the caveat is the headline's, said once (test_report_reading.py)
        assert "Estimates (~), as the replay's headline says." in part


def test_where_the_tokens_go_compares_on_the_common_tasks_and_says_so(rendered):
    part = section(rendered["md"], "## Where the tokens go")
    assert "Measured rows: On the 6 tasks every arm ran" in part
    assert "Replay rows: On the 6 tasks every arm replayed" in part
    assert "Replay rows (~) are estimates from bytes." in part
    rows = {line.split(" | ")[0].lstrip("| "): line for line in part.splitlines()
            if line.startswith("| ") and "(" in line}
    assert f"| {tokens(200)} |" in rows["raw-api"]  # on the common tasks, not 3,800
    assert f"| {tokens(200, True)} |" in rows["raw-api (replay)"]
    assert "gitea-axi" not in rows  # set apart: not compared


def test_the_json_says_what_the_first_table_ranks(rendered):
    report = json.loads(rendered["json"])
    for common in (report["common"], report["estimates"]["common"]):
        assert len(common["tasks"]) == 6 and common["uneven"] and common["apart"] == ["gitea-axi"]
        assert common["rows"][0]["arm"] == "raw-api"
    assert report["version"] >= 4


def test_the_html_first_table_and_chart_rank_on_the_common_tasks(rendered):
    page = rendered["html"]
    first = html_table_captioned(page, "One row per ranked arm: means over the 6 common tasks")
    assert list(first)[:3] == ["raw-api", "tea", "gitea-mcp"] and "gitea-axi" not in first
    assert first["raw-api"][1][0] == tokens(200)
    measured = page[page.index('id="headline"'):page.index('id="replay"')]
    chart = re.search(r'<svg class="chart cost".*?</svg>', measured, re.S).group(0)
    assert 'aria-label="Cost-equivalent tokens per trial on the 6 tasks every arm ran, by arm"' in chart
    bars = re.findall(r'text-anchor="end">([\w-]+)</text>', chart)
    assert bars == ["raw-api", "tea", "gitea-mcp"]
    later = html_table_captioned(page, "All-task means, not comparable between arms")
    assert later["raw-api"][1][0] == tokens(760)
    assert page.index("One row per ranked arm") < page.index("All-task means, not comparable")
    assert page.count('class="reference-bytes"') == 1  # the replay headline's, said once


def test_the_heat_map_tells_1_5x_from_3x(rendered):
    colours = heat_colours(rendered["html"], "tiers", "read")
    tea, mcp = rgb(colours["tea"]), rgb(colours["gitea-mcp"])
    assert max(abs(a - b) for a, b in zip(tea, mcp, strict=True)) > 40, (tea, mcp)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (scripts/test-setup installs it)")
def test_no_chart_clips_a_label_or_a_legend_at_1400_px(rendered, tmp_path):
    profile = tempfile.mkdtemp(prefix="chromium-")
    browser = Browser(profile)
    try:
        page = Page(browser, 1400, 900)
        page.open(rendered["path"].as_uri())
        # Every text of every chart inside its SVG's viewBox, and no two texts of one
        # chart overlapping (a legend's name running into the next swatch's).
        found = json.loads(page.js("""JSON.stringify([...document.querySelectorAll('svg.chart')].map(svg => {
            const view = svg.viewBox.baseVal;
            const boxes = [...svg.querySelectorAll('text')].map(t => {
              const b = t.getBBox();
              return {text: t.textContent, x: b.x, y: b.y, right: b.x + b.width, bottom: b.y + b.height};
            });
            const outside = boxes.filter(b => b.x < view.x - 0.5 || b.y < view.y - 0.5
              || b.right > view.x + view.width + 0.5 || b.bottom > view.y + view.height + 0.5);
            const overlapping = [];
            boxes.forEach((a, i) => boxes.slice(i + 1).forEach(b => {
              if (a.x < b.right - 1 && b.x < a.right - 1 && a.y < b.bottom - 1 && b.y < a.bottom - 1)
                overlapping.push([a.text, b.text]);
            }));
            return {chart: svg.getAttribute('class'), texts: boxes.map(b => b.text),
                    outside: outside, overlapping: overlapping};
        }))"""))
        # The first screen: the ranking's table and its chart, whole.
        screen = json.loads(page.js("""JSON.stringify({
            table: [...document.querySelectorAll('caption')].find(c => c.innerText.startsWith(
                'One row per ranked arm')).closest('table').getBoundingClientRect().bottom,
            chart: document.querySelector('svg.chart.cost').getBoundingClientRect().bottom})"""))
        (tmp_path / "report.png").write_bytes(page.screenshot())
    finally:
        browser.close()
        shutil.rmtree(profile, ignore_errors=True)
    assert screen["table"] < screen["chart"] <= 900, screen
    charts = {chart["chart"]: chart for chart in found}
    assert "chart anatomy" in charts and "gitea-mcp-search (replay)" in charts["chart anatomy"]["texts"]
    assert "carried context" in charts["chart anatomy"]["texts"]
    for chart in found:
        assert chart["outside"] == [], chart["chart"]
        assert chart["overlapping"] == [], chart["chart"]

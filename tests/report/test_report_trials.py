"""Why a trial failed, end to end: a real replay run (the real CLI, guard and checker on
the embedded forge) whose reference for one task tries a tool the guard denies, then
`benchkit show` on the failed trial, and the HTML report in headless Chromium: its
first screen shows the replay figures labelled as estimates with a chart, and a click
through a cell reaches the trial's page with the same differences and transcript,
nothing fetched from the network."""

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from conftest import BENCHKIT, CHECKOUT
from test_report_html import CHROMIUM, Browser, near, read_png, rgb

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")]

BROKEN_TASK, GOOD_TASK = "close-csv-export-issue", "read-open-issue-count"
DENIED = "wget -q -O- http://example.invalid/"  # not the arm's tool: the guard denies it
WIDTH, HEIGHT = 1280, 900


def benchkit(*args, cwd, env=None):
    return subprocess.run([*BENCHKIT, *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=900)


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    root = tmp_path_factory.mktemp("trials") / "tree"
    root.mkdir()
    for name in ("suite.yaml", "seeds", "tasks.d", "arms.d", "refs.d"):
        source = CHECKOUT / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, root / name)
    refs = root / "refs.d" / "raw-api.yaml"
    document = yaml.safe_load(refs.read_text())
    document["tasks"][BROKEN_TASK]["steps"] = [{"run": DENIED}]
    refs.write_text("# yaml-language-server: $schema=../benchkit/schemas/reference.schema.json\n"
                    + yaml.safe_dump(document, sort_keys=False))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITEA_", "BENCHKIT_"))}
    env["XDG_CONFIG_HOME"] = str(root.parent / "no-config")
    done = benchkit("run", "arms.d/raw-api.yaml", "--driver", "replay", "--task", BROKEN_TASK,
                    "--task", GOOD_TASK, cwd=root, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root


def test_show_lists_the_failed_trial_and_shows_its_differences_and_transcript(ran):
    listed = benchkit("show", "--outcome", "failed", cwd=ran)
    assert listed.returncode == 0, listed.stderr
    rows = listed.stdout.splitlines()[1:]
    assert len(rows) == 1 and BROKEN_TASK in rows[0] and "failed" in rows[0]
    sample_id = rows[0].split()[2]
    shown = benchkit("show", sample_id, cwd=ran)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "outcome: failed (checker)" in text
    curl = subprocess.run(["curl", "--version"], capture_output=True, text=True).stdout
    assert f"\ntool: {curl.splitlines()[0]}; runtime Claude Code " in text  # the version ran
    assert "calls by command (result bytes; failed, retry):\n  wget (" in text
    assert "differences:\n  - issue #2" in text and "expected closed" in text
    assert "tokens (estimated): input" in text and "turns:" in text
    assert "[agent] calls Bash, DENIED by the guard" in text and DENIED in text
    assert "[agent] says" in text
    assert "requests through the gateway: 0" in text  # the denied call reached nothing
    good = everything_but(benchkit("show", cwd=ran).stdout, BROKEN_TASK)
    drilled = benchkit("show", good, cwd=ran).stdout
    assert "requests through the gateway: " in drilled
    assert "GET /api/v1/repos/" in drilled and "-> 200 [repo] curl/" in drilled, drilled
    everything = benchkit("show", cwd=ran).stdout.splitlines()
    assert len(everything) == 3 and everything[1].split()[4] == BROKEN_TASK  # newest first
    assert benchkit("show", "nosuchid", cwd=ran).returncode == 2


def everything_but(listing: str, task: str) -> str:
    """The id of the one listed trial that is not of `task`."""
    [row] = [r for r in listing.splitlines()[1:] if task not in r]
    return row.split()[2]


class Page:
    """One headless tab, navigated and inspected over the DevTools pipe."""

    def __init__(self, browser, width=WIDTH, height=HEIGHT):
        self.browser = browser
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Network", "Page"):
            browser.call(f"{domain}.enable", session=self.session)
        browser.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                     "deviceScaleFactor": 1, "mobile": False}, session=self.session)

    def loaded(self, action):
        self.browser.events = [e for e in self.browser.events if e.get("method") != "Page.loadEventFired"]
        action()
        self.browser.wait_for("Page.loadEventFired")

    def open(self, uri):
        self.loaded(lambda: self.browser.call("Page.navigate", {"url": uri}, session=self.session))

    def click(self, selector):
        self.loaded(lambda: self.js(f"document.querySelector({json.dumps(selector)}).click()"))

    def js(self, expression):
        return self.browser.call("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                                 session=self.session)["result"].get("value")

    def screenshot(self) -> bytes:
        return base64.b64decode(self.browser.call("Page.captureScreenshot", {"format": "png"},
                                                  session=self.session)["data"])


def first_screen(report_html: Path, shots: Path) -> dict:
    """The report's first screen: its screenshot (saved), visible text and charts."""
    profile = tempfile.mkdtemp(prefix="chromium-")
    browser = Browser(profile)
    try:
        page = Page(browser)
        page.open(report_html.as_uri())
        seen = json.loads(page.js(f"""JSON.stringify({{
            text: [...document.querySelectorAll('h1, h2, p, th, td')]
                    .filter(e => e.getBoundingClientRect().bottom <= {HEIGHT}).map(e => e.innerText),
            charts: [...document.querySelectorAll('svg.chart')]
                    .filter(e => e.getBoundingClientRect().bottom <= {HEIGHT}).map(e => e.getAttribute('class'))}})"""))
        png = page.screenshot()
    finally:
        browser.close()
        shutil.rmtree(profile, ignore_errors=True)
    shots.mkdir(parents=True, exist_ok=True)
    (shots / "first-screen.png").write_bytes(png)
    return {**seen, "png": png}


def assert_replay_leads(screen: dict, arm: str = "raw-api"):
    """raw-api's replay figures, labelled as estimates, with a chart, on the first screen."""
    text = "\n".join(screen["text"])
    assert "Replay (estimates): headline" in text and "Estimates, not measurements." in text
    assert any(t.strip() == arm for t in screen["text"])
    assert any(t.strip().endswith("~") and t.strip()[0].isdigit() for t in screen["text"]), text
    assert "chart cost replay" in screen["charts"]
    width, height, rows = read_png(screen["png"])
    assert (width, height) == (WIDTH, HEIGHT)
    bar = sum(1 for line in rows for p in line if near(p, rgb("#4e79a7")))
    assert bar > 2000  # the bar of the estimated-cost chart is drawn on screen


def test_the_first_screen_leads_with_the_replay_estimates_and_a_chart(ran, tmp_path):
    assert_replay_leads(first_screen(ran / "reports" / "report.html", tmp_path))


def test_a_click_through_a_cell_reaches_the_failed_trials_page(ran):
    profile = tempfile.mkdtemp(prefix="chromium-")
    browser = Browser(profile)
    try:
        page = Page(browser)
        page.open((ran / "reports" / "report.html").as_uri())
        page.click(f'a[href="trials/raw-api/{BROKEN_TASK}.html"]')
        assert page.js("document.location.pathname").endswith(f"trials/raw-api/{BROKEN_TASK}.html")
        assert page.js("document.querySelector('table.trials tbody tr td').innerText") == "failed"
        page.click("table.trials tbody tr a")
        body = page.js("document.body.innerText")
        assert "failed: raw-api · close-csv-export-issue trial 0" in body
        assert "The checker's differences" in body and "expected closed" in body
        assert "tool\tcurl " in body  # the tool version the trial ran
        assert "DENIED by the guard" in body and DENIED in body
        assert page.js("document.querySelectorAll('ol.conversation li.denied').length") == 1
        assert "Requests through the gateway" in body  # none: the denied call reached nothing
        page.click('a[href="../../index.html"]')
        assert page.js("document.querySelector('table.trials tbody tr td').innerText") == "failed"
        time.sleep(0.2)
        page.js("1")
        requested = [e["params"]["request"]["url"] for e in browser.events
                     if e.get("method") == "Network.requestWillBeSent"]
        assert requested and all(url.startswith("file://") for url in requested), requested
    finally:
        browser.close()
        shutil.rmtree(profile, ignore_errors=True)

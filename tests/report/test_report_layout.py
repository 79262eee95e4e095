"""The HTML report fits a 1,400-pixel window, measured in headless Chromium: a cell
that cannot run says why in as many lines as it takes (reasons run to hundreds of
characters), a tool's long version string is printed once and wraps, and nothing makes
the page scroll sideways."""

import json
import shutil
import tempfile

import pytest
import yaml
from click.testing import CliRunner
from synthetic import sample, write_store
from test_report_html import CHROMIUM, Browser
from test_report_trials import Page

from benchkit.cli import main
from benchkit.fingerprint import arm_fingerprint
from benchkit.report import current_matrix

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (scripts/test-setup installs it)")
WIDTH, HEIGHT = 1400, 900
# What `curl --version` says first on a Debian machine: one line of about 200 characters.
CURL = ("curl 8.14.1 (x86_64-pc-linux-gnu) libcurl/8.14.1 OpenSSL/3.5.1 zlib/1.3.1 "
        "brotli/1.1.0 zstd/1.5.7 libidn2/2.3.8 libpsl/0.21.2 libssh2/1.11.1 nghttp2/1.64.0 "
        "ngtcp2/1.11.0 nghttp3/1.8.0 librtmp/2.3 OpenLDAP/2.6.10")
# A reason of the length the shipped references reach once a host's refusal is quoted.
LONG_REASON = " ".join(["tea shows no COMMENT review's body through its own commands:"] * 8)


@pytest.fixture
def report_html(tree_copy, tmp_path):
    refs = tree_copy / "refs.d" / "tea.yaml"
    document = yaml.safe_load(refs.read_text())
    document["tasks"]["bonus-pull-diff"]["unsupported"] = LONG_REASON
    refs.write_text(yaml.safe_dump(document, sort_keys=False))
    matrix = current_matrix(tree_copy)
    assert LONG_REASON in next(t for t in matrix.tasks if t.id == "bonus-pull-diff").cannot_run["tea"]
    samples = []
    for arm in matrix.arms:
        # the tool's version as pre-flight records it: raw-api's is curl's whole first line
        version = CURL if arm.id == "raw-api" else None
        for task in matrix.scored_tasks[:3 if arm.id == "tea" else 4]:  # tiers compare
            samples += [sample(arm.id, task.id, task.tier, tool_version=version, fingerprints={
                "task": task.fingerprint, "arm": arm_fingerprint(arm.fingerprint, version),
                "seed": task.seed_fingerprint, "model": matrix.model_fingerprint},
                ambient_size={"skill": 4000, "schemas": 0, "bootstrap": 300}) for _ in range(3)]
    store = write_store(tmp_path / "results", samples)
    done = CliRunner().invoke(main, ["report", "--store", str(store), "--reports",
                                     str(tmp_path / "reports"), "--format", "html", "-o",
                                     str(tmp_path / "reports" / "report.html")],
                              env={"BENCHKIT_ROOT": str(tree_copy)}, catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return tmp_path / "reports" / "report.html"


def test_the_report_fits_the_window_and_says_each_reason_whole(report_html, tmp_path):
    profile = tempfile.mkdtemp(prefix="chromium-")
    browser = Browser(profile)
    try:
        page = Page(browser, WIDTH, HEIGHT)
        page.open(report_html.as_uri())
        seen = json.loads(page.js("""JSON.stringify({
            scroll: document.documentElement.scrollWidth, inner: innerWidth,
            widest: Math.max(...[...document.body.querySelectorAll('*')]
                                 .map(e => e.getBoundingClientRect().right)),
            coverage: document.querySelector('table.coverage').getBoundingClientRect().right,
            text: document.body.innerText,
            above: [...document.querySelectorAll('h1 ~ p, h1 ~ table')]
                     .filter(e => e.compareDocumentPosition(document.getElementById('headline'))
                                  === Node.DOCUMENT_POSITION_FOLLOWING)
                     .map(e => e.innerText).join('\\n')})"""))
        (tmp_path / "report.png").write_bytes(page.screenshot())
    finally:
        browser.close()
        shutil.rmtree(profile, ignore_errors=True)
    assert seen["inner"] == WIDTH
    assert seen["scroll"] <= seen["inner"], seen["scroll"]  # nothing scrolls sideways
    assert seen["widest"] <= WIDTH and seen["coverage"] <= WIDTH, seen
    assert LONG_REASON in seen["text"].replace("\n", " ")  # said whole, wrapped
    assert seen["above"].count(CURL) == 1  # the version once above the headline
    assert "raw-api" in seen["text"] and "4,300 B" in seen["above"]  # the ambient table

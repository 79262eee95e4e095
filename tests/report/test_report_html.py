"""The HTML report in headless Chromium: it opens with no console error and no network
request, and its screenshot shows the tables and the three charts.

Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe: fd 3
in, fd 4 out, NUL-separated JSON), so no websocket client is needed. Screenshots are
decoded by a small PNG reader below.
"""

import base64
import json
import os
import random
import select
import shutil
import struct
import subprocess
import tempfile
import time
import zlib

import pytest
from synthetic import sample, write_store

from benchkit.report import build_report, load_store
from benchkit.report.charts import CHEAP, COMPONENT_COLOURS
from benchkit.report.matrix import ArmEntry, Matrix, TaskEntry
from benchkit.report.render import render
from benchkit.sample import SCORED_TIERS

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (scripts/test-setup installs it)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe"]


class Browser:
    """One headless Chromium, spoken to over its DevTools pipe."""

    def __init__(self, profile: str):
        command_read, self._commands = os.pipe()
        self._replies, reply_write = os.pipe()

        def wire():  # in the child: the browser reads fd 3 and writes fd 4
            read, write = os.dup(command_read), os.dup(reply_write)
            os.dup2(read, 3)
            os.dup2(write, 4)

        self.process = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            preexec_fn=wire, close_fds=False, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(command_read)
        os.close(reply_write)
        self.events, self._buffer, self._id = [], b"", 0

    def _message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._replies], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._replies, 1 << 16)
            if not chunk:
                raise EOFError("chromium closed its DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, params=None, session=None, timeout=30.0) -> dict:
        self._id += 1
        message = {"id": self._id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._message(deadline)
            if reply.get("id") != self._id:
                self.events.append(reply)
                continue
            if "error" in reply:
                raise RuntimeError(f"{method}: {reply['error']}")
            return reply.get("result", {})

    def wait_for(self, method: str, timeout=30.0) -> dict:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self.events):
            self.events.append(self._message(deadline))
        return next(e for e in self.events if e.get("method") == method)

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except (OSError, TimeoutError, EOFError, RuntimeError):
            pass
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._commands)
        os.close(self._replies)


def read_png(data: bytes):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB or RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, compressed = 8, b""
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        body = data[position + 8:position + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0
        elif kind == b"IDAT":
            compressed += body
        position += 12 + length
    channels = 4 if colour == 6 else 3
    stride, raw = width * channels, zlib.decompress(compressed)
    previous, rows = bytearray(stride), []
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        unfilter(kind, line, previous, channels)
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, channels)])
        previous = line
    return width, height, rows


def unfilter(kind: int, line: bytearray, previous: bytearray, step: int):
    if kind == 0:
        return
    for i in range(len(line)):
        left = line[i - step] if i >= step else 0
        up, corner = previous[i], previous[i - step] if i >= step else 0
        if kind == 1:
            line[i] = (line[i] + left) & 0xFF
        elif kind == 2:
            line[i] = (line[i] + up) & 0xFF
        elif kind == 3:
            line[i] = (line[i] + (left + up) // 2) & 0xFF
        else:  # Paeth
            estimate = left + up - corner
            a, b, c = abs(estimate - left), abs(estimate - up), abs(estimate - corner)
            line[i] = (line[i] + (left if a <= b and a <= c else up if b <= c else corner)) & 0xFF


def rgb(colour: str) -> tuple:
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


def near(pixel, colour, tolerance=6) -> bool:
    return all(abs(p - c) <= tolerance for p, c in zip(pixel, colour, strict=False))


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """A rich synthetic report: partial, with a common-task table, every tier, cache
    writes of both lifetimes, bonus, replay, exclusions and an older version."""
    tmp = tmp_path_factory.mktemp("html")
    rng = random.Random(11)
    arms = ["gitea-axi", "tea", "gitea-mcp", "raw-api"]
    tasks = [TaskEntry(f"{tier}-{i}", tier) for tier in SCORED_TIERS for i in range(3)]
    tasks.append(TaskEntry("bonus-diff", "bonus", scored=False,
                           applicability={"gitea-axi": "first-class", "tea": "not-applicable"}))
    matrix = Matrix(tuple(ArmEntry(a) for a in arms), tuple(tasks), model="claude-sonnet-4-5")
    samples = []
    for index, arm in enumerate(arms):
        for task in tasks:
            if arm == "tea" and task.id == "multi-step-2":
                continue
            for _ in range(rng.choice([2, 3, 4])):
                samples.append(sample(arm, task.id, task.tier, tokens={
                    "input": rng.randint(800, 3000), "cache_write": 9000,
                    "cache_write_5m": 6000, "cache_write_1h": 3000,
                    "cache_read": rng.randint(30000, 60000), "output": 300 + 150 * index},
                    outcome="passed" if rng.random() < 0.9 else "failed"))
    samples += [sample("tea", "read-0", driver="replay"), sample("tea", "read-1", outcome="invalid"),
                sample("raw-api", "read-0", outcome="harness-error"),
                sample("nolonger", "read-0")]
    report = build_report(load_store(write_store(tmp / "results", samples)), matrix)
    path = tmp / "report.html"
    path.write_text(render(report, "html"))
    return path


@pytest.fixture(scope="module")
def browsed(page, tmp_path_factory):
    """Open the page; return its events, element boxes, full screenshot and clips."""
    profile = tempfile.mkdtemp(prefix="chromium-")
    browser = Browser(profile)
    try:
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            browser.call(f"{domain}.enable", session=session)
        browser.call("Emulation.setDeviceMetricsOverride", {
            "width": 1200, "height": 1800, "deviceScaleFactor": 1, "mobile": False}, session=session)
        browser.call("Page.navigate", {"url": page.as_uri()}, session=session)
        browser.wait_for("Page.loadEventFired")
        boxes = json.loads(browser.call("Runtime.evaluate", {"returnByValue": True, "expression": """
            JSON.stringify([...document.querySelectorAll('table, svg.chart')].map(e => {
              const r = e.getBoundingClientRect();
              return {kind: e.tagName.toLowerCase(), chart: e.getAttribute('class'),
                      x: r.x + scrollX, y: r.y + scrollY, width: r.width, height: r.height};
            }))"""}, session=session)["result"]["value"])
        full = base64.b64decode(browser.call("Page.captureScreenshot", {"format": "png"},
                                             session=session)["data"])
        clips = {}
        for index, box in enumerate(boxes):
            if box["kind"] == "svg" or index == 0:  # every chart, and the headline table
                clip = {k: box[k] for k in ("x", "y", "width", "height")}
                clips[box["chart"] or "headline"] = base64.b64decode(browser.call(
                    "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                               "clip": {**clip, "scale": 1}},
                    session=session)["data"])
        time.sleep(0.2)  # let late console or network events arrive before closing
        browser.call("Runtime.evaluate", {"expression": "1"}, session=session)
        events = list(browser.events)
    finally:
        browser.close()
        shutil.rmtree(profile, ignore_errors=True)
    shots = tmp_path_factory.mktemp("shots")
    (shots / "report.png").write_bytes(full)
    return {"events": events, "boxes": boxes, "full": full, "clips": clips, "dir": shots}


def test_page_opens_without_console_errors(browsed):
    events = browsed["events"]
    assert any(e.get("method") == "Page.loadEventFired" for e in events)
    assert [e for e in events if e.get("method") == "Runtime.exceptionThrown"] == []
    assert [e["params"] for e in events if e.get("method") == "Runtime.consoleAPICalled"] == []
    logged = [e["params"]["entry"] for e in events if e.get("method") == "Log.entryAdded"]
    assert [entry for entry in logged if entry["level"] in ("error", "warning")] == []


def test_page_fetches_nothing_from_the_network(browsed, page):
    requested = [e["params"]["request"]["url"] for e in browsed["events"]
                 if e.get("method") == "Network.requestWillBeSent"]
    assert requested == [page.as_uri()]  # the page itself, nothing else
    assert [e for e in browsed["events"] if e.get("method") == "Network.loadingFailed"] == []


def test_page_lays_out_its_tables_and_three_charts(browsed):
    boxes = browsed["boxes"]
    charts = [b["chart"] for b in boxes if b["kind"] == "svg"]
    # one cost chart: the ranking's, on the common tasks (all-task means are not charted)
    assert charts == ["chart cost", "chart tiers", "chart components",
                      "chart cost replay", "chart tiers replay", "chart components replay"]
    tables = [b for b in boxes if b["kind"] == "table"]
    assert len(tables) >= 8
    for box in boxes:
        assert box["width"] > 200 and box["height"] > 50, box


def colours(png: bytes):
    width, height, rows = read_png(png)
    pixels = [p for line in rows for p in line]
    return width, height, pixels


def test_screenshot_shows_the_table_and_the_charts(browsed):
    assert struct.unpack(">II", browsed["full"][16:24]) == (1200, 1800)  # IHDR: the viewport
    _, _, table = colours(browsed["clips"]["headline"])
    inked = sum(1 for p in table if p != (255, 255, 255)) / len(table)
    assert len(set(table)) > 30 and inked > 0.2  # text, rules and the header's shading

    _, _, cost = colours(browsed["clips"]["chart cost"])
    bar = sum(1 for p in cost if near(p, rgb("#4e79a7"))) / len(cost)
    assert bar > 0.15  # four bars of cost
    assert any(near(p, (31, 35, 40), 30) for p in cost)  # whiskers and labels in ink

    _, _, stacks = colours(browsed["clips"]["chart components"])
    for name, colour in COMPONENT_COLOURS.items():
        assert sum(1 for p in stacks if near(p, rgb(colour))) > 100, name

    _, _, heat = colours(browsed["clips"]["chart tiers"])
    assert sum(1 for p in heat if near(p, CHEAP, 4)) > 1000  # each tier's cheapest arm
    assert len({p for p in heat if p != (255, 255, 255)}) > 20  # a spread of shades

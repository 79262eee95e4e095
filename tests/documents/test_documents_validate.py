"""`benchkit validate` and `benchkit list` on the shipped tree and on broken copies of it."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import BENCHKIT, CHECKOUT, real_tool
from shipped import REFERENCE_IDS

from benchkit.cli import main
from benchkit.documents import load_arm
from benchkit.installed import version_line

ARMS_DOC = (CHECKOUT / "docs" / "arms.md").read_text(encoding="utf-8")  # the install table


def benchkit(*args):
    return CliRunner().invoke(main, list(args))


def line_of(path: Path, text: str) -> int:
    """1-based line of the first line of `path` containing `text`."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in {path}")


def edit(path: Path, old: str, new: str):
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


# An arm a tool's author adds (its tool unknown to benchkit, a long install line, its
# references without a schema line) and a second seed: nothing of the tests below may
# assume the shipped tree is all there is.
GROWN_ARM = """id: zz-lite
description: A tiny Gitea CLI a tool's author added.
tool:
  kind: shell
  binary: zz-lite
  install: "download zz-lite from https://example.org/a/long/path/to/the/release/page/of/zz-lite and put it on your PATH, then check it with zz-lite --version"
  probe:
    run: zz-lite issues
user_agents: [Python-urllib/]
bootstrap: Your one tool is the zz-lite CLI.
"""
GROWN_REFERENCE = """arm: zz-lite
verified: false
tasks:
  read-open-issue-count:
    steps:
      - run: zz-lite issues
    answer: There are 5 open issues.
"""


@pytest.fixture(params=["shipped", "grown"])
def any_tree(request, work_tree):
    """The tree copy as shipped, and grown by an arm and a seed."""
    if request.param == "grown":
        (work_tree / "arms.d" / "zz-lite.yaml").write_text(GROWN_ARM)
        (work_tree / "refs.d" / "zz-lite.yaml").write_text(GROWN_REFERENCE)
        (work_tree / "seeds" / "extra.yaml").write_text(
            (work_tree / "seeds" / "default.yaml").read_text())
    return work_tree


def arm_ids(tree: Path) -> list[str]:
    """The tree's arm ids in `benchkit list arms`' order: by file name."""
    return [path.stem for path in sorted((tree / "arms.d").glob("*.yaml"))]


def test_shipped_tree_is_valid(any_tree):
    result = benchkit("validate")
    assert result.exit_code == 0, result.output
    documents = 1 + sum(len(list((any_tree / d).glob("*.yaml")))
                        for d in ("seeds", "tasks.d", "arms.d", "refs.d"))
    # The tree's other *.d/ documents that name a shipped schema count too.
    documents += sum(1 for d in any_tree.glob("*.d") if d.name not in ("tasks.d", "arms.d", "refs.d")
                     for f in d.glob("*.yaml") if f.read_text().startswith("# yaml-language-server:"))
    assert result.stdout == f"valid: {documents} documents\n"


def test_validate_stays_light():
    """validate runs without importing the forge, the SDK, the agent, the report or the
    run stage (beyond the command's own module, which needs the rest only for --live).
    msgspec may load: the documents package reads the tiers from the sample record (11 ms)."""
    code = (
        "import sys\n"
        "from benchkit.cli import main\n"
        "try:\n"
        "    main(['validate'])\n"
        "except SystemExit as exit:\n"
        "    heavy = sorted(m for m in sys.modules if m.split('.')[0] in\n"
        "        ('claude_agent_sdk', 'starlette', 'uvicorn')\n"
        "        or m.startswith(('benchkit.forge', 'benchkit.report', 'benchkit.agent', 'benchkit.run.'))\n"
        "        and m != 'benchkit.proving.validate')\n"
        "    print(exit.code, heavy)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=CHECKOUT, capture_output=True, text=True)
    assert done.stdout.splitlines()[-1] == "0 []", done.stdout + done.stderr


# (file, old text, new text, the text on the expected line, expected message)
BREAKAGES = {
    "wrong type": ("suite.yaml", "trials: 5 ", "trials: five ", "trials:",
                   "expected integer, got string (at trials)"),
    "unknown key": ("seeds/default.yaml", "milestone: v1.0\n    comments: [\"I can",
                    "milestone: v1.0\n    author: bench\n    comments: [\"I can", "author: bench",
                    "unknown key 'author' (at issues[0].author)"),
    "missing intent": ("tasks.d/read-review-body.yaml", "intent: Retrieve", "# intent: Retrieve",
                       "id: read-review-body", "'intent' is required"),
    "YAML syntax error": ("arms.d/tea.yaml", "  binary: tea\n", "  binary: tea: x\n", "binary: tea",
                          "YAML syntax error: mapping values are not allowed"),
    "selector matching nothing": ("tasks.d/close-csv-export-issue.yaml",
                                  "issue: {title: Add CSV export option}",
                                  "issue: {title: Add TSV export option}", "issue: {title:",
                                  "matches no issue"),
    "no-op mutation": ("tasks.d/reopen-readme-badges.yaml", "title: Update README badges}",
                       "title: Add CSV export option}", "- issue:", "changes nothing"),
    "undefined label": ("seeds/default.yaml", "labels: [bug, priority]", "labels: [bug, priorty]",
                        "labels: [bug, priorty]",
                        "label 'priorty' is not defined under 'labels' (at issues[2].labels[1])"),
    "head branch reused": ("seeds/default.yaml", "head: feature/docs-refresh",
                           "head: feature/fix-crash", "head: feature/fix-crash\n    file: {path: docs",
                           "head branch 'feature/fix-crash' is used by an earlier pull request"),
    "bad colour": ("seeds/default.yaml", "color: 0075ca", "color: blue", "color: blue",
                   "expected a colour of six hex digits"),
    "shell arm without binary": ("arms.d/raw-api.yaml", "  binary: curl\n", "", "  kind: shell",
                                 "'binary' is required (at tool)"),
    "mcp arm with a binary": ("arms.d/gitea-mcp.yaml", "  kind: mcp\n", "  kind: mcp\n  binary: x\n",
                              "binary: x", "'binary' is for a shell tool, not an mcp tool"),
    "forbidden subcommand not a list": ("arms.d/tea.yaml", "- [api]", "- api", "- api",
                                        "expected array, got string (at tool.forbidden_subcommands[0])"),
    "template typo": ("arms.d/raw-api.yaml", "{{ api_url }}.", "{{ api_ulr }}.", "bootstrap:",
                      "unknown template variable 'api_ulr' (at bootstrap)"),
    "template syntax": ("suite.yaml", "{{ repo }}", "{{ repo }", "base_prompt:",
                        "template syntax error"),
    "floor above trials": ("suite.yaml", "floor: 3 ", "floor: 9 ", "floor:",
                           "floor 9 is above trials 5"),
    "duplicate key": ("suite.yaml", "floor: 3 ", "floor: 3\nmodel: other\n", "model: other",
                      "duplicate key 'model'"),
}


@pytest.mark.parametrize("name", BREAKAGES)
def test_broken_copy_fails_with_file_and_line(work_tree, name):
    file, old, new, marker, message = BREAKAGES[name]
    edit(work_tree / file, old, new)
    if "\n" in marker:  # a marker spanning lines: the line of its first part
        text = (work_tree / file).read_text()
        line = text[:text.index(marker)].count("\n") + 1
    else:
        line = line_of(work_tree / file, marker)
    result = benchkit("validate")
    assert result.exit_code == 2
    assert result.stdout == ""
    expected = f"{file}:{line}: "
    assert any(got.startswith(expected) and message in got for got in result.stderr.splitlines()), \
        f"want {expected}...{message}\ngot:\n{result.stderr}"


def test_every_problem_at_once_sorted(work_tree):
    for name in ("wrong type", "missing intent", "YAML syntax error", "undefined label",
                 "template typo"):
        file, old, new, *_ = BREAKAGES[name]
        edit(work_tree / file, old, new)
    result = benchkit("validate")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    files = [line.split(":")[0] for line in lines]
    assert set(files) == {"suite.yaml", "tasks.d/read-review-body.yaml", "arms.d/tea.yaml",
                          "seeds/default.yaml", "arms.d/raw-api.yaml"}
    assert files == sorted(files)  # grouped by file, then by line
    for file in set(files):
        numbers = [int(line.split(":")[1]) for line in lines if line.startswith(file + ":")]
        assert numbers == sorted(numbers)


def test_duplicate_arm_id(work_tree):
    text = (work_tree / "arms.d" / "tea.yaml").read_text()
    (work_tree / "arms.d" / "tea-copy.yaml").write_text(text)
    result = benchkit("validate")
    assert result.exit_code == 2
    assert result.stderr == (f"arms.d/tea.yaml:{line_of(work_tree / 'arms.d/tea.yaml', 'id: tea')}: "
                             "arm id 'tea' is already used by tea-copy.yaml (at id)\n")


def test_other_documents_of_the_tree_are_checked_by_their_schema(work_tree):
    (work_tree / "refs.d").mkdir(exist_ok=True)
    (work_tree / "refs.d" / "zz.yaml").write_text(
        "# yaml-language-server: $schema=../benchkit/schemas/arm.schema.json\nid: zz\n")
    (work_tree / "refs.d" / "notes.yaml").write_text("not: a benchkit document\n")  # no schema line: skipped
    result = benchkit("validate")
    assert result.exit_code == 2
    assert "refs.d/zz.yaml:2: 'description' is required\n" in result.stderr
    assert "notes.yaml" not in result.stderr


def test_validate_given_paths(any_tree):
    work_tree = any_tree
    seeds = len(list((work_tree / "seeds").glob("*.yaml")))
    assert benchkit("validate", "arms.d/tea.yaml", "seeds").stdout == \
        f"valid: {1 + seeds} documents\n"
    assert benchkit("validate", "tasks.d/read-review-body.yaml").exit_code == 0
    assert benchkit("validate", str(work_tree)).exit_code == 0
    # Only the chosen files are checked: a broken arm elsewhere does not matter.
    edit(work_tree / "arms.d" / "raw-api.yaml", "  binary: curl\n", "")
    assert benchkit("validate", "arms.d/tea.yaml").exit_code == 0
    assert benchkit("validate", "arms.d/raw-api.yaml").exit_code == 2

    missing = benchkit("validate", "nowhere.yaml")
    assert (missing.exit_code, missing.stderr) == (2, "nowhere.yaml: no such file or directory\n")
    (work_tree / "notes.yaml").write_text("a: 1\n")
    stray = benchkit("validate", "notes.yaml")
    assert stray.exit_code == 2 and stray.stderr.startswith("notes.yaml: not a benchkit document")


def test_a_file_outside_the_tree_is_known_by_its_schema_line(work_tree):
    """tests/arms/*.yaml lives outside arms.d/: its modeline says it is an arm."""
    (work_tree / "extra").mkdir()
    arm = work_tree / "extra" / "local.yaml"
    arm.write_text("# yaml-language-server: $schema=../../benchkit/schemas/arm.schema.json\n"
                   "id: local\ndescription: d\ntool: {kind: shell, probe: {run: ls}}\nbootstrap: hi\n")
    result = benchkit("validate", "extra")
    assert (result.exit_code, result.stderr) == (2, "extra/local.yaml:4: 'binary' is required (at tool)\n")


def test_benchkit_root_points_at_another_tree(tree_copy, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BENCHKIT_ROOT", str(tree_copy))
    edit(tree_copy / "suite.yaml", "trials: 5 ", "trials: 0 ")
    result = benchkit("validate")
    assert result.exit_code == 2
    assert result.stderr == f"tree/suite.yaml:{line_of(tree_copy / 'suite.yaml', 'trials:')}: " \
                            "expected at least 1, got 0 (at trials)\n"
    monkeypatch.setenv("BENCHKIT_ROOT", str(tmp_path / "nothing"))
    result = benchkit("validate")
    assert result.exit_code == 2 and "suite.yaml: not found (BENCHKIT_ROOT points here)" in result.stderr


def test_exit_code_and_stderr_from_the_real_command(work_tree):
    edit(work_tree / "suite.yaml", "trials: 5 ", "trials: five ")
    done = subprocess.run([*BENCHKIT, "validate"],
                          cwd=work_tree, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr == f"suite.yaml:{line_of(work_tree / 'suite.yaml', 'trials:')}: " \
                          "expected integer, got string (at trials)\n"


def test_list_arms(any_tree):
    rows = json.loads(benchkit("list", "arms", "--json").stdout)
    assert [row["id"] for row in rows] == arm_ids(any_tree)
    assert {"gitea-axi", "gitea-mcp-search", "gitea-mcp", "raw-api", "tea"} <= set(arm_ids(any_tree))
    assert {row["path"] for row in rows} == {f"arms.d/{row['id']}.yaml" for row in rows}
    assert {row["id"]: row["kind"] for row in rows}["gitea-mcp"] == "mcp"
    table = benchkit("list", "arms").stdout.splitlines()
    assert table[0].split() == ["id", "kind", "tool", "installed"]
    assert [line.split()[0] for line in table[1:]] == [row["id"] for row in rows]


def test_list_arms_says_whether_each_tool_is_installed_or_how_to_install_it(any_tree,
                                                                            monkeypatch):
    work_tree = any_tree
    tea = real_tool("tea")
    version = subprocess.run([tea, "--version"], capture_output=True, text=True).stdout
    rows = {row["id"]: row for row in json.loads(benchkit("list", "arms", "--json").stdout)}
    assert rows["tea"]["tool_path"] == tea
    assert rows["tea"]["installed"] == f"installed: {version_line(version)}"
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # curl, but none of the tests' builds
    (work_tree / "no-builds").mkdir()
    monkeypatch.setenv("BENCHKIT_TOOLS_DIR", str(work_tree / "no-builds"))  # nor the checkout's
    rows = {row["id"]: row for row in json.loads(benchkit("list", "arms", "--json").stdout)}
    install = load_arm(work_tree / "arms.d" / "tea.yaml").tool.install
    assert "0.11.1-13-g68b9620" in install and "@latest" not in install
    assert rows["tea"]["installed"] == f"not installed: {install}"
    assert rows["tea"]["tool_version"] is None and rows["tea"]["tool_path"] is None
    assert rows["raw-api"]["installed"].startswith("installed: curl ")
    table = {line.split()[0]: line for line in benchkit("list", "arms").stdout.splitlines()}
    assert table["tea"].split(maxsplit=3) == ["tea", "shell", "tea", f"not installed: {install}"]
    assert len(table["raw-api"]) < 120  # curl's long version line is cut, at a word
    monkeypatch.delenv("BENCHKIT_TOOLS_DIR")  # the checkout's builds, found off PATH
    rows = {row["id"]: row for row in json.loads(benchkit("list", "arms", "--json").stdout)}
    assert rows["tea"]["tool_path"] == tea


def test_the_docs_give_each_arms_install_line_as_the_code_does(any_tree):
    """Every arm the docs' table names installs as its arm file says; every arm whose
    references are proven (`verified: true`) is in it (an arm an author adds need not be)."""
    table = ARMS_DOC.split("## Installing the arms' tools", 1)[1].split("\n\n")[2]
    cells = {row.split("|")[1].strip(" `"): row.split("|")[2].strip()
             for row in table.splitlines()[2:]}
    arms = {path.stem: load_arm(path) for path in (any_tree / "arms.d").glob("*.yaml")}
    verified = {path.stem for path in (any_tree / "refs.d").glob("*.yaml")
                if "\nverified: true" in path.read_text()}
    assert set(cells) <= set(arms) and verified & set(arms) <= set(cells)
    for arm_id in cells:
        install = arms[arm_id].tool.install
        assert install and "@latest" not in install, arm_id
        assert cells[arm_id] == install, arm_id


def test_bare_list_names_each_kind_with_its_files(work_tree):
    rows = json.loads(benchkit("list", "--json").stdout)
    assert [(row["kind"], row["files"]) for row in rows] == [
        ("tasks", len(list((work_tree / "tasks.d").glob("*.yaml")))),
        ("arms", len(list((work_tree / "arms.d").glob("*.yaml"))))]
    done = benchkit("list")
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    assert lines[1].startswith("benchkit list tasks") and f"{rows[0]['files']} in tasks.d/" in lines[1]
    assert lines[2].startswith("benchkit list arms") and "installed" in lines[2]


def test_list_tasks(work_tree):
    rows = json.loads(benchkit("list", "tasks", "--json").stdout)
    files = sorted(p.stem for p in (work_tree / "tasks.d").glob("*.yaml"))
    assert sorted(row["id"] for row in rows) == files
    for row in rows:
        assert row["path"] == f"tasks.d/{row['id']}.yaml"
        assert row["tier"] in ("read", "single-mutation", "find-then-act", "multi-step", "bonus")
        assert isinstance(row["scored"], bool)
    scored = [row for row in rows if row["scored"]]
    assert REFERENCE_IDS <= {row["id"] for row in scored}
    assert rows[:len(scored)] == scored  # scored tasks first, read tier leading
    assert rows[0]["tier"] == "read"
    table = benchkit("list", "tasks").stdout.splitlines()
    assert table[0].split() == ["id", "tier", "kind", "scored"]
    assert len(table) == len(rows) + 1


def test_list_reports_problems_like_validate(any_tree):
    work_tree = any_tree
    edit(work_tree / "arms.d" / "tea.yaml", "  binary: tea\n", "  binary: [tea\n")
    result = benchkit("list", "arms", "--json")  # named, and the other arms listed
    assert result.exit_code == 0 and result.stderr.startswith("arms.d/tea.yaml:")
    assert [row["id"] for row in json.loads(result.stdout)] == [
        arm for arm in arm_ids(work_tree) if arm != "tea"]  # by file name
    assert benchkit("validate").exit_code == 2


NEW_TASK = """\
# yaml-language-server: $schema=../benchkit/schemas/task.schema.json
id: close-export-perf-issue
tier: single-mutation
intent: Close the issue titled "Improve export performance".
edits:
  - issue: {title: Improve export performance}
    set: {state: closed}
"""


def test_adding_a_task_is_writing_one_file(work_tree):
    """Write one YAML file: the task is listed, validated, and checked."""
    path = work_tree / "tasks.d" / "close-export-perf-issue.yaml"
    path.write_text(NEW_TASK)
    rows = json.loads(benchkit("list", "tasks", "--json").stdout)
    (row,) = [row for row in rows if row["id"] == "close-export-perf-issue"]
    assert (row["path"], row["tier"], row["scored"]) == (
        "tasks.d/close-export-perf-issue.yaml", "single-mutation", True)
    assert benchkit("validate", "tasks.d/close-export-perf-issue.yaml").exit_code == 0
    assert benchkit("validate").exit_code == 0

    expected = benchkit("expect", str(path), "--user", "bench")
    assert expected.exit_code == 0, expected.output
    state = json.loads(expected.stdout)
    issue = next(i for i in state["issues"] if i["title"] == "Improve export performance")
    assert issue["state"] == "closed"
    (work_tree / "after.json").write_text(expected.stdout)
    checked = benchkit("check", str(path), "--state", "after.json", "--user", "bench")
    assert checked.exit_code == 0 and json.loads(checked.stdout)["passed"] is True

    issue["state"] = "open"  # the agent did nothing
    (work_tree / "before.json").write_text(json.dumps(state))
    checked = benchkit("check", str(path), "--state", "before.json", "--user", "bench")
    assert checked.exit_code == 1 and json.loads(checked.stdout)["passed"] is False

    # The same task made a no-op is caught at validation, with its line.
    path.write_text(NEW_TASK.replace("Improve export performance}", "Add CSV export option}")
                    .replace("state: closed", "state: open"))
    result = benchkit("validate")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"tasks.d/close-export-perf-issue.yaml:{line_of(path, '- issue:')}:")


def without_modeline(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True)
                   if not line.startswith("# yaml-language-server:"))


@pytest.mark.parametrize("source", ["tasks.d/read-open-issue-count.yaml", "arms.d/tea.yaml",
                                    "seeds/default.yaml"])
def test_a_document_anywhere_is_known_by_its_content(work_tree, source):
    """A task (arm, seed) drafted outside its directory, with no schema line, is still
    validated as one: by what it holds."""
    draft = work_tree / "drafts" / Path(source).name  # an id is its file's name
    draft.parent.mkdir()
    draft.write_text(without_modeline((work_tree / source).read_text()))
    done = subprocess.run([*BENCHKIT, "validate", str(draft)], cwd=work_tree,
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "valid: 1 document\n"), done.stderr


def test_a_broken_document_anywhere_gets_its_schemas_message(work_tree):
    draft = work_tree / "drafts" / "mine.yaml"
    draft.parent.mkdir()
    draft.write_text("id: mine\ntier: single-mutation\nintent: Close it.\n"
                     "edits:\n  - issue: {number: 2}\n    set: {state: shut}\n")
    done = subprocess.run([*BENCHKIT, "validate", "drafts/mine.yaml"], cwd=work_tree,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("drafts/mine.yaml:6: ") and "not a benchkit document" not in done.stderr


@pytest.mark.parametrize("new_id", ["t" * 250, "read/open-issue-count"], ids=["long", "slash"])
def test_an_id_that_cannot_name_a_file_is_refused_before_anything_runs(work_tree, new_id):
    """A 250-character task id (its file may exist: `<id>.yaml` is 255 bytes, but the
    store's `<id>.jsonl` could not), or one with a `/`: validate refuses it on its
    line, and a run stops at pre-flight (exit 2) with nothing stored."""
    source = work_tree / "tasks.d" / "read-open-issue-count.yaml"
    target = work_tree / "tasks.d" / f"{new_id.replace('/', '-')}.yaml"
    source.rename(target)
    edit(target, "id: read-open-issue-count", f"id: {new_id}")
    line = line_of(target, "id: ")
    result = benchkit("validate")
    assert result.exit_code == 2, result.output
    message = ("expected at most 100 characters, got 250" if len(new_id) == 250
               else "expected an id of lower-case letters, digits and '-'")
    assert any(got.startswith(f"tasks.d/{target.name}:{line}: ") and message in got
               for got in result.stderr.splitlines()), result.stderr
    run = benchkit("run", "arms.d/raw-api.yaml", "--driver", "replay", "--no-report",
                   "--store", "results")
    assert run.exit_code == 2 and message in run.stderr, run.output
    assert not (work_tree / "results").exists()


def test_a_typoed_arm_in_a_bonus_tasks_applicability_is_named(work_tree):
    """`applicability` naming no arm of arms.d/ would leave that arm's real one at its
    default, unsaid: validate names the key's line and the arm meant."""
    path = work_tree / "tasks.d" / "bonus-pull-diff.yaml"
    text = path.read_text()
    assert "\n  tea:" in text
    path.write_text(text.replace("\n  tea:", "\n  taa:", 1))
    result = benchkit("validate")
    assert result.exit_code == 2
    assert (f"tasks.d/bonus-pull-diff.yaml:{line_of(path, 'taa:')}: no arm 'taa' in arms.d/ "
            "(did you mean 'tea'?)") in result.stderr

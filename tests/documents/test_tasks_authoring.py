"""Adding a task is writing one YAML file: the documented example, dropped into a
temporary tree, is listed, validated and checked; broken copies fail validation with
exit 2 and one `FILE:LINE:` line per problem."""

import json
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import CHECKOUT

from benchkit.cli import main

GUIDE = (CHECKOUT / "docs" / "adding-a-task.md").read_text()
EXAMPLE = re.search(r"```yaml\n(.*?)```", GUIDE, re.S).group(1)
EXAMPLE_ID = re.search(r"^id: (\S+)", EXAMPLE, re.M).group(1)
EXAMPLE_DIFFERENCES = re.search(r"which kind it is.*?```\n(.*?)```", GUIDE, re.S).group(1).splitlines()
COMMANDS = re.search(r"Save it as .*?```sh\n(.*?)```", GUIDE, re.S).group(1)
REFERENCE = re.search(r"`refs.d/raw-api.yaml`:\n\n```yaml\n(.*?)```", GUIDE, re.S).group(1)
PROOF = re.search(r"Then prove it.*?```sh\n(.*?)```", GUIDE, re.S).group(1)


@pytest.fixture
def tree(tree_copy, monkeypatch):
    monkeypatch.setenv("BENCHKIT_ROOT", str(tree_copy))
    monkeypatch.chdir(tree_copy)
    return tree_copy


def run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def write_task(tree, text, name=None):
    name = name or re.search(r"^id: (\S+)", text, re.M).group(1)
    path = tree / "tasks.d" / f"{name}.yaml"
    path.write_text(text)
    return path


def follow(tree, block: str) -> list[tuple[int, str, str]]:
    """Each `benchkit ...` line of a guide's shell block, run in `tree` as written (a
    `> FILE` writes its output there): (exit code, output, errors) per line."""
    done = []
    for line in block.strip().splitlines():
        words = shlex.split(line, comments=True)
        assert words[0] == "benchkit", line
        into = words[words.index(">") + 1] if ">" in words else None
        words = words[:words.index(">")] if into else words
        code, out, err = run(*words[1:])
        if into:
            (tree / into).write_text(out)
        done.append((code, out, err))
    return done


def test_the_documented_example_is_listed_validated_and_checked(tree):
    write_task(tree, EXAMPLE)
    code, out, _ = run("list", "tasks", "--json")
    assert code == 0
    listed = {row["id"]: row for row in json.loads(out)}
    assert listed[EXAMPLE_ID]["tier"] == "multi-step" and listed[EXAMPLE_ID]["scored"] is True
    assert run("validate")[0] == 0

    done = follow(tree, COMMANDS)
    assert [code for code, *_ in done] == [0, 0, 0, 0, 0, 1]
    assert json.loads(done[3][1]) == {"passed": True, "differences": []}
    assert json.loads(done[-1][1])["differences"] == EXAMPLE_DIFFERENCES


def test_the_documented_commands_check_a_task_on_its_own_seed(tree):
    """A task on another seed: the guide's untouched state is that seed's, so the check
    names the intended changes alone, no collateral difference from the default seed."""
    seed = (tree / "seeds" / "default.yaml").read_text()
    extra = "  - title: Only in the other seed\n    body: Seeded here alone.\n    state: open\n"
    (tree / "seeds" / "other.yaml").write_text(seed.replace("\npull_requests:", extra + "\npull_requests:"))
    write_task(tree, EXAMPLE.replace("tier: multi-step", "seed: other\ntier: multi-step"))
    done = follow(tree, COMMANDS)
    assert [code for code, *_ in done] == [0, 0, 0, 0, 0, 1]
    assert json.loads(done[-1][1])["differences"] == EXAMPLE_DIFFERENCES
    by_name = run("expect", "--seed", "other")[1]  # a seed's name, as `seed:` gives it
    assert json.loads(by_name) == json.loads((tree / "untouched.json").read_text())
    assert json.loads(by_name) == json.loads(run("expect", "--seed", "seeds/other.yaml")[1])
    assert json.loads(by_name) != json.loads(run("expect")[1])
    code, _, err = run("expect", "--seed", "nosuch")
    assert code == 2 and "'nosuch' is neither a seed of the tree" in err


@pytest.mark.slow
def test_the_documented_reference_proves_and_replays_the_example(tree, monkeypatch):
    for name in ("GITEA_URL", "GITEA_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tree / "no-config"))  # no tea login either
    monkeypatch.setenv("HOME", str(tree))
    path = write_task(tree, EXAMPLE)
    assert "not provable on arm raw-api" in run("validate", path)[2]
    refs = tree / "refs.d" / "raw-api.yaml"
    refs.write_text(refs.read_text().rstrip("\n") + "\n\n" + REFERENCE)
    done = follow(tree, PROOF)
    assert [code for code, *_ in done] == [0, 0, 0], done
    assert "not provable on arm raw-api" not in run("validate", path)[2]
    assert "1 passed" in done[2][1] + done[2][2], done[2]  # the replay run's one trial


def problem_lines(stderr):
    """[(file, line, message)] of `FILE:LINE: message` lines; every line must be one."""
    lines = stderr.strip().splitlines()
    parsed = [re.fullmatch(r"(.+?):(\d+): (.*)", line) for line in lines]
    assert lines and all(parsed), stderr
    return [(m.group(1), int(m.group(2)), m.group(3)) for m in parsed]


def validate_broken(tree, text, name="broken-task"):
    path = write_task(tree, text, name)
    code, _, err = run("validate", path)
    assert code == 2
    problems = problem_lines(err)
    assert all(Path(file).name == path.name for file, _, _ in problems)
    return [(line, message) for _, line, message in problems]


def test_a_broken_copy_reports_every_problem_at_its_line(tree):
    broken = EXAMPLE.replace("id: ms-wontfix-export-perf", "id: broken-task")
    broken = re.sub(r"^intent: .*\n", "", broken, flags=re.M)
    broken = broken.replace('title_matches: "(?i)performance"', 'title_matches: "(?i)speed"')
    broken += "  - issue: {title: Update README badges}\n    set: {state: closed}\n"
    problems = validate_broken(tree, broken)
    lines = broken.splitlines()
    selector = next(i for i, line in enumerate(lines, 1) if "speed" in line)
    noop = next(i for i, line in enumerate(lines, 1) if "README badges" in line)
    root = next(i for i, line in enumerate(lines, 1) if not line.startswith("#"))
    assert [line for line, _ in problems] == [root, selector, noop]
    assert problems[0][1] == "'intent' is required"
    assert "matches no issue" in problems[1][1] and "(at edits[1].issue)" in problems[1][1]
    assert "this edit changes nothing" in problems[2][1]


def test_edits_that_cancel_out_could_never_fail(tree):
    problems = validate_broken(tree, """\
id: broken-task
tier: single-mutation
intent: Close and reopen the issue titled "Add CSV export option".
edits:
  - issue: {title: Add CSV export option}
    set: {state: closed}
  - issue: {title: Add CSV export option}
    set: {state: open}
""")
    assert problems == [(4, "the edits leave the ground truth unchanged, so this task could never fail (at edits)")]


@pytest.mark.parametrize("edits,line,message", [
    ("  - issue: {label: bug}\n    set: {state: closed}\n", 5,
     "selector {label: 'bug'} should match one issue but matches 3: #1 'Fix crash on startup', "
     "#3 'Crash when saving large files', #6 'Crash in export dialog' (narrow it, or use `issues:` for all)"),
    ("  - issue: {number: 2}\n    add_labels: [wontfix]\n", 6,
     "label 'wontfix' is not defined at this point (create it with create_label first)"),
    ("  - create_label: {name: bug, color: ffffff}\n", 5, "label 'bug' already exists"),
    ("  - issue: {title_matches: '(unclosed'}\n    set: {state: closed}\n", 5,
     "invalid regex '(unclosed': missing ), unterminated subpattern at position 0"),
    ("  - issue: {number: 2}\n    set: {state: merged}\n", 6, "only a pull request can be merged"),
    ("  - issue: {number: 2}\n    add_review: {body: Fine}\n", 5,
     "add_review does not apply to issues (actions: set, add_labels, remove_labels, "
     "add_assignees, remove_assignees, add_comment, add_dependency)"),
    ("  - issue: {number: 2}\n    pull_request: {number: 9}\n    set: {state: closed}\n", 5,
     "an edit needs exactly one target"),
    ("  - label: {name: bug}\n", 5, "no action given to labels"),
    ("  - pull_requests: {state: closed}\n    set: {state: open}\n", 5,
     "selector {state: 'closed'} matches no pull request"),
    # a string where a list goes: the schema's one error, not its letters read as labels
    ("  - issue: {number: 2}\n    add_labels: bug\n", 6, "expected array, got string"),
])
def test_unsound_edits_are_rejected_at_their_line(tree, edits, line, message):
    problems = validate_broken(tree, "id: broken-task\ntier: single-mutation\nintent: Do it.\nedits:\n" + edits)
    assert len(problems) == 1
    assert problems[0][0] == line and problems[0][1].startswith(message)


@pytest.mark.parametrize("text,line,message", [
    ("id: other-name\ntier: read\nintent: Say.\nfacts: [{any_of: [x]}]\n", 1,
     "id 'other-name' differs from the file name 'broken-task'"),
    ("id: broken-task\ntier: read\nintent: Say.\nfacts: [{any_of: [x], pattern: '(x'}]\n", 4, "invalid regex"),
    ("id: broken-task\ntier: read\nintent: Say.\nedits: [{issue: {number: 1}, set: {state: closed}}]\n", 1,
     "'facts' is required"),
    ("id: broken-task\ntier: read\nseed: nowhere\nintent: Say.\nfacts: [{any_of: [x]}]\n", 3,
     "unknown seed 'nowhere'"),
    ("id: broken-task\ntier: single-mutation\nseed: nowhere\nintent: Do.\nedits: [{issue: {number: 1}, set: {state: closed}}]\n", 3,
     "unknown seed 'nowhere' (known: default)"),
    ("id: broken-task\ntier: bonus\nscored: false\nintent: Do.\n", 1, "'applicability' is required"),
    ("id: broken-task\ntier: read\nscored: false\nintent: Say.\nfacts: [{any_of: [x]}]\n", 3,
     "only tier bonus may be unscored"),
    ("id: broken-task\ntier: read\nintent: Say.\nfacts: [{any_of: [x], regex: y}]\n", 4, "unknown key 'regex'"),
])
def test_malformed_documents_are_rejected_at_their_line(tree, text, line, message):
    problems = validate_broken(tree, text)
    assert (line, message) in [(n, m[:len(message)]) for n, m in problems], problems


def test_a_broken_task_fails_the_whole_tree_and_expect(tree):
    path = write_task(tree, EXAMPLE.replace("(?i)performance", "(?i)nothing-like-this"))
    code, _, err = run("validate")
    assert code == 2 and f"{path.name}:" in err and "matches no issue" in err
    code, out, err = run("expect", path)
    assert code == 2 and out == "" and "matches no issue" in err


def test_the_guide_s_shipped_example_task_is_a_shipped_file_as_it_is():
    guide = (CHECKOUT / "docs" / "adding-a-task.md").read_text()
    section = guide.split("## A shipped task, as it is\n", 1)[1].split("\n## ", 1)[0]
    named = re.search(r"`(tasks\.d/[\w-]+\.yaml)`", section).group(1)
    shown = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    assert (CHECKOUT / named).read_text() == shown
    for command in re.search(r"```sh\n(.*?)```", section, re.S).group(1).splitlines():
        assert named in command


@pytest.mark.parametrize("text,line,message", [
    ("id: draft\ntier: read\nintent: [unclosed\n", 4, "YAML syntax error: did not find expected"),
    ("id: draft\ntier: read\ntier: read\nintent: Count.\nfacts:\n  - any_of: ['5']\n", 3,
     "duplicate key 'tier'"),
])
def test_a_draft_outside_tasks_d_gets_the_error_it_gets_inside(tree, tmp_path, text, line, message):
    for path in (tmp_path / "drafts" / "draft.yaml", tree / "tasks.d" / "draft.yaml"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        code, _, err = run("validate", path)
        assert code == 2
        assert [(found, said[:len(message)]) for _, found, said in problem_lines(err)] \
            == [(line, message)], err
        path.unlink()

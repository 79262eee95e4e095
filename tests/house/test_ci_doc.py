"""docs/ci.md's GitHub Actions workflow parses as a workflow, and names only what exists:
every `benchkit` command and option it runs (as the command line parses them), every
`scripts/setup` option, every file of benchkit's checkout it reads."""

import re
import shlex

import click
import yaml
from conftest import CHECKOUT

from benchkit.cli import COMMANDS, main

DOC = (CHECKOUT / "docs" / "ci.md").read_text(encoding="utf-8")
WORKFLOW = yaml.safe_load(re.search(r"```yaml\n(.*?)```", DOC, re.DOTALL)[1])
INVOKED = re.compile(r"(?:\S*/)?\.venv/bin/benchkit\s+(.*)|bash harness/scripts/setup(.*)")


def steps() -> list[dict]:
    return [step for job in WORKFLOW["jobs"].values() for step in job["steps"]]


def invocations() -> list[tuple[str, list[str]]]:
    """(benchkit | setup, its words) of every command line the workflow runs."""
    found = []
    for step in steps():
        for line in step.get("run", "").splitlines():
            hit = INVOKED.search(line)
            if hit:
                words = shlex.split(hit[1] if hit[1] is not None else hit[2])
                found.append(("benchkit" if hit[1] is not None else "setup", words))
    return found


def test_the_workflow_is_a_workflow():
    on = WORKFLOW.get("on", WORKFLOW.get(True))  # YAML 1.1 reads a bare `on` as true
    assert set(on) == {"release", "pull_request"}
    assert set(WORKFLOW["jobs"]) == {"store", "gate"}
    for job in WORKFLOW["jobs"].values():
        assert job["runs-on"] and job["steps"]
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), step
            if "uses" in step:
                assert re.fullmatch(r"actions/[\w-]+@v\d+", step["uses"]), step


def test_every_benchkit_command_and_option_exists():
    found = invocations()
    assert {words[0] for kind, words in found if kind == "benchkit"} == {"run", "gate"}
    context = click.Context(main)
    for kind, words in found:
        if kind != "benchkit":
            continue
        command = main.get_command(context, words[0])
        assert command is not None and words[0] in COMMANDS, words
        options = {name for param in command.params for name in param.opts}
        given = [w.split("=")[0] for w in words[1:] if w.startswith("-")]
        assert given and set(given) <= options, (words[0], set(given) - options)
        arguments = [w for w in words[1:] if w.startswith("arms.d/")]
        assert arguments == ["arms.d/$ARM.yaml"], words  # the arm copied into benchkit's tree


def test_every_setup_option_exists_and_the_copies_land_in_the_tree():
    setup = (CHECKOUT / "scripts" / "setup").read_text()
    for kind, words in invocations():
        if kind == "setup":
            for option in (w for w in words if w.startswith("-")):
                assert re.search(rf"^\s*{re.escape(option)}\)", setup, re.MULTILINE), option
    copies = [line for step in steps() for line in step.get("run", "").splitlines()
              if line.strip().startswith("cp ")]
    assert {shlex.split(line)[-1] for line in copies} == {"harness/arms.d/", "harness/refs.d/"}
    assert (CHECKOUT / "arms.d").is_dir() and (CHECKOUT / "refs.d").is_dir()
    assert any("--summary ../gate.md" in step.get("run", "") for step in steps())
    assert any("--body-file gate.md" in step.get("run", "") for step in steps())

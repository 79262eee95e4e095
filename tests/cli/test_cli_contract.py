"""The command line's shared contract: -h and an example in every command's help, one
exit-code table (0 ok, 1 a verdict of failure, 2 bad input or an unusable host or tool,
130 interrupted) written in the README, and the paper cuts it replaced."""

import importlib
import json
import os
import re
import signal
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner
from conftest import BENCHKIT, CHECKOUT
from shipped import REFERENCE_IDS
from synthetic import sample, write_store

from benchkit.cli import COMMANDS, main
from benchkit.exits import MEANINGS
from benchkit.store import StoreError

README = (CHECKOUT / "README.md").read_text(encoding="utf-8")
GUIDE = (CHECKOUT / "docs" / "adding-a-task.md").read_text(encoding="utf-8")


def benchkit(*args, cwd=None, env=None, timeout=120):
    return subprocess.run([*BENCHKIT, *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)


def no_host_env(tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITEA_", "XDG_"))}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "no-config")  # no tea login either
    env["HOME"] = str(tmp_path)
    return env


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_takes_h_and_shows_an_example(command):
    done = CliRunner().invoke(main, [command, "-h"])
    assert done.exit_code == 0, done.output
    assert "Example" in done.output and f"benchkit {command}" in done.output.split("Example")[1]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_groups_one_line_help_is_the_commands_own(command):
    loaded = main.get_command(click.Context(main), command)
    assert COMMANDS[command][1] == loaded.get_short_help_str(limit=1000)


def test_the_groups_help_lays_the_commands_out_as_click_would_with_them_loaded():
    context = click.Context(main)
    held, loaded = context.make_formatter(), context.make_formatter()
    main.format_commands(context, held)
    click.Group.format_commands(main, context, loaded)  # imports every command
    assert held.getvalue() == loaded.getvalue()


def started(*args, cwd=CHECKOUT) -> tuple[str, list[str]]:
    """What `benchkit ARGS` prints, and the modules it imported (benchkit's, and the
    heavy libraries a quick command must not pay for)."""
    script = ("import json, sys; from benchkit.cli import main\n"
              f"try: main({list(args)!r})\n"
              "except SystemExit: pass\n"
              "json.dump(sorted(m for m in sys.modules if m.startswith('benchkit') or m in ("
              "'yaml', 'jsonschema', 'jinja2', 'msgspec', 'numpy', 'filelock')), sys.stderr)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=cwd, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout, json.loads(done.stderr)


def test_the_groups_help_lists_every_command_and_imports_none():
    helped, imported = started("--help")
    for command in COMMANDS:
        assert re.search(rf"^  {command} +\S", helped, re.MULTILINE), command
    assert imported == ["benchkit", "benchkit.cli", "benchkit.errors", "benchkit.exits"]


def test_bare_list_reads_no_document_and_imports_no_loader():
    listed, imported = started("list")
    assert "benchkit list tasks" in listed
    assert imported == ["benchkit", "benchkit.cache", "benchkit.cli", "benchkit.documents",
                        "benchkit.documents.commands", "benchkit.errors", "benchkit.exits"]


def test_show_imports_neither_the_aggregation_nor_the_templates_nor_the_schemas(tmp_path):
    write_store(tmp_path / "results", [sample("raw-api", "read-open-issue-count")])
    shown, imported = started("show", "--store", str(tmp_path / "results"))
    assert "read-open-issue-count" in shown
    assert not {"numpy", "jinja2", "jsonschema", "yaml", "filelock", "benchkit.documents"} & set(imported)


def test_the_documents_package_names_each_of_its_lazy_names():
    import benchkit.documents as spec
    assert sorted(spec.__all__) == sorted(spec._HOMES)
    for name in spec.__all__:
        home = importlib.import_module(f"benchkit.documents.{spec._HOMES[name]}")
        assert getattr(spec, name) is getattr(home, name)


def test_the_report_package_names_each_of_its_lazy_names():
    import benchkit.report as report
    assert sorted(report.__all__) == sorted(report._HOMES)
    for name in report.__all__:
        home = importlib.import_module(f"benchkit.report.{report._HOMES[name]}")
        assert getattr(report, name) is getattr(home, name)
        assert not isinstance(getattr(report, name), type(report))  # no submodule's name


def test_the_group_takes_h_and_states_the_exit_codes():
    """Every exit code, as benchkit.exits says it (the tables: tests/house/test_house_rules.py)."""
    done = CliRunner().invoke(main, ["-h"])
    said = " ".join(done.output.split())
    assert done.exit_code == 0
    for code, meaning in MEANINGS.items():
        assert f"{code} {meaning.split(': ')[0]}" in said


def test_the_readme_links_the_contracts():
    assert "DESIGN" + ".md" not in README  # (tests/house/test_citations.py: nor anywhere else)
    assert "docs/contracts.md" in README


def test_check_rejects_a_state_that_is_not_a_repo_state(tmp_path):
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"foo": 1}))
    done = benchkit("check", CHECKOUT / "tasks.d" / "close-csv-export-issue.yaml", "--state", state)
    assert done.returncode == 2, done.stdout
    assert done.stdout == "" and "not a RepoState" in done.stderr and str(state) in done.stderr
    state.write_text(json.dumps({"labels": [], "issues": [{"number": "x", "title": "t", "state": "open"}],
                                 "pull_requests": []}))
    done = benchkit("check", CHECKOUT / "tasks.d" / "close-csv-export-issue.yaml", "--state", state)
    assert done.returncode == 2 and "issues/0/number" in done.stderr


@pytest.mark.parametrize("command", [["seed"], ["snapshot", "--repo", "a/b"], ["gc"]])
def test_host_commands_with_no_host_exit_2(command, tmp_path):
    done = benchkit(*command, env=no_host_env(tmp_path), cwd=CHECKOUT)
    assert done.returncode == 2, done.stderr
    assert "no Gitea host" in done.stderr


def test_validate_live_with_a_bad_token_exits_2_naming_the_host(forge):
    done = benchkit("validate", "--live", CHECKOUT / "arms.d" / "raw-api.yaml", "--host", forge.url,
                    "--token", "not-the-token", "--task", "read-open-issue-count", cwd=CHECKOUT)
    assert done.returncode == 2, done.stdout + done.stderr
    assert forge.url in done.stderr and "rejected the token" in done.stderr


def test_report_warns_on_stderr_about_unreadable_store_lines(tmp_path):
    store = write_store(tmp_path / "results", [sample("raw-api", "read-open-issue-count")])
    with open(store / "raw-api" / "read-open-issue-count.jsonl", "a") as cell:
        cell.write("{not a sample\n")
    done = benchkit("report", "--store", store, "--format", "md", cwd=CHECKOUT)
    assert done.returncode == 0, done.stderr
    assert "warning:" in done.stderr and "read-open-issue-count.jsonl:2" in done.stderr
    assert "1 unreadable store line(s)" in done.stderr


@pytest.mark.parametrize("inherited", [signal.SIG_DFL, signal.SIG_IGN], ids=["terminal", "background"])
def test_ctrl_c_exits_130(tmp_path, inherited):
    """Also when started ignoring SIGINT, as a script's `cmd &` or a CI runner starts it:
    the signal may come before the server is up, and must still end it with 130."""
    server = subprocess.Popen([*BENCHKIT, "forge", "--port", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, inherited))
    try:
        assert server.stdout.readline().startswith("url: ")
        server.send_signal(signal.SIGINT)
        assert server.wait(120) == 130  # a bound on a hang only
    finally:
        server.kill()
        server.wait()


def test_validate_names_a_task_without_a_reference_and_exits_0(tree_copy):
    """The guide's example task (docs/adding-a-task.md), written verbatim: valid, and
    not provable on any arm until refs.d/ has its steps."""
    block = re.search(r"```yaml\n(# yaml-language-server.*?)```", GUIDE, re.S)[1]
    task_id = re.search(r"^id: (\S+)", block, re.M)[1]
    (tree_copy / "tasks.d" / f"{task_id}.yaml").write_text(block)
    done = benchkit("validate", cwd=tree_copy)
    assert done.returncode == 0, done.stderr
    for arm in ("raw-api", "tea", "gitea-mcp", "gitea-axi"):
        assert (f"tasks.d/{task_id}.yaml: warning: not provable on arm {arm}: "
                f"no reference in refs.d/{arm}.yaml") in done.stderr
    shipped = benchkit("validate", cwd=CHECKOUT)  # every arm has the reference suite's steps
    assert shipped.returncode == 0
    assert not [t for t in REFERENCE_IDS if f"tasks.d/{t}.yaml: warning" in shipped.stderr]


def test_run_of_a_task_without_a_reference_names_the_file_and_starts_nothing(tree_copy, tmp_path):
    block = re.search(r"```yaml\n(# yaml-language-server.*?)```", GUIDE, re.S)[1]
    task_id = re.search(r"^id: (\S+)", block, re.M)[1]
    (tree_copy / "tasks.d" / f"{task_id}.yaml").write_text(block)
    done = benchkit("run", "arms.d/raw-api.yaml", "--driver", "replay", "--task", task_id,
                    cwd=tree_copy, env=no_host_env(tmp_path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no reference in refs.d/raw-api.yaml" in done.stdout
    assert "embedded forge" not in done.stdout + done.stderr  # none was started
    assert not (tree_copy / "reports").exists() and not (tree_copy / "results").exists()


def test_tier_and_task_repeat_and_take_globs(tmp_path):
    done = benchkit("run", "arms.d/raw-api.yaml", "--dry-run", "--json", "--tier", "read",
                    "--tier", "multi-step", "--store", tmp_path / "store", cwd=CHECKOUT)
    assert done.returncode == 0, done.stderr
    from benchkit.documents import load_tree
    tree = load_tree(CHECKOUT)
    planned = {t["task"] for t in json.loads(done.stdout)["trials"]}
    assert planned == {t.id for t in tree.tasks.values() if t.tier in ("read", "multi-step")}
    done = benchkit("run", "arms.d/raw-api.yaml", "--dry-run", "--json", "--task", "fta-*",
                    "--task", "read-open-issue-count", "--store", tmp_path / "store", cwd=CHECKOUT)
    planned = {t["task"] for t in json.loads(done.stdout)["trials"]}
    assert planned == {t for t in tree.tasks if t.startswith("fta-")} | {"read-open-issue-count"}


def test_an_unreachable_host_is_one_plain_line_naming_it(tmp_path):
    done = benchkit("run", "arms.d/raw-api.yaml", "--driver", "replay", "--host",
                    "http://127.0.0.1:9", "--token", "x", "--store", tmp_path / "store",
                    cwd=CHECKOUT, env=no_host_env(tmp_path))
    assert done.returncode == 2, done.stdout + done.stderr
    output = done.stdout + done.stderr
    lines = [line for line in output.splitlines() if "127.0.0.1:9" in line]
    assert lines == ["pre-flight host: cannot reach the Gitea host http://127.0.0.1:9/ (from "
                     "flags) for GET /version: connection refused"], output
    assert "HTTPConnectionPool" not in output and "--unconfined" not in output  # not a sandbox matter


def test_show_of_an_unknown_id_quotes_it_whole(tmp_path):
    write_store(tmp_path / "store", [sample("raw-api", "close-csv-export-issue")])
    done = benchkit("show", "deadbeef", "--store", tmp_path / "store", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().endswith("with an id starting 'deadbeef'"), done.stderr


def test_help_and_readme_name_the_same_outcome_filter():
    helped = benchkit("-h").stdout
    assert "benchkit show --outcome failures" in helped and "--outcome failed" not in helped
    assert "benchkit show --outcome failures" in README
    assert "benchkit show --outcome failures" in (CHECKOUT / "docs" / "running.md").read_text()


@pytest.mark.parametrize("value", ["-1", "nan", "lots"])
def test_a_budget_that_is_no_token_count_says_so_in_benchkit_s_words(value):
    done = CliRunner().invoke(main, ["run", str(CHECKOUT / "arms.d" / "raw-api.yaml"),
                                     "--dry-run", "--budget", value])
    assert done.exit_code == 2
    assert (f"Invalid value for '--budget': {value!r}: expected a number of cost-equivalent "
            "tokens, 0 or more (e.g. 200000)") in done.output
    assert "range" not in done.output


def test_validate_live_fails_an_arm_with_an_unprovable_task_unless_allowed(tree_copy, tmp_path):
    """Exit 0 means every task proved: a task with no reference for the arm is not."""
    refs = tree_copy / "refs.d" / "raw-api.yaml"
    data = refs.read_text()
    start = data.index("\n  read-bug-issue-titles:")
    end = data.index("\n  read-issue-labels-and-state:")
    refs.write_text(data[:start] + data[end:])  # its one reference removed
    args = ("validate", "--live", "arms.d/raw-api.yaml", "--task", "read-bug-issue-titles")
    done = benchkit(*args, cwd=tree_copy, env=no_host_env(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 unprovable" in done.stdout
    assert "error: 1 task(s) unprovable" in done.stderr and "--allow-unprovable" in done.stderr
    allowed = benchkit(*args, "--allow-unprovable", cwd=tree_copy, env=no_host_env(tmp_path))
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "1 unprovable" in allowed.stdout


def test_list_tasks_imports_no_template_engine():
    """It reads tasks, which hold no template: Jinja2 was a sixth of its start."""
    listed, imported = started("list", "tasks")
    assert "read-open-issue-count" in listed
    assert "jinja2" not in imported and "benchkit.documents.tree" in imported


def test_every_commands_help_names_only_files_that_exist():
    """Each command's examples name the tree's own files (`validate -h` once named a task
    that was not there)."""
    context = click.Context(main)
    named = re.compile(r"(?:tasks\.d|arms\.d|seeds|refs\.d)/[a-z0-9][a-z0-9.-]*\.yaml")  # not NAME
    for name in COMMANDS:
        text = main.get_command(context, name).get_help(click.Context(main.get_command(context, name)))
        for path in named.findall(text):
            assert (CHECKOUT / path).is_file(), f"`benchkit {name} -h` names {path}"


def test_a_store_that_is_a_file_is_said_alike_by_every_command(tmp_path):
    store = tmp_path / "results"
    store.write_text("")
    for args in (["report"], ["show"], ["run", str(CHECKOUT / "arms.d/raw-api.yaml"), "--dry-run"]):
        done = benchkit(*args, "--store", store)
        assert done.returncode == 2, (args, done.stderr)
        assert f"Directory '{store}' is a file" in done.stderr, (args, done.stderr)


@click.command()
def failing():
    """Ends on an error of benchkit's that it does not catch."""
    raise StoreError("the store said no")


def test_an_error_no_command_caught_is_one_line_and_exit_1(monkeypatch):
    """Exit 1, as the uncaught exception's traceback ended with; the line is the error's."""
    monkeypatch.setitem(COMMANDS, "failing", ("test_cli_contract:failing", "Fails."))
    done = CliRunner().invoke(main, ["failing"])
    assert done.exit_code == 1
    assert done.stderr == "error: the store said no\n" and done.stdout == ""

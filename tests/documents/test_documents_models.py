"""Models, defaults, fingerprints, the tree, find_root and template rendering."""

from dataclasses import replace

import jinja2
import pytest
import yaml
from conftest import CHECKOUT
from shipped import REFERENCE_IDS

from benchkit.documents import (
    DocumentError,
    find_root,
    load_arm,
    load_seed,
    load_suite,
    load_tree,
    render,
)


def test_suite_defaults_come_from_the_schema(tmp_path):
    path = tmp_path / "suite.yaml"
    path.write_text("model: claude-x\nbase_prompt: Hello {{ user }}.\n")
    suite = load_suite(path)
    assert (suite.model, suite.trials, suite.floor, suite.turn_cap, suite.backstop_seconds) == (
        "claude-x", 5, 3, 25, 300)
    assert suite.repo_prefix == "benchkit-" and suite.default_cell_tokens == 25000
    assert suite.weights == {"input": 1, "cache_write_5m": 1.25, "cache_write_1h": 2,
                             "cache_read": 0.1, "output": 5}
    assert suite.data["weights"] == suite.weights
    assert (suite.max_request_bytes, suite.max_trial_upload_bytes) == (10 * 2**20, 100 * 2**20)
    assert suite.path == path


def test_the_gateway_takes_the_suites_limits(tmp_path, forge):
    from benchkit.gitea import Client
    from benchkit.preflight.host import probe_host
    from benchkit.store import Store
    from benchkit.trial.prepare import RunContext
    path = tmp_path / "suite.yaml"
    path.write_text("model: m\nbase_prompt: p\nmax_request_bytes: 4096\n"
                    "max_trial_upload_bytes: 8192\n")
    client = Client(forge.url, forge.token)
    ctx = RunContext(suite=load_suite(path), seeds={}, client=client, store=Store(tmp_path / "r"),
                     driver=None, host=probe_host(client, "benchkit-"))
    assert ctx.gateway is not None
    assert (ctx.gateway.limits.request_bytes, ctx.gateway.limits.trial_bytes) == (4096, 8192)


def test_shipped_suite():
    suite = load_suite(CHECKOUT / "suite.yaml")
    assert (suite.trials, suite.floor) == (5, 3)
    prompt = render(suite.base_prompt, host_url="http://h/", api_url="http://h/api/v1",
                    owner="bench", repo="benchkit-x", user="bench", token="T0K")
    assert "Repository: bench/benchkit-x" in prompt and "T0K" in prompt


def test_fingerprint_follows_the_data_not_the_formatting(tmp_path):
    a, b, c = (tmp_path / name for name in ("a.yaml", "b.yaml", "c.yaml"))
    a.write_text("model: m\nbase_prompt: p\n")
    b.write_text("# a comment\nbase_prompt: 'p'\nmodel:   m\ntrials: 5\n")  # 5 is the default
    c.write_text("model: other\nbase_prompt: p\n")
    assert load_suite(a).fingerprint == load_suite(b).fingerprint
    assert load_suite(a).fingerprint != load_suite(c).fingerprint
    assert len(load_suite(a).fingerprint) == 16


def test_seed_defaults_fill_every_item(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text("labels: [{name: bug, color: '#D73A4A'}]\n"
                    "issues: [{title: One}]\n"
                    "pull_requests:\n"
                    "  - {title: P, head: b, file: {path: f.txt, content: x},\n"
                    "     reviews: [{body: fine}]}\n")
    seed = load_seed(path)
    assert seed.name == "tiny"
    assert seed.labels == [{"name": "bug", "color": "#D73A4A", "description": ""}]
    assert seed.issues == [{"title": "One", "body": "", "state": "open", "labels": [],
                            "assigned": False, "comments": []}]
    (pull,) = seed.pull_requests
    assert (pull["state"], pull["labels"], pull["comments"]) == ("open", [], [])
    assert pull["reviews"] == [{"kind": "comment", "body": "fine"}]


def test_seed_rejects_a_self_review_verdict(tmp_path):
    """A seed must take on every host, and many forbid approving one's own pull request."""
    path = tmp_path / "s.yaml"
    path.write_text("pull_requests:\n  - title: P\n    head: b\n    file: {path: f, content: x}\n"
                    "    reviews: [{kind: approved, body: ok}]\n")
    with pytest.raises(DocumentError) as caught:
        load_seed(path)
    assert [(p.line, p.where) for p in caught.value.problems] == [(5, "pull_requests[0].reviews[0].kind")]


def test_arms_as_loaded():
    tea = load_arm(CHECKOUT / "arms.d" / "tea.yaml")
    assert (tea.id, tea.tool.kind, tea.tool.binary) == ("tea", "shell", "tea")
    assert tea.tool.forbidden_subcommands == (("api",),)
    assert tea.tool.server is None and tea.credentials["setup"] == []
    assert [f["path"] for f in tea.credentials["files"]] == ["tea/config.yml"]

    mcp = load_arm(CHECKOUT / "arms.d" / "gitea-mcp.yaml")
    assert mcp.tool.kind == "mcp" and mcp.tool.binary is None
    assert mcp.tool.server is not None and mcp.tool.server.args == ("-t", "stdio")
    assert mcp.credentials == {"env": {}, "files": [], "setup": []}

    curl = load_arm(CHECKOUT / "arms.d" / "raw-api.yaml")
    assert curl.user_agents == ("curl/",) and curl.tool.forbidden_subcommands == ()
    assert curl.tool.version == ("--version",) and "curl" in (curl.tool.probe.run or "")
    assert mcp.user_agents == ("gitea-mcp-server/", "Go-http-client/")
    assert mcp.tool.probe.tool == "list_issues"


def test_an_empty_version_list_asks_for_the_default(tmp_path):
    text = (CHECKOUT / "arms.d" / "raw-api.yaml").read_text()
    assert "  version: [--version]\n" in text
    arm_file = tmp_path / "raw-api.yaml"
    arm_file.write_text(text.replace("  version: [--version]\n", "  version: []\n", 1))
    assert load_arm(arm_file).tool.version == ("--version",)


def test_an_arm_fingerprint_takes_its_tool_version_in():
    curl = load_arm(CHECKOUT / "arms.d" / "raw-api.yaml")
    assert curl.tool_version is None and curl.run_fingerprint == curl.fingerprint
    old, new = (replace(curl, tool_version=v) for v in ("curl 8.5.0", "curl 8.6.0"))
    assert old.run_fingerprint != new.run_fingerprint != curl.fingerprint
    assert old.run_fingerprint == replace(curl, tool_version="curl 8.5.0").run_fingerprint
    assert old.fingerprint == curl.fingerprint  # the document's own is unchanged


def test_arm_templates_render_with_the_harness_context():
    context = dict(host_url="http://127.0.0.1:3000/", api_url="http://127.0.0.1:3000/api/v1",
                   owner="bench", repo="benchkit-1", user="bench", token="s3cret",
                   config_dir="/tmp/cfg", root=str(CHECKOUT), workdir="/tmp/w", env={})
    tea = load_arm(CHECKOUT / "arms.d" / "tea.yaml")
    config = yaml.safe_load(render(tea.credentials["files"][0]["content"], **context))
    assert config["logins"][0] == {"name": "benchkit", "url": "http://127.0.0.1:3000/",
                                   "token": "s3cret", "default": True, "user": "bench",
                                   "version_check": False}
    axi = load_arm(CHECKOUT / "arms.d" / "gitea-axi.yaml")
    assert axi.tool.skill is not None and axi.tool.skill.override == "BENCHKIT_GITEA_AXI_SKILL"
    assert [render(p, tool_package="/pkg", **context) for p in axi.tool.skill.paths] == [
        "/pkg/skills/gitea-axi/SKILL.md", "~/.claude/skills/gitea-axi/SKILL.md"]
    bootstrap = render(axi.bootstrap, skill="SKILL BODY", **context)
    assert "bench/benchkit-1" in bootstrap and bootstrap.rstrip().endswith("SKILL BODY")


def test_render_is_strict():
    with pytest.raises(jinja2.UndefinedError):
        render("Hello {{ usr }}", user="bench")
    assert render("a\n{{ x }}\n", x=1) == "a\n1\n"  # trailing newline kept


def test_load_tree(tree_copy):
    tree = load_tree(tree_copy)
    assert tree.root == tree_copy.resolve()
    assert list(tree.seeds) == ["default"]
    assert sorted(tree.arms) == ["gitea-axi", "gitea-mcp", "gitea-mcp-search", "raw-api", "tea"]
    assert REFERENCE_IDS <= {t.id for t in tree.tasks.values() if t.scored}
    assert tree.suite.path == tree_copy.resolve() / "suite.yaml"
    assert all(task.path.parent == tree.root / "tasks.d" for task in tree.tasks.values())


def test_a_broken_seed_does_not_bury_its_tasks_in_follow_on_errors(tree_copy):
    seed = tree_copy / "seeds" / "default.yaml"
    seed.write_text(seed.read_text().replace("color: d73a4a", "color: red"))
    with pytest.raises(DocumentError) as caught:
        load_tree(tree_copy)
    assert {p.file.name for p in caught.value.problems} == {"default.yaml"}


def test_find_root(tree_copy, tmp_path, monkeypatch):
    monkeypatch.delenv("BENCHKIT_ROOT", raising=False)
    (tree_copy / "tasks.d" / "deeper").mkdir()
    monkeypatch.chdir(tree_copy / "tasks.d" / "deeper")
    assert find_root() == tree_copy.resolve()
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.chdir(outside)
    assert find_root() == CHECKOUT  # the checkout beside the package
    monkeypatch.setenv("BENCHKIT_ROOT", str(tree_copy))
    assert find_root() == tree_copy.resolve()
    monkeypatch.setenv("BENCHKIT_ROOT", str(outside))
    with pytest.raises(DocumentError, match="BENCHKIT_ROOT"):
        find_root()

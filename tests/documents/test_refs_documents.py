"""Reference documents: every shipped one loads against its arm and covers the scored
suite; a broken one fails with FILE:LINE problems; targets re-render on decoys."""


import pytest
from conftest import CHECKOUT
from shipped import REFERENCE_IDS, scored_ids

from benchkit.agent.replay import NULL_ANSWER, null_reference
from benchkit.documents.loader import DocumentError
from benchkit.documents.models import load_arm
from benchkit.documents.reference import (
    Step,
    TaskReference,
    load_reference,
    reference_for,
    render_answer,
    render_step,
    render_value,
)

VERIFIED = {"raw-api", "gitea-mcp-pypi", "tea", "gitea-mcp", "gitea-mcp-search", "gitea-axi"}  # CI replays all


def shipped_arms(shipped_tree):
    arms = dict(shipped_tree.arms)
    test_arm = load_arm(CHECKOUT / "tests" / "arms" / "gitea-mcp-pypi.yaml")
    arms[test_arm.id] = test_arm
    return arms


def test_every_arm_has_a_reference_covering_the_scored_suite(shipped_tree):
    """Every shipped arm covers the reference suite (a task added since may lack a
    reference: validate warns of it, see test_documents_validate)."""
    scored = REFERENCE_IDS
    assert scored <= scored_ids(shipped_tree)
    for arm_id, arm in shipped_arms(shipped_tree).items():
        reference = reference_for(arm, CHECKOUT)
        assert reference.arm == arm_id
        assert reference.verified == (arm_id in VERIFIED), arm_id
        assert scored <= set(reference.tasks), f"{arm_id} lacks {sorted(scored - set(reference.tasks))}"
        for task_id, task in reference.tasks.items():
            assert task.unsupported or task.steps, (arm_id, task_id)
            if shipped_tree.tasks[task_id].kind == "read" and not task.unsupported:
                assert task.answer, f"{arm_id}: read task {task_id} has no answer"


def test_only_the_pypi_test_arm_leaves_scored_tasks_unsupported(shipped_tree):
    unsupported = {arm_id: sorted(t for t, ref in reference_for(arm, CHECKOUT).tasks.items()
                                  if ref.unsupported and shipped_tree.tasks[t].scored)
                   for arm_id, arm in shipped_arms(shipped_tree).items()}
    assert unsupported["raw-api"] == [] and unsupported["gitea-axi"] == []
    assert unsupported["gitea-mcp-pypi"] == ["fta-review-csv-pull", "fta-review-docs-pull",
                                             "ms-create-and-apply-stale", "read-review-body"]


BROKEN = """\
# yaml-language-server: $schema=../benchkit/schemas/reference.schema.json
arm: raw-api
verified: false
tasks:
  close-csv-export-issue:
    targets: {issue: 2}
    decoys: {pull: 9}
    steps:
      - run: curl {{ api_url }}/issues/{{ isue }}
  read-open-issue-count:
    unsupported: no reason
    steps:
      - run: curl {{ api_url }}
  label-startup-crash:
    steps:
      - tool: mcp__gitea__update_issue
        input: {issue_number: 1}
  comment-save-large-files:
    steps:
      - run: curl
        tool: mcp__gitea__add_comment
"""


def test_a_broken_reference_reports_every_problem_at_its_line(tmp_path):
    path = tmp_path / "refs.d" / "raw-api.yaml"
    path.parent.mkdir()
    path.write_text(BROKEN)
    with pytest.raises(DocumentError) as caught:
        load_reference(path, kind="shell")
    found = {(p.line, p.message) for p in caught.value.problems}
    assert found == {
        (7, "decoy 'pull' is not a target"),
        (9, "unknown template variable 'isue'"),
        (12, "an unsupported task has no steps"),
        (16, "a shell arm's step is {run: COMMAND}"),
        (21, "a step runs a command or calls a tool, not both"),
    }
    assert str(caught.value).startswith(f"{path}:7: decoy 'pull' is not a target")


def test_integer_targets_move_to_the_next_entity_of_their_kind(shipped_tree):
    seed = shipped_tree.seeds["default"]
    issue = TaskReference("t", targets={"issue": 8})
    assert issue.retargeted(seed).targets == {"issue": 1}  # wraps among issues 1-8
    pair = TaskReference("t", targets={"issue": 1, "second_issue": 3})
    assert pair.retargeted(seed).targets == {"issue": 2, "second_issue": 4}
    pull = TaskReference("t", targets={"pull": 11})
    assert pull.retargeted(seed).targets == {"pull": 9}  # wraps among pulls 9-11
    named = TaskReference("t", targets={"issue": 3, "state": "open"}, decoys={"state": "closed"})
    assert named.retargeted(seed).targets == {"issue": 4, "state": "closed"}
    assert TaskReference("t", targets={"title": "x"}).retargeted(seed) is None
    assert TaskReference("t").retargeted(seed) is None


def test_rendering_keeps_native_types_and_reads_answers_off_outputs():
    context = {"owner": "o", "repo": "r", "issue": 3, "outputs": []}
    assert render_value({"n": "{{ issue }}", "s": "#{{ issue }}", "l": ["{{ owner }}"],
                         "x": "{{ [issue, 1] }}"}, context) == \
        {"n": 3, "s": "#3", "l": ["o"], "x": [3, 1]}
    step = render_step(Step(run="  curl {{ owner }}/{{ repo }}\n"), context)
    assert step.run == "curl o/r"
    task = TaskReference("t", answer="{{ outputs[0] | fromjson | map(attribute='n') | join(',') }}")
    context["outputs"] = ['HTTP/1.1 200 OK\n[{"n": 1}, {"n": 2}]']
    assert render_answer(task, context) == "1,2"
    # The CLI hands on an MCP list result in its structured form, {"result": [...]}.
    context["outputs"] = ['{"result": [{"n": 5}]}']
    assert render_answer(task, context) == "5"
    assert null_reference("t").answer == NULL_ANSWER

"""The raw-api references, verified directly: each task's rendered commands run with
real curl against a freshly seeded forge repository, and the checker must accept the
end state and answer; the same commands aimed at the wrong targets must be rejected."""

import subprocess

import pytest
from conftest import CHECKOUT
from shipped import replay_params

from benchkit.agent.replay import context_for
from benchkit.documents.reference import load_reference, render_answer, render_step
from benchkit.documents.tree import load_tree
from benchkit.forge import Forge
from benchkit.gitea import Client, delete_repo, provision, snapshot
from benchkit.scoring.checker import check

TREE = load_tree(CHECKOUT)
SEED = TREE.seeds["default"]
REFERENCE = load_reference(CHECKOUT / "refs.d" / "raw-api.yaml", kind="shell")
# Every scored task, and the bonus operations the reference plays.
PLAYABLE = replay_params(TREE, REFERENCE, bonus=True)
# No pull request of the seed has a check, so every target's answer would be the same:
# its reference finds the pull request by title and names no target to swap.
NO_DECOY = {"bonus-pull-checks"}


@pytest.fixture(scope="module")
def host():
    with Forge() as forge, Client(forge.url, forge.token) as client:
        yield forge, client


def in_bash(step) -> tuple[str, str | None]:
    """Run a step as the agent's Bash tool would: (its output, why it failed or None)."""
    done = subprocess.run(["bash", "-c", step.run], capture_output=True, text=True, timeout=120)
    failure = f"exited {done.returncode}: {done.stdout[:200]}{done.stderr[:200]}" if done.returncode else None
    return done.stdout + done.stderr, failure


def verdict(task_id, task_ref, forge, client, run_step=in_bash):
    """Play the steps, each through `run_step`, on a freshly seeded repository; (the
    checker's verdict, the failed steps)."""
    repo = provision(client, SEED)
    try:
        context = context_for(host_url=forge.url, api_url=forge.api_url, token=forge.token,
                              owner=repo.owner, repo=repo.name, user=forge.user,
                              targets=task_ref.targets)
        failed = []
        for number, step in enumerate(task_ref.steps, start=1):
            output, failure = run_step(render_step(step, context))
            context["outputs"].append(output)
            failed += [f"step {number} {failure}"] if failure else []
        answer = render_answer(task_ref, context)
        state = snapshot(client, repo.owner, repo.name)
    finally:
        delete_repo(client, repo.owner, repo.name)
    return check(TREE.tasks[task_id], state=state, answer=answer, seed=SEED, user=forge.user), failed


@pytest.mark.parametrize("task_id", PLAYABLE)
def test_reference_passes_and_its_wrong_target_variant_fails(task_id, host):
    forge, client = host
    task_ref = REFERENCE.for_task(task_id)
    result, failed = verdict(task_id, task_ref, forge, client)
    assert failed == []
    assert result.passed, result.differences
    wrong = task_ref.retargeted(SEED)
    if task_id in NO_DECOY:
        assert wrong is None
        return
    assert wrong is not None, "every raw-api reference names a target a decoy can replace"
    result, _ = verdict(task_id, wrong, forge, client)
    assert not result.passed

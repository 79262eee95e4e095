"""`benchkit validate --live`: prove the suite on a host before a token is spent.

For every arm and task, three controls run on fresh seeded repositories:

    reference     the arm's reference solution, replayed through the real CLI: must pass
    null          an untouched repository and an answer stating nothing: must fail
    wrong-target  the reference's steps re-rendered on decoy targets, replayed: must fail

and the task gets a verdict: ok; unsolvable (the reference failed and one of its steps
failed or was denied: the tool could not do it); mis-scored (the checker rejected what
a reference reached with every step succeeding, or accepted the untouched repository);
ambiguous (the wrong-target variant passed); unsupported (the reference says the tool
cannot do the task: skipped, not a failure); unprovable (no reference for the task in
refs.d/<arm>.yaml: fails the proof, unless `validate --live --allow-unprovable`); error (a harness error kept a control
from running). Controls run concurrently, `jobs` at a time,
on one host; their samples go to a throwaway store, never to results/.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from benchkit.agent.driver import AgentRun
from benchkit.agent.replay import ReplayDriver, null_reference
from benchkit.documents.loader import DocumentError
from benchkit.documents.models import load_arm
from benchkit.documents.reference import excerpt, no_reference, reference_for
from benchkit.documents.tree import load_tree
from benchkit.errors import HarnessError, HostError
from benchkit.evidence import REPLAY, ReplayEvent
from benchkit.gitea import Client, delete_repo, provision, snapshot
from benchkit.planning.plan import Trial, not_runnable
from benchkit.preflight.checks import choose_tasks, host_problems
from benchkit.preflight.host import HostFacts, discover, open_host, probe_host, throwaway
from benchkit.scoring import check as check_task
from benchkit.store import Store
from benchkit.trial.cell import run_trial
from benchkit.trial.prepare import RunContext

CONTROLS = ("reference", "null", "wrong-target")
# Verdicts that make `validate --live` exit 1.
PROBLEMS = ("unsolvable", "mis-scored", "ambiguous", "error")


@dataclass
class Control:
    """How one control came out: the cell runner's outcome (or "not-run")."""

    name: str
    outcome: str = "not-run"
    differences: list = field(default_factory=list)
    failed_steps: dict = field(default_factory=dict)  # step number -> excerpt of its result
    replay_errors: list = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0  # wall time, provisioning to deletion

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    @property
    def summary(self) -> str:
        return {"not-run": "-", "passed": "pass", "failed": "fail"}.get(self.outcome, self.outcome)


@dataclass
class TaskCheck:
    arm: str
    task: str
    kind: str
    verdict: str = "ok"
    reason: str = ""
    controls: dict = field(default_factory=dict)  # name -> Control

    @property
    def problem(self) -> bool:
        return self.verdict in PROBLEMS


@dataclass
class _Host:
    """What every control shares: where the host is and what it permits."""

    url: str
    token: str | None
    facts: HostFacts
    lock: threading.Lock = field(default_factory=threading.Lock)


# --- the entry point -----------------------------------------------------------------

def validate_live(arm_paths=(), *, host: str | None = None, token: str | None = None,
                  login: str | None = None, root=None, task_ids=(), jobs: int = 3,
                  progress: Callable[[str], None] | None = None) -> list[TaskCheck]:
    """Run the three controls for every (arm, task); return one TaskCheck each.

    arm_paths: arm YAML files (default: every arm of the tree). task_ids: limit to
    these tasks (default: every scored task, and any other one a reference covers).
    Raises DocumentError for a broken tree or reference, HarnessError for a host that
    cannot be used at all.
    """
    tree = load_tree(root)
    arms = [load_arm(path) for path in arm_paths] or list(tree.arms.values())
    references = {arm.id: reference_for(arm, tree.root) for arm in arms}
    credentials = discover(host, token, login)
    unusable = host_problems(credentials) if credentials is not None else []
    if unusable:
        raise HostError("; ".join(unusable))
    with open_host(credentials, progress, throwaway(host)) as where, \
            Client(where.url, where.token) as client, \
            tempfile.TemporaryDirectory(prefix="benchkit-validate-") as store_dir:
        shared = _Host(client.url, client.token, probe_host(client, tree.suite.repo_prefix))
        checks, jobs_to_run = _plan(tree, arms, references, task_ids, shared)
        run = _Runner(tree, shared, store_dir, progress)
        with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="selfcheck") as pool:
            done = list(pool.map(run, jobs_to_run))
    for (check, control_name, _), control in zip(jobs_to_run, done):
        check.controls[control_name] = control
    for check in checks:
        if check.controls:
            judge(check)
    return checks


def _plan(tree, arms, references, task_ids, shared: _Host):
    """One TaskCheck per (arm, task) and the controls each needs, in table order."""
    checks, jobs = [], []
    for arm in arms:
        reference = references[arm.id]
        for task in _tasks(tree, reference, task_ids, shared.facts.self_review, arm):
            check = TaskCheck(arm.id, task.id, task.kind)
            checks.append(check)
            task_ref = reference.for_task(task.id)
            if task_ref is None:
                check.verdict, check.reason = "unprovable", no_reference(arm.id)
                continue
            if task_ref.unsupported:
                check.verdict, check.reason = "unsupported", " ".join(task_ref.unsupported.split())
                continue
            wrong = task_ref.retargeted(tree.seeds[task.seed])
            jobs.append((check, "reference", (arm, task, replace(reference, tasks={task.id: task_ref}))))
            jobs.append((check, "null", (arm, task, None)))
            if wrong is not None:
                jobs.append((check, "wrong-target", (arm, task, replace(reference, tasks={task.id: wrong}))))
    return checks, jobs


def _tasks(tree, reference, task_ids, self_review: bool, arm):
    """The tasks to prove: the chosen ones, else every scored task and any other one the
    reference covers, so long as it means something on this host and arm."""
    if task_ids:
        problems: list = []
        chosen = choose_tasks(tree, task_ids, (), problems)  # ids or globs
        if problems:
            raise DocumentError(problems)
    else:
        chosen = [t for t in tree.tasks.values() if t.scored or t.id in reference.tasks]
    return [t for t in chosen if not_runnable(arm, t, self_review) is None]


# --- running one control -------------------------------------------------------------

class _Runner:
    """Runs one control; called from the pool's threads, each with its own client."""

    def __init__(self, tree, shared: _Host, store_dir: str, progress):
        self.tree, self.shared, self.store_dir, self.progress = tree, shared, store_dir, progress
        # The null agent's end state is the seeded repository, the same for every task
        # of a seed: one repository per seed, not one per task (seeding a real Gitea
        # costs seconds).
        self._untouched: dict[str, dict] = {}
        self._untouched_lock = threading.Lock()

    def __call__(self, job) -> Control:
        check, name, (arm, task, reference) = job
        started = time.perf_counter()
        with Client(self.shared.url, self.shared.token) as client:
            try:
                control = (self._null(client, task) if reference is None
                           else self._replay(client, arm, task, reference, name))
            except Exception as exc:  # one broken control, not the whole table
                detail = str(exc) if isinstance(exc, HarnessError) else f"{type(exc).__name__}: {exc}"
                control = Control(name, "harness-error", error=client.scrub(detail))
        control.seconds = round(time.perf_counter() - started, 3)
        if self.progress:
            with self.shared.lock:
                self.progress(f"{check.arm} {check.task} {name}: {control.summary}")
        return control

    def _replay(self, client, arm, task, reference, name) -> Control:
        store = Store(self.store_dir, secrets=[client.token])
        ctx = RunContext(suite=self.tree.suite, seeds=self.tree.seeds, client=client,
                         store=store, driver=ReplayDriver(reference), host=self.shared.facts,
                         root=self.tree.root)
        result = run_trial(Trial(arm, task), ctx)
        sample, replay = result.sample, _replay_event(result.run)
        return Control(name, sample.outcome, differences=list(sample.differences),
                       failed_steps={int(n): text for n, text in replay.get("failed_steps", {}).items()},
                       replay_errors=replay.get("errors", []),
                       error=sample.error or _leaks(sample.leaks))

    def _null(self, client, task) -> Control:
        """The null agent: it makes no call, so its end state is the seeded repository."""
        seed = self.tree.seeds[task.seed]
        untouched = self._untouched_state(client, task.seed)
        verdict = check_task(task, state=untouched, answer=null_reference(task.id).answer,
                             seed=seed, user=client.user, self_review=self.shared.facts.self_review,
                             seeded=untouched)
        return Control("null", "passed" if verdict.passed else "failed",
                       differences=list(verdict.differences))

    def _untouched_state(self, client, seed_name: str) -> dict:
        """The snapshot of a freshly seeded repository of this seed (made once)."""
        with self._untouched_lock:
            if seed_name not in self._untouched:
                seed = self.tree.seeds[seed_name]
                repo = provision(client, seed, prefix=self.tree.suite.repo_prefix)
                try:
                    self._untouched[seed_name] = snapshot(client, repo.owner, repo.name)
                finally:
                    delete_repo(client, repo.owner, repo.name)
            return self._untouched[seed_name]


def _replay_event(run: AgentRun | None) -> ReplayEvent | dict:
    """The replay's own account (failed steps, template errors) from its transcript."""
    events = run.transcript if run is not None else []
    return next((e for e in reversed(events) if e["event"] == REPLAY), {})


def _leaks(leaks: list[str]) -> str | None:
    return "leak: " + "; ".join(map(str, leaks)) if leaks else None


# --- verdicts and the table ----------------------------------------------------------

def judge(check: TaskCheck) -> None:
    """Set the task's verdict and reason from its controls."""
    reference = check.controls.get("reference", Control("reference"))
    null = check.controls.get("null", Control("null"))
    wrong = check.controls.get("wrong-target")
    broken = [c for c in (reference, null, wrong) if c is not None and c.outcome == "harness-error"]
    if broken:
        check.verdict = "error"
        check.reason = f"{broken[0].name}: {excerpt(broken[0].error, 160)}"
    elif not reference.passed:
        stumbled = reference.failed_steps or reference.replay_errors or reference.outcome != "failed"
        check.verdict = "unsolvable" if stumbled else "mis-scored"
        check.reason = _why_reference_failed(reference)
    elif null.passed:
        check.verdict = "mis-scored"
        check.reason = "the checker accepts the untouched repository and an empty answer"
    elif wrong is not None and wrong.passed:
        check.verdict = "ambiguous"
        check.reason = "the reference's steps on the wrong targets pass as well"
    else:
        check.verdict = "ok"
        check.reason = "" if wrong is not None else "no wrong-target variant (no target to swap)"


def _why_reference_failed(reference: Control) -> str:
    if reference.replay_errors:
        return f"reference: {excerpt(reference.replay_errors[0], 160)}"
    if reference.failed_steps:
        number, text = next(iter(reference.failed_steps.items()))
        return f"reference step {number} failed: {excerpt(text, 160)}"
    if reference.outcome != "failed":
        return f"reference {reference.outcome}: {excerpt(reference.error, 160)}"
    first = reference.differences[0] if reference.differences else "no difference reported"
    return f"the checker rejects the reference's end state: {excerpt(first, 160)}"


def render_table(checks: list[TaskCheck]) -> str:
    """The controls and verdict of every task, then the ones that need attention."""
    header = ["arm", "task", "kind", *CONTROLS, "verdict"]
    rows = [[c.arm, c.task, c.kind,
             *(c.controls[n].summary if n in c.controls else "-" for n in CONTROLS),
             c.verdict] for c in checks]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["controls: the reference must pass; the null agent and the wrong target must fail", ""]
    lines += ["  ".join(str(v).ljust(w) for v, w in zip(r, widths)).rstrip() for r in [header, *rows]]
    problems = [c for c in checks if c.problem]
    counts = {v: sum(c.verdict == v for c in checks)
              for v in ("ok", *PROBLEMS, "unsupported", "unprovable")}
    lines.append("")
    lines.append(", ".join(f"{n} {v}" for v, n in counts.items() if n) or "no tasks")
    for c in checks:
        if c.verdict == "unsupported":
            lines.append(f"unsupported: {c.arm} {c.task}: {c.reason}")
        elif c.verdict == "unprovable":
            lines.append(f"warning: {c.task}: {c.reason}")
    for c in problems:
        lines.append(f"{c.verdict.upper()}: {c.arm} {c.task}: {c.reason}")
    return "\n".join(lines)


"""`benchkit expect` and `benchkit check`: the checker's seam on the command line.

    benchkit expect [TASK_YAML] [--untouched] [--user NAME] [--seed SEED] [--self-review]
    benchkit check TASK_YAML --state STATE_JSON [--answer TEXT_FILE] [--user NAME]
                   [--seed SEED] [--self-review]

SEED is a seed's name (as a task's `seed:` gives it: seeds/<name>.yaml of the tree) or
a seed file.

Exit codes: 0 (check passed, or expect printed), 1 (check failed), 2 (bad input: an
invalid task or seed, a state that is not a RepoState (benchkit/schemas/
repo-state.schema.json), a task with no scoring spec).
"""

import functools
import json
from pathlib import Path

import click
import jsonschema

from benchkit import SCHEMA_DIR
from benchkit.documents.answer_key import answer_key, described
from benchkit.documents.expectation import ExpectationError, expected_state, ground_truth
from benchkit.documents.models import load_seed
from benchkit.documents.task import load_task, seed_given, seed_path
from benchkit.documents.tree import find_root
from benchkit.exits import EXIT_FAILED, reported
from benchkit.scoring.checker import NotScorable
from benchkit.scoring.checker import check as check_task
from benchkit.state import StateError

# Besides bad documents, what makes the input bad: reported as one line, exit 2.
BAD_INPUT = (NotScorable, StateError, ExpectationError)

_user = click.option("--user", default="bench", show_default=True,
                     help='The token\'s user: "self" in the seed and the edits.')
_seed = click.option("--seed", "seed_yaml", metavar="NAME|FILE",
                     help="A seed's name (seeds/NAME.yaml) or file (default: the task's "
                          "seed, else seeds/default.yaml).")
_self_review = click.option("--self-review", is_flag=True,
                            help="The host permits self-review: score the approve/request-changes variant.")
_seeded = click.option("--seeded", "seeded_file", type=click.File("r", encoding="utf-8"),
                       help="A RepoState captured once the repository was seeded (`benchkit "
                            "snapshot`): its repository settings are what they must stay; "
                            "without it they are not compared.")


@click.command()
@click.argument("task_yaml", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--untouched", is_flag=True,
              help="The ground truth of TASK_YAML's own seed, before any edit: a state "
                   "`check` must fail on.")
@_user
@_seed
@_self_review
@_seeded
def expect(task_yaml, untouched, user, seed_yaml, self_review, seeded_file):
    """Print TASK_YAML's expected end state (mutations) or answer key (reads: required
    and forbidden facts) as JSON; with --untouched, or with no task, the seed's ground
    truth RepoState.

    \b
    Examples:
      benchkit expect tasks.d/close-csv-export-issue.yaml > expected.json
      benchkit expect tasks.d/close-csv-export-issue.yaml --untouched > untouched.json
      benchkit expect --seed default            # a seed's ground truth
    """
    if untouched and task_yaml is None:
        raise click.UsageError("--untouched needs a TASK_YAML: the ground truth of its seed")
    with reported(BAD_INPUT):
        seed = _seed_of(seed_yaml, task_yaml)
        seeded = _read_state(seeded_file) if seeded_file else None
        if task_yaml is None:
            _print(ground_truth(seed or load_seed(_default_seed()), user, seeded))
            return
        task = load_task(task_yaml, seed)
        seed = seed or _task_seed(task)
        if untouched:
            _print(ground_truth(seed, user, seeded))
        elif task.edits:
            _print(expected_state(task, seed, user, self_review=self_review, seeded=seeded))
        elif task.facts:
            _print({"facts": task.facts, **described(answer_key(task.data, seed)),
                    "example_answer": example_answer(task.facts)})
        else:
            raise NotScorable(f"task {task.id} has no scoring spec (unscored bonus operation)")


@click.command()
@click.argument("task_yaml", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--state", "state_file", type=click.File("r", encoding="utf-8"),
              help="The captured RepoState JSON ('-' for stdin); required for mutation tasks.")
@click.option("--answer", "answer_file", type=click.File("r", encoding="utf-8"),
              help="The agent's final answer as text ('-' for stdin); required for read tasks.")
@_user
@_seed
@_self_review
@_seeded
@click.pass_context
def check(ctx: click.Context, task_yaml, state_file, answer_file, user, seed_yaml, self_review,
          seeded_file):
    """Score a captured state and answer against TASK_YAML.

    Prints {"passed": bool, "differences": [...]}; exit 0 passed, 1 failed, 2 bad input
    (a state that is not a RepoState among it).

    \b
    Examples:
      benchkit check tasks.d/close-csv-export-issue.yaml --state expected.json
      benchkit check tasks.d/read-open-issue-count.yaml --answer - <<< "5 open"
    """
    with reported(BAD_INPUT):
        seed = _seed_of(seed_yaml, task_yaml)
        task = load_task(task_yaml, seed)
        state = _read_state(state_file) if state_file else None
        if task.facts and answer_file is None:
            raise NotScorable(f"task {task.id} is scored on the final answer: give --answer")
        answer = answer_file.read() if answer_file else None
        seeded = _read_state(seeded_file) if seeded_file else None
        verdict = check_task(task, state=state, answer=answer, seed=seed or _task_seed(task),
                             user=user, self_review=self_review, seeded=seeded)
    _print(verdict.to_dict())
    ctx.exit(0 if verdict.passed else EXIT_FAILED)


def example_answer(facts) -> str:
    """An answer holding every fact (its first rendering): what a perfect run reports."""
    return "\n".join(fact["any_of"][0] for fact in facts)


def _read_state(file) -> dict:
    """The JSON of file, checked against the RepoState schema."""
    try:
        state = json.load(file)
    except json.JSONDecodeError as error:
        raise StateError(f"{file.name}: not JSON: {error}") from None
    mismatch = jsonschema.exceptions.best_match(_state_validator().iter_errors(state))
    if mismatch is not None:
        where = "/".join(map(str, mismatch.absolute_path)) or "the top level"
        raise StateError(f"{file.name}: not a RepoState (repo-state.schema.json) at {where}: "
                         f"{mismatch.message}")
    return state


@functools.cache
def _state_validator():
    schema = json.loads((SCHEMA_DIR / "repo-state.schema.json").read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def _seed_of(value: str | None, task_yaml: Path | None):
    """The seed `--seed` names (a name or a file), or None when it names none."""
    if not value:
        return None
    path = seed_given(value, task_yaml or find_root() / "suite.yaml")
    if path is None:
        raise click.BadParameter(f"{value!r} is neither a seed of the tree (seeds/{value}.yaml) "
                                 "nor a seed file", param_hint="--seed")
    return load_seed(path)


def _task_seed(task):
    """seeds/<task.seed>.yaml of the tree the task belongs to."""
    path = seed_path(task.path, task.seed)
    if path is None:
        raise NotScorable(f"seed {task.seed!r} of task {task.id} not found")
    return load_seed(path)


def _default_seed() -> Path:
    return find_root() / "seeds" / "default.yaml"


def _print(value):
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))

"""Read answers scored exactly, through the real checker: an answer that stuffs (every
title, every count) or hedges fails, with a difference naming what it said; honest
context (other counts of other things, issue numbers, lists, versions, the question's
own subject) passes. The forbidden facts are derived from the seed; `forbidden_facts`
in a task replaces them."""

import json
import re

import pytest
from click.testing import CliRunner
from conftest import CHECKOUT

from benchkit.cli import main
from benchkit.documents import load_seed
from benchkit.documents.answer_key import answer_key
from benchkit.documents.task import load_task
from benchkit.scoring import check

SEED = load_seed(CHECKOUT / "seeds" / "default.yaml")
TITLES = ["Fix crash on startup", "Add CSV export option", "Crash when saving large files",
          "Typo in installation docs", "Update README badges", "Crash in export dialog",
          "Improve export performance", "Typo in error message"]
BUGS = ["Fix crash on startup", "Crash when saving large files", "Crash in export dialog"]
NOT_BUG = 'answer names an issue that is not labelled "bug": '
WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def verdict(task_id, answer):
    task = load_task(CHECKOUT / "tasks.d" / f"{task_id}.yaml", {"default": SEED})
    return check(task, answer=answer, seed=SEED, user="bench")


def differences(task_id, answer):
    return verdict(task_id, answer).differences


# ---- R06: every title for "the bug issues' titles" -------------------------------------

@pytest.mark.parametrize("answer", [
    "\n".join(f"- {title}" for title in TITLES),                      # R06 as it was
    "```\n" + "\n".join(TITLES) + "\n```",                            # in a code block
    "| title |\n| --- |\n" + "\n".join(f"| **{t}** |" for t in TITLES),  # a table, in bold
    "; ".join(t.upper() for t in TITLES),                             # shouted, one line
    "\n".join("\u200b".join(t) for t in TITLES),                      # zero-width joined
    "\n".join(t.translate({ord(c): ord(c) + 0xFEE0 for c in "abcdefghijklmnopqrstuvwxyz"})
              for t in TITLES),                                       # full-width letters
    "\n".join(f"\u201c{t}\u201d" for t in TITLES),                    # curly quotes
])
def test_every_title_for_the_bug_titles_fails_naming_each_other_issue(answer):
    assert differences("read-bug-issue-titles", answer) == [
        NOT_BUG + json.dumps(title) for title in TITLES if title not in BUGS]


def test_the_bug_titles_and_honest_context_pass_and_one_extra_title_fails():
    honest = ('The issues labelled "bug" (#1, #3 open; #6 closed):\n'
              "1. Fix crash on startup\n2. Crash when saving large files\n3. Crash in export dialog")
    assert verdict("read-bug-issue-titles", honest).passed
    hedged = honest + "\n\nPossibly also: Improve export performance"
    assert differences("read-bug-issue-titles", hedged) == [NOT_BUG + '"Improve export performance"']


# ---- R07: every count for "how many issues are open" ------------------------------------

COUNT = "read-open-issue-count"


@pytest.mark.parametrize("answer, first", [
    (", ".join(f"{n} open" for n in range(10)), '0 ("0 open")'),           # R07 as it was
    (" ".join(f"{w} open" for w in WORDS), '0 ("zero open")'),            # spelled
    ("5 open\n6 open", '6 ("6 open")'),                                   # separate lines
    ("There are 5 issues open.\n\nCorrection: 6 issues are open.", '6 ("6 issues are open")'),
    ("**5** open. `6` open.", '6 ("6 open")'),                            # dressed
    ("open issues: 5\nopen issues: 6", '6 ("open issues: 6")'),
    ("5 or 6 open issues", '6 ("6 open")'),
    ("5-6 open issues", '6 ("6 open")'),
    ("Open: 5 (twenty-one open if you count drafts)", '21 ("twenty-one open")'),
])
def test_another_count_fails_naming_it(answer, first):
    found = differences(COUNT, answer)
    assert f"answer gives another count: {first}" in found, found


@pytest.mark.parametrize("answer, hedge", [
    ("5 open, or maybe 6", "or maybe 6"),
    ("There are 5 open issues (perhaps six).", "perhaps six"),
    ("About 5 open issues.", "about 5"),
    ("At least 5 issues are open.", "at least 5"),
])
def test_a_hedged_count_fails(answer, hedge):
    assert differences(COUNT, answer) == [f"answer hedges the count: {json.dumps(hedge)}"]


@pytest.mark.parametrize("answer", [
    "There are 5 open issues.",
    "5 open (of 8 issues)",
    "5 open issues: #1, #2, #3, #4 and #7.",
    "5 open issues and 3 open pull requests; 3 issues are closed, 11 in total.",
    "5 open issues, 2 open bugs among them.",
    "Issue" + " 7 is open, and 5 issues are open in all.",  # in pieces: no citation
    "Open issues:\n1. Fix crash on startup\n2. Add CSV export option\n\nThat is 5 open.",
    "| # | title |\n| --- | --- |\n| 1 | Fix crash on startup |\n| 7 | Improve export performance |\n\n5 open",
    "5 issues are currently open (Gitea 1.26.0, as of 2026-01-05 12:30).",
    "5 open issues, or 11 counting pull requests.",
    "Five open.",
])
def test_honest_context_around_the_count_passes(answer):
    assert verdict(COUNT, answer).passed, differences(COUNT, answer)


def test_a_count_of_something_else_is_no_count_of_issues():
    assert differences(COUNT, "5 open pull requests")[0].startswith("answer lacks required fact")


# ---- labels, states, texts ---------------------------------------------------------------

def test_other_labels_and_states_fail_and_the_issues_own_title_shelters_them():
    task = "read-issue-labels-and-state"
    assert verdict(task, 'Issue #3 "Crash when saving large files" carries bug and priority; open.').passed
    assert differences(task, "Labels: bug, priority, enhancement, documentation. State: open/closed.") == [
        'answer names another label: "enhancement"', 'answer names another label: "documentation"',
        'answer names another state: "closed"']


def test_another_comment_in_the_review_body_fails():
    answer = "Looks good overall, though the error handling could be tightened. Ready for review."
    assert differences("read-review-body", answer) == [
        'answer names another comment or review: "Ready for review."']


def test_the_bonus_diff_names_its_own_file_only():
    assert verdict("bonus-pull-diff", "export.txt adds: CSV export implementation notes.").passed
    assert differences("bonus-pull-diff", "export.txt, fix.txt, docs.txt: CSV export implementation "
                       "notes.") == ['answer names another file: "fix.txt"',
                                     'answer names another file: "docs.txt"']


@pytest.mark.parametrize("answer, passed", [
    ('checks: "0 passed, 0 failed — this PR has no CI checks configured"', True),
    ('No CI checks: 0 statuses, combined state "pending".', True),
    ("All checks passed.", False),
    ("There are no checks, or maybe they are failing.", False),
])
def test_the_checks_answer_says_there_are_none(answer, passed):
    assert verdict("bonus-pull-checks", answer).passed is passed


# ---- a 1 MiB answer ------------------------------------------------------------------------

def test_a_megabyte_of_near_misses_is_judged_and_named():
    """Digits, number words, hedge words and title fragments with nothing to claim: the
    key finds what is there (its time: benchmarks/checker_bench.py)."""
    filler = ("5 or maybe 6 issues, nine issues opened, Add CSV export optio " * 20000)[:1 << 20]
    assert differences(COUNT, filler + ". 5 open") == ['answer hedges the count: "or maybe 6"']


# ---- the derivation, shown and replaced -----------------------------------------------------

@pytest.fixture
def tree(tree_copy, monkeypatch):
    monkeypatch.chdir(tree_copy)
    monkeypatch.setenv("BENCHKIT_ROOT", str(tree_copy))
    return tree_copy


def run(*args, stdin=None):
    result = CliRunner().invoke(main, [str(a) for a in args], input=stdin, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_expect_prints_the_forbidden_facts_derived_from_the_seed(tree):
    code, out, _ = run("expect", "tasks.d/read-bug-issue-titles.yaml")
    key = json.loads(out)
    assert code == 0 and key["forbidden_derived"] is True
    assert [f["any_of"] for f in key["forbidden_facts"]] == [[t] for t in TITLES if t not in BUGS]
    code, out, _ = run("expect", "tasks.d/read-open-issue-count.yaml")
    assert json.loads(out)["counts"][0]["value"] == 5


def test_forbidden_facts_replace_the_derivation(tree):
    path = tree / "tasks.d" / "read-bug-issue-titles.yaml"
    path.write_text(path.read_text() + "forbidden_facts:\n  - any_of: [\"Typo\"]\n"
                    "    says: an issue that is a typo\n")
    code, out, _ = run("check", path, "--answer", "-", stdin="\n".join([*BUGS, "Add CSV export option"]))
    assert code == 0, out  # the derived ones are gone
    code, out, _ = run("check", path, "--answer", "-", stdin="\n".join([*BUGS, "Typo in error message"]))
    assert (code, json.loads(out)["differences"]) == (1, ['answer names an issue that is a typo: "typo"'])
    path.write_text(re.sub(r"forbidden_facts:.*", "forbidden_facts: []\n", path.read_text(), flags=re.S))
    code, out, _ = run("check", path, "--answer", "-", stdin="\n".join(TITLES))
    assert code == 0, out  # nothing forbidden: stuffing passes, as the author chose


@pytest.mark.parametrize("fact, line, message", [
    ('{any_of: ["5 open", "6 open"]}', 5, "a count's renderings disagree on its number: 5, 6"),
    ('{any_of: ["5 open", "all open"]}', 5, "a count's renderings must each hold its number once"),
    ('{any_of: ["5 open"], pattern: "\\\\d open"}', 5, "a count's pattern must hold its number (5) once"),
])
def test_a_count_it_cannot_read_is_rejected_at_its_line(tree, fact, line, message):
    path = tree / "tasks.d" / "read-count-draft.yaml"
    path.write_text(f"id: read-count-draft\ntier: read\nintent: How many are open?\nfacts:\n  - {fact}\n")
    code, _, err = run("validate", path)
    assert code == 2 and f"{path.name}:{line}: {message}" in err, err


def test_every_shipped_read_keys_without_a_problem():
    for path in sorted((CHECKOUT / "tasks.d").glob("*.yaml")):
        task = load_task(path, {"default": SEED})
        if task.facts:
            assert answer_key(task.data, SEED).required, task.id

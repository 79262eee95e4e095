"""Read answers as an honest model writes them, through the real checker: for every
scored read task and every bonus task with facts, ten or more correct answers in ordinary
phrasing (issue numbers, totals, closed counts, pull requests, tables, code blocks,
negations) pass, and realistic wrong ones fail. A count hedged after its number
(`5 or more`) or by a sign (`approx. 5`, `≈5`) fails as `about 5` does."""

import pytest
from conftest import CHECKOUT

from benchkit.documents import load_seed
from benchkit.documents.task import load_task
from benchkit.scoring import check

SEED = load_seed(CHECKOUT / "seeds" / "default.yaml")
TASKS = {}


def differences(task_id, answer):
    if task_id not in TASKS:
        TASKS[task_id] = load_task(CHECKOUT / "tasks.d" / f"{task_id}.yaml", {"default": SEED})
    return check(TASKS[task_id], answer=answer, seed=SEED, user="bench").differences


LIST = ("1. #1 Fix crash on startup\n2. #2 Add CSV export option\n3. #3 Crash when saving large "
        "files\n4. #4 Typo in installation docs\n5. #7 Improve export performance")
CORRECT = {
    "read-open-issue-count": [
        "There are **5 open issues** in this repository.",
        "The repository currently has 5 open issues: #1, #2, #3, #4, and #7.",
        "Currently, 5 of the 8 issues are open.",
        "5 out of 8 issues are open (3 are closed); the 3 open pull requests are not counted.",
        "| State | Count |\n|---|---|\n| Open | 5 |\n| Closed | 3 |",
        "The open issue count is 5.",
        "**Answer: 5 open issues**\n\n" + LIST,
        "There are 5 open issues. In total there are 8 issues, of which 3 are closed, and "
        "there are 3 open pull requests (#9, #10, #11).",
        "Open issues: 5\n\nIssues #5, #6 and #8 are closed.",
        "There are five open issues in this repository.",
        "There are 5 open issues: issues 1, 2, 3, 4 and 7 are open.",
        "Issues 1-4 and 7 are open, so 5 issues are open.",
        "There are 5 open issues (not 8 open issues: pull requests are not issues).",
    ],
    "read-bug-issue-titles": [
        'The issues labelled "bug" are:\n\n1. **Fix crash on startup** (#1, open)\n'
        "2. **Crash when saving large files** (#3, open)\n3. **Crash in export dialog** (#6, closed)",
        "There are 3 issues with the `bug` label (2 open, 1 closed):\n- #1 Fix crash on startup\n"
        "- #3 Crash when saving large files\n- #6 Crash in export dialog",
        "| # | Title | State |\n|---|---|---|\n| 1 | Fix crash on startup | open |\n"
        "| 3 | Crash when saving large files | open |\n| 6 | Crash in export dialog | closed |",
        "Titles of issues labelled bug:\n```\nFix crash on startup\nCrash when saving large files\n"
        "Crash in export dialog\n```",
        'All 3 bug issues:\n* "Fix crash on startup"\n* "Crash when saving large files"\n'
        '* "Crash in export dialog"\n\nThe pull request "Fix startup crash" (#10) is not an issue.',
        "The 3 issues with the bug label, out of 8 issues total, are Fix crash on startup (open), "
        "Crash when saving large files (open, also labelled priority), and Crash in export "
        "dialog (closed).",
        "Bug-labelled issues (including closed): Fix crash on startup; Crash when saving large "
        "files; Crash in export dialog.",
        "Issues labelled **bug**:\n- #1: Fix crash on startup (state: open, assignee: bench)\n"
        "- #3: Crash when saving large files (labels: bug, priority)\n- #6: Crash in export "
        "dialog (state: closed)",
        "Here are the titles:\n\n1. Fix crash on startup\n2. Crash when saving large files\n"
        "3. Crash in export dialog\n\nTwo are open (#1, #3) and one is closed (#6).",
        "I found three issues carrying the \u201cbug\u201d label: Fix crash on startup, "
        "Crash when saving large files and Crash in export dialog.",
    ],
    "read-issue-labels-and-state": [
        'Issue #3 "Crash when saving large files" carries the labels **bug** and **priority**, '
        "and it is **open**.",
        "Labels: `bug`, `priority`\nState: open",
        "It has two labels, bug and priority, and its state is open (it has not been closed).",
        "The issue is open, not closed. Labels: bug, priority.",
        "| Field | Value |\n|---|---|\n| Labels | bug, priority |\n| State | open |",
        'Issue #3 is currently open and is labelled "bug" and "priority". It is assigned to bench.',
        "The issue carries 2 labels: bug (d73a4a) and priority (b60205). Status: open.",
        "**Crash when saving large files** (#3)\n\nLabels: bug, priority\nStatus: OPEN",
        "It's open, with the labels bug and priority; it isn't closed and has no enhancement label.",
        "Labels on issue #3: bug, priority. The issue is open (state: \"open\"), with 0 comments.",
    ],
    "read-review-body": [
        'The review on pull request #10 "Fix startup crash" says:\n\n> Looks good overall, '
        "though the error handling could be tightened.",
        'Review body: "Looks good overall, though the error handling could be tightened."',
        "There is one review on PR #10, a comment review by bench, with the body:\n\n```\n"
        "Looks good overall, though the error handling could be tightened.\n```",
        "The review (state: COMMENT) reads: Looks good overall, though the error handling "
        "could be tightened.",
        "**Review body:** Looks good overall, though the error handling could be tightened.\n\n"
        "The review has no inline comments.",
        "PR #10 has 1 review. Its body is: *\"Looks good overall, though the error handling "
        "could be tightened.\"* (reviewer: bench)",
        "The reviewer wrote: Looks good overall, though the error handling could be tightened",
        "| Reviewer | State | Body |\n|---|---|---|\n| bench | COMMENT | Looks good overall, "
        "though the error handling could be tightened. |",
        'The only review says "Looks good overall, though the error handling could be '
        'tightened." The pull request description says "Guards the startup path that was '
        'throwing on a fresh launch."',
        "The body of the review left on Fix startup crash: \u201cLooks good overall, though the "
        "error handling could be tightened.\u201d",
    ],
    "bonus-search-crash": [
        'Searching issues for "crash" matches 3 issues:\n\n1. #1 Fix crash on startup\n'
        "2. #3 Crash when saving large files\n3. #6 Crash in export dialog (closed)",
        'The full-text search for "crash" returned these issues:\n- Fix crash on startup\n'
        "- Crash when saving large files\n- Crash in export dialog\n\n(The pull request "
        '"Fix startup crash" also matched, but it is a pull request.)',
        '3 issues match "crash": Fix crash on startup (#1), Crash when saving large files '
        "(#3), Crash in export dialog (#6).",
        "| # | Title | State |\n|---|---|---|\n| 1 | Fix crash on startup | open |\n"
        "| 3 | Crash when saving large files | open |\n| 6 | Crash in export dialog | closed |",
        "Matching issues:\n- **Fix crash on startup**: \"The app crashes immediately on a fresh "
        "launch.\"\n- **Crash when saving large files**: \"Saving a file over about 100 MB "
        "reliably crashes the editor.\"\n- **Crash in export dialog**: \"Opening the export "
        "dialog twice crashes the app.\"",
        "Search results for 'crash' (3 issues, open and closed):\nFix crash on startup\n"
        "Crash when saving large files\nCrash in export dialog",
        "The search found 3 matching issues out of 8: Fix crash on startup, Crash when saving "
        "large files and Crash in export dialog.",
        "Found: `Fix crash on startup`, `Crash when saving large files`, `Crash in export dialog`.",
        'The issues whose text contains "crash" are #1 "Fix crash on startup", #3 "Crash when '
        'saving large files" and #6 "Crash in export dialog". All three are labelled bug.',
        "Issues matching \"crash\":\n1. Fix crash on startup (open, bug)\n2. Crash when saving "
        "large files (open, bug, priority)\n3. Crash in export dialog (closed, bug)",
    ],
    "bonus-pull-diff": [
        "The pull request changes one file, `export.txt`, and adds a single line:\n\n```\n"
        "CSV export implementation notes.\n```",
        "Diff of #9:\n```diff\ndiff --git a/export.txt b/export.txt\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/export.txt\n@@ -0,0 +1 @@\n+CSV export implementation notes.\n```",
        "File changed: export.txt (new file, +1 \u22120)\nLine added: CSV export implementation notes.",
        'The PR "Implement CSV export" touches 1 file (export.txt), adding the line: CSV '
        "export implementation notes",
        "**File:** `export.txt`\n**Added line:** `+CSV export implementation notes.`",
        'It changes export.txt; the added line is "CSV export implementation notes." '
        "(1 addition, 0 deletions).",
        '- File: export.txt\n- Added: "CSV export implementation notes"',
        "The diff adds a new file export.txt with one line, CSV export implementation notes.",
        "It creates export.txt containing the line `CSV export implementation notes`.",
        "Changed file: export.txt. Added line: 'CSV export implementation notes.'",
    ],
    "bonus-pull-checks": [
        'There are no CI checks on the pull request "Fix startup crash": its head commit has '
        "no commit statuses.",
        "No CI checks have run on PR #10, so nothing has passed or failed.",
        "The PR has no status checks. Gitea reports the combined status as `pending` with 0 "
        "statuses (total_count: 0), which just means no CI is configured.",
        "**CI status:** none \u2014 there are no checks configured for this pull request "
        "(0 passed, 0 failed).",
        "No checks. There is no CI configured on this repository, so there are no statuses "
        "to report \u2014 neither passing nor failing.",
        "There are no CI checks for this PR: the commit status API returns an empty list, so "
        "there's no success or failure to report.",
        "The pull request has no commit statuses. No CI checks are configured, so there is "
        "nothing to pass or fail.",
        'State "pending", total_count 0, statuses []: in other words there are no CI checks.',
        "No checks have passed or failed: there are no CI checks on this pull request.",
        'checks: "0 passed, 0 failed \u2014 this PR has no CI checks configured"',
    ],
}
WRONG = {
    "read-open-issue-count": ["There are 6 open issues.", "There are 8 open issues (including "
                              "pull requests).", "Open issues: 4", "There are 5 or 6 open issues.",
                              "I could not determine the count.", "6 of the 8 issues are open.",
                              "There are not 5 open issues."],
    "read-bug-issue-titles": ["Fix crash on startup\nCrash when saving large files",
                              "Fix crash on startup, Crash when saving large files, Crash in "
                              "export dialog, Typo in error message"],
    "read-issue-labels-and-state": ["Labels: bug, priority. State: closed.",
                                    "Labels: bug, priority, enhancement. State: open.",
                                    "Labels: bug, priority. It is not open.",
                                    "Labels: bug, priority; not open, not closed."],
    "read-review-body": ["Ready for review.", "The review says: Looks good overall."],
    "bonus-search-crash": ["Fix crash on startup, Crash when saving large files",
                           "Fix crash on startup\nCrash when saving large files\nCrash in "
                           "export dialog\nTypo in error message"],
    "bonus-pull-diff": ["It changes fix.txt, adding Startup crash fix notes.",
                        "export.txt, docs.txt: CSV export implementation notes."],
    "bonus-pull-checks": ["All CI checks passed.", "There are no checks. The build passed.",
                          "No checks ran; all checks passed or failed.", "The checks failed."],
}


@pytest.mark.parametrize("task_id, answer", [
    (task_id, answer) for task_id, answers in CORRECT.items() for answer in answers])
def test_a_correct_answer_in_ordinary_phrasing_passes(task_id, answer):
    assert differences(task_id, answer) == []


@pytest.mark.parametrize("task_id, answer", [
    (task_id, answer) for task_id, answers in WRONG.items() for answer in answers])
def test_a_realistic_wrong_answer_fails(task_id, answer):
    assert differences(task_id, answer) != []


@pytest.mark.parametrize("answer, hedge", [
    ("5 or more open issues", "5 or more"),
    ("There are 5 open issues, possibly more.", "5 open issues, possibly more"),
    ("There are 5 open issues (maybe more).", "5 open issues (maybe more"),
    ("approx. 5 open issues", "approx. 5"),
    ("\u22485 open issues", "\u22485"),
    ("5 open issues or so", "5 open issues or so"),
])
def test_a_count_hedged_after_or_before_its_number_fails(answer, hedge):
    assert differences("read-open-issue-count", answer) == [f'answer hedges the count: "{hedge}"']


def test_a_negated_item_neither_holds_a_fact_nor_breaks_one():
    """Symmetric: a stuffing of negations is the stuffing with them deleted."""
    task = "read-issue-labels-and-state"
    assert differences(task, "Labels: bug, priority, not enhancement. It is open, not closed.") == []
    assert differences(task, "Labels: bug, priority. Not open, not closed.") == [
        'answer lacks required fact: "open"']
    assert differences(task, "Labels: never bug, priority; open.") == [
        'answer lacks required fact: "bug"']

"""`benchkit validate` checks refs.d/ against its tree, through the real command: a
reference naming an unknown task, a step its arm's tool kind cannot take, or another
arm than its file's name is a FILE:LINE problem."""

# The validate tests' command and line helpers.
from test_documents_validate import benchkit, edit, line_of


def test_the_shipped_references_are_valid_against_their_tree(work_tree):
    assert benchkit("validate").exit_code == 0
    assert benchkit("validate", "refs.d").exit_code == 0


def test_a_reference_naming_an_unknown_task_is_a_problem_at_its_line(work_tree):
    path = work_tree / "refs.d" / "raw-api.yaml"
    edit(path, "  read-bug-issue-titles:\n", "  read-bug-issue-titels:\n")
    line = line_of(path, "read-bug-issue-titels:")
    expected = f"refs.d/raw-api.yaml:{line}: no task 'read-bug-issue-titels' in tasks.d/"
    for args in ((), ("refs.d/raw-api.yaml",)):  # the whole tree, and the file alone
        result = benchkit("validate", *args)
        assert result.exit_code == 2
        assert expected + " (at tasks.read-bug-issue-titels)\n" in result.stderr


def test_an_mcp_step_in_a_shell_arms_reference_is_a_problem_at_its_line(work_tree):
    path = work_tree / "refs.d" / "raw-api.yaml"
    text = path.read_text()
    start = text.index("  close-csv-export-issue:\n")
    first_step = text.index("      - run:", start)
    path.write_text(text[:first_step] + "      - tool: mcp__gitea__edit_issue\n"
                    "        input: {index: 2, state: closed}\n" + text[first_step:])
    result = benchkit("validate")
    assert result.exit_code == 2
    line = line_of(path, "- tool: mcp__gitea__edit_issue")
    assert f"refs.d/raw-api.yaml:{line}: a shell arm's step is {{run: COMMAND}}" in result.stderr


def test_a_reference_for_another_arm_than_its_file_is_a_problem(work_tree):
    path = work_tree / "refs.d" / "tea.yaml"
    edit(path, "arm: tea\n", "arm: raw-api\n")
    result = benchkit("validate")
    assert result.exit_code == 2
    assert (f"refs.d/tea.yaml:{line_of(path, 'arm: raw-api')}: names arm 'raw-api', "
            "but tea.yaml is read for arm 'tea'") in result.stderr


def test_a_test_arms_reference_is_checked_for_tasks_though_its_arm_lives_elsewhere(work_tree):
    # refs.d/gitea-mcp-pypi.yaml belongs to tests/arms/: no kind to check, tasks still are.
    path = work_tree / "refs.d" / "gitea-mcp-pypi.yaml"
    edit(path, "  read-open-issue-count:\n", "  read-open-issues-count:\n")
    result = benchkit("validate")
    assert result.exit_code == 2
    assert f"refs.d/gitea-mcp-pypi.yaml:{line_of(path, 'read-open-issues-count:')}: no task" \
        in result.stderr


# --- a reference that takes another arm's tasks (the tool search arm's) ----------------

SEARCH = "refs.d/gitea-mcp-search.yaml"


def test_a_reference_that_takes_another_arms_tasks_must_name_one_with_tasks_of_its_own(
        work_tree):
    path = work_tree / SEARCH
    edit(path, "from: gitea-mcp\n", "from: gitea-mcp-nowhere\n")
    result = benchkit("validate")
    assert result.exit_code == 2
    assert f"{SEARCH}:{line_of(path, 'from: gitea-mcp-nowhere')}: no reference " \
           "gitea-mcp-nowhere.yaml beside it" in result.stderr
    edit(path, "from: gitea-mcp-nowhere\n", "from: gitea-mcp-search\n")
    assert "a reference cannot take its own tasks" in benchkit("validate").stderr
    # a chain: gitea-mcp-pypi's own file now takes its tasks from elsewhere too
    other = work_tree / "refs.d" / "gitea-mcp-pypi.yaml"
    other.write_text("arm: gitea-mcp-pypi\nverified: true\nfrom: gitea-mcp\n")
    edit(path, "from: gitea-mcp-search\n", "from: gitea-mcp-pypi\n")
    result = benchkit("validate")
    assert result.exit_code == 2
    assert (f"{SEARCH}:{line_of(path, 'from: gitea-mcp-pypi')}: takes its tasks from "
            "gitea-mcp-pypi.yaml, which takes its own from gitea-mcp.yaml") in result.stderr


def test_a_reference_with_tasks_and_from_both_or_neither_is_a_problem(work_tree):
    path = work_tree / SEARCH
    edit(path, "from: gitea-mcp\n", "")
    result = benchkit("validate")
    assert result.exit_code == 2
    assert "a reference has its own `tasks` or takes another arm's (`from: ARM`), not both" \
        in result.stderr


def test_the_tool_search_of_a_reference_must_be_its_arms(work_tree):
    """An arm behind the tool search needs references that search; an eager arm's
    must not (its guard would deny ToolSearch)."""
    path = work_tree / SEARCH
    edit(path, "search: select\n", "")
    result = benchkit("validate")
    assert result.exit_code == 2
    assert "its arm's tools wait behind the runtime's tool search (tool_search): add " \
           "`search: select`" in result.stderr
    edit(work_tree / "arms.d" / "gitea-mcp-search.yaml", "  tool_search: true\n", "")
    edit(path, "from: gitea-mcp\n", "from: gitea-mcp\nsearch: select\n")
    result = benchkit("validate")
    assert result.exit_code == 2
    assert f"{SEARCH}:{line_of(path, 'search: select')}: its arm's tools are not behind " \
           "the runtime's tool search: no `search`" in result.stderr

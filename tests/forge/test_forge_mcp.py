"""A real client against the forge: the PyPI `gitea-mcp` MCP server, launched over stdio
with the forge's URL and token, lists issues, creates one, comments on it and closes it.
"""

import asyncio
import json

import pytest
import requests
from conftest import CHECKOUT

SERVER = CHECKOUT / ".venvs" / "gitea-mcp" / "bin" / "gitea-mcp"
pytestmark = pytest.mark.skipif(not SERVER.exists(), reason="scripts/test-setup installs the gitea-mcp server")


async def drive(url: str, token: str, steps: list[tuple[str, dict]]) -> list:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=str(SERVER), args=[],
                                   env={"GITEA_URL": url, "GITEA_TOKEN": token, "GITEA_MAX_RETRIES": "0"})
    results = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {tool.name for tool in (await session.list_tools()).tools}
        for name, arguments in steps:
            assert name in tools, f"gitea-mcp has no tool {name}; it has {sorted(tools)}"
            result = await session.call_tool(name, arguments)
            assert not result.is_error, f"{name} failed: {result.content}"
            results.append(result.structured_content or json.loads(result.content[0].text))
    return results


def test_gitea_mcp_lists_creates_comments_and_closes(forge):
    s = requests.Session()
    s.headers["Authorization"] = f"token {forge.token}"
    assert s.post(f"{forge.api_url}/user/repos", json={"name": "mcp", "auto_init": True}).status_code == 201
    s.post(f"{forge.api_url}/repos/bench/mcp/labels", json={"name": "bug", "color": "d73a4a"})
    s.post(f"{forge.api_url}/repos/bench/mcp/issues", json={"title": "Existing issue"})

    repo = {"owner": "bench", "repo": "mcp"}
    listed, created, commented, closed = asyncio.run(drive(forge.url.rstrip("/"), forge.token, [
        ("list_issues", repo),
        ("create_issue", {**repo, "title": "Made over MCP", "body": "via stdio", "labels": ["bug"]}),
        ("add_comment", {**repo, "issue_number": 2, "body": "A comment over MCP"}),
        ("update_issue", {**repo, "issue_number": 2, "state": "closed"}),
    ]))
    listed = listed.get("result", listed)
    assert [issue["title"] for issue in listed] == ["Existing issue"]
    assert created["number"] == 2 and [label["name"] for label in created["labels"]] == ["bug"]

    # The forge's own state, read back over its API.
    issue = s.get(f"{forge.api_url}/repos/bench/mcp/issues/2").json()
    assert (issue["title"], issue["body"], issue["state"]) == ("Made over MCP", "via stdio", "closed")
    assert [label["name"] for label in issue["labels"]] == ["bug"]
    comments = s.get(f"{forge.api_url}/repos/bench/mcp/issues/2/comments").json()
    assert [(c["user"]["login"], c["body"]) for c in comments] == [("bench", "A comment over MCP")]
    # Every request came from the MCP server's HTTP client, and none was refused.
    served = [r for r in forge.requests() if r["user_agent"].startswith("python-httpx/")]
    assert served and all(r["status"] < 400 for r in served)

"""The test arm's references, verified directly: each task's MCP tool calls go to the
PyPI gitea-mcp server over stdio (the `mcp` client), against a freshly seeded forge
repository, and the checker must accept the end state and answer; the calls aimed
at the wrong targets must be rejected. Tasks the server cannot do are declared so."""

import asyncio
import concurrent.futures
import threading

import pytest
import test_refs_raw_api as raw_api  # its verdict: a reference played on a seeded repository
from conftest import CHECKOUT
from shipped import replay_params

from benchkit.documents.reference import load_reference
from benchkit.forge import Forge
from benchkit.gitea import Client

mcp = pytest.importorskip("mcp")
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

SERVER = CHECKOUT / ".venvs" / "gitea-mcp" / "bin" / "gitea-mcp"
TREE, SEED = raw_api.TREE, raw_api.SEED
REFERENCE = load_reference(CHECKOUT / "refs.d" / "gitea-mcp-pypi.yaml", kind="mcp")
PLAYABLE = replay_params(TREE, REFERENCE)

pytestmark = pytest.mark.skipif(not SERVER.exists(), reason="run scripts/test-setup first")


class Session:
    """One server over stdio for the whole module, on an event loop of its own (the
    server is repository-agnostic: every call names owner and repo). The session is
    opened and closed inside one task, as anyio's cancel scopes require."""

    def __init__(self, env: dict):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.opened = concurrent.futures.Future()
        self.closing = asyncio.Event()
        self.served = asyncio.run_coroutine_threadsafe(self._serve(env), self.loop)
        self.session = self.opened.result(timeout=60)

    async def _serve(self, env):
        params = StdioServerParameters(command=str(SERVER), args=[], env=env)
        try:
            async with stdio_client(params) as (read, write), \
                    mcp.ClientSession(read, write) as session:
                await session.initialize()
                self.opened.set_result(session)
                await self.closing.wait()
        except BaseException as error:
            if not self.opened.done():
                self.opened.set_exception(error)
            raise

    def run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=60)

    def call(self, name: str, arguments: dict) -> tuple[str, bool]:
        result = self.run(self.session.call_tool(name, arguments))
        return "\n".join(b.text for b in result.content if b.type == "text"), bool(result.is_error)

    def close(self):
        self.loop.call_soon_threadsafe(self.closing.set)
        self.served.result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def host():
    with Forge() as forge, Client(forge.url, forge.token) as client:
        session = Session({"GITEA_URL": forge.url, "GITEA_TOKEN": forge.token, "PATH": "/usr/bin:/bin"})
        try:
            yield forge, client, session
        finally:
            session.close()


def verdict(task_id, task_ref, forge, client, session):
    """Play the steps as tools/call requests; (the checker's verdict, error results)."""
    def call(step):
        text, is_error = session.call(step.tool.split("__", 2)[2], step.input)
        return text, text if is_error else None
    return raw_api.verdict(task_id, task_ref, forge, client, run_step=call)


@pytest.mark.parametrize("task_id", PLAYABLE)
def test_reference_passes_and_its_wrong_target_variant_fails(task_id, host):
    task_ref = REFERENCE.for_task(task_id)
    result, errors = verdict(task_id, task_ref, *host)
    assert result.passed, (result.differences, errors)
    if task_id == "fta-merge-startup-pull":
        # merge_pr wants a JSON object back; Gitea answers a merge with an empty 200.
        assert len(errors) == 1 and "expected a JSON object" in errors[0]
    else:
        assert errors == []
    result, _ = verdict(task_id, task_ref.retargeted(SEED), *host)
    assert not result.passed


def test_the_unsupported_tasks_are_out_of_the_servers_reach(host):
    """The server's tools (its own listing, not the reference's say-so) offer no review
    and no label creation, which the four unsupported tasks need."""
    session = host[2]
    names = {tool.name for tool in session.run(session.session.list_tools()).tools}
    assert "update_issue" in names and "merge_pr" in names
    assert not [name for name in names if "review" in name or name == "create_label"]
    unsupported = sorted(t for t, ref in REFERENCE.tasks.items() if ref.unsupported)
    assert unsupported == ["fta-review-csv-pull", "fta-review-docs-pull",
                           "ms-create-and-apply-stale", "read-review-body"]

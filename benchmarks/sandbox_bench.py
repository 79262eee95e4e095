"""The cost of confining the agent's shell, measured through the real Claude CLI.

A scripted model asks for N Bash calls in a row; the gap between consecutive requests
of the main model is one tool call's round trip through the CLI (the model answers at
once). Printed: the median gap with the sandbox (bubblewrap, its network namespace and
the socat bridge to a loopback host) and without, and their difference; then the
prefix alone, without the CLI: the median time of one command run through it (its
mounts, the bridge's inner end), less noisy on a loaded machine.

    python3 benchmarks/sandbox_bench.py [CALLS] [ROUNDS]
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from loopback import serve  # the tests' stand-in host, by path

from benchkit.agent.claude import ClaudeDriver
from benchkit.agent.driver import AgentRequest, ToolDecision
from benchkit.agent.scripted import ScriptedModel, bash, say
from benchkit.isolation.sandbox import Sandbox

MODEL = "claude-sonnet-4-5"


def gaps(confine: bool, calls: int, url: str, command: str) -> list[float]:
    """Milliseconds between consecutive main-model requests of one run."""
    script = [bash(command) for _ in range(calls)] + [say("done")]
    with ScriptedModel(script, model=MODEL) as model:
        run = ClaudeDriver(base_url=model.url, confine=confine).run(AgentRequest(
            system_prompt="bench", prompt="bench", model=MODEL, tools=["Bash"], mcp_servers={},
            env={"PATH": "/usr/bin:/bin"}, cwd=None, guard=lambda n, i: ToolDecision(),
            max_turns=calls + 5, backstop_seconds=300, network=url))
        times = [r.at for r in model.messages(auxiliary=False)]
    if run.stop != "end" or run.confined != confine:
        raise SystemExit(f"the run did not end as expected: {run.stop} {run.error}")
    return [(b - a) * 1000 for a, b in zip(times, times[1:])]


def prefix_times(runs: int, url: str, command: str) -> list[float]:
    """Milliseconds of each run of `command` through one sandbox's prefix."""
    with tempfile.TemporaryDirectory() as top:
        root = Path(top)
        times = []
        with Sandbox(root / "box", workdir=root / "work", home=root / "home", tmp=root / "tmp",
                     env={"PATH": "/usr/bin:/bin"}, host_url=url) as box:
            for _ in range(runs):
                started = time.perf_counter()
                subprocess.run([str(box.prefix), command], cwd=root / "work", check=True,
                               capture_output=True)
                times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("calls", type=int, nargs="?", default=20, help="Bash calls per run")
    parser.add_argument("rounds", type=int, nargs="?", default=3, help="runs per condition")
    args = parser.parse_args()
    calls, rounds = args.calls, args.rounds
    server = serve(b"{}")
    url = f"http://127.0.0.1:{server.server_port}"
    print(f"{calls} Bash calls per run, {rounds} runs per condition, interleaved")
    for label, command in (("true", "true"), ("curl to the host", f"curl -s {url}/version")):
        results = {True: [], False: []}
        for _ in range(rounds):
            for confine in (False, True):
                results[confine] += gaps(confine, calls, url, command)
        plain, boxed = (statistics.median(results[c]) for c in (False, True))
        print(f"{label:>17}: median gap between tool calls {plain:6.1f} ms unconfined, "
              f"{boxed:6.1f} ms confined: +{boxed - plain:5.1f} ms per command")
    for label, command in (("true", "true"), ("curl to the host", f"curl -s {url}/version")):
        alone = statistics.median(prefix_times(calls * rounds, url, command))
        print(f"{label:>17}: the prefix alone, {alone:6.1f} ms per command (median of "
              f"{calls * rounds})")
    server.shutdown()


if __name__ == "__main__":
    main()

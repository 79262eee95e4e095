"""What asking an arm's tool its version costs each trial (benchkit.trial.version).

For each arm whose tool is installed: the version command as pre-flight runs it (in the
agent's sandbox for a shell arm, plain for an MCP server), and a trial's probe once the
executable was seen (a stat of the file, the command not run again). Printed: the
median milliseconds of each.

    python3 benchmarks/version_probe_bench.py [--runs N] [--arm ID]...
"""

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import timed

from benchkit.documents import load_tree
from benchkit.installed import tool_path
from benchkit.isolation import IsolationError, assemble
from benchkit.preflight.probe import sandboxed_version, tool_version
from benchkit.trial.version import trial_version

ROOT = Path(__file__).resolve().parents[1]


def measure(arm, tree, runs: int) -> str:
    """The line of one arm: its version command's cost, and a trial's probe's."""
    with tempfile.TemporaryDirectory() as work:
        try:
            assembly = assemble(arm, tree.suite, host_url="http://bench.invalid/",
                                api_url="http://bench.invalid/api/v1", token="bench",
                                owner="bench", repo="bench", user="bench", workdir=Path(work),
                                root=tree.root, search_path=tool_path())
            with assembly:
                shell = arm.tool.kind == "shell"
                command = timed(runs, lambda: sandboxed_version(arm, assembly, Path(work), None)
                                if shell else tool_version(arm, assembly))
                trial_version(arm, assembly, Path(work), confine=True)
                probe = timed(runs, lambda: trial_version(
                    arm, assembly, Path(work), confine=True))
        except IsolationError as error:
            return f"{arm.id:>17}: not installed here ({str(error)[:60]})"
    where = "in the sandbox" if shell else "plain"
    return (f"{arm.id:>17}: version command {command:7.1f} ({where}); a trial's probe of an "
            f"unchanged file {probe:6.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each (median)")
    parser.add_argument("--arm", action="append", help="an arm id (default: every arm)")
    args = parser.parse_args()
    tree = load_tree(ROOT)
    print(f"median of {args.runs} run(s), milliseconds")
    for arm in tree.arms.values():
        if not args.arm or arm.id in args.arm:
            print(measure(arm, tree, args.runs))


if __name__ == "__main__":
    main()

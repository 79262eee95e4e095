"""What asking the runtime what it runs for a model costs (benchkit.agent.model_probe):
a cold probe (the bundled CLI started against a local stand-in of the Messages API,
nothing spent) per name, and the answer kept for the next run (read from the cache
directory), each in a fresh cache of its own. Prints milliseconds, the median of --runs.
Target: a probe under 3 s on a loaded two-core machine, a kept answer under 5 ms.
Asserts nothing.

    python3 benchmarks/model_probe_bench.py [--runs N] [--model NAME]...
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile

from _timing import timed

from benchkit.agent import model_probe


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--model", action="append", dest="models")
    args = parser.parse_args()
    for name in args.models or ["sonnet", "claude-sonnet-4-5", "gpt-4o"]:
        with tempfile.TemporaryDirectory(prefix="benchkit-probe-bench-") as cache:
            os.environ["BENCHKIT_CACHE_DIR"] = cache

            def cold(name=name, cache=cache):
                model_probe._cache.clear()  # nothing kept: the CLI is asked
                shutil.rmtree(os.path.join(cache, "model-probe"), ignore_errors=True)
                return model_probe.resolve(name)

            def kept(name=name):
                model_probe._cache.clear()  # a new process: the answer from the disk
                return model_probe.resolve(name)
            probe_ms = timed(args.runs, cold)
            found = kept()
            kept_ms = timed(args.runs, kept)
        said = found.model if found.refusal() is None else f"refused ({found.model})"
        print(f"{name:<20} -> {said:<28} probe {probe_ms:7.0f} ms   kept {kept_ms:5.2f} ms")


if __name__ == "__main__":
    main()

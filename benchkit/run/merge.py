"""`benchkit merge STORE... --into STORE`: the stores of a sweep's shards (or of any
runs elsewhere) joined into one, as if one run had made them (docs/scale-out.md).

    merge(sources, into)   samples unioned by id, their transcripts and failure
                           replays with them; nothing of the target is rewritten

A sample is its id: one already in the target (or met in an earlier source) is left as
it is, so merging again changes nothing. Each cell's new samples are appended in their
source's order (the order its run wrote them: the newest prompt is the last, as
benchkit.counting reads it), each transcript written before the line that names it.
Trial numbers are what each run gave: shards run disjoint cells, so they never meet;
two samples of one cell and number from elsewhere (two stores that ran the same cell)
are both kept, told apart by their ids and shards, and said in one line. Sources that
ran other documents or tools side by side (a task, arm, seed, tool or runtime, or a
cell's prompt, that differs between their samples) are refused before anything is
written: one line, exit 2. The target's run lock is held throughout, so a run and a
merge on it take turns; journals and intents stay with their stores.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import click

from benchkit.errors import BenchkitError
from benchkit.exits import EXIT_BAD_INPUT
from benchkit.sample import decode_sample
from benchkit.store import FAILURE_REPLAYS, Store, StoreError, Unwritable, writing


class MergeRefused(BenchkitError):
    """The stores cannot be merged: the one line that says why."""


@dataclass
class Line:
    """One sample line of a source, as it is written, and what the merge reads of it."""
    raw: bytes
    sample: dict
    source: Path


@dataclass
class Merged:
    """What a merge did, for its lines."""
    added: dict[Path, int] = field(default_factory=dict)   # source -> new samples
    present: dict[Path, int] = field(default_factory=dict)  # source -> already there
    collisions: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


# What of a sample must agree between sources, keyed by what it belongs to: (label,
# key of the sample, value of the sample).
AGREEING = (
    ("task", lambda s: s["task"], lambda s: (s["fingerprints"]["task"], s["fingerprints"]["seed"])),
    ("tool of arm", lambda s: s["arm"],
     lambda s: (s.get("tool_version"), s.get("tool_surface"), json.dumps(s.get("runtime")))),
    ("arm", lambda s: s["arm"], lambda s: s["fingerprints"]["arm"]),
    ("prompt of cell", lambda s: f"{s['arm']}/{s['task']}", lambda s: s["fingerprints"]["prompt"]),
)


def read_lines(store: Path, problems: list[str]) -> list[Line]:
    """Every sample line of a store, cell file by cell file in append order; a line
    that is not a sample is named in `problems` and left out."""
    lines = []
    for path in Store(store).files():
        for number, raw in enumerate(path.read_bytes().split(b"\n"), 1):
            if not raw.strip():
                continue
            _, problem = decode_sample(raw)
            sample = json.loads(raw) if not problem else {}
            try:
                if sample:
                    Store(store).cell_path(sample["arm"], sample["task"])  # names it can hold
            except StoreError as error:
                problem = str(error)
            if problem:
                problems.append(f"{path}:{number}: not a sample: {problem} (left out)")
                continue
            lines.append(Line(raw, sample, store))
    return lines


def check_agreeing(by_source: dict[Path, list[Line]]) -> None:
    """Raise MergeRefused when two sources ran other documents or tools: per task, arm
    and cell, the newest of each source's own samples (those no other source holds:
    a store's shared history may span versions) must agree."""
    holders: dict[str, int] = defaultdict(int)
    for lines in by_source.values():
        for sample_id in {line.sample["id"] for line in lines}:
            holders[sample_id] += 1
    for what, key, value in AGREEING:
        seen: dict[str, tuple] = {}  # key -> (value, source) of the first source's newest
        for source, lines in by_source.items():
            newest: dict[str, dict] = {}
            for line in lines:
                if holders[line.sample["id"]] == 1:
                    k = key(line.sample)
                    if k not in newest or line.sample["started_at"] >= newest[k]["started_at"]:
                        newest[k] = line.sample
            for k, sample in newest.items():
                got = value(sample)
                first = seen.setdefault(k, (got, source))
                if first[0] != got:
                    raise MergeRefused(
                        f"cannot merge: the {what} {k} ran as {_shown(first[0])} in {first[1]} "
                        f"and as {_shown(got)} in {source}: the stores of one sweep must run "
                        f"the same documents and tools; nothing was merged")


def _shown(value) -> str:
    parts = value if isinstance(value, tuple) else (value,)
    return "/".join(str(part)[:40] for part in parts)


def merge(sources: list[Path], into: Path) -> Merged:
    """Merge the sources' samples (transcripts, failure replays) into `into`. Raises
    MergeRefused (nothing written) or Unwritable."""
    done, by_source = Merged(), {}
    for source in sources:
        by_source[source] = read_lines(source, done.problems)
    check_agreeing(by_source)
    target = Store(into)
    target.check_writable()
    with target.run_lock():
        held = list(target.samples())
        have = {sample["id"] for sample in held}
        numbers = {(s["arm"], s["task"], s.get("trial", 0)): s for s in held}
        for source, lines in by_source.items():
            done.added[source] = done.present[source] = 0
            for line in lines:
                sample = line.sample
                if sample["id"] in have:
                    done.present[source] += 1
                    continue
                _collision(numbers, sample, done)
                _copy_transcript(source, into, sample)
                target.append_line(target.cell_path(sample["arm"], sample["task"]),
                                   line.raw.decode())
                have.add(sample["id"])
                done.added[source] += 1
            _merge_failure_replays(source, target)
    return done


def _collision(numbers: dict, sample: dict, done: Merged) -> None:
    cell = (sample["arm"], sample["task"], sample.get("trial", 0))
    other = numbers.setdefault(cell, sample)
    if other is not sample:
        done.collisions.append(
            f"note: {cell[0]} {cell[1]} trial {cell[2]} is two samples, {other['id'][:12]} "
            f"(shard {other.get('shard') or 'none'}) and {sample['id'][:12]} (shard "
            f"{sample.get('shard') or 'none'}): told apart by their ids")


def _copy_transcript(source: Path, into: Path, sample: dict) -> None:
    """The sample's transcript, put in place whole before its line is appended: only
    from where a store writes it (a sample may name a journal, an intent or an arm
    document of its store as its transcript: the next run and `gc` act on those), and
    only a file inside the source (a link may lead anywhere on this machine)."""
    relative = sample.get("transcript")
    try:
        written = Store(source).transcript_path(sample["arm"], sample["task"], sample["id"])
    except StoreError:
        return
    if relative != written.relative_to(source).as_posix():
        return
    origin, target = written, into / relative
    if not (origin.is_file() and _inside(origin, source)) or target.exists():
        return
    with writing(target):
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".merging")
        shutil.copyfile(origin, partial)
        os.replace(partial, target)


def _inside(path: Path, root: Path) -> bool:
    """Whether `path`, every link on the way followed, lies inside `root`."""
    return os.path.realpath(path).startswith(os.path.realpath(root) + os.sep)


def _merge_failure_replays(source: Path, target: Store) -> None:
    """The source's failure replays' verdicts the target lacks, line for line."""
    try:
        theirs = (source / FAILURE_REPLAYS).read_bytes().split(b"\n")
    except FileNotFoundError:
        return
    path = target.failure_replays_path
    ours = set(path.read_bytes().split(b"\n")) if path.exists() else set()
    for line in theirs:
        if line.strip() and line not in ours:
            target.append_line(path, line.decode())
            ours.add(line)


@click.command()
@click.argument("stores", metavar="STORE...", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False))
@click.option("--into", "into", required=True, type=click.Path(file_okay=False),
              metavar="STORE", help="The store to merge into (made if need be; what it "
                                    "holds is kept).")
@click.pass_context
def merge_command(ctx: click.Context, stores, into):
    """Merge stores (a sweep's shards) into one: samples unioned by id.

    Their transcripts and failure replays come along; what the target holds is kept,
    and merging again changes nothing. Stores whose samples ran other documents or tools
    side by side (a task, arm, tool or prompt) are refused, with nothing written.

    Exit 0 merged, 2 refused or a store that cannot be read or written.

    \b
    Example:
      benchkit merge shard-0 shard-1 shard-2 --into results && benchkit report
    """
    target = Path(into).resolve()
    sources = list(dict.fromkeys(Path(s) for s in stores if Path(s).resolve() != target))
    try:
        done = merge(sources, Path(into))
    except (MergeRefused, Unwritable) as error:
        click.echo(f"error: {error}", err=True)
        ctx.exit(EXIT_BAD_INPUT)
    for line in done.problems + done.collisions:
        click.echo(line, err=True)
    for source in sources:
        click.echo(f"{source}: {done.added[source]} new sample(s), {done.present[source]} "
                   f"already in {into}")
    click.echo(f"merged {sum(done.added.values())} new sample(s) into {into}", err=True)

"""What the agent runtime makes of a model name, asked of the runtime itself.

The bundled Claude Code CLI resolves `--model` on its own, before its first request:
an alias to a full id (`sonnet` runs as `claude-sonnet-5-5`), some full ids to another
model (`claude-opus-4-1` runs as `claude-opus-5-5`), and a name it does not know it
sends on as given (`gpt-4o`), saying `unrecognized_model` on stderr and pricing it at
no list price (its result's `costBasis` is "unknown", not "list"). So what a trial
runs is the runtime's answer, not what was typed.

The probe starts the real CLI with the name, against a local stand-in of the Messages
API (the scripted model, benchkit.agent.scripted) with a dummy key and a throwaway
home and config: nothing leaves the machine, nothing is spent. It reads the model the
CLI's init message names, the model and `max_tokens` of its first agent request (the
bound benchkit.agent.accounting holds each request's output to), and how its result
prices the model. The environment is the caller's, so what changes the CLI's
resolution (ANTHROPIC_MODEL, ANTHROPIC_DEFAULT_*_MODEL, CLAUDE_CODE_MAX_OUTPUT_TOKENS)
changes the probe's alike; credentials and provider switches are left out.

The rule (docs/models.md):

    runs      the runtime keeps the name and prices it at list price
    resolved  an alias (a name that pins no version: letters alone, as `sonnet`,
              `opus`, `haiku`, `best`, with an optional `[...]` option) it resolved
              to a full id it prices: runs as that id, and is recorded so
    replaced  a name that pins a version, run as another model: refused
    unknown   a model the runtime does not price (not a Claude model it knows):
              refused

A run probes its model once (`resolve`) and says how long that took. The answer is
kept for the process and under the cache directory ($BENCHKIT_CACHE_DIR), keyed on the
CLI's file (path, inode, size, modification time: an upgrade is another CLI), the name
and every ANTHROPIC_* and CLAUDE_* variable the probe passes on (a superset of what
changes the CLI's choice, such as CLAUDE_CODE_DISABLE_LEGACY_MODEL_REMAP): the same CLI
answers the same, and nothing of an account enters the probe. An alias is probed twice:
the trials ask for the full id it resolves to, so that id must run as itself too (an
ANTHROPIC_DEFAULT_SONNET_MODEL of an id the runtime replaces is refused).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import msgspec

from benchkit import cache_dir
from benchkit.errors import BenchkitError
from benchkit.lifetime import dies_with_thread

from .runtime import bundled_cli, installed_runtime
from .scripted import ScriptedModel, say

PROBE_TIMEOUT_SECONDS = 60
PROBE_KEY = "sk-ant-benchkit-model-probe"
UNRECOGNIZED = "unrecognized_model"  # the CLI's stderr tag for a model it does not know
LIST_PRICE = "list"                  # the CLI's costBasis for a model it prices
# What the probe leaves out of the caller's environment: credentials, and whatever
# sends the CLI's requests anywhere but the stand-in (a provider, a gateway, a socket, a
# proxy; by pattern, as the CLI adds providers): the probe must reach nothing but it.
_LEFT_OUT = re.compile(r"CLAUDE_CODE_USE_\w+|CLAUDE_CODE_(?:OAUTH|GATEWAY|API_KEY)\w*|"
                       r"ANTHROPIC_(?:BEDROCK|VERTEX|FOUNDRY|AWS|IDENTITY)\w*|"
                       r"ANTHROPIC_(?:API_KEY|AUTH_TOKEN|UNIX_SOCKET|CUSTOM_HEADERS)|"
                       r"AWS_\w+|GOOGLE_\w+|CLOUD_ML_REGION|(?i:https?_proxy|all_proxy)")
# What keys the cache: every ANTHROPIC_* and CLAUDE_* variable the probe passes on
# (whatever of them changes the CLI's choice), but those it sets itself.
_RESOLVING = re.compile(r"(?:ANTHROPIC|CLAUDE)_\w+|MAX_THINKING_TOKENS")
_OWN = ("ANTHROPIC_BASE_URL", "CLAUDE_CONFIG_DIR")
_QUIET = {"DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
          "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1"}
_ALIAS = re.compile(r"[a-z]+(\[[^\]]*\])?")
# A name as the runtime's ids and aliases are written. Anything else is never handed to
# the CLI: it prices a name by a part of it ("claude-sonnet-4-5?x=1", "Claude-Sonnet-4-5")
# and sends it on, for the model service to refuse in every trial.
_NAME = re.compile(r"[a-z0-9][a-z0-9.\-]*(\[[^\]\s]*\])?")


class Resolution(msgspec.Struct, frozen=True, kw_only=True):
    """The runtime's answer for one model name."""

    given: str                 # the name as given (--model, else suite.yaml's)
    model: str                 # what the runtime runs: its init message's model
    known: bool                # it prices the model at list price (no unrecognized_model)
    max_tokens: int | None     # what its agent requests ask for at most
    ms: int                    # how long the probe took
    runtime: str = ""          # the CLI, as `claude --version` names it
    cached: bool = False       # the answer kept from an earlier probe
    replaced_by: str = ""      # what the runtime runs `model` as when asked for it (refused)

    @property
    def alias(self) -> bool:
        """A name that pins no version, resolved to a full id."""
        return self.model != self.given and is_alias(self.given)

    def refusal(self) -> str | None:
        """Why the run must not go ahead with this name (one line), or None."""
        where = f"the runtime ({self.runtime})" if self.runtime else "the runtime"
        if self.replaced_by:
            return (f"--model {self.given}: {where} resolves it to {self.model}, which it would "
                    f"run as {self.replaced_by} instead (it replaces that id); give --model "
                    f"{self.replaced_by} to run it")
        if self.model != self.given and not self.alias:
            return (f"--model {self.given}: {where} would run {self.model} instead (it replaces "
                    f"that id); give --model {self.model} to run it")
        if not self.known:
            shown = self.model if self.model == self.given else f"{self.given} ({self.model})"
            return (f"--model {shown}: not a model {where} knows: it would send "
                    f"{self.model} on as given, at no list price ({UNRECOGNIZED}); give a "
                    f"Claude model id or an alias (sonnet, opus, haiku)")
        return None

    def said(self) -> str:
        """One line for people: what runs, and what asking cost."""
        how = (f"{self.given} resolves to {self.model}" if self.alias
               else f"{self.model} runs as given")
        took = f"kept from a probe of {self.ms} ms" if self.cached else f"probed in {self.ms} ms"
        bound = f", max_tokens {self.max_tokens:,}" if self.max_tokens else ""
        return f"model: {how} (the runtime's own answer{bound}; {took})"


class ProbeError(BenchkitError):
    """The runtime gave no answer: the CLI is missing, failed or said nothing usable."""


def is_alias(name: str) -> bool:
    """A name that pins no version: letters alone, with an optional [...] option."""
    return _ALIAS.fullmatch(name) is not None


_cache: dict[tuple, Resolution] = {}
_lock = threading.Lock()


def resolve(name: str, *, cli_path: str | None = None,
            environ: Mapping[str, str] = os.environ) -> Resolution:
    """The runtime's answer for `name`, probed once per process for the same CLI and
    resolving environment. Raises ProbeError."""
    if not _NAME.fullmatch(name):
        raise ProbeError(f"--model {name!r}: not a model name (lower-case letters, digits, "
                         f"'-' and '.', an optional [option]: sonnet, claude-sonnet-4-5)")
    cli = cli_path or bundled_cli()
    if cli is None:
        raise ProbeError("the Claude Code CLI is missing, so the model cannot be resolved")
    resolving = sorted((k, v) for k, v in _passed_on(environ).items()
                       if _RESOLVING.fullmatch(k) and k not in _OWN)
    key = (CACHE_FORMAT, name, *_identity(cli), tuple(resolving))
    with _lock:
        found = _cache.get(key) or _kept(key)
        if found is not None:
            _cache[key] = found
            return msgspec.structs.replace(found, cached=True)
        found = msgspec.structs.replace(_resolved(name, cli, environ), runtime=_version(cli_path))
        _cache[key] = found
        _keep(key, found)
        return found


def _resolved(name: str, cli: str, environ: Mapping[str, str]) -> Resolution:
    """The probe of `name`; for an alias, with what its full id runs as when asked for."""
    found = probe(name, cli, environ)
    if not (found.alias and found.known):
        return found
    target = probe(found.model, cli, environ)
    return msgspec.structs.replace(
        found, max_tokens=target.max_tokens, ms=found.ms + target.ms,
        replaced_by=target.model if target.model != found.model else "")


CACHE_FORMAT = 2


def _entry(key: tuple) -> Path:
    digest = hashlib.blake2b(repr(key).encode(), digest_size=16).hexdigest()
    return cache_dir() / "model-probe" / f"{digest}.json"


def _kept(key: tuple) -> Resolution | None:
    """The answer kept for `key`; None when none is (or it cannot be read)."""
    with contextlib.suppress(OSError, msgspec.DecodeError):
        return msgspec.json.decode(_entry(key).read_bytes(), type=Resolution)
    return None


def _keep(key: tuple, found: Resolution) -> None:
    """Keep the answer, whole or not at all; a cache that cannot be written is none."""
    place = _entry(key)
    with contextlib.suppress(OSError):
        place.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=place.parent, suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(msgspec.json.encode(found))
            os.replace(temporary, place)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)  # left only where the rename failed


def probe(name: str, cli: str, environ: Mapping[str, str] = os.environ) -> Resolution:
    """Start the CLI at `cli` with `name` against a stand-in and read its answer."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="benchkit-model-probe-") as home, \
            ScriptedModel([say("ok")], model=None, usage=_PRICED) as stand_in:
        env = _passed_on(environ)
        env.update(_QUIET, ANTHROPIC_BASE_URL=stand_in.url, ANTHROPIC_API_KEY=PROBE_KEY,
                   HOME=home, TMPDIR=home, CLAUDE_CONFIG_DIR=str(Path(home) / "config"))
        argv = dies_with_thread([cli, "-p", "Say ok.", "--output-format", "stream-json",
                                 "--verbose", "--tools", "Bash", "--max-turns", "1",
                                 "--setting-sources=", "--model", name])
        try:
            done = subprocess.run(argv, env=env, cwd=home, capture_output=True, text=True,
                                  timeout=PROBE_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise ProbeError(f"the Claude Code CLI did not answer for --model {name}: "
                             f"{error}") from None
        turns = stand_in.messages(auxiliary=False)
    ms = round((time.monotonic() - started) * 1000)
    init, result = _events(done.stdout)
    if init is not None and not turns:  # its answer would be another provider's
        raise ProbeError(f"the Claude Code CLI sent no request to the probe's stand-in for "
                         f"--model {name}: a provider set in the environment it does not leave")
    model = (init or {}).get("model") or (turns[0].model if turns else None)
    if not model:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ProbeError(f"the Claude Code CLI named no model for --model {name} (exit "
                         f"{done.returncode}: {tail[0][:200]})")
    priced = ((result or {}).get("modelUsage") or {}).get(model) or {}
    basis = priced.get("costBasis")
    known = UNRECOGNIZED not in done.stderr and (basis == LIST_PRICE if basis else True)
    limit = turns[0].body.get("max_tokens") if turns else None
    return Resolution(given=name, model=str(model), known=known,
                      max_tokens=limit if isinstance(limit, int) else None, ms=ms)


# The stand-in's figures: something to price, so the result says how it prices them.
_PRICED = {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
           "output_tokens": 1}


def _passed_on(environ: Mapping[str, str]) -> dict[str, str]:
    """The caller's environment less what the probe leaves out."""
    return {key: value for key, value in environ.items() if not _LEFT_OUT.fullmatch(key)}


def _events(stdout: str) -> tuple[dict | None, dict | None]:
    """(the init message, the result) of the CLI's stream-json output."""
    init = result = None
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        if event.get("type") == "system" and event.get("subtype") == "init" and init is None:
            init = event
        elif event.get("type") == "result":
            result = event
    return init, result


def _identity(cli: str) -> tuple:
    """The CLI's path and its file's identity: an upgrade in place is another CLI."""
    try:
        stat = os.stat(cli)
    except OSError:
        return (cli,)
    return (cli, stat.st_ino, stat.st_size, stat.st_mtime_ns)


def _version(cli_path: str | None) -> str:
    """The CLI as people name it (`claude --version`, cached by benchkit.agent.runtime)."""
    found = installed_runtime(cli_path)
    return f"Claude Code {found.cli.split(' (')[0]}" if found is not None else ""

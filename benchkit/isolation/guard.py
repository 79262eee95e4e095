"""The guard: the authority that permits or denies each shell command an agent proposes.

A shell arm's agent may run its arm's one binary, by bare name, and a curated set of
harmless utilities; nothing else. Every command the parser finds in the line (inside
substitutions, loops, functions and wrappers too) must pass. A denial carries the reason
the agent reads, so it can carry on with its one tool. The MCP arm has no shell at all.

Reading files is free; writing is not. Every file a line would write (a redirection,
`tee`, `curl -o` and its kin, `sed w`, `sort -o`, `mkdir`, the options an arm declares
its binary writes through, `tool.writes`, ...) must be a relative path
without `..` in a line that never leaves the working directory (`cd` elsewhere), a path
below /tmp (the trial's private scratch space in the OS sandbox), /dev/null, /dev/stdout,
/dev/stderr or /dev/fd/N; a name may be built from variables whose every value in the
line holds no `/` (values.py: `"page$i.json"` in a loop). Nothing an agent may run makes
a symbolic link, so such a path stays where it says. Arithmetic contexts may evaluate
only variables whose values are known (values.py). Residual: a dynamic argument
(`curl "$U"`) is taken as the operand it looks like, though its value could begin with
`-`; only words in a write position must be literal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from benchkit.tool import ToolSpec

from .options import DECLARE, EXPORT, MAPFILE, PRINTF, READ, getopt
from .programs import CHECKS
from .shell import parse
from .syntax import NAME, Command, ParseError
from .values import Values
from .words import Word
from .writes import Where, directory_change, redirect_violation, writes_violation

# External programs every shell arm may run besides its own binary; make_bin_dir links
# exactly these. None can run another program, except those whose arguments are checked
# (programs.py: sed, awk, sort, find, curl's writes) and the wrappers whose commands the
# parser unwraps and checks (env, xargs, find -exec, nice, nohup, timeout, time).
UTILITIES = (
    "jq", "grep", "egrep", "fgrep", "head", "tail", "sed", "awk", "wc", "sort", "uniq",
    "cut", "tr", "cat", "base64", "tee", "seq", "date", "sleep", "echo", "printf", "true",
    "false", "test", "[", "column", "fold", "nl", "paste", "rev", "tac", "comm", "join",
    "expr", "basename", "dirname", "ls", "which", "mktemp", "diff", "mkdir",
    "env", "xargs", "find", "nice", "nohup", "timeout", "time",
)

# What bash runs itself when a command names it directly.
BUILTINS = frozenset({
    ":", "true", "false", "echo", "printf", "test", "[", "[[", "cd", "pwd", "pushd",
    "popd", "dirs", "export", "unset", "local", "declare", "typeset", "readonly", "set",
    "shopt", "shift", "read", "mapfile", "readarray", "exit", "return", "break",
    "continue", "wait", "let", "type", "command", "builtin", "exec", "getopts", "umask",
    "ulimit", "times", "jobs", "disown", "kill",
})

# Builtins that run text or reroute names in ways the guard cannot follow.
_UNCHECKABLE = {
    "eval": "`eval` runs text the guard cannot check before it runs",
    "source": "`source` runs a file the guard cannot check",
    ".": "`.` runs a file the guard cannot check",
    "alias": "aliases are not allowed",
    "trap": "`trap` runs text the guard cannot check",
    "hash": "`hash` can point a command name at another program",
    "enable": "`enable` can load builtins from files",
    "fc": "`fc` re-runs commands the guard cannot see",
    "compgen": "`compgen` can run commands the guard cannot check",
    "complete": "`complete` can run commands the guard cannot check",
    "bind": "`bind` can run commands the guard cannot check",
}

# Variables that change which program a name runs, or make a permitted program run
# another (NODE_OPTIONS=--require makes the node-based gitea-axi an interpreter), or
# move where files go: curl reads options (`output = ...`) from .curlrc in CURL_HOME,
# XDG_CONFIG_HOME or HOME; `cd` follows CDPATH; mktemp and sort write into TMPDIR.
SENSITIVE = re.compile(r"PATH|LD_[A-Z_]+|BASH_ENV|ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND"
                       r"|GCONV_PATH|NODE_OPTIONS|NODE_PATH|BASH_FUNC_.*|BASH_LOADABLES_PATH"
                       r"|HOME|CURL_HOME|XDG_CONFIG_HOME|CDPATH|TMPDIR")
SHOWN_UTILITIES = "jq, grep, sed, awk, head, sort and wc"


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str
    binaries: tuple[str, ...] = ()  # the programs the line would run (not builtins)


class Guard:
    """The guard of one arm. `decide` judges a shell command; `decide_tool` a tool call."""

    def __init__(self, arm_id: str, kind: str, binary: str | None = None,
                 forbidden_subcommands: Iterable[Sequence[str]] = (),
                 runtime_tools: Iterable[str] = (), writes: Iterable[str] = ()):
        if kind == "shell" and not binary:
            raise ValueError(f"arm {arm_id}: a shell arm needs its binary")
        self.arm_id, self.kind, self.binary = arm_id, kind, binary
        self.forbidden = [tuple(sequence) for sequence in forbidden_subcommands]
        self.runtime_tools = tuple(runtime_tools)  # ToolSearch, for an arm with tool search
        self.writes = tuple(writes)  # the binary's options that name a file it writes

    @classmethod
    def for_tool(cls, arm_id: str, tool: ToolSpec) -> Guard:
        """The guard of the arm `arm_id`, whose tool is `tool`."""
        return cls(arm_id, tool.kind, tool.binary, tool.forbidden_subcommands,
                   tool.runtime_tools, tool.writes)

    @property
    def allowed_binaries(self) -> tuple[str, ...]:
        return (self.binary, *UTILITIES) if self.kind == "shell" and self.binary else ()

    # --- tool calls --------------------------------------------------------------------

    def decide_tool(self, tool_name: str, tool_input: dict[str, Any]) -> Decision:
        """For the SDK's permission callback: shell arms run Bash alone, the MCP arm its
        server's tools alone."""
        if self.kind != "shell":
            if tool_name.startswith("mcp__gitea__"):
                return Decision(True, "allowed: a Gitea MCP tool")
            if tool_name in self.runtime_tools:  # it loads a Gitea tool's schema, no more
                return Decision(True, f"allowed: {tool_name} loads the Gitea MCP tools' schemas")
            return Decision(False, f"`{tool_name}` is not available in this session: use the "
                                   "Gitea MCP tools (mcp__gitea__*); there is no shell.")
        if tool_name != "Bash":
            return Decision(False, f"`{tool_name}` is not available in this session: run "
                                   f"`{self.binary}` through the Bash tool.")
        command = (tool_input or {}).get("command")
        if not isinstance(command, str):
            return Decision(False, "The Bash call carries no command.")
        return self.decide(command)

    # --- shell commands ----------------------------------------------------------------

    def decide(self, command: str) -> Decision:
        if self.kind != "shell":
            return Decision(False, "There is no shell in this session: use the Gitea MCP "
                                   "tools (mcp__gitea__*).")
        try:
            script = parse(command)
        except ParseError as error:
            return Decision(False, f"The guard could not check this command ({error}), and it "
                                   "denies what it cannot check: write it more plainly.")
        binaries: list[str] = []
        reasons: list[str] = []
        moved = next(filter(None, map(directory_change, script.commands)), None)
        values = Values(script)
        arithmetic = values.arithmetic_violation()
        if arithmetic:
            reasons.append(arithmetic)
        for cmd in script.commands:
            program = self._program(cmd, script.functions)
            if program and program not in binaries:
                binaries.append(program)
            reason = self._violation(cmd, script.functions, Where(moved, values))
            if reason and reason not in reasons:
                reasons.append(reason)
        if reasons:
            return Decision(False, " ".join(reasons), tuple(binaries))
        runs = ", ".join(binaries) if binaries else "no program"
        return Decision(True, f"allowed: runs {runs}", tuple(binaries))

    def _program(self, cmd: Command, functions: frozenset[str]) -> str | None:
        """The program a command runs, None for builtins, functions and dynamic names."""
        name = cmd.name.literal if cmd.name else None
        if name is None or self._shell_runs(cmd, name, functions):
            return None
        return name

    @staticmethod
    def _shell_runs(cmd: Command, name: str, functions: frozenset[str]) -> bool:
        """Whether bash itself runs the command (a builtin, or a function of the line)."""
        if cmd.via is None and name in functions:
            return True
        return cmd.via in (None, "command", "builtin") and (name in BUILTINS or name in _UNCHECKABLE)

    def _violation(self, cmd: Command, functions: frozenset[str], where: Where) -> str | None:
        """Why the command may not run; `where`: where the line may write."""
        for word in (*cmd.words, *cmd.assignments, *(r.target for r in cmd.redirects)):
            if arithmetic_injection(word.prefix if word.value is None else word.value):
                return ("Text shaped like `a[$(...)]` runs its command when bash evaluates it "
                        "arithmetically, and is not allowed in this session.")
        for redirect in cmd.redirects:
            reason = redirect_violation(redirect, where)
            if reason:
                return reason
        reason = _variables_violation(cmd.assignments)
        if reason or cmd.name is None:
            return reason
        name = cmd.name.literal
        if name is None:
            return (f"The command name `{cmd.name.text}` is only known at run time (a variable, "
                    "substitution or pattern): write the program's name literally.")
        if "/" in name:
            return (f"`{name}` is a path: run programs by their bare name (`{self.binary}`); "
                    "paths to programs are not allowed.")
        if self._shell_runs(cmd, name, functions):
            if name in _UNCHECKABLE:
                return f"{_UNCHECKABLE[name]}: write the commands out directly."
            return _builtin_violation(cmd, name)
        if name == self.binary:
            return (self._subcommand_violation(cmd, name)
                    or writes_violation(cmd, name, where, self.writes))
        if name in UTILITIES:
            check = CHECKS.get(name)
            return (check(cmd) if check else None) or writes_violation(cmd, name, where)
        # An interpreter reaches the host by itself (python3 -c 'urllib...'), so no
        # shipped arm permits one: pretty-printing JSON, what agents pipe into it, is jq's.
        hint = " (`jq .` pretty-prints JSON)" if name.startswith("python") else ""
        return (f"`{name}` is not available in this session: use `{self.binary}` (the only "
                f"tool here) and plain text utilities such as {SHOWN_UTILITIES}{hint}.")

    def _subcommand_violation(self, cmd: Command, binary: str) -> str | None:
        """Why the arm's own `binary` may not run the sub-command `cmd` reaches."""
        for sequence in self.forbidden:
            reached = _reaches(cmd.words, sequence, cmd.open_ended)
            shown = " ".join((binary, *sequence))
            if reached:
                return (f"`{shown}` is not available in this session: use `{binary}`'s "
                        f"other sub-commands (`{binary} --help`).")
            if reached is None:
                return (f"Which `{binary}` sub-command runs is only known at run time, and "
                        f"`{shown}` is not available: write the sub-command literally.")
        return None


def _reaches(words: Sequence[Word], sequence: Sequence[str], open_ended: bool) -> bool | None:
    """Whether the words run the sub-command `sequence` after any global flags (True),
    cannot (False), or it is only known at run time (None). A flag may take the next
    word as its value, so the word after a flag is tried both ways."""
    i = 1
    while True:
        if i >= len(words):
            return None if open_ended else False
        value = words[i].literal
        if value is None:
            return None
        if value.startswith("-") and value != "-":
            i += 1
            continue
        if value == sequence[0]:
            rest = True if len(sequence) == 1 else _reaches(words[i:], sequence[1:], open_ended)
            if rest is not False:
                return rest
        before = words[i - 1].literal or ""
        if i > 1 and before.startswith("-") and "=" not in before:
            i += 1  # `value` may have been that flag's value
            continue
        return False


# Redirections that open their target for writing (`>&` too, when it names a file).
_WRITING = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})


def arithmetic_injection(text: str) -> bool:
    """Whether text holds `[` then `$(` or a backtick with no `]` between (`a[$(cmd)]`):
    bash runs cmd when a variable holding it is evaluated arithmetically. One pass."""
    inside = False
    for i, c in enumerate(text):
        if c == "[":
            inside = True
        elif c == "]":
            inside = False
        elif inside and (c == "`" or (c == "$" and text[i + 1:i + 2] == "(")):
            return True
    return False



# --- variables ------------------------------------------------------------------------

def _variable_name(word: Word) -> str | None:
    """The variable a `NAME=value` (or bare NAME) word sets; None when not fixed."""
    text = word.value if word.value is not None else word.prefix
    match = NAME.match(text)
    if not match:
        return None
    if word.value is None and match.end() == len(text):
        return None  # the name runs into an expansion: NAME$X=...
    return match.group()


def _variables_violation(words: Iterable[Word | None]) -> str | None:
    """Why a builtin or assignment may not set these variables (None: a missing option
    value, which bash refuses itself)."""
    for word in words:
        if word is None:
            continue
        name = _variable_name(word)
        if name is None:
            return (f"The variable name in `{word.text}` is only known at run time: write it "
                    "literally.")
        if SENSITIVE.fullmatch(name):
            return f"Changing `{name}` is not allowed in this session."
    return None


def _builtin_violation(cmd: Command, name: str) -> str | None:
    """Builtins that set variables must not set the sensitive ones."""
    words = cmd.words
    if name in ("export", "declare", "typeset", "local", "readonly"):
        parsed = getopt(words, DECLARE if name in ("declare", "typeset", "local") else EXPORT)
        if parsed.has("-n"):  # a nameref: its value names a variable
            for word in parsed.operands:
                target = word.text.partition("=")[2]
                if SENSITIVE.fullmatch(target):
                    return f"Changing `{target}` is not allowed in this session."
        return _variables_violation(parsed.operands)
    if name == "read":
        parsed = getopt(words, READ)
        return _variables_violation([*parsed.values("-a"), *parsed.operands])
    if name in ("mapfile", "readarray"):
        parsed = getopt(words, MAPFILE)
        if parsed.has("-C"):
            return f"`{name} -C` runs a callback the guard cannot check."
        return _variables_violation(parsed.operands[:1])
    if name == "printf":
        return _variables_violation(getopt(words, PRINTF).values("-v"))
    if name == "getopts":
        return _variables_violation(words[2:3])
    return None


"""The guard: the authority that permits or denies each shell command an agent proposes.

A shell arm's agent may run its arm's one binary, by bare name, and a curated set of
harmless utilities; nothing else. Every command the parser finds in the line (inside
substitutions, loops, functions and wrappers too) must pass. A denial carries the reason
the agent reads, so it can carry on with its one tool. The MCP arm has no shell at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .shell import Command, ParseError, Redirect, Word, parse, scan_options

# External programs every shell arm may run besides its own binary; make_bin_dir links
# exactly these. None can run another program, except those whose arguments are
# checked below (sed, awk, sort, find) and the wrappers whose commands the parser
# unwraps and checks (env, xargs, find -exec, nice, nohup, timeout, time).
UTILITIES = (
    "jq", "grep", "egrep", "fgrep", "head", "tail", "sed", "awk", "wc", "sort", "uniq",
    "cut", "tr", "cat", "base64", "tee", "seq", "date", "sleep", "echo", "printf", "true",
    "false", "test", "[", "column", "fold", "nl", "paste", "rev", "tac", "comm", "join",
    "expr", "basename", "dirname", "ls", "which", "mktemp", "diff",
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
# another (NODE_OPTIONS=--require makes the node-based gitea-axi an interpreter).
SENSITIVE = re.compile(r"PATH|LD_[A-Z_]+|BASH_ENV|ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND"
                       r"|GCONV_PATH|NODE_OPTIONS|NODE_PATH|BASH_FUNC_.*|BASH_LOADABLES_PATH")
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Quoted text like a[$(cmd)] or a[`cmd`]: bash runs cmd when a variable holding it is
# evaluated arithmetically ($((x)), [[ $x -eq 1 ]]). Unquoted, the parser sees cmd itself.
_ARITHMETIC_INJECTION = re.compile(r"\[[^\]]*(\$\(|`)")
_NETWORK = re.compile(r"/dev/+(tcp|udp)(/|$)")
_NETWORK_DEVICES = ("/dev/tcp/", "/dev/udp/")
SHOWN_UTILITIES = "jq, grep, sed, awk, head, sort and wc"


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str
    binaries: tuple[str, ...] = ()  # the programs the line would run (not builtins)


class Guard:
    """The policy of one arm. `decide` judges a shell command; `decide_tool` a tool call."""

    def __init__(self, arm_id: str, kind: str, binary: str | None = None,
                 forbidden_subcommands=()):
        if kind == "shell" and not binary:
            raise ValueError(f"arm {arm_id}: a shell arm needs its binary")
        self.arm_id, self.kind, self.binary = arm_id, kind, binary
        self.forbidden = [tuple(sequence) for sequence in forbidden_subcommands]

    @classmethod
    def for_arm(cls, arm) -> "Guard":
        tool = arm.tool
        return cls(arm.id, tool["kind"], tool.get("binary"),
                   tool.get("forbidden_subcommands") or ())

    @property
    def allowed_binaries(self) -> tuple[str, ...]:
        return (self.binary, *UTILITIES) if self.kind == "shell" else ()

    # --- tool calls --------------------------------------------------------------------

    def decide_tool(self, tool_name: str, tool_input: dict) -> Decision:
        """For the SDK's permission callback: shell arms run Bash alone, the MCP arm its
        server's tools alone."""
        if self.kind != "shell":
            if tool_name.startswith("mcp__gitea__"):
                return Decision(True, "allowed: a Gitea MCP tool")
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
        binaries, reasons = [], []
        for cmd in script.commands:
            program = self._program(cmd, script.functions)
            if program and program not in binaries:
                binaries.append(program)
            reason = self._violation(cmd, script.functions)
            if reason and reason not in reasons:
                reasons.append(reason)
        if reasons:
            return Decision(False, " ".join(reasons), tuple(binaries))
        runs = ", ".join(binaries) if binaries else "no program"
        return Decision(True, f"allowed: runs {runs}", tuple(binaries))

    def _program(self, cmd: Command, functions) -> str | None:
        """The program a command runs, None for builtins, functions and dynamic names."""
        name = cmd.name.literal if cmd.name else None
        if name is None or self._shell_runs(cmd, name, functions):
            return None
        return name

    @staticmethod
    def _shell_runs(cmd: Command, name: str, functions) -> bool:
        """Whether bash itself runs the command (a builtin, or a function of the line)."""
        if cmd.via is None and name in functions:
            return True
        return cmd.via in (None, "command", "builtin") and (name in BUILTINS or name in _UNCHECKABLE)

    def _violation(self, cmd: Command, functions) -> str | None:
        for word in (*cmd.words, *cmd.assignments, *(r.target for r in cmd.redirects)):
            if _ARITHMETIC_INJECTION.search(word.prefix if word.value is None else word.value):
                return ("Text shaped like `a[$(...)]` runs its command when bash evaluates it "
                        "arithmetically, and is not allowed in this session.")
        for redirect in cmd.redirects:
            reason = _redirect_violation(redirect)
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
            return _builtin_violation(cmd)
        if name == self.binary:
            return self._subcommand_violation(cmd)
        if name in UTILITIES:
            check = _UTILITY_CHECKS.get(name)
            return check(cmd) if check else None
        return (f"`{name}` is not available in this session: use `{self.binary}` (the only "
                f"tool here) and plain text utilities such as {SHOWN_UTILITIES}.")

    def _subcommand_violation(self, cmd: Command) -> str | None:
        for sequence in self.forbidden:
            reached = _reaches(cmd.words, sequence, cmd.open_ended)
            shown = " ".join((self.binary, *sequence))
            if reached:
                return (f"`{shown}` is not available in this session: use `{self.binary}`'s "
                        f"other sub-commands (`{self.binary} --help`).")
            if reached is None:
                return (f"Which `{self.binary}` sub-command runs is only known at run time, and "
                        f"`{shown}` is not available: write the sub-command literally.")
        return None


def _reaches(words, sequence, open_ended: bool) -> bool | None:
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


def _redirect_violation(redirect: Redirect) -> str | None:
    target = redirect.target
    if redirect.op in ("<<", "<<-", "<<<"):
        return None  # heredoc and here-string bodies are data
    if redirect.op in ("<&", ">&") and re.fullmatch(r"[0-9]*-?", target.literal or "x"):
        return None  # duplicating or closing a descriptor
    if _NETWORK.search(target.text):
        return ("Network redirections (/dev/tcp, /dev/udp) are not allowed: reach the host with "
                "this session's tool.")
    if target.literal is None and not (target.prefix == "" and target.text[:2] in ("<(", ">(")):
        # (A word opening with a process substitution is a /dev/fd/ path, never a device.)
        prefix = re.sub("/+", "/", target.prefix)
        if any(device.startswith(prefix) or prefix.startswith(device)
               for device in _NETWORK_DEVICES):
            return (f"The redirection target `{target.text}` is only known at run time: name "
                    "the file literally.")
    return None


# --- variables ------------------------------------------------------------------------

def _variable_name(word: Word) -> str | None:
    """The variable a `NAME=value` (or bare NAME) word sets; None when not fixed."""
    text = word.value if word.value is not None else word.prefix
    match = _VARIABLE_NAME.match(text)
    if not match:
        return None
    if word.value is None and match.end() == len(text):
        return None  # the name runs into an expansion: NAME$X=...
    return match.group()


def _variables_violation(words) -> str | None:
    for word in words:
        name = _variable_name(word)
        if name is None:
            return (f"The variable name in `{word.text}` is only known at run time: write it "
                    "literally.")
        if SENSITIVE.fullmatch(name):
            return f"Changing `{name}` is not allowed in this session."
    return None


def _builtin_violation(cmd: Command) -> str | None:
    """Builtins that set variables must not set the sensitive ones."""
    name, words = cmd.name.literal, cmd.words
    if name in ("export", "declare", "typeset", "local", "readonly"):
        flags, start = scan_options(words)
        if any(flag == "-n" for flag, _ in flags):  # a nameref: its value names a variable
            for word in words[start:]:
                target = word.text.partition("=")[2]
                if SENSITIVE.fullmatch(target):
                    return f"Changing `{target}` is not allowed in this session."
        return _variables_violation(words[start:])
    if name == "read":
        flags, start = scan_options(words, 1, "adinNptu")
        return _variables_violation([v for f, v in flags if f == "-a"] + list(words[start:]))
    if name in ("mapfile", "readarray"):
        flags, start = scan_options(words, 1, "dnOsuCc")
        if any(flag == "-C" for flag, _ in flags):
            return f"`{name} -C` runs a callback the guard cannot check."
        return _variables_violation(words[start:start + 1])
    if name == "printf":
        flags, _ = scan_options(words, 1, "v")
        return _variables_violation([v for f, v in flags if f == "-v"])
    if name == "getopts":
        return _variables_violation(words[2:3])
    return None


# --- utilities whose arguments can run programs ---------------------------------------

def _literal_arguments(cmd: Command) -> str | None:
    """For utilities whose options can run programs, every argument must be literal."""
    for word in cmd.words[1:]:
        if word.value is None:
            return (f"`{cmd.name.literal}` arguments must be literal here (`{word.text}` is only "
                    "known at run time, and could be an option that runs a program).")
    return None


def _long(option: str, full: str, shortest: int = 1) -> bool:
    """Whether `--option` abbreviates `--full` (getopt accepts unambiguous prefixes)."""
    name = option[2:].split("=", 1)[0]
    return option.startswith("--") and len(name) >= shortest and full.startswith(name)


def _check_sed(cmd: Command) -> str | None:
    reason = _literal_arguments(cmd)
    if reason:
        return reason
    programs, operands, words, i = [], [], cmd.words, 1
    while i < len(words):  # GNU sed takes options anywhere
        arg = words[i].value
        i += 1
        if arg == "--":
            operands += [w.value for w in words[i:]]
            break
        if arg.startswith("--"):
            if _long(arg, "in-place"):
                return _SED_IN_PLACE
            if _long(arg, "file"):
                return _SED_FILE
            if _long(arg, "expression") or _long(arg, "line-length"):
                value = arg.partition("=")[2] if "=" in arg else (
                    words[i].value if i < len(words) else "")
                i += "=" not in arg
                if _long(arg, "expression"):
                    programs.append(value)
        elif arg.startswith("-") and arg != "-":
            for k, letter in enumerate(arg[1:], 1):
                if letter == "i":
                    return _SED_IN_PLACE
                if letter == "f":
                    return _SED_FILE
                if letter in "el":
                    value = arg[k + 1:] or (words[i].value if i < len(words) else "")
                    i += not arg[k + 1:]
                    if letter == "e":
                        programs.append(value)
                    break
        else:
            operands.append(arg)
    if not programs and operands:
        programs.append(operands[0])
    try:  # sed joins its -e pieces with newlines into one program
        executes = sed_executes("\n".join(programs))
    except ValueError as error:
        return f"The guard could not read this sed program ({error}): simplify it."
    if executes:
        return ("sed's `e` command and `s///e` flag run shell commands and are not allowed "
                "in this session.")
    return None


_SED_IN_PLACE = ("`sed -i` (in-place editing) is not allowed in this session: write the output "
                 "with `>` to a new file instead.")
_SED_FILE = ("`sed -f` reads a program the guard cannot check: give the program inline "
             "(`sed -e '...'`).")


def sed_executes(program: str) -> bool:
    """Whether a GNU sed program uses the `e` command or the `s///e` flag; ValueError
    where it cannot be read."""
    i, n = 0, len(program)

    def delimited(i: int, parts: int) -> int:
        """Skip `parts` parts delimited by program[i] (s and y); return the index after."""
        delimiter = program[i] if i < n else ""
        if delimiter in ("", "\n", "\\"):
            raise ValueError("a delimiter is missing")
        i += 1
        for _ in range(parts):
            while i < n and program[i] != delimiter:
                i += 2 if program[i] == "\\" else 1
            if i >= n:
                raise ValueError("an expression is not terminated")
            i += 1
        return i

    def address(i: int) -> int:
        if i < n and program[i] in "0123456789":
            while i < n and program[i] in "0123456789~":
                i += 1
        elif i < n and program[i] == "$":
            i += 1
        elif i < n and program[i] == "/":
            i = delimited(i, 1)
        elif i < n and program[i] == "\\":
            i = delimited(i + 1, 1)
        else:
            return i
        while i < n and program[i] in "IM":
            i += 1
        return i

    def line_end(i: int) -> int:
        end = program.find("\n", i)
        return n if end < 0 else end

    while i < n:
        c = program[i]
        if c in " \t\n;{}":
            i += 1
            continue
        i = address(i)
        if i < n and program[i] == ",":
            i += 1
            i = address(i + 1) if i < n and program[i] in "+~" else address(i)
        while i < n and program[i] in " \t!":
            i += 1
        if i >= n:
            raise ValueError("a command is missing")
        c, i = program[i], i + 1
        if c == "e":
            return True
        if c == "s":
            i = delimited(i, 2)
            flags = re.match(r"[gpiImMe0-9]*", program[i:]).group()
            if "e" in flags:
                return True
            i += len(flags)
            if i < n and program[i] == "w":
                i = line_end(i)
        elif c == "y":
            i = delimited(i, 2)
        elif c in "aicrRwW#":
            while True:  # text, file name, label or comment: to the end of the line
                i = line_end(i)
                if c in "aic" and program[i - 1:i] == "\\" and i < n:
                    i += 1
                    continue
                break
        elif c in "btTv:":
            while i < n and program[i] not in ";\n}":
                i += 1
        elif c in "qQlL":
            while i < n and program[i] in " 0123456789":
                i += 1
        elif c not in "=dDgGhHnNpPxzF{}":
            raise ValueError(f"unknown command `{c}`")
    return False


def _check_awk(cmd: Command) -> str | None:
    words = cmd.words
    flags, start = scan_options(words, 1, "FvfWEeil", (
        "field-separator", "assign", "file", "source", "exec", "include", "load"))
    # -W exec (mawk; gawk's -E) reads the program from a file too.
    if any(flag in ("-f", "--file", "-E", "--exec", "-i", "--include", "-l", "--load") or (
            flag == "-W" and value.text not in ("version", "usage", "help"))
           for flag, value in flags):
        return ("awk programs from files or extensions cannot be checked: give the program "
                "inline.")
    programs = [value for flag, value in flags if flag in ("-e", "--source")]
    if not programs and start < len(words):
        programs = [words[start]]
    for program in programs:
        if program.value is None:
            return (f"The awk program `{program.text}` is only known at run time: write it "
                    "literally.")
        if awk_runs_commands(program.value):
            return ("awk programs that run commands (system(), pipes to or from commands, "
                    "`| getline`) are not allowed in this session.")
    return None


_REGEX_MAY_FOLLOW = set("(,~!{};&|=:?+-*%<>^[\n")


def awk_runs_commands(program: str) -> bool:
    """Whether an awk program calls system(), pipes (`|`, `|&`) or uses `@` (gawk's
    indirect calls and extensions). Strings, regex literals and comments are skipped."""
    code, i, previous = [], 0, "\n"
    while i < len(program):
        c = program[i]
        if c == '"' or (c == "/" and previous in _REGEX_MAY_FOLLOW):
            i += 1
            while i < len(program) and program[i] != c:
                i += 2 if program[i] == "\\" else 1
            code.append(" ")
            previous = "x"
        elif c == "#":
            while i < len(program) and program[i] != "\n":
                i += 1
            continue
        else:
            code.append(c)
            if not c.isspace() or c == "\n":
                previous = c
        i += 1
    text = "".join(code).replace("||", " ")
    return bool(re.search(r"\bsystem\s*\(|\||@", text))


def _check_sort(cmd: Command) -> str | None:
    reason = _literal_arguments(cmd)
    if reason:
        return reason
    if any(_long(w.value, "compress-program", 2) for w in cmd.words[1:]):
        return "`sort --compress-program` runs a program and is not allowed in this session."
    return None


def _check_env(cmd: Command) -> str | None:
    flags, _ = scan_options(cmd.words, 1, "uCS", ("unset", "chdir", "split-string"))
    if any(flag == "-S" or _long(flag, "split-string") for flag, _ in flags):
        return "`env -S` builds a command the guard cannot check: write the command directly."
    return None


_UTILITY_CHECKS = {
    "sed": _check_sed,
    "awk": _check_awk,
    "sort": _check_sort,
    "find": _literal_arguments,
    "env": _check_env,
}

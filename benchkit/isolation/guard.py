"""The guard: the authority that permits or denies each shell command an agent proposes.

A shell arm's agent may run its arm's one binary, by bare name, and a curated set of
harmless utilities; nothing else. Every command the parser finds in the line (inside
substitutions, loops, functions and wrappers too) must pass. A denial carries the reason
the agent reads, so it can carry on with its one tool. The MCP arm has no shell at all.

Reading files is free; writing is not. Every file a line would write (a redirection,
`tee`, `curl -o` and its kin, `sed w`, `sort -o`, ...) must be named literally by a
relative path without `..`, in a line that never leaves the working directory (`cd`
elsewhere), or be /dev/null, /dev/stdout, /dev/stderr or /dev/fd/N. Nothing an agent may
run makes a symbolic link, so such a path stays below the working directory: the curated
bin directory's links (to the real programs) and the rest of the machine are out of reach.
Residual: a dynamic argument (`curl "$U"`) is taken as the operand it looks like, though
its value could begin with `-`; only words in a write position must be literal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .shell import Command, ParseError, Redirect, Word, literal_word, parse, scan_options

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
# another (NODE_OPTIONS=--require makes the node-based gitea-axi an interpreter), or
# move where files go: curl reads options (`output = ...`) from .curlrc in CURL_HOME,
# XDG_CONFIG_HOME or HOME; `cd` follows CDPATH; mktemp and sort write into TMPDIR.
SENSITIVE = re.compile(r"PATH|LD_[A-Z_]+|BASH_ENV|ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND"
                       r"|GCONV_PATH|NODE_OPTIONS|NODE_PATH|BASH_FUNC_.*|BASH_LOADABLES_PATH"
                       r"|HOME|CURL_HOME|XDG_CONFIG_HOME|CDPATH|TMPDIR")
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
        moved = next(filter(None, map(directory_change, script.commands)), None)
        for cmd in script.commands:
            program = self._program(cmd, script.functions)
            if program and program not in binaries:
                binaries.append(program)
            reason = self._violation(cmd, script.functions, moved)
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

    def _violation(self, cmd: Command, functions, moved: str | None) -> str | None:
        """Why the command may not run; `moved`: the command of the line that leaves the
        working directory, if any (then the line writes no file)."""
        for word in (*cmd.words, *cmd.assignments, *(r.target for r in cmd.redirects)):
            if _ARITHMETIC_INJECTION.search(word.prefix if word.value is None else word.value):
                return ("Text shaped like `a[$(...)]` runs its command when bash evaluates it "
                        "arithmetically, and is not allowed in this session.")
        for redirect in cmd.redirects:
            reason = _redirect_violation(redirect, moved)
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
            return self._subcommand_violation(cmd) or writes_violation(cmd, moved)
        if name in UTILITIES:
            check = _UTILITY_CHECKS.get(name)
            return (check(cmd) if check else None) or writes_violation(cmd, moved)
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


# Redirections that open their target for writing (`>&` too, when it names a file).
_WRITING = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})


def _redirect_violation(redirect: Redirect, moved: str | None) -> str | None:
    target = redirect.target
    if redirect.op in ("<<", "<<-", "<<<"):
        return None  # heredoc and here-string bodies are data
    if redirect.op in ("<&", ">&") and re.fullmatch(r"[0-9]*-?", target.literal or "x"):
        return None  # duplicating or closing a descriptor
    if _NETWORK.search(target.text):
        return ("Network redirections (/dev/tcp, /dev/udp) are not allowed: reach the host with "
                "this session's tool.")
    if redirect.op in _WRITING:
        return target_violation(target, "The redirection", moved)
    if target.literal is None and not _process_substitution(target):
        # (A word opening with a process substitution is a /dev/fd/ path, never a device.)
        prefix = re.sub("/+", "/", target.prefix)
        if any(device.startswith(prefix) or prefix.startswith(device)
               for device in _NETWORK_DEVICES):
            return (f"The redirection target `{target.text}` is only known at run time: name "
                    "the file literally.")
    return None


# --- where a line may write ----------------------------------------------------------

_DEVICES = re.compile(r"/dev/(null|stdout|stderr|fd/[0-9]+)")
_WHERE = ("files may be written only inside the working directory (a relative path without "
          "`..`), or to /dev/null, /dev/stdout or /dev/stderr")


def _process_substitution(word: Word) -> bool:
    """A word that is one <(...) or >(...): bash passes a /dev/fd/ path for it."""
    return word.prefix == "" and word.text[:2] in ("<(", ">(") and word.text.endswith(")")


def below(path: str) -> bool:
    """Whether a literal path stays below the working directory."""
    return not path.startswith("/") and ".." not in path.split("/")


def target_violation(word: Word, what: str, moved: str | None) -> str | None:
    """Why `what` (e.g. "The redirection", "`tee`") may not write to the file `word`."""
    if _process_substitution(word):
        return None
    path = word.literal
    if path is None:
        return (f"{what} writes to `{word.text}`, which is only known at run time: name the "
                "file literally (a relative path).")
    if _DEVICES.fullmatch(re.sub("/+", "/", path)):
        return None
    if not below(path):
        return f"{what} writes to `{path}`, outside the working directory: {_WHERE}."
    if moved:
        return (f"{what} writes to `{path}` after `{moved}` has left the working directory: "
                f"{_WHERE}, in a line that stays there.")
    return None


def directory_change(cmd: Command) -> str | None:
    """The command's text when it leaves the working directory (or may: `cd` alone goes
    home, `cd -` back, `popd` wherever the stack says), else None."""
    name = cmd.name.literal if cmd.name else None
    if name in ("cd", "pushd"):
        _, start = scan_options(cmd.words)
        operands = cmd.words[start:]
        if not operands or not _stays(operands[0]) or operands[0].literal.startswith(("-", "+")):
            return cmd.text
    elif name == "popd":
        return cmd.text
    elif name == "env":
        flags, _ = scan_options(cmd.words, 1, "uCS", ("unset", "chdir", "split-string"))
        if any(flag in ("-C", "--chdir") and (value is None or not _stays(value))
               for flag, value in flags):
            return cmd.text
    elif name == "find" and any(w.literal in ("-execdir", "-okdir") for w in cmd.words):
        if not all(_stays(w) for w in _find_start_points(cmd.words)):
            return cmd.text  # -execdir runs in each found file's directory
    return None


def _stays(word: Word) -> bool:
    return word.literal is not None and below(word.literal)


def _find_start_points(words) -> list[Word]:
    """find's starting points: after its -H/-L/-P/-D/-O options, before the expression."""
    i = 1
    while i < len(words) and (words[i].literal or "").startswith(("-H", "-L", "-P", "-D", "-O")):
        i += 2 if words[i].literal == "-D" else 1
    points = []
    for word in words[i:]:
        text = word.literal or ""
        if text.startswith("-") or text in ("(", "!", ")", ","):
            break
        points.append(word)
    return points or [literal_word(".")]


# Programs whose arguments decide what they run or write: under xargs, which appends
# arguments only known at run time, none may run (xargs -I puts them in place instead).
_ARGUMENTS_MATTER = frozenset({"curl", "tee", "uniq", "sort", "sed", "awk", "find", "mktemp",
                               "env", "nice", "nohup", "timeout", "time", "xargs"})


def writes_violation(cmd: Command, moved: str | None) -> str | None:
    """Why a program may not write the files its arguments name."""
    name = cmd.name.literal
    if cmd.open_ended and name in _ARGUMENTS_MATTER:
        return (f"`xargs` appends arguments only known at run time, and they could make `{name}` "
                f"write files or run programs: put them in place with "
                f"`xargs -I{{}} {name} ... {{}}`.")
    writer = _WRITERS.get(name)
    if writer is None:
        return None
    found = writer(cmd)
    if isinstance(found, str):
        return found
    for word, what in found:
        reason = target_violation(word, what, moved) if word is not None else None
        if reason:
            return reason
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


def _sed_programs(cmd: Command) -> list[str] | str:
    """The sed program pieces of the command line, or why they cannot be read."""
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
    return programs


def _sed_effects(cmd: Command) -> tuple[bool, list[str]] | str:
    """(whether the program runs commands, the files it writes), or why it cannot tell."""
    programs = _sed_programs(cmd)
    if isinstance(programs, str):
        return programs
    try:  # sed joins its -e pieces with newlines into one program
        return sed_effects("\n".join(programs))
    except ValueError as error:
        return f"The guard could not read this sed program ({error}): simplify it."


def _check_sed(cmd: Command) -> str | None:
    effects = _sed_effects(cmd)
    if isinstance(effects, str):
        return effects
    if effects[0]:
        return ("sed's `e` command and `s///e` flag run shell commands and are not allowed "
                "in this session.")
    return None


_SED_IN_PLACE = ("`sed -i` (in-place editing) is not allowed in this session: write the output "
                 "with `>` to a new file instead.")
_SED_FILE = ("`sed -f` reads a program the guard cannot check: give the program inline "
             "(`sed -e '...'`).")


def sed_effects(program: str) -> tuple[bool, list[str]]:
    """Whether a GNU sed program runs commands (the `e` command, the `s///e` flag), and
    the files its `w` and `W` commands and `s///w` flag write; ValueError where it
    cannot be read."""
    i, n = 0, len(program)
    executes, writes = False, []

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
            executes, i = True, line_end(i)  # its command runs to the end of the line
        elif c == "s":
            i = delimited(i, 2)
            flags = re.match(r"[gpiImMe0-9]*", program[i:]).group()
            executes = executes or "e" in flags
            i += len(flags)
            if i < n and program[i] == "w":
                end = line_end(i)
                writes.append(program[i + 1:end].strip())
                i = end
        elif c == "y":
            i = delimited(i, 2)
        elif c in "aicrRwW#":
            start = i
            while True:  # text, file name, label or comment: to the end of the line
                i = line_end(i)
                if c in "aic" and program[i - 1:i] == "\\" and i < n:
                    i += 1
                    continue
                break
            if c in "wW":
                writes.append(program[start:i].strip())
        elif c in "btTv:":
            while i < n and program[i] not in ";\n}":
                i += 1
        elif c in "qQlL":
            while i < n and program[i] in " 0123456789":
                i += 1
        elif c not in "=dDgGhHnNpPxzF{}":
            raise ValueError(f"unknown command `{c}`")
    return executes, writes


def _awk_options(cmd: Command):
    """awk's options and where its operands start; gawk's -d, -o and -p take an
    optional attached file (variables dump, pretty print, profile)."""
    return scan_options(cmd.words, 1, "FvfWEeil", (
        "field-separator", "assign", "file", "source", "exec", "include", "load"), "dop")


def _check_awk(cmd: Command) -> str | None:
    words = cmd.words
    flags, start = _awk_options(cmd)
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
        if awk_writes(program.value):
            return ("awk's `print > file` writes a file the guard does not place: redirect "
                    "awk's output with the shell's `>` to a relative path instead.")
    return None


_REGEX_MAY_FOLLOW = set("(,~!{};&|=:?+-*%<>^[\n")


def awk_runs_commands(program: str) -> bool:
    """Whether an awk program calls system(), pipes (`|`, `|&`) or uses `@` (gawk's
    indirect calls and extensions). Strings, regex literals and comments are skipped."""
    text = _awk_code(program).replace("||", " ")
    return bool(re.search(r"\bsystem\s*\(|\||@", text))


def _awk_code(program: str) -> str:
    """The program with strings, regex literals and comments blanked out."""
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
    return "".join(code)


def awk_writes(program: str) -> bool:
    """Whether an awk program redirects print or printf into a file (`> f`, `>> f`): a
    `>` outside parentheses in a print statement is a redirection, not a comparison."""
    code = _awk_code(program)
    for statement in re.finditer(r"\bprintf?\b", code):
        depth = 0
        for c in code[statement.end():]:
            if c in "([":
                depth += 1
            elif c in ")]":
                depth -= 1
            elif depth <= 0 and c in ";}\n":
                break
            elif depth <= 0 and c == ">":
                return True
    return False


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


# --- the files programs write --------------------------------------------------------
# Each writer returns the (word, what) pairs of the files a command writes (a word of
# None: a missing value, which the program refuses itself), or why it may not run.

def gnu_options(words, short: str = "", long: tuple = (), optional: str = ""):
    """(options as (flag, value) pairs, operands) of a GNU-style command line, options
    anywhere before `--`. `short` letters and `long` names (unique prefixes accepted)
    take a value; `optional` letters only an attached one. A dynamic word is an operand."""
    options, operands, i = [], [], 1
    while i < len(words):
        word = words[i]
        arg = word.value
        i += 1
        if arg == "--":
            operands += words[i:]
            break
        if arg is None or not arg.startswith("-") or arg == "-":
            operands.append(word)
        elif arg.startswith("--"):
            name, eq, attached = arg[2:].partition("=")
            full = name if name in long else next(  # getopt takes a unique prefix
                (f for f in long if name and f.startswith(name)), None)
            value = literal_word(attached) if eq else None
            if full and not eq:
                value, i = (words[i] if i < len(words) else None), i + 1
            options.append(("--" + (full or name), value))
        else:
            for k, letter in enumerate(arg[1:], 1):
                if letter in short + optional:
                    value = literal_word(arg[k + 1:]) if arg[k + 1:] else None
                    if value is None and letter in short:
                        value, i = (words[i] if i < len(words) else None), i + 1
                    options.append(("-" + letter, value))
                    break
                options.append(("-" + letter, None))
    return options, operands


def _values(options, *flags):
    return [value for flag, value in options if flag in flags]


def _tee_writes(cmd: Command):
    return [(word, "`tee`") for word in gnu_options(cmd.words)[1]]


def _uniq_writes(cmd: Command):
    _, operands = gnu_options(cmd.words, "fsw", ("skip-fields", "skip-chars", "check-chars"))
    return [(word, "`uniq`") for word in operands[1:2]]  # uniq INPUT OUTPUT


def _sort_writes(cmd: Command):
    options, _ = gnu_options(cmd.words, "koStT", (
        "key", "output", "buffer-size", "field-separator", "temporary-directory",
        "batch-size", "compress-program", "files0-from", "random-source", "parallel", "sort"))
    return ([(v, "`sort -o`") for v in _values(options, "-o", "--output")]
            + [(v, "`sort -T`") for v in _values(options, "-T", "--temporary-directory")])


def _time_writes(cmd: Command):
    own = scan_options(cmd.words, 1, "fo", ("format", "output"))[1]  # then the timed command
    options, _ = gnu_options(cmd.words[:own], "fo", ("format", "output"))
    return [(v, "`time -o`") for v in _values(options, "-o", "--output")]


def _mktemp_writes(cmd: Command):
    options, operands = gnu_options(cmd.words, "p", ("suffix",))
    found = [(v, "`mktemp -p`") for v in _values(options, "-p", "--tmpdir") if v is not None]
    # A bare template or -t makes a fresh name in the system's temporary directory.
    return found + [(w, "`mktemp`") for w in operands if w.literal is None or "/" in w.literal]


def _find_writes(cmd: Command):
    words, found = cmd.words, []
    for i, word in enumerate(words):
        if word.literal in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            found.append((words[i + 1] if i + 1 < len(words) else None, f"`find {word.literal}`"))
        elif word.literal == "-delete":
            outside = [w.text for w in _find_start_points(words) if not _stays(w)]
            if outside:
                return (f"`find -delete` from `{outside[0]}` removes files outside the working "
                        "directory: delete only below it (a relative path without `..`).")
    return found


def _sed_writes(cmd: Command):
    effects = _sed_effects(cmd)
    return [] if isinstance(effects, str) else [(literal_word(f), "sed's `w`") for f in effects[1]]


def _awk_writes(cmd: Command):
    return [(value, "awk's output file") for flag, value in _awk_options(cmd)[0]
            if value is not None and flag in ("-d", "-o", "-p", "--dump-variables",
                                               "--pretty-print", "--profile")]


# curl's options that take a value (the short letters, from `curl --help all`), the ones
# whose value is a file it writes (hsts, alt-svc, ssl-sessions: read and written back)
# and the long names the guard must recognise, abbreviated or not.
_CURL_VALUES = "ACDEFHKPQTUXYbcdemortuwyz"
_CURL_WRITES = ("-o", "--output", "-D", "--dump-header", "-c", "--cookie-jar", "--output-dir",
                "--trace", "--trace-ascii", "--libcurl", "--stderr", "--etag-save", "--hsts",
                "--alt-svc", "--ssl-sessions")
_CURL_LONG = tuple(f[2:] for f in _CURL_WRITES if f.startswith("--")) + (
    "config", "write-out", "upload-file", "proto-default")


def _curl_writes(cmd: Command):
    options, _ = gnu_options(cmd.words, _CURL_VALUES, _CURL_LONG)
    flags = {flag for flag, _ in options}
    if flags & {"-K", "--config"}:
        return ("`curl -K` reads options from a file the guard cannot check: give them on the "
                "command line.")
    for value in _values(options, "-w", "--write-out"):
        text = value.literal if value is not None else ""
        if text is None or "%output{" in text:
            return ("`curl -w` with `%output{...}` (or a format only known at run time) writes "
                    "a file the guard does not place: redirect curl's output with `>` instead.")
    if flags & {"-T", "--upload-file"} and ("--proto-default" in flags or any(
            "file:" in w.text.lower() for w in cmd.words)):
        return "`curl -T` to a file: URL writes a local file: upload to the Gitea host only."
    return [(value, f"`curl {flag}`") for flag, value in options if flag in _CURL_WRITES]


_WRITERS = {
    "tee": _tee_writes,
    "uniq": _uniq_writes,
    "sort": _sort_writes,
    "time": _time_writes,
    "mktemp": _mktemp_writes,
    "find": _find_writes,
    "sed": _sed_writes,
    "awk": _awk_writes,
    "curl": _curl_writes,
}


_UTILITY_CHECKS = {
    "sed": _check_sed,
    "awk": _check_awk,
    "sort": _check_sort,
    "find": _literal_arguments,
    "env": _check_env,
}

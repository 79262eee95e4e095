"""What the line's own variables may hold, and the contexts where that matters.

Bash evaluates a variable named in an arithmetic context (`(( x ))`, `$((x))`, `$[x]`,
`let`, `[[ $x -eq 1 ]]`, an indexed array's subscript, a substring offset, `${!x}`,
`[ -v x ]`, a `declare -i` variable's assignment) as an expression itself, and an
expression `a[$(cmd)]` runs cmd: text read from a file, the host or a command's output
must never get there. A file name built from variables (`"page$i.json"`) stays where
it is written only when no value can hold a `/` or be `..`.

So every variable gets a kind from all its assignments in the line: INTEGER (numbers,
arithmetic results, `seq` and `{1..5}` loop words), PLAIN (literal words of letters,
digits and `._,:+-` only; the names in them count too, as bash evaluates them in turn)
or ANY. A variable the line never assigns comes from the harness's environment (the
agent's shell keeps no variables between commands): safe, but not for a file name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .options import DECLARE, EXPORT, MAPFILE, PRINTF, READ, UNSET, getopt
from .syntax import NAME, Command, Script
from .words import Word

INTEGER, PLAIN, ANY, ENVIRONMENT = "integer", "plain", "any", "environment"
_REFERENCE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])\}?")
_INTEGER_TEXT = re.compile(r"[-+]?[0-9]+")
_PLAIN_TEXT = re.compile(r"[A-Za-z0-9_.,:+\[\]-]*")
# Arithmetic assigns integers: `i = 1`, `i += 2`, `i++`, `--i`.
_ARITH_ASSIGNED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)"
                             r"|([A-Za-z_][A-Za-z0-9_]*)\s*(?:\+\+|--)|(?:\+\+|--)\s*([A-Za-z_][A-Za-z0-9_]*)")
_INTEGER_WORDS = re.compile(r"\$\(\(.*\)\)|\$\(seq( +[-+]?[0-9]+){1,3}\)|\{-?[0-9]+\.\.-?[0-9]+"
                            r"(\.\.-?[0-9]+)?\}", re.DOTALL)
_SPECIAL = {"#": INTEGER, "?": INTEGER, "$": INTEGER, "!": INTEGER, "-": PLAIN}
_SHELL_INTEGERS = frozenset({"RANDOM", "SECONDS", "LINENO", "BASHPID", "EPOCHSECONDS", "PPID",
                             "UID", "EUID", "SRANDOM", "OPTIND", "COLUMNS", "LINES"})
_ASSIGNING = {"read": READ, "mapfile": MAPFILE, "readarray": MAPFILE}
_DECLARING = {"declare": DECLARE, "typeset": DECLARE, "local": DECLARE, "readonly": EXPORT,
              "export": EXPORT}
_SUBSTITUTION = re.compile(r"\$\((?!\()|`|<\(")
_COMPARISONS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})


class Values:
    """The kinds of the variables a parsed line sets."""

    def __init__(self, script: Script):
        self.sources: dict[str, list[Word | str]] = {}  # a Word, a literal value or a kind
        self.integers: set[str] = set()     # declared -i: every assignment is arithmetic
        self.arithmetic: list[str] = []     # texts bash evaluates arithmetically
        self._kinds: dict[str, str] | None = None
        for cmd in script.commands:
            self._command(cmd)
        for source in script.expansions:
            self._expansion(source)

    # -- collecting -----------------------------------------------------------------

    def _set(self, name: str, source: Word | str) -> None:
        self.sources.setdefault(name, []).append(source)

    def _assignment(self, word: Word) -> None:
        text = word.value if word.value is not None else word.text
        name = NAME.match(text)
        if not name:
            return
        rest = text[name.end():]
        if rest.startswith("["):
            self.arithmetic.append(rest[1:rest.find("]")] if "]" in rest else rest)
        value = text.partition("=")[2]
        self._set(name.group(), value if word.literal is not None else word)

    def _command(self, cmd: Command) -> None:
        for word in cmd.assignments:
            self._assignment(word)
        name = cmd.name.literal if cmd.name else None
        words = cmd.words
        if name in _DECLARING:
            parsed = getopt(words, _DECLARING[name])
            for word in parsed.operands:
                if "=" in word.text:
                    self._assignment(word)
                else:
                    self.arithmetic += _subscripts(word)
                named = NAME.match(word.text)
                if parsed.has("-n"):  # a name reference: it reads whatever it names
                    self._set(named.group() if named else "", ANY)
                if parsed.has("-i") and named:
                    self.integers.add(named.group())
        elif name in _ASSIGNING:
            for word in getopt(words, _ASSIGNING[name]).operands:
                self._named(word)
        elif name == "printf":
            for target in getopt(words, PRINTF).values("-v"):
                self._named(target)
        elif name == "getopts":
            for word in words[2:3]:
                self._named(word)
        elif name == "let":
            self.arithmetic += [w.value if w.value is not None else w.text for w in words[1:]]
        elif name == "unset":
            for word in getopt(words, UNSET).operands:
                self.arithmetic += _subscripts(word)
        elif name in ("[[", "[", "test"):
            self._test(words)

    def _named(self, word: Word | None) -> None:
        """A variable a builtin fills with text from elsewhere (read, printf -v, ...)."""
        if word is None:
            return
        match = NAME.match(word.value if word.value is not None else word.prefix)
        if match:
            self._set(match.group(), ANY)
        self.arithmetic += _subscripts(word)

    def _test(self, words: Sequence[Word]) -> None:
        items = list(words[1:])
        for i, word in enumerate(items):
            if word.value in _COMPARISONS and words[0].value == "[[":
                self.arithmetic += [_arith_text(w) for w in items[i - 1:i] + items[i + 1:i + 2]]
            if word.value == "-v" and i + 1 < len(items):
                self.arithmetic.append(_arith_text(items[i + 1]))

    def _expansion(self, source: str) -> None:
        if source.startswith(("((", "$((", "$[")):
            self.arithmetic.append(source)
            for match in _ARITH_ASSIGNED.finditer(source):
                self._set(next(filter(None, match.groups())), INTEGER)
            return
        if not source.startswith("${"):
            return
        body = source[2:-1]
        if body.startswith("!") and NAME.fullmatch(body[1:]):
            self.arithmetic.append(body[1:])  # ${!x}: x's value names a variable
            return
        name = NAME.match(body.lstrip("#!"))
        if not name:
            return
        rest = body.lstrip("#!")[name.end():]
        if rest.startswith("[") and rest[1:2] not in ("@", "*"):
            self.arithmetic.append(rest[1:rest.find("]")] if "]" in rest else rest)
        elif rest.startswith(":") and rest[1:2] not in ("-", "=", "?", "+"):
            self.arithmetic.append(rest[1:])  # ${x:offset:length}
        elif rest[:2] in ("=", ":=") or rest[:1] == "=":
            value = rest.lstrip(":")[1:]
            self._set(name.group(), value if "$" not in value and "`" not in value else ANY)

    # -- judging ---------------------------------------------------------------------

    def kind(self, name: str) -> str:
        """The variable's kind: INTEGER, PLAIN, ANY or ENVIRONMENT (never assigned)."""
        if name in _SPECIAL:
            return _SPECIAL[name]
        if name.isdigit() or name in ("@", "*"):
            return ANY  # positional parameters: a function's arguments
        if name not in self.sources:
            return INTEGER if name in _SHELL_INTEGERS else ENVIRONMENT
        if self._kinds is None:
            self._kinds = self._solve()
        return self._kinds[name]

    def _solve(self) -> dict[str, str]:
        """Every assigned variable's kind, propagated along `x=$y` and `x=y+1` (names in
        a literal) from the values that fix it: linear, each kind rises at most twice."""
        kinds: dict[str, str] = {}
        copies: dict[str, list[str]] = {}    # y -> the x assigned `$y`
        mentions: dict[str, list[str]] = {}  # y -> the x whose literal names y
        for name, sources in self.sources.items():
            kind = INTEGER
            for source in sources:
                own, copied, named = _source(source)
                kind = _join(kind, own)
                for other in copied:
                    copies.setdefault(other, []).append(name)
                for other in named:
                    mentions.setdefault(other, []).append(name)
            kinds[name] = kind
        for other in set(copies) | set(mentions):
            if other not in self.sources:  # copied from outside the line, or named
                outside = self.kind(other)
                for name in copies.get(other, ()):
                    kinds[name] = _join(kinds[name], ANY if outside == ENVIRONMENT else outside)
        work = list(kinds)
        while work:
            name = work.pop()
            for dependent in copies.get(name, ()):
                raised = _join(kinds[dependent], kinds[name])
                if raised != kinds[dependent]:
                    kinds[dependent] = raised
                    work.append(dependent)
            for dependent in mentions.get(name, ()):
                if kinds[name] == ANY and kinds[dependent] != ANY:
                    kinds[dependent] = ANY
                    work.append(dependent)
        return kinds

    def arithmetic_violation(self) -> str | None:
        """Why the line's arithmetic could run a command, or None."""
        for text in [*self.arithmetic, *self.integers]:
            if _SUBSTITUTION.search(text[1:] if text.startswith(("$((", "$[")) else text):
                return ("Bash evaluates the output of a command substitution inside "
                        "arithmetic as an expression, which can run commands: compute "
                        "with `expr`, `jq`, or compare with `[ \"$n\" -gt 0 ]` instead.")
            for name in _names(text) if text not in self.integers else [text]:
                if self.kind(name) == ANY:
                    return (f"`{name}` may hold text from outside the command (read, a "
                            "command's output, a file), and bash evaluates a variable in "
                            "arithmetic (`(( ))`, `$(( ))`, `[[ -eq ]]`, `let`, subscripts, "
                            "`${!x}`) as an expression, which can run commands: compare "
                            f"with `[ \"${name}\" -gt 0 ]` or compute with `expr` or `jq`.")
        return None

    def path_safe(self, word: Word) -> bool:
        """Whether every expansion in a file name is a variable that can hold no `/`
        and never be `..` (nor empty, at the start: `"$d/x"` must not become `/x`)."""
        for at, reference in enumerate(_REFERENCE.finditer(word.text[len(word.prefix):])):
            name = reference.group(1)
            if self.kind(name) not in (INTEGER, PLAIN):
                return False
            if at == 0 and not word.prefix and not self._nonempty(name):
                return False
        rest = _REFERENCE.sub("", word.text[len(word.prefix):])
        return "$" not in rest and "`" not in rest and not word.pattern


    def _nonempty(self, name: str) -> bool:
        return all(source == INTEGER or (isinstance(source, str) and source not in (PLAIN, ANY)
                                         and source != "")
                   for source in self.sources.get(name, [""]))


_ORDER = {INTEGER: 0, PLAIN: 1, ANY: 2}


def _join(a: str, b: str) -> str:
    return a if _ORDER[a] >= _ORDER[b] else b


def _source(source: Word | str) -> tuple[str, list[str], list[str]]:
    """(the kind a value gives by itself, the variables it copies, the names in it)."""
    if source in (ANY, INTEGER, PLAIN):
        return source, [], []
    if isinstance(source, str):  # a literal value
        if _INTEGER_TEXT.fullmatch(source):
            return INTEGER, [], []
        if not _PLAIN_TEXT.fullmatch(source) or source == "..":
            return ANY, [], []
        return PLAIN, [], NAME.findall(source)
    text = source.text.partition("=")[2]
    if _INTEGER_WORDS.fullmatch(text):
        return INTEGER, [], []
    reference = _REFERENCE.fullmatch(text)
    if reference:
        name = reference.group(1)
        if name in _SPECIAL:
            return _SPECIAL[name], [], []
        if name.isdigit() or name in ("@", "*"):
            return ANY, [], []
        return INTEGER, [name], []
    return ANY, [], []


def _names(text: str) -> list[str]:
    """The variables an arithmetic text names, bare or as `$x`/`${x}`."""
    code = re.sub(r"'[^']*'", " ", text)
    return [m.group(1) or m.group(2) for m in
            re.finditer(r"\$\{?([A-Za-z_][A-Za-z0-9_]*|[0-9@*])|([A-Za-z_][A-Za-z0-9_]*)", code)
            if not (m.group(2) and re.match(r"0[xX]|[0-9]", code[max(0, m.start() - 1):m.start()]))]


def _arith_text(word: Word) -> str:
    return word.value if word.value is not None else word.text


def _subscripts(word: Word) -> list[str]:
    text = _arith_text(word)
    name = NAME.match(text)
    if name and text[name.end():].startswith("["):
        rest = text[name.end() + 1:]
        return [rest[:rest.find("]")] if "]" in rest else rest]
    return []

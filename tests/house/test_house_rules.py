"""The house's rules, kept by tests instead of by hand: no module over 400 lines; the
exit codes written once (benchkit/exits.py), every table and help of them its copy;
every path a comment or document names is there; no module-level function or class
that nothing uses; no class name defined twice; every exception benchkit defines a
BenchkitError. Each failure says what to do about it.

The path and use rules read the checkout's sources in one pass of one regular expression
(`scan`): well under a second for the whole tree.
"""

import ast
import builtins
import re
import signal
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from click.testing import CliRunner
from conftest import CHECKOUT

from benchkit import exits
from benchkit.cli import main

# --- no module over 400 lines -------------------------------------------------------

CAP = 400


def test_no_module_is_over_400_lines():
    """benchkit/ and benchmarks/, the code a reader reads as modules (a test file is one
    module's behaviours, its cases in long tables: not under the cap)."""
    modules = [*(CHECKOUT / "benchkit").rglob("*.py"), *(CHECKOUT / "benchmarks").glob("*.py")]
    over = [f"{path.relative_to(CHECKOUT)}: {lines} lines" for path in sorted(modules)
            if (lines := len(path.read_text(encoding="utf-8").splitlines())) > CAP]
    assert not over, (
        f"over the {CAP}-line cap: split each by idea, not by size (a part that is one "
        "idea of its own moves to a module named for it; the commit names the idea):\n"
        + "\n".join(over))


# --- the exit codes, written once ---------------------------------------------------

EXIT_TABLE = re.compile(r"^\| exit \| meaning \|\n\| --- \| --- \|\n((?:\|.*\|\n)*)", re.M)


def table_rows() -> list[str]:
    return [f"| {code} | {meaning.replace('|', chr(92) + '|')} |"
            for code, meaning in sorted(exits.MEANINGS.items())]


def test_every_exit_code_has_its_meaning():
    codes = {name: value for name, value in vars(exits).items() if name.startswith("EXIT_")}
    missing = [f"add `{name}: \"<what exit {code} means>: <its details>\",` to MEANINGS"
               for name, code in codes.items() if code not in exits.MEANINGS]
    assert not missing, "benchkit/exits.py: " + "; ".join(missing)
    unnamed = sorted(set(exits.MEANINGS) - set(codes.values()))
    assert not unnamed, f"benchkit/exits.py: MEANINGS holds {unnamed}, no EXIT_ constant"


def exit_table_problems(name: str, text: str) -> list[str]:
    """Each of a document's exit tables (headed `| exit | meaning |`) whose rows are not
    MEANINGS', and the rows it must have."""
    expected = table_rows()
    return [f"{name}:{text.count(chr(10), 0, table.start(1)) + 1}: replace the table's rows "
            f"from this line on with\n" + "\n".join(expected)
            for table in EXIT_TABLE.finditer(text) if table[1].splitlines() != expected]


def test_the_exit_tables_are_the_meanings_of_exits_py():
    found = {}
    for name in ("README.md", *sorted(p.relative_to(CHECKOUT).as_posix()
                                      for p in (CHECKOUT / "docs").glob("*.md"))):
        text = (CHECKOUT / name).read_text(encoding="utf-8")
        found[name] = len(EXIT_TABLE.findall(text)), exit_table_problems(name, text)
    assert found["docs/contracts.md"][0] == 1, "docs/contracts.md: the exit table is missing"
    problems = [line for _, lines in found.values() for line in lines]
    assert not problems, ("an exit table says what benchkit/exits.py's MEANINGS says, word "
                          "for word (a meaning changes there first):\n" + "\n\n".join(problems))


def test_a_stale_exit_table_is_told_what_to_write():
    rows = table_rows()
    stale = f"# Exits\n\n| exit | meaning |\n| --- | --- |\n{rows[0]}\n| 7 | gone |\n\nMore.\n"
    assert exit_table_problems("x.md", stale) == [
        "x.md:5: replace the table's rows from this line on with\n" + "\n".join(rows)]
    assert exit_table_problems("x.md", stale.replace(f"{rows[0]}\n| 7 | gone |", "\n".join(rows))) == []


def test_the_help_says_every_exit_code():
    done = CliRunner().invoke(main, ["-h"])
    said = " ".join(done.output.split())
    for code, meaning in exits.MEANINGS.items():
        assert f"{code} {' '.join(meaning.split(': ')[0].split())}" in said


EXIT_NAMED = re.compile(r"\bexit(?:s| status| code)? (\d+)\b")
SIGNALLED = {128 + s.value for s in signal.Signals}  # a stop's status: 128 + the signal


def test_every_exit_code_a_text_names_is_one_exits_py_defines():
    """The docs, the README, and benchkit's help and comments."""
    names = ["README.md", *(f"docs/{p.name}" for p in (CHECKOUT / "docs").glob("*.md")),
             *(n for n in files() if n.startswith("benchkit/") and n.endswith(".py"))]
    unknown = []
    for name in names:
        text = (CHECKOUT / name).read_text(encoding="utf-8")
        for found in EXIT_NAMED.finditer(text):
            if int(found[1]) not in exits.MEANINGS and int(found[1]) not in SIGNALLED:
                unknown.append(f"{name}:{text.count(chr(10), 0, found.start()) + 1}: "
                               f"{found[0]}")
    assert not unknown, ("exit codes benchkit/exits.py does not define: add each to its "
                         "EXIT_ constants and MEANINGS, or correct the text:\n"
                         + "\n".join(unknown))


# --- the sources, read in one pass ----------------------------------------------------

@cache
def files() -> tuple[str, ...]:
    """The checkout's files, committed or not (but not those git ignores)."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                            cwd=CHECKOUT, capture_output=True, text=True, check=True)
    return tuple(n for n in sorted(set(listed.stdout.splitlines())) if (CHECKOUT / n).is_file())


# What in Python's source is not code: a string (with its prefix) or a comment, found in
# one pass of one regular expression. The code between them is read whole, by C-speed
# searches: its names, its brackets (a string inside brackets is no statement), its
# definitions. (The tokenize module, pure Python in 3.11, took three times as long.)
NOT_CODE = re.compile(r'''[rRbBuUfF]{0,2}(?:"""(?:\\.|[^\\])*?"""|\'\'\'(?:\\.|[^\\])*?\'\'\'
                                      |"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
                      |\#[^\n]*''', re.X | re.S)
ENDS_LINE = re.compile(r"[ \t]*(?:#[^\n]*)?(?:\n|$)")  # after a string: nothing more
DEFINED = re.compile(r"^(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.M)
DEFINITION = re.compile(r"\b(?:def|class)[ \t]+\w+")
WORD = re.compile(r"[A-Za-z_]\w*")


@dataclass
class Source:
    """What one Python file says: `used`, the names its code uses (in strings too, as
    `"module:function"` and `__all__` name them; not a definition's own name); `prose`,
    its comments and docstrings (a string that is a statement of its own) by line;
    `defined`, its module-level functions and classes by line."""
    used: set[str] = field(default_factory=set)
    prose: list[tuple[int, str]] = field(default_factory=list)
    defined: list[tuple[int, str]] = field(default_factory=list)


def alone(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] is alone on its line (one a backslash does not join to
    the line before), but for a comment after it."""
    begins = text.rfind("\n", 0, start)
    return not text[begins + 1:start].strip() and ENDS_LINE.match(text, end) is not None \
        and (begins < 1 or text[begins - 1] != "\\")


def scan(text: str) -> Source:
    source, code, strings = Source(), [], []
    depth, line, done = 0, 1, 0
    for found in NOT_CODE.finditer(text):
        start, value = found.start(), found[0]
        between = text[done:start]
        code.append(between)
        depth += sum(map(between.count, "([{")) - sum(map(between.count, ")]}"))
        line += between.count("\n")
        if value[0] == "#" or depth == 0 and alone(text, start, found.end()):
            source.prose.append((line, value))  # a comment, or a string as a statement
        else:
            strings.append(value)
        code.append(" " + "\n" * value.count("\n"))  # its lines kept: definitions are by line
        line += value.count("\n")
        done = found.end()
    code.append(text[done:])
    program = "".join(code)
    source.used.update(WORD.findall(DEFINITION.sub(" ", program)))
    source.used.update(WORD.findall(" ".join(strings)))
    line, done = 1, 0
    for found in DEFINED.finditer(program):
        line += program.count("\n", done, found.start())
        done = found.start()
        source.defined.append((line, found[1]))
    return source


@cache
def sources() -> dict[str, Source]:
    return {name: scan((CHECKOUT / name).read_text(encoding="utf-8"))
            for name in files() if name.endswith(".py")}


def test_the_scan_tells_code_from_prose():
    source = scan('"""The module: see docs/a.md."""\n\nimport x  # docs/b.md\n\n\n'
                  'async def f(a="docs/c.md"):\n    """Its doc."""\n    return g(\n'
                  '        "h:i")\n\n\nclass C:\n    def m(self):\n        pass\n'
                  's = "#" + \'\'\'\nlong\'\'\'\n')
    assert source.prose == [(1, '"""The module: see docs/a.md."""'), (3, "# docs/b.md"),
                            (7, '"""Its doc."""')]
    assert source.defined == [(6, "f"), (12, "C")]
    assert {"x", "a", "docs", "c", "md", "g", "h", "i", "self", "s", "long"} <= source.used
    assert not {"f", "C", "m", "The", "Its", "b"} & source.used


# --- every path a comment or document names is there --------------------------------

# A path: name characters in segments joined by `/`, standing alone (not part of a URL,
# a glob, a placeholder like <arm> or a longer word), ending in a file name with an
# extension (`x.py`) or in `/` (a directory), and rooted where the project's paths are:
# at a top-level entry of the checkout (`docs/layout.md`, `tests/conftest.py`) or a package
# of benchkit/ (`trial/cell.py`). A Markdown link's target is a path from its document.
PATH = re.compile(r"(?<![\w./*<>{}$~@:%-])((?:[\w.-]+/)+[\w.-]*)(?![\w/*<>{}$%-])")
LINK = re.compile(r"\]\(([^)\s]+)\)")
NAMED = re.compile(r"\.[A-Za-z]\w*$|/$")  # a file with an extension, or a directory
# A name in capitals is a placeholder: `refs.d/ARM.yaml`, `benchmarks/NAME.py`.
PLACEHOLDER = re.compile(r"(?:^|/)[A-Z][A-Z0-9_]*(?:\.\w+)?(?:/|$)")
# A guide's example: a YAML document the Markdown file gives (`id: NAME` or `arm: NAME`
# at a line's start) is the reader's to save as `DIR/NAME.yaml`.
EXAMPLE = re.compile(r"^(?:id|arm): ([\w.-]+)$", re.M)


def path_problems(name: str, chunks: Iterable[tuple[int, str]], roots: set[str],
                  examples: set[str] = frozenset(), links: bool = False) -> Iterator[str]:
    """`name:line: path` for each path the chunks (line, text) name that is not there."""
    for first, text in chunks:
        for found in PATH.finditer(text):
            path = found[1].rstrip(".")
            top = path.split("/")[0]
            where = path if top in roots else f"benchkit/{path}" if top in PACKAGES else None
            if where is None or not NAMED.search(path) or Path(path).stem in examples:
                continue
            if not (CHECKOUT / where).exists() and not PLACEHOLDER.search(path):
                yield f"{name}:{first + text.count(chr(10), 0, found.start())}: {path}"
        for found in (LINK.finditer(text) if links else ()):
            target = found[1].split("#")[0]
            if not target or "://" in target or target.startswith(("/", "mailto:")):
                continue
            if not (CHECKOUT / name).parent.joinpath(target).exists() and \
                    not PLACEHOLDER.search(target):
                yield f"{name}:{first + text.count(chr(10), 0, found.start())}: {target}"


PACKAGES = {p.name for p in (CHECKOUT / "benchkit").iterdir() if (p / "__init__.py").is_file()}
SHELL_COMMENT = re.compile(r"(?:^|\s)#.*", re.M)


def named_paths() -> Iterator[str]:
    roots = {name.split("/")[0] for name in files()}
    for name in files():
        top = name.split("/")[0]
        if name.endswith(".py") and top in ("benchkit", "scripts", "benchmarks", "tests"):
            yield from path_problems(name, sources()[name].prose, roots)
        elif top in ("scripts", ".ci") and "." not in Path(name).name or name.endswith(".sh"):
            text = (CHECKOUT / name).read_text(encoding="utf-8")
            yield from path_problems(name, ((text.count("\n", 0, c.start()) + 1, c[0])
                                            for c in SHELL_COMMENT.finditer(text)), roots)
        elif name == "README.md" or top == "docs" and name.endswith(".md"):
            text = (CHECKOUT / name).read_text(encoding="utf-8")
            yield from path_problems(name, [(1, text)], roots, set(EXAMPLE.findall(text)),
                                     links=True)


def test_every_path_a_comment_or_document_names_is_there():
    missing = list(named_paths())
    assert not missing, (
        "paths named in comments, docstrings and docs that are not there: correct each "
        "(the file moved or was renamed?), or say it otherwise (a placeholder in "
        "capitals, `DIR/NAME.py`):\n" + "\n".join(missing))


def test_a_path_that_is_not_there_is_found_and_what_is_no_path_is_not():
    text = ("see docs/layout.md, docs/gone.md and run/gone.py; [x](gone.md) [y](layout.md)\n"
            "results/<arm>/<task>.jsonl tasks.d/*.yaml refs.d/ARM.yaml https://h/docs/no.md\n"
            "input/output, docs/no-extension, ~/docs/x.md, tasks.d/my-task.yaml.\n")
    found = list(path_problems("docs/x.md", [(10, text)], {"docs", "tasks.d"},
                               examples={"my-task"}, links=True))
    assert found == ["docs/x.md:10: docs/gone.md", "docs/x.md:10: run/gone.py",
                     "docs/x.md:10: gone.md"]


# --- no function or class nothing uses ---------------------------------------------

# Besides Python's code (not its comments or docstrings), what can use a function of
# benchkit's: the templates, the scripts, and pyproject.toml's entry points.
CALLERS = re.compile(r"\.j2$|\.sh$|^pyproject\.toml$|^(?:scripts|\.ci)/[^./]+$")


def unused(sources: dict[str, Source], others: Iterable[str]) -> list[str]:
    """`file:line: name` of each module-level function or class of benchkit/ whose name
    no code uses (a dunder hook is Python's)."""
    used = set().union(*(source.used for source in sources.values()))
    for text in others:
        used.update(WORD.findall(text))
    return [f"{name}:{line}: {defined}" for name, source in sources.items()
            if name.startswith("benchkit/") for line, defined in source.defined
            if defined not in used and not re.fullmatch(r"__\w+__", defined)]


def test_no_module_level_function_or_class_is_unused():
    others = ((CHECKOUT / name).read_text(encoding="utf-8") for name in files()
              if CALLERS.search(name))
    found = unused(sources(), others)
    assert not found, (
        "defined in benchkit/ and used nowhere (benchkit/, tests/, benchmarks/, scripts/, "
        "the templates, pyproject.toml): delete each, or use it. A decorator is no use "
        "(most wrap); register a function with a call: `atexit.register(f)`:\n"
        + "\n".join(found))


def test_an_unused_function_is_found_whatever_names_it_in_prose():
    sources = {"benchkit/a.py": scan('def kept():\n    """Unlike dropped()."""\n\n\n'
                                     'def dropped():  # not `kept`\n    pass\n\n\n'
                                     'def __getattr__(name):\n    pass\n\n\n'
                                     'def templated():\n    pass\n'),
               "tests/test_a.py": scan("from benchkit.a import kept\n"),
               "benchkit/b.py": scan('__all__ = ["Named"]\n\n\nclass Named:\n    pass\n\n\n'
                                     '@decorated\ndef registered():\n    pass\n')}
    assert unused(sources, ["{{ templated() }}"]) == ["benchkit/a.py:5: dropped",
                                                       "benchkit/b.py:9: registered"]


# --- one name, one class; one root of every exception -----------------------------------

@cache
def product_trees() -> dict[str, ast.Module]:
    """benchkit/'s modules, parsed: `benchkit/DIR/NAME.py` -> its tree."""
    return {str(path.relative_to(CHECKOUT)): ast.parse(path.read_text(encoding="utf-8"))
            for path in sorted((CHECKOUT / "benchkit").rglob("*.py"))}


def classes(trees: dict[str, ast.Module]) -> dict[str, list[tuple[str, ast.ClassDef]]]:
    """class name -> (module, its definition) of each class of that name."""
    found: dict[str, list[tuple[str, ast.ClassDef]]] = {}
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append((name, node))
    return found


def twice_defined(trees: dict[str, ast.Module]) -> list[str]:
    return [f"{name}: " + ", ".join(f"{module}:{node.lineno}" for module, node in defined)
            for name, defined in sorted(classes(trees).items()) if len(defined) > 1]


def test_no_class_name_is_defined_twice():
    found = twice_defined(product_trees())
    assert not found, (
        "one class name, two things: rename each so its name says which (a report's "
        "record, a run's event, the forge's store), and its every use:\n" + "\n".join(found))


ROOT = "BenchkitError"  # benchkit/errors.py
# Exceptions that must not derive from the root, and why: none is an error of benchkit's
# that a command could end on with an `error:` line.
OFF_ROOT = {
    "Interrupted": "a stop, not an error: a KeyboardInterrupt, so no `except Exception` "
                   "records it (benchkit.stopping)",
    "CredentialsRefused": "an Interrupted: the run stops as on a stop signal, exit 2 "
                          "(benchkit.run.cancel)",
    "BadInput": "click's: how a command ends with exit 2, which click prints and exits with",
    "Ended": "click's, as BadInput",
}
BUILTIN_EXCEPTIONS = {name for name, value in vars(builtins).items()
                      if isinstance(value, type) and issubclass(value, BaseException)}


def base_name(node: ast.expr) -> str:
    """A base as written, its last name: `http.client.HTTPException` -> HTTPException."""
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def off_root(trees: dict[str, ast.Module]) -> list[str]:
    """`module:line: name` of each exception class defined in `trees` that does not
    derive from ROOT (by the names of its bases: a class name is defined once)."""
    defined = {name: nodes[0][1] for name, nodes in classes(trees).items()}

    @cache
    def ancestors(name: str) -> frozenset[str]:
        node = defined.get(name)
        bases = [base_name(base) for base in node.bases] if node is not None else []
        return frozenset(bases).union(*(ancestors(base) for base in bases))

    def exception(name: str) -> bool:
        return any(a in BUILTIN_EXCEPTIONS or (a not in defined and a.endswith("Exception"))
                   for a in ancestors(name))

    return [f"{module}:{node.lineno}: {name}" for name, nodes in sorted(classes(trees).items())
            for module, node in nodes if name != ROOT and name not in OFF_ROOT
            and exception(name) and ROOT not in ancestors(name)]


def test_every_exception_derives_from_benchkit_error():
    found = off_root(product_trees())
    assert not found, (
        f"an exception of benchkit's that is no {ROOT} (benchkit/errors.py): add {ROOT} to "
        "its bases (beside ValueError or the like its callers catch), or, if it must not "
        "be caught as an error, name it and why in OFF_ROOT:\n" + "\n".join(found))


def test_the_exception_rules_find_a_second_name_and_an_exception_off_the_root():
    trees = {"benchkit/a.py": ast.parse("class BenchkitError(Exception): pass\n"
                                        "class Kept(ValueError, BenchkitError): pass\n"
                                        "class Under(Kept): pass\n"
                                        "class Loose(ValueError): pass\n"
                                        "class Remote(http.client.HTTPException): pass\n"
                                        "class Plain: pass\n"),
             "benchkit/b.py": ast.parse("class Plain: pass\nclass Other(Loose): pass\n")}
    assert twice_defined(trees) == ["Plain: benchkit/a.py:6, benchkit/b.py:1"]
    assert off_root(trees) == ["benchkit/a.py:4: Loose", "benchkit/b.py:2: Other",
                               "benchkit/a.py:5: Remote"]

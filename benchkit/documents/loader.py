"""YAML with line numbers, validated against benchkit's JSON Schemas.

Every problem a document has is reported at once, as `FILE:LINE: message (at path)`,
so a user fixes a broken tree in one pass. Lines come from the YAML node tree: each
mapping value, sequence item and key keeps the line it starts on, and a schema error's
path into the data is looked up there.
"""

from __future__ import annotations

import copy
import difflib
import functools
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from benchkit import SCHEMA_DIR
from benchkit.exits import BadDocuments

JsonPath = tuple[str | int, ...]  # keys and indexes from the document root


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one file; `line` is 1-based, None when no line applies."""

    file: Path
    line: int | None
    message: str
    where: str = ""

    def __str__(self) -> str:
        place = f"{display_path(self.file)}:{self.line}" if self.line else display_path(self.file)
        suffix = f" (at {self.where})" if self.where else ""
        return f"{place}: {self.message}{suffix}"


class DocumentError(BadDocuments):
    """Raised with every problem found, so none has to be discovered one run at a time."""

    problems: list[Problem]

    def __init__(self, problems):
        super().__init__(sort_problems(problems))


def sort_problems(problems) -> list[Problem]:
    """By file, then line; duplicates dropped."""
    return sorted(set(problems), key=lambda p: (str(p.file), p.line or 0, p.where, p.message))


def display_path(path) -> str:
    """The path relative to the working directory when it lies under it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


def format_path(path: JsonPath) -> str:
    """('issues', 2, 'labels') -> 'issues[2].labels'."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", str(part)):
            text += f".{part}" if text else str(part)
        else:
            text += f"[{json.dumps(str(part))}]"
    return text


@dataclass
class Document:
    """A parsed YAML file: its data and the line every node of it starts on."""

    path: Path
    data: Any  # whatever the YAML holds; a mapping once its schema has validated it
    lines: dict[JsonPath, int] = field(default_factory=dict)  # of each value
    key_lines: dict[JsonPath, int] = field(default_factory=dict)  # of each mapping key

    def line(self, path: JsonPath) -> int:
        """The line of the node at `path`, else of its nearest ancestor that exists."""
        path = tuple(path)
        while path and path not in self.lines:
            path = path[:-1]
        return self.lines.get(path, 1)

    def problem(self, path: JsonPath, message: str, *, at_key: bool = False) -> Problem:
        """A Problem about the node at `path` (at its key's line when `at_key`)."""
        path = tuple(path)
        line = self.key_lines.get(path) if at_key else None
        return Problem(self.path, line or self.line(path), message, format_path(path))


# libyaml's loader when present (several times faster); the type checker sees the
# pure-Python one, whose interface it shares.
if TYPE_CHECKING:
    _SafeLoader = yaml.SafeLoader
else:
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _LineLoader(_SafeLoader):
    """A safe loader that keeps the node -> object map its construction used."""

    def construct_document(self, node):
        data = self.construct_object(node, deep=True)
        self.objects = dict(self.constructed_objects)
        self.constructed_objects, self.recursive_objects = {}, {}
        return data


def read_document(path) -> Document:
    """Parse one YAML file; a syntax error becomes a DocumentError at its own line."""
    path = Path(path).absolute()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise DocumentError([Problem(path, None, f"cannot read: {_reason(error)}")]) from None
    loader = _LineLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
        document = Document(path, data)
        problems: list[Problem] = []
        if node is not None:
            _record_lines(document, node, (), loader.objects, problems, set())
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        raise DocumentError([Problem(path, mark.line + 1 if mark else None, _yaml_message(error))]) from None
    except yaml.YAMLError as error:
        raise DocumentError([Problem(path, None, f"YAML error: {error}")]) from None
    finally:
        loader.dispose()
    if problems:
        raise DocumentError(problems)
    return document


def _reason(error: Exception) -> str:
    return error.strerror if isinstance(error, OSError) and error.strerror else str(error)


def _yaml_message(error: yaml.MarkedYAMLError) -> str:
    message = f"YAML syntax error: {error.problem or error.context}"
    if error.problem and error.context and error.context_mark:
        message += f" ({error.context} started on line {error.context_mark.line + 1})"
    return message


def _record_lines(document, node, path, objects, problems, active):
    document.lines[path] = node.start_mark.line + 1
    if id(node) in active:  # a recursive alias: its lines are recorded already
        return
    active.add(id(node))
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = objects.get(key_node, getattr(key_node, "value", None))
            if path + (key,) in document.key_lines:
                problems.append(
                    Problem(document.path, key_node.start_mark.line + 1,
                            f"duplicate key {key!r}", format_path(path + (key,))))
            document.key_lines[path + (key,)] = key_node.start_mark.line + 1
            _record_lines(document, value_node, path + (key,), objects, problems, active)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _record_lines(document, item, path + (index,), objects, problems, active)
    active.discard(id(node))


def strings(value, path: JsonPath = ()):
    """(path, text) of every string in `value`, which stands at `path` of a document."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from strings(item, path + (index,))


# --- JSON Schema -------------------------------------------------------------------

@functools.cache
def schema(name: str) -> dict:
    """The shipped schema `benchkit/schemas/<name>.schema.json`."""
    return json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))


@functools.cache
def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(schema(name))


def schema_problems(document: Document, schema_name) -> list[Problem]:
    """Every way the document breaks the schema (a shipped schema's name, or a schema
    itself), one Problem each."""
    validator = _validator(schema_name) if isinstance(schema_name, str) else Draft202012Validator(schema_name)
    problems = []
    for error in validator.iter_errors(document.data):
        problems.extend(_explain(document, error))
    return sort_problems(problems)


def load_document(path, schema_name: str, check=None) -> Document:
    """Read, validate, fill in schema defaults and run `check(document) -> [Problem]`
    (the rules a schema cannot express); raise DocumentError with every problem.

    `check` runs even when the schema found problems, so all are reported in one pass;
    it should skip values of the wrong type (the schema has reported them), and a
    KeyError/TypeError it raises on such a shape is taken as "nothing more to say".
    """
    document = read_document(path)
    problems = schema_problems(document, schema_name)
    document.data = with_defaults(document.data, schema(schema_name))
    if check is not None:
        try:
            problems += check(document)
        except (KeyError, TypeError, AttributeError, IndexError):
            if not problems:
                raise
    if problems:
        raise DocumentError(problems)
    return document


def _explain(document: Document, error) -> list[Problem]:
    path = tuple(error.absolute_path)
    custom = error.schema.get("errorMessage") if isinstance(error.schema, dict) else None
    kind = error.validator
    if kind == "additionalProperties" and isinstance(error.instance, dict):
        return [document.problem(path + (key,), _unknown_key(key, error.schema), at_key=True)
                for key in _extra_keys(error.instance, error.schema)]
    if kind == "required":
        return [document.problem(path, error.message.replace(" is a required property", " is required"))]
    if kind in ("anyOf", "oneOf") and error.context:
        return _explain_alternatives(document, error, path)
    if custom:
        return [document.problem(path, custom, at_key=kind in ("not", "false"))]
    if kind == "pattern" and isinstance(error.schema, dict) and "patternErrorMessage" in error.schema:
        return [document.problem(path, f"{error.schema['patternErrorMessage']}, got {error.instance!r}")]
    return [document.problem(path, _message(error), at_key=kind in ("not", "false"))]


def _explain_alternatives(document: Document, error, path) -> list[Problem]:
    """Say why no branch of an anyOf/oneOf fits, in terms of the branch the user meant:
    the one whose type matches the value, when there is exactly one."""
    branches: dict[object, list] = {}
    for sub in error.context:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    at_root = [[e for e in errors if not e.relative_path] for errors in branches.values()]
    if all(e and all(x.validator == "required" for x in e) for e in at_root):
        keys = [x.message.removesuffix(" is a required property") for e in at_root for x in e]
        return [document.problem(path, f"one of {' or '.join(dict.fromkeys(keys))} is required")]
    fitting = [errors for errors in branches.values()
               if not any(e.validator == "type" and not e.relative_path for e in errors)]
    if len(fitting) == 1:
        return [problem for sub in fitting[0] for problem in _explain(document, sub)]
    if not fitting:
        names = [name for errors in branches.values() for e in errors
                 if e.validator == "type" and not e.relative_path
                 for name in _listed(e.validator_value)]
        return [document.problem(path, _wrong_type(dict.fromkeys(names), error.instance))]
    return _explain(document, best_match(error.context))


def _extra_keys(instance: dict, subschema: dict) -> list:
    known = subschema.get("properties", {})
    patterns = subschema.get("patternProperties", {})
    return [key for key in instance
            if key not in known and not any(re.search(p, str(key)) for p in patterns)]


def _unknown_key(key, subschema: dict) -> str:
    return f"unknown key {key!r}{did_you_mean(str(key), subschema.get('properties', {}))}"


def did_you_mean(word: str, choices: Iterable[str], shown=repr) -> str:
    """" (did you mean X?)" naming the choice closest to a mistyped word, or "" when
    none is close; `shown` renders the choice (quoted by default)."""
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {shown(close[0])}?)" if close else ""


_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string",
               list: "array", dict: "object", type(None): "null"}


def json_type(value) -> str:
    """The JSON name of a YAML value's type (YAML dates and such keep their own name)."""
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _listed(expected) -> list:
    """A `type` keyword's value as a list of names."""
    return expected if isinstance(expected, list) else [expected]


def _wrong_type(names, value) -> str:
    return f"expected {' or '.join(names)}, got {json_type(value)}"


# Keyword -> its message from the keyword's value and the instance.
_MESSAGES = {
    "type": lambda expected, value: _wrong_type(_listed(expected), value),
    "enum": lambda expected, value: (f"expected one of {', '.join(map(repr, expected))}, "
                                     f"got {value!r}"),
    "const": lambda expected, value: f"expected {expected!r}, got {value!r}",
    "pattern": lambda expected, value: f"{value!r} does not match the pattern {expected}",
    "minItems": lambda expected, _: f"expected at least {expected} item{'s' if expected != 1 else ''}",
    "maxLength": lambda expected, value: (f"expected at most {expected} characters, got "
                                          f"{len(value)}"),
    "minimum": lambda expected, value: f"expected at least {expected}, got {value!r}",
    "exclusiveMinimum": lambda expected, value: f"expected more than {expected}, got {value!r}",
}


def _message(error) -> str:
    kind, expected, value = error.validator, error.validator_value, error.instance
    if kind in _MESSAGES:
        return _MESSAGES[kind](expected, value)
    if kind == "minLength" and expected == 1:
        return "must not be empty"
    if kind == "uniqueItems":
        seen: list = []
        repeated: list = []
        for item in value:
            (repeated if item in seen else seen).append(item)
        return f"duplicate item {repeated[0]!r}" if repeated else "items must be unique"
    if kind in ("not", "false"):
        return "not allowed here"
    return error.message


def with_defaults(data, subschema: dict):
    """A copy of `data` with every missing property that has a schema default filled in.

    Follows local `$ref`s, `properties`, `items`, `allOf` and the `then` of any `if` the
    data satisfies, so each default is written once, in the schema.
    """
    data = copy.deepcopy(data)
    _fill(data, subschema, subschema)
    return data


def _fill(data, subschema, root: dict):
    subschema = _resolve(subschema, root)
    if not isinstance(subschema, dict):
        return
    if isinstance(data, dict):
        for key, prop in subschema.get("properties", {}).items():
            prop = _resolve(prop, root)
            if key not in data and isinstance(prop, dict) and "default" in prop:
                data[key] = copy.deepcopy(prop["default"])
            if key in data:
                _fill(data[key], prop, root)
    if isinstance(data, list) and "items" in subschema:
        for item in data:
            _fill(item, subschema["items"], root)
    for branch in subschema.get("allOf", []):
        _fill(data, branch, root)
    branch = _resolve(subschema.get("if"), root)
    if "then" in subschema and isinstance(branch, dict) and Draft202012Validator(branch).is_valid(data):
        _fill(data, subschema["then"], root)


def _resolve(subschema, root: dict):
    while isinstance(subschema, dict) and str(subschema.get("$ref", "")).startswith("#/"):
        target = root
        for part in subschema["$ref"][2:].split("/"):
            target = target[part]
        subschema = target
    return subschema


MODELINE = re.compile(r"^#\s*yaml-language-server:\s*\$schema=(\S+)", re.MULTILINE)


def declared_schema(path) -> Path | None:
    """The schema a file names in its `# yaml-language-server: $schema=` line, resolved."""
    try:
        head = Path(path).read_text(encoding="utf-8")[:2000]
    except (OSError, UnicodeDecodeError):
        return None
    match = MODELINE.search(head)
    if not match:
        return None
    return Path(os.path.normpath(Path(path).parent / match.group(1)))

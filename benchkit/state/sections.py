"""The RepoState's sections as one table: for each, its entries' name in a difference,
the field that keys an entry (none: a multiset of whole records; "": one record, the
repository's settings), and each field's normaliser and how the checker compares it.

`normalise` (benchkit.state) and the checker's diff (benchkit.scoring.diff) both walk
this table, so a kind added here is captured, normalised and compared everywhere.
A field marked `always` is filled with its default when an entry lacks it (the
contract's first fields); any other field, and any section but the first three, is
kept only where the state carries it, and compared only where both states do.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from . import records
from .records import Kind
from .values import (
    StateError,
    as_list,
    flag,
    names,
    normalise_color,
    normalise_date,
    normalise_name,
    normalise_text,
    number,
)

ISSUE_STATES = ("open", "closed")
PULL_STATES = ("open", "closed", "merged")
MILESTONE_STATES = ("open", "closed")


@dataclass(frozen=True)
class Field:
    name: str
    compare: str  # "scalar", "set", "multiset" (of `kind`), "files" or "settings"
    value: Callable[[object, str], object]
    kind: Kind | None = None
    always: object = ...  # the default an entry lacking it gets; ... keeps it absent


@dataclass(frozen=True)
class Section:
    name: str
    noun: str
    key: str | None  # the keying field; None: a multiset of `kind`; "": one record
    fields: tuple[Field, ...] = ()
    kind: Kind | None = None
    required: bool = False


def _enum(states):
    def value(raw, where):
        state = str(raw).lower()
        if state not in states:
            raise StateError(f"{where}: state {raw!r} is not one of {', '.join(states)}")
        return state
    return value


def _text(raw, where):
    return normalise_text(raw)


def _name(raw, where):
    return normalise_name(raw)


def _optional_name(raw, where):
    return None if raw in (None, "") else normalise_name(raw)


def _int(raw, where):
    return number(raw, where)


def _optional_int(raw, where):
    return None if raw is None else number(raw, where)


def _date(raw, where):
    return normalise_date(raw)


def _names(raw, where):
    return names({"v": raw}, "v", where)


def _records(kind: Kind, raw, where):
    return records.normalise_all(kind, as_list({"v": raw}, "v", where), where)


def _files(raw, where):
    """path -> the file's content hash (git's blob id; a mode other than 100644 before it)."""
    if not isinstance(raw, dict):
        raise StateError(f"{where} must map paths to content hashes, got {type(raw).__name__}")
    return {str(path): str(value) for path, value in sorted(raw.items())}


def _settings(raw, where):
    """Settings as the host shows them: each a JSON value, lists as sorted sets."""
    if not isinstance(raw, dict):
        raise StateError(f"{where} must be an object, got {type(raw).__name__}")
    return {str(key): sorted(map(str, value)) if isinstance(value, list) else value
            for key, value in sorted(raw.items())}


def _scalar(raw, where):
    return raw


def _multiset(name: str, kind: Kind, always=...) -> Field:
    return Field(name, "multiset", partial(_records, kind), kind, always)


_ISSUE = (
    Field("title", "scalar", _name),
    Field("body", "scalar", _text, always=""),
    Field("labels", "set", _names, always=[]),
    Field("assignees", "set", _names, always=[]),
    _multiset("comments", records.COMMENT, always=[]),
    Field("milestone", "scalar", _optional_name),
    Field("due_date", "scalar", _date),
    Field("pin_order", "scalar", _int),
    Field("locked", "scalar", flag),
    Field("ref", "scalar", _name),
    _multiset("tracked_times", records.TRACKED_TIME),
    _multiset("reactions", records.REACTION),
    Field("subscribed", "scalar", flag),
    _multiset("attachments", records.ATTACHMENT),
)

SECTIONS: tuple[Section, ...] = (
    Section("labels", "label", "name", (
        Field("color", "scalar", lambda raw, where: normalise_color(raw), always=""),
        Field("description", "scalar", _text, always=""),
        Field("exclusive", "scalar", flag),
        Field("archived", "scalar", flag),
    ), required=True),
    Section("issues", "issue", "number",
            (_ISSUE[0], Field("state", "scalar", _enum(ISSUE_STATES)), *_ISSUE[1:]), required=True),
    Section("pull_requests", "pull request", "number", (
        _ISSUE[0], Field("state", "scalar", _enum(PULL_STATES)), *_ISSUE[1:],
        _multiset("reviews", records.REVIEW, always=[]),
        Field("base", "scalar", _name),
        Field("head", "scalar", _name),
        Field("allow_maintainer_edit", "scalar", flag),
        Field("requested_reviewers", "set", _names),
    ), required=True),
    Section("repository", "repository", "", (
        Field("settings", "settings", _settings),
        Field("topics", "set", _names),
        Field("renamed_to", "scalar", _optional_name),
    )),
    Section("milestones", "milestone", "title", (
        Field("description", "scalar", _text, always=""),
        Field("state", "scalar", _enum(MILESTONE_STATES), always="open"),
        Field("due_on", "scalar", _date, always=None),
    )),
    Section("dependencies", "dependency", None, kind=records.DEPENDENCY),
    Section("branches", "branch", "name", (
        Field("commits", "scalar", _optional_int),  # null: the task leaves it open
        Field("files", "files", _files),
    )),
    Section("tags", "tag", "name", (
        Field("message", "scalar", _text, always=""),
        Field("files", "files", _files),
    )),
    Section("releases", "release", "tag", (
        Field("name", "scalar", _name, always=""),
        Field("body", "scalar", _text, always=""),
        Field("draft", "scalar", flag, always=False),
        Field("prerelease", "scalar", flag, always=False),
        _multiset("attachments", records.ATTACHMENT),
    )),
    Section("statuses", "commit status", None, kind=records.STATUS),
    Section("protections", "branch protection", "rule", (
        Field("settings", "settings", _settings, always={}),
    )),
    Section("webhooks", "webhook", None, kind=records.WEBHOOK),
    Section("collaborators", "collaborator", "login", (
        Field("permission", "scalar", _name, always="read"),
    )),
    Section("deploy_keys", "deploy key", None, kind=records.DEPLOY_KEY),
    Section("wiki", "wiki page", "title", (
        Field("content", "scalar", _name, always=""),
    )),
)
BY_NAME = {section.name: section for section in SECTIONS}
KEYED_BY_NUMBER = ("issues", "pull_requests")


def normalise_section(section: Section, raw, where: str):
    """One section of a state, normalised: a sorted list of entries (or, for the
    repository, one record)."""
    if section.key == "":
        if not isinstance(raw, dict):
            raise StateError(f"{where} must be an object, got {type(raw).__name__}")
        return _entry(section, raw, where)
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise StateError(f"{where} must be a list, got {type(raw).__name__}")
    items = raw
    if section.key is None:
        assert section.kind is not None
        return records.normalise_all(section.kind, items, where)
    entries = [_entry(section, item, f"{where}[{i}]") for i, item in enumerate(items)]
    if section.name in KEYED_BY_NUMBER:
        seen: set[int] = set()
        for entry in entries:
            if entry["number"] in seen:
                raise StateError(f"{section.noun} #{entry['number']} appears twice")
            seen.add(entry["number"])
    return sorted(entries, key=lambda entry: (entry[section.key], records.record_key(entry)))


def _entry(section: Section, item, where: str) -> dict:
    if not isinstance(item, dict):
        raise StateError(f"{where} must be an object, got {type(item).__name__}")
    entry: dict = {}
    if section.key:
        if section.key not in item:
            raise StateError(f"{where} lacks {section.key}")
        key = item[section.key]
        entry[section.key] = number(key, where) if section.key == "number" else normalise_name(key)
    for field in section.fields:
        if field.name in item:
            entry[field.name] = field.value(item[field.name], f"{where}.{field.name}")
        elif field.always is not ...:
            entry[field.name] = copy.copy(field.always)
        elif field.name in ("title", "state") and section.name in KEYED_BY_NUMBER:
            raise StateError(f"{where} lacks {field.name}")
    return entry

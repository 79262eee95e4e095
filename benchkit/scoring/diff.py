"""The full-state diff: every difference between two RepoStates, section by section of
benchkit.state.sections, each naming its entity and, given the ground truth, whether
an intended change is missing (or wrong) or the agent changed something it was not
asked to (collateral).

What one side lacks is not compared: a section (an older capture, or a host that does
not model it), a field of an entry, a field of the records in a multiset; nor a value
the expectation leaves open (null branch commit counts, after a merge).
"""

from __future__ import annotations

import json
from collections import Counter

from benchkit.state import SECTIONS, normalise
from benchkit.state.records import quote, record_key
from benchkit.state.sections import Field, Section

_ORDINALS = {2: "2nd", 3: "3rd"}


def diff(expected, actual, baseline=None) -> list[str]:
    """Every difference between two RepoStates, after normalisation. With `baseline`
    (the ground truth) each is classified; without, none is."""
    expected, actual = normalise(expected), normalise(actual)
    baseline = normalise(baseline) if baseline is not None else None
    differences: list[str] = []
    for section in SECTIONS:
        if section.name not in expected or section.name not in actual:
            continue
        base = None if baseline is None else baseline.get(section.name)
        known = baseline is not None and base is not None
        differences += _section(section, expected[section.name], actual[section.name],
                                base, known)
    return differences


def _section(section: Section, expected, actual, baseline, known) -> list[str]:
    if section.key == "":
        return _fields(section, "repository", expected, actual, baseline or {}, known)
    if section.key is None:
        assert section.kind is not None
        return _diff_records(section.kind.describe, expected, actual, baseline or [], known)
    exp, act, base = (_by_key(section, entries) for entries in (expected, actual, baseline or []))
    differences = []
    for key in sorted(exp.keys() | act.keys(), key=_order):
        pairs, gone, extra = _pair(exp.get(key, []), act.get(key, []))
        copies = max(len(exp.get(key, [])), len(act.get(key, []))) > 1
        was_there = base.get(key, [])  # the ground truth's entries of this name
        b = was_there[0] if was_there else None
        for at, (e, a) in enumerate(pairs):
            differences += _fields(section, _entity_name(section, key, e, copies and at), e, a,
                                   b or {}, known)
        for at, e in enumerate(gone, start=len(pairs)):
            seeded = at < len(was_there)
            differences.append(f"{_entity_name(section, key, e, copies and at)}: "
                               f"{'deleted' if seeded else 'missing'}{_tag(True, seeded, False, known)}")
        for at, a in enumerate(extra, start=len(pairs) + len(gone)):
            seeded = at < len(was_there)
            was = "still present" if seeded else f"unexpected {section.noun}"
            differences.append(f"{_entity_name(section, key, a, copies and at)}: {was}"
                               f"{_tag(False, seeded, True, known)}")
    return differences


def _by_key(section: Section, entries: list) -> dict:
    found: dict = {}
    for entry in entries:
        found.setdefault(entry[section.key], []).append(entry)
    return found


def _pair(expected: list, actual: list) -> tuple[list, list, list]:
    """Entries of one name (two labels "bug"): identical ones go together first, then
    the rest in order; (pairs, expected left over, actual left over)."""
    left = list(actual)
    pairs, unmatched = [], []
    for entry in expected:
        twin = next((i for i, other in enumerate(left) if other == entry), None)
        if twin is None:
            unmatched.append(entry)
        else:
            pairs.append((entry, left.pop(twin)))
    common = min(len(unmatched), len(left))
    return (pairs + list(zip(unmatched[:common], left[:common], strict=True)),
            unmatched[common:], left[common:])


def _order(key):
    return (0, key, "") if isinstance(key, int) else (1, 0, str(key))


def _entity_name(section: Section, key, entry, copy: int | bool = False) -> str:
    """`label "bug"`, `issue #2 "Title"`; the second of a name `label "bug" (2nd)`."""
    if section.key == "number":
        return f"{section.noun} #{entry['number']} {quote(entry['title'])}"
    nth = f" ({_ORDINALS.get(copy + 1, f'{copy + 1}th')})" if copy else ""
    return f"{section.noun} {quote(key)}{nth}"


def _fields(section: Section, name: str, expected: dict, actual: dict, baseline: dict,
            known: bool) -> list[str]:
    differences = []
    for field in section.fields:
        if field.name not in expected or field.name not in actual:
            continue
        e, a, b = expected[field.name], actual[field.name], baseline.get(field.name)
        if e is None and field.name == "commits":
            continue  # left open by the expectation
        differences += [f"{name}: {text}" for text in _COMPARERS[field.compare](field, e, a, b, known)]
    return differences


def _diff_scalar(field: Field, expected, actual, baseline, known) -> list[str]:
    if expected == actual:
        return []
    return [f"{field.name} is {_show(field, actual)}, expected {_show(field, expected)}"
            f"{_tag(expected, baseline, actual, known)}"]


_BARE = ("state", "color", "permission")  # states and colours read bare; other text quoted


def _show(field: Field, value) -> str:
    if isinstance(value, str):
        return value if field.name in _BARE else quote(value)
    return json.dumps(value)


def _diff_set(field: Field, expected, actual, baseline, known) -> list[str]:
    noun = field.name.removesuffix("s").replace("_", " ")  # labels -> label
    return _diff_counts(Counter(set(expected)), Counter(set(actual)), Counter(set(baseline or [])),
                        known, lambda item: f"{noun} {quote(item)}")


def _diff_multiset(field: Field, expected, actual, baseline, known) -> list[str]:
    assert field.kind is not None
    return _diff_records(field.kind.describe, expected, actual, baseline or [], known)


def _diff_records(describe, expected, actual, baseline, known) -> list[str]:
    """Two multisets of records, compared on the fields every record on both sides
    carries (an older capture's comments have no reactions)."""
    shared = _shared_fields([*expected, *actual])

    def key(record):
        return record_key({k: v for k, v in record.items() if k in shared})

    items = {key(record): record for record in [*expected, *actual]}
    return _diff_counts(Counter(map(key, expected)), Counter(map(key, actual)),
                        Counter(map(key, baseline)), known, lambda k: describe(items[k]))


def _shared_fields(records: list[dict]) -> set[str]:
    if not records:
        return set()
    return set.intersection(*(set(record) for record in records))


def _diff_files(field: Field, expected, actual, baseline, known) -> list[str]:
    differences = []
    base = baseline or {}
    for path in sorted(expected.keys() | actual.keys()):
        e, a, b = expected.get(path), actual.get(path), base.get(path)
        if e == a:
            continue
        what = "added" if e is None else "deleted" if a is None else "changed"
        differences.append(f"file {quote(path)} {what}{_tag(e, b, a, known)}")
    return differences


def _diff_settings(field: Field, expected, actual, baseline, known) -> list[str]:
    differences = []
    base = baseline or {}
    for key in sorted(expected.keys() | actual.keys()):
        e, a = expected.get(key), actual.get(key)
        if e != a:
            differences.append(f"setting {key} is {json.dumps(a)}, expected {json.dumps(e)}"
                               f"{_tag(e, base.get(key), a, known)}")
    return differences


def _diff_counts(exp, act, base, known, describe) -> list[str]:
    """Differences of two multisets (a set is one with counts of 1), classified by how
    the expected count departs from the ground truth's."""
    differences = []
    for k in sorted(exp.keys() | act.keys()):
        if exp[k] == act[k]:
            continue
        times = "" if abs(exp[k] - act[k]) == 1 else f" (x{abs(exp[k] - act[k])})"
        if exp[k] > act[k] and not known:
            text = f"{describe(k)} missing{times}"
        elif exp[k] > act[k] and exp[k] > base[k]:  # meant to add it
            text = f"{describe(k)} missing{times} (intended change missing)"
        elif exp[k] > act[k]:
            text = f"{describe(k)} removed{times} (collateral)"
        elif not known:
            text = f"unexpected {describe(k)}{times}"
        elif base[k] > exp[k]:  # meant to remove it
            text = f"{describe(k)} still present{times} (intended change missing)"
        else:
            text = f"unexpected {describe(k)}{times} (collateral)"
        differences.append(text)
    return differences


_COMPARERS = {"scalar": _diff_scalar, "set": _diff_set, "multiset": _diff_multiset,
              "files": _diff_files, "settings": _diff_settings}


def _tag(expected, baseline, actual, known) -> str:
    """Classify one difference by comparing expected and actual with the ground truth."""
    if not known:
        return ""
    if expected == baseline:
        return " (collateral)"
    if actual == baseline:
        return " (intended change missing)"
    return " (intended change wrong)"

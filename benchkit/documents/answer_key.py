"""A read task's answer key: what its final answer must say, and what it must not.

The task names the required facts (`facts`); what is forbidden is derived from the
seed, so an author writes nothing more:

- A fact that names an item of the seed (an issue's or pull request's title, a label,
  a state, a pull request's file, a file's text, a comment or review, a description)
  forbids the other items of that kind: "list the bug issues' titles" rules out every
  other issue's title, "which labels" every other label. An issue the answer must not
  name is "not labelled X" (or "not open") where the intent names that label (state)
  and it picks out exactly the expected issues.
- A fact that holds a number is a count: each of its renderings (and its pattern) is
  read with any number in that place, a claim; the answer must claim the count and no
  other number, and must not hedge it ("or maybe 6", "about 5").

Texts the intent quotes and the required renderings shelter what lies inside them (a
forbidden label inside the issue's own title). `forbidden_facts` in the task replaces
the derivation with facts of its own (docs/adding-a-task.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchkit.documents.answer_text import (
    NUMBER,
    NUMBER_AFTER,
    NUMBER_BEFORE,
    normalise_answer,
    numbers_in,
    rendering_regex,
)
from benchkit.documents.expectation import seed_plan

COUNT_GROUP = "benchkit_count"  # the claimed number's group in a claim's regex
SAYS = "a fact the task rules out"  # an explicit forbidden fact without `says`
# Nouns of what a repository holds: a number that counts one of them (other than what
# the count itself counts) is context, not a claim ("3 open pull requests").
_NOUNS = ("issue", "pull", "pr", "request", "label", "comment", "review", "milestone",
          "branch", "commit", "file", "release", "tag", "user", "repo", "repository",
          "check", "status", "merge", "bug")


@dataclass(frozen=True)
class Count:
    """A count fact: its value, its claims (regexes whose group COUNT_GROUP holds the
    number claimed, none followed by another noun: the renderings' and the pattern's,
    whose words inside may be such a noun too) and those nouns."""

    value: int
    claims: tuple[str, ...]
    pattern_claim: str | None
    other_nouns: frozenset[str]


@dataclass(frozen=True)
class Required:
    """A required fact: renderings normalised, the pattern as written, and its count
    when it is one (then only its claims say whether it is present)."""

    shown: str  # how a message names it
    renderings: tuple[str, ...]
    pattern: str | None
    count: Count | None = None


@dataclass(frozen=True)
class Forbidden:
    """What the answer must not say: a rendering (normalised) or the pattern matches."""

    says: str  # "an issue that is not labelled \"bug\"": what naming it means
    renderings: tuple[str, ...]
    pattern: str | None = None
    shown: str | None = None  # the item as the seed writes it; None: the answer's words


@dataclass(frozen=True)
class AnswerKey:
    required: tuple[Required, ...]
    forbidden: tuple[Forbidden, ...]
    sheltered: tuple[str, ...]  # normalised texts a forbidden one may lie inside
    derived: bool  # from the seed (else the task's forbidden_facts)


@dataclass(frozen=True)
class _Item:
    text: str
    normal: str
    entity: dict | None = None  # the issue or pull request, for the kinds that name one


@dataclass(frozen=True)
class _Kind:
    noun: str
    says: str
    whole: bool  # a rendering equals the item (a name), else lies inside it (a text)
    items: tuple[_Item, ...]


def answer_key(data: dict, seed) -> AnswerKey:
    """The key of a task's document data (facts, forbidden_facts, intent) on its seed.
    Raises ValueError for a count it cannot read (key_problems says where)."""
    facts = data.get("facts") or []
    sheltered = _quoted(data.get("intent"))
    if "forbidden_facts" in data:
        given = tuple(required_fact(fact) for fact in facts)
        return AnswerKey(given, tuple(
            Forbidden(fact.get("says", SAYS), _normal(fact.get("any_of", [])), fact.get("pattern"))
            for fact in data["forbidden_facts"]), sheltered + _texts(given), derived=False)
    kinds = _kinds(seed)
    required: list[Required] = []
    found: dict[str, tuple[_Kind, list[_Item]]] = {}
    for index, fact in enumerate(facts):
        kind, items = _classify(fact, kinds)
        if kind is not None:
            found.setdefault(kind.noun, (kind, []))[1].extend(items)
            required.append(required_fact(fact))
            continue
        count, problems = _count(fact, index, kinds)
        if problems:
            raise ValueError(problems[0][1])
        required.append(required_fact(fact, count))
    intent = " ".join(normalise_answer(text) for text in _variants(data.get("intent")))
    forbidden = tuple(item for kind, matched in found.values()
                      for item in _others(kind, matched, intent, kinds))
    return AnswerKey(tuple(required), forbidden,
                     sheltered + _texts([r for r in required if r.count is None]), derived=True)


def key_problems(data: dict, seed) -> list[tuple[tuple, str]]:
    """[(json path, message)] for facts whose key cannot be derived."""
    if "forbidden_facts" in data:
        return []
    kinds = _kinds(seed)
    found = []
    for index, fact in enumerate(data.get("facts") or []):
        if isinstance(fact, dict) and _classify(fact, kinds)[0] is None:
            found += _count(fact, index, kinds)[1]
    return found


def described(key: AnswerKey) -> dict:
    """The key as `benchkit expect` prints it."""
    counts = [{"fact": r.shown, "value": r.count.value} for r in key.required if r.count]
    return {"forbidden_facts": [{"says": f.says, "any_of": [f.shown or r for r in f.renderings],
                                 **({"pattern": f.pattern} if f.pattern else {})}
                                for f in key.forbidden],
            "counts": counts, "forbidden_derived": key.derived}


# --- the seed's items, by kind -------------------------------------------------------

def _kinds(seed) -> list[_Kind]:
    plan = seed_plan(seed)
    issues, pulls = plan["issues"], plan["pull_requests"]
    everything = issues + pulls
    states = sorted({item["state"] for item in everything})
    files = [pull["file"] for pull in pulls if pull.get("file")]
    talk = [c for item in everything for c in item["comments"]] + \
        [review["body"] for pull in pulls for review in pull["reviews"]]
    return [
        _Kind("issue", "an issue not asked for", True,
              tuple(_item(i["title"], i) for i in issues)),
        _Kind("pull request", "a pull request not asked for", True,
              tuple(_item(p["title"], p) for p in pulls)),
        _Kind("label", "another label", True,
              tuple(_item(label["name"]) for label in plan["labels"])),
        _Kind("state", "another state", True, tuple(_item(state) for state in states)),
        _Kind("file", "another file", True, tuple(_item(f["path"]) for f in files)),
        _Kind("file text", "another file's text", False,
              tuple(_item(f["content"]) for f in files)),
        _Kind("comment", "another comment or review", False, tuple(_item(c) for c in talk)),
        _Kind("description", "another description", False,
              tuple(_item(item.get("body", "")) for item in everything if item.get("body"))),
    ]


def _item(text: str, entity: dict | None = None) -> _Item:
    return _Item(text.strip(), normalise_answer(text), entity)


def _classify(fact: dict, kinds: list[_Kind]) -> tuple[_Kind | None, list[_Item]]:
    """The first kind with an item a rendering names (equals, or lies inside as whole
    words), and those items."""
    renderings = _normal(fact.get("any_of", []))
    for kind in kinds:
        matched = [item for item in kind.items if any(
            rendering == item.normal if kind.whole
            else rendering_regex(rendering).search(item.normal) for rendering in renderings)]
        if matched:
            return kind, matched
    return None, []


def _others(kind: _Kind, matched: list[_Item], intent: str,
            kinds: list[_Kind]) -> list[Forbidden]:
    says = _criterion(kind, matched, intent, kinds) or kind.says
    taken = {item.normal for item in matched}
    found = []
    for item in kind.items:
        if item.normal not in taken:
            taken.add(item.normal)
            found.append(Forbidden(says, (item.normal,), shown=item.text))
    return found


def _criterion(kind: _Kind, matched: list[_Item], intent: str,
               kinds: list[_Kind]) -> str | None:
    """'an issue that is not labelled "bug"' (or 'not open') when the intent names that
    label (state) and exactly the expected issues carry it."""
    if kind.noun not in ("issue", "pull request"):
        return None
    wanted = {item.entity["number"] for item in matched if item.entity}
    article = "an" if kind.noun == "issue" else "a"
    labels = next(k for k in kinds if k.noun == "label").items
    for label in labels:
        if _names(intent, label.normal) and wanted == {
                i.entity["number"] for i in kind.items if i.entity and label.text in i.entity["labels"]}:
            return f'{article} {kind.noun} that is not labelled "{label.text}"'
    for state in ("open", "closed"):
        if _names(intent, state) and wanted == {
                i.entity["number"] for i in kind.items if i.entity and i.entity["state"] == state}:
            return f"{article} {kind.noun} that is not {state}"
    return None


def _names(intent: str, word: str) -> bool:
    return bool(word) and rendering_regex(word).search(intent) is not None


# --- counts ----------------------------------------------------------------------------

def _count(fact: dict, index: int, kinds: list[_Kind]) -> tuple[Count | None, list[tuple[tuple, str]]]:
    """A fact holding a number: its Count, or the problems that keep it from being read."""
    renderings = _normal(fact.get("any_of", []))
    numbers = [numbers_in(rendering) for rendering in renderings]
    if not any(numbers):
        return None, []
    where = ("facts", index, "any_of")
    if any(len(found) != 1 for found in numbers):
        return None, [(where, "a count's renderings must each hold its number once (or "
                              "give forbidden_facts)")]
    values = {found[0][0] for found in numbers}
    if len(values) > 1:
        return None, [(where, f"a count's renderings disagree on its number: "
                              f"{', '.join(map(str, sorted(values)))}")]
    (value,) = values
    own = {word for rendering in renderings for word in re.findall(r"[^\W\d_]+", rendering)}
    labels = [label.normal for kind in kinds if kind.noun == "label" for label in kind.items]
    nouns = _other_nouns(own, labels)
    # Not followed by another kind's noun ("3 open pull requests" counts pull requests).
    about = r"(?![ \-/(]{1,3}(?:" + "|".join(sorted(nouns, key=len, reverse=True)) + r")(?!\w))"
    claims = tuple(_claim(rendering, start, end) + about
                   for rendering, [(_, start, end)] in zip(renderings, numbers, strict=True))
    pattern, pattern_claim = fact.get("pattern"), None
    if pattern:
        spots = list(re.finditer(rf"(?<![\\\d{{,]){value}(?![\d}},])", pattern))
        if len(spots) != 1:
            return None, [(("facts", index, "pattern"),
                           f"a count's pattern must hold its number ({value}) once, so the "
                           "other counts can be read (or give forbidden_facts)")]
        spot = spots[0]
        pattern_claim = ("(?i:" + pattern[:spot.start()] + NUMBER_BEFORE + _slot()
                         + pattern[spot.end():] + ")" + about)
    return Count(value, claims, pattern_claim, nouns), []


def _claim(rendering: str, start: int, end: int) -> str:
    """A rendering's regex with its number, wherever it is, read as any number."""
    before, after = rendering[:start], rendering[end:]
    head = rendering_regex(before).pattern if before else NUMBER_BEFORE
    tail = re.escape(after) + (r"(?!\w)" if after[-1:].isalnum() else "") if after else ""
    return head + _slot() + NUMBER_AFTER + tail


def _slot() -> str:
    return f"(?P<{COUNT_GROUP}>{NUMBER})"


def _other_nouns(own: set[str], labels: list[str]) -> frozenset[str]:
    """The nouns (singular and plural) of _NOUNS and the seed's labels, less those the
    count's own renderings use (a count of issues is not "about" issues' context)."""
    forms = {}
    for base in (*_NOUNS, *labels):
        plural = base[:-1] + "ies" if base.endswith("y") else base + "s"
        for form in (base, plural, base + "es"):
            forms[form] = base
    mine = {forms[word] for word in own if word in forms}
    return frozenset(form for form, base in forms.items() if base not in mine)


# --- helpers ----------------------------------------------------------------------------

def required_fact(fact: dict, count: Count | None = None) -> Required:
    """A fact of the task as the key holds it."""
    renderings = _normal(fact.get("any_of", []))
    shown = [f'"{r}"' for r in fact.get("any_of", [])]
    if fact.get("pattern"):
        shown.append(f"pattern /{fact['pattern']}/")
    return Required(shown[0] if len(shown) == 1 else "any of " + ", ".join(shown),
                    renderings, fact.get("pattern"), count)


def _normal(renderings) -> tuple[str, ...]:
    return tuple(normal for normal in (normalise_answer(r) for r in renderings) if normal)


def _texts(required) -> tuple[str, ...]:
    return tuple(rendering for r in required for rendering in r.renderings)


def _variants(intent) -> list[str]:
    if isinstance(intent, dict):
        return [str(text) for text in intent.values()]
    return [str(intent or "")]


def _quoted(intent) -> tuple[str, ...]:
    """What the intent quotes ("Crash when saving large files"): the question's own
    subject, which an answer may echo."""
    return tuple(normal for text in _variants(intent)
                 for quote in re.findall(r'"([^"]+)"', normalise_answer(text))
                 if (normal := quote.strip()))

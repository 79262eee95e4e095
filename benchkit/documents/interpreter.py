"""The edit interpreter: a task's edits applied, in order, to a RepoState, each
selecting entities of the state as it stands after the edits before it, noting a
(path, message) problem for each edit it cannot apply (benchkit.documents.expectation
runs it).

Targets select issues, pull requests, labels or milestones, or create an issue, a
label, a milestone or a release; actions change what they select. What an edit does
beyond its entity (a merge's files, a release's tag) is benchkit.documents.repo_edits'.
"""

from __future__ import annotations

import re

from benchkit.documents import repo_edits
from benchkit.documents.seeded import comment_record, issue_record, review_record
from benchkit.state import normalise, normalise_color, normalise_text

# edit target key -> (state section, noun, exactly one?)
TARGETS = {
    "issue": ("issues", "issue", True),
    "issues": ("issues", "issue", False),
    "pull_request": ("pull_requests", "pull request", True),
    "pull_requests": ("pull_requests", "pull request", False),
    "label": ("labels", "label", True),
    "labels": ("labels", "label", False),
    "milestone": ("milestones", "milestone", True),
    "milestones": ("milestones", "milestone", False),
    "create_issue": (None, "issue", None),
    "create_label": (None, "label", None),
    "create_milestone": (None, "milestone", None),
    "create_release": (None, "release", None),
}
_ISSUE_ACTIONS = ("set", "add_labels", "remove_labels", "add_assignees", "remove_assignees",
                  "add_comment", "add_dependency")
ACTIONS = {
    "issues": _ISSUE_ACTIONS,
    "pull_requests": _ISSUE_ACTIONS + ("add_review",),
    "labels": ("set", "delete"),
    "milestones": ("set", "delete"),
}
# set-valued actions -> (field, add?)
_SET_ACTIONS = {"add_labels": ("labels", True), "remove_labels": ("labels", False),
                "add_assignees": ("assignees", True), "remove_assignees": ("assignees", False)}
_ISSUE_FIELDS = ("title", "body", "state", "milestone", "due_date")
_SET_FIELDS = {"issues": _ISSUE_FIELDS, "pull_requests": _ISSUE_FIELDS,
               "labels": ("name", "color", "description"),
               "milestones": ("title", "description", "state", "due_on")}
_NAMES = {"labels": "name", "milestones": "title"}


def resolve_variant(value, self_review):
    """`{self_review: A, otherwise: B}` -> A or B; anything else as is."""
    if isinstance(value, dict) and set(value) == {"self_review", "otherwise"}:
        return value["self_review" if self_review else "otherwise"]
    return value


class Interpreter:
    """Applies edits to a RepoState in place, noting (path, message) for each problem.
    `merge_bases` says what the state does not: each pull request's merge base."""

    def __init__(self, state, user, self_review, merge_bases):
        self.state = state
        self.user = user
        self.self_review = self_review
        self.merge_bases = merge_bases
        self.issues: list[tuple[tuple, str]] = []

    def apply_all(self, edits, check_noop=False):
        for index, edit in enumerate(edits):
            path = ("edits", index)
            # normalise() builds a fresh state: a snapshot, without a deep copy (measured:
            # the copies were a third of loading the shipped tasks).
            before = normalise(self.state) if check_noop else None
            if not self._apply(edit, path):
                continue  # already reported; later edits may still be checked
            if check_noop and normalise(self.state) == before:
                self._problem(path, "this edit changes nothing in the state it is applied to")

    def _problem(self, path, message):
        self.issues.append((tuple(path), message))

    def _apply(self, edit, path) -> bool:
        targets = [key for key in edit if key in TARGETS]
        if len(targets) != 1:
            names = ", ".join(TARGETS)
            self._problem(path, f"an edit needs exactly one target ({names}), "
                                f"got {', '.join(targets) or 'none'}")
            return False
        target = targets[0]
        section, noun, one = TARGETS[target]
        if section is None:
            if len(edit) > 1:
                extra = ", ".join(key for key in edit if key != target)
                self._problem(path, f"{target} takes no actions, got {extra}")
                return False
            return self._create(target, edit[target], path + (target,))
        actions = [key for key in edit if key != target]
        wrong = [key for key in actions if key not in ACTIONS[section]]
        if wrong or not actions:
            allowed = ", ".join(ACTIONS[section])
            got = f"{', '.join(wrong)} does not apply" if wrong else "no action given"
            self._problem(path, f"{got} to {noun}s (actions: {allowed})")
            return False
        selected = self._select(section, noun, one, edit[target], path + (target,))
        if selected is None:
            return False
        ok = True
        for action in actions:
            ok &= self._act(section, noun, selected, action, edit[action], path + (action,))
        return ok

    # ---- selection ----------------------------------------------------------------

    def _select(self, section, noun, one, selector, path):
        for key in ("title_matches", "body_matches", "name_matches"):
            if key in selector and not self._regex_ok(selector[key], path + (key,)):
                return None
        matches = [entity for entity in self.state[section]
                   if all(self._matches(entity, key, want) for key, want in selector.items())]
        if not matches:
            self._problem(path, f"selector {_show(selector)} matches no {noun}")
            return None
        if one and len(matches) > 1:
            found = ", ".join(_entity(noun, entity) for entity in matches)
            plural = "pull_requests" if noun == "pull request" else f"{noun}s"
            self._problem(path, f"selector {_show(selector)} should match one {noun} but matches "
                                f"{len(matches)}: {found} (narrow it, or use `{plural}:` for all)")
            return None
        return matches

    def _matches(self, entity, key, want) -> bool:
        if key in ("number", "title", "name", "state", "milestone"):
            return entity.get(key) == want
        if key in ("title_matches", "body_matches", "name_matches"):
            return re.search(want, entity[key.removesuffix("_matches")]) is not None
        if key == "color":
            return entity["color"] == normalise_color(want)
        if key == "label":
            return want in entity["labels"]
        if key == "labels":
            return set(entity["labels"]) == set(want)
        if key == "assignee":
            return self._user(want) in entity["assignees"]
        if key == "assigned":
            return bool(entity["assignees"]) == want
        raise ValueError(f"unknown selector field {key!r}")

    def _regex_ok(self, pattern, path) -> bool:
        try:
            re.compile(pattern)
        except re.error as error:
            self._problem(path, f"invalid regex {pattern!r}: {error}")
            return False
        return True

    def _one_issue(self, selector, path):
        """The one issue or pull request a selector names (a dependency's other end)."""
        for key in ("title_matches", "body_matches"):
            if key in selector and not self._regex_ok(selector[key], path + (key,)):
                return None
        found = [entity for section in ("issues", "pull_requests") for entity in self.state[section]
                 if all(self._matches(entity, key, want) for key, want in selector.items())]
        if len(found) != 1:
            self._problem(path, f"selector {_show(selector)} should match one issue or pull "
                                f"request but matches {len(found)}")
            return None
        return found[0]

    # ---- actions --------------------------------------------------------------------

    def _act(self, section, noun, entities, action, value, path) -> bool:
        if action == "set":
            return self._set(section, noun, entities, value, path)
        if action == "delete":
            for entity in entities:
                if section == "labels":
                    self._delete_label(entity["name"])
                else:
                    repo_edits.delete_milestone(self.state, entity["title"])
            return True
        if action in _SET_ACTIONS:
            field_name, add = _SET_ACTIONS[action]
            if action == "add_labels" and not self._defined("labels", value, path):
                return False
            names = {self._user(name) for name in value} if field_name == "assignees" else set(value)
            for entity in entities:
                current = set(entity[field_name])
                entity[field_name] = sorted(current | names if add else current - names)
            return True
        if action == "add_comment":
            for entity in entities:
                entity["comments"].append(comment_record(value, self.user))
            return True
        if action == "add_review":
            kind = resolve_variant(value.get("kind", "comment"), self.self_review)
            for entity in entities:
                entity["reviews"].append(
                    review_record(kind, value["body"], value.get("comments", []), self.user))
            return True
        if action == "add_dependency":
            blocker = self._one_issue(value, path)
            if blocker is None:
                return False
            return all(self._report(path, repo_edits.add_dependency(self.state, entity, blocker))
                       for entity in entities)
        raise ValueError(f"unknown action {action!r}")

    def _set(self, section, noun, entities, fields, path) -> bool:
        wrong = [key for key in fields if key not in _SET_FIELDS[section]]
        if wrong:
            self._problem(path + (wrong[0],), f"{noun}s have no field {wrong[0]!r} to set "
                                              f"(fields: {', '.join(_SET_FIELDS[section])})")
            return False
        if fields.get("state") == "merged" and section != "pull_requests":
            self._problem(path + ("state",), "only a pull request can be merged")
            return False
        if fields.get("milestone") and not self._defined("milestones", [fields["milestone"]],
                                                         path + ("milestone",)):
            return False
        key = _NAMES.get(section)
        if key in fields:
            taken = {e[key] for e in self.state[section]} - {e[key] for e in entities}
            if fields[key] in taken or len(entities) > 1:
                self._problem(path + (key,), f"cannot rename to {fields[key]!r}: "
                                             f"{noun} names must stay unique")
                return False
        for entity in entities:
            if key in fields:
                self._rename(section, entity[key], fields[key])
            if fields.get("state") == "merged" and entity["state"] != "merged":
                if not self._report(path + ("state",), repo_edits.merge(
                        self.state, entity, self.merge_bases.get(entity["number"]))):
                    return False
            for name, value in fields.items():
                entity[name] = _field_value(name, value)
        return True

    def _create(self, target, spec, path) -> bool:
        if target == "create_issue":
            return self._create_issue(spec, path)
        if target == "create_label":
            return self._create_label(spec, path)
        if target == "create_milestone":
            return self._report(path + ("title",), repo_edits.create_milestone(self.state, spec))
        return self._report(path, repo_edits.create_release(self.state, spec))

    def _report(self, path, problem) -> bool:
        if problem is not None:
            self._problem(path, problem)
        return problem is None

    def _create_issue(self, spec, path) -> bool:
        if not self._defined("labels", spec.get("labels", []), path + ("labels",)):
            return False
        numbers = [item["number"] for item in self.state["issues"] + self.state["pull_requests"]]
        self.state["issues"].append(issue_record(
            max(numbers, default=0) + 1, spec["title"], spec.get("body", ""),
            spec.get("state", "open"), sorted(set(spec.get("labels", []))),
            sorted({self._user(name) for name in spec.get("assignees", [])})))
        return True

    def _create_label(self, spec, path) -> bool:
        if any(label["name"] == spec["name"] for label in self.state["labels"]):
            self._problem(path + ("name",), f"label {spec['name']!r} already exists")
            return False
        self.state["labels"].append({"name": spec["name"],
                                     "color": normalise_color(spec["color"]),
                                     "description": normalise_text(spec.get("description")),
                                     "exclusive": False, "archived": False})
        return True

    def _defined(self, section, names, path) -> bool:
        key = _NAMES[section]
        defined = {entity[key] for entity in self.state[section]}
        missing = [name for name in names if name not in defined]
        if missing:
            create = "create_label" if section == "labels" else "create_milestone"
            self._problem(path, f"{section[:-1]} {missing[0]!r} is not defined at this point "
                                f"(create it with {create} first)")
        return not missing

    def _delete_label(self, name):
        self.state["labels"] = [label for label in self.state["labels"] if label["name"] != name]
        for entity in self.state["issues"] + self.state["pull_requests"]:
            entity["labels"] = [label for label in entity["labels"] if label != name]

    def _rename(self, section, old, new):
        if section == "milestones":
            repo_edits.rename_milestone(self.state, old, new)
            return
        for entity in self.state["issues"] + self.state["pull_requests"]:
            entity["labels"] = sorted({new if label == old else label for label in entity["labels"]})

    def _user(self, name):
        return self.user if name == "self" else name


def _field_value(key, value):
    if key == "color":
        return normalise_color(value)
    if key in ("body", "description"):
        return normalise_text(value)
    return value


def _entity(noun, entity):
    if "number" not in entity:
        return repr(entity.get("name", entity.get("title")))
    return f"#{entity['number']} {entity['title']!r}"


def _show(selector) -> str:
    return "{" + ", ".join(f"{key}: {value!r}" for key, value in selector.items()) + "}"

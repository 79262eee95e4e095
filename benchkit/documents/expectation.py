"""The expectation interpreter: seed + a task's edits -> the expected RepoState.

`ground_truth` realises a seed as the RepoState a freshly seeded repository has:
issues numbered 1..n in seed order, then pull requests, everything authored by the
user, `assigned: true` meaning the user. A task's edits are applied to it in order;
each selects entities of the state as it stands after the edits before it. The same
walk, run by `edit_problems` at load time, reports what makes a task unsound: a
selector matching nothing, a one-entity selector matching several, an undefined
label, an edit that changes nothing, a task whose edits leave the ground truth as it
was (it could never fail).
"""

import re

from benchkit.state import normalise, normalise_color, normalise_text

# edit target key -> (state section, noun, exactly one?)
TARGETS = {
    "issue": ("issues", "issue", True),
    "issues": ("issues", "issue", False),
    "pull_request": ("pull_requests", "pull request", True),
    "pull_requests": ("pull_requests", "pull request", False),
    "label": ("labels", "label", True),
    "labels": ("labels", "label", False),
    "create_issue": (None, "issue", None),
    "create_label": (None, "label", None),
}
_ISSUE_ACTIONS = ("set", "add_labels", "remove_labels", "add_assignees", "remove_assignees",
                  "add_comment")
ACTIONS = {
    "issues": _ISSUE_ACTIONS,
    "pull_requests": _ISSUE_ACTIONS + ("add_review",),
    "labels": ("set", "delete"),
}
# set-valued actions -> (field, add?)
_SET_ACTIONS = {"add_labels": ("labels", True), "remove_labels": ("labels", False),
                "add_assignees": ("assignees", True), "remove_assignees": ("assignees", False)}
_SET_FIELDS = {"issues": ("title", "body", "state"), "pull_requests": ("title", "body", "state"),
               "labels": ("name", "color", "description")}


class ExpectationError(ValueError):
    """Edits that cannot be applied to the seed (found by load_task as Problems)."""

    def __init__(self, issues):
        self.issues = issues  # [(json path, message)]
        super().__init__("; ".join(message for _, message in issues))


def seed_plan(seed) -> dict:
    """The seed as plain data with defaults filled and the number each item gets on the
    host: issues first, then pull requests, in plan order. The seeder creates from it
    and the ground truth is built from it, so the two cannot disagree on numbers."""
    data = seed_data(seed)
    issues = [{"state": "open", "labels": [], "assigned": False, "comments": [], **item}
              for item in data.get("issues") or []]
    pulls = [{"state": "open", "labels": [], "assigned": False, "comments": [],
              "reviews": [], **item} for item in data.get("pull_requests") or []]
    for number, item in enumerate(issues + pulls, start=1):
        item["number"] = number
    return {"labels": list(data.get("labels") or []), "issues": issues,
            "pull_requests": pulls}


def ground_truth(seed, user) -> dict:
    """The seed realised as a normalised RepoState for `user`."""
    plan = seed_plan(seed)
    issues = [_seeded(item, user) for item in plan["issues"]]
    pulls = [{**_seeded(item, user),
              "reviews": [_review(review.get("kind", "comment"), review["body"],
                                  review.get("comments", []), user)
                          for review in item["reviews"]]}
             for item in plan["pull_requests"]]
    labels = [{"name": label["name"], "color": label.get("color", ""),
               "description": label.get("description", "")} for label in plan["labels"]]
    return normalise({"labels": labels, "issues": issues, "pull_requests": pulls})


def expected_state(task, seed, user, self_review=False) -> dict:
    """The RepoState a perfect run of `task` leaves; the ground truth for a read."""
    edits = getattr(task, "edits", None) or []
    interpreter = _Interpreter(ground_truth(seed, user), user, self_review)
    interpreter.apply_all(edits)
    if interpreter.issues:
        raise ExpectationError(interpreter.issues)
    return normalise(interpreter.state)


def edit_problems(edits, seed, user="bench") -> list:
    """[(json path, message)] for everything unsound in `edits`, under both self-review
    variants (a review kind may differ between them)."""
    found = []
    baseline = ground_truth(seed, user)
    for self_review in (False, True):
        # normalise() is a fresh copy (of a state already normal), cheaper than a deep one.
        interpreter = _Interpreter(normalise(baseline), user, self_review)
        interpreter.apply_all(edits, check_noop=True)
        issues = list(interpreter.issues)
        if not issues and normalise(interpreter.state) == baseline:
            issues.append((("edits",), "the edits leave the ground truth unchanged, "
                                       "so this task could never fail"))
        found += [issue for issue in issues if issue not in found]
    return found


def seed_data(seed) -> dict:
    """A seed model's validated data, or a plain dict as is."""
    data = getattr(seed, "data", seed)
    if not isinstance(data, dict):
        raise TypeError(f"expected a seed (model or dict), got {type(seed).__name__}")
    return data


def resolve_variant(value, self_review):
    """`{self_review: A, otherwise: B}` -> A or B; anything else as is."""
    if isinstance(value, dict) and set(value) == {"self_review", "otherwise"}:
        return value["self_review" if self_review else "otherwise"]
    return value


def _seeded(item, user) -> dict:
    return {
        "number": item["number"],
        "title": item["title"],
        "body": item.get("body", ""),
        "state": item["state"],
        "labels": list(item["labels"]),
        "assignees": [user] if item["assigned"] else [],
        "comments": [_comment(body, user) for body in item["comments"]],
    }


def _comment(body, user) -> dict:
    return {"author": user, "body": body}


def _review(kind, body, comments, user) -> dict:
    return {"author": user, "kind": kind, "body": body,
            "comments": [_comment(comment, user) for comment in comments]}


class _Interpreter:
    """Applies edits to a RepoState in place, noting (path, message) for each problem."""

    def __init__(self, state, user, self_review):
        self.state = state
        self.user = user
        self.self_review = self_review
        self.issues = []

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
            return (self._create_issue if target == "create_issue" else self._create_label)(
                edit[target], path + (target,))
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
        if key in ("number", "title", "name", "state"):
            return entity[key] == want
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

    # ---- actions --------------------------------------------------------------------

    def _act(self, section, noun, entities, action, value, path) -> bool:
        if action == "set":
            return self._set(section, noun, entities, value, path)
        if action == "delete":
            for label in entities:
                self._delete_label(label["name"])
            return True
        if action in _SET_ACTIONS:
            field_name, add = _SET_ACTIONS[action]
            if action == "add_labels" and not self._labels_defined(value, path):
                return False
            names = {self._user(name) for name in value} if field_name == "assignees" else set(value)
            for entity in entities:
                current = set(entity[field_name])
                entity[field_name] = sorted(current | names if add else current - names)
            return True
        if action == "add_comment":
            for entity in entities:
                entity["comments"].append(_comment(value, self.user))
            return True
        if action == "add_review":
            kind = resolve_variant(value.get("kind", "comment"), self.self_review)
            for entity in entities:
                entity["reviews"].append(
                    _review(kind, value["body"], value.get("comments", []), self.user))
            return True
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
        if "name" in fields:
            taken = {label["name"] for label in self.state["labels"]} - {e["name"] for e in entities}
            if fields["name"] in taken or len(entities) > 1:
                self._problem(path + ("name",), f"cannot rename to {fields['name']!r}: "
                                                "label names must stay unique")
                return False
        for entity in entities:
            if "name" in fields:
                self._rename_label(entity["name"], fields["name"])
            for key, value in fields.items():
                entity[key] = _field_value(key, value)
        return True

    def _create_issue(self, spec, path) -> bool:
        if not self._labels_defined(spec.get("labels", []), path + ("labels",)):
            return False
        numbers = [item["number"] for item in self.state["issues"] + self.state["pull_requests"]]
        self.state["issues"].append({
            "number": max(numbers, default=0) + 1,
            "title": spec["title"],
            "body": spec.get("body", ""),
            "state": spec.get("state", "open"),
            "labels": sorted(set(spec.get("labels", []))),
            "assignees": sorted({self._user(name) for name in spec.get("assignees", [])}),
            "comments": [],
        })
        return True

    def _create_label(self, spec, path) -> bool:
        if any(label["name"] == spec["name"] for label in self.state["labels"]):
            self._problem(path + ("name",), f"label {spec['name']!r} already exists")
            return False
        self.state["labels"].append({"name": spec["name"],
                                     "color": normalise_color(spec["color"]),
                                     "description": normalise_text(spec.get("description"))})
        return True

    def _labels_defined(self, names, path) -> bool:
        defined = {label["name"] for label in self.state["labels"]}
        missing = [name for name in names if name not in defined]
        if missing:
            self._problem(path, f"label {missing[0]!r} is not defined at this point "
                                "(create it with create_label first)")
        return not missing

    def _delete_label(self, name):
        self.state["labels"] = [label for label in self.state["labels"] if label["name"] != name]
        for entity in self.state["issues"] + self.state["pull_requests"]:
            entity["labels"] = [label for label in entity["labels"] if label != name]

    def _rename_label(self, old, new):
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
    if noun == "label":
        return repr(entity["name"])
    return f"#{entity['number']} {entity['title']!r}"


def _show(selector) -> str:
    return "{" + ", ".join(f"{key}: {value!r}" for key, value in selector.items()) + "}"

"""The differential fidelity suite: one list of requests (tests/data/differential.yaml)
replayed, in order, against a freshly seeded repository on the forge and on a real
Gitea; the responses are compared after normalisation, and every difference must be
listed, with its reason, in tests/data/differential-accepted.yaml.

    PYTHONPATH=. python3 tests/differential.py          # print every difference
    PYTHONPATH=. python3 tests/differential.py --all    # also the accepted ones

Normalisation keeps the status code, the error shape (keys, and the message with its
numbers masked), JSON keys and value types, and every value except ids, timestamps,
URLs and hashes (compared by type only); X-Total-Count and the content type too.
"""

from __future__ import annotations

import base64
import fnmatch
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import requests
import yaml
from conftest import CHECKOUT

DATA = Path(__file__).resolve().parent / "data"
REQUESTS = DATA / "differential.yaml"
ACCEPTED = DATA / "differential-accepted.yaml"
OTHER_USER = "reviewer"

TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
HASH = re.compile(r"^[0-9a-f]{40}$|^[0-9a-f]{64}$")
HEX_RUN = re.compile(r"\b[0-9a-f]{7,64}\b")
DIGITS = re.compile(r"\d+")
ID_KEY = re.compile(r"(^|_)id$|^id_|^(original_author_id|source_id|repo_id|pull_request_review_id)$")
OPAQUE_KEYS = {"avatar_url", "email", "sha", "commit_id", "merge_base", "merge_commit_sha", "ref_commit_sha",
               "original_commit_id", "size", "content_version", "login_name"}


@dataclass(frozen=True)
class Difference:
    request: str   # the request's id
    where: str     # "status", "header:x-total-count", "$.user.login", ...
    forge: str
    gitea: str

    def __str__(self):
        return f"{self.request} {self.where}: forge {self.forge} / gitea {self.gitea}"


# -- replay ------------------------------------------------------------------------------
class Session:
    """One host, one seeded repository, the tokens the list refers to, and the values
    earlier responses saved (review and comment ids differ between hosts)."""

    def __init__(self, host, repo, other_token: str):
        self.api = host.api_url
        self.root = host.url
        self.repo = repo
        self.tokens = {"default": host.token, "other": other_token, "bad": "0" * 40, "none": None}
        self.saved = {"repo": f"{repo.owner}/{repo.name}", "owner": repo.owner, "name": repo.name,
                      "user": host.user, "other": OTHER_USER}
        self.http = requests.Session()

    def fill(self, value):
        whole = re.fullmatch(r"\{(\w+)\}", value) if isinstance(value, str) else None
        if whole and whole.group(1) in self.saved:  # "{label}" alone keeps the saved value's type
            return self.saved[whole.group(1)]
        if isinstance(value, str):
            return re.sub(r"\{(\w+)\}", lambda m: str(self.saved.get(m.group(1), m.group())), value)
        if isinstance(value, list):
            return [self.fill(v) for v in value]
        if isinstance(value, dict):
            return {k: self.fill(v) for k, v in value.items()}
        return value

    def send(self, step: dict) -> requests.Response:
        headers = {"User-Agent": "benchkit-differential"}
        token = self.tokens[step.get("token", "default")]
        if token:
            headers["Authorization"] = f"token {token}"
        kwargs = {}
        if "json" in step:
            kwargs["json"] = self.fill(step["json"])
        elif "form" in step:
            kwargs["data"] = self.fill(step["form"])
        elif "raw" in step:
            kwargs["data"] = self.fill(step["raw"]).encode()
        elif "deep" in step:  # a body nested `deep` levels inside a field
            kwargs["data"] = ('{"title":"deep","x":' + "[" * step["deep"] + "]" * step["deep"] + "}").encode()
            headers["Content-Type"] = "application/json"
        if "content_type" in step:
            headers["Content-Type"] = step["content_type"]
        path = self.fill(step["path"])
        url = (self.root + path.lstrip("/")) if step.get("site") else self.api + path
        response = self.http.request(step["method"], url, headers=headers, timeout=60, **kwargs)
        for _ in range(480):  # Gitea checks mergeability in the background: wait it out
            if response.status_code != step.get("retry_while"):
                break
            time.sleep(0.25)
            response = self.http.request(step["method"], url, headers=headers, timeout=60, **kwargs)
        for name, pointer in (step.get("save") or {}).items():
            value = response.json()
            for key in str(pointer).split("."):
                value = value[int(key)] if isinstance(value, list) else value[key]
            self.saved[name] = value
        return response


def replay(host, steps: list[dict]) -> list[dict]:
    """Seed a fresh repository on `host`, then send every step; the normalised answers."""
    from benchkit.documents import load_seed
    from benchkit.gitea.client import Client
    from benchkit.gitea.seed import provision

    known = requests.get(f"{host.api_url}/users/{OTHER_USER}", timeout=30,
                         headers={"Authorization": f"token {host.token}"}).status_code == 200
    other = host.create_token(OTHER_USER) if known else host.create_user(OTHER_USER)
    repo = provision(Client(host.url, host.token), load_seed(CHECKOUT / "seeds" / "default.yaml"))
    session = Session(host, repo, other)
    try:
        return [normalise(step, session.send(step), session) for step in steps]
    finally:
        requests.delete(f"{host.api_url}/repos/{repo.owner}/{repo.name}",
                        headers={"Authorization": f"token {host.token}"}, timeout=60)


# -- normalisation ---------------------------------------------------------------------
def normalise(step: dict, response: requests.Response, session: Session) -> dict:
    kind = response.headers.get("content-type", "").split(";")[0].strip()
    answer = {"status": response.status_code, "type": kind or "-",
              "total": response.headers.get("x-total-count")}
    if step.get("status_only"):  # a binary body (git's protocol): status and type only
        answer["body"] = "<not compared>"
    elif not response.content:
        answer["body"] = "<empty>"
    elif kind == "application/json":
        data = response.json()
        if response.status_code >= 400 and isinstance(data, dict):
            answer["body"] = {k: shape(v, k, session) if k != "message" else mask(v, session)
                              for k, v in data.items()}
        else:
            answer["body"] = shape(data, "", session)
    else:
        answer["body"] = mask(response.text, session)
    return answer


def mask(text, session: Session):
    """A message or text body without what differs between hosts: the repository name,
    the root URL, hashes and numbers."""
    if not isinstance(text, str):
        return text
    text = text.replace(session.root, "ROOT/").replace(session.repo.name, "REPO")
    return DIGITS.sub("N", HEX_RUN.sub("HASH", text))


def shape(value, key: str, session: Session):
    if isinstance(value, dict):
        return {k: shape(v, k, session) for k, v in sorted(value.items())}
    if isinstance(value, list):
        items = [shape(v, key, session) for v in value]
        if items and all(isinstance(v, dict) and isinstance(v.get("number"), int) for v in items):
            # Seeded issues share their creation second, and Gitea breaks that tie in no
            # fixed order: lists of issues and pull requests compare in number order.
            items.sort(key=lambda v: v["number"])
        elif items and all(isinstance(v, dict) and {"name", "commit"} <= v.keys() for v in items):
            # Branches come by commit second, then name, on both hosts (models/git/
            # branch_list.go); the forge seeds them all in one second, Gitea over several:
            # lists of branches compare in name order.
            items.sort(key=lambda v: v["name"])
        return items
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return "<id>" if ID_KEY.search(key) or key in OPAQUE_KEYS else value
    if ID_KEY.search(key) or key in OPAQUE_KEYS:
        return "<opaque str>"
    if key == "content":  # a file's base64 content: compare the text, masked
        try:
            return mask(base64.b64decode(value).decode(), session)
        except (ValueError, UnicodeDecodeError):
            return value
    if TIME.match(value):
        return "<time>"
    if value.startswith(("http://", "https://")) or key == "ssh_url":
        return "<url>"
    if HASH.match(value):
        return "<hash>"
    return mask(value, session)


# -- comparison ---------------------------------------------------------------------------
def compare(request: str, forge, gitea, where: str = "$") -> list[Difference]:
    if isinstance(forge, dict) and isinstance(gitea, dict):
        out = []
        for key in sorted(set(forge) | set(gitea)):
            if key not in gitea:
                out.append(Difference(request, f"{where}.{key}", "has it", "lacks it"))
            elif key not in forge:
                out.append(Difference(request, f"{where}.{key}", "lacks it", "has it"))
            else:
                out.extend(compare(request, forge[key], gitea[key], f"{where}.{key}"))
        return out
    if isinstance(forge, list) and isinstance(gitea, list):
        if len(forge) != len(gitea):
            return [Difference(request, f"{where}[]", f"{len(forge)} items", f"{len(gitea)} items")]
        return [d for i, (a, b) in enumerate(zip(forge, gitea)) for d in compare(request, a, b, f"{where}[{i}]")]
    if forge != gitea:
        return [Difference(request, where, _short(forge), _short(gitea))]
    return []


def _short(value) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) < 160 else text[:157] + "..."


def differences(steps: list[dict], forge_answers: list[dict], gitea_answers: list[dict]) -> list[Difference]:
    out = []
    for step, mine, theirs in zip(steps, forge_answers, gitea_answers):
        if mine["status"] != theirs["status"]:  # a different outcome: the body says why
            out.append(Difference(step["id"], "status", str(mine["status"]), str(theirs["status"])))
            continue
        for field in ("type", "total"):
            if mine[field] != theirs[field]:
                out.append(Difference(step["id"], field, str(mine[field]), str(theirs[field])))
        out.extend(compare(step["id"], mine["body"], theirs["body"]))
    return out


# -- the accepted differences -------------------------------------------------------------
def load_steps() -> list[dict]:
    steps = yaml.safe_load(REQUESTS.read_text())
    ids = [s["id"] for s in steps]
    duplicated = {i for i in ids if ids.count(i) > 1}
    if duplicated:
        raise ValueError(f"{REQUESTS}: request ids used twice: {sorted(duplicated)}")
    return steps


def load_accepted() -> list[dict]:
    entries = yaml.safe_load(ACCEPTED.read_text()) or []
    for entry in entries:
        if not entry.get("reason") or not entry.get("request") or not entry.get("where"):
            raise ValueError(f"{ACCEPTED}: every entry needs request, where and reason: {entry}")
    return entries


def accepted_by(difference: Difference, entries: list[dict]) -> dict | None:
    for entry in entries:
        if fnmatch.fnmatchcase(difference.request, entry["request"]) and \
                fnmatch.fnmatchcase(difference.where, entry["where"]) and \
                entry.get("forge", difference.forge) == difference.forge and \
                entry.get("gitea", difference.gitea) == difference.gitea:
            return entry
    return None


def judge(found: list[Difference], entries: list[dict]) -> tuple[list[Difference], list[dict]]:
    """(the differences no entry accepts, the entries no difference needs)."""
    used, unlisted = set(), []
    for difference in found:
        entry = accepted_by(difference, entries)
        if entry is None:
            unlisted.append(difference)
        else:
            used.add(id(entry))
    return unlisted, [e for e in entries if id(e) not in used and not e.get("timing")]


def run() -> tuple[list[dict], list[Difference]]:
    from benchkit.forge import Forge
    from benchkit.gitea.server import Gitea

    steps = load_steps()
    with Forge() as forge:
        mine = replay(forge, steps)
    with Gitea() as gitea:
        theirs = replay(gitea, steps)
    return steps, differences(steps, mine, theirs)


def main(argv: list[str]) -> int:
    steps, found = run()
    entries = load_accepted()
    unlisted, stale = judge(found, entries)
    print(f"{len(steps)} requests, {len(found)} differences, {len(found) - len(unlisted)} accepted")
    for difference in found if "--all" in argv else unlisted:
        mark = "" if difference in unlisted else "  (accepted)"
        print(f"  {difference}{mark}")
    for entry in stale:
        print(f"  stale accepted entry (no longer differs): {entry['request']} {entry['where']}")
    return 1 if unlisted or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

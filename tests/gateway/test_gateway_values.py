"""The gateway's checks on values and text (benchkit.gateway.names, mentions, crossrefs,
hostfiles), decided as the gateway decides a request: a value naming a user, team or
repository other than the trial's own is refused; text Gitea would read as a reference
to another repository's issue (any index strconv.ParseInt reads) or as a mention of
anyone but the trial's user is refused; a file the host reads and acts on is refused;
every check is linear in its input (1 MiB of the worst texts, each checked in well
under a second of CPU); and the list of files the host reads holds every one the pinned
Gitea's source reads (tests/gateway/test_gateway_hostile.py sends the same attacks through the
real CLI to the forge and a real Gitea)."""

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
from conftest import IN_CI

from benchkit.gateway.crossrefs import acts_elsewhere
from benchkit.gateway.hostfiles import HOST_READS, host_reads
from benchkit.gateway.mentions import mentions_other
from benchkit.gateway.names import QUERY_USERS, TEAMS, USERS
from benchkit.gateway.operations import catalogue
from benchkit.gateway.scope import decide

JSON = "application/json"
R = "/api/v1/repos/owner/r"
MIB = 1 << 20
GITEA = "code.gitea.io/gitea@v1.26.0"


def asked(method: str, path: str, body: dict | None = None, query: str = "",
          user: str = "owner"):
    data = json.dumps(body).encode() if body is not None else b""
    return decide(method, path, query, "owner", "r", data, user, JSON if data else "")


# --- references: any index Go's strconv.ParseInt reads -------------------------------

@pytest.mark.parametrize(("text", "found"), [
    ("see [the other one](/owner/other/issues/+1)", "/owner/other/issues/+1"),   # B01
    ("Closes [the crash](/OWNER/Other/issues/+1)", "/owner/other/issues/+1"),    # B02
    ("[x](/owner/other/pulls/+0001)", "/owner/other/pulls/+0001"),
    ("[x](/owner/other/issues/0001)", "/owner/other/issues/0001"),
    ("[x](/owner/other/issues/-1)", "/owner/other/issues/-1"),
    ("<http://localhost:3000/owner/other/issues/+1>", "/owner/other/issues/+1"),
    ("[x]: https://h/owner/other/issues/+1\n\nsee [x]", "/owner/other/issues/+1"),
    ("fixes owner/other#+1", "owner/other#+1"), ("fixes owner/other!007", "owner/other!007"),
    ("[x](/owner/r/issues/+1) and owner/r#0002", ""),  # the trial's own
    # an autolink to no host (or Gitea's own) with `//` in its path: Gitea writes its
    # segments into the text as `owner/repo#N`, glued to what comes before
    ("see owner<http://///other/issues/1>", "http://///other/issues/1"),
    ("see <http:////x(owner/other/issues/1>", "http:////x(owner/other/issues/1"),
    ("*owner*<HTTP://localhost:3000///other/pulls/1>", "http://localhost:3000///other/pulls/1"),
    ("owner_www.host.example//x(owner/other/issues/1", "www.host.example//x(owner/other/issues/1"),
    # under a host at a sub-path, Gitea need not see `//`: glued to the text before
    ("*ot*<http:///owner/r/issues/1>", "http:///owner/r/issues/1"),
    ("ot_http://h/owner/r/pulls/1", "http://h/owner/r/pulls/1"),
    ("<http:///x(other/r/issues/1>", "http:///x(other/r/issues/1"),
    ("see http://h/owner/r/issues/1, (http://h/owner/r/pulls/2) [x](<http://h/owner/r/issues/3>)", ""),
    ("**http://h/api/v1/repos/issues/search** and http://h/api/v1/repos/owner/r/issues/1", ""),
    ("<https://example.com/owner/r/issues/1> and https://example.com/a/b", ""),
    # a hard line break joins the lines with nothing between in the text Gitea reads
    ("see owner/  \nother#1", "owner/other#1"), ("see owner/other\\\r\n  #2", "owner/other#2"),
    ("fixes [x](/owner/  \n other/issues/3)", "/owner/other/issues/3"),  # wider than Gitea
    ("two lines\nowner/\nother#1", ""),  # a soft break is a break
])
def test_any_index_the_host_parses_is_an_index(text, found):
    assert acts_elsewhere(text, "owner", "r") == found
    decision = asked("POST", f"{R}/issues/1/comments", {"body": text})
    assert decision.allowed == (not found), decision.reason


# --- mentions ------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "refused"), [
    ("thanks @admin", True), ("@admin", True), ("(@admin)", True), ("[@Admin]", True),
    ("x*@admin*", True), ("x_@admin_", True), ("**@admin**", True), ("a\\@admin", True),
    ("see www.example.com@admin", True), ("a@b.com@admin", True),
    ("@org/team please look", True), ("cc @owner.x", True), ("@admin's", True),
    ("cc @  \nadmin", True), ("cc @\\\n   admin", True), ("*@\\\nadmin*", True),
    ("cc @owner  \nx", True), ("cc @  \n\x0b\x0cadmin", True), ("cc @owner\nx", False), ("mail a@  \nb.com", False),
    ("thanks @owner", False), ("thanks @OWNER.", False), ("mail a@b.com or x.y-z@q", False),
    ("no mention", False), ("an @ alone", False),
])
def test_a_mention_of_anyone_but_the_trials_user_is_refused(text, refused):
    assert bool(mentions_other(text, frozenset({"owner"}))) == refused
    for method, path, body in (("POST", f"{R}/issues/1/comments", {"body": text}),
                               ("POST", f"{R}/issues", {"title": "t", "body": text}),
                               ("PATCH", f"{R}/issues/1", {"body": text})):
        decision = asked(method, path, body)
        assert decision.allowed == (not refused), (method, path, decision.reason)


def test_a_commit_s_identity_is_the_trials_own_or_the_bots():
    """R16: Gitea matches a commit's e-mail address to a user, a private user's hidden
    address too, and its answer names them: only the trial's own address (any letter
    case) or the fixed bot's, in `author` and `committer` alike."""
    def write(identity: dict, field: str = "author"):
        body = {"content": "aGk=", "message": "docs", field: identity}
        return decide("POST", f"{R}/contents/notes.md", "", "owner", "r",
                      json.dumps(body).encode(), "owner", JSON, "owner@benchkit.invalid")
    for field in ("author", "committer"):
        for address in ("x@admin", "admin@example.com", "rtuser2@noreply.localhost",
                        "other@benchkit.invalid"):
            decision = write({"name": "A", "email": address}, field)
            assert not decision.allowed and f"a commit's {field}" in decision.reason, address
        for address in ("owner@benchkit.invalid", "OWNER@Benchkit.invalid",
                        "agent@benchkit.invalid", ""):
            assert write({"name": "A", "email": address}, field).allowed, address
    assert not asked("POST", f"{R}/contents/notes.md",  # a trial with no address of its own
                     {"content": "aGk=", "author": {"name": "A", "email": "owner@benchkit.invalid"}}
                     ).allowed
    assert not asked("POST", f"{R}/contents/notes.md",
                     {"content": "aGk=", "message": "cc @admin"}).allowed


# --- values that name users, teams or repositories -----------------------------------

@pytest.mark.parametrize(("method", "path", "body", "query"), [
    ("POST", f"{R}/issues", {"title": "t", "assignees": ["admin"]}, ""),        # B05
    ("PATCH", f"{R}/issues/1", {"assignees": ["owner", "admin"]}, ""),          # B05
    ("PATCH", f"{R}/issues/1", {"assignee": "private-user"}, ""),               # B04
    ("PATCH", f"{R}/pulls/1", {"assignees": ["x"]}, ""),
    ("POST", f"{R}/pulls", {"base": "main", "head": "f", "title": "t", "reviewers": ["x"]}, ""),
    ("POST", f"{R}/pulls", {"base": "main", "head": "f", "title": "t",
                            "team_reviewers": ["owners"]}, ""),
    ("POST", f"{R}/pulls/1/requested_reviewers", {"reviewers": ["admin"]}, ""),
    ("DELETE", f"{R}/pulls/1/requested_reviewers", {"team_reviewers": ["t"]}, ""),
    ("GET", f"{R}/issues", None, "created_by=private-user"),                      # B04
    ("GET", f"{R}/issues", None, "assigned_by=admin&state=all"),
    ("GET", f"{R}/issues", None, "mentioned_by=x"),
    ("GET", f"{R}/pulls", None, "poster=admin"),
    ("POST", f"{R}/pulls", {"base": "main...other/private:main", "head": "f", "title": "t"},
     ""),                                                                            # B13
    ("POST", f"{R}/pulls", {"base": "main", "head": "other:main", "title": "t"}, ""),
    ("POST", f"{R}/pulls", {"base": "main", "head": "owner/other:main", "title": "t"}, ""),
    ("POST", f"{R}/pulls", {"base": "main..other/x:y", "head": "f", "title": "t"}, ""),
    ("POST", f"{R}/pulls", {"base": "main", "head": "x...other:main", "title": "t"}, ""),
    ("GET", f"{R}/pulls/main/other:feature", None, ""),
    ("GET", f"{R}/pulls/main/owner%2Fother:feature", None, ""),
    ("POST", f"{R}/issues/1/dependencies", {"owner": "owner", "repo": "other", "index": 1}, ""),
])
def test_a_value_naming_another_user_team_or_repository_is_refused(method, path, body, query):
    decision = asked(method, path, body, query)
    assert not decision.allowed and decision.scope == "refused"


@pytest.mark.parametrize(("method", "path", "body", "query"), [
    ("PATCH", f"{R}/issues/1", {"assignees": ["Owner"]}, ""),   # names are case-insensitive
    ("POST", f"{R}/issues", {"title": "t", "assignees": [""], "labels": []}, ""),  # the Go SDK
    ("PATCH", f"{R}/issues/1", {"assignees": []}, ""),
    ("POST", f"{R}/pulls/1/requested_reviewers", {"reviewers": ["owner"]}, ""),
    ("GET", f"{R}/issues", None, "created_by=OWNER&type=issues"),
    ("GET", f"{R}/pulls", None, "poster=owner"),
    ("POST", f"{R}/pulls", {"base": "main", "head": "owner:fix", "title": "t"}, ""),
    ("POST", f"{R}/pulls", {"base": "main", "head": "owner/r:fix", "title": "t"}, ""),
    ("POST", f"{R}/pulls", {"base": "release/1.0", "head": "fix", "title": "t"}, ""),
    ("GET", f"{R}/pulls/main/owner:feature", None, ""),
    ("GET", f"{R}/pulls/main/feature", None, ""),
])
def test_a_value_naming_the_trials_own_user_or_repository_is_forwarded(method, path, body,
                                                                        query):
    decision = asked(method, path, body, query)
    assert decision.allowed, decision.reason


def test_every_field_of_the_list_that_names_a_user_team_or_repository_is_checked():
    """A field of operations.yaml whose name says it names a user, team or repository
    is one benchkit.gateway.names checks: a new one fails here until it is."""
    naming = re.compile(r"assign|review|owner|repo|user|team|poster|_by$|^head$|^base$|member")
    checked = {*USERS, *TEAMS, *QUERY_USERS, "owner", "repo", "head", "base"}
    listed = {field for fields in catalogue().bodies.values() for field in fields}
    listed |= {key for op in catalogue().operations for key in op.query}
    # the issue search's: answered from the trial's repository (benchkit.gateway.scope)
    confined = {"owner", "team", "assigned", "reviewed", "review_requested"}
    assert {f for f in listed if naming.search(f)} - checked - confined == set()


# --- files the host reads and acts on -------------------------------------------------

@pytest.mark.parametrize("path", [
    "CODEOWNERS", "docs/CODEOWNERS", "Docs/codeowners", ".gitea/CODEOWNERS", " CODEOWNERS",
    ".github/workflows/ci.yml", ".GitHub/PULL_REQUEST_TEMPLATE.md", ".gitlab/issue_template/x.md",
    "ISSUE_TEMPLATE/bug.md", "issue_template.yml", "pull_request_template.md",
    ".gitea/default_merge_message/MERGE_TEMPLATE.md", ".gitattributes", ".gitmodules",
])
def test_a_file_the_host_reads_is_refused_wherever_it_reads_it(path):
    content = {"content": "aGk=", "message": "m"}
    assert host_reads(path)
    for method in ("POST", "PUT"):
        assert not asked(method, f"{R}/contents/{path}", {**content, "sha": "ab12"}).allowed
    moved = asked("PUT", f"{R}/contents/notes.md", {**content, "sha": "ab12", "from_path": path})
    assert not moved.allowed


@pytest.mark.parametrize("path", ["docs/INSTALL.md", "README.md", "src/codeowners.py",
                                  "docs/github/notes.md"])
def test_other_files_are_written(path):
    assert not host_reads(path)
    assert asked("POST", f"{R}/contents/{path}", {"content": "aGk=", "message": "m"}).allowed


def _gitea_source() -> Path:
    try:
        cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True,
                               timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        cache = ""
    source = Path(cache or "/nonexistent") / GITEA
    if not (source / "services/issue/pull.go").is_file():
        (pytest.fail if IN_CI else pytest.skip)(
            f"no Gitea source at {source} (scripts/test-setup builds it from the module cache)")
    return source


# A path literal in Gitea's source that looks like a file it reads and acts on: under
# its configuration directories, code owners, templates, or read by a literal path.
_LITERAL = re.compile(
    r'"((?:\.gitea|\.github|\.gitlab|\.forgejo)(?:/[^"]*)?|[^" ]*CODEOWNERS[^" ]*|'
    r'[^" ]*(?:ISSUE|issue|PULL_REQUEST|pull_request)_(?:TEMPLATE|template)[^" ]*)"'
    r'|(?:GetTreeEntryByPath|GetBlobByPath)\("([^"]+)"')
# Read by a literal path but not acted on in a trial's repository.
NOT_ACTED_ON = {"README.md": "routers/web/shared/user/header.go: a user's profile "
                             "repository's README, rendered on the profile page"}


def test_every_path_the_pinned_gitea_reads_is_on_the_list():
    source = _gitea_source()
    found: dict[str, str] = {}
    for tree in ("models", "modules", "routers", "services"):
        for path in (source / tree).rglob("*.go"):
            if path.name.endswith("_test.go"):
                continue
            for match in _LITERAL.finditer(path.read_text(errors="replace")):
                literal = (match[1] or match[2]).replace("%s", "X")
                if literal.startswith("/"):
                    continue  # a route of its API (`/issue_templates`), not a file
                found.setdefault(literal, str(path.relative_to(source)))
    assert {"CODEOWNERS", "docs/CODEOWNERS", ".gitea/workflows"} <= found.keys()
    missing = {literal: where for literal, where in found.items()
               if literal not in NOT_ACTED_ON and not host_reads(literal)}
    assert missing == {}, "paths Gitea reads that hostfiles.HOST_READS misses"
    for entry, where in HOST_READS:  # and every entry names a file that is there
        assert all((source / part.split()[0].rstrip(",")).is_file()
                   for part in where.split(", ")), entry


# --- linear time ----------------------------------------------------------------------

WORST = {
    "letters": "a" * MIB, "name characters": ("a.b-c_9" * MIB)[:MIB], "slashes": "/" * MIB,
    "hashes": "#" * MIB, "digits": "1" * MIB, "brackets": "[" * MIB, "at signs": "@" * MIB,
    "letters then a slash": "a" * MIB + "/", "a/": ("a/" * MIB)[:MIB], "/a": ("/a" * MIB)[:MIB],
    "runs and slashes": ("x" * 999 + "/") * (MIB // 1000), "a#": ("a/b#" * MIB)[:MIB],
    "links": ("/o/r/issues/" * MIB)[:MIB], "signs": ("o/r#+" * MIB)[:MIB],
    "@a": ("@a" * MIB)[:MIB], "a@": ("a@" * MIB)[:MIB], "emails": ("a@b.c " * MIB)[:MIB],
    "www": ("www." * MIB)[:MIB] + "@x", "brackets and parens": ("[x](" * MIB)[:MIB],
    "urls": ("x://" * MIB)[:MIB], "url slashes": "x://" + "/" * MIB,
    "autolinks": ("<a://b//issues" * MIB)[:MIB], "issue urls": "a://" + ("o/r/issues/" * MIB)[:MIB],
    "schemes": "a" * MIB + "://x/o/r/issues/1", "spaces": "@" + " " * MIB + "/",
    "hard breaks": ("a/  \n@" * MIB)[:MIB], "backslashes": ("\\" * MIB) + "\n@/",
}


@pytest.mark.parametrize("name", sorted(WORST))
def test_every_check_is_linear_a_mebibyte_in_well_under_a_second(name):
    text = WORST[name]
    body = json.dumps({"body": text}).encode()
    started = time.process_time()  # CPU time: the machine's load does not count
    acts_elsewhere(text, "owner", "r")
    mentions_other(text, frozenset({"owner"}))
    decide("POST", f"{R}/issues/1/comments", "", "owner", "r", body, "owner", JSON)
    decide("PUT", f"{R}/contents/{text[:200]}", "", "owner", "r", b"{}", "owner", JSON)
    assert time.process_time() - started < 1.0

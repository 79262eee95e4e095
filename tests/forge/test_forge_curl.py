"""curl as an agent writes it, against the forge: every auth form, JSON, heredoc and form
bodies, and Gitea's answers to a bad token, an unknown repository and an invalid body.
"""

import json
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")


def sh(script: str, **env) -> tuple[int, dict, str]:
    """Run a bash snippet whose curl uses -i; return (status, headers, body)."""
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30,
                          env={"PATH": "/usr/bin:/bin:/usr/local/bin", **env})
    assert done.returncode == 0, done.stderr
    head, _, body = done.stdout.replace("\r\n", "\n").partition("\n\n")
    status_line, *lines = head.splitlines()
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body


@pytest.fixture
def repo(forge):
    """A repository on the forge, and the environment the curl snippets read."""
    env = {"API": forge.api_url, "TOKEN": forge.token}
    status, _, _ = sh('curl -si -X POST "$API/user/repos" -H "Authorization: token $TOKEN" '
                      '-H "Content-Type: application/json" -d \'{"name":"demo","auto_init":true}\'', **env)
    assert status == 201
    return env


@pytest.mark.parametrize("auth", [
    '-H "Authorization: token $TOKEN"',
    '-H "Authorization: Bearer $TOKEN"',
    '-H "authorization: TOKEN $TOKEN"',
    '-u "bench:$TOKEN"',
    '-u "$TOKEN:"',
    '-u "$TOKEN:x-oauth-basic"',
])
def test_each_auth_form_identifies_the_user(repo, auth):
    status, headers, body = sh(f'curl -si {auth} "$API/user"', **repo)
    assert status == 200 and json.loads(body)["login"] == "bench"
    assert headers["content-type"] == "application/json;charset=utf-8"


def test_query_token_works_with_a_deprecation_warning(repo):
    status, headers, body = sh('curl -si "$API/user?token=$TOKEN"', **repo)
    assert status == 200 and json.loads(body)["login"] == "bench"
    assert "deprecated" in headers["x-gitea-warning"]
    status, _, _ = sh('curl -si "$API/user?access_token=$TOKEN"', **repo)
    assert status == 200


def test_bad_token_is_401_everywhere(repo):
    for path in ("/user", "/version", "/repos/bench/demo", "/no/such/route"):
        status, _, body = sh(f'curl -si -H "Authorization: token nope" "$API{path}"', **repo)
        assert status == 401, path
        assert json.loads(body) == {"message": "invalid username, password or token",
                                    "url": repo["API"].removesuffix("v1") + "swagger"}
    status, _, _ = sh('curl -si -u "bench:wrong" "$API/user"', **repo)
    assert status == 401


def test_no_token_where_one_is_needed(repo):
    status, _, body = sh('curl -si "$API/user"', **repo)
    assert status == 401 and json.loads(body)["message"] == "token is required"
    status, _, body = sh('curl -si -X POST "$API/repos/bench/demo/issues" -d title=x', **repo)
    assert status == 401
    status, _, body = sh('curl -si "$API/version"', **repo)  # public
    assert status == 200 and json.loads(body) == {"version": "1.26.0"}


def test_unknown_repository_is_gitea_404(repo):
    status, _, body = sh('curl -si -H "Authorization: token $TOKEN" "$API/repos/bench/absent/issues"', **repo)
    assert status == 404
    data = json.loads(body)
    assert data["message"] == "not found" and "errors" in data and data["url"].endswith("swagger")


def test_json_heredoc_and_form_bodies_create_issues(repo):
    auth = '-H "Authorization: token $TOKEN"'
    status, _, body = sh(f'curl -si -X POST "$API/repos/bench/demo/issues" {auth} '
                         '-H "Content-Type: application/json" -d \'{"title":"From JSON","body":"j"}\'', **repo)
    assert status == 201 and json.loads(body)["number"] == 1
    status, _, body = sh(f'''curl -si -X POST "$API/repos/bench/demo/issues" {auth} \\
  -H "Content-Type: application/json" --data @- <<'EOF'
{{
  "title": "From a heredoc",
  "body": "It's got 'quotes' & <angle> brackets"
}}
EOF''', **repo)
    assert status == 201
    assert json.loads(body)["body"] == "It's got 'quotes' & <angle> brackets"
    assert "\\u003cangle\\u003e" in body  # Go's encoder escapes HTML characters
    status, _, body = sh(f'curl -si {auth} "$API/repos/bench/demo/issues" -d title=From+a+form '
                         '--data-urlencode "body=a&b=c"', **repo)
    assert status == 201 and (json.loads(body)["title"], json.loads(body)["body"]) == ("From a form", "a&b=c")
    status, _, body = sh(f'curl -si {auth} "$API/repos/bench/demo/issues" --json \'{{"Title":"From --json"}}\'',
                         **repo)
    assert status == 201  # JSON keys match case-insensitively, as Go's decoder does
    status, _, body = sh(f'curl -s {auth} "$API/repos/bench/demo/issues?state=all" -o /dev/stdout -i', **repo)
    assert [i["title"] for i in json.loads(body)] == ["From --json", "From a form", "From a heredoc", "From JSON"]


def test_invalid_bodies_answer_as_gitea(repo):
    auth = '-H "Authorization: token $TOKEN"'
    url = '"$API/repos/bench/demo/issues"'
    status, _, body = sh(f'curl -si -X POST {url} {auth} -H "Content-Type: application/json" -d \'{{"body":"x"}}\'',
                         **repo)
    assert status == 422 and json.loads(body)["message"] == "[Title]: Required"
    # JSON sent without a JSON Content-Type is parsed as a form, as Gitea's binding does.
    status, _, body = sh(f'curl -si -X POST {url} {auth} -d \'{{"title":"x"}}\'', **repo)
    assert status == 422 and json.loads(body)["message"] == "[Title]: Required"
    status, _, body = sh(f'curl -si -X POST {url} {auth} -H "Content-Type: application/json" -d \'{{"title":\'',
                         **repo)
    assert status == 422
    status, _, body = sh(f'curl -si -X POST {url} {auth} -H "Content-Type: application/json" '
                         '-d \'{"title":"x","labels":["bug"]}\'', **repo)
    assert status == 422 and "cannot unmarshal" in json.loads(body)["message"]
    status, _, body = sh(f'curl -si -X POST {url} {auth}', **repo)
    assert status == 422 and "Empty Content-Type" in json.loads(body)["message"]


def test_patch_answers_201_and_form_merge_works(repo):
    auth = '-H "Authorization: token $TOKEN"'
    sh(f'curl -si {auth} "$API/repos/bench/demo/issues" -d title=Close+me', **repo)
    status, _, body = sh(f'curl -si -X PATCH {auth} "$API/repos/bench/demo/issues/1" '
                         '-H "Content-Type: application/json" -d \'{"state":"closed"}\'', **repo)
    assert status == 201 and json.loads(body)["state"] == "closed"
    content = "aGVsbG8K"  # "hello\n"
    status, _, _ = sh(f'curl -si {auth} "$API/repos/bench/demo/contents/hello.txt" '
                      f'-H "Content-Type: application/json" -d \'{{"content":"{content}","new_branch":"f"}}\'', **repo)
    assert status == 201
    sh(f'curl -si {auth} "$API/repos/bench/demo/pulls" -d head=f -d base=main -d title=Hello', **repo)
    # Forms bind by the snake_case Go field name: "do", whatever the JSON spelling.
    status, _, body = sh(f'curl -si {auth} "$API/repos/bench/demo/pulls/2/merge" -d Do=merge', **repo)
    assert status == 422 and json.loads(body)["message"] == "[Do]: Required"
    status, _, body = sh(f'curl -si {auth} "$API/repos/bench/demo/pulls/2/merge" -d do=merge', **repo)
    assert status == 200 and body == ""
    status, _, body = sh(f'curl -si {auth} "$API/repos/bench/demo/pulls/2/merge" -d do=squash', **repo)
    assert status == 405 and json.loads(body)["message"] == "The PR is already merged"
    status, _, body = sh(f'curl -si {auth} "$API/repos/bench/demo/pulls/2.diff"', **repo)
    assert status == 200 and "+hello" in body and "diff --git a/hello.txt b/hello.txt" in body


def test_trailing_and_repeated_slashes_route_as_gitea_does(repo):
    status, _, body = sh('curl -si -H "Authorization: token $TOKEN" "$API/repos/bench//demo/"', **repo)
    assert status == 200 and json.loads(body)["full_name"] == "bench/demo"

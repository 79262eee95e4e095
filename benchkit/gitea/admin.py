"""The forge's admin routes (/_forge/..., an admin's token only), as the harness uses
them: mint and revoke a token for one agent alone, list the API-only tokens, read the
request log. A live Gitea has none of these routes: minting raises HostError there,
the readers answer None.
"""

from __future__ import annotations

import requests

from benchkit.errors import HostError


def mint_agent_token(host_url: str, token: str | None, timeout: float = 10, *,
                     repo: str | None = None, user: str | None = None) -> tuple[str, str]:
    """A token for one agent alone, of `user` (the run's own user; default: the admin
    whose token this is), bound to the repository `repo` (OWNER/NAME, its own trial's),
    and its identity in the request log, from the forge's admin route (POST
    /_forge/tokens). HostError where the host will not mint one."""
    body = {key: value for key, value in (("repo", repo), ("user", user)) if value}
    try:
        response = _admin("POST", host_url, "tokens", token, timeout, json=body)
        minted = response.json() if response.status_code == 201 else None
    except (requests.RequestException, ValueError) as exc:
        raise HostError(f"cannot mint the agent's token on {host_url}: {type(exc).__name__}") from None
    if not isinstance(minted, dict) or not minted.get("token") or not minted.get("token_id"):
        raise HostError(f"cannot mint the agent's token on {host_url}: HTTP {response.status_code}")
    return minted["token"], minted["token_id"]


def revoke_agent_token(host_url: str, token: str | None, token_id: str, timeout: float = 10) -> bool:
    """Revoke an agent's token (DELETE /_forge/tokens/<token_id>); whether it went."""
    try:
        response = _admin("DELETE", host_url, f"tokens/{token_id}", token, timeout)
    except requests.RequestException:
        return False
    return response.status_code == 200


def list_agent_tokens(host_url: str, token: str | None, timeout: float = 10) -> list[dict] | None:
    """The forge's API-only tokens ({token_id, login, repo}); None where the host
    keeps none (a live Gitea)."""
    try:
        response = _admin("GET", host_url, "tokens", token, timeout)
        data = response.json() if response.status_code == 200 else None
    except (requests.RequestException, ValueError):
        return None
    return data if isinstance(data, list) else None


def fetch_request_log(host_url: str, token: str | None, timeout: float = 10, *,
                      token_id: str | None = None) -> list[dict] | None:
    """The forge's request log (GET /_forge/requests: a list of entries), only the
    requests made with the token `token_id` names when given; None where the host
    keeps none (a live Gitea)."""
    try:
        response = _admin("GET", host_url, "requests", token, timeout,
                          params={"token_id": token_id} if token_id else None)
        data = response.json() if response.status_code == 200 else None
    except (requests.RequestException, ValueError):
        return None
    return data if isinstance(data, list) else None


def _admin(method: str, host_url: str, path: str, token: str | None, timeout: float,
           **kwargs) -> requests.Response:
    """One call to the forge's admin routes (/_forge/PATH), which want an admin's token."""
    headers = {"Authorization": f"token {token}"} if token else {}
    return requests.request(method, f"{host_url.rstrip('/')}/_forge/{path}", headers=headers,
                            timeout=timeout, **kwargs)

"""One trial's pass at the gateway (benchkit.gateway.server issues and ends it): its
throwaway token, the repository it may act on, the host token behind it, its own door,
its controls (benchkit.gateway.control), its budgets spent and the record of what its
tools asked."""

from __future__ import annotations

from dataclasses import dataclass, field

from benchkit.evidence import GatewayRequest
from benchkit.gateway.control import Controls
from benchkit.gateway.doors import Door

KEPT = 10_000  # requests a trial's record keeps whole; past it, only those that decide


@dataclass
class Grant:
    """One trial's pass: its throwaway token, its repository, its door, what it asked."""

    token: str = field(repr=False)
    owner: str
    repo: str
    upstream_token: str = field(repr=False)
    user: str = ""             # the host user behind the token (the issue search's filters)
    uploaded: int = 0          # bytes of request bodies reserved so far
    downloaded: int = 0        # bytes of the host's answers sent to its tools so far
    cpu_start: float | None = None  # the host's CPU time when it began (None: unknown)
    requests: list[GatewayRequest] = field(default_factory=list)
    live: bool = True
    inflight: int = 0          # requests being answered; end() waits for them
    url: str = ""              # the trial's own door: what its tools are given
    door: Door | None = field(default=None, repr=False)
    active: set = field(default_factory=set, repr=False)  # its exchanges serving it now
    controls: Controls | None = field(default=None, repr=False)
    email: str = ""            # the host user's own e-mail address: a commit's identity
    unrecorded: int = 0        # requests left off the record (see keep)

    def keep(self, entry: GatewayRequest) -> None:
        """Put a request on the record, which stays bounded whatever the agent sends:
        the first KEPT in full, then only those the audit and the attribution read (a
        refusal, a failure, a control's figures), KEPT more at most; the rest counted."""
        decides = entry.get("scope") == "refused" or "control" in entry \
            or not 100 <= entry.get("status", 0) < 500
        if len(self.requests) < KEPT or (decides and len(self.requests) < 2 * KEPT):
            self.requests.append(entry)
        else:
            self.unrecorded += 1

    @property
    def api_url(self) -> str:
        return self.url + "api/v1"

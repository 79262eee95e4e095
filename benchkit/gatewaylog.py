"""A request through the gateway, as a trial's sample keeps it (`requests`).

The gateway (benchkit.gateway.server) records each request a trial's tools make; the
cell runner stores the trial's record in its sample as these; the failure replay and
the drill-down read them. Never a query, a body or a token. Fields are written in the
order declared here, the order the gateway has always filled them in; a field the
request never reached (or an older sample lacks) is unset and left out, so a stored
line reads and writes back the same. The sample's schema decides which are required.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType


class GatewayRequest(msgspec.Struct, kw_only=True):
    started: float | UnsetType = UNSET     # Unix time it arrived
    method: str
    path: str                              # without its query
    user_agent: str | UnsetType = UNSET
    bytes_in: int | UnsetType = UNSET
    scope: str | UnsetType = UNSET         # what the gateway made of it (the schema's enum)
    reason: str | UnsetType = UNSET        # why it was refused
    problem: str | UnsetType = UNSET       # the credential problem that refused it
    status: int | UnsetType = UNSET        # what the tool was answered
    bytes_out: int | UnsetType = UNSET
    duration: float | UnsetType = UNSET    # seconds, the host's answer included

    @classmethod
    def of(cls, entry: dict[str, Any]) -> GatewayRequest:
        """The gateway's entry (or a stored one) as the record."""
        return msgspec.convert(entry, cls)

    def server_error(self) -> bool:
        """Answered with a 5xx (by the host, or by the gateway when it could not reach it)."""
        return isinstance(self.status, int) and self.status >= 500

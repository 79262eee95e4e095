"""The issue indexer: keyword search (`q`) sees writes only after a configurable lag.

Real Gitea queues indexing, so a freshly created or edited issue is missing from `q`
results for a while; a readiness gate has to wait for it. Each write records the
issue's searchable text with its time; a search at time t sees, per issue, the newest
text recorded at or before t - lag.
"""

import threading
import time
from collections.abc import Iterable


class Indexer:
    """Keyword search over issues, seeing each write only once the lag has passed."""
    def __init__(self, lag: float = 0.0) -> None:
        self.lag = lag
        self.clock = time.monotonic  # replaceable: a test moves time on without waiting
        self._lock = threading.Lock()
        self._versions: dict[int, list[tuple[float, str | None]]] = {}  # issue id -> [(time, text)]

    def set_lag(self, seconds: float) -> None:
        """Search sees a write only `seconds` after it (never less than 0)."""
        self.lag = max(float(seconds), 0.0)

    def index(self, issue_id: int, text: str | None, *, settled: bool = False) -> None:
        """Queue the issue's current searchable text (None: the issue is gone).

        `settled` text is searchable at once: what a reopened database already held.
        """
        stamp = float("-inf") if settled else self.clock()
        with self._lock:
            versions = self._versions.setdefault(issue_id, [])
            versions.append((stamp, None if text is None else text.lower()))
            self._prune(versions, self.clock())

    def _prune(self, versions: list, stamp: float) -> None:
        # Keep only the newest version already visible, and everything still queued.
        horizon = stamp - self.lag
        visible = [i for i, (t, _) in enumerate(versions) if t <= horizon]
        if len(visible) > 1:
            del versions[: visible[-1]]

    def search(self, keyword: str, candidates: Iterable[int]) -> set[int]:
        """The ids among `candidates` whose indexed text contains the keyword."""
        horizon = self.clock() - self.lag
        needle = keyword.lower().strip()
        found = set()
        with self._lock:
            for issue_id in candidates:
                text = None
                for stamp, version in self._versions.get(issue_id, ()):
                    if stamp > horizon:
                        break
                    text = version
                if text is not None and needle in text:
                    found.add(issue_id)
        return found

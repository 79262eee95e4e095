"""How far an open pair of `--until-decided` is from its verdict: the trials, and their
tokens, that the best split of more trials over its cells would need for the interval
to decide the pair, if the current ratio holds.

A pair's variance is a sum of its cells' shares, w / n (benchkit.planning.decide); spending
C tokens on cells costing c a trial in the best proportions (n proportional to
sqrt(w / c)) gives (sum sqrt(w c))^2 / C. The pair is decided once the half-width falls
below the larger of |theta| (a difference) and log(1 + margin) - |theta|
(equivalence). The half-width is taken at the normal quantile, as `reachable` takes it:
the variance being estimated widens it, so this is a floor, said as "at least".
"""

from __future__ import annotations

import math

from benchkit.statistics.verdicts import Family, half_width

_STEPS = 200  # bisection on the log of the variance: far finer than a trial


def trials_to_decide(theta: float, shares: dict, costs: dict, counts: dict, fam: Family,
                     frozen: set | frozenset = frozenset()) -> tuple[int, float] | None:
    """(more trials, their tokens) that would decide the pair at `theta`, or None when
    no number of trials would (a frozen side's share alone is too wide). shares, costs,
    counts: (side, task) -> w, tokens a trial, trials so far."""
    target = max(abs(theta), math.log1p(fam.margin) - abs(theta))
    kept = sum(shares[key] / counts[key] for key in shares if key[0] in frozen)
    free = [key for key in shares if key[0] not in frozen]
    if not free:
        return None
    variance = _variance_at(target, fam)
    if variance is None or variance <= kept:
        return None
    scale = sum(math.sqrt(shares[key] * costs[key]) for key in free)
    budget = scale * scale / (variance - kept)  # every free cell's tokens, old and new
    more = {key: max(0.0, budget * math.sqrt(shares[key] / costs[key]) / scale - counts[key])
            for key in free}
    trials = sum(math.ceil(n) for n in more.values())
    return trials, sum(math.ceil(n) * costs[key] for key, n in more.items())


def _variance_at(half: float, fam: Family) -> float | None:
    """The largest variance whose half-width is at most `half` (None: none is)."""
    low, high = math.log(1e-12), math.log(1e6)
    if half_width(math.exp(low), fam.alpha_pair, fam.rho) > half:
        return None
    for _ in range(_STEPS):
        middle = (low + high) / 2
        if half_width(math.exp(middle), fam.alpha_pair, fam.rho) <= half:
            low = middle
        else:
            high = middle
    return math.exp(low)

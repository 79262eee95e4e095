"""What a scripted model server reported, summed per model from the messages it
received: the figures a driver's usage must add up to."""

from benchkit.agent.scripted import USAGE_KEYS


def reported_usage(model) -> dict[str, dict]:
    """Per model, the sums of the usage figures the server reported."""
    totals: dict[str, dict] = {}
    for received in model.messages():
        if received.usage is None:
            continue
        total = totals.setdefault(received.model, dict.fromkeys(USAGE_KEYS, 0))
        for key in USAGE_KEYS:
            total[key] += received.usage.get(key, 0)
    return totals

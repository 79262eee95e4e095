"""What a run makes sure of before a token is spent: its documents and choices
(checks.py), each arm's tool installed (tools.py) and proven (probe.py), and the host it
uses, found or started and what it was found to be (host.py)."""

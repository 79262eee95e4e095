"""`benchkit validate`: the documents against their schemas, and with --live the suite
proven on a host before a token is spent (selfcheck.py)."""

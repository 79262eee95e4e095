"""Which trials a run wants: what its options ask (settings.py), the cells and trials
(plan.py) with the store's counts and costs (ledger.py), this machine's part of a sweep
(shard.py), what a stopped run resumes (intent.py), and --until-decided's comparisons
and rounds (compared.py, against.py, decide.py, to_decide.py)."""

"""`benchkit run` and a run's lifetime: the command (commands.py), after pre-flight the
host, probes and store (execution.py), the trials on their host (invocation.py), the loop
and its scheduler (loop.py, schedule.py), --until-decided's rounds (rounds.py), the dry
run, what the watcher sees (progress.py, events.py), how it ended (status.py), a stop
(cancel.py), the failure replay (failures.py); and `benchkit merge` (merge.py)."""

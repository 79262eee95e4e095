"""The statistics both the run loop's until-decided planner and the report read: a
trial's row of figures (rows.py), intervals of each cell and arm (intervals.py) and
three-way verdicts per pair of arms (verdicts.py), so a planner's 'decided' is exactly
the report's verdict.
docs/statistics.md says which method each uses and why."""

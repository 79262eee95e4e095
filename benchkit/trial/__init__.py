"""One trial: prepared (prepare.py, its control object control.py), run end to end
(cell.py, the tool's version as it runs version.py), and judged (outcome.py, who its
trouble is charged to attribution.py, the harness's own stops pauses.py)."""

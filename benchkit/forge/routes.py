"""The forge's route table, assembled: each resource module registers its routes when
it is imported, and Starlette tries them in that order, so the order below is the
mount order. It matters twice: the issue search (/repos/issues/search) comes before
/repos/{owner}/{repo}, and pull_branches (/pulls/{base}/{head}) after every
/pulls/{index}/... route, which it would otherwise shadow.
"""

# isort: off
from . import (  # noqa: F401  (imported for the routes they register)
    admin, labels, milestones, issue_search, issues, comments, issue_labels, timeline,
    pulls, reviews, pull_branches, relations,
    users, repos, branches, contents, commits, releases,
    review_requests, swagger,
)
# isort: on
from .web import ROUTES

__all__ = ["ROUTES"]

"""The forge's route table: each resource module declares its ROUTES, and this table puts
them in the order Starlette tries them (the first route that matches answers). The order
matters twice: the issue search (/repos/issues/search) comes before
/repos/{owner}/{repo}, and pull_branches (/pulls/{base}/{head}) after every
/pulls/{index}/... route, which it would otherwise shadow.
"""

from . import (
    admin,
    branches,
    comments,
    commits,
    contents,
    issue_labels,
    issue_search,
    issues,
    labels,
    milestones,
    pull_branches,
    pulls,
    relations,
    releases,
    repos,
    review_requests,
    reviews,
    swagger,
    timeline,
    trees,
    users,
)
from .web import RouteSpec

# The API the Swagger description covers (the admin routes, being absolute, it leaves out).
API: tuple[RouteSpec, ...] = (
    *admin.ROUTES,
    *labels.ROUTES,
    *milestones.ROUTES,
    *issue_search.ROUTES,
    *issues.ROUTES,
    *comments.ROUTES,
    *issue_labels.ROUTES,
    *timeline.ROUTES,
    *pulls.ROUTES,
    *reviews.ROUTES,
    *pull_branches.ROUTES,
    *relations.ROUTES,
    *users.ROUTES,
    *repos.ROUTES,
    *branches.ROUTES,
    *contents.ROUTES,
    *commits.ROUTES,
    *releases.ROUTES,
    *review_requests.ROUTES,
    *trees.ROUTES,
)

ROUTES: tuple[RouteSpec, ...] = (*API, *swagger.routes(API))

"""RepoState: the comparable shape of a repository, and its normalisation.

A snapshot of a live host, a forge, or the expectation interpreter all go through
`normalise` before the checker compares them, so the comparison only ever sees what
the RepoState contract (docs/contracts.md) names: volatile ids, urls and timestamps are
dropped wherever they appear, colours are lower-case without `#`, text loses
surrounding whitespace and CR line ends (a long text is its digest), label and
assignee lists are sorted sets, comments and reviews are sorted multisets (a comment
posted twice stays twice). Its sections are the table of benchkit.state.sections.

A foundation module, not the scorer's: the documents' expectation interpreter builds
RepoStates as well as the checker compares them.
"""

from .records import REVIEW_KINDS, record_key
from .sections import BY_NAME, ISSUE_STATES, PULL_STATES, SECTIONS, normalise_section
from .values import StateError, normalise_color, normalise_text

# A host's answer to GET /api/v1/version may name, in this header, the state's sections
# and fields it does not model (the forge does): a snapshot leaves them out.
UNMODELLED_HEADER = "X-Benchkit-Unmodelled"

__all__ = ["ISSUE_STATES", "PULL_STATES", "REVIEW_KINDS", "SECTIONS", "UNMODELLED_HEADER",
           "StateError",
           "comment_key", "normalise", "normalise_color", "normalise_text", "review_key"]


def normalise(state) -> dict:
    """The canonical RepoState of `state` (a dict as a snapshot or `expect` prints it).
    The first three sections are always there; any other only where `state` has it
    (a capture older than it, or a host that does not model it, has none)."""
    if not isinstance(state, dict):
        raise StateError(f"RepoState must be an object, got {type(state).__name__}")
    unknown = sorted(set(state) - set(BY_NAME))
    if unknown:
        raise StateError(f"RepoState has no section {unknown[0]!r} "
                         f"(sections: {', '.join(BY_NAME)})")
    return {section.name: normalise_section(section, state.get(section.name), section.name)
            for section in SECTIONS if section.required or section.name in state}


def comment_key(comment) -> str:
    return record_key(comment)


def review_key(review) -> str:
    return record_key(review)

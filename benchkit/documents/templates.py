"""Jinja2 templates in YAML documents (prompts, arm settings).

Undefined names fail loudly (StrictUndefined): a typo in a prompt must never render
as an empty string and silently change what the agent is told.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jinja2

# Every name the harness passes when it renders a suite or arm template. `validate`
# flags any other name, so a typo is caught before a run spends tokens on it.
CONTEXT_NAMES = frozenset({
    "host_url", "api_url", "owner", "repo", "user", "token",  # the host and throwaway repo
    "workdir", "config_dir", "root",  # the agent's directory, the arm's config dir, the tree
    "env",  # the harness's environment, for overrides such as BENCHKIT_GITEA_AXI_SKILL
    "skill",  # the arm's skill text (bootstrap only)
})

@functools.cache
def jinja():
    """The jinja2 package (with jinja2.meta), imported on first use."""
    # Not at the top (measured: Jinja2 was about a sixth of `benchkit list tasks`, which
    # reads no template).
    import jinja2.meta
    return jinja2


@functools.cache
def _environment() -> jinja2.Environment:
    return jinja().Environment(undefined=jinja().StrictUndefined, keep_trailing_newline=True,
                               autoescape=False)


@functools.lru_cache(maxsize=256)
def _compile(template_text: str) -> jinja2.Template:
    return _environment().from_string(template_text)


def render(template_text: str, **context) -> str:
    """Render with Jinja2; an undefined name raises jinja2.UndefinedError."""
    return _compile(template_text).render(**context)


def template_problem(template_text: str, names=CONTEXT_NAMES) -> str | None:
    """What is wrong with a template (syntax, unknown names), or None."""
    try:
        parsed = _environment().parse(template_text)
    except jinja().TemplateSyntaxError as error:
        return f"template syntax error on its line {error.lineno}: {error.message}"
    unknown = sorted(jinja().meta.find_undeclared_variables(parsed) - set(names))
    if unknown:
        return f"unknown template variable{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}"
    return None

"""benchkit.isolation: one tool per arm.

    from benchkit.isolation import Guard, Decision, make_bin_dir, assemble, Assembly

`Guard.for_tool(arm_id, tool).decide(command)` is the authority over every shell command an
agent proposes (`decide_tool` for any tool call); `make_bin_dir` builds the curated
PATH behind it; `assemble` gives one run of an arm its prompt, environment, tools and
credential set-up. The parser underneath is `benchkit.isolation.shell.parse`.
"""

from .assembly import Assembly, assemble
from .bindir import make_bin_dir, start_needs
from .errors import IsolationError
from .guard import BUILTINS, UTILITIES, Decision, Guard
from .shell import parse
from .skill import strip_front_matter
from .syntax import ParseError

__all__ = ["Assembly", "BUILTINS", "Decision", "Guard", "IsolationError", "ParseError",
           "UTILITIES", "assemble", "make_bin_dir", "parse", "start_needs",
           "strip_front_matter"]

"""The guard language (DESIGN §1.2), shared by the runtime API and the compiler: parse, resolve,
type-check, bring to disjunctive normal form, classify, and plan the subscription variables."""

from ._ast import Node
from ._compile import compile_guard
from ._errors import GuardError
from ._exprs import FUNCTIONS, TreeError, compile_predicate, compile_tree, reads_time
from ._parse import parse_guard
from ._plan import SUBSCRIBED_AT, GuardPlan, compile_conjunctions, conjunctions_hold

__all__ = [
    "FUNCTIONS", "GuardError", "GuardPlan", "Node", "TreeError", "compile_conjunctions",
    "SUBSCRIBED_AT", "compile_guard", "compile_predicate", "compile_tree", "conjunctions_hold", "parse_guard",
    "reads_time",
]

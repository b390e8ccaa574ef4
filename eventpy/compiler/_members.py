"""What a class body's members are, as far as the source tells: the names it makes properties,
and whether a function is a generator (its own `yield`). Read by _analysis's checks of event
methods and of the fields their guards read."""

from __future__ import annotations

import ast


def properties(cls: ast.ClassDef) -> set[str]:
    """The names the class body binds to a property (`@property`, `@x.setter`, `x = property(...)`,
    `@functools.cached_property`)."""
    def is_property(e: ast.AST) -> bool:
        e = e.func if isinstance(e, ast.Call) else e
        name = ast.unparse(e)
        return name in ("property", "cached_property", "functools.cached_property") or (
            isinstance(e, ast.Attribute) and e.attr in ("setter", "getter", "deleter"))

    out = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(map(is_property, node.decorator_list)):
            out.add(node.name)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and is_property(node.value):
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return out


def own_yield(fn: ast.AST) -> ast.AST | None:
    """The first `yield` (or `yield from`) of a function's own body, not of a function, lambda or
    class inside it (in a comprehension Python refuses one itself)."""
    todo = list(ast.iter_child_nodes(fn))
    todo = [n for n in todo if n not in (*fn.decorator_list, fn.args, fn.returns)]  # type: ignore[attr-defined]
    while todo:
        node = todo.pop(0)
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo[:0] = ast.iter_child_nodes(node)
    return None

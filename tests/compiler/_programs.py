"""What the compiled-program tests share: compile an .epy text in memory and run it, and a
monitor class with a decreasing threshold."""

from __future__ import annotations

import textwrap

from eventpy.compiler import compile_source


def load(text: str, name: str = "prog", names: dict | None = None) -> dict:
    """Compile and run `text` as module `name`; `names`: what it finds already defined (a base
    class from another module, which the compiler of this one cannot see)."""
    ns: dict = {**(names or {}), "__name__": name}
    code = compile(compile_source(textwrap.dedent(text), f"{name}.epy", name), f"{name}.epy", "exec",
                   dont_inherit=True)
    exec(code, ns)
    return ns


MONITOR = '''
    class Monitor:
        def __init__(self, limit: float):
            self.limit = limit
            self.got = []

        event def quote(self, firm: str, price: float) when firm == "IBM" and price < self.limit:
            self.got.append(price)
            self.limit = price          # a decreasing threshold, updated inside the event method
'''

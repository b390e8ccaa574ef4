"""`.epy` programs written the way a Python programmer writes a class: what Python accepts and
means, EventPy accepts and means the same (DESIGN §1: "everything else is Python")."""

from __future__ import annotations

import pytest

import eventpy

from _programs import load  # tests/compiler/_programs.py

pytestmark = pytest.mark.usefixtures("fresh_overlay")  # tests/conftest.py


def test_types_written_as_strings_are_the_types_they_name():
    # `x: 'float'` is a forward reference in Python, and what `from __future__ import annotations`
    # makes of every annotation: the runtime took it, eventpyc refused it as "an unsupported type"
    ns = load('''
    class Desk:
        limit: "float"

        def __init__(self, limit: "float"):
            self.limit = limit
            self.got = []

        event def quote(self, firm: 'str', price: "float") when firm == "IBM" and price < self.limit:
            self.got.append(price)
    ''')
    d = ns["Desk"](10.0)
    for price in (9.0, 11.0):
        ns["Desk"].quote("IBM", price)
    eventpy.drain(5.0)
    assert d.got == [9.0]
    with pytest.raises(TypeError, match="declared float"):
        ns["Desk"]("ten")  # the field's type, read from the string, is checked as a plain one would be

"""Values that stand for an int, float or str without being one (numpy numbers, enums, str
subclasses): what a program computed with numpy or pandas publishes and keeps in its fields.
They are taken as the built-in value; a bool is not a number."""

from __future__ import annotations

import enum
import textwrap

import numpy as np
import pytest

import eventpy
from eventpy.compiler import compile_source

pytestmark = pytest.mark.usefixtures("fresh_overlay")  # tests/conftest.py

Order = eventpy.EventType("desk.Order", sym=str, side=str, price=float, qty=int)


class Side(str, enum.Enum):
    BUY = "buy"


def test_a_numpy_float_parameter_matches_as_the_float_it_is():
    # np.float64 is a float: it was accepted as a parameter, but the guard's interval came out
    # empty, so the subscription never matched and nothing said why
    node = eventpy.connect()
    got = []
    sub = node.subscribe(Order, "price < limit and qty >= least", on_event=got.append,
                         params={"limit": np.float64(10.0), "least": np.int64(2)})
    node.publish(Order, sym="IBM", side="buy", price=5.0, qty=3)
    eventpy.drain(5.0)
    assert [e.price for e in got] == [5.0]
    sub.update(limit=np.float32(20.0), least=np.int64(1))
    node.publish(Order, sym="IBM", side="buy", price=15.0, qty=1)
    eventpy.drain(5.0)
    assert [e.price for e in got] == [5.0, 15.0]
    assert sub.params == {"limit": 20.0, "least": 1} and type(sub.params["least"]) is int


def test_numpy_numbers_enums_and_str_subclasses_publish_as_built_in_values():
    node = eventpy.connect()
    got = []
    node.subscribe(Order, "sym in syms and side == 'buy'", params={"syms": {np.str_("IBM")}}, on_event=got.append)
    node.publish(Order, sym=np.str_("IBM"), side=Side.BUY, price=np.float64(9.5), qty=np.int64(3))
    eventpy.drain(5.0)
    assert [tuple(e.values) for e in got] == [("IBM", "buy", 9.5, 3)]
    assert [type(v) for v in got[0].values] == [str, str, float, int]


def test_what_is_not_the_attributes_type_is_still_refused():
    node = eventpy.connect()
    with pytest.raises(TypeError, match="attribute 'qty' must be int, got float64"):
        node.publish(Order, sym="IBM", side="buy", price=1.0, qty=np.float64(3.0))
    with pytest.raises(TypeError, match="attribute 'price' must be float, got bool"):
        node.publish(Order, sym="IBM", side="buy", price=True, qty=3)
    with pytest.raises(TypeError, match="attribute 'qty' must be int, got bool"):
        node.publish(Order, sym="IBM", side="buy", price=1.0, qty=np.bool_(True))


def test_a_field_set_from_numpy_in_an_epy_class():
    text = textwrap.dedent('''
        class Monitor:
            def __init__(self, limit):
                self.limit = limit
                self.got = []

            event def quote(self, firm: str, price: float, qty: int) when price < self.limit:
                self.got.append((price, qty))
    ''')
    ns: dict = {"__name__": "numfields"}
    exec(compile(compile_source(text, "numfields.epy", "numfields"), "numfields.epy", "exec"), ns)
    m = ns["Monitor"](np.mean([9.0, 11.0]))  # a limit computed with numpy: np.float64(10.0)
    ns["Monitor"].quote("IBM", np.float64(5.0), np.int64(2))
    eventpy.drain(5.0)
    assert m.got == [(5.0, 2)]
    m.limit = np.int64(100)  # was refused: np.int64 is not an int subclass
    eventpy.drain(5.0)
    ns["Monitor"].quote("IBM", 50.0, 1)
    eventpy.drain(5.0)
    assert m.got == [(5.0, 2), (50.0, 1)] and m.limit == 100
    m.close()


def test_a_numpy_bool_is_a_bool_for_a_switch():
    node = eventpy.connect()
    got = []
    sub = node.subscribe(Order, "on and price > 0", params={"on": np.bool_(True)}, on_event=got.append)
    node.publish(Order, sym="IBM", side="buy", price=1.0, qty=1)
    eventpy.drain(5)
    sub.update(on=np.bool_(False))
    eventpy.drain(5)
    node.publish(Order, sym="IBM", side="buy", price=2.0, qty=1)
    eventpy.drain(5)
    assert [e.price for e in got] == [1.0]
    with pytest.raises(TypeError, match="must stay a bool"):
        sub.update(on=np.float64(1.0))  # still not a number



def test_a_numpy_bool_is_a_bool_attribute():
    # was refused with "attribute 'ok' must be bool, got bool np.True_" (numpy's bool is named bool)
    Check = eventpy.EventType("desk.Check", ok=bool, n=int)
    node = eventpy.connect()
    got = []
    node.subscribe(Check, "ok", on_event=got.append)
    node.publish(Check, ok=np.array([0, 2]).any(), n=np.int64(1))
    eventpy.drain(5)
    assert [(type(e.ok), e.ok) for e in got] == [(bool, True)]
    with pytest.raises(TypeError, match="attribute 'ok' must be bool, got int"):
        node.publish(Check, ok=1, n=1)  # a number is still not a bool


def test_a_long_field_value_is_quoted_short_in_messages_or_stored():
    text = textwrap.dedent('''
        class Cap:
            def __init__(self):
                self.limit = 1

            event def order(self, sym: str, side: str, price: float, qty: int) when qty > self.limit:
                pass
    ''')
    ns: dict = {"__name__": "longfields"}
    exec(compile(compile_source(text, "longfields.epy", "longfields"), "longfields.epy", "exec"), ns)
    c = ns["Cap"]()
    # a repr past 80 characters without a len() (was a TypeError from len), and past what the
    # overlay carries: refused before it is stored, quoted short
    with pytest.raises(ValueError, match=r"^Cap.limit = 10{59}\.\.\. \(int\) refused: parameter 'limit' is "
                                         r"10{59}\.\.\. \(int\), outside the 64-bit integers the overlay carries"):
        c.limit = 10 ** 100
    assert c.limit == 1
    with pytest.raises(TypeError, match=r"^Cap.limit = '" + "x" * 60 + r"'\.\.\. \(str of 100000\) refused: parameter .limit. must stay a number, got str 'x{60}'\.\.\. \(str of 100000\) \(read by"):
        c.limit = "x" * 100_000
    c.close()

"""Event types, events and attribute values (paper 001 §4: the typed schema every constraint and
event is checked against)."""

from __future__ import annotations

import math

import pytest

from eventpy.runtime.model import ATTRIBUTE_TYPES, INF, Event, EventType, check_value

# -- EventType -------------------------------------------------------------------------------------
Q = EventType("stocks.Quote", firm=str, price=float, vol=int, hot=bool)


def test_event_type_shape():
    assert Q.attrs == ("firm", "price", "vol", "hot")
    assert Q.index == {"firm": 0, "price": 1, "vol": 2, "hot": 3}
    assert Q.types == (str, float, int, bool)
    assert Q.to_wire() == (("firm", "str"), ("price", "float"), ("vol", "int"), ("hot", "bool"))
    assert EventType.from_wire("stocks.Quote", list(Q.to_wire())) == Q
    assert Q.describe() == "firm: str, price: float, vol: int, hot: bool"
    assert repr(Q) == "EventType('stocks.Quote', firm: str, price: float, vol: int, hot: bool)"
    assert set(ATTRIBUTE_TYPES.values()) == {int, float, str, bool}
    assert EventType("stocks.Quote", firm=str, price=float, vol=int, hot=bool) == Q
    assert hash(EventType("stocks.Quote", firm=str, price=float, vol=int, hot=bool)) == hash(Q)
    assert EventType("stocks.Quote", firm=str) != Q


@pytest.mark.parametrize("t", [list, dict, bytes, complex, type(None), object, "int", frozenset])
def test_event_type_rejects_unsupported_types(t):
    with pytest.raises(TypeError) as e:
        EventType("T", a=t)
    msg = str(e.value)
    assert "'a'" in msg and "only int, float, str and bool are supported" in msg


@pytest.mark.parametrize("name", ["_x", "_", "__dunder__"])
def test_event_type_rejects_reserved_names(name):
    with pytest.raises(TypeError, match="reserved"):
        EventType("T", **{name: int})


def test_event_type_needs_a_name_and_an_attribute():
    with pytest.raises(TypeError, match="non-empty name"):
        EventType("", a=int)
    with pytest.raises(TypeError, match="non-empty name"):
        EventType(3, a=int)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="at least one attribute"):
        EventType("T")


def test_values_from_in_schema_order_with_coercion():
    v = Q.values_from({"hot": False, "vol": 3, "price": 7, "firm": "IBM"})
    assert v == ("IBM", 7.0, 3, False)
    assert type(v[1]) is float  # int accepted for float, stored as float
    assert Q.values_from({"hot": True, "vol": -1, "price": 2.5, "firm": ""})[1] == 2.5


def test_values_from_unknown_and_missing_attributes():
    with pytest.raises(TypeError) as e:
        Q.values_from({"firm": "IBM", "price": 1.0, "vol": 1, "hot": True, "size": 3})
    assert "unknown attribute(s) 'size'" in str(e.value) and "stocks.Quote" in str(e.value)
    with pytest.raises(TypeError) as e:
        Q.values_from({"firm": "IBM", "price": 1.0})
    assert "missing attribute(s) 'vol', 'hot'" in str(e.value)
    assert "schema: firm: str, price: float, vol: int, hot: bool" in str(e.value)
    with pytest.raises(TypeError) as e:  # same count, one replaced
        Q.values_from({"firm": "IBM", "price": 1.0, "vol": 1, "cold": True})
    assert "unknown attribute(s) 'cold'" in str(e.value) and "missing attribute(s) 'hot'" in str(e.value)


@pytest.mark.parametrize(
    "attr, value, tname",
    [
        ("vol", True, "bool"),  # bool is not accepted for int
        ("vol", 1.0, "float"),  # nor float for int
        ("price", True, "bool"),
        ("price", "1", "str"),
        ("firm", 3, "int"),
        ("hot", 1, "int"),
        ("hot", None, "NoneType"),
    ],
)
def test_values_from_wrong_type_names_the_attribute(attr, value, tname):
    good = {"firm": "IBM", "price": 1.0, "vol": 1, "hot": True}
    with pytest.raises(TypeError) as e:
        Q.values_from({**good, attr: value})
    msg = str(e.value)
    assert f"attribute {attr!r} must be {Q.schema[attr].__name__}, got {tname}" in msg


def test_values_from_rejects_nan_but_accepts_infinities():
    good = {"firm": "IBM", "price": 1.0, "vol": 1, "hot": True}
    with pytest.raises(ValueError, match="'price' is NaN"):
        Q.values_from({**good, "price": math.nan})
    assert Q.values_from({**good, "price": INF})[1] == INF


def test_check_value():
    assert check_value("a", float, 3) == 3.0 and type(check_value("a", float, 3)) is float
    assert check_value("a", int, 3) == 3
    with pytest.raises(TypeError, match="field 'a' must be int, got bool True"):
        check_value("a", int, True, what="field")


# -- Event -------------------------------------------------------------------------------------------
def test_event_attribute_and_mapping_access():
    ev = Q(firm="IBM", price=99, vol=10, hot=True)
    assert isinstance(ev, Event)
    assert ev.firm == "IBM" and ev.price == 99.0 and type(ev.price) is float
    assert ev["vol"] == 10 and ev["hot"] is True
    assert list(ev) == ["firm", "price", "vol", "hot"] and len(ev) == 4
    assert dict(ev) == {"firm": "IBM", "price": 99.0, "vol": 10, "hot": True}
    assert ev.get("nope", 7) == 7 and "price" in ev and "nope" not in ev
    assert ev.values == ("IBM", 99.0, 10, True) and ev.type is Q
    assert repr(ev) == "stocks.Quote(firm='IBM', price=99.0, vol=10, hot=True)"
    with pytest.raises(AttributeError, match="stocks.Quote has no attribute 'nope'"):
        ev.nope  # noqa: B018
    with pytest.raises(KeyError):
        ev["nope"]


def test_event_is_immutable():
    ev = Q(firm="IBM", price=99, vol=10, hot=True)
    with pytest.raises(AttributeError, match="immutable"):
        ev.price = 1.0
    with pytest.raises(AttributeError, match="immutable"):
        ev.values = ()
    with pytest.raises(AttributeError):
        setattr(ev, "new", 1)
    with pytest.raises(TypeError):
        ev["price"] = 1.0  # type: ignore[index]
    with pytest.raises(AttributeError):
        del ev.price
    assert ev.price == 99.0


def test_event_slots_cannot_be_deleted():
    ev = Q(firm="IBM", price=99, vol=10, hot=True)
    with pytest.raises(AttributeError):
        del ev.values
    assert ev.price == 99.0


def test_attribute_names_that_clash_with_event_members():
    try:
        t = EventType("Order", type=str, values=int)
    except TypeError:
        return  # refusing such names (like '_' names) is an acceptable fix
    ev = t(type="limit", values=3)
    assert ev["type"] == "limit"
    assert ev.type == "limit" and ev.values == 3


def test_event_equality_and_hash():
    a = Q(firm="IBM", price=99, vol=10, hot=True)
    b = Q(firm="IBM", price=99.0, vol=10, hot=True)
    c = Q(firm="IBM", price=98.0, vol=10, hot=True)
    assert a == b and hash(a) == hash(b)
    assert a != c
    assert len({a, b, c}) == 2
    other = EventType("other.Quote", firm=str, price=float, vol=int, hot=bool)
    assert other(firm="IBM", price=99, vol=10, hot=True) != a
    assert a in [c, b] and a not in [c]


def test_event_compares_with_non_events():
    a = Q(firm="IBM", price=99, vol=10, hot=True)
    assert (a == None) is False  # noqa: E711
    assert a != 3
    assert a in [None, "x", a]


def test_fits_tells_whether_received_values_are_an_event_of_the_type():
    t = EventType("q.T", firm=str, price=float, n=int, ok=bool)
    assert t.fits(("IBM", 1.5, 2, True))
    assert t.fits(("IBM", 1, 2, False))  # a float attribute takes an int, as brokers accept
    assert not t.fits(("IBM", 1.5, True, True))  # a bool is not an int here
    assert not t.fits(("IBM", 1.5, 2))  # arity
    assert not t.fits(("IBM", 1.5, 2, True, 0))
    assert not t.fits(("IBM", "1.5", 2, True))
    assert not t.fits(["IBM", 1.5, 2, True])  # what the wire gives is a tuple

"""Event types, their schemas, and events (paper 000 §3.1: strongly typed records)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Iterator, Mapping

from .._params import INT_MAX, INT_MIN  # noqa: F401 (the ints an event carries; _plan reads them here)
from .._params import plain as _plain

#: The attribute types of DESIGN §1.1: ordered (numeric) and enumerated (str, bool).
ATTRIBUTE_TYPES: dict[str, type] = {"int": int, "float": float, "str": str, "bool": bool}
NUMERIC = (int, float)
# The integers an event can carry over TCP (msgpack's): checked at publication on every overlay,
# so that a program behaves the same embedded.
#: Members of `Event` an attribute of the same name would hide.
RESERVED = frozenset({"type", "values", "get", "keys", "items"})


def type_name(t: type) -> str:
    return t.__name__


def check_value(attr: str, t: type, value: Any, what: str = "attribute") -> Any:
    """Return `value` coerced to `t`, or raise TypeError saying what was required and found."""
    vt = type(value)
    if vt is t:
        return value
    if t is float and vt is int:
        return float(value)
    # np.float64, np.int64, an IntEnum, a str subclass, np.bool_ (from `array.any()`): as the
    # built-in value (a number is never made a bool: plain() keeps it a number)
    v = _plain(value)
    if type(v) is t:
        return v
    if t is float and type(v) is int:
        return float(v)
    raise TypeError(
        f"{what} {attr!r} must be {t.__name__}, got {vt.__name__} {value!r}"
    )


# the Python types a received value of each attribute type may have
_ACCEPTS = {float: (float, int), int: (int,), str: (str,), bool: (bool,)}


@lru_cache(maxsize=None)
def exact_types(types: tuple[type, ...]) -> Callable[[tuple], bool]:
    """A test that received values are exactly of `types` (as a Python publisher sends them, after
    values_from): EventType.fits' common case, which a client runs on every event it receives.
    Unrolled for up to four attributes: ClientCore.targets took 0.25 us more an event with it,
    0.4 us with a tuple of the values' types compared, 0.9 us with fits (an A/B of targets(), one
    subscription of three attributes); one test per schema, shared."""
    n = len(types)
    if n == 1:
        (a,) = types
        return lambda v: len(v) == 1 and type(v[0]) is a
    if n == 2:
        a, b = types
        return lambda v: len(v) == 2 and type(v[0]) is a and type(v[1]) is b
    if n == 3:
        a, b, c = types
        return lambda v: len(v) == 3 and type(v[0]) is a and type(v[1]) is b and type(v[2]) is c
    if n == 4:
        a, b, c, d = types
        return lambda v: len(v) == 4 and type(v[0]) is a and type(v[1]) is b and type(v[2]) is c and type(v[3]) is d
    return lambda v: tuple(map(type, v)) == types


class EventType:
    """A named schema: `EventType("stocks.Quote", firm=str, price=float)`."""

    __slots__ = ("name", "schema", "attrs", "index", "types", "_checks", "_ints", "accepts", "text_positions")

    def __init__(self, name: str, /, **schema: type) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError("an event type needs a non-empty name")
        if not schema:
            raise TypeError(f"event type {name!r} needs at least one attribute")
        for attr, t in schema.items():
            if attr.startswith("_") or attr in RESERVED:
                raise TypeError(f"attribute {attr!r} of {name!r}: names starting with '_' and "
                                f"{', '.join(sorted(RESERVED))} are reserved (an event reads them as "
                                "its own members); rename it")
            if t not in ATTRIBUTE_TYPES.values():
                raise TypeError(
                    f"attribute {attr!r} of {name!r} has type {t!r}; "
                    "only int, float, str and bool are supported"
                )
        self.name = name
        self.schema: dict[str, type] = dict(schema)
        self.attrs: tuple[str, ...] = tuple(schema)
        self.index: dict[str, int] = {a: i for i, a in enumerate(self.attrs)}
        self.types: tuple[type, ...] = tuple(schema.values())
        self._checks = tuple(zip(self.attrs, self.types))  # values_from's loop (a zip per call cost 0.13 us)
        self.text_positions = tuple(i for i, t in enumerate(self.types) if t is str)  # what can be large
        self._ints = tuple(i for i, t in enumerate(self.types) if t is int)
        # per attribute, the Python types a received value may have (fits; a broker's PUB check)
        self.accepts = tuple(_ACCEPTS[t] for t in self.types)

    @classmethod
    def from_wire(cls, name: str, fields: list[tuple[str, str]] | tuple) -> "EventType":
        return cls(name, **{a: ATTRIBUTE_TYPES[t] for a, t in fields})

    def to_wire(self) -> tuple[tuple[str, str], ...]:
        """The schema as ((attribute, type name), ...), in order: what an ADV carries."""
        return tuple((a, t.__name__) for a, t in self.schema.items())

    def values_from(self, kwargs: Mapping[str, Any]) -> tuple:
        """Check names and types of published attributes; return them in schema order."""
        # Every publication passes here: plain loops, the common case (right types) first.
        if len(kwargs) == len(self.attrs):
            out = []
            try:
                for a, t in self._checks:
                    v = kwargs[a]
                    if type(v) is not t:  # named with the type: a program publishes several with a `price`
                        v = check_value(a, t, v, f"{self.name}: attribute")
                    if v != v:
                        raise ValueError(f"{self.name}: attribute {a!r} is NaN, which no guard can match")
                    out.append(v)
                for i in self._ints:  # what the wire cannot carry is refused here, on every overlay
                    v = out[i]
                    if not INT_MIN <= v <= INT_MAX:
                        raise ValueError(f"{self.name}: attribute {self.attrs[i]!r} is {v}, outside the "
                                         "64-bit integers events carry")
                return tuple(out)
            except KeyError:
                pass
        unknown = [a for a in kwargs if a not in self.index]
        missing = [a for a in self.attrs if a not in kwargs]
        parts = []
        if unknown:
            parts.append(f"unknown attribute(s) {', '.join(map(repr, unknown))}")
        if missing:
            parts.append(f"missing attribute(s) {', '.join(map(repr, missing))}")
        raise TypeError(f"{self.name}: " + "; ".join(parts) + f" (schema: {self.describe()})")

    def fits(self, values: Any) -> bool:
        """Whether values received from elsewhere are an event of this type: a tuple of its
        arity, each value of its attribute's type (a float attribute takes an int, as brokers
        accept; a bool is not an int here). What a program is given must be; a peer may send
        anything."""
        if type(values) is not tuple or len(values) != len(self.accepts):
            return False
        i = 0
        for v in values:  # where exact_types (a client's first test) said no: rare, a plain loop
            if type(v) not in self.accepts[i]:
                return False
            i += 1
        return True

    def describe(self) -> str:
        """The schema as text: `firm: str, price: float`."""
        return ", ".join(f"{a}: {t.__name__}" for a, t in self.schema.items())

    def __call__(self, **kwargs: Any) -> "Event":
        return Event(self, self.values_from(kwargs))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EventType) and other.name == self.name and other.schema == self.schema

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"EventType({self.name!r}, {self.describe()})"


class Event(Mapping[str, Any]):
    """A published event: `ev.price` and `ev["price"]` both read an attribute."""

    __slots__ = ("type", "values", "_meta")

    def __init__(self, etype: EventType, values: tuple) -> None:
        object.__setattr__(self, "type", etype)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "_meta", None)  # (origin, seq, time) once delivered

    def __getattr__(self, name: str) -> Any:
        try:
            return self.values[self.type.index[name]]
        except KeyError:
            raise AttributeError(f"{self.type.name} has no attribute {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("events are immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("events are immutable")

    def __getitem__(self, name: str) -> Any:
        return self.values[self.type.index[name]]

    def __iter__(self) -> Iterator[str]:
        return iter(self.type.attrs)

    def __len__(self) -> int:
        return len(self.values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Event):
            return self.type.name == other.type.name and self.values == other.values
        if isinstance(other, Mapping):
            return dict(self) == dict(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.type.name, self.values))

    def __repr__(self) -> str:
        inner = ", ".join(f"{a}={v!r}" for a, v in zip(self.type.attrs, self.values))
        return f"{self.type.name}({inner})"


_new_object = object.__new__
_set_type = Event.__dict__["type"].__set__
_set_values = Event.__dict__["values"].__set__
_set_meta = Event.__dict__["_meta"].__set__


def received_event(etype: EventType, values: tuple, meta: tuple) -> Event:
    """An event as a subscriber receives it, with (origin, seq, time): built through the slots,
    not __init__ and __setattr__ (every delivered event is built here; 0.56 -> 0.24 us)."""
    ev = _new_object(Event)
    _set_type(ev, etype)
    _set_values(ev, values)
    _set_meta(ev, meta)
    return ev

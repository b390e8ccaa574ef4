"""A guard field stored on the class (`Monitor.limit = v`, `cls.limit = v`), a default from a
plain base class, and event classes with a metaclass of their own (an ABC).

Python's rule is the contract: an object that never stored its own value reads the class's, and
follows the class when it changes; one that stored its own keeps it. Whatever the class-level
store, later stores on objects still reach their subscriptions (before the fix, `Monitor.limit = v`
replaced the field's descriptor, and `m.limit = w` afterwards updated nothing)."""

from __future__ import annotations

import abc
import traceback

import pytest

import eventpy

from _programs import load  # tests/compiler/_programs.py

pytestmark = pytest.mark.usefixtures("fresh_overlay")  # tests/conftest.py

WATCH = '''
    class Watch:
        limit = 10.0

        def __init__(self, name):
            self.name = name
            self.got = []

        event def quote(self, price: float) when price < self.limit:
            self.got.append(price)

        @classmethod
        def tighten(cls, v):
            cls.limit = v
'''


def _quotes(cls, *prices):
    for p in prices:
        cls.quote(p)
    eventpy.drain(5.0)


def test_a_class_store_reaches_the_objects_that_read_the_class_value():
    ns = load(WATCH)
    Watch = ns["Watch"]
    a, b = Watch("a"), Watch("b")
    b.limit = 50.0                      # b has a value of its own from here on
    Watch.limit = 30.0                  # a follows the class; b does not
    eventpy.drain(5.0)
    assert (Watch.limit, a.limit, b.limit) == (30.0, 30.0, 50.0)
    _quotes(Watch, 20.0, 40.0)
    assert a.got == [20.0] and b.got == [20.0, 40.0]
    c = Watch("c")                      # made after the store: the new class value
    assert c.limit == 30.0


def test_an_object_store_after_a_class_store_still_updates_the_subscription():
    ns = load(WATCH)
    Watch = ns["Watch"]
    a = Watch("a")
    Watch.limit = 5.0
    a.limit = 100.0                     # before the fix: stored in a.__dict__ only, no UPD
    _quotes(Watch, 60.0)
    assert a.got == [60.0]
    assert Watch.__dict__["limit"].__class__.__name__ == "GuardField"


def test_a_store_through_cls_in_a_classmethod_and_setattr_on_the_class():
    ns = load(WATCH)
    Watch = ns["Watch"]
    a = Watch("a")
    Watch.tighten(3.0)
    _quotes(Watch, 4.0, 2.0)
    assert a.got == [2.0]
    setattr(Watch, "limit", 8.0)
    _quotes(Watch, 4.0)
    assert a.got == [2.0, 4.0]


def test_a_subclass_with_a_default_of_its_own_does_not_follow_its_base():
    ns = load(WATCH + '''
    class Strict(Watch):
        limit = 1.0
    ''')
    Watch, Strict = ns["Watch"], ns["Strict"]
    w, s = Watch("w"), Strict("s")
    Watch.limit = 70.0
    eventpy.drain(5.0)
    assert (w.limit, s.limit, Strict.limit) == (70.0, 1.0, 1.0)
    Strict.limit = 2.0                  # reaches s, not w
    eventpy.drain(5.0)
    assert (w.limit, s.limit, Watch.limit) == (70.0, 2.0, 70.0)


def test_a_class_store_the_guard_cannot_take_is_refused_and_changes_nothing():
    ns = load(WATCH)
    Watch = ns["Watch"]
    a = Watch("a")
    with pytest.raises(TypeError, match=r"Watch\.limit = 'high' refused"):
        Watch.limit = "high"
    assert Watch.limit == 10.0 and a.limit == 10.0
    _quotes(Watch, 9.0)
    assert a.got == [9.0]


def test_deleting_a_guard_field_of_the_class_is_refused():
    ns = load(WATCH)
    Watch = ns["Watch"]
    Watch("a")
    with pytest.raises(AttributeError, match="Watch.limit is read by the guard of quote and cannot be deleted: "
                                             "the guard needs a value; give the class another default") as info:
        del Watch.limit
    assert Watch.limit == 10.0
    # raised from the `del` line, not from the metaclass of eventpy that refused it
    assert traceback.extract_tb(info.value.__traceback__)[-1].filename == __file__


def test_a_default_from_a_plain_base_class():
    ns = load('''
    class Defaults:
        limit = 10.0

    class Watch(Defaults):
        def __init__(self):
            self.got = []

        event def quote(self, price: float) when price < self.limit:
            self.got.append(price)
    ''')
    a = ns["Watch"]()
    assert a.limit == 10.0
    _quotes(ns["Watch"], 5.0, 15.0)
    assert a.got == [5.0]


def test_an_event_class_that_is_an_abc():
    ns = load('''
    import abc

    class Base(abc.ABC):
        @abc.abstractmethod
        def kind(self): ...

    class Watch(Base):
        limit = 10.0

        def __init__(self):
            self.got = []

        def kind(self):
            return "watch"

        event def quote(self, price: float) when price < self.limit:
            self.got.append(price)

    class Explicit(metaclass=abc.ABCMeta):
        limit = 3.0

        def __init__(self):
            self.got = []

        event def quote(self, price: float) when price < self.limit:
            self.got.append(price)
    ''')
    Watch, Explicit = ns["Watch"], ns["Explicit"]
    assert isinstance(Watch, abc.ABCMeta) and isinstance(Explicit, abc.ABCMeta)
    with pytest.raises(TypeError, match="abstract"):
        ns["Base"]()
    a, e = Watch(), Explicit()
    Watch.limit = 20.0
    Explicit.limit = 4.0
    _quotes(Watch, 15.0)
    _quotes(Explicit, 3.5)
    assert a.got == [15.0] and e.got == [3.5]


def test_a_refused_class_store_is_reported_from_the_programs_line():
    ns = load(WATCH + '''
    def go():
        Watch("a")
        Watch.limit = "high"
    ''')
    with pytest.raises(TypeError) as info:
        ns["go"]()
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert last.filename == "prog.epy" and last.name == "go", traceback.format_tb(info.value.__traceback__)


def test_a_set_field_and_a_local_field_stored_on_the_class():
    ns = load('''
    class Desk:
        firms = {"IBM"}
        local cap: float = 10.0

        def __init__(self):
            self.got = []

        event def quote(self, firm: str, price: float) when firm in self.firms and price < self.cap:
            self.got.append((firm, price))

        def publish_cap(self):
            release self.cap
    ''')
    Desk = ns["Desk"]
    d, e = Desk(), Desk()
    Desk.firms = {"IBM", "SAP"}          # each object gets a set of its own, observed
    d.firms.discard("IBM")
    Desk.cap = 50.0                      # a local field: the objects' local copies, not yet released
    Desk.quote("SAP", 20.0)
    Desk.quote("IBM", 5.0)
    eventpy.drain(5.0)
    assert d.got == [] and e.got == [("IBM", 5.0)]
    assert (d.cap, e.cap) == (50.0, 50.0)
    d.publish_cap()
    e.publish_cap()
    Desk.quote("SAP", 20.0)
    eventpy.drain(5.0)
    assert d.got == [("SAP", 20.0)] and e.got == [("IBM", 5.0), ("SAP", 20.0)]
    assert Desk.firms == {"IBM", "SAP"}  # the class's own set, untouched by d's discard


def test_a_value_written_around_the_field_in_init_is_the_objects_own():
    ns = load(WATCH.replace('''            self.got = []
''', '''            self.got = []
            if name == "own":
                self.__dict__["limit"] = 99.0   # before the object subscribes: its own value
''', 1))
    Watch = ns["Watch"]
    own, other = Watch("own"), Watch("other")
    Watch.limit = 1.0
    eventpy.drain(5.0)
    assert (own.limit, other.limit) == (99.0, 1.0)
    _quotes(Watch, 50.0)
    assert own.got == [50.0] and other.got == []


def test_a_generic_event_class_keeps_the_plain_metaclass_and_follows_class_stores():
    from eventpy.runtime._lang_class import EventClass
    ns = load('''
    from typing import Generic, TypeVar
    T = TypeVar("T")

    class Box(Generic[T]):
        limit = 5.0

        def __init__(self, item: T):
            self.item = item
            self.got = []

        event def q(self, p: float) when p < self.limit:
            self.got.append(p)
    ''')
    Box = ns["Box"]
    assert type(Box) is EventClass     # no second metaclass made for a base whose metaclass is type
    b = Box[int](3)
    Box.limit = 10.0
    Box.q(7.0)
    eventpy.drain(5.0)
    assert b.got == [7.0]

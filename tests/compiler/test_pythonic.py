"""`.epy` programs written the way a Python programmer writes a class: what Python accepts and
means, EventPy accepts and means the same (DESIGN §1: "everything else is Python")."""

from __future__ import annotations

import pytest

import eventpy
from eventpy.runtime.lang import subscriptions_of

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


# A plain base class with an `__init_subclass__` of its own, as registries and plugin systems
# write it: taking no keywords, dropping them, or not calling super() at all (object's does
# nothing, so Python programs often leave it out).
@pytest.mark.parametrize("hook", [
    "def __init_subclass__(cls):\n            super().__init_subclass__()\n            Registry.seen.append(cls.__name__)",
    "def __init_subclass__(cls, **kw):\n            super().__init_subclass__()\n            Registry.seen.append(cls.__name__)",
    "def __init_subclass__(cls, **kw):\n            Registry.seen.append(cls.__name__)",
])
def test_a_base_with_its_own_init_subclass_hook_leaves_the_event_class_working(hook):
    # the first raised "Registry.__init_subclass__() got an unexpected keyword argument 'locals'"
    # (a keyword the program never wrote); the second made the `local` field a plain guard field,
    # so its stores reached the guard without a release; the third left Desk without event
    # methods: `Desk.quote("IBM", 1.0)` said "missing 1 required positional argument: 'price'"
    ns = load(f'''
    import functools

    def logged(f):
        @functools.wraps(f)
        def w(self, *a):
            self.log.append(f.__name__)
            return f(self, *a)
        return w

    class Registry:
        seen = []
        {hook}

    class Desk(Registry):
        local floor: float = 0.0

        def __init__(self, limit: float):
            self.limit = limit
            self.got = []
            self.log = []

        @logged
        event def quote(self, firm: str, price: float) when self.floor < price < self.limit:
            self.got.append(price)

        def open_floor(self):
            release self.floor
    ''')
    Desk = ns["Desk"]
    assert ns["Registry"].seen == ["Desk"]
    d = Desk(10.0)
    d.floor = 5.0                     # local: the guard still sees 0.0 until it is released
    for price in (1.0, 12.0):
        Desk.quote("IBM", price)
    eventpy.drain(5.0)
    assert d.got == [1.0] and d.log == ["quote"]
    d.open_floor()
    for price in (2.0, 6.0):
        Desk.quote("IBM", price)
    eventpy.drain(5.0)
    assert d.got == [1.0, 6.0]


def test_a_subclass_of_a_builtin_type_takes_its_class_defaults():
    # dict's __new__ comes before EventObject's in the MRO, so the object never took the class's
    # default: `Settings(a=1)` raised "the guard reads self.limit, which is not set when the
    # constructor returns ... or give the class a default" of a class that gives one
    ns = load('''
    class Settings(dict):
        limit = 3.0

        event def quote(self, price: float) when price < self.limit:
            self.setdefault("got", []).append(price)
    ''')
    Settings = ns["Settings"]
    s = Settings(a=1)
    assert s.limit == 3.0 and dict(s) == {"a": 1}
    Settings.quote(1.0)
    eventpy.drain(5.0)
    Settings.limit = 0.5              # a store on the class reaches the objects that follow it
    eventpy.drain(5.0)
    Settings.quote(1.0)
    eventpy.drain(5.0)
    assert s["got"] == [1.0]


def test_objects_that_define_eq_take_class_defaults_and_each_follows_a_store_on_the_class():
    # a class that defines __eq__ is unhashable (Python sets __hash__ to None): with a class
    # default for a guard field, making an object raised "TypeError: unhashable type" from
    # eventpy's _weakrefset; and two objects equal by __eq__ counted as one among those that
    # follow the class's default, so a store on the class updated only one of them
    ns = load('''
    class Desk:
        limit = 3.0

        def __init__(self, name: str):
            self.name = name
            self.got = []

        def __eq__(self, other):
            return isinstance(other, Desk) and other.name == self.name

        event def quote(self, price: float) when price < self.limit:
            self.got.append(price)

    class Keyed(Desk):
        def __hash__(self):
            return hash(self.name)
    ''')
    Desk, Keyed = ns["Desk"], ns["Keyed"]
    a, b = Desk("x"), Desk("x")
    c, d = Keyed("y"), Keyed("y")
    assert a == b and c == d and a is not b and {c: 1}[d] == 1
    Desk.limit = 10.0                 # every one of them follows it
    eventpy.drain(5.0)
    Desk.quote(5.0)
    eventpy.drain(5.0)
    assert [o.got for o in (a, b, c, d)] == [[5.0]] * 4


def test_an_abstract_event_method_makes_its_class_abstract_as_in_python():
    # the event method took the function's place in the class before ABCMeta counted the
    # abstract methods, so `Shape(1.0)` made (and subscribed) an object of an abstract class
    ns = load('''
    import abc

    class Shape(abc.ABC):
        def __init__(self, w: float):
            self.w = w
            self.hits = []

        @abc.abstractmethod
        event def hit(self, x: float) when x < self.w:
            ...

    class Square(Shape):
        event def hit(self, x: float) when x < self.w:
            self.hits.append(x)

    class Unfinished(Shape):
        pass
    ''')
    Shape, Square, Unfinished = ns["Shape"], ns["Square"], ns["Unfinished"]
    for abstract in (Shape, Unfinished):
        with pytest.raises(TypeError, match="abstract method hit"):
            abstract(1.0)
    assert Shape.__abstractmethods__ == {"hit"} and not Square.__abstractmethods__
    s = Square(2.0)
    Shape.hit(1.0)
    eventpy.drain(5.0)
    assert s.hits == [1.0]


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_setstate_restoring_dict_as_python_programs_write_it(how):
    # `self.__dict__.update(state)` in __setstate__ (beside a __getstate__ that leaves out a lock)
    # was a compile error, "this store into self.__dict__ may store a field a guard reads": the
    # object pickle and copy restore is a copy, which never subscribes, so it is as __init__ is
    import copy
    import pickle
    import sys
    import threading

    ns = load('''
    import threading

    class Desk:
        local floor: float = 0.0

        def __init__(self, limit: float):
            self.limit = limit
            self.lock = threading.Lock()
            self.got = []

        def __getstate__(self):
            state = self.__dict__.copy()
            del state["lock"]
            return state

        def __setstate__(self, state):
            self.__dict__.update(state)
            self.lock = threading.Lock()

        event def quote(self, price: float) when self.floor < price < self.limit:
            self.got.append(price)

        def open_floor(self, v):
            self.floor = v
            release self.floor
    ''', name="restored_prog")
    sys.modules["restored_prog"] = type(sys)("restored_prog")  # pickle finds the class by its module
    sys.modules["restored_prog"].__dict__.update(ns)
    try:
        a = ns["Desk"](5.0)
        a.open_floor(2.0)
        b = copy.deepcopy(a) if how == "deepcopy" else pickle.loads(pickle.dumps(a))
        assert (b.limit, b.floor, isinstance(b.lock, type(threading.Lock()))) == (5.0, 2.0, True)
        b.limit = 100.0                  # the copy's store moves no subscription
        assert subscriptions_of(b) == [] and len(subscriptions_of(a)) == 1
        for price in (1.0, 3.0, 50.0):
            ns["Desk"].quote(price)
        eventpy.drain(5.0)
        assert a.got == [3.0] and b.got == []
    finally:
        del sys.modules["restored_prog"]


def test_a_diamond_runs_the_event_method_pythons_method_resolution_finds():
    # D(B, C) with C overriding A's event method and B inheriting it: Python finds C's (B does not
    # define it), but each class kept its inherited event methods in its own __dict__, so D took
    # B's copy of A's, with A's guard and body
    ns = load('''
    class A:
        def __init__(self, lim: float):
            self.lim = lim
            self.got = []

        event def hit(self, x: float) when x < self.lim:
            self.got.append(("A", x))

    class B(A):
        pass

    class C(A):
        event def hit(self, x: float) when x < self.lim * 2:
            self.got.append(("C", x))
            super().hit(x)

    class D(B, C):
        pass

    class E(B, C):
        event def hit(self, x: float) when x < self.lim * 3:
            self.got.append(("E", x))
            super().hit(x)            # after E comes B, which does not define hit: C's runs
    ''')
    D, E = ns["D"], ns["E"]
    assert D.__mro__[1:4] == (ns["B"], ns["C"], ns["A"])
    d, e = D(5.0), E(5.0)
    ns["A"].hit(7.0)                  # C's guard (7 < 10), C's body, then A's through super()
    eventpy.drain(5.0)
    assert d.got == [("C", 7.0), ("A", 7.0)]
    assert e.got == [("E", 7.0), ("C", 7.0), ("A", 7.0)]


def test_type_hints_of_an_event_class_are_the_programs():
    # typing.get_type_hints(Desk.__init__) raised NameError: name 'Any' is not defined (the
    # subscribing wrapper's own annotations, read in the program's module), as did the hints of
    # Desk.quote; those of the class listed EventObject's bookkeeping (__eventpy_events__, ...)
    import typing

    ns = load('''
    class Desk:
        limit: float

        def __init__(self, limit: float, name: str = "d") -> None:
            self.limit = limit

        event def quote(self, firm: str, price: float) when price < self.limit:
            pass
    ''')
    Desk = ns["Desk"]
    assert typing.get_type_hints(Desk) == {"limit": float}
    assert typing.get_type_hints(Desk.__init__) == {"limit": float, "name": str, "return": type(None)}
    assert typing.get_type_hints(Desk.quote) == {"firm": str, "price": float}
    assert Desk.__init__.__qualname__ == "Desk.__init__" and Desk.quote.__qualname__ == "Desk.quote"


def test_an_event_method_annotated_to_return_none_is_taken_as_written():
    # `-> None` on every method is how typed Python reads; it said "an event method returns
    # nothing: remove the return annotation" of the one annotation that says just that
    from eventpy.compiler import CompileError, compile_source

    ns = load('''
    class Desk:
        def __init__(self, limit: float) -> None:
            self.limit = limit
            self.got = []

        event def quote(self, price: float) -> None when price < self.limit:
            self.got.append(price)

        event def tick(self, n: int) -> None:
            self.got.append(n)
    ''')
    d = ns["Desk"](10.0)
    ns["Desk"].quote(5.0)
    ns["Desk"].quote(50.0)
    ns["Desk"].tick(7)
    eventpy.drain(5.0)
    assert sorted(d.got) == [5.0, 7]
    with pytest.raises(CompileError, match="an event method returns nothing"):
        compile_source("class A:\n    event def e(self, x: int) -> int when x > 1:\n        pass\n", "a.epy")


def test_patching_a_class_default_in_a_test_is_undone_when_the_patch_ends(monkeypatch):
    # unittest.mock.patch.object and pytest's monkeypatch save Class.__dict__["limit"] (the
    # field's descriptor) and put it back: the class kept the patched default for good, and so
    # did the subscriptions of the objects that follow it
    from unittest import mock

    ns = load('''
    class Desk:
        limit = 3.0

        def __init__(self):
            self.got = []

        event def quote(self, price: float) when price < self.limit:
            self.got.append(price)
    ''')
    Desk = ns["Desk"]
    d = Desk()
    with mock.patch.object(Desk, "limit", 99.0):
        assert (Desk.limit, d.limit) == (99.0, 99.0)
    assert (Desk.limit, d.limit) == (3.0, 3.0)
    monkeypatch.setattr(Desk, "limit", 50.0)
    assert d.limit == 50.0
    monkeypatch.undo()
    assert (Desk.limit, d.limit) == (3.0, 3.0)
    Desk.quote(2.0)
    Desk.quote(20.0)                  # the patched defaults would have admitted it
    eventpy.drain(5.0)
    assert d.got == [2.0]
    Desk.limit = 30.0                 # the object still follows its class
    eventpy.drain(5.0)
    Desk.quote(20.0)
    eventpy.drain(5.0)
    assert d.got == [2.0, 20.0]


def test_patching_a_subclass_default_is_undone_back_to_the_base_default():
    from unittest import mock

    ns = load('''
    class Desk:
        limit = 3.0

        event def quote(self, price: float) when price < self.limit:
            pass

    class Small(Desk):
        pass
    ''')
    Desk, Small = ns["Desk"], ns["Small"]
    s = Small()
    with mock.patch.object(Small, "limit", 99.0):
        assert (Small.limit, s.limit, Desk.limit) == (99.0, 99.0, 3.0)
    assert (Small.limit, s.limit) == (3.0, 3.0)
    Desk.limit = 4.0                  # Small has no default of its own again: it follows Desk's
    assert (Small.limit, s.limit) == (4.0, 4.0)


def test_super_through_an_inherited_private_event_method_reaches_the_override():
    # the same as the diamond above, for a private (name-mangled) event method called from the
    # class that declares it
    ns = load('''
    class A:
        def __init__(self):
            self.got = []

        event def __hit(self, x: float) when x > 0:
            self.got.append(("A", x))

        def fire(self, x):
            A.__hit(x)

    class B(A):
        pass

    class C(A):
        event def _A__hit(self, x: float) when x > 0:
            self.got.append(("C", x))

    class E(B, C):
        event def _A__hit(self, x: float) when x > 0:
            self.got.append(("E", x))
            super()._A__hit(x)
    ''')
    e = ns["E"]()
    e.fire(1.0)
    eventpy.drain(5.0)
    assert e.got == [("E", 1.0), ("C", 1.0)]


def test_a_validating_descriptor_by_the_name_of_a_guard_field_is_refused_not_dropped():
    # `limit = Positive()` (a data descriptor, as validation libraries write them) was silently
    # replaced by the guard field: `d.limit = -1.0` went through unchecked. A guard reads what the
    # object stores, so it is refused from the class line as a property is; a slot is still fine
    ns = load('''
    class Positive:
        def __set_name__(self, owner, name):
            self.name = "_" + name

        def __get__(self, obj, owner=None):
            return self if obj is None else getattr(obj, self.name)

        def __set__(self, obj, v):
            if v <= 0:
                raise ValueError("must be positive")
            setattr(obj, self.name, v)

    class Slotted:
        __slots__ = ("limit",)

        def __init__(self, limit: float):
            self.limit = limit

        event def quote(self, price: float) when price < self.limit:
            pass
    ''')
    assert ns["Slotted"](3.0).limit == 3.0
    with pytest.raises(TypeError, match=r"self.limit, read by a guard, is a descriptor \(Positive\) of Desk"):
        load('''
        class Desk:
            limit = Positive()

            def __init__(self, limit: float):
                self.limit = limit

            event def quote(self, price: float) when price < self.limit:
                pass
        ''', name="desk_descriptor", names={"Positive": ns["Positive"]})

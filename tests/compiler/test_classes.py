"""Compiled programs with classes: subclasses and their events, overrides and super(), mixins,
factories, close() of one's own."""

from __future__ import annotations

import copy
import pickle
import sys
import textwrap

import pytest

import eventpy
from eventpy.compiler import CompileError, compile_source
from eventpy.runtime._lang_fields import subscriptions_of

from _programs import MONITOR, load  # tests/compiler/_programs.py

pytestmark = pytest.mark.usefixtures("fresh_overlay")  # tests/conftest.py


def test_subclasses_receive_events_and_close_unsubscribes():
    ns = load(MONITOR + '''
    class Loud(Monitor):
        pass
    ''')
    a, b = ns["Monitor"](50.0), ns["Loud"](50.0)
    ns["Monitor"].quote("IBM", 20.0)
    eventpy.drain(5.0)
    assert a.got == [20.0] and b.got == [20.0]
    with b:
        pass                            # leaving the context closes the object
    eventpy.drain(5.0)
    ns["Monitor"].quote("IBM", 10.0)
    eventpy.drain(5.0)
    assert a.got == [20.0, 10.0] and b.got == [20.0]


def test_a_close_of_its_own_unsubscribes_without_calling_super():
    ns = load(MONITOR + '''
    class Logged(Monitor):
        def close(self):
            self.log = "closed"            # no super().close()
            return 7

    class Chained(Monitor):
        def close(self):
            super().close()
            self.log = "chained"
    ''')
    a, b, c = ns["Monitor"](50.0), ns["Logged"](50.0), ns["Chained"](50.0)
    eventpy.drain(5.0)
    owed = len(subscriptions_of(b) + subscriptions_of(c))  # one per class level with the event method
    assert b.close() == 7 and b.log == "closed" and ns["Logged"].close.__name__ == "close"
    c.close()
    c.close()                           # twice, and through super(): still one UNSUB per subscription
    eventpy.drain(5.0)
    unsubs = eventpy.stats()["unsub_sent"]
    ns["Monitor"].quote("IBM", 10.0)
    eventpy.drain(5.0)
    assert a.got == [10.0] and b.got == [] and c.got == [] and c.log == "chained"
    assert unsubs == owed and not subscriptions_of(b)


def test_a_close_inherited_from_a_plain_mixin_unsubscribes():
    ns = load(MONITOR + '''
    class Closer:                       # not an event class: its close knows nothing of EventPy
        def close(self):
            self.log = "mixin"

    class Mixed(Closer, Monitor):
        pass

    class Direct(Closer):               # compiled as class Direct(Closer, EventObject)
        def __init__(self):
            self.got = []

        event def quote(self, firm: str, price: float) when price < 50.0:
            self.got.append(price)
    ''')
    b, c = ns["Mixed"](50.0), ns["Direct"]()
    eventpy.drain(5.0)
    owed = len(subscriptions_of(b) + subscriptions_of(c))
    b.close()
    with c:
        pass
    eventpy.drain(5.0)
    ns["Monitor"].quote("IBM", 10.0)
    ns["Direct"].quote("IBM", 10.0)
    eventpy.drain(5.0)
    assert b.got == [] and c.got == [] and b.log == c.log == "mixin"
    assert eventpy.stats()["unsub_sent"] == owed and not subscriptions_of(b) + subscriptions_of(c)
    assert ns["Closer"].close.__name__ == "close" and not hasattr(ns["Closer"].close, "__eventpy_closing__")


def test_a_chain_of_closes_unsubscribes_once_after_the_outermost_returns():
    ns = load(MONITOR + '''
    from eventpy.runtime._lang_fields import subscriptions_of

    class Closer:
        def close(self):
            super().close()             # EventObject.close, inside Inner's close
            self.order.append("mixin")

    class Inner(Closer, Monitor):
        def close(self):
            self.order = []
            super().close()
            self.order.append("inner")

    class Outer(Inner):
        def close(self):
            super().close()
            self.order.append("outer")
            self.live = [not s.closed for s in subscriptions_of(self)]
    ''')
    o = ns["Outer"](50.0)
    eventpy.drain(5.0)
    owed = len(subscriptions_of(o))
    o.close()
    assert o.order == ["mixin", "inner", "outer"] and o.live == [True] * owed  # still subscribed in there
    assert not subscriptions_of(o)
    eventpy.drain(5.0)
    assert eventpy.stats()["unsub_sent"] == owed
    ns["Monitor"].quote("IBM", 10.0)
    eventpy.drain(5.0)
    assert o.got == []


HIERARCHY = '''
    class Base:
        def __init__(self, limit: float):
            self.limit = limit
            self.got = []

        event def q(self, px: float) when px < self.limit:
            self.got.append(("base", px))

    class Plain(Base):
        pass

    class Child(Base):
        def __init__(self, limit: float, floor: float):
            super().__init__(limit)
            self.floor = floor

        event def q(self, px: float) when self.floor < px < self.limit:
            self.got.append(("child", px))

    class Extra(Base):
        def __init__(self, limit: float, k: int):
            super().__init__(limit)
            self.k = k

        event def r(self, n: int) when n == self.k:
            self.got.append(("r", n))
'''


def test_an_event_reaches_the_instances_of_its_class_and_subclasses_only():
    # DESIGN §1: `Class.m(...)` reaches every live instance of Class and its subclasses
    ns = load(HIERARCHY)
    b, p, c, e = ns["Base"](10.0), ns["Plain"](10.0), ns["Child"](10.0, 5.0), ns["Extra"](10.0, 3)
    ns["Plain"].q(1.0)
    eventpy.drain(5.0)
    assert (b.got, p.got, c.got, e.got) == ([], [("base", 1.0)], [], [])
    for px in (2.0, 6.0):
        ns["Base"].q(px)  # an overriding subclass gets its own body and guard, once per event
    ns["Child"].q(7.0)
    ns["Extra"].r(3)
    eventpy.drain(5.0)
    assert b.got == [("base", 2.0), ("base", 6.0)]
    assert p.got == [("base", 1.0), ("base", 2.0), ("base", 6.0)]
    assert c.got == [("child", 6.0), ("child", 7.0)]
    assert e.got == [("base", 2.0), ("base", 6.0), ("r", 3)]
    e.limit = 0.0  # an update reaches each type the instance listens to
    eventpy.drain(5.0)
    ns["Extra"].q(-1.0)
    ns["Base"].q(1.0)
    eventpy.drain(5.0)
    assert e.got[3:] == [("base", -1.0)]


def test_super_in_an_overriding_event_method_runs_the_base_body_once():
    ns = load('''
        class Base:
            def __init__(self):
                self.limit = 10.0
                self.seen = []

            event def quote(self, price: float) when price < self.limit:
                self.seen.append(("base body", price))

        class Mid(Base):
            event def quote(self, price: float) when price < self.limit:
                self.seen.append(("mid", price))
                super().quote(price)
    ''')
    b, m = ns["Base"](), ns["Mid"]()
    ns["Mid"].quote(1.0)
    eventpy.drain(5.0)
    eventpy.drain(5.0)  # before, super().quote published again, reached m through Base's type, for ever
    assert m.seen == [("mid", 1.0), ("base body", 1.0)] and b.seen == []
    assert eventpy.stats()["published"] == 1


def test_the_base_class_call_spelling_of_super_says_to_use_super():
    ns = load('''
        class Base:
            def __init__(self):
                self.limit = 10.0

            event def quote(self, price: float) when price < self.limit:
                pass

        class Mid(Base):
            event def quote(self, price: float) when price < self.limit:
                Base.quote(self, price)
    ''')
    m = ns["Mid"]()
    # what the override's body would meet (it was "too many positional arguments")
    with pytest.raises(TypeError, match=r"Base.quote\(...\) publishes an event and takes no object; .* "
                                        r"call super\(\).quote\(...\)"):
        ns["Base"].quote(m, 1.0)
    m.close()


def test_a_plain_method_of_a_mixin_that_hides_an_event_method_is_named():
    with pytest.raises(TypeError, match=r"B.quote is a plain method of Mixin, which hides the event method "
                                        r"Base.quote \(method resolution order: B, Mixin, Base\); put Base before"):
        load('''
            class Base:
                def __init__(self):
                    self.limit = 1.0

                event def quote(self, price: float) when price < self.limit:
                    pass

            class Mixin:
                def quote(self, price):
                    pass

            class B(Mixin, Base):
                pass
        ''')


def test_classes_made_by_one_factory_do_not_share_events():
    ns = load('''
    def make(kind):
        class Sensor:
            def __init__(self, th: float):
                self.th = th
                self.got = []

            event def reading(self, v: float) when v > self.th:
                self.got.append((kind, v))
        return Sensor

    Temp, Hum = make("temp"), make("hum")
    ''')
    t, h = ns["Temp"](10.0), ns["Hum"](10.0)
    ns["Temp"].reading(50.0)
    eventpy.drain(5.0)
    assert t.got == [("temp", 50.0)] and h.got == []


@pytest.mark.parametrize("child, message", [
    ("event def q(self, px: int) when px < 1:\n            pass", "an override must keep the parameters"),
    ("def q(self, px):\n            pass", "with a plain method"),
])
def test_an_override_that_could_not_take_the_base_events_is_refused(child, message):
    # the base from another module, which the compiler of this one cannot see (in the same file,
    # it is a diagnostic: test_diagnostics.py)
    base = load(MONITOR.replace("quote", "q").replace("firm: str, price: float", "px: float")
                .replace('firm == "IBM" and price < self.limit', "px < self.limit")
                .replace("self.got.append(price)", "pass").replace("self.limit = price", "pass"))["Monitor"]
    with pytest.raises(TypeError, match=message):
        load(f'''
    class Sub(Monitor):
        {child}
    ''', "sub", {"Monitor": base})


def test_a_class_level_default_reads_as_python_would_on_the_class():
    ns = load('''
    class A:
        limit: float = 5.0

        event def q(self, px: float) when px < self.limit:
            pass

    class B(A):
        limit = 7.0
    ''')
    assert (ns["A"].limit, ns["B"].limit, ns["A"]().limit, ns["B"]().limit) == (5.0, 7.0, 5.0, 7.0)



def test_a_plain_class_nested_in_an_event_class_has_fields_of_its_own():
    # its `self` is another object: a store of its `limit` is Python's, not the guard field's
    # (it was wrapped in the outer class's `assigning`, which needs an __dict__)
    ns = load('''
    class A:
        def __init__(self, limit: float):
            self.limit = limit

        event def q(self, px: float) when px < self.limit:
            pass

        class Slotted:
            __slots__ = ("limit",)

            def __init__(self):
                self.limit = 3

        class Plain:
            def __init__(self):
                self.limit = "any"

        def make(self, v):
            class Inner:
                __slots__ = ("limit",)

                def __init__(self):
                    self.limit = v
            return Inner()

        def store(self, other):
            def into(obj):
                obj.limit = other
            return into
    ''')
    A = ns["A"]
    a = A(1.0)
    assert A.Slotted().limit == 3 and vars(A.Plain()) == {"limit": "any"} and a.make(7).limit == 7
    slotted = A.Slotted()
    a.store(9)(slotted)
    assert slotted.limit == 9


@pytest.mark.parametrize("tail", [
    "class Sub(Monitor):\n    def quote(self, firm, price):\n        pass\n",
    "class Sub(Monitor):\n    event def quote(self, firm: str) when firm == 'x':\n        pass\n",
    "class Mixin:\n    def quote(self, firm, price):\n        pass\nclass Sub(Mixin, Monitor):\n    pass\n",
])
def test_a_class_eventpy_refuses_is_raised_from_the_class_statement(tail):
    # the mistake is the program's: its traceback ends on the `class` line of the .epy file, not
    # inside eventpy's runtime (which reads like a crash of eventpy)
    import traceback

    # the base from another module, which the compiler of this one cannot see (in the same file,
    # the first two are diagnostics: test_diagnostics.py)
    base = load(MONITOR)["Monitor"]
    with pytest.raises(TypeError) as info:
        load(tail, "sub", {"Monitor": base})
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    line = next(i for i, ln in enumerate(tail.splitlines(), 1) if ln.startswith("class Sub"))
    assert (last.filename, last.lineno) == ("sub.epy", line)
@pytest.mark.parametrize("base, sub", [
    # a base the compiler cannot see (another module's) computes the field the guard reads
    ("class Base:\n    @property\n    def limit(self):\n        return 5.0", ""),
    ("class Base:\n    limit = property(lambda self: 5.0)", ""),
    # a subclass hides the base's guard field with a property
    ("class Base:\n    pass", "class Sub(A):\n    @property\n    def limit(self):\n        return 1.0"),
])
def test_a_property_by_the_name_of_a_guard_field_is_refused_when_the_class_is_made(base, sub):
    # the field the runtime put in its place hid the property: its setter never ran, and an
    # object whose __init__ stored only what the property reads could not be made
    ns: dict = {"__name__": "prog"}
    exec(base, ns)                       # plain Python: eventpyc does not see it
    text = "class A(Base):\n    event def q(self, px: float) when px < self.limit:\n        pass\n" + sub
    code = compile(compile_source(text, "prog.epy", "prog"), "prog.epy", "exec", dont_inherit=True)
    with pytest.raises(TypeError, match=r"self\.limit, read by a guard, is a property of (Base|Sub)"):
        exec(code, ns)


def test_a_property_the_guard_reads_is_a_compile_error_at_the_read():
    text = textwrap.dedent("""
        class A:
            def __init__(self):
                self._limit = 1.0

            @property
            def limit(self):
                return self._limit

            event def q(self, px: float) when px < self.limit:
                pass
    """)
    with pytest.raises(CompileError) as info:
        compile_source(text, "prog.epy", "prog")
    e = info.value
    assert (e.line, e.column) == (10, text.splitlines()[9].index("self.limit") + 1), e.render()
    assert "reads self.limit, a property of A" in e.message and "read the field the property stores" in e.message


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle", "dict"])
def test_a_copy_has_the_fields_not_the_subscriptions(how):
    # a shallow copy shared the original's state: its stores moved the original's subscription
    # (the original got events its own guard refused); a deep copy or a pickle raised on the locks
    ns = load('''
    class Probe:
        local level: float = 1.0

        def __init__(self, limit: float):
            self.limit = limit
            self.got = []

        event def q(self, px: float) when px < self.limit and px > self.level:
            self.got.append(px)

        def rise(self, v):
            self.level = v
            release self.level

        def seen(self):
            return last self.level
    ''', name="copied_prog")
    sys.modules["copied_prog"] = type(sys)("copied_prog")  # pickle finds the class by its module
    sys.modules["copied_prog"].__dict__.update(ns)
    try:
        a = ns["Probe"](5.0)
        a.rise(2.0)
        if how == "dict":
            b = ns["Probe"].__new__(ns["Probe"])
            b.__dict__.update(a.__dict__)
        else:
            b = {"copy": copy.copy, "deepcopy": copy.deepcopy,
                 "pickle": lambda o: pickle.loads(pickle.dumps(o))}[how](a)
        b.limit = 100.0
        b.rise(0.0)
        assert (b.seen(), a.seen(), subscriptions_of(b)) == (0.0, 2.0, [])
        eventpy.drain(5.0)
        ns["Probe"].q(50.0)                     # neither a's guard (limit 5) nor b's subscription
        ns["Probe"].q(1.0)                      # a's released level is 2.0
        ns["Probe"].q(3.0)
        eventpy.drain(5.0)
        assert a.got == [3.0] and (b.got is a.got or b.got == [])
        assert len(subscriptions_of(a)) == 1
    finally:
        del sys.modules["copied_prog"]


def test_init_run_again_on_a_subscribed_object_does_not_subscribe_it_twice():
    # a reset through self.__init__() and a singleton's __new__ ran the subscribing constructor
    # on a live object: a second set of subscriptions, and every event delivered twice
    ns = load('''
    class Player:
        def __init__(self, hp: int = 3):
            self.hp = hp
            self.got = []

        def reset(self, hp):
            self.__init__(hp)

        event def hit(self, dmg: int) when self.hp > dmg:
            self.got.append(dmg)

    class Single(Player):
        _made = None

        def __new__(cls, *args):
            if cls._made is None:
                cls._made = super().__new__(cls)
            return cls._made
    ''')
    p, s = ns["Player"](), ns["Single"](1)
    p.reset(10)
    assert ns["Single"](10) is s
    eventpy.drain(5.0)
    ns["Player"].hit(5)
    eventpy.drain(5.0)
    assert p.got == [5] and s.got == [5]
    assert len(subscriptions_of(p)) == 1 and len(subscriptions_of(s)) == 2  # Single's type and Player's
    p.close()
    p.reset(10)                                  # closed, then made again: subscribed again
    ns["Player"].hit(6)
    eventpy.drain(5.0)
    assert p.got == [6] and len(subscriptions_of(p)) == 1


def test_the_event_methods_of_one_object_run_one_at_a_time_in_arrival_order():
    # DESIGN §1 and docs/concurrency.md: one serial queue per object, over all its subscriptions
    # (one per event method and per class with the method), not one per subscription
    ns = load('''
    import threading
    import time

    class Desk:
        def __init__(self):
            self.limit = 100.0
            self.inside = 0
            self.overlaps = 0
            self.order = []

        def _run(self, tag):
            self.inside += 1
            self.overlaps += self.inside > 1
            time.sleep(0.001)  # widens the window an overlap would need; cannot make the test pass
            self.order.append(tag)
            self.inside -= 1

        event def quote(self, firm: str, price: float) when price < self.limit:
            self._run(("quote", price))

        event def retune(self, firm: str, low: float):
            self._run(("retune", low))

    class Branch(Desk):
        pass
    ''')
    Desk, Branch = ns["Desk"], ns["Branch"]
    b = Branch()
    expected = []
    for i in range(60):
        cls = Desk if i % 2 else Branch  # the base's types and the subclass's: two subscriptions each
        cls.quote("IBM", float(i))
        cls.retune("IBM", float(i))
        expected += [("quote", float(i)), ("retune", float(i))]
    eventpy.drain(30.0)
    assert b.overlaps == 0
    assert b.order == expected

"""Private fields (`self.__x`, `local __x`) in compiled classes behave as in plain Python: the name
is mangled to `_Class__x` by the class whose body the code is in, so a subclass's `__x` is another
field. A guard that reads one subscribes to it, and every store of it sends the update."""

from __future__ import annotations

import pytest

import eventpy
from eventpy.compiler import CompileError, compile_source
from eventpy.runtime import lang

from _programs import load  # tests/compiler/_programs.py

pytestmark = pytest.mark.usefixtures("fresh_overlay")  # tests/conftest.py

PRIVATE = '''
class Monitor:
    def __init__(self, limit: float):
        self.__limit = limit
        self.got = []

    event def quote(self, firm: str, price: float) when price < self.__limit:
        self.got.append(price)
        self.__limit = price            # a decreasing threshold, as a private field

    def set_limit(self, limit: float):
        self.__limit = limit

    def limit(self):
        return self.__limit
'''


def quotes(cls, *prices: float) -> None:
    for p in prices:
        cls.quote("IBM", p)
        eventpy.drain(5.0)


def test_a_guard_reads_a_private_field_under_its_mangled_name():
    ns = load(PRIVATE)
    m = ns["Monitor"](50.0)
    assert "_Monitor__limit" in vars(m) and "__limit" not in vars(m)   # as plain Python stores it
    quotes(ns["Monitor"], 60.0, 40.0, 45.0, 30.0)
    assert m.got == [40.0, 30.0] and m.limit() == 30.0


def test_a_store_of_a_private_guard_field_sends_the_update():
    ns = load(PRIVATE)
    m = ns["Monitor"](50.0)
    eventpy.drain(5.0)
    sent = eventpy.stats()["upd_sent"]
    m.set_limit(100.0)                  # outside the event method: the subscription follows it
    eventpy.drain(5.0)
    assert eventpy.stats()["upd_sent"] == sent + 1
    quotes(ns["Monitor"], 90.0)
    assert m.got == [90.0]
    m._Monitor__limit = 10.0            # from outside the class, spelled as Python mangles it
    quotes(ns["Monitor"], 20.0)
    assert m.got == [90.0] and m.limit() == 10.0


def test_a_subclass_private_field_is_another_field():
    ns = load(PRIVATE + '''
class Picky(Monitor):
    def __init__(self, limit: float, floor: float):
        super().__init__(limit)
        self.__limit = floor            # Picky's own: _Picky__limit, not Monitor's
        self.low = []

    event def bid(self, price: float) when price > self.__limit:
        self.low.append(price)

    def set_floor(self, floor: float):
        self.__limit = floor
''')
    p = ns["Picky"](50.0, 5.0)
    assert (p._Monitor__limit, p._Picky__limit) == (50.0, 5.0)
    quotes(ns["Monitor"], 40.0)         # Monitor's guard reads Monitor's __limit
    ns["Picky"].bid(7.0)
    eventpy.drain(5.0)
    assert p.got == [40.0] and p.low == [7.0] and p.limit() == 40.0
    p.set_floor(8.0)                    # an update of Picky's field only
    ns["Picky"].bid(7.0)
    quotes(ns["Monitor"], 39.0)
    assert p.low == [7.0] and p.got == [40.0, 39.0] and p._Picky__limit == 8.0


LOCAL = '''
class Probe:
    local __level: float = 0.0

    def __init__(self):
        self.got = []

    event def ping(self, v: float) when v < self.__level:
        self.got.append(v)

    def set(self, level: float):
        self.__level = level            # the local copy only

    def publish(self):
        release self.__level

    def released(self):
        return last self.__level, f"{last self.__level}"
'''


def test_a_private_local_field_is_released_and_read_back_mangled():
    ns = load(LOCAL)
    p = ns["Probe"]()
    assert lang.last(p, "_Probe__level") == 0.0
    p.set(10.0)
    ns["Probe"].ping(5.0)
    eventpy.drain(5.0)
    assert p.got == [] and p.released() == (0.0, "0.0")    # not released yet
    p.publish()
    ns["Probe"].ping(5.0)
    eventpy.drain(5.0)
    assert p.got == [5.0] and p.released() == (10.0, "10.0")


def test_a_base_private_local_field_is_not_the_subclass_one():
    # in Sub's body `self.__level` is `_Sub__level`, which Sub does not declare: said at compile
    # time, as for any field not declared `local`
    text = LOCAL + '''
class Loud(Probe):
    def shout(self):
        release self.__level
'''
    with pytest.raises(CompileError) as info:
        compile_source(text, "p.epy")
    e = info.value
    line = len(text.split("\n")) - 1         # the last line
    assert (e.line, e.column) == (line, 9), e.render()
    assert "__level is not declared `local` in class Loud" in e.message
    assert "a private name: Probe's __level is another field" in e.message


def test_release_names_the_field_by_the_innermost_class_around_it():
    text = '''
class Outer:
    local __a: int = 0
    class Inner:
        local __a: int = 0
        def f(self):
            release self.__a
    class Tag: pass
    def g(self):
        release self.__a
        return last self.__a
'''
    out = compile_source(text, "o.epy", "o")
    assert '__eventpy__.release(self, "_Inner__a")' in out
    assert out.count('__eventpy__.release(self, "_Outer__a")') == 1 and '__eventpy__.last(self, "_Outer__a")' in out
    assert "locals=('_Outer__a',)" in out and "locals=('_Inner__a',)" in out
    ns = load(text)
    o, i = ns["Outer"](), ns["Outer"].Inner()
    o._Outer__a, i._Inner__a = 3, 4
    assert o.g() == 3
    i.f()
    assert lang.last(i, "_Inner__a") == 4

"""`release self.a, self.b` (000 §9.2, Fig. 33) is one instrumented store of both fields: their
FIFO locks are held together, and the subscription — at the broker and in the local filter —
goes from both old released values to both new ones, never through a state with one of each."""

from __future__ import annotations

import collections
import threading

import pytest

import eventpy
from eventpy.compiler import compile_source
from eventpy.runtime import _lang_fields, lang
from eventpy.runtime.client import ClientCore

from _programs import load  # tests/compiler/_programs.py

pytestmark = pytest.mark.usefixtures("fresh_overlay")  # tests/conftest.py

BOX = '''
class Box:
    local x: float = 0.0
    local y: float = 0.0

    def __init__(self):
        self.got = []

    event def hit(self, px: float) when px < self.x + self.y:
        self.got.append(px)

    def move(self, x: float, y: float):
        self.x, self.y = x, y
        self.commit()

    def commit(self):
        release self.x, self.y
'''


def test_several_fields_are_lowered_to_one_release():
    out = compile_source(BOX, "box.epy", "box")
    assert '__eventpy__.release(self, "x", "y")' in out
    assert len(out.splitlines()) == len(BOX.splitlines())


def test_a_release_over_a_continuation_line_keeps_its_lines():
    text = BOX.replace("release self.x, self.y", "release self.x, \\\n            self.y")
    out = compile_source(text, "box.epy", "box")
    assert len(out.splitlines()) == len(text.splitlines())
    ns: dict = {"__name__": "box"}
    exec(compile(out, "box.epy", "exec", dont_inherit=True), ns)
    b = ns["Box"]()
    b.move(1.0, 2.0)
    assert (lang.last(b, "x"), lang.last(b, "y")) == (1.0, 2.0)


def test_the_broker_never_sees_one_field_released_without_the_other(monkeypatch):
    # the guard's generated variable x + y: released one at a time it went out as 5.0 (x new,
    # y old) before 10.0, and a broker matched events against a subscription nobody wrote
    sent: list[list] = []
    push = ClientCore._push

    def spy(self, state, changed):
        sent.append([value.hi for _, value in changed])  # px < x + y: the interval (-inf, x + y)
        return push(self, state, changed)

    monkeypatch.setattr(ClientCore, "_push", spy)
    ns = load(BOX)
    b = ns["Box"]()
    b.move(5.0, 5.0)
    assert sent == [[10.0]]
    eventpy.drain(5.0)
    ns["Box"].hit(7.0)
    eventpy.drain(5.0)
    assert b.got == [7.0]


def test_a_concurrent_observer_sees_both_fields_released_or_neither():
    ns = load(BOX)
    b = ns["Box"]()
    sub = lang.subscriptions_of(b)[0]
    y_lock = _lang_fields._state(b).lock("y")
    holding, done = threading.Event(), threading.Event()

    def hold_y():  # another thread's instrumented store of y, in progress
        with y_lock:
            holding.set()
            done.wait(10)

    b.x, b.y = 5.0, 5.0  # the local copies (a store takes the field's lock too: before the holder)
    holder = threading.Thread(target=hold_y)
    holder.start()
    holding.wait(10)
    queued = threading.Event()

    class Queue(collections.deque):  # y's FIFO queue: says when the release waits there
        def append(self, ident):
            super().append(ident)
            queued.set()

    y_lock._queue = Queue()
    mover = threading.Thread(target=b.commit)
    mover.start()
    assert queued.wait(10)  # the release waits for y's lock...
    assert _lang_fields._state(b).lock("x")._owner == mover.ident  # ...holding x's
    assert dict(sub.params) == {"x": 0.0, "y": 0.0} and lang.last(b, "x") == 0.0  # and released nothing
    done.set()
    holder.join(10)
    mover.join(10)
    assert dict(sub.params) == {"x": 5.0, "y": 5.0}


def test_a_refused_field_releases_neither():
    ns = load(BOX.replace("local y: float = 0.0", "local y: float = 0.0\n    local tag: str = 'a'")
              .replace("px < self.x + self.y", "px < self.x + self.y and self.tag != 'z'")
              .replace("release self.x, self.y", "self.tag = 3\n        release self.x, self.tag"))
    b = ns["Box"]()
    with pytest.raises(TypeError, match="release self.x, self.tag"):
        b.move(5.0, 5.0)
    assert (lang.last(b, "x"), lang.last(b, "tag")) == (0.0, "a")
    assert dict(lang.subscriptions_of(b)[0].params) == {"x": 0.0, "y": 0.0, "tag": "a"}


def test_a_statement_storing_two_guard_fields_sends_them_in_one_update(monkeypatch):
    sent: list[list] = []
    push = ClientCore._push
    monkeypatch.setattr(ClientCore, "_push", lambda self, state, changed: (
        sent.append([value.hi for _, value in changed]), push(self, state, changed))[1])
    ns = load(BOX.replace("local x: float = 0.0\n    local y: float = 0.0\n", "")
              .replace("self.got = []", "self.got = []\n        self.x, self.y = 0.0, 0.0")
              .replace("release self.x, self.y", "pass"))
    b = ns["Box"]()
    b.move(5.0, 5.0)  # `with assigning(self, "x", "y"): self.x, self.y = x, y`
    assert sent == [[10.0]]


def test_a_field_no_class_declares_local_is_refused_when_released():
    # the base is not a class the compiler can see (here a value of a dict), so the run time says it
    ns = load('''
    class Plain:
        def __init__(self):
            self.limit = 1.0

        event def hit(self, px: float) when px < self.limit:
            pass

    Base = {"plain": Plain}["plain"]

    class Sub(Base):
        def lower(self):
            release self.limit
    ''')
    s = ns["Sub"]()
    with pytest.raises(AttributeError, match=r"release self.limit: Sub has no `local` field limit; declare it"):
        s.lower()


def test_a_name_with_compatibility_letters_is_the_attribute_python_makes_of_it():
    # Python reads `ﬁeld` (U+FB01 ligature) as `field` (NFKC, PEP 3131); `release`, `last` and the
    # guard kept the letters as typed: another field, "not declared `local`", never set
    ns = load('''
    class Gauge:
        local ﬁeld: float = 0.0

        def __init__(self, floor: float):
            self.__ﬂoor = floor
            self.got = []

        event def probe(self, ﬁrm: str, v: float) when ﬁrm == "a" and v < self.ﬁeld + self.__ﬂoor:
            self.got.append(v)

        def set(self, v: float, floor: float):
            self.ﬁeld = v
            release ｓｅｌｆ.ﬁeld
            self.__ﬂoor = floor
            return last self.ﬁeld, f"{last self.ﬁeld}", f"{last self.ﬁeld:>4}"
    ''')
    g = ns["Gauge"](0.0)
    assert g.set(10.0, 1.0) == (10.0, "10.0", "10.0") and g.field == 10.0 and g._Gauge__floor == 1.0
    eventpy.drain(5.0)
    ns["Gauge"].probe("a", 10.5)
    ns["Gauge"].probe("a", 11.5)
    eventpy.drain(5.0)
    assert g.got == [10.5]

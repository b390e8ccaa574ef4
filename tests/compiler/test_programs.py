"""Compiled programs end to end, on the embedded overlay: guards, fields, classes."""

from __future__ import annotations

import inspect
import re
import textwrap
import threading
import traceback

import pytest

import eventpy

from _programs import MONITOR, load  # tests/compiler/_programs.py

pytestmark = pytest.mark.usefixtures("fresh_overlay")  # tests/conftest.py


def test_decreasing_threshold_never_lets_a_stale_event_through():
    ns = load(MONITOR)
    m = ns["Monitor"](100.0)
    prices = [99.0, 99.5, 98.0, 98.7, 97.0, 200.0, 96.5, 96.9, 10.0]
    for p in prices:
        ns["Monitor"].quote("IBM", p)  # published back to back: the brokers lag behind the UPDs
    ns["Monitor"].quote("HP", 1.0)
    eventpy.drain(5.0)
    assert m.got == [99.0, 98.0, 97.0, 96.5, 10.0]  # each strictly below the previous one
    eventpy.drain(5.0)  # the UPDs the callbacks sent during the first drain are after its barrier
    s = eventpy.stats()
    assert s["delivered"] == 5 and s["upd_sent"] >= 1


def test_threshold_raised_from_outside_is_in_force_after_drain():
    ns = load(MONITOR)
    m = ns["Monitor"](10.0)
    m.limit = 50.0                     # from outside the class: reaches the runtime too
    eventpy.drain(5.0)
    ns["Monitor"].quote("IBM", 40.0)
    eventpy.drain(5.0)
    assert m.got == [40.0]
    setattr(m, "limit", 100.0)
    eventpy.drain(5.0)
    ns["Monitor"].quote("IBM", 90.0)
    eventpy.drain(5.0)
    assert m.got == [40.0, 90.0]


def test_generated_variables_switches_sets_and_attribute_expressions():
    ns = load('''
    import math

    class Radar:
        def __init__(self, x: float, y: float, r: float):
            self.x, self.y, self.r = x, y, r
            self.on = True
            self.kinds = {"car"}
            self.seen = []

        event def blip(self, kind: str, px: float, py: float) when self.on and kind in self.kinds and px >= self.x - self.r and px <= self.x + self.r and math.hypot(px - self.x, py - self.y) <= self.r:
            self.seen.append((kind, px, py))
    ''')
    r = ns["Radar"](0.0, 0.0, 5.0)
    R = ns["Radar"]
    R.blip("car", 3.0, 3.0)      # in the square, in the circle
    R.blip("car", 4.0, 4.0)      # in the square, outside the circle: the broker's attribute expression
    R.blip("bike", 1.0, 1.0)     # not a watched kind
    eventpy.drain(5.0)
    r.kinds.add("bike")          # a set field: mutation reaches the runtime
    r.x = 10.0                   # moves both generated bounds (x - r, x + r)
    eventpy.drain(5.0)
    R.blip("bike", 9.0, 1.0)
    R.blip("car", 1.0, 0.0)      # was in range before the move
    eventpy.drain(5.0)
    r.on = False                 # a switch: suspended at the brokers, not unsubscribed
    eventpy.drain(5.0)
    R.blip("car", 10.0, 0.0)
    eventpy.drain(5.0)
    assert r.seen == [("car", 3.0, 3.0), ("bike", 9.0, 1.0)]
    assert eventpy.stats()["spurious"] == 0


def test_local_release_last():
    ns = load('''
    class Probe:
        local level: float = 0.0

        def __init__(self):
            self.got = []

        event def reading(self, v: float) when v > self.level:
            self.got.append(v)

        def set_level(self, x: float):
            self.level = x                                  # local copy only
            if abs(self.level - last self.level) > 2:
                release self.level                          # the guard sees it now
    ''')
    p, P = ns["Probe"](), ns["Probe"]
    p.set_level(1.0)                    # within 2 of the released 0.0: stays local
    eventpy.drain(5.0)
    P.reading(0.5)
    eventpy.drain(5.0)
    p.set_level(5.0)                    # released
    eventpy.drain(5.0)
    P.reading(3.0)
    P.reading(6.0)
    eventpy.drain(5.0)
    assert p.got == [0.5, 6.0] and p.level == 5.0


def test_concurrent_assignments_leave_the_overlay_with_the_field_value():
    ns = load(MONITOR)
    m = ns["Monitor"](0.0)

    def bump(k):
        for i in range(200):
            m.limit = float(k * 1000 + i)

    threads = [threading.Thread(target=bump, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    eventpy.drain(5.0)
    final = m.limit
    ns["Monitor"].quote("IBM", final - 0.5)
    ns["Monitor"].quote("IBM", final + 0.5)
    eventpy.drain(5.0)
    assert m.got == [final - 0.5]


def test_publishing_checks_types():
    ns = load(MONITOR)
    with pytest.raises(TypeError, match="'price' must be float, got str"):
        ns["Monitor"].quote("IBM", "cheap")
    with pytest.raises(TypeError, match="prog.Monitor.quote"):
        ns["Monitor"].quote("IBM")


@pytest.mark.parametrize("call, words", [
    ('Monitor.quote("IBM", "cheap")', "'price' must be float, got str"),
    ('Monitor.quote("IBM")', "missing a required argument: 'price'"),
    ('Monitor.quote("IBM", 1.0, 2.0)', "takes 2 attributes (firm, price), got 3 positional arguments"),
    ('Monitor(5.0).quote("IBM", price="cheap")', "'price' must be float, got str"),
    ('Monitor.quote(firm="IBM", prize=1.0)', "unexpected keyword argument 'prize'; did you mean 'price'?"),
    ('Monitor.quote(Monitor(5.0), "IBM", 1.0)', "publishes an event and takes no object"),
    ('Monitor.quote("IBM", float("nan"))', "is NaN"),
])
def test_a_wrong_argument_of_an_event_method_is_raised_from_the_callers_line(call, words):
    # in the program's file (prog.epy, line 12: the call in go) and in this one: no eventpy frame below it
    ns = load(MONITOR + f"""
    def go():
        {call}
    """)
    for run, where in ((ns["go"], ("prog.epy", 12)), (lambda: eval(call, ns), ("<string>", 1))):
        with pytest.raises((TypeError, ValueError), match=re.escape(words)) as info:
            run()
        last = traceback.extract_tb(info.value.__traceback__)[-1]
        assert (last.filename, last.lineno) == where, traceback.format_tb(info.value.__traceback__)


@pytest.mark.parametrize("statement, words", [
    ('m.limit = "ten"', "Monitor.limit = 'ten' refused"),
    ('m.touch("ten")', "Monitor.limit = 'ten' refused"),          # inside the class: an assigning block
    ('m.names.add(3)', "Monitor.names.add(3) refused"),
    ('m.names.update(3)', "'int' object is not iterable"),
    ('m.free = 3; m.drop()', "release self.free (= 3) refused"),
    ('Monitor("ten")', "cannot be compared with field self.limit"),
    ('Monitor(None)', "which is None"),
    ('subscriptions_of(m)[0].update(limit="x")', "parameter 'limit' must stay a number"),
])
def test_a_value_a_guard_cannot_take_is_refused_from_the_programs_line(statement, words):
    # the store, the set's mutation, the release, the constructor, the update: no eventpy frame
    ns = load(MONITOR.replace("self.got = []", "self.got = []\n            self.names = {'IBM'}")
              .replace("price < self.limit", "price < self.limit and firm in self.names and firm != self.free") + f"""
        local free: str = "a"

        def touch(self, v):
            self.limit = v

        def drop(self):
            release self.free

    from eventpy.runtime.lang import subscriptions_of

    def go():
        m = Monitor(5.0)
        {statement}
    """)
    with pytest.raises((TypeError, ValueError), match=re.escape(words)) as info:
        ns["go"]()
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert last.filename == "prog.epy" and last.name in ("go", "touch", "drop"), \
        traceback.format_tb(info.value.__traceback__)


def test_an_event_method_shows_its_own_name_signature_and_docstring():
    ns = load(MONITOR.replace("self.got.append(price)", '"""A quote of a firm."""\n            self.got.append(price)'))
    quote = ns["Monitor"].quote
    assert quote.__doc__ == "A quote of a firm." and quote.__qualname__ == "Monitor.quote"
    assert str(inspect.signature(quote)) == "(firm, price)"


def test_a_field_value_the_guard_cannot_compare_is_refused_when_the_object_is_made():
    ns = load(MONITOR)  # the class does not annotate `limit`: its first value is checked
    with pytest.raises(TypeError, match=r"price' of type float cannot be compared with field self.limit"
                                        r" \(with self.limit = 'ten'\)"):
        ns["Monitor"]("ten")
    with pytest.raises(TypeError, match="reads self.limit, which is None; a field a guard reads must be"):
        ns["Monitor"](None)
    m = ns["Monitor"](100)  # an int where the guard compares a float is fine
    ns["Monitor"].quote("IBM", 5.0)
    eventpy.drain(5.0)
    assert m.got == [5.0] and eventpy.stats()["sub_sent"] == 1  # the refused objects subscribed nothing


def test_an_object_refused_by_its_second_guard_subscribes_nothing():
    ns = load('''
        class Two:
            def __init__(self, limit, firm):
                self.limit = limit
                self.firm = firm

            event def cheap(self, price: float) when price < self.limit:
                pass

            event def named(self, firm: str) when firm == self.firm:
                pass
    ''')
    with pytest.raises(TypeError, match="self.firm"):
        ns["Two"](10.0, 3.5)  # the first guard fits, the second compares a str with a float
    eventpy.drain(5.0)
    assert eventpy.stats()["sub_sent"] == 0


def test_an_annotated_field_is_checked_against_its_annotation_when_the_object_is_made():
    ns = load('''
        class A:
            limit: float

            def __init__(self, limit):
                self.limit = limit

            event def q(self, px: float) when px < self.limit:
                pass
    ''')
    with pytest.raises(TypeError, match=r"reads self.limit, declared float, but it is '10'"):
        ns["A"]("10")
    ns["A"](10)  # an int where a float is declared: a number all the same
    eventpy.drain(5.0)
    assert eventpy.stats()["sub_sent"] == 1


def test_a_refused_store_leaves_the_field_and_the_subscription_as_they_were():
    ns = load(MONITOR)
    m = ns["Monitor"](50.0)
    with pytest.raises(TypeError, match=r"Monitor.limit = 'x' refused: parameter 'limit' must stay a number"):
        m.limit = "x"
    assert m.limit == 50.0
    ns["Monitor"].quote("IBM", 40.0)
    eventpy.drain(5.0)
    assert m.got == [40.0]


SYMBOLS = '''
    class Watch:
        def __init__(self, symbols):
            self.symbols = symbols
            self.got = []

        event def quote(self, sym: str) when sym in self.symbols:
            self.got.append(sym)
'''


def test_set_members_that_could_never_match_are_refused_before_they_are_stored():
    ns = load(SYMBOLS)
    with pytest.raises(TypeError, match=r"member 1 \(int\) can never equal attribute 'sym' \(str\)"):
        ns["Watch"]({"A", 1})
    w = ns["Watch"]({"A"})
    with pytest.raises(TypeError, match=r"member 2.5 \(float\) can never equal attribute 'sym'"):
        w.symbols = {"B", 2.5}
    with pytest.raises(TypeError, match="can never equal"):
        w.symbols.add(3)  # a mutation is refused before it happens, like a store
    assert w.symbols == {"A"}
    w.symbols.add("B")
    eventpy.drain(5.0)
    for sym in "ABC":
        ns["Watch"].quote(sym)
    eventpy.drain(5.0)
    assert w.got == ["A", "B"]


def test_a_plain_class_level_default_is_a_field_the_guard_can_read():
    ns = load('''
        class Watch:
            symbols = {"IBM"}  # no annotation, as in ordinary Python

            def __init__(self):
                self.got = []

            event def quote(self, sym: str) when sym in self.symbols:
                self.got.append(sym)
    ''')  # was "reads self.symbols, which no method of Watch assigns"
    w = ns["Watch"]()
    for sym in ("IBM", "HP"):
        ns["Watch"].quote(sym)
    eventpy.drain(5.0)
    assert w.got == ["IBM"]


def test_last_of_a_local_set_is_the_released_snapshot():
    ns = load('''
        class Watch:
            local symbols: set = set()

            def __init__(self):
                self.got = []

            event def quote(self, sym: str) when sym in self.symbols:
                self.got.append(sym)

            def publish_list(self):
                release self.symbols

            def released(self):
                return last self.symbols
    ''')
    w = ns["Watch"]()
    w.symbols.add("A")
    w.publish_list()
    w.symbols.add("B")  # local only: neither `last` nor the guard sees it
    assert w.released() == {"A"} and w.symbols == {"A", "B"}
    assert ns["Watch"]().released() == set()
    eventpy.drain(5.0)
    for sym in "AB":
        ns["Watch"].quote(sym)
    eventpy.drain(5.0)
    assert w.got == ["A"]


DECORATED = '''
    import functools

    def logged(f):
        WRAPS
        def wrapper(self, *args):
            self.calls += 1
            return f(self, *args)
        return wrapper

    class M:
        def __init__(self):
            self.limit = 5.0
            self.calls = 0
            self.got = []

        @logged
        event def q(self, px: float) when px < self.limit:
            self.got.append(px)
'''


def test_a_decorator_that_keeps_the_guard_runs_on_every_delivery():
    ns = load(DECORATED.replace("WRAPS", "@functools.wraps(f)"))
    m = ns["M"]()
    ns["M"].q(1.0)
    ns["M"].q(9.0)
    eventpy.drain(5.0)
    assert m.got == [1.0] and m.calls == 1


def test_a_decorator_that_drops_the_guard_is_refused_when_the_class_is_made():
    # without functools.wraps, M.q would be a plain method: calling it would not publish
    with pytest.raises(TypeError, match=r"M.q is an `event def`, but its decorator returned .* use functools.wraps"):
        load(DECORATED.replace("WRAPS", "pass"))


def test_a_string_continued_with_a_backslash_in_a_guard_is_the_string_python_reads():
    # `"I\<line end>BM"` is "IBM" in Python; the guard read the backslash as a continuation of
    # the guard's line and stopped at the quote ("unexpected character")
    text = textwrap.dedent(MONITOR).replace('firm == "IBM"', 'firm == "I\\\nBM"', 1)
    assert '"I\\\nBM"' in text
    ns = load(text)
    m = ns["Monitor"](100.0)
    ns["Monitor"].quote("I\nBM", 1.0)
    ns["Monitor"].quote("IBM", 20.0)
    eventpy.drain(5.0)
    assert m.got == [20.0]


def test_a_ttl_field_of_the_wrong_type_names_elapsed_and_the_value():
    # an expiring guard made with a str ttl said "expression cannot be compared with field self.ttl"
    ns = load('''
    class Beacon:
        def __init__(self, ttl):
            self.ttl = ttl

        event def ping(self, x: float) when elapsed() < self.ttl:
            pass
    ''')
    with pytest.raises(TypeError, match=re.escape("elapsed() (a number) cannot be compared with field "
                                                  "self.ttl (with self.ttl = '10')")):
        ns["Beacon"]("10")
    ns["Beacon"](10).close()  # an int ttl is fine


def test_a_publication_with_every_attribute_by_position_skips_signature_binding(monkeypatch):
    """`Class.m(a, b)` is the publisher's hot path: binding the signature was 40% of its time
    (location helper's profile). All by position, the attributes are taken as they come; every
    other call shape still goes through bind() and its messages."""
    ns = load(MONITOR)
    m = ns["Monitor"](100.0)
    ns["Monitor"].quote("IBM", 1.0)  # the first call: its event type advertised
    eventpy.drain(5.0)

    def refuse(*args, **kwargs):
        raise AssertionError("bind() on a call with every attribute by position")

    monkeypatch.setattr(inspect.Signature, "bind", refuse)
    ns["Monitor"].quote("IBM", 0.5)
    eventpy.drain(5.0)
    monkeypatch.undo()
    ns["Monitor"].quote(firm="IBM", price=0.25)
    ns["Monitor"].quote("IBM", price=0.125)
    eventpy.drain(5.0)
    assert m.got == [1.0, 0.5, 0.25, 0.125]
    with pytest.raises(TypeError, match="takes 2 attributes"):
        ns["Monitor"].quote("IBM", 1.0, 2.0)
    with pytest.raises(TypeError, match="missing a required argument"):
        ns["Monitor"].quote("IBM")

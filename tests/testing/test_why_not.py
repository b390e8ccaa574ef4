"""eventpy.testing.why_not: why an object or a subscription would not get an event."""

import importlib
import textwrap

import pytest

import eventpy
from eventpy.testing import ManualClock, fresh_overlay, why_not

SHOP = '''
class PriceAlert:
    def __init__(self, firm: str, limit: float):
        self.firm = firm
        self.limit = limit

    event def quote(self, firm: str, price: float) when firm == self.firm and price < self.limit:
        pass

    event def halt(self, firm: str) when firm == self.firm:
        pass


class Courier:
    def __init__(self, x0: float, speed: float):
        self.x0 = x0
        self.speed = speed

    event def parcel(self, x: float) when abs(x - (self.x0 + self.speed * elapsed())) < 2:
        pass
'''


@pytest.fixture
def shop(tmp_path, monkeypatch):
    (tmp_path / "shop_why.epy").write_text(textwrap.dedent(SHOP))
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module("shop_why")


def test_the_guard_and_the_parameters_in_force_are_named(shop):
    with fresh_overlay():
        a = shop.PriceAlert("ibm", 10.0)
        said = why_not(a, shop.PriceAlert.quote, firm="IBM", price=9.0)
        assert said == ("the guard 'firm == self.firm and price < self.limit' of shop_why.PriceAlert.quote does "
                        "not admit firm='IBM', price=9.0 with its parameters as they are now: firm='ibm', limit=10.0")
        assert why_not(a, shop.PriceAlert.quote, firm="ibm", price=9.0) is None
        a.limit = 5.0  # a store: the values in force change with it
        assert "limit=5.0" in why_not(a, shop.PriceAlert.quote, firm="ibm", price=9.0)


def test_a_moving_guard_says_where_it_is_in_time(shop):
    clock = ManualClock()
    with fresh_overlay(clock=clock):
        c = shop.Courier(0.0, 1.5)
        clock.advance(10)
        assert why_not(c, x=15.0) is None  # one event method: no need to name it
        assert "elapsed()=10" in why_not(c, x=0.0)


def test_an_object_closed_by_a_fresh_overlay_is_said_to_be_closed(shop):
    with fresh_overlay():
        a = shop.PriceAlert("ibm", 10.0)
    assert "closed" in why_not(a, shop.PriceAlert.quote, firm="ibm", price=1.0)
    with fresh_overlay():
        b = shop.PriceAlert("ibm", 10.0)
        b.close()
        assert "closed" in why_not(b, shop.PriceAlert.halt, firm="ibm")


def test_a_subscription_too():
    with fresh_overlay() as overlay:
        q = eventpy.EventType("testing.WQ", n=int)
        sub = overlay.node.subscribe(q, "n > low", {"low": 3})
        assert why_not(sub, n=4) is None and "low=3" in why_not(sub, n=3)


def test_mistakes_are_type_errors(shop):
    with fresh_overlay():
        a = shop.PriceAlert("ibm", 10.0)
        with pytest.raises(TypeError, match="several event types"):
            why_not(a, firm="ibm", price=1.0)
        with pytest.raises(TypeError, match="does not listen to shop_why.Courier.parcel"):
            why_not(a, shop.Courier.parcel, x=1.0)
        with pytest.raises(TypeError):
            why_not(a, shop.PriceAlert.quote, firm="ibm")  # price missing
        with pytest.raises(TypeError, match="not int"):
            why_not(3, firm="ibm")


def test_an_event_missing_an_attribute_is_one_sentence_from_why_not(shop):
    """why_not(a, PriceAlert.quote, firm="IBM"), the price left out: the TypeError came from deep
    in the event schema, with its frames under the test's line and a message that did not say
    why_not could not answer; it is now raised by why_not, one sentence naming what is missing."""
    with fresh_overlay():
        a = shop.PriceAlert("IBM", 10.0)
        with pytest.raises(TypeError) as info:
            why_not(a, shop.PriceAlert.quote, firm="IBM")
    said = str(info.value)
    assert said == ("why_not: shop_why.PriceAlert.quote: missing attribute(s) 'price' (schema: firm: str, "
                    "price: float): no such event can be published, so none reaches it"), said
    assert info.value.__cause__ is None and info.value.__suppress_context__
    shown = str(info.getrepr(style="long"))  # as pytest shows the failure
    assert "values_from" not in shown and "_schema.py" not in shown, shown
    assert "testing/_why_not.py" not in shown, shown  # (the frame of why_not itself is hidden too)

"""The public Python API (the contract of DESIGN §1 and the runtime issue):

    node = eventpy.connect()
    sub = node.subscribe(Quote, "firm == 'IBM' and price < limit", params={"limit": 10.0}, on_event=f)
    node.publish(Quote, firm="IBM", price=9.5)
    sub.update(limit=12.0)
    eventpy.drain(timeout=5.0)
    eventpy.stats()
"""

from __future__ import annotations

import os
import time
from collections import Counter
from typing import Any, Callable, Mapping

from ._boundary import callers_mistake
from ._client_caps import LimitExceeded
from ._connect_args import _broker_address, _check_connect_args, rum_from_env
from ._executor import _here
from . import _exit, _late_counts
from ._process import _lock, _nodes, _published_by_callback, _sent_by_callback, drain, unreachable
from ._settler import Settler
from ._sub_args import checked_subscription, event_type_of
from ._sizes import HEADROOM, check_fits, check_sent
from .client import SchemaRefused, UpdateMonitor
from .embedded import EmbeddedOverlay, LocalNode
from ._params import answer_budget, check_timeout, freeze
from ._lang_objects import _forget_default, default_node, set_default_node
from ._mistakes import warn_misspelt_broker_variable, warn_never_holds
from .lang import nodes_left_by, subscriptions_of
from .model import Event, EventType
from ._subscription import Subscription, UpdateNotConfirmed  # noqa: F401 (public, re-exported)

ENV_BROKER = "EVENTPY_BROKER"
_overlay: EmbeddedOverlay | None = None
_closed_stats: Counter = Counter()  # counters of nodes already closed
class Node:
    """A process's attachment to an overlay."""

    def __init__(self, local: LocalNode, rum: UpdateMonitor | None = None) -> None:
        self._local = local
        self.name = local.link
        self._rum = rum  # the default update monitor of this node's subscriptions
        # the frame limit of its transport (None: in-process, no limit), and the length past which
        # a string attribute is measured exactly when published (below it, it always fits)
        self._max_frame: int | None = getattr(local.overlay, "max_frame", None)
        self._max_text = None if self._max_frame is None else (self._max_frame - HEADROOM) // 4 - 5
        self._settler = Settler(local)  # the update monitor's return to exact values

    @property
    def mode(self) -> str:
        """The overlay's mode: "parametric" or "resub"."""
        return self._local.core.mode

    def subscribe(self, etype: EventType, guard: str = "True", params: Mapping[str, Any] | None = None,
                  on_event: Callable[[Event], Any] | None = None, *, rum: Any = None) -> Subscription:
        """`rum`: the runtime update monitor for this subscription (000 §6): True, a dict of
        `window`, `freq_approx`, `min_history`, an `eventpy.UpdateMonitor`, or False for none;
        by default the node's (`eventpy.connect(rum=...)`)."""
        try:
            etype = event_type_of(etype, "subscribe")
            env, plan = self._checked(etype, guard, params, on_event)
            monitor = UpdateMonitor.of(rum)  # its knobs are the caller's too
        except (TypeError, ValueError) as e:  # GuardError is a ValueError
            callers_mistake(e)
            raise  # from the caller's line (_boundary)
        try:
            return self._subscribe_plan(etype, plan, env, on_event, rum=rum if monitor is None else monitor)
        except LimitExceeded as e:  # past a per-client limit of the broker: the caller's call
            callers_mistake(e)
            raise  # (_boundary)

    def _checked(self, etype: Any, guard: Any, params: Any, on_event: Any) -> tuple[dict[str, Any], Any]:
        """`subscribe`'s arguments: the frozen parameters and the compiled guard, or the error."""
        if not isinstance(guard, str):  # (a GuardPlan is for code generated from .epy: _subscribe_plan)
            raise TypeError(f"the guard is the text of a condition, such as \"price < limit\", not a "
                            f"{type(guard).__name__}")
        return checked_subscription(etype, guard, params, on_event)

    def _subscribe_plan(self, etype: EventType, plan: Any, env: Mapping[str, Any],
                        on_event: Callable[[Event], Any] | None, group: Any = None,
                        rum: Any = None, since: float | None = None) -> Subscription:
        """Subscribe with a compiled guard (used by code generated from .epy); `since`: see
        ClientCore.subscribe."""
        env = {k: freeze(v) for k, v in env.items()}
        check_sent(self._max_frame, plan, env, env)  # the variables the SUB carries
        warn_never_holds(etype, plan)
        monitor = self._rum if rum is None else UpdateMonitor.of(rum)
        state = self._local.send(lambda core: core.subscribe(etype, plan, env, on_event, group, monitor, since))
        self._local.joined(state)
        sub = Subscription(self, state)
        state.handle = sub
        if _here.running:  # asked inline: a field store comes here
            _sent_by_callback()
        return sub

    def confirm(self, timeout: float = 5.0) -> None:
        """Wait until every subscription change this node sent before the call is in force at
        every broker it must reach; UpdateNotConfirmed names the broker that did not answer."""
        check_timeout("confirm", timeout)
        if self._local.closed:
            raise RuntimeError(f"node {self.name} is closed: there is nothing left to confirm")
        start = time.monotonic()
        token, done = self._local.request_ack(budget=answer_budget(timeout))
        if not done.wait(timeout):
            self._local.give_up(token)  # a late answer is not kept
            raise UpdateNotConfirmed(self._local.overlay.edge_name(), timeout, unreachable(self._local))
        with self._local.lock:
            failed = self._local.core.acked.pop(token, None)
            closed = failed is None and self._local.closed  # woken by close(), not by an answer
        if closed:
            raise RuntimeError(f"node {self.name} was closed while it waited for the confirmation")
        if failed:
            raise UpdateNotConfirmed(failed, timeout, waited=min(timeout, time.monotonic() - start))

    def publish(self, etype: EventType, /, **attrs: Any) -> None:
        """Publish an event; returns at once (000 §4.2), unless MAX_OUTBOX messages already wait for
        a broker that is not taking them: then it waits for room (backpressure) and raises
        TimeoutError after PUBLISH_WAIT seconds without publishing (eventpy.runtime.embedded)."""
        try:
            if type(etype) is not EventType:  # an event method of an .epy class (publish's hot path: one check)
                etype = event_type_of(etype, "publish")
            values = self._values(etype, attrs)
        except (TypeError, ValueError) as e:
            callers_mistake(e)
            raise  # from the caller's line (_boundary)
        try:
            self._publish_values(etype, values)
        except (SchemaRefused, LimitExceeded) as e:  # another schema under this name: the program's (an old
            # version); or a new type past the broker's max_event_types
            callers_mistake(e)
            raise  # (_boundary)

    def _values(self, etype: EventType, attrs: Mapping[str, Any]) -> tuple:
        """The attributes of an event checked against its type (and the frame limit): in schema
        order, or TypeError / ValueError saying which attribute is wrong and why."""
        if not isinstance(etype, EventType):
            raise TypeError(f"publish needs an EventType, got {type(etype).__name__}")
        values = etype.values_from(attrs)
        texts = etype.text_positions
        if texts and self._max_text is not None:  # over TCP: strings too large for a frame are refused
            per = self._max_text // len(texts)  # all within it: together they fit (a loop, not a sum():
            for i in texts:  # 70 against 310 ns a publish)
                if len(values[i]) > per:
                    check_fits(self._max_frame, f"{etype.name}: attribute", [(etype.attrs[j], values[j]) for j in texts])
                    break
        return values

    def _publish_values(self, etype: EventType, values: tuple, wait: bool = True) -> bool:
        """`publish` of values `_values` checked; with `wait=False`, False (nothing published)
        instead of waiting for room in a full outbox."""
        seq = self._local.publish(etype, values, wait)
        if seq is None:
            return False
        if _here.running:  # asked inline: publish is the hot path
            _published_by_callback(self.name, seq)
        return True

    def _publish_if_room(self, etype: Any, attrs: Mapping[str, Any]) -> bool:
        """`publish` that returns False, having published nothing, where `publish` would wait for
        room in a full outbox (eventpy.aio waits for it off its loop's thread, then asks again)."""
        try:
            if type(etype) is not EventType:
                etype = event_type_of(etype, "publish")
            values = self._values(etype, attrs)
        except (TypeError, ValueError) as e:
            callers_mistake(e)
            raise  # (_boundary)
        try:
            return self._publish_values(etype, values, wait=False)
        except (SchemaRefused, LimitExceeded) as e:
            callers_mistake(e)
            raise  # (_boundary)

    def advertise(self, etype: Any) -> None:
        """Tell the overlay this node publishes `etype`: an EventType, or an event method of an
        .epy class (`node.advertise(Monitor.quote)`). Subscriptions follow advertisements, so a
        publisher advertises, then drains, before its first events."""
        try:
            etype = event_type_of(etype, "advertise")
        except TypeError as e:
            callers_mistake(e)
            raise  # from the caller's line (_boundary)
        try:
            self._local.send(lambda core: core.advertise(etype))
        except (SchemaRefused, LimitExceeded) as e:
            callers_mistake(e)
            raise  # (_boundary)

    def stats(self) -> Counter:
        """This node's counters: published, delivered, spurious, sub_sent, unsub_sent, upd_sent, ...
        (`eventpy.stats()` sums every node of the process)."""
        with self._local.lock:
            return Counter(self._local.core.stats)

    def close(self) -> None:
        """Unsubscribe every subscription of this node and detach it from the overlay; what it
        queued is still sent. A second call does nothing."""
        with _lock:
            mine = self in _nodes
            if mine:
                _nodes.remove(self)
        if mine:  # what it counts after this point still reaches eventpy.stats() (_late_counts)
            with self._local.lock:
                counts = _late_counts.take_over(self._local.core)
            with _lock:
                _closed_stats.update(counts)
        with self._local.lock:
            if self._local.closed:
                return
            for state in list(self._local.core.subs.values()):
                self._local.core.unsubscribe(state)
        with self._local.lock:
            self._local.mark_closed()
            self._settler.cancel()
        self._local.overlay.wake(self._local)
        self._local.overlay.detach(self._local)

    def __enter__(self) -> "Node":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<eventpy.Node {self.name} mode={self.mode}>"


def connect(url: str | None = None, *, mode: str | None = None, matcher: str | None = None,
            summary: str | None = None, name: str | None = None, rum: Any = None) -> Node:
    """Attach this process to an overlay. Without a URL and without EVENTPY_BROKER: the embedded
    overlay (one broker in this process), created on first use with `mode` (parametric or resub),
    `matcher` (naive, poset, fastint) and `summary` (attribute, poset). With a URL the overlay's
    brokers have chosen them: a `mode` other than theirs is an error; `matcher` and `summary` are
    not told by a broker, so only their names are checked. `rum` turns the runtime update monitor
    on for the node's subscriptions (see `Node.subscribe`); without it, EVENTPY_RUM says (`1`, or
    knobs such as `window=1.0,freq_approx=4`), or none."""
    global _overlay
    try:
        _check_connect_args(url, mode, matcher, summary, name)
        if rum is None:  # the process's choice, if it made one (an .epy program's objects too)
            monitor = rum_from_env(os.environ)
        else:
            monitor = UpdateMonitor.of(rum)
        # a URL the program never wrote: its errors say where it came from
        from_env = f"{ENV_BROKER}: " if not url and os.environ.get(ENV_BROKER) else ""
        url = url or os.environ.get(ENV_BROKER) or None
        remote = url is not None and url not in ("inproc:", "inproc://", "embedded")
        if remote:
            try:
                _broker_address(url)
            except ValueError as e:
                raise ValueError(f"{from_env}{e}") from None
    except (TypeError, ValueError) as e:
        callers_mistake(e)
        raise  # from the caller's line (_boundary)
    if remote:
        try:
            return _connect_remote(url, name, monitor, mode)
        except ConnectionError as e:
            if not from_env:
                raise
            raise type(e)(f"{from_env}{e}") from None  # a ConnectionRefusedError stays one
    if url is None:  # not asked for by name: a misspelt EVENTPY_BROKER would land here silently
        warn_misspelt_broker_variable(os.environ)
    wanted = {k: v for k, v in (("mode", mode), ("matcher", matcher), ("summary", summary)) if v}
    with _lock:
        if _overlay is None:
            _overlay = EmbeddedOverlay(**wanted)
        else:
            have = _overlay.config()
            clash = {k: v for k, v in wanted.items() if have[k] != v}
            if clash:
                raise ValueError(f"the embedded overlay already runs with {have}; asked for {clash} "
                                 "(call eventpy.shutdown() first)")
        node = Node(_overlay.attach(name), monitor)
        _nodes.append(node)
    return node


_remote: dict[str, Any] = {}


def _connect_remote(url: str, name: str | None, monitor: UpdateMonitor | None = None,
                    mode: str | None = None) -> Node:
    """`tcp://host:port`: a node with its own connection to that broker."""
    from .transports.tcp_client import AttachError, TcpOverlay

    host, port = _broker_address(url)
    with _lock:
        overlay = _remote.get(url)
        if overlay is None:
            overlay = _remote[url] = TcpOverlay(host, port)
    try:
        local = overlay.attach(name, mode)
    except AttachError as e:  # a peer answered: the reason is complete
        raise ConnectionError(f"cannot attach to {url}: {e}") from None
    except OSError as e:  # a program retrying on ConnectionRefusedError still can
        kind = type(e) if isinstance(e, ConnectionError) else ConnectionError
        raise kind(f"cannot attach to {url}: {e} (is a broker running there? "
                   "`eventpy overlay up` starts an overlay)") from None
    node = Node(local, monitor)
    with _lock:
        _nodes.append(node)
    return node


def confirm(target: Any, timeout: float = 5.0) -> None:
    """Wait until the subscription changes made so far are in force at every broker they must
    reach (000 §9.3). `target`: a Subscription, a Node, or an object of an .epy class (whose event
    methods' subscriptions are confirmed; once it is closed, its unsubscriptions), so a program
    in the language writes `self.limit = x` then `eventpy.confirm(self)`. Raises UpdateNotConfirmed naming the broker
    that did not acknowledge in time."""
    if isinstance(target, (Subscription, Node)):
        target.confirm(timeout)
        return
    nodes = _nodes_of(target)
    if not nodes:
        raise TypeError(f"confirm takes a Subscription, a Node or an object of an .epy class with "
                        f"event methods, not {type(target).__name__}")
    for node in nodes:
        node.confirm(timeout)


def _nodes_of(obj: Any) -> list[Node]:
    """The nodes the subscriptions of an EventObject live on (or, once it is closed, lived on)."""
    return list({id(sub._node): sub._node for sub in subscriptions_of(obj)}.values()) or nodes_left_by(obj)


def stats() -> dict[str, int]:
    """Counters over every node of this process (and the embedded broker's, prefixed broker_)."""
    total: Counter = Counter({k: 0 for k in ("published", "delivered", "spurious", "sub_sent",
                                             "unsub_sent", "upd_sent", "callback_errors")})
    with _lock:
        nodes = list(_nodes)
        total.update(_closed_stats)
        overlay = _overlay
    total.update(_late_counts.counted_late())
    for n in nodes:
        total.update(n.stats())
    if overlay is not None:
        for k, v in dict(overlay.broker.stats).items():
            total[f"broker_{k}"] += v
    return dict(total)


def shutdown() -> None:
    """Close every node and stop the embedded overlay (the next connect() starts a fresh one, and
    the next `.epy` object or class event a fresh default node: `set_default_node` is forgotten)."""
    global _overlay
    _forget_default()
    with _lock:
        nodes = list(_nodes)
    _exit.let_callbacks_finish(nodes)  # what running callbacks publish is sent, not refused
    for n in nodes:
        n.close()
    with _lock:
        overlay, _overlay = _overlay, None
        remote = list(_remote.values())
        _remote.clear()
        _closed_stats.clear()
    _late_counts.forget()
    if overlay is not None:
        overlay.stop()
    for r in remote:
        r.stop()


# _exit.at_exit runs at exit from eventpy/__init__.py: registered at `import eventpy`, not here when the
# runtime is first used, so that it keeps its place among the program's atexit handlers

"""An `.epy` object's subscriptions: the process's node for compiled programs, the
constructor wrapper that subscribes every event method once the program's `__init__` returns
(with the values of the fields each guard reads, all checked before the first subscription),
and the `close` wrapper that unsubscribes it."""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable

from ..guards import SUBSCRIBED_AT
from ._boundary import callers_mistake, past_wrapper
from ._lang_class import take_class_defaults
from ._lang_fields import _frozen, _state, assigning

_node_lock = threading.Lock()
_default_node: Any = None
_chosen = False  # the program named it (set_default_node): once closed, an error, not replaced


def node() -> Any:
    """The process's node for compiled programs: the one `set_default_node` gave, or else
    `eventpy.connect()` on first use (again after that one was closed: `eventpy.shutdown()`)."""
    global _default_node
    with _node_lock:
        n = _default_node
        if n is not None and n._local.closed:
            if _chosen:  # connecting another in its place would go where the program did not say
                raise RuntimeError(f"node {n.name}, given to eventpy.set_default_node(), is closed: "
                                   "give another, or set_default_node(None) to have one connected")
            n = None
        if n is None:
            from .api import connect

            n = _default_node = connect()
        return n


def set_default_node(n: Any) -> Any:
    """Make `n` (an `eventpy.Node`, or None) the node of the `.epy` objects made from now on and of
    `Class.event(...)` publications; objects already made keep theirs. None: the next one that
    needs a node connects one (`eventpy.connect()`). Returns the node it replaces (None if there
    was none, or it was closed), so a program can restore or close it."""
    global _default_node, _chosen
    from .api import Node

    if n is not None and not isinstance(n, Node):
        raise TypeError(f"set_default_node needs an eventpy.Node (from eventpy.connect()) or None, "
                        f"got {type(n).__name__}")
    if n is not None and n._local.closed:
        raise ValueError(f"node {n.name} is closed: give a node that is attached")
    with _node_lock:
        previous = _default_node
        _default_node, _chosen = n, n is not None
    return None if previous is None or previous._local.closed else previous


def default_node() -> Any:
    """The node `.epy` objects subscribe on and `Class.event(...)` publishes through (connected on
    first use, as an object would): `eventpy.default_node().advertise(Monitor.quote)` advertises
    on the connection the class's events go out on."""
    try:
        return node()
    except (ConnectionError, ValueError, RuntimeError) as e:  # an unusable EVENTPY_BROKER, a
        callers_mistake(e)  # closed node: from the caller's line (_boundary)
        raise


def _forget_default() -> None:
    """`eventpy.shutdown()`: every node is closed; the next object connects a fresh one."""
    global _default_node, _chosen
    with _node_lock:
        _default_node, _chosen = None, False


def _subscribing_init(init: Callable) -> Callable:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if "__eventpy_state__" not in self.__dict__:
            # made by a base's __new__ that does not reach EventObject's (dict's, list's): the
            # class's defaults, as that would have given them (none: this finds none again)
            take_class_defaults(self)
        try:
            init(self, *args, **kwargs)
        except BaseException as e:  # the program's constructor: its frames, not this wrapper's
            past_wrapper(e)
            raise  # (_boundary)
        # the most derived constructor subscribes, once: not again where __init__ runs on an
        # object already subscribed (a reset calling self.__init__(), a __new__ returning a live
        # object), whose stores reached its subscriptions (a second set delivered every event twice)
        if type(self).__init__ is __init__ and not _state(self).subs:
            # The fields' locks, as a statement storing them takes them, from the read of their
            # values until the subscriptions are listed on the object (nothing is stored inside):
            # a store from a thread the constructor handed `self` to waits, then updates them.
            # Before, one landing in between found no subscription and was lost for good.
            with assigning(self, *_guard_fields(type(self))):
                try:
                    envs = _guard_values(self)
                    node()  # the first object attaches the process: an EVENTPY_BROKER it cannot use is said here
                except (TypeError, AttributeError, ConnectionError, ValueError, RuntimeError) as e:
                    # fields the guards cannot take, a broker that is not there, a closed default
                    # node: the program's mistake, raised from the line that made the object (_boundary)
                    callers_mistake(e)
                    raise
                _subscribe(self, envs)

    # the program's names, annotations and doc (typing.get_type_hints reads the annotations in
    # the program's module: this function's own would name what it does not have)
    functools.update_wrapper(__init__, init)
    __init__.__eventpy_wrapped__ = True  # type: ignore[attr-defined]
    return __init__


def _guard_fields(cls: type) -> list[str]:
    """The fields (stored or `local`) that the guards of the class's event methods read."""
    return sorted(set().union(*(m.fields for m in cls.__eventpy_events__.values())))


def _guard_values(obj: Any) -> list[tuple[Any, dict[str, Any]]]:  # (EventMethod, field values)
    """Every event method of the object with the values of the fields its guard reads, checked
    (before the first subscription is made, so that a refused object subscribes nothing)."""
    cls = type(obj)
    st = _state(obj)
    envs = []
    for name, method in cls.__eventpy_events__.items():
        env = {}
        for f in method.fields:
            if f in cls.__eventpy_locals__:
                if f not in st.released:
                    raise AttributeError(f"{cls.__qualname__}.{name}: the guard reads local self.{f}, "
                                         "which has no released value; give it a default")
                env[f] = _frozen(st.released[f])
            else:
                try:
                    env[f] = _frozen(obj.__dict__[f])
                except KeyError:
                    raise AttributeError(f"{cls.__qualname__}.{name}: the guard reads self.{f}, which "
                                         "is not set when the constructor returns (the object subscribes "
                                         f"then): assign self.{f} in __init__, or give the class a default "
                                         f"(`{f} = ...` in its body)") from None
        method.check_fields(env)
        envs.append((method, env))
    return envs


def _subscribe(obj: Any, envs: list[tuple[Any, dict[str, Any]]]) -> None:
    st = _state(obj)
    n = node()
    group = object()  # one serial queue per object: its event methods run one at a time
    since = None  # elapsed() counts from the object's subscription: one moment for all of them
    for method, env in envs:
        on_event = method.deliver(obj)
        for etype in method.listens:  # one event reaches one of them: no duplicates
            sub = n._subscribe_plan(etype, method.plan, env, on_event, group, since=since)
            st.subs.append((sub, method.fields))
            if since is None:
                since = sub._state.env.get(SUBSCRIBED_AT)


def _unsubscribe(obj: Any) -> None:
    st = _state(obj)
    st.closed = True
    if st.subs:  # (a second close has none left: the nodes of the first are kept)
        st.left = list({id(sub._node): sub._node for sub, _ in st.subs}.values())
    for sub, _ in st.subs:
        sub.close()
    st.subs.clear()


_closes = threading.local()  # .objects: id -> how many wrapped closes of it this thread is inside


def _closing_now(obj: Any) -> bool:
    return id(obj) in getattr(_closes, "objects", {})


def _closing(close: Callable[..., Any]) -> Callable[..., Any]:
    """A user-defined `close` (the class's own or inherited) unsubscribes the object after it
    runs, whether or not it calls super().close(): an object its program closed must not go on
    receiving events. In a chain of closes (super().close() reaching another wrapped close, or
    EventObject.close) only the outermost unsubscribes, once, when its body has returned: the
    code after super().close() still runs on a subscribed object, as it would without EventPy."""

    @functools.wraps(close)
    def closing(self: Any, *args: Any, **kwargs: Any) -> Any:
        objects = _closes.__dict__.setdefault("objects", {})
        key = id(self)  # the object is alive (self) while its entry exists
        objects[key] = objects.get(key, 0) + 1
        try:
            return close(self, *args, **kwargs)
        except BaseException as e:  # the program's close: its frames, not this wrapper's
            past_wrapper(e)
            raise  # (_boundary)
        finally:
            objects[key] -= 1
            if not objects[key]:
                del objects[key]
                _unsubscribe(self)

    closing.__eventpy_closing__ = True  # type: ignore[attr-defined]
    return closing

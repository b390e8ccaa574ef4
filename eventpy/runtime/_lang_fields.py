"""The fields of objects of `.epy` classes (DESIGN §1 items 3-5; paper 000 Fig. 13, Fig. 33):
guard fields as data descriptors, observed sets, `assigning`, `release` and `last`.
Re-exported by eventpy.runtime.lang, which generated code imports as `__eventpy__`."""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterable

from ._boundary import callers_mistake
from ._fifo_lock import FieldDeadlock, FifoLock  # (re-exported: lang, and the instances' locks)
from ._identity import IdentityWeakSet
from ._params import freeze, short as _short


# -- per-instance state ----------------------------------------------------------------------------
class _Instance:
    """Runtime state of one live object: locks, released copies, subscriptions, pending UPDs."""

    __slots__ = ("owner", "locks", "released", "subs", "pending", "closed", "left", "inherited", "__weakref__")

    def __init__(self, owner: int | None = None, released: dict[str, Any] | None = None) -> None:
        self.owner = owner  # id() of the object whose __dict__ holds it (None: not yet known)
        self.locks: dict[str, FifoLock] = {}
        self.released: dict[str, Any] = dict(released or {})
        self.subs: list[tuple[Any, frozenset[str]]] = []  # (Subscription, fields its guard reads)
        # field -> (value frozen, its updates) stored inside an `assigning` block (a `local`
        # field is never pending: its store returns before)
        self.pending: dict[str, tuple[Any, list]] = {}
        self.closed = False
        self.left: list[Any] = []  # once closed: the nodes its subscriptions were on (confirm)
        # field -> the value the object got from its class and still holds (the very object: a
        # write that went around the field, into __dict__, ends it): Python would read such a
        # field from the class, so a store on the class reaches it (_lang_class)
        self.inherited: dict[str, Any] = {}

    def __reduce__(self) -> tuple:
        # a deep copy or a pickle of the object: the copy has the released values, not the
        # locks (it could not be made with them) nor the subscriptions (the original's)
        return (_Instance, (None, self.released))

    def lock(self, field: str, obj: Any = None) -> FifoLock:
        lk = self.locks.get(field)
        if lk is None:
            where = f"{type(obj).__qualname__}.{field}" if obj is not None else field
            lk = self.locks.setdefault(field, FifoLock(f"{where} of object {self.owner:#x}"))
        return lk


def _state(obj: Any) -> _Instance:
    st = obj.__dict__.get("__eventpy_state__")
    if st is None or st.owner != id(obj):
        st = _own_state(obj, st)
    return st


def _own_state(obj: Any, st: _Instance | None) -> _Instance:
    """The object's state where it has none of its own yet: a new one, the one a deep copy or a
    pickle made (owner None), or, where a shallow copy (copy.copy, `__dict__.update`) shares the
    original's, one with the same released values: the copy subscribed nothing, and its stores
    must not move the original's subscriptions."""
    if st is None:
        return obj.__dict__.setdefault("__eventpy_state__", _Instance(id(obj)))
    if st.owner is None:
        st.owner = id(obj)
        return st
    mine = _Instance(id(obj), st.released)
    obj.__dict__["__eventpy_state__"] = mine
    return mine


def subscriptions_of(obj: Any) -> list[Any]:
    """The live Subscriptions of an object of an .epy class (none for any other object)."""
    st = getattr(obj, "__dict__", {}).get("__eventpy_state__")
    return [sub for sub, _fields in st.subs] if isinstance(st, _Instance) and st.owner == id(obj) else []


def nodes_left_by(obj: Any) -> list[Any]:
    """The nodes a closed object of an .epy class was subscribed on (none for any other object):
    `confirm` of it waits for its unsubscriptions, as `Subscription.confirm` after `close` does."""
    st = getattr(obj, "__dict__", {}).get("__eventpy_state__")
    return list(st.left) if isinstance(st, _Instance) and st.owner == id(obj) and st.closed else []


def _publish_field(obj: Any, field: str, value: Any) -> None:
    """Send the new guard-visible value of a field to every subscription that reads it."""
    _publish_fields(obj, {field: value})


def _publish_fields(obj: Any, values: dict[str, Any]) -> None:
    """Send several fields' new values together: each subscription gets them in one update (one
    recomputation of its variables, one UPD), so neither its broker nor its local filter ever
    holds some of them new and the others old."""
    _send_updates(_updates_for(_state(obj), {f: _frozen(v) for f, v in values.items()}))


def _updates_for(st: _Instance, frozen: dict[str, Any]) -> list[tuple[Any, dict[str, Any]]]:
    """(subscription, the values of `frozen` its guard reads) for each live subscription of the
    object that does not hold them already: what a store of them sends."""
    items = []
    for sub, fields in st.subs:
        mine = {f: v for f, v in frozen.items() if f in fields}
        if mine and not sub._state.closed and not _holds_already(sub, mine):
            items.append((sub, mine))
    return items


def _send_updates(items: list[tuple[Any, dict[str, Any]]]) -> None:
    """Apply `_updates_for`'s list (made, and checked, under the fields' locks, which are still
    held: nothing has changed what the subscriptions hold since)."""
    if not items:
        return
    node = items[0][0]._node
    if all(sub._node is node for sub, _ in items):  # the usual case: no grouping to build
        groups: Iterable[list] = (items,)
    else:  # (one node, but for an object whose subscribing was odd)
        by_node: dict[int, list[tuple[Any, dict[str, Any]]]] = {}
        for item in items:
            by_node.setdefault(id(item[0]._node), []).append(item)
        groups = by_node.values()
    for group in groups:
        try:
            type(group[0][0])._apply_together(group)  # one visit of the node for them all
        except RuntimeError:
            if not all(sub.closed for sub, _ in group):
                raise
            # closed by another thread since the test above (obj.close(), shutdown()): as for
            # a store after the close, there is nothing left to update; before, the store
            # (already made) raised "the subscription is closed" in the storing thread


def _check_field(obj: Any, field: str, value: Any, written: Callable[[], str] | str = "") -> None:
    """Refuse a value a subscription reading `field` would refuse, before it is stored: a
    refused store leaves the object as it was (the field and the subscriptions agree).
    `written`: what the program wrote, for the message (default `Class.field = value`); a callable
    is called only when a refusal needs it (a repr on every store cost every store)."""
    _check_fields(obj, {field: value}, written)


def _check_fields(obj: Any, values: dict[str, Any], written: Callable[[], str] | str = "") -> None:
    """`_check_field` for several fields stored together: all are checked before any is stored."""
    _checked_updates(obj, _state(obj), values, written)


def _checked_updates(obj: Any, st: _Instance, frozen: dict[str, Any],
                     written: Callable[[], str] | str = "") -> list[tuple[Any, dict[str, Any]]]:
    """`_updates_for`, each update checked as `_check_fields` does (TypeError or ValueError, and
    nothing is sent, if one is refused). A store checks and then sends the same list: before, it
    walked the subscriptions, froze the values and tested what each held twice (a game's tick
    paid that for every player's every field)."""
    items = _updates_for(st, frozen)
    for sub, mine in items:
        try:
            sub.check(**mine)
        except (TypeError, ValueError) as e:
            what = (written() if callable(written) else written) or ", ".join(
                f"{type(obj).__qualname__}.{f} = {_short(v)}" for f, v in frozen.items())
            hint = NONE_HINT if any(v is None for v in mine.values()) else ""
            raise type(e)(f"{what} refused: {e} (read by the guard of {sub.event_type.name}){hint}") from None
    return items


# A game's player that has not spawned (or has died) has no position: what to do instead of None
NONE_HINT = ("; to have an object get none of these events for a while, give the field a value and "
             "test a switch field first (`when self.spawned and ...`), or store a value the guard rejects")


def _holds_already(sub: Any, frozen: dict[str, Any]) -> bool:
    """Whether the subscription holds these values already (same type, equal): a game loop that
    stores every player's position each tick, moved or not, then costs no check, no node lock
    and no wake of the overlay for the players that stood still (before, a store of the same
    value cost nearly what a change did). Read without the node lock: a field's value in the
    subscription changes only under that field's lock, which the store holds."""
    env = sub._state.env
    for f, v in frozen.items():
        held = env.get(f, NOTHING)
        if type(held) is not type(v) or held != v:
            return False
    return True


def _frozen(value: Any) -> Any:
    t = type(value)
    if t is float or t is int or t is str or t is bool:
        return value  # freeze's answer without its two calls (a game's positions are floats)
    return freeze(value)  # what the subscription holds: np.float64(9.5) as 9.5, a set frozen


# -- defaults: what an object reads before it stores a value of its own ----------------------------
OWN_DEFAULTS = "__eventpy_own_defaults__"  # in a class's own __dict__: the defaults its body (or a store on it) gave
NOTHING = object()

inheritors = IdentityWeakSet()  # live objects holding a value of their class's
# Held while an object takes its class's defaults and joins `inheritors`, and while a store on a
# class sets the new default and lists the objects that follow it: before, a class store while
# other threads made objects raised "Set changed size during iteration" (the WeakSet grew under
# it) after some of its objects had the new value, and an object made meanwhile could keep the old
inheritors_lock = threading.Lock()


def inherits(obj: Any, st: _Instance, field: str) -> bool:
    """Whether the object still holds the value of `field` its class gave it."""
    held = st.inherited.get(field, NOTHING)
    return held is not NOTHING and obj.__dict__.get(field, NOTHING) is held


def class_attr(cls: type, name: str) -> tuple[type | None, Any]:
    """The class whose __dict__ Python's lookup of `name` on `cls` finds first, and the value
    there; (None, NOTHING) when no class in the MRO has it."""
    for k in cls.__mro__:
        if name in k.__dict__:
            return k, k.__dict__[name]
    return None, NOTHING


def class_default(cls: type, field: str) -> tuple[type | None, Any]:
    """The class an object of `cls` reads `field` from while it has no value of its own, and the
    value, by Python's lookup along the MRO: a default of an event class (the field's descriptor
    took the name's place in its __dict__), or a plain class attribute, of a base that is not an
    event class too. A method or property found first hides any default further on, as in Python.
    (None, NOTHING) when there is none."""
    for k in cls.__mro__:
        own = k.__dict__.get(OWN_DEFAULTS)
        if own is not None and field in own:
            return k, own[field]
        v = k.__dict__.get(field, NOTHING)
        if v is not NOTHING and not isinstance(v, GuardField):
            return (k, v) if not hasattr(type(v), "__get__") else (None, NOTHING)
    return None, NOTHING


class GuardField:
    """A field read by a guard: every store reaches the runtime (inside the class or not)."""

    def __init__(self, name: str, local: bool = False, default: Any = NOTHING) -> None:
        self.name = name
        self.local = local
        # the class's own default when this descriptor was put in its __dict__ (a store on the
        # class puts a new one): what putting it back restores (_lang_class.EventClass.__setattr__)
        self.default = default

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:  # `Class.limit`: the class-level default, as Python would give it
            value = class_default(owner, self.name)[1] if owner is not None else NOTHING
            return self if value is NOTHING else value
        try:
            return obj.__dict__[self.name]
        except KeyError:
            raise AttributeError(f"{type(obj).__name__!r} object has no attribute {self.name!r}") from None

    def __set__(self, obj: Any, value: Any, written: Callable[[], str] | str = "", own: bool = True) -> None:
        """Store under the field's FIFO lock and send the update. `own`: the object's own value
        from now on; a store on the class that the object follows (_lang_class) passes False,
        and what the program wrote. (One frame: a refusal's traceback starts at the store.)"""
        if not written:
            def written(value: Any = value) -> str:  # as the program gave it, before it becomes an ObservedSet
                return f"{type(obj).__qualname__}.{self.name} = {_short(value)}"

        if isinstance(value, set) and not _observed_by(value, obj, self.name):
            # the field's own set, observed for this object: one another field observes
            # (`b.zones = a.zones`) would update only its first owner's subscriptions. (A frozenset
            # is kept as given: nothing can change it in place, and it stays hashable.)
            value = ObservedSet(value, obj, self.name)
        st = _state(obj)
        lock = st.lock(self.name, obj)
        with lock:
            if not own and not inherits(obj, st, self.name):
                return  # a class's new default, and the object stored its own since it was listed
            if not self.local:
                frozen = _frozen(value)  # what the subscriptions get: frozen once, checked once
                try:
                    items = _checked_updates(obj, st, {self.name: frozen}, written)
                except (TypeError, ValueError) as e:
                    callers_mistake(e)
                    raise  # from the line of the store (_boundary)
            obj.__dict__[self.name] = value
            if own:
                st.inherited.pop(self.name, None)
            else:
                st.inherited[self.name] = value
            if self.local:
                return  # the guard sees the released copy (Fig. 33)
            if lock._depth > 1:  # inside `assigning`: sent once, when the statement is done
                st.pending[self.name] = (frozen, items)
            else:
                _send_updates(items)

    def __delete__(self, obj: Any) -> None:
        try:  # the program's mistake: raised from its `del` line (_boundary)
            raise undeletable(type(obj), self.name, "assign it a value the guard rejects instead, or close() "
                                                    "the object to end its subscriptions")
        except AttributeError as e:
            callers_mistake(e)
            raise


def undeletable(cls: type, name: str, instead: str) -> AttributeError:
    """`del obj.f` or `del Class.f` of a field a guard reads: which guards, and what to do."""
    readers = sorted(n for n, m in getattr(cls, "__eventpy_events__", {}).items() if name in m.fields)
    guards = "the guard of " + ", ".join(readers) if readers else "a guard"
    return AttributeError(f"{cls.__qualname__}.{name} is read by {guards} and cannot be deleted: the guard "
                          f"needs a value; {instead}")


class ObservedSet(set):
    """A set-valued guard field: mutations reach the runtime like assignments (001 Alg. 2 l. 31-35)."""

    __slots__ = ("_owner", "_field")

    def __init__(self, items: Iterable[Any] = (), owner: Any = None, field: str = "") -> None:
        super().__init__(items)
        self._owner, self._field = owner, field

    def _changed(self) -> None:
        if self._owner is not None:
            st = _state(self._owner)
            if self._field in getattr(type(self._owner), "__eventpy_locals__", ()):
                return  # a local set: the guard sees it once released
            with st.lock(self._field, self._owner):
                _publish_field(self._owner, self._field, self)


def _observed_by(value: Any, obj: Any, field: str) -> bool:
    """Is `value` the set that `obj.field` observes (a store of the field's own set, as
    `self.zones |= {z}` makes)?"""
    return isinstance(value, ObservedSet) and value._owner is obj and value._field == field


def _mutator(name: str) -> Callable:
    base = getattr(set, name)

    def method(self: ObservedSet, *args: Any) -> Any:
        owner = self._owner
        if owner is None:
            result = base(self, *args)
            return self if name.startswith("__i") else result
        # Under the field's lock from the check to the update, as a store is: before, a mutation
        # from one thread ran while another thread's update (or release) iterated the set to
        # freeze it, which raised "Set changed size during iteration" there.
        with _state(owner).lock(self._field, owner):
            if self._field not in getattr(type(owner), "__eventpy_locals__", ()):
                trial = set(self)  # refused before it happens, like a store (sets in guards are small)
                try:
                    base(trial, *args)
                    _check_field(owner, self._field, frozenset(trial),
                                 lambda: f"{type(owner).__qualname__}.{self._field}.{name}({', '.join(map(_short, args))})")
                except (TypeError, ValueError) as e:
                    callers_mistake(e)
                    raise  # from the line of the call (_boundary)
            result = base(self, *args)
            self._changed()
        return self if name.startswith("__i") else result

    method.__name__ = name
    return method


for _name in ("add", "discard", "remove", "pop", "clear", "update", "difference_update",
              "intersection_update", "symmetric_difference_update", "__ior__", "__iand__",
              "__isub__", "__ixor__"):
    setattr(ObservedSet, _name, _mutator(_name))


class assigning:
    """`with assigning(self, "a", "b"): self.a, self.b = ...` — Fig. 13 around one statement:
    the fields' FIFO locks (in name order), the store, then the update of all of them, then release."""

    __slots__ = ("obj", "fields", "locks", "st")

    def __init__(self, obj: Any, *fields: str) -> None:
        self.obj = obj
        # (most statements store one field: nothing to sort, nor a set to build, per store)
        self.fields = fields if len(fields) == 1 else sorted(set(fields))
        self.locks: list[FifoLock] = []

    def __enter__(self) -> None:
        st = self.st = _state(self.obj)  # (and __exit__'s: the statement's own object all along)
        try:
            for f in self.fields:
                lk = st.lock(f, self.obj)
                lk.acquire()
                self.locks.append(lk)
        except BaseException:  # FieldDeadlock: no __exit__ follows, so the locks taken go back now
            for lk in reversed(self.locks):
                lk.release()
            self.locks.clear()
            raise

    def __exit__(self, *exc: Any) -> None:
        st = self.st
        try:
            done, items = {}, []
            for f in self.fields:
                if f in st.pending and st.locks[f]._depth == 1:
                    # (GuardField.__set__ froze and checked it, and listed its updates)
                    frozen, listed = st.pending.pop(f)
                    if f not in getattr(type(self.obj), "__eventpy_locals__", ()):
                        done[f], items = frozen, listed
            if len(done) == 1:  # `self.x = ...`: the updates its store listed (nothing sent since)
                _send_updates(items)
            elif done:  # `self.a, self.b = ...`: one update, as release sends it
                _send_updates(_updates_for(st, done))
        finally:
            for lk in reversed(self.locks):
                lk.release()


def release(obj: Any, *fields: str) -> None:
    """`release self.f` (or `release self.a, self.b`): the local copies become the ones the guard
    sees — one instrumented store of all of them (Fig. 13 around Fig. 33's `f = local$f`): their
    FIFO locks are taken together, in name order as `assigning` takes them (so the two cannot
    deadlock), every value is checked before any is released, and each subscription gets the new
    values in one update. Released one by one, another thread, the local filter or a broker could
    see `a` released and `b` not."""
    declared = getattr(type(obj), "__eventpy_locals__", ())
    for f in fields:  # the compiler checks what it can see; a base class from elsewhere is checked here
        if f not in declared:
            raise AttributeError(f"release self.{f}: {type(obj).__qualname__} has no `local` field {f}; declare "
                                 f"it in the class body: `local {f}: TYPE = VALUE`")
    st = _state(obj)
    locks = []
    try:
        for f in sorted(set(fields)):
            lk = st.lock(f, obj)
            lk.acquire()  # FieldDeadlock: the ones taken go back in `finally`
            locks.append(lk)
        values = {f: obj.__dict__[f] for f in dict.fromkeys(fields)}
        frozen = {f: _frozen(v) for f, v in values.items()}  # snapshots: later local changes of a set stay local
        try:
            _check_fields(obj, frozen, lambda: f"release {', '.join(f'self.{f}' for f in values)} "
                                               f"(= {', '.join(_short(v) for v in values.values())})")
        except (TypeError, ValueError) as e:
            callers_mistake(e)
            raise  # from the line of the release (_boundary)
        st.released.update(frozen)
        _publish_fields(obj, values)
    finally:
        for lk in reversed(locks):
            lk.release()


def last(obj: Any, field: str) -> Any:
    """`last self.f`: the value last released."""
    st = _state(obj)
    try:
        return st.released[field]
    except KeyError:
        raise AttributeError(f"self.{field} was never released") from None


class released:
    """`last self.f` inside an f-string: `released(self).f` is `last(self, "f")`, spelled without
    a quote (a field of an f-string nested in another may use neither quote in Python 3.11)."""

    __slots__ = ("__obj",)

    def __init__(self, obj: Any) -> None:
        self.__obj = obj

    def __getattr__(self, field: str) -> Any:  # any name but the slot, which is found first
        return last(self.__obj, field)

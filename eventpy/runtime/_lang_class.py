"""Guard fields stored on the class: `Monitor.limit = 12`, `cls.limit = v` in a classmethod,
`setattr(Monitor, "limit", v)` (DESIGN §1 item 3: any store reaches the runtime).

Python's rule is what a program expects: an object that never stored its own `limit` reads the
class's, and so sees a store on the class; one that did keeps its own. The field's descriptor
must stay in the class's __dict__ through such a store (a plain store would replace it, and the
objects' later stores would no longer reach their subscriptions), so event classes have a
metaclass, `EventClass`, whose __setattr__ turns a store of a guard field into a new default
(and updates of the objects that follow it) and whose __delattr__ refuses to delete one.

A set default becomes each object's own observed set (at creation, and at a store on the class):
changing one object's set in place does not change the class's or the other objects', and the
object still follows the class's next store (it stored nothing of its own).

An event class with a metaclass of its own (an ABC, `metaclass=ABCMeta`) would conflict with
EventClass; the compiler gives such classes `metaclass=__eventpy__.metaclass(...)`, which builds
the class with a metaclass derived from both.
"""

from __future__ import annotations

from typing import Any

from ._boundary import callers_mistake, stays_cut
from ._lang_fields import (NOTHING, OWN_DEFAULTS, FifoLock, GuardField, ObservedSet, _check_field, _frozen, _state,
                           class_attr, class_default, inheritors, inheritors_lock, inherits, undeletable)
from ._params import short as _short


# Stores on event classes, one at a time: each updates its objects after setting the default, so
# two of them in two threads could leave the objects with the first value and the class with the
# second. A FIFO lock: a class store inside a statement holding a field lock (and the reverse) is
# in FieldDeadlock's view.
_class_stores = FifoLock("a store on an event class")


def _field(cls: type, name: str) -> GuardField | None:
    """The guard field Python's lookup of `name` on `cls` finds first, if it is one."""
    v = class_attr(cls, name)[1]
    return v if isinstance(v, GuardField) else None


# The namespace key by which `metaclass(locals=..., events=...)` hands the compiler's list of a
# class's `local` fields and decorated event methods to lang.make_event_class: not as class
# keywords, which a base's own `__init_subclass__` would receive (and refuse, or drop).
DECLARED = "__eventpy_declared__"


class EventClass(type):
    """The metaclass of event classes: a store of a guard field on the class is a new default."""

    def __init__(cls, name: str, bases: tuple, namespace: dict, **kwargs: Any) -> None:
        super().__init__(name, bases, namespace, **kwargs)
        if "__eventpy_events__" not in cls.__dict__:
            # EventObject.__init_subclass__ did not run: a base's own hook did not call super()
            # (object's does nothing, so Python programs often leave it out)
            from .lang import make_event_class  # (lang imports this module)
            try:
                make_event_class(cls, kwargs.get("locals", ()), kwargs.get("events", ()))
            except Exception as e:
                stays_cut(e)
                raise  # from the class statement (_boundary)

    def __setattr__(cls, name: str, value: Any) -> None:
        descriptor = None
        mine = cls.__dict__.get(name)
        if isinstance(value, GuardField) and value.name == name and isinstance(mine, GuardField):
            # a field's descriptor read from the class's __dict__ and put back: unittest.mock's
            # patch.object and pytest's monkeypatch undoing a patch of the default. The default
            # it stood for comes back (without one, the class keeps the default it has)
            if value.default is NOTHING:
                _drop_default(cls, value)
                return
            descriptor, value = value, value.default
        field = _field(cls, name) if not isinstance(value, GuardField) else None
        if field is None:
            super().__setattr__(name, value)
            return
        with _class_stores:  # two of them in two threads: their objects end with the class's last
            try:
                followers, written = _new_default(cls, field, value)
            except (TypeError, ValueError) as e:
                callers_mistake(e)
                raise  # from the line of the store (_boundary)
            if isinstance(mine, GuardField):  # a descriptor standing for this default (see above)
                type.__setattr__(cls, name, descriptor or GuardField(name, local=mine.local, default=value))
            for obj in followers:
                # a set becomes each object's own ObservedSet, as the object would get at creation; a
                # subclass's own descriptor of the field is the one that knows whether it is local there
                own_field = _field(type(obj), name) or field
                own_field.__set__(obj, set(value) if isinstance(value, (set, frozenset)) else value, written, own=False)

    def __delattr__(cls, name: str) -> None:
        if _field(cls, name) is not None:
            try:  # the program's mistake: raised from its `del` line (_boundary)
                raise undeletable(cls, name, "give the class another default instead")
            except AttributeError as e:
                callers_mistake(e)
                raise
        super().__delattr__(name)


def _drop_default(cls: type, descriptor: GuardField) -> None:
    """Put back a descriptor from when `cls` had no default of its own for the field: the default
    a patch gave it goes, and the objects that followed it follow the base's default again."""
    name = descriptor.name
    with _class_stores:
        with inheritors_lock:
            own = dict(cls.__dict__.get(OWN_DEFAULTS) or {})
            followers: list[Any] = []
            if name in own:
                followers = [obj for obj in list(inheritors) if isinstance(obj, cls)
                             and inherits(obj, _state(obj), name) and class_default(type(obj), name)[0] is cls]
                del own[name]
                type.__setattr__(cls, OWN_DEFAULTS, own)
            type.__setattr__(cls, name, descriptor)
            value = class_default(cls, name)[1]
        if value is NOTHING:
            return  # nothing to follow: they keep the value they hold
        for obj in followers:
            (_field(type(obj), name) or descriptor).__set__(
                obj, set(value) if isinstance(value, (set, frozenset)) else value,
                f"{cls.__qualname__}.{name} = {_short(value)}", own=False)


def _new_default(cls: type, field: GuardField, value: Any) -> tuple[list[Any], str]:
    """`cls.f = value`: the default of `cls` and of its subclasses that have none of their own;
    returns the live objects of them that have not stored their own value (they follow it), and
    what the program wrote. Their subscriptions are asked first: a value one of them refuses
    changes nothing at all."""
    name = field.name
    written = f"{cls.__qualname__}.{name} = {_short(value)}"
    with inheritors_lock:  # objects made meanwhile take the new default, or are listed here
        before = cls.__dict__.get(OWN_DEFAULTS)
        type.__setattr__(cls, OWN_DEFAULTS, {**(before or {}), name: value})
        followers = [obj for obj in list(inheritors)
                     if isinstance(obj, cls) and inherits(obj, _state(obj), name) and class_default(type(obj), name)[0] is cls]
        if not field.local:
            try:
                for obj in followers:
                    _check_field(obj, name, _frozen(value), written)
            except (TypeError, ValueError):
                if before is None:
                    type.__delattr__(cls, OWN_DEFAULTS)
                else:
                    type.__setattr__(cls, OWN_DEFAULTS, before)
                raise
    return followers, written


def take_class_defaults(obj: Any) -> None:
    """A new object's fields from its class's defaults (`limit = 10.0` in the body), as Python
    would read them: EventObject.__new__, or, where a base's __new__ comes first in the MRO and
    does not reach it (`class Settings(dict)`), the constructor, before the program's __init__."""
    cls = type(obj)
    st = None
    with inheritors_lock:  # no store on the class between the defaults taken and the joining
        for f in cls.__eventpy_fields__ | cls.__eventpy_locals__:
            v = class_default(cls, f)[1]  # looked up now: the class may have been given a new one
            if v is NOTHING:
                continue
            v = obj.__dict__[f] = ObservedSet(v, obj, f) if isinstance(v, set) else v  # (a frozenset: as it is)
            st = st or _state(obj)
            st.inherited[f] = v
            if f in cls.__eventpy_locals__:
                st.released[f] = _frozen(v)
        if st is not None:
            inheritors.add(obj)  # a store on the class reaches it while it holds the class's value

_combined: dict[type, type] = {}


def _with_events(meta: type) -> type:
    """A metaclass that is both `meta` and EventClass (one per `meta`, so that the classes of a
    hierarchy share it and Python finds no conflict between them)."""
    if meta is type or issubclass(meta, EventClass):
        return EventClass if meta is type else meta
    if meta not in _combined:
        _combined[meta] = type(meta)(f"Event{meta.__name__}", (EventClass, meta), {"__module__": __name__})
    return _combined[meta]


class metaclass:
    """`class C(Base, __eventpy__.EventObject, metaclass=__eventpy__.metaclass(M))`: build C with
    the metaclass Python would pick from M (the program's `metaclass=`, or None) and the bases,
    extended with EventClass. Python calls a metaclass that is not a type as it is, so the
    conflict between EventClass and, say, ABCMeta never arises; `__prepare__` is the picked
    metaclass's own (an Enum's namespace, for one)."""

    def __init__(self, explicit: Any = None, locals: tuple = (), events: tuple = ()) -> None:
        self.explicit = explicit
        self.declared = (tuple(locals), tuple(events)) if locals or events else None

    def _pick(self, bases: tuple) -> Any:
        winner = self.explicit if self.explicit is not None else type
        if not isinstance(winner, type):  # the program's metaclass is a function: it decides alone
            return winner
        for base in bases:
            meta = type(base)
            if meta is EventClass or issubclass(winner, meta):
                continue
            if issubclass(meta, winner):
                winner = meta
            else:  # as Python says it, in the program's terms
                raise TypeError("metaclass conflict: the metaclass of a derived class must be a (non-strict) "
                                "subclass of the metaclasses of all its bases")
        return _with_events(winner)

    def __prepare__(self, name: str, bases: tuple, **kwargs: Any) -> Any:
        try:
            meta = self._pick(bases)
        except TypeError as e:  # the program's bases conflict
            callers_mistake(e)
            raise  # from the class statement (_boundary)
        prepare = getattr(meta, "__prepare__", None)
        return prepare(name, bases, **kwargs) if prepare is not None else {}

    def __call__(self, name: str, bases: tuple, namespace: Any, **kwargs: Any) -> Any:
        if self.declared is not None:
            namespace[DECLARED] = self.declared
        try:
            return self._pick(bases)(name, bases, namespace, **kwargs)
        except Exception as e:
            stays_cut(e)  # cut below (_boundary) and passed only through here: stays cut
            raise

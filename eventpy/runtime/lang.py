"""What code generated from `.epy` calls (DESIGN §1; paper 000 §4.2, §7.1, Fig. 13, Fig. 33).

Generated code imports this module as `__eventpy__`:

    class StockMonitor(__eventpy__.EventObject):
        def quote(self, firm: str, price: float) -> __eventpy__.when("firm == 'IBM' and price < self.limit", 9, 52):
            with __eventpy__.assigning(self, "limit"): self.limit = price

* `EventObject.__init_subclass__` turns every method whose return annotation is a `when(...)`
  marker into an event method: the event type `module.Class.method` with the annotated parameters
  as schema, the guard compiled to a subscription whose parameters are the fields it reads.
  Calling `Class.method(...)` publishes. Instances subscribe when the constructor returns and run
  their event methods one at a time, in arrival order.
* Every guard field becomes a data descriptor: any store — inside the class or from outside
  (`m.limit = 5`, `setattr`) — takes the field's FIFO lock, stores, and sends the update (the
  client recomputes the generated variables that depend on the field and sends only those that
  changed, Fig. 14). `assigning(...)` is the lock of Fig. 13 made visible around a whole statement,
  so that `self.count += 1` is atomic and one UPD leaves per statement.
* `local` fields (§9.2, Fig. 33): stores touch the local copy; the guard sees the copy `release`
  publishes; `last` reads it.
* A store on the class (`StockMonitor.limit = 12`) is a new default, which the objects that never
  stored their own follow (`_lang_class`: the metaclass of event classes).

The fields' machinery is in `_lang_fields`; subscribing an object when its constructor returns,
in `_lang_objects`; this module has the event methods and classes.
"""

from __future__ import annotations

import ast
import difflib
import functools
import inspect
import linecache
import threading
import types
from typing import Any, Callable, Iterable

from ..guards import GuardError, compile_guard
from ..guards._errors import source_lines
from ._boundary import callers_mistake, past_wrapper, stays_cut
from ._generated import generated_for, missing
from ._lang_class import DECLARED, EventClass, metaclass, take_class_defaults
from ._lang_objects import _closing, _closing_now, _subscribing_init, _unsubscribe, node
from ._lang_fields import (NONE_HINT, NOTHING, OWN_DEFAULTS, FieldDeadlock, FifoLock, GuardField, ObservedSet, _state,
                           assigning, class_attr, last, nodes_left_by, release, released, subscriptions_of)
from ._params import KIND_OF_TYPE, check_members, param_kind, param_type
from .client import SchemaRefused
from .model import EventType

__all__ = ["EventMethod", "EventObject", "FieldDeadlock", "FifoLock", "GuardField", "ObservedSet", "When", "assigning", "last",
           "generated_for", "metaclass", "node", "release", "released", "subscriptions_of",
           "when"]  # what generated code reaches as __eventpy__.NAME


def __getattr__(name: str) -> Any:
    """Only for a name this module lacks (PEP 562): generated code of a newer eventpyc."""
    raise missing(__name__, name)

# -- the guard marker ---------------------------------------------------------------------------
class When:
    __slots__ = ("source", "line", "column")

    def __init__(self, source: str = "True", line: int = 0, column: int = 0) -> None:
        self.source, self.line, self.column = source, line, column

    def __repr__(self) -> str:
        return f"when({self.source!r})"


def when(source: str = "True", line: int = 0, column: int = 0) -> When:
    return When(source, line, column)


# -- event methods ------------------------------------------------------------------------------
class EventMethod:
    """`Class.method(...)` publishes; the function body runs on delivery."""

    def __init__(self, func: Callable, etype: EventType, guard: When, plan: Any, owner: type,
                 field_types: dict[str, type] | None = None, private: str | None = None) -> None:
        self.func = func
        # the class whose body holds the method: its guard's `self.__f` is `_Private__f` (in a
        # subclass that inherits the method too: Python mangled the body by the same class)
        self.private = private
        self.inherited = False  # a copy of a base's, for this class's type (set by _event_methods)
        self.attr = func.__name__  # its name in the class's __dict__ (set by _event_methods)
        self.etype = etype  # what `owner.method(...)` publishes
        self.listens = [etype]  # what an instance subscribes to: this type and its bases' ones
        self.guard = guard
        self.plan = plan
        self.owner = owner
        self.fields = frozenset(plan.param_names)
        self.field_types = {f: t for f, t in (field_types or {}).items() if f in self.fields}
        self._undeclared = sorted(self.fields - self.field_types.keys())  # typed by their values
        self._checked: set[tuple] = set()  # type combinations of the undeclared fields seen to fit
        params = list(inspect.signature(func).parameters.values())[1:]
        self.signature = inspect.Signature([p.replace(annotation=inspect.Parameter.empty) for p in params])
        # a call with every attribute by position needs no bind() (40% of a publisher's time)
        self._positional = (tuple(p.name for p in params)
                            if all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params) else None)
        self.__doc__ = func.__doc__
        self.__name__ = func.__name__

    @property
    def __isabstractmethod__(self) -> bool:
        # `@abc.abstractmethod` over an `event def`: ABCMeta counts the class's abstract methods
        # after the event method took the function's place (as property and classmethod pass it on)
        return bool(getattr(self.func, "__isabstractmethod__", False))

    def __get__(self, obj: Any, owner: type | None = None) -> Callable[..., Any]:
        if obj is not None and type(obj) is not self.owner:
            # a base's event method reached from an object of a subclass: every subclass has its
            # own, so this is `super().m(...)` in an override, which runs the base's body, as in
            # Python (publishing would reach the object again, through its base's type, for ever)
            return types.MethodType(self._next_body(type(obj)), obj)
        caller = self.__dict__.get("_caller")
        if caller is None:  # what `Class.m` is: it publishes, and help() shows the method's own text
            caller = self._caller = self._make_caller()
        return caller

    def _next_body(self, cls: type) -> Callable:
        """The body `super().m(...)` reaches here: this method's, unless it is a copy the class
        holds of a base's (which Python's lookup would pass by), then the next class's in the
        object's MRO that defines it (in E(B, C), from E: C's, where B only inherited A's)."""
        if not self.inherited or self.owner not in cls.__mro__:
            return self.func
        mro = cls.__mro__
        for klass in mro[mro.index(self.owner):]:
            found = klass.__dict__.get(self.attr)
            if isinstance(found, EventMethod) and not found.inherited:
                return found.func
        return self.func

    def _make_caller(self) -> Callable[..., None]:
        etype = self.etype

        def caller(*args: Any, **kwargs: Any) -> None:
            # the arguments are checked first, each check in a `try` of its own: a mistake in them
            # is raised from the caller's line (_boundary), with no frame of eventpy below it
            try:
                attrs = self._arguments(args, kwargs)
            except TypeError as e:
                callers_mistake(e)
                raise
            try:
                n = node()  # the first publication may attach the process (an unusable EVENTPY_BROKER,
            except (ConnectionError, ValueError, RuntimeError) as e:  # a closed default node)
                callers_mistake(e)
                raise
            try:
                values = n._values(etype, attrs)
            except (TypeError, ValueError) as e:
                callers_mistake(e)
                raise
            try:
                n._publish_values(etype, values)
            except SchemaRefused as e:  # another schema under this name (_boundary)
                callers_mistake(e)
                raise

        for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
            setattr(caller, attr, getattr(self.func, attr, None))
        caller.__signature__ = self.signature  # type: ignore[attr-defined]
        # typing.get_type_hints(Class.m): the event's attributes (not this function's own, which
        # it would read as names of the program's module)
        caller.__annotations__ = dict(self.etype.schema)
        # (ABCMeta reads a base's abstract methods on a subclass with getattr: this function)
        caller.__isabstractmethod__ = self.__isabstractmethod__  # type: ignore[attr-defined]
        caller.__self__ = self  # type: ignore[attr-defined]  (advertise finds the event type here)
        return caller

    def publish(self, *args: Any, **kwargs: Any) -> None:
        """Publish an event of this method's type: what `Class.m(...)` does."""
        self.__get__(None, self.owner)(*args, **kwargs)

    def _arguments(self, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The event's attributes from the arguments of a call `Class.m(...)`."""
        if args and isinstance(args[0], EventObject) and not isinstance(args[0], (int, float, str)):
            # `Base.m(self, ...)` in an override, Python's old spelling of super().m(...): here it
            # publishes, with the object as the first attribute; said before the arguments are
            # checked, whose message ("too many positional arguments") does not say why
            owner, name = self.owner.__qualname__, self.__name__
            raise TypeError(f"{self.etype.name}: {owner}.{name}(...) publishes an event and takes no "
                            f"object; to run the body of {owner}.{name} from an override, call "
                            f"super().{name}(...) (without self)")
        positional = self._positional
        if not kwargs and positional is not None and len(args) == len(positional):
            return dict(zip(positional, args))
        names = list(self.signature.parameters)
        unknown = [k for k in kwargs if k not in self.signature.parameters]
        if unknown:  # named first: bind() says only that the attribute it stands for is missing
            near = difflib.get_close_matches(unknown[0], names, 1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise TypeError(f"{self.etype.name}: unexpected keyword argument {unknown[0]!r}; {hint}"
                            f"the event's attributes are {', '.join(names)}")
        if len(args) > len(names):  # bind() says only "too many positional arguments"
            raise TypeError(f"{self.etype.name}: takes {len(names)} attributes ({', '.join(names)}), "
                            f"got {len(args)} positional arguments")
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.etype.name}: {e}") from None
        bound.apply_defaults()
        return bound.arguments

    def check_fields(self, env: dict[str, Any]) -> None:
        """The fields' first values against the class's annotations and, for the fields it does
        not annotate, the guard against their types (once per combination of types): a str where
        the guard compares a price would otherwise make a subscription that never matches."""

        for f, t in self.field_types.items():
            kind = param_kind(env[f])
            if kind != KIND_OF_TYPE.get(t, kind):
                raise TypeError(f"{self.etype.name}: the guard reads self.{f}, declared {t.__name__}, "
                                f"but it is {env[f]!r}")
        for f, v in env.items():
            if isinstance(v, frozenset):
                check_members(self.plan, f, v, f"{self.etype.name}: self.{f} = {set(v)!r}")
        undeclared = self._undeclared
        if not undeclared:
            return
        found = []
        for f in undeclared:
            try:
                found.append(param_type(env[f]))
            except TypeError:
                raise TypeError(f"{self.etype.name}: the guard reads self.{f}, which is {env[f]!r}; a field "
                                "a guard reads must be an int, float, str, bool or a set"
                                + (NONE_HINT if env[f] is None else "")) from None
        if tuple(found) in self._checked:
            return
        try:
            compile_guard(self.guard.source, self.etype, {**self.field_types, **dict(zip(undeclared, found))},
                          mode="epy", owner=self.private)
        except GuardError as e:
            values = ", ".join(f"self.{f} = {env[f]!r}" for f in undeclared)
            raise TypeError(f"{self.etype.name}: {e.message} (with {values})") from None
        self._checked.add(tuple(found))

    def deliver(self, obj: Any) -> Callable[[Any], None]:
        func = self.func

        def on_event(ev: Any) -> Any:
            return func(obj, *ev.values)  # a coroutine (an async decorator's) is reported, not lost

        on_event.__eventpy_what__ = f"event method {func.__qualname__}"  # type: ignore[attr-defined]  (a log names it)
        return on_event


class EventObject(metaclass=EventClass):
    """Base of every class with event methods (added by the compiler on the class line; its
    metaclass keeps a store of a guard field on the class from replacing the field: _lang_class)."""

    # not annotated: typing.get_type_hints(Class) of a program's class lists the program's own
    __eventpy_events__ = {}  # type: dict[str, EventMethod]
    __eventpy_fields__ = frozenset()  # type: frozenset[str]
    __eventpy_locals__ = frozenset()  # type: frozenset[str]

    def __init_subclass__(cls, locals: Iterable[str] = (), events: Iterable[str] = (), **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        try:
            make_event_class(cls, locals, events)
        except Exception as e:
            stays_cut(e)
            raise

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        obj = super().__new__(cls)
        take_class_defaults(obj)
        return obj

    def close(self) -> None:
        """Unsubscribe every event method of this object. Reached through super().close() from a
        close of the program's, it leaves that to the wrapper of the outermost close (_closing)."""
        if not _closing_now(self):
            _unsubscribe(self)

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def make_event_class(cls: type, locals: Iterable[str] = (), events: Iterable[str] = ()) -> None:
    """Make `cls` an event class: its event methods, guard fields and `local` fields. Run by
    EventObject.__init_subclass__, or by the metaclass when a base's `__init_subclass__` of the
    program's did not call super() (EventClass.__init__). `locals` and `events` name the class's
    `local` fields and decorated event methods: class keywords when the class has no base of the
    program's, else given to the metaclass (DECLARED in the namespace), so that no base's hook
    receives keywords the program never wrote."""
    declared = cls.__dict__.get(DECLARED)
    if declared is not None:
        type.__delattr__(cls, DECLARED)
        locals, events = (*locals, *declared[0]), (*events, *declared[1])
    local_fields = set(getattr(cls, "__eventpy_locals__", ())) | set(locals)
    annotations = {}
    for klass in reversed(cls.__mro__):
        annotations.update(getattr(klass, "__annotations__", {}) or {})
    try:  # a class the language refuses is the program's mistake: raised from its `class` line
        for name in events:  # `event def`s under a decorator: it must have kept the `when`
            if _marker(cls.__dict__.get(name)) is None:
                raise TypeError(f"{cls.__qualname__}.{name} is an `event def`, but its decorator returned "
                                f"{cls.__dict__.get(name)!r} without the guard, so calling it would not "
                                "publish: use functools.wraps in the decorator, or call what it adds from "
                                "the method's body")
        events = _event_methods(cls, annotations)
        fields = frozenset().union(*(m.fields for m in events.values())) if events else frozenset()
        for f in fields | local_fields:
            _refuse_computed(cls, f, local=f in local_fields)
    except (GuardError, TypeError) as e:  # a guard, a signature, an override, a property
        callers_mistake(e)
        raise  # (_boundary)
    for f in fields | local_fields:
        if not isinstance(cls.__dict__.get(f), GuardField):
            default = cls.__dict__.get(f, NOTHING)
            type.__setattr__(cls, f, GuardField(f, local=f in local_fields, default=default))
            if default is not NOTHING:  # the class's own: a base's is found through the MRO
                type.__setattr__(cls, OWN_DEFAULTS, {**cls.__dict__.get(OWN_DEFAULTS, {}), f: default})
    cls.__eventpy_events__ = events
    cls.__eventpy_fields__ = fields
    cls.__eventpy_locals__ = frozenset(local_fields)
    # the close Python's lookup finds (the class's own, a base's, a plain mixin's): unless it
    # is EventObject's or already wrapped, this class gets it wrapped, so that it unsubscribes
    # (the mixin itself stays as it was: other classes may use it)
    where = next(k for k in cls.__mro__ if "close" in k.__dict__)
    found = where.__dict__["close"]
    if (inspect.isfunction(found) and where is not EventObject
            and not getattr(found, "__eventpy_closing__", False)):
        cls.close = _closing(found)  # type: ignore[method-assign]
    init = cls.__dict__.get("__init__")
    if init is None:  # inherited: wrap the original, so that this class subscribes too
        init = getattr(cls.__init__, "__wrapped__", cls.__init__)
    if not getattr(init, "__eventpy_wrapped__", False):
        cls.__init__ = _subscribing_init(init)  # type: ignore[misc]


def _refuse_computed(cls: type, field: str, local: bool) -> None:
    """A guard reads values the object stores (each store sends one): a property by the field's
    name, which Python's lookup finds first, would compute it instead, and the field put in its
    place would silently hide the property's getter and setter."""
    where, found = class_attr(cls, field)
    if isinstance(found, (property, functools.cached_property)):
        what = "a `local` field" if local else "read by a guard"
        raise TypeError(f"{cls.__qualname__}: self.{field}, {what}, is a property of {where.__qualname__}: a "
                        "guard reads fields the object stores "
                        "(each store sends the new value), not values computed on reading; read the field the "
                        "property stores (or a field kept up to date) instead, or rename one of them")
    if (hasattr(type(found), "__set__") or hasattr(type(found), "__delete__")) and not isinstance(
            found, (GuardField, types.MemberDescriptorType)):  # (a slot: its value goes to the field)
        # a data descriptor of the program's (a validating one): the field would take its place
        # and silently drop its checks
        what = "a `local` field" if local else "read by a guard"
        raise TypeError(f"{cls.__qualname__}: self.{field}, {what}, is a descriptor ({type(found).__qualname__}) "
                        f"of {where.__qualname__}, which computes or checks what the object stores; a guard reads "
                        "the field itself (each store sends the new value): check the value before storing it "
                        "(in a method, or __setattr__), or rename one of them")


_TYPES = {"int": int, "float": float, "str": str, "bool": bool}


def _marker(value: Any) -> When | None:
    """The `when(...)` return annotation of a method, also under `from __future__ import
    annotations` (where annotations are strings)."""
    if not inspect.isfunction(value):
        return None
    marker = value.__annotations__.get("return")
    if isinstance(marker, When):
        return marker
    if isinstance(marker, str) and marker.startswith("__eventpy__.when("):
        call = ast.parse(marker, mode="eval").body
        if isinstance(call, ast.Call) and all(isinstance(a, ast.Constant) for a in call.args):
            return When(*[a.value for a in call.args])
    return None


def _event_methods(cls: type, annotations: dict) -> dict[str, EventMethod]:
    """The event methods of `cls`, each with an event type of this class (DESIGN §1:
    `Class.m(...)` reaches the instances of Class and of its subclasses, no others).

    An event method the class declares, or inherits, publishes to `module.Class.m`; its instances
    also listen to the types of every base class that has `m`, with the body and guard the normal
    method lookup finds. An override must keep the parameters, or a base's events would not fit it.
    """
    prefix = _type_prefix(cls)
    events: dict[str, EventMethod] = {}
    for name, value in list(vars(cls).items()):
        marker = _marker(value)
        if marker is not None:
            events[name] = _event_method(cls, prefix, value, marker, annotations, cls.__name__)
    inherited: dict[str, list[EventMethod]] = {}  # name -> the bases' methods, nearest first
    for klass in cls.__mro__[1:]:
        for name, m in klass.__dict__.get("__eventpy_events__", {}).items():
            inherited.setdefault(name, []).append(m)
    for name, bases in inherited.items():
        if name not in events:
            # the method resolution order picks the body and guard: among the classes that
            # define the name (a class that inherited an event method holds a copy of its own,
            # for its own type, which Python's lookup would pass by: D(B, C) finds C's over B's)
            where = next(k for k in cls.__mro__ if name in k.__dict__ and not _inherited(k, name))
            nearest = where.__dict__[name]
            if not isinstance(nearest, EventMethod):  # a plain method over an event method
                what = "a plain method" if callable(nearest) else f"the value {nearest!r}"
                base = bases[0].owner.__qualname__
                if where is cls:
                    raise TypeError(f"{cls.__qualname__}.{name} overrides the event method {base}.{name} with "
                                    f"{what}; declare it `event def {name}(...) when ...:` to override it")
                order = ", ".join(k.__qualname__ for k in cls.__mro__[:-2])
                raise TypeError(f"{cls.__qualname__}.{name} is {what} of {where.__qualname__}, which hides the event "
                                f"method {base}.{name} (method resolution order: {order}); put {base} before "
                                f"{where.__qualname__} among the bases of {cls.__qualname__}, or rename one of them")
            events[name] = _event_method(cls, prefix, nearest.func, nearest.guard, annotations, nearest.private)
            events[name].inherited = True
        mine = events[name]
        for m in bases:
            if m.etype.schema != mine.etype.schema:
                raise TypeError(f"event method {cls.__qualname__}.{name}({mine.etype.describe()}) overrides "
                                f"{m.owner.__qualname__}.{name}({m.etype.describe()}): an override must keep "
                                "the parameters (names and types), or the base's events would not fit it")
            if m.etype not in mine.listens:
                mine.listens.append(m.etype)
    for name, m in events.items():
        m.attr = name  # its name in the class (`_Desk__m` for `def __m`: mangled)
        setattr(cls, name, m)
    return events


def _inherited(klass: type, name: str) -> bool:
    """Whether `klass.name` is the copy of a base's event method that `klass` holds for its own
    event type (set by _event_methods), not one its body defines."""
    return getattr(klass.__dict__[name], "inherited", False) is True


_local_classes: dict[str, int] = {}  # module.qualname of classes made in a function -> how many
_local_classes_lock = threading.Lock()


def _type_prefix(cls: type) -> str:
    """`module.Class` for the event types of a class; a class made inside a function (a factory
    called twice makes two classes of one name) gets `[2]`, `[3]`... after the first, so that its
    events reach only its own instances (processes that run the same program agree)."""
    name = f"{cls.__module__}.{cls.__qualname__}"
    if "<locals>" in cls.__qualname__:
        with _local_classes_lock:
            n = _local_classes[name] = _local_classes.get(name, 0) + 1
        if n > 1:
            name += f"[{n}]"
    return name


def _event_method(cls: type, prefix: str, func: Callable, marker: When, annotations: dict,
                  private: str | None) -> EventMethod:
    sig = inspect.signature(func)
    params = list(sig.parameters.values())
    if not params or params[0].name != "self":
        raise TypeError(f"event method {cls.__qualname__}.{func.__name__} needs `self` first")
    schema = {}
    for p in params[1:]:
        t = func.__annotations__.get(p.name)
        t = _TYPES.get(t, t) if isinstance(t, str) else t
        if t not in (int, float, str, bool):
            raise TypeError(f"event method {cls.__qualname__}.{func.__name__}: parameter {p.name!r} "
                            "needs an int, float, str or bool annotation")
        schema[p.name] = t
    etype = EventType(f"{prefix}.{func.__name__}", **schema)
    field_types = {k: _TYPES.get(v, v) if isinstance(v, str) else v for k, v in annotations.items()}
    field_types = {k: v for k, v in field_types.items() if isinstance(v, type)}
    try:
        plan = compile_guard(marker.source, etype, field_types, mode="epy", owner=private)
    except GuardError as e:
        raise _in_file(e, marker, func.__code__.co_filename) from None
    return EventMethod(func, etype, marker, plan, cls, field_types, private)


def _in_file(e: GuardError, marker: When, filename: str) -> GuardError:
    """A guard error that only the class's creation could find (a field typed by a base class
    from elsewhere), placed in the .epy file as the compiler places its own: `file:line:col`,
    the line and a caret. The guard's later lines keep their place in the file; the first starts
    at the marker's column. Without the file (compiled from a string), the guard's own text is
    shown, at the same place."""
    line = e.line + max(0, marker.line - 1)
    column = e.column + (marker.column - 1 if e.line == 1 and marker.column else 0)
    if not e.line:
        return GuardError(e.message, filename=filename)
    text = "".join(linecache.getlines(filename))
    guard_lines = source_lines(marker.source)
    shown = source_lines(text)
    if not (line <= len(shown) and guard_lines[e.line - 1].strip() and guard_lines[e.line - 1].strip() in shown[line - 1]):
        text = "\n" * max(0, marker.line - 1) + " " * max(0, marker.column - 1) + marker.source
    return GuardError(e.message, text, line, column, filename)

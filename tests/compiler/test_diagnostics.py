"""User mistakes are diagnostics (`path:line:col: error: ...`, the line, a caret), never tracebacks."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap

import pytest

from eventpy.compiler import CompileError, CompileErrors, compile_source

BASE = textwrap.dedent('''
    class M:
        def __init__(self, limit: float, name: str):
            self.limit = limit
            self.name = name

        event def quote(self, firm: str, price: float) when firm == "IBM" and price < self.limit:
            self.limit = price
''').lstrip("\n")


def diag(text: str) -> CompileError:
    with pytest.raises((CompileError, CompileErrors)) as info:
        compile_source(text, "m.epy")
    e = info.value
    return e.errors[0] if isinstance(e, CompileErrors) else e


@pytest.mark.parametrize("old, new, line, at, words", [
    ('price < self.limit', 'open(price) < self.limit', 6, "open(", "guard calls open(); only abs"),
    ('price: float)', 'price)', 6, "price)", "event parameter 'price' has no annotation"),
    ('price: float)', 'price: list)', 6, "price: list", "unsupported type"),
    ('price < self.limit', 'price < limit', 6, "limit:", "did you mean self.limit?"),
    ('price < self.limit', 'price < bogus', 6, "bogus", "neither a parameter of quote nor a field"),
    ('firm == "IBM"', 'firm == 3', 6, "firm ==", "attribute 'firm' of type str cannot be compared with 3"),
    ('event def quote', 'def quote', 6, "when", "`when` guards belong to event methods"),
    ('self.limit = price', 'release self.limit', 7, "release", "limit is not declared `local` in class M; declare "
     "it in the class body: `local limit: float = VALUE`"),
    ('self.limit = price', 'x = (', 7, "(", "never closed"),
    ('price: float)', 'price: float, *, n: int)', 6, "n: int", "'n' is keyword-only"),
    ('event def quote(self, firm: str, price: float) when firm == "IBM" and',
     'event def quote(self) when', 6, "event def quote(self)", "has no parameters besides self; an event carries at least"),
    ('price: float)', 'price: float, *more)', 6, "more", "remove *more"),
    ('price: float)', 'price: float, _n: int)', 6, "_n", "an event's attributes cannot start with '_' or be get,"),
    ('firm: str, price: float)', 'fïrm: str, price)', 6, "price)", "'price' has no annotation"),
    ("self.limit = limit", "local limit: float = limit", 3, "local", "directly in the class body"),
    ("class M:", "class M:\n    local probe: float", 2, "local", "local field probe needs a default"),
    ('class M:', '@dataclasses.dataclass(eq=False)\nclass M:', 1, "dataclasses", "cannot be a @dataclass"),
    ('firm == "IBM"', 'firm in ["IBM", "HP"]', 6, '[', 'takes a set literal {...} or a set-valued field'),
    ('firm == "IBM"', 'firm in ("IBM", "HP")', 6, ', "HP")', 'takes a set literal {...} or a set-valued field'),
    ('price < self.limit', '(price < self.limit', 6, '(price', "'(' was never closed in the guard"),
    ('self.limit = price', 'release self.limit + 1', 7, "+", "`release` takes fields only"),
    ('self.limit = price', 'release self.limit, 2', 7, "2", "must be followed by self.FIELD"),
    ('self.limit = price', 'release(self.limit)', 7, "release(",
     "`release` is a statement, not a function: write `release self.limit`"),
    ('self.limit = price', 'release(self.limit, self.name)', 7, "release(", "write `release self.limit, self.name`"),
    ('event def quote', 'async event def quote', 6, "async", "an event method cannot be async"),
    ('self.limit = price', 'release other.limit', 7, "release", "works on the object's own fields"),
    ('self.limit = price', 'x = last other.limit', 7, "last", "(not other.FIELD)"),
    ('event def quote', 'event async def quote', 6, "event", "asyncio.run_coroutine_threadsafe(coro, loop)"),
    ('self.limit = price', 'print(last(self.limit))', 7, "last(",
     "`last` is an operator, not a function: write `last self.limit`"),
    # CPython gives an error in an f-string's field a column in the field's own text: it was column 2
    ('self.limit = price', 'x = f"{f\'{last self.}\'}"', 7, "last self.}", "f-string: invalid syntax"),
    ('self.limit = price', 'x = f"{price} {price +}"', 7, "}\"", "f-string: invalid syntax"),
    # a generator's body never runs when it is called: the deliveries did nothing, silently
    ('self.limit = price', 'self.limit = yield price', 7, "yield", "an event method cannot be a generator"),
    ('self.limit = price', 'if price:\n            yield from ()', 8, "yield from", "its body would never run"),
    ('price < self.limit', 'price < last self.limit', 6, "self.limit:",
     "`last` is not needed in a guard: a guard reads the released value of a `local` field already"),
    # a second definition of an event method's name in the class body: Python keeps the last, so
    # the event method, its guard and its subscription were silently gone (Class.quote(...) called
    # the plain def, with the firm as self, and published nothing)
    ('self.limit = price', 'self.limit = price\n\n    def quote(self, x):\n        return x', 9, "def quote",
     "quote is defined again here, after the event method quote on line 6"),
    ('self.limit = price', 'self.limit = price\n\n    event def quote(self, firm: str, price: float) when price > '
     'self.limit:\n        pass', 9, "event def quote", "join the two guards with `or`"),
    ('self.limit = price', 'self.limit = price\n\n    quote = None', 9, "quote", "rename one of them"),
    ('price < self.limit', '(limit := price) < self.limit', 6, ":=", "a guard assigns nothing"),
    # a guard broken over lines, or without its ':': each said only "the def header has no ':'"
    ('"IBM" and price', '"IBM" and\n            price', 6, "and",
     "the guard goes on after 'and' on the next line, outside brackets, where Python ends the header; wrap the "
     "guard in parentheses: `when (...):`"),
    ('price < self.limit:', 'price < self.limit  # cheap', 6, "  # cheap",
     "the header of the event method ends without ':' after its guard; end it with ':'"),
    ('float) when', 'float)\n        when', 7, "when", "`when` goes on the line of its `event def`, after the parameters"),
    # said "name 'None' is neither a parameter of quote nor a field", as if None were a typo
    ('firm == "IBM"', 'firm != None', 6, "None", "None is not a value a guard compares with"),
    ('firm == "IBM"', 'firm in {"IBM", 3}', 6, '{"IBM"', "mixes values of kinds num, str; the values of one set "
     "are all of the kind of the attribute it is tested against"),
    # elapsed() outside a guard compiled, then raised NameError when the line ran (in an event
    # method's body: every delivery logged as a failure of the body)
    ('self.limit = price', 'self.limit = price - elapsed()', 7, "elapsed()", "elapsed() can be read only in a guard"),
    ('self.name = name', 'self.name = name\n        self.t0 = elapsed()', 5, "elapsed()",
     "outside a guard, eventpy.elapsed(self) reads it for an event published now"),
])
def test_diagnostics(old, new, line, at, words):
    text = BASE.replace(old, new, 1)
    col = text.splitlines()[line - 1].index(at) + 1
    e = diag(text)
    assert (e.line, e.column) == (line, col), e.render()
    assert words in e.message, e.render()
    rendered = e.render().splitlines()
    assert rendered[0].startswith(f"m.epy:{line}:{col}: error: ")
    assert rendered[2].index("^") == 4 + col - 1


@pytest.mark.parametrize("text, line, words", [
    ("def f():\nevent def quote(self, price: float):\n    pass\n", 2, "expected an indented block"),
    ("class M:\n    def f(self):\n    event def quote(self, price: float) when price > 1:\n        pass\n", 3,
     "expected an indented block"),
    ("if True:\nlocal y: int = 0\n", 2, "expected an indented block"),
    ("class M:\n    def f(self):\n    local y: int = 0\n", 3, "expected an indented block"),
    ("event def quote(self, price: float):\n    pass\n", 1, "`event def` must be a method"),
    ("class M:\n    event def quote(price: float):\n        pass\n", 2, "needs `self` as its first parameter"),
])
def test_a_statement_that_starts_with_event_or_local_is_named_at_that_word(text, line, words):
    # Python names the lowered statement by its `def` (or field name): the caret was after the
    # word the user wrote first
    e = diag(text)
    lines = text.splitlines()
    col = len(lines[line - 1]) - len(lines[line - 1].lstrip()) + 1
    assert (e.line, e.column) == (line, col) and words in e.message, e.render()


def test_release_and_last_are_calls_where_the_program_defines_them():
    text = BASE.replace("self.limit = price", "release(self.limit)\n        print(last(self.name))", 1)
    compile_source(text + "\ndef release(x):\n    pass\n\nfrom helpers import last\n", "m.epy")


@pytest.mark.parametrize("binding", [
    "from helpers import *",  # may bind release (a helper of the program)
    "try:\n    pass\nexcept Exception as release:\n    pass",
    "match 1:\n    case [release]:\n        pass",
    "match {}:\n    case {**release}:\n        pass",
])
def test_release_is_a_call_where_the_program_binds_it_otherwise(binding):
    # these bindings are not Name stores: the diagnostic refused valid programs
    text = BASE.replace("self.limit = price", "release(self.limit)", 1)
    compile_source(text + "\n" + binding + "\n", "m.epy")


def test_a_guard_field_no_method_assigns_is_a_compile_error_with_a_suggestion():
    text = BASE.replace("price < self.limit", "price < self.limt", 1)
    e = diag(text)
    col = text.splitlines()[5].index("self.limt") + 1
    assert (e.line, e.column) == (6, col), e.render()
    assert "reads self.limt, which no method of M assigns" in e.message
    assert e.message.endswith("did you mean self.limit?")


# a guard over three lines; `@` marks where the diagnostic must point (then removed)
GUARD_LAYOUTS = [
    '(firm == "IBM"\n            and price > 0\n            and {})',
    'firm == "IBM" \\\n            and price > 0 \\\n\t\tand {}',
    '\\\n      firm == "IBM" and (price >\n 0 and {})',
    # a comment and a string that spell the field before the guard reads it
    '(firm != "self.limt"  # not self.limt: the field\n   and price > 0\n  and {})',
]


@pytest.mark.parametrize("layout", GUARD_LAYOUTS)
@pytest.mark.parametrize("mistake, words", [
    ("@pricee > 0", "name 'pricee' is neither"),
    ("price < @self.limt", "reads self.limt, which no method of M assigns"),
    ("@open(price) > 0", "guard calls open()"),
    ("price < @> 3", "unexpected '>'"),
])
def test_a_diagnostic_on_a_later_line_of_a_guard_points_at_its_token(layout, mistake, words):
    text = BASE.replace('firm == "IBM" and price < self.limit', layout.format(mistake), 1)
    for newline in ("\n", "\r\n"):
        at = text.index("@")
        line, col = text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
        e = diag(text.replace("@", "").replace("\n", newline))
        assert (e.line, e.column) == (line, col) and words in e.message, e.render()


def test_a_field_typed_by_the_parameter_it_is_assigned_from_is_checked_at_compile_time():
    text = BASE.replace("limit: float, name", "limit: str, name", 1).replace("self.limit = price", "print(price)")
    e = diag(text)
    assert e.line == 6 and "cannot be compared with field self.limit" in e.message, e.render()
    assert e.message.endswith("(self.limit is assigned from parameter limit: str on line 3)"), e.render()


def test_int_and_float_assignments_type_a_field_as_a_number():
    text = (BASE.replace("name: str", "name: int", 1).replace("self.name = name", "self.limit = name", 1)
            .replace('firm == "IBM" and price < self.limit', "firm == self.limit", 1))
    e = diag(text)  # a number where the guard compares a str: the union of int and float is known
    assert "cannot be compared with field self.limit" in e.message and "(self.limit is assigned from" in e.message


@pytest.mark.parametrize("changes", [
    [("self.name = name", "self.limit = float(name)")],  # an assignment eventpyc cannot type
    [("self.name = name", "self.limit = name")],          # a str beside a float: the run time checks
    [("name: str", "name: int"), ("self.name = name", "self.limit = name")],  # int and float: a number
    [("limit: float", "limit: str"), ("self.limit = limit", "limit = float(limit)\n        self.limit = limit"),
     ("self.limit = price", "pass")],                     # the parameter is rebound before it is stored
])
def test_field_types_are_inferred_only_when_every_assignment_agrees(changes):
    text = BASE
    for old, new in changes:
        text = text.replace(old, new, 1)
    compile_source(text, "m.epy")  # compiles: nothing known contradicts the guard


@pytest.mark.parametrize("change", [
    ("class M:", "class M(Base):"),                                   # a base class may set it
    ("class M:", "@decorate\nclass M:"),                              # so may a decorator
    ("self.name = name", "setattr(self, 'limt', name)"),              # or the class, dynamically
])
def test_a_field_that_may_be_set_elsewhere_is_left_to_run_time(change):
    text = BASE.replace("price < self.limit", "price < self.limt", 1).replace(*change, 1)
    compile_source(text, "m.epy")  # no CompileError: the runtime checks it when an object is made


def test_a_yield_in_a_function_inside_an_event_method_is_that_functions():
    text = BASE + "        def gen():\n            yield price\n        self.got = list(gen())\n"
    assert "def gen():" in compile_source(text, "m.epy")


@pytest.mark.parametrize("name, field", [("LIMIT", "limit_value"), ("CAP", "cap")])
def test_a_module_name_in_a_guard_says_to_keep_it_in_a_field(name, field):
    # it said only that the name was neither a parameter nor a field, not what to do
    text = f"import os\nfrom x import CAP\nLIMIT = 10.0\n" + BASE.replace("price < self.limit", f"price < {name}")
    e = diag(text)
    assert (e.line, e.column) == (9, text.splitlines()[8].index(name) + 1), e.render()
    assert f"keep it in a field, `self.{field} = {name}` in __init__, and read self.{field}" in e.message


@pytest.mark.parametrize("method, at, words", [
    # a store past the field's descriptor: the field changed and the subscription never learnt
    ("def __setattr__(self, name, value):\n        self.__dict__[name] = value", "self.__dict__[",
     "may store a field a guard reads (limit), past the field"),
    ("def set(self, v):\n        self.__dict__['limit'] = v", "self.__dict__[", "write self.limit = ..."),
    ("def set(self, **kw):\n        vars(self).update(kw)", "vars(", "store each with setattr(self, name, value)"),
    ("def set(self, v):\n        self.__dict__.update({'limit': v})", "self.__dict__", "this stores self.limit"),
])
def test_a_store_of_a_guard_field_into_the_objects_dict_is_a_compile_error(method, at, words):
    text = BASE + "\n    " + method + "\n"
    line = len(text.splitlines())
    e = diag(text)
    assert (e.line, e.column) == (line, text.splitlines()[line - 1].index(at) + 1), e.render()
    assert words in e.message and "its subscription would not learn the new value" in e.message, e.render()


def test_stores_into_the_objects_dict_that_reach_no_guard_field_compile():
    methods = ("def __init__(self, **kw):\n        self.__dict__.update(kw)\n"   # before it subscribes
               "    def other(self, v):\n        self.__dict__['name'] = v\n        vars(self).update(name=v)\n"
               "        self.__dict__.setdefault('limit', 1.0)\n")
    compile_source(BASE.replace("    def __init__(self, limit: float, name: str):", "    def make(self, limit, name):")
                   + "\n    " + methods, "m.epy")


@pytest.mark.parametrize("deco", ["staticmethod", "classmethod", "property", "functools.cached_property"])
def test_a_decorator_that_makes_an_event_method_no_method_is_a_compile_error(deco):
    # it was a TypeError when the class was made, saying to use functools.wraps
    text = BASE.replace("    event def quote", f"    @{deco}\n    event def quote", 1)
    e = diag(text)
    assert (e.line, e.column) == (6, 6), e.render()
    assert f"@{deco} cannot decorate an event method" in e.message and f"remove @{deco}" in e.message


def test_del_of_a_guard_field_is_a_compile_error():
    # it raised AttributeError when the line ran
    text = BASE + "\n    def drop(self):\n        del self.name, self.limit\n"
    e = diag(text)
    assert (e.line, e.column) == (10, 24), e.render()
    assert "self.limit is read by a guard and cannot be deleted" in e.message
    # a plain class nested in it has a self of its own
    compile_source(BASE + "\n    class Plain:\n        def drop(self):\n            del self.limit\n", "m.epy")


def test_event_def_outside_a_class():
    e = diag("event def f(self, x: int):\n    pass\n")
    assert "directly inside a class body" in e.message and e.line == 1


LOCAL = BASE.replace("class M:", "class M:\n    local probe: float = 0.0", 1)


@pytest.mark.parametrize("extra, at, words", [
    # outside any class there is no object whose local copy could be released
    ("def helper(self):\n    release self.probe", "release",
     "`release self.probe` is outside any class: `release` works on a `local` field of the object a method"),
    ("release self.probe", "release", "put it in a method of the class that declares `local probe: TYPE = VALUE`"),
    ("def f(self):\n    return last self.probe", "last", "`last self.probe` is outside any class"),
    ("class N:\n    local z: int = 0\n    release self.z", "release",
     "`release self.z` is in the body of class N, outside its methods (no self there): put it in a method of N"),
    # another class's local field is not this one's
    ("class N:\n    def f(self):\n        release self.probe", "release",
     "probe is not declared `local` in class N; declare it in the class body: `local probe: TYPE = VALUE`"),
    ("class N:\n    def f(self):\n        release self.limit", "release", "limit is not declared `local` in class N"),
])
def test_release_and_last_outside_the_class_that_declares_the_field(extra, at, words):
    text = LOCAL + "\n" + extra + "\n"
    line = len(text.splitlines()) - extra.count("\n")
    line += next(k for k, ln in enumerate(extra.splitlines()) if at in ln)
    e = diag(text)
    assert (e.line, e.column) == (line, text.splitlines()[line - 1].index(at) + 1), e.render()
    assert words in e.message, e.render()


@pytest.mark.parametrize("method, at, where", [
    ("def nudge(self, by: float = last self.probe):\n        return by", "last", "the default value of parameter by"),
    ("def nudge(self, *, by=last self.probe):\n        return by", "last", "the default value of parameter by"),
    ("def nudge(self,\n              by=(1 +\n                  last self.probe)):\n        return by", "last",
     "the default value of parameter by"),
    ("def nudge(self, by=last self.probe): return last self.probe", "last", "the default value of parameter by"),
    ('def nudge(self, s=f"{last self.probe}"):\n        return s', "last", "the default value of parameter s"),
    ("def nudge(self, f=lambda: last self.probe):\n        return f()", "last", "the default value of parameter f"),
    ("def nudge(self, by: last self.probe = 0):\n        return by", "last", "an annotation"),
])
def test_last_in_a_method_header_is_a_compile_error(method, at, where):
    # a default is computed once, when the class is made: no object then (it was a NameError
    # for self when the class was made, or read a global self)
    text = LOCAL + "\n    " + method + "\n"
    lines = text.splitlines()
    start = next(k for k, ln in enumerate(lines) if "def nudge" in ln)
    line = next(k for k in range(start, len(lines)) if at in lines[k]) + 1  # the first after the def
    e = diag(text)
    assert (e.line, e.column) == (line, lines[line - 1].index(at) + 1), e.render()
    assert f"`last self.probe` in {where} of M.nudge" in e.message, e.render()
    assert "once, when class M is made" in e.message and "no self" in e.message, e.render()


@pytest.mark.parametrize("member, words", [
    # made when the class is made: its `self` is no parameter, a global when it runs (it compiled)
    ("x = lambda: last self.probe", "in a lambda in the body of class M, outside its methods"),
    ("x = (lambda n:\n        n + last self.probe)", "in a lambda in the body of class M, outside its methods"),
    ("x = lambda: lambda: last self.probe", "in a lambda in the body of class M, outside its methods"),
    # a lambda on the line is not around the `last` (it was taken for a method by its line)
    ("x = (lambda: 0) if last self.probe else 1", "is in the body of class M, outside its methods"),
])
def test_last_in_a_lambda_or_expression_of_the_class_body_is_a_compile_error(member, words):
    text = LOCAL + "\n    " + member + "\n"
    lines = text.splitlines()
    line = max(k for k, ln in enumerate(lines) if "last self" in ln) + 1
    e = diag(text)
    assert (e.line, e.column) == (line, lines[line - 1].index("last self") + 1), e.render()
    assert words in e.message and "no self" in e.message and "method of M" in e.message, e.render()


def test_a_lambda_of_the_class_body_that_takes_self_is_a_method_and_reads_last():
    ns: dict = {"__name__": "m"}
    member = "peek = lambda self: last self.probe\n    both = lambda self: lambda: last self.probe\n"
    exec(compile(compile_source(LOCAL + "\n    " + member, "m.epy", "m"), "m.epy", "exec"), ns)
    m = ns["M"].__new__(ns["M"])
    assert (m.peek(), m.both()()) == (0.0, 0.0)


def test_last_in_a_method_body_or_in_a_nested_header_reads_the_released_value():
    methods = ("def nudge(self): return last self.probe\n"
               "    def inner(self):\n"
               "        def f(by=last self.probe):\n"
               "            return by\n"
               "        return f()\n"
               "    def late(self, by=None):\n"
               "        return last self.probe if by is None else by\n")
    ns: dict = {"__name__": "m"}
    exec(compile(compile_source(LOCAL + "\n    " + methods, "m.epy", "m"), "m.epy", "exec"), ns)
    m = ns["M"].__new__(ns["M"])
    assert (m.nudge(), m.inner(), m.late()) == (0.0, 0.0, 0.0)


def test_last_in_a_class_made_inside_a_method_reads_the_methods_self():
    # Python resolves `self` in the nested class's body, its methods' bodies and headers to the
    # enclosing method's object (they were refused: "no self there", "not declared local in Snap")
    methods = ("def snap(self):\n"
               "        class Snap:\n"
               "            value = last self.probe\n"
               "            def peek(s, by=last self.probe):\n"
               "                return (by, last self.probe)\n"
               "            release self.probe\n"
               "        return Snap.value, Snap().peek()\n")
    ns: dict = {"__name__": "m"}
    exec(compile(compile_source(LOCAL + "\n    " + methods, "m.epy", "m"), "m.epy", "exec"), ns)
    m = ns["M"].__new__(ns["M"])
    m.probe = 4.0
    assert m.snap() == (0.0, (0.0, 4.0))


@pytest.mark.parametrize("method, words", [
    # a method of the nested class that takes its own self reads that object: it must declare it
    ("def snap(self):\n        class Snap:\n            def peek(self):\n                return last self.probe",
     "probe is not declared `local` in class Snap"),
    # a private name in the nested class is Snap's (Python mangles by the innermost class)
    ("def snap(self):\n        class Snap:\n            v = last self.__probe",
     "Python names self.__probe there _Snap__probe (by the innermost class), not M's field"),
])
def test_last_in_a_class_made_inside_a_method_that_reads_another_field(method, words):
    e = diag(LOCAL.replace("local probe", "local __probe") + "\n    " + method + "\n"
             if "__probe" in method else LOCAL + "\n    " + method + "\n")
    assert words in e.message, e.render()


def test_a_local_field_of_the_class_the_compiler_cannot_see_is_left_to_run_time():
    text = "from base import Base\n\nclass N(Base):\n    def f(self):\n        release self.probe\n"
    assert "__eventpy__.release(self, \"probe\")" in compile_source(text, "m.epy")
    # a base in the file: its local fields are the subclass's
    compile_source(LOCAL + "\nclass N(M):\n    def f(self):\n        release self.probe\n", "m.epy")


def test_eventpyc_exit_status_and_no_traceback(tmp_path):
    bad = tmp_path / "bad.epy"
    bad.write_text(BASE.replace("price < self.limit", "open(price) < 1"))
    good = tmp_path / "good.epy"
    good.write_text(BASE)
    out = subprocess.run([sys.executable, "-m", "eventpy.compiler.cli", str(bad)], capture_output=True, text=True)
    assert out.returncode == 1 and "Traceback" not in out.stderr and "bad.epy:6:" in out.stderr
    out = subprocess.run([sys.executable, "-m", "eventpy.compiler.cli", "--check", str(tmp_path)],
                         capture_output=True, text=True)
    assert out.returncode == 1 and not (tmp_path / "good.py").exists()
    out = subprocess.run([sys.executable, "-m", "eventpy.compiler.cli", str(good)], capture_output=True, text=True)
    assert out.returncode == 0 and (tmp_path / "good.py").exists()


def test_eventpyc_keeps_the_bytes_of_a_file_without_constructs_and_the_line_endings_of_one_with(tmp_path):
    plain = tmp_path / "plain.epy"
    plain.write_bytes(b"x = 1\r\nprint(x)  \r\n\n# mixed endings\r\n")
    mine = tmp_path / "mine.epy"
    mine.write_bytes(BASE.replace("\n", "\r\n").encode())
    for src in (plain, mine):
        out = subprocess.run([sys.executable, "-m", "eventpy.compiler.cli", str(src)], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
    assert (tmp_path / "plain.py").read_bytes() == plain.read_bytes()
    written = (tmp_path / "mine.py").read_bytes()
    assert written.count(b"\r\n") == written.count(b"\n") == mine.read_bytes().count(b"\n")


def test_eventpyc_never_overwrites_its_source_and_reports_an_unwritable_output(tmp_path):
    plain = tmp_path / "plain.py"
    plain.write_text(BASE)
    out = subprocess.run([sys.executable, "-m", "eventpy.compiler.cli", str(plain)], capture_output=True, text=True)
    assert out.returncode == 1 and "would overwrite the source" in out.stderr
    assert plain.read_text() == BASE
    good = tmp_path / "good.epy"
    good.write_text(BASE)
    target = tmp_path / "no" / "such" / "dir.py"
    out = subprocess.run([sys.executable, "-m", "eventpy.compiler.cli", str(good), "-o", str(target)],
                         capture_output=True, text=True)
    assert out.returncode == 1 and out.stderr.startswith(f"{target}: error: cannot write: "), out.stderr
    assert "Traceback" not in out.stderr


def test_mutated_sources_give_diagnostics_never_tracebacks():
    rng = random.Random(5)
    tokens = ["event", "def", "when", "local", "release", "last", "self", ".", ":", "(", ")", "==",
              "<", "and", "not", "'x'", "3", "\n", "    ", "release self.limit", "last self.x", ","]
    for _ in range(300):
        text = list(BASE)
        for _ in range(rng.randint(1, 4)):
            k = rng.randrange(len(text) + 1)
            if rng.random() < 0.5 and text:
                del text[k - 1:k + rng.randint(0, 5)]
            else:
                text.insert(k, rng.choice(tokens))
        try:
            compile_source("".join(text), "m.epy")
        except (CompileError, CompileErrors) as e:
            assert e.render()


def test_an_internal_error_names_the_file_and_line(monkeypatch):
    from eventpy.compiler import InternalError, _analysis

    def broken(self, fn, info):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(_analysis.Analysis, "_check_guard", broken)
    with pytest.raises(InternalError, match=r"m.epy:6: internal error in eventpyc \(ZeroDivisionError: boom\)"):
        compile_source(BASE, "m.epy")


@pytest.mark.parametrize("text, line, column, words", [
    ("x = 1\ny = \x00 2\n", 2, 5, "a NUL character (\\x00), which Python source cannot hold"),
    ("x = '\ud800'\n", 1, 6, "a lone surrogate (U+D800), which no encoding can store"),
    # lark counts guard lines at "\n" only: the message's line was looked up with splitlines
    (BASE.replace("price < self.limit", "price < \u2028.limit"), 6, 83, "unexpected character '\\u2028'"),
])
def test_characters_python_or_the_guard_cannot_take_are_diagnostics(text, line, column, words):
    e = diag(text)
    assert (e.line, e.column) == (line, column) and words in e.message, e.render()
    assert e.render().encode()  # printable: a lone surrogate is shown as U+FFFD


@pytest.mark.parametrize("text, line, column", [
    # Python gives this IndentationError offset 0: it showed as column 0
    ("class P:\n    local x: int = 0\n    def f(self):\nrelease self.x\n", 4, 1),
    # on a guard's later line the lowered text is a string literal: the column was past the line's end
    (BASE.replace('"IBM" and price < self.limit:\n        self.limit = price', '"IBM" and price \\\n< self.limit:'),
     7, 14),
])
def test_a_syntax_error_python_places_oddly_is_in_the_line(text, line, column):
    e = diag(text)
    assert (e.line, e.column) == (line, column) and "expected an indented block" in e.message, e.render()


def test_a_file_python_could_not_decode_is_a_diagnostic(tmp_path):
    bad = tmp_path / "bad.epy"
    bad.write_bytes(b'x = 1\ns = "caf\xe9"\n')
    for run in (["-m", "eventpy.compiler.cli", "--check"], ["-m", "eventpy", "run"]):
        out = subprocess.run([sys.executable, *run, str(bad)], capture_output=True, text=True)
        assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
        assert out.stderr.startswith(f"{bad}:2:9: error: cannot read the file: byte 0xe9 is not valid utf-8"), \
            out.stderr



@pytest.mark.parametrize("old, new, line", [
    ("self.limit:\n        self.limit = price", "self.limit:  print(price, end=)", 6),
    ("self.limit = price", 'release self.limit; y = ("é" +)', 7),
])
def test_a_syntax_error_in_a_rewritten_line_has_its_column_in_the_epy_line(tmp_path, old, new, line):
    # with the file on disk, CPython would measure the rewritten line's offset against the file's line
    text = BASE.replace(old, new).replace("class M:", "class M:\n    local limit: float = 1.0").replace(
        "self.limit = limit", "pass")
    line += 1
    path = tmp_path / "m.epy"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CompileError) as info:
        compile_source(text, str(path))
    e = info.value
    assert (e.line, e.column) == (line, text.splitlines()[line - 1].rindex(")") + 1), e.render()


SETS = textwrap.dedent('''
    class W:
        def __init__(self):
            self.names = {"IBM", "HP"}

        event def q(self, sym: str, ok: bool) when sym in self.names:
            pass
''').lstrip("\n")


@pytest.mark.parametrize("old, new, words", [
    ('{"IBM", "HP"}', '{"IBM", 3}', "self.names gets member 3 (int), which can never equal attribute 'sym' (str)"),
    ('self.names = {"IBM", "HP"}', 'self.names: set[int] = set()', "self.names gets members of type int"),
    ('self.names = {"IBM", "HP"}', 'self.names = frozenset([True])', "member True (bool)"),
])
def test_set_members_that_could_never_match_are_compile_errors_at_the_assignment(old, new, words):
    e = diag(SETS.replace(old, new))
    assert (e.line, e.column) == (3, 9) and words in e.message, e.render()


def test_set_members_of_the_attribute_type_compile():
    compile_source(SETS.replace('{"IBM", "HP"}', 'frozenset(("IBM",))') + "    def f(self):\n        self.names = set()\n",
                   "m.epy")



@pytest.mark.parametrize("child, words", [
    # what the runtime refuses at the subclass's `class` line (lang._event_methods): `eventpyc
    # --check` passed both, and the program then failed when it ran
    ("    event def quote(self, firm: str, px: float) when px < self.limit:\n        pass\n",
     "event method Child.quote(firm: str, px: float) overrides M.quote(firm: str, price: float) (line 6): an "
     "override must keep the parameters"),
    ("    event def quote(self, firm: str, price: int) when price < self.limit:\n        pass\n",
     "overrides M.quote(firm: str, price: float)"),
    ("    def quote(self, firm, price):\n        pass\n",
     "Child.quote overrides the event method M.quote (line 6) with a plain method; declare it `event def"),
])
def test_an_override_in_the_same_file_that_the_runtime_refuses_is_a_diagnostic(child, words):
    text = BASE + "\n\nclass Child(M):\n    def __init__(self, limit: float):\n        super().__init__(limit, 'c')\n\n" + child
    e = diag(text)
    assert (e.line, e.column) == (BASE.count("\n") + 7, 5) and words in e.message, e.render()


def test_an_override_that_keeps_the_parameters_compiles():
    text = BASE + ("\n\nclass Child(M):\n    event def quote(self, firm: str, price: float) when price > self.limit:\n"
                   "        super().quote(firm, price)\n\n\nclass Grandchild(Child):\n    def other(self):\n        pass\n")
    compile_source(text, "m.epy")


@pytest.mark.parametrize("word", ["release", "x = last"])
def test_a_typo_of_a_local_field_after_release_or_last_names_the_field(word):
    # it said to declare `local levle: TYPE = VALUE`, a second field, for a typo of the first
    text = BASE.replace("class M:\n", "class M:\n    local level: float = 0.0\n\n", 1).replace(
        "self.limit = price", f"self.level = price\n        {word} self.levle", 1)
    e = diag(text)
    assert e.line == 10, e.render()
    verb = word.split()[-1]
    assert e.message == (f"`{verb} self.levle`: the class has no field levle; did you mean `{verb} self.level`? "
                         "(self.level is declared `local` in class M)"), e.render()


def test_elapsed_outside_a_guard_is_fine_where_the_program_defines_it():
    text = "import time\n\ndef elapsed():\n    return time.time()\n\n" + BASE.replace(
        "self.limit = price", "self.limit = price - elapsed()")
    compile_source(text, "m.epy")  # the program's own function: no diagnostic
    compile_source(BASE.replace("price < self.limit", "price < self.limit + elapsed()"), "m.epy")  # in a guard

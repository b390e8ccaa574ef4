"""Find the .epy constructs with Python's tokenizer and lower them in place to plain Python.

Every line keeps its number; a file without constructs comes out as exactly its own text.

    event def m(self, a: T) when GUARD:   ->  def m(self, a: T) -> __eventpy__.when('GUARD', L, C):
    local f: T = v                         ->  f: T = v                (f recorded as a local field)
    release self.f                         ->  __eventpy__.release(self, "f")
    release self.a, self.b                 ->  __eventpy__.release(self, "a", "b")   (both at once)
    last self.f                            ->  __eventpy__.last(self, "f")

The five words are constructs only where Python itself could not read them (`event def`,
`release self`, `last self`, `local NAME :` at the start of a statement, `when` in an event def
header); everywhere else they stay ordinary names. Strings and comments are tokens, so nothing
inside them is touched, except `last self.f` in a replacement field of an f-string (or of an f-string
nested in one), which Python 3.11 hands over as one token: there it becomes
`__eventpy__.released(self).f`, which needs no quote.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from functools import lru_cache

from lark import Lark
from lark.exceptions import UnexpectedInput

from .._names import identifier, mangle
from ..guards._parse import grammar_text
from ._diagnostics import CompileError
from ._lines import lines as split_lines

NAME, OP = tokenize.NAME, tokenize.OP
_SKIP = {tokenize.NL, tokenize.COMMENT}
_STMT_START = {tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, None}
_ASYNC_EVENT = {("async", "event", "def"), ("event", "async", "def")}


@dataclass
class EventDef:
    line: int  # of `event`
    column: int
    name: str
    guard: str | None
    guard_line: int = 0
    guard_column: int = 0


@dataclass
class Lowered:
    text: str
    events: list[EventDef] = field(default_factory=list)
    locals: dict[int, str] = field(default_factory=dict)  # line -> local field declared there
    local_columns: dict[int, int] = field(default_factory=dict)  # line -> column of `local`
    releases: list[tuple[int, int, str]] = field(default_factory=list)  # line, col, field
    lasts: list[tuple[int, int, str]] = field(default_factory=list)
    # line -> (original column, length change, replacement length) of each one-line edit
    shifts: dict[int, list[tuple[int, int, int]]] = field(default_factory=dict)
    # (line, column from 0) of each `event` and `local` that starts a statement and was removed:
    # Python names the statement (`expected an indented block`, `unexpected indent`, the def of
    # a misplaced `event def`) by the word after it, which the user did not write first
    heads: set[tuple[int, int]] = field(default_factory=set)

    def original_column(self, line: int, column: int) -> int:
        """Map a 1-based column of the lowered text back to the .epy source."""
        shift = 0
        for start, delta, length in sorted(self.shifts.get(line, ())):
            if column - 1 == start + shift and (line, start) in self.heads:
                return start + 1
            if column - 1 >= start + shift + length:
                shift += delta
            elif column - 1 >= start + shift:
                return start + 1  # inside a replacement: point at what it replaced
        return column - shift

    @property
    def changed(self) -> bool:
        return bool(self.events or self.locals or self.releases or self.lasts)


@lru_cache(maxsize=8)
def _parser(start: str) -> Lark:
    return Lark(grammar_text(), start=start, parser="lalr")


def _check(start: str, text: str, line: int, column: int, path: str, source: str) -> None:
    """Parse the extension part of a construct with its grammar rule."""
    try:
        _parser(start).parse(text)
    except UnexpectedInput as e:
        raise CompileError(f"malformed {start.replace('_', ' ')}: {text.strip()!r}", line,
                           column + max(0, getattr(e, "column", 1) - 1), path, source) from None


def lower(source: str, path: str = "<epy>") -> Lowered:
    if not any(word in source for word in ("event", "when", "local", "release", "last")):
        return Lowered(source)  # no construct can be there: plain Python, as it is
    tokens: list[tokenize.TokenInfo] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            tokens.append(tok)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # lower what came before; Python then reports the error where Python puts it
    edits: list[tuple[tuple[int, int], tuple[int, int], str]] = []  # (start, end, replacement)
    out = Lowered(source)
    sig = [t for t in tokens if t.type not in _SKIP]
    prev_type = None
    prev_str = ""
    classes = _Classes()
    i = 0
    while i < len(sig):
        t = sig[i]
        classes.see(sig, i)
        at_start = prev_type in _STMT_START or (prev_type == OP and prev_str == ";")
        nxt = sig[i + 1] if i + 1 < len(sig) else None
        nxt2 = sig[i + 2] if i + 2 < len(sig) else None
        if t.type == NAME and nxt is not None and nxt.type == NAME:
            if at_start and nxt2 is not None and (t.string, nxt.string, nxt2.string) in _ASYNC_EVENT:
                raise CompileError("an event method cannot be async: EventPy runs it on its delivery thread, "
                                   "one event at a time per object; write `event def`, and hand work to an "
                                   "asyncio loop from it with asyncio.run_coroutine_threadsafe(coro, loop)",
                                   *_at(t.start), path, source)
            if at_start and t.string == "event" and nxt.string == "def":
                i = _event_def(sig, i, source, path, edits, out)
                prev_type, prev_str = OP, ":"
                continue
            if at_start and t.string == "local" and nxt2 is not None and nxt2.string == ":":
                _check("local_head", f"local {nxt.string}:", *_at(t.start), path, source)
                edits.append((t.start, nxt.start, "\\\n" * (nxt.start[0] - t.start[0])))  # `local \`
                if t.start[0] == nxt.start[0]:
                    out.heads.add(t.start)
                # by the line of the field's name, where Python's statement starts
                out.locals[nxt.start[0]] = identifier(nxt.string)
                out.local_columns[nxt.start[0]] = (t.start if t.start[0] == nxt.start[0] else nxt.start)[1] + 1
            elif (t.string in ("release", "last") and identifier(nxt.string) != "self" and nxt2 is not None
                  and nxt2.string == "." and (t.string == "last" or at_start)):
                raise CompileError(f"`{t.string}` works on the object's own fields: `{t.string} self.FIELD`, in a "
                                   f"method of the class that declares FIELD `local` (not {nxt.string}.FIELD)",
                                   *_at(t.start), path, source)
            elif t.string in ("release", "last") and identifier(nxt.string) == "self" and (
                    t.string == "last" or at_start):
                i = _release_last(sig, i, source, path, edits, out, classes.innermost())
                prev_type, prev_str = NAME, sig[i - 1].string
                continue
        if at_start and t.type == NAME and t.string == "def":
            _plain_def(sig, i, source, path)
        if t.type == tokenize.STRING and "last" in t.string:
            _fstring_lasts(t, edits, out)
        prev_type, prev_str = t.type, t.string
        i += 1
    out.text = _apply(source, edits) if edits else source
    for start, end, repl in edits:
        if start[0] == end[0] and "\n" not in repl:
            out.shifts.setdefault(start[0], []).append((start[1], len(repl) - (end[1] - start[1]), len(repl)))
        elif start[0] != end[0]:  # a guard over several lines: its last line starts with the edit's
            head, tail = repl.split("\n", 1)[0], repl.rsplit("\n", 1)[-1]
            out.shifts.setdefault(start[0], []).append((start[1], 0, len(head)))  # the rest of the line
            out.shifts.setdefault(end[0], []).append((0, len(tail) - end[1], len(tail)))
    return out


def _at(pos: tuple[int, int]) -> tuple[int, int]:
    """A tokenizer position (column from 0) as a diagnostic position (column from 1)."""
    return pos[0], pos[1] + 1


def _field_at(sig: list, j: int, word: str, source: str, path: str) -> str:
    """The FIELD of `self.FIELD` starting at sig[j]."""
    if not (j + 2 < len(sig) and identifier(sig[j].string) == "self" and sig[j + 1].string == "."
            and sig[j + 2].type == NAME):
        raise CompileError(f"`{word}` must be followed by self.FIELD", *_at(sig[j].start), path, source)
    return identifier(sig[j + 2].string)  # the attribute Python makes of it


class _Classes:
    """The class statements around a token, from INDENT and DEDENT: the string `release self.__f`
    becomes is named as Python names the attribute there (mangled by the innermost class)."""

    def __init__(self) -> None:
        self.open: list[tuple[str, int]] = []  # (name, depth of the `class` statement)
        self.depth = 0

    def see(self, sig: list, i: int) -> None:
        t = sig[i]
        if t.type == tokenize.INDENT:
            self.depth += 1
        elif t.type == tokenize.DEDENT:
            self.depth -= 1
            while self.open and self.open[-1][1] >= self.depth:  # back at its level: its body ended
                self.open.pop()
        elif t.type == tokenize.NEWLINE and self.open and self.open[-1][1] == self.depth and (
                i + 1 >= len(sig) or sig[i + 1].type != tokenize.INDENT):
            self.open.pop()  # `class C: body` on one line (or a header with no body)
        elif (t.type == NAME and t.string == "class" and i + 1 < len(sig) and sig[i + 1].type == NAME
              and (i == 0 or sig[i - 1].type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT))):
            self.open.append((identifier(sig[i + 1].string), self.depth))

    def innermost(self) -> str | None:
        return self.open[-1][0] if self.open else None


def _release_last(sig: list, i: int, source: str, path: str, edits: list, out: Lowered,
                  cls: str | None) -> int:
    """`last self.f`, or `release self.f` / `release self.a, self.b`, from sig[i]; the index after.
    `cls`: the innermost class around it, by which a private `self.__f` is named `_Cls__f`."""
    t = sig[i]
    word = t.string
    fields = [_field_at(sig, i + 1, word, source, path)]
    ends = [i + 4]
    while word == "release" and ends[-1] < len(sig) and sig[ends[-1]].string == ",":
        fields.append(_field_at(sig, ends[-1] + 1, word, source, path))
        ends.append(ends[-1] + 4)
    rule = "release_stmt" if word == "release" else "last_expr"
    _check(rule, f"{word} " + ", ".join(f"self.{f}" for f in fields), *_at(t.start), path, source)
    if word == "release" and ends[-1] < len(sig) and sig[ends[-1]].type != tokenize.NEWLINE \
            and sig[ends[-1]].string not in (";", ""):
        raise CompileError("`release` takes fields only: release self.f (or several: release self.a, self.b)",
                           *_at(sig[ends[-1]].start), path, source)
    # one call for all the fields (the runtime releases them together, under all their locks),
    # made of one edit per field: the commas between them, and a line continuation, stay as written
    starts = [t.start] + [sig[e + 1].start for e in ends[:-1]]
    for k, (start, end, f) in enumerate(zip(starts, ends, fields)):
        stop = sig[end - 1].end
        head = f"__eventpy__.{word}(" if k == 0 else ""
        tail = ")" if k == len(fields) - 1 else ""
        # the line ends it spans (`last` then a line end inside brackets, `release \`) stay,
        # inside the call's brackets: otherwise every later line moved up
        breaks = "\n" * (stop[0] - start[0])
        edits.append((start, stop, f'{head}{breaks}{"self, " if k == 0 else ""}"{mangle(cls, f)}"{tail}'))
        (out.releases if word == "release" else out.lasts).append((*start, f))
    return ends[-1]


_LAST_IN_FIELD = re.compile(r"(?<![\w.])last\s+self\s*\.\s*([^\W\d]\w*)")  # any script, as Python


def _fstring_lasts(t: tokenize.TokenInfo, edits: list, out: Lowered) -> None:
    """`last self.f` inside the replacement fields of an f-string token (and of the f-strings
    nested in them). Lowered without a quote — `__eventpy__.released(self).f` — because a field
    of an f-string nested in another may use neither quote (Python 3.11)."""
    text = t.string
    prefix = len(text) - len(text.lstrip("rRbBfFuU"))
    if "f" not in text[:prefix].lower():
        return
    inside = _field_spans(text, prefix + 1)
    for a, b in inside:
        for m in _LAST_IN_FIELD.finditer(text, a, b):
            start = _offset_to_pos(t.start, text, m.start())
            end = _offset_to_pos(t.start, text, m.end())
            breaks = "\n" * (end[0] - start[0])  # a field of a triple-quoted f-string may span lines
            edits.append((start, end, f"__eventpy__.released({breaks}self).{m.group(1)}"))
            out.lasts.append((*start, identifier(m.group(1))))


_FSTRING_PREFIX = re.compile(r"(?<!\w)[rRbBfFuU]{1,2}$")


def _field_spans(text: str, k: int, stop: int | None = None) -> list[tuple[int, int]]:
    """The spans of Python code inside the replacement fields of an f-string token, from offset
    k to stop: not the literal text (`{{` and `}}` included), not a format spec or conversion
    (where a quote is a fill character: f"{x:'>9}"), not a string inside a field (whose braces
    and words are text: f"{'}' + s}", f"{'last self.x'}") unless that string is an f-string,
    whose own fields are code again (f"{f'{x}'}"), as is a nested field in a spec."""
    stop = len(text) if stop is None else stop
    spans: list[tuple[int, int]] = []
    stack: list[list] = []  # per open field: ["code" or "spec", open brackets]
    start = k
    while k < stop:
        c = text[k]
        if not stack or stack[-1][0] == "spec":  # literal text, or a format spec
            if not stack and text[k:k + 2] in ("{{", "}}"):
                k += 2
                continue
            if c == "{":
                stack.append(["code", 0])
                start = k + 1
            elif c == "}" and stack:
                stack.pop()
            k += 1
            continue
        field = stack[-1]
        if c in "'\"":
            spans.append((start, k))
            end = min(_string_end(text, k), stop)
            letters = _FSTRING_PREFIX.search(text, start, k)
            if letters and "f" in letters.group().lower():
                q = 3 if text[k:k + 3] in ("'''", '"""') else 1
                spans += _field_spans(text, k + q, max(k + q, end - q))
            k = start = end
            continue
        if c in "([{":
            field[1] += 1
        elif c in ")]" and field[1]:
            field[1] -= 1
        elif c == "}" and field[1]:
            field[1] -= 1
        elif c == "}" or (field[1] == 0 and (c == ":" or (c == "!" and text[k + 1:k + 2] != "="))):
            spans.append((start, k))
            if c == "}":
                stack.pop()
            else:
                field[0] = "spec"
        k += 1
    if stack and stack[-1][0] == "code":
        spans.append((start, stop))
    return spans


def _string_end(text: str, k: int) -> int:
    """The offset just past the string literal opening at text[k] (inside an f-string's field,
    where Python 3.11 allows no backslash: the first closing quote ends it)."""
    q = text[k:k + 3] if text[k:k + 3] in ("'''", '"""') else text[k]
    end = text.find(q, k + len(q))
    return len(text) if end < 0 else end + len(q)


def _offset_to_pos(origin: tuple[int, int], text: str, offset: int) -> tuple[int, int]:
    """The (line, col) of text[offset] for a token that starts at origin."""
    before = text[:offset]
    newlines = before.count("\n")
    if not newlines:
        return origin[0], origin[1] + offset
    return origin[0] + newlines, offset - before.rfind("\n") - 1


_NON_CODE = (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT)
_GUARD_WORDS = ("and", "or", "not", "in", "when")  # a guard cannot end on one of these


def _header_end(sig: list, i: int) -> tuple[int, int | None]:
    """From `def` at sig[i]: the index of the header's final ':' and of a `when` at depth 0."""
    opened: list[int] = []  # the brackets still open
    when = None
    for k in range(i, len(sig)):
        s = sig[k].string
        if sig[k].type == OP and s in "([{":
            opened.append(k)
        elif sig[k].type == OP and s in ")]}":
            if opened:
                opened.pop()
        elif not opened and sig[k].type == NAME and s == "when" and when is None:
            when = k
        elif not opened and sig[k].type == OP and s == ":":
            return k, when
        elif sig[k].type == tokenize.NEWLINE:
            break
    if opened:  # the tokenizer ran to the end of the file looking for its close
        where = " in the guard" if when is not None and opened[0] > when else ""
        raise CompileError(f"'{sig[opened[0]].string}' was never closed{where}", *_at(sig[opened[0]].start))
    if when is not None:  # `when` then the end of the line: a guard cut short, or no ':'
        end = next((sig[m] for m in range(k, when, -1) if sig[m].type not in _NON_CODE), sig[when])
        if end.type == OP and end.string not in ")]}" or end.type == NAME and end.string in _GUARD_WORDS:
            raise CompileError(f"the guard goes on after '{end.string}' on the next line, outside brackets, where "
                               "Python ends the header; wrap the guard in parentheses: `when (...):`",
                               *_at(end.start))
        raise CompileError("the header of the event method ends without ':' after its guard; end it with ':'",
                           *_at(end.end))
    after = next((t for t in sig[k + 1:] if t.type not in _NON_CODE), None)
    if after is not None and after.type == NAME and after.string == "when":  # the guard on a line of its own
        raise CompileError("`when` goes on the line of its `event def`, after the parameters: "
                           "`event def NAME(self, ...) when GUARD:` (to break a long guard, wrap it in "
                           "parentheses: `when (...):`)", *_at(after.start))
    raise CompileError("the def header has no ':'", *_at(sig[i].start))


def _plain_def(sig: list, i: int, source: str, path: str) -> None:
    try:
        _, when = _header_end(sig, i)
    except CompileError:
        return  # not our business: Python will report it
    # `def when():` and `def f() -> when:` are plain Python; `def f(x) when ...:` is not
    if when is not None and when != i + 1 and sig[when - 1].string != "->":
        raise CompileError("`when` guards belong to event methods: write `event def`",
                           *_at(sig[when].start), path, source)


def _event_def(sig: list, i: int, source: str, path: str, edits: list, out: Lowered) -> int:
    ev, d = sig[i], sig[i + 1]
    name = sig[i + 2] if i + 2 < len(sig) else d
    if name.type != NAME:
        raise CompileError("`event def` needs a method name", *_at(d.end), path, source)
    _check("event_head", f"event def {name.string}", *_at(ev.start), path, source)
    edits.append((ev.start, d.start, "\\\n" * (d.start[0] - ev.start[0])))  # `event def` -> `def`
    if ev.start[0] == d.start[0]:
        out.heads.add(ev.start)
    try:
        colon, when = _header_end(sig, i + 1)
    except CompileError as e:
        raise CompileError(e.message, e.line, e.column, path, source) from None
    for k in range(i + 2, colon):
        if sig[k].string == "->" and (when is None or k < when):
            returned = [t for t in sig[k + 1:when if when is not None else colon] if t.type not in _NON_CODE]
            if [t.string for t in returned] == ["None"]:  # true of every event method: as typed code writes it
                edits.append((sig[k].start, returned[0].end, "\\\n" * (returned[0].end[0] - sig[k].start[0])))
                break
            raise CompileError("an event method returns nothing: remove the return annotation (or write -> None)",
                               *_at(sig[k].start), path, source)
    if when is None:
        out.events.append(EventDef(ev.start[0], ev.start[1] + 1, identifier(name.string), None))
        edits.append((sig[colon].start, sig[colon].start, " -> __eventpy__.when()"))
        return colon + 1
    w = sig[when]
    if when + 1 >= colon:
        raise CompileError("`when` needs a guard before ':'", *_at(w.end), path, source)
    g0, g1 = sig[when + 1].start, sig[colon - 1].end
    guard = _guard_text(sig[when + 1:colon], source)
    # the guard itself is parsed with the grammar's guard rule when it is compiled (_analysis)
    line, col = g0[0], g0[1] + 1
    pieces = guard.split("\n")
    literal = "\n".join(repr(p + ("\n" if k < len(pieces) - 1 else "")) for k, p in enumerate(pieces))
    # `when \` with the guard on the next line: those line ends stay (inside the call's brackets)
    breaks = "\n" * (g0[0] - sig[when - 1].end[0])
    edits.append((sig[when - 1].end, g1, f" -> __eventpy__.when({breaks}{literal}, {line}, {col})"))
    out.events.append(EventDef(ev.start[0], ev.start[1] + 1, identifier(name.string), guard, line, col))
    return colon + 1


def _guard_text(toks: list, source: str) -> str:
    """The guard as written, its line continuations as spaces (the same columns) — but not those
    inside a string, where Python's `\\` + line end is part of the literal (it joins the lines)."""
    # the file split once, not once a token: a guard of a 20,000-member set literal split the
    # whole file 40,000 times (eventpyc took minutes, quadratic in the guard's length)
    lines, parts, at = split_lines(source, keepends=True), [], toks[0].start
    for tok in toks:
        parts += [_slice(lines, at, tok.start).replace("\\\n", " \n"), tok.string]
        at = tok.end
    return "".join(parts)


def _slice(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> str:
    if start[0] == end[0]:
        return lines[start[0] - 1][start[1]:end[1]]
    parts = [lines[start[0] - 1][start[1]:]]
    parts.extend(lines[start[0]:end[0] - 1])
    parts.append(lines[end[0] - 1][:end[1]])
    return "".join(parts)


def _apply(source: str, edits: list) -> str:
    """Replace (start, end) spans, given as (line, col) pairs, last first."""
    lines = split_lines(source, keepends=True)
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln))

    def pos(lc: tuple[int, int]) -> int:
        return offsets[lc[0] - 1] + lc[1]

    text = source
    for start, end, repl in sorted(edits, key=lambda e: pos(e[0]), reverse=True):
        text = text[:pos(start)] + repl + text[pos(end):]
    return text

"""A mistake in the arguments of a public call (a wrong attribute type at `publish`, a missing
argument of an event method) is the caller's: its traceback ends on the caller's line, as for a
builtin, instead of going on through the frames of eventpy that found it. Every such call checks
its arguments first, in a `try` of its own:

    try:
        values = self._values(etype, attrs)
    except (TypeError, ValueError) as e:
        callers_mistake(e)
        raise

The bare `raise` re-raises with the traceback the exception holds, which `callers_mistake` has
emptied, and a re-raise does not record the frame it happens in (CPython goes straight to
unwinding: RAISE_VARARGS 0 / RERAISE). The first frame the exception then passes through, and so
the last one shown, is the caller's. Only the check is inside the `try`: an error of eventpy
itself, later, keeps all its frames.
"""

from __future__ import annotations


def callers_mistake(e: BaseException) -> None:
    """Drop the frames below the public call (see the module's docstring for the `raise`)."""
    e.__traceback__ = None


def past_wrapper(e: BaseException) -> None:
    """Drop the frame of an eventpy wrapper that only called the program's own function (the
    subscribing `__init__`, the unsubscribing `close`): caught there, the exception's traceback
    starts at the wrapper's line; without it, a `raise` in the handler shows the program's call,
    then the program's function, as Python would without EventPy."""
    if e.__traceback__ is not None:
        e.__traceback__ = e.__traceback__.tb_next


def stays_cut(e: BaseException) -> None:
    """For an exception passing up through a frame of eventpy's: if it was cut below a public
    call (callers_mistake) and has passed only through this frame since, cut it again, so that
    the caller's line stays the last one shown; other exceptions keep all their frames."""
    if e.__traceback__ is not None and e.__traceback__.tb_next is None:
        callers_mistake(e)

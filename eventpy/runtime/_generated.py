"""Which generated code this runtime runs. eventpyc marks what it writes with the interface of the
runtime it calls: `__eventpy__.generated_for(INTERFACE, "eventpyc's version")`, on the line of the
runtime's import, so that no line moves. Code made for an interface this runtime does not run is
refused at import, saying to recompile or to upgrade: without the mark it failed, if at all, with
an AttributeError or a TypeError from inside the runtime.

Code of eventpyc 0.1.0 before the mark carries none; it calls what interface 1 has (EventObject,
metaclass, assigning, when, release, released, last, as they are today), so it runs."""

from __future__ import annotations

import sys
from types import ModuleType

from .._version import GENERATED_INTERFACE as INTERFACE, __version__

OLDEST = 1  # the oldest interface still run; raised when code of an older one would misbehave


def generated_for(interface: int, by: str = "?") -> ModuleType:
    """The runtime (eventpy.runtime.lang), for code generated for `interface` by eventpyc `by`;
    an ImportError saying what to do if this runtime does not run that interface."""
    if OLDEST <= interface <= INTERFACE:
        return sys.modules[__name__.rpartition(".")[0] + ".lang"]
    caller = sys._getframe(1).f_globals
    what = caller.get("__file__") or caller.get("__name__", "this module")
    runs = f"interface {INTERFACE}" if OLDEST == INTERFACE else f"interfaces {OLDEST} to {INTERFACE}"
    head = (f"{what} was compiled by eventpyc {by} for the runtime's interface {interface}; "
            f"eventpy {__version__} runs {runs}")
    if interface > INTERFACE:
        raise ImportError(f"{head}: upgrade eventpy where the program runs (pip install -U) to one of "
                          f"interface {interface}, as `eventpy --version` says, or recompile the .epy with "
                          f"the eventpyc of eventpy {__version__}")
    raise ImportError(f"{head}: recompile the .epy with the eventpyc of eventpy {__version__} "
                      "(eventpyc FILE.epy)")


def missing(module: str, name: str) -> AttributeError:
    """A name generated code calls that this runtime does not have: code of a newer eventpyc
    (before its interface mark is checked, or of an eventpyc that did not raise it)."""
    if name.startswith("__"):  # probes of Python's own (copy, pickle, inspect) get the usual error
        return AttributeError(f"module {module!r} has no attribute {name!r}")
    return AttributeError(f"{module} has no {name!r}: code compiled by an eventpyc newer than this runtime "
                          f"(eventpy {__version__}) calls it; upgrade eventpy where the program runs "
                          f"(pip install -U), or recompile the .epy with the eventpyc of eventpy "
                          f"{__version__}")

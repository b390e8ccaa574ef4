"""Ctrl-C while an `eventpy` or `eventpyc` command starts (its imports: the runtime, numpy,
lark, pyspark take up to seconds) or works: one line and exit status 130, as a shell reports a
command that SIGINT stopped. The KeyboardInterrupt used to reach the top and print a traceback
of the import machinery, which reads like a crash of eventpy.

A command that has something to say about an interruption (`overlay up` stops the brokers it
started, `replay` marks its results incomplete, `run` shows the program's own traceback) catches
it first. A Ctrl-C while the console script imports eventpy and the command's module, before
`main()` and its `except KeyboardInterrupt` run, is held (SIGINT blocked) and comes when `main()`
lets it (`let_through`): about half of a command's start. Before that, Python's own start and the
script's `import re` (tens of milliseconds), it is Python's to report."""

from __future__ import annotations

import sys

INTERRUPTED = 130  # 128 + SIGINT

# what the console scripts pip writes (and `python -m`) run: these only, so that a program that
# imports eventpy gets its Ctrl-C where it lands, as always
_COMMANDS = {"eventpy": "eventpy.__main__", "eventpyc": "eventpy.compiler.cli"}
_held = False


def hold_in_commands() -> None:
    """At the top of `import eventpy`: in an `eventpy` or `eventpyc` command, block SIGINT until
    its main() runs. Elsewhere nothing."""
    global _held
    if _held or not _a_command():
        return
    # the C module, loaded with Python: `import signal` makes its enums and took milliseconds,
    # a window of its own
    import _signal

    if hasattr(_signal, "pthread_sigmask"):  # (not on Windows, where the window stays Python's)
        _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT})
        _held = True


def let_through() -> None:
    """First thing inside main()'s try: a Ctrl-C held meanwhile is raised here, as a
    KeyboardInterrupt that main() reports in one line."""
    global _held
    if _held:
        _held = False
        import _signal

        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, {_signal.SIGINT})  # (it raises a pending one)


def _a_command() -> bool:
    """Is this process an `eventpy` or `eventpyc` command starting: a console script of that
    name that imports the command's main, or `python -m` of the command's module?"""
    argv = getattr(sys, "orig_argv", [])
    if "-m" in argv[:-1] and argv[argv.index("-m") + 1] in _COMMANDS.values():
        return True
    path = getattr(sys.modules.get("__main__"), "__file__", None)
    module = _COMMANDS.get(path.replace("\\", "/").rsplit("/", 1)[-1]) if isinstance(path, str) else None
    if module is None:
        return False
    try:
        with open(path, "rb") as script:
            return f"from {module} import main".encode() in script.read(4096)
    except OSError:
        return False


def interrupted(prog: str) -> int:
    """Say that `prog` was interrupted, in one line on stderr; the exit status to return."""
    try:
        print(f"{prog}: interrupted", file=sys.stderr, flush=True)
    except (OSError, KeyboardInterrupt):  # stderr closed, or a second Ctrl-C: the status says it
        pass
    return INTERRUPTED

"""`eventpy` command line: demo, run, broker, overlay, replay (`eventpy -h`)."""

from __future__ import annotations

# Only what every command needs is imported here, before main(): a Ctrl-C from main() on is
# reported in one line (_interrupted), and each command imports what it uses when it runs
# (tests/test_startup.py checks that the light ones load nothing heavy).
import os
import sys

from ._interrupted import interrupted, let_through

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing)
if TYPE_CHECKING:
    import argparse
    from typing import Any, Callable


def _positive(kind: type) -> Callable[[str], Any]:
    """An argparse type: a number of `kind` above 0 (a usage error otherwise)."""
    import argparse

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be above 0, not {text}")
        return value
    return parse


def _add_limits(parser: argparse.ArgumentParser, where: str) -> None:
    """The per-client limits of a broker shared by several services (runtime/_client_caps.py)."""
    from eventpy.runtime._client_caps import LIMITS

    for name, (flag, what) in LIMITS.items():
        parser.add_argument(flag, dest=name, metavar="N", type=_positive(int),
                            help=f"the most {what}; a client's subscribe or update past it raises "
                                 f"eventpy.LimitExceeded (default: no limit; {where})")


def _limits(args: argparse.Namespace) -> dict[str, int | None]:
    from eventpy.runtime._client_caps import LIMITS

    return {name: getattr(args, name, None) for name in LIMITS}


def _demo(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    import eventpy
    from eventpy.runtime.comparison import GUARD, moving_windows
    from eventpy.runtime.overlay import line

    console = Console(width=max(100, Console().width))
    console.rule("[bold]1. The Python API on the embedded overlay")
    node = eventpy.connect()
    Quote = eventpy.EventType("stocks.Quote", firm=str, price=float)
    got: list = []
    sub = node.subscribe(Quote, "firm == 'IBM' and price < limit", params={"limit": 10.0},
                         on_event=got.append)
    node.publish(Quote, firm="IBM", price=9.5)
    node.publish(Quote, firm="IBM", price=11.0)
    eventpy.drain(timeout=5.0)
    console.print(f"limit=10.0  delivered: {got}", markup=False)
    sub.update(limit=12.0)
    node.publish(Quote, firm="IBM", price=11.0)
    eventpy.drain(timeout=5.0)
    console.print(f"limit=12.0  delivered: {got}", markup=False)
    sub.close()
    eventpy.drain(timeout=5.0)
    stats = eventpy.stats()
    console.print({k: stats[k] for k in ("published", "delivered", "spurious", "sub_sent",
                                         "unsub_sent", "upd_sent")})
    eventpy.shutdown()

    console.rule("[bold]2. Parametric vs re-subscription in the simulator")
    console.print(f"3 brokers in a line, 1 publisher (2000 events/s), {args.subscribers} subscribers "
                  f"updating `{GUARD}` {args.rate:g} times/s each, {args.span:g} s of virtual time")
    rows = [moving_windows(mode, line(3), subscribers=args.subscribers, rate=args.rate, span=args.span)
            for mode in ("parametric", "resub")]
    table = Table()
    for col in ("mode", "sub msgs", "delay ms", "lat p50 ms", "lat p99 ms", "delivered", "spurious"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(r["mode"], str(r["sub_messages"]), f"{r['delay_mean'] * 1e3:.2f}",
                      f"{r['latency_p50'] * 1e3:.2f}", f"{r['latency_p99'] * 1e3:.2f}",
                      str(r["delivered"]), str(r["spurious"]))
    p, q = rows
    table.add_row("ratio p/r", f"{p['sub_messages'] / q['sub_messages']:.2f}",
                  f"{p['delay_mean'] / q['delay_mean']:.2f}", f"{p['latency_p50'] / q['latency_p50']:.2f}",
                  f"{p['latency_p99'] / q['latency_p99']:.2f}", "", "")
    console.print(table)
    return 0


def _program_frames(e: BaseException) -> Any:
    """The traceback of `e` from the program's first frame on (None if it never reached one): the
    runner's frames above it are not the user's business (and a traceback starting in eventpy
    reads like a crash of eventpy)."""
    import runpy

    from eventpy.compiler import _epy_loader, importhook

    tb = e.__traceback__
    runner = {__file__, importhook.__file__, _epy_loader.__file__, runpy.__file__, "<frozen runpy>"}
    while tb is not None and tb.tb_frame.f_code.co_filename in runner:
        tb = tb.tb_next
    return tb


def _before_the_program(e: KeyboardInterrupt) -> bool:
    """Did the Ctrl-C come while the program was being compiled or found (eventpy's frames, or
    importlib's finding and loading it), before any line of it ran?"""
    tb = _program_frames(e)
    if tb is None:
        return True
    where = tb.tb_frame.f_code.co_filename
    return where.startswith(os.path.dirname(os.path.abspath(__file__)) + os.sep) or where.startswith(
        "<frozen importlib")


def _print_program_traceback(e: BaseException) -> None:
    """The traceback from the program's first frame on (_program_frames)."""
    tb = _program_frames(e)
    sys.excepthook(type(e), e.with_traceback(tb), tb)  # Python's own printing (with its "Did you mean"), or the program's hook


def _stop_on_sigterm() -> None:
    """SIGTERM (systemd's stop, a container runtime's) ends the program as its end does: the exit
    drain and what its nodes still hold sent (README "The end of a program"). Python's default
    killed it at once, without its exit handlers, and what it had published and not yet sent was
    lost without a word. A second SIGTERM ends it at once; a handler the program installs wins,
    and a SIGTERM its parent ignores stays ignored."""
    import signal

    def stop(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise SystemExit(128 + signum)  # a shell's and a container runtime's "stopped by SIGTERM"

    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, stop)


def _run(args: argparse.Namespace) -> int:
    import functools
    from pathlib import Path

    from eventpy.compiler import CompileError, CompileErrors
    from eventpy.compiler.importhook import run_module, run_path

    if args.module is not None:  # `eventpy run -m pkg.app`, as `python -m pkg.app`
        sys.argv = [args.module, *([args.file] if args.file is not None else []), *args.args]
        sys.path.insert(0, os.getcwd())  # as `python -m`: the current directory's modules import
        start = functools.partial(run_module, args.module)
    else:
        if args.file is None:
            print("eventpy run: error: give the .epy program to run, or -m MODULE", file=sys.stderr)
            return 2
        path = Path(args.file)
        if not path.is_file():
            print(f"{args.file}: error: {'a directory, not an .epy file' if path.is_dir() else 'no such file'}",
                  file=sys.stderr)
            return 1
        sys.argv = [args.file, *args.args]
        sys.path.insert(0, str(path.resolve().parent))  # as `python main.py`: the modules beside it import
        start = functools.partial(run_path, args.file)
    # what the program's first line imports (and the drain below needs), loaded here: a Ctrl-C
    # meanwhile is one of starting up (one line), not one in the program (its traceback)
    from eventpy.runtime import api, lang  # noqa: F401
    _stop_on_sigterm()
    try:
        start()
    except (CompileError, CompileErrors) as e:
        print(e.render(), file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:
        if _before_the_program(e):
            raise  # main() says it in one line
        _print_program_traceback(e)  # the program's own, as `python f.py` shows it
        return 130
    except Exception as e:  # the program's own: show its frames, as `python f.py` does
        _print_program_traceback(e)
        return 1
    finally:
        from eventpy.runtime._exit import drain_at_program_end

        drain_at_program_end()  # the exit drain of README, up to 5 s in all with the one at exit
    return 0


def _broker(args: argparse.Namespace) -> int:
    from pathlib import Path

    from eventpy.runtime.launcher import run_broker

    return run_broker(Path(args.config), args.id, _limits(args))


def _overlay(args: argparse.Namespace) -> int:
    from pathlib import Path

    from eventpy.runtime import launcher

    run_dir = Path(args.run_dir)
    if args.action == "up":
        return launcher.overlay_up(run_dir, args.topology, args.brokers, args.host, args.port, args.mode,
                                   args.matcher, args.summary, limits=_limits(args))
    if args.action == "status":
        return launcher.overlay_status(run_dir)
    return launcher.overlay_down(run_dir)


def _replay(args: argparse.Namespace) -> int:
    if args.live:
        from eventpy.replay.live.cli import replay_live

        return replay_live(args.config, args.out, args.master, args.quiet)
    from eventpy.replay.cli import replay

    return replay(args.config, args.out, args.master, args.quiet)


def parser() -> argparse.ArgumentParser:
    """The `eventpy` command line: every subcommand and its options."""
    import argparse

    from ._version import add_version_option

    parser = argparse.ArgumentParser(prog="eventpy", description=__doc__)
    add_version_option(parser, "eventpy")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="the API example and a parametric-vs-resub comparison")
    demo.add_argument("--subscribers", type=_positive(int), default=200,
                      help="subscribers in the comparison (default: 200)")
    demo.add_argument("--rate", type=_positive(float), default=50.0,
                      help="updates per second per subscriber (default: 50)")
    demo.add_argument("--span", type=_positive(float), default=0.4, help="seconds of virtual time (default: 0.4)")
    demo.set_defaults(func=_demo)
    run = sub.add_parser(
        "run", help="compile an .epy program in memory and run it",
        # what README's "The end of a program" promises of `eventpy run`, where a user looks first
        description="Compile an .epy program in memory and run it. At its end its nodes send what they "
                    "hold (the exit drain, up to seconds). SIGTERM (systemd's stop) ends it the same way, "
                    "then exits with status 143; a second SIGTERM ends it at once. Ctrl-C shows the "
                    "program's traceback and exits with status 130.")
    run.add_argument("-m", dest="module", metavar="MODULE",
                     help="run a module (an .epy or .py one, or a package's __main__) as `python -m` does")
    run.add_argument("file", nargs="?",
                     help="the .epy program (the modules beside it import, .epy ones compiled on import)")
    run.add_argument("args", nargs=argparse.REMAINDER, help="the program's own arguments (its sys.argv[1:])")
    run.set_defaults(func=_run)
    broker = sub.add_parser("broker", help="run one broker of an overlay in the foreground",
                            description="Run one broker of an overlay in the foreground, logging to stderr "
                                        "(for systemd's journal); SIGTERM or Ctrl-C stops it.")
    broker.add_argument("--config", required=True, help="the overlay's TOML file")
    broker.add_argument("--id", required=True, help="this broker's name in it")
    _add_limits(broker, "over the config file's")
    broker.set_defaults(func=_broker)
    overlay = sub.add_parser("overlay", help="start, inspect and stop broker processes on this machine")
    overlay.add_argument("action", choices=("up", "status", "down"),
                         help="up: start brokers and return once they are linked; status: a table of them (exit "
                              "status 3 if one is not running or not serving); "
                              "down: stop the brokers this run dir started")
    # None: 3, 127.0.0.1, 7100; a topology file names its own brokers and addresses (a flag beside it is refused)
    overlay.add_argument("--brokers", type=int, help="how many brokers (default: 3; not with a TOML file)")
    overlay.add_argument("--topology", default="line", help="line, star, tree, random, or a TOML file (default: line)")
    overlay.add_argument("--host", help="the address the brokers listen on (default: 127.0.0.1; not with a TOML file)")
    overlay.add_argument("--port", type=int, help="the first broker's port, then +1, +2 ... (default: 7100; 0: "
                                                  "free ports the launcher picks, which it prints; not with a TOML "
                                                  "file)")
    # None: the topology file's choice, else the default in the help (a flag that disagrees with
    # the file is an error rather than ignored)
    overlay.add_argument("--mode", choices=("parametric", "resub"), help="default: parametric")
    overlay.add_argument("--matcher", choices=("fastint", "poset", "naive"), help="default: fastint")
    overlay.add_argument("--summary", choices=("attribute", "poset"), help="default: attribute")
    _add_limits(overlay, "up only: every broker, written in overlay.toml")
    overlay.add_argument("--run-dir", default=".eventpy/overlay",
                         help="where pid files, logs and status go (default: .eventpy/overlay)")
    overlay.set_defaults(func=_overlay)
    replay = sub.add_parser("replay", help="replay a workload grid on Spark and write a report")
    replay.add_argument("config", help="a replay TOML file, e.g. examples/replay/htm-small.toml")
    replay.add_argument("--out", required=True, help="directory for metrics.parquet, report.md and plots")
    replay.add_argument("--master", default=None, help="Spark master URL (default: local[*])")
    replay.add_argument("--quiet", action="store_true", help="no progress bars or tables")
    replay.add_argument("--live", action="store_true",
                        help="instead of the grid, run the [live] engines (EventPy TCP overlay, ActiveMQ, "
                             "Redis) in real time and write live.parquet and live.md")
    replay.set_defaults(func=_replay)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        let_through()  # a Ctrl-C held since `import eventpy` (_interrupted) is raised here
        args = parser().parse_args(argv)
        return args.func(args)
    except KeyboardInterrupt:  # while it starts (its imports) or works: one line, not a traceback
        return interrupted("eventpy")


if __name__ == "__main__":
    sys.exit(main())

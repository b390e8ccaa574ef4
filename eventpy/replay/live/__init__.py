"""Live engines (issue 5, scope 6): a trace replayed in real time against real servers on
127.0.0.1 — EventPy's TCP overlay in each mode, ActiveMQ with JMS selectors over STOMP, Redis pub/sub
with filtering in the client — with the simulator's metrics (eventpy.replay.live.driver).

    from eventpy.replay.live import make_engine, run_live
    with make_engine("redis") as engine:
        result = run_live(trace, engine, speed=1.0, max_events=2000)
"""

from __future__ import annotations

from typing import Callable

from .engine import Client, Engine, EngineError

ENGINES = ("eventpy-parametric", "eventpy-resub", "activemq", "redis")


def unavailable(name: str) -> str | None:
    """None if engine `name` can run on this machine, else why not."""
    if name not in ENGINES:
        return f"unknown engine {name!r}; one of {', '.join(ENGINES)}"
    if name == "activemq":
        from .activemq import available
        return available()
    if name == "redis":
        from .redispubsub import available
        return available()
    return None


def make_engine(name: str) -> Engine:
    makers: dict[str, Callable[[], Engine]] = {
        "eventpy-parametric": lambda: _eventpy("parametric"),
        "eventpy-resub": lambda: _eventpy("resub"),
        "activemq": _activemq,
        "redis": _redis,
    }
    if name not in makers:
        raise ValueError(f"unknown engine {name!r}; one of {', '.join(ENGINES)}")
    return makers[name]()


def _eventpy(mode: str) -> Engine:
    from .eventpy_overlay import EventPyEngine
    return EventPyEngine(mode)


def _activemq() -> Engine:
    from .activemq import ActiveMQEngine
    return ActiveMQEngine()


def _redis() -> Engine:
    from .redispubsub import RedisEngine
    return RedisEngine()


def run_live(*args, **kwargs):  # noqa: ANN002, ANN003 - see eventpy.replay.live.driver.run_live
    from .driver import run_live as run
    return run(*args, **kwargs)


__all__ = ["ENGINES", "Client", "Engine", "EngineError", "make_engine", "run_live", "unavailable"]

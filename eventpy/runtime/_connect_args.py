"""`eventpy.connect`'s arguments, checked before anything is attached: a wrong type, an unknown
name or a URL that is no broker's is one line naming the argument."""

from __future__ import annotations

from typing import Any


def _check_connect_args(url: Any, mode: Any, matcher: Any, summary: Any, name: Any) -> None:
    """connect's arguments, before anything is attached: a wrong type or an unknown name is one
    line naming the argument (not an error from deep inside urllib or the broker)."""
    from .broker import SUMMARIES
    from .client import MODES
    from .matching import MATCHERS

    if url is not None and not isinstance(url, str):
        raise TypeError(f"connect: url must be a str such as 'tcp://127.0.0.1:7100', "
                        f"not {type(url).__name__} {url!r}")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"connect: name must be a str, not {type(name).__name__} {name!r}")
    for key, value, allowed in (("mode", mode, MODES), ("matcher", matcher, MATCHERS),
                                ("summary", summary, SUMMARIES)):
        if value is not None and value not in allowed:
            raise ValueError(f"unknown {key} {value!r}; choose {', '.join(allowed)}")


def _broker_address(url: str) -> tuple[str, int]:
    """`tcp://HOST:PORT` -> (host, port); anything else is a ValueError saying what is wrong."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    try:
        port = parts.port  # urllib raises for a port that is not a number in 0..65535
    except ValueError:
        port = None
    if parts.scheme != "tcp" or not parts.hostname or not port:
        raise ValueError(f"cannot attach to {url!r}: use tcp://HOST:PORT with a port in 1..65535 "
                         "(or no URL for the embedded overlay)")
    extra = [(what, value) for what, value in (("a user", parts.username), ("a path", parts.path.rstrip("/")),
                                              ("a query", parts.query), ("a fragment", parts.fragment)) if value]
    if extra:  # the broker would never see them: refused rather than ignored
        what, value = extra[0]
        raise ValueError(f"cannot attach to {url!r}: a broker URL is tcp://HOST:PORT, without {what} {value!r}")
    return parts.hostname, port


ENV_RUM = "EVENTPY_RUM"
_ON, _OFF = ("1", "on", "true", "yes"), ("", "0", "off", "false", "no")


def rum_from_env(environ: Any) -> Any:
    """The update monitor a process asks for in EVENTPY_RUM, for every connect() that does not say
    (the default node of an .epy program's objects included): `1` or `on` for the defaults,
    `window=1.0,freq_approx=4,min_history=4` for knobs, unset or `0` for none. Returns an
    UpdateMonitor or None; a ValueError that quotes the variable when it cannot be used."""
    from .client import UpdateMonitor

    text = environ.get(ENV_RUM)
    if text is None or text.strip().lower() in _OFF:
        return None
    text = text.strip()
    if text.lower() in _ON:
        return UpdateMonitor()
    knobs: dict[str, Any] = {}
    for part in text.split(","):
        key, eq, value = (p.strip() for p in part.partition("="))
        if not eq or not key or not value:
            raise ValueError(f"{ENV_RUM}={text!r}: use 1 (the defaults) or knobs such as "
                             "window=1.0,freq_approx=4,min_history=4")
        if key not in _KNOBS:
            raise ValueError(f"{ENV_RUM}: the knobs are {', '.join(_KNOBS)}, not {key!r}")
        try:
            knobs[key] = int(value) if key == "min_history" else float(value)
        except ValueError:
            raise ValueError(f"{ENV_RUM}: {key}={value!r} is not a number") from None
    try:
        return UpdateMonitor(**knobs)
    except (TypeError, ValueError) as e:  # a number the monitor cannot use (its own words)
        raise ValueError(f"{ENV_RUM}={text!r}: {e}") from None


_KNOBS = ("window", "freq_approx", "min_history")

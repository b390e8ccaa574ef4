"""The checks of a Simulation's configuration: the topology is one tree, delays are seconds, and
a service model is a callable that returns seconds, for brokers that exist. A mistake is said in
one line where the researcher made it, not as a TypeError from the middle of a run (a float
service time was called; a negative delay made messages arrive before they were sent)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..overlay import Topology, TopologyError
from ._service import CostModel, Service


class ServiceTimeError(ValueError):
    """A service model returned something that is not a duration."""


def known_brokers(topology: Topology, most: int = 8) -> str:
    names = list(topology.brokers)
    shown = ", ".join(names[:most])
    return shown + (f" ... ({len(names)} in all)" if len(names) > most else "")


def check_connected(topology: Any) -> None:
    if not isinstance(topology, Topology):
        raise TypeError(f"a Simulation runs on a Topology (eventpy.runtime.overlay: line(5), star(4), "
                        f"tree(7), random_tree(9), Topology(brokers, links)), not {type(topology).__name__}")
    apart = topology.apart()
    if apart:
        raise TopologyError(f"broker {apart[0]!r} is not linked to {topology.brokers[0]!r}, so no event "
                            "could cross between them; the brokers must form one tree (add a link)")


def check_delay(what: str, value: Any) -> float:
    """A delay in seconds: a finite number >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} is a number of seconds, not {type(value).__name__} {value!r}")
    if not 0 <= value < math.inf:
        raise ValueError(f"{what} must be a finite number of seconds >= 0, not {value!r}")
    return float(value)


def link_delay_table(topology: Topology, delays: Mapping[tuple[str, str], float] | None) -> dict:
    """(from, to) -> seconds, both ways, for the broker links `delays` names."""
    if delays is None:
        return {}
    if not isinstance(delays, Mapping):
        raise TypeError(f"link_delays maps broker links (a, b) to seconds, not a {type(delays).__name__}")
    links = {frozenset(link) for link in topology.links}
    out: dict[tuple[str, str], float] = {}
    for key, value in delays.items():
        if not (isinstance(key, tuple) and len(key) == 2) or frozenset(key) not in links:
            raise ValueError(f"link_delays names {key!r}, which is not a link of the topology "
                             f"(its links: {', '.join(f'{a}-{b}' for a, b in topology.links[:8]) or 'none'}"
                             f"{' ...' if len(topology.links) > 8 else ''})")
        a, b = key
        out[a, b] = out[b, a] = check_delay(f"link_delays[{key!r}]", value)
    return out


def _check_service(what: str, service: Any) -> Service:
    if not callable(service):
        raise TypeError(f"{what} is a callable service(msg, sends, cpu) -> seconds, such as "
                        f"CostModel(pub=50e-6) or measured, not {type(service).__name__} {service!r}")
    return service


def service_table(topology: Topology, service: Any) -> tuple[Service, dict[str, Service]]:
    """The service model of the brokers `service` does not name, and broker -> its own."""
    if service is None:
        return CostModel(), {}
    if not isinstance(service, Mapping):
        return _check_service("service", service), {}
    own = {}
    for broker, model in service.items():
        if broker not in topology.brokers:
            raise ValueError(f"service names unknown broker {broker!r}; the brokers are {known_brokers(topology)}")
        own[broker] = _check_service(f"service[{broker!r}]", model)
    return CostModel(), own


def checked_service_time(broker: str, msg: Any, spent: Any) -> float:
    """A service time that is not a plain float or int in [0, inf): as a float, or the error."""
    if isinstance(spent, bool) or not isinstance(spent, (int, float)):
        raise ServiceTimeError(f"the service model of broker {broker!r} returned {type(spent).__name__} "
                               f"{spent!r} for a message of kind {type(msg).__name__}; it must return seconds (a float)")
    if not 0 <= spent < math.inf:
        raise ServiceTimeError(f"the service model of broker {broker!r} returned {spent!r} s for a "
                               f"message of kind {type(msg).__name__}; a service time is a finite number of seconds >= 0")
    return float(spent)

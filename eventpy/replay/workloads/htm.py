"""Highway traffic management, 000 §8.4.

Highways of 100 miles in all (four roads of 25 miles by default) with 200 sensors, one every half
mile, each a publisher of `htm.Reading` events. Edge brokers each cover a stretch of highway and
serve the sensors and the vehicles on it (100 vehicles per edge broker); they hang off a core of
brokers in an acyclic, non-hierarchical graph (highways are not hierarchical), adjacent stretches
on the same core broker. The paper's scale is 150 edge brokers and 20 core brokers, 15,000 vehicles.

A vehicle wants the readings of the 25 sensors around it: `road == r and mile >= lo and mile <= hi`,
a 12.5-mile window centred on its position. Each update moves the window by one sensor in the
vehicle's direction (turning at the road's ends): §8.4.2 counts an update as "a subscriber updating
one of its subscriptions to one of the 25 publishers", i.e. dropping the sensor it left behind and
taking the next one. One update is one UPD of `lo` and `hi`. Updates come at the update rate of the
edge broker divided among its vehicles ("100 updates/s" is each of 100 vehicles once a second).
"""

from __future__ import annotations

from typing import Any

from ...runtime.model import EventType
from ...runtime.overlay import Topology, random_tree
from ..trace import Constraint, Subscription, Trace
from ._common import COUNT, NON_NEGATIVE, POSITIVE, arrivals, option, sort_script, spread, stream

READING = EventType("htm.Reading", road=str, mile=float, density=float, speed=float)
WINDOW = (Constraint("mile", ">=", "lo"), Constraint("mile", "<=", "hi"))  # after `road == <its road>`
SENSOR_SPACING = 0.5
SETTINGS = {"subscribers": COUNT, "vehicles_per_broker": COUNT, "edge_brokers": COUNT, "core_brokers": COUNT,
            "roads": COUNT, "miles": POSITIVE, "sensors": COUNT, "window_sensors": COUNT,
            "update_rate": NON_NEGATIVE, "publish_rate": POSITIVE, "duration": POSITIVE}


def htm(seed: int, s: dict[str, Any]) -> Trace:
    per_edge = option(s, "vehicles_per_broker", 100, int)
    n_edge = option(s, "edge_brokers", 8, int)
    n_vehicles = n_edge * per_edge
    if "subscribers" in s:  # the paper grows subscribers by adding edge brokers (§8.4.2)
        n_vehicles = int(s["subscribers"])
        n_edge = max(1, -(-n_vehicles // per_edge))
    n_core = option(s, "core_brokers", max(1, round(n_edge * 20 / 150)), int)
    n_roads = option(s, "roads", 4, int)
    length = option(s, "miles", 100.0)
    n_sensors = option(s, "sensors", 200, int)
    window = option(s, "window_sensors", 25, int) * SENSOR_SPACING
    rate = option(s, "update_rate", 0.0)  # per edge broker, spread over its vehicles
    sensor_rate = option(s, "publish_rate", 2.0)  # readings per second per sensor
    duration = option(s, "duration", 2.0)
    road_len = length / n_roads
    roads = [f"R{i}" for i in range(n_roads)]

    core = random_tree(n_core, seed)
    core_names = tuple(f"c{i}" for i in range(n_core))
    rename = dict(zip(core.brokers, core_names))
    edges = tuple(f"e{i}" for i in range(n_edge))
    links = [(rename[a], rename[b]) for a, b in core.links]
    links += [(core_names[k * n_core // n_edge], e) for k, e in enumerate(edges)]
    topology = Topology(core_names + edges, tuple(links), "htm")
    stretch = length / n_edge

    def place(offset: float) -> tuple[str, float, str]:
        road = min(int(offset // road_len), n_roads - 1)
        return roads[road], offset - road * road_len, edges[min(int(offset // stretch), n_edge - 1)]

    clients: dict[str, str] = {}
    advertises: dict[str, tuple[str, ...]] = {}
    sensors = []
    spacing = length / n_sensors
    for i in range(n_sensors):
        road, mile, edge = place((i + 0.5) * spacing)
        name = f"sensor{i}"
        clients[name], advertises[name] = edge, (READING.name,)
        sensors.append((name, road, mile))

    subs: list[Subscription] = []
    motion = []
    vehicles = spread(n_vehicles, list(edges))
    for k, edge in enumerate(edges):
        for j in range(vehicles[edge]):
            name = f"car{k}_{j}"
            rng = stream(seed, "car", name)
            road, mile, _ = place(rng.uniform(k * stretch, (k + 1) * stretch))
            clients[name] = edge
            guard = (Constraint("road", "==", const=road),) + WINDOW
            step = SENSOR_SPACING * rng.choice((-1, 1))
            sub = Subscription(len(subs), name, READING.name, guard, _window(mile, window))
            subs.append(sub)
            motion.append((sub, mile, step))

    updates: list[tuple] = []
    for sub, mile0, step in motion:
        per_vehicle = rate / vehicles[clients[sub.client]]  # the edge broker's rate, shared
        for k, t in enumerate(arrivals(stream(seed, "moves", sub.client), per_vehicle, duration), 1):
            updates.append((t, sub.sub_id, _window(_position(mile0, step * k, road_len), window)))

    events: list[tuple] = []
    for name, road, mile in sensors:
        rng = stream(seed, "readings", name)
        for t in arrivals(rng, sensor_rate, duration):
            events.append((t, name, READING.name, (road, mile, rng.uniform(0, 120), rng.uniform(0, 80))))
    events, updates = sort_script(events, updates)
    meta = {"subscribers": len(subs), "update_rate": rate, "brokers": len(topology.brokers)}
    return Trace("htm", seed, topology, {READING.name: READING}, clients, advertises, subs, events,
                 updates, duration, meta)


def _window(mile: float, width: float) -> dict[str, float]:
    return {"lo": mile - width / 2, "hi": mile + width / 2}


def _position(mile0: float, moved: float, road_len: float) -> float:
    """Position after moving `moved` miles, turning at both ends of the road."""
    x = (mile0 + moved) % (2 * road_len)
    return x if x <= road_len else 2 * road_len - x

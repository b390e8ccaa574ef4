"""`live.md`: every live engine side by side, one table per update rate, with what each column
measures and the caveats of measuring on one machine."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..report import fmt

COLUMNS = (  # key, header
    ("engine", "engine"),
    ("delay_ms", "update delay ms"),
    ("delay_samples", "(samples)"),
    ("bytes_to_subscribers", "bytes to subscribers"),
    ("bytes_per_delivery", "bytes / delivered"),
    ("throughput", "throughput /s/sub"),
    ("latency_p50_ms", "lat p50 ms"),
    ("latency_p99_ms", "lat p99 ms"),
    ("missed", "missed"),
    ("spurious", "spurious"),
    ("false_positives", "false pos."),
    ("sub_messages", "sub msgs"),
    ("bytes_from_subscribers", "bytes from subscribers"),
    ("lag_ms", "driver lag ms"),
)

NOTES = """\
How to read it:

* **update delay**: from an update to the first delivered event, published after it, that matches
  the new subscription but not the old one (000 §8.1 (a)), in wall-clock ms. It includes waiting for
  such an event to be published, so it is bounded below by the workload's publication rate; it is
  the difference between engines that matters. An update supersedes the previous probe.
* **bytes to subscribers**: everything the server sent on the subscribers' TCP connections during
  the measured phase (payload and protocol framing, not TCP/IP headers), counted by a relay process
  the subscribers connect through; **bytes / delivered** divides it by the delivered events.
  Redis sends every event of a subscribed type (the wildcard approach), ActiveMQ a STOMP MESSAGE
  frame with the attributes as headers, EventPy its binary frames.
* **throughput**: useful events (delivered and wanted by the ground truth) per second per subscribing
  client, over the measured phase: the scaled trace's duration, or longer while deliveries lag. The
  trace's publication rate bounds it; it drops when an engine falls behind.
* **latency**: receive time minus the time the driver called publish, p50 and p99.
* **missed** / **false pos.**: against the ground truth of the scaled trace (an update is in force
  from its instant). Re-subscription (ActiveMQ, eventpy-resub) misses events in the gap between the
  unsubscribe and the new subscription; events in flight across an update are missed or false
  positives for every engine.
* **spurious**: events that reached a subscriber and failed its current guard there. For Redis this
  is the client-side filtering of every event of the type; EventPy's client counts the ones its
  strictness check rejected; for ActiveMQ they are messages of a replaced selector still in flight.
* **sub msgs**: subscription-related messages sent by subscribers (EventPy SUB/UNSUB/UPD, ActiveMQ
  SUBSCRIBE/UNSUBSCRIBE; Redis none — an update is local). **bytes from subscribers** is the other
  direction of the same connections.
* **driver lag**: how far behind its schedule the single publishing thread fell at worst. The driver,
  the clients and the relay share this machine's cores with the servers: a large lag means the run
  measured the machine more than the engine (Redis delivers every event to every subscriber, and
  the Python clients pay for filtering them).
"""


def table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| " + " | ".join(h for _, h in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        r = {**r, "bytes_per_delivery": r["bytes_to_subscribers"] / r["delivered"] if r["delivered"] else math.nan}
        lines.append("| " + " | ".join(fmt(r.get(k)) for k, _ in COLUMNS) + " |")
    return lines


def write_live_report(rows: list[dict[str, Any]], out: Path, *, command: str, name: str, brokers: int,
                      wall: float, failures: list[str]) -> Path:
    out = Path(out)
    lines = [f"# Live engines: {name}", "", f"`{command}` — {wall:.0f} s in all.", ""]
    if rows:
        r0 = rows[0]
        lines += [f"Workload `{r0['workload']}` (seed {r0['seed']}), scaled to this machine: "
                  f"{r0['subscriptions']} subscriptions of {r0['subscribers']} subscribing clients, "
                  f"{r0['published']} events, replayed at {r0['speed']:g}x the trace's clock; EventPy on "
                  f"{brokers} broker processes (the trace's topology), ActiveMQ and Redis on one server each, "
                  "all on 127.0.0.1.", ""]
    for rate in sorted({r["update_rate"] for r in rows}):
        group = [r for r in rows if r["update_rate"] == rate]
        lines += [f"## Update rate {rate:g}/s ({group[0]['updates']} updates)", ""] + table(group) + [""]
    if failures:
        lines += ["## Engines that did not run", ""] + [f"* {f}" for f in failures] + [""]
    lines += [NOTES]
    path = out / "live.md"
    path.write_text("\n".join(lines))
    return path

"""The desk's scenario and its centralized oracle, for the embedded overlay (one process) and the
TCP overlay (a subscriber and an exchange process, sub.py and pub.py).

Each round: maybe a new monitor, maybe one closed; every monitor's thresholds, switch, class-level
default or watchlist changed by the subscriber; maybe a `retune` event that changes bands from an
event method; then quotes. The oracle evaluates every guard with the fields in force when each
quote is published. With `confirm`, the subscriber waits for its changes to be in force at every
broker (`eventpy.confirm`) before the quotes, and each monitor must get exactly what its guard
admits. Without, the brokers may still hold any state a store made on the way (the update delay,
README, docs/concurrency.md), while the subscriber's own filter holds the last: a quote is owed
when every one of those states admits it (and the monitor was not made this round: its
subscription may not have reached the exchange's broker yet), and allowed only if the last does.
`retune` is followed by the exchange's drain(), which returns once the event methods it reached
have returned, and their updates are ahead of the drain's answer on every link (FIFO).
"""

from __future__ import annotations

import random

FIRMS = ["IBM", "ORCL", "MSFT", "AAPL"]
BANDS = ("BandMonitor", "VolumeBandMonitor")


def handle(bands, objects: dict, op: str, *args):
    """One command of the subscriber (sub.py reads them as JSON; a list stands for a set)."""
    import eventpy

    if op == "new":
        name, cls, values = args
        objects[name] = getattr(bands, cls)(name, *[set(v) if isinstance(v, list) else v for v in values])
    elif op == "set":
        name, field, value = args
        setattr(objects[name], field, set(value) if isinstance(value, list) else value)
    elif op == "set_class":  # a class-level default: reaches the objects that have none of their own
        cls, field, value = args
        setattr(getattr(bands, cls), field, value)
    elif op == "close":
        objects.pop(args[0]).close()
    elif op == "confirm":
        for o in objects.values():
            eventpy.confirm(o, timeout=20)
    elif op == "report":
        return {name: [list(e) for e in o.got] for name, o in objects.items()}
    return "ok"


def publish(bands, op: str, *args):
    """One command of the exchange (pub.py)."""
    import eventpy

    if op == "pub":
        cls, method, values = args
        getattr(getattr(bands, cls), method)(*values)
    elif op == "drain":
        eventpy.drain(20)
    return "ok"


def holds(o: dict, published: str, firm: str, price: float, volume: int) -> bool:
    """The guard of monitor `o` (its fields as a dict) on a quote of class `published`."""
    if o["cls"] == "WatchlistMonitor":
        return published == "WatchlistMonitor" and firm in o["watch"] and price > o["limit"]
    if published != "BandMonitor":  # BandMonitor.quote reaches the subclass too, nothing else
        return False
    band = price < o["low"] or price > o["high"] * (1 + o["margin"])
    if o["cls"] == "VolumeBandMonitor":
        return firm == o["firm"] and volume >= o["min_volume"] and band
    return firm == o["firm"] and o["active"] and band


def run(sub, pub, rounds: int, seed: int, confirm: bool) -> list[str]:
    """Drive the desk; the mismatches between what each monitor got and the oracle (empty: none)."""
    rng = random.Random(seed)
    objs: dict[str, dict] = {}
    owed: dict[str, list] = {}  # name -> [(quote, required, allowed)]
    min_volume = 100  # VolumeBandMonitor's class-level default
    count = 0
    snaps: dict[str, list[dict]] = {}

    def snap(name):
        snaps.setdefault(name, []).append({**objs[name], "watch": set(objs[name].get("watch", ()))})

    def store(name, field, value):
        objs[name][field] = set(value) if isinstance(value, list) else value
        sub("set", name, field, value)
        snap(name)

    def new():
        nonlocal count
        count += 1
        name, cls = f"m{count}", rng.choice(BANDS + ("WatchlistMonitor",))
        if cls == "WatchlistMonitor":
            watch = sorted(rng.sample(FIRMS, 2))
            sub("new", name, cls, [watch, 100.0])
            objs[name] = {"cls": cls, "watch": set(watch), "limit": 100.0}
        else:
            firm = rng.choice(FIRMS)
            sub("new", name, cls, [firm, 90.0, 110.0])
            objs[name] = {"cls": cls, "firm": firm, "low": 90.0, "high": 110.0, "margin": 0.0, "active": True,
                          "min_volume": min_volume}
        owed[name] = []
        return name

    for _ in range(4):
        new()
    sub("confirm")
    for _ in range(rounds):
        snaps.clear()
        for name in objs:
            snap(name)
        fresh = {new()} if rng.random() < 0.4 else set()
        if len(objs) > 3 and rng.random() < 0.3:
            gone = rng.choice(sorted(objs))
            sub("close", gone)
            del objs[gone], owed[gone]
            fresh.discard(gone)
        for name, o in list(objs.items()):
            if o["cls"] == "WatchlistMonitor":
                store(name, "watch", sorted(rng.sample(FIRMS, rng.randint(0, 3))))
                store(name, "limit", round(rng.uniform(90, 110), 2))
            else:
                store(name, "low", round(rng.uniform(85, 100), 2))
                store(name, "margin", rng.choice([0.0, 0.01, 0.05]))
                if o["cls"] == "BandMonitor":
                    store(name, "active", rng.random() < 0.7)
        if rng.random() < 0.5:
            min_volume = rng.choice([50, 100, 200])
            sub("set_class", "VolumeBandMonitor", "min_volume", min_volume)
            for name, o in objs.items():
                if o["cls"] == "VolumeBandMonitor":
                    o["min_volume"] = min_volume
                    snap(name)
        if confirm:
            sub("confirm")
            snaps.clear()
            fresh = set()
        if rng.random() < 0.6:  # a trader retunes a firm's bands: the event methods store them
            firm, low, high = rng.choice(FIRMS), round(rng.uniform(85, 100), 2), round(rng.uniform(100, 115), 2)
            pub("pub", "BandMonitor", "retune", [firm, low, high])
            pub("drain")
            for name, o in objs.items():
                if o["cls"] != "WatchlistMonitor" and o["firm"] == firm:
                    o["low"], o["high"] = low, high
                    snaps[name] = [dict(o)]  # in force at every broker once the drain returned
        for _ in range(20):
            cls = rng.choice(["BandMonitor", "WatchlistMonitor"])
            quote = [rng.choice(FIRMS), round(rng.uniform(80, 120), 2), rng.randint(0, 300)]
            for name, o in objs.items():
                allowed = holds(o, cls, *quote)
                required = allowed and name not in fresh and all(holds(s, cls, *quote) for s in snaps.get(name, ()))
                owed[name].append((quote, required, allowed))
            pub("pub", cls, "quote", quote)
        pub("drain")
    got = sub("report")
    problems = []
    for name, verdicts in owed.items():
        received, i = got[name], 0
        for quote, required, allowed in verdicts:
            if i < len(received) and received[i] == quote:
                if not allowed:
                    problems.append(f"{name} ({objs[name]['cls']}) got {quote}, which its guard rejects")
                i += 1
            elif required:
                problems.append(f"{name} ({objs[name]['cls']}) missed {quote}")
        if i != len(received):
            problems.append(f"{name} got {received[i:]} out of order or never published")
    return problems

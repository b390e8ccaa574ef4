"""The soak harness's oracle (tools/soak_oracle.py) on a hand-made run: what it counts as owed,
missed, excused by a broker restart, duplicated and against the guard. The soak itself runs real
processes for minutes and is a tool (BENCHMARKS.md, "Soak"), not a test."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import soak_oracle  # noqa: E402

T0 = 1_000_000.0
OVERLAY = """links = [["b0", "b1"], ["b1", "b2"], ["b1", "b3"]]
[brokers.b0]
host = "127.0.0.1"
port = 7000
[brokers.b1]
host = "127.0.0.1"
port = 7001
[brokers.b2]
host = "127.0.0.1"
port = 7002
[brokers.b3]
host = "127.0.0.1"
port = 7003
"""


def write(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def make_run(tmp: Path) -> Path:
    """A publisher at b0, one subscription at b2 (through b1) and one at b0 itself; b1 is restarted
    at T0+100 and back at T0+103."""
    (tmp / "run").mkdir()
    (tmp / "clients").mkdir()
    (tmp / "run" / "overlay.toml").write_text(OVERLAY)
    write(tmp / "events.jsonl", [{"k": "restart", "broker": "b1", "t_stop": T0 + 100, "t_ready": T0 + 103}])
    write(tmp / "samples.jsonl", [
        {"t": T0 + 60 * i, "brokers": {"b0": {"pid": 1, "rss_kb": 40_000 + 1024 * i, "stats": {"received": i},
                                               "log_bytes": 100 * i}},
         "clients": {"sub0": {"pid": 9, "rss_kb": 30_000}}} for i in range(6)])
    pubs = [  # seq: time, x, kind
        (1, T0 + 10, 5.0, "a"),   # owed to s1, delivered once
        (2, T0 + 20, 6.0, "a"),   # owed to s1, missed
        (3, T0 + 30, 7.0, "a"),   # owed to s1, delivered twice
        (4, T0 + 101, 8.0, "a"),  # owed to s1, lost while b1 (on its path) was down: excused
        (5, T0 + 50, 50.0, "a"),  # not admitted by s1; delivered to it anyway: a strictness violation
        (6, T0 + 60, 9.0, "a"),   # s1's limit drops below 9 just after its publication: not owed
        (7, T0 + 102, 1.0, "a"),  # owed to s2 at b0, whose path (b0 to b0) has no b1: missed
    ]
    write(tmp / "clients" / "pub0.jsonl", [{"k": "node", "t": T0, "b": "tcp://127.0.0.1:7000"}]
          + [{"k": "p", "seq": s, "t": t, "x": x, "kind": k} for s, t, x, k in pubs]
          + [{"k": "nodeclose", "t": T0 + 200, "stats": {"published": len(pubs)}}])
    d = lambda sid, seq, p: {"k": "d", "sid": sid, "pub": "pub0", "seq": seq, "tr": dict((s, t) for s, t, *_ in pubs)[seq] + 0.01, "p": p}  # noqa: E731
    write(tmp / "clients" / "sub0.jsonl", [
        {"k": "node", "t": T0, "b": "tcp://127.0.0.1:7002"},
        {"k": "sub", "sid": "s1", "t": T0 + 1, "g": "win", "p": {"lo": 0.0, "hi": 10.0}},
        {"k": "conf", "sid": "s1", "t": T0 + 2},
        {"k": "upd", "sid": "s1", "t": T0 + 60.2, "p": {"lo": 0.0, "hi": 8.5}},
        d("s1", 1, {"lo": 0.0, "hi": 10.0}), d("s1", 3, {"lo": 0.0, "hi": 10.0}), d("s1", 3, {"lo": 0.0, "hi": 10.0}),
        d("s1", 5, {"lo": 0.0, "hi": 10.0}),
        {"k": "nodeclose", "t": T0 + 200, "stats": {"delivered": 4}},
    ])
    write(tmp / "clients" / "sub1.jsonl", [
        {"k": "node", "t": T0, "b": "tcp://127.0.0.1:7000"},
        {"k": "sub", "sid": "s2", "t": T0 + 90, "g": "set", "p": {"lo": 0.0, "hi": 2.0, "kinds": ["a"], "active": True}},
        {"k": "conf", "sid": "s2", "t": T0 + 91},
        {"k": "close", "sid": "s2", "t": T0 + 150, "t1": T0 + 150.1},
        {"k": "nodeclose", "t": T0 + 200, "stats": {"delivered": 0}},
    ])
    return tmp


def test_the_oracle_counts_what_is_owed_missed_excused_and_wrong(tmp_path):
    v = soak_oracle.verdict(make_run(tmp_path))
    # s1 is owed 1, 2, 3, 4 and 7 (4 and 7 lost while b1 was down: excused), s2 only 7
    assert (v["owed"], v["missed"], v["excused"]) == (6, 2, 2)
    assert sorted((m["sid"], m["seq"]) for m in v["examples"]["missed"]) == [("s1", 2), ("s2", 7)]
    assert (v["duplicated"], v["strictness"], v["phantom"], v["after_close"]) == (1, 1, 0, 0)
    assert v["client_counters_add_up"]
    b0 = [p for p in v["memory"] if p["name"] == "b0"][0]
    assert abs(b0["slope_mb_per_h"] - 60.0) < 0.01  # 1 MiB a minute
    assert v["broker_logs"]["b0"]["kb_per_h"] > 0


def test_a_counter_that_does_not_add_up_is_reported(tmp_path):
    run = make_run(tmp_path)
    log = run / "clients" / "sub0.jsonl"
    log.write_text(log.read_text().replace('"delivered": 4', '"delivered": 3'))
    assert not soak_oracle.verdict(run)["client_counters_add_up"]

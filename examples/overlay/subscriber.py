"""A trader on one edge of the overlay; it runs for SECONDS (default 30), then says what it bought.

    eventpy overlay up --brokers 3
    EVENTPY_BROKER=tcp://127.0.0.1:7102 python subscriber.py 30 &
    EVENTPY_BROKER=tcp://127.0.0.1:7100 python publisher.py
    eventpy overlay down
"""

import sys
import time

import eventpy
import market  # market.epy, compiled on import

alice = market.Trader("alice", 100.0)
eventpy.drain(10)  # the subscription is in place along the overlay
print("alice waits for IBM below 100.0", flush=True)
time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 30.0)
print(f"alice bought at {alice.bought}; final limit {alice.limit}", flush=True)

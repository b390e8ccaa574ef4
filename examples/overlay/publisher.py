"""An exchange on the other edge of the overlay: a few IBM and ORCL quotes.

    EVENTPY_BROKER=tcp://127.0.0.1:7100 python publisher.py
"""

import time

import eventpy
import market  # market.epy, compiled on import

node = eventpy.default_node()      # the node market.Trader.quote(...) publishes through
node.advertise(market.Trader.quote)
eventpy.drain(10)  # subscriptions come back along the advertisement before the first quote
for firm, price in [("IBM", 101.0), ("IBM", 99.0), ("ORCL", 50.0), ("IBM", 99.5), ("IBM", 97.0)]:
    market.Trader.quote(firm, price)
    print(f"published {firm} {price}", flush=True)
    time.sleep(0.2)  # time for alice's new limit to reach the brokers: 99.5 is then filtered there

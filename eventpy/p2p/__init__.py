"""Broker-less content-based publish/subscribe (paper 004): peers arrange themselves in an overlay
that meets each subscriber's delay requirement under its bandwidth constraint.

    from eventpy import EventType, p2p
    Reading = EventType("weather.Reading", temp=int, wind=int)
    net = p2p.Network(p2p.space_of(Reading, temp=(-40, 50), wind=(0, 200)), seed=1)
    station = net.add_publisher(out_degree=8)
    p2p.subscribe(net, Reading, "temp > t and wind >= 60", {"t": 30}, delay=2, out_degree=8,
                  on_event=print)
    net.run(30)                                   # cycles: the overlay forms
    net.publish(station, {"temp": 35, "wind": 80})  # -> {'temp': 35, 'wind': 80}
"""

from ._guards import guard_box, space_of, subscribe
from ._network import Network
from ._space import (
           Box,
           Dimension,
           Space,
           coarser,
           covered,
           matches,
           merge,
           minimal,
           overlaps,
)

__all__ = ["Box", "Dimension", "Network", "Space", "coarser", "covered", "guard_box", "matches", "merge",
           "minimal", "overlaps", "space_of", "subscribe"]

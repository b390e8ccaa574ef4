"""Late events and summaries that move with time.

The summary a broker sends towards the publishers holds, for each evolving subscription behind it,
the version over its window of publication times, which starts about a horizon before the window
was last moved (_evolving). A broker upstream that filters an event published before that (an
event that reached it late: a publisher running ahead of its socket, events kept while a broker
was down, a publisher whose clock is behind) would drop it although the subscription wanted it at
its publication time; so would it one stamped past the window's end (a publisher whose clock is
ahead). So a summary of evolving subscriptions is marked moving (`Sub.moving`, the
horizon of the broker that built it, carried on through every broker it is aggregated into), and a
broker forwards an event older than about half a horizon (or stamped more than that ahead of its
clock) to every neighbor whose summary moves, whatever its values. The brokers holding the subscriptions check such an event exactly, at its
publication time (VES's out-of-window path, LEES and CLEES always), so it is delivered where it is
owed and nowhere else. On time, nothing changes: an event younger than that is covered by the
versions, and is filtered by them as before. A mixin of `Broker`, whose state it reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Hashable

from ...guards._plan import EMPTY_INTERVAL, EMPTY_SET

if TYPE_CHECKING:
    from ._adverts import _TypeState

Link = Hashable

# an event is late at a broker when published more than LATE_SHARE of the shortest horizon of a
# moving summary before the broker's overlay clock: a version covers from a horizon before its
# window last moved, so this leaves half a horizon for the brokers' clocks to differ; likewise
# one stamped more than that ahead (a version covers up to two horizons after its window moved,
# at most about a horizon ago)
LATE_SHARE = 0.5


def nothing_of(etype: Any) -> dict:
    """A filter no event matches (an empty constraint on the first attribute)."""
    first, kind = next(iter(etype.schema.items()))
    return {first: EMPTY_INTERVAL if kind in (int, float) else EMPTY_SET}


class LateEvents:
    """Moving summaries and late events, for Broker."""

    def _track_moving(self, ts: _TypeState, link: Link, sid: int, horizon: float) -> None:
        ts.moving[(link, sid)] = horizon
        self._moving_changed(ts, link)

    def _untrack_moving(self, ts: _TypeState, link: Link, sid: int) -> None:
        if ts.moving.pop((link, sid), None) is not None:
            self._moving_changed(ts, link)

    def _moving_changed(self, ts: _TypeState, link: Link) -> None:
        horizons = [h for (lk, _), h in ts.moving.items() if lk == link]
        if horizons and link in self.broker_links:
            ts.late_links[link] = min(horizons)
        else:  # (also a broker link being disconnected: no longer in broker_links by then)
            ts.late_links.pop(link, None)
        ts.seen.clear()  # every upstream summary's mark is looked at again by _propagate

    def _moving_for(self, ts: _TypeState, link: Link) -> float:
        """The mark of the summary for the broker at `link`: the shortest horizon among the moving
        subscriptions it summarizes (those from other links), 0.0 if none moves."""
        return min((h for (lk, _), h in ts.moving.items() if lk != link), default=0.0)

    def _late_targets(self, ts: _TypeState, link: Link, time: float) -> list:
        """The neighbors to forward an event published at `time` to because it is late for their
        moving summaries (not back where it came from), or stamped ahead of them: a publisher
        whose clock is ahead stamps times past the versions' window (R + 2 horizons, R at most
        about a horizon ago), which the brokers on the way dropped while the subscriber's own
        broker, checking it exactly, delivered it (so only a publisher on that broker was heard)."""
        now = self.evolving.overlay_clock()
        out = [target for target, h in ts.late_links.items()
               if target != link and (time < now - LATE_SHARE * h or time > now + LATE_SHARE * h)]
        if out:
            self._stats["pub_late_forwarded"] += len(out)
        return out

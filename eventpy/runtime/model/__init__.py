"""The subscription model: event types, events and normalized constraints."""

from ._constraints import (
    ANY_VALUE,
    EVERYTHING,
    INF,
    Constraint,
    Filter,
    Interval,
    SetDelta,
    ValueSet,
    derive,
    filter_covers,
    filter_lub,
    filter_matches,
    filter_str,
    set_changes,
    set_constraint,
    set_delta,
)
from ._schema import ATTRIBUTE_TYPES, Event, EventType, check_value, exact_types, received_event

__all__ = [
    "ANY_VALUE", "ATTRIBUTE_TYPES", "EVERYTHING", "INF", "Constraint", "Event", "EventType",
    "Filter", "Interval", "SetDelta", "ValueSet", "check_value", "derive", "exact_types", "filter_covers", "filter_lub",
    "filter_matches", "filter_str", "received_event", "set_changes", "set_constraint", "set_delta",
]

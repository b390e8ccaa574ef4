"""The client node algorithm (sans-I/O)."""

from ._core import MODES, ClientCore, SchemaRefused, SubscriptionState, event_info, passes
from ._monitor import UpdateMonitor

__all__ = ["MODES", "ClientCore", "SchemaRefused", "SubscriptionState", "UpdateMonitor", "event_info", "passes"]

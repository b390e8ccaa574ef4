"""The client node algorithm (sans-I/O)."""

from ._core import MODES, ClientCore, SubscriptionState, event_info

__all__ = ["MODES", "ClientCore", "SubscriptionState", "event_info"]

"""The sans-I/O broker: messages in, messages out (DESIGN §2)."""

from ._broker import MODES, Broker
from ._state import MessageError
from ._summary import SUMMARIES

__all__ = ["MODES", "SUMMARIES", "Broker", "MessageError"]

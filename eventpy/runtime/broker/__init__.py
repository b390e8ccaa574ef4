"""The sans-I/O broker: messages in, messages out (DESIGN §2)."""

from ._broker import MODES, Broker
from ._evolving import DEFAULT_TTL, EVOLVING_ENGINES
from ._state import MessageError
from ._summary import SUMMARIES

__all__ = ["DEFAULT_TTL", "EVOLVING_ENGINES", "MODES", "SUMMARIES", "Broker", "MessageError"]

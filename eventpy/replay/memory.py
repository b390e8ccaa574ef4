"""The memory a broker holds (000 §8.1 (e)): a walk of its object graph summing `sys.getsizeof`,
with numpy arrays counted by their buffers. Objects shared by several brokers (event types, interned
strings) are counted in each, as each process of a real overlay would hold its own copy."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

_ATOMS = (int, float, str, bytes, bool, type(None), complex)


def deep_size(root: Any) -> int:
    seen: set[int] = set()
    stack = [root]
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, type) or callable(obj) and not hasattr(obj, "__dict__"):
            continue
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            total += sys.getsizeof(obj)  # includes the buffer when the array owns it
            continue
        total += sys.getsizeof(obj)
        if isinstance(obj, _ATOMS):
            continue
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(obj)
        else:
            d = getattr(obj, "__dict__", None)
            if d is not None:
                stack.append(d)
            for cls in type(obj).__mro__:
                for slot in getattr(cls, "__slots__", ()):
                    if isinstance(slot, str) and hasattr(obj, slot):
                        stack.append(getattr(obj, slot))
            if hasattr(obj, "__iter__") and type(obj).__module__.startswith("collections"):
                try:
                    stack.extend(list(obj))
                except TypeError:
                    pass
    return total

"""A weak set of objects by identity (the objects that follow their class's defaults)."""

from __future__ import annotations

import weakref
from typing import Any


class IdentityWeakSet:
    """Live objects, told apart by identity: a WeakSet hashes and compares its members by their
    own __hash__ and __eq__, so an object of a class that defines __eq__ (unhashable, as Python
    makes it) could not join, and two objects equal by __eq__ counted as one. Used under
    inheritors_lock; a weakref callback only appends to a list (it may run in any thread, at any
    allocation), which add() and iteration prune."""

    def __init__(self) -> None:
        self._refs: dict[int, weakref.ref] = {}
        self._dead: list[tuple[int, weakref.ref]] = []

    def add(self, obj: Any) -> None:
        self._prune()
        key, dead = id(obj), self._dead
        self._refs[key] = weakref.ref(obj, lambda ref, key=key: dead.append((key, ref)))

    def __iter__(self) -> Any:
        self._prune()
        return iter([o for o in (ref() for ref in list(self._refs.values())) if o is not None])

    def _prune(self) -> None:
        while self._dead:
            key, ref = self._dead.pop()
            if self._refs.get(key) is ref:  # (not a newer object that got the same id)
                del self._refs[key]

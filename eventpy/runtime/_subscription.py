"""`Subscription`, what `Node.subscribe` returns, and `UpdateNotConfirmed`, what `confirm` raises
(re-exported by eventpy.runtime.api and eventpy)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ..guards import SUBSCRIBED_AT
from ._boundary import callers_mistake
from ._client_caps import LimitExceeded
from ._executor import _here
from ._params import freeze
from ._process import _sent_by_callback
from ._sizes import check_sent
from ._sub_args import checked_update, param_kinds
from .client import SubscriptionState
from .model import EventType

if TYPE_CHECKING:
    from .api import Node


class Subscription:
    """A live subscription: `update(**params)` sends UPDs, `close()` unsubscribes."""

    def __init__(self, node: "Node", state: SubscriptionState) -> None:
        self._node = node
        self._state = state
        # the program's parameters (not the subscription time elapsed() counts from, set by the client)
        self._kinds = param_kinds(state.env)

    @property
    def event_type(self) -> EventType:
        """The event type subscribed to."""
        return self._state.etype

    @property
    def guard(self) -> str:
        """The guard's text, as given to `subscribe`."""
        return self._state.plan.source

    @property
    def params(self) -> Mapping[str, Any]:
        """The parameters' current values (a copy: change them with `update`)."""
        return {k: v for k, v in self._state.env.items() if k != SUBSCRIBED_AT}

    @property
    def closed(self) -> bool:
        """True once `close()` (or the node's) has unsubscribed it."""
        return self._state.closed

    def check(self, **params: Any) -> None:
        """Raise TypeError (or ValueError: too large to send, or LimitExceeded: past a per-client
        limit of the broker) if `update(**params)` would; nothing is sent."""
        frozen = checked_update(self._state.plan, self._kinds, params)
        self._check_caps(frozen)
        if self._node._max_frame is not None:  # after the kinds: the variables are computed from them
            # one UPD carries the variables they change (a SUB with all of them, in resub mode)
            env = {**self._state.env, **frozen}
            names = env if self._node._local.core.mode == "resub" else params
            check_sent(self._node._max_frame, self._state.plan, env, names)

    def _check_caps(self, frozen: Mapping[str, Any]) -> None:
        """LimitExceeded if the broker refused this subscription (it said so), or would refuse
        the update: set members past its max_set_members (_client_caps)."""
        state, core = self._state, self._node._local.core
        if state.refused:
            raise LimitExceeded(state.refused)
        if core.caps.max_set_members is None or not frozen:
            return
        env = {**state.env, **frozen}
        values = list(state.values)
        state.plan.recompute(env, values, list(frozen))
        error = core.members_error(state, values)
        if error is not None:
            raise error

    def update(self, **params: Any) -> None:
        """Change parameters; only the subscription variables that depend on them are sent."""
        try:
            self.check(**params)
        except (TypeError, ValueError) as e:
            callers_mistake(e)
            raise  # from the caller's line (_boundary)
        self._apply(params)

    def _apply(self, params: Mapping[str, Any]) -> None:
        """`update` of parameters already checked (the language checks a field before storing it)."""
        frozen = {k: freeze(v) for k, v in params.items()}
        self._node._local.send(lambda core: core.update(self._state, frozen))
        if _here.running:  # asked inline: a field store comes here
            _sent_by_callback()
        if self._state.monitor is not None:
            self._node._settler.later(self._state)

    @staticmethod
    def _apply_together(items: list[tuple["Subscription", Mapping[str, Any]]]) -> None:
        """`_apply` of several subscriptions of one node (an .epy object's that read a stored
        field) in one visit of the node: one lock, one wake of the transport, instead of one per
        subscription (a game loop's store reached the node once per event method reading the
        field). One closed meanwhile (obj.close() in another thread) is skipped; RuntimeError if
        the node is closed while one of them is not."""
        node = items[0][0]._node

        def update_all(core: Any) -> None:
            for sub, frozen in items:
                if not sub._state.closed:
                    core.update(sub._state, frozen)

        node._local.send(update_all)
        if _here.running:  # asked inline: a field store comes here
            _sent_by_callback()
        for sub, _ in items:
            if sub._state.monitor is not None:
                node._settler.later(sub._state)

    def confirm(self, timeout: float = 5.0) -> None:
        """Wait until this subscription's changes so far (and every other change this node sent
        before the call) are in force at every broker they must reach (cascading
        acknowledgements, 000 §9.3). Raises UpdateNotConfirmed naming the broker that did not
        acknowledge within `timeout` seconds."""
        self._node.confirm(timeout)

    def close(self) -> None:
        """Unsubscribe; a second call does nothing. A callback that had already passed its check
        in another thread may still start (docs/concurrency.md)."""
        if not self._state.closed:
            try:
                self._node._local.send(lambda core: core.unsubscribe(self._state))
            except RuntimeError:  # the node closed meanwhile, from another thread: it closed this too
                if not self._state.closed:
                    raise
                return
            self._node._local.forget(self._state)
            _sent_by_callback()

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "live"
        return f"<Subscription {self._state.etype.name} when {self.guard!r} {self.params} {state}>"


class UpdateNotConfirmed(TimeoutError):
    """A subscription change was not acknowledged in time (000 §9.3); `broker` names the broker
    (or brokers, comma-separated) that did not answer."""

    __module__ = "eventpy"  # as a traceback's last line names it: eventpy.UpdateNotConfirmed (its public name)

    def __init__(self, broker: str, timeout: float, why: str = "", waited: float | None = None) -> None:
        # `waited`: how long the brokers waited for the one named, when that is less than the
        # timeout (they give up first, so that its name reaches the program in time)
        within = f"{timeout:g}s" if waited is None else f"{waited:.1f}s of the confirm's {timeout:g}s"
        super().__init__(f"broker {broker} did not acknowledge the subscription change within {within}"
                         + (f": {why}" if why else ""))
        self.broker = broker
        self.timeout = timeout

"""A node that reconnects (`LocalNode.resync`) asks again, under new tokens, for the barriers
(FLUSH) and acknowledgements (ACKREQ) it had already sent and still waits for: they went down
with the connection and would never be answered, so `drain()` and `confirm()` waited their
whole timeout although the overlay was back (QA: a drain across a restart of the publisher's
edge broker timed out after 20 s with the overlay up again after 1 s)."""

from __future__ import annotations

from eventpy.runtime.embedded import LocalNode
from eventpy.runtime.messages import Ack, AckReq, Flush, FlushAck


class _Transport:
    """What a LocalNode needs of its transport, and nothing else."""

    mode = "parametric"

    def wake(self, node: LocalNode) -> None:
        pass

    def edge_name(self) -> str:
        return "b0"


def _sent(node: LocalNode, kind: type) -> list:
    return [m for m in node.take() if type(m) is kind]


def test_a_flush_sent_before_a_reconnection_is_asked_again_and_its_answer_wakes_the_drain():
    node = LocalNode(_Transport(), "n")  # type: ignore[arg-type]
    token, done = node.flush()
    assert [m.token for m in _sent(node, Flush)] == [token]  # on the wire, then the connection drops
    node.resync()
    (again,) = _sent(node, Flush)
    assert again.token != token  # the old one may still be in the overlay: a token seen twice is a cycle
    node.receive(FlushAck(again.token))
    assert done.is_set() and not node.acks


def test_a_flush_still_queued_at_the_reconnection_is_sent_once():
    node = LocalNode(_Transport(), "n")  # type: ignore[arg-type]
    token, done = node.flush()
    node.resync()
    assert [m.token for m in _sent(node, Flush)] == [token]


def test_an_ack_request_is_asked_again_with_what_is_left_of_its_budget_and_answered_under_its_token():
    node = LocalNode(_Transport(), "n")  # type: ignore[arg-type]
    token, done = node.request_ack(budget=4.0)
    _sent(node, AckReq)
    node.resync()
    (again,) = _sent(node, AckReq)
    assert again.token != token and 0.0 < again.budget <= 4.0
    node.receive(Ack(again.token, "b2"))
    assert done.is_set() and node.core.acked == {token: "b2"}  # what confirm() reads


def test_a_request_given_up_is_not_asked_again():
    node = LocalNode(_Transport(), "n")  # type: ignore[arg-type]
    token, _ = node.flush()
    node.take()
    node.resync()
    node.give_up(token)  # drain timed out
    node.take()  # the request queued again is sent all the same; its answer finds no waiter
    node.resync()
    assert not _sent(node, Flush) and not node.acks

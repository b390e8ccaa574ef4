"""Events at the edges of the space, as a user of eventpy.p2p meets them: the top value of a real
domain (space_of's domains include both ends), checked against the guard evaluated as Python."""

from __future__ import annotations

from eventpy import EventType, p2p

Level = EventType("tank.Level", x=float)


def settled_net(guard: str, lo: float, hi: float):
    net = p2p.Network(p2p.space_of(Level, x=(lo, hi)), seed=5)
    pub = net.add_publisher(out_degree=4)
    got: list = []
    p2p.subscribe(net, Level, guard, delay=2, out_degree=4, on_event=got.append)
    net.run(30)
    assert net.converged() == 1.0 and net.notified() == 1.0
    return net, pub, got


def test_the_top_of_a_real_domain_arrives_unaltered_and_the_guard_decides_on_it():
    # 1e9 came out as 999999999.9999999: the guard `x < 1e9` then let it through, and the
    # callback saw a value nobody published
    net, pub, got = settled_net("x < 1e9", -1e9, 1e9)
    net.publish(pub, {"x": 1e9})
    net.publish(pub, {"x": 5.0})
    assert got == [{"x": 5.0}]


def test_a_guard_on_the_top_value_of_a_real_domain_gets_it():
    # `x >= 1.0` on [0, 1] was an empty box (clipped to [1, 1)): the subscriber got nothing
    for guard in ("x >= 1.0", "x == 1.0", "x > 0.5"):
        net, pub, got = settled_net(guard, 0.0, 1.0)
        net.publish(pub, {"x": 1.0})
        net.publish(pub, {"x": 0.25})
        assert got == [{"x": 1.0}], guard


def test_the_bottom_of_a_real_domain_and_values_just_outside():
    net, pub, got = settled_net("x <= -0.25", -50.5, -0.25)
    net.publish(pub, {"x": -0.25})
    net.publish(pub, {"x": -50.5})
    assert got == [{"x": -0.25}, {"x": -50.5}]
    for outside in (-50.50000000000001, -0.24999999999999997):
        try:
            net.publish(pub, {"x": outside})
        except ValueError as e:
            assert "outside" in str(e)
        else:
            raise AssertionError(f"{outside!r} was published")


def test_every_view_is_a_share_of_the_peers_online_now():
    # view sizes were fixed when a peer joined: in a network built one peer at a time the first
    # peers kept a view of min_view (20) while the last had 5% of 1,000 (50), and none grew as
    # peers joined later
    space = p2p.Space.uniform(2)
    net = p2p.Network(space, seed=1)
    net.add_publisher(out_degree=4)
    for i in range(999):
        net.add_subscriber(space.box(A1=(1 + i % 100, 128)), delay=3, out_degree=4)
    net.step()
    assert {p.view_size for p in net.online.values()} == {50}
    for i in range(1000):
        net.add_subscriber(space.box(A2=(1 + i % 100, 128)), delay=3, out_degree=4)
    net.step()
    assert {p.view_size for p in net.online.values()} == {100}
    for p in list(net.subscribers)[:1500]:
        net.remove(p.id)
    net.step()
    assert {p.view_size for p in net.online.values()} == {25}


def test_refining_splits_a_real_domain_at_its_midpoints():
    # DZ+1 (Space.finer) halved region(), which ends just above a real domain's top: the
    # midpoint moved by an ulp and a box ending at 0.05 on [0, 0.1] lost the upper half, where
    # 0.05 itself falls
    space = p2p.Space([p2p.Dimension.ints("a", 1, 2), p2p.Dimension.floats("b", 0, 0.1)], 4)
    box = space.box(b=(0.0, 0.05))
    assert space.code(space.point((1, 0.05)))[1] == "1"
    assert space.finer("", box) == ["*0", "*1"]
    top = space.box(b=(0.1, 0.1))  # the top value alone
    assert space.finer("", top) == ["*1"] and space.coarse(top, 1) == ["*1*1"]  # the topmost cell
    assert space.volume("*1") == 0.5

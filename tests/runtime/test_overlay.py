import pytest

from eventpy.runtime.overlay import Topology, TopologyError, line, make_topology, random_tree, star, tree


def test_shapes():
    assert line(4).links == (("b0", "b1"), ("b1", "b2"), ("b2", "b3"))
    assert star(4).edge_brokers() == ["b1", "b2", "b3"]
    assert tree(7).neighbors("b0") == ["b1", "b2"]
    t = random_tree(20, seed=5)
    assert len(t.links) == 19 and t.connected()
    assert line(5).distance("b0", "b4") == 4


def test_cycles_are_refused_with_their_path():
    with pytest.raises(TopologyError, match="cycle: b0 - b1 - b2 - b0|cycle: b2 - b0 - b1 - b2|cycle: .*b0.*b1.*b2"):
        Topology(("b0", "b1", "b2"), (("b0", "b1"), ("b1", "b2"), ("b2", "b0")))


def test_other_mistakes():
    with pytest.raises(TopologyError, match="unknown broker"):
        Topology(("a",), (("a", "b"),))
    with pytest.raises(TopologyError, match="itself"):
        Topology(("a",), (("a", "a"),))
    with pytest.raises(TopologyError, match="unknown topology"):
        make_topology("ring", 3)

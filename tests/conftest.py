import pytest
from hypothesis import HealthCheck, settings

import eventpy
from eventpy.runtime.broker import Broker
from eventpy.runtime.transports.tcp import BrokerServer

# No timing asserts, hypothesis's included: its per-example deadline (200 ms) and its check that
# data is generated fast enough fail a correct test on a loaded machine (a seed hunt met one).
# A test's own @settings still sets what it names.
settings.register_profile("eventpy", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("eventpy")


@pytest.fixture
def fresh_overlay():
    """No embedded overlay or node left over from another test, and none left behind."""
    eventpy.shutdown()
    yield
    eventpy.shutdown()


@pytest.fixture
def broker_server():
    """A factory: `broker_server(name="b0", **kwargs)` starts an in-process BrokerServer on a free
    port of 127.0.0.1 (kwargs go to BrokerServer: max_frame, max_pending, stall, ...) in a thread
    and returns it (`.port`, `.broker`, `.links`). No embedded overlay or node is left over from
    another test; at teardown the nodes are shut down, then every server started is stopped, even
    if the test failed."""
    stops = []

    def start(name: str = "b0", caps=None, **kwargs) -> BrokerServer:  # caps: the broker's per-client limits
        server = BrokerServer(Broker(name, caps=caps), "127.0.0.1", 0, {}, **kwargs)
        stops.append(server.start_in_thread())
        return server

    eventpy.shutdown()
    try:
        yield start
    finally:
        try:
            eventpy.shutdown()
        finally:
            errors = []
            for stop in reversed(stops):
                try:
                    stop()
                except Exception as e:  # stop the others all the same
                    errors.append(e)
            if errors:
                raise errors[0]

import pytest


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for every replay test (bound to 127.0.0.1, UI off)."""
    pytest.importorskip("pyspark")
    from eventpy.replay.spark import session

    s = session("local[2]", app="eventpy-tests")
    yield s
    s.stop()

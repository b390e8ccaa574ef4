import pytest

import eventpy


@pytest.fixture
def fresh_overlay():
    """No embedded overlay or node left over from another test, and none left behind."""
    eventpy.shutdown()
    yield
    eventpy.shutdown()

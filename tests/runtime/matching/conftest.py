"""Shared fixtures: every test taking `matcher_name` runs once per index in MATCHERS."""

from __future__ import annotations

import pytest

from eventpy.runtime.matching import MATCHERS

MATCHER_NAMES = list(MATCHERS)


@pytest.fixture(params=MATCHER_NAMES)
def matcher_name(request: pytest.FixtureRequest) -> str:
    return request.param

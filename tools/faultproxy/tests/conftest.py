"""Fixtures for the fault proxy's own tests (helpers in faultproxy_testlib.py)."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from faultproxy_testlib import EchoServer  # noqa: E402


@pytest.fixture
def echo():
    s = EchoServer()
    yield s
    s.close()


@pytest.fixture
def proxy(echo):
    from faultproxy import FaultProxy
    with FaultProxy("127.0.0.1", echo.port, name="api") as p:
        yield p

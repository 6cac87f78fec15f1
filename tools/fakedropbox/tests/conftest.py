"""Fixtures for the fake's own tests: servers started as real subprocesses."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fakedropbox.client import FakeDropbox  # noqa: E402


@pytest.fixture
def fd():
    """A fresh, empty account."""
    with FakeDropbox.start("--quiet") as f:
        yield f


@pytest.fixture(scope="module")
def sample():
    """The demo account; tests using it must not mutate it."""
    with FakeDropbox.start("--sample-account", "--quiet") as f:
        yield f


@pytest.fixture
def start():
    """Factory: start(*args) -> FakeDropbox, stopped after the test."""
    running = []

    def _start(*args):
        f = FakeDropbox.start(*args)
        running.append(f)
        return f

    yield _start
    for f in running:
        f.stop()

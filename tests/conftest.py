"""Shared pytest set-up: puts src/ on sys.path so tests import `submission` as the course does, and
gives each test the Ctrl-C handler it started with.

Run the whole suite with:  python -m pytest -q tests
"""
import os
import signal
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
if SRC not in sys.path:
    sys.path.insert(0, SRC)


@pytest.fixture(autouse=True)
def keep_ctrl_c():
    """Entry points run in-process (run_cli, plots.main) ignore Ctrl-C once they have answered: give the
    test process its handler back after each test."""
    handler = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, handler)

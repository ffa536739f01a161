"""Shared pytest set-up: puts src/ on sys.path so tests import `submission` as the course does.

Run the whole suite with:  python -m pytest -q tests
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
if SRC not in sys.path:
    sys.path.insert(0, SRC)

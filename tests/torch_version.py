"""Skip markers for tests of features an older torch lacks (the project runs on torch 2.0 and later;
its own environment pins 2.13). Imported by test files; not a test itself.

Run the tests that use it with:  python -m pytest -q tests/test_fast.py tests/test_graphs.py
"""
import re

import pytest
import torch

TORCH = tuple(int(part) for part in re.match(r"(\d+)\.(\d+)", torch.__version__).groups())


def needs_torch(version, what):
    """Skip the test on a torch older than `version` (major, minor), which lacks `what`."""
    return pytest.mark.skipif(TORCH < version, reason=f"{what} needs torch {version[0]}.{version[1]}+")


# torch.compiler.is_compiling (2.3): before it, attention.py's compiled dropout breaks the graph
COMPILE_WHOLE = needs_torch((2, 3), "tracing the dropout mask in one graph (torch.compiler.is_compiling)")
# capture_rerun steps fused, capturable AdamW on the CPU (2.4); real step graphs are CUDA's
CPU_STEP_GRAPHS = needs_torch((2, 4), "re-running step graphs on the CPU (fused AdamW there)")

"""Skip markers for tests of features an older torch lacks (the project runs on torch 2.0 and later;
its own environment pins 2.13). Imported by test files; not a test itself.
"""
import pytest

from submission.fastpath import torch_version

TORCH = torch_version()


def needs_torch(version, what):
    """Skip the test on a torch older than `version` (major, minor), which lacks `what`."""
    return pytest.mark.skipif(TORCH < version, reason=f"{what} needs torch {version[0]}.{version[1]}+")


# dynamo.explain's call form (2.1) and tracing on the meta device (2.3)
EXPLAIN_FORWARD = needs_torch((2, 3), "explaining a whole forward on the CPU and the meta device")
# dynamo keys a compiled frame's cache entries by backend from 2.2 (2.0.1 reused the first backend's code for
# every later one; 2.1 not checked)
COMPILE_PER_BACKEND = needs_torch((2, 2), "a cache entry per torch.compile backend")
# torch.compile(dynamic=True) gives every batch shape one graph from 2.2 (2.0.1 still compiled three; 2.1 not checked)
ONE_DYNAMIC_GRAPH = needs_torch((2, 2), "one compiled graph for every batch shape")
# capture_rerun steps capturable, fused AdamW on the CPU (2.4); real step graphs are CUDA's
CPU_STEP_GRAPHS = needs_torch((2, 4), "re-running step graphs on the CPU (capturable AdamW there)")

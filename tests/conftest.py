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

# A test run started in the background by a non-interactive shell (`cmd &` in a script, some CI
# runners) inherits SIGINT ignored, and exec passes an ignored signal on: every process a test starts
# would ignore the Ctrl-C the interrupt tests press. A handler is reset to the default by exec instead.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# With a GPU (CUDA, or MPS on an Apple-silicon Mac) get_device() picks it: the suite is CPU-only (its
# bit-for-bit comparisons, gloo DDP, whose second process would ask for a second GPU), so it runs on the
# CPU unless GPT_DEVICE says otherwise; the GPU tests (test_graphs.py, test_fast.py) set it themselves.
if "GPT_DEVICE" not in os.environ:
    try:
        import torch
        if torch.cuda.is_available() or torch.backends.mps.is_available():
            os.environ["GPT_DEVICE"] = "cpu"
    except (ImportError, AttributeError):
        pass

# Under pytest-xdist (`./run.sh test`: up to a worker a core) each worker's torch starts a thread per core: on
# 2 cores, 2 workers of 2 threads each, and OpenMP's waiting threads spin, so a test slowed 10-60x (an overfit
# batch 49 s against 0.8 s, a test audit's). Each worker takes its share of the cores; a test that needs more
# threads, or counts them, sets them itself.
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    try:
        import torch
        from submission.threads import usable_cores
        torch.set_num_threads(max(1, usable_cores() // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))
    except (ImportError, ValueError):
        pass


def pytest_configure(config):
    # torch.compile's import chain defines torch.utils.mkldnn's ScriptModules, whose decorator warns in
    # torch 2.13: torch's own words about torch's code, not about this project's
    config.addinivalue_line("filterwarnings",
                            "ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
    # torch 2.0's torch.load of a state_dict warns that TypedStorage is deprecated; files.py filters it for
    # the tools, but pytest restores the filters after each test, so a test that imported files.py first
    # takes that filter with it
    config.addinivalue_line("filterwarnings", "ignore:TypedStorage is deprecated:UserWarning")


@pytest.fixture(autouse=True)
def keep_ctrl_c():
    """Entry points run in-process (run_cli, plots.main) ignore Ctrl-C once they have answered: give the
    test process its handler back after each test."""
    handler = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, handler)


@pytest.fixture
def broken_src(tmp_path):
    """broken_src(module, text) -> (a copy of src/ under tmp_path with `text` appended to
    submission/`module`, the line number `text` starts at): a student's package that does not import."""
    import shutil

    def make(module, text):
        shutil.copytree(SRC, tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__", "*.params",
                                                                             "*.predictions", "*.state", "*.jsonl"))
        path = tmp_path / "src" / "submission" / module
        line = path.read_text(encoding="utf-8").count("\n") + 1
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)
        return tmp_path / "src", line
    return make


@pytest.fixture
def shut_folder(monkeypatch):
    """shut_folder(folder): within the test, `folder` acts as one that does not let this user in (chmod 600, or
    another user's 0700 folder): what is in it cannot be looked up (os.stat: PermissionError) and os.access says
    it may not be searched. Root passes through any folder, so it is made here."""
    def shut(folder):
        folder = os.path.abspath(folder)
        real_stat, real_access = os.stat, os.access

        def stat(path, *args, **kwargs):
            if isinstance(path, (str, os.PathLike)) and os.path.abspath(path).startswith(folder + os.sep):
                raise PermissionError(13, "Permission denied", os.fspath(path))
            return real_stat(path, *args, **kwargs)

        def access(path, mode, *args, **kwargs):
            if os.path.abspath(path) == folder and mode & os.X_OK:
                return False
            return real_access(path, mode, *args, **kwargs)
        monkeypatch.setattr(os, "stat", stat)
        monkeypatch.setattr(os, "access", access)
    return shut


@pytest.fixture
def unreadable_file(monkeypatch):
    """unreadable_file(path): within the test, open() of `path` fails as for a file this user may not read
    (chmod 000, another user's 0600 file). Root opens any file, so the refusal is made here."""
    import builtins

    def shut(path):
        path, real_open = os.fspath(path), builtins.open

        def refusing_open(name, *args, **kwargs):
            if isinstance(name, (str, os.PathLike)) and os.fspath(name) == path:
                raise PermissionError(13, "Permission denied", path)
            return real_open(name, *args, **kwargs)
        monkeypatch.setattr(builtins, "open", refusing_open)
    return shut

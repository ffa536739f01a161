"""Ctrl-C while a command starts: one line and exit status 130, never a traceback or a lost interrupt.

Importing torch takes about a second. A KeyboardInterrupt raised inside it surfaced as a traceback,
as an ImportError (numpy half-imported: "cannot load module more than once per process"), or not
at all: some import code swallows it, and the run went on and wrote its outputs. Each entry point
imports its heavy modules inside `interruptible_start`, which records the signal and, once the
imports have ended however they ended, stops the process before it has written anything.
Standard library only: it must be importable before torch.
"""
import contextlib
import os
import signal
import sys
import threading


_guarding = []  # the program whose start is being guarded (an entry point may import another)


@contextlib.contextmanager
def interruptible_start(prog):
    """Run the block (the imports); a Ctrl-C during it ends the process with one line and status 130."""
    previous = signal.getsignal(signal.SIGINT)
    if (threading.current_thread() is not threading.main_thread() or previous in (signal.SIG_IGN, None)
            or _guarding):
        yield  # signals reach the main thread only; Ctrl-C ignored at start stays so; nested: the outer guards
        return
    _guarding.append(prog)
    got = []

    def record(signum, frame):
        got.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, record)
    try:
        yield
    except BaseException:
        if not got:
            signal.signal(signal.SIGINT, previous)
            raise
    finally:
        _guarding.pop()
    if got:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not interrupt the exit
        sys.stdout.flush()
        print(f"{prog}: interrupted while starting; nothing was written", file=sys.stderr, flush=True)
        os._exit(130)  # modules may be half-imported: skip their exit handlers
    signal.signal(signal.SIGINT, previous)

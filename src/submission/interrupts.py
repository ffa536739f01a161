"""Holding Ctrl-C and SIGTERM while a file is written, so an interrupted run never half-writes one.

`interrupts_held` notes a SIGINT inside its block and raises it on leaving the outermost block (a
KeyboardInterrupt inside torch.save's zip writer ended in a second error and exit status 1);
files.py's atomic writes run inside one and discard their temporary file when it comes.
`terminate_handler` is run_cli's SIGTERM handler: a stop like Ctrl-C, held the same way. Follows
Python's signal module's rules: handlers run in the main thread only, between bytecodes.
"""
import contextlib
import signal
import threading

_held = {"depth": 0, "pending": False, "previous": None, "terminated": False, "finishing": 0}


def _hold(signum, frame):
    _held["pending"] = True


def terminate_handler(signum, frame):
    """run_cli's SIGTERM handler (`timeout`, a job scheduler, `docker stop`, torchrun stopping its workers):
    stop as a Ctrl-C does, held inside a write; killed at once, a run left its temporary file behind."""
    _held["terminated"] = True
    if _held["depth"]:
        _held["pending"] = True
    else:
        raise KeyboardInterrupt


def sigterm_seen():
    """Whether `terminate_handler` has stopped this process (a KeyboardInterrupt then means SIGTERM)."""
    return _held["terminated"]


def clear_sigterm():
    """Forget an earlier SIGTERM (run_cli, as each command starts)."""
    _held["terminated"] = False


def finishing():
    """Whether an atomic write now is inside `writes_finish` (it then finishes whatever Ctrl-C is held)."""
    return _held["finishing"] > 0


def raise_pending_interrupt():
    """Raise the held Ctrl-C now (KeyboardInterrupt), if there is one; leaving the block then raises nothing."""
    if _held["pending"]:
        _held["pending"] = False
        raise KeyboardInterrupt


@contextlib.contextmanager
def interrupts_held():
    """Hold Ctrl-C inside the block (nestable): the signal is noted, and raised as KeyboardInterrupt
    on leaving the outermost block, unless `raise_pending_interrupt` raised it first. Main thread only
    (signals reach no other); elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is None:
        yield  # signals reach the main thread only; None: a handler not set from Python, left alone
        return
    if _held["depth"] == 0:
        # cleared before _hold is installed: cleared after, a Ctrl-C _hold noted in between was lost, and a
        # training run entering a block each epoch trained on to its end (`./run.sh all` went on to its next mode)
        _held["pending"] = False
        _held["previous"] = signal.getsignal(signal.SIGINT)
    _held["depth"] += 1  # from here a SIGTERM is held (terminate_handler), and the finally below undoes this
    try:
        # a Ctrl-C ignored from the start (a script's background job) stays ignored: holding it would
        # turn a Ctrl-C meant for the foreground job into the loss of this write (a SIGTERM is held still)
        if _held["depth"] == 1 and _held["previous"] != signal.SIG_IGN:
            signal.signal(signal.SIGINT, _hold)
        yield
    finally:
        _held["depth"] -= 1
        if _held["depth"] == 0:
            previous = _held["previous"]
            signal.signal(signal.SIGINT, previous)
            if _held["pending"]:
                _held["pending"] = False
                if _held["terminated"]:  # a SIGTERM, held: stop whatever SIGINT's handler is
                    raise KeyboardInterrupt
                if callable(previous):  # the handler the Ctrl-C was meant for (KeyboardInterrupt by default)
                    previous(signal.SIGINT, None)
                elif previous == signal.SIG_DFL:
                    signal.raise_signal(signal.SIGINT)


@contextlib.contextmanager
def writes_finish():
    """Inside, an atomic write finishes whatever Ctrl-C is held (raised when the held block around it ends):
    for writes that must follow one already made, as the params' card follows the params (helper.train)."""
    _held["finishing"] += 1
    try:
        yield
    finally:
        _held["finishing"] -= 1

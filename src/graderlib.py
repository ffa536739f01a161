"""The grading framework behind src/grader.py: registering tests, running each one under a time
limit, scoring from points.json, printing the course's output frame and writing Gradescope's
results.json. Nothing here knows about the assignment; grader.py holds the tests, gradedpackage.py
imports the package they grade.

A test is a function of one argument (the grader's context object). It passes by returning (a
string it returns is shown as a note, e.g. an accuracy), and
fails by raising `Failure` (through `require`) with a one-line reason, or by raising anything else
(the reason is then the exception and the line of the student's code that raised it). Scoring is
all or nothing per test, as in the course.

Time limits: each test runs in a worker thread that the grader joins with a timeout. When a test
runs past its limit the grader records "timed out after N s", asks the thread to stop (an
asynchronous exception, delivered at its next Python instruction), and goes on with the next
test. A thread stuck inside one long native call cannot be stopped that way; it is left behind as
a daemon thread, and `main` exits the process without waiting for it. Ctrl-C stops the running
test the same way before the KeyboardInterrupt goes on to `main`: the interpreter must not shut
down under a thread that is inside torch (that aborts the process). `handle_interrupts` installs
the grader's Ctrl-C handler: the first Ctrl-C raises KeyboardInterrupt, later ones do nothing, and
one that arrives while a test's thread is starting waits until it has started (a KeyboardInterrupt
raised inside threading's own lock handling breaks the lock: RuntimeError "release unlocked lock").
"""
import contextlib
import ctypes
import datetime
import json
import os
import random
import re
import signal
import sys
import tempfile
import threading
import time
import traceback

FRAME = "=========="
SEED = 224


class Failure(Exception):
    """A graded failure; its message is the reason shown to the student (one or two lines)."""


class PointsError(ValueError):
    """A points file the grader cannot use; the message names it and says what to fix (one line). `key`: the
    entry of the file it is about, where there is one, for the caller to name its line."""

    def __init__(self, message, key=None):
        super().__init__(message)
        self.key = key


class TestTimeout(BaseException):
    """Raised asynchronously in a test thread that ran past its time limit (BaseException, so that
    an `except Exception` in the code under test does not swallow it)."""


def require(condition, reason):
    """Fail the current test with `reason` unless `condition` holds."""
    if not condition:
        raise Failure(reason)


class Test:
    def __init__(self, test_id, description, fn, timeout):
        parts = test_id.split("-")
        if len(parts) != 3 or parts[2] not in ("basic", "hidden"):
            raise ValueError(f"test id {test_id!r}: expected QUESTION-NUMBER-basic or QUESTION-NUMBER-hidden")
        self.id = test_id
        self.description = description
        self.fn = fn
        self.timeout = timeout
        self.hidden = parts[2] == "hidden"
        self.points = None  # from points.json


class Result:
    def __init__(self, test, passed, reason, seconds, note=None):
        self.id = test.id
        self.description = test.description
        self.hidden = test.hidden
        self.max_points = test.points
        self.points = test.points if passed else 0
        self.passed = passed
        self.reason = reason  # None when passed
        self.seconds = seconds
        self.note = note  # what a passing test chose to report (e.g. an accuracy)

    def __repr__(self):
        state = "pass" if self.passed else f"FAIL ({self.reason})"
        return f"<Result {self.id}: {self.points}/{self.max_points} {state}>"


def shut_folder(path):
    """Why `path` looks absent when a folder above it does not let this user in (no search permission: chmod 600,
    another user's 0700 folder), in words with the fix; None when none is shut. A twin of the package's
    dataset.folder_shut: the grader reads its files without the package it grades."""
    try:
        os.stat(path)
        return None
    except PermissionError:
        pass
    except (OSError, ValueError):
        return None
    folders, folder = [], os.path.dirname(os.path.abspath(path))
    while os.path.dirname(folder) != folder:
        folders.append(folder)
        folder = os.path.dirname(folder)
    for folder in reversed(folders):  # from the root down
        if os.path.isdir(folder) and not os.access(folder, os.X_OK):
            return (f"the folder {folder} does not let you in (Permission denied, mode "
                    f"{os.stat(folder).st_mode & 0o7777:04o}); chmod u+rx it, or ask its owner to")
    return None


def text_of(obj):
    """str(obj); for an object whose str() raises (a student's exception class whose __str__ reads a missing
    attribute), what str() raised: the grader runs on with the other tests, rather than ending without
    results.json or naming the __str__ for the line that raised the exception."""
    try:
        return str(obj)
    except Exception as e:  # noqa: B902 -- anything the graded code's __str__ raises
        try:
            why = f"{type(e).__name__}: {e}"
        except Exception:  # noqa: B902 -- that one's str() too
            why = type(e).__name__
        return f"(no message: its __str__ raised {why})"


def shorten(text, limit=300):
    """`text` (text_of an object) on one line (runs of whitespace made one space), cut to `limit` characters
    with "..."."""
    text = " ".join(text_of(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


_STDLIB = os.path.dirname(os.path.abspath(os.__file__)) + os.sep


def _code_frames(frames, own_files):
    """The frames of the code under test: outside the grader's own files, Python's library, installed
    packages (torch) and frozen modules."""
    own = {os.path.abspath(f) for f in own_files}
    return [f for f in frames
            if os.path.abspath(f.filename) not in own and not f.filename.startswith("<")
            and not os.path.abspath(f.filename).startswith(_STDLIB)
            and not {"site-packages", "dist-packages"} & set(f.filename.split(os.sep))]


def _place(frames):
    """"src/submission/attention.py:73 in _keep_mask", followed, when the code under test was entered in
    another frame than that one, by the frame it was entered in: ", called from src/submission/helper.py:45
    in finetune"."""
    inner, outer = frames[-1], frames[0]
    text = f"{_relpath(inner.filename)}:{inner.lineno} in {inner.name}"
    if len(frames) > 1:
        text += f", called from {_relpath(outer.filename)}:{outer.lineno} in {outer.name}"
    return text


def describe_exception(exc, tb, own_files=()):
    """The reason for an unexpected exception: its type and message, then where it was raised: the
    innermost frame of the code under test (not torch's, where a wrong shape is found), and the
    function of it the test called; else the innermost frame outside the grader's own files."""
    head = f"{type(exc).__name__}: {shorten(exc) or '(no message)'}"
    frames = traceback.extract_tb(tb)
    code = _code_frames(frames, own_files)
    if code:
        return f"{head}\n      raised at {_place(code)}"
    if not frames:
        return head
    own = {os.path.abspath(f) for f in own_files}
    outside = [f for f in frames if os.path.abspath(f.filename) not in own]
    f = (outside or frames)[-1]
    return f"{head}\n      raised at {_relpath(f.filename)}:{f.lineno} in {f.name}"


def _relpath(path):
    """A file of a traceback as a message names it: relative to the working folder when inside it, else as it
    is (absolute): a student's code graded with --code-dir from elsewhere ("../submission/helper.py" on
    Gradescope) is named where it lies, as the message's header names that folder."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return path if rel == ".." or rel.startswith(".." + os.sep) else rel


def _raise_in(ident, exc):
    """Ask the thread `ident` to raise `exc` (a class) at its next Python instruction; None: take back one asked
    and not yet raised."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), None if exc is None else ctypes.py_object(exc))


def _stop_thread(thread):
    """Ask `thread` to raise TestTimeout at its next Python instruction."""
    if thread.ident is None:
        return
    _raise_in(thread.ident, TestTimeout)


class CallTimeout(BaseException):
    """Raised asynchronously in a thread whose `Watchdog` call ran past its limit (BaseException, as TestTimeout)."""


class Watchdog:
    """Time limits on many short calls of the thread that makes it, from one watching thread: `with dog.call():`
    raises CallTimeout in that thread at its next Python instruction once the call has run `seconds` (a native
    call that hangs is left to the test's own limit). Used as a context manager, which stops the watching.
    A threading.Timer a call cost 0.3 ms, 1.3 s over the 4,480 items a span test draws."""

    def __init__(self, seconds, poll=0.05):
        self.seconds, self.poll = seconds, poll
        self._ident = threading.get_ident()
        self._lock = threading.Lock()
        self._deadline = None  # of the call running, if any
        self._fired = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="grader-watchdog", daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()

    def _watch(self):
        while not self._done.wait(self.poll):
            with self._lock:
                if self._deadline is not None and not self._fired and time.monotonic() > self._deadline:
                    self._fired = True
                    _raise_in(self._ident, CallTimeout)

    @contextlib.contextmanager
    def call(self):
        with self._lock:
            self._deadline, self._fired = time.monotonic() + self.seconds, False
        try:
            yield
        finally:
            with self._lock:
                self._deadline, fired = None, self._fired
            if fired:  # raised in the call, or still pending (the call ended just as it fired): no longer wanted
                _raise_in(self._ident, None)


_sigint = {"held": False, "pending": False}


def _interrupt(signum=None, frame=None):
    """The grader's SIGINT handler: KeyboardInterrupt once (held inside `_interrupts_held`); after
    that Ctrl-C does nothing, so that stopping the running test and exiting are not interrupted in
    turn (a KeyboardInterrupt inside torch's exit handlers aborts the process)."""
    if _sigint["held"]:
        _sigint["pending"] = True
        return
    signal.signal(signal.SIGINT, lambda *_: None)
    raise KeyboardInterrupt


def handle_interrupts():
    """Install the grader's Ctrl-C handling (main thread only): see `_interrupt`. A Ctrl-C ignored from
    the start (a script's background job) stays ignored: it is meant for the foreground job."""
    _sigint.update(held=False, pending=False)
    if signal.getsignal(signal.SIGINT) != signal.SIG_IGN:
        signal.signal(signal.SIGINT, _interrupt)


@contextlib.contextmanager
def _interrupts_held():
    """Hold a Ctrl-C that arrives inside the block and raise it on leaving (with handle_interrupts)."""
    _sigint["held"] = True
    try:
        yield
    finally:
        _sigint["held"] = False
    if _sigint["pending"]:
        _sigint["pending"] = False
        _interrupt()


def seed_everything():
    """The same random state (SEED) before every test, so that a test's draws do not depend on the others."""
    random.seed(SEED)
    try:
        import numpy as np
        np.random.seed(SEED)
    except ImportError:
        pass
    try:
        import torch
        torch.manual_seed(SEED)
    except ImportError:
        pass


def format_duration(seconds):
    return str(datetime.timedelta(seconds=int(round(seconds))))


def to_devnull(*fds):
    """Point the descriptors `fds` at /dev/null: their reader has gone, and what is still written to
    them, buffered or to come, is dropped instead of raising BrokenPipeError."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in fds:
            os.dup2(devnull, fd)
    finally:
        os.close(devnull)


class _PipeGuard:
    """sys.stdout or sys.stderr while Grader.run(keep_working=True) runs: once its reader has gone
    (`grader.py --json r.json | head`), its descriptor points at /dev/null and everything printed
    after, by the frame or by a student's code under test, is dropped instead of raising
    BrokenPipeError. (submission/cli.py has the same guard for run.py; the grader keeps its own,
    stdlib only, so that it never imports the graded package for it.)"""

    def __init__(self, stream):
        self._stream, self.closed_pipe = stream, False

    def _gone(self):
        self.closed_pipe = True
        with contextlib.suppress(OSError, ValueError):
            to_devnull(self._stream.fileno())

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._gone()
            return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._gone()
            with contextlib.suppress(BrokenPipeError, OSError, ValueError):
                self._stream.flush()  # what is still buffered, into /dev/null now

    def __getattr__(self, name):  # fileno, isatty, encoding, buffer, ...
        return getattr(self._stream, name)


OUTPUT_CAP = 20_000  # characters the code under test may print a test, both streams together


class _OutputBudget:
    """What the code under test may still print during one test: the first OUTPUT_CAP characters are
    shown, the rest counted. (A debug print left in `forward` printed 130 MB during one evaluation and
    buried the grading frame; Gradescope shows a run's output only up to a size.)"""

    def __init__(self, cap):
        self.cap, self.used, self.dropped, self.open_line = cap, 0, 0, False
        self._lock = threading.Lock()

    def take(self, text):
        """The part of `text` to show; the rest is counted in `dropped`."""
        with self._lock:
            shown = text[:max(self.cap - self.used, 0)]
            self.used += len(shown)
            self.dropped += len(text) - len(shown)
            if shown:
                self.open_line = not shown.endswith("\n")
            return shown

    def end_test(self):
        """A line for the frame saying what was left out of the test that ended, "" to end a line the code under
        test left open (an input() prompt: the frame's FAIL ran on after it), or None; starts the next."""
        with self._lock:
            dropped, open_line = self.dropped, self.open_line
            self.used = self.dropped = 0
            self.open_line = False
        if not dropped:
            return "" if open_line else None
        return (("\n" if open_line else "") + f"[the code under test printed {dropped:,} more characters, not shown: "
                f"the grader shows {self.cap:,} a test]")


class _Capped:
    """sys.stdout or sys.stderr while tests run: writes from the grader's main thread (the frame) pass
    as they are, writes from any other thread (the tests' code, and what it started) draw on the budget."""

    def __init__(self, stream, budget):
        self._stream, self._budget = stream, budget

    def write(self, text):
        if threading.current_thread() is threading.main_thread():
            return self._stream.write(text)
        shown = self._budget.take(text)
        if shown:
            self._stream.write(shown)
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def __getattr__(self, name):  # flush, fileno, isatty, encoding, buffer, ...
        return getattr(self._stream, name)


def _refused_exit(real_exit):
    """os._exit while tests run: called by the code under test (a test's thread) it raises SystemExit,
    which fails that test, instead of ending the grader without a word or a results file."""
    def refused(status=0):
        if threading.current_thread() is threading.main_thread():
            real_exit(status)
        raise SystemExit(f"os._exit({status}) called by the code under test; remove it")
    return refused


def _begins(test_id, i):
    """Whether the id `i` picks the test `test_id`: the id itself, or its leading parts ("1f", "1f-1")."""
    return test_id == i or test_id.startswith(i + "-")


def picks(test_id, ids):
    """Whether the ids asked for pick the test `test_id` (Grader.select's rule): none, or "all" alone, pick every
    test; else each id the tests it begins."""
    return not ids or list(ids) == ["all"] or any(_begins(test_id, i) for i in ids)


class Grader:
    """An ordered set of tests with their points, run against one context object."""

    def __init__(self, points, context=None, own_files=()):
        self.tests = []
        self._by_id = {}
        self._points = dict(points)
        self.context = context
        self.own_files = tuple(own_files) + (os.path.abspath(__file__),)
        self.abandoned = []  # threads of timed-out tests that did not stop
        self._home = os.getcwd()  # the working folder each test starts in (run() takes it again)
        self.closed_pipe = False  # run's output met a closed pipe (its reader gone); the tests went on
        self._budget = _OutputBudget(OUTPUT_CAP)  # what each test's code may print

    def add(self, test_id, description, fn, timeout):
        if test_id in self._by_id:
            raise ValueError(f"test id {test_id} registered twice")
        if test_id not in self._points:
            raise PointsError(f"no points for {test_id}; add \"{test_id}\": {{\"points\": N}} to it")
        test = Test(test_id, description, fn, timeout)
        test.points = self._points[test_id]
        self.tests.append(test)
        self._by_id[test_id] = test
        return test

    def check_points(self):
        """points.json must list exactly the registered tests."""
        extra = sorted(set(self._points) - set(self._by_id))
        if extra:
            raise PointsError(f"lists tests the grader does not have: {', '.join(extra)}; remove them", extra[0])

    def select(self, ids):
        """The tests with these ids (all when `ids` is empty); an id's leading parts pick every test they
        begin ("1f": the part's tests, "1f-1": 1f-1-hidden). KeyError names the ids that pick none."""
        if not ids or list(ids) == ["all"]:
            return list(self.tests)
        unknown = [i for i in ids if not any(_begins(t.id, i) for t in self.tests)]
        if unknown:
            raise KeyError(", ".join(unknown))
        return [t for t in self.tests if picks(t.id, ids)]

    # -- running -------------------------------------------------------------------------------
    def _halt(self, thread):
        """Ask a test's thread to stop and wait for it up to 2 s. It stays in `abandoned` unless it
        stopped (recorded first, so that a second Ctrl-C during the wait cannot lose it)."""
        self.abandoned.append(thread)
        _stop_thread(thread)
        thread.join(2.0)
        if not thread.is_alive():
            self.abandoned.remove(thread)

    def _running(self, thread):
        """Where a test's thread is now in the code under test, as `_place` words it: ", at
        src/submission/dataset.py:42 in __getitem__" (and the frame it was entered in), or ""."""
        frame = sys._current_frames().get(thread.ident)
        if frame is None:
            return ""
        stack = _code_frames(traceback.extract_stack(frame), self.own_files)
        return f", at {_place(stack)}" if stack else ""

    def run_test(self, test):
        box = {}

        def target():
            try:
                seed_everything()
                note = test.fn(self.context)
                box["note"] = note if isinstance(note, str) else None
                box["ok"] = True
            except BaseException as e:  # noqa: B902 -- everything a test raises is its result
                box["error"] = e
                box["tb"] = e.__traceback__

        thread = threading.Thread(target=target, name=f"grader-{test.id}", daemon=True)
        start = time.monotonic()
        try:
            with _interrupts_held():  # not inside threading's locks (see the module's docstring)
                thread.start()
            thread.join(test.timeout)
        except KeyboardInterrupt:
            self._halt(thread)
            raise
        finally:  # the code under test may change the working folder (os.chdir), even to one it then removes
            try:
                moved = os.getcwd() != self._home
            except OSError:
                moved = True
            if moved:
                os.chdir(self._home)
        if thread.is_alive():
            where = self._running(thread)
            self._halt(thread)
            runs_on = ("; it did not stop when asked (it waits in a call that Python cannot interrupt, such as "
                       "input(), breakpoint() or time.sleep(), or catches every exception, BaseException or a bare "
                       "`except:`, swallowing the grader's stop) and runs on beside the tests after it"
                       if thread.is_alive() else "")
            return Result(test, False, f"timed out after {test.timeout} s{where}{runs_on}", time.monotonic() - start)
        seconds = time.monotonic() - start
        if box.get("ok"):
            return Result(test, True, None, seconds, note=box.get("note"))
        err = box.get("error")
        if isinstance(err, Failure):
            reason = str(err)
        elif isinstance(err, TestTimeout):
            reason = f"timed out after {test.timeout} s"
        else:
            reason = describe_exception(err, box.get("tb"), self.own_files)
        return Result(test, False, reason, seconds)

    def run(self, ids=None, out="stdout", header_lines=(), keep_working=False):
        """Run the selected tests, printing the course's frame to `out` (a file; "stdout", the
        default, is sys.stdout at the time of the call; None: silent). With `keep_working` (results.json
        to write) a closed stdout or stderr does not stop the grading: what is printed after it, the
        frame's and the tests' own, goes to /dev/null, and `closed_pipe` tells the caller."""
        streams = (sys.stdout, sys.stderr)
        if keep_working:  # a stream closed from the start (`>&-`) is None, and stays so
            sys.stdout, sys.stderr = (None if s is None else _PipeGuard(s) for s in streams)
        guards = [s for s in (sys.stdout, sys.stderr) if isinstance(s, _PipeGuard)]
        frame_out = sys.stdout if out == "stdout" else out
        shown = (sys.stdout, sys.stderr)
        sys.stdout, sys.stderr = (None if s is None else _Capped(s, self._budget) for s in shown)
        real_exit, self._home = os._exit, os.getcwd()
        os._exit = _refused_exit(real_exit)
        try:
            return self._run(ids, frame_out, header_lines)
        finally:
            if not self.abandoned:  # a test thread that would not stop may still call it
                os._exit = real_exit
            sys.stdout, sys.stderr = streams
            if keep_working:
                self.closed_pipe = any(g.closed_pipe for g in guards)

    def _run(self, ids, out, header_lines):
        def say(line=""):
            if out is not None:
                print(line, file=out, flush=True)

        results = []
        say(f"{FRAME} START GRADING")
        for line in header_lines:
            say(line)
        for test in self.select(ids):
            say(f"----- START {test.id}: {test.description}")
            r = self.run_test(test)
            left_out = self._budget.end_test()
            if left_out is not None:  # "": ends the line the code under test left open
                say(left_out)
            if not r.passed:
                lines = r.reason.split("\n")
                say(f"FAIL: {lines[0]}")
                for extra in lines[1:]:
                    say(extra)
            elif r.note:
                say(r.note)
            say(f"----- END {test.id} [took {format_duration(r.seconds)} (max allowed {test.timeout} seconds), "
                f"{_num(r.points)}/{_num(r.max_points)} points]")
            say()
            results.append(r)
        for kind in ("basic", "hidden"):
            rs = [r for r in results if r.hidden == (kind == "hidden")]
            say(f"Total {kind} points: {_num(sum(r.points for r in rs))}/{_num(sum(r.max_points for r in rs))}")
        say(f"Total points: {_num(sum(r.points for r in results))}/{_num(sum(r.max_points for r in results))}")
        say(f"{FRAME} END GRADING")
        return results


def _num(x):
    return int(x) if float(x).is_integer() else round(float(x), 2)


def gradescope_json(results, execution_time=None):
    """Gradescope's autograder results format: hidden tests are shown after grades are published."""
    tests = []
    for r in results:
        if r.passed:
            output = "passed" + (f": {r.note.strip()}" if r.note else "")
        else:
            output = "FAIL: " + r.reason
        tests.append({
            "name": f"{r.id}: {r.description}",
            "number": r.id,
            "score": r.points,
            "max_score": r.max_points,
            "output": output,
            "visibility": "after_published" if r.hidden else "visible",
        })
    doc = {"score": sum(r.points for r in results), "tests": tests}
    if execution_time is not None:
        doc["execution_time"] = int(round(execution_time))
    return doc


def json_path_problem(path):
    """Why results.json cannot be written to `path`, as a phrase with the fix, or None. Checked
    before any test runs, so that a bad --json path does not cost a whole grading run."""
    if not path.strip():  # `--json "$OUT"` with OUT unset: no report, after a whole grading run
        return "is empty; give a file path, e.g. --json results.json"
    if os.path.isdir(path):
        return f"is a folder; give a file path, e.g. --json {os.path.join(path, 'results.json')}"
    if os.path.exists(path) and not os.path.isfile(path):
        return "exists and is not a regular file; give the path of a results file"
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(folder):  # the nearest existing folder: the missing ones are made there
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        return f"{folder} is a file, not a folder; give a path whose folders exist or can be made"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"no permission to write in {folder}; give a path in a folder you can write to"
    try:  # tried, not asked: os.access says yes to root on /proc and /sys, a read-only mount, NFS root-squash;
        # named as write_json's temporary file (as long: 8 characters after the prefix), so a name too long fails here
        fd, trial = tempfile.mkstemp(prefix=os.path.basename(_temp_prefix(path)), suffix=".tmp", dir=folder)
        os.close(fd)
        os.unlink(trial)
    except OSError as e:
        return f"no file can be made in {folder} ({e.strerror or e}); give a path in a folder you can write to"
    if os.path.isfile(path) and os.path.getsize(path) and not is_report(path):
        return ("exists and is not a results.json the grader wrote, so it is not replaced; give a new path, "
                "or move that file away first")
    return None


REPORT_MAX_BYTES = 10 * 2 ** 20  # a report of a few dozen tests is kilobytes


def is_report(path):
    """Whether `path` holds a results.json that write_json wrote (gradescope_json's layout): the only
    existing file, besides an empty one, that --json may replace; anything else is the user's."""
    try:
        if os.path.getsize(path) > REPORT_MAX_BYTES:
            return False
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, UnicodeDecodeError, ValueError):  # ValueError: JSONDecodeError, or NaN-like oddities
        return False
    fields = {"name", "score", "max_score", "output"}
    return (isinstance(doc, dict) and "score" in doc and isinstance(doc.get("tests"), list)
            and all(isinstance(t, dict) and fields <= set(t) for t in doc["tests"]))


def _temp_prefix(path):
    """The start of write_json's temporary file's path for `path`, before its 8 random characters and ".tmp"."""
    return f"{path}.{os.getpid()}."


def write_json(results, path, execution_time=None):
    """Write Gradescope's results.json atomically: a temporary file in the same folder, then
    os.replace, so that a failed or interrupted write leaves the old file (or none) and no temporary
    file. (Not submission.utils.atomic_write_text: the grader must not depend on the graded code.)"""
    text = json.dumps(gradescope_json(results, execution_time), indent=2) + "\n"
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    # a name no one can guess and make first (a link to another file, in a folder others write in), made here
    # (O_EXCL) with the mode open() would give
    tmp = f"{_temp_prefix(path)}{os.urandom(4).hex()}.tmp"
    # (O_BINARY on Windows: the text layer below writes its newlines, the descriptor adds none of its own)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with open(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):  # the error being raised stays the one said
            os.unlink(tmp)
        raise


_COLON = re.compile(r"\s*:")  # after a string: it was a key


def key_line(text, key):
    """The line (from 1) where `key` is a key of the top-level object in the JSON `text` (its last time, as json
    keeps the last of repeated keys), or None: error messages name that line."""
    line, depth, i = None, 0, 0
    while i < len(text):
        c = text[i]
        if c == '"':
            name, end = json.decoder.scanstring(text, i + 1)
            if depth == 1 and name == key and _COLON.match(text, end):
                line = text.count("\n", 0, i) + 1
            i = end
            continue
        depth += (c in "{[") - (c in "}]")
        i += 1
    return line


def at_key(shown, path, key, text=None):
    """`shown:LINE` for the line of `key` in the JSON `text` (default: the file at `path`; key_line), or `shown`
    when there is no key, no text or path, or the line cannot be found."""
    line = None
    if key and (text is not None or path):
        try:
            if text is None:
                with open(path, encoding="utf-8-sig") as f:
                    text = f.read()
            line = key_line(text, key)
        except (OSError, ValueError):  # unreadable, not UTF-8, not JSON: no line to name
            pass
    return f"{shown}:{line}" if line else shown


def load_points(path, shown=None):
    """points.json in the course's shape, which its graderUtil.py reads: {test_id: {"points": number}, ...},
    beside keys of the grader's own (`pass_marks`, and notes whose names start with _). Returns the object
    with those numbers gathered under "points" as {test_id: number}. PointsError, naming the file as `shown`
    (default: `path`), when it cannot be read or used."""
    shown = shown or path
    try:
        with open(path, encoding="utf-8-sig") as f:
            text = f.read()
    except OSError as e:
        raise PointsError(f"{shown}: cannot be read ({e.strerror or e}); restore it from version control") from None
    except UnicodeDecodeError as e:
        raise PointsError(f"{shown}: not valid UTF-8 at byte {e.start}; save it as UTF-8") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise PointsError(f"{shown}:{e.lineno}: not valid JSON ({e.msg}, column {e.colno}); fix that line or "
                          f"restore the file from version control") from None
    if not isinstance(doc, dict):
        raise PointsError(f"{shown}: expected an object mapping each test id to {{\"points\": N}}")

    def at(k):  # the file and the line of entry k
        return at_key(shown, path, k, text)

    points = {}
    for k, entry in doc.items():
        if k.startswith("_") or k == "pass_marks":
            continue
        if k == "points" and isinstance(entry, dict) and "points" not in entry:  # this project's earlier shape
            raise PointsError(f"{at(k)}: \"points\": {{test_id: N}} is the earlier shape; write each test as "
                              f"\"test_id\": {{\"points\": N}} (the course's shape), or restore the file from "
                              f"version control")
        if not isinstance(entry, dict) or "points" not in entry:
            raise PointsError(f"{at(k)}: {k} must map to {{\"points\": N}}, got {shorten(repr(entry), 80)}")
        v = entry["points"]
        # bool is an int to Python, and json reads NaN and Infinity: neither is a number of points
        # and an integer beyond a float's range (1 followed by 400 zeros) stopped the report with an OverflowError
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= sys.float_info.max:
            raise PointsError(f"{at(k)}: points of {k} must be a non-negative number, got {shorten(repr(v), 80)}")
        points[k] = v
    return dict(doc, points=points)

"""Ctrl-C while a command starts: one line and exit status 130, never a traceback or a lost interrupt.

Importing torch takes about a second. A KeyboardInterrupt raised inside it surfaced as a traceback,
as an ImportError (numpy half-imported: "cannot load module more than once per process"), as a C++
abort (raised inside a pybind11 callback), or not at all: some import code swallows it, and the run
went on and wrote its outputs. Each entry point imports its heavy modules inside
`interruptible_start`, whose handler raises nothing: it records the signal, and once the imports have
ended the process stops, before it has written anything. A second Ctrl-C (an impatient user, or
`timeout -s INT`, which signals the whole group) stops it at once, with the same line.
A Python without torch, numpy or tqdm (.venv not activated) gets one line saying so, not a
traceback. Standard library only: it must be importable before torch.
"""
import contextlib
import os
import shlex
import signal
import sys
import threading
import time


_starting = []  # the programs starting, outermost first (an entry point may import another)
REQUIREMENTS = ("torch", "numpy", "tqdm")  # requirements.txt: without one, no entry point starts
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def as_typed(path):
    """`path` as the user would type it from the current folder: relative when below it, else as given."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # Windows: the current folder is on another drive
        return path
    return path if rel.startswith("..") else rel


def _shown(name):
    """A file of the repo as the user would type it from the current folder, quoted for the shell where it needs
    to be (a checkout at "/home/First Last/a5": the hint pasted as shown ran `.` on "/home/First")."""
    path = as_typed(os.path.join(ROOT, name))
    return shlex.quote(path if os.sep in path or not name.endswith(".sh") else os.path.join(".", path))  # ./run.sh


def missing_requirement(prog, name):
    """The one line of an entry point started by a Python without `name` (often: .venv not active).
    The .venv's files are in bin/, or in Scripts/ where its Python is Windows' own."""
    scripts = "Scripts" if os.path.isdir(os.path.join(ROOT, ".venv", "Scripts")) else "bin"
    if os.path.realpath(sys.prefix) == os.path.realpath(os.path.join(ROOT, ".venv")):
        fix = (f"run.sh's .venv is incomplete: {_shown(f'.venv/{scripts}/python')} -m pip install -r "
               f"{_shown('requirements.txt')}")
    elif os.path.isfile(os.path.join(ROOT, ".venv", scripts, "activate")):
        fix = f"activate the environment run.sh made (. {_shown(f'.venv/{scripts}/activate')}) and run it again"
    else:
        fix = (f"{_shown('run.sh')} sets one up on its first run, or install {_shown('requirements.txt')} "
               f"into this Python")
    return f"{prog}: this Python ({sys.executable}) has no {name}; {fix}"


@contextlib.contextmanager
def interruptible_start(prog):
    """Run the block (the imports); a Ctrl-C during it ends the process with one line and status 130,
    and a missing requirement with one line and status 1."""
    previous = signal.getsignal(signal.SIGINT)
    # nested, the outer start speaks for both; signals reach the main thread only; a Ctrl-C ignored
    # at start (a background job of a script) stays ignored
    outer = not _starting
    guard = (outer and threading.current_thread() is threading.main_thread()
             and previous not in (signal.SIG_IGN, None))
    got = []

    def record(signum, frame):
        got.append(signum)
        if len(got) > 1:  # asked again: the imports are not waited for
            _stop(prog)

    _starting.append(prog)
    if guard:
        signal.signal(signal.SIGINT, record)
    try:
        yield
    except BaseException as e:
        if not got:
            if guard:
                signal.signal(signal.SIGINT, previous)
            if outer and isinstance(e, ModuleNotFoundError) and e.name in REQUIREMENTS:
                print(missing_requirement(prog, e.name), file=sys.stderr, flush=True)
                raise SystemExit(1) from None
            raise
    finally:
        _starting.pop()
    if guard and not got:  # given back first: a Ctrl-C from here on is the program's, never a lost one
        signal.signal(signal.SIGINT, previous)
    if got:
        _stop(prog)


def stop_with_run_sh_all():
    """Under `./run.sh all`: SIGTERM this process once the `all` that started it has gone. run.sh execs each
    mode's Python, so `all`'s shell is its parent, and names itself in RUN_SH_ALL_PID. A `kill` of `all`
    ended that shell alone (bash runs a trap only once its foreground command has ended), and the mode it
    was in trained on unseen, holding its params' lock, to write params its user had stopped. A thread
    polls the parent every half second (POSIX: a process whose parent ends is given another); the
    SIGTERM then stops the mode as any other does (`run_cli`: status 143, no file half-written). The
    variable is taken out of the environment, so no process this one starts watches too."""
    parent = os.environ.pop("RUN_SH_ALL_PID", "")
    if os.name != "posix" or not parent.isdigit():
        return
    parent = int(parent)
    if os.getppid() != parent:
        try:
            os.kill(parent, 0)
        except ProcessLookupError:  # `all` ended before this process got here: stop now
            os.kill(os.getpid(), signal.SIGTERM)
        except OSError:  # there, another user's (not this process's parent): nothing to follow
            pass
        return

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="run.sh-all-watch", daemon=True).start()


def _stop(prog):
    """End a start that Ctrl-C interrupted: one line, status 130. Silent in a worker process started
    with "spawn" (macOS, Windows: DataLoader workers import the entry point again, and Ctrl-C reaches
    them too): the program's own process says it once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a further Ctrl-C must not interrupt the exit
    sys.stdout.flush()
    mp = sys.modules.get("multiprocessing")  # imported in every spawned worker, before the entry point
    if mp is None or getattr(mp, "parent_process", lambda: None)() is None:
        print(f"{prog}: interrupted while starting; nothing was written", file=sys.stderr, flush=True)
    os._exit(130)  # modules may be half-imported: skip their exit handlers

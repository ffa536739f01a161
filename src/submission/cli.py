"""Command lines: running a script's main() so that it ends in one line, never a traceback.

`run_cli` turns a bad input (DataError, ParamsError) into its message and exit status 2; a diverged
training run, the machine's limits (an unreadable file, memory run out, a missing compiler:
`machine_limit`) and a torchrun process whose peer stopped first (`peer_stopped`) into one line and
status 1; Ctrl-C and SIGTERM into 130 and 143 once the writes under way are done (interrupts.py holds
them); and a closed stdout (`| head`) into 141. src/oneline.py's parser gives the scripts one-line
usage errors.
"""
import contextlib
import errno
import os
import re
import signal
import sys
import threading
import time

from .dataset import DataError
from .files import error_reason
from .interrupts import clear_sigterm, sigterm_seen, terminate_handler
from .params import ParamsError
from .threads import fix_threads_from_environment


class TrainingDiverged(FloatingPointError):
    """The training loss became NaN or infinite; raised before any params are written."""


def _ignore_interrupts(previous_term):
    """Ctrl-C ignored from here on; SIGTERM back to the handler it had (by default it ends the process)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)


SAME_STOP_S = 1.0  # a Ctrl-C this soon after the one that raised is the same stop, pressed again
_raised_at = []  # when run_cli's handler last raised (time.monotonic); _clock: the test's stand-in
_clock = time.monotonic


def _interrupt(signum, frame):
    """run_cli's SIGINT handler: a Ctrl-C raises KeyboardInterrupt, and one within SAME_STOP_S of the last that
    did is ignored while that one unwinds the run. A second press (the user's, once the first seemed slow) raised
    again wherever the unwinding was: inside tqdm's bar as its generator closed it printed "Exception ignored in"
    and a traceback, and inside run_cli's own `except` it escaped as one. Later presses raise again: library code
    can swallow a KeyboardInterrupt (15 of 30 Ctrl-Cs 0.17-0.26 s into `python -c "import torch"`, as torch
    imports numpy, ended it with exit 0), and the run then goes on. A held write (interrupts.interrupts_held) holds
    the Ctrl-C as before and calls this handler at its end."""
    now = _clock()
    if _raised_at and now - _raised_at[0] < SAME_STOP_S:
        return
    _raised_at[:] = [now]
    raise KeyboardInterrupt


def _to_devnull(stream):
    """Point `stream`'s file descriptor at /dev/null: its reader has gone, and what is still buffered
    or written later must not meet the closed pipe again."""
    with contextlib.suppress(OSError, ValueError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)


def closed_pipe_exit():
    """stdout's reader has gone (`grader.py | head`): exit with status 141 as a shell tool does, not a
    BrokenPipeError traceback; what is still buffered goes to /dev/null, not to the closed pipe."""
    _to_devnull(sys.stdout)
    sys.exit(141)


class _ClosedPipeGuard:
    """sys.stdout or sys.stderr while run_cli(keep_working=True) runs: once its reader has gone
    (`| head -1`, `2>&1 | head -1`), what is written to it goes to /dev/null and the work goes on, so
    the files it writes are written (a "decoded ..." line printed before the predictions were written
    ended an evaluation without them, and without a word)."""

    def __init__(self, stream):
        self._stream = stream
        self.closed_pipe = False

    def _closed(self):
        self.closed_pipe = True
        _to_devnull(self._stream)

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._closed()
            return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._closed()
            with contextlib.suppress(BrokenPipeError, OSError, ValueError):
                self._stream.flush()  # what is still buffered, into /dev/null now

    def __getattr__(self, name):  # fileno, isatty, encoding, ...
        return getattr(self._stream, name)


def lenient_streams():
    """stdout and stderr write a character their encoding lacks as a backslash escape: on Windows a
    redirected stream is cp1252, which has neither the MASK character nor many of the corpus's names,
    and printing one raised UnicodeEncodeError (scripts outside this package: oneline.lenient_streams). A stream the
    process started without (`<&-`, `>&-`, `2>&-`: None in sys) is /dev/null (`_closed_to_devnull`)."""
    _closed_to_devnull()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError):
            pass


def _closed_to_devnull():
    """sys.stdin, sys.stdout or sys.stderr that is None (its descriptor closed when the process started, as a
    daemon or `cmd >&-` leaves it) becomes /dev/null on its own descriptor: print and tqdm wrote to None
    (AttributeError: 'NoneType' object has no attribute 'flush', a training run stopped silently by 2>&-), and
    a file opened later took descriptor 1 or 2, where a library's own writes would land in it. So does stdout or
    stderr on a descriptor open for reading only: bash run with `2>&-` opens its script there, and every write
    of the run it execs failed (EBADF), ending a training run with exit status 1 and not a word."""
    for fd, name, flags in ((0, "stdin", os.O_RDONLY), (1, "stdout", os.O_WRONLY), (2, "stderr", os.O_WRONLY)):
        if getattr(sys, name) is not None and (name == "stdin" or not _read_only(fd)):
            continue
        try:
            null = os.open(os.devnull, flags)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            setattr(sys, name, open(fd, "r" if name == "stdin" else "w", encoding="utf-8", closefd=False))
        except OSError:  # no /dev/null (a bare chroot): left as Python made it
            pass


def _read_only(fd):
    """Whether descriptor `fd` is open for reading only (False where that cannot be asked: Windows)."""
    try:
        import fcntl
        return fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY
    except (ImportError, OSError, AttributeError):
        return False


FILE_LIMITS = {errno.EACCES: "check the file's permissions, or give another path",  # errno: the fix to name
               errno.EPERM: "check the file's permissions, or give another path",
               errno.EROFS: "give another path", errno.ELOOP: "give another path",
               errno.ENAMETOOLONG: "give another path"}


def machine_limit(e):
    """The one-line message for an exception that is the machine's limit, not a bug: a file the system
    will not open (permissions, too many links), memory run out on any device, or torch.compile without a
    C++ compiler; None for anything else (its traceback is the report)."""
    if isinstance(e, OSError) and e.filename is not None and e.errno in FILE_LIMITS:
        return f"{e.filename}: {error_reason(e)}; {FILE_LIMITS[e.errno]}"
    text = str(e)
    if isinstance(e, MemoryError) or (isinstance(e, RuntimeError) and (
            "out of memory" in text or "can't allocate memory" in text)):
        where = "the GPU" if ("CUDA" in text or "MPS" in text) else "the CPU"
        size = re.search(r"tried to allocate (\d+ bytes|[\d.]+ ?[KMGT]i?B)", text, re.IGNORECASE)
        if size and size.group(1).endswith("bytes"):
            size = f"{int(size.group(1).split()[0]) / 2 ** 20:,.0f} MiB"
        elif size:
            size = size.group(1)
        tried = f", trying to allocate {size}" if size else ""
        return (f"out of memory on {where}{tried}: a smaller --batch_size, or a smaller model (--n_embd, "
                f"--n_layer, --block_size), needs less")
    if "InvalidCxxCompiler" in text or "No working C++ compiler" in text or "Failed to find C compiler" in text:
        return ("torch.compile found no working C/C++ compiler: install one (Debian: apt-get install g++), or "
                "train without compiling (--no_compile)")
    if "CppCompileError" in type(e).__name__ + text or "C++ compile error" in text:
        from .fastpath import inductor_paths_with_space  # only when compiling failed: it reads torch's folders
        spaced = inductor_paths_with_space()
        if spaced:
            what, path, fix = spaced[0]
            return (f"torch.compile could not build its C++ kernels: {what} is at {path!r}, a path with a space, "
                    f"which this torch gives its compiler unquoted; {fix}, or train without compiling (--no_compile)")
    return None


# what gloo says when a collective's peer process has gone (NCCL waits instead, until torchrun ends this one)
PEER_GONE = ("closed by peer", "reset by peer", "Broken pipe", "Connection refused")


def peer_stopped(e):
    """The one-line message for a torchrun process whose collective failed because another process of the
    run stopped (that process prints its own error; torchrun then ends the rest); None otherwise."""
    from .utils import distributed_env  # utils imports this module: here, not at the top
    rank, world, _ = distributed_env()
    if world > 1 and isinstance(e, RuntimeError) and any(words in str(e) for words in PEER_GONE):
        return (f"process {rank} of {world} stopped because another process of this torchrun run stopped first: "
                f"that process's error says why")
    return None


def _stopped(previous_term, keep_working):
    """Exit as Ctrl-C (130) or SIGTERM (143) asked, in one line."""
    _ignore_interrupts(previous_term)
    what, status = ("terminated (SIGTERM)", 143) if sigterm_seen() else ("interrupted", 130)
    # only the tools that write files (keep_working) promise something of their files
    print(f"{what}: no output file was half-written" if keep_working else what, file=sys.stderr)
    sys.exit(status)


def _raised_while_stopping(e):
    """True for an error raised while a Ctrl-C or SIGTERM was stopping the run: `timeout` or a job scheduler
    signals the whole process group, DataLoader workers die of the SIGTERM, and torch's SIGCHLD handler
    raises "DataLoader worker ... killed by signal" over the KeyboardInterrupt (exit 1 and a traceback)."""
    if sigterm_seen():  # the SIGCHLD handler can run first, and the held SIGTERM raises over its error
        return True
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__context__
    return False


def run_cli(main, keep_working=False):
    """Run a command-line `main()`: a bad input file (DataError, ParamsError) ends in its one-line message and
    exit status 2, a diverged training run (TrainingDiverged) in its message and status 1, Ctrl-C in exit status
    130 (output files are written atomically, so none is half-written, which the tools that write files say),
    SIGTERM likewise in status 143, and a closed stdout (`| head`) in status 141. With `keep_working` (the tools
    that write files: run.py, the demo, deliverables) a closed stdout or stderr does not stop the work: its
    files are written, then the status is 141; the others, whose only product is what they print, stop at once.
    A Ctrl-C pressed again within a second of the one that stops the run is ignored (`_interrupt`), and once main
    has returned or been interrupted every Ctrl-C is: a second one would only interrupt the first's unwinding or
    the exit (a traceback from a generator's close or an exit handler, or death by signal instead of status 130)."""
    clear_sigterm()
    main_thread = threading.current_thread() is threading.main_thread()
    previous_term = None
    if main_thread:  # None back: a handler not set from Python; the default stands in for it
        previous_term = signal.signal(signal.SIGTERM, terminate_handler) or signal.SIG_DFL
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not one ignored or set by a caller
            _raised_at.clear()
            signal.signal(signal.SIGINT, _interrupt)
    lenient_streams()
    streams = (sys.stdout, sys.stderr)
    guards = [_ClosedPipeGuard(s) for s in streams] if keep_working else []
    if guards:
        sys.stdout, sys.stderr = guards
    try:
        fix_threads_from_environment()
        result = main()
        sys.stdout.flush()  # a closed pipe shows here, not at exit's flush (stdout to a pipe is buffered)
        if any(g.closed_pipe for g in guards):
            closed_pipe_exit()
    # each error's exit, a closed pipe's too, ignores Ctrl-C first (SIGTERM back to its own handler): a stop
    # arriving as the run ends in its error would raise inside the handler, and a traceback would follow the one
    # line. torchrun sends its SIGTERM just as a process's collective fails on the peer that stopped
    # (tests/test_ddp.py met it)
    except (DataError, ParamsError) as e:
        _ignore_interrupts(previous_term)
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except TrainingDiverged as e:
        _ignore_interrupts(previous_term)
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
    except BrokenPipeError:
        _ignore_interrupts(previous_term)
        closed_pipe_exit()
    except KeyboardInterrupt:
        _stopped(previous_term, keep_working)
    except (OSError, MemoryError, RuntimeError) as e:
        _ignore_interrupts(previous_term)
        if _raised_while_stopping(e):
            _stopped(previous_term, keep_working)
        message = machine_limit(e) or peer_stopped(e)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        sys.exit(1)
    finally:
        _ignore_interrupts(previous_term)
        if guards and sys.stdout is guards[0] and sys.stderr is guards[1]:
            sys.stdout, sys.stderr = streams
    return result

"""Locks held while a run writes its outputs: one run at a time trains into a params file, writes a
loss log, or runs the demo in a folder.

An flock (POSIX advisory lock) on `<path>.lock`, a file holding the holder's pid: the system drops it
when the process dies however it dies, so a leftover file locks nothing. Where there is no flock
(Windows, some network file systems) runs go unlocked; so they do where a file of the user's holds the
lock's name (anything but a pid), which is left as it is.
"""
import contextlib
import errno
import os
import stat
import sys

from .dataset import DataError
from .files import is_special_file


def _ours(held):
    """True for a lock file's text that this module wrote: a pid (NULs before it: a file that an earlier
    version wrote at the offset of its read)."""
    return held.strip("\x00 \n").isdigit()


def training_lock(params_path):
    """Held while a run trains into `params_path`: a second run into the same params stops in one line
    (DataError) instead of taking the live run's training state for an interrupted one's, after which
    both would write the same state, log and params. An flock on `<params>.lock` (holding the writer's
    pid), which the system drops when the process dies however it dies, so a leftover file locks
    nothing; the file is removed when training ends. A params folder not there yet is made here (a
    second run must find the lock), and removed again if the run leaves it empty (a bad input). Not on
    Windows (no flock), nor over a file of that name holding anything but a pid (the user's: it is left
    as it is), nor where no file can be made there (the output check says what is wrong). Yields whether
    it locked."""
    def busy(path, pid):
        fix = "use another OUT_DIR" if os.environ.get("RUN_SH_MODE") else "give this run another --writing_params_path"
        return (f"{params_path}: another run{f' (pid {pid})' if pid else ''} is training into it now ({path} is "
                f"locked); wait for it to end, or {fix}")
    return held_lock(os.path.realpath(params_path) + ".lock", busy)


def log_lock(log_path):
    """training_lock for a loss log given its own path (run.py --log_path): two runs into other params but the
    same log truncated each other's `<log>.partial` and interleaved their lines in it. Nothing is locked for
    a special file (/dev/null), which any number of runs may write. Yields whether it locked."""
    if is_special_file(log_path):
        return contextlib.nullcontext(False)

    def busy(path, pid):
        return (f"{log_path}: another run{f' (pid {pid})' if pid else ''} is writing its loss log there now ({path} "
                f"is locked); wait for it to end, or give this run another --log_path")
    return held_lock(os.path.realpath(log_path) + ".lock", busy)


@contextlib.contextmanager
def held_lock(path, busy):
    """training_lock's lock on the file `path` (its folder made as needed, and removed again when left empty),
    for any tool that one process at a time may run on its files (the demo on its --out). `busy(path, pid)`:
    the one line (a DataError) that a second process gets while the first holds it (pid: the holder's, as a
    string, or "" when the file does not say). Yields whether it locked."""
    try:
        import fcntl
    except ImportError:
        yield False
        return
    # its folder resolved, not a link at the lock's own name (_take leaves one alone)
    path = os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(path))), os.path.basename(path))
    made = []  # the folders made here, deepest first
    folder = os.path.dirname(path)
    while folder and not os.path.exists(folder) and folder != os.path.dirname(folder):
        made.append(folder)
        folder = os.path.dirname(folder)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    except OSError:
        made = []
    fd = None
    try:
        fd = _take(fcntl, path, busy)
        yield fd is not None
    finally:
        if fd is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)  # while still locked: a run that opened it sees the change after its flock
            os.close(fd)
        for folder in made:  # left empty by a run that stopped early: not the run's to keep
            try:
                os.rmdir(folder)
            except OSError:
                break


def _take(fcntl, path, busy):
    """held_lock's lock: the descriptor of `path`, flocked by this process and holding its pid; None where
    no lock is to be had (a user's file of that name, no file can be made, a file system without flock); a
    DataError, `busy`'s line, while another run holds it."""
    for _ in range(100):  # another try only when the file or its folder went between this run's steps
        try:
            # not through a link laid at that name (its target would be written, then removed), nor blocking on a FIFO
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o666)
        except FileNotFoundError:  # the folder, made by another run that then stopped, removed by it
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
            except OSError:  # it cannot be made (a folder above it this user cannot write in): no lock, and
                return None  # the output check says what is wrong
            continue
        except PermissionError:
            if not os.path.lexists(path):  # no file, and none can be made here (a folder this user cannot write
                return None                # in): no lock, and the output check says what is wrong
            # another user's lock (made 0644 under their umask): a descriptor opened for reading flocks as well,
            # so runs of two users into a shared folder still exclude each other (O_RDWR failing was an
            # unlocked run, without a word)
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except FileNotFoundError:  # it went meanwhile (its run ended): try again
                continue
            except OSError as e:
                print(f"note: {path} cannot be opened ({e.strerror}), so this run is not guarded against a second "
                      f"run into the same files; remove that file if no run is using it", file=sys.stderr)
                return None
        except OSError:
            return None
        taken = False
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or a device of that name: the user's, no lock
                return None
            held = os.pread(fd, 64, 0).decode("ascii", "replace")
            if held and not _ours(held):  # a file of the user's by that name: left as it is, no lock
                return None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                if e.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    pid = held.strip("\x00 \n")
                    raise DataError(busy(path, pid if pid.isdigit() else "")) from None
                # a file system without flock (NFS without lockd, Lustre without -o flock, some FUSE): train
                # unlocked, as where there is no fcntl, leaving no empty lock file behind
                if not held:
                    with contextlib.suppress(OSError):
                        os.unlink(path)
                return None
            # the run that held it may have ended between this open and the flock, removing the file: a lock
            # on that removed file would exclude no later run, which opens a new one; so take the one there now
            try:
                current = os.stat(path)
            except FileNotFoundError:
                continue
            mine = os.fstat(fd)
            if (current.st_ino, current.st_dev) != (mine.st_ino, mine.st_dev):
                continue
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
            except OSError:  # a full disk (or quota), another user's file opened for reading: the flock holds all
                pass         # the same, a second run is told no pid or the earlier one; the run's first write says
                             # what is wrong with the disk (this was a traceback before any work)
            taken = True
            return fd
        finally:
            if not taken:
                os.close(fd)
    print(f"note: {path} kept changing under this run (other runs starting and stopping); training without it",
          file=sys.stderr)
    return None

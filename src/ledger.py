"""Which files a tool wrote, so that it replaces only its own: a record of their sha256 beside them.

make_world keeps `.make_world.json` beside the corpus it writes, the demo `.made-by-demo.json` in its
work folder. Before writing, a tool asks `foreign()` for the first file of the names it is about to
write that the record does not hold as it is now: a file the tool never wrote (the course's data, a
student's params), or one changed since (edited by hand, remade by another command). Such a file is
refused, not replaced. `logged_epochs` reads how long the training run behind a params file was, from
its loss log: run.py keeps a longer run's params from a shorter run, the grader names short runs.
`checkout_commit` names the code a run's figures came from (the bench's summary, a params card).
Standard library only (make_world runs without torch).
"""
import contextlib
import hashlib
import json
import os
import stat
import subprocess
import tempfile

try:
    import fcntl
except ImportError:  # Windows: records are updated without a lock
    fcntl = None


WORLD_RECORD = ".make_world.json"  # make_world's record beside the corpus it writes (make_world.MARKER), with its
# arguments, which the grader reads
DEMO_RECORD = ".made-by-demo.json"  # the demo's record in its work folder (demo.RECORD), by which the grader knows it
# (the graded package, which imports nothing from src/*.py, keeps a copy: params.DEMO_RECORD, held equal by a test)

# seconds a finished run's loss log may be older than its params (written just before them): an older log beside
# params is a replaced run's (run.py's check of a longer run, the grader's note on short runs)
LOG_LAG = 60.0


def logged_epochs(log_path):
    """The epoch of a loss log's last row (`<params>.log.jsonl`, one JSON object a line): how many epochs the
    run that wrote it trained; None when it cannot be read or has no such row."""
    try:
        with open(log_path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4096))  # rows are about 100 bytes
            lines = f.read().decode("utf-8", "replace").split("\n")
        row = json.loads(next(line for line in reversed(lines) if line.strip()))
    except (OSError, ValueError, StopIteration):
        return None
    epoch = row.get("epoch") if isinstance(row, dict) else None
    return epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else None


def sha256_of(path):
    """The sha256 of a regular file's bytes, or None for anything else (a folder, a FIFO, whose open
    would wait for a writer, a dangling link) or a file that cannot be read."""
    digest = hashlib.sha256()
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def _read_document(folder, record):
    """(the JSON object of `folder`'s record file, or None when there is none or it cannot be read; why)."""
    try:
        with open(os.path.join(folder, record), encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        return None, f"no {record} beside it"
    except (OSError, ValueError):
        return None, f"{record} beside it cannot be read"
    return (doc, None) if isinstance(doc, dict) else (None, f"{record} beside it cannot be read")


def read_record(folder, record):
    """({file name: sha256} of `folder`'s record file, or None when there is none or it cannot be read;
    why it is None, for an error message)."""
    doc, why = _read_document(folder, record)
    hashes = doc.get("sha256") if doc is not None else None
    if not isinstance(hashes, dict):
        return None, why or f"{record} beside it cannot be read"
    return hashes, None


def record_about(folder, record):
    """The "about" text of `folder`'s record file (which tool, and which version of it, wrote it), or None."""
    return record_value(folder, record, "about")


def record_value(folder, record, key):
    """What `folder`'s record file holds under `key` beside the sha256 (make_world's "arguments"), or None."""
    doc, _ = _read_document(folder, record)
    return doc.get(key) if doc is not None else None


def foreign(folder, record, names, harmless=None):
    """(path, why) of the first of `names` present in `folder` that its record does not hold with the
    file's current sha256, or None when every one is the tool's own; `why` is "changed since" for a
    recorded file whose bytes differ, else what is missing. `harmless(name, path)`, when given, may say
    a file is safe to replace all the same (make_world: the bytes it is about to write)."""
    present = [name for name in names if os.path.lexists(os.path.join(folder, name))]
    if not present:
        return None
    hashes, missing = read_record(folder, record)
    for name in present:
        path = os.path.join(folder, name)
        digest = sha256_of(path)
        if hashes is not None and digest is not None and hashes.get(name) == digest:
            continue
        if harmless is not None and harmless(name, path):
            continue
        if hashes is None:
            return path, missing
        return path, "changed since" if name in hashes else f"not in the {record} beside it"
    return None


def record_text(hashes, about, **extra):
    """The JSON text of a record: {"about": ..., "sha256": {name: hash}, **extra}."""
    return json.dumps(dict(extra, about=about, sha256=hashes), indent=1, sort_keys=True) + "\n"


@contextlib.contextmanager
def _locked(folder):
    """The folder locked against other processes updating its record at once (POSIX; a no-op elsewhere)."""
    if fcntl is None:
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def add_to_record(folder, record, names, about):
    """Record the current sha256 of `names` (files in `folder` the tool has just written) in its record,
    keeping the other entries; written atomically (a temporary file renamed over it), one process at a
    time. An OSError (a record that is a folder, a full disk) is the caller's to word."""
    with _locked(folder):
        hashes, _ = read_record(folder, record)
        hashes = dict(hashes or {})
        for name in names:
            digest = sha256_of(os.path.join(folder, name))
            if digest is not None:
                hashes[name] = digest
        fd, tmp = tempfile.mkstemp(prefix=record + ".", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(record_text(hashes, about))
            mask = os.umask(0)
            os.umask(mask)
            os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes 0600: an ordinary file's mode, readable by the group
            os.replace(tmp, os.path.join(folder, record))
        finally:
            with contextlib.suppress(FileNotFoundError):  # written and renamed: nothing left; gone already
                os.unlink(tmp)


def checkout_commit(short=12):
    """The commit of the checkout these tools are in (`short` hex digits at least), "+changes" added where its
    tracked files differ from it; None where it is no git checkout or git cannot say. The bench's summary and
    run.py's card name the code that made their figures by it."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        head = subprocess.run(["git", "rev-parse", f"--short={short}", "HEAD"], cwd=here, capture_output=True,
                              text=True, timeout=10)
        if head.returncode != 0 or not head.stdout.strip():
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+changes" if dirty else "")

"""Files: atomic writes and output-path checks.

Files are written atomically (a temporary file beside the target, then os.replace), so an
interrupted run never leaves a half-written params or predictions file; the temporary file of a
writer killed outright (SIGKILL) is removed by a later write of the same file on the same host. A
Ctrl-C during a write is held until the temporary file is complete, then discards it and raises
(interrupts.py). Special files (/dev/null, a FIFO) are written straight; a symlink's target is written
atomically, the link kept. `check_output_path` refuses, before a run, a path its output could not
be written to. locks.py keeps a second run from training into the same params; params.py reads
params files; cli.py runs a command with one-line errors.
"""
import contextlib
import errno
import os
import re
import shlex
import shutil
import socket
import stat
import sys
import tempfile
import time
import warnings
import zipfile

import torch

from .dataset import DataError
from .interrupts import finishing, interrupts_held, raise_pending_interrupt
from .params import load_torch_file, unwrap

# torch 2.0's torch.load(weights_only=True) warns that TypedStorage is deprecated from inside its own
# unpickler (torch 2.1 no longer does): a warning about torch's code, printed before the one-line errors
# and notes that sniffing and loading params lead to. Every process that loads params imports this module.
warnings.filterwarnings("ignore", message="TypedStorage is deprecated", category=UserWarning)


class NoRoom(DataError):
    """An atomic write that found no room for its file (a full disk or quota, no inode left, the file size
    limit): a training run goes on without saving more training states (trainer.Trainer.train)."""


def _umask():
    """The process's umask: read from /proc on Linux, as setting it to read it (the only way elsewhere)
    changes it for a moment under threads that may be making files."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def replacement_mode(target):
    """The mode a file written over `target` gets: the replaced file's (params a user made 0600 stay so),
    else what an ordinary open() gives a new file (0666 less the umask)."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode) & 0o777  # not its setuid, setgid or sticky bits
    except OSError:
        return 0o666 & ~_umask()


def is_special_file(path):
    """True for an existing path that is neither a regular file nor a folder: /dev/null, /dev/stdout, a
    FIFO. Atomic writes go straight to these: renaming a temporary file over one (as root, in Docker or
    Colab) replaced /dev/null with a regular file."""
    return os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path)


# a file that could not grow: a full disk or quota, no inode left for it, the file size limit (ulimit -f: EFBIG,
# Python ignoring SIGXFSZ)
_NO_ROOM = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC), errno.EFBIG}


def _names_a_folder(path):
    """True for a path spelled as a folder's (ending in a separator, `.` or `..`): realpath drops the
    trailing `/`, so without this check `out/` would be written as a file named `out`."""
    return path.endswith(tuple(os.sep + (os.altsep or ""))) or os.path.basename(path) in (".", "..")


def error_reason(e):
    """The last non-empty line of an exception's message (its strerror for an OSError), or its type."""
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return lines[-1] if lines else type(e).__name__


def _atomic_prefix(path):
    """The start of the name of an atomic write's temporary file for `path`, which the check before a run
    tries too: the writer's host and pid in it let a later write tell a dead writer's leftover (SIGKILL, the
    OOM killer) from a live one's file in progress."""
    return f"{os.path.basename(path)}.atomic-{_HOST}-{os.getpid()}-"


def _atomic(path, write):
    if _names_a_folder(path):
        raise DataError(f"{path}: names a folder, not a file; give a file name")
    if is_special_file(path):
        try:
            with open(path, "wb") as f:
                write(f)
        except OSError as e:  # /dev/full, a FIFO whose reader went away
            raise DataError(f"{path}: could not write to it ({error_reason(e)}); {another_path()}") from None
        return
    target = os.path.realpath(path)  # a symlink: its target is replaced, the link stays a link
    d = os.path.dirname(target)
    tmp = None
    with interrupts_held():  # a Ctrl-C inside the write is held, then discards it (below)
        finish = finishing()  # inside writes_finish: the held block around it raises the Ctrl-C at its end
        try:
            # inside the try: a folder that os.access calls writable can still refuse a file (/sys, NFS
            # root-squash, a quota), and that is one line too
            os.makedirs(d, exist_ok=True)
            _remove_leftovers(target)  # first: a dead writer's leftover can be what fills the disk
            fd, tmp = tempfile.mkstemp(prefix=_atomic_prefix(target), suffix=".tmp", dir=d)
            with os.fdopen(fd, "wb") as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, replacement_mode(target))  # mkstemp makes the file 0600
            if not finish:
                raise_pending_interrupt()  # Ctrl-C during the write: the old file stays
            replace_file(tmp, target)
        except BaseException as e:
            written = 0
            if tmp is not None and os.path.exists(tmp):
                with contextlib.suppress(OSError):
                    written = os.path.getsize(tmp)
                with contextlib.suppress(OSError):  # gone already (another cleaner): the first error is the one said
                    os.unlink(tmp)
            # OSError from Python; RuntimeError from torch.save's zip writer, seen only when the file could not grow
            zip_writer = isinstance(e, RuntimeError) and ("inline_container" in str(e) or "writ" in str(e))
            if zip_writer or (isinstance(e, OSError) and e.errno in _NO_ROOM):
                reason = error_reason(e)
                if zip_writer:  # "[enforce fail at inline_container.cc:672] . unexpected pos ...": torch's internals
                    reason = "torch.save stopped part way" + ("" if "enforce fail" in reason else f": {reason}")
                room, fix = _no_room(d, written)
                raise NoRoom(f"{path}: could not write it ({reason}; {room}); the previous file, "
                             f"if any, is unchanged; {fix}") from None
            if isinstance(e, OSError):  # permission, a read-only or lost mount: more space would not help
                raise DataError(f"{path}: could not write it ({error_reason(e)}); the previous file, if any, is "
                                f"unchanged; {another_path()}") from None
            raise
        for hook in tuple(WRITTEN_HOOKS):  # inside the hold: a Ctrl-C waits for the record of what was written
            hook(target)


def replace_file(tmp, target, waits=(0.1, 0.2, 0.4, 0.8, 1.6)):
    """os.replace, tried again a few times (3 s in all) on Windows when the target is in use: an antivirus
    scan, the search indexer or OneDrive holding the old file a moment refuse the rename (PermissionError,
    WinError 5 or 32), and the write of the params hours of training made failed on it."""
    for wait in waits if _WINDOWS else ():
        try:
            os.replace(tmp, target)
            return
        except PermissionError:
            time.sleep(wait)
    os.replace(tmp, target)


WRITTEN_HOOKS = []  # callables run with the real path of each file an atomic write has just put in place: the demo
# records its files in its ledger as they are written (a demo killed outright mid-step left a state it never recorded)

_HOST = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:64]  # as it stands in temporary file names
LEFTOVER_AGE = 60.0  # seconds unmodified before a dead writer's temporary file is removed


_WINDOWS = os.name == "nt"  # where os.kill(pid, 0) sends CTRL_C_EVENT instead of asking


def _writer_alive(pid):
    if _WINDOWS:  # no signal-free check there: assume alive (the file stays)
        return True
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except (OSError, OverflowError, ValueError):  # another user's process; a number no pid can be
        return True
    return True


def _remove_leftovers(target):
    """Remove the temporary files of earlier writes of `target` left by writers that are gone: a process
    killed mid-write (SIGKILL, the OOM killer) cannot clean up, and a training state is 40 MB a time.
    Only files of this host, whose pid is no process here and that have not changed for LEFTOVER_AGE
    seconds: a writer on another machine sharing the folder, or in another pid namespace, keeps its file."""
    d, base = os.path.split(target)
    # mkstemp's 8 random characters after the host and the pid
    pattern = re.compile(re.escape(base) + r"\.atomic-([A-Za-z0-9-]*)-(\d+)-[a-z0-9_]{8}\.tmp")
    now = time.time()
    try:
        names = os.listdir(d)
    except OSError:
        return
    for name in names:
        m = pattern.fullmatch(name)
        if not m or m.group(1) != _HOST or int(m.group(2)) == os.getpid() or _writer_alive(int(m.group(2))):
            continue
        path = os.path.join(d, name)
        with contextlib.suppress(OSError):
            if now - os.stat(path).st_mtime >= LEFTOVER_AGE:
                os.unlink(path)


def another_path():
    """The fix "write it elsewhere", in the words of what names the path: run.sh's OUT_DIR under run.sh (its modes
    set the params' and predictions' paths, and all else a run writes goes beside them), else the path itself."""
    return "use another OUT_DIR" if os.environ.get("RUN_SH_MODE") else "pick another path"


def _free_space(folder):
    try:
        return f"{size_words(shutil.disk_usage(folder).free)} free there"
    except OSError:
        return "free space unknown"


def file_size_limit():
    """The process's file size limit in bytes (the shell's `ulimit -f`, which counts KiB), or None for none."""
    try:
        import resource  # not on Windows
        soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    except (ImportError, OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else soft


def _no_inodes(folder):
    """True when the filesystem of `folder` has no file entry (inode) left, whatever its free space."""
    try:
        st = os.statvfs(folder)  # not on Windows
    except (AttributeError, OSError):
        return False
    return st.f_files > 0 and st.f_favail == 0  # (a filesystem that counts none reports 0 files in all)


def _no_room(folder, written):
    """Why a write into `folder` that stopped after `written` bytes found no room, and the fix: the file size
    limit, no inode left, or (the usual case) a full disk or quota: what was free there."""
    limit = file_size_limit()
    if limit is not None and written >= limit:
        return (f"the file size limit is {size_words(limit)} (ulimit -f)",
                "raise the limit (ulimit -f unlimited) in the shell that runs it")
    if _no_inodes(folder):
        return (f"{_free_space(folder)}, but no inode left for a new file (df -i)",
                f"remove some files from that filesystem or {another_path()}")
    return _free_space(folder), f"free some disk space or {another_path()}"


def size_words(n):
    """Bytes as a message gives them: KiB below 10 MiB (a small run's files read "0.2 MiB" each), else MiB."""
    return f"{n / 2 ** 20:,.1f} MiB" if n >= 10 * 2 ** 20 else f"{-(-n // 1024):,} KiB"


def check_room(path, sizes, state=0, replaced=0, targets=()):
    """Before a run: refuse, in one line, a run whose outputs cannot fit where they go: `sizes` ({what: bytes})
    of the files it writes beside `path` when it ends (the params, its loss log, "loss log"), each written whole
    before the old one goes, or one of them above the file size limit (ulimit -f). Returns a note (else None)
    when a training state of `state` bytes would not fit as well: a run saves one only once it has trained a
    while (--state_every), and a save writes the new state whole beside the last one, so from the second save
    on two are there with the log (less `replaced`: an interrupted run's state and partial log there, which a
    --resume replaces); a run whose first save finds no room goes on without states. The temporary files of
    dead writers of `targets` are removed first (_remove_leftovers), as the writes would. The space is what a
    user may use (a quota is seen only as it fills). Special files, and folders whose space cannot be looked
    at, are not checked."""
    if is_special_file(path):
        return None
    for target in targets:
        _remove_leftovers(os.path.realpath(target))
    folder = os.path.dirname(os.path.realpath(path))
    while not os.path.isdir(folder) and os.path.dirname(folder) != folder:  # made by the run: the nearest folder
        folder = os.path.dirname(folder)
    what = ", ".join(f"{name} {size_words(size)}" for name, size in sizes.items())
    limit, largest = file_size_limit(), max(sizes.values(), default=0)
    if limit is not None and largest > limit:
        raise DataError(f"{path}: this run writes files of up to {size_words(largest)} ({what}), above the file size "
                        f"limit of {size_words(limit)} (ulimit -f); raise it (ulimit -f unlimited) first")
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        free = None
    need = sum(sizes.values())
    if free is not None and free < need:
        raise DataError(f"{path}: this run writes about {size_words(need)} there ({what}), and {folder} has "
                        f"{size_words(free)} free; free some disk space or {another_path()}")
    go_on = ("a save that finds no room is a note, and the run goes on saving no more (any state saved before is "
             "kept); free some disk space for them, or give --state_every a time longer than the run (none is saved)")
    if state and limit is not None and state > limit:
        return (f"{path}: a training state of up to {size_words(state)} is above the file size limit of "
                f"{size_words(limit)} (ulimit -f): " + go_on.replace("free some disk space for them", "raise it"))
    with_state = max(need, state + sizes.get("loss log", 0)) + state - replaced
    if state and free is not None and free < with_state:
        less = f", less the {size_words(replaced)} of the interrupted run's" if replaced else ""
        return (f"{path}: {folder} has {size_words(free)} free, room for the {size_words(need)} this run writes as it "
                f"ends but not for its training states as well (up to {size_words(state)}, two at a save{less}): "
                + go_on)
    return None


def atomic_write_text(path, text):
    """Write `text` (UTF-8) to `path` so readers see the old file or the whole new one, never a part."""
    _atomic(path, lambda f: f.write(text.encode("utf-8")))


def cpu_state_dict(model):
    """The state_dict of the model inside any DataParallel / DDP / torch.compile wrappers (keys as the
    course saves them, no `module.` or `_orig_mod.`), every tensor on the CPU (its `_metadata` kept,
    as torch.save keeps it): params trained on a GPU then load with a plain torch.load and
    load_state_dict on a machine without one. On the CPU the tensors are the model's own, not copies."""
    state = unwrap(model).state_dict()
    out = type(state)((k, v.detach().cpu()) for k, v in state.items())
    if hasattr(state, "_metadata"):
        out._metadata = state._metadata
    return out


def atomic_torch_save(obj, path):
    """torch.save, atomically."""
    _atomic(path, lambda f: torch.save(obj, f))


def save_trained(obj, path):
    """atomic_torch_save for what a training run made (its params, at its end): where the write fails (its folder
    made read-only meanwhile, a disk filled by another process, a mount gone), the params are written to the
    temporary folder instead and the error names that file, so hours of training are not lost with the write."""
    try:
        atomic_torch_save(obj, path)
    except DataError as e:
        kept = os.path.join(tempfile.gettempdir(), f"{os.path.basename(path)}.kept-{os.getpid()}")
        try:
            atomic_torch_save(obj, kept)
        except (DataError, OSError):  # that folder failed too: the first error is the one to say
            raise e from None
        raise type(e)(f"{e} (the trained params are kept in {kept}: mv {shlex.quote(kept)} {shlex.quote(path)} "
                      f"once that path can take them)") from None


def atomic_write(path, write):
    """write(f) into a binary file object that becomes `path` only once it has returned."""
    _atomic(path, write)


def reads_as(path):
    """What an existing regular file holds, from its first 4 KB: "empty", "torch" (torch.save's zip or
    legacy pickle: params, a training state), "zip" (another zip), "pickle" (another pickle), "card" (a params
    file's card, card.py: one JSON object naming params_sha256), "log" (JSON lines), "corpus"
    (question<TAB>place lines, questions ending "born?"), "long text" (a line longer than a prediction can
    be: biographies, the written answers, notes), "text" (such as predictions, also UTF-16 from a Windows
    editor), or "binary"."""
    with open(path, "rb") as f:
        head = f.read(4096)
    if not head:
        return "empty"
    if head.startswith(b"PK\x03\x04"):  # a zip: torch.save's holds data.pkl; one cut short counts as torch's
        if not zipfile.is_zipfile(path):
            return "torch"
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
        return "torch" if any(n.endswith("/data.pkl") or n == "data.pkl" for n in names) else "zip"
    if head.startswith(b"\x80") and b"\x8a\x0al\xfc\x9cF\xf9 j\xa8" in head[:24]:  # torch's legacy format: a
        return "torch"                                                      # pickle opening with its magic number
    if head.startswith(b"\x80") and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "pickle"
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or (b"\x00" in head and len(head) > 1 and (
            head[1::2].count(0) == len(head[1::2]) or head[0::2].count(0) == len(head[0::2]))):
        # UTF-16 (a BOM, or every other byte zero: ASCII saved by a Windows editor without one)
        order = "utf-16" if head.startswith((b"\xff\xfe", b"\xfe\xff")) else (
            "utf-16-le" if head[1] == 0 else "utf-16-be")
        text = head[:len(head) // 2 * 2].decode(order, errors="replace")
    elif b"\x00" in head:
        return "binary"
    else:
        text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    lines = text.split("\n")[:-1] or text.split("\n")  # the last may be cut at 4 KB
    first = lines[0].rstrip("\r")
    if first.startswith("{"):
        return "card" if first == "{" and '"params_sha256"' in text else "log"  # (a card is indented JSON)
    if "\t" in first or first.endswith("born?"):
        return "corpus"
    if any(len(line) > MAX_PREDICTION for line in lines):  # biographies, the written answers, a README
        return "long text"
    return "text"


def torch_content(path):
    """What a torch file holds, for deciding whether an output may replace it: "params" (a GPT's state_dict:
    names to tensors, `tok_emb.weight` among them, as the course's and this package's params are, of either
    variant and any size), "state" (a training state of resume.py), "damaged" (no complete torch file: cut
    short) or "other" (a checkpoint of the user's own, another model's weights). Read memory-mapped where
    torch can (2.1 and later), so a large file costs little."""
    try:
        try:
            obj = torch.load(path, map_location="cpu", weights_only=True, mmap=zipfile.is_zipfile(path))
        except TypeError:  # torch 2.0: no mmap, so never a zip with a compressed record (unpacked whole)
            obj = load_torch_file(path)
    except Exception:  # noqa: BLE001 - a zip that does not load holds pickled objects weights_only refuses
        return "other" if zipfile.is_zipfile(path) else "damaged"
    if not isinstance(obj, dict):
        return "other"
    if obj and all(isinstance(k, str) and torch.is_tensor(v) for k, v in obj.items()):
        return "params" if any(k.split(".")[-2:] == ["tok_emb", "weight"] for k in obj) else "other"
    return "state" if {"settings", "model", "optimizer", "epoch"} <= set(obj) else "other"


TORCH_CONTENT = {"params": "params", "state": "a training state",
                 "other": "a torch file of another kind (a checkpoint or another model's weights)"}
MAX_PREDICTION = 64  # characters: evaluation decodes at most 32 a question, so a longer line is no prediction
READS_AS = {"torch": "a torch file (params or a training state)", "zip": "a zip archive", "pickle": "a pickle",
            "card": "a params card (JSON)", "log": "a loss log (JSON lines)",
            "corpus": "a corpus of questions", "text": "text", "binary": "a binary file",
            "long text": f"text with lines longer than a prediction can be ({MAX_PREDICTION} characters)"}


def _unreplaceable(path):
    """How `path`'s file flags stop a rename over it, even by root: "immutable" or "append-only" (Linux
    `chattr +i`/`+a`, read with the FS_IOC_GETFLAGS ioctl; macOS and BSD `chflags uchg`/`schg`/`uappnd`/
    `sappnd`), with the command that clears it (for `path` itself: chattr does not follow a link) and who may
    run it (chattr's i and a: root alone, CAP_LINUX_IMMUTABLE; chflags' user flags: the owner too; its system
    flags: root); None when they do not, or cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    flags = getattr(st, "st_flags", None)  # macOS and the BSDs
    if flags is not None:
        for mask, user, system, kind in ((stat.UF_IMMUTABLE, "nouchg", "noschg", "immutable"),
                                         (stat.UF_APPEND, "nouappnd", "nosappnd", "append-only")):
            if flags & (mask | mask << 16):  # SF_* = UF_* << 16
                return (kind, f"chflags {user if flags & mask else system} {shlex.quote(path)}",
                        "its owner or root" if flags & mask else "root")
        return None
    if not sys.platform.startswith("linux"):
        return None
    import fcntl
    import struct
    get_flags = (2 << 30) | (struct.calcsize("l") << 16) | (ord("f") << 8) | 1  # _IOR('f', 1, long)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        buf = fcntl.ioctl(fd, get_flags, bytes(8))  # the kernel writes an int at the start
    except OSError:  # a file system without flags (ENOTTY), a file that is not a regular one
        return None
    finally:
        os.close(fd)
    value = struct.unpack("i", buf[:4])[0]
    for mask, letter, kind in ((0x10, "i", "immutable"), (0x20, "a", "append-only")):  # FS_IMMUTABLE_FL, FS_APPEND_FL
        if value & mask:
            return kind, f"chattr -{letter} {shlex.quote(path)}", "root"
    return None


def check_output_path(path, what, inputs=(), replaces=None, named_by=None, outputs=None):
    """DataError unless `path` can take an output file: not a folder (nor spelled as one, `out/`), not
    one of the `inputs`, nor an existing file whose content (`reads_as`) is not among `replaces` (the
    kinds this output may replace: an earlier run's, so a mistyped path never overwrites a corpus or
    a checkpoint of the user's; "params" and "state" are torch files of that content, `torch_content`;
    None: any), in a folder where a file can be made (tried: os.access says yes to /sys, NFS
    with root-squash, a full quota), or that can be made in the nearest folder there is (the writers
    make it: nothing is made here, so a run that stops at a bad input leaves no empty folder). The trial
    file is named as the atomic write's temporary file will be, so a name too long for it fails here.
    Called before a run (with check_room for the space), so a long run is not lost at its final write.
    `named_by`: what sets this path, when it is derived from another (a params file's training state:
    "--writing_params_path").
    `outputs`: {path: what} of the other files this run writes, which this one must not be either."""
    if not path.strip():  # realpath("") is the current folder: "is a folder" named no path at all
        raise DataError(f"the {what} path is empty; give a file path")
    full = os.path.realpath(path)
    pick = (f"give {named_by} another path (the {what} goes beside it)" if named_by
            else f"pick another path for the {what}")
    if os.environ.get("RUN_SH_MODE") and (named_by == "--writing_params_path" or what in ("params", "predictions")):
        pick = "use another OUT_DIR (run.sh names the file)"  # a --log_path of the user's keeps its own words
    if os.path.isdir(full):
        raise DataError(f"{path}: the {what} path is a folder; " + (f"move it away, or {pick}" if named_by
                                                                     else "give a file path"))
    if _names_a_folder(path):
        raise DataError(f"{path}: the {what} path names a folder (it ends in {os.path.basename(path) or path[-1]!r}); "
                        f"give a file name")
    if is_special_file(full):  # /dev/null, a FIFO: written straight (never replaced), its folder untouched
        if not os.access(full, os.W_OK):
            raise DataError(f"{path}: is not writable; {pick}")
        return
    for other in inputs:
        if other and os.path.realpath(other) == full:
            raise DataError(f"{path}: the {what} would overwrite an input of this run; write it elsewhere")
    for other, its in (outputs or {}).items():
        if other and os.path.realpath(other) == full:
            raise DataError(f"{path}: the {what} would overwrite the {its} this run writes; {pick}")
    if replaces is not None and os.path.isfile(full):
        try:
            kind = reads_as(full)
        except OSError as e:  # (a user's 0000 params: replaced, they were lost, and the run then failed to read
            # its own params back for their card, so it reported an error; another user's file in a shared folder)
            raise DataError(f"{path}: cannot be read ({error_reason(e)}), so this run cannot tell whether it may "
                            f"replace it; make it readable (chmod u+r {shlex.quote(path)}), or {pick}") from None
        other = ("run.sh names the file: use another OUT_DIR" if os.environ.get("RUN_SH_MODE")
                 else f"give {named_by} another path" if named_by else f"give the {what} another path")
        contents = [r for r in replaces if r in TORCH_CONTENT]  # "params", "state": torch files of that content
        if kind not in ("empty",) + tuple(replaces) + (("torch",) if contents else ()):
            raise DataError(f"{path}: is {READS_AS[kind]}, not the {what} an earlier run wrote, so it is not "
                            f"replaced; {other}, or move the file away first")
        if kind == "torch" and contents:
            content = torch_content(full)
            if content not in contents + ["damaged"]:
                raise DataError(f"{path}: is {TORCH_CONTENT[content]}, not the {what} an earlier run wrote, so it is "
                                f"not replaced; {other}, or move the file away first")
    flag = _unreplaceable(full) if os.path.isfile(full) else None
    if flag:  # the run would train for hours, then fail to replace it
        raise DataError(f"{path}: the file is {flag[0]}, so no run can replace it; clear that with "
                        f"`{flag[1]}` (as {flag[2]}), or {pick}")
    if os.path.isfile(full) and not os.access(full, os.W_OK):  # as open() for writing, which the course's
        # torch.save and print(file=) use, refuses it (root excepted); renamed over it, it was replaced unasked
        st = os.stat(full)
        if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
            raise DataError(f"{path}: the file is another user's (uid {st.st_uid}) and not writable by you, so this "
                            f"run does not replace it; {pick}")
        raise DataError(f"{path}: the file is write-protected (mode {stat.S_IMODE(st.st_mode):04o}), so this run does "
                        f"not replace it; make it writable (chmod u+w {shlex.quote(path)}) to let it, or {pick}")
    folder = os.path.dirname(full)
    existing = folder
    while not os.path.exists(existing):  # the nearest folder that is there: the rest are made in it
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise DataError(f"{path}: {existing} is a file, not a folder; {pick}")
    if not os.access(existing, os.W_OK | os.X_OK):
        made = "is not writable" if existing == folder else f"cannot be made: {existing} is not writable"
        st = os.stat(existing)
        if hasattr(os, "geteuid") and st.st_uid == os.geteuid() and not st.st_mode & stat.S_IWUSR:
            # the user's own folder made read-only (chmod a-w, to keep what is in it): "pick another path" alone
            # abandoned a --resume's training state there
            pick = f"make it writable (chmod u+w {shlex.quote(existing)}), or {pick}"
        raise DataError(f"{path}: the folder {folder} {made}; {pick}")
    try:
        with interrupts_held():  # a Ctrl-C here would leave the trial file behind
            fd, tmp = tempfile.mkstemp(prefix=_atomic_prefix(full), suffix=".tmp", dir=existing)
            os.close(fd)
            os.unlink(tmp)
    except OSError as e:
        why = error_reason(e) + (", no inode left for one: df -i" if _no_inodes(existing) else "")
        raise DataError(f"{path}: no file can be made in the folder {existing} ({why}); {pick}") from None

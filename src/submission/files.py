"""Files and command lines: atomic writes, output-path checks, params loading, one-line errors.

Files are written atomically (a temporary file beside the target, then os.replace), so an
interrupted run never leaves a half-written params or predictions file; the temporary file of a
writer killed outright (SIGKILL) is removed by a later write of the same file on the same host. A
Ctrl-C during a write is held until the temporary file is complete, then discards it and raises
(`interrupts_held`): a KeyboardInterrupt inside torch.save's zip writer ended in a second error and
exit status 1. Special files (/dev/null, a FIFO) are written straight; a symlink's target is written
atomically, the link kept. `load_params` reads params with weights_only=True and explains a file of
another variant, vocabulary or model size in one line; `run_cli` gives every script one-line input
errors (exit 2; Ctrl-C 130), as src/oneline.py's parser gives them one-line usage errors.
"""
import contextlib
import errno
import os
import re
import shlex
import shutil
import signal
import struct
import socket
import sys
import tempfile
import threading
import time
import warnings
import zipfile

import torch

from .dataset import DataError


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_held = {"depth": 0, "pending": False, "previous": None, "terminated": False}


def _hold(signum, frame):
    _held["pending"] = True


def _terminate(signum, frame):
    """run_cli's SIGTERM handler (`timeout`, a job scheduler, `docker stop`, torchrun stopping its workers):
    stop as a Ctrl-C does, held inside a write; killed at once, a run left its temporary file behind."""
    _held["terminated"] = True
    if _held["depth"]:
        _held["pending"] = True
    else:
        raise KeyboardInterrupt


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
        # a Ctrl-C ignored from the start (a script's background job) stays ignored: holding it would
        # turn a Ctrl-C meant for the foreground job into the loss of this write (a SIGTERM is held still)
        previous = signal.getsignal(signal.SIGINT)
        _held["previous"] = previous if previous == signal.SIG_IGN else signal.signal(signal.SIGINT, _hold)
        _held["pending"] = False
    _held["depth"] += 1
    try:
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


def is_special_file(path):
    """True for an existing path that is neither a regular file nor a folder: /dev/null, /dev/stdout, a
    FIFO. Atomic writes go straight to these: renaming a temporary file over one (as root, in Docker or
    Colab) replaced /dev/null with a regular file."""
    return os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path)


_DISK_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


def _names_a_folder(path):
    """True for a path spelled as a folder's (ending in a separator, `.` or `..`): realpath drops the
    trailing `/`, so without this check `out/` would be written as a file named `out`."""
    return path.endswith(tuple(os.sep + (os.altsep or ""))) or os.path.basename(path) in (".", "..")


def _reason(e):
    """The last non-empty line of an exception's message (its strerror for an OSError), or its type."""
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return lines[-1] if lines else type(e).__name__


def _atomic(path, write):
    if _names_a_folder(path):
        raise DataError(f"{path}: names a folder, not a file; give a file name")
    if is_special_file(path):
        try:
            with open(path, "wb") as f:
                write(f)
        except OSError as e:  # /dev/full, a FIFO whose reader went away
            raise DataError(f"{path}: could not write to it ({_reason(e)}); pick another path") from None
        return
    target = os.path.realpath(path)  # a symlink: its target is replaced, the link stays a link
    d = os.path.dirname(target)
    tmp = None
    with interrupts_held():  # a Ctrl-C inside the write is held, then discards it (below)
        try:
            # inside the try: a folder that os.access calls writable can still refuse a file (/sys, NFS
            # root-squash, a quota), and that is one line too
            os.makedirs(d, exist_ok=True)
            # the writer's host and pid in the name: a later write can tell a dead writer's leftover (SIGKILL,
            # the OOM killer) from a live one's file in progress
            fd, tmp = tempfile.mkstemp(prefix=f"{os.path.basename(target)}.atomic-{_HOST}-{os.getpid()}-",
                                       suffix=".tmp", dir=d)
            with os.fdopen(fd, "wb") as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            # mkstemp makes the file 0600; give it the mode an ordinary open() would (0666 less umask)
            os.chmod(tmp, 0o666 & ~_umask())
            raise_pending_interrupt()  # Ctrl-C during the write: the old file stays
            os.replace(tmp, target)
            _remove_leftovers(target)
        except BaseException as e:
            if tmp is not None and os.path.exists(tmp):
                os.unlink(tmp)
            # OSError from Python; RuntimeError from torch.save's zip writer, seen only on a full disk
            zip_writer = isinstance(e, RuntimeError) and ("inline_container" in str(e) or "writ" in str(e))
            if zip_writer or (isinstance(e, OSError) and e.errno in _DISK_FULL):
                raise DataError(f"{path}: could not write it ({_reason(e)}; {_free_space(d)}); the previous file, "
                                f"if any, is unchanged; free some disk space or pick another path") from None
            if isinstance(e, OSError):  # permission, a read-only or lost mount: more space would not help
                raise DataError(f"{path}: could not write it ({_reason(e)}); the previous file, if any, is "
                                f"unchanged; pick another path") from None
            raise


_HOST = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:64]  # as it stands in temporary file names
LEFTOVER_AGE = 60.0  # seconds unmodified before a dead writer's temporary file is removed


def _writer_alive(pid):
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


def _free_space(folder):
    try:
        return f"{shutil.disk_usage(folder).free / 2 ** 20:,.1f} MiB free there"
    except OSError:
        return "free space unknown"


def atomic_write_text(path, text):
    """Write `text` (UTF-8) to `path` so readers see the old file or the whole new one, never a part."""
    _atomic(path, lambda f: f.write(text.encode("utf-8")))


def cpu_state_dict(model):
    """model.state_dict() with every tensor on the CPU (its `_metadata` kept, as torch.save keeps it):
    params trained on a GPU then load with a plain torch.load on a machine without one. On the CPU
    the tensors are the model's own, not copies."""
    state = model.state_dict()
    out = type(state)((k, v.detach().cpu()) for k, v in state.items())
    if hasattr(state, "_metadata"):
        out._metadata = state._metadata
    return out


def atomic_torch_save(obj, path):
    """torch.save, atomically."""
    _atomic(path, lambda f: torch.save(obj, f))


def atomic_write(path, write):
    """write(f) into a binary file object that becomes `path` only once it has returned."""
    _atomic(path, write)


def check_output_path(path, what, inputs=()):
    """DataError unless `path` can take an output file: not a folder (nor spelled as one, `out/`), not
    one of the `inputs`, in a folder where a file can be made (tried: os.access says yes to /sys, NFS
    with root-squash, a full quota), or that can be made in the nearest folder there is (the writers
    make it: nothing is made here, so a run that stops at a bad input leaves no empty folder). Called
    before a run, so a long run is never lost at its final write."""
    full = os.path.realpath(path)
    if os.path.isdir(full):
        raise DataError(f"{path}: the {what} path is a folder; give a file path")
    if _names_a_folder(path):
        raise DataError(f"{path}: the {what} path names a folder (it ends in {os.path.basename(path) or path[-1]!r}); "
                        f"give a file name")
    if is_special_file(full):  # /dev/null, a FIFO: written straight (never replaced), its folder untouched
        if not os.access(full, os.W_OK):
            raise DataError(f"{path}: is not writable; pick another path for the {what}")
        return
    for other in inputs:
        if other and os.path.realpath(other) == full:
            raise DataError(f"{path}: the {what} would overwrite an input of this run; write it elsewhere")
    folder = os.path.dirname(full)
    existing = folder
    while not os.path.exists(existing):  # the nearest folder that is there: the rest are made in it
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise DataError(f"{path}: {existing} is a file, not a folder; pick another path for the {what}")
    if not os.access(existing, os.W_OK | os.X_OK):
        made = "is not writable" if existing == folder else f"cannot be made: {existing} is not writable"
        raise DataError(f"{path}: the folder {folder} {made}; pick another path for the {what}")
    try:
        with interrupts_held():  # a Ctrl-C here would leave the trial file behind
            fd, tmp = tempfile.mkstemp(prefix=os.path.basename(full) + ".", suffix=".tmp", dir=existing)
            os.close(fd)
            os.unlink(tmp)
    except OSError as e:
        raise DataError(f"{path}: no file can be made in the folder {existing} ({_reason(e)}); pick another path "
                        f"for the {what}") from None


class ParamsError(ValueError):
    """A params file that cannot be loaded into the model at hand; the message says why and what to do.
    `problem` is the why alone, and `looks_like` the size flags read off the file's shapes (or None),
    for a caller that words its own fix (deliverables.py)."""

    def __init__(self, message, problem=None, looks_like=None):
        super().__init__(message)
        self.problem, self.looks_like = problem, looks_like


class TrainingDiverged(FloatingPointError):
    """The training loss became NaN or infinite; raised before any params are written."""


def _ignore_interrupts(previous_term):
    """Ctrl-C ignored from here on; SIGTERM back to the handler it had (by default it ends the process)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)


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


def run_cli(main, keep_working=False):
    """Run a command-line `main()`: a bad input file (DataError, ParamsError) ends in its one-line message and
    exit status 2, a diverged training run (TrainingDiverged) in its message and status 1, Ctrl-C in exit status
    130 (output files are written atomically, so none is half-written, which the tools that write files say),
    SIGTERM likewise in status 143, and a closed stdout (`| head`) in status 141. With `keep_working` (the tools
    that write files: run.py, the demo, deliverables) a closed stdout or stderr does not stop the work: its
    files are written, then the status is 141; the others, whose only product is what they print, stop at once.
    Once main has returned or been interrupted, Ctrl-C is ignored: a second one would only interrupt the exit (a
    traceback from an exit handler, or death by signal instead of status 130)."""
    _held["terminated"] = False
    main_thread = threading.current_thread() is threading.main_thread()
    previous_term = None
    if main_thread:  # None back: a handler not set from Python; the default stands in for it
        previous_term = signal.signal(signal.SIGTERM, _terminate) or signal.SIG_DFL
    streams = (sys.stdout, sys.stderr)
    guards = [_ClosedPipeGuard(s) for s in streams] if keep_working else []
    if guards:
        sys.stdout, sys.stderr = guards
    try:
        result = main()
        sys.stdout.flush()  # a closed pipe shows here, not at exit's flush (stdout to a pipe is buffered)
        if any(g.closed_pipe for g in guards):
            closed_pipe_exit()
    except (DataError, ParamsError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except TrainingDiverged as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
    except BrokenPipeError:
        closed_pipe_exit()
    except KeyboardInterrupt:
        _ignore_interrupts(previous_term)
        what, status = ("terminated (SIGTERM)", 143) if _held["terminated"] else ("interrupted", 130)
        # only the tools that write files (keep_working) promise something of their files
        print(f"{what}: no output file was half-written" if keep_working else what,
              file=sys.stderr)
        sys.exit(status)
    finally:
        _ignore_interrupts(previous_term)
        if guards and sys.stdout is guards[0] and sys.stderr is guards[1]:
            sys.stdout, sys.stderr = streams
    return result


WRAPPER_PREFIXES = ("module.", "_orig_mod.")  # DataParallel / DDP and torch.compile name their weights so


def clean_state_dict(state_dict):
    """Drop the prefixes DataParallel/DDP (`module.`) and torch.compile (`_orig_mod.`) add to keys."""
    out = {}
    for k, v in state_dict.items():
        for prefix in WRAPPER_PREFIXES:
            while k.startswith(prefix):
                k = k[len(prefix):]
        out[k] = v
    return out


def _looks_like(state):
    """'--n_layer 2 --n_embd 128 --block_size 64' read off a state_dict's shapes, '--n_head 4' added for
    a synthesizer's, or None. n_head shows only in a synthesizer's w2, whose rows are one head's width;
    a vanilla file does not record it."""
    try:
        layers = len({k.split(".")[1] for k in state if k.startswith("blocks.")})
        n_embd = state["tok_emb.weight"].shape[1]
        flags = f"--n_layer {layers} --n_embd {n_embd} --block_size {state['pos_emb'].shape[1]}"
        w2 = [v for k, v in state.items() if k.endswith("attn.w2")]
        return f"{flags} --n_head {n_embd // w2[0].shape[0]}" if w2 else flags
    except (KeyError, IndexError, AttributeError, ZeroDivisionError):
        return None


def _size_error(path, problem, size_fix, state):
    """The ParamsError of params of another model size, with the size flags they look like."""
    looks = _looks_like(state)
    hint = "" if looks is None else f" (the file looks like {looks})" if "--n_head" in looks else \
        f" (the file looks like {looks}, with the --n_head it was trained with: a vanilla file does not record it)"
    return ParamsError(f"{path}: {problem}; {size_fix}{hint}", problem=problem, looks_like=looks)


PARAMS_FILES = {  # the course's params files: (variant, the run.sh mode that writes it, the modes before it)
    "vanilla.model.params": ("vanilla", "vanilla_finetune_without_pretrain", []),
    "vanilla.pretrain.params": ("vanilla", "vanilla_pretrain", []),
    "vanilla.finetune.params": ("vanilla", "vanilla_finetune_with_pretrain", ["vanilla_pretrain"]),
    "synthesizer.pretrain.params": ("synthesizer", "synthesizer_pretrain", []),
    "synthesizer.finetune.params": ("synthesizer", "synthesizer_finetune_with_pretrain", ["synthesizer_pretrain"]),
}


def _not_found(path):
    """The error of a params file that is not there, naming the run.sh mode that makes a course file:
    with OUT_DIR set to the file's folder when that is not src/submission/, where the modes write."""
    made = PARAMS_FILES.get(os.path.basename(path))
    if made is None:
        return f"{path}: params file not found"
    _, mode, before = made
    after = f" (after {', '.join(before)})" if before else ""
    folder = os.path.dirname(path) or "."
    here = os.path.dirname(os.path.abspath(__file__))  # src/submission/, run.sh's default OUT_DIR
    env = "" if os.path.realpath(folder) == os.path.realpath(here) else f"OUT_DIR={shlex.quote(folder)} "
    return f"{path}: params file not found; make it with {env}./run.sh {mode}{after}"


_LEGACY_MAGIC = b"\x80\x02\x8a\nl\xfc\x9cF\xf9 j\xa8P\x19."  # torch.save's pre-1.6 format opens with this


def _ends_inside_global(path, message):
    """Whether the global that torch refused ("Unsupported global: GLOBAL colle."; torch 2.2 and
    earlier: "Unsupported class colle.") is cut off by the file's end: a pre-1.6 file cut short inside
    the name of one it allows (collections.OrderedDict, torch._utils._rebuild_tensor_v2), not a file
    that names code."""
    named = re.search(r"(?:GLOBAL|Unsupported class) ([\w.]*)", message)
    if not named:
        return False
    module, _, name = named.group(1).rpartition(".")
    tail = (name or module).encode()  # as read up to the end, less its last byte (taken for a newline)
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - len(tail) - 2))
        end = f.read()
    return tail in end if tail else end.endswith(b"c")  # b"c": the GLOBAL opcode, nothing after it


def _unloadable(path, error):
    """Why torch.load failed on `path`, in words, from the file's first bytes and the error."""
    with open(path, "rb") as f:
        head = f.read(512)
    message = str(error)
    if not head:
        return "an empty file"
    if head.startswith(b"PK\x03\x04") or head.startswith(_LEGACY_MAGIC):
        # a zip cut short has no end record; torch's reader then fails in many ways (an EOFError, no
        # central directory, or OSError EINVAL from a seek past the end), so ask zipfile instead
        if head.startswith(b"PK\x03\x04") and not zipfile.is_zipfile(path):
            return "a PyTorch file cut short or damaged, as by an interrupted copy"
        # the pre-1.6 format cut short fails wherever the cut falls: EOFError, struct.error or IndexError
        # from the pickle, or torch's "unexpected EOF" while reading the storages after it (torch 2.0-2.2
        # raise that one as an UnpicklingError)
        if isinstance(error, (EOFError, struct.error, IndexError)) or "unexpected EOF" in message \
                or "central directory" in message or "zip archive" in message:
            return "a PyTorch file cut short or damaged, as by an interrupted copy"
        if type(error).__name__ == "UnpicklingError":
            if _ends_inside_global(path, message):
                return "a PyTorch file cut short or damaged, as by an interrupted copy"
            return ("a PyTorch file holding Python objects beyond tensors (classes or code), which are not "
                    "loaded, for safety")
        if head.startswith(b"PK\x03\x04") and "archive" in message:
            return "a zip archive, but not one torch.save wrote"
    elif head.startswith(b"\x93NUMPY"):
        return "a NumPy array file, not a PyTorch one"
    elif head[:1] == b"\x80":
        return "a Python pickle, not a PyTorch file"
    else:
        try:
            head.decode("utf-8")
            return "a text file, not a PyTorch one"
        except UnicodeDecodeError as bad:
            if bad.start < len(head) - 3:  # not merely a character cut at byte 512
                return "neither a PyTorch file nor text: it starts with neither a zip nor a pickle header"
            return "a text file, not a PyTorch one"
    detail = (message.splitlines() or [""])[0][:120]
    return f"{type(error).__name__}: {detail}" if detail else type(error).__name__


def load_params(model, path, variant_flag="--variant=", corpus_flag="--pretrain_corpus_path",
                size_fix="use the model size they were trained with", variant_fix=None):
    """Load a params file into `model` on any device, refusing code and explaining mismatches.
    `variant_flag` and `corpus_flag` are how the caller's command line chooses the variant and the
    corpus (run.py's by default), named in the errors that send the user to them; `size_fix` is the
    fix of params of another model size (the size flags by default), and `variant_fix` that of the
    other variant's params, with {have} and {want} for the variants (default: pass `variant_flag`)."""
    if not os.path.exists(path):
        raise ParamsError(_not_found(path), problem="params file not found")
    if not os.path.isfile(path):  # a folder, /dev/null, a FIFO
        raise ParamsError(f"{path}: is not a regular file; give the params file run.py wrote",
                          problem="is not a regular file")
    try:
        with warnings.catch_warnings():  # torch warns of pickle protocols before failing on a plain pickle
            warnings.simplefilter("ignore")
            state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # pickle with code, truncated file, not a torch file
        problem = f"not a loadable params file ({_unloadable(path, e)})"
        raise ParamsError(f"{path}: {problem}; re-create it with the run.sh mode that writes it",
                          problem=problem) from None
    if not isinstance(state, dict):
        problem = f"holds a {type(state).__name__}, not a state_dict (a dict of tensors)"
        raise ParamsError(f"{path}: {problem}; pass a params file that run.py wrote", problem=problem)
    for key in ("model", "state_dict", "model_state_dict"):  # a training checkpoint of another loop
        # a state_dict's values are tensors, never dicts: weights under one of these keys, beside the
        # step or an optimizer's state (tensors too, such as a learning rate), make a checkpoint
        inner = state.get(key)
        if isinstance(inner, dict) and any(torch.is_tensor(v) for v in inner.values()):
            problem = f"a checkpoint with the weights under the key {key!r}, not a params file"
            raise ParamsError(f"{path}: {problem}; save torch.load({path!r})[{key!r}] to a file of its own and "
                              f"pass that", problem=problem)
    if not state:
        raise ParamsError(f"{path}: an empty state_dict, no weights; re-create it with the run.sh mode that writes it",
                          problem="an empty state_dict, no weights")
    for k, v in state.items():  # before clean_state_dict and the shape checks, which take these for granted
        if not isinstance(k, str) or not torch.is_tensor(v):
            what = (f"the key {k!r} is not a name" if not isinstance(k, str) else
                    f"the value of {k!r} is {type(v).__name__}, not a tensor")
            raise ParamsError(f"{path}: not a state_dict of tensors ({what}); pass a params file that run.py wrote",
                              problem=f"not a state_dict of tensors ({what})")
    state = clean_state_dict(state)
    # a model wrapped by DataParallel/DDP (`.module`) or torch.compile (`._orig_mod`) names its weights with
    # those prefixes; the file has none (clean_state_dict), so load into the model inside
    target = model
    while True:
        inner = getattr(target, "module", None)
        inner = inner if isinstance(inner, torch.nn.Module) else getattr(target, "_orig_mod", None)
        if not isinstance(inner, torch.nn.Module):
            break
        target = inner
    own = target.state_dict()
    synth_file = any(k.endswith("attn.w2") for k in state)
    synth_model = any(k.endswith("attn.w2") for k in own)
    if synth_file != synth_model:
        have, want = ("synthesizer", "vanilla") if synth_file else ("vanilla", "synthesizer")
        fix = (variant_fix or "pass {flag}{have} or use the {want} params file").format(
            flag=variant_flag, have=have, want=want)
        raise ParamsError(f"{path}: these are {have} params, but the model is {want}; {fix}",
                          problem=f"these are {have} params, but the model is {want}")
    if "tok_emb.weight" in state and state["tok_emb.weight"].shape[0] != own["tok_emb.weight"].shape[0]:
        problem = (f"params have a vocabulary of {state['tok_emb.weight'].shape[0]} characters, the pretraining "
                   f"corpus gives {own['tok_emb.weight'].shape[0]}")
        raise ParamsError(f"{path}: {problem}; use the same {corpus_flag} the params were trained with",
                          problem=problem)
    if not set(state) & set(own):
        problem = f"none of its {len(state)} keys (such as {sorted(state)[:2]}) names a weight of the assignment's GPT"
        raise ParamsError(f"{path}: {problem}; it holds another model's params", problem=problem)
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    if missing or unexpected:
        def some(what, keys):  # the first three (repr: a key is the file's text), and how many there are
            return f"{what} " + ", ".join(map(repr, keys[:3])) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
        found = "; ".join(some(what, keys) for what, keys in (("missing", missing), ("unexpected", unexpected)) if keys)
        raise _size_error(path, f"params do not fit this model ({found})", size_fix, state)
    for k, v in state.items():
        if v.shape != own[k].shape:
            raise _size_error(path, f"{k} has shape {tuple(v.shape)}, the model wants {tuple(own[k].shape)}",
                              size_fix, state)
    target.load_state_dict(state)
    return model

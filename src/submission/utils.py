"""Helpers shared by the assignment's scripts: seeding, the device, CPU threads and scoring.

As in the course's utils.py, `set_seed`, `sample`, `top_k_logits` and `evaluate_places` are here
(sampling and the batched evaluation live in decoding.py, file writing in files.py, params loading
in params.py, the command-line runner in cli.py; all are re-exported, so `from submission.utils
import ...` works for all of them). `get_device` is the one device choice ($GPT_DEVICE, else cuda,
then mps, then cpu); `CpuThreads` picks CPU threads; `is_main_process` tells torchrun's rank 0.
"""
import contextlib
import os
import random
import time

import numpy as np
import torch

from .dataset import MASK_CHAR, DataError
from .decoding import predict_places, predict_places_recompute, sample, sample_cached, top_k_logits
from .cli import run_cli
from .files import atomic_torch_save, atomic_write, atomic_write_text, check_output_path, cpu_state_dict
from .params import ParamsError, clean_state_dict, load_params

__all__ = [  # this module's own, then the re-exported names of dataset, decoding, cli, files and params
    "set_seed", "get_device", "usable_cores", "CpuThreads", "denormals_flushed", "is_main_process",
    "evaluate_places", "CountMismatch", "same_place", "MASK_CHAR", "DataError", "predict_places",
    "predict_places_recompute", "sample", "sample_cached", "top_k_logits", "ParamsError", "atomic_torch_save",
    "atomic_write", "atomic_write_text", "check_output_path", "clean_state_dict", "cpu_state_dict", "load_params",
    "run_cli"]


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def _available(device):
    if device == "cuda":
        return torch.cuda.is_available()
    if device == "mps":
        mps = getattr(torch.backends, "mps", None)
        return mps is not None and mps.is_available()
    return device == "cpu"


def get_device():
    """The one device rule of the project: $GPT_DEVICE (cpu, cuda or mps) when it is set, else cuda,
    then mps, then cpu. GPT_DEVICE=cpu keeps a run off a GPU that is busy, or off an MPS build that
    misbehaves; a device that is not there is a DataError, not a silent fallback."""
    value = os.environ.get("GPT_DEVICE", "").strip()
    if value:
        if value.lower() not in ("cpu", "cuda", "mps"):
            raise DataError(f"GPT_DEVICE={value!r} is not a device; set it to cpu, cuda or mps, or unset it "
                            f"(a GPU's number: CUDA_VISIBLE_DEVICES)")
        if not _available(value.lower()):
            raise DataError(f"GPT_DEVICE={value}: torch {torch.__version__} sees no {value.lower()} device on this "
                            f"machine; set GPT_DEVICE=cpu or unset it")
        return value.lower()
    return next(d for d in ("cuda", "mps", "cpu") if _available(d))


def synchronize(device):
    """Wait until `device` (get_device's name) has run the work queued on it, so that a clock read next
    counts it; the CPU runs its work as it is called."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    elif device == "mps":
        torch.mps.synchronize()


def _cpu_ticks(cpus=None, stat="/proc/stat", own_stat="/proc/self/stat"):
    """(busy ticks, all ticks, this process's ticks, how many CPUs those ticks cover) from /proc, over
    the CPUs numbered in `cpus` (None: all of the machine's); None off Linux. Load on CPUs this process
    may not use is not its concern (a container pinned to 2 of 16 busy CPUs has its 2 free). Where
    /proc/stat does not list every CPU of `cpus` (a container's virtualised /proc/stat, as lxcfs
    writes it, numbers the container's own CPUs from 0), its machine-wide first line serves instead."""
    try:
        with open(stat) as f:
            rows = [line.split() for line in f if line.startswith("cpu")]
        listed = {int(r[0][3:]): [int(v) for v in r[1:9]] for r in rows[1:]}
        if cpus is not None and set(cpus) <= set(listed):
            vals, n = [sum(column) for column in zip(*(listed[c] for c in cpus))], len(cpus)
        else:
            vals, n = [int(v) for v in rows[0][1:9]], len(listed) or (os.cpu_count() or 1)  # the sum of all
        with open(own_stat) as f:
            own = f.read().rsplit(")", 1)[1].split()
        total = sum(vals)
        return total - vals[3] - vals[4], total, int(own[11]) + int(own[12]), n  # idle, iowait; utime, stime
    except (OSError, ValueError, IndexError):
        return None


def _affinity():
    """The CPU numbers this process may run on, or None where the platform does not say."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def usable_cores():
    """CPUs this process may run on (its affinity), else the machine's count."""
    cpus = _affinity()
    return len(cpus) if cpus else (os.cpu_count() or 1)


def _threads_from_environment():
    """The thread count $GPT_NUM_THREADS fixes (a DataError if it is not a whole number >= 1), else
    $OMP_NUM_THREADS's first level ("4,2" is OpenMP's nested form; a value torch would not take is
    left to torch), else None. Capped at the CPUs this process may run on (its affinity: a container or
    `taskset` pinned to 2 of 16 CPUs has 2): beyond them threads only wait for each other."""
    cap = usable_cores()
    value = os.environ.get("GPT_NUM_THREADS", "").strip()
    if value:
        if not (value.isascii() and value.isdigit()) or int(value) < 1:  # "²" is a digit int() refuses
            raise DataError(f"GPT_NUM_THREADS={value!r} is not a thread count; set it to a whole number such as "
                            f"1 or {cap}, or unset it")
        return min(int(value), cap)
    first = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    return min(int(first), cap) if first.isascii() and first.isdigit() and int(first) >= 1 else None


def fix_threads_from_environment():
    """torch's thread count as $GPT_NUM_THREADS fixes it, for every tool run_cli starts (ask, memorised,
    evaluation; the trainer's CpuThreads keeps it too); a DataError when it is no count. Unset: torch's
    own choice stands."""
    if os.environ.get("GPT_NUM_THREADS", "").strip():
        n = _threads_from_environment()
        if torch.get_num_threads() != n:
            torch.set_num_threads(n)


_flush_decided = []  # the decision of the denormals_flushed block that is open, if one is


def _numpy_limits_known():
    """Has numpy work out float32's and float64's limits now, before denormals are flushed. NumPy before 2.0
    (the numpy<2 that torch before 2.3 needs, docs/course.md) computes them the first time numpy.finfo asks, by
    arithmetic, and keeps them: asked first inside a flushed block (the demo's plots, where matplotlib asks), it
    found the smallest subnormal to be zero and printed two UserWarnings a type. NumPy 2 has them written in."""
    for dtype in (np.float32, np.float64):
        np.finfo(dtype)


@contextlib.contextmanager
def denormals_flushed(flush=True):
    """Within the block the CPU computes floats below float32's smallest normal, 1.2e-38, as zero (x86's
    flush-to-zero and denormals-are-zero; torch.set_flush_denormal), then turns that off again.

    Training makes them: as a model learns, some attention and output probabilities fall that low, and a
    matrix product given such numbers runs up to 200x slower on x86 (the 2-core Xeon: 1.43 s against
    6.4 ms for ten 512x512 products). The course's vanilla pretraining there slowed from 22 s an epoch
    to 39 s by its third; flushed, its first nine epochs took 20-21 s each. Only denormal numbers change:
    they count as zero. The mode belongs to each thread and a thread starts with its creator's:
    set before torch's first parallel operation starts its CPU threads (run.py sets it right after
    reading its flags), it holds in every one of them; set later, only in the calling thread. So blocks
    nest without effect: inside one, another keeps the outer decision (demo.py decides once for the
    steps it runs in one process, as their threads start once)."""
    if _flush_decided:
        yield
        return
    _flush_decided.append(flush)
    if flush:
        _numpy_limits_known()
        torch.set_flush_denormal(True)
    try:
        yield
    finally:
        _flush_decided.pop()
        if flush:
            torch.set_flush_denormal(False)


class CpuThreads:
    """Keeps torch's CPU thread count at the cores that other processes leave free.

    On a shared machine this matters more than anything else on CPU: on this project's 2-core
    workers a course-size training step (batch 16) took 0.4 s with 2 threads on an idle machine,
    but 4.5 s with 2 threads while another job used about one core (every op waits for a
    descheduled thread), against 0.6 s with 1 thread (src/bench.py measures 1 against all).
    So: `fixed`, $GPT_NUM_THREADS or $OMP_NUM_THREADS (torchrun sets it to 1 a process) when
    given; otherwise the usable cores minus the other processes' load, measured from /proc/stat at
    the start (a 0.1 s window) and again every `every` seconds from the ticks between calls to
    `update()`, our own ticks left out.
    """

    def __init__(self, fixed=None, every=10.0):
        self.fixed = fixed if fixed is not None else _threads_from_environment()
        self.every = every
        self.cores = usable_cores()
        self.cpus = _affinity()  # the CPUs whose load counts
        self.used = set()  # every count set so far (results differ in the last bits between counts)
        self._last = None
        self._when = 0.0

    def _set(self, n):
        n = max(1, int(n) if self.fixed is not None else min(int(n), self.cores))  # a fixed count is kept
        self.used.add(n)
        if torch.get_num_threads() != n:
            torch.set_num_threads(n)
        return n

    def _free(self, before, after):
        if before is None or after is None or before[3] != after[3]:  # not comparable readings
            return None
        d_busy, d_total, d_own = (a - b for a, b in zip(after[:3], before[:3]))
        if d_total <= 0:
            return None
        others = max(0, d_busy - d_own) * after[3] / d_total  # after[3]: the CPUs the ticks are over
        return int(self.cores - others + 0.1)  # a core shared with another job is not free

    def start(self):
        """Pick the thread count now; returns it."""
        if self.fixed is not None:
            return self._set(self.fixed)
        before = _cpu_ticks(self.cpus)
        if before is None:
            return torch.get_num_threads()
        time.sleep(0.1)
        self._last, self._when = _cpu_ticks(self.cpus), time.time()
        free = self._free(before, self._last)
        return self._set(free) if free is not None else torch.get_num_threads()

    def describe(self):
        """The counts used, for a run's log: which count to fix (GPT_NUM_THREADS) to repeat it exactly.
        None were set when /proc cannot be read: then torch's own count."""
        used = sorted(self.used) or [torch.get_num_threads()]
        if len(used) == 1:
            return f"{used[0]} CPU thread(s)"
        return (f"{used[0]} to {used[-1]} CPU threads (the count followed other processes' load; "
                f"GPT_NUM_THREADS=N fixes it)")

    def update(self):
        """Re-check (at most every `every` seconds); returns the thread count."""
        if self.fixed is not None or self._last is None or time.time() - self._when < self.every:
            return torch.get_num_threads()
        now = _cpu_ticks(self.cpus)
        if now is None:  # /proc/stat unreadable this time: the count stays, and a call `every` s on tries again
            self._when = time.time()
            return torch.get_num_threads()
        free = self._free(self._last, now)
        self._last, self._when = now, time.time()
        return self._set(free) if free is not None else torch.get_num_threads()


def distributed_env():
    """(rank, world_size, local_rank) from torchrun's environment; (0, 1, 0) without it."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return 0, 1, 0
    return int(os.environ.get("RANK", "0")), world, int(os.environ.get("LOCAL_RANK", "0"))


def is_main_process():
    """False on every torchrun process but rank 0: only the main process writes files (the Trainer's
    rank, from the same environment)."""
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank() == 0
    return distributed_env()[0] == 0


def same_place(predicted, place):
    """Whether `predicted` answers a question labelled `place` (a TSV line's second field), by the
    course's rule in evaluate_places: the prediction exactly as written, the place without the spaces
    that end its line. Every tool that scores predictions in memory uses it, so their counts agree."""
    return predicted == place.rstrip()


class CountMismatch(ValueError, AssertionError):
    """evaluate_places was given more or fewer predictions than the file has questions. An
    AssertionError too, which is what the course's `assert` raises, so a program catching that still
    catches it."""


def evaluate_places(filepath, predicted_places):
    """ Computes percent of correctly predicted birth places.

    Arguments:
      filepath: path to a file with our name, birth place data.
      predicted_places: a list of strings representing the
          predicted birth place of each person.

    Returns: (total, correct), floats
    """
    with open(filepath, encoding="utf-8-sig") as fin:  # -sig: a byte-order mark is not a line's text
        numbered = [(n, x.strip().split("\t")) for n, x in enumerate(fin, start=1) if x.strip()]
    lines = [x for _, x in numbered]
    if not lines or len(lines[0]) == 1:
        print("No gold birth places provided; returning (0,0)")
        return (0, 0)
    unlabelled = next((n for n, x in numbered if len(x) == 1), None)
    if unlabelled is not None:  # the course's x[1] raised IndexError, naming neither file nor line
        raise DataError(f"{filepath}:{unlabelled}: a question without its place, where the first line has one; "
                        f"give every line `question<TAB>place`, or none a place")
    true_places = [x[1] for x in lines]
    total = len(true_places)
    if total != len(predicted_places):
        raise CountMismatch(f"{filepath}: {total} labelled questions but {len(predicted_places)} predictions")
    correct = sum(1 for t, p in zip(true_places, predicted_places) if same_place(p, t))
    return (float(total), float(correct))

"""CPU threads and denormal floats: how many threads torch computes with, and flushing denormals.

`CpuThreads` keeps torch's thread count at the cores that other processes leave free (measured from
/proc/stat, Linux's per-CPU tick counters), unless $GPT_NUM_THREADS or $OMP_NUM_THREADS fixes it;
`denormals_flushed` computes floats below float32's smallest normal as zero (x86's flush-to-zero,
torch.set_flush_denormal), which the course's runs on a CPU need to stay fast. The measurements
behind both: docs/speed.md.
"""
import contextlib
import os
import time

import numpy as np
import torch

from .dataset import DataError


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

    def counts(self):
        """The counts used so far, in order (none were set when /proc cannot be read: then torch's own count)."""
        return sorted(self.used) or [torch.get_num_threads()]

    def describe(self):
        """The counts used, for a run's log: which count to fix (GPT_NUM_THREADS) to repeat it exactly."""
        used = self.counts()
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

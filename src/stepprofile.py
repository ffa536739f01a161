"""Where a training step's time goes: torch.profiler over a few steps of one of the bench's training runs,
the GPU's kernels (CUDA) or the CPU's operators ranked by their own time a step, for `./run.sh bench
--profile`. It follows PyTorch's profiler recipe
(https://pytorch.org/tutorials/recipes/recipes/profiler_recipe.html): `key_averages()` of the steps, each
row's self time, so that nested operators are not counted twice.

On CUDA a step replayed as CUDA graphs still shows its kernels one by one (CUPTI traces kernels inside
graph launches), so the table says how many kernels a step runs and how long the GPU is busy with them
against the step's wall time: a GPU busy most of the step is bound by its kernels, one idle much of it by
the host.
"""
import contextlib
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field

from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

from submission.utils import synchronize


@dataclass
class StepProfile:
    steps: int          # steps profiled
    wall_ms: float      # a step's wall time, the device synchronised before and after the steps
    busy_ms: float      # a step's self time of all rows: the GPU's kernels and copies, or the CPU's operators
    calls: float        # kernels (or operators) a step
    unit: str           # "kernel" on CUDA, "operator" on the CPU
    rows: list = field(default_factory=list)  # [(name, calls a step, ms a step)], most time first


@contextlib.contextmanager
def _without_start_and_stop_lines():
    """Drop the lines the profiler's library (kineto) writes to the process's stderr as it starts and stops
    ("USDT: ... profiler_start" under torch 2.13's CPU build, where no environment variable silences them;
    "STAGE: ... Completed Stage" under earlier ones),
    passing on anything else written to stderr meanwhile. Where descriptor 2 cannot be caught (closed, no
    temporary file), the lines go through."""
    caught = saved = None
    try:
        caught = tempfile.TemporaryFile()
        if sys.stderr is not None:
            sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no temporary file, or no descriptor 2 to catch
        if caught is not None:
            caught.close()
    if saved is None:
        yield
        return
    os.dup2(caught.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        with caught:
            caught.seek(0)
            lines = caught.read().splitlines(keepends=True)
        kept = b"".join(line for line in lines if not line.startswith((b"USDT:", b"STAGE:")))
        try:  # back where it was written: descriptor 2
            while kept:
                kept = kept[os.write(2, kept):]
        except OSError:  # a stderr gone meanwhile: the caller's own error, if any, goes on
            pass


class ProfilerFailed(RuntimeError):
    """torch.profiler could not start or stop (its tracing library missing or refusing, CUPTI on a GPU)."""


def _switch(start_or_stop, word):
    """Start or stop the profiler without its library's lines; its failure a ProfilerFailed, apart from a
    failure of the steps profiled."""
    with _without_start_and_stop_lines():
        try:
            start_or_stop()
        except RuntimeError as e:
            why = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise ProfilerFailed(f"torch.profiler did not {word}: {why}") from e


def _stop_quietly(prof):
    """Stop `prof` after a failure of its own start or of a step, whose error is the one to raise: the
    stop's own failure (a profiler that never started asserts it was) is dropped."""
    with _without_start_and_stop_lines():
        try:
            prof.stop()
        except Exception:
            pass


def _self_ms(event, cuda):
    """An averaged event's self time in ms: on the device (torch 2.4 names it device time; older, cuda time)
    or on the CPU."""
    if not cuda:
        return event.self_cpu_time_total / 1e3
    us = getattr(event, "self_device_time_total", None)
    return (us if us is not None else event.self_cuda_time_total) / 1e3


def profile_steps(run, batches, device, steps=10):
    """A StepProfile of `steps` steps of `run` (an object with step(x, y), warmed up: a compiled run has
    compiled and recorded its graphs) on `batches` in turn. On CUDA the rows are the kernels and copies the
    GPU ran; on the CPU the operators, by their self time."""
    if steps < 1 or not batches:
        raise ValueError(f"profile_steps needs at least one step and one batch, got {steps} and {len(batches)}")
    cuda = device.startswith("cuda")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    prof = profile(activities=activities)
    synchronize(device)
    try:
        _switch(prof.start, "start")
    except ProfilerFailed:
        _stop_quietly(prof)  # a start that failed half way may have left it tracing
        raise
    try:
        begin = time.perf_counter()
        for i in range(steps):
            x, y = batches[i % len(batches)]
            run.step(x, y)
        synchronize(device)
        wall = time.perf_counter() - begin
    except BaseException:
        _stop_quietly(prof)
        raise
    _switch(prof.stop, "stop")
    kind = DeviceType.CUDA if cuda else DeviceType.CPU
    # the rows of that kind, less the regions the code marks for the profiler (since torch 2.5 those show as
    # device events too, spanning their kernels: counting them would count those kernels twice)
    rows = [(e.key, e.count / steps, _self_ms(e, cuda) / steps) for e in prof.key_averages()
            if e.device_type == kind and e.count > 0 and not getattr(e, "is_user_annotation", False)]
    if cuda and not rows:  # CUPTI refused without an error (no permission to trace, as in some containers)
        raise ProfilerFailed("torch.profiler recorded no kernels (CUPTI may lack the permission to trace)")
    rows.sort(key=lambda r: -r[2])
    return StepProfile(steps=steps, wall_ms=wall / steps * 1e3, busy_ms=sum(r[2] for r in rows),
                       calls=sum(r[1] for r in rows), unit="kernel" if cuda else "operator", rows=rows)


def profile_lines(prof, label, top=12, width=72):
    """The table `./run.sh bench --profile` prints for `prof` (a StepProfile) of `label` (what was stepped):
    a head line of wall time, busy time and calls a step, then the `top` rows, names cut to `width`."""
    where = "the GPU's kernels" if prof.unit == "kernel" else "the CPU's operators (self time)"
    share = prof.busy_ms / prof.wall_ms if prof.wall_ms > 0 else 0.0
    lines = [f"  {label}, {prof.steps} steps: {prof.wall_ms:.2f} ms a step profiled; {where} {prof.busy_ms:.2f} ms "
             f"({share:.0%} of it), {prof.calls:,.0f} {prof.unit}s a step",
             f"  {'ms/step':>9s} {'share':>6s} {'calls/step':>10s}  {prof.unit}"]
    for name, calls, ms in prof.rows[:top]:
        name = name if len(name) <= width else name[:width - 3] + "..."
        part = ms / prof.busy_ms if prof.busy_ms > 0 else 0.0
        lines.append(f"  {ms:9.3f} {part:6.1%} {calls:10.1f}  {name}")
    rest = prof.rows[top:]
    if rest:
        lines.append(f"  {sum(r[2] for r in rest):9.3f} {'':6s} {sum(r[1] for r in rest):10.1f}  "
                     f"({len(rest)} more {prof.unit}s)")
    return lines

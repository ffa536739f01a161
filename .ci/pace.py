"""The pretraining's pace from its loss log, for .ci/gpu-check: the first epoch (compiling), then per epoch
against per step (on CUDA the logged times are when the host queued each step, so it reads epochs and
medians, not single gaps).

    python3 .ci/pace.py LOG

LOG may be the `.partial` log of a pretraining cut short (gpu-check's time limit, a crash): the pace of
the epochs it finished is the figure such a run still gives. A line torn by the kill is skipped, and so is the
epoch it cut (fewer steps than an earlier epoch): its last step is no epoch's end.
"""
import json
import statistics
import sys


def pace(path):
    """The pace line(s) for the log at `path`, as a list of strings."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return ["pace: no pretraining log"]
    rows = []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:  # a last line cut off mid-write
            continue
        if isinstance(row, dict) and "epoch" in row and "time" in row:
            rows.append(row)
    said = ["pace: the pretraining did not finish; from its log so far:"] if path.endswith(".partial") else []
    if not rows:
        return said + ["pace: no steps in the pretraining log"]
    times = {}
    for row in rows:
        times.setdefault(row["epoch"], []).append(row["time"])
    epochs = sorted(times)
    cut = ""
    if said and len(epochs) > 1 and len(times[epochs[-1]]) < max(len(times[e]) for e in epochs[:-1]):
        # the epoch the kill interrupted: its last step is no epoch's end, and its few steps no epoch's count
        cut = f" (and {len(times[epochs[-1]])} step(s) of epoch {epochs[-1]}, cut short: left out)"
        rows = [row for row in rows if row["epoch"] != epochs[-1]]
        epochs = epochs[:-1]
    ends = [max(times[e]) for e in epochs]
    walls = [b - a for a, b in zip(ends, ends[1:])]  # epochs 2 on
    gaps = [b - a for e in epochs[1:] for a, b in zip(times[e], times[e][1:])]
    if not (walls and gaps):
        return said + [f"pace: {len(rows)} steps in {ends[-1]:.0f} s{cut}, {len(epochs)} epoch(s) begun: too few to "
                       f"time an epoch after the first"]
    steps = statistics.median(len(times[e]) for e in epochs[1:])
    wall, gap = statistics.median(walls), statistics.median(gaps)
    return said + [f"pace: {len(rows)} steps in {ends[-1]:.0f} s{cut}; first epoch {ends[0]:.1f} s; later epochs "
                   f"{wall * 1e3:.0f} ms (median) for {steps:.0f} steps at {gap * 1e3:.2f} ms (median gap inside "
                   f"epochs): {(wall - steps * gap) * 1e3:.0f} ms an epoch beyond its steps"]


if __name__ == "__main__":
    print("\n".join(pace(sys.argv[1])))

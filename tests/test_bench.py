"""The bench's arithmetic: what it divides by what (src/bench.py). Timings are stubbed, so every figure is known.

Run:  python -m pytest -q tests/test_bench.py
"""
import statistics
import types

import pytest
import torch

import bench


class FakeRun:
    """A TrainingRun stand-in for time_steps: records each step's batch, steps nothing."""

    def __init__(self, compiled=False):
        self.fast, self.compiled, self.graphs, self.stepped = True, compiled, None, []

    def step(self, x, y):
        self.stepped.append(int(x[0, 0]))


def numbered_batches(n):
    return [(torch.full((2, 3), k), torch.full((2, 3), k)) for k in range(n)]


def test_time_steps_keeps_each_rounds_batches_and_seconds(monkeypatch):
    """Beside the medians, time_steps keeps each timed round's batches and seconds a step, so that a figure
    computed from the batches (FLOPs) is divided by the time of those same batches."""
    seconds = {1: 1.0, 2: 1.0, 3: 4.0}  # a step's time, by batch number
    monkeypatch.setattr(bench, "clock", lambda fn, device: (lambda out: (
        sum(seconds.get(k, 0.0) for k in run.stepped[-len(out):]), out))(fn()))
    run = FakeRun()
    med = bench.time_steps({"fast": run}, numbered_batches(4), 3, "cpu")
    assert med == {"fast": 1.0}
    assert [([int(x[0, 0]) for x, _ in chunk], s) for chunk, s in med.rounds["fast"]] == [
        ([1], 1.0), ([2], 1.0), ([3], 4.0)]


def test_the_flops_rate_divides_each_rounds_flops_by_that_rounds_time():
    """Rounds of F, F and 4F FLOPs in 1, 1 and 4 s ran at F FLOP/s each. The mean FLOPs over the median time
    (2F / 1 s) said twice that: more than any step reached."""
    cfg = types.SimpleNamespace(n_embd=8, n_layer=1, vocab_size=10, synthesizer=False)
    F = bench.train_flops(cfg, 1, 4)
    run = types.SimpleNamespace(shapes=lambda x, y: [(int(x[0, 0]), 4)])  # batch k: k rows of width 4
    batches = [(torch.full((1, 1), k), None) for k in (1, 1, 4)]
    rounds = [([b], s) for b, s in zip(batches, (1.0, 1.0, 4.0))]
    assert bench.flops_rate(cfg, run, rounds) == pytest.approx(F)
    # rounds at F, 2F and 4F FLOP/s: the median round's rate, not the mean (7F/3) nor the first round's
    rounds = [([b], s) for b, s in zip(batches, (1.0, 0.5, 1.0))]
    assert bench.flops_rate(cfg, run, rounds) == pytest.approx(2 * F)


def test_the_summarys_mfu_is_each_rounds_flops_over_its_own_time(tmp_path, capsys, monkeypatch):
    """Each timed round of the fast vanilla step but the first (0.5) is made to run at exactly 1 GFLOP/s of what its
    batch computes, the peak 10 GFLOP/s: the summary must say the median round's 0.001 TFLOP/s and MFU 0.1 however
    the batches' FLOPs differ."""
    import make_world
    make_world.write_world(make_world.build_world(people=60, train=40, dev=12, seed=3), str(tmp_path))
    widths = []

    def time_steps(runs, batches, rounds, device, block=1):
        timed = batches[1:rounds + 1]
        med = bench.StepTimes({n: 0.5 for n in runs}, {n: [(timed[:1], 0.5)] for n in runs})
        if "fast" in runs and len(runs) > 1:  # the training rows, not the threads' rows
            cfg = runs["fast"].model.config
            flops = [sum(bench.train_flops(cfg, r, w) for r, w in runs["fast"].shapes(x, y)) for x, y in timed]
            widths.append([runs["fast"].shapes(x, y) for x, y in timed])
            med.rounds = {"fast": [([b], f / 1e9) for b, f in zip(timed, flops)]}
            med.rounds["fast"][0] = (timed[:1], 2 * flops[0] / 1e9)  # the first round at half the rate: not the median
            med["fast"] = statistics.median(f / 1e9 for f in flops)
        return med

    monkeypatch.setattr(bench, "time_steps", time_steps)
    monkeypatch.setattr(bench, "peak_flops", lambda *a, **k: 1e10)
    monkeypatch.setattr(bench, "cpu_has_bf16", lambda: False)
    before = torch.get_num_threads()
    try:
        bench.main(["--quick", "--data-dir", str(tmp_path), "--batch", "8", "--rounds", "4", "--ref-questions", "2",
                    "--threads", "1"])
    finally:
        torch.set_num_threads(before)
    out = capsys.readouterr().out
    summary = dict(line.split(": ", 1) for line in out.split("== summary ==")[1].strip().splitlines())
    assert len({str(s) for s in widths[0]}) > 1, widths  # the batches' FLOPs differ
    assert (summary["model_tflops_per_s"], summary["mfu"]) == ("0.001", "0.1")
    assert "MFU (fast vanilla step): 1.0 GFLOP/s of 10 = 10.0%" in out


def test_a_compiled_run_steps_twice_on_every_batch_before_timing(monkeypatch):
    """torch.compile's reduce-overhead mode runs a new shape eagerly the first time (its CUDA-graph warm-up)
    and records its graph the second (torch/_inductor/cudagraph_trees.py, warmed_up_functions): one warm-up
    step a batch left each width's recording inside the timed rounds. An eager run warms up on one batch."""
    monkeypatch.setattr(bench, "clock", lambda fn, device: (0.0, fn()))
    compiled, eager, graphed = FakeRun(compiled=True), FakeRun(), FakeRun()
    graphed.graphs = object()  # a run replaying step graphs (CUDA graphs recorded per width) warms up as compiled
    bench.time_steps({"reference": eager, "fast": compiled, "graphs": graphed}, numbered_batches(4), 3, "cpu")
    assert compiled.stepped == graphed.stepped == [0, 1, 2, 3, 0, 1, 2, 3, 1, 2, 3]
    assert eager.stepped == [0, 1, 2, 3]

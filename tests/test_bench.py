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


def quick_bench(tmp_path, *flags):
    """bench.main's --quick run on a generated world of 12 dev questions, 1 thread, training batch 8, 4 rounds.
    The caller stubs what it does not time (time_steps, peak_flops) and reads the output (capsys)."""
    import make_world
    make_world.write_world(make_world.build_world(people=60, train=40, dev=12, seed=3), str(tmp_path))
    before = torch.get_num_threads()
    try:
        bench.main(["--quick", "--data-dir", str(tmp_path), "--batch", "8", "--rounds", "4", "--threads", "1", *flags])
    finally:
        torch.set_num_threads(before)


def untimed_training(monkeypatch):
    """Stubs for bench.main's training rows and peak: every step 0.5 s, the peak 10 GFLOP/s, no bf16 row."""
    monkeypatch.setattr(bench, "time_steps", lambda runs, batches, rounds, device, block=1: bench.StepTimes(
        {n: 0.5 for n in runs}, {n: [(batches[1:2], 0.5)] for n in runs}))
    monkeypatch.setattr(bench, "peak_flops", lambda *a, **k: 1e10)
    monkeypatch.setattr(bench, "cpu_has_bf16", lambda: False)


def attention_fast_flags(model):
    from submission.attention import CausalSelfAttention, SynthesizerAttention
    return {m.fast for m in model.modules() if isinstance(m, (CausalSelfAttention, SynthesizerAttention))}


def test_the_reference_evaluation_is_the_courses_loop_and_attention(tmp_path, capsys, monkeypatch):
    """The bench's one-at-a-time reference is what run.py --reference_eval computes: the course's sample() loop
    through the course's masked-softmax attention (attention.py's reference path), while the batched evaluation
    keeps the fast path. It ran the loop with the fast attention on, which is not the course's computation."""
    from submission import decoding
    seen = {"sample": [], "batched": []}
    sample, greedy_cached = decoding.sample, decoding._greedy_cached
    monkeypatch.setattr(decoding, "sample", lambda model, *a, **k: (
        seen["sample"].append(attention_fast_flags(model)), sample(model, *a, **k))[1])
    monkeypatch.setattr(decoding, "_greedy_cached", lambda model, *a, **k: (
        seen["batched"].append(attention_fast_flags(model)), greedy_cached(model, *a, **k))[1])
    untimed_training(monkeypatch)
    quick_bench(tmp_path, "--ref-questions", "2")
    out = capsys.readouterr().out
    assert seen["sample"] and all(flags == {False} for flags in seen["sample"]), seen["sample"]
    assert seen["batched"] and all(flags == {True} for flags in seen["batched"]), seen["batched"]
    assert "eval answers identical: met" in out


def test_each_evaluation_path_is_timed_straight_after_an_untimed_run_of_its_own(tmp_path, capsys, monkeypatch):
    """The batched evaluation was timed first, on a model nothing had decoded with yet, and the reference after
    it, warm: the batched path's start-up counted against it alone (docs/speed.md: 1.71-1.73 s cold against
    1.65-1.69 s warm on a 2-core CPU). Now each path decodes the first bench.EVAL_WARM_UP of its questions
    untimed, then all of them timed: the decoding calls, timed or not, in order."""
    from submission import decoding
    calls, timing = [], []
    sample, greedy_cached = decoding.sample, decoding._greedy_cached
    monkeypatch.setattr(decoding, "sample", lambda *a, **k: (
        calls.append(("one", 1, bool(timing))), sample(*a, **k))[1])
    monkeypatch.setattr(decoding, "_greedy_cached", lambda model, prompts, *a, **k: (
        calls.append(("batched", len(prompts), bool(timing))), greedy_cached(model, prompts, *a, **k))[1])

    def clock(fn, device):
        timing.append(1)
        try:
            return 1.0, fn()
        finally:
            timing.pop()

    monkeypatch.setattr(bench, "clock", clock)
    untimed_training(monkeypatch)
    warm = bench.EVAL_WARM_UP
    quick_bench(tmp_path, "--ref-questions", str(warm + 2))
    out = capsys.readouterr().out
    assert calls == ([("batched", warm, False), ("batched", 12, True)]
                     + [("one", 1, False)] * warm + [("one", 1, True)] * (warm + 2)), calls
    assert "eval_seconds_batched: 1.0\n" in out and f"eval_seconds_reference: {round(12 / (warm + 2), 2)}\n" in out


def test_the_summarys_mfu_is_each_rounds_flops_over_its_own_time(tmp_path, capsys, monkeypatch):
    """Each timed round of the fast vanilla step but the first (0.5) is made to run at exactly 1 GFLOP/s of what its
    batch computes, the peak 10 GFLOP/s: the summary must say the median round's 0.001 TFLOP/s and MFU 0.1 however
    the batches' FLOPs differ."""
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
    quick_bench(tmp_path, "--ref-questions", "2")
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

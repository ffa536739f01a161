"""stepprofile.py, what `./run.sh bench --profile` prints: a step's operators counted and timed per step, the
table's arithmetic, the profiler library's start and stop lines dropped, a profiler failure told apart from a
failing step. CPU only (on CUDA the same rows are the GPU's kernels; .ci/gpu-check runs it there).

Run:  python -m pytest -q tests/test_stepprofile.py
"""
import os
import sys

import pytest
import torch

import bench
import stepprofile
from stepprofile import ProfilerFailed, StepProfile, profile_lines, profile_steps


class ThreeProducts:
    """A run whose step multiplies three times and adds once: known operator counts a step."""

    def __init__(self):
        self.steps = 0

    def step(self, x, y):
        out = torch.mm(torch.mm(torch.mm(x, y), y), y)
        torch.add(out, 1)
        self.steps += 1


def test_each_operator_is_counted_per_step_and_the_rows_add_up():
    run = ThreeProducts()
    batches = [(torch.randn(16, 16), torch.randn(16, 16)), (torch.randn(16, 16), torch.randn(16, 16))]
    prof = profile_steps(run, batches, "cpu", steps=4)
    assert run.steps == 4 and prof.steps == 4 and prof.unit == "operator"
    calls = {name: c for name, c, _ in prof.rows}
    assert calls["aten::mm"] == 3.0 and calls["aten::add"] == 1.0, calls
    times = [ms for _, _, ms in prof.rows]
    assert times == sorted(times, reverse=True)
    assert prof.busy_ms == pytest.approx(sum(times)) and prof.calls == pytest.approx(sum(calls.values()))
    assert prof.wall_ms > 0 and all(ms >= 0 for ms in times)


def test_the_table_reads_the_profile_and_sums_the_rows_it_leaves_out():
    prof = StepProfile(steps=10, wall_ms=8.0, busy_ms=6.0, calls=12.0, unit="kernel",
                       rows=[("gemm_" + "x" * 100, 4.0, 3.0), ("softmax", 2.0, 1.5), ("copy", 5.0, 1.0),
                             ("add", 1.0, 0.5)])
    lines = profile_lines(prof, "vanilla fast step", top=2, width=20)
    assert lines[0] == ("  vanilla fast step, 10 steps: 8.00 ms a step; the GPU's kernels 6.00 ms (75% of it), "
                        "12 kernels a step")
    assert lines[2].split() == ["3.000", "50.0%", "4.0", "gemm_xxxxxxxxxxxx..."]
    assert lines[3].split() == ["1.500", "25.0%", "2.0", "softmax"]
    assert lines[4].split() == ["1.500", "6.0", "(2", "more", "kernels)"]
    assert len(lines) == 5


def test_no_steps_or_no_batches_is_a_value_error():
    with pytest.raises(ValueError, match="at least one step and one batch"):
        profile_steps(ThreeProducts(), [], "cpu")
    with pytest.raises(ValueError, match="at least one step"):
        profile_steps(ThreeProducts(), [(torch.ones(2, 2), torch.ones(2, 2))], "cpu", steps=0)


def test_the_libraries_start_and_stop_lines_are_dropped_and_the_rest_passed_on(capfd):
    with stepprofile._without_start_and_stop_lines():
        os.write(2, b"USDT:2026-11-30 16:11:15 3171:3171 SyncActivityProfilerHandler.cpp:52] profiler_start\n")
        os.write(2, b"a warning of its own\n")
    sys.stderr.write("after\n")
    err = capfd.readouterr().err
    assert err == "a warning of its own\nafter\n"


def test_a_profiler_that_cannot_start_is_a_line_of_the_bench_not_its_end(monkeypatch, capsys):
    def refuse(self):
        raise RuntimeError("CUPTI_ERROR_NOT_INITIALIZED\nmore detail")
    monkeypatch.setattr(torch.profiler.profile, "start", refuse)
    summary = {}
    bench.profile_fast(ThreeProducts(), [(torch.ones(2, 2), torch.ones(2, 2))], "cpu", "vanilla", summary)
    out = capsys.readouterr().out
    assert out == "  vanilla: no profile, torch.profiler did not start: CUPTI_ERROR_NOT_INITIALIZED\n"
    assert summary == {}


def test_a_failing_step_is_the_steps_error_not_the_profilers():
    class Broken:
        def step(self, x, y):
            raise RuntimeError("CUDA error: an illegal memory access")
    with pytest.raises(RuntimeError, match="illegal memory access") as caught:
        profile_steps(Broken(), [(torch.ones(2, 2), torch.ones(2, 2))], "cpu")
    assert not isinstance(caught.value, ProfilerFailed)


def test_the_benchs_profile_adds_its_figures_to_the_summary(capsys):
    summary = {}
    bench.profile_fast(ThreeProducts(), [(torch.randn(8, 8), torch.randn(8, 8))], "cpu", "synthesizer", summary)
    out = capsys.readouterr().out
    assert out.startswith("  synthesizer fast step under torch.profiler, 10 steps: ")
    assert set(summary) == {"profile_synthesizer_ms_per_step", "profile_synthesizer_busy_ms_per_step",
                            "profile_synthesizer_operators_per_step"}
    assert summary["profile_synthesizer_operators_per_step"] >= 4.0

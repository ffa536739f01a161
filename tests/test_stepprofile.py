"""stepprofile.py, what `./run.sh bench --profile` prints: a step's operators counted and timed per step, the
table's arithmetic, the profiler library's start and stop lines dropped, a profiler failure told apart from a
failing step. CPU only (on CUDA the same rows are the GPU's kernels; .ci/gpu-check runs it there).

Run:  python -m pytest -q tests/test_stepprofile.py
"""
import os
import sys
import types

import pytest
import torch
from torch.autograd import DeviceType

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
    assert lines[0] == ("  vanilla fast step, 10 steps: 8.00 ms a step profiled; the GPU's kernels 6.00 ms (75% of "
                        "it), 12 kernels a step")
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
        os.write(2, b"STAGE:2024-01-01 12:00:00 1:1 ActivityProfilerController.cpp:314] Completed Stage: Warm Up\n")
        os.write(2, b"a warning of its own\n")
    sys.stderr.write("after\n")
    err = capfd.readouterr().err
    assert err == "a warning of its own\nafter\n"


def test_a_profiler_that_cannot_start_is_a_line_of_the_bench_not_its_end(monkeypatch, capsys):
    def refuse(self):
        raise RuntimeError("CUPTI_ERROR_NOT_INITIALIZED\nmore detail")
    monkeypatch.setattr(torch.profiler.profile, "start", refuse)
    summary = {}
    bench.profile_path(ThreeProducts(), [(torch.ones(2, 2), torch.ones(2, 2))], "cpu", "vanilla", summary)
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
    bench.profile_path(ThreeProducts(), [(torch.randn(8, 8), torch.randn(8, 8))], "cpu", "synthesizer", summary)
    out = capsys.readouterr().out
    assert out.startswith("  synthesizer, 10 steps: ")
    assert set(summary) == {"profile_synthesizer_ms_per_step", "profile_synthesizer_busy_ms_per_step",
                            "profile_synthesizer_operators_per_step"}
    assert summary["profile_synthesizer_operators_per_step"] >= 4.0


def test_the_paths_named_by_paths_are_profiled_too_under_their_own_keys(capsys):
    """--profile traces the fast path, and each path --paths names (the candidate for CUDA's default among them),
    each table headed and each figure keyed by its path; without --paths, the fast path alone."""
    names = ["reference", "fast", "fast, packed", "fast, step graphs + compile, 2 length groups"]
    assert bench.profiled_names(names, None) == ["fast"]
    assert bench.profiled_names(names, ["step_graphs_compile_2_groups"]) == [
        "fast", "fast, step graphs + compile, 2 length groups"]
    assert bench.profiled_names(names, ["packed", "eager"]) == ["fast", "fast, packed"]
    summary = {}
    bench.profile_path(ThreeProducts(), [(torch.randn(8, 8), torch.randn(8, 8))], "cpu", "vanilla", summary,
                       "fast, step graphs + compile, 2 length groups")
    assert capsys.readouterr().out.startswith("  vanilla, fast, step graphs + compile, 2 length groups, 10 steps: ")
    assert set(summary) == {f"profile_vanilla_step_graphs_compile_2_groups_{what}_per_step"
                            for what in ("ms", "busy_ms", "operators")}


def event(key, count, device, cpu_us=0.0, device_us=0.0, annotation=False):
    return types.SimpleNamespace(key=key, count=count, device_type=device, self_cpu_time_total=cpu_us,
                                 self_device_time_total=device_us, is_user_annotation=annotation)


class FakeProfile:
    """torch.profiler.profile's stand-in: starts, stops and averages what it is given."""
    events, stop_error = [], None

    def __init__(self, activities):
        self.activities = activities

    def start(self):
        pass

    def stop(self):
        if self.stop_error is not None:
            raise self.stop_error

    def key_averages(self):
        return self.events


def fake_profiler(monkeypatch, events, stop_error=None):
    monkeypatch.setattr(stepprofile, "profile", type("Fake", (FakeProfile,), dict(events=events,
                                                                                   stop_error=stop_error)))
    monkeypatch.setattr(stepprofile, "synchronize", lambda device: None)


def test_on_cuda_the_rows_are_the_kernels_per_step_without_the_regions_that_span_them(monkeypatch):
    """Four steps: each row's calls and time divided by 4; the CPU's operators and the regions marked for the
    profiler (user annotations, device events since torch 2.5 that span their kernels) left out."""
    fake_profiler(monkeypatch, [
        event("sgemm", 8, DeviceType.CUDA, device_us=4000.0),
        event("softmax_kernel", 4, DeviceType.CUDA, device_us=1000.0),
        event("## Call CompiledFxGraph ##", 4, DeviceType.CUDA, device_us=5000.0, annotation=True),
        event("aten::mm", 8, DeviceType.CPU, cpu_us=9000.0)])
    prof = profile_steps(ThreeProducts(), [(torch.ones(2, 2), torch.ones(2, 2))], "cuda", steps=4)
    assert prof.unit == "kernel"
    assert prof.rows == [("sgemm", 2.0, 1.0), ("softmax_kernel", 1.0, 0.25)]
    assert prof.busy_ms == pytest.approx(1.25) and prof.calls == pytest.approx(3.0)


def test_on_the_cpu_the_rows_are_the_operators_per_step(monkeypatch):
    fake_profiler(monkeypatch, [event("sgemm", 8, DeviceType.CUDA, device_us=4000.0),
                                event("aten::mm", 6, DeviceType.CPU, cpu_us=3000.0)])
    prof = profile_steps(ThreeProducts(), [(torch.ones(2, 2), torch.ones(2, 2))], "cpu", steps=2)
    assert prof.unit == "operator" and prof.rows == [("aten::mm", 3.0, 1.5)]


def test_a_cuda_profile_without_kernels_is_a_profiler_failure_not_an_empty_table(monkeypatch):
    """CUPTI without the permission to trace records nothing and raises nothing: a table of zeros would read as a
    step that costs the GPU no time."""
    fake_profiler(monkeypatch, [event("aten::mm", 8, DeviceType.CPU, cpu_us=9000.0)])
    with pytest.raises(ProfilerFailed, match="recorded no kernels"):
        profile_steps(ThreeProducts(), [(torch.ones(2, 2), torch.ones(2, 2))], "cuda", steps=2)


def test_a_failing_step_stays_the_error_when_the_profiler_then_fails_to_stop(monkeypatch):
    """The bench takes a ProfilerFailed for a line and goes on: a step's crash must not turn into one."""
    class Broken:
        def step(self, x, y):
            raise RuntimeError("CUDA error: an illegal memory access")
    fake_profiler(monkeypatch, [], stop_error=RuntimeError("CUPTI_ERROR_INVALID_CONTEXT"))
    with pytest.raises(RuntimeError, match="illegal memory access") as caught:
        profile_steps(Broken(), [(torch.ones(2, 2), torch.ones(2, 2))], "cpu")
    assert not isinstance(caught.value, ProfilerFailed)


def test_the_other_lines_reach_descriptor_2_without_a_python_stderr(monkeypatch, capfd):
    """A process started with stderr closed has sys.stderr None: the profiler still starts and stops."""
    monkeypatch.setattr(sys, "stderr", None)
    with stepprofile._without_start_and_stop_lines():
        os.write(2, b"USDT: profiler_stop\nkept\n")
    monkeypatch.undo()
    assert capfd.readouterr().err == "kept\n"


def test_a_step_failing_under_the_profiler_ends_the_profiling_not_the_bench(capsys):
    """The bench's summary of what it timed must survive a crash of a profiled step (the figures were measured
    before it): profile_paths prints the traceback and a line, profiles nothing more, and returns the line."""
    class Broken:
        def step(self, x, y):
            raise RuntimeError("CUDA error: an illegal memory access was encountered\nCUDA kernel errors ...")
    after = ThreeProducts()
    summary = {}
    batches = [(torch.ones(2, 2), torch.ones(2, 2))]
    failed = bench.profile_paths([("vanilla", "fast", ThreeProducts()), ("synthesizer", "fast", Broken()),
                                  ("synthesizer", "fast, step graphs", after)], batches, "cpu", summary)
    assert failed == ("a synthesizer step (fast) failed under torch.profiler: "
                      "RuntimeError: CUDA error: an illegal memory access was encountered")
    captured = capsys.readouterr()
    assert captured.out.splitlines()[-1] == f"  {failed}; no more profiles (the figures above were measured before it)"
    assert "Traceback" in captured.err and "illegal memory access" in captured.err
    assert after.steps == 0  # a CUDA error leaves the device unusable: nothing more is profiled
    assert set(summary) == {"profile_vanilla_ms_per_step", "profile_vanilla_busy_ms_per_step",
                            "profile_vanilla_operators_per_step"}
    assert bench.profile_paths([("vanilla", "fast", ThreeProducts())], batches, "cpu", {}) is None

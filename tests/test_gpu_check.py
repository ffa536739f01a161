""".ci/gpu-check's flow without a GPU: the data check, and the shared time budget that skips what it
cannot fit so that a call cut short by the device tool still leaves a whole summary.

Run:  python -m pytest -q tests/test_gpu_check.py
"""
import json
import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, ".ci", "gpu-check")


def check(args, out, **env):
    full = dict(os.environ, OUT=str(out), **env)
    return subprocess.run(["bash", SCRIPT] + args, cwd=ROOT, env=full, capture_output=True, text=True,
                          timeout=120)


def test_missing_course_data_is_one_line_naming_the_file(tmp_path):
    data = tmp_path / "course"
    data.mkdir()
    (data / "wiki.txt").write_text("x\n")
    p = check([str(data)], tmp_path / "out")
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [
        f"gpu-check: {data}/birth_places_train.tsv is missing; give the folder of the course's data "
        "(COURSE_DATA) as the argument"]


def test_an_exhausted_budget_skips_every_step(tmp_path):
    """With no budget left every step is skipped, by name, in the summary; the exit status says a step did not
    run; nothing is written into the repo."""
    data = tmp_path / "course"
    shutil.copytree(os.path.join(ROOT, "data"), data)
    before = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True,
                            text=True).stdout
    p = check([str(data)], tmp_path / "out", GPU_CHECK_BUDGET="0")
    assert p.returncode == 1, p.stderr
    summary = (tmp_path / "out" / "summary.txt").read_text()
    for name in ("bench", "pretrain-graphs", "tests", "pretrain"):
        assert re.search(rf"^== {name}: skipped, -?\d+ s of the 0 s budget left$", summary, re.M), summary
    for name in ("eval-graphs", "eval"):  # no finetuning without a pretraining
        assert re.search(rf"^== {name}: skipped, its pretraining did not finish$", summary, re.M), summary
    assert "pace: no pretraining log" in summary and "pace, step graphs: no pretraining log" in summary
    after = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True,
                           text=True).stdout
    assert after == before


def pace(log):
    p = subprocess.run(["python3", os.path.join(ROOT, ".ci", "pace.py"), str(log)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


def test_the_pace_reads_the_trainers_log_and_the_partial_log_of_a_run_cut_short(tmp_path):
    """.ci/pace.py reads the fields the Trainer's loss log has now (epoch, time); a pretraining that its time
    limit cut short leaves only <log>.partial, maybe with a torn last line, and its finished epochs still give
    the pace (gpu-check parsed only the finished log, and a torn line stopped it with a traceback)."""
    import torch
    from torch.utils.data import TensorDataset
    from submission import GPT, GPTConfig, Trainer, TrainerConfig
    torch.manual_seed(0)
    x = torch.randint(1, 20, (24, 16))
    log = tmp_path / "pretrain.log.jsonl"
    model = GPT(GPTConfig(20, 16, n_layer=1, n_head=2, n_embd=8))
    Trainer(model, TensorDataset(x, x), None, TrainerConfig(max_epochs=3, batch_size=8, num_threads=1,
                                                            log_path=str(log))).train()
    said = pace(log)
    assert len(said) == 1 and re.match(r"pace: 9 steps in \d+ s; first epoch [\d.]+ s; later epochs \d+ ms \(median\) "
                                       r"for 3 steps at [\d.]+ ms \(median gap inside epochs\): -?\d+ ms an epoch "
                                       r"beyond its steps$", said[0]), said
    partial = tmp_path / "cut.log.jsonl.partial"
    partial.write_text(log.read_text() + '{"step": 10, "epoch": 4, "tok')
    assert pace(partial)[0] == "pace: the pretraining did not finish; from its log so far:"
    assert pace(partial)[1].startswith("pace: 9 steps in ")
    steps = log.read_text().splitlines()
    partial.write_text("\n".join(steps[:7]) + "\n")  # epochs 1 and 2, then the kill one step into epoch 3
    assert re.match(r"pace: 6 steps in \d+ s \(and 1 step\(s\) of epoch 3, cut short: left out\); first epoch "
                    r"[\d.]+ s; later epochs \d+ ms \(median\) for 3 steps", pace(partial)[1]), pace(partial)
    first = steps[:3]  # the first epoch alone
    partial.write_text("\n".join(first) + "\n")
    assert re.match(r"pace: 3 steps in \d+ s, 1 epoch\(s\) begun: too few", pace(partial)[1])
    assert pace(tmp_path / "none.log.jsonl.partial") == ["pace: no pretraining log"]


def test_the_pace_figures_are_the_logs_epochs_and_medians(tmp_path):
    """The figures themselves, on a log of known times (the test above pins the fields and the layout only): a
    first epoch (compiling) of steps 1 s apart ending at 12 s, then three epochs of three steps, 0.3, 1.1 and
    1.7 s long (median 1.1 s, not the mean) with steps 0.1 s apart but for one gap of 0.7 s (median 0.1 s; 0.4 s
    with the first epoch's gaps counted), so 800 ms an epoch beyond its three steps."""
    times = {1: [8.0, 9.0, 10.0, 11.0, 12.0], 2: [12.1, 12.2, 12.3], 3: [12.6, 12.7, 13.4], 4: [14.9, 15.0, 15.1]}
    log = tmp_path / "known.log.jsonl"
    steps = [(e, t) for e, ts in times.items() for t in ts]
    log.write_text("".join(json.dumps({"step": i + 1, "epoch": e, "time": t}) + "\n" for i, (e, t) in enumerate(steps)))
    assert pace(log) == ["pace: 14 steps in 15 s; first epoch 12.0 s; later epochs 1100 ms (median) for 3 steps at "
                         "100.00 ms (median gap inside epochs): 800 ms an epoch beyond its steps"]


def steps_seen(tmp_path, variable):
    """Run .ci/gpu-check with a `timeout` on PATH that runs nothing and records each step as
    "VARIABLE=value command..." (value "unset" where the step's environment lacks it), the variable removed from
    the caller's environment first; the recorded lines (nothing is trained)."""
    data = tmp_path / "course"
    shutil.copytree(os.path.join(ROOT, "data"), data)
    bin_dir, seen = tmp_path / "bin", tmp_path / "seen.txt"
    bin_dir.mkdir()
    fake = bin_dir / "timeout"
    fake.write_text(f'#!/bin/sh\nshift 3\necho "{variable}=${{{variable}:-unset}} $*" >> "{seen}"\n')  # -k N LIMIT
    fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != variable}  # as a machine without it set
    env.update(OUT=str(tmp_path / "out"), PATH=f"{bin_dir}{os.pathsep}{env['PATH']}")
    p = subprocess.run(["bash", SCRIPT, str(data)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr  # every step "ran" and passed
    return seen.read_text().splitlines()


def test_every_step_runs_with_pythons_output_unbuffered(tmp_path):
    """Each step's output goes to a file as it is printed: Python block-buffers a stdout redirected to a file,
    and a step killed without the chance to flush (the device tool's time limit, a process that outlives the
    SIGTERM of its step's timeout) lost all it had printed. A `timeout` on PATH that runs nothing records each
    step's command and environment (nothing is trained)."""
    lines = steps_seen(tmp_path, "PYTHONUNBUFFERED")
    assert [line.split()[1:3] for line in lines] == [["./run.sh", "bench"], ["./run.sh", "vanilla_pretrain"],
                                                     ["bash", "-c"], [os.environ.get("PYTHON") or "python3", "-m"],
                                                     ["./run.sh", "vanilla_pretrain"], ["bash", "-c"]], lines
    assert all(line.startswith("PYTHONUNBUFFERED=1 ") for line in lines), lines


def test_the_tests_step_selects_every_test_that_needs_a_gpu():
    """The tests step runs `-k cuda` (the files' CPU tests are CI's, and would not fit in the budget): every test
    of test_fast.py and test_graphs.py skipped without a GPU must have "cuda" in its name."""
    with open(SCRIPT, encoding="utf-8") as f:
        script = f.read()
    assert re.search(r'^step tests \d+ .* -m pytest .*tests/test_fast\.py tests/test_graphs\.py -k cuda$', script,
                     re.M), "the tests step changed: check its selection here"
    gpu_only = []
    for name in ("test_fast.py", "test_graphs.py"):
        with open(os.path.join(ROOT, "tests", name), encoding="utf-8") as f:
            text = f.read()
        # each test under a decorator that asks for CUDA (its arguments on lines of their own, or not), whatever
        # decorators follow it: as many as the file asks for CUDA, or one was not found
        more = r"(?:[ \t)].*\n)*"  # a decorator's lines after its first
        found = re.findall(rf"^@.*cuda\.is_available\(\).*\n{more}(?:@.*\n{more})*def (\w+)", text, re.M)
        assert len(found) == text.count("cuda.is_available()"), (name, found)
        gpu_only += found
    assert len(gpu_only) >= 3 and all("cuda" in name for name in gpu_only), gpu_only


def test_the_run_sh_steps_ask_for_cuda_and_the_tests_step_leaves_the_device_to_conftest(tmp_path):
    """On a machine whose torch sees no GPU (a CPU build of torch, a GPU not visible) the bench, pretraining,
    finetuning and evaluation stop at once with get_device's one line (GPT_DEVICE=cuda) instead of spending the
    one call's budget timing the course's batch and pretraining on the CPU; the tests step runs without
    GPT_DEVICE, as conftest.py expects (its GPU tests choose their own device)."""
    lines = steps_seen(tmp_path, "GPT_DEVICE")
    devices = [line.split()[0] for line in lines]
    assert devices == ["GPT_DEVICE=cuda"] * 3 + ["GPT_DEVICE=unset"] + ["GPT_DEVICE=cuda"] * 2, devices


def test_an_earlier_calls_files_in_a_reused_out_are_no_figures_of_this_one(tmp_path):
    """A step skipped for want of budget wrote no file, so the summary's accuracy came from an earlier call's
    eval file left in a reused $OUT; now a skipped step empties its file. The candidate pretraining sleeps 9 s
    of a 38 s budget, so its eval step is skipped."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "eval-graphs.txt").write_text("Correct: 99.0 out of 500.0: 19.8%\nfinetuning took 1 s\n")
    p, calls, out = fake_timeout_run(tmp_path, 'case "$*" in *--step_graphs*) sleep 9 ;; esac\nexit 0', budget=38)
    summary = (out / "summary.txt").read_text()
    assert re.search(r"^== eval-graphs: skipped, \d+ s of the 38 s budget left$", summary, re.M), summary
    assert "Correct" not in summary and "took" not in summary and (out / "eval-graphs.txt").read_text() == ""


def fake_timeout_run(tmp_path, script, budget=None):
    """Run .ci/gpu-check with a `timeout` on PATH whose body is `script` (sh; "$@" is timeout's own arguments,
    each call also recorded in calls.txt), nothing trained; (the process, the recorded calls, the $OUT folder)."""
    data = tmp_path / "course"
    shutil.copytree(os.path.join(ROOT, "data"), data)
    bin_dir, calls, out = tmp_path / "bin", tmp_path / "calls.txt", tmp_path / "out"
    bin_dir.mkdir()
    fake = bin_dir / "timeout"
    fake.write_text(f'#!/bin/sh\necho "$*" >> "{calls}"\n{script}\n')
    fake.chmod(0o755)
    env = dict(os.environ, OUT=str(out), PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    if budget is not None:
        env["GPU_CHECK_BUDGET"] = str(budget)
    p = subprocess.run(["bash", SCRIPT, str(data)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    return p, calls.read_text().splitlines(), out


def test_every_step_is_killed_a_while_after_its_limits_sigterm(tmp_path):
    """A step that outlives its limit's SIGTERM (a process stuck in a CUDA call, where Python's handler never
    runs) is killed, instead of holding the call until the device tool's own limit ends it and the steps after it
    with it: each step's timeout is given a kill-after, of a few seconds."""
    p, calls, _ = fake_timeout_run(tmp_path, "exit 0")
    assert p.returncode == 0, p.stderr
    assert len(calls) == 6, calls
    for call in calls:
        kill, after, limit = call.split()[:3]
        assert kill in ("-k", "--kill-after") and 1 <= int(after) <= 30 and int(limit) > int(after), call


GRAPHS = ["./run.sh", "vanilla_pretrain", "--step_graphs", "--length_groups", "2", "--compile_mode", "default"]


def test_the_bench_profiles_and_the_candidate_pretrains_before_the_default(tmp_path):
    """The bench's --profile tables say where a fast step's time goes; then the candidate for CUDA's default (the
    bench's step-graph row) pretrains, and is finetuned and evaluated, before the GPU tests; today's default, whose
    pretraining an H200 timed at 5fb21a0 with no training code changed since, last, with what the budget leaves."""
    p, calls, _ = fake_timeout_run(tmp_path, "exit 0")
    assert p.returncode == 0, p.stderr
    assert calls[0].split()[3:6] == ["./run.sh", "bench", "--rounds"] and "--profile" in calls[0].split(), calls
    assert calls[1].split()[3:] == GRAPHS, calls
    assert calls[2].split()[3:5] == ["bash", "-c"] and " -m pytest " in calls[3], calls
    assert calls[4].split()[3:] == ["./run.sh", "vanilla_pretrain"] and calls[5].split()[3:5] == ["bash", "-c"], calls


@pytest.mark.parametrize("status, passed", [(124, True), (137, True), (1, False)])
def test_the_step_graph_pretraining_cut_by_its_limit_still_passes_and_a_crash_does_not(tmp_path, status, passed):
    """A pretraining cut by its limit is a figure (its pace line, from the .partial log of its epochs where there is
    one: here none), so the limit does not fail the check (and its finetuning is skipped); a crash does. It writes to
    a folder of its own, the default pretraining's apart."""
    first = f'case "$*" in *--step_graphs*) echo "OUT_DIR=$OUT_DIR"; exit {status} ;; esac'
    p, calls, out = fake_timeout_run(tmp_path, f"{first}\nexit 0")
    assert (p.returncode == 0) == passed, (p.returncode, p.stderr)
    assert calls[1].split()[3:] == GRAPHS and calls[2].split()[3:5] != ["bash", "-c"], calls
    summary = (out / "summary.txt").read_text()
    assert re.search(rf"^== pretrain-graphs: exit {status}, ", summary, re.M), summary
    assert re.search(r"^== eval-graphs: skipped, its pretraining did not finish$", summary, re.M), summary
    assert re.search(r"^== eval: exit 0, ", summary, re.M), summary  # the default's pipeline goes on
    assert "pace, step graphs: no pretraining log" in summary, summary
    assert (out / "pretrain-graphs.txt").read_text().strip().endswith("/pretrain-graphs")
    assert len(os.listdir(out)) <= 8, os.listdir(out)


def fake_repo_run(tmp_path, modes):
    """A fake `timeout` that runs each eval step's `bash -c` script in a folder whose ./run.sh echoes its mode and
    exits with `modes`' status for it (0 where not given), printing a dev evaluation's lines: the other steps run
    nothing. (the process, the $OUT folder)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    cases = "".join(f"{mode}) exit {rc} ;; " for mode, rc in modes.items())
    (repo / "run.sh").write_text(f'#!/bin/sh\necho "mode $1"\ncase "$1" in {cases}*eval_dev*) '
                                 'echo "Correct: 121.0 out of 500.0: 24.2%" ;; esac\n')
    (repo / "run.sh").chmod(0o755)
    p, _, out = fake_timeout_run(tmp_path, f'shift 3\ncase "$1" in bash) cd "{repo}" && exec "$@" ;; esac\nexit 0')
    return p, out


def test_each_pretrainings_finetuning_and_dev_accuracy_come_to_the_summary(tmp_path):
    """Each pipeline's eval step finetunes and then evaluates on dev; the accuracy and the two times reach the
    summary under the pipeline's name."""
    p, out = fake_repo_run(tmp_path, {})
    assert p.returncode == 0, p.stderr
    said = (out / "eval-graphs.txt").read_text().splitlines()
    assert [line for line in said if line.startswith("mode ")] == [
        "mode vanilla_finetune_with_pretrain", "mode vanilla_eval_dev_with_pretrain"], said
    summary = (out / "summary.txt").read_text().splitlines()
    for what in ("eval, step graphs:", "eval:"):
        mine = [line[len(what) + 1:] for line in summary if line.startswith(what + " ")]
        assert len(mine) == 3 and mine[1] == "Correct: 121.0 out of 500.0: 24.2%", summary
        assert re.fullmatch(r"finetuning took \d+ s", mine[0]), summary
        assert re.fullmatch(r"the dev evaluation took \d+ s", mine[2]), summary


@pytest.mark.parametrize("failing", ["vanilla_finetune_with_pretrain", "vanilla_eval_dev_with_pretrain"])
def test_a_failing_finetuning_or_evaluation_fails_the_check(tmp_path, failing):
    """A finetuning that fails stops its eval step before the evaluation; either failing fails the check."""
    p, out = fake_repo_run(tmp_path, {failing: 3})
    assert p.returncode == 1, p.stderr
    said = (out / "eval-graphs.txt").read_text()
    assert ("mode vanilla_eval_dev_with_pretrain" in said) == failing.endswith("eval_dev_with_pretrain"), said
    assert "took" not in said.splitlines()[-1], said
    assert re.search(r"^== eval-graphs: exit 3, ", (out / "summary.txt").read_text(), re.M)


# a fake timeout's pretraining: a loss log of two epochs of 2 steps in OUT_DIR, its times from the pretraining's
# flags (1 s a step for the default, 3 s with step graphs), so that each pace line tells which log it read
WRITE_LOG = ('case "$*" in *vanilla_pretrain*) g=1; case "$*" in *--step_graphs*) g=3 ;; esac; '
             'for i in 1 2 3 4; do echo "{\\"step\\": $i, \\"epoch\\": $(( (i + 1) / 2 )), \\"time\\": $(( i * g ))}"; '
             'done > "$OUT_DIR/vanilla.pretrain.params.log.jsonl" ;; esac')


def test_each_pace_reads_its_own_pretrainings_log_and_eight_files_come_back(tmp_path):
    """Each pretraining writes to a folder of its own and is paced from its own log: the step-graph one as
    "pace, step graphs:", its log copied to $OUT; the default's as "pace:", not copied: the device tool brings
    back at most 8 files."""
    p, calls, out = fake_timeout_run(tmp_path, f"{WRITE_LOG}\nexit 0")
    assert p.returncode == 0, p.stderr
    summary = (out / "summary.txt").read_text()
    assert "pace: 4 steps in 4 s; first epoch 2.0 s; " in summary, summary
    assert "pace, step graphs: 4 steps in 12 s; first epoch 6.0 s; " in summary, summary
    assert sorted(os.listdir(out)) == ["bench.txt", "eval-graphs.txt", "eval.txt", "pretrain-graphs.log.jsonl",
                                       "pretrain-graphs.txt", "pretrain.txt", "summary.txt", "tests.txt"]
    log = (out / "pretrain-graphs.log.jsonl").read_text()
    assert '"time": 12}' in log and '"time": 4}' not in log, log


def test_the_default_pretraining_skipped_for_want_of_budget_leaves_a_passing_check(tmp_path):
    """Where the other steps passed and only the budget left for the last pipeline is short, the check passes.
    The tests step takes 9 s of a 38 s budget: every step before it starts with 30 s or more left, the default
    pretraining with 29 or fewer."""
    p, calls, out = fake_timeout_run(tmp_path, 'case "$*" in *" -m pytest "*) sleep 9 ;; esac\nexit 0', budget=38)
    summary = (out / "summary.txt").read_text()
    assert re.search(r"^== pretrain: skipped, \d+ s of the 38 s budget left$", summary, re.M), summary
    assert re.search(r"^== eval: skipped, its pretraining did not finish$", summary, re.M), summary
    assert re.search(r"^== eval-graphs: exit 0, ", summary, re.M), summary
    assert [call.split()[3:] for call in calls].count(["./run.sh", "vanilla_pretrain"]) == 0, calls
    assert p.returncode == 0, summary


def test_the_bench_figures_reach_the_summary_before_the_next_step_starts(tmp_path):
    """The summary is what comes back of a call that the device tool's own limit cuts short: the bench's
    train_speedup_* lines went to it only after the step-graph pretraining and the tests, so a call cut there
    lost the figures that decide issue 6 (they stayed only in bench.txt)."""
    bench = ('case "$*" in *" bench "*) '
             'printf "train_speedup_vanilla: 3.1\\ntarget train >= 3.0x (vanilla): met\\n" ;; esac')
    p, calls, out = fake_timeout_run(tmp_path, f"{bench}\nexit 0")
    assert p.returncode == 0, p.stderr
    lines = (out / "summary.txt").read_text().splitlines()
    figure = lines.index("train_speedup_vanilla: 3.1")
    assert lines[figure + 1] == "target train >= 3.0x (vanilla): met"
    assert lines[figure - 1].startswith("== bench: exit 0, ")
    assert [i for i, line in enumerate(lines) if line.startswith("== pretrain-graphs: ")][0] > figure, lines

""".ci/gpu-check's flow without a GPU: the data check, and the shared time budget that skips what it
cannot fit so that a call cut short by the device tool still leaves a whole summary.

Run:  python -m pytest -q tests/test_gpu_check.py
"""
import os
import re
import shutil
import subprocess

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


def test_an_exhausted_budget_skips_every_step_and_pretrains_without_packing(tmp_path):
    """With no budget left every step is skipped, by name, in the summary; with no packed vanilla step
    timed by the bench, the pretraining would run without --pack; the exit status says a step did not run;
    nothing is written into the repo."""
    data = tmp_path / "course"
    shutil.copytree(os.path.join(ROOT, "data"), data)
    before = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True,
                            text=True).stdout
    p = check([str(data)], tmp_path / "out", GPU_CHECK_BUDGET="0")
    assert p.returncode == 1, p.stderr
    summary = (tmp_path / "out" / "summary.txt").read_text()
    for name in ("bench", "pretrain", "finetune", "dev", "tests"):
        assert re.search(rf"^== {name}: skipped, -?\d+ s of the 0 s budget left$", summary, re.M), summary
    assert "the bench timed no packed vanilla step: pretraining without --pack" in summary
    assert "pace: no pretraining log" in summary
    after = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True,
                           text=True).stdout
    assert after == before

"""End to end: every run.sh mode on a tiny generated world with a tiny model, checking the files
it writes, the printed accuracy line, and the errors a user meets.

Run:  python -m pytest -q tests/test_run_sh.py
"""
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = ["--n_layer", "1", "--n_head", "2", "--n_embd", "16", "--max_epochs", "1", "--batch_size", "16"]


def q(path):
    """`path` as run.sh's hints write it (bash's printf %q): a checkout or TMPDIR with a space is escaped there."""
    return subprocess.run(["bash", "-c", 'printf %q "$1"', "_", str(path)], capture_output=True, text=True,
                          check=True).stdout


def sh(args, data, out, check=True):
    env = dict(os.environ, DATA_DIR=str(data), OUT_DIR=str(out), PYTHON=sys.executable)
    p = subprocess.run([os.path.join(ROOT, "run.sh")] + args, cwd="/", env=env,
                       capture_output=True, text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError(f"run.sh {args[0]} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    import make_world
    data = tmp_path_factory.mktemp("data")
    make_world.write_world(make_world.build_world(people=60, train=40, dev=12, seed=3), str(data))
    return data


def test_a_flag_a_mode_sets_is_refused_where_it_would_make_a_deliverable_from_the_wrong_file(world, tmp_path):
    """`vanilla_finetune_without_pretrain --reading_params_path P` finetuned P and wrote it as the model
    without pretraining; `all` with such a flag gave every mode the same file, and stopped only at the
    second mode, after the first had written it."""
    out = tmp_path / "out"
    p = sh(["vanilla_finetune_without_pretrain", "--reading_params_path=x.params"] + TINY, world, out, check=False)
    assert p.returncode == 2 and p.stderr.splitlines()[-1] == (
        "run.py: error: vanilla_finetune_without_pretrain trains from scratch, without pretrained params; "
        "--reading_params_path would finetune them: use vanilla_finetune_with_pretrain, which reads OUT_DIR's "
        "pretrained params (--help lists the options)")
    for flag in ("--reading_params_path=x.params", "--variant", "--finetune_corpus_path=t.tsv", "--outputs_path=o"):
        p = sh(["all", flag] + TINY, world, out, check=False)
        assert p.returncode == 2 and p.stderr == (
            f"run.sh all: {flag.split('=')[0]} is one of the flags each mode sets for itself; give it to a single "
            f"mode (./run.sh MODE), or move all the modes' files with DATA_DIR and OUT_DIR\n")
    assert not out.exists()
    # a flag its first mode refuses: `all` had made OUT_DIR for its stamp and lock, and left it there, empty; the
    # folders above it that mkdir -p made go too, up to the first that was there
    p = sh(["all", "--batch_size", "0"] + TINY[:-2], world, out / "a" / "b", check=False)
    assert p.returncode == 2 and "--batch_size" in p.stderr.splitlines()[-1] and not out.exists()
    out.mkdir()
    (out / "mine.txt").write_text("mine\n")  # a folder that was there stays, with what it holds
    p = sh(["all", "--batch_size", "0"] + TINY[:-2], world, out, check=False)
    assert p.returncode == 2 and os.listdir(out) == ["mine.txt"]


def _children(pid):
    """The pids of `pid`'s child processes (Linux's /proc)."""
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(c) for c in f.read().split()]


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:  # ended meanwhile
        return b""


def test_all_modes_end_to_end(world, tmp_path, monkeypatch):
    """`./run.sh all` runs the eleven modes; stopped part way, the same command with --resume goes on:
    an interrupted training mode resumes from its state (a vanilla pretraining stopped after its first
    epoch, here), and a mode whose output is newer than its input is done. `all --resume` passed
    --resume to every mode, so a stopped `all` could never go on."""
    import run as driver
    from submission.trainer import TrainingRun
    out = tmp_path / "out"
    out.mkdir()
    flags = TINY + ["--max_epochs", "2", "--state_every", "0"]
    pretrain = out / "vanilla.pretrain.params"
    original = TrainingRun.step

    def stop_once_the_state_is_saved(self, x, y):  # Ctrl-C in the second epoch
        if os.path.exists(str(pretrain) + ".state"):
            raise KeyboardInterrupt
        return original(self, x, y)

    monkeypatch.setattr(TrainingRun, "step", stop_once_the_state_is_saved)
    with pytest.raises(KeyboardInterrupt):  # what ./run.sh vanilla_pretrain runs
        driver.main(["--function=pretrain", "--variant=vanilla", f"--pretrain_corpus_path={world}/wiki.txt",
                     f"--writing_params_path={pretrain}"] + flags)
    assert sorted(os.listdir(out)) == ["vanilla.pretrain.params.log.jsonl.partial", "vanilla.pretrain.params.state"]

    p = sh(["all", "--resume"] + flags, world, out)
    ran = re.findall(r"^=== \./run\.sh (.*)$", p.stderr, re.M)
    assert ran == ["vanilla_finetune_without_pretrain", "vanilla_eval_dev_without_pretrain",
                   "vanilla_eval_test_without_pretrain", "vanilla_pretrain --resume", "vanilla_finetune_with_pretrain",
                   "vanilla_eval_dev_with_pretrain", "vanilla_eval_test_with_pretrain", "synthesizer_pretrain",
                   "synthesizer_finetune_with_pretrain", "synthesizer_eval_dev_with_pretrain",
                   "synthesizer_eval_test_with_pretrain"], p.stderr[-2000:]
    assert f"resuming from {pretrain}.state: epoch 2 of 2" in p.stdout  # from the state, not afresh
    # what to do next, with the run's folders; run.sh as called, from / here (./run.sh was said, which is not there)
    assert p.stderr.splitlines()[-1] == (
        f"=== run.sh all: the eleven modes are done; next: python {q(ROOT + '/src/grader.py')} --data-dir={q(world)} "
        f"--submission-dir={q(out)} (the autograder), DATA_DIR={q(world)} OUT_DIR={q(out)} {q(ROOT + '/run.sh')} "
        f"deliverables (checks the files to submit and zips them)")
    names = sorted(os.listdir(out))
    expected = ["synthesizer.finetune.params", "synthesizer.pretrain.dev.predictions",
                "synthesizer.pretrain.params", "synthesizer.pretrain.test.predictions",
                "vanilla.finetune.params", "vanilla.model.params", "vanilla.nopretrain.dev.predictions",
                "vanilla.nopretrain.test.predictions", "vanilla.pretrain.dev.predictions",
                "vanilla.pretrain.params", "vanilla.pretrain.test.predictions"]
    assert [n for n in names if not n.endswith((".log.jsonl", ".card.json"))] == expected  # no state, .partial, .tmp
    assert ([n for n in names if n.endswith(".card.json")]
            == [n + ".card.json" for n in expected if n.endswith("params")])
    dev_q = open(world / "birth_dev.tsv", encoding="utf-8").read().count("\n")
    test_q = open(world / "birth_test_inputs.tsv", encoding="utf-8").read().count("\n")
    for n in names:
        if n.endswith(".predictions"):
            lines = open(out / n, encoding="utf-8").read().split("\n")
            assert lines[-1] == "" and len(lines) - 1 == (dev_q if ".dev." in n else test_q)
    assert len(re.findall(rf"^Correct: \d+\.0 out of {dev_q}\.0: [\d.]+%", p.stdout, re.M)) == 3, p.stdout
    assert p.stdout.count("No gold birth places provided") == 3
    assert p.stdout.count("; no targets provided") == 3  # the course's line

    # everything done: nothing runs; a pretraining made again: what follows it runs again
    p = sh(["all", "--resume"] + flags, world, out)
    assert p.stdout == "" and len(re.findall(r"^=== .*: done \(", p.stderr, re.M)) == 11, p.stderr
    spaced = tmp_path / "with space"  # the closing hint's paths quoted as a shell needs them, to be pasted
    shutil.copytree(world, spaced / "world")  # (copy2 keeps the times: every mode stays done)
    shutil.copytree(out, spaced / "out")
    p = sh(["all", "--resume"] + flags, spaced / "world", spaced / "out")
    w, o = (str(spaced / name).replace(" ", "\\ ") for name in ("world", "out"))  # as bash's printf %q writes them
    assert p.stderr.splitlines()[-1] == (
        f"=== run.sh all: the eleven modes are done; next: python {q(ROOT + '/src/grader.py')} --data-dir={w} "
        f"--submission-dir={o} (the autograder), DATA_DIR={w} OUT_DIR={o} {q(ROOT + '/run.sh')} deliverables (checks "
        f"the files to submit and zips them)"), p.stderr[-600:]
    assert shlex.split(p.stderr.splitlines()[-1].split("next: ")[1].split(" (the autograder)")[0])[2] == \
        f"--data-dir={spaced / 'world'}"  # pasted into a shell, the path is one word again
    os.utime(out / "synthesizer.pretrain.params")  # newer than the finetuned params made from it
    p = sh(["all", "--resume"] + flags, world, out)
    assert re.findall(r"^=== \./run\.sh (\w+)$", p.stderr, re.M) == [
        "synthesizer_finetune_with_pretrain", "synthesizer_eval_dev_with_pretrain",
        "synthesizer_eval_test_with_pretrain"], p.stderr

    # `all ... 2>&1 | head`: each mode writes its files and exits 141; the modes after it run too
    for n in ("vanilla.nopretrain.dev.predictions", "vanilla.nopretrain.test.predictions"):
        os.remove(out / n)
    env = dict(os.environ, DATA_DIR=str(world), OUT_DIR=str(out), PYTHON=sys.executable)
    piped = subprocess.Popen([os.path.join(ROOT, "run.sh"), "all", "--resume"] + flags, cwd="/", env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    piped.stdout.close()
    assert piped.wait(timeout=300) == 141
    assert ((out / "vanilla.nopretrain.dev.predictions").exists()
            and (out / "vanilla.nopretrain.test.predictions").exists())

    # a Ctrl-C that reaches `all` but not its last mode (as a mode's shell can lose one while it starts): the
    # mode ends well, and `all` said "the eleven modes are done" with status 0; it stops, saying how to go on
    os.remove(out / "synthesizer.pretrain.test.predictions")
    p = subprocess.Popen([os.path.join(ROOT, "run.sh"), "all", "--resume"] + flags, cwd="/", env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = []
    while not lines or lines[-1] != "=== ./run.sh synthesizer_eval_test_with_pretrain\n":
        lines.append(p.stderr.readline())
        assert lines[-1], lines
    while not any(b"run.py" in _cmdline(child) for child in _children(p.pid)):  # the mode's Python has begun
        assert p.poll() is None
        time.sleep(0.01)
    os.kill(p.pid, signal.SIGINT)  # `all` alone
    rest = p.stderr.read().splitlines()
    assert p.wait(timeout=300) == 130 and (out / "synthesizer.pretrain.test.predictions").exists()
    assert rest[-1].startswith("run.sh all: stopped in synthesizer_eval_test_with_pretrain; to go on where it "
                               "stopped: "), rest

    # an `all` started afresh (it leaves a stamp) and stopped before its first save: the earlier run's
    # outputs, older than the stamp, are not done; the first mode runs (and here refuses a flag at once)
    (out / ".all-started").touch()
    p = sh(["all", "--resume"] + flags + ["--max_epochs", "0"], world, out, check=False)
    assert p.returncode == 2 and "--max_epochs must be at least 1" in p.stderr
    assert re.findall(r"^=== \./run\.sh (\w+)$", p.stderr, re.M) == ["vanilla_finetune_without_pretrain"], p.stderr

    # a trial `all --max_epochs 1` after the real runs: the first mode refuses, before any work, to replace
    # the params of its longer finished run (2 epochs, by their card), and `all` stops there; `all
    # --restart` passes --restart on, which replaces them
    model = out / "vanilla.model.params"
    before = model.read_bytes()
    stamp = out / ".all-started"
    os.utime(stamp, (1, 1))  # an old stamp: every output is newer, so `all --resume` finds all done
    p = sh(["all"] + TINY, world, out, check=False)
    assert p.returncode == 2 and re.findall(r"^=== \./run\.sh (.*)$", p.stderr, re.M) == [
        "vanilla_finetune_without_pretrain"], p.stderr
    assert p.stderr.splitlines()[-1] == (
        f"error: {model}: the params of a finished 2-epoch run (its card {model}.card.json says), which this "
        f"1-epoch run would replace; write elsewhere (OUT_DIR=FOLDER ./run.sh MODE), move the file away, or add "
        f"--restart to replace it"), p.stderr
    assert model.read_bytes() == before
    # the refused `all` changed nothing, so its stamp did not stay: `all --resume` still finds everything done
    assert os.stat(stamp).st_mtime == 1 and stamp.read_text() == ""
    p = sh(["all", "--resume"] + flags, world, out)
    assert len(re.findall(r"^=== .*: done \(", p.stderr, re.M)) == 11, p.stderr
    p = sh(["all", "--restart"] + TINY + ["--max_epochs", "0"], world, out, check=False)  # stops at its first mode
    assert re.findall(r"^=== \./run\.sh (.*)$", p.stderr, re.M) == ["vanilla_finetune_without_pretrain --restart"]
    # an `all --restart` stopped after its first modes, continued with --resume: the training modes it had not
    # made yet start over too (refused otherwise, and --resume with --restart is refused)
    stamp.write_text("restart\n")
    now = os.path.getmtime(model)
    for name in os.listdir(out):  # an earlier run's outputs, then the stamp, then what the stopped `all` made
        os.utime(out / name, (now - 100,) * 2)
    os.utime(stamp, (now - 50,) * 2)
    for name, t in (("vanilla.model.params", now - 20), ("vanilla.nopretrain.dev.predictions", now - 10),
                    ("vanilla.nopretrain.test.predictions", now - 10)):
        os.utime(out / name, (t, t))
    p = sh(["all", "--resume"] + TINY + ["--max_epochs", "0"], world, out, check=False)
    ran = re.findall(r"^=== \./run\.sh (\S+)(.*)$", p.stderr, re.M)
    assert len(ran) > 3 and ran[3] == ("vanilla_pretrain", " --restart"), p.stderr

    # the handout's spellings of two modes
    for m, made in (("vanilla_finetime_without_pretrain", "vanilla.model.params"),
                    ("synthesizer_finetrain_with_pretrain", "synthesizer.finetune.params")):
        before = os.stat(out / made).st_mtime_ns
        sh([m] + TINY + ["--restart"], world, out)
        assert os.stat(out / made).st_mtime_ns > before


def working(p):
    """The lines of `p`'s stderr up to its first progress bar (tqdm's 0% line, "?it/s]"): its mode is training. A Ctrl-C
    sent as soon as `all` names the mode can land between `all`'s check and the mode's start, where only `all`
    gets it and stops after that whole mode (a window of a fork's time, hit here under load)."""
    lines = []
    while not lines or "it/s]" not in lines[-1]:
        line = p.stderr.readline()
        assert line, f"the mode ended before training: {lines}"
        lines.append(line)
    return lines


def test_an_interrupted_all_says_how_to_go_on(world, tmp_path):
    """Ctrl-C in `all` ended in the mode's "interrupted" line alone; README and help say --resume goes on.
    Ctrl-C reaches the whole foreground group: `all`, its mode's run.sh and run.py."""
    out = tmp_path / "out"
    env = dict(os.environ, DATA_DIR=str(world), OUT_DIR=str(out), PYTHON=sys.executable)
    flags = TINY + ["--max_epochs", "500", "--seed", "3"]  # a first mode that is still working when stopped
    p = subprocess.Popen([os.path.join(ROOT, "run.sh"), "all"] + flags, cwd="/", env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines = [p.stderr.readline()]
    assert lines[0] == "=== ./run.sh vanilla_finetune_without_pretrain\n", lines
    lines += working(p)
    os.killpg(p.pid, signal.SIGINT)
    lines += p.stderr.read().splitlines()
    assert p.wait(timeout=120) == 130
    assert lines[-1] == (f"run.sh all: stopped in vanilla_finetune_without_pretrain; to go on where it stopped: "
                         f"DATA_DIR={q(world)} OUT_DIR={q(out)} {q(ROOT + '/run.sh')} all --resume "
                         f"{' '.join(map(shlex.quote, flags))}"), lines
    # without flags, the command has none (it had an empty argument, which every mode refused)
    p = subprocess.Popen([os.path.join(ROOT, "run.sh"), "all"], cwd="/", env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert p.stderr.readline() == "=== ./run.sh vanilla_finetune_without_pretrain\n"
    working(p)
    os.killpg(p.pid, signal.SIGINT)
    last = p.stderr.read().splitlines()[-1]
    assert p.wait(timeout=120) == 130 and last.endswith(f"OUT_DIR={q(out)} {q(ROOT + '/run.sh')} all --resume"), last


def group_ended(pgid, within):
    """Whether every process of the group `pgid` has ended within `within` seconds."""
    deadline = time.monotonic() + within
    while group_runs(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def group_runs(pgid):
    """Whether a process of the group `pgid` still runs. An ended one stays a zombie until its parent reaps it,
    and a mode's run.py outlives `all`, its parent: where the first process reaps no orphans (pytest itself as
    a container's PID 1, without `docker run --init`) it stays a zombie, which `killpg(pgid, 0)` still finds.
    Linux's /proc tells a zombie; elsewhere killpg alone decides."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    if not os.path.isdir("/proc/self"):
        return True
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:  # ended meanwhile
            continue
        state, _, group = stat[stat.rindex(")") + 2:].split()[:3]  # after "pid (comm) ": state, ppid, pgrp
        if int(group) == pgid and state != "Z":
            return True
    return False


def test_a_group_of_zombies_has_ended():
    """group_ended counts a process that has ended but is not yet reaped (a zombie) as ended."""
    p = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    try:
        if os.path.isdir("/proc/self"):
            deadline = time.monotonic() + 60
            while ") Z " not in Path(f"/proc/{p.pid}/stat").read_text():  # ended, not reaped: nothing waited
                assert time.monotonic() < deadline
                time.sleep(0.05)
            os.killpg(p.pid, 0)  # which killpg still finds
        assert group_ended(p.pid, 60)
    finally:
        p.wait()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        assert not group_ended(sleeper.pid, 0.3)
    finally:
        sleeper.kill()
        sleeper.wait()


def drained(stream):
    """A thread reading `stream` to its end, and the list its lines go to: a run whose stderr nobody reads blocks
    once the pipe's 64 KB are full, which a tiny run's bars (a bar an epoch) fill in about 4 s. Stuck writing,
    it also could not write its last line, and a test waiting for it to end read 'trains on' (1 in ~160 runs)."""
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(stream.read().splitlines()), daemon=True)
    reader.start()
    return reader, lines


def test_a_kill_of_run_sh_stops_the_run_it_started(world, tmp_path):
    """`kill PID` of a `./run.sh MODE` (a job run with nohup, say) ended the shell alone: its run.py trained on
    unseen, holding its params' lock, and wrote the params its user had stopped. run.sh now execs Python."""
    out = tmp_path / "out"
    env = dict(os.environ, DATA_DIR=str(world), OUT_DIR=str(out), PYTHON=sys.executable)
    p = subprocess.Popen([os.path.join(ROOT, "run.sh"), "vanilla_finetune_without_pretrain"] + TINY +
                         ["--max_epochs", "100000"], cwd="/", env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        working(p)
        reader, lines = drained(p.stderr)
        p.send_signal(signal.SIGTERM)  # to run.sh's own process only, as `kill PID` sends it
        status = p.wait(timeout=60)
        assert group_ended(p.pid, 0), "run.py trains on"
        reader.join(timeout=60)
        assert not reader.is_alive(), "the run's stderr is still open"
        assert status == 143 and lines[-1] == "terminated (SIGTERM): no output file was half-written", lines[-3:]
        assert "vanilla.model.params" not in os.listdir(out)  # (its loss log so far is kept, as .partial)
    finally:
        if not group_ended(p.pid, 0):
            os.killpg(p.pid, signal.SIGKILL)


def test_a_kill_of_all_stops_its_mode_too(world, tmp_path):
    """`kill PID` of a `./run.sh all` ended `all`'s shell (bash runs no trap while its foreground mode runs) and
    left the mode training, unseen: its run.py now stops once `all` has gone, as a SIGTERM stops it."""
    out = tmp_path / "out"
    env = dict(os.environ, DATA_DIR=str(world), OUT_DIR=str(out), PYTHON=sys.executable)
    p = subprocess.Popen([os.path.join(ROOT, "run.sh"), "all"] + TINY + ["--max_epochs", "100000"], cwd="/",
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        assert p.stderr.readline() == "=== ./run.sh vanilla_finetune_without_pretrain\n"
        working(p)
        reader, lines = drained(p.stderr)
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=60) == -signal.SIGTERM
        assert group_ended(p.pid, 60), "the mode trains on"
        reader.join(timeout=60)
        assert not reader.is_alive(), "the run's stderr is still open"
        assert lines[-1] == "terminated (SIGTERM): no output file was half-written", lines[-3:]
        assert "vanilla.model.params" not in os.listdir(out)
    finally:
        if not group_ended(p.pid, 0):
            os.killpg(p.pid, signal.SIGKILL)


def test_all_with_an_interrupted_runs_state_stops_before_any_mode(world, tmp_path):
    """Each mode refuses to start over an interrupted run's state without --resume or --restart; `all`
    says so before its first mode, not hours later at the mode that has one."""
    out = tmp_path / "out"
    out.mkdir()
    state = out / "synthesizer.pretrain.params.state"
    state.write_bytes(b"an interrupted run's")
    p = sh(["all"] + TINY, world, out, check=False)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == (f"run.sh all: {state}: the training state of an interrupted synthesizer_pretrain; add "
                        f"--resume to go on from it, or --restart to start over (the new run then replaces it)\n")
    for both in (["--resume", "--restart"], ["--resu", "--rest"]):  # abbreviated, as run.py's parser reads them
        p = sh(["all", *both] + TINY, world, out, check=False)
        assert p.returncode == 2 and "give one of them" in p.stderr
    assert sorted(os.listdir(out)) == [state.name] and state.read_bytes() == b"an interrupted run's"
    state.unlink()
    (out / "vanilla.model.params.state").mkdir()  # would fail that mode only after the ones before it
    p = sh(["all", "--restart"] + TINY, world, out, check=False)
    assert p.returncode == 2 and p.stderr == (f"run.sh all: {out / 'vanilla.model.params.state'}: a folder where "
                                              f"vanilla_finetune_without_pretrain keeps its training state; remove "
                                              f"or rename it\n")


@pytest.mark.parametrize("missing", ["wiki.txt", "birth_test_inputs.tsv"])
def test_all_checks_every_modes_input_before_the_first_mode(world, tmp_path, missing):
    """A DATA_DIR without birth_test_inputs.tsv stopped `all` only at vanilla_eval_test_without_pretrain, after the
    finetuning before it; now it stops before any mode, in one line naming the file and the four it needs, and
    makes no OUT_DIR."""
    data = tmp_path / "data"
    shutil.copytree(world, data)
    os.remove(data / missing)
    out = tmp_path / "out"
    p = sh(["all"] + TINY, data, out, check=False)
    assert p.returncode == 2 and p.stdout == "" and p.stderr == (
        f"run.sh all: {data}/{missing} not found; its modes read wiki.txt, birth_places_train.tsv, birth_dev.tsv and "
        f"birth_test_inputs.tsv from the folder DATA_DIR names (the course's starter code has the four)\n")
    assert not out.exists()


@pytest.mark.parametrize("name, line, says", [
    ("birth_test_inputs.tsv", "Where was Zoë \U0001F600 born?\n", "character '\U0001F600' (U+1F600) is not in the "
                                                                    "vocabulary"),
    ("birth_dev.tsv", "Where was Ann Bo born?\tOslo\tNorway\n", "found 3 tab-separated field(s)"),
    ("birth_places_train.tsv", "Where was " + "Ann " * 40 + "born?\tOslo\n", "more than the block size 128"),
])
def test_all_reads_every_modes_input_before_the_first_mode(world, tmp_path, name, line, says):
    """A bad line of birth_test_inputs.tsv (or of any input) stopped `all` at the mode that read it, after the
    training modes before it (hours at the course's size on a CPU); now at once, in the line that mode would give."""
    data = tmp_path / "data"
    shutil.copytree(world, data)
    with open(data / name, "a", encoding="utf-8") as f:
        f.write(line)
    lineno = (data / name).read_text(encoding="utf-8").count("\n")
    out = tmp_path / "out"
    p = sh(["all"] + TINY, data, out, check=False)
    assert p.returncode == 2 and p.stdout == "" and p.stderr.startswith(f"run.sh all: {data}/{name}:{lineno}: ")
    assert says in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert not out.exists() or os.listdir(out) == []


def test_alls_look_at_its_inputs_checks_the_flags_first_and_ignores_the_folder_it_runs_in(world, tmp_path):
    """`all --block_size 8` blamed a correct birth_places_train.tsv ("more than the block size 8; shorten the line");
    it gets the first mode's own error. A random.py in the folder `all` runs in stopped it ("shadowed"): the look
    ran as `python -c`, which puts that folder before the standard library."""
    p = sh(["all", "--block_size", "8"], world, tmp_path / "out", check=False)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "--block_size must be between" in p.stderr, p.stderr
    (tmp_path / "random.py").write_text("raise SystemExit('shadowed')\n", encoding="utf-8")
    env = dict(os.environ, DATA_DIR=str(world), OUT_DIR=str(tmp_path / "out"), PYTHON=sys.executable)
    p = subprocess.run([os.path.join(ROOT, "run.sh"), "all", "--n_head", "3"], cwd=str(tmp_path), env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "shadowed" not in p.stderr and "n_embd" in p.stderr, p.stderr  # the flags' error


def test_all_with_an_out_dir_it_cannot_write_to_is_one_line(world, tmp_path):
    """OUT_DIR a file, below a file, or a folder that cannot be written: `all` ended in mkdir's or bash's own
    words ("./run.sh: line 242: .../.all-started: Permission denied"), without what to change."""
    afile = tmp_path / "afile"
    afile.write_text("mine\n")
    p = sh(["all"] + TINY, world, afile, check=False)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == f"run.sh all: {afile} (OUT_DIR) is a file, not a folder; give OUT_DIR a folder\n"
    p = sh(["all"] + TINY, world, afile / "sub", check=False)
    assert p.returncode == 2 and p.stderr == (f"run.sh all: the folder {afile / 'sub'} (OUT_DIR) cannot be made "
                                              f"(Not a directory); give OUT_DIR a folder you can write to\n")
    assert afile.read_text() == "mine\n"
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    if os.geteuid() == 0:  # root writes into any folder, but not into /proc's
        locked = "/proc/1" if os.path.isdir("/proc/1") else None
    if locked is not None:
        p = sh(["all"] + TINY, world, locked, check=False)
        assert p.returncode == 2 and p.stderr == (f"run.sh all: the folder {locked} (OUT_DIR) is not writable; give "
                                                  f"OUT_DIR a folder you can write to\n")


def test_all_refused_in_a_folder_that_takes_no_new_file_keeps_its_stamp(world, tmp_path):
    """OUT_DIR made read-only after an earlier `all` (`chmod a-w`, or `chattr +i` for root): the stamp there is
    still writable, so `all` rewrote it, its first mode then refused the folder, and putting the earlier stamp
    back with mv failed in mv's words: exit 1, the stamp's time lost (so `all --resume` would remake every
    output) and the copy of it left in TMPDIR."""
    out = tmp_path / "out"
    out.mkdir()
    stamp = out / ".all-started"
    stamp.write_text("restart\n")
    os.utime(stamp, (1, 1))
    temp = tmp_path / "temp"
    temp.mkdir()
    if os.geteuid() == 0:  # root writes into any folder, but not into an immutable one
        if not shutil.which("chattr") or subprocess.run(["chattr", "+i", str(out)], capture_output=True).returncode:
            pytest.skip("chattr +i is refused here (a file system without flags)")
        unlock = ["chattr", "-i", str(out)]
    else:
        out.chmod(0o555)
        unlock = ["chmod", "755", str(out)]
    try:
        env = dict(os.environ, DATA_DIR=str(world), OUT_DIR=str(out), PYTHON=sys.executable, TMPDIR=str(temp))
        p = subprocess.run([os.path.join(ROOT, "run.sh"), "all"] + TINY, cwd="/", env=env, capture_output=True,
                           text=True, timeout=300)
    finally:
        subprocess.run(unlock, check=True)
    assert p.returncode == 2, p.stderr
    chmod = "" if os.geteuid() == 0 else f"make it writable (chmod u+w {out}), or "  # (immutable: no chmod helps)
    assert p.stderr.splitlines()[-1] == (f"error: {out / 'vanilla.model.params'}: the folder {out} is not writable; "
                                         f"{chmod}use another OUT_DIR (run.sh names the file)"), p.stderr
    assert stamp.read_text() == "restart\n" and os.stat(stamp).st_mtime == 1
    assert sorted(os.listdir(out)) == [".all-started"] and os.listdir(temp) == []


def test_london_baseline(world):
    p = sh(["london_baseline"], world, world)
    rows = [line.split("\t")[1] for line in open(world / "birth_dev.tsv", encoding="utf-8").read().split("\n") if line]
    assert f"Correct: {float(rows.count('London'))} out of {float(len(rows))}" in p.stdout
    p = sh(["london_baseline"], world / "missing", world, check=False)  # its input is DATA_DIR's, as the others'
    assert p.returncode == 2 and p.stderr == (f"error: {world}/missing/birth_dev.tsv: evaluation corpus not found; "
                                              f"check the path (run.sh reads the folder DATA_DIR names)\n")


def test_src_run_sh_is_the_same_entry_point(world):
    """The course keeps run.sh in src/: `cd src && ./run.sh MODE` runs the project's run.sh."""
    env = dict(os.environ, DATA_DIR=str(world), PYTHON=sys.executable)
    p = subprocess.run(["./run.sh", "london_baseline"], cwd=os.path.join(ROOT, "src"), env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout == sh(["london_baseline"], world, world).stdout


@pytest.mark.parametrize("cwd, args, files", [
    ("", ["tests/test_ask.py"], {"tests/test_ask.py"}),             # a file named runs alone
    ("src", ["../tests/test_ask.py::test_a_name_asks_the_course_question"], {"tests/test_ask.py"}),  # the caller's path
    ("src", ["tests/test_ask.py", "tests/test_oneline.py"], None),  # repo paths from anywhere (the second is absent)
    ("src", ["test_ask.py::test_a_name_asks_the_course_question"], {"tests/test_ask.py"}),  # a test file's own name
    ("src", ["-k", "test_ask or test_plots"],
     {"tests/test_ask.py", "tests/test_plots.py"}),  # none: the suite, filtered
    ("", ["-k", "data"], "suite"),  # an option's value that names a folder (data/) is still the option's
    ("", ["--deselect", "tests/test_ask.py::test_a_name_asks_the_course_question"], "suite"),
])
def test_test_mode_runs_the_files_named(cwd, args, files):
    """`./run.sh test tests/test_x.py` ran the whole suite (tests/ was always passed to pytest)."""
    env = dict(os.environ, PYTHON=sys.executable)
    p = subprocess.run([os.path.join(ROOT, "run.sh"), "test", *args, "--collect-only", "-q"],
                       cwd=os.path.join(ROOT, cwd), env=env, capture_output=True, text=True, timeout=300)
    if files is None:  # a misspelt file is pytest's own error, not a run of the whole suite
        assert p.returncode != 0 and "test_oneline.py" in p.stdout + p.stderr
    else:  # -q -q --collect-only: a "path: count" line a file
        counts = dict(line.split(": ") for line in p.stdout.splitlines() if line.startswith("tests/"))
        assert p.returncode == 0, p.stdout[-1000:]
        if files == "suite":
            assert len(counts) > 5
            if "--deselect" in args:  # the one test left out of its file
                assert int(counts["tests/test_ask.py"]) == len(ask_tests()) - 1
        else:
            assert set(counts) == files, p.stdout[-1000:]


@pytest.mark.parametrize("args, has_xdist, workers", [
    ([], True, True),                    # the README's command: the suite over up to 4 worker processes
    ([], False, False),                  # an environment without pytest-xdist: one process, as before
    (["-x"], True, False),               # any argument: one process, where every pytest option works
    (["tests/test_ask.py"], True, False),
])
def test_the_whole_suite_alone_runs_on_worker_processes(tmp_path, args, has_xdist, workers):
    """`./run.sh test` with nothing else spreads the suite with pytest-xdist where it is installed (-n auto, at
    most 4); what pytest was asked, read from a stand-in Python that records it."""
    tree = tmp_path / "tree"
    (tree / "tests").mkdir(parents=True)
    (tree / "tests" / "test_ask.py").write_text("", encoding="utf-8")
    shutil.copy(os.path.join(ROOT, "run.sh"), tree)
    record = tmp_path / "pytest-args"
    python = tmp_path / "python"  # -c CODE: imports succeed but xdist's where it is absent; -m pytest: recorded
    python.write_text(f"""#!/bin/sh
if [ "$1" = -c ]; then case "$2" in *"import xdist"*) exit {0 if has_xdist else 1} ;; esac; exit 0; fi
shift 2; printf '%s\\n' "$@" > {shlex.quote(str(record))}
""", encoding="utf-8")
    python.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("DATA_DIR", "OUT_DIR")}
    p = subprocess.run([str(tree / "run.sh"), "test", *args], cwd=tree, env=dict(env, PYTHON=str(python)),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    asked = record.read_text(encoding="utf-8").splitlines()
    assert asked[0] == "-q" and ("-n" in asked) == workers, asked
    if workers:
        assert asked[1:] == ["-n", "auto", "--maxprocesses", "4", "tests"]


def ask_tests():
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "tests/test_ask.py"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    return [line for line in p.stdout.splitlines() if "::" in line]


def test_course_data_in_src_data_is_pointed_out(world, tmp_path):
    """A course user who puts the course's files in src/data/ (its layout) is told that data/ is what
    is read and how to read theirs; DATA_DIR set says the user chose, so no note."""
    import shutil
    tree = tmp_path / "tree"
    (tree / "src" / "data").mkdir(parents=True)
    shutil.copy(os.path.join(ROOT, "run.sh"), tree)
    for name in ("london_baseline.py", "startup.py", "submission"):
        os.symlink(os.path.join(ROOT, "src", name), tree / "src" / name)
    shutil.copytree(world, tree / "data")
    (tree / "src" / "data" / "wiki.txt").write_text("Ann Bell. Born in Leeds.\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("DATA_DIR", "OUT_DIR")}
    env["PYTHON"] = sys.executable
    p = subprocess.run([str(tree / "run.sh"), "london_baseline"], cwd="/", env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.startswith("Correct:"), p.stderr
    assert p.stderr == ("run.sh: note: reading data/ (the embedded corpus), not src/data/; to use src/data/: "
                        f"DATA_DIR={q(tree / 'src/data')} {q(tree / 'run.sh')} london_baseline\n")  # as typed from /
    p = subprocess.run([str(tree / "run.sh"), "london_baseline"], cwd="/", env=dict(env, DATA_DIR=str(world)),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stderr == ""


def test_the_courses_data_paths_work_from_src():
    """The course runs its scripts in src/ with ./data/... paths (its grader reads ./data/wiki.txt as it
    is imported): src/data is a link to data/, and run.sh says nothing of it."""
    if not os.path.isdir(os.path.join(ROOT, "src", "data")):
        pytest.skip("a checkout without symbolic links (Windows without them): src/data is a text file there")
    for name in ("wiki.txt", "birth_places_train.tsv", "birth_dev.tsv", "birth_test_inputs.tsv"):
        assert os.path.samefile(os.path.join(ROOT, "src", "data", name), os.path.join(ROOT, "data", name))
    env = {k: v for k, v in os.environ.items() if k not in ("DATA_DIR", "OUT_DIR")}
    p = subprocess.run(["./run.sh", "london_baseline"], cwd=os.path.join(ROOT, "src"),
                       env=dict(env, PYTHON=sys.executable), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.startswith("Correct:") and p.stderr == "", p.stderr
    p = subprocess.run([sys.executable, "london_baseline.py", "./data/birth_dev.tsv"], cwd=os.path.join(ROOT, "src"),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.startswith("Correct:"), p.stderr


def test_relative_data_and_out_dirs_are_the_callers(world, tmp_path):
    """DATA_DIR=d ./run.sh ... run from the folder holding d reads d there, not under the repo."""
    import shutil
    shutil.copytree(world, tmp_path / "d")
    env = {k: v for k, v in os.environ.items() if k not in ("DATA_DIR", "OUT_DIR")}
    env.update(DATA_DIR="d", OUT_DIR="o", PYTHON=sys.executable)
    p = subprocess.run([os.path.join(ROOT, "run.sh"), "london_baseline"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.startswith("Correct:"), p.stderr
    p = subprocess.run([os.path.join(ROOT, "run.sh"), "vanilla_eval_dev_with_pretrain"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    # run from another folder: the hint names run.sh where it is (there is no ./run.sh here)
    assert p.returncode == 2 and "run.sh: o/vanilla.finetune.params not found, nor o/vanilla.pretrain.params, which " \
        f"it is made from; make them first with: DATA_DIR=d OUT_DIR=o {q(ROOT + '/run.sh')} vanilla_pretrain, then " \
        f"DATA_DIR=d OUT_DIR=o {q(ROOT + '/run.sh')} vanilla_finetune_with_pretrain" in p.stderr
    p = subprocess.run([os.path.join(ROOT, "run.sh"), "london_baseline", "extra"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr.startswith("run.sh: london_baseline takes no arguments (got: extra)")


def test_unknown_mode_names_the_closest_or_lists_the_modes(world, tmp_path):
    """A guess is one line (the list of 20 modes after it buried it); with no guess, the modes are listed."""
    p = sh(["vanila_pretrain"], world, tmp_path, check=False)
    assert p.returncode == 2 and p.stderr == ("run.sh: unknown mode 'vanila_pretrain'; did you mean vanilla_pretrain? "
                                              "(./run.sh help lists every mode)\n")
    p = sh(["synthesiser_eval_dev"], world, tmp_path, check=False)
    assert "did you mean synthesizer_eval_dev_with_pretrain?" in p.stderr
    p = sh(["london"], world, tmp_path, check=False)  # the start of one mode's name
    assert p.stderr.startswith("run.sh: unknown mode 'london'; did you mean london_baseline? (./run.sh help")
    p = sh(["vanilla_eval"], world, tmp_path, check=False)  # the start of four: all of them
    assert p.stderr.startswith("run.sh: unknown mode 'vanilla_eval'; did you mean vanilla_eval_dev_without_pretrain, "
                               "vanilla_eval_test_without_pretrain, vanilla_eval_dev_with_pretrain or "
                               "vanilla_eval_test_with_pretrain? (./run.sh help lists every mode)\n")
    p = sh(["vanilla"], world, tmp_path, check=False)  # the start of more than four: how many
    assert p.stderr.startswith("run.sh: unknown mode 'vanilla'; did you mean one of the 7 modes beginning vanilla "
                               "(./run.sh help lists them)?\n")
    for typed in ("VANILLA_PRETRAIN", "vanilla-pretrain"):  # the case or the separator wrong: the 20-line list
        p = sh([typed], world, tmp_path, check=False)
        assert p.returncode == 2 and p.stderr == (f"run.sh: unknown mode '{typed}'; did you mean vanilla_pretrain? "
                                                  f"(./run.sh help lists every mode)\n")
    p = sh(["xyz"], world, tmp_path, check=False)  # nothing close: no guess
    assert p.returncode == 2 and p.stderr.startswith("run.sh: unknown mode 'xyz'\nusage:")
    assert "synthesizer_eval_test_with_pretrain" in p.stderr and "deliverables" in p.stderr


def test_help_says_what_every_mode_does():
    """`./run.sh help` (and -h, --help) was an unknown mode; it names every mode with what it does."""
    script = open(os.path.join(ROOT, "run.sh"), encoding="utf-8").read()
    modes = re.search(r'^MODES="([^"]*)"', script, re.M).group(1).split()
    modes += re.search(r'^EXTRA_MODES="([^"]*)"', script, re.M).group(1).split()
    for flag in ("help", "-h", "--help"):
        p = subprocess.run([os.path.join(ROOT, "run.sh"), flag], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0 and p.stderr == "" and p.stdout.startswith("usage: ./run.sh MODE")
        listed = re.findall(r"^  (\w+)", p.stdout, re.M)
        assert sorted(listed) == sorted(modes), set(listed) ^ set(modes)
        assert all(name in p.stdout
                   for name in ("DATA_DIR", "OUT_DIR", "GPT_NUM_THREADS", "GPT_DEVICE", "PYTHON", "--resume"))


@pytest.mark.parametrize("script", ["run.sh", "src/run.sh"])
def test_sh_run_sh_runs_it_with_bash(script, tmp_path):
    """`sh run.sh help` under dash (Debian's sh) was `Syntax error: "(" unexpected`: the script is bash's.
    Read from standard input, where bash cannot be given the file, it says how to run it."""
    import shutil
    dash = shutil.which("dash")
    if dash is None:
        pytest.skip("no dash here (where sh is bash, the script runs as it is)")
    p = subprocess.run([dash, script, "help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stderr == "" and p.stdout.startswith("usage: ./run.sh MODE"), p.stderr
    with open(os.path.join(ROOT, script), encoding="utf-8") as f:
        p = subprocess.run([dash, "-s", "help"], stdin=f, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == "" and p.stderr == (
        "run.sh: a bash script; run it as ./run.sh MODE (or bash run.sh MODE)\n")


def test_bash_run_sh_needs_no_executable_bit(repo):
    """`bash run.sh all` and `bash src/run.sh MODE` ran the modes through the file's executable bit, which a
    copy from a zip may have lost: "Permission denied" at the first mode (status 126). They go through bash."""
    root, fake, calls = repo
    (root / "src").mkdir()
    (root / "src" / "run.sh").write_text(open(os.path.join(ROOT, "src", "run.sh")).read())
    for script in (root / "run.sh", root / "src" / "run.sh"):
        script.chmod(0o644)
    env = dict(os.environ, PYTHON=str(fake), CALLS=str(calls), IMPORTS_RC="0", OUT_DIR=str(root / "out"))
    p = subprocess.run(["bash", "src/run.sh", "london_baseline"], cwd=str(root), capture_output=True, text=True,
                       timeout=60, env=env)
    assert p.returncode == 0 and "denied" not in p.stderr, p.stderr
    assert any("src/london_baseline.py" in line for line in calls.read_text().splitlines())
    calls.unlink()
    p = subprocess.run(["bash", "run.sh", "all"], cwd=str(root), capture_output=True, text=True, timeout=60, env=env)
    assert "denied" not in p.stderr, p.stderr  # the stand-in python writes no params: `all` stops at a later mode
    assert any("--function=finetune --variant=vanilla" in line for line in calls.read_text().splitlines())


def test_missing_params_names_the_mode(world, tmp_path):
    p = sh(["synthesizer_eval_dev_with_pretrain"], world, tmp_path, check=False)
    assert p.returncode == 2
    dirs = f"DATA_DIR={q(world)} OUT_DIR={q(tmp_path)} {q(ROOT + '/run.sh')}"
    assert (f"make them first with: {dirs} synthesizer_pretrain, then {dirs} synthesizer_finetune_with_pretrain\n"
            ) in p.stderr
    p = subprocess.run(["./run.sh", "synthesizer_eval_dev_with_pretrain"], cwd=ROOT, capture_output=True, text=True,
                       env=dict(os.environ, DATA_DIR=str(world), OUT_DIR=str(tmp_path)), timeout=120)
    assert p.returncode == 2 and f"OUT_DIR={q(tmp_path)} ./run.sh synthesizer_finetune_with_pretrain" in p.stderr
    # OUT_DIR a file: "make it first" sent the user to a mode that fails on that folder in turn
    (tmp_path / "a-file").write_text("mine\n")
    p = sh(["synthesizer_eval_dev_with_pretrain"], world, tmp_path / "a-file", check=False)
    assert p.returncode == 2 and p.stderr == (f"run.sh: {tmp_path / 'a-file'} is a file, not a folder, so "
                                              f"{tmp_path / 'a-file' / 'synthesizer.finetune.params'} cannot be there; "
                                              f"set OUT_DIR to a folder\n")


@pytest.mark.parametrize("name, default", [("OUT_DIR", "src/submission/"), ("DATA_DIR", "data/")])
def test_a_variable_set_but_empty_is_refused(tmp_path, name, default):
    """OUT_DIR= (a mistyped $VAR) took the default without a word: the run wrote into src/submission/ (the fuzz
    audit). Refused before any work, in one line."""
    env = dict(os.environ, PYTHON=sys.executable, **{name: ""})
    p = subprocess.run([os.path.join(ROOT, "run.sh"), "vanilla_pretrain", "--max_epochs", "1"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == "" and p.stderr == (
        f"run.sh: {name} is set but empty (a variable left unset in it?); give it a folder, or unset {name} for its "
        f"default {default}\n")
    assert not os.listdir(tmp_path)


def test_a_flag_of_the_modes_own_is_refused_before_its_missing_input_is_named(world, tmp_path):
    """`vanilla_eval_dev_with_pretrain --reading_params_path P` said to make OUT_DIR's params first; made,
    the run then refused the flag itself."""
    p = sh(["vanilla_eval_dev_with_pretrain", f"--reading_params_path={tmp_path / 'p.params'}"], world, tmp_path,
           check=False)
    assert p.returncode == 2 and "make it first" not in p.stderr
    assert p.stderr.splitlines()[-1].startswith("run.py: error: --reading_params_path given twice, as ")


def test_hints_from_src_name_the_script_there(world, tmp_path):
    """`cd src && ./run.sh MODE`, as the course runs it: the hint named run.sh by its absolute path."""
    env = dict(os.environ, DATA_DIR=str(world), OUT_DIR=str(tmp_path), PYTHON=sys.executable)
    p = subprocess.run(["./run.sh", "vanilla_eval_dev_with_pretrain"], cwd=os.path.join(ROOT, "src"), env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr.endswith(" ./run.sh vanilla_finetune_with_pretrain\n"), p.stderr


def test_a_folder_named_as_the_params_is_named_as_a_folder(world, tmp_path):
    """A folder where synthesizer.finetune.params goes got "not found; make it first with ...", and that
    mode refuses a folder's path: the user went round in a loop. deliverables and the grader said
    "missing" / "not found" for a folder named as a predictions file the same way."""
    (tmp_path / "synthesizer.finetune.params").mkdir()
    p = sh(["synthesizer_eval_dev_with_pretrain"], world, tmp_path, check=False)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert f"run.sh: {tmp_path}/synthesizer.finetune.params is a folder, not a file; remove or rename it, then make " \
           f"it with: DATA_DIR={q(world)} OUT_DIR={q(tmp_path)} {q(ROOT + '/run.sh')} " \
           f"synthesizer_finetune_with_pretrain" in p.stderr
    import deliverables
    import grader
    (tmp_path / "vanilla.pretrain.dev.predictions").mkdir()
    rows = {name: (status, note) for name, status, note in deliverables.check(
        os.path.join(ROOT, "src", "submission"), str(tmp_path), str(world))}
    status, note = rows["vanilla.pretrain.dev.predictions"]
    assert status == "bad" and note.startswith("a folder, not a file; remove or rename it, then make it with "), note
    assert rows["synthesizer.finetune.params"][0] == "bad"
    result = grader.make_grader(str(world), str(tmp_path), "course").run(["1f-1-hidden"], out=None)[0]
    assert not result.passed and "vanilla.pretrain.dev.predictions is a folder, not a predictions file: remove or " \
                                  "rename it, then make it with " in result.reason, result.reason


def test_user_errors_are_one_line(world, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    sh(["synthesizer_pretrain"] + TINY, world, out)
    # synthesizer params where vanilla ones are expected
    os.replace(out / "synthesizer.pretrain.params", out / "vanilla.pretrain.params")
    p = sh(["vanilla_finetune_with_pretrain"] + TINY, world, out, check=False)
    assert p.returncode == 2
    # in run.sh's words: the mode refuses --variant (run.py's own hint, "pass --variant=synthesizer", failed)
    assert p.stderr.strip().count("\n") == 0 and ("synthesizer params, but the model is vanilla; this run.sh mode "
                                                  "runs the vanilla model; use a synthesizer mode, or give it "
                                                  "vanilla params") in p.stderr
    # a malformed line and a character outside the vocabulary
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in os.listdir(world):
        (bad / f).write_bytes((world / f).read_bytes())
    with open(bad / "birth_places_train.tsv", "a", encoding="utf-8") as f:
        f.write("Where was Nobody born? Nowhere\n")
    n = open(bad / "birth_places_train.tsv", encoding="utf-8").read().count("\n")
    p = sh(["vanilla_finetune_without_pretrain"] + TINY, bad, out, check=False)
    assert p.returncode == 2 and f"birth_places_train.tsv:{n}: expected" in p.stderr
    with open(bad / "birth_dev.tsv", "a", encoding="utf-8") as f:
        f.write("Where was 李 born?\tBeijing\n")
    sh(["vanilla_finetune_without_pretrain"] + TINY, world, out)
    p = sh(["vanilla_eval_dev_without_pretrain"] + TINY, bad, out, check=False)
    assert p.returncode == 2 and "character '李'" in p.stderr and "birth_dev.tsv:" in p.stderr
    assert not (out / "vanilla.nopretrain.dev.predictions").exists()
    # a missing corpus
    p = sh(["vanilla_pretrain"] + TINY, tmp_path / "nowhere", out, check=False)
    assert p.returncode == 2 and "wiki.txt: pretraining corpus not found; check the path (run.sh reads the " \
                                 "folder DATA_DIR names)" in p.stderr  # not the embedded corpus: no make_world
    # params trained on another corpus (another vocabulary): DATA_DIR, not the flag the mode refuses
    other = tmp_path / "other"
    other.mkdir()
    for f in os.listdir(world):
        (other / f).write_bytes((world / f).read_bytes())
    with open(other / "wiki.txt", "a", encoding="utf-8") as f:
        f.write("§¶ was born in ¤.\n")  # three characters no generated world has
    p = sh(["vanilla_eval_dev_without_pretrain"] + TINY, other, out, check=False)
    assert p.returncode == 2 and "use the same DATA_DIR (the folder of the wiki.txt) the params were trained " \
                                 "with" in p.stderr
    # an empty corpus
    (bad / "wiki.txt").write_text("\n", encoding="utf-8")
    p = sh(["vanilla_pretrain"] + TINY, bad, out, check=False)
    assert p.returncode == 2 and "wiki.txt: the pretraining corpus is empty" in p.stderr
    assert p.stderr.strip().count("\n") == 0
    # params of another model size
    p = sh(["vanilla_eval_dev_without_pretrain", "--n_embd", "32", "--n_head", "2", "--n_layer", "1"], world, out,
           check=False)
    assert p.returncode == 2 and "has shape" in p.stderr and "model size" in p.stderr
    assert "(the file looks like --n_layer 1 --n_embd 16 --block_size 128 --n_head 2)" in p.stderr  # its card's


def test_questions_read_as_the_course_reads_them(tmp_path):
    """The course's evaluation takes each raw line up to its first tab: a line without a tab (the test
    inputs) keeps its newline before the MASK, a dev line does not; CRLF reads as LF."""
    import run as driver
    from submission.dataset import DataError
    stoi = {c: i for i, c in enumerate(sorted(set("\n Where was born?ABCD\u2047")))}
    dev = tmp_path / "dev.tsv"
    dev.write_bytes(b"Where was A born?\tBa\nWhere was B born?\tBa\n")
    assert driver.read_questions(str(dev), stoi, 64) == ["Where was A born?", "Where was B born?"]
    path = tmp_path / "q.tsv"
    path.write_bytes(b"Where was B born?\r\n\nWhere was C born?\nWhere was D born?")
    assert driver.read_questions(str(path), stoi, 64) == [
        "Where was B born?\n", "Where was C born?\n", "Where was D born?"]
    del stoi["\n"]
    with pytest.raises(DataError, match=r"q.tsv:1: character '\\n'"):
        driver.read_questions(str(path), stoi, 64)


@pytest.mark.parametrize("variant", ["vanilla", "synthesizer"])
def test_dropout_flag_sets_every_dropout(variant):
    """--dropout P sets the embedding, residual and attention dropout of either variant; without it
    every dropout stays at the course's 0.1 (GPTConfig's defaults)."""
    import torch

    import run as driver
    from submission.dataset import CharCorruptionDataset
    pre = CharCorruptionDataset("Ada Quill was born in Lisbon.\nBo Li.", 17)
    base = [f"--variant={variant}", "--function=pretrain", "--pretrain_corpus_path=w", "--writing_params_path=p",
            "--n_layer", "2", "--n_head", "2", "--n_embd", "16"]
    for extra, want in (([], 0.1), (["--dropout", "0"], 0.0), (["--dropout", "0.25"], 0.25)):
        model = driver.build_model(driver.parse_args(base + extra), pre)
        rates = [m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)]
        assert len(rates) == 1 + 2 * 3 and set(rates) == {want}  # drop, then attn_drop, resid_drop, mlp's per block
    with pytest.raises(SystemExit):
        driver.parse_args(base + ["--dropout", "1"])


# ---------------------------------------------------------------------------------------------
# Setting up: run.sh's .venv, in a copy of run.sh with stand-in interpreters (no pip, no torch)
# ---------------------------------------------------------------------------------------------
FAKE_PYTHON = """#!/usr/bin/env bash
echo "$*" >> "$CALLS"
case "$*" in
  "-c "*"import pytest"*) exit "${DEV_RC:-0}" ;;       # the test requirements there, unless DEV_RC=1
  "-c "*) exit "${IMPORTS_RC:-1}" ;;                   # no torch, unless IMPORTS_RC=0
  *"/src/wheels.py "*) [ -z "${WHEELS_SAY:-}" ] || echo "$WHEELS_SAY"; exit "${WHEELS_RC:-0}" ;;
  "-m venv "*) mkdir -p "$3/bin"; cp "$0" "$3/bin/python"; exit "${VENV_RC:-0}" ;;
  "-m pip --version") exit "${PIP_RC:-0}" ;;
  "-m ensurepip --upgrade") exit "${ENSUREPIP_RC:-0}" ;;
  "-m pip install --quiet -r "*) cp "$6" "$CALLS.reqs"; exit "${INSTALL_RC:-0}" ;;  # the file, to read
esac
exit 0
"""


TORCH_CHECK = "-c import signal; signal.signal(signal.SIGINT, signal.SIG_DFL); import torch, numpy, tqdm"  # run.sh's

# the real Python for run.sh's checks (python -c), with a Ctrl-C to run.sh's whole process group as the check that
# imports CTRL_C_IN ends (atexit: after its code, where Python's own handler raises nothing); anything else (the
# mode's command) is logged, not run
PYTHON_CTRL_C_IN_CHECK = """#!/usr/bin/env bash
case "$1 $2" in
  "-c "*"$CTRL_C_IN"*) exec {python} -c "import atexit, os, signal; atexit.register(os.killpg, 0, signal.SIGINT)
$2" ;;
  "-c "*) exec {python} "$@" ;;
esac
echo "$*" >> "$CALLS"
"""


@pytest.mark.parametrize("mode, check", [("london_baseline", "import torch"), ("test", "import pytest")])
def test_a_ctrl_c_during_a_check_of_the_python_stops_run_sh(mode, check, tmp_path):
    """Without .venv, run.sh asks the Python whether it imports torch, numpy and tqdm (`test`: pytest and the
    rest). A Ctrl-C that Python took as the check ended was lost (exit 0), and one raised inside torch's import
    was swallowed there or turned into another error (exit 1: torch "missing", and run.sh made a new .venv to
    install a CUDA torch): bash, seeing a normal exit, went on. The check now dies of the Ctrl-C, and so does
    run.sh, before the mode or a .venv."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "run.sh").write_text(open(os.path.join(ROOT, "run.sh")).read())
    fake = tmp_path / "python3"
    fake.write_text(PYTHON_CTRL_C_IN_CHECK.replace("{python}", shlex.quote(sys.executable)))
    fake.chmod(0o755)
    calls = tmp_path / "calls"
    p = subprocess.run(["bash", str(root / "run.sh"), mode], cwd=str(root), capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, PYTHON=str(fake), CALLS=str(calls), CTRL_C_IN=check),
                       start_new_session=True)
    assert p.returncode == -signal.SIGINT, (p.returncode, p.stderr)
    assert not calls.exists() and not (root / ".venv").exists()


@pytest.fixture
def repo(tmp_path):
    """A folder with run.sh and requirements.txt, the four files `all` checks for in data/ and d/ (empty: only the
    stand-in python reads them), and a stand-in python3 that logs its calls."""
    root = tmp_path / "repo"
    root.mkdir()
    for folder in ("data", "d"):
        (root / folder).mkdir()
        for name in ("wiki.txt", "birth_places_train.tsv", "birth_dev.tsv", "birth_test_inputs.tsv"):
            (root / folder / name).write_text("")
    (root / "run.sh").write_text(open(os.path.join(ROOT, "run.sh")).read())
    (root / "run.sh").chmod(0o755)
    (root / "requirements.txt").write_text("torch==2.13.0\n")
    fake = tmp_path / "python3"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    return root, fake, tmp_path / "calls"


def setup_run(repo, **env):
    root, fake, calls = repo
    p = subprocess.run([str(root / "run.sh"), "bench"], cwd=str(root), capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHON=str(fake), CALLS=str(calls), **env))
    said = calls.read_text().splitlines() if calls.exists() else []
    calls.unlink(missing_ok=True)
    return p, said


def test_a_setup_stopped_part_way_is_finished_by_the_next_run(repo):
    root = repo[0]
    install = f"-m pip install --quiet -r {root}/requirements.txt"
    p, said = setup_run(repo, INSTALL_RC="1")  # .venv made, then pip fails (no network, a full disk, Ctrl-C)
    assert p.returncode == 1 and (root / ".venv/bin/python").exists()
    assert p.stderr.splitlines()[-1].startswith("run.sh: installing requirements.txt into .venv failed")
    assert "src/bench.py" not in said and not (root / ".venv/setup-finished").exists()
    p, said = setup_run(repo)  # the next run installs into that .venv, then runs
    assert p.returncode == 0 and "its setup stopped part way" in p.stderr
    assert said[-2:] == [install, "src/bench.py"] and (root / ".venv/setup-finished").exists()
    p, said = setup_run(repo)  # finished: straight to the command
    assert p.returncode == 0 and said == ["src/bench.py"]


def test_a_venv_made_before_the_setup_record_is_used_as_it_is(repo):
    """An older run.sh left no record; a .venv that imports torch, numpy and tqdm is not reinstalled
    (it may hold a CUDA build of torch, and pip may be offline)."""
    root = repo[0]
    setup_run(repo)
    (root / ".venv/setup-finished").unlink()
    p, said = setup_run(repo, IMPORTS_RC="0")
    assert p.returncode == 0 and said == [TORCH_CHECK, "src/bench.py"]
    assert (root / ".venv/setup-finished").exists()


def test_a_venv_stopped_before_pip_gets_pip_or_names_the_fix(repo):
    root = repo[0]
    setup_run(repo, INSTALL_RC="1")
    p, said = setup_run(repo, PIP_RC="1")  # no pip: ensurepip makes it, then the install
    assert p.returncode == 0 and "-m ensurepip --upgrade" in said and said[-1] == "src/bench.py"
    (root / ".venv/setup-finished").unlink()
    p, said = setup_run(repo, PIP_RC="1", ENSUREPIP_RC="1")
    assert p.returncode == 1 and "apt-get install python3-venv" in p.stderr.splitlines()[-1]
    assert "remove .venv" in p.stderr.splitlines()[-1] and "src/bench.py" not in said


def test_a_python_no_torch_wheel_fits_stops_before_the_venv(repo):
    """Python 3.15 (no torch 2.13 wheel), or 3.13 on an Intel Mac (2.2.2 stops at 3.12): pip's
    "no matching distribution" came after .venv was made with that Python. src/wheels.py's line now
    comes first, and nothing is made; a .venv half set up with such a Python is named for removal."""
    root = repo[0]
    why = ("torch has no wheel for Python 3.15 on this machine: torch 2.13.0's are for Python 3.10 to 3.14; "
           "run it with one of those, e.g. PYTHON=python3.12 ./run.sh bench")
    p, said = setup_run(repo, WHEELS_SAY=why, WHEELS_RC="3")
    assert p.returncode == 1 and p.stderr == f"run.sh: {why}\n"
    assert said == [TORCH_CHECK, f"{root}/src/wheels.py ./run.sh bench"]
    assert not (root / ".venv").exists()
    # under `all`, the command to run again is the `all` command, with the caller's flags and folders; a
    # Windows Python's \r\n does not end up inside the line
    root, fake, calls = repo
    p = subprocess.run([str(root / "run.sh"), "all", "--max_epochs", "1"], cwd=str(root), capture_output=True,
                       text=True, timeout=60, env=dict(os.environ, PYTHON=str(fake), CALLS=str(calls), OUT_DIR="o d",
                                                       WHEELS_SAY=why + "\r", WHEELS_RC="3"))
    assert p.returncode != 0 and p.stderr.endswith(f"run.sh: {why}\n"), p.stderr
    assert f"{root}/src/wheels.py OUT_DIR=o\\ d ./run.sh all --max_epochs 1" in calls.read_text().splitlines()
    calls.unlink()
    setup_run(repo, INSTALL_RC="1")  # a .venv whose install stopped part way
    p, said = setup_run(repo, WHEELS_SAY=why, WHEELS_RC="3")
    assert p.returncode == 1 and p.stderr == f"run.sh: {why} (remove .venv first: it was made with this Python)\n"
    assert not any("pip install" in line for line in said)


def test_pins_in_place_of_requirements_torch_and_numpy(repo):
    """Apple silicon before macOS 14 has no torch 2.13 wheel: run.sh installs requirements.txt without its
    torch and numpy lines, and the pins src/wheels.py names (torch 2.2.2, numpy<2) beside it."""
    root = repo[0]
    (root / "requirements.txt").write_text('# pins\ntorch==2.13.0; python_version >= "3.10"\ntorch==2.2.2; '
                                           'python_version < "3.10"\nnumpy<2; python_version < "3.10"\nnumpy\n'
                                           'tqdm\nmatplotlib\n')
    p, said = setup_run(repo, WHEELS_SAY="torch==2.2.2 numpy<2")
    assert p.returncode == 0, p.stderr
    (install,) = [line for line in said if line.startswith("-m pip install --quiet -r ")]
    assert install.endswith(" torch==2.2.2 numpy<2") and said[-1] == "src/bench.py"
    assert (repo[2].parent / "calls.reqs").read_text() == "# pins\ntqdm\nmatplotlib\n"
    assert "installing torch==2.2.2 numpy<2 in its place" in p.stderr
    # `./run.sh test`'s requirements-dev.txt includes requirements.txt: its torch is replaced there too
    (root / "requirements-dev.txt").write_text("# dev\n-r requirements.txt\npytest\nnbclient\n")
    p = subprocess.run([str(root / "run.sh"), "test"], cwd=str(root), capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHON=str(repo[1]), CALLS=str(repo[2]), DEV_RC="1",
                                WHEELS_SAY="torch==2.2.2 numpy<2"))
    assert p.returncode == 0, p.stderr
    assert (repo[2].parent / "calls.reqs").read_text() == "# dev\npytest\nnbclient\n# pins\ntqdm\nmatplotlib\n"


def test_wheels_choose_a_torch_this_python_can_install():
    """src/wheels.py: the pins or the problem for each machine, as pip's --platform dry runs found the
    wheels (torch 2.13.0: Python 3.10-3.14, not Intel Macs nor Apple silicon before macOS 14 (Darwin 23);
    torch 2.2.2: 3.8-3.12), and the torch versions are requirements.txt's."""
    import wheels
    reqs = open(os.path.join(ROOT, "requirements.txt"), encoding="utf-8").read()
    assert f"torch=={wheels.NEW[0]};" in reqs and f"torch=={wheels.OLD[0]};" in reqs
    ok = ([], None)
    assert wheels.choice("linux", "x86_64", "6.8.0-1014-aws", (3, 11)) == ok
    assert wheels.choice("linux", "x86_64", "6.8.0", (3, 9)) == ok  # 2.2.2, by requirements.txt's markers
    assert wheels.choice("win32", "AMD64", "10", (3, 14)) == ok
    assert wheels.choice("darwin", "arm64", "23.1.0", (3, 13)) == ok
    assert wheels.choice("darwin", "x86_64", "24.0.0", (3, 12)) == ok
    assert wheels.choice("darwin", "arm64", "22.6.0", (3, 12)) == (["torch==2.2.2", "numpy<2"], None)
    assert wheels.choice("linux", "x86_64", "6.8.0", (3, 15))[1] == (
        "torch has no wheel for Python 3.15 on this machine: torch 2.13.0's are for Python 3.10 to 3.14")
    assert wheels.choice("darwin", "x86_64", "22.6.0", (3, 13))[1] == (
        "torch has no wheel for Python 3.13 on an Intel Mac: torch 2.2.2's are for Python 3.8 to 3.12")
    assert wheels.choice("darwin", "arm64", "21.6.0", (3, 13))[1] == (
        "torch has no wheel for Python 3.13 on Apple silicon before macOS 14: torch 2.2.2's are for Python 3.8 to "
        "3.12 (or update macOS to 14 or later)")
    assert wheels.choice("linux", "x86_64", "6.8.0", (3, 11), "PyPy")[1] == (
        "torch has no wheel for PyPy (torch's are for 64-bit CPython)")
    assert wheels.choice("win32", "AMD64", "10", (3, 12), "CPython", 32)[1] == (
        "torch has no wheel for a 32-bit Python (torch's are for 64-bit CPython)")
    assert wheels.choice("win32", "AMD64", "10", (3, 7))[1] == (
        "torch has no wheel for Python 3.7 on this machine: torch 2.2.2's are for Python 3.8 to 3.12")
    import platform  # the script itself, on the machine at hand
    import struct
    pins, problem = wheels.choice(sys.platform, platform.machine(), platform.release(), sys.version_info[:2],
                                  platform.python_implementation(), struct.calcsize("P") * 8)
    p = subprocess.run([sys.executable, os.path.join(ROOT, "src", "wheels.py"), "./run.sh demo"],
                       capture_output=True, text=True, timeout=60)
    if problem is None:
        assert (p.returncode, p.stdout, p.stderr) == (0, "".join(" ".join(pins) + "\n" for _ in pins[:1]), "")
    else:
        assert (p.returncode, p.stdout) == (3, f"{problem}; run it with one of those, e.g. PYTHON=python3.12 "
                                               f"./run.sh demo\n")


def test_a_windows_python_s_venv_layout_is_used(repo, tmp_path):
    """Under Git Bash a Windows Python makes .venv/Scripts/python.exe, not .venv/bin/python: every run
    said ".venv/bin/python: No such file or directory", failed its install and made .venv again."""
    root, fake, calls = repo
    windows = tmp_path / "python-windows"
    windows.write_text(FAKE_PYTHON.replace('mkdir -p "$3/bin"; cp "$0" "$3/bin/python"',
                                           'mkdir -p "$3/Scripts"; cp "$0" "$3/Scripts/python.exe"'))
    windows.chmod(0o755)
    for _ in range(2):  # made and set up, then used as it is
        p = subprocess.run([str(root / "run.sh"), "bench"], cwd=str(root), capture_output=True, text=True,
                           timeout=60, env=dict(os.environ, PYTHON=str(windows), CALLS=str(calls)))
        assert p.returncode == 0, p.stderr
    said = calls.read_text().splitlines()
    assert said.count(f"-m venv {root}/.venv") == 1 and said[-2:] == ["src/bench.py", "src/bench.py"], said
    assert (root / ".venv/Scripts/python.exe").exists() and not (root / ".venv/bin").exists()


def test_a_missing_python_is_named(repo, tmp_path):
    root, _, calls = repo
    p = subprocess.run([str(root / "run.sh"), "bench"], cwd=str(tmp_path), capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, PYTHON="./no-such-python", CALLS=str(calls)))
    assert p.returncode == 1 and p.stderr.strip() == "run.sh: no Python at './no-such-python': " \
                                                     "install python3, or set PYTHON to one"


def test_without_python3_run_sh_takes_python_or_py(repo, tmp_path):
    """Windows' Git Bash has `python` or `py`, and a `python3` that only opens the Microsoft Store (exit 9009):
    run.sh said "no Python at 'python3'", or failed to make .venv with it. Without PYTHON it takes the first of
    python3, python and py that runs a Python 3."""
    root, fake, calls = repo
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    store = ("#!/bin/sh\necho 'Python was not found; run without arguments to install from the Microsoft Store' >&2\n"
             "exit 9009\n")
    env = dict(os.environ, CALLS=str(calls), IMPORTS_RC="0", PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    env.pop("PYTHON", None)
    for store_stubs, name in ((["python3"], "python"), (["python3", "python"], "py")):  # (this machine's own
        for stub in store_stubs:                                                          # python hidden too)
            (bin_dir / stub).write_text(store)
        (bin_dir / name).write_text(FAKE_PYTHON)
        for path in bin_dir.iterdir():
            path.chmod(0o755)
        p = subprocess.run([str(root / "run.sh"), "bench"], cwd=str(root), capture_output=True, text=True,
                           timeout=60, env=env)
        assert p.returncode == 0 and calls.read_text().splitlines()[-1] == "src/bench.py", p.stderr
        calls.unlink()
    (bin_dir / "python").unlink()  # the Store's python3 and a real python: a mistyped mode's nearest is named
    os.symlink(sys.executable, bin_dir / "python")
    p = subprocess.run([str(root / "run.sh"), "bnch"], cwd=str(root), capture_output=True, text=True, timeout=60,
                       env=env)
    assert p.returncode == 2 and "did you mean bench?" in p.stderr, p.stderr


@pytest.mark.parametrize("existed", [False, True])
def test_a_failed_venv_names_the_fix_and_keeps_only_what_was_there(repo, existed):
    root = repo[0]
    if existed:
        (root / ".venv").mkdir()
        (root / ".venv/mine").write_text("kept\n")
    p, said = setup_run(repo, VENV_RC="1")  # Debian without python3-venv: bin/python made, then it fails
    assert p.returncode == 1 and "apt-get install python3-venv" in p.stderr.splitlines()[-1]
    assert (root / ".venv").exists() == existed and "src/bench.py" not in said
    if existed:
        assert (root / ".venv/mine").read_text() == "kept\n"


def test_a_venv_failed_on_a_full_disk_names_the_disk_not_python3_venv(repo):
    """`python -m venv` hides ensurepip's "No space left on device": with 1.5 MB free, run.sh said to apt-get install
    python3-venv. Below 100 MiB free (df) it names the disk; above, the python3-venv fix stands."""
    root, _, calls = repo
    bin_dir = calls.parent / "bin"
    bin_dir.mkdir()
    (bin_dir / "df").write_text('#!/bin/sh\necho "Filesystem 1024-blocks Used Available Capacity Mounted on"\n'
                                'echo "tmpfs 4096 2560 $DF_FREE 63% /mnt/x"\n')
    (bin_dir / "df").chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    p, said = setup_run(repo, VENV_RC="1", DF_FREE="1536", PATH=path)
    assert p.returncode == 1 and not (root / ".venv").exists() and "src/bench.py" not in said
    assert p.stderr.splitlines()[-1].startswith(f"run.sh: '{repo[1]} -m venv' failed with 1 MiB free on the disk of "
                                                f"{root}: too little for .venv"), p.stderr
    assert "python3-venv" not in p.stderr
    p, said = setup_run(repo, VENV_RC="1", DF_FREE="2000000", PATH=path)
    assert p.returncode == 1 and "apt-get install python3-venv" in p.stderr.splitlines()[-1]
    # a .venv that was there (a link to an environment on another disk, say) is the disk looked at
    (root / ".venv").mkdir()
    (bin_dir / "df").write_text('#!/bin/sh\necho "Filesystem 1024-blocks Used Available Capacity Mounted on"\n'
                                '[ "$2" = "$DF_FOR" ] && free=1536 || free=2000000\n'
                                'echo "tmpfs 4096 2560 $free 63% /mnt/x"\n')
    p, said = setup_run(repo, VENV_RC="1", DF_FOR=f"{root}/.venv/", PATH=path)
    assert p.stderr.splitlines()[-1].startswith(f"run.sh: '{repo[1]} -m venv' failed with 1 MiB free on the disk of "
                                                f"{root}/.venv: too little for .venv"), p.stderr


def test_a_venv_link_to_a_missing_environment_names_the_link(repo, tmp_path):
    """A .venv linking to an environment since moved or removed: venv failed with "[Errno 17] File exists" and
    the df that names a full disk, given the missing folder, stopped run.sh (set -e) before its own line. The link
    is named, with its target and the fix, before anything is made; the link stays."""
    root = repo[0]
    os.symlink(tmp_path / "moved away", root / ".venv")
    p, said = setup_run(repo)
    assert p.returncode == 1 and "src/bench.py" not in said and os.path.islink(root / ".venv")
    assert p.stderr.splitlines()[-1] == (f"run.sh: .venv is a link to {q(tmp_path / 'moved away')}, which does not "
                                         f"exist (moved or removed?): remove the link (rm .venv) and run again, or "
                                         f"link .venv to an environment that exists"), p.stderr
    assert "creating .venv" not in p.stderr


def test_a_venv_that_is_a_link_is_ignored_as_a_folder_is():
    """run.sh takes a .venv that is a symbolic link (to an environment shared between checkouts) as it takes
    a folder; .gitignore's `.venv/` matched only a folder, so `git status` listed the link and `git add -A`
    committed it. Asked of a path that is not there, git takes it for a file, as it takes a link."""
    try:
        rc = subprocess.run(["git", "check-ignore", "-q", "--no-index", "no-such-folder/.venv"], cwd=ROOT).returncode
    except OSError:
        pytest.skip("no git")
    if rc == 128:
        pytest.skip("not a git checkout (a copy from a zip)")
    assert rc == 0


def test_run_sh_edited_in_place_during_a_run_finishes_as_it_began(repo):
    """An editor saving run.sh in place while a long run trains: bash would read the new bytes when
    the run's command returns; run.sh is one brace group, read whole before it starts."""
    root, fake, calls = repo
    setup_run(repo)  # the .venv and its record of a finished install
    python = root / ".venv/bin/python"
    script = root / "run.sh"
    where = shlex.quote(str(script))  # (unquoted, a TMPDIR with a space wrote a copy of run.sh beside it)
    edit = (f'if [ "$1" = src/bench.py ]; then text="$(cat {where})"; '  # a 300-byte comment put on top, in place
            f'printf "#%0300d\\n%s\\n" 0 "$text" > {where}; fi\nexit 0\n')
    python.write_text(python.read_text().replace('exit 0\n', edit))
    p, said = setup_run(repo)
    assert said == ["src/bench.py"] and script.read_text().startswith("#" + "0" * 300 + "\n#!/usr/bin/env bash")
    assert p.returncode == 0, p.stderr


WHERE_PYTHON = """#!/usr/bin/env bash
case "$*" in "-c "*) exit 0 ;; esac   # has torch, numpy and tqdm
echo "$PWD|$*" >> "$CALLS"
"""


def test_a_quoted_tilde_in_data_dir_and_out_dir_is_the_home_folder(repo, tmp_path):
    """OUT_DIR="~/runs" (quoted: the shell leaves the ~) wrote into a folder named ~ in the current one,
    while the run said ~/runs; it is the home folder, as unquoted."""
    root, _, calls = repo
    fake = tmp_path / "where-python"
    fake.write_text(WHERE_PYTHON)
    fake.chmod(0o755)
    home = tmp_path / "home"
    p = subprocess.run([str(root / "run.sh"), "vanilla_pretrain"], cwd=str(root), capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, PYTHON=str(fake), CALLS=str(calls), HOME=str(home),
                                        DATA_DIR="~/d", OUT_DIR="~/o"))
    assert p.returncode == 0, p.stderr
    assert calls.read_text().splitlines() == [
        f"{root}|src/run.py --function=pretrain --variant=vanilla --pretrain_corpus_path={home}/d/wiki.txt "
        f"--writing_params_path={home}/o/vanilla.pretrain.params"]
    # HOME unset (a cron job, env -i): set -u stopped run.sh at "HOME: unbound variable"; ~ is the account's home
    env = dict(os.environ, PYTHON=str(fake), CALLS=str(calls), DATA_DIR="~/d")
    del env["HOME"]
    p = subprocess.run([str(root / "run.sh"), "vanilla_pretrain"], cwd=str(root), capture_output=True, text=True,
                       timeout=60, env=env)
    import pwd  # (POSIX only, as bash is)
    account_home = pwd.getpwuid(os.getuid()).pw_dir
    assert p.returncode == 0 and f"--pretrain_corpus_path={account_home}/d/wiki.txt" in calls.read_text(), p.stderr


@pytest.mark.parametrize("mode, flags, env, runs", [
    ("ask", ["--params", "p.params", "Ann Bo"], {}, "src/ask.py --params p.params Ann Bo"),  # ask picks the corpus
    ("ask", ["--params", "p.params", "Ann Bo"], {"DATA_DIR": "d"}, "src/ask.py --data-dir=d --params p.params Ann Bo"),
    ("plot", ["curves", "a.log.jsonl", "--out", "c.png"], {}, "src/plots.py curves a.log.jsonl --out c.png"),
    ("plot", ["attention", "--params", "p", "--question", "Ann Bo", "--out", "a.png"], {"DATA_DIR": "d"},
     "src/plots.py attention --pretrain_corpus_path=d/wiki.txt --params p --question Ann Bo --out a.png"),
    ("demo", [], {}, "src/demo.py"),
    # OUT_DIR holds the course modes' params, which the demo's files of the same names would replace
    ("demo", ["--seed", "1"], {"DATA_DIR": "d", "OUT_DIR": "o"}, "src/demo.py --data-dir=d --seed 1"),
    ("bench", ["--quick"], {"DATA_DIR": "d"}, "src/bench.py --data-dir=d --quick"),
    # the deliverables are OUT_DIR's files, checked against DATA_DIR's
    ("deliverables", [], {}, "src/deliverables.py --submission-dir={R}src/submission --data-dir={R}data"),
    ("deliverables", ["--zip", "s.zip"], {"DATA_DIR": "d", "OUT_DIR": "o"},
     "src/deliverables.py --submission-dir=o --data-dir=d --zip s.zip"),
    # (security audit) a folder whose name starts with "-" is the flag's value, not a flag: one argument each
    ("deliverables", [], {"DATA_DIR": "-d", "OUT_DIR": "-o"}, "src/deliverables.py --submission-dir=-o --data-dir=-d"),
    ("memorised", [], {"DATA_DIR": "-d"}, "src/memorised.py --data-dir=-d"),
    ("plot", ["attention", "--params", "p"], {"DATA_DIR": "-d"},
     "src/plots.py attention --pretrain_corpus_path=-d/wiki.txt --params p"),
    ("vanilla_pretrain", ["--max_epochs", "1"], {"OUT_DIR": "o"},
     "src/run.py --function=pretrain --variant=vanilla --pretrain_corpus_path={R}data/wiki.txt "
     "--writing_params_path=o/vanilla.pretrain.params --max_epochs 1"),
])
def test_paths_are_the_callers_wherever_run_sh_is_called_from(repo, tmp_path, mode, flags, env, runs):
    """Python runs in the caller's folder, so a relative path in a flag (`cd src && ./run.sh ask --params
    ../runs/...`) means what the caller meant: it was read from the repo before. DATA_DIR and OUT_DIR
    reach the demo and the bench too."""
    root, _, calls = repo
    fake = tmp_path / "where-python"
    fake.write_text(WHERE_PYTHON)
    fake.chmod(0o755)
    (root / "src").mkdir()
    clean = {k: v for k, v in os.environ.items() if k not in ("DATA_DIR", "OUT_DIR")}
    for cwd, prefix in ((root / "src", f"{root}/"), (root, "")):
        p = subprocess.run([str(root / "run.sh"), mode] + flags, cwd=str(cwd), capture_output=True, text=True,
                           timeout=60, env=dict(clean, PYTHON=str(fake), CALLS=str(calls), **env))
        assert p.returncode == 0, p.stderr
        said = calls.read_text().splitlines()
        calls.unlink()
        assert said == [f"{cwd}|{prefix}" + runs.replace("{R}", prefix)]


W, T = "--pretrain_corpus_path=d/wiki.txt", "--finetune_corpus_path=d/birth_places_train.tsv"
DEV, TEST = "--eval_corpus_path=d/birth_dev.tsv", "--eval_corpus_path=d/birth_test_inputs.tsv"
COURSE_MODES = [  # (mode, the run.py flags it gives, the params it reads and the mode that makes them): the handout's
    ("vanilla_finetune_without_pretrain",
     f"--function=finetune --variant=vanilla {W} {T} --writing_params_path=o/vanilla.model.params", None),
    ("vanilla_eval_dev_without_pretrain",
     f"--function=evaluate --variant=vanilla {W} {DEV} --reading_params_path=o/vanilla.model.params "
     f"--outputs_path=o/vanilla.nopretrain.dev.predictions",
     ("vanilla.model.params", "vanilla_finetune_without_pretrain")),
    ("vanilla_eval_test_without_pretrain",
     f"--function=evaluate --variant=vanilla {W} {TEST} --reading_params_path=o/vanilla.model.params "
     f"--outputs_path=o/vanilla.nopretrain.test.predictions",
     ("vanilla.model.params", "vanilla_finetune_without_pretrain")),
    ("vanilla_pretrain",
     f"--function=pretrain --variant=vanilla {W} --writing_params_path=o/vanilla.pretrain.params", None),
    ("vanilla_finetune_with_pretrain",
     f"--function=finetune --variant=vanilla {W} {T} --reading_params_path=o/vanilla.pretrain.params "
     f"--writing_params_path=o/vanilla.finetune.params", ("vanilla.pretrain.params", "vanilla_pretrain")),
    ("vanilla_eval_dev_with_pretrain",
     f"--function=evaluate --variant=vanilla {W} {DEV} --reading_params_path=o/vanilla.finetune.params "
     f"--outputs_path=o/vanilla.pretrain.dev.predictions",
     ("vanilla.finetune.params", "vanilla_finetune_with_pretrain")),
    ("vanilla_eval_test_with_pretrain",
     f"--function=evaluate --variant=vanilla {W} {TEST} --reading_params_path=o/vanilla.finetune.params "
     f"--outputs_path=o/vanilla.pretrain.test.predictions",
     ("vanilla.finetune.params", "vanilla_finetune_with_pretrain")),
    ("synthesizer_pretrain",
     f"--function=pretrain --variant=synthesizer {W} --writing_params_path=o/synthesizer.pretrain.params", None),
    ("synthesizer_finetune_with_pretrain",
     f"--function=finetune --variant=synthesizer {W} {T} --reading_params_path=o/synthesizer.pretrain.params "
     f"--writing_params_path=o/synthesizer.finetune.params", ("synthesizer.pretrain.params", "synthesizer_pretrain")),
    ("synthesizer_eval_dev_with_pretrain",
     f"--function=evaluate --variant=synthesizer {W} {DEV} --reading_params_path=o/synthesizer.finetune.params "
     f"--outputs_path=o/synthesizer.pretrain.dev.predictions",
     ("synthesizer.finetune.params", "synthesizer_finetune_with_pretrain")),
    ("synthesizer_eval_test_with_pretrain",
     f"--function=evaluate --variant=synthesizer {W} {TEST} --reading_params_path=o/synthesizer.finetune.params "
     f"--outputs_path=o/synthesizer.pretrain.test.predictions",
     ("synthesizer.finetune.params", "synthesizer_finetune_with_pretrain")),
]


@pytest.mark.parametrize("mode, runs, reads", COURSE_MODES, ids=[m[0] for m in COURSE_MODES])
def test_each_course_mode_runs_run_py_with_the_handouts_files(repo, tmp_path, mode, runs, reads):
    """Each mode's run.py command, word for word: its function and variant, DATA_DIR's corpus files, the params it
    reads and the file it writes by the handout's names in OUT_DIR, then the caller's flags. The end-to-end run
    sees only the files made, and an eval mode that read the pretrained params in place of the finetuned ones
    still wrote predictions of the right names. Without the params it reads, it names the mode that makes them,
    and python is not started."""
    root, _, calls = repo
    fake = tmp_path / "where-python"
    fake.write_text(WHERE_PYTHON)
    fake.chmod(0o755)
    env = dict(os.environ, PYTHON=str(fake), CALLS=str(calls), DATA_DIR="d", OUT_DIR="o")
    (root / "o").mkdir()
    if reads is not None and reads[1].endswith("_finetune_with_pretrain"):
        # the mode named would stop in turn for the pretrained params: the line names both steps, in order
        v = mode.split("_")[0]
        p = subprocess.run([str(root / "run.sh"), mode, "--seed", "1"], cwd=str(root), capture_output=True, text=True,
                           timeout=60, env=env)
        assert p.returncode == 2 and p.stderr == (
            f"run.sh: o/{reads[0]} not found, nor o/{v}.pretrain.params, which it is made from; make them first with: "
            f"DATA_DIR=d OUT_DIR=o ./run.sh {v}_pretrain, then DATA_DIR=d OUT_DIR=o ./run.sh {reads[1]}\n")
        (root / "o" / f"{v}.pretrain.params").write_bytes(b"")
    if reads is not None:
        p = subprocess.run([str(root / "run.sh"), mode, "--seed", "1"], cwd=str(root), capture_output=True, text=True,
                           timeout=60, env=env)
        assert p.returncode == 2 and p.stderr == (f"run.sh: o/{reads[0]} not found; make it first with: DATA_DIR=d "
                                                  f"OUT_DIR=o ./run.sh {reads[1]}\n")
        assert not calls.exists()
        (root / "o" / reads[0]).write_bytes(b"")
    p = subprocess.run([str(root / "run.sh"), mode, "--seed", "1"], cwd=str(root), capture_output=True, text=True,
                       timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    assert calls.read_text().splitlines() == [f"{root}|src/run.py {runs} --seed 1"]


@pytest.mark.parametrize("typed, mode", [("vanilla_finetime_without_pretrain", "vanilla_finetune_without_pretrain"),
                                         ("synthesizer_finetrain_with_pretrain", "synthesizer_finetune_with_pretrain")])
def test_the_handouts_misspelt_modes_run_the_modes_they_mean(repo, tmp_path, typed, mode):
    root, _, calls = repo
    fake = tmp_path / "where-python"
    fake.write_text(WHERE_PYTHON)
    fake.chmod(0o755)
    (root / "o").mkdir()
    (root / "o" / "synthesizer.pretrain.params").write_bytes(b"")
    p = subprocess.run([str(root / "run.sh"), typed], cwd=str(root), capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHON=str(fake), CALLS=str(calls), DATA_DIR="d", OUT_DIR="o"))
    assert p.returncode == 0, p.stderr
    assert calls.read_text().splitlines() == [f"{root}|src/run.py {dict((m[0], m[1]) for m in COURSE_MODES)[mode]}"]


def test_london_baseline_scores_data_dirs_dev_set_and_refuses_arguments_it_would_drop(repo, tmp_path):
    """london_baseline scores DATA_DIR's birth_dev.tsv; it takes no arguments, and one given (a file to
    score, a flag) is refused, not dropped: the run would have scored birth_dev.tsv under the caller's file."""
    root, _, calls = repo
    fake = tmp_path / "where-python"
    fake.write_text(WHERE_PYTHON)
    fake.chmod(0o755)
    env = dict(os.environ, PYTHON=str(fake), CALLS=str(calls), DATA_DIR="d")
    p = subprocess.run([str(root / "run.sh"), "london_baseline", "mine.tsv"], cwd=str(root), capture_output=True,
                       text=True, timeout=60, env=env)
    assert p.returncode == 2 and p.stderr == ("run.sh: london_baseline takes no arguments (got: mine.tsv); it scores "
                                              "$DATA_DIR/birth_dev.tsv\n")
    assert not calls.exists()
    p = subprocess.run([str(root / "run.sh"), "london_baseline"], cwd=str(root), capture_output=True, text=True,
                       timeout=60, env=env)
    assert p.returncode == 0 and calls.read_text().splitlines() == [f"{root}|src/london_baseline.py -- d/birth_dev.tsv"]


def test_all_reads_resume_and_restart_abbreviated_as_run_py_does(repo, tmp_path):
    """run.py's parser takes --resu for --resume and --resta for --restart, and `all` reads them so too: `all
    --resu` passed --resu on to every mode, which resumed (or, with no state, trained afresh) each of them, the
    finished ones included, and left a new stamp that made every earlier output not done; `all --resta` passed
    --resta to the evaluations too. Both together are refused before any mode runs. (The stand-in python makes
    no params, so `all` stops at the second mode, which needs the first's.) A fresh `all` stopped by its first mode
    before any work leaves no stamp behind."""
    root, _, calls = repo
    fake = tmp_path / "where-python"
    fake.write_text(WHERE_PYTHON)
    fake.chmod(0o755)
    env = dict(os.environ, PYTHON=str(fake), CALLS=str(calls), DATA_DIR="d", OUT_DIR="o")
    first = f"{root}|src/run.py {COURSE_MODES[0][1]} --seed 1"

    def run_all(*flags):
        p = subprocess.run([str(root / "run.sh"), "all", *flags], cwd=str(root), capture_output=True, text=True,
                           timeout=60, env=env)
        said = calls.read_text().splitlines() if calls.exists() else []
        calls.unlink(missing_ok=True)
        return p, said

    (root / "o").mkdir()
    p, said = run_all("--resu", "--seed", "1")
    assert p.returncode == 2 and said == [first], p.stderr
    assert not (root / "o" / ".all-started").exists()  # a stopped `all` going on: no new stamp
    p, said = run_all("--resta", "--seed", "1")
    assert p.returncode == 2 and said == [first + " --restart"], p.stderr
    assert (root / "o" / ".all-started").read_text() == "restart\n"
    # a fresh `all` whose first mode stops before any work (a refused flag) changed nothing: it leaves no stamp, which
    # would make every output made before it not done for `all --resume`
    (root / "o" / ".all-started").unlink()
    failing = tmp_path / "failing-python"
    failing.write_text(WHERE_PYTHON + "exit 2\n")
    failing.chmod(0o755)
    env["PYTHON"] = str(failing)
    p, said = run_all("--seed", "1")
    assert p.returncode == 2 and said == [first] and not (root / "o" / ".all-started").exists()
    env["PYTHON"] = str(fake)
    for flags in (("--resume", "--restart"), ("--resu", "--resta")):
        p, said = run_all(*flags)
        assert p.returncode == 2 and said == [] and p.stderr == (
            "run.sh all: --resume goes on from the interrupted runs' states, --restart starts over; give one of them\n")


CONDA_ENV = {"python_version": "3.11", "sys_platform": "linux", "platform_machine": "x86_64"}


def test_every_platform_gets_one_torch_that_has_a_wheel_there():
    """torch 2.13 has no wheel for Python 3.8-3.9 nor for Intel Macs (the Mac's own python3 is 3.9):
    setup failed there. requirements.txt's markers give each platform one torch (and NumPy 1 beside
    torch 2.2), and they parse as old pips parse them (no `not`: pip 23 refused the first try)."""
    from packaging.markers import Marker
    lines = [line.split("#")[0].strip() for line in open(os.path.join(ROOT, "requirements.txt"), encoding="utf-8")]
    lines = [line for line in lines if line]
    assert all(" not " not in line.partition(";")[2] for line in lines)

    def chosen(python, platform, machine):
        env = {"python_version": python, "sys_platform": platform, "platform_machine": machine}
        picked = [req.strip() for req, _, marker in (line.partition(";") for line in lines)
                  if not marker or Marker(marker).evaluate(env)]
        return [r for r in picked if r.startswith("torch")], [r for r in picked if r.startswith("numpy")]
    assert chosen("3.11", "linux", "x86_64") == (["torch==2.13.0"], ["numpy"])
    assert chosen("3.12", "win32", "AMD64") == (["torch==2.13.0"], ["numpy"])
    assert chosen("3.12", "darwin", "arm64") == (["torch==2.13.0"], ["numpy"])
    assert chosen("3.9", "darwin", "arm64") == (["torch==2.2.2"], ["numpy<2"])
    assert chosen("3.12", "darwin", "x86_64") == (["torch==2.2.2"], ["numpy<2"])
    assert chosen("3.8", "linux", "x86_64") == (["torch==2.2.2"], ["numpy<2"])


def test_the_conda_environment_has_every_requirement():
    """src/environment.yml lacked the notebook test's nbclient and ipykernel: conda users got them only
    when `./run.sh test` installed them. Every package of requirements*.txt is there, torch at its pin."""
    from packaging.markers import Marker

    def names(path):  # as pip reads them for the conda environment's Python 3.11 on Linux
        out = set()
        for line in open(os.path.join(ROOT, path), encoding="utf-8"):
            line = line.split("#")[0].strip()
            requirement, _, marker = line.partition(";")
            if line and not line.startswith("-r") and (not marker or Marker(marker).evaluate(CONDA_ENV)):
                out.add(requirement.strip())
        return out

    wanted = names("requirements.txt") | names("requirements-dev.txt")
    env = open(os.path.join(ROOT, "src", "environment.yml"), encoding="utf-8").read()
    lines = [line.split("#")[0].strip().lstrip("- ").strip() for line in env.splitlines()]
    listed = {line.partition(";")[0].strip() for line in lines
              if not line.partition(";")[2] or Marker(line.partition(";")[2]).evaluate(CONDA_ENV)}
    pinned = {w for w in wanted if "==" in w}
    assert pinned <= listed and {"torch==2.13.0"} <= pinned
    assert {w for w in wanted if "==" not in w} <= listed, sorted(wanted - listed)
    # on an Intel Mac, requirements.txt's fallback: torch 2.2.2 beside NumPy 1
    intel_mac = dict(CONDA_ENV, sys_platform="darwin", platform_machine="x86_64")
    pip_pins = {line.partition(";")[0].strip() for line in lines
                if line.partition(";")[2] and Marker(line.partition(";")[2]).evaluate(intel_mac)}
    assert pip_pins == {"torch==2.2.2", "numpy<2"}


def test_wheels_name_only_fixes_that_help_and_an_unknown_release_is_no_old_mac(monkeypatch, capsys):
    """Mutation audit: wheels.choice's "(or update macOS ...)" is for a Python too new for torch 2.2.2, not
    one too old for any torch (3.7: a newer macOS installs nothing more); an Apple silicon Mac whose release
    platform.release() cannot tell ("") gets requirements.txt's own pins, not 2.2.2's; and `wheels.py`
    without a COMMAND names "the command", not its own path."""
    import wheels
    problem = wheels.choice("darwin", "arm64", "21.6.0", (3, 7))[1]
    assert problem == ("torch has no wheel for Python 3.7 on Apple silicon before macOS 14: torch 2.2.2's are for "
                       "Python 3.8 to 3.12")
    assert wheels.choice("darwin", "arm64", "", (3, 12)) == ([], None)
    assert wheels.choice("darwin", "arm64", "unknown", (3, 13)) == ([], None)
    monkeypatch.setattr(wheels, "choice", lambda *args: ([], "torch has no wheel for Python 3.15 on this machine"))
    assert wheels.main(["src/wheels.py"]) == 3
    assert capsys.readouterr().out == ("torch has no wheel for Python 3.15 on this machine; run it with one of those, "
                                       "e.g. PYTHON=python3.12 the command\n")


@pytest.mark.skipif(not shutil.which("flock"), reason="run.sh all locks OUT_DIR with flock(1) (util-linux)")
def test_a_second_all_in_the_same_out_dir_is_refused_naming_the_first(world, tmp_path):
    """`run.sh all` twice on one OUT_DIR (two terminals): the second stops before any mode, naming the first's
    pid, its stamp left as the first wrote it. Before the lock it said that the first's training state was "an
    interrupted" run's and to add --resume (or --restart, which replaced the first's stamp and remade the modes
    before the one the first was training)."""
    import fcntl
    out = tmp_path / "out"
    out.mkdir()
    (out / ".all-started").write_text("")
    os.utime(out / ".all-started", (1, 1))
    (out / "vanilla.model.params.state").write_bytes(b"the first all's, being saved")
    with open(out / ".all.lock", "a+") as lock:  # the first `all`
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.write("4242\n")
        lock.flush()
        for flags in ([], ["--restart"], ["--resume"]):
            p = sh(["all", *flags] + TINY, world, out, check=False)
            assert p.returncode == 2 and p.stdout == "" and p.stderr == (
                f"run.sh all: another ./run.sh all (pid 4242) is running in {out} (OUT_DIR) now ({out / '.all.lock'} "
                f"is locked); wait for it to end, or use another OUT_DIR\n")
        assert (out / ".all.lock").read_text() == "4242\n"
    assert os.stat(out / ".all-started").st_mtime == 1
    assert sorted(os.listdir(out)) == [".all-started", ".all.lock", "vanilla.model.params.state"]


@pytest.mark.skipif(not shutil.which("flock"), reason="run.sh all locks OUT_DIR with flock(1) (util-linux)")
def test_links_laid_at_alls_lock_and_stamp_are_never_written_through(world, tmp_path):
    """(security audit) With links laid at $OUT_DIR/.all.lock and .all-started (by anyone who can write in
    OUT_DIR), `all` wrote its pid into the one's target and emptied the other's."""
    out, victims = tmp_path / "out", tmp_path / "victims"
    out.mkdir()
    victims.mkdir()
    for name in ("lock", "stamp"):
        (victims / name).write_text(f"the {name} victim's\n")
    os.symlink(victims / "lock", out / ".all.lock")
    os.symlink(victims / "stamp", out / ".all-started")
    p = sh(["all", "--n_layer", "-1"], world, out, check=False)  # refused at its first mode
    assert p.returncode == 2 and "--n_layer" in p.stderr, p.stderr
    assert [(victims / n).read_text() for n in ("lock", "stamp")] == ["the lock victim's\n", "the stamp victim's\n"]


@pytest.mark.skipif(not shutil.which("flock"), reason="run.sh all reads run.py's locks with flock(1) (util-linux)")
def test_all_while_a_run_trains_into_one_of_its_params_names_that_run(world, tmp_path):
    """`./run.sh vanilla_pretrain` in one terminal, `./run.sh all` in another: the live run's state is not an
    interrupted run's ("add --resume to go on from it" led to the lock refusal at that mode, after `all --resume`
    or `--restart` had remade the modes before it); `all` stops before any mode, naming the run, in the words of
    run.py's lock. A lock file a killed run left behind locks nothing, and is no reason to stop."""
    from submission.locks import training_lock
    out = tmp_path / "out"
    out.mkdir()
    params = out / "vanilla.pretrain.params"
    (out / "vanilla.pretrain.params.state").write_bytes(b"the live run's")
    (out / "vanilla.model.params.lock").write_text("999999999\n")  # a run killed outright: nobody holds it
    with training_lock(str(params)):
        for flags in ([], ["--restart"], ["--resume"]):
            p = sh(["all", *flags] + TINY, world, out, check=False)
            assert p.returncode == 2 and p.stdout == "" and p.stderr == (
                f"run.sh all: {params}: another run (pid {os.getpid()}) is training into it now ({params}.lock is "
                f"locked); wait for it to end, or use another OUT_DIR\n"), p.stderr
    assert sorted(os.listdir(out)) == ["vanilla.model.params.lock", "vanilla.pretrain.params.state"]


@pytest.mark.skipif(not shutil.which("flock"), reason="run.sh all locks OUT_DIR with flock(1) (util-linux)")
@pytest.mark.parametrize("case", ["OUT_DIR there", "--resume", "OUT_DIR made by all", "lock file replaced",
                                  "a run's lock unopened"])
def test_the_modes_of_all_do_not_hold_its_lock(world, tmp_path, case):
    """`all` holds $OUT/.all.lock on its own descriptor (9), closed for its modes: a mode's run.py (or a process
    it leaves behind) that held it would keep the lock after an `all` killed outright, and the next `all` would be
    told that another `all` is running rather than that a run trains into its params. While a mode runs the lock
    is held and holds the pid a second `all` names: with --resume, in an OUT_DIR that `all` made, and when the
    file was replaced between its open and its flock (an `all` ending then removes the file it locked: the lock
    is taken on the one there now). It goes when `all` ends, a mode's failure too. A run's <params>.lock that
    flock(1) cannot open (its exit status not 1) is no live run's, and no reason to stop."""
    hook = tmp_path / "hook"
    hook.mkdir()
    log = tmp_path / "seen"
    out = tmp_path / "out"
    lock_file = out / ".all.lock"
    # only the mode's run.py stops: run.sh's own checks of its Python (has_requirements, wheels.py, in a checkout
    # without .venv/) run before it under the same variable, and a hook stopping them fails the set-up instead
    (hook / "sitecustomize.py").write_text(f"""import fcntl, os, sys
if os.environ.get("RUN_PY_SHARED_FLAGS") and os.path.basename(sys.argv[0]) == "run.py":  # `all` sets it for its modes
    try:
        os.fstat(9)
        fd9 = "fd 9 open"
    except OSError:
        fd9 = "fd 9 closed"
    try:
        with open({str(lock_file)!r}) as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = "unlocked"
            except OSError:
                held = "locked"
            held += f", pid {{lock.read().strip().isdigit()}}"
    except OSError:
        held = "no lock file"
    with open({str(log)!r}, "w") as f:
        f.write(f"{{fd9}}, {{held}}")
    os._exit(3)
""")
    env = dict(os.environ, DATA_DIR=str(world), OUT_DIR=str(out), PYTHON=sys.executable, PYTHONPATH=str(hook))
    if case != "OUT_DIR made by all":
        out.mkdir()
    if case == "lock file replaced":  # flock(1) of `all`'s first try (--resume: its one): the file is replaced first
        tools = tmp_path / "bin"
        tools.mkdir()
        (tools / "flock").write_text(f"""#!/bin/sh
if [ "$1 $2" = "-n 9" ] && [ ! -e {shlex.quote(str(tmp_path / "once"))} ]; then
  : > {shlex.quote(str(tmp_path / "once"))}; rm -f {shlex.quote(str(lock_file))}; : > {shlex.quote(str(lock_file))}
fi
exec {shlex.quote(shutil.which("flock"))} "$@"
""")
        (tools / "flock").chmod(0o755)
    if case == "a run's lock unopened":  # held_by's flock(1): the status of a file it cannot open (EX_NOINPUT)
        (out / "vanilla.model.params.lock").write_text("4242\n")
        tools = tmp_path / "bin"
        tools.mkdir()
        (tools / "flock").write_text(f"""#!/bin/sh
case "$2" in *.params.lock) exit 66 ;; esac
exec {shlex.quote(shutil.which("flock"))} "$@"
""")
        (tools / "flock").chmod(0o755)
    if case in ("lock file replaced", "a run's lock unopened"):
        env["PATH"] = f"{tools}{os.pathsep}{env['PATH']}"
    flags = ["--resume"] if case in ("--resume", "lock file replaced") else []  # --resume: one take_all_lock
    p = subprocess.run([os.path.join(ROOT, "run.sh"), "all"] + flags + TINY, cwd="/", env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 3 and log.read_text() == "fd 9 closed, locked, pid True", (p.returncode, p.stderr[-2000:])
    assert not lock_file.exists() and (tmp_path / "once").exists() == (case == "lock file replaced")

"""Ctrl-C at the awkward moments: while a command starts, inside a file write, between the params
and the loss log, and a second Ctrl-C while the first one is being answered.

Each case raises SIGINT at a chosen point (signal.raise_signal runs the handler at once, in the
main thread), so none depends on timing; one more sends Ctrl-Cs at random moments, and fails only if
one is lost, whatever the timing. The grader's case is in test_grader.py.

Run:  python -m pytest -q tests/test_interrupts.py
"""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch
from torch.utils.data import TensorDataset

from submission import GPT, GPTConfig, Trainer, TrainerConfig, helper
from submission import cli, files, interrupts
from submission.dataset import DataError

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
STARTING = "prog: interrupted while starting; nothing was written\n"


def starting(body, tmp_path):
    """Run `body` inside startup.interruptible_start("prog") in a fresh interpreter; (status, out, err)."""
    script = textwrap.dedent("""
        import signal, sys
        sys.path.insert(0, {src!r})
        from startup import interruptible_start
        with interruptible_start("prog"):
        {body}
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # given back
        open({marker!r}, "w").close()
        print("went on")
    """).format(src=SRC, marker=str(tmp_path / "went-on"), body=textwrap.indent(textwrap.dedent(body), "    "))
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("body", [
    "signal.raise_signal(signal.SIGINT)\nimport json",  # the imports go on to their end, then it stops
    "signal.raise_signal(signal.SIGINT)\nraise ImportError('a failed import')",  # however they end
    # a second Ctrl-C stops it at once (a second KeyboardInterrupt, raised while the first was answered, was
    # a traceback; one raised inside torch's C++ import code, an abort)
    "signal.raise_signal(signal.SIGINT)\nsignal.raise_signal(signal.SIGINT)\nraise AssertionError('not reached')",
    # (mutation audit: nothing after the second Ctrl-C runs; the exception above ended the start either way)
    "signal.raise_signal(signal.SIGINT)\nsignal.raise_signal(signal.SIGINT)\nprint('not reached', flush=True)",
    "try:\n    signal.raise_signal(signal.SIGINT)\nexcept KeyboardInterrupt:\n    pass",  # an import swallows it
    "try:\n    signal.raise_signal(signal.SIGINT)\nexcept KeyboardInterrupt:\n    pass\n"
    "raise ImportError('cannot load module more than once per process')",  # a half-imported module
])
def test_ctrl_c_while_starting_stops_with_one_line(body, tmp_path):
    status, out, err = starting(body, tmp_path)
    assert (status, out, err) == (130, "", STARTING)
    assert not (tmp_path / "went-on").exists()


def test_a_spawned_worker_stopped_while_starting_is_silent():
    """On macOS and Windows DataLoader workers start with "spawn" and import the entry point again; a
    Ctrl-C reaches them too, and each said "interrupted while starting" after the program's own line."""
    code = textwrap.dedent("""
        import multiprocessing, sys
        sys.path.insert(0, {src!r})
        import startup
        if __name__ == "__main__":
            worker = multiprocessing.get_context("spawn").Process(target=startup._stop, args=("run.py",))
            worker.start()
            worker.join()
            print(worker.exitcode, flush=True)
            startup._stop("run.py")
    """).format(src=SRC)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=SRC))
    said = "run.py: interrupted while starting; nothing was written\n"
    assert (p.returncode, p.stdout, p.stderr) == (130, "130\n", said)


def test_a_start_without_ctrl_c_goes_on_with_the_handler_it_had(tmp_path):
    status, out, err = starting("import json\nassert signal.getsignal(signal.SIGINT) is not signal.default_int_handler",
                                tmp_path)
    assert (status, out, err) == (0, "went on\n", "") and (tmp_path / "went-on").exists()
    status, _, err = starting("raise ImportError('no module named torch')", tmp_path / "x")
    assert status == 1 and "ImportError: no module named torch" in err and STARTING not in err


def test_a_ctrl_c_ignored_from_the_start_stays_ignored_while_starting(tmp_path):
    """A script's background job starts with SIGINT ignored: a Ctrl-C meant for the foreground job neither
    stops its start nor leaves a handler of the start's behind."""
    script = textwrap.dedent("""
        import signal, sys
        sys.path.insert(0, {src!r})
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        from startup import interruptible_start
        with interruptible_start("prog"):
            signal.raise_signal(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        print("went on")
    """).format(src=SRC)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout, p.stderr) == (0, "went on\n", "")


CTRL_C_AT_IMPORT = """
import runpy, signal, sys
module, script = sys.argv[1:3]
class CtrlCAt:  # presses Ctrl-C as `module` starts loading
    def find_spec(self, name, path=None, target=None):
        if name == module:
            signal.raise_signal(signal.SIGINT)
        return None
sys.meta_path.insert(0, CtrlCAt())
sys.argv = sys.argv[2:]
runpy.run_path(script, run_name="__main__")
"""


@pytest.mark.parametrize("script, module, args", [
    ("run.py", "torch", []), ("demo.py", "torch", []), ("london_baseline.py", "torch", []),
    ("memorised.py", "torch", []), ("bench.py", "torch", []), ("grader.py", "torch", []), ("ask.py", "torch", []),
    ("deliverables.py", "torch", []),
    ("plots.py", "matplotlib", ["curves", "a.log.jsonl", "--out", "a.png"]),
])
def test_every_entry_point_stops_at_a_ctrl_c_while_loading(script, module, args, tmp_path):
    p = subprocess.run([sys.executable, "-c", CTRL_C_AT_IMPORT, module, os.path.join(SRC, script), *args],
                       capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    prog = "grader" if script == "grader.py" else script
    assert (p.returncode, p.stdout, p.stderr) == (130, "", f"{prog}: interrupted while starting; nothing was written\n")
    assert os.listdir(tmp_path) == []


CTRL_C_AT_FIRST_PRINT = """
import builtins, runpy, signal, sys
real_print = builtins.print
def press(*args, **kwargs):  # presses Ctrl-C as the program prints its first line
    builtins.print = real_print
    signal.raise_signal(signal.SIGINT)
builtins.print = press
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.parametrize("script", ["dataset.py", os.path.join("submission", "dataset.py")])
def test_the_dataset_script_stops_at_a_ctrl_c_while_loading_or_printing(script, tmp_path):
    """`python src/submission/dataset.py namedata` (and CS224N's `python src/dataset.py`) load torch at their
    top, outside the guard of the other entry points: a Ctrl-C then was a KeyboardInterrupt traceback, and so
    was one while the examples were made and printed."""
    p = subprocess.run([sys.executable, "-c", CTRL_C_AT_IMPORT, "torch", os.path.join(SRC, script), "namedata"],
                       capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert (p.returncode, p.stdout, p.stderr) == (130, "",
                                                  "dataset.py: interrupted while starting; nothing was written\n")
    p = subprocess.run([sys.executable, "-c", CTRL_C_AT_FIRST_PRINT, os.path.join(SRC, script), "namedata"],
                       capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert (p.returncode, p.stdout, p.stderr) == (130, "", "interrupted\n")
    assert os.listdir(tmp_path) == []


WITHOUT_MODULE = """
import runpy, sys
module, script = sys.argv[1:3]
class Hide:  # as a Python without `module` (.venv not activated) would find it
    def find_spec(self, name, path=None, target=None):
        if name == module:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Hide())
sys.argv = sys.argv[2:]
runpy.run_path(script, run_name="__main__")
"""


@pytest.mark.parametrize("script, module", [  # the grader starts with torch alone (its tests import the rest)
    (s, m) for s in ("run.py", "demo.py", "london_baseline.py", "memorised.py", "bench.py", "grader.py", "ask.py",
                     "deliverables.py") for m in ("torch", "tqdm") if (s, m) != ("grader.py", "tqdm")]
    + [("dataset.py", "torch"), (os.path.join("submission", "dataset.py"), "torch")])
def test_every_entry_point_started_without_a_requirement_says_so_in_one_line(script, module, tmp_path):
    """`python3 src/grader.py` outside the .venv run.sh made ended in a ModuleNotFoundError traceback;
    so did any entry point started with Ctrl-C ignored (a script's background job: `run.py ... &`)."""
    ignored = script in ("run.py", "grader.py")  # two of them also with SIGINT ignored from the start
    p = subprocess.run([sys.executable, "-c", WITHOUT_MODULE, module, os.path.join(SRC, script)],
                       capture_output=True, text=True, timeout=120, cwd=str(tmp_path),
                       preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignored else None)
    prog = "grader" if script == "grader.py" else os.path.basename(script)
    assert p.returncode == 1 and p.stdout == "" and p.stderr.count("\n") == 1, p.stderr
    assert p.stderr.startswith(f"{prog}: this Python ({sys.executable}) has no {module}; ")
    assert os.listdir(tmp_path) == []


def test_a_missing_requirement_names_the_venv_s_own_layout(tmp_path, monkeypatch):
    """A Windows Python's .venv keeps activate in Scripts/, not bin/ (run.sh under Git Bash uses either):
    the line named .venv/bin/activate there, and fell back to "run.sh sets one up" beside a .venv."""
    import startup
    monkeypatch.setattr(startup, "ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for folder in ("bin", "Scripts"):
        venv = tmp_path / ".venv"
        (venv / folder).mkdir(parents=True)
        (venv / folder / "activate").write_text("")
        line = startup.missing_requirement("run.py", "torch")
        activate = os.path.join(".venv", folder, "activate")
        assert line.endswith(f"has no torch; activate the environment run.sh made (. {activate}) "
                             "and run it again"), line
        import shutil
        shutil.rmtree(venv)
    # (mutation audit of _shown) only a script in the current folder is written ./run.sh, to run it; a file
    # read (requirements.txt) is named as typed; a .venv without an activate (half made) is none to activate
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    assert startup.missing_requirement("run.py", "torch").endswith(
        "has no torch; ./run.sh sets one up on its first run, or install requirements.txt into this Python")
    monkeypatch.setattr(sys, "prefix", str(tmp_path / ".venv"))  # the .venv's own Python, without torch
    python = os.path.join(".venv", "bin", "python")
    assert startup.missing_requirement("run.py", "torch").endswith(
        f"has no torch; run.sh's .venv is incomplete: {python} -m pip install -r requirements.txt")
    # a checkout at a path with a space, named from above it: quoted, so that the hint pastes as shown
    spaced = tmp_path / "First Last"
    (spaced / ".venv" / "bin").mkdir(parents=True)
    (spaced / ".venv" / "bin" / "activate").write_text("")
    monkeypatch.setattr(startup, "ROOT", str(spaced))
    monkeypatch.setattr(sys, "prefix", sys.base_prefix)
    assert startup.missing_requirement("run.py", "torch").endswith(
        "has no torch; activate the environment run.sh made (. 'First Last/.venv/bin/activate') and run it again")


def test_a_missing_module_that_is_no_requirement_is_not_hidden(tmp_path):
    status, _, err = starting("import no_such_module_here", tmp_path)
    assert status == 1 and "ModuleNotFoundError: No module named 'no_such_module_here'" in err


def params_and_a_signalled_write(tmp_path, signum):
    """(a params file, its bytes, a write callback that raises `signum` halfway, the list it marks
    when it has finished)."""
    path = tmp_path / "model.params"
    files.atomic_torch_save({"w": torch.zeros(3)}, str(path))
    finished = []

    def write(f):
        f.write(b"new bytes, part one; ")
        signal.raise_signal(signum)  # held: the write goes on, then is thrown away
        f.write(b"part two")
        finished.append(True)

    return path, path.read_bytes(), write, finished


def test_ctrl_c_inside_a_write_keeps_the_old_file(tmp_path):
    """A KeyboardInterrupt inside torch.save's zip writer ended in a second error (exit 1): the write is
    finished with Ctrl-C held, then thrown away, and the interrupt raised."""
    path, before, write, finished = params_and_a_signalled_write(tmp_path, signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        files._atomic(str(path), write)
    assert finished == [True] and path.read_bytes() == before and os.listdir(tmp_path) == ["model.params"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is given back
    files._atomic(str(path), lambda f: f.write(b"written"))  # and without Ctrl-C, a write goes through
    assert path.read_bytes() == b"written"


def test_a_ctrl_c_ignored_from_the_start_stays_ignored_inside_a_write(tmp_path):
    """A script's background job starts with SIGINT ignored; holding it inside a write installed a
    handler, so a Ctrl-C meant for the foreground job threw away the new file (a finished training
    run's params) and stopped the run. The write goes through and SIGINT stays ignored."""
    path, before, write, finished = params_and_a_signalled_write(tmp_path, signal.SIGINT)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        files._atomic(str(path), write)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    assert finished == [True] and path.read_bytes() == b"new bytes, part one; part two"
    assert os.listdir(tmp_path) == ["model.params"]


def tiny_training(tmp_path):
    torch.manual_seed(0)
    x = torch.randint(1, 12, (16, 9))
    model = GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8))
    conf = TrainerConfig(max_epochs=1, batch_size=8, log_path=str(tmp_path / "m.params.log.jsonl"))
    return model, Trainer(model, TensorDataset(x, torch.roll(x, -1, 1)), None, conf)


@pytest.mark.parametrize("when", ["during the params write", "after the params write"])
def test_params_and_loss_log_change_together(when, tmp_path, monkeypatch):
    """The loss log was renamed into place before the params were written: a Ctrl-C between the two
    left a new log beside the old params. Now the params are written first, with Ctrl-C held until
    the log has followed: an interrupt leaves the old pair, or the new pair, never one of each."""
    params, log = tmp_path / "m.params", tmp_path / "m.params.log.jsonl"
    model, trainer = tiny_training(tmp_path)
    helper.train(model, str(params), trainer)
    old = params.read_bytes(), log.read_bytes()
    real_save = helper.save_trained

    def interrupted_save(obj, path):
        if when == "during the params write":
            def write(f):
                torch.save(obj, f)
                signal.raise_signal(signal.SIGINT)
            files._atomic(path, write)
        else:
            real_save(obj, path)
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(helper, "save_trained", interrupted_save)
    model, trainer = tiny_training(tmp_path)
    for p in model.parameters():  # other params, so the new file differs from the old one
        p.data.add_(1.0)
    with pytest.raises(KeyboardInterrupt):
        helper.train(model, str(params), trainer)
    new = params.read_bytes(), log.read_bytes()
    if when == "during the params write":
        assert new == old and (tmp_path / "m.params.log.jsonl.partial").exists()
    else:
        assert new[0] != old[0] and new[1] != old[1] and not (tmp_path / "m.params.log.jsonl.partial").exists()
    assert sorted(os.listdir(tmp_path)) in (["m.params", "m.params.log.jsonl"],
                                            ["m.params", "m.params.log.jsonl", "m.params.log.jsonl.partial"])


@pytest.mark.parametrize("when", ["after the params write", "during the card write"])
def test_a_ctrl_c_after_the_params_write_still_gets_their_card_and_log_written(when, tmp_path, monkeypatch):
    """run.py wrote the params' card after helper.train returned, outside the held Ctrl-C: an interrupt in
    between (hashing 100 MB of params is a wide window) left new params without a card, so loading them with
    another --n_head went unchecked. The card is written in the same held section (helper.train's describe),
    and a Ctrl-C inside its own write lets it finish (it discarded the card and left the old log)."""
    from submission.card import read_card, write_card
    params = tmp_path / "m.params"
    model, trainer = tiny_training(tmp_path)
    helper.train(model, str(params), trainer)
    old_log = (tmp_path / "m.params.log.jsonl").read_bytes()
    real_save = helper.save_trained

    def save_then_interrupt(obj, path):
        real_save(obj, path)
        signal.raise_signal(signal.SIGINT)  # held: it lands once the card and the log are in place

    def interrupted_text(path, text):
        def write(f):
            f.write(text.encode("utf-8"))
            signal.raise_signal(signal.SIGINT)
        files._atomic(path, write)

    if when == "after the params write":
        monkeypatch.setattr(helper, "save_trained", save_then_interrupt)
    else:
        monkeypatch.setattr(files, "atomic_write_text", interrupted_text)
    model, trainer = tiny_training(tmp_path)
    for p in model.parameters():  # other params, and so another log
        p.data.add_(1.0)
    with pytest.raises(KeyboardInterrupt):
        helper.train(model, str(params), trainer, describe=lambda: write_card(str(params), model, {0: "a"}))
    card = read_card(str(params))
    assert card is not None and card["n_head"] == 2  # a card of these params (its sha256 is theirs)
    assert (tmp_path / "m.params.log.jsonl").read_bytes() != old_log
    assert sorted(os.listdir(tmp_path)) == ["m.params", "m.params.card.json", "m.params.log.jsonl"]


def test_a_ctrl_c_as_the_progress_bar_is_made_leaves_no_half_made_bar(tmp_path, monkeypatch):
    """A Ctrl-C (or SIGTERM) landing inside tqdm's constructor, as each epoch makes its bar, left a bar made in
    part, whose __del__ then printed "Exception ignored ... AttributeError: 'tqdm' object has no attribute
    'pos'" after the run's last line (seen once when `kill` stopped a `./run.sh` mode). The bar is made with
    interrupts held: the Ctrl-C stops the run just after, the bar closed."""
    import gc
    from tqdm import tqdm
    real = tqdm._get_free_pos.__func__

    def interrupted(cls, instance=None):  # the point inside __init__ where the signal lands
        signal.raise_signal(signal.SIGINT)
        return real(cls, instance)

    monkeypatch.setattr(tqdm, "_get_free_pos", classmethod(interrupted))
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    model, trainer = tiny_training(tmp_path)
    open_bars = len(tqdm._instances)
    with pytest.raises(KeyboardInterrupt) as stopped:
        trainer.train()
    # and closed: a bar left open took the run's last lines on its own line and was drawn again after them
    # (`stopped` holds the traceback, and with it a bar left open)
    assert len(tqdm._instances) == open_bars and stopped.value
    gc.collect()
    assert [str(u.exc_value) for u in unraisable] == []


def test_a_ctrl_c_between_making_the_bar_and_iterating_it_closes_the_bar(tmp_path, monkeypatch):
    """tqdm's iterator closes its bar in a `finally` that a signal landing before its `try` (just after the bar
    is made) misses: the bar stayed open, took the run's last lines on its own line and was drawn again after
    "terminated (SIGTERM)". The trainer closes the bar of an epoch stopped anywhere."""
    from tqdm import tqdm
    real = tqdm.__iter__

    def interrupted(self):  # the signal lands as the iteration starts, before tqdm's try
        signal.raise_signal(signal.SIGINT)
        yield from real(self)

    monkeypatch.setattr(tqdm, "__iter__", interrupted)
    model, trainer = tiny_training(tmp_path)
    open_bars = len(tqdm._instances)
    with pytest.raises(KeyboardInterrupt) as stopped:  # (`stopped` holds the traceback: the bar stays referenced)
        trainer.train()
    assert len(tqdm._instances) == open_bars and stopped.value


def test_run_cli_ignores_ctrl_c_once_it_has_answered(capsys):
    """A second Ctrl-C used to land in the exit (death by SIGINT instead of status 130), and one after
    the work was done printed a traceback from an exit handler: run_cli ignores both."""
    def interrupted():
        raise KeyboardInterrupt

    for keep_working, said in ((True, "interrupted: no output file was half-written\n"),
                               (False, "interrupted\n")):  # ask, bench, memorised write no file: no promise
        with pytest.raises(SystemExit) as stop:
            cli.run_cli(interrupted, keep_working=keep_working)
        assert stop.value.code == 130 and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert capsys.readouterr().err == said
        signal.signal(signal.SIGINT, signal.default_int_handler)
    assert cli.run_cli(lambda: 7) == 7 and signal.getsignal(signal.SIGINT) is signal.SIG_IGN


SECOND_CTRL_C = """
import signal, sys
sys.path.insert(0, {src!r})
from submission.cli import run_cli


def bar():  # as tqdm's bar iterates: its generator, dropped as the first Ctrl-C leaves main, closes the bar
    try:
        while True:
            yield
    finally:
        signal.raise_signal(signal.SIGINT)  # the second Ctrl-C, as the bar closes
        print("bar closed", file=sys.stderr)


def main():
    for _ in bar():
        signal.raise_signal(signal.SIGINT)  # the first


run_cli(main, keep_working=True)
"""


def test_a_second_ctrl_c_does_not_interrupt_the_first_s_unwinding(tmp_path):
    """An impatient user's second Ctrl-C landed while the first unwound the training loop: inside tqdm's bar,
    closed as its generator was dropped, Python printed "Exception ignored in: <generator object
    tqdm.__iter__>" and a traceback before the run's own lines (3 of 40 runs, two Ctrl-Cs 0-200 ms apart, a
    small model training). run_cli's handler ignores a Ctrl-C within a second of the one that raised."""
    script = tmp_path / "second.py"
    script.write_text(SECOND_CTRL_C.format(src=SRC))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stderr) == (130, "bar closed\ninterrupted: no output file was half-written\n")


def test_a_ctrl_c_swallowed_by_library_code_leaves_a_later_one_working(monkeypatch, capsys):
    """Library code can swallow a KeyboardInterrupt (15 of 30 Ctrl-Cs 0.17-0.26 s into `python -c "import torch"`,
    as torch imports numpy, ended it with exit 0), and the run goes on: a Ctrl-C pressed again at once is still the
    same stop, ignored, but one pressed later stops the run, where ignoring every Ctrl-C after the first left
    no way to stop it but a kill."""
    clock = [100.0]
    monkeypatch.setattr(cli, "_clock", lambda: clock[0])
    reached = []

    def main():
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            pass  # swallowed
        signal.raise_signal(signal.SIGINT)  # pressed again at once: ignored
        reached.append("after the second")
        clock[0] += cli.SAME_STOP_S
        signal.raise_signal(signal.SIGINT)  # a second later: stops the run
        reached.append("after the third")

    try:
        with pytest.raises(SystemExit) as stop:
            cli.run_cli(main, keep_working=True)
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    assert stop.value.code == 130 and reached == ["after the second"]
    assert capsys.readouterr().err == "interrupted: no output file was half-written\n"


def test_sigterm_stops_like_ctrl_c_and_is_held_inside_a_write(tmp_path, capsys):
    """`timeout`, a job scheduler or `docker stop` send SIGTERM: it killed the run at once, leaving the
    write's temporary file beside the params. Under run_cli it is held inside a write, like Ctrl-C, and
    ends the run with one line and status 143."""
    path, before, write, finished = params_and_a_signalled_write(tmp_path, signal.SIGTERM)

    def main():
        files._atomic(str(path), write)
        raise AssertionError("not reached")

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a background job's Ctrl-C is ignored; SIGTERM still stops it
    try:
        with pytest.raises(SystemExit) as stop:
            cli.run_cli(main, keep_working=True)  # as run.py runs it
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    assert stop.value.code == 143 and finished == [True]
    assert capsys.readouterr().err == "terminated (SIGTERM): no output file was half-written\n"
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["model.params"]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # given back


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_error_raised_while_a_stop_unwinds_still_ends_in_the_stop_s_line(signum, capsys):
    """`timeout` or a job scheduler signals the whole group: DataLoader workers die of the SIGTERM and torch's
    SIGCHLD handler raised "DataLoader worker ... killed by signal: Terminated" over the KeyboardInterrupt,
    so the run ended in exit 1 and a traceback (a helper saw 4 of 12 such runs on CUDA's default workers)."""
    def main():
        try:
            signal.raise_signal(signum)  # SIGTERM through run_cli's handler, SIGINT through Python's
        finally:
            raise RuntimeError("DataLoader worker (pid(s) 1234) exited unexpectedly")

    try:
        with pytest.raises(SystemExit) as stop:
            cli.run_cli(main, keep_working=True)
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    what, status = ("terminated (SIGTERM)", 143) if signum == signal.SIGTERM else ("interrupted", 130)
    assert stop.value.code == status
    assert capsys.readouterr().err == f"{what}: no output file was half-written\n"


class _SignalledAsWritten:
    """stderr that sends this process `signum` as the first line is written to it: a stop arriving just as a
    run ends in its error (torchrun's SIGTERM, as a collective fails on the process that stopped first)."""

    def __init__(self, signum):
        self.signum, self.text, self.sent = signum, [], False

    def write(self, text):
        self.text.append(text)
        if not self.sent:
            self.sent = True
            os.kill(os.getpid(), self.signum)  # its Python handler runs at the next bytecode, inside this write
        return len(text)

    def flush(self):
        pass


def _how_run_cli_ends(error, keep_working):
    """What run_cli raised as it ended a main that raises `error` (SystemExit, or the KeyboardInterrupt that would
    be a traceback), with SIGINT and SIGTERM set back to Python's defaults afterwards."""
    def main():
        raise error
    try:
        cli.run_cli(main, keep_working=keep_working)
    except BaseException as e:  # noqa: BLE001 - a KeyboardInterrupt must not end the test session
        return e
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    return None


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("error, line, status", [
    (DataError("w.txt: missing"), "error: w.txt: missing\n", 2),
    (RuntimeError("Connection closed by peer [127.0.0.1]:1"), "error: process 1 of 2 stopped because another "
     "process of this torchrun run stopped first: that process's error says why\n", 1),
])
def test_a_stop_arriving_as_the_run_ends_in_its_error_adds_no_traceback(monkeypatch, signum, error, line, status):
    """The error's one line and status stand: the stop raised KeyboardInterrupt inside the handler that printed
    the line, and it left run_cli as a traceback instead of the exit (rank 1 of tests/test_ddp.py's torchrun run:
    2 of about 100 runs on a 2-core Xeon, and 6 of 6 with that line slowed down). The SIGTERM goes to the handler
    the process had before run_cli."""
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    got = []
    signal.signal(signal.SIGTERM, lambda *a: got.append("SIGTERM"))
    stderr = _SignalledAsWritten(signum)
    monkeypatch.setattr(sys, "stderr", stderr)
    ended = _how_run_cli_ends(error, keep_working=True)
    assert isinstance(ended, SystemExit) and ended.code == status, repr(ended)
    assert "".join(stderr.text) == line
    assert got == (["SIGTERM"] if signum == signal.SIGTERM else [])


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("keep_working", [False, True])
def test_a_stop_arriving_as_a_closed_pipe_ends_the_run_adds_no_traceback(monkeypatch, signum, keep_working):
    """A closed stdout (`| head`) ends the run in status 141 however a Ctrl-C or SIGTERM arrives as it does:
    the stop raised KeyboardInterrupt inside the closed pipe's exit, before run_cli's `finally` ignored it, and
    left as a traceback. The SIGTERM goes to the handler the process had before run_cli."""
    got = []
    signal.signal(signal.SIGTERM, lambda *a: got.append("SIGTERM"))
    monkeypatch.setattr(cli, "_to_devnull", lambda stream: os.kill(os.getpid(), signum))  # the stop, in the exit
    ended = _how_run_cli_ends(BrokenPipeError(32, "Broken pipe"), keep_working)
    assert isinstance(ended, SystemExit) and ended.code == 141, repr(ended)
    assert got == (["SIGTERM"] if signum == signal.SIGTERM else [])


def test_a_runtime_error_without_a_stop_is_not_called_one():
    """The stop's line is for errors raised while stopping; any other RuntimeError stays what it is."""
    def main():
        raise RuntimeError("some bug")

    try:
        with pytest.raises(RuntimeError, match="some bug"):
            cli.run_cli(main, keep_working=True)
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def test_a_sigterm_held_in_any_block_stops_the_run_with_ctrl_c_ignored():
    """A SIGTERM held inside a block that raises nothing itself (the trial file of an output check, params and loss
    log written together) stops the run on leaving it, also where SIGINT is ignored (a background job), whose
    handler alone would let the run go on."""
    ran = []
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    previous = signal.signal(signal.SIGTERM, interrupts.terminate_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with interrupts.interrupts_held():
                signal.raise_signal(signal.SIGTERM)  # held: the block goes on
                ran.append(True)
        assert ran == [True] and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        interrupts.clear_sigterm()  # (nothing is pending: leaving the block raised it)


def test_no_ctrl_c_is_lost_as_a_block_begins():
    """interrupts_held cleared its pending Ctrl-C after installing the handler that notes one: a Ctrl-C
    arriving in between was lost (a loop of blocks lost 5 of 40), and a run entering a block each epoch
    trained on. The one test here that times nothing but sends at random moments: 300 Ctrl-Cs from a
    thread, each answered before the next is sent, into a loop that only enters and leaves blocks."""
    script = textwrap.dedent("""
        import os, random, signal, sys, threading
        sys.path.insert(0, {src!r})
        from submission import interrupts
        answered = threading.Event()

        def send():  # nothing is sent before the loop says, from inside its try, that it runs (a Ctrl-C
            for sent in range(301):  # as the thread started ended the script under load, 23 of 200)
                if not answered.wait(10):
                    print("lost" if sent else "the loop did not start", flush=True)
                    os._exit(3)
                if sent == 300:
                    os._exit(0)
                answered.clear()
                threading.Event().wait(random.random() * 0.002)
                os.kill(os.getpid(), signal.SIGINT)

        threading.Thread(target=send, daemon=True).start()
        count = {{"caught": 0, "answered": -1}}  # -1: the loop's first pass answers, saying it runs
        while True:
            try:
                while True:  # answered from inside the try: the next Ctrl-C cannot land in the except clause
                    if count["answered"] != count["caught"]:
                        count["answered"] = count["caught"]
                        answered.set()
                    with interrupts.interrupts_held():
                        pass
            except KeyboardInterrupt:
                count["caught"] += 1
    """).format(src=SRC)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert (p.returncode, p.stdout) == (0, ""), p.stdout + p.stderr


def test_sigterm_ends_a_training_run_with_143(tmp_path):
    """A real process: run.py pretraining, sent SIGTERM once its log shows a training step."""
    wiki = tmp_path / "wiki.txt"
    wiki.write_text("".join(f"Person {i} Quill was born in Lisbon and lived a long life.\n" for i in range(400)))
    log = tmp_path / "p.params.log.jsonl"
    proc = subprocess.Popen([sys.executable, os.path.join(SRC, "run.py"), "--function=pretrain", "--variant=vanilla",
                             f"--pretrain_corpus_path={wiki}", f"--writing_params_path={tmp_path / 'p.params'}",
                             f"--log_path={log}", "--n_layer=1", "--n_head=2", "--n_embd=16", "--block_size=64",
                             "--max_epochs=500", "--batch_size=8"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300  # a deadline, not a count of polls: a loaded machine starts slowly
        while not (os.path.exists(f"{log}.partial") and os.path.getsize(f"{log}.partial")):
            assert proc.poll() is None and time.monotonic() < deadline, "run.py ended or never trained"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert err.splitlines()[-1] == "terminated (SIGTERM): no output file was half-written"
    assert sorted(os.listdir(tmp_path)) == ["p.params.log.jsonl.partial", "wiki.txt"]

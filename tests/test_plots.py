"""Training logs and the pictures made from them: a short real run through the Trainer writes its
per-step log (rows, steps, losses, the learning-rate schedule); src/plots.py draws the curves and
the attention maps as non-empty PNG images; the recomputed attention weights are the ones each
attention module applies; without matplotlib the commands say how to install it.

Run:  python -m pytest -q tests/test_plots.py
"""
import importlib
import json
import math
import os
import signal
import random
import shutil
import subprocess
import sys

import pytest
import torch

import plots
import startup
from submission import GPT, GPTConfig, Trainer, TrainerConfig
from submission.dataset import CharCorruptionDataset
from submission.trainer import lr_multiplier
from submission.utils import atomic_torch_save

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLOTS = os.path.join(ROOT, "src", "plots.py")
TEXT = "\n".join([
    "Ada Lovell. Ada Lovell was born in Leeds in 1901. She worked as a printer in York.",
    "Tom Oduya. Tom Oduya was born in Nairobi. He studied law in London.",
    "Mei Tan. Mei Tan, born in Penang, taught music in Perth for forty years.",
    "Ivo Marek. Ivo Marek grew up in Brno and moved to Vienna in 1950.",
    "Lia Costa. Lia Costa was born in Porto; she married a sailor from Lisbon.",
    "Sam Reed. Sam Reed was born in Leeds and died in Hull at the age of 80.",
    "Ana Ruiz. Ana Ruiz, a painter, was born in Seville in 1888.",
    "Jon Berg. Jon Berg was born in Bergen. He was a fisherman. Where was he born? In Bergen.",
]) + "\n"
QUESTION = "Where was Mei Tan born?"
SIZE = dict(n_layer=2, n_head=2, n_embd=16, block_size=32)
BATCH, EPOCHS, LR = 3, 3, 1e-3


def train_run(folder, variant):
    """A few real steps of span-corruption pretraining through the Trainer, logging every step."""
    random.seed(0)
    torch.manual_seed(0)
    ds = CharCorruptionDataset(TEXT, SIZE["block_size"])
    model = GPT(GPTConfig(ds.vocab_size, SIZE["block_size"], n_layer=SIZE["n_layer"], n_head=SIZE["n_head"],
                          n_embd=SIZE["n_embd"], synthesizer=variant == "synthesizer"))
    tokens_per_step = BATCH * (SIZE["block_size"] - 1)
    params = os.path.join(folder, f"{variant}.pretrain.params")
    tconf = TrainerConfig(max_epochs=EPOCHS, batch_size=BATCH, learning_rate=LR, lr_decay=True,
                          warmup_tokens=2 * tokens_per_step, final_tokens=10 * tokens_per_step,
                          num_workers=0, log_path=params + ".log.jsonl")
    Trainer(model, ds, None, tconf).train()
    atomic_torch_save(model.state_dict(), params)
    return params, tconf, ds


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("runs"))
    with open(os.path.join(folder, "wiki.txt"), "w", encoding="utf-8") as f:
        f.write(TEXT)
    return {**{v: train_run(folder, v) for v in ("vanilla", "synthesizer")}, "folder": folder}


def needs_matplotlib():
    """matplotlib is in requirements.txt: a set-up without it fails these tests rather than skipping them."""
    importlib.import_module("matplotlib")


def assert_png(path, min_bytes=3000):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    assert len(data) >= min_bytes, f"{path} has only {len(data)} bytes"
    from PIL import Image
    with Image.open(path) as im:
        assert im.width >= 400 and im.height >= 300
        assert sum(1 for n in im.convert("L").histogram() if n) > 10, "the image is (nearly) one colour"


# ----------------------------------------------------------------------------- the logged curves

@pytest.mark.parametrize("variant", ["vanilla", "synthesizer"])
def test_log_rows_follow_the_run(runs, variant):
    params, tconf, ds = runs[variant]
    rows = [json.loads(line) for line in open(params + ".log.jsonl", encoding="utf-8")]
    per_epoch = math.ceil(len(ds) / BATCH)
    assert len(rows) == EPOCHS * per_epoch
    assert all(set(r) == {"step", "epoch", "tokens", "loss", "lr", "time"} for r in rows)  # the trainer's fields
    assert [r["step"] for r in rows] == list(range(1, len(rows) + 1))
    assert [r["epoch"] for r in rows] == [1 + i // per_epoch for i in range(len(rows))]
    times = [r["time"] for r in rows]
    assert times == sorted(times)
    assert all(math.isfinite(r["loss"]) and r["loss"] > 0 for r in rows)
    # the token counter adds every target position of the batch (the course's count)
    seen = 0
    for i, r in enumerate(rows):
        in_batch = min(BATCH, len(ds) - (i % per_epoch) * BATCH)
        seen += in_batch * (SIZE["block_size"] - 1)
        assert r["tokens"] == seen
        # the logged rate is the one the next step uses: the schedule at the tokens seen so far
        assert r["lr"] == pytest.approx(LR * lr_multiplier(r["tokens"], tconf))
    lrs = [r["lr"] for r in rows]
    assert lrs[0] < lrs[1] and max(lrs) == pytest.approx(LR, rel=0.05)  # warm-up, then the peak
    assert lrs[-1] < max(lrs)                                            # then the cosine decay


def test_read_log_explains_bad_files(tmp_path):
    empty, bad, missing = tmp_path / "empty.log.jsonl", tmp_path / "bad.log.jsonl", tmp_path / "none.log.jsonl"
    empty.write_text("")
    bad.write_text('{"step": 1, "loss": 2.0, "lr": 0.1}\nnot json\n')
    with pytest.raises(plots.PlotError, match="empty"):
        plots.read_log(str(empty))
    with pytest.raises(plots.PlotError, match=r"bad.log.jsonl:2"):
        plots.read_log(str(bad))
    with pytest.raises(plots.PlotError, match="not found"):
        plots.read_log(str(missing))
    binary = tmp_path / "model.params"  # a params file given where the log goes
    binary.write_bytes(b'{"step": 1, "loss": 2.0, "lr": 0.1}\n\x80\x02\xff torch zip')
    with pytest.raises(plots.PlotError, match=r"model.params:2: not UTF-8 text.*a params file"):
        plots.read_log(str(binary))
    with pytest.raises(plots.PlotError, match="a folder"):
        plots.read_log(str(tmp_path))
    spaced = tmp_path / "spaced.log.jsonl"  # blank lines (an editor's, a joined log's) hold no row and no error
    spaced.write_text('\n{"step": 1, "loss": 2.0, "lr": 0.1}\n  \n{"step": 2, "loss": 1.5, "lr": 0.1}\n\n')
    assert [r["step"] for r in plots.read_log(str(spaced))] == [1, 2]
    assert plots.log_label("/x/vanilla.pretrain.params.log.jsonl") == "vanilla.pretrain"
    assert plots.moving_average([1.0, 3.0, 5.0, 7.0], 2) == [1.0, 2.0, 4.0, 6.0]


def test_a_row_whose_numbers_are_not_numbers_is_named(tmp_path, capsys):
    """A row with "loss": "x" passed read_log and was a TypeError traceback from plot_curves."""
    log = tmp_path / "a.log.jsonl"
    for row, says in (('{"step": 2, "loss": "x", "lr": 0.1}', "loss is 'x', not a number"),
                      ('{"step": true, "loss": 2.0, "lr": 0.1}', "step is True, not a number"),
                      ('{"step": 2, "loss": 2.0, "lr": null}', "lr is None, not a number")):
        log.write_text('{"step": 1, "loss": 2.0, "lr": 0.1}\n' + row + "\n")
        with pytest.raises(plots.PlotError, match=f"^{log}:2: {says}; is this a training log"):
            plots.read_log(str(log))
    code, printed, err = curves([str(log), "--out", str(tmp_path / "c.png")], capsys)
    assert code == 2 and printed == "" and err == [f"plots.py: error: {log}:2: lr is None, not a number; is this "
                                                   f"a training log written by src/run.py?"]
    assert not (tmp_path / "c.png").exists()


def test_a_partial_log_leaves_out_the_row_being_written(tmp_path):
    """A log that training is still writing (<log>.partial) was refused for its unfinished last line."""
    rows = "".join(json.dumps({"step": s, "loss": 3.0 / s, "lr": 1e-3}) + "\n" for s in (1, 2))
    partial = tmp_path / "a.params.log.jsonl.partial"
    partial.write_text(rows + '{"step": 3, "lo')
    assert [r["step"] for r in plots.read_log(str(partial))] == [1, 2]
    partial.write_text(rows)  # a row just finished: all of it counts
    assert [r["step"] for r in plots.read_log(str(partial))] == [1, 2]
    partial.write_text('{"step": 1, "lo')
    with pytest.raises(plots.PlotError, match="the log is empty"):
        plots.read_log(str(partial))
    finished = tmp_path / "a.params.log.jsonl"  # a finished log cut short is damaged: still an error
    finished.write_text(rows + '{"step": 3, "lo')
    with pytest.raises(plots.PlotError, match=f"^{finished}:3: not a JSON object"):
        plots.read_log(str(finished))


def test_a_log_saved_again_by_a_windows_editor_is_read_or_named(tmp_path):
    """A log opened and saved in a Windows editor starts with a UTF-8 byte-order mark: line 1 was "not a JSON
    object; is this a training log?", which it is (the corpora's readers drop the mark). Saved as UTF-16 it
    was "not UTF-8 text, so not a training log (a params file?)"; it is named as UTF-16 now."""
    rows = "".join(json.dumps({"step": s, "loss": 3.0 / s, "lr": 1e-3}) + "\r\n" for s in (1, 2))
    log = tmp_path / "a.params.log.jsonl"
    log.write_bytes(b"\xef\xbb\xbf" + rows.encode())
    assert [r["step"] for r in plots.read_log(str(log))] == [1, 2]
    log.write_bytes(rows.encode("utf-16"))
    with pytest.raises(plots.PlotError, match=r"^.*a.params.log.jsonl: UTF-16 text \(byte-order mark FF FE\), not "
                                              r"UTF-8; save it as UTF-8, or plot the log run.py wrote$"):
        plots.read_log(str(log))


def test_the_log_of_a_run_still_training_is_read_from_its_partial(tmp_path, capsys):
    """While a run trains, and after it is stopped, only <log>.partial exists: the log's own name, as
    the docs give it, was 'not found'."""
    log = tmp_path / "a.params.log.jsonl"
    (tmp_path / "a.params.log.jsonl.partial").write_text(json.dumps({"step": 1, "loss": 3.0, "lr": 1e-3}) + "\n")
    assert [r["step"] for r in plots.read_log(str(log))] == [1]
    assert "plotting a.params.log.jsonl.partial, the log of a run that is still training" in capsys.readouterr().err
    log.write_text(json.dumps({"step": 7, "loss": 2.0, "lr": 1e-3}) + "\n")  # finished: the log itself
    assert [r["step"] for r in plots.read_log(str(log))] == [7] and capsys.readouterr().err == ""
    with pytest.raises(plots.PlotError, match="b.log.jsonl: log not found .*as .log.jsonl.partial while it trains"):
        plots.read_log(str(tmp_path / "b.log.jsonl"))


def test_a_log_behind_a_folder_that_does_not_let_the_user_in_is_not_called_missing(tmp_path, shut_folder):
    """(permission audit, non-root) A log in a folder made 0600 read "log not found"; the folder is named, with
    its fix."""
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "a.params.log.jsonl").write_text(json.dumps({"step": 1, "loss": 3.0, "lr": 1e-3}) + "\n")
    shut_folder(tmp_path / "runs")
    with pytest.raises(plots.PlotError, match=r"a.params.log.jsonl: the log cannot be reached: the folder .*runs does "
                                              r"not let you in \(Permission denied, mode 0\d{3}\); chmod u\+rx "):
        plots.read_log(str(tmp_path / "runs" / "a.params.log.jsonl"))


def test_a_finished_log_older_than_a_partial_beside_it_is_named_as_the_earlier_runs(tmp_path, capsys):
    """The same training command again (learners.md: watch a run by the log's own name) writes <log>.partial
    beside the earlier run's finished log: plotting the log's name drew the earlier run, with no word of it."""
    log = tmp_path / "a.params.log.jsonl"
    log.write_text(json.dumps({"step": 7, "loss": 2.0, "lr": 1e-3}) + "\n")
    partial = tmp_path / "a.params.log.jsonl.partial"
    partial.write_text(json.dumps({"step": 1, "loss": 3.0, "lr": 1e-3}) + "\n")
    later = os.stat(log).st_mtime + 5
    os.utime(partial, (later, later))
    assert [r["step"] for r in plots.read_log(str(log))] == [7]  # the name given, read: a note says whose it is
    err = capsys.readouterr().err
    assert err.startswith(f"note: plotting {log}, the log of an earlier run that finished; a.params.log.jsonl.partial")
    assert [r["step"] for r in plots.read_log(str(partial))] == [1] and capsys.readouterr().err == ""


# ----------------------------------------------------------------------------- the commands

def test_curves_command_writes_a_png(runs, tmp_path):
    needs_matplotlib()
    out = tmp_path / "curves.png"
    logs = [runs[v][0] + ".log.jsonl" for v in ("vanilla", "synthesizer")]
    proc = subprocess.run([sys.executable, PLOTS, "curves", *logs, "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert_png(out)


def saved_figures(monkeypatch):
    """The figures plots.py saves, kept for a test to read what was drawn (they are saved as usual)."""
    figures = []
    real_save = plots._save
    monkeypatch.setattr(plots, "_save", lambda fig, out, dpi: (figures.append(fig), real_save(fig, out, dpi))[1])
    return figures


def test_curves_draw_the_logged_losses_their_trailing_mean_and_the_learning_rate(tmp_path, monkeypatch):
    """The faint line is each step's loss, the bold one its trailing mean over len(rows) // 40 steps (as its
    label says), the lower panel the rate each step trained at: a row's lr is the rate set after its step, for
    the next one (drawn at its own step, it hid the first step's full rate in a warm-up from 0): not just some
    non-empty PNG."""
    needs_matplotlib()
    figures = saved_figures(monkeypatch)
    steps = list(range(1, 121))  # 120 rows: a mean of 3 steps
    losses = [3.0 / s + (s % 4) * 0.1 for s in steps]
    lrs = [1e-3 * min(1.0, s / 10) for s in steps]
    log = tmp_path / "a.params.log.jsonl"
    log.write_text("".join(json.dumps({"step": s, "loss": v, "lr": r}) + "\n" for s, v, r in zip(steps, losses, lrs)))
    assert plots.main(["curves", str(log), "--out", str(tmp_path / "c.png")]) == 0
    (fig,) = figures
    ax_loss, ax_lr = fig.axes
    raw, smooth = ax_loss.get_lines()
    assert list(raw.get_xdata()) == steps and list(raw.get_ydata()) == losses
    assert list(smooth.get_xdata()) == steps
    assert list(smooth.get_ydata()) == pytest.approx(plots.moving_average(losses, 3))
    assert smooth.get_label() == "a (120 steps, mean of 3 steps)"
    (rate,) = ax_lr.get_lines()
    assert list(rate.get_xdata()) == steps[1:] and list(rate.get_ydata()) == lrs[:-1]
    assert fig._suptitle.get_text().endswith("(faint: each step; bold: smoothed)")


def test_a_log_too_short_to_smooth_draws_each_step_once_and_the_title_says_no_smoothing(tmp_path, monkeypatch):
    """Under 80 steps the mean is of 1 step: the faint line and the bold one were the same line, under a title
    naming both."""
    needs_matplotlib()
    figures = saved_figures(monkeypatch)
    log = tmp_path / "a.params.log.jsonl"
    log.write_text("".join(json.dumps({"step": s, "loss": 3.0 / s, "lr": 1e-3}) + "\n" for s in range(1, 24)))
    assert plots.main(["curves", str(log), "--out", str(tmp_path / "c.png")]) == 0
    (fig,) = figures
    (line,) = fig.axes[0].get_lines()
    assert line.get_label() == "a (23 steps)" and len(line.get_xdata()) == 23
    assert fig._suptitle.get_text() == "Training loss and learning rate per step"


def test_the_trailing_mean_leaves_out_the_nan_of_a_batch_with_nothing_counted():
    """A batch whose targets are all skipped logs a nan loss and training goes on: the running sum carried the
    nan into every later mean, and the bold curve vanished after it. Each mean is of its window's finite values."""
    nan = float("nan")
    got = plots.moving_average([3.0, 2.9, nan, 2.7, 2.6, 2.5, 2.4], 2)
    assert got == pytest.approx([3.0, 2.95, 2.9, 2.7, 2.65, 2.55, 2.45])  # (windows of 2: [2.9, nan] is 2.9)
    assert all(math.isnan(v) for v in plots.moving_average([nan, nan, 1.0], 2)[:2])
    assert plots.moving_average([1.0, 2.0, 3.0, 4.0], 3) == pytest.approx([1.0, 1.5, 2.0, 3.0])


def test_runs_of_the_same_schedule_keep_apart_on_the_learning_rate_panel(tmp_path, monkeypatch):
    """Two runs of one schedule (vanilla and synthesizer, pretrained alike) draw the same learning rate: each
    log's line has its own dash pattern and colour, and its label, so the one on top does not hide the other."""
    needs_matplotlib()
    figures = saved_figures(monkeypatch)
    logs = []
    for name in ("vanilla.pretrain", "synthesizer.pretrain"):
        log = tmp_path / f"{name}.params.log.jsonl"
        log.write_text("".join(json.dumps({"step": s, "loss": 3.0 / s, "lr": 1e-3}) + "\n" for s in range(1, 5)))
        logs.append(str(log))
    assert plots.main(["curves", *logs, "--out", str(tmp_path / "c.png")]) == 0
    (fig,) = figures
    first, second = fig.axes[1].get_lines()
    assert [first.get_label(), second.get_label()] == ["vanilla.pretrain", "synthesizer.pretrain"]
    assert list(first.get_ydata()) == list(second.get_ydata())
    assert first.get_linestyle() != second.get_linestyle() and first.get_color() != second.get_color()


def test_logs_of_one_name_in_two_folders_are_labelled_apart(tmp_path, monkeypatch):
    """runs/demo/ and runs/short/ (learners.md's experiments) each write vanilla.pretrain.params.log.jsonl: both
    were labelled "vanilla.pretrain", so the legend could not say which curve was which run."""
    needs_matplotlib()
    figures = saved_figures(monkeypatch)
    logs = []
    for folder, loss in (("demo", 3.0), ("short", 1.0), ("other/short", 2.0)):
        os.makedirs(tmp_path / folder)
        log = tmp_path / folder / "vanilla.pretrain.params.log.jsonl"
        log.write_text("".join(json.dumps({"step": s, "loss": loss, "lr": 1e-3}) + "\n" for s in range(1, 5)))
        logs.append(str(log))
    other = tmp_path / "synthesizer.pretrain.params.log.jsonl"
    other.write_text(json.dumps({"step": 1, "loss": 1.0, "lr": 1e-3}) + "\n")
    assert plots.main(["curves", *logs, str(other), "--out", str(tmp_path / "c.png")]) == 0
    (fig,) = figures
    labels = [line.get_label() for line in fig.axes[1].get_lines()]
    assert labels == [f"{tmp_path.name}/demo/vanilla.pretrain", f"{tmp_path.name}/short/vanilla.pretrain",
                      "other/short/vanilla.pretrain", "synthesizer.pretrain"]  # as many folders as tell them apart
    assert plots.log_labels(logs[:2]) == ["demo/vanilla.pretrain", "short/vanilla.pretrain"]
    assert plots.log_labels([logs[0], logs[0]]) == ["vanilla.pretrain"] * 2  # one log twice: no folders tell them apart


def test_without_matplotlib_the_commands_say_how_to_install_it(tmp_path):
    log = tmp_path / "a.log.jsonl"
    log.write_text('{"step": 1, "loss": 2.0, "lr": 0.1}\n')
    code = ("import runpy, sys; sys.modules['matplotlib'] = None; "  # makes `import matplotlib` fail
            f"sys.argv = ['plots.py', 'curves', {str(log)!r}, '--out', {str(tmp_path / 'x.png')!r}]; "
            f"runpy.run_path({PLOTS!r}, run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0] == startup.missing_requirement("plots.py", "matplotlib")
    assert not (tmp_path / "x.png").exists()


def test_curves_start_without_torch(tmp_path):
    """The curves need only matplotlib: main() imported the graded package (and so torch) for its stream
    set-up, so a Python without torch ended in a ModuleNotFoundError traceback, and a Ctrl-C while torch
    loaded in another."""
    log = tmp_path / "a.log.jsonl"
    log.write_text('{"step": 1, "loss": 2.0, "lr": 0.1}\n{"step": 2, "loss": 1.5, "lr": 0.1}\n')
    for blocked, status in ((["torch"], 0), (["torch", "matplotlib"], 2)):
        out = tmp_path / f"{len(blocked)}.png"
        code = (f"import runpy, sys; sys.modules.update(dict.fromkeys({blocked!r})); "  # None: import fails
                f"sys.argv = ['plots.py', 'curves', {str(log)!r}, '--out', {str(out)!r}]; "
                f"runpy.run_path({PLOTS!r}, run_name='__main__')")
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert proc.returncode == status, proc.stderr
        if status == 0:
            assert_png(out)
        else:
            assert proc.stderr.count("\n") == 1 and "has no matplotlib; " in proc.stderr


def attention_args(runs, out, *extra):
    f = runs["folder"]
    return ["attention", "--params", runs["vanilla"][0], "--variant", "vanilla",
            "--params2", runs["synthesizer"][0], "--variant2", "synthesizer",
            "--pretrain_corpus_path", os.path.join(f, "wiki.txt"), "--question", QUESTION,
            "--out", str(out), *extra]


def test_a_corpus_with_a_sentinel_is_named_by_its_path(runs, tmp_path, capsys):
    """The attention command's vocabulary came from a dataset told no path: a wiki.txt holding the
    MASK character was reported as "<pretraining corpus>:1", not as the file to fix."""
    wiki = tmp_path / "wiki.txt"
    wiki.write_text("Ann Lee was born in Lima.\nBo Kay \u2047 was born in Oslo.\n", encoding="utf-8")
    args = attention_args(runs, tmp_path / "a.png", *size_flags())
    args[args.index("--pretrain_corpus_path") + 1] = str(wiki)
    assert plots.main(args) == 2
    err = capsys.readouterr().err
    assert f"{wiki}:2:" in err and "<pretraining corpus>" not in err, err


def size_flags():
    return [x for k, v in SIZE.items() for x in (f"--{k}", str(v))]


def test_attention_command_writes_a_png(runs, tmp_path, monkeypatch):
    """The attention command draws a panel per model, each labelled with its greedy answer and, with
    --expected, the true place beside it."""
    needs_matplotlib()
    figures = saved_figures(monkeypatch)
    out = tmp_path / "attention.png"
    assert plots.main(attention_args(runs, out, *size_flags(), "--expected", "Penang")) == 0
    assert_png(out, min_bytes=10000)
    (fig,) = figures
    texts = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    labelled = [t for t in texts if "greedy answer" in t]
    assert labelled and all(t.endswith(" (true: 'Penang')") for t in labelled), texts


def test_last_row_view_draws_the_masks_row_of_every_head(runs, tmp_path):
    needs_matplotlib()
    out = tmp_path / "last.png"
    assert plots.main(attention_args(runs, out, *size_flags(), "--last-row")) == 0
    assert_png(out, min_bytes=5000)
    model, vocab = plots.load_model(runs["vanilla"][0], "vanilla", os.path.join(runs["folder"], "wiki.txt"),
                                    **dict(plots.COURSE_SIZE, **SIZE))
    prompt, idx = plots.encode_prompt(QUESTION, vocab)
    maps = plots.attention_maps(model, idx)
    grid = plots.last_rows(maps)
    n_head = maps[0].shape[0]
    assert grid.shape == (len(maps) * n_head, len(prompt))
    for i, row in enumerate(grid):
        assert row.sum() == pytest.approx(1.0, abs=1e-5)
        assert (row == maps[i // n_head][i % n_head, -1].numpy()).all()


def made_up_maps(seed, n_layer=2, n_head=3, T=5):
    """Per layer (n_head, T, T): causal rows summing to 1, every entry distinct, so a map drawn in the
    wrong cell (another layer, head or model) shows."""
    g = torch.Generator().manual_seed(seed)
    maps = []
    for _ in range(n_layer):
        w = torch.rand(n_head, T, T, generator=g).tril()
        maps.append(w / w.sum(-1, keepdim=True))
    return maps


def test_each_attention_map_is_its_own_layer_and_head_with_only_the_future_greyed(tmp_path, monkeypatch):
    needs_matplotlib()
    import numpy as np
    figures = saved_figures(monkeypatch)
    prompt = "Ab c" + plots.MASK
    panels = [{"label": "first", "maps": made_up_maps(1)}, {"label": "second", "maps": made_up_maps(2)}]
    plots.plot_attention(panels, prompt, str(tmp_path / "a.png"))
    (fig,) = figures
    future = np.triu(np.ones((5, 5), dtype=bool), k=1)
    for sub, panel in zip(fig.subfigs, panels):
        axes = sub.axes  # row-major: layers down, heads across
        assert len(axes) == 2 * 3
        for k, ax in enumerate(axes):
            (image,) = ax.get_images()
            shown = image.get_array()
            assert np.array_equal(np.ma.getmaskarray(shown), future), (panel["label"], k)
            assert np.allclose(shown.data[~future], panel["maps"][k // 3][k % 3].numpy()[~future]), (panel["label"], k)
            # the prompt's characters name the rows (query) down the first head, the columns (attended) along
            # the last layer, in the prompt's order, the space as its open box
            chars = ["A", "b", "\u2423", "c", plots.MASK]
            assert [t.get_text() for t in ax.get_yticklabels() if t.get_text()] == (chars if k % 3 == 0 else []), k
            assert [t.get_text() for t in ax.get_xticklabels() if t.get_text()] == (chars if k // 3 == 1 else []), k


def test_last_row_strips_write_each_strips_largest_weight_in_its_cell(tmp_path, monkeypatch):
    needs_matplotlib()
    figures = saved_figures(monkeypatch)
    prompt = "Ab c" + plots.MASK
    maps = made_up_maps(3)
    plots.plot_last_rows([{"label": "one", "maps": maps}], prompt, str(tmp_path / "a.png"))
    (fig,) = figures
    ax = fig.axes[0]
    want = []
    for w in maps:
        for head in range(w.shape[0]):
            row = w[head, -1].numpy().astype(float)
            c = int(row.argmax())
            want.append(((c, len(want)), f"{row[c]:.0%}".replace("%", "")))
    assert [(tuple(t.get_position()), t.get_text()) for t in ax.texts] == want
    # strip i is layer i // 3 + 1, head i % 3 + 1, as its label says; the columns are the prompt's characters
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"layer {layer} head {head}" for layer in (1, 2)
                                                            for head in (1, 2, 3)]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["A", "b", "\u2423", "c", plots.MASK]


@pytest.mark.parametrize("view", [[], ["--last-row"]])
def test_both_attention_views_say_what_the_space_and_mask_glyphs_are(runs, tmp_path, monkeypatch, view):
    """The prompt's space is drawn as an open box and the MASK is the course's glyph: a reader of the
    figure (the written answers print the --last-row one) needs both named."""
    needs_matplotlib()
    titles = []
    real_save = plots._save
    monkeypatch.setattr(plots, "_save", lambda fig, out, dpi: (titles.append(fig._suptitle.get_text()),
                                                              real_save(fig, out, dpi))[1])
    assert plots.main(attention_args(runs, tmp_path / "a.png", *size_flags(), *view)) == 0
    title = titles[0].replace("\u00a0", " ") if titles else ""  # no-break spaces keep each key on one line
    assert len(titles) == 1 and "\u2423 = space" in title and f"{plots.MASK} = the MASK" in title


def test_a_short_questions_narrow_figure_keeps_its_whole_title(runs, tmp_path, monkeypatch):
    """One model and a short question make a narrow figure; matplotlib does not wrap a suptitle, which
    was cut at both edges (the corpus's shortest questions are about 22 characters)."""
    needs_matplotlib()
    widths = []
    real_save = plots._save

    def measure(fig, out, dpi):
        fig.canvas.draw()
        widths.append((fig._suptitle.get_window_extent().width, fig.bbox.width))
        return real_save(fig, out, dpi)
    monkeypatch.setattr(plots, "_save", measure)
    f = runs["folder"]
    assert plots.main(["attention", "--params", runs["vanilla"][0], "--pretrain_corpus_path",
                       os.path.join(f, "wiki.txt"), "--question", "Al", "--out", str(tmp_path / "a.png"),
                       *size_flags()]) == 0
    (title, figure), = widths
    assert title <= figure


def test_attention_command_explains_bad_inputs(runs, tmp_path, capsys):
    needs_matplotlib()
    out = tmp_path / "a.png"
    assert plots.main(attention_args(runs, out)) == 2  # the course's size, but small params
    err = capsys.readouterr().err
    assert "--n_layer 2 --n_embd 16 --block_size 32" in err and err.count("\n") == 1
    args = attention_args(runs, out, *size_flags())
    args[args.index("--question") + 1] = "Where was Zoë born?"  # 'Z', 'ë' are not in the corpus
    assert plots.main(args) == 2
    assert "vocabulary lacks" in capsys.readouterr().err
    assert not out.exists()
    for question, says in (("Mei \u2047 Tan", "holds the MASK character"),
                           ("Mei \u25a1 Tan", "holds the PAD character"),
                           ("Mei" * 20, "the question 'Where was MeiMei")):  # as ask words them
        args[args.index("--question") + 1] = question
        assert plots.main(args) == 2
        err = capsys.readouterr().err
        assert says in err and err.count("\n") == 1, err
    args[args.index("--question") + 1] = " "
    with pytest.raises(SystemExit):
        plots.main(args)
    assert "--question is empty" in capsys.readouterr().err
    assert not out.exists()


def test_the_longest_question_fits_the_block_with_its_mask():
    """question + MASK must fit in block_size - 1 positions, what the synthesizer can forward (the
    vanilla model the same, as both panels share the prompt): one character more is refused."""
    vocab = CharCorruptionDataset(TEXT, SIZE["block_size"])
    longest = "W" + "a" * (SIZE["block_size"] - 4) + "?"  # 30 characters, 31 with the MASK
    prompt, idx = plots.encode_prompt(longest, vocab)
    assert prompt == longest + plots.MASK and idx.shape == (1, SIZE["block_size"] - 1)
    with pytest.raises(plots.PlotError, match=r"is 31 characters; with its MASK it must fit in block_size - 1 = 31"):
        plots.encode_prompt("W" + "a" * (SIZE["block_size"] - 3) + "?", vocab)


def test_a_panel_names_the_model_its_greedy_answer_and_the_true_place(runs):
    size = dict(plots.COURSE_SIZE, **SIZE)
    wiki = os.path.join(runs["folder"], "wiki.txt")
    prompt, panel = plots.attention_panel(runs["vanilla"][0], "vanilla", wiki, QUESTION, size, expected="Penang")
    assert prompt == QUESTION + plots.MASK and len(panel["maps"]) == SIZE["n_layer"]
    assert panel["label"] == (f"vanilla (causal self-attention): vanilla.pretrain.params, greedy answer "
                              f"{panel['answer']!r} (true: 'Penang')")
    _, panel = plots.attention_panel(runs["synthesizer"][0], "synthesizer", wiki, QUESTION, size)
    assert panel["label"] == f"dense synthesizer: synthesizer.pretrain.params, greedy answer {panel['answer']!r}"


def test_a_question_with_an_accent_typed_apart_from_its_letter_is_mapped_as_the_corpus_spells_it(tmp_path):
    """--question "Where was Zoé Bo born?" typed with its accent apart from the 'e' (Unicode NFD: a Mac's terminal)
    was "--question has characters the vocabulary lacks: '́'", though the corpus has 'é': it is composed."""
    import unicodedata

    import torch

    from submission import GPT, GPTConfig
    from submission.dataset import CharCorruptionDataset
    text = "Zoé Bo was born in Orléans. Where was she born?\n" * 3
    (tmp_path / "wiki.txt").write_text(text, encoding="utf-8")
    vocab = CharCorruptionDataset(text, SIZE["block_size"])
    torch.manual_seed(0)
    torch.save(GPT(GPTConfig(vocab.vocab_size, **SIZE)).state_dict(), tmp_path / "m.params")
    size = dict(plots.COURSE_SIZE, **SIZE)
    question = "Where was Zoé Bo born?"
    panels = [plots.attention_panel(str(tmp_path / "m.params"), "vanilla", str(tmp_path / "wiki.txt"),
                                    unicodedata.normalize(form, question), size) for form in ("NFC", "NFD")]
    assert panels[1][0] == panels[0][0] == question + plots.MASK and panels[1][1]["answer"] == panels[0][1]["answer"]
    assert all(torch.equal(a, b) for a, b in zip(panels[0][1]["maps"], panels[1][1]["maps"]))


def test_params_of_the_other_variant_name_the_flag_that_chose_it(runs, tmp_path, capsys):
    """Vanilla params given to --params2 with --variant2 synthesizer told the user to pass --variant=.
    Without the flag each file's variant is what its shapes say (it was the other variant's)."""
    out = tmp_path / "a.png"
    args = [a for a in attention_args(runs, out, *size_flags()) if a not in ("--variant2", "synthesizer")]
    args[args.index("--params2") + 1] = runs["vanilla"][0]
    assert plots.main(args) == 0 and out.exists()
    out.unlink()
    capsys.readouterr()
    assert plots.main(args + ["--variant2", "synthesizer"]) == 2
    err = capsys.readouterr().err
    assert "pass --variant2 vanilla or use the synthesizer params file" in err and "--variant=" not in err
    assert err.count("\n") == 1, err
    args = attention_args(runs, out, *size_flags())
    args[args.index("--params") + 1] = runs["synthesizer"][0]  # the first file: --variant
    assert plots.main(args) == 2
    assert "pass --variant synthesizer or use the vanilla params file" in capsys.readouterr().err
    assert not out.exists()


def test_the_attention_command_reads_variant_size_and_corpus_off_the_params(runs, tmp_path, capsys):
    """`plot attention --params synthesizer.finetune.params` said to pass --variant synthesizer, then the
    size flags the file's shapes spell out, then the corpus: as ask and memorised do, they come from the
    params, their card and the world beside them (as the demo leaves them); a flag given still wins."""
    from submission.card import write_card
    (tmp_path / "data").mkdir()
    shutil.copy(os.path.join(runs["folder"], "wiki.txt"), tmp_path / "data" / "wiki.txt")
    synth = tmp_path / "synthesizer.pretrain.params"
    shutil.copy(runs["synthesizer"][0], synth)
    ds = runs["synthesizer"][2]
    write_card(str(synth), GPT(GPTConfig(ds.vocab_size, SIZE["block_size"], n_layer=SIZE["n_layer"],
                                         n_head=SIZE["n_head"], n_embd=SIZE["n_embd"], synthesizer=True)),
               ds.itos, "pretrain")
    out = tmp_path / "a.png"
    assert plots.main(["attention", "--params", str(synth), "--question", QUESTION, "--out", str(out)]) == 0, \
        capsys.readouterr().err
    assert out.exists() and f"note: reading {tmp_path / 'data'}" in capsys.readouterr().err
    assert plots.main(["attention", "--params", str(synth), "--question", QUESTION, "--variant", "vanilla",
                       "--out", str(out)]) == 2
    assert "pass --variant synthesizer" in capsys.readouterr().err


@pytest.mark.parametrize("flags, says", [
    (["--dpi", "0"], "--dpi must be between 10 and 1200, got 0"),
    (["--dpi", "100000"], "--dpi must be between 10 and 1200"),
    (["--n_head", "3", "--n_embd", "256"], "--n_embd 256 must be a multiple of --n_head 3"),
    (["--n_head", "0"], "--n_head must be at least 1"),
    (["--n_layer", "0"], "--n_layer must be at least 1"),
    (["--block_size", "16"], "--block_size must be between 17"),
    (["--variant", "bogus"], "argument --variant: invalid choice: 'bogus'"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_impossible_flags_are_usage_errors_before_any_work(tmp_path, capsys, flags, says):
    out = tmp_path / "a.png"
    command = ["attention", "--params", str(tmp_path / "none.params"), "--variant", "vanilla",
               "--pretrain_corpus_path", str(tmp_path / "none.txt"), "--question", "q", "--out", str(out)]
    if flags[0] == "--dpi":
        command = ["curves", str(tmp_path / "none.log.jsonl"), "--out", str(out)]
    with pytest.raises(SystemExit) as stop:
        plots.main(command + flags)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and says in err and not out.exists()
    assert err.count("\n") == 1 and err.endswith(" (--help lists the options)\n"), err  # no usage block


def test_a_second_model_of_another_size_is_named_as_such(runs, tmp_path, capsys):
    """--params2 of another size than --params got the size error of a file that "looks like --n_layer 1
    ...", whose flags then broke --params: one picture draws both at one size, so it says that."""
    ds = runs["vanilla"][2]
    small = tmp_path / "small.params"
    torch.save(GPT(GPTConfig(ds.vocab_size, SIZE["block_size"], n_layer=1, n_head=SIZE["n_head"],
                             n_embd=SIZE["n_embd"])).state_dict(), small)
    args = attention_args(runs, tmp_path / "a.png", *size_flags())
    args[args.index("--params2") + 1] = str(small)
    assert plots.main(args) == 2
    assert capsys.readouterr().err == (
        f"plots.py: error: {small}: a model of another size or corpus than {runs['vanilla'][0]} (--n_layer 1 "
        f"against {SIZE['n_layer']}); the two models of one picture share both: give --params2 one trained alike, "
        f"or draw each alone\n")
    assert not (tmp_path / "a.png").exists()


def test_a_size_flag_given_alone_is_checked_against_the_params_not_the_course(capsys):
    """`plot attention --n_embd 20` (a 4-head model's width) was refused before the params were read, as
    not a multiple of the course's 8 heads: a size flag left out comes from the params, so the flags given
    are checked alone first, and still against each other."""
    parser = plots.build_parser()
    start = ["attention", "--params", "p", "--question", "q", "--out", "a.png"]
    sizes = ("n_layer", "n_head", "n_embd", "block_size")
    for flags in (["--n_embd", "20"], ["--n_head", "3"], ["--n_layer", "2", "--block_size", "64"]):
        args = parser.parse_args([*start, *flags])
        plots.check_args(parser, args)  # no usage error
        given = {flag[2:]: int(value) for flag, value in zip(flags[::2], flags[1::2])}
        # the sizes left out stay unset, for the params to fill (fill_from_params), not the course's
        assert {name: getattr(args, name) for name in sizes} == {name: given.get(name) for name in sizes}
    # the flags given are checked, not waved through: 20 is no width for 3 heads
    with pytest.raises(SystemExit) as stop:
        plots.check_args(parser, parser.parse_args([*start, "--n_embd", "20", "--n_head", "3"]))
    assert stop.value.code == 2
    assert "--n_embd 20 must be a multiple of --n_head 3" in capsys.readouterr().err


@pytest.mark.parametrize("argv, says", [([], "plots.py: error: the following arguments are required: "
                                             "{curves,attention}"),
                                        (["curves"], "plots.py curves: error: the following arguments are "
                                                     "required: LOG, --out")])
def test_a_missing_command_or_argument_is_one_line(capsys, argv, says):
    with pytest.raises(SystemExit) as stop:
        plots.main(argv)
    assert stop.value.code == 2 and capsys.readouterr().err == f"{says} (--help lists the options)\n"


def test_plot_demo_runs(runs, tmp_path):
    needs_matplotlib()
    work = tmp_path / "demo"
    (work / "data").mkdir(parents=True)
    (work / "data" / "wiki.txt").write_text(TEXT, encoding="utf-8")
    (work / "data" / "birth_dev.tsv").write_text(f"Where was Ada Lovell born?\tLeeds\n{QUESTION}\tPenang\n",
                                                 encoding="utf-8")
    for v in ("vanilla", "synthesizer"):
        params = runs[v][0]
        for kind in ("pretrain", "finetune"):
            with open(params + ".log.jsonl", encoding="utf-8") as src:
                (work / f"{v}.{kind}.params.log.jsonl").write_text(src.read())
        with open(params, "rb") as src:
            (work / f"{v}.finetune.params").write_bytes(src.read())
    written = plots.plot_demo_runs(str(work), model_args=size_flags() + ["--seed", "0"])
    names = sorted(os.path.basename(p) for p in written)
    assert names == ["attention.png", "curves.finetune.png", "curves.pretrain.png"]
    for p in written:
        assert_png(p)


def test_plot_demo_runs_draws_only_this_runs_variants(tmp_path, monkeypatch):
    """`demo --variants synthesizer` into a folder of an earlier full demo drew the earlier vanilla
    curves too, and attention with the earlier vanilla model (trained on another world, maybe)."""
    monkeypatch.setattr(plots, "pyplot", lambda: None)
    drawn = []
    monkeypatch.setattr(plots, "plot_curves", lambda paths, out, title: drawn.append(
        (os.path.basename(out), sorted(os.path.basename(p)[:-len(plots.LOG_SUFFIX)] for p in paths))))
    monkeypatch.setattr(plots, "_demo_attention", lambda *a: drawn.append("attention"))
    for name in ("vanilla.model", "vanilla.pretrain", "vanilla.finetune", "synthesizer.pretrain",
                 "synthesizer.finetune"):
        (tmp_path / f"{name}.params{plots.LOG_SUFFIX}").write_text("")
    plots.plot_demo_runs(str(tmp_path), variants=["synthesizer"])
    assert drawn == [("curves.pretrain.png", ["synthesizer.pretrain.params"]),
                     ("curves.finetune.png", ["synthesizer.finetune.params"])]
    drawn.clear()
    plots.plot_demo_runs(str(tmp_path), variants=["nopretrain", "vanilla", "synthesizer"])
    assert drawn == [("curves.pretrain.png", ["synthesizer.pretrain.params", "vanilla.pretrain.params"]),
                     ("curves.finetune.png", ["synthesizer.finetune.params", "vanilla.finetune.params",
                                              "vanilla.model.params"]), "attention"]


def test_plot_demo_runs_names_an_earlier_runs_pictures(tmp_path, monkeypatch, capsys):
    """`demo --variants nopretrain` after a full demo drew no pretraining curves and no attention
    figure, and the earlier run's curves.pretrain.png and attention.png sat beside this run's files
    without a word: they are kept, and named as not this run's."""
    monkeypatch.setattr(plots, "pyplot", lambda: None)
    monkeypatch.setattr(plots, "plot_curves", lambda paths, out, title: open(out, "w").close())
    for name in ("vanilla.model", "vanilla.pretrain"):
        (tmp_path / f"{name}.params{plots.LOG_SUFFIX}").write_text("")
    for name in ("curves.pretrain.png", "attention.png"):
        (tmp_path / name).write_text("earlier")
    plots.plot_demo_runs(str(tmp_path), variants=["nopretrain"])
    out = capsys.readouterr().out
    assert f"wrote {tmp_path / 'curves.finetune.png'}" in out
    assert f"kept from an earlier run in {tmp_path} (not drawn this time): curves.pretrain.png, attention.png" in out
    assert (tmp_path / "attention.png").read_text() == "earlier"
    plots.plot_demo_runs(str(tmp_path), variants=["nopretrain", "vanilla"])  # draws both curves
    assert "kept from an earlier run" in capsys.readouterr().out  # attention.png still the earlier one
    (tmp_path / "attention.png").unlink()
    plots.plot_demo_runs(str(tmp_path), variants=["nopretrain", "vanilla"])
    assert "kept from an earlier run" not in capsys.readouterr().out


def test_the_demos_attention_map_asks_the_shortest_dev_question_with_its_place(tmp_path, monkeypatch):
    """The most readable axes: the shortest dev question, drawn with its true place beside the answers; a
    question given is drawn with its dev place when it has one."""
    drawn = []
    monkeypatch.setattr(plots, "draw_attention", lambda question, corpus, models, out, size=None, expected=None:
                        drawn.append((question, expected, corpus, models, size)))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "wiki.txt").write_text(TEXT, encoding="utf-8")
    (tmp_path / "data" / "birth_dev.tsv").write_text(
        "Where was Ada Lovell born?\tLeeds\nWhere was Mei Tan born?\tPenang\nWhere was Ivo Marek born?\tBrno\n",
        encoding="utf-8")
    for v in ("vanilla", "synthesizer"):
        (tmp_path / f"{v}.finetune.params").write_bytes(b"params")
    written = []
    plots._demo_attention(str(tmp_path), ["--n_layer", "2"], None, None, written)
    models = [(str(tmp_path / "vanilla.finetune.params"), "vanilla"),
              (str(tmp_path / "synthesizer.finetune.params"), "synthesizer")]
    size = dict(plots.COURSE_SIZE, n_layer=2)
    assert drawn == [("Where was Mei Tan born?", "Penang", str(tmp_path / "data" / "wiki.txt"), models, size)]
    assert written == [str(tmp_path / "attention.png")]
    drawn.clear()
    plots._demo_attention(str(tmp_path), [], "Where was Ivo Marek born?", None, [])
    assert [(q, place) for q, place, *_ in drawn] == [("Where was Ivo Marek born?", "Brno")]


# ----------------------------------------------------------------------------- the attention weights

def tiny_model(variant, T=12):
    torch.manual_seed(1)
    model = GPT(GPTConfig(20, 16, n_layer=2, n_head=2, n_embd=16, synthesizer=variant == "synthesizer"))
    if variant == "synthesizer":  # away from the near-uniform initialisation
        for block in model.blocks:
            torch.nn.init.normal_(block.attn.w2, std=1.0)
            torch.nn.init.normal_(block.attn.b2, std=1.0)
    return model.eval(), torch.randint(2, 20, (1, T))


@pytest.mark.parametrize("variant", ["vanilla", "synthesizer"])
def test_recomputed_weights_are_the_ones_the_module_applies(variant):
    model, idx = tiny_model(variant)
    seen = []

    def capture(module, inputs, output):
        seen.append((module, inputs[0], output))

    handles = [b.attn.register_forward_hook(capture) for b in model.blocks]
    with torch.no_grad():
        model(idx)
    for h in handles:
        h.remove()
    maps = plots.attention_maps(model, idx)
    assert len(maps) == len(seen) == 2
    T = idx.shape[1]
    for (module, x, output), w in zip(seen, maps):
        assert w.shape == (2, T, T)
        assert torch.allclose(w.sum(-1), torch.ones(2, T), atol=1e-5)
        assert torch.all(w.triu(diagonal=1) == 0)  # nothing from the future
        # rebuild the module's output from the weights: proj(weights @ values)
        with torch.no_grad():
            v = module.value(x).view(1, T, 2, 8).transpose(1, 2)
            y = (w.unsqueeze(0) @ v).transpose(1, 2).reshape(1, T, 16)
            assert torch.allclose(module.proj(y), output, atol=1e-5)


@pytest.mark.parametrize("variant", ["vanilla", "synthesizer"])
def test_reading_the_weights_of_a_training_model_draws_nothing_and_keeps_its_mode(variant):
    """attention_weights runs the layer to read what it applies: in train mode with dropout that drew masks,
    moving the caller's random state, where recomputing the formula had not; it reads in eval mode (the same
    weights) and gives the model back in the mode it had, its paths and hooks as they were."""
    model, idx = tiny_model(variant)
    model.train()
    for block in model.blocks:
        block.attn.attn_drop.p = block.attn.resid_drop.p = 0.3
    x = model.tok_emb(idx).detach()  # (1, T, 16)
    state = torch.get_rng_state()
    weights = plots.attention_weights(model.blocks[0].attn, x)
    maps = plots.attention_maps(model, idx)
    assert torch.equal(torch.get_rng_state(), state)
    assert model.training and all(b.attn.training and b.attn.fast for b in model.blocks)
    assert all(not b.attn.attn_drop._forward_hooks for b in model.blocks)
    assert torch.allclose(weights[0], plots.attention_weights(model.blocks[0].attn.eval(), x)[0])
    assert torch.allclose(weights.sum(-1), torch.ones(1, 2, idx.shape[1]), atol=1e-5) and len(maps) == 2


def test_a_layer_whose_weights_cannot_be_read_is_one_line_and_leaves_no_hook():
    """Maps read each layer's weights at its attn_drop: a layer without one, or that never calls it, is a
    PlotError naming its class (an AttributeError and an IndexError before), and the hooks already put on the
    layers before it come off."""
    model, idx = tiny_model("vanilla")

    class Plain(torch.nn.Module):  # a layer of its own, attention without dropout
        def forward(self, x):
            return x

    class Skips(Plain):
        def __init__(self):
            super().__init__()
            self.attn_drop = torch.nn.Dropout(0.1)

    for layer, said in ((Plain(), "Plain has no attn_drop module"), (Skips(), "Skips's forward never called")):
        with pytest.raises(plots.PlotError, match=said):
            plots.attention_weights(layer, torch.zeros(1, 4, 16))
        first = model.blocks[0].attn
        model.blocks[1].attn = layer
        with pytest.raises(plots.PlotError, match=said):
            plots.attention_maps(model, idx)
        assert not first.attn_drop._forward_hooks and not model.training


def test_first_layer_synthesizer_weights_ignore_the_other_tokens():
    """The point of the maps: a synthesizer row depends on the query token and the positions only."""
    for variant, unchanged in (("synthesizer", True), ("vanilla", False)):
        model, idx = tiny_model(variant)
        other = idx.clone()
        other[0, 3] = 2 if idx[0, 3] != 2 else 3  # another character at position 3
        a, b = plots.attention_maps(model, idx)[0], plots.attention_maps(model, other)[0]
        rows = [i for i in range(4, idx.shape[1])]  # query positions that see position 3
        same = torch.allclose(a[:, rows], b[:, rows], atol=1e-6)
        assert same == unchanged, variant


def test_plot_demo_runs_without_matplotlib(monkeypatch, tmp_path, capsys):
    def missing():
        raise plots.MissingMatplotlib(plots.INSTALL_HINT)

    monkeypatch.setattr(plots, "pyplot", missing)
    (tmp_path / "vanilla.pretrain.params.log.jsonl").write_text('{"step": 1, "loss": 2.0, "lr": 0.1}\n')
    assert plots.plot_demo_runs(str(tmp_path)) == []
    out = capsys.readouterr().out
    assert out == startup.missing_requirement("plots.py", "matplotlib") + "; no plots written\n"


def test_without_matplotlib_a_python_beside_run_shs_venv_is_told_to_activate_it(tmp_path):
    """python3 src/plots.py from a system Python without matplotlib said to pip-install it into that Python, though
    the .venv run.sh made has it (run.py and the grader say to activate it): now the entry points' one line. Run
    by the Python the .venv was made from (matplotlib hidden from it), as a user who did not activate it."""
    import subprocess
    in_venv = os.path.realpath(sys.prefix) == os.path.realpath(os.path.join(ROOT, ".venv"))
    if not in_venv or sys.platform == "win32":
        pytest.skip("the suite runs in the .venv run.sh made (./run.sh test, CI); here it does not")
    log = tmp_path / "a.log.jsonl"
    log.write_text('{"step": 1, "loss": 2.0, "lr": 0.1}\n')
    code = ("import runpy, sys; sys.modules['matplotlib'] = None; sys.argv = sys.argv[1:]; "
            "runpy.run_path(sys.argv[0], run_name='__main__')")
    run = subprocess.run([sys._base_executable, "-c", code, "src/plots.py", "curves", str(log), "--out",
                          str(tmp_path / "c.png")], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 2 and run.stderr == (f"plots.py: this Python ({sys._base_executable}) has no matplotlib; "
                                                  f"activate the environment run.sh made (. .venv/bin/activate) and "
                                                  f"run it again\n"), run.stderr
    assert not (tmp_path / "c.png").exists()


# ----------------------------------------------------------------------------- where the picture goes

def small_log(folder):
    log = folder / "a.log.jsonl"
    log.write_text("".join(json.dumps({"step": s, "loss": 3.0 / s, "lr": 1e-3}) + "\n" for s in range(1, 9)))
    return str(log)


def curves(args, capsys):
    """plots.py curves in this process: exit status, stdout, stderr lines."""
    code = plots.main(["curves", *args])
    out = capsys.readouterr()
    return code, out.out, out.err.splitlines()


def test_out_that_is_a_folder_is_an_error(tmp_path, capsys):
    needs_matplotlib()
    folder = tmp_path / "pictures"
    folder.mkdir()
    (folder / "mine.txt").write_text("mine")
    for out in (str(folder), str(folder) + os.sep):
        code, printed, err = curves([small_log(tmp_path), "--out", out], capsys)
        assert code == 2 and printed == "" and err == [
            f"plots.py: error: {out}: --out is a folder; give the picture's file path, e.g. "
            f"{os.path.join(out, 'plot.png')}"]
    assert os.listdir(folder) == ["mine.txt"] and not (tmp_path / "pictures.png").exists()


def test_out_never_replaces_a_file_that_is_no_plot(tmp_path, capsys):
    """`plot curves LOG --out submission.pdf` replaced the written answers LaTeX made, and `--out w.png` a
    corpus saved under that name: an existing file is replaced only when it is a picture of the format
    its name says and, for formats that name their writer (PDF, SVG, EPS, PS), one matplotlib wrote.
    An earlier plot is replaced as before."""
    needs_matplotlib()
    log = small_log(tmp_path)
    answers = tmp_path / "submission.pdf"
    answers.write_bytes(b"%PDF-1.5\n%\xd0\xd4\xc5\xd8\n1 0 obj << /Producer (pdfTeX-1.40.25) >> endobj\n")
    corpus = tmp_path / "w.png"
    corpus.write_text("Ann Lee was born in Lima.\n")
    # documents holding a matplotlib figure: dvips' PostScript of a sheet that includes one, two plots in one PDF
    figure = tmp_path / "figure.eps"
    assert curves([log, "--out", str(figure)], capsys)[0] == 0
    sheet = tmp_path / "sheet.ps"
    sheet.write_bytes(b"%!PS-Adobe-2.0\n%%Creator: dvips(k) 2023.1\n%%Pages: 1\n" + figure.read_bytes())
    from matplotlib.backends.backend_pdf import PdfPages
    import matplotlib.pyplot as plt
    both = tmp_path / "both.pdf"
    with PdfPages(both) as pages:
        for _ in range(2):
            fig = plt.figure()
            pages.savefig(fig)
            plt.close(fig)
    for mine, kind in ((answers, "a .pdf file that is not one picture matplotlib drew (a document of your own?)"),
                       (corpus, "no .png picture"),
                       (sheet, "a .ps file that is not one picture matplotlib drew (a document of your own?)"),
                       (both, "a .pdf file that is not one picture matplotlib drew (a document of your own?)")):
        before = mine.read_bytes()
        code, printed, err = curves([log, "--out", str(mine)], capsys)
        assert code == 2 and printed == "" and err == [
            f"plots.py: error: {mine}: already there, and it is {kind}, which a picture would replace; give --out "
            f"another path, or move that file away first"]
        assert mine.read_bytes() == before
    for name in ("plot.pdf", "plot.png", "plot.svg", "figure.eps"):  # a plot of its own: drawn again over it
        for _ in range(2):
            code, printed, _ = curves([log, "--out", str(tmp_path / name)], capsys)
            assert code == 0 and printed == f"wrote {tmp_path / name}\n"
    assert sorted(os.listdir(tmp_path)) == sorted(["submission.pdf", "w.png", "plot.pdf", "plot.png", "plot.svg",
                                                   "figure.eps", "sheet.ps", "both.pdf", os.path.basename(log)])


def test_it_prints_the_path_it_wrote(tmp_path, capsys):
    needs_matplotlib()
    code, printed, _ = curves([small_log(tmp_path), "--out", str(tmp_path / "pic")], capsys)
    assert code == 0 and printed == f"wrote {tmp_path / 'pic.png'}\n"  # matplotlib's default format
    assert_png(tmp_path / "pic.png")
    code, printed, _ = curves([small_log(tmp_path), "--out", str(tmp_path / "pic.svg")], capsys)
    assert code == 0 and printed == f"wrote {tmp_path / 'pic.svg'}\n"
    assert (tmp_path / "pic.svg").read_text().lstrip().startswith("<?xml")
    code, printed, err = curves([small_log(tmp_path), "--out", str(tmp_path / "pic.xyz")], capsys)
    assert code == 2 and len(err) == 1 and "matplotlib cannot write .xyz files" in err[0]
    assert sorted(os.listdir(tmp_path)) == ["a.log.jsonl", "pic.png", "pic.svg"]


def umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("error, code, says", [
    (OSError(28, "No space left on device"), 2, "plots.py: error: {}: cannot write it (No space left on device)"),
    (RuntimeError("'xelatex' not found"), 2, "plots.py: error: {}: matplotlib could not write a .png file here "
                                             "('xelatex' not found)"),  # as .pgf does without TeX
    (KeyboardInterrupt(), 130, "plots.py: interrupted; {} unchanged"),
    (signal.SIGTERM, 143, "plots.py: terminated (SIGTERM); {} unchanged"),  # killed at once, it left its temp file
])
def test_a_failed_save_leaves_the_old_picture(tmp_path, capsys, monkeypatch, error, code, says):
    needs_matplotlib()
    import matplotlib.figure
    out = tmp_path / "curves.png"
    assert curves([small_log(tmp_path), "--out", str(out)], capsys)[0] == 0
    old = out.read_bytes()
    assert os.stat(out).st_mode & 0o777 == 0o666 & ~umask()  # an ordinary file's mode

    def half_save(self, path, **kwargs):
        with open(path, "wb") as f:
            f.write(b"\x89PNG half")
        if error == signal.SIGTERM:
            signal.raise_signal(error)
        raise error
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", half_save)
    caught = lambda *a: None  # noqa: E731  if plots.py handled no SIGTERM, this keeps pytest alive to fail
    previous = signal.signal(signal.SIGTERM, caught)
    try:
        got, printed, err = curves([small_log(tmp_path), "--out", str(out)], capsys)
        assert signal.getsignal(signal.SIGTERM) is caught  # given back
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert got == code and len(err) == 1 and err[0].startswith(says.format(out)), err
    assert out.read_bytes() == old and sorted(os.listdir(tmp_path)) == ["a.log.jsonl", "curves.png"]


def test_a_ctrl_c_as_the_temporary_file_is_closed_leaves_no_temporary_file(tmp_path, capsys, monkeypatch):
    """The temporary picture was made before the `try` that removes it, and closed between the two: a Ctrl-C
    there left `.curves.png.XXXX.png` beside the picture."""
    needs_matplotlib()
    import tempfile
    out = tmp_path / "curves.png"
    assert curves([small_log(tmp_path), "--out", str(out)], capsys)[0] == 0
    old = out.read_bytes()
    real_mkstemp, real_close, made = tempfile.mkstemp, os.close, []

    def mkstemp(*args, **kwargs):
        fd, path = real_mkstemp(*args, **kwargs)
        made.append(fd)
        return fd, path

    def close(fd):
        real_close(fd)
        if made and fd == made[0]:
            made.clear()
            raise KeyboardInterrupt  # as the temporary file is closed
    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    monkeypatch.setattr(os, "close", close)
    got, printed, err = curves([small_log(tmp_path), "--out", str(out)], capsys)
    monkeypatch.undo()
    assert got == 130 and err == [f"plots.py: interrupted; {out} unchanged"], err
    assert out.read_bytes() == old and sorted(os.listdir(tmp_path)) == ["a.log.jsonl", "curves.png"]


def test_attention_takes_a_name_and_the_defaults_ask_has(monkeypatch, tmp_path):
    """As `ask`: a bare name becomes the course's question, the variant defaults to vanilla and the
    corpus to data/wiki.txt (a name was drawn as "Emily Lee⁇", and --variant was required)."""
    seen = {}
    monkeypatch.setattr(plots, "draw_attention", lambda question, corpus, models, out, **kw: seen.update(
        question=question, corpus=corpus, models=models))
    assert plots.main(["attention", "--params", "v.params", "--question", "Emily Lee", "--out",
                       str(tmp_path / "a.png")]) == 0
    assert seen["question"] == "Where was Emily Lee born?" and seen["models"] == [("v.params", "vanilla")]
    assert seen["corpus"] == os.path.join(ROOT, "data", "wiki.txt")


def test_odd_out_paths_and_bad_tex_are_named_for_what_they_are(tmp_path, capsys):
    """--out /dev/null wrote "/dev/null.png" into /dev; --out '' wrote "./.png.png"; --out through a
    symbolic link replaced the link with a file (the other tools write through it); and a title with
    bad TeX math between $ signs was blamed on --out ("give --out a .png, .svg or .pdf name")."""
    needs_matplotlib()
    log = small_log(tmp_path)
    for out, says in (("/dev/null", "/dev/null: --out is not a regular file (a device or a FIFO)"),
                      ("", "--out is empty; give the picture's file path")):
        code, _, err = curves([log, "--out", out], capsys)
        assert code == 2 and len(err) == 1 and says in err[0], err
    assert not os.path.exists("/dev/null.png") and not (tmp_path / ".png.png").exists()
    real = tmp_path / "pictures" / "curves.png"
    real.parent.mkdir()
    real.write_bytes(b"\x89PNG\r\n\x1a\n an older picture")
    link = tmp_path / "latest.png"
    link.symlink_to(real)
    code, _, err = curves([log, "--out", str(link)], capsys)
    assert code == 0 and link.is_symlink() and real.read_bytes() != b"\x89PNG\r\n\x1a\n an older picture", err
    assert real.read_bytes().startswith(b"\x89PNG")
    code, _, err = curves([log, "--out", str(tmp_path / "t.png"), "--title", "$\\badmath$"], capsys)
    assert code == 2 and len(err) == 1 and "matplotlib could not draw the picture" in err[0], err
    assert "is read as TeX math: leave the $ out or write \\$" in err[0] and "give --out" not in err[0]
    assert not (tmp_path / "t.png").exists()


def test_a_file_the_system_will_not_open_is_one_line(tmp_path, monkeypatch, capsys):
    """An unreadable log (a permission, as for group files on a cluster) ended in a PermissionError
    traceback; so did the attention map's params. One line now, exit 2; an OSError naming no file
    keeps its traceback."""
    log = tmp_path / "a.log.jsonl"
    log.write_text('{"step": 1, "epoch": 1, "loss": 2.0, "lr": 0.1}\n', encoding="utf-8")
    real_open = open

    def refusing(path, *args, **kwargs):
        if str(path) == str(log):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(plots, "open", refusing, raising=False)  # plots' own name lookups only
    assert plots.main(["curves", str(log), "--out", str(tmp_path / "c.png")]) == 2
    assert capsys.readouterr().err == (f"plots.py: error: {log}: cannot be read (Permission denied); check the "
                                       f"file's permissions\n")
    monkeypatch.setattr(plots, "_attention_command", lambda args: (_ for _ in ()).throw(
        PermissionError(13, "Permission denied", "v.params")))
    argv = ["attention", "--params", "v.params", "--variant", "vanilla", "--pretrain_corpus_path", "w",
            "--question", "Emily Lee", "--out", str(tmp_path / "a.png")]
    assert plots.main(argv) == 2
    assert capsys.readouterr().err == "plots.py: error: v.params: Permission denied; check the file's permissions\n"
    monkeypatch.setattr(plots, "_attention_command", lambda args: (_ for _ in ()).throw(OSError("no file named")))
    with pytest.raises(OSError, match="no file named"):
        plots.main(argv)


def test_out_replaces_an_empty_file_but_no_svg_or_postscript_of_another_program(tmp_path, capsys):
    """Mutation audit of _not_replaceable: an empty file is no one's document (a picture goes over it); an
    SVG is a format that names its writer, so an Inkscape drawing is kept; and a PostScript document is
    judged by the Creator in its own header, not by a matplotlib figure's Creator included further down."""
    needs_matplotlib()
    log = small_log(tmp_path)
    for name in ("empty.png", "empty.pdf"):
        (tmp_path / name).write_bytes(b"")
        code, printed, _ = curves([log, "--out", str(tmp_path / name)], capsys)
        assert code == 0 and printed == f"wrote {tmp_path / name}\n"
    drawing = tmp_path / "drawing.svg"
    drawing.write_text('<?xml version="1.0"?>\n<!-- Created with Inkscape (http://www.inkscape.org/) -->\n'
                       '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>\n')
    figure = tmp_path / "figure.eps"
    assert curves([log, "--out", str(figure)], capsys)[0] == 0
    notes = tmp_path / "notes.ps"  # a header without a Creator, then a matplotlib figure pasted in
    notes.write_bytes(b"%!PS-Adobe-3.0\n%%Title: notes\n" + b"%%BoundingBox: 0 0 612 792\n" * 20
                      + figure.read_bytes())
    for mine, ext in ((drawing, "svg"), (notes, "ps")):
        before = mine.read_bytes()
        code, printed, err = curves([log, "--out", str(mine)], capsys)
        assert code == 2 and printed == "" and err == [
            f"plots.py: error: {mine}: already there, and it is a .{ext} file that is not one picture matplotlib "
            f"drew (a document of your own?), which a picture would replace; give --out another path, or move that "
            f"file away first"]
        assert mine.read_bytes() == before


def test_a_second_model_of_another_vocabulary_and_heads_that_do_not_divide_the_params_width_are_refused(
        runs, tmp_path, capsys):
    """Mutation audit of fill_from_params: two params of one size whose cards record other vocabularies
    are not drawn as one picture; and a --n_head given alone, which the params' width (read off their
    shapes, after the flags were checked) does not divide, is a usage error, not a failure to build it."""
    from submission.card import write_card
    ds = runs["vanilla"][2]
    model = GPT(GPTConfig(ds.vocab_size, SIZE["block_size"], n_layer=SIZE["n_layer"], n_head=SIZE["n_head"],
                          n_embd=SIZE["n_embd"]))
    first, second = tmp_path / "a.params", tmp_path / "b.params"
    for path in (first, second):
        shutil.copy(runs["vanilla"][0], path)
    write_card(str(first), model, ds.itos)
    other = dict(ds.itos)
    other[len(other) - 1] = "\u00e9" if other[len(other) - 1] != "\u00e9" else "\u00e8"
    write_card(str(second), model, other)
    out = tmp_path / "a.png"
    argv = ["attention", "--params", str(first), "--params2", str(second),
            "--pretrain_corpus_path", os.path.join(runs["folder"], "wiki.txt"), "--question", QUESTION,
            "--out", str(out)]
    assert plots.main(argv) == 2
    assert capsys.readouterr().err == (
        f"plots.py: error: {second}: a model of another size or corpus than {first} (another corpus's vocabulary "
        f"(their cards say)); the two models of one picture share both: give --params2 one trained alike, or draw "
        f"each alone\n")
    with pytest.raises(SystemExit) as stop:
        plots.main(["attention", "--params", runs["vanilla"][0], "--n_head", "3", "--pretrain_corpus_path",
                    os.path.join(runs["folder"], "wiki.txt"), "--question", QUESTION, "--out", str(out)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and f"--n_embd {SIZE['n_embd']} must be a multiple of --n_head 3" in err, err
    assert not out.exists()


def test_a_plot_behind_leading_blank_lines_or_one_that_cannot_be_read_is_drawn_over(tmp_path, capsys, monkeypatch):
    """Mutation audit of _not_replaceable: a matplotlib SVG an editor saved with a blank line first is still a
    plot, and a file the check cannot read is left to the save (which replaces it through a new file, or says
    what it met), not refused as unreadable."""
    needs_matplotlib()
    log = small_log(tmp_path)
    svg = tmp_path / "plot.svg"
    assert curves([log, "--out", str(svg)], capsys)[0] == 0
    svg.write_bytes(b"\n  " + svg.read_bytes())
    code, printed, _ = curves([log, "--out", str(svg)], capsys)
    assert code == 0 and printed == f"wrote {svg}\n" and svg.read_bytes().startswith(b"<?xml")
    locked = tmp_path / "locked.pdf"
    locked.write_bytes(b"%PDF-1.5 someone's")
    real_open = open

    def refusing(path, *args, **kwargs):
        if str(path) == str(locked):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(plots, "open", refusing, raising=False)
    code, printed, _ = curves([log, "--out", str(locked)], capsys)
    assert code == 0 and printed == f"wrote {locked}\n"


def test_every_plot_flag_says_what_it_does_and_the_top_help_points_to_the_commands(capsys):
    """`./run.sh plot --help` lists only the two commands: it says where their flags are, and each flag of
    `curves --help` and `attention --help` has its own line of help (--title and --dpi had none)."""
    parser = plots.build_parser()
    for name, sub in parser.commands.items():
        for action in sub._actions:
            assert action.help, f"plots.py {name} {'/'.join(action.option_strings) or action.dest} has no help"
    with pytest.raises(SystemExit):
        parser.parse_args(["--help"])
    assert "curves --help and attention --help" in capsys.readouterr().out


def test_a_full_disk_under_the_pdf_writer_is_one_line(tmp_path, capsys, monkeypatch):
    """On a full disk matplotlib's PDF writer, cleaning up after the OSError, raised AttributeError ('Stream' object
    has no attribute 'pos'), and plots.py printed a traceback (PNG and SVG gave the one line). An OSError anywhere
    in the chain is the one line, with the disk named; an error with none in its chain is raised as it is."""
    needs_matplotlib()
    import errno
    from matplotlib.figure import Figure
    out = tmp_path / "curves.pdf"
    assert curves([small_log(tmp_path), "--out", str(out)], capsys)[0] == 0
    old = out.read_bytes()

    def full_disk(self, *args, **kwargs):
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        finally:
            raise AttributeError("'Stream' object has no attribute 'pos'")  # noqa: B012 - as matplotlib's cleanup
    monkeypatch.setattr(Figure, "savefig", full_disk)
    got, printed, err = curves([small_log(tmp_path), "--out", str(out)], capsys)
    assert got == 2 and err == [f"plots.py: error: {out}: cannot write it (No space left on device); free some disk "
                                f"space or give --out a path you can write to"], err
    assert out.read_bytes() == old and sorted(os.listdir(tmp_path)) == ["a.log.jsonl", "curves.pdf"]

    def a_bug(self, *args, **kwargs):
        raise AttributeError("a bug, not the disk")
    monkeypatch.setattr(Figure, "savefig", a_bug)
    with pytest.raises(AttributeError, match="a bug, not the disk"):
        plots.main(["curves", small_log(tmp_path), "--out", str(out)])
    assert out.read_bytes() == old and sorted(os.listdir(tmp_path)) == ["a.log.jsonl", "curves.pdf"]


def test_a_log_through_a_link_is_watched_at_the_partial_beside_the_file_it_names(tmp_path, capsys):
    """Training writes a linked --log_path's `.partial` beside the file the link names (trainer.partial_log_path);
    read_log looked beside the link: a log not finished yet was "not found", and a finished one was plotted
    without the note that a newer run is writing its `.partial`. Lines ending in \\r\\n or a lone \\r read as
    lines (read_log reads line by line now, as splitlines split them); a row keeps only what a plot draws."""
    from submission.trainer import partial_log_path
    (tmp_path / "real").mkdir()
    link = tmp_path / "run.log.jsonl"
    link.symlink_to(os.path.join("real", "run.log.jsonl"))
    partial = tmp_path / "real" / "run.log.jsonl.partial"
    assert partial_log_path(str(link)) == str(partial)
    partial.write_bytes(b'{"step": 1, "loss": 2.0, "lr": 0.1, "epoch": 1}\r\n{"step": 2, "loss": 1.5, "lr": 0.1}\r'
                        b'{"step": 3, "loss": 1.0, "lr": 0.1}\n{"step": 4, "lo')  # the last row still being written
    assert plots.read_log(str(link)) == [{"step": 1, "loss": 2.0, "lr": 0.1}, {"step": 2, "loss": 1.5, "lr": 0.1},
                                         {"step": 3, "loss": 1.0, "lr": 0.1}]
    assert capsys.readouterr().err.startswith(f"note: {link} is not there yet: plotting {partial}, ")
    (tmp_path / "real" / "run.log.jsonl").write_text('{"step": 1, "loss": 3.0, "lr": 0.1}\n')
    os.utime(tmp_path / "real" / "run.log.jsonl", (1, 1))
    assert plots.read_log(str(link)) == [{"step": 1, "loss": 3.0, "lr": 0.1}]
    assert f"{partial}, newer, is the log of a run training now" in capsys.readouterr().err


def test_a_file_size_limit_under_the_plot_is_named(tmp_path, capsys, monkeypatch):
    """EFBIG (ulimit -f) said only "give --out a path you can write to": the limit is named."""
    needs_matplotlib()
    import errno
    from matplotlib.figure import Figure

    def too_big(self, *args, **kwargs):
        raise OSError(errno.EFBIG, "File too large")
    monkeypatch.setattr(Figure, "savefig", too_big)
    out = tmp_path / "curves.png"
    got, printed, err = curves([small_log(tmp_path), "--out", str(out)], capsys)
    assert got == 2 and err == [f"plots.py: error: {out}: cannot write it (File too large); raise the file size limit "
                                f"(ulimit -f) or give --out a path you can write to"], err

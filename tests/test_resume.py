"""Resuming an interrupted training run (submission/resume.py, run.py --resume): a run interrupted
after a saved epoch and then resumed ends with the uninterrupted run's params, bit for bit, and the
same loss log; a state from another run is refused in one line; the state goes once training ends.

Interrupts are a KeyboardInterrupt raised from a chosen step, so nothing depends on timing.

Run:  python -m pytest -q tests/test_resume.py
"""
import json
import os
import signal
import random
import re

import pytest
import torch

import ledger
import run as driver
from submission import GPT, GPTConfig, Trainer, TrainerConfig
from submission.card import read_card
from submission.dataset import CharCorruptionDataset, DataError, NameDataset
from submission import resume as resume_module
from submission.resume import data_digest
from submission.trainer import TrainingRun
from submission.utils import ParamsError
from test_graphs import capture_rerun
from torch_version import CPU_STEP_GRAPHS

WIKI = "\n".join(f"Person {c}{d} was born in {p}." for c in "ABCDEFGH" for d in "xyz"
                 for p in ["Lisbon", "Oslo", "Lima"][:1 + (ord(c) % 3)]) + "\n"


def corpus():
    return CharCorruptionDataset(WIKI, 32)


def trainer(tmp_path, dataset, graphs=False, **conf):
    """A small pretraining run, dropout on (it draws from torch's stream, span corruption from Python's)."""
    torch.manual_seed(0)
    random.seed(0)
    model = GPT(GPTConfig(dataset.vocab_size, dataset.block_size, n_layer=1, n_head=2, n_embd=16))
    tconf = dict(max_epochs=5, batch_size=8, learning_rate=3e-3, lr_decay=True, warmup_tokens=100,
                 final_tokens=20000, num_threads=1, log_path=str(tmp_path / "log.jsonl"),
                 state_path=str(tmp_path / "params.state"), state_every=0)
    tconf.update(conf)
    t = Trainer(model, dataset, None, TrainerConfig(**tconf))
    if graphs:
        t.prepare = lambda steps=None: with_graphs(TrainingRun(t, steps))
    return t


def with_graphs(run):
    run.use_step_graphs(capture=capture_rerun)
    return run


def interrupt_at(monkeypatch, step):
    """Ctrl-C as the run's `step`-th optimisation step (1-based) starts."""
    calls = {"n": 0}
    original = TrainingRun.step

    def step_or_interrupt(self, x, y):
        calls["n"] += 1
        if calls["n"] == step:
            raise KeyboardInterrupt
        return original(self, x, y)

    monkeypatch.setattr(TrainingRun, "step", step_or_interrupt)


def params(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


def log_without_times(path):
    rows = [json.loads(line) for line in open(path, encoding="utf-8")]
    return [{k: v for k, v in row.items() if k != "time"} for row in rows]


@pytest.mark.parametrize("graphs", [False, pytest.param(True, marks=CPU_STEP_GRAPHS)])
def test_an_interrupted_run_resumed_ends_with_the_uninterrupted_params(tmp_path, monkeypatch, capsys, graphs):
    """graphs: step graphs (captures re-run on the CPU), whose learning rate is a tensor the loaded
    optimizer state must point at again."""
    data = corpus()
    steps_per_epoch = -(-len(data) // 8)
    whole = trainer(tmp_path / "whole", data, graphs)
    whole.train()
    expected, expected_log = params(whole.model), log_without_times(tmp_path / "whole" / "log.jsonl")
    assert not os.path.exists(tmp_path / "whole" / "params.state")  # removed once training ended

    with monkeypatch.context() as m:
        interrupt_at(m, 2 * steps_per_epoch + 2)  # in epoch 3: the state after epoch 2 is kept
        with pytest.raises(KeyboardInterrupt):
            trainer(tmp_path / "cut", data, graphs).train()
    assert f"training state after epoch 2 of 5 is in {tmp_path / 'cut' / 'params.state'}" in capsys.readouterr().err
    random.seed(123)  # whatever the streams are now, resuming restores them
    torch.manual_seed(123)
    resumed = trainer(tmp_path / "cut", data, graphs, resume=True)
    resumed.train()
    assert "epoch 3 of 5, after step 14" in capsys.readouterr().out
    for name, p in expected.items():
        assert torch.equal(resumed.model.state_dict()[name], p), name
    assert log_without_times(tmp_path / "cut" / "log.jsonl") == expected_log
    assert not os.path.exists(tmp_path / "cut" / "params.state")
    start = GPT(GPTConfig(data.vocab_size, 32, n_layer=1, n_head=2, n_embd=16)).state_dict()
    assert max((expected[n] - start[n]).abs().max().item() for n in expected if n.endswith("weight")) > 1e-2


def test_a_resumed_run_draws_the_interrupted_runs_examples_whatever_the_stream_holds(tmp_path, monkeypatch):
    """The fast path draws each example under a seed from the run's key (draws.py): the state keeps the key,
    so a resumed run whose Python stream was moved on before train() (its key drawn anew) still reads the
    interrupted run's examples."""
    data = corpus()
    whole = trainer(tmp_path / "whole", data)
    whole.train()
    with monkeypatch.context() as m:
        interrupt_at(m, -(-len(data) // 8) + 1)
        with pytest.raises(KeyboardInterrupt):
            trainer(tmp_path / "cut", data).train()
    assert isinstance(torch.load(tmp_path / "cut" / "params.state", weights_only=False)["rng"]["draws"], int)
    resumed = trainer(tmp_path / "cut", data, resume=True)
    random.seed(123)
    resumed.train()
    for name, p in whole.model.state_dict().items():
        assert torch.equal(resumed.model.state_dict()[name], p), name


def test_resuming_with_another_thread_count_is_noted(tmp_path, monkeypatch, capsys):
    """Another CPU thread count sums floats in another order: resumed so, the run ended 9.5e-4 from the
    uninterrupted run's params, without a word. The state records the counts used; another one is noted."""
    cut_run(tmp_path, monkeypatch)
    capsys.readouterr()
    assert torch.load(tmp_path / "params.state", weights_only=False)["threads"] == [1]
    trainer(tmp_path, corpus(), resume=True, num_threads=2).train()
    assert ("note: the interrupted run trained with 1 CPU thread(s), this one with 2: its params will differ from an "
            "uninterrupted run's in their last bits (GPT_NUM_THREADS=1 resumes it exactly)") in capsys.readouterr().err
    cut_run(tmp_path, monkeypatch)
    capsys.readouterr()
    trainer(tmp_path, corpus(), resume=True).train()
    assert "CPU thread(s), this one with" not in capsys.readouterr().err


def cut_run(tmp_path, monkeypatch, data=None, **conf):
    """A run interrupted in its second epoch, leaving the state after its first."""
    data = data or corpus()
    with monkeypatch.context() as m:
        interrupt_at(m, -(-len(data) // 8) + 1)
        with pytest.raises(KeyboardInterrupt):
            trainer(tmp_path, data, **conf).train()
    assert os.path.exists(tmp_path / "params.state")
    return data


@pytest.mark.parametrize("change, says", [
    (dict(learning_rate=1e-3), "other training settings (learning_rate 0.003, this run's is 0.001)"),
    (dict(max_epochs=6), "other training settings (max_epochs 5, this run's is 6)"),
    (dict(amp=True), "other training settings (amp (run.py --bf16) False, this run's is True)"),
    (dict(fast=False), "other training settings (fast (False: run.py --reference_train) True, this run's is False)"),
    # every other setting that changes what a step computes
    (dict(batch_size=4), "(batch_size 8, this run's is 4)"),
    (dict(betas=(0.8, 0.95)), "(betas (0.9, 0.95), this run's is (0.8, 0.95))"),
    (dict(grad_norm_clip=0.5), "(grad_norm_clip 1.0, this run's is 0.5)"),
    (dict(weight_decay=0.2), "(weight_decay 0.1, this run's is 0.2)"),
    (dict(lr_decay=False), "(lr_decay True, this run's is False)"),
    (dict(warmup_tokens=50), "(warmup_tokens 100, this run's is 50)"),
    (dict(final_tokens=30000), "(final_tokens 20000, this run's is 30000)"),
])
def test_a_state_of_other_settings_is_refused_in_one_line(tmp_path, monkeypatch, change, says):
    data = cut_run(tmp_path, monkeypatch)
    with pytest.raises(ParamsError) as e:
        trainer(tmp_path, data, resume=True, **change).train()
    message = str(e.value)
    assert message.startswith(f"{tmp_path / 'params.state'}: saved by a run with ") and says in message
    assert "give --restart instead of --resume" in message and "\n" not in message


def test_a_state_saved_before_a_setting_was_checked_resumes_with_its_default(tmp_path, monkeypatch, capsys):
    """States written before bf16 (amp) and the course's loop (fast) were checked settings lack them: they
    ran without bf16, on the fast path."""
    data = cut_run(tmp_path, monkeypatch)
    state = torch.load(tmp_path / "params.state", weights_only=True)
    del state["settings"]["training"]["amp"], state["settings"]["training"]["fast"]
    torch.save(state, tmp_path / "params.state")
    capsys.readouterr()
    trainer(tmp_path, data, resume=True).train()  # no "other training settings (amp None, ...)"
    assert f"resuming from {tmp_path / 'params.state'}: epoch " in capsys.readouterr().out


def test_a_state_of_other_dropout_is_refused_and_one_without_it_resumes(tmp_path, monkeypatch, capsys):
    """run.py --dropout changes no shape but what each step computes: resumed with another rate, the run
    would end at neither run's params. A state of an earlier version lacks the rates: taken as this run's."""
    data = cut_run(tmp_path, monkeypatch)
    t = trainer(tmp_path, data, resume=True)
    t.model = GPT(GPTConfig(data.vocab_size, data.block_size, n_layer=1, n_head=2, n_embd=16,
                            embd_pdrop=0.5, resid_pdrop=0.5, attn_pdrop=0.5))
    with pytest.raises(ParamsError) as e:
        t.train()
    message = str(e.value)
    assert "other training settings (dropout [0.1, 0.1, 0.1], this run's is [0.5, 0.5, 0.5])" in message, message
    assert "\n" not in message
    state = torch.load(tmp_path / "params.state", weights_only=True)
    del state["settings"]["training"]["dropout"]
    torch.save(state, tmp_path / "params.state")
    capsys.readouterr()
    trainer(tmp_path, data, resume=True).train()
    assert f"resuming from {tmp_path / 'params.state'}: epoch " in capsys.readouterr().out


def test_a_state_of_other_data_or_model_is_refused(tmp_path, monkeypatch):
    data = cut_run(tmp_path, monkeypatch)
    other = CharCorruptionDataset(WIKI.replace("Oslo", "Olso"), 32)  # the same vocabulary
    with pytest.raises(ParamsError, match="saved by a run with other data"):
        trainer(tmp_path, other, resume=True).train()
    # a longer corpus: run.py's final_tokens grows with it, and a new character grows the vocabulary; the
    # message names the corpus, the cause, not the setting or the shape it changed
    longer = CharCorruptionDataset(WIKI + WIKI.replace("Oslo", "Quito"), 32)
    assert longer.vocab_size > data.vocab_size
    t = trainer(tmp_path, longer, resume=True, final_tokens=40000)
    t.model = GPT(GPTConfig(longer.vocab_size, 32, n_layer=1, n_head=2, n_embd=16))
    with pytest.raises(ParamsError, match="saved by a run with other data") as e:
        t.train()
    assert "another shape" not in str(e.value) and "training settings" not in str(e.value), str(e.value)
    t = trainer(tmp_path, data, resume=True)
    t.model = GPT(GPTConfig(data.vocab_size, 32, n_layer=2, n_head=2, n_embd=16))
    with pytest.raises(ParamsError, match=r"a model of another shape \(n_layer 1, this run's is 2\)"):
        t.train()
    t = trainer(tmp_path, data, resume=True)  # a setting whose flag has another name says the flag, in its words
    t.model = GPT(GPTConfig(data.vocab_size, 32, n_layer=1, n_head=2, n_embd=16, synthesizer=True))
    with pytest.raises(ParamsError, match=r"another shape \(variant \(run.py --variant\) vanilla, this run's is "
                                          r"synthesizer\)"):  # (it read "synthesizer (run.py --variant) False")
        t.train()


def test_a_state_refused_names_every_setting_that_differs_at_once(tmp_path, monkeypatch):
    """`./run.sh vanilla_pretrain --resume` without the interrupted run's --n_layer 1 --n_head 2 --n_embd 16
    --max_epochs 30 was refused for n_head alone; given --n_head, for n_embd; then for max_epochs: a try
    a setting. The one line names them all, the model's and the training's."""
    data = cut_run(tmp_path, monkeypatch)
    t = trainer(tmp_path, data, resume=True, max_epochs=6)
    t.model = GPT(GPTConfig(data.vocab_size, 32, n_layer=2, n_head=4, n_embd=32))
    with pytest.raises(ParamsError) as e:
        t.train()
    message = str(e.value)
    assert ("a model of another shape (n_layer 1, this run's is 2; n_head 2, this run's is 4; n_embd 16, this "
            "run's is 32) and other training settings (max_epochs 5, this run's is 6); resume with") in message
    assert "\n" not in message


def test_finetuning_rows_read_through_another_vocabulary_are_other_data():
    """A NameDataset's rows are the same text over another pretraining corpus's vocabulary (one of the
    same size, other characters): its ids, and so what training sees, differ."""
    rows = "Where was Ann born?\tOslo\n"
    base = "Where was Ann born? Oslo\n"
    one, other = CharCorruptionDataset(base + "q", 32), CharCorruptionDataset(base + "z", 32)
    assert one.vocab_size == other.vocab_size
    assert data_digest(NameDataset(rows, one)) != data_digest(NameDataset(rows, other))
    assert data_digest(NameDataset(rows, one)) == data_digest(NameDataset(rows, CharCorruptionDataset(base + "q", 32)))


def test_tensor_datasets_of_other_tensors_are_other_data():
    """The Trainer takes any dataset of (x, y) tensors (src/bench.py, a notebook's TensorDataset): their
    digest covers the tensors themselves, so a state is not resumed on other rows of the same count."""
    from torch.utils.data import TensorDataset
    x = torch.arange(24).view(4, 6)
    assert data_digest(TensorDataset(x, x + 1)) == data_digest(TensorDataset(x.clone(), x + 1))
    assert data_digest(TensorDataset(x, x + 1)) != data_digest(TensorDataset(x.flip(0), x + 1))
    assert data_digest(TensorDataset(x, x + 1)) != data_digest(TensorDataset(x, x + 2))


def test_a_notebooks_char_dataset_of_other_text_is_other_data():
    """The minGPT notebook's CharDataset holds its text as one string (`.data`): the digest covers that
    text, so a state saved on one text is not resumed on another of the same length and vocabulary."""
    class CharDataset:  # the notebook's shape: data a str, stoi/itos dicts, examples = len(data) - block
        def __init__(self, data, block_size=4):
            chars = sorted(set(data))
            self.stoi = {c: i for i, c in enumerate(chars)}
            self.itos = {i: c for i, c in enumerate(chars)}
            self.data, self.block_size = data, block_size

        def __len__(self):
            return len(self.data) - self.block_size

    assert data_digest(CharDataset("abcabcab")) == data_digest(CharDataset("abcabcab"))
    assert data_digest(CharDataset("abcabcab")) != data_digest(CharDataset("cbacbacb"))


def test_no_state_or_not_a_state_is_one_line(tmp_path):
    data = corpus()
    with pytest.raises(ParamsError, match="params.state: no training state to resume .* leave out --resume"):
        trainer(tmp_path, data, resume=True).train()
    (tmp_path / "params").write_bytes(b"a finished run's")  # --resume after the run ended: its params are there
    with pytest.raises(ParamsError) as e:
        trainer(tmp_path, data, resume=True).train()
    assert str(e.value) == (f"{tmp_path / 'params.state'}: no training state to resume, and {tmp_path / 'params'} is "
                            f"there: the params of a run that ended (it removes its state then); leave out --resume "
                            f"to train again")
    for content in (b"not a zip", b""):
        (tmp_path / "params.state").write_bytes(content)
        with pytest.raises(ParamsError, match="params.state: not a training state this project can read"):
            trainer(tmp_path, data, resume=True).train()
    torch.save({"weights": torch.zeros(2)}, tmp_path / "params.state")
    with pytest.raises(ParamsError, match="not a training state of this project"):
        trainer(tmp_path, data, resume=True).train()


@pytest.mark.parametrize("damage, says", [
    (lambda st: st.pop("optimizer"), "a damaged training state (its 'optimizer' is missing"),
    (lambda st: st.update(settings=None), "a damaged training state (its 'settings' is missing"),
    (lambda st: st["settings"].pop("data"), "a damaged training state (its 'settings data' is missing"),
    (lambda st: st["rng"].pop("python"), "a damaged training state (its 'rng python' is missing"),
    (lambda st: st["model"].update({"head.weight": torch.zeros(3, 3)}), "its model does not fit this run"),
    (lambda st: st["optimizer"]["param_groups"].pop(), "its optimizer state does not fit this run"),
    # resumed, its first loss was NaN, and the error said to lower the learning rate (the fuzz audit)
    (lambda st: st["model"]["head.weight"].view(-1)[:3].fill_(float("nan")),
     "a damaged training state (3 of the 480 values of its model's head.weight are NaN or infinite"),
])
def test_a_damaged_state_is_one_line_and_keeps_the_interrupted_log(tmp_path, monkeypatch, damage, says):
    data = cut_run(tmp_path, monkeypatch)
    state = torch.load(tmp_path / "params.state", weights_only=True)
    damage(state)
    torch.save(state, tmp_path / "params.state")
    partial = (tmp_path / "log.jsonl.partial").read_text()
    with pytest.raises(ParamsError) as e:
        trainer(tmp_path, data, resume=True).train()
    assert says in str(e.value) and "give --restart instead of --resume" in str(e.value) and "\n" not in str(e.value)
    assert (tmp_path / "log.jsonl.partial").read_text() == partial  # failed before opening the log


def test_a_state_saved_with_another_test_set_is_refused(tmp_path, monkeypatch):
    data = cut_run(tmp_path, monkeypatch)
    t = trainer(tmp_path, data, resume=True)
    t.test_dataset = corpus()
    with pytest.raises(ParamsError, match=r"other test data \(None, this run's is '"):
        t.train()


def test_a_resumed_run_interrupted_before_its_own_save_names_the_state_it_resumed(tmp_path, monkeypatch, capsys):
    data = cut_run(tmp_path, monkeypatch)
    capsys.readouterr()
    with monkeypatch.context() as m:
        interrupt_at(m, 2)
        with pytest.raises(KeyboardInterrupt):
            trainer(tmp_path, data, resume=True, state_every=1e9).train()
    assert f"training state after epoch 1 of 5 is in {tmp_path / 'params.state'}" in capsys.readouterr().err
    assert os.path.exists(tmp_path / "params.state")


def test_an_interrupted_run_names_the_partial_log_it_leaves(tmp_path, monkeypatch, capsys):
    """Ctrl-C said "no output file was half-written", and the user then found log.jsonl.partial beside the
    params: the file it leaves is named, with what reads it; without a log nothing is said of one."""
    with monkeypatch.context() as m:
        interrupt_at(m, 2)
        with pytest.raises(KeyboardInterrupt):
            trainer(tmp_path, corpus()).train()
    partial = tmp_path / "log.jsonl.partial"
    assert (f"its loss log so far is in {partial} (plots.py reads it; the next run of this command replaces it); the "
            f"previous log, if any, is unchanged") in capsys.readouterr().err
    assert partial.read_text().count("\n") >= 1 and not (tmp_path / "log.jsonl").exists()
    with monkeypatch.context() as m:
        interrupt_at(m, 2)
        with pytest.raises(KeyboardInterrupt):
            trainer(tmp_path, corpus(), log_path=None).train()
    assert "loss log" not in capsys.readouterr().err
    with monkeypatch.context() as m:  # stopped before its first step: an empty log, which plots.py cannot draw
        interrupt_at(m, 1)
        with pytest.raises(KeyboardInterrupt):
            trainer(tmp_path, corpus()).train()
    assert partial.read_text() == "" and "loss log" not in capsys.readouterr().err


def test_a_run_interrupted_before_its_first_save_says_there_is_nothing_to_resume(tmp_path, monkeypatch, capsys):
    """The pace line says the state is saved for --resume; a Ctrl-C before the first save said only that
    nothing was half-written, and --resume then failed."""
    with monkeypatch.context() as m:
        interrupt_at(m, 2)
        with pytest.raises(KeyboardInterrupt):
            trainer(tmp_path, corpus(), state_every=300.0).train()
    assert ("no training state was saved yet (it is saved at the first epoch's end 5 min or more into the run; "
            "--state_every sets when): --resume has nothing to go on from, run the same command to start over"
            in capsys.readouterr().err)
    assert not os.path.exists(tmp_path / "params.state")
    with monkeypatch.context() as m:  # one epoch: no state is ever saved, so none is promised
        interrupt_at(m, 2)
        with pytest.raises(KeyboardInterrupt):
            trainer(tmp_path, corpus(), max_epochs=1, state_every=0).train()
    assert "training state" not in capsys.readouterr().err
    steps = -(-len(corpus()) // 8)  # a step of the last of two epochs, no state saved before it
    with monkeypatch.context() as m:
        interrupt_at(m, steps + 2)
        with pytest.raises(KeyboardInterrupt):
            trainer(tmp_path, corpus(), max_epochs=2, state_every=300.0).train()
    assert "training state" not in capsys.readouterr().err
    data = cut_run(tmp_path, monkeypatch)  # an earlier interrupted run's state, then a fresh run stopped early
    capsys.readouterr()
    with monkeypatch.context() as m:
        interrupt_at(m, 2)
        with pytest.raises(KeyboardInterrupt):
            trainer(tmp_path, data, state_every=300.0).train()
    assert (f"this run saved no training state yet; {tmp_path / 'params.state'} is still the earlier interrupted "
            f"run's, which --resume would continue" in capsys.readouterr().err)


def test_a_fresh_run_says_it_replaces_an_interrupted_runs_state(tmp_path, monkeypatch, capsys):
    data = cut_run(tmp_path, monkeypatch)
    capsys.readouterr()
    trainer(tmp_path, data, max_epochs=1).train()
    err = capsys.readouterr().err
    assert "holds an interrupted run's training state; this run starts over and replaces it at its first save" in err
    assert not os.path.exists(tmp_path / "params.state")


def test_the_state_is_saved_only_as_often_as_asked(tmp_path, monkeypatch):
    """state_every: seconds between saves (at an epoch's end, never after the last); the default leaves a
    short run without one."""
    saves = []
    monkeypatch.setattr("submission.resume.save", lambda path, **kw: saves.append(kw["epoch"]))
    trainer(tmp_path, corpus(), state_every=300.0).train()
    assert saves == []
    trainer(tmp_path, corpus(), state_every=0).train()
    assert saves == [1, 2, 3, 4]


def pretrain_argv(tmp_path):
    """run.py's pretraining of a 1-layer model on WIKI (written to tmp_path), 3 epochs at batch 8, state saved
    every epoch; without --writing_params_path."""
    (tmp_path / "wiki.txt").write_text(WIKI, encoding="utf-8")
    return ["--function=pretrain", "--variant=vanilla", f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}",
            "--n_layer", "1", "--n_head", "2", "--n_embd", "16", "--block_size", "32", "--max_epochs", "3",
            "--batch_size", "8", "--state_every", "0"]


def test_run_py_resume_continues_the_interrupted_command(tmp_path, monkeypatch):
    """The same command line, interrupted and then given --resume, writes the uninterrupted run's params."""
    argv = pretrain_argv(tmp_path)
    monkeypatch.setenv("GPT_NUM_THREADS", "1")
    driver.main(argv + [f"--writing_params_path={tmp_path / 'whole.params'}"])
    with monkeypatch.context() as m:
        interrupt_at(m, -(-len(corpus()) // 8) + 3)
        with pytest.raises(KeyboardInterrupt):
            driver.main(argv + [f"--writing_params_path={tmp_path / 'cut.params'}"])
    assert os.path.exists(tmp_path / "cut.params.state") and not os.path.exists(tmp_path / "cut.params")
    steps = []  # the resumed command's optimisation steps
    original = TrainingRun.step
    with monkeypatch.context() as m:
        m.setattr(TrainingRun, "step", lambda self, x, y: steps.append(1) or original(self, x, y))
        driver.main(argv + [f"--writing_params_path={tmp_path / 'cut.params'}", "--resume"])
    whole, cut = torch.load(tmp_path / "whole.params"), torch.load(tmp_path / "cut.params")
    assert all(torch.equal(whole[k], cut[k]) for k in whole)
    assert not os.path.exists(tmp_path / "cut.params.state")
    # it went on from the state (after epoch 1), not over from the start: a run started afresh with the same
    # seed ends at the same params too, so only the steps taken tell (run.py once dropped --resume unseen)
    assert len(steps) == 2 * -(-len(corpus()) // 8)


FINETUNE_ROWS = "".join(f"Person {c}x was born in\tLima\n" for c in "ABCDEFGH")


def finetune_argv(tmp_path, *extra):
    """run.py's finetuning of a small model on FINETUNE_ROWS, state saved every epoch, into cut.params."""
    (tmp_path / "wiki.txt").write_text(WIKI, encoding="utf-8")
    (tmp_path / "train.tsv").write_text(FINETUNE_ROWS, encoding="utf-8")
    return ["--function=finetune", "--variant=vanilla", f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}",
            f"--finetune_corpus_path={tmp_path / 'train.tsv'}", "--n_layer", "1", "--n_head", "2", "--n_embd", "16",
            "--block_size", "32", "--max_epochs", "3", "--batch_size", "4", "--state_every", "0",
            f"--writing_params_path={tmp_path / 'cut.params'}", *extra]


def pretrained(tmp_path, name, seed):
    """Params of the finetuning's model shape (a new model of `seed`), as a pretraining would write them."""
    torch.manual_seed(seed)
    model = GPT(GPTConfig(corpus().vocab_size, 32, n_layer=1, n_head=2, n_embd=16))
    torch.save(model.state_dict(), tmp_path / name)
    return f"--reading_params_path={tmp_path / name}"


def cut_finetuning(tmp_path, monkeypatch, *extra):
    monkeypatch.setenv("GPT_NUM_THREADS", "1")
    with monkeypatch.context() as m:
        interrupt_at(m, -(-len(FINETUNE_ROWS.splitlines()) // 4) + 1)  # in epoch 2
        with pytest.raises(KeyboardInterrupt):
            driver.main(finetune_argv(tmp_path, *extra))
    assert os.path.exists(tmp_path / "cut.params.state")


def test_a_finetuning_resumed_from_other_pretrained_params_is_refused(tmp_path, monkeypatch):
    """The params a finetuning starts from (--reading_params_path) are an input of the run like its corpus:
    pretrained again, or another file, between the interrupt and --resume, the resumed run went on from
    the old start and wrote the finetuning of params that the command no longer names."""
    cut_finetuning(tmp_path, monkeypatch, pretrained(tmp_path, "a.params", 1))
    other = "other starting params ('--reading_params_path of sha256 "
    for start, says in ((pretrained(tmp_path, "b.params", 2), other),
                        (pretrained(tmp_path, "a.params", 3), other),  # pretrained again
                        (None, "this run's is 'a new model')")):
        with pytest.raises(ParamsError) as e:
            driver.main(finetune_argv(tmp_path, "--resume", *([start] if start else [])))
        message = str(e.value)
        assert message.startswith(f"{tmp_path / 'cut.params.state'}: saved by a run with ") and says in message
        assert "--reading_params_path" in message and "--restart" in message and "\n" not in message, message
    pretrained(tmp_path, "a.params", 1)  # the same params again: resumed
    driver.main(finetune_argv(tmp_path, "--resume", pretrained(tmp_path, "a.params", 1)))
    assert os.path.exists(tmp_path / "cut.params") and not os.path.exists(tmp_path / "cut.params.state")


def test_a_finetuning_state_saved_before_its_start_was_checked_resumes(tmp_path, monkeypatch, capsys):
    """A state of an earlier version lacks the start: taken as this run's."""
    start = pretrained(tmp_path, "a.params", 1)
    cut_finetuning(tmp_path, monkeypatch, start)
    state = torch.load(tmp_path / "cut.params.state", weights_only=True)
    del state["settings"]["start"]
    torch.save(state, tmp_path / "cut.params.state")
    driver.main(finetune_argv(tmp_path, "--resume", pretrained(tmp_path, "b.params", 2)))
    assert "resuming from" in capsys.readouterr().out and os.path.exists(tmp_path / "cut.params")


def test_a_state_of_another_seed_is_refused_and_one_without_it_resumes(tmp_path, monkeypatch, capsys):
    """--seed sets the new model's weights and every dropout and span-corruption draw: resumed with another
    seed, the run silently went on as the interrupted seed's (the state's streams replace the seed's), and
    wrote params that the command's seed never makes. A state of an earlier version lacks it: this run's."""
    argv = pretrain_argv(tmp_path) + [f"--writing_params_path={tmp_path / 'cut.params'}"]
    monkeypatch.setenv("GPT_NUM_THREADS", "1")
    with monkeypatch.context() as m:
        interrupt_at(m, -(-len(corpus()) // 8) + 1)
        with pytest.raises(KeyboardInterrupt):
            driver.main(argv + ["--seed", "3"])
    with pytest.raises(ParamsError) as e:
        driver.main(argv + ["--resume", "--seed", "4"])
    message = str(e.value)
    assert "other training settings (seed 3, this run's is 4)" in message and "\n" not in message, message
    state = torch.load(tmp_path / "cut.params.state", weights_only=True)
    del state["settings"]["training"]["seed"]
    torch.save(state, tmp_path / "cut.params.state")
    capsys.readouterr()
    driver.main(argv + ["--resume", "--seed", "4"])
    assert "resuming from" in capsys.readouterr().out and os.path.exists(tmp_path / "cut.params")


def test_a_fresh_run_over_an_interrupted_runs_state_needs_restart(tmp_path, monkeypatch, capsys):
    """The same command without --resume noted that it replaced the state, and did at its first save,
    five minutes in: hours of pretraining lost to a forgotten flag. It is refused before any work; with
    --restart the run starts over."""
    params = tmp_path / "cut.params"
    argv = pretrain_argv(tmp_path) + [f"--writing_params_path={params}"]
    monkeypatch.setenv("GPT_NUM_THREADS", "1")
    with monkeypatch.context() as m:
        interrupt_at(m, -(-len(corpus()) // 8) + 3)
        with pytest.raises(KeyboardInterrupt):
            driver.main(argv)
    state = tmp_path / "cut.params.state"
    saved = state.read_bytes()
    with pytest.raises(DataError) as e:
        driver.main(argv)
    assert re.fullmatch(rf"{re.escape(str(state))}: the training state of an interrupted run \(after epoch 1 of 3, "
                        r"saved \d{4}-\d\d-\d\d \d\d:\d\d\); add --resume to go on from it, or --restart to start "
                        r"over \(this run then replaces it\)", str(e.value)), str(e.value)
    assert state.read_bytes() == saved and not params.exists()
    state.write_bytes(b"PK\x03\x04 cut short")  # not readable: the message stands without the details
    with pytest.raises(DataError, match=r"state: the training state of an interrupted run; add --resume"):
        driver.main(argv)
    capsys.readouterr()
    driver.main(argv + ["--restart"])
    assert params.exists() and not state.exists()
    with pytest.raises(SystemExit):
        driver.parse_args(argv + ["--restart", "--resume"])
    assert "--resume goes on from the interrupted run's state, --restart starts over" in capsys.readouterr().err


def tiny_pretraining(tmp_path, monkeypatch):
    """(params, log, run): run(epochs, *flags) pretrains a tiny vanilla model on WIKI into tmp_path/p.params."""
    (tmp_path / "wiki.txt").write_text(WIKI, encoding="utf-8")
    params, log = tmp_path / "p.params", tmp_path / "p.params.log.jsonl"
    argv = ["--function=pretrain", "--variant=vanilla", f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}",
            "--n_layer", "1", "--n_head", "2", "--n_embd", "16", "--block_size", "32", "--batch_size", "8",
            f"--writing_params_path={params}"]
    monkeypatch.setenv("GPT_NUM_THREADS", "1")

    def run(epochs, *extra):
        driver.main(argv + ["--max_epochs", str(epochs), *extra])
    return params, log, run


def test_a_shorter_run_over_a_longer_finished_runs_params_needs_restart(tmp_path, monkeypatch, capsys):
    """A trial run (`./run.sh all --max_epochs 1`) over the params of a finished run of more epochs, as
    their card says (or, without it, their loss log), replaced hours of training without a word. It is refused
    before any work; a run of as many epochs or more, --restart, or a log older than the params (not theirs)
    and no card lets it write."""
    params, log, pretrain = tiny_pretraining(tmp_path, monkeypatch)

    def run(epochs, *extra):
        pretrain(epochs, *extra)
        return ledger.logged_epochs(str(log))

    assert run(3) == 3
    kept = params.read_bytes(), log.read_bytes()
    with pytest.raises(DataError) as e:
        run(2)
    assert str(e.value) == (f"{params}: the params of a finished 3-epoch run (its card {params}.card.json says), "
                            f"which this 2-epoch run would replace; write elsewhere (OUT_DIR=FOLDER ./run.sh MODE), "
                            f"move the file away, or add --restart to replace it")
    card = (tmp_path / "p.params.card.json").read_bytes()
    (tmp_path / "p.params.card.json").unlink()  # params without their card (copied without it): the log beside them
    with pytest.raises(DataError) as e:
        run(2)
    assert str(e.value) == (f"{params}: the params of a finished 3-epoch run (its loss log {log} says), which this "
                            f"2-epoch run would replace; write elsewhere (OUT_DIR=FOLDER ./run.sh MODE), move the "
                            f"file away, or add --restart to replace it")
    assert (params.read_bytes(), log.read_bytes()) == kept
    (tmp_path / "p.params.card.json").write_bytes(card)
    assert run(3) == 3 and run(2, "--restart") == 2 and run(4) == 4
    with pytest.raises(DataError, match="finished 4-epoch run"):
        run(3)
    now = os.path.getmtime(params)
    os.utime(log, (now - driver.LOG_LAG - 1,) * 2)  # params written since the log: it is not theirs,
    (tmp_path / "p.params.card.json").unlink()     # nor is a card (another tool's params, the course's)
    assert run(1) == 1
    capsys.readouterr()


def test_a_finetuning_over_pretrained_params_needs_restart_whatever_the_epochs(tmp_path, monkeypatch, capsys):
    """A finetuning run writing to the path of a pretraining's params (a path mistyped) replaced them once it ran
    as many epochs (4 finetuning steps over 12 pretraining ones here; hours against minutes on the course's data),
    and a pretraining over finetuned params was judged by epochs too. The card's function refuses both, before any
    work; --restart replaces them."""
    params, log, pretrain = tiny_pretraining(tmp_path, monkeypatch)
    pretrain(3)
    kept = params.read_bytes()
    finetune = [a for a in finetune_argv(tmp_path) if not a.startswith("--writing_params_path")]
    at = finetune.index("--max_epochs")
    del finetune[at:at + 2]  # each run below gives its own
    with pytest.raises(DataError) as e:
        driver.main(finetune + [f"--writing_params_path={params}", "--max_epochs", "4"])
    assert str(e.value) == (f"{params}: the params of a finished pretraining run (its card {params}.card.json says), "
                            f"which this finetuning run would replace; write elsewhere (OUT_DIR=FOLDER ./run.sh MODE), "
                            f"move the file away, or add --restart to replace it")
    assert params.read_bytes() == kept
    driver.main(finetune + [f"--writing_params_path={params}", "--max_epochs", "1", "--restart"])
    assert read_card(str(params))["function"] == "finetune"
    with pytest.raises(DataError, match=r"the params of a finished finetuning run \(its card .*\), which this "
                                        r"pretraining run would replace"):
        pretrain(5)
    # a card edited by hand whose function is no name (JSON's list, its sha256 still theirs): a TypeError
    # ("unhashable type: 'list'") in the fuzz audit; such a card says nothing of the function, its epochs judge
    card_file = tmp_path / "p.params.card.json"
    card = json.loads(card_file.read_text(encoding="utf-8"))
    card["function"] = ["finetune"]
    card_file.write_text(json.dumps(card), encoding="utf-8")
    pretrain(2)  # more epochs than the card's 1: replaced
    assert read_card(str(params))["function"] == "pretrain"
    capsys.readouterr()


def test_a_longer_run_is_judged_by_the_card_before_the_loss_log(tmp_path, monkeypatch, capsys):
    """The check read the loss log first and the card only without one, while the grader reads the card first
    (tied to the params by their sha256). A log beside params within ledger.LOG_LAG of them can be another run's:
    a 1-epoch --restart that logged elsewhere (--log_path) left the 3-epoch run's log, which then refused a
    2-epoch run over 1-epoch params; and a log another run wrote there (its params went elsewhere) let a 2-epoch
    run replace 3-epoch params. The card decides both."""
    params, log, run = tiny_pretraining(tmp_path, monkeypatch)

    run(3)
    run(1, "--restart", f"--log_path={tmp_path / 'elsewhere.jsonl'}")
    assert ledger.logged_epochs(str(log)) == 3 and read_card(str(params))["epochs"] == 1
    assert os.path.getmtime(log) >= os.path.getmtime(params) - driver.LOG_LAG  # not old enough to be passed over
    run(2)  # over 1-epoch params, as their card says: replaced
    assert read_card(str(params))["epochs"] == 2
    run(3)
    log.write_text('{"step": 1, "epoch": 1}\n', encoding="utf-8")  # another run's log, newer than the params
    kept = params.read_bytes()
    with pytest.raises(DataError) as e:
        run(2)
    assert str(e.value).startswith(f"{params}: the params of a finished 3-epoch run (its card {params}.card.json "
                                   f"says), which this 2-epoch run would replace;")
    assert params.read_bytes() == kept
    capsys.readouterr()


def test_a_restarted_run_over_longer_params_resumes_without_restart(tmp_path, monkeypatch):
    """--restart over a longer finished run's params, interrupted after a saved epoch, then --resume: the
    resumed run goes on to its end. The longer run's params and log are still there until it ends, but the
    run was checked (and --restart given) when it started; refusing the --resume would leave only --restart,
    which throws away the epochs the state holds."""
    (tmp_path / "wiki.txt").write_text(WIKI, encoding="utf-8")
    params, log = tmp_path / "p.params", tmp_path / "p.params.log.jsonl"
    argv = ["--function=pretrain", "--variant=vanilla", f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}",
            "--n_layer", "1", "--n_head", "2", "--n_embd", "16", "--block_size", "32", "--batch_size", "8",
            "--state_every", "0", f"--writing_params_path={params}"]
    monkeypatch.setenv("GPT_NUM_THREADS", "1")
    driver.main(argv + ["--max_epochs", "3"])
    with monkeypatch.context() as m:
        interrupt_at(m, -(-len(corpus()) // 8) + 1)  # in epoch 2: the state after epoch 1 is kept
        with pytest.raises(KeyboardInterrupt):
            driver.main(argv + ["--max_epochs", "2", "--restart"])
    assert os.path.exists(f"{params}.state") and ledger.logged_epochs(str(log)) == 3  # the longer run's, still
    driver.main(argv + ["--max_epochs", "2", "--resume"])
    assert ledger.logged_epochs(str(log)) == 2 and not os.path.exists(f"{params}.state")


@pytest.mark.parametrize("lose_log", ["log_path", "removed"])
def test_a_longer_runs_params_are_kept_by_their_card_where_its_log_is_elsewhere_or_gone(tmp_path, monkeypatch,
                                                                                         capsys, lose_log):
    """The check above read only <params>.log.jsonl: a longer run that logged elsewhere (--log_path), or whose
    log was removed (or dropped by a full disk, or not copied with the params), had its params replaced by a
    1-epoch trial without a word. The card beside the params records the epochs they were trained."""
    (tmp_path / "wiki.txt").write_text(WIKI, encoding="utf-8")
    params = tmp_path / "p.params"
    argv = ["--function=pretrain", "--variant=vanilla", f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}",
            "--n_layer", "1", "--n_head", "2", "--n_embd", "16", "--block_size", "32", "--batch_size", "8",
            f"--writing_params_path={params}"]
    monkeypatch.setenv("GPT_NUM_THREADS", "1")
    if lose_log == "log_path":
        driver.main(argv + ["--max_epochs", "3", f"--log_path={tmp_path / 'elsewhere.jsonl'}"])
    else:
        driver.main(argv + ["--max_epochs", "3"])
        (tmp_path / "p.params.log.jsonl").unlink()
    kept = params.read_bytes()
    with pytest.raises(DataError) as e:
        driver.main(argv + ["--max_epochs", "1"])
    assert str(e.value) == (f"{params}: the params of a finished 3-epoch run (its card {params}.card.json says), "
                            f"which this 1-epoch run would replace; write elsewhere (OUT_DIR=FOLDER ./run.sh MODE), "
                            f"move the file away, or add --restart to replace it")
    assert params.read_bytes() == kept
    driver.main(argv + ["--max_epochs", "1", "--restart"])
    assert params.read_bytes() != kept
    capsys.readouterr()


@pytest.mark.parametrize("text, epochs", [
    ('{"step": 1, "epoch": 1}\n{"step": 2, "epoch": 7}\n', 7), ('{"epoch": 2}\n\n\n', 2), ('{"epoch": 5}', 5),
    ("", None), ('{"epoch": 1}\nnot json\n', None), ('{"epoch": true}\n', None), ('{"epoch": "3"}\n', None),
    ("[3]\n", None), ('{"epoch": 1}\n' + '{"step": 2}\n', None)])
def test_logged_epochs_reads_the_last_row(tmp_path, text, epochs):
    """ledger.logged_epochs: the last row's epoch, a whole number, or None; one long log read from its end."""
    path = tmp_path / "x.log.jsonl"
    path.write_text(text, encoding="utf-8")
    assert ledger.logged_epochs(str(path)) == epochs
    path.write_text("".join(f'{{"step": {i}, "epoch": {i // 23 + 1}, "loss": 0.5}}\n' for i in range(14950)))
    assert ledger.logged_epochs(str(path)) == 650 and ledger.logged_epochs(str(tmp_path / "none")) is None


def test_run_py_resume_flags_are_checked(capsys):
    argv = ["--variant=vanilla", "--pretrain_corpus_path=w"]
    for flags, says in ((["--function=evaluate", "--reading_params_path=p", "--eval_corpus_path=e",
                          "--outputs_path=o", "--resume"], "--resume continues a training run"),
                        (["--function=pretrain", "--writing_params_path=/dev/null", "--resume"],
                         "/dev/null is a special file"),
                        (["--function=pretrain", "--writing_params_path=p", "--state_every", "-1"],
                         "--state_every must be 0 or more seconds")):
        with pytest.raises(SystemExit):
            driver.parse_args(argv + flags)
        err = capsys.readouterr().err
        assert says in err and err.count("\n") == 1, err


def test_a_saved_optimizer_state_is_loaded_with_this_runs_kernel_flags(monkeypatch):
    """torch places each AdamW `step` counter by the flags of the groups it loads (beside the param when
    fused or capturable): an unfused run's state (a CPU run on torch < 2.4) resumed by a fused CUDA run
    kept its counters on the CPU and failed at the first step. The saved groups take the run's flags."""
    from test_fast import padded_data
    x, y = padded_data().tensors

    def run(fast):
        model = GPT(GPTConfig(20, 24, n_layer=1, n_head=2, n_embd=8))
        return Trainer(model, padded_data(), None, TrainerConfig(fast=fast)).prepare()
    unfused = run(False)
    unfused.step(x[:8], y[:8])
    saved = unfused.optimizer.state_dict()
    assert not any(g.get("fused") for g in saved["param_groups"])
    loaded = []
    original = torch.optim.Optimizer.load_state_dict
    monkeypatch.setattr(torch.optim.Optimizer, "load_state_dict",
                        lambda self, state: (loaded.append(state), original(self, state))[1])
    fused = run(True)
    want = fused.optimizer.param_groups[0].get("fused")
    fused.load_optimizer_state(saved)
    assert [g.get("fused") for g in loaded[0]["param_groups"]] == [want, want]
    assert not any(g.get("fused") for g in saved["param_groups"])  # the caller's dict is left as it was
    assert [g.get("fused") for g in fused.optimizer.param_groups] == [want, want]
    fused.step(x[:8], y[:8])


def steps_take(monkeypatch, seconds):
    """A clock that stands still but for `seconds` at each optimisation step, so a run's times and its saves'
    timing are the same every time it runs."""
    clock = [1000.0]
    original = TrainingRun.step

    def step(self, x, y):
        clock[0] += seconds
        return original(self, x, y)
    monkeypatch.setattr(TrainingRun, "step", step)
    monkeypatch.setattr("submission.trainer.time.time", lambda: clock[0])


def test_a_resumed_run_goes_on_with_the_interrupted_runs_clock_and_pace_line(tmp_path, monkeypatch, capsys):
    """The log's times of a resumed run go on from the time its state was saved at (its rows are the
    uninterrupted run's, times included, when every step takes 10 s), and it prints its pace line after its
    own second epoch, as a fresh run does."""
    monkeypatch.setattr("submission.trainer.PACE_LINE_SECONDS", 0)
    data = corpus()
    steps_per_epoch = -(-len(data) // 8)
    with monkeypatch.context() as m:
        steps_take(m, 10.0)
        trainer(tmp_path / "whole", data).train()
    expected = [json.loads(line) for line in open(tmp_path / "whole" / "log.jsonl", encoding="utf-8")]
    assert [row["time"] for row in expected] == [10.0 * (i + 1) for i in range(5 * steps_per_epoch)]
    capsys.readouterr()
    with monkeypatch.context() as m:
        steps_take(m, 10.0)
        interrupt_at(m, 2 * steps_per_epoch + 2)  # in epoch 3: the state after epoch 2 is kept
        with pytest.raises(KeyboardInterrupt):
            trainer(tmp_path / "cut", data).train()
    with monkeypatch.context() as m:
        steps_take(m, 10.0)
        trainer(tmp_path / "cut", data, resume=True).train()
    assert [json.loads(line) for line in open(tmp_path / "cut" / "log.jsonl", encoding="utf-8")] == expected
    paces = [line for line in capsys.readouterr().out.splitlines() if " took " in line]
    assert [line.split(":")[0] for line in paces] == [
        f"epoch 2 of 5 took {10.0 * steps_per_epoch:.1f} s", f"epoch 4 of 5 took {10.0 * steps_per_epoch:.1f} s"]


def test_the_state_is_saved_every_state_every_seconds(tmp_path, monkeypatch):
    """The interval runs from the last save: with epochs of 10 s a step and saves due every 1.5 epochs,
    the state is saved after epochs 2 and 4, not after every epoch once the first interval has passed."""
    saves = []
    monkeypatch.setattr("submission.resume.save", lambda path, **kw: saves.append(kw["epoch"]))
    data = corpus()
    steps_take(monkeypatch, 10.0)
    trainer(tmp_path, data, max_epochs=6, state_every=1.5 * 10.0 * -(-len(data) // 8)).train()
    assert saves == [2, 4]


def test_the_state_keeps_the_best_test_loss_and_a_resumed_run_checkpoints_every_epoch(tmp_path, monkeypatch,
                                                                                       capsys):
    """With a test set, the state is saved as often as without one (state_every) and records the lowest test
    loss so far; a resumed run checkpoints after each of its epochs, as the course's loop does."""
    def run(**conf):
        t = trainer(tmp_path, data, ckpt_path=str(tmp_path / "ckpt.params"), **conf)
        t.test_dataset = CharCorruptionDataset(WIKI[:400], 32)
        return t

    data = corpus()
    saves = []
    with monkeypatch.context() as m:
        m.setattr("submission.resume.save", lambda path, **kw: saves.append((kw["epoch"], kw["best_loss"])))
        run(state_every=1e9).train()
    assert saves == []  # no checkpoint forces a state any more
    capsys.readouterr()

    cut = run(state_every=0)
    with monkeypatch.context() as m:
        interrupt_at(m, 2 * -(-len(data) // 8) + 2)  # in epoch 3: the state after epoch 2 is kept
        with pytest.raises(KeyboardInterrupt):
            cut.train()
    state = torch.load(tmp_path / "params.state", weights_only=True)
    losses = [float(line.split()[-1]) for line in capsys.readouterr().out.splitlines()
              if re.match(r"epoch \d+: test loss", line)]
    assert len(losses) == 2 and state["best_loss"] == pytest.approx(min(losses), abs=1e-5)
    assert (tmp_path / "ckpt.params").is_file()  # the best checkpoint of epochs 1-2 was written
    written = []
    with monkeypatch.context() as m:
        m.setattr(Trainer, "save_checkpoint", lambda self: written.append(1))
        run(state_every=0, resume=True).train()
    assert len(written) == 3  # epochs 3, 4 and 5


def test_a_state_of_the_courses_loop_resumes_with_it(tmp_path, monkeypatch, capsys):
    """A state saved by run.py --reference_train (fast=False) resumes in a run with the same flag: the
    defaults of settings added later fill in only what a state lacks."""
    data = cut_run(tmp_path, monkeypatch, fast=False)
    capsys.readouterr()
    trainer(tmp_path, data, resume=True, fast=False).train()
    assert f"resuming from {tmp_path / 'params.state'}: epoch 2 of 5" in capsys.readouterr().out


def test_resume_needs_a_state_path(tmp_path):
    with pytest.raises(ValueError, match="resume=True needs state_path, the training state to continue from"):
        trainer(tmp_path, corpus(), resume=True, state_path=None).train()


def test_a_saved_optimizer_state_holds_a_plain_learning_rate():
    """Step graphs keep the rate in a device tensor the captured AdamW reads; the state saves it as a number,
    which any run loads (the run's own optimizer keeps its tensor)."""
    from submission.resume import portable_optimizer_state
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    optimizer.param_groups[0]["lr"] = torch.tensor(0.5)
    state = portable_optimizer_state(optimizer)
    assert [type(g["lr"]) for g in state["param_groups"]] == [float] and state["param_groups"][0]["lr"] == 0.5
    assert isinstance(optimizer.param_groups[0]["lr"], torch.Tensor)


def test_params_that_cannot_be_written_at_the_end_leave_the_last_state_to_resume_from(tmp_path, capsys):
    """A disk that fills at the final write loses the trained model in memory, but not the run: the state
    saved at the last epoch's end but one stays, the error says so, and --resume from it ends at the params
    the run would have written."""
    data = corpus()
    whole = trainer(tmp_path / "whole", data, max_epochs=3)
    (tmp_path / "whole").mkdir()
    whole.train()
    want = params(whole.model)

    def full_disk():
        raise DataError(f"{tmp_path / 'p.params'}: could not write it (No space left on device); the previous "
                        f"file, if any, is unchanged; pick another path")

    state = tmp_path / "params.state"
    with pytest.raises(DataError) as failed:
        trainer(tmp_path, data, max_epochs=3).train(after=full_disk)
    assert str(failed.value).endswith(f"(No space left on device); the previous file, if any, is unchanged; pick "
                                      f"another path; the training state after epoch 2 of 3 is in {state}: once the "
                                      f"params can be written to this path, the same command with --resume trains "
                                      f"from there")
    assert state.is_file()
    resumed = trainer(tmp_path, data, max_epochs=3, resume=True)
    resumed.train()
    assert all(torch.equal(v, want[k]) for k, v in resumed.model.state_dict().items())
    assert not state.exists()

    with pytest.raises(DataError) as failed:  # no state saved (--state_every not yet due): the error as it was
        trainer(tmp_path, data, max_epochs=3, state_every=1e9).train(after=full_disk)
    assert str(failed.value).endswith("pick another path") and not state.exists()


def test_a_longer_runs_params_behind_a_symbolic_link_are_kept(tmp_path, monkeypatch, capsys):
    """Params trained at one path and linked into the output folder (src/submission/X.params -> a bigger disk) have
    their log and card beside the file the link names; the check looked beside the link alone, and a 1-epoch run
    through the link replaced the 3-epoch run's params (written through the link) without a word."""
    (tmp_path / "wiki.txt").write_text(WIKI, encoding="utf-8")
    (tmp_path / "big").mkdir()
    (tmp_path / "out").mkdir()
    real, link = tmp_path / "big" / "p.params", tmp_path / "out" / "p.params"
    argv = ["--function=pretrain", "--variant=vanilla", f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}",
            "--n_layer", "1", "--n_head", "2", "--n_embd", "16", "--block_size", "32", "--batch_size", "8"]
    monkeypatch.setenv("GPT_NUM_THREADS", "1")
    driver.main(argv + ["--max_epochs", "3", f"--writing_params_path={real}"])
    link.symlink_to(real)
    kept = real.read_bytes()
    with pytest.raises(DataError, match=rf"^{re.escape(str(link))}: the params of a finished 3-epoch run \(its card "
                                        rf"{re.escape(str(real))}.card.json says\)"):
        driver.main(argv + ["--max_epochs", "1", f"--writing_params_path={link}"])
    assert real.read_bytes() == kept and link.is_symlink()
    capsys.readouterr()


def saves_failing_after_the_first(monkeypatch, fail):
    """resume.save as it is for the run's first state, then `fail(path, save)` for every later one (`save()`: the
    real save); returns the list of the epochs asked to be saved, which a test may also fill to fail sooner."""
    original = resume_module.save
    calls = []

    def save(path, **kw):
        calls.append(kw["epoch"])
        if len(calls) > 1:
            fail(path, lambda: original(path, **kw))
        else:
            original(path, **kw)

    monkeypatch.setattr(resume_module, "save", save)
    return calls


def test_a_state_save_that_fails_names_the_state_saved_before_it(tmp_path, monkeypatch):
    """A disk that fills at an epoch's state save stops the run; the state saved at an earlier epoch's end is
    whole (atomic writes), and the error says where it is and that --resume trains from it."""
    data = corpus()

    def full_disk(path, save):
        raise DataError(f"{path}: could not write it (No space left on device); the previous file, if any, is "
                        f"unchanged; free some disk space or pick another path")

    calls = saves_failing_after_the_first(monkeypatch, full_disk)
    state = tmp_path / "params.state"
    with pytest.raises(DataError) as failed:
        trainer(tmp_path, data, max_epochs=4).train()
    assert calls == [1, 2]
    assert str(failed.value).endswith(f"free some disk space or pick another path; the training state after epoch 1 "
                                      f"of 4 is in {state}: once it can be written there, the same command with "
                                      f"--resume trains from there")
    assert torch.load(state, weights_only=True)["epoch"] == 1

    calls.clear()
    calls.append(0)  # the first save fails too: no earlier state to name
    state.unlink()
    with pytest.raises(DataError) as failed:
        trainer(tmp_path, data, max_epochs=4).train()
    assert str(failed.value).endswith("free some disk space or pick another path") and not state.exists()


def test_a_first_state_save_without_room_lets_the_run_go_on_without_states(tmp_path, monkeypatch, capsys):
    """A first state save that found no room (files.NoRoom: a full disk, no inode, ulimit -f) stopped the run, with
    nothing saved to resume: the whole run lost, though the params and log had been checked to fit
    (run.check_room_for). Now one note, and training goes on to its params without states; a Ctrl-C after it
    says no state could be saved. A later save without room keeps the state before it, and goes on too."""
    from submission.files import NoRoom
    calls = []

    def no_room(path, **kw):
        calls.append(kw["epoch"])
        raise NoRoom(f"{path}: could not write it (No space left on device; 0.1 MiB free there); the previous file, if "
                     f"any, is unchanged; free some disk space or pick another path")
    monkeypatch.setattr(resume_module, "save", no_room)
    state = tmp_path / "params.state"
    t = trainer(tmp_path, corpus(), max_epochs=4, ckpt_path=str(tmp_path / "params"))
    t.train()
    assert calls == [1]  # tried once, then no more
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert err == [f"note: {state}: could not write it (No space left on device; 0.1 MiB free there); the previous "
                   f"file, if any, is unchanged; free some disk space or pick another path; training goes on without "
                   f"saving its state"]
    assert (tmp_path / "params").exists() and not state.exists()
    assert [json.loads(line)["epoch"] for line in (tmp_path / "log.jsonl").read_text().splitlines()][-1] == 4

    calls.clear()
    epochs = []
    original = Trainer.save_checkpoint

    def checkpoint(self):
        original(self)
        epochs.append(1)
        if len(epochs) == 2:
            raise KeyboardInterrupt  # after the second epoch's failed save
    monkeypatch.setattr(Trainer, "save_checkpoint", checkpoint)
    with pytest.raises(KeyboardInterrupt):
        trainer(tmp_path, corpus(), max_epochs=4, ckpt_path=str(tmp_path / "params")).train()
    assert calls == [1]
    assert (f"no training state could be saved ({state}, as said): --resume has nothing to go on from, run the same "
            f"command to start over") in capsys.readouterr().err
    # a later save without room: the state before it is kept, training goes on to its params, which replace it (a
    # first version stopped the run, and a --resume on a disk that held one state stopped at its first save again)
    monkeypatch.undo()

    def later_no_room(path, save):
        raise NoRoom(f"{path}: could not write it (No space left on device; 0.1 MiB free there); the previous file, if "
                     f"any, is unchanged; free some disk space or pick another path")
    calls = saves_failing_after_the_first(monkeypatch, later_no_room)
    trainer(tmp_path, corpus(), max_epochs=4, ckpt_path=str(tmp_path / "params")).train()
    assert calls == [1, 2]
    assert (f"training goes on without saving its state (the training state after epoch 1 of 4 is in {state}, kept "
            f"for --resume until the params are written)") in capsys.readouterr().err
    assert (tmp_path / "params").exists() and not state.exists()


def test_a_ctrl_c_just_after_a_state_save_names_that_state(tmp_path, monkeypatch, capsys):
    """A Ctrl-C just after the state's rename, before the trainer recorded it, made the note name the state
    before it ("saved no training state yet" after the first): the save and its record are held together."""
    original = resume_module.save

    def save(path, **kw):
        original(path, **kw)
        signal.raise_signal(signal.SIGINT)  # the state is in place

    monkeypatch.setattr(resume_module, "save", save)
    state = tmp_path / "params.state"
    with pytest.raises(KeyboardInterrupt):
        trainer(tmp_path, corpus(), max_epochs=4).train()
    assert torch.load(state, weights_only=True)["epoch"] == 1
    assert (f"the training state after epoch 1 of 4 is in {state}: the same command with --resume continues from "
            f"there") in capsys.readouterr().err


def test_a_smaller_models_trial_of_as_many_epochs_keeps_a_larger_runs_params(tmp_path, monkeypatch, capsys):
    """Epochs alone let `./run.sh vanilla_pretrain --n_layer 1` (a quick try, the course's 650 epochs) replace
    hours of full-size pretraining: the training compared is epochs times weights. A run of more of it (a larger
    model, fewer epochs) replaces them as before."""
    (tmp_path / "wiki.txt").write_text(WIKI, encoding="utf-8")
    params = tmp_path / "p.params"
    argv = ["--function=pretrain", "--variant=vanilla", f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}",
            "--n_head", "2", "--block_size", "32", "--batch_size", "8", f"--writing_params_path={params}"]
    monkeypatch.setenv("GPT_NUM_THREADS", "1")

    def run(epochs, layers, width, *extra):
        driver.main(argv + ["--max_epochs", str(epochs), "--n_layer", str(layers), "--n_embd", str(width), *extra])

    run(2, 2, 16)
    theirs = driver.weight_count(str(params))
    kept = params.read_bytes()
    with pytest.raises(DataError) as e:
        run(2, 1, 16)
    ours = theirs - sum(v.numel() for k, v in torch.load(params, weights_only=True).items()
                        if k.startswith("blocks.1.") and not k.endswith(".mask"))
    assert str(e.value) == (f"{params}: the params of a finished 2-epoch run of a larger model (its card "
                            f"{params}.card.json says; {theirs:,} weights beside the vocabulary's tok_emb and head, "
                            f"against {ours:,}), more training than this 2-epoch run would replace them with; write "
                            f"elsewhere (OUT_DIR=FOLDER ./run.sh MODE), move the file away, or add --restart to "
                            f"replace them")
    assert params.read_bytes() == kept
    run(1, 2, 48)  # one epoch of a model over twice as large is more training: replaced
    assert driver.weight_count(str(params)) > 2 * theirs
    with pytest.raises(DataError, match=r"finished 1-epoch run of a larger model \(.*; [\d,]+ weights "):
        run(1, 2, 16)
    assert driver.weight_count(str(params / "missing")) is None
    assert driver.weight_count(str(tmp_path / "wiki.txt")) is None
    capsys.readouterr()


def test_a_run_of_as_many_epochs_on_a_corpus_of_fewer_characters_replaces_the_params(tmp_path, monkeypatch, capsys):
    """The weights compared are the model's size, not its vocabulary's: a corpus one character short makes the
    embedding and head a row smaller, and counting them refused a same-size, same-epochs run as "more training"
    (its 1-epoch run of more weights). Nor are the attention masks weights (buffers, never trained)."""
    params = tmp_path / "p.params"
    (tmp_path / "a.txt").write_text(WIKI + "Person Q was born in Qatar.\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text(WIKI, encoding="utf-8")
    argv = ["--function=pretrain", "--variant=vanilla", "--n_layer", "1", "--n_head", "2", "--n_embd", "16",
            "--block_size", "32", "--batch_size", "8", "--max_epochs", "1", f"--writing_params_path={params}"]
    monkeypatch.setenv("GPT_NUM_THREADS", "1")
    driver.main(argv + [f"--pretrain_corpus_path={tmp_path / 'a.txt'}"])
    kept = params.read_bytes()
    driver.main(argv + [f"--pretrain_corpus_path={tmp_path / 'b.txt'}"])
    assert params.read_bytes() != kept
    model = GPT(GPTConfig(20, 32, n_layer=1, n_head=2, n_embd=16))
    assert driver.weight_count(model.state_dict()) == driver.weight_count(str(params)) == sum(
        p.numel() for n, p in model.named_parameters() if n not in ("tok_emb.weight", "head.weight"))
    capsys.readouterr()


def test_a_state_save_refused_for_another_reason_than_space_does_not_ask_for_space(tmp_path, monkeypatch):
    """A state save refused by a folder made read-only (or a read-only remount) is one line as a full disk's is,
    but more space would not help: the hint names the state saved before it and --resume once it can be
    written, not "once there is space there"."""
    import errno
    data = corpus()

    def refused(src, dst):
        raise PermissionError(errno.EACCES, "Permission denied")

    def rename_refused(path, save):
        with monkeypatch.context() as m:  # the real atomic write, its rename refused
            m.setattr(os, "replace", refused)
            save()

    calls = saves_failing_after_the_first(monkeypatch, rename_refused)
    state = tmp_path / "params.state"
    with pytest.raises(DataError) as failed:
        trainer(tmp_path, data, max_epochs=4).train()
    assert calls == [1, 2]
    assert str(failed.value) == (f"{state}: could not write it (Permission denied); the previous file, if any, is "
                                 f"unchanged; pick another path; the training state after epoch 1 of 4 is in "
                                 f"{state}: once it can be written there, the same command with --resume trains "
                                 f"from there")
    assert torch.load(state, weights_only=True)["epoch"] == 1


def test_a_resumed_run_keeps_the_saved_best_test_loss(tmp_path, monkeypatch):
    """The lowest test loss recorded in the state goes on into the resumed run: a state whose best_loss is
    lower than any test loss the resumed epochs reach keeps that value in every later save."""
    def run(**conf):
        t = trainer(tmp_path, data, **conf)
        t.test_dataset = CharCorruptionDataset(WIKI[:400], 32)
        return t

    data = corpus()
    with monkeypatch.context() as m:
        interrupt_at(m, -(-len(data) // 8) + 1)  # in epoch 2: the state after epoch 1 is kept
        with pytest.raises(KeyboardInterrupt):
            run().train()
    state = torch.load(tmp_path / "params.state", weights_only=True)
    assert state["epoch"] == 1 and 0.5 < state["best_loss"] < 10
    state["best_loss"] = 0.001
    torch.save(state, tmp_path / "params.state")
    saves = []
    monkeypatch.setattr("submission.resume.save", lambda path, **kw: saves.append((kw["epoch"], kw["best_loss"])))
    run(resume=True).train()
    assert saves == [(2, 0.001), (3, 0.001), (4, 0.001)]


def test_a_state_every_of_0_saves_at_every_epochs_end_on_a_clock_that_did_not_move(tmp_path, monkeypatch):
    """state_every=0 saves the state at the end of every epoch but the last, also where the clock reads the same
    time at the save as at the one before (a coarse clock, a fast epoch): 0 seconds since is due."""
    saves = []
    monkeypatch.setattr("submission.resume.save", lambda path, **kw: saves.append(kw["epoch"]))
    steps_take(monkeypatch, 0.0)
    trainer(tmp_path, corpus(), max_epochs=4, state_every=0).train()
    assert saves == [1, 2, 3]

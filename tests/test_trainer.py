"""Trainer: the course's learning-rate schedule at chosen token counts, parameter groups, the
token counter, the per-step log and checkpoints.

Run:  python -m pytest -q tests/test_trainer.py
"""
import json
import math
import os
import re
import subprocess
import sys

import pytest
import torch
from torch.utils.data import TensorDataset

from submission import GPT, GPTConfig, Trainer, TrainerConfig
from submission import fastpath
from submission import trainer as trainer_module
from submission.trainer import duration_text, lr_multiplier, pace_line
from submission.utils import get_device


def test_defaults_are_the_courses():
    c = TrainerConfig()
    assert (c.max_epochs, c.batch_size, c.learning_rate, c.betas, c.grad_norm_clip, c.weight_decay) == \
        (10, 64, 3e-4, (0.9, 0.95), 1.0, 0.1)
    assert (c.lr_decay, c.warmup_tokens, c.final_tokens, c.ckpt_path, c.num_workers) == \
        (False, 375e6, 260e9, None, 0)
    # beyond the course: no training state unless asked, saved at most every 5 minutes (README, run.py --help)
    assert (c.state_path, c.state_every, c.resume) == (None, 300.0, False)


def test_schedule_points():
    c = TrainerConfig(warmup_tokens=512 * 20, final_tokens=200 * 2938 * 128)
    assert lr_multiplier(0, c) == 0.0
    assert lr_multiplier(5120, c) == pytest.approx(0.5)
    assert lr_multiplier(10240, c) == pytest.approx(1.0)
    mid = 10240 + (c.final_tokens - 10240) / 2
    assert lr_multiplier(mid, c) == pytest.approx(0.5)
    quarter = 10240 + (c.final_tokens - 10240) / 4
    assert lr_multiplier(quarter, c) == pytest.approx(0.5 * (1 + math.cos(math.pi / 4)))
    assert lr_multiplier(c.final_tokens, c) == pytest.approx(0.1)  # the 10% floor
    # the course's quirk: progress is not clamped, so past final_tokens the cosine climbs again,
    # back to the full rate at progress 2 (epoch ~400 of the 650 pretraining epochs)
    assert lr_multiplier(10240 + 2 * (c.final_tokens - 10240), c) == pytest.approx(1.0)
    end = (650 * 2938 * 128 - 10240) / (c.final_tokens - 10240)
    assert lr_multiplier(650 * 2938 * 128, c) == pytest.approx(0.5 * (1 + math.cos(math.pi * end)))


def test_without_a_warm_up_the_schedule_starts_at_the_full_rate():
    """warmup_tokens=0: no warm-up, the cosine from the first token on, as the course's `tokens < warmup_tokens`
    test gives; 0 tokens is the full rate, not the warm-up's 0/1 (a `<=` test gave 0 there and passed every
    other test: the two branches agree at tokens == warmup_tokens > 0)."""
    c = TrainerConfig(warmup_tokens=0, final_tokens=1000)
    assert lr_multiplier(0, c) == 1.0
    assert lr_multiplier(500, c) == pytest.approx(0.5)
    assert lr_multiplier(10, TrainerConfig(warmup_tokens=10, final_tokens=1000)) == 1.0


def tiny_run(tmp_path, **kw):
    torch.manual_seed(0)
    x = torch.randint(1, 12, (40, 9))
    data = TensorDataset(x, torch.roll(x, -1, 1))
    model = GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8))
    conf = dict(max_epochs=3, batch_size=16, learning_rate=1e-2, lr_decay=True, warmup_tokens=100,
                final_tokens=800, log_path=str(tmp_path / "log.jsonl"))
    conf.update(kw)
    trainer = Trainer(model, data, None, TrainerConfig(**conf))
    trainer.train()
    return trainer, [json.loads(line) for line in open(conf["log_path"])]


def test_token_counter_and_logged_schedule(tmp_path):
    trainer, log = tiny_run(tmp_path)
    # 3 epochs of 40 rows of 9 targets: every position counts, as in the course
    assert trainer.tokens == 3 * 40 * 9
    assert len(log) == 3 * 3 and log[-1]["step"] == 9 and log[-1]["epoch"] == 3
    c = trainer.config
    for row in log:
        assert row["lr"] == pytest.approx(1e-2 * lr_multiplier(row["tokens"], c))
        assert math.isfinite(row["loss"])
    assert log[-1]["loss"] < log[0]["loss"]


class EveryTargetCounts(torch.nn.Module):
    """A model of another task, as the course's Trainer serves any: causal (a running sum of embeddings),
    and its loss counts every target, id 0 included (minGPT's original loss; the notebook's data)."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(7, 8)
        self.head = torch.nn.Linear(8, 7)

    def forward(self, x, targets=None):
        logits = self.head(torch.cumsum(self.emb(x), dim=1))  # (B, T, 7)
        if targets is None:
            return logits, None
        return logits, torch.nn.functional.cross_entropy(logits.view(-1, 7), targets.reshape(-1))


def train_every_target_model(fast, targets_from=1, lr_decay=False):
    torch.manual_seed(0)
    model = EveryTargetCounts()
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 7, (32, 12), generator=g)
    y = torch.randint(targets_from, 7, (32, 12), generator=g)
    y[:, -3:] = 0  # the last three targets of every row are id 0: a real target to this model
    y[:5, :4] = -100  # and some cross_entropy skips (its default ignore_index)
    trainer = Trainer(model, TensorDataset(x, y), None, TrainerConfig(
        max_epochs=2, batch_size=16, learning_rate=0.1, fast=fast, num_threads=1, lr_decay=lr_decay,
        warmup_tokens=100, final_tokens=1000))
    trainer.train()
    return model, trainer, y


def test_a_model_whose_loss_counts_id_0_trains_as_the_courses_loop():
    """The fast path cuts away targets of id 0 only for a model that declares its loss skips them
    (GPT.loss_ignore_index): here it trained 0.2 away from the course's loop, dropping real targets."""
    fast, _, _ = train_every_target_model(fast=True)
    course, _, _ = train_every_target_model(fast=False)
    for (name, a), b in zip(fast.named_parameters(), course.parameters()):
        assert torch.allclose(a, b, atol=1e-6), name


def test_the_token_counter_skips_negative_targets_as_the_courses_does():
    """The course counts (y >= 0).sum(): PAD (0) counted, cross_entropy's -100 not."""
    _, trainer, y = train_every_target_model(fast=True, lr_decay=True)
    assert trainer.tokens == 2 * int((y >= 0).sum()) == 2 * (32 * 12 - 5 * 4)


def test_the_skipped_target_comes_from_the_model_or_the_config():
    assert fastpath.skipped_target(TrainerConfig(), GPT(GPTConfig(9, 8, n_layer=1, n_head=1, n_embd=8))) == 0
    assert fastpath.skipped_target(TrainerConfig(), EveryTargetCounts()) is None
    assert fastpath.skipped_target(TrainerConfig(ignore_index=3), EveryTargetCounts()) == 3
    for bad in ("0", 1.5, True):
        with pytest.raises(ValueError, match="ignore_index must be 'auto', None or a target id"):
            fastpath.skipped_target(TrainerConfig(ignore_index=bad), EveryTargetCounts())


class OwnLossGPT(GPT):
    """A program's GPT with a forward of its own, the course's signature, whose loss counts every target (PAD
    included); it declares no loss_ignore_index of its own."""

    def forward(self, idx, targets=None):
        logits, _ = super().forward(idx)
        if targets is None:
            return logits, None
        return logits, torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


class OwnLossDeclaredGPT(OwnLossGPT):
    loss_ignore_index = 5  # declared with (below) the forward that uses it


def test_a_gpt_subclass_with_its_own_loss_trains_on_every_target():
    """GPT.loss_ignore_index (PAD) tells what GPT.forward's loss skips, not what a subclass's own forward does:
    such a model's loss counts PAD, as the course's loop trains it, and the fast path cut the PAD columns away
    (another loss, other params). A subclass's forward is trusted only with a loss_ignore_index of its own."""
    config = GPTConfig(9, 8, n_layer=1, n_head=1, n_embd=8)
    assert fastpath.skipped_target(TrainerConfig(), OwnLossGPT(config)) is None
    assert fastpath.skipped_target(TrainerConfig(), OwnLossDeclaredGPT(config)) == 5
    declared = OwnLossGPT(config)
    declared.loss_ignore_index = 0  # a program's word, on the instance
    assert fastpath.skipped_target(TrainerConfig(), declared) == 0
    patched = GPT(config)
    patched.forward = OwnLossGPT.forward.__get__(patched)  # a forward set on the instance
    assert fastpath.skipped_target(TrainerConfig(), patched) is None
    assert fastpath.skipped_target(TrainerConfig(ignore_index=0), OwnLossGPT(config)) == 0
    assert fastpath.skipped_target(TrainerConfig(), torch.nn.DataParallel(GPT(config))) == 0  # the model within


class HoldsGPT(torch.nn.Module):
    """A program's model that holds a GPT under the name `module` (no DataParallel) and computes its own loss,
    which counts every target, PAD included."""

    def __init__(self, config):
        super().__init__()
        self.module = GPT(config)

    def forward(self, idx, targets=None):
        return OwnLossGPT.forward(self.module, idx, targets)


def test_a_model_holding_a_gpt_as_module_is_no_wrapper_for_the_skipped_target():
    """Only DataParallel/DDP and torch.compile wrappers speak for the model within: a program's module holding a
    GPT under the attribute name `module` computes its own loss, and was read as the GPT inside (PAD trimmed away,
    as before 9e0f039 for a subclass's own forward)."""
    config = GPTConfig(9, 8, n_layer=1, n_head=1, n_embd=8)
    assert fastpath.skipped_target(TrainerConfig(), HoldsGPT(config)) is None
    assert fastpath.skipped_target(TrainerConfig(), torch.compile(torch.nn.DataParallel(GPT(config)))) == 0


def test_a_gpt_subclass_declaring_no_skipped_target_counts_every_target():
    """loss_ignore_index = None says the loss skips no target id, as skipped_target reads it (every target counts,
    no padding trim): GPT.forward's loss then counts PAD too, as cross_entropy's default (-100) does; it passed
    None on to cross_entropy, which stopped with a TypeError (ignore_index must be int)."""

    class EveryTargetGPT(GPT):
        loss_ignore_index = None

    torch.manual_seed(0)
    model = EveryTargetGPT(GPTConfig(9, 8, n_layer=1, n_head=1, n_embd=8))
    x, y = torch.randint(0, 9, (2, 8)), torch.tensor([[0] * 4 + [3] * 4, [5] * 8])  # PAD (0) targets in row 0
    logits, loss = model(x, y)
    assert torch.allclose(loss, torch.nn.functional.cross_entropy(logits.view(-1, 9), y.view(-1)))
    assert fastpath.skipped_target(TrainerConfig(), model) is None


def test_a_writer_gets_the_loss_and_rate_of_every_step(tmp_path):
    """TrainerConfig(writer=SummaryWriter(...)), as the course's later editions pass one: train/loss and
    train/lr at each step, the values the loss log holds."""
    class Writer:
        def __init__(self):
            self.scalars = []

        def add_scalar(self, tag, value, step):
            self.scalars.append((tag, value, step))

    writer = Writer()
    _, log = tiny_run(tmp_path, writer=writer)
    # at the course's global step, which counts from 0 where the log counts from 1
    assert [s for s in writer.scalars if s[0] == "train/lr"] == [("train/lr", row["lr"], row["step"] - 1)
                                                                 for row in log]
    losses = [s for s in writer.scalars if s[0] == "train/loss"]
    assert [step for _, _, step in losses] == [row["step"] - 1 for row in log]
    assert [round(value, 6) for _, value, _ in losses] == [row["loss"] for row in log]


class StepWriter:
    """A SummaryWriter stand-in: the global step of each train/loss scalar."""

    def __init__(self):
        self.steps = []

    def add_scalar(self, tag, value, step):
        if tag == "train/loss":
            self.steps.append(step)


def courses_writer_steps(train_batches, test_batches, epochs):
    """The steps the course's run_epoch passes its writer: `step` starts at 0, is passed before it is
    incremented, and every batch increments it, a test epoch's too."""
    step, steps = 0, []
    for _ in range(epochs):
        for _ in range(train_batches):
            steps.append(step)
            step += 1
        step += test_batches
    return steps


@pytest.mark.parametrize("test_rows", [None, 24])
def test_a_writer_gets_the_courses_global_steps(tmp_path, test_rows):
    """TensorBoard curves of this trainer and the course's lie on the same steps: from 0 (the log's steps
    count from 1), and with a test set its batches counted too, as the course's counter counts them."""
    torch.manual_seed(0)
    x = torch.randint(1, 12, (40, 9))
    data = TensorDataset(x, torch.roll(x, -1, 1))
    test = None if test_rows is None else TensorDataset(x[:test_rows], torch.roll(x[:test_rows], -1, 1))
    writer = StepWriter()
    model = GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8))
    Trainer(model, data, test, TrainerConfig(max_epochs=3, batch_size=16, writer=writer,
                                             log_path=str(tmp_path / "log.jsonl"))).train()
    assert writer.steps == courses_writer_steps(3, 0 if test is None else 2, 3)  # 40 rows: 3 batches of 16; 24: 2


def test_the_trainer_logs_as_the_courses_does(tmp_path, caplog):
    """The course's trainer logs through its module logger at INFO: "saving PATH" at every checkpoint and
    "test loss: X" after every test epoch, which a program that turns logging on (as minGPT's notebook does,
    logging.basicConfig(level=logging.INFO)) sees."""
    import logging
    torch.manual_seed(0)
    x = torch.randint(1, 12, (20, 9))
    data = TensorDataset(x, torch.roll(x, -1, 1))
    ckpt = str(tmp_path / "ck.params")
    with caplog.at_level(logging.INFO, logger="submission.trainer"):
        Trainer(GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8)), data, data, TrainerConfig(
            max_epochs=2, batch_size=8, ckpt_path=ckpt, log_path=str(tmp_path / "log.jsonl"))).train()
    messages = [r.getMessage() for r in caplog.records if r.name == "submission.trainer"]
    assert [m for m in messages if m.startswith("saving ")] == [f"saving {ckpt}"] * 2
    losses = [m for m in messages if m.startswith("test loss: ")]
    assert len(losses) == 2 and all(math.isfinite(float(m.split(": ")[1])) for m in losses)


def test_a_config_with_only_the_courses_fields_trains_as_a_trainer_config(tmp_path, monkeypatch):
    """A program's own config object holding only the course's eleven TrainerConfig fields: the
    Trainer reads the rest from TrainerConfig's defaults, and trains exactly as with a TrainerConfig."""
    from types import SimpleNamespace
    monkeypatch.setenv("GPT_NUM_THREADS", "1")  # bit for bit needs one thread count (the load picks it otherwise)
    course = dict(max_epochs=2, batch_size=16, learning_rate=1e-2, betas=(0.9, 0.95), grad_norm_clip=1.0,
                  weight_decay=0.1, lr_decay=True, warmup_tokens=100, final_tokens=800, ckpt_path=None,
                  num_workers=0)
    params = []
    for config in (TrainerConfig(**course), SimpleNamespace(**course)):
        torch.manual_seed(0)
        x = torch.randint(1, 12, (40, 9))
        model = GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8))
        trainer = Trainer(model, TensorDataset(x, torch.roll(x, -1, 1)), None, config)
        trainer.train()
        params.append(model.state_dict())
        assert trainer.tokens == 2 * 40 * 9
    for name in params[0]:
        assert torch.equal(params[0][name], params[1][name]), name
    view = Trainer(GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8)), None, None, config).config
    view.max_epochs = 5  # set through the view onto the program's own object
    assert config.max_epochs == 5 and view.num_threads is None and not hasattr(config, "num_threads")


def test_log_and_checkpoint_folders_are_made_as_needed(tmp_path):
    ckpt = tmp_path / "new" / "ckpt.params"
    _, log = tiny_run(tmp_path, max_epochs=1, log_path=str(tmp_path / "new" / "deeper" / "log.jsonl"),
                      ckpt_path=str(ckpt))
    assert len(log) == 3 and ckpt.is_file()


def test_the_partial_log_is_on_disk_while_the_run_goes(tmp_path, monkeypatch):
    """`plots.py curves` reads a running run's .partial log: its lines reach the file about once a second
    (they sat in an 8 KB buffer, some 80 course-size steps, and the plot said the log was empty)."""
    clock = [1000.0]

    def tick():  # two seconds pass at every look at the clock
        clock[0] += 2.0
        return clock[0]
    monkeypatch.setattr(trainer_module.time, "time", tick)
    partial = tmp_path / "log.jsonl.partial"
    seen = []

    class Rows(TensorDataset):
        def __getitem__(self, i):
            if i == 0:  # each epoch's first row: what the file holds so far
                seen.append(len(partial.read_text().splitlines()) if partial.exists() else None)
            return super().__getitem__(i)
    torch.manual_seed(0)
    x = torch.randint(1, 12, (40, 9))
    model = GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8))
    Trainer(model, Rows(x, torch.roll(x, -1, 1)), None,
            TrainerConfig(max_epochs=3, batch_size=8, log_path=str(tmp_path / "log.jsonl"))).train()
    assert seen == [0, 5, 10]  # 5 steps an epoch, each epoch's all there when the next begins


def test_a_loss_log_the_disk_cannot_take_stops_the_log_not_the_run(tmp_path, monkeypatch, capsys):
    """A write of the loss log that fails (a full disk: ENOSPC) drops the log, removing its part written to
    give the space back, and says so in one line; training goes on to the end and saves its checkpoint."""
    import errno
    real_open = open

    class FillsUp:
        def __init__(self, f):
            self.f, self.name, self.lines = f, f.name, 0

        def write(self, text):
            self.lines += text.count("\n")
            if self.lines > 4:
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.f.write(text)

        def flush(self):
            self.f.flush()

        def close(self):
            self.f.close()

    monkeypatch.setattr(trainer_module, "open",
                        lambda *a, **k: FillsUp(real_open(*a, **k)), raising=False)
    ckpt = tmp_path / "model.params"
    torch.manual_seed(0)
    x = torch.randint(1, 12, (40, 9))
    model = GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8))
    conf = TrainerConfig(max_epochs=3, batch_size=16, log_path=str(tmp_path / "log.jsonl"), ckpt_path=str(ckpt))
    Trainer(model, TensorDataset(x, torch.roll(x, -1, 1)), None, conf).train()  # 3 epochs of 3 steps, to the end
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert err == [f"note: {tmp_path / 'log.jsonl'}.partial: could not write the loss log (No space left on "
                   f"device); training goes on without it, and the part written is removed"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.params"]  # no log, whole or part
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in torch.load(ckpt, weights_only=True).items())


def test_a_loss_log_that_is_a_link_is_written_through_it(tmp_path):
    """A --log_path that was a symbolic link was replaced by a regular file, and the file it named (on another
    disk, say) kept the old log; params, cards and predictions write through a link. The log is written as
    `.partial` beside the file the link names (a rename within one folder), and the link stays."""
    (tmp_path / "elsewhere").mkdir()
    target = tmp_path / "elsewhere" / "log.jsonl"
    target.write_text('{"step": 1, "loss": 9.0, "lr": 0.1}\n')
    link = tmp_path / "log.jsonl"
    link.symlink_to(os.path.join("elsewhere", "log.jsonl"))
    torch.manual_seed(0)
    x = torch.randint(1, 12, (40, 9))
    model = GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8))
    Trainer(model, TensorDataset(x, torch.roll(x, -1, 1)), None,
            TrainerConfig(max_epochs=1, batch_size=16, log_path=str(link))).train()
    assert link.is_symlink() and os.readlink(link) == os.path.join("elsewhere", "log.jsonl")
    assert [json.loads(line)["step"] for line in target.read_text().splitlines()] == [1, 2, 3]
    assert sorted(os.listdir(tmp_path / "elsewhere")) == ["log.jsonl"] and sorted(os.listdir(tmp_path)) == [
        "elsewhere", "log.jsonl"]
    assert trainer_module.partial_log_path(str(link)) == str(target) + ".partial"
    assert trainer_module.partial_log_path(str(target)) == str(target) + ".partial"
    gone = tmp_path / "gone.log.jsonl"  # a link into a folder not made yet: the log's folder is made there
    gone.symlink_to(tmp_path / "later" / "log.jsonl")
    Trainer(model, TensorDataset(x, torch.roll(x, -1, 1)), None,
            TrainerConfig(max_epochs=1, batch_size=16, log_path=str(gone))).train()
    assert gone.is_symlink() and os.listdir(tmp_path / "later") == ["log.jsonl"]


def test_an_interrupted_run_keeps_the_previous_log(tmp_path):
    """The log is written as <log>.partial and renamed only when training ends: a run stopped midway
    leaves the previous run's log whole, beside its own partial one."""
    _, first = tiny_run(tmp_path, max_epochs=1)
    before = (tmp_path / "log.jsonl").read_bytes()

    class StopsInEpochTwo(TensorDataset):
        calls = 0

        def __getitem__(self, i):
            StopsInEpochTwo.calls += 1
            if StopsInEpochTwo.calls > 50:
                raise KeyboardInterrupt
            return super().__getitem__(i)

    x = torch.randint(1, 12, (40, 9))
    model = GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8))
    conf = TrainerConfig(max_epochs=3, batch_size=16, log_path=str(tmp_path / "log.jsonl"))
    with pytest.raises(KeyboardInterrupt):
        Trainer(model, StopsInEpochTwo(x, torch.roll(x, -1, 1)), None, conf).train()
    assert (tmp_path / "log.jsonl").read_bytes() == before and len(first) == 3
    partial = [json.loads(line) for line in open(tmp_path / "log.jsonl.partial")]
    assert [row["epoch"] for row in partial] == [1, 1, 1]
    tiny_run(tmp_path, max_epochs=1)  # a finished run replaces the log and leaves no partial one
    assert not (tmp_path / "log.jsonl.partial").exists()


def _run_over_previous_params(tmp_path, rows, **config):
    """(params path holding an earlier run's bytes, model, Trainer) of a small run on `rows` rows, batch 16, with a
    loss log and a checkpoint in tmp_path: `config`'s TrainerConfig fields on top."""
    params = tmp_path / "model.params"
    params.write_bytes(b"the previous run's params")
    torch.manual_seed(0)
    x = torch.randint(1, 12, (rows, 9))
    model = GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8))
    conf = TrainerConfig(batch_size=16, learning_rate=1e-2, log_path=str(tmp_path / "log.jsonl"),
                         ckpt_path=str(tmp_path / "ckpt.params"), **config)
    return params, model, Trainer(model, TensorDataset(x, torch.roll(x, -1, 1)), None, conf)


def test_a_diverged_run_stops_before_writing_params(tmp_path):
    """A loss that turns NaN stops training with one message naming the step, before the checkpoint
    and the params are written; the partial log ends at the bad step, the old params stay."""
    from submission.cli import TrainingDiverged
    from submission.helper import train

    params, model, trainer = _run_over_previous_params(tmp_path, 40, max_epochs=3)
    with torch.no_grad():  # a poisoned weight makes the loss of the first step NaN
        model.head.weight[0, 0] = float("nan")
    with pytest.raises(TrainingDiverged, match=r"the training loss is nan at step 1 \(epoch 1, .*log.jsonl.partial"):
        train(model, str(params), trainer)
    assert params.read_bytes() == b"the previous run's params"
    assert not (tmp_path / "ckpt.params").exists() and not (tmp_path / "log.jsonl").exists()
    rows = [json.loads(line) for line in open(tmp_path / "log.jsonl.partial")]
    assert [r["step"] for r in rows] == [1] and math.isnan(rows[0]["loss"])


@pytest.mark.parametrize("fast", [True, False])
def test_params_made_nan_by_the_last_update_are_not_written(tmp_path, monkeypatch, fast):
    """Each step's loss is checked before its update, so the last update went unchecked: a rate that blew up the
    params there wrote NaN params over the previous ones and exited 0. Now the run stops as diverged, naming the
    last step and a tensor, and the previous params stay."""
    from submission.cli import TrainingDiverged
    from submission.helper import train

    params, model, trainer = _run_over_previous_params(tmp_path, 32, max_epochs=1, fast=fast, num_threads=1)
    real_step, steps = torch.optim.AdamW.step, []

    def last_step_blows_up(self, *args, **kwargs):  # as a huge rate does, at the second (last) step alone
        out = real_step(self, *args, **kwargs)
        steps.append(1)
        if len(steps) == 2:
            with torch.no_grad():
                model.head.weight.fill_(float("inf"))
        return out

    monkeypatch.setattr(torch.optim.AdamW, "step", last_step_blows_up)
    with pytest.raises(TrainingDiverged, match=r"^the params are NaN or infinite after the update of step 2 "
                                               r"\(head.weight\): training stopped and no params were written; "
                                               r"the loss log up to it is .*log.jsonl.partial; lower"):
        train(model, str(params), trainer)
    assert params.read_bytes() == b"the previous run's params" and not (tmp_path / "log.jsonl").exists()
    assert not (tmp_path / "ckpt.params").exists()  # the course's checkpoint after the epoch: not written either
    rows = [json.loads(line) for line in open(tmp_path / "log.jsonl.partial")]
    assert [r["step"] for r in rows] == [1, 2] and all(math.isfinite(r["loss"]) for r in rows)


def test_a_model_with_an_infinite_buffer_is_no_diverged_run(tmp_path):
    """The check of the params after the last update read the whole state_dict: a model keeping an additive -inf
    causal mask as a buffer was called diverged ("lower --learning_rate") and its params never written."""
    class MaskedModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(12, 12)
            self.register_buffer("bias", torch.full((9, 9), float("-inf")).triu(1))

        def forward(self, x, y):
            logits = self.emb(x)  # (B, T, 12); the mask is kept, as such a model keeps one, not read here
            return logits, torch.nn.functional.cross_entropy(logits.view(-1, 12), y.view(-1))

    torch.manual_seed(0)
    x = torch.randint(1, 12, (32, 9))
    model = MaskedModel()
    Trainer(model, TensorDataset(x, torch.roll(x, -1, 1)), None,
            TrainerConfig(max_epochs=1, batch_size=16, num_threads=1)).train()
    assert torch.isinf(model.bias).any() and all(torch.isfinite(p).all() for p in model.parameters())


def test_parameter_groups_follow_the_course():
    model = GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8))
    opt = Trainer(model, None, None, TrainerConfig())._optimizer(model, TrainerConfig())
    decay, nodecay = opt.param_groups
    names = {id(p): n for n, p in model.named_parameters()}
    assert decay["weight_decay"] == 0.1 and nodecay["weight_decay"] == 0.0
    assert all(names[id(p)].endswith("bias") for p in nodecay["params"])
    # the course's "LayerNorm.weight" never matches ln1/ln2/ln_f, so their weights decay
    assert any(names[id(p)] == "ln_f.weight" for p in decay["params"])
    assert len(decay["params"]) + len(nodecay["params"]) == len(list(model.parameters()))
    # the config's own values reach AdamW (the course's defaults would hide one that is hard-coded)
    config = TrainerConfig(weight_decay=0.3, betas=(0.8, 0.9), learning_rate=2e-3)
    decay, nodecay = Trainer(model, None, None, config)._optimizer(model, config).param_groups
    assert decay["weight_decay"] == 0.3 and nodecay["weight_decay"] == 0.0
    assert all(g["betas"] == (0.8, 0.9) and g["lr"] == 2e-3 for g in (decay, nodecay))



class _CodebaseLayerNorm(torch.nn.Module):
    """A model of another codebase whose LayerNorm is an attribute named LayerNorm (as Hugging Face's BERT
    names its own), the name the course's no-decay rule was written for."""

    def __init__(self):
        super().__init__()
        self.dense = torch.nn.Linear(4, 4)
        self.LayerNorm = torch.nn.LayerNorm(4)


def test_a_parameter_named_layernorm_weight_skips_weight_decay_as_the_courses_rule_says():
    """The course's no-decay group is every name containing "bias" or "LayerNorm.weight". This GPT has no such
    name (ln1, ln2, ln_f), but the Trainer serves any model: one whose LayerNorm is named LayerNorm keeps its
    weight out of the decay, as in the course's trainer. (A rule of "bias" alone decayed it, and every test
    passed: none had such a model.)"""
    model = _CodebaseLayerNorm()
    decay, nodecay = Trainer(model, None, None, TrainerConfig())._optimizer(model, TrainerConfig()).param_groups
    names = {id(p): n for n, p in model.named_parameters()}
    assert sorted(names[id(p)] for p in decay["params"]) == ["dense.weight"]
    assert sorted(names[id(p)] for p in nodecay["params"]) == ["LayerNorm.bias", "LayerNorm.weight", "dense.bias"]

def test_a_second_train_call_starts_its_schedule_again(tmp_path):
    """train() counts tokens from 0 each time it is called, as the course's does: the learning rate of a
    second call on the same Trainer follows the schedule from its start, not from where the first ended."""
    trainer, first = tiny_run(tmp_path, max_epochs=1)
    trainer.train()
    second = [json.loads(line) for line in open(tmp_path / "log.jsonl")]
    assert trainer.tokens == 40 * 9
    assert [(r["tokens"], r["lr"]) for r in second] == [(r["tokens"], r["lr"]) for r in first]


def test_the_test_loss_is_the_eval_mode_mean_over_batches(tmp_path, monkeypatch):
    """The printed test loss is the model's mean loss over the test batches with dropout off (eval mode),
    the number that picks the checkpoint."""
    torch.manual_seed(0)
    x = torch.randint(1, 12, (32, 9))
    test = TensorDataset(x, torch.roll(x, -1, 1))
    model = GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=16, embd_pdrop=0.5, resid_pdrop=0.5,
                          attn_pdrop=0.5))
    printed = []
    monkeypatch.setattr("submission.trainer.tqdm.write", lambda line: printed.append(line))
    config = TrainerConfig(max_epochs=1, batch_size=16, learning_rate=1e-2, ckpt_path=str(tmp_path / "c.params"))
    Trainer(model, TensorDataset(x, x), test, config).train()
    model.eval()
    with torch.no_grad():  # two batches of 16
        want = sum(float(model(a, b)[1]) for a, b in ((x[:16], test.tensors[1][:16]), (x[16:], test.tensors[1][16:])))
    [line] = [p for p in printed if p.startswith("epoch 1: test loss")]
    assert float(line.split()[-1]) == pytest.approx(want / 2, abs=2e-5)


@pytest.mark.parametrize("version, cpu_fused", [("2.0.1+cu117", False), ("2.3.1", False), ("2.4.0", True),
                                               ("2.13.0+cpu", True), ("10.0.0a0", True)])
def test_adamw_is_fused_on_the_cpu_only_where_torch_has_the_kernel(monkeypatch, version, cpu_fused):
    """torch before 2.4 refuses fused=True for CPU params when the optimizer is built (no CPU kernel):
    such a torch gets the per-tensor loop; CUDA's kernel is there from 2.0 on."""
    model = GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8))
    opt = Trainer(model, None, None, TrainerConfig())._optimizer(model, TrainerConfig())  # this torch
    assert bool(opt.defaults.get("fused")) is fastpath._has_fused_adamw("cpu")
    monkeypatch.setattr(torch, "__version__", version)
    assert fastpath._has_fused_adamw("cpu") is cpu_fused
    assert fastpath._has_fused_adamw("cuda") and not fastpath._has_fused_adamw("mps")


class _WorseAfterFirstPass(torch.utils.data.Dataset):
    """(x, x) pairs, a copy task, on the first pass; from the second pass on the targets are x + 1,
    which a model trained to copy gets wrong, so the test loss rises after epoch 1."""

    def __init__(self, x):
        self.x, self.passes = x, 0

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        self.passes += i == 0
        return self.x[i], self.x[i] if self.passes == 1 else self.x[i] % 11 + 1


def test_checkpoint_is_saved_after_every_epoch_as_the_courses_is(tmp_path, monkeypatch):
    """The course's trainer calls save_checkpoint after every epoch, a test set or not; minGPT's own, which
    this one followed before, kept only the model of the best test loss, so a program of the course's with
    a test set found an earlier model at ckpt_path than the one it trained."""
    torch.manual_seed(0)
    x = torch.randint(1, 12, (32, 9))
    model = GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=16))
    ckpt = tmp_path / "ckpt.params"
    saved, losses = [], []
    original = Trainer.save_checkpoint
    monkeypatch.setattr(Trainer, "save_checkpoint", lambda self: (
        saved.append({k: v.clone() for k, v in self.model.state_dict().items()}), original(self)))
    monkeypatch.setattr("submission.trainer.tqdm.write", lambda line: line.startswith("epoch") and losses.append(
        float(line.split()[-1])))  # "epoch N: test loss X"
    config = TrainerConfig(max_epochs=3, batch_size=16, learning_rate=3e-2, ckpt_path=str(ckpt))
    Trainer(model, TensorDataset(x, x), _WorseAfterFirstPass(x), config).train()
    assert losses[0] < min(losses[1:])  # the test loss rose after epoch 1 ...
    assert len(saved) == 3              # ... and every epoch's model was saved all the same
    state = torch.load(ckpt, weights_only=True)
    assert set(state) == set(model.state_dict())
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())  # the last epoch's model
    assert not list(tmp_path.glob("*.tmp"))


def test_compile_setting_reads_modes_backends_and_the_environment(monkeypatch, tmp_path):
    from submission.fastpath import AUTO_COMPILE_STEPS, compile_setting
    monkeypatch.delenv("GPT_COMPILE", raising=False)
    assert compile_setting(TrainerConfig(compile=False), "cuda", 10 ** 6) is None
    assert compile_setting(TrainerConfig(compile=True)) == {}
    assert compile_setting(TrainerConfig(compile="reduce-overhead")) == {"mode": "reduce-overhead"}
    assert compile_setting(TrainerConfig(compile="eager")) == {"backend": "eager"}
    # "auto", the default: CUDA graphs on one GPU with Triton, for long runs only
    monkeypatch.setattr(fastpath, "_has_triton", lambda: True)
    auto = TrainerConfig()
    assert compile_setting(auto, "cuda", AUTO_COMPILE_STEPS) == {"mode": "reduce-overhead"}
    assert compile_setting(auto, "cuda:1", 650 * 23) == {"mode": "reduce-overhead"}  # pretraining
    assert compile_setting(auto, "cuda", 75 * 8) is None  # finetuning: compiling would not pay back
    assert compile_setting(auto, "cuda") is None  # length unknown
    assert compile_setting(auto, "cpu", 10 ** 6) is None
    assert compile_setting(auto, "mps", 10 ** 6) is None
    assert compile_setting(auto, "cuda", 10 ** 6, world_size=2) is None  # DDP stays eager
    monkeypatch.setenv("PATH", "")  # no C compiler: Triton could not build its launcher, so no compiling
    monkeypatch.delenv("CC", raising=False)
    assert compile_setting(auto, "cuda", 10 ** 6) is None
    (tmp_path / "clang").write_text("#!/bin/sh\n", encoding="utf-8")
    (tmp_path / "clang").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))  # clang alone, as Triton looks: gcc, else clang
    assert compile_setting(auto, "cuda", 10 ** 6) == {"mode": "reduce-overhead"}
    monkeypatch.setenv("PATH", "")
    monkeypatch.setenv("CC", sys.executable)  # Triton takes $CC as it is, from PATH or not
    assert compile_setting(auto, "cuda", 10 ** 6) == {"mode": "reduce-overhead"}
    monkeypatch.setenv("PATH", os.environ.get("PATH", "") or "/usr/bin")
    monkeypatch.setenv("CC", "no-such-cc")  # named but missing: Triton would fail, as with none
    assert compile_setting(auto, "cuda", 10 ** 6) is None
    monkeypatch.undo()
    monkeypatch.delenv("GPT_COMPILE", raising=False)
    monkeypatch.setattr(fastpath, "_has_triton", lambda: False)
    assert compile_setting(auto, "cuda", 10 ** 6) is None
    monkeypatch.setenv("GPT_COMPILE", "max-autotune")  # the environment decides an "auto" run
    assert compile_setting(auto, "cpu", 1) == {"mode": "max-autotune"}
    monkeypatch.setenv("GPT_COMPILE", "0")
    assert compile_setting(auto, "cuda", 10 ** 6) is None
    assert compile_setting(TrainerConfig(compile="default")) == {"mode": "default"}  # explicit beats it


def test_run_py_flags_set_compile_and_bf16():
    import run
    from submission import helper
    from submission.dataset import CharCorruptionDataset
    pre = CharCorruptionDataset("Ada Quill was born in Lisbon.\n" * 8, 17)
    base = ["pretrain", "vanilla", "wiki.txt", "--writing_params_path", "x.params"]
    seen = {}
    for flags in ([], ["--compile"], ["--compile_mode", "reduce-overhead"], ["--no_compile"], ["--bf16"]):
        tconf, _ = helper.pretrain(pre, 17, GPT(GPTConfig(pre.vocab_size, 17, n_layer=1, n_head=2, n_embd=8)))
        run.apply_overrides(tconf, run.parse_args(base + flags))
        seen[" ".join(flags)] = (tconf.compile, tconf.amp)
    assert seen == {"": ("auto", False), "--compile": (True, False),
                    "--compile_mode reduce-overhead": ("reduce-overhead", False), "--no_compile": (False, False),
                    "--bf16": ("auto", True)}
    with pytest.raises(SystemExit):
        run.parse_args(base + ["--no_compile", "--compile"])


@pytest.mark.skipif(get_device() != "cpu", reason="the trainer trains on the GPU here; the line is a CPU run's")
def test_a_cpu_run_says_how_many_threads_it_used(capsys):
    """The thread count changes a CPU run's results in the last bits (a demo's synthesizer row differs
    between 1 and 2 threads), so a run names it."""
    torch.manual_seed(0)
    x = torch.randint(1, 12, (8, 9))
    model = GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8))
    Trainer(model, TensorDataset(x, x), None, TrainerConfig(max_epochs=1, batch_size=8, num_threads=1)).train()
    assert "trained with 1 CPU thread(s)" in capsys.readouterr().out


@pytest.mark.skipif(get_device() != "cpu", reason="the thread count is a CPU run's")
@pytest.mark.parametrize("fails", [False, True])
def test_training_sets_the_thread_count_back(fails):
    """Evaluation after training in the same process (the demo, a notebook) runs with the thread count
    it had before, whether training ended or raised."""
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        x = torch.randint(1, 12, (8, 9))
        model = GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8))
        trainer = Trainer(model, TensorDataset(x, x), None, TrainerConfig(max_epochs=1, batch_size=8, num_threads=1))

        def after():
            assert torch.get_num_threads() == 1  # the run's count, set back only after this
            if fails:
                raise RuntimeError("disk full")
        if fails:
            with pytest.raises(RuntimeError, match="disk full"):
                trainer.train(after)
        else:
            trainer.train(after)
        assert torch.get_num_threads() == 2  # (TF32, set back the same way, is set only on CUDA)
    finally:
        torch.set_num_threads(before)


def test_pace_line_says_how_long_the_remaining_epochs_take():
    # the course's CPU pretraining: 650 epochs of ~25 s each
    assert pace_line(2, 25.2, 650, resumable=300.0) == (
        "epoch 2 of 650 took 25.2 s: the remaining 648 epochs take about 4 h 32 min at this pace (its state "
        "is saved at an epoch's end every 5 min: after Ctrl-C the same command with --resume goes on from there)")
    assert pace_line(2, 9.6, 75, resumable=0.0).endswith("(its state is saved at every epoch's end: after Ctrl-C "
                                                         "the same command with --resume goes on from there)")
    assert "saved at an epoch's end every 30 s:" in pace_line(2, 9.6, 75, resumable=30.0)  # every ~3 epochs
    assert "saved at every epoch's end:" in pace_line(2, 30.0, 75, resumable=30.0)  # an epoch as long as the wait
    assert pace_line(2, 9.6, 75) == "epoch 2 of 75 took 9.6 s: the remaining 73 epochs take about 12 min at this pace"
    assert pace_line(3, 400.0, 4).startswith("epoch 3 of 4 took 400.0 s: the remaining 1 epoch takes about 7 min")
    assert pace_line(2, 4.0, 75) is None  # under 5 minutes left: the progress bars say enough
    assert pace_line(2, 150.0, 4).endswith("the remaining 2 epochs take about 5 min at this pace")  # 5 min: said
    assert pace_line(2, 149.9, 4) is None
    assert pace_line(2, 1000.0, 2) is None  # nothing left
    assert [duration_text(s) for s in (29, 31, 3569, 3599, 3629, 3631, 36000)] == \
        ["under a minute", "about 1 min", "about 59 min", "about 1 h 00 min", "about 1 h 00 min", "about 1 h 01 min",
         "about 10 h 00 min"]


@pytest.mark.parametrize("epochs,printed", [(4, True), (2, False)])
def test_a_run_prints_its_pace_once_after_its_second_epoch(capsys, monkeypatch, epochs, printed):
    monkeypatch.setattr(trainer_module, "PACE_LINE_SECONDS", 0)
    torch.manual_seed(0)
    x = torch.randint(1, 12, (8, 9))
    model = GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8))
    Trainer(model, TensorDataset(x, x), None, TrainerConfig(max_epochs=epochs, batch_size=4, num_threads=1)).train()
    lines = [line for line in capsys.readouterr().out.splitlines() if " took " in line]
    if printed:
        assert len(lines) == 1 and lines[0].startswith(f"epoch 2 of {epochs} took ")
        assert "the remaining 2 epochs take under a minute at this pace" in lines[0]
    else:
        assert lines == []


def test_importing_the_package_seeds_random_as_the_courses_helper_does():
    # the course's helper.py runs random.seed(0) on import; its grader draws corpora after importing
    code = ("import random; random.seed(123); import submission; a = random.random(); "
            "random.seed(0); print(a == random.random())")
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(os.path.dirname(__file__)), "src"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_a_step_clips_the_gradient_to_grad_norm_clip():
    """Each step scales the gradient down to a total norm of grad_norm_clip before AdamW (the course's
    clip_grad_norm_); a gradient already within the bound is left as it is. Before AdamW: its first moment
    after one step is (1 - beta1) times the gradient it stepped with (a clip after the step left the
    parameters' gradient clipped, and AdamW's step barely depends on the gradient's scale)."""
    torch.manual_seed(0)
    x = torch.randint(1, 12, (16, 9))
    y = torch.roll(x, -1, 1)
    for fast in (True, False):
        norms, moments = [], []
        for clip in (1e-3, 1e6):
            torch.manual_seed(1)
            model = GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8))
            config = TrainerConfig(grad_norm_clip=clip, fast=fast, num_threads=1)
            run = Trainer(model, TensorDataset(x, y), None, config).prepare()
            run.step(x, y)  # the gradient stays on the parameters until the next step
            norms.append(float(torch.norm(torch.stack([p.grad.norm() for p in model.parameters()]))))
            moments.append(float(torch.norm(torch.stack([run.optimizer.state[p]["exp_avg"].norm()
                                                         for p in model.parameters()]))) / (1 - config.betas[0]))
        assert norms[1] > 0.01, fast  # unclipped: the loss's own gradient, far above 1e-3
        assert norms[0] == pytest.approx(1e-3, rel=1e-3), fast
        assert moments == pytest.approx(norms, rel=1e-4), fast



def test_each_step_steps_with_its_own_batchs_gradient_not_the_sum_of_the_steps_so_far():
    """A step zeroes the gradients before its backward (the course's model.zero_grad()): the gradient AdamW
    steps with is the batch's loss's at the weights before the step, as a fresh copy of the model computes it.
    (A step that never zeroed them stepped with the sum of every step's gradient so far, and every test
    passed: the tiny runs' losses still fell, and the fast and the course's loop accumulated alike.)"""
    torch.manual_seed(0)
    x = torch.randint(1, 12, (16, 9))
    y = torch.roll(x, -1, 1)
    gpt = GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8, embd_pdrop=0.0, resid_pdrop=0.0, attn_pdrop=0.0)
    for fast in (True, False):
        torch.manual_seed(1)
        model = GPT(gpt)
        run = Trainer(model, TensorDataset(x, y), None, TrainerConfig(
            learning_rate=1e-2, grad_norm_clip=1e6, fast=fast, num_threads=1)).prepare()  # no clip: the raw gradient
        run.step(x, y)
        device = next(model.parameters()).device
        fresh = GPT(gpt).to(device)
        fresh.load_state_dict(model.state_dict())  # the weights the second step starts from
        fresh(x.to(device), y.to(device))[1].backward()
        run.step(x, y)  # its gradient stays on the parameters
        for (name, p), q in zip(model.named_parameters(), fresh.parameters()):
            assert torch.allclose(p.grad, q.grad, rtol=1e-4, atol=1e-7), (fast, name)

def test_the_scheduled_rate_is_the_rate_adamw_steps_with():
    """With lr_decay, each step sets AdamW's rate to the schedule's (the `lr` it returns and logs), so the
    next step moves the weights by that rate, not by learning_rate. The warm-up here is so long that after
    the first step the rate is about 1e-10 of learning_rate: the second step must leave the weights where
    they are. (A trainer that logged the schedule but never gave it to AdamW trained at a constant rate,
    and every other test still passed: the logged rates were right.)"""
    torch.manual_seed(0)
    x = torch.randint(1, 12, (16, 9))
    y = torch.roll(x, -1, 1)
    for fast in (True, False):
        torch.manual_seed(1)
        model = GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8))
        run = Trainer(model, TensorDataset(x, y), None, TrainerConfig(
            learning_rate=1e-2, lr_decay=True, warmup_tokens=1e12, final_tokens=2e12, fast=fast,
            num_threads=1)).prepare()

        def moved_by_a_step():
            before = [p.detach().clone() for p in model.parameters()]
            _, lr = run.step(x, y)
            return lr, max(float((p.detach() - b).abs().max()) for p, b in zip(model.parameters(), before))

        lr, first = moved_by_a_step()  # at learning_rate, the rate AdamW is built with (as the course's)
        assert lr == pytest.approx(1e-2 * 16 * 9 / 1e12)  # the rate now: 16 rows of 9 targets into the warm-up
        assert first > 1e-3, fast
        _, second = moved_by_a_step()  # at that tiny rate
        assert second < 1e-8, fast


def test_without_lr_decay_every_step_is_at_learning_rate(tmp_path):
    """lr_decay=False (TrainerConfig's default) trains at learning_rate throughout, whatever warmup_tokens
    and final_tokens say: a trainer that applied the schedule anyway trained a default-config run (warm-up
    over 375e6 tokens) at almost no rate at all. Checked in the log and in AdamW's steps: the last step of
    the run moves the weights as far as a full-rate step does."""
    _, log = tiny_run(tmp_path, lr_decay=False, learning_rate=1e-2, warmup_tokens=1e12, final_tokens=2e12)
    assert [row["lr"] for row in log] == [1e-2] * len(log)
    torch.manual_seed(0)
    x = torch.randint(1, 12, (16, 9))
    y = torch.roll(x, -1, 1)
    model = GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8))
    run = Trainer(model, TensorDataset(x, y), None, TrainerConfig(
        learning_rate=1e-2, lr_decay=False, warmup_tokens=1e12, final_tokens=2e12, num_threads=1)).prepare()
    for _ in range(3):
        before = [p.detach().clone() for p in model.parameters()]
        _, lr = run.step(x, y)
        assert lr == 1e-2 and all(g["lr"] == 1e-2 for g in run.optimizer.param_groups)
    assert max(float((p.detach() - b).abs().max()) for p, b in zip(model.parameters(), before)) > 1e-3


class CourseForwardGPT(GPT):
    """A GPT subclass whose forward has the course's signature: it declares no loss_ignore_index to the trainer
    (fastpath._declared_ignore_index), though its loss skips PAD as GPT's does."""

    def forward(self, idx, targets=None):
        return super().forward(idx, targets)


@pytest.mark.parametrize("model_class", [GPT, CourseForwardGPT])
@pytest.mark.parametrize("fast", [True, False])
def test_a_batch_without_a_counted_target_is_logged_nan_and_training_goes_on(tmp_path, capsys, fast, model_class):
    """A batch whose targets are all PAD has a 0/0 loss and zero gradients: the course's loop prints nan and goes
    on. This one stopped as diverged ("lower --learning_rate"), on its fast path and on the course's alike. It
    logs nan, says once on stderr which step had nothing to count, and trains on; a real nan still stops it
    (test_a_diverged_run_stops_before_writing_params). The gradient's norm, 0, tells such a batch, so a subclass
    declaring no skipped target is told too (counting the targets other than -100 missed it)."""
    torch.manual_seed(0)
    x = torch.randint(1, 12, (40, 9))
    y = torch.roll(x, -1, 1)
    y[16:32] = 0  # the second batch of each epoch: every target PAD
    model = model_class(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8))
    conf = TrainerConfig(max_epochs=2, batch_size=16, learning_rate=1e-2, fast=fast, num_threads=1,
                         log_path=str(tmp_path / "log.jsonl"))
    Trainer(model, TensorDataset(x, y), None, conf).train()
    log = [json.loads(line) for line in open(tmp_path / "log.jsonl")]
    assert [row["step"] for row in log if math.isnan(row["loss"])] == [2, 5]
    assert all(math.isfinite(row["loss"]) for row in log if row["step"] not in (2, 5)) and len(log) == 6
    assert all(torch.isfinite(p).all() for p in model.parameters())
    err = capsys.readouterr().err
    assert err.count("note: the batch of step 2 has no target its loss counts: its loss is nan and its "
                     "gradients 0") == 1
    assert "step 5" not in err


def test_the_diverged_message_names_the_rate_of_the_step_that_diverged():
    """The rate in the message is the schedule's at that step (warm-up or decay), beside the configured one."""
    config = TrainerConfig(learning_rate=6e-4, log_path="out/log.jsonl")
    row = {"step": 7, "epoch": 2, "lr": 1.5e-4, "loss": float("nan")}
    assert trainer_module.diverged_message(row, config, True) == (
        "the training loss is nan at step 7 (epoch 2, learning rate 0.00015): training stopped and no params were "
        "written; the loss log up to it is out/log.jsonl.partial; lower --learning_rate (this run's is 0.0006)")
    assert "no params were written; lower --learning_rate" in trainer_module.diverged_message(row, config, False)


def test_the_finished_log_waits_for_a_target_in_use_on_windows(tmp_path, monkeypatch):
    """The finished loss log replaces the old one as the params do, tried again on Windows while an antivirus or
    OneDrive holds the old file: a refused rename left the new params beside the old run's log."""
    from submission import files
    (tmp_path / "log.jsonl").write_text('{"step": 1}\n')  # the old run's
    real, held = os.replace, []

    def in_use_once(src, dst):
        if src.endswith(".partial") and not held:
            held.append(dst)
            raise PermissionError(13, "The process cannot access the file because it is being used")
        real(src, dst)

    monkeypatch.setattr(files.os, "replace", in_use_once)
    monkeypatch.setattr(files.time, "sleep", lambda seconds: None)
    monkeypatch.setattr(files, "_WINDOWS", True)
    _, log = tiny_run(tmp_path, max_epochs=1)
    assert held and len(log) == 3 and sorted(os.listdir(tmp_path)) == ["log.jsonl"]


def bar_descriptions(monkeypatch):
    """The list each description the trainer gives its progress bars goes to, in order."""
    described = []

    class Bar(trainer_module.tqdm):
        def set_description(self, desc=None, refresh=True):
            described.append(desc)
            return super().set_description(desc, refresh)
    monkeypatch.setattr(trainer_module, "tqdm", Bar)
    return described


def test_the_progress_bar_counts_iterations_from_0_in_each_epoch(tmp_path, monkeypatch):
    """As the course's bar: "epoch E iter I: train loss L. lr R", I counting each epoch's batches from 0, the
    logged loss and rate of that step."""
    described = bar_descriptions(monkeypatch)
    _, log = tiny_run(tmp_path, max_epochs=2, num_threads=1)  # 3 steps an epoch, each shown (CPU)
    assert [d.split(":")[0] for d in described] == [f"epoch {e} iter {i}" for e in (1, 2) for i in range(3)]
    shown = [re.fullmatch(r"(epoch \d+ iter \d+): train loss (\d+\.\d{5})\. lr (\S+)", d).groups() for d in described]
    assert [(head, float(lr)) for head, _, lr in shown] == [
        (f"epoch {r['epoch']} iter {(r['step'] - 1) % 3}", float(f"{r['lr']:e}")) for r in log]
    # the loss to 5 digits from the value itself, the log's to 6 (the next test: they can differ in the last digit)
    assert all(abs(float(loss) - r["loss"]) <= 5.1e-6 for (_, loss, _), r in zip(shown, log))


class FixedLoss(torch.nn.Module):
    """A model whose loss is always LOSS (a float32 value): its gradient is zero, so training changes nothing."""
    LOSS = 3.0681648  # float32 3.068164825...: 3.06816 to 5 digits, but 3.068165 to 6 and that 3.06817 to 5

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))

    def forward(self, x, targets=None):
        return x.float(), (self.w * 0).sum() + self.LOSS


def test_the_progress_bar_shows_the_loss_as_the_course_does(tmp_path, monkeypatch):
    """The course's bar shows `loss.item()` to 5 digits; rounding the log's 6-digit value again showed
    3.06817 for a loss of 3.0681648, one unit more."""
    described = bar_descriptions(monkeypatch)
    x = torch.ones(8, 4, dtype=torch.long)
    log_path = tmp_path / "log.jsonl"
    Trainer(FixedLoss(), TensorDataset(x, x), None, TrainerConfig(
        max_epochs=1, batch_size=4, num_threads=1, log_path=str(log_path))).train()
    assert [json.loads(line)["loss"] for line in open(log_path)] == [3.068165, 3.068165]  # the log's 6 digits
    assert described and all("train loss 3.06816. lr" in d for d in described), described


def test_the_progress_bar_writes_no_line_a_step_to_a_log_file(tmp_path, capfd):
    """Each step's description forced a redraw: written to a file (nohup, a cluster job, `| tee`), a line a
    step, 620 KB for the 2-minute CPU demo. The bar draws it at its own pace (mininterval, 1 s) instead."""
    tiny_run(tmp_path, max_epochs=1, batch_size=1, num_threads=1)  # 40 steps in well under a second
    err = capfd.readouterr().err
    assert 1 <= err.count("train loss") <= 3, err


def test_the_processes_must_divide_the_batch(monkeypatch):
    """Under torchrun each process takes batch_size // world_size rows of every batch: a batch the processes
    do not divide is refused before training, not trained on fewer rows."""
    monkeypatch.setenv("WORLD_SIZE", "3")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("LOCAL_RANK", "0")
    x = torch.randint(1, 12, (12, 9))
    data = TensorDataset(x, x)
    for batch_size, rows in ((66, 22), (64, None), (2, None)):
        config = TrainerConfig(batch_size=batch_size)
        trainer = Trainer(GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8)), data, None, config)
        if rows is None:
            with pytest.raises(ValueError, match=rf"batch_size {batch_size} is not divisible by the 3 processes; "
                                                 r"pick a multiple of 3"):
                trainer._loader(data, config)
        else:
            assert trainer._loader(data, config).batch_size == rows


def test_a_triton_that_fails_to_load_leaves_an_auto_run_eager(monkeypatch):
    """_has_triton asks torch; a torch whose check raises (a broken Triton install) counts as no Triton, so an
    "auto" run on CUDA trains eagerly rather than failing at its first compiled step. torch's check stands in as
    a module of its own: torch 2.0 has none (no Triton, as _has_triton reads it)."""
    import types
    from submission.fastpath import AUTO_COMPILE_STEPS, compile_setting
    triton_check = types.ModuleType("torch.utils._triton")
    triton_check.has_triton = None  # set below
    monkeypatch.setitem(sys.modules, "torch.utils._triton", triton_check)
    monkeypatch.delenv("GPT_COMPILE", raising=False)
    monkeypatch.setattr(fastpath, "_has_c_compiler", lambda: True)
    monkeypatch.setattr(triton_check, "has_triton", lambda: True)
    assert fastpath._has_triton() is True
    assert compile_setting(TrainerConfig(), "cuda", AUTO_COMPILE_STEPS) == {"mode": "reduce-overhead"}

    def broken():
        raise ImportError("triton: libcuda.so not found")
    monkeypatch.setattr(triton_check, "has_triton", broken)
    assert fastpath._has_triton() is False
    assert compile_setting(TrainerConfig(), "cuda", AUTO_COMPILE_STEPS) is None
    monkeypatch.setattr(triton_check, "has_triton", lambda: False)
    assert fastpath._has_triton() is False


def test_loader_workers_leave_a_core_for_each_training_process(monkeypatch):
    """DataLoader workers: as many as asked, up to the cores each process has less one (the process's own);
    none on the CPU."""
    monkeypatch.setattr(fastpath, "usable_cores", lambda: 8)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    loader_workers = fastpath.loader_workers
    assert [loader_workers(n, "cuda") for n in (0, 2, 7, 16)] == [0, 2, 7, 7]
    assert loader_workers(16, "cpu") == 0
    assert loader_workers(16, "mps") == 7  # only the CPU's compute threads compete with a worker
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")  # 2 cores a process
    assert loader_workers(16, "cuda") == 1
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "8")  # one core a process: no worker
    assert loader_workers(16, "cuda") == 0


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_no_loader_workers_where_they_would_import_an_unguarded_program_again(monkeypatch, method):
    """Under "spawn" (macOS's MPS, Windows' CUDA) or "forkserver" (Linux from Python 3.14) a worker imports the main
    module again: the course's CS224N run.py, which trains outside a `__main__` guard, failed in its workers, and a
    notebook's dataset class was not found there. Workers there only for a program that declares SPAWN_SAFE (run.py,
    demo.py: they train under their guard) or a caller that says so; "fork" (Linux until 3.14) as before."""
    import types
    monkeypatch.setattr(fastpath, "usable_cores", lambda: 8)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    monkeypatch.setattr(fastpath.multiprocessing, "get_start_method", lambda allow_none=False: method)
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))  # a course program: no declaration
    assert fastpath.loader_workers(4, "mps") == 0 and fastpath.loader_workers(4, "cuda") == 0
    assert fastpath.loader_workers(4, "cuda", main_guarded=True) == 4
    sys.modules["__main__"].SPAWN_SAFE = True
    assert fastpath.loader_workers(4, "mps") == 4
    monkeypatch.setattr(fastpath.multiprocessing, "get_start_method", lambda allow_none=False: "fork")
    del sys.modules["__main__"].SPAWN_SAFE
    assert fastpath.loader_workers(4, "cuda") == 4
    for program in ("run.py", "demo.py"):  # declared, and each trains only under its guard
        with open(os.path.join(os.path.dirname(fastpath.__file__), "..", program), encoding="utf-8") as f:
            source = f.read()
        assert "\nSPAWN_SAFE = True" in source and '\nif __name__ == "__main__":\n' in source, program


def special_log(tmp_path, monkeypatch):
    """A regular file the trainer takes for a special one (/dev/null, a FIFO: files.is_special_file): the
    real /dev/null would be replaced, as root, by a mutant that renamed over it."""
    target = tmp_path / "special.jsonl"
    target.write_text("", encoding="utf-8")
    monkeypatch.setattr(trainer_module, "is_special_file", lambda p: os.path.abspath(p) == str(target))
    return target


def test_a_loss_log_into_a_special_file_is_written_straight_and_never_removed(tmp_path, monkeypatch, capsys):
    """/dev/null or a FIFO takes the log straight: no <log>.partial, nothing renamed over it at the end; a
    write that fails (a full disk) stops the log without removing the special file."""
    import errno
    target = special_log(tmp_path, monkeypatch)
    log = trainer_module.LossLog(str(target))
    assert log.writing and log.direct
    log.write('{"step": 1}\n', flush=True)
    assert target.read_text(encoding="utf-8") == '{"step": 1}\n'  # straight into it, while training
    log.close()
    log.publish()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["special.jsonl"]

    class Full:
        def __init__(self, f):
            self.f, self.name = f, f.name

        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

        def close(self):
            self.f.close()

    log = trainer_module.LossLog(str(target))
    log.file = Full(log.file)
    log.write("x\n")
    log.write("y\n")  # a second line after the failure: nothing, no second note
    log.close()
    log.publish()
    assert not log.writing and target.exists()
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert err == [f"note: {target}: could not write the loss log (No space left on device); training goes on "
                   f"without it"]


def test_a_finished_loss_log_keeps_the_mode_of_the_log_it_replaces(tmp_path):
    """The log is written as <log>.partial, a fresh file, and renamed over the old one: a log a user made 0600
    came back 0644, where the params, card and predictions written with it keep their mode. A new log gets
    0666 less the umask, as open() gives."""
    import stat
    path = tmp_path / "p.params.log.jsonl"
    previous = os.umask(0o022)
    try:
        for before, after in ((None, 0o644), (0o600, 0o600), (0o640, 0o640)):
            if before is not None:
                os.chmod(path, before)
            log = trainer_module.LossLog(str(path))
            log.write('{"step": 1}\n')
            log.close()
            log.publish()
            assert path.read_text(encoding="utf-8") == '{"step": 1}\n'
            assert stat.S_IMODE(os.stat(path).st_mode) == after, (before, oct(os.stat(path).st_mode))
    finally:
        os.umask(previous)


def test_a_loss_log_whose_last_flush_fails_is_dropped_not_raised(tmp_path, capsys):
    """A full disk may show only at the last flush (the lines sat in the buffer): closing the log drops it,
    its part removed, instead of raising out of training's end."""
    import errno
    path = tmp_path / "log.jsonl"
    log = trainer_module.LossLog(str(path))

    class FlushFails:
        def __init__(self, f):
            self.f, self.name = f, f.name

        def write(self, text):
            return self.f.write(text)

        def flush(self):
            raise OSError(errno.ENOSPC, "No space left on device")

        def close(self):  # a real file's close flushes first, and fails the same way
            self.f.close()
            self.flush()

    log.file = FlushFails(log.file)
    log.write('{"step": 1}\n')
    log.close()
    log.publish()
    assert not log.writing and list(tmp_path.iterdir()) == []
    assert "could not write the loss log (No space left on device)" in capsys.readouterr().err


def test_a_diverged_run_logging_into_a_special_file_names_no_partial_log(tmp_path, monkeypatch):
    """A run logging into /dev/null that diverges says so without pointing at a <log>.partial that is not there."""
    from submission.cli import TrainingDiverged
    target = special_log(tmp_path, monkeypatch)
    torch.manual_seed(0)
    x = torch.randint(1, 12, (40, 9))
    model = GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=8))
    conf = TrainerConfig(max_epochs=1, batch_size=16, log_path=str(target))
    with torch.no_grad():
        model.head.weight[0, 0] = float("nan")
    with pytest.raises(TrainingDiverged) as raised:
        Trainer(model, TensorDataset(x, torch.roll(x, -1, 1)), None, conf).train()
    assert "the training loss is nan at step 1" in str(raised.value) and "partial" not in str(raised.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["special.jsonl"]


def test_a_loss_log_whose_folder_moved_during_training_is_a_note_not_a_traceback(tmp_path, capsys):
    """A params folder renamed while a run trains: its .partial log went with it, and the rename into place at
    the end fails; the run ends with a note (its params are written into the folder made again), not a
    traceback that skipped the card and left the training state behind."""
    folder = tmp_path / "run"
    log = trainer_module.LossLog(str(folder / "p.params.log.jsonl"))
    log.write('{"step": 1}\n')
    log.close()
    folder.rename(tmp_path / "run-old")
    log.publish()
    err = capsys.readouterr().err
    assert err.startswith(f"note: {folder / 'p.params.log.jsonl'}: the finished loss log could not be put in place "
                          f"(No such file or directory: its folder was moved or removed during training); training has "
                          f"ended without it")
    assert (tmp_path / "run-old" / "p.params.log.jsonl.partial").read_text(encoding="utf-8") == '{"step": 1}\n'


class _InfiniteLoss(EveryTargetCounts):
    """A model whose loss overflows to +inf (not NaN) at every step."""

    def forward(self, x, targets=None):
        logits, loss = super().forward(x, targets)
        return logits, None if loss is None else loss * float("inf")


def test_an_infinite_loss_stops_training_as_a_nan_one_does(tmp_path):
    """A loss that overflows to +inf stops the run at that step with the diverged message, as NaN does: the
    check is for a finite loss, not only for NaN."""
    from submission.cli import TrainingDiverged
    torch.manual_seed(0)
    x = torch.randint(0, 7, (32, 12))
    trainer = Trainer(_InfiniteLoss(), TensorDataset(x, x), None, TrainerConfig(
        max_epochs=2, batch_size=16, learning_rate=0.1, num_threads=1, log_path=str(tmp_path / "log.jsonl")))
    with pytest.raises(TrainingDiverged, match=r"^the training loss is inf at step 1 \(epoch 1, "):
        trainer.train()


def test_the_state_records_the_lowest_test_loss_so_far_not_the_last(tmp_path, monkeypatch):
    """The training state's best_loss is the lowest test loss of the epochs run so far: here the test loss
    rises after epoch 1, so every state saved after it holds epoch 1's."""
    torch.manual_seed(0)
    x = torch.randint(1, 12, (32, 9))
    saves, losses = [], []
    monkeypatch.setattr("submission.resume.save", lambda path, **kw: saves.append((kw["epoch"], kw["best_loss"])))
    monkeypatch.setattr("submission.trainer.tqdm.write", lambda line: line.startswith("epoch") and losses.append(
        float(line.split()[-1])))  # "epoch N: test loss X"
    config = TrainerConfig(max_epochs=4, batch_size=16, learning_rate=3e-2, num_threads=1, state_every=0,
                           state_path=str(tmp_path / "params.state"))
    Trainer(GPT(GPTConfig(12, 10, n_layer=1, n_head=2, n_embd=16)), TensorDataset(x, x), _WorseAfterFirstPass(x),
            config).train()
    assert len(losses) == 4 and losses[0] < min(losses[1:])
    assert [epoch for epoch, _ in saves] == [1, 2, 3]  # none after the last epoch
    for epoch, best in saves:
        assert best == pytest.approx(losses[0], abs=1e-5), (epoch, best, losses)

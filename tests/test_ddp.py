"""DistributedDataParallel: 2 CPU processes (gloo), set up through torchrun's environment variables,
train to the same params as 1 process with the same global batch; only rank 0 writes files.

The data has PAD targets in different numbers per row, so each rank counts a different share of
the global batch's targets: equal params need the trainer's per-rank loss weighting, and equal
learning rates need the token counter to count the global batch (also where the ranks' rows skip
different numbers of -100 targets). Only rank 0 writes the log and checkpoint and calls the writer.
Ranks that pack their rows (TrainerConfig.pack) train to the same params too; DDP is built without
its deprecation warning.
`run.py` itself under torchrun prints once and writes once, and when rank 0 stops with an error,
rank 1 says so in one line; a gloo process leaves past Python's teardown (os._exit) with its output and status.

Run:  python -m pytest -q tests/test_ddp.py
"""
import json
import os
import socket
import subprocess
import sys
import warnings

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import TensorDataset

from submission import GPT, GPTConfig, Trainer, TrainerConfig
from submission.utils import is_main_process

ROWS, WIDTH, VOCAB, BATCH, EPOCHS = 32, 12, 10, 8, 2


def dataset():
    g = torch.Generator().manual_seed(1)
    x = torch.randint(1, VOCAB, (ROWS, WIDTH), generator=g)
    y = torch.randint(1, VOCAB, (ROWS, WIDTH), generator=g)
    for i in range(ROWS):  # row i has its last (i * 5) % WIDTH targets PAD
        n = (i * 5) % WIDTH
        if n:
            y[i, -n:] = 0
    return TensorDataset(x, y)


def corruption_dataset():
    """Span corruption (the course's pretraining data) of 32 short lines: each example draws its truncation and
    masked span from Python's `random` as it is read."""
    from submission import CharCorruptionDataset
    lines = [f"person {i} was born in town {i * 7 % 11} and read {'ab' * (i % 5)} books" for i in range(ROWS)]
    return CharCorruptionDataset("\n".join(lines), CORRUPTION_BLOCK)


CORRUPTION_BLOCK = 24


def corruption_model(vocab):
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab, CORRUPTION_BLOCK, n_layer=2, n_head=2, n_embd=16,
                         embd_pdrop=0.0, resid_pdrop=0.0, attn_pdrop=0.0))


def pretrain(folder, tag):
    """A span-corruption run seeded as run.py seeds every process (set_seed): its params."""
    import random
    random.seed(0)
    data = corruption_dataset()
    model = corruption_model(data.vocab_size)
    conf = config(folder, tag)
    conf.max_epochs = 3
    Trainer(model, data, None, conf).train()
    return model.state_dict()


def fresh_model():
    torch.manual_seed(0)
    return GPT(GPTConfig(VOCAB, WIDTH, n_layer=2, n_head=2, n_embd=16,
                         embd_pdrop=0.0, resid_pdrop=0.0, attn_pdrop=0.0))


def config(folder, tag):
    return TrainerConfig(max_epochs=EPOCHS, batch_size=BATCH, learning_rate=3e-3, lr_decay=True,
                         warmup_tokens=2 * BATCH * WIDTH, final_tokens=6 * BATCH * WIDTH, num_threads=1,
                         log_path=os.path.join(folder, f"{tag}.log.jsonl"),
                         ckpt_path=os.path.join(folder, f"{tag}.ckpt"))


def steady_config(folder, tag):
    conf = config(folder, tag)
    conf.lr_decay = False
    return conf


class Scalars:
    """A SummaryWriter stand-in (TrainerConfig.writer): the (tag, step) of each add_scalar call."""

    def __init__(self):
        self.calls = []

    def add_scalar(self, tag, value, step):
        self.calls.append((tag, step))


class Unigram(torch.nn.Module):
    """A model whose loss skips -100 targets (cross_entropy's default), as minGPT's notebook model's does;
    it declares no loss_ignore_index, so the trainer computes whole batches and counts targets itself."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.emb = torch.nn.Embedding(VOCAB, VOCAB)

    def forward(self, x, y):
        logits = self.emb(x)  # (B, T, vocab)
        return logits, torch.nn.functional.cross_entropy(logits.view(-1, VOCAB), y.reshape(-1))


def empty_batch_dataset():
    """dataset() with its second global batch's targets all PAD: nothing counted on either rank."""
    x, y = dataset().tensors
    y = y.clone()
    y[BATCH:2 * BATCH] = 0
    return TensorDataset(x, y)


def ignored_targets_dataset():
    """dataset() with its PAD targets made -100: rank 0's rows hold other counts of them than rank 1's."""
    x, y = dataset().tensors
    return TensorDataset(x, torch.where(y == 0, -100, y))


def _worker(rank, world, port, folder):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world))
    barriers = []
    barrier = dist.barrier
    dist.barrier = lambda *args, **kwargs: barriers.append(1) or barrier(*args, **kwargs)
    model = fresh_model()
    conf = config(folder, f"ddp-rank{rank}")
    conf.writer = Scalars()
    trainer = Trainer(model, dataset(), None, conf)
    with warnings.catch_warnings(record=True) as caught:  # DDP's own words about how it was built
        warnings.simplefilter("always")
        trainer.train()
    ddp_warnings = [str(w.message) for w in caught if "buffers" in str(w.message)]
    other = Trainer(Unigram(), ignored_targets_dataset(), None, config(folder, f"unigram-rank{rank}"))
    other.train()
    steady = Unigram()  # a constant rate: the same schedule as one process's, whose count skips -100 targets
    Trainer(steady, ignored_targets_dataset(), None, steady_config(folder, f"steady-rank{rank}")).train()
    packed = fresh_model()
    packed_conf = config(folder, f"packed-rank{rank}")
    packed_conf.pack = True  # each rank packs its own rows
    Trainer(packed, dataset(), None, packed_conf).train()
    Trainer(fresh_model(), empty_batch_dataset(), None, config(folder, f"empty-rank{rank}")).train()
    corrupted = pretrain(folder, f"corruption-rank{rank}")
    torch.save({"params": model.state_dict(), "tokens": trainer.tokens, "main": is_main_process(),
                "corruption_params": corrupted, "packed_params": packed.state_dict(),
                "steady_params": steady.state_dict(),
                "scalars": conf.writer.calls, "unigram_tokens": other.tokens, "ddp_warnings": ddp_warnings,
                "barriers": len(barriers),
                "unigram_lr": [json.loads(line)["lr"] for line in open(other.config.log_path)] if rank == 0 else None},
               os.path.join(folder, f"rank{rank}.pt"))
    # both ranks past their last collective before either tears gloo down: rank 1 once aborted in the teardown
    # ("terminate called without an active exception", SIGABRT) in CI, its results already saved (why:
    # trainer._end_together, which the trainings above end in)
    dist.barrier()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PORT_TAKEN = "EADDRINUSE"  # what torch's store says where the port free_port gave was taken before rank 0 bound it


def spawn_two(worker, folder, tries=3):
    """mp.spawn of `worker(rank, 2, port, folder)` in 2 processes on a free port, again on another where that one
    was taken meanwhile (free_port frees the port it finds: a rapid loop of runs once lost one to it)."""
    for left in range(tries - 1, -1, -1):
        try:
            return mp.spawn(worker, args=(2, free_port(), folder), nprocs=2, join=True)
        except mp.ProcessRaisedException as e:
            if PORT_TAKEN not in str(e) or not left:
                raise


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("ddp"))
    assert "WORLD_SIZE" not in os.environ
    model = fresh_model()
    trainer = Trainer(model, dataset(), None, config(folder, "single"))
    trainer.train()
    steady = Unigram()
    Trainer(steady, ignored_targets_dataset(), None, steady_config(folder, "steady-single")).train()
    Trainer(fresh_model(), empty_batch_dataset(), None, config(folder, "empty-single")).train()
    single = {"params": model.state_dict(), "tokens": trainer.tokens, "steady_params": steady.state_dict(),
              "corruption_params": pretrain(folder, "corruption-single")}
    spawn_two(_worker, folder)
    ranks = [torch.load(os.path.join(folder, f"rank{r}.pt"), weights_only=True) for r in range(2)]
    return folder, single, ranks


def test_two_processes_train_the_same_params_as_one(runs):
    _, single, ranks = runs
    assert ranks[0]["tokens"] == ranks[1]["tokens"] == single["tokens"] == EPOCHS * ROWS * WIDTH
    for name, p in single["params"].items():
        assert torch.allclose(ranks[0]["params"][name], p, atol=2e-5, rtol=1e-4), name
        assert torch.equal(ranks[0]["params"][name], ranks[1]["params"][name]), name  # DDP keeps ranks in sync
    moved = max((single["params"][n] - fresh_model().state_dict()[n]).abs().max().item() for n in single["params"])
    assert moved > 1e-3  # training did change the params



def test_two_processes_pretraining_with_span_corruption_train_the_same_params_as_one(runs):
    """Each example's truncation and masked span are drawn under a seed of its own (draws.py), so the rank that
    makes it draws what one process draws. When each process read its own stream (rank 1 one derived from rank
    0's), the ranks trained on other corruptions of the same lines: 2.7e-2 away from one process's params."""
    _, single, ranks = runs
    start = corruption_model(corruption_dataset().vocab_size).state_dict()
    for name, p in single["corruption_params"].items():
        assert torch.allclose(ranks[0]["corruption_params"][name], p, atol=2e-5, rtol=1e-4), name
        assert torch.equal(ranks[0]["corruption_params"][name], ranks[1]["corruption_params"][name]), name
    assert max((single["corruption_params"][n] - start[n]).abs().max().item() for n in start) > 1e-3


def test_each_training_ends_in_a_barrier(runs):
    """In torch 2.13 (not 2.2) DDP's gradient all-reduces keep a Python object, which gloo's worker thread frees
    just after the result is out: rank 1, exiting before it had, aborted ("terminate called without an active
    exception") in 9 of 469 torchrun runs of the tiny pretraining below, done while rank 0 still wrote the
    params. Each of the six trainings of each rank ends in a barrier (trainer._end_together), waited in with
    the GIL released while rank 0 finishes."""
    _, _, ranks = runs
    assert [r["barriers"] for r in ranks] == [6, 6]


def test_ddp_is_built_without_a_deprecation_warning(runs):
    """The trainer names DDP's buffer flag as this torch spells it (forward_sync_buffers from torch 2.13,
    broadcast_buffers before): the old name warned at every run, on every rank."""
    _, _, ranks = runs
    assert [r["ddp_warnings"] for r in ranks] == [[], []]


def test_two_processes_packing_their_rows_train_the_same_params_as_one(runs):
    """Each rank packs its half of the global batch into rows of its own: the per-rank loss weighting by
    counted targets still gives the single process's gradient."""
    _, single, ranks = runs
    for name, p in single["params"].items():
        assert torch.allclose(ranks[0]["packed_params"][name], p, atol=2e-5, rtol=1e-4), name
        assert torch.equal(ranks[0]["packed_params"][name], ranks[1]["packed_params"][name]), name


def test_a_model_whose_loss_skips_minus_100_trains_the_same_params_as_one_process(runs):
    """A model without loss_ignore_index (its cross_entropy skips -100 by default): each rank's mean is
    weighted by its share of the targets other than -100; weighting by all positions gave the ranks'
    unevenly skipped rows other weights than one process gives them (a difference of 0.07)."""
    _, single, ranks = runs
    for name, p in single["steady_params"].items():
        assert torch.allclose(ranks[0]["steady_params"][name], p, atol=2e-5, rtol=1e-4), name
    moved = (single["steady_params"]["emb.weight"] - Unigram().emb.weight.detach()).abs().max().item()
    assert moved > 1e-2


def test_only_rank_zero_writes(runs):
    folder, _, ranks = runs
    assert ranks[0]["main"] and not ranks[1]["main"]
    assert os.path.exists(os.path.join(folder, "ddp-rank0.ckpt"))
    assert not os.path.exists(os.path.join(folder, "ddp-rank1.ckpt"))
    assert not os.path.exists(os.path.join(folder, "ddp-rank1.log.jsonl"))
    ckpt = torch.load(os.path.join(folder, "ddp-rank0.ckpt"), weights_only=True)
    assert set(ckpt) == set(ranks[0]["params"])  # raw keys: no "module." prefix


def test_logged_loss_and_schedule_are_the_global_ones(runs):
    folder, _, _ = runs
    single = [json.loads(line) for line in open(os.path.join(folder, "single.log.jsonl"))]
    ddp = [json.loads(line) for line in open(os.path.join(folder, "ddp-rank0.log.jsonl"))]
    assert len(ddp) == len(single) == EPOCHS * ROWS // BATCH
    for a, b in zip(single, ddp):
        assert (a["step"], a["epoch"], a["tokens"]) == (b["step"], b["epoch"], b["tokens"])
        assert a["lr"] == pytest.approx(b["lr"], rel=1e-12)
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-4, abs=1e-5)


def test_a_global_batch_without_a_counted_target_logs_nan_and_trains_on_as_one_process(runs):
    """A global batch whose targets are all PAD has a 0/0 loss and zero gradients. One process stopped on it as
    diverged; two logged it as 0.0 and trained on. Both now log nan, as the course's loop prints, and train on."""
    import math
    folder, _, _ = runs
    single = [json.loads(line) for line in open(os.path.join(folder, "empty-single.log.jsonl"))]
    ddp = [json.loads(line) for line in open(os.path.join(folder, "empty-rank0.log.jsonl"))]
    assert len(ddp) == len(single) == EPOCHS * ROWS // BATCH
    empty = [row["step"] for row in single if math.isnan(row["loss"])]
    assert empty == [row["step"] for row in ddp if math.isnan(row["loss"])] == [2, 2 + ROWS // BATCH]
    for a, b in zip(single, ddp):
        if a["step"] not in empty:
            assert a["loss"] == pytest.approx(b["loss"], rel=1e-4, abs=1e-5)


def test_only_rank_zero_calls_the_writer(runs):
    _, _, ranks = runs
    steps = EPOCHS * ROWS // BATCH
    # the course's global steps, from 0
    assert ranks[0]["scalars"] == [(tag, step) for step in range(steps) for tag in ("train/loss", "train/lr")]
    assert ranks[1]["scalars"] == []


def test_ranks_count_the_same_tokens_when_targets_are_skipped_unevenly(runs):
    """-100 targets, more of them in some ranks' rows than others': a count of each rank's own non-negative
    targets would give the ranks different learning rates. Under DDP every position of the global batch
    counts (trainer.py), on every rank alike, and the logged schedule follows that count."""
    folder, _, ranks = runs
    x, y = ignored_targets_dataset().tensors
    # each global batch's rows, dealt by DistributedSampler: rank 0 the even ones, rank 1 the odd ones
    uneven = [int((y[i:i + BATCH:2] < 0).sum()) - int((y[i + 1:i + BATCH:2] < 0).sum()) for i in range(0, ROWS, BATCH)]
    assert any(uneven)  # the ranks do skip different numbers of targets
    assert ranks[0]["unigram_tokens"] == ranks[1]["unigram_tokens"] == EPOCHS * ROWS * WIDTH
    conf = config(folder, "unused")
    from submission.trainer import lr_multiplier
    expected = [conf.learning_rate * lr_multiplier(step * BATCH * WIDTH, conf)
                for step in range(1, EPOCHS * ROWS // BATCH + 1)]
    assert ranks[0]["unigram_lr"] == pytest.approx(expected, rel=1e-12)


# --- run.py itself under torchrun: 2 CPU processes on data/'s corpus, a tiny model -------------------------
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN_PY = os.path.join(ROOT, "src", "run.py")
TINY_RUN = ["--variant=vanilla", f"--pretrain_corpus_path={os.path.join(ROOT, 'data', 'wiki.txt')}",
            "--n_layer", "1", "--n_head", "2", "--n_embd", "16", "--block_size", "64"]

# run.py with the training state's second save failing on rank 0 (a disk filled during the run)
FAILING_SAVE = """
import os, runpy, sys
sys.path.insert(0, {src!r})
from submission import resume
from submission.dataset import DataError
saves, real_save = [], resume.save
def save(*args, **kwargs):
    saves.append(1)
    if len(saves) == 2 and os.environ["RANK"] == "0":
        raise DataError("no space left on device (simulated)")
    return real_save(*args, **kwargs)
resume.save = save
sys.argv[0] = {run!r}
runpy.run_path({run!r}, run_name="__main__")
"""


def torchrun(script, *args, tmp_path):
    """torchrun of 2 processes on a free port: --standalone's rendezvous port is a fixed 29400 before torch 2.1,
    where another test run's (or anything listening there) made this one hang until the timeout."""
    env = {k: v for k, v in os.environ.items()  # a launcher's own settings (PET_*) and a parent torchrun's
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT") and not k.startswith("PET_")}
    env.update(OMP_NUM_THREADS="1", GPT_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    for left in (2, 1, 0):  # again on another port where free_port's was taken meanwhile (spawn_two)
        p = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nnodes=1", "--nproc_per_node=2",
                            "--master_addr=127.0.0.1", f"--master_port={free_port()}", script, *args],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        if p.returncode == 0 or PORT_TAKEN not in p.stderr or not left:
            return p


def test_each_rank_draws_its_own_dropout_and_span_corruption_streams():
    """Under torchrun every process seeds the same (run.py's set_seed), so without TrainingRun's
    distinct_rank_streams every rank drew the same dropout masks (torch) and span corruptions (Python's
    random) for its own rows. Rank 0 keeps the seeded streams (it draws what one process draws); a rank
    above 0 derives its own from them, the same every time (a resumed run's ranks derive theirs again).
    The runs above have no dropout and no span corruption, so they could not tell. No process group:
    the method reads only the rank and the process count."""
    import random
    from types import SimpleNamespace
    from submission.trainer import TrainingRun

    def draws(rank, world):
        torch.manual_seed(0)
        random.seed(0)
        TrainingRun.distinct_rank_streams(SimpleNamespace(trainer=SimpleNamespace(rank=rank), world_size=world))
        return torch.rand(4).tolist(), random.random()

    one = draws(0, 1)
    assert draws(0, 2) == one  # rank 0: the one-process streams
    rank1, rank2 = draws(1, 3), draws(2, 3)
    for stream in (0, 1):  # torch's and Python's: each differs from rank 0's and from the other rank's
        assert len({repr(one[stream]), repr(rank1[stream]), repr(rank2[stream])}) == 3, stream
    assert draws(1, 3) == rank1 and draws(1, 2) == rank1  # derived from the seed and the rank alone


def test_run_py_under_torchrun_trains_and_speaks_once(tmp_path):
    """`torchrun --nproc_per_node=2 src/run.py --function=pretrain ...` (docs/speed.md) trains and writes the
    params, card and log once, and says what it trains and where it wrote once, not once a process; an
    evaluation under torchrun is rank 0's alone."""
    params = str(tmp_path / "p.params")
    p = torchrun(RUN_PY, "--function=pretrain", *TINY_RUN, "--batch_size", "16", "--max_epochs", "1",
                 f"--writing_params_path={params}", tmp_path=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.count("pretrain vanilla: ") == 1 and p.stdout.count("Params written to") == 1, p.stdout
    assert sorted(os.listdir(tmp_path)) == ["p.params", "p.params.card.json", "p.params.log.jsonl"]
    steps = [json.loads(line)["step"] for line in open(params + ".log.jsonl")]
    assert steps == list(range(1, 2938 // 16 + 2))  # wiki.txt's 2,937 lines and one empty item
    assert "Traceback" not in p.stderr
    dev, predictions = os.path.join(ROOT, "data", "birth_dev.tsv"), str(tmp_path / "dev.predictions")
    p = torchrun(RUN_PY, "--function=evaluate", *TINY_RUN, "--max_epochs", "1", f"--reading_params_path={params}",
                 f"--eval_corpus_path={dev}", f"--outputs_path={predictions}", tmp_path=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.count("decoded 500 questions") == p.stdout.count("Correct: ") == 1, p.stdout  # rank 0 alone
    assert p.stderr.count("does not read --max_epochs") == p.stderr.count("pretrained, not finetuned") == 1, p.stderr
    assert len(open(predictions).read().split("\n")) == 501


def test_a_process_whose_peer_stopped_says_so_in_one_line(tmp_path):
    """Rank 0 stops (its state save fails mid-run); rank 1's next all-reduce fails in gloo. Rank 0 names the
    state it kept; rank 1 says in one line that another process stopped first, or torchrun's SIGTERM ends
    it first: no traceback of ours either way, and the state saved after epoch 1 is kept."""
    script = tmp_path / "failing_save.py"
    script.write_text(FAILING_SAVE.format(src=os.path.join(ROOT, "src"), run=RUN_PY))
    params = str(tmp_path / "p.params")
    p = torchrun(str(script), "--function=pretrain", *TINY_RUN, "--batch_size", "16", "--max_epochs", "3",
                 "--state_every", "0", f"--writing_params_path={params}", tmp_path=tmp_path)
    assert p.returncode != 0
    assert (f"error: no space left on device (simulated); the training state after epoch 1 of 3 is in "
            f"{params}.state") in p.stderr
    assert ("error: process 1 of 2 stopped because another process of this torchrun run stopped first: that "
            "process's error says why" in p.stderr or "terminated (SIGTERM)" in p.stderr), p.stderr[-3000:]
    # torchrun's own traceback names neither
    assert "trainer.py" not in p.stderr and "[rank1]" not in p.stderr, p.stderr
    assert os.path.exists(params + ".state") and not os.path.exists(params)


def test_a_batch_that_does_not_split_among_the_processes_is_one_line(tmp_path):
    """--batch_size 7 under 2 processes (or the part's 128 under 3): each process says so in one line before
    training, not the trainer's ValueError as a traceback from every process after the data was read."""
    params = str(tmp_path / "p.params")
    p = torchrun(RUN_PY, "--function=pretrain", *TINY_RUN, "--batch_size", "7", "--max_epochs", "1",
                 f"--writing_params_path={params}", tmp_path=tmp_path)
    assert p.returncode != 0
    assert ("error: --batch_size 7 does not split among the 2 processes torchrun started (each takes batch_size / 2 "
            "rows); give --batch_size a multiple of 2, or another --nproc_per_node") in p.stderr, p.stderr[-3000:]
    assert "ValueError" not in p.stderr and "trainer.py" not in p.stderr, p.stderr[-3000:]
    assert sorted(os.listdir(tmp_path)) == []


def test_a_part_s_own_batch_size_that_does_not_split_names_the_part(monkeypatch):
    """Without --batch_size the size is the part's (pretraining's 128): the error names it as the part's, not as a
    --batch_size the command never gave; a size that splits passes, as does any size in one process."""
    import argparse

    import run as driver
    from submission.dataset import DataError
    monkeypatch.setenv("WORLD_SIZE", "3")
    with pytest.raises(DataError) as e:
        driver.check_batch_splits(128, argparse.Namespace(batch_size=None, function="pretrain"))
    assert str(e.value).startswith("the pretrain part's batch size 128 does not split among the 3 processes")
    driver.check_batch_splits(129, argparse.Namespace(batch_size=None, function="pretrain"))
    monkeypatch.setenv("WORLD_SIZE", "1")
    driver.check_batch_splits(7, argparse.Namespace(batch_size=7, function="pretrain"))


def test_the_note_on_finetuned_params_is_rank_zeros_alone(monkeypatch, capsys):
    """Finetuning params whose card says they were finetuned: under torchrun every process checks them, and
    every one printed the note (docs/speed.md: only rank 0 prints)."""
    import run as driver
    monkeypatch.delenv("RUN_SH_MODE", raising=False)
    monkeypatch.setattr(driver, "read_card", lambda path: {"function": "finetune"})
    said = {}
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        driver.check_pretrained("f.params")
        said[rank] = capsys.readouterr().err
    assert "f.params were finetuned, not pretrained" in said[0]
    assert said[1] == ""


def _uncounted_worker(rank, world, port, folder):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world))
    model = fresh_model()
    Trainer(model, uncounted_rows_dataset(), None, config(folder, f"uncounted-rank{rank}")).train()
    torch.save(model.state_dict(), os.path.join(folder, f"uncounted-rank{rank}.pt"))
    dist.barrier()
    dist.destroy_process_group()


def _meet_worker(rank, world, port, folder):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
    dist.init_process_group("gloo")
    dist.barrier()
    dist.destroy_process_group()
    open(os.path.join(folder, f"met-rank{rank}-port{port}"), "w").close()


def test_a_port_taken_before_the_processes_bind_it_is_tried_again(tmp_path, monkeypatch):
    """free_port frees the port it finds, and something else can take it before rank 0 binds it: the runs
    go again on another port, not fail (torch says EADDRINUSE, which spawn_two and torchrun() look for)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        free = free_port()
        ports = [taken.getsockname()[1], free]
        monkeypatch.setattr(sys.modules[__name__], "free_port", lambda: ports.pop(0))
        spawn_two(_meet_worker, str(tmp_path))
    assert not ports and sorted(os.listdir(tmp_path)) == [f"met-rank{r}-port{free}" for r in (0, 1)]


def uncounted_rows_dataset():
    """dataset() with its odd rows all PAD targets: under 2 processes, rank 1's rows have none to count."""
    x, y = dataset().tensors
    y = y.clone()
    y[1::2] = 0
    return TensorDataset(x, y)


def test_a_rank_whose_rows_have_no_counted_target_trains_the_same_params_as_one(tmp_path):
    """Rank 1's half of every global batch is all PAD: its mean loss is 0/0 (NaN), and weighted by its 0 share it
    stayed NaN (NaN * 0), so the run stopped at step 1 as diverged ("lower --learning_rate") where one process
    trains. It contributes nothing, as those rows do in one process's batch."""
    folder = str(tmp_path)
    model = fresh_model()
    Trainer(model, uncounted_rows_dataset(), None, config(folder, "uncounted-single")).train()
    spawn_two(_uncounted_worker, folder)
    ranks = [torch.load(os.path.join(folder, f"uncounted-rank{r}.pt"), weights_only=True) for r in range(2)]
    for name, p in model.state_dict().items():
        assert torch.allclose(ranks[0][name], p, atol=2e-5, rtol=1e-4), name
        assert torch.equal(ranks[0][name], ranks[1][name]), name
    logged = [json.loads(line)["loss"] for line in open(os.path.join(folder, "uncounted-rank0.log.jsonl"))]
    single = [json.loads(line)["loss"] for line in open(os.path.join(folder, "uncounted-single.log.jsonl"))]
    assert logged == pytest.approx(single, rel=1e-4, abs=1e-5)


EXIT_PAST_GLOO = r"""
import os, sys
sys.path.insert(0, os.path.join(sys.argv[1], "src"))
import torch.distributed as dist
from submission.trainer import exit_past_gloo
if sys.argv[2] == "gloo":
    dist.init_process_group("gloo", init_method=f"file://{sys.argv[3]}", rank=0, world_size=1)
ends = {"ok": lambda: None, "status": lambda: sys.exit(3), "text": lambda: sys.exit("stopped: says why")}
def run():
    print("written before the exit")  # stdout to a pipe is buffered: os._exit would drop it unflushed
    ends[sys.argv[4]]()
exit_past_gloo(run)
print("after exit_past_gloo")  # only a process without gloo gets here, on a normal end
"""


@pytest.mark.parametrize("end, status, err", [("ok", 0, ""), ("status", 3, ""), ("text", 1, "stopped: says why\n")])
@pytest.mark.parametrize("backend", ["gloo", "none"])
def test_a_gloo_process_leaves_past_pythons_teardown_with_its_status_and_output(tmp_path, backend, end, status, err):
    """trainer.exit_past_gloo: a process of a gloo group leaves by os._exit, which drops what Python has not
    flushed and knows only ints: its printed lines, its exit status and a sys.exit("text") reach the caller as
    they would without it (a process without gloo exits as Python does, carrying on after a normal end)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # stdout buffered, as by default
    p = subprocess.run([sys.executable, "-c", EXIT_PAST_GLOO, ROOT, backend, str(tmp_path / "rendezvous"), end],
                       capture_output=True, text=True, timeout=120, env=env)
    after = "after exit_past_gloo\n" if backend == "none" and end == "ok" else ""
    assert (p.returncode, p.stdout, p.stderr) == (status, "written before the exit\n" + after, err)

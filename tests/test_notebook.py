"""The minGPT demo notebook, src/submission/mingpt-demo/play_char.ipynb: it is committed without
outputs, explains each step in a markdown cell before it, uses the project's own package (no
second copy of the model), and runs top to bottom in its tiny CI setting (PLAY_CHAR_TINY=1). The
course's own notebook imports `mingpt`: that package (mingpt-demo/mingpt/) runs its code unchanged,
training as minGPT's own did (its loss, shuffled batches, optimizer and best-test-loss checkpoint).

Executing it needs nbclient and ipykernel (requirements-dev.txt); without them that test fails.
Run:  python -m pytest -q tests/test_notebook.py
"""
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "src", "submission", "mingpt-demo")
NOTEBOOK = os.path.join(DEMO, "play_char.ipynb")


def load():
    with open(NOTEBOOK, encoding="utf-8") as f:
        return json.load(f)


def source(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def test_notebook_is_committed_clean_and_explained():
    nb = load()
    assert nb["nbformat"] == 4
    cells = nb["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    assert len(code) >= 6
    for c in code:
        assert c["outputs"] == [], "clear the notebook's outputs before committing it"
        assert c["execution_count"] is None, "clear the notebook's execution counts before committing it"
    for i, c in enumerate(cells):
        if c["cell_type"] == "code":
            assert i > 0 and cells[i - 1]["cell_type"] == "markdown", f"code cell {i} has no markdown cell before it"
    assert "PLAY_CHAR_TINY" in source(code[0]), "the first code cell picks the tiny CI setting"
    text = "\n".join(source(c) for c in code)
    for needed in ("from submission import", "GPT(", "Trainer(", "sample("):
        assert needed in text
    for copy in ("class GPT", "class Trainer", "class CausalSelfAttention", "import mingpt"):
        assert copy not in text, f"the notebook defines or imports its own {copy!r}"


@pytest.mark.parametrize("writable", [True, False])
def test_notebook_runs_in_the_tiny_setting(monkeypatch, tmp_path, writable):
    importlib.import_module("ipykernel")  # requirements-dev.txt's, as nbclient: missing, this test fails
    import nbclient
    import nbformat
    monkeypatch.setenv("PLAY_CHAR_TINY", "1")  # the kernel inherits this environment
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    # the log and its plot (default: runs/play_char/); a folder that cannot be made (a read-only
    # checkout's runs/, here a path through a file) sends them to a temporary folder instead
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    out = tmp_path if writable else tmp_path / "a-file" / "logs"
    monkeypatch.setenv("PLAY_CHAR_OUT", str(out))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=60, kernel_name="python3",
                                     resources={"metadata": {"path": os.path.dirname(NOTEBOOK)}})
    client.execute()  # raises CellExecutionError, with the cell and its traceback, if a cell fails
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                      for o in c.outputs if o.output_type == "stream" and o.name == "stdout")
    assert "parameters" in printed and "steps in" in printed
    log = re.search(r"the loss log is (.*)\n", printed).group(1)  # named, for plots.py curves
    if writable:
        assert log == str(tmp_path / "play_char.log.jsonl")
    else:
        assert log.startswith(os.path.join(tempfile.gettempdir(), "play_char_"))
        shutil.rmtree(os.path.dirname(log))
    assert writable == os.path.isfile(tmp_path / "play_char.log.jsonl")
    assert "greedy:" in printed and "temperature 0.8, top_k 10:" in printed
    # the four tiny steps train: the loss falls from about the uniform guess
    uniform, first, last = map(float, re.search(r"uniform guess: ([\d.]+) nats/char; first step: ([\d.]+); "
                                                r"last step: ([\d.]+)", printed).groups())
    assert abs(first - uniform) < 0.5 and last < first
    # the greedy sample is the first biography's first sentence (the prompt) and 40 characters more
    context = printed.split("the first one: ", 1)[1].split(".")[0] + "."
    greedy = printed.split("greedy:\n", 1)[1].split("\n\ntemperature 0.8", 1)[0]
    assert greedy.startswith(context) and len(greedy) == len(context) + 40


# The course's play_char.ipynb, cell by cell as it calls the API (its Shakespeare swapped for a short
# text, its sizes for small ones): run from mingpt-demo/, as Jupyter runs it there.
COURSES_NOTEBOOK = r"""
from mingpt.utils import set_seed
set_seed(42)
import torch
from torch.utils.data import Dataset

class CharDataset(Dataset):
    def __init__(self, data, block_size):
        chars = sorted(list(set(data)))
        self.stoi = {ch: i for i, ch in enumerate(chars)}
        self.itos = {i: ch for i, ch in enumerate(chars)}
        self.block_size, self.vocab_size, self.data = block_size, len(chars), data
    def __len__(self):
        return len(self.data) - self.block_size
    def __getitem__(self, idx):
        dix = [self.stoi[s] for s in self.data[idx:idx + self.block_size + 1]]
        return torch.tensor(dix[:-1], dtype=torch.long), torch.tensor(dix[1:], dtype=torch.long)

block_size = 16
text = "O God, O God! how weary, stale, flat and unprofitable\n" * 8
train_dataset = CharDataset(text, block_size)
from mingpt.model import GPT, GPTConfig
mconf = GPTConfig(train_dataset.vocab_size, train_dataset.block_size, n_layer=1, n_head=2, n_embd=16)
model = GPT(mconf)
from mingpt.trainer import Trainer, TrainerConfig
tconf = TrainerConfig(max_epochs=1, batch_size=64, learning_rate=6e-4, lr_decay=True, warmup_tokens=512*20,
                      final_tokens=2*len(train_dataset)*block_size, num_workers=4)
trainer = Trainer(model, train_dataset, None, tconf)
trainer.train()
from mingpt.utils import sample
context = "O God, O God!"
x = torch.tensor([train_dataset.stoi[s] for s in context], dtype=torch.long)[None,...].to(trainer.device)
y = sample(model, x, 40, temperature=1.0, sample=True, top_k=10)[0]
completion = ''.join([train_dataset.itos[int(i)] for i in y])
print("COMPLETION", repr(completion))
print("TOKENS", trainer.tokens)
"""


def test_the_courses_notebook_code_runs_unchanged_from_mingpt_demo():
    env = dict(os.environ, GPT_NUM_THREADS="1", PYTHONPATH="")
    done = subprocess.run([sys.executable, "-c", COURSES_NOTEBOOK], cwd=DEMO, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    completion = eval(done.stdout.split("COMPLETION ", 1)[1].split("\n", 1)[0])
    assert completion.startswith("O God, O God!") and len(completion) == len("O God, O God!") + 40
    n = len("O God, O God! how weary, stale, flat and unprofitable\n") * 8 - 16
    assert int(done.stdout.split("TOKENS ", 1)[1].split()[0]) == n * 16  # every target counted, id 0 too


def test_mingpt_finds_the_assignment_through_a_link(tmp_path):
    """The demo folder on sys.path through a symbolic link: mingpt found `submission` only from the real path."""
    os.symlink(DEMO, tmp_path / "demo-link")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "demo-link"))
    done = subprocess.run([sys.executable, "-c", "from mingpt.model import GPT; print(GPT.loss_ignore_index)"],
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == "None\n", done.stderr[-1000:]


@pytest.fixture
def mingpt(monkeypatch):
    monkeypatch.syspath_prepend(DEMO)
    import mingpt.model
    import mingpt.trainer
    import mingpt.utils
    return mingpt


def test_mingpt_gives_the_assignments_classes_with_minGPTs_loss(mingpt):
    import torch
    import torch.nn.functional as F

    import submission
    assert issubclass(mingpt.trainer.Trainer, submission.Trainer) and mingpt.utils.sample is submission.sample
    assert mingpt.trainer.TrainerConfig is submission.TrainerConfig
    assert mingpt.model.GPTConfig is submission.GPTConfig
    config = submission.GPTConfig(5, 8, n_layer=1, n_head=2, n_embd=8)
    model = mingpt.model.GPT(config)
    assert list(model.state_dict()) == list(submission.GPT(config).state_dict())  # params interchange
    x = torch.randint(0, 5, (3, 8))
    y = torch.zeros(3, 8, dtype=torch.long)  # id 0: a real character to minGPT
    y[0, :4] = torch.tensor([1, 2, 3, 4])
    logits, loss = model(x, y)
    assert torch.allclose(loss, F.cross_entropy(logits.view(-1, 5), y.view(-1)))  # all 24 targets, not 4


def test_mingpt_logs_its_size_as_minGPT_did(mingpt, caplog):
    """minGPT's GPT logged "number of parameters: %e" (the course's notebook shows that line)."""
    import logging
    with caplog.at_level(logging.INFO, logger="mingpt.model"):
        model = mingpt.model.GPT(mingpt.model.GPTConfig(5, 8, n_layer=1, n_head=2, n_embd=8))
    n = sum(p.numel() for p in model.parameters())
    assert f"number of parameters: {n:e}" in caplog.text


def test_mingpt_trains_on_id_0_targets_as_the_courses_loop(mingpt):
    """The fast path keeps minGPT's id-0 targets: the same params as the course's loop (fast=False)."""
    import torch
    from torch.utils.data import TensorDataset

    def train(fast):
        torch.manual_seed(0)
        model = mingpt.model.GPT(mingpt.model.GPTConfig(6, 12, n_layer=1, n_head=2, n_embd=16,
                                                        embd_pdrop=0.0, resid_pdrop=0.0, attn_pdrop=0.0))
        g = torch.Generator().manual_seed(1)
        x, y = torch.randint(0, 6, (32, 12), generator=g), torch.randint(1, 6, (32, 12), generator=g)
        y[:, -4:] = 0  # trailing id-0 targets: PAD to the assignment's GPT, a character to minGPT's
        mingpt.trainer.Trainer(model, TensorDataset(x, y), None, mingpt.trainer.TrainerConfig(
            max_epochs=2, batch_size=16, learning_rate=1e-2, fast=fast, num_threads=1)).train()
        return model

    fast, course = train(True), train(False)
    for (name, a), b in zip(fast.named_parameters(), course.parameters()):
        # the key's bias adds the same amount to every score of a row, which the softmax takes away: its gradient
        # is 0 but for rounding, which AdamW scales up to steps of the learning rate's order (1.3e-5 apart here
        # after 4 steps, where every other parameter is within 6e-8)
        assert torch.allclose(a, b, atol=1e-3 if name.endswith("attn.key.bias") else 1e-5), name


def test_mingpt_batches_are_neither_trimmed_grouped_nor_packed(mingpt):
    """minGPT's loss counts every target, so the fast path has no column to cut: no skipped target, whole rows,
    and no packing tried. Its GPT declared -100 (cross_entropy's default, which no target is): the CPU trainer then
    planned 8 length groups of full width for a batch of 128 and tried packing every step."""
    import torch

    from submission import TrainerConfig, Trainer
    from submission.fastpath import packing_setting, skipped_target
    model = mingpt.model.GPT(mingpt.model.GPTConfig(6, 12, n_layer=1, n_head=2, n_embd=16))
    assert skipped_target(TrainerConfig(), model) is None and packing_setting(TrainerConfig(), model) is False
    run = Trainer(model, None, None, TrainerConfig(batch_size=128, num_threads=1)).prepare()
    x = torch.randint(0, 6, (128, 12), generator=torch.Generator().manual_seed(0))
    assert run.pack(x, x) is None and run.plan(x) == [(None, 12, 1.0)]


@pytest.mark.parametrize("synthesizer", [False, True])
def test_mingpt_decays_only_matrix_weights_as_minGPTs_optimizer(mingpt, synthesizer):
    """minGPT's configure_optimizers: weight decay on Linear weights (and the synthesizer's w2), none on biases,
    b2, LayerNorm and Embedding weights or pos_emb; the course's mingpt-demo Trainer builds its optimizer so.
    The assignment's Trainer decays every name without "bias" (LayerNorm weights, tok_emb and pos_emb too)."""
    import torch

    from submission import Trainer, TrainerConfig
    model = mingpt.model.GPT(mingpt.model.GPTConfig(6, 12, n_layer=2, n_head=2, n_embd=16, synthesizer=synthesizer))
    linear = {f"{n}.weight" for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    decay, no_decay = model.decay_groups()
    assert set(decay) == linear | ({f"blocks.{i}.attn.w2" for i in range(2)} if synthesizer else set())
    assert set(no_decay) == set(dict(model.named_parameters())) - set(decay)
    assert {"pos_emb", "tok_emb.weight", "ln_f.weight", "blocks.0.ln1.weight"} <= set(no_decay)
    params = dict(model.named_parameters())
    config = TrainerConfig(weight_decay=0.25, learning_rate=1e-3, num_threads=1)
    for optimizer in (model.configure_optimizers(config),
                      mingpt.trainer.Trainer(model, None, None, config).prepare().optimizer):
        groups = [({id(p) for p in g["params"]}, g["weight_decay"]) for g in optimizer.param_groups]
        assert groups == [({id(params[n]) for n in decay}, 0.25), ({id(params[n]) for n in no_decay}, 0.0)]
    course = Trainer(model, None, None, config).prepare().optimizer  # the assignment's rule, for contrast
    assert {id(params["pos_emb"]), id(params["ln_f.weight"])} <= {id(p) for p in course.param_groups[0]["params"]}


class _Recorded:
    """Rows of a small language-model dataset, each index noted as the loader reads it."""

    def __init__(self, n, rows=None):
        import torch
        g = torch.Generator().manual_seed(0)
        self.x = torch.randint(0, 6, (n, 12), generator=g)
        self.y = (self.x + 1) % 6  # learnt in a few steps: each target from its own position's input
        if rows is not None:  # `rows` (the first of a training set, the same seed), each `n // rows` times
            self.x, self.y = self.x[:rows].repeat(n // rows, 1), self.y[:rows].repeat(n // rows, 1)
        self.read = []

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        self.read.append(i)
        return self.x[i], self.y[i]


def _train(trainer_class, mingpt, epochs, test=None, lr=1e-3):
    """Train on 32 rows; `test`: a test set of 16 rows, each one of the first `test` training rows."""
    import torch
    torch.manual_seed(0)
    model = mingpt.model.GPT(mingpt.model.GPTConfig(6, 12, n_layer=1, n_head=2, n_embd=16))
    data = _Recorded(32)
    trainer = trainer_class(model, data, _Recorded(16, test) if test else None, mingpt.trainer.TrainerConfig(
        max_epochs=epochs, batch_size=8, learning_rate=lr, num_threads=1, ckpt_path="unused"))
    saved = []
    trainer.save_checkpoint = lambda: saved.append(trainer.tokens)  # noqa: E731 (what would be written, when)
    trainer.train()
    return data.read, saved


def test_mingpt_reads_each_epoch_in_a_new_random_order_where_the_courses_loop_reads_in_order(mingpt):
    """minGPT's DataLoader shuffles (the course's notebook reads overlapping windows of one text, so unshuffled
    batches would each hold a few hundred neighbouring characters); the assignment's loop does not."""
    import submission
    read, _ = _train(mingpt.trainer.Trainer, mingpt, 2)
    first, second = read[:32], read[32:]
    assert sorted(first) == sorted(second) == list(range(32))  # every row once an epoch
    assert first != list(range(32)) and second != first
    assert _train(submission.Trainer, mingpt, 2)[0] == list(range(32)) * 2


def test_mingpt_writes_its_checkpoint_only_when_the_test_loss_falls(mingpt):
    """minGPT keeps the model of the lowest test loss: at learning rate 0 the loss of a test set of one row repeated
    (the same in any order) never falls after the first epoch, so one checkpoint, where the course's loop writes one
    every epoch; without a test set, or with a test loss that falls (training rows), every epoch."""
    import submission
    assert len(_train(mingpt.trainer.Trainer, mingpt, 3, test=1, lr=0.0)[1]) == 1
    assert len(_train(submission.Trainer, mingpt, 3, test=1, lr=0.0)[1]) == 3
    assert len(_train(mingpt.trainer.Trainer, mingpt, 3)[1]) == 3
    assert len(_train(mingpt.trainer.Trainer, mingpt, 3, test=2, lr=1e-2)[1]) == 3


def test_mingpt_under_torchrun_shuffles_each_epoch_by_the_runs_seed(mingpt):
    """Under torchrun the shuffled order comes from DistributedSampler, whose own seed (0 unless given) made every
    --seed read the same order, where one process's order follows torch's seed: it is the run's seed now."""
    from torch.utils.data.distributed import DistributedSampler
    model = mingpt.model.GPT(mingpt.model.GPTConfig(6, 12, n_layer=1, n_head=2, n_embd=16))
    config = mingpt.trainer.TrainerConfig(batch_size=8, num_threads=1, seed=7)
    trainer = mingpt.trainer.Trainer(model, _Recorded(32), None, config)
    trainer.rank, trainer.world_size = 1, 2  # as torchrun's second process (no process group is needed for this)
    outer = trainer._loader(trainer.train_dataset, trainer.config).sampler  # draws.EpochSampler: (epoch, index)
    sampler = outer.sampler
    assert isinstance(sampler, DistributedSampler) and sampler.shuffle and sampler.seed == 7
    outer.set_epoch(0)
    first = [index for _, index in outer]
    outer.set_epoch(1)
    assert len(first) == 16 and [index for _, index in outer] != first and sampler.epoch == 1

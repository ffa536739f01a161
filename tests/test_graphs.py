"""Whole-step CUDA graphs (submission/graphs.py): the step's bookkeeping (static buffers, the
length-group plan, persistent gradients, the learning rate as a device tensor, capturable AdamW)
gives the eager fast path's params. On the CPU, `capture_rerun` stands in for recording: a
"replay" runs the captured Python again, reading only the static buffers. With a GPU, real
captures are compared with eager steps, and replays (step graphs and torch.compile's reduce-overhead
mode) are checked to draw new dropout masks (skipped without one, as in CI).

Run:  python -m pytest -q tests/test_graphs.py
"""
import pytest
import torch

from submission import GPT, GPTConfig, Trainer, TrainerConfig
from submission.trainer import TrainingRun
from test_fast import padded_data
from torch_version import CPU_STEP_GRAPHS


class Rerun:
    """A stand-in for a captured graph: `replay()` runs the captured function again."""

    def __init__(self, fn):
        self.fn = fn

    def replay(self):
        self.fn()


def capture_rerun(fn, stream, pool):
    """graphs.capture_cuda's stand-in on the CPU: (a Rerun of fn, the pool unchanged)."""
    return Rerun(fn), pool


def train(synth, graphs, monkeypatch, device=None, **conf):
    """(params, the run) after 3 epochs of 8-row batches, eager or with step graphs (`graphs`: a
    capture function, or "cuda" for the real one)."""
    torch.manual_seed(0)
    model = GPT(GPTConfig(20, 24, n_layer=2, n_head=4, n_embd=32, synthesizer=synth,
                          attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0))
    tconf = dict(max_epochs=3, batch_size=8, learning_rate=1e-2, lr_decay=True, warmup_tokens=200,
                 final_tokens=3000, num_threads=1, compile=False)
    tconf.update(conf)
    runs = []

    def prepare(self, steps=None):
        run = TrainingRun(self, steps)
        if graphs is not None:
            run.use_step_graphs(capture=None if graphs == "cuda" else graphs)
        runs.append(run)
        return run

    monkeypatch.setattr(Trainer, "prepare", prepare)
    trainer = Trainer(model, padded_data(), None, TrainerConfig(**tconf))
    trainer.train()
    return {n: p.detach().cpu() for n, p in model.state_dict().items()}, runs[0]


@CPU_STEP_GRAPHS
@pytest.mark.parametrize("synth", [False, True])
@pytest.mark.parametrize("groups", [1, 3])
def test_replayed_steps_end_at_the_eager_params(synth, groups, monkeypatch):
    """float64, so that a difference is one of bookkeeping, not of rounding (the groups' gradients
    are summed in another order: 4e-13 apart after these 9 steps)."""
    torch.set_default_dtype(torch.float64)
    try:
        eager, _ = train(synth, None, monkeypatch, length_groups=groups)
        replayed, run = train(synth, capture_rerun, monkeypatch, length_groups=groups)
    finally:
        torch.set_default_dtype(torch.float32)
    graphs = run.graphs
    # 9 steps: the first of each shape ran eagerly and was recorded, the rest replayed
    assert graphs.eager_steps < 9 and graphs.captures == len(graphs.graphs) + 1
    assert len(graphs.graphs) >= groups
    assert all(isinstance(g["lr"], torch.Tensor) for g in run.optimizer.param_groups)
    for name, p in eager.items():
        assert torch.allclose(replayed[name], p, atol=1e-10, rtol=0), name
    start = GPT(GPTConfig(20, 24, n_layer=2, n_head=4, n_embd=32, synthesizer=synth)).state_dict()
    assert max((eager[n] - start[n]).abs().max().item() for n in eager if n.endswith("weight")) > 1e-2


@CPU_STEP_GRAPHS
def test_replayed_steps_follow_the_learning_rate_schedule(monkeypatch):
    _, run = train(False, capture_rerun, monkeypatch)
    lr = run.optimizer.param_groups[0]["lr"]
    assert lr is run.graphs.lr  # one tensor for both groups, filled after every step
    assert all(g["lr"] is lr and g["capturable"] for g in run.optimizer.param_groups)
    from submission.trainer import lr_multiplier
    assert lr.item() == pytest.approx(1e-2 * lr_multiplier(run.trainer.tokens, run.config))


def test_step_graphs_say_what_they_need(monkeypatch):
    from submission.fastpath import step_graphs_need
    model = GPT(GPTConfig(20, 24, n_layer=1, n_head=2, n_embd=8))
    monkeypatch.setenv("GPT_DEVICE", "cpu")
    monkeypatch.setattr(torch, "__version__", "2.0.1+cu117")  # fused AdamW takes no tensor learning rate, but
    with pytest.raises(ValueError, match=r"step_graphs needs a CUDA GPU \(this run would train on cpu\); turn it off"):
        Trainer(model, padded_data(), None, TrainerConfig(step_graphs=True)).prepare()  # the machine comes first
    assert step_graphs_need("cuda") == ("torch 2.2 or newer, whose fused AdamW reads a tensor learning rate (this is "
                                        "torch 2.0.1+cu117)")
    assert step_graphs_need("cuda", compile_mode="reduce-overhead").startswith("no CUDA graphs of torch.compile's")
    monkeypatch.setattr(torch, "__version__", "2.2.2")
    assert step_graphs_need("cuda:0") is None and step_graphs_need("cuda", world_size=2) == "one process, not torchrun"
    assert step_graphs_need("cuda", fast=False) == "the fast path (fast=True)"
    # any device but CUDA, not only the CPU
    assert step_graphs_need("mps") == "a CUDA GPU (this run would train on mps)"
    monkeypatch.undo()
    monkeypatch.setenv("GPT_DEVICE", "cpu")
    run = Trainer(model, padded_data(), None, TrainerConfig()).prepare()
    x, y = padded_data().tensors
    run.step(x[:8], y[:8])
    with pytest.raises(ValueError, match="not stepped yet"):
        run.use_step_graphs(capture=capture_rerun)


@pytest.mark.parametrize("synth", [False, True])
def test_the_causal_bias_of_a_width_outlives_other_widths(synth):
    """A graph captured at width T reads the (T, T) causal bias by its address, and later steps bring
    other widths: the bias of a width must be kept, never freed and remade."""
    from submission.attention import _causal_bias
    model = GPT(GPTConfig(20, 24, n_layer=1, n_head=2, n_embd=8, synthesizer=synth))
    attn = model.blocks[0].attn
    like = torch.zeros(1)
    first = _causal_bias(attn, 9, like)
    for T in (23, 5, 16):
        bias = _causal_bias(attn, T, like)
        assert bias.shape == (T, T)
        assert torch.equal(bias == 0, torch.ones(T, T).tril().bool())  # 0 on and below the diagonal
        assert bool((bias[torch.ones(T, T).triu(1).bool()] == float("-inf")).all())
    assert _causal_bias(attn, 9, like) is first


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("synth", [False, True])
@pytest.mark.parametrize("groups", [1, 3])
def test_captured_cuda_graphs_end_at_the_eager_params(synth, groups, monkeypatch):
    """Real torch.cuda.graph captures against eager steps, in float64 (no TF32), no dropout; batches
    come through the trainer's pinned-memory DataLoader, whose thread allocates during captures. The
    replay's learning rate is a float32 tensor (CUDA's fused AdamW reads no other), the eager steps' a
    Python float: about 6e-10 apart a step at these rates, hence atol 1e-7 (a step of bookkeeping
    gone wrong moves params by about the rate, 1e-2)."""
    monkeypatch.setenv("GPT_DEVICE", "cuda")  # conftest keeps the rest of the suite on the CPU
    torch.set_default_dtype(torch.float64)
    try:
        eager, _ = train(synth, None, monkeypatch, length_groups=groups)
        replayed, run = train(synth, "cuda", monkeypatch, length_groups=groups)
    finally:
        torch.set_default_dtype(torch.float32)
    assert run.graphs.eager_steps < 9 and run.graphs.captures == len(run.graphs.graphs) + 1
    assert run.graphs.lr.dtype == torch.float32 and run.graphs.lr.device.type == "cuda"
    for name, p in eager.items():
        assert torch.allclose(replayed[name], p, atol=1e-7, rtol=0), name


def dropout_losses(monkeypatch, device, path, dropout, steps=6):
    """The losses of one 8-row batch stepped `steps` times at learning rate 0, so that the params stay as they
    are and the loss changes only with the dropout masks; `path`: "graphs" (step graphs) or "compiled"
    (torch.compile: reduce-overhead on CUDA, the eager backend on the CPU, where capture_rerun records)."""
    monkeypatch.setenv("GPT_DEVICE", device)
    torch.manual_seed(0)
    model = GPT(GPTConfig(20, 24, n_layer=2, n_head=4, n_embd=32,
                          embd_pdrop=dropout, resid_pdrop=dropout, attn_pdrop=dropout))
    compiled = path == "compiled" and ("reduce-overhead" if device == "cuda" else "eager")
    conf = TrainerConfig(batch_size=8, learning_rate=0.0, num_threads=1, compile=compiled,
                         step_graphs=path == "graphs" and device == "cuda")
    data = padded_data()
    run = Trainer(model, data, None, conf).prepare()
    if path == "graphs" and device == "cpu":
        run.use_step_graphs(capture=capture_rerun)
    x, y = data.tensors[0][:8], data.tensors[1][:8]
    return [float(run.step(x, y)[0]) for _ in range(steps)]


@CPU_STEP_GRAPHS
@pytest.mark.parametrize("path", ["graphs", "compiled"])
def test_the_dropout_check_tells_new_masks_from_frozen_ones(path, monkeypatch):
    """The CPU stand-in of the GPU test below: with dropout, every step of the same batch at learning rate 0
    has a loss of its own; without, all are equal, as replays of frozen masks would be."""
    pytest.importorskip("torch._dynamo")
    new = dropout_losses(monkeypatch, "cpu", path, 0.1)
    assert len(set(new)) == len(new), new
    frozen = dropout_losses(monkeypatch, "cpu", path, 0.0)
    assert len(set(frozen)) == 1, frozen


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("path", ["graphs", "compiled"])
def test_replayed_cuda_graphs_draw_new_dropout_masks(path, monkeypatch):
    """A CUDA graph replays the kernels it recorded, the random ones too: each replay must still draw new
    masks (PyTorch moves on the Philox offset a graph reserves). Step graphs, and torch.compile's
    reduce-overhead mode (the CUDA default): every step after the warm-up and capture ones has its own loss."""
    losses = dropout_losses(monkeypatch, "cuda", path, 0.1, steps=8)
    assert len(set(losses[3:])) == 5, losses


def two_group_graphs():
    """(model, StepGraphs of up to 2 groups replayed by the CPU stand-in, x and y of 8 padded rows)."""
    from submission.graphs import StepGraphs
    torch.manual_seed(0)
    model = GPT(GPTConfig(20, 24, n_layer=1, n_head=2, n_embd=8, attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    graphs = StepGraphs(model, opt, 1.0, "cpu", groups=2, capture=capture_rerun)
    x, y = padded_data().tensors
    return model, graphs, x[:8], y[:8]


@CPU_STEP_GRAPHS
def test_an_ungrouped_step_after_grouped_ones_weighs_its_loss_by_one():
    """A batch with no counted target is planned ungrouped (length_groups gives None) between grouped
    ones of the same shape: its replay must not read a grouped step's share."""
    model, graphs, x, y = two_group_graphs()
    rows = torch.arange(8)
    graphs.step(x, y, [(rows[:4], 23, 0.6), (rows[4:], 23, 0.4)])
    with torch.no_grad():
        expected = model(x, y)[1]
    assert graphs.step(x, y, [(None, 23, 1.0)]).item() == pytest.approx(expected.item(), rel=1e-6)


@CPU_STEP_GRAPHS
def test_a_grouped_step_returns_the_loss_of_the_whole_batch():
    """Each group's graph writes its own slot: the step's loss is the share-weighted sum over the groups,
    as the eager step's, computed before the update; a plan of more groups than were made for is refused."""
    model, graphs, x, y = two_group_graphs()
    rows = torch.arange(8)
    plan = [(rows[:3], 23, 0.3), (rows[3:], 20, 0.7)]
    for _ in range(3):  # eager and recorded, then replayed
        with torch.no_grad():
            expected = 0.3 * model(x[:3, :23], y[:3, :23])[1] + 0.7 * model(x[3:, :20], y[3:, :20])[1]
        assert graphs.step(x, y, plan).item() == pytest.approx(expected.item(), rel=1e-6)
    assert graphs.eager_steps == 1
    with pytest.raises(ValueError, match="3 groups planned, StepGraphs was made for 2"):
        graphs.step(x, y, [(rows[:2], 23, 0.2), (rows[2:5], 23, 0.3), (rows[5:], 23, 0.5)])


@CPU_STEP_GRAPHS
def test_replayed_steps_clip_at_the_runs_own_norm(monkeypatch):
    """A clip well under the gradients' norm changes every step: the replayed clip must be the run's."""
    torch.set_default_dtype(torch.float64)
    try:
        eager, _ = train(False, None, monkeypatch, grad_norm_clip=0.05)
        replayed, _ = train(False, capture_rerun, monkeypatch, grad_norm_clip=0.05)
        unclipped, _ = train(False, None, monkeypatch, grad_norm_clip=1e9)
    finally:
        torch.set_default_dtype(torch.float32)
    for name, p in eager.items():
        assert torch.allclose(replayed[name], p, atol=1e-10, rtol=0), name
    assert max((eager[n] - unclipped[n]).abs().max().item() for n in eager) > 1e-6


def test_length_groups_refuse_torch_compiles_own_cuda_graphs(monkeypatch):
    """A bench with the reduce-overhead mode's rows of 2 and 4 length groups crashed on an H100 (an illegal
    memory access), the same bench without them ran: on CUDA, groups by number and the modes that record
    CUDA graphs of their own are refused in one sentence naming both ways out, and "auto" compiling of a
    grouped run takes the default mode instead."""
    from submission import fastpath
    from submission.fastpath import AUTO_COMPILE_STEPS, compile_setting, compiled_graphs_conflict
    said = compiled_graphs_conflict(2, "cuda:0", "reduce-overhead")
    assert said == ("length groups (2) do not train under torch.compile's reduce-overhead mode on CUDA (its CUDA "
                    "graphs per group width crashed on an H100); use step graphs (--step_graphs), whose own graphs "
                    "take length groups, or compile mode default")
    assert compiled_graphs_conflict(4, "cuda", "max-autotune").startswith("length groups (4) do not train")
    assert compiled_graphs_conflict(1, "cuda", "reduce-overhead") is None  # no groups
    assert compiled_graphs_conflict(2, "cuda", "default") is None  # no graphs of torch.compile's own
    assert compiled_graphs_conflict(2, "cuda", "max-autotune-no-cudagraphs") is None
    assert compiled_graphs_conflict(2, "cuda", None) is None
    assert compiled_graphs_conflict(2, "cpu", "reduce-overhead") is None  # no CUDA graphs off CUDA
    monkeypatch.delenv("GPT_COMPILE", raising=False)
    monkeypatch.setattr(fastpath, "_has_triton", lambda: True)
    monkeypatch.setattr(fastpath, "_has_c_compiler", lambda: True)
    assert compile_setting(TrainerConfig(length_groups=2), "cuda", AUTO_COMPILE_STEPS) == {"mode": "default"}
    assert compile_setting(TrainerConfig(length_groups=1), "cuda", AUTO_COMPILE_STEPS) == {"mode": "reduce-overhead"}
    assert compile_setting(TrainerConfig(), "cuda", AUTO_COMPILE_STEPS) == {"mode": "reduce-overhead"}  # "auto"
    # the Trainer refuses before compiling or building the optimizer (a CPU machine taken for a GPU here)
    model = GPT(GPTConfig(20, 24, n_layer=1, n_head=2, n_embd=8))
    fake = Trainer(model, padded_data(), None, TrainerConfig(compile="reduce-overhead", length_groups=3))
    fake.device = "cuda"
    monkeypatch.setattr(torch, "compile", lambda *a, **k: pytest.fail("compiled before the check"))
    with pytest.raises(ValueError, match=r"^length groups \(3\) do not train under torch.compile's reduce-overhead"):
        fake.prepare()


def test_auto_compiling_leaves_a_step_graphs_run_uncompiled(monkeypatch):
    """A run with step graphs replays its own CUDA graphs (graphs.py): compile="auto" does not compile it,
    even where a run without them would be (one GPU, Triton, a C compiler, a long run), unless GPT_COMPILE
    asks; an explicit compile setting is the run's own choice."""
    from submission import fastpath
    from submission.fastpath import AUTO_COMPILE_STEPS, compile_setting
    monkeypatch.delenv("GPT_COMPILE", raising=False)
    monkeypatch.setattr(fastpath, "_has_triton", lambda: True)
    monkeypatch.setattr(fastpath, "_has_c_compiler", lambda: True)
    assert compile_setting(TrainerConfig(), "cuda", 10 * AUTO_COMPILE_STEPS) == {"mode": "reduce-overhead"}
    assert compile_setting(TrainerConfig(step_graphs=True), "cuda", 10 * AUTO_COMPILE_STEPS) is None
    assert compile_setting(TrainerConfig(step_graphs=True, length_groups=2), "cuda", 10 * AUTO_COMPILE_STEPS) is None
    assert compile_setting(TrainerConfig(step_graphs=True, compile="default"), "cuda") == {"mode": "default"}
    monkeypatch.setenv("GPT_COMPILE", "default")
    assert compile_setting(TrainerConfig(step_graphs=True), "cuda", 10 * AUTO_COMPILE_STEPS) == {"mode": "default"}

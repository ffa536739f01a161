"""The fast paths compute what the reference paths compute.

- attention's CPU training path (fused bias, one-matmul synthesizer scores, 32-bit-word dropout
  masks) equals the explicit reference given the same dropout masks, forward and backward; its
  masks drop with probability p;
- a batch computed in length groups has the reference loss and gradients, and so has a batch packed
  into fewer rows (each row's span whole, once, positions restarting, attention within segments);
- whole training runs: fast attention with padding trim (or length groups), fused AdamW and the rest of the trainer's
  defaults end at the reference path's params (no dropout, in float64 to 1e-10); a compiled model
  trains and saves raw keys; the forward traces as one graph (no graph breaks for CUDA graphs);
- decoding with the key/value cache: prefill and decode logits equal full forwards, `sample_cached`
  equals `sample`, and `predict_places` equals both `predict_places_recompute` and the course's
  one-at-a-time `sample()` loop on small trained models of both variants, including questions too
  long for the cache and batches where rows stop early; the batch decoders keep each row's own
  continuation when rows stop many steps apart, prompts at the cache's edge decode exactly, caches
  start zeroed (uninitialised memory made NaN), `sample` crops to the last positions, and sampling
  draws from softmax(top-k of logits / temperature).

Run:  python -m pytest -q tests/test_fast.py
"""
import os

import pytest
import torch
import torch.nn as nn
from torch.utils.data import TensorDataset

from submission import GPT, GPTConfig, NameDataset, CharCorruptionDataset, Trainer, TrainerConfig
from submission import attention as attention_module
from submission.attention import attention_paths, set_fast_attention
from submission.batching import length_group_count, length_groups, pack_rows, trim_padding
from submission.dataset import PAD_CHAR
from submission.decoding import (_decode, _greedy_cached, _greedy_full, _new_caches, _prefill, longest_input,
                                 predict_places, predict_places_recompute, predict_places_reference, sample,
                                 sample_cached, top_k_logits)
from submission.threads import CpuThreads
from submission.utils import MASK_CHAR
from torch_version import COMPILE_PER_BACKEND, EXPLAIN_FORWARD, ONE_DYNAMIC_GRAPH


def config(**kw):
    base = dict(n_layer=2, n_head=4, n_embd=32, attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0)
    base.update(kw)
    return GPTConfig(20, 24, **base)


def scrambled(model, std=0.3):
    for p in model.parameters():  # larger weights than the 0.02 init, so attention is not uniform
        p.data.normal_(0, std)
    return model


@pytest.mark.parametrize("synth", [False, True])
def test_attention_paths_switch_within_the_block_and_each_layer_takes_its_own_path_again_after(synth):
    """attention_paths(model, False), run.py --reference_eval's switch to the course's attention (the bench's
    reference too), holds within its block; after it, an error included, each layer takes the path it took
    before, so that what decodes with the model afterwards (the bench's later rows) keeps its own path."""
    model = GPT(config(synthesizer=synth))
    model.blocks[0].attn.fast = False
    with pytest.raises(KeyError):
        with attention_paths(model, False):
            assert [b.attn.fast for b in model.blocks] == [False, False]
            raise KeyError("stopped inside the block")
    assert [b.attn.fast for b in model.blocks] == [False, True]
    with attention_paths(model, True):
        assert [b.attn.fast for b in model.blocks] == [True, True]
    assert [b.attn.fast for b in model.blocks] == [False, True]


# ----------------------------------------------------------------------------- dropout masks

def test_keep_mask_drops_with_probability_p():
    torch.manual_seed(0)
    traced = torch.compile(attention_module._keep_mask, backend="eager", fullgraph=True)  # torch.rand branch
    for p, keep_mask in ((0.1, attention_module._keep_mask), (0.5, attention_module._keep_mask), (0.1, traced)):
        keep = keep_mask((1000, 1001), p, "cpu")
        assert keep.dtype == torch.bool and keep.shape == (1000, 1001)
        dropped = 1 - keep.float().mean().item()
        assert abs(dropped - p) < 5 * (p * (1 - p) / keep.numel()) ** 0.5
    assert attention_module._keep_mask((7,), 0.0, "cpu").all()
    # p = 1 keeps nothing: its threshold, 2^31, is no int32 (compared, it wrapped to -2^31 and kept everything)
    for keep_mask in (attention_module._keep_mask, traced):
        assert not keep_mask((1001,), 1.0, "cpu").any()
    x = torch.ones(200_000)
    assert abs(attention_module._dropout(x, 0.1).mean().item() - 1.0) < 0.01  # inverted scaling


class FixedMasks:
    """Replays one sequence of keep masks: the fast path draws them through `_keep_mask`, the
    reference path's attn_drop through `MaskedDropout`; both see the same masks in the same order."""

    def __init__(self):
        self.gen = torch.Generator().manual_seed(5)
        self.masks = []
        self.replay = None

    def draw(self, shape, p, device):
        if self.replay is not None:
            return self.replay.pop(0)
        m = torch.rand(shape, generator=self.gen) >= p
        self.masks.append(m)
        return m


class MaskedDropout(nn.Module):
    def __init__(self, p, masks):
        super().__init__()
        self.p, self.masks = p, masks

    def forward(self, x):
        return x * self.masks.draw(x.shape, self.p, x.device).view(x.shape) / (1 - self.p)


@pytest.mark.parametrize("synth", [False, True])
def test_cpu_training_path_equals_reference_with_the_same_masks(synth, monkeypatch):
    torch.manual_seed(0)
    fast = scrambled(GPT(config(synthesizer=synth, attn_pdrop=0.2)))
    ref = GPT(config(synthesizer=synth, attn_pdrop=0.2))
    ref.load_state_dict(fast.state_dict())
    set_fast_attention(ref, False)
    masks = FixedMasks()
    monkeypatch.setattr(attention_module, "_keep_mask", masks.draw)
    for block in ref.blocks:
        block.attn.attn_drop = MaskedDropout(0.2, masks)
    x = torch.randint(0, 20, (3, 23))
    y = torch.randint(0, 20, (3, 23))
    fast.train(), ref.train()
    a, loss_a = fast(x, y)
    assert len(masks.masks) == 2  # the fast path drew one mask per layer
    masks.replay = list(masks.masks)
    b, loss_b = ref(x, y)
    assert masks.replay == []
    assert_same_forward_and_backward(fast, a, loss_a, ref, b, loss_b)


@pytest.mark.parametrize("synth", [False, True])
def test_cpu_training_path_equals_reference_with_every_dropout_and_the_same_masks(synth, monkeypatch):
    """With the embedding, attention, residual and MLP dropouts all on, the fast path draws every mask through
    `_keep_mask` (the model's own two as KeepMaskDropout) in the order the reference path's dropouts draw theirs:
    given the same masks, the same logits and gradients. (Before KeepMaskDropout the fast path drew those two
    through nn.Dropout, and this failed.)"""
    torch.manual_seed(0)
    kw = dict(synthesizer=synth, attn_pdrop=0.2, resid_pdrop=0.3, embd_pdrop=0.25)
    fast, ref = scrambled(GPT(config(**kw))), GPT(config(**kw))
    ref.load_state_dict(fast.state_dict())
    set_fast_attention(ref, False)
    masks = FixedMasks()
    monkeypatch.setattr(attention_module, "_keep_mask", masks.draw)
    ref.drop = MaskedDropout(0.25, masks)
    for block in ref.blocks:
        block.attn.attn_drop = MaskedDropout(0.2, masks)
        block.attn.resid_drop = MaskedDropout(0.3, masks)
        block.mlp[3] = MaskedDropout(0.3, masks)
    x, y = torch.randint(0, 20, (3, 23)), torch.randint(0, 20, (3, 23))
    fast.train(), ref.train()
    a, loss_a = fast(x, y)
    assert len(masks.masks) == 1 + 3 * 2  # the embeddings', then each layer's attention, residual and MLP masks
    masks.replay = list(masks.masks)
    b, loss_b = ref(x, y)
    assert masks.replay == []
    assert_same_forward_and_backward(fast, a, loss_a, ref, b, loss_b)


def test_keep_mask_dropout_is_nn_dropout_off_the_fast_path_and_in_eval():
    """KeepMaskDropout switched off (set_fast_attention(model, False), GPTConfig(fast_attention=False)) draws as
    nn.Dropout does, bit for bit from the same seed, so the reference path is the course's computation; in eval
    mode either path returns its input; and the switches reach it as they reach the attention layers."""
    from submission.attention import KeepMaskDropout
    x = torch.randn(4, 9, 16)
    off = KeepMaskDropout(0.3, fast=False)
    torch.manual_seed(3)
    want = nn.Dropout(0.3)(x)
    torch.manual_seed(3)
    assert torch.equal(off(x), want)
    for fast in (True, False):
        assert torch.equal(KeepMaskDropout(0.3, fast=fast).eval()(x), x)
    model = GPT(config(embd_pdrop=0.1, resid_pdrop=0.1))
    switched = [model.drop] + [b.mlp[3] for b in model.blocks]
    assert all(isinstance(m, KeepMaskDropout) and m.fast for m in switched)
    with attention_paths(model, False):
        assert not any(m.fast for m in switched)
    assert all(m.fast for m in switched)
    set_fast_attention(model, False)
    assert not any(m.fast for m in switched)
    assert not any(m.fast for m in GPT(config(fast_attention=False)).modules() if isinstance(m, KeepMaskDropout))


def assert_same_forward_and_backward(fast, a, loss_a, ref, b, loss_b):
    """Logits a and b agree, and so do the gradients that loss_a and loss_b give the models' parameters."""
    assert torch.allclose(a, b, atol=1e-5, rtol=1e-4)
    loss_a.backward()
    loss_b.backward()
    grads_b = dict(ref.named_parameters())
    for name, p in fast.named_parameters():
        assert torch.allclose(p.grad, grads_b[name].grad, atol=1e-5, rtol=1e-3), name


def test_an_older_torch_without_torch_compiler_is_compiling_takes_the_older_name():
    """torch.compiler.is_compiling is torch 2.3+ (attention.py failed on 2.0 and 2.2 with an
    AttributeError); before it torch._utils.is_compiling said the same; failing both, never compiling."""
    from types import SimpleNamespace as ns

    from submission.attention import _compiling, _is_compiling_function
    new, old = (lambda: "new"), (lambda: "old")
    assert _is_compiling_function(ns(compiler=ns(is_compiling=new), _utils=ns(is_compiling=old))) is new
    assert _is_compiling_function(ns(compiler=ns(), _utils=ns(is_compiling=old))) is old  # torch 2.1, 2.2
    assert _is_compiling_function(ns(_utils=ns(is_compiling=old))) is old                # torch 2.0
    assert _is_compiling_function(ns(_utils=ns()))() is False
    assert _compiling() is False  # this torch's, outside torch.compile


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("synth", [False, True])
def test_training_mode_dropout_is_unbiased(synth, fast):
    # an attention layer is linear in its dropout masks: averaged over many draws, the training
    # forward is the eval forward (3000 draws leave about 0.02 of noise, a dropout that forgets to
    # rescale by 1 / (1 - p) is off by 0.3 or more)
    torch.manual_seed(0)
    att = scrambled(GPT(config(synthesizer=synth, attn_pdrop=0.3, resid_pdrop=0.3))).blocks[0].attn
    att.fast = fast
    x = torch.randn(2, 10, 32)
    with torch.no_grad():
        want = att.eval()(x)
        att.train()
        got = torch.stack([att(x) for _ in range(3000)]).mean(0)
    assert (got - want).abs().mean() < 0.035 * want.abs().mean()


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("synth", [False, True])
def test_residual_dropout_zeroes_a_share_p_and_scales_the_rest(synth, fast):
    """In training the attention output's dropout (resid_pdrop) zeroes about a share p of its entries and scales
    the others by 1 / (1 - p), on both paths: the average over draws above cannot tell that from no dropout at all
    (the fast path's `_dropout` returning its input passed it)."""
    torch.manual_seed(0)
    att = scrambled(GPT(config(synthesizer=synth, resid_pdrop=0.3))).blocks[0].attn
    att.fast = fast
    x = torch.randn(4, 10, 32)
    with torch.no_grad():
        want = att.eval()(x)
        got = att.train()(x)
    dropped = got == 0  # (want has no exact zeros)
    assert abs(dropped.float().mean().item() - 0.3) < 0.05  # 1280 entries: a standard deviation of 0.013
    assert torch.allclose(got[~dropped], want[~dropped] / 0.7, atol=1e-5, rtol=1e-4)

@pytest.mark.parametrize("synth", [False, True])
def test_cpu_training_path_keeps_a_causal_bias_per_dtype(synth):
    """The explicit path's memoised causal bias is per width, device and dtype: a layer trained in float32, then
    cast to float64 (and back), must not add the float32 bias (baddbmm refuses mixed dtypes). Attention dropout
    of 1e-9 takes the explicit path while dropping (almost surely) nothing: training equals eval."""
    torch.manual_seed(0)
    att = scrambled(GPT(config(synthesizer=synth, attn_pdrop=1e-9))).blocks[0].attn
    x = torch.randn(2, 10, 32)
    for dtype in (torch.float32, torch.float64, torch.float32):
        att.to(dtype)
        with torch.no_grad():
            got, want = att.train()(x.to(dtype)), att.eval()(x.to(dtype))
        assert got.dtype == dtype and torch.allclose(got, want, atol=1e-5, rtol=1e-4), dtype


@pytest.mark.parametrize("synth", [False, True])
def test_dropout_of_one_drops_everything_on_both_paths(synth):
    # nn.Dropout(p=1) gives zeros; the fast path's own dropouts must too (they divided by 1 - p)
    x = torch.randn(2, 10, 32)
    for attn_pdrop, resid_pdrop in ((1.0, 1.0), (1.0, 0.0), (0.0, 1.0)):
        torch.manual_seed(0)
        att = GPT(config(synthesizer=synth, attn_pdrop=attn_pdrop, resid_pdrop=resid_pdrop)).blocks[0].attn.train()
        out = {}
        for fast in (True, False):
            att.fast = fast
            out[fast] = att(x)
        # every attention weight dropped: the output is the projection's bias alone, on either path
        want = torch.zeros(2, 10, 32) if resid_pdrop else att.proj.bias.expand(2, 10, 32)
        assert torch.allclose(out[True], want) and torch.allclose(out[False], want), (attn_pdrop, resid_pdrop)


# ----------------------------------------------------------------------------- training runs

def test_trim_padding():
    y = torch.tensor([[3, 4, 0, 0, 0, 0], [5, 0, 6, 0, 0, 0]])
    assert trim_padding(y, 0) == 3
    assert trim_padding(y, 0, multiple=4) == 4
    assert trim_padding(y, 0, multiple=8) == 6
    assert trim_padding(torch.zeros(2, 5, dtype=torch.long), 0) == 5
    assert trim_padding(y, None) == 6


def test_length_groups_split_rows_by_where_their_targets_end():
    y = torch.tensor([[3, 0, 0, 0, 0, 0], [5, 0, 6, 0, 0, 0], [0] * 6, [1, 2, 3, 4, 5, 0], [7, 7, 0, 0, 0, 0]])
    parts = length_groups(y, 0, 2)  # rows end after 1, 3, 0, 5, 2 columns; row 2 feeds no loss
    assert [(rows.tolist(), width) for rows, width, _ in parts] == [([3, 1], 5), ([4, 0], 2)]
    assert [share for *_, share in parts] == pytest.approx([7 / 10, 3 / 10])  # counted targets 5+2, 2+1
    assert [width for _, width, _ in length_groups(y, 0, 2, multiple=4)] == [6, 4]  # rounded up, at most T
    assert [rows.tolist() for rows, _, _ in length_groups(y, 0, 8)] == [[3], [1], [4], [0]]
    assert length_groups(torch.zeros(3, 4, dtype=torch.long), 0, 2) is None


def test_length_group_count_follows_the_cpu_measurements(tmp_path):
    auto = TrainerConfig()
    assert [length_group_count(auto, rows) for rows in (8, 15, 16, 32, 64, 128, 256)] == [1, 1, 2, 2, 4, 8, 8]
    assert length_group_count(auto, 128, "cuda") == 1  # not measured on a GPU yet
    assert length_group_count(auto, 128, compiled=True) == 1 and length_group_count(auto, 128, world_size=2) == 1
    assert length_group_count(TrainerConfig(length_groups=3), 8, "cuda") == 3
    assert length_group_count(TrainerConfig(length_groups=3), 8, world_size=2) == 1
    assert length_group_count(TrainerConfig(ignore_index=None), 128) == 1
    data = padded_data(n=16)
    untrimmed = Trainer(GPT(config()), data, None, TrainerConfig(trim_padding=False, num_threads=1)).prepare()
    assert untrimmed.groups(data.tensors[1]) is None and untrimmed.shapes(*data.tensors) == [(16, 23)]
    for bad in (0, 2.5, "4", True):
        with pytest.raises(ValueError, match="length_groups must be 'auto' or a whole number of at least 1"):
            length_group_count(TrainerConfig(length_groups=bad), 128)
        # ... and before any step, on either path: the first step's check left the loss log's .partial, and the
        # course's loop (fast=False) never read the value
        for fast in (True, False):
            with pytest.raises(ValueError, match="length_groups must be 'auto' or a whole number of at least 1"):
                Trainer(GPT(config()), data, None, TrainerConfig(length_groups=bad, fast=fast, num_threads=1,
                                                                 log_path=str(tmp_path / "log.jsonl"))).train()
            assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("synth", [False, True])
def test_a_grouped_batch_has_the_reference_loss_and_gradients(synth):
    """Length groups (and the fast attention) against the course's loop on one padded batch, no dropout."""
    data = padded_data(n=16)
    x, y = data.tensors
    grads, losses = [], []
    for fast, groups in ((False, 1), (True, 5)):
        torch.manual_seed(0)
        model = GPT(config(synthesizer=synth))
        set_fast_attention(model, fast)
        run = Trainer(model, data, None, TrainerConfig(fast=fast, length_groups=groups, num_threads=1)).prepare()
        loss, value = run.loss(x, y)
        loss.backward()
        losses.append(float(value))
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
    assert losses[1] == pytest.approx(losses[0], rel=1e-6)
    for name, g in grads[0].items():
        assert torch.allclose(grads[1][name], g, atol=1e-6, rtol=1e-4), name


def spans_of(x, y, ignore=0):
    """{source row: (its inputs, its targets)} up to each row's last counted target, for rows with one."""
    out = {}
    for i in range(y.size(0)):
        cols = (y[i] != ignore).nonzero()
        if cols.numel():
            n = int(cols[-1]) + 1
            out[i] = (x[i, :n].tolist(), y[i, :n].tolist())
    return out


def test_pack_rows_places_each_counted_span_whole_once():
    """Every row's span (up to its last counted target) lies whole in one packed row, its positions
    0..n-1 and one segment number; segments count up left to right; rows without a counted target,
    unused columns and the rows added to round R up hold targets ignore_index and inputs 0, in segment
    -1 (with ignore_index -100 the inputs stay ids an embedding can read)."""
    g = torch.Generator().manual_seed(7)
    x = torch.randint(1, 20, (40, 31), generator=g)
    y = torch.randint(1, 20, (40, 31), generator=g)
    for i in range(40):
        y[i, int(torch.randint(6, 32, (), generator=g)):] = 0
        y[i, :i % 5] = 0  # counted targets need not start at column 0
    y[3] = 0  # a row that feeds no loss
    p1 = pack_rows(x, y, 0)
    for multiple, row_multiple in ((1, 1), (8, 8), (4, 3)):
        p = pack_rows(x, y, 0, multiple, row_multiple)
        R, W = p.shape
        assert W <= 31 and (W % multiple == 0 or W == 31) and R % row_multiple == 0
        assert all(t.shape == (R, W) for t in (p.y, p.positions, p.segments))
        found = {}
        for r in range(R):
            segs = p.segments[r].tolist()
            starts = [c for c in range(W) if segs[c] >= 0 and (c == 0 or segs[c - 1] != segs[c])]
            assert [segs[c] for c in starts] == list(range(len(starts)))  # 0, 1, 2, ... left to right
            for c in starts:
                n = segs.count(segs[c])
                assert segs[c:c + n] == [segs[c]] * n and p.positions[r, c:c + n].tolist() == list(range(n))
                found.setdefault((tuple(p.x[r, c:c + n].tolist()), tuple(p.y[r, c:c + n].tolist())), []).append(r)
            unused = p.segments[r] < 0
            assert (p.y[r][unused] == 0).all() and (p.x[r][unused] == 0).all()
        spans = spans_of(x, y)
        assert 3 not in spans and len(spans) == 39
        assert sorted(found) == sorted((tuple(a), tuple(b)) for a, b in spans.values())  # each once, whole
        assert int((p.y != 0).sum()) == int((y != 0).sum())
    moved = pack_rows(x.to(torch.int32), y, 0).to("cpu")  # in one stacked copy: each tensor and dtype kept
    assert moved.x.dtype == torch.int32 and moved.y.dtype == torch.long
    for a, b in zip((moved.x, moved.y, moved.positions, moved.segments), (p1.x, p1.y, p1.positions, p1.segments)):
        assert torch.equal(a.long(), b)
    least = -(-sum(len(a) for a, _ in spans_of(x, y).values()) // 31)  # rows the spans fill at the very least
    assert least <= p1.shape[0] <= 11 / 9 * least + 6 / 9  # first-fit decreasing's bound
    assert pack_rows(x, torch.zeros_like(y), 0) is None
    # a loss that skips -100 (cross_entropy's default): the same placement, and unused inputs still ids (0)
    minus = pack_rows(x, torch.where(y == 0, -100, y), -100)
    assert torch.equal(minus.segments, p1.segments) and torch.equal(minus.positions, p1.positions)
    assert torch.equal(minus.x, p1.x) and torch.equal(torch.where(minus.y == -100, 0, minus.y), p1.y)


def test_pack_rows_cuts_the_packed_width_to_the_fullest_row():
    """The packed width W is the fullest packed row's length rounded up to `multiple`, at most T: spans of 5, 3
    and 2 columns of a 32-column batch pack into one row of W = 10 (16 with multiple 8, T = 32 with 64), not
    of T, whose columns past 10 would be computed for nothing; row_multiple adds empty rows only."""
    x = torch.randint(1, 20, (3, 32))
    y = torch.zeros(3, 32, dtype=torch.long)
    for i, n in enumerate((5, 3, 2)):
        y[i, :n] = 1 + i
    assert pack_rows(x, y, 0).shape == (1, 10)
    assert pack_rows(x, y, 0, multiple=8).shape == (1, 16)
    assert pack_rows(x, y, 0, multiple=64).shape == (1, 32)
    assert pack_rows(x, y, 0, row_multiple=4).shape == (4, 10)

@pytest.mark.parametrize("synth", [False, True])
@pytest.mark.parametrize("fast", [True, False])
def test_a_packed_batch_has_the_reference_loss_and_gradients(synth, fast):
    """In float64: packed rows (positions from `positions`, attention within `segments`) against the
    batch as it is, for each attention path, in training (no dropout) and in eval mode (the fused SDPA
    route with a mask, for the fast vanilla)."""
    data = padded_data(n=16)
    x, y = data.tensors
    p = pack_rows(x, y, 0, multiple=4, row_multiple=4)
    assert p.shape[0] < 16
    torch.manual_seed(0)
    model = scrambled(GPT(config(synthesizer=synth))).double()
    set_fast_attention(model, fast)
    for training in (True, False):
        model.train(training)
        _, loss = model(x, y)
        grads = torch.autograd.grad(loss, list(model.parameters()))
        _, packed_loss = model(p.x, p.y, positions=p.positions, segments=p.segments)
        packed_grads = torch.autograd.grad(packed_loss, list(model.parameters()))
        assert packed_loss.item() == pytest.approx(loss.item(), rel=1e-12)
        for (name, _), a, b in zip(model.named_parameters(), grads, packed_grads):
            assert torch.allclose(a, b, atol=1e-12, rtol=0), name


def test_a_packed_forward_needs_both_positions_and_segments():
    model = GPT(config())
    x = torch.randint(0, 20, (2, 5))
    zeros = torch.zeros(2, 5, dtype=torch.long)
    for kwargs in (dict(positions=zeros), dict(segments=zeros)):
        with pytest.raises(ValueError, match="positions and segments describe a packed batch together"):
            model(x, **kwargs)


@pytest.mark.parametrize("synth", [False, True])
@pytest.mark.parametrize("fast", [True, False])
def test_segments_are_labels_in_any_order(synth, fast):
    """GPT.forward's `segments` name which sequence each position belongs to, not an order: a row whose
    later sequence has the smaller label (pack_rows numbers them upwards) still attends within each
    sequence alone, so each gets the logits of its own forward (a mask of segment_key >= segment_query
    passed every packed-batch test, where labels only grow along a row)."""
    torch.manual_seed(0)
    model = scrambled(GPT(config(synthesizer=synth))).eval()
    set_fast_attention(model, fast)
    a, b = torch.randint(1, 20, (1, 5)), torch.randint(1, 20, (1, 4))
    positions = torch.tensor([[0, 1, 2, 3, 4, 0, 1, 2, 3]])
    segments = torch.tensor([[3, 3, 3, 3, 3, 1, 1, 1, 1]])
    with torch.no_grad():
        packed, _ = model(torch.cat([a, b], dim=1), positions=positions, segments=segments)
        assert torch.allclose(packed[:, :5], model(a)[0], atol=1e-5)
        assert torch.allclose(packed[:, 5:], model(b)[0], atol=1e-5)


@pytest.mark.parametrize("synth", [False, True])
def test_packed_cpu_training_path_equals_the_masked_softmax_with_the_same_masks(synth, monkeypatch):
    """With attention dropout on the CPU, packed rows take the explicit path (`_keep_mask`'s 32-bit masks,
    the 1/(1-p) scale on the output); given the same masks it equals the masked softmax with dropout."""
    torch.manual_seed(0)
    fast = scrambled(GPT(config(synthesizer=synth, attn_pdrop=0.2)))
    ref = GPT(config(synthesizer=synth, attn_pdrop=0.2))
    ref.load_state_dict(fast.state_dict())
    masks = FixedMasks()
    monkeypatch.setattr(attention_module, "_keep_mask", masks.draw)
    x, y = padded_data(n=16).tensors
    p = pack_rows(x, y, 0)
    fast.train()
    a, loss_a = fast(p.x, p.y, positions=p.positions, segments=p.segments)
    assert len(masks.masks) == 2  # the explicit path drew one mask per layer
    for block in ref.blocks:
        block.attn.attn_drop = MaskedDropout(0.2, masks)
        block.attn.fast = False  # the packed route's masked softmax, dropout through attn_drop
    ref.train()
    masks.replay = [m.view(p.shape[0], 4, *p.shape[1:], p.shape[1]) for m in masks.masks]  # (R, nh, W, W)
    b, loss_b = ref(p.x, p.y, positions=p.positions, segments=p.segments)
    assert masks.replay == []
    assert_same_forward_and_backward(fast, a, loss_a, ref, b, loss_b)


def test_packing_runs_where_asked_or_cheaper_and_is_refused_where_it_cannot():
    """pack=True packs every batch or raises naming what is missing; "auto" (the default) packs the CPU's
    cheaper batches, eager, in one process, with the length groups on "auto", and is quietly off elsewhere."""
    from submission.fastpath import packing_setting
    model = GPT(config())
    assert packing_setting(TrainerConfig(), model) == "auto"
    assert packing_setting(TrainerConfig(pack=True), model) is True
    assert packing_setting(TrainerConfig(pack=False), model) is False
    for conf, model_here, step_graphs, why in (
            (dict(length_groups=4), model, False, "no length groups \\(4 asked for\\)"),
            (dict(fast=False), model, False, "the fast path"),
            (dict(trim_padding=False), model, False, "the fast path with its padding trim"),
            (dict(ignore_index=None), model, False, "a model whose loss skips a target id"),
            ({}, nn.Linear(2, 2), False, "a model that attends within segments"),
            ({}, model, True, "no step graphs")):
        assert packing_setting(TrainerConfig(**conf), model_here, step_graphs) is False
        with pytest.raises(ValueError, match="pack needs " + why):
            packing_setting(TrainerConfig(pack=True, **conf), model_here, step_graphs)
    for where in (dict(device="cuda"), dict(device="mps"), dict(compiled=True), dict(world_size=2)):
        assert packing_setting(TrainerConfig(), model, **where) is False, where
        assert packing_setting(TrainerConfig(pack=True), model, **where) is True, where
    assert packing_setting(TrainerConfig(length_groups=1), model) is False  # a layout chosen by number
    with pytest.raises(ValueError, match="pack must be 'auto', True or False, got 'yes'"):
        packing_setting(TrainerConfig(pack="yes"), model)


@pytest.mark.parametrize("synthesizer", [False, True])
def test_packed_gradients_are_the_same_run_to_run(synthesizer):
    """A packed batch's gradients are bitwise the same each time on a CPU with 2 threads: pos_emb, w2 and b2
    are read at each position's place by embedding lookups, whose gradients sum in a fixed order. Read by
    indexing (pos_emb[0][positions]), the sums came in the order threads reached them, and the CPU demo's
    synthesizer row changed from one run to the next."""
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        torch.manual_seed(0)
        model = GPT(GPTConfig(30, 128, n_layer=1, n_head=4, n_embd=64, synthesizer=synthesizer,
                              attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0))
        g = torch.Generator().manual_seed(1)
        x = torch.randint(1, 30, (64, 127), generator=g)
        ends = torch.randint(5, 115, (64, 1), generator=g)
        y = torch.where(torch.arange(127) < ends, torch.randint(1, 30, (64, 127), generator=g), 0)
        p = pack_rows(x, y, 0)

        def grads():
            model.zero_grad()
            model(p.x, p.y, positions=p.positions, segments=p.segments)[1].backward()
            return [q.grad.clone() for q in model.parameters()]

        first = grads()
        for _ in range(4):
            assert all(torch.equal(a, b) for a, b in zip(first, grads()))
    finally:
        torch.set_num_threads(threads)


def test_a_model_with_an_attention_of_the_courses_signature_trains_unpacked():
    """An attention of the course's signature, forward(x, layer_past=None), swapped into the GPT (as a grader's
    test does) cannot take a packed batch: the model says so (packs_rows), the default trains it unpacked on
    batches the CPU would otherwise pack, and pack=True is refused naming what is missing."""

    class CourseAttention(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x, layer_past=None):
            return self.inner(x)

    torch.manual_seed(0)
    model = GPT(config())
    assert model.packs_rows
    model.blocks[1].attn = CourseAttention(model.blocks[1].attn)
    trains_unpacked(model)


def trains_unpacked(model):
    """Checks that `model` does not pack rows: the default trains it on whole rows of a batch the CPU would
    otherwise pack, and pack=True is refused naming what is missing."""
    from submission.fastpath import packing_setting
    assert not model.packs_rows
    assert packing_setting(TrainerConfig(), model) is False
    with pytest.raises(ValueError, match="pack needs a model that attends within segments"):
        packing_setting(TrainerConfig(pack=True), model)
    x, y = span_batch([23, 3, 21, 5, 19, 7, 17, 9, 15, 11, 13, 12, 22, 2, 20, 4] * 2)  # packed by default
    run = Trainer(model, None, None, TrainerConfig(batch_size=32, num_threads=1)).prepare()
    assert run.pack(x, y) is None
    assert torch.isfinite(run.loss(x, y)[0])



def test_a_model_with_a_block_of_the_courses_signature_trains_unpacked():
    """A block of the course's signature, forward(x), swapped in whole cannot pass a packed batch on to its
    attention, whatever that attention takes: the model does not pack rows, and the default trains it
    unpacked."""

    class CourseBlock(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner, self.attn = inner, inner.attn  # its attention would take `packed`

        def forward(self, x):
            return self.inner(x)

    torch.manual_seed(0)
    model = GPT(config())
    model.blocks[0] = CourseBlock(model.blocks[0])
    trains_unpacked(model)


def test_a_gpt_subclass_with_the_courses_forward_signature_trains_unpacked():
    """A GPT subclass whose forward has the course's signature, forward(idx, targets=None) (a student's or a
    grader's wrapper that logs or adds a term), cannot take a packed batch's positions and segments: the
    model does not pack rows, and the default trains it unpacked on batches the CPU would otherwise pack
    (it raised TypeError: unexpected keyword argument 'positions')."""

    class CourseForwardGPT(GPT):
        def forward(self, idx, targets=None):
            return super().forward(idx, targets)

    torch.manual_seed(0)
    trains_unpacked(CourseForwardGPT(config()))


def test_a_gpt_subclass_whose_forward_takes_positions_but_not_segments_does_not_pack():
    """A forward that takes one of the packed batch's two arguments cannot take the batch: packs_rows needs both
    (a forward taking `positions` alone passed for one that packs, and every test passed)."""

    class PositionsOnlyGPT(GPT):
        def forward(self, idx, targets=None, positions=None):
            return super().forward(idx, targets)

    class SegmentsOnlyGPT(GPT):
        def forward(self, idx, targets=None, segments=None):
            return super().forward(idx, targets)

    assert GPT(config()).packs_rows
    assert not PositionsOnlyGPT(config()).packs_rows and not SegmentsOnlyGPT(config()).packs_rows


def test_pack_true_packs_every_batch_even_where_the_groups_cost_less():
    """pack=True packs each batch, the short, alike rows that "auto" leaves in their groups included; the
    loss is the batch's either way."""
    torch.manual_seed(0)
    model = GPT(config())
    run = Trainer(model, None, None, TrainerConfig(batch_size=32, num_threads=1, pack=True)).prepare()
    assert run.packing is True
    x, y = span_batch([9, 10, 8, 9, 10, 9, 8, 10] * 4)  # "auto" keeps these in 2 length groups
    full = pack_rows(x, y, 0)
    assert run.shapes(x, y) == [full.shape] and run.pack(x, y).shape == full.shape
    model.eval()
    with torch.no_grad():
        _, whole = model(x, y)
        assert run.loss(x, y)[1].item() == pytest.approx(whole.item(), rel=1e-5)


def test_layout_cost_counts_positions_and_attention_scores():
    from submission.fastpath import SCORE_COST, layout_cost, packs_cheaper
    assert layout_cost([(3, 10)]) == pytest.approx(30 + 300 * SCORE_COST)
    assert layout_cost([(3, 10), (2, 5)]) == pytest.approx(40 + 350 * SCORE_COST)
    # batches of data/ (bench.pretrain_batches): 128 rows stay in their 8 groups, 64 pack; finetuning's short
    # rows (the course's, batch 256) stay in their groups
    assert not packs_cheaper((54, 127), [(16, w) for w in (114, 92, 74, 61, 51, 41, 29, 16)])
    assert packs_cheaper((34, 127), [(16, 114), (16, 97), (16, 64), (16, 30)])
    assert not packs_cheaper((87, 127), [(32, w) for w in (62, 44, 41, 39, 38, 37, 36, 35)])



def test_the_score_cost_packs_the_batches_docs_speed_md_says_on_data():
    """SCORE_COST is fit to measurements (docs/speed.md, "Packed rows"): on data/'s pretraining batches it
    packs none of 40 of 128 rows (the course's pretraining stays in its 8 length groups, packing was 3-5%
    slower there) and 35 or more of 40 of 64 (where packing was 4-11% faster). A cost of 1/411 packed 18 of
    the 128s; 1/250, only 32 of the 64s."""
    import os
    import bench
    from conftest import ROOT
    with open(os.path.join(ROOT, "data", "wiki.txt"), encoding="utf-8") as f:
        dataset = CharCorruptionDataset(f.read(), 128)
    model = GPT(GPTConfig(dataset.vocab_size, 128, n_layer=1, n_head=2, n_embd=8))
    packed = {}
    for batch in (64, 128):
        run = Trainer(model, None, None, TrainerConfig(batch_size=batch, num_threads=1)).prepare()
        packed[batch] = sum(run.pack(x, y) is not None for x, y in bench.pretrain_batches(dataset, batch, 40))
    assert packed[128] == 0 and packed[64] >= 35, packed


def span_batch(lengths, width=23, pad=0):
    """x, y (B, width): row i counts targets up to column lengths[i] - 1 (ids 1..), PAD after."""
    x = torch.randint(1, 9, (len(lengths), width))
    y = torch.full((len(lengths), width), pad)
    for i, n in enumerate(lengths):
        y[i, :n] = torch.randint(1, 9, (n,))
    return x, y


def test_auto_packing_packs_a_batch_only_where_that_costs_less():
    """Under pack="auto" a run packs long, varied rows (fewer positions) and leaves short, alike rows in their
    groups (packing them would add positions and attention scores), as packs_cheaper says; shapes() agrees
    with what the step computes, and the loss is the same either way."""
    from submission.fastpath import layout_cost
    torch.manual_seed(0)
    model = GPT(config())
    trainer = Trainer(model, None, None, TrainerConfig(batch_size=32, num_threads=1))
    run = trainer.prepare()
    assert run.packing == "auto"
    varied = span_batch([23, 3, 21, 5, 19, 7, 17, 9, 15, 11, 13, 12, 22, 2, 20, 4] * 2)
    alike = span_batch([9, 10, 8, 9, 10, 9, 8, 10] * 4)
    for (x, y), packs in ((varied, True), (alike, False)):
        packed = run.pack(x, y)
        unpacked = run.unpacked_shapes(y)
        assert (packed is not None) == packs
        full = pack_rows(x, y, 0)
        assert (layout_cost([full.shape]) < layout_cost(unpacked)) == packs
        assert run.shapes(x, y) == ([full.shape] if packs else unpacked)
        model.eval()
        with torch.no_grad():
            _, whole = model(x, y)
            assert run.loss(x, y)[1].item() == pytest.approx(whole.item(), rel=1e-5)
        model.train()
    import bench  # the bench's words for the fast path's layout
    assert bench.layout_words(run, [varied, alike]) == "packed rows in 1 of 2 batches, else 2 length groups"
    assert bench.layout_words(run, [varied]) == "packed rows"
    assert bench.layout_words(run, [alike]) == "2 length groups"




def test_packed_columns_no_span_fills_are_skipped_by_a_loss_that_skips_minus_100():
    """With ignore_index -100 (cross_entropy's default, for a model without loss_ignore_index) the columns no
    span fills, and the rows added to round R up, hold target -100: the packed batch counts exactly the
    source's targets, where a target 0 there would be a real id that the loss counts."""
    torch.manual_seed(0)
    x, y = span_batch([23, 3, 21, 5, 19, 7, 17, 9], pad=-100)
    p = pack_rows(x, y, -100, row_multiple=4)
    assert p.shape[0] == 8 and bool((p.segments < 0).all(1).any())  # 5 rows, then 3 added: unused columns and rows
    assert bool((p.y[p.segments < 0] == -100).all())
    assert int((p.y != -100).sum()) == int((y != -100).sum())
    assert sorted(p.y[p.y != -100].tolist()) == sorted(y[y != -100].tolist())


def test_spans_that_fill_a_row_exactly_share_it():
    """First fit takes a row whose free columns the span fills exactly: spans of 18 + 5 and 12 + 11 columns
    make two full rows of 23, every column in a segment (a strict fit opened a third row for 11 and 5)."""
    torch.manual_seed(0)
    x, y = span_batch([18, 12, 11, 5])
    p = pack_rows(x, y, 0)
    assert p.shape == (2, 23) and bool((p.segments >= 0).all())
    assert sorted(p.segments.max(1).values.tolist()) == [1, 1]  # two spans a row


def test_pack_true_is_refused_with_any_number_of_length_groups_asked_for():
    """Packing replaces the length groups: pack=True with 2 or more asked for by number is a ValueError,
    one group (a layout of its own, no groups) is not; an equal cost keeps a batch unpacked (packing only
    where it costs less)."""
    from submission.fastpath import packing_setting, packs_cheaper
    model = GPT(config())
    for groups in (2, 3, 8):
        with pytest.raises(ValueError, match=f"pack needs no length groups \\({groups} asked for\\)"):
            packing_setting(TrainerConfig(pack=True, length_groups=groups), model)
    assert packing_setting(TrainerConfig(pack=True, length_groups=1), model) is True
    for shape in ((16, 40), (1, 127), (128, 114)):
        assert not packs_cheaper(shape, [shape])  # the same forward: nothing saved
    assert packs_cheaper((15, 40), [(16, 40)]) and not packs_cheaper((17, 40), [(16, 40)])


def padded_data(n=24, width=23, vocab=20):
    g = torch.Generator().manual_seed(3)
    x = torch.randint(1, vocab, (n, width), generator=g)
    y = torch.randint(1, vocab, (n, width), generator=g)
    for i in range(n):
        y[i, 4 + i % 9:] = 0  # finetuning-like rows: PAD targets after the answer
    return TensorDataset(x, y)


def train_params(synth, fast, fast_trainer=True, **conf):
    """Params after a short run: `fast` picks the attention path, `fast_trainer` the trainer's
    (False: the course's loop, TrainerConfig(fast=False))."""
    torch.manual_seed(0)
    model = GPT(config(synthesizer=synth))
    set_fast_attention(model, fast)
    tconf = dict(max_epochs=2, batch_size=8, learning_rate=1e-2, lr_decay=True, warmup_tokens=200,
                 final_tokens=2000, num_threads=1, fast=fast_trainer)
    tconf.update(conf)
    trainer = Trainer(model, padded_data(), None, TrainerConfig(**tconf))
    trainer.train()
    return model.state_dict(), trainer.tokens


@pytest.mark.parametrize("pack", [False, True])
@pytest.mark.parametrize("synth", [False, True])
def test_fast_training_ends_at_the_reference_params(synth, pack):
    """In float64, as the length groups' test below: in float32 the padding trim's other GEMM sizes sum in
    another order, and AdamW amplifies that where gradients are near zero, by a CPU's own amount (the
    synthesizer moved up to 4e-4 on a 2-core AMD EPYC, within 1e-4 on an Intel Xeon). With the padding
    trim (the default for these 8-row batches) and packed."""
    torch.set_default_dtype(torch.float64)
    try:
        ref, ref_tokens = train_params(synth, fast=False, fast_trainer=False)
        fast, fast_tokens = train_params(synth, fast=True, pack=pack)  # trim or packing, fused AdamW, fast attention
    finally:
        torch.set_default_dtype(torch.float32)
    assert fast_tokens == ref_tokens == 2 * 24 * 23  # the course's count, untrimmed
    assert all(p.dtype == torch.float64 for p in ref.values() if p.is_floating_point())
    for name, p in ref.items():
        assert torch.allclose(fast[name], p, atol=1e-10, rtol=0), name
    start = GPT(config(synthesizer=synth)).state_dict()
    assert max((ref[n] - start[n]).abs().max().item() for n in ref if n.endswith("weight")) > 1e-2


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("pack", [False, True])
@pytest.mark.parametrize("synth", [False, True])
def test_fast_training_on_cuda_ends_at_the_reference_params(synth, pack, monkeypatch):
    """On a GPU, in float64 (TF32 rounds only float32): the fast path there (fused AdamW, the trim, the
    fused attention kernel, pinned non-blocking copies; packed rows when asked) against the course's
    loop on the same GPU."""
    monkeypatch.setenv("GPT_DEVICE", "cuda")  # conftest keeps the rest of the suite on the CPU
    torch.set_default_dtype(torch.float64)
    try:
        ref, ref_tokens = train_params(synth, fast=False, fast_trainer=False)
        fast, fast_tokens = train_params(synth, fast=True, pack=pack)
    finally:
        torch.set_default_dtype(torch.float32)
    assert fast_tokens == ref_tokens == 2 * 24 * 23
    assert all(p.device.type == "cuda" for p in fast.values())
    for name, p in ref.items():
        assert torch.allclose(fast[name], p, atol=1e-9, rtol=0), name


@pytest.mark.parametrize("synth", [False, True])
def test_length_grouped_training_ends_at_the_reference_params(synth):
    """In float64, so that the comparison is of the mathematics: in float32 the groups' other order of
    summation, amplified by AdamW where gradients are near zero, moved some params by up to 3e-4."""
    torch.set_default_dtype(torch.float64)
    try:
        ref, ref_tokens = train_params(synth, fast=False, fast_trainer=False)
        grouped, grouped_tokens = train_params(synth, fast=True, length_groups=3)  # 8-row batches in 3 groups
    finally:
        torch.set_default_dtype(torch.float32)
    assert grouped_tokens == ref_tokens == 2 * 24 * 23
    assert all(p.dtype == torch.float64 for p in ref.values() if p.is_floating_point())
    for name, p in ref.items():
        assert torch.allclose(grouped[name], p, atol=1e-10, rtol=0), name


@ONE_DYNAMIC_GRAPH
def test_a_compiled_run_compiles_one_graph_for_all_its_batch_shapes():
    """Trimmed batches of 16, 8 and 23 columns, and a last batch of 4 rows: one graph (torch.compile's
    dynamic=True). Under dynamo's automatic dynamic shapes it compiled three: the first width, then any
    width, then also fewer rows (a minute or more of compiling on a GPU, trainer.py). (A first batch with as
    many rows as columns would add one: dynamo's "duck sizing" then gives both one symbol; the course's
    batches of 128 and 256 rows never have as many columns.)"""
    pytest.importorskip("torch._dynamo")
    from torch._dynamo.utils import counters
    g = torch.Generator().manual_seed(5)
    x = torch.randint(1, 20, (20, 23), generator=g)
    y = torch.randint(1, 20, (20, 23), generator=g)
    for i, last in enumerate([15] * 8 + [6] * 8 + [23] * 4):  # each batch of 8 rows ends at its own column
        y[i, last - i % 3:] = 0
    torch._dynamo.reset()
    counters.clear()
    torch.manual_seed(0)
    model = GPT(config())
    tconf = TrainerConfig(max_epochs=1, batch_size=8, num_threads=1, compile="eager")
    run = Trainer(model, TensorDataset(x, y), None, tconf).prepare()
    assert [run.shapes(x[i:i + 8], y[i:i + 8]) for i in (0, 8, 16)] == [[(8, 16)], [(8, 8)], [(4, 23)]]
    for i in (0, 8, 16):
        run.step(x[i:i + 8], y[i:i + 8])
    assert counters["stats"]["unique_graphs"] == 1
    torch._dynamo.reset()
    counters.clear()
    tconf.pack = True  # packed batches of other row counts and widths: one graph too
    run = Trainer(GPT(config()), TensorDataset(x, y), None, tconf).prepare()
    # rows and widths rounded up to 8: spans of 13-15 one a row, of 4-6 four a row, of 21-23 one a row
    assert [run.shapes(x[i:i + 8], y[i:i + 8]) for i in (0, 8, 16)] == [[(8, 16)], [(8, 23)], [(8, 23)]]
    assert run.shapes(x, y) == [(16, 23)]  # 4 of 21-23, then each of 13-15 beside one of 4-6: 12 rows
    for i in (0, 8, 16):
        run.step(x[i:i + 8], y[i:i + 8])
    run.step(x, y)
    assert counters["stats"]["unique_graphs"] == 1
    torch._dynamo.reset()


def test_compiled_training_saves_raw_keys(tmp_path):
    pytest.importorskip("torch._dynamo")
    ckpt = tmp_path / "c.params"
    params, _ = train_params(False, fast=True, compile="eager", max_epochs=1, ckpt_path=str(ckpt))
    saved = torch.load(ckpt, weights_only=True)
    assert set(saved) == set(params) and not any("_orig_mod" in k or k.startswith("module.") for k in saved)
    ref, _ = train_params(False, fast=True, max_epochs=1)
    for name, p in ref.items():  # (compiled, batches are trimmed to a multiple of 8 columns)
        assert torch.allclose(params[name], p, atol=1e-4, rtol=1e-3), name


def test_thread_policy_honours_a_fixed_count(monkeypatch):
    """A count given (fixed=, GPT_NUM_THREADS) is the count, with 4 usable CPUs (GPT_NUM_THREADS is capped at the
    CPUs this process may run on: with 1, 2 reads as 1)."""
    monkeypatch.setattr("submission.threads.usable_cores", lambda: 4)
    before = torch.get_num_threads()
    try:
        assert CpuThreads(fixed=1).start() == 1 and torch.get_num_threads() == 1
        monkeypatch.setenv("GPT_NUM_THREADS", "2")
        assert CpuThreads().start() == 2 and torch.get_num_threads() == 2
        # a program's fixed= count is kept even above the cores this process may use; GPT_NUM_THREADS is capped
        # at them as it is read (2 threads pinned to 1 CPU wait for each other), as the load-following count is
        monkeypatch.setattr("submission.threads.usable_cores", lambda: 1)
        assert CpuThreads(fixed=2).start() == 2 and torch.get_num_threads() == 2
        assert CpuThreads().start() == 1 and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_thread_counts_from_the_environment(monkeypatch):
    from submission.dataset import DataError
    from submission.threads import usable_cores
    cap = usable_cores()  # (the CPUs this process may run on: its affinity)
    for value in ("abc", "0", "-1", "1.5", "\u00b2"):  # a superscript 2 is a digit to str.isdigit, not to int()
        monkeypatch.setenv("GPT_NUM_THREADS", value)
        with pytest.raises(DataError, match=r"GPT_NUM_THREADS=.* is not a thread count; set it to a whole number"):
            CpuThreads()
    monkeypatch.setenv("GPT_NUM_THREADS", "100000")  # far beyond the machine: its CPUs
    assert CpuThreads().fixed == cap
    monkeypatch.delenv("GPT_NUM_THREADS")
    monkeypatch.setenv("OMP_NUM_THREADS", "1,2")  # OpenMP's nested form: the first level
    assert CpuThreads().fixed == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "\u00b2")  # left to torch, as any value it would not take
    assert CpuThreads().fixed is None
    monkeypatch.setenv("OMP_NUM_THREADS", "auto")  # not ours to judge: the trainer chooses
    assert CpuThreads().fixed is None
    monkeypatch.setenv("OMP_NUM_THREADS", "0")  # no count either: not one thread
    assert CpuThreads().fixed is None


def test_load_on_cpus_this_process_may_not_use_is_not_counted(tmp_path, monkeypatch):
    """A process pinned to CPUs 2 and 3 of a 4-CPU machine whose CPUs 0 and 1 are busy has both its
    cores free; the machine-wide line counted that load against it (no core free: 1 thread)."""
    from submission import threads
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 4)
    stat, own = tmp_path / "stat", tmp_path / "self-stat"
    own.write_text("1 (python) S " + " ".join(["0"] * 10) + " 7 3 " + " ".join(["0"] * 30))  # utime 7, stime 3

    def write(busy01):  # each CPU: `busy` user ticks and 100 - busy idle; CPUs 2 and 3 stay idle
        line = lambda name, busy, idle: f"{name} {busy} 0 0 {idle} 0 0 0 0 0 0"
        cpus = [line(f"cpu{i}", busy01 if i < 2 else 0, 100 - (busy01 if i < 2 else 0)) for i in range(4)]
        stat.write_text("\n".join([line("cpu", 2 * busy01, 400 - 2 * busy01)] + cpus + ["intr 1"]) + "\n")

    write(0)
    assert [threads._cpu_ticks(c, str(stat), str(own)) for c in (None, {2, 3})] == [(0, 400, 10, 4), (0, 200, 10, 2)]
    write(100)  # another job's work on CPUs 0 and 1
    assert [threads._cpu_ticks(c, str(stat), str(own)) for c in (None, {2, 3})] == [(200, 400, 10, 4), (0, 200, 10, 2)]
    policy = CpuThreads()
    policy.cores, policy.cpus = 2, {2, 3}
    assert policy._free((0, 200, 10, 2), (0, 400, 10, 2)) == 2  # CPUs 2 and 3 over the next 200 ticks: idle
    # the machine-wide reading: two of four CPUs busy, of this process's two
    assert policy._free((0, 400, 10, 4), (200, 800, 10, 4)) == 0
    # CPUs /proc/stat does not list all of (a container's virtualised /proc/stat numbers its own CPUs
    # from 0): the machine-wide line, over the 4 CPUs listed; readings over other CPU sets never compared
    assert threads._cpu_ticks({3, 7}, str(stat), str(own)) == (200, 400, 10, 4)
    assert policy._free((0, 200, 10, 2), (200, 800, 10, 4)) is None and policy._free(None, (0, 1, 0, 1)) is None
    # two readings within one tick of the clock (no ticks between them): nothing to compare, not a crash
    assert policy._free((0, 200, 10, 2), (0, 200, 10, 2)) is None


def test_time_waiting_for_the_disk_is_not_busy(tmp_path):
    """/proc/stat's idle and iowait columns are both time a CPU did no work: neither counts as busy."""
    from submission import threads
    stat, own = tmp_path / "stat", tmp_path / "self-stat"
    own.write_text("1 (python) S " + " ".join(["0"] * 10) + " 7 3 " + " ".join(["0"] * 30))  # utime 7, stime 3
    # user nice system idle iowait irq softirq steal: 40 busy of 200, 60 of them waiting for the disk
    stat.write_text("cpu 30 0 10 100 60 0 0 0 0 0\ncpu0 30 0 10 100 60 0 0 0 0 0\nintr 1\n")
    assert threads._cpu_ticks(None, str(stat), str(own)) == (40, 200, 10, 1)
    assert threads._cpu_ticks({0}, str(stat), str(own)) == (40, 200, 10, 1)


def test_thread_policy_leaves_the_cores_other_processes_use(monkeypatch):
    """4 cores; /proc/stat ticks as (all busy, all, ours): over each 100-tick window (25 a core)
    the other processes use the busy ticks that are not ours."""
    from submission import threads
    monkeypatch.delenv("GPT_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 4)
    slept = []
    monkeypatch.setattr(threads.time, "sleep", slept.append)
    before = torch.get_num_threads()
    try:
        for busy, ours, free in ((25, 0, 3),     # one core taken by another job
                                 (60, 58, 4),    # busy ticks that are ours do not count (2 left: noise)
                                 (37.5, 0, 2),   # 1.5 cores taken: the shared core is not free
                                 (100, 0, 1)):   # all taken: still one thread
            ticks = iter([(0, 0, 0, 4), (busy, 100, ours, 4)])
            monkeypatch.setattr(threads, "_cpu_ticks", lambda cpus: next(ticks))
            policy = CpuThreads()
            policy.cores, policy.cpus = 4, None  # the machine's 4 CPUs
            assert policy.start() == free == torch.get_num_threads(), (busy, ours)
            assert slept.pop() == 0.1 and not slept  # the first count's window: ticks 0.1 s apart
        # update() re-reads only after `every` seconds, then follows the load
        ticks = iter([(0, 0, 0, 4), (0, 100, 0, 4), (50, 200, 0, 4), None, (50, 300, 0, 4)])
        monkeypatch.setattr(threads, "_cpu_ticks", lambda cpus: next(ticks))
        policy = CpuThreads(every=10.0)
        policy.cores, policy.cpus = 4, None
        assert policy.start() == 4 and policy.update() == 4  # too soon: the ticks are not read
        policy._when -= 10.0
        assert policy.update() == 2  # the last 100 ticks: two cores busy elsewhere
        assert policy.used == {4, 2} and policy.describe().startswith("2 to 4 CPU threads")
        policy._when -= 10.0
        assert policy.update() == 2 and policy._last == (50, 200, 0, 4)  # /proc/stat unreadable: count stays
        assert policy.update() == 2  # ... and is tried again after `every` seconds, not at the next step
        policy._when -= 10.0
        assert policy.update() == 4  # readable again: the 100 ticks since the last reading, all free
        assert CpuThreads(fixed=1).describe() == f"{torch.get_num_threads()} CPU thread(s)"  # none set yet
    finally:
        torch.set_num_threads(before)


# ----------------------------------------------------------------------------- cached decoding

@pytest.mark.parametrize("synth", [False, True])
@pytest.mark.parametrize("fast", [False, True])
def test_prefill_and_decode_equal_full_forwards(synth, fast):
    torch.manual_seed(0)
    m = scrambled(GPT(config(synthesizer=synth)), std=0.2).eval()
    set_fast_attention(m, fast)
    x = torch.randint(0, 20, (3, 9))
    caches = _new_caches(m, 3, 20)
    with torch.no_grad():
        logits = _prefill(m, x, caches)
        for step in range(8):
            full = m(x)[0][:, -1, :]
            assert torch.allclose(logits, full, atol=1e-5, rtol=1e-4), step
            nxt = torch.randint(0, 20, (3, 1))
            x = torch.cat([x, nxt], 1)
            pos = torch.full((3,), x.size(1) - 1, dtype=torch.long)
            logits = _decode(m, nxt, caches, pos, x.size(1))


@pytest.mark.parametrize("synth", [False, True])
@pytest.mark.parametrize("fast", [False, True])
def test_prefill_of_the_shortest_prompts_equals_full_forwards(synth, fast):
    """Prompts of 1, 2 and 3 positions (a one-character question and its MASK is 2): every layer but the last
    prefills all positions, causally however few there are; the next-token logits are a full forward's."""
    torch.manual_seed(0)
    m = scrambled(GPT(config(synthesizer=synth, n_layer=3)), std=0.2).eval()
    set_fast_attention(m, fast)
    with torch.no_grad():
        for t in (1, 2, 3):
            x = torch.randint(0, 20, (3, t))
            logits = _prefill(m, x, _new_caches(m, 3, 8))
            assert torch.allclose(logits, m(x)[0][:, -1, :], atol=1e-5, rtol=1e-4), t


@pytest.mark.parametrize("synth", [False, True])
def test_prefill_runs_the_last_blocks_mlp_for_the_last_position_only(synth):
    """_prefill's last block computes its attention output and MLP for the prompt's last position alone (the
    others reach no logits); with every position computed the logits were the same, and every test passed."""
    torch.manual_seed(0)
    m = scrambled(GPT(config(synthesizer=synth, n_layer=2)), std=0.2).eval()
    widths = {i: [] for i in range(2)}
    for i, block in enumerate(m.blocks):
        block.mlp.register_forward_hook(lambda mod, inp, out, i=i: widths[i].append(inp[0].size(1)))
    x = torch.randint(0, 20, (3, 7))
    with torch.no_grad():
        logits = _prefill(m, x, _new_caches(m, 3, 8))
    assert widths == {0: [7], 1: [1]}
    assert torch.allclose(logits, m(x)[0][:, -1, :], atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("fast", [True, False])
def test_decode_rows_at_different_positions(fast):
    """Rows of one decode batch at their own positions equal each row decoded alone, on both paths: the
    reference path decodes run.py --reference_eval's batches (each row's own mask, not the first row's for all;
    the synthesizer's reference decode shared row 0's mask and no other test saw it)."""
    torch.manual_seed(0)
    for synth in (False, True):
        m = set_fast_attention(scrambled(GPT(config(synthesizer=synth)), std=0.2).eval(), fast)
        prompts = [torch.randint(0, 20, (1, n)) for n in (4, 7, 5)]
        nxt = torch.randint(0, 20, (3, 1))
        caches = _new_caches(m, 3, 12)
        with torch.no_grad():
            for i, p in enumerate(prompts):
                _prefill(m, p, [{k: v[i:i + 1] for k, v in c.items()} for c in caches])
            pos = torch.tensor([p.size(1) for p in prompts])
            got = _decode(m, nxt, caches, pos, int(pos.max()) + 1)
            for i, p in enumerate(prompts):
                want = m(torch.cat([p, nxt[i:i + 1]], 1))[0][:, -1, :]
                assert torch.allclose(got[i:i + 1], want, atol=1e-5, rtol=1e-4), (synth, i)


@pytest.mark.parametrize("synth", [False, True])
def test_sample_cached_equals_sample(synth):
    torch.manual_seed(0)
    m = scrambled(GPT(config(synthesizer=synth)), std=0.2).eval()
    x = torch.randint(0, 20, (3, 5))
    # greedy, within the block and beyond it: 5 + 30 positions crop to the last 24 (23: the synthesizer)
    for steps in (1, 10, 18, 30):
        assert torch.equal(sample_cached(m, x, steps), sample(m, x, steps)), steps
    assert torch.equal(sample_cached(m, x, 10, temperature=0.7, top_k=3), sample(m, x, 10, temperature=0.7, top_k=3))
    torch.manual_seed(1)
    a = sample_cached(m, x, 12, sample=True, top_k=5)
    torch.manual_seed(1)
    b = sample(m, x, 12, sample=True, top_k=5)
    assert torch.equal(a, b)
    # beyond the block, each step reads the last positions the model takes: block_size, and one less for
    # the synthesizer, whose w2 covers block_size - 1 (the course's crop to block_size made it raise)
    keep = m.get_block_size() - (1 if synth else 0)
    y = x
    for _ in range(30):
        y = torch.cat([y, m(y[:, -keep:])[0][:, -1, :].argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(sample(m, x, 30), y)


def test_top_k_logits_keeps_the_k_largest():
    """top_k_logits keeps the k largest logits, the k-th included, and sets the rest to -inf."""
    inf = float("inf")
    logits = torch.tensor([[1.0, 4.0, 2.0, 3.0], [0.5, -1.0, 2.5, 0.0]])
    assert torch.equal(top_k_logits(logits, 2), torch.tensor([[-inf, 4.0, -inf, 3.0], [0.5, -inf, 2.5, -inf]]))
    assert torch.equal(top_k_logits(logits, 1), torch.tensor([[-inf, 4.0, -inf, -inf], [-inf, -inf, 2.5, -inf]]))
    assert torch.equal(top_k_logits(logits, 4), logits)
    before = logits.clone()
    kept = top_k_logits(logits, 1)
    assert torch.equal(logits, before) and kept.data_ptr() != logits.data_ptr()  # a new tensor, the input as it was


@pytest.mark.parametrize("synth", [False, True])
def test_sampling_draws_from_the_softmax_of_the_top_k_logits_over_the_temperature(synth, monkeypatch):
    """sample and sample_cached hand torch.multinomial softmax(top-k of logits / temperature): the
    temperature divides (not multiplies) and the k-th largest logit stays in."""
    torch.manual_seed(0)
    m = scrambled(GPT(config(synthesizer=synth)), std=0.2).eval()
    x = torch.randint(0, 20, (3, 6))
    drawn = []

    def multinomial(probs, num_samples):  # records the distribution, draws its most likely id
        drawn.append(probs.clone())
        return probs.argmax(-1, keepdim=True)

    monkeypatch.setattr(torch, "multinomial", multinomial)
    with torch.no_grad():
        scaled = m(x)[0][:, -1, :] / 0.5
    kth = scaled.topk(3, dim=-1).values[:, -1:]
    want = torch.softmax(scaled.masked_fill(scaled < kth, float("-inf")), dim=-1)
    for decode in (sample, sample_cached):
        drawn.clear()
        decode(m, x, 1, temperature=0.5, sample=True, top_k=3)
        assert len(drawn) == 1 and ((drawn[0] > 0).sum(-1) == 3).all(), decode.__name__
        assert torch.allclose(drawn[0], want, atol=1e-6), decode.__name__


@pytest.mark.parametrize("synth", [False, True])
def test_sample_beyond_the_block_forwards_the_last_positions(synth, monkeypatch):
    """Past the block, each step of `sample` forwards the sequence's last longest_input positions (block_size,
    one less for the synthesizer), not its first: a spy on the model's forward sees every call's input."""
    torch.manual_seed(0)
    m = scrambled(GPT(config(synthesizer=synth)), std=0.2).eval()
    keep = 23 if synth else 24  # config's block_size is 24: the course's crop, less one for the synthesizer
    assert longest_input(m) == keep
    x = torch.randint(0, 20, (2, 5))
    seen = []
    forward = m.forward

    def spy(idx, targets=None):
        seen.append(idx.clone())
        return forward(idx, targets)

    monkeypatch.setattr(m, "forward", spy)
    steps = 30
    out = sample(m, x, steps)
    assert len(seen) == steps
    for k, idx in enumerate(seen):
        assert torch.equal(idx, out[:, :5 + k][:, -keep:]), k


@pytest.mark.parametrize("synth", [False, True])
def test_sample_cached_equals_sample_for_prompts_that_fill_the_cache(synth):
    """A prompt as long as the cache holds (longest_input: block_size, one less for the synthesizer), or
    one position shorter, decodes from the cache as `sample` does (and one a block long through `sample`)."""
    torch.manual_seed(0)
    m = scrambled(GPT(config(synthesizer=synth)), std=0.2).eval()
    limit = longest_input(m)
    for t in sorted({limit - 1, limit, m.get_block_size()}):
        x = torch.randint(0, 20, (2, t))
        for steps in (1, 2, 5):
            assert torch.equal(sample_cached(m, x, steps), sample(m, x, steps)), (t, steps)


def greedy_alone(model, prompt, steps):
    """The course's greedy `sample` of one prompt (an id list) alone: its `steps` new ids."""
    return sample(model, torch.tensor([prompt]), steps)[0, len(prompt):].tolist()


def cut_at(ids, stop_id):
    return ids[:ids.index(stop_id) + 1] if stop_id in ids else ids


def far_apart_stops(synth, lengths, steps=14, distinct=5):
    """(model, prompts, stop id, continuations): a scrambled model, prompts of `lengths` and a stop id at whose
    first appearance the prompts' greedy continuations (alone, cut after it) end many steps apart, some in
    their first two steps, some after eight or never; from the first seed that gives such rows."""
    for seed in range(20):
        torch.manual_seed(seed)
        m = scrambled(GPT(config(synthesizer=synth)), std=0.3).eval()
        prompts = [torch.randint(0, 20, (n,)).tolist() for n in lengths]
        alone = [greedy_alone(m, p, steps) for p in prompts]
        for stop_id in range(20):
            want = [cut_at(a, stop_id) for a in alone]
            ends = [len(w) for w in want]
            if len(set(ends)) >= distinct and min(ends) <= 2 and max(ends) >= 8:
                return m, prompts, stop_id, want
    raise AssertionError("no seed gives rows that stop far apart")


@pytest.mark.parametrize("synth", [False, True])
def test_greedy_cached_rows_stopping_far_apart_keep_their_own_continuations(synth):
    """The cached batch decoder drops stopped rows from the batch (once a quarter of it has stopped): each
    prompt must keep its own continuation, cut after its first stop id, when rows stop many steps apart."""
    m, prompts, stop_id, want = far_apart_stops(synth, (3, 3, 4, 5, 5, 6, 7, 8, 8, 9))  # sorted by length
    with torch.no_grad():
        assert _greedy_cached(m, prompts, 14, stop_id, "cpu") == want


@pytest.mark.parametrize("synth", [False, True])
def test_greedy_cached_computes_only_the_rows_still_going_once_a_quarter_has_stopped(synth, monkeypatch):
    """The cached batch decoder drops its stopped rows from the batch once a quarter of it has stopped (not
    at the end, not one row at a time): a spy on each decode step sees the batch shrink to the rows still going
    exactly when the rows stopped so far reach a quarter of the batch, and the continuations stay each row's own."""
    import submission.decoding as decoding
    m, prompts, stop_id, want = far_apart_stops(synth, (3, 3, 4, 5, 5, 6, 7, 8, 8, 9))
    steps, sizes, expected, size = 14, [], [], len(prompts)
    for k in range(steps - 1):  # the batch each decode step after step k computes
        going = sum(not (w[-1] == stop_id and len(w) <= k + 1) for w in want)
        if going == 0:
            break
        size = going if going <= 0.75 * size else size
        expected.append(size)
    real = decoding._decode
    monkeypatch.setattr(decoding, "_decode",
                        lambda model, idx, *a: (sizes.append(idx.size(0)), real(model, idx, *a))[1])
    with torch.no_grad():
        assert _greedy_cached(m, prompts, steps, stop_id, "cpu") == want
    assert sizes == expected and min(sizes) < len(prompts)


@pytest.mark.parametrize("synth", [False, True])
def test_greedy_full_runs_until_every_row_has_stopped(synth):
    """The recomputing batch decoder runs until every row has produced the stop id, not until the first
    has: each row, cut after its first stop id, is its greedy continuation alone."""
    m, prompts, stop_id, want = far_apart_stops(synth, [6] * 10, distinct=4)
    with torch.no_grad():
        got = _greedy_full(m, torch.tensor(prompts), 14, stop_id)
    assert [cut_at(g, stop_id) for g in got] == want


def letter_vocab():
    """(chars, stoi, itos) of the 20-id models here: PAD, MASK and the letters a to r."""
    chars = [PAD_CHAR, MASK_CHAR] + [chr(ord("a") + i) for i in range(18)]
    return chars, {c: i for i, c in enumerate(chars)}, dict(enumerate(chars))


def all_stop_apart(synth, rows=6, length=5, steps=14):
    """(model, prompts, stop id, their greedy continuations alone): a stop id that every row's continuation
    produces before its last step, rows stopping at 3 or more different steps; from the first seed that gives one."""
    for seed in range(20):
        torch.manual_seed(seed)
        m = scrambled(GPT(config(synthesizer=synth)), std=0.3).eval()
        prompts = torch.randint(0, 20, (rows, length)).tolist()
        alone = [greedy_alone(m, p, steps) for p in prompts]
        for stop_id in range(20):
            ends = [a.index(stop_id) + 1 if stop_id in a else steps for a in alone]
            if max(ends) < steps and len(set(ends)) >= 3:
                return m, prompts, stop_id, alone
    raise AssertionError("no seed gives rows that all stop, at different steps")


@pytest.mark.parametrize("synth", [False, True])
def test_greedy_full_stops_at_the_step_the_last_row_stops(synth, monkeypatch):
    """The recomputing decoder stops as soon as every row has produced the stop id, whichever step each did
    it at: one full forward a step up to the last row's stop, not `steps` of them."""
    m, prompts, stop_id, alone = all_stop_apart(synth)
    last = max(a.index(stop_id) + 1 for a in alone)
    calls = []
    forward = m.forward
    monkeypatch.setattr(m, "forward", lambda idx, targets=None: (calls.append(idx.size(1)), forward(idx, targets))[1])
    with torch.no_grad():
        got = _greedy_full(m, torch.tensor(prompts), 14, stop_id)
    assert last < 14 and len(calls) == last
    assert got == [a[:last] for a in alone]


@pytest.mark.parametrize("synth", [False, True])
def test_questions_that_fit_decode_from_the_cache(synth, monkeypatch):
    """predict_places and sample_cached decode a GPT from its key/value cache (the prompt once, then one
    position a step), never by the full forward of `sample`; a model without cache-capable attention
    decodes through full forwards, with the same results."""
    torch.manual_seed(0)
    _, stoi, itos = letter_vocab()
    m = scrambled(GPT(config(synthesizer=synth)), std=0.2).eval()
    questions = ["abc", "hello", "dig", "kilojam"]
    x = torch.randint(0, 20, (2, 5))
    reference = predict_places_reference(m, questions, stoi, itos, steps=8)
    want = sample(m, x, 8)
    calls = []
    forward = m.forward
    monkeypatch.setattr(m, "forward", lambda idx, targets=None: (calls.append(idx.size(1)), forward(idx, targets))[1])
    assert predict_places(m, questions, stoi, itos, steps=8) == reference
    assert torch.equal(sample_cached(m, x, 8), want)
    assert calls == []
    monkeypatch.delattr(type(m.blocks[0].attn), "prefill")  # attention without a cache: every step a full forward
    assert torch.equal(sample_cached(m, x, 8), want) and len(calls) == 8


def own_forwards(synth):
    """(name, model) for models of `synth`'s variant whose forward is not the package's: an attention subclass
    that triples its output, blocks of a post-LN subclass, and a GPT subclass whose logits are negated."""
    from submission.model import Block

    class TripledAttention(type(GPT(config(synthesizer=synth)).blocks[0].attn)):
        def forward(self, x, *args, **kwargs):
            return 3 * super().forward(x, *args, **kwargs)

    class PostLNBlock(Block):
        def forward(self, x, packed=None):
            x = self.ln1(x + self.attn(x))
            return self.ln2(x + self.mlp(x))

    class NegatedGPT(GPT):
        def forward(self, idx, targets=None, positions=None, segments=None):
            logits, loss = super().forward(idx, targets, positions, segments)
            return -logits, loss

    for name, cls, swap in (("attention", GPT, lambda b: setattr(b.attn, "__class__", TripledAttention)),
                            ("block", GPT, lambda b: setattr(b, "__class__", PostLNBlock)),
                            ("gpt", NegatedGPT, lambda b: None)):
        torch.manual_seed(0)
        m = scrambled(cls(config(synthesizer=synth)), std=0.3).eval()
        for block in m.blocks:
            swap(block)
        yield name, m


@pytest.mark.parametrize("synth", [False, True])
def test_a_model_whose_forward_is_its_own_decodes_through_that_forward(synth):
    """The cache's steps compute the package's forwards (GPT's, Block's, the attention's): a model with a forward
    of its own (a student's attention subclass, a post-LN block, a GPT subclass) decodes through `sample`'s full
    forward, so the batched answers, sample_cached and log_probs are its own: the course's loop's, sample's and
    the full batch's. They were the inherited steps' (a student's attention was never run by evaluation)."""
    from submission.decoding import log_probs, log_probs_full
    _, stoi, itos = letter_vocab()
    questions = ["abc", "hello", "dig", "kilojam"]
    x = torch.randint(0, 20, (2, 5), generator=torch.Generator().manual_seed(1))
    prompt, conts = [3, 4, 5], [[6, 7], [8], [9, 10, 11]]
    for name, m in own_forwards(synth):
        assert torch.allclose(log_probs(m, prompt, conts), log_probs_full(m, prompt, conts), atol=1e-5), name
        want = predict_places_reference(m, questions, stoi, itos, steps=8)
        assert predict_places(m, questions, stoi, itos, steps=8) == want, name
        assert torch.equal(sample_cached(m, x, 8), sample(m, x, 8)), name


@pytest.mark.parametrize("synth", [False, True])
def test_answers_keep_the_spaces_the_model_writes_around_them(synth):
    """An answer is the text between the first and second MASK exactly as the course's loop cuts it: a space the
    model writes before or after the place stays (evaluate_places then counts it wrong, as the course's does),
    neither stripped nor dropped by the batched decoders. The id of the first character some question is answered
    with is written as a space, so that answer starts with one."""
    torch.manual_seed(0)
    _, stoi, itos = letter_vocab()
    m = scrambled(GPT(config(synthesizer=synth)), std=0.2).eval()
    questions = ["abc", "hello", "dig", "kilojam", "fed"]
    first = next(a for a in predict_places_reference(m, questions, stoi, itos, steps=8) if a)[0]
    itos[stoi[first]] = " "  # written as a space (the prompts still read it as the letter)
    reference = predict_places_reference(m, questions, stoi, itos, steps=8)
    assert any(a.startswith(" ") for a in reference), reference
    assert predict_places(m, questions, stoi, itos, steps=8) == reference
    assert predict_places_recompute(m, questions, stoi, itos, steps=8) == reference


@pytest.mark.parametrize("synth", [False, True])
def test_decoding_turns_dropout_off(synth):
    """A model left in training mode (as Trainer.train leaves it) decodes as in eval mode: sample,
    sample_cached and predict_places set eval mode themselves, as the course's sample does."""
    torch.manual_seed(0)
    _, stoi, itos = letter_vocab()
    m = scrambled(GPT(config(synthesizer=synth, attn_pdrop=0.5, resid_pdrop=0.5, embd_pdrop=0.5)), std=0.2).eval()
    questions = ["abc", "hello", "dig", "kilojam"]
    x = torch.randint(0, 20, (3, 5))
    want = [sample(m, x, 10), predict_places_reference(m, questions, stoi, itos, steps=8)]
    decodes = [lambda: sample(m, x, 10), lambda: sample_cached(m, x, 10),
               lambda: predict_places(m, questions, stoi, itos, steps=8),
               lambda: predict_places_recompute(m, questions, stoi, itos, steps=8),
               lambda: predict_places_reference(m, questions, stoi, itos, steps=8)]
    for i, decode in enumerate(decodes):
        m.train()
        got = decode()
        assert (torch.equal(got, want[0]) if i < 2 else got == want[1]), i


@pytest.mark.parametrize("synth", [False, True])
def test_no_steps_decode_nothing(synth):
    """steps=0: sample_cached returns the prompt as `sample` does, and every answer is empty."""
    torch.manual_seed(0)
    _, stoi, itos = letter_vocab()
    m = scrambled(GPT(config(synthesizer=synth)), std=0.2).eval()
    x = torch.randint(0, 20, (2, 5))
    assert torch.equal(sample_cached(m, x, 0), x) and torch.equal(sample(m, x, 0), x)
    questions = ["abc", "hello"]
    assert predict_places(m, questions, stoi, itos, steps=0) == ["", ""]
    assert predict_places_recompute(m, questions, stoi, itos, steps=0) == ["", ""]


@pytest.mark.parametrize("synth", [False, True])
def test_the_predictors_decode_the_courses_32_steps_by_default(synth):
    """Without `steps` each predictor decodes the course's 32 new ids (`sample(model, x, 32)`): a model that
    never closes its answer writes 32 characters for each question, from the cache (a block of 48 holds a
    question of 3 and its MASK with 32 new ids) and beyond it (a block of 24 does not)."""
    _, stoi, itos = letter_vocab()
    questions = ["abc", "dig"]
    for block in (48, 24):
        torch.manual_seed(0)
        m = GPT(GPTConfig(20, block, n_layer=1, n_head=2, n_embd=16, synthesizer=synth))
        m = never_emits(scrambled(m, std=0.2), stoi[MASK_CHAR]).eval()
        for predict in (predict_places, predict_places_recompute, predict_places_reference):
            assert [len(a) for a in predict(m, questions, stoi, itos)] == [32, 32], (block, predict.__name__)


def never_emits(model, token):
    """`model` with its logit for `token` 100 below what it was: feature 0 of the final LayerNorm is made
    a constant 1, read by the head for `token` alone, with weight -100. Its greedy decoding never picks it."""
    with torch.no_grad():
        model.ln_f.weight[0], model.ln_f.bias[0] = 0.0, 1.0
        model.head.weight[:, 0] = 0.0
        model.head.weight[token, 0] = -100.0
    return model


@pytest.mark.parametrize("synth", [False, True])
def test_predict_places_at_the_edge_of_the_cache(synth):
    """A question whose prompt (question + MASK) and `steps` new ids just fill the cache decodes from it;
    one a position longer is too long for the cache and decodes by recomputation. With a model that never
    closes its answer (every row decodes all `steps`), both equal the course's loop and nothing raises."""
    torch.manual_seed(0)
    chars, stoi, itos = letter_vocab()
    m = never_emits(scrambled(GPT(config(synthesizer=synth)), std=0.2), stoi[MASK_CHAR]).eval()
    limit, steps = longest_input(m), 6
    # prompt lengths limit - steps .. limit - steps + 3 (the prompt is the question and its MASK)
    lengths = [n for n in range(limit - steps - 1, limit - steps + 3) for _ in range(2)]
    questions = ["".join(chars[int(i)] for i in torch.randint(2, 20, (n,))) for n in lengths]
    reference = predict_places_reference(m, questions, stoi, itos, steps=steps)
    assert all(len(a) == steps for a in reference)  # no answer closed early
    for batch_size in (512, 3):
        assert predict_places(m, questions, stoi, itos, steps=steps, batch_size=batch_size) == reference
    assert predict_places_recompute(m, questions, stoi, itos, steps=steps) == reference


@pytest.mark.parametrize("synth", [False, True])
def test_a_question_that_just_fills_the_cache_decodes_from_it(synth, monkeypatch):
    """The route at the cache's edge: a prompt (question + MASK) whose `steps` new ids just fill the cache
    (len + steps - 1 = longest_input) decodes from it with no full forward; one a position longer takes its
    last step alone from a full forward of the block's last ids, as `sample` crops them (every step was one)."""
    torch.manual_seed(0)
    chars, stoi, itos = letter_vocab()
    m = never_emits(scrambled(GPT(config(synthesizer=synth)), std=0.2), stoi[MASK_CHAR]).eval()
    limit, steps = longest_input(m), 6
    fits = "".join(chars[int(i)] for i in torch.randint(2, 20, (limit - steps,)))  # its prompt: limit - steps + 1
    calls = []
    forward = m.forward
    monkeypatch.setattr(m, "forward", lambda idx, targets=None: (calls.append(idx.size(1)), forward(idx, targets))[1])
    predict_places(m, [fits], stoi, itos, steps=steps)
    assert calls == []
    predict_places(m, [fits + "a"], stoi, itos, steps=steps)
    assert calls == [limit]


@pytest.mark.parametrize("synth", [False, True])
def test_caches_are_zeroed_so_uninitialised_memory_cannot_leak_into_decoding(synth, monkeypatch):
    """Cache positions a row has not reached are masked out of its softmax, but 0 * NaN is NaN: the caches
    must be zeroed, not left uninitialised. Uninitialised memory is made NaN here (new_empty, torch.empty
    and torch.empty_like fill with NaN), and rows decoding at different positions stay finite and exact."""
    def nan_filled(make):
        def allocate(*args, **kwargs):
            out = make(*args, **kwargs)
            return out.fill_(float("nan")) if out.is_floating_point() else out
        return allocate

    monkeypatch.setattr(torch.Tensor, "new_empty", nan_filled(torch.Tensor.new_empty))
    monkeypatch.setattr(torch, "empty", nan_filled(torch.empty))
    monkeypatch.setattr(torch, "empty_like", nan_filled(torch.empty_like))
    assert torch.zeros(2).new_empty(3).isnan().all()  # the patch is in force
    torch.manual_seed(0)
    m = scrambled(GPT(config(synthesizer=synth)), std=0.2).eval()
    caches = _new_caches(m, 3, 12)
    assert all(bool((buf == 0).all()) for cache in caches for buf in cache.values())
    prompts = [torch.randint(0, 20, (1, n)) for n in (4, 7, 5)]
    nxt = torch.randint(0, 20, (3, 1))
    with torch.no_grad():
        for i, p in enumerate(prompts):
            _prefill(m, p, [{k: v[i:i + 1] for k, v in c.items()} for c in caches])
        pos = torch.tensor([p.size(1) for p in prompts])
        got = _decode(m, nxt, caches, pos, int(pos.max()) + 1)
        assert torch.isfinite(got).all()
        for i, p in enumerate(prompts):
            want = m(torch.cat([p, nxt[i:i + 1]], 1))[0][:, -1, :]
            assert torch.allclose(got[i:i + 1], want, atol=1e-5, rtol=1e-4), i
        ids = [p[0].tolist() for p in sorted(prompts, key=lambda p: p.size(1))]
        assert _greedy_cached(m, ids, 8, 20, "cpu") == [greedy_alone(m, p, 8) for p in ids]  # 20: no stop


PLACES = ["Oslo", "Lima", "Quito", "Accra", "Hanoi", "Perth", "Tunis", "Riga"]
NAMES = ["Ana", "Bo", "Cy", "Dee", "Eli", "Fay", "Gus", "Hal", "Ivy", "Jo", "Kai", "Lu", "Max", "Ned",
         "Ola", "Pia", "Quin", "Rosalind", "Sam", "Theodora"]


@pytest.fixture(scope="module", params=["vanilla", "synthesizer"])
def trained(request):
    torch.manual_seed(0)
    rows = [(f"Where was {n} born?", PLACES[i % len(PLACES)]) for i, n in enumerate(NAMES)]
    wiki = "\n".join(f"{n}. Born in {p}." for (q, p), n in zip(rows, NAMES)) + "\nWhere was it born?\n"
    pre = CharCorruptionDataset(wiki, 64)
    data = NameDataset("".join(f"{q}\t{p}\n" for q, p in rows), pre)
    model = GPT(GPTConfig(pre.vocab_size, 64, n_layer=2, n_head=2, n_embd=32,
                          synthesizer=request.param == "synthesizer"))
    Trainer(model, data, None, TrainerConfig(max_epochs=40, batch_size=4, learning_rate=3e-3, num_threads=1)).train()
    return model.eval(), pre, rows


def one_at_a_time(model, pre, q, steps=32):
    x = torch.tensor([pre.stoi[c] for c in q + MASK_CHAR], dtype=torch.long)[None, ...]
    completion = "".join(pre.itos[int(i)] for i in sample(model, x, steps, sample=False)[0])
    return completion.split(MASK_CHAR)[1]


def test_predict_places_equals_the_courses_loop(trained):
    model, pre, rows = trained
    questions = [q for q, _ in rows] + ["Where was Bo born?", "Where was Theodora born?", "Where was it born?"]
    # too long for the cache with 32 steps (the completion would outgrow the 64-position block)
    questions.append("Where was Ana Bo Cy Dee Eli Fay Gus Hal born?")
    reference = [one_at_a_time(model, pre, q) for q in questions]
    for batch_size in (512, 5, 1):
        assert predict_places(model, questions, pre.stoi, pre.itos, batch_size=batch_size) == reference, batch_size
    assert predict_places_recompute(model, questions, pre.stoi, pre.itos, batch_size=4) == reference
    assert predict_places_reference(model, questions, pre.stoi, pre.itos) == reference
    assert sum(a == p for a, (_, p) in zip(reference, rows)) >= len(rows) // 2  # the model learnt something
    # rows stopped early: answers end at their MASK long before 32 steps
    assert all(len(a) < 12 for a in reference[:len(rows)])


def test_questions_that_outgrow_the_block_decode_from_the_cache_then_as_sample_does(trained, monkeypatch):
    """A question whose 32 steps outgrow the block decoded every step with a full forward from its prompt (46 times
    the time at 100 characters with the course's block). Now its steps come from the cache while `sample`'s input
    fits, then from full forwards of the last block, rows of every prompt length together: the answers are the
    course's loop's still. A fresh model writes no MASK, so every row runs its 32 steps past the block."""
    from submission import decoding
    model, pre, _ = trained
    torch.manual_seed(1)
    synth = isinstance(model.blocks[0].attn, attention_module.SynthesizerAttention)
    fresh = GPT(GPTConfig(pre.vocab_size, 64, n_layer=2, n_head=2, n_embd=32, synthesizer=synth)).eval()
    limit = decoding.longest_input(fresh)  # 64, the synthesizer's 63
    words = "Ana Bo Cy Dee Eli Fay Gus Hal Ivy Jo Kai Lu Max Ned Ola".split()
    questions = [f"Where was {' '.join(words[:k])} born?" for k in range(5, 13)]  # 34 to 59 characters
    questions += ["Where was Bo born?", questions[0]]  # one that fits the cache's 32 steps, and a repeat
    assert any(len(q) + 1 + 31 > limit >= len(q) + 1 for q in questions)
    reference = [one_at_a_time(fresh, pre, q) for q in questions]
    widths = []
    real = decoding._greedy_full
    monkeypatch.setattr(decoding, "_greedy_full", lambda m, x, steps, stop: (widths.append(x.size(1)),
                                                                             real(m, x, steps, stop))[1])
    for batch_size in (512, 3):
        widths.clear()
        assert predict_places(fresh, questions, pre.stoi, pre.itos, batch_size=batch_size) == reference, batch_size
        assert widths and set(widths) == {limit + 1}  # never a full forward from a prompt
    assert predict_places(model, questions, pre.stoi, pre.itos) == [one_at_a_time(model, pre, q) for q in questions]


def test_predict_places_short_budgets(trained):
    model, pre, rows = trained
    questions = [q for q, _ in rows[:6]]
    for steps in (1, 3):
        got = predict_places(model, questions, pre.stoi, pre.itos, steps=steps)
        assert got == [one_at_a_time(model, pre, q, steps) for q in questions]


# ----------------------------------------------------------------------------- the benchmark runs

def test_bench_prints_its_summary(tmp_path, capsys):
    # a smoke run on a small generated world: no speed is asserted here, only the report's shape
    import bench
    import make_world
    make_world.write_world(make_world.build_world(people=60, train=40, dev=12, seed=3), str(tmp_path))
    before = torch.get_num_threads()
    try:
        bench.main(["--quick", "--data-dir", str(tmp_path), "--batch", "4", "--rounds", "1",
                    "--ref-questions", "3", "--threads", "1"])
    finally:
        torch.set_num_threads(before)
    out = capsys.readouterr().out
    summary = dict(line.split(": ", 1) for line in out.split("== summary ==")[1].strip().splitlines())
    for key in ("train_speedup_vanilla", "train_speedup_synthesizer", "eval_speedup", "mfu",
                "train_tokens_per_s_vanilla_reference", "train_tokens_per_s_vanilla_fast", "eval_seconds_reference",
                "eval_seconds_batched", "hardware", "commit"):
        assert key in summary, key
    num = {k: float(v) for k, v in summary.items() if k.startswith(("train_", "eval_s", "mfu", "model_", "peak_"))}
    for variant in ("vanilla", "synthesizer"):  # each ratio is the ratio of the figures printed beside it
        ratio = num[f"train_tokens_per_s_{variant}_fast"] / num[f"train_tokens_per_s_{variant}_reference"]
        assert num[f"train_speedup_{variant}"] == pytest.approx(ratio, rel=0.01)
    # (the printed seconds are rounded to 2 and 3 decimals, TFLOP/s to 4: tolerances cover that)
    assert num["eval_speedup"] == pytest.approx(num["eval_seconds_reference"] / num["eval_seconds_batched"], rel=0.05)
    assert num["mfu"] == pytest.approx(num["model_tflops_per_s"] / num["peak_tflops_per_s"], rel=0.05, abs=1e-3)
    assert summary["eval_identical"] == "3/3" and summary["eval answers identical"] == "met"
    assert summary["eval_questions"] == "12" and summary["eval_model"] == "vanilla untrained"


def test_bench_scales_its_timings_and_checks_each_target_against_its_own_figure(tmp_path, capsys, monkeypatch):
    """With the timings stubbed every figure of the summary is known: vanilla trains 1.125x faster than the
    reference (>= 1.1x, the CPU's target), the synthesizer 1.05x (not); the reference decodes 3 of the 12
    questions, spread over the set, in 0.625 s, scaled to 2.5 s for all 12, against 0.125 s batched: exactly the
    20x target; one of its answers differs, so the answers are not identical."""
    import bench
    import make_world
    make_world.write_world(make_world.build_world(people=60, train=40, dev=12, seed=3), str(tmp_path))
    medians = iter([{"reference": 0.45, "fast attention only": 0.5, "fast, no length groups": 0.3},
                    {"reference": 0.42}])  # vanilla, then synthesizer; every other path 0.4 s a step
    def time_steps(runs, batches, *a, **k):  # each path's median, and one timed round of it
        m = next(medians, {})
        times = {n: m.get(n, 0.4) for n in runs}
        return bench.StepTimes(times, {n: [(batches[1:2], t)] for n, t in times.items()})
    monkeypatch.setattr(bench, "time_steps", time_steps)
    monkeypatch.setattr(bench, "cpu_has_bf16", lambda: False)
    last, seen = [], {}

    def answers(model, questions, *args, reference=False, **kwargs):  # the timed call's questions kept, by path
        path = "reference" if reference else "batched"
        last.append(path)
        seen[path] = list(questions)
        got = real_answers(model, questions, *args, reference=reference, **kwargs)
        return ["(not the batched answer)"] + got[1:] if reference else got

    def clock(fn, device):
        last.clear()
        out = fn()
        return {"batched": 0.125, "reference": 0.625}.get(last[0] if last else None, 0.01), out

    real_answers = bench.answer_questions
    monkeypatch.setattr(bench, "answer_questions", answers)
    monkeypatch.setattr(bench, "clock", clock)
    before = torch.get_num_threads()
    try:
        bench.main(["--data-dir", str(tmp_path), "--batch", "4", "--rounds", "1", "--ref-questions", "3",
                    "--threads", "1"])
    finally:
        torch.set_num_threads(before)
    out = capsys.readouterr().out
    summary = dict(line.split(": ", 1) for line in out.split("== summary ==")[1].strip().splitlines())
    tokens = 4 * (bench.BLOCK - 1)  # the course's tokens of a batch of 4
    assert (summary["train_speedup_vanilla"], summary["train_speedup_synthesizer"]) == ("1.125", "1.05")
    assert summary["train_tokens_per_s_vanilla_reference"] == str(round(tokens / 0.45))
    assert summary["train_tokens_per_s_vanilla_fast"] == str(round(tokens / 0.4))
    assert summary["train_tokens_per_s_vanilla_fast_no_length_groups"] == str(round(tokens / 0.3))
    assert summary["train_speedup_vanilla_attention_only"] == "0.9"
    assert summary["train_speedup_vanilla_no_groups"] == "1.5"
    assert seen["reference"] == [seen["batched"][i] for i in (0, 4, 8)] and len(seen["batched"]) == 12
    assert (summary["eval_seconds_reference"], summary["eval_seconds_batched"]) == ("2.5", "0.125")
    assert (summary["eval_speedup"], summary["eval_identical"]) == ("20.0", "2/3")
    assert summary["target train >= 1.1x (vanilla)"] == "met"
    assert summary["target train >= 1.1x (synthesizer)"] == "NOT met"
    assert summary["target eval >= 20x"] == "met" and summary["eval answers identical"] == "NOT met"


@pytest.mark.parametrize("flags, batch, steps, decoded, rows", [
    (["--quick"], 32, 3, 16, {"reference", "fast"}),
    (["--quick", "--ref-questions", "0"], 32, 3, 20, {"reference", "fast"}),  # 0: every question
    ([], 128, 5, 20, {"reference", "fast attention only", "fast", "fast, no length groups", "fast, packed"})])
def test_bench_quick_sets_its_own_batch_rounds_reference_questions_and_paths(tmp_path, capsys, monkeypatch, flags,
                                                                             batch, steps, decoded, rows):
    """Without --batch, --rounds or --ref-questions, --quick times batches of 32 (the course's 128 without it)
    for 3 steps (5), decodes 16 questions one at a time (100, here all 20 of the world) and leaves out the slow
    paths: `./run.sh bench --quick` is the run of under a minute that README promises. The timings are
    stubbed; what is checked is what the bench was asked to time. The world has 60 biographies, fewer than a
    batch of 128: the data timing takes its batch round them, as the timed batches do (it indexed past them,
    an IndexError after every timing was done)."""
    import bench
    import make_world
    make_world.write_world(make_world.build_world(people=60, train=30, dev=20, seed=3), str(tmp_path))
    made, timed, asked = [], [], []
    real_batches = bench.pretrain_batches

    def batches(dataset, size, count):
        made.append((size, count))
        return real_batches(dataset, size, count)

    def time_steps(runs, batches, rounds, device, block=1):
        timed.append((set(runs), rounds))
        return bench.StepTimes({n: 0.4 for n in runs}, {n: [(batches[1:2], 0.4)] for n in runs})

    def answers(path):
        return lambda model, questions, *args, reference=False, **kwargs: (
            asked.append((path if not reference else "reference", len(questions))), [""] * len(questions))[1]

    monkeypatch.setattr(bench, "pretrain_batches", batches)
    monkeypatch.setattr(bench, "time_steps", time_steps)
    monkeypatch.setattr(bench, "cpu_has_bf16", lambda: False)
    monkeypatch.setattr(bench, "peak_flops", lambda *a, **k: 1e9)
    monkeypatch.setattr(bench, "get_device", lambda: "cpu")
    monkeypatch.setattr(bench, "answer_questions", answers("batched"))  # run.py's: batched, or the course's loop
    monkeypatch.setattr(bench, "predict_places_recompute", answers("no cache"))
    before = torch.get_num_threads()
    try:
        bench.main(flags + ["--data-dir", str(tmp_path), "--threads", "1"])
    finally:
        torch.set_num_threads(before)
    out = capsys.readouterr().out
    assert f"training batch {batch}{' (--quick)' if flags else ''}\n" in out
    assert made == [(batch, steps + 1)]  # a warm-up batch, then the timed ones
    assert timed[0] == (rows, steps) and timed[1][1] == steps
    # each path decodes a few questions untimed, then its questions timed: batched every question, one at a
    # time a spread of them (and without --quick, batched without the cache the same spread)
    warm = bench.EVAL_WARM_UP
    assert asked == [("batched", warm), ("batched", 20), ("reference", warm), ("reference", decoded)] + (
        [] if flags else [("no cache", warm), ("no cache", decoded)])
    summary = dict(line.split(": ", 1) for line in out.split("== summary ==")[1].strip().splitlines())
    assert summary["eval_identical"] == f"{decoded}/{decoded}" and summary["eval_questions"] == "20"


def test_bench_counts_the_flops_of_a_training_step():
    """Per position and layer a matmul does 2 FLOPs a weight: attention's projections (query, key, value,
    output: 4 C^2; the synthesizer's 3, its scores coming from a C x width map instead of keys), the MLP's
    8 C^2, then the scores and the weighted sum over `width` positions (2 x 2 width C); the head 2 C V once.
    Backward costs twice the forward."""
    import types
    import bench
    C, L, V, width, batch = 256, 4, 100, 64, 2
    for synthesizer, projections in ((False, 4), (True, 3)):
        cfg = types.SimpleNamespace(n_embd=C, n_layer=L, vocab_size=V, synthesizer=synthesizer)
        forward = L * (2 * (projections + 8) * C * C + 2 * 2 * width * C) + 2 * C * V
        assert bench.train_flops(cfg, batch, width) == 3 * forward * batch * width, synthesizer


@EXPLAIN_FORWARD
@pytest.mark.parametrize("synth", [False, True])
def test_forward_traces_as_one_graph(synth):
    """torch.compile's reduce-overhead mode replays CUDA graphs over what dynamo traces; a graph break
    (an in-place random_, an .item(), Python branching on a tensor) splits each step into pieces run
    eagerly in between. Both routes trace whole: the CPU fast path and, on the meta device, the route
    a GPU takes (attention_route), in training (with dropout) and in eval mode."""
    dynamo = pytest.importorskip("torch._dynamo")
    drop = dict(attn_pdrop=0.1, resid_pdrop=0.1, embd_pdrop=0.1)
    for device in ("cpu", "meta"):
        for training in (True, False):
            dynamo.reset()
            model = GPT(config(synthesizer=synth, **drop)).to(device).train(training)
            x = torch.randint(0, 20, (3, 16)).to(device)
            positions = torch.arange(16).remainder(7).expand(3, 16).to(device)  # packed: spans of 7, 7 and 2
            segments = torch.arange(16).div(7, rounding_mode="floor").expand(3, 16).to(device)
            for kwargs in ({}, dict(positions=positions, segments=segments)):
                traced = dynamo.explain(model)(x, x, **kwargs)
                assert (traced.graph_count, traced.graph_break_count) == (1, 0), \
                    (device, training, [str(r.reason).splitlines()[0] for r in traced.break_reasons])
    dynamo.reset()


def test_bench_paths_carry_their_compile_and_autocast_options():
    import bench
    from submission.dataset import CharCorruptionDataset
    pre = CharCorruptionDataset("Ada Quill was born in Lisbon.\nBo Li was born in Oslo.\n" * 4, bench.BLOCK)
    paths = [("reference", False, False), ("fast", True, True), ("fast + bf16 autocast", True, True, None, True),
             ("fast + compile", True, True, "eager")]
    runs, _ = bench.training_runs(pre, "vanilla", 4, 1, paths)
    assert [(n, r.fast, r.compiled, r.amp) for n, r in runs.items()] == [
        ("reference", False, False, False), ("fast", True, False, False), ("fast + bf16 autocast", True, False, True),
        ("fast + compile", True, True, False)]
    assert not runs["reference"].model.blocks[0].attn.fast and runs["fast"].model.blocks[0].attn.fast


def test_the_bench_names_the_rows_packing_makes_and_those_rounding_adds():
    """The bench's packed line: the mean rows and share of positions the packed run computes, and where
    the run rounds row counts up (CUDA, compiled: multiple 8), the rows before rounding beside them."""
    import bench
    from submission.batching import pack_rows
    from submission.dataset import CharCorruptionDataset
    text = "".join(f"Person {i} was born in Town {i % 7}, and lived a long life there.\n" for i in range(40))
    pre = CharCorruptionDataset(text, bench.BLOCK)
    paths = [("fast, packed", True, True, None, False, "auto", False, True)]
    run = bench.training_runs(pre, "vanilla", 32, 1, paths)[0]["fast, packed"]
    batches = bench.pretrain_batches(pre, 32, 3)
    exact = [pack_rows(x, y, run.ignore_index).shape[0] for x, y in batches]
    share = sum(r * pack_rows(x, y, run.ignore_index).shape[1] for r, (x, y) in zip(exact, batches)) / (
        3 * 32 * (bench.BLOCK - 1))
    assert bench.packed_line(run, batches) == (
        f"  packed, a batch of 32 rows is {sum(exact) / 3:.1f} rows: {share:.0%} of its positions")
    run.multiple = 8
    rounded = [-(-r // 8) * 8 for r in exact]
    assert bench.packed_line(run, batches).startswith(f"  packed, a batch of 32 rows is {sum(rounded) / 3:.1f} rows: ")
    assert bench.packed_line(run, batches).endswith(
        f" ({sum(exact) / 3:.1f} rows before rounding up to a multiple of 8)")
    assert sum(rounded) > sum(exact)  # the rounding shows


def test_the_bench_times_no_path_the_trainer_refuses():
    """Every path the bench times on CUDA passes the trainer's checks: no length groups under a compile
    mode that records CUDA graphs of its own (such rows crashed the bench on an H100); step-graph rows
    only where step graphs can run; packed rows only where packing can; the CPU's paths take no CUDA-only
    option. Each row's name says its options."""
    import bench
    from submission.fastpath import compiled_graphs_conflict, packing_setting
    model = GPT(config())
    for cuda, compiled, quick, graphs, bf16 in [(True, True, False, True, True), (True, False, False, True, False),
                                                (True, True, True, False, True), (False, False, False, False, True),
                                                (False, False, True, False, False)]:
        paths = bench.training_paths(cuda, compiled, quick, graphs, bf16)
        names = [p[0] for p in paths]
        assert names[0] == "reference" and "fast" in names and len(set(names)) == len(names)
        for name, _, fast, *options in paths:
            mode, amp, groups, step_graphs, pack = tuple(options) + (None, False, "auto", False, "auto")[len(options):]
            device = "cuda" if cuda else "cpu"
            assert compiled_graphs_conflict(groups if isinstance(groups, int) else 1, device, mode) is None, name
            assert not step_graphs or (cuda and graphs), name
            assert amp == ("bf16 autocast" in name) and (not amp or bf16), name
            conf = TrainerConfig(fast=fast, length_groups=groups, pack=pack)
            # raises where it cannot; on the CPU's fast path with its groups on "auto", the cheaper batches
            auto = "auto" if (fast and not cuda and groups == "auto" and mode is None) else False
            assert packing_setting(conf, model, step_graphs, device, mode is not None) == (
                True if "packed" in name else auto), name
            assert (mode is not None) == (compiled and name in ("fast", "fast, packed", "fast, packed + bf16 autocast")
                                          or name == "fast, step graphs + compile, 2 length groups"), name
            if "length groups" in name or "step graphs" in name:  # the rows' names say their groups
                assert groups == (2 if "2 length groups" in name else 1), name
        assert any(p[0] == "fast, step graphs + compile, 2 length groups" for p in paths) == (compiled and graphs)
        assert ("fast attention only" in names) == (not quick)
        assert ("fast, packed" in names) == (cuda or not quick)
        assert set(names) - {"reference", "fast"} <= set(bench.PATH_KEYS)  # each has its summary key
        picked = bench.picked_paths(paths, ["packed", "eager"])
        assert [p[0] for p in picked] == [n for n in names if n in ("reference", "fast", "fast, packed", "fast, eager")]
        assert bench.picked_paths(paths, None) == paths


@COMPILE_PER_BACKEND
def test_the_bench_makes_room_for_all_its_compiled_rows():
    """Each compile mode of GPT.forward is a cache entry of its own: past dynamo's recompile limit (8) a
    compiled row would run eagerly and be timed as compiled. Ten distinct backends here, each must run."""
    import bench
    import torch._dynamo as dynamo
    import torch._dynamo.config as dynamo_config
    name = "recompile_limit" if hasattr(dynamo_config, "recompile_limit") else "cache_size_limit"
    # set and restored by hand: pytest 9's monkeypatch restores an attribute missing from the object's
    # __dict__ by deleting it, which hides a torch config entry from every later compile
    old = getattr(dynamo_config, name)
    setattr(dynamo_config, name, 8)
    compiled = []

    def backend(k):
        def compile_fx(gm, example_inputs):
            compiled.append(k)
            return gm.forward
        return compile_fx

    dynamo.reset()
    try:
        bench.make_room_for_compiles(16)
        assert getattr(dynamo_config, name) == 16
        bench.make_room_for_compiles(4)  # never lowered
        assert getattr(dynamo_config, name) == 16
        model = GPT(config())
        x = torch.randint(0, 20, (2, 8))
        for k in range(10):
            torch.compile(model, backend=backend(k))(x)
    finally:
        dynamo.reset()
        setattr(dynamo_config, name, old)
    assert sorted(set(compiled)) == list(range(10))


def test_attention_route_keeps_fused_dropout_off_the_gpu():
    """SDPA's in-kernel attention dropout stalled bf16 pretraining on an H100 (attention.attention_route):
    training with attention dropout goes through the masked softmax everywhere but on the CPU."""
    from submission.attention import CausalSelfAttention, attention_route
    attn = CausalSelfAttention(GPTConfig(10, 8, n_layer=1, n_head=2, n_embd=8))
    cpu, gpu_like = torch.zeros(1, 4, 8), torch.zeros(1, 4, 8, device="meta")
    attn.train()
    assert attention_route(attn, cpu) == "explicit" and attention_route(attn, gpu_like) == "reference"
    attn.eval()
    assert attention_route(attn, cpu) == "sdpa" and attention_route(attn, gpu_like) == "sdpa"
    attn.train()
    attn.attn_drop.p = 0.0  # no attention dropout: the fused kernel trained normally
    assert attention_route(attn, gpu_like) == "sdpa"
    attn.fast = False
    assert attention_route(attn, cpu) == "reference"


def test_every_tool_under_run_cli_takes_the_thread_count_from_the_environment(monkeypatch, capsys):
    """GPT_NUM_THREADS fixed the trainer's threads only: ask, memorised and evaluation ignored it (and
    GPT_NUM_THREADS=abc there), while run.sh's help says it fixes the CPU threads."""
    import os
    from submission.cli import run_cli
    usable_cpus = os.cpu_count()
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        monkeypatch.setenv("GPT_NUM_THREADS", "1")
        seen = []
        run_cli(lambda: seen.append(torch.get_num_threads()))
        assert seen == [1]
        torch.set_num_threads(1)
        monkeypatch.setenv("GPT_NUM_THREADS", "2")
        run_cli(lambda: seen.append(torch.get_num_threads()))
        assert seen == [1, min(2, usable_cpus)]
        monkeypatch.setenv("GPT_NUM_THREADS", " ")  # set but blank, as unset: torch's own count stands
        monkeypatch.setenv("OMP_NUM_THREADS", "auto")
        run_cli(lambda: seen.append(torch.get_num_threads()))
        assert seen == [1, min(2, usable_cpus), min(2, usable_cpus)]
        seen.pop()
        monkeypatch.setenv("GPT_NUM_THREADS", "abc")
        with pytest.raises(SystemExit) as e:
            run_cli(lambda: seen.append("ran"))
        err = capsys.readouterr().err
        assert e.value.code == 2 and len(seen) == 2 and err.startswith(
            "error: GPT_NUM_THREADS='abc' is not a thread count")
        assert err.count("\n") == 1
    finally:
        torch.set_num_threads(before)


def test_the_bench_refuses_a_thread_count_torch_crashes_on(capsys):
    """`bench --threads 100000` ended in a segmentation fault (exit 139) inside torch's thread pool."""
    import os
    import bench
    with pytest.raises(SystemExit) as e:
        bench.main(["--quick", "--threads", "100000"])
    cap = 64 * (os.cpu_count() or 1)
    assert e.value.code == 2 and (f"error: --threads 100000: more than 64 a CPU ({cap} on this machine), "
                                  f"which only wait on each other") in capsys.readouterr().err

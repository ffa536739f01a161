"""Self-attention layers of the assignment's GPT.

CausalSelfAttention is minGPT's masked multi-head attention (Vaswani et al. 2017, as in
karpathy/minGPT). SynthesizerAttention is the course's dense Synthesizer (Tay et al. 2020,
"Synthesizer: Rethinking Self-Attention in Transformer Models"), handout equation (3):

    Y_i = softmax(ReLU(X A_i + b1) B_i + b2) (X V_i)

with a causal mask; as in the course's code, every head shares one B_i (w2, (hs, l)) and b2, with
l = block_size - 1. Parameter names follow the course exactly (key, query, value, proj, w1, w2,
b2, mask), so params files map one to one.

Each class has two mathematically identical paths: the explicit masked softmax (the reference,
what the handout writes) and a fast path (the default). `set_fast_attention(model, False)` (or
GPTConfig(fast_attention=False), or `layer.fast = False`) runs the reference path; `attention_paths(model,
False)` runs it within a block (run.py --reference_eval, and the bench's reference). The fast path is:
- vanilla (`attention_route`): torch's fused scaled_dot_product_attention (SDPA) without attention
  dropout (eval, prompts, dropout 0), on every device. Training with attention dropout: on CPU SDPA
  falls back to an unfused path of its own, no faster than the reference, so the fast path is
  explicit with fewer passes: scale and causal mask fused into the score product (baddbmm with an
  additive -inf bias), cheaper dropout masks, the 1/(1-p) scale on the (T, hs) output instead of
  the (T, T) weights. On a GPU it is the reference path: SDPA's fused dropout kernels stalled bf16
  pretraining (measured on an H100; see attention_route).
- synthesizer, on every device: all heads' scores in one (B*nh*T, hs) x (hs, T) matrix product
  plus one additive (T, T) bias holding b2 and the causal mask, then softmax, dropout and one
  batched product with the values. (SDPA with w2^T as the keys needs them expanded per row and
  head, and falls back to an unfused path that materialises them: slower than the reference.)
- dropout masks on CPU (`_keep_mask`, for the model's embedding and MLP dropouts too: KeepMaskDropout):
  an entry is kept when a 32-bit random word clears a threshold, half the generator work of
  nn.Dropout's float Bernoulli draw. Same distribution
  (drop probability p to within 2^-32), another random stream: training runs are not
  bit-reproducible across the two paths. Under torch.compile the mask is `torch.rand >= p`: dynamo
  cannot trace the in-place random_, and a graph break would split every step (tests/test_fast.py
  checks that the forward traces as one graph). In eval mode both paths agree within float32 rounding,
  and with the same masks in training too (tests/test_model.py, tests/test_fast.py).
On a 2-core AMD EPYC (commit c2ac9d9, docs/speed.md) these paths alone made a course-size training step about
1.2x faster than the reference's, and 3.5x with the trainer's padding trim and length groups (src/bench.py's
"fast attention only" and "fast" rows print the current numbers; the README's Speed table, later ones).
"""
import contextlib
import logging
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

logger = logging.getLogger(__name__)  # the course's module logger (it logs nothing here)


class BlockOverflow(ValueError, AssertionError):
    """A sequence longer than the model takes (GPT.forward's block, the synthesizer's block_size - 1): a
    ValueError, and an AssertionError as the course's `assert` raised, so code that catches either works
    unchanged."""


def _is_compiling_function(torch_module):
    """torch's "is torch.compile tracing this call?": torch.compiler.is_compiling from torch 2.3, before
    it torch._utils.is_compiling. Looked up once, at import: on torch 2.0-2.2 a lookup inside traced code
    breaks the graph."""
    return (getattr(getattr(torch_module, "compiler", None), "is_compiling", None)
            or getattr(getattr(torch_module, "_utils", None), "is_compiling", None) or (lambda: False))


_compiling = _is_compiling_function(torch)


def set_fast_attention(model, fast):
    """Switch every attention layer of `model`, and its KeepMaskDropouts, to the fast path (True) or the
    reference path (False)."""
    for m in model.modules():
        if isinstance(m, _SWITCHED):
            m.fast = fast
    return model


@contextlib.contextmanager
def attention_paths(model, fast):
    """Within the block every attention layer of `model` (and KeepMaskDropout) takes its fast path (True) or the
    reference path (False), as set_fast_attention sets them; after it each takes the path it took before."""
    layers = [m for m in model.modules() if isinstance(m, _SWITCHED)]
    before = [m.fast for m in layers]
    set_fast_attention(model, fast)
    try:
        yield model
    finally:
        for m, was in zip(layers, before):
            m.fast = was


def _keep_mask(shape, p, device):
    """Dropout's keep mask: each entry kept with probability 1 - p, from one 32-bit random word.

    Full-range int64 draws viewed as int32 pairs: the CPU generator fills half as many entries
    as a float Bernoulli draw needs, and a word below -2^31 + round(p * 2^32) means drop. From
    p = 1 - 2^-33 on that threshold is 2^31, above every int32 word: nothing is kept.
    """
    if _compiling():  # dynamo cannot trace random_ (a graph break); the compiler
        return torch.rand(shape, device=device) >= p  # generates its own random numbers in-kernel
    n = math.prod(shape)
    words = torch.empty((n + 1) // 2, dtype=torch.int64, device=device).random_(-2 ** 63, None)
    threshold = -2 ** 31 + round(p * 2 ** 32)
    if threshold >= 2 ** 31:  # no int32: compared, it wrapped to -2^31 and kept every entry (drawn all the same,
        return torch.zeros(shape, dtype=torch.bool, device=device)  # so later draws are as before)
    return (words.view(torch.int32)[:n] >= threshold).view(shape)  # int32 words (n,) -> bool `shape`


def _kept_scale(p):
    """Inverted dropout's scale for what is kept; p = 1 keeps nothing and scales by 0, as nn.Dropout's
    zeros (not a division by zero)."""
    return 1.0 / (1.0 - p) if p < 1 else 0.0


def _dropout(x, p):
    """Inverted dropout (training) through `_keep_mask`."""
    if p <= 0:
        return x
    return torch.where(_keep_mask(x.shape, p, x.device), x, 0.0).mul_(_kept_scale(p))


def attention_route(module, x):
    """Which path an attention layer runs on input x: "reference" (the course's masked softmax),
    "explicit" (CPU training with attention dropout: SDPA has no fused kernel there, the explicit
    fast path is faster) or "sdpa" (the rest: CausalSelfAttention's fused scaled_dot_product_attention;
    for SynthesizerAttention, whose fast path never calls SDPA, its one-product scores).

    Training with attention dropout off the CPU is "reference" (the synthesizer's fast path, which has no
    fused dropout, then drops through nn.Dropout): for CausalSelfAttention, SDPA's fused kernels with
    dropout_p > 0 under bf16 autocast stalled pretraining on an H100 (torch 2.11+cu130, course
    settings: the loss fell to 2.56 by step 500, then climbed back to 2.90 and stayed there, dev 0.0%;
    the flash and the memory-efficient kernel alike), while the masked softmax in bf16, SDPA in fp32,
    and the flash kernel without attention dropout all trained normally (about 1.8 after 1,610 steps).
    """
    if not module.fast:
        return "reference"
    if module.training and module.attn_drop.p > 0:
        return "explicit" if x.device.type == "cpu" else "reference"
    return "sdpa"


def _causal_bias(module, T, like):
    """(T, T) additive mask: 0 where position t may attend, -inf above the diagonal.

    Memoised per width, device and dtype for the module's life (under torch.compile, which folds it
    into the graph, made each time). Kept, never remade: a CUDA graph captured at one width reads
    the bias by its address (graphs.StepGraphs), so a later width must not free it. One tensor per
    width rather than views of one (block, block) tensor: baddbmm adds a contiguous bias faster (7.8
    against 8.7-10.6 ms for (512, 100, 100) scores on the 2-core CPU).
    """
    make = lambda: torch.zeros(T, T, dtype=like.dtype, device=like.device).masked_fill(  # noqa: E731
        module.mask[0, 0, :T, :T] == 0, float("-inf"))
    if _compiling():
        return make()
    key = (T, like.device, like.dtype)
    cache = module.__dict__.setdefault("_bias_cache", {})
    if key not in cache:
        cache[key] = make()
    return cache[key]


def _attend_dropout(att, v, p):
    """softmax over (B*nh, T, T) scores, dropout, times v (B, nh, T, hs); the 1/(1-p) scale on the small
    output. Returns (B, nh, T, hs)."""
    B, nh, T, hs = v.shape
    att = torch.softmax(att, dim=-1)
    att = torch.where(_keep_mask(att.shape, p, att.device), att, 0.0)
    y = torch.bmm(att, v.reshape(B * nh, T, hs))  # (B*nh, T, T) @ (B*nh, T, hs) -> (B*nh, T, hs)
    return y.mul_(_kept_scale(p)).view(B, nh, T, hs)  # (B, nh, T, hs)


def _resid_dropout(module, y):
    """The output dropout: through `_dropout` on the CPU fast path, nn.Dropout otherwise."""
    if module.fast and module.training and y.device.type == "cpu":
        return _dropout(y, module.resid_drop.p)
    return module.resid_drop(y)


class KeepMaskDropout(nn.Dropout):
    """nn.Dropout whose training forward on the CPU fast path goes through `_dropout`, as the attention layers'
    own dropouts do: the GPT's embedding dropout and each block's MLP dropout. Same p, same place in the model
    (a Dropout has nothing in a state_dict). `fast` is switched with the attention layers' (GPTConfig's
    fast_attention, set_fast_attention, attention_paths); off it, or off the CPU, this is nn.Dropout. On the
    2-core Intel Xeon (course-size steps at batch 128, side by side) a training step took 4% less time."""

    def __init__(self, p=0.5, fast=True):
        super().__init__(p)
        self.fast = fast

    def forward(self, x):
        if self.fast and self.training and x.device.type == "cpu":
            return _dropout(x, self.p)
        return super().forward(x)


class PackedAttention:
    """Where each position of a packed batch (batching.pack_rows) may attend, shared by every layer.

    `allowed` (B, 1, T, T): key position at or before the query's, in the query's segment; `hidden` its
    complement, the scores masked out; `positions` (B, T): each position's place in its own sequence
    (the synthesizer's w2 and b2 columns). Each query is allowed itself, so no softmax row is all masked.
    """

    def __init__(self, positions, segments):
        T = segments.size(1)
        same = segments.unsqueeze(2) == segments.unsqueeze(1)  # (B, T, 1) == (B, 1, T) -> (B, T, T)
        causal = torch.ones(T, T, dtype=torch.bool, device=segments.device).tril()  # (T, T)
        self.allowed = (same & causal).unsqueeze(1)  # (B, 1, T, T), broadcast over heads
        self.hidden = ~self.allowed
        self.positions = positions


def _attend_within_segments(module, att, v, packed):
    """Packed batches: softmax of scores `att` (B, nh, T, T) over each query's own segment, attention
    dropout, times v (B, nh, T, hs); returns (B, nh, T, hs)."""
    B, nh, T, hs = v.shape
    att = att.masked_fill(packed.hidden, float("-inf"))  # (B, nh, T, T)
    if attention_route(module, v) == "explicit":
        return _attend_dropout(att.view(B * nh, T, T), v, module.attn_drop.p)  # scores (B*nh, T, T) -> (B, nh, T, hs)
    return module.attn_drop(F.softmax(att, dim=-1)) @ v  # (B, nh, T, T) @ (B, nh, T, hs) -> (B, nh, T, hs)


class CausalSelfAttention(nn.Module):
    """Multi-head masked self-attention with a projection at the end."""

    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0, "n_embd must be divisible by n_head"
        self.key = nn.Linear(config.n_embd, config.n_embd)
        self.query = nn.Linear(config.n_embd, config.n_embd)
        self.value = nn.Linear(config.n_embd, config.n_embd)
        self.attn_drop = nn.Dropout(config.attn_pdrop)
        self.resid_drop = nn.Dropout(config.resid_pdrop)
        self.proj = nn.Linear(config.n_embd, config.n_embd)
        # causal mask: position t attends to positions <= t; read by the reference path and _causal_bias,
        # and a state_dict key as in the course
        self.register_buffer("mask", torch.tril(torch.ones(config.block_size, config.block_size))
                             .view(1, 1, config.block_size, config.block_size))  # (1, 1, block, block)
        self.n_head = config.n_head
        self.fast = getattr(config, "fast_attention", True)

    def forward(self, x, layer_past=None, packed=None):
        """(B, T, C) -> (B, T, C); `packed` (a PackedAttention): attend within each position's segment."""
        B, T, C = x.size()
        hs = C // self.n_head
        k = self.key(x).view(B, T, self.n_head, hs).transpose(1, 2)    # (B, nh, T, hs)
        q = self.query(x).view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        v = self.value(x).view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        route = attention_route(self, x)
        if packed is not None and route == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=packed.allowed)  # (B, nh, T, hs)
        elif packed is not None:
            att = (q * (1.0 / math.sqrt(hs))) @ k.transpose(-2, -1)  # (B, nh, T, T)
            y = _attend_within_segments(self, att, v, packed)
        elif route == "explicit":
            # scores (B*nh, T, T) = scale * q k^T + causal bias in one baddbmm; then softmax, dropout, @ v
            att = torch.baddbmm(_causal_bias(self, T, q), q.reshape(B * self.n_head, T, hs),  # (B*nh, T, hs)
                                k.reshape(B * self.n_head, T, hs).transpose(1, 2),  # (B*nh, hs, T)
                                alpha=1.0 / math.sqrt(hs))  # (B*nh, T, hs) @ (B*nh, hs, T) -> (B*nh, T, T)
            y = _attend_dropout(att, v, self.attn_drop.p)
        elif route == "sdpa":  # never with attention dropout (attention_route)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, nh, T, hs)
        else:  # the reference path, the course's code: softmax(q k^T / sqrt(hs) + causal mask) v
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (B, nh, T, T)
            att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            att = self.attn_drop(att)
            y = att @ v  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C): heads side by side
        return _resid_dropout(self, self.proj(y))

    # ---- decoding with a key/value cache (eval mode; see decoding.sample_cached and predict_places)
    def new_cache(self, batch, capacity, like):
        """Key buffer "kt" (batch, nh, hs, capacity), keys stored transposed so that a query's scores
        read them row by row (2x faster than q @ k^T over a (capacity, hs) layout on CPU), and value
        buffer "v" (batch, nh, capacity, hs); like `like`'s dtype and device, zeroed: positions a row
        has not reached are masked out, but must not hold NaN (0 * NaN is NaN)."""
        hs = self.key.out_features // self.n_head
        return {"kt": like.new_zeros((batch, self.n_head, hs, capacity)),
                "v": like.new_zeros((batch, self.n_head, capacity, hs))}

    def prefill(self, x, cache, last_only=False):
        """Eval forward of a prompt x (B, t, C) at positions 0..t-1, its keys and values cached.

        Returns (B, t, C), or (B, 1, C) for the last position alone when `last_only` (the last layer
        of a prompt feeds nothing but the next-token logits).
        """
        B, t, C = x.size()
        hs = C // self.n_head
        k = self.key(x).view(B, t, self.n_head, hs).transpose(1, 2)    # (B, nh, t, hs)
        v = self.value(x).view(B, t, self.n_head, hs).transpose(1, 2)  # (B, nh, t, hs)
        cache["kt"][:, :, :, :t] = k.transpose(-2, -1)  # (B, nh, hs, t)
        cache["v"][:, :, :t] = v
        if last_only:
            x = x[:, -1:, :]
        tq = x.size(1)
        q = self.query(x).view(B, tq, self.n_head, hs).transpose(1, 2)  # (B, nh, tq, hs)
        if self.fast:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=tq > 1)  # (B, nh, tq, hs)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (B, nh, tq, t)
            if tq > 1:
                att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(B, tq, C))  # (B, tq, C): heads side by side

    def decode(self, x, cache, pos, end):
        """Eval forward of one new position per row, x (B, 1, C), row i at position pos[i].

        Its key and value go into the cache at pos[i]; it attends to cached positions 0..pos[i].
        `end` is max(pos) + 1, passed in as a Python int (no device sync).
        """
        B, _, C = x.size()
        hs = C // self.n_head
        rows = torch.arange(B, device=x.device)
        # row b's key and value, each (B, nh, hs), go to kt[b, :, :, pos[b]] and v[b, :, pos[b]]
        cache["kt"][rows, :, :, pos] = self.key(x).view(B, self.n_head, hs)  # (B, 1, C) -> (B, nh, hs)
        cache["v"][rows, :, pos] = self.value(x).view(B, self.n_head, hs)    # (B, 1, C) -> (B, nh, hs)
        kt, v = cache["kt"][:, :, :, :end], cache["v"][:, :, :end]  # (B, nh, hs, end), (B, nh, end, hs)
        q = self.query(x).view(B, 1, self.n_head, hs).transpose(1, 2)  # (B, nh, 1, hs)
        hidden = torch.arange(end, device=x.device).view(1, end) > pos.view(B, 1)  # (1, end) > (B, 1) -> (B, end)
        hidden = hidden.view(B, 1, 1, end)  # (B, 1, 1, end): positions row b has not reached
        # one query per row: plain products beat SDPA's masked kernels here, in both paths
        att = (q @ kt) * (1.0 / math.sqrt(hs))  # (B, nh, 1, end)
        y = F.softmax(att.masked_fill(hidden, float("-inf")), dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(B, 1, C))  # (B, nh, 1, hs) -> (B, 1, C)


class SynthesizerAttention(nn.Module):
    """Dense Synthesizer: attention scores come from each position alone, no query-key product.

    w1 holds A_i and b1 for all heads; w2 holds B_i, shared across heads as in the course
    (shape (n_embd // n_head, block_size - 1)); b2 is the score bias per attended position.
    Inputs are at most block_size - 1 long (the model's inputs are x = masked_string[:-1]).
    """

    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0, "n_embd must be divisible by n_head"
        self.w1 = nn.Linear(config.n_embd, config.n_embd)
        self.w2 = nn.Parameter(torch.zeros(config.n_embd // config.n_head, config.block_size - 1))
        self.b2 = nn.Parameter(torch.zeros(config.block_size - 1))
        self.value = nn.Linear(config.n_embd, config.n_embd)
        self.attn_drop = nn.Dropout(config.attn_pdrop)
        self.resid_drop = nn.Dropout(config.resid_pdrop)
        self.proj = nn.Linear(config.n_embd, config.n_embd)
        self.register_buffer("mask", torch.tril(torch.ones(config.block_size, config.block_size))
                             .view(1, 1, config.block_size, config.block_size))  # (1, 1, block, block)
        self.n_head = config.n_head
        self.block_size = config.block_size
        self.fast = getattr(config, "fast_attention", True)
        nn.init.uniform_(self.w2, -0.001, 0.001)

    def _check_length(self, n):
        if n > self.block_size - 1:
            raise BlockOverflow(f"SynthesizerAttention takes at most block_size - 1 = "
                             f"{self.block_size - 1} positions, got {n}")

    def _scores(self, a, n_keys, bias):
        """Fast path's scores: a (B, nh, tq, hs) times w2[:, :n_keys] for all heads and rows in one
        matrix product, plus `bias` (b2 and the mask, broadcast): (B*nh, tq, n_keys)."""
        B, nh, tq, hs = a.shape
        # (B*nh*tq, hs) @ (hs, n_keys) -> (B*nh*tq, n_keys)
        scores = torch.mm(a.reshape(B * nh * tq, hs), self.w2[:, :n_keys])
        return scores.view(B * nh, tq, n_keys) + bias  # (B*nh, tq, n_keys)

    def forward(self, x, layer_past=None, packed=None):
        """(B, T, C) -> (B, T, C); `packed` (a PackedAttention): attend within each position's segment,
        key j scored by w2's and b2's column for j's place in its own sequence."""
        B, T, C = x.size()
        self._check_length(T)
        hs = C // self.n_head
        a = F.relu(self.w1(x)).view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        v = self.value(x).view(B, T, self.n_head, hs).transpose(1, 2)        # (B, nh, T, hs)
        w2 = self.w2[:, :T]  # (hs, T): scores for the first T positions only
        b2 = self.b2[:T]     # (T,)
        if packed is not None:
            # w2's and b2's columns at the keys' positions, as embedding lookups: their gradients sum in a
            # fixed order on the CPU (model.py's pos_emb lookup says why); the tables are w2.t() (l, hs) and
            # b2.view(-1, 1) (l, 1), l = block_size - 1
            w2 = F.embedding(packed.positions, self.w2.t()).transpose(1, 2).unsqueeze(1)  # (B, T, hs) -> (B, 1, hs, T)
            b2 = F.embedding(packed.positions, self.b2.view(-1, 1)).view(B, 1, 1, T)  # (B, T, 1) -> (B, 1, 1, T)
            # scores a @ w2 + b2: (B, nh, T, hs) @ (B, 1, hs, T) + (B, 1, 1, T) -> (B, nh, T, T)
            y = _attend_within_segments(self, a @ w2 + b2, v, packed)  # (B, nh, T, hs)
        elif self.fast:
            # softmax(a w2 + b2 + causal mask): one matrix product for all heads, b2 and the -inf
            # above the diagonal in one additive (T, T) bias. (SDPA with w2^T as "keys" needs them
            # expanded per row and head, and falls back to an unfused path that materialises them.)
            bias = b2.view(1, T) + _causal_bias(self, T, a)  # (1, T) + (T, T) -> (T, T): b2 and the causal mask
            att = self._scores(a, T, bias)  # (B*nh, T, T)
            if attention_route(self, x) == "explicit":
                y = _attend_dropout(att, v, self.attn_drop.p)
            else:
                att = self.attn_drop(F.softmax(att, dim=-1))
                y = torch.bmm(att, v.reshape(B * self.n_head, T, hs))  # (B*nh, T, hs)
                y = y.view(B, self.n_head, T, hs)  # (B, nh, T, hs)
        else:  # the reference path: handout eq. (3) as the course writes it
            att = a @ w2 + b2  # (B, nh, T, T)
            att = att.masked_fill(self.mask[:, :, :T, :T] == 0, -1e10)
            att = F.softmax(att, dim=-1)
            att = self.attn_drop(att)
            y = att @ v  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return _resid_dropout(self, self.proj(y))

    # ---- decoding with a value cache: scores need no keys (they come from w2)
    def new_cache(self, batch, capacity, like):
        """Zeroed value buffer (batch, nh, capacity, hs); see CausalSelfAttention.new_cache."""
        hs = self.value.out_features // self.n_head
        return {"v": like.new_zeros((batch, self.n_head, capacity, hs))}

    def _attend(self, a, v, bias, hidden):
        """softmax(a w2 + b2 [+ mask]) v for cached decoding, queries a (B, nh, tq, hs) over the values v
        (B, nh, n_keys, hs): (B, tq, C). `bias`: the fast path's b2, broadcast over its (B*nh, tq, n_keys)
        scores (the reference path adds b2 itself); `hidden` marks masked scores (broadcast)."""
        B, nh, tq, hs = a.shape
        n_keys = v.size(2)
        if self.fast:
            att = F.softmax(self._scores(a, n_keys, bias.masked_fill(hidden, float("-inf"))), dim=-1)
            y = torch.bmm(att, v.reshape(B * nh, n_keys, hs)).view(B, nh, tq, hs)  # (B, nh, tq, hs)
        else:
            att = (a @ self.w2[:, :n_keys] + self.b2[:n_keys]).masked_fill(hidden, -1e10)
            y = F.softmax(att, dim=-1) @ v
        return y.transpose(1, 2).reshape(B, tq, nh * hs)  # (B, tq, C)

    def prefill(self, x, cache, last_only=False):
        """Eval forward of a prompt x (B, t, C) at positions 0..t-1; see CausalSelfAttention.prefill."""
        B, t, C = x.size()
        self._check_length(t)
        hs = C // self.n_head
        cache["v"][:, :, :t] = self.value(x).view(B, t, self.n_head, hs).transpose(1, 2)  # (B, nh, t, hs)
        if last_only:
            x = x[:, -1:, :]
        tq = x.size(1)
        a = F.relu(self.w1(x)).view(B, tq, self.n_head, hs).transpose(1, 2)  # (B, nh, tq, hs)
        hidden = (self.mask[0, 0, :t, :t] == 0)[-tq:]  # (tq, t): nothing hidden for the last row
        bias = self.b2[:t].view(1, t)  # (1, t), broadcast over the (tq, t) scores
        return self.proj(self._attend(a, cache["v"][:, :, :t], bias, hidden))

    def decode(self, x, cache, pos, end):
        """Eval forward of one new position per row at positions pos; see CausalSelfAttention.decode."""
        B, _, C = x.size()
        hs = C // self.n_head
        self._check_length(end)
        rows = torch.arange(B, device=x.device)
        cache["v"][rows, :, pos] = self.value(x).view(B, self.n_head, hs)  # (B, nh, hs) into v[b, :, pos[b]]
        a = F.relu(self.w1(x)).view(B, 1, self.n_head, hs).transpose(1, 2)  # (B, nh, 1, hs)
        hidden = torch.arange(end, device=x.device).view(1, end) > pos.view(B, 1)  # (B, end)
        if self.fast:
            # b2 (end,) and hidden (B, end) as one row for each of _scores' (B*nh, 1, end) score rows
            bias = (self.b2[:end].view(1, 1, end).expand(B, self.n_head, end)
                    .reshape(B * self.n_head, 1, end))  # (B*nh, 1, end)
            hidden = (hidden.view(B, 1, 1, end).expand(B, self.n_head, 1, end)
                      .reshape(B * self.n_head, 1, end))  # (B*nh, 1, end)
        else:
            bias, hidden = None, hidden.view(B, 1, 1, end)  # (B, 1, 1, end)
        return self.proj(self._attend(a, cache["v"][:, :, :end], bias, hidden))


_SWITCHED = (CausalSelfAttention, SynthesizerAttention, KeepMaskDropout)  # what set_fast_attention switches

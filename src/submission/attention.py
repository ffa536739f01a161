"""Self-attention layers of the assignment's GPT.

CausalSelfAttention is minGPT's masked multi-head attention (Vaswani et al. 2017, as in
karpathy/minGPT). SynthesizerAttention is the course's dense Synthesizer (Tay et al. 2020,
"Synthesizer: Rethinking Self-Attention in Transformer Models"), handout equation (3):

    Y_i = softmax(ReLU(X A_i + b1) B_i + b2) (X V_i)

with a causal mask. Parameter names follow the course exactly (key, query, value, proj, w1, w2,
b2, mask), so params files map one to one.

Each class has two mathematically identical paths: the explicit masked softmax (the reference,
what the handout writes) and torch's fused scaled_dot_product_attention (the default, faster).
Set `module.fast = False` (or GPTConfig(fast_attention=False)) to run the reference path.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


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
        # causal mask: position t attends to positions <= t (kept as a buffer for state_dict parity)
        self.register_buffer("mask", torch.tril(torch.ones(config.block_size, config.block_size))
                             .view(1, 1, config.block_size, config.block_size))
        self.n_head = config.n_head
        self.fast = getattr(config, "fast_attention", True)

    def forward(self, x, layer_past=None):
        B, T, C = x.size()
        hs = C // self.n_head
        k = self.key(x).view(B, T, self.n_head, hs).transpose(1, 2)    # (B, nh, T, hs)
        q = self.query(x).view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        v = self.value(x).view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        if self.fast:
            p = self.attn_drop.p if self.training else 0.0
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)  # (B, nh, T, hs)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (B, nh, T, T)
            att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            att = self.attn_drop(att)
            y = att @ v  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C): heads side by side
        return self.resid_drop(self.proj(y))


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
                             .view(1, 1, config.block_size, config.block_size))
        self.n_head = config.n_head
        self.block_size = config.block_size
        self.fast = getattr(config, "fast_attention", True)
        nn.init.uniform_(self.w2, -0.001, 0.001)

    def forward(self, x, layer_past=None):
        B, T, C = x.size()
        if T > self.block_size - 1:
            raise ValueError(f"SynthesizerAttention takes at most block_size - 1 = "
                             f"{self.block_size - 1} positions, got {T}")
        hs = C // self.n_head
        a = F.relu(self.w1(x)).view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        v = self.value(x).view(B, T, self.n_head, hs).transpose(1, 2)        # (B, nh, T, hs)
        w2 = self.w2[:, :T]  # (hs, T): scores for the first T positions only
        b2 = self.b2[:T]     # (T,)
        if self.fast:
            # softmax(a @ w2 + b2) is SDPA with "keys" w2^T, scale 1 and an additive bias b2 per
            # attended column; the causal -inf goes into the same additive mask.
            bias = b2.view(1, 1, 1, T).masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))  # (1, 1, T, T)
            p = self.attn_drop.p if self.training else 0.0
            k = w2.t().expand(B, self.n_head, T, hs)  # (B, nh, T, hs)
            y = F.scaled_dot_product_attention(a, k, v, attn_mask=bias.to(a.dtype), dropout_p=p, scale=1.0)
        else:
            att = a @ w2 + b2  # (B, nh, T, T)
            att = att.masked_fill(self.mask[:, :, :T, :T] == 0, -1e10)
            att = F.softmax(att, dim=-1)
            att = self.attn_drop(att)
            y = att @ v  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.resid_drop(self.proj(y))

"""The assignment's GPT: the Transformer (Vaswani et al. 2017) as a small decoder-only language model
(GPT, Radford et al. 2018), following karpathy/minGPT as forked by CS224N/XCS224N Assignment 5.

Token and learned position embeddings, a stack of pre-LayerNorm blocks (attention, then a 4x MLP
with GELU; the LayerNorm before each sublayer and a final one as in GPT-2, Radford et al. 2019) and a
bias-free head. Module and parameter names are the course's
(tok_emb, pos_emb, drop, blocks, ln_f, head; ln1, ln2, attn, mlp), so params files are
interchangeable with the course's.
"""
import inspect

import torch
import torch.nn as nn
import torch.nn.functional as F

from .attention import BlockOverflow, CausalSelfAttention, KeepMaskDropout, PackedAttention, SynthesizerAttention


class GPTConfig:
    """Model settings; any keyword becomes an attribute (n_layer, n_head, n_embd, synthesizer, ...)."""
    embd_pdrop = 0.1
    resid_pdrop = 0.1
    attn_pdrop = 0.1
    synthesizer = False
    fast_attention = True  # attention.py's fast paths (SDPA, or fewer explicit passes); False: the reference softmax

    def __init__(self, vocab_size, block_size, **kwargs):
        self.vocab_size = vocab_size
        self.block_size = block_size
        for k, v in kwargs.items():
            setattr(self, k, v)


class GPT1Config(GPTConfig):
    """GPT-1 size: 12 layers, 12 heads, 768 dimensions."""
    n_layer = 12
    n_head = 12
    n_embd = 768


class Block(nn.Module):
    """Pre-LN Transformer block: x + attn(ln1(x)), then x + mlp(ln2(x))."""

    def __init__(self, config):
        super().__init__()
        self.ln1 = nn.LayerNorm(config.n_embd)
        self.ln2 = nn.LayerNorm(config.n_embd)
        self.attn = SynthesizerAttention(config) if config.synthesizer else CausalSelfAttention(config)
        self.mlp = nn.Sequential(
            nn.Linear(config.n_embd, 4 * config.n_embd),
            nn.GELU(),
            nn.Linear(4 * config.n_embd, config.n_embd),
            KeepMaskDropout(config.resid_pdrop, fast=getattr(config, "fast_attention", True)),
        )

    def forward(self, x, packed=None):
        # `packed` is passed only when there is one: an attention module of the course's signature,
        # forward(x, layer_past=None), swapped in by a program or a test, still runs
        h = self.ln1(x)
        x = x + (self.attn(h) if packed is None else self.attn(h, packed=packed))
        x = x + self.mlp(self.ln2(x))
        return x


def _takes_packed(module):
    """Whether `module`'s forward takes a `packed` argument (a PackedAttention)."""
    return module is not None and "packed" in inspect.signature(module.forward).parameters


class GPT(nn.Module):
    """The full language model, with a context of block_size characters."""

    loss_ignore_index = 0  # the target id the loss skips (PAD): the Trainer's fast path trims it

    @property
    def packs_rows(self):
        """Whether forward can take positions and segments, so the Trainer may pack rows (batching.pack_rows):
        the model's own forward takes `positions` and `segments`, and every block and its attention take
        `packed`. This module's do; a subclass whose forward has the course's signature, forward(idx,
        targets=None), or a block or an attention of the course's signature, forward(x, layer_past=None),
        swapped in by a program or a grader's test, does not, and its model trains unpacked (by default on
        the CPU the Trainer packs the batches where that is cheaper)."""
        own = inspect.signature(self.forward).parameters
        if "positions" not in own or "segments" not in own:
            return False
        return all(_takes_packed(block) and _takes_packed(getattr(block, "attn", None)) for block in self.blocks)

    def __init__(self, config):
        super().__init__()
        self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd)
        self.pos_emb = nn.Parameter(torch.zeros(1, config.block_size, config.n_embd))
        self.drop = KeepMaskDropout(config.embd_pdrop, fast=getattr(config, "fast_attention", True))
        self.blocks = nn.Sequential(*[Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.block_size = config.block_size
        self.config = config
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)

    def get_block_size(self):
        return self.block_size

    def forward(self, idx, targets=None, positions=None, segments=None):
        """Logits (b, t, vocab) and the mean loss over targets other than PAD (None without targets).

        Beyond the course, for packed training batches (batching.pack_rows): `positions` (b, t) gives each
        position's place in its own sequence, and `segments` (b, t) which sequence of the row it belongs to;
        a position then attends only to earlier positions of its segment, so each sequence computes what it
        would alone in a row of its own.
        """
        b, t = idx.size()
        if t > self.block_size:
            raise BlockOverflow(f"Cannot forward a sequence of {t} tokens: the block size is {self.block_size}")
        if (positions is None) != (segments is None):
            raise ValueError("positions and segments describe a packed batch together (batching.pack_rows): "
                             "give both or neither")
        token_embeddings = self.tok_emb(idx)            # (b, t, n_embd)
        if positions is None:
            position_embeddings = self.pos_emb[:, :t, :]    # (1, t, n_embd)
            packed = None
        else:
            # each position's own place, as an embedding lookup: its gradient sums in a fixed order on the CPU,
            # where indexing's (pos_emb[0][positions]) sums in the order threads reach it, and varied run to run
            position_embeddings = F.embedding(positions, self.pos_emb[0])  # (b, t, n_embd)
            packed = PackedAttention(positions, segments)
        x = self.drop(token_embeddings + position_embeddings)
        if packed is None:
            x = self.blocks(x)
        else:
            for block in self.blocks:
                x = block(x, packed=packed)
        x = self.ln_f(x)
        logits = self.head(x)                           # (b, t, vocab_size)
        loss = None
        if targets is not None:
            # PAD (id 0) targets carry no loss; a subclass's loss_ignore_index None counts every target (-100 is
            # cross_entropy's own default). reshape, not view: targets sliced from a batch (ids[:, 1:]) are not
            # contiguous
            skipped = -100 if self.loss_ignore_index is None else self.loss_ignore_index
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1),  # (b*t, vocab), (b*t,)
                                   ignore_index=skipped)
        return logits, loss


class CustomLayerNorm(nn.Module):
    """The course's model.py ends with this empty placeholder class (`pass`); kept under its name, so that a
    program importing it (`from model import GPT, GPTConfig, GPT1Config, Block, CustomLayerNorm`) runs unchanged."""
    pass

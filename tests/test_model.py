"""Model and attention: the course's API, parameter counts, causality, the synthesizer equation,
fast-path parity and an overfit batch.

Run:  python -m pytest -q tests/test_model.py
"""
import math

import pytest
import torch
import torch.nn.functional as F

import submission
from submission import GPT, GPTConfig, SynthesizerAttention
from submission.attention import set_fast_attention


def small_config(**kw):
    base = dict(n_layer=2, n_head=2, n_embd=16, attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0)
    base.update(kw)
    return GPTConfig(20, 16, **base)


def test_exports():
    for name in ["GPT", "GPTConfig", "NameDataset", "CharCorruptionDataset", "Trainer", "TrainerConfig",
                 "evaluate_places", "sample", "initialize_vanilla_model", "initialize_synthesizer_model",
                 "finetune", "pretrain", "train", "SynthesizerAttention", "CausalSelfAttention"]:
        assert hasattr(submission, name), name
    # the course's call signatures, so code written against its API runs unchanged (what is added has a default)
    import inspect
    course = {"initialize_vanilla_model": "(mconf)", "initialize_synthesizer_model": "(mconf)",
              "finetune": "(reading_params_path, finetune_corpus_path, pretrain_dataset, block_size, model)",
              "pretrain": "(pretrain_dataset, block_size, model)",
              "train": "(model, writing_params_path, trainer_obj, *, describe=None)",  # describe: run.py's card
              "sample": "(model, x, steps, temperature=1.0, sample=False, top_k=None)",
              "evaluate_places": "(filepath, predicted_places)",
              "NameDataset": "(data, pretraining_dataset, path='<finetune corpus>')",
              "Trainer": "(model, train_dataset, test_dataset, config)"}
    for name, sig in course.items():
        target = getattr(submission, name)
        if inspect.isclass(target):  # its __init__ less self (Python 3.8 reads a Dataset's as Generic's)
            init = inspect.signature(target.__init__)
            assert str(init.replace(parameters=list(init.parameters.values())[1:])) == sig, name
        else:
            assert str(inspect.signature(target)) == sig, name


def test_config_defaults():
    c = GPTConfig(10, 8, n_layer=1)
    assert (c.vocab_size, c.block_size, c.n_layer) == (10, 8, 1)
    assert c.embd_pdrop == c.resid_pdrop == c.attn_pdrop == 0.1 and c.synthesizer is False
    g = submission.model.GPT1Config(10, 8)
    assert (g.n_layer, g.n_head, g.n_embd) == (12, 12, 768)


def test_the_course_modules_names_are_there():
    """Every module-level name of the course's model.py, attention.py and trainer.py that a program may import
    or reach: its model.py ends with an empty `class CustomLayerNorm(nn.Module): pass`, which CS224N programs
    import (`from model import GPT, GPTConfig, GPT1Config, Block, CustomLayerNorm`: an ImportError here), and
    attention.py and trainer.py each have a module `logger`."""
    import logging
    from submission import attention, trainer
    from submission.model import Block, CustomLayerNorm, GPT1Config
    assert issubclass(CustomLayerNorm, torch.nn.Module) and list(CustomLayerNorm().parameters()) == []
    assert issubclass(Block, torch.nn.Module) and (GPT1Config.n_layer, GPT1Config.n_head, GPT1Config.n_embd) == \
        (12, 12, 768)
    for module in (attention, trainer):
        assert isinstance(module.logger, logging.Logger) and module.logger.name == module.__name__


@pytest.mark.parametrize("synth,count", [(False, 3_323_392), (True, 3_076_988)])
def test_parameter_counts_course_size(synth, count):
    m = GPT(GPTConfig(256, 128, n_layer=4, n_head=8, n_embd=256, synthesizer=synth))
    assert sum(p.numel() for p in m.parameters()) == count


def test_state_dict_keys_are_the_courses():
    v = GPT(small_config(n_layer=1)).state_dict()
    assert list(v) == ["pos_emb", "tok_emb.weight", "blocks.0.ln1.weight", "blocks.0.ln1.bias",
                       "blocks.0.ln2.weight", "blocks.0.ln2.bias", "blocks.0.attn.mask",
                       "blocks.0.attn.key.weight", "blocks.0.attn.key.bias", "blocks.0.attn.query.weight",
                       "blocks.0.attn.query.bias", "blocks.0.attn.value.weight", "blocks.0.attn.value.bias",
                       "blocks.0.attn.proj.weight", "blocks.0.attn.proj.bias", "blocks.0.mlp.0.weight",
                       "blocks.0.mlp.0.bias", "blocks.0.mlp.2.weight", "blocks.0.mlp.2.bias",
                       "ln_f.weight", "ln_f.bias", "head.weight"]
    s = GPT(small_config(n_layer=1, synthesizer=True)).state_dict()
    assert [k for k in s if ".attn." in k] == [
        "blocks.0.attn.w2", "blocks.0.attn.b2", "blocks.0.attn.mask", "blocks.0.attn.w1.weight",
        "blocks.0.attn.w1.bias", "blocks.0.attn.value.weight", "blocks.0.attn.value.bias",
        "blocks.0.attn.proj.weight", "blocks.0.attn.proj.bias"]
    assert s["blocks.0.attn.w2"].shape == (8, 15) and s["blocks.0.attn.b2"].shape == (15,)


@pytest.mark.parametrize("synth", [False, True])
def test_each_initialize_builds_its_variant_whatever_the_config_held(synth):
    """initialize_vanilla_model and initialize_synthesizer_model set the config's synthesizer flag, not
    only read it: one GPTConfig passed to both (a notebook's, a grader's) builds each variant as asked."""
    config = small_config(n_layer=2, synthesizer=not synth)
    build = submission.initialize_synthesizer_model if synth else submission.initialize_vanilla_model
    model = build(config)
    wanted = SynthesizerAttention if synth else submission.CausalSelfAttention
    assert config.synthesizer is synth and all(type(b.attn) is wanted for b in model.blocks)
    assert ("blocks.1.attn.w2" if synth else "blocks.1.attn.key.weight") in model.state_dict()


def test_initialisation():
    torch.manual_seed(0)
    m = GPT(GPTConfig(256, 128, n_layer=2, n_head=8, n_embd=256))
    assert torch.all(m.pos_emb == 0)
    assert abs(m.head.weight.std().item() - 0.02) < 0.002
    assert torch.all(m.blocks[0].attn.key.bias == 0) and torch.all(m.ln_f.weight == 1)
    s = SynthesizerAttention(small_config())
    assert s.w2.abs().max() <= 0.001 and torch.all(s.b2 == 0)


def test_synthesizer_w2_is_drawn_uniformly_within_a_thousandth():
    """The course's init: w2 ~ U(-0.001, 0.001), not zeros (with which every head starts out attending evenly)."""
    torch.manual_seed(0)
    w2 = SynthesizerAttention(GPTConfig(10, 129, n_embd=256, n_head=8)).w2  # (32, 128): 4096 draws
    assert 0.00099 < w2.abs().max().item() <= 0.001
    assert abs(w2.std().item() - 0.001 / 3 ** 0.5) < 3e-5 and abs(w2.mean().item()) < 3e-5


def test_loss_ignores_pad():
    torch.manual_seed(0)
    m = GPT(small_config()).eval()
    x = torch.randint(0, 20, (2, 10))
    y = torch.randint(1, 20, (2, 10))
    y[:, 5:] = 0
    logits, loss = m(x, y)
    ref = F.cross_entropy(logits[:, :5].reshape(-1, 20), y[:, :5].reshape(-1))
    assert torch.allclose(loss, ref)


def test_inputs_and_targets_sliced_from_one_batch():
    """x = ids[:, :-1], y = ids[:, 1:], the usual way to make targets, are views that are not contiguous."""
    torch.manual_seed(0)
    m = GPT(small_config()).eval()
    ids = torch.randint(1, 20, (3, 11))
    x, y = ids[:, :-1], ids[:, 1:]
    assert not y.is_contiguous()
    assert torch.equal(m(x, y)[1], m(x.contiguous(), y.contiguous())[1])


@pytest.mark.parametrize("synth", [False, True])
def test_embedding_dropout(synth):
    """The embeddings (tokens plus positions) go through embd_pdrop's dropout in training: at p = 1 nothing
    of the input reaches the blocks, so the logits are the same for any tokens; at p = 0.5 two training
    forwards differ, while eval forwards stay equal."""
    torch.manual_seed(0)
    m = GPT(small_config(synthesizer=synth, embd_pdrop=1.0)).train()
    x = torch.randint(0, 20, (2, 9))
    a, _ = m(x)
    b, _ = m((x + 1) % 20)
    assert torch.allclose(a, b) and torch.allclose(a, a[:1, :1].expand_as(a))
    m = GPT(small_config(synthesizer=synth, embd_pdrop=0.5)).train()
    assert not torch.allclose(m(x)[0], m(x)[0])
    m.eval()
    assert torch.equal(m(x)[0], m(x)[0])


@pytest.mark.parametrize("synth", [False, True])
def test_embedding_dropout_in_a_packed_forward(synth):
    """A packed batch (positions and segments, as the Trainer packs them on the CPU) goes through embd_pdrop's
    dropout too: at p = 1 the logits are the same for any tokens and positions; at p = 0.5 two training
    forwards differ, while eval forwards stay equal."""
    torch.manual_seed(0)
    positions, segments = torch.tensor([[0, 1, 2, 3, 0, 1, 2, 0]] * 2), torch.tensor([[0, 0, 0, 0, 1, 1, 1, 2]] * 2)
    x = torch.randint(0, 20, (2, 8))
    m = GPT(small_config(synthesizer=synth, embd_pdrop=1.0)).train()
    m.pos_emb.data.normal_(0, 1.0)
    a, _ = m(x, positions=positions, segments=segments)
    assert torch.allclose(a, a[:1, :1].expand_as(a), atol=1e-6)
    m = GPT(small_config(synthesizer=synth, embd_pdrop=0.5)).train()
    assert not torch.allclose(m(x, positions=positions, segments=segments)[0],
                              m(x, positions=positions, segments=segments)[0])
    m.eval()
    assert torch.equal(m(x, positions=positions, segments=segments)[0], m(x, positions=positions, segments=segments)[0])


@pytest.mark.parametrize("synth", [False, True])
def test_embedding_dropout_covers_the_position_embeddings(synth):
    """Dropout acts on tokens plus positions together: at embd_pdrop = 1 no position embedding reaches the
    blocks either, so every position of every row gets the same logits."""
    torch.manual_seed(0)
    m = GPT(small_config(synthesizer=synth, embd_pdrop=1.0)).train()
    m.pos_emb.data.normal_(0, 1.0)  # (zero at init: positions would look alike anyway)
    logits, _ = m(torch.randint(0, 20, (2, 9)))
    assert torch.allclose(logits, logits[:1, :1].expand_as(logits), atol=1e-6)


def test_block_is_pre_ln_attention_then_a_gelu_mlp_with_its_dropout():
    """x + attn(ln1(x)), then + mlp(ln2(x)) with mlp = Linear, GELU, Linear, Dropout(resid_pdrop): at
    resid_pdrop = 1 both branches are dropped in training, leaving x."""
    from submission.model import Block
    torch.manual_seed(0)
    block = Block(small_config()).eval()
    for p in block.parameters():  # LayerNorms unlike each other, so ln1 and ln2 are told apart
        p.data.normal_(0, 0.3)
    x = torch.randn(2, 7, 16)
    h = x + block.attn(block.ln1(x))
    want = h + block.mlp[2](F.gelu(block.mlp[0](block.ln2(h))))
    assert torch.allclose(block(x), want, atol=1e-6)
    dropped = Block(small_config(resid_pdrop=1.0)).train()
    assert torch.equal(dropped(x), x)


@pytest.mark.parametrize("synth", [False, True])
@pytest.mark.parametrize("fast", [False, True])
def test_causality(synth, fast):
    torch.manual_seed(0)
    m = GPT(small_config(synthesizer=synth)).eval()
    set_fast_attention(m, fast)
    x = torch.randint(0, 20, (3, 15))
    x2 = x.clone()
    x2[:, 9:] = (x2[:, 9:] + 1) % 20  # change the later tokens
    a, _ = m(x)
    b, _ = m(x2)
    assert torch.allclose(a[:, :9], b[:, :9], atol=1e-6)
    assert not torch.allclose(a[:, 9:], b[:, 9:])


@pytest.mark.parametrize("synth", [False, True])
def test_fast_path_matches_reference(synth):
    torch.manual_seed(0)
    m = GPT(small_config(synthesizer=synth, n_embd=32, n_head=4)).eval()
    for p in m.parameters():  # larger weights than the 0.02 init, so attention is not uniform
        p.data.normal_(0, 0.3)
    x = torch.randint(0, 20, (4, 15))
    set_fast_attention(m, True)
    a, _ = m(x)
    set_fast_attention(m, False)
    b, _ = m(x)
    assert torch.allclose(a, b, atol=1e-4, rtol=1e-4)


def synthesizer_reference(att, x):
    """Handout equation (3), head by head, in plain loops of matrix products."""
    B, T, C = x.shape
    h = att.n_head
    d = C // h
    W1, b1 = att.w1.weight.t(), att.w1.bias      # X @ W1 + b1 = [X A_1 + b1_1, ..., X A_h + b1_h]
    Wv, bv = att.value.weight.t(), att.value.bias
    out = []
    for i in range(h):
        sl = slice(i * d, (i + 1) * d)
        hidden = torch.relu(x @ W1[:, sl] + b1[sl])           # (B, T, d)
        scores = hidden @ att.w2[:, :T] + att.b2[:T]          # (B, T, T)
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
        scores = scores.masked_fill(~causal, float("-inf"))
        out.append(torch.softmax(scores, dim=-1) @ (x @ Wv[:, sl] + bv[sl]))
    return att.proj(torch.cat(out, dim=-1))


@pytest.mark.parametrize("fast", [False, True])
def test_synthesizer_matches_equation(fast):
    torch.manual_seed(0)
    att = SynthesizerAttention(GPTConfig(10, 8, n_embd=6, n_head=3, attn_pdrop=0.0, resid_pdrop=0.0)).double().eval()
    for p in att.parameters():
        p.data.normal_(0, 1)
    att.fast = fast
    for T in (7, 4, 1):
        x = torch.randn(2, T, 6, dtype=torch.float64)
        assert torch.allclose(att(x), synthesizer_reference(att, x), atol=1e-8)


@pytest.mark.parametrize("synth", [False, True])
def test_set_fast_attention_switches_every_attention_layer(synth, monkeypatch):
    """set_fast_attention(model, False) puts every layer, the synthesizer's too, on its reference path (whose
    scores never go through the fast path's helpers), and True back on the fast path."""
    import submission.attention as attention_module
    torch.manual_seed(0)
    m = GPT(small_config(synthesizer=synth)).eval()
    fast_calls = []
    scores, bias = SynthesizerAttention._scores, attention_module._causal_bias
    monkeypatch.setattr(SynthesizerAttention, "_scores", lambda *a: fast_calls.append("scores") or scores(*a))
    monkeypatch.setattr(attention_module, "_causal_bias", lambda *a: fast_calls.append("bias") or bias(*a))
    monkeypatch.setattr(attention_module.F, "scaled_dot_product_attention",
                        lambda *a, _f=F.scaled_dot_product_attention, **k: fast_calls.append("sdpa") or _f(*a, **k))
    x = torch.randint(0, 20, (2, 9))
    set_fast_attention(m, False)
    assert all(block.attn.fast is False for block in m.blocks)
    m(x)
    assert fast_calls == []
    set_fast_attention(m, True)
    assert all(block.attn.fast is True for block in m.blocks)
    m(x)
    assert len(fast_calls) >= 2


def test_synthesizer_fast_path_off_the_cpu_training_route_still_drops_attention(monkeypatch):
    """Where the CPU's explicit training route is not taken (a GPU: attention_route says "reference"), the
    synthesizer's fast path still applies attention dropout in training: at attn_pdrop = 1 every weight is
    dropped, leaving the projection's bias; in eval mode nothing is dropped."""
    import submission.attention as attention_module
    monkeypatch.setattr(attention_module, "attention_route",
                        lambda module, x: "reference" if module.training else "sdpa")
    torch.manual_seed(0)
    att = SynthesizerAttention(GPTConfig(10, 12, n_embd=8, n_head=2, attn_pdrop=1.0, resid_pdrop=0.0)).train()
    x = torch.randn(2, 9, 8)
    bias_only = att.proj.bias.expand(2, 9, 8)
    assert torch.allclose(att(x), bias_only)
    assert not torch.allclose(att.eval()(x), bias_only)


def test_synthesizer_rejects_full_block():
    """A full block is one position more than the synthesizer takes: BlockOverflow, as GPT.forward raises for a
    sequence longer than the block (a ValueError and an AssertionError; it was a plain ValueError), from the
    attention and from a synthesizer GPT given block_size ids."""
    from submission.model import BlockOverflow
    att = SynthesizerAttention(GPTConfig(10, 8, n_embd=6, n_head=3))
    with pytest.raises(BlockOverflow, match="block_size - 1"):
        att(torch.randn(1, 8, 6))
    with pytest.raises(AssertionError, match="block_size - 1 = 7 positions, got 8"):
        GPT(GPTConfig(10, 8, n_layer=1, n_embd=6, n_head=3, synthesizer=True))(torch.zeros(1, 8, dtype=torch.long))


@pytest.mark.parametrize("fast", [False, True])
def test_synthesizer_cached_decoding_rejects_a_full_block(fast):
    """prefill and decode, as forward, take at most block_size - 1 positions (w2 and b2 cover no more): a
    ValueError naming the limit, not a shape error from inside."""
    att = SynthesizerAttention(GPTConfig(10, 8, n_embd=6, n_head=3)).eval()
    att.fast = fast
    cache = att.new_cache(1, 8, torch.zeros(1))
    with torch.no_grad():
        with pytest.raises(ValueError, match="block_size - 1 = 7 positions, got 8"):
            att.prefill(torch.randn(1, 8, 6), cache)
        att.prefill(torch.randn(1, 7, 6), cache)  # a prompt of block_size - 1 is fine
        with pytest.raises(ValueError, match="block_size - 1 = 7 positions, got 8"):
            att.decode(torch.randn(1, 1, 6), cache, torch.tensor([7]), 8)


def test_logits_are_the_bias_free_head_of_the_final_layernorm_of_the_blocks():
    """GPT.forward is head(ln_f(blocks(tok_emb(idx) + pos_emb[:, :t]))) in eval mode: the final LayerNorm (GPT-2's)
    before a bias-free head, and the position embeddings of positions 0..t-1 (not the block's last t). Weights
    scrambled so LayerNorms, positions and the head all matter."""
    torch.manual_seed(0)
    m = GPT(small_config()).eval()
    for p in m.parameters():
        p.data.normal_(0, 0.3)
    idx = torch.randint(0, 20, (2, 9))
    x = m.tok_emb(idx) + m.pos_emb[:, :9]  # (2, 9, 16)
    for block in m.blocks:
        x = block(x)
    want = F.layer_norm(x, (16,), m.ln_f.weight, m.ln_f.bias) @ m.head.weight.t()  # (2, 9, 20)
    assert torch.allclose(m(idx)[0], want, atol=1e-5)


def test_block_size_enforced():
    """A ValueError, and an AssertionError as the course's `assert t <= self.block_size` raised; a sequence of
    exactly block_size tokens is no overflow (sample's cropped context is one)."""
    m = GPT(small_config())
    assert m(torch.zeros(1, 16, dtype=torch.long))[0].shape == (1, 16, 20)
    for kind in (ValueError, AssertionError):
        with pytest.raises(kind, match="block size"):
            m(torch.zeros(1, 17, dtype=torch.long))


@pytest.mark.parametrize("synth", [False, True])
def test_overfits_one_batch(synth):
    torch.manual_seed(0)
    m = GPT(small_config(synthesizer=synth, n_embd=32, n_head=4))
    x = torch.randint(1, 20, (4, 15))
    y = torch.roll(x, -1, dims=1)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
    first = None
    for _ in range(150):
        _, loss = m(x, y)
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert first > math.log(20) - 0.5 and loss.item() < 0.1

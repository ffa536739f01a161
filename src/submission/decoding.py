"""Decoding: minGPT's sampler and its fast, exact equivalents for the course's evaluation.

`sample` is minGPT's autoregressive sampler (karpathy/minGPT, as in the course's utils.py: one
sequence batch, a full forward each step); `sample_cached` returns the same with a key/value cache
(the prompt once, then one position a step). `predict_places` is the course's greedy evaluation for
many questions at once: prompts of equal length run through the model together (so positions are
exactly `sample`'s), then all questions decode together with the cache, each at its own position,
and leave the batch once they have produced their closing MASK; `predict_places_recompute` is the
same without the cache (a full forward of each equal-length group every step), and
`predict_places_reference` the course's loop, one question at a time. `log_probs` scores given
continuations of one prompt (ask.py's probabilities of every place) with the cache too. Once a
sequence outgrows the block, its further steps are `sample`'s cropped full forward, so results
stay `sample`'s (tests/test_fast.py).
The course's names (`sample`, `top_k_logits`) are also importable from utils.
"""
import torch
import torch.nn.functional as F

from .attention import BlockOverflow, SynthesizerAttention
from .dataset import MASK_CHAR
from .model import GPT, Block


def _next_token(logits, temperature, do_sample, top_k):
    """minGPT's choice of the next id from the last position's logits (b, vocab): (b, 1)."""
    logits = logits / temperature
    if top_k is not None:
        logits = top_k_logits(logits, top_k)
    probs = F.softmax(logits, dim=-1)
    if do_sample:
        return torch.multinomial(probs, num_samples=1)
    _, ix = torch.topk(probs, k=1, dim=-1)
    return ix


def top_k_logits(logits, k):
    v, ix = torch.topk(logits, k)
    out = logits.clone()
    out[out < v[:, [-1]]] = -float("Inf")
    return out


@torch.no_grad()
def sample(model, x, steps, temperature=1.0, sample=False, top_k=None):
    """
    take a conditioning sequence of indices in x (of shape (b,t)) and predict the next token in
    the sequence, feeding the predictions back into the model each time. Clearly the sampling
    has quadratic complexity unlike an RNN that is only linear, and has a finite context window
    of block_size, unlike an RNN that has an infinite context window.
    """
    block_size = longest_input(model)  # the course crops to get_block_size(), one too many for the synthesizer
    model.eval()
    for k in range(steps):
        ix = _next_token(_forward_full(model, x, block_size), temperature, sample, top_k)  # (b, 1)
        x = torch.cat((x, ix), dim=1)  # (b, t + 1)
    return x


_sample = sample  # `sample`'s own flag shadows its name inside the functions below


def defined_by(obj, name):
    """The class of obj's type (or its bases) whose body defines `name`; None if none does."""
    return next((c for c in type(obj).__mro__ if name in vars(c)), None)


def _cache_limit(model):
    """Longest sequence `model` can decode from a key/value cache, or None if it cannot.

    The cache's steps (`_prefill`, `_decode`, each attention's prefill and decode) compute what GPT.forward,
    Block.forward and the attention's own forward do. A model whose forward, a block's forward or an
    attention's forward is another (a subclass's, a module swapped in: a student's attention, a post-LN
    block, a grader's stand-in) would decode with the inherited steps, not its own forward: it decodes
    through `sample`'s full forward instead. (Classes are compared: a forward set on one instance, a test's
    spy, is not looked at.)"""
    if defined_by(model, "forward") is not GPT:
        return None
    for block in model.blocks:
        attn = getattr(block, "attn", None)
        if defined_by(block, "forward") is not Block or attn is None:
            return None
        own = defined_by(attn, "forward")
        if own is None or own is not defined_by(attn, "prefill") or own is not defined_by(attn, "decode"):
            return None
    return longest_input(model)


def longest_input(model):
    """The longest sequence a GPT forwards: its block, one less with the synthesizer, whose w2 and b2
    cover block_size - 1 positions (the course's inputs are a block's string less its last id)."""
    synth = any(isinstance(getattr(b, "attn", None), SynthesizerAttention) for b in getattr(model, "blocks", []))
    return model.get_block_size() - 1 if synth else model.get_block_size()


def _new_caches(model, batch, capacity):
    return [b.attn.new_cache(batch, capacity, model.pos_emb) for b in model.blocks]


def _prefill(model, idx, caches):
    """The GPT's eval forward of prompts idx (b, t), caching each layer's keys and values.

    Returns the last position's logits (b, vocab). The last block runs its attention output and
    MLP for the last position only: nothing else of it reaches the logits.
    """
    t = idx.size(1)
    x = model.drop(model.tok_emb(idx) + model.pos_emb[:, :t, :])
    last = len(model.blocks) - 1
    for i, (block, cache) in enumerate(zip(model.blocks, caches)):
        y = block.attn.prefill(block.ln1(x), cache, last_only=i == last)
        x = (x[:, -1:, :] if i == last else x) + y
        x = x + block.mlp(block.ln2(x))
    return model.head(model.ln_f(x))[:, -1, :]


def _decode(model, idx, caches, pos, end):
    """One new token per row, idx (b, 1), row i at position pos[i] (end = max(pos) + 1): logits (b, vocab)."""
    x = model.drop(model.tok_emb(idx) + model.pos_emb[0, pos].unsqueeze(1))  # (b, 1, C): row i at pos[i]
    for block, cache in zip(model.blocks, caches):
        x = x + block.attn.decode(block.ln1(x), cache, pos, end)
        x = x + block.mlp(block.ln2(x))
    return model.head(model.ln_f(x))[:, -1, :]


def _forward_full(model, x, block_size):
    """`sample`'s step: a full forward of the last `block_size` positions (the caller's `longest_input`,
    found once per decode); last-position logits."""
    x_cond = x if x.size(1) <= block_size else x[:, -block_size:]  # crop context if needed
    logits, _ = model(x_cond)
    return logits[:, -1, :]


def _greedy(logits):
    """`sample`'s greedy choice at temperature 1: (b, 1) ids."""
    return _next_token(logits, 1.0, False, None)


@torch.no_grad()
def sample_cached(model, x, steps, temperature=1.0, sample=False, top_k=None):
    """`sample(model, x, steps, ...)` with a key/value cache: same arguments, same result.

    The prompt x (b, t) runs through the model once; each step then runs only the new position.
    Once the sequence outgrows what the cache can hold (the block), the steps are `sample`'s own
    cropped full forward. Models without cache-capable attention, or with a forward of their own
    (`_cache_limit`), go through `sample`.
    """
    model.eval()
    limit = _cache_limit(model)
    b, t = x.shape
    if limit is None or steps <= 0 or t > limit:
        return _sample(model, x, steps, temperature=temperature, sample=sample, top_k=top_k)
    capacity = min(limit, t + steps - 1)
    caches = _new_caches(model, b, capacity)
    logits = _prefill(model, x, caches)
    for k in range(steps):
        ix = _next_token(logits, temperature, sample, top_k)  # (b, 1)
        x = torch.cat((x, ix), dim=1)  # (b, t + k + 1)
        n = x.size(1)  # the new token sits at position n - 1
        if k == steps - 1:
            break
        if n <= capacity:
            pos = torch.full((b,), n - 1, dtype=torch.long, device=x.device)
            logits = _decode(model, ix, caches, pos, n)
        else:
            logits = _forward_full(model, x, limit)
    return x


def _greedy_cached(model, prompts, steps, stop_id, device):
    """Greedy continuations of `prompts` (id lists sorted by length, each fitting the cache with
    its `steps`), each cut after its first `stop_id`: one list of new ids per prompt.

    Prompts of each length run through the model together (same positions, no padding); then all
    rows decode together, each at its own position, and rows that have stopped leave the batch
    whenever a quarter of it has.
    """
    n = len(prompts)
    lengths = [len(p) for p in prompts]
    caches = _new_caches(model, n, max(lengths) + steps - 1)
    parts, a = [], 0
    while a < n:
        b = a
        while b < n and lengths[b] == lengths[a]:
            b += 1
        x = torch.tensor(prompts[a:b], dtype=torch.long, device=device)  # (b - a, t): the prompts of one length
        rows_view = [{name: buf[a:b] for name, buf in cache.items()} for cache in caches]
        parts.append(_prefill(model, x, rows_view))  # writes into rows a..b-1 of the caches
        a = b
    logits = torch.cat(parts)  # (n, vocab): each prompt's last position
    pos_list = list(lengths)  # where each row's next token goes
    pos = torch.tensor(pos_list, dtype=torch.long, device=device)
    rows = list(range(n))     # batch row -> prompt
    alive = [True] * n
    generated = [[] for _ in range(n)]
    left = n
    for k in range(steps):
        ix = _greedy(logits)  # (rows, 1)
        for j, tok in enumerate(ix[:, 0].tolist()):
            if alive[j]:
                generated[rows[j]].append(tok)
                if tok == stop_id:
                    alive[j] = False
                    left -= 1
        if k == steps - 1 or left == 0:
            break
        if left <= 0.75 * len(rows):
            keep = [j for j in range(len(rows)) if alive[j]]
            keep_t = torch.tensor(keep, dtype=torch.long, device=device)
            for cache in caches:
                for name in cache:
                    cache[name] = cache[name].index_select(0, keep_t)
            ix, pos = ix.index_select(0, keep_t), pos.index_select(0, keep_t)
            rows, pos_list, alive = [rows[j] for j in keep], [pos_list[j] for j in keep], [True] * len(keep)
        logits = _decode(model, ix, caches, pos, max(pos_list) + 1)
        pos = pos + 1
        pos_list = [p + 1 for p in pos_list]
    return generated


def _greedy_full(model, x, steps, stop_id):
    """Greedy continuations of the equal-length rows of x, a full (cropped) forward each step as
    in `sample`, until every row has produced `stop_id`: one list of new ids per row."""
    generated = []
    done = torch.zeros(x.size(0), dtype=torch.bool, device=x.device)
    block_size = longest_input(model)
    for _ in range(steps):
        ix = _greedy(_forward_full(model, x, block_size))  # (b, 1)
        x = torch.cat((x, ix), dim=1)  # (b, t + 1)
        generated.append(ix)
        done |= ix[:, 0] == stop_id
        if bool(done.all()):
            break
    return torch.cat(generated, dim=1).tolist() if generated else [[] for _ in range(x.size(0))]  # (b, steps run)


def _prompts(questions, stoi):
    """The course's evaluation prompts: each question's ids with MASK appended."""
    mask_id = stoi[MASK_CHAR]
    return [[stoi[c] for c in q] + [mask_id] for q in questions]


def _answers(generated, itos):
    return ["".join(itos[t] for t in ids).split(MASK_CHAR)[0] for ids in generated]


def _decode_full(model, prompts, indices, generated, steps, stop_id, batch_size, device):
    """Greedy continuations of prompts[i] for i in `indices` into generated[i], without a cache:
    prompts of equal length together, up to `batch_size` a group (`_greedy_full`)."""
    by_len = {}
    for i in indices:
        by_len.setdefault(len(prompts[i]), []).append(i)
    for _, idxs in sorted(by_len.items()):
        for s in range(0, len(idxs), batch_size):
            chunk = idxs[s:s + batch_size]
            x = torch.tensor([prompts[i] for i in chunk], dtype=torch.long, device=device)  # (b, t)
            for i, gen in zip(chunk, _greedy_full(model, x, steps, stop_id)):
                generated[i] = gen


@torch.no_grad()
def log_probs(model, prompt, continuations, rows=128):
    """log P(c | prompt) under `model` for each id list c of `continuations`: a (len(continuations),)
    tensor, the sum of the log-probabilities of c's ids, each given the prompt and c's earlier ids.

    The prompt runs through the model once, its keys and values cached (the cache of sample_cached);
    then the continuations, longest first, up to `rows` at a time, one position a step, each leaving
    the batch after its last id: every position once, where each row of one batch of prompt + c[:-1]
    ran the prompt again (data/'s 499 places, the course's model, the 2-core CPU: 4.4x the time).
    Models without the cache, or an empty continuation, take that batch (`log_probs_full`). A prompt and
    continuation longer than the model's input (`longest_input`) raise BlockOverflow.
    """
    limit = _cache_limit(model)
    longest = max(len(c) for c in continuations)
    if limit is not None and len(prompt) + longest - 1 > limit:  # (without the cache, the model's forward says)
        raise BlockOverflow(f"log_probs: a prompt of {len(prompt)} ids and a continuation of {longest} read "
                            f"{len(prompt) + longest - 1} positions; the model takes at most {limit}")
    if limit is None or not all(continuations):  # (an empty one: 0)
        return log_probs_full(model, prompt, continuations)
    device = next(model.parameters()).device
    model.eval()
    order = sorted(range(len(continuations)), key=lambda i: -len(continuations[i]))
    caches = _new_caches(model, 1, len(prompt) + longest - 1)
    first = F.log_softmax(_prefill(model, torch.tensor([prompt], device=device), caches).float(), dim=-1)[0]  # (vocab,)
    out = torch.zeros(len(continuations))
    for s in range(0, len(order), rows):
        chunk = [continuations[i] for i in order[s:s + rows]]  # longest first
        n, width = len(chunk), len(chunk[0])
        ids = torch.zeros(n, width, dtype=torch.long)  # (n, width): each continuation, 0 after its end
        for i, c in enumerate(chunk):
            ids[i, :len(c)] = torch.tensor(c)
        ids = ids.to(device)  # one copy to the device a chunk, and one back (lp)
        lp = first[ids[:, 0]]  # (n,): each first id's
        # the prompt's cache, one copy a row: each buffer (1, ...) -> (n, ...), e.g. v (1, nh, capacity, hs) ->
        # (n, nh, capacity, hs); rows that have ended leave from the end (lengths descend)
        rows_caches = [{name: buf.expand(n, *buf.shape[1:]).clone() for name, buf in cache.items()} for cache in caches]
        for j in range(1, width):
            k = sum(len(c) > j for c in chunk)  # rows with an id at j
            view = [{name: buf[:k] for name, buf in cache.items()} for cache in rows_caches]
            pos = torch.full((k,), len(prompt) + j - 1, dtype=torch.long, device=device)
            logits = _decode(model, ids[:k, j - 1:j], view, pos, len(prompt) + j)  # (k, vocab)
            lp[:k] += F.log_softmax(logits.float(), dim=-1).gather(1, ids[:k, j:j + 1])[:, 0]  # (k,)
        out[torch.tensor(order[s:s + rows])] = lp.cpu()
    return out


@torch.no_grad()
def log_probs_full(model, prompt, continuations):
    """`log_probs` as one batch of prompt + c[:-1], right-padded: attention is causal, so the padding
    after a row's last id never reaches the logits that are read. The reference of the cached path."""
    device = next(model.parameters()).device
    model.eval()
    width = len(prompt) + max(len(c) for c in continuations) - 1
    x = torch.zeros(len(continuations), width, dtype=torch.long)       # (n, T)
    targets = torch.zeros(len(continuations), width, dtype=torch.long)  # (n, T): the id each position predicts
    counted = torch.zeros(len(continuations), width, dtype=torch.bool)  # (n, T): positions that predict c
    for i, c in enumerate(continuations):
        row = prompt + c[:-1]
        x[i, :len(row)] = torch.tensor(row)
        targets[i, len(prompt) - 1:len(prompt) - 1 + len(c)] = torch.tensor(c)
        counted[i, len(prompt) - 1:len(prompt) - 1 + len(c)] = True
    logits, _ = model(x.to(device))                                     # (n, T, vocab)
    lp = F.log_softmax(logits.float(), dim=-1).gather(2, targets.to(device).unsqueeze(2)).squeeze(2)  # (n, T)
    return lp.masked_fill(~counted.to(device), 0.0).sum(dim=1).cpu()


@torch.no_grad()
def predict_places(model, questions, stoi, itos, steps=32, batch_size=512):
    """Greedy answers to `questions` (strings), as the course's evaluation gets them one by one.

    The course appends MASK, runs `sample(model, x, 32)` and keeps the text between the first and
    second MASK of the completion. Here up to `batch_size` questions decode together with a
    key/value cache (`_greedy_cached`), and a question leaves the batch once it has produced its
    closing MASK: the text before it can no longer change. A question whose completion would outgrow
    the block (97 characters or more with the course's block of 128, 96 with the synthesizer, whose
    input is a position shorter) decodes from the cache while the sequence fits, then as `sample`
    does, a full forward of the last block each step (`_overflowing`); models without the cache
    decode as in `predict_places_recompute`.
    """
    device = next(model.parameters()).device
    model.eval()
    mask_id = stoi[MASK_CHAR]
    prompts = _prompts(questions, stoi)
    limit = _cache_limit(model) if steps > 0 else None
    generated = [None] * len(prompts)
    fits = [i for i, p in enumerate(prompts) if limit is not None and len(p) + steps - 1 <= limit]
    order = sorted(fits, key=lambda i: len(prompts[i]))
    for s in range(0, len(order), batch_size):
        chunk = order[s:s + batch_size]
        for i, gen in zip(chunk, _greedy_cached(model, [prompts[i] for i in chunk], steps, mask_id, device)):
            generated[i] = gen
    longer = [i for i, p in enumerate(prompts) if limit is not None and len(p) + steps - 1 > limit >= len(p)]
    _overflowing(model, prompts, longer, generated, steps, limit, mask_id, batch_size, device)
    rest = [i for i in range(len(prompts)) if generated[i] is None]  # no cache (or a prompt above the block)
    _decode_full(model, prompts, rest, generated, steps, mask_id, batch_size, device)
    return _answers(generated, itos)


def _overflowing(model, prompts, indices, generated, steps, limit, stop_id, batch_size, device):
    """Greedy continuations into generated[i] of prompts[i], i in `indices`, whose `steps` outgrow the cache's
    `limit` ids: each prompt of length t takes its first limit - t + 1 ids from the cache (`_greedy_cached`: as
    long as `sample`'s input is not cropped); the rows without `stop_id` by then are limit + 1 ids long, whatever
    their prompt, and go on together with `sample`'s cropped full forwards (`_greedy_full`). Questions of 97
    characters and more took 46 times as long when every step of theirs was a full forward."""
    by_len, going_on = {}, []
    for i in indices:
        by_len.setdefault(len(prompts[i]), []).append(i)
    for t, idxs in sorted(by_len.items()):
        for s in range(0, len(idxs), batch_size):
            chunk = idxs[s:s + batch_size]
            for i, gen in zip(chunk, _greedy_cached(model, [prompts[i] for i in chunk], limit - t + 1, stop_id,
                                                    device)):
                generated[i] = gen
                if stop_id not in gen:
                    going_on.append(i)
    for s in range(0, len(going_on), batch_size):
        chunk = going_on[s:s + batch_size]
        x = torch.tensor([prompts[i] + generated[i] for i in chunk], dtype=torch.long, device=device)  # (b, limit + 1)
        left = [steps - len(generated[i]) for i in chunk]  # each row's own: a longer prompt has more left
        for i, n, more in zip(chunk, left, _greedy_full(model, x, max(left), stop_id)):
            generated[i] = generated[i] + more[:n]


@torch.no_grad()
def predict_places_reference(model, questions, stoi, itos, steps=32):
    """The course's evaluation loop, which the batched ones equal: one question at a time, MASK
    appended, greedy `sample(model, x, steps)`, the text between the first and second MASK kept
    (run.py --reference_eval, and the benchmark's reference)."""
    device = next(model.parameters()).device
    answers = []
    for q in questions:
        x = torch.tensor([stoi[c] for c in q + MASK_CHAR], dtype=torch.long, device=device)[None, ...]  # (1, t)
        completion = "".join(itos[int(i)] for i in sample(model, x, steps, sample=False)[0])
        answers.append(completion.split(MASK_CHAR)[1])
    return answers


@torch.no_grad()
def predict_places_recompute(model, questions, stoi, itos, steps=32, batch_size=512):
    """`predict_places` without the cache: questions of equal length decode together, a full
    forward of the group each step, until every row has its closing MASK. A reference for the
    tests and the benchmark."""
    device = next(model.parameters()).device
    model.eval()
    prompts = _prompts(questions, stoi)
    generated = [None] * len(prompts)
    _decode_full(model, prompts, range(len(prompts)), generated, steps, stoi[MASK_CHAR], batch_size, device)
    return _answers(generated, itos)

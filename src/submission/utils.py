"""Helpers shared by the assignment's scripts: seeding, the device, sampling, scoring, safe I/O.

`sample` is minGPT's autoregressive sampler (one sequence batch, full forward each step);
`sample_cached` returns the same with a key/value cache (the prompt once, then one position a
step). `predict_places` is the course's greedy evaluation for many questions at once: prompts of
equal length run through the model together (so positions are exactly `sample`'s), then all
questions decode together with the cache, each at its own position, and leave the batch once
they have produced their closing MASK; `predict_places_recompute` is the same without the cache
(a full forward of each equal-length group every step). Where a sequence would outgrow the block,
decoding falls back to `sample`'s cropped full forward, so results stay `sample`'s
(tests/test_fast.py, tests/test_utils.py). Files are written atomically (temp file, then
os.replace) so an interrupted run never leaves a half-written params or predictions file.
`CpuThreads` / `configure_threads` pick CPU threads; `is_main_process` tells torchrun's rank 0.
"""
import argparse
import os
import random
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

from .dataset import MASK_CHAR, DataError


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def get_device():
    """The one device rule of the project: cuda, then mps, then cpu."""
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def _cpu_ticks():
    """(all CPUs' busy ticks, all ticks, this process's ticks) from /proc, or None off Linux."""
    try:
        with open("/proc/stat") as f:
            vals = [int(v) for v in f.readline().split()[1:9]]
        with open("/proc/self/stat") as f:
            own = f.read().rsplit(")", 1)[1].split()
        total = sum(vals)
        return total - vals[3] - vals[4], total, int(own[11]) + int(own[12])  # idle, iowait; utime, stime
    except (OSError, ValueError, IndexError):
        return None


def usable_cores():
    """CPUs this process may run on (its affinity), else the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class CpuThreads:
    """Keeps torch's CPU thread count at the cores that other processes leave free.

    On a shared machine this matters more than anything else on CPU: on this project's 2-core
    workers a course-size training step (batch 16) took 0.4 s with 2 threads on an idle machine,
    but 4.5 s with 2 threads while another job used about one core (every op waits for a
    descheduled thread), against 0.6 s with 1 thread (src/bench.py measures 1 against all).
    So: `fixed`, $GPT_NUM_THREADS or $OMP_NUM_THREADS (torchrun sets it to 1 a process) when
    given; otherwise the usable cores minus the other processes' load, measured from /proc/stat at
    the start (a 0.1 s window) and again every `every` seconds from the ticks between calls to
    `update()`, our own ticks left out.
    """

    def __init__(self, fixed=None, every=10.0):
        env = os.environ.get("GPT_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
        self.fixed = fixed if fixed is not None else (int(env) if env else None)
        self.every = every
        self.cores = usable_cores()
        self._last = None
        self._when = 0.0

    def _set(self, n):
        n = max(1, min(int(n), self.cores if self.fixed is None else int(n)))
        if torch.get_num_threads() != n:
            torch.set_num_threads(n)
        return n

    def _free(self, before, after):
        d_busy, d_total, d_own = (a - b for a, b in zip(after, before))
        if d_total <= 0:
            return None
        n_cpus = os.cpu_count() or 1  # /proc/stat's ticks are over every CPU of the machine
        others = max(0, d_busy - d_own) * n_cpus / d_total
        return int(self.cores - others + 0.1)  # a core shared with another job is not free

    def start(self):
        """Pick the thread count now; returns it."""
        if self.fixed is not None:
            return self._set(self.fixed)
        before = _cpu_ticks()
        if before is None:
            return torch.get_num_threads()
        time.sleep(0.1)
        self._last, self._when = _cpu_ticks(), time.time()
        free = self._free(before, self._last)
        return self._set(free) if free is not None else torch.get_num_threads()

    def update(self):
        """Re-check (at most every `every` seconds); returns the thread count."""
        if self.fixed is not None or self._last is None or time.time() - self._when < self.every:
            return torch.get_num_threads()
        now = _cpu_ticks()
        free = self._free(self._last, now)
        self._last, self._when = now, time.time()
        return self._set(free) if free is not None else torch.get_num_threads()


def configure_threads(n=None):
    """Set torch's CPU threads once, by `CpuThreads`' rule (n, the environment, or the free cores)."""
    return CpuThreads(fixed=n).start()


def is_main_process():
    """False on every torchrun process but rank 0: only the main process writes files."""
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank() == 0
    return int(os.environ.get("RANK", "0")) == 0


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
    block_size = model.get_block_size()
    model.eval()
    for k in range(steps):
        x_cond = x if x.size(1) <= block_size else x[:, -block_size:]  # crop context if needed
        logits, _ = model(x_cond)
        ix = _next_token(logits[:, -1, :], temperature, sample, top_k)  # (b, 1)
        x = torch.cat((x, ix), dim=1)  # (b, t + 1)
    return x


_sample = sample  # `sample`'s own flag shadows its name inside the functions below


def _cache_limit(model):
    """Longest sequence `model` can decode from a key/value cache, or None if it cannot."""
    need = ("tok_emb", "pos_emb", "drop", "blocks", "ln_f", "head", "get_block_size")
    if not all(hasattr(model, a) for a in need):
        return None
    if not all(hasattr(b, "attn") and hasattr(b.attn, "prefill") for b in model.blocks):
        return None
    from .attention import SynthesizerAttention
    synth = any(isinstance(b.attn, SynthesizerAttention) for b in model.blocks)
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


def _forward_full(model, x):
    """`sample`'s step: a full forward of the last block_size positions; last-position logits."""
    block_size = model.get_block_size()
    x_cond = x if x.size(1) <= block_size else x[:, -block_size:]
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
    cropped full forward. Models without cache-capable attention go through `sample`.
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
        ix = _next_token(logits, temperature, sample, top_k)
        x = torch.cat((x, ix), dim=1)
        n = x.size(1)  # the new token sits at position n - 1
        if k == steps - 1:
            break
        if n <= capacity:
            pos = torch.full((b,), n - 1, dtype=torch.long, device=x.device)
            logits = _decode(model, ix, caches, pos, n)
        else:
            logits = _forward_full(model, x)
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
        x = torch.tensor(prompts[a:b], dtype=torch.long, device=device)
        rows_view = [{name: buf[a:b] for name, buf in cache.items()} for cache in caches]
        parts.append(_prefill(model, x, rows_view))  # writes into rows a..b-1 of the caches
        a = b
    logits = torch.cat(parts)
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
    for _ in range(steps):
        ix = _greedy(_forward_full(model, x))
        x = torch.cat((x, ix), dim=1)
        generated.append(ix)
        done |= ix[:, 0] == stop_id
        if bool(done.all()):
            break
    return torch.cat(generated, dim=1).tolist() if generated else [[] for _ in range(x.size(0))]


def _answers(questions, generated, itos):
    return ["".join(itos[t] for t in generated[i]).split(MASK_CHAR)[0] for i in range(len(questions))]


def _groups_by_length(indices, prompts, batch_size):
    by_len = {}
    for i in indices:
        by_len.setdefault(len(prompts[i]), []).append(i)
    for _, idxs in sorted(by_len.items()):
        for s in range(0, len(idxs), batch_size):
            yield idxs[s:s + batch_size]


@torch.no_grad()
def predict_places(model, questions, stoi, itos, steps=32, batch_size=512, device=None):
    """Greedy answers to `questions` (strings), as the course's evaluation gets them one by one.

    The course appends MASK, runs `sample(model, x, 32)` and keeps the text between the first and
    second MASK of the completion. Here up to `batch_size` questions decode together with a
    key/value cache (`_greedy_cached`), and a question leaves the batch once it has produced its
    closing MASK: the text before it can no longer change. Questions too long for the cache (the
    completion would outgrow the block) decode as in `predict_places_recompute`.
    """
    device = device or next(model.parameters()).device
    model.eval()
    mask_id = stoi[MASK_CHAR]
    prompts = [[stoi[c] for c in q] + [mask_id] for q in questions]
    limit = _cache_limit(model)
    fits = [i for i, p in enumerate(prompts) if limit is not None and 0 < steps and len(p) + steps - 1 <= limit]
    fit_set = set(fits)
    generated = [None] * len(prompts)
    order = sorted(fits, key=lambda i: len(prompts[i]))
    for s in range(0, len(order), batch_size):
        chunk = order[s:s + batch_size]
        for i, gen in zip(chunk, _greedy_cached(model, [prompts[i] for i in chunk], steps, mask_id, device)):
            generated[i] = gen
    rest = [i for i in range(len(prompts)) if i not in fit_set]
    for chunk in _groups_by_length(rest, prompts, batch_size):
        x = torch.tensor([prompts[i] for i in chunk], dtype=torch.long, device=device)
        for i, gen in zip(chunk, _greedy_full(model, x, steps, mask_id)):
            generated[i] = gen
    return _answers(questions, generated, itos)


@torch.no_grad()
def predict_places_recompute(model, questions, stoi, itos, steps=32, batch_size=512, device=None):
    """`predict_places` without the cache: questions of equal length decode together, a full
    forward of the group each step, until every row has its closing MASK. A reference for the
    tests and the benchmark."""
    device = device or next(model.parameters()).device
    model.eval()
    mask_id = stoi[MASK_CHAR]
    prompts = [[stoi[c] for c in q] + [mask_id] for q in questions]
    generated = [None] * len(prompts)
    for chunk in _groups_by_length(range(len(prompts)), prompts, batch_size):
        x = torch.tensor([prompts[i] for i in chunk], dtype=torch.long, device=device)
        for i, gen in zip(chunk, _greedy_full(model, x, steps, mask_id)):
            generated[i] = gen
    return _answers(questions, generated, itos)


def evaluate_places(filepath, predicted_places):
    """ Computes percent of correctly predicted birth places.

    Arguments:
      filepath: path to a file with our name, birth place data.
      predicted_places: a list of strings representing the
          predicted birth place of each person.

    Returns: (total, correct), floats
    """
    with open(filepath, encoding="utf-8") as fin:
        lines = [x.strip().split("\t") for x in fin if x.strip()]
    if not lines or len(lines[0]) == 1:
        print("No gold birth places provided; returning (0,0)")
        return (0, 0)
    true_places = [x[1] for x in lines]
    total = len(true_places)
    if total != len(predicted_places):
        raise ValueError(f"{filepath}: {total} labelled questions but {len(predicted_places)} predictions")
    correct = sum(1 for t, p in zip(true_places, predicted_places) if t == p)
    return (float(total), float(correct))


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _atomic(path, write):
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        # mkstemp makes the file 0600; give it the mode an ordinary open() would (0666 less umask)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path, text):
    """Write `text` (UTF-8) to `path` so readers see the old file or the whole new one, never a part."""
    _atomic(path, lambda f: f.write(text.encode("utf-8")))


def atomic_torch_save(obj, path):
    """torch.save, atomically."""
    _atomic(path, lambda f: torch.save(obj, f))


class OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one line, `prog: error: message (--help lists the options)`, exit 2,
    instead of the usage block followed by the message."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (--help lists the options)\n")


def check_output_path(path, what, inputs=()):
    """DataError unless `path` can take an output file: not a folder, not one of the `inputs`, in a
    folder that exists (made here if missing) and is writable. Called before a run, so a long run is
    never lost at its final write."""
    full = os.path.realpath(path)
    if os.path.isdir(full):
        raise DataError(f"{path}: the {what} path is a folder; give a file path")
    for other in inputs:
        if other and os.path.realpath(other) == full:
            raise DataError(f"{path}: the {what} would overwrite an input of this run; write it elsewhere")
    folder = os.path.dirname(full)
    existing = folder
    while not os.path.exists(existing):  # the nearest folder that is there: the rest are made in it
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise DataError(f"{path}: {existing} is a file, not a folder; pick another path for the {what}")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise DataError(f"{path}: cannot make the folder for the {what} ({e.strerror}); pick another path") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise DataError(f"{path}: the folder {folder} is not writable; pick another path for the {what}")


class ParamsError(ValueError):
    """A params file that cannot be loaded into the model at hand; the message says why and what to do."""


def run_cli(main):
    """Run a command-line `main()`: a bad input file (DataError, ParamsError) ends in its one-line message
    and exit status 2, Ctrl-C in exit status 130 (output files are written atomically, so none is half-written)."""
    try:
        return main()
    except (DataError, ParamsError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted: no params or predictions file was half-written", file=sys.stderr)
        sys.exit(130)


def clean_state_dict(state_dict):
    """Drop the prefixes DataParallel/DDP (`module.`) and torch.compile (`_orig_mod.`) add to keys."""
    out = {}
    for k, v in state_dict.items():
        for prefix in ("module.", "_orig_mod."):
            while k.startswith(prefix):
                k = k[len(prefix):]
        out[k] = v
    return out


def _size_hint(state):
    """' (the file looks like --n_layer 2 --n_embd 128 ...)' read off a state_dict's shapes, or ''.

    n_head shows only in a synthesizer's w2, whose rows are one head's width; a vanilla file does
    not record it."""
    try:
        layers = len({k.split(".")[1] for k in state if k.startswith("blocks.")})
        n_embd = state["tok_emb.weight"].shape[1]
        flags = f"--n_layer {layers} --n_embd {n_embd} --block_size {state['pos_emb'].shape[1]}"
        w2 = [v for k, v in state.items() if k.endswith("attn.w2")]
        if w2:
            flags += f" --n_head {n_embd // w2[0].shape[0]}"
        return f" (the file looks like {flags})"
    except (KeyError, IndexError, AttributeError, ZeroDivisionError):
        return ""


def load_params(model, path):
    """Load a params file into `model` on any device, refusing code and explaining mismatches."""
    if not os.path.isfile(path):
        raise ParamsError(f"{path}: params file not found")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # pickle with code, truncated file, not a torch file
        detail = (str(e).splitlines() or [""])[0][:120]
        what = "an empty file" if os.path.getsize(path) == 0 else f"{type(e).__name__}: {detail}"
        raise ParamsError(f"{path}: not a loadable params file ({what}); re-create it with the run.sh mode "
                          f"that writes it") from None
    if not isinstance(state, dict):
        raise ParamsError(f"{path}: holds a {type(state).__name__}, not a state_dict")
    state = clean_state_dict(state)
    own = model.state_dict()
    synth_file = any(k.endswith("attn.w2") for k in state)
    synth_model = any(k.endswith("attn.w2") for k in own)
    if synth_file != synth_model:
        have, want = ("synthesizer", "vanilla") if synth_file else ("vanilla", "synthesizer")
        raise ParamsError(f"{path}: these are {have} params, but the model is {want}; "
                          f"pass --variant={have} or use the {want} params file")
    if "tok_emb.weight" in state and state["tok_emb.weight"].shape[0] != own["tok_emb.weight"].shape[0]:
        raise ParamsError(f"{path}: params have a vocabulary of {state['tok_emb.weight'].shape[0]} characters, "
                          f"the pretraining corpus gives {own['tok_emb.weight'].shape[0]}; use the same "
                          f"--pretrain_corpus_path the params were trained with")
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    if missing or unexpected:
        raise ParamsError(f"{path}: params do not fit this model (missing {missing[:3]}, unexpected "
                          f"{unexpected[:3]}); use the model size they were trained with{_size_hint(state)}")
    for k, v in state.items():
        if v.shape != own[k].shape:
            raise ParamsError(f"{path}: {k} has shape {tuple(v.shape)}, the model wants {tuple(own[k].shape)}; "
                              f"use the model size (n_layer, n_head, n_embd, block_size) they were trained "
                              f"with{_size_hint(state)}")
    model.load_state_dict(state)
    return model

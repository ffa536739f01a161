"""Helpers shared by the assignment's scripts: seeding, the device, sampling, scoring, safe I/O.

`sample` is minGPT's autoregressive sampler (one sequence batch, full forward each step);
`predict_places` is the same greedy decoding for many questions at once, grouped by length so
each row sees exactly what `sample` would. Files are written atomically (temp file, then
os.replace) so an interrupted run never leaves a half-written params or predictions file.
"""
import os
import random
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

MASK_CHAR = u"\u2047"


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
        logits = logits[:, -1, :] / temperature  # (b, vocab): the last position's scores
        if top_k is not None:
            logits = top_k_logits(logits, top_k)
        probs = F.softmax(logits, dim=-1)
        if sample:
            ix = torch.multinomial(probs, num_samples=1)
        else:
            _, ix = torch.topk(probs, k=1, dim=-1)
        x = torch.cat((x, ix), dim=1)  # (b, t + 1)
    return x


@torch.no_grad()
def predict_places(model, questions, stoi, itos, steps=32, batch_size=512, device=None):
    """Greedy answers to `questions` (strings), as the course's evaluation gets them one by one.

    The course appends MASK, runs `sample(model, x, 32)` and keeps the text between the first and
    second MASK of the completion. Here questions of equal length decode together (same positions,
    no padding), and decoding stops once every row of a batch has produced its closing MASK:
    the text before it can no longer change.
    """
    device = device or next(model.parameters()).device
    block_size = model.get_block_size()
    model.eval()
    mask_id = stoi[MASK_CHAR]
    answers = [None] * len(questions)
    by_len = {}
    for i, q in enumerate(questions):
        by_len.setdefault(len(q), []).append(i)
    for length, idxs in sorted(by_len.items()):
        for s in range(0, len(idxs), batch_size):
            chunk = idxs[s:s + batch_size]
            x = torch.tensor([[stoi[c] for c in questions[i]] + [mask_id] for i in chunk],
                             dtype=torch.long, device=device)  # (b, length + 1)
            done = torch.zeros(len(chunk), dtype=torch.bool, device=device)
            generated = []
            for _ in range(steps):
                x_cond = x if x.size(1) <= block_size else x[:, -block_size:]
                logits, _ = model(x_cond)
                ix = logits[:, -1, :].argmax(dim=-1, keepdim=True)  # (b, 1): greedy choice
                x = torch.cat((x, ix), dim=1)
                generated.append(ix)
                done |= ix[:, 0] == mask_id
                if bool(done.all()):
                    break
            gen = torch.cat(generated, dim=1).tolist()  # (b, steps taken)
            for row, i in enumerate(chunk):
                text = "".join(itos[t] for t in gen[row])
                answers[i] = text.split(MASK_CHAR)[0]
    return answers


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


def _atomic(path, write):
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
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


class ParamsError(ValueError):
    """A params file that cannot be loaded into the model at hand; the message says why and what to do."""


def clean_state_dict(state_dict):
    """Drop the prefixes DataParallel/DDP (`module.`) and torch.compile (`_orig_mod.`) add to keys."""
    out = {}
    for k, v in state_dict.items():
        for prefix in ("module.", "_orig_mod."):
            while k.startswith(prefix):
                k = k[len(prefix):]
        out[k] = v
    return out


def load_params(model, path):
    """Load a params file into `model` on any device, refusing code and explaining mismatches."""
    if not os.path.isfile(path):
        raise ParamsError(f"{path}: params file not found")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # pickle with code, truncated file, not a torch file
        raise ParamsError(f"{path}: not a loadable params file ({type(e).__name__}: {str(e).splitlines()[0][:120]}); "
                          f"re-create it with the run.sh mode that writes it") from None
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
    if "tok_emb.weight" in state and state["tok_emb.weight"].shape != own["tok_emb.weight"].shape:
        raise ParamsError(f"{path}: params have a vocabulary of {state['tok_emb.weight'].shape[0]} characters, "
                          f"the pretraining corpus gives {own['tok_emb.weight'].shape[0]}; use the same "
                          f"--pretrain_corpus_path the params were trained with")
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    if missing or unexpected:
        raise ParamsError(f"{path}: params do not fit this model (missing {missing[:3]}, unexpected "
                          f"{unexpected[:3]}); use the model size they were trained with")
    for k, v in state.items():
        if v.shape != own[k].shape:
            raise ParamsError(f"{path}: {k} has shape {tuple(v.shape)}, the model wants {tuple(own[k].shape)}; "
                              f"use the model size (n_layer, n_head, n_embd, block_size) they were trained with")
    model.load_state_dict(state)
    return model

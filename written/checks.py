"""Small numerical helpers behind the written answers (submission.tex).

Everything here is plain NumPy in float64 so that the figures (written/figures.py) and the tests
(tests/test_written.py) share one implementation of each claim:

* single-query attention and the Monte Carlo of questions 3(c)ii / 3(d)ii (perturbed key scale);
* the merged per-head score matrix W^QK of problem 3(b) / 5(a), bias terms included;
* the two loss-shaping terms of problem 1: the attention-entropy ("focus") term and the robust
  nearness term, with their bounds;
* a detector for the first repeated decoding state of problem 4.
"""
import math

import numpy as np


# ---------------------------------------------------------------------------------------------
# Attention of one query over a set of keys (questions 3(a)-3(e))
# ---------------------------------------------------------------------------------------------
def softmax(scores, axis=-1):
    """Numerically stable softmax along `axis`."""
    scores = np.asarray(scores, dtype=np.float64)
    shifted = scores - np.max(scores, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)


def attend(q, keys, values):
    """Single-query attention: weights softmax_i(k_i . q) and output c = sum_i weight_i v_i.

    q: (d,) or (..., d); keys: (..., n, d); values: (..., n, d_v). Returns (weights, c).
    """
    q = np.asarray(q, dtype=np.float64)
    keys = np.asarray(keys, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    scores = np.einsum("...nd,...d->...n", keys, q)  # (..., n)
    w = softmax(scores, axis=-1)
    c = np.einsum("...n,...nd->...d", w, values)  # (..., d_v)
    return w, c


def sample_perturbed_keys(rng, draws, n, d, a, alpha=1e-10, scale_var=0.5):
    """Keys of 3(c)/3(d): k_i ~ N(mu_i, Sigma_i) with mu_i = e_i (orthonormal, needs d >= n).

    Sigma_a = alpha I + scale_var mu_a mu_a^T and Sigma_i = alpha I otherwise. Sampled as
    k_i = mu_i + sqrt(alpha) z_i, plus sqrt(scale_var) g mu_a for i = a, which has exactly that
    covariance. Returns (keys of shape (draws, n, d), gamma = mu_a . k_a of shape (draws,)).
    """
    if d < n:
        raise ValueError("need d >= n for n orthonormal means")
    mu = np.eye(n, d)
    keys = mu[None, :, :] + math.sqrt(alpha) * rng.standard_normal((draws, n, d))  # (draws, n, d)
    g = rng.standard_normal(draws)
    keys[:, a, :] += math.sqrt(scale_var) * g[:, None] * mu[a][None, :]  # (draws, d) added to key a
    gamma = keys[:, a, :] @ mu[a]  # (draws,)
    return keys, gamma


def weight_on_a_one_head(keys, a, b, beta):
    """Weight that single-head attention with q = beta (mu_a + mu_b) puts on v_a, per draw."""
    n, d = keys.shape[-2:]
    mu = np.eye(n, d)
    w, _ = attend(beta * (mu[a] + mu[b]), keys, np.zeros(keys.shape[:-1] + (1,)))
    return w[..., a]


def weight_on_a_two_heads(keys, a, b, beta):
    """Weight on v_a of the two-head average 1/2 (c_1 + c_2), q_1 = beta mu_a, q_2 = beta mu_b."""
    n, d = keys.shape[-2:]
    mu = np.eye(n, d)
    dummy = np.zeros(keys.shape[:-1] + (1,))
    w1, _ = attend(beta * mu[a], keys, dummy)
    w2, _ = attend(beta * mu[b], keys, dummy)
    return 0.5 * (w1[..., a] + w2[..., a])


# ---------------------------------------------------------------------------------------------
# Merged query-key matrix (problems 3(b) and 5(a))
# ---------------------------------------------------------------------------------------------
def merged_qk(wq, bq, wk, bk, n_head):
    """Per-head matrices M_h with score_h(t1, t2) = [x_t1; 1]^T M_h [x_t2; 1].

    Shapes follow torch.nn.Linear: wq, wk are (C, C) with rows = outputs, bq, bk are (C,). Head h
    uses output rows h*hs .. (h+1)*hs - 1, hs = C // n_head, and the 1/sqrt(hs) temperature is
    folded into M_h. Appending a constant 1 to x absorbs the biases:
    M_h = [Wq_h | bq_h]^T [Wk_h | bk_h] / sqrt(hs), of shape (C + 1, C + 1).
    """
    wq, bq, wk, bk = (np.asarray(t, dtype=np.float64) for t in (wq, bq, wk, bk))
    c = wq.shape[1]
    hs = wq.shape[0] // n_head
    aq = np.concatenate([wq, bq[:, None]], axis=1)  # (C_out, C + 1)
    ak = np.concatenate([wk, bk[:, None]], axis=1)  # (C_out, C + 1)
    mats = []
    for h in range(n_head):
        rows = slice(h * hs, (h + 1) * hs)
        mats.append(aq[rows].T @ ak[rows] / math.sqrt(hs))  # (C+1, C+1)
    out = np.stack(mats)  # (n_head, C+1, C+1)
    assert out.shape == (n_head, c + 1, c + 1)
    return out


def merged_scores(x, mats):
    """Scores (n_head, T, T) of inputs x (T, C) under merged matrices from merged_qk."""
    x = np.asarray(x, dtype=np.float64)
    xt = np.concatenate([x, np.ones((x.shape[0], 1))], axis=1)  # (T, C+1): a constant 1 for the biases
    return (xt[None] @ mats) @ xt.T  # (n_head, T, T)


# ---------------------------------------------------------------------------------------------
# Loss shaping (problem 1): attention arrays have shape (..., T, T), rows = query position t1,
# columns = key position t2, each row a probability distribution (causal or not).
# ---------------------------------------------------------------------------------------------
def attention_entropy(att):
    """Entropy in nats of every attention row, shape (..., T); 0 log 0 is taken as 0."""
    att = np.asarray(att, dtype=np.float64)
    logs = np.log(np.where(att > 0, att, 1.0))
    return -np.sum(att * logs, axis=-1)


def focus_loss(att):
    """L_focus: mean attention entropy over layers, heads, batch and query positions."""
    return float(np.mean(attention_entropy(att)))


def focus_loss_max(T, causal=True):
    """Largest possible L_focus for a window of T positions (uniform rows).

    Causal row t1 (0-based) can spread over t1 + 1 keys, so the bound is mean_t ln(t + 1)
    = ln(T!) / T, which grows like ln T - 1: this term is NOT independent of the window.
    """
    if causal:
        return math.lgamma(T + 1) / T
    return math.log(T)


def _distances(T):
    idx = np.arange(T, dtype=np.float64)
    return idx[:, None] - idx[None, :]  # (T, 1) - (1, T) -> (T, T): t1 - t2


def nearness_loss(att, width):
    """Robust L_near: mean over rows of sum_t2 att[t1, t2] * min(1, ((t1 - t2) / width)^2).

    Each attention pair costs at most 1, so 0 <= L_near <= 1 whatever the window length T; an
    outlier weight eps on a far key costs at most eps.
    """
    att = np.asarray(att, dtype=np.float64)
    T = att.shape[-1]
    rho = np.minimum(1.0, (_distances(T) / float(width)) ** 2)
    return float(np.mean(np.sum(att * rho, axis=-1)))


def nearness_loss_squared(att):
    """Non-robust contrast: mean over rows of sum_t2 att[t1, t2] (t1 - t2)^2, up to (T - 1)^2."""
    att = np.asarray(att, dtype=np.float64)
    T = att.shape[-1]
    return float(np.mean(np.sum(att * _distances(T) ** 2, axis=-1)))


def causal_uniform(T):
    """Causal attention spreading each row uniformly over its allowed keys (maximal entropy)."""
    tri = np.tril(np.ones((T, T)))
    return tri / tri.sum(axis=1, keepdims=True)


# ---------------------------------------------------------------------------------------------
# Repetition (problem 4)
# ---------------------------------------------------------------------------------------------
def first_repeated_state(seq, window, start=0):
    """First (i, j), start <= i < j, with seq[i:i+window] == seq[j:j+window]; None if none.

    The state of a model that reads only its last `window` tokens is that window; j is the first
    step at which an earlier state comes back.
    """
    seq = list(seq)
    seen = {}
    for j in range(start, len(seq) - window + 1):
        state = tuple(seq[j:j + window])
        if state in seen:
            return seen[state], j
        seen[state] = j
    return None

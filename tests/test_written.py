"""Numerical checks of every mathematical claim in the written answers (submission.tex).

Run:  python -m pytest -q tests/test_written.py      (CPU only, a few seconds)

Each test is named after the answer it checks (test_3c_ii_* checks 3(c)ii, test_p4_* checks
problem 4 of the problem-set section, ...). The attention algebra runs in float64 NumPy through
written/checks.py, the same helpers that draw the figures; the tests that import src/submission
(through `_project()`, or its utils.sample) use the project's own CausalSelfAttention, GPT and sample.
"""
import math
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from written import checks  # noqa: E402

torch = pytest.importorskip("torch")


def normal_cdf(x):
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def orthonormal(rng, n, d):
    """n random orthonormal vectors in R^d, as rows."""
    q, _ = np.linalg.qr(rng.standard_normal((d, n)))
    return q.T


# =============================================================================================
# 3(a) copying
# =============================================================================================
def test_3a_query_aligned_with_key_copies_value():
    rng = np.random.default_rng(0)
    n, d = 6, 10
    keys = orthonormal(rng, n, d)
    values = rng.standard_normal((n, 4))
    for j in range(n):
        spread = np.max(np.linalg.norm(values - values[j], axis=1))
        for beta in (5.0, 10.0, 25.0):
            w, c = checks.attend(beta * keys[j], keys, values)
            leftover = (n - 1) * math.exp(-beta)  # margin beta between k_j . q and the rest
            assert w[j] >= 1 - leftover - 1e-15
            assert np.linalg.norm(c - values[j]) <= leftover * spread + 1e-14
        assert np.linalg.norm(c - values[j]) < 1e-9


def test_3a_margin_bound():
    """1 - alpha_j <= (n-1) e^-margin and ||c - v_j|| <= (1 - alpha_j) max ||v_i - v_j||."""
    rng = np.random.default_rng(1)
    for _ in range(500):
        n = int(rng.integers(2, 12))
        s = rng.normal(0, 3, n)
        j = int(rng.integers(n))
        s[j] = np.max(np.delete(s, j)) + rng.uniform(0, 20)
        margin = s[j] - np.max(np.delete(s, j))
        w = checks.softmax(s)
        assert 1 - w[j] <= (n - 1) * math.exp(-margin) * (1 + 1e-12)
        values = rng.standard_normal((n, 3))
        c = w @ values
        spread = np.max(np.linalg.norm(values - values[j], axis=1))
        assert np.linalg.norm(c - values[j]) <= (1 - w[j]) * spread + 1e-12
    # the margin that guarantees 1 - eps
    n, eps = 50, 1e-3
    s = np.zeros(n)
    s[0] = math.log((n - 1) / eps)
    assert checks.softmax(s)[0] >= 1 - eps


def test_3a_sum_criterion_is_neither_sufficient_nor_necessary():
    # s_1 >> s_2 + s_3 but no copying
    s = [10.0, 10.0, -100.0]
    assert s[0] - sum(s[1:]) >= 100.0
    assert abs(checks.softmax(s)[0] - 0.5) < 1e-12
    # exactly alpha_1 = 1 / (e^0 + e^(s_2-s_1) + e^(s_3-s_1)) = 1 / (2 + e^-110), which float64 rounds to 1/2
    terms = [math.exp(si - s[0]) for si in s]
    assert terms[:2] == [1.0, 1.0] and terms[2] == pytest.approx(math.exp(-110.0), rel=1e-12)
    # s_1 < sum of the others (36), yet copying: the answer's second example
    s = [30.0, 12.0, 12.0, 12.0]
    assert s[0] < sum(s[1:]) == 36.0
    assert checks.softmax(s)[0] > 1 - 1e-7


def test_3a_i_weights_are_a_categorical_distribution():
    """Later handouts' 3(a)i: the weights are positive, sum to 1, each below 1 once n >= 2 (1 for n = 1), and the
    output is the values' expectation under them."""
    rng = np.random.default_rng(11)
    for n in (1, 2, 5, 40):
        for _ in range(50):
            keys, values = rng.normal(0, 2, (n, 6)), rng.standard_normal((n, 3))
            w, c = checks.attend(rng.standard_normal(6), keys, values)
            assert np.all(w > 0) and abs(w.sum() - 1) < 1e-12
            assert np.all(w < 1) if n >= 2 else w[0] == 1.0
            assert np.allclose(c, sum(w[i] * values[i] for i in range(n)), atol=1e-12)


# =============================================================================================
# 3(b) an average of two
# =============================================================================================
def test_3b_i_projection_keeps_v_a_and_removes_v_b():
    """Later handouts' 3(b)i: M = A A^T maps s = v_a + v_b to v_a, for orthonormal a's and b's that are only
    orthogonal to them (not to each other, not of length 1); A^T s is v_a's coordinates c, of another size."""
    rng = np.random.default_rng(12)
    d, m, p = 10, 3, 4
    A = orthonormal(rng, m, d).T                     # (d, m): orthonormal columns a_i
    B = rng.standard_normal((d, p)) * 3
    B -= A @ (A.T @ B)                               # (d, p): b_j orthogonal to every a_i, nothing more
    assert np.allclose(A.T @ B, 0, atol=1e-12) and not np.allclose(B.T @ B, np.eye(p))
    M = A @ A.T                                      # (d, d)
    for _ in range(20):
        c, e = rng.standard_normal(m), rng.standard_normal(p)
        v_a, v_b = A @ c, B @ e
        assert np.allclose(M @ (v_a + v_b), v_a, atol=1e-12)
        assert np.allclose(M @ v_b, 0, atol=1e-12) and np.allclose(M @ v_a, v_a, atol=1e-12)
        slip = A.T @ (v_a + v_b)                     # the common slip, M = A^T
        assert slip.shape == (m,) and np.allclose(slip, c, atol=1e-12) and np.allclose(A @ slip, v_a, atol=1e-12)


def test_3b_average_of_two():
    rng = np.random.default_rng(2)
    n, d = 7, 9
    keys = orthonormal(rng, n, d)
    values = rng.standard_normal((n, 5))
    a, b = 2, 5
    target = 0.5 * (values[a] + values[b])
    errors = []
    for beta in (2.0, 5.0, 10.0, 20.0, 40.0):
        w, c = checks.attend(beta * (keys[a] + keys[b]), keys, values)
        exact = math.exp(beta) / (2 * math.exp(beta) + n - 2)
        assert w[a] == pytest.approx(exact, rel=1e-12)
        assert w[b] == pytest.approx(exact, rel=1e-12)
        bound = (n - 2) / (2 * math.exp(beta) + n - 2) * np.max(np.linalg.norm(values - target, axis=1))
        err = np.linalg.norm(c - target)
        assert err <= bound + 1e-12
        errors.append(err)
    assert all(e2 < e1 for e1, e2 in zip(errors, errors[1:]))
    assert errors[-1] < 1e-12


def test_3b_subtracting_other_keys_converges_faster():
    rng = np.random.default_rng(3)
    n, d = 7, 7
    keys = orthonormal(rng, n, d)
    a, b = 0, 1
    others = [i for i in range(n) if i not in (a, b)]
    for beta in (2.0, 4.0, 8.0):
        w_plain, _ = checks.attend(beta * (keys[a] + keys[b]), keys, np.eye(n))
        q = beta * (keys[a] + keys[b] - keys[others].sum(axis=0))
        w_sub, _ = checks.attend(q, keys, np.eye(n))
        assert w_sub[a] == pytest.approx(math.exp(beta) / ((n - 2) * math.exp(-beta) + 2 * math.exp(beta)))
        leftover_plain = 1 - w_plain[a] - w_plain[b]
        leftover_sub = 1 - w_sub[a] - w_sub[b]
        assert leftover_sub < leftover_plain
        assert leftover_sub <= (n - 2) * math.exp(-2 * beta) / 2 + 1e-15


# =============================================================================================
# 3(c) and 3(d): sampled keys
# =============================================================================================
N_KEYS, BETA, DRAWS = 8, 30.0, 20000


def _draws(seed, alpha=1e-10, draws=DRAWS):
    rng = np.random.default_rng(seed)
    return checks.sample_perturbed_keys(rng, draws, N_KEYS, N_KEYS, 0, alpha=alpha)


def test_3c_i_small_noise_averages():
    rng = np.random.default_rng(10)
    mu = np.eye(N_KEYS)
    keys = mu[None] + math.sqrt(1e-10) * rng.standard_normal((5000, N_KEYS, N_KEYS))
    w = checks.weight_on_a_one_head(keys, 0, 1, BETA)
    assert np.max(np.abs(w - 0.5)) < 1e-3
    # the assumption matters: with beta * sqrt(alpha) of order one the split is random again
    noisy = mu[None] + (1.0 / BETA) * rng.standard_normal((5000, N_KEYS, N_KEYS))
    w_noisy = checks.weight_on_a_one_head(noisy, 0, 1, BETA)
    assert np.std(w_noisy) > 0.2


def test_3c_ii_key_scale_distribution():
    keys, gamma = _draws(13)
    assert np.mean(gamma) == pytest.approx(1.0, abs=0.02)
    assert np.var(gamma) == pytest.approx(0.5, rel=0.04)
    # k_a is (almost) a multiple of mu_a: the part orthogonal to mu_a is of order sqrt(alpha)
    resid = keys[:, 0, 1:]
    assert np.max(np.abs(resid)) < 1e-4
    # the other keys, k_b included, stay at their means
    assert np.max(np.abs(keys[:, 1:, :] - np.eye(N_KEYS)[1:][None])) < 1e-4


def test_3c_ii_sampled_keys_have_the_stated_covariance():
    """Sigma_i = alpha I, plus scale_var mu_a mu_a^T for key a: checked at an alpha large enough to
    measure (at the figures' 1e-10 a noise of alpha instead of sqrt(alpha) would pass unseen)."""
    rng = np.random.default_rng(17)
    keys, gamma = checks.sample_perturbed_keys(rng, 40000, 4, 6, 1, alpha=0.01, scale_var=0.5)
    assert keys.shape == (40000, 4, 6) and gamma.shape == (40000,)
    noise = keys - np.eye(4, 6)[None]
    for i in range(4):
        cov = np.cov(noise[:, i, :], rowvar=False)  # (6, 6)
        expected = 0.01 * np.eye(6) + (0.5 * np.outer(np.eye(4, 6)[1], np.eye(4, 6)[1]) if i == 1 else 0)
        np.testing.assert_allclose(cov, expected, atol=0.01 * 0.05 + (0.02 if i == 1 else 0))
    assert np.var(gamma) == pytest.approx(0.51, rel=0.04)
    # n orthonormal means need d >= n dimensions: with fewer a mean would be zero
    checks.sample_perturbed_keys(rng, 2, 4, 4, 0)
    with pytest.raises(ValueError, match="d >= n"):
        checks.sample_perturbed_keys(rng, 2, 4, 3, 0)


def test_3c_ii_single_head_spreads():
    keys, gamma = _draws(14)
    w = checks.weight_on_a_one_head(keys, 0, 1, BETA)
    # bimodal: near v_a or near v_b, each about half of the time
    assert np.mean(w > 0.5) == pytest.approx(0.5, abs=0.02)
    assert np.std(w) > 0.45
    assert np.mean(w) == pytest.approx(0.5, abs=0.02)
    # the winner is decided by gamma > 1, i.e. by which key reaches further along q
    assert np.mean((w > 0.5) == (gamma > 1.0)) > 0.999
    # sigmoid(beta (gamma - 1)) approximation (what is left: the n - 2 other keys, ~ n e^-beta,
    # and the O(beta sqrt(alpha)) noise in the scores)
    sig = 1.0 / (1.0 + np.exp(-BETA * (gamma - 1.0)))
    assert np.max(np.abs(w - sig)) < 2e-3
    # intermediate outputs only for |gamma - 1| <~ 1/beta: fraction ~ 2 ln 9 / (beta sqrt(pi))
    mid = np.mean((w >= 0.1) & (w <= 0.9))
    assert mid == pytest.approx(2 * math.log(9) / (BETA * math.sqrt(math.pi)), abs=0.012)
    # ... a fraction that shrinks like 1 / beta
    mids = [np.mean(((m := checks.weight_on_a_one_head(keys, 0, 1, beta)) >= 0.1) & (m <= 0.9))
            for beta in (10.0, 100.0)]
    assert mids[0] > 4 * mids[1]


def test_3d_i_two_heads_average():
    rng = np.random.default_rng(15)
    keys = np.eye(N_KEYS)[None] + math.sqrt(1e-10) * rng.standard_normal((2000, N_KEYS, N_KEYS))
    w = checks.weight_on_a_two_heads(keys, 0, 1, BETA)
    head = math.exp(BETA) / (math.exp(BETA) + N_KEYS - 1)
    assert np.max(np.abs(w - 0.5 * head)) < 1e-3
    values = rng.standard_normal((N_KEYS, 3))
    mu = np.eye(N_KEYS)
    _, c1 = checks.attend(BETA * mu[0], keys[0], values)
    _, c2 = checks.attend(BETA * mu[1], keys[0], values)
    assert np.linalg.norm(0.5 * (c1 + c2) - 0.5 * (values[0] + values[1])) < 1e-9


def test_3d_ii_two_heads_stay_near_half():
    keys, gamma = _draws(16)
    one = checks.weight_on_a_one_head(keys, 0, 1, BETA)
    two = checks.weight_on_a_two_heads(keys, 0, 1, BETA)
    assert np.mean(np.abs(two - 0.5) < 0.01) > 0.85
    assert np.std(two) < 0.2 < 0.45 < np.std(one)
    # every draw with gamma clearly positive gives 1/2 (v_a + v_b)
    assert np.max(np.abs(two[gamma > 0.3] - 0.5)) < 0.01
    # the case the question ignores has probability Phi(-sqrt 2) ~ 7.9 %
    assert np.mean(gamma <= 0) == pytest.approx(normal_cdf(-math.sqrt(2.0)), abs=0.006)
    # ... and there head 1 spreads evenly over the other n - 1 values
    neg = keys[gamma < -0.3]
    w1, _ = checks.attend(BETA * np.eye(N_KEYS)[0], neg, np.zeros(neg.shape[:-1] + (1,)))
    assert np.max(np.abs(w1[:, 1:] - 1.0 / (N_KEYS - 1))) < 1e-3
    # head 2 ignores k_a whatever its length
    w2, _ = checks.attend(BETA * np.eye(N_KEYS)[1], keys, np.zeros(keys.shape[:-1] + (1,)))
    assert np.max(w2[:, 0]) < 1e-10


# =============================================================================================
# 3(e) key-query-value self-attention
# =============================================================================================
def _us(beta, seed=20, d=6):
    rng = np.random.default_rng(seed)
    ua, ub, uc, ud = beta * orthonormal(rng, 4, d)
    return ua, ub, uc, ud


def _self_attention(X, Q, K, V):
    """Rows of X are the x_i; returns (weights, C) with c_i = sum_j alpha_ij V x_j."""
    q, k, v = X @ Q.T, X @ K.T, X @ V.T
    w = checks.softmax(q @ k.T, axis=-1)
    return w, w @ v


def test_3e_i_c2_copies_ua():
    beta = 4.0
    ua, ub, uc, ud = _us(beta)
    X = np.stack([ud + ub, ua, uc + ub])
    eye = np.eye(X.shape[1])
    w, C = _self_attention(X, eye, eye, eye)
    assert w[1, 1] == pytest.approx(math.exp(beta ** 2) / (math.exp(beta ** 2) + 2), rel=1e-12)
    assert np.linalg.norm(C[1] - ua) < 1e-5


@pytest.mark.parametrize("extra", ["ud", "uc"])
def test_3e_i_adding_ud_or_uc_cannot_give_ub(extra):
    beta = 4.0
    ua, ub, uc, ud = _us(beta)
    add = {"ud": ud, "uc": uc}[extra]
    X = np.stack([ud + ub, ua + add, uc + ub])
    eye = np.eye(X.shape[1])
    w, C = _self_attention(X, eye, eye, eye)
    # the word still attends to itself: c_2 ~ u_a + the added vector
    assert np.linalg.norm(C[1] - (ua + add)) < 1e-5
    # and no attention weights whatsoever bring c_2 within beta / sqrt(3) of u_b
    rng = np.random.default_rng(21)
    weights = rng.dirichlet(np.ones(3) * 0.3, size=20000)
    weights = np.vstack([weights, np.eye(3), [[1 / 3, 1 / 3, 1 / 3], [0.5, 0.0, 0.5]]])
    dist = np.linalg.norm(weights @ X - ub, axis=1)
    assert np.min(dist) >= beta / math.sqrt(3) - 1e-9


def test_3e_i_adding_ud_to_the_query_alone_gives_half_of_ub():
    """The answer's other reading: u_d added to the query of word 2 only, keys and values the inputs."""
    beta = 4.0
    ua, ub, uc, ud = _us(beta)
    X = np.stack([ud + ub, ua, uc + ub])
    scores = X @ (ua + ud)
    np.testing.assert_allclose(scores, [beta ** 2, beta ** 2, 0.0], atol=1e-12)
    c2 = checks.softmax(scores) @ X
    assert np.linalg.norm(c2 - (0.5 * (ud + ub) + 0.5 * ua)) < 1e-5
    # about half of u_b: its coefficient in c_2 is alpha_1 + alpha_3 = 1/2 + 1 / (2 (2 e^beta^2 + 1))
    e = math.exp(beta ** 2)
    assert c2 @ ub / beta ** 2 == pytest.approx(0.5 + 1.0 / (2.0 * (2.0 * e + 1.0)), rel=1e-12)


def _kqv_answer(beta):
    ua, ub, uc, ud = _us(beta)
    d = ua.size
    V = (np.outer(ub, ub) - np.outer(uc, uc)) / beta ** 2
    K = np.eye(d)
    Q = (np.outer(uc, ud) + np.outer(ud, ua)) / beta ** 2
    X = np.stack([ud + ub, ua, uc + ub])
    return (ua, ub, uc, ud), X, Q, K, V


def test_3e_ii_kqv_route_values():
    for beta in (3.0, 4.0, 6.0):
        (ua, ub, uc, ud), X, Q, K, V = _kqv_answer(beta)
        # values, keys, queries as derived in the answer
        np.testing.assert_allclose(X @ V.T, np.stack([ub, 0 * ub, ub - uc]), atol=1e-12)
        np.testing.assert_allclose((X @ Q.T)[:2], np.stack([uc, ud]), atol=1e-12)
        np.testing.assert_allclose((X @ Q.T)[2], 0, atol=1e-12)
        w, C = _self_attention(X, Q, K, V)
        np.testing.assert_allclose((X @ Q.T)[:2] @ (X @ K.T).T,
                                   [[0, 0, beta ** 2], [beta ** 2, 0, 0]], atol=1e-9)
        bound = 2 * math.exp(-beta ** 2) * 2 * math.sqrt(2) * beta
        assert np.linalg.norm(C[1] - ub) <= bound
        assert np.linalg.norm(C[0] - (ub - uc)) <= bound
    assert np.linalg.norm(C[1] - ub) < 1e-12


def test_3e_ii_sign_slip():
    beta = 4.0
    (ua, ub, uc, ud), X, _, K, V = _kqv_answer(beta)
    Q_wrong = (np.outer(ud, ua) - np.outer(uc, ud)) / beta ** 2
    _, C = _self_attention(X, Q_wrong, K, V)
    assert np.linalg.norm(C[0] - 0.5 * ub) < 1e-5
    assert np.linalg.norm(C[0] - (ub - uc)) > beta


# =============================================================================================
# Project helpers: the model's attention from its own weights
# =============================================================================================
def test_synthesizer_weights_ignore_the_attended_tokens():
    """Answer 'Synthesizer': row i's weights depend on x_i and on position only. Changing every other
    token leaves row i of a synthesizer layer unchanged, but changes vanilla attention's row i."""
    import torch
    from submission.attention import SynthesizerAttention
    from plots import attention_weights
    _, GPTConfig, CausalSelfAttention = _project()
    torch.manual_seed(0)
    cfg = GPTConfig(20, 16, n_layer=1, n_head=2, n_embd=8)
    x = torch.randn(1, 10, 8)
    y = torch.randn(1, 10, 8)
    y[0, 6] = x[0, 6]  # row 6's own input kept, every other input redrawn
    synth, vanilla = SynthesizerAttention(cfg).eval(), CausalSelfAttention(cfg).eval()
    with torch.no_grad():
        torch.nn.init.normal_(synth.w2, std=0.5)  # (its init is near zero: make the weights uneven)
        s_x, s_y = attention_weights(synth, x)[0, :, 6], attention_weights(synth, y)[0, :, 6]
        v_x, v_y = attention_weights(vanilla, x)[0, :, 6], attention_weights(vanilla, y)[0, :, 6]
    assert torch.allclose(s_x, s_y, atol=1e-7) and (s_x.max() - s_x[:, :7].min()) > 0.05
    assert not torch.allclose(v_x, v_y, atol=1e-3)


def _project():
    from submission.attention import CausalSelfAttention
    from submission.model import GPT, GPTConfig
    return GPT, GPTConfig, CausalSelfAttention


def _module_attention(attn, x):
    """Attention probabilities (B, nh, T, T) of a CausalSelfAttention on input x, from its weights."""
    def weight_and_bias(lin):
        w = lin.weight.detach().double().numpy()
        b = lin.bias.detach().double().numpy() if lin.bias is not None else np.zeros(w.shape[0])
        return w, b

    (wq, bq), (wk, bk) = weight_and_bias(attn.query), weight_and_bias(attn.key)
    mats = checks.merged_qk(wq, bq, wk, bk, attn.n_head)
    out = []
    for xb in x.detach().double().numpy():
        s = checks.merged_scores(xb, mats)
        T = s.shape[-1]
        s = np.where(np.tril(np.ones((T, T))) > 0, s, -np.inf)
        out.append(checks.softmax(s, axis=-1))
    return np.stack(out)


def _model_attention(model, idx):
    """Stack (n_layer, B, nh, T, T) of every CausalSelfAttention's probabilities on idx."""
    _, _, CausalSelfAttention = _project()
    inputs = []
    hooks = [m.register_forward_hook(lambda mod, inp, out: inputs.append((mod, inp[0])))
             for m in model.modules() if isinstance(m, CausalSelfAttention)]
    try:
        with torch.no_grad():
            model(idx)
    finally:
        for h in hooks:
            h.remove()
    assert inputs, "no CausalSelfAttention found in the model"
    return np.stack([_module_attention(mod, x) for mod, x in inputs])


# =============================================================================================
# Problem 1: loss shaping
# =============================================================================================
def _random_causal_attention(rng, shape, T, sharpness=1.0):
    s = rng.normal(0, sharpness, shape + (T, T))
    s = np.where(np.tril(np.ones((T, T))) > 0, s, -np.inf)
    return checks.softmax(s, axis=-1)


def test_p1b_focus_bounds():
    rng = np.random.default_rng(30)
    for T in (1, 2, 5, 16, 64):
        bound = checks.focus_loss_max(T)
        assert bound == pytest.approx(sum(math.log(t) for t in range(1, T + 1)) / T)
        assert bound <= math.log(T) + 1e-12
        assert bound < math.log(T) or T == 1  # strictly below ln T once T >= 2; both 0 at T = 1
        for sharp in (0.1, 1.0, 10.0):
            att = _random_causal_attention(rng, (2, 3, 4), T, sharp)
            assert 0.0 <= checks.focus_loss(att) <= bound + 1e-12
        # maximal exactly for uniform rows, zero exactly for one-hot rows
        assert checks.focus_loss(checks.causal_uniform(T)) == pytest.approx(bound, abs=1e-12)
        assert checks.focus_loss(np.eye(T)) == 0.0
        # the uniform rows are causal ones: nothing above the diagonal, each row a distribution
        uniform = checks.causal_uniform(T)
        assert np.all(np.triu(uniform, 1) == 0) and np.allclose(uniform.sum(-1), 1.0)
        # without the causal mask every row spreads over all T keys: ln T, that of full uniform rows
        assert checks.focus_loss_max(T, causal=False) == pytest.approx(math.log(T), abs=1e-12)
        assert checks.focus_loss(np.full((T, T), 1.0 / T)) == pytest.approx(checks.focus_loss_max(T, causal=False))
    # the maximum grows with the window, like ln T - 1
    big = checks.focus_loss_max(4096)
    assert big == pytest.approx(math.log(4096) - 1, abs=0.01)


def test_p1b_focus_on_project_attention():
    """Freshly initialised, the project's attention is nearly uniform: L_focus near its maximum."""
    GPT, GPTConfig, _ = _project()
    torch.manual_seed(0)
    T = 32
    model = GPT(GPTConfig(50, T, n_layer=2, n_head=4, n_embd=64)).eval()
    idx = torch.randint(0, 50, (3, T))
    att = _model_attention(model, idx)
    assert att.shape == (2, 3, 4, T, T)
    np.testing.assert_allclose(att.sum(-1), 1.0, atol=1e-12)
    focus = checks.focus_loss(att)
    assert 0.98 * checks.focus_loss_max(T) <= focus <= checks.focus_loss_max(T) + 1e-12
    near = checks.nearness_loss(att, width=4)
    assert 0.0 <= near <= 1.0


def test_p1c_near_bounded_for_any_window():
    rng = np.random.default_rng(31)
    for T in (4, 32, 256):
        for sharp in (0.1, 1.0, 10.0):
            att = _random_causal_attention(rng, (2,), T, sharp)
            assert 0.0 <= checks.nearness_loss(att, width=4) <= 1.0
        # the worst case (all weight on the first, farthest position) stays below 1 for every T
        worst = np.zeros((T, T))
        worst[:, 0] = 1.0
        assert checks.nearness_loss(worst, width=4) <= 1.0
        # the unclipped version grows like T^2
        assert checks.nearness_loss_squared(worst) == pytest.approx(
            np.mean(np.arange(T, dtype=float) ** 2))
        # attention to oneself costs nothing
        assert checks.nearness_loss(np.eye(T), width=4) == 0.0


def test_p1c_near_outlier_cost_independent_of_window():
    eps, width = 0.05, 4
    robust, plain = [], []
    for T in (16, 64, 256, 1024):
        base = np.zeros((T, T))
        base[np.arange(T), np.arange(T)] = 1.0
        out = base.copy()
        last = T - 1
        out[last, last] -= eps
        out[last, 0] += eps  # an outlier weight eps on the farthest token
        # cost per row of the outlier (undo the 1/T averaging over rows)
        robust.append((checks.nearness_loss(out, width) - checks.nearness_loss(base, width)) * T)
        plain.append((checks.nearness_loss_squared(out) - checks.nearness_loss_squared(base)) * T)
    np.testing.assert_allclose(robust, eps, rtol=1e-12)
    assert plain == pytest.approx([eps * (T - 1) ** 2 for T in (16, 64, 256, 1024)])


def test_p1d_shaping_cannot_lower_population_loss():
    """A universal model row a = softmax(theta) fitted to a population distribution p*: adding a
    shaping term leaves the LM loss at or above its unshaped minimum H(p*)."""
    torch.manual_seed(0)
    T = 6
    p_star = torch.tensor([0.05, 0.1, 0.15, 0.2, 0.2, 0.3], dtype=torch.float64)
    dist2 = torch.minimum(torch.ones(T, dtype=torch.float64),
                          ((T - 1 - torch.arange(T, dtype=torch.float64)) / 2.0) ** 2)

    def fit(lam_focus, lam_near):
        theta = torch.zeros(T, dtype=torch.float64, requires_grad=True)
        opt = torch.optim.LBFGS([theta], max_iter=500, tolerance_grad=1e-12, tolerance_change=1e-15,
                                line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            logp = torch.log_softmax(theta, 0)
            p = logp.exp()
            loss = -(p_star * logp).sum() + lam_focus * -(p * logp).sum() + lam_near * (p * dist2).sum()
            loss.backward()
            return loss

        opt.step(closure)
        logp = torch.log_softmax(theta.detach(), 0)
        return float(-(p_star * logp).sum()), float(-(logp.exp() * logp).sum())

    h_star = float(-(p_star * p_star.log()).sum())
    lm0, _ = fit(0.0, 0.0)
    assert lm0 == pytest.approx(h_star, abs=1e-9)
    for lf, ln in ((0.1, 0.0), (0.5, 0.0), (0.0, 0.3), (0.2, 0.2)):
        lm, ent = fit(lf, ln)
        assert lm > h_star + 1e-6
        if lf > 0:
            assert ent < h_star  # sharper attention, paid for in LM loss


# =============================================================================================
# Problem 2: temperature 1 / sqrt(I)
# =============================================================================================
def test_p2_unit_variance_at_inverse_sqrt_dim():
    rng = np.random.default_rng(40)
    n = 20000
    for dim in (4, 32, 256):
        h = rng.standard_normal((n, dim))
        e = rng.standard_normal((n, dim))
        raw = np.sum(h * e, axis=1)
        scaled = raw / math.sqrt(dim)
        assert abs(np.mean(scaled)) < 0.03
        assert np.var(scaled) == pytest.approx(1.0, abs=0.05)
        assert np.var(raw) == pytest.approx(dim, rel=0.05)
        # also for non-Gaussian unit-variance entries (only independence and moments matter)
        hu = rng.uniform(-math.sqrt(3), math.sqrt(3), (n, dim))
        eu = rng.choice([-1.0, 1.0], (n, dim))
        assert np.var(np.sum(hu * eu, axis=1) / math.sqrt(dim)) == pytest.approx(1.0, abs=0.05)


def _reference_forward(attn, x, scale):
    """The module's output rebuilt from merged W^QK scores with a given temperature."""
    xd = x.detach().double().numpy()
    C = xd.shape[-1]
    hs = C // attn.n_head
    probs = []
    wq, wk = attn.query.weight.detach().double().numpy(), attn.key.weight.detach().double().numpy()
    bq, bk = attn.query.bias.detach().double().numpy(), attn.key.bias.detach().double().numpy()
    mats = checks.merged_qk(wq, bq, wk, bk, attn.n_head) * math.sqrt(hs) * scale
    for xb in xd:
        s = checks.merged_scores(xb, mats)
        T = s.shape[-1]
        s = np.where(np.tril(np.ones((T, T))) > 0, s, -np.inf)
        probs.append(checks.softmax(s, axis=-1))
    probs = np.stack(probs)  # (B, nh, T, T)
    v = xd @ attn.value.weight.detach().double().numpy().T + attn.value.bias.detach().double().numpy()
    B, T, _ = v.shape
    v = v.reshape(B, T, attn.n_head, hs).transpose(0, 2, 1, 3)
    y = (probs @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
    return y @ attn.proj.weight.detach().double().numpy().T + attn.proj.bias.detach().double().numpy()


def _random_attention_module(seed, n_embd=32, n_head=4, block=12):
    _, GPTConfig, CausalSelfAttention = _project()
    torch.manual_seed(seed)
    attn = CausalSelfAttention(GPTConfig(20, block, n_layer=1, n_head=n_head, n_embd=n_embd))
    with torch.no_grad():
        for lin in (attn.query, attn.key, attn.value, attn.proj):
            lin.weight.normal_(0, 0.4)
            lin.bias.normal_(0, 0.4)  # non-zero biases, so their merged form is exercised
    return attn.double().eval()


def test_p2b_project_scales_by_head_dim():
    attn = _random_attention_module(41)
    x = torch.randn(2, 10, 32, dtype=torch.float64)
    with torch.no_grad():
        y = attn(x).numpy()
    hs = 32 // attn.n_head
    assert np.max(np.abs(y - _reference_forward(attn, x, 1 / math.sqrt(hs)))) < 1e-10
    assert np.max(np.abs(y - _reference_forward(attn, x, 1 / math.sqrt(32)))) > 1e-3


def test_p2b_initial_scores_are_small():
    """With the project's initialisation the scaled scores have std about 0.1, not 1."""
    GPT, GPTConfig, _ = _project()
    torch.manual_seed(1)
    T = 64
    model = GPT(GPTConfig(256, T, n_layer=1, n_head=8, n_embd=256)).eval()
    idx = torch.randint(0, 256, (4, T))
    att = _model_attention(model, idx)
    # recover scores as log-probabilities relative to the row mean (rows are softmaxes)
    rows = np.log(att[0][..., T - 1, :])  # the last row sees all T keys
    scores = rows - rows.mean(axis=-1, keepdims=True)
    assert 0.06 < np.std(scores) < 0.15


# =============================================================================================
# Problem 3(b) / 5(a): one merged matrix per head
# =============================================================================================
@pytest.mark.parametrize("fast", [True, False])
def test_p3b_merged_wqk_reproduces_causal_self_attention(fast):
    attn = _random_attention_module(42)
    if hasattr(attn, "fast"):
        attn.fast = fast
    x = torch.randn(3, 12, 32, dtype=torch.float64)
    hs = 32 // attn.n_head
    # scores from split heads, as the module computes them ...
    with torch.no_grad():
        q = attn.query(x).view(3, 12, attn.n_head, hs).transpose(1, 2)
        k = attn.key(x).view(3, 12, attn.n_head, hs).transpose(1, 2)
        split = ((q @ k.transpose(-2, -1)) / math.sqrt(hs)).numpy()
    # ... equal those from one (C+1) x (C+1) matrix per head
    wq, wk = attn.query.weight.detach().numpy(), attn.key.weight.detach().numpy()
    bq, bk = attn.query.bias.detach().numpy(), attn.key.bias.detach().numpy()
    mats = checks.merged_qk(wq, bq, wk, bk, attn.n_head)
    merged = np.stack([checks.merged_scores(xb, mats) for xb in x.numpy()])
    assert np.max(np.abs(split - merged)) < 1e-10
    # the module's whole output is rebuilt from the merged scores
    with torch.no_grad():
        y = attn(x).numpy()
    assert np.max(np.abs(y - _reference_forward(attn, x, 1 / math.sqrt(hs)))) < 1e-10
    # only the per-key bias term bq^T Wk x_t2 matters: dropping the row-constant terms
    # (x^T Wq^T bk and bq . bk) leaves the attention weights unchanged
    trimmed = mats.copy()
    trimmed[:, :-1, -1] = 0.0
    trimmed[:, -1, -1] = 0.0
    for xb in x.numpy():
        T = xb.shape[0]
        tri = np.tril(np.ones((T, T))) > 0
        p_full = checks.softmax(np.where(tri, checks.merged_scores(xb, mats), -np.inf))
        p_trim = checks.softmax(np.where(tri, checks.merged_scores(xb, trimmed), -np.inf))
        assert np.max(np.abs(p_full - p_trim)) < 1e-12


def _merged_cores(seed):
    """The merged query-key matrices W^QK (J x J, biases left out) of a random 4-head attention layer."""
    attn = _random_attention_module(seed, n_embd=32, n_head=4)
    wq, wk = attn.query.weight.detach().numpy(), attn.key.weight.detach().numpy()
    return [m[:-1, :-1] for m in checks.merged_qk(wq, np.zeros(32), wk, np.zeros(32), attn.n_head)]


def test_p3a_learned_scores_differ_by_head_and_are_not_symmetric():
    cores = _merged_cores(43)
    L = np.random.default_rng(5).standard_normal((6, 32))  # six tokens' layer vectors
    plain = L @ L.T  # the plain inner product: one pattern for every head, symmetric
    assert np.allclose(plain, plain.T)
    per_head = [L @ m @ L.T for m in cores]  # (6, 6) scores, query rows, key columns
    for s in per_head:
        assert np.max(np.abs(s - s.T)) > 1e-3  # a head's scores are not symmetric
    assert np.max(np.abs(per_head[0] - per_head[1])) > 1e-3  # and the heads differ


def test_p3b_merged_matrix_has_the_rank_of_a_head():
    for core in _merged_cores(43):
        assert np.linalg.matrix_rank(core) == 32 // 4  # rank I (the head size), not J


# =============================================================================================
# Problem 4: repetition at zero temperature
# =============================================================================================
@pytest.mark.parametrize("vocab,block,seed", [(5, 2, 0), (5, 2, 1), (3, 3, 2), (4, 2, 3)])
def test_p4_greedy_decoding_loops_once_a_state_repeats(vocab, block, seed):
    GPT, GPTConfig, _ = _project()
    from submission.utils import sample
    torch.manual_seed(seed)
    model = GPT(GPTConfig(vocab, block, n_layer=1, n_head=1, n_embd=16))
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.7)  # a less trivial next-token map than the near-uniform init
    model.eval()
    start = torch.randint(0, vocab, (1, block))
    steps = vocab ** block + 40
    seq = sample(model, start, steps, temperature=1.0, sample=False)[0].tolist()
    again = sample(model, start, steps, temperature=1.0, sample=False)[0].tolist()
    assert seq == again  # greedy decoding is deterministic
    # greedy is the zero-temperature limit: any temperature gives the same argmax path
    cold = sample(model, start, 20, temperature=1e-3, sample=False)[0].tolist()
    assert cold == seq[:block + 20]
    found = checks.first_repeated_state(seq, block)
    assert found is not None
    i, j = found
    assert j <= vocab ** block  # pigeonhole: V^B + 1 windows cannot all differ
    period = j - i
    assert all(seq[m] == seq[m + period] for m in range(i, len(seq) - period))


def test_p4_first_repeated_state_is_the_first_window_to_come_back():
    """(i, j): the first j whose window of `window` tokens occurred before, at i; from `start` on."""
    assert checks.first_repeated_state([1, 2, 3, 1], 1) == (0, 3)  # the last window counts too
    assert checks.first_repeated_state([1, 2, 3, 1, 2], 2) == (0, 3)
    assert checks.first_repeated_state([1, 2, 3, 4], 1) is None
    assert checks.first_repeated_state([5, 1, 2, 5, 1, 2], 1) == (0, 3)
    assert checks.first_repeated_state([5, 1, 5, 2, 3, 2], 1, start=1) == (3, 5)  # the 5s lie before start
    assert checks.first_repeated_state([1, 1], 3) is None  # shorter than one window


# =============================================================================================
# Problem 5(b): parameter counts
# =============================================================================================
def test_p5b_parameter_counts():
    _, GPTConfig, CausalSelfAttention = _project()
    J, K = 256, 8
    I = J // K
    attn = CausalSelfAttention(GPTConfig(256, 128, n_layer=4, n_head=K, n_embd=J))
    original = attn.query.weight.numel() + attn.key.weight.numel()
    assert original == K * 2 * I * J == 2 * J * J == 131072
    wq, wk = attn.query.weight.detach().numpy(), attn.key.weight.detach().numpy()
    mats = checks.merged_qk(wq, np.zeros(J), wk, np.zeros(J), K)
    merged = sum(m[:-1, :-1].size for m in mats)
    assert merged == K * J * J == 524288 == 4 * original
    assert merged / original == J / (2 * I)
    # equal counts when I = J / 2: two heads
    two = CausalSelfAttention(GPTConfig(256, 128, n_layer=4, n_head=2, n_embd=J))
    mats = checks.merged_qk(two.query.weight.detach().numpy(), np.zeros(J), two.key.weight.detach().numpy(),
                            np.zeros(J), 2)
    assert sum(m[:-1, :-1].size for m in mats) == two.query.weight.numel() + two.key.weight.numel()


# =============================================================================================
# The figures and the numbers submission.tex quotes from them (written/figures.py)
# =============================================================================================
def _figures(monkeypatch, tmp_path):
    """written/figures.py, writing into tmp_path instead of figures/."""
    from written import figures  # matplotlib is in requirements.txt: missing, these tests fail
    monkeypatch.setattr(figures, "OUT", str(tmp_path))
    return figures


def test_importing_figures_changes_nothing_of_the_process(monkeypatch, tmp_path):
    """Importing written/figures.py put written/ first on sys.path, a second `checks` module in sys.modules and
    its font sizes in matplotlib's rcParams, for every test after it; its style now holds inside its figures only
    (the PDFs are the same bytes)."""
    import importlib
    import matplotlib
    figures = _figures(monkeypatch, tmp_path)
    path, modules, rc = list(sys.path), set(sys.modules), dict(matplotlib.rcParams)
    figures = importlib.reload(figures)
    assert sys.path == path and set(sys.modules) == modules and dict(matplotlib.rcParams) == rc
    assert figures.checks is checks  # the package's checks module, not a copy
    monkeypatch.setattr(figures, "OUT", str(tmp_path))
    seen = []
    monkeypatch.setattr(figures, "_save", lambda fig, name: seen.append(matplotlib.rcParams["font.size"]))
    figures.temperature_figure()
    assert seen == [figures.STYLE["font.size"]] and dict(matplotlib.rcParams) == rc


def test_a_full_disk_under_the_figures_is_one_line(monkeypatch, tmp_path):
    """`make` on a full disk showed matplotlib's whole traceback: its PDF writer, cleaning up after the OSError,
    raised AttributeError. Any OSError in the chain is one line naming figures/ and the disk, with no temporary
    file left; an error with none in its chain is raised as it is."""
    import errno
    from matplotlib.figure import Figure
    figures = _figures(monkeypatch, tmp_path)

    def full_disk(self, path, *args, **kwargs):
        open(path, "wb").close()  # the temporary file, made before the write fails
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        finally:
            raise AttributeError("'Stream' object has no attribute 'pos'")  # noqa: B012 - as matplotlib's cleanup
    monkeypatch.setattr(Figure, "savefig", full_disk)
    with pytest.raises(SystemExit) as e:
        figures.main()
    assert str(e.value) == (f"written/figures.py: cannot write the figures in {os.path.relpath(str(tmp_path))}/ (No "
                            f"space left on device); free some disk space and run make again")
    assert os.listdir(tmp_path) == []

    def too_big(self, *args, **kwargs):
        raise OSError(errno.EFBIG, "File too large")  # ulimit -f: "make the folder writable" was no fix for it
    monkeypatch.setattr(Figure, "savefig", too_big)
    with pytest.raises(SystemExit, match=r"\(File too large\); raise the file size limit \(ulimit -f\) and run make "
                                         r"again$"):
        figures.main()

    def a_bug(self, *args, **kwargs):
        raise AttributeError("a bug, not the disk")
    monkeypatch.setattr(Figure, "savefig", a_bug)
    with pytest.raises(AttributeError, match="a bug, not the disk"):
        figures.main()


def _macros(path):
    """The \\newcommand macros of the LaTeX file at `path`, name -> body."""
    text = open(path, encoding="utf-8").read()
    import re
    return dict(re.findall(r"\\newcommand\{\\(\w+)\}\{(.*)\}", text))


def test_3c_ii_3d_ii_the_quoted_numbers_are_those_of_the_figures_draws(monkeypatch, tmp_path):
    """figures/spread_stats.tex defines every \\spread... macro submission.tex uses, each the share or spread
    of the very draws figures/spread.pdf shows: 3(c)ii's one head (q = beta(mu_a + mu_b)) and 3(d)ii's
    two heads, over keys sampled with the seed, count and scale the text quotes."""
    import re
    figures = _figures(monkeypatch, tmp_path)
    path, (one, two, gamma) = figures.spread_figure()
    assert os.path.getsize(path) > 0
    rng = np.random.default_rng(figures.SPREAD_SEED)
    keys, expect_gamma = checks.sample_perturbed_keys(rng, figures.SPREAD_DRAWS, figures.SPREAD_N, figures.SPREAD_N,
                                                      0, alpha=figures.SPREAD_ALPHA)
    np.testing.assert_array_equal(gamma, expect_gamma)
    np.testing.assert_allclose(one, checks.weight_on_a_one_head(keys, 0, 1, figures.SPREAD_BETA), atol=1e-15)
    np.testing.assert_allclose(two, checks.weight_on_a_two_heads(keys, 0, 1, figures.SPREAD_BETA), atol=1e-15)

    macros = _macros(figures._write_spread_stats(one, two, gamma))
    used = set(re.findall(r"\\(spread[A-Za-z]+)", open(os.path.join(ROOT, "submission.tex"), encoding="utf-8").read()))
    assert used and used <= set(macros), used - set(macros)
    assert (macros["spreadDraws"], macros["spreadBeta"], macros["spreadN"]) == ("20{,}000", "30", "8")

    def pct(name):
        value, unit = macros[name].split("\\,")
        assert unit == "\\%", macros[name]
        return float(value)

    for name, share in (("spreadOneHigh", np.mean(one > 0.9)), ("spreadOneLow", np.mean(one < 0.1)),
                        ("spreadOneMid", np.mean((one >= 0.1) & (one <= 0.9))),
                        ("spreadTwoNear", np.mean(np.abs(two - 0.5) < 0.01)), ("spreadGammaNeg", np.mean(gamma <= 0))):
        assert pct(name) == pytest.approx(100 * share, abs=0.05), name
    assert float(macros["spreadOneStd"]) == pytest.approx(np.std(one), abs=0.005)
    assert float(macros["spreadTwoStd"]) == pytest.approx(np.std(two), abs=0.005)
    # what the text says of them: one head is split between v_a and v_b, two heads stay near half, and the
    # draws with gamma <= 0 are about Phi(-sqrt 2) of them
    assert pct("spreadOneHigh") + pct("spreadOneLow") + pct("spreadOneMid") == pytest.approx(100, abs=0.15)
    assert pct("spreadOneMid") < 15 and pct("spreadTwoNear") > 85
    assert float(macros["spreadTwoStd"]) < 0.2 < 0.45 < float(macros["spreadOneStd"])
    assert pct("spreadGammaNeg") == pytest.approx(100 * normal_cdf(-math.sqrt(2.0)), abs=0.6)


def test_p2_the_temperature_figure_plots_the_largest_weight_with_and_without_the_scale(monkeypatch, tmp_path):
    """figures/temperature.pdf: unscaled scores q.k saturate the softmax as the head dimension I grows (the
    largest weight heads for 1), scores q.k/sqrt(I) keep it about where it starts, and 1/T is marked."""
    figures = _figures(monkeypatch, tmp_path)
    drawn = {}
    save = figures._save

    def keep(fig, name):
        ax = fig.axes[0]
        drawn.update({line.get_label(): np.asarray(line.get_ydata(), dtype=float) for line in ax.lines})
        drawn["dims"] = np.asarray(ax.lines[0].get_xdata(), dtype=float)
        return save(fig, name)

    monkeypatch.setattr(figures, "_save", keep)
    assert os.path.getsize(figures.temperature_figure()) > 0
    raw, scaled = drawn["scores $q\\cdot k$"], drawn["scores $q\\cdot k/\\sqrt{I}$"]
    np.testing.assert_array_equal(drawn["dims"], 2.0 ** np.arange(1, 10))
    np.testing.assert_allclose(drawn["uniform weight $1/T$"], 1 / 64)
    assert np.all(np.diff(raw) > 0) and raw[-1] > 0.9 and raw[0] < 0.3  # saturating
    # unit-variance scores at every I: about constant, far from one-hot, and well above uniform (scores
    # q.k/I, a variance of 1/I, would sink towards 1/T)
    assert scaled.max() - scaled.min() < 0.03 and 0.08 < scaled.min() and scaled.max() < 0.15
    assert np.all(scaled <= raw + 1e-12)


# =============================================================================================
# 2(a): the measured results it quotes (written/results.tex) are those of README.md and docs
# =============================================================================================
def _table_row(text, label):
    """The cells after the first of the markdown table row of `text` whose first cell is `label`."""
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.lstrip().startswith("|") and cells[0] == label:
            return cells[1:]
    raise AssertionError(f"no table row {label!r}")


def _number(text):
    """The first number in `text`, as a float ("15.2\\,\\%" -> 15.2, "2{,}000" -> 2000)."""
    import re
    return float(re.search(r"\d[\d.]*", text.replace("{,}", "").replace(",", "")).group())


def test_2a_the_quoted_results_are_those_the_readme_and_docs_record():
    """Every measured number of 2(a) comes from written/results.tex; each must be what README.md (Results),
    data/README.md and docs/speed.md record for that run, to the digits quoted, so that a run written up again
    in one place is not left stale in the other."""
    import re

    def read(*name):
        return open(os.path.join(ROOT, *name), encoding="utf-8").read()

    def flat(text):  # prose with its line breaks as spaces, for phrases that wrap
        return re.sub(r"\s+", " ", text)

    tex = _macros(os.path.join(ROOT, "written", "results.tex"))
    num = {k: _number(v) for k, v in tex.items() if re.match(r"\d", v)}
    readme, data, speed = read("README.md"), read("data", "README.md"), read("docs", "speed.md")
    full = readme.split("### The course's full setting on one H100")[1].split("### Speed")[0]
    demo = readme.split("### The demo")[1].split("### The course's full setting")[0]
    expect = {  # macro -> the docs' cell or phrase
        "accLondon": _table_row(full, "always London")[1],
        "accNoPretrain": _table_row(full, "vanilla, no pretraining")[1],
        "accVanillaCourse": _table_row(full, "vanilla, pretrained + finetuned")[0],
        "accVanilla": _table_row(full, "vanilla, pretrained + finetuned")[1],
        "accSynth": _table_row(full, "synthesizer, pretrained + finetuned")[1],
        "accSmallLondon": _table_row(demo, "always London")[0],
        "accSmallFull": _table_row(data, "even birthplaces, names in full (the demo's kind)")[2],
        "accSmallSurname": _table_row(data, "even birthplaces, surname mentions")[2],
    }
    for variant, suffix in (("vanilla", "Vanilla"), ("synthesizer", "Synth")):
        stored, right, of = re.fullmatch(r"([\d.]+%) / (\d+) of (\d+)",
                                         _table_row(full, f"memorised / retrieved, {variant}")[1]).groups()
        expect.update({f"memorised{suffix}": stored, f"retrieved{suffix}": right, f"memorisedDev{suffix}": of})
    # the demo's models the written answers use are an earlier run's (commit c2ac9d9), which README names in full
    earlier = re.search(r"commit c2ac9d9: no pretraining ([\d.]+%), vanilla ([\d.]+%) / ([\d.]+%) / (\d+) of (\d+), "
                        r"synthesizer ([\d.]+%) / [\d.]+% / (\d+) of (\d+)", flat(readme)).groups()
    expect.update(zip(("accSmallNoPretrain", "accSmallVanilla", "memorisedSmall", "retrievedSmall", "memorisedDevSmall",
                       "accSmallSynth", "retrievedSmallSynth", "memorisedDevSmallSynth"), earlier))
    expect["accNoPretrainCpu"] = re.search(r"dev ([\d.]+%) \(\d+ of 500\) and test [\d.]+% \(\d+ of 437\) on the "
                                           r"embedded corpus", flat(data)).group(1)
    once = next(line for line in data.splitlines() if line.startswith("| one telling per person")).split("|")
    expect.update(memorisedSmallOnce=once[2], accSmallOnce=once[3])
    expect["accSmallThrice"] = re.search(r"three tellings gave [\d.]+% and ([\d.]+%)", data).group(1)
    assert set(expect) <= set(num)
    wrong = {k: (tex[k], v) for k, v in expect.items()  # the docs' number rounded to the digits results.tex gives
             if round(_number(v), len(tex[k].split("\\")[0].partition(".")[2])) != num[k]}
    assert not wrong, f"written/results.tex against the docs: {wrong}"
    # the table's hardware line: vanilla pretraining on data/ took 269 s, "about 4.5 minutes"
    seconds = _number(re.search(r"and (\d+) s on `data/`", flat(speed)).group(1))
    assert f"about {seconds / 60:.1f} minutes" in tex["resultsHardware"]

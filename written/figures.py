"""Figures for the written answers (submission.tex), written to figures/ at the repository root.

    python written/figures.py            # or: make  (builds the figures, then the PDF)

Deterministic (fixed seeds, no timestamps in the PDFs) and fast (a few seconds on one core).
Needs numpy and matplotlib only; the model is not involved.

figures/spread.pdf       3(c)ii / 3(d)ii: weight on v_a over many sampled keys, one head vs two
figures/spread_stats.tex LaTeX macros with the numbers of that Monte Carlo quoted in the text
figures/temperature.pdf  problem 2: largest attention weight at initialisation, with and without
                         the 1/sqrt(I) temperature, as the head dimension I grows
"""
import errno
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

if __package__:  # imported as written.figures (the tests): nothing of the process changed
    from . import checks
else:  # python written/figures.py: written/ is on the path already
    import checks

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "figures")

# Settings quoted in submission.tex (keep them in sync).
SPREAD_SEED = 224
SPREAD_DRAWS = 20000
SPREAD_N = 8        # number of keys (and dimension)
SPREAD_BETA = 30.0  # query scale
SPREAD_ALPHA = 1e-10

STYLE = {  # each figure is drawn in it (plt.rc_context): importing this module leaves matplotlib's settings be
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "pdf.fonttype": 42,
}


def _save(fig, name):
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, name)
    # No CreationDate: the same inputs give the same bytes. Written whole, then renamed: a figure cut short
    # by Ctrl-C is never taken for a made one.
    try:
        fig.savefig(path + ".tmp", format="pdf", bbox_inches="tight", metadata={"CreationDate": None})
        os.replace(path + ".tmp", path)
    finally:
        plt.close(fig)
        _discard(path + ".tmp")
    return path


def _discard(tmp):
    """Remove a temporary file a failed write left (after the rename there is none)."""
    if os.path.exists(tmp):
        os.unlink(tmp)


@plt.rc_context(STYLE)
def spread_figure():
    rng = np.random.default_rng(SPREAD_SEED)
    a, b = 0, 1
    keys, gamma = checks.sample_perturbed_keys(rng, SPREAD_DRAWS, SPREAD_N, SPREAD_N, a,
                                               alpha=SPREAD_ALPHA)
    one = checks.weight_on_a_one_head(keys, a, b, SPREAD_BETA)
    two = checks.weight_on_a_two_heads(keys, a, b, SPREAD_BETA)

    fig, (left, right) = plt.subplots(1, 2, figsize=(6.4, 2.5))
    bins = np.linspace(0.0, 1.0, 41)
    left.hist(one, bins=bins, color="tab:red", alpha=0.45, histtype="stepfilled",
              label="one head, $q=\\beta(\\mu_a+\\mu_b)$")
    left.hist(two, bins=bins, color="tab:blue", histtype="step", lw=1.4,
              label="two heads, $q_1=\\beta\\mu_a$, $q_2=\\beta\\mu_b$")
    left.set_yscale("log")
    left.set_xlabel("weight on $v_a$ in the output $c$")
    left.set_ylabel(f"draws (of {SPREAD_DRAWS:,})")
    left.set_title("weight on $v_a$ across sampled keys")
    left.legend(loc="upper center", frameon=False)
    left.set_ylim(0.8, SPREAD_DRAWS * 150)

    g = np.linspace(-1.5, 3.5, 801)
    mu = np.eye(SPREAD_N)
    grid = np.broadcast_to(mu, (g.size, SPREAD_N, SPREAD_N)).copy()  # (points, n, n): keys per point
    grid[:, a, :] = g[:, None] * mu[a]  # (points, n): key a scaled by each gamma
    right.plot(g, checks.weight_on_a_one_head(grid, a, b, SPREAD_BETA), color="tab:red",
               label="one head")
    right.plot(g, checks.weight_on_a_two_heads(grid, a, b, SPREAD_BETA), color="tab:blue",
               label="two heads")
    dens = np.exp(-(g - 1.0) ** 2) / math.sqrt(math.pi)  # N(1, 1/2)
    right.fill_between(g, 0, dens / dens.max() * 0.35, color="0.75", label="density of $\\gamma$")
    right.axvline(1.0, color="0.4", lw=0.6, ls=":")
    right.set_xlabel("$\\gamma = \\mu_a^\\top k_a$ (scale of the sampled key $k_a$)")
    right.set_ylabel("weight on $v_a$")
    right.set_title(f"as a function of the key scale ($\\beta={SPREAD_BETA:g}$, $n={SPREAD_N}$)")
    right.set_ylim(-0.03, 1.03)
    right.legend(loc="upper left", frameon=False)
    fig.tight_layout()
    return _save(fig, "spread.pdf"), (one, two, gamma)


def _pct(x):
    return f"{100.0 * float(np.mean(x)):.1f}\\,\\%"


def _write_spread_stats(one, two, gamma):
    """Numbers quoted in 3(c)ii / 3(d)ii, from the very draws shown in figures/spread.pdf."""
    macros = {
        "spreadDraws": f"{SPREAD_DRAWS:,}".replace(",", "{,}"),
        "spreadBeta": f"{SPREAD_BETA:g}",
        "spreadN": f"{SPREAD_N}",
        "spreadOneHigh": _pct(one > 0.9),
        "spreadOneLow": _pct(one < 0.1),
        "spreadOneMid": _pct((one >= 0.1) & (one <= 0.9)),
        "spreadOneStd": f"{float(np.std(one)):.2f}",
        "spreadTwoNear": _pct(np.abs(two - 0.5) < 0.01),
        "spreadTwoStd": f"{float(np.std(two)):.2f}",
        "spreadGammaNeg": _pct(gamma <= 0),
    }
    lines = ["% Written by written/figures.py from the draws of figures/spread.pdf; do not edit."]
    lines += [f"\\newcommand{{\\{k}}}{{{v}}}" for k, v in macros.items()]
    path = os.path.join(OUT, "spread_stats.tex")
    try:
        with open(path + ".tmp", "w") as f:  # renamed when whole: make takes this file as the sign figures/ is made
            f.write("\n".join(lines) + "\n")
        os.replace(path + ".tmp", path)
    finally:
        _discard(path + ".tmp")
    return path


@plt.rc_context(STYLE)
def temperature_figure():
    rng = np.random.default_rng(7)
    T, trials = 64, 400
    dims = np.array([2, 4, 8, 16, 32, 64, 128, 256, 512])
    raw, scaled = [], []
    for dim in dims:
        q = rng.standard_normal((trials, 1, dim))
        k = rng.standard_normal((trials, T, dim))
        s = np.sum(q * k, axis=-1)  # (trials, T), variance dim per entry
        raw.append(checks.softmax(s).max(axis=-1).mean())
        scaled.append(checks.softmax(s / math.sqrt(dim)).max(axis=-1).mean())
    fig, ax = plt.subplots(figsize=(3.4, 2.3))
    ax.semilogx(dims, raw, "o-", color="tab:red", ms=3, label="scores $q\\cdot k$", base=2)
    ax.semilogx(dims, scaled, "o-", color="tab:blue", ms=3, label="scores $q\\cdot k/\\sqrt{I}$",
                base=2)
    ax.axhline(1.0 / T, color="0.5", lw=0.8, ls=":", label="uniform weight $1/T$")
    ax.set_xlabel("head dimension $I$")
    ax.set_ylabel("largest attention weight")
    ax.set_title(f"unit-variance $q, k$; $T={T}$ keys (mean of {trials})")
    ax.set_ylim(0, 1.02)
    ax.legend(loc="center right", bbox_to_anchor=(1.0, 0.45), frameon=False)
    fig.tight_layout()
    return _save(fig, "temperature.pdf")


def main():
    try:
        spread_path, draws = spread_figure()
        # spread_stats.tex last: the Makefile takes it as the sign that all of figures/ is made.
        for path in (spread_path, temperature_figure(), _write_spread_stats(*draws)):
            print("wrote", os.path.relpath(path, ROOT))
    except Exception as e:  # noqa: BLE001 - an OSError, or one raised while handling it, is one line
        failed = e
        while failed is not None and not isinstance(failed, OSError):  # matplotlib's PDF writer, on a full disk,
            failed = failed.__context__  # raised AttributeError while cleaning up after the OSError
        if failed is None:
            raise
        fix = {errno.ENOSPC: "free some disk space", getattr(errno, "EDQUOT", errno.ENOSPC): "free some disk space",
               errno.EFBIG: "raise the file size limit (ulimit -f)"}.get(failed.errno, "make the folder writable")
        sys.exit(f"written/figures.py: cannot write the figures in {os.path.relpath(OUT)}/ "
                 f"({failed.strerror or failed}); {fix} and run make again")


if __name__ == "__main__":
    main()

"""Pictures of the assignment's runs: training curves and attention maps.

Every training run through src/run.py writes a per-step log next to its params
(`<writing_params_path>.log.jsonl`, one JSON object a line: step, epoch, tokens, loss, lr, time).
Two commands turn runs into PNG images:

    # loss and learning rate against the step, one line per log (labelled by its file name)
    python src/plots.py curves runs/demo/vanilla.pretrain.params.log.jsonl \
        runs/demo/synthesizer.pretrain.params.log.jsonl --out curves.png

    # each layer's and head's attention over a question, vanilla beside synthesizer
    python src/plots.py attention --params src/submission/vanilla.finetune.params \
        --params2 src/submission/synthesizer.finetune.params --question "Where was Emily Lee born?" \
        --out attention.png

Each file's variant, the model size and the corpus default to what the params say, as ask.py reads
them (their shapes, their card, a data/ beside them); the flags given win. Both params files of one
picture share the size and the corpus. The fast path's fused kernel never forms the attention weights,
so they are read from a forward of the reference path of src/submission/attention.py, in eval mode (no
dropout): a forward hook on each layer's `attn_drop` records what that path hands it (_applied_weights).

matplotlib is in requirements.txt; in a Python without it, each command prints how to
install it and exits with status 2. `plot_demo_runs(work_dir)` draws the curves (and, when both
finetuned models are there, the attention maps) of a `./run.sh demo` work folder.
"""
import argparse
import contextlib
import glob
import io
import json
import math
import os
import re
import signal
import sys
import tempfile
import threading
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from modelflags import (COURSE_SIZE, add_model_flags, check_model_flags, settings_from_params,  # noqa: E402
                        size_from_flags)
from oneline import OneLineParser, lenient_streams, utf16, write_fix  # noqa: E402
from startup import interruptible_start, missing_requirement  # noqa: E402

# the entry points' line for a missing requirement: activate the .venv run.sh made when this Python is another
# (a system python3 with .venv there), complete the .venv when it is this one (one made before matplotlib joined
# requirements.txt), else set one up
INSTALL_HINT = missing_requirement("plots.py", "matplotlib")
LOG_SUFFIX = ".log.jsonl"
MIN_DPI, MAX_DPI = 10, 1200  # beyond 1200 a figure's pixels run to gigabytes
MASK = "\u2047"     # the assignment's MASK character (submission.dataset.MASK_CHAR)
SHOWN = {" ": "\u2423"}  # a space is drawn as the open box, so it is visible on an axis


class PlotError(ValueError):
    """A problem with a command's inputs; the message says which and what to do."""


class MissingMatplotlib(ImportError):
    """matplotlib cannot be imported."""


def pyplot():
    """matplotlib.pyplot on the file-only Agg backend, or MissingMatplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise MissingMatplotlib(INSTALL_HINT) from e
    return plt


# ----------------------------------------------------------------------------- training curves

def read_log(path):
    """The rows of one training log, checked: a list of dicts of the numbers a plot draws, step, loss and lr
    (of each row's fields only those: a row of run.py's log is 0.7 KB as a whole dict, 0.2 KB so).

    A `.partial` log is one that training is still writing (src/submission/trainer.py renames it when
    training ends): its last line, when no newline ends it yet, is a row being written, and is left out.
    A log that is not there yet is read from its `.partial`, so a running or stopped run can be watched.
    """
    # as trainer.partial_log_path (not imported: it would load torch): through a link, beside the file it names
    partial = (os.path.realpath(path) if os.path.islink(path) else path) + ".partial"
    named = os.path.basename(partial) if partial == path + ".partial" else partial  # beside it: its name will do
    if not os.path.exists(path) and os.path.isfile(partial):
        print(f"note: {path} is not there yet: plotting {named}, the log of a run that is still training or was "
              f"stopped", file=sys.stderr)
        path = partial
    elif os.path.isfile(path) and os.path.isfile(partial) and \
            os.stat(partial).st_mtime_ns > os.stat(path).st_mtime_ns:  # a run again into the same params
        print(f"note: plotting {path}, the log of an earlier run that finished; {named}, newer, is the log of a "
              f"run training now or stopped: give that name to plot it", file=sys.stderr)
    if not os.path.exists(path):
        from submission.dataset import folder_shut  # only here: the package loads torch
        shut = folder_shut(path, "log")
        if shut:  # its folder does not let the user in: not "not found"
            raise PlotError(shut)
        raise PlotError(f"{path}: log not found (src/run.py writes <writing_params_path>{LOG_SUFFIX}, as "
                        f"{LOG_SUFFIX}.partial while it trains)")
    if os.path.isdir(path):
        raise PlotError(f"{path}: a folder; give the log file inside it (<params>{LOG_SUFFIX})")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:  # permissions; a FIFO or device read fails here too
        raise PlotError(f"{path}: cannot be read ({e.strerror or e}); check the file's permissions") from None
    if utf16(data):  # a log opened and saved again in a Windows editor
        raise PlotError(f"{path}: {utf16(data)}; save it as UTF-8, or plot the log run.py wrote")
    try:
        text = data.decode("utf-8-sig")  # -sig: the byte-order mark such an editor puts before UTF-8 is no JSON
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise PlotError(f"{path}:{line}: not UTF-8 text, so not a training log (a params file?); "
                        f"give <params>{LOG_SUFFIX}") from None
    del data  # (a long run's log is read whole: one copy of it at a time)
    if path.endswith(".partial") and not text.endswith(("\n", "\r")):  # the row the run is writing now (all of it,
        text = text[:max(text.rfind("\n"), text.rfind("\r")) + 1]       # if it is the first)
    rows = []
    # line by line, not a list of them all; newline=None: a line may end in \r\n or \r too, as splitlines had it
    for lineno, line in enumerate(io.StringIO(text, newline=None), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            raise PlotError(f"{path}:{lineno}: not a JSON object; is this a training log?") from None
        if not isinstance(row, dict) or any(k not in row for k in ("step", "loss", "lr")):
            raise PlotError(f"{path}:{lineno}: a log row needs step, loss and lr, found {str(row)[:80]}")
        for key in ("step", "loss", "lr"):  # bool is an int to Python, but no step or loss
            if isinstance(row[key], bool) or not isinstance(row[key], (int, float)):
                raise PlotError(f"{path}:{lineno}: {key} is {row[key]!r}, not a number; is this a training log "
                                f"written by src/run.py?")
        rows.append({"step": row["step"], "loss": row["loss"], "lr": row["lr"]})
    if not rows:
        raise PlotError(f"{path}: the log is empty (did the run train at least one step?)")
    return rows


def log_label(path):
    """The legend label of a log: its file name without `.log.jsonl` and `.params`."""
    name = os.path.basename(path)
    for suffix in (LOG_SUFFIX, ".params"):
        if name.endswith(suffix):
            name = name[:-len(suffix)]
    return name


def log_labels(paths):
    """The legend labels of `paths`: each log's `log_label`, and where two share one (runs/demo/ and runs/short/
    each have vanilla.pretrain.params.log.jsonl), the folders that tell them apart before it."""
    labels = [log_label(p) for p in paths]
    folders = [os.path.abspath(p).replace(os.sep, "/").split("/")[:-1] for p in paths]
    for depth in range(max(len(f) for f in folders) + 1):
        named = [label if labels.count(label) == 1 else "/".join(f[len(f) - min(depth, len(f)):] + [label])
                 for f, label in zip(folders, labels)]
        if len(set(named)) == len(named):
            return named
    return labels  # the same log given twice: one name for both


def moving_average(values, window):
    """Trailing mean over `window` values (shorter at the start), same length as `values`. Values that are not
    finite are left out of the windows they fall in (nan where a window has none): a batch with no counted target
    logs a nan loss, which a running sum carried into every later mean."""
    out, total, n = [], 0.0, 0
    for i, v in enumerate(values):
        if math.isfinite(v):
            total, n = total + v, n + 1
        if i >= window and math.isfinite(values[i - window]):
            total, n = total - values[i - window], n - 1
        out.append(total / n if n else float("nan"))
    return out


def plot_curves(paths, out, title=None, dpi=100):
    """Loss (each step, and from 80 steps on its trailing mean) and learning rate against the step, one colour per
    log; writes `out`."""
    plt = pyplot()
    logs = [(label, read_log(p)) for label, p in zip(log_labels(paths), paths)]
    fig, (ax_loss, ax_lr) = plt.subplots(2, 1, figsize=(8, 6), sharex=True, height_ratios=(2, 1),
                                         layout="constrained")
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    smoothed = False  # whether any log is long enough to be smoothed (80 steps or more)
    for i, (label, rows) in enumerate(logs):
        color = colors[i % len(colors)]
        steps = [r["step"] for r in rows]
        losses = [r["loss"] for r in rows]
        window = max(1, len(rows) // 40)
        if window > 1:  # each step faint under the mean (unsmoothed, the bold line is each step)
            ax_loss.plot(steps, losses, color=color, alpha=0.25, linewidth=0.8)
            smoothed = True
        smooth_note = f", mean of {window} steps" if window > 1 else ""
        ax_loss.plot(steps, moving_average(losses, window), color=color, linewidth=1.8,
                     label=f"{label} ({len(rows)} steps{smooth_note})")
        style = ("-", "--", ":", "-.")[i % 4]  # runs with the same schedule stay visible on top of each other
        # a row's lr is the rate the trainer set after its step, which the next step trains at: drawn there, so
        # the panel shows each step's own rate (the first step's, the configured rate, is in no row)
        ax_lr.plot(steps[1:], [r["lr"] for r in rows[:-1]], color=color, linewidth=1.5, linestyle=style, label=label)
    ax_loss.set_ylabel("training loss (cross-entropy, nats/char)")
    ax_loss.grid(True, alpha=0.3)
    ax_loss.legend(fontsize=9)
    ax_lr.set_ylabel("learning rate\n(of each step from the 2nd)")
    ax_lr.set_xlabel("optimizer step")
    ax_lr.ticklabel_format(axis="y", style="sci", scilimits=(-2, 2))
    ax_lr.grid(True, alpha=0.3)
    fig.suptitle(title or "Training loss and learning rate per step"
                 + (" (faint: each step; bold: smoothed)" if smoothed else ""))
    try:
        return _save(fig, out, dpi)
    finally:
        plt.close(fig)


def output_path(out):
    """The file a picture for `out` is written to: `out` itself, or `out.png` when it has no extension
    (as matplotlib does); PlotError for an empty path, a folder, a device or FIFO (/dev/null: "/dev/null.png"
    was made in /dev), or a format matplotlib cannot write."""
    if not out:
        raise PlotError("--out is empty; give the picture's file path, e.g. plot.png")
    if os.path.exists(out) and not os.path.isfile(out) and not os.path.isdir(out):
        raise PlotError(f"{out}: --out is not a regular file (a device or a FIFO); give the picture's file path, "
                        f"e.g. plot.png")
    if os.path.isdir(out) or out.endswith(os.sep):
        raise PlotError(f"{out}: --out is a folder; give the picture's file path, e.g. "
                        f"{os.path.join(out, 'plot.png')}")
    ext = os.path.splitext(out)[1][1:].lower()
    if not ext:
        out, ext = out + ".png", "png"
    else:
        pyplot()
        from matplotlib.backend_bases import FigureCanvasBase
        formats = FigureCanvasBase.get_supported_filetypes()
        if ext not in formats:
            raise PlotError(f"{out}: matplotlib cannot write .{ext} files; end --out with one of "
                            f"{', '.join('.' + f for f in sorted(formats))}")
    why = _not_replaceable(out, ext)
    if why:
        raise PlotError(f"{out}: already there, and {why}, which a picture would replace; give --out another "
                        f"path, or move that file away first")
    return out


# the first bytes of each picture format matplotlib writes (raw and rgba have none)
MAGIC = {"png": (b"\x89PNG",), "pdf": (b"%PDF",), "eps": (b"%!PS",), "ps": (b"%!PS",), "svgz": (b"\x1f\x8b",),
         "jpg": (b"\xff\xd8\xff",), "jpeg": (b"\xff\xd8\xff",), "tif": (b"II*\x00", b"MM\x00*"),
         "tiff": (b"II*\x00", b"MM\x00*"), "webp": (b"RIFF",), "svg": (b"<?xml", b"<svg"), "pgf": (b"%%",)}
SIGNED = ("pdf", "eps", "ps", "svg", "pgf")  # formats whose files name the program that wrote them
MAX_SIGNED = 64 << 20  # bytes of such a file read to check it; a larger one is no plot


def _drawn_by_matplotlib(data, ext):
    """Whether the bytes of a .`ext` file (pdf, eps, ps, svg, pgf) are a one-picture file matplotlib wrote:
    its own header says so (not a document that includes a matplotlib figure: dvips' PostScript of an
    answer sheet holds the figure's "%%Creator: Matplotlib" further down), and a PDF has one page (two PDFs
    merged by pdfunite keep the figure's "Matplotlib" producer)."""
    head = data[:2048].lower()
    if ext in ("eps", "ps", "pgf"):  # its first Creator comment, in the header
        creators = [line for line in head.split(b"\n")[:12] if line.lstrip(b"%").strip().startswith(b"creator:")]
        return bool(creators) and b"matplotlib" in creators[0]
    if ext == "svg":
        return b"matplotlib" in head
    pages = re.findall(rb"/Type\s*/Page(?![a-zA-Z])", data)
    return b"/producer (matplotlib" in data.lower() and len(pages) == 1


def _not_replaceable(path, ext):
    """Why an existing file at `path` is not a picture a plot may replace, in words, or None: a file of
    another kind than its .`ext` says (a corpus saved as w.png), or a PDF, EPS, PS, SVG or PGF that is not
    one picture matplotlib wrote (submission.pdf, the written answers LaTeX made). An empty file, or none,
    is fine; so is any picture of a format that names no program (PNG, JPEG, ...)."""
    try:
        if not os.path.isfile(path) or os.path.getsize(path) == 0:
            return None
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(64)
            if not head.lstrip().startswith(MAGIC.get(ext, (b"",))):
                return f"it is no .{ext} picture"
            if ext not in SIGNED:
                return None
            if size > MAX_SIGNED:
                return f"it is a .{ext} file of {size >> 20} MB, no plot's"
            f.seek(0)
            if not _drawn_by_matplotlib(f.read(), ext):
                return f"it is a .{ext} file that is not one picture matplotlib drew (a document of your own?)"
    except OSError:  # unreadable: the save reports what it meets
        return None
    return None


def _save(fig, out, dpi):
    """Write the figure to output_path(out) and return that path; a PNG goes through a 256-colour
    palette (a third of the bytes, same look). Atomic: the picture is drawn into a temporary file
    beside it (same extension, so matplotlib picks the format) and renamed over it, so an
    interrupted or failed save leaves any old picture as it was."""
    out = output_path(out)
    target = os.path.realpath(out)  # through a symbolic link, as the other tools write: the link stays
    folder = os.path.dirname(target)
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(out) + ".", suffix=os.path.splitext(out)[1],
                                   dir=folder)
    except OSError as e:
        raise PlotError(f"{out}: cannot write in the folder {folder} ({e.strerror}); give --out a path in a "
                        f"folder you can write to") from None
    try:  # from the temporary file's making: a Ctrl-C on closing it left it beside the picture
        os.close(fd)
        fig.savefig(tmp, dpi=dpi)
        if out.lower().endswith(".png"):
            _to_palette(tmp)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes 0600; give the mode an ordinary save would
        os.replace(tmp, target)
    except Exception as e:  # noqa: BLE001 - an OSError anywhere in its chain is named; any other is raised as it is
        failed = os_error_within(e)
        if failed is not None:
            raise PlotError(f"{out}: cannot write it ({failed.strerror or failed}); {write_fix(failed)}give --out a "
                            f"path you can write to") from None
        if not isinstance(e, (RuntimeError, ValueError)):
            raise
        _cannot_draw(e, out)
    finally:
        with contextlib.suppress(FileNotFoundError):  # the error being raised stays the one said
            os.unlink(tmp)
    return out


def os_error_within(e):
    """The OSError that `e` is, or that it was raised while handling (its __cause__ or __context__, at any
    depth), else None: matplotlib's PDF writer, on a full disk, raised AttributeError ('Stream' object has no
    attribute 'pos') while cleaning up after the OSError."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, OSError):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


def _cannot_draw(e, out):
    """The PlotError for a RuntimeError or ValueError of savefig: a format whose writer needs more (.pgf:
    xelatex), or bad TeX math."""
    why = ([line for line in str(e).splitlines() if line.strip()] or [type(e).__name__])[-1]
    raised_in = {os.path.basename(f.filename) for f in traceback.extract_tb(e.__traceback__)}
    if raised_in & {"mathtext.py", "_mathtext.py"}:  # the text's $...$, whatever the format
        raise PlotError(f"{out}: matplotlib could not draw the picture ({why}); text between two $ (in --title, "
                        f"a question, a place) is read as TeX math: leave the $ out or write \\$") from None
    raise PlotError(f"{out}: matplotlib could not write a {os.path.splitext(out)[1]} file here ({why}); give "
                    f"--out a .png, .svg or .pdf name") from None


def _to_palette(path):
    """Rewrite a PNG with a 256-colour palette (when Pillow, which comes with matplotlib, is there)."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(path) as im:
        image = im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT,
                                           dither=Image.Dither.NONE)
    image.save(path, format="png", optimize=True)


# ----------------------------------------------------------------------------- attention maps

@contextlib.contextmanager
def _applied_weights(model, layers):
    """Within the block, running `model` in eval mode on the reference attention path records, for each of
    `layers` (attention modules), the weights it hands its attention dropout: the list the block yields gets one
    (B, n_head, T, T) tensor a layer, in order. Eval mode: no dropout mask is drawn (the random state stays as it
    was) and the weights are the same as in training. The model's mode, paths and hooks are restored however the
    block ends; a layer without `attn_drop`, or whose forward never called it, is a PlotError naming its class."""
    import torch.nn as nn
    from submission.attention import attention_paths
    seen = {}
    for layer in layers:
        if not isinstance(getattr(layer, "attn_drop", None), nn.Module):
            raise PlotError(f"{type(layer).__name__} has no attn_drop module, where the course's attention layers "
                            f"apply their weights; attention maps read them there")
    handles, was_training = [], model.training
    try:
        for i, layer in enumerate(layers):
            handles.append(layer.attn_drop.register_forward_hook(
                lambda m, inputs, output, i=i: seen.setdefault(i, inputs[0])))
        model.eval()
        weights = []
        with attention_paths(model, False):  # the fast paths fuse the softmax into SDPA or skip attn_drop
            yield weights
        missing = [type(layer).__name__ for i, layer in enumerate(layers) if i not in seen]
        if missing:
            raise PlotError(f"{missing[0]}'s forward never called its attn_drop, where the course's attention "
                            f"layers apply their weights; attention maps read them there")
        weights.extend(seen[i] for i in range(len(layers)))
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)


def attention_weights(module, x):
    """The attention weights (B, n_head, T, T) that `module` (one block's attn) applies to input x: what its
    reference path, the handout's explicit masked softmax, hands to its attention dropout (_applied_weights),
    so that the map is the layer's own computation and not a second copy of it. Vanilla: softmax(q k^T /
    sqrt(hs)) with the causal mask; synthesizer: softmax(relu(w1 x) w2[:, :T] + b2[:T]) with the causal mask.
    Each row (a query position) sums to 1 over the positions up to it; the masked entries are 0."""
    with _applied_weights(module, [module]) as weights:
        module(x)
    return weights[0]  # (B, nh, T, T)


def attention_maps(model, idx):
    """Run `model` on idx (1, T) in eval mode; the list, one per layer, of (n_head, T, T) weights (each layer's
    as attention_weights reads them)."""
    import torch
    with torch.no_grad(), _applied_weights(model, [block.attn for block in model.blocks]) as weights:
        model(idx)
    return [w[0].detach().cpu() for w in weights]  # (nh, T, T) each: the first row of the batch


def load_model(params, variant, corpus_path, n_layer, n_head, n_embd, block_size, variant_flag="--variant "):
    """(model in eval mode on the CPU, vocabulary dataset) for a params file of the given size;
    `variant_flag` is the flag that chose `variant`, named when the params are the other variant's."""
    import run as driver
    from submission.dataset import CharCorruptionDataset, read_text
    from submission.utils import load_params
    vocab = CharCorruptionDataset(read_text(corpus_path, "pretraining corpus"), block_size, corpus_path)
    model = driver.build_model(argparse.Namespace(variant=variant, n_layer=n_layer, n_head=n_head, n_embd=n_embd),
                               vocab)
    load_params(model, params, variant_flag=variant_flag, corpus_flag="--pretrain_corpus_path", itos=vocab.itos)
    return model.eval(), vocab


def encode_prompt(question, vocab):
    """The ids of question + MASK, what the model reads before answering; checks chars and length."""
    import torch
    from ask import AskError, check_sentinels
    from submission.dataset import MASK_CHAR
    prompt = question + MASK_CHAR
    try:
        check_sentinels(question, f"--question {question!r}")
    except AskError as e:
        raise PlotError(str(e)) from None
    bad = sorted({c for c in question if c not in vocab.stoi})
    if bad:
        raise PlotError(f"--question has characters the vocabulary lacks: {''.join(bad)!r}; use the "
                        f"--pretrain_corpus_path the model was trained with, or other characters")
    if len(prompt) > vocab.block_size - 1:
        raise PlotError(f"the question {question!r} is {len(question)} characters; with its MASK it must fit "
                        f"in block_size - 1 = {vocab.block_size - 1}: shorten it")
    return prompt, torch.tensor([[vocab.stoi[c] for c in prompt]], dtype=torch.long)


def greedy_answer(model, question, vocab):
    """The model's greedy answer to `question`, decoded as the evaluation does."""
    from submission.utils import predict_places
    return predict_places(model, [question], vocab.stoi, vocab.itos)[0]


VARIANT_NAMES = {"vanilla": "vanilla (causal self-attention)", "synthesizer": "dense synthesizer"}


def _fit_lines(text, width, fontsize):
    """`text` with each line wrapped to fit a figure `width` inches wide at `fontsize` points (about
    0.55 em a character): a suptitle is not wrapped by matplotlib, and one wider than its figure is
    cut at both edges."""
    import textwrap
    chars = max(30, int(width * 72 / (fontsize * 0.55)))
    return "\n".join(textwrap.fill(line, chars) for line in text.split("\n"))


def plot_attention(panels, prompt, out, title=None, dpi=100):
    """Heatmaps of attention weights: per model a grid of layers (rows) by heads (columns), models side
    by side. `panels` is a list of dicts with `label` and `maps` (per layer, (n_head, T, T))."""
    plt = pyplot()
    import numpy as np
    from matplotlib.colors import PowerNorm
    T = len(prompt)
    n_layer = max(len(p["maps"]) for p in panels)
    n_head = max(p["maps"][0].shape[0] for p in panels)
    size = min(3.6, max(1.6, 0.12 * T))           # inches per heatmap
    font = min(9.0, max(4.0, size * 72 / T * 0.9))  # tick labels: one character per row/column
    chars = [SHOWN.get(c, c) for c in prompt]
    model_width = n_head * size + 0.6
    width = len(panels) * model_width + 1.0
    height = n_layer * size + 1.5
    text = _fit_lines(title or (
        f"Attention weights over the prompt {prompt!r}, per layer (rows) and head (columns)\n"
        f"each row of a map is a query position; its weights over the positions up to it sum to 1; grey: "
        f"masked future; \u2423\u00a0=\u00a0space, {MASK}\u00a0=\u00a0the MASK the answer follows"), width, 13)
    height += 0.22 * max(0, text.count("\n") - 1)  # a short prompt's narrow figure wraps the title more
    fig = plt.figure(figsize=(width, height), layout="constrained")
    *subfigs, bar = fig.subfigures(1, len(panels) + 1, width_ratios=[model_width] * len(panels) + [1.0])
    cmap = plt.get_cmap("viridis").with_extremes(bad="#e6e6e6")  # grey: masked (future) positions
    norm = PowerNorm(gamma=0.5, vmin=0.0, vmax=1.0)
    image = None
    for sub, panel in zip(subfigs, panels):
        axes = sub.subplots(n_layer, n_head, squeeze=False)
        for layer, weights in enumerate(panel["maps"]):
            w = weights.numpy().astype(float)
            future = np.triu(np.ones((T, T), dtype=bool), k=1)
            for head in range(n_head):
                ax = axes[layer][head]
                image = ax.imshow(np.ma.masked_where(future, w[head]), cmap=cmap, norm=norm,
                                  interpolation="nearest")
                ax.set_xticks(range(T))
                ax.set_yticks(range(T))
                ax.set_xticklabels(chars if layer == n_layer - 1 else [], fontsize=font)
                ax.set_yticklabels(chars if head == 0 else [], fontsize=font)
                ax.tick_params(length=0, pad=1)
                if layer == 0:
                    ax.set_title(f"head {head + 1}", fontsize=10)
                if head == 0:
                    ax.set_ylabel(f"layer {layer + 1}\nquery position", fontsize=9)
                if layer == n_layer - 1:
                    ax.set_xlabel("attended position", fontsize=9)
        sub.suptitle(panel["label"], fontsize=12)
    bar.colorbar(image, cax=bar.add_axes((0.15, 0.2, 0.2, 0.6)),
                 label="attention weight (square-root colour scale)")
    fig.suptitle(text, fontsize=13)
    try:
        return _save(fig, out, dpi)
    finally:
        plt.close(fig)


def last_rows(maps):
    """Per-layer attention maps (n_head, T, T) -> (layers * heads, T): each head's last query row, the
    MASK's, layer by layer; row i is layer i // n_head + 1, head i % n_head + 1."""
    import numpy as np
    return np.concatenate([w[:, -1, :].numpy().astype(float) for w in maps])  # (layers * heads, T)


def plot_last_rows(panels, prompt, out, title=None, dpi=100):
    """The last query position (the MASK the answer follows) of every layer and head, one strip each:
    per model a (layers x heads, T) heatmap with the prompt's characters along it, models stacked, and
    each strip's weight on its largest entry written in that cell. Readable where plot_attention's full
    (T, T) maps are too small (a printed page); `panels` as for plot_attention."""
    plt = pyplot()
    import numpy as np
    from matplotlib.colors import PowerNorm
    T = len(prompt)
    chars = [SHOWN.get(c, c) for c in prompt]
    heights = [sum(w.shape[0] for w in p["maps"]) for p in panels]
    cell = 0.3  # inches per character and per strip
    fig, axes = plt.subplots(len(panels), 1, squeeze=False, layout="constrained",
                             figsize=(T * cell + 2.2, sum(heights) * cell + 1.3 * len(panels) + 0.6),
                             gridspec_kw={"height_ratios": heights})
    norm = PowerNorm(gamma=0.5, vmin=0.0, vmax=1.0)
    for ax, panel in zip(axes[:, 0], panels):
        grid = last_rows(panel["maps"])  # (layers * heads, T)
        image = ax.imshow(grid, cmap="viridis", norm=norm, aspect="auto", interpolation="nearest")
        labels = [f"layer {layer + 1} head {head + 1}" for layer, w in enumerate(panel["maps"])
                  for head in range(w.shape[0])]
        ax.set_yticks(range(len(labels)), labels, fontsize=8)
        ax.set_xticks(range(T), chars, fontsize=9)
        ax.tick_params(length=0)
        for r, row in enumerate(grid):
            c = int(row.argmax())
            ax.text(c, r, f"{row[c]:.0%}".replace("%", ""), ha="center", va="center", fontsize=6,
                    color="black" if row[c] > 0.5 else "white")
        for layer_end in np.cumsum([w.shape[0] for w in panel["maps"]])[:-1]:
            ax.axhline(layer_end - 0.5, color="white", linewidth=1.5)
        ax.set_title(panel["label"], fontsize=10)
    fig.colorbar(image, ax=axes[:, 0].tolist(), shrink=0.8, label="weight (square-root scale)")
    fig.suptitle(title or f"Attention of the MASK (the last position) over the prompt {prompt!r}\n"
                          f"each strip sums to 1; the number is its largest weight, in %; \u2423 = space, "
                          f"{MASK} = the MASK", fontsize=10)
    try:
        return _save(fig, out, dpi)
    finally:
        plt.close(fig)


def attention_panel(params, variant, corpus_path, question, size, expected=None, variant_flag="--variant"):
    """One model's panel for plot_attention: its label, its per-layer maps and its greedy answer.
    `variant_flag` is the command-line flag that chose `variant`, named when the params are the other's."""
    from ask import composed_if_known
    model, vocab = load_model(params, variant, corpus_path, **size, variant_flag=variant_flag + " ")
    question = composed_if_known(question, vocab.stoi)  # an accent typed apart from its letter (NFD)
    prompt, idx = encode_prompt(question, vocab)
    maps = attention_maps(model, idx)
    answer = greedy_answer(model, question, vocab)
    label = f"{VARIANT_NAMES[variant]}: {os.path.basename(params)}, greedy answer {answer!r}"
    if expected is not None:
        label += f" (true: {expected!r})"
    return prompt, {"label": label, "maps": maps, "answer": answer}


def draw_attention(question, corpus_path, models, out, size=None, title=None, dpi=100, expected=None,
                   last_row=False):
    """Attention maps of one or two models (a list of (params, variant)) on `question`; writes `out`.
    `expected`, the true place, is shown beside each model's answer when given; `last_row` draws only
    the MASK's row of each map (plot_last_rows). A params file of the other variant is a ParamsError
    naming --variant for the first model and --variant2 for the second (the attention command's flags)."""
    pyplot()  # fail early, before loading models, when matplotlib is missing
    size = dict(COURSE_SIZE, **(size or {}))
    panels, prompt = [], None
    for i, (params, variant) in enumerate(models):
        flag = "--variant" if i == 0 else "--variant2"
        prompt, panel = attention_panel(params, variant, corpus_path, question, size, expected, flag)
        panels.append(panel)
    return (plot_last_rows if last_row else plot_attention)(panels, prompt, out, title=title, dpi=dpi)


# ----------------------------------------------------------------------------- the demo's pictures

DEMO_PICTURES = ("curves.pretrain.png", "curves.finetune.png", "attention.png")  # plot_demo_runs' files


def plot_demo_runs(work_dir, model_args=None, data_dir=None, variants=None):
    """Write the pictures of a demo work folder next to its params; returns the paths written.

    curves.pretrain.png: the pretraining logs; curves.finetune.png: the finetuning logs (with and
    without pretraining). attention.png: vanilla beside synthesizer on the shortest dev question, when
    both finetuned params are there. `model_args` are the run.py flags the demo
    used (only the size flags count); `data_dir` holds the run's wiki.txt and birth_dev.tsv
    (default: work_dir/data). `variants`, the demo's --variants (nopretrain, vanilla, synthesizer), picks
    the runs drawn, so an earlier demo's files in the folder stay out (None: every run there); an
    earlier demo's pictures this run does not redraw are kept and named as such.
    Without matplotlib it prints how to install it and returns [].
    """
    try:
        pyplot()
    except MissingMatplotlib:
        print(INSTALL_HINT + "; no plots written")
        return []
    logs = sorted(glob.glob(os.path.join(work_dir, "*" + LOG_SUFFIX)))
    if variants is not None:  # the params files each variant's runs write (the logs are named after them)
        made = {f"{v}.{kind}.params" for v in variants if v != "nopretrain" for kind in ("pretrain", "finetune")}
        made |= {"vanilla.model.params"} if "nopretrain" in variants else set()
        logs = [p for p in logs if os.path.basename(p)[:-len(LOG_SUFFIX)] in made]
    groups = {"pretrain": [p for p in logs if ".pretrain." in os.path.basename(p)]}
    groups["finetune"] = [p for p in logs if p not in groups["pretrain"]]
    from submission.dataset import DataError
    from submission.utils import ParamsError
    written = []
    try:
        for name, paths in groups.items():
            if paths:
                out = os.path.join(work_dir, f"curves.{name}.png")
                folder = os.path.basename(os.path.abspath(work_dir))
                plot_curves(paths, out, title=f"{name.capitalize()} runs in {folder}: loss and learning rate per step")
                written.append(out)
        if variants is None or {"vanilla", "synthesizer"} <= set(variants):
            _demo_attention(work_dir, model_args, None, data_dir, written)
    except (PlotError, DataError, ParamsError) as e:  # the demo's results stand; only a picture is missing
        print(f"plots.py: some pictures were not drawn: {e}")
    for path in written:
        print(f"wrote {path}")
    stale = [name for name in DEMO_PICTURES
             if os.path.isfile(os.path.join(work_dir, name)) and os.path.join(work_dir, name) not in written]
    if stale and variants is not None:  # an earlier demo's pictures: kept, but said not to be this run's
        print(f"kept from an earlier run in {work_dir} (not drawn this time): {', '.join(stale)}")
    return written


def _demo_attention(work_dir, model_args, question, data_dir, written):
    """attention.png of a demo folder (appended to `written`) when both finetuned params are there."""
    from submission.dataset import parse_tsv, read_text
    pairs = [(os.path.join(work_dir, f"{v}.finetune.params"), v) for v in ("vanilla", "synthesizer")]
    data_dir = data_dir or os.path.join(work_dir, "data")
    corpus = os.path.join(data_dir, "wiki.txt")
    if all(os.path.isfile(p) for p, _ in pairs) and os.path.isfile(corpus):
        dev = os.path.join(data_dir, "birth_dev.tsv")
        places = dict((q, p) for q, p, _ in parse_tsv(read_text(dev), dev)) if os.path.isfile(dev) else {}
        if question is None and places:
            question = min(places, key=len)  # the shortest dev question: the most readable axes
        if question:
            out = os.path.join(work_dir, "attention.png")
            draw_attention(question, corpus, pairs, out, size=size_from_flags(model_args),
                           expected=places.get(question))
            written.append(out)


# ----------------------------------------------------------------------------- command line

def build_parser():
    p = OneLineParser(prog=os.path.basename(__file__),
                      description="Plot training curves and attention maps of the assignment's runs.",
                      epilog="curves --help and attention --help list each command's flags.")
    sub = p.add_subparsers(dest="command", required=True, metavar="{curves,attention}")
    c = sub.add_parser("curves", help="loss and learning rate against the step, one line per log")
    c.add_argument("logs", nargs="+", metavar="LOG", help=f"training logs (<params>{LOG_SUFFIX})")
    c.add_argument("--out", required=True, help="the PNG to write")
    c.add_argument("--title", default=None, help="the heading above the picture (default: what it shows)")
    c.add_argument("--dpi", type=int, default=100,
                   help=f"the PNG's dots per inch, {MIN_DPI} to {MAX_DPI} (default 100)")
    a = sub.add_parser("attention", help="each layer's and head's attention over a question, as heatmaps")
    a.add_argument("--params", required=True, help="a params file written by src/run.py")
    a.add_argument("--variant", default=None, choices=["vanilla", "synthesizer"],
                   help="the params file's variant (default: what its shapes say, as ask and memorised read it)")
    a.add_argument("--params2", default=None, help="a second params file, drawn beside the first")
    a.add_argument("--variant2", default=None, choices=["vanilla", "synthesizer"],
                   help="the second file's variant (default: what its shapes say)")
    a.add_argument("--pretrain_corpus_path", default=None,
                   help="the corpus the params were trained with (it defines the vocabulary; default: the wiki.txt "
                        "of a data/ beside the params or of the repo's data/ whose vocabulary their card records, "
                        "else data/wiki.txt; under run.sh DATA_DIR's when set)")
    a.add_argument("--question", required=True,
                   help='a question ("Where was Emily Lee born?") or a name ("Emily Lee"), as ask takes them')
    a.add_argument("--expected", default=None, help="the true place, shown beside the models' answers")
    a.add_argument("--out", required=True, help="the PNG to write")
    a.add_argument("--last-row", action="store_true",
                   help="only the MASK's row of each map, as labelled strips: readable in print")
    add_model_flags(a, from_params=True)
    a.add_argument("--title", default=None, help="the heading above the picture (default: what it shows)")
    a.add_argument("--dpi", type=int, default=100,
                   help=f"the PNG's dots per inch, {MIN_DPI} to {MAX_DPI} (default 100)")
    p.commands = {"curves": c, "attention": a}  # for errors found after parsing (check_args)
    return p


def check_args(parser, args):
    """Usage errors argparse's types cannot see: a resolution no PNG can have, an impossible model."""
    sub = parser.commands[args.command]
    if not MIN_DPI <= args.dpi <= MAX_DPI:
        sub.error(f"--dpi must be between {MIN_DPI} and {MAX_DPI}, got {args.dpi}")
    if args.command == "attention":
        # the sizes given, alone: those left out come from the params later (fill_from_params checks them
        # all), so here they stand in as values that fit any given (one head, a width of the heads given)
        given = {name: getattr(args, name) for name in COURSE_SIZE if getattr(args, name) is not None}
        stand_in = dict(COURSE_SIZE, n_head=1, n_embd=given.get("n_head", COURSE_SIZE["n_embd"]))
        check_model_flags(sub, argparse.Namespace(**dict(stand_in, **given)))


def fill_from_params(parser, args):
    """plot attention's flags left out, as ask and memorised take theirs (modelflags.settings_from_params):
    the corpus whose vocabulary the params' card records, the size and variant their shapes say; the
    second file's variant from its own shapes. Needs torch."""
    from submission.params import params_shape
    corpus = args.pretrain_corpus_path
    if corpus is not None and not corpus.strip():  # a variable left unset: not the current folder's wiki.txt
        parser.error("--pretrain_corpus_path is empty; give the wiki.txt the params were trained with, or leave the "
                     "flag out")
    args.data_dir = None if corpus is None else (os.path.dirname(corpus) or ".")
    shape = settings_from_params(parser, args, os.path.join(os.path.dirname(HERE), "data"), "--pretrain_corpus_path")
    if corpus is None:
        args.pretrain_corpus_path = os.path.join(args.data_dir, "wiki.txt")
    if args.params2:  # drawn with the first file's size and corpus: a second of others is named as such
        from submission.card import read_card
        shape2 = params_shape(args.params2)
        other = [f"--{name} {shape2[name]} against {shape[name]}" for name in COURSE_SIZE
                 if name in shape and name in shape2 and shape[name] != shape2[name]]
        vocab, vocab2 = ((read_card(p) or {}).get("vocab") for p in (args.params, args.params2))
        if isinstance(vocab, str) and isinstance(vocab2, str) and vocab != vocab2:
            other.append("another corpus's vocabulary (their cards say)")
        if other:
            raise PlotError(f"{args.params2}: a model of another size or corpus than {args.params} "
                            f"({', '.join(other)}); the two models of one picture share both: give --params2 "
                            f"one trained alike, or draw each alone")
        if args.variant2 is None:
            args.variant2 = "synthesizer" if shape2.get("synthesizer") else "vanilla"
    check_model_flags(parser, args)


def _attention_command(args):
    models = [(args.params, args.variant)]
    if args.params2:
        models.append((args.params2, args.variant2))
    size = {name: getattr(args, name) for name in COURSE_SIZE}
    return draw_attention(args.question, args.pretrain_corpus_path, models, args.out, size=size,
                          title=args.title, dpi=args.dpi, expected=args.expected, last_row=args.last_row)


def main(argv=None):
    """The command line; returns the exit status (0; 2 with a one-line message on stderr; 130 on Ctrl-C)."""
    lenient_streams()
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(parser, args)
    with interruptible_start("plots.py"):  # the slow imports, before any work
        errors = (PlotError,)
        if args.command == "attention":  # torch is imported only for the attention maps
            from ask import as_question
            from submission.dataset import DataError
            from submission.utils import ParamsError
            if not args.question.strip():
                parser.error("--question is empty; give a name or the course's question")
            args.question = as_question(args.question)  # a bare name, as ask takes it
            errors = (PlotError, DataError, ParamsError)
        with contextlib.suppress(MissingMatplotlib):  # reported where it is needed
            pyplot()
    terminated = []

    def terminate(signum, frame):  # `timeout`, a job scheduler: stop as a Ctrl-C does (killed at once, a
        terminated.append(signum)  # save left its temporary file beside the picture)
        raise KeyboardInterrupt

    main_thread = threading.current_thread() is threading.main_thread()
    previous_term = signal.signal(signal.SIGTERM, terminate) if main_thread else None
    try:
        args.out = output_path(args.out)  # checked before any work
        if args.command == "curves":
            out = plot_curves(args.logs, args.out, title=args.title, dpi=args.dpi)
        else:
            fill_from_params(parser.commands["attention"], args)
            out = _attention_command(args)
    except MissingMatplotlib:
        print(INSTALL_HINT, file=sys.stderr)
        return 2
    except errors as e:
        print(f"plots.py: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a file the system will not open (the attention map's params, say)
        if e.filename is None or isinstance(e, BrokenPipeError):
            raise
        print(f"plots.py: error: {e.filename}: {e.strerror or e}; check the file's permissions", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not interrupt the exit
        print(f"plots.py: {'terminated (SIGTERM)' if terminated else 'interrupted'}; {args.out} unchanged",
              file=sys.stderr)
        return 143 if terminated else 130
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous_term or signal.SIG_DFL)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

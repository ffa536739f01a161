#!/usr/bin/env python3
"""The assignment's autograder: the course's test ids, with hidden tests that check for real.

    python src/grader.py                      # every test (from any directory)
    python src/grader.py 1e-0-basic           # one test; an unknown id lists the ids
    python src/grader.py --json results.json  # also write Gradescope's results.json
    python src/grader.py --data-dir COURSE_DATA   # grade against the course's files
    python src/grader.py --code-dir students/ann  # grade a student's package (and predictions) in that folder

The course's hidden tests compare with a secret solution module. These compare with references
written here, independently of the package: the module tree the model must have
(`expected_tree`), the TrainerConfig each helper must return (`expected_config`), the span
corruption's properties measured over thousands of draws of a synthetic corpus
(`span_corpus`), and the synthesizer's equation from the handout (`synthesizer_reference`).
Expected values are computed from the data in use, never hard-coded for one corpus.

Test-set accuracy needs the labels, data/birth_test.tsv. The course's data ships only the
questions (birth_test_inputs.tsv); graded against it, the test-accuracy tests score 0 and say
that the labels are absent.

The framework (time limits, points, output, results.json) is in graderlib.py; the import of the
package graded (src/submission/, or --code-dir's folder) in gradedpackage.py; points and pass marks
in points.json.
"""
import filecmp
import functools
import hashlib
import json
import math
import os
import random
import shlex
import sys
import tempfile
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from oneline import OneLineParser, lenient_streams, utf16, write_fix  # noqa: E402
from startup import interruptible_start  # noqa: E402

with interruptible_start("grader"):  # torch loads here
    import torch

import gradedpackage  # noqa: E402
import graderlib  # noqa: E402
import ledger  # noqa: E402
from gradedpackage import (CODE_FILES, DEFAULT_SUBMISSION_DIR, in_package, typed_path, code_dir,  # noqa: E402
                           code_dir_problem, package_dir, sub, sub_attr, use_code_dir)
from graderlib import Failure, require  # noqa: E402

BLOCK_SIZE = 128
N_LAYER, N_HEAD, N_EMBD = 4, 8, 256
DEFAULT_DATA_DIR = os.path.join(ROOT, "data")
DEFAULT_DEMO_DIR = os.path.join(ROOT, "runs", "demo")  # demo.py's DEFAULT_OUT
DEMO_RECORD = ledger.DEMO_RECORD  # demo.py's RECORD: in a folder the demo wrote
POINTS_PATH = os.path.join(HERE, "points.json")
MASK_CHAR = u"\u2047"
PAD_CHAR = u"\u25A1"


# =============================================================================================
# Context: where the data and the submission's files are, and the pass marks in force
# =============================================================================================
class Context:
    def __init__(self, data_dir, submission_dir, marks, corpus, marks_note=None):
        self.data_dir = os.path.abspath(data_dir)
        self.submission_dir = os.path.abspath(submission_dir)
        self.marks = marks    # {"vanilla_dev": 0.10, ...}
        self.corpus = corpus  # "course" or "embedded": which marks
        self.marks_note = marks_note  # choose_marks's line on why, for a world make_world made with other arguments
        # a folder the demo wrote (its record, demo.RECORD), and graded with the demo's world kept in it (the
        # CPU demo's; on CUDA the demo trains the course's size on data/)
        self.demo = is_demo_folder(self.submission_dir)
        self.demo_world = self.demo and os.path.realpath(self.data_dir) == os.path.realpath(
            os.path.join(self.submission_dir, "data"))

    def data_file(self, name, what):
        path = os.path.join(self.data_dir, name)
        if not os.path.isfile(path):
            if os.path.exists(path):  # a folder, a FIFO, a device: there, but not a file the tests can read twice
                raise Failure(f"{typed_path(path)} is not a regular file: the {what} must be one; "
                              f"replace it with the file")
            shut = graderlib.shut_folder(path)
            if shut:  # "not found" sent the user to make it again
                raise Failure(f"{typed_path(path)} cannot be reached: {shut}")
            default = self.data_dir == os.path.abspath(DEFAULT_DATA_DIR)
            hint = ("regenerate the embedded corpus with python src/make_world.py --out data" if default
                    else "pass the folder that holds it with --data-dir")
            raise Failure(f"{typed_path(path)} not found: the {what}; {hint}")
        return path

    def wiki_text(self):
        return read_utf8(self.data_file("wiki.txt", "pretraining corpus"))

    def train_path(self):
        """The finetuning corpus's path, checked to be UTF-8 before the submission reads it."""
        path = self.data_file("birth_places_train.tsv", "finetuning corpus")
        read_utf8(path)
        return path

    def pretrain_dataset(self):
        return sub_attr("CharCorruptionDataset")(self.wiki_text(), BLOCK_SIZE)

    def run_sh(self, mode, before=()):
        """The command that makes a missing file, with the folders this grading run uses; in a demo's
        folder the demo, which makes the dev predictions (a run.sh mode there would replace the demo's
        files with its own), and for the test predictions, which the demo never makes, the modes'
        folder instead. Grading --code-dir's package, the command is the student's, run where their code is:
        `OUT_DIR=<their folder> ./run.sh` here would make the file with this project's code, not theirs."""
        if code_dir() is not None:  # a demo's folder too: ./run.sh demo here would run the project's code
            return (f"./run.sh {mode}" + (f" (after {', '.join(before)})" if before else "")
                    + " in the student's copy of the assignment, with the code graded")
        if not self.demo:
            return run_sh_command(mode, self.data_dir, self.submission_dir, before)
        if "_eval_test_" in mode:
            return (f"{run_sh_command(mode, self.data_dir, DEFAULT_SUBMISSION_DIR, before)} and grade the folder the "
                    f"modes write (the demo makes no test predictions)")
        out = os.path.realpath(self.submission_dir) != os.path.realpath(DEFAULT_DEMO_DIR)
        return ("./run.sh demo" + (f" --out {shlex.quote(_typed(self.submission_dir))}" if out else "")
                + " (the demo's files come from the demo)")


def is_demo_folder(folder):
    """Whether `folder` is one the demo wrote (its record, demo.RECORD, is there)."""
    return os.path.isfile(os.path.join(folder, DEMO_RECORD))


def run_sh_command(mode, data_dir, submission_dir, before=()):
    """`./run.sh MODE`, with DATA_DIR and OUT_DIR set where the folders are not the defaults, and
    ` (after MODE1, ...)` naming the modes `before` it."""
    env = []  # quoted: the student pastes it into a shell, and a folder may have a space in its name
    if os.path.abspath(data_dir) != os.path.abspath(DEFAULT_DATA_DIR):
        env.append(f"DATA_DIR={shlex.quote(_typed(data_dir))}")
    if os.path.abspath(submission_dir) != os.path.abspath(DEFAULT_SUBMISSION_DIR):
        env.append(f"OUT_DIR={shlex.quote(_typed(submission_dir))}")
    return " ".join(env + ["./run.sh", mode]) + (f" (after {', '.join(before)})" if before else "")


def _typed(path):
    """A folder as a command pasted where the grader runs reads it: relative (runs/demo) when the grader runs
    in the repo root, where `./run.sh` is, and the folder is below it; else absolute (from anywhere else
    the command is pasted after a cd)."""
    return typed_path(path) if os.path.abspath(os.getcwd()) == ROOT else os.path.abspath(path)


def read_utf8(path, most=None):
    """The text of a data or predictions file, or a Failure naming the file, the line and the byte that
    is not UTF-8 (UTF-16, a Windows editor's "Unicode", named by its byte-order mark). `most`: (bytes, why),
    a file larger than that being a Failure saying `why`, read no further (a zip is named as such first)."""
    try:
        f = open(path, "rb")
    except PermissionError as e:  # was "FAIL: PermissionError: [Errno 13] ..." with no fix
        raise Failure(f"{typed_path(path)}: cannot be read ({e.strerror}); make it readable (chmod u+r "
                      f"{shlex.quote(typed_path(path))}), or ask its owner to") from None
    with f:
        data = f.read(4)
        if data == b"PK\x03\x04":
            raise Failure(f"{typed_path(path)}: a zip archive (torch.save writes params as one), not UTF-8 text: check "
                          f"that the file under this name is the one it names")
        size = os.fstat(f.fileno()).st_size
        if most is not None and size > most[0]:
            raise Failure(f"{typed_path(path)}: {size:,} bytes, {most[1]}: check that the file under this name is the "
                          f"one it names")
        data += f.read()
    if utf16(data):
        raise Failure(f"{typed_path(path)}: {utf16(data)}; save it as UTF-8")
    skip = 3 if data.startswith(b"\xef\xbb\xbf") else 0  # a leading byte-order mark (Windows editors) dropped
    try:
        text = data[skip:].decode("utf-8")  # one decode of the whole file: the error's offset is the file's
    except UnicodeDecodeError as e:
        at = e.start + skip
        line = data[:at].count(b"\n") + 1
        raise Failure(f"{typed_path(path)}:{line}: not valid UTF-8 at byte {at}; save the file as UTF-8") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")  # as open() reads text: any newline is "\n"


# =============================================================================================
# Models built with the package graded (gradedpackage.py imports it: sub, sub_attr)
# =============================================================================================
def model_config(vocab_size, **over):
    """The course's model settings: block 128, 4 layers, 8 heads, 256 dimensions."""
    kw = dict(n_layer=N_LAYER, n_head=N_HEAD, n_embd=N_EMBD)
    kw.update(over)
    return sub_attr("GPTConfig")(vocab_size, BLOCK_SIZE, **kw)


def vanilla_gpt(vocab_size):
    """A vanilla GPT of the course's size for the helper tests, built with the package's GPT so that a
    mistake in initialize_vanilla_model costs 1c-0 alone (with it where the package does not export GPT)."""
    gpt = getattr(sub(), "GPT", None)
    return gpt(model_config(vocab_size)) if gpt is not None else initialized("initialize_vanilla_model", vocab_size)


def initialized(name, vocab_size):
    """The model that helper function `name` builds from the course's GPTConfig, checked to be one."""
    model = sub_attr(name)(model_config(vocab_size))
    require(isinstance(model, torch.nn.Module),
            f"{name}(mconf) returned {type(model).__name__}, expected the GPT it builds (return GPT(mconf), "
            f"with mconf.synthesizer set for the synthesizer)")
    return model


def _count_rows(path):
    """(questions, items of text.split('\\n')) of a TSV file: the lengths a NameDataset may have."""
    items = read_utf8(path).split("\n")
    return sum(1 for line in items if line.strip()), len(items)


def _unpack_pair(ret, fn_name):
    if not (isinstance(ret, (tuple, list)) and len(ret) == 2):
        raise Failure(f"{fn_name} must return (trainer_config, trainer), got {type(ret).__name__}"
                      + (f" of length {len(ret)}" if isinstance(ret, (tuple, list)) else ""))
    tconf, trainer = ret
    if hasattr(tconf, "train_dataset") and hasattr(trainer, "max_epochs"):  # told by shape: no export needed
        raise Failure(f"{fn_name} returned (trainer, trainer_config): the order is (trainer_config, trainer)")
    for what, got, fix in (("trainer_config", tconf, "TrainerConfig(...)"),
                           ("trainer", trainer, "Trainer(model, train_dataset, None, tconf)")):
        require(got is not None, f"{fn_name} returned None as its {what}: build it ({fix}) and return "
                                 f"(trainer_config, trainer)")
    return ret


# =============================================================================================
# References: the expected model tree and the expected trainer configurations
# =============================================================================================
def expected_tree(vocab_size, block_size, n_layer, n_head, n_embd, synthesizer):
    """The GPT the course's code builds, written out: {module name: (kind, attributes)}, {parameter
    name: shape} and {buffer name: shape}. `kind` is a torch.nn class, or the class name of one of
    the assignment's own modules."""
    import torch.nn as nn
    modules, params, buffers = {}, {}, {}

    def linear(name, n_in, n_out, bias=True):
        modules[name] = (nn.Linear, dict(in_features=n_in, out_features=n_out, bias=bias))
        params[name + ".weight"] = (n_out, n_in)
        if bias:
            params[name + ".bias"] = (n_out,)

    def layernorm(name):
        modules[name] = (nn.LayerNorm, dict(normalized_shape=(n_embd,), eps=1e-5, elementwise_affine=True))
        params[name + ".weight"] = (n_embd,)
        params[name + ".bias"] = (n_embd,)

    def dropout(name):
        modules[name] = (nn.Dropout, dict(p=0.1))

    modules[""] = ("GPT", {})
    modules["tok_emb"] = (nn.Embedding, dict(num_embeddings=vocab_size, embedding_dim=n_embd))
    params["tok_emb.weight"] = (vocab_size, n_embd)
    params["pos_emb"] = (1, block_size, n_embd)
    dropout("drop")
    modules["blocks"] = (nn.Sequential, {})
    for i in range(n_layer):
        b = f"blocks.{i}"
        modules[b] = ("Block", {})
        layernorm(b + ".ln1")
        layernorm(b + ".ln2")
        a = b + ".attn"
        if synthesizer:
            modules[a] = ("SynthesizerAttention", {})
            linear(a + ".w1", n_embd, n_embd)
            params[a + ".w2"] = (n_embd // n_head, block_size - 1)
            params[a + ".b2"] = (block_size - 1,)
        else:
            modules[a] = ("CausalSelfAttention", {})
            linear(a + ".key", n_embd, n_embd)
            linear(a + ".query", n_embd, n_embd)
        linear(a + ".value", n_embd, n_embd)
        dropout(a + ".attn_drop")
        dropout(a + ".resid_drop")
        linear(a + ".proj", n_embd, n_embd)
        buffers[a + ".mask"] = (1, 1, block_size, block_size)
        modules[b + ".mlp"] = (nn.Sequential, {})
        linear(b + ".mlp.0", n_embd, 4 * n_embd)
        modules[b + ".mlp.1"] = (nn.GELU, dict(approximate="none"))
        linear(b + ".mlp.2", 4 * n_embd, n_embd)
        dropout(b + ".mlp.3")
    layernorm("ln_f")
    linear("head", n_embd, vocab_size, bias=False)
    return modules, params, buffers


def _kind_name(kind):
    return kind if isinstance(kind, str) else kind.__name__


def tree_differences(model, expected):
    """Every way `model` differs from `expected` (module names and types, layer settings,
    parameter and buffer names and shapes), as short phrases. A module beyond the expected ones that holds no
    parameter or buffer (an nn.ReLU kept as an attribute) is no difference, as the params file is the same,
    unless a module beside it is missing: it is then likely that module renamed."""
    exp_modules, exp_params, exp_buffers = expected
    problems = []
    wrong_kinds = []  # listed first: a module of the wrong class explains the missing and unexpected ones in it
    got_modules = dict(model.named_modules())

    def owner(name):  # the module a parameter, buffer or module belongs to
        return name.rsplit(".", 1)[0] if "." in name else ""

    missing = [n for n in exp_modules if n not in got_modules]
    for n in missing:
        if n.rsplit(".", 1)[0] in missing and "." in n:
            continue  # inside a missing module: that one is reported
        problems.append(f"missing module {n} ({_kind_name(exp_modules[n][0])})")
    parents_missing = {owner(n) for n in missing}
    for n, mod in got_modules.items():
        if n not in exp_modules:
            stateless = next(mod.parameters(), None) is None and next(mod.buffers(), None) is None
            if stateless and owner(n) not in parents_missing:
                continue  # a helper holding no weights (self.relu = nn.ReLU()): the params file is the course's
            problems.append(f"unexpected module {n} ({type(mod).__name__})")
            continue
        kind, attrs = exp_modules[n]
        ok = type(mod).__name__ == kind if isinstance(kind, str) else isinstance(mod, kind)
        if not ok:
            wrong_kinds.append(f"{n or 'the model'} is a {type(mod).__name__}, expected {_kind_name(kind)}")
            continue
        for attr, want in attrs.items():
            have = getattr(mod, attr, None)
            if attr == "bias" and isinstance(mod, torch.nn.Linear):
                have = mod.bias is not None
            if isinstance(want, tuple):
                have = tuple(have) if have is not None else None
            if isinstance(want, float) and isinstance(have, (int, float)):
                same = math.isclose(have, want, rel_tol=1e-9)
            else:
                same = have == want
            if not same:
                problems.append(f"{n}.{attr} is {have!r}, expected {want!r}")
    def reported(name):  # its module is already reported missing or unexpected
        o = owner(name)
        return (o in exp_modules) != (o in got_modules)

    got_params = {n: tuple(p.shape) for n, p in model.named_parameters()}
    for n, shape in exp_params.items():
        if n not in got_params and not reported(n):
            problems.append(f"missing parameter {n} {shape}")
        elif n in got_params and got_params[n] != shape:
            problems.append(f"parameter {n} has shape {got_params[n]}, expected {shape}")
    for n, shape in got_params.items():
        if n not in exp_params and not reported(n):
            problems.append(f"unexpected parameter {n} {shape}")
    state = model.state_dict()
    for n, shape in exp_buffers.items():
        if n in state:
            if tuple(state[n].shape) != shape:
                problems.append(f"buffer {n} has shape {tuple(state[n].shape)}, expected {shape}")
        elif not reported(n):
            problems.append(f"missing buffer {n} {shape} (the causal mask, saved with the params)")
    return wrong_kinds + problems


def _first_three(problems):
    """'p1; p2; p3 (+N more)': a failure's first problems, and how many it leaves out."""
    more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
    return "; ".join(problems[:3]) + more


def require_tree(model, expected, what):
    problems = tree_differences(model, expected)
    if problems:
        raise Failure(f"the {what} differs from the expected module tree: {_first_three(problems)}")
    n_params = sum(p.numel() for p in model.parameters())
    want = sum(math.prod(s) for s in expected[1].values())
    require(n_params == want, f"the {what} has {n_params:,} parameters, expected {want:,}")
    return n_params


EXPECTED_CONFIGS = {
    # part (c): finetuning without pretraining
    "finetune_scratch": dict(max_epochs=75, batch_size=256, learning_rate=6e-4),
    # parts (f) and (g): finetuning from pretrained params
    "finetune_pretrained": dict(max_epochs=10, batch_size=256, learning_rate=6e-4),
    # part (f): span-corruption pretraining
    "pretrain": dict(max_epochs=650, batch_size=128, learning_rate=6e-3),
}


def expected_config(kind, n_pretrain_items):
    """Every TrainerConfig field the course checks; final_tokens from the data in use:
    200 * len(pretrain_dataset) * block_size (1e-2 checks that len counts every item of text.split('\\n'))."""
    cfg = dict(EXPECTED_CONFIGS[kind])
    cfg.update(betas=(0.9, 0.95), grad_norm_clip=1.0, weight_decay=0.1, lr_decay=True,
               warmup_tokens=512 * 20, final_tokens=200 * n_pretrain_items * BLOCK_SIZE,
               ckpt_path=None, num_workers=4)
    return cfg


def _same(have, want):
    if want is None:
        return have is None
    if isinstance(want, bool):
        return have is want or (isinstance(have, (int, float)) and not isinstance(have, bool) and have == want)
    if isinstance(want, tuple):
        return (isinstance(have, (tuple, list)) and len(have) == len(want)
                and all(_same(h, w) for h, w in zip(have, want)))
    if isinstance(have, bool) or not isinstance(have, (int, float)):
        return False
    return math.isclose(float(have), float(want), rel_tol=1e-9, abs_tol=0.0)


def require_config(tconf, kind, call, n_items):
    """`tconf` has every field of expected_config(kind, n_items)."""
    problems = []
    for field, want in expected_config(kind, n_items).items():
        if not hasattr(tconf, field):
            problems.append(f"{field} is not set (expected {want!r})")
            continue
        have = getattr(tconf, field)
        if not _same(have, want):
            why = f" = 200 * {n_items} pretraining items * {BLOCK_SIZE}" if field == "final_tokens" else ""
            problems.append(f"{field} is {have!r}, expected {want!r}{why}")
    if problems:
        raise Failure(f"{call} returned a TrainerConfig whose {_first_three(problems)}")


def require_trainer(trainer, tconf, model, call, dataset=None, n_rows=None):
    """The trainer trains `model` on the right dataset with the returned config."""
    for attr in ("model", "train_dataset", "config"):
        require(hasattr(trainer, attr), f"{call} returned a trainer without .{attr} (build it with "
                                        f"Trainer(model, train_dataset, None, tconf))")
    raw = getattr(trainer.model, "module", trainer.model)
    require(raw is model, f"{call} returned a trainer of another model than the one passed in")
    require(trainer.config is tconf, f"{call} returned a trainer whose config is not the returned TrainerConfig")
    if dataset is not None:
        require(trainer.train_dataset is dataset, f"{call} returned a trainer that does not train on pretrain_dataset")
    if n_rows is not None:  # the course's NameDataset also counts the empty item after the last newline
        n = len(trainer.train_dataset)
        lo, hi = n_rows
        require(lo <= n <= hi, f"{call} returned a trainer on {n} examples; the finetuning corpus has {lo} "
                               f"(train on NameDataset(open(finetune_corpus_path).read(), pretrain_dataset))")


# =============================================================================================
# 1c: the vanilla model and finetuning without pretraining
# =============================================================================================
def test_1c0(ctx):
    vocab = ctx.pretrain_dataset().vocab_size
    model = initialized("initialize_vanilla_model", vocab)
    n = require_tree(model, expected_tree(vocab, BLOCK_SIZE, N_LAYER, N_HEAD, N_EMBD, synthesizer=False),
                     "vanilla GPT")
    model.eval()
    idx = torch.randint(0, vocab, (2, 16))
    with torch.no_grad():
        out = model(idx, idx)
    require(isinstance(out, (tuple, list)) and len(out) == 2, "GPT.forward must return (logits, loss)")
    logits, loss = out
    require(tuple(logits.shape) == (2, 16, vocab),
            f"GPT.forward on a (2, 16) batch returned logits of shape {tuple(logits.shape)}, expected (2, 16, {vocab})")
    require(loss is not None and loss.dim() == 0 and bool(torch.isfinite(loss)),
            "GPT.forward with targets must return a finite scalar loss")
    later = idx.clone()
    later[:, 8:] = (idx[:, 8:] + 1) % vocab  # other tokens from position 8 on, the first 8 the same
    for where in attention_routes(model):
        changed = logits_moved(model, idx, later)
        if changed > 1e-4:
            said = (f"GPT's logits at positions 0-7 changed by {changed:.3g} {where} when only the tokens from "
                    f"position 8 on changed: attention sees the future")
            mistake = vanilla_mistake(model.blocks[0].attn, N_HEAD)
            if mistake is not None:
                raise Failure(f"{said}; blocks.0.attn computes the attention {mistake}")
            raise Failure(f"{said} (CausalSelfAttention must fill the scores above the diagonal with -inf, by its "
                          f"causal mask, before the softmax, and split the heads with view(B, T, n_head, "
                          f"hs).transpose(1, 2), which keeps positions apart)")
    return f"{n:,} parameters, vocabulary {vocab}"


# the mistakes by which a vanilla attention sees the future, each matched against the equation computed with it
# when 1c-0 finds the logits moved by later tokens; the words are the synthesizer's (SYNTHESIZER_MISTAKES)
VANILLA_MISTAKES = ("no_mask", "mask_after_softmax", "softmax_rows")


def vanilla_reference(params, x, n_head, mistake=None):
    """minGPT's masked attention, head by head: Y_i = softmax(Q_i K_i^T / sqrt(hs) + causal mask) V_i,
    output = [Y_1 ... Y_h] P + p, with Q_i, K_i, V_i head i's columns of query, key and value;
    `mistake`: one of VANILLA_MISTAKES, the equation computed with it."""
    B, T, C = x.shape
    hs = C // n_head
    q, k, v = (x @ params[f"{name}.weight"].t() + params[f"{name}.bias"] for name in ("query", "key", "value"))
    heads = []
    for i in range(n_head):
        cols = slice(i * hs, (i + 1) * hs)
        scores = q[..., cols] @ k[..., cols].transpose(-2, -1) / math.sqrt(hs)  # (B, T, T)
        heads.append(causal_weights(scores, mistake) @ v[..., cols])  # (B, T, hs)
    y = torch.cat(heads, dim=-1)  # (B, T, C): [Y_1 ... Y_h]
    return y @ params["proj.weight"].t() + params["proj.bias"]  # (B, T, C)


def vanilla_mistake(att, n_head):
    """Which of VANILLA_MISTAKES the attention layer `att` makes, in words with the fix, on the path and in
    the mode it is in now; None when it matches none of them or cannot be run. For the probe its dropout
    keeps all but one in 10^12 (p = 0 would take another route where attention dropout decides one, as
    attention.attention_route does in this package); p and torch's random stream are put back after."""
    drops = [m for m in att.modules() if isinstance(m, torch.nn.Dropout)]
    before, state = [m.p for m in drops], torch.get_rng_state()
    try:
        for m in drops:
            m.p = 1e-12
        x = torch.randn(3, 9, att.proj.in_features, generator=torch.Generator().manual_seed(5))
        params = {k: v.detach() for k, v in att.named_parameters()}
        with torch.no_grad():
            y = att(x)
            for mistake in VANILLA_MISTAKES:
                ref = vanilla_reference(params, x, n_head, mistake)
                if float((y - ref).abs().max()) <= 1e-4 * max(1.0, float(ref.abs().max())):
                    return SYNTHESIZER_MISTAKES[mistake]
    except Exception:  # noqa: BLE001 - a layer this probe cannot run is named by the message without it
        return None
    finally:
        for m, p in zip(drops, before):
            m.p = p
        torch.set_rng_state(state)
    return None


def attention_routes(model, modes=(False, True)):
    """Put `model` (a GPT, or one attention module) in each state its attention computes differently in,
    yielding words for each: eval and training mode (`modes`: the values of model.train), each also on
    the reference path where the attention modules have a `fast` switch (this package's fast and
    reference paths; the course's code has one path). The model is left as it was."""
    switches = [m for m in model.modules() if isinstance(getattr(m, "fast", None), bool)]
    before, training = [m.fast for m in switches], model.training
    try:
        for fast in ((True, False) if switches else (None,)):
            for m in switches:
                m.fast = fast
            for train in modes:
                model.train(train)
                yield (("in training mode" if train else "in eval mode")
                       + (" on the reference path (the attention's fast = False)" if fast is False else ""))
    finally:
        for m, fast in zip(switches, before):
            m.fast = fast
        model.train(training)


def logits_moved(model, idx, later):
    """How far the logits at positions 0-7 move between inputs `idx` and `later`, which differ from position
    8 on; in training mode both forwards draw the same dropout (torch's stream restarted alike, then put
    back as it was)."""
    state = torch.get_rng_state()
    try:
        with torch.no_grad():
            torch.manual_seed(1224)
            first = model(idx)[0]
            torch.manual_seed(1224)
            second = model(later)[0]
    finally:
        torch.set_rng_state(state)
    return float((second[:, :8] - first[:, :8]).abs().max())


def test_1c1(ctx):
    ds = ctx.pretrain_dataset()
    model = vanilla_gpt(ds.vocab_size)
    call = "finetune(None, ...)"
    tconf, trainer = _unpack_pair(sub_attr("finetune")(None, ctx.train_path(), ds, BLOCK_SIZE, model), call)
    # the handout's len(pretrain_dataset); 1e-2 checks that it counts every line
    require_config(tconf, "finetune_scratch", call, len(ds))
    require_trainer(trainer, tconf, model, call, n_rows=_count_rows(ctx.train_path()))


# =============================================================================================
# Accuracy tests (1d, 1f, 1g): prediction files against the labels
# =============================================================================================
PREDICTIONS = {
    # file: (split, run.sh mode that writes it, the modes before it)
    "vanilla.nopretrain.dev.predictions": ("dev", "vanilla_eval_dev_without_pretrain",
                                           ["vanilla_finetune_without_pretrain"]),
    "vanilla.nopretrain.test.predictions": ("test", "vanilla_eval_test_without_pretrain",
                                            ["vanilla_finetune_without_pretrain"]),
    "vanilla.pretrain.dev.predictions": ("dev", "vanilla_eval_dev_with_pretrain",
                                         ["vanilla_pretrain", "vanilla_finetune_with_pretrain"]),
    "vanilla.pretrain.test.predictions": ("test", "vanilla_eval_test_with_pretrain",
                                          ["vanilla_pretrain", "vanilla_finetune_with_pretrain"]),
    "synthesizer.pretrain.dev.predictions": ("dev", "synthesizer_eval_dev_with_pretrain",
                                             ["synthesizer_pretrain", "synthesizer_finetune_with_pretrain"]),
    "synthesizer.pretrain.test.predictions": ("test", "synthesizer_eval_test_with_pretrain",
                                              ["synthesizer_pretrain", "synthesizer_finetune_with_pretrain"]),
}
LABELS = {"dev": "birth_dev.tsv", "test": "birth_test.tsv"}
TRAINED_BY = {  # a training mode: the params it writes, and the EXPECTED_CONFIGS run that makes them
    "vanilla_finetune_without_pretrain": ("vanilla.model.params", "finetune_scratch"),
    "vanilla_pretrain": ("vanilla.pretrain.params", "pretrain"),
    "vanilla_finetune_with_pretrain": ("vanilla.finetune.params", "finetune_pretrained"),
    "synthesizer_pretrain": ("synthesizer.pretrain.params", "pretrain"),
    "synthesizer_finetune_with_pretrain": ("synthesizer.finetune.params", "finetune_pretrained"),
}
# the files of a student's folder the tests grade besides the code (a --code-dir holding any of them is graded)
GRADED_OUTPUTS = set(PREDICTIONS) | {params for params, _ in TRAINED_BY.values()}


def trained_epochs(params):
    """(epochs, what says so) for a params file: its card's (run.py's <params>.card.json, while the sha256 it
    records is theirs), else the last epoch of the loss log beside them (<params>.log.jsonl) unless the params
    were written well after it (the log of params since replaced, as by a run whose --log_path was elsewhere);
    (None, None) when neither says, and when the params are missing: a card or log left beside no params (a
    folder sent without them) is tied to nothing graded, and a card without a sha256 would match their none."""
    if not os.path.isfile(params):
        return None, None
    try:
        with open(params + ".card.json", encoding="utf-8") as f:
            card = json.load(f)
    except (OSError, ValueError):
        card = None
    if isinstance(card, dict) and card.get("params_sha256") == ledger.sha256_of(params):
        epochs = card.get("epochs")
        if isinstance(epochs, int) and not isinstance(epochs, bool):
            return epochs, "card"
    log = params + ".log.jsonl"
    try:
        stale = os.path.getmtime(log) < os.path.getmtime(params) - ledger.LOG_LAG
    except OSError:  # no log
        stale = True
    epochs = None if stale else ledger.logged_epochs(log)
    return (epochs, "loss log") if epochs is not None else (None, None)


def short_training(ctx, name):
    """' (X trained 1 of the course's 75 epochs, by its card: ...)' when a params file that the predictions
    file `name` comes from was trained fewer than the course's epochs, as its card or loss log says
    (trained_epochs), such as a quick run with --max_epochs 1; else ''."""
    notes, said = [], set()
    for mode in PREDICTIONS[name][2]:
        params, run = TRAINED_BY[mode]
        epoch, source = trained_epochs(os.path.join(ctx.submission_dir, params))
        if epoch is None:  # no card or log, another format: nothing to say
            continue
        want = EXPECTED_CONFIGS[run]["max_epochs"]
        if epoch < want:
            notes.append(f"{params} trained {epoch} of the course's {want} epochs")
            said.add(source)
    if not notes:
        return ""
    by = " and ".join(sorted(f"their {s}s" if len(notes) > 1 else f"its {s}" for s in said))
    return f" ({'; '.join(notes)}, by {by}: the pass marks need the course's whole runs)"


def read_labels(path):
    answers = []
    for lineno, line in enumerate(read_utf8(path).split("\n"), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        require(len(fields) == 2, f"{typed_path(path)}:{lineno}: expected question<TAB>place, found {len(fields)} "
                                  f"tab-separated field(s); fix or remove that line")
        answers.append(fields[1].rstrip())  # as evaluate_places reads it: the spaces that end the line go
    return answers


def check_labels_match_inputs(labels, inputs):
    """Failure unless the labelled test questions are those of birth_test_inputs.tsv beside them (when
    it is there): the course's files copied over data/ (through src/data/, the course's place) leave
    data/'s own birth_test.tsv behind, and its labels would grade the course's test predictions."""
    if not os.path.isfile(inputs):
        return

    def questions(path):
        return [line.split("\t")[0].strip() for line in read_utf8(path).split("\n") if line.strip()]

    asked, known = questions(inputs), questions(labels)
    if asked == known:
        return
    at = next((i for i, (a, k) in enumerate(zip(asked, known)) if a != k), min(len(asked), len(known)))
    raise Failure(f"test labels absent: {typed_path(labels)} labels other questions than {typed_path(inputs)} "
                  f"beside it ({len(known)} against {len(asked)}, first differing at question {at + 1}), so test "
                  f"accuracy cannot be graded; the course's data has no test labels: give --data-dir the course's "
                  f"folder, or restore the embedded corpus (git checkout data)")


PREDICTION_BYTES_MOST = 1024  # a line of a predictions file, generously: evaluation decodes 32 characters


def prediction_lines(path, questions):
    """The predictions of a file, one a line, as the course's evaluation reads them against `questions`
    questions: a newline ends a line (an empty file has none), and blank lines past the count are an
    editor's extra newlines, not predictions. Text that is not UTF-8 is read_utf8's Failure: its
    places could not be compared; so is a file far larger than `questions` answers can be, which is not read
    (105 MB of them took 1.45 GB to read: a grading in a small container would end without a report)."""
    most = ((questions + 100) * PREDICTION_BYTES_MOST,
            f"more than {questions} predictions can be (a line each, of a few dozen characters)")
    lines = read_utf8(path, most).split("\n")  # a UTF-8 byte-order mark is no part of line 1
    if lines[-1] == "":  # an empty file, or a newline ending the last line: no line after it
        lines.pop()
    while len(lines) > questions and not lines[-1].strip():
        lines.pop()  # blank lines after the last prediction; one the count needs stays
    return lines


def read_predictions(ctx, name):
    """(prediction lines, label places) of a prediction file and its split (count_right scores them), or a
    Failure saying what is missing: the labels, the file (and the run.sh mode that makes it), or lines."""
    split, mode, before = PREDICTIONS[name]
    labels = os.path.join(ctx.data_dir, LABELS[split])
    if not os.path.isfile(labels):
        if split == "test" and os.path.isfile(os.path.join(ctx.data_dir, "birth_test_inputs.tsv")):
            raise Failure(f"test labels absent: {typed_path(labels)} is not there (the course's data has the questions "
                          f"only, birth_test_inputs.tsv), so test accuracy cannot be graded with this --data-dir")
        ctx.data_file(LABELS[split], f"labelled {split} questions")
    answers = read_labels(labels)
    if not answers:  # the demo's world: no test split
        raise Failure(f"no {split} questions: {typed_path(labels)} holds none"
                      + (" (a demo's world has no test split)" if split == "test" else "")
                      + f", so {split} accuracy cannot be graded with this --data-dir")
    if split == "test":
        check_labels_match_inputs(labels, os.path.join(ctx.data_dir, "birth_test_inputs.tsv"))
    path = os.path.join(ctx.submission_dir, name)
    if not os.path.isfile(path):
        if os.path.isdir(path):  # "make it" alone sent the user round: run.py refuses a folder's path
            raise Failure(f"{typed_path(path)} is a folder, not a predictions file: remove or rename it, then make it "
                          f"with {ctx.run_sh(mode, before)}")
        shut = graderlib.shut_folder(path)
        if shut:  # "make it" would have the user train again
            raise Failure(f"{typed_path(path)} cannot be reached: {shut}")
        raise Failure(f"{typed_path(path)} not found: make it with {ctx.run_sh(mode, before)}")
    lines = prediction_lines(path, len(answers))
    tabbed = sum("\t" in line for line in lines)
    if tabbed > len(lines) // 2:
        raise Failure(f"{name}: {tabbed} of its {len(lines)} lines hold a tab (line 1: {_show(lines[0], 60)}): "
                      f"a predictions file holds the predicted place alone, one a line; remake it with "
                      f"{ctx.run_sh(mode)}")
    require(len(lines) == len(answers),
            f"{name} has {len(lines)} line{'' if len(lines) == 1 else 's'} for the {len(answers)} questions of "
            f"{LABELS[split]}{blank_lines(lines, len(answers))}: it must hold one prediction a line, in order; "
            f"{count_fix(ctx, split, mode, len(lines))}")
    return lines, answers


def blank_lines(lines, questions):
    """' (line 5 is blank)' for a file with more lines than questions whose extra lines may be its blank
    ones (a line added by hand; run.py writes an empty answer as an empty line too, so only as many as the
    extra lines, at most 3), else ''."""
    blank = [n for n, line in enumerate(lines, start=1) if not line.strip()]
    if not blank or len(blank) > min(3, len(lines) - questions):
        return ""
    said = ", ".join(map(str, blank[:-1])) + (" and " if len(blank) > 1 else "") + str(blank[-1])
    return f" (line{'s' if len(blank) > 1 else ''} {said} {'are' if len(blank) > 1 else 'is'} blank)"


def count_fix(ctx, split, mode, count):
    """What to do about a predictions file of `count` lines for another number of questions: grade it with
    the data folder it answers, where the submission folder holds one whose questions are as many (the
    demo keeps its world in runs/demo/data), else make it again from this grading's data."""
    data = os.path.join(ctx.submission_dir, "data")
    try:
        if os.path.realpath(data) != os.path.realpath(ctx.data_dir) and len(read_labels(os.path.join(
                data, LABELS[split]))) == count:
            return (f"it answers the {count} questions of {typed_path(data)}: grade it with --data-dir "
                    f"{shlex.quote(typed_path(data))}")
    except (OSError, Failure):
        pass
    return f"if it answers another data folder's questions, give that folder with --data-dir, else remake it with " \
           f"{ctx.run_sh(mode)}"


def same_place(predicted, place):
    """Whether a prediction line answers a labelled `place` by the course's rule (its evaluate_places, which
    run.py prints the accuracy of): the prediction exactly as written, the place without the spaces that end
    its line. Written here, not imported: the package graded may be a student's."""
    return predicted == place.rstrip()


def count_right(lines, answers):
    """How many prediction lines match their answers, by the course's rule (same_place), so that the grader's
    accuracy is the one run.py printed for the same files: a prediction with spaces around it (a model that
    learned to write them, from a finetuning file's places with spaces) is wrong for both. A Windows line
    end is no part of a line (read_utf8)."""
    return sum(1 for p, a in zip(lines, answers) if same_place(p, a))


def all_empty(lines, name):
    """' (every line of NAME is empty: ...)' when a predictions file answers nothing at all, as run.py writes
    for a model that puts the closing MASK at once (one not trained to answer yet), else ''."""
    if not lines or any(lines):  # as run.py's note: a line of spaces is an answer, if a wrong one
        return ""
    return (f" (every line of {name} is empty: the model wrote the closing MASK at once, as one not yet trained to "
            f"answer does)")


def spaced(lines, answers, name):
    """' (N lines of NAME would be right without the spaces around them: ...)' where some would, else ''.
    By the course's rule such a line is wrong, and the low accuracy read as a model trained too little."""
    n = sum(1 for p, a in zip(lines, answers) if not same_place(p, a) and same_place(p.strip(), a))
    if not n:
        return ""
    return (f" ({n} line{'s' if n > 1 else ''} of {name} would be right without the spaces around "
            f"{'them' if n > 1 else 'it'}: the course's evaluate_places compares whole lines, so a space an edit or a "
            f"model put there makes an answer wrong)")


def cut_at_marks(lines, answers, name):
    """' (N lines of NAME would be right cut at their first MASK or PAD character: ...)' where some would, else
    ''. A prediction is the text between the question's MASK and the next one (the course's
    completion.split(MASK_CHAR)[1]); keeping the closing MASK, or the padding after it, makes every answer
    wrong, which read as a model that learned nothing."""
    def cut(p):
        return min((p.index(c) for c in (MASK_CHAR, PAD_CHAR) if c in p), default=None)
    n = sum(1 for p, a in zip(lines, answers)
            if cut(p) is not None and not same_place(p, a) and same_place(p[:cut(p)], a))
    if not n:
        return ""
    return (f" ({n} line{'s' if n > 1 else ''} of {name} would be right cut at {'their' if n > 1 else 'its'} first "
            f"{MASK_CHAR} or {PAD_CHAR}: a prediction is the completion's text between the question's {MASK_CHAR} "
            f"and the next, completion.split(MASK_CHAR)[1] in the course's run.py, without the closing "
            f"{MASK_CHAR} or any padding)")


def out_of_order(lines, answers, name):
    """' (the lines of NAME are in alphabetical order ...)' or ' (read bottom to top, N lines of NAME would be right
    ...)' where the predictions were written in another order than the questions', else ''. Each line is compared
    with its question's answer, so a sorted or reversed file scores as a model that learned nothing."""
    said, truth = [line.strip() for line in lines], [a.strip() for a in answers]
    if len(set(said)) > 2 and said == sorted(said) and truth != sorted(truth):
        return (f" (the lines of {name} are in alphabetical order, which the questions are not: write each "
                f"prediction on its question's line, in the questions file's order)")
    backwards = count_right(lines[::-1], answers)
    if backwards >= 3 and backwards > 2 * count_right(lines, answers):
        return (f" (read bottom to top, {backwards} lines of {name} would be right: write each prediction on its "
                f"question's line, in the questions file's order)")
    return ""


def near_misses(lines, answers, name):
    """Why right answers were counted wrong, where a formatting slip explains it (spaced, cut_at_marks) or the
    order of the lines does (out_of_order)."""
    return spaced(lines, answers, name) + cut_at_marks(lines, answers, name) + out_of_order(lines, answers, name)


def at_least_one_right(name):
    def test(ctx):
        lines, answers = read_predictions(ctx, name)
        correct, total = count_right(lines, answers), len(answers)
        require(correct >= 1, f"no prediction in {name} is right (0/{total}){all_empty(lines, name)}"
                              f"{near_misses(lines, answers, name)}; " + (
            "in the demo's small world a model without pretraining can get none right (its table shows 0.0%)"
            if ctx.demo_world else "even without pretraining the model gets a few right: check that it was finetuned "
                             "and evaluated on this data") + short_training(ctx, name))
        return f"{correct}/{total} right ({correct / total:.1%})"
    test.predictions = name  # ACCURACY_TESTS
    return test


def pass_mark(name, mark_key):
    def test(ctx):
        lines, answers = read_predictions(ctx, name)
        correct, total = count_right(lines, answers), len(answers)
        split, mode, before = PREDICTIONS[name]
        mark = ctx.marks[mark_key]
        acc = correct / total if total else 0.0
        require(acc >= mark - 1e-12, f"{split} accuracy {acc:.2%} ({correct}/{total}) is below the pass mark "
                                     f"{mark:.0%} ({ctx.corpus} corpus){all_empty(lines, name)}"
                                     f"{near_misses(lines, answers, name)}" + short_training(ctx, name))
        # the synthesizer's marks are not above always answering "London" (5.0%): one place repeated, or
        # repeated with a few others put in, would pass them without a model. A model's right answers are
        # not all its commonest answer (an empty answer is no place)
        said = [line.strip() for line in lines]
        top, count = Counter(p for p in said if p).most_common(1)[0] if any(said) else ("", 0)
        others = sum(1 for p, s, a in zip(lines, said, answers) if s and s != top and same_place(p, a))
        require(others > 0 or 2 * count <= total or total < 2,
                f"{count} of the {total} predictions in {name} are {top!r}, and every right one is: that is the "
                f"one-place baseline ({split} accuracy {acc:.2%}), not a model's answers; make them with "
                f"{ctx.run_sh(mode, before)}")
        return f"{split} accuracy {acc:.2%} ({correct}/{total}), pass mark {mark:.0%} ({ctx.corpus} corpus)"
    test.predictions = name  # ACCURACY_TESTS
    test.mark_key = mark_key  # MARK_TESTS
    return test


# =============================================================================================
# 1e: span corruption, over many draws of a synthetic corpus
# =============================================================================================
SPAN_BLOCK_SIZES = (128, 50)  # the course's block size, and the course grader's (int(50*7/8) = 43)
SPAN_ROUNDS = 40              # draws of every line, per block size
SPAN_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:'()-éüßøñ"


def span_corpus():
    """A small corpus with every kind of line: empty and 1-3 characters, a few just over the minimum,
    medium ones, and ones longer than any block. Random characters, so that a span taken from the
    wrong place shows. It ends with a newline, so its last item is empty, as in wiki.txt."""
    rng = random.Random(1224)

    def words(n):
        return "".join(rng.choice(SPAN_ALPHABET) for _ in range(n))

    lines = ["", "a", "bc", "def", "ghij", "klmno", "pqrstu", "vwxyz01"]
    lines += [words(rng.randint(8, 110)) for _ in range(24)]
    lines.insert(17, "")
    lines += [words(rng.randint(150, 1200)) for _ in range(24)]
    return "\n".join(lines) + "\n"


def _short_error(e):
    return graderlib.shorten(e, 120) or "(no message)"


def item_problem(e, idx, doc, block):
    """Why dataset[idx] raised `e`: the exception, where in the package, the document drawn from."""
    where = in_package(e)
    at = f" at {where}" if where else ""
    if isinstance(e, NotImplementedError):
        what = f"raised NotImplementedError{at}: CharCorruptionDataset.__getitem__ is not written yet"
    elif isinstance(e, graderlib.CallTimeout):
        what = f"did not return within {ITEM_SECONDS} s" + (f" (stopped{at})" if at else "")
    else:
        what = f"raised {type(e).__name__}{at}: {_short_error(e)}"
    short = ("; every line must work, the shortest too: wiki.txt ends with a newline, so its last item is empty"
             if len(doc) < 4 else "")
    if short and isinstance(e, graderlib.CallTimeout):
        short += (", and under 4 characters no truncation length in [4, len(document)] exists: a loop that "
                  "draws until one fits never ends")
    return f"dataset[{idx}] {what}, on a document of {len(doc)} characters (block_size {block}){short}"


ITEM_SECONDS = 5  # the most one dataset[idx] may take in the span tests (an item takes microseconds)
_SHORT_HANGS = set()  # the CharCorruptionDataset classes that hung on a document under 4 characters


class SpanDraws:
    """Draws of CharCorruptionDataset over span_corpus(): (document, block_size, x, y) for every line,
    SPAN_ROUNDS times, for each block size. Lines of 4+ characters are drawn first, so that a mistake
    in every item is reported on an ordinary document. Lines shorter than the 4 characters a document
    is truncated to are 1e-2's (check_items): a crash on one fails that test only, and the other tests
    skip them; so is a dataset whose length is not the corpus's count of lines, which the others read
    through its `data` (the course's attribute) when it has one.

    Each item has ITEM_SECONDS (graderlib.Watchdog): one that never returns fails with its document's length
    and where it was stopped, instead of the test's 60 s limit. A class that hung on a short document is not
    asked for short ones again by the tests that skip them: a hang there cost all four span tests their limit."""

    def __init__(self, check_items=False):
        cls = sub_attr("CharCorruptionDataset")
        self.text = span_corpus()
        self.lines = self.text.split("\n")
        self.draws = []
        self.datasets = {}
        for block in SPAN_BLOCK_SIZES:
            ds = cls(self.text, block)
            self.datasets[block] = ds
            docs = self.lines
            if check_items:  # the length is 1e-2's alone: the others do not ask for it
                try:
                    n = len(ds)
                except Exception as e:
                    raise Failure(f"len(dataset) raised {type(e).__name__}: {_short_error(e)}") from None
                require(n == len(self.lines),
                        f"len(dataset) is {n}; the corpus has {len(self.lines)} items in text.split('\\n') "
                        f"(keep every line, empty ones included: final_tokens depends on it)")
            else:
                data = getattr(ds, "data", None)  # the documents its items are drawn from, if it kept other ones
                if (isinstance(data, (list, tuple)) and all(isinstance(d, str) for d in data)
                        and len(data) != len(self.lines)):
                    docs = data
            order = sorted(range(len(docs)), key=lambda i: len(docs[i]) < 4)  # ordinary documents first
            with graderlib.Watchdog(ITEM_SECONDS) as dog:
                for _ in range(SPAN_ROUNDS):
                    for idx in order:
                        doc = docs[idx]
                        if len(doc) < 4 and not check_items and cls in _SHORT_HANGS:
                            continue
                        try:
                            with dog.call():
                                item = ds[idx]
                        except (Exception, graderlib.CallTimeout) as e:
                            if len(doc) < 4 and not check_items:
                                if isinstance(e, graderlib.CallTimeout):
                                    _SHORT_HANGS.add(cls)
                                continue
                            raise Failure(item_problem(e, idx, doc, block)) from None
                        if check_items:
                            check_item(item, ds, block, doc)
                        self.draws.append((doc, block, item))

    def strings(self):
        """(document, block_size, masked_string) for every draw, masked_string = x + y[-1]."""
        for doc, block, item in self.draws:
            yield doc, block, decode_item(item, self.datasets[block])


def misshifted_items(rows=20):
    """' (x and y are not ...)' when the package's CharCorruptionDataset gives items whose y is not x
    shifted by one (x[1:] != y[:-1], 1e-2's mistake) on the first `rows` documents of the span corpus,
    else ''. The other span tests read the masked string as x + y[-1], which such an item does not spell: a
    failure there then says where the fault is, instead of blaming their own rule."""
    try:
        ds = sub_attr("CharCorruptionDataset")(span_corpus(), SPAN_BLOCK_SIZES[0])
        for idx, doc in enumerate(span_corpus().split("\n")[:rows]):
            if len(doc) < 4:
                continue
            x, y = (torch.as_tensor(t).reshape(-1) for t in ds[idx])  # (T,) each, whatever shape the item had
            if x.shape != y.shape or not torch.equal(x[1:], y[:-1]):
                return ("; note: its items' x and y are not one masked string shifted by one (x[1:] != y[:-1]), "
                        "so the string x + y[-1] read here is not the one drawn: fix that first (1e-2-basic)")
    except Exception:  # strings, a crash: 1e-2 says what is wrong with the items
        return ""
    return ""


def reads_items(test):
    """A span test reading items as x + y[-1], whose Failure names a misshifted x and y (misshifted_items)."""
    @functools.wraps(test)
    def run(ctx):
        try:
            return test(ctx)
        except Failure as e:
            note = misshifted_items()
            if not note:
                raise
            raise Failure(f"{e}{note}") from None
    return run


def _specials(ds):
    return getattr(ds, "MASK_CHAR", MASK_CHAR), getattr(ds, "PAD_CHAR", PAD_CHAR)


def decode_item(item, ds):
    """The masked string x + y[-1] that dataset item (x, y) spells. Read leniently, so that a mistake of form
    costs 1e-2 alone, which checks it ("One mistake, one test", docs/grader.md): a leading dimension of 1
    ((1, T) rows), lists, and strings in place of the ids are read too."""
    try:
        x, y = item
        if isinstance(x, str) and isinstance(y, str) and y:
            return x + y[-1]
        x, y = torch.as_tensor(x), torch.as_tensor(y)
        if x.dim() > 1 and x.numel() == x.shape[-1]:  # (1, T): one row with extra dimensions
            x, y = x.reshape(-1), y.reshape(-1)
        ids = x.tolist() + [int(y[-1])]
        return "".join(ds.itos[i] for i in ids)
    except Exception as e:
        raise Failure(f"cannot decode a dataset item ({type(e).__name__}: {e}); see 1e-2-basic") from None


def _show(s, limit=100):
    """A masked string for a failure message: runs of PAD shortened to PADxN, then cut to `limit`."""
    out, i = [], 0
    while i < len(s):
        j = i
        while j < len(s) and s[j] == PAD_CHAR:
            j += 1
        if j - i >= 4:
            out.append(f"{PAD_CHAR}x{j - i}")
            i = j
        else:
            out.append(s[i])
            i += 1
    text = repr("".join(out))
    return text if len(text) <= limit else text[:limit - 5] + "...'"


def check_item(item, ds, block, doc):
    where = f"(block_size {block}, document of {len(doc)} characters)"
    require(isinstance(item, (tuple, list)) and len(item) == 2, f"dataset[i] must be a pair (x, y) {where}")
    x, y = item
    overlong = _truncated_past_the_cap(x, y, ds, block)
    for name, t in (("x", x), ("y", y)):
        require(isinstance(t, torch.Tensor), f"{name} is a {type(t).__name__}, expected a torch tensor {where}")
        require(t.dtype == torch.long, f"{name} has dtype {t.dtype}, expected torch.long {where}")
        require(tuple(t.shape) == (block - 1,) or overlong,
                f"{name} has shape {tuple(t.shape)}, expected ({block - 1},): x = masked_string[:-1] and "
                f"y = masked_string[1:] of a string padded to block_size {where}")
        require(bool(((t >= 0) & (t < ds.vocab_size)).all()), f"{name} has ids outside the vocabulary {where}")
    if not torch.equal(x[1:], y[:-1]):
        i = int((x[1:] != y[:-1]).nonzero()[0, 0])
        raise Failure(f"x[1:] != y[:-1] (first at position {i}): y must be x shifted by one {where}")


def _truncated_past_the_cap(x, y, ds, block):
    """Whether (x, y) is a masked string longer than block_size only because its truncation kept more than
    int(block_size * 7 / 8) characters (x and y then one longer each than the block allows, no PAD to add):
    1e-0's mistake, which 1e-0 fails, and so not 1e-2's too (its shape message sent the student to the
    padding and the slicing)."""
    if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.dim() == y.dim() == 1
            and len(x) == len(y) > block - 1):
        return False
    try:
        mask, pad = (ds.stoi[c] for c in _specials(ds))
    except (AttributeError, KeyError, TypeError):
        return False
    full = torch.cat([x, y[-1:]])  # the masked string: x = s[:-1], y = s[1:]
    kept = int(((full != mask) & (full != pad)).sum())
    return not bool((full == pad).any()) and kept > int(block * 7 / 8) and len(full) - kept <= 3


def _parts(s, mask, pad, doc, block):
    parts = s.replace(pad, "").split(mask)
    require(len(parts) >= 3, f"cannot find prefix, suffix and masked content in {_show(s)} (document of "
                             f"{len(doc)} characters, block_size {block}); see 1e-1-basic")
    return parts


def _pieces(s, mask, pad):
    """(prefix, suffix, masked) of a masked string in the course's layout, or None where it has no such
    three parts (1e-1's mistake)."""
    parts = s.replace(pad, "").split(mask)
    return tuple(parts[:3]) if len(parts) >= 3 else None


def _gaps_after_masked(doc, pieces):
    """The numbers of the document's characters (up to 8) that may lie between the masked content and a
    suffix that is not empty, where the pieces keep the document's start and masked content in order."""
    if pieces is None:
        return set()
    prefix, suffix, masked = pieces
    head = prefix + masked
    return {k for k in range(9) if doc.startswith(head) and doc.startswith(suffix, len(head) + k)}


@reads_items
def test_1e0(ctx):
    d = SpanDraws()
    long_lengths = {b: [] for b in SPAN_BLOCK_SIZES}
    draws = [(doc, block, _specials(d.datasets[block]), s) for doc, block, s in d.strings()]
    pieces = [_pieces(s, *specials) for _, _, specials, s in draws]  # (prefix, suffix, masked) or None, each
    # A span corruption that drops characters after the masked content (document[start + m + 1:] for the
    # suffix) keeps fewer than the document was truncated to. That is 1e-1's mistake (one mistake, one
    # test), so when every draw with a suffix can be read as dropping the same number k > 0 (and not 0), the
    # truncation length is the characters kept plus k, and draws whose empty suffix hides k are left out.
    gaps = set(range(9))
    for (doc, _, _, _), parts in zip(draws, pieces):
        if len(doc) >= 4 and (parts is None or parts[1]):
            gaps &= _gaps_after_masked(doc, parts)
    dropped = min(gaps) if gaps and 0 not in gaps else 0
    for (doc, block, (mask, pad), s), parts in zip(draws, pieces):
        n = sum(1 for c in s if c != mask and c != pad)
        cap = int(block * 7 / 8)
        if len(doc) < 4:
            require(n <= len(doc), f"{n} characters kept from a document of {len(doc)}")
            continue
        if dropped:
            if not parts[1]:
                continue
            n += dropped
        require(4 <= n <= min(len(doc), cap),
                f"truncated a document of {len(doc)} characters to {n}; expected between 4 and "
                f"{min(len(doc), cap)} (int(block_size*7/8) = {cap} for block_size {block})")
        if len(doc) > cap:
            long_lengths[block].append(n)
    for block, lengths in long_lengths.items():
        cap = int(block * 7 / 8)
        seen = set(lengths)
        require(min(seen) == 4, f"documents longer than {cap} characters were never truncated to 4 characters "
                                f"(shortest {min(seen)} in {len(lengths)} draws, block_size {block}): the length "
                                f"must be random in [4, int(block_size*7/8)]")
        require(max(seen) == cap, f"documents longer than {cap} characters were never truncated to {cap} = "
                                  f"int(block_size*7/8) (longest {max(seen)} in {len(lengths)} draws, block_size "
                                  f"{block}); the upper end is included")
        span = cap - 4 + 1
        require(len(seen) >= 0.9 * span, f"truncation lengths of long documents take only {len(seen)} of the "
                                         f"{span} values in [4, {cap}] over {len(lengths)} draws (block_size "
                                         f"{block}): draw the length uniformly")
    return f"{len(d.draws)} draws checked"


@reads_items
def test_1e1(ctx):
    d = SpanDraws()
    for doc, block, s in d.strings():
        mask, pad = _specials(d.datasets[block])
        body = s.rstrip(pad)
        where = f"document of {len(doc)} characters, block_size {block}"
        require(pad not in body, f"PAD inside the string, not only at its end: {_show(s)} ({where})")
        # the course's layout; a closing MASK after the masked content is allowed, as the course's grader allows it
        layout_ok = body.count(mask) == 2 or (body.count(mask) == 3 and body.endswith(mask))
        if len(doc) >= 4:
            require(layout_ok, f"expected prefix MASK suffix MASK masked content (a closing MASK allowed) then "
                               f"PADs, found {body.count(mask)} MASKs: {_show(body)} ({where})")
        elif not layout_ok:
            require(body.count(mask) <= 3, f"more than three MASKs: {_show(body)} ({where})")
            require(all(c in doc for c in body.replace(mask, "")), f"characters not in the document: {_show(body)}")
            continue
        prefix, suffix, masked = body.split(mask)[:3]
        original = prefix + masked + suffix
        gap = min(_gaps_after_masked(doc, (prefix, suffix, masked)) - {0}, default=0) if suffix else 0
        lost = (f"; {_show(doc[len(prefix + masked):len(prefix + masked) + gap])} between the masked content and "
                f"the suffix is lost: the suffix starts right after the masked content" if gap else "")
        swapped = not doc.startswith(original) and doc.startswith(prefix + suffix + masked)
        require(not swapped, f"the masked content and the suffix are swapped: {_show(body)} from {_show(doc)} "
                             f"({where}) is prefix MASK masked MASK suffix; the course's layout is prefix MASK "
                             f"suffix MASK masked content")
        require(doc.startswith(original),
                f"prefix + masked + suffix is not a prefix of the document: {_show(body)} from {_show(doc)} "
                f"({where}){lost}")
    return f"{len(d.draws)} draws checked"


def test_1e2(ctx):
    d = SpanDraws(check_items=True)
    return f"{len(d.draws)} draws checked"


@reads_items
def test_1e3(ctx):
    d = SpanDraws()
    ms, ns = [], []
    by_length = {}
    places = []  # (prefix length, suffix length) of draws whose span could start in 3+ places
    for doc, block, s in d.strings():
        if len(doc) < 4:
            continue
        mask, pad = _specials(d.datasets[block])
        prefix, second, third = _parts(s, mask, pad, doc, block)[:3]
        # the masked content is the third part in the course's layout; the second only when that order,
        # and not the course's, gives the document back (the parts swapped: 1e-1's mistake, so that one
        # mistake fails one test; read as the third, the suffix was measured and 1e-3 failed too). Any
        # other layout error is 1e-1's to report: the third part is measured, as before
        swapped = doc.startswith(prefix + second + third) and not doc.startswith(prefix + third + second)
        masked, suffix = (second, third) if swapped else (third, second)
        n = len(prefix) + len(suffix) + len(masked)
        if n < 4:
            continue
        ms.append(len(masked))
        ns.append(n)
        by_length.setdefault(n, []).append(len(masked))
        if len(prefix) + len(suffix) >= 2:
            places.append((len(prefix), len(suffix)))
    quarter = sum(ns) / 4
    ratio = sum(ms) / quarter
    require(0.85 <= ratio <= 1.15,
            f"masked content averages {sum(ms) / len(ms):.2f} characters where a quarter of the truncated length "
            f"averages {quarter / len(ns):.2f} (ratio {ratio:.2f}, allowed 0.85-1.15) over {len(ms)} draws")
    more = sum(1 for m, n in zip(ms, ns) if m > n / 4) / len(ms)
    less = sum(1 for m, n in zip(ms, ns) if m < n / 4) / len(ms)
    require(more >= 0.05, f"the masked content is longer than a quarter of the truncated length in only "
                          f"{more:.1%} of {len(ms)} draws: its length must be random, a quarter on average")
    require(less >= 0.05, f"the masked content is shorter than a quarter of the truncated length in only "
                          f"{less:.1%} of {len(ms)} draws: its length must be random, a quarter on average")
    groups = {n: v for n, v in by_length.items() if n >= 12 and len(v) >= 10}
    require(groups, f"no truncated length of 12 or more was drawn 10 times in {len(ns)} draws: the truncation "
                    f"must draw lengths in [4, int(block_size*7/8)] (see 1e-0)")
    fixed = sorted(n for n, v in groups.items() if len(set(v)) == 1)
    if len(fixed) > 0.2 * len(groups):
        n = fixed[0]
        raise Failure(f"for {len(fixed)} of the {len(groups)} truncated lengths drawn 10+ times the masked length "
                      f"never varied (e.g. all {len(groups[n])} draws of length {n} masked {groups[n][0]} "
                      f"characters): draw it at random for every length, not computed from the length")
    note = f"masked/quarter ratio {ratio:.3f}; more than a quarter {more:.0%}, less {less:.0%} of {len(ms)} draws"
    return note + span_place_note(places)


def span_place_note(places):
    """An advice, not a mark: where the masked span starts. The course asks only for its length, but a
    span always at one place (T5 draws it anywhere) teaches the model to fill in only that place."""
    if not places:
        return ""
    share = {
        "starts at the document's first character (empty prefix)": sum(p == 0 for p, _ in places),
        "ends at the truncated document's end (empty suffix)": sum(s == 0 for _, s in places),
        "sits in the middle (prefix and suffix within one character)": sum(abs(p - s) <= 1 for p, s in places),
    }
    for where, count in share.items():
        if count >= 0.95 * len(places):
            return (f"\nadvice (no points lost): the masked span {where} in {count} of {len(places)} draws; "
                    f"drawing its start uniformly teaches the model to fill in any part of a document")
    return ""


# =============================================================================================
# 1f: pretraining configuration
# =============================================================================================
def test_1f0(ctx):
    ds = ctx.pretrain_dataset()
    model = vanilla_gpt(ds.vocab_size)
    call = "pretrain(...)"
    tconf, trainer = _unpack_pair(sub_attr("pretrain")(ds, BLOCK_SIZE, model), call)
    require_config(tconf, "pretrain", call, len(ds))
    require_trainer(trainer, tconf, model, call, dataset=ds)


# =============================================================================================
# 1g: the synthesizer
# =============================================================================================
def test_1g0(ctx):
    ds = ctx.pretrain_dataset()
    vocab = ds.vocab_size
    torch.manual_seed(1)
    pretrained = initialized("initialize_synthesizer_model", vocab)
    require_tree(pretrained, expected_tree(vocab, BLOCK_SIZE, N_LAYER, N_HEAD, N_EMBD, synthesizer=True),
                 "synthesizer GPT")
    with torch.no_grad():  # every tensor now differs from a freshly built model's
        for p in pretrained.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    state = {k: v.detach().cpu().clone() for k, v in pretrained.state_dict().items()}
    torch.manual_seed(2)
    model = initialized("initialize_synthesizer_model", vocab)
    call = "finetune(params_path, ...)"
    with tempfile.TemporaryDirectory(prefix="grader-1g0-") as tmp:
        path = os.path.join(tmp, "synthesizer.pretrain.params")
        torch.save(state, path)
        tconf, trainer = _unpack_pair(sub_attr("finetune")(path, ctx.train_path(), ds, BLOCK_SIZE, model), call)
    loaded = model.state_dict()
    for k, v in state.items():
        require(k in loaded and torch.equal(loaded[k].detach().cpu(), v),
                f"{call} did not load the params into the model ({k} differs from the file's): "
                f"model.load_state_dict(torch.load(reading_params_path)) before building the trainer")
    require_config(tconf, "finetune_pretrained", call, len(ds))
    require_trainer(trainer, tconf, model, call, n_rows=_count_rows(ctx.train_path()))


class TinyConfig:
    """The course's 1g-3 configuration, independent of the package's GPTConfig."""
    embd_pdrop = 0.1
    resid_pdrop = 0.1
    attn_pdrop = 0.1
    synthesizer = True

    def __init__(self, vocab_size, block_size, **kwargs):
        self.vocab_size = vocab_size
        self.block_size = block_size
        for k, v in kwargs.items():
            setattr(self, k, v)


# mistakes a synthesizer's output is matched against when it differs from the equation (synthesizer_reference's
# `mistake`), each with what the fix is
SYNTHESIZER_MISTAKES = {
    "no_mask": "without the causal mask: fill the scores above the diagonal with -inf (the mask's zeros) before "
               "the softmax",
    "mask_after_softmax": "with the causal mask applied after the softmax (each row's weights then sum to less "
                          "than 1): fill the scores with -inf before it",
    "softmax_rows": "with the softmax over dim=-2 (down each column): take it over the last dimension, each "
                    "position's weights over the positions it attends to",
    "no_relu": "without the ReLU: ReLU(X A_i + b1) before multiplying by w2",
    "scaled": "with the scores scaled by 1/sqrt(head size), which the synthesizer's equation has not",
    "no_b2": "without b2: add b2[:T] to the scores",
    "no_proj": "without the output projection: proj after joining the heads",
}


def synthesizer_reference(params, x, n_head, mistake=None):
    """The handout's equation, head by head, with the causal mask:
        Y_i = softmax(ReLU(X A_i + b1) B_i + b2) (X V_i),   output = [Y_1 ... Y_h] P + p
    A_i and b1 are head i's columns of w1 (weight transposed, bias); B_i = w2[:, :T] (shared by the
    heads); b2[:T]; V_i head i's columns of value; P, p the projection. `mistake`: one of
    SYNTHESIZER_MISTAKES' keys, the equation computed with that mistake."""
    B, T, C = x.shape
    hs = C // n_head
    A = params["w1.weight"].t()  # (C, C): X A
    b1 = params["w1.bias"]
    Bmat = params["w2"][:, :T]
    b2 = params["b2"][:T] if mistake != "no_b2" else 0.0
    V = params["value.weight"].t()  # (C, C): X V
    bv = params["value.bias"]
    relu = (lambda t: t) if mistake == "no_relu" else torch.relu
    heads = []
    for i in range(n_head):
        cols = slice(i * hs, (i + 1) * hs)
        scores = relu(x @ A[:, cols] + b1[cols]) @ Bmat + b2        # (B, T, T)
        if mistake == "scaled":
            scores = scores / math.sqrt(hs)
        heads.append(causal_weights(scores, mistake) @ (x @ V[:, cols] + bv[cols]))  # (B, T, hs)
    y = torch.cat(heads, dim=-1)  # (B, T, C): [Y_1 ... Y_h]
    if mistake == "no_proj":
        return y
    return y @ params["proj.weight"].t() + params["proj.bias"]  # (B, T, C)


def causal_weights(scores, mistake=None):
    """The attention weights of (..., T, T) `scores`: the causal mask (-inf above the diagonal), then the softmax
    over each row; `mistake`, one of SYNTHESIZER_MISTAKES' keys, computes them with that mistake where it is one
    of the mask or the softmax (no_mask, mask_after_softmax, softmax_rows)."""
    T = scores.shape[-1]
    future = ~torch.ones(T, T, dtype=torch.bool).tril()
    if mistake not in ("no_mask", "mask_after_softmax"):
        scores = scores.masked_fill(future, float("-inf"))
    weights = torch.softmax(scores, dim=-2 if mistake == "softmax_rows" else -1)  # (..., T, T)
    return weights.masked_fill(future, 0.0) if mistake == "mask_after_softmax" else weights


def synthesizer_mistake(y, params, x, n_head, tol):
    """What `y`, which differs from the equation, is: the first of SYNTHESIZER_MISTAKES whose equation it
    matches within `tol`, as words; None when it matches none."""
    for mistake, words in SYNTHESIZER_MISTAKES.items():
        with torch.no_grad():
            ref = synthesizer_reference(params, x, n_head, mistake)
        if ref.shape == y.shape and bool(torch.isfinite(ref).all()) and float((y - ref).abs().max()) <= tol:
            return words
    return None


def future_dependence(att, x, y):
    """'; the outputs at positions 0-K change when only later inputs change' when `att` sees the future on
    input `x` (its output `y`), else ''."""
    T = x.shape[1]
    if T < 2:
        return ""
    later = x.clone()
    later[:, T // 2:] += torch.randn_like(later[:, T // 2:])
    with torch.no_grad():
        moved = float((att(later)[:, :T // 2] - y[:, :T // 2]).abs().max())
    if moved <= 1e-6 * max(1.0, float(y.abs().max())):
        return ""
    return (f"; its outputs at positions 0-{T // 2 - 1} change (by {moved:.3g}) when only the later inputs change: "
            f"it sees the future, by its mask or by a reshape that mixes positions (split the heads with "
            f"view(B, T, n_head, hs).transpose(1, 2))")


def test_1g3(ctx):
    n_embd, n_head, block = 6, 3, 8
    att = sub_attr("SynthesizerAttention")(TinyConfig(5, block, n_layer=1, n_head=n_head, n_embd=n_embd))
    hs = n_embd // n_head
    shapes = {"w1.weight": (n_embd, n_embd), "w1.bias": (n_embd,), "w2": (hs, block - 1), "b2": (block - 1,),
              "value.weight": (n_embd, n_embd), "value.bias": (n_embd,),
              "proj.weight": (n_embd, n_embd), "proj.bias": (n_embd,)}
    params = dict(att.named_parameters())
    for name, shape in shapes.items():
        require(name in params, f"SynthesizerAttention has no parameter {name} (the course's are w1, w2, b2, "
                                f"value, proj)")
        require(tuple(params[name].shape) == shape,
                f"SynthesizerAttention.{name} has shape {tuple(params[name].shape)}, expected {shape}")
    with torch.no_grad():  # random values everywhere, so that every parameter shows in the output
        for p in att.parameters():
            p.copy_(torch.randn(p.shape, dtype=torch.float64))
    values = {k: v.detach().clone() for k, v in att.state_dict().items()}
    # training mode too (the package's training paths differ from its evaluation's), on a copy without
    # dropout, which the equation has not
    still = sub_attr("SynthesizerAttention")(TinyConfig(5, block, n_layer=1, n_head=n_head, n_embd=n_embd,
                                                        attn_pdrop=0.0, resid_pdrop=0.0))
    still.load_state_dict(values)
    worst = 0.0
    for module, train in ((att, False), (still, True)):
        module.double()
        for where in attention_routes(module, modes=(train,)):
            worst = max(worst, synthesizer_difference(module, block, n_head, n_embd, where))
    return f"max abs difference {worst:.2g}"


def synthesizer_difference(att, block, n_head, n_embd, where):
    """The largest difference between `att`'s output and the handout's equation over inputs of 7, 4 and 1
    positions; a Failure beyond float32's step."""
    worst = 0.0
    for T in (block - 1, 4, 1):
        x = torch.randn(11, T, n_embd, dtype=torch.float64)
        try:
            with torch.no_grad():
                y = att(x)
        except Exception as e:
            # the line of the submission that raised it, as for an exception anywhere else in a test
            why = graderlib.describe_exception(e, e.__traceback__, (__file__, graderlib.__file__))
            head, _, place = why.partition("\n")
            slice_hint = "; slice w2 and b2 to the input's length T" if T < block - 1 else ""
            raise Failure(f"SynthesizerAttention raised {head} on an input of {T} positions (block_size {block}) "
                          f"{where}{slice_hint}" + (f"\n{place}" if place else "")) from None
        require(isinstance(y, torch.Tensor) and tuple(y.shape) == (11, T, n_embd),
                f"SynthesizerAttention returned {getattr(y, 'shape', type(y).__name__)} for an input of shape "
                f"(11, {T}, {n_embd}) {where}")
        with torch.no_grad():
            ref = synthesizer_reference({k: v.detach() for k, v in att.named_parameters()}, x, n_head)
        diff = float((y - ref).abs().max())
        tol = 1e-5 * max(1.0, float(ref.abs().max()))  # a float32 step (a softmax in float32) is no mistake
        if diff > tol:
            said = f"output differs from the handout's equation by {diff:.3g} (max abs, tolerance {tol:.2g}) on an " \
                   f"input of {T} positions (block_size {block}) {where}"
            params = {k: v.detach() for k, v in att.named_parameters()}
            mistake = synthesizer_mistake(y, params, x, n_head, tol)
            if mistake is not None:
                raise Failure(f"{said}; it is the equation {mistake}")
            raise Failure(f"{said}{future_dependence(att, x, y)}: check the causal mask, the slicing of w2 and "
                          f"b2 to T, ReLU, the per-head split and the projection")
        worst = max(worst, diff)
    return worst


# =============================================================================================
# The grader
# =============================================================================================
TESTS = [
    # id, description, function, time limit (s)
    ("1c-0-hidden", "vanilla model structure (module tree, parameter shapes, causal attention)", test_1c0, 60),
    ("1c-1-basic", "trainer config of finetune without pretraining", test_1c1, 60),
    ("1d-0-hidden", "vanilla without pretraining: dev predictions, at least one right",
     at_least_one_right("vanilla.nopretrain.dev.predictions"), 30),
    ("1d-1-hidden", "vanilla without pretraining: test predictions, at least one right",
     at_least_one_right("vanilla.nopretrain.test.predictions"), 30),
    ("1e-0-basic", "CharCorruptionDataset truncation length in [4, int(block_size*7/8)]", test_1e0, 60),
    ("1e-1-basic", "CharCorruptionDataset layout: prefix MASK suffix MASK masked [MASK], PADs at the end",
     test_1e1, 60),
    ("1e-2-basic", "CharCorruptionDataset items: types, shapes, x[1:] == y[:-1]", test_1e2, 60),
    ("1e-3-basic", "CharCorruptionDataset masked content: random length, a quarter on average", test_1e3, 60),
    ("1f-0-basic", "trainer config of pretrain", test_1f0, 60),
    ("1f-1-hidden", "vanilla with pretraining: dev accuracy at the pass mark",
     pass_mark("vanilla.pretrain.dev.predictions", "vanilla_dev"), 30),
    ("1f-2-hidden", "vanilla with pretraining: test accuracy at the pass mark",
     pass_mark("vanilla.pretrain.test.predictions", "vanilla_test"), 30),
    ("1g-0-basic", "synthesizer GPT; finetune with its pretrained params: params loaded, trainer config", test_1g0, 60),
    ("1g-1-hidden", "synthesizer with pretraining: dev accuracy at the pass mark",
     pass_mark("synthesizer.pretrain.dev.predictions", "synthesizer_dev"), 30),
    ("1g-2-hidden", "synthesizer with pretraining: test accuracy at the pass mark",
     pass_mark("synthesizer.pretrain.test.predictions", "synthesizer_test"), 30),
    ("1g-3-hidden", "SynthesizerAttention matches the handout's equation", test_1g3, 30),
]
MARK_KEYS = ("vanilla_dev", "vanilla_test", "synthesizer_dev", "synthesizer_test")
ACCURACY_TESTS = {fn.predictions: test_id for test_id, _, fn, _ in TESTS if hasattr(fn, "predictions")}
MARK_TESTS = tuple(test_id for test_id, _, fn, _ in TESTS if hasattr(fn, "mark_key"))  # graded at the pass marks
TEST_SPLIT_TESTS = tuple(t for name, t in ACCURACY_TESTS.items() if PREDICTIONS[name][0] == "test")  # need labels


EMBEDDED_FILES = ("wiki.txt", "birth_places_train.tsv", "birth_dev.tsv")  # what makes data/ the embedded corpus
WORLD_RECORD = ledger.WORLD_RECORD  # make_world.MARKER: its record of the files it wrote, and its arguments
SAME_STATISTICS = ("seed",)  # make_world arguments that keep the default world's statistics (other draws of them)


@functools.lru_cache(maxsize=1)
def default_world_hashes():
    """{name: sha256} of EMBEDDED_FILES as make_world's default world has them (0.2 s to build): what data/ is
    compared with when make_world's record is not there."""
    import make_world
    files = make_world.world_files(make_world.build_world())
    return {name: hashlib.sha256(files[name].encode("utf-8")).hexdigest() for name in EMBEDDED_FILES}


def changed_arguments(arguments):
    """{keyword: value} of the make_world arguments in `arguments` (its record's) that differ from the default
    world's, in make_world.build_world's order; one missing counts as its default. An argument given at its
    default's effect is no change: --places at what the world's size makes of no --places (560 for 2,937 people),
    --max-sentences at or above the most a biography has."""
    import make_world  # about 0.04 s, only when a record is read
    defaults = make_world.build_defaults()
    given = dict(defaults, **{k: arguments[k] for k in defaults if k in arguments})
    if isinstance(given["people"], int) and given["places"] == max(
            1, round(make_world.DEFAULT_PLACES * given["people"] / make_world.DEFAULT_PEOPLE)):
        given["places"] = None
    if isinstance(given["max_sentences"], int) and given["max_sentences"] >= max(make_world.SENTENCE_WEIGHTS):
        given["max_sentences"] = None
    return {k: v for k, v in given.items() if v != defaults[k]}


def world_changes(folder):
    """The make_world arguments (changed_arguments: {} for the default world) of the world `folder` holds, or
    None when it holds none that make_world wrote: its record (WORLD_RECORD) is missing or names no arguments, or
    one of EMBEDDED_FILES there differs from it (a missing one is reported where it is read). data/ without a
    record, or with one that names no arguments, is make_world's default world while it holds that world's bytes
    (copied without its dot files, or the course's folder put in its place, record and all)."""
    hashes, _ = ledger.read_record(folder, WORLD_RECORD)
    arguments = ledger.record_value(folder, WORLD_RECORD, "arguments") if hashes is not None else None
    if not isinstance(arguments, dict):
        if os.path.realpath(folder) != os.path.realpath(DEFAULT_DATA_DIR):
            return None
        hashes, arguments = default_world_hashes(), {}
    if any(name in hashes and ledger.sha256_of(os.path.join(folder, name)) not in (None, hashes[name])
           for name in EMBEDDED_FILES):
        return None
    return changed_arguments(arguments)


def choose_marks(data_dir, marks="auto"):
    """(corpus, note): which pass marks apply, "embedded" or "course", and a one-line note for the grader's
    header, or None. `marks` ("course" or "embedded") overrides, without a note. The embedded marks were
    calibrated on make_world's default world, so they apply to a folder holding it as make_world's record there
    says (data/, a world made elsewhere), or another seed of it (the same statistics: the note says so), and to
    a byte copy of data/ while data/ holds one; any other corpus takes the course's: the course's files, those
    copied into data/ (src/data/ is a link to it), and a world made with other sizes or options, which change
    how hard it is (the note names them)."""
    if marks != "auto":
        return marks, None
    changes = world_changes(data_dir)
    if changes is None and os.path.realpath(data_dir) != os.path.realpath(DEFAULT_DATA_DIR):
        try:  # no world of make_world's by its record: a copy of data/ without its dot files is what data/ is
            same = all(filecmp.cmp(os.path.join(data_dir, name), os.path.join(DEFAULT_DATA_DIR, name), shallow=False)
                       for name in EMBEDDED_FILES)
        except OSError:  # a file missing on either side: not a copy (its absence is reported where it is read)
            same = False
        changes = world_changes(DEFAULT_DATA_DIR) if same else None
    if changes is None:
        return "course", None
    if not changes:
        return "embedded", None
    import make_world  # (imported by world_changes already)
    flags = " ".join("--" + k.replace("_", "-") + ("" if v is True else f" {v}") for k, v in changes.items())
    made = f"note: {typed_path(data_dir)} was made by make_world with {flags}"
    if set(changes) <= set(SAME_STATISTICS):
        return "embedded", (f"{made}; the embedded marks were calibrated on its default world (--seed "
                            f"{make_world.DEFAULT_SEED}), and another seed draws from the same statistics, so they "
                            f"apply (the grader's --marks course overrides)")
    return "course", (f"{made}, not as the default world the embedded marks were calibrated on; sizes and options "
                      f"change how hard a world is, so the course's marks apply (the grader's --marks embedded "
                      f"overrides)")


def load_marks(doc, corpus, shown="points.json", path=None):
    """The pass marks for this corpus from the points file's `pass_marks`; PointsError naming `shown` (with the
    line of pass_marks in the file at `path`, when given) when they are missing or not fractions."""
    marks = doc.get("pass_marks")
    table = marks.get(corpus) if isinstance(marks, dict) else None

    def fraction(v):  # not a bool (an int to Python), nor NaN (json reads it)
        return isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1

    if not isinstance(table, dict) or not all(fraction(table.get(k)) for k in MARK_KEYS):
        where = graderlib.at_key(shown, path, "pass_marks")
        raise graderlib.PointsError(f"{where}: pass_marks.{corpus} must give {', '.join(MARK_KEYS)} as fractions")
    return {k: float(table[k]) for k in MARK_KEYS}


def make_grader(data_dir=DEFAULT_DATA_DIR, submission_dir=DEFAULT_SUBMISSION_DIR, marks="auto"):
    """The grader with every test, for the given data and submission folders; graderlib.PointsError
    when the points file (default POINTS_PATH) cannot be used."""
    points_path = POINTS_PATH  # looked up now, so that tests can point it elsewhere
    shown = typed_path(points_path)
    doc = graderlib.load_points(points_path, shown)
    corpus, note = choose_marks(data_dir, marks)
    ctx = Context(data_dir, submission_dir, load_marks(doc, corpus, shown, points_path), corpus, note)
    g = graderlib.Grader(doc["points"], context=ctx, own_files=[__file__, gradedpackage.__file__])
    try:
        for test_id, description, fn, timeout in TESTS:
            g.add(test_id, description, fn, timeout)
        g.check_points()
    except graderlib.PointsError as e:  # about an entry: name its line
        raise graderlib.PointsError(f"{graderlib.at_key(shown, points_path, e.key)}: {e}") from None
    return g


def build_parser():
    p = OneLineParser(
        prog="python src/grader.py",
        description="Grade the assignment: basic tests (shown to students) and hidden tests (shown on "
                    "Gradescope after grades are published; run here too).")
    p.add_argument("test_ids", nargs="*", metavar="TEST_ID", help="tests to run (default: all)")
    p.add_argument("--json", metavar="PATH", help="also write Gradescope's results.json to PATH")
    p.add_argument("--data-dir", default=DEFAULT_DATA_DIR,
                   help="folder with wiki.txt, birth_places_train.tsv, birth_dev.tsv and, for test accuracy, "
                        "birth_test.tsv (default: the repo's data/)")
    p.add_argument("--code-dir", metavar="DIR",
                   help="grade the package in DIR, imported as `submission` (a student's folder of "
                        "src/submission/'s files; default: src/submission/)")
    p.add_argument("--submission-dir",
                   help="folder with the prediction files (default: --code-dir's folder when it is given, a "
                        "student's folder holding both, else src/submission/)")
    p.add_argument("--marks", choices=["auto", "course", "embedded"], default="auto",
                   help="pass marks of the accuracy tests: auto (default) takes the embedded corpus's for "
                        "make_world's default world (the repo's data/, any seed) and the course's for any other "
                        "data (docs/grader.md, Pass marks)")
    p.add_argument("--list", action="store_true", help="list the test ids and exit")
    return p


def device_problem(value):
    """What is wrong with $GPT_DEVICE's value, which the graded trainer reads (submission/utils.py
    get_device), or None. Checked here, before any test, since the grader never imports the graded
    package for its own needs."""
    if not value:
        return None
    device = value.lower()
    if device not in ("cpu", "cuda", "mps"):
        return (f"GPT_DEVICE={value!r} is not a device; set it to cpu, cuda or mps, or unset it "
                f"(a GPU's number: CUDA_VISIBLE_DEVICES)")
    if device == "cuda":  # only the device named is asked for: GPT_DEVICE=cpu must not wake a busy GPU
        there = torch.cuda.is_available()
    elif device == "mps":
        mps = getattr(torch.backends, "mps", None)
        there = mps is not None and mps.is_available()
    else:
        there = True
    if not there:
        return f"GPT_DEVICE={value}: torch {torch.__version__} sees no {device} device on this machine; " \
               f"set GPT_DEVICE=cpu or unset it"
    return None


def main(argv=None):
    lenient_streams()
    args = build_parser().parse_args(argv)
    # --json replaces only a results.json the grader wrote (graderlib.is_report): the points file, a
    # data or predictions file, or any other file of the user's is refused before any test runs
    # a blank path is left to json_path_problem, which names it as empty (its realpath is a file named " ")
    json_path = os.path.realpath(args.json) if args.json and args.json.strip() else None
    if json_path and json_path == os.path.realpath(POINTS_PATH):
        print(f"grader: --json {args.json}: is the grader's points file ({typed_path(POINTS_PATH)}), an input of the "
              f"grader; write results.json elsewhere", file=sys.stderr)
        return 2
    overwrites = json_path and os.path.isfile(json_path) and not graderlib.is_report(json_path)
    problem = code_dir_problem(args.code_dir, GRADED_OUTPUTS) if args.code_dir is not None else None
    if problem:  # else every test would fail on the import, with exit status 0
        print(f"grader: --code-dir {args.code_dir}: {problem}", file=sys.stderr)
        return 2
    folders = [("--data-dir", args.data_dir)]
    if args.submission_dir is None and args.code_dir is not None:
        args.submission_dir = args.code_dir  # a student's folder holds both its code and its prediction files
    else:
        args.submission_dir = DEFAULT_SUBMISSION_DIR if args.submission_dir is None else args.submission_dir
        folders.append(("--submission-dir", args.submission_dir))
    if args.code_dir is not None:
        folders.append(("--code-dir", args.code_dir))
    problem = None if args.code_dir is not None or args.list or not selects_code_tests(args.test_ids) else \
        submission_holds_code(args.submission_dir)
    if problem:  # else a student's folder would be graded with this project's code, full marks for code not theirs
        print(f"grader: --submission-dir {args.submission_dir}: {problem}", file=sys.stderr)
        return 2
    for flag, folder in folders:
        if not os.path.isdir(folder):  # a typo would fail every test of every student, with exit status 0
            why = "is a file, not a folder; give the folder that holds it" if os.path.exists(folder) else \
                "no such folder; check the path"
            print(f"grader: {flag} {folder}: {why}", file=sys.stderr)
            return 2
        if overwrites and os.path.dirname(json_path) == os.path.realpath(folder):
            print(f"grader: --json {args.json}: would overwrite a file of {flag}, an input of the grader; "
                  f"write results.json elsewhere", file=sys.stderr)
            return 2
    if json_path and prints_into(args.json):  # e.g. --json /dev/stdout with stdout sent to a file
        print(f"grader: --json {args.json}: is where the grader prints its log (its stdout or stderr), which the "
              f"report would replace or mix with; write results.json to a file of its own", file=sys.stderr)
        return 2
    problem = graderlib.json_path_problem(json_path or args.json) if args.json is not None else None
    if problem:
        print(f"grader: --json {args.json}: {problem}", file=sys.stderr)
        return 2
    problem = None if args.list else device_problem(os.environ.get("GPT_DEVICE", "").strip())
    if problem:  # else every test that trains fails on it, and the score is lost rather than the run stopped
        print(f"grader: {problem}", file=sys.stderr)
        return 2
    if args.code_dir is not None:
        use_code_dir(args.code_dir)  # before anything imports `submission`
    g, interrupted = None, False
    try:
        g = make_grader(args.data_dir, args.submission_dir, args.marks)
        status = grade(g, args)
        if g.closed_pipe and status == 0:  # the reader went away (`| head`): as a shell tool does
            status = 141
    except graderlib.PointsError as e:  # before any test runs: make_grader reads the points file first
        print(f"grader: {e}", file=sys.stderr)
        status = 2
    except KeyboardInterrupt:  # the running test was stopped (graderlib); results.json is not written
        status, interrupted = 130, True
        try:
            print("grader: interrupted", file=sys.stderr, flush=True)
        except BrokenPipeError:  # `2>&1 | head`: Ctrl-C stopped the reader too
            graderlib.to_devnull(1, 2)
    except BrokenPipeError:  # the reader went where nothing guards the output (no --json, or after the tests)
        graderlib.to_devnull(1, 2)
        status = 141
    if interrupted or (g is not None and g.abandoned):
        # Exit at once, without C++ exit handlers: a test thread that would not stop must not be
        # waited for, and one stopped a moment ago may still be freeing torch's per-thread state,
        # which those handlers race with (std::terminate, exit status 134).
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None:
                    stream.flush()
            except BrokenPipeError:
                graderlib.to_devnull(1, 2)
                status = 141 if status == 0 else status
            except (OSError, ValueError):
                pass
        os._exit(status)
    return status


def selects_code_tests(ids):
    """Whether the test ids asked for (graderlib.picks) pick a test of the code, one without prediction files
    (ACCURACY_TESTS are the others)."""
    return any(graderlib.picks(test_id, ids) and not hasattr(fn, "predictions") for test_id, _, fn, _ in TESTS)


def submission_holds_code(folder):
    """Why --submission-dir `folder`, given without --code-dir, cannot be graded as asked, or None: it holds
    code files of the handout (a student's folder), whose tests would then run on src/submission/'s package
    instead, and pass. src/submission/ itself, a missing folder (refused next) and a folder of outputs are
    fine."""
    if not os.path.isdir(folder) or os.path.realpath(folder) == os.path.realpath(DEFAULT_SUBMISSION_DIR):
        return None
    found = [name for name in CODE_FILES if os.path.isfile(os.path.join(folder, name))]
    if not found:
        return None
    shown = ", ".join(found[:3]) + (", ..." if len(found) > 3 else "")
    return (f"holds code files ({shown}), and --submission-dir grades only prediction files, with "
            f"{typed_path(DEFAULT_SUBMISSION_DIR)}'s code; to grade its code too give --code-dir {shlex.quote(folder)} "
            f"instead, or to grade only its prediction files add --code-dir "
            f"{shlex.quote(_typed(DEFAULT_SUBMISSION_DIR))}")


def prints_into(path):
    """Whether `path` is the file (or pipe, or terminal) the grader's stdout or stderr writes to."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    for fd in (1, 2):
        try:
            out = os.fstat(fd)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (out.st_dev, out.st_ino):
            return True
    return False


def grade(g, args):
    """List, or run the selected tests and write results.json; the exit status."""
    if args.list:
        for t in g.tests:
            print(f"{t.id}: {t.description}")
        return 0
    try:
        selected = g.select(args.test_ids)
    except KeyError as e:
        print(f"unknown test id: {e.args[0]}; the tests are:", file=sys.stderr)
        for t in g.tests:
            print(f"  {t.id}: {t.description}", file=sys.stderr)
        if any(i[:1].isdigit() and i[:1] != "1" for i in e.args[0].split(", ")):  # the handout's example: 3a-0-basic
            print("parts 2 on are written answers, not graded here: submission.tex (make builds the PDF)",
                  file=sys.stderr)
        return 2
    ctx = g.context
    header = [f"data: {typed_path(ctx.data_dir)} ({ctx.corpus} corpus pass marks); prediction files: "
              f"{typed_path(ctx.submission_dir)}; code: {typed_path(package_dir())}"]
    if ctx.marks_note and any(t.id in MARK_TESTS for t in selected):
        header.append(ctx.marks_note)
    graded = code_dir()
    if graded and not set(os.listdir(graded)) & set(CODE_FILES):  # graded for its prediction files alone
        header.append(f"note: {typed_path(graded)} holds none of the handout's code files, so the tests of the code "
                      f"fail; to grade a folder of outputs (OUT_DIR) with this project's code, give --submission-dir "
                      f"{typed_path(graded)} instead of --code-dir")
    test_tests = [t.id for t in selected if t.id in TEST_SPLIT_TESTS]
    test_labels = os.path.join(ctx.data_dir, LABELS["test"])
    if test_tests and not os.path.isfile(test_labels):  # staff: before, not after
        header.append(f"note: no {LABELS['test']} (the labelled test questions) in {typed_path(ctx.data_dir)}: "
                      f"{', '.join(test_tests)} cannot pass; give --data-dir a folder that has it")
    elif test_tests and os.path.getsize(test_labels) == 0:
        header.append(f"note: {LABELS['test']} in {typed_path(ctx.data_dir)} holds no questions (a demo's world has no "
                      f"test split): {', '.join(test_tests)} cannot pass")
    elif test_tests:
        try:
            check_labels_match_inputs(test_labels, os.path.join(ctx.data_dir, "birth_test_inputs.tsv"))
        except Failure:
            header.append(f"note: {LABELS['test']} in {typed_path(ctx.data_dir)} labels other questions than "
                          f"birth_test_inputs.tsv: {', '.join(test_tests)} cannot pass")
    start = time.monotonic()
    # absolute: the code under test may os.chdir; a link's target, which the report replaces (the link stays: a
    # rename over the link itself replaced it, even /dev/stdout, with the report)
    json_path = os.path.realpath(args.json) if args.json else None
    results = g.run(args.test_ids, header_lines=header, keep_working=bool(args.json))  # `| head`: results.json still
    if args.json:
        try:
            graderlib.write_json(results, json_path, execution_time=time.monotonic() - start)
        except OSError as e:
            print(f"grader: cannot write --json {args.json}: {e.strerror or e}; {write_fix(e)}choose another path",
                  file=sys.stderr)
            return 1
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    graderlib.handle_interrupts()  # Ctrl-C stops the running test, then exits 130
    try:
        status = main()
        if sys.stdout is not None:  # None: started with stdout closed (`>&-`)
            sys.stdout.flush()  # a closed pipe shows here, not at exit's flush (stdout to a pipe is buffered)
    except BrokenPipeError:  # `grader.py | head`: exit 141 as a shell tool does; the rest to /dev/null
        graderlib.to_devnull(1, 2)  # stdlib only: not the graded code
        status = 141
    sys.exit(status)

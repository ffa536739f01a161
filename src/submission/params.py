"""Params files: loading a state_dict into the assignment's GPT, and saying in one line why not.

`load_params` reads a params file with weights_only=True (never code), on any device, with the
prefixes DataParallel/DDP and torch.compile add dropped (`clean_state_dict`), and explains a file of
another variant, vocabulary or model size, a cut-short or non-torch file, a training checkpoint of
another loop, or a missing course file (naming the run.sh mode that makes it) in a ParamsError.
"""
import os
import re
import shlex
import struct
import warnings
import zipfile

import torch

from .card import card_heads, card_mismatch, corpus_record, pretrain_corpus, read_card
from .dataset import folder_shut


class ParamsError(ValueError):
    """A params file that cannot be loaded into the model at hand; the message says why and what to do.
    `problem` is the why alone, and `looks_like` the size flags read off the file's shapes (or None),
    for a caller that words its own fix (deliverables.py)."""

    def __init__(self, message, problem=None, looks_like=None):
        super().__init__(message)
        self.problem, self.looks_like = problem, looks_like


class ParamsUnreachable(ParamsError, PermissionError):
    """A params path in a folder that does not let the user in (dataset.folder_shut): a ParamsError, and a
    PermissionError as the course's `torch.load(path)` raised."""


class ParamsNotFound(ParamsError, FileNotFoundError):
    """A params path that names no file: a ParamsError, and a FileNotFoundError as the course's
    `torch.load(path)` raised, so a program that catches either works unchanged."""


WRAPPER_PREFIXES = ("module.", "_orig_mod.")  # DataParallel / DDP and torch.compile name their weights so


def unwrap(model):
    """The model inside DataParallel / DDP (`.module`) and torch.compile (`._orig_mod`) wrappers, nested in
    any order; the model itself when it is not wrapped."""
    while True:
        inner = getattr(model, "module", None)
        inner = inner if isinstance(inner, torch.nn.Module) else getattr(model, "_orig_mod", None)
        if not isinstance(inner, torch.nn.Module):
            return model
        model = inner


def clean_state_dict(state_dict):
    """Drop the prefixes DataParallel/DDP (`module.`) and torch.compile (`_orig_mod.`) add to keys, in
    whichever order the wrappers were nested (torch.compile(DDP(model)) writes `_orig_mod.module.`)."""
    out = {}
    for k, v in state_dict.items():
        while k.startswith(WRAPPER_PREFIXES):  # each prefix is one dotted name
            k = k.split(".", 1)[1]
        out[k] = v
    return out


def _shape(state):
    """{n_layer, n_embd, block_size} read off a state_dict's shapes, with n_head for a synthesizer's, or
    None. n_head shows only in a synthesizer's w2, whose rows are one head's width; a vanilla file does
    not record it."""
    try:
        n_embd = state["tok_emb.weight"].shape[1]
        shape = {"n_layer": len({k.split(".")[1] for k in state if k.startswith("blocks.")}), "n_embd": n_embd,
                 "block_size": state["pos_emb"].shape[1]}
        w2 = [v for k, v in state.items() if k.endswith("attn.w2")]
        if w2:
            shape["n_head"] = n_embd // w2[0].shape[0]
        return shape
    except (KeyError, IndexError, AttributeError, ZeroDivisionError):
        return None


def _looks_like(state):
    """'--n_layer 2 --n_embd 128 --block_size 64' (and '--n_head 4' for a synthesizer's): `_shape` as the
    flags that build it, or None."""
    shape = _shape(state)
    return None if shape is None else " ".join(f"--{name} {value}" for name, value in shape.items())


def params_shape(path):
    """What a params file says of the model that wrote it, for the tools that take one file and build
    its model (ask, memorised): {n_layer, n_embd, block_size, synthesizer} read off its shapes, n_head
    from a synthesizer's w2 or else from the card (card.py), and the card's `function`; {} for a file that
    does not load as a state_dict (load_params then says why)."""
    if not os.path.isfile(path):  # a FIFO would block the load; missing or a folder: load_params says so
        return {}
    try:
        state = load_torch_file(path)
        shape = _shape(clean_state_dict(state))
    except Exception:  # anything at all: the file is load_params' to explain
        return {}
    if shape is None:
        return {}
    shape["synthesizer"] = "n_head" in shape
    card = read_card(path) or {}
    heads = card_heads(card)
    if "n_head" not in shape and heads is not None:
        shape["n_head"] = heads
    if card.get("function") in ("pretrain", "finetune"):
        shape["function"] = card["function"]
    return shape


def _size_error(path, problem, size_fix, state):
    """The ParamsError of params of another model size, with the size flags they look like."""
    looks = _looks_like(state)
    heads = card_heads(read_card(path)) if looks is not None and "--n_head" not in looks else None
    if heads is not None:  # a vanilla file's heads, from its card
        looks += f" --n_head {heads}"
    hint = "" if looks is None else f" (the file looks like {looks})" if "--n_head" in looks else \
        f" (the file looks like {looks}, with the --n_head it was trained with: a vanilla file does not record it)"
    return ParamsError(f"{path}: {problem}; {size_fix}{hint}", problem=problem, looks_like=looks)


PARAMS_FILES = {  # the course's params files: (variant, the run.sh mode that writes it, the modes before it)
    "vanilla.model.params": ("vanilla", "vanilla_finetune_without_pretrain", []),
    "vanilla.pretrain.params": ("vanilla", "vanilla_pretrain", []),
    "vanilla.finetune.params": ("vanilla", "vanilla_finetune_with_pretrain", ["vanilla_pretrain"]),
    "synthesizer.pretrain.params": ("synthesizer", "synthesizer_pretrain", []),
    "synthesizer.finetune.params": ("synthesizer", "synthesizer_finetune_with_pretrain", ["synthesizer_pretrain"]),
}


def _run_sh():
    """The repo's run.sh as typed from the current folder: ./run.sh in the repo or in src/ (the course's
    place, src/run.sh), its relative path from a folder above the repo, else its whole path."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        here = os.path.realpath(os.getcwd())
        if here in (os.path.realpath(repo), os.path.realpath(os.path.join(repo, "src"))):
            return "./run.sh"
        shown = os.path.relpath(os.path.join(repo, "run.sh"))
        if shown.startswith(os.pardir):  # not below the current folder: its whole path
            shown = os.path.join(repo, "run.sh")
    except (OSError, ValueError):  # no current folder, or Windows: on another drive
        shown = os.path.join(repo, "run.sh")
    return shlex.quote(shown if os.sep in shown else os.path.join(".", shown))


DEMO_RECORD = ".made-by-demo.json"  # ledger.DEMO_RECORD (demo.py's RECORD): in a folder the demo wrote


def _demo_out(folder):
    """The demo's --out flag for `folder` when the demo wrote it: '' for its default, runs/demo, ' --out FOLDER'
    for one holding its record; None for any other folder."""
    here = os.path.dirname(os.path.abspath(__file__))
    if os.path.realpath(folder) == os.path.realpath(os.path.join(here, "..", "..", "runs", "demo")):
        return ""
    return f" --out {shlex.quote(folder)}" if os.path.isfile(os.path.join(folder, DEMO_RECORD)) else None


def _make_with(path):
    """`./run.sh MODE (after ...)`, the command that makes a course params file (with OUT_DIR set to the
    file's folder when that is not src/submission/, where the modes write, and DATA_DIR as this run has
    it: the same corpus, so the same vocabulary); in the demo's folder (runs/demo, or one holding its
    record) `./run.sh demo`, as a mode there would train the course's size where the demo keeps its small
    models; None for another file."""
    made = PARAMS_FILES.get(os.path.basename(path))
    if made is None:
        return None
    _, mode, before = made
    after = f" (after {', '.join(before)})" if before else ""
    folder = os.path.dirname(path) or "."
    here = os.path.dirname(os.path.abspath(__file__))  # src/submission/, run.sh's default OUT_DIR
    data = f"DATA_DIR={shlex.quote(os.environ['DATA_DIR'])} " if os.environ.get("DATA_DIR") else ""
    out = _demo_out(folder)
    if out is not None:
        return f"{data}{_run_sh()} demo{out} (the demo's files come from the demo)"
    env = "" if os.path.realpath(folder) == os.path.realpath(here) else f"OUT_DIR={shlex.quote(folder)} "
    return f"{data}{env}{_run_sh()} {mode}{after}"


def _not_found(path):
    """The error of a params file that is not there: a relative path the repo's folder holds (typed in src/,
    the course's place, after learners.md's `runs/demo/...`) names that file, else the run.sh mode that makes
    a course file."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    there = os.path.normpath(os.path.join(repo, path))  # a path whose ".." leaves the repo names no file of it
    try:
        cwd = os.getcwd()
    except OSError:  # no current folder
        cwd = None
    # typed in the repo itself the path is the repo's, found or not (`there`, normpath'd, may name a file that
    # runs/demo/gone/../x does not reach)
    elsewhere = cwd is None or os.path.realpath(cwd) != os.path.realpath(repo)
    if not os.path.isabs(path) and elsewhere and there.startswith(repo + os.sep) and os.path.isfile(there):
        here = f", in {cwd}" if cwd is not None else ""
        try:
            shown = os.path.relpath(there)
        except (OSError, ValueError):  # no current folder, or Windows: the repo on another drive
            shown = there
        return (f"{path}: params file not found here{here} (a relative path is from the folder you run in); the "
                f"repository's is {shlex.quote(shown if os.sep in shown else os.path.join('.', shown))}")
    command = _make_with(path)
    if command is None:  # not a name the course's modes write: a typo of a file beside it?
        meant = _nearest_params(path)
        if meant is not None:
            return f"{path}: params file not found; did you mean {shlex.quote(meant)}?"
    return f"{path}: params file not found" + (f"; make it with {command}" if command else "")


def _nearest_params(path):
    """The params file in `path`'s folder whose name is nearest to `path`'s (a typo: vanila.finetune.params), as
    `path` writes its folder; None when none is close."""
    import difflib
    folder, name = os.path.split(path)
    try:
        names = [n for n in os.listdir(folder or ".") if n.endswith(".params")
                 and os.path.isfile(os.path.join(folder, n))]
    except OSError:  # no such folder, or not one to read
        return None
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.8)
    return os.path.join(folder, close[0]) if close else None


def _remake(path):
    """The fix of a params file that holds no usable weights: the run.sh mode that makes it, if a course file;
    in the demo's folder it is removed first, as the demo replaces no file it did not write as it is now."""
    command = _make_with(path)
    if command and _demo_out(os.path.dirname(path) or ".") is not None:
        return f"remove it, then re-create it with {command}"
    return f"re-create it with {command}" if command else "re-create it with the run.sh mode that writes it"


_LEGACY_MAGIC = b"\x80\x02\x8a\nl\xfc\x9cF\xf9 j\xa8P\x19."  # torch.save's pre-1.6 format opens with this
_CUT_SHORT = "a PyTorch file cut short or damaged, as by an interrupted copy"  # wherever the cut falls


def _ends_inside_global(path, message):
    """Whether the global that torch refused ("Unsupported global: GLOBAL colle."; torch 2.2 and
    earlier: "Unsupported class colle.") is cut off by the file's end: a pre-1.6 file cut short inside
    the name of one it allows (collections.OrderedDict, torch._utils._rebuild_tensor_v2), not a file
    that names code."""
    named = re.search(r"(?:GLOBAL|Unsupported class) ([\w.]*)", message)
    if not named:
        return False
    module, _, name = named.group(1).rpartition(".")
    tail = (name or module).encode()  # as read up to the end, less its last byte (taken for a newline)
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - len(tail) - 2))
        end = f.read()
    return tail in end if tail else end.endswith(b"c")  # b"c": the GLOBAL opcode, nothing after it


class CompressedRecord(ValueError):
    """A zip whose records are compressed: no file torch.save wrote (load_torch_file)."""


def load_torch_file(path):
    """torch.load of a user's file (params, a training state), as every loader here reads one: onto the CPU,
    weights only (a pickle that would run code is refused), and never a zip whose records are compressed,
    which torch.save does not write and torch would unpack whole before any check (a 1 MB file claiming a
    1 GB tensor took 1.3 GB). Raises what torch.load raises, or CompressedRecord."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            packed = next((i.filename for i in z.infolist() if i.compress_type != zipfile.ZIP_STORED), None)
        if packed is not None:
            raise CompressedRecord(packed)
    with warnings.catch_warnings():  # torch warns of pickle protocols before failing on a plain pickle
        warnings.simplefilter("ignore")
        return torch.load(path, map_location="cpu", weights_only=True)


def unloadable_reason(path, error):
    """Why torch.load failed on `path`, in words, from the file's first bytes and the error."""
    with open(path, "rb") as f:
        head = f.read(512)
    message = str(error)
    if not head:
        return "an empty file"
    if isinstance(error, CompressedRecord):
        return f"a zip with a compressed record ({message}), which torch.save never writes"
    if head.startswith(b"PK\x03\x04") or head.startswith(_LEGACY_MAGIC):
        # a zip cut short has no end record; torch's reader then fails in many ways (an EOFError, no
        # central directory, or OSError EINVAL from a seek past the end), so ask zipfile instead
        if head.startswith(b"PK\x03\x04") and not zipfile.is_zipfile(path):
            return _CUT_SHORT
        # the pre-1.6 format cut short fails wherever the cut falls: EOFError, struct.error or IndexError
        # from the pickle, or torch's "unexpected EOF" while reading the storages after it (torch 2.0-2.2
        # raise that one as an UnpicklingError)
        if isinstance(error, (EOFError, struct.error, IndexError)) or "unexpected EOF" in message \
                or "central directory" in message or "zip archive" in message:
            return _CUT_SHORT
        if type(error).__name__ == "UnpicklingError":
            if _ends_inside_global(path, message):
                return _CUT_SHORT
            return ("a PyTorch file holding Python objects beyond tensors (classes or code), which are not "
                    "loaded, for safety")
        if head.startswith(b"PK\x03\x04") and "archive" in message:
            return "a zip archive, but not one torch.save wrote"
    elif head.startswith(b"\x93NUMPY"):
        return "a NumPy array file, not a PyTorch one"
    elif head[:1] == b"\x80":
        return "a Python pickle, not a PyTorch file"
    elif head.startswith((b"\xff\xfe", b"\xfe\xff")):  # the byte-order mark a Windows editor's UTF-16 opens with
        return "a text file (UTF-16), not a PyTorch one"
    else:
        try:
            head.decode("utf-8")
            return "a text file, not a PyTorch one"
        except UnicodeDecodeError as bad:
            if bad.start < len(head) - 3:  # not merely a character cut at byte 512
                return "neither a PyTorch file nor text: it starts with neither a zip nor a pickle header"
            return "a text file, not a PyTorch one"
    detail = (message.splitlines() or [""])[0][:120]
    return f"{type(error).__name__}: {detail}" if detail else type(error).__name__


def _same_corpus(path, corpus_flag):
    """The fix of params of another vocabulary: the corpus flag, and the corpus their card names, where it does
    (card.pretrain_corpus: the path as the training run was given it), with whether that file has changed since
    or is gone (then it is no longer the corpus to give)."""
    corpus = pretrain_corpus(read_card(path))
    named = ""
    if corpus is not None:
        since = ""
        if "realpath" in corpus:  # (a card zipped by deliverables.py keeps the file's name alone)
            now = corpus_record(corpus["realpath"])
            since = "" if now is not None and now["sha256"] == corpus["sha256"] else (
                ", changed since" if now is not None else ", not there now")
        named = f" (their card names {corpus['path']}{since})"
    return f"use the same {corpus_flag} the params were trained with{named}"


def _odd_tensor(v):
    """What kind of tensor `v` is when it is none that params hold (dense, real, with data), else None."""
    if v.layout != torch.strided:
        return "sparse" if v.is_sparse else str(v.layout).replace("torch.", "")
    if v.is_meta:
        return "meta (shape only, no values)"
    if v.is_quantized:
        return "quantized"
    if v.is_complex():
        return "complex"
    return None


def nonfinite(state):
    """The keys of a state_dict's floating-point tensors that hold a NaN or an infinite value, in order."""
    return [k for k, v in state.items() if v.is_floating_point() and not bool(torch.isfinite(v).all())]


def nonfinite_share(v):
    """How many of a tensor's values are NaN or infinite, in words: "3 of the 480 values"."""
    return f"{int((~torch.isfinite(v)).sum()):,} of the {v.numel():,} values"


def load_params(model, path, variant_flag="--variant=", corpus_flag="--pretrain_corpus_path",
                size_fix="use the model size they were trained with", variant_fix=None, itos=None):
    """Load a params file into `model` on any device, refusing code and explaining mismatches.
    `variant_flag` and `corpus_flag` are how the caller's command line chooses the variant and the
    corpus (run.py's by default), named in the errors that send the user to them; `size_fix` is the
    fix of params of another model size (the size flags by default), and `variant_fix` that of the
    other variant's params, with {have} and {want} for the variants (default: pass `variant_flag`).
    Where the params have a card (card.py), its heads are checked against the model's, and its
    vocabulary against `itos` (the pretraining corpus's), when given."""
    if not os.fspath(path).strip():  # a variable left unset ("$PARAMS"): ": params file not found" named no file
        raise ParamsNotFound("the params path is empty; give the params file run.py wrote", problem="empty path")
    if not os.path.exists(path):
        shut = folder_shut(path, "params file")
        if shut:
            raise ParamsUnreachable(shut, problem="cannot be reached")
        raise ParamsNotFound(_not_found(path), problem="params file not found")
    if not os.path.isfile(path):  # a folder, /dev/null, a FIFO
        raise ParamsError(f"{path}: is not a regular file; give the params file run.py wrote",
                          problem="is not a regular file")
    try:
        state = load_torch_file(path)
    except Exception as e:  # pickle with code, truncated file, not a torch file
        problem = f"not a loadable params file ({unloadable_reason(path, e)})"
        raise ParamsError(f"{path}: {problem}; {_remake(path)}",
                          problem=problem) from None
    if not isinstance(state, dict):
        problem = f"holds a {type(state).__name__}, not a state_dict (a dict of tensors)"
        raise ParamsError(f"{path}: {problem}; pass a params file that run.py wrote", problem=problem)
    if isinstance(state.get("format"), str) and state["format"].startswith("cs224n-a5 training state"):
        problem = "a training state (what --resume goes on from), not params"
        params = path[:-len(".state")] if path.endswith(".state") else "its params path"
        raise ParamsError(f"{path}: {problem}; finish that run with its command and --resume: the params go to "
                          f"{params}", problem=problem)
    for key in ("model", "state_dict", "model_state_dict"):  # a training checkpoint of another loop
        # a state_dict's values are tensors, never dicts: weights under one of these keys, beside the
        # step or an optimizer's state (tensors too, such as a learning rate), make a checkpoint
        inner = state.get(key)
        if isinstance(inner, dict) and any(torch.is_tensor(v) for v in inner.values()):
            problem = f"a checkpoint with the weights under the key {key!r}, not a params file"
            raise ParamsError(f"{path}: {problem}; save torch.load({path!r})[{key!r}] to a file of its own and "
                              f"pass that", problem=problem)
    if not state:
        raise ParamsError(f"{path}: an empty state_dict, no weights; {_remake(path)}",
                          problem="an empty state_dict, no weights")
    for k, v in state.items():  # before clean_state_dict and the shape checks, which take these for granted
        if not isinstance(k, str) or not torch.is_tensor(v):
            what = (f"the key {k!r} is not a name" if not isinstance(k, str) else
                    f"the value of {k!r} is {type(v).__name__}, not a tensor")
            raise ParamsError(f"{path}: not a state_dict of tensors ({what}); pass a params file that run.py wrote",
                              problem=f"not a state_dict of tensors ({what})")
        kind = _odd_tensor(v)
        if kind:  # the checks below, and loading, took every tensor for a dense real one (tracebacks)
            problem = f"the value of {k!r} is a {kind} tensor, not a dense real one as params hold"
            raise ParamsError(f"{path}: {problem}; pass a params file that run.py wrote", problem=problem)
    state = clean_state_dict(state)
    # a model wrapped by DataParallel/DDP (`.module`) or torch.compile (`._orig_mod`) names its weights with
    # those prefixes; the file has none (clean_state_dict), so load into the model inside
    target = unwrap(model)
    own = target.state_dict()
    synth_file = any(k.endswith("attn.w2") for k in state)
    synth_model = any(k.endswith("attn.w2") for k in own)
    if synth_file != synth_model:
        have, want = ("synthesizer", "vanilla") if synth_file else ("vanilla", "synthesizer")
        fix = (variant_fix or "pass {flag}{have} or use the {want} params file").format(
            flag=variant_flag, have=have, want=want)
        raise ParamsError(f"{path}: these are {have} params, but the model is {want}; {fix}",
                          problem=f"these are {have} params, but the model is {want}")
    if "tok_emb.weight" in state and state["tok_emb.weight"].shape[0] != own["tok_emb.weight"].shape[0]:
        problem = (f"params have a vocabulary of {state['tok_emb.weight'].shape[0]} characters, the pretraining "
                   f"corpus gives {own['tok_emb.weight'].shape[0]}")
        raise ParamsError(f"{path}: {problem}; {_same_corpus(path, corpus_flag)}", problem=problem)
    if not set(state) & set(own):
        problem = f"none of its {len(state)} keys (such as {sorted(state)[:2]}) names a weight of the assignment's GPT"
        raise ParamsError(f"{path}: {problem}; it holds another model's params", problem=problem)
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    if missing or unexpected:
        def some(what, keys):  # the first three (repr: a key is the file's text), and how many there are
            return f"{what} " + ", ".join(map(repr, keys[:3])) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
        found = "; ".join(some(what, keys) for what, keys in (("missing", missing), ("unexpected", unexpected)) if keys)
        problem = f"params do not fit this model ({found})"
        if not missing and all(state[k].shape == v.shape for k, v in own.items()) and _shape(state) == _shape(own):
            # every weight of the model, each of its shape, and the extra ones no other size's (layers): other modules
            raise ParamsError(f"{path}: {problem}; its other weights fit this model, so a GPT with modules of its own "
                              f"wrote them; pass params of the assignment's GPT", problem=problem)
        raise _size_error(path, problem, size_fix, state)
    for k, v in state.items():
        if v.shape != own[k].shape:
            raise _size_error(path, f"{k} has shape {tuple(v.shape)}, the model wants {tuple(own[k].shape)}",
                              size_fix, state)
    # NaN or infinite weights: training stops on a non-finite loss before writing any, so bytes changed since
    # (a bad disk or copy) or another program's run; the model would answer every question with PAD, quietly
    bad = nonfinite(state)
    if bad:
        v = state[bad[0]]
        problem = (f"{nonfinite_share(v)} of {bad[0]} are NaN or infinite"
                   + (f" (and {len(bad) - 1} more tensors hold some)" if len(bad) > 1 else ""))
        raise ParamsError(f"{path}: {problem}: the file is damaged, or the run that wrote it diverged; "
                          f"{_remake(path)}", problem=problem)
    mismatch = card_mismatch(path, target, itos)
    if mismatch is not None:
        problem, flag = mismatch
        fix = f"{size_fix} ({flag})" if flag else _same_corpus(path, corpus_flag)
        raise ParamsError(f"{path}: {problem}; {fix}", problem=problem, looks_like=flag)
    target.load_state_dict(state)
    return model

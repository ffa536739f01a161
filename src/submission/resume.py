"""Resuming an interrupted training run: the training state, saved at the end of an epoch.

Beyond the course, whose pretraining takes two hours on a GPU (about four on a 2-core CPU, README)
and starts over when interrupted. Every `TrainerConfig.state_every` seconds, at the end of an
epoch, the trainer writes its state to `TrainerConfig.state_path` (atomically; run.py: beside the
params, `<params>.state`): the weights, AdamW's moments and step counts, the schedule's token
count, the best test loss, the loss log so far, the random streams of torch (CPU, the current GPU, an
Apple GPU) and Python, and the key of the examples' draws (draws.py). `TrainerConfig.resume` (run.py
`--resume`) reads it back, after checking that it was saved by the same run (model shape,
optimisation settings, data), and continues with the next epoch. run.py starts no fresh run over a
state unless given `--restart`: the first save would replace hours of training. Without DataLoader
workers (always so on the CPU), with the same CPU thread count and the same speed options (packing, length
groups, compiling: they change which dropout masks are drawn) the resumed run ends with the uninterrupted run's
params, bit for bit (tests/test_resume.py). The examples are the same draws anywhere (the fast path keys each
one, draws.py); where torch's streams are not saved the dropout masks are other draws, the same run in
distribution, not in bits: under torchrun rank 0 writes the state and the other ranks derive theirs from its
streams. The state (40 MB for the course's model, written in 0.1 s on the 2-core CPU) is removed
once training has ended and the params are written.
"""
import contextlib
import hashlib
import os
import random
import time

import torch

from .files import atomic_torch_save, error_reason
from .params import ParamsError, load_torch_file, nonfinite, nonfinite_share, unloadable_reason

FORMAT = "cs224n-a5 training state, version 1"
MODEL_FIELDS = ("vocab_size", "block_size", "n_layer", "n_head", "n_embd", "synthesizer")
# amp: bf16 autocast computes in another precision, not merely in another order (as the thread count does);
# fast: False is the course's loop (run.py --reference_train), whose dropout masks are other draws. Not checked:
# the length groups, packing, compiling and the device, which also cut the forwards otherwise, so that dropout
# draws other masks (a run at dropout 0.1 resumed with --no_pack ends 0.09 away from either run's params, 6e-5
# at dropout 0): the same training, other draws, as with DataLoader workers; checking them would refuse a
# state saved on the CPU on a GPU
TRAINING_FIELDS = ("max_epochs", "batch_size", "learning_rate", "betas", "grad_norm_clip", "weight_decay",
                   "lr_decay", "warmup_tokens", "final_tokens", "amp", "fast", "seed")
ADDED_LATER = {"amp": False, "fast": True}  # training settings a state of an earlier version lacks, and what they were
# seed: TrainerConfig.seed (run.py --seed), the new model's weights and every draw; the state's streams replace it
# on resuming, so another seed went on unseen as the interrupted one's run. dropout: the model's rates (run.py
# --dropout), other params from the same shapes. A state of an earlier version lacks them: taken as this run's
ADDED_LATER_AS_THIS_RUNS = ("seed", "dropout")
DROPOUT_FIELDS = ("embd_pdrop", "resid_pdrop", "attn_pdrop")
# data first: another corpus changes the vocabulary (the model's shape) and run.py's final_tokens too, and
# "other data" names the cause
SECTIONS = {"data": "other data", "test_data": "other test data", "model": "a model of another shape",
            "training": "other training settings", "start": "other starting params"}
# the params the run started from (TrainerConfig.start_params; run.py: the sha256 of a finetuning's
# --reading_params_path, pretrained again or another file between the interrupt and --resume): the resumed
# run goes on from the old start, ending at the finetuning of params the command no longer names. A state
# of an earlier version lacks it, and is taken as saved with this run's
SECTIONS_ADDED_LATER = ("start",)
KEYS = {"settings": dict, "epoch": int, "step": int, "tokens": int, "best_loss": float, "elapsed": float,
        "log_lines": list, "model": dict, "optimizer": dict, "rng": dict}
START_OVER = "give --restart instead of --resume to start over"


def data_digest(dataset):
    """A short text naming the training data: its size and a hash of its text (or tensors) and vocabulary."""
    h = hashlib.sha256()
    data = getattr(dataset, "data", None)
    if isinstance(data, str):
        h.update(data.encode("utf-8"))
    elif isinstance(data, (list, tuple)) and all(isinstance(line, str) for line in data):
        h.update("\n".join(data).encode("utf-8"))
    for t in getattr(dataset, "tensors", ()):
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    itos = getattr(dataset, "itos", None)
    if isinstance(itos, dict):
        h.update("".join(str(itos[i]) for i in sorted(itos)).encode("utf-8"))
    return f"{len(dataset)} examples, sha256 {h.hexdigest()[:16]}"


def run_settings(model, config, dataset, test_dataset=None):
    """What a saved state must share with the run that resumes it."""
    model_config = getattr(model, "config", None)
    return {"model": {name: getattr(model_config, name, None) for name in MODEL_FIELDS},
            "training": {**{name: getattr(config, name, None) for name in TRAINING_FIELDS},
                         "dropout": [getattr(model_config, name, None) for name in DROPOUT_FIELDS]},
            "start": getattr(config, "start_params", None),
            "data": data_digest(dataset),
            "test_data": None if test_dataset is None else data_digest(test_dataset)}


def rng_state():
    """torch's CPU stream, the current GPU's (if CUDA is in use), the Apple GPU's (MPS, where there is
    one: its dropout draws there) and Python's."""
    state = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state()
    if _mps():
        state["mps"] = torch.mps.get_rng_state()
    return state


def _mps():
    """True where torch has an MPS device and its random stream can be read (torch 2.0+ on a Mac)."""
    backend = getattr(torch.backends, "mps", None)
    return bool(backend and backend.is_available() and hasattr(getattr(torch, "mps", None), "get_rng_state"))


def set_rng_state(state):
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])
    if "mps" in state and _mps():
        torch.mps.set_rng_state(state["mps"])


def portable_optimizer_state(optimizer):
    """optimizer.state_dict() with a plain learning rate: step graphs keep it in a device tensor (the
    loading run keeps its own kernel flags: TrainingRun.load_optimizer_state)."""
    state = optimizer.state_dict()
    for group in state["param_groups"]:
        if isinstance(group.get("lr"), torch.Tensor):
            group["lr"] = group["lr"].item()
    return state


@contextlib.contextmanager
def putting(path, what):
    """An error while putting a checked state's `what` into this run, as one line."""
    try:
        yield
    except (RuntimeError, ValueError, KeyError, TypeError, IndexError) as e:
        raise ParamsError(f"{path}: its {what} does not fit this run ({error_reason(e)}); {START_OVER}") from None


def describe(path):
    """ " (after epoch E of N, saved DATE)" for the state at `path`, for messages; "" where it cannot be read."""
    try:
        state = load_torch_file(path)
        epochs = state["settings"]["training"]["max_epochs"]
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(path)))
        return f" (after epoch {int(state['epoch'])} of {int(epochs)}, saved {when})"
    except Exception:  # any file at all: the message stands without the details
        return ""


def save(path, *, model, optimizer, settings, epoch, step, tokens, best_loss, elapsed, log_lines, draws=None,
         threads=None):
    """Write the state after `epoch` epochs (atomically: an interrupted save keeps the previous one); `draws`:
    the run's key of its examples' draws (draws.py), kept with the random streams; `threads`: the CPU thread
    counts it used so far (None: not on a CPU), for `threads_note`."""
    atomic_torch_save({
        "format": FORMAT, "settings": settings, "epoch": epoch, "step": step, "tokens": int(tokens),
        "best_loss": float(best_loss), "elapsed": float(elapsed), "log_lines": list(log_lines),
        "model": model.state_dict(), "optimizer": portable_optimizer_state(optimizer),
        "rng": {**rng_state(), "draws": draws}, "threads": threads,
    }, path)


def threads_note(state, now):
    """The note for a run resuming `state` with `now` CPU threads (None: not on a CPU) where the interrupted run
    used one other count: another count sums floats in another order, so the params end other in their last bits
    than the uninterrupted run's (the state is still this run's: it is not refused); None otherwise, also for a
    state of an earlier version, which does not say."""
    saved = state.get("threads")
    if now is None or not isinstance(saved, list) or len(saved) != 1 or saved[0] == now:
        return None
    return (f"note: the interrupted run trained with {saved[0]} CPU thread(s), this one with {now}: its params will "
            f"differ from an uninterrupted run's in their last bits (GPT_NUM_THREADS={saved[0]} resumes it exactly)")


# the settings whose run.py flag has another name than the setting (the others' flags are --NAME)
RUN_PY_FLAGS = {"amp": "run.py --bf16", "fast": "False: run.py --reference_train", "variant": "run.py --variant"}
# settings said as the flag says them: the model's synthesizer True/False is run.py's --variant
SAID_AS = {"synthesizer": ("variant", lambda v: "synthesizer" if v else "vanilla" if v is False else repr(v))}


def _differences(saved, now):
    """Each setting of `now` that `saved` holds otherwise, all of them: a run resumed without its flags
    differs in several (--n_layer, --n_head, --n_embd, --max_epochs), and naming one at a time took a
    try for each. A setting whose flag is named otherwise says its flag too."""
    if isinstance(saved, dict) and isinstance(now, dict):
        said = []
        for key in (k for k in now if saved.get(k) != now[k]):
            name, show = SAID_AS.get(key, (key, repr))
            said.append(f"{name}{f' ({RUN_PY_FLAGS[name]})' if name in RUN_PY_FLAGS else ''} {show(saved.get(key))}, "
                        f"this run's is {show(now[key])}")
        if said:
            return "; ".join(said)
    return f"{saved!r}, this run's is {now!r}"


def load(path, settings):
    """The state at `path`, checked against this run's `settings` (run_settings); one-line errors."""
    if not os.path.exists(path):
        params = path[:-len(".state")] if path.endswith(".state") else None
        if params and os.path.isfile(params):  # the run ended (and removed its state) or never saved one
            raise ParamsError(f"{path}: no training state to resume, and {params} is there: the params of a run "
                              f"that ended (it removes its state then); leave out --resume to train again")
        raise ParamsError(f"{path}: no training state to resume (a run writes it at an epoch's end every few "
                          f"minutes and removes it when it ends); leave out --resume to start over")
    try:
        state = load_torch_file(path)
    except Exception as e:  # a cut-short zip, another file, an unreadable one
        raise ParamsError(f"{path}: not a training state this project can read ({unloadable_reason(path, e)}); "
                          f"{START_OVER}") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ParamsError(f"{path}: not a training state of this project (no {FORMAT!r} in it); {START_OVER}")
    broken = [key for key, kind in KEYS.items() if not isinstance(state.get(key), kind)]
    broken += [f"settings {s}" for s in SECTIONS
               if not broken and s not in state["settings"] and s not in SECTIONS_ADDED_LATER]
    broken += [f"rng {s}" for s in ("torch", "python") if not broken and s not in state["rng"]]
    if broken:
        raise ParamsError(f"{path}: a damaged training state (its {broken[0]!r} is missing or of the wrong type); "
                          f"{START_OVER}")
    # NaN or infinite weights: training stops on a non-finite loss before it saves a state, so the bytes changed
    # since; resumed, the first step's loss was NaN and the error blamed the learning rate
    bad = nonfinite({k: v for k, v in state["model"].items() if torch.is_tensor(v)})
    if bad:
        raise ParamsError(f"{path}: a damaged training state ({nonfinite_share(state['model'][bad[0]])} of its "
                          f"model's {bad[0]} are NaN or infinite, which a run never saves); {START_OVER}")
    training = state["settings"]["training"]
    if isinstance(training, dict):  # settings checked since a later version: a state without one had the default
        state["settings"]["training"] = {**ADDED_LATER, **{k: settings["training"].get(k) for k in
                                                           ADDED_LATER_AS_THIS_RUNS}, **training}
    for section in SECTIONS_ADDED_LATER:
        state["settings"].setdefault(section, settings.get(section))
    # every section that differs, but other data alone: it is the cause of the shape and settings it changes
    differ = [s for s in SECTIONS if state["settings"][s] != settings.get(s)]
    differ = differ[:1] if differ[:1] == ["data"] else differ
    if differ:
        said = " and ".join(f"{SECTIONS[s]} ({_differences(state['settings'][s], settings[s])})" for s in differ)
        raise ParamsError(f"{path}: saved by a run with {said}; resume with the interrupted run's settings, or "
                          f"{START_OVER}")
    return state

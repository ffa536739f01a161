"""Helpers shared by the assignment's scripts: seeding, the device and scoring.

As in the course's utils.py, `set_seed`, `sample`, `top_k_logits` and `evaluate_places` are here
(sampling and the batched evaluation live in decoding.py, file writing in files.py, params loading
in params.py, the command-line runner in cli.py; all are re-exported, so `from submission.utils
import ...` works for all of them). `get_device` is the one device choice ($GPT_DEVICE, else cuda,
then mps, then cpu); `is_main_process` tells torchrun's rank 0. CPU threads: threads.py.
"""
import os
import random

import numpy as np
import torch

from .dataset import MASK_CHAR, DataError
from .decoding import predict_places, predict_places_recompute, sample, sample_cached, top_k_logits
from .cli import run_cli
from .files import (atomic_torch_save, atomic_write, atomic_write_text, check_output_path, cpu_state_dict,
                    save_trained)
from .params import ParamsError, clean_state_dict, load_params

__all__ = [  # this module's own, then the re-exported names of dataset, decoding, cli, files and params
    "set_seed", "get_device", "is_main_process", "evaluate_places", "CountMismatch", "same_place", "MASK_CHAR",
    "DataError", "predict_places", "predict_places_recompute", "sample", "sample_cached", "top_k_logits",
    "ParamsError", "atomic_torch_save", "atomic_write", "atomic_write_text", "check_output_path", "clean_state_dict",
    "cpu_state_dict", "load_params", "run_cli", "save_trained"]


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def _available(device):
    if device == "cuda":
        return torch.cuda.is_available()
    if device == "mps":
        mps = getattr(torch.backends, "mps", None)
        return mps is not None and mps.is_available()
    return device == "cpu"


def get_device():
    """The one device rule of the project: $GPT_DEVICE (cpu, cuda or mps) when it is set, else cuda,
    then mps, then cpu. GPT_DEVICE=cpu keeps a run off a GPU that is busy, or off an MPS build that
    misbehaves; a device that is not there is a DataError, not a silent fallback."""
    value = os.environ.get("GPT_DEVICE", "").strip()
    if value:
        if value.lower() not in ("cpu", "cuda", "mps"):
            raise DataError(f"GPT_DEVICE={value!r} is not a device; set it to cpu, cuda or mps, or unset it "
                            f"(a GPU's number: CUDA_VISIBLE_DEVICES)")
        if not _available(value.lower()):
            raise DataError(f"GPT_DEVICE={value}: torch {torch.__version__} sees no {value.lower()} device on this "
                            f"machine; set GPT_DEVICE=cpu or unset it")
        return value.lower()
    return next(d for d in ("cuda", "mps", "cpu") if _available(d))


def synchronize(device):
    """Wait until `device` (get_device's name) has run the work queued on it, so that a clock read next
    counts it; the CPU runs its work as it is called."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    elif device == "mps":
        torch.mps.synchronize()


def distributed_env():
    """(rank, world_size, local_rank) from torchrun's environment; (0, 1, 0) without it."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return 0, 1, 0
    return int(os.environ.get("RANK", "0")), world, int(os.environ.get("LOCAL_RANK", "0"))


def is_main_process():
    """False on every torchrun process but rank 0: only the main process writes files (the Trainer's
    rank, from the same environment)."""
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank() == 0
    return distributed_env()[0] == 0


def same_place(predicted, place):
    """Whether `predicted` answers a question labelled `place` (a TSV line's second field), by the
    course's rule in evaluate_places: the prediction exactly as written, the place without the spaces
    that end its line. Every tool that scores predictions in memory uses it, so their counts agree."""
    return predicted == place.rstrip()


class CountMismatch(ValueError, AssertionError):
    """evaluate_places was given more or fewer predictions than the file has questions. An
    AssertionError too, which is what the course's `assert` raises, so a program catching that still
    catches it."""


def evaluate_places(filepath, predicted_places):
    """ Computes percent of correctly predicted birth places.

    Arguments:
      filepath: path to a file with our name, birth place data.
      predicted_places: a list of strings representing the
          predicted birth place of each person.

    Returns: (total, correct), floats
    """
    with open(filepath, encoding="utf-8-sig") as fin:  # -sig: a byte-order mark is not a line's text
        numbered = [(n, x.strip().split("\t")) for n, x in enumerate(fin, start=1) if x.strip()]
    lines = [x for _, x in numbered]
    if not lines or len(lines[0]) == 1:
        print("No gold birth places provided; returning (0,0)")
        return (0, 0)
    unlabelled = next((n for n, x in numbered if len(x) == 1), None)
    if unlabelled is not None:  # the course's x[1] raised IndexError, naming neither file nor line
        raise DataError(f"{filepath}:{unlabelled}: a question without its place, where the first line has one; "
                        f"give every line `question<TAB>place`, or none a place")
    true_places = [x[1] for x in lines]
    total = len(true_places)
    if total != len(predicted_places):
        raise CountMismatch(f"{filepath}: {total} labelled questions but {len(predicted_places)} predictions")
    correct = sum(1 for t, p in zip(true_places, predicted_places) if same_place(p, t))
    return (float(total), float(correct))

"""Which of the trainer's speed settings a training run gets: each function here decides one.

None of them changes what a step computes: the loss and gradients of a batch are the course loop's, up
to the order of float sums (and on CUDA TF32's rounding of products) and, under dropout, which masks
are drawn (the layouts cut the forwards otherwise, so the draws fall elsewhere: a run is the same
training with other draws, bit-equal to another layout's only at dropout 0 and even then up to the
sums' order; resume.py measures it). Each decides from the run's config, device and process count,
and its docstring gives the measurements behind the choice. `TrainerConfig(fast=False)` turns them all
off, giving the course's loop that src/bench.py times the fast path against. trainer.py applies what is decided
here; the batch layouts are batching.py's, the fused attention and packed segments attention.py's
and model.py's, the CUDA step graphs graphs.py's. The project's own, not the course's; the ideas are
those of PyTorch's performance tuning guide (TF32, fused optimizers, torch.compile, CUDA graphs) and
of sequence bucketing and packing (batching.py).

The settings:
- Padding trim (`trim_padding`, on by default): a batch's trailing columns whose targets are all
  `ignore_index` (PAD) are dropped before the forward. For a causal model whose loss skips those
  targets (this GPT) loss and gradients are unchanged; finetuning batches shrink from 127 to about
  50 columns, pretraining batches to at most 114. The token counter still counts the full batch.
  Only for a model that declares the id its loss skips (GPT.loss_ignore_index, or the config's
  ignore_index set): the course's Trainer serves any model, and one whose loss counts every target,
  such as the minGPT notebook's, trains on whole batches.
- Length groups (`length_groups`, on the CPU by default): a batch's rows are sorted by where their
  counted targets end and computed in a few groups, each cut to its own longest row, the loss being
  the groups' mean losses weighted by their share of the counted targets: the batch's mean, so loss
  and gradients are again unchanged. Span-corruption rows end anywhere from 6 (2 for an empty line)
  to 114 characters: in 8 groups a pretraining batch computes 49% of the positions of its 127
  columns and 30% of the attention scores (the trim alone: 89% and 78%; 20 batches of data/; of the
  bench's batches 48%). batching.py has both, and in `length_group_count` the measured speed-ups and
  where groups stay off.
- Packed rows (`pack`; run.py --pack, --no_pack): each row is cut after its last counted target and
  the pieces are laid end to end into fewer rows, each piece attending only within itself at its own
  positions (batching.pack_rows, GPT.forward's positions and segments): loss and gradients are again
  unchanged, a pretraining batch of 128 rows becomes about 58 full ones, in one forward. It replaces
  the length groups. By default ("auto") only on the CPU, for each batch whose packed rows cost less
  than its length groups (`packs_cheaper`): span-corruption batches under 128 rows, not the course's
  128 nor finetuning's short rows; `packing_setting` says where it runs.
- On CPU: threads (`num_threads`; default threads.CpuThreads: the cores other processes leave free,
  re-checked every 10 s) and no DataLoader workers (`loader_workers`; nor under "spawn" for a program
  that does not declare itself safe there).
- Fused AdamW on CUDA, and on the CPU from torch 2.4 (the same update, one kernel).
- On CUDA: TF32 matmuls (they round differently from fp32), pinned memory with non-blocking copies,
  DataLoader workers as asked up to the cores per process less one, and loss values fetched from the
  GPU about once a second rather than every step. bf16 autocast (`amp=True`) is there but off: on an
  H100 at the course's size it made a step slower, not faster (its casts add kernels to a step bound
  by launching them), and compiled bf16 pretraining diverged (loss 3.0 to NaN by step 82 to 118)
  where TF32 trained normally.
- `compile`: torch.compile the model for training. The default, "auto" (see `compile_setting`),
  compiles in the reduce-overhead mode (CUDA graphs: one launch replays a whole step) on a single
  GPU for runs of AUTO_COMPILE_STEPS steps or more, such as pretraining, where the minute of compiling
  pays back; never on the CPU (on this project's 2-core CPU a course-size step at batch 32 took 1,055
  against 820 ms eager, plus 80 s of compiling). Compiled with dynamic shapes: one graph serves every
  trimmed width and the smaller last batch (dynamo's automatic dynamic shapes compiled three).
  Checkpoints and helper.train save the raw model's state_dict, so keys never carry `_orig_mod.` or
  `module.`.
- `step_graphs` (off; one CUDA GPU, run.py --step_graphs): each step replayed as CUDA graphs captured
  by hand, one per length group (forward + backward) and one for clipping and AdamW, so the host
  only copies the batch in and launches replays (graphs.py). Off: on an H100 (commit c47193c) a
  vanilla step took 8.9 ms eager against the default's 6.2, and 5.4 ms compiled (default mode) with 2
  length groups and SDPA's fused attention dropout, an experiment not kept (docs/speed.md).
"""
import multiprocessing
import os
import re
import sys

import torch

from .batching import check_length_groups
from .decoding import defined_by
from .threads import usable_cores


def _within_wrappers(model):
    """The model inside DataParallel / DDP and torch.compile (`._orig_mod`) wrappers, nested in any order. Unlike
    params.unwrap (for state_dict keys, where `module.` is stripped whatever holds it), a module of a program's
    own that holds a model under the name `module` is no wrapper here: its forward, not the inner one, gives
    the loss."""
    parallel = (torch.nn.DataParallel, torch.nn.parallel.DistributedDataParallel)
    while True:
        if isinstance(model, parallel):
            model = model.module
        elif isinstance(getattr(model, "_orig_mod", None), torch.nn.Module):
            model = model._orig_mod
        else:
            return model


def _declared_ignore_index(model):
    """`model.loss_ignore_index` where it speaks for the forward that computes the loss: set on the model itself,
    or declared by the class defining its forward or by a subclass of that class; else None. GPT's PAD is what
    GPT.forward skips, not what a subclass's own forward does (a program's, of the course's signature, whose loss
    may count PAD as the course's loop then trains it), nor a forward set on the instance. A model given inside
    DataParallel, DDP or torch.compile (run.py's --compile) is read for the model within."""
    model = _within_wrappers(model)
    if "loss_ignore_index" in vars(model):
        return model.loss_ignore_index
    if "forward" in vars(model):
        return None
    defines_forward, declares = defined_by(model, "forward"), defined_by(model, "loss_ignore_index")
    if declares is None or defines_forward is None or not issubclass(declares, defines_forward):
        return None
    return model.loss_ignore_index


def skipped_target(config, model):
    """The target id `model`'s loss skips, which the padding trim and the length groups cut away: the
    config's ignore_index, or with "auto" the model's `loss_ignore_index` (GPT's PAD, 0); None (every
    target counts: a model written for another task, such as the minGPT notebook's) without one."""
    value = config.ignore_index
    if value == "auto":
        value = _declared_ignore_index(model)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValueError(f"ignore_index must be 'auto', None or a target id (a whole number), got {value!r}")
    return value


# the oldest torch whose fused AdamW reads a tensor learning rate, which step graphs replay: 2.2.2's
# optim/adamw.py passes it to the kernel as a tensor; 2.0.1's takes a float (a tensor is read with a
# device sync, which a CUDA graph capture refuses)
STEP_GRAPHS_TORCH = (2, 2)


def torch_version():
    """(major, minor) of the torch imported."""
    return tuple(int(part) for part in re.match(r"(\d+)\.(\d+)", torch.__version__).groups())


GRAPH_MODES = ("reduce-overhead", "max-autotune")  # torch.compile's modes that record CUDA graphs of their own


def asked_groups(config):
    """The length groups `config` asks for by number; 1 for "auto" (which is 1 on CUDA anyway). A ValueError for
    a value that is neither: checked as the run is prepared, before its loss log is opened (it was checked at
    the first step, leaving the log's .partial; never with fast=False)."""
    value = check_length_groups(config.length_groups)
    return 1 if value == "auto" else value


def compiled_graphs_conflict(groups, device, compile_mode):
    """Why `groups` length groups cannot train under torch.compile's `compile_mode` on `device`, as words;
    None when they can. On CUDA the modes of GRAPH_MODES record a graph per group width, and the bench's
    rows with 2 and 4 groups in the reduce-overhead mode crashed a run on an H100 with an illegal memory
    access (torch 2.11.0+cu130), while the same bench without them ran; step graphs (graphs.py) with
    length groups ran, and were the fastest TF32 path measured there."""
    if str(device).startswith("cuda") and compile_mode in GRAPH_MODES and groups > 1:
        return (f"length groups ({groups}) do not train under torch.compile's {compile_mode} mode on CUDA (its "
                f"CUDA graphs per group width crashed on an H100); use step graphs (--step_graphs), whose own "
                f"graphs take length groups, or compile mode default")
    return None


def step_graphs_need(device, world_size=1, fast=True, compile_mode=None):
    """What step graphs (graphs.py) need that this training run lacks, as words ("a CUDA GPU (...)");
    None when it has everything. The machine's needs come before the torch version's."""
    if compile_mode in GRAPH_MODES:
        return (f"no CUDA graphs of torch.compile's own (compile mode {compile_mode} records them: use default or "
                f"max-autotune-no-cudagraphs)")
    if not device.startswith("cuda"):
        return f"a CUDA GPU (this run would train on {device})"
    if world_size > 1:
        return "one process, not torchrun"
    if not fast:
        return "the fast path (fast=True)"
    if torch_version() < STEP_GRAPHS_TORCH:
        return (f"torch {'.'.join(map(str, STEP_GRAPHS_TORCH))} or newer, whose fused AdamW reads a tensor "
                f"learning rate (this is torch {torch.__version__})")
    return None


def _has_fused_adamw(device_type):
    """Whether this torch has a fused AdamW kernel for the device: CUDA's since 2.0, the CPU's since 2.4
    (an older torch refuses fused=True for CPU params)."""
    if device_type == "cuda":
        return True
    return device_type == "cpu" and torch_version() >= (2, 4)


def loader_workers(requested, device="cuda", main_guarded=None):
    """DataLoader workers: as many as asked, but leave a core for each training process itself.

    Zero when training on the CPU: a batch of span-corruption examples takes milliseconds of Python
    against a step of seconds, and a worker process then only competes with the compute threads
    (course-size model, batch 32, 2 cores: 605 ms a step without a worker against 863 ms with one
    using 2 threads, 984 against 1051 ms using 1 thread).

    Zero too where workers start by "spawn" or "forkserver" (macOS, Windows, Linux from Python 3.14)
    unless the program is known to survive it (`main_guarded`; None: its main module says so with
    `SPAWN_SAFE = True`, as run.py and demo.py do). Such a worker imports the main module again: a program
    that trains outside an `if __name__ == "__main__":` block (the course's CS224N run.py) failed there with
    "An attempt has been made to start a new process before the current process has finished its
    bootstrapping phase", and a dataset class defined in a notebook with "Can't get attribute".
    """
    if device == "cpu":
        return 0
    method = multiprocessing.get_start_method(allow_none=True) or multiprocessing.get_all_start_methods()[0]
    if main_guarded is None:
        main_guarded = getattr(sys.modules.get("__main__"), "SPAWN_SAFE", False) is True
    if method != "fork" and not main_guarded:
        return 0
    per_process = usable_cores() // max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    return max(0, min(int(requested), per_process - 1))


def packing_setting(config, model, step_graphs=False, device="cpu", compiled=False, world_size=1):
    """Whether training packs each batch's rows end to end (batching.pack_rows) for `model`: True, False,
    or "auto" (each batch packed when that costs less, `packs_cheaper`).

    `config.pack`: "auto" (the default), True or False. Packing needs a model that attends within
    segments (`packs_rows`, GPT.forward's positions and segments) and whose loss skips a target id, the
    fast path with its padding trim, no step graphs and no length groups asked for by number (it replaces
    them); True without them is a ValueError naming what is missing. "auto" packs only where the length
    groups are "auto" too, on the CPU, eager, in one process, and otherwise quietly not: on an H200 a packed
    pretraining's steps took 2.5 times as long as the default's (docs/speed.md, "The H200 session"), and a run that sets
    its length groups has chosen its layout.
    """
    value = config.pack
    if value not in (True, False, "auto"):
        raise ValueError(f"pack must be 'auto', True or False, got {value!r}")
    if not value:
        return False
    why = None
    if not getattr(model, "packs_rows", False):
        why = "a model that attends within segments (GPT.forward's positions and segments)"
    elif skipped_target(config, model) is None:
        why = "a model whose loss skips a target id (ignore_index)"
    elif not (config.fast and config.trim_padding):
        why = "the fast path with its padding trim (fast=True, trim_padding=True), of which packing is a finer form"
    elif step_graphs:
        why = "no step graphs (they capture a graph per length group)"
    elif asked_groups(config) > 1:
        why = f"no length groups ({asked_groups(config)} asked for): packing replaces them"
    if value == "auto":
        auto = (why is None and config.length_groups == "auto" and device == "cpu" and not compiled
                and world_size == 1)
        return "auto" if auto else False
    if why is not None:
        raise ValueError(f"pack needs {why}; turn one of them off")
    return True


# One attention score against one position, in a CPU training step's time: a forward computing shapes
# [(rows, width)] costs about sum(rows * width * (1 + width * SCORE_COST)) (layout_cost). Fit to the 2-core
# AMD EPYC, side by side (commit 778d705; docs/speed.md, "Packed rows"): with the course's model and the CPU
# demo's, on pretraining batches of 16 to 128 rows and finetuning batches of 32 and 256, packing was 4-25%
# faster below 128 rows of span corruption, 3-5% slower at the course's 128 and 15-74% slower on
# finetuning's short rows; on the mean shapes any value from 1/411 to 1/285 picks the faster layout in all 9
# cases. 1/300 packs no batch of 128 (of 40 each from data/ and the course's data), keeping the course's
# pretraining in its groups, and 35-36 of 40 batches of 64, nearly all of 16 and 32.
SCORE_COST = 1 / 300


def layout_cost(shapes):
    """The CPU cost, in positions, of forwards of `shapes` [(rows, width)]: each position, plus each of
    the width x width attention scores of a row at SCORE_COST."""
    return sum(rows * width * (1 + width * SCORE_COST) for rows, width in shapes)


def packs_cheaper(packed_shape, shapes):
    """Whether a packed batch of `packed_shape` (rows, width) costs less than the forwards `shapes` that
    would compute the batch unpacked (the length groups or the padding trim)."""
    return layout_cost([packed_shape]) < layout_cost(shapes)


COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


AUTO_COMPILE_STEPS = 8000  # H100: ~60 s to compile, ~9 ms saved a step (6 against 15) -> even at ~7,000 steps


def compile_setting(config, device="cpu", steps=None, world_size=1):
    """torch.compile's keyword arguments for `config.compile`; None: no compiling.

    False, None, "" or "0": none. True or "1": torch's defaults. A mode name (COMPILE_MODES): that
    mode. Any other string names a backend ("eager" in the tests). "auto" (the default): the
    environment's GPT_COMPILE if set, else the reduce-overhead mode when the run is on one CUDA device
    with Triton and a C compiler, for `steps` >= AUTO_COMPILE_STEPS optimisation steps. On an H100 a
    course-size step took 6 ms replayed as CUDA graphs against 15 ms eager, TF32 both (a step of this small model is
    bound by launching its kernels), and the first epoch of pretraining, which compiles and records
    the graphs, 60 s: worth it for the 14,950 steps of pretraining (158 s in all), not for the 80 to
    600 of finetuning. "auto" leaves DDP uncompiled (its gradient hooks and CUDA graphs do not mix), and
    a run with step_graphs (its own CUDA graphs, graphs.py); a run that asks for length groups gets the
    default mode, without torch.compile's CUDA graphs. A GPT_COMPILE that is set is taken as it is, for
    any run, DDP's too, as --compile_mode is (run.py refuses a mode whose CUDA graphs conflict with the
    run's length groups or step graphs).
    """
    value = config.compile
    if value == "auto":
        value = os.environ.get("GPT_COMPILE")
        if value is None and config.step_graphs:
            value = False  # the step's own CUDA graphs (graphs.py) replace torch.compile's
        elif value is None:
            auto = (device.startswith("cuda") and world_size == 1 and steps is not None
                    and steps >= AUTO_COMPILE_STEPS and _has_triton() and _has_c_compiler())
            # length groups asked for by number: the default mode (compiled_graphs_conflict)
            value = ("default" if asked_groups(config) > 1 else "reduce-overhead") if auto else False
    if value in (False, None, "", "0"):
        return None
    if value in (True, "1"):
        return {}
    return {"mode": value} if value in COMPILE_MODES else {"backend": value}


def _has_c_compiler():
    """Whether Triton will find a C compiler, looking as it does: $CC if set, else gcc or clang on PATH.
    It builds its kernel launcher with one, so a GPU box without it trains eagerly by default instead
    of failing at the first step."""
    import shutil
    cc = os.environ.get("CC")
    return shutil.which(cc) is not None if cc is not None else any(shutil.which(c) for c in ("gcc", "clang"))


def inductor_paths_with_space():
    """The folders torch.compile's inductor names on its C++ compiler's command line that hold whitespace,
    as (what, path, fix) triples: its cache, torch's headers and libraries, Python's. torch 2.13 joins that
    command line unquoted, so a checkout (and its .venv) at "/home/First Last/a5", or a cache under a TMPDIR
    with a space, failed the first compile on the CPU ("g++: fatal error: input file '/tmp/sp' is the same as
    output file", in a 117-line traceback); cli.machine_limit words that failure with these."""
    import sysconfig
    folders = [("torch.compile's cache", _inductor_cache_dir(),
                "set TORCHINDUCTOR_CACHE_DIR to a folder whose path has none"),
               ("torch's install", os.path.dirname(torch.__file__),
                "move the checkout (run.sh makes .venv inside it) or the environment to a path without spaces"),
               ("Python's headers", sysconfig.get_paths().get("include"), "use a Python installed without spaces"),
               ("Python's libraries", sysconfig.get_config_var("LIBDIR"), "use a Python installed without spaces")]
    return [(what, path, fix) for what, path, fix in folders if path and re.search(r"\s", path)]


def _inductor_cache_dir():
    try:
        from torch._inductor.runtime.cache_dir_utils import cache_dir
        return cache_dir()
    except Exception:  # a torch without the helper: the variable is what it reads first
        return os.environ.get("TORCHINDUCTOR_CACHE_DIR")


def _has_triton():
    """Whether torch.compile can make GPU kernels here (Triton installed for this GPU)."""
    try:
        from torch.utils._triton import has_triton
        return has_triton()
    except Exception:  # a torch without the helper, or a broken Triton install: stay eager
        return False

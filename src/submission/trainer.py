"""Training loop of the assignment, after karpathy/minGPT's trainer as forked by CS224N.

AdamW over two parameter groups, gradient clipping, and the course's learning-rate schedule:
a linear warm-up over `warmup_tokens`, then a cosine over `final_tokens`, floored at 10% of the
rate (see `lr_multiplier`). Nothing here is specific to the task: any dataset of
(x, y) id tensors and any model returning (logits, loss) trains.

Schedule quirks kept from the course, so runs match it: the token counter adds every target
position, PAD included (the course counts `(y >= 0).sum()`, true for all ids), and the
no-decay group matches names containing "bias" or "LayerNorm.weight"; this model's LayerNorms
are named ln1, ln2, ln_f, so only parameters named "...bias" skip weight decay (the LayerNorm
weights, pos_emb and the synthesizer's b2, the handout's b_2, are decayed); and the cosine's
progress is never clamped, so a run past `final_tokens` sees the rate climb back (the course's pretraining passes it at
epoch 202 of 650, is back at the full rate by epoch 404 and ends at 12%).

Beyond the course, for speed: the padding trim, length groups, packed rows, CPU threads, fused
AdamW, TF32, torch.compile and CUDA step graphs, none of which changes the loss and gradients of a batch
beyond the order of float sums, TF32's rounding and which dropout masks are drawn; fastpath.py
decides which a run gets and says what each measured (`fast=False` in the config turns them all off,
giving the course's loop that src/bench.py measures against; attention.py has the model's part).

Beyond the course, for scale: DistributedDataParallel under torchrun (WORLD_SIZE > 1), nccl on CUDA,
gloo on CPU. Each rank takes batch_size // world_size rows of every global batch
(DistributedSampler, no shuffle, so global batches are the single-process ones), per-rank losses are
weighted by their share of the global batch's counted targets so the gradient is the single-process
one, the schedule's token counter counts the global batch, and only rank 0 writes the log and the
checkpoint (and shows progress). `utils.is_main_process()` tells callers which process should write
files. Each example's span corruption is drawn under a seed of its own (draws.py), so the rank making it
draws what one process draws; dropout masks are each rank's own. tests/test_ddp.py checks 2 gloo processes
against 1, span-corruption pretraining among them, without dropout. Exact when the process count divides the
dataset's size; otherwise DistributedSampler repeats up to N - 1 of its first rows to fill the last
global batch (the 2,938 items of wiki.txt's dataset, its 2,937 lines and the empty one after the
last newline, under 4 processes: 2 rows an epoch).

Beyond the course, for long runs: with `state_path`, the training state is saved at an epoch's end
every `state_every` seconds, and `resume=True` continues an interrupted run from it (resume.py). A
run that will take long says so after its second epoch (`pace_line`): the course's progress bars
count one epoch at a time, and its CPU pretraining takes hours.

`Trainer.prepare()` returns the run's `TrainingRun` (wrapped model, optimizer, `step(x, y)`);
`train()` drives it over the data, src/bench.py times its steps.
"""
import atexit
import contextlib
import inspect
import json
import logging
import math
import os
import random
import sys
import time

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from tqdm import tqdm

from . import resume
from .batching import AUTO_GROUPS_MOST, length_group_count, length_groups, pack_rows, trim_padding
from .cli import TrainingDiverged
from .dataset import DataError
from .draws import EpochSampler, KeyedDraws, draws_key
from .files import NoRoom, cpu_state_dict, is_special_file, replace_file, replacement_mode
from .interrupts import interrupts_held
from .fastpath import (_has_fused_adamw, asked_groups, compile_setting, compiled_graphs_conflict, loader_workers,
                       packing_setting, packs_cheaper, skipped_target, step_graphs_need)
from .params import nonfinite
from .threads import CpuThreads
from .utils import atomic_torch_save, distributed_env, get_device

logger = logging.getLogger(__name__)  # the course's: it logs "saving PATH" and "test loss: X" at INFO


class TrainerConfig:
    """Optimisation settings; any keyword becomes an attribute."""
    max_epochs = 10
    batch_size = 64
    learning_rate = 3e-4
    betas = (0.9, 0.95)
    grad_norm_clip = 1.0
    weight_decay = 0.1  # every parameter whose name lacks "bias" (the course's rule; its LayerNorm name matches none)
    # learning rate decay params: linear warmup followed by cosine decay to 10% of original
    lr_decay = False
    warmup_tokens = 375e6  # these two numbers come from the GPT-3 paper, but may not be good defaults elsewhere
    final_tokens = 260e9   # (where the cosine reaches 0; of the tokens past warm-up, the 10% floor holds from
    #                        79.5% to 120.5% of the way there, and the unclamped cosine climbs back after)
    # checkpoint settings
    ckpt_path = None
    num_workers = 0  # for DataLoader
    # a TensorBoard SummaryWriter (or anything with add_scalar), as the course's later editions take:
    # train/loss and train/lr at each logged step (None: none)
    writer = None
    # beyond the course: a JSON-lines file of per-step loss and learning rate (None: no log), written
    # as <log_path>.partial while training and renamed to log_path when training ends
    log_path = None
    # beyond the course, speed (fastpath.py): none of these but amp (bf16) changes a batch's loss and gradients,
    # beyond the order of float sums, TF32's rounding and which dropout masks are drawn
    ignore_index = "auto"  # the target id the model's loss skips; "auto": the model's loss_ignore_index (this
    #                        GPT's PAD, 0), and for a model without one every target counts (no trim, no groups)
    trim_padding = True   # drop trailing columns whose targets are all ignore_index
    length_groups = "auto"  # rows grouped by length, each group cut to its own width (length_group_count)
    pack = "auto"         # rows packed end to end into fewer, fuller rows (batching.pack_rows): "auto" on the CPU
    #                       where that costs less than the length groups (packing_setting, packs_cheaper)
    num_threads = None    # CPU threads; None: threads.CpuThreads follows the cores other processes leave free
    amp = False           # bf16 autocast (off: slower and less stable here, see fastpath.py)
    compile = "auto"      # torch.compile: "auto", False, True, a mode or a backend name (compile_setting)
    step_graphs = False   # one CUDA GPU: replay whole steps (clip and AdamW included) as CUDA graphs (graphs.py)
    fast = True           # False: the course's loop (no trim, per-tensor AdamW, no TF32/autocast/compile); the
    #                       course's computation also needs GPTConfig(fast_attention=False) (run.py --reference_train)
    # beyond the course, long runs (resume.py): the training state, saved at an epoch's end every
    # state_every seconds and removed when training ends (None: never saved); resume: continue from it
    state_path = None
    state_every = 300.0
    resume = False
    seed = None  # the seed of the run's random streams (run.py --seed), recorded in the state for --resume's check
    start_params = None  # what the model's weights started as (run.py: a finetuning's --reading_params_path, by its
    #                      sha256), recorded in the state: --resume refuses a state of another start (resume.py)

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)


class _WithDefaults:
    """A config object lacking some of TrainerConfig's fields (a program's own class holding only the
    course's eleven, say), read through: its own attributes first, TrainerConfig's defaults after.
    Attributes set on it are set on the object itself."""

    def __init__(self, config):
        object.__setattr__(self, "_config", config)

    def __getattr__(self, name):
        config = object.__getattribute__(self, "_config")
        try:
            return getattr(config, name)
        except AttributeError:
            return getattr(TrainerConfig, name)

    def __setattr__(self, name, value):
        setattr(self._config, name, value)


def with_defaults(config):
    """`config` itself if it has every TrainerConfig field (a TrainerConfig always does), else a
    _WithDefaults view of it."""
    fields = [name for name in vars(TrainerConfig) if not name.startswith("_")]
    return config if all(hasattr(config, name) for name in fields) else _WithDefaults(config)


def lr_multiplier(tokens, config):
    """The course's schedule: the factor on learning_rate after `tokens` target positions."""
    if tokens < config.warmup_tokens:
        return float(tokens) / float(max(1, config.warmup_tokens))
    progress = float(tokens - config.warmup_tokens) / float(max(1, config.final_tokens - config.warmup_tokens))
    return max(0.1, 0.5 * (1.0 + math.cos(math.pi * progress)))


def diverged_message(row, config, partial_log, bad=(), step=None):
    """The one-line error of a run whose loss became NaN or infinite at logged `row`, or (row None) whose params
    `bad` (their names) did at the update of `step`, its last or an epoch's last before a checkpoint."""
    where = f"; the loss log up to it is {partial_log_path(config.log_path)}" if partial_log else ""
    if row is None:
        what = (f"the params are NaN or infinite after the update of step {step} ({bad[0]}"
                + (f" and {len(bad) - 1} more tensors" if len(bad) > 1 else "") + ")")
    else:
        what = (f"the training loss is {row['loss']} at step {row['step']} (epoch {row['epoch']}, learning rate "
                f"{row['lr']:.3g})")
    return (f"{what}: training stopped and no params were written{where}; lower --learning_rate "
            f"(this run's is {config.learning_rate:g})")


PACE_LINE_SECONDS = 300  # runs with less than this left after their second epoch print no pace line


def duration_text(seconds):
    """`seconds` as a person reads a long wait: "about 4 h 05 min", "about 12 min", "under a minute"."""
    minutes = int(round(seconds / 60))
    if minutes < 1:
        return "under a minute"
    return f"about {minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"about {minutes} min"


def pace_line(epoch, epoch_seconds, max_epochs, resumable=None):
    """The line a long run prints after epoch `epoch` (1-based) took `epoch_seconds`: how long its
    remaining epochs take at that pace; None when under PACE_LINE_SECONDS or none are left.
    `resumable`: the seconds between saves of its training state, when it saves one."""
    left = max_epochs - epoch
    remaining = left * epoch_seconds
    if left < 1 or remaining < PACE_LINE_SECONDS:
        return None
    line = (f"epoch {epoch} of {max_epochs} took {epoch_seconds:.1f} s: the remaining {left:,} "
            f"{'epoch takes' if left == 1 else 'epochs take'} {duration_text(remaining)} at this pace")
    if resumable is not None:
        when = "at every epoch's end" if resumable <= epoch_seconds else f"at an epoch's end every {_span(resumable)}"
        line += f" (its state is saved {when}: after Ctrl-C the same command with --resume goes on from there)"
    return line


def _span(seconds):
    """A save interval in words: "30 s", "5 min", "1 h 00 min"."""
    if seconds < 60:
        return f"{seconds:g} s"
    text = duration_text(seconds)
    return text[len("about "):] if text.startswith("about ") else text  # (str.removeprefix: Python 3.9+)


def _init_process_group(device):
    if dist.is_initialized():
        return
    dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
    atexit.register(lambda: dist.is_initialized() and dist.destroy_process_group())


def exit_past_gloo(run):
    """Run a process's `run()` (a command line's main, which may end in SystemExit) and exit with its status;
    a torchrun process that trained on the CPU (gloo) then leaves by os._exit, after flushing its streams.
    _end_together's barrier made an abort at exit rare, not impossible: in a full test suite run beside two
    busy loops on the 2-core Xeon, rank 1 of `tests/test_ddp.py`'s torchrun run still ended in "terminate called
    without an active exception" (a gloo worker thread taking the GIL as Python finalized, which ends that thread
    inside C++). Every file is written and closed by then, so skipping the interpreter's teardown loses nothing;
    any other process exits as usual."""
    def in_gloo_group():
        return dist.is_available() and dist.is_initialized() and dist.get_backend() == "gloo"
    try:
        run()
    except SystemExit as e:
        if not in_gloo_group():
            raise
        status = e.code
    else:
        if not in_gloo_group():
            return
        status = 0
    if status is not None and not isinstance(status, int):  # sys.exit("text"): printed, status 1, as Python does
        print(status, file=sys.stderr)
        status = 1
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: its status says so already
            pass
    os._exit(status or 0)


def _end_together():
    """A barrier at the end of a run's training, waited in with the GIL released. In torch 2.13 a collective
    issued in a backward pass (DDP's gradient all-reduce) keeps a Python object, the autograd engine's context,
    in the thread-local state it copies. gloo's worker thread frees it just after the result is out, taking
    the GIL; in a process that had begun to exit by then, that aborted the process ("terminate called without
    an active exception"): rank 1 in 9 of 469 2-process CPU runs here, ending while rank 0 still wrote the
    params, and torchrun then stopped rank 0. In the barrier the ranks wait for rank 0 to finish, and the
    workers have the GIL to free what they hold; the barrier's own collective keeps no Python object."""
    dist.barrier()


def state_saved(epoch, config):
    """Where an interrupted or failed run's --resume goes on from: the state saved after `epoch`."""
    return f"the training state after epoch {epoch} of {config.max_epochs} is in {config.state_path}"


def interrupted_note(config, saved_epoch, epoch, no_room=False):
    """What an interrupted run (Ctrl-C, SIGTERM) says of --resume, one line, or None (no state is kept: no
    `state_path`): the state it saved after `saved_epoch` (None: none yet), or that none was saved while it
    ran `epoch` (0-based), and whether the file there is an earlier interrupted run's. `no_room`: a save found no
    room, and it trained on without states."""
    if saved_epoch is not None:
        return f"{state_saved(saved_epoch, config)}: the same command with --resume continues from there"
    if not config.state_path:
        return None
    if os.path.exists(config.state_path):  # not replaced yet: the earlier run's
        return (f"this run saved no training state yet; {config.state_path} is still the earlier interrupted "
                f"run's, which --resume would continue")
    if no_room:
        return (f"no training state could be saved ({config.state_path}, as said): --resume has nothing to go on "
                f"from, run the same command to start over")
    if epoch + 1 < config.max_epochs:  # states are saved at the end of any epoch but the last
        first = ("at the first epoch's end" if config.state_every <= 0 else
                 f"at the first epoch's end {_span(config.state_every)} or more into the run")
        return (f"no training state was saved yet (it is saved {first}; --state_every sets when): --resume has "
                f"nothing to go on from, run the same command to start over")
    return None


def partial_log_path(path):
    """Where the loss log `path` is written while training: `<path>.partial`, beside the file a symbolic link
    names (the finished log replaces that file, and the link stays a link, as params and predictions do)."""
    return (os.path.realpath(path) if os.path.islink(path) else path) + ".partial"


class LossLog:
    """A training run's loss log, one JSON line a step. The params are written atomically into a folder
    made as needed; the log goes beside them, as <log>.partial while training, renamed over the old log
    (`publish`) only once training has ended, so an interrupted run leaves the previous log intact. A
    special file (/dev/null) is written straight, never renamed over. A write that fails (a full disk)
    stops the log, not the training: the part written is removed, its space back for the params.
    `path` None: no log, every call does nothing."""

    def __init__(self, path):
        self.path, self.file, self.direct = path, None, False
        if path:
            self.direct = is_special_file(path)
            # the folder of the file written: beside a link's file, where a link names one in a folder not made yet
            os.makedirs(os.path.dirname(os.path.abspath(path if self.direct else partial_log_path(path))),
                        exist_ok=True)
            self.file = open(path if self.direct else partial_log_path(path), "w", encoding="utf-8")

    @property
    def writing(self):
        """Whether there is a log and no write has failed."""
        return self.file is not None

    def write(self, text, flush=False):
        if self.file is None:
            return
        try:
            self.file.write(text)
            if flush:
                self.file.flush()
        except OSError as e:
            name = self.file.name
            with contextlib.suppress(OSError):
                self.file.close()  # (its flush fails again)
            self.file = None
            if not self.direct:
                with contextlib.suppress(OSError):
                    os.remove(name)
            tqdm.write(f"note: {name}: could not write the loss log ({e.strerror or e}); training goes on "
                       f"without it{'' if self.direct else ', and the part written is removed'}", file=sys.stderr)

    def close(self):
        """Flush and close, the log kept unless this last flush fails (a full disk shows here)."""
        if self.file is None or getattr(self.file, "closed", False):  # closed already: an interrupted run's
            return
        self.write("", flush=True)
        if self.file is not None:
            self.file.close()

    def kept_partial(self):
        """The `.partial` file an interrupted run leaves (after close), or None: no log, one written straight, one
        dropped after a failed write, or an empty one."""
        if self.file is None or self.direct or not os.path.isfile(self.file.name):
            return None
        return self.file.name if os.path.getsize(self.file.name) else None  # (stopped before a step: nothing to read)

    def publish(self):
        """The finished log over the old one (after close); nothing when it was dropped or written straight. A
        rename that fails (the folder moved or removed during training) is a note: training has ended."""
        if self.file is not None and not self.direct:
            partial = self.file.name
            target = partial[:-len(".partial")]  # the file a link names: the link stays
            try:  # with the mode of the log it replaces (one made 0600 stays so), as the params keep theirs
                os.chmod(partial, replacement_mode(target))
                replace_file(partial, target)  # (tried again on Windows while it is in use)
            except OSError as e:
                gone = not os.path.exists(partial)
                tqdm.write(f"note: {self.path}: the finished loss log could not be put in place ({e.strerror or e}"
                           f"{': its folder was moved or removed during training' if gone else ''}); training has "
                           f"ended without it", file=sys.stderr)


def adamw(groups, config, model):
    """torch's AdamW over parameter `groups` at config's learning_rate and betas; on the fast path (config.fast)
    fused, one kernel for all parameters, where torch has it for the device of `model`'s parameters (CUDA; on a
    CPU 2.5x faster than the per-tensor loop). StepGraphs needs it fused."""
    config = with_defaults(config)
    device_type = next(model.parameters()).device.type
    fused = {"fused": True} if config.fast and _has_fused_adamw(device_type) else {}
    return torch.optim.AdamW(groups, lr=config.learning_rate, betas=config.betas, **fused)


class Trainer:
    """The course's trainer: `train()` fits `model` to `train_dataset` by `config` (a TrainerConfig, or any
    object with some of its fields), printing `test_dataset`'s loss after each epoch when there is one."""

    # Where minGPT's own trainer differs (its subclass, mingpt-demo/mingpt/trainer.py, sets them): the course's
    # loop reads each epoch's examples in order (minGPT's in a new random order each epoch), and writes
    # ckpt_path after every epoch (minGPT's only when the test loss is the lowest yet, or without a test set)
    shuffle = False
    keep_best = False

    def __init__(self, model, train_dataset, test_dataset, config):
        self.model = model  # always the raw model: DDP and compile wrappers live only in a TrainingRun (prepare())
        self.train_dataset = train_dataset
        self.test_dataset = test_dataset
        self.config = with_defaults(config)  # a TrainerConfig is kept as it is
        self.device = get_device()
        self.rank, self.world_size, self.local_rank = distributed_env()
        if self.device == "cuda" and self.world_size > 1:
            gpus = torch.cuda.device_count()
            if self.local_rank >= gpus:  # torch's own words: "invalid device ordinal"
                raise DataError(f"torchrun started process {self.local_rank} of this machine, but it has "
                                f"{gpus} GPU{'s' if gpus != 1 else ''}: one process a GPU; give torchrun "
                                f"--nproc_per_node={gpus} or less")
            torch.cuda.set_device(self.local_rank)
            self.device = f"cuda:{self.local_rank}"
        self.model = self.model.to(self.device)
        self.tokens = 0
        self.record = None  # once trained: TrainingRun.record(), how the run computed

    @property
    def is_main(self):
        return self.rank == 0

    def save_checkpoint(self):
        if self.config.ckpt_path is not None and self.is_main:
            logger.info("saving %s", self.config.ckpt_path)
            atomic_torch_save(cpu_state_dict(self.model), self.config.ckpt_path)  # unwrapped: the course's keys

    def _optimizer(self, raw_model, config):
        no_decay = ["bias", "LayerNorm.weight"]
        params_decay = [p for n, p in raw_model.named_parameters() if not any(nd in n for nd in no_decay)]
        params_nodecay = [p for n, p in raw_model.named_parameters() if any(nd in n for nd in no_decay)]
        optim_groups = [
            {"params": params_decay, "weight_decay": config.weight_decay},
            {"params": params_nodecay, "weight_decay": 0.0},
        ]
        return adamw(optim_groups, config, raw_model)

    def _loader(self, data, config, split="train"):
        """`data`'s batches for this process. The fast path draws each example under its own seed (draws.py: the
        same examples whichever rank or worker makes them; the run's key is set on `loader.dataset` before the first
        batch); the course's loop (fast=False) reads it as the course's DataLoader does, each example from the
        random stream of the process making it, in turn."""
        workers = loader_workers(config.num_workers, self.device.split(":")[0])
        sampler = None
        if self.world_size > 1:  # (set_epoch gives a shuffled epoch its own order, the same on every rank; the run's
            # seed, as a single process's order follows torch's seed)
            sampler = DistributedSampler(data, num_replicas=self.world_size, rank=self.rank, shuffle=self.shuffle,
                                         seed=config.seed or 0)
        shuffle = self.shuffle and sampler is None
        if config.fast:
            data, sampler, shuffle = KeyedDraws(data, split), EpochSampler(data, sampler, self.shuffle), False
        return DataLoader(data, batch_size=self._rank_batch_size(config), shuffle=shuffle, sampler=sampler,
                          num_workers=workers, persistent_workers=workers > 0,
                          pin_memory=self.device.startswith("cuda"))

    def _rank_batch_size(self, config):
        if config.batch_size % self.world_size:
            raise ValueError(f"batch_size {config.batch_size} is not divisible by the {self.world_size} "
                             f"processes; pick a multiple of {self.world_size}")
        return config.batch_size // self.world_size

    def prepare(self, steps=None):
        """Set up a run (process group, threads, wrappers, optimizer) and return its `TrainingRun`;
        `steps`, the run's optimisation steps, if known, feeds compile="auto".

        `train()` drives it over the loaders; src/bench.py times its `step` on fixed batches. A fast run on CUDA
        turns TF32 on for the process, as training needs it: `train()` sets it back when it ends, a caller of
        `prepare()` alone owns that setting (the bench sets it before each path it times).
        """
        return TrainingRun(self, steps)

    def train(self, after=None):
        """Train for config.max_epochs. `after()`, if given, runs once training has ended, just before
        the loss log is renamed into place, with Ctrl-C held across both: helper.train writes the params
        there, so an interrupt leaves the old params and the old log, or the new of both.

        TF32 and torch's CPU thread count are the run's own: however it ends, they are set back, so
        that evaluation after it (demo.py, a notebook) runs as it would have without it."""
        tf32 = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
        threads = torch.get_num_threads()
        try:
            return self._train(after)
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
            if torch.get_num_threads() != threads:
                torch.set_num_threads(threads)

    def _train(self, after):
        """The course's loop, at its heart: for each epoch, `run_epoch("train")` (a `run.step` per batch, the loss
        logged), `run_epoch("test")` when there is a test set, then `save_checkpoint`. Around it, beyond the
        course: resuming from a saved state (before the loop) and saving one (after an epoch), the loss log
        (`flush`: the losses fetched from the device about once a second), the pace line after the second
        epoch, and what an interrupted or failed run says; `after` (helper.train's params write) runs once
        the loop has ended, with Ctrl-C held."""
        config = self.config
        loaders = {"train": self._loader(self.train_dataset, config, "train")}
        if self.test_dataset is not None:
            loaders["test"] = self._loader(self.test_dataset, config, "test")
        state_path = config.state_path
        settings = (resume.run_settings(self.model, config, self.train_dataset, self.test_dataset)
                    if state_path else None)
        state = None
        if config.resume:
            if not state_path:
                raise ValueError("resume=True needs state_path, the training state to continue from")
            state = resume.load(state_path, settings)
            with resume.putting(state_path, "model"):
                self.model.load_state_dict(state["model"])
        elif state_path and self.is_main and os.path.exists(state_path):
            tqdm.write(f"note: {state_path} holds an interrupted run's training state; this run starts over and "
                       f"replaces it at its first save", file=sys.stderr)
        keyed = [loader.dataset for loader in loaders.values() if isinstance(loader.dataset, KeyedDraws)]
        key = state["rng"].get("draws") if state is not None else None  # a state of an earlier version has none
        if key is None and keyed:  # (the course's loop draws nothing more from the stream than its examples do)
            key = draws_key()  # drawn before prepare() gives ranks above 0 their own streams
        run = self.prepare(steps=len(loaders["train"]) * config.max_epochs)
        if keyed and self.world_size > 1:  # rank 0's, as one process's (an unseeded program's ranks drew other keys)
            shared = torch.tensor([key], dtype=torch.int64, device=self.device if run.cuda else "cpu")
            dist.broadcast(shared, 0)
            key = int(shared)
        for data in keyed:
            data.key = key
        if state is not None:
            with resume.putting(state_path, "optimizer state"):
                run.load_optimizer_state(state["optimizer"])
            with resume.putting(state_path, "random state"):
                resume.set_rng_state(state["rng"])  # nothing draws from here to the first resumed epoch
        log = LossLog(config.log_path if self.is_main else None)
        start = time.time()
        step, first_epoch, best_loss = 0, 0, float("inf")
        self.tokens = 0  # counter used for learning rate decay
        log_lines = [] if state_path and self.is_main else None  # the log so far, for the training state
        saved_epoch = None  # the epoch after which the state on disk was saved, by this run or the resumed one
        no_room = False  # whether a state save found no room, and states were given up
        if state is not None:
            step, first_epoch, best_loss = state["step"], state["epoch"], state["best_loss"]
            saved_epoch = first_epoch
            self.tokens, start = state["tokens"], start - state["elapsed"]
            if log_lines is not None:
                log_lines = list(state["log_lines"])
                log.write("".join(line + "\n" for line in log_lines))
            run.distinct_rank_streams()
            if self.is_main:
                tqdm.write(f"resuming from {state_path}: epoch {first_epoch + 1} of {config.max_epochs}, "
                           f"after step {step:,}")
                note = resume.threads_note(state, torch.get_num_threads() if run.threads is not None else None)
                if note:
                    tqdm.write(note, file=sys.stderr)
            state = None  # the weights and moments are in place: free the copies
        pending = []  # logged rows whose loss is still a device tensor
        pending_empty = []  # for each, whether its batch had nothing to learn from (run.empty: a bool or device tensor)
        empty_noted = []  # the first step whose batch had no counted target, once said
        writer = config.writer if self.is_main else None
        test_batches = len(loaders["test"]) if "test" in loaders else 0

        def course_step(row):
            """The course's `step` at logged `row`, the writer's global step: the course counts every batch from
            0, its test epochs' batches too, and passes the count before the batch (the log's steps count
            training batches from 1), so that TensorBoard curves of the two runs lie on the same steps."""
            return row["step"] - 1 + (row["epoch"] - 1) * test_batches

        last_flush = last_write = time.time()
        epoch_start = 1  # step number of the epoch's first batch (the progress bar's iter 0)

        def flush(pbar):
            nonlocal last_flush, last_write
            last_flush = time.time()
            if not pending:
                return
            values = torch.stack([row["loss"] for row in pending]).tolist()  # (len(pending),): one sync, not one a row
            empty = pending_empty  # bools under step graphs, else device tensors (the gradient's norm is 0), read
            if torch.is_tensor(empty[0]):  # with the losses
                empty = torch.stack(empty).tolist()
            for row, value, nothing in zip(pending, values, empty):
                row["loss"] = round(value, 6)
                line = json.dumps(row)
                log.write(line + "\n")
                if writer is not None:  # at the course's global step (course_step), not the log's
                    writer.add_scalar("train/loss", value, course_step(row))
                    writer.add_scalar("train/lr", row["lr"], course_step(row))
                if log_lines is not None:
                    log_lines.append(line)
                if math.isfinite(value):
                    pass
                elif nothing:  # no target counted: the loss is 0/0, nan, every gradient 0 (the course trains on)
                    if not empty_noted and self.is_main:
                        empty_noted.append(row["step"])
                        tqdm.write(f"note: the batch of step {row['step']} has no target its loss counts: its loss is "
                                   f"nan and its gradients 0; a dataset none of whose targets count trains nothing",
                                   file=sys.stderr)
                else:  # every rank sees the same global loss (and gradient), so all stop here
                    raise TrainingDiverged(diverged_message(row, config, log.writing and not log.direct))
            if log.writing and last_flush - last_write >= 1.0:  # the file too, about once a second,
                log.write("", flush=True)                       # so a run can be plotted as it goes
                last_write = last_flush
            row = pending[-1]
            # drawn at the bar's next update (at most once a second, mininterval), not at once: a forced
            # redraw a step wrote a line a step to a log file (the CPU demo's log: 620 KB). The loss as the
            # course's bar shows it, from the value itself: the log's 6 digits rounded again to 5 can end
            # one unit higher (3.0681648 logged as 3.068165, shown 3.06817 where the course shows 3.06816)
            pbar.set_description(f"epoch {row['epoch']} iter {row['step'] - epoch_start}: "
                                 f"train loss {values[-1]:.5f}. lr {row['lr']:e}", refresh=False)
            pending.clear()
            pending_empty.clear()

        def run_epoch(split, epoch):
            nonlocal step, epoch_start
            is_train = split == "train"
            epoch_start = step + 1
            run.model.train(is_train)
            loader = loaders[split]
            if hasattr(loader.sampler, "set_epoch"):  # EpochSampler: each example's draws are keyed by it (draws.py)
                loader.sampler.set_epoch(epoch)
            if not is_train:
                total, batches = None, 0
                with torch.no_grad():
                    for x, y in loader:
                        value = run.loss(x, y)[1]
                        total = value if total is None else total + value
                        batches += 1
                return float(total) / batches if batches else float("nan")
            pbar = None
            try:
                with interrupts_held():  # a Ctrl-C inside tqdm's __init__ left a bar made in part, whose __del__
                    # printed "Exception ignored ... no attribute 'pos'" at exit: held, it stops the run just after
                    pbar = tqdm(loader, total=len(loader), mininterval=1.0, disable=not self.is_main)
                for x, y in pbar:
                    value, lr = run.step(x, y)
                    step += 1
                    pending.append({"step": step, "epoch": epoch + 1, "tokens": int(self.tokens), "loss": value,
                                    "lr": lr, "time": round(time.time() - start, 3)})
                    pending_empty.append(run.empty)
                    # on a GPU, fetch losses about once a second; under DDP every 64 steps instead, the same
                    # steps on every rank, so that all see a diverged loss at the same step and stop together
                    # (one rank stopping alone leaves the others waiting in the next all-reduce)
                    due = (step % 64 == 0) if self.world_size > 1 else time.time() - last_flush >= 1.0
                    if not run.cuda or due:
                        flush(pbar)
                flush(pbar)
            except BaseException:  # the bar closed before the run says why it stopped: tqdm's iterator closes it
                if pbar is not None:  # only once it has begun (a Ctrl-C just before, or one held while the bar
                    pbar.close()      # was made, left it open), or when the iterator is collected, later: the
                raise                 # lines said meanwhile landed on the bar's line, and it was drawn after them

        def params_finite():
            """TrainingDiverged where the params (not buffers: a model may keep an additive -inf mask) hold a NaN or an
            infinite value. The loss is checked at each step, before its update, so the last update is not: a run
            diverging there wrote NaN params over good ones, and exited 0."""
            bad = nonfinite(dict(self.model.named_parameters()))
            if bad:
                raise TrainingDiverged(diverged_message(None, config, log.writing and not log.direct, bad, step))

        last_save = time.time()
        epoch = first_epoch  # the epoch running (0-based), for the interrupt's message
        try:
            for epoch in range(first_epoch, config.max_epochs):
                epoch_began = time.time()
                run_epoch("train", epoch)
                test_loss = None
                if self.test_dataset is not None:
                    test_loss = run_epoch("test", epoch)
                    if self.is_main:
                        tqdm.write(f"epoch {epoch + 1}: test loss {test_loss:.5f}")
                        logger.info("test loss: %f", test_loss)
                # the course's loop checkpoints after every epoch, a test set or not; minGPT's own (keep_best)
                # only while the test loss falls. The best is recorded in the state either way
                improved = test_loss is None or test_loss < best_loss
                if test_loss is not None:
                    best_loss = min(best_loss, test_loss)
                if self.config.ckpt_path is not None and (improved or not self.keep_best):
                    params_finite()  # (the epoch's last update is checked by no loss)
                    self.save_checkpoint()
                due = time.time() - last_save >= config.state_every  # the state, for --resume
                if log_lines is not None and due and epoch + 1 < config.max_epochs:
                    # held to the note's record of it: a Ctrl-C just after the state's rename named the one before
                    with interrupts_held():
                        try:
                            resume.save(state_path, model=self.model, optimizer=run.optimizer, settings=settings,
                                        epoch=epoch + 1, step=step, tokens=self.tokens, best_loss=best_loss,
                                        elapsed=time.time() - start, log_lines=log_lines, draws=key,
                                        threads=run.threads.counts() if run.threads is not None else None)
                        except NoRoom as e:  # the end was checked to fit (run.check_room_for): go on, saving no
                            kept = ("" if saved_epoch is None else  # more states; the one before is kept till then
                                    f" ({state_saved(saved_epoch, config)}, kept for --resume until the params are "
                                    f"written)")
                            tqdm.write(f"note: {e}; training goes on without saving its state{kept}",
                                       file=sys.stderr)
                            log_lines, no_room = None, True
                        except DataError as e:  # a read-only folder: the state saved before is whole
                            if saved_epoch is None:
                                raise
                            raise DataError(f"{e}; {state_saved(saved_epoch, config)}: once it can be written there, "
                                            f"the same command with --resume trains from there") from None
                        else:
                            last_save, saved_epoch = time.time(), epoch + 1
                if epoch == first_epoch + 1 and self.is_main:  # the first epoch may compile or warm up
                    line = pace_line(epoch + 1, time.time() - epoch_began, config.max_epochs,
                                     resumable=config.state_every if log_lines is not None else None)
                    if line:
                        tqdm.write(line)
        except KeyboardInterrupt:
            log.close()
            kept = log.kept_partial()
            if kept and self.is_main:  # no output is half-written, but this file is there: said, not a surprise
                tqdm.write(f"its loss log so far is in {kept} (plots.py reads it; the next run of this command "
                           f"replaces it); the previous log, if any, is unchanged", file=sys.stderr)
            note = interrupted_note(config, saved_epoch, epoch, no_room) if self.is_main else None
            if note:  # (the pace line promised --resume), last: what to do next
                tqdm.write(note, file=sys.stderr)
            raise
        finally:
            log.close()
        params_finite()
        self.record = run.record()  # how it computed, for what `after` writes beside the params (run.py: their card)
        with interrupts_held():  # an interrupted run leaves its .partial log and the previous log intact
            if after is not None:
                try:
                    after()
                except DataError as e:  # the params could not be written (a full disk): the state saved is kept
                    if saved_epoch is None or not self.is_main:
                        raise
                    raise DataError(f"{e}; {state_saved(saved_epoch, config)}: once the params can be written to this "
                                    f"path, the same command with --resume trains from there") from None
            log.publish()
            if state_path and self.is_main and os.path.exists(state_path):
                os.remove(state_path)  # training has ended: nothing left to resume
        if self.world_size > 1 and not run.cuda:  # the ranks end together, nothing of theirs left in gloo's hands
            _end_together()
        if run.threads is not None and self.is_main:  # on CPU the count changes the last bits of results
            tqdm.write(f"trained with {run.threads.describe()}")


class TrainingRun:
    """One training run's machinery: the wrapped model, the optimizer, and the step.

    Built by `Trainer.prepare()`. `model` is what runs (DDP and/or compile wrappers around the
    trainer's raw model); parameters, checkpoints and saved params are the raw model's.
    """

    def __init__(self, trainer, steps=None):
        self.trainer = trainer
        config = self.config = trainer.config
        self.fast = config.fast
        self.device = trainer.device
        self.cuda = self.device.startswith("cuda")
        self.world_size = trainer.world_size
        raw_model = trainer.model
        if self.world_size > 1:
            _init_process_group(self.device)
            self.distinct_rank_streams()
        self.threads = CpuThreads(fixed=config.num_threads) if self.device == "cpu" else None
        if self.threads is not None:
            self.threads.start()
        if self.cuda and self.fast:
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        model = raw_model
        if self.world_size > 1:
            from torch.nn.parallel import DistributedDataParallel
            # buffers are the constant causal masks: no need to sync them every forward (torch 2.13 renamed
            # the flag, warning at every run given the old name)
            newer = "forward_sync_buffers" in inspect.signature(DistributedDataParallel.__init__).parameters
            model = DistributedDataParallel(raw_model, device_ids=[trainer.local_rank] if self.cuda else None,
                                            **{"forward_sync_buffers" if newer else "broadcast_buffers": False})
        compile_kwargs = compile_setting(config, self.device, steps, self.world_size) if self.fast else None
        if config.step_graphs:  # checked before the optimizer is built
            need = step_graphs_need(self.device, self.world_size, self.fast,
                                    compile_kwargs.get("mode") if compile_kwargs else None)
            if need is not None:
                raise ValueError(f"step_graphs needs {need}; turn it off or change that setting")
        conflict = compiled_graphs_conflict(asked_groups(config), self.device, (compile_kwargs or {}).get("mode"))
        if conflict is not None:
            raise ValueError(conflict)
        self.compiled = compile_kwargs is not None
        if self.compiled:
            if config.compile == "auto" and trainer.is_main and steps is not None:
                tqdm.write(f"compiling the model ({compile_kwargs}) for this {steps:,}-step run: the first steps "
                           f"take about a minute, the rest run faster (--no_compile: train eagerly)")
            # dynamic: one graph for every batch shape. Left to dynamo's automatic dynamic shapes, a run compiled
            # three times (its first width, then any width, then also the last batch's fewer rows): on a 2-core
            # AMD EPYC the course's first pretraining epoch took 114.0 s against 77.1, the later ones the same
            model = torch.compile(model, dynamic=True, **compile_kwargs)
        self.model = model
        self.multiple = 8 if (self.cuda or self.compiled) else 1  # trimmed widths, for kernels and recompiles
        self.amp = bool(config.amp) and self.fast
        self.optimizer = trainer._optimizer(raw_model, config)
        self.ignore_index = skipped_target(config, raw_model)
        self.packing = packing_setting(config, raw_model, config.step_graphs, self.device, self.compiled,
                                       self.world_size)
        self.graphs = None
        if config.step_graphs:
            self.use_step_graphs()

    def record(self):
        """How this run computed, beyond its settings: what else repeating it takes (run.py puts it in the card
        beside the params). `threads`: each CPU thread count it used (the last bits differ between counts)."""
        return {"device": self.device, "processes": self.world_size,
                "threads": self.threads.counts() if self.threads is not None else None,
                "fast": self.fast, "compiled": self.compiled, "amp": self.amp, "packing": self.packing,
                "length_groups": self.config.length_groups, "step_graphs": bool(self.config.step_graphs),
                "torch": torch.__version__}

    def distinct_rank_streams(self):
        """Under torchrun, distinct dropout draws on each rank (rank 0 keeps its own), and a Python stream of its
        own (the course's loop's span corruptions; the fast path keys each example's, draws.py), each derived from
        the stream the rank has (after a resume, rank 0's saved one)."""
        rank = self.trainer.rank
        if self.world_size > 1 and rank > 0:
            torch.manual_seed((int(torch.empty((), dtype=torch.int64).random_()) + 7919 * rank) % 2 ** 63)
            random.seed(random.getrandbits(64) + rank)

    def load_optimizer_state(self, state):
        """AdamW's state from a saved training state (resume.py), before the first step; the groups keep
        this run's kernel flags (fused, foreach) and the step graphs' terms. The saved groups take them
        before loading, as the loaded groups are the saved ones: torch also puts each `step` counter
        where their flags say (beside the param if fused or capturable, else on the CPU), so an unfused
        CPU run's state resumed fused on CUDA would keep its counters on the CPU and fail at the first step."""
        if self.graphs is not None and self.graphs.captures:
            raise RuntimeError("load the optimizer state before the first step: captured graphs read the old one")
        flags = [{k: g[k] for k in ("fused", "foreach", "capturable", "differentiable") if k in g}
                 for g in self.optimizer.param_groups]
        state = dict(state, param_groups=[dict(saved, **kept) for saved, kept in zip(state["param_groups"], flags)])
        self.optimizer.load_state_dict(state)
        if self.graphs is not None:
            self.graphs.own_param_groups()

    def use_step_graphs(self, capture=None):
        """Replay each step as CUDA graphs (graphs.StepGraphs); `capture`: instead of graphs.capture_cuda, a
        stand-in that re-runs the step's Python (tests/test_graphs.py, on the CPU)."""
        from .graphs import StepGraphs
        value = self.config.length_groups
        most = value if isinstance(value, int) and not isinstance(value, bool) else AUTO_GROUPS_MOST
        self.graphs = StepGraphs(self.model, self.optimizer, self.config.grad_norm_clip, self.device,
                                 groups=most, autocast=self._autocast, capture=capture)

    def _autocast(self):
        if not self.amp:
            return contextlib.nullcontext()
        # no cast cache under step graphs: captures need it off (as make_graphed_callables checks)
        return torch.autocast(device_type=torch.device(self.device).type, dtype=torch.bfloat16,
                              cache_enabled=self.graphs is None)  # on MPS too (it cast nothing there as "cpu")

    def groups(self, y):
        """The length groups (`length_groups`' list) a step computes target batch y (B, T) in; None: one
        group, cut by the padding trim. Groups are a finer trim: off with it (trim_padding=False)."""
        if not (self.fast and self.config.trim_padding) or self.ignore_index is None:
            return None
        count = length_group_count(self.config, y.size(0), self.device, self.world_size, self.compiled)
        return length_groups(y, self.ignore_index, count, self.multiple) if count > 1 else None

    def shapes(self, x, y):
        """[(rows, columns)] of the forwards a step computes on batch x, y (B, T)."""
        packed = self.pack(x, y)
        return [packed.shape] if packed is not None else self.unpacked_shapes(y)

    def unpacked_shapes(self, y):
        """[(rows, columns)] of the forwards that compute target batch y (B, T) unpacked (`plan`)."""
        return [(y.size(0) if rows is None else len(rows), width) for rows, width, _ in self.plan(y)]

    def pack(self, x, y):
        """Batch x, y (B, T) packed (batching.Packed) when this run packs and some target is counted, and
        under pack="auto" only when the packed rows cost less than the unpacked forwards (`packs_cheaper`);
        else None. On CUDA or compiled, widths and row counts are multiples of 8: few shapes, few graphs."""
        if not self.packing:
            return None
        packed = pack_rows(x, y, self.ignore_index, self.multiple, self.multiple)
        if packed is not None and self.packing == "auto":
            if not packs_cheaper(packed.shape, self.unpacked_shapes(y)):
                return None
        return packed

    def loss(self, x, y):
        """(loss to backpropagate, the global batch's loss, detached) for a batch x, y (B, T) on CPU."""
        packed = self.pack(x, y)
        if packed is not None:  # one forward of the packed rows, each piece at its own positions
            packed = packed.to(self.device, non_blocking=self.cuda)  # on CUDA page-locked first: no wait
            x, y = packed.x, packed.y
            where = dict(positions=packed.positions, segments=packed.segments)
        else:
            parts = self.plan(y)
            if parts[0][0] is not None:  # one process: the batch's mean loss as the groups' means weighted by share
                total = None
                for rows, width, share in parts:
                    # a row selection is a temporary tensor: copied without waiting only by CUDA, which stages a
                    # pageable source before returning (an MPS copy may read it after it is freed)
                    xg = x[rows, :width].to(self.device, non_blocking=self.cuda)  # (rows, width)
                    yg = y[rows, :width].to(self.device, non_blocking=self.cuda)
                    with self._autocast():
                        _, loss = self.model(xg, yg)
                    loss = loss.mean() * share
                    total = loss if total is None else total + loss
                return total, total.detach()
            n = parts[0][1]  # the whole batch, cut by the padding trim
            x = x.to(self.device, non_blocking=self.cuda)[:, :n].contiguous()
            y = y.to(self.device, non_blocking=self.cuda)[:, :n].contiguous()
            where = {}
        with self._autocast():
            _, loss = self.model(x, y, **where)
            loss = loss.mean()
        if self.world_size == 1:
            return loss, loss.detach()
        # the global batch's loss: each rank's mean weighted by its share of the counted targets
        # (a model without loss_ignore_index: its cross_entropy skips -100 by default, whatever else it counts)
        skipped = -100 if self.ignore_index is None else self.ignore_index
        counted = (y != skipped).sum().to(torch.float32)
        # a rank whose rows have no counted target: its mean is 0/0, NaN, which the weight 0 kept (NaN * 0) in the
        # all-reduced gradient and loss; it contributes nothing, as its rows do in one process's batch
        loss = torch.where(counted > 0, loss, torch.zeros_like(loss))
        stats = torch.stack([loss.detach().float() * counted, counted])  # (2,): summed loss, counted targets
        dist.all_reduce(stats)
        total = stats[1].clamp_min(1.0)
        # a global batch without a counted target: nan, as one process's 0/0 mean (it was logged as 0.0)
        return loss * (counted * self.world_size / total), torch.where(stats[1] > 0, stats[0] / total, float("nan"))

    def plan(self, y):
        """[(row indices or None for all rows, columns, share of the loss)]: the forwards a step computes
        on target batch y (B, T), the length groups or else the whole batch cut by the padding trim."""
        parts = self.groups(y)
        if parts is not None:
            return parts
        trim = self.fast and self.config.trim_padding
        return [(None, trim_padding(y, self.ignore_index, self.multiple) if trim else y.size(1), 1.0)]

    def step(self, x, y):
        """One optimisation step on batch (x, y): returns (the loss, detached; the learning rate now).
        `self.empty` then says whether the batch had nothing to learn from, no target its loss counts, which makes
        the loss nan (0/0) and every gradient 0: the gradient's norm is 0 (a device tensor, read with the loss;
        under DDP the global batch's), or under step graphs every target is the skipped id (a bool)."""
        config = self.config
        if self.graphs is not None:
            value = self.graphs.step(x, y, self.plan(y))
            self.empty = not bool((y != (-100 if self.ignore_index is None else self.ignore_index)).any())
        else:
            loss, value = self.loss(x, y)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            # (its norm tells a batch with nothing counted from a diverged one, whatever the model's loss skips: a
            # subclass's own forward declares no ignore_index)
            self.empty = torch.nn.utils.clip_grad_norm_(self.model.parameters(), config.grad_norm_clip) == 0
            self.optimizer.step()
        if self.threads is not None:
            self.threads.update()
        if config.lr_decay:
            # the course's count: every target position of the batch, PAD included, but not a negative
            # target (-100, cross_entropy's default ignore_index). Under DDP, every position of the global
            # batch: the ranks must agree on the rate without another exchange a step (the same count for
            # targets of 0 and up, as the course's and the notebook's are)
            if self.world_size > 1:
                self.trainer.tokens += y.numel() * self.world_size
            else:
                self.trainer.tokens += int((y >= 0).sum())
            lr = config.learning_rate * lr_multiplier(self.trainer.tokens, config)
            if self.graphs is not None:
                self.graphs.set_lr(lr)  # a device tensor the captured AdamW reads
            else:
                for param_group in self.optimizer.param_groups:
                    param_group["lr"] = lr
        else:
            lr = config.learning_rate
        return value, lr

"""Speed benchmark of the assignment's GPT, reference paths against fast paths, on the machine at hand.

    ./run.sh bench                  # course model size and batch (a few minutes on a 2-core CPU)
    ./run.sh bench --quick          # the same summary in under a minute on a 2-core CPU (batch 32)
    ./run.sh bench --data-dir COURSE_DATA   # the course's data, when it is there
    ./run.sh bench --paths packed eager     # beside the reference and the fast path, only these paths
    ./run.sh bench --profile        # also where a fast step's time goes: its kernels or operators
    ./run.sh bench --params src/submission/vanilla.finetune.params   # evaluate a finetuned model
    ./run.sh bench --params src/submission/synthesizer.finetune.params --variant synthesizer

In one run it prints:
- training: optimisation steps of the course's model (4 layers, 8 heads, 256 dims, block 128)
  on span-corruption pretraining batches, for both variants. The reference is the course's
  computation (explicit masked-softmax attention, full padded batches, per-tensor AdamW, fp32);
  the fast path is the project's default for a pretraining run (attention.py's fast path, padding
  trim, fused AdamW; on the CPU length groups, or packed rows for a batch where they cost less; on
  CUDA TF32 and torch.compile's reduce-overhead mode, which replays a step as CUDA graphs: a step of
  this small model is bound by launching kernels). Beside them without --quick, "fast attention
  only" (the course's trainer) and, on the CPU, "fast, no length groups"; on the CPU without --quick
  and on CUDA (compiled there, as the fast path), "fast, packed": every batch's rows packed end to
  end (batching.pack_rows; the default only where cheaper, on the CPU). Steps of the paths
  alternate on the same batches and the median counts (on CUDA, blocks of 5 steps issued back to
  back, as training issues them, then synchronised); tokens/s counts the course's tokens (batch x
  127 positions). --quick uses batch 32 instead of the course's 128 and fewer steps. On CUDA more
  paths run beside them: "fast, eager" and "fast, packed, eager" (no compiling; --no-compile makes
  the fast path eager), "fast + bf16 autocast" (eager; off by default: its casts add kernels to a
  launch-bound step), "fast, packed + bf16 autocast", and the paths that replay whole steps,
  clipping and AdamW included, as CUDA graphs captured by hand ("step graphs", submission/graphs.py;
  off by default), with eager kernels in one or two length groups and with compiled kernels in two
  (on torch 2.2 and later; below it a line says why those rows are missing). Length groups under
  the reduce-overhead mode are not timed: a bench with such rows crashed on an H100
  (fastpath.compiled_graphs_conflict).
- evaluation of the dev questions: the course's computation (`sample()` one question at a time, 32
  steps each, through the course's masked-softmax attention) against `predict_places` (batched,
  key/value cache, early stop, fast attention), both as run.py evaluates (run.answer_questions: the
  reference is `--reference_eval`'s), with the number of identical answers. The reference loop is
  timed on --ref-questions questions and scaled to the whole set. Each path is timed straight after
  an untimed run of its own on EVAL_WARM_UP of its questions, so none is timed cold. Without --params
  the model is untrained: it never closes its answers, so batched decoding runs all 32 steps, the
  least favourable case for it.
- with --profile, after all the timing: 10 fast steps of each variant under torch.profiler (stepprofile.py), and
  10 of each path that --paths names (`profiled_names`): the GPU's kernels (CUDA) or the CPU's operators by
  their own time a step, how many a step, and how much of the step's wall time they fill (a GPU busy most of
  a step is bound by its kernels, not the host). A step that fails under the profiler ends the profiling: the
  summary of what was timed is still printed, then the bench exits 1 (`profile_paths`).
- model FLOPs utilisation of the fast vanilla step against the device's peak, measured here with
  a large matrix product in the training's precision.
- on CPU: a step with 1 thread against all cores, and the data-loading share of a step; on a CPU
  that multiplies bf16 in hardware (AMX, AVX-512 BF16), also "fast + bf16 autocast" (not --quick).
It ends with a summary, one `name: value` per line, and checks the targets (training >= 1.1x on
CPU or 3x on a GPU, evaluation >= 20x) in its own output.

Data: --data-dir (wiki.txt and birth_dev.tsv; a folder without them is an error), else the repo's
data/, else a world generated with src/make_world.py into a temporary folder, removed at exit.
--params (course-size params of --variant, vanilla by default) are loaded and the dev questions
checked against the vocabulary and the block before any timing, so bad input stops the bench at once.
"""
import argparse
import atexit
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from ledger import checkout_commit  # noqa: E402
from modelflags import COURSE_SIZE  # noqa: E402
from oneline import OneLineParser  # noqa: E402
from startup import interruptible_start  # noqa: E402

with interruptible_start("bench.py"):  # torch loads here
    import torch
    from torch.utils.data import default_collate

    from submission import helper
    from submission.attention import set_fast_attention
    from submission.batching import pack_rows
    from submission.dataset import CharCorruptionDataset, DataError, parse_tsv, read_text
    from submission.model import GPT
    from submission.fastpath import loader_workers, step_graphs_need
    from submission.threads import CpuThreads, _threads_from_environment, usable_cores
    from submission.utils import get_device, load_params, predict_places_recompute, run_cli, synchronize
    from stepprofile import ProfilerFailed, profile_lines, profile_steps
    from run import answer_questions, build_model, read_questions

COURSE = {k: v for k, v in COURSE_SIZE.items() if k != "block_size"}  # the course's GPT (modelflags)
BLOCK = COURSE_SIZE["block_size"]
TARGETS = {"train_cpu": 1.1, "train_gpu": 3.0, "eval": 20.0}
STEPS_PER_BLOCK = 5  # on CUDA, steps timed back to back between two synchronisations (time_steps)
PROFILED_STEPS = 10  # steps of each path and variant that --profile traces (stepprofile.py)
EVAL_WARM_UP = 4  # questions each evaluation path decodes untimed just before it is timed (time_evaluations)


# ----------------------------------------------------------------------------- machine

def clock(fn, device):
    synchronize(device)
    t = time.perf_counter()
    out = fn()
    synchronize(device)
    return time.perf_counter() - t, out


def hardware(device):
    if device.startswith("cuda"):
        return torch.cuda.get_device_name()
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{name} ({usable_cores()} cores)" if device == "cpu" else f"{name} ({device})"


def batch_bytes(batch, rounds, device="cpu"):
    """A lower bound on the host memory the bench's `rounds` + 1 batches of span-corruption rows take at once, in
    bytes: x and y, int64, BLOCK - 1 positions a row; on CUDA twice that, as each batch is copied to page-locked
    memory while the list of the originals is still held."""
    rows = (rounds + 1) * batch * 2 * (BLOCK - 1) * 8
    return 2 * rows if device.startswith("cuda") else rows


def map_bytes(batch):
    """A lower bound on the memory of the reference step's attention maps, in bytes, on its device: the course's
    explicit softmax keeps its probabilities and their dropout (float32, batch x heads x T x T) in every layer
    for the backward pass."""
    return batch * COURSE["n_layer"] * COURSE["n_head"] * (BLOCK - 1) ** 2 * 4 * 2


def bench_bytes(batch, rounds):
    """A lower bound on the memory the bench's training rows take at once on the CPU (and MPS), in bytes, where
    the batches and the reference step's attention maps share the machine's memory."""
    return batch_bytes(batch, rounds) + map_bytes(batch)


def host_memory():
    """The bytes of this machine's memory, or None where the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # Windows has no sysconf
        return None


def device_memory(device):
    """The bytes of memory of `device` (a CUDA GPU's own; the machine's for the CPU and MPS), or None where the
    system does not say."""
    if device.startswith("cuda"):
        return torch.cuda.get_device_properties(torch.device(device)).total_memory
    return host_memory()


def memory_refusal(batch, rounds, device):
    """Why `--batch` and `--rounds` cannot fit this machine, in one line, or None. On CUDA the batches lie in the
    host's memory and the attention maps in the GPU's, each checked against its own: summed against the GPU's,
    a --rounds typo was blamed on the GPU, and batches beyond the host's memory passed where the GPU has more
    (an H200's 139 GiB on a host of 128)."""
    if not device.startswith("cuda"):
        checks = [(f"--batch {batch} with --rounds {rounds}", "the batches and the reference step's attention maps",
                   bench_bytes(batch, rounds), device_memory(device), "this machine's",
                   "lower --batch (the course's is 128) or --rounds")]
    else:
        checks = [(f"--batch {batch} with --rounds {rounds}", "the batches", batch_bytes(batch, rounds, device),
                   host_memory(), "this machine's", "lower --rounds or --batch (the course's is 128)"),
                  (f"--batch {batch}", "the reference step's attention maps", map_bytes(batch), device_memory(device),
                   "the GPU's", "lower --batch (the course's is 128)")]
    for flags, what, need, total, where, fix in checks:
        if total is not None and need > total:
            return (f"{flags}: {what} take at least {need / 2 ** 30:,.0f} GiB, more than {where} "
                    f"{total / 2 ** 30:,.0f} GiB; {fix}")
    return None


def cpu_has_bf16():
    """Whether this CPU multiplies bf16 matrices in hardware (AMX or AVX-512 BF16, as on Intel Xeons since
    Cooper Lake): only there can `--bf16` pay on a CPU."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


def peak_flops(device, dtype, n):
    """FLOP/s of the best of 10 n x n matrix products in `dtype`."""
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(2):
        a @ b
    best = min(clock(lambda: a @ b, device)[0] for _ in range(10))
    return 2 * n ** 3 / best


def train_flops(cfg, batch, width):
    """Model FLOPs of one training step (forward + backward = 3 x forward) on batch x width positions,
    counting the full (width x width) score matrices the kernels compute."""
    C, L, V = cfg.n_embd, cfg.n_layer, cfg.vocab_size
    linear = (3 if cfg.synthesizer else 4) * C * C + 8 * C * C  # attention projections + 4x MLP
    per_token = L * (2 * linear + 4 * width * C) + 2 * C * V    # + scores and weighted sum, + head
    return 3 * per_token * batch * width


# ----------------------------------------------------------------------------- data

def find_data(arg):
    """(folder with wiki.txt and birth_dev.tsv, how it was found)."""
    if arg:
        if os.path.isfile(arg):  # `--data-dir data/wiki.txt`: not "no wiki.txt there", where the file named is one
            raise DataError(f"{arg}: is a file, not a folder (the --data-dir, run.sh's DATA_DIR); give the folder "
                            f"that holds it")
        if os.path.isfile(os.path.join(arg, "wiki.txt")) and os.path.isfile(os.path.join(arg, "birth_dev.tsv")):
            return arg, f"--data-dir {arg}"
        raise DataError(f"{arg}: no wiki.txt and birth_dev.tsv there; give a folder holding the course's files "
                        f"(without --data-dir the bench uses data/)")
    repo = os.path.join(HERE, "..", "data")
    if os.path.isfile(os.path.join(repo, "wiki.txt")) and os.path.isfile(os.path.join(repo, "birth_dev.tsv")):
        return os.path.normpath(repo), "the repo's data/"
    import make_world
    folder = tempfile.mkdtemp(prefix="bench-world-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    make_world.write_world(make_world.build_world(), folder)
    return folder, f"a generated world ({folder})"


def pretrain_batches(dataset, batch, count):
    """The first `count` batches of an epoch, as the trainer's DataLoader (no shuffle) makes them (Python's
    random stream seeded 0, which CharCorruptionDataset draws its spans from)."""
    random.seed(0)
    out = []
    for k in range(count):
        rows = [dataset[(k * batch + i) % len(dataset)] for i in range(batch)]
        out.append(default_collate(rows))
    return out


# ----------------------------------------------------------------------------- training

def threads_reason(flag):
    """What set the bench's CPU thread count, in the order threads.CpuThreads reads them: --threads, then
    $GPT_NUM_THREADS, then $OMP_NUM_THREADS (as threads.py reads it), else the cores other processes leave free."""
    if flag:
        return "--threads"
    if os.environ.get("GPT_NUM_THREADS", "").strip():
        return "$GPT_NUM_THREADS"
    if _threads_from_environment() is not None:
        return "$OMP_NUM_THREADS"
    return "threads.CpuThreads: the cores other processes leave free"


def training_runs(pre, variant, batch, threads, paths):
    """{name: TrainingRun} of identical models, one per path: (name, fast attention, fast trainer), then
    optionally torch.compile's mode (None: no compiling), bf16 autocast (default off), the length
    groups (default "auto", the trainer's), whole-step CUDA graphs (default off; graphs.py) and packed
    rows (default "auto", the trainer's; batching.pack_rows)."""
    torch.manual_seed(0)
    first = build_model(argparse.Namespace(variant=variant, **COURSE), pre)  # run.py's: course size, pre's block
    cfg, state = first.config, first.state_dict()
    runs = {}
    for name, fast_attention, fast_trainer, *options in paths:
        defaults = (None, False, "auto", False, "auto")
        compile_mode, amp, groups, step_graphs, pack = tuple(options) + defaults[len(options):]
        model = GPT(cfg)
        model.load_state_dict(state)
        set_fast_attention(model, fast_attention)
        tconf, trainer = helper.pretrain(pre, BLOCK, model)  # the course's pretraining schedule (part f)
        for key, value in dict(batch_size=batch, fast=fast_trainer, num_threads=threads, compile=compile_mode or False,
                               amp=amp, length_groups=groups, step_graphs=step_graphs, pack=pack).items():
            setattr(tconf, key, value)
        run = trainer.prepare()
        run.model.train()
        runs[name] = run
    return runs, cfg


def profiled_names(names, keys):
    """Of the timed paths `names`, those --profile traces: the fast path, and the paths --paths names by their
    PATH_KEYS keys (`keys`; None: no --paths, every path timed, the fast path alone traced)."""
    return [name for name in names if name == "fast" or (keys is not None and PATH_KEYS.get(name) in keys)]


def profile_path(run, batches, device, variant, summary, name="fast"):
    """--profile: print where `run`'s steps (the path `name`, warm: time_steps compiled and recorded its graphs)
    spend their time, and add its figures to `summary`, as profile_<variant>_... (the fast path) or
    profile_<variant>_<its PATH_KEYS key>_.... A profiler that fails (its tracing library missing or refusing)
    is a line, not the end of the bench: the figures it adds are not the bench's targets."""
    label, key = (variant, variant) if name == "fast" else (f"{variant}, {name}", f"{variant}_{PATH_KEYS[name]}")
    try:
        prof = profile_steps(run, batches, device, PROFILED_STEPS)
    except ProfilerFailed as e:
        print(f"  {label}: no profile, {e}")
        return
    print("\n".join(profile_lines(prof, label)))  # under the head line that says what is profiled
    summary[f"profile_{key}_ms_per_step"] = round(prof.wall_ms, 3)
    summary[f"profile_{key}_busy_ms_per_step"] = round(prof.busy_ms, 3)
    summary[f"profile_{key}_{prof.unit}s_per_step"] = round(prof.calls, 1)


def profile_paths(profiled, batches, device, summary):
    """--profile's tables for each (variant, name, run) of `profiled`, in order (profile_path). A step that fails
    under the profiler (CUDA graphs and torch.profiler have clashed in some torch releases) ends the profiling, not
    the bench: its traceback and one line are printed, and the line returned, so that the summary of the timing
    before it is still printed (and the bench then exits 1). None when every profile ran."""
    for variant, name, run in profiled:
        try:
            profile_path(run, batches, device, variant, summary, name)
        except Exception as e:  # KeyboardInterrupt and SystemExit pass
            traceback.print_exc()
            why = (str(e).strip().splitlines() or [""])[0]
            detail = f"{type(e).__name__}: {why}" if why else type(e).__name__
            failed = f"a {variant} step ({name}) failed under torch.profiler: {detail}"
            print(f"  {failed}; no more profiles (the figures above were measured before it)")
            return failed
    return None


def training_paths(cuda, compiled, quick, step_graphs, bf16):
    """The timed training paths: (name, fast attention, fast trainer, compile mode, bf16 autocast, length
    groups, step graphs, packed rows), the later ones left out for their defaults. `compiled`: the fast path
    compiles (CUDA, without --no-compile); `step_graphs`: this torch and device can replay whole steps
    (graphs.py). Packed rows (batching.pack_rows) are the default only on the CPU, for the batches where
    they cost less (fastpath.packs_cheaper); the "fast, packed" rows pack every batch."""
    paths = [("reference", False, False), ("fast", True, True, "reduce-overhead" if compiled else None)]
    if not quick:
        paths.insert(1, ("fast attention only", True, False))
    if not cuda and not quick:
        paths.append(("fast, no length groups", True, True, None, False, 1))
    if cuda or not quick:
        paths.append(("fast, packed", True, True, "reduce-overhead" if compiled else None, False, "auto", False, True))
    if compiled:
        paths.append(("fast, eager", True, True, None))
        paths.append(("fast, packed, eager", True, True, None, False, "auto", False, True))
    if cuda and step_graphs:  # whole steps as CUDA graphs, off by default
        paths.append(("fast, step graphs", True, True, None, False, 1, True))
        paths.append(("fast, step graphs, 2 length groups", True, True, None, False, 2, True))
        if compiled:
            paths.append(("fast, step graphs + compile, 2 length groups", True, True, "default", False, 2, True))
    if bf16:
        paths.append(("fast + bf16 autocast", True, True, None, True))
        if cuda:
            paths.append(("fast, packed + bf16 autocast", True, True, "reduce-overhead" if compiled else None, True,
                          "auto", False, True))
    return paths


# the timed paths beside the reference and the fast path, by the keys of their summary lines
# (train_speedup_<variant>_<key>) and of --paths
PATH_KEYS = {"fast attention only": "attention_only", "fast, eager": "eager", "fast + bf16 autocast": "bf16",
             "fast, no length groups": "no_groups", "fast, packed": "packed", "fast, packed, eager": "packed_eager",
             "fast, packed + bf16 autocast": "packed_bf16", "fast, step graphs": "step_graphs",
             "fast, step graphs, 2 length groups": "step_graphs_2_groups",
             "fast, step graphs + compile, 2 length groups": "step_graphs_compile_2_groups"}


def picked_paths(paths, keys):
    """`paths` less the ones beside the reference and the fast path whose PATH_KEYS key is not in `keys`
    (None: all of them)."""
    return [p for p in paths if keys is None or p[0] in ("reference", "fast") or PATH_KEYS[p[0]] in keys]


def make_room_for_compiles(limit=64):
    """Raise dynamo's recompile limit (8 by default) for the bench's compiled rows: GPT.forward gets a
    cache entry per variant and compile mode (reduce-overhead, default; more on a torch without one
    graph for every batch shape), and past 8 dynamo would run the rest eagerly, with a warning but timed
    as compiled."""
    import torch._dynamo.config as dynamo_config
    name = "recompile_limit" if hasattr(dynamo_config, "recompile_limit") else "cache_size_limit"  # torch < 2.6
    setattr(dynamo_config, name, max(limit, getattr(dynamo_config, name)))


class StepTimes(dict):
    """{name: median seconds a step} (time_steps), with `rounds`: {name: [(a timed round's batches, its
    seconds a step)]}, for figures that must divide a round's work by that round's time (flops_rate)."""

    def __init__(self, medians, rounds):
        super().__init__(medians)
        self.rounds = rounds


def time_steps(runs, batches, rounds, device, block=1):
    """Median seconds per step of each run (a StepTimes): one warm-up step each (a compiled run or one
    replaying step graphs: two on every batch, so that compiling and CUDA-graph recording for each trimmed
    width happen before timing: the reduce-overhead mode runs a new shape eagerly first and records it on
    its second call),
    then `rounds` rounds in which every run takes `block` steps on the same batches, in an order that
    rotates from round to round. The device is synchronised around each block, not each step: as in
    training, the host queues a step while the GPU still runs the last one."""
    names = list(runs)
    times = {n: [] for n in names}
    kept = {n: [] for n in names}

    def steps(name, chunk):
        if device.startswith("cuda"):  # TF32 is the fast path's, not the course's
            torch.backends.cuda.matmul.allow_tf32 = runs[name].fast
        return clock(lambda: [runs[name].step(x, y) for x, y in chunk], device)[0] / len(chunk)

    for n in names:
        graphed = runs[n].compiled or runs[n].graphs is not None
        for _ in range(2 if graphed else 1):
            steps(n, batches if graphed else batches[:1])
    for r in range(rounds):
        chunk = [batches[(r * block + i) % (len(batches) - 1) + 1] for i in range(block)]
        for n in names[r % len(names):] + names[:r % len(names)]:
            times[n].append(steps(n, chunk))
            kept[n].append((chunk, times[n][-1]))
    return StepTimes({n: statistics.median(v) for n, v in times.items()}, kept)


def flops_rate(cfg, run, rounds):
    """Model FLOP/s of `run`'s steps: the median over `rounds` ([(batches, seconds a step)], StepTimes.rounds)
    of the mean FLOPs of a round's steps (the shapes `run` computes, train_flops) over that round's seconds a
    step. The mean FLOPs over the median time mixed batches: the median's time is one batch's, and a batch of
    fewer FLOPs than the mean made a rate above any step's."""
    return statistics.median(statistics.mean(sum(train_flops(cfg, r, w) for r, w in run.shapes(x, y))
                                             for x, y in chunk) / seconds for chunk, seconds in rounds)


def layout_words(run, batches):
    """How `run` computes `batches`, in words: packed rows, length groups, the padding trim, or a mix."""
    packs = [run.pack(x, y) is not None for x, y in batches]
    groups = max((len(run.plan(y)) for (_, y), packed in zip(batches, packs) if not packed), default=1)
    rest = f"{groups} length groups" if groups > 1 else "the padding trim"
    if all(packs):
        return "packed rows"
    return f"packed rows in {sum(packs)} of {len(batches)} batches, else {rest}" if any(packs) else rest


def packed_line(run, batches):
    """What packing makes of the timed batches: rows and share of the positions, as `run` (a packing
    TrainingRun) computes them; where it rounds row counts up (CUDA, compiled), also the rows before the
    rounding, the share that rounding costs."""
    shapes = [run.shapes(x, y)[0] for x, y in batches]  # [(rows, width)]
    batch = batches[0][1].size(0)
    share = statistics.mean(r * w for r, w in shapes) / (batch * (BLOCK - 1))
    line = (f"  packed, a batch of {batch} rows is {statistics.mean(r for r, _ in shapes):.1f} rows: "
            f"{share:.0%} of its positions")
    if run.multiple > 1:
        exact = [pack_rows(x, y, run.ignore_index).shape[0] for x, y in batches]
        line += f" ({statistics.mean(exact):.1f} rows before rounding up to a multiple of {run.multiple})"
    return line


# ----------------------------------------------------------------------------- evaluation

def time_evaluations(decoders, device):
    """{name: (seconds, answers)} of `decoders` ({name: (decode, questions)}; decode(questions) -> answers),
    one after the other: each decodes the first EVAL_WARM_UP of its questions untimed, then all of them timed. So
    every path is timed warm, straight after a run of its own: timed on a fresh model, the first path paid
    the start-up (first calls, first allocations) that the paths after it were spared, and its speedup read
    low."""
    out = {}
    for name, (decode, questions) in decoders.items():
        decode(questions[:EVAL_WARM_UP])
        out[name] = clock(lambda: decode(questions), device)
    return out


# ----------------------------------------------------------------------------- main

def main(argv=None):
    p = OneLineParser(description="Reference against fast paths: training steps, evaluation, MFU.")
    p.add_argument("--quick", action="store_true", help="batch 32 and fewer steps: under a minute on a 2-core CPU")
    p.add_argument("--data-dir", default=None, help="folder with wiki.txt and birth_dev.tsv")
    p.add_argument("--params", default=None,
                   help="course-size params to evaluate (default: an untrained model); their variant is --variant")
    p.add_argument("--variant", choices=["vanilla", "synthesizer"], default="vanilla",
                   help="the variant of the evaluated model (default vanilla); training times both")
    p.add_argument("--batch", type=int, default=None, help="training batch (default 128, the course's; --quick 32)")
    p.add_argument("--rounds", type=int, default=None,
                   help=f"timed rounds per path: a step each on the CPU, a block of {STEPS_PER_BLOCK} on CUDA "
                        "(default 5; --quick 3)")
    p.add_argument("--ref-questions", type=int, default=None,
                   help="questions the one-at-a-time reference decodes (0: all; default 100; --quick 16)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: threads.CpuThreads' choice)")
    p.add_argument("--paths", nargs="+", metavar="KEY", choices=sorted(PATH_KEYS.values()), default=None,
                   help="time only these paths beside the reference and the fast path, by the keys of their summary "
                        "lines (packed, eager, bf16, ...; default: every path this device has); a compiled path "
                        "takes a minute to compile on a GPU")
    p.add_argument("--profile", action="store_true",
                   help="after timing, profile 10 fast steps of each variant (torch.profiler), and 10 of each path "
                        "--paths names: the GPU's kernels, or the CPU's operators, that take a step's time")
    p.add_argument("--no-compile", action="store_true",
                   help="on CUDA, time the fast path eager (no torch.compile and CUDA graphs)")
    args = p.parse_args(argv)
    for name in ("batch", "rounds", "threads"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            p.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    cap = 64 * (os.cpu_count() or 1)  # torch's thread pool crashed (a segmentation fault) at 100,000
    if args.threads is not None and args.threads > cap:
        p.error(f"--threads {args.threads}: more than 64 a CPU ({cap} on this machine), which only wait on each "
                f"other; give {os.cpu_count() or 1} or so")
    if args.ref_questions is not None and args.ref_questions < 0:
        p.error(f"--ref-questions must be 0 (all) or more, got {args.ref_questions}")
    batch = args.batch or (32 if args.quick else 128)
    rounds = args.rounds or (3 if args.quick else 5)
    n_ref = args.ref_questions if args.ref_questions is not None else (16 if args.quick else 100)
    begin = time.time()

    device = get_device()
    # a typo of --batch or --rounds (100000000) built its batches until the OOM killer stopped the bench, the
    # machine's memory filled, with no word
    refusal = memory_refusal(batch, rounds, device)
    if refusal:
        p.error(refusal)
    threads = CpuThreads(fixed=args.threads).start() if device == "cpu" else None
    data_dir, found = find_data(args.data_dir)
    wiki = os.path.join(data_dir, "wiki.txt")
    pre = CharCorruptionDataset(read_text(wiki, "pretraining corpus"), BLOCK, wiki)
    dev_path = os.path.join(data_dir, "birth_dev.tsv")
    if not parse_tsv(read_text(dev_path, "dev set"), dev_path, require_label=False):  # now, not after the timing
        raise DataError(f"{dev_path}: no questions; the bench times the evaluation of the dev questions "
                        f"(question<TAB>place a line)")
    questions = read_questions(dev_path, pre.stoi, BLOCK)  # each in the vocabulary, with room to answer
    torch.manual_seed(0)
    # the evaluated model, checked before timing
    eval_model = build_model(argparse.Namespace(variant=args.variant, **COURSE), pre)
    if args.params:
        load_params(eval_model, args.params, variant_flag="--variant ",
                    corpus_flag="--data-dir (the folder of the wiki.txt)",
                    size_fix="the bench evaluates the course's model size (4 layers, 8 heads, 256 dims, block 128)",
                    itos=pre.itos)
    summary = {"hardware": hardware(device), "device": device, "torch": torch.__version__,
               "commit": checkout_commit(short=7) or "unknown"}
    if threads is not None:
        summary["threads"] = threads
    print(f"bench on {summary['hardware']}, torch {torch.__version__}, device {device}"
          + (f", {threads} thread(s)" if threads else "") + f"; data: {found}")
    print(f"model: {COURSE['n_layer']} layers, {COURSE['n_head']} heads, {COURSE['n_embd']} dims, block {BLOCK}; "
          f"training batch {batch}{' (--quick)' if args.quick else ''}")

    # peak: a large matrix product in the fast path's training precision (TF32 on CUDA)
    cuda = device.startswith("cuda")
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
    peak = peak_flops(device, torch.float32, 8192 if cuda else 2048)
    print(f"\npeak: {peak / 1e9:,.0f} GFLOP/s ({'TF32' if cuda else 'fp32'} matrix product)")

    compiled = cuda and not args.no_compile  # what compile="auto" does for a pretraining-length run
    if compiled:
        make_room_for_compiles()
    need = step_graphs_need(device) if cuda else None
    if need is not None:
        print(f"no step-graph rows: step graphs need {need}")
    bf16 = (cuda and torch.cuda.is_bf16_supported()) or (not cuda and not args.quick and cpu_has_bf16())
    paths = picked_paths(training_paths(cuda, compiled, args.quick, need is None, bf16), args.paths)
    batches = pretrain_batches(pre, batch, rounds + 1)
    if cuda:  # page-locked, as the trainer's DataLoader gives them: copies to the GPU do not wait
        batches = [(x.pin_memory(), y.pin_memory()) for x, y in batches]
    course_tokens = batch * (BLOCK - 1)
    blocks = f"; CUDA: timed in blocks of {STEPS_PER_BLOCK} steps" if cuda else ""
    print(f"\ntraining steps (pretraining batches{blocks}):")
    fast_vanilla, profiled, profile_failed = None, [], None
    for variant in ("vanilla", "synthesizer"):
        runs, cfg = training_runs(pre, variant, batch, threads, paths)
        med = time_steps(runs, batches, rounds, device, block=STEPS_PER_BLOCK if cuda else 1)
        width = max(map(len, runs))
        for name in runs:
            ms = med[name] * 1e3
            print(f"  {variant:11s} {name:{width}s} {ms:8.{2 if ms < 100 else 0}f} ms/step  "
                  f"{course_tokens / med[name]:9,.0f} tokens/s")
            key = name.replace(" + ", "_").replace(", ", "_").replace(" ", "_")
            summary[f"train_tokens_per_s_{variant}_{key}"] = round(course_tokens / med[name])
        speedup = med["reference"] / med["fast"]
        summary[f"train_speedup_{variant}"] = round(speedup, 3)
        for name, key in PATH_KEYS.items():
            if name in med:
                summary[f"train_speedup_{variant}_{key}"] = round(med["reference"] / med[name], 3)
        print(f"  {variant:11s} speedup fast / reference: {speedup:.2f}x"
              + "".join(f"; {n} / reference: {med['reference'] / med[n]:.2f}x" for n in med
                        if n.startswith(("fast,", "fast +"))))
        if args.profile:  # after all the timing: a profiler's tracing may slow what runs after it
            profiled += [(variant, name, runs[name]) for name in profiled_names(runs, args.paths)]
        if variant == "vanilla":
            shapes = [runs["fast"].shapes(x, y) for x, y in batches[1:]]
            positions = statistics.mean(sum(r * w for r, w in s) for s in shapes) / course_tokens
            layout = layout_words(runs["fast"], batches[1:])
            print(f"  the fast path computes {positions:.0%} of the batch's positions ({layout})")
            if "fast, packed" in runs:
                print(packed_line(runs["fast, packed"], batches[1:]))
            fast_vanilla = (cfg, med["fast"], flops_rate(cfg, runs["fast"], med.rounds["fast"]))
        del runs

    # MFU of the fast vanilla step: the FLOPs of the shapes it computes, each round's over its own time
    rate = fast_vanilla[2]
    summary["model_tflops_per_s"] = round(rate / 1e12, 4)
    summary["peak_tflops_per_s"] = round(peak / 1e12, 4)
    summary["mfu"] = round(rate / peak, 4)
    print(f"\nMFU (fast vanilla step): {rate / 1e9:,.1f} GFLOP/s of {peak / 1e9:,.0f} "
          f"= {summary['mfu']:.1%}")

    # CPU: threads
    if device == "cpu":
        cores = CpuThreads().cores
        if cores > 1:
            per = {}
            for n in (1, cores):
                runs, _ = training_runs(pre, "vanilla", batch, n, [("fast", True, True)])
                torch.set_num_threads(n)
                per[n] = time_steps(runs, batches[:2], 2, device)["fast"]
                del runs
            torch.set_num_threads(threads)
            summary["step_ms_1_thread"] = round(per[1] * 1e3)
            summary[f"step_ms_{cores}_threads"] = round(per[cores] * 1e3)
            why = threads_reason(args.threads)
            print(f"\nthreads (fast vanilla step): 1 -> {per[1] * 1e3:.0f} ms, {cores} -> {per[cores] * 1e3:.0f} ms; "
                  f"this run used {threads} ({why})")

    # data: what a DataLoader worker spends on a batch (on a GPU, the workers must keep up with the step)
    random.seed(1)
    load = min(clock(lambda: default_collate([pre[i % len(pre)] for i in range(batch)]), "cpu")[0] for _ in range(3))
    summary["data_ms_per_batch"] = round(load * 1e3, 1)
    workers = loader_workers(4, device, main_guarded=True)  # the course's num_workers=4, as run.py's trainer sizes it
    print(f"\ndata: {load * 1e3:.1f} ms to make a batch of {batch} span-corruption examples in Python = "
          f"{load / fast_vanilla[1]:.1%} of a fast step"
          + (f"; {workers} DataLoader worker(s) make one every {load / workers * 1e3:.1f} ms" if workers else
             " (made in the training process: no workers on a CPU)"))

    # evaluation, in full fp32 as run.py evaluates (the training paths left TF32 on)
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = False
    model = eval_model.to(device).eval()
    n_ref = len(questions) if n_ref <= 0 else min(n_ref, len(questions))
    picked = [round(i * len(questions) / n_ref) for i in range(n_ref)]  # spread over the set
    sub = [questions[i] for i in picked]
    decoders = {"batched": (lambda qs: answer_questions(model, qs, pre.stoi, pre.itos), questions),
                "reference": (lambda qs: answer_questions(model, qs, pre.stoi, pre.itos, reference=True), sub)}
    if not args.quick:
        decoders["no cache"] = (lambda qs: predict_places_recompute(model, qs, pre.stoi, pre.itos), sub)
    timed = time_evaluations(decoders, device)
    (t_fast, answers), (t_sub, reference) = timed["batched"], timed["reference"]
    t_ref = t_sub * len(questions) / n_ref
    same = sum(answers[i] == b for i, b in zip(picked, reference))
    summary["eval_model"] = f"{args.variant} {args.params}" if args.params else f"{args.variant} untrained"
    summary["eval_questions"] = len(questions)
    summary["eval_seconds_reference"] = round(t_ref, 2)
    summary["eval_seconds_batched"] = round(t_fast, 3)
    summary["eval_speedup"] = round(t_ref / t_fast, 2)
    summary["eval_identical"] = f"{same}/{n_ref}"
    which = f"{args.variant} params {args.params}" if args.params else f"untrained {args.variant} model"
    print(f"\nevaluation of {len(questions)} dev questions ({which}; each path timed after an untimed run on "
          f"{EVAL_WARM_UP} of its questions):")
    print(f"  one at a time (the course's sample loop and attention): {t_ref:8.2f} s"
          + (f"  (timed on {n_ref} questions, scaled)" if n_ref < len(questions) else ""))
    if not args.quick:
        t_re, recomputed = timed["no cache"]
        summary["eval_seconds_batched_no_cache"] = round(t_re * len(questions) / n_ref, 2)
        print(f"  batched, no cache (predict_places_recompute): {t_re * len(questions) / n_ref:8.2f} s  "
              f"(timed on {n_ref}, scaled; {sum(a == b for a, b in zip(recomputed, reference))}/{n_ref} identical)")
    print(f"  batched with key/value cache (predict_places): {t_fast:8.2f} s")
    print(f"  speedup {t_ref / t_fast:.1f}x; answers identical to the course's loop on {same} of {n_ref}")

    if profiled:
        if cuda:  # TF32 again, as the fast steps were timed: the evaluation turned it off, and a compiled
            # step guards on it (without it, it would compile anew)
            torch.backends.cuda.matmul.allow_tf32 = True
        print(f"\nwhere a step's time goes ({PROFILED_STEPS} fast steps of each variant under torch.profiler, "
              f"after the timing above{'; and of each path --paths names' if args.paths else ''}):")
        profile_failed = profile_paths(profiled, batches[1:], device, summary)

    # verdicts
    train_target = TARGETS["train_gpu"] if cuda else TARGETS["train_cpu"]
    checks = [(f"target train >= {train_target}x (vanilla)", summary["train_speedup_vanilla"] >= train_target),
              (f"target train >= {train_target}x (synthesizer)", summary["train_speedup_synthesizer"] >= train_target),
              (f"target eval >= {TARGETS['eval']:.0f}x", summary["eval_speedup"] >= TARGETS["eval"]),
              ("eval answers identical", same == n_ref)]
    summary["seconds"] = round(time.time() - begin, 1)
    print("\n== summary ==")
    for k, v in summary.items():
        print(f"{k}: {v}")
    for name, ok in checks:
        print(f"{name}: {'met' if ok else 'NOT met'}")
    if profile_failed:
        sys.exit(f"error: {profile_failed} (its traceback is above the summary)")


if __name__ == "__main__":
    run_cli(main)

"""Command-line driver of the assignment: pretrain, finetune or evaluate a GPT on the birth-place task.

The course's interface, unchanged (run.sh calls it this way):
    python src/run.py --function=pretrain --variant=vanilla --pretrain_corpus_path=data/wiki.txt \
        --writing_params_path=src/submission/vanilla.pretrain.params
The CS224N form with positional function, variant and corpus works too:
    python src/run.py finetune vanilla data/wiki.txt --finetune_corpus_path=... --writing_params_path=...
Flags beyond the course (model size, epochs, learning rate, seed, a loss log, --resume of an interrupted
run, the speed options; `--help` lists them) default to the course's settings: block 128, 4 layers, 8
heads, 256 dimensions.
"""
import argparse
import contextlib
import difflib
import io
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ledger import LOG_LAG, checkout_commit, logged_epochs, sha256_of  # noqa: E402
from modelflags import add_model_flags, check_model_flags  # noqa: E402
from oneline import OneLineParser  # noqa: E402
from startup import interruptible_start, stop_with_run_sh_all  # noqa: E402

stop_with_run_sh_all()  # a mode of `./run.sh all` stops when `all` is stopped (killed)
with interruptible_start("run.py"):  # torch loads here
    import torch
    from submission import helper, resume
    from submission.attention import attention_paths
    from submission.card import (card_path, corpus_record, other_corpus, other_corpus_words, pretrain_corpus, read_card,
                                 write_card)
    from submission.dataset import CharCorruptionDataset, DataError, NameDataset, check_chars, parse_tsv, read_text
    from submission.decoding import predict_places_reference
    from submission.files import check_room, is_special_file, reads_as
    from submission.locks import log_lock, training_lock
    from submission.model import GPTConfig
    from submission.params import load_torch_file
    from submission.fastpath import (COMPILE_MODES, GRAPH_MODES, compile_setting, compiled_graphs_conflict,
                                     step_graphs_need)
    from submission.trainer import TrainerConfig, exit_past_gloo, partial_log_path
    from submission.threads import denormals_flushed
    from submission.utils import (atomic_write_text, check_output_path, evaluate_places, distributed_env, get_device,
                                  load_params, is_main_process, predict_places, run_cli, set_seed)

SPAWN_SAFE = True  # DataLoader workers started by "spawn" import this module again: it trains under __main__ alone
SHARED_FLAGS = "RUN_PY_SHARED_FLAGS"  # set: the flags are a pipeline's, given to all its steps (no notes)
FUNCTIONS = ("pretrain", "finetune", "evaluate")  # --function's choices, or the first positional's
VARIANTS = ("vanilla", "synthesizer")  # --variant's, or the second positional's
TRAINER_OVERRIDES = ("max_epochs", "batch_size", "learning_rate", "num_workers", "length_groups")


class GivenOnce(argparse.Action):
    """A flag that a run.sh mode sets: given again with another value (`./run.sh vanilla_pretrain
    --variant synthesizer`), argparse would let the last win and the run write the mode's file with the
    other variant's params; it is a usage error instead (worded for run.sh under run.sh, RUN_SH_MODE)."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = namespace.__dict__.setdefault("_given", set())
        if self.dest in given and getattr(namespace, self.dest) != values:
            twice = f"{option_string} given twice, as {getattr(namespace, self.dest)!r} and as {values!r}"
            if not os.environ.get("RUN_SH_MODE"):  # typed twice on run.py's own command line
                parser.error(f"{twice}; give it once")
            fix = ("choose the run.sh mode that does what you want" if self.dest in ("function", "variant") else
                   "DATA_DIR and OUT_DIR choose the folders of a run.sh mode; for other file names, run "
                   "python src/run.py with the flags you want")
            parser.error(f"{twice} (a run.sh mode gives it: {fix})")
        given.add(self.dest)
        setattr(namespace, self.dest, values)


# flags of the other commands (demo, ask, bench), given to run.py or a run.sh mode
FOLDER_HINTS = {
    **dict.fromkeys(("--data-dir", "--data_dir"), "run.sh's modes read the corpus from the folder DATA_DIR names "
                    "(DATA_DIR=FOLDER ./run.sh MODE); run.py takes each file: --pretrain_corpus_path and the others"),
    **dict.fromkeys(("--out-dir", "--out_dir"), "run.sh's modes write to the folder OUT_DIR names "
                    "(OUT_DIR=FOLDER ./run.sh MODE); run.py takes each file: --writing_params_path, --outputs_path")}


def build_parser():
    p = OneLineParser(description="Pretrain, finetune or evaluate the assignment's GPT.", hints=FOLDER_HINTS)
    p.add_argument("positional", nargs="*", metavar="FUNCTION VARIANT CORPUS",
                   help="CS224N style: function, variant and pretraining corpus as positionals")
    p.add_argument("--function", choices=FUNCTIONS, action=GivenOnce,
                   help="what to run (run.sh's modes give it)")
    p.add_argument("--variant", choices=VARIANTS, action=GivenOnce,
                   help="the attention: vanilla causal self-attention or the dense synthesizer")
    p.add_argument("--pretrain_corpus_path", action=GivenOnce,
                   help="the pretraining text; it also defines the vocabulary")
    for name, text in (("reading_params_path", "params to start from (finetune) or to evaluate"),
                       ("writing_params_path", "where training writes its params (its loss log, state and card "
                                               "go beside them)"),
                       ("finetune_corpus_path", "question<TAB>place lines to finetune on"),
                       ("eval_corpus_path", "the questions to answer (evaluate), with places to score when given"),
                       ("outputs_path", "where evaluate writes its predictions, one a line")):
        p.add_argument(f"--{name}", default=None, action=GivenOnce, help=text)
    g = p.add_argument_group("beyond the course (defaults are the course's settings)")
    add_model_flags(g)
    g.add_argument("--dropout", type=float, default=None,
                   help="embedding, residual and attention dropout (default: GPTConfig's 0.1, the course's)")
    g.add_argument("--max_epochs", type=int, default=None, help="override the part's epoch count")
    g.add_argument("--batch_size", type=int, default=None, help="override the part's batch size")
    g.add_argument("--learning_rate", type=float, default=None, help="override the part's learning rate")
    g.add_argument("--num_workers", type=int, default=None,
                   help="DataLoader worker processes (default: the part's, at most the cores less one; none on a CPU)")
    g.add_argument("--seed", type=int, default=0, help="seed of torch's and Python's random streams (default 0)")
    g.add_argument("--log_path", default=None,
                   help="per-step loss/lr log (JSON lines); default: <writing_params_path>.log.jsonl (os.devnull "
                        "when the params go to a special file such as /dev/null)")
    g.add_argument("--resume", action="store_true",
                   help="continue an interrupted training run from its training state, <writing_params_path>.state "
                        "(saved at an epoch's end every --state_every seconds, removed when training ends)")
    g.add_argument("--restart", action="store_true",
                   help="start training afresh where <writing_params_path>.state holds an interrupted run's state "
                        "(refused without --resume or this; the new run replaces it at its first save), or where "
                        "<writing_params_path> holds the params of a run of more training, epochs times weights "
                        "(refused without this)")
    g.add_argument("--state_every", type=float, default=None, metavar="SECONDS",
                   help="save the training state at the first epoch's end after this many seconds since the last "
                        "save (default 300; 0: every epoch)")
    g.add_argument("--compile", action="store_true",
                   help="torch.compile the model for training, on any device and run length (default: on one GPU, "
                        "runs of 8,000 steps or more, i.e. pretraining, compile with CUDA graphs; params are "
                        "saved without the compile prefix)")
    g.add_argument("--compile_mode", choices=COMPILE_MODES, default=None,
                   help="torch.compile's mode (implies --compile); reduce-overhead replays CUDA graphs")
    g.add_argument("--no_compile", action="store_true", help="never torch.compile (eager training everywhere)")
    g.add_argument("--length_groups", type=int, default=None,
                   help="compute each batch in N groups of rows of similar length, each cut to its longest row "
                        "(same loss and gradients, dropout's masks aside; default: on the CPU one group per 16 rows, "
                        "2 to 8, none below 16 rows; 1: off; one process only, not under torchrun; on CUDA not with "
                        "compile mode reduce-overhead or max-autotune, so automatic compiling takes mode default)")
    g.add_argument("--pack", action="store_true",
                   help="pack every batch's rows end to end into fewer, fuller rows, each sequence attending within "
                        "itself (same loss and gradients, dropout's masks aside). By default the CPU packs the "
                        "batches where that costs less than its length groups: span-corruption batches under 128 "
                        "rows (a step 4-25%% shorter on a 2-core CPU), not the course's 128 (3-5%% longer) nor "
                        "finetuning's short rows (15-74%% longer); a GPU only with --pack (on an H200 a "
                        "packed pretraining's steps took 2.5 times as long). Not with --length_groups N or "
                        "--step_graphs")
    g.add_argument("--no_pack", action="store_true",
                   help="never pack rows (the CPU's length groups or padding trim for every batch)")
    g.add_argument("--step_graphs", action="store_true",
                   help="one GPU, torch 2.2+: replay whole training steps, clipping and AdamW included, as CUDA graphs "
                        "captured by hand (same computation; not with --compile_mode reduce-overhead or "
                        "max-autotune; ./run.sh bench times it)")
    g.add_argument("--bf16", action="store_true",
                   help="bf16 autocast for training (off by default: on an H100 it was slower at this size, and "
                        "compiled bf16 pretraining diverged to a NaN loss)")
    g.add_argument("--reference_train", action="store_true",
                   help="train with the course's loop and attention: no padding trim or length groups, per-tensor "
                        "AdamW, no TF32 or compile, the masked softmax with torch's dropout (slower; the fast default "
                        "computes the same up to float sums, drawing other dropout masks on the CPU)")
    g.add_argument("--reference_eval", action="store_true",
                   help="decode one question at a time with sample() and the masked-softmax attention, as the "
                        "course does (slow)")
    return p


def choice_error(name, value, choices, place):
    """The usage error for a function or variant that is none of `choices`, given as --NAME or as the
    positional at `place` (1st, 2nd) of the course's form: the value given, and the choice it is close to."""
    said = (f"--{name} (or the {('first', 'second')[place - 1]} positional) must be {', '.join(choices[:-1])} or "
            f"{choices[-1]}")
    if value is None:
        return f"{said}, and none was given"
    close = difflib.get_close_matches(value, choices, n=1, cutoff=0.6)
    return f"{said}, got {value!r}" + (f"; did you mean {close[0]}?" if close else "")


def parse_args(argv=None):
    p = build_parser()
    args = p.parse_args(argv)
    args.__dict__.pop("_given", None)
    pos = list(args.positional)
    dashless = next((word for word in pos if p.flag_named(word)), None)
    if dashless is not None:  # `./run.sh vanilla_pretrain max_epochs 1` ("function given twice")
        p.error(f"{dashless}: a flag is written with two dashes: {p.flag_named(dashless)}")
    if len(pos) > 3:
        p.error(f"at most 3 positionals (function, variant, corpus), got {len(pos)}")
    for name, value in zip(("function", "variant", "pretrain_corpus_path"), pos):
        if getattr(args, name) is not None and getattr(args, name) != value:
            p.error(f"{name} given twice, as {value!r} and as --{name}={getattr(args, name)!r}")
        setattr(args, name, value)
    if args.function not in FUNCTIONS:
        p.error(choice_error("function", args.function, FUNCTIONS, 1))
    mode = os.environ.get("RUN_SH_MODE", "")
    if mode.endswith("_finetune_without_pretrain") and args.reading_params_path is not None:
        # the deliverable without pretraining, made from pretrained params without a word
        p.error(f"{mode} trains from scratch, without pretrained params; --reading_params_path would finetune "
                f"them: use {mode.replace('without', 'with')}, which reads OUT_DIR's pretrained params")
    if args.variant not in VARIANTS:
        p.error(choice_error("variant", args.variant, VARIANTS, 2))
    if args.dropout is not None and not 0.0 <= args.dropout < 1.0:
        p.error(f"--dropout must be at least 0 and below 1, got {args.dropout}")
    check_model_flags(p, args)
    for name in ("max_epochs", "batch_size"):
        if getattr(args, name) is not None and not 1 <= getattr(args, name) < 2 ** 31:
            p.error(f"--{name} must be at least 1 and below 2**31, got {getattr(args, name)}")
    if args.learning_rate is not None and not 0.0 < args.learning_rate < float("inf"):
        p.error(f"--learning_rate must be a positive number, got {args.learning_rate}")
    if args.length_groups is not None and args.length_groups < 1:
        p.error(f"--length_groups must be at least 1 (1: no grouping), got {args.length_groups}")
    if args.state_every is not None and not 0 <= args.state_every < float("inf"):
        p.error(f"--state_every must be 0 or more seconds, got {args.state_every}")
    if args.num_workers is not None and args.num_workers < 0:
        p.error(f"--num_workers must be 0 or more, got {args.num_workers}")
    if not 0 <= args.seed < 2 ** 32:
        p.error(f"--seed must be between 0 and {2 ** 32 - 1} (numpy's range), got {args.seed}")
    if args.no_compile and (args.compile or args.compile_mode):
        p.error("--no_compile contradicts --compile/--compile_mode; give one of them")
    if args.pack and args.no_pack:
        p.error("--no_pack contradicts --pack; give one of them")
    grouped = (args.length_groups or 1) > 1  # --length_groups N above 1 (None: automatic)
    if args.pack and (grouped or args.step_graphs):
        p.error(f"--pack replaces the length groups and does not run under step graphs; leave out --pack or "
                f"{'--length_groups' if grouped else '--step_graphs'}")
    if args.reference_train:  # the course's loop has none of the fast path's options
        fast_only = [f"--{name}" for name in ("compile", "compile_mode", "step_graphs", "bf16", "pack")
                     if getattr(args, name)] + (["--length_groups"] if grouped else [])
        if fast_only:
            p.error(f"--reference_train is the course's loop, without {' or '.join(fast_only)}; give one of them")
    compile_mode, from_env = asked_compile_mode(args)
    unknown = unknown_compile_backend(args)
    if unknown is not None:
        p.error(unknown)
    if args.step_graphs and args.function != "evaluate":  # (evaluate notes below that it does not read it)
        need = step_graphs_need(get_device(), int(os.environ.get("WORLD_SIZE", "1")), compile_mode=compile_mode)
        if need is not None:
            blame = from_env and compile_mode in GRAPH_MODES  # the need is the mode, and GPT_COMPILE set it
            p.error(f"--step_graphs needs {need}; " + (f"GPT_COMPILE={compile_mode} sets that mode: unset it or "
                                                       f"leave --step_graphs out" if blame else "leave it out"))
    if grouped and args.function != "evaluate":
        conflict = compiled_graphs_conflict(args.length_groups, get_device(), compile_mode)
        if conflict is not None:
            p.error(conflict + (f" (GPT_COMPILE={compile_mode} sets the mode)" if from_env else ""))
    if not args.pretrain_corpus_path:
        p.error("--pretrain_corpus_path is required (it defines the vocabulary)")
    needs = {"pretrain": ["writing_params_path"],
             "finetune": ["writing_params_path", "finetune_corpus_path"],
             "evaluate": ["reading_params_path", "eval_corpus_path", "outputs_path"]}[args.function]
    for name in needs:
        if not getattr(args, name):
            p.error(f"--function={args.function} needs --{name}")
    if args.resume and args.function == "evaluate":
        p.error("--resume continues a training run; --function=evaluate trains nothing")
    if args.resume and args.restart:
        p.error("--resume goes on from the interrupted run's state, --restart starts over; give one of them")
    if args.resume and is_special_file(args.writing_params_path):
        p.error(f"--resume reads <writing_params_path>.state, and {args.writing_params_path} is a special file "
                f"that has none; give the interrupted run's --writing_params_path")
    training = ["writing_params_path", "finetune_corpus_path", "log_path", "max_epochs", "batch_size", "learning_rate",
                "num_workers", "dropout", "length_groups", "state_every", "compile", "compile_mode", "no_compile",
                "step_graphs", "pack", "no_pack", "bf16", "reference_train", "restart"]
    unread = {"pretrain": ["reading_params_path", "finetune_corpus_path", "eval_corpus_path", "outputs_path",
                           "reference_eval"],
              "finetune": ["eval_corpus_path", "outputs_path", "reference_eval"],
              "evaluate": training}[args.function]
    if os.environ.get(SHARED_FLAGS) or not is_main_process():  # `./run.sh all FLAGS`, the demo: every step has
        unread = []  # the same flags, knowingly; under torchrun, rank 0 alone says it
    for name in unread:  # the course's run.py ignores them too; say so, as a user may expect otherwise
        if getattr(args, name) is not None and getattr(args, name) is not False:
            why = " (pretraining always starts from a new model)" if name == "reading_params_path" else ""
            print(f"run.py: note: --function={args.function} does not read --{name}{why}", file=sys.stderr)
    return args


def compile_flag(args):
    """TrainerConfig.compile as the compile flags set it: False, a mode, True, or "auto" (none given)."""
    if args.no_compile:
        return False
    return (args.compile_mode or True) if (args.compile or args.compile_mode) else "auto"


def asked_compile_mode(args):
    """(the torch.compile mode a training run of `args` asks for, whether GPT_COMPILE chose it), as
    fastpath.compile_setting decides it with the run's length unknown (so "auto" reads only GPT_COMPILE);
    None for no compiling, torch's default mode or a backend name."""
    if args.reference_train:  # the course's loop never compiles
        return None, False
    config = TrainerConfig(**trainer_settings(args))
    mode = (compile_setting(config) or {}).get("mode")
    return mode, mode is not None and config.compile == "auto"


def unknown_compile_backend(args):
    """A line naming GPT_COMPILE when a training run would read it and torch knows no backend of its name
    (`yes`, a typo); None otherwise. compile_setting takes any string that is not a mode for a backend's
    name, and torch.compile then failed at the first step with a traceback."""
    if args.reference_train or args.function == "evaluate" or compile_flag(args) != "auto":
        return None
    value = os.environ.get("GPT_COMPILE")
    backend = (compile_setting(TrainerConfig(compile="auto")) or {}).get("backend") if value is not None else None
    if backend is None:
        return None
    try:
        import torch._dynamo
        known = torch._dynamo.list_backends(exclude_tags=())
    except Exception:  # a torch without the list: let torch.compile judge the name
        return None
    if backend in known:
        return None
    return (f"GPT_COMPILE={value}: not 0 or 1, a torch.compile mode ({', '.join(COMPILE_MODES)}) or a backend "
            f"torch knows (inductor, eager, aot_eager, ...); fix it or unset it")


def build_model(args, pretrain_dataset):
    """The one place a run's settings become a model configuration and a model (`args` needs
    variant, n_layer, n_head, n_embd; dropout and reference_train are optional: evaluation uses neither)."""
    p = getattr(args, "dropout", None)
    mconf = GPTConfig(pretrain_dataset.vocab_size, pretrain_dataset.block_size,
                      n_layer=args.n_layer, n_head=args.n_head, n_embd=args.n_embd,
                      **({} if p is None else dict(embd_pdrop=p, resid_pdrop=p, attn_pdrop=p)))
    if getattr(args, "reference_train", False) and getattr(args, "function", None) != "evaluate":
        mconf.fast_attention = False  # the course's masked softmax (attention.py's reference path)
    if args.variant == "vanilla":
        return helper.initialize_vanilla_model(mconf)
    return helper.initialize_synthesizer_model(mconf)


def default_log_path(args):
    """--log_path, else <writing_params_path>.log.jsonl; os.devnull when the params go to a special file
    (/dev/null, a FIFO): beside /dev/null the log was a regular file made in /dev."""
    if args.log_path:
        return args.log_path
    if is_special_file(args.writing_params_path):
        return os.devnull
    return args.writing_params_path + ".log.jsonl"


def state_path(args):
    """Where training keeps its state for --resume: <writing_params_path>.state (None for a special file)."""
    return None if is_special_file(args.writing_params_path) else args.writing_params_path + ".state"


NEW_MODEL = "a new model"  # start_params' two forms, which ask.py reads back from a finetuned card's run.start
STARTED_FROM = "--reading_params_path of sha256 "


def start_params(args):
    """What a training run's weights start as, for its state's check on --resume: a finetuning's
    --reading_params_path by its sha256 (not its path: the same params moved are the same start), else a new
    model. Read after load_params, so the file is a readable regular one."""
    if args.function != "finetune" or args.reading_params_path is None:
        return NEW_MODEL
    return f"{STARTED_FROM}{(sha256_of(args.reading_params_path) or 'unknown')[:16]}"


def check_batch_splits(batch_size, args):
    """Under torchrun, a DataError unless the batch splits evenly among the processes (each takes batch_size / N
    rows): the trainer's ValueError came after the data was read, as a traceback from every process."""
    world = distributed_env()[1]
    if batch_size % world:
        given = "--batch_size" if args.batch_size is not None else f"the {args.function} part's batch size"
        raise DataError(f"{given} {batch_size} does not split among the {world} processes torchrun started (each takes "
                        f"batch_size / {world} rows); give --batch_size a multiple of {world}, or another "
                        f"--nproc_per_node")


def trainer_settings(args):
    """The TrainerConfig fields that the flags of `args` set, by name, only those given: the one place where
    flags become training settings (apply_overrides puts them on the part's config; asked_compile_mode reads
    the compile decision from them before any file is read)."""
    settings = {name: getattr(args, name) for name in TRAINER_OVERRIDES if getattr(args, name) is not None}
    if args.state_every is not None:
        settings["state_every"] = args.state_every
    if compile_flag(args) != "auto":
        settings["compile"] = compile_flag(args)
    if args.bf16:
        settings["amp"] = True
    if args.step_graphs:
        settings["step_graphs"] = True
    if args.pack or args.no_pack:
        settings["pack"] = bool(args.pack)
    if args.reference_train:
        settings["fast"] = False  # the course's loop (trainer.py: TrainerConfig.fast)
    return settings


def apply_overrides(tconf, args):
    """Command-line overrides of the part's TrainerConfig (trainer_settings), and the run's files: where its loss
    log and training state go, the params it starts from, its seed."""
    for name, value in trainer_settings(args).items():
        setattr(tconf, name, value)
    tconf.log_path = default_log_path(args)
    tconf.state_path, tconf.resume = state_path(args), args.resume
    tconf.start_params, tconf.seed = start_params(args), args.seed
    return tconf


def run_record(model, tconf, trainer):
    """What repeating a training run takes, for the card beside its params: the settings a --resume checks
    (resume.run_settings: seed, optimisation, dropout, the data's digest), how it computed (the trainer's
    record: device, processes, CPU threads, speed options, torch), Python's version and the commit of this
    checkout ("+changes" when its tracked files differ from it; None outside git)."""
    settings = resume.run_settings(model, tconf, trainer.train_dataset, trainer.test_dataset)
    return {**settings, "computed": getattr(trainer, "record", None), "python": sys.version.split()[0],
            "commit": checkout_commit()}


def read_questions(path, stoi, block_size):
    """The questions of an evaluation TSV as the course's evaluation reads them, checked against the
    vocabulary and the block size.

    The course takes each raw line up to its first tab: a dev line (`question<TAB>place`) gives the
    question alone, but a line without a tab (birth_test_inputs.tsv) keeps its newline, so the model
    reads "question\n" and then MASK. Kept, so test predictions are the course's for the same params.
    """
    text = read_text(path, "evaluation corpus")
    n_lines = text.count("\n") + 1
    rows = parse_tsv(text, path, require_label=False)
    if not rows:
        raise DataError(f"{path}: no questions to answer; give a file of `question` or `question<TAB>place` lines")
    labelled = rows[0][1] is not None  # like the course's evaluate_places, the first line decides
    questions = []
    for q, place, lineno in rows:
        if (place is not None) != labelled:
            raise DataError(f"{path}:{lineno}: {'no' if labelled else 'a'} tab-separated place, unlike line "
                            f"{rows[0][2]}; give every line `question<TAB>place`, or every line the question alone")
        if place is None and lineno < n_lines:  # a line without a tab, followed by a newline
            q += "\n"
        check_chars(q, stoi, path, lineno)
        if len(q) + 1 >= block_size and place is None and not q.rstrip().endswith("?"):
            raise DataError(f"{path}:{lineno}: {len(q)} characters that are no question (a biography? the pretraining "
                            f"corpus?); give the questions to answer, such as birth_dev.tsv or birth_test_inputs.tsv")
        if len(q) + 1 >= block_size:
            raise DataError(f"{path}:{lineno}: the question has {len(q)} characters; with its MASK it leaves no "
                            f"room to answer in a block of {block_size}, the size the params were trained with; "
                            f"shorten the question")
        questions.append(q)
    return questions


def check_all_inputs(argv):
    """`./run.sh all`'s look at its modes' inputs before the first trains. `argv`: the pretraining corpus, the
    finetuning corpus, the dev and the test questions, then the flags `all` gives every mode. The model size flags
    among them are checked as run.py checks them (a bad one: its one-line error, exit status 2; the other flags are
    the first mode's to check), then each file is read as its modes read it, at their --block_size; the first bad
    line is one line on stderr, `run.sh all: ` before it, and exit status 2 (the modes say any notes on the files).
    A bad line of birth_test_inputs.tsv stopped `all` at its first test evaluation, after the finetuning before it
    (hours at the course's size on a CPU)."""
    wiki, train, dev, test, *flags = argv
    p = add_model_flags(OneLineParser(prog="run.py", add_help=False))
    size, _ = p.parse_known_args(flags)
    check_model_flags(p, size)  # (--block_size 8 blamed a correct file: "more than the block size 8")
    block_size = size.block_size
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # notes on the files: the modes say them
            vocab = CharCorruptionDataset(read_text(wiki, "pretraining corpus"), block_size, wiki)
            NameDataset(read_text(train, "finetuning corpus"), vocab, path=train)
            for path in (dev, test):
                read_questions(path, vocab.stoi, block_size)
    except DataError as e:
        print(f"run.sh all: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:  # before any mode: nothing to say but that it stopped
        print("run.sh all: interrupted while its inputs were read; no mode ran", file=sys.stderr)
        sys.exit(130)


def params_hints(args=None):
    """How load_params words its fixes. A run.sh mode sets --variant and the corpus itself and refuses
    them given again, so under run.sh (which sets RUN_SH_MODE) the hints name its modes and DATA_DIR; a
    command of the course's form (`args`' positionals) gave its variant and corpus as positionals, and is told
    to change those (--variant beside a positional variant is refused as given twice)."""
    mode = os.environ.get("RUN_SH_MODE")
    if not mode:
        hints = {}
        if args is not None and len(args.positional) >= 2:  # the course's form, `run.py evaluate vanilla wiki.txt`
            hints["variant_fix"] = "give {have} as the variant, the second positional, or use the {want} params file"
        if args is not None and len(args.positional) >= 3:
            hints["corpus_flag"] = "pretraining corpus (the third positional)"
        return hints
    other = ("use a {have} mode, or give it {want} params" if "with_pretrain" in mode else
             "give it {want} params (without pretraining there is only the vanilla model)")
    return dict(corpus_flag="DATA_DIR (the folder of the wiki.txt)",
                variant_fix="this run.sh mode runs the {want} model; " + other)


def check_pretrained(path, card=None):
    """A finetuning's --reading_params_path whose card says they were finetuned, not pretrained: a run.sh mode
    (which reads the pretraining's file) refuses them, run.py notes them. A course file has no card. `card`:
    their card, read already (read_card hashes the params), else read here."""
    if ((read_card(path) if card is None else card) or {}).get("function") != "finetune":
        return
    said = f"{path} were finetuned, not pretrained (their card says)"
    mode = os.environ.get("RUN_SH_MODE")
    if mode:
        raise DataError(f"{said}: finetuning them again would make {mode}'s params of two finetunings; make the "
                        f"pretrained params with ./run.sh {mode.split('_')[0]}_pretrain")
    if is_main_process():  # under torchrun, rank 0 alone says it
        print(f"run.py: note: {said}: this run finetunes them again", file=sys.stderr)


def note_other_corpus(args, card):
    """One note when `card`, that of --reading_params_path, records a pretraining corpus of other bytes than
    --pretrain_corpus_path (card.other_corpus; the vocabulary, checked by load_params, is the same): not a
    refusal, since a run across corpora can be meant. A finetuning then teaches answers about people the
    params may never have read of; an evaluation answers as with their own corpus (it reads this one for
    the vocabulary alone), but its questions are likely this corpus's people. Nothing is said where the
    card is of an earlier version (no such field), or there is none."""
    other = other_corpus(card, args.pretrain_corpus_path)
    if other is None or not is_main_process():  # under torchrun, rank 0 alone says it
        return
    ours = other[1]
    if args.function == "finetune":
        means = (f"the people this finetuning asks about, likely those of {ours['path']}, are ones they never read "
                 f"of (unless that is the experiment: give the corpus they were pretrained on, or params pretrained "
                 f"on this one)")
    else:
        means = (f"evaluating reads --pretrain_corpus_path only for its vocabulary (the same), so the answers do not "
                 f"change, but the model never read of the people of {ours['path']}, whom these questions likely "
                 f"ask about")
    said = other_corpus_words(args.reading_params_path, other, "--pretrain_corpus_path ")
    print(f"run.py: note: {said}: {means}", file=sys.stderr)


def evaluate(args, model, pretrain_dataset, device):
    load_params(model, args.reading_params_path, itos=pretrain_dataset.itos, **params_hints(args))
    card = read_card(args.reading_params_path)
    if (card or {}).get("function") == "pretrain":  # a course's file: no card
        print(f"run.py: note: {args.reading_params_path} were pretrained, not finetuned (their card says): they were "
              f"never taught to answer, so expect few right; finetune them first (run.sh's "
              f"{args.variant}_finetune_with_pretrain makes the params its eval modes read)", file=sys.stderr)
    note_other_corpus(args, card)
    model = model.to(device)
    questions = read_questions(args.eval_corpus_path, pretrain_dataset.stoi, pretrain_dataset.block_size)
    start = time.time()
    predictions = answer_questions(model, questions, pretrain_dataset.stoi, pretrain_dataset.itos,
                                   reference=args.reference_eval)
    print(f"decoded {len(questions)} questions in {time.time() - start:.1f} s on {device}")
    # one line a question: a newline the model wrote inside an answer goes to the file as a space
    # (the course writes it as is, and every later prediction then sits on the wrong line)
    atomic_write_text(args.outputs_path, "".join(p.replace("\n", " ") + "\n" for p in predictions))
    total, correct = evaluate_places(args.eval_corpus_path, predictions)
    if total > 0:
        print("Correct: {} out of {}: {}%".format(correct, total, correct / total * 100))
        print(f"Predictions written to {args.outputs_path}")  # beyond the course, which names only the test's
    else:
        print(f"Predictions written to {args.outputs_path}; no targets provided")
    if predictions and not any(predictions):
        print(f"run.py: note: all {len(predictions)} answers are empty (the model writes the closing MASK at once): "
              f"it has not learned to answer yet; train it longer (the course's epochs, without --max_epochs)",
              file=sys.stderr)
    return total, correct


def answer_questions(model, questions, stoi, itos, reference=False):
    """An evaluation's answers to `questions`: predict_places, all of them decoded together with a key/value
    cache; or with `reference` (--reference_eval, and src/bench.py's reference) the course's computation: its
    loop, one greedy sample() a question (predict_places_reference), through its masked-softmax attention
    (attention.py's reference path, taken for this call only). Their answers agree but for a near-exact tie."""
    if not reference:
        return predict_places(model, questions, stoi, itos)
    with attention_paths(model, False):
        return predict_places_reference(model, questions, stoi, itos)


def check_predictions_path(path, eval_path, inputs):
    """DataError unless `path` can take the predictions of an evaluation of `eval_path`: as any output
    (check_output_path), and over an existing file only when an evaluation wrote it. A file named as the
    course names predictions (*.predictions) is replaced whatever its answers read like (a first answer
    ending "born?" or opening with "{" reads as a corpus or a loss log); under another name, text only
    when it holds one line a question of this corpus (an empty prediction an empty line), so that notes
    of the user's (short-lined text) are not. The name that counts is the replaced file's: a link named
    *.predictions to a file of another name is the other name's case."""
    if os.path.realpath(path).endswith(".predictions"):
        check_output_path(path, "predictions", inputs, replaces=("text", "corpus", "long text", "log"))
        return
    check_output_path(path, "predictions", inputs, replaces=("text",))
    if not os.path.isfile(path) or reads_as(path) != "text":
        return
    try:
        with open(path, "rb") as f:
            raw = f.read()
        text = raw.decode("utf-16") if raw.startswith((b"\xff\xfe", b"\xfe\xff")) else raw.decode("utf-8", "replace")
        want = len(parse_tsv(read_text(eval_path, "evaluation corpus"), eval_path, require_label=False))
    except (OSError, UnicodeDecodeError, DataError):  # the evaluation says what is wrong with its corpus
        return
    have = len(text.split("\n")) - text.endswith("\n")  # lines, the last without its newline too
    if have == want:
        return
    raise DataError(f"{path}: is text of {have} line{'s' if have != 1 else ''}, not the predictions an earlier "
                    f"evaluation of {eval_path} wrote ({want} line{'s' if want != 1 else ''}), so it is not "
                    f"replaced; give the predictions another path (the course's end in .predictions), or move the "
                    f"file away first")


def check_outputs(args):
    """Before any work: every file this run writes can be written and overwrites none of its inputs."""
    inputs = [args.pretrain_corpus_path, args.reading_params_path, args.finetune_corpus_path, args.eval_corpus_path]
    if args.function == "evaluate":
        check_predictions_path(args.outputs_path, args.eval_corpus_path, inputs)
        return
    params = args.writing_params_path
    check_output_path(params, "params", inputs, replaces=("params",))
    log, derived = default_log_path(args), None if args.log_path else "--writing_params_path"
    if args.log_path and os.path.basename(args.log_path).endswith(".partial"):
        # another run's log in progress: renamed over it, this run's lines became that run's log at its end
        raise DataError(f"{args.log_path}: a name ending in .partial is where a run writes its loss log while it "
                        f"trains; give --log_path a name without it (this run writes {args.log_path}.partial itself)")
    state = state_path(args)
    # the other files this run writes beside the params, which a --log_path must not name either
    written = {params: "params", card_path(params): "params' card", **({state: "training state"} if state else {})}
    check_output_path(log, "loss log", inputs, replaces=("log",), named_by=derived, outputs=written)
    if not is_special_file(log):  # written as <log>.partial while training
        check_output_path(partial_log_path(log), "loss log", inputs, replaces=("log",), named_by=derived,
                          outputs=written)
    # (not the model card's path: a card that cannot be written costs only its checks, card.write_card; its
    # name is as long as the loss log's)
    if state:
        check_output_path(state, "training state", inputs, replaces=("state",), named_by="--writing_params_path",
                          outputs={params: "params"})
        if os.path.isfile(state) and not (args.resume or args.restart):  # hours of training, lost at the first save
            raise DataError(f"{state}: the training state of an interrupted run{resume.describe(state)}; add --resume "
                            f"to go on from it, or --restart to start over (this run then replaces it)")


VOCAB_WEIGHTS = ("tok_emb.weight", "head.weight")  # a row a character: their count is the corpus's, not the size's


def weight_count(state):
    """How many trained numbers a state_dict holds, or a params file (its path), beside those the vocabulary sets
    (VOCAB_WEIGHTS) and the attention masks (buffers, block_size squared a layer, never trained): the model's size
    that its flags set, so that a run on a corpus of one character fewer is not a smaller model. None when it
    cannot be read as one."""
    if isinstance(state, str):
        try:
            state = load_torch_file(state)
        except Exception:  # noqa: BLE001 - not a params file: the run's own checks name what it is
            return None
    if not isinstance(state, dict):
        return None
    return sum(v.numel() for k, v in state.items() if isinstance(v, torch.Tensor) and isinstance(k, str)
               and k.rsplit(".", 1)[-1] != "mask" and not any(k == n or k.endswith("." + n) for n in VOCAB_WEIGHTS)
               ) or None


def check_longer_run_kept(args, max_epochs, weights=None):
    """Before training: refuse to replace params that a longer finished run wrote, as their card says (the epochs
    run.py trained them, while its sha256 is theirs) or else their loss log beside them (<params>.log.jsonl, not
    older than they are by more than ledger.LOG_LAG: where the card is gone, or the params are a course's or
    another tool's), so that a trial run (`./run.sh all --max_epochs 1`) cannot replace hours of training. The
    card first, as the grader's trained_epochs reads them: it is tied to the params by their sha256, while a log
    can be another run's (one whose params were not written, or whose log went elsewhere with --log_path).
    Params that are a symbolic link are looked at beside the link and beside the file it names (the run that
    trained them wrote its log and card there; this run writes the file through the link).
    `weights`, this run's model's count (weight_count's): the training compared is epochs times weights, so a
    smaller model's trial (`--n_layer 1`) of as many epochs keeps them too. Params whose card says the other
    function trained them (a finetuning run writing over pretrained params: a path mistyped) are refused whatever
    the epochs: a finetuning epoch is a small fraction of a pretraining one, so the two do not compare.
    --restart replaces them; --resume goes on with a run that was checked when it started."""
    if args.restart or args.resume or not os.path.isfile(args.writing_params_path):
        return
    training = {"pretrain": "pretraining", "finetune": "finetuning"}
    for params in dict.fromkeys([args.writing_params_path, os.path.realpath(args.writing_params_path)]):
        card = read_card(params) or {}
        function = card.get("function")  # a card edited by hand may hold any JSON there: a list was a TypeError
        if isinstance(function, str) and function in training and function != args.function:
            raise DataError(f"{args.writing_params_path}: the params of a finished {training[card['function']]} run "
                            f"(its card {card_path(params)} says), which this {training[args.function]} run would "
                            f"replace; write elsewhere (OUT_DIR=FOLDER ./run.sh MODE), move the file away, or add "
                            f"--restart to replace it")
        epochs, said = card.get("epochs"), f"its card {card_path(params)} says"
        if not isinstance(epochs, int) or isinstance(epochs, bool):
            log, epochs = params + ".log.jsonl", None
            if os.path.isfile(log) and os.path.getmtime(log) >= os.path.getmtime(params) - LOG_LAG:  # else params
                epochs, said = logged_epochs(log), f"its loss log {log} says"                      # written since
            if epochs is None:
                continue
        theirs = weight_count(params) if weights else None
        if theirs and theirs != weights:
            if epochs * theirs > max_epochs * weights:
                size = "larger" if theirs > weights else "smaller"  # (the header's parameters count tok_emb, head)
                raise DataError(f"{args.writing_params_path}: the params of a finished {epochs}-epoch run of a {size} "
                                f"model ({said}; {theirs:,} weights beside the vocabulary's tok_emb and head, against "
                                f"{weights:,}), more training than this {max_epochs}-epoch run would replace them "
                                f"with; write elsewhere (OUT_DIR=FOLDER ./run.sh MODE), move the file away, or add "
                                f"--restart to replace them")
        elif epochs > max_epochs:
            raise DataError(f"{args.writing_params_path}: the params of a finished {epochs}-epoch run ({said}), which "
                            f"this {max_epochs}-epoch run would replace; write elsewhere (OUT_DIR=FOLDER ./run.sh "
                            f"MODE), move the file away, or add --restart to replace it")


LOG_LINE_BYTES = 144  # a step's loss log line (up to about 120 bytes; in a training state 10 more), log and state
RECORD_BYTES = 512  # torch.save's headers and alignment for each tensor (measured: 270-400 bytes)


def output_sizes(model, steps, state, log):
    """{what: bytes} of the files a training run of `steps` steps writes beside its params, for check_room: the
    params (the state_dict's tensors), its loss log when `log` (it goes beside them) and, when `state` (a run of
    more than one epoch can save one between epochs), its training state, which holds the params again with
    AdamW's two moments of every weight and the log's lines. A little above the files measured."""
    tensors = model.state_dict().values()
    params = sum(t.numel() * t.element_size() for t in tensors) + RECORD_BYTES * len(tensors) + 4096
    sizes = {"params": params}
    if log:
        sizes["loss log"] = steps * LOG_LINE_BYTES
    if state:
        weights = [p for p in model.parameters() if p.requires_grad]
        sizes["training state"] = (params + 2 * sum(p.numel() * p.element_size() for p in weights)
                                   + 3 * RECORD_BYTES * len(weights) + steps * LOG_LINE_BYTES)
    return sizes


def check_room_for(args, model, trainer, max_epochs, batch_size):
    """check_room for a training run: its params and loss log (when beside them) must fit, and a note says when a
    training state would not fit beside them (less the interrupted run's that a --resume replaces: its state and
    partial log). Every torchrun process checks, as they stop together; rank 0 says the note."""
    params, log, state = args.writing_params_path, default_log_path(args), state_path(args)
    if args.resume and state and not os.path.isfile(state):  # the trainer says there is nothing to resume
        return
    beside = not is_special_file(log) and (os.path.dirname(os.path.realpath(log))
                                           == os.path.dirname(os.path.realpath(params)))
    steps = -(-len(trainer.train_dataset) // batch_size) * max_epochs
    sizes = output_sizes(model, steps, state is not None and max_epochs > 1, beside)
    earlier = [state] + ([partial_log_path(log)] if beside else [])  # an interrupted run's, replaced by this one's
    replaced = sum(os.path.getsize(p) for p in earlier if p and os.path.isfile(p))
    saved = sizes.pop("training state", 0)
    note = check_room(params, sizes, saved, replaced, [params] + ([state] if state else []))
    if note and is_main_process():
        print(f"run.py: note: {note}", file=sys.stderr)


def main(argv=None):
    args = parse_args(argv)
    # before any tensor work starts torch's CPU threads, so that they all flush denormals
    # (threads.denormals_flushed); the course's loops compute as the course's code does: a training run's
    # --reference_train, an evaluation's --reference_eval (the flag of the other kind is not read)
    reference = args.reference_eval if args.function == "evaluate" else args.reference_train
    with denormals_flushed(not reference):
        return train_or_evaluate(args)


def train_or_evaluate(args):
    """The run main() parsed the flags of: the data and the model, then training or evaluation. A training
    run holds its params' lock (training_lock), and its loss log's (log_lock, default or --log_path), from before its
    output check to its end: a second run into the same params or log stops at once (under torchrun rank 0 holds
    them, and evaluates alone)."""
    params = args.writing_params_path
    if args.function == "evaluate" and not is_main_process():  # under torchrun rank 0 evaluates alone: the
        return None                                              # others would write the same predictions
    if args.function == "evaluate" or not is_main_process() or is_special_file(params):
        return train_or_evaluate_unlocked(args)
    # its loss log is locked too, the default one beside the params included: a run given that log as its
    # --log_path wrote the same <log>.partial (the params' own path given as one is the output check's to refuse)
    log = default_log_path(args)
    own_log = os.path.realpath(log) != os.path.realpath(params)
    with training_lock(params), (log_lock(log) if own_log else contextlib.nullcontext()):
        return train_or_evaluate_unlocked(args)


def train_or_evaluate_unlocked(args):
    check_outputs(args)
    set_seed(args.seed)
    device = get_device()
    text = read_text(args.pretrain_corpus_path, "pretraining corpus")
    pretrain_dataset = CharCorruptionDataset(text, args.block_size, args.pretrain_corpus_path)
    model = build_model(args, pretrain_dataset)
    n_params = sum(p.numel() for p in model.parameters())
    if is_main_process():  # once, not once a torchrun process
        print(f"{args.function} {args.variant}: {n_params:,} parameters, vocabulary {pretrain_dataset.vocab_size}, "
              f"block {args.block_size}, device {device}")
    if args.function == "evaluate":
        return evaluate(args, model, pretrain_dataset, device)
    # the corpus the weights were pretrained on, for their card: this one, hashed as it was read (not after hours
    # of training), or for a finetuning the one the card of its pretrained params names (None: not known)
    corpus = None
    if args.function == "pretrain":
        corpus = corpus_record(args.pretrain_corpus_path) if is_main_process() else None
        tconf, trainer = helper.pretrain(pretrain_dataset, args.block_size, model)
    else:
        if args.reading_params_path is not None:  # checked here, against the corpus's vocabulary (their card) and in
            # run.sh's words under run.sh; the course's helper then loads them again, knowing no vocabulary
            load_params(model, args.reading_params_path, itos=pretrain_dataset.itos, **params_hints(args))
            card = read_card(args.reading_params_path)  # once: it hashes the params
            check_pretrained(args.reading_params_path, card)
            corpus = pretrain_corpus(card)
            note_other_corpus(args, card)
        tconf, trainer = helper.finetune(args.reading_params_path, args.finetune_corpus_path,
                                         pretrain_dataset, args.block_size, model)
    apply_overrides(tconf, args)
    check_batch_splits(tconf.batch_size, args)
    check_longer_run_kept(args, tconf.max_epochs, weight_count(model.state_dict()))
    check_room_for(args, model, trainer, tconf.max_epochs, tconf.batch_size)
    helper.train(model, args.writing_params_path, trainer,  # the card (what shapes do not say) with the params
                 describe=lambda: write_card(args.writing_params_path, model, pretrain_dataset.itos, args.function,
                                             tconf.max_epochs, corpus, run_record(model, tconf, trainer)))
    if is_main_process():  # (under torchrun, rank 0 writes them)
        print(f"Params written to {args.writing_params_path}")


if __name__ == "__main__":
    # (a torchrun process on the CPU leaves by os._exit once its files are written: trainer.exit_past_gloo)
    exit_past_gloo(lambda: run_cli(main, keep_working=True))

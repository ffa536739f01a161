"""The model-size flags shared by the command lines that build the course's GPT (run.py, memorised.py,
plots.py attention, ask.py): one definition, one set of checks, each failure a one-line usage error.

Standard library only at import: plots.py refuses a bad flag before it loads torch (the other tools load
torch as they are imported, then read their flags; `settings_from_params`, theirs, reads a params file).
"""
import argparse
import os
import sys

COURSE_SIZE = dict(n_layer=4, n_head=8, n_embd=256, block_size=128)  # the course's GPT
MAX_BLOCK = 2048  # the causal masks hold block_size^2 floats per layer
MAX_PARAMS = 2 * 10 ** 9  # float32 weights of 8 GB, before AdamW's two moments: beyond any run of this task
MIN_BLOCK = 17    # span corruption: a document cut to int(7/8 block) plus 3 MASKs (dataset.MIN_BLOCK)


def add_model_flags(parser, from_params=False):
    """--n_layer, --n_head, --n_embd, --block_size, each defaulting to the course's value; with
    `from_params` (the tools that load one --params file), to None, which `fill_size` replaces."""
    for name, default in COURSE_SIZE.items():
        parser.add_argument(f"--{name}", type=int, default=None if from_params else default,
                            help=f"default: what the --params file says (its shapes, its card), else {default}, "
                                 f"the course's" if from_params else f"default {default}, the course's")
    return parser


def fill_size(args, shape):
    """The size flags (and --variant) not given: from `shape` (params.params_shape: what the params file
    says), else the course's. A vanilla file without a card does not say its heads: the course's 8.
    Returns the names of the flags that took the course's value."""
    guessed = []
    for name, default in COURSE_SIZE.items():
        if getattr(args, name) is None:
            setattr(args, name, shape.get(name, default))
            if name not in shape:
                guessed.append(name)
    if getattr(args, "variant", "") is None:
        args.variant = "synthesizer" if shape.get("synthesizer") else "vanilla"
    return guessed


def size_from_flags(flags):
    """{n_layer, n_head, n_embd, block_size} of a list of src/run.py flags (others ignored), the course's
    where absent."""
    p = argparse.ArgumentParser(add_help=False)
    for name, default in COURSE_SIZE.items():
        p.add_argument(f"--{name}", type=int, default=default)
    known, _ = p.parse_known_args([str(f) for f in (flags or [])])
    return vars(known)


def size_flags(size):
    """The flags that give `size` ({n_layer, ...}), those at the course's value left out."""
    return [x for name, v in size.items() if v != COURSE_SIZE[name] for x in (f"--{name}", str(v))]


def check_model_flags(parser, args):
    """parser.error (one line, exit 2) for a size no GPT can have."""
    for name in ("n_layer", "n_head", "n_embd"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    if args.n_embd % args.n_head:
        parser.error(f"--n_embd {args.n_embd} must be a multiple of --n_head {args.n_head} "
                     f"(each head takes n_embd / n_head)")
    if not MIN_BLOCK <= args.block_size <= MAX_BLOCK:
        parser.error(f"--block_size must be between {MIN_BLOCK} (span corruption: 7/8 of it for the text, then 3 "
                     f"MASKs) and {MAX_BLOCK}, got {args.block_size}")
    weights = args.n_layer * 12 * args.n_embd ** 2  # each block: attention 4 C^2, MLP 8 C^2
    if weights > MAX_PARAMS:
        parser.error(f"--n_layer {args.n_layer} --n_embd {args.n_embd} make a model of about {weights:,} parameters "
                     f"({weights * 4 / 2 ** 30:,.0f} GiB of weights alone); the course's has 3.3 million: "
                     f"lower them")


def settings_from_params(parser, args, default_data, corpus_flag="--data-dir"):
    """The flags of a tool that loads a --params file (ask, memorised, plot attention) left out, from that file: the
    corpus folder (of the folder `data` beside it, as the demo keeps its world, and `default_data`, the
    first whose wiki.txt is the corpus its card says they were pretrained on, else the first of the
    vocabulary it records (card.corpus_folder); else `default_data`, a note saying so when it is another,
    naming `corpus_flag`), then the model size and variant (fill_size). Returns params_shape's dict. Needs
    torch (call it once the tool has loaded it)."""
    from submission.card import corpus_folder, other_corpus, pretrain_corpus, read_card
    from submission.params import params_shape
    # `--data-dir "$DIR"` with DIR unset: not the current folder
    if args.data_dir is not None and not args.data_dir.strip():
        parser.error(f"{corpus_flag} is empty; give a folder, or leave the flag out")
    if args.data_dir is None:
        beside = os.path.join(os.path.dirname(args.params) or ".", "data")
        args.data_dir = corpus_folder(args.params, [beside, default_data]) or default_data
        if os.path.realpath(args.data_dir) != os.path.realpath(default_data):
            card = read_card(args.params)  # the very text they were pretrained on, or one of their characters
            same = pretrain_corpus(card) and not other_corpus(card, os.path.join(args.data_dir, "wiki.txt"))
            which = (f"the corpus {args.params} were pretrained on" if same else
                     f"the corpus whose vocabulary {args.params} was trained with")
            print(f"note: reading {args.data_dir}, {which} (its card says); {corpus_flag} chooses another",
                  file=sys.stderr)
    shape = params_shape(args.params)
    if "n_head" in fill_size(args, shape) and shape and args.n_embd % args.n_head:
        parser.error(f"{args.params} does not say how many heads it has (a vanilla file without its card, "
                     f"{args.params}.card.json): give --n_head, a divisor of its width {args.n_embd}")
    return shape


def note_other_corpus(params, corpus, means):
    """One note on stderr when the card of `params` records a pretraining corpus of other bytes than
    `corpus`, the wiki.txt a tool reads for them (card.other_corpus, in run.py's wording: card.
    other_corpus_words), followed by `means`, what that does to the tool's figures. For the tools whose
    figures are the biographies of `corpus` probed (memorised, ask --pretrained): a model probed on a text
    it never read measures nothing of what it stored. Nothing is said for a card without the field."""
    from submission.card import other_corpus, other_corpus_words, read_card
    other = other_corpus(read_card(params), corpus)
    if other is not None:
        print(f"note: {other_corpus_words(params, other)}: {means}", file=sys.stderr)

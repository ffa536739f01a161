"""The model-size flags shared by the command lines that build the course's GPT (run.py, memorised.py,
plots.py attention): one definition, one set of checks, each failure a one-line usage error.

Standard library only, so a bad flag is refused before torch loads.
"""

COURSE_SIZE = dict(n_layer=4, n_head=8, n_embd=256, block_size=128)  # the course's GPT
MAX_BLOCK = 2048  # the causal masks hold block_size^2 floats per layer


def add_model_flags(parser):
    """--n_layer, --n_head, --n_embd, --block_size, each defaulting to the course's value."""
    for name, default in COURSE_SIZE.items():
        parser.add_argument(f"--{name}", type=int, default=default, help=f"default {default}, the course's")
    return parser


def check_model_flags(parser, args):
    """parser.error (one line, exit 2) for a size no GPT can have."""
    for name in ("n_layer", "n_head", "n_embd"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    if args.n_embd % args.n_head:
        parser.error(f"--n_embd {args.n_embd} must be a multiple of --n_head {args.n_head} "
                     f"(each head takes n_embd / n_head)")
    if not 8 <= args.block_size <= MAX_BLOCK:
        parser.error(f"--block_size must be between 8 (span corruption needs room) and {MAX_BLOCK}, "
                     f"got {args.block_size}")

"""The handout's deliverables: check the 18 files it asks for (section 1, "Deliverables") and zip them.

    ./run.sh deliverables                 # src/submission/ (OUT_DIR) against data/ (DATA_DIR) -> submission.zip
    python src/deliverables.py --submission-dir DIR --data-dir DIR --zip PATH

Each file gets one line: `ok` with what was checked, `missing` with the run.sh mode that makes it, or
`bad` with what is wrong and the fix. The code files must parse; the params must load into the course's
model of their variant (4 layers, 8 heads, 256 dimensions, block 128, the vocabulary of --data-dir's
wiki.txt), which is what the course's grader builds; each predictions file must have one line per
question of its split, as the grader counts them (dev files also show their accuracy). Only when all
18 are in order is the zip written (atomically), holding them under their handout paths
(src/submission/NAME); the written answers' PDF (`make`) is submitted apart. Exit status: 0 when the
zip is written, 1 when a file is missing or bad, 2 for a usage or data error.
"""
import argparse
import os
import re
import shlex
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from modelflags import COURSE_SIZE  # noqa: E402
from startup import interruptible_start  # noqa: E402

with interruptible_start("deliverables.py"):  # torch loads here
    import grader
    import run as driver
    from submission.dataset import CharCorruptionDataset, parse_tsv, read_text
    from submission.utils import (OneLineParser, ParamsError, atomic_write, check_output_path, load_params,
                                  run_cli)

CODE = ["__init__.py", "attention.py", "dataset.py", "helper.py", "model.py", "trainer.py", "utils.py"]
PARAMS = {  # file: (variant, the run.sh mode that writes it, the modes before it)
    "vanilla.model.params": ("vanilla", "vanilla_finetune_without_pretrain", []),
    "vanilla.pretrain.params": ("vanilla", "vanilla_pretrain", []),
    "vanilla.finetune.params": ("vanilla", "vanilla_finetune_with_pretrain", ["vanilla_pretrain"]),
    "synthesizer.pretrain.params": ("synthesizer", "synthesizer_pretrain", []),
    "synthesizer.finetune.params": ("synthesizer", "synthesizer_finetune_with_pretrain", ["synthesizer_pretrain"]),
}
HANDOUT_ORDER = CODE + [  # the handout's numbered list, 1 to 18
    "vanilla.model.params", "vanilla.nopretrain.dev.predictions", "vanilla.nopretrain.test.predictions",
    "vanilla.pretrain.params", "vanilla.finetune.params", "vanilla.pretrain.dev.predictions",
    "vanilla.pretrain.test.predictions", "synthesizer.pretrain.params", "synthesizer.finetune.params",
    "synthesizer.pretrain.dev.predictions", "synthesizer.pretrain.test.predictions"]
QUESTIONS = {"dev": "birth_dev.tsv", "test": "birth_test_inputs.tsv"}  # what run.sh evaluates
PREDICTIONS = grader.PREDICTIONS  # file: (split, mode, the modes before it)


def make_command(mode, before, data_dir, submission_dir):
    """The run.sh command (with the modes before it) that makes a file, with the folders in use."""
    env = []  # quoted: it is pasted into a shell, and a folder may have a space in its name
    if os.path.abspath(data_dir) != os.path.abspath(os.path.join(ROOT, "data")):
        env.append(f"DATA_DIR={shlex.quote(os.path.abspath(data_dir))}")
    if os.path.abspath(submission_dir) != os.path.abspath(os.path.join(HERE, "submission")):
        env.append(f"OUT_DIR={shlex.quote(os.path.abspath(submission_dir))}")
    command = " ".join(env + ["./run.sh", mode])
    return command + (f" (after {', '.join(before)})" if before else "")


def check_code(path):
    """'parses' for a code file that Python can compile, else a ValueError saying where it does not."""
    with open(path, "rb") as f:
        source = f.read()
    try:
        compile(source, path, "exec")
    except SyntaxError as e:
        raise ValueError(f"line {e.lineno}: {e.msg}") from None
    except ValueError as e:  # a NUL byte
        raise ValueError(f"{e}: not Python source") from None
    return "parses"


def check_params(path, variant, vocab):
    """What the params are, once they have loaded into the course's model of `variant`."""
    args = argparse.Namespace(variant=variant, **{k: v for k, v in COURSE_SIZE.items() if k != "block_size"})
    model = driver.build_model(args, vocab)
    try:
        load_params(model, path)
    except ParamsError as e:  # "{path}: what is wrong; a fix in run.py's flags (the file looks like ...)"
        what = str(e)[len(path) + 2:].split("; ")[0]
        looks = re.search(r"the file looks like ([^)]*)\)", str(e))
        if looks:  # trained with other size flags than the course's
            what = f"not the course's model size: the file looks like {looks.group(1)}"
        raise ValueError(what) from None
    n = sum(p.numel() for p in model.parameters())
    return f"{variant}, the course's size ({n:,} parameters)"


def check_predictions(path, split, data_dir):
    """The line count against the split's questions (and the accuracy of a dev file)."""
    qpath = os.path.join(data_dir, QUESTIONS[split])
    questions = parse_tsv(read_text(qpath, f"{split} questions"), qpath, require_label=False)
    lines = grader.prediction_lines(path, len(questions))
    if len(lines) != len(questions):
        raise ValueError(f"{len(lines)} lines for the {len(questions)} questions of {QUESTIONS[split]}: one "
                         f"prediction a line, in order")
    note = f"{len(lines)} predictions"
    if split == "dev" and all(place is not None for _, place, _ in questions):
        right = sum(p.strip() == place for p, (_, place, _) in zip(lines, questions))
        note += f", dev accuracy {right / len(lines):.1%}" if lines else ""
    return note


def check(submission_dir, data_dir):
    """[(file, status, note)] for the 18 deliverables in handout order; status is ok, missing or bad."""
    wiki = os.path.join(data_dir, "wiki.txt")
    vocab = CharCorruptionDataset(read_text(wiki, "pretraining corpus"), COURSE_SIZE["block_size"], wiki)
    rows = []
    for name in HANDOUT_ORDER:
        path = os.path.join(submission_dir, name)
        if name in PARAMS:
            variant, mode, before = PARAMS[name]
        elif name in PREDICTIONS:
            _, mode, before = PREDICTIONS[name]
        else:
            mode, before = None, []
        if not os.path.isfile(path):
            fix = (f"make it with {make_command(mode, before, data_dir, submission_dir)}" if mode
                   else "the package's own file: restore it from git")
            rows.append((name, "missing", fix))
            continue
        try:
            if name in PARAMS:
                note = check_params(path, variant, vocab)
            elif name in PREDICTIONS:
                note = check_predictions(path, PREDICTIONS[name][0], data_dir)
            else:
                note = check_code(path)
        except ValueError as e:
            fix = f"; remake it with {make_command(mode, [], data_dir, submission_dir)}" if mode else "; fix it"
            rows.append((name, "bad", f"{e}{fix}"))
            continue
        rows.append((name, "ok", note))
    return rows


def write_zip(out, submission_dir, names):
    """The deliverables, under their handout paths (src/submission/NAME), as one zip written atomically."""
    def write(f):
        with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_DEFLATED) as z:
            for name in names:
                z.write(os.path.join(submission_dir, name), arcname=f"src/submission/{name}")
    atomic_write(out, write)


def main(argv=None):
    p = OneLineParser(prog="deliverables.py", description="Check the handout's 18 deliverables and zip them.")
    p.add_argument("--submission-dir", default=os.path.join(HERE, "submission"),
                   help="the folder of the code, params and predictions (default: src/submission/)")
    p.add_argument("--data-dir", default=os.path.join(ROOT, "data"),
                   help="the corpus they were made with: wiki.txt, birth_dev.tsv, birth_test_inputs.tsv "
                        "(default: data/)")
    p.add_argument("--zip", default=os.path.join(ROOT, "submission.zip"), help="default: submission.zip")
    args = p.parse_args(argv)
    inputs = [os.path.join(args.submission_dir, n) for n in HANDOUT_ORDER]
    check_output_path(args.zip, "zip", inputs=inputs)
    rows = check(args.submission_dir, args.data_dir)
    width = max(len(n) for n in HANDOUT_ORDER)
    for i, (name, status, note) in enumerate(rows, start=1):
        print(f"{i:2d}. {status:7s} {name:{width}s}  {note}")
    problems = [r for r in rows if r[1] != "ok"]
    if problems:
        print(f"{len(problems)} of {len(rows)} deliverables are missing or bad; no zip written", file=sys.stderr)
        return 1
    write_zip(args.zip, args.submission_dir, HANDOUT_ORDER)
    print(f"wrote {args.zip}: the {len(rows)} deliverables ({os.path.getsize(args.zip) / 2 ** 20:.1f} MiB); "
          f"the written answers' PDF (make) is submitted apart")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))

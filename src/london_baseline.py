"""The always-"London" baseline of part (d) of the CS224N/XCS224N Assignment 5 handout: the accuracy of
predicting London for every question.

Usage: python src/london_baseline.py [data/birth_dev.tsv]   (or ./run.sh london_baseline)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from oneline import OneLineParser  # noqa: E402
from startup import interruptible_start  # noqa: E402

with interruptible_start("london_baseline.py"):  # torch loads here
    from submission.dataset import DataError, parse_tsv, read_text
    from submission.utils import evaluate_places, run_cli

# the embedded dev set, named without "src/.." in a message
DEV = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "birth_dev.tsv"))


def london_accuracy(path):
    """(total, correct) of answering London to every question of a labelled TSV; DataError for a file
    that is missing, not UTF-8, has a line that is not `question<TAB>place`, or has no questions."""
    text = read_text(path, "evaluation corpus")
    rows = parse_tsv(text, path, require_label=False)
    if rows and all(place is None for _, place, _ in rows) and not rows[0][0].rstrip().endswith("?"):
        raise DataError(f"{path}: line {rows[0][2]} is no question<TAB>place line (a biography? the pretraining "
                        f"corpus?), so London cannot be scored; give a labelled file such as data/birth_dev.tsv")
    if rows and all(place is None for _, place, _ in rows):
        raise DataError(f"{path}: questions without places (a test-inputs file), so London cannot be scored; "
                        f"give a labelled `question<TAB>place` file such as data/birth_dev.tsv")
    rows = parse_tsv(text, path)  # every line labelled, or the first that is not named
    if not rows:
        raise DataError(f"{path}: no `question<TAB>place` lines; give a labelled file such as data/birth_dev.tsv")
    return evaluate_places(path, ["London"] * len(rows))


def main(argv=None):
    """The command line: prints the course's `Correct: C out of T: P%` line."""
    p = OneLineParser(description=__doc__.split("\n\n")[0])
    p.add_argument("eval_tsv", metavar="EVAL_TSV", nargs="?", default=DEV,  # CS224N's takes no argument
                   help="a labelled `question<TAB>place` file (default: data/birth_dev.tsv, the embedded dev set)")
    args = p.parse_args(argv)
    total, correct = london_accuracy(args.eval_tsv)
    print("Correct: {} out of {}: {}%".format(correct, total, correct / total * 100))


if __name__ == "__main__":
    run_cli(main)

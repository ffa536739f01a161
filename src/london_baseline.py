"""The always-"London" baseline of part (d): the accuracy of predicting London for every question.

Usage: python src/london_baseline.py data/birth_dev.tsv   (or ./run.sh london_baseline)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from submission.dataset import DataError, parse_tsv, read_text  # noqa: E402
from submission.utils import evaluate_places  # noqa: E402


def london_accuracy(path):
    rows = parse_tsv(read_text(path, "evaluation corpus"), path)
    total, correct = evaluate_places(path, ["London"] * len(rows))
    return total, correct


def main(argv):
    if len(argv) != 1:
        raise SystemExit("usage: python src/london_baseline.py EVAL_TSV")
    try:
        total, correct = london_accuracy(argv[0])
    except DataError as e:
        raise SystemExit(f"error: {e}")
    print("Correct: {} out of {}: {}%".format(correct, total, correct / total * 100))


if __name__ == "__main__":
    main(sys.argv[1:])

"""The `mingpt` package the course's play_char.ipynb imports (`from mingpt.model import GPT, GPTConfig`,
`mingpt.trainer`, `mingpt.utils`), so that notebook runs here unchanged from this folder.

It is no second minGPT: each module hands out the assignment's own classes (src/submission/), which
are minGPT's (Karpathy, github.com/karpathy/minGPT, 2020) with the course's changes, changed back where the
course's mingpt-demo trains otherwise: minGPT's loss, which counts every target, as the notebook's character
data needs (its ids start at 0 with a real character), where the assignment's GPT skips PAD, and its
optimizer (mingpt.model); its shuffled batches and best-test-loss checkpoint (mingpt.trainer).
"""
import os
import sys

_SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))))
if _SRC not in sys.path:  # src/, the folder that holds the assignment's package `submission`
    sys.path.insert(0, _SRC)

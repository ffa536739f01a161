"""Each training example's random draws keyed by what it is, not by which process makes it.

Beyond the course. CharCorruptionDataset (the handout's spec) draws its truncation and masked span
from Python's `random` at every access, so a course run's corruptions are those of one stream read
in order. That stream is not the same when the work is split: under torchrun each rank reads its
own, and each DataLoader worker seeds its own from its number, so a run's examples (and its params)
depended on the process count and on the machine's cores (the workers are sized to them).

The trainer instead reads its datasets through `KeyedDraws`, whose item (epoch, index) is made with
`random` seeded from (the run's key, the split, the epoch, the index) and the caller's stream put
back after it; `EpochSampler` hands each index its epoch. An example is then the same whichever
process or worker makes it: 2 processes draw what 1 draws (tests/test_ddp.py), any worker count
what none draws, and a resumed run what the uninterrupted one drew (its key is in the state). Each
epoch still draws afresh, as the course's does. Torch's streams are not keyed: dropout masks stay
per process (a rank draws its own: trainer.py's TrainingRun.distinct_rank_streams).
"""
import random

import torch
from torch.utils.data import RandomSampler, Sampler, SequentialSampler

SPLITS = {"train": 0, "test": 1}


def draws_key():
    """A run's key: drawn from Python's stream, so that a seeded run (run.py --seed) has the same one."""
    return random.getrandbits(63)


def item_seed(key, split, epoch, index):
    """The seed of one example's draws: distinct for every (key, split, epoch, index) of a run, as the four
    fit in their own bits (an epoch or index past 2**32 would share seeds; no run here comes near)."""
    return (((key << 2 | SPLITS[split]) << 32 | epoch & 0xFFFFFFFF) << 32) | index & 0xFFFFFFFF


class KeyedDraws(torch.utils.data.Dataset):
    """`dataset` read by (epoch, index) items (EpochSampler's), each made under its own seed (item_seed).
    `key` may be set after construction, before the first item (the trainer agrees on it across ranks)."""

    def __init__(self, dataset, split, key=None):
        self.dataset, self.split, self.key = dataset, split, key

    def __len__(self):
        return len(self.dataset)

    def _item(self, epoch, index):
        random.seed(item_seed(self.key, self.split, epoch, index))
        return self.dataset[index]

    def __getitem__(self, item):
        return self.__getitems__([item])[0]

    def __getitems__(self, items):
        """A batch's items, the caller's stream saved once for all of them (DataLoader's fetcher asks so)."""
        saved = random.getstate()
        try:
            return [self._item(epoch, index) for epoch, index in items]
        finally:
            random.setstate(saved)


class EpochSampler(Sampler):
    """(epoch, index) for each index of `sampler` (a DistributedSampler, or the course's order: in turn, or
    shuffled by torch's stream with `shuffle`); `set_epoch` as DistributedSampler's, passed on to it."""

    def __init__(self, data, sampler=None, shuffle=False):
        self.sampler = sampler if sampler is not None else RandomSampler(data) if shuffle else SequentialSampler(data)
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)

    def __iter__(self):
        epoch = self.epoch
        return ((epoch, index) for index in self.sampler)

    def __len__(self):
        return len(self.sampler)

"""Keyed draws (draws.py): a training example's span corruption depends on the run's key, its split,
epoch and index alone, not on which process or DataLoader worker makes it, nor on what the caller's
`random` stream holds; each epoch draws afresh, and the caller's stream is left as it was.

Run:  python -m pytest -q tests/test_draws.py
"""
import random

import pytest
import torch
from torch.utils.data import DataLoader

from submission import CharCorruptionDataset
from submission.draws import SPLITS, EpochSampler, KeyedDraws, item_seed

LINES = [f"someone numbered {i} was born in a town called {'xyz'[i % 3] * (i % 7 + 2)}" for i in range(24)]


def corpus():
    return CharCorruptionDataset("\n".join(LINES), 32)


def batches(workers, epoch=0, key=12345, batch_size=5):
    data = corpus()
    sampler = EpochSampler(data)
    sampler.set_epoch(epoch)
    loader = DataLoader(KeyedDraws(data, "train", key), batch_size=batch_size, sampler=sampler, num_workers=workers)
    return [x.clone() for x, _ in loader]


def same(a, b):
    return len(a) == len(b) and all(torch.equal(p, q) for p, q in zip(a, b))


def test_workers_draw_what_the_main_process_draws():
    """DataLoader workers seed their own `random` from their number: read from it, a run's corruptions
    changed with the worker count (and so with the machine's cores, which size it on a GPU)."""
    none = batches(0)
    assert same(batches(2), none)
    assert same(batches(0, batch_size=3), [torch.cat(none)[i:i + 3] for i in range(0, len(LINES), 3)])


def test_the_draws_differ_by_epoch_and_key_and_ignore_the_callers_stream():
    first = batches(0)
    random.seed(999)  # whatever the caller's stream holds
    assert same(batches(0), first)
    assert not same(batches(0, epoch=1), first)
    assert not same(batches(0, key=54321), first)


def test_the_callers_stream_is_left_as_it_was():
    random.seed(7)
    expected = [random.random() for _ in range(3)]
    random.seed(7)
    data = KeyedDraws(corpus(), "train", 1)
    data[(0, 3)]
    data.__getitems__([(0, 1), (0, 2)])
    assert [random.random() for _ in range(3)] == expected


def test_each_item_is_a_course_item_drawn_under_its_own_seed():
    """KeyedDraws only seeds: the example is the dataset's own __getitem__ under item_seed."""
    data = corpus()
    random.seed(item_seed(99, "test", 4, 17))
    expected = data[17]
    got = KeyedDraws(data, "test", 99)[(4, 17)]
    assert all(torch.equal(e, g) for e, g in zip(expected, got))


@pytest.mark.parametrize("field", ["key", "split", "epoch", "index"])
def test_seeds_are_distinct_in_each_field(field):
    base = {"key": 2 ** 62 + 5, "split": "train", "epoch": 3, "index": 40}
    other = dict(base, **{field: {"key": 2 ** 62 + 6, "split": "test", "epoch": 4, "index": 41}[field]})
    assert item_seed(**base) != item_seed(**other)
    assert set(SPLITS) == {"train", "test"}


def test_the_sampler_hands_each_index_its_epoch_and_passes_set_epoch_on():
    class Inner(list):
        epoch = None

        def set_epoch(self, epoch):
            self.epoch = epoch

    inner = Inner([3, 1])
    sampler = EpochSampler(range(5), inner)
    sampler.set_epoch(6)
    assert list(sampler) == [(6, 3), (6, 1)] and len(sampler) == 2 and inner.epoch == 6
    assert list(EpochSampler(range(3))) == [(0, 0), (0, 1), (0, 2)]
    torch.manual_seed(0)
    shuffled = [i for _, i in EpochSampler(range(50), shuffle=True)]
    assert sorted(shuffled) == list(range(50)) and shuffled != list(range(50))


@pytest.mark.parametrize("fast", [False, True])
def test_the_course_loop_reads_the_stream_in_turn_and_the_fast_path_keys_each_example(fast):
    """fast=False (run.py --reference_train) is the course's loop: its examples are the course's DataLoader's,
    one stream read in turn (so that it trains to the course's params bit for bit); the fast path keys them."""
    from submission import GPT, GPTConfig, Trainer, TrainerConfig
    data = corpus()
    trainer = Trainer(GPT(GPTConfig(data.vocab_size, 32, n_layer=1, n_head=2, n_embd=16)), data, None,
                      TrainerConfig(batch_size=6, fast=fast))
    loader = trainer._loader(data, trainer.config)
    assert isinstance(loader.dataset, KeyedDraws) == fast
    if fast:
        loader.dataset.key = 5
    random.seed(0)
    got = torch.cat([x for x, _ in loader])
    random.seed(0)
    in_turn = torch.stack([data[i][0] for i in range(len(data))])
    assert torch.equal(got, in_turn) != fast

"""Tests of the autograder (src/grader.py, src/graderlib.py): the correct package earns full marks,
wrong solutions (mutants) fail the right test, accuracy tests score prediction files made here,
and the framework keeps its promises (time limits, output frame, Gradescope JSON, CLI).

Run:  python -m pytest -q tests/test_grader.py

Everything runs on a small biography corpus written into a temporary folder, so the tests need
neither the embedded corpus nor trained models; one test also grades the repo's data/ when it is
there.
"""
import copy
import errno
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import deliverables
import gradedpackage
import grader
import graderlib
import submission

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GRADER = os.path.join(ROOT, "src", "grader.py")
NO_MODEL_TESTS = ["1c-0-hidden", "1c-1-basic", "1e-0-basic", "1e-1-basic", "1e-2-basic", "1e-3-basic",
                  "1f-0-basic", "1g-0-basic", "1g-3-hidden"]
SPAN_TESTS = ["1e-0-basic", "1e-1-basic", "1e-2-basic", "1e-3-basic"]
ACCURACY = {  # test id: prediction file
    "1d-0-hidden": "vanilla.nopretrain.dev.predictions",
    "1d-1-hidden": "vanilla.nopretrain.test.predictions",
    "1f-1-hidden": "vanilla.pretrain.dev.predictions",
    "1f-2-hidden": "vanilla.pretrain.test.predictions",
    "1g-1-hidden": "synthesizer.pretrain.dev.predictions",
    "1g-2-hidden": "synthesizer.pretrain.test.predictions",
}
PLACES = ["London", "Paris", "Lyon", "Berlin", "Köln", "Oslo", "Lima", "Quito", "Dublin", "Zürich"]


# ---------------------------------------------------------------------------------------------
# A small corpus in the course's formats
# ---------------------------------------------------------------------------------------------
def write_corpus(folder, n_people=80, n_train=40, n_dev=20, with_test_labels=True):
    rng = random.Random(7)
    syll = ["an", "bel", "cor", "da", "el", "fan", "gor", "hil", "is", "jo", "ka", "lu", "mar", "ne", "ol"]
    people = []
    for i in range(n_people):
        name = ("".join(rng.choice(syll) for _ in range(2)).title() + " "
                + "".join(rng.choice(syll) for _ in range(3)).title())
        people.append((f"{name} {i}", rng.choice(PLACES)))
    wiki = [f"{n}. Where was {n} born? {n} was born in {p} and worked in {rng.choice(PLACES)} ." for n, p in people]
    os.makedirs(folder, exist_ok=True)

    def write(name, rows):
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write("".join(r + "\n" for r in rows))

    write("wiki.txt", wiki)
    q = [(f"Where was {n} born?", p) for n, p in people]
    write("birth_places_train.tsv", [f"{a}\t{b}" for a, b in q[:n_train]])
    write("birth_dev.tsv", [f"{a}\t{b}" for a, b in q[n_train:n_train + n_dev]])
    test = q[n_train + n_dev:]
    write("birth_test_inputs.tsv", [a for a, _ in test])
    if with_test_labels:
        write("birth_test.tsv", [f"{a}\t{b}" for a, b in test])
    return {"dev": [b for _, b in q[n_train:n_train + n_dev]], "test": [b for _, b in test]}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("data"))
    answers = write_corpus(folder)
    return folder, answers


def run(data_dir, ids, submission_dir=None, marks="course"):
    g = grader.make_grader(data_dir, submission_dir or gradedpackage.DEFAULT_SUBMISSION_DIR, marks)
    results = {r.id: r for r in g.run(ids, out=None)}
    # every test asked for has its result: the callers' loops over results.values() check each one
    assert sorted(results) == sorted(ids), (sorted(results), sorted(ids))
    return results


def failing(results):
    return {i for i, r in results.items() if not r.passed}


# ---------------------------------------------------------------------------------------------
# The correct package
# ---------------------------------------------------------------------------------------------
def test_correct_package_earns_full_marks(corpus):
    results = run(corpus[0], NO_MODEL_TESTS)
    assert set(results) == set(NO_MODEL_TESTS)
    for r in results.values():
        assert r.passed, f"{r.id}: {r.reason}"
        assert r.points == r.max_points > 0


def test_points_and_ids_match_the_course():
    ids = [t.id for t in grader.make_grader().tests]
    assert ids == ["1c-0-hidden", "1c-1-basic", "1d-0-hidden", "1d-1-hidden", "1e-0-basic", "1e-1-basic",
                  "1e-2-basic", "1e-3-basic", "1f-0-basic", "1f-1-hidden", "1f-2-hidden", "1g-0-basic",
                  "1g-1-hidden", "1g-2-hidden", "1g-3-hidden"]
    with open(os.path.join(ROOT, "src", "points.json"), encoding="utf-8") as f:
        doc = json.load(f)
    # the course's graderUtil.py reads json.load(points.json)[test_id]["points"]: the same numbers the grader gives
    points = graderlib.load_points(os.path.join(ROOT, "src", "points.json"))["points"]
    assert set(points) == set(ids) and {k: doc[k]["points"] for k in ids} == points
    parts = {}
    for test_id, n in points.items():
        parts[test_id[:2]] = parts.get(test_id[:2], 0) + n
    assert parts == {"1c": 4, "1d": 6, "1e": 20, "1f": 20, "1g": 14}  # the handout's points a part
    assert doc["pass_marks"]["course"] == {"vanilla_dev": 0.10, "vanilla_test": 0.09,
                                           "synthesizer_dev": 0.05, "synthesizer_test": 0.04}


def test_expected_tree_counts():
    for synth, want in ((False, 3_323_392), (True, 3_076_988)):
        _, params, _ = grader.expected_tree(256, 128, 4, 8, 256, synthesizer=synth)
        assert sum(torch.Size(s).numel() for s in params.values()) == want


def test_a_helper_module_without_weights_is_no_tree_difference_unless_a_module_beside_it_is_missing():
    """An attention that keeps `self.relu = nn.ReLU()` saves the course's params: it failed 1g-0 as "unexpected
    module blocks.0.attn.relu". Beside a missing module it stays reported, as likely that module renamed."""
    from submission import GPT, GPTConfig
    expected = grader.expected_tree(20, 17, 1, 2, 8, synthesizer=True)
    model = GPT(GPTConfig(20, 17, n_layer=1, n_head=2, n_embd=8, synthesizer=True))
    assert grader.tree_differences(model, expected) == []
    model.blocks[0].attn.relu = nn.ReLU()
    model.blocks[0].attn.pieces = nn.ModuleList([nn.Softmax(dim=-1), nn.Identity()])
    assert grader.tree_differences(model, expected) == []
    model.blocks[0].attn.extra = nn.Linear(2, 2)  # weights: the params file differs
    assert grader.tree_differences(model, expected) == ["unexpected module blocks.0.attn.extra (Linear)"]
    del model.blocks[0].attn.extra
    model.blocks[0].attn.drop = model.blocks[0].attn.attn_drop  # attn_drop renamed
    del model.blocks[0].attn.attn_drop
    assert grader.tree_differences(model, expected) == [
        "missing module blocks.0.attn.attn_drop (Dropout)", "unexpected module blocks.0.attn.relu (ReLU)",
        "unexpected module blocks.0.attn.pieces (ModuleList)", "unexpected module blocks.0.attn.drop (Dropout)"]


def test_a_synthesizer_keeping_a_relu_module_passes_its_structure_test(corpus, monkeypatch):
    build = submission.initialize_synthesizer_model

    def with_relu(mconf):
        model = build(mconf)
        for block in model.blocks:
            block.attn.relu = nn.ReLU()
        return model
    monkeypatch.setattr(submission, "initialize_synthesizer_model", with_relu)
    assert failing(run(corpus[0], ["1g-0-basic"])) == set()


def test_expected_config_follows_the_data(corpus):
    n = len(open(os.path.join(corpus[0], "wiki.txt"), encoding="utf-8").read().split("\n"))
    assert grader.expected_config("pretrain", n)["final_tokens"] == 200 * n * 128
    assert grader.expected_config("pretrain", 2938)["final_tokens"] == 75_212_800  # the course's corpus


def test_full_marks_on_the_repo_data():
    results = run(grader.DEFAULT_DATA_DIR, NO_MODEL_TESTS, marks="auto")
    for r in results.values():
        assert r.passed, f"{r.id}: {r.reason}"


# ---------------------------------------------------------------------------------------------
# Mutants: each wrong solution fails its test, and only that one
# ---------------------------------------------------------------------------------------------
RealDataset = submission.CharCorruptionDataset


class SpanMutant(RealDataset):
    """Span corruption written here, with one knob each for the masked length, its start and the padding."""
    masked_length = staticmethod(lambda n, rng: rng.randint(1, max(1, n // 2 - 1)))
    span_start = staticmethod(lambda room, rng: rng.randint(0, room))  # room = n - m
    truncated_length = staticmethod(lambda cap, rng: rng.randint(4, cap))  # cap = min(len(doc), int(block*7/8))
    pad_in_middle = False
    closing_mask = True
    suffix_skip = 0  # characters dropped between the masked content and the suffix
    swapped = False  # prefix MASK masked MASK suffix

    def __getitem__(self, idx):
        rng = random
        doc = self.data[idx]
        cap = min(len(doc), int(self.block_size * 7 / 8))
        if cap >= 4:
            doc = doc[:self.truncated_length(cap, rng)]
        n = len(doc)
        m = self.masked_length(n, rng) if n >= 4 else min(n, 1)
        start = self.span_start(n - m, rng)
        prefix, masked, suffix = doc[:start], doc[start:start + m], doc[start + m + self.suffix_skip:]
        if self.swapped:
            masked, suffix = suffix, masked
        mask, pad = self.MASK_CHAR, self.PAD_CHAR
        close = mask if self.closing_mask else ""
        npad = self.block_size - (len(prefix + masked + suffix) + 2 + len(close))
        if self.pad_in_middle:
            s = prefix + mask + suffix + mask + masked + pad * npad + close
        else:
            s = prefix + mask + suffix + mask + masked + close + pad * npad
        x = torch.tensor([self.stoi[c] for c in s[:-1]], dtype=torch.long)
        y = torch.tensor([self.stoi[c] for c in s[1:]], dtype=torch.long)
        return x, y


class FixedQuarter(SpanMutant):
    masked_length = staticmethod(lambda n, rng: n // 4)


class RoundedQuarter(SpanMutant):
    """Averages a quarter and is sometimes above, sometimes below, but is not random."""
    masked_length = staticmethod(lambda n, rng: int(n / 4 + 0.5))


class AThirdOnAverage(SpanMutant):
    """Random, above and below a quarter, but a third of the truncated length on average."""
    masked_length = staticmethod(lambda n, rng: rng.randint(1, max(1, 2 * n // 3)))


class NeverAboveAQuarter(SpanMutant):
    """Random, about a quarter on average, but never longer than a quarter."""
    masked_length = staticmethod(lambda n, rng: max(1, n // 4 - (rng.random() < 0.25)))


class NeverBelowAQuarter(SpanMutant):
    """Random, about a quarter on average, but never shorter than a quarter."""
    masked_length = staticmethod(lambda n, rng: -(-n // 4) + (rng.random() < 0.25))


class ShortOfTheCap(SpanMutant):
    """random.randrange(4, cap): the upper end int(block_size*7/8) left out."""
    truncated_length = staticmethod(lambda cap, rng: rng.randrange(4, cap) if cap > 4 else 4)


class NeverFour(SpanMutant):
    """random.randint(5, cap): the lower end 4 left out."""
    truncated_length = staticmethod(lambda cap, rng: rng.randint(5, cap) if cap > 4 else 4)


class EitherEnd(SpanMutant):
    """Both ends of [4, cap] drawn, but nothing between them."""
    truncated_length = staticmethod(lambda cap, rng: rng.choice((4, cap)))


class PastTheCap(SpanMutant):
    """Truncated to up to block_size characters, not int(block_size*7/8): 1e-0's mistake alone. Its strings
    outgrow the block, and 1e-2 failed too, on x's shape, sending the student to the padding and the slicing."""
    def __getitem__(self, idx):
        saved = random.randint
        try:
            random.randint = lambda a, b: (saved(a, min(len(self.data[idx]), self.block_size))
                                           if b == min(len(self.data[idx]), int(self.block_size * 7 / 8))
                                           else saved(a, b))
            return super().__getitem__(idx)
        finally:
            random.randint = saved


class MiddlePad(SpanMutant):
    pad_in_middle = True


class RandomWindow(SpanMutant):
    """A window cut anywhere in the line, not its start: 1e-1's mistake; the masked length is right."""
    def __getitem__(self, idx):
        doc = self.data[idx]
        start = random.randint(0, max(0, len(doc) - 4)) if len(doc) > int(self.block_size * 7 / 8) else 0
        saved, self.data = self.data, {idx: doc[start:]}
        try:
            return super().__getitem__(idx)
        finally:
            self.data = saved


class MaskedSecond(SpanMutant):
    """prefix MASK masked MASK suffix: the parts in another order. One mistake, one failed test: 1e-3
    read the suffix as the masked content and failed too, with a wrong ratio."""
    def __getitem__(self, idx):
        x, y = super().__getitem__(idx)
        s = "".join(self.itos[int(i)] for i in x) + self.itos[int(y[-1])]
        mask = self.MASK_CHAR
        prefix, suffix, rest = s.split(mask, 2)
        masked = rest.split(mask)[0] if mask in rest else rest.rstrip(self.PAD_CHAR)
        tail = s[len(prefix) + len(suffix) + len(masked) + 2:]
        s = prefix + mask + masked + mask + suffix + tail
        return (torch.tensor([self.stoi[c] for c in s[:-1]], dtype=torch.long),
                torch.tensor([self.stoi[c] for c in s[1:]], dtype=torch.long))


class SuffixOneLate(SpanMutant):
    """document[start + m + 1:] for the suffix: a character lost after the masked content. 1e-1's mistake
    alone: 1e-0 read the kept characters as the truncation length and failed too ("truncated to 3")."""
    suffix_skip = 1


def test_a_swapped_masked_content_and_suffix_is_named_in_1e1(corpus, monkeypatch):
    """prefix MASK masked MASK suffix failed 1e-1 as "prefix + masked + suffix is not a prefix of the document",
    which does not say what is wrong with it."""
    monkeypatch.setattr(submission, "CharCorruptionDataset", type("Swapped", (SpanMutant,), {"swapped": True}))
    reason = run(corpus[0], ["1e-1-basic"])["1e-1-basic"].reason
    assert reason.startswith("the masked content and the suffix are swapped: ") and reason.endswith(
        "is prefix MASK masked MASK suffix; the course's layout is prefix MASK suffix MASK masked content"), reason
    monkeypatch.setattr(submission, "CharCorruptionDataset", SuffixOneLate)  # another mistake: not called a swap
    assert "swapped" not in run(corpus[0], ["1e-1-basic"])["1e-1-basic"].reason


class NoClosingMask(SpanMutant):
    """The handout's layout without the MASK after the masked content: right, as the course's grader says."""
    closing_mask = False


class AlwaysLongest(SpanMutant):
    def __getitem__(self, idx):
        saved = random.randint
        try:  # truncate to the longest length allowed, always
            random.randint = lambda a, b: (b if b == min(len(self.data[idx]), int(self.block_size * 7 / 8))
                                           else saved(a, b))
            return super().__getitem__(idx)
        finally:
            random.randint = saved


class SpanAtStart(SpanMutant):
    span_start = staticmethod(lambda room, rng: 0)


class SpanAtEnd(SpanMutant):
    span_start = staticmethod(lambda room, rng: room)


class SpanCentred(SpanMutant):
    span_start = staticmethod(lambda room, rng: room // 2)


class CrashesOnShortLines(SpanMutant):
    masked_length = staticmethod(lambda n, rng: rng.randint(1, n // 2 - 1))

    def __getitem__(self, idx):
        doc = self.data[idx]
        if len(doc) < 4:
            random.randint(1, len(doc) // 4)  # raises ValueError: empty range
        return super().__getitem__(idx)


def test_span_crash_on_a_short_line_fails_1e2_only(corpus, monkeypatch):
    """One mistake, one test: a crash on lines shorter than 4 characters (wiki.txt's last item is
    empty) cost all four span tests, 20 points, though every ordinary document was right."""
    monkeypatch.setattr(submission, "CharCorruptionDataset", CrashesOnShortLines)
    results = run(corpus[0], SPAN_TESTS)
    assert failing(results) == {"1e-2-basic"}, {i: r.reason for i, r in results.items()}
    reason = results["1e-2-basic"].reason
    assert "raised ValueError" in reason and "every line must work" in reason


class HangsOnShortLines(SpanMutant):
    masked_length = staticmethod(lambda n, rng: rng.randint(1, n // 2 - 1))
    short_calls = []

    def __getitem__(self, idx):
        doc = self.data[idx]
        if len(doc) < 4:
            HangsOnShortLines.short_calls.append(idx)
            while len(doc) < 4:  # draws a length until it is at least 4: never, under 4 characters
                doc = doc[:random.randint(0, len(doc))]
        return super().__getitem__(idx)


def test_span_hang_on_a_short_line_fails_1e2_only_naming_it_and_is_asked_once_by_the_others(corpus, monkeypatch):
    """A hang on lines under 4 characters cost all four span tests their 60 s limit, and the timeout did not say
    which document: each item now has grader.ITEM_SECONDS, and after one hang the tests that skip short lines
    skip them without asking again (2 calls on short lines in all: 1e-2's, and the first other test's)."""
    monkeypatch.setattr(submission, "CharCorruptionDataset", HangsOnShortLines)
    monkeypatch.setattr(grader, "ITEM_SECONDS", 2)  # (0.3 s stopped an ordinary item once, in the loaded full suite)
    HangsOnShortLines.short_calls.clear()
    results = run(corpus[0], SPAN_TESTS)
    assert failing(results) == {"1e-2-basic"}, {i: r.reason for i, r in results.items()}
    reason = results["1e-2-basic"].reason
    assert re.search(r"dataset\[\d+\] did not return within 2 s, on a document of [0-3] characters \(block_size "
                     r"128\); every line must work", reason), reason  # (a package's own file is named: stopped at)
    assert "a loop that draws until one fits never ends" in reason
    assert len(HangsOnShortLines.short_calls) == 2


def test_a_watchdog_call_that_ends_in_time_raises_nothing_later():
    with graderlib.Watchdog(0.05, poll=0.01) as dog:
        for _ in range(3):
            with dog.call():
                time.sleep(0.001)
        with pytest.raises(graderlib.CallTimeout):
            with dog.call():
                while True:
                    pass
        with dog.call():
            sum(range(1000))
        time.sleep(0.2)  # a stray CallTimeout would land in here
        assert not dog._fired


class NotWrittenYet(RealDataset):
    def __getitem__(self, idx):
        raise NotImplementedError


class TypoInEveryItem(SpanMutant):
    def __getitem__(self, idx):
        raise NameError("name 'ss' is not defined")  # a typo's error


class DropsEmptyLines(SpanMutant):
    def __init__(self, data, block_size):
        super().__init__(data, block_size)
        self.data = [line for line in self.data if line]


@pytest.mark.parametrize("mutant, phrase", [
    (NotWrittenYet, "raised NotImplementedError"), (TypoInEveryItem, "raised NameError: name 'ss'")])
def test_a_mistake_in_every_item_is_not_blamed_on_empty_lines(corpus, monkeypatch, mutant, phrase):
    """Item 0 of the span corpus is its empty line: every mistake was reported on 'a document of 0
    characters' with the empty-line hint, which sent students to the wrong fix."""
    monkeypatch.setattr(submission, "CharCorruptionDataset", mutant)
    results = run(corpus[0], SPAN_TESTS)
    assert failing(results) == set(SPAN_TESTS)
    for r in results.values():
        assert phrase in r.reason and "empty" not in r.reason and "document of 0 characters" not in r.reason, r.reason
    if mutant is NotWrittenYet:
        assert "is not written yet" in r.reason


class WrongLength(SpanMutant):
    def __len__(self):
        return len(self.data) - 1


class LengthRaises(SpanMutant):
    def __len__(self):
        raise TypeError("no length")


class Int32Items(SpanMutant):
    def __getitem__(self, idx):
        x, y = super().__getitem__(idx)
        return x.int(), y.int()


class NotPadded(SpanMutant):
    """The masked string without its PADs: x and y shorter than block_size - 1."""
    def __getitem__(self, idx):
        x, y = super().__getitem__(idx)
        pad = self.stoi[self.PAD_CHAR]
        keep = int((x != pad).sum()) + int(y[-1] != pad) - 1
        return x[:keep], y[:keep]


class NotShifted(SpanMutant):
    """y = x: the targets are the inputs, not the next characters."""
    def __getitem__(self, idx):
        x, _ = super().__getitem__(idx)
        return x, x.clone()


class LeadingDimension(SpanMutant):
    """Each item as a batch of one, (1, T): the right ids with an extra dimension."""
    def __getitem__(self, idx):
        x, y = super().__getitem__(idx)
        return x[None], y[None]


class StringItems(SpanMutant):
    """The masked strings themselves, not their ids."""
    def __getitem__(self, idx):
        x, y = super().__getitem__(idx)
        return "".join(self.itos[int(i)] for i in x), "".join(self.itos[int(i)] for i in y)


@pytest.mark.parametrize("mutant, phrase", [(WrongLength, "len(dataset) is 57; the corpus has 58 items"),
                                            (LeadingDimension, "x has shape (1, 127), expected (127,)"),
                                            (StringItems, "x is a str, expected a torch tensor"),
                                            (LengthRaises, "len(dataset) raised TypeError: no length"),
                                            (Int32Items, "x has dtype torch.int32, expected torch.long"),
                                            (NotPadded, "expected (127,): x = masked_string[:-1]"),
                                            (NotShifted, "x[1:] != y[:-1] (first at position")])
def test_length_and_item_mutants_fail_1e2_only(corpus, monkeypatch, mutant, phrase):
    """The span tests but 1e-2 never ask for the length: a wrong or failing __len__ cost all four. 1e-2
    alone checks the items' types, shapes and shift too: the other span tests read the string they spell (items
    of shape (1, T), or strings, failed all four: "cannot decode a dataset item")."""
    monkeypatch.setattr(submission, "CharCorruptionDataset", mutant)
    results = run(corpus[0], SPAN_TESTS)
    assert failing(results) == {"1e-2-basic"}, {i: r.reason for i, r in results.items()}
    assert phrase in results["1e-2-basic"].reason


def test_dropping_empty_lines_fails_1e2_and_costs_no_config_points(corpus, monkeypatch):
    """A dataset without wiki.txt's empty lines failed seven tests (22 points): final_tokens was expected
    from the corpus's line count, not from the handout's len(pretrain_dataset), and the span tests
    indexed past the dataset's end."""
    monkeypatch.setattr(submission, "CharCorruptionDataset", DropsEmptyLines)
    results = run(corpus[0], SPAN_TESTS + ["1c-1-basic", "1f-0-basic", "1g-0-basic"])
    assert failing(results) == {"1e-2-basic"}, {i: r.reason for i, r in results.items()}
    assert "keep every line, empty ones included" in results["1e-2-basic"].reason


@pytest.mark.parametrize("right", [SpanMutant, NoClosingMask])
def test_right_span_corruptions_pass_every_span_test(corpus, monkeypatch, right):
    monkeypatch.setattr(submission, "CharCorruptionDataset", right)
    assert failing(run(corpus[0], SPAN_TESTS)) == set()


@pytest.mark.parametrize("mutant, where", [
    (SpanAtStart, "empty prefix"), (SpanAtEnd, "empty suffix"), (SpanCentred, "in the middle")])
def test_a_span_always_at_one_place_loses_no_points_but_gets_advice(corpus, monkeypatch, mutant, where):
    """The course asks only for the masked length; where the span sits is advice in 1e-3's note."""
    monkeypatch.setattr(submission, "CharCorruptionDataset", mutant)
    results = run(corpus[0], SPAN_TESTS)
    assert failing(results) == set(), {i: r.reason for i, r in results.items()}
    assert "advice (no points lost)" in results["1e-3-basic"].note and where in results["1e-3-basic"].note


def test_a_span_drawn_anywhere_gets_no_advice(corpus, monkeypatch):
    monkeypatch.setattr(submission, "CharCorruptionDataset", SpanMutant)
    assert "advice" not in run(corpus[0], ["1e-3-basic"])["1e-3-basic"].note


def test_a_length_fixed_for_some_lengths_is_named(corpus, monkeypatch):
    """floor(n/4) plus a coin for the fraction averages a quarter but never varies when 4 divides n."""
    class CoinQuarter(SpanMutant):
        masked_length = staticmethod(lambda n, rng: n // 4 + (rng.random() < n / 4 - n // 4))
    monkeypatch.setattr(submission, "CharCorruptionDataset", CoinQuarter)
    r = run(corpus[0], ["1e-3-basic"])["1e-3-basic"]
    assert not r.passed and "never varied" in r.reason
    n = int(r.reason.split("draws of length ")[1].split()[0])
    assert n % 4 == 0 and f"masked {n // 4} characters" in r.reason


@pytest.mark.parametrize("mutant, wrong", [
    (FixedQuarter, "1e-3-basic"),
    (RoundedQuarter, "1e-3-basic"),
    (MiddlePad, "1e-1-basic"),
    (MaskedSecond, "1e-1-basic"),
    (RandomWindow, "1e-1-basic"),
    (SuffixOneLate, "1e-1-basic"),
    (AlwaysLongest, "1e-0-basic"),
    (ShortOfTheCap, "1e-0-basic"),
    (NeverFour, "1e-0-basic"),
    (EitherEnd, "1e-0-basic"),
    (PastTheCap, "1e-0-basic"),
    (AThirdOnAverage, "1e-3-basic"),
    (NeverAboveAQuarter, "1e-3-basic"),
    (NeverBelowAQuarter, "1e-3-basic"),
])
def test_span_mutants_fail_their_test(corpus, monkeypatch, mutant, wrong):
    monkeypatch.setattr(submission, "CharCorruptionDataset", mutant)
    results = run(corpus[0], SPAN_TESTS)
    assert failing(results) == {wrong}, {i: r.reason for i, r in results.items()}
    assert results[wrong].points == 0 and results[wrong].reason


def test_a_character_lost_after_the_masked_content_is_named_by_1e1(corpus, monkeypatch):
    monkeypatch.setattr(submission, "CharCorruptionDataset", SuffixOneLate)
    reason = run(corpus[0], ["1e-1-basic"])["1e-1-basic"].reason
    assert "between the masked content and the suffix is lost" in reason, reason


def test_items_not_shifted_by_one_are_named_in_the_tests_that_read_them(corpus, monkeypatch):
    """x = s[1:] and y = s[1:] (a slip in the shift) failed 1e-0 with "truncated a document of 4 characters to
    3" and 1e-1 with a layout it does not have: each blamed its own rule for 1e-2's mistake. Those failures
    now say that x and y are not one string shifted by one; a mistake of their own says nothing of it."""
    class BothShifted(SpanMutant):
        def __getitem__(self, idx):
            x, y = super().__getitem__(idx)
            return y, y  # x lost the string's first character
    monkeypatch.setattr(submission, "CharCorruptionDataset", BothShifted)
    results = run(corpus[0], SPAN_TESTS)
    assert "x[1:] != y[:-1]" in results["1e-2-basic"].reason
    for test in ("1e-0-basic", "1e-1-basic"):
        assert not results[test].passed and results[test].reason.endswith(
            "; note: its items' x and y are not one masked string shifted by one (x[1:] != y[:-1]), so the string "
            "x + y[-1] read here is not the one drawn: fix that first (1e-2-basic)"), results[test].reason
    monkeypatch.setattr(submission, "CharCorruptionDataset", SuffixOneLate)  # 1e-1's own mistake: no note
    assert "x[1:] != y[:-1]" not in run(corpus[0], ["1e-1-basic"])["1e-1-basic"].reason


def test_ids_outside_the_vocabulary_fail_1e2(corpus, monkeypatch):
    class IdsOffByOne(SpanMutant):  # stoi counted from 1: the last character's id is vocab_size
        def __getitem__(self, idx):
            x, y = super().__getitem__(idx)
            return x + 1, y + 1
    monkeypatch.setattr(submission, "CharCorruptionDataset", IdsOffByOne)
    r = run(corpus[0], ["1e-2-basic"])["1e-2-basic"]
    assert not r.passed and "has ids outside the vocabulary" in r.reason, r.reason


RealSynth = submission.SynthesizerAttention


class NoCausalMask(RealSynth):
    def forward(self, x, layer_past=None):
        B, T, C = x.size()
        hs = C // self.n_head
        a = F.relu(self.w1(x)).view(B, T, self.n_head, hs).transpose(1, 2)
        v = self.value(x).view(B, T, self.n_head, hs).transpose(1, 2)
        att = F.softmax(a @ self.w2[:, :T] + self.b2[:T], dim=-1)
        y = (self.attn_drop(att) @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_drop(self.proj(y))


class W2NotSliced(RealSynth):
    def forward(self, x, layer_past=None):
        B, T, C = x.size()
        hs = C // self.n_head
        a = F.relu(self.w1(x)).view(B, T, self.n_head, hs).transpose(1, 2)
        v = self.value(x).view(B, T, self.n_head, hs).transpose(1, 2)
        att = a @ self.w2 + self.b2  # (B, nh, T, block_size - 1): right only when T = block_size - 1
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, -1e10)
        y = (self.attn_drop(F.softmax(att, dim=-1)) @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_drop(self.proj(y))


class ReluMissing(RealSynth):
    def forward(self, x, layer_past=None):
        B, T, C = x.size()
        hs = C // self.n_head
        a = self.w1(x).view(B, T, self.n_head, hs).transpose(1, 2)
        v = self.value(x).view(B, T, self.n_head, hs).transpose(1, 2)
        att = (a @ self.w2[:, :T] + self.b2[:T]).masked_fill(self.mask[:, :, :T, :T] == 0, -1e10)
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_drop(self.proj(y))


class SlightlyOff(RealSynth):
    """Right but for its output scaled by 1.001: a thousandth off is a mistake, not float rounding."""
    def forward(self, x, layer_past=None):
        return super().forward(x) * 1.001


@pytest.mark.parametrize("mutant, phrase", [
    (NoCausalMask, "differs from the handout's equation"),
    (SlightlyOff, "differs from the handout's equation"),
    (W2NotSliced, "slice w2 and b2"),
    (ReluMissing, "differs from the handout's equation"),
])
def test_synthesizer_mutants_fail_1g3(corpus, monkeypatch, mutant, phrase):
    monkeypatch.setattr(submission, "SynthesizerAttention", mutant)
    r = run(corpus[0], ["1g-3-hidden"])["1g-3-hidden"]
    assert not r.passed and r.points == 0
    assert phrase in r.reason


def student_weights(att, future, mistake):
    """Attention weights from scores `att` as a student computes them (masked_fill with the mask's zeros,
    `future`, then F.softmax), with `mistake` where it is one of the mask or the softmax."""
    if mistake not in ("no_mask", "mask_after_softmax"):
        att = att.masked_fill(future, float("-inf"))
    att = F.softmax(att, dim=-2 if mistake == "softmax_rows" else -1)
    return att.masked_fill(future, 0.0) if mistake == "mask_after_softmax" else att


def student_synth(mistake):
    """A synthesizer written as a student writes one (heads by view and transpose), with one `mistake`."""
    class Mistaken(RealSynth):
        def forward(self, x, layer_past=None):
            B, T, C = x.size()
            hs = C // self.n_head
            a = self.w1(x)
            a = (a if mistake == "no_relu" else F.relu(a)).view(B, T, self.n_head, hs).transpose(1, 2)
            v = self.value(x).view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
            if mistake == "split":  # heads taken as a view of (B, nh, T, hs) straight away, positions mixed in
                v = self.value(x).view(B, self.n_head, T, hs)
            att = a @ self.w2[:, :T] + (0 if mistake == "no_b2" else self.b2[:T])  # (B, nh, T, T)
            if mistake == "scaled":
                att = att * hs ** -0.5
            att = student_weights(att, self.mask[:, :, :T, :T] == 0, mistake)
            y = (self.attn_drop(att) @ v).transpose(1, 2).contiguous().view(B, T, C)
            return y if mistake == "no_proj" else self.resid_drop(self.proj(y))
    return Mistaken


@pytest.mark.parametrize("mistake, words", [
    ("no_mask", "it is the equation without the causal mask: fill the scores above the diagonal with -inf"),
    ("mask_after_softmax", "it is the equation with the causal mask applied after the softmax"),
    ("softmax_rows", "it is the equation with the softmax over dim=-2"),
    ("no_relu", "it is the equation without the ReLU"),
    ("scaled", "it is the equation with the scores scaled by 1/sqrt(head size)"),
    ("no_b2", "it is the equation without b2"),
    ("no_proj", "it is the equation without the output projection"),
    ("split", "; its outputs at positions 0-2 change"),
])
def test_1g3_names_the_synthesizers_mistake(corpus, monkeypatch, mistake, words):
    """1g-3 said one list of five suspects for every mistake; each it can recognise is now named with its fix,
    and for others a future-token probe says whether attention sees later positions."""
    monkeypatch.setattr(submission, "SynthesizerAttention", student_synth(mistake))
    r = run(corpus[0], ["1g-3-hidden"])["1g-3-hidden"]
    assert not r.passed and words in r.reason, r.reason
    assert ("it is the equation" in r.reason) != (mistake == "split")


def test_1g3_passes_the_student_written_synthesizer_without_a_mistake(corpus, monkeypatch):
    monkeypatch.setattr(submission, "SynthesizerAttention", student_synth(None))
    assert failing(run(corpus[0], ["1g-3-hidden"])) == set()


real_finetune = submission.finetune
real_pretrain = submission.pretrain


def finetune_wrong_lr(reading_params_path, *args):
    tconf, trainer = real_finetune(reading_params_path, *args)
    if reading_params_path is None:
        tconf.learning_rate = 6e-3
    return tconf, trainer


def finetune_ignores_params(reading_params_path, *args):
    tconf, trainer = real_finetune(None, *args)
    if reading_params_path is not None:
        tconf.max_epochs = 10
    return tconf, trainer


def finetune_wrong_epochs(reading_params_path, *args):
    tconf, trainer = real_finetune(reading_params_path, *args)
    if reading_params_path is not None:
        tconf.max_epochs = 75
    return tconf, trainer


def pretrain_wrong_epochs(*args):
    tconf, trainer = real_pretrain(*args)
    tconf.max_epochs = 600
    return tconf, trainer


def pretrain_fixed_final_tokens(*args):
    tconf, trainer = real_pretrain(*args)
    tconf.final_tokens = 75_212_800  # the course corpus's value, hard-coded
    return tconf, trainer


def pretrain_three_betas(*args):
    tconf, trainer = real_pretrain(*args)
    tconf.betas = (0.9, 0.95, 0.999)  # the course's two, and one more: a tuple of another length
    return tconf, trainer


def finetune_with_a_checkpoint(reading_params_path, *args):
    tconf, trainer = real_finetune(reading_params_path, *args)
    if reading_params_path is None:
        tconf.ckpt_path = "vanilla.model.params"
    return tconf, trainer


def pretrain_clip_as_a_flag(*args):
    tconf, trainer = real_pretrain(*args)
    tconf.grad_norm_clip = True  # == 1.0 to Python, but a flag, not the clipping norm
    return tconf, trainer


def finetune_a_copy_of_the_model(reading_params_path, path, pretrain_dataset, block_size, model):
    return real_finetune(reading_params_path, path, pretrain_dataset, block_size,
                         copy.deepcopy(model) if reading_params_path is None else model)


def finetune_trainer_with_the_default_config(reading_params_path, *args):
    tconf, trainer = real_finetune(reading_params_path, *args)
    if reading_params_path is None:
        trainer.config = submission.TrainerConfig()  # the config returned is not the one that trains
    return tconf, trainer


def finetune_on_the_pretraining_corpus(reading_params_path, path, pretrain_dataset, block_size, model):
    tconf, trainer = real_finetune(reading_params_path, path, pretrain_dataset, block_size, model)
    if reading_params_path is None:
        trainer.train_dataset = pretrain_dataset
    return tconf, trainer


def pretrain_on_part_of_the_corpus(pretrain_dataset, block_size, model):
    tconf, trainer = real_pretrain(pretrain_dataset, block_size, model)
    trainer.train_dataset = type(pretrain_dataset)("\n".join(pretrain_dataset.data[:10]), block_size)
    return tconf, trainer


@pytest.mark.parametrize("name, mutant, wrong, phrase", [
    ("finetune", finetune_wrong_lr, "1c-1-basic", "learning_rate is 0.006, expected 0.0006"),
    ("finetune", finetune_with_a_checkpoint, "1c-1-basic", "ckpt_path is 'vanilla.model.params', expected None"),
    ("pretrain", pretrain_clip_as_a_flag, "1f-0-basic", "grad_norm_clip is True, expected 1.0"),
    ("finetune", finetune_a_copy_of_the_model, "1c-1-basic", "a trainer of another model than the one passed in"),
    ("finetune", finetune_trainer_with_the_default_config, "1c-1-basic",
     "a trainer whose config is not the returned TrainerConfig"),
    ("finetune", finetune_on_the_pretraining_corpus, "1c-1-basic", "examples; the finetuning corpus has 40"),
    ("pretrain", pretrain_on_part_of_the_corpus, "1f-0-basic", "a trainer that does not train on pretrain_dataset"),
    ("finetune", finetune_ignores_params, "1g-0-basic", "did not load the params"),
    ("finetune", finetune_wrong_epochs, "1g-0-basic", "max_epochs is 75, expected 10"),
    ("pretrain", pretrain_wrong_epochs, "1f-0-basic", "max_epochs is 600, expected 650"),
    ("pretrain", pretrain_fixed_final_tokens, "1f-0-basic", "final_tokens"),
    ("pretrain", pretrain_three_betas, "1f-0-basic", "betas is (0.9, 0.95, 0.999), expected (0.9, 0.95)"),
])
def test_config_mutants_fail_their_test(corpus, monkeypatch, name, mutant, wrong, phrase):
    monkeypatch.setattr(submission, name, mutant)
    results = run(corpus[0], ["1c-1-basic", "1f-0-basic", "1g-0-basic"])
    assert failing(results) == {wrong}, {i: r.reason for i, r in results.items()}
    assert phrase in results[wrong].reason


real_init_vanilla = submission.initialize_vanilla_model


def vanilla_one_layer_missing(mconf):
    model = real_init_vanilla(mconf)
    model.blocks = nn.Sequential(*list(model.blocks)[:-1])
    return model


def vanilla_relu(mconf):
    model = real_init_vanilla(mconf)
    for block in model.blocks:
        block.mlp[1] = nn.ReLU()
    return model


def full_attention(self, x, layer_past=None):
    """CausalSelfAttention without its mask: every position attends to every other."""
    B, T, C = x.size()
    hs = C // self.n_head
    q, k, v = (lin(x).view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
               for lin in (self.query, self.key, self.value))
    y = F.softmax(q @ k.transpose(-2, -1) / hs ** 0.5, dim=-1) @ v  # (B, nh, T, hs)
    return self.proj(y.transpose(1, 2).reshape(B, T, C))  # (B, T, C)


def vanilla_not_causal(mconf):
    model = real_init_vanilla(mconf)
    for block in model.blocks:
        block.attn.forward = full_attention.__get__(block.attn)
    return model


def vanilla_attention_dropout_off(mconf):
    model = real_init_vanilla(mconf)
    for block in model.blocks:
        block.attn.attn_drop.p = 0.0
    return model


def vanilla_mask_not_saved(mconf):
    """The causal mask as a non-persistent buffer: it masks, but is not in the state_dict params files hold."""
    model = real_init_vanilla(mconf)
    for block in model.blocks:
        mask = block.attn._buffers.pop("mask")
        block.attn.register_buffer("mask", mask, persistent=False)
    return model


def vanilla_without_loss(mconf):
    model = real_init_vanilla(mconf)
    forward = model.forward
    model.forward = lambda idx, targets=None: (forward(idx)[0], None)
    return model


@pytest.mark.parametrize("mutant, phrase", [
    (vanilla_one_layer_missing, "missing module blocks.3 (Block)"),
    (vanilla_attention_dropout_off, "blocks.0.attn.attn_drop.p is 0.0, expected 0.1"),
    (vanilla_mask_not_saved, "missing buffer blocks.0.attn.mask (1, 1, 128, 128)"),
    (vanilla_without_loss, "GPT.forward with targets must return a finite scalar loss"),
    (vanilla_relu, "blocks.0.mlp.1 is a ReLU, expected GELU"),
    (vanilla_not_causal, "attention sees the future"),
])
def test_model_mutants_fail_1c0(corpus, monkeypatch, mutant, phrase):
    monkeypatch.setattr(submission, "initialize_vanilla_model", mutant)
    results = run(corpus[0], ["1c-0-hidden", "1c-1-basic"])
    assert failing(results) == {"1c-0-hidden"}
    assert phrase in results["1c-0-hidden"].reason


def vanilla_mask_all_ones(mconf):
    """A causal mask of ones: the fused eval path (is_causal) never reads it, the training and reference paths
    do; 1c-0 ran only the first, and scored it 2/2."""
    model = real_init_vanilla(mconf)
    for block in model.blocks:
        block.attn.mask.fill_(1)
    return model


def test_a_mask_read_only_off_the_eval_path_fails_1c0(corpus, monkeypatch):
    monkeypatch.setattr(submission, "initialize_vanilla_model", vanilla_mask_all_ones)
    r = run(corpus[0], ["1c-0-hidden"])["1c-0-hidden"]
    assert not r.passed and "in training mode when only the tokens from position 8 on changed" in r.reason
    assert "blocks.0.attn computes the attention without the causal mask: fill the scores above the diagonal " \
           "with -inf" in r.reason, r.reason


def student_vanilla_forward(mistake):
    """CausalSelfAttention.forward as a student who rewrote it might, with one `mistake` (None: right)."""
    def forward(self, x, layer_past=None):
        B, T, C = x.size()
        hs = C // self.n_head
        q, k, v = (lin(x).view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
                   for lin in (self.query, self.key, self.value))
        if mistake == "split":  # heads taken as a view of (B, nh, T, hs) straight away, positions mixed in
            v = self.value(x).view(B, self.n_head, T, hs)
        att = q @ k.transpose(-2, -1) / hs ** 0.5  # (B, nh, T, T)
        att = student_weights(att, self.mask[:, :, :T, :T] == 0, mistake)
        y = (self.attn_drop(att) @ v).transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.resid_drop(self.proj(y))
    return forward


def vanilla_written_with(mistake):
    def init(mconf):
        model = real_init_vanilla(mconf)
        for block in model.blocks:
            block.attn.forward = student_vanilla_forward(mistake).__get__(block.attn)
        return model
    return init


@pytest.mark.parametrize("mistake, words", [
    ("no_mask", "computes the attention without the causal mask: fill the scores above the diagonal with -inf"),
    ("mask_after_softmax", "computes the attention with the causal mask applied after the softmax"),
    ("softmax_rows", "computes the attention with the softmax over dim=-2 (down each column)"),
    ("split", "split the heads with view(B, T, n_head, hs).transpose(1, 2)"),
])
def test_1c0_names_the_vanilla_attentions_mistake(corpus, monkeypatch, mistake, words):
    """A vanilla attention that saw the future was always blamed on its mask, a softmax over dim=-2 too; each
    mistake 1c-0 recognises is now named with its fix, and the message for others names the head split too."""
    monkeypatch.setattr(submission, "initialize_vanilla_model", vanilla_written_with(mistake))
    r = run(corpus[0], ["1c-0-hidden"])["1c-0-hidden"]
    assert not r.passed and "attention sees the future" in r.reason and words in r.reason, r.reason
    assert ("computes the attention" in r.reason) != (mistake == "split")


def test_1c0_passes_a_rewritten_vanilla_attention_without_a_mistake(corpus, monkeypatch):
    monkeypatch.setattr(submission, "initialize_vanilla_model", vanilla_written_with(None))
    assert failing(run(corpus[0], ["1c-0-hidden"])) == set()


class OffOnTheReferencePath(submission.SynthesizerAttention):
    """The package's synthesizer, a thousandth off on its reference path only: 1g-3 ran the fast path alone."""
    def forward(self, x, *args, **kwargs):
        y = super().forward(x, *args, **kwargs)
        return y if self.fast else y * 1.001


def test_a_synthesizer_wrong_on_its_reference_path_fails_1g3(corpus, monkeypatch):
    monkeypatch.setattr(submission, "SynthesizerAttention", OffOnTheReferencePath)
    r = run(corpus[0], ["1g-3-hidden"])["1g-3-hidden"]
    assert not r.passed and r.points == 0
    assert "in eval mode on the reference path (the attention's fast = False)" in r.reason


class StarterSynth(RealSynth):
    """The starter's forward, not written yet: it raises NotImplementedError, with no message."""
    def forward(self, x, layer_past=None):
        raise NotImplementedError


def test_a_synthesizer_that_raises_names_its_line_in_1g3(corpus, monkeypatch):
    """1g-3 caught the exception itself and said only its type and message (here none: 'NotImplementedError
    on ...: '), not the line that raised it, which every other test names."""
    monkeypatch.setattr(submission, "SynthesizerAttention", StarterSynth)
    r = run(corpus[0], ["1g-3-hidden"])["1g-3-hidden"]
    assert not r.passed and r.reason.startswith("SynthesizerAttention raised NotImplementedError: (no message) on "
                                                "an input of 7 positions"), r.reason
    assert re.search(r"raised at \S*test_grader\.py:\d+ in forward$", r.reason), r.reason


def test_broken_import_fails_every_test_with_the_reason(corpus, monkeypatch):
    monkeypatch.delattr(submission, "SynthesizerAttention")
    r = run(corpus[0], ["1g-3-hidden"])["1g-3-hidden"]
    assert not r.passed and "has no SynthesizerAttention" in r.reason


def test_exception_in_submission_names_the_line(corpus, monkeypatch):
    def boom(*args):
        raise IndexError("list index out of range")
    monkeypatch.setattr(submission, "pretrain", boom)
    r = run(corpus[0], ["1f-0-basic"])["1f-0-basic"]
    assert r.reason.startswith("IndexError: list index out of range")
    assert "test_grader.py" in r.reason and "in boom" in r.reason
    assert len(r.reason.split("\n")) <= 2


def test_an_exception_whose_str_raises_fails_its_test_and_the_grading_goes_on(corpus, monkeypatch):
    """A student's exception class whose __str__ reads a missing attribute ended the whole grading with a
    traceback (describe_exception ran str() in the grader's own thread): no test's result, no results.json."""
    class ConfigError(Exception):
        def __str__(self):
            return self.message  # no such attribute

    def boom(*args):
        raise ConfigError("bad config")
    monkeypatch.setattr(submission, "pretrain", boom)
    results = run(corpus[0], ["1f-0-basic", "1c-1-basic"])
    assert results["1c-1-basic"].passed
    reason = results["1f-0-basic"].reason
    assert reason.startswith("ConfigError: (no message: its __str__ raised AttributeError: "), reason
    assert "in boom" in reason and len(reason.split("\n")) == 2


def test_an_exception_whose_str_raises_one_whose_str_raises_too_is_named_by_its_class():
    """text_of (shorten's str()): a __str__ that raises an exception of the student's whose own __str__ raises
    too names that exception's class, rather than ending the grading with the second traceback."""
    class Unprintable(Exception):
        def __str__(self):
            raise Unprintable()

    class ConfigError(Exception):
        def __str__(self):
            raise Unprintable()
    assert graderlib.text_of(ConfigError()) == "(no message: its __str__ raised Unprintable)"
    assert graderlib.shorten(ConfigError(), limit=21) == "(no message: its _..."
    assert graderlib.text_of(ValueError("fine")) == "fine"


def test_an_exception_whose_str_raises_at_import_is_named_as_the_import_that_failed(tmp_path):
    """Raised at the top of a module, such an exception's reason was the AttributeError its __str__ raised,
    "raised at helper.py:N in __str__": it no longer said that the package did not import, nor where the
    exception was raised."""
    class ConfigError(Exception):
        def __str__(self):
            return self.message  # no such attribute

    assert gradedpackage.import_problem(ConfigError("bad config")) == (
        "ConfigError: (no message: its __str__ raised AttributeError: 'ConfigError' object has no attribute "
        "'message')")


def test_an_error_found_inside_torch_names_the_submissions_line(corpus, monkeypatch):
    """A wrong shape is found inside torch (linear.py): the reason named torch's file, not the line to fix;
    it names that line, and the function the test called when that is another."""
    def wrong_shape(model):
        return torch.nn.Linear(2, 3)(torch.zeros(1, 5))

    def pretrain(*args):
        return wrong_shape(args[2])
    monkeypatch.setattr(submission, "pretrain", pretrain)
    r = run(corpus[0], ["1f-0-basic"])["1f-0-basic"]
    assert r.reason.startswith("RuntimeError") and "site-packages" not in r.reason and "linear.py" not in r.reason
    assert re.search(r"raised at \S*test_grader\.py:\d+ in wrong_shape, called from \S*test_grader\.py:\d+ in "
                     r"pretrain$", r.reason), r.reason


def test_an_initializer_that_returns_none_is_named_and_costs_only_its_test(corpus, monkeypatch):
    """The starter's initialize_vanilla_model returns None: 1c-0 said AttributeError in the grader's own
    code, and 1c-1 and 1f-0 (part f's points) failed with it too."""
    monkeypatch.setattr(submission, "initialize_vanilla_model", lambda mconf: None)
    results = run(corpus[0], ["1c-0-hidden", "1c-1-basic", "1f-0-basic"])
    assert failing(results) == {"1c-0-hidden"}
    assert ("initialize_vanilla_model(mconf) returned NoneType, expected the GPT it builds"
            in results["1c-0-hidden"].reason)


@pytest.mark.parametrize("change, phrase", [
    (lambda tc, tr: (None, None), "finetune(None, ...) returned None as its trainer_config"),
    (lambda tc, tr: (tc, None), "finetune(None, ...) returned None as its trainer: build it"),
    (lambda tc, tr: (tr, tc), "returned (trainer, trainer_config): the order is (trainer_config, trainer)"),
])
def test_a_helper_returning_the_wrong_pair_is_told_so(corpus, monkeypatch, change, phrase):
    real = submission.finetune
    monkeypatch.setattr(submission, "finetune", lambda *args: change(*real(*args)))
    r = run(corpus[0], ["1c-1-basic"])["1c-1-basic"]
    assert not r.passed and phrase in r.reason, r.reason


def test_the_helper_tests_need_no_trainer_or_gpt_export(corpus, monkeypatch):
    """The swapped-pair check looked Trainer and TrainerConfig up in the package: a package that does not
    export them failed three tests it passed before; without a GPT export the initializer builds the model."""
    for name in ("Trainer", "TrainerConfig", "GPT"):
        monkeypatch.delattr(submission, name)
    assert failing(run(corpus[0], ["1c-1-basic", "1f-0-basic", "1g-0-basic"])) == set()


def test_a_wrong_attention_class_is_named_before_what_it_lacks(corpus, monkeypatch):
    """A synthesizer model built with vanilla attention: the three reasons shown were missing w1, w2, b2,
    and 'is a CausalSelfAttention, expected SynthesizerAttention' was among the '+21 more'."""
    monkeypatch.setattr(submission, "initialize_synthesizer_model", submission.initialize_vanilla_model)
    r = run(corpus[0], ["1g-0-basic"])["1g-0-basic"]
    assert "differs from the expected module tree: blocks.0.attn is a CausalSelfAttention, expected " \
           "SynthesizerAttention" in r.reason, r.reason


def test_exit_at_import_is_an_import_failure(corpus, monkeypatch):
    def exits(name):
        raise SystemExit(None)
    monkeypatch.setattr(gradedpackage.importlib, "import_module", exits)
    r = run(corpus[0], ["1c-0-hidden"])["1c-0-hidden"]
    assert r.reason == ("cannot import the submission package: exit() or sys.exit() runs as the package is "
                        "imported; remove it"), r.reason


def test_os_exit_in_the_code_under_test_fails_its_test(corpus, tmp_path):
    """os._exit in a student's module ended the grader at once: no totals, no results.json, status 0."""
    code = (f"import os, sys; sys.path.insert(0, {os.path.join(ROOT, 'src')!r}); import grader, submission; "
            f"submission.pretrain = lambda *a: os._exit(0); "
            f"sys.exit(grader.main(['1f-0', '1c-0', '--data-dir', {corpus[0]!r}, '--json', 'r.json']))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "FAIL: SystemExit: os._exit(0) called by the code under test; remove it" in proc.stdout
    assert "Total points: 2/6" in proc.stdout and (tmp_path / "r.json").is_file()


def test_a_change_of_folder_in_the_code_under_test_moves_nothing(corpus, monkeypatch, tmp_path, capsys):
    """A student's os.chdir moved results.json (written relative to the new folder) and the paths shown."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    real = submission.pretrain

    def pretrain(*args):
        os.chdir(elsewhere)
        return real(*args)
    monkeypatch.setattr(submission, "pretrain", pretrain)
    monkeypatch.chdir(tmp_path)
    assert grader.main(["1f-0", "1c-0", "--data-dir", corpus[0], "--json", "r.json"]) == 0
    assert os.getcwd() == str(tmp_path) and (tmp_path / "r.json").is_file() and not (elsewhere / "r.json").exists()
    assert "wrote r.json" in capsys.readouterr().out


def test_a_folder_changed_to_and_removed_by_the_code_under_test_stops_nothing(corpus, monkeypatch, tmp_path, capsys):
    """The grader restored the working folder by comparing it with os.getcwd(), which raises once the folder
    the code moved to is gone: a traceback, no totals, no results.json."""
    real = submission.pretrain

    def pretrain(*args):
        with tempfile.TemporaryDirectory() as gone:
            os.chdir(gone)
        return real(*args)
    monkeypatch.setattr(submission, "pretrain", pretrain)
    monkeypatch.chdir(tmp_path)
    assert grader.main(["1f-0", "1c-0", "--data-dir", corpus[0], "--json", "r.json"]) == 0
    assert os.getcwd() == str(tmp_path) and (tmp_path / "r.json").is_file()
    assert "Total points: 6/6" in capsys.readouterr().out


def test_a_place_names_the_frame_the_code_was_entered_in():
    """Two functions of one name in one file (GPT.forward calling Block.forward) are two frames: the outer
    is named as the caller; one frame alone has none."""
    f = traceback.FrameSummary
    frames = [f("/x/model.py", 96, "forward"), f("/x/model.py", 55, "forward")]
    assert graderlib._place(frames).endswith(", called from /x/model.py:96 in forward")
    assert "called from" not in graderlib._place(frames[1:])


class Float32Softmax(RealSynth):
    """Right, with its softmax taken in float32: within float32's rounding of the handout's equation."""
    def forward(self, x, layer_past=None):
        B, T, C = x.size()
        hs = C // self.n_head
        a = F.relu(self.w1(x)).view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        v = self.value(x).view(B, T, self.n_head, hs).transpose(1, 2)       # (B, nh, T, hs)
        att = (a @ self.w2[:, :T] + self.b2[:T]).masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att.float(), dim=-1).type_as(v)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)           # (B, T, C)
        return self.resid_drop(self.proj(y))


def test_a_synthesizer_with_a_float32_softmax_passes(corpus, monkeypatch):
    monkeypatch.setattr(submission, "SynthesizerAttention", Float32Softmax)
    r = run(corpus[0], ["1g-3-hidden"])["1g-3-hidden"]
    assert r.passed, r.reason


# ---------------------------------------------------------------------------------------------
# Accuracy tests on prediction files made here
# ---------------------------------------------------------------------------------------------
def write_predictions(folder, answers, transform):
    os.makedirs(folder, exist_ok=True)
    for name in ACCURACY.values():
        split = "dev" if ".dev." in name else "test"
        lines = transform(list(answers[split]))
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write("".join(p + "\n" for p in lines))


def test_all_right_predictions_earn_full_marks(corpus, tmp_path):
    write_predictions(str(tmp_path), corpus[1], lambda a: a)
    results = run(corpus[0], list(ACCURACY), submission_dir=str(tmp_path))
    for r in results.values():
        assert r.passed and r.points == r.max_points, r.reason


def test_all_wrong_predictions_score_zero(corpus, tmp_path):
    write_predictions(str(tmp_path), corpus[1], lambda a: ["Atlantis"] * len(a))
    results = run(corpus[0], list(ACCURACY), submission_dir=str(tmp_path))
    for test_id, r in results.items():
        assert not r.passed and r.points == 0
        if test_id.startswith("1d"):
            assert "no prediction" in r.reason and "is right (0/" in r.reason
        else:
            assert "accuracy 0.00%" in r.reason and "below the pass mark" in r.reason


def test_predictions_all_empty_are_said_to_be(corpus, tmp_path):
    """A model that writes the closing MASK at once answers every question with an empty line (run.py notes
    it): "0/20 right" alone read as wrong places. Every accuracy test says the lines are all empty; a file
    with one answer among empty lines is not said to be."""
    write_predictions(str(tmp_path), corpus[1], lambda a: [""] * len(a))
    results = run(corpus[0], list(ACCURACY), submission_dir=str(tmp_path))
    for test_id, r in results.items():
        assert not r.passed and r.points == 0
        assert f"every line of {ACCURACY[test_id]} is empty: the model wrote the closing MASK at once" in r.reason
    for first in ("Atlantis", " "):  # one answer, or one line of spaces (an answer to run.py's note too)
        write_predictions(str(tmp_path), corpus[1], lambda a: [first] + [""] * (len(a) - 1))
        results = run(corpus[0], list(ACCURACY), submission_dir=str(tmp_path))
        assert not any("is empty" in r.reason for r in results.values()), {i: r.reason for i, r in results.items()}


def test_a_place_in_another_case_is_a_wrong_answer(corpus, tmp_path):
    """The course compares places exactly: "london" does not answer "London"."""
    write_predictions(str(tmp_path), corpus[1], lambda a: [p.lower() for p in a])
    results = run(corpus[0], list(ACCURACY), submission_dir=str(tmp_path))
    assert failing(results) == set(ACCURACY), {i: r.reason for i, r in results.items() if r.passed}
    assert "is right (0/20)" in results["1d-0-hidden"].reason
    assert grader.count_right(["LONDON", "Paris", "lima"], ["London", "Paris", "Lima"]) == 1


def test_a_failing_accuracy_names_params_trained_short_of_the_courses_epochs(corpus, tmp_path):
    """A quick run (--max_epochs 1) graded: "below the pass mark" alone read as a broken model. The loss
    logs beside the params say how many epochs each trained."""
    write_predictions(str(tmp_path), corpus[1], lambda a: ["Atlantis"] * len(a))
    for params in ("vanilla.pretrain.params", "vanilla.finetune.params", "vanilla.model.params",
                   "synthesizer.finetune.params", "synthesizer.pretrain.params"):
        (tmp_path / params).write_bytes(b"params")  # a log says only for params beside it
    for params, epochs in (("vanilla.pretrain.params", 650), ("vanilla.finetune.params", 1),
                           ("vanilla.model.params", 2), ("synthesizer.finetune.params", 10)):
        with open(tmp_path / (params + ".log.jsonl"), "w", encoding="utf-8") as f:
            for e in range(1, epochs + 1):
                f.write(json.dumps({"step": e, "epoch": e, "loss": 1.0}) + "\n")
    (tmp_path / "synthesizer.pretrain.params.log.jsonl").write_text("not json\n", encoding="utf-8")
    results = run(corpus[0], list(ACCURACY), submission_dir=str(tmp_path))
    assert results["1f-1-hidden"].reason.endswith(
        " (vanilla.finetune.params trained 1 of the course's 10 epochs, by its loss log: the pass marks need the "
        "course's whole runs)")
    assert results["1d-0-hidden"].reason.endswith(
        " (vanilla.model.params trained 2 of the course's 75 epochs, by its loss log: the pass marks need the "
        "course's whole runs)")
    assert "epochs" not in results["1g-1-hidden"].reason  # the course's 10; the pretraining log unreadable


def test_a_failing_accuracy_reads_the_epochs_from_the_params_card_before_a_log_of_replaced_params(corpus, tmp_path):
    """A 1-epoch --restart whose loss log went elsewhere (--log_path) left the 75-epoch run's log beside its
    params: the grader read that log and said nothing of the short run. The card (its sha256 the params') says
    1; a log much older than the params beside it, with no card, says nothing."""
    import hashlib
    write_predictions(str(tmp_path), corpus[1], lambda a: ["Atlantis"] * len(a))
    params = tmp_path / "vanilla.model.params"
    params.write_bytes(b"the params of a 1-epoch run")
    log = tmp_path / "vanilla.model.params.log.jsonl"
    log.write_text("".join(json.dumps({"step": e, "epoch": e, "loss": 1.0}) + "\n" for e in range(1, 76)),
                   encoding="utf-8")
    os.utime(log, (params.stat().st_mtime - 3600,) * 2)  # the replaced run's, an hour before
    card = tmp_path / "vanilla.model.params.card.json"
    card.write_text(json.dumps({"params_sha256": hashlib.sha256(params.read_bytes()).hexdigest(), "epochs": 1}),
                    encoding="utf-8")
    r = run(corpus[0], ["1d-0-hidden"], submission_dir=str(tmp_path))["1d-0-hidden"]
    assert r.reason.endswith(" (vanilla.model.params trained 1 of the course's 75 epochs, by its card: the pass "
                             "marks need the course's whole runs)"), r.reason
    card.write_text(json.dumps({"params_sha256": "0" * 64, "epochs": 1}), encoding="utf-8")  # another file's card
    log.write_text(json.dumps({"step": 2, "epoch": 2, "loss": 1.0}) + "\n", encoding="utf-8")
    os.utime(log, (params.stat().st_mtime - 3600,) * 2)
    r = run(corpus[0], ["1d-0-hidden"], submission_dir=str(tmp_path))["1d-0-hidden"]
    assert "epochs" not in r.reason, r.reason  # a log of params since replaced: not theirs
    os.utime(log, (params.stat().st_mtime,) * 2)
    r = run(corpus[0], ["1d-0-hidden"], submission_dir=str(tmp_path))["1d-0-hidden"]
    assert "trained 2 of the course's 75 epochs, by its loss log" in r.reason, r.reason


def test_a_card_counts_epochs_only_as_a_whole_number(tmp_path):
    """The card's epochs are read as a count while they are an int: `true` (a card edited by hand) is no 1 epoch,
    and the loss log beside the params says instead."""
    import hashlib
    params = tmp_path / "p.params"
    params.write_bytes(b"params")
    card = tmp_path / "p.params.card.json"
    for epochs, says in ((3, (3, "card")), (True, (None, None)), ("3", (None, None))):
        card.write_text(json.dumps({"params_sha256": hashlib.sha256(b"params").hexdigest(), "epochs": epochs}),
                        encoding="utf-8")
        assert grader.trained_epochs(str(params)) == says, epochs
    (tmp_path / "p.params.log.jsonl").write_text(json.dumps({"step": 1, "epoch": 2, "loss": 1.0}) + "\n",
                                                  encoding="utf-8")
    assert grader.trained_epochs(str(params)) == (2, "loss log")


def test_a_failing_accuracy_says_nothing_of_epochs_from_a_log_or_card_beside_missing_params(corpus, tmp_path):
    """A folder sent without vanilla.model.params but with a 1-epoch run's stale loss log and card beside where
    they would be: the grader explained the failing accuracy with "trained 1 of the course's 75 epochs", a run
    tied to no params graded. With the params missing neither says (a card without params_sha256 matched the
    missing params' sha256, None)."""
    write_predictions(str(tmp_path), corpus[1], lambda a: ["Atlantis"] * len(a))
    params = tmp_path / "vanilla.model.params"
    log = tmp_path / "vanilla.model.params.log.jsonl"
    log.write_text(json.dumps({"step": 1, "epoch": 1, "loss": 1.0}) + "\n", encoding="utf-8")
    r = run(corpus[0], ["1d-0-hidden"], submission_dir=str(tmp_path))["1d-0-hidden"]
    assert not r.passed and "is right (0/" in r.reason and "epochs" not in r.reason, r.reason
    assert grader.trained_epochs(str(params)) == (None, None)
    log.unlink()
    (tmp_path / "vanilla.model.params.card.json").write_text(json.dumps({"epochs": 1}), encoding="utf-8")
    assert grader.trained_epochs(str(params)) == (None, None)
    params.write_bytes(b"params")  # the same log beside params: it says
    log.write_text(json.dumps({"step": 1, "epoch": 1, "loss": 1.0}) + "\n", encoding="utf-8")
    r = run(corpus[0], ["1d-0-hidden"], submission_dir=str(tmp_path))["1d-0-hidden"]
    assert "vanilla.model.params trained 1 of the course's 75 epochs, by its loss log" in r.reason, r.reason


def test_a_failing_accuracy_names_every_params_file_trained_short(corpus, tmp_path):
    """Pretraining and finetuning both cut short: the note names both files and their epochs, not the first alone."""
    write_predictions(str(tmp_path), corpus[1], lambda a: ["Atlantis"] * len(a))
    for params, epochs in (("vanilla.pretrain.params", 3), ("vanilla.finetune.params", 1)):
        (tmp_path / params).write_bytes(b"params")
        with open(tmp_path / (params + ".log.jsonl"), "w", encoding="utf-8") as f:
            for e in range(1, epochs + 1):
                f.write(json.dumps({"step": e, "epoch": e, "loss": 1.0}) + "\n")
    r = run(corpus[0], ["1f-1-hidden"], submission_dir=str(tmp_path))["1f-1-hidden"]
    assert r.reason.endswith(
        " (vanilla.pretrain.params trained 3 of the course's 650 epochs; vanilla.finetune.params trained 1 of the "
        "course's 10 epochs, by their loss logs: the pass marks need the course's whole runs)"), r.reason


def test_a_missing_line_scores_zero(corpus, tmp_path):
    write_predictions(str(tmp_path), corpus[1], lambda a: a[:-1])
    results = run(corpus[0], list(ACCURACY), submission_dir=str(tmp_path))
    n = {"dev": len(corpus[1]["dev"]), "test": len(corpus[1]["test"])}
    for test_id, r in results.items():
        split = "dev" if ".dev." in ACCURACY[test_id] else "test"
        assert not r.passed and r.points == 0
        assert f"has {n[split] - 1} lines for the {n[split]} questions" in r.reason


def test_predictions_of_another_data_folder_name_it(corpus, tmp_path):
    """`grader.py --submission-dir runs/demo` graded the demo's 40 answers against data/'s questions and
    said to remake them with OUT_DIR=runs/demo, a course-size run into the demo's folder; the demo's own
    questions, in runs/demo/data, were what they answer. A folder of as many questions there is named."""
    name = ACCURACY["1f-1-hidden"]
    (tmp_path / name).write_text("Lima\nOslo\n", encoding="utf-8")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "birth_dev.tsv").write_text("Where was A born?\tLima\nWhere was B born?\tOslo\n",
                                                      encoding="utf-8")
    r = run(corpus[0], ["1f-1-hidden"], submission_dir=str(tmp_path))["1f-1-hidden"]
    data = tmp_path / "data"
    assert r.reason.endswith(f"in order; it answers the 2 questions of {data}: grade it with --data-dir "
                             f"{shlex.quote(str(data))}")
    (tmp_path / name).write_text("Lima\n", encoding="utf-8")  # as many as neither: the general hint
    r = run(corpus[0], ["1f-1-hidden"], submission_dir=str(tmp_path))["1f-1-hidden"]
    assert re.search(r"in order; if it answers another data folder's questions, give that folder with --data-dir, "
                     r"else remake it with DATA_DIR=('[^']*'|\S+) OUT_DIR=('[^']*'|\S+) "
                     r"\./run\.sh vanilla_eval_dev_with_pretrain$",
                     r.reason), r.reason


def test_the_data_folder_graded_is_not_named_as_another_one(corpus, tmp_path):
    """The submission folder's data/ as the --data-dir itself (the demo's runs/demo and runs/demo/data): a file of
    the wrong count does not answer it, so the hint is not to grade it with the --data-dir already given."""
    data = tmp_path / "data"
    shutil.copytree(corpus[0], data)
    (tmp_path / ACCURACY["1f-1-hidden"]).write_text("Lima\n", encoding="utf-8")
    r = run(str(data), ["1f-1-hidden"], submission_dir=str(tmp_path))["1f-1-hidden"]
    assert "has 1 line for the 20 questions" in r.reason and "grade it with --data-dir" not in r.reason, r.reason
    assert "if it answers another data folder's questions, give that folder with --data-dir" in r.reason


def test_a_labels_line_without_a_tab_is_named_by_its_line_number(tmp_path):
    """read_labels counts every line of the file, blank ones too, as an editor numbers them."""
    path = tmp_path / "birth_dev.tsv"
    path.write_text("Where was A born?\tLima\n\nWhere was B born? Oslo\n", encoding="utf-8")
    with pytest.raises(graderlib.Failure, match=r"birth_dev\.tsv:3: expected question<TAB>place, found 1 "
                                               r"tab-separated field\(s\); fix or remove that line$"):
        grader.read_labels(str(path))
    # mutation audit: a line of three fields is named too (a tab inside the place), not graded on its second field
    path.write_text("Where was A born?\tLima\nWhere was B born?\tOslo\tNorway\n", encoding="utf-8")
    with pytest.raises(graderlib.Failure, match=r"birth_dev\.tsv:2: expected question<TAB>place, found 3 "
                                               r"tab-separated field\(s\); fix or remove that line$"):
        grader.read_labels(str(path))


@pytest.mark.parametrize("text, count", [("", "0 lines"), ("London\n", "1 line"), ("London", "1 line"),
                                         ("London\n\n", "2 lines")])
def test_line_count_of_short_prediction_files(corpus, tmp_path, text, count):
    (tmp_path / ACCURACY["1f-1-hidden"]).write_text(text, encoding="utf-8")
    r = run(corpus[0], ["1f-1-hidden"], submission_dir=str(tmp_path))["1f-1-hidden"]
    assert not r.passed and f"has {count} for the {len(corpus[1]['dev'])} questions" in r.reason


def score(ctx, name):
    """(right, questions) of a predictions file as the accuracy tests count them, or the grader's Failure."""
    lines, answers = grader.read_predictions(ctx, name)
    return grader.count_right(lines, answers), len(answers)


def test_a_byte_order_mark_or_blank_lines_at_the_end_of_predictions_cost_nothing(corpus, tmp_path):
    """A predictions file saved with a byte-order mark lost its first prediction (19/20); one ending in
    an extra blank line had "21 lines for the 20 questions" and scored 0."""
    dev = corpus[1]["dev"]
    name = ACCURACY["1f-1-hidden"]
    ctx = grader.make_grader(corpus[0], str(tmp_path), "course").context
    body = "".join(p + "\n" for p in dev)
    for text in ("\ufeff" + body, body + "\n", body + "\n \n\n", "\ufeff" + body.replace("\n", "\r\n") + "\r\n"):
        (tmp_path / name).write_bytes(text.encode("utf-8"))
        assert score(ctx, name) == (len(dev), len(dev)), repr(text[-8:])
    # an empty last prediction is a line the count needs: it stays, and is wrong
    (tmp_path / name).write_text("".join(p + "\n" for p in dev[:-1]) + "\n", encoding="utf-8")
    assert score(ctx, name) == (len(dev) - 1, len(dev))
    (tmp_path / name).write_text(body + "Lima\n\n", encoding="utf-8")  # a line too many is still one
    with pytest.raises(graderlib.Failure, match=f"has {len(dev) + 1} lines for the {len(dev)} questions of "
                                                f"birth_dev.tsv: it must"):
        score(ctx, name)
    # a blank line added inside: named, as the line to look at (empty answers are blank lines too, so only
    # as many as the extra lines are named)
    lines = [p + "\n" for p in dev]
    (tmp_path / name).write_text("".join(lines[:4] + ["\n"] + lines[4:]), encoding="utf-8")
    with pytest.raises(graderlib.Failure, match=f"has {len(dev) + 1} lines for the {len(dev)} questions of "
                                                f"birth_dev.tsv \\(line 5 is blank\\): it must"):
        score(ctx, name)
    (tmp_path / name).write_text("".join(lines[:4] + ["\n"] + lines[4:6] + ["\n"] + lines[6:]), encoding="utf-8")
    with pytest.raises(graderlib.Failure, match=r"questions of birth_dev.tsv \(lines 5 and 8 are blank\): it must"):
        score(ctx, name)


def test_blank_lines_are_named_only_as_many_as_the_extra_lines_and_at_most_three():
    """Mutation audit of blank_lines: a line of spaces is blank too; an empty answer is a blank line as
    well, so no more blank lines are named than the file has extra lines, and never more than three."""
    assert grader.blank_lines(["Lima", "Oslo", " ", "Quito"], 3) == " (line 3 is blank)"
    assert grader.blank_lines(["Lima", "", "Oslo", ""], 3) == ""  # one line too many, two blank: which?
    assert grader.blank_lines(["Lima", "", "", "", "Oslo"], 2) == " (lines 2, 3 and 4 are blank)"
    assert grader.blank_lines(["Lima", "", "", "", "", "Oslo"], 2) == ""  # four: more than a slip
    assert grader.blank_lines(["Lima", "Oslo", "Quito"], 2) == ""


def test_one_place_as_half_the_answers_is_no_baseline(corpus, tmp_path):
    """Mutation audit: the one-place baseline is a place given as more than half the answers; exactly half,
    the rest wrong, passes on its accuracy (a model that answers its commonest place half the time)."""
    def half(answers):
        commonest = max(PLACES, key=answers.count)
        chosen = sorted(range(len(answers)), key=lambda i: answers[i] != commonest)[:len(answers) // 2]
        return [commonest if i in chosen else "Atlantis" for i in range(len(answers))]
    assert all(len(corpus[1][split]) % 2 == 0 for split in ("dev", "test"))
    write_predictions(str(tmp_path), corpus[1], half)
    assert not failing(run(corpus[0], list(ACCURACY), submission_dir=str(tmp_path)))


def test_only_a_demo_s_own_folder_and_world_get_the_demo_s_words(corpus, tmp_path, monkeypatch):
    """Mutation audit: a folder without the demo's record is no demo's, even graded with a data/ inside it
    (no excuse for 0 right), nor is one where the record's name is a folder; the demo's own default folder
    (runs/demo) is remade by `./run.sh demo` without --out."""
    plain = tmp_path / "plain"
    shutil.copytree(corpus[0], plain / "data")
    dev = len((plain / "data" / "birth_dev.tsv").read_text(encoding="utf-8").splitlines())
    (plain / ACCURACY["1d-0-hidden"]).write_text("Atlantis\n" * dev, encoding="utf-8")
    (plain / grader.DEMO_RECORD).mkdir()
    assert not grader.is_demo_folder(str(plain))
    reason = run(str(plain / "data"), ["1d-0-hidden"], submission_dir=str(plain))["1d-0-hidden"].reason
    assert "even without pretraining the model gets a few right" in reason and "demo" not in reason
    demo = tmp_path / "demo"
    demo.mkdir()
    (demo / grader.DEMO_RECORD).write_text("{}", encoding="utf-8")
    monkeypatch.setattr(grader, "DEFAULT_DEMO_DIR", str(demo))
    reason = run(corpus[0], ["1f-1-hidden"], submission_dir=str(demo))["1f-1-hidden"].reason
    assert reason.endswith("not found: make it with ./run.sh demo (the demo's files come from the demo)"), reason


def test_a_world_without_test_questions_is_named_in_the_header(corpus, tmp_path, capsys):
    """Mutation audit of grade's header: an empty birth_test.tsv (a demo's world) is said before the tests,
    as a missing one is, with the tests that cannot pass, not left to each test's failure alone."""
    world = tmp_path / "world"
    shutil.copytree(corpus[0], world)
    for name in ("birth_test.tsv", "birth_test_inputs.tsv"):
        (world / name).write_text("", encoding="utf-8")
    grader.main(["1f-2", "--data-dir", str(world), "--submission-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert (f"note: birth_test.tsv in {world} holds no questions (a demo's world has no test split): "
            f"1f-2-hidden cannot pass") in out, out


def test_predictions_not_in_utf8_are_named_so(corpus, tmp_path):
    """Notepad's "Unicode" (UTF-16) made "501 lines for the 500 questions", and a Latin-1 file lost its
    non-ASCII places silently: both are one line saying the file is not UTF-8."""
    dev = corpus[1]["dev"]
    name = ACCURACY["1f-1-hidden"]
    ctx = grader.make_grader(corpus[0], str(tmp_path), "course").context
    body = "".join(p + "\n" for p in dev)
    (tmp_path / name).write_bytes(body.encode("utf-16"))  # with its byte-order mark, as Notepad saves it
    with pytest.raises(graderlib.Failure, match=r"UTF-16 text \(byte-order mark FF FE\), not UTF-8; save it as UTF-8"):
        score(ctx, name)
    (tmp_path / name).write_bytes(b"Lima\nS\xe3o Paulo\n" + body.encode("utf-8"))
    with pytest.raises(graderlib.Failure, match=r":2: not valid UTF-8 at byte 6; save the file as UTF-8"):
        score(ctx, name)
    (tmp_path / name).write_bytes(b"\xef\xbb\xbfLima\nS\xe3o Paulo\n" + body.encode("utf-8"))  # the mark counted
    with pytest.raises(graderlib.Failure, match=r":2: not valid UTF-8 at byte 9; save the file as UTF-8"):
        score(ctx, name)


def test_predictions_in_the_wrong_shape_are_named_so(corpus, tmp_path):
    """Lines of question<TAB>place read as 'dev accuracy 0.00%'; params saved under a predictions name as
    'not valid UTF-8 at byte 64'."""
    dev = corpus[1]["dev"]
    name = ACCURACY["1f-1-hidden"]
    ctx = grader.make_grader(corpus[0], str(tmp_path), "course").context
    (tmp_path / name).write_text("".join(f"Where was someone born?\t{p}\n" for p in dev), encoding="utf-8")
    with pytest.raises(graderlib.Failure, match=rf"{name}: {len(dev)} of its {len(dev)} lines hold a tab .* holds "
                                                r"the predicted place alone, one a line; remake it with"):
        score(ctx, name)
    (tmp_path / name).write_text("".join(p + "\n" for p in dev[:-1]) + "Lima\tPeru\n", encoding="utf-8")
    assert score(ctx, name) == (len(dev) - 1, len(dev))  # one stray tab is a wrong answer
    torch.save({"w": torch.zeros(2)}, tmp_path / name)
    with pytest.raises(graderlib.Failure, match=r"a zip archive \(torch.save writes params as one\), not UTF-8 text"):
        score(ctx, name)


def test_a_predictions_file_far_larger_than_its_answers_is_not_read(corpus, tmp_path):
    """(security audit) 105 MB under a predictions name took 1.45 GB to read, enough to end a grading in a
    small container with no report: past a kilobyte an answer (and 100 lines of slack) it is one line, unread."""
    dev = corpus[1]["dev"]
    name = ACCURACY["1f-1-hidden"]
    ctx = grader.make_grader(corpus[0], str(tmp_path), "course").context
    most = (len(dev) + 100) * grader.PREDICTION_BYTES_MOST
    (tmp_path / name).write_text("London\n" * len(dev) + "x" * (most - 7 * len(dev)), encoding="utf-8")
    with pytest.raises(graderlib.Failure, match=rf"has {len(dev) + 1} lines for the {len(dev)} questions"):
        score(ctx, name)  # at the bound: read (and a line too many said as such)
    (tmp_path / name).write_text("London\n" * len(dev) + "x" * (most - 7 * len(dev) + 1), encoding="utf-8")
    with pytest.raises(graderlib.Failure, match=rf"{name}: {most + 1:,} bytes, more than {len(dev)} predictions "
                                                r"can be \(a line each, of a few dozen characters\): check that"):
        score(ctx, name)
    torch.save({"w": torch.zeros(most // 4)}, tmp_path / name)  # params that large under its name: named as a zip
    with pytest.raises(graderlib.Failure, match=r"a zip archive \(torch.save writes params as one\), not UTF-8 text"):
        score(ctx, name)


def test_a_package_without_its_init_or_one_folder_too_deep_is_named(monkeypatch, tmp_path):
    """Both read 'the submission package has no CharCorruptionDataset (submission/__init__.py must export it)'."""
    monkeypatch.setattr(gradedpackage, "HERE", str(tmp_path))
    monkeypatch.delattr(submission, "CharCorruptionDataset")
    package = tmp_path / "submission"
    (package / "submission").mkdir(parents=True)
    with pytest.raises(graderlib.Failure, match=r"submission/submission is there: the package's files are one "
                                                r"folder too deep; move them up into"):
        gradedpackage.sub_attr("CharCorruptionDataset")
    (package / "submission").rmdir()
    with pytest.raises(graderlib.Failure, match=r"submission/__init__.py is missing: it makes the folder the "
                                                r"submission package and exports CharCorruptionDataset"):
        gradedpackage.sub_attr("CharCorruptionDataset")
    (package / "__init__.py").write_text("")
    with pytest.raises(graderlib.Failure, match=r"the submission package has no CharCorruptionDataset"):
        gradedpackage.sub_attr("CharCorruptionDataset")


def test_data_file_not_utf8_fails_in_one_line_naming_file_line_and_byte(corpus, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(corpus[0], data)
    offsets = {}
    for name in ("birth_dev.tsv", "birth_places_train.tsv", "wiki.txt"):
        raw = (data / name).read_bytes()
        offsets[name] = raw.index(b"\n", raw.index(b"\n") + 1) + 1  # the start of line 3
        (data / name).write_bytes(raw[:offsets[name]] + b"\xff" + raw[offsets[name]:])
    results = run(str(data), ["1f-1-hidden", "1c-1-basic", "1c-0-hidden"])
    for test_id, name in (("1f-1-hidden", "birth_dev.tsv"), ("1c-0-hidden", "wiki.txt"), ("1c-1-basic", "wiki.txt")):
        reason = results[test_id].reason
        assert reason == f"{data / name}:3: not valid UTF-8 at byte {offsets[name]}; save the file as UTF-8"
    (data / "wiki.txt").write_bytes((data / "wiki.txt").read_bytes().replace(b"\xff", b""))
    reason = run(str(data), ["1c-1-basic"])["1c-1-basic"].reason
    assert reason.startswith(f"{data / 'birth_places_train.tsv'}:3: not valid UTF-8") and "\n" not in reason


def test_missing_file_names_the_run_sh_mode(corpus, tmp_path):
    results = run(corpus[0], list(ACCURACY), submission_dir=str(tmp_path))
    modes = {"1d-0-hidden": "vanilla_eval_dev_without_pretrain", "1d-1-hidden": "vanilla_eval_test_without_pretrain",
             "1f-1-hidden": "vanilla_eval_dev_with_pretrain", "1f-2-hidden": "vanilla_eval_test_with_pretrain",
             "1g-1-hidden": "synthesizer_eval_dev_with_pretrain", "1g-2-hidden": "synthesizer_eval_test_with_pretrain"}
    for test_id, r in results.items():
        assert not r.passed and "not found" in r.reason and f"./run.sh {modes[test_id]}" in r.reason
    # mutation audit: the modes to run before it are named too, in order (without them the mode fails on missing params)
    before = {"1d": "vanilla_finetune_without_pretrain", "1f": "vanilla_pretrain, vanilla_finetune_with_pretrain",
              "1g": "synthesizer_pretrain, synthesizer_finetune_with_pretrain"}
    for test_id, r in results.items():
        assert r.reason.endswith(f"./run.sh {modes[test_id]} (after {before[test_id[:2]]})"), r.reason


def test_the_run_sh_hint_quotes_folders_for_the_shell(corpus, tmp_path):
    """The hint printed DATA_DIR=/tmp/w/da ta dir ./run.sh ..., which the shell splits at the space."""
    data, sub = tmp_path / "da ta dir", tmp_path / "it's mine"
    shutil.copytree(corpus[0], data)
    sub.mkdir()
    reason = run(str(data), ["1f-1-hidden"], submission_dir=str(sub))["1f-1-hidden"].reason
    command = reason.split("make it with ", 1)[1].split(" (after", 1)[0]
    assert command == f"DATA_DIR={shlex.quote(str(data))} OUT_DIR={shlex.quote(str(sub))} ./run.sh " \
                      f"vanilla_eval_dev_with_pretrain"
    assert shlex.split(command) == [f"DATA_DIR={data}", f"OUT_DIR={sub}", "./run.sh", "vanilla_eval_dev_with_pretrain"]


def test_the_run_sh_hint_names_folders_below_the_repo_as_typed_there(monkeypatch, tmp_path):
    """Run in the repo root, the hint named runs/demo as /home/.../runs/demo, twice a command and up to three
    commands a line (deliverables' lines ran to 600 characters); from any other folder it stays absolute, as
    the command is pasted there after a cd."""
    import grader
    demo = os.path.join(grader.ROOT, "runs", "demo")
    monkeypatch.chdir(grader.ROOT)
    assert grader.run_sh_command("vanilla_pretrain", os.path.join(demo, "data"), demo) == \
        "DATA_DIR=runs/demo/data OUT_DIR=runs/demo ./run.sh vanilla_pretrain"
    assert grader.run_sh_command("vanilla_pretrain", str(tmp_path), demo) == \
        f"DATA_DIR={shlex.quote(str(tmp_path))} OUT_DIR=runs/demo ./run.sh vanilla_pretrain"
    monkeypatch.chdir(os.path.join(grader.ROOT, "src"))
    assert grader.run_sh_command("vanilla_pretrain", grader.DEFAULT_DATA_DIR, demo) == \
        f"OUT_DIR={shlex.quote(demo)} ./run.sh vanilla_pretrain"


def test_pass_mark_boundary(corpus, tmp_path):
    dev = corpus[1]["dev"]  # 20 questions: 2 right is exactly the vanilla mark (10%), 1 right is below
    for right, passes in ((2, True), (1, False)):
        write_predictions(str(tmp_path), corpus[1], lambda a: a[:right] + ["Atlantis"] * (len(a) - right))
        r = run(corpus[0], ["1f-1-hidden"], submission_dir=str(tmp_path))["1f-1-hidden"]
        assert r.passed is passes and len(dev) == 20


def test_answers_right_but_for_spaces_are_named_as_such(corpus, tmp_path):
    """A file whose lines end in a space (an edit, or a model that learned to write one) scores 0%, as the
    course's evaluate_places scores it; the failure blamed only the training (a --max_epochs 1 run's note), and
    a student could retrain for hours over a space."""
    write_predictions(str(tmp_path), corpus[1], lambda a: [p + " " for p in a])
    results = run(corpus[0], ["1f-1-hidden", "1d-0-hidden"], submission_dir=str(tmp_path))
    for r in results.values():
        assert not r.passed and "(20 lines of vanilla." in r.reason and ".predictions would be right without the " \
            "spaces around them: " in r.reason, r.reason
    write_predictions(str(tmp_path), corpus[1], lambda a: a[:1] + ["Atlantis"] * (len(a) - 1))
    r = run(corpus[0], ["1f-1-hidden"], submission_dir=str(tmp_path))["1f-1-hidden"]
    assert not r.passed and "spaces" not in r.reason  # (wrong answers: no word of spaces)


def test_predictions_written_sorted_or_reversed_are_named_as_such(corpus, tmp_path):
    """Each line is compared with its question's answer: a file sorted or written bottom to top scored as a model
    that learned nothing, and the failure blamed the training."""
    answers = ["Paris", "Lima", "Oslo", "Accra", "Lima", "Quito"]
    assert grader.out_of_order(sorted(answers), answers, "f") == (
        " (the lines of f are in alphabetical order, which the questions are not: write each prediction on its "
        "question's line, in the questions file's order)")
    assert grader.out_of_order(answers[::-1], answers, "f").startswith(" (read bottom to top, 6 lines of f would be")
    assert grader.out_of_order(answers, answers, "f") == ""
    assert grader.out_of_order(sorted(answers), sorted(answers), "f") == ""  # questions whose answers are sorted
    def reversed_none_right(a):  # bottom to top, a line right by chance (the middle's, a repeated place) made wrong
        return ["Atlantis" if p == q else p for p, q in zip(a[::-1], a)]
    write_predictions(str(tmp_path), corpus[1], reversed_none_right)
    r = run(corpus[0], ["1f-1-hidden"], submission_dir=str(tmp_path))["1f-1-hidden"]
    assert not r.passed and re.search(r"\(read bottom to top, \d+ lines of vanilla\.pretrain\.dev\.predictions would "
                                      r"be right: write each prediction on its question's line", r.reason), r.reason
    write_predictions(str(tmp_path), corpus[1], lambda a: ["Atlantis"] * len(a))  # wrong, in order: no word of it
    r = run(corpus[0], ["1f-1-hidden"], submission_dir=str(tmp_path))["1f-1-hidden"]
    assert "order" not in r.reason and "bottom to top" not in r.reason, r.reason


def test_answers_that_keep_the_closing_mask_are_named_as_such(corpus, tmp_path):
    """A student's evaluation that keeps the closing MASK, or the padding after it ("London\u2047\u25a1\u25a1"),
    scored 0% with "check that it was finetuned and evaluated on this data": the fault was in cutting the
    completion, and a retraining would not mend it."""
    mask, pad = grader.MASK_CHAR, grader.PAD_CHAR
    write_predictions(str(tmp_path), corpus[1], lambda a: [p + (mask if i % 2 else mask + pad * 3)
                                                             for i, p in enumerate(a)])
    results = run(corpus[0], ["1f-1-hidden", "1d-0-hidden"], submission_dir=str(tmp_path))
    for r in results.values():
        assert not r.passed and "(20 lines of vanilla." in r.reason and f".predictions would be right cut at " \
            f"their first {mask} or {pad}: " in r.reason and "spaces" not in r.reason, r.reason
    # wrong answers, or answers that the cut alone would not make right: no word of the cut
    for wrong in (lambda a: ["Atlantis" + mask] * len(a), lambda a: [" " + p + mask for p in a]):
        write_predictions(str(tmp_path), corpus[1], wrong)
        r = run(corpus[0], ["1f-1-hidden"], submission_dir=str(tmp_path))["1f-1-hidden"]
        assert not r.passed and "cut at" not in r.reason, r.reason


def test_one_right_answer_passes_the_tests_without_pretraining(corpus, tmp_path):
    """Mutation audit: 1d-0 and 1d-1 pass with one right answer, the bar the docs give (a model without
    pretraining gets a few right); a bar of two passed the same way on every file the other tests wrote."""
    for right, passes in ((1, True), (0, False)):
        write_predictions(str(tmp_path), corpus[1], lambda a: a[:right] + ["Atlantis"] * (len(a) - right))
        results = run(corpus[0], ["1d-0-hidden", "1d-1-hidden"], submission_dir=str(tmp_path))
        for r in results.values():
            assert r.passed is passes and r.points == (r.max_points if passes else 0), (r.id, r.reason)
            if passes:
                assert r.note == "1/20 right (5.0%)", r.note


def test_each_pass_mark_test_takes_its_own_mark(tmp_path):
    """On 20 questions the marks 9% and 10% (or 4% and 5%) both need the same number right: on 100 dev and
    100 test questions, each pass-mark test passes at exactly its own course mark and fails one answer below."""
    data = str(tmp_path / "data")
    answers = write_corpus(data, n_people=220, n_train=20, n_dev=100)
    marks = {"1f-1-hidden": 10, "1f-2-hidden": 9, "1g-1-hidden": 5, "1g-2-hidden": 4}  # the course's, in percent
    for below in (0, 1):
        sub = tmp_path / f"sub{below}"
        sub.mkdir()
        for test_id, percent in marks.items():
            places = answers["dev" if ".dev." in ACCURACY[test_id] else "test"]
            assert len(places) == 100
            right = percent - below
            lines = places[:right] + ["Atlantis"] * (len(places) - right)
            (sub / ACCURACY[test_id]).write_text("".join(p + "\n" for p in lines), encoding="utf-8")
        results = run(data, list(marks), submission_dir=str(sub))
        assert failing(results) == (set(marks) if below else set()), {i: r.reason for i, r in results.items()}


def test_one_place_repeated_fails_the_pass_marks(corpus, tmp_path):
    """Always answering the commonest place scored above the synthesizer's marks (on the course's data
    and on data/, always "London" gets 5.0%, the marks 4-5%): a file of one place repeated passed 1g-1
    without any model. It fails every pass mark now, naming the mode that makes the file; the tests
    without pretraining (at least one right) still count it. An empty line is no other answer (one blank
    line let the repeated place pass), and neither is a wrong one: a file of "London" with one other place
    put in passed 1g-1 (staff review); a right answer other than the commonest place is a model's."""
    def write(last):
        for test_id, name in ACCURACY.items():
            places = corpus[1]["dev" if ".dev." in name else "test"]
            commonest = max(PLACES, key=places.count)
            assert places.count(commonest) / len(places) >= 0.1  # above every mark by accuracy alone
            lines = [commonest] * len(places)
            if last is not None:
                lines[-1] = last
            (tmp_path / name).write_text("".join(p + "\n" for p in lines), encoding="utf-8")
    for last in (None, "", " ", "Atlantis"):
        write(last)
        for test_id, r in run(corpus[0], list(ACCURACY), submission_dir=str(tmp_path)).items():
            if test_id.startswith("1d"):
                assert r.passed
            else:
                places = corpus[1]["dev" if ".dev." in ACCURACY[test_id] else "test"]
                repeated = len(places) - (last is not None)  # a blank line is no place either
                assert not r.passed and re.search(rf"{repeated} of the {len(places)} predictions in "
                                                  rf"{re.escape(ACCURACY[test_id])} are '\w+', and every right one "
                                                  rf"is: that is the one-place baseline", r.reason), r.reason
                assert "./run.sh " in r.reason
    for name in ACCURACY.values():  # the last question answered right, with another place than the commonest
        places = corpus[1]["dev" if ".dev." in name else "test"]
        commonest = max(PLACES, key=places.count)
        other = next(i for i in range(len(places) - 1, -1, -1) if places[i] != commonest)
        lines = [commonest] * len(places)
        lines[other] = places[other]
        (tmp_path / name).write_text("".join(p + "\n" for p in lines), encoding="utf-8")
    assert not failing(run(corpus[0], list(ACCURACY), submission_dir=str(tmp_path)))


def test_test_labels_of_other_questions_are_not_used(tmp_path):
    """The course's files copied over data/ (src/data/ is a link to it) leave data/'s own birth_test.tsv:
    its labels graded the course's test predictions (100% for predictions made from them)."""
    data = str(tmp_path / "data")
    answers = write_corpus(data)
    write_predictions(str(tmp_path / "sub"), answers, lambda a: a)
    assert not failing(run(data, list(ACCURACY), submission_dir=str(tmp_path / "sub")))
    inputs = os.path.join(data, "birth_test_inputs.tsv")
    with open(inputs, encoding="utf-8") as f:
        asked = f.read().split("\n")
    asked[2] = "Where was Someone Else born?"  # the course's questions, not the labels' own
    with open(inputs, "w", encoding="utf-8") as f:
        f.write("\n".join(asked))
    results = run(data, list(ACCURACY), submission_dir=str(tmp_path / "sub"))
    for test_id, r in results.items():
        if ".test." in ACCURACY[test_id]:
            assert not r.passed and r.points == 0 and r.reason.startswith(
                "test labels absent: ") and "labels other questions than" in r.reason, r.reason
            assert "first differing at question 3" in r.reason
        else:
            assert r.passed


def test_test_labels_without_an_inputs_file_are_used_as_they_are(tmp_path):
    """A folder with birth_test.tsv and no birth_test_inputs.tsv (staff's labels alone): nothing to
    compare the questions with, so no note and the test accuracy is graded."""
    data = tmp_path / "data"
    answers = write_corpus(str(data))
    (data / "birth_test_inputs.tsv").unlink()
    write_predictions(str(tmp_path / "sub"), answers, lambda a: a)
    p = subprocess.run([sys.executable, GRADER, "1d", "--data-dir", str(data), "--submission-dir",
                        str(tmp_path / "sub")], capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert p.returncode == 0 and "note:" not in p.stdout.split("----- START")[0], p.stdout + p.stderr
    assert "1d-1-hidden" in p.stdout and "FAIL" not in p.stdout, p.stdout


def test_absent_test_labels_score_zero_with_the_reason(tmp_path):
    data = str(tmp_path / "data")
    answers = write_corpus(data, with_test_labels=False)
    write_predictions(str(tmp_path / "sub"), answers, lambda a: a)
    results = run(data, list(ACCURACY), submission_dir=str(tmp_path / "sub"))
    for test_id, r in results.items():
        if ".test." in ACCURACY[test_id]:
            assert not r.passed and r.points == 0 and "test labels absent" in r.reason
        else:
            assert r.passed


def test_marks_table_follows_the_data_dir(corpus, tmp_path):
    assert grader.choose_marks(grader.DEFAULT_DATA_DIR)[0] == "embedded"
    assert grader.choose_marks(corpus[0])[0] == "course"
    assert grader.choose_marks(corpus[0], "embedded")[0] == "embedded"
    # a copy of data/ elsewhere is the embedded corpus too (it was graded on the course's marks)
    copy = tmp_path / "data-copy"
    shutil.copytree(grader.DEFAULT_DATA_DIR, copy)
    assert grader.choose_marks(str(copy))[0] == "embedded"
    (copy / "birth_dev.tsv").write_bytes((copy / "birth_dev.tsv").read_bytes() + b"Where was A born?\tLima\n")
    assert grader.choose_marks(str(copy))[0] == "course"
    assert grader.choose_marks(str(tmp_path / "nowhere"))[0] == "course"


def test_the_repo_data_is_graded_on_the_embedded_marks(tmp_path):
    """data/ takes points.json's embedded table, set from measured runs on it (a pretrained synthesizer scored
    3.9% on its test set): a file at each embedded mark passes there; the course's higher marks would fail it."""
    with open(grader.POINTS_PATH, encoding="utf-8") as f:
        embedded = json.load(f)["pass_marks"]["embedded"]
    keys = {"1f-1-hidden": "vanilla_dev", "1f-2-hidden": "vanilla_test", "1g-1-hidden": "synthesizer_dev",
            "1g-2-hidden": "synthesizer_test"}
    for test_id, key in keys.items():
        name = ACCURACY[test_id]
        split = "dev" if ".dev." in name else "test"
        places = grader.read_labels(os.path.join(grader.DEFAULT_DATA_DIR, grader.LABELS[split]))
        right = next(k for k in range(len(places) + 1) if k / len(places) >= embedded[key] - 1e-12)  # the fewest
        lines = places[:right] + ["Atlantis"] * (len(places) - right)
        (tmp_path / name).write_text("".join(p + "\n" for p in lines), encoding="utf-8")
    results = run(grader.DEFAULT_DATA_DIR, list(keys), submission_dir=str(tmp_path), marks="auto")
    assert not failing(results), {i: r.reason for i, r in results.items()}
    assert "(embedded corpus)" in results["1g-2-hidden"].note
    course = run(grader.DEFAULT_DATA_DIR, list(keys), submission_dir=str(tmp_path), marks="course")
    assert failing(course) == {"1f-2-hidden", "1g-1-hidden", "1g-2-hidden"}  # the course's 9%, 5%, 4%


def test_the_courses_files_copied_over_data_get_the_courses_marks(tmp_path, monkeypatch):
    """src/data/ is a link to data/: the course's files copied there (the course's place) replace the
    embedded corpus, and the default folder was then graded on the embedded corpus's marks."""
    data = tmp_path / "data"
    shutil.copytree(grader.DEFAULT_DATA_DIR, data)
    monkeypatch.setattr(grader, "DEFAULT_DATA_DIR", str(data))
    assert grader.choose_marks(str(data))[0] == "embedded"
    (data / "birth_dev.tsv").write_bytes((data / "birth_dev.tsv").read_bytes() + b"Where was A born?\tLima\n")
    assert grader.choose_marks(str(data))[0] == "course"  # any of the three files, not wiki.txt alone
    shutil.copy(os.path.join(grader.ROOT, "data", "birth_dev.tsv"), data / "birth_dev.tsv")
    assert grader.choose_marks(str(data))[0] == "embedded"
    (data / "wiki.txt").write_text("Ada Quill was born in Lisbon.\n", encoding="utf-8")
    assert grader.choose_marks(str(data))[0] == "course"
    # no record (copied without its dot files, or the folder replaced by the course's whole): data/ is the
    # embedded corpus only while it holds make_world's default world (it took the embedded marks whatever it held)
    (data / ".make_world.json").unlink()
    assert grader.choose_marks(str(data))[0] == "course"
    shutil.copy(os.path.join(grader.ROOT, "data", "wiki.txt"), data / "wiki.txt")
    assert grader.choose_marks(str(data))[0] == "embedded"


def test_a_copy_of_the_courses_files_in_data_and_elsewhere_gets_the_courses_marks(tmp_path, monkeypatch):
    """The course's files copied into src/data/ (data/) and also kept in the course's own folder: graded with
    --data-dir at that folder, they matched data/ byte for byte and took the embedded corpus's marks (its
    synthesizer dev mark 4% passed 4.4% on the course's dev set). A copy of data/ is embedded only while data/ is."""
    data = tmp_path / "data"
    shutil.copytree(grader.DEFAULT_DATA_DIR, data)
    monkeypatch.setattr(grader, "DEFAULT_DATA_DIR", str(data))
    course = tmp_path / "course"
    course.mkdir()
    for name in grader.EMBEDDED_FILES:  # the course's files (here: other text), in both folders
        (course / name).write_text("Where was Ada Quill born?\tLima\n", encoding="utf-8")
        shutil.copy(course / name, data / name)
    assert grader.choose_marks(str(data))[0] == "course"
    assert grader.choose_marks(str(course))[0] == "course"


def test_a_world_made_with_other_arguments_takes_the_marks_its_statistics_allow(tmp_path, monkeypatch, capsys):
    """data/ regenerated with other make_world arguments (its record rewritten with them) kept the embedded
    marks, calibrated on the default world alone. Another seed draws the same statistics and keeps them; other
    sizes or options take the course's; the header names the arguments in one line, before pass-mark tests."""
    import make_world
    data = tmp_path / "data"
    shutil.copytree(grader.DEFAULT_DATA_DIR, data)
    monkeypatch.setattr(grader, "DEFAULT_DATA_DIR", str(data))
    assert grader.choose_marks(str(data)) == ("embedded", None)
    assert make_world.main(["--out", str(data), "--seed", "7"]) == 0
    corpus, note = grader.choose_marks(str(data))
    assert corpus == "embedded" and note == (
        f"note: {data} was made by make_world with --seed 7; the embedded marks were calibrated on its default "
        f"world (--seed 224), and another seed draws from the same statistics, so they apply (the grader's --marks "
        f"course overrides)")
    copy = tmp_path / "copy"  # a copy without the record is what data/ is, named as itself
    copy.mkdir()
    for name in grader.EMBEDDED_FILES:
        shutil.copy(data / name, copy / name)
    assert grader.choose_marks(str(copy)) == ("embedded", note.replace(str(data), str(copy)))
    assert make_world.main(["--out", str(data), "--seed", "7", "--people", "40", "--train", "20", "--dev", "10",
                            "--tellings", "2", "--full-names"]) == 0
    corpus, note = grader.choose_marks(str(data))
    assert corpus == "course" and note == (
        f"note: {data} was made by make_world with --people 40 --train 20 --dev 10 --seed 7 --tellings 2 "
        f"--full-names, not as the default world the embedded marks were calibrated on; sizes and options change "
        f"how hard a world is, so the course's marks apply (the grader's --marks embedded overrides)")
    assert grader.choose_marks(str(copy))[0] == "course"  # no longer a copy of data/
    assert grader.choose_marks(str(data), "embedded") == ("embedded", None)
    # elsewhere too: a world is judged by its own record, wherever it is
    elsewhere = tmp_path / "elsewhere"
    make_world.write_world(make_world.build_world(people=30, train=20, dev=6, seed=1), str(elsewhere))
    assert grader.choose_marks(str(elsewhere))[0] == "course"
    shutil.copy(tmp_path / "data" / ".make_world.json", copy / ".make_world.json")  # a record its files do not match
    assert grader.choose_marks(str(copy)) == ("course", None)
    # the header: the note before a pass-mark test, not before others, nor with --marks
    headers = {}
    for key, argv in (("1f", ["1f-1"]), ("1d", ["1d-0"]), ("marks", ["1f-1", "--marks", "embedded"])):
        grader.main(argv + ["--data-dir", str(data), "--submission-dir", str(tmp_path)])
        headers[key] = capsys.readouterr().out.split("----- START")[0]
    assert "(course corpus pass marks)" in headers["1f"] and note in headers["1f"].splitlines()
    assert "note:" not in headers["1d"] and "note:" not in headers["marks"]
    assert "(embedded corpus pass marks)" in headers["marks"]


def test_make_world_arguments_at_their_defaults_effect_are_no_change():
    """What the record names is compared by effect: --places 560 for the default 2,937 people and --max-sentences
    10 (a biography's most) write the default world's bytes, and --places 560 is a change for 40 people."""
    assert grader.changed_arguments({}) == {}
    assert grader.changed_arguments({"people": 2937, "places": 560, "max_sentences": 10, "seed": 224,
                                     "full_names": False}) == {}
    assert grader.changed_arguments({"places": 560, "people": 40}) == {"people": 40, "places": 560}
    assert grader.changed_arguments({"max_sentences": 2, "even_places": True}) == {"max_sentences": 2,
                                                                                    "even_places": True}
    assert grader.changed_arguments({"seed": 7}) == {"seed": 7}


# ---------------------------------------------------------------------------------------------
# The framework: time limits, output, Gradescope JSON, command line
# ---------------------------------------------------------------------------------------------
def test_timeout_fails_the_test_and_the_grader_goes_on():
    import time

    def forever(ctx):
        while True:
            time.sleep(0.01)

    g = graderlib.Grader({"9a-0-basic": 1, "9a-1-hidden": 2})
    g.add("9a-0-basic", "runs forever", forever, 0.5)
    g.add("9a-1-hidden", "passes", lambda ctx: None, 5)
    results = g.run(out=None)
    assert results[0].reason.startswith("timed out after 0.5 s, at ") and results[0].points == 0
    assert results[0].reason.endswith(f"test_grader.py:{forever.__code__.co_firstlineno + 2} in forever")
    assert results[1].passed and results[1].points == 2
    assert not g.abandoned  # the looping thread was stopped


def test_a_test_within_its_time_limit_is_not_cut_short():
    """Mutation audit: a test is given its whole limit: one that takes 0.15 of it passes (a join on a tenth of
    the limit cut correct, slow solutions short and still said "timed out after" the full limit). The 8.5 s left
    keep a loaded machine from failing it."""
    import time
    g = graderlib.Grader({"9a-0-basic": 1})
    g.add("9a-0-basic", "takes a while", lambda ctx: time.sleep(1.5), 10)
    (r,) = g.run(out=None)
    assert r.passed and r.points == 1 and r.seconds >= 1.5, r.reason


def test_a_timed_out_test_that_swallows_the_stop_is_said_to_run_on(monkeypatch):
    """Code that catches BaseException swallowed the grader's stop and ran on beside the later tests,
    unsaid; the failed test now says so."""
    import time
    monkeypatch.setattr(os, "_exit", os._exit)  # the run leaves its guard on os._exit while a thread runs on

    def stubborn(ctx):
        end = time.monotonic() + 5.0  # longer than the grader's 2 s wait after its stop, loaded or not; then it ends
        while time.monotonic() < end:
            try:
                time.sleep(0.01)
            except BaseException:  # noqa: B902 -- the mistake under test
                pass

    g = graderlib.Grader({"9a-0-basic": 1, "9a-1-hidden": 2})
    g.add("9a-0-basic", "swallows every exception", stubborn, 0.5)
    g.add("9a-1-hidden", "passes", lambda ctx: None, 5)
    results = g.run(out=None)
    assert results[0].reason.startswith("timed out after 0.5 s, at ")
    assert results[0].reason.endswith("; it did not stop when asked (it waits in a call that Python cannot interrupt, "
                                      "such as input(), breakpoint() or time.sleep(), or catches every exception, "
                                      "BaseException or a bare `except:`, swallowing the grader's stop) and runs on "
                                      "beside the tests after it")
    assert results[1].passed and len(g.abandoned) == 1
    g.abandoned[0].join(10)
    assert not g.abandoned[0].is_alive()


def test_an_id_s_leading_parts_select_the_tests_they_begin():
    """`python src/grader.py 1f-1` was an unknown id (only 1f-1-hidden worked)."""
    g = graderlib.Grader({"9a-0-basic": 1, "9a-1-hidden": 2, "9b-0-basic": 1, "9a-10-basic": 1})
    for test_id in ("9a-0-basic", "9a-1-hidden", "9b-0-basic", "9a-10-basic"):
        g.add(test_id, "passes", lambda ctx: None, 5)
    ids = lambda *wanted: [t.id for t in g.select(list(wanted))]  # noqa: E731
    assert ids("9a-1") == ["9a-1-hidden"]  # not 9a-10-basic: whole parts only
    assert ids("9a") == ["9a-0-basic", "9a-1-hidden", "9a-10-basic"]
    assert ids("9b-0-basic", "9a-0") == ["9a-0-basic", "9b-0-basic"]  # in the grader's order, once each
    assert ids() == ids("all") == [t.id for t in g.tests]
    with pytest.raises(KeyError, match="9a-1-h, 9c"):
        g.select(["9a-1-h", "9a-0", "9c"])


def test_output_frame_and_json(tmp_path, capsys):
    def fails(ctx):
        graderlib.require(False, "the reason")

    g = graderlib.Grader({"9a-0-basic": 1, "9a-1-hidden": 2})
    g.add("9a-0-basic", "passes", lambda ctx: None, 5)
    g.add("9a-1-hidden", "fails", fails, 5)
    results = g.run()
    out = capsys.readouterr().out
    assert out.startswith("========== START GRADING") and out.rstrip().endswith("========== END GRADING")
    assert "----- START 9a-0-basic: passes" in out
    assert re.search(r"----- END 9a-0-basic \[took \d+:\d\d:\d\d \(max allowed 5 seconds\), 1/1 points\]", out)
    assert "FAIL: the reason" in out and "0/2 points]" in out
    assert "Total basic points: 1/1" in out and "Total hidden points: 0/2" in out
    path = str(tmp_path / "results.json")
    graderlib.write_json(results, path, execution_time=1.2)
    doc = json.load(open(path, encoding="utf-8"))
    assert doc["score"] == 1 and doc["execution_time"] == 1
    assert [t["visibility"] for t in doc["tests"]] == ["visible", "after_published"]
    assert {"name", "score", "max_score", "output", "visibility"} <= set(doc["tests"][1])
    assert doc["tests"][1]["score"] == 0 and doc["tests"][1]["max_score"] == 2
    assert doc["tests"][1]["output"] == "FAIL: the reason"


def test_what_the_code_under_test_prints_is_capped_per_test(capsys, monkeypatch):
    """A debug print left in forward printed 130 MB during one grading and buried its frame: each test's
    own output is shown up to OUTPUT_CAP characters (stdout and stderr together, from any thread of its
    own), the rest counted in one line; the frame and the next test's output are whole."""
    import threading
    monkeypatch.setattr(graderlib, "OUTPUT_CAP", 1000)

    def chatty(ctx):
        for i in range(500):
            print(f"step {i:04d}")  # 10 characters a line: 5,000 in all
        helper = threading.Thread(target=lambda: sys.stderr.write("e" * 7))  # a thread it starts counts too
        helper.start()
        helper.join()
        sys.stderr.write("no newline")

    def quiet(ctx):
        print("one line")

    g = graderlib.Grader({"9a-0-basic": 1, "9a-1-basic": 1})
    g.add("9a-0-basic", "prints a lot", chatty, 5)
    g.add("9a-1-basic", "prints a line", quiet, 5)
    stdout, stderr = sys.stdout, sys.stderr
    results = g.run()
    assert sys.stdout is stdout and sys.stderr is stderr  # given back
    assert all(r.passed for r in results)
    captured = capsys.readouterr()
    assert captured.out.count("step ") == 100 and "step 0099\n" in captured.out and "step 0100" not in captured.out
    assert captured.err == ""  # the cap was spent on stdout before stderr's writes
    assert ("step 0099\n[the code under test printed 4,017 more characters, not shown: the grader shows 1,000 a test]"
            "\n----- END 9a-0-basic") in captured.out
    assert "----- START 9a-1-basic: prints a line\none line\n----- END 9a-1-basic" in captured.out
    assert captured.out.rstrip().endswith("========== END GRADING")


def test_the_output_cap_counts_every_write_and_ends_a_cut_line_before_its_note(capsys, monkeypatch):
    """Mutation audit: the cap holds for writelines too (a log handler's route), write returns the length it
    was given, as a stream's write does, even for text left out (code that loops until it is all written),
    and a line the cap cut in two is ended before the frame's note, which otherwise joined it. The grader's
    main thread writes past the cap (the frame)."""
    import io
    monkeypatch.setattr(graderlib, "OUTPUT_CAP", 10)
    returned = []

    def chatty(ctx):
        returned.append(sys.stdout.write("x" * 15))  # cut after 10: mid-line
        sys.stdout.writelines(["yyyyy\n"] * 4)  # 24 more, all left out

    g = graderlib.Grader({"9a-0-basic": 1})
    g.add("9a-0-basic", "prints past the cap", chatty, 5)
    assert all(r.passed for r in g.run())
    out = capsys.readouterr().out
    assert returned == [15] and "yyyyy" not in out
    assert ("START 9a-0-basic: prints past the cap\nxxxxxxxxxx\n[the code under test printed 29 more characters, "
            "not shown: the grader shows 10 a test]\n----- END 9a-0-basic") in out
    frame = io.StringIO()
    spent = graderlib._OutputBudget(0)
    assert graderlib._Capped(frame, spent).write("----- END\n") == 10 and frame.getvalue() == "----- END\n"
    assert spent.end_test() is None


def test_a_line_the_code_under_test_leaves_open_is_ended_before_the_frames_next_line(capsys):
    """input("press enter") prints a prompt without a newline: the test's "FAIL: ..." ran on after it."""
    def prompt(ctx):
        sys.stdout.write("press enter to continue")
        raise RuntimeError("no input")

    g = graderlib.Grader({"9a-0-basic": 1, "9a-1-hidden": 1})
    g.add("9a-0-basic", "prompts", prompt, 5)
    g.add("9a-1-hidden", "says a whole line", lambda ctx: print("done"), 5)
    g.run()
    out = capsys.readouterr().out
    assert "\npress enter to continue\nFAIL: " in out
    assert "\ndone\n----- END 9a-1-hidden" in out  # a line ended by its own newline gets no blank line


def test_files_outside_the_working_folder_are_named_where_they_lie(tmp_path, monkeypatch):
    """A student's code graded from elsewhere (--code-dir, Gradescope's ../submission) was named "../st/helper.py":
    a path relative to the folder the grader ran in, not the folder the message's header names."""
    inside = tmp_path / "repo"
    (inside / "src").mkdir(parents=True)
    monkeypatch.chdir(inside)
    assert graderlib._relpath(str(inside / "src" / "a.py")) == os.path.join("src", "a.py")
    assert graderlib._relpath(str(tmp_path / "st" / "helper.py")) == str(tmp_path / "st" / "helper.py")
    assert graderlib._relpath(str(inside / "..x.py")) == "..x.py"  # a name that begins with "..": inside


def test_json_names_numbers_and_notes_each_test():
    """Gradescope orders and labels the tests by "number" and "name", and shows a passing test's note."""
    g = graderlib.Grader({"9a-0-basic": 1, "9a-1-hidden": 2})
    g.add("9a-0-basic", "passes with a note", lambda ctx: "accuracy 12.5%\n", 5)
    g.add("9a-1-hidden", "passes", lambda ctx: None, 5)
    doc = graderlib.gradescope_json(g.run(out=None))
    assert doc == {"score": 3, "tests": [
        {"name": "9a-0-basic: passes with a note", "number": "9a-0-basic", "score": 1, "max_score": 1,
         "output": "passed: accuracy 12.5%", "visibility": "visible"},
        {"name": "9a-1-hidden: passes", "number": "9a-1-hidden", "score": 2, "max_score": 2, "output": "passed",
         "visibility": "after_published"}]}


def test_every_test_starts_from_the_same_random_state():
    """A test's draws must not depend on the tests run before it: alone or after others, it draws the same."""
    seen = []

    def draws(ctx):
        seen.append((random.random(), float(torch.rand(1))))

    def draws_more(ctx):
        random.random()
        torch.rand(5)

    g = graderlib.Grader({"9a-0-basic": 1, "9a-1-basic": 1, "9a-2-basic": 1})
    g.add("9a-0-basic", "draws", draws, 5)
    g.add("9a-1-basic", "draws more", draws_more, 5)
    g.add("9a-2-basic", "draws again", draws, 5)
    random.seed(1)
    torch.manual_seed(1)
    g.run(out=None)
    random.seed(2)
    torch.manual_seed(2)
    g.run(["9a-2-basic"], out=None)
    assert len(seen) == 3 and seen[0] == seen[1] == seen[2], seen


def test_command_line_from_another_directory(corpus, tmp_path):
    out_json = str(tmp_path / "r.json")
    p = subprocess.run([sys.executable, GRADER, "1g-3-hidden", "--data-dir", corpus[0], "--json", out_json],
                       cwd=str(tmp_path), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "----- END 1g-3-hidden [took" in p.stdout and "4/4 points]" in p.stdout
    doc = json.load(open(out_json, encoding="utf-8"))
    assert doc["tests"][0]["visibility"] == "after_published" and doc["score"] == 4
    p = subprocess.run([sys.executable, GRADER, "1z-9-basic"], cwd=str(tmp_path),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "1e-0-basic" in p.stderr and "1z-9-basic" in p.stderr
    assert "written answers" not in p.stderr
    p = subprocess.run([sys.executable, GRADER, "3a-0-basic"], cwd=str(tmp_path),  # the handout's example id
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr.splitlines()[-1] == (
        "parts 2 on are written answers, not graded here: submission.tex (make builds the PDF)")


def test_a_usage_error_is_one_line_naming_the_flag_meant(capsys):
    """It was argparse's usage block, then the message, with no word on the flag the grader has."""
    with pytest.raises(SystemExit) as e:
        grader.main(["--data_dir", "x"])
    assert e.value.code == 2 and capsys.readouterr().err == (
        "python src/grader.py: error: unrecognized arguments: --data_dir; did you mean --data-dir? "
        "(--help lists the options)\n")


@pytest.mark.parametrize("where, phrase", [
    ("{tmp}", "is a folder; give a file path, e.g. --json {tmp}/results.json"),
    ("{tmp}/a-file/r.json", "{tmp}/a-file is a file, not a folder"),
])
def test_bad_json_path_is_one_line_before_any_test(tmp_path, capsys, where, phrase):
    (tmp_path / "a-file").write_text("mine\n")
    where, phrase = where.format(tmp=tmp_path), phrase.format(tmp=tmp_path)
    assert grader.main(["1g-3-hidden", "--json", where]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"grader: --json {where}: {phrase}") and err.count("\n") == 1
    assert sorted(os.listdir(tmp_path)) == ["a-file"] and (tmp_path / "a-file").read_text() == "mine\n"
    assert not os.path.exists(f"{tmp_path}.tmp")


def test_an_empty_json_path_or_one_in_a_folder_that_takes_no_file_is_one_line_before_any_test(tmp_path, capsys,
                                                                                               monkeypatch):
    """`--json ""` (`--json "$OUT"`, OUT unset) graded and wrote no report, with exit status 0; --json in a
    folder that os.access calls writable but that takes no file (root on /proc or a read-only mount, NFS with
    root-squash) ran every test, then failed at the write. Both stop before any test."""
    assert grader.main(["1g-3-hidden", "--json", ""]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == "grader: --json : is empty; give a file path, e.g. --json results.json\n", err
    monkeypatch.chdir(tmp_path)  # a blank path, as read_text and check_output_path take it: empty, no file " "
    assert grader.main(["1g-3-hidden", "--json", " "]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == "grader: --json  : is empty; give a file path, e.g. --json results.json\n", err
    assert os.listdir(tmp_path) == []
    if not os.path.isdir("/proc"):
        pytest.skip("no /proc here")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: True if path == "/proc" else real_access(path, mode))
    assert grader.main(["1g-3-hidden", "--json", "/proc/no-such-folder/results.json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("grader: --json /proc/no-such-folder/results.json: no file can be made in "
                                        "/proc (") and err.count("\n") == 1, err


def test_missing_folders_and_json_over_an_input_are_one_line_before_any_test(tmp_path, capsys, corpus):
    """A typo in --data-dir failed every test of every student with exit status 0; --json onto a data or
    predictions file replaced it with results.json."""
    for argv, says in (
            (["--data-dir", str(tmp_path / "nope")], f"grader: --data-dir {tmp_path / 'nope'}: no such folder"),
            (["--submission-dir", str(tmp_path / "nope")], f"grader: --submission-dir {tmp_path / 'nope'}: no such"),
            # a file given for a folder (its folder meant) is named so, not as missing
            (["--data-dir", os.path.join(corpus[0], "wiki.txt")],
             f"grader: --data-dir {os.path.join(corpus[0], 'wiki.txt')}: is a file, not a folder; give the folder "
             f"that holds it\n"),
            (["1f-1-hidden", "--data-dir", corpus[0], "--json", os.path.join(corpus[0], "birth_dev.tsv")],
             f"grader: --json {os.path.join(corpus[0], 'birth_dev.tsv')}: would overwrite a file of --data-dir")):
        dev = open(os.path.join(corpus[0], "birth_dev.tsv"), "rb").read()
        assert grader.main(argv) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.startswith(says) and err.count("\n") == 1, err
        assert open(os.path.join(corpus[0], "birth_dev.tsv"), "rb").read() == dev


def test_json_over_the_points_file_or_a_users_file_is_one_line_before_any_test(tmp_path, capsys, monkeypatch):
    """--json src/points.json replaced the grader's own input (every later run then crashed in
    load_points), and --json README.md replaced any file outside the data and submission folders."""
    points = tmp_path / "points.json"
    shutil.copy(grader.POINTS_PATH, points)
    monkeypatch.setattr(grader, "POINTS_PATH", str(points))  # the real one stays safe, old code or new
    (tmp_path / "README.md").write_text("mine\n")
    (tmp_path / "config.json").write_text('{"score": 3, "tests": "mine"}\n')
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    not_a_report = "exists and is not a results.json the grader wrote, so it is not replaced"
    for path, says in ((points, f"is the grader's points file ({points})"), (tmp_path / "README.md", not_a_report),
                       (tmp_path / "config.json", not_a_report)):
        assert grader.main(["1g-3-hidden", "--json", str(path)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.startswith(f"grader: --json {path}: {says}") and err.count("\n") == 1, err
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_json_through_a_link_writes_the_links_target_and_keeps_the_link(tmp_path, corpus, capsys):
    """The report was renamed over the path given: a link (results.json -> the folder Gradescope reads, or
    /dev/stdout) was itself replaced by a plain file, and the file it named was left as it was."""
    target = tmp_path / "results" / "results.json"
    target.parent.mkdir()
    target.write_text("")
    link = tmp_path / "results.json"
    link.symlink_to(target)
    assert grader.main(["1g-3-hidden", "--data-dir", corpus[0], "--json", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["score"] == 4
    assert sorted(p.name for p in target.parent.iterdir()) == ["results.json"]  # no temporary file left


def test_json_into_the_graders_own_stdout_is_refused(tmp_path, corpus):
    """`grader.py --json /dev/stdout > log` (here: the log's own path, as /dev/stdout resolves to it) replaced
    the log with the report; a path that is the grader's stdout or stderr is a usage error, before any test."""
    log = tmp_path / "log.txt"
    with open(log, "w") as out:
        p = subprocess.run([sys.executable, GRADER, "1g-3-hidden", "--data-dir", corpus[0], "--json", str(log)],
                           stdout=out, stderr=subprocess.PIPE, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith(f"grader: --json {log}: is where the grader prints its log") and \
        p.stderr.count("\n") == 1, p.stderr
    assert log.read_text() == ""


def test_json_replaces_a_report_the_grader_wrote_or_an_empty_file(tmp_path, corpus, capsys):
    out_json = tmp_path / "r.json"
    out_json.write_text("")
    for _ in range(2):  # an empty file, then the report the first run wrote
        assert grader.main(["1g-3-hidden", "--data-dir", corpus[0], "--json", str(out_json)]) == 0
        assert graderlib.is_report(str(out_json)) and json.loads(out_json.read_text())["score"] == 4
    capsys.readouterr()
    for text in ("mine\n", "[]\n", '{"score": 1}\n', '{"score": 1, "tests": [{"name": "x"}]}\n', "\xff"):
        out_json.write_text(text, encoding="latin-1")
        assert not graderlib.is_report(str(out_json))
        assert graderlib.json_path_problem(str(out_json)).startswith("exists and is not a results.json")


@pytest.mark.parametrize("text, says", [
    ('{\n  "1c-0-hidden": {"points": 2},\n', "{p}:3: not valid JSON (Expecting property name enclosed in double "
                                             "quotes, column 1); fix that line or restore the file"),
    ("[1, 2]", "{p}: expected an object mapping each test id to {{\"points\": N}}"),
    ('{"1c-0-hidden": 2}', "{p}:1: 1c-0-hidden must map to {{\"points\": N}}, got 2"),  # not the course's shape
    # this project's earlier shape: named as such, with the course's shape to write instead (it said "points must
    # map to {"points": N}" and repeated the whole table); a test missing says what to add in the course's shape
    ('{"points": {"1c-0-hidden": 2}}', "{p}:1: \"points\": {{test_id: N}} is the earlier shape; write each test as "
                                       "\"test_id\": {{\"points\": N}} (the course's shape)"),
    ('{"1c-0-hidden": {"points": "two"}}', "{p}:1: points of 1c-0-hidden must be a non-negative number, got 'two'"),
    ('{"1c-0-hidden": {"points": true}}', "{p}:1: points of 1c-0-hidden must be a non-negative number, got True"),
    ('{"1c-0-hidden": {"points": -2}}', "{p}:1: points of 1c-0-hidden must be a non-negative number, got -2"),
    ('{"1c-0-hidden": {"points": 1%s}}' % ("0" * 400), "{p}:1: points of 1c-0-hidden must be a non-negative number, "
                                                       "got 1000"),  # no float holds it: an OverflowError at the end
    ('{"pass_marks": {"course": {"vanilla_dev": 10, "vanilla_test": 9, "synthesizer_dev": 5, '
     '"synthesizer_test": 4}}}', "{p}:1: pass_marks.course must give vanilla_dev, vanilla_test, synthesizer_dev, "
                                 "synthesizer_test as fractions"),  # percent, not fractions
    ('{}', "{p}: pass_marks.course must give vanilla_dev"),
    ("\xff", "{p}: not valid UTF-8 at byte 0"),
    ("MARKS", "{p}: no points for 1c-0-hidden; add \"1c-0-hidden\": {{\"points\": N}} to it"),
    ("MARKS+9z", "{p}:1: lists tests the grader does not have: 9z-0-basic; remove them"),
])
def test_a_malformed_points_file_is_one_line_naming_it(tmp_path, capsys, monkeypatch, corpus, text, says):
    """A points file that json could not read, or one of the wrong shape, was a traceback from load_points."""
    points = tmp_path / "points.json"
    if text.startswith("MARKS"):  # valid pass marks; one test's points missing, or one too many
        doc = json.load(open(grader.POINTS_PATH, encoding="utf-8"))
        del doc["1c-0-hidden"]
        if text.endswith("9z"):
            doc.update({"1c-0-hidden": {"points": 2}, "9z-0-basic": {"points": 1}})
        text = json.dumps(doc)
    points.write_bytes(text.encode("latin-1"))
    monkeypatch.setattr(grader, "POINTS_PATH", str(points))
    assert grader.main(["1g-3-hidden", "--data-dir", corpus[0]]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"grader: {says.format(p=points)}") and err.count("\n") == 1, err


def test_a_wrong_entry_is_named_with_its_line(tmp_path, capsys, monkeypatch, corpus):
    """The course's points.json has one test a line: an error about one entry names that entry's line (it named
    only the file), the top-level key's, not a "points" inside an entry, and the last of a repeated key (json
    keeps that one). An entry the grader does not have, and pass marks that are not fractions, likewise."""
    def error(lines):
        points = tmp_path / "points.json"
        points.write_text("\n".join(lines) + "\n", encoding="utf-8")
        monkeypatch.setattr(grader, "POINTS_PATH", str(points))
        assert grader.main(["1g-3-hidden", "--data-dir", corpus[0]]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"grader: {points}:") and err.count("\n") == 1, err
        return err[len(f"grader: {points}:"):]

    doc = json.load(open(grader.POINTS_PATH, encoding="utf-8"))
    entries = [f'  {json.dumps(k)}: {json.dumps(v)},' for k, v in doc.items() if k != "1c-0-hidden"]
    assert error(["{", '  "1a-0-basic": {"points": 1},', '  "1c-0-hidden": {"points": 2},',
                  '  "1c-0-hidden": {"points": -1}', "}"]).startswith("4: points of 1c-0-hidden must be")
    assert error(["{", '  "_note": "the \\"points\\": of each test",', '  "points":', '    {"1c-0-hidden": 2},',
                  '  "1a-0-basic": {"points": 1}', "}"]).startswith('3: "points": {test_id: N} is the earlier shape')
    assert error(["{"] + entries + ['  "1c-0-hidden": {"points": 2},', '  "9z-0-basic": {"points": 1}', "}"]) \
        .startswith(f"{len(entries) + 3}: lists tests the grader does not have: 9z-0-basic")
    marks = [i for i, line in enumerate(entries) if line.startswith('  "pass_marks"')]
    assert len(marks) == 1
    entries[marks[0]] = '  "pass_marks": {"course": {}, "embedded": {}},'
    assert error(["{"] + entries + ['  "1c-0-hidden": {"points": 2}', "}"]) \
        .startswith(f"{marks[0] + 2}: pass_marks.course must give")


@pytest.mark.parametrize("entry", ['{"points": 1%s}' % ("0" * 400), '[%s]' % ", ".join(["1"] * 200)])
def test_a_long_value_in_the_points_file_is_shown_cut(tmp_path, entry):
    """The number of 401 digits was written out whole, and a long wrong entry too: a line of hundreds of characters."""
    points = tmp_path / "points.json"
    points.write_text('{"1c-0-hidden": %s}' % entry, encoding="utf-8")
    with pytest.raises(graderlib.PointsError) as e:
        graderlib.load_points(str(points))
    assert len(str(e.value)) < len(str(points)) + 160 and str(e.value).endswith("..."), str(e.value)


def test_only_a_json_of_the_reports_layout_and_size_is_a_report(tmp_path):
    """--json replaces only the grader's own results.json: a JSON without "score", or one larger than any report
    (REPORT_MAX_BYTES), is the user's file, even with a list of tests in it."""
    path = tmp_path / "r.json"
    path.write_text('{"tests": []}\n', encoding="utf-8")
    assert not graderlib.is_report(str(path))
    path.write_text('{"score": 0, "tests": []}\n', encoding="utf-8")
    assert graderlib.is_report(str(path))
    path.write_text('{"score": 0, "tests": [], "pad": "%s"}\n' % ("x" * graderlib.REPORT_MAX_BYTES), encoding="utf-8")
    assert not graderlib.is_report(str(path))
    assert graderlib.json_path_problem(str(path)).startswith("exists and is not a results.json")


def test_fractional_points_are_shown_to_two_decimals(capsys):
    """points.json may give fractions of a point: the frame shows them as given (0.25), not rounded to 0.2."""
    g = graderlib.Grader({"9a-0-basic": 0.25, "9a-1-hidden": 1})
    g.add("9a-0-basic", "passes", lambda ctx: None, 5)
    g.add("9a-1-hidden", "passes", lambda ctx: None, 5)
    g.run()
    out = capsys.readouterr().out
    assert "0.25/0.25 points]" in out and "Total basic points: 0.25/0.25" in out
    assert "Total points: 1.25/1.25" in out


def test_a_test_worth_no_points_is_a_points_file_the_grader_takes(tmp_path):
    """Mutation audit: points must be non-negative, as the error says, so 0 is allowed (staff taking a test out of
    the score without removing it); a check of "more than 0" refused such a file with a message that said 0 was
    fine. The test still runs and shows 0/0."""
    points = tmp_path / "points.json"
    points.write_text('{"9a-0-basic": {"points": 0}, "9a-1-hidden": {"points": 2}}', encoding="utf-8")
    doc = graderlib.load_points(str(points))
    assert doc["points"] == {"9a-0-basic": 0, "9a-1-hidden": 2}
    g = graderlib.Grader(doc["points"])
    g.add("9a-0-basic", "passes", lambda ctx: None, 5)
    g.add("9a-1-hidden", "passes", lambda ctx: None, 5)
    results = g.run(out=None)
    assert [(r.points, r.max_points, r.passed) for r in results] == [(0, 0, True), (2, 2, True)]
    assert graderlib.gradescope_json(results)["score"] == 2


def test_a_points_file_saved_with_a_byte_order_mark_is_read(tmp_path):
    """Mutation audit: a points file edited in a Windows editor starts with a UTF-8 byte-order mark, which json
    refuses ("Unexpected UTF-8 BOM"); the grader reads past it, as it does for data and predictions files."""
    points = tmp_path / "points.json"
    points.write_bytes(b"\xef\xbb\xbf" + b'{"_note": "edited", "9a-0-basic": {"points": 3}}')
    assert graderlib.load_points(str(points))["points"] == {"9a-0-basic": 3}


@pytest.mark.parametrize("code, reason, fix", [
    (errno.ENOSPC, "No space left on device", "free some disk space or choose another path"),
    (errno.EFBIG, "File too large", "raise the file size limit (ulimit -f) or choose another path"),  # not "free space"
    (errno.EACCES, "Permission denied", "choose another path"),
])
def test_a_results_json_that_cannot_be_written_exits_1_in_one_line(tmp_path, corpus, capsys, monkeypatch, code,
                                                                   reason, fix):
    """The tests ran but results.json could not be written (a full disk, the file size limit): exit status 1, one
    line naming the path, the reason and its fix, never 0 (Gradescope would read a missing report as a crash)."""
    def fails(*args, **kwargs):
        raise OSError(code, reason)

    monkeypatch.setattr(graderlib, "write_json", fails)
    out_json = tmp_path / "r.json"
    assert grader.main(["1g-3-hidden", "--data-dir", corpus[0], "--json", str(out_json)]) == 1
    err = capsys.readouterr().err
    assert err == f"grader: cannot write --json {out_json}: {reason}; {fix}\n", err


def test_failed_json_write_leaves_no_temporary_file(tmp_path):
    g = graderlib.Grader({"9a-0-basic": 1})
    g.add("9a-0-basic", "passes", lambda ctx: None, 5)
    results = g.run(out=None)
    (tmp_path / "r.json").mkdir()  # os.replace onto a folder fails
    with pytest.raises(OSError):
        graderlib.write_json(results, str(tmp_path / "r.json"))
    assert os.listdir(tmp_path) == ["r.json"] and os.listdir(tmp_path / "r.json") == []


def test_the_json_writes_temporary_file_cannot_be_laid_for_it_and_gets_the_umasks_mode(tmp_path):
    """(security audit) The temporary file was `<path>.<pid>.tmp`, opened with plain open(): a link laid at that
    name (in a folder others write in) had its target overwritten with the report, and results.json became the
    link. Its name has random letters now, and it is made afresh (O_EXCL), with the mode open() would give."""
    g = graderlib.Grader({"9a-0-basic": 1})
    g.add("9a-0-basic", "passes", lambda ctx: None, 5)
    victim, path = tmp_path / "victim.txt", tmp_path / "r.json"
    victim.write_text("mine\n")
    os.symlink(victim, f"{path}.{os.getpid()}.tmp")
    previous = os.umask(0o027)
    try:
        graderlib.write_json(g.run(out=None), str(path))
    finally:
        os.umask(previous)
    assert victim.read_text() == "mine\n" and not path.is_symlink()
    assert json.loads(path.read_text(encoding="utf-8"))["score"] == 1 and (os.stat(path).st_mode & 0o777) == 0o640


def test_json_into_folders_not_made_yet_makes_them(tmp_path):
    """Mutation audit: --json results/run1/r.json is accepted before any test (its folders can be made) and the
    report is written there, folders made; without them made, the write failed after the whole grading."""
    g = graderlib.Grader({"9a-0-basic": 1})
    g.add("9a-0-basic", "passes", lambda ctx: None, 5)
    path = tmp_path / "results" / "run1" / "r.json"
    assert graderlib.json_path_problem(str(path)) is None
    graderlib.write_json(g.run(out=None), str(path))
    assert json.loads(path.read_text(encoding="utf-8"))["score"] == 1
    assert os.listdir(path.parent) == ["r.json"]


def test_list_shows_each_id_with_what_it_checks(capsys):
    """Mutation audit: --list prints every test, in the grader's order, as "ID: description" (the ids alone passed)."""
    assert grader.main(["--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"{test_id}: {description}" for test_id, description, _, _ in grader.TESTS] and len(lines) == 15
    assert lines[0] == "1c-0-hidden: vanilla model structure (module tree, parameter shapes, causal attention)"


def test_files_the_grader_may_not_read_are_said_so_with_the_fix(corpus, tmp_path, monkeypatch, shut_folder,
                                                                 unreadable_file):
    """(permission audit, non-root) An unreadable predictions or data file failed as "PermissionError: [Errno 13]
    Permission denied: '/...'" (no fix); a data or submission folder that does not let the user in read as its
    files "not found: make it with ./run.sh ...", which would have the student train again. Root reads anything,
    so the refusals are made here."""
    name = ACCURACY["1f-1-hidden"]
    ctx = grader.make_grader(corpus[0], str(tmp_path), "course").context
    (tmp_path / name).write_text("".join(p + "\n" for p in corpus[1]["dev"]), encoding="utf-8")
    unreadable_file(tmp_path / name)
    with pytest.raises(graderlib.Failure, match=rf"{re.escape(name)}: cannot be read \(Permission denied\); make it "
                                                r"readable \(chmod u\+r .*\), or ask its owner to$"):
        score(ctx, name)
    monkeypatch.undo()
    shut_folder(tmp_path)
    with pytest.raises(graderlib.Failure, match=rf"{re.escape(name)} cannot be reached: the folder "
                                                rf"{re.escape(str(tmp_path))} does not let you in \(Permission denied, "
                                                r"mode 0\d{3}\); chmod u\+rx it, or ask its owner to$"):
        score(ctx, name)
    monkeypatch.undo()
    data = tmp_path / "course"
    data.mkdir()
    shut_folder(data)
    with pytest.raises(graderlib.Failure, match=r"wiki\.txt cannot be reached: the folder .*course does not let "
                                                r"you in"):
        grader.Context(str(data), str(tmp_path), {}, "course").wiki_text()


def test_a_missing_data_file_names_the_fix_for_its_folder(tmp_path, monkeypatch):
    """Mutation audit: a data file missing from the repo's data/ says to regenerate the embedded corpus; one missing
    from a --data-dir says to pass the folder that holds it (the two fixes swapped passed every test)."""
    other = tmp_path / "course"
    other.mkdir()
    ctx = grader.Context(str(other), str(tmp_path), {}, "course")
    with pytest.raises(graderlib.Failure, match=r"wiki\.txt not found: the pretraining corpus; pass the folder that "
                                                r"holds it with --data-dir$"):
        ctx.wiki_text()
    monkeypatch.setattr(grader, "DEFAULT_DATA_DIR", str(other))
    ctx = grader.Context(str(other), str(tmp_path), {}, "embedded")
    with pytest.raises(graderlib.Failure, match=r"birth_places_train\.tsv not found: the finetuning corpus; regenerate "
                                                r"the embedded corpus with python src/make_world\.py --out data$"):
        ctx.train_path()
    os.mkfifo(other / "birth_places_train.tsv")  # there, but no file: "not found" sent the user looking for it
    with pytest.raises(graderlib.Failure, match=r"birth_places_train\.tsv is not a regular file: the finetuning "
                                                r"corpus must be one; replace it with the file$"):
        ctx.train_path()


def test_json_onto_a_pipe_or_device_is_refused_before_any_test(tmp_path):
    """Mutation audit: --json naming a FIFO (or a device such as /dev/null) is refused before any test: its folder
    takes files, so without the check the report was renamed over the FIFO itself after the whole grading."""
    fifo = tmp_path / "results.json"
    os.mkfifo(fifo)
    for special in (str(fifo), os.devnull):
        assert graderlib.json_path_problem(special) == ("exists and is not a regular file; give the path of a "
                                                        "results file"), special
    assert graderlib.json_path_problem(str(tmp_path / "new.json")) is None


def test_a_test_id_registered_twice_is_refused():
    """Mutation audit: a test added twice (a copied TESTS row) ran twice and counted its points twice in the totals."""
    g = graderlib.Grader({"9a-0-basic": 1})
    g.add("9a-0-basic", "passes", lambda ctx: None, 5)
    with pytest.raises(ValueError, match="test id 9a-0-basic registered twice"):
        g.add("9a-0-basic", "passes again", lambda ctx: None, 5)
    assert [t.id for t in g.tests] == ["9a-0-basic"]


def test_ctrl_c_while_a_test_thread_starts_stops_that_test(monkeypatch):
    """A KeyboardInterrupt raised inside threading's lock handling (Thread.start waits on a Condition)
    breaks the lock: RuntimeError "release unlocked lock" replaced the clean stop. With the grader's
    handler a Ctrl-C that arrives while a test's thread starts is held until it has started, then
    stops that thread; later Ctrl-Cs do nothing."""
    threads = []

    class SignalledWhileStarting(threading.Thread):
        def start(self):
            threads.append(self)
            signal.raise_signal(signal.SIGINT)  # the handler runs here, inside start
            super().start()

    def slow_test(ctx):
        for _ in range(500):
            time.sleep(0.01)

    g = graderlib.Grader({"9a-0-basic": 1})
    g.add("9a-0-basic", "slow", slow_test, 60)
    monkeypatch.setattr(graderlib.threading, "Thread", SignalledWhileStarting)
    previous = signal.getsignal(signal.SIGINT)
    try:
        graderlib.handle_interrupts()
        with pytest.raises(KeyboardInterrupt):
            g.run(out=None)
        signal.raise_signal(signal.SIGINT)  # a second Ctrl-C: ignored
    finally:
        signal.signal(signal.SIGINT, previous)
    (thread,) = threads
    assert thread.ident is not None and not thread.is_alive() and g.abandoned == []  # started, then stopped


def test_ctrl_c_prints_one_line_and_exits_130(corpus, tmp_path):
    out_json = tmp_path / "r.json"
    p = subprocess.Popen([sys.executable, GRADER, *SPAN_TESTS, "--data-dir", corpus[0], "--json", str(out_json)],
                         cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in p.stdout:  # interrupt inside the first test
            if line.startswith("----- START"):
                break
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 130 and err == "grader: interrupted\n", err
    assert os.listdir(tmp_path) == []  # no results.json, no temporary file


def test_a_ctrl_c_ignored_from_the_start_stays_ignored():
    """A grader started as a script's background job (SIGINT ignored) became stoppable by a Ctrl-C
    meant for the foreground job."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        graderlib.handle_interrupts()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        signal.signal(signal.SIGINT, signal.default_int_handler)
        graderlib.handle_interrupts()
        assert signal.getsignal(signal.SIGINT) is graderlib._interrupt
    finally:
        signal.signal(signal.SIGINT, previous)


def test_every_tool_counts_a_labelled_place_with_trailing_spaces_alike(tmp_path):
    """A dev line whose place ends in spaces ("London  ", as an editor may leave it) is answered by
    "London" for run.py's evaluate_places, the grader, deliverables, the demo's counts and ask alike
    (they disagreed: deliverables and the demo compared with the spaces)."""
    import ask
    import deliverables
    import demo
    from submission.dataset import parse_tsv, read_text
    from submission.utils import evaluate_places, same_place
    dev = tmp_path / "birth_dev.tsv"
    dev.write_text("Where was Ann Lee born?\tLondon  \nWhere was Bo Kay born?\tParis\n", encoding="utf-8")
    predictions = tmp_path / "p.predictions"
    predictions.write_text("London\nRome\n", encoding="utf-8")
    assert evaluate_places(str(dev), ["London", "Rome"]) == (2.0, 1.0)
    assert grader.count_right(["London", "Rome"], grader.read_labels(str(dev))) == 1
    questions = parse_tsv(read_text(str(dev)), str(dev))
    assert deliverables.check_predictions(str(predictions), questions) == "2 predictions, accuracy 50.0%"
    assert demo.retrieved(str(predictions), str(tmp_path), [0, 1]) == 1
    assert demo.london(str(tmp_path)) == (1, 2)
    known, = ask.read_known(str(tmp_path))[ask.question_key("Where was Ann Lee born?")]
    result = {"prompt": "Where was Ann Lee born?", "answer": "London", "known": known, "extra": [],
              "complete": False, "probabilities": [("London", 0.5)]}
    assert "(birth_dev.tsv line 1: London; right)" in ask.format_result(result, top=1)
    # the course's rule: the prediction exactly as written, by the grader too (test_grader_counts_as_run_py_prints)
    assert not same_place(" London", "London") and grader.count_right([" London"], ["London"]) == 0


def test_grader_counts_as_run_py_prints(tmp_path):
    """The grader's accuracy is run.py's printed one (evaluate_places) on the same files. It forgave spaces
    around a prediction and before a place, so a model that wrote "Paris " (it learns the spaces of a
    finetuning file's places), or a label " London" (a space after the tab), counted right in the grader
    and wrong in run.py: 3/4 against run.py's 1/4, a pass mark passed that the course's evaluation fails."""
    from submission.utils import evaluate_places
    dev = tmp_path / "birth_dev.tsv"
    dev.write_text("Where was Ann Lee born?\t London\nWhere was Bo Kay born?\tParis  \n"
                   "Where was Cy Dee born?\tLima\r\nWhere was Di Eng born?\tRome\n", encoding="utf-8")
    said = ["London", "Paris ", "Lima", " Rome"]  # as run.py's model answered, and wrote them (CRLF, as edited)
    predictions = tmp_path / "p.predictions"
    predictions.write_bytes("".join(p + "\r\n" for p in said).encode("utf-8"))
    total, correct = evaluate_places(str(dev), said)
    lines = grader.prediction_lines(str(predictions), 4)
    assert (total, correct) == (4.0, 1.0)
    assert grader.count_right(lines, grader.read_labels(str(dev))) == correct


def test_an_error_while_importing_the_package_names_its_line(tmp_path, broken_src):
    """A NameError at the top of helper.py failed every test with "cannot import the submission package:
    NameError: ..." and no file or line, though the grader promises the line of your code that raised."""
    src, n = broken_src("helper.py", "undefined_name_here\n")
    p = subprocess.run([sys.executable, str(src / "grader.py"), "1c-1-basic", "--data-dir",
                        os.path.join(ROOT, "data")], capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert (f"FAIL: cannot import the submission package: NameError: name 'undefined_name_here' is not defined "
            f"(raised at src/submission/helper.py:{n})") in p.stdout, p.stdout


def test_a_module_saved_as_utf16_is_named_when_the_package_does_not_import(tmp_path, monkeypatch):
    """Python reports a NUL byte in a module naming no file: from 3.11.4 a SyntaxError with neither file nor
    line, before it a ValueError (CI's Debian Python 3.11.2, and 3.8). A trainer.py saved as UTF-16 (a Windows
    editor's "Unicode") failed every test with "SyntaxError at ?:None: source code string cannot contain null
    bytes" (or "ValueError: ..."). The module is named, with the fix (or the byte, for a NUL in UTF-8)."""
    package = tmp_path / "src" / "submission"
    package.mkdir(parents=True)
    (package / "model.py").write_text("x = 1\n", encoding="utf-8")
    (package / "trainer.py").write_bytes("x = 1\n".encode("utf-16"))
    monkeypatch.setattr(gradedpackage, "HERE", str(tmp_path / "src"))
    try:
        compile("x = 1\n".encode("utf-16"), "<unknown>", "exec")
    except (SyntaxError, ValueError) as e:  # what this Python raises
        nul = e
    kind = type(nul).__name__
    assert gradedpackage.import_problem(nul) == (f"{kind}: {package / 'trainer.py'}: UTF-16 text (byte-order mark "
                                                 f"FF FE), not UTF-8; save it as UTF-8")
    (package / "trainer.py").write_bytes(b"x = 1\n\x00\n")
    assert gradedpackage.import_problem(nul) == (f"{kind}: {package / 'trainer.py'}: a NUL byte at byte 6: not Python "
                                                 f"source; restore it from git")
    (package / "trainer.py").write_bytes(b"x = 1\n")  # none found: as Python words it
    assert gradedpackage.import_problem(nul).endswith("source code string cannot contain null bytes")
    # both kinds, whichever this Python raises
    for e in (SyntaxError("source code string cannot contain null bytes"),
              ValueError("source code string cannot contain null bytes")):
        (package / "trainer.py").write_bytes("x = 1\n".encode("utf-16"))
        assert gradedpackage.import_problem(e).endswith("trainer.py: UTF-16 text (byte-order mark FF FE), not UTF-8; "
                                                        "save it as UTF-8"), e
    assert gradedpackage.import_problem(ValueError("a wrong value")) == "ValueError: a wrong value"


@pytest.mark.parametrize("layout", ["zip", "files", "folder"])
def test_the_gradescope_recipe_grades_the_students_code(tmp_path, layout):
    """docs/grader.md's run_autograder lines, on a student's helper.py with a wrong learning rate: they once
    copied the zip's src/submission/ folder inside src/submission/, so the staff solution was graded (2/2), and
    a file a student left out was graded from the staff solution. They grade the student's folder in place
    (--code-dir), and leave the staff's src/submission/ as it was. A zip a student made of the folder
    src/submission (its files under submission/) got no results.json: the grader refused the folder above it."""
    doc = open(os.path.join(ROOT, "docs", "grader.md"), encoding="utf-8").read()
    recipe = re.search(r"\*\*For staff, on Gradescope\.\*\*.*?```bash\n(.*?)```", doc, re.S).group(1)
    source, submission, results = tmp_path / "source", tmp_path / "submission", tmp_path / "results"
    shutil.copytree(os.path.join(ROOT, "src"), source / "src", ignore=shutil.ignore_patterns(
        "__pycache__", "*.params", "*.predictions", "*.state", "*.jsonl"))
    shutil.copytree(os.path.join(ROOT, "data"), source / "data")
    results.mkdir()
    student = {"zip": submission / "src" / "submission", "files": submission,
               "folder": submission / "submission"}[layout]
    shutil.copytree(os.path.join(ROOT, "src", "submission"), student, ignore=shutil.ignore_patterns(
        "__pycache__", "*.params", "*.predictions", "*.state", "*.jsonl", "mingpt-demo"))
    if layout == "files":  # the handout's code files alone: the package's other modules are the staff's
        for extra in set(os.listdir(student)) - set(deliverables.CODE):
            os.remove(student / extra)
    staff = source / "src" / "submission"
    (staff / "vanilla.model.params").write_bytes(b"the staff's")  # never graded
    # nor a quick staff run's loss log, which the grader would read as the student's short training
    (staff / "vanilla.model.params.log.jsonl").write_text('{"step": 1, "epoch": 1}\n', encoding="utf-8")
    helper = student / "helper.py"
    helper.write_text(helper.read_text(encoding="utf-8").replace("learning_rate=6e-4", "learning_rate=6e-3"),
                      encoding="utf-8")
    script = (recipe.replace("/autograder/source", shlex.quote(str(source)))
              .replace("/autograder/submission", shlex.quote(str(submission)))
              .replace("/autograder/results", shlex.quote(str(results)))
              .replace("python ", f"{shlex.quote(sys.executable)} "))
    script = script.replace("results.json\n", "results.json 1c-1-basic\n")  # one test is enough here
    p = subprocess.run(["bash", "-euc", script], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.load(open(results / "results.json", encoding="utf-8"))
    (test,) = doc["tests"]
    assert test["score"] == 0 and "learning_rate" in test["output"], test
    assert (staff / "helper.py").read_bytes() == open(os.path.join(ROOT, "src", "submission", "helper.py"), "rb").read()
    assert (staff / "vanilla.model.params").read_bytes() == b"the staff's"


def student_copy(folder, files=None, changes=()):
    """A student's package in `folder` (any name): a copy of src/submission/'s modules (`files`: only those),
    with each of `changes`, (module, old, new), made in it (`old` must be there once)."""
    shutil.copytree(os.path.join(ROOT, "src", "submission"), folder, ignore=shutil.ignore_patterns(
        "__pycache__", "*.params", "*.predictions", "*.state", "*.jsonl", "mingpt-demo"))
    for name in set(os.listdir(folder)) - set(files or os.listdir(folder)):
        os.remove(os.path.join(folder, name))
    for module, old, new in changes:
        path = os.path.join(folder, module)
        text = open(path, encoding="utf-8").read()
        assert text.count(old) == 1, (module, old)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(old, new))
    return folder


def test_submission_dir_of_a_students_folder_is_refused_without_code_dir(corpus, tmp_path):
    """Staff typing --submission-dir for a student's folder (code and prediction files) had its prediction files
    graded with src/submission/'s code: a package that cannot even be imported got full marks for code, and no
    line said whose code ran. Now that is one line and exit status 2 naming both fixes; a folder of outputs is
    graded, with the header naming the code; --code-dir src/submission grades the folder's predictions alone."""
    ann = tmp_path / "ann"
    ann.mkdir()
    (ann / "__init__.py").write_text("raise ImportError('the student broke it')\n")
    (ann / "model.py").write_text("")
    p = subprocess.run([sys.executable, GRADER, "1c-0-hidden", "--data-dir", corpus[0], "--submission-dir", "ann"],
                       cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "START" not in p.stdout, p.stdout
    assert p.stderr == (f"grader: --submission-dir ann: holds code files (__init__.py, model.py), and "
                        f"--submission-dir grades only prediction files, with src/submission's code; to grade its "
                        f"code too give --code-dir ann instead, or to grade only its prediction files add --code-dir "
                        f"{shlex.quote(os.path.join(os.path.dirname(GRADER), 'submission'))}\n"), p.stderr
    out = tmp_path / "out"
    out.mkdir()
    for flags in (["--submission-dir", "out"], ["--submission-dir", "ann", "--code-dir",
                                                  os.path.join(os.path.dirname(GRADER), "submission")]):
        p = subprocess.run([sys.executable, GRADER, "1c-0-hidden", "--data-dir", corpus[0], *flags],
                           cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
        assert p.returncode == 0 and "1c-0-hidden" in p.stdout and p.stderr == "", (flags, p.stderr)
        assert "; code: src/submission\n" in p.stdout, p.stdout  # the header names the code graded
    for ids in (["--list"], ["1d-0-hidden"], ["1f-1"]):  # nothing of the code is graded: nothing to refuse
        p = subprocess.run([sys.executable, GRADER, *ids, "--data-dir", corpus[0], "--submission-dir", "ann"],
                           cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
        assert p.returncode == 0 and "holds code files" not in p.stderr, (ids, p.stderr)


def test_code_dir_grades_the_package_in_that_folder(corpus, tmp_path):
    """Staff grading many students copied each one's files into src/submission/: the grader always graded
    that package. --code-dir grades a student's folder: its synthesizer without the handout's ReLU fails
    1g-3 alone there (src/submission/'s passes it), an exception names the line in that folder, and its
    prediction files are read there too."""
    ann = student_copy(str(tmp_path / "ann"), changes=[
        ("attention.py", "a = F.relu(self.w1(x)).view(B, T,", "a = self.w1(x).view(B, T,")])
    bob = student_copy(str(tmp_path / "bob"), changes=[
        ("dataset.py", "        document = self.data[idx]\n", "        document = self.data[idx].no_such_thing\n"),
        ("helper.py", "    common = dict(", "    common = dict(no_such_name,\n                  ")])
    assert run(corpus[0], ["1g-3-hidden"])["1g-3-hidden"].passed  # the default package
    tests = NO_MODEL_TESTS + ["1d-0-hidden"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as staff run it
    p = subprocess.run([sys.executable, GRADER, *tests, "--data-dir", corpus[0], "--code-dir", "ann", "--json",
                        "ann/results.json"], cwd=str(tmp_path), capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert f"prediction files: {ann}; code: {ann}\n" in p.stdout, p.stdout  # predictions: --code-dir's folder
    doc = json.load(open(os.path.join(ann, "results.json"), encoding="utf-8"))
    failed = {t["name"].split(":")[0]: t["output"] for t in doc["tests"] if t["score"] < t["max_score"]}
    assert set(failed) == {"1g-3-hidden", "1d-0-hidden"}, failed
    assert "differs from the handout's equation" in failed["1g-3-hidden"]
    assert failed["1d-0-hidden"].startswith(f"FAIL: {ann}/vanilla.nopretrain.dev.predictions not found: make it "
                                            f"with ./run.sh vanilla_eval_dev_without_pretrain (after "
                                            f"vanilla_finetune_without_pretrain) in the student's copy of the "
                                            f"assignment, with the code graded"), failed["1d-0-hidden"]
    assert "OUT_DIR" not in failed["1d-0-hidden"]  # OUT_DIR=ann ./run.sh would run the project's code, not ann's
    assert "__pycache__" not in os.listdir(ann)  # the student's folder is left as it was handed in
    p = subprocess.run([sys.executable, GRADER, "1e-0-basic", "1c-1-basic", "--data-dir", corpus[0], "--code-dir",
                        "bob"], cwd=str(tmp_path), capture_output=True, text=True, timeout=300)

    def line(module, text):
        return open(os.path.join(bob, module), encoding="utf-8").read().split("\n").index(text) + 1

    at = line("dataset.py", "        document = self.data[idx].no_such_thing")
    assert f"FAIL: dataset[4] raised AttributeError at {bob}/dataset.py:{at}: " in p.stdout, p.stdout
    at = line("helper.py", "    common = dict(no_such_name,")
    assert f"FAIL: NameError: name 'no_such_name' is not defined\n      raised at bob/helper.py:{at} in finetune\n" \
        in p.stdout, p.stdout


def test_a_students_folder_without_init_is_graded_and_its_prediction_files_score(corpus, tmp_path):
    """A student who left __init__.py out (or sent only the prediction files) got no results.json: the grader
    refused the folder before any test (exit status 2), so Gradescope showed "the autograder failed" without a
    reason, and the prediction files, which need no code, lost their points too."""
    ann = student_copy(str(tmp_path / "ann"), files=[n for n in gradedpackage.CODE_FILES if n != "__init__.py"])
    write_predictions(ann, corpus[1], lambda places: places)  # every answer right
    report = os.path.join(ann, "results.json")
    p = subprocess.run([sys.executable, GRADER, "1e-0-basic", "1d-0-hidden", "--data-dir", corpus[0], "--code-dir",
                        ann, "--json", report], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    tests = {t["number"]: t for t in json.load(open(report, encoding="utf-8"))["tests"]}
    assert tests["1d-0-hidden"]["score"] == tests["1d-0-hidden"]["max_score"] == 3, tests["1d-0-hidden"]
    assert tests["1e-0-basic"]["score"] == 0
    assert tests["1e-0-basic"]["output"] == (f"FAIL: {ann}/__init__.py is missing: it makes the folder the submission "
                                             f"package; submit it with the handout's other files of src/submission/")
    assert "holds none of the handout's code files" not in p.stdout  # six of them are there
    # a folder of prediction files alone (a run's OUT_DIR given to --code-dir for --submission-dir): graded, and told
    outputs = str(tmp_path / "outputs")
    os.makedirs(outputs)
    write_predictions(outputs, corpus[1], lambda places: places)
    p = subprocess.run([sys.executable, GRADER, "1e-0-basic", "1d-0-hidden", "--data-dir", corpus[0], "--code-dir",
                        outputs], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert (f"note: {outputs} holds none of the handout's code files, so the tests of the code fail; to grade a folder "
            f"of outputs (OUT_DIR) with this project's code, give --submission-dir {outputs} instead of --code-dir"
            ) in p.stdout.splitlines(), p.stdout
    assert "1d-0-hidden [took" in p.stdout and "3/3 points" in p.stdout, p.stdout


def test_a_code_dir_with_init_and_outputs_alone_is_not_said_to_hold_no_code_file(corpus, tmp_path):
    """The header's note on a --code-dir of outputs alone says it holds none of the handout's code files:
    __init__.py is one of them, so a folder that holds it (a student's package short of its modules) gets no
    such note; its prediction files score."""
    folder = str(tmp_path / "ann")
    student_copy(folder, files=["__init__.py"])
    write_predictions(folder, corpus[1], lambda places: places)
    p = subprocess.run([sys.executable, GRADER, "1d-0-hidden", "--data-dir", corpus[0], "--code-dir", folder],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "3/3 points" in p.stdout, p.stdout + p.stderr
    assert "code files" not in p.stdout, p.stdout


def test_code_dir_is_imported_as_the_submission_package_by_every_module(tmp_path):
    """What imports `submission` after use_code_dir gets the folder's package (src/model.py, the project's
    module that imports it, and the package's relative and absolute imports); the project's other modules a
    folder of the handout's seven files lacks come from src/submission/, a handout file it lacks does not; and
    another folder given later (src/submission/ too) replaces the first one's modules."""
    ann = student_copy(str(tmp_path / "ann"))
    seven = student_copy(str(tmp_path / "seven"), files=gradedpackage.CODE_FILES)
    student_copy(str(tmp_path / "six"), files=[n for n in gradedpackage.CODE_FILES if n != "dataset.py"])
    script = f"""if True:
        import importlib, sys
        sys.path.insert(0, {os.path.join(ROOT, "src")!r})
        import gradedpackage
        gradedpackage.use_code_dir("ann")
        import model  # src/model.py: import submission.model as _module
        import submission, submission.helper
        from submission import trainer
        print(submission.__file__, model.__file__, submission.helper.__file__, trainer.__file__,
              sys.modules["submission.batching"].__file__)
        gradedpackage.use_code_dir("seven")
        import submission
        print(submission.__file__, submission.helper.__file__, sys.modules["submission.batching"].__file__)
        gradedpackage.use_code_dir("six")
        try:
            importlib.import_module("submission")
        except ImportError as e:
            print(e)
        gradedpackage.use_code_dir({os.path.join(ROOT, "src", "submission")!r})  # the default again
        print(importlib.import_module("submission").__file__, gradedpackage._code_dir)
    """
    p = subprocess.run([sys.executable, "-c", script], cwd=str(tmp_path), capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    staff = os.path.join(ROOT, "src", "submission")
    assert p.stdout.splitlines() == [
        " ".join(os.path.join(ann, n) for n in ["__init__.py", "model.py", "helper.py", "trainer.py", "batching.py"]),
        " ".join([os.path.join(seven, "__init__.py"), os.path.join(seven, "helper.py"),
                  os.path.join(staff, "batching.py")]),
        "No module named 'submission.dataset'", os.path.join(staff, "__init__.py") + " None"], p.stdout


@pytest.mark.parametrize("make, says", [
    (None, "no such folder; check the path"),
    (lambda d: open(d, "w").close(), "is a file, not a folder"),
    (lambda d: os.mkdir(d), "has no __init__.py, the file that makes the folder the submission package"),
    (lambda d: student_copy(d, files=["__init__.py", "batching.py"]), "has none of the handout's code files"),
    (lambda d: student_copy(os.path.join(d, "src", "submission")), "the package's files are one folder deeper, in "
                                                                   "{d}/src/submission (as in ./run.sh deliverables' "
                                                                   "zip): give --code-dir {q}"),
])
def test_a_code_dir_that_holds_no_package_is_one_line_before_any_test(tmp_path, capsys, make, says):
    """Graded, a folder without the student's package would fail every test (or grade src/submission/'s)."""
    folder = str(tmp_path / "student")
    if make:
        make(folder)
    assert grader.main(["1g-3-hidden", "--code-dir", folder]) == 2
    out, err = capsys.readouterr()
    says = says.format(d=folder, q=shlex.quote(folder + "/src/submission"))
    assert out == "" and err.startswith(f"grader: --code-dir {folder}: {says}") and err.count("\n") == 1, err
    assert "submission" in sys.modules and gradedpackage._code_dir is None  # nothing was imported from it


def test_a_missing_file_of_a_demo_folder_graded_with_code_dir_names_the_students_run(tmp_path, monkeypatch):
    """A folder the demo wrote, graded with --code-dir: the fix for a missing file is the student's run with the code
    graded, not `./run.sh demo`, which runs this project's code (without --code-dir it is the demo's, as before)."""
    folder = tmp_path / "ann"
    folder.mkdir()
    (folder / grader.DEMO_RECORD).write_text("{}", encoding="utf-8")
    ctx = grader.Context(str(tmp_path), str(folder), {}, "embedded")
    assert ctx.demo and ctx.run_sh("vanilla_eval_dev_with_pretrain").startswith("./run.sh demo")
    monkeypatch.setattr(gradedpackage, "_code_dir", str(folder))
    assert ctx.run_sh("vanilla_eval_dev_with_pretrain", ["vanilla_pretrain"]) == (
        "./run.sh vanilla_eval_dev_with_pretrain (after vanilla_pretrain) in the student's copy of the assignment, "
        "with the code graded")


def test_the_prediction_files_follow_code_dir_unless_given(tmp_path, monkeypatch):
    """A student's folder holds both: --code-dir alone grades its prediction files; --submission-dir still
    names them, and without either flag nothing changes. The package is set before the grader is made."""
    ann, preds = student_copy(str(tmp_path / "ann")), str(tmp_path / "preds")
    os.mkdir(preds)
    calls = []

    def make_grader(data_dir, submission_dir, marks):
        calls.append((submission_dir, gradedpackage._code_dir))
        raise graderlib.PointsError("stop")

    monkeypatch.setattr(grader, "make_grader", make_grader)
    # grader.main calls grader's name for use_code_dir (imported from gradedpackage); _code_dir is gradedpackage's
    monkeypatch.setattr(grader, "use_code_dir", lambda folder: monkeypatch.setattr(gradedpackage, "_code_dir", folder))
    for argv in ([], ["--code-dir", ann], ["--code-dir", ann, "--submission-dir", preds], ["--submission-dir", preds]):
        monkeypatch.setattr(gradedpackage, "_code_dir", None)
        assert grader.main(["1g-3-hidden", *argv]) == 2
    assert calls == [(gradedpackage.DEFAULT_SUBMISSION_DIR, None), (ann, ann), (preds, ann), (preds, None)]


def test_the_staff_loop_grades_each_students_folder_where_it_is(corpus, tmp_path):
    """docs/grader.md's loop over students' folders: an unpacked zip (the package in src/submission/) with a
    wrong learning rate fails 1c-1, a folder of the handout's seven files passes it, so does a zip of the folder
    src/submission (the package in submission/: the loop once stopped at the folder above it, exit status 2),
    and an empty folder is named with its exit status; each gets its results.json."""
    doc = open(os.path.join(ROOT, "docs", "grader.md"), encoding="utf-8").read()
    loop = re.search(r"\*\*For staff, on your own machine\.\*\*.*?```bash\n(.*?)```", doc, re.S).group(1)
    students = tmp_path / "students"
    student_copy(str(students / "ann" / "src" / "submission"), changes=[
        ("helper.py", "learning_rate=6e-4", "learning_rate=6e-3")])
    student_copy(str(students / "bob"), files=gradedpackage.CODE_FILES)
    student_copy(str(students / "dee" / "submission"), files=gradedpackage.CODE_FILES)
    (students / "cy").mkdir()
    script = loop.replace("python src/grader.py", f"{shlex.quote(sys.executable)} {shlex.quote(GRADER)} 1c-1-basic "
                                                  f"--data-dir {shlex.quote(corpus[0])}")
    assert script != loop
    p = subprocess.run(["bash", "-euc", script], cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout == "students/cy: grader exit status 2\n", (p.stdout, p.stderr)
    scores = {}
    for name in ("ann", "bob", "dee"):
        (test,) = json.load(open(students / name / "results.json", encoding="utf-8"))["tests"]
        scores[name] = (test["score"], "learning_rate" in test["output"])
    assert scores == {"ann": (0, True), "bob": (2, False), "dee": (2, False)}
    assert (students / "cy" / "grader.log").read_text().startswith("grader: --code-dir students/cy: has no __init__")


def test_a_time_out_says_where_the_code_was_and_a_hung_import_is_not_retried(monkeypatch):
    """A loop at a module's top level made every test that imports the package run out its whole
    limit (about 510 s over the suite), and a time-out never said where the code was."""
    def hang(name):
        while True:
            time.sleep(0.01)

    monkeypatch.setattr(gradedpackage.importlib, "import_module", hang)
    monkeypatch.setattr(gradedpackage, "_import_hung", [])
    g = graderlib.Grader({"9a-0-basic": 1, "9a-1-basic": 1}, own_files=[grader.__file__, gradedpackage.__file__])
    g.add("9a-0-basic", "imports", lambda ctx: gradedpackage.sub(), 0.5)
    g.add("9a-1-basic", "imports again", lambda ctx: gradedpackage.sub(), 0.5)
    # imported already: a time-out in a call that only fetches the package is no hung import
    first, second = g.run(out=None)
    assert second.reason.startswith("timed out after 0.5 s") and gradedpackage._import_hung == []
    monkeypatch.delitem(sys.modules, "submission")  # not imported yet: the first test's import hangs
    first, second = g.run(out=None)
    line = hang.__code__.co_firstlineno + 2
    # the innermost frame of the code under test, then the function of it the test called (here its lambda)
    assert re.fullmatch(rf"timed out after 0\.5 s, at \S*test_grader\.py:{line} in hang, called from "
                        rf"\S*test_grader\.py:\d+ in <lambda>", first.reason), first.reason
    assert second.reason.startswith("importing the submission package did not finish in an earlier test's time "
                                    "limit") and second.seconds < 0.5, second
    assert not g.abandoned


def test_grading_without_test_labels_says_so_before_any_test(tmp_path, capsys):
    """Staff who forget the labelled birth_test.tsv cost every student the test-accuracy tests; each
    failed with its own "test labels absent", after the run. The header says it first."""
    bare, full, other = tmp_path / "bare", tmp_path / "full", tmp_path / "other"
    write_corpus(str(bare), with_test_labels=False)
    write_corpus(str(full))
    write_corpus(str(other))
    (other / "birth_test_inputs.tsv").write_text("Where was Someone Else born?\n", encoding="utf-8")
    ran = {}
    for name, folder in (("bare", bare), ("full", full), ("other", other)):  # in-process: the header is main()'s
        grader.main(["1d", "1f-2", "--data-dir", str(folder)])
        out = capsys.readouterr().out
        assert "----- START 1d-0-hidden" in out, out  # the header, then the tests
        ran[name] = out.split("----- START")[0]
    assert f"note: no birth_test.tsv (the labelled test questions) in {bare}: 1d-1-hidden, 1f-2-hidden cannot " \
           f"pass" in ran["bare"]
    assert "note:" not in ran["full"]
    assert f"note: birth_test.tsv in {other} labels other questions than birth_test_inputs.tsv: 1d-1-hidden, " \
           f"1f-2-hidden cannot pass" in ran["other"]


def test_a_bad_gpt_device_stops_the_grader_before_any_test(monkeypatch, capsys):
    """The graded trainer reads $GPT_DEVICE: a typo failed every training test (0 points, exit 0)
    instead of stopping the run with one line."""
    for value, said in (("gpu", "grader: GPT_DEVICE='gpu' is not a device; set it to cpu, cuda or mps, or unset it"),
                        ("mps", "grader: GPT_DEVICE=mps: torch ")):
        monkeypatch.setenv("GPT_DEVICE", value)
        monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
        assert grader.main(["1c-1"]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.startswith(said) and err.count("\n") == 1
    monkeypatch.setenv("GPT_DEVICE", "gpu")
    assert grader.main(["--list"]) == 0 and capsys.readouterr().err == ""  # listing needs no device
    monkeypatch.setenv("GPT_DEVICE", "CPU")
    asked = []  # GPT_DEVICE=cpu keeps a busy or broken GPU out of it: CUDA is not even asked
    monkeypatch.setattr(torch.cuda, "is_available", lambda: asked.append("cuda") or True)
    assert grader.main(["1c-1"]) == 0 and "Total points: 2/2" in capsys.readouterr().out and asked == []


def test_the_graders_gpt_device_check_words_what_the_graded_trainer_would(monkeypatch):
    """The grader checks $GPT_DEVICE itself (it never imports the graded package for its own needs):
    its line must stay the one the trainer's get_device raises, for each kind of bad value."""
    from submission.utils import DataError, get_device
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for value in ("gpu", "cuda:0", "mps", "CUDA", "Mps"):
        monkeypatch.setenv("GPT_DEVICE", value)
        with pytest.raises(DataError) as raised:
            get_device()
        assert grader.device_problem(value) == str(raised.value)
    for value in ("cpu", "CPU", ""):
        monkeypatch.setenv("GPT_DEVICE", value)
        assert grader.device_problem(value) is None and get_device() == "cpu"


def test_ctrl_c_with_the_reader_gone_still_exits_130(corpus, tmp_path):
    """`grader.py ... 2>&1 | head` and Ctrl-C: the Ctrl-C stops head too, and the grader's own
    "interrupted" line then met the closed pipe: exit 120 and an "Exception ignored" instead of 130."""
    out_json = tmp_path / "r.json"
    p = subprocess.Popen([sys.executable, GRADER, *SPAN_TESTS, "--data-dir", corpus[0], "--json", str(out_json)],
                         cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        for line in p.stdout:
            if line.startswith(b"----- START"):
                break
        p.stdout.close()  # the reader has gone, then the Ctrl-C
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=60) == 130
    finally:
        p.kill()
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("closed", [">&-", "2>&-"])
def test_a_stream_closed_from_the_start_leaves_the_grading_as_it_was(corpus, tmp_path, broken_src, closed):
    """Python sets a stream closed at start (`>&-`) to None: the --json pipe guard wrapped it and
    failed on the first line (no results.json), or failed a test whose code prints to stderr."""
    src, _ = broken_src("dataset.py", "\n_course_init = CharCorruptionDataset.__init__\n"
                                      "def _chatty_init(self, *args, **kwargs):\n"
                                      "    print('data has many characters', file=sys.stderr)\n"
                                      "    _course_init(self, *args, **kwargs)\n"
                                      "CharCorruptionDataset.__init__ = _chatty_init\n")
    out_json = tmp_path / "r.json"
    command = " ".join(shlex.quote(a) for a in [sys.executable, str(src / "grader.py"), "1e-0", "--data-dir",
                                                  corpus[0], "--json", str(out_json)])
    p = subprocess.run(["bash", "-c", f"{command} {closed}"], cwd=str(tmp_path), capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    (test,) = json.loads(out_json.read_text())["tests"]
    assert test["score"] == test["max_score"], test


def test_the_demos_record_name_is_spelt_once_outside_the_package():
    """demo.py writes its record and the grader looks for it under one name, ledger's: each spelt it itself, and
    a rename in one would have the grader take the demo's folder for the modes'. The package, which imports
    nothing from src/*.py, keeps its copy (test_utils holds it equal)."""
    import demo as demo_module
    import ledger
    spelt = sorted(name for name in os.listdir(os.path.join(ROOT, "src")) if name.endswith(".py")
                   and '".made-by-demo.json"' in open(os.path.join(ROOT, "src", name), encoding="utf-8").read())
    assert spelt == ["ledger.py"]
    assert grader.DEMO_RECORD == demo_module.RECORD == ledger.DEMO_RECORD == ".made-by-demo.json"


def test_make_worlds_record_name_is_spelt_once():
    """make_world writes its record, and the grader reads the world's arguments from it, under ledger's one name:
    each spelt it itself, and a rename in one would have the grader see no record (a changed world graded as if
    it were the course's)."""
    import ledger
    import make_world
    spelt = sorted(name for name in os.listdir(os.path.join(ROOT, "src")) if name.endswith(".py")
                   and '".make_world.json"' in open(os.path.join(ROOT, "src", name), encoding="utf-8").read())
    assert spelt == ["ledger.py"]
    assert grader.WORLD_RECORD == make_world.MARKER == ledger.WORLD_RECORD == ".make_world.json"


def test_a_world_without_test_questions_and_a_demos_folder_get_fixes_that_work(corpus, tmp_path):
    """Grading the demo's files with its world (runs/demo, runs/demo/data): the test-accuracy tests said
    to make the predictions with the eval_test mode, which has no questions there, the missing dev ones
    with a run.sh mode at the course's size, and 1d-0 that any model gets a few right (the demo's table
    shows 0.0%)."""
    demo = tmp_path / "demo"
    world = demo / "data"  # where the demo keeps its world
    shutil.copytree(corpus[0], world)
    for name in ("birth_test.tsv", "birth_test_inputs.tsv"):
        (world / name).write_text("", encoding="utf-8")
    (demo / grader.DEMO_RECORD).write_text("{}", encoding="utf-8")
    dev = len((world / "birth_dev.tsv").read_text(encoding="utf-8").splitlines())
    (demo / ACCURACY["1d-0-hidden"]).write_text("Atlantis\n" * dev, encoding="utf-8")
    results = run(str(world), ["1d-0-hidden", "1f-1-hidden", "1f-2-hidden"], submission_dir=str(demo))
    assert results["1f-2-hidden"].reason == (f"no test questions: {world / 'birth_test.tsv'} holds none (a demo's "
                                             f"world has no test split), so test accuracy cannot be graded with this "
                                             f"--data-dir")
    assert results["1f-1-hidden"].reason.endswith(
        f"not found: make it with ./run.sh demo --out {shlex.quote(str(demo))} (the demo's files come from the demo)")
    assert "in the demo's small world a model without pretraining can get none right" in results["1d-0-hidden"].reason
    # the demo's folder graded with another world (the CUDA demo trains the course's size on data/): no excuse
    # for 0 right, and the test predictions, which the demo never makes, come from the modes' folder
    results = run(corpus[0], ["1d-0-hidden", "1f-2-hidden"], submission_dir=str(demo))
    assert "even without pretraining the model gets a few right" in results["1d-0-hidden"].reason
    assert results["1f-2-hidden"].reason.endswith(
        "./run.sh vanilla_eval_test_with_pretrain (after vanilla_pretrain, vanilla_finetune_with_pretrain) and grade "
        "the folder the modes write (the demo makes no test predictions)"), results["1f-2-hidden"].reason
    import demo as demo_module
    assert (grader.DEMO_RECORD, os.path.realpath(grader.DEFAULT_DEMO_DIR)) == \
        (demo_module.RECORD, os.path.realpath(demo_module.DEFAULT_OUT))


def test_a_code_dir_short_of_files_is_graded_for_any_file_of_the_students(tmp_path):
    """code_dir_problem lets through a folder (without __init__.py) that holds any file a test grades: one of the
    handout's code files, a prediction file or a params file (the tests that need what is missing fail naming
    it); a folder of none of them is one line."""
    for name in ("model.py", "vanilla.nopretrain.dev.predictions", "vanilla.finetune.params"):
        folder = tmp_path / name.replace(".", "_")
        folder.mkdir()
        (folder / name).write_text("")
        assert gradedpackage.code_dir_problem(str(folder), grader.GRADED_OUTPUTS) is None, name
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "notes.txt").write_text("")
    assert gradedpackage.code_dir_problem(str(tmp_path / "notes"), grader.GRADED_OUTPUTS).startswith(
        "has no __init__.py")


def test_a_json_name_too_long_for_the_temporary_file_is_refused_before_any_test(tmp_path):
    """The check before grading tried a file named `.results.XXXX.tmp`, while write_json writes
    `<path>.<pid>.<8 hex>.tmp`: a --json name of 238 to 255 bytes passed the check, then the write failed after
    the whole grading ("File name too long"). The trial file is named as the write's will be."""
    try:
        name_max = os.pathconf(tmp_path, "PC_NAME_MAX")
    except (AttributeError, OSError, ValueError):
        pytest.skip("no NAME_MAX here")
    room = name_max - len(f".{os.getpid()}.12345678.tmp")  # the longest name whose temporary file fits
    fits, too_long = tmp_path / ("r" * (room - 5) + ".json"), tmp_path / ("r" * (room - 4) + ".json")
    assert graderlib.json_path_problem(str(fits)) is None
    g = graderlib.Grader({"9a-0-basic": 1})
    g.add("9a-0-basic", "passes", lambda ctx: None, 5)
    graderlib.write_json(g.run(out=None), str(fits))
    assert os.listdir(tmp_path) == [fits.name]
    problem = graderlib.json_path_problem(str(too_long))
    assert problem and problem.startswith(f"no file can be made in {tmp_path} (File name too long)"), problem
    assert os.listdir(tmp_path) == [fits.name]

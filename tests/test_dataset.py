"""Datasets: exact span-corruption properties over many draws, NameDataset alignment, input errors.

Run:  python -m pytest -q tests/test_dataset.py
"""
import random
import re
import statistics
from collections import Counter

import pytest
import torch

from submission.dataset import (MASK_CHAR, PAD_CHAR, CharCorruptionDataset, DataError, NameDataset,
                                parse_tsv)

LONG = "Ada Quill. " + "She was born in Lisbon and studied at the observatory of Porto for many years. " * 3
CORPUS = "\n".join([LONG, "Bo Li. Born in Hanoi.", "abc", "", "x",
                    "Zoë Ñandú. Née à Genève, morte à Paris. Where was she born? Geneva."])


def decode(ds, t):
    return "".join(ds.itos[int(i)] for i in t)


@pytest.fixture(scope="module")
def ds():
    return CharCorruptionDataset(CORPUS, 128)


def test_vocabulary(ds):
    assert ds.stoi[PAD_CHAR] == 0 and ds.stoi[MASK_CHAR] == 1
    chars = sorted(set(CORPUS))
    assert [ds.itos[i] for i in range(2, ds.vocab_size)] == chars
    assert ds.vocab_size == len(chars) + 2
    assert len(ds) == len(CORPUS.split("\n")) == 6


def test_reserved_characters_rejected():
    with pytest.raises(DataError, match="MASK"):
        CharCorruptionDataset("a" + MASK_CHAR, 17)
    # in a question or place the model would read the sentinel itself (finetuning and evaluation files)
    for text, name in ((f"Where was A born?\tLima\nWhere was B{MASK_CHAR} born?\tRome\n", "MASK"),
                       (f"Where was A born?\tLi{PAD_CHAR}ma\n", "PAD")):
        line = 2 if name == "MASK" else 1
        with pytest.raises(DataError, match=rf"^f.tsv:{line}: the reserved {name} character .* remove it"):
            parse_tsv(text, "f.tsv", require_label=False)


def test_a_nul_byte_in_a_corpus_file_is_named_by_line():
    """A NUL in wiki.txt became a character of the vocabulary (81 -> 82), quietly (the fuzz audit): zeros in a
    text file are a damaged copy's. Refused for a corpus file; a corpus built from a string is the course's API."""
    with pytest.raises(DataError, match=r"^w.txt:2: a NUL byte \(U\+0000\), which no text holds: the file is "
                                        r"damaged .*; copy the corpus again, or remove the NULs$"):
        CharCorruptionDataset("Ann was born in Oslo.\nBo was\0 born in Lima.\n", 32, "w.txt")
    assert "\0" in CharCorruptionDataset("Ann\0 Bo\n", 32).stoi


def draws(ds, idx, n, seed=0):
    random.seed(seed)
    return [ds[idx] for _ in range(n)]


def split_body(ds, x, y):
    s = decode(ds, torch.cat([x[:1], y]))  # the whole masked_string
    assert len(s) == ds.block_size
    body = s.rstrip(PAD_CHAR)
    assert PAD_CHAR not in body, "PAD only at the end"
    assert body.count(MASK_CHAR) == 3 and body.endswith(MASK_CHAR)
    prefix, suffix, masked, _ = body.split(MASK_CHAR)
    return prefix, masked, suffix


@pytest.mark.parametrize("idx", range(6))
def test_span_corruption_structure(ds, idx):
    doc = ds.data[idx]
    for x, y in draws(ds, idx, 300):
        assert x.dtype == torch.long and y.dtype == torch.long
        assert x.shape == y.shape == (ds.block_size - 1,)
        assert torch.equal(x[1:], y[:-1])
        prefix, masked, suffix = split_body(ds, x, y)
        truncated = prefix + masked + suffix
        assert doc.startswith(truncated)
        if len(doc) >= 4:
            assert 4 <= len(truncated) <= int(ds.block_size * 7 / 8)
            assert len(masked) >= 1
        else:  # kept whole, one character masked (none of an empty line)
            assert truncated == doc and len(masked) == min(len(doc), 1)


def test_truncation_lengths_cover_the_range(ds):
    seen = set()
    for x, y in draws(ds, 0, 4000):
        prefix, masked, suffix = split_body(ds, x, y)
        seen.add(len(prefix + masked + suffix))
    assert seen == set(range(4, int(128 * 7 / 8) + 1))


def test_a_short_document_is_truncated_to_every_length_up_to_its_own():
    """The truncation length is drawn from [4, min(len(document), int(7/8 block))]: a document shorter than 7/8 of
    the block is cut to each length from 4 to its own, about equally often (drawing from [4, int(7/8 block)] and
    then cutting would leave it whole in most draws)."""
    ds = CharCorruptionDataset("Bo Li. Born in Hanoi.", 128)  # 21 characters: lengths 4..21
    counts = Counter(len("".join(split_body(ds, x, y))) for x, y in draws(ds, 0, 1800, seed=2))
    assert sorted(counts) == list(range(4, 22))
    assert max(counts.values()) < 3 * min(counts.values()), counts


def test_documents_are_the_corpus_split_at_each_newline():
    """One document per "\\n"-separated line, as the course's data.split('\\n'): a trailing newline makes a last,
    empty document (len() counts it, and the course's final_tokens = 200 * len * block_size with it), and
    other line breaks (\\r, form feed, U+2028) stay inside a document."""
    ds = CharCorruptionDataset("ab\x0ccd\u2028ef\rgh\nij\n", 17)
    assert ds.data == ["ab\x0ccd\u2028ef\rgh", "ij", ""] and len(ds) == 3


def test_masked_length_averages_a_quarter(ds):
    ratios, more, less = [], 0, 0
    for x, y in draws(ds, 0, 6000):
        prefix, masked, suffix = split_body(ds, x, y)
        n = len(prefix + masked + suffix)
        ratios.append(len(masked) / n)
        more += len(masked) > n / 4
        less += len(masked) < n / 4
    assert abs(statistics.mean(ratios) - 0.25) < 0.01
    assert more > 1000 and less > 1000


def test_masked_length_averages_a_quarter_at_every_length():
    """Not only over all lengths: at each one, odd ones too, whose quarter is no whole number (rounding
    n/2 - 1 draws to the nearest instead of at random gave 1.67 characters at n = 7, not 1.75)."""
    ds = CharCorruptionDataset("abcdefg", 128)  # 7 characters: truncated to 4, 5, 6 or 7
    by_length = {}
    for x, y in draws(ds, 0, 12000, seed=3):  # 3,000 a length: a mean's standard error about 0.01
        prefix, masked, suffix = split_body(ds, x, y)
        by_length.setdefault(len(prefix + masked + suffix), []).append(len(masked))
    assert sorted(by_length) == [4, 5, 6, 7]
    for n, lengths in by_length.items():
        assert abs(statistics.mean(lengths) - n / 4) < 0.04, (n, statistics.mean(lengths))


def test_masked_span_position_varies(ds):
    starts = {len(split_body(ds, x, y)[0]) for x, y in draws(ds, 0, 500)}
    assert 0 in starts and len(starts) > 40


def test_masked_span_starts_anywhere_it_fits():
    """The span's start is drawn from all of [0, n - m]: from the document's first character (empty prefix) to
    the start that ends the span at the truncated document's end (empty suffix)."""
    ds = CharCorruptionDataset("abcdefg", 128)  # truncated to 4..7 characters, 1..3 of them masked
    starts = {}
    for x, y in draws(ds, 0, 3000, seed=1):
        prefix, masked, suffix = split_body(ds, x, y)
        starts.setdefault((len(prefix + masked + suffix), len(masked)), set()).add(len(prefix))
    assert len(starts) == 8
    for (n, m), seen in starts.items():
        assert seen == set(range(n - m + 1)), (n, m, seen)


def test_namedataset_alignment(ds):
    text = "Where was Bo Li born?\tHanoi\nWhere was Zoë Ñandú born?\tGenève\n"
    nd = NameDataset(text, ds)
    assert len(nd) == 2
    x, y = nd[1]
    q, place = "Where was Zoë Ñandú born?", "Genève"
    assert x.shape == y.shape == (127,)
    xs, ys = decode(ds, x), decode(ds, y)
    assert xs.startswith(q + MASK_CHAR + place + MASK_CHAR) and set(xs[len(q) + len(place) + 2:]) == {PAD_CHAR}
    # y is PAD while the question is read; from the question's last character on it predicts
    # MASK, the place, MASK, then PAD (no loss)
    assert ys[:len(q) - 1] == PAD_CHAR * (len(q) - 1)
    assert ys[len(q) - 1:len(q) + len(place) + 1] == MASK_CHAR + place + MASK_CHAR
    for t in range(len(q) - 1, len(q) + len(place) + 1):  # targets are the next input character
        assert y[t] == x[t + 1]


def test_namedataset_reads_both_editions_argument_orders(ds):
    """XCS224N's run.py calls NameDataset(text, pretrain_dataset), CS224N's NameDataset(pretrain_dataset,
    text): the second ended in "'str' object has no attribute 'itos'"."""
    text = "Where was Bo Li born?\tHanoi\nWhere was Zoë Ñandú born?\tGenève\n"
    xcs, cs = NameDataset(text, ds), NameDataset(ds, text)
    assert len(cs) == len(xcs) == 2 and cs.stoi is ds.stoi and cs.block_size == ds.block_size
    for i in range(2):
        assert all(torch.equal(a, b) for a, b in zip(cs[i], xcs[i]))


def test_tsv_errors_name_file_and_line(ds):
    with pytest.raises(DataError, match=r"train\.tsv:2: expected"):
        NameDataset("Where was Bo Li born?\tHanoi\nWhere was Bo Li born? Hanoi\n", ds, path="train.tsv")
    with pytest.raises(DataError, match=r"train\.tsv:1: character 'X'"):
        NameDataset("Where was Xu born?\tHanoi\n", ds, path="train.tsv")
    with pytest.raises(DataError, match=r"train\.tsv:1: .*block size"):
        NameDataset("Where was " + "a" * 130 + " born?\tHanoi\n", ds, path="train.tsv")
    # the longest line that fits: question, MASK, place, MASK fill the block exactly (PAD only as x's last)
    q = "Where was " + "a" * (128 - 2 - len("Hanoi") - len("Where was  born?")) + " born?"
    x, y = NameDataset(f"{q}\tHanoi\n", ds)[0]
    assert decode(ds, torch.cat([x, y[-1:]])) == q + MASK_CHAR + "Hanoi" + MASK_CHAR
    with pytest.raises(DataError, match=r"train\.tsv:1: question and place take 129 characters"):
        NameDataset(f"{q}a\tHanoi\n", ds, path="train.tsv")


def test_a_blank_question_or_place_is_an_error_and_a_blank_line_is_skipped():
    """A question or place of nothing but spaces is a DataError naming the line; a line of nothing but spaces
    or tabs is blank, skipped as an empty one is."""
    for line in ("\tLima", "Where was A born?\t", "   \tLima", "Where was A born?\t  "):
        with pytest.raises(DataError, match=r"^t\.tsv:2: expected `question<TAB>place`, found a blank question"):
            parse_tsv("Where was B born?\tRome\n" + line + "\n", "t.tsv")
    assert parse_tsv("Where was B born?\tRome\n   \n\t\r\n \t \n", "t.tsv") == [("Where was B born?", "Rome", 1)]


def test_a_line_with_more_than_two_fields_is_an_error_not_cut_to_two():
    """A third tab-separated field (a stray tab inside the place, a spreadsheet's extra column) is a DataError
    naming the line and the count, labelled or not: read as `question<TAB>place` it would train on, or score
    against, the second field alone and drop the rest without a word."""
    for require_label in (True, False):
        with pytest.raises(DataError, match=r"^t\.tsv:2: expected .*, found 3 tab-separated field\(s\)"):
            parse_tsv("Where was B born?\tRome\nWhere was A born?\tLima\tPeru\n", "t.tsv", require_label=require_label)


def test_namedataset_keeps_the_courses_data_attribute(ds):
    """NameDataset.data, as in the course's class: one `question<TAB>place` string per example."""
    nd = NameDataset("Where was Bo Li born?\tHanoi\n\nWhere was Zoë Ñandú born?\tGenève\n", ds)
    assert nd.data == ["Where was Bo Li born?\tHanoi", "Where was Zoë Ñandú born?\tGenève"]


def test_the_xcs224n_starters_attributes_are_there_for_a_students_own_getitem():
    """The XCS224N starter's constructor also sets max_context_size, masking_percent and item; a
    __getitem__ written against it reads them."""
    class Students(CharCorruptionDataset):
        def __getitem__(self, idx):
            doc = self.data[idx][:random.randint(4, self.max_context_size)]
            m = max(1, int(len(doc) * self.masking_percent))
            self.item = doc[:-m] + self.MASK_CHAR + doc[-m:] + self.MASK_CHAR
            ids = [self.stoi[c] for c in self.item.ljust(self.block_size, self.PAD_CHAR)]
            return torch.tensor(ids[:-1]), torch.tensor(ids[1:])

    for block, context in ((128, 96), (32, 24), (10, 7)):
        students = Students(CORPUS, block)
        assert (students.max_context_size, students.masking_percent, students.item) == (context, 0.25, None)
    x, y = Students(CORPUS, 128)[0]
    assert x.shape == y.shape == (127,) and torch.equal(x[1:], y[:-1])


def test_parse_tsv_unlabelled():
    rows = parse_tsv("q1\nq2\n\n", "t.tsv", require_label=False)
    assert rows == [("q1", None, 1), ("q2", None, 2)]


def test_a_column_header_line_is_refused_by_line():
    """A spreadsheet's export starts `name<TAB>place`: the course would finetune on it, or answer and score it,
    as a question. Refused when every later question ends in '?' and the first does not; a file of questions
    without question marks, one whose later lines are mixed, or one of two questions is read as it is."""
    questions = "".join(f"Where was Person {i} born?\tPlace {i}\n" for i in range(3))
    with pytest.raises(DataError, match=r"^t.tsv:2: 'name\\tplace' reads as a column header, not a question "
                                        r"\(every other line's question ends in '\?'\); remove that line, or end "
                                        r"it in '\?' if it is a question$"):
        parse_tsv("\nname\tplace\n" + questions, "t.tsv")
    with pytest.raises(DataError, match=r"^t.tsv:1: 'question' reads as a column header"):
        parse_tsv("question\n" + "".join(q + "\n" for q, _, _ in parse_tsv(questions)), "t.tsv", require_label=False)
    for text in ("who\tx\nq1\ty\nq2\tz\n",                                          # no question marks at all
                 "Where was Al born\tx\nWhere was Bo born?\ty\nWhere was Cy born\tz\n",  # mixed
                 "Al Bo\tOslo\nWhere was Bo born?\ty\n",                               # too few to tell
                 "Where was Al born? \tx\n" + questions):                              # asks, space after
        assert len(parse_tsv(text, "t.tsv")) == text.count("\n")


@pytest.mark.parametrize("text, require_label, first", [
    ("name\tplace\n", True, "'name\\tplace'"),
    ("Name\tBirth place\nWhere was Bo born?\ty\n", True, "'Name\\tBirth place'"),
    ("question\r\n", False, "'question'"),
    ("Question\tAnswer\n", False, "'Question\\tAnswer'"),
])
def test_a_header_of_a_headers_words_is_refused_above_any_rows(text, require_label, first):
    """A TSV of its header alone was finetuned on ("name" -> "place"), evaluated ("Correct: 0.0 out of 1.0") and
    scored by the London baseline, exit 0 (the fuzz audit): the question-mark test needs two questions under it.
    A first line of a header's words (name / question, place / answer, any case) is refused by its words."""
    with pytest.raises(DataError, match=rf"^t.tsv:1: {re.escape(first)} is a column header, not a question and its "
                                        r"place; remove that line$"):
        parse_tsv(text, "t.tsv", require_label=require_label)
    # words of a header in a question, or a place alone, are data
    assert len(parse_tsv("Where was Name born?\tplace\nname here\tplace\n", "t.tsv")) == 2


def test_a_column_header_above_two_questions_is_refused():
    """Three lines are enough to tell a header: `name<TAB>place` above two questions ending in '?' is refused as
    above four (two lines are too few, test_a_column_header_line_is_refused_by_line); refusing only from four
    lines on passed every test."""
    with pytest.raises(DataError, match=r"^t.tsv:1: 'name\\tplace' reads as a column header"):
        parse_tsv("name\tplace\nWhere was Al born?\tx\nWhere was Bo born?\ty\n", "t.tsv")


def test_parse_tsv_drops_carriage_returns(ds):
    """Windows line ends in a string (not read through read_text's text mode): the \\r is no part of the place."""
    text = "Where was Bo Li born?\tHanoi\r\nWhere was Zoë Ñandú born?\tGenève\r\n\r\n"
    assert parse_tsv(text, "t.tsv") == [("Where was Bo Li born?", "Hanoi", 1),
                                        ("Where was Zoë Ñandú born?", "Genève", 2)]
    x, _ = NameDataset(text, ds)[0]
    assert decode(ds, x).startswith("Where was Bo Li born?" + MASK_CHAR + "Hanoi" + MASK_CHAR + PAD_CHAR)


def test_encode_matches_the_per_character_loop():
    """dataset.encode (str.translate + UTF-32) gives the ids of [stoi[c] for c in text], for every
    character class (accents, CJK, outside the BMP), and rejects a character outside the vocabulary."""
    from submission.dataset import encode, id_table
    text = "Zoë Ñandú 北京 \U0001F600 " + MASK_CHAR + PAD_CHAR + "\t"
    stoi = {ch: i for i, ch in enumerate(sorted(set(text)))}
    rng = random.Random(0)
    for _ in range(50):
        s = "".join(rng.choice(text) for _ in range(rng.randint(0, 200)))
        ids = encode(s, id_table(stoi))
        assert ids.dtype == torch.long and ids.tolist() == [stoi[c] for c in s]
    with pytest.raises(DataError, match="not in the vocabulary"):
        encode("Zoë?", id_table(stoi))
    big = {chr(0x4E00 + i): i for i in range(0xD800)}  # ids reach the surrogates: the plain loop
    assert encode(chr(0x4E00 + 0xD7FF) + chr(0x4E01), id_table(big)).tolist() == [0xD7FF, 1]


def test_encode_a_vocabulary_whose_ids_reach_the_surrogates():
    """0xD801 characters give the id 0xD800, a UTF-16 surrogate that str.translate's UTF-32 pass cannot write:
    encode must read such a vocabulary with the plain loop."""
    from submission.dataset import encode, id_table
    big = {chr(0x4E00 + i): i for i in range(0xD801)}
    assert encode(chr(0x4E00 + 0xD800) + chr(0x4E01), id_table(big)).tolist() == [0xD800, 1]


def test_examples_have_their_own_storage(ds):
    """x and y of one example are separate tensors: writing into x leaves y as it was."""
    x, y = ds[0]
    before = y.clone()
    x.fill_(7)
    assert torch.equal(y, before)
    q, a = NameDataset("Where was Bo Li born?\tHanoi\n", ds)[0]
    before = a.clone()
    q.fill_(7)
    assert torch.equal(a, before)


def test_every_block_size_from_the_smallest_gives_full_length_examples():
    """int(7/8 B) characters of text plus 3 MASKs fit a block of B from B = 17 on; below it they cannot."""
    from submission.dataset import MIN_BLOCK
    doc = "abcdefghijklmnopqrstuvwxyz" * 4
    for block in range(MIN_BLOCK, 48):
        ds = CharCorruptionDataset(doc + "\n", block)
        random.seed(block)
        for _ in range(50):
            x, y = ds[0]
            assert x.shape == y.shape == (block - 1,)
    small = CharCorruptionDataset(doc, MIN_BLOCK - 1)  # built, as the course's is: its vocabulary serves
    assert small.vocab_size == 28 and small.block_size == MIN_BLOCK - 1
    with pytest.raises(ValueError, match=f"block_size must be at least {MIN_BLOCK} for span corruption"):
        small[0]


def test_the_copies_kept_for_modules_that_load_before_torch_match_the_dataset():
    """modelflags checks flags and plots labels its pictures before torch loads, make_world writes the
    corpus (standard library only), and the grader keeps clear of the package it grades: each has its own
    copy of a dataset constant or of the course's model size, and the copies must not drift."""
    import grader
    import make_world
    import modelflags
    import plots
    from submission.dataset import MIN_BLOCK
    assert modelflags.MIN_BLOCK == MIN_BLOCK and plots.MASK == MASK_CHAR
    assert make_world.MASK_CHAR == grader.MASK_CHAR == MASK_CHAR
    assert make_world.PAD_CHAR == grader.PAD_CHAR == PAD_CHAR
    assert modelflags.COURSE_SIZE == dict(n_layer=grader.N_LAYER, n_head=grader.N_HEAD, n_embd=grader.N_EMBD,
                                          block_size=grader.BLOCK_SIZE)


def test_a_place_with_spaces_around_it_is_noted(capsys, monkeypatch):
    """`Q?<TAB>London  ` trained the model to write "London  ", which run.py's evaluation (the course's
    evaluate_places, against the stripped gold line) counts wrong, without a word. It trains as the course
    trains it, with a note (under torchrun, from rank 0 alone); a Windows line end is no space."""
    ds = CharCorruptionDataset("Where was Bo Li born? In London.\n" * 4, 32)
    text = "Where was Bo Li born?\tLondon\nWhere was Bo Li born?\tLondon  \r\nWhere was Bo Li born?\t London\n"
    names = NameDataset(text, ds, path="train.tsv")
    assert len(names) == 3 and names.rows[1][1] == "London  "  # as the course reads it
    assert capsys.readouterr().err == (
        "note: train.tsv:2: the place 'London  ' has spaces around it (2 lines); the model learns to write them, "
        "and run.py's evaluation (the course's evaluate_places) counts such answers wrong: remove them\n")
    NameDataset("Where was Bo Li born?\tLondon\r\n", ds, path="train.tsv")
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("RANK", "1")  # a RANK without torchrun's WORLD_SIZE: a single process, which says it
    NameDataset(text, ds, path="train.tsv")
    assert "has spaces around it" in capsys.readouterr().err
    monkeypatch.setenv("WORLD_SIZE", "2")  # torchrun's other processes: rank 0 says it once
    NameDataset(text, ds, path="train.tsv")
    assert capsys.readouterr().err == ""


def test_an_accent_stored_apart_from_its_letter_is_named_for_what_it_is():
    """A name pasted in NFD ("e" then U+0301) was told to "remove it": the name would lose its accent. Where
    the composed name is in the vocabulary, the fix is to save the file composed (NFC)."""
    question = "Where was Rene\u0301e Lo born?\tLima\n"
    ds = CharCorruptionDataset("Where was Ren\u00e9e Lo born? In Lima.\n" * 4, 32)
    with pytest.raises(DataError, match=r"^train.tsv:1: character '\u0301' \(U\+0301\) is an accent stored apart "
                                        r"from its letter \(Unicode NFD\), which the vocabulary lacks; save the file "
                                        r"with composed characters \(Unicode NFC\), not remove it"):
        NameDataset(question, ds, path="train.tsv")
    without = CharCorruptionDataset("Where was Renee Lo born? In Lima.\n" * 4, 32)  # no composed e-acute either
    with pytest.raises(DataError, match=r"character '\u0301' \(U\+0301\) is not in the vocabulary built"):
        NameDataset(question, without, path="train.tsv")


def test_a_params_file_or_utf16_given_as_text_is_named_for_what_it_is(tmp_path):
    """`london_baseline.py vanilla.finetune.params` said "...:1: not valid UTF-8 at byte 64; save the
    file as UTF-8": a params file is no text to re-save. UTF-16 from a Windows editor is named too."""
    from submission.dataset import read_text
    params = tmp_path / "vanilla.finetune.params"
    torch.save({"w": torch.zeros(3)}, params)
    with pytest.raises(DataError, match=rf"^{params}: a zip file \(params are one\), not text; give the dev corpus "
                                        r"\(a UTF-8 text file\)$"):
        read_text(str(params), "dev corpus")
    utf16 = tmp_path / "dev.tsv"
    utf16.write_bytes("Where was Ann Lee born?\tLima\n".encode("utf-16"))
    with pytest.raises(DataError, match=r"dev.tsv: UTF-16 text \(byte-order mark (FF FE|FE FF)\), not UTF-8; save the "
                                        r"file as UTF-8$"):
        read_text(str(utf16), "dev corpus")
    # without a byte-order mark it read as UTF-8, a NUL every other character: "'\x00' is not in the vocabulary"
    for codec, name in (("utf-16-le", "Ann Lee"), ("utf-16-be", "Ann Lee"), ("utf-16-le", "Ren\u00e9e Lo")):
        utf16.write_bytes(f"Where was {name} born?\tLima\n".encode(codec))  # (with the e-acute: no valid UTF-8)
        with pytest.raises(DataError, match=r"dev.tsv: UTF-16 text without a byte-order mark \(every other byte "
                                            r"is zero\), not UTF-8; save the file as UTF-8$"):
            read_text(str(utf16), "dev corpus")
    numbers = tmp_path / "numbers.bin"  # zeros at even and odd offsets alike: no UTF-16
    numbers.write_bytes(b"".join(i.to_bytes(8, "little") for i in range(200, 300)))
    with pytest.raises(DataError, match=r"numbers.bin:1: not valid UTF-8 at byte \d+; save the file as UTF-8$"):
        read_text(str(numbers))
    latin1 = tmp_path / "wiki.txt"
    latin1.write_bytes("Ann Lee.\nRen\xe9e Bo.\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"wiki.txt:2: not valid UTF-8 at byte 12; save the file as UTF-8$"):
        read_text(str(latin1))


def test_utf16_without_a_mark_is_named_for_names_in_other_scripts_and_one_spaced_place_is_one_line(tmp_path, capsys):
    """Mutation audit: UTF-16 saved without a byte-order mark is named when half its characters are of
    another script (Cyrillic names: zeros at about half the high bytes, not nearly all); and the note on a
    place with spaces around it counts lines only when there are several."""
    from submission.dataset import read_text
    utf16 = tmp_path / "dev.tsv"
    utf16.write_bytes("Where was \u0418\u0432\u0430\u043d \u041f\u0435\u0442\u0440\u043e\u0432 born?\t"
                      "\u041c\u043e\u0441\u043a\u0432\u0430\n".encode("utf-16-le"))
    with pytest.raises(DataError, match=r"dev.tsv: UTF-16 text without a byte-order mark \(every other byte is "
                                        r"zero\), not UTF-8; save the file as UTF-8$"):
        read_text(str(utf16), "dev corpus")
    ds = CharCorruptionDataset("Where was Bo Li born? In London.\n" * 4, 32)
    NameDataset("Where was Bo Li born?\tLondon\nWhere was Bo Li born?\tLondon \n", ds, path="train.tsv")
    assert capsys.readouterr().err == (
        "note: train.tsv:2: the place 'London ' has spaces around it; the model learns to write them, and run.py's "
        "evaluation (the course's evaluate_places) counts such answers wrong: remove them\n")


def test_dataset_script_prints_the_courses_data_line_exactly(tmp_path):
    """`python dataset.py charcorruption` prints the course's `data has %d characters, %d unique.`, char for
    char: N = len(data), the newlines between the biographies counted (it printed the sum of the lines'
    lengths), and nothing after the unique count (it added ' (PAD and MASK included)' before the period)."""
    import os
    import subprocess
    import sys
    text = "Ada Quill. Born in Lisbon, she studied in Porto.\nBo Li. Born in Hanoi.\nCy Ng. Born in Lima.\n"
    (tmp_path / "wiki.txt").write_text(text, encoding="utf-8")
    script = os.path.join(os.path.dirname(__file__), "..", "src", "submission", "dataset.py")
    p = subprocess.run([sys.executable, script, "charcorruption", "--data-dir", str(tmp_path)],
                       capture_output=True, text=True, encoding="utf-8", timeout=300)
    assert p.returncode == 0, p.stderr[-500:]
    first = p.stdout.splitlines()[0]
    assert first.startswith(f"data has {len(text)} characters, {len(set(text)) + 2} unique"), first
    assert first == "data has %d characters, %d unique." % (len(text), len(set(text)) + 2)


@pytest.mark.parametrize("special", [MASK_CHAR, PAD_CHAR])
def test_reserved_character_in_the_corpus_raises_what_the_courses_assert_raised(special):
    """The course's CharCorruptionDataset asserts that MASK and PAD are not in the corpus: code written
    against it catches AssertionError. The error is a DataError too, as this project's tools catch."""
    with pytest.raises(AssertionError):
        CharCorruptionDataset("Ada Quill. Born in Lisbon" + special, 128)
    with pytest.raises(DataError):
        CharCorruptionDataset("Ada Quill. Born in Lisbon" + special, 128)


def test_a_question_file_given_as_the_pretraining_corpus_is_named(tmp_path, monkeypatch):
    """birth_dev.tsv given for wiki.txt (`--pretrain_corpus_path` of the wrong file) pretrained on the questions
    without a word; the other way round was refused. A file of the course's, without a path, is not judged, and
    a biography may hold a tab as long as not every line does."""
    import run as driver
    rows = "Where was Ada Quill born?\tLisbon\nWhere was Bo Lind born?\tOslo\n\n"
    tsv = tmp_path / "birth_dev.tsv"
    tsv.write_text(rows, encoding="utf-8")
    with pytest.raises(DataError, match=rf"^{tsv}: every line holds a tab, as the question files' "
                                        r"question<TAB>place lines do; .* give the wiki.txt$"):
        CharCorruptionDataset(rows, 128, str(tsv))
    CharCorruptionDataset(rows, 128)  # the course's call, without a file: no check
    CharCorruptionDataset("Ada Quill.\tBorn in Lisbon.\nBo Lind. Born in Oslo.\n", 128, str(tsv))
    monkeypatch.setenv("GPT_NUM_THREADS", "1")
    with pytest.raises(DataError, match="every line holds a tab"):
        driver.main(["--function=pretrain", "--variant=vanilla", f"--pretrain_corpus_path={tsv}",
                     f"--writing_params_path={tmp_path / 'p.params'}", "--max_epochs", "1"])
    assert not (tmp_path / "p.params").exists()


def test_an_empty_path_is_named_as_empty(tmp_path, monkeypatch):
    """`london_baseline.py "$DEV"` with DEV unset said ": evaluation corpus not found; check the path",
    naming no file; every reader names the empty path instead."""
    from submission.dataset import read_text
    monkeypatch.chdir(tmp_path)
    for path in ("", " "):
        with pytest.raises(DataError, match=r"^the evaluation corpus path is empty; give the file's path$"):
            read_text(path, "evaluation corpus")


def test_a_path_object_is_still_read(tmp_path):
    """read_text read a pathlib.Path as os.path and open do, until the empty-path check called str.strip on
    it: an AttributeError traceback for any caller passing tmp_path / "wiki.txt"."""
    from submission.dataset import read_text
    (tmp_path / "wiki.txt").write_text("Ann Bo. Born in Oslo.\n", encoding="utf-8")
    assert read_text(tmp_path / "wiki.txt", "pretraining corpus") == "Ann Bo. Born in Oslo.\n"


def test_a_place_with_a_character_outside_the_vocabulary_is_refused_by_line(ds):
    """The place is checked as the question is: a character the vocabulary lacks in it is a DataError naming the
    file and line when the dataset is built, not one naming neither at the first batch that draws that row."""
    with pytest.raises(DataError, match=r"^train\.tsv:2: character 'X' \(U\+0058\) is not in the vocabulary"):
        NameDataset("Where was Bo Li born?\tHanoi\nWhere was Bo Li born?\tHaXoi\n", ds, path="train.tsv")


def test_only_a_combining_mark_is_called_an_accent_stored_apart():
    """A character that Unicode's composed form (NFC) replaces but that is no combining mark, the Angstrom sign
    U+212B (NFC: U+00C5), is not called an accent stored apart from its letter: it is named as a character the
    vocabulary lacks, with the fix its composed form gives: save the file with NFC characters, not remove it.
    A character NFC leaves as it is, outside the vocabulary, is told to be removed."""
    ds = CharCorruptionDataset("Where was Anders \u00c5ngstr\u00f6m born? In Uppsala.\n" * 4, 64)
    with pytest.raises(DataError, match=r"^t\.tsv:1: character '\u212b' \(U\+212B\) is not in the vocabulary") as e:
        NameDataset("Where was Anders \u212bngstr\u00f6m born?\tUppsala\n", ds, path="t.tsv")
    assert "accent" not in str(e.value)
    assert "composed form (Unicode NFC) is all in it; save the file with composed characters" in str(e.value)
    assert "remove it or pretrain" not in str(e.value)
    with pytest.raises(DataError, match=r"^t\.tsv:1: .*'\u212b'.*; remove it or pretrain on a corpus that has it$"):
        NameDataset("Where was \u212bsa Berg born?\tUppsala\n", CharCorruptionDataset("Where was Berg born?\n" * 4,
                                                                                      64), path="t.tsv")


def test_masked_span_start_is_uniform_over_where_it_fits():
    """At each truncated length n and span length m, every start in [0, n - m] is about equally likely: a draw
    that favoured the document's first or last characters (an empty prefix or suffix) would still reach every
    start, but would teach the model mostly spans at the ends."""
    ds = CharCorruptionDataset("abcdefg", 128)
    starts = {}
    for x, y in draws(ds, 0, 8000, seed=4):
        prefix, masked, suffix = split_body(ds, x, y)
        starts.setdefault((len(prefix + masked + suffix), len(masked)), Counter())[len(prefix)] += 1
    common = {key: counts for key, counts in starts.items() if sum(counts.values()) >= 400}
    assert len(common) >= 5, starts
    for (n, m), counts in common.items():
        assert sorted(counts) == list(range(n - m + 1)) and max(counts.values()) < 2 * min(counts.values()), \
            (n, m, counts)


def test_items_encode_with_the_vocabulary_the_dataset_holds_now(ds):
    """The course's __getitem__ reads self.stoi at every access, so a program that gives a dataset another
    vocabulary after building it (a corpus subset sharing the full corpus's stoi, a NameDataset's stoi
    replaced or changed in place) gets items in that vocabulary; the table encode reads was built once, in
    __init__, and its items kept the old ids, decoding to other characters."""
    small = CharCorruptionDataset("Bo Li. Born in Hanoi.\nabcd efgh", 32)
    small.stoi, small.itos, small.vocab_size = ds.stoi, ds.itos, ds.vocab_size  # share the larger vocabulary
    random.seed(0)
    x, y = small[0]
    text = decode(ds, x)
    assert text.replace(MASK_CHAR, "").rstrip(PAD_CHAR) != "" and set(text) <= set("Bo Li. Born in Hanoi.") | {
        MASK_CHAR, PAD_CHAR}
    assert x.tolist()[1:] == y.tolist()[:-1]
    names = NameDataset("Where was Bo Li born?\tHanoi\n", ds)
    names.stoi = {ch: (i + 1) % ds.vocab_size for ch, i in ds.stoi.items()}  # replaced
    x, _ = names[0]
    assert x.tolist()[:3] == [names.stoi[c] for c in "Whe"]
    names.stoi["W"] = 5  # changed in place
    x, _ = names[0]
    assert x.tolist()[:3] == [names.stoi[c] for c in "Whe"]


def test_name_dataset_items_come_from_its_data_as_it_holds_now(ds):
    """The course's NameDataset reads self.data at every access (len and __getitem__), so a program that cuts a
    finetuning set down (`names.data = names.data[:n]`) or reorders it trains on what it holds; the rows parsed
    in __init__ were read instead, and the whole file was trained on."""
    text = "Where was Bo Li born?\tHanoi\nWhere was Zoë Ñandú born?\tGenève\nWhere was Ada born?\tPorto\n"
    names = NameDataset(text, ds)
    names.data = names.data[1:2]
    assert len(names) == 1
    x, _ = names[0]
    assert decode(ds, x).startswith("Where was Zoë Ñandú born?" + MASK_CHAR + "Genève" + MASK_CHAR + PAD_CHAR)
    assert [decode(ds, x)[:12] for x, _ in names] == ["Where was Zo"]


def test_a_vocabulary_given_later_with_ids_past_the_table_encodes_as_the_courses_loop(ds):
    """A stoi a program gives a dataset after building it (read at every access) may hold ids the UTF-32 table
    cannot write: a surrogate (0xD800), one past Unicode, a negative one. The course's
    torch.tensor([self.stoi[c] for c in x]) makes them ids all the same; the table raised UnicodeEncodeError or
    ValueError (chr() arg not in range), as id_table judged a vocabulary by its size, not by its ids."""
    names = NameDataset("Where was Bo Li born?\tHanoi\n", ds)
    for far in (0xD800, 0x110000, -1):
        names.stoi = dict(ds.stoi, W=far)
        x, y = names[0]
        assert x.tolist()[:2] == [far, ds.stoi["h"]] and y.dtype == torch.long, far


def test_name_data_given_as_the_courses_split_lines_ends_at_its_last_line(ds):
    """The course's self.data is the file's text split at newlines, so it ends with the empty string after the
    last newline, which its __len__ (len(self.data) - 1) leaves out. A program giving data in that form
    (`names.data = text.split('\\n')`) trains on its lines; counting the empty one too, the last item stopped
    with "not enough values to unpack"."""
    names = NameDataset("Where was Ada born?\tPorto\n", ds)
    names.data = "Where was Bo Li born?\tHanoi\nWhere was Zoë Ñandú born?\tGenève\n".split("\n")
    assert len(names) == 2
    assert [decode(ds, x)[:12] for x, _ in (names[i] for i in range(len(names)))] == ["Where was Bo", "Where was Zo"]

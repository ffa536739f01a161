"""src/memorised.py: which lines it probes, and that its batched greedy continuation counts exactly the
places that one-at-a-time `sample()` reproduces.

Run:  python -m pytest -q tests/test_memorised.py
"""
import pytest
import torch

import memorised
from submission import GPT, GPTConfig, sample


def test_probes_cut_before_the_place_and_respect_the_truncation_limit():
    wiki = ["Ann Bo. Born in Oslo.", "Cy Du. Never said.", "Ed Fa. " + "x" * 105 + " Lima", "Oslo Oslo. Oslo"]
    rows = [("q", "Oslo"), ("q", "Rome"), ("q", "Lima"), ("q", "Oslo")]
    items = memorised.probes(wiki, rows, block_size=128)  # limit int(128 * 7 / 8) = 112
    # row 1 never states its place, row 2's place ends past 112 characters, row 3's starts the line: there is
    # nothing before it to continue, so its next one is cut at (the line was skipped whole)
    assert items == [(0, "Ann Bo. Born in ", "Oslo"), (3, "Oslo ", "Oslo")]
    assert memorised.probes(wiki[:1], rows[:1], block_size=20) == []  # "Oslo" would end at 20 > 17


def test_the_cut_passes_over_the_place_where_it_is_part_of_the_persons_own_name():
    """A place inside the person's name was cut at, inside the name ("Ivo of " -> "Lund"), so a model that
    only copies the name read as memorised: the cut is at the place's first occurrence outside every
    occurrence of the name (the NAME of "Where was NAME born?"), and a line whose place is only in the name
    is not probed."""
    cases = [  # (wiki line, name, place, the prefix probed or None)
        ("Ned Hale, Lord Hale of Brill. Born in Brill, he farmed.", "Ned Hale, Lord Hale of Brill", "Brill",
         "Ned Hale, Lord Hale of Brill. Born in "),
        ("Ivo of Lund. Ivo of Lund was a merchant (born at Lund).", "Ivo of Lund", "Lund",
         "Ivo of Lund. Ivo of Lund was a merchant (born at "),
        ("Ivo of Lund. Ivo of Lund was a merchant.", "Ivo of Lund", "Lund", None),  # only in the name
        ("Lund Ek. Lund Ek, a sailor, was born in Lund.", "Lund Ek", "Lund",  # the name starts the line
         "Lund Ek. Lund Ek, a sailor, was born in "),
        # the place runs past the end of the name: "Al " -> "Rosa" would copy the name's "Ros"
        ("Al Ros. Al Rosa was born in Rosa.", "Al Ros", "Rosa", "Al Ros. Al Rosa was born in "),
    ]
    wiki = [line for line, *_ in cases]
    rows = [(f"Where was {name} born?", place) for _, name, place, _ in cases]
    want = [(i, prefix, place) for i, (_, _, place, prefix) in enumerate(cases) if prefix is not None]
    assert memorised.probes(wiki, rows, block_size=128) == want
    # a text other than the course's question names no one: the place is cut at wherever it first follows text
    assert memorised.probes(wiki[:1], [("Who?", "Brill")], block_size=128) == [(0, "Ned Hale, Lord Hale of ", "Brill")]
    # the read limit holds for the occurrence cut at: past the name, Brill ends at 43 > int(48 * 7 / 8) = 42
    assert memorised.probes(wiki[:1], rows[:1], block_size=48) == []
    assert memorised.probes(wiki[:1], rows[:1], block_size=50) == [want[0]]  # ends within 43


def test_the_courses_question_has_one_reader_for_the_probes_and_the_world_statistics():
    """memorised's probes and make_world's statistics read the NAME of "Where was NAME born?" with one function:
    the course's form exactly (its spaces and case), an empty name still of that form, any other text none."""
    import make_world
    assert make_world.asked_name("Where was Ned Hale born?") == "Ned Hale"
    assert make_world.asked_name("Where was  born?") == ""  # the form, naming nobody
    for other in ("where was Ned Hale born?", "Where was Ned Hale born? ", "Ned Hale", "Who?", "",
                  "Where was born?"):  # the last one's head and tail share its space: no NAME between them
        assert make_world.asked_name(other) is None, other
    assert memorised.asked_name is make_world.asked_name


def punctuated_model_items(seed, lengths, n=12):
    """(model, stoi, itos, items, want): a random model over letters and four characters that end a word, and
    `n` probes of it whose places are what one-at-a-time greedy `sample` writes: cut where it then writes a
    character that ends a word (memorised), cut inside a word (not: it goes on), or changed in their last
    letter (not: it writes something else). `want` is names_place of the course's own greedy continuation."""
    torch.manual_seed(1)
    model = GPT(GPTConfig(12, 32, n_layer=2, n_head=2, n_embd=16))
    for p in model.parameters():
        p.data.normal_(0, 0.3)  # a random model with decided preferences (writing letters and dashes, mixed)
    model.eval()
    itos = dict(enumerate("abcdefgh.,- "))
    stoi = {c: i for i, c in itos.items()}
    g = torch.Generator().manual_seed(seed)
    items = []
    for k in range(n):
        prefix = [int(t) for t in torch.randint(0, 12, (lengths(k),), generator=g)]
        out = "".join(itos[t] for t in sample(model, torch.tensor([prefix]), 12)[0, len(prefix):].tolist())
        ends = [j for j in range(1, 11) if not out[j].isalnum()]
        inside = [j for j in range(1, 11) if out[j].isalnum()]
        if k % 3 == 0 and ends:
            place = out[:ends[0]]
        elif k % 3 == 1 and inside:
            place = out[:inside[0]]
        else:
            place = out[:3][:-1] + ("a" if out[2] != "a" else "b")
        items.append((k, "".join(itos[t] for t in prefix), place))
    places = {place for _, _, place in items}
    want = []
    for _, prefix, place in items:  # the course's greedy loop, one item at a time, as far as the probe decodes
        x = torch.tensor([[stoi[c] for c in prefix]])
        said = "".join(itos[t] for t in sample(model, x, memorised.reach(place, places))[0, x.size(1):].tolist())
        want.append(memorised.names_place(said, place, places))
    assert True in want and False in want  # both verdicts are exercised
    return model, stoi, itos, items, want


def test_memorised_counts_what_greedy_sample_reproduces():
    model, stoi, itos, items, want = punctuated_model_items(1, lambda k: 3 + k % 4)
    assert memorised.memorised(model, items, stoi, itos) == want


def test_prefixes_of_one_length_decode_in_batches_each_item_keeping_its_own_answer():
    """Items whose prefixes and places have the same lengths decode together, batch_size at a time: the
    full data has groups larger than a batch, and every item, in every batch, is judged by its own
    continuation."""
    model, stoi, itos, items, want = punctuated_model_items(2, lambda k: 4)
    for batch_size in (256, 3, 1):
        assert memorised.memorised(model, items, stoi, itos, batch_size=batch_size) == want, batch_size


def test_a_place_is_named_only_where_the_continuation_ends_it():
    """The probe compared exactly as many characters as the place has: a model writing "Vienna" stored "Vien",
    and one writing "Mexico City" or "Indianapolis" stored "Mexico" and "India" (prefix pairs of data/'s places,
    and of the course's: New York, New York City). A place is named when the character after it ends the word
    and no longer place of the files that starts with it is named too."""
    names, places = memorised.names_place, {"Mexico", "Mexico City", "India", "Indianapolis", "Vienna"}
    assert names("Vienna,", "Vienna") and names("Vienna", "Vienna") and names("Vienna\n", "Vienna")
    assert not names("Vienna", "Vien") and not names("Viennese", "Vienna")
    assert not names("Mexico City.", "Mexico", places) and names("Mexico City.", "Mexico City", places)
    assert names("Mexico, a", "Mexico", places) and names("Mexico Town", "Mexico", places)  # no such place
    assert not names("Indianapolis ", "India", places) and names("India-born", "India", places)
    assert memorised.reach("Mexico", places) == len("Mexico City") + 1 and memorised.reach("Vienna", places) == 7
    assert memorised.reach("Lima", places) == 5


def test_memorised_rows_name_the_rows_per_split_and_counts_add_them_up(tmp_path):
    # a "model" that always continues with "Oslo.": it memorises exactly the Oslo people
    wiki = ["Ann Bo. Born in Oslo.", "Cy Du. Born in Rome.", "Ed Fa. Never said.", "Gu Ha. Born in Oslo.",
            "Io Ju. Born in Oslo."]
    rows = [("Ann Bo", "Oslo"), ("Cy Du", "Rome"), ("Ed Fa", "Lima"), ("Gu Ha", "Oslo"), ("Io Ju", "Oslo")]
    (tmp_path / "wiki.txt").write_text("".join(w + "\n" for w in wiki) + "Where was? Lima\n", encoding="utf-8")
    tsv = lambda part: "".join(f"Where was {n} born?\t{p}\n" for n, p in part)  # noqa: E731
    (tmp_path / "birth_places_train.tsv").write_text(tsv(rows[:3]), encoding="utf-8")
    (tmp_path / "birth_dev.tsv").write_text(tsv(rows[3:]), encoding="utf-8")
    chars = sorted(set((tmp_path / "wiki.txt").read_text(encoding="utf-8")))
    stoi = {c: i + 2 for i, c in enumerate(chars)}
    oslo = [stoi[c] for c in "Oslo"]

    class Oslo(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

        def get_block_size(self):
            return 128

        def forward(self, idx, targets=None):
            # next token: the letter of "Oslo." after the longest end of the input that starts "Oslo"
            B, T = idx.shape
            logits = torch.full((B, T, len(chars) + 2), -1e9)
            for b in range(B):
                for t in range(T):
                    done = max([j for j in range(5) if idx[b, t + 1 - j:t + 1].tolist() == oslo[:j]])
                    logits[b, t, (oslo + [stoi["."]])[done]] = 0.0
            return logits, None

    found = memorised.memorised_rows(Oslo(), str(tmp_path))
    assert found == {"train": ([0], 2), "dev": ([0, 1], 2)}  # Ed Fa's line never states the place
    assert memorised.counts(found) == {"train": (1, 2), "dev": (2, 2), "all": (3, 4)}


@pytest.mark.parametrize("flags, says", [
    (["--n_head", "3"], "--n_embd 256 must be a multiple of --n_head 3"),
    (["--n_head", "0"], "--n_head must be at least 1"),
    (["--n_layer", "0"], "--n_layer must be at least 1"),
    (["--block_size", "16"], "--block_size must be between 17"),
])
def test_impossible_model_flags_are_one_line_errors(tmp_path, capsys, flags, says):
    """The size flags are checked as run.py checks them, before the params or data are read."""
    with pytest.raises(SystemExit) as stop:
        memorised.main(["--params", str(tmp_path / "none.params"), *flags])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and says in err and err.count("\n") == 1


def test_a_corpus_of_another_vocabulary_names_the_data_dir_flag(tmp_path, capsys):
    """Params trained on another corpus told the user to pass --pretrain_corpus_path, a run.py flag."""
    from submission.dataset import CharCorruptionDataset
    from submission.utils import run_cli
    trained_on = "Ann Bo. Born in Oslo.\nCy Du. Born in Rome.\n"
    vocab = CharCorruptionDataset(trained_on, 32).vocab_size
    torch.save(GPT(GPTConfig(vocab, 32, n_layer=1, n_head=2, n_embd=16)).state_dict(), tmp_path / "m.params")
    data = tmp_path / "data"
    data.mkdir()
    (data / "wiki.txt").write_text(trained_on + "Ed Fa. Born in Lima, Peru.\n", encoding="utf-8")  # more characters
    for name in ("birth_places_train.tsv", "birth_dev.tsv"):
        (data / name).write_text("Where was Ann Bo born?\tOslo\n", encoding="utf-8")
    argv = ["--params", str(tmp_path / "m.params"), "--data-dir", str(data), "--n_layer", "1", "--n_head", "2",
            "--n_embd", "16", "--block_size", "32"]
    with pytest.raises(SystemExit) as stop:
        run_cli(lambda: memorised.main(argv))
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1, err
    assert "use the same --data-dir (the folder of the wiki.txt) the params were trained with" in err
    assert "--pretrain_corpus_path" not in err


def test_finetuned_params_are_measured_with_a_note_that_they_are_not_the_pretrained_store(tmp_path, capsys):
    """Finetuned params printed "memorised (all): 57 of 95 (60.0%)" (the demo's, whose pretrained params store 70)
    with no word that this is not what pretraining stored, the share learners.md and the demo's table mean."""
    from submission.card import write_card
    from submission.dataset import CharCorruptionDataset
    text = "Ann Bo. Born in Oslo.\nCy Du. Born in Rome.\n"
    (tmp_path / "wiki.txt").write_text(text, encoding="utf-8")
    (tmp_path / "birth_places_train.tsv").write_text("Where was Ann Bo born?\tOslo\n", encoding="utf-8")
    (tmp_path / "birth_dev.tsv").write_text("Where was Cy Du born?\tRome\n", encoding="utf-8")
    vocab = CharCorruptionDataset(text, 32)
    argv = ["--data-dir", str(tmp_path), "--n_layer", "1", "--n_head", "2", "--n_embd", "16", "--block_size", "32"]
    for function in ("pretrain", "finetune"):
        model = GPT(GPTConfig(vocab.vocab_size, 32, n_layer=1, n_head=2, n_embd=16))
        torch.save(model.state_dict(), tmp_path / f"{function}.params")
        write_card(str(tmp_path / f"{function}.params"), model, vocab.itos, function)
        memorised.main(["--params", str(tmp_path / f"{function}.params")] + argv)
        out, err = capsys.readouterr()
        assert out.startswith("memorised (train): ")
        if function == "pretrain":
            assert err == ""
        else:
            assert err.startswith(f"note: {tmp_path / 'finetune.params'} were finetuned (their card says): ") and \
                err.count("\n") == 1


def test_params_pretrained_on_another_corpus_of_the_same_characters_are_probed_with_a_note(tmp_path, capsys):
    """memorised probes the biographies of the corpus given: params pretrained on another text of the same
    characters (the course's wiki.txt and data/wiki.txt, a world made again) loaded without a word and printed
    shares of people they never read of, which measure nothing of their store. Their card records the corpus
    they read: one note naming both files. Their own corpus, or a card without the field, says nothing."""
    from submission.card import corpus_record, write_card
    from submission.dataset import CharCorruptionDataset
    people = [("Ann Bo", "Oslo"), ("Cy Du", "Rome")]
    for name, order in (("read", people), ("other", people[::-1])):  # one character set, two texts
        (tmp_path / name).mkdir()
        (tmp_path / name / "wiki.txt").write_text("".join(f"{n}. Born in {p}.\n" for n, p in order), encoding="utf-8")
        (tmp_path / name / "birth_places_train.tsv").write_text(f"Where was {order[0][0]} born?\t{order[0][1]}\n",
                                                                encoding="utf-8")
        (tmp_path / name / "birth_dev.tsv").write_text(f"Where was {order[1][0]} born?\t{order[1][1]}\n",
                                                       encoding="utf-8")
    read, other = tmp_path / "read" / "wiki.txt", tmp_path / "other" / "wiki.txt"
    vocab = CharCorruptionDataset(read.read_text(encoding="utf-8"), 32)
    model = GPT(GPTConfig(vocab.vocab_size, 32, n_layer=1, n_head=2, n_embd=16))
    params = tmp_path / "p.params"
    torch.save(model.state_dict(), params)
    write_card(str(params), model, vocab.itos, "pretrain", corpus=corpus_record(str(read)))
    argv = ["--params", str(params), "--data-dir"]
    memorised.main(argv + [str(tmp_path / "other")])
    out, err = capsys.readouterr()
    sha = {path: corpus_record(str(path))["sha256"][:12] for path in (read, other)}
    assert out.startswith("memorised (train): ") and err == (
        f"note: {params} were pretrained on {read} (sha256 {sha[read]}, their card says), not on {other} (sha256 "
        f"{sha[other]}), a text of the same characters: the probes cut the biographies of {other}, which they never "
        f"read, so the shares below say nothing of what they stored; give --data-dir the folder whose wiki.txt they "
        f"were pretrained on\n"), err
    memorised.main(argv + [str(tmp_path / "read")])
    assert capsys.readouterr().err == ""
    write_card(str(params), model, vocab.itos, "pretrain")  # an earlier version's card: nothing known
    memorised.main(argv + [str(tmp_path / "other")])
    assert capsys.readouterr().err == ""


def test_rows_out_of_the_courses_layout_or_none_are_refused(tmp_path):
    """An empty train file printed "memorised (train): 0 of 0 (0.0%)", exit 0; train rows that are not
    wiki.txt's first lines (a train file cut short) probed each dev person on another person's line and
    printed "0 of 1" for 20 dev people, exit 0."""
    from submission.dataset import DataError
    people = [("Ann Bo", "Oslo"), ("Cy Du", "Rome"), ("Ed Fa", "Lima"), ("Gu Ha", "Kiev")]
    (tmp_path / "wiki.txt").write_text("".join(f"{n} was born in {p}.\n" for n, p in people), encoding="utf-8")

    def tsv(name, rows):
        (tmp_path / name).write_text("".join(f"Where was {n} born?\t{p}\n" for n, p in rows), encoding="utf-8")
    tsv("birth_places_train.tsv", people[:2])
    tsv("birth_dev.tsv", people[2:])
    wiki = (tmp_path / "wiki.txt").read_text(encoding="utf-8").split("\n")
    assert [name for name, _ in memorised.splits(str(tmp_path), wiki)] == ["train", "dev"]  # the layout holds
    tsv("birth_places_train.tsv", people[:1])  # one train row short: dev row 1 lands on Cy Du's line
    with pytest.raises(DataError, match=rf"^{tmp_path / 'birth_dev.tsv'}:1: Ed Fa is not on wiki.txt line 2, as the "
                                        r"course's layout has it \(wiki line i is train row i, then the dev rows\)"):
        memorised.splits(str(tmp_path), wiki)
    tsv("birth_places_train.tsv", [])
    with pytest.raises(DataError, match=r"birth_places_train.tsv: no questions, so no birthplace to probe"):
        memorised.splits(str(tmp_path), wiki)


def test_a_place_ending_at_the_truncation_limit_is_probed_and_rows_past_the_lines_are_not():
    """Span corruption keeps at most int(block_size * 7/8) characters of a line: a place that ends
    exactly there was read in pretraining and is probed; one character later it never was. A row with
    no wiki line (more questions than lines) is skipped, not an IndexError."""
    limit = int(128 * 7 / 8)  # 112
    at_limit = "Ann Bo. " + "x" * (limit - len("Ann Bo. ") - len(" Oslo")) + " Oslo"
    assert len(at_limit) == limit
    rows = [("q", "Oslo"), ("q", "Oslo"), ("q", "Rome")]
    items = memorised.probes([at_limit, "y" + at_limit], rows, block_size=128)  # row 2 has no wiki line
    assert items == [(0, at_limit[:-len("Oslo")], "Oslo")]


def test_the_report_gives_hits_of_probed_and_their_share():
    report = memorised.format_report({"train": (3, 4), "dev": (0, 0), "all": (1, 8)})
    assert report.splitlines() == ["memorised (train): 3 of 4 (75.0%)", "memorised (dev): 0 of 0 (0.0%)",
                                   "memorised (all): 1 of 8 (12.5%)"]
    with_limit = memorised.format_report({"all": (1, 8)}, block_size=128).splitlines()
    assert with_limit == ["memorised (all): 1 of 8 (12.5%)", "(probed: the people whose wiki line names their "
                          "birthplace, ending within its first 112 characters; pretraining reads no further)"]


def test_probes_search_only_what_pretraining_reads_and_cut_where_the_whole_line_would(monkeypatch):
    """cut_at's search is quadratic in the occurrences of the name and the place: a 1 MB line of "Ann of Lund. "
    took 162 s to probe. probes passes it only the first `read_limit` characters and any name over their end, and
    cuts as the whole line would have been cut (random lines over a small alphabet, names and places in them)."""
    import random
    rng = random.Random(0)
    lines, rows = [], []
    for _ in range(400):
        line = "".join(rng.choice("ab. ") for _ in range(rng.randrange(1, 160)))
        name = "".join(rng.choice("ab ") for _ in range(rng.randrange(1, 6)))
        place = "".join(rng.choice("ab") for _ in range(rng.randrange(1, 4)))
        lines.append(line)
        rows.append((f"Where was {name} born?", place))
    whole = []
    for i, (question, place) in enumerate(rows):  # the cut on the whole line, kept when pretraining reads it
        at = memorised.cut_at(lines[i], place, memorised.asked_name(question))
        if at > 0 and at + len(place) <= memorised.read_limit(128):
            whole.append((i, lines[i][:at], place))
    seen = []
    real = memorised.cut_at
    monkeypatch.setattr(memorised, "cut_at", lambda line, place, name="": (seen.append(len(line) - len(name)),
                                                                            real(line, place, name))[1])
    assert memorised.probes(lines, rows, block_size=128) == whole and len(whole) > 100
    long = ["Ann of Lund. " * 80000]
    assert memorised.probes(long, [("Where was Ann of Lund born?", "Lund")], block_size=128) == []
    assert max(seen) <= memorised.read_limit(128)

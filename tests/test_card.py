"""The card beside params (src/submission/card.py): run.py writes what a model was trained as that its
shapes do not record (vanilla's heads, the vocabulary's characters), and loading refuses params whose
card disagrees, in one line naming the flag; a card of other params, a damaged one, or none at all
checks nothing, as the course's bare params are loaded.

Run:  python -m pytest -q tests/test_card.py
"""
import hashlib
import json
import os
import re

import pytest
import torch

import run as driver
from submission import GPT, GPTConfig
from submission.card import card_path, read_card, write_card
from submission.dataset import CharCorruptionDataset, DataError
from submission.resume import data_digest
from submission.utils import ParamsError, load_params

WIKI = "Ada Quill was born in Lisbon.\nBo Li was born in Oslo.\nWhere was Ada Quill born?\n"
SIZE = ["--n_layer", "1", "--n_embd", "16", "--block_size", "32"]


@pytest.fixture()
def trained(tmp_path, monkeypatch, capsys):
    """(folder, params path, argv of an evaluation without --n_head) after a 1-epoch run with 2 heads."""
    monkeypatch.setenv("GPT_NUM_THREADS", "1")
    (tmp_path / "wiki.txt").write_text(WIKI, encoding="utf-8")
    (tmp_path / "dev.tsv").write_text("Where was Bo Li born?\tOslo\n", encoding="utf-8")
    params = tmp_path / "m.params"
    driver.main(["--function=pretrain", "--variant=vanilla", f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}",
                 f"--writing_params_path={params}", "--max_epochs", "1", "--batch_size", "4", "--n_head", "2", *SIZE])
    capsys.readouterr()
    evaluate = ["--function=evaluate", "--variant=vanilla", f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}",
                f"--reading_params_path={params}", f"--eval_corpus_path={tmp_path / 'dev.tsv'}",
                f"--outputs_path={tmp_path / 'dev.predictions'}", *SIZE]
    return tmp_path, params, evaluate


def test_run_py_writes_the_card_of_its_params(trained):
    folder, params, _ = trained
    card = read_card(str(params))
    vocab = CharCorruptionDataset(WIKI, 32).itos
    assert card["n_head"] == 2 and card["vocab"] == "".join(vocab[i] for i in range(len(vocab)))
    assert card["function"] == "pretrain"  # ask notes pretrained params asked a question
    assert sorted(os.listdir(folder)) == ["dev.tsv", "m.params", "m.params.card.json", "m.params.log.jsonl",
                                          "wiki.txt"]


def test_the_card_records_what_repeating_the_run_takes(trained):
    """The card had the heads, vocabulary, function, epochs and corpus: not the seed, learning rate, batch size,
    dropout, speed options, CPU threads, torch or commit, so a run could not be repeated from what it wrote."""
    _, params, _ = trained
    run = read_card(str(params))["run"]
    assert run["training"]["seed"] == 0 and run["training"]["batch_size"] == 4
    assert run["training"]["max_epochs"] == 1 and run["training"]["learning_rate"] == 6e-3  # the course's pretraining
    assert run["training"]["dropout"] == [0.1, 0.1, 0.1] and run["model"]["n_head"] == 2
    assert run["data"] == data_digest(CharCorruptionDataset(WIKI, 32))
    computed = run["computed"]
    assert computed["device"] == "cpu" and computed["processes"] == 1 and computed["threads"] == [1]  # GPT_NUM_THREADS
    assert computed["fast"] is True and computed["torch"] == torch.__version__
    assert computed["packing"] in ("auto", True, False) and computed["length_groups"] == "auto"
    commit = run["commit"]
    assert commit is None or re.fullmatch(r"[0-9a-f]{12}(\+changes)?", commit), commit


def test_params_read_with_other_heads_are_refused_in_one_line(trained, capsys):
    """Vanilla params loaded with another --n_head loaded silently (key, query and value are n_embd x n_embd
    whatever the heads) and answered otherwise: the demo's --n_head 4 left out gave other answers."""
    folder, params, evaluate = trained
    for heads in (4, 1):  # more heads than they were trained with, and fewer
        with pytest.raises(ParamsError) as e:
            driver.main(evaluate + ["--n_head", str(heads)])
        assert str(e.value) == (f"{params}: trained with 2 attention heads ({params}.card.json says), the model has "
                                f"{heads}; use the model size they were trained with (--n_head 2)")
    assert not (folder / "dev.predictions").exists()
    total, _ = driver.main(evaluate + ["--n_head", "2"])
    assert total == 1.0 and (folder / "dev.predictions").exists()


def test_evaluating_pretrained_only_params_notes_it(trained, capsys):
    """Evaluating the pretraining's params (vanilla.pretrain.params for vanilla.finetune.params, a common slip)
    wrote near-empty predictions without a word; the card says what they are. Finetuned params: no note."""
    folder, params, evaluate = trained
    driver.main(evaluate + ["--n_head", "2"])
    assert (f"run.py: note: {params} were pretrained, not finetuned (their card says): they were never taught to "
            f"answer, so expect few right; finetune them first (run.sh's vanilla_finetune_with_pretrain makes the "
            f"params its eval modes read)") in capsys.readouterr().err.splitlines()
    finetuned = folder / "f.params"
    driver.main(["--function=finetune", "--variant=vanilla", f"--pretrain_corpus_path={folder / 'wiki.txt'}",
                 f"--reading_params_path={params}", f"--finetune_corpus_path={folder / 'dev.tsv'}",
                 f"--writing_params_path={finetuned}", "--max_epochs", "1", "--n_head", "2", *SIZE])
    capsys.readouterr()
    driver.main([f"--reading_params_path={finetuned}" if a.startswith("--reading_params_path=") else a
                 for a in evaluate] + ["--n_head", "2"])
    assert "pretrained, not finetuned" not in capsys.readouterr().err


def test_params_of_another_vocabulary_of_as_many_characters_are_refused(trained, capsys):
    """A corpus whose characters differ but not their count gave the params' ids other characters."""
    folder, params, evaluate = trained
    other = WIKI.replace("Q", "Z")  # one character for another
    assert len(set(other)) == len(set(WIKI)) and set(other) != set(WIKI)
    (folder / "wiki.txt").write_text(other, encoding="utf-8")
    with pytest.raises(ParamsError, match=r"m\.params: trained with another vocabulary of as many characters "
                                          r"\(.*m\.params\.card\.json says: id \d+ was '.' there, '.' here\); use the "
                                          r"same --pretrain_corpus_path the params were trained with \(their card "
                                          r"names .*wiki\.txt, changed since\)$"):
        driver.main(evaluate + ["--n_head", "2"])


def test_params_of_another_vocabularys_size_name_the_corpus_their_card_names(trained, capsys):
    """Params given another corpus (the demo's params with data/'s wiki.txt) were told to use "the same
    --pretrain_corpus_path the params were trained with", which their card names: the message names it too; and
    says so when that file has gone. Params without a card (the course's) name none."""
    folder, params, evaluate = trained
    (folder / "other.txt").write_text(WIKI + "Zoe Yu was born in Kyiv.\n", encoding="utf-8")  # more characters
    other = [f"--pretrain_corpus_path={folder / 'other.txt'}" if a.startswith("--pretrain_corpus_path=") else a
             for a in evaluate] + ["--n_head", "2"]
    with pytest.raises(ParamsError) as e:
        driver.main(other)
    assert str(e.value).endswith(f"; use the same --pretrain_corpus_path the params were trained with (their card "
                                 f"names {folder / 'wiki.txt'})"), str(e.value)
    os.rename(folder / "wiki.txt", folder / "moved.txt")
    with pytest.raises(ParamsError) as e:
        driver.main(other)
    assert str(e.value).endswith(f"(their card names {folder / 'wiki.txt'}, not there now)"), str(e.value)
    os.remove(folder / "m.params.card.json")
    with pytest.raises(ParamsError) as e:
        driver.main(other)
    assert str(e.value).endswith("use the same --pretrain_corpus_path the params were trained with"), str(e.value)


def test_finetuning_from_params_of_another_vocabulary_is_refused(trained, capsys, monkeypatch):
    """run.py's finetuning checked the card's vocabulary only under run.sh; run directly, the course's
    helper loaded the params with every id shifted, and the finetuned params' card then recorded the new
    vocabulary, hiding the mismatch from every later load."""
    folder, params, _ = trained
    monkeypatch.delenv("RUN_SH_MODE", raising=False)
    (folder / "other.txt").write_text(WIKI.replace("Q", "Z"), encoding="utf-8")
    (folder / "train.tsv").write_text("Where was Bo Li born?\tOslo\n", encoding="utf-8")
    with pytest.raises(ParamsError, match="trained with another vocabulary of as many characters"):
        driver.main(["--function=finetune", "--variant=vanilla", f"--pretrain_corpus_path={folder / 'other.txt'}",
                     f"--finetune_corpus_path={folder / 'train.tsv'}", f"--reading_params_path={params}",
                     f"--writing_params_path={folder / 'f.params'}", "--max_epochs", "1", "--n_head", "2", *SIZE])
    assert not (folder / "f.params").exists()


@pytest.mark.parametrize("damage, note", [("other params", None), ("no card", None), ("not json", "not JSON"),
                                         ("a list", "JSON of a list, not an object"), ("a folder", "a folder"),
                                         ("unreadable", "cannot be read (Permission denied)")])
def test_a_card_of_other_params_or_a_damaged_one_checks_nothing(trained, capsys, unreadable_file, damage, note):
    """Params written since without a card (the course's, copied in) load as the course's would. A card that
    cannot be read says so in a note (its checks were skipped without a word: the fuzz audit), once a run, with
    its fix: one the user made unreadable (chmod 000; made here, as root reads anything) is made readable again,
    not removed, which would lose its checks for good (permission audit)."""
    folder, params, evaluate = trained
    card = folder / "m.params.card.json"
    fix = "remove it (run.py writes a card beside the params it trains)"
    if damage == "other params":
        state = torch.load(params)
        torch.save({k: v + 1 for k, v in state.items()}, params)
    elif damage in ("no card", "a folder"):
        card.unlink()
        if damage == "a folder":
            card.mkdir()
    elif damage == "unreadable":
        unreadable_file(card)
        fix = f"make it readable (chmod u+r {card})"
    else:
        card.write_text("{not json" if damage == "not json" else json.dumps([2]), encoding="utf-8")
    if damage not in ("unreadable", "other params", "no card"):
        note += ", not a card run.py writes"
    assert read_card(str(params)) is None
    capsys.readouterr()
    driver.main(evaluate + ["--n_head", "4"])  # unchecked: it loads
    assert (folder / "dev.predictions").exists()
    notes = [line for line in capsys.readouterr().err.splitlines() if "card.json" in line]
    assert notes == ([f"note: {card}: {note}, so the --n_head and vocabulary of {params} are not checked; {fix}"]
                     if note else []), notes
    from submission.card import card_mismatch
    card_mismatch(str(params), None)  # a second look in the same run (finetuning looks twice): said once
    assert "card.json" not in capsys.readouterr().err


@pytest.mark.parametrize("heads", [0, -2, True])
def test_a_cards_heads_that_are_no_count_are_not_believed(trained, capsys, heads):
    """A card edited by hand to `"n_head": 0` (its sha256 still the params') was believed: the load then asked
    for --n_head 0, which no model takes (and `true` read as "trained with True attention heads"). Heads that are
    no count of at least one are no record of heads (text and null were never read as one)."""
    folder, params, evaluate = trained
    card = folder / "m.params.card.json"
    record = json.loads(card.read_text(encoding="utf-8"))
    record["n_head"] = heads
    card.write_text(json.dumps(record), encoding="utf-8")
    from submission.card import card_heads
    assert read_card(str(params)) is not None and card_heads(read_card(str(params))) is None
    driver.main(evaluate + ["--n_head", "4"])  # unchecked: it loads
    assert (folder / "dev.predictions").exists()


def test_a_card_that_cannot_be_written_costs_only_its_checks(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GPT_NUM_THREADS", "1")
    (tmp_path / "wiki.txt").write_text(WIKI, encoding="utf-8")
    params = tmp_path / "m.params"
    (tmp_path / "m.params.card.json").mkdir()
    driver.main(["--function=pretrain", "--variant=vanilla", f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}",
                 f"--writing_params_path={params}", "--max_epochs", "1", "--batch_size", "4", "--n_head", "2", *SIZE])
    out, err = capsys.readouterr()
    assert params.is_file() and f"Params written to {params}" in out
    note = [line for line in err.splitlines() if line.startswith("note:")]  # (tqdm's bar is on stderr too)
    assert len(note) == 1 and note[0].startswith(f"note: {params}.card.json not written, so loading {params} will not "
                                                 f"check its --n_head and vocabulary ({params}.card.json: "), err


def test_load_params_checks_the_vocabulary_only_when_given(trained):
    """The course's helper loads without a vocabulary (itos): only the heads are checked there."""
    folder, params, _ = trained
    vocab = CharCorruptionDataset(WIKI, 32)
    model = GPT(GPTConfig(vocab.vocab_size, 32, n_layer=1, n_head=2, n_embd=16))
    shifted = {**vocab.itos, 1: vocab.itos[2], 2: vocab.itos[1]}  # two ids swapped
    load_params(model, str(params))
    with pytest.raises(ParamsError, match="another vocabulary"):
        load_params(model, str(params), itos=shifted)
    assert card_path(str(params)) == str(params) + ".card.json"


def test_params_of_another_size_name_the_heads_their_card_records(trained):
    """A size mismatch named the flags the file's shapes show and, for vanilla, "the --n_head it was trained
    with: a vanilla file does not record it", when its card beside it did."""
    folder, params, evaluate = trained
    with pytest.raises(ParamsError) as e:
        driver.main(evaluate[:-len(SIZE)] + ["--n_layer", "2", "--n_embd", "16", "--block_size", "32"])
    assert "(the file looks like --n_layer 1 --n_embd 16 --block_size 32 --n_head 2)" in str(e.value)
    os.unlink(card_path(str(params)))
    with pytest.raises(ParamsError) as e:
        driver.main(evaluate[:-len(SIZE)] + ["--n_layer", "2", "--n_embd", "16", "--block_size", "32"])
    assert "--block_size 32, with the --n_head it was trained with: a vanilla file does not record it)" in str(e.value)


def test_a_vocabulary_mismatch_names_the_first_id_that_differs(trained):
    """The card's message points at the id whose character changed (ids counted from 0, as itos counts them)."""
    folder, params, _ = trained
    vocab = CharCorruptionDataset(WIKI, 32)
    model = GPT(GPTConfig(vocab.vocab_size, 32, n_layer=1, n_head=2, n_embd=16))
    shifted = {**vocab.itos, 1: vocab.itos[2], 2: vocab.itos[1]}  # ids 1 and 2 swapped: id 0 is the same
    with pytest.raises(ParamsError) as e:
        load_params(model, str(params), itos=shifted)
    assert f"says: id 1 was {vocab.itos[1]!r} there, {vocab.itos[2]!r} here)" in str(e.value), str(e.value)


def test_no_card_is_written_for_params_that_are_no_regular_file(tmp_path, capsys):
    """Params sent to /dev/null (or anything but a regular file) have nothing to describe: no card is written beside
    them (a /dev/null.card.json as root) and nothing is said."""
    vocab = CharCorruptionDataset(WIKI, 32)
    model = GPT(GPTConfig(vocab.vocab_size, 32, n_layer=1, n_head=2, n_embd=16))
    folder = tmp_path / "m.params"
    folder.mkdir()
    write_card(str(folder), model, vocab.itos)
    assert os.listdir(tmp_path) == ["m.params"]
    if os.path.exists(os.devnull):
        try:
            write_card(os.devnull, model, vocab.itos)
            assert not os.path.exists(card_path(os.devnull))
        finally:
            if os.path.isfile(card_path(os.devnull)):  # only where the check failed
                os.unlink(card_path(os.devnull))
    assert capsys.readouterr().err == ""


def small_params(path, text, corpus=None):
    """Params of a one-layer vanilla GPT of `text`'s vocabulary, with their card (recording `corpus`, a
    pretrain_corpus entry, when given)."""
    ds = CharCorruptionDataset(text, 32)
    model = GPT(GPTConfig(ds.vocab_size, 32, n_layer=1, n_head=2, n_embd=16))
    torch.save(model.state_dict(), path)
    write_card(str(path), model, ds.itos, corpus=corpus)
    return str(path)


TEXT = "Ann Lee was born in Lima.\nBo Li was born in Oslo.\n" * 3


def test_the_corpus_of_a_card_is_found_past_a_folder_without_one_and_in_a_file_with_a_mark(tmp_path):
    """Mutation audit of corpus_folder: a folder without a wiki.txt is passed over, not the end of the
    search, and a wiki.txt saved with a byte-order mark is read as dataset.read_text reads it; a card
    written without a function records none."""
    from submission.card import corpus_folder
    params = small_params(tmp_path / "v.params", TEXT)
    marked = tmp_path / "marked"
    marked.mkdir()
    (marked / "wiki.txt").write_text("\ufeff" + TEXT, encoding="utf-8")
    assert corpus_folder(params, [str(tmp_path / "none"), str(marked)]) == str(marked)
    assert "function" not in read_card(params)


def worlds(tmp_path, *names):
    """Folders `names` under tmp_path, each with a wiki.txt of TEXT's characters but its own text (TEXT and
    another i biographies): corpora that the vocabulary alone does not tell apart."""
    folders = []
    for i, name in enumerate(names):
        (tmp_path / name).mkdir()
        (tmp_path / name / "wiki.txt").write_text(TEXT + "Bo Li was born in Lima.\n" * i, encoding="utf-8")
        folders.append(str(tmp_path / name))
    texts = [open(os.path.join(f, "wiki.txt"), encoding="utf-8").read() for f in folders]
    assert len(set(texts)) == len(texts) and all(sorted(set(t)) == sorted(set(TEXT)) for t in texts)
    return folders


def test_the_folder_of_the_corpus_a_card_records_is_chosen_before_one_of_the_same_characters(tmp_path, monkeypatch):
    """corpus_folder took the first folder whose wiki.txt has the card's vocabulary: of two corpora of one
    character set (the course's wiki.txt and data/wiki.txt, a world made again) the first listed, whichever the
    params read. The folder whose wiki.txt has the sha256 the card records comes first, wherever it is listed;
    where none has it, or the card has no such field (an earlier version's), the vocabulary's rule as before,
    and no folder's file is hashed for a card without the field."""
    from submission import card
    from submission.card import corpus_folder, corpus_record
    first, second, elsewhere = worlds(tmp_path, "first", "second", "elsewhere")
    params = small_params(tmp_path / "v.params", TEXT, corpus_record(os.path.join(second, "wiki.txt")))
    assert corpus_folder(params, [first, second]) == second
    assert corpus_folder(params, [second, first]) == second
    assert corpus_folder(params, [first, str(tmp_path / "none"), elsewhere]) == first  # none of its bytes
    assert corpus_folder(params, [str(tmp_path / "none")]) is None
    crlf = tmp_path / "crlf"  # the vocabulary's rule reads as dataset.read_text does: \r\n as \n
    crlf.mkdir()
    (crlf / "wiki.txt").write_bytes(TEXT.replace("\n", "\r\n").encode("utf-8"))
    assert corpus_folder(params, [str(crlf), second]) == second
    assert corpus_folder(params, [str(crlf), elsewhere]) == str(crlf)

    def hashed(data):
        raise AssertionError("a folder's wiki.txt hashed for a card that records no corpus")
    monkeypatch.setattr(card, "_bytes_sha256", hashed)
    params = small_params(tmp_path / "old.params", TEXT)  # a card without the field
    assert corpus_folder(params, [first, second]) == first
    assert corpus_folder(params, [str(crlf), second]) == str(crlf)


def test_the_tools_read_the_corpus_the_params_card_records_before_the_world_beside_them(tmp_path, capsys):
    """modelflags.settings_from_params (ask, memorised, plot attention without --data-dir) read the data/ beside
    the params whenever its wiki.txt had their vocabulary, even where their card records the repo's data/ wiki.txt,
    a text of the same characters: the repo's is read, and no note is needed for it."""
    import argparse
    import modelflags
    from submission.card import corpus_record
    run = tmp_path / "run"
    run.mkdir()
    beside, repo = worlds(run, "data", "repo_data")
    params = small_params(run / "v.params", TEXT, corpus_record(os.path.join(repo, "wiki.txt")))
    args = argparse.Namespace(params=params, data_dir=None, **dict.fromkeys(modelflags.COURSE_SIZE))
    modelflags.settings_from_params(argparse.ArgumentParser(), args, repo)
    assert args.data_dir == repo and capsys.readouterr().err == ""
    params = small_params(run / "v.params", TEXT, corpus_record(os.path.join(beside, "wiki.txt")))
    args = argparse.Namespace(params=params, data_dir=None, **dict.fromkeys(modelflags.COURSE_SIZE))
    modelflags.settings_from_params(argparse.ArgumentParser(), args, repo)
    assert args.data_dir == beside and f"note: reading {beside}" in capsys.readouterr().err


def test_a_card_beside_a_fifo_is_not_read(tmp_path):
    """Mutation audit of read_card: checking a card's sha256 reads the params; a FIFO named as params (a
    shell's process substitution) would block that read for ever, so its card is not read."""
    import threading
    fifo = tmp_path / "v.params"
    os.mkfifo(fifo)
    with open(card_path(str(fifo)), "w", encoding="utf-8") as f:
        json.dump({"params_sha256": "0" * 64, "n_head": 2, "vocab": "ab"}, f)
    got = []
    reader = threading.Thread(target=lambda: got.append(read_card(str(fifo))), daemon=True)
    reader.start()
    reader.join(5)
    blocked = reader.is_alive()
    if blocked:  # let the blocked reader go
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(10)
    assert not blocked and got == [None]


def test_the_heads_a_card_records_are_taken_only_when_they_are_a_count(tmp_path):
    """Mutation audit of params_shape: a card edited to say 0 heads, or true, says nothing of the heads (a
    vanilla file's shapes do not say them): the tools then take the course's or ask for --n_head."""
    from submission.params import params_shape
    params = small_params(tmp_path / "v.params", TEXT)
    assert params_shape(params) == dict(n_layer=1, n_embd=16, block_size=32, synthesizer=False, n_head=2)
    card = json.loads(open(card_path(params), encoding="utf-8").read())
    for heads in (0, -2, True):
        with open(card_path(params), "w", encoding="utf-8") as f:
            json.dump(dict(card, n_head=heads), f)
        assert "n_head" not in params_shape(params), heads


def test_a_card_s_heads_that_are_no_count_are_not_offered_as_a_size_flag(tmp_path):
    """Mutation audit of _size_error: params of another size name the flags they look like, with the card's
    --n_head for a vanilla file; a card edited to say true heads is no count (bool is an int to Python), so
    the fix asks for the heads the run was trained with instead of offering '--n_head True'."""
    params = small_params(tmp_path / "v.params", TEXT)
    card = json.loads(open(card_path(params), encoding="utf-8").read())
    vocab = torch.load(params, weights_only=True)["tok_emb.weight"].shape[0]
    other = GPT(GPTConfig(vocab, 32, n_layer=2, n_head=2, n_embd=16))
    with pytest.raises(ParamsError) as counted:
        load_params(other, params)
    assert counted.value.looks_like == "--n_layer 1 --n_embd 16 --block_size 32 --n_head 2"
    with open(card_path(params), "w", encoding="utf-8") as f:
        json.dump(dict(card, n_head=True), f)
    with pytest.raises(ParamsError) as e:
        load_params(other, params)
    assert e.value.looks_like == "--n_layer 1 --n_embd 16 --block_size 32"
    assert str(e.value).endswith("(the file looks like --n_layer 1 --n_embd 16 --block_size 32, with the --n_head "
                                 "it was trained with: a vanilla file does not record it)")


def test_the_world_beside_the_params_wins_over_the_repo_s_of_the_same_characters(tmp_path, capsys):
    """Mutation audit of modelflags.settings_from_params: the data/ beside the params (as the demo keeps its
    world) is read before the repo's, even where both have the vocabulary the card records; and a file that
    does not load has no heads to ask for (load_params explains it later)."""
    import argparse
    import modelflags
    run = tmp_path / "run"
    (run / "data").mkdir(parents=True)
    (run / "data" / "wiki.txt").write_text(TEXT, encoding="utf-8")
    repo = tmp_path / "repo_data"
    repo.mkdir()
    (repo / "wiki.txt").write_text(TEXT[::-1], encoding="utf-8")  # the same characters, another corpus
    params = small_params(run / "v.params", TEXT)

    def settings(path, **given):
        args = argparse.Namespace(params=path, data_dir=None, **dict(dict.fromkeys(modelflags.COURSE_SIZE), **given))
        return args, modelflags.settings_from_params(argparse.ArgumentParser(), args, str(repo))
    args, shape = settings(params)
    assert args.data_dir == str(run / "data") and (args.n_layer, args.n_head, args.n_embd) == (1, 2, 16)
    assert f"note: reading {run / 'data'}" in capsys.readouterr().err
    (tmp_path / "junk.params").write_bytes(b"not params")
    args, shape = settings(str(tmp_path / "junk.params"), n_embd=20)
    assert shape == {} and args.data_dir == str(repo) and args.n_head == modelflags.COURSE_SIZE["n_head"]


FT_WIKI = "Ada Quill was born in Lisbon.\nBo Li was born in Oslo.\nWhere was Ada Quill born?\n"
FT_TRAIN = "Where was Ada Quill born?\tLisbon\nWhere was Bo Li born?\tOslo\n"
FT_SIZE = ["--n_layer", "1", "--n_embd", "16", "--n_head", "2", "--block_size", "48", "--batch_size", "4"]


@pytest.fixture()
def ft_corpus(tmp_path, monkeypatch):
    monkeypatch.setenv("GPT_NUM_THREADS", "1")
    monkeypatch.delenv("RUN_SH_MODE", raising=False)
    (tmp_path / "wiki.txt").write_text(FT_WIKI, encoding="utf-8")
    (tmp_path / "train.tsv").write_text(FT_TRAIN, encoding="utf-8")
    return tmp_path


def finetune_argv(folder, params, *flags):
    return ["--function=finetune", "--variant=vanilla", f"--pretrain_corpus_path={folder / 'wiki.txt'}",
            f"--finetune_corpus_path={folder / 'train.tsv'}", f"--writing_params_path={params}", *FT_SIZE, *flags]


def test_finetuning_finetuned_params_is_said(ft_corpus, capsys):
    """Params whose card says finetune, given as the pretrained params, were finetuned again without a word."""
    first = ft_corpus / "first.params"
    driver.main(finetune_argv(ft_corpus, first, "--max_epochs", "1"))
    capsys.readouterr()
    driver.main(finetune_argv(ft_corpus, ft_corpus / "again.params", "--max_epochs", "1",
                              f"--reading_params_path={first}"))
    assert "were finetuned, not pretrained" in capsys.readouterr().err


def test_a_run_sh_mode_refuses_finetuned_params_as_pretrained_ones(ft_corpus, monkeypatch):
    """Under a run.sh mode the file read is the pretraining's: a finetune's params there are refused, naming the
    mode that makes them."""
    first = ft_corpus / "vanilla.pretrain.params"  # a finetune's params under the pretraining's name
    driver.main(finetune_argv(ft_corpus, first, "--max_epochs", "1"))
    monkeypatch.setenv("RUN_SH_MODE", "vanilla_finetune_with_pretrain")
    with pytest.raises(DataError, match="were finetuned, not pretrained") as e:
        driver.main(finetune_argv(ft_corpus, ft_corpus / "vanilla.finetune.params", "--max_epochs", "1",
                                  f"--reading_params_path={first}"))
    assert str(e.value).endswith("make the pretrained params with ./run.sh vanilla_pretrain"), str(e.value)
    assert not (ft_corpus / "vanilla.finetune.params").exists()


OTHER_WIKI = "Bo Li was born in Oslo.\nAda Quill was born in Lisbon.\nWhere was Ada Quill born?\n"  # WIKI's characters


def sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_notes(capsys, argv):
    """The run.py notes (stderr's lines that start so: tqdm's bar is there too) of run.py with `argv`, less the
    one on empty answers (a 1-epoch model's)."""
    capsys.readouterr()
    driver.main(argv)
    return [line for line in capsys.readouterr().err.splitlines()
            if line.startswith("run.py:") and "answers are empty" not in line]


def finetune(folder, written, reading=None, corpus="wiki.txt"):
    """argv of a 1-epoch finetuning on dev.tsv of `reading` (None: from scratch) into `written`, with `corpus`
    as --pretrain_corpus_path."""
    return (["--function=finetune", "--variant=vanilla", f"--pretrain_corpus_path={folder / corpus}",
             f"--finetune_corpus_path={folder / 'dev.tsv'}", f"--writing_params_path={written}", "--max_epochs",
             "1", "--n_head", "2", *SIZE] + ([f"--reading_params_path={reading}"] if reading is not None else []))


def evaluation(evaluate, params, corpus):
    """`evaluate` (the trained fixture's argv) of `params`, with `corpus` as --pretrain_corpus_path."""
    swap = {"--reading_params_path": params, "--pretrain_corpus_path": corpus}
    return [f"{a.split('=')[0]}={swap[a.split('=')[0]]}" if a.split("=")[0] in swap else a
            for a in evaluate] + ["--n_head", "2"]


@pytest.fixture()
def corpora(trained):
    """`trained`, with other.txt beside its wiki.txt: another corpus of the same characters."""
    folder, _, _ = trained
    (folder / "other.txt").write_text(OTHER_WIKI, encoding="utf-8")
    assert sorted(set(OTHER_WIKI)) == sorted(set(WIKI)) and OTHER_WIKI != WIKI
    return trained


def test_the_card_records_the_pretraining_corpus_and_finetuned_params_carry_it(corpora, capsys):
    """The card recorded the vocabulary, not which text of those characters the params were pretrained on. A
    pretraining's card records its corpus (sha256, and the path as given); finetuned params carry that of the
    params they started from, not the corpus at hand; from scratch, or from params whose card has no such field
    (one of an earlier version), nothing is known and nothing is recorded."""
    folder, params, _ = corpora
    wiki = {"sha256": sha(folder / "wiki.txt"), "path": str(folder / "wiki.txt"),
            "realpath": os.path.realpath(folder / "wiki.txt")}
    assert read_card(str(params))["pretrain_corpus"] == wiki
    run_notes(capsys, finetune(folder, folder / "f.params", params, corpus="other.txt"))
    assert read_card(str(folder / "f.params"))["pretrain_corpus"] == wiki  # what the weights read, not other.txt
    run_notes(capsys, finetune(folder, folder / "again.params", folder / "f.params"))  # finetuned again: still it
    assert read_card(str(folder / "again.params"))["pretrain_corpus"] == wiki
    run_notes(capsys, finetune(folder, folder / "scratch.params"))
    assert "pretrain_corpus" not in read_card(str(folder / "scratch.params"))
    card = json.loads((folder / "m.params.card.json").read_text(encoding="utf-8"))
    del card["pretrain_corpus"]  # the card of an earlier version: still the params' own, read as before
    (folder / "m.params.card.json").write_text(json.dumps(card), encoding="utf-8")
    assert run_notes(capsys, finetune(folder, folder / "old.params", params, corpus="other.txt")) == []
    assert read_card(str(folder / "old.params"))["function"] == "finetune"
    assert "pretrain_corpus" not in read_card(str(folder / "old.params"))


def test_finetuning_params_pretrained_on_another_corpus_of_the_same_characters_is_noted(corpora, capsys):
    """Params pretrained on one corpus, finetuned with another of the same characters (the course's wiki.txt and
    the embedded data/wiki.txt, a world made again) loaded without a word, and the finetuned model was asked about
    people it never read of. One note names both files; it is no refusal (it can be an experiment). The same
    corpus, or a copy of it elsewhere, says nothing; the same path rewritten since is named as an earlier one."""
    folder, params, _ = corpora
    wiki, other = folder / "wiki.txt", folder / "other.txt"
    said = run_notes(capsys, finetune(folder, folder / "f.params", params, corpus="other.txt"))
    assert said == [f"run.py: note: {params} were pretrained on {wiki} (sha256 {sha(wiki)[:12]}, their card says), "
                    f"not on --pretrain_corpus_path {other} (sha256 {sha(other)[:12]}), a text of the same "
                    f"characters: the people this finetuning asks about, likely those of {other}, are ones they "
                    f"never read of (unless that is the experiment: give the corpus they were pretrained on, or "
                    f"params pretrained on this one)"], said
    assert (folder / "f.params").is_file()
    (folder / "copy.txt").write_bytes(wiki.read_bytes())
    assert run_notes(capsys, finetune(folder, folder / "g.params", params)) == []
    assert run_notes(capsys, finetune(folder, folder / "g.params", params, corpus="copy.txt")) == []
    then = sha(wiki)
    wiki.write_text(OTHER_WIKI, encoding="utf-8")
    said = run_notes(capsys, finetune(folder, folder / "g.params", params))
    assert len(said) == 1 and said[0].startswith(f"run.py: note: {params} were pretrained on an earlier {wiki} "
                                                 f"(sha256 {then[:12]} then, {sha(wiki)[:12]} now; their card "
                                                 f"says): "), said


def test_a_corpus_of_the_same_relative_path_from_another_folder_is_not_called_an_earlier_one(
        tmp_path, monkeypatch, capsys):
    """Pretrained in one folder on `--pretrain_corpus_path wiki.txt`, finetuned in another on its own wiki.txt (a
    world made again, in a folder of its own): the note said the params "were pretrained on an earlier wiki.txt
    (sha256 ... then, ... now)", a file rewritten since, though that file is as it was and this is another.
    The card's real path tells them apart: the note names both as two files; the same file, reached by another
    path, rewritten since, is still an earlier one."""
    monkeypatch.setenv("GPT_NUM_THREADS", "1")
    monkeypatch.delenv("RUN_SH_MODE", raising=False)
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    (first / "wiki.txt").write_text(FT_WIKI, encoding="utf-8")
    other = "".join(reversed(FT_WIKI.splitlines(keepends=True)))  # the same characters, other bytes
    (second / "wiki.txt").write_text(other, encoding="utf-8")
    (second / "train.tsv").write_text(FT_TRAIN, encoding="utf-8")
    monkeypatch.chdir(first)
    driver.main(["--function=pretrain", "--variant=vanilla", "--pretrain_corpus_path=wiki.txt",
                 "--writing_params_path=p.params", "--max_epochs", "1", *FT_SIZE])
    params = first / "p.params"
    monkeypatch.chdir(second)
    said = run_notes(capsys, ["--function=finetune", "--variant=vanilla", "--pretrain_corpus_path=wiki.txt",
                              "--finetune_corpus_path=train.tsv", "--writing_params_path=f.params",
                              f"--reading_params_path={params}", "--max_epochs", "1", *FT_SIZE])
    assert len(said) == 1 and said[0].startswith(
        f"run.py: note: {params} were pretrained on wiki.txt (sha256 {sha(first / 'wiki.txt')[:12]}, their card "
        f"says), not on --pretrain_corpus_path wiki.txt (sha256 {sha(second / 'wiki.txt')[:12]}), a text of the "
        f"same characters: "), said
    then = sha(first / "wiki.txt")
    (first / "wiki.txt").write_text(other, encoding="utf-8")  # the pretraining's own file, rewritten
    said = run_notes(capsys, ["--function=finetune", "--variant=vanilla",
                              f"--pretrain_corpus_path={first / '.' / 'wiki.txt'}", "--finetune_corpus_path=train.tsv",
                              "--writing_params_path=g.params", f"--reading_params_path={params}", "--max_epochs",
                              "1", *FT_SIZE])
    assert len(said) == 1 and said[0].startswith(f"run.py: note: {params} were pretrained on an earlier wiki.txt "
                                                 f"(sha256 {then[:12]} then, "), said


def test_a_cards_corpus_path_with_terminal_escapes_is_shown_quoted():
    """(security audit) A card that comes with downloaded params names its corpus in text anyone wrote: one
    holding escape sequences cleared the screen and coloured what followed when run.py printed its note."""
    from submission.card import other_corpus_words
    ours = {"sha256": "b" * 64, "path": "data/wiki.txt"}
    plain = other_corpus_words("p.params", ({"sha256": "a" * 64, "path": "their/wiki.txt"}, ours))
    assert plain.startswith("p.params were pretrained on their/wiki.txt (sha256 aaaaaaaaaaaa, their card says)")
    hostile = other_corpus_words("p.params", ({"sha256": "\x1b[2J" + "a" * 60, "path": "\x1b]0;x\x07\x1b[31mFAKE"},
                                              ours))
    assert "\x1b" not in hostile and "\x07" not in hostile
    assert hostile.startswith("p.params were pretrained on '\\x1b]0;x\\x07\\x1b[31mFAKE' (sha256 '\\x1b[2Jaaaaaaaa'")


def test_evaluating_params_pretrained_on_another_corpus_is_noted(corpora, capsys):
    """An evaluation reads the corpus only for the vocabulary, so the answers are the params' all the same; but
    params whose card names another pretraining corpus are likely asked about people they never read of (a world
    made again, and its dev set): one note. Their own corpus, or a card without the field, says nothing."""
    folder, params, evaluate = corpora
    other = folder / "other.txt"
    run_notes(capsys, finetune(folder, folder / "f.params", params))
    assert run_notes(capsys, evaluation(evaluate, folder / "f.params", folder / "wiki.txt")) == []
    answers = (folder / "dev.predictions").read_bytes()
    said = run_notes(capsys, evaluation(evaluate, folder / "f.params", other))
    assert said == [f"run.py: note: {folder / 'f.params'} were pretrained on {folder / 'wiki.txt'} (sha256 "
                    f"{sha(folder / 'wiki.txt')[:12]}, their card says), not on --pretrain_corpus_path {other} "
                    f"(sha256 {sha(other)[:12]}), a text of the same characters: evaluating reads "
                    f"--pretrain_corpus_path only for its vocabulary (the same), so the answers do not change, but "
                    f"the model never read of the people of {other}, whom these questions likely ask about"], said
    assert (folder / "dev.predictions").read_bytes() == answers
    card = json.loads((folder / "f.params.card.json").read_text(encoding="utf-8"))
    del card["pretrain_corpus"]
    (folder / "f.params.card.json").write_text(json.dumps(card), encoding="utf-8")
    assert run_notes(capsys, evaluation(evaluate, folder / "f.params", other)) == []


@pytest.mark.parametrize("mode", [None, "vanilla_finetune_with_pretrain"])
def test_pretrained_params_or_a_course_file_are_finetuned_without_a_word(ft_corpus, monkeypatch, capsys, mode):
    """The check reads the card: params whose card says pretrain, or that have none (a course's file), are what
    a finetuning reads, and are neither noted by run.py nor refused under a run.sh mode."""
    pretrained = ft_corpus / "vanilla.pretrain.params"
    driver.main(["--function=pretrain", "--variant=vanilla", f"--pretrain_corpus_path={ft_corpus / 'wiki.txt'}",
                 f"--writing_params_path={pretrained}", "--max_epochs", "1", *FT_SIZE])
    if mode:
        monkeypatch.setenv("RUN_SH_MODE", mode)
    assert read_card(str(pretrained))["function"] == "pretrain"
    for name in ("with-card.params", "no-card.params"):
        if name == "no-card.params":  # then as a course's file
            os.remove(card_path(str(pretrained)))
        capsys.readouterr()
        driver.main(finetune_argv(ft_corpus, ft_corpus / name, "--max_epochs", "1",
                                  f"--reading_params_path={pretrained}"))
        assert "were finetuned" not in capsys.readouterr().err and (ft_corpus / name).exists()

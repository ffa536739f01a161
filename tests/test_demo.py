"""The demo's corpus subset (`src/demo.py --data-dir DIR --people N`): the first train and dev people
of a course-layout corpus, their wiki lines in order, and every question character in the vocabulary;
which corpus each setting runs on; the properties the CPU demo's generated world is chosen for; and
the `ask` command the demo ends with, which runs as printed.

Run:  python -m pytest -q tests/test_demo.py
"""
import json
import os
import re
import shlex
import shutil

import pytest
import torch

import ask
import demo
from submission.dataset import DataError, parse_tsv
from test_world import _surname_alone


def write(d, wiki, train, dev):
    d.mkdir()
    (d / "wiki.txt").write_text("".join(line + "\n" for line in wiki), encoding="utf-8")
    (d / "birth_places_train.tsv").write_text("".join(f"Where was {n} born?\t{p}\n" for n, p in train),
                                              encoding="utf-8")
    (d / "birth_dev.tsv").write_text("".join(f"Where was {n} born?\t{p}\n" for n, p in dev), encoding="utf-8")


def test_subset_keeps_the_first_people_and_adds_a_line_for_a_missing_character(tmp_path):
    people = [("Ann Bo", "Oslo"), ("Cy Du", "Rome"), ("Ed Fa", "Lima"), ("Gu Ha", "Kiev"), ("Io Ju", "Baku")]
    wiki = [f"{n}. {n} was born in {p}." for n, p in people]
    wiki[2] = "Ed Fa. Where was Ed Fa born? In Lima."  # the only 'W', 'h', '?': a train person left out
    write(tmp_path / "src", wiki, people[:3], people[3:])
    demo.subset_corpus(str(tmp_path / "src"), str(tmp_path / "out"), train=2, dev=1)
    lines = (tmp_path / "out" / "wiki.txt").read_text(encoding="utf-8").split("\n")
    assert lines == [wiki[0], wiki[1], wiki[3], wiki[2], ""]  # train 1-2, dev 1, then the line with 'W', '?'
    out = tmp_path / "out"
    tr = parse_tsv((out / "birth_places_train.tsv").read_text(encoding="utf-8"), "train")
    dv = parse_tsv((out / "birth_dev.tsv").read_text(encoding="utf-8"), "dev")
    assert [p for _, p, _ in tr] == ["Oslo", "Rome"] and [p for _, p, _ in dv] == ["Kiev"]
    vocab = set("".join(lines))
    assert all(set(q + p) <= vocab for q, p, _ in tr + dv)


def test_subset_of_a_world_told_several_times_keeps_each_kept_persons_tellings(tmp_path):
    """make_world --tellings 2 writes person i's second telling at line i + people (test people counted,
    from birth_test_inputs.tsv): the subset kept only the first lines, so `demo --data-dir` silently ran a
    world told once."""
    people = [("Ann Bo", "Oslo"), ("Cy Du", "Rome"), ("Ed Fa", "Lima"), ("Gu Ha", "Kiev"), ("Io Ju", "Baku")]
    first = [f"{n}. Where was {n} born? In {p}." for n, p in people]
    second = [f"In {p} {n} was born." for n, p in people]
    write(tmp_path / "src", first + second, people[:2], people[2:4])
    (tmp_path / "src" / "birth_test_inputs.tsv").write_text("Where was Io Ju born?\n", encoding="utf-8")
    demo.subset_corpus(str(tmp_path / "src"), str(tmp_path / "out"), train=1, dev=1)
    lines = (tmp_path / "out" / "wiki.txt").read_text(encoding="utf-8").split("\n")
    assert lines == [first[0], first[2], second[0], second[2], ""]  # train 1, dev 1, each twice
    # a blank line an editor left in the test questions is no person: 5 people still, told twice
    (tmp_path / "src" / "birth_test_inputs.tsv").write_text("\nWhere was Io Ju born?\n\n", encoding="utf-8")
    demo.subset_corpus(str(tmp_path / "src"), str(tmp_path / "out"), train=1, dev=1)
    assert (tmp_path / "out" / "wiki.txt").read_text(encoding="utf-8").split("\n") == lines
    (tmp_path / "src" / "birth_test_inputs.tsv").unlink()  # 10 lines for 4 people: not whole tellings
    demo.subset_corpus(str(tmp_path / "src"), str(tmp_path / "out"), train=1, dev=1)
    assert (tmp_path / "out" / "wiki.txt").read_text(encoding="utf-8").split("\n") == [first[0], first[2], ""]


def test_subset_larger_than_the_corpus_is_refused(tmp_path):
    people = [("Ann Bo", "Oslo"), ("Cy Du", "Rome")]
    write(tmp_path / "src", [f"{n}. Born in {p}?" for n, p in people], people[:1], people[1:])
    with pytest.raises(demo.DataError, match="has 1 train and 1 dev rows"):
        demo.subset_corpus(str(tmp_path / "src"), str(tmp_path / "out"), train=2, dev=2)


def test_retrieved_counts_right_answers_among_the_memorised_dev_rows(tmp_path):
    dev = [("Ann Bo", "Oslo"), ("Cy Du", "Rome"), ("Ed Fa", "Lima"), ("Gu Ha", "Kiev")]
    write(tmp_path / "d", ["x"], [], dev)
    preds = tmp_path / "p"
    preds.write_text("Oslo\nParis\nLima\n", encoding="utf-8")  # Gu Ha's line missing: not right
    assert demo.retrieved(str(preds), str(tmp_path / "d"), [0, 1, 3]) == 1  # Oslo yes, Rome no, Kiev missing
    assert demo.retrieved(str(preds), str(tmp_path / "d"), [0, 2]) == 2
    assert demo.retrieved(str(preds), str(tmp_path / "d"), []) == 0


def test_stored_is_the_share_of_train_and_dev_together_and_the_dev_rows(tmp_path, monkeypatch, capsys):
    """The table's memorised column counts the train and dev birthplaces together; the retrieved column
    looks at the dev rows memorised (indices into birth_dev.tsv), not the train ones."""
    import memorised
    asked = []

    def rows_for_params(params, data, args):
        asked.append((params, data, args.variant, args.n_layer, args.n_embd))
        return {"train": ([0], 4), "dev": ([1, 3], 4)}
    monkeypatch.setattr(memorised, "rows_for_params", rows_for_params)
    params = str(tmp_path / "synthesizer.pretrain.params")
    share, dev_rows = demo.stored(params, "synthesizer", "d", ["--n_layer", "2", "--n_embd", "64", "--seed", "0"])
    assert (share, dev_rows) == (37.5, [1, 3])  # 3 of the 8 probed
    assert asked == [(params, "d", "synthesizer", 2, 64)]
    assert "memorised by synthesizer.pretrain.params: 3 of 8 birthplaces" in capsys.readouterr().out


def test_a_corpus_without_dev_questions_is_one_error_not_a_division_by_zero(tmp_path):
    write(tmp_path / "d", ["x"], [("Ann Bo", "Oslo")], [])
    with pytest.raises(demo.DataError, match=r"birth_dev.tsv: no `question<TAB>place` lines; give a labelled file"):
        demo.london(str(tmp_path / "d"))


def test_pick_corpus_takes_a_whole_corpus_at_full_size_and_a_subset_otherwise(tmp_path):
    from argparse import Namespace
    people = [("Ann Bo", "Oslo"), ("Cy Du", "Rome"), ("Ed Fa", "Lima"), ("Gu Ha", "Kiev")]
    write(tmp_path / "src", [f"{n}. Where was {n} born? {p}." for n, p in people], people[:2], people[2:])
    src = str(tmp_path / "src")
    whole = Namespace(data_dir=src, people=None, train=None, seed=0)
    assert demo.pick_corpus(whole, "full", str(tmp_path / "o1")) == (src, f"{src} (all of it)")
    assert not (tmp_path / "o1").exists()  # nothing copied
    part = Namespace(data_dir=src, people=3, train=2, seed=0)
    data, source = demo.pick_corpus(part, "full", str(tmp_path / "o2"))
    assert data == str(tmp_path / "o2" / "data") and "first 2 train + 1 dev" in source
    assert len((tmp_path / "o2" / "data" / "birth_dev.tsv").read_text(encoding="utf-8").splitlines()) == 1
    embedded = Namespace(data_dir=None, people=None, train=None, seed=0)
    data, source = demo.pick_corpus(embedded, "full", str(tmp_path / "o3"))
    assert source.startswith("data/") and data.endswith("data")
    (tmp_path / "src" / "birth_dev.tsv").unlink()
    with pytest.raises(demo.DataError, match="birth_dev.tsv not found"):
        demo.pick_corpus(whole, "full", str(tmp_path / "o4"))


def test_a_subset_without_train_splits_people_as_the_size_does(tmp_path):
    """--people without --train: the size's train share (60 of 100 at --size cpu) of the people are train
    people, the rest dev."""
    from argparse import Namespace
    people = [(f"P{i} Q", p) for i, p in enumerate(["Oslo", "Rome", "Lima", "Kiev", "Baku", "Riga", "Bern", "Doha"])]
    write(tmp_path / "src", [f"{n}. Where was {n} born? {p}." for n, p in people], people[:5], people[5:])
    data, source = demo.pick_corpus(Namespace(data_dir=str(tmp_path / "src"), people=5, train=None, seed=0), "cpu",
                                    str(tmp_path / "out"))
    assert source == f"{tmp_path / 'src'} (first 3 train + 2 dev people)"
    assert [ln.split("\t")[1] for ln in (tmp_path / "out" / "data" / "birth_places_train.tsv").read_text(
        encoding="utf-8").splitlines()] == ["Oslo", "Rome", "Lima"]
    assert [ln.split("\t")[1] for ln in (tmp_path / "out" / "data" / "birth_dev.tsv").read_text(
        encoding="utf-8").splitlines()] == ["Riga", "Bern"]


def test_cpu_demo_world_keeps_every_dev_answer_among_the_finetuning_answers():
    """The CPU demo's world (data/README.md, "The CPU demo's world"): the finetuned model answers
    almost only with places it saw as finetuning answers, so every dev birthplace must be one of
    them; always-London gets the course's 5%; the person is named in full in every line; each life
    is told three times."""
    import make_world
    size = demo.SIZES["cpu"]
    world = make_world.build_world(people=size.people, train=size.train, dev=size.dev, seed=0, **size.world_args)
    train_places = {p for _, p in world.train}
    assert all(p in train_places for _, p in world.dev)
    assert sum(p == "London" for _, p in world.dev) / len(world.dev) == 0.05
    assert len(world.wiki) == 3 * size.people
    assert _surname_alone(world) <= 0.02 * len(world.wiki)  # a surname alone only where another person shares it


def test_the_corpus_written_under_out_never_lands_on_an_input_corpus(tmp_path):
    """--out whose data/ is the --data-dir (or the repo's data/) would overwrite the user's corpus."""
    import os
    from argparse import Namespace
    people = [("Ann Bo", "Oslo"), ("Cy Du", "Rome"), ("Ed Fa", "Lima"), ("Gu Ha", "Kiev")]
    write(tmp_path / "data", [f"{n}. Where was {n} born? {p}." for n, p in people], people[:2], people[2:])
    before = {n: (tmp_path / "data" / n).read_bytes() for n in os.listdir(tmp_path / "data")}
    part = Namespace(data_dir=str(tmp_path / "data"), people=3, train=2, seed=0)
    with pytest.raises(demo.DataError, match="the demo writes its corpus there, over .* give another --out"):
        demo.pick_corpus(part, "cpu", str(tmp_path))
    assert {n: (tmp_path / "data" / n).read_bytes() for n in os.listdir(tmp_path / "data")} == before
    repo = os.path.dirname(demo.HERE)
    generated = Namespace(data_dir=None, people=None, train=None, seed=0)
    with pytest.raises(demo.DataError, match="the demo writes its corpus there"):
        demo.pick_corpus(generated, "cpu", repo)  # --out . from the repo root: data/ is the embedded corpus
    with pytest.raises(demo.DataError, match="the demo writes its corpus there"):
        demo.pick_corpus(generated, "cpu", demo.HERE)  # --out src: src/data/ is where the course keeps its data


def test_the_demo_ends_with_an_ask_command_that_runs_as_printed(tmp_path, capsys):
    """It names a dev person the vanilla model answered right, and the sizes and paths the demo used."""
    from submission import GPT, GPTConfig
    from submission.dataset import CharCorruptionDataset
    data = tmp_path / "data"
    write(data, ["Ann Bo. Born in Oslo.", "Cy Du. Born in Rome.", "Ed Fa. Born in Lima. Where was he born?"],
          [("Ann Bo", "Oslo")], [("Cy Du", "Rome"), ("Ed Fa", "Lima")])
    out = tmp_path / "work dir"  # a space: the printed paths are quoted
    out.mkdir()
    assert demo.ask_hint(str(out), str(data), []) is None  # no finetuned vanilla model: no command
    vocab = CharCorruptionDataset((data / "wiki.txt").read_text(encoding="utf-8"), 128)
    torch.save(GPT(GPTConfig(vocab.vocab_size, 128, n_layer=1, n_head=2, n_embd=16)).state_dict(),
               out / "vanilla.finetune.params")
    (out / "vanilla.pretrain.dev.predictions").write_text("Oslo\nLima\n", encoding="utf-8")  # row 2 right
    hint = demo.ask_hint(str(out), str(data), ["--n_layer", "1", "--n_head", "2", "--n_embd", "16", "--dropout",
                                               "0", "--seed", "3"])
    command = shlex.split(hint.splitlines()[1])
    assert command[:2] == ["./run.sh", "ask"] and command[-1] == "Where was Ed Fa born?"
    assert "--n_head" in command and "--data-dir" in command  # no card: what ask cannot read off the params
    assert ask.main(command[2:]) == 0
    assert capsys.readouterr().out.startswith("Where was Ed Fa born?\n  answer: ")
    # with their card (run.py writes one), and the world beside them as the demo keeps it: no flags
    from submission.card import write_card
    world = out / "data"
    shutil.copytree(data, world)
    write_card(str(out / "vanilla.finetune.params"), GPT(GPTConfig(vocab.vocab_size, 128, n_layer=1, n_head=2,
                                                                   n_embd=16)), vocab.itos, "finetune")
    hint = demo.ask_hint(str(out), str(world), ["--n_layer", "1", "--n_head", "2", "--n_embd", "16"])
    command = shlex.split(hint.splitlines()[1])
    assert command == ["./run.sh", "ask", "--params", str(out / "vanilla.finetune.params"), "Where was Ed Fa born?"]
    assert ask.main(command[2:]) == 0
    assert capsys.readouterr().out.startswith("Where was Ed Fa born?\n  answer: ")


def test_the_ask_command_prefers_a_person_retrieved_to_one_guessed_and_names_the_pretrained_params(tmp_path, capsys):
    """The first dev person answered right may be a guess (the demo's world: its first was a person whose
    birthplace pretraining had not stored): given the dev rows stored, the command names a person stored and
    retrieved, with --pretrained so that ask says so; it runs as printed."""
    from submission import GPT, GPTConfig
    from submission.dataset import CharCorruptionDataset
    data = tmp_path / "data"
    write(data, ["Ann Bo. Born in Oslo.", "Cy Du. Born in Rome.", "Ed Fa. Born in Lima. Where was he born?"],
          [("Ann Bo", "Oslo")], [("Cy Du", "Rome"), ("Ed Fa", "Lima")])
    out = tmp_path / "out"
    out.mkdir()
    vocab = CharCorruptionDataset((data / "wiki.txt").read_text(encoding="utf-8"), 128)
    for name in ("vanilla.finetune.params", "vanilla.pretrain.params"):
        torch.save(GPT(GPTConfig(vocab.vocab_size, 128, n_layer=1, n_head=2, n_embd=16)).state_dict(), out / name)
    (out / "vanilla.pretrain.dev.predictions").write_text("Rome\nLima\n", encoding="utf-8")  # both right
    size = ["--n_layer", "1", "--n_head", "2", "--n_embd", "16"]
    assert shlex.split(demo.ask_hint(str(out), str(data), size).splitlines()[1])[-1] == "Where was Cy Du born?"
    command = shlex.split(demo.ask_hint(str(out), str(data), size, stored=[1]).splitlines()[1])
    assert command[-3:] == ["--pretrained", str(out / "vanilla.pretrain.params"), "Where was Ed Fa born?"]
    assert ask.main(command[2:]) == 0
    assert "\n  pretraining: " in capsys.readouterr().out

def test_flags_for_run_py_are_named_where_the_demo_starts_and_in_its_table(tmp_path, capsys):
    """`./run.sh demo --n_layer 1` trains every step with run.py's flag; it says so, so that a table of
    a changed model is never read as the size's own."""
    import make_world
    data = tmp_path / "world"
    make_world.write_world(make_world.build_world(people=24, train=16, dev=8, seed=1), str(data))
    extra = ["--n_layer", "1", "--n_head", "2", "--n_embd", "16", "--max_epochs", "1"]
    results = demo.main(["--size", "cpu", "--data-dir", str(data), "--people", "24", "--train", "16",
                         "--variants", "nopretrain", "--out", str(tmp_path / "out")] + extra)
    assert [row[0] for row in results] == ["always London", "vanilla, no pretraining"]
    out = capsys.readouterr().out
    assert "; run.py flags given: --n_layer 1 --n_head 2 --n_embd 16 --max_epochs 1\n" in out.splitlines(True)[0]
    assert "cpu settings with --n_layer 1 --n_head 2 --n_embd 16 --max_epochs 1, cpu, " in out


def test_a_shortened_pretraining_is_named_and_resume_is_not(tmp_path, capsys, monkeypatch):
    """`./run.sh demo --pretrain-epochs 5` trains far less than the size's 150 epochs: the start line and the
    table's heading say so, so that its table is not read as the cpu setting's; --resume, which changes how a
    step starts and not what it makes, is named where the demo starts but not in the heading."""
    import make_world
    import plots
    data = tmp_path / "world"
    make_world.write_world(make_world.build_world(people=24, train=16, dev=8, seed=1), str(data))
    monkeypatch.setattr(demo.driver, "main", lambda argv: (8.0, 1.0) if "--function=evaluate" in argv else None)
    monkeypatch.setattr(demo, "stored", lambda params, variant, folder, run_args: (50.0, [1]))
    monkeypatch.setattr(demo, "retrieved", lambda predictions, folder, dev_rows: 0)
    monkeypatch.setattr(plots, "plot_demo_runs", lambda *a, **k: [])
    monkeypatch.setattr(demo, "ask_hint", lambda *a: None)
    demo.main(["--size", "cpu", "--data-dir", str(data), "--people", "24", "--train", "16", "--variants", "vanilla",
               "--pretrain-epochs", "5", "--out", str(tmp_path / "out"), "--resume"])
    out = capsys.readouterr().out
    assert out.splitlines()[0].endswith("; pretraining 5 epochs; run.py flags given: --resume")
    assert "; cpu settings with --pretrain-epochs 5, cpu, " in out


def test_the_table_gives_each_runs_accuracy_memorised_share_and_retrieved_count(tmp_path, capsys, monkeypatch):
    """Each row's figures are its own: always-London's share of the dev questions, each run's evaluation
    (correct of total), the pretrained model's memorised share and the dev people it retrieves, in percent
    where a percent sign says so (training stubbed: the figures, not the models, are checked here)."""
    import make_world
    import plots
    data = tmp_path / "world"
    make_world.write_world(make_world.build_world(people=24, train=16, dev=8, seed=1), str(data))  # 2 of 8 London
    evaluated = iter([(8.0, 3.0), (8.0, 5.0)])
    monkeypatch.setattr(demo.driver, "main", lambda argv: next(evaluated) if "--function=evaluate" in argv else None)
    monkeypatch.setattr(demo, "stored", lambda params, variant, folder, run_args: (62.5, [1, 4]))
    monkeypatch.setattr(demo, "retrieved", lambda predictions, folder, dev_rows: len(dev_rows) - 1)
    monkeypatch.setattr(plots, "plot_demo_runs", lambda *a, **k: [])
    monkeypatch.setattr(demo, "ask_hint", lambda *a: None)
    results = demo.main(["--size", "cpu", "--data-dir", str(data), "--people", "24", "--train", "16",
                         "--variants", "nopretrain,vanilla", "--out", str(tmp_path / "out")])
    assert [row[:4] for row in results] == [("always London", 25.0, None, None),
                                           ("vanilla, no pretraining", 37.5, None, None),
                                           ("vanilla, pretrained + finetuned", 62.5, 62.5, "1 of 2")]
    out = capsys.readouterr().out
    assert "\nDev accuracy (8 questions, " in out
    table = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| --")]
    rows = [[cell.strip() for cell in line.split("|")[1:5]] for line in table]
    assert rows == [["run", "dev accuracy", "memorised", "retrieved"],
                    ["always London", "25.0%", "-", "-"],
                    ["vanilla, no pretraining", "37.5%", "-", "-"],
                    ["vanilla, pretrained + finetuned", "62.5%", "62.5%", "1 of 2"]]
    # the table is kept beside the runs too (it was only printed), as printed, heading included
    saved = (tmp_path / "out" / demo.TABLE).read_text(encoding="utf-8")
    assert saved.startswith("Dev accuracy (8 questions, ") and saved.endswith(table[-1] + "\n")
    assert [line for line in saved.splitlines() if line.startswith("| ") and not line.startswith("| --")] == table
    assert f"wrote {tmp_path / 'out' / demo.TABLE}" in out


def test_each_runs_minutes_are_its_own_steps_and_the_heading_adds_them_up(tmp_path, capsys, monkeypatch):
    """The minutes column gives each run the minutes of its own steps (a training step --resume kept counts
    the minutes it took then, in its own run's row only), in minutes; the heading's total is all of them
    (a clock that only the stubbed steps move: each training two minutes, each evaluation half of one)."""
    import types

    import make_world
    import plots
    data = tmp_path / "world"
    make_world.write_world(make_world.build_world(people=24, train=16, dev=8, seed=1), str(data))
    clock = [1000.0]
    monkeypatch.setattr(demo, "time", types.SimpleNamespace(time=lambda: clock[0]))

    def step(argv):
        evaluation = "--function=evaluate" in argv
        clock[0] += 30.0 if evaluation else 120.0
        return (8.0, 4.0) if evaluation else None
    monkeypatch.setattr(demo.driver, "main", step)
    monkeypatch.setattr(demo, "stored", lambda params, variant, folder, run_args: (50.0, [0]))
    monkeypatch.setattr(demo, "retrieved", lambda predictions, folder, dev_rows: 1)
    monkeypatch.setattr(plots, "plot_demo_runs", lambda *a, **k: [])
    monkeypatch.setattr(demo, "ask_hint", lambda *a: None)
    # --resume finds the no-pretraining run's training finished before, in ten minutes
    monkeypatch.setattr(demo, "finished_before", lambda out, name, key: name == "vanilla.model.params")
    monkeypatch.setattr(demo, "step_seconds", lambda out, name: 600.0 if name == "vanilla.model.params" else 0.0)
    results = demo.main(["--size", "cpu", "--data-dir", str(data), "--people", "24", "--train", "16",
                         "--variants", "nopretrain,vanilla", "--out", str(tmp_path / "out"), "--resume"])
    assert [row[4] for row in results] == [0.0, 600.0 + 30.0, 120.0 + 120.0 + 30.0]
    out = capsys.readouterr().out
    table = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| --")]
    assert [[cell.strip() for cell in line.split("|")[1:-1]][-1] for line in table] == ["minutes", "0.0", "10.5", "4.5"]
    assert ", 15.0 min in all). " in out  # 10 kept, 0.5 + 4.5 run now


def test_resume_keeps_a_finished_steps_minutes_in_the_table(tmp_path, capsys):
    """A step --resume keeps counts the minutes it took when it ran: the table read 0.0 for a kept training."""
    import make_world
    data = tmp_path / "world"
    make_world.write_world(make_world.build_world(people=24, train=16, dev=8, seed=1), str(data))
    out = tmp_path / "out"
    argv = ["--size", "cpu", "--data-dir", str(data), "--people", "24", "--train", "16", "--variants", "nopretrain",
            "--out", str(out), "--n_layer", "1", "--n_head", "2", "--n_embd", "16"]
    first = demo.main(argv)[1][4]
    took = demo.step_seconds(str(out), "vanilla.model.params")
    assert 0 < took <= first + 0.05  # (recorded to a tenth of a second)
    record = out / demo.DONE  # as if that training had taken ten minutes: the resumed table must say so
    done = json.loads(record.read_text())
    done["vanilla.model.params"]["seconds"] = 600.0
    record.write_text(json.dumps(done))
    capsys.readouterr()
    again = demo.main(argv + ["--resume"])[1][4]
    said = capsys.readouterr().out
    assert "vanilla.model.params kept: " in said
    assert 600 <= again < 600 + first  # the kept training's seconds, beside the evaluation run anew
    heading = said[said.index("Dev accuracy ("):].split("\n")[0]  # the heading's total counts them too
    minutes = float(heading.split(" min in all)")[0].rsplit(", ", 1)[1])
    assert 10.0 <= minutes <= 11.0, heading  # the kept ten, and this run's few seconds (a loaded machine's more)
    assert (out / demo.TABLE).read_text().startswith(heading + "\n")


@pytest.mark.parametrize("seconds", ['"12"', "-5", "NaN", "Infinity", "1e308", "1" + "0" * 400, "null", "[1]", "true"])
def test_a_hand_edited_steps_seconds_count_as_unknown(tmp_path, seconds):
    """The record of finished steps is a JSON file a user can edit: a number no step took (an integer beyond a
    float's range was an OverflowError traceback when the table summed it) counts as not recorded."""
    (tmp_path / demo.DONE).write_text('{"vanilla.model.params": {"key": "k", "params": "p", "seconds": %s}}'
                                      % seconds, encoding="utf-8")
    assert demo.step_seconds(str(tmp_path), "vanilla.model.params") == 0.0
    (tmp_path / demo.DONE).write_text('{"vanilla.model.params": {"seconds": 120}}', encoding="utf-8")
    assert demo.step_seconds(str(tmp_path), "vanilla.model.params") == 120.0


def test_a_table_file_of_the_users_in_out_is_refused(tmp_path):
    (tmp_path / demo.TABLE).write_text("my notes\n", encoding="utf-8")
    with pytest.raises(demo.DataError, match=f"{demo.TABLE}: not written by the demo"):
        demo.check_out_folder(str(tmp_path))


def _one_step_demo(tmp_path):
    """(--out, argv) of a demo of one tiny training run (no pretraining, 2 epochs) on a world of 24 people, saving its
    training state at every epoch's end."""
    import make_world
    data = tmp_path / "world"
    make_world.write_world(make_world.build_world(people=24, train=16, dev=8, seed=1), str(data))
    out = tmp_path / "out"
    argv = ["--size", "cpu", "--data-dir", str(data), "--people", "24", "--train", "16", "--variants", "nopretrain",
            "--out", str(out), "--n_layer", "1", "--n_head", "2", "--n_embd", "16", "--max_epochs", "2",
            "--state_every", "0"]
    return out, argv


def interrupted_once_saved(monkeypatch, state, argv):
    """demo.main(argv), stopped by a Ctrl-C at the first training step after `state` was saved."""
    from submission.trainer import TrainingRun
    original = TrainingRun.step

    def step(self, x, y):
        if state.exists():
            raise KeyboardInterrupt
        return original(self, x, y)
    with monkeypatch.context() as m:
        m.setattr(TrainingRun, "step", step)
        with pytest.raises(KeyboardInterrupt):
            demo.main(argv)


def test_a_ctrl_c_once_a_steps_params_are_written_keeps_the_step_for_resume(tmp_path, capsys, monkeypatch):
    """A Ctrl-C during a training step's params write is held to the write's end and raised before run.py
    returns: the step had finished, but the demo recorded it as done only after that, so --resume trained it
    again (at full size, a whole pretraining). Params written by the step are its result: recorded as done."""
    out, argv = _one_step_demo(tmp_path)
    original = demo.driver.main

    def main(args):
        original(args)
        raise KeyboardInterrupt  # as the held Ctrl-C is raised, once the params, card and log are written

    with monkeypatch.context() as m:
        m.setattr(demo.driver, "main", main)
        with pytest.raises(KeyboardInterrupt):
            demo.main(argv)
    assert capsys.readouterr().err.splitlines()[-1] == (
        "demo: the same command with --resume keeps the training steps done (vanilla.model.params)")
    trained = (out / "vanilla.model.params").read_bytes()
    demo.main(argv + ["--resume"])
    assert "demo: vanilla.model.params kept: its step finished before" in capsys.readouterr().out
    assert (out / "vanilla.model.params").read_bytes() == trained


def test_an_interrupted_demos_training_state_is_started_over(tmp_path, capsys, monkeypatch):
    """run.py refuses a fresh run over an interrupted run's state; the demo starts its runs over, so a
    demo stopped by Ctrl-C runs again with the same command. A state it did not write (an interrupted
    course run's, with --out src/submission) is refused before any work, as its params would be."""
    out, argv = _one_step_demo(tmp_path)
    state = out / "vanilla.model.params.state"
    interrupted_once_saved(monkeypatch, state, argv)  # at epoch 2's first step
    assert state.exists()
    capsys.readouterr()
    results = demo.main(argv)
    assert [row[0] for row in results] == ["always London", "vanilla, no pretraining"]
    assert not state.exists() and "does not read" not in capsys.readouterr().err  # (--max_epochs: the demo's)
    foreign = tmp_path / "course"
    foreign.mkdir()
    torch.save({"format": "cs224n-a5 training state, version 1"}, foreign / "vanilla.model.params.state")
    with pytest.raises(DataError, match=r"vanilla.model.params.state: not written by the demo"):
        demo.main([str(foreign) if a == str(out) else a for a in argv])
    assert (foreign / "vanilla.model.params.state").exists()


def test_an_interrupted_demo_goes_on_with_resume_as_its_ctrl_c_message_says(tmp_path, capsys, monkeypatch):
    """A Ctrl-C after a state save prints run.py's "the same command with --resume continues from there".
    The demo gave --resume to every step, so the step finished before the Ctrl-C (its params there, no
    state) stopped with "no training state to resume ... leave out --resume", as did the steps after the
    interrupted one: --resume goes on from the interrupted step, keeps the training steps that finished
    with the same flags and inputs (a whole pretraining, at full size), and runs the others as without it."""
    import make_world
    data = tmp_path / "world"
    make_world.write_world(make_world.build_world(people=24, train=16, dev=8, seed=1), str(data))
    out = tmp_path / "out"
    argv = ["--size", "cpu", "--data-dir", str(data), "--people", "24", "--train", "16",
            "--variants", "nopretrain,vanilla", "--out", str(out),
            "--n_layer", "1", "--n_head", "2", "--n_embd", "16", "--max_epochs", "2", "--state_every", "0"]
    interrupted_once_saved(monkeypatch, out / "vanilla.pretrain.params.state", argv)  # at epoch 1's end
    assert (out / "vanilla.model.params").exists() and not (out / "vanilla.model.params.state").exists()
    assert (out / "vanilla.pretrain.params.state").exists()
    said = capsys.readouterr().err.splitlines()
    assert "with --resume continues from there" in said[-2]
    assert said[-1] == ("demo: the same command with --resume keeps the training steps done (vanilla.model.params) "
                        "and goes on from vanilla.pretrain.params.state")
    finished = (out / "vanilla.model.params").read_bytes()
    # the minutes before the Ctrl-C count for the step that goes on from its state (the table counted only the
    # minutes after it); set to 1000 s here to tell them from this run's
    done = json.loads((out / demo.DONE).read_text(encoding="utf-8"))
    assert done["vanilla.pretrain.params.state"]["seconds"] >= 0  # recorded (to a tenth of a second)
    done["vanilla.pretrain.params.state"]["seconds"] = 1000.0
    (out / demo.DONE).write_text(json.dumps(done), encoding="utf-8")
    results = demo.main(argv + ["--resume"])
    assert 1000 <= demo.step_seconds(str(out), "vanilla.pretrain.params") <= results[2][4] + 0.05
    assert [row[0] for row in results] == ["always London", "vanilla, no pretraining",
                                           "vanilla, pretrained + finetuned"]
    said = capsys.readouterr()
    assert "resuming from " in said.out + said.err
    # the step finished before the Ctrl-C is kept, not trained again (at full size: a whole pretraining)
    assert said.out.count(" kept: its step finished before") == 1
    assert "demo: vanilla.model.params kept: its step finished before with these flags and inputs" in said.out
    assert (out / "vanilla.model.params").read_bytes() == finished
    assert not list(out.glob("*.state"))
    trained = {name: (out / name).read_bytes() for name in ("vanilla.pretrain.params", "vanilla.finetune.params")}
    again = demo.main(argv + ["--resume"])  # all done: every training step kept, the table made again
    assert capsys.readouterr().out.count(" kept: its step finished before") == 3
    assert [row[1] for row in again] == [row[1] for row in results]
    assert all((out / name).read_bytes() == data for name, data in trained.items())
    demo.main(argv[:-4] + ["--max_epochs", "1", "--state_every", "0", "--resume"])  # other flags: trained anew
    assert " kept: " not in capsys.readouterr().out


def test_a_demo_stopped_before_a_state_save_says_resume_keeps_the_steps_done(tmp_path, capsys, monkeypatch):
    """A Ctrl-C before the step's first state save ended in run.py's "--resume has nothing to go on from, run
    the same command to start over", which is the step's own case: the demo's --resume keeps the training steps
    done all the same, and its line after run.py's says so."""
    import make_world
    data = tmp_path / "world"
    make_world.write_world(make_world.build_world(people=24, train=16, dev=8, seed=1), str(data))
    out = tmp_path / "out"
    argv = ["--size", "cpu", "--data-dir", str(data), "--people", "24", "--train", "16",
            "--variants", "nopretrain,vanilla", "--out", str(out),
            "--n_layer", "1", "--n_head", "2", "--n_embd", "16", "--max_epochs", "2"]
    interrupted_once_saved(monkeypatch, out / "vanilla.model.params", argv)  # the pretraining's first step
    said = capsys.readouterr().err.splitlines()
    assert "--resume has nothing to go on from" in said[-2]
    assert said[-1] == ("demo: the same command with --resume keeps the training steps done (vanilla.model.params) "
                        "and starts the step of vanilla.pretrain.params over")
    out2 = tmp_path / "out2"  # stopped in the first step: nothing done, nothing more to say than run.py's
    interrupted_once_saved(monkeypatch, out2, [str(out2) if a == str(out) else a for a in argv])
    assert "demo: the same command" not in capsys.readouterr().err


def test_resume_starts_over_a_state_saved_with_other_flags_or_inputs(tmp_path, capsys, monkeypatch):
    """A Ctrl-C in the finetuning leaves its state; `--resume` with another --pretrain-epochs (or --seed,
    --dropout: settings run.py's state check does not hold) pretrained again and then went on from that
    state, whose weights are the finetuning of the other pretraining: the finetuned params were those of
    the other chain, bit for bit, recorded as finished with this run's flags and inputs (so every later
    --resume kept them). A state goes on only with the flags and inputs it was saved with."""
    import make_world
    monkeypatch.setenv("GPT_NUM_THREADS", "1")  # compared bit for bit with a clean run: one thread count for all
    data = tmp_path / "world"
    make_world.write_world(make_world.build_world(people=24, train=16, dev=8, seed=1), str(data))

    def argv(out, epochs):
        return ["--size", "cpu", "--data-dir", str(data), "--people", "24", "--train", "16", "--variants", "vanilla",
                "--out", str(out), "--pretrain-epochs", str(epochs), "--n_layer", "1", "--n_head", "2",
                "--n_embd", "16", "--state_every", "0"]
    out = tmp_path / "out"
    interrupted_once_saved(monkeypatch, out / "vanilla.finetune.params.state", argv(out, 2))
    assert (out / "vanilla.finetune.params.state").exists()
    capsys.readouterr()
    demo.main(argv(out, 1) + ["--resume"])  # another pretraining: the finetuning's state is not this run's
    said = capsys.readouterr()
    assert "resuming from " not in said.out + said.err
    assert ("demo: vanilla.finetune.params.state was not saved by this step with these flags and inputs: the step "
            "starts over") in said.out
    assert not list(out.glob("*.state"))
    clean = tmp_path / "clean"  # the same flags, uninterrupted: the params the resumed run must end with
    demo.main(argv(clean, 1))
    for name in ("vanilla.pretrain.params", "vanilla.finetune.params"):
        assert (out / name).read_bytes() == (clean / name).read_bytes(), name
    capsys.readouterr()
    demo.main(argv(out, 1) + ["--resume"])  # now finished with these flags: both kept
    assert capsys.readouterr().out.count(" kept: its step finished before") == 2


def test_resume_goes_on_from_a_state_saved_with_the_same_flags_and_keeps_a_finished_step_over_another_state(
        tmp_path, capsys, monkeypatch):
    """The state a step saved with these flags and inputs is resumed; one saved with others is not, and the
    params the step finished with these flags are kept beside it."""
    import make_world
    data = tmp_path / "world"
    make_world.write_world(make_world.build_world(people=24, train=16, dev=8, seed=1), str(data))
    out = tmp_path / "out"
    argv = ["--size", "cpu", "--data-dir", str(data), "--people", "24", "--train", "16", "--variants", "nopretrain",
            "--out", str(out), "--n_layer", "1", "--n_head", "2", "--n_embd", "16", "--state_every", "0"]
    demo.main(argv)  # finished with --seed 0
    finished = (out / "vanilla.model.params").read_bytes()
    interrupted_once_saved(monkeypatch, out / "vanilla.model.params.state", argv + ["--seed", "1"])
    capsys.readouterr()
    demo.main(argv + ["--resume"])  # --seed 0: finished, and the state is --seed 1's
    said = capsys.readouterr()
    assert "demo: vanilla.model.params kept: its step finished before" in said.out
    assert "resuming from " not in said.out + said.err
    assert (out / "vanilla.model.params").read_bytes() == finished
    demo.main(argv + ["--seed", "1", "--resume"])  # --seed 1: its own state, resumed
    said = capsys.readouterr()
    assert "resuming from " in said.out + said.err and " kept: " not in said.out
    assert not list(out.glob("*.state"))


def test_a_folder_named_as_the_demos_record_of_finished_steps_is_refused_before_any_work(tmp_path):
    """A folder at .demo-steps-done.json stopped the demo after its first training step, when it wrote
    the step's record there ("could not write it (Is a directory)"): refused first, as the RECORD folder."""
    out = tmp_path / "out"
    (out / demo.DONE).mkdir(parents=True)
    with pytest.raises(DataError, match="a folder where the demo keeps its record of the training steps"):
        demo.main(["--size", "cpu", "--variants", "nopretrain", "--out", str(out), "--n_layer", "1", "--n_head", "2",
                   "--n_embd", "16"])
    assert not (out / "vanilla.model.params").exists()


@pytest.mark.parametrize("name", [demo.RECORD, demo.DONE])
def test_a_demo_record_that_cannot_be_read_is_refused_before_any_work(tmp_path, unreadable_file, name):
    """(permission audit, non-root) An unreadable record of the demo's files read as none: its own params were
    then "not written by the demo" (give --out another folder); an unreadable record of finished steps made
    --resume retrain every step, then write the record again. Root reads anything, so the refusal is made here."""
    out = tmp_path / "out"
    out.mkdir()
    (out / name).write_text("{}", encoding="utf-8")
    unreadable_file(out / name)
    with pytest.raises(DataError, match=rf"^{re.escape(str(out / name))}: cannot be read \(Permission denied\), and "
                                        r"it is the demo's record of .*; make it readable \(chmod u\+r .*\)$"):
        demo.main(["--size", "cpu", "--variants", "nopretrain", "--out", str(out), "--n_layer", "1", "--n_head", "2",
                   "--n_embd", "16", "--resume"])
    assert sorted(os.listdir(out)) == [name]


def test_a_record_of_finished_steps_without_the_params_sha256_keeps_no_step(tmp_path, capsys):
    """An entry whose params sha256 is null (hand-edited, or params that were no file when it was written)
    matched params that are gone (whose sha256_of is None too): the step was kept, and the evaluation after
    it stopped on the missing params."""
    import make_world
    data = tmp_path / "world"
    make_world.write_world(make_world.build_world(people=24, train=16, dev=8, seed=1), str(data))
    out = tmp_path / "out"
    argv = ["--size", "cpu", "--data-dir", str(data), "--people", "24", "--train", "16", "--variants", "nopretrain",
            "--out", str(out), "--n_layer", "1", "--n_head", "2", "--n_embd", "16", "--max_epochs", "2"]
    demo.main(argv)
    done = json.loads((out / demo.DONE).read_text(encoding="utf-8"))
    done["vanilla.model.params"]["params"] = None
    (out / demo.DONE).write_text(json.dumps(done), encoding="utf-8")
    (out / "vanilla.model.params").unlink()
    capsys.readouterr()
    demo.main(argv + ["--resume"])
    assert " kept: " not in capsys.readouterr().out
    assert (out / "vanilla.model.params").is_file()


def test_an_out_folder_of_the_courses_runs_is_refused_before_any_work(tmp_path, capsys):
    """`demo.py --out src/submission` replaced the student's course-size vanilla.model.params and
    predictions with the demo's small ones, without a word. A file of the names the demo writes is
    replaced only while the demo's record holds it unchanged: course params written into the demo's
    folder after it (a run.sh mode with OUT_DIR there) are refused too."""
    import make_world
    data = tmp_path / "world"
    make_world.write_world(make_world.build_world(people=24, train=16, dev=8, seed=1), str(data))
    course = tmp_path / "submission"
    course.mkdir()
    (course / "vanilla.model.params").write_bytes(b"the student's params")
    (course / "vanilla.nopretrain.dev.predictions").write_text("Paris\n", encoding="utf-8")
    before = {p.name: p.read_bytes() for p in course.iterdir()}
    argv = ["--size", "cpu", "--data-dir", str(data), "--people", "24", "--train", "16", "--variants", "nopretrain",
            "--n_layer", "1", "--n_head", "2", "--n_embd", "16", "--max_epochs", "1"]
    with pytest.raises(demo.DataError, match=rf"^{course / 'vanilla.model.params'}: not written by the demo, and the "
                                             r"demo's runs would replace it; give --out an empty or new folder "
                                             r"\(default runs/demo\), or move the file away$"):
        demo.main(argv + ["--out", str(course)])
    assert {p.name: p.read_bytes() for p in course.iterdir()} == before  # nothing made there either
    work = tmp_path / "work"
    demo.main(argv + ["--out", str(work)])  # a new folder: the demo's, and its own again on the next run
    assert (work / demo.RECORD).is_file() and (work / "vanilla.model.params").is_file()
    demo.main(argv + ["--out", str(work)])
    assert "vanilla, no pretraining" in capsys.readouterr().out
    (work / "vanilla.model.params").write_bytes(b"params a run.sh mode wrote here since")
    with pytest.raises(demo.DataError, match=r"vanilla.model.params: changed since the demo wrote it"):
        demo.main(argv + ["--out", str(work)])
    assert (work / "vanilla.model.params").read_bytes() == b"params a run.sh mode wrote here since"


@pytest.mark.parametrize("flag", ["--outputs_path=x.predictions", "--writing_params_path", "--pretrain_corpus_path",
                                  "--log_path"])
def test_a_run_py_flag_the_demo_sets_is_refused_before_any_work(tmp_path, capsys, flag):
    """`demo.py --outputs_path X` pretrained and finetuned in full, then stopped with "--outputs_path given
    twice ... (a run.sh mode gives it ...)": the user gave it once, and the demo, not run.sh, sets it."""
    argv = ["--variants", "vanilla", "--out", str(tmp_path / "out")] + ([flag] if "=" in flag else [flag, "x"])
    with pytest.raises(SystemExit) as e:
        demo.main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and f"{flag.split('=')[0]}: the demo sets it for each step; its files come from " \
                                 f"--data-dir (or the world it makes) and go to --out" in err, err
    assert not (tmp_path / "out").exists()


def test_a_course_loop_asked_by_an_abbreviation_keeps_denormals():
    """Denormals are flushed for the whole demo unless a course loop is asked: `--reference_tr`, which run.py's
    parser takes for --reference_train, was missed (the demo's entry read only the full spellings)."""
    assert demo.course_loop_asked(["--reference_tr", "--variants", "vanilla"])
    assert demo.course_loop_asked(["--reference_ev"]) and demo.course_loop_asked(["--reference_train"])
    assert not demo.course_loop_asked(["--variants", "vanilla", "--out", "runs/x"])
    assert not demo.course_loop_asked(["--ref"])  # ambiguous: run.py refuses it, nothing is decided from it


def test_run_py_flags_abbreviated_are_read_as_run_py_reads_them(tmp_path, capsys):
    """run.py's parser takes `--resum` for --resume and `--writing_p` for --writing_params_path; the demo, which
    reads --resume and refuses the flags it sets, did not: `--resum` was passed on beside the --restart it adds
    (refused by run.py after the world was written), `--writing_p=x.params` was not refused as the flag it is."""
    import run as driver
    flags = driver.build_parser().flags()
    assert demo.spelled_out(["--resum", "--var=synthesizer", "--n_l", "1", "--n", "2", "--max_epochs", "3"], flags) == \
        ["--resume", "--variant=synthesizer", "--n_layer", "1", "--n", "2", "--max_epochs", "3"]  # --n: ambiguous
    with pytest.raises(SystemExit) as e:
        demo.main(["--variants", "vanilla", "--out", str(tmp_path / "out"), "--writing_p=x.params"])
    assert e.value.code == 2 and "--writing_params_path: the demo sets it for each step" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("earlier", ["a world from before the record", "a subset of another corpus"])
def test_the_demo_replaces_its_own_earlier_corpus(tmp_path, earlier, monkeypatch):
    """make_world now refuses to replace files it has no record of writing; the demo's own work folder
    (--out's data/) holds what an earlier demo run wrote there without such a record, a generated world
    from before make_world kept one or subset_corpus's copy of --data-dir, and a demo run again must
    not start failing on it: the demo writes its world anyway, with the record. (Before, no record was
    written.)"""
    import os
    from argparse import Namespace
    import make_world
    out = tmp_path / "runs" / "demo"
    data = out / "data"
    if earlier == "a subset of another corpus":
        people = [("Ann Bo", "Oslo"), ("Cy Du", "Rome"), ("Ed Fa", "Lima"), ("Gu Ha", "Kiev")]
        write(tmp_path / "course", [f"{n}. Where was {n} born? {p}." for n, p in people], people[:2], people[2:])
        demo.subset_corpus(str(tmp_path / "course"), str(data), train=2, dev=1)
    else:
        make_world.write_world(make_world.build_world(people=30, train=20, dev=5, seed=1), str(data))
        (data / make_world.MARKER).unlink()
    with pytest.raises(make_world.WorldError, match="not a file make_world wrote"):
        make_world.check_replaceable(str(data))
    monkeypatch.setattr(demo, "DEFAULT_OUT", str(out))  # runs/demo of a demo before its record: the demo's own
    demo.check_out_folder(str(out))
    folder, _ = demo.pick_corpus(Namespace(data_dir=None, people=None, train=None, seed=0), "cpu", str(out))
    assert folder == str(data)
    size = demo.SIZES["cpu"]
    world = make_world.build_world(people=size.people, train=size.train, dev=size.dev, seed=0, **size.world_args)
    assert {n: (data / n).read_text(encoding="utf-8") for n in make_world.FILES} == make_world.world_files(world)
    assert sorted(os.listdir(data)) == sorted(make_world.FILES + (make_world.MARKER,))
    make_world.check_replaceable(str(data))  # recorded now


def test_a_folder_of_an_earlier_demo_is_its_own(tmp_path, capsys, monkeypatch):
    """The first per-file record refused the demo's own older folders: runs/demo left by a version
    without a record ("changed since the demo wrote it" for a file never recorded), and an --out
    holding the previous version's one-line marker ("not written by the demo"). Both are taken as the
    demo's: what is there is recorded first; a file missing from an existing record is named as such."""
    import make_world
    data = tmp_path / "world"
    make_world.write_world(make_world.build_world(people=24, train=16, dev=8, seed=1), str(data))
    argv = ["--size", "cpu", "--data-dir", str(data), "--people", "24", "--train", "16",
            "--n_layer", "1", "--n_head", "2", "--n_embd", "16", "--max_epochs", "1"]
    old = tmp_path / "old"
    old.mkdir()
    (old / demo.OLD_MARKER).write_text("src/demo.py works here\n", encoding="utf-8")
    torch.save({"tok_emb.weight": torch.zeros(1)}, old / "vanilla.model.params")  # an earlier demo's params
    default = tmp_path / "runs" / "demo"
    default.mkdir(parents=True)
    torch.save({"tok_emb.weight": torch.ones(1)}, default / "vanilla.pretrain.params")  # an earlier demo's
    monkeypatch.setattr(demo, "DEFAULT_OUT", str(default))
    for folder in (old, default):
        demo.main(argv + ["--variants", "nopretrain", "--out", str(folder)])
        assert not (folder / demo.OLD_MARKER).exists() and (folder / demo.RECORD).is_file()
    hashes = json.loads((default / demo.RECORD).read_text(encoding="utf-8"))["sha256"]
    assert {"vanilla.pretrain.params", "vanilla.model.params"} <= set(hashes)  # the older file recorded too
    (old / "synthesizer.finetune.params").write_bytes(b"copied in by hand")
    with pytest.raises(demo.DataError, match=r"synthesizer.finetune.params: not written by the demo, and the demo's "
                                             r"runs would replace it; give --out an empty or new folder \(default "
                                             r"runs/demo\), or move the file away$"):
        demo.main(argv + ["--variants", "nopretrain", "--out", str(old)])
    (default / "synthesizer.finetune.params").write_bytes(b"copied in by hand")
    with pytest.raises(demo.DataError, match=r"synthesizer.finetune.params: not written by the demo, and the demo's "
                                             r"runs would replace it; give --out an empty or new folder, or move"):
        demo.main(argv + ["--variants", "nopretrain", "--out", str(default)])


def test_a_table_in_a_folder_of_an_earlier_demo_is_the_users(tmp_path, monkeypatch):
    """A folder of the demo before its record is taken as the demo's, but those demos only printed their table:
    a results.md there is one the user saved (`./run.sh demo | tee runs/demo/results.md`), and was adopted and
    replaced."""
    default = tmp_path / "runs" / "demo"
    default.mkdir(parents=True)
    (default / demo.TABLE).write_text("my saved table\n", encoding="utf-8")
    monkeypatch.setattr(demo, "DEFAULT_OUT", str(default))
    old = tmp_path / "old"
    old.mkdir()
    (old / demo.OLD_MARKER).write_text("src/demo.py works here\n", encoding="utf-8")
    (old / demo.TABLE).write_text("my saved table\n", encoding="utf-8")
    for folder in (default, old):
        with pytest.raises(demo.DataError, match=f"{demo.TABLE}: not written by the demo"):
            demo.check_out_folder(str(folder))
        assert (folder / demo.TABLE).read_text(encoding="utf-8") == "my saved table\n"


def test_a_fifo_named_as_an_output_is_refused_not_waited_on(tmp_path):
    """Hashing opened a FIFO named vanilla.nopretrain.dev.predictions and waited for a writer forever."""
    import os
    import ledger
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "vanilla.nopretrain.dev.predictions")
    assert ledger.sha256_of(str(out / "vanilla.nopretrain.dev.predictions")) is None
    with pytest.raises(demo.DataError, match="vanilla.nopretrain.dev.predictions: not written by the demo"):
        demo.check_out_folder(str(out))


def test_a_record_is_an_ordinary_file_that_keeps_its_other_entries(tmp_path):
    """mkstemp makes its file 0600: the record renamed from it must have the mode any new file gets."""
    import os
    import ledger
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "b.txt").write_text("b")
    ledger.add_to_record(str(tmp_path), ".record.json", ["a.txt"], "test")
    ledger.add_to_record(str(tmp_path), ".record.json", ["b.txt"], "test")
    mask = os.umask(0)
    os.umask(mask)
    assert (tmp_path / ".record.json").stat().st_mode & 0o777 == 0o666 & ~mask
    assert sorted(ledger.read_record(str(tmp_path), ".record.json")[0]) == ["a.txt", "b.txt"]
    assert ledger.foreign(str(tmp_path), ".record.json", ["a.txt", "b.txt"]) is None


def test_the_course_runs_folder_is_refused_even_empty(monkeypatch, tmp_path):
    """`--out src/submission` was refused only once course outputs were there: in a fresh clone the demo
    wrote its small models there under the course's file names, for the grader and deliverables to read."""
    import os
    submission = os.path.join(demo.HERE, "submission")
    monkeypatch.chdir(demo.HERE)
    os.symlink(submission, tmp_path / "linked")
    for out in (submission, "submission", os.path.join("submission", "..", "submission"), str(tmp_path / "linked")):
        with pytest.raises(demo.DataError, match=r"the folder of the course's own runs, which the grader and "
                                                 r"deliverables read .*; give --out another folder"):
            demo.check_out_folder(out)
    assert not os.path.exists(os.path.join(submission, demo.RECORD))


@pytest.mark.parametrize("name", ["data/wiki.txt", "data/birth_dev.tsv", "curves.pretrain.png", "attention.png"])
def test_a_corpus_or_picture_of_the_users_in_out_is_refused(tmp_path, name):
    """The demo's record held its params and predictions only: a corpus of the user's in --out's data/ (the
    course's files copied there) and a picture under a demo picture's name were overwritten without a word.
    A picture is refused before any work, a corpus where the demo is about to write one."""
    from argparse import Namespace
    out = tmp_path / "out"
    (out / "data").mkdir(parents=True)
    (out / name).write_bytes(b"the user's own")
    refused = rf"{name}: not written by the demo, and the demo's runs would replace it; give --out an empty or new " \
              rf"folder \(default runs/demo\), or move the file away$"
    if name.startswith("data/"):
        demo.check_out_folder(str(out))
        with pytest.raises(demo.DataError, match=refused):
            demo.pick_corpus(Namespace(data_dir=None, people=None, train=None, seed=0), "cpu", str(out))
    else:
        with pytest.raises(demo.DataError, match=refused):
            demo.check_out_folder(str(out))
    assert (out / name).read_bytes() == b"the user's own"


def test_a_corpus_the_demo_only_reads_is_not_refused(tmp_path):
    """At full size with --data-dir the demo reads that corpus and writes none: --out's own data/ given as
    --data-dir was refused as "not written by the demo", which it would not have written."""
    from argparse import Namespace
    import make_world
    out = tmp_path / "out"
    make_world.write_world(make_world.build_world(people=24, train=16, dev=8, seed=1), str(out / "data"))
    before = (out / "data" / "wiki.txt").read_bytes()
    demo.check_out_folder(str(out))
    folder, _ = demo.pick_corpus(Namespace(data_dir=str(out / "data"), people=None, train=None, seed=0), "full",
                                 str(out))
    assert folder == str(out / "data") and (out / "data" / "wiki.txt").read_bytes() == before


def test_the_corpus_and_pictures_the_demo_writes_are_recorded_and_replaced(tmp_path):
    """What pick_corpus and the pictures write goes into the record (also when Ctrl-C ends the block after the
    write), so the next run replaces it; a record of the earlier demo (its about text), which recorded
    neither, adopts them, and a record of this version that lacks them (a run that wrote neither) does not."""
    from argparse import Namespace
    import ledger
    out = tmp_path / "out"
    demo.check_out_folder(str(out))
    demo.pick_corpus(Namespace(data_dir=None, people=None, train=None, seed=0), "cpu", str(out))
    with pytest.raises(KeyboardInterrupt):
        with demo.recorded(str(out), ["curves.pretrain.png"]):
            (out / "curves.pretrain.png").write_bytes(b"a picture")
            raise KeyboardInterrupt
    hashes, _ = ledger.read_record(str(out), demo.RECORD)
    assert set(hashes) == set(demo.CORPUS) | {"curves.pretrain.png"}
    demo.check_out_folder(str(out))  # all the demo's own
    demo.pick_corpus(Namespace(data_dir=None, people=None, train=None, seed=1), "cpu", str(out))  # replaced
    kept = {name: digest for name, digest in hashes.items() if name not in demo.CORPUS + ("curves.pretrain.png",)}
    for about, adopted in ((demo.ABOUT, False), (demo.EARLIER_ABOUT, True)):
        (out / demo.RECORD).write_text(ledger.record_text(kept, about), encoding="utf-8")
        if adopted:
            demo.check_out_folder(str(out))
            demo.pick_corpus(Namespace(data_dir=None, people=None, train=None, seed=0), "cpu", str(out))
        else:
            with pytest.raises(demo.DataError, match="curves.pretrain.png: not written by the demo"):
                demo.check_out_folder(str(out))
    (out / "data" / "wiki.txt").write_text("edited by hand\n", encoding="utf-8")
    with pytest.raises(demo.DataError, match="wiki.txt: changed since the demo wrote it"):
        demo.pick_corpus(Namespace(data_dir=None, people=None, train=None, seed=0), "cpu", str(out))


@pytest.mark.parametrize("flag", ["--out", "--data-dir"])
def test_an_empty_folder_flag_is_refused_before_any_work(tmp_path, capsys, monkeypatch, flag):
    """`demo.py --out "$DIR"` with DIR unset made the current folder the work folder: the world's data/, the
    params, predictions and logs went into whatever folder the user was in; `--data-dir ""` was taken as no
    --data-dir, and the demo ran on a generated world instead of the corpus meant."""
    import os
    monkeypatch.chdir(tmp_path)
    argv = ["--variants", "nopretrain", flag, ""] + (["--out", str(tmp_path / "out")] if flag != "--out" else [])
    with pytest.raises(SystemExit) as e:
        demo.main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and f"{flag} is empty; give a folder" in err and err.count("\n") == 1, err
    assert os.listdir(tmp_path) == []


def test_demo_help_says_what_resume_does(capsys):
    """README sends an interrupted demo to `./run.sh demo --resume`; the demo's own --help, which lists only
    its flags, says so too, and that the heading leaves --resume out."""
    with pytest.raises(SystemExit) as stop:
        demo.main(["--help"])
    assert stop.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--resume and --restart aside, in its table's heading" in text
    assert "the same command with --resume keeps the steps it finished" in text


def test_an_interrupted_rerun_leaves_no_table_or_picture_of_the_earlier_models(tmp_path, capsys, monkeypatch):
    """A rerun with other settings (here --pretrain-epochs) stopped by Ctrl-C after its pretraining replaced
    the params left results.md and the pictures of the earlier run beside the new params: a table headed
    `--pretrain-epochs 1` whose rows are other models than those in the folder. The rerun removes what it will
    make again before it changes anything; a picture it does not draw (attention.png, one variant) stays."""
    import make_world
    import plots
    data = tmp_path / "world"
    make_world.write_world(make_world.build_world(people=24, train=16, dev=8, seed=1), str(data))
    out = tmp_path / "out"
    monkeypatch.setattr(demo, "stored", lambda params, variant, folder, run_args: (50.0, [1]))
    monkeypatch.setattr(demo, "retrieved", lambda predictions, folder, dev_rows: 0)
    monkeypatch.setattr(demo, "ask_hint", lambda *a: None)
    pictures = ("curves.pretrain.png", "curves.finetune.png", "attention.png")

    def draw(work_dir, **k):
        for name in pictures:
            (out / name).write_bytes(b"a picture")
        return [str(out / name) for name in pictures]
    monkeypatch.setattr(plots, "plot_demo_runs", draw)
    monkeypatch.setattr(demo.driver, "main", lambda argv: (8.0, 1.0) if "--function=evaluate" in argv else None)
    argv = ["--size", "cpu", "--data-dir", str(data), "--people", "24", "--train", "16", "--out", str(out)]
    demo.main(argv + ["--variants", "vanilla,synthesizer", "--pretrain-epochs", "1"])
    assert (out / demo.TABLE).exists() and all((out / name).exists() for name in pictures)

    def interrupted(argv):
        if "--function=finetune" in argv:
            raise KeyboardInterrupt
    monkeypatch.setattr(demo.driver, "main", interrupted)
    with pytest.raises(KeyboardInterrupt):
        demo.main(argv + ["--variants", "vanilla", "--pretrain-epochs", "2"])
    assert not (out / demo.TABLE).exists()
    assert [name for name in pictures if (out / name).exists()] == ["attention.png"]


def test_a_rerun_forgets_only_what_its_variants_draw_again_and_says_what_it_cannot_remove(tmp_path):
    """A nopretrain-only rerun draws no pretraining curves and no attention: it removes the table and the
    finetuning curves, and keeps the others (plots.py keeps a picture it does not draw). A result that cannot be
    removed (here a folder in its place) is one line naming it, not an OSError's traceback."""
    pictures = ("curves.pretrain.png", "curves.finetune.png", "attention.png")
    for name in (demo.TABLE, *pictures):
        (tmp_path / name).write_bytes(b"the earlier run's")
    demo.forget_results(str(tmp_path), ["nopretrain"])
    assert sorted(os.listdir(tmp_path)) == ["attention.png", "curves.pretrain.png"]
    demo.forget_results(str(tmp_path), ["synthesizer"])  # missing ones are no error
    assert os.listdir(tmp_path) == ["attention.png"]
    (tmp_path / demo.TABLE).mkdir()
    (tmp_path / demo.TABLE / "x").write_text("x")
    with pytest.raises(DataError, match=rf"^{tmp_path / demo.TABLE}: cannot be removed \(.*\), and this run's models "
                                        r"would replace those it describes; give --out a folder you can write to$"):
        demo.forget_results(str(tmp_path), ["vanilla"])


def test_another_seed_is_named_in_the_tables_heading(tmp_path, capsys, monkeypatch):
    """`--seed 1` makes another world and other models: its results.md was headed as the seed-0 run's
    ("cpu settings"), so two tables of different runs read as the same setting's."""
    import plots
    monkeypatch.setattr(demo.driver, "main", lambda argv: (40.0, 1.0) if "--function=evaluate" in argv else None)
    monkeypatch.setattr(demo, "stored", lambda params, variant, folder, run_args: (50.0, [1]))
    monkeypatch.setattr(demo, "retrieved", lambda predictions, folder, dev_rows: 0)
    monkeypatch.setattr(plots, "plot_demo_runs", lambda *a, **k: [])
    monkeypatch.setattr(demo, "ask_hint", lambda *a: None)
    for seed, heading in (("0", "; cpu settings, cpu, "), ("1", "; cpu settings with --seed 1, cpu, ")):
        out = tmp_path / f"seed{seed}"
        demo.main(["--size", "cpu", "--variants", "vanilla", "--seed", seed, "--out", str(out)])
        assert heading in (out / demo.TABLE).read_text(encoding="utf-8")


@pytest.mark.parametrize("given", [["--max_epochs", "1"], ["--max_epochs=1"], ["--max_ep", "1"]])
def test_pretrain_epochs_with_run_pys_max_epochs_is_refused(tmp_path, capsys, given):
    """run.py's --max_epochs goes to every step after the demo's own flags: with --pretrain-epochs 3 the
    demo said "pretraining 3 epochs" and headed its table `--pretrain-epochs 3`, and pretrained 1 epoch."""
    with pytest.raises(SystemExit):
        demo.main(["--size", "cpu", "--variants", "vanilla", "--pretrain-epochs", "3", "--out", str(tmp_path / "out")]
                  + given)
    assert "--pretrain-epochs with run.py's --max_epochs" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_second_demo_on_the_same_out_is_refused_naming_the_first(tmp_path):
    """Two demos on one --out (two terminals): the second stops before any work in one line naming the first's
    pid. Before the lock, the state the first was saving read as "not written by the demo ... move the file
    away", and between its steps a second demo made the world again (another --seed: another world) under the
    first one's finetuning and evaluation. The first's files are left as they are."""
    from submission.locks import held_lock
    out = tmp_path / "demo"
    out.mkdir()
    state = out / "vanilla.pretrain.params.state"
    state.write_bytes(b"the live demo's state, being saved")  # not in a record yet: its step is running
    with held_lock(str(out / demo.LOCK), demo.busy_demo):  # the first demo (an flock refuses a second open here too)
        with pytest.raises(DataError, match=rf"another demo \(pid {os.getpid()}\) is running in this folder now") as e:
            demo.main(["--out", str(out), "--variants", "vanilla", "--pretrain-epochs", "1", "--seed", "3"])
    assert str(e.value) == (f"{out}: another demo (pid {os.getpid()}) is running in this folder now ({out / demo.LOCK} "
                            f"is locked); wait for it to end, or give --out another folder")  # the folder first
    assert sorted(os.listdir(out)) == ["vanilla.pretrain.params.state"]  # the lock went with the first demo
    assert state.read_bytes() == b"the live demo's state, being saved"


def test_the_lock_alone_does_not_make_out_an_earlier_demos_folder(tmp_path, monkeypatch):
    """The lock is taken before check_out_folder: a folder that holds only it is new, not one an earlier version
    of the demo worked in (whose files are recorded as the demo's), so no record is written for it."""
    monkeypatch.setattr(demo, "DEFAULT_OUT", str(tmp_path / "demo"))
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / demo.LOCK).write_text(f"{os.getpid()}\n", encoding="ascii")
    demo.check_out_folder(str(tmp_path / "demo"))
    assert not (tmp_path / "demo" / demo.RECORD).exists()


KILLED_AT_STATE = """
import os, signal, sys
sys.path.insert(0, sys.argv[1])
import demo
from submission.trainer import TrainingRun
original = TrainingRun.step
def step(self, x, y):  # killed outright (SIGKILL, the OOM killer) once the state is saved: no finally runs
    if os.path.exists(sys.argv[2]):
        os.kill(os.getpid(), signal.SIGKILL)
    return original(self, x, y)
TrainingRun.step = step
demo.main(sys.argv[3:])
"""


def test_a_demo_killed_outright_mid_step_goes_on_with_resume(tmp_path, capsys):
    """A demo killed outright (kill -9, the OOM killer) after a training step saved its state: the demo recorded
    the state only when the step ended, so every later demo on that --out, --resume too, refused it as "not
    written by the demo ... move the file away". The demo records what its steps write as they write it, and
    --resume goes on from the state."""
    import subprocess
    import sys
    out, argv = _one_step_demo(tmp_path)
    state = out / "vanilla.model.params.state"
    env = dict(os.environ, GPT_NUM_THREADS="1")
    p = subprocess.run([sys.executable, "-c", KILLED_AT_STATE, os.path.dirname(demo.__file__), str(state)] + argv,
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == -9 and state.exists(), p.stderr[-2000:]
    capsys.readouterr()
    results = demo.main(argv + ["--resume"])
    assert "resuming from" in capsys.readouterr().out
    assert [row[0] for row in results] == ["always London", "vanilla, no pretraining"] and not state.exists()


def test_a_file_the_demo_writes_is_recorded_as_written_through_a_linked_out_with_the_states_minutes(tmp_path):
    """recording_writes records each of the demo's files as files.py writes it, the live step's state with that
    step's key and its minutes so far (a demo killed outright then goes on with --resume, and its table counts
    the minutes before the kill); files.py gives the real path, and --out may name the folder through a link
    (macOS's /tmp): its files are recorded all the same. The hook goes when the demo ends, an error too."""
    import ledger
    from submission.files import WRITTEN_HOOKS, atomic_write_text
    real = tmp_path / "real"
    real.mkdir()
    out = tmp_path / "link"
    out.symlink_to(real, target_is_directory=True)
    state = "vanilla.pretrain.params.state"
    current = {"state": state, "key": "the step's key", "started": __import__("time").time() - 90}
    with pytest.raises(KeyboardInterrupt):
        with demo.recording_writes(str(out), current):
            atomic_write_text(str(out / state), "a state")
            atomic_write_text(str(out / "notes.txt"), "the user's")  # not a name of the demo's: not recorded
            raise KeyboardInterrupt
    assert WRITTEN_HOOKS == []
    hashes, _ = ledger.read_record(str(real), demo.RECORD)
    assert set(hashes) == {state}
    assert demo.saved_with(str(out), state, "the step's key") and 90 <= demo.step_seconds(str(out), state) < 150


def test_the_results_heading_says_the_thread_counts_torch_and_commit_the_cards_record(tmp_path):
    """The table's figures change with the CPU thread count (README, Results), which results.md did not say:
    the heading now names the counts, torch and the commit the params' cards record."""
    import torch
    from submission.card import write_card

    def params(name, threads, commit="0123456789ab", torch_version="2.13.0+cpu"):
        path = tmp_path / name
        path.write_bytes(name.encode())
        write_card(str(path), torch.nn.Linear(1, 1), {0: "a"},
                   run={"computed": {"threads": threads, "torch": torch_version}, "commit": commit})
        return str(path)

    a, b = params("a.params", [2]), params("b.params", [2])
    assert demo.how_trained([a, b]) == ", 2 CPU threads, torch 2.13.0+cpu, commit 0123456789ab"
    assert demo.how_trained([params("c.params", [1])]) == ", 1 CPU thread, torch 2.13.0+cpu, commit 0123456789ab"
    mixed = [a, params("d.params", [1, 2], commit="ba9876543210"), params("e.params", None)]  # e: on a GPU
    assert demo.how_trained(mixed) == ", 1 to 2 CPU threads, torch 2.13.0+cpu"  # two commits: none said
    (tmp_path / "plain.params").write_bytes(b"x")  # the course's params, no card
    assert demo.how_trained([str(tmp_path / "plain.params"), str(tmp_path / "missing.params")]) == ""

"""src/deliverables.py: the handout's 18 files are checked as the grader would read them (code that parses,
params that load, keys as saved, into the course's model of their variant, one prediction a question)
and zipped under their handout paths, with the package's other modules, only when all are in order and
a copy of the package imports; a missing or bad file names the run.sh mode that remakes it.

Run:  python -m pytest -q tests/test_deliverables.py
"""
import errno
import json
import os
import time
import re
import shlex
import shutil
import subprocess
import sys
import zipfile

import pytest
import torch

import deliverables
from submission import GPT, GPTConfig
from submission.dataset import CharCorruptionDataset, DataError, read_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "data")
LABELS = {"dev": "birth_dev.tsv", "test": "birth_test.tsv"}  # the places of each split's questions
SMALL = dict(n_layer=1, n_head=2, n_embd=16, block_size=128)  # stands in for the course's size: fast


def questions(name):
    return sum(1 for line in read_text(os.path.join(DATA, name)).split("\n") if line.strip())


@pytest.fixture
def complete(tmp_path, monkeypatch):
    """(code folder, outputs folder): a copy of the package, and all 11 params and predictions files, the
    params of the (small) size the checker expects."""
    monkeypatch.setattr(deliverables, "COURSE_SIZE", SMALL)
    code = tmp_path / "code"
    shutil.copytree(os.path.join(ROOT, "src", "submission"), code, ignore=shutil.ignore_patterns("mingpt-demo",
                                                                                                 "__pycache__"))
    folder = tmp_path / "outputs"
    folder.mkdir()
    vocab = CharCorruptionDataset(read_text(os.path.join(DATA, "wiki.txt")), 128).vocab_size
    for name, (variant, _, _) in deliverables.PARAMS.items():
        torch.manual_seed(0)
        model = GPT(GPTConfig(vocab, 128, synthesizer=variant == "synthesizer", n_layer=1, n_head=2, n_embd=16))
        torch.save(model.state_dict(), folder / name)
    for name, (split, _, _) in deliverables.PREDICTIONS.items():
        n = questions(deliverables.QUESTIONS[split][0])
        # "London" but for the first question born elsewhere, answered right: one place repeated (with a
        # few others) would fail every pass mark, as a baseline; a right answer of another place is a model's
        places = [line.split("\t")[1] for line in read_text(os.path.join(DATA, LABELS[split])).split("\n") if line]
        lines = ["London"] * n
        other = next(i for i, place in enumerate(places) if place != "London")
        lines[other] = places[other]
        (folder / name).write_text("".join(p + "\n" for p in lines), encoding="utf-8")
    return code, folder


def run(dirs, out, capsys, data=DATA):
    code, folder = dirs
    status = deliverables.main(["--code-dir", str(code), "--submission-dir", str(folder), "--data-dir", str(data),
                                "--zip", str(out)])
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err


def test_all_in_order_are_zipped_under_their_handout_paths(complete, tmp_path, capsys):
    code, folder = complete
    out = tmp_path / "submission.zip"
    status, lines, err = run(complete, out, capsys)
    # all "London": 5% of data/'s dev and test sets, below the pretrained vanilla model's pass marks
    assert status == 0 and err == ("2 of the predictions files are below the grader's pass mark (low: "
                                   "vanilla.pretrain.dev.predictions, vanilla.pretrain.test.predictions); they are "
                                   "in the zip, and their tests would fail (their lines say what to rerun)\n")
    assert [line.split()[1] for line in lines[:18]] == ["ok"] * 12 + ["low"] * 2 + ["ok"] * 4
    assert [line.split()[2] for line in lines[:18]] == deliverables.HANDOUT_ORDER
    assert "accuracy" in lines[8] and lines[8].split()[2] == "vanilla.nopretrain.dev.predictions"
    # each labelled file with the grader's verdict on it (all "London": 5% of data/'s dev set)
    assert lines[8].endswith("accuracy 5.2%; 1d-0-hidden passes")
    there = shlex.quote(str(folder))  # as the hint quotes it (a folder with a space)
    assert lines[12].split()[2] == "vanilla.pretrain.dev.predictions" and (
        "; 1f-1-hidden fails: dev accuracy 5.20% (26/500) is below the pass mark 10% (embedded corpus); to retrain "
        f"and remake it: OUT_DIR={there} ./run.sh vanilla_pretrain && OUT_DIR={there} ./run.sh "
        f"vanilla_finetune_with_pretrain && OUT_DIR={there} ./run.sh vanilla_eval_dev_with_pretrain && "
        f"OUT_DIR={there} ./run.sh vanilla_eval_test_with_pretrain") in lines[12]
    # test predictions are counted against birth_test_inputs.tsv and scored on birth_test.tsv's places
    assert lines[9].split()[2] == "vanilla.nopretrain.test.predictions" and "accuracy" in lines[9]
    others = sorted(n for n in os.listdir(code) if n.endswith(".py") and n not in deliverables.CODE)
    assert others and lines[18].split()[:3] == ["ok", "the", "package"] and "import on their own" in lines[18]
    assert lines[-1].startswith(f"wrote {out}: the 18 deliverables and the package's other modules")
    with zipfile.ZipFile(out) as z:
        names = deliverables.CODE + others + deliverables.HANDOUT_ORDER[7:]
        assert z.namelist() == [f"src/submission/{n}" for n in names]
        for name in names:
            assert (z.read(f"src/submission/{name}")
                    == (code / name if name.endswith(".py") else folder / name).read_bytes())


def test_a_trial_folders_zip_goes_in_that_folder_and_a_replaced_zip_is_said(complete, tmp_path, capsys,
                                                                             monkeypatch):
    """`OUT_DIR=runs/try ./run.sh deliverables` after a 1-epoch trial replaced the repository's submission.zip, the
    zip of hours of training, without a word: a trial's outputs now zip into their own folder, the repository's
    zip is src/submission/'s, and a zip replaced is said with its date."""
    code, folder = complete
    monkeypatch.setattr(deliverables, "ROOT", str(tmp_path / "repo"))  # (the repository's zip: never written here)
    argv = ["--code-dir", str(code), "--submission-dir", str(folder), "--data-dir", DATA]
    assert deliverables.main(argv) == 0
    first = capsys.readouterr().out.splitlines()[-1]
    assert first.startswith(f"wrote {folder / 'submission.zip'}: the 18 deliverables") and \
        f" from the outputs in {folder}; " in first, first
    assert not (tmp_path / "repo").exists() and zipfile.is_zipfile(folder / "submission.zip")
    os.utime(folder / "submission.zip", (0, 1_000_000_000))
    assert deliverables.main(argv) == 0
    then = time.strftime("%Y-%m-%d %H:%M", time.localtime(1_000_000_000))
    assert capsys.readouterr().out.splitlines()[-1].startswith(
        f"wrote {folder / 'submission.zip'} (replacing its zip of {then}): the 18 deliverables")
    assert deliverables.default_zip(deliverables.os.path.join(deliverables.HERE, "submission")) == \
        os.path.join(str(tmp_path / "repo"), "submission.zip")


def test_a_file_dated_before_1980_is_zipped_as_of_1980(complete, tmp_path, capsys):
    """Mutation audit: a zip cannot hold a date before 1980; a file dated 1970 (an extraction or a build tool that
    kept no times) is stored as of 1980, not a ValueError after every check had passed."""
    code, _ = complete
    os.utime(code / "utils.py", (0, 0))
    out = tmp_path / "submission.zip"
    status, _, _ = run(complete, out, capsys)
    with zipfile.ZipFile(out) as z:
        assert status == 0 and z.getinfo("src/submission/utils.py").date_time == (1980, 1, 1, 0, 0, 0)


def test_files_older_than_the_params_they_are_made_from_are_named_stale(complete, tmp_path, capsys):
    """Finetuning run again after the dev evaluation: the predictions zipped were another model's, and
    nothing said so (all --resume compares these times; deliverables did not)."""
    code, folder = complete
    later = os.path.getmtime(folder / "synthesizer.pretrain.test.predictions") + 10
    for name in ("vanilla.model.params", "vanilla.finetune.params"):  # retrained after their evaluations
        os.utime(folder / name, (later, later))
    status, lines, err = run(complete, tmp_path / "s.zip", capsys)
    said = {line.split()[2]: line for line in lines[:18]}
    assert status == 0 and (tmp_path / "s.zip").exists()
    stale = ["vanilla.nopretrain.dev.predictions", "vanilla.nopretrain.test.predictions",
             "vanilla.pretrain.dev.predictions", "vanilla.pretrain.test.predictions"]
    assert [n for n, line in said.items() if "older than" in line] == stale
    assert said["vanilla.nopretrain.test.predictions"].split()[1] == "stale"
    assert said["vanilla.nopretrain.test.predictions"].endswith(
        f"; older than vanilla.model.params, which it is made from: if that was made again, remake this with "
        f"OUT_DIR={shlex.quote(str(folder))} ./run.sh vanilla_eval_test_without_pretrain")
    assert said["vanilla.pretrain.dev.predictions"].split()[1] == "low"  # below the pass mark too: low, both said
    assert "vanilla.finetune.params, which it is made from" in said["vanilla.pretrain.dev.predictions"]
    assert said["vanilla.finetune.params"].split()[1] == "ok"  # newer than the pretrained params
    assert err.endswith(f"4 of the files are older than the params they are made from (stale: {', '.join(stale)}); "
                        f"they are in the zip: if those params were made again, remake them as their lines say\n")


def test_files_as_old_as_their_params_are_not_stale(complete, tmp_path, capsys):
    """A folder unzipped or copied with times to the second can give params and what was made from them
    the same time: that is not older, so nothing is stale."""
    code, folder = complete
    now = int(os.path.getmtime(folder / "vanilla.model.params"))
    for name in os.listdir(folder):
        os.utime(folder / name, (now, now))
    status, lines, err = run(complete, tmp_path / "s.zip", capsys)
    assert status == 0 and not any("older than" in line for line in lines) and "stale" not in err
    assert [line.split()[1] for line in lines[:18]] == ["ok"] * 12 + ["low"] * 2 + ["ok"] * 4


def test_an_earlier_zip_under_another_name_is_replaced_and_a_zip_of_other_files_kept(complete, tmp_path, capsys):
    """--zip refuses a file that is not a readable zip, whatever its name; an earlier zip of this command (its files
    all under src/submission/) is replaced whatever its name, and a zip of other files (an unrelated archive
    given as --zip by a slip) is refused: it was overwritten without a word."""
    out = tmp_path / "handin"
    with zipfile.ZipFile(out, "w") as z:  # with the folder entries of `zip -r handin src/submission`
        for name in ("src/", "src/submission/", "src/submission/old.py"):
            z.writestr(name, "" if name.endswith("/") else "an earlier submission")
    status, _, _ = run(complete, out, capsys)
    with zipfile.ZipFile(out) as z:
        names = z.namelist()
    assert status == 0 and "src/submission/old.py" not in names and "src/submission/model.py" in names
    photos = tmp_path / "photos.zip"
    with zipfile.ZipFile(photos, "w") as z:
        z.writestr("holiday/1.jpg", "a photo")
    before = photos.read_bytes()
    with pytest.raises(DataError, match=r"photos.zip: a zip of other files \(holiday/1.jpg in it\), not one this "
                                        r"command wrote, so it is not replaced; give --zip a new path, or move that "
                                        r"zip away$"):
        run(complete, photos, capsys)
    assert photos.read_bytes() == before
    fifo = tmp_path / "pipe.zip"
    os.mkfifo(fifo)  # read as a zip it blocked for ever; /dev/full, read as one, filled the memory
    for special in [p for p in (str(fifo), "/dev/full") if os.path.exists(p)]:  # (no /dev/full on macOS)
        with pytest.raises(DataError, match=r": is not a regular file; give --zip the path of a file$"):
            run(complete, special, capsys)


def test_a_zip_of_other_files_under_src_is_kept(complete, tmp_path, capsys):
    """Mutation audit: only the folder entry src/ is let through beside src/submission/'s files: a zip of a whole
    src/ folder (the project's other scripts in it) given as --zip is not one this command wrote, and is kept."""
    out = tmp_path / "project.zip"
    with zipfile.ZipFile(out, "w") as z:
        for name in ("src/", "src/submission/", "src/submission/model.py", "src/run.py"):
            z.writestr(name, "" if name.endswith("/") else "print('mine')\n")
    before = out.read_bytes()
    with pytest.raises(DataError, match=r"project.zip: a zip of other files \(src/run.py in it\), not one this "
                                        r"command wrote"):
        run(complete, out, capsys)
    assert out.read_bytes() == before


def test_missing_and_bad_files_name_their_fix_and_no_zip_is_written(complete, tmp_path, capsys):
    code, folder = complete
    out = tmp_path / "submission.zip"
    with zipfile.ZipFile(out, "w") as z:  # an earlier check's
        z.writestr("src/submission/model.py", "# an earlier model.py\n")
    earlier = out.read_bytes()
    os.remove(folder / "vanilla.pretrain.test.predictions")
    (folder / "vanilla.nopretrain.dev.predictions").write_bytes(
        (folder / "vanilla.nopretrain.dev.predictions").read_text(encoding="utf-8").encode("utf-16"))
    shutil.copy(folder / "synthesizer.pretrain.params", folder / "vanilla.pretrain.params")  # the other variant
    (folder / "synthesizer.pretrain.dev.predictions").write_text("London\n" * 3, encoding="utf-8")
    (code / "helper.py").write_text("def pretrain(:\n", encoding="utf-8")
    status, lines, err = run(complete, out, capsys)
    # the last line names the folder read, and says that the zip already there is not this check's
    assert status == 1 and re.fullmatch(
        rf"5 of the deliverables are missing or bad; no zip written \(outputs read from {re.escape(str(folder))}/; "
        rf"OUT_DIR=FOLDER ./run.sh deliverables, or --submission-dir, reads another\); {re.escape(str(out))} is an "
        rf"earlier check's, of \d{{4}}-\d\d-\d\d \d\d:\d\d, not this one's", err.strip()), err
    said = {line.split()[2]: line for line in lines}
    assert said["helper.py"].split()[1] == "bad" and "line 1" in said["helper.py"]
    assert said["vanilla.pretrain.params"].split()[1] == "bad"
    assert "these are synthesizer params, but the model is vanilla; remake it with " in said["vanilla.pretrain.params"]
    assert said["vanilla.pretrain.params"].endswith("./run.sh vanilla_pretrain")
    n = questions("birth_dev.tsv")
    assert f"3 lines for {n} questions" in said["synthesizer.pretrain.dev.predictions"]
    assert said["vanilla.pretrain.test.predictions"].split()[1] == "missing"
    assert said["vanilla.pretrain.test.predictions"].endswith(
        "./run.sh vanilla_eval_test_with_pretrain (after vanilla_pretrain, vanilla_finetune_with_pretrain)")
    assert f"OUT_DIR={shlex.quote(str(folder))}" in said["vanilla.pretrain.test.predictions"]  # the folder checked
    assert said["vanilla.nopretrain.dev.predictions"].split()[1] == "bad"
    assert "UTF-16 text (byte-order mark FF FE), not UTF-8" in said["vanilla.nopretrain.dev.predictions"]
    # the pretrained params copied in are newer than the finetuned ones made from them: stale, not bad
    assert said["vanilla.finetune.params"].split()[1] == "stale"
    assert (sum(line.split()[1] in ("ok", "low", "stale") for line in lines) == 13
            and len(lines) == 18)  # no import check
    assert out.read_bytes() == earlier
    os.remove(folder / "synthesizer.finetune.params")
    _, lines, _ = run(complete, out, capsys)
    assert lines[15].endswith("./run.sh synthesizer_finetune_with_pretrain (after synthesizer_pretrain)")


def test_an_unreadable_output_is_made_readable_not_remade(complete, tmp_path, capsys, monkeypatch):
    """(permission audit, non-root) Params made unreadable (chmod 000) read "Permission denied; remake it with
    ./run.sh vanilla_pretrain": hours of training for a chmod, and the run remaking them refuses a file it cannot
    read. Root reads anything, so the refusal is made here."""
    code, folder = complete
    real = deliverables.check_params

    def shut(path, *args, **kwargs):
        if os.path.basename(path) == "vanilla.pretrain.params":
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real(path, *args, **kwargs)
    monkeypatch.setattr(deliverables, "check_params", shut)
    status, lines, _ = run(complete, tmp_path / "submission.zip", capsys)
    said = {line.split()[2]: line for line in lines}
    assert status == 1 and said["vanilla.pretrain.params"].split()[1] == "bad"
    assert said["vanilla.pretrain.params"].endswith(
        f" Permission denied; make it readable (chmod u+r {folder / 'vanilla.pretrain.params'})"), said


def test_code_saved_as_utf16_or_holding_a_nul_byte_is_named_so(complete, tmp_path, capsys):
    """Python 3.11.4 on reports a NUL byte as a SyntaxError without a line: a code file saved as UTF-16 (a Windows
    editor's "Unicode") read "line None: source code string cannot contain null bytes; fix it there". It is named
    as UTF-16 with the fix that keeps the student's code (not "restore it from git"), and a NUL byte as not source."""
    code, _ = complete
    (code / "trainer.py").write_bytes((code / "trainer.py").read_text(encoding="utf-8").encode("utf-16"))
    (code / "attention.py").write_bytes(b"import torch\n\x00\n")
    status, lines, err = run(complete, tmp_path / "s.zip", capsys)
    said = {line.split()[2]: line for line in lines[:18]}
    assert status == 1 and err.strip() == "2 of the deliverables are missing or bad; no zip written"
    assert said["trainer.py"].split()[1] == "bad" and said["trainer.py"].endswith(
        "  UTF-16 text (byte-order mark FF FE), not UTF-8; save it as UTF-8"), said["trainer.py"]
    assert said["attention.py"].split()[1] == "bad" and said["attention.py"].endswith(
        "  a NUL byte at byte 13: not Python source; restore it from git"), said["attention.py"]


def test_a_package_that_needs_a_module_it_lacks_is_not_zipped(complete, tmp_path, capsys):
    """Each of the handout's seven files parses, but they import this project's other modules."""
    code, _ = complete
    os.remove(code / "resume.py")
    out = tmp_path / "submission.zip"
    status, lines, err = run(complete, out, capsys)
    assert status == 1 and [line.split()[1] for line in lines[:18]] == ["ok"] * 12 + ["low"] * 2 + ["ok"] * 4
    assert lines[18].split()[:3] == ["bad", "the", "package"] and "does not import" in lines[18]
    assert "resume" in lines[18] and "no zip written" in err and not out.exists()


def test_an_editors_lock_link_or_a_folder_named_like_a_module_is_no_module(complete, tmp_path, capsys):
    """(security audit) Emacs keeps a link to nowhere named `.#model.py` beside a file being edited: the check
    stopped in a FileNotFoundError traceback copying it; a folder named `d.py`, an IsADirectoryError. Neither
    is a module the package could import: they are left out of the check and the zip."""
    code, _ = complete
    os.symlink("root@host.12345:1700000000", code / ".#model.py")
    (code / "d.py").mkdir()
    (code / "my-notes.py").write_text("print('a name no import can name')\n")  # no module either
    out = tmp_path / "submission.zip"
    status, lines, err = run(complete, out, capsys)
    assert status == 0 and lines[18].split()[:3] == ["ok", "the", "package"], (lines, err)
    with zipfile.ZipFile(out) as z:
        assert not [n for n in z.namelist() if n.endswith(("/.#model.py", "/d.py", "/my-notes.py"))]


def test_params_that_are_not_the_courses_say_what_to_do(complete, tmp_path, capsys):
    _, folder = complete
    vocab = CharCorruptionDataset(read_text(os.path.join(DATA, "wiki.txt")), 128).vocab_size
    torch.save(GPT(GPTConfig(vocab, 128, n_layer=2, n_head=2, n_embd=16)).state_dict(),
               folder / "vanilla.finetune.params")
    state = torch.load(folder / "vanilla.model.params", weights_only=True)
    torch.save({f"module.{k}": v for k, v in state.items()}, folder / "vanilla.model.params")  # DataParallel's
    other = tmp_path / "other data"  # a corpus with one more character: another vocabulary
    shutil.copytree(DATA, other)
    with open(other / "wiki.txt", "a", encoding="utf-8") as f:
        f.write("Wang Fang. Born in 北京.\n")
    status, lines, _ = run(complete, tmp_path / "s.zip", capsys)
    said = {line.split()[2]: line for line in lines}
    assert status == 1 and ("not the course's model size: the file looks like --n_layer 2"
                            in said["vanilla.finetune.params"])
    # the course's size, but a key renamed (as a model.py that names `head` otherwise would save it): the keys,
    # not "not the course's model size ... looks like --n_layer 4 --n_embd 256 --block_size 128"
    state = torch.load(folder / "vanilla.pretrain.params", weights_only=True)
    state["lm_head.weight"] = state.pop("head.weight")
    torch.save(state, folder / "vanilla.pretrain.params")
    status, lines, _ = run(complete, tmp_path / "s.zip", capsys)
    said = {line.split()[2]: line for line in lines}
    assert "missing 'head.weight'; unexpected 'lm_head.weight'" in said["vanilla.pretrain.params"]
    assert "model size" not in said["vanilla.pretrain.params"]
    assert "keys start with 'module.'" in said["vanilla.model.params"]
    assert "save the unwrapped model's state_dict" in said["vanilla.model.params"]
    _, lines, _ = run(complete, tmp_path / "s.zip", capsys, data=other)
    said = {line.split()[2]: line for line in lines}
    assert "vocabulary" in said["vanilla.pretrain.params"] and "point DATA_DIR at it" in said["vanilla.pretrain.params"]


def test_test_questions_come_from_the_labelled_file_when_the_inputs_are_not_there(complete, tmp_path, capsys):
    other = tmp_path / "data"
    shutil.copytree(DATA, other)
    os.remove(other / "birth_test_inputs.tsv")
    status, lines, _ = run(complete, tmp_path / "s.zip", capsys, data=other)
    assert status == 0 and "accuracy" in lines[9]  # vanilla.nopretrain.test.predictions, scored on the labels


def test_test_labels_are_used_only_when_they_ask_the_inputs_questions(complete, tmp_path, capsys):
    other = tmp_path / "data"
    shutil.copytree(DATA, other)
    labelled = (other / "birth_test.tsv").read_text(encoding="utf-8").splitlines(keepends=True)
    (other / "birth_test.tsv").write_text("".join(labelled[1:] + labelled[:1]), encoding="utf-8")  # another order
    status, lines, _ = run(complete, tmp_path / "s.zip", capsys, data=other)
    said = {line.split()[2]: line for line in lines[:18]}
    assert status == 0 and "accuracy" not in said["vanilla.nopretrain.test.predictions"]
    assert f"{len(labelled)} predictions" in said["vanilla.nopretrain.test.predictions"]


def test_the_graders_verdicts_are_on_the_data_checked(complete, tmp_path, capsys):
    """Mutation audit: the verdict beside each labelled predictions file is the grader's on --data-dir (run.sh's
    DATA_DIR), the folder the lines were counted against, not on data/: all right answers to another corpus's
    dev questions pass their tests there (graded on data/'s 500 questions they failed, marked low)."""
    _, folder = complete
    other = tmp_path / "data"
    shutil.copytree(DATA, other)
    rows = [line for line in (other / "birth_dev.tsv").read_text(encoding="utf-8").split("\n") if line.strip()][:50]
    (other / "birth_dev.tsv").write_text("".join(row + "\n" for row in rows), encoding="utf-8")
    for name, (split, _, _) in deliverables.PREDICTIONS.items():
        if split == "dev":
            (folder / name).write_text("".join(row.split("\t")[1] + "\n" for row in rows), encoding="utf-8")
    status, lines, _ = run(complete, tmp_path / "s.zip", capsys, data=other)
    said = {line.split()[2]: line for line in lines[:18]}
    assert status == 0
    for name, test_id in (("vanilla.nopretrain.dev.predictions", "1d-0-hidden"),
                          ("vanilla.pretrain.dev.predictions", "1f-1-hidden"),
                          ("synthesizer.pretrain.dev.predictions", "1g-1-hidden")):
        assert said[name].split()[1] == "ok" and said[name].endswith(
            f"50 predictions, accuracy 100.0%; {test_id} passes"), said[name]


def test_a_world_made_with_other_arguments_is_checked_at_the_graders_marks_for_it(complete, tmp_path, capsys):
    """The verdicts take the grader's pass marks by the grader's rule (grader.choose_marks): a world whose
    make_world record names other sizes or options than the default world's takes the course's marks, and the
    grader's one-line note on why comes first (data/ itself, the default world, has none: the rows come first in
    test_all_in_order_are_zipped_under_their_handout_paths). Here data/'s files under a record naming --tellings 3,
    so that the params' vocabulary stays data/'s."""
    other = tmp_path / "data"
    shutil.copytree(DATA, other)
    record = json.loads((other / ".make_world.json").read_text(encoding="utf-8"))
    record["arguments"]["tellings"] = 3
    (other / ".make_world.json").write_text(json.dumps(record), encoding="utf-8")
    status, lines, _ = run(complete, tmp_path / "s.zip", capsys, data=other)
    said = {line.split()[2]: line for line in lines if line[:2].strip().isdigit()}
    assert status == 0 and lines[0] == f"note: {other} was made by make_world with --tellings 3, not as the default " \
        f"world the embedded marks were calibrated on; sizes and options change how hard a world is, so the " \
        f"course's marks apply (the grader's --marks embedded overrides)"
    assert "below the pass mark 10% (course corpus)" in said["vanilla.pretrain.dev.predictions"]


@pytest.mark.parametrize("bad", ["Where was A born?\tX\tY\n".encode(), b"\xff\n"])
def test_a_bad_labels_file_is_no_labels(complete, tmp_path, capsys, bad):
    """birth_test.tsv is optional beside birth_test_inputs.tsv: a bad line or byte there costs the accuracy only."""
    other = tmp_path / "data"
    shutil.copytree(DATA, other)
    with open(other / "birth_test.tsv", "ab") as f:
        f.write(bad)
    status, lines, _ = run(complete, tmp_path / "s.zip", capsys, data=other)
    said = {line.split()[2]: line for line in lines[:18]}
    assert status == 0 and "accuracy" not in said["vanilla.nopretrain.test.predictions"]


A_FILE = "wiki.txt: is a file, not a folder (the --data-dir, run.sh's DATA_DIR); give the folder that holds it"


@pytest.mark.parametrize("flag, says", [
    ("--zip", "the zip path is a folder"), ("--zip", "would overwrite an input"),
    ("--zip", "exists and is not a zip file"),  # the written answers, a corpus: not replaced by a zip
    ("--zip", "link.zip: exists and is not a zip file"),  # nor through a link to them
    ("--zip", "notes.zip: exists and is not a zip file"),  # nor a user's file named .zip: replaced before
    ("--zip", "cut.zip: exists and is not a zip file"),  # nor a zip that cannot be read (a cut-short download)
    ("--zip", "badname.zip: exists and is not a zip file"),  # a name flagged UTF-8 that is not: a traceback before
    ("--submission-dir", "no such folder (the --submission-dir, run.sh's OUT_DIR)"),
    ("--data-dir", "no such folder (the --data-dir, run.sh's DATA_DIR)"),
    ("--data-dir", A_FILE),  # a file given for its folder: not "no such folder"
])
def test_paths_that_cannot_serve_are_one_line_before_any_check(complete, tmp_path, capsys, flag, says):
    from submission.utils import run_cli
    code, folder = complete
    argv = {"--code-dir": str(code), "--submission-dir": str(folder), "--data-dir": DATA,
            "--zip": str(tmp_path / "s.zip")}
    (tmp_path / "submission.tex").write_text("\\documentclass{article}\n", encoding="utf-8")
    os.symlink(tmp_path / "submission.tex", tmp_path / "link.zip")
    (tmp_path / "notes.zip").write_text("my notes\n", encoding="utf-8")
    with zipfile.ZipFile(tmp_path / "whole.zip", "w") as z:
        z.writestr("src/submission/model.py", "x = 1\n" * 500)
    (tmp_path / "cut.zip").write_bytes((tmp_path / "whole.zip").read_bytes()[:-30])  # its directory's end cut off
    whole = bytearray((tmp_path / "whole.zip").read_bytes())
    entry = whole.index(b"PK\x01\x02")  # the central directory's entry: its flags at +8, its name at +46
    whole[entry + 9] |= 0x08  # flag bit 11 (the high byte's bit 3): the name is UTF-8
    whole[entry + 46] = 0xFF  # which no UTF-8 name holds
    (tmp_path / "badname.zip").write_bytes(bytes(whole))
    argv[flag] = {"the zip path is a folder": str(folder), "would overwrite an input": str(code / "model.py"),
                  "exists and is not a zip file": str(tmp_path / "submission.tex"),
                  "link.zip: exists and is not a zip file": str(tmp_path / "link.zip"),
                  "notes.zip: exists and is not a zip file": str(tmp_path / "notes.zip"),
                  "cut.zip: exists and is not a zip file": str(tmp_path / "cut.zip"),
                  "badname.zip: exists and is not a zip file": str(tmp_path / "badname.zip"),
                  A_FILE: os.path.join(DATA, "wiki.txt")}.get(
                      says, str(tmp_path / "nowhere"))
    with pytest.raises(SystemExit) as stop:
        run_cli(lambda: deliverables.main([x for kv in argv.items() for x in kv]))
    captured = capsys.readouterr()
    assert stop.value.code == 2 and captured.out == "" and captured.err.count("\n") == 1 and says in captured.err
    assert (tmp_path / "submission.tex").read_text(encoding="utf-8") == "\\documentclass{article}\n"
    assert (tmp_path / "notes.zip").read_text(encoding="utf-8") == "my notes\n"
    assert (tmp_path / "cut.zip").read_bytes() == (tmp_path / "whole.zip").read_bytes()[:-30]


def test_a_package_that_does_not_import_stops_the_check_in_one_line(tmp_path, broken_src):
    """A syntax error in dataset.py ended the check in a traceback (it imports the package it checks)."""
    src, n = broken_src("dataset.py", "if idx = 0:\n    pass\n")
    p = subprocess.run([sys.executable, str(src / "deliverables.py")], capture_output=True, text=True,
                       timeout=300, cwd=str(tmp_path))
    assert p.returncode == 1 and p.stdout == "" and p.stderr.count("\n") == 1, p.stderr
    assert p.stderr.startswith(f"deliverables.py: src/submission/ does not import (SyntaxError at "
                               f"src/submission/dataset.py:{n}: "), p.stderr


def test_a_predictions_file_of_one_line_says_one_line(complete, tmp_path, capsys):
    """A file of one line read "1 lines for 500 questions"; the grader says "1 line" of the same file."""
    _, folder = complete
    name = "synthesizer.pretrain.dev.predictions"
    (folder / name).write_text("Lima\n", encoding="utf-8")
    status, lines, _ = run(complete, tmp_path / "s.zip", capsys)
    said = {line.split()[2]: line for line in lines[:18]}
    assert status == 1 and f"1 line for {questions('birth_dev.tsv')} questions: one" in said[name], said[name]


def test_a_predictions_file_of_one_line_too_many_is_bad(complete, tmp_path, capsys):
    """The grader scores 0 for a line too many as for one too few: both are `bad`, and no zip is written."""
    _, folder = complete
    name = "vanilla.nopretrain.dev.predictions"
    n = questions("birth_dev.tsv")
    with open(folder / name, "a", encoding="utf-8") as f:
        f.write("Lima\n")
    status, lines, _ = run(complete, tmp_path / "s.zip", capsys)
    said = {line.split()[2]: line for line in lines[:18]}
    assert status == 1 and not (tmp_path / "s.zip").exists()
    assert said[name].split()[1] == "bad" and f"{n + 1} lines for {n} questions" in said[name], said[name]


def test_a_dev_file_with_a_question_without_its_place_gives_no_accuracy(complete, tmp_path, capsys):
    """Accuracy is shown only when every question of the split has its place: a dev file with one unlabelled line
    is counted, not scored (scoring it compared a prediction with no place)."""
    other = tmp_path / "data"
    shutil.copytree(DATA, other)
    rows = (other / "birth_dev.tsv").read_text(encoding="utf-8").split("\n")
    rows[0] = rows[0].split("\t")[0]
    (other / "birth_dev.tsv").write_text("\n".join(rows), encoding="utf-8")
    status, lines, _ = run(complete, tmp_path / "s.zip", capsys, data=other)
    said = {line.split()[2]: line for line in lines[:18]}
    assert status == 0 and "accuracy" not in said["vanilla.nopretrain.dev.predictions"]
    assert f"{questions('birth_dev.tsv')} predictions" in said["vanilla.nopretrain.dev.predictions"]


def test_synthesizer_params_of_the_courses_size_with_other_keys_name_the_keys(complete, tmp_path, capsys):
    """A synthesizer file records its heads (w2's rows): at the course's size and heads, a renamed key is named as
    such, not as "not the course's model size"."""
    _, folder = complete
    state = torch.load(folder / "synthesizer.pretrain.params", weights_only=True)
    state["lm_head.weight"] = state.pop("head.weight")
    torch.save(state, folder / "synthesizer.pretrain.params")
    status, lines, _ = run(complete, tmp_path / "s.zip", capsys)
    said = {line.split()[2]: line for line in lines[:18]}["synthesizer.pretrain.params"]
    assert status == 1 and "missing 'head.weight'; unexpected 'lm_head.weight'" in said and "model size" not in said


def test_a_demo_folder_is_named_and_test_predictions_a_world_without_test_questions_cannot_have(
        complete, tmp_path, capsys):
    """Checked against the demo's world (no test split), a missing test predictions file was to be made
    with the eval_test mode, which stops there with "no questions to answer"; the demo's folder itself
    is named for what it is."""
    code, folder = complete
    other = tmp_path / "world"
    shutil.copytree(DATA, other)
    for name in ("birth_test.tsv", "birth_test_inputs.tsv"):
        (other / name).write_text("", encoding="utf-8")
    (folder / "vanilla.pretrain.test.predictions").unlink()
    (folder / ".made-by-demo.json").write_text("{}", encoding="utf-8")
    status, lines, _ = run(complete, tmp_path / "s.zip", capsys, data=other)
    assert status == 1 and lines[0].startswith(f"note: {folder} is a folder the demo wrote (.made-by-demo.json)")
    said = {line.split()[2]: line for line in lines[1:19]}
    assert said["vanilla.pretrain.test.predictions"].endswith(
        f"nothing to predict in {other}: its birth_test_inputs.tsv holds no questions (a demo's world has no test "
        f"split); the deliverables come from a corpus with test questions (data/ or the course's)")


def test_a_demo_folder_s_fixes_name_the_modes_files_not_a_mode_run_into_it(complete, tmp_path, capsys):
    """`OUT_DIR=runs/demo ./run.sh deliverables` told each file to be remade with `OUT_DIR=runs/demo ./run.sh
    MODE`: a course-size model trained into the demo's folder, which then failed on the demo's params, and a
    low accuracy's retraining chain ended in an eval_test mode of a world without test questions."""
    code, folder = complete
    (folder / ".made-by-demo.json").write_text("{}", encoding="utf-8")
    (folder / "vanilla.nopretrain.test.predictions").unlink()
    (folder / "vanilla.pretrain.dev.predictions").write_text("Nowhere\n" * 500, encoding="utf-8")  # 0% right
    status, lines, _ = run(complete, tmp_path / "s.zip", capsys)
    said = {line.split()[2]: line for line in lines[1:19]}
    instead = ("a demo's file: the deliverables are the run.sh modes' files (./run.sh all makes them in "
               "src/submission/)")
    assert status == 1 and said["vanilla.nopretrain.test.predictions"].endswith(f"missing vanilla.nopretrain.test."
                                                                                f"predictions    {instead}")
    low = said["vanilla.pretrain.dev.predictions"]
    assert " low " in low and "1f-1-hidden fails" in low and "./run.sh" not in low, low
    assert not any("OUT_DIR=" in line for line in lines), lines


def test_an_empty_zip_path_is_named_as_empty(complete, tmp_path, capsys, monkeypatch):
    """`--zip "$ZIP"` with ZIP unset was ": the zip path is a folder; give a file path" (the current folder,
    which realpath makes of ""): the line named no path, and called it a folder."""
    from submission.utils import run_cli
    code, folder = complete
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    with pytest.raises(SystemExit) as stop:
        run_cli(lambda: deliverables.main(["--code-dir", str(code), "--submission-dir", str(folder),
                                           "--data-dir", DATA, "--zip", ""]))
    captured = capsys.readouterr()
    assert (stop.value.code, captured.out, captured.err) == (2, "", "error: the zip path is empty; give a file path\n")
    assert os.listdir(tmp_path / "here") == []


def test_a_zip_path_that_is_no_regular_file_and_a_blank_line_too_many_are_named(complete, tmp_path, capsys):
    """Mutation audit: --zip /dev/full (a device, as a FIFO would be) is refused in one line before any
    check, and a predictions file with a blank line added inside names that line, as the grader does."""
    from submission.utils import run_cli
    code, folder = complete
    with pytest.raises(SystemExit) as stop:
        run_cli(lambda: deliverables.main(["--code-dir", str(code), "--submission-dir", str(folder),
                                           "--data-dir", DATA, "--zip", "/dev/full"]))
    captured = capsys.readouterr()
    assert stop.value.code == 2 and captured.out == "" and captured.err.count("\n") == 1
    assert "/dev/full: is not a regular file; give --zip the path of a file" in captured.err
    name = "vanilla.nopretrain.dev.predictions"
    lines = (folder / name).read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / name).write_text("".join(lines[:4] + ["\n"] + lines[4:]), encoding="utf-8")
    status, said, _ = run(complete, tmp_path / "s.zip", capsys)
    said = {line.split()[2]: line for line in said[:18]}
    n = questions("birth_dev.tsv")
    assert status == 1, said
    assert f"{n + 1} lines for {n} questions (line 5 is blank): one prediction" in said[name], said[name]


@pytest.mark.parametrize("during", ["check", "check_import"])
def test_a_file_changed_while_it_is_checked_is_not_zipped(complete, tmp_path, capsys, monkeypatch, during):
    """A run in another terminal rewrote a predictions file after its check (here: once the files are checked, or
    as the package's import is checked, the last step before the zip): the zip held one line where 500 predictions
    had been checked. The bytes compared are those before the files' checks, not after them."""
    code, folder = complete
    target = folder / "vanilla.pretrain.dev.predictions"
    checked = target.read_bytes()
    step = getattr(deliverables, during)

    def rewrite_then_step(*args):
        if during == "check":
            rows = step(*args)
            target.write_text("London\n", encoding="utf-8")
            return rows
        target.write_text("London\n", encoding="utf-8")
        return step(*args)

    monkeypatch.setattr(deliverables, during, rewrite_then_step)
    out = tmp_path / "submission.zip"
    try:
        status, _, _ = run(complete, out, capsys)
    except DataError as e:
        assert "changed while the deliverables were checked" in str(e)
        assert not out.exists()
        return
    with zipfile.ZipFile(out) as z:  # a zip written: only with the bytes that were checked
        assert z.read("src/submission/vanilla.pretrain.dev.predictions") == checked


def test_params_whose_card_says_another_function_are_bad(complete, tmp_path, capsys):
    """The pretrained params copied over vanilla.finetune.params, card and all: the card says pretrain, and
    the deliverables said `ok` for finetuned params that were never finetuned."""
    code, folder = complete
    from submission.card import write_card
    vocab = CharCorruptionDataset(read_text(os.path.join(DATA, "wiki.txt")), 128)
    model = GPT(GPTConfig(vocab.vocab_size, 128, n_layer=1, n_head=2, n_embd=16))
    write_card(str(folder / "vanilla.finetune.params"), model, vocab.itos, "pretrain")
    write_card(str(folder / "vanilla.pretrain.params"), model, vocab.itos, "pretrain")
    out = tmp_path / "submission.zip"
    status, lines, _ = run(complete, out, capsys)
    assert status == 1 and not out.exists()
    assert lines[10].split()[1:3] == ["ok", "vanilla.pretrain.params"]
    assert lines[11].split()[1:3] == ["bad", "vanilla.finetune.params"]
    assert "their card says they were pretrained, not finetuned" in lines[11]


def test_finetuned_params_that_are_the_pretrained_ones_byte_for_byte_are_bad(complete, tmp_path, capsys):
    """vanilla.pretrain.params copied over vanilla.finetune.params without a card (cp of the one file): it loaded
    as vanilla params of the course's size, and the deliverables said `ok` and zipped params never finetuned."""
    code, folder = complete
    shutil.copyfile(folder / "synthesizer.pretrain.params", folder / "synthesizer.finetune.params")
    out = tmp_path / "submission.zip"
    status, lines, _ = run(complete, out, capsys)
    assert status == 1 and not out.exists()
    assert lines[14].split()[1:3] == ["ok", "synthesizer.pretrain.params"]
    assert lines[15].split()[1:3] == ["bad", "synthesizer.finetune.params"]
    assert "the same bytes as synthesizer.pretrain.params: the pretrained params, not finetuned (a copy); remake it " \
           "with " in lines[15] and "synthesizer_finetune_with_pretrain" in lines[15]
    assert lines[11].split()[1:3] == ["ok", "vanilla.finetune.params"]  # its own bytes: as it was


def test_the_params_own_cards_are_zipped_without_the_students_paths(complete, tmp_path, capsys):
    """The grader's notes on params trained fewer epochs than the course's read their cards, which the zip left
    out: on Gradescope the notes were gone. A card goes in where it is its params' own, less the folders of the
    pretraining corpus on the student's machine (its sha256 and file name kept, which the card's readers need)."""
    from submission.card import corpus_record, pretrain_corpus, write_card
    code, folder = complete
    vocab = CharCorruptionDataset(read_text(os.path.join(DATA, "wiki.txt")), 128)
    model = GPT(GPTConfig(vocab.vocab_size, 128, n_layer=1, n_head=2, n_embd=16))
    for name in ("vanilla.pretrain.params", "vanilla.finetune.params"):
        write_card(str(folder / name), model, vocab.itos, function="pretrain", epochs=1,
                   corpus=corpus_record(os.path.join(DATA, "wiki.txt")))
    torch.save(model.state_dict(), folder / "vanilla.finetune.params")  # remade since: its card is another's
    out = tmp_path / "submission.zip"
    status, lines, _ = run(complete, out, capsys)
    assert status == 0 and "the package's other modules, the params' 1 card(s) (" in lines[-1], lines[-1]
    with zipfile.ZipFile(out) as z:
        cards = [n for n in z.namelist() if n.endswith(".card.json")]
        assert cards == ["src/submission/vanilla.pretrain.params.card.json"]
        card = json.loads(z.read(cards[0]))
    kept = json.loads((folder / "vanilla.pretrain.params.card.json").read_text(encoding="utf-8"))
    assert kept["pretrain_corpus"]["realpath"] == os.path.realpath(os.path.join(DATA, "wiki.txt"))  # untouched
    assert card["pretrain_corpus"] == {"sha256": kept["pretrain_corpus"]["sha256"], "path": "wiki.txt"}
    assert pretrain_corpus(card) == card["pretrain_corpus"]  # a record the readers of cards take
    assert {k: v for k, v in card.items() if k != "pretrain_corpus"} == {
        k: v for k, v in kept.items() if k != "pretrain_corpus"}

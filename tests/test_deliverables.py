"""src/deliverables.py: the handout's 18 files are checked as the grader would read them (code that parses,
params that load into the course's model of their variant, one prediction a question) and zipped under
their handout paths only when all are in order; a missing or bad file names the run.sh mode that remakes it.

Run:  python -m pytest -q tests/test_deliverables.py
"""
import os
import shutil
import zipfile

import pytest
import torch

import deliverables
from submission import GPT, GPTConfig
from submission.dataset import CharCorruptionDataset, read_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "data")
SMALL = dict(n_layer=1, n_head=2, n_embd=16, block_size=128)  # stands in for the course's size: fast


def questions(name):
    return sum(1 for line in read_text(os.path.join(DATA, name)).split("\n") if line.strip())


@pytest.fixture
def complete(tmp_path, monkeypatch):
    """A submission folder holding all 18 deliverables, params of the (small) size the checker expects."""
    monkeypatch.setattr(deliverables, "COURSE_SIZE", SMALL)
    folder = tmp_path / "submission"
    folder.mkdir()
    for name in deliverables.CODE:
        shutil.copy(os.path.join(ROOT, "src", "submission", name), folder / name)
    vocab = CharCorruptionDataset(read_text(os.path.join(DATA, "wiki.txt")), 128).vocab_size
    for name, (variant, _, _) in deliverables.PARAMS.items():
        torch.manual_seed(0)
        model = GPT(GPTConfig(vocab, 128, synthesizer=variant == "synthesizer", n_layer=1, n_head=2, n_embd=16))
        torch.save(model.state_dict(), folder / name)
    for name, (split, _, _) in deliverables.PREDICTIONS.items():
        n = questions(deliverables.QUESTIONS[split])
        (folder / name).write_text("London\n" * n, encoding="utf-8")
    return folder


def run(folder, out, capsys):
    status = deliverables.main(["--submission-dir", str(folder), "--data-dir", DATA, "--zip", str(out)])
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err


def test_all_in_order_are_zipped_under_their_handout_paths(complete, tmp_path, capsys):
    out = tmp_path / "submission.zip"
    status, lines, err = run(complete, out, capsys)
    assert status == 0 and err == ""
    assert [line.split()[1] for line in lines[:18]] == ["ok"] * 18
    assert [line.split()[2] for line in lines[:18]] == deliverables.HANDOUT_ORDER
    assert "dev accuracy" in lines[8] and lines[8].split()[2] == "vanilla.nopretrain.dev.predictions"
    assert lines[-1].startswith(f"wrote {out}: the 18 deliverables")
    with zipfile.ZipFile(out) as z:
        assert z.namelist() == [f"src/submission/{n}" for n in deliverables.HANDOUT_ORDER]
        for name in deliverables.HANDOUT_ORDER:
            assert z.read(f"src/submission/{name}") == (complete / name).read_bytes()


def test_missing_and_bad_files_name_their_fix_and_no_zip_is_written(complete, tmp_path, capsys):
    out = tmp_path / "submission.zip"
    out.write_bytes(b"an earlier zip")
    os.remove(complete / "vanilla.pretrain.test.predictions")
    shutil.copy(complete / "synthesizer.pretrain.params", complete / "vanilla.pretrain.params")  # other variant
    (complete / "synthesizer.pretrain.dev.predictions").write_text("London\n" * 3, encoding="utf-8")
    (complete / "helper.py").write_text("def pretrain(:\n", encoding="utf-8")
    status, lines, err = run(complete, out, capsys)
    assert status == 1 and err.strip() == "4 of 18 deliverables are missing or bad; no zip written"
    said = {line.split()[2]: line for line in lines}
    assert said["helper.py"].split()[1] == "bad" and "line 1" in said["helper.py"]
    assert said["vanilla.pretrain.params"].split()[1] == "bad"
    assert "these are synthesizer params, but the model is vanilla; remake it with " in said["vanilla.pretrain.params"]
    assert said["vanilla.pretrain.params"].endswith("./run.sh vanilla_pretrain")
    n = questions("birth_dev.tsv")
    assert f"3 lines for the {n} questions of birth_dev.tsv" in said["synthesizer.pretrain.dev.predictions"]
    assert said["vanilla.pretrain.test.predictions"].split()[1] == "missing"
    assert said["vanilla.pretrain.test.predictions"].endswith(
        "./run.sh vanilla_eval_test_with_pretrain (after vanilla_pretrain, vanilla_finetune_with_pretrain)")
    assert f"OUT_DIR={complete}" in said["vanilla.pretrain.test.predictions"]  # the folder checked
    assert sum(line.split()[1] == "ok" for line in lines) == 14
    os.remove(complete / "synthesizer.finetune.params")
    _, lines, _ = run(complete, out, capsys)
    assert lines[15].endswith("./run.sh synthesizer_finetune_with_pretrain (after synthesizer_pretrain)")
    assert out.read_bytes() == b"an earlier zip"


def test_params_of_another_size_say_what_they_look_like(complete, tmp_path, capsys):
    vocab = CharCorruptionDataset(read_text(os.path.join(DATA, "wiki.txt")), 128).vocab_size
    torch.save(GPT(GPTConfig(vocab, 128, n_layer=2, n_head=2, n_embd=16)).state_dict(),
               complete / "vanilla.finetune.params")
    status, lines, _ = run(complete, tmp_path / "s.zip", capsys)
    line = next(line for line in lines if "vanilla.finetune.params" in line)
    assert status == 1 and "not the course's model size: the file looks like --n_layer 2" in line


def test_a_zip_path_that_cannot_be_written_is_refused_before_any_check(complete, capsys):
    from submission.utils import run_cli
    for out, says in ((complete, "the zip path is a folder"), (complete / "model.py", "would overwrite an input")):
        with pytest.raises(SystemExit) as stop:
            run_cli(lambda: deliverables.main(["--submission-dir", str(complete), "--data-dir", DATA,
                                               "--zip", str(out)]))
        captured = capsys.readouterr()
        assert stop.value.code == 2 and captured.out == "" and captured.err.count("\n") == 1 and says in captured.err

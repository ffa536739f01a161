"""A finetuning that starts from params their card says were finetuned, not pretrained: a note from run.py, and
under a run.sh mode (whose file is the pretraining's) a refusal.

Run:  ./run.sh test tests/test_finetune_start.py
"""
import pytest

import run as driver
from submission.dataset import DataError

WIKI = "Ada Quill was born in Lisbon.\nBo Li was born in Oslo.\nWhere was Ada Quill born?\n"
TRAIN = "Where was Ada Quill born?\tLisbon\nWhere was Bo Li born?\tOslo\n"
SIZE = ["--n_layer", "1", "--n_embd", "16", "--n_head", "2", "--block_size", "48", "--batch_size", "4"]


@pytest.fixture()
def corpus(tmp_path, monkeypatch):
    monkeypatch.setenv("GPT_NUM_THREADS", "1")
    monkeypatch.delenv("RUN_SH_MODE", raising=False)
    (tmp_path / "wiki.txt").write_text(WIKI, encoding="utf-8")
    (tmp_path / "train.tsv").write_text(TRAIN, encoding="utf-8")
    return tmp_path


def finetune(folder, params, *flags):
    return ["--function=finetune", "--variant=vanilla", f"--pretrain_corpus_path={folder / 'wiki.txt'}",
            f"--finetune_corpus_path={folder / 'train.tsv'}", f"--writing_params_path={params}", *SIZE, *flags]


def test_finetuning_finetuned_params_is_said(corpus, capsys):
    """Params whose card says finetune, given as the pretrained params, were finetuned again without a word."""
    first = corpus / "first.params"
    driver.main(finetune(corpus, first, "--max_epochs", "1"))
    capsys.readouterr()
    driver.main(finetune(corpus, corpus / "again.params", "--max_epochs", "1", f"--reading_params_path={first}"))
    assert "were finetuned, not pretrained" in capsys.readouterr().err


def test_a_run_sh_mode_refuses_finetuned_params_as_pretrained_ones(corpus, monkeypatch):
    first = corpus / "vanilla.pretrain.params"  # a finetune's params under the pretraining's name
    driver.main(finetune(corpus, first, "--max_epochs", "1"))
    monkeypatch.setenv("RUN_SH_MODE", "vanilla_finetune_with_pretrain")
    with pytest.raises(DataError, match="were finetuned, not pretrained"):
        driver.main(finetune(corpus, corpus / "vanilla.finetune.params", "--max_epochs", "1",
                             f"--reading_params_path={first}"))
    assert not (corpus / "vanilla.finetune.params").exists()

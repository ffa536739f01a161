"""Bad input to the command-line tools: each stops before any work with one line naming the file
(and line) and the fix, exit status 2, and leaves what the user already has untouched.

Run:  python -m pytest -q tests/test_cli.py
"""
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys

import pytest
import torch

import run as driver
from submission import GPT, GPTConfig, TrainerConfig
from submission.dataset import CharCorruptionDataset, DataError, NameDataset, parse_tsv
from submission.utils import ParamsError, check_output_path, load_params

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = ["--n_layer", "1", "--n_head", "2", "--n_embd", "16", "--max_epochs", "1", "--batch_size", "16"]
WIKI = "Ada Quill was born in Lisbon.\nBo Li was born in Oslo.\nWhere was Ada Quill born?\n"


def one_line_exit(capsys, argv):
    with pytest.raises(SystemExit) as e:
        driver.parse_args(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("flags, says", [
    (["--batch_size", "0"], "--batch_size must be at least 1 and below 2**31, got 0"),
    (["--batch_size", str(2 ** 63)], "--batch_size must be at least 1 and below 2**31"),  # a traceback in islice
    (["--max_epochs", "-1"], "--max_epochs must be at least 1"),
    (["--n_layer", "0"], "--n_layer must be at least 1"),
    (["--n_head", "0"], "--n_head must be at least 1"),
    (["--n_embd", "15", "--n_head", "2"], "--n_embd 15 must be a multiple of --n_head 2"),
    (["--block_size", "16"], "--block_size must be between 17"),
    (["--block_size", "100000"], "--block_size must be between 17"),
    (["--n_embd", "1000000", "--n_head", "1"], "make a model of about 48,000,000,000,000 parameters"),
    (["--learning_rate", "nan"], "--learning_rate must be a positive number"),
    (["--learning_rate", "-1"], "--learning_rate must be a positive number"),
    (["--learning_rate", "inf"], "--learning_rate must be a positive number, got inf"),  # every step a NaN
    (["--dropout", "1.5"], "--dropout must be at least 0 and below 1"),
    (["--num_workers", "-2"], "--num_workers must be 0 or more"),
    (["--length_groups", "0"], "--length_groups must be at least 1 (1: no grouping)"),
    (["--seed", "-1"], "--seed must be between 0 and 4294967295"),
    (["--seed", str(2 ** 32)], "--seed must be between 0 and 4294967295"),
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["--reference_train", "--compile", "--length_groups", "2"], "--reference_train is the course's loop, without "
                                                                 "--compile or --length_groups; give one of them"),
    (["--step_graphs", "--compile_mode", "reduce-overhead"], "--step_graphs needs no CUDA graphs of torch.compile's "
                                                             "own (compile mode reduce-overhead records them: use "
                                                             "default or max-autotune-no-cudagraphs); leave it out"),
    # a flag the run.sh mode gave, given again: argparse let the last win (a synthesizer in vanilla.pretrain.params)
    (["--variant", "synthesizer"], "--variant given twice, as 'vanilla' and as 'synthesizer' (a run.sh mode gives it: "
                                   "choose the run.sh mode that does what you want)"),
    (["--function=finetune"], "--function given twice"),
    (["--writing_params_path", "q"], "given twice, as 'p' and as 'q' (a run.sh mode gives it: DATA_DIR and OUT_DIR "
                                     "choose the folders of a run.sh mode; for other file names, run python "
                                     "src/run.py"),
])
def test_bad_flags_stop_with_one_line(capsys, monkeypatch, flags, says):
    monkeypatch.setenv("RUN_SH_MODE", "vanilla_pretrain")  # a flag given twice: the mode gave it first
    argv = ["--function=pretrain", "--variant=vanilla", "--pretrain_corpus_path=w", "--writing_params_path=p"]
    err = one_line_exit(capsys, argv + flags)
    assert ": error: " in err and says in err and "(--help lists the options)" in err


def test_a_flag_typed_twice_on_run_py_itself_is_not_blamed_on_run_sh(capsys, monkeypatch):
    monkeypatch.delenv("RUN_SH_MODE", raising=False)
    err = one_line_exit(capsys, ["--function=pretrain", "--variant=vanilla", "--function=evaluate"])
    assert err.endswith(": error: --function given twice, as 'pretrain' and as 'evaluate'; give it once "
                        "(--help lists the options)\n")


def test_model_size_limits_are_inclusive_and_size_flags_name_only_what_differs(capsys):
    """modelflags: block 17 and 2048 and 1.8 billion weights are sizes a GPT can have, 2.01 billion is not;
    size_flags gives back only the flags away from the course's size, size_from_flags reads them back."""
    import modelflags
    from oneline import OneLineParser

    def check(*flags):
        p = modelflags.add_model_flags(OneLineParser(prog="prog"))
        modelflags.check_model_flags(p, p.parse_args(list(flags)))

    for flags in (["--block_size", "17"], ["--block_size", "2048"], ["--n_layer", "9", "--n_embd", "4096"]):
        check(*flags)
    with pytest.raises(SystemExit) as e:
        check("--n_layer", "10", "--n_embd", "4096")
    assert e.value.code == 2 and "make a model of about 2,013,265,920 parameters" in capsys.readouterr().err
    assert modelflags.size_flags(modelflags.COURSE_SIZE) == []
    size = dict(modelflags.COURSE_SIZE, n_layer=2, block_size=64)
    assert modelflags.size_flags(size) == ["--n_layer", "2", "--block_size", "64"]
    assert modelflags.size_from_flags(modelflags.size_flags(size) + ["--seed", "3"]) == size


def test_the_courses_positionals_are_checked_against_the_flags(capsys):
    """CS224N's form (function, variant and corpus as positionals): a flag that says otherwise, or a fourth
    positional, is a usage error, not a run of another variant or a word silently dropped."""
    flags = ["--writing_params_path=p", "--finetune_corpus_path=t"]
    err = one_line_exit(capsys, ["finetune", "synthesizer", "w", "--variant=vanilla"] + flags)
    assert "variant given twice, as 'synthesizer' and as --variant='vanilla'" in err
    err = one_line_exit(capsys, ["finetune", "vanilla", "w", "--pretrain_corpus_path=other"] + flags)
    assert "pretrain_corpus_path given twice, as 'w' and as --pretrain_corpus_path='other'" in err
    err = one_line_exit(capsys, ["finetune", "vanilla", "w", "t.tsv"] + flags)
    assert "at most 3 positionals (function, variant, corpus), got 4" in err
    args = driver.parse_args(["finetune", "vanilla", "w", "--variant=vanilla"] + flags)  # alike: accepted
    assert (args.function, args.variant, args.pretrain_corpus_path) == ("finetune", "vanilla", "w")


def test_a_flag_given_twice_alike_is_accepted_and_leaves_no_trace():
    args = driver.parse_args(["--function=pretrain", "--variant=vanilla", "--variant", "vanilla",
                              "--pretrain_corpus_path=w", "--writing_params_path=p"])
    assert args.variant == "vanilla" and not hasattr(args, "_given")


def test_step_graphs_on_a_machine_without_a_gpu_is_one_line(capsys, monkeypatch):
    monkeypatch.setattr(torch, "__version__", "2.13.0")  # (the torch this runs on may be older)
    monkeypatch.setattr(driver, "get_device", lambda: "cpu")
    argv = ["--function=pretrain", "--variant=vanilla", "--pretrain_corpus_path=w", "--writing_params_path=p"]
    err = one_line_exit(capsys, argv + ["--step_graphs"])
    assert "--step_graphs needs a CUDA GPU (this run would train on cpu); leave it out" in err
    monkeypatch.setattr(driver, "get_device", lambda: "cuda")
    monkeypatch.setenv("WORLD_SIZE", "2")
    err = one_line_exit(capsys, argv + ["--step_graphs"])
    assert "--step_graphs needs one process, not torchrun; leave it out" in err
    monkeypatch.delenv("WORLD_SIZE")
    monkeypatch.setattr(torch, "__version__", "2.1.2+cu121")  # on a GPU too
    err = one_line_exit(capsys, argv + ["--step_graphs"])
    assert "--step_graphs needs torch 2.2 or newer, whose fused AdamW reads a tensor learning rate (this is " \
           "torch 2.1.2+cu121); leave it out" in err
    monkeypatch.setattr(driver, "get_device", lambda: "cpu")  # an old torch on a CPU: the GPU is named first
    err = one_line_exit(capsys, argv + ["--step_graphs"])
    assert "--step_graphs needs a CUDA GPU (this run would train on cpu); leave it out" in err
    evaluate = ["--function=evaluate", "--variant=vanilla", "--pretrain_corpus_path=w", "--reading_params_path=r",
                "--eval_corpus_path=d", "--outputs_path=o", "--step_graphs"]
    assert driver.parse_args(evaluate).step_graphs  # evaluation trains nothing: a note, not an error
    assert capsys.readouterr().err == "run.py: note: --function=evaluate does not read --step_graphs\n"
    monkeypatch.setattr(driver, "get_device", lambda: "cuda")
    monkeypatch.setattr(torch, "__version__", "2.2.2")
    from submission import TrainerConfig
    assert driver.apply_overrides(TrainerConfig(), driver.parse_args(argv + ["--step_graphs"])).step_graphs


def test_flags_the_function_does_not_read_are_named(capsys, monkeypatch):
    base = ["--function=pretrain", "--variant=vanilla", "--pretrain_corpus_path=w", "--writing_params_path=p"]
    driver.parse_args(base + ["--reading_params_path=old.params"])
    assert capsys.readouterr().err == ("run.py: note: --function=pretrain does not read --reading_params_path "
                                       "(pretraining always starts from a new model)\n")
    driver.parse_args(["--function=evaluate", "--variant=vanilla", "--pretrain_corpus_path=w",
                       "--reading_params_path=r", "--eval_corpus_path=e", "--outputs_path=o",
                       "--writing_params_path=p"])
    assert capsys.readouterr().err == "run.py: note: --function=evaluate does not read --writing_params_path\n"
    driver.parse_args(["--function=evaluate", "--variant=vanilla", "--pretrain_corpus_path=w",
                       "--reading_params_path=r", "--eval_corpus_path=e", "--outputs_path=o",
                       "--max_epochs", "1", "--dropout", "0", "--bf16"])
    assert capsys.readouterr().err == "".join(f"run.py: note: --function=evaluate does not read --{name}\n"
                                              for name in ("max_epochs", "dropout", "bf16"))
    driver.parse_args(base + ["--reference_eval"])
    assert capsys.readouterr().err == "run.py: note: --function=pretrain does not read --reference_eval\n"
    monkeypatch.setenv(driver.SHARED_FLAGS, "1")  # `./run.sh all --max_epochs 1`: every mode gets the flags, knowingly
    driver.parse_args(["--function=evaluate", "--variant=vanilla", "--pretrain_corpus_path=w",
                       "--reading_params_path=r", "--eval_corpus_path=e", "--outputs_path=o", "--max_epochs", "1"])
    assert capsys.readouterr().err == ""
    driver.parse_args(base)
    assert capsys.readouterr().err == ""


def test_a_learning_rate_of_zero_is_refused(capsys):
    """A learning rate of 0 trains for hours without changing a weight: it is refused like a negative one."""
    err = one_line_exit(capsys, ["--function=pretrain", "--variant=vanilla", "--pretrain_corpus_path=w",
                                 "--writing_params_path=p", "--learning_rate", "0"])
    assert "--learning_rate must be a positive number, got 0.0" in err, err


def test_finetuning_names_the_evaluation_flags_it_does_not_read(capsys):
    """--function=finetune reads neither the evaluation corpus nor the outputs path: both are named."""
    driver.parse_args(["--function=finetune", "--variant=vanilla", "--pretrain_corpus_path=w",
                       "--writing_params_path=p", "--finetune_corpus_path=f", "--eval_corpus_path=e",
                       "--outputs_path=o"])
    assert capsys.readouterr().err == "".join(f"run.py: note: --function=finetune does not read --{name}\n"
                                              for name in ("eval_corpus_path", "outputs_path"))


def test_trainer_flags_override_the_parts_config_and_only_when_given():
    """Each of --max_epochs, --batch_size, --learning_rate, --num_workers and --length_groups replaces the part's
    value in its TrainerConfig; without them the part's values stay."""
    base = ["--function=pretrain", "--variant=vanilla", "--pretrain_corpus_path=w", "--writing_params_path=p"]
    part = dict(max_epochs=650, batch_size=128, learning_rate=6e-3, num_workers=4, length_groups="auto")
    flags = ["--max_epochs", "3", "--batch_size", "5", "--learning_rate", "0.01", "--num_workers", "2",
             "--length_groups", "1"]
    tconf = driver.apply_overrides(TrainerConfig(**part), driver.parse_args(base + flags))
    assert {k: getattr(tconf, k) for k in part} == dict(max_epochs=3, batch_size=5, learning_rate=0.01, num_workers=2,
                                                          length_groups=1)
    tconf = driver.apply_overrides(TrainerConfig(**part), driver.parse_args(base))
    assert {k: getattr(tconf, k) for k in part} == part


def test_reference_train_trains_as_the_courses_trainer_and_attention(tmp_path, monkeypatch, capsys):
    """--reference_train ends at the params of the course's loop (TrainerConfig(fast=False) and the masked
    softmax, GPTConfig(fast_attention=False)) for the same seed, exactly; the fast default, drawing other
    dropout masks on the CPU, ends elsewhere."""
    from submission import helper
    from submission.utils import set_seed
    monkeypatch.setenv("GPT_DEVICE", "cpu")
    monkeypatch.setenv("GPT_NUM_THREADS", "1")  # the thread count changes the last bits
    wiki = tmp_path / "wiki.txt"
    wiki.write_text(WIKI * 4, encoding="utf-8")
    base = ["--function=pretrain", "--variant=vanilla", *TINY, "--max_epochs", "3", "--block_size", "32",
            "--seed", "5", f"--pretrain_corpus_path={wiki}"]
    driver.main(base + [f"--writing_params_path={tmp_path / 'reference.params'}", "--reference_train"])
    assert capsys.readouterr().out.endswith(f"Params written to {tmp_path / 'reference.params'}\n")
    driver.main(base + [f"--writing_params_path={tmp_path / 'fast.params'}"])
    set_seed(5)
    pre = CharCorruptionDataset(WIKI * 4, 32)
    model = GPT(GPTConfig(pre.vocab_size, 32, n_layer=1, n_head=2, n_embd=16, fast_attention=False))
    tconf, trainer = helper.pretrain(pre, 32, model)
    tconf.max_epochs, tconf.batch_size, tconf.fast = 3, 16, False
    trainer.train()
    reference = torch.load(tmp_path / "reference.params", weights_only=True)
    fast = torch.load(tmp_path / "fast.params", weights_only=True)
    for name, p in model.state_dict().items():
        assert torch.equal(reference[name], p), name
    assert not all(torch.equal(fast[name], p) for name, p in reference.items())


def test_a_run_without_a_seed_is_the_seed_0_run(tmp_path, monkeypatch):
    """--seed defaults to 0: a run given none draws what a `--seed 0` run draws (the runs the docs report)."""
    monkeypatch.setenv("GPT_DEVICE", "cpu")
    monkeypatch.setenv("GPT_NUM_THREADS", "1")  # the thread count changes the last bits
    wiki = tmp_path / "wiki.txt"
    wiki.write_text(WIKI * 4, encoding="utf-8")
    base = ["--function=pretrain", "--variant=vanilla", *TINY, "--block_size", "32", f"--pretrain_corpus_path={wiki}"]
    params = {}
    for name, seed in (("none", []), ("zero", ["--seed", "0"]), ("one", ["--seed", "1"])):
        driver.main(base + seed + [f"--writing_params_path={tmp_path / name}"])
        params[name] = torch.load(tmp_path / name, weights_only=True)
    assert all(torch.equal(params["none"][k], v) for k, v in params["zero"].items())
    assert not all(torch.equal(params["none"][k], v) for k, v in params["one"].items())


def test_runs_flush_denormals_but_the_courses_loops_do_not(tmp_path, monkeypatch):
    """run.py computes with denormal floats flushed to zero (a trained model's denormals slowed CPU
    pretraining twofold by its third epoch), turned on before any tensor work and off when it ends;
    --reference_train and --reference_eval compute as the course's code does."""
    calls = []
    monkeypatch.setattr(torch, "set_flush_denormal", lambda on: calls.append(on) or True)
    monkeypatch.setattr(driver, "train_or_evaluate", lambda args: calls.append("work"))
    base = ["--function=pretrain", "--variant=vanilla", "--pretrain_corpus_path=w",
            f"--writing_params_path={tmp_path / 'p'}"]
    driver.main(base)
    assert calls == [True, "work", False]
    calls.clear()
    driver.main(base + ["--reference_train"])
    assert calls == ["work"]
    calls.clear()  # a flag of the other kind is not read, so it changes nothing
    driver.main(base + ["--reference_eval"])
    assert calls == [True, "work", False]
    calls.clear()
    evaluate = ["--function=evaluate", "--variant=vanilla", "--pretrain_corpus_path=w", "--reading_params_path=r",
                "--eval_corpus_path=e", f"--outputs_path={tmp_path / 'o'}"]
    driver.main(evaluate + ["--reference_eval"])
    assert calls == ["work"]
    calls.clear()
    driver.main(evaluate + ["--reference_train"])
    assert calls == [True, "work", False]


def cpu_flushes_denormals():
    """Whether torch can set this CPU's flush-to-zero mode (x86 with SSE3; torch says False elsewhere). Asked of
    torch, not of the block under test: a block that stopped flushing read as a CPU without the mode, skipped."""
    supported = torch.set_flush_denormal(True)
    torch.set_flush_denormal(False)
    return supported


def test_denormals_flushed_flushes_within_the_block_only():
    from submission.threads import denormals_flushed
    if not cpu_flushes_denormals():
        pytest.skip("this CPU has no flush-to-zero mode that torch sets")
    denormal = torch.tensor([1e-39])
    assert float(denormal * 1.0) != 0.0
    with denormals_flushed():
        assert float(denormal * 1.0) == 0.0
    assert float(denormal * 1.0) != 0.0  # off again
    with denormals_flushed(False):
        assert float(denormal * 1.0) != 0.0
        with denormals_flushed():  # inside a block, the outer decision stands (demo.py's steps)
            assert float(denormal * 1.0) != 0.0
    with denormals_flushed():
        with denormals_flushed(False):
            assert float(denormal * 1.0) == 0.0
        assert float(denormal * 1.0) == 0.0
    assert float(denormal * 1.0) != 0.0


def test_numpy_float_limits_are_worked_out_before_denormals_are_flushed(monkeypatch):
    """NumPy before 2.0 (numpy<2, with torch before 2.3) works out a float type's limits by arithmetic the first
    time numpy.finfo asks and keeps them; asked first in a flushed block (the demo's plots: matplotlib asks), it
    found the smallest subnormal zero and warned twice a type under the demo's table. A block has them worked out
    before it flushes."""
    import numpy as np
    from submission.threads import denormals_flushed
    real, worked_out = np.finfo, {}

    def finfo(dtype):  # numpy 1.x's: the limits worked out once a type, in the CPU's mode of that moment
        worked_out.setdefault(np.dtype(dtype).name, sys.float_info.min / 2 != 0.0)
        return real(dtype)
    monkeypatch.setattr(np, "finfo", finfo)
    if not cpu_flushes_denormals():
        pytest.skip("this CPU has no flush-to-zero mode that torch sets")
    with denormals_flushed():
        assert sys.float_info.min / 2 == 0.0
        np.finfo(np.float64), np.finfo(np.float32)  # as matplotlib asks, drawing the demo's curves
    assert worked_out == {"float32": True, "float64": True}, worked_out  # True: denormals not flushed yet


def test_missing_required_flag_is_one_line(capsys):
    err = one_line_exit(capsys, ["--function=evaluate", "--variant=vanilla", "--pretrain_corpus_path=w"])
    assert "--function=evaluate needs --reading_params_path" in err


@pytest.mark.parametrize("function, needs", [
    ("pretrain", ["writing_params_path"]),
    ("finetune", ["writing_params_path", "finetune_corpus_path"]),
    ("evaluate", ["reading_params_path", "eval_corpus_path", "outputs_path"]),
])
def test_each_function_names_every_path_it_needs(capsys, function, needs):
    """Each path a function reads or writes is required up front: an evaluation without --outputs_path decoded
    every question and then failed at the write."""
    for missing in needs:
        argv = [f"--function={function}", "--variant=vanilla", "--pretrain_corpus_path=w"]
        argv += [f"--{name}={name}.x" for name in needs if name != missing]
        err = one_line_exit(capsys, argv)
        assert f"--function={function} needs --{missing}" in err, err


def test_output_paths_are_checked_before_any_work(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    with pytest.raises(DataError, match="the params path is a folder"):
        check_output_path(str(folder), "params")
    data = tmp_path / "dev.tsv"
    data.write_text("Where was Bo Li born?\tOslo\n", encoding="utf-8")
    with pytest.raises(DataError, match="would overwrite an input of this run"):
        check_output_path(str(data), "predictions", [str(tmp_path / "x"), str(tmp_path / "." / "dev.tsv")])
    a_file = tmp_path / "file"
    a_file.write_text("", encoding="utf-8")
    with pytest.raises(DataError, match="file is a file, not a folder; pick another path for the loss log"):
        check_output_path(str(a_file / "sub" / "log.jsonl"), "loss log")
    check_output_path(str(tmp_path / "new" / "deeper" / "p.params"), "params")  # can be made; the writer makes it
    assert not (tmp_path / "new").exists()


def test_a_loss_log_given_the_params_path_is_refused_before_any_work(tmp_path):
    """--log_path naming the params file itself (or spelled another way): the log and the params would overwrite
    each other at every write; refused before training, naming the params as this run's (it said "an input")."""
    wiki = tmp_path / "wiki.txt"
    wiki.write_text(WIKI, encoding="utf-8")
    params = tmp_path / "p.params"
    for log in (str(params), f"{tmp_path}/./p.params"):
        args = driver.parse_args(["--function=pretrain", "--variant=vanilla", f"--pretrain_corpus_path={wiki}",
                                  f"--writing_params_path={params}", f"--log_path={log}"])
        with pytest.raises(DataError, match=r"p.params: the loss log would overwrite the params this run writes; "
                                            r"pick another path for the loss log$"):
            driver.check_outputs(args)
    # nor the params' card or training state, before either is there (the card then replaced the published log)
    for log, what in ((f"{params}.card.json", "params' card"), (f"{params}.state", "training state")):
        args = driver.parse_args(["--function=pretrain", "--variant=vanilla", f"--pretrain_corpus_path={wiki}",
                                  f"--writing_params_path={params}", f"--log_path={log}"])
        with pytest.raises(DataError, match=rf": the loss log would overwrite the {what} this run writes; "):
            driver.check_outputs(args)
    assert sorted(os.listdir(tmp_path)) == ["wiki.txt"]


def test_the_files_beside_the_params_are_checked_before_training_too(tmp_path):
    """The loss log, its .partial and the training state go beside the params, each written through a
    temporary file of a longer name: a folder in their place, or a params name that leaves theirs too
    long for the file system, is refused before training, naming the flag to change. (Such a name passed
    the trial file's shorter name and failed after training.)"""
    wiki = tmp_path / "wiki.txt"
    wiki.write_text(WIKI, encoding="utf-8")

    def check(params):
        driver.check_outputs(driver.parse_args(["--function=pretrain", "--variant=vanilla",
                                                f"--pretrain_corpus_path={wiki}", f"--writing_params_path={params}"]))

    from submission.files import _atomic_prefix
    check(tmp_path / ("p" * 200))  # every name beside it fits
    n = 250 - len(_atomic_prefix("") + "12345678.tmp")  # the params' temporary file: 250 long; the log's: 260
    with pytest.raises(DataError, match=rf"p{{{n}}}\.log\.jsonl: no file can be made in the folder .* \(File name "
                                        r"too long\); give --writing_params_path another path \(the loss log goes"):
        check(tmp_path / ("p" * n))
    (tmp_path / "q.params.log.jsonl.partial").mkdir()
    with pytest.raises(DataError, match=r"q.params.log.jsonl.partial: the loss log path is a folder; move it away, "
                                        r"or give --writing_params_path another path"):
        check(tmp_path / "q.params")
    (tmp_path / "r.params.state").write_text("my notes\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"r.params.state: is text, not the training state an earlier run wrote, so "
                                        r"it is not replaced; give --writing_params_path another path, or move"):
        check(tmp_path / "r.params")
    assert sorted(os.listdir(tmp_path)) == ["q.params.log.jsonl.partial", "r.params.state", "wiki.txt"]


def test_a_second_run_into_the_same_params_stops_while_the_first_trains(tmp_path):
    """A second run into a live run's params took its training state for an interrupted run's; given the
    --resume it advised, both wrote the same state, log and params (a corrupt log, a traceback). The
    first run holds <params>.lock (locks.training_lock): the second stops in one line naming its pid, and
    once the first has ended the lock file is gone and a run trains there."""
    from submission.locks import training_lock
    wiki = tmp_path / "wiki.txt"
    wiki.write_text(WIKI, encoding="utf-8")
    params = tmp_path / "a.params"
    argv = ["--function=pretrain", "--variant=vanilla", f"--pretrain_corpus_path={wiki}", *TINY,
            f"--writing_params_path={params}", "--max_epochs=1"]
    with training_lock(str(params)):  # (an flock conflicts between two opens in one process too)
        (tmp_path / "a.params.state").write_bytes(b"the live run's")
        for extra in ([], ["--resume"]):
            with pytest.raises(DataError, match=rf"a.params: another run \(pid {os.getpid()}\) is training into it "
                                                r"now \(.*a.params.lock is locked\); wait for it to end, or give this "
                                                r"run another --writing_params_path$"):
                driver.main(argv + extra)
        assert (tmp_path / "a.params.state").read_bytes() == b"the live run's"
        (tmp_path / "a.params.state").unlink()
    assert not (tmp_path / "a.params.lock").exists()
    driver.main(argv)
    assert params.exists() and not (tmp_path / "a.params.lock").exists()
    notes = tmp_path / "b.params.lock"  # a file of the user's by that name: not taken for a lock, nor removed
    notes.write_text("my notes\n", encoding="utf-8")
    driver.main(argv[:-2] + [f"--writing_params_path={tmp_path / 'b.params'}", "--max_epochs=1"])
    assert (tmp_path / "b.params").exists() and notes.read_text(encoding="utf-8") == "my notes\n"


def test_a_second_run_into_the_same_log_stops_while_the_first_trains(tmp_path):
    """Two runs into other params but one --log_path both trained to the end, truncating each other's
    `<log>.partial` and interleaving their lines (14 of 193 lines not JSON), and the first then said the log's
    folder had been moved. A --log_path is locked as the params are; /dev/null, which any run may write, is not."""
    from submission.locks import log_lock
    wiki = tmp_path / "wiki.txt"
    wiki.write_text(WIKI, encoding="utf-8")
    log = tmp_path / "logs" / "shared.log.jsonl"
    argv = ["--function=pretrain", "--variant=vanilla", f"--pretrain_corpus_path={wiki}", *TINY, "--max_epochs=1",
            f"--writing_params_path={tmp_path / 'b.params'}"]
    with log_lock(str(log)):  # the first run, writing the log now
        with pytest.raises(DataError, match=rf"shared.log.jsonl: another run \(pid {os.getpid()}\) is writing its loss "
                                            r"log there now \(.*shared.log.jsonl.lock is locked\); wait for it to end, "
                                            r"or give this run another --log_path$"):
            driver.main(argv + [f"--log_path={log}"])
        with log_lock(os.devnull):  # not locked: the run below trains
            driver.main(argv + [f"--log_path={os.devnull}"])
    assert not (tmp_path / "b.params.lock").exists() and (tmp_path / "b.params").exists()
    driver.main(argv + [f"--log_path={log}", "--restart"])
    assert sorted(os.listdir(tmp_path / "logs")) == ["shared.log.jsonl"]
    with pytest.raises(DataError, match=r"the loss log would overwrite the params this run writes"):  # not "another
        driver.main(argv + [f"--log_path={tmp_path / 'b.params'}"])  # run": the run's own params lock is no log's
    # a run given another run's default log (beside its params) as its --log_path wrote the same <log>.partial: the
    # default log is locked too; and a --log_path naming a log in progress (.partial) replaced it, so that the
    # first run's finished log held the second run's lines alone (the fuzz audit's case)
    default = tmp_path / "b.params.log.jsonl"
    with log_lock(str(default)):  # the first run, writing its default log now
        with pytest.raises(DataError, match=r"b.params.log.jsonl: another run .* is writing its loss log there now"):
            driver.main(argv[:-1] + [f"--writing_params_path={tmp_path / 'c.params'}", f"--log_path={default}"])
    default.write_text('{"step": 1, "epoch": 1}\n', encoding="utf-8")  # the first run's, finished
    kept = default.read_bytes()
    for partial in (f"{default}.partial", str(tmp_path / "x.partial")):
        with pytest.raises(DataError, match=r"\.partial: a name ending in \.partial is where a run writes its loss log "
                                            r"while it trains; give --log_path a name without it"):
            driver.main(argv[:-1] + [f"--writing_params_path={tmp_path / 'c.params'}", f"--log_path={partial}"])
    assert default.read_bytes() == kept and not (tmp_path / "c.params").exists()


def test_a_run_stopped_by_a_bad_input_leaves_no_empty_output_folder(tmp_path, capsys):
    """The output check used to make the predictions' folder before the params were read."""
    wiki = tmp_path / "wiki.txt"
    wiki.write_text(WIKI, encoding="utf-8")
    dev = tmp_path / "dev.tsv"
    dev.write_text("Where was Bo Li born?\tOslo\n", encoding="utf-8")
    argv = ["--function=evaluate", "--variant=vanilla", f"--pretrain_corpus_path={wiki}", *TINY,
            f"--reading_params_path={tmp_path / 'missing.params'}", f"--eval_corpus_path={dev}",
            f"--outputs_path={tmp_path / 'preds' / 'dev.predictions'}"]
    with pytest.raises(SystemExit) as e:
        driver.run_cli(lambda: driver.main(argv))
    assert e.value.code == 2 and "missing.params: params file not found" in capsys.readouterr().err
    assert not (tmp_path / "preds").exists()


def test_reference_eval_writes_the_same_predictions_as_the_batched_default(tmp_path, capsys, monkeypatch):
    """--reference_eval (the course's loop, one question at a time, through the course's masked-softmax
    attention) and the default batched decoding write byte-identical files, here from an untrained model,
    whose answers run the 32 steps. The loop ran with the fast attention on: not the course's computation."""
    from submission import decoding
    from submission.attention import CausalSelfAttention
    paths, sample = [], decoding.sample
    monkeypatch.setattr(decoding, "sample", lambda model, *a, **k: (paths.append(
        {m.fast for m in model.modules() if isinstance(m, CausalSelfAttention)}), sample(model, *a, **k))[1])
    (tmp_path / "wiki.txt").write_text(WIKI, encoding="utf-8")
    questions = ["Where was Ada Quill born?", "Where was Bo Li born?", "Where was Ada born?", "Where was Bo born?"]
    (tmp_path / "dev.tsv").write_text("".join(f"{q}\tLisbon\n" for q in questions), encoding="utf-8")
    torch.manual_seed(3)
    vocab = CharCorruptionDataset(WIKI, 128).vocab_size
    torch.save(GPT(GPTConfig(vocab, 128, n_layer=1, n_head=2, n_embd=16)).state_dict(), tmp_path / "v.params")
    argv = ["--function=evaluate", "--variant=vanilla", "--n_layer", "1", "--n_head", "2", "--n_embd", "16",
            f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}", f"--reading_params_path={tmp_path / 'v.params'}",
            f"--eval_corpus_path={tmp_path / 'dev.tsv'}"]
    driver.main(argv + [f"--outputs_path={tmp_path / 'batched'}"])
    assert capsys.readouterr().out.endswith("Correct: 0.0 out of 4.0: 0.0%\n"
                                            f"Predictions written to {tmp_path / 'batched'}\n")
    assert paths == []
    driver.main(argv + [f"--outputs_path={tmp_path / 'reference'}", "--reference_eval"])
    assert paths == [{False}] * len(questions)
    batched = (tmp_path / "batched").read_bytes()
    assert batched == (tmp_path / "reference").read_bytes()
    assert batched.count(b"\n") == len(questions) and all(batched.split(b"\n")[:-1])  # an answer a line


def test_evaluation_never_overwrites_its_own_input(tmp_path):
    dev = tmp_path / "birth_dev.tsv"
    dev.write_text("Where was Ada Quill born?\tLisbon\n", encoding="utf-8")
    (tmp_path / "wiki.txt").write_text(WIKI, encoding="utf-8")
    before = dev.read_bytes()
    p = subprocess.run([sys.executable, os.path.join(ROOT, "src", "run.py"), "--function=evaluate",
                        "--variant=vanilla", f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}",
                        f"--reading_params_path={tmp_path / 'none.params'}", f"--eval_corpus_path={dev}",
                        f"--outputs_path={dev}"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "would overwrite an input" in p.stderr
    assert dev.read_bytes() == before


@pytest.mark.parametrize("text, says", [
    ("", "no questions to answer"),
    ("\n\n", "no questions to answer"),
    ("Where was Ada Quill born?\tLisbon\nWhere was Bo Li born?\n", ":2: no tab-separated place, unlike line 1"),
    ("Where was Ada Quill born?\nWhere was Bo Li born?\tOslo\n", ":2: a tab-separated place, unlike line 1"),
    ("\nWhere was Ada Quill born?\tLisbon\n\nWhere was Bo Li born?\n", ":4: no tab-separated place, unlike line 2;"),
    ("Where was Ada Quill born?\t \n", ":1: expected .* found a blank question or place"),
    ("Where was Bo Li born?\n" + "Where was Ada Quill born?" * 6 + "\n",
     ":2: the question has 151 characters; .* block of 128, the size the params were trained with; shorten"),
    ("Ada Quill was born in Lisbon. " * 5 + "\n",  # --eval_corpus_path wiki.txt: "shorten the question"
     ":1: 151 characters that are no question \\(a biography\\? the pretraining corpus\\?\\); give the questions to "
     "answer, such as birth_dev.tsv or birth_test_inputs.tsv$"),
])
def test_evaluation_corpus_errors(tmp_path, text, says):
    path = tmp_path / "q.tsv"
    path.write_text(text, encoding="utf-8")
    stoi = CharCorruptionDataset(WIKI, 128).stoi
    with pytest.raises(DataError, match=says):
        driver.read_questions(str(path), stoi, 128)


def test_a_question_that_fills_the_block_with_its_mask_is_refused(tmp_path):
    """The question and its MASK must leave at least one position of the block for the answer; a test
    input's question keeps its newline (as the course reads it), which counts too."""
    stoi = CharCorruptionDataset(WIKI, 128).stoi
    q = "Where was Ada Quill born?"
    dev, inputs = tmp_path / "dev.tsv", tmp_path / "inputs.tsv"
    dev.write_text(f"{q}\tLisbon\n", encoding="utf-8")
    inputs.write_text(f"{q}\n", encoding="utf-8")
    assert driver.read_questions(str(dev), stoi, len(q) + 2) == [q]  # one position left to answer in
    with pytest.raises(DataError, match=rf"dev.tsv:1: the question has {len(q)} characters; with its MASK it leaves "
                                        rf"no room to answer in a block of {len(q) + 1},"):
        driver.read_questions(str(dev), stoi, len(q) + 1)
    assert driver.read_questions(str(inputs), stoi, len(q) + 3) == [q + "\n"]
    with pytest.raises(DataError, match=rf"inputs.tsv:1: the question has {len(q) + 1} characters; .* block of "
                                        rf"{len(q) + 2},"):
        driver.read_questions(str(inputs), stoi, len(q) + 2)


def test_finetuning_needs_examples_and_real_places():
    pre = CharCorruptionDataset(WIKI, 128)
    with pytest.raises(DataError, match="train.tsv: no `question<TAB>place` lines to finetune on"):
        NameDataset("\n", pre, "train.tsv")
    with pytest.raises(DataError, match=r"train.tsv:2: expected .* found a blank question or place"):
        parse_tsv("Where was Bo Li born?\tOslo\n \tOslo\n", "train.tsv")


def test_a_finetuning_line_longer_than_the_block_is_named():
    pre = CharCorruptionDataset(WIKI, 32)
    with pytest.raises(DataError, match=r"^train.tsv:2: question and place take 33 characters with their MASKs, "
                                        r"more than the block size 32; shorten the line \(a larger --block_size"):
        NameDataset("Where was Bo Li born?\tOslo\nWhere was Ada Quill born?\tLisbon\n", pre, "train.tsv")


def test_reserved_character_names_file_and_line():
    with pytest.raises(DataError, match=r"^wiki.txt:2: the reserved MASK character"):
        CharCorruptionDataset("Ada was born in Lisbon.\nBo \u2047 Li.\n", 128, "wiki.txt")


def test_empty_params_file_is_named(tmp_path):
    path = tmp_path / "vanilla.finetune.params"
    path.write_bytes(b"")
    model = GPT(GPTConfig(12, 16, n_layer=1, n_head=2, n_embd=8))
    with pytest.raises(ParamsError, match=r"not a loadable params file \(an empty file\)"):
        load_params(model, str(path))
    torch.save(model.state_dict(), path)
    load_params(model, str(path))


def test_run_sh_takes_folders_with_spaces(tmp_path):
    import make_world
    data = tmp_path / "my data"
    out = tmp_path / "my out"
    make_world.write_world(make_world.build_world(people=30, train=20, dev=6, seed=1), str(data))
    env = dict(os.environ, DATA_DIR=str(data), OUT_DIR=str(out), PYTHON=sys.executable)
    for mode in ("vanilla_finetune_without_pretrain", "vanilla_eval_dev_without_pretrain"):
        p = subprocess.run([os.path.join(ROOT, "run.sh"), mode] + TINY, env=env, capture_output=True, text=True,
                           timeout=300)
        assert p.returncode == 0, p.stderr[-800:]
    assert (out / "vanilla.nopretrain.dev.predictions").read_text(encoding="utf-8").count("\n") == 6


def test_bench_flags_are_checked(capsys, monkeypatch):
    import bench
    monkeypatch.setattr(bench, "get_device", lambda: pytest.fail("the bench went past its flag checks"))
    for flags, says in ((["--rounds", "0"], "--rounds must be at least 1"),
                        (["--batch", "-1"], "--batch must be at least 1, got -1"),
                        (["--ref-questions", "-1"], "--ref-questions must be 0 (all) or more, got -1")):
        with pytest.raises(SystemExit) as e:
            bench.main(flags)
        err = capsys.readouterr().err
        assert e.value.code == 2 and err.count("\n") == 1 and says in err, flags


def test_a_bench_batch_beyond_the_machines_memory_is_refused_before_any_is_built(capsys, monkeypatch):
    """`--batch 100000000` built its batches row by row until the OOM killer stopped the bench (exit 137, no
    word), the machine's memory full meanwhile; the check reads the flags and the device alone."""
    import bench
    monkeypatch.setattr(bench, "get_device", lambda: "cpu")
    monkeypatch.setattr(bench, "find_data", lambda arg: pytest.fail("the bench went past its memory check"))
    for flags, gib in ((["--batch", "100000000"], bench.bench_bytes(100000000, 5) / 2 ** 30),
                       (["--quick", "--rounds", "100000000"], bench.bench_bytes(32, 100000000) / 2 ** 30)):
        with pytest.raises(SystemExit) as e:
            bench.main(flags)
        err = capsys.readouterr().err
        assert e.value.code == 2 and err.count("\n") == 1, err
        assert f"the batches and the reference step's attention maps take at least {gib:,.0f} GiB, more than this " \
               f"machine's" in err and err.endswith("; lower --batch (the course's is 128) or --rounds (--help lists "
                                                    "the options)\n"), err
    assert bench.bench_bytes(128, 5) < 2 ** 30  # the course's batch: half a GiB, as counted
    monkeypatch.setattr(bench, "device_memory", lambda device: 2 ** 30)
    with pytest.raises(SystemExit):
        bench.main(["--batch", "300"])  # 1.15 GiB of attention maps (T = 127) alone, on a machine of 1 GiB
    assert "more than this machine's 1 GiB" in capsys.readouterr().err


def test_a_bench_on_cuda_checks_its_batches_against_the_hosts_memory_and_its_maps_against_the_gpus(capsys,
                                                                                                    monkeypatch):
    """On CUDA the bench's batches lie in the host's memory (page-locked copies beside the originals) and the
    reference step's attention maps in the GPU's. Summed against the GPU's, a --rounds typo was blamed on the
    GPU, batches beyond the host's 128 GiB passed where the GPU has 139 (an H200's) and the OOM killer ended the
    bench without a word; the course's batch and --quick still run on a GPU of 16 GB beside a host of 16."""
    import bench
    gib = 2 ** 30
    monkeypatch.setattr(bench, "get_device", lambda: "cuda")
    monkeypatch.setattr(bench, "find_data", lambda arg: pytest.fail("the bench went past its memory check"))
    for gpu, host, flags, says in (
            (139 * gib, 128 * gib, ["--rounds", "270000"], "--batch 128 with --rounds 270000: the batches take at "
                                                           "least 131 GiB, more than this machine's 128 GiB; lower "
                                                           "--rounds or --batch (the course's is 128)"),
            (16 * gib, 64 * gib, ["--rounds", "100000000"], "the batches take at least 48,447 GiB, more than this "
                                                            "machine's 64 GiB"),
            (16 * gib, 64 * gib, ["--batch", "100000"], "--batch 100000: the reference step's attention maps take "
                                                        "at least 385 GiB, more than the GPU's 16 GiB; lower --batch "
                                                        "(the course's is 128)")):
        monkeypatch.setattr(bench, "device_memory", lambda device, gpu=gpu: gpu)
        monkeypatch.setattr(bench, "host_memory", lambda host=host: host)
        with pytest.raises(SystemExit) as e:
            bench.main(flags)
        err = capsys.readouterr().err
        assert e.value.code == 2 and err.count("\n") == 1 and says in err, (flags, err)
    monkeypatch.setattr(bench, "device_memory", lambda device: 16 * 10 ** 9)  # "16 GB": 14.9 GiB
    monkeypatch.setattr(bench, "host_memory", lambda: 16 * 10 ** 9)
    for batch, rounds in ((128, 5), (32, 3), (128, 20)):  # the course's, --quick's, docs/speed.md's 20 rounds
        assert bench.memory_refusal(batch, rounds, "cuda") is None


def test_bench_names_what_set_its_thread_count(monkeypatch):
    """GPT_NUM_THREADS=1 ./run.sh bench said its 1 thread was 'the cores other processes leave free'."""
    import bench
    for gpt, omp, says in (("1", "2", "$GPT_NUM_THREADS"), (" ", "2", "$OMP_NUM_THREADS"),
                           ("", "2,1", "$OMP_NUM_THREADS"), ("", "", "other processes leave free"),
                           ("", "many", "other processes leave free")):
        monkeypatch.setenv("GPT_NUM_THREADS", gpt)
        monkeypatch.setenv("OMP_NUM_THREADS", omp)
        assert says in bench.threads_reason(None), (gpt, omp)
        assert bench.threads_reason(2) == "--threads"


def test_bench_refuses_a_data_dir_without_the_files_and_params_that_do_not_fit(capsys, tmp_path, monkeypatch):
    """Both before any timing: a mistyped --data-dir used to fall back to data/ with exit 0, and
    --params were read only after minutes of benchmarking."""
    import bench
    from submission.cli import run_cli
    timed = []
    monkeypatch.setattr(bench, "time_steps", lambda *a, **k: timed.append(a) or {})
    with pytest.raises(SystemExit) as e:
        run_cli(lambda: bench.main(["--quick", "--data-dir", str(tmp_path / "typo")]))
    assert e.value.code == 2 and "typo: no wiki.txt and birth_dev.tsv there" in capsys.readouterr().err
    (tmp_path / "junk.params").write_bytes(b"not a params file")
    with pytest.raises(SystemExit) as e:
        run_cli(lambda: bench.main(["--quick", "--params", str(tmp_path / "junk.params")]))
    assert e.value.code == 2 and "junk.params: not a loadable params file" in capsys.readouterr().err
    empty = tmp_path / "empty-dev"  # divided by zero after the whole timing run
    empty.mkdir()
    (empty / "wiki.txt").write_text(WIKI, encoding="utf-8")
    (empty / "birth_dev.tsv").write_text("", encoding="utf-8")
    with pytest.raises(SystemExit) as e:
        run_cli(lambda: bench.main(["--quick", "--data-dir", str(empty)]))
    assert e.value.code == 2 and "birth_dev.tsv: no questions; the bench times" in capsys.readouterr().err
    assert timed == []


def test_bench_checks_dev_questions_and_params_in_its_own_terms(capsys, tmp_path, monkeypatch):
    """A dev character outside the vocabulary was a KeyError traceback after the whole training timing;
    params of the other variant or size were told to use run.py's --variant= and size flags, which the
    bench did not have. Now: one line before any timing, naming the bench's --variant and its size."""
    import bench
    from submission.cli import run_cli
    timed = []
    monkeypatch.setattr(bench, "time_steps", lambda *a, **k: timed.append(a) or {})
    data = tmp_path / "data"
    data.mkdir()
    (data / "wiki.txt").write_text(WIKI, encoding="utf-8")
    (data / "birth_dev.tsv").write_text("Where was Ada Quill born?\tLisbon\nWhere was Zoë born?\tOslo\n",
                                        encoding="utf-8")

    def err_of(*flags):
        with pytest.raises(SystemExit) as e:
            run_cli(lambda: bench.main(["--quick", "--data-dir", str(data), *flags]))
        err = capsys.readouterr().err
        assert e.value.code == 2 and err.count("\n") == 1, err
        return err

    assert "birth_dev.tsv:2: character 'Z' (U+005A) is not in the vocabulary" in err_of()
    (data / "birth_dev.tsv").write_text("Where was Ada Quill born?\tLisbon\n", encoding="utf-8")
    vocab = CharCorruptionDataset(WIKI, 128).vocab_size
    synth = tmp_path / "synthesizer.finetune.params"
    torch.save(GPT(GPTConfig(vocab, 128, n_layer=4, n_head=8, n_embd=256, synthesizer=True)).state_dict(), synth)
    assert "these are synthesizer params, but the model is vanilla; pass --variant synthesizer" in err_of(
        "--params", str(synth))
    small = tmp_path / "small.params"
    torch.save(GPT(GPTConfig(vocab, 128, n_layer=2, n_head=4, n_embd=128)).state_dict(), small)
    assert "the bench evaluates the course's model size (4 layers, 8 heads, 256 dims, block 128) (the file looks " \
           "like --n_layer 2 --n_embd 128" in err_of("--params", str(small))
    assert timed == []

    class Loaded(Exception):  # the first step after the params are in
        pass

    monkeypatch.setattr(bench, "peak_flops", lambda *a: (_ for _ in ()).throw(Loaded()))
    with pytest.raises(Loaded):
        bench.main(["--quick", "--data-dir", str(data), "--params", str(synth), "--variant", "synthesizer"])


def test_a_world_the_bench_generates_is_removed_at_exit(tmp_path):
    """Without data/ the bench writes a world into a temporary folder; every run left one behind."""
    code = ("import sys, os; sys.path.insert(0, {src!r}); import bench; bench.HERE = {tmp!r}; "
            "folder, _ = bench.find_data(None); print(folder); assert os.path.isfile(os.path.join(folder, 'wiki.txt'))")
    p = subprocess.run([sys.executable, "-c", code.format(src=os.path.join(ROOT, "src"), tmp=str(tmp_path / "src"))],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert not os.path.exists(p.stdout.strip())


def test_demo_names_an_unknown_run_before_any_work(capsys, tmp_path):
    import demo
    with pytest.raises(SystemExit) as e:
        demo.main(["--variants", "nopretrain,vanila", "--out", str(tmp_path / "demo")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and "'vanila' is not a run" in err
    assert not (tmp_path / "demo").exists()


@pytest.mark.parametrize("flags, says", [
    (["--pretrain-epochs", "0"], "--pretrain-epochs must be at least 1, got 0"),
    (["--pretrain-epochs", "-1"], "--pretrain-epochs must be at least 1, got -1"),
    (["--people", "10"], "give --data-dir too"),
    (["--data-dir", "data", "--people", "1"], "--people must be at least 2"),
    (["--data-dir", "data", "--people", "10", "--train", "10"], "--train must be at least 1 and below --people"),
    # without --people the subset has the size's 100 people (it read 150 train + -50 dev, or divided by 0 dev)
    (["--data-dir", "data", "--size", "cpu", "--train", "150"],
     "below the 100 people of --size cpu (or give --people)"),
    (["--data-dir", "data", "--size", "cpu", "--train", "100"], "below the 100 people of --size cpu"),
    (["--data-dir", "data", "--size", "full", "--train", "50"], "give --people too"),
    (["--n_head", "3"], "must be a multiple of --n_head 3"),          # run.py's checks, before any step
    (["--learning_rate", "-1"], "--learning_rate must be a positive number"),
])
def test_demo_refuses_bad_flags_before_any_work(capsys, tmp_path, flags, says):
    import demo
    with pytest.raises(SystemExit) as e:
        demo.main(flags + ["--out", str(tmp_path / "demo")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and says in err
    assert not (tmp_path / "demo").exists()


def test_demo_out_that_is_a_file_is_refused_before_any_work(capsys, tmp_path):
    import demo
    from submission.cli import run_cli
    (tmp_path / "taken").write_text("a file")
    with pytest.raises(SystemExit) as e:
        run_cli(lambda: demo.main(["--out", str(tmp_path / "taken")]))
    out, err = capsys.readouterr()
    assert e.value.code == 2 and "is a file, not a folder" in err and "demo (" not in out  # no world made
    assert (tmp_path / "taken").read_text() == "a file"


def test_special_files_are_written_straight(tmp_path):
    """As root (Docker, Colab), renaming a temporary file over --outputs_path=/dev/null replaced the
    device with a regular file. Special files are written straight: here a FIFO, read back."""
    from submission.files import atomic_write_text
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        atomic_write_text(str(fifo), "Lisbon\n")
        assert os.read(reader, 100) == b"Lisbon\n"
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and os.listdir(tmp_path) == ["pipe"]


def test_text_files_drop_a_byte_order_mark_and_name_the_line_that_is_not_utf8(tmp_path):
    from submission.dataset import read_text
    bom = tmp_path / "bom.tsv"
    bom.write_bytes("\ufeffWhere was Ada Quill born?\tLisbon\n".encode("utf-8"))  # Windows Notepad's UTF-8
    assert parse_tsv(read_text(str(bom)), str(bom)) == [("Where was Ada Quill born?", "Lisbon", 1)]
    crlf = tmp_path / "wiki.txt"
    crlf.write_bytes(b"Ada Quill was born in Lisbon.\r\nBo Li was born in Oslo.\r\n")  # the vocabulary has no \r
    assert read_text(str(crlf)) == "Ada Quill was born in Lisbon.\nBo Li was born in Oslo.\n"
    bad = tmp_path / "latin1.tsv"
    bad.write_bytes(b"Where was Bo Li born?\tOslo\nWhere was Jos\xe9 born?\tLima\n")
    with pytest.raises(DataError, match=r"latin1.tsv:2: not valid UTF-8 at byte 40; save the file as UTF-8"):
        read_text(str(bad))
    with pytest.raises(DataError, match="is a folder; give the file inside it"):
        read_text(str(tmp_path))


def test_london_baseline_on_the_pretraining_corpus_says_so(tmp_path):
    """`london_baseline.py data/wiki.txt` called the biographies "questions without places (a test-inputs
    file)"."""
    import london_baseline
    path = tmp_path / "wiki.txt"
    path.write_text("\nAda Quill was born in Lisbon. She wrote.\nBo Li was born in Oslo.\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"^{path}: line 2 is no question<TAB>place line \(a biography\? the "
                                        r"pretraining corpus\?\), so London cannot be scored; give a labelled"):
        london_baseline.london_accuracy(str(path))


def test_london_baseline_on_a_test_inputs_file_says_it_needs_places(tmp_path):
    """It said 'line 1: expected question<TAB>place ...; fix or remove that line' of birth_test_inputs.tsv."""
    import london_baseline
    path = tmp_path / "birth_test_inputs.tsv"
    path.write_text("Where was Ada Quill born?\nWhere was Bo Li born?\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"inputs.tsv: questions without places \(a test-inputs file\), so London "
                                        r"cannot be scored; give a labelled"):
        london_baseline.london_accuracy(str(path))
    path.write_text("Where was Ada Quill born?\tLondon\nWhere was Bo Li born?\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"inputs.tsv:2: expected `question<TAB>place`, found 1 tab-separated"):
        london_baseline.london_accuracy(str(path))
    path.write_text("Where was Ada Quill born?\tLondon\nWhere was Bo Li born?\tOslo\n", encoding="utf-8")
    assert london_baseline.london_accuracy(str(path)) == (2, 1)


def test_an_answer_with_a_newline_keeps_one_prediction_a_line(tmp_path, capsys):
    """A model that writes newlines inside its answers: the course's file then has extra lines and
    every later prediction is read against the wrong question; here each answer stays on its line."""
    (tmp_path / "wiki.txt").write_text(WIKI, encoding="utf-8")
    dev = tmp_path / "dev.tsv"
    dev.write_text("Where was Ada Quill born?\tLisbon\nWhere was Bo Li born?\tOslo\n", encoding="utf-8")
    vocab = CharCorruptionDataset(WIKI, 128)
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab.vocab_size, 128, n_layer=1, n_head=2, n_embd=16))
    with torch.no_grad():
        model.ln_f.bias.fill_(1.0)
        model.head.weight[vocab.stoi["\n"]] = 10.0  # "\n" wins every step
    torch.save(model.state_dict(), tmp_path / "m.params")
    out = tmp_path / "dev.predictions"
    driver.run_cli(lambda: driver.main(["--function=evaluate", "--variant=vanilla", *TINY,
                                        f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}",
                                        f"--reading_params_path={tmp_path / 'm.params'}",
                                        f"--eval_corpus_path={dev}", f"--outputs_path={out}"]))
    lines = out.read_text(encoding="utf-8").split("\n")
    assert len(lines) == 3 and lines[2] == "" and lines[0].strip() == "" and len(lines[0]) > 10
    assert "Correct: 0.0 out of 2.0" in capsys.readouterr().out


@pytest.mark.parametrize("answers, note", [(["", ""], True), (["", "Oslo"], False), ([" ", ""], False)])
def test_all_answers_empty_says_the_model_has_not_learned_to_answer(tmp_path, capsys, monkeypatch, answers, note):
    """After `--max_epochs 1` every answer was empty and the run said only "Correct: 0.0 out of 500.0", a
    file of blank lines beside it: a note says why (the closing MASK written at once) and what to do."""
    (tmp_path / "wiki.txt").write_text(WIKI, encoding="utf-8")
    dev = tmp_path / "dev.tsv"
    dev.write_text("Where was Bo Li born?\tOslo\nWhere was Ada Quill born?\tLisbon\n", encoding="utf-8")
    monkeypatch.setattr(driver, "predict_places", lambda model, questions, stoi, itos: answers)
    torch.save(GPT(GPTConfig(CharCorruptionDataset(WIKI, 128).vocab_size, 128, n_layer=1, n_head=2,
                             n_embd=16)).state_dict(), tmp_path / "m.params")
    driver.main(["--function=evaluate", "--variant=vanilla", *TINY[:6],
                 f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}", f"--reading_params_path={tmp_path / 'm.params'}",
                 f"--eval_corpus_path={dev}", f"--outputs_path={tmp_path / 'dev.predictions'}"])
    err = capsys.readouterr().err
    said = ("run.py: note: all 2 answers are empty (the model writes the closing MASK at once): it has not learned "
            "to answer yet; train it longer (the course's epochs, without --max_epochs)\n")
    assert err == said if note else said not in err


def test_predictions_are_one_answer_a_line_in_the_corpus_order(tmp_path, capsys, monkeypatch):
    """The grader reads the predictions file line by line against the questions: the answer to the n-th
    question on the n-th line, each line ending in "\\n" on every system, blank lines of the corpus
    skipped; a test-inputs file gets its predictions and the course's no-targets line."""
    (tmp_path / "wiki.txt").write_text(WIKI, encoding="utf-8")
    dev, inputs = tmp_path / "dev.tsv", tmp_path / "inputs.tsv"
    dev.write_text("Where was Bo Li born?\tOslo\nWhere was Ada Quill born?\tLisbon\n\nWhere was Ada born?\tOslo\n",
                   encoding="utf-8")
    inputs.write_text("Where was Ada born?\nWhere was Bo Li born?\nWhere was Ada Quill born?\n", encoding="utf-8")
    answers = {"Where was Bo Li born?": "Oslo", "Where was Ada Quill born?": "Lisbon", "Where was Ada born?": "Quill"}
    monkeypatch.setattr(driver, "predict_places",  # the model's answers, known: here the file's format is tested
                        lambda model, questions, stoi, itos: [answers[q.rstrip("\n")] for q in questions])
    torch.save(GPT(GPTConfig(CharCorruptionDataset(WIKI, 128).vocab_size, 128, n_layer=1, n_head=2,
                             n_embd=16)).state_dict(), tmp_path / "m.params")
    argv = ["--function=evaluate", "--variant=vanilla", *TINY[:6], f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}",
            f"--reading_params_path={tmp_path / 'm.params'}"]
    out = tmp_path / "dev.predictions"
    assert driver.main(argv + [f"--eval_corpus_path={dev}", f"--outputs_path={out}"]) == (3.0, 2.0)
    assert out.read_bytes() == b"Oslo\nLisbon\nQuill\n"
    assert capsys.readouterr().out.endswith(f"Correct: 2.0 out of 3.0: {2 / 3 * 100}%\nPredictions written to {out}\n")
    out = tmp_path / "test.predictions"
    assert driver.main(argv + [f"--eval_corpus_path={inputs}", f"--outputs_path={out}"]) == (0, 0)
    assert out.read_bytes() == b"Quill\nOslo\nLisbon\n"
    assert capsys.readouterr().out.endswith(f"Predictions written to {out}; no targets provided\n")


def test_predictions_replace_an_earlier_file_whole(tmp_path, monkeypatch):
    """An evaluation writes its predictions to a temporary file renamed over the earlier one (atomically),
    so a reader of the earlier file (a grader, an editor) reads it whole, and an evaluation stopped midway
    leaves it as it was. Written in place, the earlier file was cut short under its reader."""
    (tmp_path / "wiki.txt").write_text(WIKI, encoding="utf-8")
    dev = tmp_path / "dev.tsv"
    dev.write_text("Where was Bo Li born?\tOslo\n", encoding="utf-8")
    monkeypatch.setattr(driver, "predict_places", lambda model, questions, stoi, itos: ["Oslo"])
    torch.save(GPT(GPTConfig(CharCorruptionDataset(WIKI, 128).vocab_size, 128, n_layer=1, n_head=2,
                             n_embd=16)).state_dict(), tmp_path / "m.params")
    out = tmp_path / "dev.predictions"
    out.write_text("Lisbon\n", encoding="utf-8")  # an earlier evaluation's
    with open(out, encoding="utf-8") as earlier:  # opened before this evaluation, read after it
        driver.main(["--function=evaluate", "--variant=vanilla", *TINY[:6],
                     f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}",
                     f"--reading_params_path={tmp_path / 'm.params'}",
                     f"--eval_corpus_path={dev}", f"--outputs_path={out}"])
        assert earlier.read() == "Lisbon\n"
    assert out.read_text(encoding="utf-8") == "Oslo\n" and sorted(os.listdir(tmp_path)) == [
        "dev.predictions", "dev.tsv", "m.params", "wiki.txt"]


@pytest.mark.parametrize("unbuffered", ["1", None])
def test_an_evaluation_into_a_closed_pipe_still_writes_its_predictions(tmp_path, unbuffered):
    """`./run.sh vanilla_eval_dev_... | head -1` with PYTHONUNBUFFERED=1 (Docker images and CI often set
    it): the "decoded" line, printed before the predictions were written, met the closed pipe, and the
    run ended with status 141, no predictions file and no word. A closed stdout no longer stops the
    work: the file is written, then the status is 141."""
    (tmp_path / "wiki.txt").write_text(WIKI, encoding="utf-8")
    dev = tmp_path / "dev.tsv"
    dev.write_text("Where was Ada Quill born?\tLisbon\nWhere was Bo Li born?\tOslo\n", encoding="utf-8")
    torch.manual_seed(0)
    model = GPT(GPTConfig(CharCorruptionDataset(WIKI, 128).vocab_size, 128, n_layer=1, n_head=2, n_embd=16))
    torch.save(model.state_dict(), tmp_path / "m.params")
    out = tmp_path / "dev.predictions"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = unbuffered
    p = subprocess.Popen([sys.executable, os.path.join(ROOT, "src", "run.py"), "--function=evaluate",
                          "--variant=vanilla", *TINY[:6], f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}",
                          f"--reading_params_path={tmp_path / 'm.params'}", f"--eval_corpus_path={dev}",
                          f"--outputs_path={out}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    p.stdout.close()  # the reader has gone before the first line
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 141 and err == ""
    assert out.read_text(encoding="utf-8").count("\n") == 2


def test_training_into_a_closed_pipe_with_its_stderr_still_writes_its_params(tmp_path):
    """`./run.sh vanilla_pretrain ... 2>&1 | head -1`: the progress bar (stderr) met the closed pipe and
    the run ended without its params. Both streams to the closed pipe: the params are written, then 141."""
    (tmp_path / "wiki.txt").write_text(WIKI * 4, encoding="utf-8")
    out = tmp_path / "p.params"
    p = subprocess.Popen([sys.executable, os.path.join(ROOT, "src", "run.py"), "--function=pretrain",
                          "--variant=vanilla", *TINY, "--block_size", "32",
                          f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}", f"--writing_params_path={out}"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    p.stdout.close()
    assert p.wait(timeout=120) == 141
    assert out.exists() and (tmp_path / "p.params.log.jsonl").exists()
    assert sorted(os.listdir(tmp_path)) == ["p.params", "p.params.card.json", "p.params.log.jsonl", "wiki.txt"]


@pytest.mark.parametrize("closed", ["2>&-", ">&-", "<&-"])
def test_training_started_with_a_closed_stream_writes_its_params(tmp_path, closed):
    """`./run.sh MODE 2>&-` (a cron line, a daemon): bash leaves its script open read-only where stderr was, and
    every write to it failed (EBADF): the run ended with status 1, no params, not a word, and a .log.jsonl.partial
    left. A stream Python got as None (`>&-`) failed at the first flush. Each is /dev/null now (cli.run_cli)."""
    (tmp_path / "wiki.txt").write_text(WIKI * 4, encoding="utf-8")
    command = " ".join(shlex.quote(a) for a in [
        os.path.join(ROOT, "run.sh"), "vanilla_pretrain", *TINY, "--block_size", "32"])
    env = dict(os.environ, PYTHON=sys.executable, DATA_DIR=str(tmp_path), OUT_DIR=str(tmp_path / "out"))
    p = subprocess.run(["bash", "-c", f"{command} {closed}"], cwd=str(tmp_path), capture_output=True, text=True,
                       timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(tmp_path / "out")) == ["vanilla.pretrain.params", "vanilla.pretrain.params.card.json",
                                                    "vanilla.pretrain.params.log.jsonl"]
    if closed == "2>&-":  # a script outside the package (oneline.lenient_streams): its usage error's status, not 1
        command = " ".join(shlex.quote(a) for a in [os.path.join(ROOT, "run.sh"), "plot", "curves", "missing.log",
                                                      "--out", "c.png"])
        p = subprocess.run(["bash", "-c", f"{command} {closed}"], cwd=str(tmp_path), capture_output=True, text=True,
                           timeout=120, env=env)
        assert p.returncode == 2 and not os.path.exists(tmp_path / "c.png")


def test_the_closed_stream_guard_is_the_same_in_and_outside_the_package():
    """The graded package imports nothing from src/*.py, so oneline keeps its own copy of the guard: one fixed
    without the other would leave the grader, plots and make_world (or the package's tools) as they were."""
    import inspect

    import oneline
    from submission import cli
    for name in ("_closed_to_devnull", "_read_only"):
        assert inspect.getsource(getattr(oneline, name)) == inspect.getsource(getattr(cli, name))


@pytest.mark.parametrize("command, closed, status, says", [
    (["src/ask.py", "--params", "m.params"], "<&-", 2, "ask.py: nothing to ask: give questions or names as "
                                                       "arguments, or one a line on standard input"),
    (["src/ask.py", "--params", "m.params", "Ada Quill"], ">&-", 0, ""),
    (["src/london_baseline.py", "dev.tsv"], ">&-", 0, ""),
    (["src/london_baseline.py", "dev.tsv"], "2>&-", 0, None),
])
def test_a_tool_started_with_a_closed_stream_says_what_it_would_with_dev_null(tmp_path, command, closed, status,
                                                                               says):
    """ask with standard input closed (`<&-`) failed on None.isatty(); london_baseline and ask with stdout closed on
    None.flush(): tracebacks. A closed stream is /dev/null: ask with nothing to ask says so, the rest run."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "wiki.txt").write_text(WIKI, encoding="utf-8")
    (data / "birth_places_train.tsv").write_text("Where was Ada Quill born?\tLisbon\n", encoding="utf-8")
    (tmp_path / "dev.tsv").write_text("Where was Ada Quill born?\tLisbon\n", encoding="utf-8")
    torch.manual_seed(0)
    model = GPT(GPTConfig(CharCorruptionDataset(WIKI, 128).vocab_size, 128, n_layer=1, n_head=2, n_embd=16))
    torch.save(model.state_dict(), tmp_path / "m.params")
    if command[0] == "src/ask.py":
        command = command + ["--data-dir", str(data), "--n_layer", "1", "--n_head", "2", "--n_embd", "16"]
    line = " ".join(shlex.quote(a) for a in [sys.executable, os.path.join(ROOT, command[0]), *command[1:]])
    p = subprocess.run(["bash", "-c", f"{line} {closed}"], cwd=str(tmp_path), capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == status and "Traceback" not in p.stderr, p.stderr
    if says is not None:
        assert p.stderr.strip() == says


def test_a_tool_that_only_prints_stops_at_a_closed_pipe(tmp_path):
    """ask's only product is what it prints: with its reader gone it stops (status 141) instead of
    answering standard input into /dev/null for ever."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "wiki.txt").write_text(WIKI, encoding="utf-8")
    (data / "birth_places_train.tsv").write_text("Where was Ada Quill born?\tLisbon\n", encoding="utf-8")
    torch.manual_seed(0)
    model = GPT(GPTConfig(CharCorruptionDataset(WIKI, 128).vocab_size, 128, n_layer=1, n_head=2, n_embd=16))
    torch.save(model.state_dict(), tmp_path / "m.params")
    p = subprocess.Popen([sys.executable, os.path.join(ROOT, "src", "ask.py"), "--params", str(tmp_path / "m.params"),
                          "--data-dir", str(data), "--n_layer", "1", "--n_head", "2", "--n_embd", "16"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=dict(os.environ, PYTHONUNBUFFERED="1"))
    p.stdout.close()
    p.stdin.write(b"Ada Quill\n")  # one name, and standard input left open: more may come
    p.stdin.flush()
    try:
        assert p.wait(timeout=60) == 141
    finally:
        p.kill()
        p.stdin.close()


@pytest.mark.parametrize("command", [["src/grader.py", "--list"], ["src/submission/dataset.py", "namedata"],
                                     ["src/dataset.py", "namedata"], ["src/london_baseline.py", "data/birth_dev.tsv"],
                                     ["src/make_world.py", "--stats", "data"]])
def test_output_into_a_closed_pipe_stops_quietly(command):
    """`python src/grader.py | head` ended in a BrokenPipeError traceback; a shell tool exits 141."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # buffered, as a pipe usually is
    p = subprocess.Popen([sys.executable, *command], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env)
    p.stdout.close()  # the reader has gone before the first line (torch takes a second to load)
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 141 and err == ""


@pytest.mark.parametrize("argv, said", [
    (["evaluate", "vanila"], "--variant (or the second positional) must be vanilla or synthesizer, got 'vanila'; "
                             "did you mean vanilla?"),
    (["evaluat", "vanilla"], "--function (or the first positional) must be pretrain, finetune or evaluate, got "
                             "'evaluat'; did you mean evaluate?"),
    (["evaluate", "transformer"], "must be vanilla or synthesizer, got 'transformer' (--help"),
    ([], "--function (or the first positional) must be pretrain, finetune or evaluate, and none was given")])
def test_a_mistyped_function_or_variant_is_named_with_the_choice_it_is_close_to(argv, said, capsys):
    """`run.py evaluate vanila` said "--variant must be vanilla or synthesizer": a flag the user never typed, and
    not what they typed."""
    with pytest.raises(SystemExit):
        driver.parse_args(argv)
    assert said in capsys.readouterr().err


def test_hints_name_what_the_caller_can_change(tmp_path, monkeypatch):
    """run.py started by run.sh (RUN_SH_MODE) names DATA_DIR and the modes; started by hand, the path and
    its own flags. A missing file in data/ (the embedded corpus) names the command that regenerates it."""
    from submission.dataset import read_text
    monkeypatch.delenv("RUN_SH_MODE", raising=False)
    with pytest.raises(DataError, match=r"typo.tsv: dev set not found; check the path$"):
        read_text(str(tmp_path / "typo.tsv"), "dev set")
    with pytest.raises(DataError, match=r"python src/make_world.py --out data` regenerates the embedded corpus"):
        read_text(os.path.join(ROOT, "data", "not-there.tsv"), "dev set")
    # the course's layouts: src/data/ is a link to data/, so its paths read the embedded corpus; a file
    # beside the script (another edition's layout) gets the embedded file named, from here
    monkeypatch.chdir(os.path.join(ROOT, "src"))
    assert read_text(os.path.join("data", "wiki.txt"), "pretraining corpus") == read_text(
        os.path.join(ROOT, "data", "wiki.txt"), "pretraining corpus")
    with pytest.raises(DataError, match=rf"^wiki.txt: pretraining corpus not found; check the path "
                                        r"\(the embedded corpus has it: "
                                        rf"{re.escape(os.path.join('..', 'data', 'wiki.txt'))}\)$"):
        read_text("wiki.txt", "pretraining corpus")
    # a folder of the user's own (the course's files, mistyped): no hint towards another vocabulary
    with pytest.raises(DataError, match=r"cs224n-data.wiki.txt: pretraining corpus not found; check the path$"):
        read_text(str(tmp_path / "cs224n-data" / "wiki.txt"), "pretraining corpus")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataError, match=r"^wiki.txt: pretraining corpus not found; check the path$"):
        read_text("wiki.txt", "pretraining corpus")  # a bare name in the user's own folder: none either
    (tmp_path / "wiki.txt").write_text(WIKI, encoding="utf-8")
    (tmp_path / "dev.tsv").write_text("Where was Ada Quill born?\tLisbon\n", encoding="utf-8")
    vocab = CharCorruptionDataset(WIKI, 128).vocab_size
    torch.save(GPT(GPTConfig(vocab, 128, n_layer=1, n_head=2, n_embd=16, synthesizer=True)).state_dict(),
               tmp_path / "s.params")
    argv = ["--function=evaluate", "--variant=vanilla", "--n_layer", "1", "--n_head", "2", "--n_embd", "16",
            f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}", f"--reading_params_path={tmp_path / 's.params'}",
            f"--eval_corpus_path={tmp_path / 'dev.tsv'}", f"--outputs_path={tmp_path / 'p'}"]
    for mode, fix in ((None, "pass --variant=synthesizer or use the vanilla params file"),
                      ("vanilla_eval_dev_with_pretrain", "this run.sh mode runs the vanilla model; use a synthesizer "
                                                         "mode, or give it vanilla params"),
                      ("vanilla_eval_dev_without_pretrain", "this run.sh mode runs the vanilla model; give it vanilla "
                                                            "params (without pretraining there is only the vanilla "
                                                            "model)")):
        if mode:
            monkeypatch.setenv("RUN_SH_MODE", mode)
        with pytest.raises(ParamsError) as e:
            driver.main(argv)
        assert str(e.value).endswith("these are synthesizer params, but the model is vanilla; " + fix)
    # the course's form gives the variant as a positional, where --variant would be "given twice"
    monkeypatch.delenv("RUN_SH_MODE")
    course_form = ["evaluate", "vanilla", str(tmp_path / "wiki.txt")] + [a for a in argv if not a.startswith(
        ("--function", "--variant", "--pretrain_corpus_path"))]
    with pytest.raises(ParamsError) as e:
        driver.main(course_form)
    assert str(e.value).endswith("these are synthesizer params, but the model is vanilla; give synthesizer as the "
                                 "variant, the second positional, or use the vanilla params file")
    (tmp_path / "other.txt").write_text(WIKI + "\u00e9\n", encoding="utf-8")  # one character more: another vocabulary
    torch.save(GPT(GPTConfig(vocab, 128, n_layer=1, n_head=2, n_embd=16)).state_dict(), tmp_path / "v.params")
    course_form = [str(tmp_path / "other.txt") if a == str(tmp_path / "wiki.txt") else
                   a.replace("s.params", "v.params") for a in course_form]
    with pytest.raises(ParamsError) as e:
        driver.main(course_form)
    assert str(e.value).endswith("use the same pretraining corpus (the third positional) the params were trained "
                                 "with"), str(e.value)
    monkeypatch.setenv("RUN_SH_MODE", mode)  # the run.sh mode's hints again, as before the course's form
    with pytest.raises(DataError, match=r"typo.tsv: dev set not found; check the path \(run.sh reads the folder "
                                        r"DATA_DIR names\)$"):
        read_text(str(tmp_path / "typo.tsv"), "dev set")
    # `cd src; DATA_DIR=data ./run.sh ...`: src/data is the course's place, a link to the repo's data/
    monkeypatch.chdir(os.path.join(ROOT, "src"))
    assert read_text("data/birth_dev.tsv", "dev set") == read_text(os.path.join(ROOT, "data", "birth_dev.tsv"))
    with pytest.raises(DataError, match=r"^data/birth_dev.tssv: dev set not found \(check the path; `python "
                                        r"src/make_world.py --out data` regenerates the embedded corpus\)$"):
        read_text("data/birth_dev.tssv", "dev set")


@pytest.mark.parametrize("unbuffered", [False, True])
def test_grader_into_a_closed_pipe_still_writes_its_results_json(tmp_path, broken_src, unbuffered):
    """`grader.py --json r.json | head` stopped at the closed pipe before any test ran, so staff piping
    it lost results.json; and a student's print met the closed pipe inside a test, which then failed.
    The tests go on (their prints and the frame's into /dev/null), results.json is written, then 141."""
    # a student's dataset that prints while it is built, a moment after the reader has gone
    src, _ = broken_src("dataset.py", "\n_course_init = CharCorruptionDataset.__init__\n"
                                      "def _chatty_init(self, *args, **kwargs):\n"
                                      "    import time; time.sleep(0.3)\n"
                                      "    print('data has many characters', flush=True)\n"
                                      "    print('and says so on stderr', file=sys.stderr, flush=True)\n"
                                      "    _course_init(self, *args, **kwargs)\n"
                                      "CharCorruptionDataset.__init__ = _chatty_init\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:  # Docker images and CI often set it: every print then meets the pipe at once
        env["PYTHONUNBUFFERED"] = "1"
    out = tmp_path / "results.json"
    p = subprocess.Popen([sys.executable, str(src / "grader.py"), "--json", str(out), "--data-dir",
                          os.path.join(ROOT, "data"), "1e-0", "1e-2"], cwd=tmp_path, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, env=env)  # `2>&1 | head`: both streams into the pipe
    for line in p.stdout:  # the reader goes once the first test has started
        if line.startswith(b"----- START 1e-0"):
            break
    p.stdout.close()
    assert p.wait(timeout=300) == 141
    report = json.loads(out.read_text())
    assert [t["name"].split(":")[0] for t in report["tests"]] == ["1e-0-basic", "1e-2-basic"]
    assert all(t["score"] == t["max_score"] for t in report["tests"]), report["tests"]


@pytest.mark.parametrize("flag, says", [
    ("--max-epochs", "unrecognized arguments: --max-epochs; did you mean --max_epochs? (--help"),
    ("--n-layer", "unrecognized arguments: --n-layer; did you mean --n_layer? (--help"),
    ("--learning-rat", "unrecognized arguments: --learning-rat; did you mean --learning_rate? (--help"),
    ("--data-dir", "unrecognized arguments: --data-dir; run.sh's modes read the corpus from the folder DATA_DIR "
                   "names (DATA_DIR=FOLDER ./run.sh MODE); run.py takes each file: --pretrain_corpus_path"),
    ("--frobnicate", "unrecognized arguments: --frobnicate (--help lists the options)"),
    ("-max_epochs", "unrecognized arguments: -max_epochs; did you mean --max_epochs? (--help"),  # one dash
    ("-data-dir", "unrecognized arguments: -data-dir; run.sh's modes read the corpus from the folder DATA_DIR "
                  "names"),  # one dash, and a flag of another command: its hint
    ("max_epochs", "error: max_epochs: a flag is written with two dashes: --max_epochs (--help"),  # none:
])  # "function given twice, as 'max_epochs' and as --function='pretrain'"
def test_a_misspelt_flag_is_answered_with_the_nearest_one(capsys, flag, says):
    """Other commands spell their flags with hyphens (demo --data-dir, bench --no-compile): a flag
    of the wrong spelling, or mistyped, names the one meant."""
    argv = ["--function=pretrain", "--variant=vanilla", "--pretrain_corpus_path=w", "--writing_params_path=p"]
    assert says in one_line_exit(capsys, argv + [flag, "1"])  # (the 1 is taken as a positional)


def test_a_tilde_the_shell_left_is_the_home_folder(monkeypatch, tmp_path, capsys):
    """`--writing_params_path=~/gpt/v.params` (no expansion after a flag's =) or a quoted "~/x" wrote into a
    folder named ~ in the current one, while run.py said "Params written to ~/gpt/v.params"."""
    monkeypatch.setenv("HOME", str(tmp_path))
    args = driver.parse_args(["--function=pretrain", "--variant=vanilla", "--pretrain_corpus_path", "~/w.txt",
                              "--writing_params_path=~/gpt/v.params", "--log_path=~user/x"])
    assert args.pretrain_corpus_path == str(tmp_path / "w.txt")
    assert args.writing_params_path == str(tmp_path / "gpt" / "v.params")
    assert args.log_path == "~user/x"  # another user's home: left as given
    # positionals that are paths, and abbreviated flags, too; text that is no path stays as typed
    course_style = driver.parse_args(["pretrain", "vanilla", "~/w.txt", "--writing_p=~/v.params"])
    assert course_style.pretrain_corpus_path == str(tmp_path / "w.txt")
    assert course_style.writing_params_path == str(tmp_path / "v.params")
    import ask
    import london_baseline
    import make_world
    import plots
    curves = plots.build_parser().parse_args(["curves", "~/a.log.jsonl", "--title", "~/runs: 2", "--out", "~/c.png"])
    assert (curves.logs, curves.title, curves.out) == ([str(tmp_path / "a.log.jsonl")], "~/runs: 2",
                                                       str(tmp_path / "c.png"))
    attention = plots.build_parser().parse_args(["attention", "--params", "~/p", "--question", "~", "--out", "a.png"])
    assert (attention.params, attention.question) == (str(tmp_path / "p"), "~")
    asked = ask.build_parser().parse_args(["--params", "~/p", "--data=~/d", "~/Emily"])
    assert (asked.params, asked.data_dir, asked.texts) == (str(tmp_path / "p"), str(tmp_path / "d"), ["~/Emily"])
    (tmp_path / "dev.tsv").write_text("Where was Bo Li born?\tLondon\n", encoding="utf-8")
    london_baseline.main(["~/dev.tsv"])  # EVAL_TSV
    assert "Correct: 1.0 out of 1.0: 100.0%" in capsys.readouterr().out
    assert make_world.main(["--stats", "~"]) == 2  # no world in the home folder: its line names it, expanded
    assert f"make_world.py: error: {tmp_path / 'wiki.txt'}: not found" in capsys.readouterr().err


def test_every_script_suggests_flags_its_subcommands_know(capsys):
    import ask
    import plots
    with pytest.raises(SystemExit) as e:
        ask.main(["--params", "p", "--data_dir", "d", "Emily Lee"])
    assert e.value.code == 2
    assert capsys.readouterr().err == ("ask.py: error: unrecognized arguments: --data_dir; did you mean --data-dir? "
                                       "(--help lists the options)\n")
    with pytest.raises(SystemExit):
        plots.main(["attention", "--params", "p", "--variant", "vanilla", "--pretrain_corpus_path", "w",
                    "--question", "q", "--out", "o.png", "--last_row"])
    assert "unrecognized arguments: --last_row; did you mean --last-row?" in capsys.readouterr().err


def test_a_flag_gets_the_nearest_one_or_else_its_hint_never_both_and_never_itself(capsys):
    """Mutation audit of _suggestions and nearest: the demo knows --data-dir and hints run.py's folder flags,
    --data_dir among them: the near flag is said, and the hint only for a flag with none near (--out_dir). A
    subcommand's flag put before the subcommand is no misspelling: "did you mean --last-row?" is not said, but
    where it goes is."""
    import demo
    import plots
    for flag, says in (("--data_dir", "did you mean --data-dir?"), ("--out_dir", "the demo's folders are --data-dir "
                                                                                "and --out")):
        with pytest.raises(SystemExit) as e:
            demo.main([flag, "x"])
        assert e.value.code == 2
        assert capsys.readouterr().err.endswith(f": error: unrecognized arguments: {flag}; {says} (--help lists the "
                                                f"options)\n")
    with pytest.raises(SystemExit):  # its value after = (which some Pythons' argparse keep in the message) aside
        demo.main(["--out_dir=o"])
    assert "; the demo's folders are --data-dir and --out (--help lists the options)" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        plots.main(["--last-row", "attention", "--params", "p", "--variant", "vanilla", "--pretrain_corpus_path", "w",
                    "--question", "q", "--out", "o.png"])
    assert e.value.code == 2
    assert capsys.readouterr().err == ("plots.py: error: unrecognized arguments: --last-row; put --last-row after "
                                       "attention: a command's flags follow its name (--help lists the options)\n")


@pytest.mark.parametrize("argv, says", [
    # argparse takes the flag's value for the command's name
    (["--out", "o.png", "curves", "a.log"], "invalid choice: 'o.png'"),
    (["--dpi=50", "curves", "a.log", "--out", "o.png"], "unrecognized arguments: --dpi=50"),
    (["--out", "o.png"], "invalid choice: 'o.png'"),
])
def test_a_commands_flag_before_its_name_is_told_where_it_goes(capsys, argv, says):
    import plots
    with pytest.raises(SystemExit) as e:
        plots.main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    flag = argv[0].split("=")[0]
    where = "curves" if "curves" in argv else "the command's name (curves or attention)"
    assert says in err and f"; put {flag} after {where}: a command's flags follow" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("argv", [
    ["curves", "a.log", "--out", "o.png", "--last-row"],  # after the name, but another command's flag
    ["--last-row", "curves", "a.log", "--out", "o.png"],  # before it: curves has no --last-row either
    ["nonsense", "--out", "o.png"],  # no flag before the bad command's name
])
def test_no_placement_hint_where_moving_the_flag_would_not_help(capsys, argv):
    import plots
    with pytest.raises(SystemExit) as e:
        plots.main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith("plots.py: error: ") and err.count("\n") == 1, err
    assert ("unrecognized arguments: --last-row" if "--last-row" in argv else "invalid choice: 'nonsense'") in err
    assert "put " not in err


def test_an_output_path_holding_another_kind_of_file_is_refused(tmp_path, capsys):
    """Only a run's own inputs were protected: a typo put the loss log over vanilla.model.params (exit 0,
    a 103-byte JSON file where the params were), the predictions over pretrained params, the params
    over birth_dev.tsv. An output may replace only what an earlier run of its kind wrote."""
    wiki = tmp_path / "wiki.txt"
    wiki.write_text(WIKI, encoding="utf-8")
    train = tmp_path / "train.tsv"
    train.write_text("Where was Bo Li born?\tOslo\n", encoding="utf-8")
    dev = tmp_path / "dev.tsv"
    dev.write_text("Where was Bo Li born?\tOslo\n", encoding="utf-8")
    vocab = CharCorruptionDataset(WIKI, 128).vocab_size
    params = tmp_path / "v.params"
    torch.save(GPT(GPTConfig(vocab, 128, n_layer=1, n_head=2, n_embd=16)).state_dict(), params)
    other_dev, other_params = tmp_path / "other_dev.tsv", tmp_path / "vanilla.pretrain.params"
    other_dev.write_bytes(dev.read_bytes())
    other_params.write_bytes(params.read_bytes())
    other_wiki, inputs = tmp_path / "other_wiki.txt", tmp_path / "birth_test_inputs.tsv"  # no tab in either
    other_wiki.write_text("Ada Quill was born in Lisbon and spent her long life there, writing about the sea.\n",
                          encoding="utf-8")
    inputs.write_text("Where was Bo Li born?\n", encoding="utf-8")
    log = tmp_path / "old.log.jsonl"
    log.write_text('{"step": 1, "loss": 4.2}\n', encoding="utf-8")
    finetune = ["--function=finetune", "--variant=vanilla", *TINY, f"--pretrain_corpus_path={wiki}",
                f"--finetune_corpus_path={train}"]
    evaluate = ["--function=evaluate", "--variant=vanilla", *TINY[:6], f"--pretrain_corpus_path={wiki}",
                f"--reading_params_path={params}", f"--eval_corpus_path={dev}"]
    kept = {p: p.read_bytes() for p in (params, other_dev, other_params, log, other_wiki, inputs)}
    for argv, says in (
            (finetune + [f"--writing_params_path={tmp_path / 'w.params'}", f"--log_path={params}"],
             f"{params}: is a torch file (params or a training state), not the loss log an earlier run wrote"),
            (finetune + [f"--writing_params_path={other_dev}"],
             f"{other_dev}: is a corpus of questions, not the params an earlier run wrote"),
            (finetune + [f"--writing_params_path={log}"], f"{log}: is a loss log (JSON lines), not the params"),
            (evaluate + [f"--outputs_path={other_params}"],
             f"{other_params}: is a torch file (params or a training state), not the predictions"),
            (evaluate + [f"--outputs_path={other_dev}"], "is a corpus of questions, not the predictions"),
            # biographies, like the written answers or a README: text of lines no prediction has (the written
            # answers were called "a corpus (questions or biographies)")
            (evaluate + [f"--outputs_path={other_wiki}"], f"{other_wiki}: is text with lines longer than a "
                                                          f"prediction can be (64 characters), not the predictions"),
            (evaluate + [f"--outputs_path={inputs}"], f"{inputs}: is a corpus of questions")):
        with pytest.raises(SystemExit) as e:
            driver.run_cli(lambda: driver.main(argv))
        err = capsys.readouterr().err
        assert e.value.code == 2 and says in err and err.count("\n") == 1, err
        assert "give the" in err and "another path, or move the file away first" in err
        assert {p: p.read_bytes() for p in kept} == kept
    # an earlier run's outputs are replaced as before: params, its log, predictions
    out = tmp_path / "w.params"
    driver.main(finetune + [f"--writing_params_path={out}"])
    driver.main(finetune + [f"--writing_params_path={out}"])
    predictions = tmp_path / "dev.predictions"
    # edited by hand, or answers that read as a corpus line or a log row: refused as such before
    for edited in ("Oslo\n".encode("utf-16"), "Oslo\n".encode("utf-16-le"), b"Oslo\r\n", b"",
                   b"Where was Ada born?\n", b"{x} Lisbon\n", b"Oslo\tOslo\n"):
        predictions.write_bytes(edited)
        driver.main(evaluate + [f"--outputs_path={predictions}"])
        assert predictions.read_text(encoding="utf-8").count("\n") == 1
    # text under another name is replaced only when it has one line a question, as predictions of this
    # corpus do: a user's short-lined notes were replaced as "text" (the audit's notes.txt)
    notes = tmp_path / "notes.txt"
    notes.write_text("todo\nbuy milk\n", encoding="utf-8")
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        driver.run_cli(lambda: driver.main(evaluate + [f"--outputs_path={notes}"]))
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and err.startswith(
        f"error: {notes}: is text of 2 lines, not the predictions an earlier evaluation of {dev} wrote (1 line)"), err
    assert notes.read_text(encoding="utf-8") == "todo\nbuy milk\n"
    # a link named as the course names predictions is judged by the file it points at: the notes were
    # replaced through link.predictions (the fuzz audit's case)
    link = tmp_path / "link.predictions"
    link.symlink_to(notes)
    with pytest.raises(SystemExit) as e:
        driver.run_cli(lambda: driver.main(evaluate + [f"--outputs_path={link}"]))
    assert e.value.code == 2 and "is text of 2 lines, not the predictions" in capsys.readouterr().err
    assert notes.read_text(encoding="utf-8") == "todo\nbuy milk\n" and link.is_symlink()
    three = tmp_path / "three.tsv"  # fewer lines than questions is no earlier run's either
    three.write_text("Where was Bo Li born?\tOslo\n" * 3, encoding="utf-8")
    with pytest.raises(SystemExit) as e:
        driver.run_cli(lambda: driver.main([a for a in evaluate if not a.startswith("--eval_corpus_path")]
                                           + [f"--eval_corpus_path={three}", f"--outputs_path={notes}"]))
    assert e.value.code == 2 and "is text of 2 lines, not the predictions" in capsys.readouterr().err
    assert notes.read_text(encoding="utf-8") == "todo\nbuy milk\n"
    mine = tmp_path / "mine.txt"
    mine.write_text("\n", encoding="utf-8")  # an earlier run's one empty prediction
    driver.main(evaluate + [f"--outputs_path={mine}"])
    assert mine.read_text(encoding="utf-8").count("\n") == 1


def test_legacy_params_of_any_pickle_protocol_are_params(tmp_path):
    """torch.save(..., _use_new_zipfile_serialization=False) with pickle protocol 3-5 read as "a pickle",
    so a rerun would not replace the course's own legacy-format params."""
    from submission.files import reads_as
    for protocol in (2, 3, 4, 5):
        path = tmp_path / f"p{protocol}.params"
        torch.save({"w": torch.zeros(2)}, path, _use_new_zipfile_serialization=False, pickle_protocol=protocol)
        assert reads_as(str(path)) == "torch"
    import pickle
    with open(tmp_path / "plain.pkl", "wb") as f:
        pickle.dump({"w": [0.0, 0.0]}, f, protocol=4)
    assert reads_as(str(tmp_path / "plain.pkl")) == "pickle"


def test_a_stream_without_the_corpus_characters_gets_escapes_not_a_traceback(tmp_path):
    """On Windows a redirected stdout is cp1252, which lacks the MASK character: `dataset.py
    charcorruption > out.txt` (the course's sanity check) ended in a UnicodeEncodeError traceback."""
    env = dict(os.environ, PYTHONIOENCODING="cp1252")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "src", "submission", "dataset.py"), "charcorruption"],
                       capture_output=True, env=env, timeout=300)
    assert p.returncode == 0 and b"Traceback" not in p.stderr, p.stderr[-500:]
    assert b"\\u2047" in p.stdout  # the MASK, escaped


def test_paths_on_another_windows_drive_are_shown_whole(monkeypatch):
    """os.path.relpath and commonpath raise ValueError between two Windows drives: the grader's file
    names, the missing-torch hint and the demo's ask command raised it instead of showing the path."""
    import gradedpackage
    import startup

    def other_drive(*args, **kwargs):
        raise ValueError("path is on mount 'D:', start on mount 'C:'")
    monkeypatch.setattr(os.path, "relpath", other_drive)
    monkeypatch.setattr(os.path, "commonpath", other_drive)
    assert startup._shown("run.sh") == shlex.quote(os.path.join(startup.ROOT, "run.sh"))
    assert gradedpackage.typed_path("/elsewhere/x.predictions") == "/elsewhere/x.predictions"


def test_the_machines_limits_end_in_one_line(tmp_path, capsys):
    """A file the system will not open, memory run out, torch.compile without a C++ compiler: each ended
    in a traceback (the robustness audit); each is one line now, exit status 1. Anything else keeps its
    traceback, the report of a bug."""
    from submission.cli import machine_limit, run_cli
    cases = [
        (PermissionError(13, "Permission denied", "data/birth_dev.tsv"),
         "data/birth_dev.tsv: Permission denied; check the file's permissions, or give another path"),
        (RuntimeError("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: "
                      "you tried to allocate 343670784 bytes. Error code 12 (Cannot allocate memory)"),
         "out of memory on the CPU, trying to allocate 328 MiB: a smaller --batch_size, or a smaller model"),
        (torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                                     "capacity of 79.19 GiB"),
         "out of memory on the GPU, trying to allocate 2.00 GiB: "),
        (MemoryError(), "out of memory on the CPU: a smaller --batch_size"),
        (RuntimeError("InductorError: InvalidCxxCompiler: No working C++ compiler found in cpp_builder.py"),
         "torch.compile found no working C/C++ compiler: install one (Debian: apt-get install g++), "
         "or train without compiling (--no_compile)"),
        (RuntimeError("Failed to find C compiler. Please specify via CC environment variable."),  # Triton's
         "torch.compile found no working C/C++ compiler"),
        (OSError(30, "Read-only file system", "/mnt/ro/x.params"), "/mnt/ro/x.params: Read-only file system; give "
                                                                   "another path"),
        (PermissionError(1, "Operation not permitted", "s.params"), "s.params: Operation not permitted; check the "
                                                                     "file's permissions"),
        (OSError(40, "Too many levels of symbolic links", "loop"), "loop: Too many levels of symbolic links; give"),
        (OSError(36, "File name too long", "x" * 300), "x" * 300 + ": File name too long; give another path"),
        (RuntimeError("MPS backend out of memory (MPS allocated: 17.00 GB). Tried to allocate 256.00 MB"),
         "out of memory on the GPU, trying to allocate 256.00 MB"),
    ]
    for error, says in cases:
        assert machine_limit(error).startswith(says)

        def main(error=error):
            raise error
        with pytest.raises(SystemExit) as e:
            run_cli(main)
        err = capsys.readouterr().err
        assert e.value.code == 1 and err.startswith("error: " + says) and err.count("\n") == 1, err
    for bug in (RuntimeError("shape mismatch"), FileNotFoundError(2, "No such file", "x"), OSError("no file"),
                OSError(18, "Invalid cross-device link", "a"), PermissionError(13, "Permission denied")):
        assert machine_limit(bug) is None

        def main(bug=bug):
            raise bug
        with pytest.raises(type(bug)):
            run_cli(main)


def test_a_cpu_compile_that_fails_on_a_path_with_a_space_is_one_line(tmp_path, monkeypatch):
    """torch 2.13's inductor gives g++ its folders unquoted: a checkout (and so its .venv) or a compile cache at a
    path with a space failed --compile's first step on the CPU with a 117-line traceback (the environment audit).
    The failure is named in one line with the folder and the fix; other C++ compile errors keep their traceback."""
    from submission.cli import machine_limit
    from submission.fastpath import inductor_paths_with_space
    error = RuntimeError("InductorError: CppCompileError: C++ compile error\n\nCommand:\ng++ /tmp/a b/c.cpp")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "a cache"))
    assert machine_limit(error) == (f"torch.compile could not build its C++ kernels: torch.compile's cache is at "
                                    f"'{tmp_path / 'a cache'}', a path with a space, which this torch gives its "
                                    f"compiler unquoted; set TORCHINDUCTOR_CACHE_DIR to a folder whose path has none, "
                                    f"or train without compiling (--no_compile)")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))  # spaced only where tmp_path or torch is
    assert (machine_limit(error) is None) == (not inductor_paths_with_space())


@pytest.mark.skipif(not any(shutil.which(c) for c in ("g++", "c++", "clang++")), reason="no C++ compiler")
def test_compiling_on_the_cpu_with_a_spaced_cache_ends_in_one_line_or_trains(tmp_path):
    """The whole run: --compile on the CPU with TORCHINDUCTOR_CACHE_DIR at a path with a space. torch 2.13 (the
    pinned one) fails to compile there: one line, status 1, no params; a torch that quotes its paths trains."""
    (tmp_path / "wiki.txt").write_text(WIKI * 20, encoding="utf-8")
    (tmp_path / "train.tsv").write_text("Where was Ada Quill born?\tLisbon\n" * 16, encoding="utf-8")
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "a cache"))
    params = tmp_path / "out.params"
    p = subprocess.run([sys.executable, os.path.join(ROOT, "src", "run.py"), "--function=finetune",
                        "--variant=vanilla", f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}",
                        f"--finetune_corpus_path={tmp_path / 'train.tsv'}", f"--writing_params_path={params}",
                        "--compile", "--block_size", "48", *TINY],
                       capture_output=True, text=True, timeout=300, env=env)
    if torch.__version__.startswith("2.13"):
        last = p.stderr.strip().splitlines()[-1]
        assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr[-3000:]
        assert last.startswith("error: torch.compile could not build its C++ kernels: torch.compile's cache is at")
        assert "a cache" in last and not params.exists()
    else:
        assert p.returncode in (0, 1) and "Traceback" not in p.stderr, p.stderr[-3000:]


def test_a_diverged_training_run_is_one_line_and_status_1(capsys):
    """A NaN loss is no bad input (status 2) but a run that failed: status 1, its message in one line."""
    from submission.cli import TrainingDiverged, run_cli

    said = "the training loss is nan at step 3 (epoch 1); try a smaller --learning_rate"

    def main():
        raise TrainingDiverged(said)
    with pytest.raises(SystemExit) as e:
        run_cli(main, keep_working=True)
    assert e.value.code == 1 and capsys.readouterr().err == f"error: {said}\n"


def test_run_cli_gives_back_the_streams_it_guarded(capsys):
    """keep_working guards stdout and stderr against a closed pipe while main runs; a program that calls
    run_cli in its own process (a notebook, a script of the user's) gets its own streams back afterwards,
    whether main returned or stopped at a bad input."""
    import signal
    from submission.cli import run_cli
    streams = (sys.stdout, sys.stderr)

    def bad_input():
        raise DataError("dev.tsv:2: a bad line")
    try:
        assert run_cli(lambda: 7, keep_working=True) == 7
        assert sys.stdout is streams[0] and sys.stderr is streams[1]
        with pytest.raises(SystemExit):
            run_cli(bad_input, keep_working=True)
        assert sys.stdout is streams[0] and sys.stderr is streams[1]
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # run_cli ignores Ctrl-C once it has answered
    assert capsys.readouterr().err == "error: dev.tsv:2: a bad line\n"


def test_a_pipe_given_as_a_corpus_is_named_as_one(tmp_path):
    """`--eval_corpus_path <(...)`, /dev/stdin or a FIFO read as "not found", which the file is not."""
    fifo = tmp_path / "dev.tsv"
    os.mkfifo(fifo)
    from submission.dataset import read_text
    for path in (str(fifo), os.devnull):
        with pytest.raises(DataError, match=r": not a regular file \(a pipe or a device\); save the dev set to a "
                                            r"file and give that$"):
            read_text(path, "dev set")
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")  # a loop; and a link whose target is gone
    os.symlink(tmp_path / "gone.tsv", tmp_path / "dangling.tsv")
    (tmp_path / "real.tsv").write_text("Where was Bo Li born?\tOslo\n", encoding="utf-8")
    os.symlink(tmp_path / "real.tsv", tmp_path / "link.tsv")  # a link to a file reads as the file
    assert read_text(str(tmp_path / "link.tsv"), "dev set") == "Where was Bo Li born?\tOslo\n"
    for name in ("a", "dangling.tsv"):
        with pytest.raises(DataError, match=rf"{name}: a symbolic link to nothing \(its target is missing, or the "
                                            rf"links loop\); give the dev set itself$"):
            read_text(str(tmp_path / name), "dev set")


def test_length_groups_with_compiles_own_cuda_graphs_is_one_line(capsys, monkeypatch):
    """--length_groups N > 1 with a compile mode that records CUDA graphs (flag or GPT_COMPILE) on CUDA: one
    line; on the CPU, with another mode, or with --no_compile the flags stand."""
    monkeypatch.setattr(driver, "get_device", lambda: "cuda")
    monkeypatch.delenv("GPT_COMPILE", raising=False)
    argv = ["--function=pretrain", "--variant=vanilla", "--pretrain_corpus_path=w", "--writing_params_path=p",
            "--length_groups", "2"]
    err = one_line_exit(capsys, argv + ["--compile_mode", "reduce-overhead"])
    assert ("error: length groups (2) do not train under torch.compile's reduce-overhead mode on CUDA (its CUDA "
            "graphs per group width crashed on an H100); use step graphs (--step_graphs), whose own graphs take "
            "length groups, or compile mode default") in err
    monkeypatch.setenv("GPT_COMPILE", "max-autotune")
    assert "or compile mode default (GPT_COMPILE=max-autotune sets the mode)" in one_line_exit(capsys, argv)
    assert driver.parse_args(argv + ["--compile"]).compile  # --compile: torch's default mode, no graphs
    assert driver.parse_args(argv + ["--no_compile"]).no_compile
    monkeypatch.delenv("GPT_COMPILE")
    assert driver.parse_args(argv).length_groups == 2  # "auto" compiling takes the default mode for it
    assert driver.parse_args(argv + ["--compile_mode", "default"]).compile_mode == "default"
    monkeypatch.setattr(driver, "get_device", lambda: "cpu")
    assert driver.parse_args(argv + ["--compile_mode", "reduce-overhead"]).length_groups == 2


def test_step_graphs_under_gpt_compiles_own_cuda_graphs_is_one_line(capsys, monkeypatch):
    """GPT_COMPILE=reduce-overhead with --step_graphs on CUDA: the trainer would compile in that mode and refuse
    it with a traceback; run.py says so in one line and names the variable. A compile flag decides over it."""
    monkeypatch.setattr(torch, "__version__", "2.13.0")
    monkeypatch.setattr(driver, "get_device", lambda: "cuda")
    monkeypatch.setenv("GPT_COMPILE", "reduce-overhead")
    argv = ["--function=pretrain", "--variant=vanilla", "--pretrain_corpus_path=w", "--writing_params_path=p",
            "--step_graphs"]
    err = one_line_exit(capsys, argv)
    assert ("error: --step_graphs needs no CUDA graphs of torch.compile's own (compile mode reduce-overhead records "
            "them: use default or max-autotune-no-cudagraphs); GPT_COMPILE=reduce-overhead sets that mode: unset it "
            "or leave --step_graphs out") in err
    for flags in (["--no_compile"], ["--compile"], ["--compile_mode", "default"]):
        assert driver.parse_args(argv + flags).step_graphs
    monkeypatch.setattr(driver, "get_device", lambda: "cpu")  # on the CPU the mode is still named first
    assert "GPT_COMPILE=reduce-overhead sets that mode" in one_line_exit(capsys, argv)
    monkeypatch.setenv("GPT_COMPILE", "default")  # the need is the GPU's: the variable is not blamed
    err = one_line_exit(capsys, argv)
    assert "--step_graphs needs a CUDA GPU (this run would train on cpu); leave it out" in err


@pytest.mark.parametrize("env", [None, "reduce-overhead", "max-autotune", "default", "1", "0", "eager"])
def test_run_py_refuses_exactly_the_compile_modes_the_trainer_would_use(monkeypatch, env):
    """run.py's checks of --step_graphs and --length_groups read the compile mode as fastpath.compile_setting
    decides it (flags first, then GPT_COMPILE), so that no refused run gets past them to fail in the trainer."""
    from submission.fastpath import GRAPH_MODES, compile_setting
    from submission.trainer import TrainerConfig
    if env is None:
        monkeypatch.delenv("GPT_COMPILE", raising=False)
    else:
        monkeypatch.setenv("GPT_COMPILE", env)
    base = ["--function=pretrain", "--variant=vanilla", "--pretrain_corpus_path=w", "--writing_params_path=p"]
    for flags in ([], ["--no_compile"], ["--compile"], ["--compile_mode", "reduce-overhead"],
                  ["--compile_mode", "max-autotune"], ["--compile_mode", "default"]):
        for asked in (["--step_graphs"], ["--length_groups", "2"]):
            args = driver.parse_args(base + flags)  # checked without the option (on this CPU), then given it
            args.step_graphs, args.length_groups = asked == ["--step_graphs"], 2 if "--length_groups" in asked else None
            tconf = driver.apply_overrides(TrainerConfig(max_epochs=650, batch_size=128), args)
            kwargs = compile_setting(tconf, "cuda", steps=14950) or {}
            trainer_refuses = kwargs.get("mode") in GRAPH_MODES
            assert (driver.asked_compile_mode(args)[0] in GRAPH_MODES) == trainer_refuses, (env, flags, asked)


def test_an_unknown_gpt_compile_backend_is_one_line(capsys, monkeypatch):
    """GPT_COMPILE=yes (or a typo of a mode) was taken for a backend's name, and torch.compile failed at the first
    step with a traceback; run.py names the variable and its values before any work. A compile flag, evaluation
    and the course's loop do not read the variable, and a backend torch knows passes."""
    monkeypatch.setenv("GPT_COMPILE", "yes")
    argv = ["--function=pretrain", "--variant=vanilla", "--pretrain_corpus_path=w", "--writing_params_path=p"]
    err = one_line_exit(capsys, argv)
    assert ("error: GPT_COMPILE=yes: not 0 or 1, a torch.compile mode (default, reduce-overhead, max-autotune, "
            "max-autotune-no-cudagraphs) or a backend torch knows (inductor, eager, aot_eager, ...); fix it or unset "
            "it") in err
    for flags in (["--no_compile"], ["--compile"], ["--reference_train"]):
        driver.parse_args(argv + flags)
    driver.parse_args(["--function=evaluate", "--variant=vanilla", "--pretrain_corpus_path=w",
                       "--reading_params_path=p", "--eval_corpus_path=e", "--outputs_path=o"])
    for known in ("eager", "inductor", "reduce-overhead", "0", "1"):
        monkeypatch.setenv("GPT_COMPILE", known)
        driver.parse_args(argv)


def test_pack_flags_contradict_what_they_cannot_run_with_and_set_the_part_s_packing_only_when_given(capsys):
    """Mutation audit: --pack and --no_pack are one choice; --pack replaces the length groups and has no step
    graphs, and the course's loop (--reference_train) has none of them: each is a usage error naming the
    flag. Given, they set TrainerConfig.pack; without them the part's "auto" stays."""
    base = ["--function=pretrain", "--variant=vanilla", "--pretrain_corpus_path=w", "--writing_params_path=p"]
    for flags, says in ((["--pack", "--no_pack"], "--no_pack contradicts --pack; give one of them"),
                        (["--pack", "--length_groups", "2"], "leave out --pack or --length_groups"),
                        (["--pack", "--step_graphs"], "leave out --pack or --step_graphs"),
                        (["--reference_train", "--pack"], "--reference_train is the course's loop, without --pack")):
        assert says in one_line_exit(capsys, base + flags), flags
    for flags, packs in (([], "auto"), (["--pack"], True), (["--no_pack"], False)):
        assert driver.apply_overrides(TrainerConfig(), driver.parse_args(base + flags)).pack == packs, flags


@pytest.mark.parametrize("argv, says", [
    (["pretrain", "vanilla", "max_epochs", "1"], "error: max_epochs: a flag is written with two dashes: --max_epochs"),
    (["--function=pretrain", "--variant=vanilla", "--pretrain_corpus_path=w", "max-epochs", "1"],
     "error: max-epochs: a flag is written with two dashes: --max_epochs"),
])
def test_a_flag_without_its_dashes_is_named_wherever_it_is_and_however_it_is_spelt(capsys, argv, says):
    """Mutation audit of flag_named and parse_args: a bare flag word after the course-style positionals, or
    spelt with a hyphen for the underscore, is named as the flag meant, not as a fourth positional."""
    assert says in one_line_exit(capsys, argv + ["--writing_params_path=p"])


def test_a_long_labelled_line_is_a_question_too_long_not_a_biography(tmp_path):
    """Mutation audit of read_questions: only a line without a place is taken for a biography; a long
    question<TAB>place line is a question too long for the block."""
    path = tmp_path / "q.tsv"
    path.write_text("Ada Quill was born in Lisbon. " * 5 + "\tLisbon\n", encoding="utf-8")
    with pytest.raises(DataError, match=r":1: the question has 150 characters; with its MASK"):
        driver.read_questions(str(path), CharCorruptionDataset(WIKI, 128).stoi, 128)


def test_a_loss_log_given_by_its_own_flag_is_named_by_its_own_path(tmp_path):
    """Mutation audit of check_outputs: a --log_path the user gave that cannot serve is theirs to change;
    "give --writing_params_path another path (the loss log goes beside it)" is for the log derived from the
    params' path."""
    (tmp_path / "wiki.txt").write_text(WIKI, encoding="utf-8")
    (tmp_path / "logs").mkdir()
    args = driver.parse_args(["--function=pretrain", "--variant=vanilla",
                              f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}",
                              f"--writing_params_path={tmp_path / 'v.params'}", f"--log_path={tmp_path / 'logs'}"])
    with pytest.raises(DataError, match=r"logs: the loss log path is a folder; give a file path$"):
        driver.check_outputs(args)


def test_a_tilde_before_a_user_name_is_left_as_typed(monkeypatch, tmp_path):
    """Mutation audit of oneline.home: only `~` and `~/...` are the home folder; `~root/x` (another user's
    home, which the shell would have expanded unquoted) is left as given."""
    if os.path.expanduser("~root/x") == "~root/x":
        pytest.skip("no user named root here")
    monkeypatch.setenv("HOME", str(tmp_path))
    args = driver.parse_args(["--function=pretrain", "--variant=vanilla", "--pretrain_corpus_path=~root/w.txt",
                              "--writing_params_path=~/v.params"])
    assert (args.pretrain_corpus_path, args.writing_params_path) == ("~root/w.txt", str(tmp_path / "v.params"))


CS224N_RUN_PY = r"""
import random, torch
import dataset, model, trainer, utils, attention
import submission
assert dataset.NameDataset is submission.NameDataset and model.GPT is submission.GPT
assert trainer.Trainer is submission.Trainer and attention.SynthesizerAttention is submission.SynthesizerAttention
text = open('data/wiki.txt', encoding='utf-8').read()
pretrain_dataset = dataset.CharCorruptionDataset(text, 128)
mconf = model.GPTConfig(pretrain_dataset.vocab_size, pretrain_dataset.block_size, n_layer=1, n_head=2, n_embd=8)
m = model.GPT(mconf)
rows = open('data/birth_dev.tsv', encoding='utf-8').read().split('\n')[:3]
ft = dataset.NameDataset(pretrain_dataset, '\n'.join(rows) + '\n')
tconf = trainer.TrainerConfig(max_epochs=1, batch_size=3, learning_rate=6e-4, num_workers=0)
trainer.Trainer(m, ft, None, tconf).train()
x = torch.tensor([pretrain_dataset.stoi[s] for s in rows[0].split('\t')[0] + '\u2047'], dtype=torch.long)[None, ...]
pred = utils.sample(m, x, 4, sample=False)[0]
print(utils.evaluate_places('data/birth_dev.tsv', ['London'] * 500))
"""


def test_a_cs224n_run_py_imports_the_assignments_modules_as_siblings_of_src():
    """CS224N's src/run.py imports dataset, model, trainer and utils as modules beside it (XCS224N's keep them
    in src/submission/); docs/course.md says either edition's run.py works unchanged, and from src/ such a
    program stopped at once with ModuleNotFoundError: No module named 'dataset'. Each name is the package's
    module itself, and CS224N's `python src/dataset.py charcorruption` prints its examples."""
    env = dict(os.environ, GPT_NUM_THREADS="1", PYTHONPATH="")
    done = subprocess.run([sys.executable, "-c", CS224N_RUN_PY], cwd=os.path.join(ROOT, "src"), env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("(500.0, 25.0)"), done.stdout[-500:]
    shown = subprocess.run([sys.executable, os.path.join("src", "dataset.py"), "charcorruption"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert shown.stdout.count("\nx: ") + shown.stdout.startswith("x: ") == 4 and shown.stdout.count("\ny: ") == 4


def test_the_least_and_most_each_flag_takes_are_accepted_as_given(monkeypatch):
    """The ranges' ends are settings a user gives: --state_every 0 saves every epoch, --num_workers 0 loads in the
    training process, --dropout 0 and --length_groups 1 turn them off; each is taken, not refused."""
    monkeypatch.delenv("RUN_SH_MODE", raising=False)
    base = ["--function=pretrain", "--variant=vanilla", "--pretrain_corpus_path=w", "--writing_params_path=p"]
    least = dict(state_every=0.0, num_workers=0, dropout=0.0, length_groups=1, max_epochs=1, batch_size=1, seed=0)
    most = dict(max_epochs=2 ** 31 - 1, batch_size=2 ** 31 - 1, seed=2 ** 32 - 1, dropout=0.999)
    for values in (least, most):
        args = driver.parse_args(base + [x for k, v in values.items() for x in (f"--{k}", str(v))])
        assert {k: getattr(args, k) for k in values} == values


def test_fill_size_names_only_the_flags_that_took_the_courses_value():
    """fill_size's answer is what the params file left unsaid: a size it records is not guessed (a file with a
    card was told it "does not say how many heads it has" when --n_embd did not fit them), a flag given not at all."""
    import argparse
    import modelflags
    args = argparse.Namespace(n_layer=None, n_head=None, n_embd=12, block_size=None, variant=None)
    assert modelflags.fill_size(args, {"n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 32}) == []
    assert (args.n_layer, args.n_head, args.n_embd, args.block_size, args.variant) == (1, 2, 12, 32, "vanilla")
    args = argparse.Namespace(n_layer=None, n_head=None, n_embd=None, block_size=None, variant=None)
    assert modelflags.fill_size(args, {"n_layer": 1, "n_embd": 16, "block_size": 32, "synthesizer": True}) == ["n_head"]
    assert (args.n_head, args.n_embd, args.variant) == (8, 16, "synthesizer")


def test_a_data_folder_that_is_a_file_is_named_so(tmp_path, monkeypatch):
    """`--data-dir data/wiki.txt` (ask, memorised, the demo) or DATA_DIR set to a file said
    "data/wiki.txt/wiki.txt: pretraining corpus not found; check the path": the path it names is a file."""
    from submission.dataset import read_text
    monkeypatch.delenv("RUN_SH_MODE", raising=False)
    (tmp_path / "wiki.txt").write_text(WIKI, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataError, match=r"^wiki.txt/wiki.txt: wiki.txt is a file, not a folder; give the path of the "
                                        r"pretraining corpus itself, or where a flag takes its folder \(--data-dir\), "
                                        r"the folder that holds it$"):
        read_text(os.path.join("wiki.txt", "wiki.txt"), "pretraining corpus")
    monkeypatch.setenv("RUN_SH_MODE", "vanilla_eval_dev_with_pretrain")
    deep = tmp_path / "wiki.txt" / "sub" / "birth_dev.tsv"
    with pytest.raises(DataError, match=rf"^{re.escape(str(deep))}: {re.escape(str(tmp_path / 'wiki.txt'))} is a "
                                        r"file, not a folder \(run.sh reads the folder DATA_DIR names\); give the "
                                        r"folder that holds the dev set$"):
        read_text(str(deep), "dev set")
    with pytest.raises(DataError, match=r"typo.tsv: dev set not found; check the path"):  # a folder's missing file
        read_text(str(tmp_path / "typo.tsv"), "dev set")


def test_a_corpus_flag_given_a_file_with_a_slash_after_it_is_not_sent_to_its_folder(tmp_path, monkeypatch):
    """`--finetune_corpus_path data/birth_places_train.tsv/` (run.py's flags take a file) was told to "give the
    folder that holds the finetuning corpus", and given data/ run.py refuses a folder ("give the file inside it"):
    the message names the corpus's own path too."""
    monkeypatch.delenv("RUN_SH_MODE", raising=False)
    monkeypatch.setenv("GPT_DEVICE", "cpu")
    wiki = tmp_path / "wiki.txt"
    wiki.write_text(WIKI, encoding="utf-8")
    with pytest.raises(DataError) as e:
        driver.main(["--function=pretrain", "--variant=vanilla", *TINY, "--block_size", "32",
                     f"--pretrain_corpus_path={wiki}{os.sep}", f"--writing_params_path={tmp_path / 'p.params'}"])
    assert str(e.value) == (f"{wiki}{os.sep}: {wiki} is a file, not a folder; give the path of the pretraining corpus "
                            f"itself, or where a flag takes its folder (--data-dir), the folder that holds it")
    assert not (tmp_path / "p.params").exists()


def test_a_bench_data_folder_given_as_a_file_is_named_a_file(tmp_path, monkeypatch):
    """`./run.sh bench --data-dir data/wiki.txt` (or DATA_DIR=data/wiki.txt) said "data/wiki.txt: no wiki.txt and
    birth_dev.tsv there", of a path that is the wiki.txt itself; as the grader, deliverables and read_text do, the
    bench names it a file, before any timing."""
    import bench
    monkeypatch.setattr(bench, "get_device", lambda: "cpu")
    wiki = tmp_path / "wiki.txt"
    wiki.write_text(WIKI, encoding="utf-8")
    threads = torch.get_num_threads()
    try:
        with pytest.raises(DataError) as e:
            bench.main(["--quick", "--data-dir", str(wiki)])
    finally:
        torch.set_num_threads(threads)  # the bench set its own count before reading the data
    assert str(e.value) == (f"{wiki}: is a file, not a folder (the --data-dir, run.sh's DATA_DIR); give the folder "
                            f"that holds it")


@pytest.mark.parametrize("codec,mark", [("utf-16-le", "FF FE"), ("utf-16-be", "FE FF")])
def test_the_scripts_name_a_utf16_file_in_the_words_of_one_function(tmp_path, codec, mark):
    """The grader, make_world, the plots and ask name a UTF-16 file (a Windows editor's "Unicode") with
    oneline.utf16's words, each with its own fix; each of them had its own copy of the check and the words."""
    import io

    import ask
    import grader
    import make_world
    import plots
    from graderlib import Failure
    from oneline import utf16
    data = ("\ufeff" + "Where was Ann Lee born?\tLima\n").encode(codec)
    said = f"UTF-16 text (byte-order mark {mark}), not UTF-8"
    assert utf16(data) == said and utf16(b"Where") is None and utf16(b"") is None
    path = tmp_path / "file.txt"
    path.write_bytes(data)
    with pytest.raises(Failure) as e:
        grader.read_utf8(str(path))
    assert str(e.value).endswith(f"file.txt: {said}; save it as UTF-8")
    with pytest.raises(make_world.WorldError) as e:
        make_world._read_lines(str(path))
    assert str(e.value) == f"{path}: {said}; save the file as UTF-8"
    with pytest.raises(plots.PlotError) as e:
        plots.read_log(str(path))
    assert str(e.value) == f"{path}: {said}; save it as UTF-8, or plot the log run.py wrote"
    with pytest.raises(ask.NotUTF8) as e:
        list(ask._lines(io.TextIOWrapper(io.BytesIO(data)), "a question"))
    assert str(e.value) == f"standard input is {said}; save it as UTF-8"
    assert grader.utf16 is plots.utf16 is make_world.utf16 is ask.utf16 is utf16

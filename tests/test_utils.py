"""Utilities: scoring, atomic writes and the params loader's checks. (Batched decoding against
the course's one-at-a-time `sample` is tested in test_fast.py.)

Run:  python -m pytest -q tests/test_utils.py
"""
import io
import os
import pickle
import re
import shlex
import zipfile

import pytest
import torch

from submission import GPT, GPTConfig
from submission.utils import DataError, ParamsError, atomic_write_text, evaluate_places, load_params, same_place


def test_evaluate_places(tmp_path):
    p = tmp_path / "dev.tsv"
    p.write_text("Where was A born?\tOslo\nWhere was B born?\tLima\n", encoding="utf-8")
    assert evaluate_places(str(p), ["Oslo", "Rome"]) == (2.0, 1.0)
    assert evaluate_places(str(p), ["oslo", "LIMA"]) == (2.0, 0.0)  # exact, as the course compares
    q = tmp_path / "test.tsv"
    q.write_text("Where was A born?\n", encoding="utf-8")
    assert evaluate_places(str(q), ["Oslo"]) == (0, 0)
    with pytest.raises(ValueError, match="2 labelled questions but 1 predictions"):
        evaluate_places(str(p), ["Oslo"])
    with pytest.raises(AssertionError):  # what the course's assert raises
        evaluate_places(str(p), ["Oslo", "Rome", "Lima"])
    r = tmp_path / "mixed.tsv"  # the course's x[1]: an IndexError naming neither file nor line
    r.write_text("Where was A born?\tOslo\n\nWhere was B born?\nWhere was C born?\tLima\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"mixed.tsv:3: a question without its place, where the first line has one"):
        evaluate_places(str(r), ["Oslo", "Rome", "Lima"])
    cut = tmp_path / "cut.tsv"  # the first line decides: a labelled file whose last line lost its place is no test file
    cut.write_text("Where was A born?\tOslo\nWhere was B born?\tLima\nWhere was C born?\t\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"cut.tsv:3: a question without its place"):
        evaluate_places(str(cut), ["Oslo", "Lima", "Rome"])
    later = tmp_path / "later.tsv"  # and an unlabelled first line makes a test file, whatever comes after
    later.write_text("Where was A born?\nWhere was B born?\tLima\n", encoding="utf-8")
    assert evaluate_places(str(later), ["Oslo", "Lima"]) == (0, 0)


def test_evaluate_places_drops_the_spaces_that_end_a_line(tmp_path):
    """As the course's x.strip().split('\\t'): spaces or a tab after the place are no part of it."""
    p = tmp_path / "dev.tsv"
    p.write_text("Where was A born?\tOslo  \nWhere was B born?\tLima\t\nWhere was C born?\tRiga\n", encoding="utf-8")
    assert evaluate_places(str(p), ["Oslo", "Lima", "Riga "]) == (3.0, 2.0)


def test_same_place_counts_what_evaluate_places_counts(tmp_path):
    """same_place, the rule of the scorers that work in memory, agrees with evaluate_places: the prediction as
    written against the place less the spaces that end its line (spaces before the place count)."""
    p = tmp_path / "dev.tsv"
    for predicted, place in (("Lima", "Lima"), ("Lima", "Lima  "), ("Lima", " Lima"), (" Lima", " Lima"),
                             ("Lima ", "Lima"), (" Lima", "Lima"), ("lima", "Lima")):
        p.write_text(f"Where was A born?\t{place}\n", encoding="utf-8")
        assert same_place(predicted, place) == (evaluate_places(str(p), [predicted]) == (1.0, 1.0)), (predicted, place)
    assert same_place("Lima", "Lima  ") and not same_place("Lima", " Lima") and not same_place("Lima ", "Lima")


def test_atomic_write_replaces_whole_file(tmp_path):
    p = tmp_path / "out.predictions"
    atomic_write_text(str(p), "old\n")

    class Boom(Exception):
        pass

    def failing(f):
        f.write(b"half")
        raise Boom()

    from submission.files import _atomic
    with pytest.raises(Boom):
        _atomic(str(p), failing)
    assert p.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["out.predictions"]


@pytest.mark.parametrize("error, says", [
    (OSError(28, "No space left on device"), "No space left on device"),
    (RuntimeError("[enforce fail at inline_container.cc:603] . unexpected pos 64 vs 0\n"
                  "PytorchStreamWriter failed writing file data/0: file write failed"),
     "torch.save stopped part way: PytorchStreamWriter failed"),
    # seen on a full tmpfs: torch's internal check, not worth quoting
    (RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 901952 vs 901840"),
     "torch.save stopped part way"),
])
def test_a_full_disk_is_one_line_and_keeps_the_old_file(tmp_path, error, says):
    from submission.files import DataError, _atomic
    p = tmp_path / "vanilla.pretrain.params"
    atomic_write_text(str(p), "old\n")

    def full(f):
        f.write(b"half")
        raise error

    with pytest.raises(DataError, match=f"vanilla.pretrain.params: could not write it \\(.*{re.escape(says)}.*; "
                                        ".* [KM]iB free there\\).*unchanged") as e:
        _atomic(str(p), full)
    assert "\n" not in str(e.value) and "enforce fail" not in str(e.value)
    assert p.read_text() == "old\n" and os.listdir(tmp_path) == ["vanilla.pretrain.params"]


def test_atomic_write_gives_the_usual_file_mode(tmp_path):
    old = os.umask(0o022)
    try:
        atomic_write_text(str(tmp_path / "a.predictions"), "x\n")
        os.umask(0o077)
        atomic_write_text(str(tmp_path / "b.predictions"), "x\n")
    finally:
        os.umask(old)
    assert (tmp_path / "a.predictions").stat().st_mode & 0o777 == 0o644  # as open() would make it
    assert (tmp_path / "b.predictions").stat().st_mode & 0o777 == 0o600


def small(vocab=20, synth=False):
    return GPT(GPTConfig(vocab, 16, n_layer=1, n_head=2, n_embd=8, synthesizer=synth))


def test_load_params_roundtrip_and_prefixes(tmp_path):
    a, b = small(), small()
    p = tmp_path / "m.params"
    # DataParallel's prefix; compile(DDP(model)) and DDP(compile(model)) nest the two either way
    for prefix in ("module.", "_orig_mod.module.", "module._orig_mod."):
        b = small()
        torch.save({prefix + k: v for k, v in a.state_dict().items()}, p)
        load_params(b, str(p))
        assert all(torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in a.state_dict()), prefix


def test_load_params_errors(tmp_path, monkeypatch):
    p = tmp_path / "s.params"
    torch.save(small(synth=True).state_dict(), p)
    with pytest.raises(ParamsError, match="synthesizer params, but the model is vanilla"):
        load_params(small(), str(p))
    torch.save(small().state_dict(), p)  # and the other way round, with the fix that names the file's variant
    with pytest.raises(ParamsError, match="s.params: these are vanilla params, but the model is synthesizer; pass "
                                          "--variant=vanilla or use the synthesizer params file$"):
        load_params(small(synth=True), str(p))
    torch.save(small(vocab=30).state_dict(), p)
    with pytest.raises(ParamsError, match="vocabulary of 30 characters"):
        load_params(small(), str(p))
    with pytest.raises(ParamsError, match="nope.params: params file not found$"):
        load_params(small(), str(tmp_path / "nope.params"))
    # a typo of a params file beside it (`ask --params runs/demo/vanila.finetune.params`) names that file
    with pytest.raises(ParamsError, match=f"{tmp_path / 'sx.params'}: params file not found; did you mean "
                                          f"{tmp_path / 's.params'}\\?$"):
        load_params(small(), str(tmp_path / "sx.params"))
    for empty in ("", " "):  # a variable left unset: ": params file not found" named no file
        with pytest.raises(ParamsError, match="^the params path is empty; give the params file run.py wrote$"):
            load_params(small(), empty)
    # a course file names the mode that writes it (ask, memorised and plots load through here), with
    # OUT_DIR when its folder is not src/submission/, where the modes write by default
    with pytest.raises(ParamsError, match=f"vanilla.finetune.params: params file not found; make it with "
                                          f"OUT_DIR={re.escape(shlex.quote(str(tmp_path)))} ./run.sh "
                                          "vanilla_finetune_with_pretrain \\(after vanilla_pretrain\\)$"):
        load_params(small(), str(tmp_path / "vanilla.finetune.params"))
    with pytest.raises(ParamsError, match="not found; make it with OUT_DIR='a b' ./run.sh vanilla_pretrain$"):
        load_params(small(), os.path.join("a b", "vanilla.pretrain.params"))
    # from a folder outside the repo, run.sh by its whole path (./run.sh was not there); DATA_DIR as this
    # run has it (the hint retrained on data/'s vocabulary)
    import submission
    # (quoted as the hint quotes it: a checkout at a path with a space failed here)
    script = re.escape(shlex.quote(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(submission.__file__))),
                                                "run.sh")))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ParamsError, match=f"not found; make it with OUT_DIR=. {script} synthesizer_pretrain$"):
        load_params(small(), "synthesizer.pretrain.params")
    monkeypatch.setenv("DATA_DIR", "my data")
    with pytest.raises(ParamsError, match=f"not found; make it with DATA_DIR='my data' OUT_DIR=. {script} "
                                          f"synthesizer_pretrain$"):
        load_params(small(), "synthesizer.pretrain.params")
    monkeypatch.delenv("DATA_DIR")
    # the course's own folder, src/submission/: no OUT_DIR (reached through a folder that is not there, so
    # that the file is missing even where the course's pretraining has run)
    default = os.path.join(os.path.dirname(submission.__file__), "not-there", "..", "vanilla.pretrain.params")
    with pytest.raises(ParamsError, match=f"params file not found; make it with {script} vanilla_pretrain$"):
        load_params(small(), default)
    monkeypatch.chdir(os.path.dirname(os.path.dirname(submission.__file__)))  # src/, the course's place
    with pytest.raises(ParamsError, match="params file not found; make it with ./run.sh vanilla_pretrain$"):
        load_params(small(), default)
    with pytest.raises(ParamsError, match=f"^{tmp_path}: is not a regular file; give the params file run.py wrote"):
        load_params(small(), str(tmp_path))
    p.write_bytes(b"\x00truncated")
    with pytest.raises(ParamsError, match="not a loadable params file.*; re-create it with the run.sh mode that "
                                          "writes it$"):
        load_params(small(), str(p))
    # a course file cut short or empty names the mode that remakes it, as a missing one does
    course = tmp_path / "vanilla.finetune.params"
    for content in (b"\x00truncated", None):
        course.write_bytes(content) if content else torch.save({}, course)
        with pytest.raises(ParamsError, match=f"; re-create it with OUT_DIR={re.escape(shlex.quote(str(tmp_path)))} "
                                              "./run.sh vanilla_finetune_with_pretrain \\(after vanilla_pretrain\\)$"):
            load_params(small(), str(course))


def test_a_demo_params_file_names_the_demo(tmp_path, monkeypatch):
    """`./run.sh ask --params runs/demo/vanilla.finetune.params` before the demo (learners.md's command) said
    "make it with OUT_DIR=runs/demo ./run.sh vanilla_finetune_with_pretrain (after vanilla_pretrain)": hours of
    the course's pretraining into the demo's folder, whose small models the demo makes in minutes."""
    import submission
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(submission.__file__))))
    monkeypatch.chdir(repo)
    monkeypatch.delenv("DATA_DIR", raising=False)
    default = os.path.join("runs", "demo", "not-there", "..", "vanilla.finetune.params")  # missing even after a demo
    # as after README's first command, `./run.sh demo`: its params there (this test once failed after a demo, saying
    # "the repository's is runs/demo/vanilla.finetune.params", the path's `not-there/..` taken away by normpath)
    made = os.path.join(repo, "runs", "demo", "vanilla.finetune.params")
    isfile = os.path.isfile
    monkeypatch.setattr(os.path, "isfile", lambda p: p == made or isfile(p))
    with pytest.raises(ParamsError, match=r"params file not found; make it with \./run\.sh demo \(the demo's files "
                                          r"come from the demo\)$"):
        load_params(small(), default)
    (tmp_path / ".made-by-demo.json").write_text("{}", encoding="utf-8")  # a demo's --out: its record is there
    demo = f"\\./run\\.sh demo --out {re.escape(shlex.quote(str(tmp_path)))} \\(the demo's files come from the demo\\)$"
    with pytest.raises(ParamsError, match="not found; make it with " + demo):
        load_params(small(), str(tmp_path / "synthesizer.pretrain.params"))
    (tmp_path / "vanilla.model.params").write_bytes(b"\x00truncated")
    with pytest.raises(ParamsError, match="re-create it with " + demo):
        load_params(small(), str(tmp_path / "vanilla.model.params"))
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "my_corpus"))  # `./run.sh demo` trains on it when it is set
    corpus = re.escape(shlex.quote(str(tmp_path / "my_corpus")))
    with pytest.raises(ParamsError, match=f"make it with DATA_DIR={corpus} " + demo):
        load_params(small(), str(tmp_path / "synthesizer.pretrain.params"))
    import demo as demo_module  # params.py cannot import src/demo.py: its copy of the record's name must agree
    from submission import params
    assert params.DEMO_RECORD == demo_module.RECORD


def test_a_damaged_params_file_of_the_demo_is_removed_before_the_demo_makes_it_again(tmp_path):
    """"re-create it with ./run.sh demo --out DIR" for a damaged params file in a folder the demo wrote: the demo
    replaces no file that its record does not hold as it is now, so that command stopped at once on the file ("not
    written by the demo ... move the file away"). The fix removes it first, and the demo then takes the folder."""
    import demo as demo_module
    (tmp_path / demo_module.RECORD).write_text("{}", encoding="utf-8")
    damaged = tmp_path / "vanilla.model.params"
    damaged.write_bytes(b"\x00truncated")
    with pytest.raises(ParamsError, match=r"; remove it, then re-create it with \./run\.sh demo --out "):
        load_params(small(), str(damaged))
    with pytest.raises(demo_module.DataError, match="not written by the demo"):
        demo_module.check_out_folder(str(tmp_path))  # what the demo said to the fix without the removal
    damaged.unlink()
    demo_module.check_out_folder(str(tmp_path))


def test_a_params_path_of_the_repo_typed_in_src_names_the_repos_file(monkeypatch):
    """`cd src && ./run.sh ask --params runs/demo/vanilla.finetune.params` (the course's place, learners.md's
    path) said "make it with OUT_DIR=runs/demo ./run.sh vanilla_finetune_with_pretrain": hours of training for a
    file that was there, one folder up. Any file the repo holds at the path stands for the demo's params here."""
    import submission
    src = os.path.dirname(os.path.dirname(submission.__file__))
    monkeypatch.chdir(src)
    assert not os.path.exists("README.md") and os.path.isfile(os.path.join("..", "README.md"))
    here = re.escape(os.getcwd())
    with pytest.raises(ParamsError, match=f"^README.md: params file not found here, in {here} \\(a relative path "
                                          r"is from the folder you run in\); the repository's is \.\./README\.md$"):
        load_params(small(), "README.md")
    with pytest.raises(ParamsError, match=r"the repository's is \./run\.py$"):  # in this folder: ./ as a command has it
        load_params(small(), os.path.join("src", "run.py"))  # the repo's src/run.py, typed from src/
    with pytest.raises(ParamsError, match="^nope/vanilla.pretrain.params: params file not found; make it with "):
        load_params(small(), os.path.join("nope", "vanilla.pretrain.params"))  # in neither: the mode, as before


def test_a_params_path_named_from_the_repo_stays_in_it_and_needs_no_relative_form(tmp_path, monkeypatch):
    """A relative params path found in the repo's folder is named as the repository's file: a path whose ".."
    leaves the repo named a file beside it as the repository's, and where the repo's file has no relative path
    from here (Windows: another drive; a current folder removed) the message was a ValueError's traceback."""
    from submission import params
    repo = tmp_path / "repo"
    (repo / "src" / "submission").mkdir(parents=True)
    (repo / "vanilla.model.params").write_bytes(b"")
    (tmp_path / "vanilla.pretrain.params").write_bytes(b"")  # beside the repo, not in it
    monkeypatch.setattr(params, "__file__", str(repo / "src" / "submission" / "params.py"))
    (tmp_path / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "a" / "b")
    with pytest.raises(ParamsError, match=r"^\.\./vanilla\.pretrain\.params: params file not found; make it with "):
        load_params(small(), os.path.join("..", "vanilla.pretrain.params"))
    with pytest.raises(ParamsError, match=r"the repository's is \.\./\.\./repo/vanilla\.model\.params$"):
        load_params(small(), "vanilla.model.params")

    def elsewhere(*args):
        raise ValueError("path is on mount 'C:', start on mount 'D:'")
    monkeypatch.setattr(os.path, "relpath", elsewhere)
    here = re.escape(os.getcwd())
    with pytest.raises(ParamsError, match=f"^vanilla.model.params: params file not found here, in {here} \\(a "
                                          f"relative path is from the folder you run in\\); the repository's is "
                                          f"{re.escape(shlex.quote(str(repo / 'vanilla.model.params')))}$"):
        load_params(small(), "vanilla.model.params")
    monkeypatch.undo()
    monkeypatch.setattr(params, "__file__", str(repo / "src" / "submission" / "params.py"))
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with pytest.raises(ParamsError, match=r"^vanilla.model.params: params file not found here \(a relative path is "
                                          f"from the folder you run in\\); the repository's is "
                                          f"{re.escape(shlex.quote(str(repo / 'vanilla.model.params')))}$"):
        load_params(small(), "vanilla.model.params")


def _zip_of_text():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("notes.txt", "not params")
    return buffer.getvalue()


def _deflated(data):
    """A torch file's zip with every record compressed, as torch.save never writes it (and torch still loads)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as z, zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        for name in z.namelist():
            out.writestr(name, z.read(name))
    return buffer.getvalue()


def _torch_bytes(obj, **kwargs):
    buffer = io.BytesIO()
    torch.save(obj, buffer, **kwargs)
    return buffer.getvalue()


def test_torch_2_0s_words_for_a_cut_pre_1_6_file_are_read_as_cut_short(tmp_path):
    """torch 2.0 words the refusals differently ("Unsupported class col.", an UnpicklingError for
    "unexpected EOF"): both were called "Python objects beyond tensors"; a file naming code still is."""
    from submission.params import unloadable_reason
    whole = _torch_bytes(small().state_dict(), _use_new_zipfile_serialization=False)
    p = tmp_path / "x.params"
    weights_only = "Weights only load failed. Re-running `torch.load` ... WeightsUnpickler error: "
    p.write_bytes(whole[:whole.index(b"ccollections") + 5])  # ends "ccoll": the name cut short
    assert "cut short" in unloadable_reason(str(p), pickle.UnpicklingError(weights_only + "Unsupported class col."))
    p.write_bytes(whole[:-40])
    eof = pickle.UnpicklingError(weights_only + "unexpected EOF, expected 40 more bytes. The file might be corrupted.")
    assert "cut short" in unloadable_reason(str(p), eof)
    p.write_bytes(_torch_bytes({"f": os.getcwd}, _use_new_zipfile_serialization=False))
    names_code = pickle.UnpicklingError(weights_only + "Unsupported class posix.getcwd")
    assert "beyond tensors" in unloadable_reason(str(p), names_code)


@pytest.mark.parametrize("content, why", [
    (lambda: _torch_bytes(small().state_dict())[:3000], "a PyTorch file cut short or damaged"),
    (lambda: _torch_bytes(small().state_dict(), _use_new_zipfile_serialization=False)[:3000],
     "a PyTorch file cut short or damaged"),
    (lambda: _torch_bytes({"w": torch.zeros(2), "f": os.getcwd}),
     "a PyTorch file holding Python objects beyond tensors"),
    (lambda: _torch_bytes({"w": torch.zeros(2), "f": os.getcwd}, _use_new_zipfile_serialization=False),
     "a PyTorch file holding Python objects beyond tensors"),
    (lambda: pickle.dumps({"w": 1}), "a Python pickle, not a PyTorch file"),
    (lambda: b"\x93NUMPY\x01\x00v\x00{'descr'", "a NumPy array file"),
    (lambda: "Where was Ada born?\tLondon\n".encode(), "a text file"),
    (lambda: bytes(range(256)) * 4, "neither a PyTorch file nor text"),
    (lambda: "Where was Ada born?\tLondon\n".encode("utf-16"), "a text file (UTF-16), not a PyTorch one"),
    # UTF-8 text whose first 512 bytes (all that is read) end inside a character: still text
    (lambda: (b"Where was Ada born?\tLondon\n" * 19)[:511] + "\u00e9, Lisbon\n".encode(),
     "a text file, not a PyTorch one"),
    # (mutation audit) a four-byte character cut by the end of the 512 read, from byte 509 on, is text; a byte
    # that starts no character before then is not
    (lambda: b"x" * 509 + "\U0001F30D Lisbon\n".encode(), "a text file, not a PyTorch one"),
    (lambda: b"x" * 508 + b"\xff Lisbon\n", "neither a PyTorch file nor text"),
    (lambda: b"", "an empty file"),
    (lambda: _zip_of_text(), "a zip archive, but not one torch.save wrote"),
    # (security audit) torch unpacks a compressed record whole before any check: 1 MB claimed a 1 GB tensor
    (lambda: _deflated(_torch_bytes(small().state_dict())), "a zip with a compressed record (archive/data.pkl), "
                                                            "which torch.save never writes"),
])
def test_an_unloadable_params_file_is_named_for_what_it_is(content, why, tmp_path):
    """torch's own message was a paragraph on weights_only, an empty EOFError, or a miniz error."""
    p = tmp_path / "x.params"
    p.write_bytes(content())
    with pytest.raises(ParamsError) as e:
        load_params(small(), str(p))
    assert f"not a loadable params file ({why}" in str(e.value) and "\n" not in str(e.value)


def test_params_of_another_shape_of_file_are_explained(tmp_path):
    p = tmp_path / "x.params"
    torch.save({"model": small().state_dict(), "step": 7}, p)  # another training loop's checkpoint
    with pytest.raises(ParamsError, match=r"weights under the key 'model', not a params file; save torch.load"):
        load_params(small(), str(p))
    torch.save({"encoder.weight": torch.zeros(3)}, p)
    with pytest.raises(ParamsError, match="names a weight of the assignment's GPT; it holds another model's"):
        load_params(small(), str(p))
    torch.save({}, p)
    with pytest.raises(ParamsError, match="an empty state_dict"):
        load_params(small(), str(p))
    torch.save(torch.zeros(3), p)
    with pytest.raises(ParamsError, match="holds a Tensor, not a state_dict"):
        load_params(small(), str(p))


class Evil:
    def __init__(self, mark):
        self.mark = mark

    def __reduce__(self):
        return (os.system, (f"touch {shlex.quote(self.mark)}",))


def test_load_params_refuses_code(tmp_path):
    """A pickle that runs code when loaded (its mark: a file it would make, in this test's own folder, so that a
    leftover from another run cannot fail it) is refused, and its code never runs."""
    p, mark = tmp_path / "evil.params", tmp_path / "owned_by_params"
    with open(p, "wb") as f:
        pickle.dump({"x": Evil(str(mark))}, f, protocol=2)  # torch.save's protocol
    with pytest.raises(ParamsError):
        load_params(small(), str(p))
    assert not mark.exists()
    pickle.loads(p.read_bytes())  # (the mark is what the code makes: without the refusal, it would be there)
    assert mark.exists()


@pytest.mark.parametrize("state, says", [
    ({1: torch.zeros(2)}, "the key 1 is not a name"),
    ({"tok_emb.weight": 5}, "the value of 'tok_emb.weight' is int, not a tensor"),
    # a dict under a checkpoint's key is a checkpoint only when it holds tensors (mutation audit)
    ({"model": {"name": "gpt"}, "step": torch.tensor(7)}, "the value of 'model' is dict, not a tensor"),
])
def test_a_dict_that_is_not_of_named_tensors_is_one_line(tmp_path, state, says):
    """It ended in AttributeError ('int' object has no attribute 'startswith' / 'shape')."""
    p = tmp_path / "x.params"
    torch.save(state, p)
    with pytest.raises(ParamsError, match=rf"x.params: not a state_dict of tensors \({re.escape(says)}\); pass a "
                                          r"params file that run.py wrote$"):
        load_params(small(), str(p))


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch's notes on quantized and sparse CSR tensors
@pytest.mark.parametrize("make, kind", [
    (lambda v: v.to_sparse(), "sparse"),
    (lambda v: v.to_sparse_csr(), "sparse_csr"),
    (lambda v: torch.empty(v.shape, device="meta"), "meta (shape only, no values)"),
    (lambda v: torch.quantize_per_tensor(v, 0.1, 0, torch.qint8), "quantized"),
    (lambda v: v.to(torch.complex64), "complex"),
])
def test_a_tensor_that_is_not_dense_and_real_is_one_line(tmp_path, make, kind):
    """Params holding a sparse, meta or quantized tensor ended in a 118-line traceback (the NaN check, or
    load_state_dict), a complex one loaded with torch's warning that the imaginary part is dropped (the fuzz
    audit)."""
    state = small().state_dict()
    state["head.weight"] = make(state["head.weight"])
    p = tmp_path / "x.params"
    torch.save(state, p)
    with pytest.raises(ParamsError, match=rf"x.params: the value of 'head.weight' is a {re.escape(kind)} tensor, "
                                          r"not a dense real one as params hold; pass a params file that run.py "
                                          r"wrote$"):
        load_params(small(), str(p))


def test_params_that_do_not_fit_name_three_keys_and_count_the_rest(tmp_path):
    p = tmp_path / "x.params"
    state = small().state_dict()
    gone = sorted(state)[-5:]
    torch.save({k: v for k, v in state.items() if k not in gone}, p)
    with pytest.raises(ParamsError) as e:
        load_params(small(), str(p))
    assert e.value.problem == f"params do not fit this model (missing {gone[0]!r}, {gone[1]!r}, {gone[2]!r} and 2 more)"


def test_params_load_into_a_wrapped_model(tmp_path):
    """The course's trainer wraps the model in DataParallel on CUDA: loading into it gave KeyError
    'tok_emb.weight'. (DataParallel wraps on a CPU too, without GPUs.)"""
    a, b = small(), small()
    p = tmp_path / "m.params"
    torch.save(a.state_dict(), p)
    wrapped = torch.nn.DataParallel(b)
    assert load_params(wrapped, str(p)) is wrapped
    assert all(torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in a.state_dict())
    # torch.compile's wrapper (`_orig_mod`), around DataParallel's or alone (mutation audit: unwrap); building
    # the wrapper compiles nothing
    for c, wrap in ((small(), torch.nn.DataParallel), (small(), lambda m: m)):
        compiled = torch.compile(wrap(c))
        assert load_params(compiled, str(p)) is compiled
        assert all(torch.equal(a.state_dict()[k], c.state_dict()[k]) for k in a.state_dict())


@pytest.mark.parametrize("share", [0.05, 0.2, 0.35, 0.5, 0.75, 0.95])
def test_params_cut_short_anywhere_are_called_cut_short(tmp_path, share):
    """Cut past the first few kilobytes, torch's reader failed with 'OSError: [Errno 22] Invalid argument'."""
    p = tmp_path / "m.params"
    torch.save(GPT(GPTConfig(20, 16, n_layer=2, n_head=2, n_embd=32)).state_dict(), p)
    whole = p.read_bytes()
    p.write_bytes(whole[:int(len(whole) * share)])
    with pytest.raises(ParamsError, match=r"not a loadable params file \(a PyTorch file cut short or damaged"):
        load_params(GPT(GPTConfig(20, 16, n_layer=2, n_head=2, n_embd=32)), str(p))


@pytest.mark.parametrize("zip_format", [True, False])
def test_params_cut_short_at_every_point_are_called_cut_short(tmp_path, zip_format):
    """A pre-1.6 file cut short was named by whatever the cut hit (struct.error, IndexError, torch's
    "unexpected EOF", or, cut inside a global's name, "Python objects beyond tensors"): CI failed on
    one such cut. Every cut, a few bytes apart, is named for what it is."""
    p = tmp_path / "m.params"
    whole = _torch_bytes(small().state_dict(), _use_new_zipfile_serialization=zip_format)
    named = set()
    for cut in range(32, len(whole), 7):  # past the format's first bytes, which say what it is
        p.write_bytes(whole[:cut])
        with pytest.raises(ParamsError) as e:
            load_params(small(), str(p))
        named.add(str(e.value).split(" (", 1)[1].split(")", 1)[0])
    assert named == {"a PyTorch file cut short or damaged, as by an interrupted copy"}


def test_params_with_nan_or_infinite_weights_are_refused_naming_the_tensor(tmp_path):
    """Two NaNs written into a params file (a bad disk or copy) loaded quietly: evaluation then answered every
    question with PAD, "Correct: 0.0", exit 0. The first tensor that holds any is named, with the count."""
    state = small().state_dict()
    state["blocks.0.attn.key.weight"].view(-1)[:2] = float("nan")
    state["head.weight"][0, 0] = float("inf")
    p = tmp_path / "vanilla.finetune.params"
    torch.save(state, p)
    with pytest.raises(ParamsError, match=r"vanilla.finetune.params: 2 of the 64 values of blocks.0.attn.key.weight "
                                          r"are NaN or infinite \(and 1 more tensors hold some\): the file is damaged, "
                                          r"or the run that wrote it diverged; re-create it with .*run.sh "
                                          r"vanilla_finetune_with_pretrain"):
        load_params(small(), str(p))
    state["blocks.0.attn.key.weight"].view(-1)[:2] = 0.5
    torch.save(state, p)
    with pytest.raises(ParamsError, match=r": 1 of the 160 values of head.weight are NaN or infinite: the file"):
        load_params(small(), str(p))
    state["head.weight"][0, 0] = 0.5
    torch.save(state, p)
    load_params(small(), str(p))  # finite again: loads


def test_a_checkpoint_with_tensors_beside_the_weights_is_named_a_checkpoint(tmp_path):
    """{'state_dict': ..., 'lr': tensor} was called 'another model's params'."""
    p = tmp_path / "x.params"
    torch.save({"state_dict": small().state_dict(), "lr": torch.tensor(3e-4), "step": 7}, p)
    with pytest.raises(ParamsError, match=r"weights under the key 'state_dict', not a params file; save "
                                          r"torch.load\(.*\)\['state_dict'\] to a file of its own"):
        load_params(small(), str(p))


def test_a_checkpoint_under_model_state_dict_is_named_a_checkpoint(tmp_path):
    """{'model_state_dict': ..., 'epoch': 3}, the PyTorch tutorials' checkpoint, is named as one, with its key."""
    p = tmp_path / "x.params"
    torch.save({"model_state_dict": small().state_dict(), "epoch": 3}, p)
    with pytest.raises(ParamsError, match=r"weights under the key 'model_state_dict', not a params file; save "
                                          r"torch.load\(.*\)\['model_state_dict'\] to a file of its own"):
        load_params(small(), str(p))


def test_a_training_state_is_named_as_one_with_the_resume_fix(tmp_path):
    """A run's X.params.state (what --resume reads) passed as params was told to save
    torch.load(...)['model'] by hand; finishing the run with --resume writes the params."""
    from submission import resume
    model = small()
    path = tmp_path / "vanilla.pretrain.params.state"
    resume.save(str(path), model=model, optimizer=torch.optim.AdamW(model.parameters()),
                settings={}, epoch=3, step=30, tokens=0, best_loss=1.0, elapsed=1.0, log_lines=[])
    with pytest.raises(ParamsError, match=r"vanilla.pretrain.params.state: a training state \(what --resume goes on "
                                          r"from\), not params; finish that run with its command and --resume: the "
                                          r"params go to .*/vanilla.pretrain.params$"):
        load_params(small(), str(path))


def test_evaluate_places_reads_past_a_byte_order_mark(tmp_path):
    """A dev file saved by a Windows editor: a BOM, then a blank line, then the labelled rows."""
    from submission.utils import evaluate_places
    path = tmp_path / "dev.tsv"
    path.write_text("\ufeff\nWhere was A born?\tLondon\nWhere was B born?\tParis\n", encoding="utf-8")
    assert evaluate_places(str(path), ["London", "Rome"]) == (2.0, 1.0)


def test_params_errors_carry_the_problem_and_the_size_apart_from_the_message(tmp_path):
    """deliverables.py words its own fixes: it read the problem and the size flags back out of the
    message text, which any rewording of a message would have broken silently."""
    p = tmp_path / "x.params"
    torch.save(small(synth=True).state_dict(), p)
    with pytest.raises(ParamsError) as e:
        load_params(small(), str(p))
    assert e.value.problem == "these are synthesizer params, but the model is vanilla"
    assert str(e.value).startswith(f"{p}: {e.value.problem}; ") and e.value.looks_like is None
    bigger = GPT(GPTConfig(20, 32, n_layer=3, n_head=2, n_embd=16, synthesizer=True))
    torch.save(bigger.state_dict(), p)
    with pytest.raises(ParamsError) as e:
        load_params(small(synth=True), str(p))
    assert e.value.looks_like == "--n_layer 3 --n_embd 16 --block_size 32 --n_head 2"
    assert re.fullmatch(r"params do not fit this model \(unexpected 'blocks\.\d\.\S+', \S+, \S+ and \d+ more\)",
                        e.value.problem), e.value.problem
    assert str(e.value).endswith(f"(the file looks like {e.value.looks_like})")
    torch.save(small(vocab=30).state_dict(), p)
    with pytest.raises(ParamsError) as e:
        load_params(small(), str(p))
    assert e.value.problem.startswith("params have a vocabulary of 30 characters") and e.value.looks_like is None
    # a weight beside the GPT's own, at its size: no size flag to try ("use the model size they were trained with")
    torch.save(dict(small().state_dict(), **{"extra.weight": torch.zeros(3)}), p)
    with pytest.raises(ParamsError) as e:
        load_params(small(), str(p))
    assert e.value.problem == "params do not fit this model (unexpected 'extra.weight')"
    assert str(e.value) == (f"{p}: {e.value.problem}; its other weights fit this model, so a GPT with modules of its "
                            f"own wrote them; pass params of the assignment's GPT")
    state = dict(small().state_dict(), **{"extra.weight": torch.zeros(3)})
    state["ln_f.weight"] = torch.ones(7)  # one weight of another shape too: not "its other weights fit"
    torch.save(state, p)
    with pytest.raises(ParamsError) as e:
        load_params(small(), str(p))
    assert "its other weights fit" not in str(e.value) and "unexpected 'extra.weight'" in str(e.value)


def test_gpt_device_chooses_the_device_and_refuses_one_that_is_not_there(monkeypatch):
    """cuda, then mps, then cpu, unless $GPT_DEVICE says otherwise: a student with a busy GPU, or an MPS
    build that misbehaves, had no way to train on the CPU."""
    from submission.dataset import DataError
    from submission.utils import get_device
    monkeypatch.delenv("GPT_DEVICE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # as on a GPU machine
    assert get_device() == "cuda"
    for value in ("cpu", " CPU "):
        monkeypatch.setenv("GPT_DEVICE", value)
        assert get_device() == "cpu"
    monkeypatch.setenv("GPT_DEVICE", "cuda")
    assert get_device() == "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(DataError, match=r"^GPT_DEVICE=cuda: torch .* sees no cuda device on this machine; set "
                                        r"GPT_DEVICE=cpu or unset it$"):
        get_device()
    for value in ("gpu", "cuda:1", "tpu"):
        monkeypatch.setenv("GPT_DEVICE", value)
        with pytest.raises(DataError, match=rf"^GPT_DEVICE='{re.escape(value)}' is not a device; set it to cpu, "
                                            r"cuda or mps, or unset it \(a GPU's number: CUDA_VISIBLE_DEVICES\)$"):
            get_device()
    monkeypatch.setenv("GPT_DEVICE", "")  # set but empty, as `GPT_DEVICE= cmd` leaves it: the rule
    assert get_device() == "cpu"
    # the order of the rule: cuda before mps before cpu, whichever others are there too
    for cuda, mps, device in ((True, True, "cuda"), (False, True, "mps"), (True, False, "cuda"), (False, False, "cpu")):
        monkeypatch.setattr(torch.cuda, "is_available", lambda cuda=cuda: cuda)
        monkeypatch.setattr(torch.backends.mps, "is_available", lambda mps=mps: mps)
        assert get_device() == device, (cuda, mps)
    monkeypatch.setenv("GPT_DEVICE", "cpu")  # ... and $GPT_DEVICE above it
    assert get_device() == "cpu"


def test_usable_cores_are_the_cpus_this_process_may_run_on(monkeypatch):
    """A container pinned to 2 of the machine's 16 CPUs has 2 cores for its threads and loader workers;
    where the platform does not say (no sched_getaffinity: macOS, Windows), the machine's count."""
    from submission import threads
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 16)
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {2, 3}, raising=False)
    assert threads.usable_cores() == 2
    monkeypatch.delattr(threads.os, "sched_getaffinity")
    assert threads.usable_cores() == 16


def test_the_writing_process_is_the_trainers_rank_zero(monkeypatch):
    """helper.train saves params where is_main_process() says, the Trainer counts ranks from
    distributed_env(): the two read torchrun's variables alike, so exactly one process writes."""
    from submission import Trainer, TrainerConfig
    from submission.utils import distributed_env, is_main_process
    model = GPT(GPTConfig(10, 8, n_layer=1, n_head=1, n_embd=4))
    monkeypatch.setenv("GPT_DEVICE", "cpu")  # (a Trainer of rank 1 on a 1-GPU machine would pick cuda:1)
    for env, rank in (({}, 0), ({"RANK": "1"}, 0), ({"RANK": "1", "WORLD_SIZE": "1"}, 0),
                      ({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"}, 1),
                      ({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0"}, 0)):
        for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        trainer = Trainer(model, None, None, TrainerConfig())
        assert distributed_env()[0] == trainer.rank == rank, env
        assert is_main_process() is trainer.is_main is (rank == 0), env
    # two machines of 4 processes: the global rank decides who writes, the machine's own number picks the GPU
    for rank, local in ((4, 0), (5, 1)):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "8")
        monkeypatch.setenv("LOCAL_RANK", str(local))
        trainer = Trainer(model, None, None, TrainerConfig())
        assert distributed_env() == (trainer.rank, trainer.world_size, trainer.local_rank) == (rank, 8, local)
        assert not is_main_process() and not trainer.is_main
    # once torch.distributed is set up its rank decides, whatever the environment says
    import torch.distributed as dist
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setattr(dist, "is_available", lambda: True)
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    for rank in (0, 3):
        monkeypatch.setattr(dist, "get_rank", lambda group=None, rank=rank: rank)
        assert is_main_process() is (rank == 0), rank


def test_helper_train_runs_any_trainer_then_writes_the_params(tmp_path):
    """The course's helper.train calls trainer_obj.train() and then saves: a trainer of the course's own
    code, or a grader's stand-in with only train(), trains and gets its params written, keys as saved."""
    from submission.helper import train
    model = GPT(GPTConfig(10, 8, n_layer=1, n_head=1, n_embd=4))
    calls = []

    class CoursesTrainer:
        def train(self):  # no `after`: the course's signature
            calls.append("train")
            with torch.no_grad():
                model.head.weight.fill_(0.5)

    path = tmp_path / "vanilla.model.params"
    train(model, str(path), CoursesTrainer())
    assert calls == ["train"]
    from submission import Trainer, TrainerConfig

    class OwnLoop(Trainer):  # a subclass with a train() of its own, as the course's
        def train(self):
            calls.append("own loop")
    train(model, str(tmp_path / "sub.params"), OwnLoop(model, None, None, TrainerConfig()))
    assert calls == ["train", "own loop"] and (tmp_path / "sub.params").exists()
    saved = torch.load(path, weights_only=True)
    assert list(saved) == list(model.state_dict())
    assert torch.equal(saved["head.weight"], torch.full_like(model.head.weight, 0.5))


def test_a_file_behind_a_folder_that_does_not_let_the_user_in_is_not_called_missing(tmp_path, shut_folder,
                                                                                     monkeypatch):
    """(permission audit, non-root) A data or params folder made 0600 (no search permission), or another user's
    0700 one: its files read "not found" ("pretraining corpus not found; check the path", "params file not found"),
    so the user looked for a typo or remade them. Now the folder that is shut is named with its fix; the errors
    are PermissionErrors too, as the course's open() and torch.load raised."""
    from submission.dataset import read_text
    from submission.params import ParamsUnreachable
    shut = tmp_path / "shut"
    shut.mkdir()
    (shut / "wiki.txt").write_text("Ada was born in Oslo.\n", encoding="utf-8")
    torch.save(GPT(GPTConfig(8, 16, n_layer=1, n_head=1, n_embd=4)).state_dict(), shut / "a.params")
    shut_folder(shut)
    says = rf"the folder {re.escape(str(shut))} does not let you in \(Permission denied, mode 0\d\d\d\); chmod u\+rx "
    with pytest.raises(PermissionError, match=rf"^{re.escape(str(shut / 'wiki.txt'))}: the pretraining corpus "
                                               rf"cannot be reached: {says}") as caught:
        read_text(str(shut / "wiki.txt"), "pretraining corpus")
    assert isinstance(caught.value, DataError)
    with pytest.raises(ParamsUnreachable, match=rf"^{re.escape(str(shut / 'a.params'))}: the params file cannot be "
                                                rf"reached: {says}"):
        load_params(GPT(GPTConfig(8, 16, n_layer=1, n_head=1, n_embd=4)), str(shut / "a.params"))
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(shut).st_uid + 1)  # another user's folder: no chmod of ours
    with pytest.raises(PermissionError, match=rf"\(Permission denied, mode 0\d\d\d\); ask its owner to let you in "
                                               rf"\(chmod o\+rx {re.escape(str(shut))}\)$"):
        read_text(str(shut / "wiki.txt"), "pretraining corpus")
    with pytest.raises(FileNotFoundError, match="not found"):  # a file that is not there is still missing
        read_text(str(tmp_path / "gone.txt"), "pretraining corpus")


def test_a_missing_file_is_a_file_not_found_error_as_the_courses_open_and_load_raised(tmp_path):
    """The course's helpers read with `open` and `torch.load`, so a missing params or corpus file raised
    FileNotFoundError: a program that catches it (or OSError) still does here, and one that catches
    ValueError (ParamsError, DataError) too; a file that is there but wrong is no FileNotFoundError."""
    from submission.dataset import CharCorruptionDataset
    from submission.helper import finetune
    pretrain = CharCorruptionDataset("abcdefghij klmnopqrst\n" * 4, 32)
    model = GPT(GPTConfig(pretrain.vocab_size, 32, n_layer=1, n_head=1, n_embd=4))
    corpus = tmp_path / "train.tsv"
    corpus.write_text("Where was abc born?\tdef\n", encoding="utf-8")
    missing = [(str(tmp_path / "nope.params"), str(corpus), ParamsError, "nope.params: params file not found"),
               ("", str(corpus), ParamsError, "the params path is empty"),
               (None, str(tmp_path / "nope.tsv"), DataError, "nope.tsv: finetuning corpus not found"),
               (None, "", DataError, "the finetuning corpus path is empty")]
    os.symlink(tmp_path / "gone.tsv", tmp_path / "link.tsv")
    missing.append((None, str(tmp_path / "link.tsv"), DataError, "link.tsv: a symbolic link to nothing"))
    for params, tsv, kind, says in missing:
        with pytest.raises(FileNotFoundError, match=re.escape(says)) as caught:
            finetune(params, tsv, pretrain, 32, model)
        assert isinstance(caught.value, kind) and str(caught.value) == caught.value.args[0]
        assert caught.value.errno is None and len(caught.value.args) == 1  # printed as the message alone
    (tmp_path / "bad.params").write_bytes(b"not a params file")
    with pytest.raises(ParamsError) as caught:
        finetune(str(tmp_path / "bad.params"), str(corpus), pretrain, 32, model)
    assert not isinstance(caught.value, OSError)
    with pytest.raises(DataError) as caught:
        finetune(None, str(tmp_path), pretrain, 32, model)  # a folder: the course's open raised IsADirectoryError
    assert not isinstance(caught.value, FileNotFoundError)


def test_torchrun_with_more_processes_than_gpus_is_one_line(monkeypatch):
    """torchrun --nproc_per_node=2 on a one-GPU machine: the second process got torch's "invalid device
    ordinal" from set_device; it is told how many processes this machine takes."""
    from submission import Trainer, TrainerConfig
    from submission.dataset import DataError
    monkeypatch.setenv("GPT_DEVICE", "cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "set_device", lambda i: pytest.fail(f"set_device({i}) was called"))
    for name, value in (("RANK", "1"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "1")):
        monkeypatch.setenv(name, value)
    model = GPT(GPTConfig(10, 8, n_layer=1, n_head=1, n_embd=4))
    with pytest.raises(DataError, match=r"^torchrun started process 1 of this machine, but it has 1 GPU: one "
                                        r"process a GPU; give torchrun --nproc_per_node=1 or less$"):
        Trainer(model, None, None, TrainerConfig())


def test_set_seed_seeds_every_stream_the_courses_does():
    """The course's set_seed seeds Python's random, numpy's and torch's streams: the same seed, the same draws."""
    import random

    import numpy as np
    from submission.utils import set_seed
    draws = []
    for _ in range(2):
        set_seed(7)
        draws.append((random.random(), float(np.random.rand()), float(torch.rand(1))))
    assert draws[0] == draws[1]


def test_evaluate_places_reads_fields_as_the_courses_does(tmp_path):
    """The course's x.strip().split('\\t'), field for field: a third field is ignored (the place is the second),
    a file whose lines end in a tab after the question has no places ((0, 0), as a test-inputs file), and the
    counts are floats."""
    p = tmp_path / "dev.tsv"
    p.write_text("Where was A born?\tOslo\tnote\nWhere was B born?\tLima\n", encoding="utf-8")
    total, correct = evaluate_places(str(p), ["Oslo", "Lima"])
    assert (total, correct) == (2.0, 2.0) and isinstance(total, float) and isinstance(correct, float)
    q = tmp_path / "test.tsv"
    q.write_text("Where was A born?\t\nWhere was B born?\t\n", encoding="utf-8")
    assert evaluate_places(str(q), ["", ""]) == (0, 0)

"""Utilities: scoring, atomic writes and the params loader's checks. (Batched decoding against
the course's one-at-a-time `sample` is tested in test_fast.py.)

Run:  python -m pytest -q tests/test_utils.py
"""
import io
import os
import pickle
import re
import zipfile

import pytest
import torch

from submission import GPT, GPTConfig
from submission.utils import ParamsError, atomic_write_text, evaluate_places, load_params


def test_evaluate_places(tmp_path):
    p = tmp_path / "dev.tsv"
    p.write_text("Where was A born?\tOslo\nWhere was B born?\tLima\n", encoding="utf-8")
    assert evaluate_places(str(p), ["Oslo", "Rome"]) == (2.0, 1.0)
    q = tmp_path / "test.tsv"
    q.write_text("Where was A born?\n", encoding="utf-8")
    assert evaluate_places(str(q), ["Oslo"]) == (0, 0)
    with pytest.raises(ValueError, match="2 labelled questions but 1 predictions"):
        evaluate_places(str(p), ["Oslo"])


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
                  "PytorchStreamWriter failed writing file data/0: file write failed"), "PytorchStreamWriter failed"),
    (RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 901952 vs 901840"),  # seen on
     "unexpected pos 901952 vs 901840"),                                                            # a full tmpfs
])
def test_a_full_disk_is_one_line_and_keeps_the_old_file(tmp_path, error, says):
    from submission.files import DataError, _atomic
    p = tmp_path / "vanilla.pretrain.params"
    atomic_write_text(str(p), "old\n")

    def full(f):
        f.write(b"half")
        raise error

    with pytest.raises(DataError, match=f"vanilla.pretrain.params: could not write it \\(.*{re.escape(says)}.*; .* MiB free there\\).*unchanged") as e:
        _atomic(str(p), full)
    assert "\n" not in str(e.value)
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
    torch.save({"module." + k: v for k, v in a.state_dict().items()}, p)
    load_params(b, str(p))
    assert all(torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in a.state_dict())


def test_load_params_errors(tmp_path):
    p = tmp_path / "s.params"
    torch.save(small(synth=True).state_dict(), p)
    with pytest.raises(ParamsError, match="synthesizer params, but the model is vanilla"):
        load_params(small(), str(p))
    torch.save(small(vocab=30).state_dict(), p)
    with pytest.raises(ParamsError, match="vocabulary of 30 characters"):
        load_params(small(), str(p))
    with pytest.raises(ParamsError, match="not found"):
        load_params(small(), str(tmp_path / "nope.params"))
    with pytest.raises(ParamsError, match=f"^{tmp_path}: is not a regular file; give the params file run.py wrote"):
        load_params(small(), str(tmp_path))
    p.write_bytes(b"\x00truncated")
    with pytest.raises(ParamsError, match="not a loadable params file"):
        load_params(small(), str(p))


def _zip_of_text():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("notes.txt", "not params")
    return buffer.getvalue()


def _torch_bytes(obj, **kwargs):
    buffer = io.BytesIO()
    torch.save(obj, buffer, **kwargs)
    return buffer.getvalue()


@pytest.mark.parametrize("content, why", [
    (lambda: _torch_bytes(small().state_dict())[:3000], "a PyTorch file cut short or damaged"),
    (lambda: _torch_bytes(small().state_dict(), _use_new_zipfile_serialization=False)[:3000],
     "a PyTorch file cut short or damaged"),
    (lambda: _torch_bytes({"w": torch.zeros(2), "f": os.getcwd}), "a PyTorch file holding Python objects beyond tensors"),
    (lambda: pickle.dumps({"w": 1}), "a Python pickle, not a PyTorch file"),
    (lambda: b"\x93NUMPY\x01\x00v\x00{'descr'", "a NumPy array file"),
    (lambda: "Where was Ada born?\tLondon\n".encode(), "a text file"),
    (lambda: bytes(range(256)) * 4, "neither a PyTorch file nor text"),
    (lambda: _zip_of_text(), "a zip archive, but not one torch.save wrote"),
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
    def __reduce__(self):
        return (os.system, ("touch /tmp/owned_by_params",))


def test_load_params_refuses_code(tmp_path):
    p = tmp_path / "evil.params"
    with open(p, "wb") as f:
        pickle.dump({"x": Evil()}, f, protocol=2)  # torch.save's protocol
    with pytest.raises(ParamsError):
        load_params(small(), str(p))
    assert not os.path.exists("/tmp/owned_by_params")

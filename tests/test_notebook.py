"""The minGPT demo notebook, src/submission/mingpt-demo/play_char.ipynb: it is committed without
outputs, explains each step in a markdown cell before it, uses the project's own package (no
second copy of the model), and runs top to bottom in its tiny CI setting (PLAY_CHAR_TINY=1).

Executing it needs nbclient and ipykernel (requirements-dev.txt); without them that test skips.
Run:  python -m pytest -q tests/test_notebook.py
"""
import json
import os
import re
import shutil
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK = os.path.join(ROOT, "src", "submission", "mingpt-demo", "play_char.ipynb")


def load():
    with open(NOTEBOOK, encoding="utf-8") as f:
        return json.load(f)


def source(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def test_notebook_is_committed_clean_and_explained():
    nb = load()
    assert nb["nbformat"] == 4
    cells = nb["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    assert len(code) >= 6
    for c in code:
        assert c["outputs"] == [], "clear the notebook's outputs before committing it"
        assert c["execution_count"] is None, "clear the notebook's execution counts before committing it"
    for i, c in enumerate(cells):
        if c["cell_type"] == "code":
            assert i > 0 and cells[i - 1]["cell_type"] == "markdown", f"code cell {i} has no markdown cell before it"
    assert "PLAY_CHAR_TINY" in source(code[0]), "the first code cell picks the tiny CI setting"
    text = "\n".join(source(c) for c in code)
    for needed in ("from submission import", "GPT(", "Trainer(", "sample("):
        assert needed in text
    for copy in ("class GPT", "class Trainer", "class CausalSelfAttention", "import mingpt"):
        assert copy not in text, f"the notebook defines or imports its own {copy!r}"


@pytest.mark.parametrize("writable", [True, False])
def test_notebook_runs_in_the_tiny_setting(monkeypatch, tmp_path, writable):
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (pip install -r requirements-dev.txt)")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (pip install -r requirements-dev.txt)")
    import nbformat
    monkeypatch.setenv("PLAY_CHAR_TINY", "1")  # the kernel inherits this environment
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    # the log and its plot (default: runs/play_char/); a folder that cannot be made (a read-only
    # checkout's runs/, here a path through a file) sends them to a temporary folder instead
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    out = tmp_path if writable else tmp_path / "a-file" / "logs"
    monkeypatch.setenv("PLAY_CHAR_OUT", str(out))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=60, kernel_name="python3",
                                     resources={"metadata": {"path": os.path.dirname(NOTEBOOK)}})
    client.execute()  # raises CellExecutionError, with the cell and its traceback, if a cell fails
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                      for o in c.outputs if o.output_type == "stream" and o.name == "stdout")
    assert "parameters" in printed and "steps in" in printed
    log = re.search(r"the loss log is (.*)\n", printed).group(1)  # named, for plots.py curves
    if writable:
        assert log == str(tmp_path / "play_char.log.jsonl")
    else:
        assert log.startswith(os.path.join(tempfile.gettempdir(), "play_char_"))
        shutil.rmtree(os.path.dirname(log))
    assert writable == os.path.isfile(tmp_path / "play_char.log.jsonl")
    assert "greedy:" in printed and "temperature 0.8, top_k 10:" in printed
    # the four tiny steps train: the loss falls from about the uniform guess
    uniform, first, last = map(float, re.search(r"uniform guess: ([\d.]+) nats/char; first step: ([\d.]+); "
                                                r"last step: ([\d.]+)", printed).groups())
    assert abs(first - uniform) < 0.5 and last < first
    # the greedy sample is the first biography's first sentence (the prompt) and 40 characters more
    context = printed.split("the first one: ", 1)[1].split(".")[0] + "."
    greedy = printed.split("greedy:\n", 1)[1].split("\n\ntemperature 0.8", 1)[0]
    assert greedy.startswith(context) and len(greedy) == len(context) + 40

"""The written answers build: `make` turns submission.tex into a PDF whose text holds every
question number. Skipped where LaTeX is not installed (CI installs it: .ci/apt-packages.txt).

Run:  python -m pytest -q tests/test_pdf.py
"""
import os
import shutil
import shlex
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LABELS = ["2(a)", "2(b)", "2(c)", "Synthesizer", "3(a)", "3(b)", "3(c)i", "3(c)ii", "3(d)i", "3(d)ii", "3(e)i",
          "3(e)ii"]


@pytest.mark.skipif(not (shutil.which("latexmk") and shutil.which("pdftotext")),
                    reason="needs latexmk and pdftotext (apt-get install $(cat .ci/apt-packages.txt))")
def test_pdf_builds_with_every_question(tmp_path):
    work = tmp_path / "tree"
    shutil.copytree(ROOT, work, ignore=shutil.ignore_patterns(".git", ".venv", "runs", "figures", "*.pdf",
                                                              "*.params", "__pycache__"))
    p = subprocess.run(["make", f"PYTHON={shlex.quote(sys.executable)}"], cwd=work, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    # the first pass's "undefined reference" warnings read like a broken build; only the last pass's show
    assert "undefined" not in p.stdout + p.stderr and "make: wrote submission.pdf" in p.stdout
    text = subprocess.run(["pdftotext", str(work / "submission.pdf"), "-"], capture_output=True, text=True).stdout
    missing = [label for label in LABELS if label not in text]
    assert not missing, f"question numbers missing from the PDF text: {missing}"
    assert "Problem 5" in text or "5(a)" in text
    # an underscore in \texttt written as \_ is a rule that the PDF's text loses ("test written.py")
    assert "tests/test_written.py" in text and "block_size" in text
    # a sum is copied as a sum (cmex's summation glyphs had no character: every \sum read "P"), and no
    # \notin, whose overlaid slash fell on the next line ("i∈" then "/ {a, b}")
    assert "\u2211" in text and "\u2208\n/" not in text
    subprocess.run(["make", "clean"], cwd=work, check=True, capture_output=True)
    assert not (work / "submission.pdf").exists() and not (work / "figures").exists()


@pytest.mark.skipif(not shutil.which("latexmk"), reason="needs latexmk (apt-get install $(cat .ci/apt-packages.txt))")
def test_a_latex_error_is_shown_and_keeps_the_last_pdf(tmp_path):
    """latexmk quietened must still say where LaTeX stopped, not only "gave return code 1"; a failed (or
    interrupted) build used to delete submission.pdf, and latexmk's record of it then made every later
    `make` fail until submission.tex changed again."""
    work = tmp_path / "tree"
    shutil.copytree(ROOT, work, ignore=shutil.ignore_patterns(".git", ".venv", "runs", "figures", "*.pdf",
                                                              "*.params", "__pycache__"))
    make = ["make", f"PYTHON={shlex.quote(sys.executable)}"]
    assert subprocess.run(make, cwd=work, capture_output=True, timeout=600).returncode == 0
    made = (work / "submission.pdf").read_bytes()
    good = (work / "submission.tex").read_text()
    lines = good.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("\\section"))
    lines.insert(at, "\\nosuchmacro")
    (work / "submission.tex").write_text("\n".join(lines) + "\n")
    p = subprocess.run(make, cwd=work, capture_output=True, text=True, timeout=600)
    assert p.returncode != 0 and (work / "submission.pdf").read_bytes() == made
    assert f"submission.tex:{at + 1}: Undefined control sequence." in p.stderr, p.stderr
    assert "make: LaTeX stopped at the error above" in p.stderr and "submission.pdf is as it was" in p.stderr
    (work / "submission.tex").write_text(good)
    p = subprocess.run(make, cwd=work, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0 and "make: wrote submission.pdf" in p.stdout, p.stdout + p.stderr
    assert not (work / ".latex-build").exists()


@pytest.mark.skipif(not shutil.which("make"), reason="needs make")
def test_an_engine_error_without_a_file_line_is_shown_too(tmp_path):
    """On a full disk pdflatex stops with `!pdfTeX error: ... fflush() failed (No space left on device)`, which
    has no file:line: the Makefile's grep found nothing and `make` pointed at "the error above" over latexmk's
    list of undefined references. Its `!` lines are shown, and where nothing matches, the log's last lines."""
    work = tmp_path / "tree"
    shutil.copytree(ROOT, work, ignore=shutil.ignore_patterns(".git", ".venv", "runs", "*.pdf", "*.params",
                                                              "__pycache__"))
    for name in ("spread.pdf", "temperature.pdf", "spread_stats.tex"):  # made: make goes straight to LaTeX
        (work / "figures").mkdir(exist_ok=True)
        (work / "figures" / name).write_text("x")
    fake = tmp_path / "latexmk"
    for log, shown in (("Latexmk: Summary of warnings:\n!pdfTeX error: pdflatex (file ./submission.tex): fflush() "
                        "failed (No space left on device)\n ==> Fatal error occurred, no output PDF file produced!",
                        "!pdfTeX error: pdflatex (file ./submission.tex): fflush() failed (No space left on device)"),
                       ("\n".join(f"line {i}" for i in range(20)) + "\nthe engine died", "the engine died")):
        fake.write_text(f"#!/bin/sh\nmkdir -p .latex-build && printf '%s\\n' '{log}' > .latex-build/submission.log\n"
                        f"exit 12\n")
        fake.chmod(0o755)
        p = subprocess.run(["make", f"PYTHON={shlex.quote(sys.executable)}", f"LATEXMK={shlex.quote(str(fake))}"],
                           cwd=work, capture_output=True, text=True, timeout=600)
        assert p.returncode != 0 and shown in p.stderr, p.stderr
        assert "make: LaTeX stopped at the error above" in p.stderr and not (work / "submission.pdf").exists()


@pytest.mark.skipif(not shutil.which("make"), reason="needs make")
def test_make_clean_removes_only_what_make_made(tmp_path):
    """`make clean` ran `rm -rf figures`: a file of the user's there went with it."""
    work = tmp_path / "tree"
    shutil.copytree(ROOT, work, ignore=shutil.ignore_patterns(".git", ".venv", "runs", "figures", "*.pdf",
                                                              "*.params", "__pycache__"))
    (work / "figures").mkdir()
    for name in ("spread.pdf", "temperature.pdf", "spread_stats.tex", "my_diagram.tex"):
        (work / "figures" / name).write_text("x")
    (work / "submission.pdf").write_text("x")
    p = subprocess.run(["make", "clean", "LATEXMK=no-such-latexmk"], cwd=work, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(work / "figures")) == ["my_diagram.tex"] and not (work / "submission.pdf").exists()


@pytest.mark.skipif(not shutil.which("make"), reason="needs make")
def test_make_without_latex_says_what_to_install(tmp_path):
    """Without latexmk, `make` ended in make's own "No such file or directory ... Error 127"."""
    work = tmp_path / "tree"
    shutil.copytree(ROOT, work, ignore=shutil.ignore_patterns(".git", ".venv", "runs", "figures", "*.pdf",
                                                              "*.params", "__pycache__"))
    p = subprocess.run(["make", f"PYTHON={shlex.quote(sys.executable)}", "LATEXMK=no-such-latexmk"], cwd=work,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 2 and "make: no no-such-latexmk (LaTeX); install it: apt-get install latexmk" in p.stderr
    assert (work / "figures").is_dir() and not (work / "submission.pdf").exists()


@pytest.mark.skipif(not shutil.which("make"), reason="needs make")
def test_make_with_a_python_that_is_not_there_says_so(tmp_path):
    """make PYTHON=/path with a space/python (unquoted: make's shell splits it) said that Python lacked numpy or
    matplotlib, which it had; a PYTHON that runs nothing is named as no program, with how to quote a path."""
    work = tmp_path / "tree"
    shutil.copytree(ROOT, work, ignore=shutil.ignore_patterns(".git", ".venv", "runs", "figures", "*.pdf",
                                                              "*.params", "__pycache__"))
    os.symlink(sys.prefix, tmp_path / "my env")  # this environment (a venv is found from its python's path)
    python = tmp_path / "my env" / os.path.relpath(sys.executable, sys.prefix)
    p = subprocess.run(["make", f"PYTHON={python}", "figures"], cwd=work, capture_output=True, text=True, timeout=600)
    assert p.returncode == 2 and f"make: no program {tmp_path / 'my env'}" in p.stderr, p.stderr
    assert "make PYTHON=\"'/path/to/python'\"" in p.stderr and "lacks numpy" not in p.stderr
    quoted = shlex.quote(str(python))
    p = subprocess.run(["make", f"PYTHON={quoted}", "figures"], cwd=work, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0 and (work / "figures" / "spread_stats.tex").exists(), p.stderr


@pytest.mark.skipif(not shutil.which("lualatex"), reason="needs lualatex (texlive-luatex)")
def test_the_preamble_builds_with_lualatex_too(tmp_path):
    """The Makefile runs pdfLaTeX, but an editor set to LuaLaTeX (Overleaf's compiler menu, a TeX editor's
    default) builds the same file: submission.tex's pdfTeX-only lines (glyphtounicode, for sums that copy as
    sums) stopped it at once with "Undefined control sequence \\pdfglyphtounicode". The preamble alone, with a
    sum in the body, builds."""
    with open(os.path.join(ROOT, "submission.tex"), encoding="utf-8") as f:
        preamble = f.read().split("\\input{written/results.tex}")[0]
    (tmp_path / "t.tex").write_text(preamble + "\\begin{document}\n$\\sum_i x_i$\n\\end{document}\n", encoding="utf-8")
    p = subprocess.run(["lualatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout[-2000:]

"""The package graded, as the grader imports it: src/submission/, or the folder --code-dir names, imported as
`submission` whatever that folder's name (use_code_dir), with the project's own modules a student's folder
lacks taken from src/submission/. grader.py holds the tests, graderlib.py the framework that runs them.

Nothing here depends on the graded code: it imports the standard library, graderlib and oneline only, and the
package is imported by the first test that asks for it (sub), never as this module loads, so that a package
that does not import fails its tests, each in one line, instead of stopping the grader. Each way the package
can be wrong is one line that names the file and says what to do: a --code-dir that is not the package's
folder, before any test runs (code_dir_problem); an import that raised, with the file and line in the package,
or a module saved as UTF-16 or holding a NUL byte, for which Python names no file (import_problem); a missing
__init__.py, an export the package lacks, or its files one folder too deep (sub, sub_attr); an import that ran
past a test's time limit, which later tests do not try again (sub).
"""
import importlib
import importlib.abc
import importlib.util
import os
import shlex
import sys
import traceback

import graderlib
from graderlib import Failure
from oneline import utf16

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_SUBMISSION_DIR = os.path.join(HERE, "submission")
# the handout's code files: the package's other modules (batching.py, card.py, ...) are this project's own
CODE_FILES = ["__init__.py", "attention.py", "dataset.py", "helper.py", "model.py", "trainer.py", "utils.py"]


# grader.py and deliverables.py name paths with it too: one rule for every message of the grader's
def typed_path(path):
    """A path as the student would type it: relative to the repo root when inside it (run.sh runs
    from there), else absolute."""
    path = os.path.abspath(path)
    try:
        if os.path.commonpath([path, ROOT]) == ROOT:
            return os.path.relpath(path, ROOT)
    except ValueError:  # Windows: another drive than the repo's
        pass
    return path


# =============================================================================================
# The package graded: src/submission/, or the folder --code-dir names, imported as `submission`
# =============================================================================================
_code_dir = None  # the folder --code-dir names (absolute), once use_code_dir has run; None: src/submission/


def package_dir():
    """The folder of the package graded: --code-dir's, else src/submission/."""
    return _code_dir or os.path.join(HERE, "submission")


def code_dir():
    """The folder --code-dir names (absolute), once use_code_dir has run; None: src/submission/ is graded."""
    return _code_dir


def _package_init():
    """The package's __init__.py as messages name it: as the course's starter does for src/submission/, else the
    file in --code-dir."""
    return typed_path(os.path.join(_code_dir, "__init__.py")) if _code_dir else "submission/__init__.py"


def code_dir_problem(folder, outputs):
    """Why --code-dir `folder` cannot be the package graded, or None: missing, a file, or without __init__.py
    or any other of the handout's code files (the top of a student's unpacked zip, whose package is in its
    src/submission/, is told to name that folder). A folder without __init__.py that holds others of the handout's
    files, or any of `outputs` (the names of the other files the tests grade: prediction and params files), is
    graded (sub() names what is missing)."""
    if not os.path.exists(folder):
        return "no such folder; check the path"
    if not os.path.isdir(folder):
        return "is a file, not a folder; give the folder that holds the package's .py files"
    try:
        names = set(os.listdir(folder))
    except OSError as e:
        return f"cannot be read ({e.strerror or e}); check its permissions"
    if "__init__.py" in names and names & set(CODE_FILES[1:]):
        return None
    for inner in (os.path.join("src", "submission"), "submission"):  # a zip's layout, or one folder too deep
        if os.path.isfile(os.path.join(folder, inner, "__init__.py")):
            return (f"the package's files are one folder deeper, in {os.path.join(folder, inner)} (as in "
                    f"./run.sh deliverables' zip): give --code-dir {shlex.quote(os.path.join(folder, inner))}")
    # a student's folder short of files (__init__.py left out, or only the prediction files sent) is graded: the
    # tests that need what is missing fail naming it, the others score, and results.json says so to the student
    if names & (set(CODE_FILES[1:]) | set(outputs)):
        return None
    if "__init__.py" not in names:
        return ("has no __init__.py, the file that makes the folder the submission package; give the folder "
                "that holds the student's package (with __init__.py)")
    return (f"has none of the handout's code files ({', '.join(CODE_FILES[1:])}); give the folder that "
            f"holds the student's package")


class _CodeDirFinder(importlib.abc.MetaPathFinder):
    """Finds `submission` in --code-dir's folder (its modules are then found there through the package's
    __path__), and a module of the project's own that the folder lacks (batching.py, card.py, ...: not one
    of the handout's CODE_FILES) in src/submission/, as the Gradescope recipe leaves them (docs/grader.md)."""

    def __init__(self, folder):
        self.folder = folder

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "submission":
            return importlib.util.spec_from_file_location(
                "submission", os.path.join(self.folder, "__init__.py"), submodule_search_locations=[self.folder])
        package, _, name = fullname.partition(".")
        if package != "submission" or "." in name or f"{name}.py" in CODE_FILES:
            return None
        if os.path.exists(os.path.join(self.folder, f"{name}.py")) or os.path.isdir(os.path.join(self.folder, name)):
            return None  # the folder's own: the package's __path__ finds it
        own = os.path.join(DEFAULT_SUBMISSION_DIR, f"{name}.py")
        return importlib.util.spec_from_file_location(fullname, own) if os.path.isfile(own) else None


def use_code_dir(folder):
    """Grade the package in `folder` (code_dir_problem's checks passed): from now on `import submission`, by
    the grader or by anything it runs, imports it from there (the first import, inside a test, runs its code).
    A folder that is src/submission/ itself changes nothing. Compiled modules are not written into it: a
    student's folder stays as it was handed in."""
    global _code_dir
    folder = os.path.abspath(folder)
    if os.path.realpath(folder) == os.path.realpath(DEFAULT_SUBMISSION_DIR):
        folder = None
    if folder == _code_dir:
        return
    for name in [n for n in sys.modules if n == "submission" or n.startswith("submission.")]:
        del sys.modules[name]  # another folder's package, imported before (in-process callers): not graded
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _CodeDirFinder)]
    if folder is not None:
        sys.meta_path.insert(0, _CodeDirFinder(folder))
        sys.dont_write_bytecode = True
    _code_dir = folder


def in_package(e):
    """"path:line" of the innermost frame of `e`'s traceback in the submission package (past importlib's
    frames), or None."""
    package = package_dir() + os.sep
    frames = [f for f in traceback.extract_tb(e.__traceback__) if os.path.abspath(f.filename).startswith(package)]
    return f"{typed_path(frames[-1].filename)}:{frames[-1].lineno}" if frames else None


def import_problem(e):
    """Why importing the submission package raised `e`, with the file and line in the package."""
    # a NUL byte (a module saved as UTF-16): a SyntaxError with neither file nor line from Python 3.11.4 on,
    # a ValueError before (3.11.2 and 3.8 among the Pythons run.sh takes), naming no file either
    nul = (isinstance(e, SyntaxError) and e.lineno is None) or (type(e) is ValueError and "null bytes" in str(e))
    unreadable = _unreadable_module() if nul else None
    if unreadable:
        return f"{type(e).__name__}: {unreadable}"
    if isinstance(e, SyntaxError):
        return f"SyntaxError at {typed_path(e.filename or '?')}:{e.lineno}: {e.msg}"
    where = in_package(e)
    if isinstance(e, SystemExit):
        return "exit() or sys.exit() runs as the package is imported; remove it" + (f" ({where})" if where else "")
    return f"{type(e).__name__}: {graderlib.text_of(e)}" + (f" (raised at {where})" if where else "")


def not_python_source(data):
    """(what is wrong, its fix) for a module's bytes that are not Python source in a way Python names no file or
    line for (a NUL byte; UTF-16, a Windows editor's "Unicode", is full of them), else None. deliverables.py's
    check of the code files says the same."""
    if utf16(data):  # the fix keeps the student's code; "restore it" would not
        return utf16(data), "save it as UTF-8"
    if bytes(1) in data:
        return f"a NUL byte at byte {data.index(bytes(1))}: not Python source", "restore it from git"
    return None


def _unreadable_module():
    """`path: what is wrong; fix` for the first module of the package that not_python_source finds, or None."""
    package = package_dir()
    try:
        names = sorted(n for n in os.listdir(package) if n.endswith(".py"))
    except OSError:
        return None
    for name in names:
        path = os.path.join(package, name)
        try:
            with open(path, "rb") as f:
                wrong = not_python_source(f.read())
        except OSError:
            continue
        if wrong:
            return f"{typed_path(path)}: {wrong[0]}; {wrong[1]}"
    return None


_import_hung = []  # where importing the package was when a test's time ran out: it is not tried again


def sub():
    """The `submission` package (imported from src/, or from --code-dir's folder: use_code_dir), or a Failure
    saying why it cannot be imported."""
    if _import_hung:  # an endless loop at a module's top level would cost every later test its whole limit
        raise Failure(f"importing the submission package did not finish in an earlier test's time limit"
                      f"{_import_hung[0]}; look for a loop that runs at import")
    if _code_dir and not os.path.isfile(os.path.join(_code_dir, "__init__.py")):  # a student's folder without it
        raise Failure(f"{_package_init()} is missing: it makes the folder the submission package; submit it with "
                      f"the handout's other files of src/submission/")
    importing = "submission" not in sys.modules  # a time-out in a call that only fetches it says nothing
    try:
        return importlib.import_module("submission")
    except graderlib.TestTimeout as e:
        if importing:
            where = in_package(e)
            _import_hung.append(f" (it was at {where})" if where else "")
        raise
    except (Exception, SystemExit) as e:  # SyntaxError included; exit() at a module's top level
        where = f" in {typed_path(_code_dir)}" if _code_dir else ""
        raise Failure(f"cannot import the submission package{where}: {import_problem(e)}") from None


def sub_attr(name):
    m = sub()
    if not hasattr(m, name):
        package = package_dir()
        if os.path.isdir(os.path.join(package, "submission")):
            raise Failure(f"{typed_path(os.path.join(package, 'submission'))} is there: the package's files are "
                          f"one folder too deep; move them up into {typed_path(package)}")
        if not os.path.isfile(os.path.join(package, "__init__.py")):
            raise Failure(f"{typed_path(os.path.join(package, '__init__.py'))} is missing: it makes the folder the "
                          f"submission package and exports {name}; restore it from the starter code")
        raise Failure(f"the submission package has no {name} ({_package_init()} must export it)")
    return getattr(m, name)


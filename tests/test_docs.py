"""The documentation against the code: what README.md, docs/*.md and data/README.md (and the text of
`./run.sh help`) name must exist. Every `./run.sh MODE` names a mode run.sh has; every --flag given to
a `./run.sh MODE`, `python src/X.py` or `torchrun ... src/run.py` command is one that command's parser
accepts (the parsers are the scripts' own, caught as their main() parses: nothing runs); every repo
path in code exists; every commit named is in the history; every environment variable set in the docs
is read by the code; functions and keyword arguments cited are where the docs put them; and the counts
the docs state (modes, deliverables, vocabulary, model defaults, points, pass marks) are the code's.

Text and parsers only, CPU, no network, a few seconds; the commit check skips without git or on a
shallow clone.

Run:  python -m pytest -q tests/test_docs.py
"""
import argparse
import ast
import glob
import json
import os
import re
import shlex
import subprocess
import sys
from unittest import mock

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ["README.md", "data/README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(f"{ROOT}/docs/*.md"))


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


RUN_SH = read("run.sh")
HELP = re.search(r"cat <<'TEXT'\n(.*?)\nTEXT\n", RUN_SH, re.S).group(1)  # ./run.sh help, as run.sh prints it
MODES = re.search(r'^MODES="([^"]*)"', RUN_SH, re.M).group(1).split()
EXTRA_MODES = re.search(r'^EXTRA_MODES="([^"]*)"', RUN_SH, re.M).group(1).split()
ALIASES = re.findall(r"^\s*(\w+)\) MODE=\w+ ;;", RUN_SH, re.M)  # the handout's spellings
PLACEHOLDERS = {"MODE"}  # `cd src && ./run.sh MODE`
# the parser whose flags each run.sh mode passes on ("": takes none; None: not checked, e.g. pytest's)
MODE_PARSER = dict({m: "run" for m in MODES + ALIASES + ["all"]}, london_baseline="", help="", test=None,
                   demo="demo", bench="bench", plot="plots", memorised="memorised", ask="ask",
                   deliverables="deliverables")
SCRIPTS = {"src/run.py": "run", "src/demo.py": "demo", "src/bench.py": "bench", "src/ask.py": "ask",
           "src/memorised.py": "memorised", "src/grader.py": "grader", "src/deliverables.py": "deliverables",
           "src/make_world.py": "make_world", "src/plots.py": "plots", "src/london_baseline.py": "london_baseline",
           "src/submission/dataset.py": "dataset"}
OUTPUTS = (".params", ".predictions", ".jsonl", ".state", ".partial", ".zip", ".pdf")  # made by the commands
EXTERNAL_ENV = {"PIP_EXTRA_INDEX_URL"}  # read by pip, not by this project
OTHER_TOOLS_FLAGS = {"--nproc_per_node", "--output"}  # torchrun's, jupyter execute's
NUMBERS = dict(zip("one two three four five six seven eight nine ten eleven twelve".split(), range(1, 13)))


def docs():
    """(name, text) of each markdown document."""
    return [(doc, read(doc)) for doc in DOCS]


def texts():
    """(name, text) of every text checked: the markdown documents and the help text of run.sh."""
    return docs() + [("run.sh help", HELP)]


def code_chunks(text):
    """(line, code) of a markdown text: each line of its fenced and indented code blocks (a line ending
    in a backslash joined to the next), then each inline code span (one may cross a line end)."""
    lines, chunks, prose, fenced, indented, i = text.split("\n"), [], [], False, False, 0
    while i < len(lines):
        line, start = lines[i], i + 1
        if line.startswith("```"):
            fenced, indented = not fenced, False
        elif fenced or (line.startswith("    ") and (indented or i == 0 or not lines[i - 1].strip())):
            indented = not fenced
            while line.endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line[:-1] + " " + lines[i].strip()
            chunks.append((start, line))
        else:
            indented = False
            prose.append((start, line))
        i += 1
    body = "\n".join(dict(prose).get(n, "") for n in range(1, len(lines) + 1))  # code blocks blanked
    for m in re.finditer(r"`([^`]+)`", body):
        chunks.append((body.count("\n", 0, m.start()) + 1, " ".join(m.group(1).split())))
    return chunks


def tokens(code):
    try:
        return shlex.split(code, comments=True)
    except ValueError:  # an unbalanced quote
        return code.split()


def commands(code):
    """(command, mode or script, arguments) of each ./run.sh, python src/X.py or torchrun command in `code`;
    the arguments end at a shell operator."""
    words, out = tokens(code), []
    for i, word in enumerate(words):
        rest, script = words[i + 1:], None
        if (word == "./run.sh" or word.endswith("/run.sh")) and rest:
            out.append(("run.sh", rest[0], rest[1:]))
        elif word in ("python", "python3") and rest and rest[0].endswith(".py"):
            script = rest[0]
        elif word == "torchrun":
            script = next((w for w in rest if w.endswith(".py")), None)
        if script:
            out.append(("python", script, rest[rest.index(script) + 1:]))
    ends = [next((k for k, a in enumerate(args) if re.match(r"^(\d?[<>|&;]|\()", a)), len(args))
            for _, _, args in out]
    return [(command, name, args[:end]) for (command, name, args), end in zip(out, ends)]


def flags(args):
    """The --flags among `args`, without values or punctuation (--pretrain_corpus_path=X, --resume):)."""
    return [m.group(0) for m in (re.match(r"--[A-Za-z][\w-]*", a) for a in args) if m]


class _Parsed(BaseException):
    def __init__(self, parser):
        super().__init__()
        self.parser = parser


def parser_of(main, argv=True):
    """The ArgumentParser `main` builds, caught when it parses (so nothing of the command runs)."""
    sentinel = ["--docs-test-sentinel"]
    original = argparse.ArgumentParser.parse_known_args

    def spy(self, args=None, namespace=None):
        if list(sys.argv[1:] if args is None else args) == sentinel:
            raise _Parsed(self)
        return original(self, args, namespace)

    with mock.patch.object(argparse.ArgumentParser, "parse_known_args", spy), \
            mock.patch.object(sys, "argv", ["prog"] + sentinel):
        try:
            main(sentinel) if argv else main()
        except _Parsed as caught:
            return caught.parser
    raise AssertionError(f"{main} returned without parsing its arguments")


def options(parser):
    """{subcommand or None: its option strings} of a parser."""
    out = {None: set(parser._option_string_actions)}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            out.update({name: set(sub._option_string_actions) for name, sub in action.choices.items()})
    return out


@pytest.fixture(scope="module")
def parsers():
    import ask, bench, deliverables, demo, grader, london_baseline, make_world, memorised, plots, run
    from submission import dataset
    mains = dict(run=run.main, demo=demo.main, bench=bench.main, ask=ask.main, memorised=memorised.main,
                 grader=grader.main, deliverables=deliverables.main, make_world=make_world.main,
                 plots=plots.main, london_baseline=london_baseline.main)
    out = {name: options(parser_of(main)) for name, main in mains.items()}
    out["dataset"] = options(parser_of(dataset._main, argv=False))
    out["demo"][None] |= out["run"][None]  # the demo passes any other flag on to run.py
    return out


def test_every_run_sh_mode_named_exists():
    known = set(MODES + EXTRA_MODES + ALIASES + ["help", "-h", "--help"]) | PLACEHOLDERS
    named = [(doc, text.count(chr(10), 0, m.start()) + 1, m.group(1))
             for doc, text in texts() for m in re.finditer(r"\./run\.sh[ \t]+(-{0,2}[A-Za-z_][\w-]*)", text)]
    assert len({mode for _, _, mode in named}) > 10, "the pattern is wrong: it finds almost no mode"
    bad = [f"{doc}:{line}: ./run.sh {mode}" for doc, line, mode in named if mode not in known]
    assert not bad, "modes run.sh does not have:\n" + "\n".join(bad)


def test_every_flag_shown_is_accepted(parsers):
    bad, checked = [], 0
    for doc, text in docs():
        for line, code in code_chunks(text):
            for command, name, args in commands(code):
                if command == "run.sh":
                    parser = MODE_PARSER.get(name)
                    if parser is None:
                        continue
                    known = parsers[parser][None] if parser else set()
                    if parser == "plots" and args and args[0] in parsers["plots"]:
                        known = parsers["plots"][args[0]]
                elif name in SCRIPTS:
                    known = parsers[SCRIPTS[name]]
                    known = known.get(args[0], known[None]) if args else known[None]
                else:
                    bad.append(f"{doc}:{line}: {name}: no such script of the project ({code})")
                    continue
                checked += len(flags(args))
                bad += [f"{doc}:{line}: {command} {name} {flag}: not a flag it takes"
                        for flag in flags(args) if flag not in known]
    every = set().union(*(set().union(*p.values()) for p in parsers.values())) | OTHER_TOOLS_FLAGS
    bad += [f"{doc}:{line}: {flag}: no command takes it" for doc, text in texts()
            for line, code in (code_chunks(text) if doc != "run.sh help" else [(0, HELP)])
            for flag in flags(tokens(code)) if flag not in every]  # a flag alone: `--resume`
    assert checked > 20, "the pattern is wrong: it finds almost no flag after a command"
    assert not bad, "\n".join(bad)


def test_grader_ids_shown_pick_tests():
    ids = {k for k in json.loads(read("src/points.json")) if not k.startswith("_") and k != "pass_marks"}
    bad, checked = [], 0
    for doc, text in docs():
        for line, code in code_chunks(text):
            for command, name, args in commands(code):
                if name == "src/grader.py":
                    checked += sum(1 for a in args if re.match(r"^\d[a-z]\b", a))
                    bad += [f"{doc}:{line}: grader.py {a}" for a in args if re.match(r"^\d[a-z]\b", a)
                            and not any(t == a or t.startswith(a + "-") for t in ids)]
    assert checked >= 2, "the pattern is wrong: it finds almost no test id"
    assert not bad, "test ids that pick no test:\n" + "\n".join(bad)


def test_every_repo_path_in_code_exists():
    tops = {name for name in os.listdir(ROOT) if not name.startswith((".venv", "runs"))}
    bad, checked = [], 0
    for doc, text in docs():
        here = os.path.dirname(doc)
        found = [(line, w.split("=", 1)[-1]) for line, code in code_chunks(text) for w in tokens(code)]
        found += [(text.count("\n", 0, m.start()) + 1, m.group(1))
                  for m in re.finditer(r"\]\(([^)\s]+)\)", text) if "://" not in m.group(1)]
        for line, path in found:
            path = path.strip("(),;:")
            top = path.split("/")[0]
            if ("/" not in path or path.startswith(("/", "$", "~", "<", "-", "runs/", ".venv"))
                    or re.search(r"[*{}]|\.\.\.", path)
                    or re.search(r"XXXX|(^|/)[A-Z][A-Z_]+(/|$)", path) or path.endswith(OUTPUTS)):  # placeholders
                continue
            if not (top in tops or path.endswith("/") or re.search(r"\.\w{1,5}$", path)):
                continue  # not a path (train/loss, 1f-1/2)
            bases = ("", here, "src", "src/submission")  # the repo's, the doc's, the course's folders
            checked += 1
            if not any(os.path.exists(os.path.join(ROOT, base, path)) for base in bases):
                bad.append(f"{doc}:{line}: {path}")
    assert checked > 20, "the pattern is wrong: it finds almost no path"
    assert not bad, "paths that are not in the repo:\n" + "\n".join(bad)


def test_every_commit_named_is_in_the_history():
    try:  # this repo's own checkout (not a copy inside another), with its whole history
        git = subprocess.run(["git", "rev-parse", "--show-toplevel", "--is-shallow-repository", "--verify", "HEAD"],
                             cwd=ROOT, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        pytest.skip("no git")
    said = git.stdout.split("\n")
    if git.returncode != 0 or os.path.realpath(said[0]) != os.path.realpath(ROOT) or said[1] != "false":
        pytest.skip("not a git checkout of this repo with its whole history")
    named = {}
    for doc, text in texts():
        for m in re.finditer(r"(?<![\w.-])(commits? )?([0-9a-f]{7,40})(?![\w.-])", text):
            if m.group(1) or (re.search(r"\d", m.group(2)) and re.search(r"[a-f]", m.group(2))):
                named.setdefault(m.group(2), f"{doc}:{text.count(chr(10), 0, m.start()) + 1}")
    assert named, "no commit found in the docs: the pattern is wrong"
    # An object a local clone copied (a helper's commit, fetched then cherry-picked under another hash) passes
    # rev-parse here but is absent from CI's clone: the commit must be an ancestor of HEAD.
    bad = [f"{where}: {commit}" for commit, where in sorted(named.items(), key=lambda kv: kv[1])
           if subprocess.run(["git", "merge-base", "--is-ancestor", commit + "^{commit}", "HEAD"], cwd=ROOT,
                             capture_output=True, timeout=30).returncode != 0]
    assert not bad, "commits not in HEAD's history:\n" + "\n".join(bad)


def test_every_environment_variable_named_is_read():
    code = "\n".join(read(p) for p in ["run.sh", "src/run.sh", "src/submission/mingpt-demo/play_char.ipynb"]
                     + [os.path.relpath(p, ROOT) for p in glob.glob(f"{ROOT}/src/**/*.py", recursive=True)])
    bad, named = [], set()
    for doc, text in texts():
        for m in re.finditer(r"\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)=|\b(GPT_[A-Z0-9_]+|[A-Z]+_DIR|PLAY_CHAR_\w+)\b", text):
            name = m.group(1) or m.group(2)
            q = r"\\?[\"']"
            if name not in EXTERNAL_ENV and not re.search(rf"environ(\.get)?[\[(]\s*{q}{name}{q}|getenv\(\s*{q}{name}"
                                                          rf"{q}|\$\{{?{name}\b", code):
                bad.append(f"{doc}:{text.count(chr(10), 0, m.start()) + 1}: {name}")
            named.add(name)
    assert not bad, "environment variables no code reads:\n" + "\n".join(bad)
    assert {"DATA_DIR", "OUT_DIR", "GPT_NUM_THREADS"} <= named, f"only {sorted(named)} found: the pattern is wrong"


def test_every_gpt_variable_the_code_reads_is_documented():
    """The user's settings (GPT_*) the code reads are named in the docs or in ./run.sh help."""
    code = "\n".join(read(os.path.relpath(p, ROOT)) for p in glob.glob(f"{ROOT}/src/**/*.py", recursive=True))
    read_ = set(re.findall(r"environ(?:\.get)?[\[(]\s*[\"'](GPT_\w+)[\"']|getenv\(\s*[\"'](GPT_\w+)", code))
    names = {a or b for a, b in read_}
    assert {"GPT_DEVICE", "GPT_NUM_THREADS"} <= names, "the pattern finds no variables: it is wrong"
    said = "\n".join(text for _, text in texts())
    missing = [n for n in sorted(names) if n not in said]
    assert not missing, f"read by the code and named in no doc nor in ./run.sh help: {missing}"

def definitions(path):
    """{name: ast node} of the top-level functions, classes and assignments of a source file."""
    out = {}
    for node in ast.parse(read(path)).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, ast.Assign):
            out.update({t.id: node for t in node.targets if isinstance(t, ast.Name)})
    return out


def keywords_taken(node):
    """The keywords a function takes (None: any, it has **kwargs), or a class: its __init__'s named ones
    and its class attributes (the package's configs take any keyword as an attribute)."""
    if isinstance(node, ast.ClassDef):
        init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        attrs = {t.id for n in node.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                 for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
        return attrs | ({p.arg for p in init.args.args + init.args.kwonlyargs} if init else set())
    if isinstance(node, ast.FunctionDef):
        return None if node.args.kwarg else {p.arg for p in node.args.args + node.args.kwonlyargs}
    return None


def test_functions_and_keywords_cited_exist():
    modules = {os.path.relpath(p, ROOT) for p in glob.glob(f"{ROOT}/src/**/*.py", recursive=True)}
    classes = {}
    for path in sorted(modules):
        if path.startswith("src/submission/"):
            classes.update({k: v for k, v in definitions(path).items() if isinstance(v, ast.ClassDef)})
    bad, cited = [], 0
    for doc, text in docs():
        for m in re.finditer(r"`([A-Za-z_]\w*)` in `(src/[\w/]+\.py)`", text):
            cited += 1
            if m.group(1) not in definitions(m.group(2)):
                bad.append(f"{doc}: {m.group(1)} is not defined in {m.group(2)}")
        for line, code in code_chunks(text):
            m = re.fullmatch(r"([a-z_][\w.]*)\.([A-Za-z_]\w*)(\(.*\))?|([A-Z]\w*)(\(.*\))", code)
            if not m or re.search(r"\.(py|md|txt|tsv|jsonl?|png|sh|yml|tex|ipynb|params|predictions|zip|pdf)$", code):
                continue
            if m.group(4):  # GPTConfig(fast_attention=False): a class of the package and what it takes
                node, name, call = classes.get(m.group(4)), m.group(4), m.group(5)
                if node is None:
                    continue
            else:
                dotted = m.group(1).replace(".", "/")
                # the package first: src/attention.py and its kind are CS224N's names for the package's modules
                path = next((p for p in (f"src/submission/{dotted}.py", f"src/{dotted}.py") if p in modules), None)
                if path is None:
                    continue  # not one of the project's modules (torch.compile, sys.exit)
                name, call = m.group(2), m.group(3)
                node = definitions(path).get(name)
                if node is None:
                    bad.append(f"{doc}:{line}: {m.group(1)}.{name}: not in {path}")
                    continue
            try:
                given = {k.arg for k in ast.parse(name + call, mode="eval").body.keywords} if call else set()
            except SyntaxError:
                continue  # (...) as an ellipsis of arguments
            taken = keywords_taken(node)
            bad += [f"{doc}:{line}: {name}({k}=...): not a keyword it takes" for k in sorted(given - taken)
                    if taken is not None]
    assert not bad, "\n".join(bad)
    assert cited > 0, "no `name` in `src/...py` found in the docs: the pattern is wrong"


def test_functions_named_in_the_repos_own_files_comments_exist():
    """A comment in the repository's own files (.gitattributes, .gitignore, Makefile, run.sh, .ci/) that names
    `module.function` of the project names one the module defines: .gitattributes kept citing
    grader.which_corpus after the grader lost it (choose_marks says which corpus)."""
    modules = {}
    for path in glob.glob(f"{ROOT}/src/*.py") + glob.glob(f"{ROOT}/src/submission/*.py"):
        modules.setdefault(os.path.basename(path)[:-3], []).append(os.path.relpath(path, ROOT))
    files = [".gitattributes", ".gitignore", "Makefile", "run.sh"] + sorted(
        os.path.relpath(p, ROOT) for p in glob.glob(f"{ROOT}/.ci/*") if os.path.isfile(p))
    bad, named = [], 0
    for name in files:
        for number, line in enumerate(read(name).splitlines(), 1):
            comment = line.partition("#")[2]
            for m in re.finditer(r"\b([a-z_]\w*)\.([A-Za-z_]\w*)\b", comment):
                if m.group(1) not in modules or re.fullmatch(r"py|sh|md|txt|tsv|jsonl?|params|log|zip|pdf", m.group(2)):
                    continue
                named += 1
                if not any(m.group(2) in definitions(path) for path in modules[m.group(1)]):
                    bad.append(f"{name}:{number}: {m.group(0)} is not defined in {' or '.join(modules[m.group(1)])}")
    assert not bad, "\n".join(bad)
    assert named > 0, "no module.function found in the repository's files: the pattern is wrong"


def stated(pattern, text):
    return [m.groups() for m in re.finditer(pattern, " ".join(text.split()))]  # across line ends


def test_counts_and_defaults_stated_are_the_codes():
    import deliverables
    import grader
    import run
    from submission.dataset import CharCorruptionDataset
    vocab = CharCorruptionDataset(read("data/wiki.txt"), 128).vocab_size  # MASK and PAD included
    defaults = vars(run.build_parser().parse_args([]))
    points = json.loads(read("src/points.json"))
    parts = {}
    for test_id, entry in points.items():  # the course's shape: {test_id: {"points": N}}
        if not test_id.startswith("_") and test_id != "pass_marks":
            parts[test_id[1]] = parts.get(test_id[1], 0) + entry["points"]
    bad, seen = [], set()  # seen: the kinds of statement found (a reworded doc must not pass unchecked)
    for doc, text in texts():
        for (word,) in stated(r"\bthe (\w+) modes\b", text):
            seen.add("modes")
            if word in NUMBERS and NUMBERS[word] != len(MODES):
                bad.append(f"{doc}: the {word} modes, run.sh has {len(MODES)}")
        files = len(deliverables.HANDOUT_ORDER)
        for a, b in stated(r"handout's (\d+) files|(\d+) files of the handout", text):
            seen.add("files")
            if int(a or b) != files:
                bad.append(f"{doc}: {a or b} files of the handout, deliverables.py lists {files}")
        for (word,) in stated(r"handout's (\w+) code files", text):
            if NUMBERS.get(word) != len(deliverables.CODE):
                bad.append(f"{doc}: {word} code files, deliverables.py has {len(deliverables.CODE)}")
        for (n,) in stated(r"(?:vocabulary of|vocabulary has) (\d+) characters", text):
            seen.add("vocabulary")
            if int(n) != vocab:
                bad.append(f"{doc}: a vocabulary of {n} characters, data/wiki.txt gives {vocab}")
        sizes = stated(r"block (\d+), (\d+) layers, (\d+) heads, (\d+) dim", text)
        sizes += [(b, n, h, d) for n, h, d, b in stated(r"(\d+) layers, (\d+) heads, (\d+) dims?, block (\d+)", text)]
        for block, layers, heads, dims in sizes:
            seen.add("sizes")
            said = dict(block_size=block, n_layer=layers, n_head=heads, n_embd=dims)
            bad += [f"{doc}: {k} {v}, run.py's default is {defaults[k]}" for k, v in said.items()
                    if int(v) != defaults[k]]
        for part, n in stated(r"\(([c-g])\) (\d+)\b", text):
            seen.add("points")
            if parts.get(part) != int(n):
                bad.append(f"{doc}: part ({part}) {n} points, src/points.json gives {parts.get(part)}")
        for (n,) in stated(r"time limits add up to (\d+) s\b", text):
            seen.add("limits")
            if int(n) != sum(limit for *_, limit in grader.TESTS):
                bad.append(f"{doc}: time limits add up to {n} s, grader.TESTS to "
                           f"{sum(limit for *_, limit in grader.TESTS)}")
        for table, *marks in stated(r"`(course|embedded)` \([^)]*?vanilla dev (\d+)% / test (\d+)%, "
                                    r"synthesizer dev (\d+)% / test (\d+)%", text):
            keys = ["vanilla_dev", "vanilla_test", "synthesizer_dev", "synthesizer_test"]
            bad += [f"{doc}: {table} {k} {n}%, src/points.json has {points['pass_marks'][table][k]}"
                    for k, n in zip(keys, marks) if abs(int(n) / 100 - points["pass_marks"][table][k]) > 1e-9]
    assert not bad, "\n".join(bad)
    assert seen == {"modes", "files", "vocabulary", "sizes", "points", "limits"}, \
        f"only {sorted(seen)} found: a pattern is wrong"


def defined_in(path, name):
    """Whether the source file `path` defines `name` at its top level (definitions), or `Class.method` in that
    class's own body."""
    top, _, method = name.partition(".")
    node = definitions(path).get(top)
    return node is not None and (not method or any(isinstance(n, ast.FunctionDef) and n.name == method
                                                    for n in getattr(node, "body", [])))


def test_the_handouts_parts_table_names_real_functions_and_tests():
    """docs/learners.md's table of where each part of the handout is answered: each file it names is in
    src/submission/ or src/ and defines each function or class named after it (a method as Class.method), and
    its grader tests (1c-0, or a range 1e-0 to 1e-3) are exactly points.json's, each under its own part."""
    text = read("docs/learners.md")
    table = text.split("### Where each part of the handout is answered\n\n", 1)[1].split("\n\n", 1)[0]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]
    assert [r[0] for r in rows] == [f"1({c})" for c in "abcdefg"]
    graded = []
    for part, _, where, tests in rows:
        for piece in where.split("; "):
            file_name, _, names = piece.partition(": ")
            file_name = re.match(r"`([^`]+)`", file_name).group(1)
            path = next((p for p in (f"src/submission/{file_name}", f"src/{file_name}")
                         if os.path.isfile(os.path.join(ROOT, p))), None)
            assert path is not None, piece
            if path.endswith(".py"):
                cited = re.findall(r"`([\w.]+)`", names)
                assert cited and all(defined_in(path, name) for name in cited), piece
        for letter, lo, other, hi in re.findall(r"1(\w)-(\d+)(?: to 1(\w)-(\d+))?", tests):
            assert letter == part[2] and other in ("", letter), (part, tests)
            graded += [f"1{letter}-{i}" for i in range(int(lo), int(hi or lo) + 1)]
    points = [k.rsplit("-", 1)[0] for k in json.loads(read("src/points.json")) if re.match(r"1\w-\d", k)]
    assert sorted(graded) == sorted(points)

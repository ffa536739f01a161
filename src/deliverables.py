"""The handout's deliverables: check the 18 files it asks for (section 1, "Deliverables") and zip them.

    ./run.sh deliverables       # code in src/submission/, outputs in OUT_DIR, data in DATA_DIR -> submission.zip
                                # (in the repository's top folder; in OUT_DIR, if another than src/submission/)
    python src/deliverables.py --submission-dir DIR --data-dir DIR --zip PATH

Each file gets one line: `ok` with what was checked, `missing` with the run.sh mode that makes it,
`bad` with what is wrong and the fix, `low` for a predictions file in order whose accuracy fails
the grader's test of it, or `stale` for a file older than the params it is made from (both zipped all
the same, and named again at the end). The params must load, with
their keys as saved, into the package's model (src/submission/'s model.py) of their variant at the
course's size (4 layers, 256 dimensions, block 128, the vocabulary of --data-dir's wiki.txt; a
vanilla file does not record its head count), which is what the course's grader builds from the
submitted code; each predictions file must have one line per question of its split, as the grader
counts them (with the split's places at hand, they show their accuracy too, and whether the grader's
test of them passes). The package's code goes in whole: the handout's seven files and the modules
they import (this project's package has more), and a copy of it must import on its own. Only when
no file is missing or bad is the zip written (atomically), every file under its handout path
(src/submission/NAME); the written answers' PDF (`make`) is submitted apart. Exit status: 0 when the
zip is written, 1 when a file is missing or bad (a `low` or `stale` file does not change it), 2 for a usage or
data error (a missing folder or question file).
"""
import argparse
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import gradedpackage  # noqa: E402
from ledger import sha256_of  # noqa: E402
from modelflags import COURSE_SIZE  # noqa: E402
from oneline import OneLineParser  # noqa: E402
from startup import interruptible_start  # noqa: E402

with interruptible_start("deliverables.py"):  # torch loads here
    import grader  # torch and the grader's own modules, never the submission package (a test imports it to grade)
    try:  # this check runs on the package it checks: one that does not import stops it in one line
        import run as driver
        from submission.dataset import CharCorruptionDataset, DataError, parse_tsv, read_text
        from submission.card import CARD_SUFFIX, card_path, card_text, read_card
        from submission.params import PARAMS_FILES, WRAPPER_PREFIXES, load_torch_file
        from submission.utils import ParamsError, atomic_write, check_output_path, load_params, run_cli
    except Exception as e:
        from startup import REQUIREMENTS
        if isinstance(e, ModuleNotFoundError) and e.name in REQUIREMENTS:
            raise  # interruptible_start's one line: this Python lacks a requirement
        print(f"deliverables.py: src/submission/ does not import ({gradedpackage.import_problem(e)}); the check runs "
              f"on that package: fix it, then run the check again", file=sys.stderr)
        sys.exit(1)

CODE = gradedpackage.CODE_FILES  # the handout's seven code files
ZIPPED = ("ok", "low", "stale")  # a file's statuses that let it into the zip (the others: missing or bad)
PARAMS = PARAMS_FILES  # file: (variant, the run.sh mode that writes it, the modes before it)
PREDICTIONS = grader.PREDICTIONS  # file: (split, mode, the modes before it)
HANDOUT_ORDER = CODE + [  # the handout's numbered list, 1 to 18
    "vanilla.model.params", "vanilla.nopretrain.dev.predictions", "vanilla.nopretrain.test.predictions",
    "vanilla.pretrain.params", "vanilla.finetune.params", "vanilla.pretrain.dev.predictions",
    "vanilla.pretrain.test.predictions", "synthesizer.pretrain.params", "synthesizer.finetune.params",
    "synthesizer.pretrain.dev.predictions", "synthesizer.pretrain.test.predictions"]


def made_from(name):
    """The params file that deliverable `name` is made from (predictions: the params evaluated; finetuned
    params: the pretrained ones), None for the code and for params trained from scratch."""
    made = PARAMS.get(name) or PREDICTIONS.get(name)
    return grader.TRAINED_BY[made[2][-1]][0] if made and made[2] else None  # the last mode before it


# each split's question files: the first there sets the questions; a later one that asks the same lends its labels
QUESTIONS = {"dev": ["birth_dev.tsv"], "test": ["birth_test_inputs.tsv", "birth_test.tsv"]}


class Bad(ValueError):
    """A deliverable that is there but not in order: what is wrong, and the fix when it is not to remake it."""

    def __init__(self, what, fix=None):
        super().__init__(what)
        self.fix = fix


def read_questions(data_dir):
    """{split: [(question, place or None, line)]} of the corpus folder; DataError when one is missing.

    The test questions are birth_test_inputs.tsv's (what evaluation reads), with birth_test.tsv's
    places when that file asks the same questions (the embedded corpus has them), else no places."""
    out = {}
    for split, names in QUESTIONS.items():
        paths = [p for p in (os.path.join(data_dir, n) for n in names) if os.path.isfile(p)]
        paths = paths or [os.path.join(data_dir, names[0])]  # read_text names the first if none is there
        rows = parse_tsv(read_text(paths[0], f"{split} questions"), paths[0], require_label=False)
        for path in paths[1:]:  # optional labels: a file that does not read is no labels, not an error
            try:
                labelled = parse_tsv(read_text(path, f"{split} questions"), path, require_label=False)
            except DataError:
                continue
            if [q for q, _, _ in labelled] == [q for q, _, _ in rows]:
                rows = [(q, place, line) for (q, _, line), (_, place, _) in zip(rows, labelled)]
                break
        out[split] = rows
    return out


def check_code(path):
    """'parses' for a code file that Python can compile; Bad saying where it does not."""
    with open(path, "rb") as f:
        source = f.read()
    # looked for first: Python reports a NUL byte (a ValueError, or from 3.11.4 a SyntaxError) with no line
    wrong = gradedpackage.not_python_source(source)
    if wrong:
        raise Bad(*wrong)
    try:
        compile(source, path, "exec")
    except SyntaxError as e:
        raise Bad(f"line {e.lineno}: {e.msg}", "fix it there") from None
    return "parses"


def check_params(path, variant, vocab, data_dir, function=None):
    """What the params are, once they have loaded, keys as saved, into the course's model of `variant`;
    `function` (pretrain or finetune): what their card, when they have one, must say made them."""
    said = (read_card(path) or {}).get("function")
    if function and said in ("pretrain", "finetune") and said != function:  # a course's file has no card
        done = {"pretrain": "pretrained", "finetune": "finetuned"}
        raise Bad(f"their card says they were {done[said]}, not {done[function]} (a copy of the other params, or "
                  f"run.py run by hand with another --function)")
    args = argparse.Namespace(variant=variant, **{k: v for k, v in COURSE_SIZE.items() if k != "block_size"})
    model = driver.build_model(args, vocab)
    try:
        load_params(model, path, itos=vocab.itos)
    except ParamsError as e:  # its fix names run.py's flags; deliverables words its own
        what = e.problem or str(e)
        course = f"--n_layer {COURSE_SIZE['n_layer']} --n_embd {COURSE_SIZE['n_embd']} " \
                 f"--block_size {COURSE_SIZE['block_size']}"
        if e.looks_like and e.looks_like not in (course, f"{course} --n_head {COURSE_SIZE['n_head']}"):
            # trained with other size flags than the course's
            raise Bad(f"not the course's model size: the file looks like {e.looks_like}") from None
        if "vocabulary" in what:  # trained on another corpus than the one checked against
            raise Bad(what, f"if they were trained on another corpus, point DATA_DIR at it (now {data_dir})") from None
        raise Bad(what) from None
    keys = load_torch_file(path).keys()
    wrapped = sorted({w for k in keys for w in WRAPPER_PREFIXES if k.startswith(w)})
    if wrapped:  # load_params strips these, a grader's load_state_dict would not
        raise Bad(f"its keys start with {wrapped[0]!r} (a wrapped model's state_dict)",
                  "save the unwrapped model's state_dict, as run.py does, or remake it") from None
    return f"{variant}, the course's size ({sum(p.numel() for p in model.parameters()):,} parameters)"


def check_predictions(path, questions):
    """The line count against the split's questions (and the accuracy when they are labelled)."""
    try:
        lines = grader.prediction_lines(path, len(questions))
    except grader.Failure as e:  # not UTF-8 text
        raise Bad(str(e)) from None
    if len(lines) != len(questions):
        raise Bad(f"{len(lines)} line{'' if len(lines) == 1 else 's'} for {len(questions)} questions"
                  f"{grader.blank_lines(lines, len(questions))}: "
                  f"one prediction a line, in order")
    note = f"{len(lines)} predictions"
    if lines and all(place is not None for _, place, _ in questions):
        right = grader.count_right(lines, [place for _, place, _ in questions])  # as the grader counts
        note += f", accuracy {right / len(lines):.1%}"
    return note


def package_files(code_dir):
    """The package's modules: the handout's seven, then the others it holds (imported by them): files whose name
    a module can have, so not an editor's lock (Emacs' `.#model.py`, a link to nowhere) nor a folder."""
    others = sorted(n for n in os.listdir(code_dir) if n.endswith(".py") and n not in CODE and n[:-3].isidentifier()
                    and os.path.isfile(os.path.join(code_dir, n)))
    return CODE + others


def check_import(code_dir, names):
    """None when a copy of just these files imports as the package `submission`, else why it does not."""
    with tempfile.TemporaryDirectory() as tmp:
        os.mkdir(os.path.join(tmp, "submission"))
        for name in names:
            shutil.copy(os.path.join(code_dir, name), os.path.join(tmp, "submission", name))
        p = subprocess.run([sys.executable, "-c", "import submission"], cwd=tmp, capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=tmp), timeout=300)
    if p.returncode == 0:
        return None
    return ([line for line in p.stderr.splitlines() if line.strip()] or ["no message"])[-1]


def check(code_dir, submission_dir, data_dir):
    """[(file, status, note)] for the 18 deliverables in handout order; status is ok, low, stale, missing
    or bad."""
    wiki = os.path.join(data_dir, "wiki.txt")
    vocab = CharCorruptionDataset(read_text(wiki, "pretraining corpus"), COURSE_SIZE["block_size"], wiki)
    questions = read_questions(data_dir)
    demo = grader.is_demo_folder(submission_dir)
    # a demo's folder: a mode run into it (OUT_DIR=runs/demo) would train the course's model on data/ there
    # and fail on the demo's smaller params; the deliverables are the modes' files in their own folder
    modes_instead = ("a demo's file: the deliverables are the run.sh modes' files (./run.sh all makes them in "
                     "src/submission/)")
    rows = []
    for name in HANDOUT_ORDER:
        path = os.path.join(code_dir if name in CODE else submission_dir, name)
        _, mode, before = PARAMS.get(name) or PREDICTIONS.get(name) or (None, None, [])
        if not os.path.isfile(path):
            fix = (modes_instead if mode and demo else
                   f"make it with {grader.run_sh_command(mode, data_dir, submission_dir, before)}" if mode
                   else "restore it from git")
            split = PREDICTIONS.get(name, (None,))[0]
            if split is not None and not questions[split]:  # the demo's world: no test split
                fix = (f"nothing to predict in {data_dir}: its {QUESTIONS[split][0]} holds no questions (a demo's "
                       f"world has no test split); the deliverables come from a corpus with test questions (data/ "
                       f"or the course's)")
            if os.path.isdir(path):  # the mode that makes it refuses a folder's path: say so first
                rows.append((name, "bad", f"a folder, not a file; remove or rename it, then {fix}"))
            else:
                rows.append((name, "missing", fix))
            continue
        try:
            if name in PARAMS:
                function = "pretrain" if name.endswith(".pretrain.params") else "finetune"
                note = check_params(path, PARAMS[name][0], vocab, data_dir, function)
                source = made_from(name)  # finetuned params: byte for byte the pretrained ones were never finetuned
                if source and sha256_of(path) == sha256_of(os.path.join(submission_dir, source)):
                    raise Bad(f"the same bytes as {source}: the pretrained params, not finetuned (a copy)")
            elif name in PREDICTIONS:
                note = check_predictions(path, questions[PREDICTIONS[name][0]])
            else:
                note = check_code(path)
        except (Bad, OSError) as e:
            what = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            fix = getattr(e, "fix", None)
            if isinstance(e, PermissionError):  # not "remake it", hours of training for a chmod (and the run
                # remaking it refuses a file it cannot read)
                fix = f"make it readable (chmod u+r {shlex.quote(gradedpackage.typed_path(path))})"
            fix = fix or (modes_instead if mode and demo else
                          f"remake it with {grader.run_sh_command(mode, data_dir, submission_dir)}"
                          if mode else "restore it from git")
            rows.append((name, "bad", f"{what}; {fix}"))
            continue
        rows.append((name, "ok", note))
    return with_staleness(with_grader_verdicts(rows, data_dir, submission_dir), submission_dir, data_dir)


def stale_source(name, submission_dir):
    """The params file deliverable `name` is made from when `name` is older than it (those params were
    made again after it, so it is not theirs; or a copy did not keep the files' times), else None."""
    source = made_from(name)
    if source is None:
        return None
    try:
        older = os.path.getmtime(os.path.join(submission_dir, name)) < os.path.getmtime(
            os.path.join(submission_dir, source))
    except OSError:  # either is missing: its own row says so
        return None
    return source if older else None


def with_staleness(rows, submission_dir, data_dir):
    """`rows` with each file in order but older than the params it is made from marked `stale` (a `low`
    one stays `low`), its note naming the mode that remakes it."""
    out = []
    for name, status, note in rows:
        source = stale_source(name, submission_dir) if status in ("ok", "low") else None
        if source:
            mode = PREDICTIONS[name][1] if name in PREDICTIONS else PARAMS[name][1]
            status = "stale" if status == "ok" else status
            note += (f"; older than {source}, which it is made from: if that was made again, remake this "
                     f"with {grader.run_sh_command(mode, data_dir, submission_dir)}")
        out.append((name, status, note))
    return out


def with_grader_verdicts(rows, data_dir, submission_dir):
    """`rows` with, beside each labelled predictions file's accuracy, whether the grader's test of it
    passes (its pass mark for this data; at least one right without pretraining): a file in order can
    still fail there, and it is better known before submitting. A file that fails is `low`."""
    try:
        graded = grader.make_grader(data_dir, submission_dir)
    except grader.graderlib.PointsError:  # src/points.json unusable: the grader itself says so when run
        return rows
    out = []
    for name, status, note in rows:
        test_id = grader.ACCURACY_TESTS.get(name)
        if status == "ok" and test_id and "accuracy" in note:
            result = graded.run_test(graded.select([test_id])[0])
            if result.passed:
                note += f"; {test_id} passes"
            else:  # the model falls short: its training runs, then both splits' predictions
                status = "low"
                note += f"; {test_id} fails: {result.reason}"
                before = PREDICTIONS[name][2]
                modes = before + [mode for _, mode, after in PREDICTIONS.values() if after == before]
                if not grader.is_demo_folder(submission_dir):  # (a demo's folder is no mode's place)
                    note += "; to retrain and remake it: " + " && ".join(
                        grader.run_sh_command(mode, data_dir, submission_dir) for mode in modes)
        out.append((name, status, note))
    return out


def card_without_paths(data):
    """A card's bytes as zipped: its pretraining corpus's folders on the student's machine (a home folder's name)
    left out, its sha256 and file name kept (card.pretrain_corpus reads an entry with both); bytes that are no
    JSON object go as they are."""
    try:
        card = json.loads(data.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError is one too
        return data
    if not isinstance(card, dict) or not isinstance(card.get("pretrain_corpus"), dict):
        return data
    corpus = {k: v for k, v in card["pretrain_corpus"].items() if k != "realpath"}
    if isinstance(corpus.get("path"), str):
        corpus["path"] = os.path.basename(corpus["path"].replace("\\", "/"))  # a Windows path's name too
    card["pretrain_corpus"] = corpus
    return card_text(card).encode("utf-8")


def write_zip(out, files, checked=None):
    """[(path, name in the zip)] as one zip, written atomically. `checked` ({path: sha256} taken before the
    check): a file whose bytes are no longer those is a DataError and no zip is written (a run in another
    terminal replaced it while it was checked: the zip would hold bytes that were never checked)."""
    def write(f):
        # strict_timestamps off: a file dated before 1980 (a zip's epoch) is stored as of 1980
        with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_DEFLATED, strict_timestamps=False) as z:
            for path, arcname in files:
                info = zipfile.ZipInfo.from_file(path, arcname, strict_timestamps=False)
                info.compress_type = zipfile.ZIP_DEFLATED
                with open(path, "rb") as source:
                    data = source.read()
                if checked is not None and hashlib.sha256(data).hexdigest() != checked.get(path):
                    raise DataError(f"{path}: changed while the deliverables were checked (a run writing it?), "
                                    f"so no zip is written; run the check again once nothing writes there")
                z.writestr(info, card_without_paths(data) if arcname.endswith(CARD_SUFFIX) else data)
    atomic_write(out, write)


def zip_members(path):
    """The member names of the zip at `path`, or None where it is not a zip whose list can be read. This command
    writes its zip atomically, so never leaves one cut short: a file that is not a readable zip is someone else's."""
    try:
        with zipfile.ZipFile(path) as z:
            return z.namelist()
    except (OSError, EOFError, ValueError, zipfile.BadZipFile):  # ValueError: a name flagged UTF-8 that is not
        return None


def foreign_member(names):
    """The first of a zip's member `names` that this command never writes (all of its files go under
    src/submission/; the folder entries `zip -r` adds, src/ and src/submission/, are not counted), or None."""
    return next((n for n in names if not (n.startswith("src/submission/") or n == "src/")), None)


def default_zip(submission_dir):
    """Where the zip goes without --zip: the repository's submission.zip (the course's place) for the outputs in
    src/submission/; for another folder's (OUT_DIR, such as a trial's runs/try), submission.zip in that folder,
    so that a trial's zip never replaces the one of the outputs to submit."""
    if os.path.realpath(submission_dir) == os.path.realpath(os.path.join(HERE, "submission")):
        return os.path.join(ROOT, "submission.zip")
    return os.path.join(submission_dir, "submission.zip")


def where_and_earlier_zip(submission_dir, zip_path, outputs_wrong):
    """The end of a failed check's last line: where an output is missing or bad (`outputs_wrong`), the folder
    the outputs were read from, and how to read another (the outputs of `OUT_DIR=runs/try ./run.sh all` are
    not in src/submission/, which plain `./run.sh deliverables` reads); and, where a zip is at `zip_path`
    already, that it is an earlier check's, not this one's (it is kept: a student must not upload it as
    this check's)."""
    text = ""
    if outputs_wrong:
        folder = gradedpackage.typed_path(submission_dir)
        text = (f" (outputs read from {folder}{os.sep}; OUT_DIR=FOLDER ./run.sh deliverables, or --submission-dir, "
                f"reads another)")
    if os.path.isfile(zip_path):
        made = time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(zip_path)))
        text += f"; {gradedpackage.typed_path(zip_path)} is an earlier check's, of {made}, not this one's"
    return text


def main(argv=None):
    p = OneLineParser(prog="deliverables.py", description="Check the handout's 18 deliverables and zip them.")
    p.add_argument("--submission-dir", default=os.path.join(HERE, "submission"),
                   help="the folder of the params and predictions (run.sh: OUT_DIR; default: src/submission/)")
    p.add_argument("--code-dir", default=os.path.join(HERE, "submission"),
                   help="the package's code (default: src/submission/)")
    p.add_argument("--data-dir", default=os.path.join(ROOT, "data"),
                   help="the corpus they were made with: wiki.txt, birth_dev.tsv, birth_test_inputs.tsv "
                        "(default: data/)")
    p.add_argument("--zip", default=None,
                   help="the zip to write (default: submission.zip in the repository's top folder, from any folder; "
                        "for outputs in another --submission-dir, submission.zip in that folder)")
    args = p.parse_args(argv)
    if args.zip is None:
        args.zip = default_zip(args.submission_dir)
    for flag, folder in (("--submission-dir, run.sh's OUT_DIR", args.submission_dir), ("--code-dir", args.code_dir),
                         ("--data-dir, run.sh's DATA_DIR", args.data_dir)):
        if os.path.exists(folder) and not os.path.isdir(folder):  # `--data-dir data/wiki.txt`
            raise DataError(f"{folder}: is a file, not a folder (the {flag}); give the folder that holds it")
        if not os.path.isdir(folder):
            raise DataError(f"{folder}: no such folder (the {flag}); check the path")
    names = package_files(args.code_dir)
    files = ([(os.path.join(args.code_dir, n), n) for n in names]
             + [(os.path.join(args.submission_dir, n), n) for n in HANDOUT_ORDER if n not in CODE])
    # the params' cards (card.py), where they are these params' own: the grader's notes on params trained fewer
    # epochs than the course's, or with other heads, read them, on Gradescope too
    files += [(card_path(path), n + CARD_SUFFIX) for path, n in list(files)
              if n in PARAMS and read_card(path) is not None]
    check_output_path(args.zip, "zip", inputs=[path for path, _ in files])
    target = os.path.realpath(args.zip)  # what is written: a link's target (files.py replaces that)
    if os.path.exists(target) and not os.path.isfile(target):  # /dev/full, a FIFO: reading it as a zip never ends
        raise DataError(f"{args.zip}: is not a regular file; give --zip the path of a file")
    members = zip_members(target) if os.path.isfile(target) and os.path.getsize(target) else []
    if members is None:  # the written answers, a corpus, notes, a damaged download (named .zip or not): not ours
        raise DataError(f"{args.zip}: exists and is not a zip file that can be read, so it is not replaced (a typo "
                        f"for another --zip path?); give --zip a new path, or an old zip of this command to replace")
    other = foreign_member(members)
    if other is not None:
        raise DataError(f"{args.zip}: a zip of other files ({other} in it), not one this command wrote, so it is not "
                        f"replaced; give --zip a new path, or move that zip away")
    if grader.is_demo_folder(args.submission_dir):
        print(f"note: {args.submission_dir} is a folder the demo wrote ({grader.DEMO_RECORD}): on a CPU its models "
              f"are smaller than the course's and its world has no test questions; the deliverables are the run.sh "
              f"modes' files (OUT_DIR, default src/submission/)")
    marks_note = grader.choose_marks(args.data_dir)[1]  # the grader's rule: a world made with other arguments
    if marks_note:
        print(marks_note)
    checked = {path: sha256_of(path) for path, _ in files}  # the bytes checked are the bytes zipped
    rows = check(args.code_dir, args.submission_dir, args.data_dir)
    width = max(len(n) for n in HANDOUT_ORDER)
    for i, (name, status, note) in enumerate(rows, start=1):
        print(f"{i:2d}. {status:7s} {name:{width}s}  {note}")
    problems = sum(status not in ZIPPED for _, status, _ in rows)
    low = [name for name, status, _ in rows if status == "low"]
    stale = [name for name, status, _ in rows if status in ("stale", "low") and stale_source(name, args.submission_dir)]
    if not problems:
        why = check_import(args.code_dir, names)
        extra = ", ".join(n for n in names if n not in CODE)
        print(f"    {'ok' if why is None else 'bad':7s} {'the package':{width}s}  "
              + (f"its {len(names)} modules{f' ({extra} too)' if extra else ''} import on their own"
                 if why is None else f"a copy of its {len(names)} modules does not import: {why}"))
        problems += why is not None
    if problems:
        outputs_wrong = any(status not in ZIPPED for name, status, _ in rows if name not in CODE)
        print(f"{problems} of the deliverables {'are' if problems > 1 else 'is'} missing or bad; no zip written"
              f"{where_and_earlier_zip(args.submission_dir, args.zip, outputs_wrong)}", file=sys.stderr)
        return 1
    earlier = (time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(target)))
               if os.path.isfile(target) else None)
    write_zip(args.zip, [(path, f"src/submission/{n}") for path, n in files], checked)
    cards = sum(n.endswith(CARD_SUFFIX) for _, n in files)
    print(f"wrote {args.zip}" + (f" (replacing its zip of {earlier})" if earlier else "") + ": the "
          f"{len(HANDOUT_ORDER)} deliverables and the package's other modules"
          + (f", the params' {cards} card(s)" if cards else "") + " "
          f"({os.path.getsize(args.zip) / 2 ** 20:.1f} MiB) from the outputs in "
          f"{gradedpackage.typed_path(args.submission_dir)}; the written answers' PDF (make) is submitted apart")
    if low:
        print(f"{len(low)} of the predictions files {'are' if len(low) > 1 else 'is'} below the grader's pass mark "
              f"(low: {', '.join(low)}); they are in the zip, and their tests would fail (their lines say what "
              f"to rerun)", file=sys.stderr)
    if stale:
        print(f"{len(stale)} of the files {'are' if len(stale) > 1 else 'is'} older than the params they are made "
              f"from (stale: {', '.join(stale)}); they are in the zip: if those params were made again, remake them "
              f"as their lines say", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main, keep_working=True))

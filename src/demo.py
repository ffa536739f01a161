"""The whole assignment in one command (`./run.sh demo`): the always-London baseline, vanilla
without pretraining, vanilla pretrained then finetuned, synthesizer pretrained then finetuned,
and a table of dev accuracies, printed and written to results.md in --out (default runs/demo).

On CUDA it runs the course's full configuration on the corpus in data/. On a CPU the full task
shows nothing within minutes, so by default it runs the small version: a smaller world made by
src/make_world.py (100 people, each life told three times, names in full, birthplaces equally
likely) and a smaller model, sized to finish in about 4 minutes on 2 cores. Every step goes through
src/run.py, the same code path as run.sh's modes.

    python src/demo.py                      # CPU: the small version; CUDA: the course's settings
    python src/demo.py --size full          # the course's settings anywhere (hours on a CPU)
    python src/demo.py --data-dir COURSE_DATA --people 600   # a subset of another corpus
    python src/demo.py --size full --data-dir COURSE_DATA    # all of it, the course's settings
    python src/demo.py --size calibration --data-dir data --variants nopretrain,vanilla   # data/README.md

The table gives each pretrained model's memorised share too (src/memorised.py): how many birthplaces
it reproduces from the biographies before finetuning, which bounds what finetuning can retrieve; and
how many of the memorised dev birthplaces the finetuned model then retrieves for the question.
"""
import contextlib
import hashlib
import json
import os
import shlex
import sys
import time
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
SPAWN_SAFE = True  # DataLoader workers started by "spawn" import this module again: it trains under __main__ alone
sys.path.insert(0, HERE)

import ledger  # noqa: E402
from modelflags import size_flags, size_from_flags  # noqa: E402
from oneline import OneLineParser, nearest  # noqa: E402
from startup import as_typed, interruptible_start  # noqa: E402

with interruptible_start("demo.py"):  # torch loads here
    import make_world
    import plots
    import run as driver
    from london_baseline import london_accuracy
    from submission.dataset import DataError, parse_tsv, read_text
    from submission.files import WRITTEN_HOOKS
    from submission.locks import held_lock
    from submission.threads import denormals_flushed
    from submission.utils import atomic_write_text, check_output_path, get_device, run_cli, same_place


@dataclass
class DemoSize:
    """One demo setting: the world, the model and the training budget."""
    people: int
    train: int
    dev: int
    world_args: dict = field(default_factory=dict)
    model_args: list = field(default_factory=list)
    pretrain_args: list = field(default_factory=list)
    finetune_args: list = field(default_factory=list)
    nopretrain_args: list = field(default_factory=list)


SIZES = {
    # the course's settings: every model and trainer flag at its default
    "full": DemoSize(people=2937, train=2000, dev=500),
    # the setting of data/README.md's calibration: full biographies, 200 people (100 train, 100 dev)
    "calibration": DemoSize(people=200, train=100, dev=100,
                            model_args=["--n_layer", "2", "--n_head", "4", "--n_embd", "128"],
                            pretrain_args=["--max_epochs", "250", "--batch_size", "16", "--learning_rate", "2e-3"],
                            finetune_args=["--max_epochs", "30", "--batch_size", "16"],
                            nopretrain_args=["--max_epochs", "75", "--batch_size", "16"]),
    # the small version for a 2-core CPU, chosen by experiment (data/README.md, "The CPU demo's
    # world"): 100 people, each life told three times in one sentence (told once, at the same
    # compute: stored 46% against 73%), always naming the person in full (the surname alone halved
    # retrieval on even birthplaces), the 19 birthplaces equally likely so that always-London gets
    # the course's 5% (the Zipf head gives London 15% of 100 people); a 2-layer model without
    # dropout (dropout 0.1 stored 2.5x less)
    "cpu": DemoSize(people=100, train=60, dev=40,
                    world_args=dict(max_sentences=1, tellings=3, full_names=True, even_places=True),
                    model_args=["--n_layer", "2", "--n_head", "4", "--n_embd", "128", "--dropout", "0"],
                    pretrain_args=["--max_epochs", "150", "--batch_size", "16", "--learning_rate", "2e-3"],
                    finetune_args=["--max_epochs", "10", "--batch_size", "32"],
                    nopretrain_args=["--max_epochs", "75", "--batch_size", "32"]),
}


def subset_corpus(src_dir, out_dir, train, dev):
    """Copy the first `train` train people and first `dev` dev people of a course-layout corpus
    (wiki line i is train row i, then dev, then test) with their wiki lines only. A wiki.txt of k lines
    a person (make_world.py --tellings k: line i + j * people is person i's telling j + 1) keeps each
    kept person's k lines."""
    wiki = read_text(os.path.join(src_dir, "wiki.txt"), "pretraining corpus").split("\n")
    tr_path, dv_path = os.path.join(src_dir, "birth_places_train.tsv"), os.path.join(src_dir, "birth_dev.tsv")
    tr = parse_tsv(read_text(tr_path, "finetuning corpus"), tr_path)
    dv = parse_tsv(read_text(dv_path, "dev corpus"), dv_path)
    if train > len(tr) or dev > len(dv):
        raise DataError(f"{src_dir} has {len(tr)} train and {len(dv)} dev rows; asked for {train} and {dev} "
                        f"(lower --people or --train)")
    test_path = os.path.join(src_dir, "birth_test_inputs.tsv")
    tests = (sum(1 for line in read_text(test_path, "test corpus").splitlines() if line.strip())
             if os.path.isfile(test_path) else 0)  # its questions, blank lines not counted
    people = len(tr) + len(dv) + tests
    written = len(wiki) - (wiki[-1] == "")  # the lines, less the empty string after a final newline
    tellings = written // people if people and written > people and written % people == 0 else 1
    kept = [i + j * people for j in range(tellings)
            for i in list(range(train)) + list(range(len(tr), len(tr) + dev))]
    lines = [wiki[i] for i in kept if i < written]
    # The vocabulary comes from wiki.txt alone: a question character (say '?') that none of the kept
    # lines has would stop finetuning. Add, for each such character, the first other line that has it.
    kept = set(kept)
    need = set("".join(q + p for q, p, _ in tr[:train] + dv[:dev]))
    for ch in sorted(need):
        if any(ch in line for line in lines):
            continue
        extra = next((i for i, line in enumerate(wiki) if i not in kept and ch in line), None)
        if extra is None:
            raise DataError(f"{os.path.join(src_dir, 'wiki.txt')}: no line has the question character {ch!r}, so "
                            f"the vocabulary lacks it; add a line with it")
        lines.append(wiki[extra])
        kept.add(extra)
    os.makedirs(out_dir, exist_ok=True)
    atomic_write_text(os.path.join(out_dir, "wiki.txt"), "\n".join(lines) + "\n")
    atomic_write_text(os.path.join(out_dir, "birth_places_train.tsv"), "".join(f"{q}\t{p}\n" for q, p, _ in tr[:train]))
    atomic_write_text(os.path.join(out_dir, "birth_dev.tsv"), "".join(f"{q}\t{p}\n" for q, p, _ in dv[:dev]))


def make_corpus(out_dir, size, seed):
    """Write the size's generated world into out_dir, --out's data/: pick_corpus (refuse_foreign) has found
    what is there the demo's (its record holds them: an earlier run's world, or subset_corpus's copy, which
    make_world's own record does not know), so it is replaced without make_world's check;
    refuse_an_input_folder keeps it off the input corpora."""
    world = make_world.build_world(people=size.people, train=size.train, dev=size.dev, seed=seed, **size.world_args)
    make_world.write_world(world, out_dir, replace=True)


def refuse_an_input_folder(data, data_dir):
    """DataError if the corpus folder the demo is about to write is --data-dir, the repo's data/ or src/data/
    (where the course keeps its data: `--out src` would write over it)."""
    for keep in filter(None, (data_dir, os.path.join(HERE, "..", "data"), os.path.join(HERE, "data"))):
        if os.path.realpath(data) == os.path.realpath(keep):
            raise DataError(f"{data}: the demo writes its corpus there, over {keep}'s own files; give another "
                            f"--out (the default is runs/demo)")


def pick_corpus(args, size_name, out):
    """(data folder, description) of the corpus a demo runs on.

    --data-dir with --people: a subset of that corpus, written under `out`; --data-dir alone at the
    full size: that corpus as it is (the course's full setting); no --data-dir at the full size: the
    embedded corpus in data/; otherwise a world generated at the size's scale under `out`.
    """
    size = SIZES[size_name]
    data = os.path.join(out, "data")
    if args.data_dir and (args.people or size_name != "full"):
        people = args.people or size.people
        train = args.train or round(people * size.train / size.people)
        refuse_an_input_folder(data, args.data_dir)
        refuse_foreign(out, CORPUS)
        with recorded(out, CORPUS):
            subset_corpus(args.data_dir, data, train, people - train)
        return data, f"{args.data_dir} (first {train} train + {people - train} dev people)"
    if args.data_dir:
        for name in ("wiki.txt", "birth_places_train.tsv", "birth_dev.tsv"):
            if not os.path.isfile(os.path.join(args.data_dir, name)):
                raise DataError(f"{os.path.join(args.data_dir, name)} not found; --data-dir needs the "
                                f"course's wiki.txt, birth_places_train.tsv and birth_dev.tsv")
        return args.data_dir, f"{args.data_dir} (all of it)"
    if size_name == "full" and os.path.exists(os.path.join(HERE, "..", "data", "wiki.txt")):
        return os.path.join(HERE, "..", "data"), "data/ (the embedded corpus)"
    refuse_an_input_folder(data, args.data_dir)
    refuse_foreign(out, CORPUS)
    with recorded(out, CORPUS):
        make_corpus(data, size, args.seed)
    return data, f"a generated world of {size.people} people ({size.train} train, {size.dev} dev)"


def stored(params, variant, data, run_args):
    """What pretraining stored (src/memorised.py): the share (percent) of train and dev birthplaces
    the params reproduce from the biographies, and the dev rows among them."""
    import memorised
    args, _ = driver.build_parser().parse_known_args(["--variant", variant] + list(run_args))
    rows = memorised.rows_for_params(params, data, args)
    hits, n = memorised.counts(rows)["all"]
    print(f"memorised by {os.path.basename(params)}: {hits} of {n} birthplaces", flush=True)
    return (hits / n * 100 if n else 0.0), rows["dev"][0]


def retrieved(predictions, data, dev_rows):
    """How many of `dev_rows` (dev people whose birthplace pretraining stored) the predictions get right."""
    path = os.path.join(data, "birth_dev.tsv")
    places = [p for _, p, _ in parse_tsv(read_text(path), path)]
    said = read_text(predictions, "predictions").split("\n")
    return sum(1 for i in dev_rows if i < len(said) and same_place(said[i], places[i]))


def london(data):
    """(right, total) of always answering London on the dev questions (london_baseline.py's measure)."""
    total, right = london_accuracy(os.path.join(data, "birth_dev.tsv"))
    return int(right), int(total)


DEFAULT_OUT = os.path.join(HERE, "..", "runs", "demo")
RECORD = ledger.DEMO_RECORD  # in --out: the sha256 of the files the demo wrote there
OUTPUTS = ("vanilla.model.params", "vanilla.pretrain.params", "vanilla.finetune.params", "synthesizer.pretrain.params",
           "synthesizer.finetune.params", "vanilla.nopretrain.dev.predictions", "vanilla.pretrain.dev.predictions",
           "synthesizer.pretrain.dev.predictions")  # what its runs write, the course's names
STATES = tuple(n + ".state" for n in OUTPUTS if n.endswith(".params"))  # an interrupted training step's (resume.py)
CORPUS = tuple("data/" + n for n in make_world.FILES)  # the world it makes, or subset_corpus's copy
TABLE = "results.md"  # the table the demo prints, written there too
KEPT = OUTPUTS + STATES + CORPUS + plots.DEMO_PICTURES + (TABLE,)  # what it replaces only while its record holds them
SETS = ("--function", "--variant", "--pretrain_corpus_path", "--finetune_corpus_path", "--eval_corpus_path",
        "--reading_params_path", "--writing_params_path", "--outputs_path", "--log_path")  # per step, in step()


OLD_MARKER = ".made-by-demo"  # the one-line marker of the demo before RECORD: its folder is the demo's
ABOUT = ("written by src/demo.py: the params, predictions, training states, corpus and pictures below, which its "
         "runs replace only while they keep these sha256")
EARLIER_ABOUT = ("written by src/demo.py: the params, predictions and training states below, which its runs replace "
                 "only while they keep these sha256")  # a record of the demo before it kept its corpus and pictures


def _signature(out, name):
    """What changes when a file is replaced (os.replace gives it a new inode) or written; None: no file."""
    try:
        st = os.stat(os.path.join(out, name))
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


@contextlib.contextmanager
def recorded(out, names):
    """Record in `out`'s RECORD those of `names` the block writes, also when it ends in Ctrl-C or an error
    after a write: what the demo wrote is the demo's to replace."""
    before = {name: _signature(out, name) for name in names}
    try:
        yield
    finally:
        written = [name for name in names if _signature(out, name) not in (None, before[name])]
        if written:
            _record(out, written)


def _record(out, names):
    """Add `names` (files in `out`) to its RECORD as they are now; a DataError when it cannot be written."""
    try:
        ledger.add_to_record(out, RECORD, names, ABOUT)
    except OSError as e:
        raise DataError(f"{os.path.join(out, RECORD)}: cannot be written ({e.strerror or e}); give --out a folder "
                        f"you can write to") from None


DONE = ".demo-steps-done.json"  # in --out: each finished training step's key (step_key) and its params' sha256,
# and each interrupted step's key and its state's sha256 (under the state's name)
READS = ("--pretrain_corpus_path", "--finetune_corpus_path", "--reading_params_path")  # a step's input files


def step_key(argv):
    """What a training step computes from: its run.py flags, less --resume and --restart (how it starts, not
    what it makes), and the sha256 of each file it reads (a pretraining resumed or redone is other params
    for the finetuning after it)."""
    flags = [f for f in argv if f not in ("--resume", "--restart")]
    reads = {flag: ledger.sha256_of(argv[argv.index(flag) + 1]) for flag in READS if flag in argv}
    return hashlib.sha256(json.dumps([flags, reads]).encode("utf-8")).hexdigest()


def _done_steps(out):
    try:
        with open(os.path.join(out, DONE), encoding="utf-8") as f:
            done = json.load(f)
    except (OSError, ValueError):  # none yet, or not one the demo wrote whole: every step runs
        return {}
    return done if isinstance(done, dict) else {}


def _same(out, name, key, field):
    """Whether DONE's entry for `name` has `key` and, as `field`, the sha256 of `out`'s file `name` as it is now."""
    entry = _done_steps(out).get(name)
    return (isinstance(entry, dict) and entry.get("key") == key and entry.get(field) is not None
            and entry.get(field) == ledger.sha256_of(os.path.join(out, name)))


def finished_before(out, name, key):
    """Whether the training step writing `name` in `out` finished before with the same key, and its params
    are still the ones it wrote."""
    return _same(out, name, key, "params")


def saved_with(out, state, key):
    """Whether the training state `state` in `out` was saved by the step of the same key (run.py's resume
    checks the model's shape, the training settings, the seed, the dropout, the params a finetuning starts
    from and the data, not the demo's other flags, such as length groups, packing or compiling: the key
    covers those, so a state of other flags goes on as another run)."""
    return _same(out, state, key, "state")


def _note(out, name, key, field, drop=None, seconds=None):
    """Record in DONE that the step of `key` wrote `name` (its sha256 as `field`, and how long it took when
    given), without `drop`'s entry."""
    done = _done_steps(out)
    done[name] = {"key": key, field: ledger.sha256_of(os.path.join(out, name))}
    if seconds is not None:
        done[name]["seconds"] = round(seconds, 1)
    done.pop(drop, None)
    atomic_write_text(os.path.join(out, DONE), json.dumps(done, indent=1) + "\n")


def mark_finished(out, name, key, seconds=None):
    """Record that the step of `key` finished `name`, in `seconds` (the table's minutes when --resume keeps it)."""
    _note(out, name, key, "params", drop=name + ".state", seconds=seconds)  # the state goes when training ends


MOST_SECONDS = 1e8  # about three years: more than any training step of the demo took, as DONE records it


def step_seconds(out, name):
    """How long the finished step of `name` took, as DONE recorded it; 0.0 when it did not."""
    entry = _done_steps(out).get(name)
    seconds = entry.get("seconds") if isinstance(entry, dict) else None
    # a hand edit's integer beyond a float's range was an OverflowError at the table, 1e308 a 300-digit minutes cell
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds < MOST_SECONDS:
        return 0.0  # recorded before the demo kept it, or not by the demo
    return float(seconds)


def mark_state(out, state, key, seconds=None):
    """Record that the step of `key` saved `state` (interrupted, or stopped by an error after a save), after
    `seconds` of training when given; one line on stderr when it cannot be: --resume then starts that step over."""
    try:
        _note(out, state, key, "state", seconds=seconds)
    except (OSError, ValueError) as e:
        print(f"note: {os.path.join(out, DONE)} not written ({e}): --resume will start {state}'s step over",
              file=sys.stderr, flush=True)


def check_out_folder(out):
    """DataError when `out` is src/submission (the course's runs go there, empty or not), or holds a file
    of the names the demo writes (params, predictions, the states of interrupted training steps, the
    pictures) that its RECORD does not hold as it is now: params a run.sh mode wrote there after the demo, an
    interrupted course run's state, a picture of the user's; pick_corpus does the same for the corpus in
    data/, when it is about to write one. Its runs would replace them. A folder an earlier version of the
    demo worked in (runs/demo without a record, or one with its old marker) is its own: what is there is
    recorded first; so are the corpus and pictures of a record that names the earlier version (its
    EARLIER_ABOUT), which recorded neither."""
    if os.path.realpath(out) == os.path.realpath(os.path.join(HERE, "submission")):
        raise DataError(f"{out}: the folder of the course's own runs, which the grader and deliverables read (the "
                        f"demo's small models would pass for them); give --out another folder (default runs/demo)")
    record = os.path.join(out, RECORD)
    if os.path.isdir(record):
        raise DataError(f"{record}: a folder where the demo keeps its record of what it wrote; remove it")
    if os.path.isdir(os.path.join(out, DONE)):  # written after the first training step: refused before it
        raise DataError(f"{os.path.join(out, DONE)}: a folder where the demo keeps its record of the training "
                        f"steps it finished; remove it")
    for name, what in ((RECORD, "the files it wrote"), (DONE, "the training steps it finished")):
        try:  # unread, the record was taken for none: its files "not written by the demo", every step retrained
            with open(os.path.join(out, name), "rb"):
                pass
        except FileNotFoundError:
            pass
        except OSError as e:
            raise DataError(f"{os.path.join(out, name)}: cannot be read ({e.strerror or e}), and it is the demo's "
                            f"record of {what}; make it readable (chmod u+r "
                            f"{shlex.quote(os.path.join(out, name))})") from None
    default = os.path.realpath(out) == os.path.realpath(DEFAULT_OUT)
    adopt = None
    earlier = os.path.isdir(out) and set(os.listdir(out)) - {LOCK}  # the lock, taken first, made an empty folder
    if os.path.isfile(os.path.join(out, OLD_MARKER)) or (default and earlier and not os.path.exists(record)):
        adopt = tuple(n for n in KEPT if n != TABLE)  # no demo of those days wrote results.md: one there is the user's
    elif ledger.record_about(out, RECORD) == EARLIER_ABOUT:
        adopt = CORPUS + plots.DEMO_PICTURES
    if adopt:
        _record(out, adopt)
        if os.path.isfile(os.path.join(out, OLD_MARKER)):
            os.unlink(os.path.join(out, OLD_MARKER))
    refuse_foreign(out, OUTPUTS + STATES + plots.DEMO_PICTURES + (TABLE,))  # the corpus: where it is written


def forget_results(out, variants):
    """Remove the table and the pictures this run makes again (check_out_folder found them the demo's) before it
    changes the corpus or a model: an interrupted run would leave them describing the earlier run's models (another
    --pretrain-epochs, --seed or flag) beside this run's. A picture this run does not draw is kept, as plots.py says."""
    names = [TABLE, "curves.finetune.png"]
    names += ["curves.pretrain.png"] if {"vanilla", "synthesizer"} & set(variants) else []
    names += ["attention.png"] if {"vanilla", "synthesizer"} <= set(variants) else []
    for name in names:
        try:
            os.unlink(os.path.join(out, name))
        except FileNotFoundError:
            pass
        except OSError as e:
            raise DataError(f"{os.path.join(out, name)}: cannot be removed ({e.strerror or e}), and this run's "
                            f"models would replace those it describes; give --out a folder you can write to") from None


def refuse_foreign(out, names):
    """DataError naming the first of `names` in `out` that the demo's RECORD does not hold as it is now."""
    found = ledger.foreign(out, RECORD, names)
    if found:
        path, why = found
        what = "changed since the demo wrote it" if why == "changed since" else "not written by the demo"
        default = os.path.realpath(out) == os.path.realpath(DEFAULT_OUT)
        elsewhere = "an empty or new folder" + ("" if default else " (default runs/demo)")
        raise DataError(f"{path}: {what}, and the demo's runs would replace it; give --out {elsewhere}, or move "
                        f"the file away")


def spelled_out(extra, run_flags):
    """The run.py flags in `extra`, each abbreviation that names one flag (`--resum`, which run.py's parser
    takes for --resume) written in full: the demo reads --resume, --restart and the flags it sets itself."""
    spelled = []
    for arg in extra:
        flag, eq, value = arg.partition("=")
        if flag.startswith("--") and flag not in run_flags:
            named = [f for f in run_flags if f.startswith(flag)]
            flag = named[0] if len(named) == 1 else flag
        spelled.append(flag + eq + value)
    return spelled


def course_loop_asked(argv):
    """Whether `argv` asks run.py for a course's loop (--reference_train or --reference_eval), also by an
    abbreviation run.py's parser takes (`--reference_tr`)."""
    given = {arg.split("=", 1)[0] for arg in spelled_out(argv, driver.build_parser().flags())}
    return bool(given & {"--reference_train", "--reference_eval"})


def check_flags(p, args, size_name, extra=()):
    """Usage errors of the demo's own flags, and of run.py flags it sets for each step, before any work."""
    for arg in extra:
        if arg.split("=", 1)[0] in SETS:
            p.error(f"{arg.split('=', 1)[0]}: the demo sets it for each step; its files come from --data-dir (or "
                    f"the world it makes) and go to --out")
    for flag, value, what in (("--out", args.out, "the work folder (default runs/demo)"),
                              ("--data-dir", args.data_dir, "the corpus folder, or leave the flag out")):
        if value is not None and not value.strip():  # `--out "$DIR"`, DIR unset: the current folder, unasked
            p.error(f"{flag} is empty; give a folder: {what}")
    unknown = [v for v in args.variants.split(",") if v not in ("nopretrain", "vanilla", "synthesizer")]
    if unknown:
        p.error(f"--variants {args.variants}: {', '.join(map(repr, unknown))} is not a run; give a comma-separated "
                f"list of nopretrain, vanilla, synthesizer")
    if args.pretrain_epochs is not None and args.pretrain_epochs < 1:
        p.error(f"--pretrain-epochs must be at least 1, got {args.pretrain_epochs}")
    if args.pretrain_epochs is not None and any(arg.split("=", 1)[0] == "--max_epochs" for arg in extra):
        p.error("--pretrain-epochs with run.py's --max_epochs: --max_epochs goes to every step after the demo's own "
                "flags, so pretraining would run its epochs, not --pretrain-epochs'; give one of them")
    if (args.people is not None or args.train is not None) and not args.data_dir:
        p.error("--people and --train pick a subset of the --data-dir corpus; give --data-dir too "
                "(without it, --size sets the world's size)")
    if args.people is not None and args.people < 2:
        p.error(f"--people must be at least 2 (train and dev people), got {args.people}")
    if args.train is not None:
        if not args.people and size_name == "full":
            p.error("--train picks the train people of a --people subset; at --size full without --people the "
                    "--data-dir corpus is used whole: give --people too")
        people = args.people or SIZES[size_name].people
        where = "--people" if args.people else f"the {people} people of --size {size_name} (or give --people)"
        if not 1 <= args.train < people:
            p.error(f"--train must be at least 1 and below {where}: the rest are dev people; got {args.train}")


def main(argv=None):
    p = OneLineParser(description=__doc__.split("\n\n")[0],
                      hints=dict.fromkeys(driver.FOLDER_HINTS, "the demo's folders are --data-dir and --out"),
                      epilog="Any other flag goes to src/run.py for every step, after the size's own (for example "
                             "--n_layer 1, --bf16, --length_groups 4; `python src/run.py --help` lists them); the "
                             "demo names them when it starts and, --resume and --restart aside, in its table's "
                             "heading. "
                             "After an interrupted demo, the same command with --resume keeps the steps it finished "
                             "and goes on from there.")
    p.add_argument("--size", choices=sorted(SIZES), default=None,
                   help="full: the course's settings (default on CUDA); cpu: the small version (default elsewhere); "
                        "calibration: data/README.md's CPU calibration setting")
    p.add_argument("--data-dir", default=None,
                   help="use this corpus instead of a generated world (or, at full size, the embedded data/): a subset "
                        "with --people (or below full size), all of it at full size")
    p.add_argument("--people", type=int, default=None, help="with --data-dir: train+dev people to keep")
    p.add_argument("--train", type=int, default=None, help="with --data-dir: how many of them are train people")
    p.add_argument("--out", default=DEFAULT_OUT, help="work folder (params, predictions, logs; default runs/demo)")
    p.add_argument("--seed", type=int, default=0, help="seeds the generated world and every run's model (default 0)")
    p.add_argument("--variants", default="nopretrain,vanilla,synthesizer",
                   help="comma-separated runs, of nopretrain, vanilla, synthesizer (default: all three)")
    p.add_argument("--pretrain-epochs", type=int, default=None, help="override the size's pretraining epochs")
    args, extra = p.parse_known_args(argv)
    run_flags = driver.build_parser().flags()
    for arg in extra:  # a misspelt demo flag would go on to run.py's parser, which knows only run.py's
        flag = arg.split("=", 1)[0]
        meant = nearest(flag, p.flags())
        if flag.startswith("--") and flag not in run_flags and (meant or flag in p.hints):
            p.error(f"unrecognized arguments: {flag}")  # with the nearest demo flag, or the hint
    extra = spelled_out(extra, run_flags)
    size_name = args.size or ("full" if get_device() == "cuda" else "cpu")
    check_flags(p, args, size_name, extra)
    size = SIZES[size_name]
    out = os.path.abspath(args.out)
    # before any work: run.py's own checks of the flags every step gets, and a writable work folder
    pre_args = list(size.pretrain_args)
    if args.pretrain_epochs is not None:
        pre_args += ["--max_epochs", str(args.pretrain_epochs)]
    common = size.model_args + ["--seed", str(args.seed)] + extra
    driver.parse_args(["--function=pretrain", "--variant=vanilla", "--pretrain_corpus_path=wiki.txt",
                       "--writing_params_path=x.params"] + pre_args + common)  # as step() orders them
    check_output_path(os.path.join(out, "vanilla.pretrain.params"), "demo's outputs")
    current = {}  # the training step running now (step()): its state's name, its key, when it started
    with held_lock(os.path.join(out, LOCK), busy_demo), recording_writes(out, current):
        return run_demo(args, extra, size_name, out, pre_args, common, current)


LOCK = ".demo.lock"  # in --out, held while a demo runs there (locks.held_lock: an flock holding its pid)


def busy_demo(path, pid):
    """The line a second demo on the same --out stops with: the first one's training state, world and record
    are not an interrupted demo's (without it, a state the first was saving read as a file the demo did not
    write, to be moved away, and a world made again with another --seed went under the first one's steps)."""
    return (f"{os.path.dirname(path)}: another demo{f' (pid {pid})' if pid else ''} is running in this folder now "
            f"({path} is locked); wait for it to end, or give --out another folder")


@contextlib.contextmanager
def recording_writes(out, current):
    """Record each file of the demo's names in `out` as files.py writes it, and the training state of the step in
    `current` in DONE too: a demo killed outright (SIGKILL, the OOM killer) runs no `finally`, and its training
    state, never recorded, was refused by every later demo there as "not written by the demo" (--resume too)."""
    def written(path):
        name = os.path.relpath(path, os.path.realpath(out))
        if name in KEPT:
            _record(out, [name])
            if name == current.get("state"):
                mark_state(out, name, current["key"], seconds=time.time() - current["started"])
    WRITTEN_HOOKS.append(written)
    try:
        yield
    finally:
        WRITTEN_HOOKS.remove(written)


def run_demo(args, extra, size_name, out, pre_args, common, current):
    """main's demo, its flags checked, while it holds --out's LOCK: the steps, the table and the pictures."""
    size = SIZES[size_name]
    check_out_folder(out)
    forget_results(out, args.variants.split(","))
    t0 = time.time()
    data, source = pick_corpus(args, size_name, out)
    passed = f"; run.py flags given: {shlex.join(extra)}" if extra else ""
    shortened = f"; pretraining {args.pretrain_epochs} epochs" if args.pretrain_epochs is not None else ""
    print(f"demo ({size_name}) on {source}, device {get_device()}{shortened}{passed}", flush=True)
    # the table's heading names what changes its figures from the size's own: --pretrain-epochs, a --seed other
    # than 0 (another world and other models) and run.py's flags, not --resume or --restart (how a step starts,
    # not what it makes)
    changed = (["--pretrain-epochs", str(args.pretrain_epochs)] if args.pretrain_epochs is not None else []) \
        + (["--seed", str(args.seed)] if args.seed != 0 else []) \
        + [f for f in extra if f not in ("--resume", "--restart")]
    wiki = ["--pretrain_corpus_path", os.path.join(data, "wiki.txt")]
    train_tsv = ["--finetune_corpus_path", os.path.join(data, "birth_places_train.tsv")]
    dev_tsv = ["--eval_corpus_path", os.path.join(data, "birth_dev.tsv")]
    results, stored_dev = [], {}  # stored_dev: each pretrained variant's dev rows memorised
    earlier = 0.0  # the seconds of the training steps --resume kept or went on from, as they took then (step())
    finished = []  # the params of the training steps done, in this run or kept from one before (step())
    right, total = london(data)
    results.append(("always London", right / total * 100, None, None, 0.0))

    def step(*a):
        nonlocal earlier
        names = [os.path.basename(a[a.index(flag) + 1]) for flag in ("--writing_params_path", "--outputs_path")
                 if flag in a]
        names += [name + ".state" for name in names if name.endswith(".params")]  # left by a Ctrl-C
        # the demo starts its training runs over: a state in --out is an interrupted demo's (check_out_folder
        # refused any other), unless its flags say --resume. --resume, which run.py's Ctrl-C message names,
        # goes on from the training step whose state is there, saved with the same flags and inputs (saved_with:
        # one of others is started over); a training step that finished before with the same flags and inputs
        # (finished_before) is kept; the other steps (not begun, or evaluations) run as without it, where run.py
        # refused --resume with no state to resume
        training = "--function=evaluate" not in a
        state = names[0] + ".state" if training else None
        key = step_key(list(a) + common) if training else None  # (less --resume)
        resume = training and "--resume" in common and os.path.isfile(os.path.join(out, state))
        if resume and not saved_with(out, state, key):
            print(f"demo: {state} was not saved by this step with these flags and inputs: the step starts over "
                  f"(--resume goes on from a state of the same flags and inputs)", flush=True)
            resume = False
        flags = common if resume else [f for f in common if f != "--resume"]
        if training and "--resume" in common and not resume and finished_before(out, names[0], key):
            print(f"demo: {names[0]} kept: its step finished before with these flags and inputs (--resume)",
                  flush=True)
            earlier += step_seconds(out, names[0])  # its minutes, for the table
            finished.append(names[0])
            return None
        fresh = [] if not training or {"--resume", "--restart"} & set(flags) else ["--restart"]
        shared = os.environ.get(driver.SHARED_FLAGS)
        os.environ[driver.SHARED_FLAGS] = "1"  # its flags go to every step: no notes of those an evaluation skips
        saved = _signature(out, state) if training else None
        params_before = _signature(out, names[0]) if training else None
        # a step going on from its state took the minutes before the Ctrl-C too (the table's, when kept later)
        before = step_seconds(out, state) if resume else 0.0
        earlier += before
        started = time.time() - before
        current.update(state=state, key=key, started=started)
        try:
            try:
                with recorded(out, names):
                    result = driver.main(list(a) + flags + fresh)
            finally:
                current.clear()
                if training and _signature(out, state) not in (None, saved):  # this run saved it, and stopped
                    mark_state(out, state, key, seconds=time.time() - started)
            if training:
                mark_finished(out, names[0], key, seconds=time.time() - started)
                finished.append(names[0])
            return result
        except KeyboardInterrupt:
            # a Ctrl-C during the params' write is held to its end and raised before run.py returns: written
            # (training writes its params once, at its end), they are the finished step's, which --resume keeps
            done = training and _signature(out, names[0]) not in (None, params_before)
            if done:
                mark_finished(out, names[0], key, seconds=time.time() - started)
                finished.append(names[0])
            # run.py's line is the step's alone ("--resume has nothing to go on from" where it saved no state):
            # the demo's --resume also keeps the training steps done
            if finished:
                rest = ("" if done else
                        f" and goes on from {state}" if training and os.path.isfile(os.path.join(out, state))
                        and saved_with(out, state, key) else
                        f" and starts the step of {names[0]} over")
                print(f"demo: the same command with --resume keeps the training steps done ({', '.join(finished)})"
                      f"{rest}", file=sys.stderr, flush=True)
            raise
        finally:
            if shared is None:
                os.environ.pop(driver.SHARED_FLAGS)
            else:
                os.environ[driver.SHARED_FLAGS] = shared

    def par(name):
        return os.path.join(out, name)

    for v in args.variants.split(","):
        t, kept = time.time(), earlier  # kept: earlier's count before this variant's steps
        if v == "nopretrain":
            step("--function=finetune", "--variant=vanilla", *wiki, *train_tsv,
                 "--writing_params_path", par("vanilla.model.params"), *size.nopretrain_args)
            tot, cor = step("--function=evaluate", "--variant=vanilla", *wiki, *dev_tsv,
                            "--reading_params_path", par("vanilla.model.params"),
                            "--outputs_path", par("vanilla.nopretrain.dev.predictions"))
            label, share, found = "vanilla, no pretraining", None, None
        else:
            step("--function=pretrain", f"--variant={v}", *wiki,
                 "--writing_params_path", par(f"{v}.pretrain.params"), *pre_args)
            share, dev_rows = stored(par(f"{v}.pretrain.params"), v, data, common)
            step("--function=finetune", f"--variant={v}", *wiki, *train_tsv,
                 "--reading_params_path", par(f"{v}.pretrain.params"),
                 "--writing_params_path", par(f"{v}.finetune.params"), *size.finetune_args)
            tot, cor = step("--function=evaluate", f"--variant={v}", *wiki, *dev_tsv,
                            "--reading_params_path", par(f"{v}.finetune.params"),
                            "--outputs_path", par(f"{v}.pretrain.dev.predictions"))
            label = f"{v}, pretrained + finetuned"
            found = f"{retrieved(par(f'{v}.pretrain.dev.predictions'), data, dev_rows)} of {len(dev_rows)}"
            stored_dev[v] = dev_rows
        results.append((label, cor / tot * 100, share, found, time.time() - t + earlier - kept))
    settings = f"{size_name} settings" + (f" with {shlex.join(changed)}" if changed else "")
    minutes = (time.time() - t0 + earlier) / 60
    trained = [par(name) for v in args.variants.split(",") for name in
               (["vanilla.model.params"] if v == "nopretrain" else [f"{v}.pretrain.params", f"{v}.finetune.params"])]
    lines = [f"Dev accuracy ({total} questions, {source}; {settings}, {get_device()}{how_trained(trained)}, "
             f"{minutes:.1f} min in all). "
             f"Memorised: the share of train and dev birthplaces the pretrained model reproduces from the biographies "
             f"(src/memorised.py). Retrieved: of the dev people whose birthplace it memorised, how many the finetuned "
             f"model answers right.", ""]
    w = max(len(label) for label, *_ in results)
    lines.append(f"| {'run':{w}s} | dev accuracy | memorised | retrieved | minutes |")
    lines.append(f"| {'-' * w} | ------------ | --------- | --------- | ------- |")
    for label, acc, share, found, secs in results:
        shown = "-" if share is None else f"{share:.1f}%"
        lines.append(f"| {label:{w}s} | {acc:11.1f}% | {shown:>9s} | {found or '-':>9s} | {secs / 60:7.1f} |")
    print("\n" + "\n".join(lines))
    with recorded(out, [TABLE]):
        atomic_write_text(os.path.join(out, TABLE), "\n".join(lines) + "\n")
    print(f"wrote {os.path.join(out, TABLE)}")
    with recorded(out, plots.DEMO_PICTURES):
        plots.plot_demo_runs(out, model_args=common, data_dir=data, variants=args.variants.split(","))
    hint = ask_hint(out, data, common, stored_dev.get("vanilla")) if "vanilla" in args.variants.split(",") else None
    if hint:
        print(hint)
    return results


def how_trained(params_paths):
    """", 2 CPU threads, torch 2.13.0+cpu, commit abc123def456": what the cards of `params_paths` say about how
    they were trained, for the results' first line: the CPU thread counts used (one, or their range: the count
    changes a CPU run's results, README, Results), and torch and the commit where every card saying them agrees;
    "" where no card says."""
    from submission.card import read_card
    runs = [r for r in ((read_card(p) or {}).get("run") for p in params_paths) if isinstance(r, dict)]
    computed = [r["computed"] if isinstance(r.get("computed"), dict) else {} for r in runs]
    parts = []
    every = sorted({n for c in computed if isinstance(c.get("threads"), list) for n in c["threads"]
                    if isinstance(n, int)})
    if every:
        parts.append(f"{every[0]} CPU thread{'s' if every[0] != 1 else ''}" if len(every) == 1 else
                     f"{every[0]} to {every[-1]} CPU threads")
    for values, shown in (([c.get("torch") for c in computed], "torch {}"), ([r.get("commit") for r in runs],
                                                                             "commit {}")):
        values = {v for v in values if isinstance(v, str)}
        if len(values) == 1:
            parts.append(shown.format(next(iter(values))))
    return "".join(f", {part}" for part in parts)


def ask_hint(out, data, model_args, stored=None):
    """The command that asks the demo's finetuned vanilla model about a dev person it answers right (the
    first dev person if none), or None when there is no such model. With `stored` (the dev rows whose
    birthplace pretraining stored), a person it retrieved comes first, not one it guessed, and the command
    names the pretrained params too (ask --pretrained: stored, retrieved)."""
    params = os.path.join(out, "vanilla.finetune.params")
    predictions = os.path.join(out, "vanilla.pretrain.dev.predictions")
    dev = os.path.join(data, "birth_dev.tsv")
    if not (os.path.isfile(params) and os.path.isfile(dev)):
        return None
    rows = parse_tsv(read_text(dev, "dev corpus"), dev)
    said = read_text(predictions).split("\n") if os.path.isfile(predictions) else []
    right = [i for i, ((q, place, _), answer) in enumerate(zip(rows, said)) if same_place(answer, place)]
    right = [rows[i][0] for i in sorted(right, key=lambda i: i not in (stored or ()))]  # retrieved ones first
    question = (right or [rows[0][0]])[0] if rows else "Where was Emily Lee born?"
    # ask reads the size, the heads and the corpus off the params and their card (modelflags.settings_from_params):
    # flags only for what it could not find there (params without their card)
    from ask import DEFAULT_DATA
    from submission.card import corpus_folder, read_card
    carded = isinstance((read_card(params) or {}).get("n_head"), int)
    flags = [] if carded else size_flags(size_from_flags(model_args))
    found = corpus_folder(params, [os.path.join(out, "data"), DEFAULT_DATA]) if carded else None
    if found is None or os.path.realpath(found) != os.path.realpath(data):
        flags += ["--data-dir", as_typed(data)]
    pretrained = os.path.join(out, "vanilla.pretrain.params")
    if stored is not None and os.path.isfile(pretrained):
        flags += ["--pretrained", as_typed(pretrained)]
    # run.sh runs Python in the caller's folder: paths below it are shown from there
    return (f"Ask the models yourself (docs/learners.md, \"Asking a model\"):\n  ./run.sh ask --params "
            f"{shlex.quote(as_typed(params))} " + "".join(f"{shlex.quote(f)} " for f in flags) + shlex.quote(question))


if __name__ == "__main__":
    # one decision for every step run.py runs here (their CPU threads start once): flushed, as run.py
    # computes, unless a course's loop is asked for (threads.denormals_flushed)
    with denormals_flushed(not course_loop_asked(sys.argv[1:])):
        run_cli(main, keep_working=True)

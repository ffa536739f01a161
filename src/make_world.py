"""Generate a fictional biography world into --out (data/ holds the shipped one), or print data folders' statistics.

The world stands in for the course's corpus of short biographies: one person a line in
wiki.txt, and "Where was NAME born?<TAB>PLACE" questions split into train (first 2,000 people),
dev (next 500) and test (the rest). Everything is drawn from `random.Random` streams seeded by
`--seed`, so the same command always writes the same bytes.

    python src/make_world.py --out data                 # regenerate the shipped data/
    python src/make_world.py --out /tmp/w --people 200 --train 150 --dev 25 --places 20 \
        --max-sentences 2                               # a small, simple world for a CPU demo
    python src/make_world.py --stats data COURSE_DATA   # statistics, side by side

Beside the five files it writes `.make_world.json`, their sha256 (and build_world's arguments), and
it replaces only files recorded there, unchanged, or holding what it is about to write (src/ledger.py):
a folder holding other files of those names (the course's data copied into data/, a world edited by
hand) is refused with a one-line error, and `--replace` overwrites them anyway.

Python API: `build_world(...) -> World` and `write_world(world, out_dir, replace=False)`; `stats(dir)`
returns the statistics as a dict and `format_stats([...])` prints them. Standard library only.
"""
import bisect
import contextlib
import hashlib
import inspect
import json
import os
import random
import shlex
import shutil
import signal
import statistics
import sys
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass, field

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import ledger  # noqa: E402
from oneline import OneLineParser, lenient_streams, utf16  # noqa: E402
from world.names import NameMaker  # noqa: E402
from world.places import conflicts, ranked_places  # noqa: E402
from world.templates import QUESTIONS, Bio  # noqa: E402

DEFAULT_SEED = 224
DEFAULT_PEOPLE, DEFAULT_TRAIN, DEFAULT_DEV = 2937, 2000, 500
DEFAULT_PLACES = 560          # distinct birthplaces in a default-size world (scaled with people)
ZIPF_EXPONENT = 0.85          # birthplace of global rank r has weight 1 / (r + ZIPF_SHIFT) ** s
ZIPF_SHIFT = 1.0
ZIPF_KNEE = 150               # ... up to this rank; beyond it the tail falls off faster:
ZIPF_TAIL = 1.7               # weight(knee) * ((knee + shift) / (r + shift)) ** ZIPF_TAIL
UNANSWERABLE = 0.05           # share of people whose line never states the birthplace
NAME_LEAN = 0.25              # chance that a given or family name follows the birth region
SAME_REGION_OTHER = 0.45      # chance that another place in a biography is from the birth region
SENTENCE_WEIGHTS = {1: 14, 2: 48, 3: 24, 4: 8.5, 5: 3, 6: 1.2, 7: 0.6, 8: 0.4, 9: 0.2, 10: 0.1}
MAX_LINE = 520                # longer lines lose their last non-birth sentences

PAD_CHAR, MASK_CHAR = "\u25A1", "\u2047"
QUESTION = "Where was {} born?"
FILES = ("wiki.txt", "birth_places_train.tsv", "birth_dev.tsv", "birth_test_inputs.tsv",
         "birth_test.tsv")
MARKER = ledger.WORLD_RECORD  # written with FILES: their sha256, so that only files make_world wrote are replaced


class WorldError(ValueError):
    """A data folder that cannot be read or written; the message names the file and the fix."""


@dataclass
class World:
    wiki: list            # "Name. biography" lines (no newline): one per person, then any further tellings
    train: list           # (name, place), aligned with wiki[0:len(train)]
    dev: list             # (name, place), aligned with the next lines
    test: list            # (name, place), the last lines
    answerable: list = field(default_factory=list)  # per person: does the line state the place?
    seed: int = DEFAULT_SEED
    arguments: dict = field(default_factory=dict)   # build_world's arguments, recorded in MARKER

    @property
    def rows(self):
        return self.train + self.dev + self.test


@dataclass
class _Person:
    name: object
    birthplace: str
    birthplace_is_country: bool
    region: str


class _Table:
    """Weighted draws from a fixed list (cumulative weights + bisect)."""

    def __init__(self, items, weights):
        self.items = items
        self.cum = []
        total = 0.0
        for w in weights:
            total += w
            self.cum.append(total)

    def draw(self, rng):
        return self.items[bisect.bisect_right(self.cum, rng.random() * self.cum[-1])]


def _zipf(n):
    """Weights by global rank: Zipf-Mandelbrot up to rank ZIPF_KNEE, a steeper tail beyond."""
    knee = 1.0 / (ZIPF_KNEE + ZIPF_SHIFT) ** ZIPF_EXPONENT
    return [1.0 / (r + ZIPF_SHIFT) ** ZIPF_EXPONENT if r <= ZIPF_KNEE
            else knee * ((ZIPF_KNEE + ZIPF_SHIFT) / (r + ZIPF_SHIFT)) ** ZIPF_TAIL
            for r in range(1, n + 1)]


def _plan_birthplaces(rng, places, weights, sizes):
    """Birthplaces per split: London gets its expected share of every split exactly, every
    other place is used at least once (when there are enough people), the rest are Zipf draws."""
    total = sum(sizes)
    n = len(places)
    wsum = sum(weights)
    if total >= n:
        expected_london = 1 + (total - n) * weights[0] / wsum
    else:
        expected_london = total * weights[0] / wsum
    share = expected_london / total if total else 0.0
    london_quota = [round(share * s) for s in sizes]
    others = places[1:]
    needed = total - sum(london_quota)
    pool = list(others[:needed])
    if needed > len(pool) and not others:
        pool += [places[0]] * (needed - len(pool))
    elif needed > len(pool):
        table = _Table(others, weights[1:])
        pool += [table.draw(rng) for _ in range(needed - len(pool))]
    rng.shuffle(pool)
    plan, at = [], 0
    for size, q in zip(sizes, london_quota):
        part = pool[at:at + size - q] + [places[0]] * q
        at += size - q
        rng.shuffle(part)
        plan.append(part)
    return plan


def _place_drawer(rng, person, tables, region_of):
    """New other places for one person, never conflicting with the birthplace or with each
    other; from the birth region with probability SAME_REGION_OTHER. Kind "abroad" is a
    country outside the birth region (for "emigrated to ...")."""
    used = [person.birthplace]

    def draw(kind):
        result = None
        abroad = kind == "abroad"
        if abroad:
            kind = "country"
        for _ in range(60):
            table = None
            if not abroad and rng.random() < SAME_REGION_OTHER:
                table = tables.get((person.region, kind))
            if table is None:
                table = tables.get((None, kind))
            if table is None:
                break
            name = table.draw(rng)
            if abroad and region_of[name] == person.region:
                continue
            if not any(conflicts(name, u) for u in used):
                result = name
                break
        if result is not None:
            used.append(result)
        return result

    return draw


SIZE_LIMITS = (("people", 1), ("train", 0), ("dev", 0), ("max_sentences", 1), ("places", 1), ("tellings", 1))
MAX_BIOGRAPHIES = 500_000  # people x tellings: about 50 s and 100 MB of text on a laptop core


def size_problem(sizes, spell=str):
    """What is wrong with a world's sizes, in one line, or None if nothing: `sizes` maps build_world's
    keywords (SIZE_LIMITS) to values, None meaning the default; `spell` names a keyword the way the
    caller's user knows it (the command line's --max-sentences)."""
    for key, low in SIZE_LIMITS:
        value = sizes.get(key)
        if value is not None and value < low:
            return f"{spell(key)} {value} must be at least {low}"
    train, dev, people = sizes["train"], sizes["dev"], sizes["people"]
    tellings = sizes.get("tellings") or 1
    if people * tellings > MAX_BIOGRAPHIES:
        times = f" times {spell('tellings')} {tellings}" if tellings > 1 else ""
        return (f"{spell('people')} {people}{times} is more than {MAX_BIOGRAPHIES:,} biographies (about 10 s per "
                f"100,000 to make; the course's wiki.txt has 2,937); ask for fewer")
    if train + dev > people:
        return (f"{spell('train')} {train} plus {spell('dev')} {dev} is more than {spell('people')} {people} "
                f"(test takes the rest); lower {spell('train')} or {spell('dev')}, or raise {spell('people')}")
    return None


def build_world(people=DEFAULT_PEOPLE, train=DEFAULT_TRAIN, dev=DEFAULT_DEV, seed=DEFAULT_SEED,
                max_sentences=None, places=None, tellings=1, full_names=False, even_places=False):
    """Build a world of `people` people: the first `train` are the train split, the next `dev`
    the dev split, the rest the test split. `max_sentences` caps the sentences of a biography
    (shorter lines); `places` is the number of distinct birthplaces (by default DEFAULT_PLACES
    for DEFAULT_PEOPLE people and proportionally fewer or more for other sizes; in any case at
    most the length of the place list, and at most the number of people). `tellings` > 1 writes
    every life that many times, each telling drawn afresh (other sentences, other side facts, the same
    birthplace): the first telling of person i is wiki line i as always, the further tellings follow
    all of them (a small model stores a fact it can retrieve from a question only when it has read it
    in several wordings; see src/demo.py). `full_names` names the person in full wherever a
    biography would use the surname alone (Allen-Zhu and Li 2023, "Physics of Language Models 3.1",
    call this the fullname augmentation: the full name becomes the one key to the facts).
    `even_places` makes every birthplace equally likely instead of the Zipf law (with few places
    the Zipf head gives London 15% of people; evenly, about 1 in `places`, as the course's 5%)."""
    problem = size_problem(dict(people=people, train=train, dev=dev, max_sentences=max_sentences,
                                places=places, tellings=tellings))
    if problem:
        raise ValueError(problem)
    sizes = [train, dev, people - train - dev]
    ranked = ranked_places()
    if places is None:  # as many people per place as the default world has
        n_places = max(1, round(DEFAULT_PLACES * people / DEFAULT_PEOPLE))
    else:
        n_places = places
    used = ranked[:min(n_places, len(ranked))]
    weights = [1.0] * len(used) if even_places else _zipf(len(used))
    by_name = {p.name: p for p in used}

    # 1. birthplaces, per split
    plan = _plan_birthplaces(random.Random(f"{seed}:places"), [p.name for p in used], weights,
                             sizes)

    # 2. which lines never state the birthplace: the same share of every split
    rng_ans = random.Random(f"{seed}:answerable")
    answerable = []
    for size in sizes:
        flags = [True] * size
        for i in rng_ans.sample(range(size), round(UNANSWERABLE * size)):
            flags[i] = False
        answerable += flags

    # 3. names, leaning weakly toward the birth region
    region_weights = {}
    for p, w in zip(used, weights):
        region_weights[p.region] = region_weights.get(p.region, 0.0) + w
    rng_names = random.Random(f"{seed}:names")
    maker = NameMaker(rng_names, region_weights, NAME_LEAN)
    persons = []
    for i, place_name in enumerate(pl for part in plan for pl in part):
        place = by_name[place_name]
        female = rng_names.random() < 0.5
        try:
            name = maker.make(place.region, female, avoid=None if answerable[i] else place.name)
        except RuntimeError:  # the name pools have no fresh name left
            raise WorldError(f"the name pools ran out of fresh names at person {i + 1:,} of {people:,}; "
                             f"ask for fewer people") from None
        persons.append(_Person(name, place.name, place.is_country, place.region))

    # 4. biographies
    tables = {}
    for kind in ("any", "city", "country"):
        for region in [None] + sorted({p.region for p in used}):
            sel = [(p.name, w) for p, w in zip(used, weights)
                   if (region is None or p.region == region)
                   and (kind == "any" or (kind == "country") == p.is_country)]
            if sel:
                tables[(region, kind)] = _Table([s[0] for s in sel], [s[1] for s in sel])
    countries = {p.name for p in used if p.is_country}
    region_of = {p.name: p.region for p in used}

    def is_country(name):
        return name in countries

    ks = list(SENTENCE_WEIGHTS)
    kw = [SENTENCE_WEIGHTS[k] for k in ks]

    def biography(rng_bio, i, person):
        """One telling of person i's life, drawn from rng_bio."""
        def side_name(female):
            n = maker.draw(rng_bio.choice(list(region_weights)), female)
            return n.full

        for attempt in range(50):
            k = rng_bio.choices(ks, weights=kw)[0]
            if max_sentences is not None:
                k = min(k, max_sentences)
            drawer = _place_drawer(rng_bio, person, tables, region_of)
            bio = Bio(rng_bio, person, drawer, is_country,
                      spouse_name=lambda: side_name(not person.name.female),
                      other_name=lambda: side_name(rng_bio.random() < 0.5), full_names=full_names)
            sentences, birth_at = bio.write(k, answerable[i])
            while len(sentences) > 1 and len(_line(person, sentences)) > MAX_LINE:
                drop = len(sentences) - 1 if birth_at != len(sentences) - 1 else len(sentences) - 2
                if drop == 0:
                    break
                del sentences[drop]
                if birth_at is not None and drop < birth_at:
                    birth_at -= 1
            line = _line(person, sentences)
            states = person.birthplace in line
            if states == answerable[i] and "\t" not in line and "\n" not in line:
                return line
        raise RuntimeError(f"could not write a consistent biography for {person.name.full}")

    # the first telling of everyone, one line each in split order; then each further telling of
    # everyone, in the same order, from its own stream (so tellings=1 writes the same bytes as before)
    wiki = []
    for telling in range(tellings):
        rng_bio = random.Random(f"{seed}:bios" if telling == 0 else f"{seed}:bios:{telling}")
        wiki += [biography(rng_bio, i, person) for i, person in enumerate(persons)]

    rows = [(p.name.full, p.birthplace) for p in persons]
    world = World(wiki=wiki, train=rows[:train], dev=rows[train:train + dev],
                  test=rows[train + dev:], answerable=answerable, seed=seed,
                  arguments=dict(people=people, train=train, dev=dev, seed=seed, max_sentences=max_sentences,
                                 places=places, tellings=tellings, full_names=full_names, even_places=even_places))
    _cover_question_chars(world, persons, full_names)
    return world


def _line(person, sentences):
    return f"{person.name.full}. {' '.join(sentences)}"


def _cover_question_chars(world, persons, full_names=False):
    """The model's vocabulary comes from wiki.txt alone, so every character of the questions and
    answers must occur there. Usually it already does; otherwise (tiny worlds) a sentence is
    appended to the first line it cannot mislead, deterministically."""
    frame = set(QUESTION.format(""))  # the characters every question has, whoever it asks about
    need = frame | set("".join(n + p for n, p in world.rows))
    missing = need - set("".join(world.wiki))
    if not missing:
        return
    question = next(q for q in QUESTIONS if frame <= set(q))
    extra = []
    if missing & frame:
        extra.append(question)
    for ch in sorted(missing - set(question)):
        place = next(p for _, p in world.rows if ch in p)
        extra.append(place)
    who = (lambda p: p.name.full) if full_names else (lambda p: p.name.family)
    for text in extra:
        is_place = text != question
        for i, person in enumerate(persons):
            if conflicts(text, person.birthplace) or text in world.wiki[i]:
                continue  # never state (or seem to state) someone's birthplace by accident
            if is_place:
                world.wiki[i] += f" {who(person)} later travelled to {text}."
            else:
                world.wiki[i] += f" {who(person)} once asked a friend: \"{text}\""
            break
    left = need - set("".join(world.wiki))
    if left:
        raise RuntimeError(f"characters {sorted(left)} of the questions are not in any biography")


# ----------------------------------------------------------------------------- writing

def _lines(items):
    return "".join(item + "\n" for item in items)


def world_files(world):
    """File name -> text, exactly as `write_world` writes them."""
    def tsv(rows):
        return _lines(f"{QUESTION.format(n)}\t{p}" for n, p in rows)
    return {
        "wiki.txt": _lines(world.wiki),
        "birth_places_train.tsv": tsv(world.train),
        "birth_dev.tsv": tsv(world.dev),
        "birth_test_inputs.tsv": _lines(QUESTION.format(n) for n, _ in world.test),
        "birth_test.tsv": tsv(world.test),
    }


def marker_text(files, arguments=None):
    """The text of MARKER for `files` (file name -> text, as world_files gives them): the sha256 of each
    file's UTF-8 bytes, and `arguments` (build_world's, for information only)."""
    return ledger.record_text({name: hashlib.sha256(text.encode("utf-8")).hexdigest() for name, text in files.items()},
                              "written by src/make_world.py with the files below, which it replaces only while "
                              "they keep these sha256 (data/README.md)", arguments=arguments or {})


def check_replaceable(out_dir, files=None):
    """WorldError naming the first of FILES in out_dir that make_world did not write, or that changed
    since it wrote it (its sha256 is not the one MARKER records): replacing it would lose the user's
    file. A file whose bytes are those of `files` (the world about to be written: name -> text), also
    with Windows line ends, loses nothing and passes. A folder without any of FILES passes."""
    def harmless(name, path):
        if files is None or name not in files:
            return False
        try:
            with open(path, "rb") as f:
                have = f.read()
        except OSError:
            return False
        return have.replace(b"\r\n", b"\n") == files[name].encode("utf-8")
    found = ledger.foreign(out_dir, MARKER, FILES, harmless)
    if found:
        path, why = found
        raise WorldError(f"{path}: not a file make_world wrote ({why}), so it is not replaced; move it away "
                         f"first, or pass --replace to overwrite it")


def build_defaults():
    """{keyword: default} of build_world's arguments, the ones its record keeps (grader.py reads them too)."""
    return {k: p.default for k, p in inspect.signature(build_world).parameters.items()}


def flags(arguments):
    """build_world's `arguments` as make_world's flags, those that differ from its defaults ("" for none)."""
    defaults = build_defaults()
    out = []
    for key, value in arguments.items():
        if key in defaults and value != defaults[key] and value is not None and value is not False:  # (seed 0 is one)
            out.append("--" + key.replace("_", "-") + ("" if value is True else f" {value}"))
    return " ".join(out)


def replaced_world(out_dir, world):
    """The make_world command that writes again the world out_dir holds (run from the folder this one runs in: the
    script and --out as paths from there), where make_world wrote another one
    there than `world` (the one about to replace it: other bytes, from other arguments), else None. Such a world
    is replaced without --replace (it loses nothing: the command remakes it byte for byte), but params trained on
    it stop loading until it is back, as the demo's did after `--out runs/demo/data` wrote the default world over
    its small one."""
    recorded = ledger.record_value(out_dir, MARKER, "arguments")
    hashes, _ = ledger.read_record(out_dir, MARKER)
    if not isinstance(recorded, dict) or not hashes or ledger.foreign(out_dir, MARKER, FILES):
        return None  # no world of make_world's (refused unless --replace, or nothing there)
    new = {name: hashlib.sha256(text.encode("utf-8")).hexdigest() for name, text in world_files(world).items()}
    if all(hashes.get(name) == new[name] for name in FILES if os.path.isfile(os.path.join(out_dir, name))):
        return None  # the same world (from a record of any version)
    if set(recorded) - set(build_defaults()):  # a newer make_world's: flags() cannot spell every argument
        return f"the arguments {json.dumps(recorded, sort_keys=True)} of its record, with a make_world that knows them"
    here, cwd = os.path.abspath(__file__), os.getcwd()
    try:
        script = os.path.relpath(here) if os.path.commonpath([here, cwd]) == cwd else here
    except ValueError:  # Windows: another drive
        script = here
    return f"python {shlex.quote(script)} --out {shlex.quote(out_dir)} {flags(recorded)}".rstrip()


def write_world(world, out_dir, replace=False):
    """Write the five files into out_dir (created if needed) as one set, with MARKER recording them:
    out_dir ends up holding the whole new world or, when anything fails, its old files exactly as they
    were. A Ctrl-C is held to the write's end: the new world is written whole, then WrittenThenInterrupted
    (a KeyboardInterrupt) is raised.

    Files of those names that make_world did not write (check_replaceable) are a WorldError, before
    anything is written, unless `replace` (the command line's --replace).

    The new files are written into a temporary folder inside out_dir and the old ones kept there as
    hard links (copies where the file system has none); only then are the new files renamed over the
    old ones, each rename atomic, MARKER last, and a failed rename puts back the files already renamed.
    Should putting one back fail too, a WorldError says so and the temporary folder keeps the old files."""
    files = world_files(world)
    if not replace:
        check_replaceable(out_dir, files)
    files[MARKER] = marker_text(files, world.arguments)
    made = _missing_folders(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    with _ctrl_c_held() as held:
        try:
            _write_staged(files, out_dir)
        except BaseException:  # "unchanged": the folders made for it go again (each only while empty)
            for folder in made:
                with contextlib.suppress(OSError):
                    os.rmdir(folder)
            raise
    if held:  # the write ended whole (the new world) or raised (the old one): the Ctrl-C stops what follows
        raise WrittenThenInterrupted


def _missing_folders(path):
    """The folders of `path` that are not there yet, deepest first: what os.makedirs(path) would make."""
    missing = []
    path = os.path.abspath(path)
    while not os.path.exists(path) and path != os.path.dirname(path):
        missing.append(path)
        path = os.path.dirname(path)
    return missing


class WrittenThenInterrupted(KeyboardInterrupt):
    """Ctrl-C during write_world, raised once the world was written whole."""


@contextlib.contextmanager
def _ctrl_c_held():
    """Hold Ctrl-C inside the block (the main thread's; elsewhere signals do not arrive): the list it gives
    is non-empty once one came. A KeyboardInterrupt between two renames left a world half new and half old
    (90 of 400 in a helper's stress run) or the new world beside a folder of old files, said "unchanged"."""
    got = []
    previous = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
    if previous in (None, signal.SIG_IGN):  # not Python's, or ignored (a background job): left as it is
        yield got
        return
    signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    try:
        yield got
    finally:
        signal.signal(signal.SIGINT, previous)


def _write_staged(files, out_dir):
    """write_world's files, staged in a folder inside out_dir and renamed over the old ones."""
    stage = tempfile.mkdtemp(prefix=".make_world.", dir=out_dir)
    renamed, restored = [], True
    written = FILES + (MARKER,)
    try:
        for name, text in files.items():
            with open(os.path.join(stage, name), "wb") as f:
                f.write(text.encode("utf-8"))
            os.chmod(os.path.join(stage, name), 0o644)  # ordinary readable data files
        for name in written:
            target, old = os.path.join(out_dir, name), os.path.join(stage, name + ".old")
            if os.path.lexists(target):
                try:
                    os.link(target, old, follow_symlinks=False)
                except OSError:
                    shutil.copy2(target, old, follow_symlinks=False)
        for name in written:
            os.replace(os.path.join(stage, name), os.path.join(out_dir, name))
            renamed.append(name)
    except BaseException as e:
        for name in reversed(renamed):
            target, old = os.path.join(out_dir, name), os.path.join(stage, name + ".old")
            try:
                if os.path.lexists(old):
                    os.replace(old, target)
                else:  # there was no old file
                    os.unlink(target)
            except OSError:
                restored = False
        if not restored:
            why = getattr(e, "strerror", None) or type(e).__name__
            raise WorldError(f"{out_dir}: writing the world failed ({why}) and so did putting back the old "
                             f"files; they are in {stage} (NAME.old): move them back by hand") from e
        raise
    finally:
        if restored:
            shutil.rmtree(stage, ignore_errors=True)


# ----------------------------------------------------------------------------- statistics

def _read_lines(path):
    """The lines of a UTF-8 file (a leading byte-order mark dropped), without their newlines (WorldError
    when it cannot be read)."""
    try:
        with open(path, encoding="utf-8-sig") as f:
            text = f.read()
    except FileNotFoundError:
        raise WorldError(f"{path}: not found; a data folder holds wiki.txt, birth_places_train.tsv, "
                         f"birth_dev.tsv and birth_test.tsv or birth_test_inputs.tsv "
                         f"(`python src/make_world.py --out DIR` writes one)") from None
    except UnicodeDecodeError as e:
        with open(path, "rb") as f:
            head = f.read(max(e.start, 2))
        if utf16(head):  # as the tools that train and evaluate name it (dataset.py)
            raise WorldError(f"{path}: {utf16(head)}; save the file as UTF-8") from None
        line = head[:e.start].count(b"\n") + 1
        raise WorldError(f"{path}:{line}: not valid UTF-8 at byte {e.start}; save the file as UTF-8") from None
    except OSError as e:
        raise WorldError(f"{path}: cannot be read ({e.strerror}); check the path") from None
    if not text:
        return []
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")


def _read_tsv(path):
    """(name, place) of each `question<TAB>place` line of a split; blank lines (as an editor leaves at
    the end) skipped, any other line without exactly one tab a WorldError naming it. A question is read
    without the spaces around it, as the grader compares the test labels' questions with the test inputs'
    (_asked, which reads those too), and a place without the spaces (a CRLF file's "\r" too) that
    end its line, as the course's evaluation scores it (utils.same_place)."""
    rows = []
    for lineno, line in enumerate(_read_lines(path), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 2 or not fields[0].strip() or not fields[1].strip():
            found = "a blank question or place" if len(fields) == 2 else f"{len(fields)} tab-separated field(s)"
            raise WorldError(f"{path}:{lineno}: expected `question<TAB>place`, found {found} in {line[:60]!r}; "
                             f"fix or remove that line")
        rows.append((_asked(line), fields[1].rstrip()))
    return rows


def asked_name(question):
    """The NAME of the course's question QUESTION, "Where was NAME born?"; None for any other text. The one
    reader of the question's form: these statistics count people by it, memorised.py's probes pass over it."""
    head, tail = QUESTION.split("{}")
    if len(question) < len(head) + len(tail) or not (question.startswith(head) and question.endswith(tail)):
        return None  # "Where was born?" too: its head and tail share the space, and it has no place for a NAME
    return question[len(head):-len(tail)]


def _asked(line):
    """Whom the question of a TSV line (the line itself when it has no tab) asks about: its NAME (asked_name), or
    the question itself where it is of another form. The question is read without the spaces around it, as the
    grader compares birth_test.tsv's questions with birth_test_inputs.tsv's (check_labels_match_inputs). The
    model reads them with their spaces (dataset.parse_tsv); these statistics count people and places."""
    question = line.split("\t")[0].strip()
    name = asked_name(question)
    return question if name is None else name


def _name_lookup_baseline(train, dev, fallback):
    """Predict a dev birthplace from train people who share the dev person's last name token,
    else first token, else the most common train place: what names alone can give."""
    by_last, by_first = {}, {}
    for n, p in train:
        toks = n.split() or [""]  # "Where was  born?" names nobody; no IndexError for it
        by_last.setdefault(toks[-1], Counter())[p] += 1
        by_first.setdefault(toks[0], Counter())[p] += 1
    hits = 0
    for n, p in dev:
        toks = n.split() or [""]
        c = by_last.get(toks[-1]) or by_first.get(toks[0])
        guess = c.most_common(1)[0][0] if c else fallback
        hits += guess == p
    return hits / len(dev) if dev else 0.0


def stats(data_dir):
    """Statistics of a data directory in the course's format (birth_test.tsv optional)."""
    wiki_path = os.path.join(data_dir, "wiki.txt")
    wiki = _read_lines(wiki_path)
    if not wiki:
        raise WorldError(f"{wiki_path}: empty; it needs one biography a line")
    train = _read_tsv(os.path.join(data_dir, "birth_places_train.tsv"))
    dev = _read_tsv(os.path.join(data_dir, "birth_dev.tsv"))
    test_path, inputs_path = (os.path.join(data_dir, n) for n in ("birth_test.tsv", "birth_test_inputs.tsv"))
    test = _read_tsv(test_path) if os.path.exists(test_path) else None
    if test is None or os.path.exists(inputs_path):
        asked = [(_asked(q), None) for q in _read_lines(inputs_path) if q.strip()]
        # birth_test.tsv labels the test questions only while it asks what birth_test_inputs.tsv asks, each of its
        # questions (the course's files copied over data/ leave the embedded world's labels behind, of other people)
        if test is None or len(asked) != len(test) or any(a != n for (a, _), (n, _) in zip(asked, test)):
            test = asked
    s = {"people": len(wiki), "train": len(train), "dev": len(dev), "test": len(test)}
    labelled = train + dev + [r for r in test if r[1] is not None]
    s["labelled"] = len(labelled)
    all_places = Counter(p for _, p in labelled)
    s["distinct_places"] = len(all_places)
    s["singleton_places"] = sum(1 for c in all_places.values() if c == 1)
    train_places = Counter(p for _, p in train)
    for split, rows in (("train", train), ("dev", dev), ("test", test)):
        c = Counter(p for _, p in rows if p is not None)
        s[f"{split}_distinct"] = len(c) if c else None
        if c:
            top, cnt = c.most_common(1)[0]
            s[f"{split}_top"] = (top, cnt / len(rows))
            s[f"{split}_london"] = c["London"] / len(rows)
        else:
            s[f"{split}_top"] = None
            s[f"{split}_london"] = None
    unseen = [p for _, p in dev if p not in train_places]
    s["dev_unseen_distinct"] = len(set(unseen))
    s["dev_unseen_rows"] = len(unseen)
    s["dev_unseen_share"] = len(unseen) / len(dev) if dev else 0.0
    lengths = sorted(len(l) for l in wiki)
    s["len_min"], s["len_max"] = lengths[0], lengths[-1]
    s["len_median"] = statistics.median(lengths)
    q = statistics.quantiles(lengths, n=10) if len(lengths) > 1 else lengths
    s["len_p10"], s["len_p90"] = q[0], q[-1]
    s["len_mean"] = statistics.fmean(lengths)
    stated = sum(1 for i, (_, p) in enumerate(labelled) if i < len(wiki) and p in wiki[i])
    s["states_birthplace"] = stated / len(labelled) if labelled else 0.0
    text = "\n".join(wiki) + "\n"
    chars = set(text)
    s["distinct_chars"] = len(chars)
    s["non_ascii_chars"] = sum(1 for ch in chars if ord(ch) > 127)
    s["has_pad_or_mask"] = PAD_CHAR in chars or MASK_CHAR in chars
    tsv_chars = set("".join(QUESTION.format(n) + (p or "") for n, p in train + dev + test))
    s["tsv_chars_missing_from_wiki"] = "".join(sorted(tsv_chars - chars))
    names = [n for n, _ in train + dev + test]
    s["duplicate_names"] = sum(c - 1 for c in Counter(names).values() if c > 1)
    train_names = {n for n, _ in train}
    s["dev_names_in_train"] = sum(1 for n, _ in dev if n in train_names)
    s["test_names_in_train"] = sum(1 for n, _ in test if n in train_names)
    s["names_match_lines"] = sum(1 for i, n in enumerate(names)
                                 if i < len(wiki) and wiki[i].startswith(n + ". ")) / max(1, len(names))
    fallback = train_places.most_common(1)[0][0] if train_places else "London"
    s["dev_london_baseline"] = sum(1 for _, p in dev if p == "London") / len(dev) if dev else 0.0
    s["dev_name_lookup_baseline"] = _name_lookup_baseline(train, dev, fallback)
    return s


_SHARES = {"train_london", "dev_london", "test_london", "dev_unseen_share", "states_birthplace",
           "names_match_lines", "dev_london_baseline", "dev_name_lookup_baseline"}


def _fmt(v, key=""):
    if v is None:
        return "n/a"
    if isinstance(v, tuple):
        return f"{v[0]} {v[1]:.1%}"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if key in _SHARES:
        return f"{v:.1%}"
    if isinstance(v, float):
        return f"{v:.0f}" if v == int(v) else f"{v:.1f}"
    return str(v) if v != "" else "(none)"


_ROWS = [
    ("biographies (wiki lines)", "people"), ("train / dev / test rows", ("train", "dev", "test")),
    ("distinct birthplaces (labelled rows)", "distinct_places"),
    ("  of which used once", "singleton_places"),
    ("distinct birthplaces train / dev / test",
     ("train_distinct", "dev_distinct", "test_distinct")),
    ("top place train", "train_top"), ("top place dev", "dev_top"), ("top place test", "test_top"),
    ("London share train / dev / test", ("train_london", "dev_london", "test_london")),
    ("dev places unseen in train: distinct / rows", ("dev_unseen_distinct", "dev_unseen_rows")),
    ("dev rows with a place unseen in train", "dev_unseen_share"),
    ("line length min / median / max", ("len_min", "len_median", "len_max")),
    ("line length p10 / mean / p90", ("len_p10", "len_mean", "len_p90")),
    ("lines stating the birthplace", "states_birthplace"),
    ("distinct chars in wiki.txt (with newline)", "distinct_chars"),
    ("  of which non-ASCII", "non_ascii_chars"),
    ("PAD or MASK in wiki.txt", "has_pad_or_mask"),
    ("question/answer chars missing from wiki", "tsv_chars_missing_from_wiki"),
    ("duplicate names", "duplicate_names"),
    ("dev / test names in train", ("dev_names_in_train", "test_names_in_train")),
    ("split rows matching wiki line names", "names_match_lines"),
    ("dev: always 'London'", "dev_london_baseline"),
    ("dev: name-lookup baseline", "dev_name_lookup_baseline"),
]


def format_stats(dirs, labels=None):
    """A table of the statistics of one or more data directories, one column each (headed by
    `labels`, by default the directories as given)."""
    all_stats = [stats(d) for d in dirs]
    header = ["statistic"] + list(labels or dirs)
    table = [header]
    for label, key in _ROWS:
        cells = [label]
        for s in all_stats:
            if isinstance(key, tuple):
                cells.append(" / ".join(_fmt(s[k], k) for k in key))
            else:
                cells.append(_fmt(s[key], key))
        table.append(cells)
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    out = []
    for j, row in enumerate(table):
        out.append("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |")
        if j == 0:
            out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(out)


# ----------------------------------------------------------------------------- command line

def _check_args(ap, args):
    """Usage errors (one line each) before any work: the world's sizes, the --out and --stats folders."""
    if args.out:
        problem = size_problem({key: getattr(args, key) for key, _ in SIZE_LIMITS},
                               spell=lambda key: "--" + key.replace("_", "-"))
        if problem:
            ap.error(problem)
        known = len(ranked_places())  # build_world takes them all then: asked for on the command line, a world of
        if args.places is not None and args.places > known:  # fewer places came without a word
            ap.error(f"--places {args.places} is more than the {known} places the generator knows; ask for fewer")
        if os.path.exists(args.out) and not os.path.isdir(args.out):
            ap.error(f"--out {args.out} is a file, not a folder; give a folder (it is made if missing)")
    for d in args.stats or []:
        if not os.path.isdir(d):
            ap.error(f"--stats {d}: no such folder; give a data folder such as data")


def main(argv=None):
    """The command line; returns the exit status: 0, 2 after a one-line error, 130 on Ctrl-C (the
    --out folder then holds its old files unchanged, or the new world whole when the Ctrl-C came during
    the write)."""
    lenient_streams()  # --stats prints the corpus's characters: a cp1252 stdout (Windows, redirected) lacks some
    ap = OneLineParser(prog=os.path.basename(__file__), description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="write the world into this directory")
    ap.add_argument("--stats", nargs="+", metavar="DIR",
                    help="print statistics of these data directories (side by side)")
    ap.add_argument("--people", type=int, default=DEFAULT_PEOPLE)
    ap.add_argument("--train", type=int, default=DEFAULT_TRAIN)
    ap.add_argument("--dev", type=int, default=DEFAULT_DEV)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--max-sentences", type=int, default=None,
                    help="at most this many sentences per biography (shorter lines)")
    ap.add_argument("--places", type=int, default=None,
                    help=f"number of distinct birthplaces (default {DEFAULT_PLACES} for "
                         f"{DEFAULT_PEOPLE} people, proportionally fewer for smaller worlds; at most "
                         f"{len(ranked_places())}, and no more than the people born)")
    ap.add_argument("--tellings", type=int, default=1,
                    help="biographies per person, each in other words (further tellings follow line N)")
    ap.add_argument("--full-names", action="store_true",
                    help="name each person in full wherever a biography would use the surname alone")
    ap.add_argument("--even-places", action="store_true",
                    help="every birthplace equally likely (default: a Zipf law, London first)")
    ap.add_argument("--replace", action="store_true",
                    help=f"overwrite files in --out that make_world did not write or that changed since "
                         f"(by default they are refused: {MARKER} there records what it wrote)")
    args = ap.parse_args(argv)
    if not args.out and not args.stats:
        ap.error("give --out DIR and/or --stats DIR [DIR ...]")
    _check_args(ap, args)
    written = False
    try:
        if args.out:
            world = build_world(people=args.people, train=args.train, dev=args.dev, seed=args.seed,
                                max_sentences=args.max_sentences, places=args.places, tellings=args.tellings,
                                full_names=args.full_names, even_places=args.even_places)
            again = replaced_world(args.out, world)
            try:
                write_world(world, args.out, replace=args.replace)
            except OSError as e:
                raise WorldError(f"{args.out}: cannot write the world there ({e.strerror or e}), so it is "
                                 f"unchanged; give a folder you can write to") from None
            written = True
            people = len(world.rows)
            print(f"wrote {people} people ({len(world.train)} train, {len(world.dev)} dev, {len(world.test)} test"
                  + (f"; {len(world.wiki)} biographies" if len(world.wiki) > people else "") + f") to {args.out}")
            if again:
                print(f"note: this replaced a world made with other arguments; params trained on it load again once "
                      f"it is back: {again}", file=sys.stderr)
        if args.stats:
            print(format_stats(args.stats))
    except WorldError as e:
        print(f"{ap.prog}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        written = written or isinstance(e, WrittenThenInterrupted)
        unchanged = f"; {args.out} unchanged" if args.out and not written else ""
        print(f"{ap.prog}: interrupted{unchanged}", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    try:
        status = main()
        sys.stdout.flush()  # a closed pipe shows here, not at exit's flush (stdout to a pipe is buffered)
    except BrokenPipeError:  # `make_world.py --stats data | head`: stop quietly with 141, as a shell tool does
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # (the world, if --out was given, is written by now)
        status = 141
    sys.exit(status)

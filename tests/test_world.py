"""Tests of the biography-world generator (src/make_world.py, src/world/) and of the shipped data/.

Run:  python -m pytest -q tests/test_world.py      (CPU only, a few seconds, no network and no course data)

They check that data/ is exactly what the generator writes, the course's file formats, the
statistics the task depends on (London share, long-tailed places, line lengths, unanswerable
share, characters), determinism, and that small demo worlds build and stay well formed.
"""
import errno
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from collections import Counter

import pytest

import make_world as mw
from world.names import POOLS, REGION_POOLS
from world.places import REGIONS, ranked_places

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "data")
SCRIPT = os.path.join(ROOT, "src", "make_world.py")
QUESTION_RE = re.compile(r"^Where was (.+) born\?$")
SPLIT_FILES = ("birth_places_train.tsv", "birth_dev.tsv", "birth_test.tsv")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def lines_of(text):
    assert text.endswith("\n") and not text.endswith("\n\n")
    return text[:-1].split("\n")


@pytest.fixture(scope="module")
def shipped():
    """The shipped files as text."""
    return {name: read(os.path.join(DATA, name)).decode("utf-8") for name in mw.FILES}


@pytest.fixture(scope="module")
def rows(shipped):
    """(name, place) per split, parsed from the shipped TSV files."""
    out = {}
    for name in SPLIT_FILES:
        parsed = []
        for line in lines_of(shipped[name]):
            question, place = line.split("\t")
            parsed.append((QUESTION_RE.match(question).group(1), place))
        out[name] = parsed
    return out


@pytest.fixture(scope="module")
def stats():
    return mw.stats(DATA)


# ----------------------------------------------------------------------------- regeneration

def test_shipped_data_is_regenerated_byte_for_byte(tmp_path):
    mw.write_world(mw.build_world(), str(tmp_path))
    for name in mw.FILES:
        assert read(os.path.join(DATA, name)) == read(str(tmp_path / name)), name
    assert sorted(os.listdir(tmp_path)) == sorted(mw.FILES + (mw.MARKER,))  # no temporary files left behind


def test_shipped_data_has_the_record_make_world_writes(tmp_path):
    """data/.make_world.json is what `python src/make_world.py --out data` writes and records data/'s
    files as they are, so that regenerating data/ needs no --replace. Before, there was no record."""
    mw.write_world(mw.build_world(), str(tmp_path))
    assert read(os.path.join(DATA, mw.MARKER)) == read(str(tmp_path / mw.MARKER))
    recorded = json.loads(read(os.path.join(DATA, mw.MARKER)).decode("utf-8"))
    assert recorded["sha256"] == {name: hashlib.sha256(read(os.path.join(DATA, name))).hexdigest()
                                  for name in mw.FILES}
    assert recorded["arguments"]["people"] == 2937 and recorded["arguments"]["seed"] == 224
    mw.check_replaceable(DATA)  # no WorldError
    try:  # and git does not ignore it (exit status 1: not ignored; 128: no git checkout here)
        ignored = subprocess.run(["git", "check-ignore", "-q", os.path.join("data", mw.MARKER)], cwd=ROOT).returncode
    except OSError:  # no git
        ignored = 128
    assert ignored != 0


def test_cli_writes_the_same_bytes_as_the_api(tmp_path):
    args = ["--people", "120", "--train", "80", "--dev", "20", "--seed", "3", "--places", "30"]
    assert mw.main(["--out", str(tmp_path / "cli")] + args) == 0
    world = mw.build_world(people=120, train=80, dev=20, seed=3, places=30)
    for name, text in mw.world_files(world).items():
        assert read(str(tmp_path / "cli" / name)) == text.encode("utf-8")


def test_output_does_not_depend_on_hash_seed(tmp_path):
    outs = []
    for hash_seed in ("0", "1"):
        out = tmp_path / hash_seed
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        subprocess.run([sys.executable, SCRIPT, "--out", str(out), "--people", "150",
                        "--train", "100", "--dev", "25"], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        outs.append({name: read(str(out / name)) for name in mw.FILES})
    assert outs[0] == outs[1]


def test_write_world_overwrites_atomically(tmp_path):
    small = mw.build_world(people=30, train=20, dev=5, places=10)
    other = mw.build_world(people=30, train=20, dev=5, places=10, seed=5)
    mw.write_world(small, str(tmp_path))
    mw.write_world(other, str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == sorted(mw.FILES + (mw.MARKER,))
    assert read(str(tmp_path / "wiki.txt")).decode("utf-8") == mw.world_files(other)["wiki.txt"]
    assert os.stat(tmp_path / "wiki.txt").st_mode & 0o444 == 0o444


# ----------------------------------------------------------------------------- formats

def test_line_counts(shipped):
    assert len(lines_of(shipped["wiki.txt"])) == 2937
    assert len(lines_of(shipped["birth_places_train.tsv"])) == 2000
    assert len(lines_of(shipped["birth_dev.tsv"])) == 500
    assert len(lines_of(shipped["birth_test.tsv"])) == 437
    assert len(lines_of(shipped["birth_test_inputs.tsv"])) == 437


def test_files_are_clean_utf8_with_one_final_newline(shipped):
    for name, text in shipped.items():
        assert text.endswith("\n") and not text.endswith("\n\n"), name
        assert "\r" not in text and "\ufeff" not in text, name
        assert all(line.strip() == line and line for line in lines_of(text)), name


def test_tsv_format(shipped):
    for name in SPLIT_FILES:
        for line in lines_of(shipped[name]):
            assert line.count("\t") == 1, line
            question, place = line.split("\t")
            assert QUESTION_RE.match(question), question
            assert place and place.strip() == place


def test_test_inputs_are_the_test_questions(shipped):
    questions = [line.split("\t")[0] for line in lines_of(shipped["birth_test.tsv"])]
    assert lines_of(shipped["birth_test_inputs.tsv"]) == questions
    assert "\t" not in shipped["birth_test_inputs.tsv"]


def test_wiki_line_i_is_split_row_i(shipped, rows):
    wiki = lines_of(shipped["wiki.txt"])
    names = [n for f in SPLIT_FILES for n, _ in rows[f]]
    assert len(names) == len(wiki)
    for line, name in zip(wiki, names):
        assert line.startswith(name + ". "), (name, line[:60])
        assert "\t" not in line


# ----------------------------------------------------------------------------- statistics

def test_london_is_about_five_percent_of_every_split(rows):
    for name in SPLIT_FILES:
        counts = Counter(p for _, p in rows[name])
        share = counts["London"] / len(rows[name])
        assert 0.03 <= share <= 0.07, (name, share)
    assert Counter(p for _, p in rows["birth_places_train.tsv"]).most_common(1)[0][0] == "London"


def test_places_are_many_and_long_tailed(rows, stats):
    assert 400 <= stats["distinct_places"] <= 600
    assert 400 <= stats["train_distinct"] <= 600
    counts = sorted(Counter(p for f in SPLIT_FILES for _, p in rows[f]).values(), reverse=True)
    total = sum(counts)
    assert sum(counts[:10]) / total < 0.30           # no short head
    assert stats["singleton_places"] >= 80           # a long tail of places used once
    assert counts[0] > counts[9] > counts[99] >= counts[299]
    # some dev places never occur in train, but not many
    assert 0.02 <= stats["dev_unseen_share"] <= 0.20


def test_places_include_countries_and_cities(rows):
    places = {p for f in SPLIT_FILES for _, p in rows[f]}
    for place in ("London", "Paris", "England", "France"):
        assert place in places


def test_line_lengths(stats):
    assert 100 <= stats["len_median"] <= 160
    assert 25 <= stats["len_min"] <= 70
    assert 350 <= stats["len_max"] <= 600


def test_birthplace_stated_in_most_lines(stats):
    assert 0.90 <= stats["states_birthplace"] <= 0.98


def test_unanswerable_lines_never_state_a_birth(shipped, rows):
    wiki = lines_of(shipped["wiki.txt"])
    labelled = [r for f in SPLIT_FILES for r in rows[f]]
    unanswerable = [line for line, (_, place) in zip(wiki, labelled) if place not in line]
    assert unanswerable
    for line in unanswerable:  # "born" only in a birth year, "(born 1931)"
        assert "born" not in re.sub(r"\(born \d{4}\)", "", line), line
        assert "native" not in line and "hails from" not in line, line


def test_biographies_mention_other_places_and_vary(shipped, rows):
    wiki = lines_of(shipped["wiki.txt"])
    labelled = [r for f in SPLIT_FILES for r in rows[f]]
    places = sorted({p for _, p in labelled}, key=len, reverse=True)
    other = 0
    early = late = 0
    for line, (name, place) in zip(wiki, labelled):
        body = line[len(name) + 2:]
        rest = body.replace(place, "")
        if any(p in rest for p in places if p != place):
            other += 1
        if place in body:
            pos = body.find(place) / len(body)
            early += pos < 0.3
            late += pos > 0.7
    assert other / len(wiki) > 0.5
    assert early / len(wiki) > 0.15 and late / len(wiki) > 0.15
    text = "\n".join(wiki)
    for phrase in ("Born in ", "A native of ", "-born ", "although ", " hails from ",
                   " died in ", " studied ", " moved to ", " grew up in "):
        assert text.count(phrase) >= 20, phrase
    years = re.findall(r"\b1[89]\d\d\b|\b20[0-2]\d\b", text)
    assert len(set(years)) > 150


def test_names_are_unique_across_splits(rows, stats, shipped):
    wiki = lines_of(shipped["wiki.txt"])
    train_names = {n for n, _ in rows["birth_places_train.tsv"]}
    assert stats["duplicate_names"] <= 5
    for split in ("birth_dev.tsv", "birth_test.tsv"):
        inside = sum(1 for n, _ in rows[split] if n in train_names)
        assert inside <= 2, split
    line_names = {line.split(". ")[0] for line in wiki}
    for split in ("birth_dev.tsv", "birth_test.tsv"):
        assert all(n in line_names for n, _ in rows[split])


def test_names_tell_little_about_birthplace(stats):
    # what a model could get from names alone (shared name tokens with train people)
    assert stats["dev_name_lookup_baseline"] <= stats["dev_london_baseline"] + 0.05


def test_characters(shipped, stats):
    wiki_chars = set(shipped["wiki.txt"])
    assert len(wiki_chars) <= 254
    assert "\u25A1" not in wiki_chars and "\u2047" not in wiki_chars
    non_ascii = {c for c in wiki_chars if ord(c) > 127}
    assert len(non_ascii) >= 20
    for ch in "éëŁøüñ":
        assert ch in wiki_chars, ch
    assert "?" in wiki_chars
    for name in ("birth_places_train.tsv", "birth_dev.tsv", "birth_test.tsv",
                 "birth_test_inputs.tsv"):
        missing = set(shipped[name].replace("\t", "").replace("\n", "")) - wiki_chars
        assert not missing, (name, missing)
        assert "\u25A1" not in shipped[name] and "\u2047" not in shipped[name]
    assert stats["tsv_chars_missing_from_wiki"] == ""


# ----------------------------------------------------------------------------- determinism

def test_same_seed_same_world_other_seed_other_world():
    a = mw.build_world(people=300, train=200, dev=50, seed=7)
    b = mw.build_world(people=300, train=200, dev=50, seed=7)
    c = mw.build_world(people=300, train=200, dev=50, seed=8)
    assert mw.world_files(a) == mw.world_files(b)
    assert a.wiki != c.wiki and a.rows != c.rows


def test_another_seed_draws_the_names_the_birthplaces_and_the_unanswerable_people_afresh():
    """Each of the world's random streams (names, birthplaces, which lines keep the place back) is seeded by
    --seed: one left on the default seed passed the test above, since the others still changed the lines,
    and a second world then shared 130 of its 300 names with the first, or had the same unanswerable people,
    or the same birthplace on every line."""
    a = mw.build_world(people=300, train=200, dev=50, seed=7)
    c = mw.build_world(people=300, train=200, dev=50, seed=8)
    assert len({n for n, _ in a.rows} & {n for n, _ in c.rows}) < 15  # (none, as it is)
    assert sum(pa == pc for (_, pa), (_, pc) in zip(a.rows, c.rows)) < 60  # (9: London's and the head's share)
    unanswerable = [{i for i, ok in enumerate(w.answerable) if not ok} for w in (a, c)]
    assert len(unanswerable[0]) == len(unanswerable[1]) and unanswerable[0] != unanswerable[1]


def test_world_object_is_consistent():
    w = mw.build_world(people=300, train=200, dev=50)
    assert len(w.wiki) == 300 and len(w.answerable) == 300
    assert (len(w.train), len(w.dev), len(w.test)) == (200, 50, 50)
    for line, (name, place), ok in zip(w.wiki, w.rows, w.answerable):
        assert line.startswith(name + ". ")
        assert (place in line) == ok


# ----------------------------------------------------------------------------- small worlds

def test_small_world_is_well_formed(tmp_path):
    w = mw.build_world(people=200, train=150, dev=25, places=20, max_sentences=2)
    assert len(w.wiki) == 200 and (len(w.train), len(w.dev), len(w.test)) == (150, 25, 25)
    places = Counter(p for _, p in w.rows)
    assert len(places) == 20
    assert places.most_common(1)[0][0] == "London"
    names = [n for n, _ in w.rows]
    assert len(set(names)) == len(names)
    # per split, the same share of lines never states the birthplace
    assert sum(1 for ok in w.answerable if not ok) == round(0.05 * 150) + round(0.05 * 25) * 2
    chars = set("".join(w.wiki)) | {"\n"}
    assert set("".join(mw.QUESTION.format(n) + p for n, p in w.rows)) <= chars
    mw.write_world(w, str(tmp_path))
    s = mw.stats(str(tmp_path))
    assert s["names_match_lines"] == 1.0 and s["tsv_chars_missing_from_wiki"] == ""


def test_max_sentences_makes_shorter_lines():
    full = mw.build_world(people=300, train=200, dev=50)
    short = mw.build_world(people=300, train=200, dev=50, max_sentences=1)
    assert max(len(x) for x in short.wiki) < 250
    assert sum(map(len, short.wiki)) < 0.75 * sum(map(len, full.wiki))


def test_tellings_retell_every_life_after_the_first_lines():
    """tellings=3: lines 0..N-1 are the one-telling world's, byte for byte; then two more tellings of
    every person in split order, each in other words but with the same name and birthplace (stated
    exactly when the first telling states it)."""
    one = mw.build_world(people=60, train=40, dev=20, max_sentences=1)
    three = mw.build_world(people=60, train=40, dev=20, max_sentences=1, tellings=3)
    n = len(one.rows)
    assert three.rows == one.rows and three.wiki[:n] == one.wiki and len(three.wiki) == 3 * n
    for i, (name, place) in enumerate(three.rows):
        told = [three.wiki[i + k * n] for k in range(3)]
        assert all(line.startswith(name + ". ") for line in told)
        assert all((place in line) == three.answerable[i] for line in told)
    assert sum(three.wiki[i] != three.wiki[i + n] != three.wiki[i + 2 * n] for i in range(n)) > 0.9 * n
    assert mw.build_world(people=60, train=40, dev=20, max_sentences=1, tellings=3).wiki == three.wiki


def _surname_alone(world):
    """Lines that name their person by the surname without the full name around it."""
    n, count = len(world.rows), 0
    for j, line in enumerate(world.wiki):
        full = world.rows[j % n][0]
        rest = line.split(". ", 1)[1].replace(full, "")
        count += re.search(r"(?<![\w-])" + re.escape(full.split(" ")[-1]) + r"(?![\w-])", rest) is not None
    return count


def test_full_names_replace_every_surname_alone_and_nothing_else():
    """full_names: the same people, birthplaces, answerable flags and sentence choices (the random
    streams are untouched), but the person is named in full wherever the surname stood alone."""
    plain = mw.build_world(people=60, train=40, dev=20, max_sentences=1, tellings=3)
    full = mw.build_world(people=60, train=40, dev=20, max_sentences=1, tellings=3, full_names=True)
    assert full.rows == plain.rows and full.answerable == plain.answerable
    assert _surname_alone(plain) > 0.3 * len(plain.wiki)
    assert _surname_alone(full) <= 0.02 * len(full.wiki)  # only where another person shares the surname
    n = len(plain.rows)
    for j, (a, b) in enumerate(zip(plain.wiki, full.wiki)):
        name = plain.rows[j % n][0]
        family = name.split(" ")[-1]
        assert a.replace(name, family) == b.replace(name, family)  # the same line, names aside


def test_even_places_give_every_birthplace_about_the_same_share():
    zipf = mw.build_world(people=100, train=60, dev=40, max_sentences=1)
    even = mw.build_world(people=100, train=60, dev=40, max_sentences=1, even_places=True)
    london = [sum(p == "London" for _, p in world.dev) for world in (zipf, even)]
    assert london[1] < london[0]  # London heads the Zipf law; evenly it is one place of 19
    counts = Counter(p for _, p in even.rows)
    assert len(counts) == 19 and max(counts.values()) <= 10  # multinomial spread around 100 / 19
    assert Counter(p for _, p in zipf.rows)["London"] >= 15


def test_tiny_and_edge_worlds():
    one = mw.build_world(people=1, train=1, dev=0)
    assert len(one.wiki) == 1 and one.dev == [] and one.test == []
    only_london = mw.build_world(people=12, train=6, dev=3, places=1)
    assert {p for _, p in only_london.rows} == {"London"}
    many = mw.build_world(people=400, train=300, dev=50, places=10_000)
    assert len({p for _, p in many.rows}) > 300
    for bad, said in ((dict(people=0), "people 0 must be at least 1"),
                      (dict(people=10, train=8, dev=5), "train 8 plus dev 5 is more than people 10"),
                      (dict(max_sentences=0), "max_sentences 0 must be at least 1"),
                      (dict(places=0), "places 0 must be at least 1"), (dict(tellings=0), "tellings 0 must be")):
        with pytest.raises(ValueError, match=re.escape(said)):
            mw.build_world(**bad)


def test_smaller_worlds_have_proportionally_fewer_places_rounded():
    """Without --places, a world has DEFAULT_PLACES places per DEFAULT_PEOPLE people, rounded (24 people:
    4.58, so 5), every one of them a birthplace when there are people enough."""
    for people in (24, 30, 200):
        world = mw.build_world(people=people, train=people * 2 // 3, dev=people // 6)
        want = round(mw.DEFAULT_PLACES * people / mw.DEFAULT_PEOPLE)
        assert len({p for _, p in world.rows}) == want, people


def test_a_place_added_for_a_missing_character_never_states_someones_birthplace():
    """A tiny world whose lines lack a character of a place gets "SURNAME later travelled to PLACE."
    on the first line it cannot mislead: never the line of a person born there, which would then
    state the birthplace it is meant to keep back."""
    from types import SimpleNamespace
    people = [("Ann Bo", "Zürich"), ("Cy Du", "Oslo")]
    persons = [SimpleNamespace(name=SimpleNamespace(full=n, family=n.split()[-1]), birthplace=p) for n, p in people]
    wiki = ["Ann Bo. Ann Bo never said where she came from.", "Cy Du. Where was he born? In Oslo, with rich hills."]
    world = mw.World(wiki=list(wiki), train=people, dev=[], test=[])
    mw._cover_question_chars(world, persons)
    assert world.wiki[0] == wiki[0]  # Ann Bo's line still keeps her birthplace back
    assert world.wiki[1] == wiki[1] + " Du later travelled to Zürich."
    named = mw.World(wiki=list(wiki), train=people, dev=[], test=[])  # full_names: no surname alone, here either
    mw._cover_question_chars(named, persons, full_names=True)
    assert named.wiki[1] == wiki[1] + " Cy Du later travelled to Zürich."


def test_the_command_line_says_how_many_people_of_each_split_it_wrote(tmp_path, capsys):
    out = tmp_path / "w"
    assert mw.main(["--out", str(out), "--people", "30", "--train", "20", "--dev", "6", "--max-sentences", "1"]) == 0
    assert capsys.readouterr().out == f"wrote 30 people (20 train, 6 dev, 4 test) to {out}\n"
    assert mw.main(["--out", str(out), "--people", "30", "--train", "20", "--dev", "6", "--max-sentences", "1",
                    "--tellings", "2"]) == 0  # each life told twice: the biographies too
    assert capsys.readouterr().out == f"wrote 30 people (20 train, 6 dev, 4 test; 60 biographies) to {out}\n"


def test_stats_cli_prints_a_table(tmp_path, capsys):
    mw.write_world(mw.build_world(people=60, train=40, dev=10), str(tmp_path))
    assert mw.main(["--stats", str(tmp_path), str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "London share train / dev / test" in out and out.count(str(tmp_path)) == 2


def test_stats_share_of_lines_stating_the_birthplace_is_per_person_however_many_tellings(tmp_path):
    """A world told twice has two lines a person: the share of people whose line states the birthplace is
    still the share of answerable people (its first line), not half of it over all the lines."""
    world = mw.build_world(people=40, train=30, dev=5, max_sentences=1, tellings=2)
    mw.write_world(world, str(tmp_path))
    s = mw.stats(str(tmp_path))
    assert s["people"] == 80 and s["labelled"] == 40
    assert s["states_birthplace"] == sum(world.answerable) / 40 > 0.9


def test_stats_of_a_world_without_test_split(tmp_path):
    mw.write_world(mw.build_world(people=60, train=40, dev=20), str(tmp_path))
    assert read(str(tmp_path / "birth_test.tsv")) == b""
    s = mw.stats(str(tmp_path))
    assert (s["people"], s["train"], s["dev"], s["test"]) == (60, 40, 20, 0)
    assert s["names_match_lines"] == 1.0 and s["test_top"] is None


def test_stats_count_the_names_of_each_split_found_in_train(tmp_path):
    mw.write_world(mw.build_world(people=60, train=40, dev=10), str(tmp_path))
    s = mw.stats(str(tmp_path))
    assert (s["dev_names_in_train"], s["test_names_in_train"], s["duplicate_names"]) == (0, 0, 0)
    train = (tmp_path / "birth_places_train.tsv").read_text(encoding="utf-8").splitlines()
    with open(tmp_path / "birth_test.tsv", "a", encoding="utf-8") as f:
        f.write(train[0] + "\n" + train[1] + "\n")  # two train people asked again in test
    with open(tmp_path / "birth_test_inputs.tsv", "a", encoding="utf-8") as f:  # (labels of questions asked)
        f.write(train[0].split("\t")[0] + "\n" + train[1].split("\t")[0] + "\n")
    s = mw.stats(str(tmp_path))
    assert (s["dev_names_in_train"], s["test_names_in_train"], s["duplicate_names"]) == (0, 2, 2)


def test_stats_skip_blank_lines_and_name_a_line_without_a_tab(tmp_path, capsys):
    """A blank line at the end of train or dev was an IndexError in the name-lookup baseline; a line
    without a tab was counted as a row with an empty place."""
    mw.write_world(mw.build_world(people=60, train=40, dev=10), str(tmp_path))
    want = mw.stats(str(tmp_path))
    for name in ("birth_places_train.tsv", "birth_dev.tsv", "birth_test.tsv"):
        with open(tmp_path / name, "a", encoding="utf-8") as f:
            f.write("\n \n")
    assert mw.stats(str(tmp_path)) == want
    dev = tmp_path / "birth_dev.tsv"
    lines = read(str(dev)).decode("utf-8").split("\n")
    kept = lines[2]
    lines[2] = kept.replace("\t", " ")
    dev.write_text("\n".join(lines), encoding="utf-8")
    code, err = run_main(["--stats", str(tmp_path)], capsys)
    assert code == 2 and err == [f"make_world.py: error: {dev}:3: expected `question<TAB>place`, found 1 "
                                 f"tab-separated field(s) in {lines[2][:60]!r}; fix or remove that line"], err
    lines[2] = kept + "\tLondon"  # a third field: which is the place? (parse_tsv, the course's readers, refuse it too)
    dev.write_text("\n".join(lines), encoding="utf-8")
    code, err = run_main(["--stats", str(tmp_path)], capsys)
    assert code == 2 and err == [f"make_world.py: error: {dev}:3: expected `question<TAB>place`, found 3 "
                                 f"tab-separated field(s) in {lines[2][:60]!r}; fix or remove that line"], err
    lines[2] = kept.split("\t")[0] + "\t "  # the place left blank
    dev.write_text("\n".join(lines), encoding="utf-8")
    code, err = run_main(["--stats", str(tmp_path)], capsys)
    assert code == 2 and err == [f"make_world.py: error: {dev}:3: expected `question<TAB>place`, found a blank "
                                 f"question or place in {lines[2][:60]!r}; fix or remove that line"], err


# ----------------------------------------------------------------------------- hand-written lists

def test_place_list():
    ranked = ranked_places()
    names = [p.name for p in ranked]
    assert names[0] == "London" and len(names) == len(set(names)) >= 700
    assert all(p.region in REGIONS for p in ranked)
    for must in ("England", "France", "Paris"):
        assert must in names
    for name in names:
        assert name.strip() == name and not set(name) & set(".?\t\n\u25A1\u2047"), name


def test_name_pools():
    assert set(REGION_POOLS) == set(REGIONS)
    for pool in POOLS.values():
        assert pool.male and pool.female and pool.family
        for part in pool.male + pool.female + pool.family:
            for text in (part.text, part.fem_text):
                assert not set(text) & set(".?\t\n:/\u25A1\u2047"), text


def test_a_name_kept_clear_of_a_place_neither_holds_it_nor_is_part_of_it():
    """An unanswerable person's name must not hold their birthplace (a woman born in Georgia named Georgia
    Lane would state it on her own line) nor be part of it: make(avoid=...) draws again where draw would
    have given such a name."""
    import random

    from world.names import NameMaker
    region = "BRI"  # Britain's name pools

    def maker():
        return NameMaker(random.Random(3), {region: 1.0}, 0.25)
    first = maker().make(region, True)
    for avoid in (first.given, f"Port {first.full} Bay"):  # in the name; the name in it
        name = maker().make(region, True, avoid=avoid)
        assert avoid not in name.full and name.full not in avoid, (avoid, name.full)


def test_datasheet_statistics_are_current():
    with open(os.path.join(DATA, "README.md"), encoding="utf-8") as f:
        text = f.read()
    assert "```\n" + mw.format_stats([DATA], labels=["data"]) + "\n```" in text
    assert "## Calibration" in text


def test_every_module_has_a_docstring():
    import world
    import world.names
    import world.places
    import world.templates
    for module in (mw, world, world.names, world.places, world.templates):
        assert module.__doc__ and module.__doc__.strip()


# ----------------------------------------------------------------------------- bad input

SMALL = ["--people", "30", "--train", "20", "--dev", "5", "--places", "10"]


def cli(*args):
    """Run make_world.py; its exit status and the lines it printed on stderr."""
    p = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stderr.splitlines()


def run_main(args, capsys):
    """mw.main in this process: its exit status (a usage error exits) and its stderr lines."""
    try:
        code = mw.main(args)
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr().err.splitlines()


def snapshot(folder):
    """Every file of a folder (temporary ones included) with its bytes."""
    return {name: read(os.path.join(folder, name)) for name in sorted(os.listdir(folder))}


@pytest.fixture
def old_world(tmp_path):
    """A folder holding a small world (seed 1), and its files."""
    folder = tmp_path / "w"
    mw.write_world(mw.build_world(people=30, train=20, dev=5, places=10, seed=1), str(folder))
    return folder, snapshot(folder)


@pytest.mark.parametrize("args, says", [
    (["--people", "0"], "--people 0 must be at least 1"),
    (["--train", "20", "--people", "10"], "--train 20 plus --dev 500 is more than --people 10"),
    (["--max-sentences", "0"], "--max-sentences 0 must be at least 1"),
    (["--places", "0"], "--places 0 must be at least 1"),
    (["--tellings", "0"], "--tellings 0 must be at least 1"),
    (["--dev", "-1"], "--dev -1 must be at least 0"),
    (["--people", str(10 ** 12)], f"--people {10 ** 12} is more than 500,000 biographies"),
    (["--people", "100000", "--tellings", "6"], "--people 100000 times --tellings 6 is more than 500,000"),
    # more places than the generator knows made a world of 913 places without a word
    (["--places", "100000"], f"--places 100000 is more than the {len(mw.ranked_places())} places the generator "
                             f"knows; ask for fewer"),
])
def test_bad_sizes_are_one_line_errors(tmp_path, capsys, args, says):
    code, err = run_main(["--out", str(tmp_path / "w")] + args, capsys)
    assert code == 2 and len(err) == 1 and err[0].startswith(f"make_world.py: error: {says}"), err
    assert not (tmp_path / "w").exists()


def test_bad_input_from_the_command_line_is_one_line(tmp_path, old_world):
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "wiki.txt").write_bytes(b"Ana Ruiz. Born in Le\xf3n.\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "utf16").mkdir()  # an editor's "Unicode": named as the training tools name it, not as byte 0
    (tmp_path / "utf16" / "wiki.txt").write_bytes("Ana Ruiz was born in Leon.\n".encode("utf-16"))
    cases = [(["--people", "0", "--out", str(tmp_path / "x")], "--people 0 must be at least 1"),
             (["--out", str(notes)] + SMALL, f"--out {notes} is a file, not a folder"),
             (["--stats", str(tmp_path / "missing")], f"--stats {tmp_path / 'missing'}: no such folder"),
             (["--stats", str(tmp_path / "bad")], f"{tmp_path / 'bad' / 'wiki.txt'}:1: not valid UTF-8 at byte 20"),
             (["--stats", str(tmp_path / "utf16")], f"{tmp_path / 'utf16' / 'wiki.txt'}: UTF-16 text (byte-order "
                                                     f"mark FF FE), not UTF-8; save the file as UTF-8"),
             (["--stats", str(tmp_path / "empty")], f"{tmp_path / 'empty' / 'wiki.txt'}: not found")]
    for args, says in cases:
        code, err = cli(*args)
        assert code == 2 and len(err) == 1 and err[0].startswith(f"make_world.py: error: {says}"), (args, err)
    assert notes.read_text() == "mine"


def test_unwritable_out_folder_is_one_line_and_keeps_the_old_world(old_world, monkeypatch, capsys):
    folder, before = old_world

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(mw.tempfile, "mkdtemp", refuse)
    code, err = run_main(["--out", str(folder)] + SMALL, capsys)
    assert code == 2 and err == [f"make_world.py: error: {folder}: cannot write the world there (Permission "
                                 f"denied), so it is unchanged; give a folder you can write to"]
    assert snapshot(folder) == before


def fail_rename(monkeypatch, at, error, also=lambda src: False):
    """Make the `at`-th os.replace (counting from 1), and every one for which also(src) holds, raise."""
    real, calls = os.replace, []

    def replace(src, dst):
        calls.append(src)
        if len(calls) == at or also(str(src)):
            raise error
        return real(src, dst)
    monkeypatch.setattr(mw.os, "replace", replace)


@pytest.mark.parametrize("error, code, says", [
    (PermissionError(1, "Operation not permitted"), 2,
     "error: {}: cannot write the world there (Operation not permitted), so it is unchanged"),
    (KeyboardInterrupt(), 130, "interrupted; {} unchanged"),
])
def test_a_failed_rename_puts_back_the_whole_old_world(old_world, monkeypatch, capsys, error, code, says):
    folder, before = old_world
    fail_rename(monkeypatch, 3, error)  # wiki.txt and train are renamed in, then dev fails
    got, err = run_main(["--out", str(folder), "--seed", "2"] + SMALL, capsys)
    assert got == code and len(err) == 1 and err[0].startswith("make_world.py: " + says.format(folder)), err
    assert snapshot(folder) == before  # the old world, whole, and no temporary files


def test_a_failed_write_into_new_folders_leaves_none_of_them(tmp_path, monkeypatch, capsys):
    """`--out new/world` on a full disk said the folder "is unchanged" but left the folders it had made for it."""
    real_open = open

    def full(path, *args, **kwargs):
        if ".make_world." in str(path):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(mw, "open", full, raising=False)  # the module's own open, for its staged files
    out = tmp_path / "new" / "world"
    got, err = run_main(["--out", str(out)] + SMALL, capsys)
    assert got == 2 and err == [f"make_world.py: error: {out}: cannot write the world there (No space left on "
                                f"device), so it is unchanged; give a folder you can write to"], err
    assert os.listdir(tmp_path) == []
    (tmp_path / "kept").mkdir()  # a folder that was there stays, empty or not
    got, _ = run_main(["--out", str(tmp_path / "kept")] + SMALL, capsys)
    assert got == 2 and os.listdir(tmp_path) == ["kept"] and os.listdir(tmp_path / "kept") == []


def test_when_putting_back_fails_too_the_old_files_are_kept(old_world, monkeypatch):
    folder, before = old_world
    fail_rename(monkeypatch, 3, PermissionError(1, "Operation not permitted"), also=lambda src: src.endswith(".old"))
    with pytest.raises(mw.WorldError, match="putting back the old files") as e:
        mw.write_world(mw.build_world(people=30, train=20, dev=5, places=10, seed=2), str(folder))
    stage = re.search(r"they are in (.+) \(NAME\.old\)", str(e.value)).group(1)
    assert os.path.dirname(stage) == str(folder)
    assert {name: read(os.path.join(stage, name + ".old")) for name in mw.FILES + (mw.MARKER,)} == before


def test_ctrl_c_leaves_the_out_folder_as_it_was(old_world, monkeypatch, capsys):
    """Ctrl-C while the world is built: one line, exit status 130, the folder untouched (Ctrl-C
    during the renames is test_a_failed_rename_puts_back_the_whole_old_world's KeyboardInterrupt case)."""
    folder, before = old_world

    def interrupted(**kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(mw, "build_world", interrupted)
    assert mw.main(["--out", str(folder)]) == 130
    assert capsys.readouterr().err.splitlines() == [f"make_world.py: interrupted; {folder} unchanged"]
    assert snapshot(folder) == before


@pytest.mark.parametrize("at", [1, 3, 6])  # as the first rename is made, between two, as the marker's is
def test_a_ctrl_c_during_the_renames_is_held_until_the_new_world_is_whole(old_world, tmp_path, monkeypatch, capsys,
                                                                          at):
    """A Ctrl-C landing between two renames (a KeyboardInterrupt raised after one, before it was counted) left
    a world half new and half old, or the new world beside the folder of old files while main said "unchanged"
    (a helper's stress run: 90 and 164 of 400). The Ctrl-C is held: the new world, whole, then one line."""
    folder, before = old_world
    assert mw.main(["--out", str(tmp_path / "fresh"), "--seed", "2"] + SMALL) == 0  # the new world, uninterrupted
    capsys.readouterr()
    real, calls = os.replace, []

    def replace(src, dst):
        real(src, dst)
        calls.append(src)
        if len(calls) == at:
            signal.raise_signal(signal.SIGINT)  # Python's handler runs at once: a KeyboardInterrupt, unheld

    monkeypatch.setattr(mw.os, "replace", replace)
    got, err = run_main(["--out", str(folder), "--seed", "2"] + SMALL, capsys)
    assert (got, err) == (130, ["make_world.py: interrupted"])
    assert snapshot(folder) == snapshot(tmp_path / "fresh") != before  # no stage folder left either


def test_stats_of_a_one_person_world(tmp_path):
    mw.write_world(mw.build_world(people=1, train=1, dev=0), str(tmp_path))
    s = mw.stats(str(tmp_path))
    assert s["people"] == 1 and s["len_p10"] == s["len_p90"] == s["len_min"]


# ----------------------------------------------------------------------------- files make_world did not write

def refused(path):
    return (f"make_world.py: error: {path}: not a file make_world wrote (no {mw.MARKER} beside it), so it is "
            f"not replaced; move it away first, or pass --replace to overwrite it")


@pytest.fixture
def own_files(tmp_path):
    """A folder holding the user's own files under make_world's names (the course's data copied into
    data/), no record of make_world's, and a note of theirs; and its files."""
    folder = tmp_path / "data"
    folder.mkdir()
    for name in mw.FILES:
        (folder / name).write_bytes(f"the user's {name}\n".encode("utf-8"))
    (folder / "notes.txt").write_text("mine\n")
    return folder, snapshot(folder)


def test_files_make_world_did_not_write_are_refused_and_kept(own_files, monkeypatch, capsys):
    """`make_world.py --out DIR` silently replaced the five files in DIR whatever they were: the course's
    data copied into data/ was lost. Now: one line naming the first of them, exit status 2, before
    anything is written, and every file byte for byte as it was; write_world refuses them too."""
    folder, before = own_files
    code, err = run_main(["--out", str(folder)] + SMALL, capsys)
    assert code == 2 and err == [refused(folder / "wiki.txt")], err
    assert snapshot(folder) == before
    with pytest.raises(mw.WorldError,
                       match="^" + re.escape(refused(folder / "wiki.txt")[len("make_world.py: error: "):])):
        mw.write_world(mw.build_world(people=30, train=20, dev=5, places=10), str(folder))
    assert snapshot(folder) == before


def test_one_foreign_file_is_enough_to_refuse(tmp_path, capsys):
    """Only birth_dev.tsv under make_world's names (the rest absent): it is named and kept. Before, it
    was replaced."""
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "birth_dev.tsv").write_text("Where was Ann Bo born?\tOslo\n", encoding="utf-8")
    before = snapshot(folder)
    code, err = run_main(["--out", str(folder)] + SMALL, capsys)
    assert code == 2 and err == [refused(folder / "birth_dev.tsv")], err
    assert snapshot(folder) == before


def test_the_command_line_refuses_in_one_line_with_exit_status_2(own_files):
    """The real command line: exit status 2, one line on stderr, nothing on stdout. Before: exit 0,
    "wrote 30 people", and the user's files replaced."""
    folder, before = own_files
    p = subprocess.run([sys.executable, SCRIPT, "--out", str(folder)] + SMALL, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and p.stdout == "" and p.stderr.splitlines() == [refused(folder / "wiki.txt")]
    assert snapshot(folder) == before


def test_a_folder_make_world_wrote_is_replaced_and_recorded(old_world, capsys):
    """A world make_world wrote is replaced by the next one without --replace, and the record follows
    the new files (so the next run replaces them too). Before, nothing was recorded."""
    folder, before = old_world
    assert sorted(before) == sorted(mw.FILES + (mw.MARKER,))
    code, err = run_main(["--out", str(folder), "--seed", "2"] + SMALL, capsys)
    # the world replaced is said, with the command that writes it again (the demo's models stopped loading
    # after --out runs/demo/data wrote another world there, and nothing said how to get theirs back)
    assert code == 0 and err == [f"note: this replaced a world made with other arguments; params trained on it load "
                                 f"again once it is back: python {os.path.relpath(mw.__file__)} --out "
                                 f"{shlex.quote(str(folder))} --dev 5 --people 30 --places 10 --seed 1 --train 20"], err
    assert run_main(["--out", str(folder), "--seed", "2"] + SMALL, capsys) == (0, [])  # the same world: no note
    record = json.loads(read(str(folder / mw.MARKER)).decode("utf-8"))
    del record["arguments"]["tellings"], record["arguments"]["even_places"]  # as an older make_world recorded them
    (folder / mw.MARKER).write_text(json.dumps(record), encoding="utf-8")
    assert run_main(["--out", str(folder), "--seed", "2"] + SMALL, capsys) == (0, [])  # its bytes: the same world
    assert mw.flags(dict(seed=0, full_names=True, places=None, tellings=1)) == "--seed 0 --full-names"
    new = mw.world_files(mw.build_world(people=30, train=20, dev=5, places=10, seed=2))
    assert {name: read(str(folder / name)).decode("utf-8") for name in mw.FILES} == new
    recorded = json.loads(read(str(folder / mw.MARKER)).decode("utf-8"))
    assert recorded["sha256"] == {name: hashlib.sha256(text.encode("utf-8")).hexdigest() for name, text in new.items()}
    assert recorded["arguments"]["seed"] == 2 and recorded["arguments"]["people"] == 30
    assert sorted(os.listdir(folder)) == sorted(mw.FILES + (mw.MARKER,))  # no temporary folder left
    assert run_main(["--out", str(folder)] + SMALL, capsys)[0] == 0


@pytest.mark.parametrize("edit", ["append", "remove record"])
def test_a_file_edited_since_make_world_wrote_it_is_refused(old_world, capsys, edit):
    """A world make_world wrote whose dev file was then edited by hand (or whose record is gone): the
    edit is the user's work, so it is refused and kept. Before, it was replaced."""
    folder, _ = old_world
    if edit == "append":
        with open(folder / "birth_dev.tsv", "a", encoding="utf-8") as f:
            f.write("Where was Ann Bo born?\tOslo\n")
        says = (f"make_world.py: error: {folder / 'birth_dev.tsv'}: not a file make_world wrote (changed "
                f"since), so it is not replaced; move it away first, or pass --replace to overwrite it")
    else:
        (folder / mw.MARKER).unlink()
        says = refused(folder / "wiki.txt")
    before = snapshot(folder)
    code, err = run_main(["--out", str(folder), "--seed", "2"] + SMALL, capsys)
    assert code == 2 and err == [says], err
    assert snapshot(folder) == before


def test_an_unreadable_record_refuses_and_says_so(old_world, capsys):
    """A damaged .make_world.json records nothing: the files are refused, and the message says why."""
    folder, _ = old_world
    (folder / mw.MARKER).write_text("{not json", encoding="utf-8")
    before = snapshot(folder)
    code, err = run_main(["--out", str(folder)] + SMALL, capsys)
    assert code == 2 and len(err) == 1 and f"({mw.MARKER} beside it cannot be read)" in err[0], err
    assert snapshot(folder) == before


def test_replace_overwrites_files_make_world_did_not_write(own_files, capsys):
    """--replace (write_world's replace=True) overwrites them, and records the new files; files of other
    names stay. Before, --replace was an unknown option."""
    folder, before = own_files
    code, err = run_main(["--out", str(folder), "--replace"] + SMALL, capsys)
    assert code == 0 and err == []
    world = mw.build_world(people=30, train=20, dev=5, places=10)
    assert {name: read(str(folder / name)).decode("utf-8") for name in mw.FILES} == mw.world_files(world)
    assert read(str(folder / "notes.txt")) == before["notes.txt"]
    mw.check_replaceable(str(folder))  # recorded: the next run replaces them without --replace
    (folder / "wiki.txt").write_text("mine again\n", encoding="utf-8")
    mw.write_world(mw.build_world(people=30, train=20, dev=5, places=10, seed=3), str(folder), replace=True)
    assert read(str(folder / "wiki.txt")) != b"mine again\n"
    assert "--replace" in mw.__doc__


# ----------------------------------------------------------------------------- the London baseline on a world

def london(args, capsys):
    """src/london_baseline.py's command line in this process: exit status, stdout, stderr lines."""
    import london_baseline
    from submission.utils import run_cli
    try:
        code = run_cli(lambda: london_baseline.main(args)) or 0
    except SystemExit as e:
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err.splitlines()


def test_london_baseline_prints_the_course_line(capsys):
    path = os.path.join(DATA, "birth_dev.tsv")
    places = [line.split("\t")[1] for line in read(path).decode("utf-8").splitlines() if line]
    n, right = len(places), places.count("London")
    code, out, err = london([path], capsys)
    assert code == 0 and err == []
    assert out == f"Correct: {float(right)} out of {float(n)}: {right / n * 100}%\n"  # the course's format
    assert london([], capsys) == (0, out, [])  # CS224N's takes no argument: the embedded dev set
    import london_baseline
    assert london_baseline.DEV == os.path.join(DATA, "birth_dev.tsv")  # as a missing file's message names it
    code, out, _ = london(["--help"], capsys)
    assert code == 0 and "EVAL_TSV" in out
    assert "predicting London for every question." in " ".join(out.split())  # the whole first sentence


@pytest.mark.parametrize("text, says", [
    ("", "{}: no `question<TAB>place` lines"),
    ("\n\n", "{}: no `question<TAB>place` lines"),
    (" \tLondon\n", "{}:1: "),
    ("Where was Ana Ruiz born?\tLondon\nWhere was Tom Oduya born?\t \n", "{}:2: "),
])
def test_london_baseline_explains_bad_files_in_one_line(tmp_path, capsys, text, says):
    path = tmp_path / "dev.tsv"
    path.write_text(text, encoding="utf-8")
    code, out, err = london([str(path)], capsys)
    assert code == 2 and out == "" and len(err) == 1 and err[0].startswith("error: " + says.format(path)), err


@pytest.mark.parametrize("text, says", [
    ("\ufeff\nWhere was Ana Ruiz born?\tLondon\nWhere was Tom Oduya born?\tParis\n", "Correct: 1.0 out of 2.0: 50.0%"),
    ("\ufeffWhere was Ana Ruiz born?\tLondon \r\n\r\n", "Correct: 1.0 out of 1.0: 100.0%"),
    ("\ufeff\n\n", "error: {}: no `question<TAB>place` lines"),
    ("\ufeff\nWhere was Ana Ruiz born?\n", "error: {}: questions without places (a test-inputs file)"),
])
def test_london_baseline_reads_a_file_with_a_byte_order_mark(tmp_path, capsys, text, says):
    """A byte-order mark then a blank line: evaluate_places read the mark as a question without a place,
    returned (0, 0), and the percentage was a ZeroDivisionError traceback."""
    path = tmp_path / "dev.tsv"
    path.write_bytes(text.encode("utf-8"))
    code, out, err = london([str(path)], capsys)
    if says.startswith("Correct"):
        assert code == 0 and out == says + "\n" and err == []
    else:
        assert code == 2 and out == "" and len(err) == 1 and err[0].startswith(says.format(path)), err


def test_london_baseline_usage_errors_are_one_line(tmp_path, capsys):
    for args, says in ((["a.tsv", "b.tsv"], "unrecognized arguments: b.tsv"),
                       ([str(tmp_path / "none.tsv")], "not found")):
        code, out, err = london(args, capsys)
        assert code == 2 and len(err) == 1 and says in err[0], err


def test_a_world_beyond_the_name_pools_is_a_one_line_error(monkeypatch):
    """NameMaker's RuntimeError (no fresh name in 200 draws) was a traceback."""
    made = []

    def make(self, region, female, avoid=None):
        if len(made) == 3:
            raise RuntimeError("could not draw a fresh name; the pools are too small for this world")
        made.append(region)
        return original(self, region, female, avoid)

    original = mw.NameMaker.make
    monkeypatch.setattr(mw.NameMaker, "make", make)
    with pytest.raises(mw.WorldError, match=r"^the name pools ran out of fresh names at person 4 of 30; ask for fewer"):
        mw.build_world(people=30, train=20, dev=5, places=10, seed=1)


def test_files_equal_to_the_world_about_to_be_written_are_no_loss(tmp_path, capsys):
    """data/'s files copied without the dotfile record (`cp data/* X`), or checked out with Windows line
    ends, were refused though replacing them loses nothing: the same bytes (up to CRLF) are written."""
    copy, crlf = tmp_path / "copy", tmp_path / "crlf"
    copy.mkdir()
    crlf.mkdir()
    world = mw.build_world(people=30, train=20, dev=5, places=10)
    for name, text in mw.world_files(world).items():
        (copy / name).write_bytes(text.encode("utf-8"))
        (crlf / name).write_bytes(text.replace("\n", "\r\n").encode("utf-8"))
    for folder in (copy, crlf):
        code, err = run_main(["--out", str(folder), "--people", "30", "--train", "20", "--dev", "5", "--places", "10"],
                             capsys)
        assert code == 0 and err == [], err
        assert (folder / mw.MARKER).is_file() and b"\r" not in (folder / "wiki.txt").read_bytes()
    (copy / "wiki.txt").write_text("mine\n", encoding="utf-8")  # changed since the record: refused again
    code, err = run_main(["--out", str(copy), "--people", "30", "--train", "20", "--dev", "5", "--places", "10"],
                         capsys)
    assert code == 2 and "wiki.txt: not a file make_world wrote (changed since)" in err[0], err


def test_stats_to_a_stream_without_the_corpus_characters_gets_escapes(tmp_path):
    """`make_world.py --stats DIR > out.txt` on Windows (a cp1252 stdout) ended in a UnicodeEncodeError
    traceback at a row's character the stream lacks; escapes now, as the other scripts write them."""
    (tmp_path / "wiki.txt").write_text("Ada Quill was born in Lisbon.\n", encoding="utf-8")
    for name in ("birth_places_train.tsv", "birth_dev.tsv"):
        (tmp_path / name).write_text("Where was Ada Quill born?\t\u0141\u00f3d\u017a\n", encoding="utf-8")
    (tmp_path / "birth_test_inputs.tsv").write_text("Where was Ada Quill born?\n", encoding="utf-8")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "src", "make_world.py"), "--stats", str(tmp_path)],
                       capture_output=True, env=dict(os.environ, PYTHONIOENCODING="cp1252"), timeout=120)
    assert p.returncode == 0 and b"Traceback" not in p.stderr, p.stderr[-500:]
    assert b"\\u0141" in p.stdout


def test_stats_ignore_test_labels_of_other_questions_than_the_test_inputs(tmp_path):
    """The course's four files copied over a world (into data/, through src/data/) leave its birth_test.tsv
    behind: its labels are of other people, and the test split's statistics were counted from them."""
    mw.write_world(mw.build_world(people=60, train=40, dev=10), str(tmp_path / "old"))
    mw.write_world(mw.build_world(people=60, train=40, dev=10, seed=7), str(tmp_path / "new"))
    for name in ("wiki.txt", "birth_places_train.tsv", "birth_dev.tsv", "birth_test_inputs.tsv"):
        shutil.copyfile(tmp_path / "new" / name, tmp_path / "old" / name)
    os.remove(tmp_path / "new" / "birth_test.tsv")
    assert mw.stats(str(tmp_path / "old")) == mw.stats(str(tmp_path / "new"))


def test_stats_count_test_labels_only_while_they_label_every_question_asked(tmp_path):
    """birth_test.tsv labels the test split only while it asks each of birth_test_inputs.tsv's questions: one
    question changed, or one asked beyond its lines, and the split is counted as asked, unlabelled (one appended
    question kept the labels: its count was the labels' lines). An inputs line with a tab after its question (run.py
    reads the field before it) asks the same question."""
    mw.write_world(mw.build_world(people=60, train=40, dev=10), str(tmp_path))
    labelled = mw.stats(str(tmp_path))
    inputs, labels = tmp_path / "birth_test_inputs.tsv", tmp_path / "birth_test.tsv"
    asked = inputs.read_text(encoding="utf-8").splitlines()
    inputs.write_text("".join(q + "\t\n" for q in asked), encoding="utf-8")
    assert mw.stats(str(tmp_path)) == labelled

    def as_asked(questions):
        """stats of `questions` asked, with and without birth_test.tsv beside them."""
        inputs.write_text("".join(q + "\n" for q in questions), encoding="utf-8")
        with_labels = mw.stats(str(tmp_path))
        os.rename(labels, tmp_path / "labels.tsv")
        try:
            return with_labels, mw.stats(str(tmp_path))
        finally:
            os.rename(tmp_path / "labels.tsv", labels)

    for questions in (["Where was Zed Quux born?"] + asked[1:], asked + ["Where was Zed Quux born?"]):
        with_labels, without = as_asked(questions)
        assert with_labels == without and with_labels["test"] == len(questions)
        assert with_labels["labelled"] == labelled["labelled"] - labelled["test"]


def test_stats_read_questions_and_places_as_the_grader_and_the_evaluation_read_them(tmp_path):
    """birth_test.tsv labels the test questions only while it asks what birth_test_inputs.tsv asks; the inputs'
    questions were read without the spaces around them and the labels' with them, so labels whose questions had
    a space around them were set aside as of other questions, where the grader (check_labels_match_inputs,
    which strips both) grades with them. A place is read as the evaluation scores it, without the spaces (or a
    CRLF file's carriage return) that end its line."""
    mw.write_world(mw.build_world(people=60, train=40, dev=10), str(tmp_path))
    want = mw.stats(str(tmp_path))
    assert want["test"] == 10 and want["test_top"] is not None  # the test questions labelled
    for name in ("birth_places_train.tsv", "birth_dev.tsv", "birth_test.tsv"):
        path = tmp_path / name
        lines = path.read_text(encoding="utf-8").splitlines()
        spaced = [f" {q}  \t{p} " if i % 2 else f"{q} \t{p}\r" for i, (q, p) in
                  enumerate(line.split("\t") for line in lines)]
        path.write_bytes(("\n".join(spaced) + "\n").encode("utf-8"))
    assert mw.stats(str(tmp_path)) == want


def test_the_statistics_count_a_question_of_another_form_as_itself():
    """make_world's statistics count people by the NAME of the course's question; a question of another form (a
    hand-made split's "Who is Ann?") stands for itself, read without its spaces, not for one shared nobody."""
    assert mw._asked(" Where was Ann Bo born? \tParis") == "Ann Bo"
    assert mw._asked(" Who is Ann Bo? \tParis") == "Who is Ann Bo?" and mw._asked("Who is Cy?") == "Who is Cy?"

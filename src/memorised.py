"""How much a pretrained model stored: the share of birthplaces it reproduces from the biographies.

Finetuning can only route a question to what pretraining wrote into the weights (handout part 2(a)).
This measures that store directly, before any finetuning: for each labelled person whose wiki line
states the birthplace, the line is cut just before the place's first occurrence that is not part of
the person's own name (the NAME of "Where was NAME born?"), and the model continues it greedily
(`decoding.sample_cached`, the same greedy choice as `sample`). The person counts as memorised when the
continuation names the place: it spells the place, the character after it does not go on with a word (a
letter or digit), and it does not spell a longer place of the files that starts with this one ("Mexico City"
is no answer of "Mexico", nor "Indianapolis" of "India"); so each continuation runs one character past the
longest place it could be. A place inside the name ("Ann of Lund. Ann of Lund, born at Lund")
would be answered by copying the name, so the cut passes over such occurrences to the next one, as it
passes over one that starts the line (there is nothing before it to continue). Only places that end
within the span-corruption truncation limit (int(block_size * 7/8) characters) count: later text is
never seen in pretraining. The occurrence cut at may be a mention of the place in another role, so this
is a slight under-estimate on lines that name the place twice.

    python src/memorised.py --params src/submission/vanilla.pretrain.params   # variant, size and corpus from
                                           # the params and their card; --data-dir, --n_layer ... to override

Wiki line i is train row i, then dev (the course's layout), so both splits are probed; it prints
`memorised (train): X of Y (Z%)`, then the same for dev and all, and which people were probed.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from make_world import asked_name  # noqa: E402
from modelflags import add_model_flags, check_model_flags, note_other_corpus, settings_from_params  # noqa: E402
from oneline import OneLineParser  # noqa: E402
from startup import interruptible_start  # noqa: E402

with interruptible_start("memorised.py"):  # torch loads here
    import torch
    from submission.dataset import CharCorruptionDataset, DataError, parse_tsv, read_text
    from submission.threads import denormals_flushed
    from submission.utils import get_device, load_params, run_cli, sample_cached


SPLITS = (("train", "birth_places_train.tsv"), ("dev", "birth_dev.tsv"))  # the labelled files, in wiki.txt's order


def read_limit(block_size):
    """How many characters of a wiki line pretraining reads: span corruption's truncation cap."""
    return int(block_size * 7 / 8)


def cut_at(line, place, name=""):
    """Where the probe cuts `line`: the offset of the first occurrence of `place` that neither starts the line
    (nothing before it to continue) nor overlaps an occurrence of `name`, the person's own name, which the
    model could copy rather than recall; -1 when there is none."""
    names, n = [], line.find(name) if name else -1
    while n != -1:
        names.append(n)
        n = line.find(name, n + 1)
    at = line.find(place, 1)
    while at != -1 and any(n < at + len(place) and at < n + len(name) for n in names):
        at = line.find(place, at + 1)
    return at


def probes(wiki_lines, rows, block_size):
    """(row index, prefix, place) for every row whose wiki line states its place early enough, the prefix cut
    where `cut_at` says.

    `rows` are (question, place, ...) tuples aligned with `wiki_lines` (row i is about line i); a question of
    the course's form names the person, whose name `cut_at` passes over.
    """
    limit = read_limit(block_size)
    out = []
    for i, (question, place, *_) in enumerate(rows):
        if i >= len(wiki_lines) or not place:
            continue
        name = asked_name(question) or ""
        # only the part pretraining reads, with any name that overlaps its end: cut_at's search is quadratic in
        # the occurrences of the name and the place (a long line naming both thousands of times took minutes)
        at = cut_at(wiki_lines[i][:limit + len(name)], place, name)
        if at > 0 and at + len(place) <= limit:
            out.append((i, wiki_lines[i][:at], place))
    return out


def split_probes(data_dir, wiki, block_size):
    """[(split name, rows, `probes` of those rows)] for train, then dev: each split's rows against its own
    wiki lines (train row i is line i, dev row i line len(train) + i)."""
    out, offset = [], 0
    for name, rows in splits(data_dir, wiki):
        out.append((name, rows, probes(wiki[offset:offset + len(rows)], rows, block_size)))
        offset += len(rows)
    return out


def names_place(said, place, places=()):
    """Whether the continuation `said` names `place`: it starts with it, the character after it (if any) is no
    letter or digit, and no longer place of `places` that starts with `place` is named as well."""
    def names(p):
        return said.startswith(p) and not said[len(p):len(p) + 1].isalnum()
    return names(place) and not any(len(p) > len(place) and p.startswith(place) and names(p) for p in places)


def reach(place, places=()):
    """How many characters a continuation needs to tell `place` apart (`names_place`): one past the longest of
    `place` and the places of `places` that start with it."""
    return max([len(place)] + [len(p) for p in places if p.startswith(place)]) + 1


def memorised(model, items, stoi, itos, batch_size=256, places=()):
    """Which of `items` ((row, prefix, place) from `probes`) the model continues with the place (`names_place`,
    the longer places among `places` and the items' own told apart): a list of booleans."""
    places = set(places) | {place for _, _, place in items}
    said = continuations(model, items, stoi, itos, batch_size, places)
    return [names_place(s, place, places) for s, (_, _, place) in zip(said, items)]


@torch.no_grad()
def continuations(model, items, stoi, itos, batch_size=256, places=()):
    """The model's greedy continuation of each of `items`' prefixes ((row, prefix, place) from `probes`), `reach`
    characters long: one past its place, or past the longest place of `places` that starts with it. Prefixes of
    equal length and equal reach decode together."""
    device = next(model.parameters()).device
    model.eval()
    said = [""] * len(items)
    groups = {}
    for k, (_, prefix, place) in enumerate(items):
        groups.setdefault((len(prefix), reach(place, places)), []).append(k)
    for (_, n), ks in sorted(groups.items()):
        for s in range(0, len(ks), batch_size):
            chunk = ks[s:s + batch_size]
            x = torch.tensor([[stoi[c] for c in items[k][1]] for k in chunk], dtype=torch.long, device=device)  # (b, t)
            out = sample_cached(model, x, n)[:, x.size(1):].tolist()  # (b, n): the continuations
            for k, ids in zip(chunk, out):
                said[k] = "".join(itos[t] for t in ids)
    return said


def splits(data_dir, wiki):
    """[(split name, rows)] of a corpus folder: train, then dev, as (question, place, line number); a DataError
    unless the rows follow the course's layout against `wiki` (wiki.txt's lines), which the probes take for
    granted: the person of the course's question on row i is named on wiki line i (train, then dev)."""
    out, offset = [], 0
    for name, fname in SPLITS:
        path = os.path.join(data_dir, fname)
        rows = parse_tsv(read_text(path, f"{name} corpus"), path)
        if not rows:
            raise DataError(f"{path}: no questions, so no birthplace to probe; give a --data-dir whose "
                            f"{fname} has the labelled questions")
        for i, (q, _, line) in enumerate(rows):
            who = asked_name(q)
            if who and (offset + i >= len(wiki) or who not in wiki[offset + i]):
                raise DataError(f"{path}:{line}: {who} is not on wiki.txt line {offset + i + 1}, as the course's "
                                f"layout has it (wiki line i is train row i, then the dev rows); memorised needs "
                                f"the corpus the model was pretrained on, in that layout")
        out.append((name, rows))
        offset += len(rows)
    return out


def read_corpus(data_dir, block_size):
    """(wiki.txt's lines, its CharCorruptionDataset: the vocabulary) of a corpus folder, read once."""
    wiki_path = os.path.join(data_dir, "wiki.txt")
    text = read_text(wiki_path, "pretraining corpus")
    return text.split("\n"), CharCorruptionDataset(text, block_size, wiki_path)


def memorised_rows(model, data_dir, block_size=128, corpus=None):
    """{split: (indices of the rows whose place the model reproduces, rows probed)} for train and dev,
    the model's vocabulary from data_dir/wiki.txt (`corpus`: `read_corpus`'s result, if already read).
    Indices count from 0 within each split's TSV."""
    wiki, ds = corpus or read_corpus(data_dir, block_size)
    result = {}
    probed = split_probes(data_dir, wiki, block_size)
    places = {place for _, rows, _ in probed for _, place, _ in rows}  # every labelled place: longer ones told apart
    for name, _, items in probed:
        items = [it for it in items if all(c in ds.stoi for c in it[1] + it[2])]
        hits = memorised(model, items, ds.stoi, ds.itos, places=places)
        result[name] = ([row for (row, _, _), hit in zip(items, hits) if hit], len(items))
    return result


def counts(rows):
    """`memorised_rows`'s result as {split: (hits, probed)}, plus "all"."""
    result = {name: (len(hit), n) for name, (hit, n) in rows.items()}
    result["all"] = (sum(h for h, _ in result.values()), sum(n for _, n in result.values()))
    return result


def rows_for_params(params, data_dir, args):
    """`memorised_rows` for a params file; `args` has variant, n_layer, n_head, n_embd, block_size
    (run.py's names)."""
    import run as driver
    corpus = read_corpus(data_dir, args.block_size)
    model = driver.build_model(args, corpus[1])
    load_params(model, params, variant_flag="--variant ", corpus_flag="--data-dir (the folder of the wiki.txt)",
                itos=corpus[1].itos)
    return memorised_rows(model.to(get_device()), data_dir, args.block_size, corpus)


def format_report(result, block_size=None):
    """`memorised (split): hits of probed (share)` a line; with `block_size`, a last line saying which people
    are probed (why a split of 60 people may probe 57)."""
    lines = [f"memorised ({name}): {h} of {n} ({(h / n if n else 0):.1%})" for name, (h, n) in result.items()]
    if block_size is not None:
        lines.append(f"(probed: the people whose wiki line names their birthplace, ending within its first "
                     f"{read_limit(block_size)} characters; pretraining reads no further)")
    return "\n".join(lines)


def main(argv=None):
    p = OneLineParser(description="Share of birthplaces a pretrained model reproduces from the biographies.")
    p.add_argument("--params", required=True, help="pretrained params file (finetuned ones are measured too, with a "
                                                   "note: not what pretraining stored)")
    p.add_argument("--variant", choices=["vanilla", "synthesizer"], default=None, help="default: the --params file's")
    p.add_argument("--data-dir", default=None,
                   help="folder with wiki.txt, birth_places_train.tsv, birth_dev.tsv; default: of the one beside "
                        "--params named data/ (the demo's world) and data/, the first whose wiki.txt the params "
                        "were pretrained on (their card says), else the first of their vocabulary, else data/")
    add_model_flags(p, from_params=True)
    args = p.parse_args(argv)
    shape = settings_from_params(p, args, os.path.join(HERE, "..", "data"))
    check_model_flags(p, args)
    if shape.get("function") == "finetune":  # the demo's memorised column, ask --pretrained: the pretrained params
        # (whether from pretrained params or from none, the card does not always say: no word on a store they kept)
        print(f"note: {args.params} were finetuned (their card says): the shares below are what the finetuned "
              f"weights complete, not what pretraining stored; give the pretrained params (run.py --function=pretrain "
              f"wrote them) for that", file=sys.stderr)
    result = counts(rows_for_params(args.params, args.data_dir, args))
    wiki = os.path.join(args.data_dir, "wiki.txt")  # said once they loaded (a corpus of other characters is an error)
    note_other_corpus(args.params, wiki, f"the probes cut the biographies of {wiki}, which they never read, so the "
                                         f"shares below say nothing of what they stored; give --data-dir the folder "
                                         f"whose wiki.txt they were pretrained on")
    print(format_report(result, args.block_size))
    return result


if __name__ == "__main__":
    with denormals_flushed():  # as run.py computes (threads.denormals_flushed)
        run_cli(main)

"""Ask a trained model where someone was born, and see how sure it is.

The course's evaluation keeps one greedy answer per question. This prints it beside the probability
the model gives each birthplace it could have answered: for a question q, the probability of the
completion "place⁇" after "q⁇" (the product of the model's probabilities of its characters, the
terms of finetuning's loss), for every place of the finetuning data. A model without pretraining
can only spread its probability over the places it saw often; a pretrained one that stored the
person's birthplace can put it on that place (handout part 2(a)). With --complete, each text is
continued as the pretraining corpus reads, without a MASK, so a pretrained model's store can be
probed directly: "Emily Lee was born in ". With --pretrained, the params the finetuned ones started from
are probed too, as memorised.py probes them (the person's biography cut before the birthplace): a wrong
answer then reads as not stored by pretraining, or stored but not retrieved by the question.

    ./run.sh ask --params src/submission/vanilla.finetune.params "Where was Emily Lee born?"
    ./run.sh ask --params src/submission/vanilla.finetune.params "Emily Lee"   # a name: the question
    ./run.sh ask --params src/submission/vanilla.finetune.params < questions.txt  # one a line
    ./run.sh ask --params src/submission/vanilla.finetune.params < data/birth_dev.tsv  # checked: right or wrong
    ./run.sh ask --params src/submission/vanilla.pretrain.params --complete "Emily Lee was born in "
    ./run.sh ask --params src/submission/vanilla.finetune.params \
        --pretrained src/submission/vanilla.pretrain.params < data/birth_dev.tsv   # stored? retrieved?

The vocabulary and the places come from --data-dir (wiki.txt, birth_places_train.tsv); a question
found in its train or dev TSV is shown with the place that file gives. A question that more than one row
asks (a train name that a dev person has too, a person asked twice) is checked against the first, train
before dev, and each other row follows on an "also asked by" line, with its own probe under --pretrained.
Questions read from standard input end with a tally of the answers checked, when more than one was; a note on
stderr comes before it when the card of --params records a pretraining corpus of other bytes than --data-dir's
wiki.txt, as run.py's evaluation notes it.
A text may be a TSV line, question<TAB>place (fields after the place ignored): the question is asked as
run.py's evaluation reads it (spaces and all; a name is asked the course's question) and its answer
checked against that place rather than the files'; with --complete, a tab is a character of the text.
A line without a tab is a question as typed, asked without its line end: run.py's evaluation of a file of
questions alone (birth_test_inputs.tsv) keeps each line's newline before the MASK, as the course's does, so the
model reads another prompt there and some answers differ from the .test.predictions (data/README.md measures
the accuracy both ways); run.py --function evaluate gives those.
With no texts on the command line, texts are read from standard input, one a line, with a prompt
when it is a terminal. Standard input must be UTF-8 (a leading byte-order mark is dropped, as the
data readers drop it); other bytes end the reading with one line naming where they are.
"""
import os
import sys
import unicodedata
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATA = os.path.join(HERE, "..", "data")
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from modelflags import add_model_flags, check_model_flags, note_other_corpus, settings_from_params  # noqa: E402
from oneline import OneLineParser, utf16  # noqa: E402
from startup import interruptible_start  # noqa: E402

with interruptible_start("ask.py"):  # torch loads here
    import torch
    import memorised
    from submission.dataset import MASK_CHAR, PAD_CHAR, CharCorruptionDataset, DataError, parse_tsv, read_text
    from submission.decoding import log_probs, longest_input
    from submission.threads import denormals_flushed
    from submission.utils import get_device, load_params, predict_places, run_cli, same_place, sample_cached


class AskError(ValueError):
    """One text the model cannot be asked; the message says why and what to change. The other texts
    are still answered."""


class NotUTF8(ValueError):
    """Standard input is not UTF-8 text; the message says where. No later line is read."""


def as_question(text):
    """The course's question for a name ("Emily Lee" -> "Where was Emily Lee born?"); a text ending
    in "?" or beginning "Where was " is a question already and stays as it is, but for the course's
    question typed without its "?" (or with "." or "!" for it), which gets it back (not "Where was Where
    was Emily Lee born born?")."""
    text = text.strip()
    if not is_question(text):
        return f"Where was {text} born?"
    if text.endswith("?"):
        return text
    bare = text.rstrip(".!")  # "Where was ..." typed otherwise: kept as typed, but for the course's question
    return bare + "?" if bare.lower().endswith(" born") else text  # ending without its "?"


def is_question(text):
    """Whether as_question takes `text` for a question already (not a name to wrap in the course's question)."""
    text = text.strip()
    return text.endswith("?") or text.lower().startswith("where was ")


def read_places(data_dir):
    """The distinct birthplaces of data_dir/birth_places_train.tsv, the most frequent first."""
    path = os.path.join(data_dir, "birth_places_train.tsv")
    rows = parse_tsv(read_text(path, "finetuning corpus"), path)
    if not rows:
        raise DataError(f"{path}: no questions, so no places to score; give a --data-dir whose "
                        f"birth_places_train.tsv has the finetuning questions")
    return [place for place, _ in Counter(p for _, p, _ in rows).most_common()]


def question_key(question):
    """A question as read_known files it: case and runs of spaces do not tell two questions apart, so
    "where was emily  lee born?" finds the file's "Where was Emily Lee born?"."""
    return " ".join(question.split()).casefold()


def read_known(data_dir):
    """{question_key(question): [(file name, line number, place, the question as the file spells it)]} of
    the labelled TSVs in data_dir that exist: every row that asks the question, train's before dev's, each
    file's in its order (the same name may be two people, or one person asked twice)."""
    known = {}
    for _, name in memorised.SPLITS:
        path = os.path.join(data_dir, name)
        if os.path.isfile(path):
            for q, place, line in parse_tsv(read_text(path, name), path):
                known.setdefault(question_key(q), []).append((name, line, place.rstrip(), q))  # as evaluate_places
    return known


def check_sentinels(text, what="the text"):
    """An AskError for a text holding MASK or PAD, which the model reads as markers, not as characters
    of a question; `what` names it in the message (plots.py's attention maps check theirs here too)."""
    for special, name in ((MASK_CHAR, "MASK"), (PAD_CHAR, "PAD")):
        if special in text:
            raise AskError(f"{what} holds the {name} character {special!r}, which the model reads as a "
                           f"sentinel; leave it out")


def composed_if_known(text, stoi):
    """`text` in its composed form (Unicode NFC) where that form is all in the vocabulary `stoi` and the text as
    given is not: an accent typed or pasted apart from its letter (a Mac's terminal, a PDF: Unicode NFD) is read
    as the letter it belongs to, the way the corpus stores it. Else `text` as it is (plots.py's maps use it too)."""
    if all(c in stoi for c in text):
        return text
    nfc = unicodedata.normalize("NFC", text)
    return nfc if all(c in stoi for c in nfc) else text


def check_text(text, stoi, room, what="the text", corpus="wiki.txt"):
    """An AskError for a text the model cannot read: holding a sentinel or a character outside the
    vocabulary (of `corpus`, the pretraining corpus's path), or longer than `room` characters; `what` names it in
    the message."""
    check_sentinels(text, what)
    bad = list(dict.fromkeys(c for c in text if c not in stoi))  # each once, in the order typed
    if bad:
        raise AskError(f"characters outside the vocabulary of {corpus}: {''.join(bad)!r}; use other "
                       f"characters, or the --data-dir the params were trained with")
    if len(text) > room:
        raise AskError(f"{what} is {len(text)} characters; with the longest place it must fit in the block, "
                       f"so at most {room}: shorten it")


class Asker:
    """A model, its vocabulary and the places to score: `ask(text)` answers one text."""

    def __init__(self, model, vocab, places, known=None, complete=False, chars=40, store=None, corpus="wiki.txt"):
        self.model, self.vocab, self.complete, self.chars, self.store = model, vocab, complete, chars, store
        self.corpus = corpus  # the pretraining corpus the vocabulary is read from, as messages name it
        self.known = known or {}
        files = {row[0] for rows in self.known.values() for row in rows}
        self.looked_in = [name for _, name in memorised.SPLITS if name in files]  # the labelled files that were read
        self.places = [p for p in places if all(c in vocab.stoi for c in p)]
        self.left_out = len(places) - len(self.places)
        if not self.places:
            raise DataError("no place of birth_places_train.tsv is spelled in wiki.txt's vocabulary; "
                           "give the --data-dir the params were trained with")
        end = "" if complete else MASK_CHAR  # a question's prompt and answers end with the MASK
        self._end = end
        self._continuations = [[vocab.stoi[c] for c in p + end] for p in self.places]
        longest = max(len(c) for c in self._continuations)
        self.width = longest_input(model)
        self.room = self.width + 1 - longest - len(end)  # the text, its MASK and c[:-1] fit in the input

    def ask(self, text, source=("the text", None)):
        """{"prompt", "answer", "probabilities": [(place, p)] most likely first, "known": (file, line,
        place, question) or None, "also": [((file, line, place, question), stored)] of the other rows asking
        it, "stored": the probe of the known row, when there is a store} for a question, a name (asked as
        the course's question) or, with --complete, the start of a sentence. A question may be a TSV line,
        question<TAB>place: its place is the known one, labelled `source`, (name, line number or None),
        where the line is from, and the row probed is the first that asks it with that place."""
        given = None
        if not self.complete and "\t" in text:  # a line of the course's TSVs: question<TAB>place
            fields = text.rstrip("\r\n").split("\t")
            if len(fields) != 2:  # as run.py refuses it in a TSV: which field is the place is not known
                raise AskError(f"expected question<TAB>place, found {len(fields)} tab-separated fields")
            text, given = fields
            given = composed_if_known(given.rstrip(), self.vocab.stoi)  # as evaluate_places reads a place
        text = composed_if_known(text, self.vocab.stoi)
        if not text.strip():
            raise AskError("an empty text; give a question, a name, or with --complete the start of a sentence")
        if self.complete:
            text = text.strip("\r\n")
        elif given is None or not is_question(text):  # a name, on its own or in a TSV line: the course's question
            text = as_question(text)
        # else a TSV line's question, asked as run.py's evaluation reads the field: spaces around it are characters
        # the model reads ("Where was Emily Lee born? " can answer otherwise), so the tally is the evaluation's
        check_text(text, self.vocab.stoi, self.room, "the text" if self.complete else f"the question {text!r}",
                   self.corpus)
        stoi, itos = self.vocab.stoi, self.vocab.itos
        if self.complete:
            x = torch.tensor([[stoi[c] for c in text]], dtype=torch.long, device=next(self.model.parameters()).device)
            steps = min(self.chars, self.model.get_block_size() - len(text))
            out = sample_cached(self.model, x, steps)[0, len(text):].tolist()  # (1, t + steps) -> (steps,)
            written = "".join(itos[t] for t in out)
            answer = written.split(MASK_CHAR)[0].split("\n")[0]
            stop = written[len(answer):len(answer) + 1]  # what ended it: MASK_CHAR, a newline, or "" (the limit)
            known, also, probed = None, [], None
        else:
            answer, stop = predict_places(self.model, [text], stoi, itos)[0], None
            rows = self.known.get(question_key(text), [])
            if given:  # the line's own place counts over the files', and the person probed is one of that place
                known, also = source + (given, text), []
                probed = next((row for row in rows if row[2] == given), None)
            else:  # checked against the first row; the others asking it (the same name, or person) follow it
                known, also = (rows[0], rows[1:]) if rows else (None, [])
                probed = known
        places, continuations = list(self.places), list(self._continuations)
        prompt = [stoi[c] for c in text + self._end]
        for extra in ([] if self.complete else [answer] + ([known[2]] if known else [])):
            # the answer and the file's place are scored too, when they are not among the places and fit
            spelled = all(c in stoi for c in extra)
            if extra and extra not in places and spelled and len(prompt) + len(extra) <= self.width:
                ids = [stoi[c] for c in extra + self._end]
                places.append(extra)
                continuations.append(ids)
        lp = log_probs(self.model, prompt, continuations)
        order = torch.argsort(lp, descending=True, stable=True).tolist()
        probs = lp.exp().tolist()
        stored = None  # not asked; () asked, but the person cannot be probed
        if self.store and known:
            stored = (probed and self.store.probe(probed)) or ()
        also = [(row, (self.store.probe(row) or ()) if self.store else None) for row in also]
        return {"prompt": text, "answer": answer, "stop": stop, "known": known, "also": also,
                "extra": places[len(self.places):], "stored": stored, "complete": self.complete,
                "trained": bool(probed) and probed[0] == TRAIN_FILE,
                "looked_in": self.looked_in, "probabilities": [(places[i], probs[i]) for i in order]}


class Store:
    """What a pretrained model stored, person by person: memorised.py's probe of one question. The person's
    wiki line (row i of train, then dev: the course's layout) is cut before the birthplace's first mention
    outside the person's own name (`memorised.cut_at`), and the model continues it greedily a character past the
    place (or past the longest place of the files that starts with it); the place is stored when the
    continuation names it (`memorised.names_place`)."""

    def __init__(self, model, vocab, data_dir, block_size):
        self.model, self.vocab = model, vocab
        wiki, _ = memorised.read_corpus(data_dir, block_size)
        # (file name, line number) -> memorised.probes' (row, prefix, place): by row, not by question, as rows
        # may ask the same question (the course's corpus has a dev person named as a train person, and train
        # people asked twice), each row with its own wiki line
        files = dict(memorised.SPLITS)
        self.items = {}
        probed = memorised.split_probes(data_dir, wiki, block_size)
        self.places = {place for _, rows, _ in probed for _, place, _ in rows}  # as memorised_rows tells them apart
        for split, rows, items in probed:
            for item in items:
                self.items[files[split], rows[item[0]][2]] = item

    def probe(self, row):
        """(prefix, continuation, stored) for `row`, a row of the train or dev TSV as read_known gives it
        (file name, line number, ...); None when its biography does not name its place early enough to be
        probed."""
        item = self.items.get(tuple(row[:2]))
        if item is None:
            return None
        said = memorised.continuations(self.model, [item], self.vocab.stoi, self.vocab.itos, places=self.places)[0]
        return item[1], said, memorised.names_place(said, item[2], self.places)


def _percent(p):
    return f"{p:7.2%}" if p >= 0.00005 else " <0.01%"


# why a --complete continuation ends where it does, by what the model wrote next (not at --chars or the block's end)
STOPS = {MASK_CHAR: "then the model wrote the MASK: in span corruption a stretch of text ends at one",
         "\n": "then the model ended the biography's line"}


TRAIN_FILE = memorised.SPLITS[0][1]  # its questions were finetuning's examples: a right answer there was trained


def _pretraining(stored, answer, row, trained=False):
    """The --pretrained line under the answer checked against `row` (file, line, place, question): the probe's
    verdict on the answer (`stored`: Store.probe's result, () where the person is not probed); none without
    a store. `trained`: the person probed is one of TRAIN_FILE, whose question finetuning trained on, so a
    right answer shows no retrieval."""
    if stored == ():
        return ["  pretraining: not probed (not a train or dev person whose wiki line names this place within "
                "the characters pretraining reads)"]
    if not stored:
        return []
    prefix, said, kept = stored
    right = same_place(answer, row[2])
    verdict = {(True, True): "stored, and retrieved", (True, False): "stored, not retrieved",
               (False, True): "not stored; right without it",
               (False, False): "not stored, so nothing to retrieve"}[kept, right]
    if trained and right:  # finetuning's own question: its answer was trained on, retrieved or not
        verdict = ("stored; right, but finetuning trained this question" if kept else
                   "not stored; right, as finetuning trained this question")
    shown = prefix if len(prefix) <= 30 else "\u2026" + prefix[-29:]  # the biography's end, then what follows
    return [f"  pretraining: {verdict}   ({shown!r} -> {said!r})"]


def format_result(result, top, left_out=0):
    """The lines printed for one `Asker.ask` result."""
    prompt = result["prompt"]  # a TSV line's question with spaces around it, as asked: quoted, so they show
    lines = [repr(prompt) if prompt != prompt.strip() and not result["complete"] else prompt]
    said = result["answer"]
    # quoted when the bare text would mislead: empty, spaces at an end, a newline or other control character
    answer = f"  answer: {said}" if said and said == said.strip() and said.isprintable() else f"  answer: {said!r}"
    if result["known"]:
        name, line, place, spelled = result["known"]
        verdict = "right" if same_place(result["answer"], place) else "wrong"
        asks = f", which asks {spelled!r}" if spelled != result["prompt"] else ""  # asked in other case or spacing
        where = name if line is None else f"{name} line {line}"  # a TEXT's own place: "TEXT 2"
        answer += f"   ({where}{asks}: {place}; {verdict})"
    elif result.get("looked_in") and not result["complete"]:  # a made-up name, or a typo of a real one
        answer += f"   (not a question of {' or '.join(result['looked_in'])}: no place to check it against)"
    elif result.get("stop") in STOPS:  # --complete: a short continuation is the model's own end, not cut off
        answer += f"   ({STOPS[result['stop']]})"
    lines.append(answer)
    lines += _pretraining(result.get("stored"), result["answer"], result["known"], result.get("trained", False))
    for row, stored in result.get("also", ()):  # other rows asking the same question: each person, checked and probed
        name, line, place, spelled = row
        verdict = "right" if same_place(result["answer"], place) else "wrong"
        asks = f", which asks {spelled!r}" if spelled != result["prompt"] else ""
        lines.append(f"  also asked by {name} line {line}{asks}: {place}; {verdict}")
        lines += _pretraining(stored, result["answer"], row, trained=name == TRAIN_FILE)
    probs = result["probabilities"]
    for place, p in probs[:top]:
        lines.append(f"  {_percent(p)}  {place}")
    true = result["known"][2] if result["known"] else None
    rank = [place for place, _ in probs].index(true) if true in dict(probs) else None
    if rank is not None and rank >= top:  # the file's place (or the text's own), wherever it ranks
        files = {name for _, name in memorised.SPLITS}
        whose = "the file's place" if result["known"][0] in files else "the place given"
        lines.append(f"  {_percent(probs[rank][1])}  {true}   ({whose}, {rank + 1} of {len(probs)})")
    what = f"the {len(probs) - len(result['extra'])} places of birth_places_train.tsv"
    if left_out:
        what += f" ({left_out} spelled outside the vocabulary left out)"
    if result["extra"]:  # the answer, the file's place: scored although the finetuning data lacks them
        what += " and " + " and ".join(repr(p) for p in result["extra"])
    if result["complete"]:  # "Mexico" counts every "Mexico City" too: the shares overlap and do not add up
        lines.append(f"  each: the probability that the continuation starts with the place ({what})")
    else:
        lines.append(f"  {what}: {sum(p for _, p in probs):.2%} of the model's probability")
    return "\n".join(lines)


def build_parser():
    p = OneLineParser(prog="ask.py", description="Ask a trained model where people were born; print its greedy "
                                                 "answer and the probability it gives each birthplace.")
    p.add_argument("texts", nargs="*", metavar="TEXT",
                   help='a question ("Where was Emily Lee born?") or a name ("Emily Lee"); none: read standard '
                        'input, one a line')
    p.add_argument("--params", required=True, help="params written by src/run.py (finetuned, or pretrained "
                                                   "with --complete)")
    p.add_argument("--variant", choices=["vanilla", "synthesizer"], default=None,
                   help="default: the --params file's")
    p.add_argument("--data-dir", default=None,
                   help="folder with wiki.txt (the vocabulary) and birth_places_train.tsv (the places); "
                        "default: of the one beside --params named data/ (the demo's world) and data/, the first "
                        "whose wiki.txt the params were pretrained on (their card says), else the first of their "
                        "vocabulary, else data/")
    p.add_argument("--complete", action="store_true",
                   help="continue each text as the pretraining corpus reads (no MASK): probes a pretrained model")
    p.add_argument("--chars", type=int, default=40, help="with --complete, the most characters to continue "
                                                         "(default 40)")
    p.add_argument("--pretrained", default=None, metavar="PARAMS",
                   help="the pretrained params --params were finetuned from: for each train or dev person, whether "
                        "pretraining stored the birthplace (memorised.py's probe), so a wrong answer reads as not "
                        "stored, or stored but not retrieved")
    p.add_argument("--top", type=int, default=5, help="how many places to list, most likely first (default 5)")
    add_model_flags(p, from_params=True)
    return p


def main(argv=None, stdin=None):
    """The command line; returns 0, or 2 when a text could not be asked (each such text gets one line
    on stderr and the others are still answered) or standard input is not UTF-8 (one line; the lines
    before the bad bytes are answered, none after)."""
    p = build_parser()
    args = p.parse_args(argv)
    shape = settings_from_params(p, args, DEFAULT_DATA)
    check_model_flags(p, args)
    if shape.get("function") == "pretrain" and not args.complete:
        print(f"note: {args.params} were pretrained, not finetuned (their card says): they were never taught to "
              f"answer, and continue a question as a biography would; --complete asks them to continue a text "
              f"(\"NAME was born in \")", file=sys.stderr)
    if args.pretrained is not None and not args.pretrained.strip():  # a variable left unset
        p.error("--pretrained is empty; give the pretrained params --params were finetuned from, or leave it out")
    if args.pretrained is not None and args.complete:  # --complete writes no answer for it to judge
        p.error("--pretrained judges the answers of finetuned --params; --complete continues a text and answers no "
                "question: give one of them")
    if args.chars < 1:
        p.error(f"--chars must be at least 1, got {args.chars}")
    if args.top < 0:
        p.error(f"--top must be 0 or more, got {args.top}")
    import run as driver
    wiki = os.path.join(args.data_dir, "wiki.txt")
    vocab = CharCorruptionDataset(read_text(wiki, "pretraining corpus"), args.block_size, wiki)
    places = read_places(args.data_dir)
    model = driver.build_model(args, vocab)
    load_params(model, args.params, variant_flag="--variant ", corpus_flag="--data-dir (the folder of the wiki.txt)",
                itos=vocab.itos)
    store = None
    if args.pretrained is not None:  # the same shape, vocabulary and variant: finetuning started from it
        from submission.card import read_card
        if (read_card(args.pretrained) or {}).get("function") == "finetune":  # the probe would judge nothing
            p.error(f"--pretrained {args.pretrained}: their card says they were finetuned; give the pretrained "
                    f"params --params were finetuned from (run.py --function=pretrain wrote them)")
        started = not_the_start(args.params, args.pretrained)
        if started:
            p.error(started)
        pretrained = driver.build_model(args, vocab)
        load_params(pretrained, args.pretrained, corpus_flag="--data-dir (the folder of the wiki.txt)", itos=vocab.itos,
                    size_fix="give the pretrained params of the model --params were finetuned from",
                    variant_fix="give the {want} pretrained params --params were finetuned from")
        # said once they loaded (a corpus of other characters is an error). For --params only a tally is noted
        # (below): the answers read the corpus for its vocabulary alone, and the questions are the user's to choose
        note_other_corpus(args.pretrained, wiki, f"--pretrained's probe cuts the biographies of {wiki}, which they "
                                                 f"never read, so its verdicts say nothing of what pretraining stored; "
                                                 f"give --data-dir the folder whose wiki.txt they were pretrained on")
        try:
            store = Store(pretrained.to(get_device()).eval(), vocab, args.data_dir, args.block_size)
        except DataError as e:  # a dev file ask needs only for this: say who needs it
            raise DataError(f"{e} (--pretrained probes the train and dev people as memorised.py does)") from None
    asker = Asker(model.to(get_device()).eval(), vocab, places, known=read_known(args.data_dir),
                  complete=args.complete, chars=args.chars, store=store, corpus=wiki)
    stdin = stdin or sys.stdin
    if args.texts:
        texts = [(f"TEXT {i}", (f"TEXT {i}", None), t) for i, t in enumerate(args.texts, start=1)]
    else:
        lines = _lines(stdin, "text to continue" if args.complete else "question or name")
        if not args.complete and not stdin.isatty():
            lines = _without_header(lines)
        texts = ((f"standard input line {n}", ("standard input", n), t) for n, t in lines)
    status, asked, answered, checked, probed = 0, 0, 0, [], []
    try:
        for where, source, text in texts:
            asked += 1
            try:
                result = asker.ask(text, source)
            except AskError as e:
                print(f"ask.py: {where}: {e}", file=sys.stderr)
                status = 2
                continue
            print(("\n" if answered else "") + format_result(result, args.top, left_out=asker.left_out), flush=True)
            answered += 1
            if result["known"]:
                checked.append(same_place(result["answer"], result["known"][2]))
                if result["stored"]:
                    probed.append((result["stored"][2], checked[-1], result["trained"]))
    except NotUTF8 as e:  # the lines before it were answered; the rest is read no further
        print(f"ask.py: {e}", file=sys.stderr)
        return 2
    if not args.texts and len(checked) > 1:  # a file of questions (< data/birth_dev.tsv): the evaluation's tally
        # said with the tally, as run.py's evaluation says it with its own (a verdict on one question is the user's
        # to read; a tally reads as the params' accuracy, which other people than they read of do not measure)
        note_other_corpus(args.params, wiki, f"this tally checks them on the people of {wiki}, whom they never read "
                                             f"of (their answers read it only for its vocabulary, the same), so it is "
                                             f"not their evaluation's figure; give --data-dir the folder whose "
                                             f"wiki.txt they were pretrained on")
        print(f"\n{sum(checked)} of the {len(checked)} answers checked are right ({sum(checked) / len(checked):.1%})")
        if probed:
            print(store_tally(probed))
    if not asked:
        print("ask.py: nothing to ask: give questions or names as arguments, or one a line on standard input",
              file=sys.stderr)
        status = 2
    return status


def not_the_start(params, pretrained):
    """Why `pretrained` are not the params `params` were finetuned from, by the finetuned card's record of its
    start (run.start_params: a new model, or the sha256 of --reading_params_path); None when they are, or when
    no card says (an earlier version's, or none). Else the probe would judge a finetuning by another model's
    store, or a vocabulary error would send the user to a --data-dir that --params then refuse."""
    from ledger import sha256_of
    from run import NEW_MODEL, STARTED_FROM
    from submission.card import read_card
    start = ((read_card(params) or {}).get("run") or {}).get("start")
    if start == NEW_MODEL:
        return (f"--pretrained {pretrained}: {params} were finetuned from a new model, without pretraining (their "
                f"card says), so there is no store to judge them by; leave --pretrained out, or give finetuned "
                f"params that started from pretrained ones")
    if not (isinstance(start, str) and start.startswith(STARTED_FROM)):
        return None
    recorded = start[len(STARTED_FROM):]
    digest = sha256_of(pretrained) if os.path.isfile(pretrained) else None
    if digest is None or digest.startswith(recorded):  # (a file that is not there: load_params says)
        return None
    return (f"--pretrained {pretrained}: {params} were finetuned from other params (their card records sha256 "
            f"{recorded}..., these are {digest[:16]}...); give the pretrained params they were "
            f"finetuned from (the run's --reading_params_path)")


def store_tally(probed):
    """The last line of a file of questions asked with --pretrained: of the people probed ((stored, right, trained)
    each), how many birthplaces pretraining stored, how many of those the finetuned model retrieved, and how many
    it got right without them (the demo's memorised and retrieved columns, for the questions asked). Finetuning's
    own questions (`trained`) are left out, and counted: their right answers were trained on."""
    asked = [(stored, right) for stored, right, trained in probed if not trained]
    kept = [right for stored, right in asked if stored]
    lost = [right for stored, right in asked if not stored]
    left_out = len(probed) - len(asked)
    note = (f" ({left_out} question{'s' if left_out > 1 else ''} of {TRAIN_FILE} left out: finetuning trained "
            f"{'them' if left_out > 1 else 'it'})" if left_out else "")
    if not asked:
        what = "the question probed is" if len(probed) == 1 else f"the {len(probed)} questions probed are all"
        return f"stored by pretraining: not counted, as {what} {TRAIN_FILE}'s, which finetuning trained"
    return (f"stored by pretraining: {len(kept)} of the {len(asked)} probed; retrieved: {sum(kept)} of those "
            f"{len(kept)}; right though not stored: {sum(lost)} of {len(lost)}{note}")


def _without_header(lines):
    """`lines` ((line number, text) of a file of questions) without a first line that reads as a column
    header: a TSV line whose question has no "?" where the next line's has (a spreadsheet's export:
    "name<TAB>place" would be asked as "Where was name born?" and counted in the tally). Said on stderr;
    run.py refuses such a file (dataset.parse_tsv), a question at a time it only costs a line here. The
    second line is read ahead only after such a first one (one that is not UTF-8 leaves it asked)."""
    asks = lambda line: "\t" in line[1] and line[1].split("\t")[0].rstrip().endswith("?")  # noqa: E731
    first = next(lines, None)
    if first is None or "\t" not in first[1] or asks(first):
        yield from ([] if first is None else [first])
        yield from lines
        return
    try:
        second = next(lines, None)
    except NotUTF8:
        yield first
        raise
    if second is not None and asks(second):
        print(f"ask.py: standard input line {first[0]}: {first[1][:60]!r} reads as a column header, not a question "
              f"(the next line's question ends in '?'): skipped", file=sys.stderr)
    else:
        yield first
    yield from ([] if second is None else [second])
    yield from lines


def _lines(stdin, asking):
    """(line number, text) for each non-blank line of stdin; on a terminal, a prompt (`asking`) before
    each. Its bytes are read as UTF-8 whatever the locale (a leading byte-order mark dropped, as
    read_text drops it); a NotUTF8 for bytes that are not, naming the line and byte (UTF-16 by its
    byte-order mark). A stream of text (no .buffer) is taken as it decodes."""
    interactive = stdin.isatty()
    raw = getattr(stdin, "buffer", None)
    fix = "set the terminal to UTF-8" if interactive else "save it as UTF-8"
    line_no, offset = 0, 0
    end_key = "Ctrl-Z, Enter" if os.name == "nt" else "Ctrl-D"  # the end of input at a terminal
    while True:
        if interactive:
            print(f"{asking} ({end_key} ends)> ", end="", file=sys.stderr, flush=True)
        line = stdin.readline() if raw is None else raw.readline()
        if not line:
            if interactive:
                print(file=sys.stderr)
            return
        line_no += 1
        if raw is not None:
            if line_no == 1 and utf16(line):
                raise NotUTF8(f"standard input is {utf16(line)}; {fix}")
            try:
                line, offset = line.decode("utf-8"), offset + len(line)
            except UnicodeDecodeError as e:
                raise NotUTF8(f"standard input is not UTF-8: line {line_no}, byte {offset + e.start} is not "
                              f"valid UTF-8; {fix}") from None
        if line_no == 1 and line.startswith("\ufeff"):  # a byte-order mark (Windows editors)
            line = line[1:]
        if line.strip():
            yield line_no, line.rstrip("\r\n")


if __name__ == "__main__":
    with denormals_flushed():  # the answers run.py's evaluation gives (it flushes them too)
        sys.exit(run_cli(main))

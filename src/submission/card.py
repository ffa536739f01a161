"""The card beside a params file: what the model was trained as, where its tensors' shapes do not say.

A params file is the course's bare state_dict, so that it stays interchangeable with the course's. Its
shapes record the vocabulary's size, the block, the layers and the width (params.py names a mismatch of
any), but not two things that change every answer: the number of heads of vanilla attention (its
key, query and value are n_embd x n_embd whatever the heads), and which characters the vocabulary's
ids stand for (another corpus of as many characters loads silently). run.py writes them, with the
params' sha256, the function that made them (pretrain or finetune: ask notes pretrained params asked
a question) and the epochs they were trained (run.py keeps a longer run's params from a shorter run
by it, also where the loss log is elsewhere or gone), to `<params>.card.json` after training;
`load_params` refuses params whose card disagrees with the model or the corpus at hand. A card is
read only while the sha256 is the params' own: params copied in or written since without a card are
loaded unchecked, as the course's are.
The vocabulary says which characters, not which text: params pretrained on one corpus load into a run
of another of the same characters (the course's wiki.txt and the embedded data/wiki.txt, a world made
again) and are then asked about people they never read. So the card also records the pretraining
corpus (`pretrain_corpus`: its sha256, its path as given and its real path), a pretraining's own and, for
finetuned params, that of the pretrained params they started from, where their card said it; run.py notes a
corpus at hand of other bytes (other_corpus, in other_corpus_words' wording, which memorised and ask
--pretrained share), and the tools that choose a data folder for params take the one of those bytes
first (corpus_folder). Cards written before it have no such field: nothing is known, and nothing is said.
Standard library only (the package imports nothing from outside itself, so not ledger.sha256_of).
"""
import hashlib
import json
import os
import shlex
import sys

CARD_SUFFIX = ".card.json"


def card_path(params_path):
    return params_path + CARD_SUFFIX


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def model_heads(model):
    """The heads of the model's attention (its first attention module's n_head), or None."""
    return next((m.n_head for m in model.modules() if isinstance(getattr(m, "n_head", None), int)), None)


def vocab_text(itos):
    """The vocabulary as one string, the character of id 0 first (a dataset's itos)."""
    return "".join(itos[i] for i in range(len(itos)))


def corpus_record(path):
    """The `pretrain_corpus` entry of a card for the pretraining corpus at `path`: {"sha256", "path" as
    given, "realpath"}; None where it is not a regular file (a FIFO would block the hash) or cannot be read.
    The path as given is how messages name it; the real path says whether a later run's corpus is that file
    (a relative path names another file from another folder)."""
    if not os.path.isfile(path):
        return None
    try:
        return {"sha256": _sha256(path), "path": os.fspath(path), "realpath": os.path.realpath(path)}
    except OSError:
        return None


def pretrain_corpus(card):
    """The `pretrain_corpus` entry of a card (a dict, read_card's), or None: no card, a card written before
    the field, or a field of another form."""
    entry = (card or {}).get("pretrain_corpus")
    if isinstance(entry, dict) and isinstance(entry.get("sha256"), str) and isinstance(entry.get("path"), str):
        real = {"realpath": entry["realpath"]} if isinstance(entry.get("realpath"), str) else {}
        return {"sha256": entry["sha256"], "path": entry["path"], **real}
    return None


def other_corpus(card, corpus_path):
    """(the pretrain_corpus of `card`, read_card's of some params, corpus_record(corpus_path)) when it records
    a pretraining corpus whose sha256 is not that of `corpus_path`; None when they are the same bytes, or
    nothing is known (no card, one without the field, a corpus that cannot be hashed). The corpus is
    hashed only where the card records one."""
    theirs = pretrain_corpus(card)
    if theirs is None:
        return None
    ours = corpus_record(corpus_path)
    if ours is None or ours["sha256"] == theirs["sha256"]:
        return None
    return theirs, ours


def other_corpus_words(params, other, flag=""):
    """The start of a note on `params` pretrained on another text than the corpus at hand (`other`:
    other_corpus's (theirs, ours)), one wording for run.py's notes and the tools' (modelflags.
    note_other_corpus): "PARAMS were pretrained on THEIRS (sha256 ..., their card says), not on FLAG OURS
    (sha256 ...), a text of the same characters", or "PARAMS were pretrained on an earlier PATH (sha256 ...
    then, ... now; their card says)" where the two are one path rewritten since. `flag` (with its space)
    names where OURS was given; each caller adds what the difference means for its own work. One path is
    one file by their real paths (corpus_record's), not as given: "wiki.txt" in two folders is two files,
    and a card of an earlier version, without the real path, is taken for another file."""
    theirs, ours = other
    path, sha = _shown(theirs["path"]), _shown(str(theirs["sha256"])[:12])  # the card's: it may come from anyone
    if theirs.get("realpath") is not None and theirs.get("realpath") == ours.get("realpath"):
        on = f"an earlier {path} (sha256 {sha} then, {ours['sha256'][:12]} now; their card says)"
    else:
        on = (f"{path} (sha256 {sha}, their card says), not on {flag}{ours['path']} (sha256 {ours['sha256'][:12]}), "
              f"a text of the same characters")
    return f"{params} were pretrained on {on}"


def _shown(text):
    """A card's text as a message shows it: as it is, or quoted with its escapes where it holds control
    characters (a card that came with downloaded params could clear the screen or colour what follows)."""
    text = str(text)
    return text if text.isprintable() else repr(text)


def card_text(card):
    """A card (a dict) as its file's text."""
    return json.dumps(card, ensure_ascii=False, indent=1) + "\n"


def write_card(params_path, model, itos, function=None, epochs=None, corpus=None, run=None):
    """Write the card of params just written by `model` (unwrapped), whose vocabulary is `itos`, and
    `function`, run.py's ("pretrain" or "finetune"), the `epochs` trained and the `corpus` the weights
    were pretrained on (a pretrain_corpus entry: corpus_record's, or the card's of the params a finetuning
    started from), when given; `run`: what repeating the run takes (run.py's run_record: its seed and
    settings, the data's digest, device, CPU threads, speed options, torch, commit), recorded, never checked.
    A card that cannot be written costs only its checks: one line on stderr, and the run goes on."""
    from .files import atomic_write_text  # files.py imports params.py, which imports this module
    if not os.path.isfile(params_path):  # /dev/null, a FIFO: nothing to describe
        return
    card = {"about": "written by src/run.py beside its params: what they were trained as, checked when they are "
                     "loaded while params_sha256 is theirs",
            "params_sha256": _sha256(params_path), "n_head": model_heads(model), "vocab": vocab_text(itos)}
    if function is not None:
        card["function"] = function
    if epochs is not None:
        card["epochs"] = epochs
    if corpus is not None:
        card["pretrain_corpus"] = dict(corpus)
    if run is not None:
        card["run"] = run
    try:
        atomic_write_text(card_path(params_path), card_text(card))
    except (OSError, ValueError) as e:  # files.py's DataError (a ValueError) names the path and the reason
        print(f"note: {card_path(params_path)} not written, so loading {params_path} will not check its --n_head "
              f"and vocabulary ({e})", file=sys.stderr)


def _unreadable(params_path):
    """(why, fix) when the card beside `params_path` cannot be read, in words; None: none there, a card read_card
    reads, or one of other params (a card left beside params replaced since, such as the course's)."""
    path = card_path(params_path)
    if not os.path.lexists(path) or not os.path.isfile(params_path):
        return None
    if not os.path.isfile(path):
        why = "a folder" if os.path.isdir(path) else "not a regular file"
        return f"{why}, not a card run.py writes", "remove it (run.py writes a card beside the params it trains)"
    try:
        with open(path, encoding="utf-8") as f:
            card = json.load(f)
    except OSError as e:  # its permissions: the card is fine, and removing it would lose its checks for good
        return f"cannot be read ({e.strerror or e})", f"make it readable (chmod u+r {shlex.quote(path)})"
    except ValueError:
        why = "not JSON"
    else:
        if isinstance(card, dict):
            return None
        why = f"JSON of a {type(card).__name__}, not an object"
    return f"{why}, not a card run.py writes", "remove it (run.py writes a card beside the params it trains)"


def read_card(params_path):
    """The card of a params file as a dict, or None: no card, one that cannot be read, or one of other
    params (its sha256 is not theirs)."""
    path = card_path(params_path)
    if not (os.path.isfile(path) and os.path.isfile(params_path)):  # hashing a FIFO would block
        return None
    try:
        with open(path, encoding="utf-8") as f:
            card = json.load(f)
        if not isinstance(card, dict) or card.get("params_sha256") != _sha256(params_path):
            return None
    except (OSError, ValueError):
        return None
    return card


def card_heads(card):
    """The heads a card records: a whole number of at least 1, else None (a card edited by hand to `0`, `"two"`
    or `true` records none, rather than a fix of `--n_head 0`)."""
    heads = (card or {}).get("n_head")
    return heads if isinstance(heads, int) and not isinstance(heads, bool) and heads >= 1 else None


def _bytes_sha256(data):
    """The sha256 of bytes read already: corpus_folder's, on a folder's wiki.txt, only where a card records one."""
    return hashlib.sha256(data).hexdigest()


def corpus_folder(params_path, folders):
    """The folder of `folders` whose wiki.txt the card of `params_path` says the params were pretrained on:
    the first whose sha256 is its `pretrain_corpus`'s, else the first whose wiki.txt has the vocabulary it
    records (its characters after PAD and MASK); None: no card, or no such folder. A card without the
    field (an earlier version, params trained from scratch) has only the vocabulary to go by, which does
    not tell two texts of one character set apart, and no folder's file is hashed for it."""
    card = read_card(params_path) or {}
    vocab = card.get("vocab") if isinstance(card.get("vocab"), str) and len(card["vocab"]) >= 2 else None
    recorded = pretrain_corpus(card)
    if vocab is None and recorded is None:
        return None
    alike = None  # the first folder of the vocabulary, while one of the recorded bytes may follow
    for folder in folders:
        path = os.path.join(folder, "wiki.txt")
        if not os.path.isfile(path):  # none there, or a FIFO, which would block the read
            continue
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        if recorded is not None and _bytes_sha256(data) == recorded["sha256"]:
            return folder
        if alike is not None or vocab is None:
            continue
        try:  # read as dataset.read_text reads it: a byte-order mark dropped, \r\n and \r as \n (text mode)
            text = data.decode("utf-8-sig").replace("\r\n", "\n").replace("\r", "\n")
        except UnicodeDecodeError:
            continue
        if "".join(sorted(set(text))) == vocab[2:]:
            if recorded is None:
                return folder
            alike = folder
    return alike


_NOTED = set()  # card_mismatch's notes said already in this process


def card_mismatch(params_path, model, itos=None):
    """(problem, the flag to fix it) when the card of `params_path` disagrees with `model` (its heads) or,
    given, the vocabulary `itos`; None when they agree or there is no card to go by."""
    card = read_card(params_path)
    if card is None:
        unreadable = _unreadable(params_path)
        note = unreadable and (f"note: {card_path(params_path)}: {unreadable[0]}, so the --n_head and vocabulary of "
                               f"{params_path} are not checked; {unreadable[1]}")
        if note and note not in _NOTED:  # its checks were skipped without a word: a --n_head mismatch then loaded,
            _NOTED.add(note)             # quietly (said once a run: finetuning looks at the card twice)
            print(note, file=sys.stderr)
        return None
    heads, trained = model_heads(model), card_heads(card)
    if trained is not None and heads is not None and trained != heads:
        return (f"trained with {trained} attention heads ({card_path(params_path)} says), the model has {heads}",
                f"--n_head {trained}")
    vocab = card.get("vocab")
    ours = vocab_text(itos) if itos is not None and isinstance(vocab, str) else None
    if ours is not None and vocab != ours:
        at = next(i for i, (a, b) in enumerate(zip(vocab + "\0", ours + "\0")) if a != b)
        return (f"trained with another vocabulary of as many characters ({card_path(params_path)} says: id {at} "
                f"was {vocab[at:at + 1]!r} there, {ours[at:at + 1]!r} here)", None)
    return None

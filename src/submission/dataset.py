"""Datasets of the assignment: span-corruption pretraining and birth-place finetuning.

CharCorruptionDataset implements the handout's part (e), a one-span simplification of T5's
span corruption (Raffel et al. 2020): a truncated document becomes
`prefix MASK suffix MASK masked MASK`, padded to block_size, and the model learns to predict the
next character. NameDataset turns `question<TAB>place` lines into `question MASK place MASK`,
with loss only from the question's last character on: the opening MASK, the place, the closing
MASK. Characters map to ids through one vocabulary built from the pretraining text: PAD = 0,
MASK = 1, then its sorted characters.

Print a few examples:  python src/submission/dataset.py namedata|charcorruption [--data-dir DIR]
"""
import argparse
import os
import random
import shlex
import sys
import unicodedata
from contextlib import nullcontext

_starting = nullcontext
if __name__ == "__main__":  # the script: a Ctrl-C while torch loads, or a Python without torch, is one line
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # src/, as _main puts it
    try:
        import startup
        _starting = startup.interruptible_start
    except ImportError:  # the package copied on its own: torch loads as it would anywhere
        pass

with _starting("dataset.py"):
    import torch
    from torch.utils.data import Dataset

MASK_CHAR = u"\u2047"  # the double question mark: the sentinel
MIN_BLOCK = 17  # the smallest block_size B with int(7 * B / 8) + 3 <= B
PAD_CHAR = u"\u25A1"   # the empty square: padding


class DataError(ValueError):
    """A problem with an input file; the message names the file, the line and the fix."""


class ReservedCharacter(DataError, AssertionError):
    """The MASK or PAD character in the pretraining corpus: a DataError, and an AssertionError as the
    course's `assert self.MASK_CHAR not in chars` raised, so code that catches either works unchanged."""


class DataNotFound(DataError, FileNotFoundError):
    """An input path that names no file (or a link to nothing): a DataError, and a FileNotFoundError as the
    course's `open(path)` raised, so a program that catches either works unchanged."""


class DataUnreachable(DataError, PermissionError):
    """An input in a folder that does not let the user in (dataset.folder_shut): a DataError, and a PermissionError
    as the course's `open(path)` raised."""


# the UTF-32 codec whose code units torch.frombuffer reads back as this machine's int32 (encode)
_UTF32_NATIVE = "utf-32-le" if sys.byteorder == "little" else "utf-32-be"


class _IdTable(dict):
    """A str.translate table from a character's code point to its id's character, chr(id).

    A character outside the vocabulary raises (a LookupError would make str.translate keep it)."""

    def __missing__(self, code):
        raise DataError(f"character {chr(code)!r} (U+{code:04X}) is not in the vocabulary")


def id_table(stoi):
    """The table `encode` needs for the vocabulary `stoi` (character -> id); for ids that are not one UTF-32
    code unit each (reaching the surrogates, U+D800, as a vocabulary that large has; negative; not whole numbers,
    as a vocabulary a program gives a dataset may hold), `stoi` itself, which encode reads with the plain loop."""
    if len(stoi) >= 0xD800 or not all(type(i) is int and 0 <= i < 0xD800 for i in stoi.values()):
        return stoi
    return _IdTable({ord(ch): chr(i) for ch, i in stoi.items()})


def current_table(dataset):
    """encode's table for `dataset.stoi` as it holds now, remade when it differs from the one the table was made
    from: the course's __getitem__ reads self.stoi at every access, so a vocabulary a program gives a dataset
    after building it (another dict, or the same one changed) is the one its items are encoded in. The check is
    one dict comparison in C, about 3 us an item beside encode's 11 us (a 256-character vocabulary)."""
    stoi = dataset.stoi
    if stoi != getattr(dataset, "_ids_stoi", None):
        dataset._ids_stoi, dataset._ids = dict(stoi), id_table(stoi)
    return dataset._ids


def encode(text, table):
    """The ids of `text` as a (len(text),) Long tensor, equal to [stoi[c] for c in text].

    One pass in C (translate each character to chr(id), then read the UTF-32 code units back) in
    place of a Python loop per character: on this project's 2-core CPU a 127-character string takes
    11 us against 19 us, and a span-corruption example (two strings before) 36 us against 46 us.
    """
    if not isinstance(table, _IdTable) or not text:  # the plain loop
        return torch.tensor([table[c] for c in text], dtype=torch.long)
    units = bytearray(text.translate(table).encode(_UTF32_NATIVE))
    return torch.frombuffer(units, dtype=torch.int32).long()  # (len(text),)


def _repo():
    """The repository's folder (this file is its src/submission/dataset.py), symbolic links resolved."""
    return os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def _embedded_copy(path):
    """'the embedded corpus has it: data/wiki.txt' for a missing file at a course layout's path (a
    bare name in the repo, the files beside src/run.py or in src/data/), or ''; never for a folder of
    the user's own, whose files may be the course's (another vocabulary)."""
    repo = _repo()
    ours = os.path.join(repo, "data", os.path.basename(path))
    folder = os.path.realpath(os.path.dirname(path) or ".")
    if folder not in (repo, os.path.join(repo, "src"), os.path.join(repo, "src", "data")) or not os.path.isfile(ours):
        return ""
    try:
        return f"the embedded corpus has it: {os.path.relpath(ours)}"
    except ValueError:  # Windows: another drive than the working folder's
        return f"the embedded corpus has it: {ours}"


def _utf16_without_mark(head):
    """Whether bytes `head` read as UTF-16 saved without a byte-order mark: zeros at most even (or odd)
    offsets, the high bytes of Latin letters, and almost none at the others (a binary file, an array of
    numbers, has zeros at both)."""
    even, odd = head[0::2], head[1::2]
    zeros = sorted((even.count(0) / max(len(even), 1), odd.count(0) / max(len(odd), 1)))
    return zeros[1] > 0.4 and zeros[0] < 0.05


def folder_shut(path, what):
    """Why `path` looks absent when a folder above it does not let this user in (no search permission, x:
    `chmod 600` or another user's 0700 folder), as "PATH: the WHAT cannot be reached: ... ; FIX"; None when
    nothing above it is shut (then it is missing, or there). Without it such a file read "not found", and the
    fixes offered were to make it again."""
    try:
        os.stat(path)
        return None
    except PermissionError:
        pass
    except (OSError, ValueError):
        return None
    folders, folder = [], os.path.dirname(os.path.abspath(path))
    while True:
        folders.append(folder)
        if os.path.dirname(folder) == folder:
            break
        folder = os.path.dirname(folder)
    for folder in reversed(folders):  # from the root down: the first shut one is the one to open
        if os.path.isdir(folder) and not os.access(folder, os.X_OK):
            st = os.stat(folder)
            mode = st.st_mode & 0o7777
            mine = not hasattr(os, "geteuid") or st.st_uid == os.geteuid()
            fix = (f"chmod u+rx {shlex.quote(folder)}" if mine
                   else f"ask its owner to let you in (chmod o+rx {shlex.quote(folder)})")
            return (f"{path}: the {what} cannot be reached: the folder {folder} does not let you in (Permission "
                    f"denied, mode {mode:04o}); {fix}")
    return None


def _file_above(path):
    """The nearest existing folder of `path` (as written) when it is no folder but a file, else None."""
    above = os.path.dirname(os.fspath(path))
    while above and not os.path.lexists(above) and os.path.dirname(above) != above:
        above = os.path.dirname(above)
    return above if above and os.path.isfile(above) else None


def read_text(path, what="file"):
    """The whole text of a UTF-8 file (a leading byte-order mark, as Windows editors write, dropped),
    or a DataError saying what is missing and how to make it. `path` is a str or an os.PathLike."""
    if not os.fspath(path).strip():  # a variable left unset ("$DATA"): "': not found" named no file
        raise DataNotFound(f"the {what} path is empty; give the file's path")
    if os.path.isdir(path):
        raise DataError(f"{path}: the {what} path is a folder; give the file inside it")
    if os.path.islink(path) and not os.path.exists(path):
        raise DataNotFound(f"{path}: a symbolic link to nothing (its target is missing, or the links loop); give "
                           f"the {what} itself")
    if os.path.exists(path) and not os.path.isfile(path):  # <(...), /dev/stdin, a FIFO: "not found" before
        raise DataError(f"{path}: not a regular file (a pipe or a device); save the {what} to a file and give that")
    if not os.path.isfile(path):
        shut = folder_shut(path, what)
        if shut:
            raise DataUnreachable(shut)
        above = _file_above(path)
        if above:  # `--data-dir data/wiki.txt`, DATA_DIR=.../birth_dev.tsv: the folder named is a file
            if os.environ.get("RUN_SH_MODE"):  # run.sh's paths are DATA_DIR's folder and a file's name
                raise DataError(f"{path}: {above} is a file, not a folder (run.sh reads the folder DATA_DIR names); "
                                f"give the folder that holds the {what}")
            # else a file's own flag (run.py's --eval_corpus_path data/birth_dev.tsv/) as well as a folder's: "the
            # folder that holds it" alone sent the first to a folder, which it refuses as one
            raise DataError(f"{path}: {above} is a file, not a folder; give the path of the {what} itself, or where "
                            f"a flag takes its folder (--data-dir), the folder that holds it")
        if os.path.realpath(os.path.dirname(os.path.abspath(path))) == os.path.realpath(os.path.join(_repo(), "data")):
            raise DataNotFound(f"{path}: {what} not found (check the path; `python src/make_world.py --out data` "
                               f"regenerates the embedded corpus)")
        # run.sh's run.py: the folder comes from DATA_DIR; a course layout's path may have a copy here
        notes = [n for n in ("run.sh reads the folder DATA_DIR names" if os.environ.get("RUN_SH_MODE") else "",
                             _embedded_copy(path)) if n]
        raise DataNotFound(f"{path}: {what} not found; check the path" + (f" ({'; '.join(notes)})" if notes else ""))
    try:
        with open(path, encoding="utf-8-sig") as f:  # text mode: \r\n read as \n, as the course reads
            text = f.read()
        if "\x00" in text and _utf16_without_mark(text[:4096].encode("utf-8", "surrogatepass")):
            raise DataError(f"{path}: UTF-16 text without a byte-order mark (every other byte is zero), not UTF-8; "
                            f"save the file as UTF-8")
        return text
    except UnicodeDecodeError as e:
        with open(path, "rb") as f:
            head = f.read(max(e.start, 4))
        if head.startswith(b"PK\x03\x04"):  # params (torch.save writes a zip) or a zip given for the text
            raise DataError(f"{path}: a zip file (params are one), not text; give the {what} (a UTF-8 text "
                            f"file)") from None
        if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
            raise DataError(f"{path}: UTF-16 text (byte-order mark {head[:2].hex(' ').upper()}), not UTF-8; save "
                            f"the file as UTF-8") from None
        with open(path, "rb") as f:
            start = f.read(4096)
        if _utf16_without_mark(start):
            raise DataError(f"{path}: UTF-16 text without a byte-order mark (every other byte is zero), not UTF-8; "
                            f"save the file as UTF-8") from None
        line = head[:e.start].count(b"\n") + 1
        raise DataError(f"{path}:{line}: not valid UTF-8 at byte {e.start}; save the file as UTF-8") from None


def parse_tsv(text, path="<string>", require_label=True):
    """Rows of a birth-place TSV as (question, place-or-None, line_number); blank lines are skipped,
    a line with the reserved MASK or PAD character is a DataError, and so is a first line that reads as
    a column header (no question mark where every later question has one).

    Each non-empty line is `question<TAB>place` (or the question alone when require_label is False).
    """
    rows = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        for special, name in ((MASK_CHAR, "MASK"), (PAD_CHAR, "PAD")):
            if special in line:  # the model reads it as the sentinel, not as text
                raise DataError(f"{path}:{lineno}: the reserved {name} character {special!r} (U+{ord(special):04X}) "
                                f"is in a question or place; remove it from that line")
        fields = line.split("\t")
        if len(fields) == 2 and fields[0].strip() and fields[1].strip():
            rows.append((fields[0], fields[1], lineno))
        elif len(fields) == 1 and not require_label:
            rows.append((fields[0], None, lineno))
        else:
            want = "`question<TAB>place`" if require_label else "`question` or `question<TAB>place`"
            found = ("a blank question or place" if len(fields) == 2 else
                     f"{len(fields)} tab-separated field(s)")
            raise DataError(f"{path}:{lineno}: expected {want}, found {found} in {line[:60]!r}; "
                            f"fix or remove that line")
    if len(rows) >= 3 and not _asks(rows[0][0]) and all(_asks(q) for q, _, _ in rows[1:]):
        # a spreadsheet's export: "name<TAB>place" would be trained on, or answered and scored, as a question
        first = "\t".join(field for field in rows[0][:2] if field is not None)
        raise DataError(f"{path}:{rows[0][2]}: {first[:60]!r} reads as a column header, not a question (every other "
                        f"line's question ends in '?'); remove that line, or end it in '?' if it is a question")
    if rows and _header_words(rows[0]):  # a header with fewer than two questions under it (a header alone was data)
        first = "\t".join(field for field in rows[0][:2] if field is not None)
        raise DataError(f"{path}:{rows[0][2]}: {first[:60]!r} is a column header, not a question and its place; "
                        f"remove that line")
    return rows


_QUESTION_HEADERS = {"name", "names", "question", "questions", "person", "people", "input", "inputs", "query"}
_PLACE_HEADERS = {"place", "places", "birth place", "birthplace", "birth_place", "answer", "answers", "label",
                  "labels", "output", "outputs", "target", "city"}


def _header_words(row):
    """Whether a row's fields are a column header's words (name, place; any case), which no question is."""
    question, place, _ = row
    if question.strip().lower() not in _QUESTION_HEADERS:
        return False
    return place is None or place.strip().lower() in _PLACE_HEADERS


def _asks(question):
    return question.rstrip().endswith("?")


def _main_process():
    """utils.is_main_process (utils imports this module: imported here, not at the top): a RANK left in the
    environment of a single process (WORLD_SIZE unset or 1) is no torchrun process of another rank."""
    from .utils import is_main_process
    return is_main_process()


def check_chars(text, stoi, path, lineno):
    """DataError if `text` has a character the pretraining vocabulary lacks. Where the composed form (Unicode
    NFC) of the text is all in the vocabulary, the fix is to save the file so: an accent stored apart from its
    letter (a name pasted from a Mac or a PDF) is named for what it is, and another character NFC replaces
    (the Angstrom sign U+212B for U+00C5, Korean letters stored apart) too, rather than told to be removed."""
    for c in text:
        if c not in stoi:
            composed = unicodedata.normalize("NFC", text)
            if unicodedata.combining(c) and all(ch in stoi for ch in composed):
                raise DataError(f"{path}:{lineno}: character {c!r} (U+{ord(c):04X}) is an accent stored apart from "
                                f"its letter (Unicode NFD), which the vocabulary lacks; save the file with composed "
                                f"characters (Unicode NFC), not remove it: that would change the name")
            if all(ch in stoi for ch in composed):  # NFC replaced c by what the vocabulary holds
                raise DataError(f"{path}:{lineno}: character {c!r} (U+{ord(c):04X}) is not in the vocabulary, but "
                                f"the line's composed form (Unicode NFC) is all in it; save the file with composed "
                                f"characters (Unicode NFC), not remove it: that would change the name")
            raise DataError(f"{path}:{lineno}: character {c!r} (U+{ord(c):04X}) is not in the vocabulary "
                            f"built from the pretraining corpus; remove it or pretrain on a corpus that has it")


class NameDataset(Dataset):
    """Finetuning examples: x = question MASK place MASK PAD..., y = x shifted by one with PAD (no loss)
    over all but the question's last character: the targets are MASK place MASK.

    `data` is the text of a TSV file; `path` only names the file in error messages. The XCS224N
    order (data, pretraining_dataset) is the signature; CS224N's (pretraining_dataset, data) is read
    too, so a program written for either edition runs unchanged.
    """

    def __init__(self, data, pretraining_dataset, path="<finetune corpus>"):
        if isinstance(pretraining_dataset, str) and hasattr(data, "stoi"):  # CS224N's argument order
            data, pretraining_dataset = pretraining_dataset, data
        self.MASK_CHAR = MASK_CHAR
        self.PAD_CHAR = PAD_CHAR
        self.itos = pretraining_dataset.itos
        self.stoi = pretraining_dataset.stoi
        current_table(self)  # encode's table (remade if a program changes stoi later)
        self.block_size = pretraining_dataset.block_size
        self.rows = parse_tsv(data, path)  # the file's lines as read: (question, place, line)
        if not self.rows:
            raise DataError(f"{path}: no `question<TAB>place` lines to finetune on; give a file with some "
                            f"(data/birth_places_train.tsv is one)")
        spaced = [(lineno, oup) for _, oup, lineno in self.rows if oup != oup.strip()]
        if spaced and _main_process():  # (torchrun's rank 0 alone says it) trained as the course trains them,
            # with a word: the model learns to write the spaces
            lineno, oup = spaced[0]
            print(f"note: {path}:{lineno}: the place {oup!r} has spaces around it"
                  f"{f' ({len(spaced)} lines)' if len(spaced) > 1 else ''}; the model learns to write them, and "
                  f"run.py's evaluation (the course's evaluate_places) counts such answers wrong: remove them",
                  file=sys.stderr)
        for inp, oup, lineno in self.rows:
            check_chars(inp + oup, self.stoi, path, lineno)
            if len(inp) + len(oup) + 2 > self.block_size:
                raise DataError(f"{path}:{lineno}: question and place take {len(inp) + len(oup) + 2} characters "
                                f"with their MASKs, more than the block size {self.block_size}; shorten the line "
                                f"(a larger --block_size needs params pretrained with it)")
        # the examples, read at every access as the course's class reads them: a program may cut or reorder them
        self.data = [f"{inp}\t{oup}" for inp, oup, _ in self.rows]

    def __len__(self):
        # the course's len(self.data) - 1 left out the empty string its split leaves after the file's last newline:
        # data a program gives in that form ends there too, and the rows parsed here have no such line
        return len(self.data) - (1 if self.data and self.data[-1] == "" else 0)

    def __getitem__(self, idx):
        inp, oup = self.data[idx].split("\t")
        x = inp + self.MASK_CHAR + oup + self.MASK_CHAR
        x = x + self.PAD_CHAR * (self.block_size - len(x))
        y = self.PAD_CHAR * (len(inp) - 1) + x[len(inp):]
        x = x[:-1]
        # (block_size - 1,) each: torch.tensor([self.stoi[c] for c in x]) and the same for y, in one C pass
        table = current_table(self)
        return encode(x, table), encode(y, table)


class CharCorruptionDataset(Dataset):
    """Span-corruption examples drawn afresh at every access, from the lines of `data`."""

    def __init__(self, data, block_size, path="<pretraining corpus>"):
        self.MASK_CHAR = MASK_CHAR
        self.PAD_CHAR = PAD_CHAR
        if path != "<pretraining corpus>" and not data.strip():  # a file: its vocabulary would be MASK and PAD
            raise DataError(f"{path}: the pretraining corpus is empty; it needs one biography a line (data/wiki.txt "
                            f"is the embedded corpus)")
        if path != "<pretraining corpus>" and all("\t" in line for line in data.split("\n") if line.strip()):
            # every line question<TAB>place: a finetuning or evaluation file given for wiki.txt, which has no tab
            raise DataError(f"{path}: every line holds a tab, as the question files' question<TAB>place lines do; the "
                            f"pretraining corpus is biographies, one a line without tabs: give the wiki.txt")
        if path != "<pretraining corpus>" and "\0" in data:  # a character of the vocabulary, quietly, before
            lineno = data.count("\n", 0, data.index("\0")) + 1
            raise DataError(f"{path}:{lineno}: a NUL byte (U+0000), which no text holds: the file is damaged (a crash "
                            f"can leave a run of zeros in one); copy the corpus again, or remove the NULs")
        chars = sorted(set(data))
        for special, name in ((MASK_CHAR, "MASK"), (PAD_CHAR, "PAD")):
            if special in chars:
                lineno = data.count("\n", 0, data.index(special)) + 1
                raise ReservedCharacter(f"{path}:{lineno}: the reserved {name} character {special!r} "
                                        f"(U+{ord(special):04X}) is in the pretraining corpus; remove it from the "
                                        f"corpus")
        chars.insert(0, MASK_CHAR)
        chars.insert(0, PAD_CHAR)
        self.stoi = {ch: i for i, ch in enumerate(chars)}
        self.itos = {i: ch for i, ch in enumerate(chars)}
        current_table(self)  # encode's table (remade if a program changes stoi later)
        self.block_size = block_size
        self.vocab_size = len(chars)
        self.data = data.split("\n")
        # the XCS224N starter's constructor sets these too, so that a __getitem__ written against it (a
        # student's own) runs here; this one's spec reads them as numbers: 3/4 of the block, a quarter masked
        self.max_context_size = int(block_size * 3 / 4)
        self.masking_percent = 0.25
        self.item = None

    def __len__(self):
        return len(self.data)

    def __getitem__(self, idx):
        # a document cut to int(7/8 block) plus 3 MASKs must fit the block; checked here, as the course's
        # constructor takes any size (a program may build one only for its vocabulary)
        if self.block_size < MIN_BLOCK:
            raise ValueError(f"block_size must be at least {MIN_BLOCK} for span corruption (7/8 of it for the "
                             f"text, then 3 MASKs), got {self.block_size}")
        document = self.data[idx]
        # 1. truncate to a random length in [4, min(len(document), int(block_size*7/8))]: a short document
        # is cut too (it stays whole only when that length is drawn, or when it has under 4 characters)
        cap = min(len(document), int(self.block_size * 7 / 8))
        if cap >= 4:
            document = document[:random.randint(4, cap)]
        n = len(document)
        # 2. masked span: length drawn uniformly from [1, n/2 - 1] with unbiased rounding, so it
        # averages exactly n/4 and is sometimes longer, sometimes shorter than n/4
        if n >= 4:
            lo, hi = 1.0, n / 2 - 1
            u = lo + (hi - lo) * random.random()
            m = int(u) + (1 if random.random() < u - int(u) else 0)
        else:
            m = min(n, 1)
        start = random.randint(0, n - m)
        prefix, masked, suffix = document[:start], document[start:start + m], document[start + m:]
        # 3. prefix MASK suffix MASK masked MASK, padded to block_size
        masked_string = prefix + MASK_CHAR + suffix + MASK_CHAR + masked + MASK_CHAR
        masked_string = masked_string + PAD_CHAR * (self.block_size - len(masked_string))
        # 4. next-character prediction
        # (block_size,): torch.tensor([self.stoi[c] for c in masked_string]), in the vocabulary held now
        ids = encode(masked_string, current_table(self))
        # (block_size - 1,) each, the course's ids[:-1] and ids[1:]: rows of one (2, block_size - 1) copy,
        # so they do not overlap (writing into x leaves y as it is, as with the course's two tensors)
        x, y = torch.stack((ids[:-1], ids[1:])).unbind()
        return x, y


def _main():
    here = os.path.dirname(os.path.abspath(__file__))
    if os.path.dirname(here) not in sys.path:  # run as a script: src/, so that the package imports
        sys.path.insert(0, os.path.dirname(here))
    from submission.cli import lenient_streams
    lenient_streams()
    argp = argparse.ArgumentParser(description="Print a few examples of a dataset.")
    argp.add_argument("dataset_type", choices=["namedata", "charcorruption"],
                      help="Type of dataset to sample from.")
    argp.add_argument("--data-dir", default=os.path.join(here, "..", "..", "data"),
                      help="folder with wiki.txt and birth_places_train.tsv (default: the repo's data/)")
    args = argp.parse_args()
    wiki = os.path.join(args.data_dir, "wiki.txt")
    try:
        text = read_text(wiki, "pretraining corpus")
        corruption_dataset = CharCorruptionDataset(text, 128)
        if args.dataset_type == "namedata":
            train = os.path.join(args.data_dir, "birth_places_train.tsv")
            dataset = NameDataset(read_text(train, "finetuning corpus"), corruption_dataset, path=train)
        else:
            dataset = corruption_dataset
    except DataError as e:
        raise SystemExit(f"error: {e}")
    # the course's line, char for char: len(data) counts the newlines between the biographies, and the
    # unique count is vocab_size (PAD and MASK included, as the course's len(chars) is)
    print("data has %d characters, %d unique." % (len(text), corruption_dataset.vocab_size))
    for _, (x, y) in zip(range(4), dataset):
        print("x:", "".join(dataset.itos[int(c)] for c in x))
        print("y:", "".join(dataset.itos[int(c)] for c in y))


def _script():
    """`python src/submission/dataset.py` (or CS224N's `python src/dataset.py`): _main, stopping quietly at a
    closed pipe."""
    try:
        _main()
        sys.stdout.flush()  # a closed pipe shows here, not at exit's flush (stdout to a pipe is buffered)
    except KeyboardInterrupt:  # it writes no file: one line, as the other tools say it
        print("interrupted", file=sys.stderr)
        raise SystemExit(130)
    except BrokenPipeError:  # `dataset.py namedata | head`: stop quietly, as a shell tool does
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        raise SystemExit(141)


if __name__ == "__main__":
    _script()

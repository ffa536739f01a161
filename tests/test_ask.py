"""src/ask.py: the probabilities it prints are the model's (batched and padded, equal to scoring each
place alone, the cached path equal to the full batch; summing to 1 over every possible continuation),
its answer is the evaluation's, and a
model trained on two people answers each with its place; bad texts are one line each.

Run:  python -m pytest -q tests/test_ask.py
"""
import io
import os

import pytest
import torch
import torch.nn.functional as F

import ask
from submission import GPT, GPTConfig
from submission.dataset import MASK_CHAR, PAD_CHAR, CharCorruptionDataset
from submission.utils import predict_places, sample

PEOPLE = [("Ann Bo", "Oslo"), ("Cy Du", "Rome"), ("Ed Fa", "Lima")]
SIZE = dict(n_layer=2, n_head=2, n_embd=32)
SIZE_FLAGS = ["--n_layer", "2", "--n_head", "2", "--n_embd", "32", "--block_size", "48"]


def random_model(vocab=12, block=32, seed=0, **config):
    torch.manual_seed(seed)
    model = GPT(GPTConfig(vocab, block, **dict(SIZE, **config)))
    for p in model.parameters():
        p.data.normal_(0, 0.3)  # a random model with decided preferences
    return model.eval()


def test_a_name_asks_the_course_question():
    assert ask.as_question("Emily Lee") == "Where was Emily Lee born?"
    assert ask.as_question("  Emily Lee \n") == "Where was Emily Lee born?"
    assert ask.as_question("Where was Emily Lee born?") == "Where was Emily Lee born?"
    assert ask.as_question("Who is Emily Lee?") == "Who is Emily Lee?"
    assert ask.as_question("Where was Emily Lee born") == "Where was Emily Lee born?"  # its "?" forgotten
    assert ask.as_question("where was emily lee born ") == "where was emily lee born?"
    assert ask.as_question("WHERE WAS EMILY LEE BORN") == "WHERE WAS EMILY LEE BORN?"  # in capitals, as typed
    assert ask.as_question("Where was Emily Lee born?\u2047") == "Where was Emily Lee born?\u2047"  # not wrapped again
    assert ask.as_question("Where was Emily Lee born.") == ask.as_question("Where was Emily Lee born!") == \
        "Where was Emily Lee born?"


def test_batched_log_probs_equal_each_continuation_scored_alone():
    model = random_model()
    prompt = [3, 7, 1, 4]
    conts = [[5], [2, 9, 1], [8, 8, 8, 8, 1], [1]]  # different lengths: the batch is padded
    got = ask.log_probs(model, prompt, conts)
    assert len(got) == len(conts)  # zip below stops at the shorter
    for c, lp in zip(conts, got):
        seq = torch.tensor([prompt + c])
        logits, _ = model(seq[:, :-1])
        each = F.log_softmax(logits[0], dim=-1)[torch.arange(len(prompt) - 1, seq.size(1) - 1), seq[0, len(prompt):]]
        assert torch.allclose(lp, each.sum(), atol=1e-5), (c, lp, each.sum())


@pytest.mark.parametrize("synthesizer", [False, True])
def test_cached_log_probs_equal_the_full_batch(synthesizer, monkeypatch):
    """log_probs runs the prompt once and the continuations through the key/value cache, longest first, in
    chunks of `rows`, each leaving after its last id; log_probs_full runs prompt + c[:-1] for every row.
    The same sums, within float32 rounding, for both variants, across a chunk's edge; a model without the
    cache gets the full batch itself."""
    from submission.decoding import log_probs_full
    model = random_model(block=16, seed=1, synthesizer=synthesizer)
    prompt = [3, 7, 1, 4, 2]
    conts = [[int(t) for t in torch.randint(1, 12, (n,))] for n in (1, 3, 7, 2, 5, 1, 4, 6, 2, 3)]
    full = log_probs_full(model, prompt, conts)
    import submission.decoding as decoding
    steps = []
    real_decode = decoding._decode
    monkeypatch.setattr(decoding, "_decode", lambda *a: steps.append(a[1].shape) or real_decode(*a))
    for rows in (128, 3):
        assert torch.allclose(ask.log_probs(model, prompt, conts, rows=rows), full, atol=1e-4, rtol=1e-5)
    # the cached path ran: one step a position after each chunk's first, the rows that reach it
    assert steps[:6] == [(k, 1) for k in (8, 6, 4, 3, 2, 1)], steps
    assert torch.allclose(ask.log_probs(model, prompt, conts + [[]]), torch.cat([full, torch.zeros(1)]))  # empty: 0


    class Uncached(torch.nn.Module):  # a model of the course's forward alone (no cache): the full batch itself
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, idx):
            return self.inner(idx)

    plain = Uncached(model).eval()
    assert torch.equal(ask.log_probs(plain, prompt, conts), log_probs_full(model, prompt, conts))
    # a prompt and continuation beyond the model's input: BlockOverflow naming the sizes (it went to the full
    # batch, whose forward raised at a width nobody asked for)
    from submission.model import BlockOverflow
    limit = model.get_block_size() - (1 if synthesizer else 0)
    with pytest.raises(BlockOverflow, match=f"read {limit + 1} positions; the model takes at most {limit}"):
        ask.log_probs(model, prompt, [[1] * (limit + 2 - len(prompt))])


@pytest.mark.parametrize("synthesizer", [False, True])
def test_log_probs_that_just_fill_the_block_run_from_the_cache(synthesizer, monkeypatch):
    """A continuation whose prompt + c[:-1] fills the longest input exactly (the block; one less with the
    synthesizer) still fits the cache: it is scored there, one position a step, not by the full batch."""
    from submission.decoding import log_probs_full, longest_input
    import submission.decoding as decoding
    model = random_model(block=16, seed=2, synthesizer=synthesizer)
    prompt = [3, 7, 1, 4, 2]
    longest = longest_input(model) - len(prompt) + 1  # prompt + c[:-1] is the longest input
    conts = [[int(t) for t in torch.randint(1, 12, (n,))] for n in (longest, 2, longest - 3, 1)]
    full = log_probs_full(model, prompt, conts)
    steps = []
    real_decode = decoding._decode
    monkeypatch.setattr(decoding, "_decode", lambda *a: steps.append(a[1].shape[0]) or real_decode(*a))
    assert torch.allclose(ask.log_probs(model, prompt, conts), full, atol=1e-4, rtol=1e-5)
    assert len(steps) == longest - 1 and steps[0] == 3 and steps[-1] == 1, steps  # the cache's path ran


def test_log_probs_of_a_model_left_training_are_its_eval_ones():
    """Scoring turns dropout off, on the cached path too: a model handed over in training mode, with
    dropout everywhere, scores as in eval mode, the same each time."""
    from submission.decoding import log_probs_full
    torch.manual_seed(3)
    model = GPT(GPTConfig(12, 16, n_layer=2, n_head=2, n_embd=32, embd_pdrop=0.5, resid_pdrop=0.5, attn_pdrop=0.5))
    for p in model.parameters():
        p.data.normal_(0, 0.3)
    prompt = [3, 7, 1, 4, 2]
    conts = [[5, 9, 1], [2], [8, 8, 6, 1]]
    got = []
    for _ in range(2):
        model.train()
        got.append(ask.log_probs(model, prompt, conts))
    model.eval()
    expected = log_probs_full(model, prompt, conts)
    assert all(torch.allclose(g, expected, atol=1e-4, rtol=1e-5) for g in got), (got, expected)


def test_the_probabilities_of_every_continuation_sum_to_one():
    model = random_model(vocab=6)
    prompt = [2, 3]
    singles = [[t] for t in range(6)]
    pairs = [[a, b] for a in range(6) for b in range(6)]
    assert abs(ask.log_probs(model, prompt, singles).exp().sum().item() - 1) < 1e-5
    assert abs(ask.log_probs(model, prompt, pairs).exp().sum().item() - 1) < 1e-5


def write_world(folder, people=PEOPLE, dev=1):
    wiki = "".join(f"{n} was born in {p}. {n} wrote books.\n" for n, p in people) + "Where was it? Nowhere.\n"
    (folder / "wiki.txt").write_text(wiki, encoding="utf-8")
    tsv = lambda part: "".join(f"Where was {n} born?\t{p}\n" for n, p in part)  # noqa: E731
    (folder / "birth_places_train.tsv").write_text(tsv(people[dev:]), encoding="utf-8")
    (folder / "birth_dev.tsv").write_text(tsv(people[:dev]), encoding="utf-8")
    return CharCorruptionDataset(wiki, 48)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(data folder, params path) of a model that has read each question with its answer, and each
    biography: an overfit batch, so it knows all three people both ways."""
    folder = tmp_path_factory.mktemp("ask")
    vocab = write_world(folder)
    texts = [f"Where was {n} born?{MASK_CHAR}{p}{MASK_CHAR}" for n, p in PEOPLE]
    texts += [f"{n} was born in {p}." for n, p in PEOPLE]
    width = max(len(t) for t in texts)
    ids = torch.tensor([[vocab.stoi[c] for c in t.ljust(width, PAD_CHAR)] for t in texts])  # (6, width)
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab.vocab_size, 48, embd_pdrop=0, resid_pdrop=0, attn_pdrop=0, **SIZE))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(300):
        _, loss = model(ids[:, :-1], ids[:, 1:])  # PAD (id 0) targets are ignored
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.05
    torch.save(model.state_dict(), folder / "m.params")
    return folder, folder / "m.params"


def run_main(argv, capsys, stdin=None):
    status = ask.main(argv, stdin=stdin)
    out, err = capsys.readouterr()
    return status, out, err


def test_a_trained_model_answers_each_person_with_its_place(trained, capsys):
    folder, params = trained
    argv = ["--params", str(params), "--data-dir", str(folder), *SIZE_FLAGS]
    status, out, err = run_main(argv + ["Ann Bo", "Where was Cy Du born?"], capsys)
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "Where was Ann Bo born?"
    assert lines[1] == "  answer: Oslo   (birth_dev.tsv line 1: Oslo; right)"
    first_place = lines[2].split()
    assert first_place[1] == "Oslo" and float(first_place[0].rstrip("%")) > 90
    at = lines.index("Where was Cy Du born?")
    # Oslo, a dev place only, is scored because it is the answer and the file's place
    assert lines[at - 1] == ""  # a blank line between answers
    assert lines[at - 2].startswith("  the 2 places of birth_places_train.tsv and 'Oslo': 9")
    assert lines[at + 1] == "  answer: Rome   (birth_places_train.tsv line 1: Rome; right)"
    assert lines[at + 2].split()[1] == "Rome"
    # the places listed for Cy Du are the finetuning file's: Oslo is neither its answer nor its place
    listed = [ln.split()[1] for ln in lines[at + 2:] if ln.startswith("  ") and "%" in ln.split()[0]]
    assert sorted(listed) == ["Lima", "Rome"]
    assert lines[-1].startswith("  the 2 places of birth_places_train.tsv: ")
    # beyond --top, the file's place is still listed, with its rank
    status, out, _ = run_main(argv + ["--top", "0", "Ann Bo"], capsys)
    assert out.splitlines()[2].endswith("%  Oslo   (the file's place, 1 of 3)")


def test_the_answer_is_the_evaluations_greedy_answer(trained):
    folder, params = trained
    vocab = CharCorruptionDataset((folder / "wiki.txt").read_text(encoding="utf-8"), 48)
    model = GPT(GPTConfig(vocab.vocab_size, 48, **SIZE))
    model.load_state_dict(torch.load(params))
    asker = ask.Asker(model.eval(), vocab, ask.read_places(str(folder)))
    for q in ["Where was Ed Fa born?", "Where was Ann Fa born?", "Where was Cy Bo born?"]:
        result = asker.ask(q)
        # the course's evaluation: sample 32 characters after question + MASK, keep them up to the next MASK
        x = torch.tensor([[vocab.stoi[c] for c in q + MASK_CHAR]])
        completion = "".join(vocab.itos[int(i)] for i in sample(model, x, 32)[0])
        assert result["answer"] == completion.split(MASK_CHAR)[1]
        probs = [p for _, p in result["probabilities"]]
        assert probs == sorted(probs, reverse=True)


def test_complete_probes_the_biographies(trained, capsys):
    folder, params = trained
    argv = ["--params", str(params), "--data-dir", str(folder), *SIZE_FLAGS, "--complete", "--chars", "5",
            "Ed Fa was born in "]
    status, out, err = run_main(argv, capsys)
    lines = out.splitlines()
    assert status == 0 and lines[0] == "Ed Fa was born in "
    assert lines[1] == "  answer: Lima."  # five characters, no known-answer lookup for a sentence
    assert lines[2].split()[1] == "Lima" and float(lines[2].split()[0].rstrip("%")) > 90
    # a place may begin another ("Mexico", "Mexico City"): the shares overlap, so no total is given
    assert lines[-1] == "  each: the probability that the continuation starts with the place (the 2 places of " \
                        "birth_places_train.tsv)"


def test_standard_input_gives_one_text_a_line_and_bad_ones_name_their_line(trained, capsys):
    folder, params = trained
    argv = ["--params", str(params), "--data-dir", str(folder), *SIZE_FLAGS, "--top", "1"]
    stdin = io.StringIO("Ann Bo\n\nAnn Bø\n" + "Ann " * 20 + "\nWhere was Ed Fa born?\r\n")
    status, out, err = run_main(argv, capsys, stdin=stdin)
    assert status == 2
    assert [ln for ln in out.splitlines() if not ln.startswith("  ")] == [
        "Where was Ann Bo born?", "", "Where was Ed Fa born?", "", "2 of the 2 answers checked are right (100.0%)"]
    errs = err.splitlines()
    assert len(errs) == 2  # the line of standard input, and the corpus by its path (its folder was not said)
    wiki = os.path.join(str(folder), "wiki.txt")
    assert errs[0].startswith(f"ask.py: standard input line 3: characters outside the vocabulary of {wiki}: 'ø'")
    assert errs[1].startswith("ask.py: standard input line 4: the question 'Where was Ann Ann ") and \
        "shorten it" in errs[1]
    # a TSV line of three fields: run.py refuses it in a corpus, and ask checked it against its second field
    stdin = io.StringIO("Where was Ed Fa born?\tLima\textra\nWhere was Ed Fa born?\tLima\n")
    status, out, err = run_main(argv, capsys, stdin=stdin)
    assert status == 2 and err == ("ask.py: standard input line 1: expected question<TAB>place, found 3 "
                                   "tab-separated fields\n"), err


def test_a_file_of_questions_ends_with_the_tally_of_right_answers(trained, capsys):
    """`ask < data/birth_dev.tsv` marked each answer right or wrong and left the counting to the reader;
    the last line counts them (a question without a place to check is not counted; one question alone, or
    questions given as arguments, get no tally)."""
    folder, params = trained
    argv = ["--params", str(params), "--data-dir", str(folder), *SIZE_FLAGS, "--top", "1"]
    lines = "".join(f"Where was {n} born?\t{p}\n" for n, p in PEOPLE) + f"Where was {PEOPLE[0][0]} born?\tRome\n"
    status, out, err = run_main(argv, capsys, stdin=io.StringIO(lines + "Ed Bo\n"))  # a name of no file
    assert status == 0 and out.count("; right)") == len(PEOPLE) and out.count("; wrong)") == 1, out
    n = len(PEOPLE) + 1
    assert out.endswith(f"\n\n{len(PEOPLE)} of the {n} answers checked are right ({len(PEOPLE) / n:.1%})\n")
    status, out, err = run_main(argv, capsys, stdin=io.StringIO(lines.split("\n")[0] + "\n"))
    assert "answers checked" not in out and "; right)" in out
    status, out, err = run_main(argv + [n for n, _ in PEOPLE], capsys)
    assert "answers checked" not in out and out.count("; right)") == len(PEOPLE)


@pytest.mark.parametrize("text, says", [
    ("", "an empty text"),
    ("   ", "an empty text"),
    (f"Ann{MASK_CHAR}Bo", "the MASK character"),
    (f"Ann{PAD_CHAR}Bo", "the PAD character"),
])
def test_texts_the_model_cannot_read_are_one_line_each(trained, capsys, text, says):
    folder, params = trained
    argv = ["--params", str(params), "--data-dir", str(folder), *SIZE_FLAGS, text, "Ann Bo"]
    status, out, err = run_main(argv, capsys)
    assert status == 2 and err.count("\n") == 1 and err.startswith("ask.py: TEXT 1: ") and says in err
    assert out.startswith("Where was Ann Bo born?\n")  # the other text is still answered


def test_nothing_to_ask_says_how_to_ask(trained, capsys):
    folder, params = trained
    argv = ["--params", str(params), "--data-dir", str(folder), *SIZE_FLAGS]
    status, out, err = run_main(argv, capsys, stdin=io.StringIO("\n\n"))
    assert status == 2 and out == "" and err.count("\n") == 1 and "nothing to ask" in err


def test_bad_files_and_flags_are_one_line_errors(trained, tmp_path, capsys):
    from submission.utils import run_cli
    folder, params = trained
    base = ["--params", str(params), "--data-dir", str(folder), *SIZE_FLAGS, "Ann Bo"]
    cases = [
        (base[:1] + [str(tmp_path / "none.params")] + base[2:], "params file not found"),
        (base + ["--variant", "synthesizer"], "these are vanilla params, but the model is synthesizer; pass "
                                              "--variant vanilla"),
        (base[:3] + [str(tmp_path)] + base[4:], "wiki.txt: pretraining corpus not found"),
        (base + ["--n_embd", "64"], "64"),
        (base + ["--chars", "0"], "--chars must be at least 1"),
        (base + ["--top", "-1"], "--top must be 0 or more"),
    ]
    for argv, says in cases:
        with pytest.raises(SystemExit) as stop:
            run_cli(lambda: ask.main(argv))
        out, err = capsys.readouterr()
        assert stop.value.code == 2 and err.count("\n") == 1 and says in err, (argv, err)
        assert out == ""


@pytest.mark.parametrize("synth", [False, True])
def test_the_longest_text_fits_and_one_more_character_is_refused(synth):
    """The synthesizer forwards at most block_size - 1 positions: a text that fits the vanilla block
    overflowed it (a ValueError from the attention) before the room counted it."""
    vocab = CharCorruptionDataset("Ann Bo was born in Oslo. Where? Rome\n", 24)
    model = GPT(GPTConfig(vocab.vocab_size, 24, synthesizer=synth, **SIZE)).eval()
    asker = ask.Asker(model, vocab, ["Oslo", "Rome"])
    longest = 24 - (1 if synth else 0)  # text + MASK + "Oslo" + MASK, less the last id
    assert asker.room == longest + 1 - len("Oslo⁇") - 1
    question = "W" * (asker.room - 1) + "?"
    result = asker.ask(question)
    assert result["prompt"] == question and {p for p, _ in result["probabilities"]} >= {"Oslo", "Rome"}
    assert sum(p for _, p in result["probabilities"]) <= 1 + 1e-6
    with pytest.raises(ask.AskError, match=f"the question 'W+\\?' is {asker.room + 1} characters"):
        asker.ask("W" * asker.room + "?")


def test_an_answer_that_would_print_misleadingly_is_quoted():
    base = {"prompt": "Where was Ann Bo born?", "known": None, "extra": [], "complete": False,
            "probabilities": [("Oslo", 0.5)]}
    for said, shown in [("Oslo", "Oslo"), ("", "''"), (" Oslo", "' Oslo'"), ("Os\nlo", "'Os\\nlo'")]:
        lines = ask.format_result(dict(base, answer=said), top=1).splitlines()
        assert lines[1] == f"  answer: {shown}" and len(lines) == 4
    # a question in neither labelled file read is said to be so (a typo of a real name looks the same otherwise)
    lines = ask.format_result(dict(base, answer="Oslo", looked_in=["birth_dev.tsv"]), top=1).splitlines()
    assert lines[1] == "  answer: Oslo   (not a question of birth_dev.tsv: no place to check it against)"


def test_the_lines_give_small_shares_as_under_a_hundredth_and_the_total_of_every_place():
    """A share that would print as 0.00% says <0.01% (the model gives it something); the last line
    totals every place scored, not only the --top listed."""
    result = {"prompt": "Where was Ann Bo born?", "answer": "Oslo", "known": None, "extra": [], "complete": False,
              "probabilities": [("Oslo", 0.6), ("Rome", 0.25), ("Lima", 0.00004)]}
    assert ask.format_result(result, top=3).splitlines() == [
        "Where was Ann Bo born?", "  answer: Oslo", "   60.00%  Oslo", "   25.00%  Rome", "   <0.01%  Lima",
        "  the 3 places of birth_places_train.tsv: 85.00% of the model's probability"]
    assert ask.format_result(result, top=1).splitlines()[2:] == [
        "   60.00%  Oslo", "  the 3 places of birth_places_train.tsv: 85.00% of the model's probability"]
    small = dict(result, probabilities=[("Oslo", 0.9), ("Rome", 0.0004), ("Lima", 0.00006)])  # shown as they are
    assert ask.format_result(small, top=3).splitlines()[3:5] == ["    0.04%  Rome", "    0.01%  Lima"]


def test_places_are_read_most_frequent_first_and_those_the_vocabulary_cannot_spell_are_counted(tmp_path):
    (tmp_path / "birth_places_train.tsv").write_text("".join(
        f"Where was P{i} born?\t{p}\n" for i, p in enumerate(["Oslo", "Lima", "Rome", "Lima", "Rome", "Lima"])),
        encoding="utf-8")
    assert ask.read_places(str(tmp_path)) == ["Lima", "Rome", "Oslo"]
    (tmp_path / "world").mkdir()
    vocab = write_world(tmp_path / "world")
    model = random_model(vocab=vocab.vocab_size, block=48)
    asker = ask.Asker(model, vocab, ["Rome", "Zürich", "Lima"])  # 'ü' is not in wiki.txt
    assert asker.places == ["Rome", "Lima"] and asker.left_out == 1
    result = asker.ask("Ann Bo")
    assert {p for p, _ in result["probabilities"]} >= {"Rome", "Lima"}
    last = ask.format_result(result, top=1, left_out=asker.left_out).splitlines()[-1]
    assert last.startswith("  the 2 places of birth_places_train.tsv (1 spelled outside the vocabulary left out)")


def bigram_model(vocab, follows, block):
    """A GPT whose greedy next character is follows[c] after c, whatever came before: one-hot token
    embeddings, blocks that add nothing (zero output layers), and a head that maps c to follows[c]."""
    n = vocab.vocab_size
    model = GPT(GPTConfig(n, block, n_layer=1, n_head=1, n_embd=n))
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        model.tok_emb.weight.copy_(10 * torch.eye(n))
        model.ln_f.weight.fill_(1.0)
        for c, after in follows.items():
            model.head.weight[vocab.stoi[after], vocab.stoi[c]] = 10.0
    return model.eval()


def test_complete_stops_at_the_end_of_the_line_and_of_the_block(tmp_path):
    """--complete shows the continuation up to its first newline (the end of a biography), and at most
    what fits in the block after the text, whatever --chars asks for."""
    vocab = write_world(tmp_path)
    # after a space: "Lima.", a newline, "Ed " and so on; after an "o": "kso" over and over
    follows = dict(zip(" Lima.\nEdoks", "Lima.\nEd kso"))
    model = bigram_model(vocab, follows, block=24)
    asker = ask.Asker(model, vocab, ["Rome", "Lima"], complete=True, chars=40)
    assert asker.ask("Ed Fa was born in ")["answer"] == "Lima."  # not "Lima.\nEd Lima.\nEd ..."
    text = "Ann Bo wrote bo"  # 15 characters: 9 more fit in the block of 24
    assert asker.ask(text)["answer"] == "kso" * 3
    assert ask.Asker(model, vocab, ["Rome", "Lima"], complete=True, chars=4).ask(text)["answer"] == "ksok"
    # the printed answer says why a continuation ends early: the biography's line, or a MASK the model wrote
    # (a pretrained model ends a stretch of text with one); not where the limit cut it
    result = asker.ask("Ed Fa was born in ")
    assert "answer: Lima.   (then the model ended the biography's line)" in ask.format_result(result, 0)
    assert "(then" not in ask.format_result(asker.ask(text), 0)
    masking = ask.Asker(bigram_model(vocab, dict(zip(" Lim", "Lim" + MASK_CHAR)), block=24), vocab, ["Rome", "Lima"],
                        complete=True)
    result = masking.ask("Ed Fa was born in ")
    assert result["answer"] == "Lim" and "answer: Lim   (then the model wrote the MASK: in span corruption a " \
        "stretch of text ends at one)" in ask.format_result(result, 0)


def test_an_answer_that_just_fits_the_block_is_scored_beside_the_places(tmp_path):
    """The greedy answer, when it is none of the places, is scored too if question + MASK + answer
    fits the input: at exactly the block it does."""
    vocab = write_world(tmp_path)
    model = bigram_model(vocab, dict(zip(MASK_CHAR + "Oslo", "Oslo" + MASK_CHAR)), block=24)
    asker = ask.Asker(model, vocab, ["Rome", "Lima"])
    question = "W" * (asker.room - 1) + "?"  # the longest question: with its MASK and "Oslo", 24 ids
    assert len(question) + 1 + len("Oslo") == 24
    result = asker.ask(question)
    assert result["answer"] == "Oslo" and result["extra"] == ["Oslo"]
    assert result["probabilities"][0][0] == "Oslo" and result["probabilities"][0][1] > 0.99


def test_a_finetuning_file_without_questions_is_one_line(tmp_path, capsys):
    from submission.utils import run_cli
    write_world(tmp_path)
    (tmp_path / "birth_places_train.tsv").write_text("\n", encoding="utf-8")
    with pytest.raises(SystemExit) as stop:
        run_cli(lambda: ask.main(["--params", str(tmp_path / "m.params"), "--data-dir", str(tmp_path), "Ann Bo"]))
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and "birth_places_train.tsv: no questions" in err


def test_a_question_is_found_in_the_files_whatever_its_case_and_spacing(tmp_path):
    """"where was emily  lee born?" is the file's "Where was Emily Lee born?": it was reported as in
    neither file."""
    (tmp_path / "birth_dev.tsv").write_text("Where was Emily Lee born?\tVienna\n", encoding="utf-8")
    known = ask.read_known(str(tmp_path))
    asked = ask.as_question("where was emily  lee born.")
    found, = known[ask.question_key(asked)]
    assert found == ("birth_dev.tsv", 1, "Vienna", "Where was Emily Lee born?")
    assert ask.question_key("Where was Emily Leeds born?") not in known
    # the model was asked the text as typed: the line says the file spells it otherwise
    result = {"prompt": asked, "answer": "Oslo", "known": found, "extra": [], "complete": False,
              "probabilities": [("Oslo", 0.5)]}
    assert ask.format_result(result, top=1).splitlines()[1] == \
        "  answer: Oslo   (birth_dev.tsv line 1, which asks 'Where was Emily Lee born?': Vienna; wrong)"


def byte_stdin(data, errors="surrogateescape"):
    """Standard input as Python opens it on a pipe: text over bytes (surrogateescape, as under a C.UTF-8
    locale; strict, as under en_US.UTF-8)."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors=errors)


def test_tsv_lines_are_asked_and_checked_against_their_place(trained, capsys):
    """`ask < data/birth_dev.tsv`, the course's question<TAB>place file, refused every line: "characters
    outside the vocabulary of wiki.txt: '\\t'". The question is asked and the line's place checks it."""
    folder, params = trained
    argv = ["--params", str(params), "--data-dir", str(folder), *SIZE_FLAGS, "--top", "1"]
    stdin = io.StringIO("Where was Ann Bo born?\tOslo\nWhere was Cy Du born?\tLima\r\nEd Fa\t \n")
    status, out, err = run_main(argv, capsys, stdin=stdin)
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[:2] == ["Where was Ann Bo born?", "  answer: Oslo   (standard input line 1: Oslo; right)"]
    at = lines.index("Where was Cy Du born?")
    assert lines[at + 1] == "  answer: Rome   (standard input line 2: Lima; wrong)"  # the line's place counts
    assert lines[at + 3].endswith("%  Lima   (the place given, 2 of 2)")
    at = lines.index("Where was Ed Fa born?")  # no place after the tab: the files still know it
    assert lines[at + 1] == "  answer: Lima   (birth_places_train.tsv line 2: Lima; right)"
    # a command-line text holding a tab is read the same way
    status, out, err = run_main(argv + ["Ann Bo\tRome"], capsys)
    assert status == 0 and err == "" and out.splitlines()[1] == "  answer: Oslo   (TEXT 1: Rome; wrong)"


def test_a_tsv_lines_question_is_asked_as_the_evaluation_reads_it(trained, tmp_path, capsys):
    """A dev line whose question has a space before the tab: run.py's evaluation asks the field as it is, space
    and all, and ask asked it stripped, so its answers and its tally of a file were not the evaluation's (on the
    demo's 40 dev questions so spaced: ask 13 right, run.py 12). A name in a TSV line still asks the question."""
    import run as driver
    folder, params = trained
    vocab = CharCorruptionDataset((folder / "wiki.txt").read_text(encoding="utf-8"), 48)
    model = GPT(GPTConfig(vocab.vocab_size, 48, **SIZE))
    model.load_state_dict(torch.load(params))
    model.eval()
    asker = ask.Asker(model, vocab, ask.read_places(str(folder)))
    lines = ["Where was Ann Bo born? \tOslo", " Where was Cy Du born?\tRome", "Where was Ed Fa born\tLima"]
    (tmp_path / "dev.tsv").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    questions = driver.read_questions(str(tmp_path / "dev.tsv"), vocab.stoi, 48)
    evaluation = predict_places(model, questions, vocab.stoi, vocab.itos)
    for line, question, answer in zip(lines, questions, evaluation):
        result = asker.ask(line)
        assert (result["prompt"], result["answer"]) == (question, answer)
    assert asker.ask("Ed Fa\tLima")["prompt"] == "Where was Ed Fa born?"
    # a question typed on its own (no TSV line) is still tidied into the course's: stripped, its "?" given back
    assert asker.ask(" Where was Ed Fa born ")["prompt"] == "Where was Ed Fa born?"
    # the question asked is shown quoted where spaces around it would not show
    argv = ["--params", str(params), "--data-dir", str(folder), *SIZE_FLAGS, "--top", "0"]
    status, out, err = run_main(argv, capsys, stdin=io.StringIO(lines[0] + "\n"))
    assert status == 0 and out.splitlines()[0] == "'Where was Ann Bo born? '"


@pytest.mark.parametrize("stdin", [byte_stdin(b"\xef\xbb\xbfAnn Bo\r\nCy Du\n"), io.StringIO("\ufeffAnn Bo\nCy Du\n")],
                         ids=["bytes", "text"])
def test_a_byte_order_mark_on_standard_input_is_dropped(trained, capsys, stdin):
    """A file saved by Windows Notepad begins with a byte-order mark: its first line was refused with
    "characters outside the vocabulary of wiki.txt: '\\ufeff'". It is dropped, as read_text drops it."""
    folder, params = trained
    argv = ["--params", str(params), "--data-dir", str(folder), *SIZE_FLAGS, "--top", "1"]
    status, out, err = run_main(argv, capsys, stdin=stdin)
    assert status == 0 and err == ""
    assert ([ln for ln in out.splitlines() if ln.startswith("Where")]
            == ["Where was Ann Bo born?", "Where was Cy Du born?"])


@pytest.mark.parametrize("errors", ["surrogateescape", "strict"])
@pytest.mark.parametrize("data, says", [
    (b"Ann Bo\nRen\xe9e\nCy Du\n", "standard input is not UTF-8: line 2, byte 10 is not valid UTF-8; save it as UTF-8"),
    ("Ann Bo\nCy Du\n".encode("utf-16"), "standard input is UTF-16 text (byte-order mark FF FE), not UTF-8; "
                                         "save it as UTF-8"),
    (b"\xfe\xff" + "Ann Bo\n".encode("utf-16-be"), "(byte-order mark FE FF)"),
], ids=["latin-1", "utf-16", "utf-16-be"])
def test_standard_input_that_is_not_utf8_is_one_line(trained, capsys, data, says, errors):
    """Latin-1 or UTF-16 standard input was refused line by line, naming surrogate escapes ('\\udce9',
    '\\x00\\udcfe\\udcff') as characters outside the vocabulary, or (a strict locale) ended in a
    UnicodeDecodeError traceback. It is one line saying where it is not UTF-8, and exit status 2; the
    lines before it are answered, none after."""
    folder, params = trained
    argv = ["--params", str(params), "--data-dir", str(folder), *SIZE_FLAGS, "--top", "1"]
    status, out, err = run_main(argv, capsys, stdin=byte_stdin(data, errors))
    assert status == 2 and err.count("\n") == 1 and err.startswith("ask.py: standard input is ") and says in err
    asked = [ln for ln in out.splitlines() if ln.startswith("Where")]
    assert asked == (["Where was Ann Bo born?"] if says.startswith("standard input is not") else [])


def test_a_terminal_is_prompted_and_told_to_use_utf8(trained, capsys):
    """On a terminal each line still gets its prompt, now that the bytes are read; bad bytes say how
    to fix a terminal, not a file."""
    class Terminal(io.TextIOWrapper):
        def isatty(self):
            return True

    folder, params = trained
    argv = ["--params", str(params), "--data-dir", str(folder), *SIZE_FLAGS, "--top", "1"]
    stdin = Terminal(io.BytesIO(b"Ann Bo\nRen\xe9e\n"), encoding="utf-8", errors="surrogateescape")
    status, out, err = run_main(argv, capsys, stdin=stdin)
    assert status == 2 and out.startswith("Where was Ann Bo born?\n")
    assert err == "question or name (Ctrl-D ends)> " * 2 + \
        "ask.py: standard input is not UTF-8: line 2, byte 10 is not valid UTF-8; set the terminal to UTF-8\n"


def test_an_empty_corpus_is_named_as_empty_by_every_tool(tmp_path, capsys):
    """run.py said "the pretraining corpus is empty"; ask, plots, memorised and deliverables built a
    vocabulary of MASK and PAD from it and then blamed the params: "params have a vocabulary of 167
    characters, the pretraining corpus gives 2"."""
    import memorised
    import plots
    from submission.dataset import DataError
    wiki = tmp_path / "wiki.txt"
    wiki.write_text("\n\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"^{wiki}: the pretraining corpus is empty; it needs one biography a line"):
        CharCorruptionDataset(wiki.read_text(encoding="utf-8"), 128, str(wiki))
    CharCorruptionDataset("", 128)  # the course's call, without a file: as the course, no check
    params = str(tmp_path / "none.params")  # never read: the corpus fails first
    for main, argv in ((ask.main, ["--params", params, "--data-dir", str(tmp_path), "Ann Lee"]),
                       (plots.main, ["attention", "--params", params, "--pretrain_corpus_path", str(wiki),
                                     "--question", "Where was Ann Lee born?", "--out", str(tmp_path / "a.png")]),
                       (memorised.main, ["--params", params, "--data-dir", str(tmp_path)])):
        try:
            status = main(argv)
        except DataError as e:  # the tools under run_cli print it as one line
            assert str(e).startswith(f"{wiki}: the pretraining corpus is empty"), e
        else:
            err = capsys.readouterr().err
            assert status == 2 and "the pretraining corpus is empty" in err, err


def test_params_with_their_world_beside_them_are_asked_without_flags(trained, tmp_path, capsys):
    """The demo keeps its world in runs/demo/data beside its params, of another size than the course's:
    `ask --params runs/demo/vanilla.finetune.params NAME` stopped at the vocabulary, then at the size, one
    flag at a time. The card names the vocabulary (so the folder) and the heads, the shapes the rest."""
    import shutil
    import memorised
    from submission.card import corpus_record, write_card
    from submission.dataset import DataError
    from submission.params import ParamsError
    folder, params = trained
    out = tmp_path / "demo"
    shutil.copytree(folder, out / "data")
    shutil.copy(params, out / "m.params")
    vocab = CharCorruptionDataset((folder / "wiki.txt").read_text(encoding="utf-8"), 48)
    model = GPT(GPTConfig(vocab.vocab_size, 48, **SIZE))
    write_card(str(out / "m.params"), model, vocab.itos, "finetune")
    status, said, err = run_main(["--params", str(out / "m.params"), "Ann Bo"], capsys)
    assert status == 0 and said.splitlines()[1] == "  answer: Oslo   (birth_dev.tsv line 1: Oslo; right)"
    assert err == (f"note: reading {out / 'data'}, the corpus whose vocabulary {out / 'm.params'} was trained with "
                   f"(its card says); --data-dir chooses another\n")
    # a card that records the corpus itself (run.py's since it records one): named as what they were pretrained on
    write_card(str(out / "m.params"), model, vocab.itos, "finetune",
               corpus=corpus_record(str(out / "data" / "wiki.txt")))
    status, said, err = run_main(["--params", str(out / "m.params"), "Ann Bo"], capsys)
    assert status == 0 and err == (f"note: reading {out / 'data'}, the corpus {out / 'm.params'} were pretrained on "
                                   f"(its card says); --data-dir chooses another\n"), err
    with pytest.raises(DataError, match=rf"^{out / 'data'}/birth_places_train.tsv:1: "):  # memorised reads there too
        memorised.main(["--params", str(out / "m.params")])  # (this world is no biography corpus of its layout)
    # flags given win: another head count is refused by the card, as before
    with pytest.raises(ParamsError, match=r"trained with 2 attention heads .* \(--n_head 2\)"):
        ask.main(["--params", str(out / "m.params"), "--n_head", "4", "Ann Bo"])


def test_pretrained_params_asked_a_question_are_named_for_what_they_are(trained, tmp_path, capsys):
    """Pretrained params answer a question with noise (a biography's next characters): nothing said why."""
    import shutil
    from submission.card import write_card
    folder, params = trained
    shutil.copy(params, tmp_path / "p.params")
    vocab = CharCorruptionDataset((folder / "wiki.txt").read_text(encoding="utf-8"), 48)
    write_card(str(tmp_path / "p.params"), GPT(GPTConfig(vocab.vocab_size, 48, **SIZE)), vocab.itos, "pretrain")
    argv = ["--params", str(tmp_path / "p.params"), "--data-dir", str(folder)]
    status, _, err = run_main(argv + ["Ann Bo"], capsys)
    assert status == 0 and err.startswith(f"note: {tmp_path / 'p.params'} were pretrained, not finetuned (their card "
                                          f"says): they were never taught to answer")
    status, _, err = run_main(argv + ["--complete", "Ann Bo was born in "], capsys)
    assert status == 0 and err == ""


def test_a_vanilla_file_without_its_card_whose_width_the_courses_heads_do_not_divide_asks_for_them(
        trained, tmp_path, capsys):
    """Its heads unsaid, the course's 8 were taken: "--n_embd 36 must be a multiple of --n_head 8", flags
    the user never gave."""
    folder, _ = trained
    vocab = CharCorruptionDataset((folder / "wiki.txt").read_text(encoding="utf-8"), 48)
    torch.save(GPT(GPTConfig(vocab.vocab_size, 48, n_layer=1, n_head=4, n_embd=36)).state_dict(), tmp_path / "w.params")
    with pytest.raises(SystemExit) as e:
        ask.main(["--params", str(tmp_path / "w.params"), "--data-dir", str(folder), "Ann Bo"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and f"{tmp_path / 'w.params'} does not say how many heads it has" in err
    assert "give --n_head, a divisor of its width 36" in err
    status, out, _ = run_main(["--params", str(tmp_path / "w.params"), "--data-dir", str(folder), "--n_head", "4",
                               "Ann Bo"], capsys)
    assert status == 0 and out.startswith("Where was Ann Bo born?")


def test_an_empty_corpus_flag_is_refused_by_every_tool(tmp_path, capsys, monkeypatch):
    """`--data-dir "$DIR"` (or `--pretrain_corpus_path "$WIKI"`) with the variable unset read wiki.txt from
    the current folder, or said ": pretraining corpus not found", naming no file; each tool now names the
    empty flag before any file is read."""
    import memorised
    import plots
    monkeypatch.chdir(tmp_path)
    (tmp_path / "wiki.txt").write_text("Ann Lee was born in Oslo.\n", encoding="utf-8")  # must not be read
    params = str(tmp_path / "none.params")
    for main, argv, flag in (
            (ask.main, ["--params", params, "--data-dir", "", "Ann Lee"], "--data-dir"),
            (memorised.main, ["--params", params, "--data-dir", " "], "--data-dir"),
            (plots.main, ["attention", "--params", params, "--pretrain_corpus_path", "", "--question",
                          "Where was Ann Lee born?", "--out", str(tmp_path / "a.png")], "--pretrain_corpus_path")):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        err = capsys.readouterr().err
        assert stop.value.code == 2 and f"error: {flag} is empty; give " in err and err.count("\n") == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wiki.txt"]


def test_pretrained_tells_a_wrong_answer_not_stored_from_not_retrieved(tmp_path, capsys):
    """--pretrained probes the params finetuning started from as memorised.py does (the person's wiki line
    cut before the place, continued greedily): each checked answer gets one of four verdicts, a person the
    probe cannot reach says so, and a file of questions ends with the demo's memorised and retrieved counts.
    Two bigram models: the pretrained one continues a space with "Roma." and "(" with "Kiev)" (the probe reads a
    character past the place: it must end there); the finetuned one answers "Kiev" to every question."""
    import memorised
    people = [("Cy Du", "Roma", "Cy Du was born in Roma."), ("Ed Fa", "Kiev", "Ed Fa was born in Kiev."),
              ("Ann Bo", "Kiev", "Ann Bo (Kiev)."), ("Al Ko", "Roma", "Al Ko (Roma)."),
              ("Gu Ha", "Roma", "Gu Ha was born in Roma."), ("Bo Ek", "Roma", "Bo Ek.")]
    (tmp_path / "wiki.txt").write_text("".join(line + "\n" for *_, line in people) + "Where was it?\n",
                                       encoding="utf-8")
    tsv = lambda part: "".join(f"Where was {n} born?\t{p}\n" for n, p, _ in part)  # noqa: E731
    (tmp_path / "birth_places_train.tsv").write_text(tsv(people[:2]), encoding="utf-8")  # wiki lines 1-2
    (tmp_path / "birth_dev.tsv").write_text(tsv(people[2:]), encoding="utf-8")          # wiki lines 3-6
    vocab = CharCorruptionDataset((tmp_path / "wiki.txt").read_text(encoding="utf-8"), 48)
    pretrained = bigram_model(vocab, dict(zip(" Roma(Kiev", "Roma.Kiev)")), block=48)
    finetuned = bigram_model(vocab, dict(zip(MASK_CHAR + "Kiev", "Kiev" + MASK_CHAR)), block=48)
    torch.save(pretrained.state_dict(), tmp_path / "p.params")
    torch.save(finetuned.state_dict(), tmp_path / "f.params")
    plain = ["--params", str(tmp_path / "f.params"), "--data-dir", str(tmp_path), "--n_layer", "1", "--n_head", "1",
             "--n_embd", str(vocab.vocab_size), "--block_size", "48", "--top", "0"]
    argv = plain + ["--pretrained", str(tmp_path / "p.params")]
    stdin = io.StringIO((tmp_path / "birth_places_train.tsv").read_text(encoding="utf-8")
                        + (tmp_path / "birth_dev.tsv").read_text(encoding="utf-8"))
    status, out, err = run_main(argv, capsys, stdin=stdin)
    assert status == 0 and err == "", err
    said = [ln for ln in out.splitlines() if ln.startswith("  pretraining: ")]
    assert said == [
        "  pretraining: stored, not retrieved   ('Cy Du was born in ' -> 'Roma.')",
        "  pretraining: not stored; right, as finetuning trained this question   ('Ed Fa was born in ' -> 'Roma.')",
        "  pretraining: stored, and retrieved   ('Ann Bo (' -> 'Kiev)')",
        "  pretraining: not stored, so nothing to retrieve   ('Al Ko (' -> 'Kiev)')",
        "  pretraining: stored, not retrieved   ('Gu Ha was born in ' -> 'Roma.')",
        "  pretraining: not probed (not a train or dev person whose wiki line names this place within the characters "
        "pretraining reads)"]
    # (stored, right) for the dev people: (yes, yes), (no, no), (yes, no): not the same counts read the other way
    # round; the two train people's questions are finetuning's own, left out of the counts (a right answer there
    # was trained on: the tally read "retrieved" for it)
    assert out.splitlines()[-1] == ("stored by pretraining: 2 of the 3 probed; retrieved: 1 of those 2; right though "
                                    "not stored: 0 of 1 (2 questions of birth_places_train.tsv left out: finetuning "
                                    "trained them)")
    # a train person stored and answered right was "stored, and retrieved", though finetuning trained the answer
    status, out, _ = run_main(argv, capsys, stdin=io.StringIO("Where was Ed Fa born?\tKiev\n"))
    assert "  pretraining: not stored; right, as finetuning trained this question" in out
    torch.save(bigram_model(vocab, dict(zip(" Kiev", "Kiev.")), block=48).state_dict(), tmp_path / "kiev.params")
    status, out, _ = run_main(argv[:-1] + [str(tmp_path / "kiev.params")], capsys,  # a store of Kiev for all
                              stdin=io.StringIO(tsv(people[:2])))
    assert "  pretraining: stored; right, but finetuning trained this question" in out
    assert out.splitlines()[-1] == ("stored by pretraining: not counted, as the 2 questions probed are all "
                                    "birth_places_train.tsv's, which finetuning trained")
    # the same store as memorised.py's, which the demo's memorised and retrieved columns count
    rows = memorised.memorised_rows(pretrained, str(tmp_path), 48)
    assert rows == {"train": ([0], 2), "dev": ([0, 2], 3)}
    # a TSV line whose place is not the file's is checked against its own place, and not probed
    status, out, _ = run_main(argv + ["Where was Cy Du born?\tKiev", "Ann Bo"], capsys)
    assert "(TEXT 1: Kiev; right)\n  pretraining: not probed" in out
    assert "  pretraining: stored, and retrieved" in out and "probed;" not in out  # no tally for arguments
    # without --pretrained no verdict; with --complete (no answer to judge) a refusal, not a silent ignoring
    status, out, _ = run_main(plain + ["Ann Bo"], capsys)
    assert status == 0 and "pretraining:" not in out
    with pytest.raises(SystemExit) as stop:
        ask.main(argv + ["--complete", "Ann Bo"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and "--pretrained judges the answers" in err, err


def namesakes_world(folder, people, train, follows):
    """(ask's argv with --pretrained, the TSV writer) for a world of `people` ((name, place, wiki line)), the
    first `train` of them train rows, the rest dev: a pretrained bigram model continuing by `follows`, and a
    finetuned one that answers "Kiev" to every question."""
    (folder / "wiki.txt").write_text("".join(line + "\n" for *_, line in people) + "Where was it?\n",
                                     encoding="utf-8")
    tsv = lambda part: "".join(f"Where was {n} born?\t{p}\n" for n, p, _ in part)  # noqa: E731
    (folder / "birth_places_train.tsv").write_text(tsv(people[:train]), encoding="utf-8")
    (folder / "birth_dev.tsv").write_text(tsv(people[train:]), encoding="utf-8")
    vocab = CharCorruptionDataset((folder / "wiki.txt").read_text(encoding="utf-8"), 48)
    torch.save(bigram_model(vocab, follows, block=48).state_dict(), folder / "p.params")
    torch.save(bigram_model(vocab, dict(zip(MASK_CHAR + "Kiev", "Kiev" + MASK_CHAR)), block=48).state_dict(),
               folder / "f.params")
    argv = ["--params", str(folder / "f.params"), "--data-dir", str(folder), "--n_layer", "1", "--n_head", "1",
            "--n_embd", str(vocab.vocab_size), "--block_size", "48", "--top", "0",
            "--pretrained", str(folder / "p.params")]
    return argv, tsv


def test_a_question_in_both_files_is_probed_for_the_person_whose_place_is_checked(tmp_path, capsys):
    """The course's corpus has a dev person whose name a train person has too: the same question in both
    files. A TSV line is checked against its own place, and --pretrained probes the biography of the person
    of that place. The probe kept the dev person's line for the question, so the train person (who asked,
    and whose line states the place) was "not probed". A question asked is checked against the train file's
    row (its first) and the dev row follows it, checked and probed for its own person: the dev person went
    unmentioned, though the answer was right for them and their biography was stored."""
    people = [("Cy Du", "Roma", "Cy Du was born in Roma."), ("Ed Fa", "Kiev", "Ed Fa was born in Kiev."),
              ("Cy Du", "Kiev", "Cy Du (Kiev).")]
    argv, tsv = namesakes_world(tmp_path, people, train=2, follows=dict(zip(" Roma(Kiev", "Roma.Kiev)")))
    stdin = io.StringIO(tsv(people))
    status, out, err = run_main(argv, capsys, stdin=stdin)
    assert status == 0 and err == "", err
    said = [ln for ln in out.splitlines() if ln.startswith("  answer: ") or ln.startswith("  pretraining: ")]
    assert said == ["  answer: Kiev   (standard input line 1: Roma; wrong)",
                    "  pretraining: stored, not retrieved   ('Cy Du was born in ' -> 'Roma.')",
                    "  answer: Kiev   (standard input line 2: Kiev; right)",
                    "  pretraining: not stored; right, as finetuning trained this question   ('Ed Fa was born in ' -> "
                    "'Roma.')",
                    "  answer: Kiev   (standard input line 3: Kiev; right)",
                    "  pretraining: stored, and retrieved   ('Cy Du (' -> 'Kiev)')"]
    status, out, _ = run_main(argv + ["Cy Du", "Where was Cy  Du born?"], capsys)  # asked by name, and as typed
    lines = out.splitlines()
    assert lines[1:5] == ["  answer: Kiev   (birth_places_train.tsv line 1: Roma; wrong)",
                          "  pretraining: stored, not retrieved   ('Cy Du was born in ' -> 'Roma.')",
                          "  also asked by birth_dev.tsv line 1: Kiev; right",
                          "  pretraining: stored, and retrieved   ('Cy Du (' -> 'Kiev)')"]
    assert lines[5].endswith("%  Roma   (the file's place, 2 of 2)")  # the listing follows, ranked for the first row
    at = lines.index("Where was Cy  Du born?")
    assert lines[at + 3] == "  also asked by birth_dev.tsv line 1, which asks 'Where was Cy Du born?': Kiev; right"
    # without --pretrained the other person is still named, with no probe; the tally counts one answer a question
    status, out, _ = run_main(argv[:-2], capsys, stdin=io.StringIO("Cy Du\nEd Fa\n"))
    lines = out.splitlines()
    assert lines[1:3] == ["  answer: Kiev   (birth_places_train.tsv line 1: Roma; wrong)",
                          "  also asked by birth_dev.tsv line 1: Kiev; right"]
    assert "pretraining:" not in out and lines[-1] == "1 of the 2 answers checked are right (50.0%)"


def test_namesakes_of_one_place_are_each_probed_on_their_own_biography(tmp_path, capsys):
    """Two rows asking the same question with the same place (a dev person named and born as a train person)
    are two biographies: each row's probe is of its own wiki line, not the first row's twice."""
    people = [("Cy Du", "Roma", "Cy Du was born in Roma."), ("Ed Fa", "Kiev", "Ed Fa was born in Kiev."),
              ("Cy Du", "Roma", "Cy Du (Roma).")]
    argv, _ = namesakes_world(tmp_path, people, train=2, follows=dict(zip(" Roma(Kiev", "Roma.Kiev)")))
    status, out, err = run_main(argv + ["Cy Du"], capsys)
    assert status == 0 and err == "", err
    assert out.splitlines()[1:5] == ["  answer: Kiev   (birth_places_train.tsv line 1: Roma; wrong)",
                                     "  pretraining: stored, not retrieved   ('Cy Du was born in ' -> 'Roma.')",
                                     "  also asked by birth_dev.tsv line 1: Roma; wrong",
                                     "  pretraining: not stored, so nothing to retrieve   ('Cy Du (' -> 'Kiev)')"]


def test_a_long_biography_probed_is_shown_by_its_end_the_text_the_place_follows():
    """The pretraining line shows what the probe continued: a prefix longer than 30 characters is cut at its
    start, not its end, so the words just before the place stay in sight."""
    prefix = "Ann Bo. A painter of the north, she was born in "
    result = {"prompt": "Where was Ann Bo born?", "answer": "Oslo", "stop": None, "extra": [], "complete": False,
              "known": ("birth_dev.tsv", 1, "Oslo", "Where was Ann Bo born?"), "looked_in": ["birth_dev.tsv"],
              "stored": (prefix, "Oslo", True), "probabilities": [("Oslo", 0.9), ("Rome", 0.1)]}
    lines = ask.format_result(result, top=2).splitlines()
    assert lines[2] == "  pretraining: stored, and retrieved   ('\u2026f the north, she was born in ' -> 'Oslo')"
    short = dict(result, stored=(prefix[-30:], "Rome", False))  # 30 characters: shown whole
    assert ask.format_result(short, top=2).splitlines()[2] == (
        "  pretraining: not stored; right without it   ('of the north, she was born in ' -> 'Rome')")


def test_pretrained_params_that_cannot_be_the_start_are_refused_in_one_line(trained, tmp_path, capsys):
    """--pretrained "" (a variable unset) said ": params file not found"; the other variant's pretrained params
    said "pass --variant synthesizer", which would change --params' model too; finetuned params (their card
    says so) were probed as though pretrained, every verdict meaningless."""
    import shutil
    from submission.card import write_card
    from submission.params import ParamsError
    data, params = map(str, trained)
    vocab = CharCorruptionDataset(open(f"{data}/wiki.txt", encoding="utf-8").read(), 48)
    finetuned = str(tmp_path / "f.params")
    shutil.copy(params, finetuned)
    common = ["--params", params, "--data-dir", data] + SIZE_FLAGS
    with pytest.raises(SystemExit) as stop:
        ask.main(common + ["--pretrained", "", "Ann Bo"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "error: --pretrained is empty; give the pretrained params" in err, err
    write_card(finetuned, GPT(GPTConfig(vocab.vocab_size, 48, **SIZE)), vocab.itos, function="finetune")
    with pytest.raises(SystemExit) as stop:
        ask.main(common + ["--pretrained", finetuned, "Ann Bo"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "their card says they were finetuned" in err and err.count("\n") == 1, err
    synth = str(tmp_path / "s.params")
    torch.save(GPT(GPTConfig(vocab.vocab_size, 48, synthesizer=True, **SIZE)).state_dict(), synth)
    with pytest.raises(ParamsError, match="these are synthesizer params, but the model is vanilla; give the "
                                          "vanilla pretrained params --params were finetuned from$"):
        ask.main(common + ["--pretrained", synth, "Ann Bo"])


def other_corpus_note(params, read, wiki):
    """The start of the note on `params` pretrained on `read` and used on `wiki`, a text of the same characters."""
    from submission.card import corpus_record
    sha = {path: corpus_record(str(path))["sha256"][:12] for path in (read, wiki)}
    return (f"note: {params} were pretrained on {read} (sha256 {sha[read]}, their card says), not on {wiki} "
            f"(sha256 {sha[wiki]}), a text of the same characters")


def test_pretrained_params_of_another_corpus_of_the_same_characters_are_probed_with_a_note(trained, tmp_path,
                                                                                            capsys):
    """--pretrained probes the biographies of --data-dir's wiki.txt: pretrained params whose card records another
    text of the same characters (the course's wiki.txt and data/wiki.txt, a world made again) gave verdicts on
    people they never read of, without a word. One note names both files; their own corpus says nothing, and
    ask without --pretrained, whose answers read the corpus for its vocabulary alone, says nothing either."""
    import shutil
    from submission.card import corpus_record, write_card
    _, params = trained
    for name, people in (("read", PEOPLE), ("other", PEOPLE[::-1])):  # the same people's lines in another order
        (tmp_path / name).mkdir()
        vocab = write_world(tmp_path / name, people)
        tsv = lambda part: "".join(f"Where was {n} born?\t{p}\n" for n, p in part)  # noqa: E731
        (tmp_path / name / "birth_places_train.tsv").write_text(tsv(people[:2]), encoding="utf-8")  # the course's
        (tmp_path / name / "birth_dev.tsv").write_text(tsv(people[2:]), encoding="utf-8")  # layout, for the probe
    folder, other = tmp_path / "read", tmp_path / "other"
    read, wiki = folder / "wiki.txt", other / "wiki.txt"
    assert vocab.itos == CharCorruptionDataset(read.read_text(encoding="utf-8"), 48).itos
    model = GPT(GPTConfig(vocab.vocab_size, 48, **SIZE))
    for function in ("pretrain", "finetune"):
        shutil.copy(params, tmp_path / f"{function}.params")
        write_card(str(tmp_path / f"{function}.params"), model, vocab.itos, function, corpus=corpus_record(str(read)))
    argv = ["--params", str(tmp_path / "finetune.params"), "--pretrained", str(tmp_path / "pretrain.params"),
            "Ann Bo", "--data-dir"]
    status, out, err = run_main(argv + [str(other)], capsys)
    assert status == 0 and "  pretraining: " in out and err == (
        other_corpus_note(tmp_path / "pretrain.params", read, wiki) + f": --pretrained's probe cuts the biographies "
        f"of {wiki}, which they never read, so its verdicts say nothing of what pretraining stored; give --data-dir "
        f"the folder whose wiki.txt they were pretrained on\n"), err
    status, out, err = run_main(argv + [str(folder)], capsys)
    assert status == 0 and err == "", err
    status, out, err = run_main(["--params", str(tmp_path / "finetune.params"), "--data-dir", str(other), "Ann Bo"],
                                capsys)
    assert status == 0 and err == "", err


def test_a_corpus_pretrained_cannot_probe_says_that_pretrained_needs_it(trained, tmp_path):
    """ask answers from wiki.txt and the train file alone; --pretrained also reads the dev file and needs the
    course's layout (wiki line i is train row i, then dev), and its errors ("dev corpus not found", "memorised
    needs ...") gave no reason why ask wanted either."""
    import shutil
    from submission.dataset import DataError
    data, params = map(str, trained)
    argv = ["--params", params, "--data-dir", str(tmp_path), *SIZE_FLAGS, "--pretrained", params, "Ann Bo"]
    shutil.copy(f"{data}/wiki.txt", tmp_path / "wiki.txt")
    lines = (tmp_path / "wiki.txt").read_text(encoding="utf-8").splitlines()
    named = [next(n for n, _ in PEOPLE if n in line) for line in lines if any(n in line for n, _ in PEOPLE)]
    places = dict(PEOPLE)
    (tmp_path / "birth_places_train.tsv").write_text(  # in the wiki's order: the layout holds for train
        "".join(f"Where was {n} born?\t{places[n]}\n" for n in named), encoding="utf-8")
    with pytest.raises(DataError, match=r"birth_dev.tsv: dev corpus not found; check the path \(--pretrained probes "
                                        r"the train and dev people as memorised.py does\)$"):
        ask.main(argv)
    shutil.copy(f"{data}/birth_places_train.tsv", tmp_path / "birth_places_train.tsv")  # not the wiki's order
    with pytest.raises(DataError, match=r"as the course's layout has it .*\(--pretrained probes the train and dev "
                                        r"people as memorised.py does\)$"):
        ask.main(argv)


def test_a_tally_of_params_pretrained_on_another_corpus_comes_with_a_note(trained, tmp_path, capsys):
    """`ask --params P < data/birth_dev.tsv` ends with the evaluation's tally, but said nothing where P's card
    records a pretraining corpus of other bytes than --data-dir's wiki.txt, which run.py's evaluation notes. The
    note (card.other_corpus_words' wording) comes with a tally alone: a verdict on one question says nothing of
    the params' accuracy."""
    import shutil
    from submission.card import corpus_record, write_card
    _, params = trained
    for name, people in (("read", PEOPLE), ("other", PEOPLE[::-1])):  # the same people's lines in another order
        (tmp_path / name).mkdir()
        vocab = write_world(tmp_path / name, people)
    read, wiki = tmp_path / "read" / "wiki.txt", tmp_path / "other" / "wiki.txt"
    shutil.copy(params, tmp_path / "finetune.params")
    write_card(str(tmp_path / "finetune.params"), GPT(GPTConfig(vocab.vocab_size, 48, **SIZE)), vocab.itos, "finetune",
               corpus=corpus_record(str(read)))
    argv = ["--params", str(tmp_path / "finetune.params"), "--top", "1", "--data-dir"]
    lines = "".join(f"Where was {n} born?\t{p}\n" for n, p in PEOPLE)
    status, out, err = run_main(argv + [str(tmp_path / "other")], capsys, stdin=io.StringIO(lines))
    assert status == 0 and "answers checked are right" in out and err == (
        other_corpus_note(tmp_path / "finetune.params", read, wiki) + f": this tally checks them on the people of "
        f"{wiki}, whom they never read of (their answers read it only for its vocabulary, the same), so it is not "
        f"their evaluation's figure; give --data-dir the folder whose wiki.txt they were pretrained on\n"), err
    # their own corpus: no note; no tally (one question, or questions as arguments): no note
    status, out, err = run_main(argv + [str(tmp_path / "read")], capsys, stdin=io.StringIO(lines))
    assert status == 0 and "answers checked are right" in out and err == "", err
    status, out, err = run_main(argv + [str(tmp_path / "other")], capsys, stdin=io.StringIO(lines.split("\n")[0]))
    assert status == 0 and "; right)" in out and err == "", err
    status, out, err = run_main(argv + [str(tmp_path / "other"), *(n for n, _ in PEOPLE)], capsys)
    assert status == 0 and "answers checked" not in out and err == "", err


def test_characters_outside_the_vocabulary_are_named_once_each_in_the_order_typed():
    """"Zoë 李明" was reported as 'ë明李': sorted by code point, not as typed."""
    stoi = {c: i for i, c in enumerate("Zo ")}
    with pytest.raises(ask.AskError, match=r"outside the vocabulary of wiki\.txt: 'ë李明'; "):
        ask.check_text("Zoë 李明 ë", stoi, 100)


def test_an_accent_typed_apart_from_its_letter_is_asked_as_the_corpus_spells_it(tmp_path, capsys):
    """A name typed or pasted with its accent apart from the letter (Unicode NFD: a Mac's terminal, a PDF) was
    "characters outside the vocabulary ...: '\u0301'; use other characters", though the corpus has 'é': it is
    asked composed (NFC), answered and checked as the name typed composed is. The same for a TSV line's place."""
    import unicodedata
    people = [("Zoé Bo", "Orléans"), ("Cy Du", "Rome")]
    vocab = write_world(tmp_path, people=people)
    model = random_model(vocab.vocab_size, 48)
    torch.save(model.state_dict(), tmp_path / "m.params")
    argv = ["--params", str(tmp_path / "m.params"), "--data-dir", str(tmp_path), *SIZE_FLAGS]
    nfd = unicodedata.normalize("NFD", "Zoé Bo")
    assert nfd != "Zoé Bo" and "\u0301" not in vocab.stoi
    composed = run_main(argv + ["Zoé Bo"], capsys)
    assert composed[0] == 0 and composed[1].startswith("Where was Zoé Bo born?\n") and "(birth_dev.tsv line 1: " \
        "Orléans;" in composed[1], composed
    assert run_main(argv + [nfd], capsys) == composed
    line = f"Where was {nfd} born?\t{unicodedata.normalize('NFD', 'Orléans')}\n"
    status, out, err = run_main(argv, capsys, stdin=io.StringIO(line))
    assert status == 0 and err == "" and "(standard input line 1: Orléans; " in out
    with pytest.raises(ask.AskError, match="outside the vocabulary of wiki.txt: '\u0308'"):  # 'ë' is not there
        ask.check_text(ask.composed_if_known(unicodedata.normalize("NFD", "Zoë"), vocab.stoi), vocab.stoi, 100)


def test_a_column_header_on_standard_input_is_skipped_not_asked(trained, capsys):
    """A spreadsheet's export starts "name<TAB>place": ask asked "Where was name born?", marked it wrong and
    counted it in the tally (1 of 3 for 1 of 2), where run.py refuses the file. Skipped now, in one line; a
    file of names, or a first question without its '?' among names, is asked as before."""
    folder, params = trained
    argv = ["--params", str(params), "--data-dir", str(folder), *SIZE_FLAGS, "--top", "0"]
    rows = "Where was Ann Bo born?\tOslo\nWhere was Cy Du born?\tLima\n"
    status, out, err = run_main(argv, capsys, stdin=io.StringIO("name\tplace\n" + rows))
    assert status == 0
    assert err == ("ask.py: standard input line 1: 'name\\tplace' reads as a column header, not a question (the "
                   "next line's question ends in '?'): skipped\n")
    assert "Where was name born?" not in out and "1 of the 2 answers checked are right (50.0%)" in out
    for lines in ("Ed Fa\tLima\nCy Du\tRome\n", "Ed Fa\tLima\n", "Ann Bo\nWhere was Cy Du born?\tLima\n"):
        status, out, err = run_main(argv, capsys, stdin=io.StringIO(lines))
        assert status == 0 and err == "" and out.count("  answer: ") == lines.count("\n"), (lines, out)
    # read ahead after a possible header, a line that is not UTF-8 still leaves the first asked
    status, out, err = run_main(argv, capsys, stdin=byte_stdin(b"Ed Fa\tLima\nRen\xe9e\n"))
    assert status == 2 and "line 2, byte 14 is not valid UTF-8" in err and out.count("  answer: ") == 1, (out, err)


def test_pretrained_params_other_than_the_finetunings_start_are_refused_by_its_card(trained, tmp_path, capsys):
    """--pretrained of another run (the demo's finetuned params with a course-size run's pretrained ones) was
    refused for its vocabulary, with a --data-dir fix that --params then refused in turn. The finetuned card
    records the sha256 its run started from (run.start_params): other params, or a finetuning of a new model,
    are refused in one line; the params it started from are probed; a card without the record checks nothing."""
    import shutil
    from ledger import sha256_of
    from submission.card import write_card
    data, params = map(str, trained)
    vocab = CharCorruptionDataset(open(f"{data}/wiki.txt", encoding="utf-8").read(), 48)
    model = GPT(GPTConfig(vocab.vocab_size, 48, **SIZE))
    pretrained, finetuned = str(tmp_path / "p.params"), str(tmp_path / "f.params")
    shutil.copy(params, pretrained)
    shutil.copy(params, finetuned)
    common = ["--params", finetuned, "--data-dir", data, *SIZE_FLAGS, "--pretrained", pretrained, "Ann Bo"]
    other = "0123456789abcdef"
    for start, words in ((f"--reading_params_path of sha256 {other}",
                          f"--pretrained {pretrained}: {finetuned} were finetuned from other params (their card "
                          f"records sha256 {other}..., these are {sha256_of(pretrained)[:16]}...); give the "
                          f"pretrained params they were finetuned from (the run's --reading_params_path)"),
                         ("a new model", f"--pretrained {pretrained}: {finetuned} were finetuned from a new model, "
                                         f"without pretraining (their card says)")):
        write_card(finetuned, model, vocab.itos, function="finetune", run={"start": start})
        with pytest.raises(SystemExit) as stop:
            ask.main(common)
        err = capsys.readouterr().err
        assert stop.value.code == 2 and err.count("\n") == 1 and f"error: {words}" in err, err
    for run in ({"start": f"--reading_params_path of sha256 {sha256_of(pretrained)[:16]}"}, {}, None):
        write_card(finetuned, model, vocab.itos, function="finetune", run=run)
        assert ask.not_the_start(finetuned, pretrained) is None

"""src/memorised.py: which lines it probes, and that its batched greedy continuation counts exactly the
places that one-at-a-time `sample()` reproduces.

Run:  python -m pytest -q tests/test_memorised.py
"""
import torch

import memorised
from submission import GPT, GPTConfig, sample


def test_probes_cut_before_the_place_and_respect_the_truncation_limit():
    wiki = ["Ann Bo. Born in Oslo.", "Cy Du. Never said.", "Ed Fa. " + "x" * 105 + " Lima", "Oslo Oslo. Oslo"]
    rows = [("q", "Oslo"), ("q", "Rome"), ("q", "Lima"), ("q", "Oslo")]
    items = memorised.probes(wiki, rows, block_size=128)  # limit int(128 * 7 / 8) = 112
    # row 1 never states its place, row 2's place ends past 112 characters, row 3's starts the line
    assert items == [(0, "Ann Bo. Born in ", "Oslo")]
    assert memorised.probes(wiki[:1], rows[:1], block_size=20) == []  # "Oslo" would end at 20 > 17


def test_memorised_counts_what_greedy_sample_reproduces():
    torch.manual_seed(0)
    model = GPT(GPTConfig(12, 32, n_layer=2, n_head=2, n_embd=16))
    for p in model.parameters():
        p.data.normal_(0, 0.5)  # a random model with decided preferences
    model.eval()
    itos = {i: chr(ord("a") + i) for i in range(12)}
    stoi = {c: i for i, c in itos.items()}
    g = torch.Generator().manual_seed(1)
    items = []
    for k in range(12):
        prefix = [int(t) for t in torch.randint(0, 12, (3 + k % 4,), generator=g)]
        n = 2 + k % 3
        out = sample(model, torch.tensor([prefix]), n)[0, len(prefix):].tolist()  # the course's greedy loop
        place = "".join(itos[t] for t in out)
        if k % 2:  # odd items: a place the model does not produce
            place = place[:-1] + itos[(stoi[place[-1]] + 1) % 12]
        items.append((k, "".join(itos[t] for t in prefix), place))
    assert memorised.memorised(model, items, stoi, itos) == [k % 2 == 0 for k in range(12)]

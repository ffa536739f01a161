"""Batch layout for training: computing only the positions of a batch that feed the loss, exactly.

Span-corruption and finetuning rows end their counted targets (those not ignore_index, the PAD)
anywhere along the block. `trim_padding` cuts a batch to its last counted column; `length_groups`
splits it into groups of rows of similar length, each cut to its own longest row, with weights that
make the groups' mean losses the batch's mean (so loss and gradients are the full batch's, up to the
order of float sums, and under dropout to which masks are drawn);
`length_group_count` is how many groups a batch gets. `pack_rows` lays the rows, each cut after its
last counted target, end to end into fewer rows, with each piece's positions and segment for a model
that attends within segments. Exact for a causal model whose loss skips ignore_index: a dropped
position feeds no loss and no kept position attends to it.

The project's own, not the course's (which trains every padded position); the same ideas as the
length-grouped ("bucketed") batching of sequence-to-sequence toolkits and the packing of sequences
with a block-diagonal attention mask (Krell et al. 2021, "Efficient Sequence Packing without
Cross-contamination").
"""
import torch


def check_length_groups(value):
    """TrainerConfig.length_groups as given: "auto" or a whole number of at least 1, else a ValueError."""
    if value != "auto" and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"length_groups must be 'auto' or a whole number of at least 1, got {value!r}")
    return value


def _round_up(n, multiple):
    """n rounded up to a multiple of `multiple`."""
    return -(-n // multiple) * multiple


def _ends(counted):
    """(B,): 1 + each row's last column with a counted target, 0 for a row without one; counted (B, T) bool."""
    columns = torch.arange(1, counted.size(1) + 1, device=counted.device)  # (T,) 1-based
    return torch.where(counted, columns, 0).amax(1)


def trim_padding(y, ignore_index, multiple=1):
    """Columns of a (B, T) target batch worth computing: up to the last one with a counted target.

    Returns T' <= T (rounded up to `multiple`, for compiled or GPU kernels); T when ignore_index is
    None or no target is counted. Exact for a causal model whose loss skips ignore_index: the
    dropped positions feed no loss, and no kept position sees them.
    """
    if ignore_index is None:
        return y.size(1)
    cols = (y != ignore_index).any(0).nonzero()
    if cols.numel() == 0:
        return y.size(1)
    n = int(cols[-1]) + 1
    return min(y.size(1), _round_up(n, multiple))


def length_groups(y, ignore_index, groups, multiple=1):
    """Split a (B, T) target batch into `groups` row groups of similar length, each cut to its own width.

    Rows are ordered by where their last counted target is, then cut into `groups` runs of about
    B / groups rows; each run is computed only up to its longest row (rounded up to `multiple`).
    Returns [(row indices, width, share)], share = the run's counted targets / the batch's, so that
    sum(share * the run's mean loss) is the batch's mean loss; rows with no counted target are left
    out (they feed no loss). None when no target is counted (the caller's ungrouped loss then gives
    the course's value). Exact for the same causal models as `trim_padding`.
    """
    counted = y != ignore_index                                    # (B, T)
    total = int(counted.sum())
    if total == 0:
        return None
    T = y.size(1)
    last = _ends(counted)                                           # (B,)
    order = torch.argsort(last, descending=True, stable=True)
    order = order[last[order] > 0]
    parts = []
    for rows in torch.tensor_split(order, min(groups, order.numel())):  # row indices, (about B / groups,)
        width = min(T, _round_up(int(last[rows[0]]), multiple))
        parts.append((rows, width, int(counted[rows].sum()) / total))
    return parts


AUTO_GROUPS_MOST = 8  # the most length groups length_groups="auto" gives a batch


def length_group_count(config, rows, device="cpu", world_size=1, compiled=False):
    """How many length groups (`length_groups`) a batch of `rows` rows is computed in; 1: none.

    `config.length_groups`: a number, or "auto": on the CPU, one group per 16 rows, at least 2 and at
    most 8 (batches under 16 rows: 1); elsewhere 1. Measured on this project's 2-core CPU, the fast
    path's step against the same path in one group: course pretraining (batch 128, 8 groups) 2.2-2.4x,
    course finetuning (batch 256) 1.6x, the demo's small model 1.3x (pretraining, batch 16, 2 groups)
    and 1.1x (finetuning, batch 32); with 8-row groups the small model was slower. Not by default on
    a GPU (each group is a forward of its own: more launches, and CUDA graphs per width; on an H100 2
    groups helped only inside step graphs, graphs.py), never by default under torch.compile (chosen
    when each width recompiled; the compile is dynamic since, and groups under it are not measured) nor ever
    under DDP (one forward per backward), and only with an
    ignore_index (the lengths are where the counted targets end).
    """
    value = check_length_groups(config.length_groups)
    if config.ignore_index is None or world_size > 1:
        return 1
    if value == "auto":
        if device != "cpu" or compiled or rows < 16:
            return 1
        return max(2, min(AUTO_GROUPS_MOST, rows // 16))
    return value


class Packed:
    """A batch packed by `pack_rows`: x, y, positions, segments, each (R, W), R rows of W columns.

    Each source row's counted span (up to its last counted target) lies whole in one packed row, from
    some column on; `positions` restart at 0 for each span, and `segments` number the spans of a packed
    row 0, 1, 2, ... (-1 for the unused columns at a row's end and for rows added to round R up). The
    model attends within a segment only (GPT.forward), so each span computes what its source row did.
    """

    def __init__(self, x, y, positions, segments):
        self.x, self.y, self.positions, self.segments = x, y, positions, segments

    def to(self, device, non_blocking=False):
        """The four tensors on `device` (a new Packed), in one copy. With `non_blocking` (CUDA) the copy is
        from page-locked memory: from pageable memory the driver may synchronise with the stream (CUDA's
        notes on cudaMemcpyAsync), and the host would wait for the step the GPU is running."""
        parts = (self.x, self.y, self.positions, self.segments)
        stacked = torch.stack([t.to(torch.long) for t in parts])  # (4, R, W), one transfer
        if non_blocking:
            stacked = stacked.pin_memory()
        stacked = stacked.to(device, non_blocking=non_blocking)
        return Packed(*(t.to(part.dtype) for t, part in zip(stacked.unbind(0), parts)))  # (4, R, W) -> 4 x (R, W)

    @property
    def shape(self):
        return tuple(self.x.shape)


def pack_rows(x, y, ignore_index, multiple=1, row_multiple=1):
    """Pack a (B, T) batch's rows, each cut after its last counted target, into fewer rows of at most T
    columns (first-fit decreasing); a `Packed`, or None when no target is counted.

    Rows with no counted target are left out (they feed no loss). The packed width W is the fullest row's
    length rounded up to `multiple` (at most T), and the row count R is rounded up to `row_multiple` with
    empty rows, so that a compiled or graphed step sees few shapes. Columns no span fills have targets
    ignore_index, input id 0 (any id would do: no loss and no other position reads them) and no segment.
    Every counted target appears once, at the same place in its span as in its source row: for a model that attends
    within segments (GPT.forward's `segments`) and takes positions from `positions`, loss and gradients are the
    batch's. On the course's data a span-corruption batch of 128 rows packs into about 58 (45% of its
    positions; the bench prints the figure for its batches).
    """
    counted = y != ignore_index                                   # (B, T)
    B, T = y.shape
    last = _ends(counted).tolist()                                 # (B,)
    order = sorted((i for i in range(B) if last[i] > 0), key=lambda i: -last[i])
    if not order:
        return None
    free, spans, placed = [], [], []  # per packed row: free columns, spans so far; per span: (row, column, segment)
    for i in order:
        n = last[i]
        r = next((r for r, room in enumerate(free) if room >= n), len(free))
        if r == len(free):
            free.append(T)
            spans.append(0)
        placed.append((r, T - free[r], spans[r]))
        free[r] -= n
        spans[r] += 1
    rows = _round_up(len(free), row_multiple)
    width = min(T, _round_up(max(T - room for room in free), multiple))
    # every kept position as a flat index: its source (row i, column j) and its packed place (row r, start + j);
    # k = len(order) spans, n = sum(lengths) kept positions (not the loop's n above)
    lengths = torch.tensor([last[i] for i in order])                                  # (k,)
    j = torch.arange(int(lengths.sum())) - torch.repeat_interleave(lengths.cumsum(0) - lengths, lengths)  # (n,)
    src = torch.repeat_interleave(torch.tensor(order) * T, lengths) + j               # (n,)
    dst = torch.repeat_interleave(torch.tensor([r * width + c for r, c, _ in placed]), lengths) + j  # (n,)
    xp = torch.zeros(rows * width, dtype=x.dtype)  # an id of every vocabulary, where ignore_index (-100, say) is none
    yp = torch.full((rows * width,), ignore_index, dtype=y.dtype)
    positions = torch.zeros(rows * width, dtype=torch.long)
    segments = torch.full((rows * width,), -1, dtype=torch.long)
    xp[dst] = x.reshape(-1)[src]  # (B, T) -> (B*T,), its n counted positions into the packed rows' (R*W,)
    yp[dst] = y.reshape(-1)[src]  # (B, T) -> (B*T,): the same for the targets
    positions[dst] = j
    segments[dst] = torch.repeat_interleave(torch.tensor([segment for _, _, segment in placed]), lengths)  # (n,)
    return Packed(*(t.view(rows, width) for t in (xp, yp, positions, segments)))  # each (R, W)

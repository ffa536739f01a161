"""Batch layout for training: computing only the positions of a batch that feed the loss, exactly.

Span-corruption and finetuning rows end their counted targets (those not ignore_index, the PAD)
anywhere along the block. `trim_padding` cuts a batch to its last counted column; `length_groups`
splits it into groups of rows of similar length, each cut to its own longest row, with weights that
make the groups' mean losses the batch's mean (so loss and gradients are the full batch's);
`length_group_count` is how many groups a batch gets. Exact for a causal model whose loss skips
ignore_index: a dropped position feeds no loss and no kept position attends to it.

The project's own, not the course's (which trains every padded position); the same idea as the
length-grouped ("bucketed") batching of sequence-to-sequence toolkits.
"""
import torch


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
    return min(y.size(1), -(-n // multiple) * multiple)


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
    columns = torch.arange(1, T + 1, device=y.device)               # (T,) 1-based
    last = torch.where(counted, columns, 0).amax(1)                 # (B,) 1 + the last counted column
    order = torch.argsort(last, descending=True, stable=True)
    order = order[last[order] > 0]
    parts = []
    for rows in torch.tensor_split(order, min(groups, order.numel())):  # row indices, (about B / groups,)
        width = min(T, -(-int(last[rows[0]]) // multiple) * multiple)
        parts.append((rows, width, int(counted[rows].sum()) / total))
    return parts


def length_group_count(config, rows, device="cpu", world_size=1, compiled=False):
    """How many length groups (`length_groups`) a batch of `rows` rows is computed in; 1: none.

    `config.length_groups`: a number, or "auto": on the CPU, one group per 16 rows, at least 2 and at
    most 8 (batches under 16 rows: 1); elsewhere 1. Measured on this project's 2-core CPU, the fast
    path's step against the same path in one group: course pretraining (batch 128, 8 groups) 2.2-2.4x,
    course finetuning (batch 256) 1.6x, the demo's small model 1.3x (pretraining, batch 16, 2 groups)
    and 1.1x (finetuning, batch 32); with 8-row groups the small model was slower. Not by default on
    a GPU (each group is a forward of its own: more launches, and CUDA graphs per width; on an H100 2
    groups helped only inside step graphs, graphs.py), never by default under torch.compile (each
    width would recompile) nor ever under DDP (one forward per backward), and only with an
    ignore_index (the lengths are where the counted targets end).
    """
    value = config.length_groups
    if value != "auto" and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"length_groups must be 'auto' or a whole number of at least 1, got {value!r}")
    if config.ignore_index is None or world_size > 1:
        return 1
    if value == "auto":
        if device != "cpu" or compiled or rows < 16:
            return 1
        return max(2, min(8, rows // 16))
    return value

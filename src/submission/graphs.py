"""Whole training steps replayed as CUDA graphs, captured by hand (the "whole-network capture" of
PyTorch's CUDA Graphs notes: torch.cuda.graph, with capturable AdamW and a tensor learning rate).

Why: on one H100 a step of the course's model takes about 6 ms even when torch.compile's
reduce-overhead mode replays its forward and backward as CUDA graphs, and about half of that is
host work the graphs leave outside: autograd's engine, gradient clipping (0.5 ms) and the optimizer
(0.9 ms) (torch.profiler, docs/speed.md). Here a step is a few copies and replays:

    copy the batch (and its length-group plan) into static buffers
    zero the gradients (one launch)
    replay one graph per (length) group: forward + backward, accumulating into the parameters' .grad
    replay one graph: gradient clipping + fused AdamW, reading the learning rate from a device tensor

Each group's graph is captured the first time its shape (rows, columns, place in the batch) occurs;
that step runs eagerly, on the stream the capture will use, which also warms it up. All graphs share
one memory pool: nothing they allocate outlives a replay except what is allocated before any
capture (gradients, optimizer state, static buffers), so their temporaries can overlap.

Exactness: a replay launches the kernels the eager step launches, on the same values; only the
dropout draws differ (the Philox offsets a graph reserves). tests/test_graphs.py checks the buffer
bookkeeping on the CPU, where its `capture_rerun` re-runs the step's Python instead of recording it, and on a
GPU compares captured steps with eager ones.
"""
import contextlib

import torch


def capture_cuda(fn, stream, pool):
    """Record fn() as a CUDA graph on `stream`, allocating from `pool` (None: a new pool).
    Returns (graph, the pool, for the next capture).

    "thread_local": a capture comes whenever a batch brings a new shape, mid-epoch, while the
    DataLoader's pin-memory thread allocates page-locked memory; in the default "global" mode that
    allocation from another thread would invalidate the capture."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, pool=pool, stream=stream, capture_error_mode="thread_local"):
        fn()
    return graph, graph.pool()


class _Batch:
    """Static device buffers for batches of one (rows, columns) size."""

    def __init__(self, shape, groups, device):
        self.x = torch.zeros(shape, dtype=torch.long, device=device)       # (B, T)
        self.y = torch.zeros(shape, dtype=torch.long, device=device)       # (B, T)
        self.order = torch.zeros(shape[0], dtype=torch.long, device=device)  # (B,) rows, grouped by length
        self.shares = torch.ones(max(1, groups), device=device)            # (G,) each group's loss weight
        self.shares_are_ones = True  # as an ungrouped step needs them


class StepGraphs:
    """A training step (forward and backward per length group, clip, AdamW) as replayed CUDA graphs.

    `model(x, y)` returns (logits, mean loss); `optimizer` is a fused AdamW not yet stepped (its
    groups are switched to capturable, with the learning rate in a device tensor: `set_lr`);
    `autocast` a context factory for the forwards (with its cast cache off, as captures need).
    `capture(fn, stream, pool)` records fn (default capture_cuda; tests/test_graphs.py's capture_rerun on the CPU).
    """

    def __init__(self, model, optimizer, grad_norm_clip, device, groups=1, autocast=None, capture=None):
        if any(optimizer.state.values()):
            raise ValueError("StepGraphs needs an optimizer that has not stepped yet")
        self.model = model
        self.optimizer = optimizer
        self.params = [p for group in optimizer.param_groups for p in group["params"]]
        self.clip = grad_norm_clip
        self.device = device
        self.groups = max(1, groups)
        self.autocast = autocast or contextlib.nullcontext
        self.capture = capture or capture_cuda
        self.cuda = str(device).startswith("cuda")
        self.stream = torch.cuda.Stream(device) if self.cuda else None
        self.pool = None
        # CUDA's fused AdamW reads a tensor learning rate as float32 whatever the params' dtype
        # (fused_adamw_impl.cu: lr.const_data_ptr<float>()); the CPU's reads any dtype, so there it takes
        # the params' own (float64 tests then match eager steps, whose rate is a Python float, exactly)
        lr_dtype = torch.float32 if self.cuda else self.params[0].dtype
        self.lr = torch.tensor(float(optimizer.param_groups[0]["lr"]), dtype=lr_dtype, device=device)
        self.own_param_groups()
        self.losses = torch.zeros(self.groups, device=device)  # (G,) each group's share x mean loss
        self.batches = {}   # (B, T) -> _Batch
        self.graphs = {}    # ((B, T), start, stop, width, slot, grouped) -> captured forward + backward
        self.update = None  # captured clip + AdamW
        self.captures = 0   # graphs recorded
        self.eager_steps = 0  # steps run eagerly (each one with a shape not yet recorded)

    def own_param_groups(self):
        """Point every parameter group at the one learning-rate tensor (taking the groups' value, as after
        loading a saved optimizer state) and make them capturable."""
        self.lr.fill_(float(self.optimizer.param_groups[0]["lr"]))
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr   # fused AdamW reads it on the device: the graph sees every new value
            group["capturable"] = True

    def set_lr(self, lr):
        self.lr.fill_(lr)

    def _pinned(self, t):
        """A CPU tensor ready for a copy that does not wait for the device (page-locked on CUDA)."""
        return t.pin_memory() if self.cuda and not t.is_pinned() else t

    def _forward_backward(self, batch, start, stop, width, slot, grouped):
        if grouped:
            rows = batch.order[start:stop]                                   # (r,)
            x = batch.x.index_select(0, rows)[:, :width].contiguous()        # (r, width)
            y = batch.y.index_select(0, rows)[:, :width].contiguous()        # (r, width)
        else:
            x = batch.x[:, :width].contiguous()                              # (B, width)
            y = batch.y[:, :width].contiguous()                              # (B, width)
        with self.autocast():
            _, loss = self.model(x, y)
        loss = loss.mean() * batch.shares[slot]
        self.losses[slot].copy_(loss.detach())
        loss.backward()

    def _clip_and_step(self):
        torch.nn.utils.clip_grad_norm_(self.params, self.clip)
        self.optimizer.step()

    def _zero_grads(self):
        grads = [p.grad for p in self.params if p.grad is not None]
        if grads:
            torch._foreach_zero_(grads)

    def _stream(self):
        return torch.cuda.stream(self.stream) if self.cuda else contextlib.nullcontext()

    def step(self, x, y, parts):
        """One optimisation step on the (B, T) batch x, y (CPU, pinned on CUDA), computed as `parts`:
        [(row indices or None for all rows, width, share)] as TrainingRun plans it. Returns the
        batch's loss, a device tensor."""
        shape = tuple(x.shape)
        if shape not in self.batches:
            self.batches[shape] = _Batch(shape, self.groups, self.device)
        batch = self.batches[shape]
        if len(parts) > self.groups:
            raise ValueError(f"{len(parts)} groups planned, StepGraphs was made for {self.groups}")
        batch.x.copy_(self._pinned(x), non_blocking=True)
        batch.y.copy_(self._pinned(y), non_blocking=True)
        grouped = parts[0][0] is not None
        keys, start = [], 0
        if grouped:
            order = torch.cat([rows for rows, _, _ in parts])               # (rows with targets,)
            batch.order[:order.numel()].copy_(self._pinned(order), non_blocking=True)
            shares = torch.tensor([share for _, _, share in parts], dtype=batch.shares.dtype)  # (len(parts),)
            batch.shares[:len(parts)].copy_(self._pinned(shares), non_blocking=True)
            batch.shares_are_ones = False
        elif not batch.shares_are_ones:  # ungrouped after grouped steps (a batch without targets): share 1
            batch.shares.fill_(1.0)
            batch.shares_are_ones = True
        for slot, (rows, width, _) in enumerate(parts):
            stop = start + (rows.numel() if grouped else shape[0])
            keys.append((shape, start, stop, width, slot, grouped))
            start = stop
        if self.update is not None and all(k in self.graphs for k in keys):
            self._zero_grads()
            for k in keys:
                self.graphs[k].replay()
            self.update.replay()
        else:
            self._eager_then_capture(batch, keys)
        return self.losses[:len(parts)].sum()

    def _eager_then_capture(self, batch, keys):
        """Run the step eagerly (on the capture stream: a warm-up of its shapes), then record the
        graphs it lacked. Recording launches nothing: the parameters stay as the eager step left them."""
        self.eager_steps += 1
        if self.cuda:
            self.stream.wait_stream(torch.cuda.current_stream())
        with self._stream():
            self._zero_grads()
            for k in keys:
                self._forward_backward(batch, *k[1:])
            self._clip_and_step()
        if self.cuda:
            torch.cuda.current_stream().wait_stream(self.stream)
        for k in keys:
            if k not in self.graphs:
                self.graphs[k], self.pool = self.capture(
                    lambda k=k: self._forward_backward(batch, *k[1:]), self.stream, self.pool)
                self.captures += 1
        if self.update is None:
            self.update, self.pool = self.capture(self._clip_and_step, self.stream, self.pool)
            self.captures += 1

"""Training loop of the assignment, after karpathy/minGPT's trainer as forked by CS224N.

AdamW over two parameter groups, gradient clipping, and the course's learning-rate schedule:
a linear warm-up over `warmup_tokens`, then a cosine decay reaching its 10% floor at
`final_tokens` (see `lr_multiplier`). Nothing here is specific to the task: any dataset of
(x, y) id tensors and any model returning (logits, loss) trains.

Schedule quirks kept from the course, so runs match it: the token counter adds every target
position, PAD included (the course counts `(y >= 0).sum()`, true for all ids), and the
no-decay group matches names containing "bias" or "LayerNorm.weight"; this model's LayerNorms
are named ln1, ln2, ln_f, so only biases skip weight decay.
"""
import json
import math
import os
import time

import torch
from torch.utils.data import DataLoader
from tqdm import tqdm

from .utils import atomic_torch_save, get_device


class TrainerConfig:
    """Optimisation settings; any keyword becomes an attribute."""
    max_epochs = 10
    batch_size = 64
    learning_rate = 3e-4
    betas = (0.9, 0.95)
    grad_norm_clip = 1.0
    weight_decay = 0.1  # only applied on matmul weights
    # learning rate decay params: linear warmup followed by cosine decay to 10% of original
    lr_decay = False
    warmup_tokens = 375e6  # these two numbers come from the GPT-3 paper, but may not be good defaults elsewhere
    final_tokens = 260e9   # (at what point we reach 10% of original LR)
    # checkpoint settings
    ckpt_path = None
    num_workers = 0  # for DataLoader
    # beyond the course: a JSON-lines file of per-step loss and learning rate (None: no log)
    log_path = None

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)


def lr_multiplier(tokens, config):
    """The course's schedule: the factor on learning_rate after `tokens` target positions."""
    if tokens < config.warmup_tokens:
        return float(tokens) / float(max(1, config.warmup_tokens))
    progress = float(tokens - config.warmup_tokens) / float(max(1, config.final_tokens - config.warmup_tokens))
    return max(0.1, 0.5 * (1.0 + math.cos(math.pi * progress)))


def loader_workers(requested):
    """DataLoader workers: as many as asked, but leave a core for the training process itself."""
    return max(0, min(int(requested), (os.cpu_count() or 1) - 1))


class Trainer:

    def __init__(self, model, train_dataset, test_dataset, config):
        self.model = model
        self.train_dataset = train_dataset
        self.test_dataset = test_dataset
        self.config = config
        self.device = get_device()
        self.model = self.model.to(self.device)
        self.tokens = 0

    def save_checkpoint(self):
        if self.config.ckpt_path is not None:
            ckpt_model = self.model.module if hasattr(self.model, "module") else self.model
            atomic_torch_save(ckpt_model.state_dict(), self.config.ckpt_path)

    def _optimizer(self, raw_model, config):
        no_decay = ["bias", "LayerNorm.weight"]
        params_decay = [p for n, p in raw_model.named_parameters() if not any(nd in n for nd in no_decay)]
        params_nodecay = [p for n, p in raw_model.named_parameters() if any(nd in n for nd in no_decay)]
        optim_groups = [
            {"params": params_decay, "weight_decay": config.weight_decay},
            {"params": params_nodecay, "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(optim_groups, lr=config.learning_rate, betas=config.betas)

    def _loader(self, data, config):
        workers = loader_workers(config.num_workers)
        return DataLoader(data, batch_size=config.batch_size, num_workers=workers,
                          persistent_workers=workers > 0,
                          pin_memory=self.device == "cuda")

    def train(self):
        model, config = self.model, self.config
        raw_model = model.module if hasattr(self.model, "module") else model
        optimizer = self._optimizer(raw_model, config)
        loaders = {"train": self._loader(self.train_dataset, config)}
        if self.test_dataset is not None:
            loaders["test"] = self._loader(self.test_dataset, config)
        log = open(config.log_path, "w", encoding="utf-8") if config.log_path else None
        start = time.time()
        step = 0

        def run_epoch(split, epoch):
            nonlocal step
            is_train = split == "train"
            model.train(is_train)
            loader = loaders[split]
            losses = []
            pbar = tqdm(enumerate(loader), total=len(loader), mininterval=1.0) if is_train else enumerate(loader)
            for it, (x, y) in pbar:
                x = x.to(self.device, non_blocking=True)
                y = y.to(self.device, non_blocking=True)
                with torch.set_grad_enabled(is_train):
                    logits, loss = model(x, y)
                    loss = loss.mean()
                    losses.append(loss.item())
                if not is_train:
                    continue
                model.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_norm_clip)
                optimizer.step()
                if config.lr_decay:
                    self.tokens += y.numel()  # the course's count: every target position, PAD included
                    lr = config.learning_rate * lr_multiplier(self.tokens, config)
                    for param_group in optimizer.param_groups:
                        param_group["lr"] = lr
                else:
                    lr = config.learning_rate
                step += 1
                if log is not None:
                    log.write(json.dumps({"step": step, "epoch": epoch + 1, "tokens": int(self.tokens),
                                          "loss": round(losses[-1], 6), "lr": lr,
                                          "time": round(time.time() - start, 3)}) + "\n")
                pbar.set_description(f"epoch {epoch + 1} iter {it}: train loss {loss.item():.5f}. lr {lr:e}")
            if not is_train:
                return float(sum(losses) / max(1, len(losses)))

        best_loss = float("inf")
        self.tokens = 0  # counter used for learning rate decay
        try:
            for epoch in range(config.max_epochs):
                run_epoch("train", epoch)
                test_loss = None
                if self.test_dataset is not None:
                    test_loss = run_epoch("test", epoch)
                    tqdm.write(f"epoch {epoch + 1}: test loss {test_loss:.5f}")
                # keep the best model on the test loss, or always save without a test set
                good_model = self.test_dataset is None or test_loss < best_loss
                if self.config.ckpt_path is not None and good_model:
                    best_loss = test_loss if test_loss is not None else best_loss
                    self.save_checkpoint()
        finally:
            if log is not None:
                log.close()

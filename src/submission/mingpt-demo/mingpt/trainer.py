"""minGPT's trainer module: TrainerConfig and a Trainer that trains as minGPT's own (Karpathy,
github.com/karpathy/minGPT, 2020, as the course's mingpt-demo has it) where it differs from the assignment's
loop: each epoch's batches in a new random order, the optimizer the model's `configure_optimizers` builds,
and the checkpoint written only when the test loss is the lowest yet. The rest, fast path included, is the
assignment's Trainer (src/submission/trainer.py)."""
from submission.trainer import Trainer as _AssignmentTrainer
from submission.trainer import TrainerConfig

__all__ = ["Trainer", "TrainerConfig"]


class Trainer(_AssignmentTrainer):
    """The assignment's Trainer with minGPT's shuffled batches, optimizer and best-test-loss checkpoint."""

    shuffle = True
    keep_best = True

    def _optimizer(self, raw_model, config):
        """The model's own configure_optimizers(config), as minGPT's trainer asks for it; a model without one
        (the assignment's GPT) gets the assignment's optimizer."""
        configure = getattr(raw_model, "configure_optimizers", None)
        return configure(config) if configure is not None else super()._optimizer(raw_model, config)

"""minGPT's model module: GPTConfig, GPT1Config and a GPT whose loss counts every target, as minGPT's
does (the assignment's GPT skips PAD, id 0, which the notebook's character data uses for a real
character). Same modules, parameters and state_dict keys as the assignment's GPT."""
import logging

from submission.model import GPT1Config, GPTConfig
from submission.model import GPT as _AssignmentGPT

__all__ = ["GPT", "GPTConfig", "GPT1Config"]

logger = logging.getLogger(__name__)


class GPT(_AssignmentGPT):
    """The assignment's GPT with minGPT's loss: cross-entropy over every target (None: GPT.forward passes
    cross_entropy its own default, -100, which no target is; and the Trainer neither trims nor groups)."""

    loss_ignore_index = None

    def __init__(self, config):
        super().__init__(config)
        logger.info("number of parameters: %e", sum(p.numel() for p in self.parameters()))

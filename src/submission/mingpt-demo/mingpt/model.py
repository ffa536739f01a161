"""minGPT's model module: GPTConfig, GPT1Config and a GPT with minGPT's loss and optimizer (Karpathy,
github.com/karpathy/minGPT, 2020, as the course's mingpt-demo has it). The loss counts every target, where
the assignment's GPT skips PAD, id 0, which the notebook's character data uses for a real character; and
`configure_optimizers` decays only matrix weights. Same modules, parameters and state_dict keys as the
assignment's GPT."""
import logging

import torch.nn as nn

from submission.model import GPT1Config, GPTConfig
from submission.model import GPT as _AssignmentGPT
from submission.trainer import adamw

__all__ = ["GPT", "GPTConfig", "GPT1Config"]

logger = logging.getLogger(__name__)


class GPT(_AssignmentGPT):
    """The assignment's GPT with minGPT's loss: cross-entropy over every target (None: GPT.forward passes
    cross_entropy its own default, -100, which no target is; and the Trainer neither trims nor groups)."""

    loss_ignore_index = None

    def __init__(self, config):
        super().__init__(config)
        logger.info("number of parameters: %e", sum(p.numel() for p in self.parameters()))

    def decay_groups(self):
        """(decayed, not decayed): the full names of the parameters, sorted, by minGPT's rule: weight decay on
        the weights of Linear layers (and on the synthesizer's w2, the same kind of matrix), none on biases
        (b2 among them), LayerNorm and Embedding weights, nor pos_emb. The assignment's Trainer decays every
        parameter whose name lacks "bias", LayerNorm weights and embeddings included."""
        decay, no_decay = set(), set()
        for module_name, module in self.named_modules():
            for name, _ in module.named_parameters(recurse=False):
                full = f"{module_name}.{name}" if module_name else name
                if (name.endswith("bias") or name == "b2" or full == "pos_emb"
                        or isinstance(module, (nn.LayerNorm, nn.Embedding))):
                    no_decay.add(full)
                else:
                    decay.add(full)
        return sorted(decay), sorted(no_decay)

    def configure_optimizers(self, train_config):
        """minGPT's: AdamW with train_config's weight_decay on the `decay_groups` it names, at its learning_rate
        and betas (minGPT's Trainer, mingpt.trainer, builds its optimizer here)."""
        params = dict(self.named_parameters())
        decay, no_decay = self.decay_groups()
        groups = [{"params": [params[n] for n in decay], "weight_decay": train_config.weight_decay},
                  {"params": [params[n] for n in no_decay], "weight_decay": 0.0}]
        return adamw(groups, train_config, self)

"""minGPT's trainer module: the assignment's Trainer and TrainerConfig (the course's training loop, with
its fast path; it trains any model, cutting away only targets its loss declares it skips)."""
from submission.trainer import Trainer, TrainerConfig

__all__ = ["Trainer", "TrainerConfig"]

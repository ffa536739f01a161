"""minGPT's utils module: set_seed, top_k_logits and sample, the assignment's (src/submission/utils.py)."""
from submission.utils import sample, set_seed, top_k_logits

__all__ = ["set_seed", "top_k_logits", "sample"]

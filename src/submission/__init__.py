"""The assignment's solution package: GPT with vanilla or synthesizer attention, the datasets,
the trainer and the helpers that build and run each part. Its exports are the course's (the XCS224N
starter's src/submission/__init__.py), so programs and graders written against it import unchanged."""
from .attention import CausalSelfAttention, SynthesizerAttention
from .dataset import CharCorruptionDataset, NameDataset
from .helper import finetune, initialize_synthesizer_model, initialize_vanilla_model, pretrain, train
from .model import GPT, GPTConfig
from .trainer import Trainer, TrainerConfig
from .utils import evaluate_places, sample

__all__ = ["GPT", "GPTConfig", "NameDataset", "CharCorruptionDataset", "Trainer", "TrainerConfig",
           "evaluate_places", "sample", "initialize_vanilla_model", "initialize_synthesizer_model",
           "finetune", "pretrain", "train", "SynthesizerAttention", "CausalSelfAttention"]

"""The assignment's parts (c), (f) and (g): build models, trainer configurations, and train.

`finetune` and `pretrain` build a (TrainerConfig, Trainer) pair with the course's hyper-parameters
(`finetune` first loads the pretrained params into the model, as the course's does); `train` runs
it and writes the params. The hyper-parameters are the course's, so the grader can check every field.
"""
import inspect
import random

from .dataset import NameDataset, read_text
from .interrupts import writes_finish
from .model import GPT
from .trainer import Trainer, TrainerConfig
from .utils import cpu_state_dict, is_main_process, load_params, save_trained

# The course's helper.py seeds Python's random on import, so a program (its grader among them) that
# imports the package and then draws, e.g. span corruptions, sees the course's stream.
random.seed(0)


def initialize_vanilla_model(mconf):
    """A GPT with causal self-attention (part c)."""
    mconf.synthesizer = False
    return GPT(mconf)


def initialize_synthesizer_model(mconf):
    """A GPT with synthesizer attention (part g)."""
    mconf.synthesizer = True
    return GPT(mconf)


def finetune(reading_params_path, finetune_corpus_path, pretrain_dataset, block_size, model):
    """Parts (c) and (f): the birth-place finetuning run, from scratch or from pretrained params.

    Without params: 75 epochs; with params (loaded into `model` first): 10 epochs. Both use batch
    256, learning rate 6e-4 and the course's schedule.
    """
    common = dict(batch_size=256, learning_rate=6e-4, lr_decay=True, warmup_tokens=512 * 20,
                  final_tokens=200 * len(pretrain_dataset) * block_size, num_workers=4)
    if reading_params_path is not None:
        load_params(model, reading_params_path)
        tconf = TrainerConfig(max_epochs=10, **common)
    else:
        tconf = TrainerConfig(max_epochs=75, **common)
    text = read_text(finetune_corpus_path, "finetuning corpus")
    train_dataset = NameDataset(text, pretrain_dataset, path=finetune_corpus_path)
    trainer_obj = Trainer(model, train_dataset, None, tconf)
    return tconf, trainer_obj


def pretrain(pretrain_dataset, block_size, model):
    """Part (f): span-corruption pretraining, 650 epochs, batch 128, learning rate 6e-3."""
    tconf = TrainerConfig(max_epochs=650, batch_size=128, learning_rate=6e-3, lr_decay=True,
                          warmup_tokens=512 * 20, final_tokens=200 * len(pretrain_dataset) * block_size,
                          num_workers=4)
    trainer_obj = Trainer(model, pretrain_dataset, None, tconf)
    return tconf, trainer_obj


def train(model, writing_params_path, trainer_obj, *, describe=None):
    """Run the trainer, then write the model's params (atomically; under torchrun, rank 0 alone). This
    project's Trainer writes them just before it renames its loss log into place, so that the two change
    together; any other trainer (the course's, a grader's stand-in) is run, then the params written.
    `describe()`, when given, runs (on rank 0) right after the params are written, its writes finished
    whatever Ctrl-C comes: run.py writes their card there, so that with this project's Trainer (Ctrl-C
    held from the params to the log) an interrupt leaves the old params, log and card, or the new ones."""
    def save():
        if is_main_process():
            # unwrapped: the course's keys; kept in the temporary folder if this path refuses them
            save_trained(cpu_state_dict(model), writing_params_path)
            if describe is not None:
                with writes_finish():  # the params are in place: what describes them follows
                    describe()

    if "after" in inspect.signature(trainer_obj.train).parameters:  # this project's Trainer (not a subclass's
        trainer_obj.train(after=save)                              # own train(self))
    else:  # the course's helper: trainer_obj.train(), then torch.save(model.state_dict(), path)
        trainer_obj.train()
        save()

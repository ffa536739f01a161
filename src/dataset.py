"""CS224N's layout: its src/run.py imports the assignment's modules as siblings (`import dataset`), where
XCS224N's (and this project's) keep them in the package src/submission/. This name is that module,
submission.dataset itself, so that such a program runs unchanged from src/.

Print a few examples, as CS224N's `python src/dataset.py namedata|charcorruption` does:
    python src/dataset.py namedata|charcorruption [--data-dir DIR]
"""
import os
import sys

if os.path.dirname(os.path.abspath(__file__)) not in sys.path:  # run as a script from elsewhere
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

if __name__ == "__main__":  # a Ctrl-C while torch loads, or a Python without torch: one line (startup.py)
    from startup import interruptible_start
    with interruptible_start("dataset.py"):
        import submission.dataset as _module
else:
    import submission.dataset as _module  # noqa: E402

if __name__ == "__main__":
    _module._script()  # its examples, as submission/dataset.py prints them (a closed pipe: 141)
else:
    sys.modules[__name__] = _module

"""CS224N's layout: its src/run.py imports the assignment's modules as siblings (`import attention`), where
XCS224N's (and this project's) keep them in the package src/submission/. This name is that module,
submission.attention itself, so that such a program runs unchanged from src/.
"""
import os
import sys

if os.path.dirname(os.path.abspath(__file__)) not in sys.path:  # run as a script from elsewhere
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import submission.attention as _module  # noqa: E402

sys.modules[__name__] = _module

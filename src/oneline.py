"""One-line usage errors for the scripts in src/ that must start without torch (make_world.py,
plots.py): `prog: error: message (--help lists the options)` and exit status 2, instead of
argparse's usage block followed by the message.

Standard library only. src/submission/files.py has the same parser for the scripts that load torch
anyway: the submission package keeps no import from outside itself, so it runs in the course's tree.
"""
import argparse


class OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one line, exit status 2; its subcommands' parsers are of this class too."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (--help lists the options)\n")

"""One-line usage errors for the scripts in src/: `prog: error: message (--help lists the options)`
and exit status 2, instead of argparse's usage block followed by the message. A flag it does not
know gets the nearest one it does ("--data_dir": did you mean --data-dir?), else the hint the script
gives for it.

Standard library only, so that make_world.py and plots.py curves start without torch. The graded package
(src/submission/) does not use it: it keeps no import from outside itself, and its one parser (dataset.py's
example printer) stays argparse's own.
"""
import argparse
import difflib
import os
import re
import sys


def lenient_streams():
    """stdout and stderr write a character their encoding lacks as a backslash escape (a redirected
    stream on Windows is cp1252, without the MASK character or many of the corpus's names). The graded
    package keeps its own (submission.cli.lenient_streams), as it imports nothing from outside itself."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError):
            pass


# the arguments whose values are files or folders, by their dest (positionals: london_baseline's EVAL_TSV,
# plots' LOGs, run.py's course-style FUNCTION VARIANT CORPUS), ~ made the home folder in them (home)
PATH_DEST = re.compile(r"path|dir|^out$|params|json|zip|stats|^logs$|eval_tsv|^positional$")


def home(value):
    """`value` with a leading ~ (`~`, `~/x`) made the home folder: the shell leaves a quoted ~, and one after
    a flag's =, as it is, and a run wrote into a folder named ~ inside the current one while it said ~/x."""
    if isinstance(value, list):
        return [home(v) for v in value]
    if isinstance(value, str) and (value == "~" or value.startswith(("~/", "~" + os.sep))):
        return os.path.expanduser(value)
    return value


def nearest(flag, known):
    """The flag of `known` that `flag` was meant to be: the same words spelt with - for _ or the
    other way, else a near spelling; None when none is near, or when `flag` is one of them."""
    if flag in known:
        return None
    same = [k for k in known if k.replace("_", "-") == flag.replace("_", "-")]
    near = same or difflib.get_close_matches(flag, known, n=1, cutoff=0.8)
    return near[0] if near else None


class OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one line, exit status 2; its subcommands' parsers are of this class too.
    `hints`: {flag: what to say instead}, for a flag users bring from another command."""

    def __init__(self, *args, hints=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.hints = dict(hints or {})
        self._argv = []

    def parse_known_args(self, args=None, namespace=None):
        args = self._argv = list(sys.argv[1:] if args is None else args)  # (an error names its subcommand's)
        namespace, extras = super().parse_known_args(args, namespace)
        for action in self._actions:  # paths only: a --title or a question stays as typed
            if PATH_DEST.search(action.dest) and hasattr(namespace, action.dest):
                setattr(namespace, action.dest, home(getattr(namespace, action.dest)))
        return namespace, extras

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}{self._suggestions(message)} (--help lists the options)\n")

    def flags(self):
        """Every --flag this command line could have meant: this parser's and its chosen subcommand's."""
        flags = [s for s in self._option_string_actions if s.startswith("--")]
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = next((a for a in self._argv if a in action.choices), None)
                if chosen is not None:
                    flags += [s for s in action.choices[chosen].flags() if s not in flags]
        return flags

    def flag_named(self, word):
        """The --flag that a bare word names (`max_epochs`, as typed without its dashes), or None."""
        if word.startswith("-"):
            return None
        return next((f for f in self.flags() if f[2:].replace("-", "_") == word.replace("-", "_")), None)

    def _suggestions(self, message):
        prefix = "unrecognized arguments: "
        if not message.startswith(prefix):
            return ""
        known, said = self.flags(), []
        for arg in message[len(prefix):].split(";")[0].split():  # (argparse's own words: no ";")
            flag = arg.split("=", 1)[0]
            if not flag.startswith("-") or flag == "-":
                continue
            if not flag.startswith("--"):  # -max_epochs: one dash for two
                flag = "--" + flag.lstrip("-")
                meant = flag if flag in known else nearest(flag, known)
            else:
                meant = nearest(flag, known)
            if meant:
                said.append(f"did you mean {meant}?")
            elif flag in self.hints:
                said.append(self.hints[flag])
        return "".join(f"; {s}" for s in said)

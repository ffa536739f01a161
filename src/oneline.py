"""One-line usage errors for the scripts in src/: `prog: error: message (--help lists the options)`
and exit status 2, instead of argparse's usage block followed by the message. A flag it does not
know gets the nearest one it does ("--data_dir": did you mean --data-dir?), else the hint the script
gives for it. Also the scripts' words for a UTF-16 file given for UTF-8 text (utf16), and for a write that
could not grow its file (write_fix).

Standard library only, so that make_world.py and plots.py curves start without torch. The graded package
(src/submission/) does not use it: it keeps no import from outside itself, and its one parser (dataset.py's
example printer) stays argparse's own.
"""
import argparse
import difflib
import errno
import os
import re
import sys


def lenient_streams():
    """stdout and stderr write a character their encoding lacks as a backslash escape (a redirected
    stream on Windows is cp1252, without the MASK character or many of the corpus's names). The graded
    package keeps its own (submission.cli.lenient_streams), as it imports nothing from outside itself. A stream the
    process started without (`<&-`, `>&-`, `2>&-`: None in sys) is /dev/null (`_closed_to_devnull`)."""
    _closed_to_devnull()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError):
            pass


def _closed_to_devnull():
    """sys.stdin, sys.stdout or sys.stderr that is None (its descriptor closed when the process started, as a
    daemon or `cmd >&-` leaves it) becomes /dev/null on its own descriptor: print and tqdm wrote to None
    (AttributeError: 'NoneType' object has no attribute 'flush', a training run stopped silently by 2>&-), and
    a file opened later took descriptor 1 or 2, where a library's own writes would land in it. So does stdout or
    stderr on a descriptor open for reading only: bash run with `2>&-` opens its script there, and every write
    of the run it execs failed (EBADF), ending a training run with exit status 1 and not a word."""
    for fd, name, flags in ((0, "stdin", os.O_RDONLY), (1, "stdout", os.O_WRONLY), (2, "stderr", os.O_WRONLY)):
        if getattr(sys, name) is not None and (name == "stdin" or not _read_only(fd)):
            continue
        try:
            null = os.open(os.devnull, flags)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            setattr(sys, name, open(fd, "r" if name == "stdin" else "w", encoding="utf-8", closefd=False))
        except OSError:  # no /dev/null (a bare chroot): left as Python made it
            pass


def _read_only(fd):
    """Whether descriptor `fd` is open for reading only (False where that cannot be asked: Windows)."""
    try:
        import fcntl
        return fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY
    except (ImportError, OSError, AttributeError):
        return False


def write_fix(error):
    """The start of the fix for an OSError of a write that could not grow its file, ending in "or ", else "": a
    full disk or quota, "free some disk space or "; the file size limit (EFBIG), "raise the file size limit (ulimit
    -f) or ". The caller's own way out follows ("choose another path")."""
    full = "free some disk space or "
    return {errno.ENOSPC: full, getattr(errno, "EDQUOT", errno.ENOSPC): full,
            errno.EFBIG: "raise the file size limit (ulimit -f) or "}.get(getattr(error, "errno", None), "")


def utf16(data):
    """'UTF-16 text (byte-order mark FF FE), not UTF-8' for bytes that begin with UTF-16's byte-order mark (a
    Windows editor's "Unicode"), else None: the one wording of the scripts' one-line error for such a file (the
    graded package, which imports nothing from outside itself, names it so in dataset.read_text)."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return f"UTF-16 text (byte-order mark {data[:2].hex(' ').upper()}), not UTF-8"
    return None


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

    def _commands(self):
        """{name: parser} of this parser's subcommands ({} for a parser without them)."""
        return next((dict(a.choices) for a in self._actions if isinstance(a, argparse._SubParsersAction)), {})

    def _misplaced(self, flag):
        """A hint for a subcommand's flag typed before the subcommand's name (argparse reads it as the main
        parser's and fails), else None."""
        commands, name = self._commands(), flag.split("=", 1)[0]
        owners = [cmd for cmd, sub in commands.items() if name in sub._option_string_actions]
        typed = [at for at, arg in enumerate(self._argv) if arg.split("=", 1)[0] == name]
        chosen = [at for at, arg in enumerate(self._argv) if arg in commands]
        if name in self._option_string_actions or not owners or not typed or (chosen and chosen[0] < typed[0]):
            return None
        if chosen:  # after that command's name, if it is one of the flag's commands
            return f"put {name} after {self._argv[chosen[0]]}: a command's flags follow its name" \
                if self._argv[chosen[0]] in owners else None
        return f"put {name} after the command's name ({' or '.join(owners)}): a command's flags follow it"

    def _suggestions(self, message):
        prefix = "unrecognized arguments: "
        choice = re.match(r"argument \{.*\}: invalid choice: (['\"])(.*?)\1", message)
        if choice and choice.group(2) in self._argv:  # a flag's value taken for the command: `--out x.png curves`
            at = self._argv.index(choice.group(2))
            hint = self._misplaced(self._argv[at - 1]) if at and self._argv[at - 1].startswith("--") else None
            return f"; {hint}" if hint else ""
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
            elif misplaced := self._misplaced(flag):
                said.append(misplaced)
            elif flag in self.hints:
                said.append(self.hints[flag])
        return "".join(f"; {s}" for s in said)

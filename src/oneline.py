"""One-line usage errors for every script in src/: `prog: error: message (--help lists the options)`
and exit status 2, instead of argparse's usage block followed by the message. A flag it does not
know gets the nearest one it does ("--data_dir": did you mean --data-dir?), or the hint the script
gives for it.

Standard library only, so that make_world.py and plots.py start without torch. The graded package
(src/submission/) has no parser of its own: it keeps no import from outside itself.
"""
import argparse
import difflib


class OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one line, exit status 2; its subcommands' parsers are of this class too.
    `hints`: {flag: what to say instead}, for a flag users bring from another command."""

    def __init__(self, *args, hints=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.hints = dict(hints or {})

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}{self._suggestions(message)} (--help lists the options)\n")

    def _flags(self):
        """Every --flag of this parser and of its subcommands."""
        flags = [s for s in self._option_string_actions if s.startswith("--")]
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    flags += [s for s in sub._option_string_actions if s.startswith("--") and s not in flags]
        return flags

    def _suggestions(self, message):
        prefix = "unrecognized arguments: "
        if not message.startswith(prefix):
            return ""
        known, said = self._flags(), []
        for arg in message[len(prefix):].split():
            flag = arg.split("=", 1)[0]
            if not flag.startswith("--"):
                continue
            if flag in self.hints:
                said.append(self.hints[flag])
                continue
            # the same words spelt with - for _ or the other way, else a near spelling
            same = [k for k in known if k.replace("_", "-") == flag.replace("_", "-")]
            near = same or difflib.get_close_matches(flag, known, n=1, cutoff=0.8)
            if near:
                said.append(f"did you mean {near[0]}?")
        return "".join(f"; {s}" for s in said)

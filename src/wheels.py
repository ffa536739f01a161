"""Which torch the Python at hand can install on this machine; run.sh asks before it makes .venv.

requirements.txt pins torch 2.13.0 (wheels for Python 3.10 to 3.14) and, where 2.13.0 has none
(Python 3.8 and 3.9, Intel Macs), torch 2.2.2 with numpy<2 (wheels for Python 3.8 to 3.12). On
Apple silicon before macOS 14 torch 2.13.0 has no wheel either, and requirements.txt's markers
cannot say so safely: a `platform_release` comparison makes some pips raise on Linux kernels named
like 6.8.0-1014-aws (pypa/packaging#774). There run.sh installs 2.2.2 and numpy<2 in place of
requirements.txt's torch and numpy lines. (The wheels were found with pip dry runs for each platform.)

    python src/wheels.py [COMMAND]

prints nothing (requirements.txt as it is), the pins to install in place of its torch and numpy
("torch==2.2.2 numpy<2"), or, with exit status 3, why no torch has a wheel for this Python here,
ending with COMMAND run by a Python that has one. Standard library only and no f-strings: it runs in
whatever Python the user has.
"""
import platform
import struct
import sys

NEW = ("2.13.0", (3, 10), (3, 14))  # requirements.txt's torch, the Pythons it has wheels for
OLD = ("2.2.2", (3, 8), (3, 12))    # its fallback, with numpy<2
MACOS_14 = 23                       # Darwin's major version of macOS 14


def choice(system, machine, release, python, implementation="CPython", bits=64):
    """(pins, problem) for sys.platform `system`, platform.machine(), platform.release(), the Python
    (major, minor), its implementation and its pointer size: pins, a list to install in place of
    requirements.txt's torch and numpy (empty: its own); problem, why no torch has a wheel here (None:
    one has)."""
    if implementation != "CPython" or bits != 64:  # PyPy; a 32-bit Python (on 64-bit Windows too)
        return [], ("torch has no wheel for {} (torch's are for 64-bit CPython)".format(
            "a 32-bit Python" if bits != 64 else implementation))
    try:
        darwin = int(release.split(".")[0])
    except ValueError:
        darwin = None
    intel_mac = system == "darwin" and machine == "x86_64"
    old_arm_mac = system == "darwin" and machine == "arm64" and darwin is not None and darwin < MACOS_14
    version, low, high = OLD if intel_mac or old_arm_mac or python < NEW[1] else NEW
    if python < OLD[1] or python > high:
        where = ("on an Intel Mac" if intel_mac else
                 "on Apple silicon before macOS 14" if old_arm_mac else "on this machine")
        or_update = " (or update macOS to 14 or later)" if old_arm_mac and python > high else ""
        return [], ("torch has no wheel for Python {}.{} {}: torch {}'s are for Python {}.{} to {}.{}{}"
                    .format(python[0], python[1], where, version, low[0], low[1], high[0], high[1], or_update))
    return (["torch==" + OLD[0], "numpy<2"] if old_arm_mac else []), None


def main(argv):
    pins, problem = choice(sys.platform, platform.machine(), platform.release(), tuple(sys.version_info[:2]),
                           platform.python_implementation(), struct.calcsize("P") * 8)
    if problem is not None:
        command = argv[1] if len(argv) > 1 else "the command"
        print("{}; run it with one of those, e.g. PYTHON=python3.12 {}".format(problem, command))
        return 3
    if pins:
        print(" ".join(pins))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

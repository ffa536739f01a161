#!/usr/bin/env bash
# The assignment's entry point: ./run.sh MODE [extra src/run.py flags]
# Runs from any directory, and paths (DATA_DIR, OUT_DIR, PYTHON, paths in flags) are the caller's
# (in `test` mode pytest runs in the repo; a test file named runs alone, from either folder).
# The first run sets up a .venv with requirements.txt if torch, numpy or tqdm cannot be imported.
# DATA_DIR (default data/) and OUT_DIR (default src/submission/) redirect inputs and outputs; extra
# flags go to src/run.py (e.g. --n_layer 2 --max_epochs 1).
if [ -z "${BASH_VERSION:-}" ]; then  # `sh run.sh`: dash cannot read what follows; bash can
  case "$0" in *run.sh) exec bash "$0" "$@" ;; esac
  echo "run.sh: a bash script; run it as ./run.sh MODE (or bash run.sh MODE)" >&2; exit 2
fi
{  # bash reads a script as it runs it; in braces the whole file is read first, so editing
   # run.sh during a long run (an editor saving in place) cannot change what the run does next
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# Python runs in the caller's folder, so a relative path in a flag means what the caller meant; the
# repo's own files are named from there (short, as the course's were, when that is the repo)
if [ "$(pwd -P)" = "$(cd "$ROOT" && pwd -P)" ]; then R=""; else R="$ROOT/"; fi
ME="$(printf '%q' "${R:-./}run.sh")"  # this script as the caller types it, in the hints
if [ "$(pwd -P)" = "$(cd "$ROOT" && pwd -P)/src" ]; then ME="./run.sh"; fi  # src/run.sh, the course's, runs it there
# this command as the caller typed it, for a hint to run it again (in a mode `all` runs: the `all` command)
AGAIN="${RUN_SH_ALL:-$ME${1+$(printf ' %q' "$@")}}"
# set but empty (OUT_DIR=$TYPO, a variable left unset): the default was taken without a word, and the run wrote
# into src/submission/
for var in DATA_DIR:data/ OUT_DIR:src/submission/; do
  name="${var%%:*}"
  if [ -n "${!name+set}" ] && [ -z "${!name}" ]; then
    echo "run.sh: $name is set but empty (a variable left unset in it?); give it a folder, or unset $name for" \
      "its default ${var#*:}" >&2
    exit 2
  fi
done
unset var name
DATA="${DATA_DIR:-${R}data}"
OUT="${OUT_DIR:-${R}src/submission}"
# a quoted ~ (OUT_DIR="~/runs") is the home folder, as the shell would have made it unquoted
HOME_DIR="${HOME:-$(cd ~ 2>/dev/null && pwd || echo "~")}"  # HOME unset: the account's home, as ~ gives it
case "$DATA" in "~"|"~/"*) DATA="$HOME_DIR${DATA#\~}" ;; esac
case "$OUT" in "~"|"~/"*) OUT="$HOME_DIR${OUT#\~}" ;; esac

# The interpreter: .venv's once its setup has finished; else PYTHON or python3 (or python, py: default_python)
# when it has torch, numpy and tqdm; else a new .venv. A file in .venv marks a finished setup, so a setup
# stopped part way (Ctrl-C, no network, a full disk) is finished by the next run instead of failing ever after.
# Each check (python -c) begins by giving SIGINT its default, which ends the check and then bash: a Ctrl-C that
# Python raised inside torch's import was swallowed there (the check went on: exit 0) or turned into another error
# (exit 1: torch "missing", and a new .venv was made), and bash, seeing a normal exit, went on to the mode
DIES_AT_CTRL_C="import signal; signal.signal(signal.SIGINT, signal.SIG_DFL); "
has_requirements() { "$1" -c "${DIES_AT_CTRL_C}import torch, numpy, tqdm" >/dev/null 2>&1; }
# the interpreter without .venv: PYTHON, else the first of python3, python and py that runs a Python 3 (Windows'
# Git Bash has python or py, and a python3 that only opens the Microsoft Store, exiting 9009); none: python3
default_python() {
  if [ -n "${PYTHON:-}" ]; then echo "$PYTHON"; return; fi
  local candidate
  for candidate in python3 python py; do
    if command -v "$candidate" >/dev/null 2>&1 &&
        "$candidate" -c "${DIES_AT_CTRL_C}import sys; sys.exit(sys.version_info[0] != 3)" >/dev/null 2>&1; then
      echo "$candidate"; return
    fi
  done
  echo python3
}
# a venv's interpreter: bin/python, or Scripts/python.exe where the Python is Windows' own (Git Bash)
venv_python() {
  if [ ! -x "$1/bin/python" ] && [ -x "$1/Scripts/python.exe" ]; then echo "$1/Scripts/python.exe"
  else echo "$1/bin/python"; fi
}
# torch's wheels for this machine (src/wheels.py): none for the Python $1 (a line, and the set-up stops
# before it installs anything; $2 says what to do with .venv), or pins in place of requirements.txt's
# torch and numpy (PINS: Apple silicon before macOS 14)
PINS=""; WHEELS_CHECKED=0
torch_wheels() {
  [ "$WHEELS_CHECKED" = 1 ] && return  # once a run: the venv's Python is the one it was made with
  WHEELS_CHECKED=1
  local said rc=0
  said="$("$1" "$ROOT/src/wheels.py" "$(callers_env)$AGAIN" 2>/dev/null)" || rc=$?
  said="${said%$'\r'}"  # a Windows Python's line end
  if [ "$rc" = 3 ]; then echo "run.sh: $said$2" >&2; exit 1; fi
  if [ "$rc" = 0 ]; then PINS="$said"; fi  # (a Python that cannot run it at all: pip says why)
}
pick_python() {
  local venv="$ROOT/.venv"
  if [ -x "$(venv_python "$venv")" ]; then
    PY="$(venv_python "$venv")"
    if [ -f "$venv/setup-finished" ]; then return; fi
    if has_requirements "$PY"; then touch "$venv/setup-finished"; return; fi
    torch_wheels "$PY" " (remove .venv first: it was made with this Python)"
    echo "run.sh: .venv lacks torch, numpy or tqdm (its setup stopped part way); installing requirements.txt" >&2
    if ! "$PY" -m pip --version >/dev/null 2>&1 && ! "$PY" -m ensurepip --upgrade >&2; then
      echo "run.sh: .venv has no pip and ensurepip failed (on Debian and Ubuntu: apt-get install python3-venv);" \
        "fix that, remove .venv and run again" >&2
      exit 1
    fi
  else
    PY="$(default_python)"
    if ! command -v "$PY" >/dev/null 2>&1; then
      if [ -n "${PYTHON:-}" ]; then echo "run.sh: no Python at '$PY': install python3, or set PYTHON to one" >&2
      else echo "run.sh: no Python 3 found (python3, python, py): install one, or set PYTHON to one" >&2; fi
      exit 1
    fi
    if has_requirements "$PY"; then return; fi
    torch_wheels "$PY" ""
    if [ -L "$venv" ] && [ ! -e "$venv" ]; then  # venv then failed with "[Errno 17] File exists" alone
      echo "run.sh: .venv is a link to $(printf '%q' "$(readlink "$venv")"), which does not exist (moved or" \
        "removed?): remove the link (rm $(printf '%q' "${R}.venv")) and run again, or link .venv to an environment" \
        "that exists" >&2
      exit 1
    fi
    echo "run.sh: torch, numpy or tqdm missing; creating .venv and installing requirements.txt (once)" >&2
    local existed=0
    if [ -e "$venv" ] || [ -L "$venv" ]; then existed=1; fi
    if ! "$PY" -m venv "$venv" >&2; then
      if [ "$existed" = 0 ]; then rm -rf "$venv"; fi  # ours, half made: the next run starts afresh
      # venv hides ensurepip's "No space left on device": a nearly full disk is named before python3-venv
      local free_kib disk="$ROOT"
      if [ "$existed" = 1 ]; then disk="$venv/"; fi  # a .venv there may be a link to another disk
      free_kib="$(df -Pk "$disk" 2>/dev/null | awk 'NR == 2 && $4 ~ /^[0-9]+$/ {print $4}' || true)"
      if [ -n "$free_kib" ] && [ "$free_kib" -lt 102400 ]; then
        echo "run.sh: '$PY -m venv' failed with $((free_kib / 1024)) MiB free on the disk of ${disk%/}: too little" \
          "for .venv (torch's CPU build takes about 1 GB there, its CUDA build several); free some disk space" \
          "and run again" >&2
        exit 1
      fi
      echo "run.sh: '$PY -m venv' failed (on Debian and Ubuntu: apt-get install python3-venv; elsewhere set" \
        "PYTHON to a Python 3.8 or later, such as PYTHON=python or PYTHON=py); fix that and run again" >&2
      exit 1
    fi
    "$(venv_python "$venv")" -m pip install --quiet --upgrade pip >&2 || true  # a newer pip is welcome, not needed
  fi
  PY="$(venv_python "$venv")"
  if ! pip_install "$ROOT/requirements.txt"; then
    echo "run.sh: installing requirements.txt into .venv failed (pip's message is above); fix that and run again" >&2
    exit 1
  fi
  touch "$venv/setup-finished"
}
pip_install() {  # pip_install FILE: pip install -r FILE into $PY; where src/wheels.py names pins, they replace
  # the torch and numpy lines of FILE and of the requirements.txt it includes
  local tmp status=0
  torch_wheels "$PY" ""
  if [ -z "$PINS" ]; then "$PY" -m pip install --quiet -r "$1" >&2; return; fi
  tmp="$(mktemp)"
  cat "$1" "$ROOT/requirements.txt" | grep -vE '^(torch|numpy)([ =<>!~;]|$)|^-r ' | awk '!seen[$0]++' > "$tmp"
  echo "run.sh: torch 2.13.0 has no wheel for this macOS; installing $PINS in its place (docs/course.md)" >&2
  # (PINS unquoted: two requirements, "torch==2.2.2 numpy<2")
  # shellcheck disable=SC2086
  "$PY" -m pip install --quiet -r "$tmp" $PINS >&2 || status=$?
  rm -f "$tmp"
  return "$status"
}

MODES="vanilla_finetune_without_pretrain vanilla_eval_dev_without_pretrain vanilla_eval_test_without_pretrain
vanilla_pretrain vanilla_finetune_with_pretrain vanilla_eval_dev_with_pretrain vanilla_eval_test_with_pretrain
synthesizer_pretrain synthesizer_finetune_with_pretrain synthesizer_eval_dev_with_pretrain
synthesizer_eval_test_with_pretrain"

EXTRA_MODES="london_baseline all demo bench test plot memorised ask deliverables"

usage() {
  echo "usage: ./run.sh MODE [extra src/run.py flags]  (./run.sh help says what each mode does)" >&2
  echo "modes:" >&2
  for m in $MODES $EXTRA_MODES; do echo "  $m" >&2; done
  exit 2
}

show_help() {  # ./run.sh help: every mode in a line, the folders and the variables (tests check all are named)
  cat <<'TEXT'
usage: ./run.sh MODE [flags]

The assignment (outputs in OUT_DIR with the course's file names; flags go to src/run.py, whose
--help lists them: model size, epochs, learning rate, seed, --resume):
  vanilla_finetune_without_pretrain     part (d): finetune from scratch  -> vanilla.model.params
  vanilla_eval_dev_without_pretrain     its dev answers    -> vanilla.nopretrain.dev.predictions
  vanilla_eval_test_without_pretrain    its test answers   -> vanilla.nopretrain.test.predictions
  vanilla_pretrain                      part (f): span-corruption pretraining -> vanilla.pretrain.params
  vanilla_finetune_with_pretrain        finetune the pretrained model -> vanilla.finetune.params
  vanilla_eval_dev_with_pretrain        its dev answers    -> vanilla.pretrain.dev.predictions
  vanilla_eval_test_with_pretrain       its test answers   -> vanilla.pretrain.test.predictions
  synthesizer_pretrain                  part (g): the same four steps with the synthesizer
  synthesizer_finetune_with_pretrain
  synthesizer_eval_dev_with_pretrain
  synthesizer_eval_test_with_pretrain
  london_baseline                       dev accuracy of always answering "London" (takes no flags)
  all                                   the modes above but london_baseline, in order; stopped, add --resume

Beyond the course:
  demo           the whole assignment: a small generated world, or on CUDA data/ at full size (--help)
  test           the test suite (on up to 4 CPUs with pytest-xdist), or the test files named (other arguments
                 go to pytest, and the suite then runs in one process)
  bench          reference against fast paths, training and evaluation (--quick: under a minute)
  plot           curves LOG... --out PNG, or attention: loss curves and attention maps
  ask            --params PARAMS "Name": a model's answer and the birthplaces it finds likeliest
  memorised      --params PARAMS: the birthplaces a pretrained model reproduces from the biographies
  deliverables   checks the handout's 18 files and zips them: submission.zip, in OUT_DIR if set elsewhere

Environment: DATA_DIR (inputs, default data/), OUT_DIR (outputs, default src/submission/),
GPT_NUM_THREADS (CPU threads of training, evaluation, ask, memorised), GPT_DEVICE (cpu, cuda or mps;
default the first there of cuda, mps, cpu), GPT_COMPILE (0, 1, a torch.compile mode or backend:
whether training compiles, when no --compile flag says), PYTHON (the interpreter without .venv;
default the first of python3, python and py that runs).
An interrupted training run goes on with the same command and --resume (--restart: starts over).
TEXT
  exit 0
}

# closest MODE: the modes it begins (london: london_baseline; more than four: how many), else the
# nearest to a mistyped one, or nothing (standard-library difflib, no torch)
closest() {
  "$(default_python)" -c 'import difflib, sys; m, modes = sys.argv[1].lower().replace("-", "_"), sys.argv[2:]
starts = [x for x in modes if m and x.startswith(m)]
said = starts if 0 < len(starts) <= 4 else difflib.get_close_matches(m, modes, 1)
print(f"one of the {len(starts)} modes beginning {m} (./run.sh help lists them)" if len(starts) > 4 else
      " or ".join([", ".join(said[:-1])] + said[-1:]) if len(said) > 1 else "".join(said))' \
    "$1" $MODES $EXTRA_MODES 2>/dev/null || true
}

callers_env() {  # the same DATA_DIR and OUT_DIR as this call, to put before a hint's command so it runs as shown
  if [ -n "${DATA_DIR:-}" ]; then printf 'DATA_DIR=%q ' "$DATA_DIR"; fi
  if [ -n "${OUT_DIR:-}" ]; then printf 'OUT_DIR=%q ' "$OUT_DIR"; fi
}
# needs FILE MODE: stop with the mode that makes FILE when it is missing; not where a flag of the mode's own
# was given (run.py refuses it, or reads the file itself): "make it first" sent the user to make a file
# that the refusal of their flag then made moot
needs() {
  if [ ! -f "$1" ] && [ "$OWN_FLAG" = 0 ]; then
    local env; env="$(callers_env)"
    local folder; folder="$(dirname "$1")"
    if [ -d "$1" ]; then  # the mode that makes it refuses a folder's path: "make it" alone went round in a loop
      echo "run.sh: $1 is a folder, not a file; remove or rename it, then make it with: ${env}$ME $2" >&2
    elif [ -e "$folder" ] && [ ! -d "$folder" ]; then  # OUT_DIR names a file: making it there fails too
      echo "run.sh: $folder is a file, not a folder, so $1 cannot be there; set OUT_DIR to a folder" >&2
    elif [ "${2%_finetune_with_pretrain}" != "$2" ] && [ ! -f "$folder/${2%%_*}.pretrain.params" ]; then
      # that mode would stop in turn for the pretrained params: both steps, in order
      echo "run.sh: $1 not found, nor $folder/${2%%_*}.pretrain.params, which it is made from; make them first" \
        "with: ${env}$ME ${2%%_*}_pretrain, then ${env}$ME $2" >&2
    else
      echo "run.sh: $1 not found; make it first with: ${env}$ME $2" >&2
    fi
    exit 2
  fi
}

[ $# -ge 1 ] || usage
MODE="$1"; shift
case "$MODE" in
  help|-h|--help) show_help ;;
  vanilla_finetime_without_pretrain) MODE=vanilla_finetune_without_pretrain ;;   # the handout's spelling
  synthesizer_finetrain_with_pretrain) MODE=synthesizer_finetune_with_pretrain ;;  # the handout's spelling
esac

# The course keeps its data in src/data/; here that is a link to data/, so that the course's own scripts
# find it there. Replaced by a folder of its own, its files would otherwise go unread without a word.
warn_src_data() {
  if [ -z "${DATA_DIR:-}" ] && [ -f "$ROOT/src/data/wiki.txt" ] && ! [ "$ROOT/src/data" -ef "$ROOT/data" ]; then
    echo "run.sh: note: reading data/ (the embedded corpus), not src/data/;" \
      "to use src/data/: DATA_DIR=$(printf '%q' "$ROOT/src/data") $ME $MODE" >&2
  fi
}
# RUN_SH_MODE: run.py (and london_baseline.py) word their hints for run.sh (DATA_DIR and the modes, not the flags
# they refuse)
mode_files() {  # WRITES: the output of mode $1; READS: the params it starts from (none: pretraining)
  local m="$1" V="${1%%_*}"
  case "$m" in
    vanilla_finetune_without_pretrain) WRITES="$OUT/vanilla.model.params"; READS="" ;;
    vanilla_eval_*_without_pretrain) WRITES="$OUT/vanilla.nopretrain.${m#vanilla_eval_}"
      WRITES="${WRITES%_without_pretrain}.predictions"; READS="$OUT/vanilla.model.params" ;;
    vanilla_pretrain|synthesizer_pretrain) WRITES="$OUT/$V.pretrain.params"; READS="" ;;
    *_finetune_with_pretrain) WRITES="$OUT/$V.finetune.params"; READS="$OUT/$V.pretrain.params" ;;
    *) WRITES="$OUT/$V.pretrain.${m#"${V}"_eval_}"; WRITES="${WRITES%_with_pretrain}.predictions"
      READS="$OUT/$V.finetune.params" ;;
  esac
}
run() { warn_src_data; pick_python; RUN_SH_MODE="$MODE" exec "$PY" "${R}src/run.py" "$@"; }
own_flag() {  # own_flag ARG: true when ARG is a flag that the modes set for themselves
  case "$1" in
    --function|--function=*|--variant|--variant=*|--*_corpus_path|--*_corpus_path=*|--reading_params_path|\
    --reading_params_path=*|--writing_params_path|--writing_params_path=*|--outputs_path|--outputs_path=*) return 0 ;;
  esac
  return 1
}
OWN_FLAG=0  # 1: such a flag is among the arguments
for a in "$@"; do if own_flag "$a"; then OWN_FLAG=1; fi; done
WIKI="--pretrain_corpus_path=$DATA/wiki.txt"   # each is one argument: always quoted below
TRAIN="--finetune_corpus_path=$DATA/birth_places_train.tsv"
DEV="--eval_corpus_path=$DATA/birth_dev.tsv"
TEST="--eval_corpus_path=$DATA/birth_test_inputs.tsv"

case "$MODE" in
  vanilla_finetune_without_pretrain)
    run --function=finetune --variant=vanilla "$WIKI" "$TRAIN" --writing_params_path="$OUT/vanilla.model.params" "$@" ;;
  vanilla_eval_dev_without_pretrain)
    needs "$OUT/vanilla.model.params" vanilla_finetune_without_pretrain
    run --function=evaluate --variant=vanilla "$WIKI" "$DEV" --reading_params_path="$OUT/vanilla.model.params" \
      --outputs_path="$OUT/vanilla.nopretrain.dev.predictions" "$@" ;;
  vanilla_eval_test_without_pretrain)
    needs "$OUT/vanilla.model.params" vanilla_finetune_without_pretrain
    run --function=evaluate --variant=vanilla "$WIKI" "$TEST" --reading_params_path="$OUT/vanilla.model.params" \
      --outputs_path="$OUT/vanilla.nopretrain.test.predictions" "$@" ;;
  vanilla_pretrain|synthesizer_pretrain)
    V="${MODE%%_*}"
    run --function=pretrain --variant="$V" "$WIKI" --writing_params_path="$OUT/$V.pretrain.params" "$@" ;;
  vanilla_finetune_with_pretrain|synthesizer_finetune_with_pretrain)
    V="${MODE%%_*}"
    needs "$OUT/$V.pretrain.params" "${V}_pretrain"
    run --function=finetune --variant="$V" "$WIKI" "$TRAIN" --reading_params_path="$OUT/$V.pretrain.params" \
      --writing_params_path="$OUT/$V.finetune.params" "$@" ;;
  vanilla_eval_dev_with_pretrain|synthesizer_eval_dev_with_pretrain|\
    vanilla_eval_test_with_pretrain|synthesizer_eval_test_with_pretrain)
    V="${MODE%%_*}"
    case "$MODE" in *_dev_*) SPLIT=dev; EVAL="$DEV" ;; *) SPLIT=test; EVAL="$TEST" ;; esac
    needs "$OUT/$V.finetune.params" "${V}_finetune_with_pretrain"
    run --function=evaluate --variant="$V" "$WIKI" "$EVAL" --reading_params_path="$OUT/$V.finetune.params" \
      --outputs_path="$OUT/$V.pretrain.$SPLIT.predictions" "$@" ;;
  london_baseline)
    if [ $# -gt 0 ]; then
      echo "run.sh: london_baseline takes no arguments (got: $*); it scores \$DATA_DIR/birth_dev.tsv" >&2; exit 2
    fi
    warn_src_data; pick_python; RUN_SH_MODE="$MODE" exec "$PY" "${R}src/london_baseline.py" -- "$DATA/birth_dev.tsv" ;;
  all)  # with --resume: an interrupted training mode goes on, and a mode whose output is newer than its
    # input is done (a stopped `all` continues where it stopped: the same command with --resume); an
    # `all` started without --resume leaves a stamp, and outputs older than it are not done (they are
    # an earlier run's, which that `all` was making again)
    # --restart: each training mode starts over, replacing an interrupted run's state (without it or
    # --resume, such a state stops `all` before any mode runs, as it would stop that mode: hours of
    # training in it) or the params of a run of more epochs (which run.py refuses to replace without it)
    RESUME=0; RESTART=0; ARGS=()
    for a in "$@"; do
      if own_flag "$a"; then
        # each mode sets these its own way: one value for all would make every deliverable from the same file
        echo "run.sh all: ${a%%=*} is one of the flags each mode sets for itself; give it to a single mode" \
          "(./run.sh MODE), or move all the modes' files with DATA_DIR and OUT_DIR" >&2
        exit 2
      fi
      case "$a" in  # (as run.py's parser reads them, abbreviated too)
        --resu|--resum|--resume) RESUME=1 ;;
        --rest|--resta|--restar|--restart) RESTART=1 ;;
        *) ARGS+=("$a") ;;
      esac
    done
    if [ "$RESUME" = 1 ] && [ "$RESTART" = 1 ]; then
      echo "run.sh all: --resume goes on from the interrupted runs' states, --restart starts over; give one of them" >&2
      exit 2
    fi
    # every mode's input before the first mode trains: a missing birth_test_inputs.tsv stopped `all` only at the
    # first test evaluation, after the finetuning before it (hours on a CPU at the course's size)
    for f in "${WIKI#*=}" "${TRAIN#*=}" "${DEV#*=}" "${TEST#*=}"; do  # the files the modes are given
      # its folder shut (no search permission): the file may be there all the same
      if [ ! -f "$f" ] && [ -d "$(dirname "$f")" ] && [ ! -x "$(dirname "$f")" ]; then
        echo "run.sh all: $f cannot be reached: the folder $(dirname "$f") does not let you in (Permission" \
          "denied); chmod u+rx $(dirname "$f"), or ask its owner to" >&2
        exit 2
      fi
      if [ ! -f "$f" ]; then
        echo "run.sh all: $f not found; its modes read wiki.txt, birth_places_train.tsv, birth_dev.tsv and" \
          "birth_test_inputs.tsv from the folder DATA_DIR names (the course's starter code has the four)" >&2
        exit 2
      fi
    done
    # and what they hold, read as the modes read them (a bad line of birth_test_inputs.tsv stopped it there too)
    pick_python
    # (src/ in the place of the folder run in, which `python -c` puts first: a random.py there hid the library's)
    "$PY" -c 'import sys; sys.path[0] = sys.argv[1]; import run; run.check_all_inputs(sys.argv[2:])' \
      "${R}src" "${WIKI#*=}" "${TRAIN#*=}" "${DEV#*=}" "${TEST#*=}" ${ARGS[@]+"${ARGS[@]}"} || exit $?
    # One `all` at a time in an OUT_DIR: a second (another terminal) stops before it replaces the first's stamp or
    # remakes a mode the first made, and an `all` stops before any mode while a run (alone, or an `all` killed
    # outright whose mode goes on) trains into one of its params: that run's training state is no interrupted
    # run's, as "add --resume" called it, and the modes before it would have been remade. An flock of flock(1)
    # (util-linux) on $OUT/.all.lock, held by this shell alone (not its modes: closed for them), dropped by the
    # system however it ends; run.py's own <params>.lock. Where there is no flock(1), `all` runs unlocked.
    ALL_LOCK="$OUT/.all.lock"; LOCKED=0
    MADE_TOP=""  # the topmost folder of OUT_DIR's that this `all` made (mkdir -p), removed again with those below
    # it (each only if empty) when its first mode changes nothing
    take_all_lock() {
      if [ "$LOCKED" = 1 ] || [ ! -d "$OUT" ] || ! command -v flock >/dev/null 2>&1; then return; fi
      # a link or a FIFO at the lock's name is no lock file of ours: not written through, nor waited on
      if [ -L "$ALL_LOCK" ] || { [ -e "$ALL_LOCK" ] && [ ! -f "$ALL_LOCK" ]; }; then return; fi
      local try holder
      for try in 1 2 3; do
        { exec 9>>"$ALL_LOCK"; } 2>/dev/null || return 0  # no file can be made there: the modes say why
        if ! flock -n 9; then
          holder="$(tr -dc 0-9 < "$ALL_LOCK" 2>/dev/null || true)"
          echo "run.sh all: another ./run.sh all${holder:+ (pid $holder)} is running in $OUT (OUT_DIR) now" \
            "($ALL_LOCK is locked); wait for it to end, or use another OUT_DIR" >&2
          exit 2
        fi
        # the one there now: an `all` ending between this open and the flock removed the file it locked
        if [ "$ALL_LOCK" -ef /dev/fd/9 ]; then
          echo "$$" > "$ALL_LOCK"; LOCKED=1
          trap 'rm -f "$ALL_LOCK"' EXIT  # while still locked: a later `all` that opened it retries
          return
        fi
        exec 9>&-
      done
    }
    held_by() {  # held_by LOCK: true while a live run holds LOCK (run.py's <params>.lock), saying the pid it wrote there
      if [ ! -f "$1" ] || ! command -v flock >/dev/null 2>&1; then return 1; fi
      local rc=0
      flock -n "$1" true 9>&- 2>/dev/null || rc=$?
      [ "$rc" = 1 ] || return 1  # 0: nobody holds it (a killed run's file); others: it cannot be opened
      tr -dc 0-9 < "$1" 2>/dev/null || true
    }
    take_all_lock
    for m in $MODES; do
      mode_files "$m"
      if HOLDER="$(held_by "$WRITES.lock")"; then
        echo "run.sh all: $WRITES: another run${HOLDER:+ (pid $HOLDER)} is training into it now ($WRITES.lock is" \
          "locked); wait for it to end, or use another OUT_DIR" >&2
        exit 2
      fi
    done
    # the stamp: its time, when the last `all` without --resume began; "restart" in it, that it had --restart
    # (a stopped `all --restart`, continued with --resume, starts its undone training modes over too)
    STAMP="$OUT/.all-started"
    PREV=""  # the stamp before this `all` replaced it ("none": there was none), put back if it changes nothing
    if [ "$RESUME" = 0 ]; then
      for m in $MODES; do
        mode_files "$m"
        if [ -d "$WRITES.state" ]; then
          echo "run.sh all: $WRITES.state: a folder where $m keeps its training state; remove or rename it" >&2
          exit 2
        fi
        if [ -f "$WRITES.state" ] && [ "$RESTART" = 0 ]; then
          echo "run.sh all: $WRITES.state: the training state of an interrupted $m; add --resume to go on" \
            "from it, or --restart to start over (the new run then replaces it)" >&2
          exit 2
        fi
      done
      if [ -e "$OUT" ] && [ ! -d "$OUT" ]; then
        echo "run.sh all: $OUT (OUT_DIR) is a file, not a folder; give OUT_DIR a folder" >&2
        exit 2
      fi
      if [ ! -d "$OUT" ]; then
        MADE_TOP="$OUT"
        while [ ! -e "$(dirname "$MADE_TOP")" ]; do MADE_TOP="$(dirname "$MADE_TOP")"; done
      fi
      if ! WHY="$(mkdir -p "$OUT" 2>&1)"; then
        echo "run.sh all: the folder $OUT (OUT_DIR) cannot be made (${WHY##*: }); give OUT_DIR a folder you can" \
          "write to" >&2
        exit 2
      fi
      take_all_lock  # OUT_DIR made just now
      if [ -L "$STAMP" ]; then rm -f "$STAMP"; fi  # a link laid at the stamp's name: never written through
      if [ -f "$STAMP" ]; then PREV="$(mktemp)" && cp -p "$STAMP" "$PREV" || PREV=""; else PREV=none; fi
      if ! { if [ "$RESTART" = 1 ]; then echo restart; fi > "$STAMP"; } 2>/dev/null; then
        if [ "$PREV" != none ]; then rm -f "$PREV"; fi
        echo "run.sh all: the folder $OUT (OUT_DIR) is not writable; give OUT_DIR a folder you can write to" >&2
        exit 2
      fi
    fi
    # a closed stdout or stderr (| head) stops no mode (each writes its files, then exits 141): the
    # rest of the modes run too, and `all` exits 141 at the end; its own lines to a closed pipe are lost
    trap '' PIPE
    # Ctrl-C reaching `all` itself (between modes, or as a mode starts) stops it as one in a mode does,
    # saying how to go on, rather than killing it without a word (SIGTERM keeps its default: sent to
    # `all` alone, a trap would wait for the running mode to end; the mode, whose parent `all` is, named in
    # RUN_SH_ALL_PID, then stops too: startup.stop_with_run_sh_all)
    STOPPED=""
    trap 'STOPPED=130' INT
    stop_all() {  # stop_all STATUS: the mode $m (its file $WRITES) stopped, or `all` before it
      # the first mode stopped before any work (refused, or Ctrl-C before a state was saved): this `all`
      # changed nothing, and the earlier stamp stands (else `all --resume` would make everything again)
      if [ -n "$PREV" ] && [ ! -e "$WRITES.state" ] && ! [ "$WRITES" -nt "$STAMP" ]; then
        # a folder that takes no new file (chmod a-w, chattr +i) refuses mv, not a write into its stamp
        if [ "$PREV" = none ]; then
          rm -f "$STAMP"
          if [ -n "$MADE_TOP" ]; then  # (a mode refused, such as for a bad flag): leave no empty folder behind
            if [ "$LOCKED" = 1 ]; then rm -f "$ALL_LOCK"; fi
            local d="$OUT"
            while rmdir "$d" 2>/dev/null && [ "$d" != "$MADE_TOP" ]; do d="$(dirname "$d")"; done  # only empty ones
          fi
        elif ! mv "$PREV" "$STAMP" 2>/dev/null; then cp -p "$PREV" "$STAMP" 2>/dev/null || true; rm -f "$PREV"; fi
      elif [ -n "$PREV" ] && [ "$PREV" != none ]; then rm -f "$PREV"; fi
      if [ "$1" = 130 ] || [ "$1" = 143 ]; then  # Ctrl-C, SIGTERM: say how to go on
        local again=""
        if [ ${#ARGS[@]} -gt 0 ]; then again="$(printf ' %q' "${ARGS[@]}")"; fi
        echo "run.sh all: stopped in $m; to go on where it stopped: $(callers_env)$ME all --resume$again" >&2 || true
      fi
      exit "$1"
    }
    PIPED=0
    for m in $MODES; do
      mode_files "$m"
      if [ -n "$STOPPED" ]; then stop_all "$STOPPED"; fi
      FLAGS=()
      if [ "$RESTART" = 1 ] && [ "${WRITES%.params}" != "$WRITES" ]; then
        FLAGS=(--restart)
      elif [ "$RESUME" = 1 ]; then
        if [ -f "$WRITES.state" ]; then
          FLAGS=(--resume)
        elif [ -f "$WRITES" ] && { [ -z "$READS" ] || [ "$WRITES" -nt "$READS" ]; } \
            && { [ ! -f "$STAMP" ] || [ "$WRITES" -nt "$STAMP" ]; }; then
          echo "=== ./run.sh $m: done ($WRITES is there${READS:+, newer than $READS};" \
            "remove it to make it again, as with other flags or data)" >&2 || true
          continue
        elif [ "${WRITES%.params}" != "$WRITES" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = restart ]; then
          FLAGS=(--restart)
        fi
      fi
      echo "=== ./run.sh $m${FLAGS[*]:+ ${FLAGS[*]}}" >&2 || true
      if [ -n "$STOPPED" ]; then stop_all "$STOPPED"; fi  # Ctrl-C since the check above: not after a whole mode
      RUN_SH_ALL="$AGAIN" RUN_SH_ALL_PID=$$ RUN_PY_SHARED_FLAGS=1 "$BASH" "$ROOT/run.sh" "$m" ${ARGS[@]+"${ARGS[@]}"} \
        ${FLAGS[@]+"${FLAGS[@]}"} 9>&- || {
        STATUS=$?
        # a Ctrl-C that reached `all` is the stop, whatever the mode made of it (a Python killed as it
        # started says "Fatal Python error" and exits 1): the line says how to go on
        if [ "$STATUS" = 141 ]; then PIPED=1; else stop_all "${STOPPED:-$STATUS}"; fi; }
      if [ -n "$PREV" ] && [ "$PREV" != none ]; then rm -f "$PREV"; fi
      PREV=""  # a mode has run: the new stamp stays
    done
    # a Ctrl-C that reached `all` while its last mode started can miss that mode (its shell, waiting for a
    # command of its own, takes it as that command's): `all` still stops, and does not say "done"
    if [ -n "$STOPPED" ]; then stop_all "$STOPPED"; fi
    if [ "$PIPED" = 1 ]; then exit 141; fi
    # quoted as the shell needs them (a folder with a space in its name), like every hint's paths
    GRADE="python $(printf '%q' "${R}src/grader.py")"
    if [ -n "${DATA_DIR:-}" ]; then GRADE="$GRADE --data-dir=$(printf '%q' "$DATA")"; fi
    if [ -n "${OUT_DIR:-}" ]; then GRADE="$GRADE --submission-dir=$(printf '%q' "$OUT")"; fi
    SUBMIT="$(callers_env)$ME deliverables"
    echo "=== run.sh all: the eleven modes are done; next: $GRADE (the autograder), $SUBMIT (checks the files to" \
      "submit and zips them)" \
      >&2 || true ;;
  demo)  # its own corpus unless DATA_DIR is set (--data-dir wins); always runs/demo/ or --out, never
    # OUT_DIR, which holds the course modes' params: the demo's own of the same names would replace them
    pick_python; exec "$PY" "${R}src/demo.py" ${DATA_DIR:+"--data-dir=$DATA"} "$@" ;;
  bench)  # data/ unless DATA_DIR is set (a --data-dir flag comes later and wins)
    pick_python; exec "$PY" "${R}src/bench.py" ${DATA_DIR:+"--data-dir=$DATA"} "$@" ;;
  test)  # the suite's own paths are the repo's
    pick_python
    case "$PY" in /*) ;; */*) PY="$PWD/$PY" ;; esac  # a relative PYTHON, before leaving the caller's folder
    # a test file or folder named (tests/test_plots.py, test_x.py::test_y), from the caller's folder, the
    # repo's or tests/, is run alone; with none named, the whole suite. Other arguments, and the values of
    # pytest's options (-k data, --deselect PATH), go to pytest as given.
    ARGS=(); NAMED=0; VALUE=0
    for a in "$@"; do
      f="${a%%::*}"
      if [ "$VALUE" = 0 ] && [ "${a#-}" = "$a" ] \
          && { [ "${f%.py}" != "$f" ] || [ -d "$f" ] || [ -d "$ROOT/$f" ]; }; then
        if [ -e "$f" ]; then
          case "$a" in /*) ;; *) a="$PWD/$a" ;; esac
          NAMED=1
        elif [ -e "$ROOT/$f" ]; then
          NAMED=1
        elif [ -e "$ROOT/tests/$f" ]; then  # a test file by its own name (test_ask.py), as the suite's
          a="tests/$a"; NAMED=1
        fi
      fi
      case "$a" in  # pytest's options whose value is the next argument
        -k|-m|-p|-c|-o|-W|--deselect|--ignore|--ignore-glob|--rootdir|--basetemp|--confcutdir|--junit-xml) VALUE=1 ;;
        *) VALUE=0 ;;
      esac
      ARGS+=("$a")
    done
    [ "$NAMED" = 1 ] || ARGS=(tests ${ARGS[@]+"${ARGS[@]}"})
    cd "$ROOT"
    if ! "$PY" -c "${DIES_AT_CTRL_C}import pytest, matplotlib, nbclient, ipykernel" >/dev/null 2>&1; then
      echo "run.sh: installing the test requirements (requirements-dev.txt)" >&2
      pip_install requirements-dev.txt
    fi
    # the whole suite, nothing else asked: spread over up to 4 worker processes where pytest-xdist is there (on 2
    # cores 8.3 min against 11.8); with any argument one process, which every pytest option works in (--pdb, -s)
    if [ "$#" = 0 ] && "$PY" -c "${DIES_AT_CTRL_C}import xdist" >/dev/null 2>&1; then
      ARGS=(-n auto --maxprocesses 4 "${ARGS[@]}")
    fi
    exec "$PY" -m pytest -q "${ARGS[@]}" ;;
  plot)  # attention reads DATA_DIR's wiki.txt when it is set, as ask does (a --pretrain_corpus_path flag comes
    # later and wins); neither: plots.py picks the corpus of the params' vocabulary, data/ or the demo's world
    pick_python
    if [ "${1:-}" = attention ] && [ -n "${DATA_DIR:-}" ]; then
      shift; set -- attention "--pretrain_corpus_path=$DATA/wiki.txt" "$@"
    fi
    exec "$PY" "${R}src/plots.py" "$@" ;;
  memorised|ask)  # DATA_DIR as for the other modes (a --data-dir flag comes later and wins); neither: the tool
    # picks the corpus of the params' vocabulary, data/ or the demo's world beside them
    pick_python; exec "$PY" "${R}src/$MODE.py" ${DATA_DIR:+"--data-dir=$DATA"} "$@" ;;
  deliverables)  # the handout's 18 files (7 code files of src/submission/, 11 outputs of OUT_DIR), checked against
    # DATA_DIR, zipped into submission.zip (in OUT_DIR when it is set elsewhere)
    pick_python; exec "$PY" "${R}src/deliverables.py" "--submission-dir=$OUT" "--data-dir=$DATA" "$@" ;;
  *)
    GUESS="$(closest "$MODE")"
    if [ -z "$GUESS" ]; then echo "run.sh: unknown mode '$MODE'" >&2; usage; fi
    case "$GUESS" in  # a guess: one line (the list of modes would bury it)
      *"(./run.sh help"*) echo "run.sh: unknown mode '$MODE'; did you mean $GUESS?" >&2 ;;
      *) echo "run.sh: unknown mode '$MODE'; did you mean $GUESS? (./run.sh help lists every mode)" >&2 ;;
    esac
    exit 2 ;;
esac
exit
}

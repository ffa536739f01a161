#!/usr/bin/env bash
# The course keeps run.sh in src/, so `cd src && ./run.sh MODE` is what its students type: this runs
# the project's ../run.sh, with the same modes, data and output files.
if [ -z "${BASH_VERSION:-}" ]; then  # `sh run.sh`: dash has no BASH_SOURCE; bash has
  case "$0" in *run.sh) exec bash "$0" "$@" ;; esac
  echo "run.sh: a bash script; run it as ./run.sh MODE (or bash run.sh MODE)" >&2; exit 2
fi
# through bash, not the file's executable bit: a copy from a zip may have lost it
exec "$BASH" "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/run.sh" "$@"

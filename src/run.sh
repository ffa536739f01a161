#!/usr/bin/env bash
# The course keeps run.sh in src/, so `cd src && ./run.sh MODE` is what its students type: this runs
# the project's ../run.sh, with the same modes, data and output files.
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi  # `sh run.sh`: dash has no BASH_SOURCE
exec "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/run.sh" "$@"

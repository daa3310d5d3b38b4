#!/usr/bin/env bash
# Run the interop suite in a private network namespace where only loopback exists, so every
# candidate is 127.0.0.1 and nothing leaves the machine. Arguments go to pytest, e.g.
#   INTEROP_STANDIN=1 interop/run.sh -k echo
#   interop/run.sh interop/test_audio.py -x      (a test file or node id: only that, not the suite)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${INTEROP_PYTHON:-.venv/bin/python}"
if [ ! -x "$PYTHON" ]; then
  echo "interop/run.sh: $PYTHON not found (create the venv: python3 -m venv .venv && .venv/bin/pip install aiortc pytest numpy)" >&2
  exit 2
fi
mkdir -p artifacts/interop
# The whole suite unless a test path is given (pytest would run both).
TARGET=interop
for a in "$@"; do case "$a" in interop/*) TARGET= ;; esac; done
export TARGET
exec unshare --net bash -c 'ip link set lo up && exec "$0" -m pytest -q -p no:cacheprovider --durations=0 $TARGET "$@"' "$PYTHON" "$@"

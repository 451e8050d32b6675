#!/usr/bin/env bash
# Re-resolve the newest versions that polyglot-groc's dependencies allow and pin them in constraints.txt.
#
#   bash tools/refresh-constraints.sh            # writes constraints.txt, then runs the test suite with it
#
# It builds a throw-away virtual environment, installs torch==2.13.0 first (the CPU build where the
# index offers it), then the package with every extra *without* the old pins, freezes the whole resolved
# set (the editable package itself left out), and runs the README's test command against the new pins.
# Commit constraints.txt only when that run is green.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$(mktemp -d)/venv
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q torch==2.13.0
"$venv/bin/python" -m pip install -q -e ".[dev,elmo,tensorboard]"
{
    echo "# Exact versions the test suite passed with (Python $("$venv/bin/python" -c 'import sys; print(*sys.version_info[:2], sep=".")')), for"
    echo "# pip install -c constraints.txt. Refresh with: bash tools/refresh-constraints.sh"
    "$venv/bin/python" -m pip freeze --exclude-editable | sed 's/^torch==\([0-9.]*\)+.*/torch==\1/'
} > constraints.txt.tmp
mv constraints.txt.tmp constraints.txt
"$venv/bin/python" -m pip install -q -c constraints.txt -e ".[dev]"
POLYGLOT_GROC_DATA="${POLYGLOT_GROC_DATA:-$(cd ../shared/data 2>/dev/null && pwd || true)}" \
    "$venv/bin/python" -m pytest -q
rm -rf "$(dirname "$venv")"

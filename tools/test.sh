#!/usr/bin/env bash
# The test command: installs the pinned Pillow, re-makes the goldens with it to prove the
# committed ones are real Pillow output, then runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -r tools/requirements.txt
python3 tools/goldens.py --check
cargo test --release

#!/usr/bin/env bash
# The test command: installs the pinned Pillow (and lavapipe when there is no Vulkan driver),
# re-makes the goldens with it to prove the committed ones are real Pillow output, then runs the
# whole test suite, GPU tests included, then builds and installs the Python package (maturin, from
# python/) and runs its tests.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -r tools/requirements.txt
# The GPU tests run the real shaders; without a Vulkan driver, install Mesa's CPU one (lavapipe).
if ! ls /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json >/dev/null 2>&1; then
  sudo=$([ "$(id -u)" = 0 ] || echo sudo)
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null
fi
python3 tools/goldens.py --check
cargo test --release
# The package builds in the same target directory, reusing the crate's release build.
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}" python3 -m pip install --quiet --disable-pip-version-check ./python
python3 -m pytest -q -rs python/tests

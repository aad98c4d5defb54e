#!/usr/bin/env bash
# The test command: installs the pinned Pillow, Dawn's node bindings (with, for the Dawn replay,
# Mesa 25's lavapipe unpacked beside them), SPIRV-Tools and Mesa's lavapipe, re-makes the goldens
# with Pillow to prove the committed ones are real Pillow output, then runs the whole test suite,
# GPU tests included (the remote-shard tests on nginx and an S3 server, s3s-fs, on loopback),
# then builds the Python package's wheel (tools/wheel.sh), installs it into a
# fresh virtual environment with no Rust toolchain on its PATH, and runs the Python tests against
# that install.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -r tools/requirements.txt
# The GPU tests run the real shaders; without a Vulkan driver, they run on Mesa's CPU one
# (lavapipe), and the Dawn replay runs on a newer lavapipe that needs that package's libraries
# (tools/dawn/lavapipe.sh fetches it with curl). The shaders' SPIR-V is checked by the Khronos
# validator, spirv-val (SPIRV-Tools).
packages=()
for package in mesa-vulkan-drivers libvulkan1; do
  dpkg -s "$package" >/dev/null 2>&1 || packages+=("$package")
done
# The remote-shard tests' servers, on loopback: Debian's nginx, and s3s-fs (an S3 server over a
# folder, from crates.io, below).
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null || packages+=(nginx)
command -v curl >/dev/null || packages+=(curl)
command -v spirv-val >/dev/null || packages+=(spirv-tools)
if [ ${#packages[@]} -gt 0 ]; then
  sudo=$([ "$(id -u)" = 0 ] || echo sudo)
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "${packages[@]}" >/dev/null
fi
# Dawn's node bindings, whose WGSL compiler (Tint) compiles every shader in the tests, and on
# which a test replays batches through every stage (over Mesa 25's lavapipe, unpacked beside).
(cd tools/dawn && npm ci --no-audit --no-fund --silent)
command -v s3s-fs >/dev/null || cargo install --quiet --locked s3s-fs@0.14.1 --features binary
GPUPREP_TEST_SERVERS="$(dirname "$(command -v s3s-fs)")"
export GPUPREP_TEST_SERVERS
tools/dawn/lavapipe.sh
python3 tools/goldens.py --check
cargo test --release
# The wheel builds in a target folder of its own: it links with zig, which would rebuild the
# crate's release build above in place.
CARGO_TARGET_DIR="$PWD/target/wheel" tools/wheel.sh
venv="$(mktemp -d)/venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check dist/gpuprep-*.whl \
  -r tools/requirements.txt
# Run from the tests' folder, so that `import gpuprep` finds the installed package, not python/.
(
  cd python/tests
  export PATH="$venv/bin:/usr/bin:/bin"
  for tool in cargo rustc; do
    if command -v "$tool" >/dev/null; then
      echo "test.sh: the Python tests must run with no Rust toolchain on the PATH ($tool)" >&2
      exit 1
    fi
  done
  python -c 'import gpuprep; assert "site-packages" in gpuprep.__file__, gpuprep.__file__'
  python -m pytest -q -rs -p no:cacheprovider .
)

#!/usr/bin/env bash
# Builds the Python package as a wheel and an sdist in dist/: one abi3 wheel for every CPython
# from 3.9 on, linked (through zig, no container) against glibc 2.28, so that auditwheel calls it
# manylinux_2_28 and pip installs it on any Linux of the last years with no Rust toolchain.
#
# usage: tools/wheel.sh        (needs the Rust toolchain; installing the wheel does not)
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -r tools/requirements-wheel.txt
rm -rf dist
maturin build --release --strip --zig --compatibility manylinux_2_28 \
  --manifest-path python/Cargo.toml --out dist
maturin sdist --manifest-path python/Cargo.toml --out dist
# The oldest glibc the library's symbols need, as auditwheel reads it off the binary: 2.28 at
# most, whatever glibc this machine has.
wheel=$(ls dist/gpuprep-*.whl)
tag=$(auditwheel show "$wheel" | tr -d '\n' | grep -o 'platform tag: *"manylinux_2_[0-9]*' | grep -o '[0-9]*$')
if [ -z "$tag" ] || [ "$tag" -gt 28 ]; then
  auditwheel show "$wheel"
  echo "wheel.sh: $wheel is not manylinux_2_28 or older" >&2
  exit 1
fi
echo "wheel.sh: $wheel (manylinux_2_$tag) and $(ls dist/gpuprep-*.tar.gz)"

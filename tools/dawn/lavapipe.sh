#!/usr/bin/env bash
# Mesa 25's lavapipe (Debian bookworm-backports), unpacked into tools/dawn/lavapipe/ for the Dawn
# replay only (src/gpu/dawn.rs points VK_ICD_FILENAMES at it): Dawn's Vulkan back end needs
# features the lavapipe of Debian 12 itself (Mesa 22.3) lacks. Nothing is installed system-wide;
# the packages are pinned by version and SHA-256. x86_64 only. Needs curl and dpkg-deb, and the
# libraries Debian's own mesa-vulkan-drivers depends on (LLVM 15, xcb, wayland: tools/test.sh
# installs that package).
set -euo pipefail
cd "$(dirname "$0")"
out=lavapipe
version="mesa 25.0.7-2~bpo12+1, libdrm 2.4.123-1~bpo12+1"
if [ "$(cat "$out/VERSION" 2>/dev/null)" = "$version" ]; then exit 0; fi
if [ "$(dpkg --print-architecture)" != amd64 ]; then
  echo "lavapipe.sh: the pinned packages are amd64's; this machine is $(dpkg --print-architecture)" >&2
  exit 1
fi
# Debian's pool drops a backports version once a newer one arrives; its snapshot archive keeps
# every version.
mirrors=(https://deb.debian.org/debian https://snapshot.debian.org/archive/debian/20251201T000000Z)
packages=(
  "pool/main/m/mesa/mesa-vulkan-drivers_25.0.7-2~bpo12+1_amd64.deb 3899f1800424c60a05df5d6913076a526ca8fdbabec43672cd397563d1ca3263"
  "pool/main/libd/libdrm/libdrm2_2.4.123-1~bpo12+1_amd64.deb 9cc2f341964286295124a32d3625edb76730500625e54a1e682761f883064d7b"
)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for entry in "${packages[@]}"; do
  read -r file sha <<<"$entry"
  deb="$work/$(basename "$file")"
  for mirror in "${mirrors[@]}"; do
    curl -fsSL --retry 3 --max-time 300 -o "$deb" "$mirror/$file" && break
  done
  if ! echo "$sha  $deb" | sha256sum -c --quiet 2>/dev/null; then
    echo "lavapipe.sh: could not fetch $file (SHA-256 $sha) from ${mirrors[*]}" >&2
    exit 1
  fi
  dpkg-deb -x "$deb" "$work/root"
done
mkdir -p "$work/out/lib"
lib="$work/root/usr/lib/x86_64-linux-gnu"
cp "$lib/libvulkan_lvp.so" "$lib/libdrm.so.2" "$work/out/lib/"
# A relative library path is read from the manifest's own folder, wherever the checkout lies.
echo '{"file_format_version": "1.0.1", "ICD": {"library_path": "./lib/libvulkan_lvp.so", "api_version": "1.4.305"}}' \
  > "$work/out/lvp_icd.json"
missing=$(LD_LIBRARY_PATH="$work/out/lib" ldd "$work/out/lib/libvulkan_lvp.so" | grep "not found" || true)
if [ -n "$missing" ]; then
  echo "lavapipe.sh: libraries lavapipe needs are missing (apt-get install mesa-vulkan-drivers):" >&2
  echo "$missing" >&2
  exit 1
fi
echo "$version" > "$work/out/VERSION"
rm -rf "$out"
mv "$work/out" "$out"
echo "lavapipe.sh: Mesa 25.0.7's lavapipe in tools/dawn/$out"

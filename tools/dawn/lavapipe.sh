#!/usr/bin/env bash
# Mesa 25's lavapipe (Debian bookworm-backports), unpacked into tools/dawn/lavapipe/ for the Dawn
# replay only (src/gpu/dawn.rs points VK_ICD_FILENAMES at it): Dawn's Vulkan back end needs
# features the lavapipe of Debian 12 itself (Mesa 22.3) lacks. Nothing is installed system-wide;
# the packages are pinned by version and SHA-256. Needs curl and dpkg-deb, and the libraries
# Debian's own mesa-vulkan-drivers depends on (LLVM 15, xcb, wayland), which tools/test.sh installs.
set -euo pipefail
cd "$(dirname "$0")"
out=lavapipe
if [ -f "$out/lvp_icd.json" ]; then exit 0; fi
pool=https://deb.debian.org/debian/pool/main
packages=(
  "m/mesa/mesa-vulkan-drivers_25.0.7-2~bpo12+1_amd64.deb 3899f1800424c60a05df5d6913076a526ca8fdbabec43672cd397563d1ca3263"
  "libd/libdrm/libdrm2_2.4.123-1~bpo12+1_amd64.deb 9cc2f341964286295124a32d3625edb76730500625e54a1e682761f883064d7b"
)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for entry in "${packages[@]}"; do
  read -r file sha <<<"$entry"
  deb="$work/$(basename "$file")"
  curl -fsSL --retry 3 -o "$deb" "$pool/$file"
  echo "$sha  $deb" | sha256sum -c --quiet
  dpkg-deb -x "$deb" "$work/root"
done
mkdir -p "$work/out/lib"
cp "$work"/root/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so "$work"/root/usr/lib/x86_64-linux-gnu/libdrm.so.2* "$work/out/lib/"
cat > "$work/out/lvp_icd.json" <<JSON
{"file_format_version": "1.0.1", "ICD": {"library_path": "$PWD/$out/lib/libvulkan_lvp.so", "api_version": "1.4.305"}}
JSON
rm -rf "$out"
mv "$work/out" "$out"
echo "lavapipe.sh: Mesa 25.0.7's lavapipe in tools/dawn/$out"

# Several builds of gpuprep side by side on the GPU machine: each carried as
# .device/builds/NAME.xz (the stripped release binary, xz-compressed), taken in turn, two rounds,
# on the large-photo set (make_set.py), camera4, seed-1080p and photos-imagenet (or those named in
# BENCH_SETS: large camera4 seed-1080p photos-imagenet), each ten times over at batch 64: the
# median pass's img/s (`--repeat 5`) and the GPU stage times (`--repeat 2 --time-stages`), one
# JSON line each in $OUT/builds.jsonl. Then `gpuprep parity --pillow` on every set of those builds
# named in PARITY_BUILDS (default: the last in name order). Carried in .device/ as well: what
# ../shared/device/prepare.sh puts there (SETS="camera photos-imagenet seed-1080p").
set -u
source .device/on-device.sh
mkdir -p /tmp/bin
builds=()
for packed in .device/builds/*.xz; do
  name=$(basename "$packed" .xz)
  python3 -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], 'wb'))" "$packed" "/tmp/bin/$name"
  chmod +x "/tmp/bin/$name"
  builds+=("$name")
done
folders=()
for name in ${BENCH_SETS:-large camera4 seed-1080p photos-imagenet}; do
  case $name in
    large)
      python3 tools/large_photos/make_set.py .device/sets/camera /tmp/large > $OUT/large_set.jsonl
      folders+=(/tmp/large) ;;
    camera4) folders+=(/tmp/camera4) ;;
    *) folders+=(".device/sets/$name") ;;
  esac
done
sets=()
for folder in "${folders[@]}"; do sets+=("$(stream10 "$folder")"); done
ours="--backend gpu --resize 224x224 --normalize imagenet --quiet --keep-on-gpu --batch 64"
for round in 1 2; do
  for build in "${builds[@]}"; do
    for set in "${sets[@]}"; do
      echo "{\"what\": \"build\", \"build\": \"$build\", \"set\": \"$(basename $set)\", \"round\": $round}"
      /tmp/bin/$build bench $set $ours --repeat 5 | head -1
      /tmp/bin/$build bench $set $ours --repeat 2 --time-stages | grep '"gpu_phases"'
    done
  done
done | tee -a $OUT/builds.jsonl
for build in ${PARITY_BUILDS:-${builds[-1]}}; do
  for set in "${folders[@]}"; do
    verdict=$(/tmp/bin/$build parity $set --pillow --resize 224x224 --normalize imagenet -q 2>&1 | tail -1)
    echo "parity --pillow, build $build, $(basename $set): $verdict"
  done
done | tee -a $OUT/builds.jsonl

# The large-photo set beside NVIDIA DALI 2.4 on the GPU machine: the set built there from the
# camera photos (make_set.py), each file as 40 copies (gpuprep at batch 16, five passes, the median
# pass's img/s, then its GPU stage times; DALI's evaluation pipeline on the same 40 as one batch,
# steady state), then the whole set ten times over: gpuprep streaming it at batch 16 and 64, DALI
# taking all 280 as one batch (a batch of the 28 would wait for its progressive files, each decoded
# by one thread, every iteration). Every result is a JSON line, appended to $OUT/large.jsonl as it comes
# (DALI's errors to $OUT/dali.err). About five minutes.
# Carried in .device/: gpuprep.xz (the stripped release binary, xz-compressed) and what
# ../shared/device/prepare.sh puts there (SETS=camera); DALI taken first in three calls
# (../shared/device/dali-pieces.sh), so that it is unpacked in /tmp/site.
set -u
source .device/on-device.sh
mkdir -p /tmp/bin
python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('.device/gpuprep.xz'), open('/tmp/bin/gpuprep', 'wb'))"
chmod +x /tmp/bin/gpuprep; export PATH=/tmp/bin:$PATH
LOG=$OUT/large.jsonl
python3 tools/large_photos/make_set.py .device/sets/camera /tmp/large | tee -a $LOG
# Each file 40 times over, in a folder of its own (links).
python3 - <<'PY'
import os, shutil
shutil.rmtree("/tmp/one", ignore_errors=True)
for name in sorted(os.listdir("/tmp/large")):
    folder = os.path.join("/tmp/one", os.path.splitext(name)[0])
    os.makedirs(folder, exist_ok=True)
    for k in range(40):
        os.symlink(os.path.join("/tmp/large", name), os.path.join(folder, f"{k:02d}.jpg"))
PY
ours="--backend gpu --resize 224x224 --normalize imagenet --quiet --keep-on-gpu"
ten=$(stream10 /tmp/large)
# AB_ONLY=1: only the comparison of two builds at the end (no DALI needed).
if [ -z "${AB_ONLY:-}" ]; then
for folder in /tmp/one/*; do
  echo "{\"what\": \"file\", \"file\": \"$(basename $folder)\"}"
  gpuprep bench $folder $ours --batch 16 --repeat 5 | head -1
  gpuprep bench $folder $ours --batch 16 --repeat 2 --time-stages | grep '"gpu_phases"'
done | tee -a $LOG
python3 tools/large_photos/dali_resize.py /tmp/one/* 2>$OUT/dali.err | tee -a $LOG
for batch in 16 64; do
  echo "{\"what\": \"whole_set\", \"batch\": $batch}"
  gpuprep bench $ten $ours --batch $batch --repeat 5 | head -2
done | tee -a $LOG
python3 tools/large_photos/dali_resize.py $ten 2>>$OUT/dali.err | tee -a $LOG
fi
# With a second build carried as .device/gpuprep-a.xz: both builds in turn on the set and on
# camera4, each ten times over at batch 64, img/s and GPU stage times, to $OUT/ab.jsonl.
if [ -f .device/gpuprep-a.xz ]; then
  python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('.device/gpuprep-a.xz'), open('/tmp/bin/gpuprep-a', 'wb'))"
  chmod +x /tmp/bin/gpuprep-a
  cam=$(stream10 /tmp/camera4)
  for round in 1 2; do
    for build in gpuprep-a gpuprep; do
      for set in $ten $cam; do
        echo "{\"what\": \"ab\", \"build\": \"$build\", \"set\": \"$(basename $set)\", \"round\": $round}"
        $build bench $set $ours --batch 64 --repeat 5 | head -1
        $build bench $set $ours --batch 64 --repeat 2 --time-stages | grep '"gpu_phases"'
      done
    done
  done | tee -a $OUT/ab.jsonl
fi

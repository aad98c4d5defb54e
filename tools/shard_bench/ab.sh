# Two builds of `gpuprep shard` in turn on the same photos (an A/B of a change), then the
# 16-process Pillow pool, every sample's bytes of both builds' shards compared with Pillow's,
# and NVIDIA's libraries' job: camera4 COPIES times over (400 by default: 25,600 camera photos) to
# shorter side 320 at quality 90, the encoder's forward stages on the encoding threads; ROUNDS
# rounds (3 by default) of A then B after a warm-up run of each. Each result is a JSON line,
# appended to $OUT/ab.jsonl as it comes (a call cut short keeps what it measured).
# Carried in .device/: gpuprep-a.xz and gpuprep.xz (stripped release binaries, xz-compressed:
# A is the baseline, gpuprep.xz the change), pillow_job.py, nvimgcodec_job.py, and what
# ../shared/device/prepare.sh puts there (SETS=camera).
set -u
source .device/on-device.sh
LOG=$OUT/ab.jsonl
mkdir -p /tmp/bin
for build in a b; do
  from=.device/gpuprep.xz; [ $build = a ] && from=.device/gpuprep-a.xz
  python3 -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], 'wb'))" $from /tmp/bin/gpuprep-$build
  chmod +x /tmp/bin/gpuprep-$build
done
SET=/tmp/copies
python3 tools/shard_bench/copies.py /tmp/camera4 $SET ${COPIES:-400}
N=$(ls $SET | wc -l); echo "{\"what\": \"set\", \"images\": $N, \"cores\": $(nproc)}" | tee -a $LOG
run() {
  rm -rf /tmp/ours-$1; start=$(date +%s.%N)
  /tmp/bin/gpuprep-$1 shard $SET --out "/tmp/ours-$1/train-%06d.tar" --resize 320 --quality 90 --shard-samples 1000000 --backend gpu --quiet | tail -1
  end=$(date +%s.%N); python3 -c "print('{\"what\": \"gpuprep_shard\", \"build\": \"$1\", \"round\": $2, \"seconds\": %f, \"img_s\": %f}' % ($end - $start, $N / ($end - $start)))"
}
{ run a 0; run b 0; for round in $(seq 1 ${ROUNDS:-3}); do run a $round; run b $round; done; } 2>&1 | tee -a $LOG
python3 .device/pillow_job.py $SET /tmp/pillow.tar 320 90 16 | tee -a $LOG
python3 - <<'PY' | tee -a $LOG
import json, tarfile
theirs = tarfile.open("/tmp/pillow.tar")
b = {m.name: theirs.extractfile(m).read() for m in theirs.getmembers()}
for build in ("a", "b"):
    ours = tarfile.open(f"/tmp/ours-{build}/train-000000.tar")
    a = {m.name: ours.extractfile(m).read() for m in ours.getmembers() if m.name.endswith(".jpg")}
    same = sum(a.get(k) == v for k, v in b.items())
    print(json.dumps({"what": "bytes_compared", "build": build, "samples": len(b), "identical": same,
                      "ours_bytes": sum(map(len, a.values())), "pillow_bytes": sum(map(len, b.values()))}))
PY
[ "${NVIMGCODEC:-1}" = 0 ] || timeout 150 python3 .device/nvimgcodec_job.py $SET /tmp/nvimgcodec.tar 320 90 64 --compare /tmp/pillow.tar 2>&1 | tail -3 | tee -a $LOG

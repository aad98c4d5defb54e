# The offline job on the GPU machine: camera4 COPIES times over (400 by default: 25,600 real
# camera photos) to shorter side 320 at quality 90, by `gpuprep shard` (GPU backend, RUNS runs,
# 5 by default: run 1 warms up, then the encoder's forward stages on CPU threads and on the GPU
# in turn; its last line gives each stage's seconds), by a 16-process Pillow pool (pillow_job.py) and by NVIDIA's libraries
# (nvimgcodec_job.py: nvImageCodec decode, torch resize, nvImageCodec encode), then every
# sample's bytes compared with Pillow's on this machine (NVIMGCODEC=0 leaves NVIDIA's job out,
# COMPARE=0 the comparison).
# Carried in .device/: gpuprep.xz (the stripped release binary, xz-compressed), pillow_job.py,
# nvimgcodec_job.py, and what ../shared/device/prepare.sh puts there (SETS=camera).
set -u
source .device/on-device.sh
mkdir -p /tmp/bin
python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('.device/gpuprep.xz'), open('/tmp/bin/gpuprep', 'wb'))"
chmod +x /tmp/bin/gpuprep; export PATH=/tmp/bin:$PATH
SET=/tmp/copies; python3 tools/shard_bench/copies.py /tmp/camera4 $SET ${COPIES:-400}
N=$(ls $SET | wc -l); echo $N; nproc; python3 -c "import PIL; print('Pillow', PIL.__version__)"
# Run 1 (which compiles the shaders) and the even runs with the encoder's forward stages on CPU
# threads (the default), the odd runs after it with them on the GPU.
for run in $(seq 1 ${RUNS:-5}); do
  where=$([ $((run % 2)) = 1 ] && [ $run != 1 ] && echo gpu || echo cpu)
  rm -rf /tmp/ours-$where; start=$(date +%s.%N)
  gpuprep shard $SET --out "/tmp/ours-$where/train-%06d.tar" --resize 320 --quality 90 --shard-samples 1000000 --backend gpu --forward-stages $where --quiet | tail -1
  end=$(date +%s.%N); python3 -c "print('{\"what\": \"gpuprep_shard\", \"run\": $run, \"forward_stages\": \"$where\", \"seconds\": %f, \"img_s\": %f}' % ($end - $start, $N / ($end - $start)))"
done | tee -a $OUT/shard.jsonl
python3 .device/pillow_job.py $SET /tmp/pillow.tar 320 90 16 | tee -a $OUT/shard.jsonl
[ "${NVIMGCODEC:-1}" = 0 ] || timeout 240 python3 .device/nvimgcodec_job.py $SET /tmp/nvimgcodec.tar 320 90 64 --compare /tmp/pillow.tar 2>&1 | tail -5 | tee -a $OUT/shard.jsonl
[ "${COMPARE:-1}" = 0 ] || python3 - <<'PY' | tee -a $OUT/shard.jsonl
import json, tarfile
theirs = tarfile.open("/tmp/pillow.tar")
b = {m.name: theirs.extractfile(m).read() for m in theirs.getmembers()}
for where in ("gpu", "cpu"):
    ours = tarfile.open(f"/tmp/ours-{where}/train-000000.tar")
    a = {m.name: ours.extractfile(m).read() for m in ours.getmembers() if m.name.endswith(".jpg")}
    same = sum(a.get(k) == v for k, v in b.items())
    print(json.dumps({"what": "bytes_compared", "forward_stages": where, "samples": len(b), "identical": same, "ours_bytes": sum(map(len, a.values())), "pillow_bytes": sum(map(len, b.values()))}))
PY

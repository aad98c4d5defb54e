"""make_shards.py SET OUT REPEATS PER_SHARD: the set's JPEGs REPEATS times over as WebDataset
shards of PER_SHARD samples (key.jpg + key.cls), shard-000000.tar, ..."""
import io, os, sys, tarfile
src, out, repeats, per = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
files = sorted(os.path.join(src, f) for f in os.listdir(src) if f.lower().endswith((".jpg", ".jpeg")))
samples = [(r, f) for r in range(repeats) for f in files]
os.makedirs(out, exist_ok=True)
for s in range(0, len(samples), per):
    with tarfile.open(os.path.join(out, f"shard-{s // per:06d}.tar"), "w") as tar:
        for k, (r, f) in enumerate(samples[s:s + per]):
            key = f"{r}-{s + k:06d}"
            tar.add(f, arcname=key + ".jpg")
            label = str((s + k) % 1000).encode()
            info = tarfile.TarInfo(key + ".cls"); info.size = len(label)
            tar.addfile(info, io.BytesIO(label))
print(out, len(samples), "samples", (len(samples) + per - 1) // per, "shards", flush=True)

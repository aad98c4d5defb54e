"""pillow_job.py DIR OUT.tar SIZE QUALITY PROCESSES: the job gpuprep shard replaces, as a team
would write it in Python: a process pool, each image Image.open(f).convert("RGB"), resized as
torchvision's Resize(SIZE) with Pillow's BILINEAR and saved as a JPEG of QUALITY, the files
written into one tar in input order (key = the sample's number). Prints a JSON line: images,
seconds, img/s."""
import io, json, os, sys, tarfile, time
from multiprocessing import Pool

from PIL import Image

folder, out, size, quality, processes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])


def job(path):
    im = Image.open(path).convert("RGB")
    w, h = im.size
    target = (size, int(size * h / w)) if w <= h else (int(size * w / h), size)
    buf = io.BytesIO()
    im.resize(target, Image.BILINEAR).save(buf, "JPEG", quality=quality)
    return buf.getvalue()


files = sorted(os.path.join(folder, f) for f in os.listdir(folder))
start = time.perf_counter()
with Pool(processes) as pool, tarfile.open(out, "w") as tar:
    for n, data in enumerate(pool.imap(job, files, chunksize=4)):
        info = tarfile.TarInfo(f"{n:09d}.jpg")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
seconds = time.perf_counter() - start
print(json.dumps({"what": "pillow_pool", "processes": processes, "images": len(files),
                  "seconds": seconds, "img_s": len(files) / seconds}))

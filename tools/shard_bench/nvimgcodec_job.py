"""The offline job done with NVIDIA's GPU libraries, the fastest alternative at hand: nvImageCodec
decodes a batch (its default backends: the hardware JPEG engine where it takes the file, CUDA
otherwise), torch resizes each image on the GPU to the shorter side (bilinear, antialiased, as
torchvision's Resize on tensors), nvImageCodec encodes them (nvJPEG, on the GPU) at the quality
and 4:2:0, and the files go into one tar in input order, as pillow_job.py writes them.

usage: python3 nvimgcodec_job.py DIR OUT.tar SHORTER QUALITY [BATCH] [--compare PILLOW.tar]
Prints one JSON line of the run (and, with --compare, how many of its JPEGs are byte for byte
the Pillow job's)."""
import argparse, glob, io, json, os, tarfile, time

import torch
from nvidia import nvimgcodec


def encode_params(quality):
    """nvImageCodec's JPEG parameters at `quality`, 4:2:0 (the API changed names in 0.6)."""
    css = nvimgcodec.ChromaSubsampling.CSS_420
    try:
        return nvimgcodec.EncodeParams(quality_type=nvimgcodec.QualityType.QUALITY,
                                       quality_value=float(quality), chroma_subsampling=css)
    except (AttributeError, TypeError):
        return nvimgcodec.EncodeParams(quality=float(quality), chroma_subsampling=css)


def as_bytes(code_stream):
    """An encoded file's bytes: nvImageCodec 0.6 and later return CodeStream objects, whose
    bytes some versions give through the buffer protocol and others through NumPy."""
    if isinstance(code_stream, (bytes, bytearray)):
        return bytes(code_stream)
    tried = []
    for how in (lambda c: memoryview(c).tobytes(), lambda c: bytes(c),
                lambda c: __import__("numpy").asarray(c).tobytes(),
                lambda c: bytes(getattr(c, "data"))):
        try:
            data = how(code_stream)
            if data[:2] == b"\xff\xd8":
                return data
            tried.append(f"{len(data)} bytes not starting with SOI")
        except Exception as e:  # noqa: BLE001 - each way is tried in turn
            tried.append(repr(e))
    raise TypeError(f"no bytes from {type(code_stream)} ({tried}); it has "
                    f"{[n for n in dir(code_stream) if not n.startswith('__')]}")


def resized(image, shorter, device):
    """torchvision's Resize(shorter) of one decoded image, on the GPU, as HWC uint8."""
    x = torch.as_tensor(image, device=device)
    h, w = x.shape[:2]
    size = (shorter, int(shorter * w / h)) if h <= w else (int(shorter * h / w), shorter)
    y = torch.nn.functional.interpolate(x.permute(2, 0, 1)[None].float(), size=size,
                                        mode="bilinear", antialias=True, align_corners=False)
    return y[0].round().clamp(0, 255).to(torch.uint8).permute(1, 2, 0).contiguous()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("out")
    p.add_argument("shorter", type=int)
    p.add_argument("quality", type=int)
    p.add_argument("batch", type=int, nargs="?", default=64)
    p.add_argument("--compare")
    a = p.parse_args()
    paths = sorted(glob.glob(os.path.join(a.dir, "*.jpg")))
    device = torch.device("cuda")
    decoder, encoder = nvimgcodec.Decoder(), nvimgcodec.Encoder()
    decode_params = nvimgcodec.DecodeParams(color_spec=nvimgcodec.ColorSpec.SRGB,
                                            apply_exif_orientation=False)
    params = encode_params(a.quality)

    def run(paths, out):
        with tarfile.open(out, "w") as tar:
            for start in range(0, len(paths), a.batch):
                names = paths[start:start + a.batch]
                blobs = [open(f, "rb").read() for f in names]
                images = decoder.decode(blobs, params=decode_params)
                small = [nvimgcodec.as_image(resized(im, a.shorter, device)) for im in images]
                files = encoder.encode(small, "jpeg", params=params)
                for k, data in enumerate(map(as_bytes, files)):
                    info = tarfile.TarInfo(f"{start + k:09d}.jpg")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))

    run(paths[:a.batch], a.out)  # warm-up: libraries loaded, kernels compiled
    torch.cuda.synchronize()
    start = time.perf_counter()
    run(paths, a.out)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    line = {"what": "nvimgcodec_job", "version": getattr(nvimgcodec, "__version__", "?"),
            "images": len(paths), "seconds": seconds, "img_s": len(paths) / seconds,
            "batch": a.batch}
    if a.compare:
        def jpegs(path):
            with tarfile.open(path) as t:
                return {m.name[-13:]: t.extractfile(m).read() for m in t.getmembers()
                        if m.name.endswith(".jpg")}
        ours, pillow = jpegs(a.out), jpegs(a.compare)
        line.update(identical_to_pillow=sum(ours.get(k) == v for k, v in pillow.items()),
                    bytes=sum(map(len, ours.values())))
    print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()

"""dali_resize.py DIR... [--size 224] [--repeat 10]: NVIDIA DALI's evaluation pipeline timed on
each folder in turn, as the measuring kit's peer_dali.py times it (decoders.image on the mixed
backend, EXIF orientation off -> resize SIZE x SIZE, linear, antialiased ->
crop_mirror_normalize to float32 CHW; the folder as one batch, --repeat prefetching iterations
after three warm-up ones), without peer_dali.py's drift against Pillow, so that many folders fit
one call. Prints a JSON line per folder: its name, images, img/s."""
import argparse
import glob
import json
import os
import time

import numpy as np

MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def steady_img_s(folder, size, repeat):
    from nvidia.dali import fn, pipeline_def, types

    paths = sorted(glob.glob(os.path.join(folder, "*.jpg")))
    blobs = [np.fromfile(p, np.uint8) for p in paths]

    @pipeline_def(batch_size=len(blobs), num_threads=os.cpu_count(), device_id=0,
                  prefetch_queue_depth=2, seed=1)
    def pipe():
        jpegs = fn.external_source(source=lambda: blobs, batch=True, dtype=types.UINT8)
        images = fn.decoders.image(jpegs, device="mixed", output_type=types.RGB,
                                   adjust_orientation=False)
        images = fn.resize(images, resize_x=size, resize_y=size, interp_type=types.INTERP_LINEAR,
                           antialias=True)
        return fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                        mean=(MEAN * 255).tolist(), std=(STD * 255).tolist())

    pipeline = pipe()
    pipeline.build()
    for _ in range(3):
        pipeline.run()
    started = time.perf_counter()
    for _ in range(repeat):
        (out,) = pipeline.run()
    out.as_cpu()
    return len(blobs), repeat * len(blobs) / (time.perf_counter() - started)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dirs", nargs="+")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    try:
        import nvidia.dali  # noqa: F401
    except ImportError as e:
        print(json.dumps({"what": "dali_resize", "error": f"DALI is not unpacked here "
                          f"(take its three pieces first: dali-pieces.sh): {e}"}), flush=True)
        return
    for folder in args.dirs:
        images, img_s = steady_img_s(folder, args.size, args.repeat)
        print(json.dumps({"what": "dali_resize", "dir": os.path.basename(folder.rstrip("/")),
                          "images": images, "img_s": img_s}), flush=True)


if __name__ == "__main__":
    main()

"""gpuprep.Loader(device="cuda") on an NVIDIA machine: the batches handed to torch in CUDA memory
without a copy through the host, checked and timed (JSON lines).

usage: python3 tools/cuda_handoff.py DIR [--batch 64] [--epochs 4] [--check 256] [--train-steps 60]
                                        [--dali] [--mode resize|train]

- check: one epoch of the first --check files through Loader(device="cuda") and through the host
  path (device=None), batch for batch: the CUDA tensors must be the host arrays' bits;
- loader: --epochs epochs of DIR, each batch consumed by a kernel on torch's current stream
  (its sum): images per second of each epoch, their median after the first, and the steady rate
  (from the second epoch's start to the last one's end), beside the host path copied up;
- taken: the same, each batch only taken (no kernel), to see what the loop itself costs;
- batches: the same, each batch taken as gpuprep hands it over (`Loader.batches()`), never made
  a torch tensor: no CUDA work at all, to see what torch's side costs;
- profile: torch's profiler over a few steps: device-to-host copies counted (none expected);
- train: a ResNet-50 step (bf16 autocast, channels_last) on each batch: images per second and
  the loader's data-wait share of each step;
- dali (--dali): DALI's PyTorch iterator (DALIGenericIterator) over the same pipeline (readers.file
  -> decoders.image[_random_crop] mixed -> resize -> [color_twist ->] crop_mirror_normalize),
  yielding CUDA tensors, each batch consumed the same way.
--mode resize is Resize((224, 224)) + Normalize; train is RandomResizedCrop(224) + flip +
ColorJitter(0.4, 0.4, 0.4) + Normalize (DALI: image_random_crop, color_twist 0.6-1.4, coin-flip mirror).
"""
import argparse
import glob
import json
import os
import statistics
import time

import numpy as np
import torch

import gpuprep

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def log(**kw):
    print(json.dumps(kw), flush=True)


def transform(mode):
    if mode == "train":
        return gpuprep.Transform.imagenet_train().color_jitter(0.4, 0.4, 0.4, 0.0)
    return gpuprep.Transform().resize((224, 224)).normalize(MEAN, STD)


def check(files, t, batch):
    """The CUDA path's tensors against the host path's arrays, batch for batch."""
    host = gpuprep.Loader(files, t, batch, backend="gpu", pin_memory=False)
    cuda = gpuprep.Loader(files, t, batch, backend="gpu", device="cuda")
    log(what="handed_over", cuda=cuda.handed_over, host=host.handed_over)
    want = [(b["indices"].tolist(), b["images"].copy()) for b in host.batches()]
    got, same = 0, True
    for (images, _), (indices, expected) in zip(cuda, want):
        same &= cuda.last["indices"].tolist() == indices
        same &= bool(np.array_equal(images.cpu().numpy(), expected))
        got += 1
    log(what="check", files=len(files), batches=got, bit_identical=bool(same and got == len(want)),
        cuda_tensors=bool(images.is_cuda))


def epochs(loader, n, consume="sum"):
    """Images per second of each epoch, every batch consumed by a kernel on the current stream
    ("sum"), only taken as torch tensors ("take"), or taken as gpuprep hands them over, not
    touched by torch ("batches": no CUDA work at all). `loader.waits` keeps each epoch's wall
    time and what gpuprep's GPU stream waited for (seconds); `loader.steady` the images per second
    from the second epoch's start to the last one's end (gaps between epochs included: a stream
    that runs on makes the next epoch's first batches while one ends, so single epochs' rates
    alone would count that work twice or not at all)."""
    rates, loader.waits = [], []
    total = torch.zeros((), device="cuda")
    steady_start, steady_images = None, 0
    for epoch in range(n):
        loader.set_epoch(epoch)
        start, images_seen = time.perf_counter(), 0
        if epoch == 1:
            steady_start = start
        for item in loader.batches() if consume == "batches" else loader:
            if consume == "batches":
                images_seen += len(item["indices"])
                continue
            images, labels = item
            if consume == "sum":
                total += images.sum()
            images_seen += images.shape[0]
        torch.cuda.synchronize()
        end = time.perf_counter()
        wall = end - start
        rates.append(images_seen / wall)
        if epoch >= 1:
            steady_images += images_seen
            loader.steady = steady_images / (end - steady_start)
        stats = loader.stats
        waited = stats.get("epoch_stream_waited_s", {})
        loader.waits.append({"wall": round(wall, 4), **{k: round(v, 4) for k, v in waited.items()},
                             "submissions": stats.get("epoch_submissions"),
                             "packing": round(stats.get("epoch_packing_s", 0.0), 4),
                             "landing": round(stats.get("epoch_landing_s", 0.0), 4)})
    return rates


def profile(loader, steps=12):
    """Copies from the device to the host during `steps` steps, as torch's profiler lists them."""
    from torch.profiler import ProfilerActivity, profile as run
    loader.set_epoch(99)
    with run(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for k, (images, labels) in enumerate(loader):
            (images * 2).sum()
            if k + 1 == steps:
                break
        torch.cuda.synchronize()
    names = [e.name for e in prof.events()]
    dtoh = sum(1 for n in names if "DtoH" in n or "Device -> Host" in n)
    htod = sum(1 for n in names if "HtoD" in n or "Host -> Device" in n)
    log(what="profile", steps=steps, memcpy_dtoh=dtoh, memcpy_htod=htod, handed_over=loader.handed_over)


def train(loader, steps):
    """A ResNet-50 training step on each batch; the loader's data-wait share per step."""
    import torchvision
    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    shares, seen, start = [], 0, None
    loader.set_epoch(7)
    step = 0
    while step < steps:
        for images, labels in loader:
            if step == 5:
                torch.cuda.synchronize()
                start, seen = time.perf_counter(), 0
            with torch.autocast("cuda", dtype=torch.bfloat16):
                out = model(images.contiguous(memory_format=torch.channels_last))
                loss = loss_fn(out, labels.clamp(min=0) % 1000)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if step >= 5:
                shares.append(loader.stats["data_wait_share"])
                seen += images.shape[0]
            step += 1
            if step == steps:
                break
    torch.cuda.synchronize()
    log(what="train_resnet50", steps=steps - 5, img_s=seen / (time.perf_counter() - start),
        data_wait_share_median=statistics.median(shares), data_wait_share_max=max(shares),
        handed_over=loader.handed_over)


def dali(files, batch, mode, n_epochs):
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy

    @pipeline_def(batch_size=batch, num_threads=os.cpu_count(), device_id=0, prefetch_queue_depth=2, seed=1)
    def pipe():
        jpegs, labels = fn.readers.file(files=files, random_shuffle=True, name="reader")
        mean, std = [m * 255 for m in MEAN], [s * 255 for s in STD]
        if mode == "train":
            images = fn.decoders.image_random_crop(jpegs, device="mixed", output_type=types.RGB,
                                                   adjust_orientation=False, random_area=[0.08, 1.0],
                                                   random_aspect_ratio=[0.75, 4 / 3], num_attempts=10)
            images = fn.resize(images, resize_x=224, resize_y=224, interp_type=types.INTERP_LINEAR, antialias=True)
            images = fn.color_twist(images, brightness=fn.random.uniform(range=[0.6, 1.4]),
                                    contrast=fn.random.uniform(range=[0.6, 1.4]),
                                    saturation=fn.random.uniform(range=[0.6, 1.4]))
            images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", mean=mean, std=std,
                                              mirror=fn.random.coin_flip(probability=0.5))
        else:
            images = fn.decoders.image(jpegs, device="mixed", output_type=types.RGB, adjust_orientation=False)
            images = fn.resize(images, resize_x=224, resize_y=224, interp_type=types.INTERP_LINEAR, antialias=True)
            images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", mean=mean, std=std)
        return images, labels.gpu()

    p = pipe()
    p.build()
    it = DALIGenericIterator([p], ["images", "labels"], reader_name="reader",
                             last_batch_policy=LastBatchPolicy.PARTIAL, auto_reset=True)
    rates, steady_start, steady_images = [], None, 0
    total = torch.zeros((), device="cuda")
    for epoch in range(n_epochs):
        start, seen = time.perf_counter(), 0
        if epoch == 1:
            steady_start = start
        for data in it:
            images = data[0]["images"]
            total += images.sum()
            seen += images.shape[0]
        torch.cuda.synchronize()
        end = time.perf_counter()
        rates.append(seen / (end - start))
        if epoch >= 1:
            steady_images += seen
            steady = steady_images / (end - steady_start)
    log(what=f"dali_pytorch_iterator_{mode}", batch=batch, epochs_img_s=[round(r) for r in rates],
        median_img_s=statistics.median(rates[1:] or rates), steady_img_s=round(steady),
        cuda_tensors=bool(images.is_cuda))


def main():
    a = argparse.ArgumentParser()
    a.add_argument("dir")
    a.add_argument("--batch", type=int, default=64)
    a.add_argument("--epochs", type=int, default=4)
    a.add_argument("--check", type=int, default=256)
    a.add_argument("--train-steps", type=int, default=60)
    a.add_argument("--mode", default="resize", choices=["resize", "train"])
    a.add_argument("--dali", action="store_true")
    a.add_argument("--skip", default="", help="comma-separated parts to leave out")
    args = a.parse_args()
    skip = set(args.skip.split(","))
    files = sorted(glob.glob(os.path.join(args.dir, "*.jpg")))
    t = transform(args.mode)
    log(what="setup", dir=args.dir, files=len(files), batch=args.batch, mode=args.mode,
        torch=torch.__version__, gpu=torch.cuda.get_device_name(0))
    if "check" not in skip:
        check(files[: args.check], t, args.batch)
    cuda = gpuprep.Loader(files, t, args.batch, backend="gpu", device="cuda")
    if "loader" not in skip:
        rates = epochs(cuda, args.epochs)
        log(what="loader_cuda", epochs_img_s=[round(r) for r in rates],
            median_img_s=statistics.median(rates[1:]), steady_img_s=round(cuda.steady),
            handed_over=cuda.handed_over, stream_waited_s=cuda.waits)
        host = gpuprep.Loader(files, t, args.batch, backend="gpu", pin_memory=True)
        up = _copied_up(host)
        rates = epochs(up, args.epochs)
        log(what="loader_host_copied_up", epochs_img_s=[round(r) for r in rates],
            median_img_s=statistics.median(rates[1:]), steady_img_s=round(up.steady), memory=host.memory,
            stream_waited_s=up.waits)
    if "taken" not in skip:
        rates = epochs(cuda, args.epochs, consume="take")
        log(what="loader_cuda_taken_only", epochs_img_s=[round(r) for r in rates],
            median_img_s=statistics.median(rates[1:]), steady_img_s=round(cuda.steady),
            stream_waited_s=cuda.waits)
    if "batches" not in skip:
        rates = epochs(cuda, args.epochs, consume="batches")
        log(what="loader_cuda_batches_untouched", epochs_img_s=[round(r) for r in rates],
            median_img_s=statistics.median(rates[1:]), steady_img_s=round(cuda.steady),
            stream_waited_s=cuda.waits)
    if "profile" not in skip:
        profile(cuda)
    if "train" not in skip:
        train(cuda, args.train_steps)
    if args.dali:
        dali(files, args.batch, args.mode, args.epochs)


class _copied_up:
    """The host path as a PyTorch user has it: each pinned batch copied to the GPU."""

    def __init__(self, loader):
        self.loader = loader
        self.waits = []

    def set_epoch(self, epoch):
        self.loader.set_epoch(epoch)

    @property
    def stats(self):
        return self.loader.stats

    def __iter__(self):
        for images, labels in self.loader:
            yield images.to("cuda", non_blocking=True), labels.to("cuda", non_blocking=True)


if __name__ == "__main__":
    main()

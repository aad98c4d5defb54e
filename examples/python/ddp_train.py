"""Data-parallel training input, one loader per GPU process: gpuprep's Loader against torch's
DataLoader over torchvision's PIL transforms, each rank printing its images per second and the
share of each step it waited for data (JSON lines).

    torchrun --nproc_per_node N examples/python/ddp_train.py DATA [--loader gpuprep|torch]
             [--model resnet50|none] [--batch 64] [--epochs 3] [--steps S]

DATA: an ImageFolder tree or a folder of images (labels 0 then). Each rank takes its share of
every epoch as DistributedSampler does (rank, world_size, set_epoch): gpuprep.Loader(...,
rank, world_size, device="cuda:LOCAL_RANK") makes its batches on that rank's GPU and hands them
over in CUDA memory (its decoding threads: the rank's share of the cores); the baseline is
DataLoader(DistributedSampler, num_workers = cores / ranks, pin_memory=True,
persistent_workers=True) over RandomResizedCrop(224) + RandomHorizontalFlip + ToTensor +
Normalize, copied to the GPU. --model none only consumes each batch (a sum on the GPU): the
loader's throughput; resnet50 trains (bf16 autocast, channels_last, DDP). Ranks that share a GPU
(more ranks than GPUs) talk over gloo, others over NCCL.
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
IMAGES = (".jpg", ".jpeg", ".png")


def files_of(root):
    """(path, label) of every image: ImageFolder's classes, else one class."""
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    if not classes:
        names = sorted(f for f in os.listdir(root) if f.lower().endswith(IMAGES))
        return [(os.path.join(root, f), 0) for f in names]
    return [(os.path.join(root, c, f), k) for k, c in enumerate(classes)
            for f in sorted(os.listdir(os.path.join(root, c))) if f.lower().endswith(IMAGES)]


def gpuprep_batches(args, rank, world, local_rank):
    import gpuprep
    t = gpuprep.Transform.imagenet_train()
    # An ImageFolder tree as it is; a flat folder as its list of files (labels -1).
    flat = not any(os.path.isdir(os.path.join(args.data, d)) for d in os.listdir(args.data))
    source = [path for path, _ in files_of(args.data)] if flat else args.data
    loader = gpuprep.Loader(source, t, args.batch, shuffle=True, seed=args.seed, rank=rank,
                            world_size=world, drop_last=True, backend="gpu",
                            device=f"cuda:{local_rank}")
    about = {"handed_over": loader.handed_over, "threads": loader.threads}

    def epoch(e):
        loader.set_epoch(e)
        for images, labels in loader:
            yield images, labels
    return epoch, len(loader), about


def torch_batches(args, rank, world, local_rank):
    from PIL import Image
    from torchvision import transforms
    items = files_of(args.data)
    t = transforms.Compose([transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(),
                            transforms.ToTensor(), transforms.Normalize(MEAN, STD)])

    class Files(torch.utils.data.Dataset):
        def __len__(self):
            return len(items)

        def __getitem__(self, i):
            path, label = items[i]
            with Image.open(path) as im:
                return t(im.convert("RGB")), label

    workers = max(1, (os.cpu_count() or 1) // int(os.environ.get("LOCAL_WORLD_SIZE", world)))
    sampler = torch.utils.data.distributed.DistributedSampler(
        Files(), num_replicas=world, rank=rank, shuffle=True, seed=args.seed, drop_last=True)
    loader = torch.utils.data.DataLoader(Files(), batch_size=args.batch, sampler=sampler,
                                         num_workers=workers, pin_memory=True, drop_last=True,
                                         persistent_workers=True, prefetch_factor=4)
    device = torch.device("cuda", local_rank)

    def epoch(e):
        sampler.set_epoch(e)
        for images, labels in loader:
            yield images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
    return epoch, len(loader), {"num_workers": workers}


def model_step(args, local_rank, world):
    """What each step does with a batch: a ResNet-50 training step under DDP, or a sum."""
    if args.model == "none":
        total = torch.zeros((), device=f"cuda:{local_rank}")

        def consume(images, labels):
            total.add_(images.sum())
        return consume
    import torchvision
    model = torchvision.models.resnet50().cuda(local_rank).to(memory_format=torch.channels_last)
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    def train(images, labels):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(images.contiguous(memory_format=torch.channels_last))
            loss = loss_fn(out, labels.clamp(min=0) % 1000)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return train


def main():
    a = argparse.ArgumentParser()
    a.add_argument("data")
    a.add_argument("--loader", default="gpuprep", choices=["gpuprep", "torch"])
    a.add_argument("--model", default="none", choices=["none", "resnet50"])
    a.add_argument("--batch", type=int, default=64)
    a.add_argument("--epochs", type=int, default=3)
    a.add_argument("--steps", type=int, default=0, help="steps an epoch at most (0: all)")
    a.add_argument("--seed", type=int, default=0)
    args = a.parse_args()
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    # Ranks past the GPUs there are share them, round robin.
    local_rank = int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count()
    torch.cuda.set_device(local_rank)
    shared_gpu = world > torch.cuda.device_count()
    if world > 1:
        dist.init_process_group("gloo" if shared_gpu else "nccl")
    make = gpuprep_batches if args.loader == "gpuprep" else torch_batches
    epoch, steps_per_epoch, about = make(args, rank, world, local_rank)
    step_fn = model_step(args, local_rank, world)
    for e in range(args.epochs):
        waits, steps, images_seen = [], 0, 0
        torch.cuda.synchronize()
        start = last = time.perf_counter()
        batches = epoch(e)
        while True:
            asked = time.perf_counter()
            batch = next(batches, None)
            if batch is None:
                break
            got = time.perf_counter()
            images, labels = batch
            step_fn(images, labels)
            images_seen += images.shape[0]
            steps += 1
            # The first step always waits (the epoch's pipeline fills): not counted.
            if steps > 1:
                waits.append((got - asked) / max(got - last, 1e-9))
            last = got
            if args.steps and steps == args.steps:
                break
        torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        print(json.dumps({
            "what": "epoch", "loader": args.loader, "model": args.model, "rank": rank,
            "world_size": world, "gpu": local_rank, "shared_gpu": shared_gpu, "epoch": e,
            "steps": steps, "images": images_seen, "img_s": round(images_seen / seconds, 1),
            "data_wait_share_median": round(statistics.median(waits), 4) if waits else None,
            "data_wait_share_max": round(max(waits), 4) if waits else None,
            "steps_per_epoch": steps_per_epoch, **about}), flush=True)
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()

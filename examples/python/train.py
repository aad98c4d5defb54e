#!/usr/bin/env python3
"""A short PyTorch training loop over an ImageFolder tree with the imagenet-train preset plus
ColorJitter(0.4, 0.4, 0.4), fed by gpuprep's Loader and then by torch's own DataLoader with
torchvision's PIL transforms (the recipe gpuprep computes exactly), printing img/s and the share
of each step the loop waited for data, per step and overall.

With --loader-only there is no model: each loader's batches are taken as fast as it gives them
(torch tensors in pinned memory, as a training loop gets them), which is the loader's own
throughput. --recipe timm takes timm's training recipe instead (create_transform(224,
is_training=True, auto_augment='rand-m9-mstd0.5-inc1', re_prob=0.25, re_mode=RE_MODE): its
RandAugment and RandomErasing, by default in 'pixel' mode, timm's train.py default), on both sides
(gpuprep's is from_torchvision of it).

usage: train.py FOLDER [--batch-size 128] [--steps 20] [--workers 16] [--backend auto]
                [--loader-only] [--warmup 1] [--no-jitter] [--prefetch 2] [--recipe torchvision|timm]
                [--re-mode pixel|rand|const]
"""
import argparse
import time

import torch
import torchvision
import torchvision.transforms as T

import gpuprep


def run(name, batches, model, optimiser, steps, device):
    """Trains `steps` steps on `batches`; returns (img/s, data-wait share) after the first."""
    loss_fn = torch.nn.CrossEntropyLoss()
    images_seen, waited, started = 0, 0.0, None
    it = iter(batches)
    for step in range(steps + 1):
        asked = time.perf_counter()
        try:
            images, labels = next(it)
        except StopIteration:
            it = iter(batches)
            images, labels = next(it)
        images = images.to(device, non_blocking=True)
        labels = labels.clamp(min=0).to(device, non_blocking=True)
        got = time.perf_counter()
        loss = loss_fn(model(images), labels)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        done = time.perf_counter()
        if step == 0:  # warm-up: workers starting, kernels compiling
            started = done
            continue
        images_seen += len(labels)
        waited += got - asked
        print(f"{name} step {step}: {len(labels) / (done - asked):8.0f} img/s, "
              f"data wait {(got - asked) / (done - asked):5.1%}, loss {loss.item():.3f}")
    total = time.perf_counter() - started
    return images_seen / total, waited / total


def drain(name, loader, steps, warmup, set_epoch=None):
    """Takes `steps` batches of `loader` after `warmup` ones, doing nothing with them, epoch
    after epoch; returns img/s over the `steps`."""
    images_seen, epoch, taken, started = 0, 0, 0, None
    while True:
        if set_epoch:
            set_epoch(epoch)
        for images, labels in loader:
            taken += 1
            if taken <= max(warmup, 1):  # workers starting, shaders compiling, memory being pinned
                started = time.perf_counter()
                continue
            images_seen += len(labels)
            if images_seen >= steps * len(labels):
                rate = images_seen / (time.perf_counter() - started)
                print(f"{name}: {rate:.0f} img/s over {images_seen} images "
                      f"({type(images).__module__}.{type(images).__name__}, "
                      f"pinned {getattr(images, 'is_pinned', lambda: False)()})")
                return rate
        epoch += 1


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--backend", default="auto")
    p.add_argument("--prefetch", type=int, default=2, help="gpuprep batches prepared ahead")
    p.add_argument("--loader-only", action="store_true", help="no model: the loaders alone")
    p.add_argument("--warmup", type=int, default=1,
                   help="--loader-only: batches taken before timing starts (an epoch's worth "
                        "gives the steady state: workers started, gpuprep's arrays pinned)")
    p.add_argument("--no-jitter", action="store_true",
                   help="the imagenet-train preset alone (no ColorJitter(0.4, 0.4, 0.4))")
    p.add_argument("--recipe", default="torchvision", choices=["torchvision", "timm"],
                   help="timm: timm's create_transform with rand-m9-mstd0.5-inc1 and re_prob 0.25")
    p.add_argument("--re-mode", default="pixel", choices=["pixel", "rand", "const"],
                   help="the timm recipe's RandomErasing mode (timm's train.py: pixel)")
    a = p.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    classes = len(torchvision.datasets.ImageFolder(a.folder).classes)

    def model_and_optimiser():
        torch.manual_seed(0)
        model = torchvision.models.resnet18(num_classes=classes).to(device)
        return model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    transform = gpuprep.Transform.imagenet_train()
    jitter = [] if a.no_jitter else [T.ColorJitter(0.4, 0.4, 0.4)]
    if not a.no_jitter:
        transform = transform.color_jitter(0.4, 0.4, 0.4)
    recipe = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), *jitter,
                        T.ToTensor(), T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
    if a.recipe == "timm":
        from timm.data import create_transform
        recipe = create_transform(224, is_training=True, auto_augment="rand-m9-mstd0.5-inc1",
                                  re_prob=0.25, re_mode=a.re_mode)
        transform = gpuprep.from_torchvision(recipe)
    ours = gpuprep.Loader(a.folder, transform, batch_size=a.batch_size, shuffle=True, seed=0,
                          drop_last=True, backend=a.backend, prefetch=a.prefetch)
    dataset = torchvision.datasets.ImageFolder(a.folder, transform=recipe)
    theirs = torch.utils.data.DataLoader(dataset, batch_size=a.batch_size, shuffle=True,
                                         num_workers=a.workers, pin_memory=device.type == "cuda",
                                         drop_last=True, persistent_workers=True)
    name = f"DataLoader({a.workers} workers)"
    if a.loader_only:
        ours_rate = drain("gpuprep", ours, a.steps, a.warmup, ours.set_epoch)
        theirs_rate = drain(name, theirs, a.steps, a.warmup)
        print(f"loader only: gpuprep {ours_rate:.0f} img/s, {name} {theirs_rate:.0f} img/s: "
              f"{ours_rate / theirs_rate:.1f}x")
        return
    results = {"gpuprep": run("gpuprep", ours, *model_and_optimiser(), a.steps, device)}
    results[name] = run(name, theirs, *model_and_optimiser(), a.steps, device)
    for name, (rate, wait) in results.items():
        print(f"{name}: {rate:.0f} img/s, the loop waited {wait:.1%} of the time for data")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A short PyTorch training loop over an ImageFolder tree with the imagenet-train preset plus
ColorJitter(0.4, 0.4, 0.4), fed by gpuprep's Loader and then by torch's own DataLoader with
torchvision's PIL transforms (the recipe gpuprep computes exactly), printing img/s and the share
of each step the loop waited for data, per step and overall.

usage: train.py FOLDER [--batch-size 128] [--steps 20] [--workers 16] [--backend auto]
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


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--backend", default="auto")
    a = p.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    classes = len(torchvision.datasets.ImageFolder(a.folder).classes)

    def model_and_optimiser():
        torch.manual_seed(0)
        model = torchvision.models.resnet18(num_classes=classes).to(device)
        return model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    transform = gpuprep.Transform.imagenet_train().color_jitter(0.4, 0.4, 0.4)
    ours = gpuprep.Loader(a.folder, transform, batch_size=a.batch_size, shuffle=True, seed=0,
                          drop_last=True, backend=a.backend)
    results = {"gpuprep": run("gpuprep", ours, *model_and_optimiser(), a.steps, device)}

    recipe = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                        T.ColorJitter(0.4, 0.4, 0.4), T.ToTensor(),
                        T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
    dataset = torchvision.datasets.ImageFolder(a.folder, transform=recipe)
    theirs = torch.utils.data.DataLoader(dataset, batch_size=a.batch_size, shuffle=True,
                                         num_workers=a.workers, pin_memory=True, drop_last=True,
                                         persistent_workers=True)
    name = f"DataLoader({a.workers} workers)"
    results[name] = run(name, theirs, *model_and_optimiser(), a.steps, device)
    for name, (rate, wait) in results.items():
        print(f"{name}: {rate:.0f} img/s, the loop waited {wait:.1%} of the time for data")


if __name__ == "__main__":
    main()

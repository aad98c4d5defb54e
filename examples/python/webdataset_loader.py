#!/usr/bin/env python3
"""Reads WebDataset shards (tar files of key.jpg + key.cls members, as webdataset's TarWriter
writes them) through gpuprep's training loader: shards shuffled per epoch and split between
ranks, a shuffle buffer, each sample with its own random crop, flip and colour jitter, exactly
as torchvision's PIL transforms would compute them. Prints each batch's shape, labels and
data-wait share.

usage: webdataset_loader.py "SHARDS*.tar" [--batch-size N] [--epochs E] [--backend auto|gpu|cpu]
example: examples/python/webdataset_loader.py "tests/data/webdataset/shard-*.tar" --batch-size 3
"""
import argparse

import gpuprep


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("shards")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--backend", default="auto")
    a = p.parse_args()
    transform = (gpuprep.Transform.imagenet_train().color_jitter(0.4, 0.4, 0.4)
                 .random_resized_crop(96))
    loader = gpuprep.Loader(a.shards, transform, batch_size=a.batch_size, shuffle=True, seed=0,
                            backend=a.backend, shuffle_buffer=100)
    for epoch in range(a.epochs):
        loader.set_epoch(epoch)
        for step, batch in enumerate(loader.batches()):
            stats = batch["stats"]
            failed = [f"{kind}" for _, kind, _ in batch["failed"]]
            print(f"epoch {epoch} step {step}: images {tuple(batch['images'].shape)}, "
                  f"labels {batch['labels'].tolist()}, failed {failed}, "
                  f"data wait {stats['data_wait_share']:.0%}")


if __name__ == "__main__":
    main()

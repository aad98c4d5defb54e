"""Training from shards in an object store or on a web server, under torchrun, surviving a stop:
each rank streams its share of the shards (split by rank, the same number of batches on every
rank), and a checkpoint keeps the model, the optimiser and the loader's state, so that a run
stopped mid-epoch resumes with exactly the batches it would have seen.

    torchrun --nproc_per_node N examples/python/remote_train.py \\
        "s3://bucket/train-{000000..000127}.tar" --checkpoint run.pt [--epochs 3] \\
        [--batch 64] [--every 100] [--stop-after S]

SOURCE: shards as webdataset names them (s3://, gs://, http(s)://, pipe:, local paths; brace
patterns, lists joined by ::), with .cls labels. S3 credentials and endpoints come from the
standard environment (AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL, ...), GCS's from
GOOGLE_APPLICATION_CREDENTIALS. --stop-after S stops after S steps (as a pre-empted job would),
leaving the last checkpoint; running the same command again resumes from it. Each rank prints
its steps as JSON lines (epoch, step, loss, the labels' sum), so that an interrupted and resumed
run can be compared with an uninterrupted one line for line.
"""
import argparse
import json
import os

import torch
import torch.distributed as dist

import gpuprep


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("source")
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--every", type=int, default=100, help="steps between checkpoints")
    parser.add_argument("--stop-after", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)

    transform = gpuprep.Transform().random_resized_crop(args.size).horizontal_flip(0.5) \
        .to_tensor().normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    loader = gpuprep.Loader(args.source, transform, args.batch, shuffle=True, seed=args.seed,
                            rank=rank, world_size=world, drop_last=True,
                            device=device if cuda else None)
    torch.manual_seed(args.seed)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, stride=2), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(16, args.classes)).to(device)
    model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    # Resume: the model, the optimiser, and where this rank's loader stood.
    first_epoch, step = 0, 0
    path = f"{args.checkpoint}.rank{rank}"
    if os.path.exists(path):
        saved = torch.load(path, map_location=device, weights_only=False)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        loader.load_state_dict(saved["loader"])
        first_epoch, step = saved["epoch"], saved["step"]

    def checkpoint(epoch):
        state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                 "loader": loader.state_dict(), "epoch": epoch, "step": step}
        torch.save(state, path + ".part")
        os.replace(path + ".part", path)  # whole or not at all

    for epoch in range(first_epoch, args.epochs):
        loader.set_epoch(epoch)  # the saved epoch keeps its resumption
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            loss = torch.nn.functional.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            print(json.dumps({"rank": rank, "epoch": epoch, "step": step,
                              "loss": round(loss.item(), 6),
                              "labels": int(labels.sum().item())}), flush=True)
            if step % args.every == 0:
                checkpoint(epoch)
            if args.stop_after is not None and step >= args.stop_after:
                dist.destroy_process_group()
                return
        checkpoint(epoch + 1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

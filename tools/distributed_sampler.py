#!/usr/bin/env python3
"""Records torch's DistributedSampler index lists (shuffle=False) for several dataset sizes,
world sizes and drop_last, into the JSON file named: the goldens src/loader/order.rs's split is
held to (tests/loader.rs). Needs torch; run once where it is installed.

usage: distributed_sampler.py OUT.json
"""
import json
import sys

import torch
from torch.utils.data.distributed import DistributedSampler

cases = []
for n in (1, 2, 5, 10, 17, 64, 100, 101):
    for world in (1, 2, 3, 4, 8, 16):
        for drop_last in (False, True):
            lists = [list(DistributedSampler(range(n), num_replicas=world, rank=r, shuffle=False,
                                             drop_last=drop_last)) for r in range(world)]
            cases.append({"n": n, "world_size": world, "drop_last": drop_last, "ranks": lists})
with open(sys.argv[1], "w") as f:
    json.dump({"torch": torch.__version__, "cases": cases}, f, separators=(",", ":"))
    f.write("\n")
print(f"{len(cases)} cases from torch {torch.__version__}")

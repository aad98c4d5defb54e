#!/usr/bin/env python3
"""torchvision's GaussianBlur kernels and blurs, from real torch, into tests/goldens/
gaussian_kernels.tsv and gaussian_blur.tsv.

Each row: the kernel size, sigma (a float32 value, as GaussianBlur draws it, in hex bits) and the
1D kernel `_get_gaussian_kernel1d` gives (float32 hex bits). src/plan/blur.rs computes these in
torch's float32 arithmetic and is held to them exactly. The file also records that the 2D kernel
(`torch.mm` of the two) is each product rounded once, so that only the 1D kernels are kept.

transforms.v2's GaussianBlur computes its kernels otherwise (a softmax of -(x / sigma)^2 over
linspace(-lim, lim), lim = (size - 1) / (2 sqrt 2)) and blurs as v1 does; `--v2` writes its
kernels and blurs into gaussian_kernels_v2.tsv and gaussian_blur_v2.tsv. The kernels torch makes
with AVX2 alone (whose softmax sums over 8 lanes, not 16), gaussian_kernels_v2_avx2.tsv, are
`ATEN_CPU_CAPABILITY=avx2 python3 tools/gaussian_kernels.py --v2 --out DIR` on an AVX-512
machine, DIR/gaussian_kernels_v2.tsv renamed.

Needs torch and torchvision (the versions are written into the file's first line):
    python3 tools/gaussian_kernels.py [--v2] [--out DIR]
"""
import argparse
import pathlib

import numpy as np
import torch
import torchvision
import torchvision.transforms._functional_tensor as FT

GOLDENS = pathlib.Path(__file__).resolve().parent.parent / "tests" / "goldens"
OUT = GOLDENS / "gaussian_kernels.tsv"
BLURS = GOLDENS / "gaussian_blur.tsv"


def pattern(name, w, h):
    """A test image (H x W x 3 uint8) both this tool and src/reference/blur.rs make: a ramp, or
    hashed noise (every value, sharp edges)."""
    y, x, c = np.meshgrid(np.arange(h, dtype=np.uint64), np.arange(w, dtype=np.uint64),
                          np.arange(3, dtype=np.uint64), indexing="ij")
    if name == "ramp":
        v = (x * 7 + y * 13 + c * 50) % 256
    else:
        v = ((x * 73856093) ^ (y * 19349663) ^ (c * 83492791)) & 0xFFFFFFFF
        v = (v ^ (v >> 13)) % 256
    return v.astype(np.uint8)


def blurs(rng, v2=False):
    """torch's GaussianBlur of the patterns (v1's, or v2's): its kernels and the sha256 of its
    output."""
    import hashlib
    import torchvision.transforms.functional as F
    kernel1d = v2_kernel1d if v2 else FT._get_gaussian_kernel1d
    if v2:
        from torchvision.transforms.v2 import functional as F
    rows = []
    for name, w, h in (("ramp", 40, 24), ("noise", 37, 29), ("noise", 12, 16)):
        image = torch.from_numpy(pattern(name, w, h)).permute(2, 0, 1).contiguous()
        for kx, ky in ((1, 1), (3, 3), (5, 3), (7, 7), (9, 11), (23, 23), (31, 15)):
            if kx // 2 >= w or ky // 2 >= h:
                continue
            for s in rng.uniform(0.1, 4.0, 3):
                s = float(np.float32(s))
                out = F.gaussian_blur(image, [kx, ky], [s, s]).permute(1, 2, 0).contiguous().numpy()
                x = kernel1d(kx, s, torch.float32, "cpu").numpy()
                y = kernel1d(ky, s, torch.float32, "cpu").numpy()
                digest = hashlib.sha256(out.tobytes()).hexdigest()
                rows.append(f"{name}\t{w}\t{h}\t{bits(x)}\t{bits(y)}\t{digest}")
    return rows


def bits(values):
    return ",".join(f"{v:08x}" for v in np.asarray(values, np.float32).view(np.uint32))


def sigmas(rng):
    # torchvision's default range, wide draws, and the ends: tiny sigmas (kernels of one 1 and
    # zeros), large ones (nearly flat), and values whose exp arguments reach the subnormals.
    edges = [1e-3, 0.05, 0.1, 0.2, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 7.5, 50.0, 1e4]
    drawn = list(rng.uniform(0.1, 2.0, 24)) + list(rng.uniform(0.01, 10.0, 24))
    return [float(np.float32(s)) for s in edges + drawn]


def v2_kernel1d(size, sigma, dtype, device):
    from torchvision.transforms.v2.functional._misc import _get_gaussian_kernel1d
    return _get_gaussian_kernel1d(size, sigma, dtype, torch.device(device))


def main_v2(out):
    """v2's kernels and blurs into OUT."""
    from torchvision.transforms.v2.functional._misc import _get_gaussian_kernel2d
    rng = np.random.default_rng(20261208)
    rows = []
    for k in range(1, 32, 2):
        for s in sigmas(rng):
            rows.append(f"{k}\t{bits([s])}\t{bits(v2_kernel1d(k, s, torch.float32, 'cpu'))}")
        for s in rng.uniform(0.1, 4.0, 4):
            s = float(np.float32(s))
            for kx in (3, 9, 23):
                k2 = _get_gaussian_kernel2d([kx, k], [s, s * 1.5], torch.float32,
                                            torch.device("cpu")).numpy()
                x = v2_kernel1d(kx, s, torch.float32, "cpu").numpy()
                y = v2_kernel1d(k, s * 1.5, torch.float32, "cpu").numpy()
                assert (k2.view(np.uint32) == np.outer(y, x).astype(np.float32).view(np.uint32)).all()
    head = (f"# torch {torch.__version__}, torchvision {torchvision.__version__}, CPU capability "
            f"{torch.backends.cpu.get_cpu_capability()}")
    (out / "gaussian_kernels_v2.tsv").write_text(
        head + ", transforms.v2: kernel_size, sigma, kernel (float32 bits)\n" + "\n".join(rows) + "\n")
    blurred = blurs(rng, v2=True)
    (out / "gaussian_blur_v2.tsv").write_text(
        head + ", transforms.v2: pattern, width, height, kernel x, kernel y (float32 bits), sha256 "
        "of the blurred HWC bytes\n" + "\n".join(blurred) + "\n")
    print(f"{len(rows)} kernels and {len(blurred)} blurs of transforms.v2 into {out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--v2", action="store_true", help="transforms.v2's kernels and blurs")
    parser.add_argument("--out", type=pathlib.Path, default=GOLDENS)
    args = parser.parse_args()
    if args.v2:
        return main_v2(args.out)
    rng = np.random.default_rng(20261205)
    rows = []
    for k in range(1, 32, 2):
        for s in sigmas(rng):
            kernel = FT._get_gaussian_kernel1d(k, s, torch.float32, "cpu").numpy()
            rows.append(f"{k}\t{bits([s])}\t{bits(kernel)}")
        # The 2D kernel is the outer product of the 1D ones, each product rounded once.
        for s in rng.uniform(0.1, 4.0, 4):
            s = float(np.float32(s))
            for kx in (3, 9, 23):
                k2 = FT._get_gaussian_kernel2d([kx, k], [s, s * 1.5], torch.float32, "cpu").numpy()
                x = FT._get_gaussian_kernel1d(kx, s, torch.float32, "cpu").numpy()
                y = FT._get_gaussian_kernel1d(k, s * 1.5, torch.float32, "cpu").numpy()
                assert (k2.view(np.uint32) == np.outer(y, x).astype(np.float32).view(np.uint32)).all()
    head = (f"# torch {torch.__version__}, torchvision {torchvision.__version__}, CPU capability "
            f"{torch.backends.cpu.get_cpu_capability()}: kernel_size, sigma, kernel (float32 bits)")
    (args.out / OUT.name).write_text(head + "\n" + "\n".join(rows) + "\n")
    print(f"{len(rows)} kernels into {args.out / OUT.name}")
    blurred = blurs(rng)
    (args.out / BLURS.name).write_text(head.split(":")[0] + ": pattern, width, height, kernel x, kernel y (float32 "
                     "bits), sha256 of the blurred HWC bytes\n" + "\n".join(blurred) + "\n")
    print(f"{len(blurred)} blurs into {args.out / BLURS.name}")


if __name__ == "__main__":
    main()

"""A roofline of gpuprep's GPU stages: for each stage, the bytes it reads and writes in device
memory for a folder of JPEGs (derived from each file's headers as the stages size their buffers,
src/gpu/work.rs and packing.rs), over its GPU time from `gpuprep bench DIR --time-stages` (the
"gpu_phases" line), against the device's device-to-device copy rate. Models the transform of
bench.sh: `--resize WxH --normalize imagenet` (an exact resize, no draft, no EXIF transposition,
no colour adjustments). Bytes are unique bytes (what reaches DRAM when the caches hold what
neighbouring invocations share), spans records counted in the 32-byte sectors they touch.

usage: python3 tools/large_photos/roofline.py DIR BENCH.jsonl [--copy-gbps X] [--size 224x224]
           [--filter bilinear] [--dtype f32] [--measure-copy]
       python3 tools/large_photos/roofline.py --measure-copy   (the copy rate alone, needs torch)
"""
import argparse
import json
import math
import os
import statistics
import sys

JPEG_EXTENSIONS = (".jpg", ".jpeg", ".jpe", ".jfif", ".jif")  # src/formats.rs, what bench reads
SUBSEQUENCE_BITS = 1024  # src/jpeg/parallel.rs: one Huffman thread's share of the data
TABLE_BYTES = (512 + 18 + 18 + 256) * 4  # src/jpeg/segment.rs TABLE_WORDS: one Huffman table
SECTOR = 32  # bytes of a DRAM sector: the spans' 64-byte records are read a sector at a time
SUPPORT = {"box": 0.5, "bilinear": 1.0, "hamming": 1.0, "bicubic": 2.0, "lanczos": 3.0}
# Job records the shaders read, bytes (src/gpu/jobs.rs): negligible, counted for completeness.
IDCT_JOB, COLOR_JOB, HORIZONTAL_JOB, TENSOR_JOB = 320, 160, 36, 240
# The stages in the order record.rs marks them ("stage_NAME_ms" in the gpu_phases line).
STAGES = ["upload", "huffman_clear", "huffman_sync_first", "huffman_sync", "huffman_prefix_local",
          "huffman_prefix_groups", "huffman_write", "entropy", "idct", "color", "horizontal",
          "adjust", "tensor"]


def scan_intervals(data, i):
    """The un-stuffed bytes of each restart interval of the scan whose data starts at `i`, and
    where the scan ends (the marker after it), as EntropySegment::unstuff splits them."""
    intervals, start, stuffed = [], i, 0
    while True:
        i = data.find(b"\xff", i)
        if i < 0 or i + 1 >= len(data):
            intervals.append(len(data) - start - stuffed)
            return intervals, len(data)
        code = data[i + 1]
        if code == 0x00:
            stuffed, i = stuffed + 1, i + 2
        elif 0xD0 <= code <= 0xD7:
            intervals.append(i - start - stuffed)
            start, stuffed, i = i + 2, 0, i + 2
        elif code == 0xFF:  # a fill byte before a marker
            i += 1
        else:
            intervals.append(i - start - stuffed)
            return intervals, i


def read_jpeg(path):
    """What the stages' sizes depend on: the frame's size and sampling factors, whether stage 0
    decodes it (a single-scan sequential image, src/jpeg/mod.rs), its first scan's intervals,
    and its entropy-coded bytes over all scans (as make_set.py counts them)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] != b"\xff\xd8":
        raise ValueError("not a JPEG")
    info = {"scans": 0, "entropy_bytes": 0}
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            raise ValueError(f"no marker at {i}")
        marker = data[i + 1]
        if marker == 0xFF or marker == 0x01 or 0xD0 <= marker <= 0xD8:
            i += 1 if marker == 0xFF else 2
            continue
        if marker == 0xD9:
            break
        length = int.from_bytes(data[i + 2:i + 4], "big")
        body = data[i + 4:i + 2 + length]
        i += 2 + length
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            info["sof"] = marker
            info["height"], info["width"] = (int.from_bytes(body[k:k + 2], "big") for k in (1, 3))
            factors = body[7:6 + 3 * body[5]:3]  # each component's h << 4 | v
            info["sampling"] = [(f >> 4, f & 15) for f in factors]
        elif marker == 0xDA:
            intervals, end = scan_intervals(data, i)
            if info["scans"] == 0:
                info["intervals"], info["scan_components"] = intervals, body[0]
            info["scans"] += 1
            info["entropy_bytes"] += end - i
            i = end
    comps = info["sampling"]
    # Sequential, its one scan holding every component (mod.rs:364-367), an MCU of at most ten
    # blocks (mod.rs:584).
    info["gpu_huffman"] = (info["sof"] in (0xC0, 0xC1) and info["scan_components"] == len(comps)
                           and (len(comps) == 1 or sum(h * v for h, v in comps) <= 10))
    return info


def taps(filter, in_size, out_size):
    """Each output sample's (first source sample, count) and the weights' stride, as
    Taps::new (src/plan/resize.rs) computes them from Pillow's precompute_coeffs."""
    scale = in_size / out_size
    if filter == "nearest":
        bounds, position = [], scale / 2
        for _ in range(out_size):
            bounds.append((min(int(position), in_size - 1), 1))
            position += scale
        return bounds, 1
    support = SUPPORT[filter] * max(scale, 1.0)
    window = math.ceil(support) * 2 + 1
    bounds = []
    for i in range(out_size):
        center = (i + 0.5) * scale
        start = max(int(center - support + 0.5), 0)
        end = min(int(center + support + 0.5), in_size)
        bounds.append((start, min(max(end - start, 0), window)))
    return bounds, window


def stage_bytes(jpeg, out_w, out_h, element_bytes, filter):
    """{stage: (bytes read, bytes written)} in device memory for one image; evidence in the
    comments (file:line as of this script's writing)."""
    W, H, comps = jpeg["width"], jpeg["height"], jpeg["sampling"]
    max_h, max_v = max(h for h, _ in comps), max(v for _, v in comps)
    mcus_x, mcus_y = -(-W // (8 * max_h)), -(-H // (8 * max_v))
    # Samples per plane (coefficients.rs:105-114) and blocks that hold them: the IDCT's blocks.
    planes = [(-(-W * h // max_h), -(-H * v // max_v)) for h, v in comps]
    idct_blocks = sum(-(-w // 8) * -(-h // 8) for w, h in planes)
    # Coded blocks, MCU-padded (mod.rs:587-592): stage 0 clears and writes 128 bytes each
    # (dense int16 x 64, packing.rs:447-449), though the IDCT reads only `idct_blocks` of them.
    coded = idct_blocks if len(comps) == 1 else sum(mcus_x * h * mcus_y * v for h, v in comps)
    s = {}
    job_words = 0
    if jpeg["gpu_huffman"]:
        intervals = jpeg["intervals"]
        # Un-stuffed data, each interval from a word, all to an even word (segment.rs:155-163).
        data = 8 * -(-sum(4 * -(-n // 4) for n in intervals) // 8)
        tables = 2 * jpeg["scan_components"] * TABLE_BYTES  # DC + AC per scan component
        # Subsequences: a thread each (parallel.rs:210), 64 to a workgroup.
        per_interval = [max(1, -(-8 * n // SUBSEQUENCE_BITS)) for n in intervals]
        subs = sum(per_interval)
        groups = sum(-(-k // 64) for k in per_interval if k > 64)
        # clear_buffer of the decoded arena (entropy.rs:317-318); the flags are a word an image.
        s["huffman_clear"] = (0, 128 * coded)
        # Each thread decodes its 128 bytes (and the code that runs past them) with the tables,
        # writing words 0-8 of its 64-byte record: both sectors (entropy.wgsl:351-362).
        s["huffman_sync_first"] = (data + tables, 2 * SECTOR * subs)
        # A dispatch reads words 0-3 of each record and its predecessor's exit (entropy.wgsl:
        # 322-331) and re-decodes where the entry changed: the first of each workgroup of 64,
        # as the guess it started from is wrong. Images settle by the second dispatch; those
        # after it read one flag word and stop (entropy.wgsl:302), so two are counted.
        redecoded = 2 * -(-subs // 64)
        s["huffman_sync"] = (2 * SECTOR * subs + redecoded * 128, redecoded * 2 * SECTOR)
        # Words 4-8 read (both sectors), words 9-13 written (entropy.wgsl:404-413, 461-479).
        s["huffman_prefix_local"] = (2 * SECTOR * subs, SECTOR * subs)
        # Only intervals of more than 64 subsequences: a total per workgroup (entropy.wgsl:506-524).
        s["huffman_prefix_groups"] = (SECTOR * groups, SECTOR * groups)
        # The data and tables again, the predecessor's exit and its own sums (entropy.wgsl:
        # 561-573); an atomicOr per non-zero coefficient into the cleared blocks (538-543): at
        # most every sector of every coded block, fewer where high frequencies are zero.
        s["huffman_write"] = (data + tables + 2 * SECTOR * subs, 128 * coded)
        s["entropy"] = (4, 4)  # the status word, copied for the CPU (record.rs:436)
        job_words += data // 4 + tables // 4 + 19 + 7 * len(intervals)
        # The IDCT reads each block's dense rows, 16 bytes a lane (idct.wgsl:373).
        coefficients = 128 * idct_blocks
    else:
        # Progressive (or multi-scan) files come as compact coefficients from the CPU: a table
        # word per block, then 2 bytes per non-zero coefficient, which the headers cannot tell
        # (src/jpeg/compact.rs): a lower bound.
        coefficients = 4 * (idct_blocks + len(comps))
        job_words += coefficients // 4
    # 8-bit samples, two words per block row (idct.wgsl:438-445); the quantisation table is
    # part of the job (jobs.rs IdctJob).
    s["idct"] = (coefficients + IDCT_JOB * len(comps), 64 * idct_blocks)
    # Every real sample of every plane, clamped at the plane's edge (color.wgsl:54-60); one RGBX
    # word per pixel of the whole decoded image (work.rs:224, color.wgsl:186 and 226-234).
    s["color"] = (sum(w * h for w, h in planes) + COLOR_JOB, 4 * W * H)
    horizontal, h_window = taps(filter, W, out_w)
    vertical, v_window = taps(filter, H, out_h)
    first_row = vertical[0][0]
    rows = vertical[-1][0] + vertical[-1][1] - first_row  # resize.rs:249-260
    source_w = W
    if out_w != W:
        columns = max(a + n for a, n in horizontal) - horizontal[0][0]
        h_taps = 4 * out_w * (2 + h_window)  # (start, count) pairs, then `window` Q22 weights each
        # RGBX words of the rows the vertical taps need (resample_h.wgsl:57-65); an RGBX word per
        # output pixel of each of them (resample_h.wgsl:66, work.rs:367).
        s["horizontal"] = (4 * columns * rows + h_taps + HORIZONTAL_JOB, 4 * out_w * rows)
        source_w = out_w
        job_words += h_taps // 4 + 9 + 1
    # The vertical pass reads the horizontal pass's output (or the RGBX image), every row its
    # taps name, once per channel but the same words (tensor.wgsl:113-125); the 3 x 256 value
    # table and the vertical taps (tensor.wgsl:79-81); one element per output value.
    v_taps = 4 * out_h * (2 + v_window) if out_h != H else 0
    read_rows = rows if out_h != H else out_h
    out_bytes = 4 * -(-3 * out_w * out_h // (4 // element_bytes))  # work.rs:438
    s["tensor"] = (4 * source_w * read_rows + 3 * 256 * 4 + v_taps + TENSOR_JOB, out_bytes)
    # Each job record and its `starts` word (work.rs:612-640), the stages' tables and taps.
    job_words += v_taps // 4 + 81 * len(comps) + 41 + 61
    # The upload's copy from the staging buffer the host wrote (record.rs:174): where that buffer
    # lies (host memory over PCIe, or device memory the host writes through) is the driver's
    # choice, so its rate is no share of the device's copy rate.
    s["upload"] = (4 * job_words, 4 * job_words)
    return s


def gpu_phases(path):
    """The last "gpu_phases" line of a bench's output (bench.rs `gpu_phases`: stage_NAME_ms summed
    over the best pass's batches), and the "pipeline" and "stages" lines before it."""
    found, lines = None, {}
    with open(path, errors="replace") as f:
        for text in f:
            try:
                line = json.loads(text)
            except ValueError:
                continue  # bench.sh's logs hold other tools' output too
            if isinstance(line, dict) and line.get("what") in ("pipeline", "stages"):
                lines[line["what"]] = line
            elif isinstance(line, dict) and line.get("what") == "gpu_phases":
                found = (line, dict(lines))
    if found is None:
        sys.exit(f"error: no gpu_phases line in {path} (run gpuprep bench with --time-stages)")
    return found


def measure_copy(mib=1024, runs=20):
    """Device-to-device copy rate, GB/s counting the bytes read and written, the median of
    `runs` copies timed with CUDA events (torch is imported here: the rest needs none)."""
    try:
        import torch
    except ImportError:
        sys.exit("error: --measure-copy needs torch (with CUDA): run it on the GPU machine")
    source = torch.empty(mib << 20, dtype=torch.uint8, device="cuda")
    target = torch.empty_like(source)
    for _ in range(3):
        target.copy_(source)  # warm-up: clocks, the copy engine or kernel picked
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        target.copy_(source)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    gbps = 2 * source.numel() / statistics.median(times) / 1e9
    print(json.dumps({"what": "copy", "device": torch.cuda.get_device_name(), "mib": mib,
                      "runs": runs, "gbps": round(gbps, 1)}))
    return gbps


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?")
    parser.add_argument("bench", nargs="?", help="JSON lines of gpuprep bench --time-stages")
    parser.add_argument("--copy-gbps", type=float)
    parser.add_argument("--measure-copy", action="store_true")
    parser.add_argument("--size", default="224x224", help="the exact --resize WxH")
    parser.add_argument("--filter", default="bilinear", choices=["nearest", *SUPPORT])
    parser.add_argument("--dtype", default="f32", choices=["u8", "f16", "f32"])
    args = parser.parse_args()
    copy = measure_copy() if args.measure_copy else args.copy_gbps
    if args.folder is None:
        if not args.measure_copy:
            parser.error("give DIR and BENCH.jsonl, or --measure-copy")
        return
    if args.bench is None:
        parser.error("give the bench's JSON lines after DIR")
    out_w, out_h = map(int, args.size.split("x"))
    element = {"u8": 1, "f16": 2, "f32": 4}[args.dtype]
    names = sorted(n for n in os.listdir(args.folder) if n.lower().endswith(JPEG_EXTENSIONS))
    if not names:
        sys.exit(f"error: no JPEG in {args.folder}")
    totals = {stage: [0, 0] for stage in STAGES}
    jpegs = []
    for name in names:
        jpeg = read_jpeg(os.path.join(args.folder, name))
        jpegs.append(jpeg)
        for stage, (read, written) in stage_bytes(jpeg, out_w, out_h, element, args.filter).items():
            totals[stage][0] += read
            totals[stage][1] += written
    phases, before = gpu_phases(args.bench)
    n, gpu = len(jpegs), sum(j["gpu_huffman"] for j in jpegs)
    print(f"{n} JPEGs in {args.folder}: {gpu} decoded by stage 0, {n - gpu} progressive or "
          f"multi-scan (compact coefficients: their IDCT reads are a lower bound); "
          f"{sum(j['width'] * j['height'] for j in jpegs) / n / 1e6:.1f} MP and "
          f"{sum(j['entropy_bytes'] for j in jpegs) / n / 1e6:.2f} MB entropy-coded a file")
    pipeline, stages = before.get("pipeline", {}), before.get("stages", {})
    if pipeline.get("images", n) != n or pipeline.get("failed"):
        print(f"warning: the bench ran {pipeline['images']} images ({pipeline.get('failed')} "
              f"failed), the folder holds {n} JPEGs")
    if stages.get("huffman_on_gpu_images", gpu) != gpu or stages.get("redone_on_cpu_images"):
        print(f"warning: the bench decoded {stages['huffman_on_gpu_images']} on the GPU "
              f"({stages.get('redone_on_cpu_images')} redone on the CPU), the headers say {gpu}")
    if phases.get("stage_clock") != "gpu":
        print("warning: stage times are wall times (no GPU timestamps): each stage's includes "
              "its submission and wait")
    copy_head = f" ({copy:.0f} GB/s)" if copy else ""
    print(f"\n| stage | read / image (MB) | written / image (MB) | total MB ({n} images) "
          f"| stage ms | GB/s | share of copy{copy_head} |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    device, device_ms = [0, 0], 0.0
    for stage in STAGES:
        read, written = totals[stage]
        ms = phases.get(f"stage_{stage}_ms")
        if ms is None and not (read or written):
            continue
        mb = (read + written) / 1e6
        # Not modelled: stage 5 and the pixels it adjusts, absent without colour adjustments.
        gbps = mb / ms if ms and stage != "adjust" else None
        if stage != "upload":
            device, device_ms = [device[0] + read, device[1] + written], device_ms + (ms or 0)
        share = ("staging" if stage == "upload" else f"{gbps / copy:.0%}" if gbps and copy else "-")
        print(f"| {stage} | {read / n / 1e6:.2f} | {written / n / 1e6:.2f} | {mb:.1f} | "
              f"{'-' if ms is None else f'{ms:.2f}'} | {'-' if gbps is None else f'{gbps:.1f}'} | "
              f"{share} |")
    mb = sum(device) / 1e6
    gbps = mb / device_ms if device_ms else 0
    share = f"{gbps / copy:.0%}" if copy else "-"
    print(f"| all but the upload | {device[0] / n / 1e6:.2f} | {device[1] / n / 1e6:.2f} | "
          f"{mb:.1f} | {device_ms:.2f} | {gbps:.1f} | {share} |")


if __name__ == "__main__":
    main()

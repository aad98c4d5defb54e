// Stage 3: Pillow's horizontal resampling pass on RGBX pixels, one invocation per output pixel.
// Mirror of `horizontal_at` in src/reference/resample.rs: Q22 taps, accumulator from 2^21,
// arithmetic shift by 22, clamp, an 8-bit result per channel. A job is one image.

// Mirrored by `HorizontalJob` in src/gpu/jobs.rs.
struct Job {
    // Output pixels per row, rows to produce, source pixels per row.
    out_width: u32,
    rows: u32,
    in_width: u32,
    // Weights per output pixel.
    window: u32,
    // Source row of output row 0.
    first_row: u32,
    // Where the source image starts in the `rgbx` arena, and the output in `result`.
    source_base: u32,
    result_base: u32,
    // Where this image's taps start in `taps`: (first source pixel, count) pairs, one per output
    // column, then Q22 weights, `window` per output column, tap by tap (tap k of every column,
    // then tap k + 1: neighbouring invocations read neighbouring words).
    bounds_base: u32,
    weights_base: u32,
}

@group(0) @binding(1) var<storage, read> jobs: array<Job>;
// The decoded images, RGBX, through two binding windows of the same buffer.
@group(0) @binding(2) var<storage, read> rgbx0: array<u32>;
@group(0) @binding(3) var<storage, read> rgbx1: array<u32>;
@group(0) @binding(4) var<storage, read> taps: array<u32>;
@group(0) @binding(5) var<storage, read_write> result: array<u32>;

fn load_rgbx(i: u32) -> u32 {
    let window = arrayLength(&rgbx0);
    if i < window {
        return rgbx0[i];
    }
    return rgbx1[i - window];
}

// Fixed-point bits of the taps: `plan::PRECISION_BITS`, set when the pipeline is created.
override PRECISION_BITS: u32;

fn clip8(acc: i32) -> u32 {
    return u32(clamp(acc >> PRECISION_BITS, 0, 255));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let global = invocation(id, groups);
    let job = find_job(global);
    if job >= arrayLength(&jobs) {
        return;
    }
    let p = jobs[job];
    let index = global - starts[job];
    let x = index % p.out_width;
    let y = index / p.out_width;
    let start = taps[p.bounds_base + 2u * x];
    let count = taps[p.bounds_base + 2u * x + 1u];
    let row = p.source_base + (p.first_row + y) * p.in_width;
    var acc = vec3<i32>(1 << (PRECISION_BITS - 1u));
    for (var k = 0u; k < count; k++) {
        let pixel = load_rgbx(row + start + k);
        let rgb = vec3<i32>(vec3<u32>(pixel, pixel >> 8u, pixel >> 16u) & vec3<u32>(255u));
        acc += rgb * bitcast<i32>(taps[p.weights_base + k * p.out_width + x]);
    }
    result[p.result_base + index] = clip8(acc.x) | (clip8(acc.y) << 8u) | (clip8(acc.z) << 16u) | (255u << 24u);
}

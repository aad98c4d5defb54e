// Stage 3: Pillow's horizontal resampling pass on RGBX pixels, one invocation per output pixel.
// Mirror of `horizontal_at` in src/reference/resample.rs: Q22 taps, accumulator from 2^21,
// arithmetic shift by 22, clamp, an 8-bit result per channel.

// Mirrored by `ResampleParams` in src/gpu/params.rs.
struct Params {
    // Output pixels per row (taps), rows to produce, source pixels per row.
    out_width: u32,
    rows: u32,
    in_width: u32,
    // Weights per output pixel.
    window: u32,
    // Source row of output row 0.
    first_row: u32,
    // Rows per source chunk (the image is stored in chunks that each fit one binding).
    chunk_rows: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
// The source image, RGBX, in up to four chunks of `chunk_rows` rows.
@group(0) @binding(1) var<storage, read> source0: array<u32>;
@group(0) @binding(2) var<storage, read> source1: array<u32>;
@group(0) @binding(3) var<storage, read> source2: array<u32>;
@group(0) @binding(4) var<storage, read> source3: array<u32>;
// Per output pixel: first source pixel and tap count.
@group(0) @binding(5) var<storage, read> bounds: array<vec2<u32>>;
// Q22 weights, `window` per output pixel.
@group(0) @binding(6) var<storage, read> weights: array<i32>;
@group(0) @binding(7) var<storage, read_write> result: array<u32>;

// Source pixel (x, row).
fn source_pixel(x: u32, row: u32) -> u32 {
    let i = (row % params.chunk_rows) * params.in_width + x;
    switch row / params.chunk_rows {
        case 0u: { return source0[i]; }
        case 1u: { return source1[i]; }
        case 2u: { return source2[i]; }
        default: { return source3[i]; }
    }
}

const PRECISION_BITS: u32 = 22u;

fn clip8(acc: i32) -> u32 {
    return u32(clamp(acc >> PRECISION_BITS, 0, 255));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let index = id.x + id.y * groups.x * 64u;
    let x = index % params.out_width;
    let y = index / params.out_width;
    if y >= params.rows {
        return;
    }
    let bound = bounds[x];
    var acc = vec3<i32>(1 << (PRECISION_BITS - 1u));
    for (var k = 0u; k < bound.y; k++) {
        let pixel = source_pixel(bound.x + k, params.first_row + y);
        let rgb = vec3<i32>(vec3<u32>(pixel, pixel >> 8u, pixel >> 16u) & vec3<u32>(255u));
        acc += rgb * weights[x * params.window + k];
    }
    result[index] = clip8(acc.x) | (clip8(acc.y) << 8u) | (clip8(acc.z) << 16u) | (255u << 24u);
}

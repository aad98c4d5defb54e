// Stage 4: Pillow's vertical resampling pass (when the height changes), torchvision's centre crop
// with zero padding, and ToTensor + Normalize through a 3x256 table, written in the output layout
// and dtype. One invocation per output word, so that packed u8 and f16 outputs never share a word
// between invocations. Mirror of `vertical_at` (src/reference/resample.rs) and
// `cropped_sample` / `to_tensor` (src/reference/tensor.rs).

// Mirrored by `TensorParams` in src/gpu/params.rs.
struct Params {
    // Output (crop) size.
    out_width: u32,
    out_height: u32,
    // Size of the resized image the crop takes from.
    width: u32,
    height: u32,
    // Where the crop starts in the resized image (negative: zero padding first).
    crop_x: i32,
    crop_y: i32,
    // 1 when the vertical pass runs, with its window; 0 to read `source` rows directly.
    vertical: u32,
    window: u32,
    // 0: H×W×C, 1: C×H×W.
    chw: u32,
    // Elements per output word: 4 (u8), 2 (f16) or 1 (f32).
    per_word: u32,
    // Output words in all.
    words: u32,
    // Rows per source chunk.
    chunk_rows: u32,
    // This dispatch computes words word_offset .. word_offset + band_words into `result`.
    word_offset: u32,
    band_words: u32,
    _pad0: u32,
    _pad1: u32,
    // Source channel of each output channel (RGB or BGR order).
    channel_map: vec4<u32>,
}

@group(0) @binding(0) var<uniform> params: Params;
// The horizontally resampled (or decoded) image, RGBX, `width` pixels per row, in up to four
// chunks of `chunk_rows` rows.
@group(0) @binding(1) var<storage, read> source0: array<u32>;
@group(0) @binding(2) var<storage, read> source1: array<u32>;
@group(0) @binding(3) var<storage, read> source2: array<u32>;
@group(0) @binding(4) var<storage, read> source3: array<u32>;
@group(0) @binding(5) var<storage, read> bounds: array<vec2<u32>>;
@group(0) @binding(6) var<storage, read> weights: array<i32>;
// For each RGB channel and 8-bit value, the output element's bits (u8 value, f16 or f32 bits).
@group(0) @binding(7) var<storage, read> table: array<u32>;
// This band's words.
@group(0) @binding(8) var<storage, read_write> result: array<u32>;

// Source pixel (x, row).
fn source_pixel(x: u32, row: u32) -> u32 {
    let i = (row % params.chunk_rows) * params.width + x;
    switch row / params.chunk_rows {
        case 0u: { return source0[i]; }
        case 1u: { return source1[i]; }
        case 2u: { return source2[i]; }
        default: { return source3[i]; }
    }
}

const PRECISION_BITS: u32 = 22u;

fn channel(pixel: u32, c: u32) -> i32 {
    return i32((pixel >> (8u * c)) & 255u);
}

// Sample (x, y, c) of the resized image: the vertical pass over `source`, or `source` itself.
fn resized(x: u32, y: u32, c: u32) -> u32 {
    if params.vertical == 0u {
        return u32(channel(source_pixel(x, y), c));
    }
    let bound = bounds[y];
    var acc = 1 << (PRECISION_BITS - 1u);
    for (var k = 0u; k < bound.y; k++) {
        acc += channel(source_pixel(x, bound.x + k), c) * weights[y * params.window + k];
    }
    return u32(clamp(acc >> PRECISION_BITS, 0, 255));
}

// The output element with linear index `e`.
fn element(e: u32) -> u32 {
    var c: u32;
    var x: u32;
    var y: u32;
    if params.chw == 0u {
        c = e % 3u;
        x = (e / 3u) % params.out_width;
        y = e / 3u / params.out_width;
    } else {
        let plane = params.out_width * params.out_height;
        c = e / plane;
        y = (e % plane) / params.out_width;
        x = e % params.out_width;
    }
    let source_channel = params.channel_map[c];
    let sx = params.crop_x + i32(x);
    let sy = params.crop_y + i32(y);
    var value = 0u;
    if sx >= 0 && sy >= 0 && sx < i32(params.width) && sy < i32(params.height) {
        value = resized(u32(sx), u32(sy), source_channel);
    }
    return table[source_channel * 256u + value];
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let local = id.x + id.y * groups.x * 64u;
    if local >= params.band_words {
        return;
    }
    let word = params.word_offset + local;
    let elements = params.out_width * params.out_height * 3u;
    let bits = 32u / params.per_word;
    var packed = 0u;
    for (var i = 0u; i < params.per_word; i++) {
        let e = word * params.per_word + i;
        if e < elements {
            packed |= element(e) << (bits * i);
        }
    }
    result[local] = packed;
}

// Stage 4: Pillow's vertical resampling pass (when the height changes), Pad's and RandomCrop's
// padding (read through, src/plan/padding.rs), torchvision's centre crop with zero padding or the
// random crop, the flips, RandomRotation, and ToTensor + Normalize through a 3x256 table,
// written in the output layout and dtype. One invocation per output word, so that packed u8 and
// f16 outputs never share a word between invocations. Mirror of `vertical_at`
// (src/reference/resample.rs), `pad` (src/reference/pad.rs), `rotate` (src/reference/rotate.rs)
// and `source_position` /
// `cropped_sample` / `to_tensor` (src/reference/tensor.rs). A job is the part of one image's
// output that falls in this dispatch's window of the output buffer.
//
// With colour adjustments, `pixels_main` writes the cropped, flipped, rotated image instead (a
// word per pixel, RGB), stage 5 (adjust.wgsl) adjusts it, and `main` then reads it as an image of
// the output's size.

// Mirrored by `TensorJob` in src/gpu/jobs.rs.
struct Job {
    // Output (crop) size.
    out_width: u32,
    out_height: u32,
    // Size of the resized image (the crop takes from it padded, `padded`).
    width: u32,
    height: u32,
    // Where the crop starts in the padded image (negative: zero padding first).
    crop_x: i32,
    crop_y: i32,
    // 1 when the vertical pass runs, with its window; 0 to read source rows directly.
    vertical: u32,
    window: u32,
    // 0: H×W×C, 1: C×H×W.
    chw: u32,
    // Elements per output word: 4 (u8), 2 (f16) or 1 (f32).
    per_word: u32,
    // 1: the source is the decoded image in `rgbx`; 0: the horizontal pass's output in `hpass`
    // (or the adjusted pixels, bound there).
    from_rgbx: u32,
    // Where the source image starts in its arena.
    source_base: u32,
    // Where the vertical taps start in `constants` (as in resample_h.wgsl).
    bounds_base: u32,
    weights_base: u32,
    // The image's first output word that this job computes, and where it goes in `result`.
    first_word: u32,
    out_base: u32,
    // Words per source row.
    stride: u32,
    // Bit 0: mirror left to right; bit 1: top to bottom.
    flips: u32,
    // 1 when the flipped image is rotated, with `fill` (R | G << 8 | B << 16) where no pixel maps.
    rotate: u32,
    fill: u32,
    // RandomErasing's boxes: where their records start in `constants`, how many there are, where
    // the noise's table of element bits starts there, and one unused word (src/gpu/work.rs,
    // `erasure_words`).
    erasures: vec4<u32>,
    // Source channel of each output channel (RGB or BGR order).
    channel_map: vec4<u32>,
    // The rotation's map in 16.16 fixed point (src/plan/rotate.rs): per output column, per row,
    // at the first pixel, for the source column (`rotation_x`) and row (`rotation_y`).
    rotation_x: vec4<i32>,
    rotation_y: vec4<i32>,
    // The padded image's width and height (what the crop takes from), and how many pads
    // (src/plan/padding.rs) make it of the resized image.
    padded: vec4<u32>,
    // Per pad, outermost first: columns added on the left, rows on top, and the width and height
    // of the image it pads.
    pads: array<vec4<i32>, 3>,
    // Per pad: PAD_CONSTANT, PAD_EDGE, PAD_REFLECT or PAD_SYMMETRIC, and the constant's fill
    // (R | G << 8 | B << 16).
    pad_modes: vec4<u32>,
    pad_fills: vec4<u32>,
}

@group(0) @binding(1) var<storage, read> jobs: array<Job>;
// The decoded images, RGBX, through two binding windows of the same buffer.
@group(0) @binding(2) var<storage, read> rgbx0: array<u32>;
@group(0) @binding(3) var<storage, read> rgbx1: array<u32>;
// The horizontal pass's output, RGBX.
@group(0) @binding(4) var<storage, read> hpass: array<u32>;
// Words 0..768: for each RGB channel and 8-bit value, the output element's bits (u8 value, f16
// or f32 bits); then the vertical taps of every image.
@group(0) @binding(5) var<storage, read> constants: array<u32>;
// This dispatch's window of the output.
@group(0) @binding(6) var<storage, read_write> result: array<u32>;

// This invocation's job.
var<private> job: u32;

fn load_rgbx(i: u32) -> u32 {
    let window = arrayLength(&rgbx0);
    if i < window {
        return rgbx0[i];
    }
    return rgbx1[i - window];
}

// Source pixel (x, row).
fn source_pixel(x: u32, row: u32) -> u32 {
    let i = jobs[job].source_base + row * jobs[job].stride + x;
    if jobs[job].from_rgbx == 1u {
        return load_rgbx(i);
    }
    return hpass[i];
}

// Fixed-point bits of the taps: `plan::PRECISION_BITS`, set when the pipeline is created.
override PRECISION_BITS: u32;

fn channel(pixel: u32, c: u32) -> i32 {
    return i32((pixel >> (8u * c)) & 255u);
}

// Sample (x, y, c) of the resized image: the vertical pass over the source, or the source itself.
fn resized(x: u32, y: u32, c: u32) -> u32 {
    let p = jobs[job];
    if p.vertical == 0u {
        return u32(channel(source_pixel(x, y), c));
    }
    let start = constants[p.bounds_base + 2u * y];
    let count = constants[p.bounds_base + 2u * y + 1u];
    var acc = 1 << (PRECISION_BITS - 1u);
    for (var k = 0u; k < count; k++) {
        let weight = bitcast<i32>(constants[p.weights_base + y * p.window + k]);
        acc += channel(source_pixel(x, start + k), c) * weight;
    }
    return u32(clamp(acc >> PRECISION_BITS, 0, 255));
}

// The resized image's position under output position (x, y): the flips, then the crop.
fn source_position(x: u32, y: u32) -> vec2<i32> {
    let p = jobs[job];
    var fx = x;
    var fy = y;
    if (p.flips & 1u) != 0u {
        fx = p.out_width - 1u - x;
    }
    if (p.flips & 2u) != 0u {
        fy = p.out_height - 1u - y;
    }
    return vec2<i32>(p.crop_x + i32(fx), p.crop_y + i32(fy));
}

// The flipped image's pixel under output position (x, y), or (-1, -1) where the rotation's fill
// shows: Pillow's fixed-point walk (affine_fixed), per pixel. The sums may wrap in between; the
// positions, below 2^31 as the plan keeps them, come out right.
fn unrotated(x: u32, y: u32) -> vec2<i32> {
    let p = jobs[job];
    if p.rotate == 0u {
        return vec2<i32>(i32(x), i32(y));
    }
    let at = vec2<i32>(
        (p.rotation_x.z + i32(x) * p.rotation_x.x + i32(y) * p.rotation_x.y) >> 16u,
        (p.rotation_y.z + i32(x) * p.rotation_y.x + i32(y) * p.rotation_y.y) >> 16u,
    );
    if at.x >= 0 && at.y >= 0 && at.x < i32(p.out_width) && at.y < i32(p.out_height) {
        return at;
    }
    return vec2<i32>(-1, -1);
}

// Sample c (RGB) under output position (x, y): the rotation, the flips, then the crop; the
// rotation's fill where no pixel maps.
fn output_sample(x: u32, y: u32, c: u32) -> u32 {
    let at = unrotated(x, y);
    if at.x < 0 {
        return (jobs[job].fill >> (8u * c)) & 255u;
    }
    return cropped(source_position(u32(at.x), u32(at.y)), c);
}

// `TensorJob::pad_modes`, as src/gpu/jobs.rs names them.
const PAD_CONSTANT: u32 = 0u;
const PAD_EDGE: u32 = 1u;
const PAD_REFLECT: u32 = 2u;
const PAD_SYMMETRIC: u32 = 3u;

fn inside(at: vec2<i32>, size: vec2<i32>) -> bool {
    return at.x >= 0 && at.y >= 0 && at.x < size.x && at.y < size.y;
}

// np.pad's index of `i` on an axis of `n` samples (src/plan/padding.rs `mirror`).
fn mirror(i: i32, n: i32, mode: u32) -> i32 {
    if mode == PAD_EDGE || n == 1 {
        return clamp(i, 0, n - 1);
    }
    if mode == PAD_REFLECT {
        let period = 2 * (n - 1);
        let m = ((i % period) + period) % period;
        return select(period - m, m, m < n);
    }
    let period = 2 * n;
    let m = ((i % period) + period) % period;
    return select(period - 1 - m, m, m < n);
}

// Sample c of the padded image at `at`: through each pad to the resized image, or the fill of
// a constant pad; zero outside the padded image (CenterCrop's padding).
fn cropped(at: vec2<i32>, c: u32) -> u32 {
    let p = jobs[job];
    var size = vec2<i32>(i32(p.width), i32(p.height));
    if p.padded.z > 0u {
        size = vec2<i32>(i32(p.padded.x), i32(p.padded.y));
    }
    if !inside(at, size) {
        return 0u;
    }
    var pos = at;
    for (var k = 0u; k < p.padded.z; k++) {
        let pad = p.pads[k];
        pos -= pad.xy;
        if !inside(pos, pad.zw) {
            let mode = p.pad_modes[k];
            if mode == PAD_CONSTANT {
                return (p.pad_fills[k] >> (8u * c)) & 255u;
            }
            pos = vec2<i32>(mirror(pos.x, pad.z, mode), mirror(pos.y, pad.w, mode));
        }
    }
    return resized(u32(pos.x), u32(pos.y), c);
}

// Kinds of erased box, as src/gpu/work.rs numbers them.
const ERASE_CONSTANT: u32 = 0u;
const ERASE_DRAWN: u32 = 1u;
const ERASE_GIVEN: u32 = 2u;

// Element (c, y, x) of the erased box whose record starts at `record`, `width` by `height`: its
// constant, its drawn noise or its given value, as output bits. Mirror of `Erased::value`
// (src/plan/erasing.rs).
fn erased(record: u32, c: u32, x: u32, y: u32, width: u32, height: u32) -> u32 {
    let kind = constants[record + 4u];
    if kind == ERASE_CONSTANT {
        return constants[record + 5u + c];
    }
    if kind == ERASE_DRAWN {
        let key = vec2<u32>(constants[record + 5u], constants[record + 6u]);
        let words = philox4x32_10(vec4<u32>(y * width + x, 0u, 0u, 0u), key);
        return constants[jobs[job].erasures.z + (words[c] >> 16u)];
    }
    return constants[jobs[job].erasures.x + constants[record + 5u] + (c * height + y) * width + x];
}

// The high and low words of a * b.
fn mul_hi_lo(a: u32, b: u32) -> vec2<u32> {
    let a_lo = a & 0xffffu;
    let a_hi = a >> 16u;
    let b_lo = b & 0xffffu;
    let b_hi = b >> 16u;
    let lo_lo = a_lo * b_lo;
    let hi_lo = a_hi * b_lo;
    let lo_hi = a_lo * b_hi;
    let hi_hi = a_hi * b_hi;
    let middle = (lo_lo >> 16u) + (hi_lo & 0xffffu) + (lo_hi & 0xffffu);
    let high = hi_hi + (hi_lo >> 16u) + (lo_hi >> 16u) + (middle >> 16u);
    return vec2<u32>(high, a * b);
}

// Philox4x32 with ten rounds: mirror of `philox4x32_10` (src/plan/erasing.rs).
fn philox4x32_10(counter: vec4<u32>, key: vec2<u32>) -> vec4<u32> {
    var x = counter;
    var k = key;
    for (var round = 0u; round < 10u; round++) {
        if round > 0u {
            k += vec2<u32>(0x9E3779B9u, 0xBB67AE85u);
        }
        let p0 = mul_hi_lo(0xD2511F53u, x.x);
        let p1 = mul_hi_lo(0xCD9E8D57u, x.z);
        x = vec4<u32>(p1.x ^ x.y ^ k.x, p1.y, p0.x ^ x.w ^ k.y, p0.y);
    }
    return x;
}

// The output element with linear index `e`.
fn element(e: u32) -> u32 {
    let p = jobs[job];
    var c: u32;
    var x: u32;
    var y: u32;
    if p.chw == 0u {
        c = e % 3u;
        x = (e / 3u) % p.out_width;
        y = e / 3u / p.out_width;
    } else {
        let plane = p.out_width * p.out_height;
        c = e / plane;
        y = (e % plane) / p.out_width;
        x = e % p.out_width;
    }
    // The last box that holds (x, y) wins, as each box overwrites the ones before it.
    for (var k = p.erasures.y; k > 0u; k--) {
        let record = p.erasures.x + 8u * (k - 1u);
        let x0 = constants[record];
        let y0 = constants[record + 1u];
        if x >= x0 && y >= y0 && x < constants[record + 2u] && y < constants[record + 3u] {
            return erased(record, c, x - x0, y - y0, constants[record + 2u] - x0, constants[record + 3u] - y0);
        }
    }
    let source_channel = p.channel_map[c];
    let value = output_sample(x, y, source_channel);
    return constants[source_channel * 256u + value];
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let global = invocation(id, groups);
    job = find_job(global);
    if job >= arrayLength(&jobs) {
        return;
    }
    let local = global - starts[job];
    let word = jobs[job].first_word + local;
    let elements = jobs[job].out_width * jobs[job].out_height * 3u;
    let per_word = jobs[job].per_word;
    let bits = 32u / per_word;
    var packed = 0u;
    for (var i = 0u; i < per_word; i++) {
        let e = word * per_word + i;
        if e < elements {
            packed |= element(e) << (bits * i);
        }
    }
    result[jobs[job].out_base + local] = packed;
}

// The cropped, flipped image for stage 5: one invocation per pixel, R, G, B in its low bytes.
@compute @workgroup_size(64)
fn pixels_main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let global = invocation(id, groups);
    job = find_job(global);
    if job >= arrayLength(&jobs) {
        return;
    }
    let local = global - starts[job];
    let x = local % jobs[job].out_width;
    let y = local / jobs[job].out_width;
    result[jobs[job].out_base + local] = output_sample(x, y, 0u) | (output_sample(x, y, 1u) << 8u) | (output_sample(x, y, 2u) << 16u);
}

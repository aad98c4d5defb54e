// Stage 5: the augmentation policy's operations (TrivialAugmentWide's, RandAugment's,
// AutoAugment's colour operations, and its shears, translations and rotations after the first as
// remaps), ColorJitter's brightness, contrast, saturation and hue in the drawn order,
// RandomGrayscale, then the single-operation transforms (RandomInvert, RandomPosterize, ...), each
// as it drew, on the cropped, flipped, rotated pixels stage 4 wrote (RGB in a word's low bytes),
// in place. Mirror of src/reference/adjust.rs: Pillow's ImageEnhance
// blends with a degenerate image in ImagingBlend's float32 arithmetic (sharpness's is the image
// smoothed by ImageFilter.SMOOTH, in float32 too), the hue goes through Pillow's HSV conversions,
// looked up in tables of every input (src/plan/hsv.rs: their float and double arithmetic runs on
// the CPU), and ImageOps' posterize, solarize, autocontrast and equalize map each channel through
// a table (src/plan/levels.rs). One workgroup per image, so that its lanes can sum the luma that
// contrast's grey is the mean of and the histograms the tables are made of; each lane keeps to
// the same pixels but where sharpness reads their neighbours. Its workgroups are four times the
// other stages' (a dispatch still counts 64 invocations a job): an image's 50,176 pixels in 256
// lanes.

// Mirrored by `AdjustJob` in src/gpu/jobs.rs.
struct Job {
    // Where the image's pixels start in `pixels`, and how many.
    pixels_base: u32,
    pixels: u32,
    // Adjustments in `kinds` / `factors`, whose length is `MAX_ADJUSTMENTS` of src/gpu/jobs.rs.
    adjustments: u32,
    // BRIGHTNESS (blended with black), CONTRAST, ... GRAYSCALE, REMAP, BLUR, BOX_BLUR (whose word
    // holds the box's whole radius above KIND_BITS).
    kinds: array<u32, 27>,
    // The factors; for the hue, the H channel's shift (an integer 0..=255); posterize's bits,
    // solarize's first inverted value; a remap's index in `remaps`; the blur's kernel sides,
    // width | height << 8; the box blur's weight (an integer).
    factors: array<f32, 27>,
    // Per remap (`MAX_REMAPS` of src/gpu/jobs.rs), REMAP_WORDS words (src/plan/rotate.rs): its map
    // in 16.16 fixed point (per output column, per row, at the first pixel, for the source
    // column, then the source row); the fill, R | G << 8 | B << 16; its sampling (NEAREST,
    // SCALE, BILINEAR, BICUBIC, NEAREST_POINT); the six doubles of Pillow's matrix, low word
    // first; a perspective's two more (zeros for an affine map).
    remaps: array<i32, 288>,
    // The blur's kernels, float32 bits: MAX_KERNEL weights across, then as many down.
    blur: array<u32, 62>,
    // The image's width.
    width: u32,
    // Always 0 (see `blend`).
    zero: u32,
    // Where AugMix's kept image starts, in words from `pixels_base`; its float32 sum follows,
    // three words a pixel.
    mix: u32,
}

@group(0) @binding(1) var<storage, read> jobs: array<Job>;
@group(0) @binding(2) var<storage, read_write> pixels: array<u32>;
// `HsvTables`: H | S << 8 for RGB i = r << 16 | g << 8 | b, two to a word; R | G << 8 | B << 16
// for HSV i = h << 16 | s << 8 | v.
@group(0) @binding(3) var<storage, read> to_hsv: array<u32>;
@group(0) @binding(4) var<storage, read> to_rgb: array<u32>;
// src/plan/levels.rs `autocontrast_fixes`: bit ix % 32 of word (lo * 256 + hi) * 8 + ix / 32 set
// where the integer stretch exceeds Python's double arithmetic by one.
@group(0) @binding(5) var<storage, read> autocontrast_fixes: array<u32>;

const LANES: u32 = 256u;
// `Job::kinds`, as src/gpu/jobs.rs names them.
const BRIGHTNESS: u32 = 0u;
const CONTRAST: u32 = 1u;
const SATURATION: u32 = 2u;
const HUE: u32 = 3u;
const SHARPNESS: u32 = 4u;
const POSTERIZE: u32 = 5u;
const SOLARIZE: u32 = 6u;
const AUTOCONTRAST: u32 = 7u;
const EQUALIZE: u32 = 8u;
const GRAYSCALE: u32 = 9u;
const REMAP: u32 = 10u;
const BLUR: u32 = 11u;
const SOLARIZE_ADD: u32 = 12u;
const KEEP_FOR_MIX: u32 = 13u;
const ADD_TO_MIX: u32 = 14u;
const BLEND_MIX: u32 = 15u;
const BOX_BLUR: u32 = 16u;
const KEEP_FOR_BLENDS: u32 = 17u;
const BLEND_CHAIN: u32 = 18u;
const BLEND_LAST_CHAIN: u32 = 19u;
const KIND_BITS: u32 = 8u;
// Pillow's box passes each way (src/plan/blur.rs `BoxBlur::PASSES`).
const BOX_PASSES: u32 = 3u;
const MAX_KERNEL: u32 = 31u;
// A remap's words, and its samplings.
const REMAP_WORDS: u32 = 24u;
const NEAREST: u32 = 0u;
const BILINEAR: u32 = 1u;
const BICUBIC: u32 = 2u;
const SCALE: u32 = 3u;
const NEAREST_POINT: u32 = 4u;
// Where a scaling walk leaves the image.
const OUTSIDE: u32 = 0xFFFFFFFFu;
var<workgroup> partial: array<u32, LANES>;
// Per channel: the histogram, then the table made of it (autocontrast, equalize).
var<workgroup> histogram: array<atomic<u32>, 768>;
var<workgroup> table: array<u32, 768>;
// Per channel: autocontrast's lowest and highest value, or equalize's step.
var<workgroup> extremes: array<u32, 6>;
// The blur's 2D kernel, row-major, float32 bits.
var<workgroup> weights: array<u32, 961>;

// Pillow's convert('L'): ITU-R 601-2 luma in 16-bit fixed point.
fn luma(pixel: u32) -> u32 {
    let r = pixel & 255u;
    let g = (pixel >> 8u) & 255u;
    let b = (pixel >> 16u) & 255u;
    return (r * 19595u + g * 38470u + b * 7471u + 0x8000u) >> 16u;
}

// ImagingBlend for one sample: in1 + alpha * (in2 - in1) in float32, truncated and clipped. Pillow
// rounds the product and the sum each; XOR-ing the product's bits with a zero the compiler cannot
// see keeps it from fusing the two into one multiply-add, which rounds once.
fn blend(in1: u32, in2: u32, alpha: f32, zero: u32) -> u32 {
    let product = alpha * f32(i32(in2) - i32(in1));
    let kept = bitcast<f32>(bitcast<u32>(product) ^ zero);
    let value = f32(in1) + kept;
    return u32(clamp(value, 0.0, 255.0));
}

fn blend_pixel(pixel: u32, grey: vec3<u32>, alpha: f32, zero: u32) -> u32 {
    let r = blend(grey.x, pixel & 255u, alpha, zero);
    let g = blend(grey.y, (pixel >> 8u) & 255u, alpha, zero);
    let b = blend(grey.z, (pixel >> 16u) & 255u, alpha, zero);
    return r | (g << 8u) | (b << 16u);
}

// ImagingBlend of two pixels, channel by channel.
fn blend_pixels(in1: u32, in2: u32, alpha: f32, zero: u32) -> u32 {
    let r = blend(in1 & 255u, in2 & 255u, alpha, zero);
    let g = blend((in1 >> 8u) & 255u, (in2 >> 8u) & 255u, alpha, zero);
    let b = blend((in1 >> 16u) & 255u, (in2 >> 16u) & 255u, alpha, zero);
    return r | (g << 8u) | (b << 16u);
}

// A float32 product kept from fusing into the sum it goes to (see `blend`).
fn product(a: f32, b: f32, zero: u32) -> f32 {
    return bitcast<f32>(bitcast<u32>(a * b) ^ zero);
}

// One row's part of ImagingFilter3x3 for channel c at pixel `at`: three products left to right.
fn smooth_row(at: u32, c: u32, middle: f32, zero: u32) -> f32 {
    let k = 1.0 / 13.0;
    let left = f32((pixels[at - 1u] >> (8u * c)) & 255u);
    let centre = f32((pixels[at] >> (8u * c)) & 255u);
    let right = f32((pixels[at + 1u] >> (8u * c)) & 255u);
    return product(left, k, zero) + product(centre, middle, zero) + product(right, k, zero);
}

// Pixel i of image.filter(ImageFilter.SMOOTH): the kernel (1 1 1, 1 5 1, 1 1 1) / 13 summed from
// the row below up, from 0.5, truncated and clipped (src/reference/adjust.rs `smoothed`); the
// edge pixels as they are.
fn smoothed(job: u32, i: u32) -> u32 {
    let p = &jobs[job];
    let x = i % p.width;
    let y = i / p.width;
    let height = p.pixels / p.width;
    let at = p.pixels_base + i;
    if x == 0u || y == 0u || x + 1u >= p.width || y + 1u >= height {
        return pixels[at];
    }
    var out = 0u;
    for (var c = 0u; c < 3u; c++) {
        var sum = 0.5;
        sum += smooth_row(at + p.width, c, 1.0 / 13.0, p.zero);
        sum += smooth_row(at, c, 5.0 / 13.0, p.zero);
        sum += smooth_row(at - p.width, c, 1.0 / 13.0, p.zero);
        out |= u32(clamp(sum, 0.0, 255.0)) << (8u * c);
    }
    return out;
}

// ImageEnhance.Sharpness: each pixel blended with the smoothed image, which goes first to the
// scratch words after the image's pixels, so that no pixel is smoothed from adjusted neighbours.
fn sharpen(job: u32, lane: u32, alpha: f32) {
    let p = &jobs[job];
    let scratch = p.pixels_base + p.pixels;
    // The pixels other lanes wrote are visible before they are read.
    storageBarrier();
    for (var i = lane; i < p.pixels; i += LANES) {
        pixels[scratch + i] = smoothed(job, i);
    }
    storageBarrier();
    for (var i = lane; i < p.pixels; i += LANES) {
        let at = p.pixels_base + i;
        pixels[at] = blend_pixels(pixels[scratch + i], pixels[at], alpha, p.zero);
    }
}

// torchvision's GaussianBlur with the job's kernels (src/reference/blur.rs): its 2D kernel, each
// weight the float32 product of its row's and column's, then per output value the taps in
// row-major order summed from 0 with fused multiply-adds (float.wgsl, rounded as torch's CPU
// conv2d rounds them), over the image reflected at its edges, rounded half to even; written to
// the scratch words after the image, then copied back.
fn blur(job: u32, lane: u32, sides: u32) {
    let p = &jobs[job];
    let kx = sides & 255u;
    let ky = sides >> 8u;
    for (var t = lane; t < kx * ky; t += LANES) {
        weights[t] = f_mul(p.blur[MAX_KERNEL + t / kx], p.blur[t % kx]);
    }
    let scratch = p.pixels_base + p.pixels;
    let height = p.pixels / p.width;
    workgroupBarrier();
    storageBarrier();
    for (var i = lane; i < p.pixels; i += LANES) {
        let x = i % p.width;
        let y = i / p.width;
        var sums = vec3<u32>(0u);
        for (var r = 0u; r < ky; r++) {
            let row = p.pixels_base + reflected(y + r, ky / 2u, height) * p.width;
            // Eight taps an iteration: llvmpipe ends a shader's loops after 65,535 iterations in
            // all (src/gpu/jobs.rs `lane_iterations` counts them).
            for (var c = 0u; c < kx; c += 8u) {
                sums = tap(row, x, c, kx, p.width, r * kx, sums);
                sums = tap(row, x, c + 1u, kx, p.width, r * kx, sums);
                sums = tap(row, x, c + 2u, kx, p.width, r * kx, sums);
                sums = tap(row, x, c + 3u, kx, p.width, r * kx, sums);
                sums = tap(row, x, c + 4u, kx, p.width, r * kx, sums);
                sums = tap(row, x, c + 5u, kx, p.width, r * kx, sums);
                sums = tap(row, x, c + 6u, kx, p.width, r * kx, sums);
                sums = tap(row, x, c + 7u, kx, p.width, r * kx, sums);
            }
        }
        let rounded = min(vec3<u32>(round(bitcast<vec3<f32>>(sums))), vec3<u32>(255u));
        pixels[scratch + i] = rounded.x | (rounded.y << 8u) | (rounded.z << 16u);
    }
    storageBarrier();
    for (var i = lane; i < p.pixels; i += LANES) {
        pixels[p.pixels_base + i] = pixels[scratch + i];
    }
}

// Pillow's GaussianBlur as its box blurs (src/reference/blur.rs `box_blur`): BOX_PASSES passes
// along the rows, then as many down the columns, each value (weight · the sum of the
// 2·radius + 1 values about it + the edge weight · the two just beyond + 2^23) >> 24 in u32
// arithmetic (wrapping as Pillow's C), a line's end values repeated past it; the passes go from the image to the scratch
// words after it and back, so that the last (an even number) lands in the image.
fn box_blur(job: u32, lane: u32, radius: u32, weight: u32) {
    let p = &jobs[job];
    let edge = ((1u << 24u) - (2u * radius + 1u) * weight) / 2u;
    let r = i32(radius);
    for (var sweep = 0u; sweep < 2u * BOX_PASSES; sweep++) {
        var read_base = p.pixels_base;
        var write_base = p.pixels_base + p.pixels;
        if sweep % 2u == 1u {
            read_base = write_base;
            write_base = p.pixels_base;
        }
        storageBarrier();
        for (var i = lane; i < p.pixels; i += LANES) {
            // Along a row: the pixel's place in its row; down a column: in its column.
            var line = vec3<u32>(read_base + i - i % p.width, 1u, p.width);
            var at = i32(i % p.width);
            if sweep >= BOX_PASSES {
                line = vec3<u32>(read_base + i % p.width, p.width, p.pixels / p.width);
                at = i32(i / p.width);
            }
            var sums = vec3<u32>(0u);
            for (var k = -r; k <= r; k++) {
                sums += on_line(line, at + k);
            }
            let beyond = on_line(line, at - r - 1) + on_line(line, at + r + 1);
            let bulk = sums * weight + beyond * edge + vec3<u32>(1u << 23u);
            let v = (bulk >> vec3<u32>(24u)) & vec3<u32>(255u);
            pixels[write_base + i] = v.x | (v.y << 8u) | (v.z << 16u);
        }
    }
}

// The channels of place j of the line (its first word, its step, its length), j clamped to it.
fn on_line(line: vec3<u32>, j: i32) -> vec3<u32> {
    return channels(pixels[line.x + u32(clamp(j, 0, i32(line.z) - 1)) * line.y]);
}

// A pixel's three channels.
fn channels(pixel: u32) -> vec3<u32> {
    return vec3<u32>(pixel & 255u, (pixel >> 8u) & 255u, (pixel >> 16u) & 255u);
}

// Tap c (of kx) of the kernel row whose weights start at `weights[first]`, for output column x
// of an image `width` wide: the three channels' sums with the tap's pixel times its weight
// added, each rounded once (none past the row's last tap).
fn tap(row: u32, x: u32, c: u32, kx: u32, width: u32, first: u32, sums: vec3<u32>) -> vec3<u32> {
    if c >= kx {
        return sums;
    }
    let pixel = pixels[row + reflected(x + c, kx / 2u, width)];
    let w = weights[first + c];
    return vec3<u32>(
        f_fma_u8(pixel & 255u, w, sums.x),
        f_fma_u8((pixel >> 8u) & 255u, w, sums.y),
        f_fma_u8((pixel >> 16u) & 255u, w, sums.z),
    );
}

// The source index of padded index i (`pad` places before index 0) under reflect padding: -1
// reads 1, n reads n - 2.
fn reflected(i: u32, pad: u32, n: u32) -> u32 {
    if i < pad {
        return pad - i;
    }
    let j = i - pad;
    if j >= n {
        return 2u * (n - 1u) - j;
    }
    return j;
}

// The job's remap `m` (src/reference/rotate.rs): each pixel the one its map lands on, or the
// image interpolated there, or the fill, written to the scratch words after the image, then
// copied back.
fn remap(job: u32, lane: u32, m: u32) {
    let p = &jobs[job];
    let scratch = p.pixels_base + p.pixels;
    let map = REMAP_WORDS * m;
    let sampling = u32(p.remaps[map + 7u]);
    storageBarrier();
    if sampling == SCALE {
        scaling_walks(job, lane, map);
        storageBarrier();
    }
    for (var i = lane; i < p.pixels; i += LANES) {
        var pixel: u32;
        if sampling == NEAREST {
            pixel = nearest(job, map, i);
        } else if sampling == SCALE {
            pixel = walked(job, map, i);
        } else {
            pixel = generic(job, map, i, sampling);
        }
        pixels[scratch + i] = pixel;
    }
    storageBarrier();
    for (var i = lane; i < p.pixels; i += LANES) {
        pixels[p.pixels_base + i] = pixels[scratch + i];
    }
}

// timm's AugMix (src/reference/mix.rs): KEEP_FOR_MIX keeps the image and starts the float32
// sum at zero; ADD_TO_MIX adds the chain's image times its weight to the sum, each product and
// sum rounded to float32 as numpy rounds them, then starts the next chain from the kept image;
// BLEND_MIX clips and truncates the sum (numpy's astype(uint8)) and blends the kept image with it
// (ImagingBlend). Blended: KEEP_FOR_BLENDS keeps the image and starts the running blend (a word a
// pixel where the sum goes) as it; BLEND_CHAIN blends the chain's image into the running blend,
// then starts the next chain from the kept image; BLEND_LAST_CHAIN makes the image the running
// blend blended with the last chain's.
fn mix_step(job: u32, lane: u32, kind: u32, factor: f32) {
    let p = &jobs[job];
    let kept = p.pixels_base + p.mix;
    let sum = kept + p.pixels;
    storageBarrier();
    for (var i = lane; i < p.pixels; i += LANES) {
        let at = p.pixels_base + i;
        if kind == KEEP_FOR_MIX {
            pixels[kept + i] = pixels[at];
            for (var c = 0u; c < 3u; c++) {
                pixels[sum + 3u * i + c] = 0u;
            }
        } else if kind == ADD_TO_MIX {
            let pixel = pixels[at];
            for (var c = 0u; c < 3u; c++) {
                let value = f32((pixel >> (8u * c)) & 255u);
                let total = bitcast<f32>(pixels[sum + 3u * i + c]) + product(factor, value, p.zero);
                pixels[sum + 3u * i + c] = bitcast<u32>(total);
            }
            pixels[at] = pixels[kept + i];
        } else if kind == BLEND_MIX {
            var mixed = 0u;
            for (var c = 0u; c < 3u; c++) {
                mixed |= u32(min(bitcast<f32>(pixels[sum + 3u * i + c]), 255.0)) << (8u * c);
            }
            pixels[at] = blend_pixels(pixels[kept + i], mixed, factor, p.zero);
        } else if kind == KEEP_FOR_BLENDS {
            pixels[kept + i] = pixels[at];
            pixels[sum + i] = pixels[at];
        } else if kind == BLEND_CHAIN {
            pixels[sum + i] = blend_pixels(pixels[sum + i], pixels[at], factor, p.zero);
            pixels[at] = pixels[kept + i];
        } else {
            pixels[at] = blend_pixels(pixels[sum + i], pixels[at], factor, p.zero);
        }
    }
}

// Pixel i of Pillow's affine_fixed: its fixed-point map walked to pixel i.
fn nearest(job: u32, map: u32, i: u32) -> u32 {
    let p = &jobs[job];
    let x = i32(i % p.width);
    let y = i32(i / p.width);
    let sx = (p.remaps[map + 2u] + x * p.remaps[map] + y * p.remaps[map + 1u]) >> 16u;
    let sy = (p.remaps[map + 5u] + x * p.remaps[map + 3u] + y * p.remaps[map + 4u]) >> 16u;
    if sx >= 0 && sx < i32(p.width) && sy >= 0 && sy < i32(p.pixels / p.width) {
        return pixels[p.pixels_base + u32(sy) * p.width + u32(sx)];
    }
    return u32(p.remaps[map + 6u]);
}

// Pillow's ImagingScaleAffine walks (src/reference/rotate.rs `scaled`): lane 0 the source column
// of each output column, lane 1 the source row of each row, each added up in doubles from the
// first pixel's centre, into the words after the image's scratch words (OUTSIDE where it falls
// outside the image).
fn scaling_walks(job: u32, lane: u32, map: u32) {
    let p = &jobs[job];
    if lane > 1u {
        return;
    }
    var count = p.width;
    var step = matrix_entry(job, map, 0u);
    var at = d_add(matrix_entry(job, map, 2u), d_mul(step, HALF));
    var base = p.pixels_base + 2u * p.pixels;
    if lane == 1u {
        count = p.pixels / p.width;
        step = matrix_entry(job, map, 4u);
        at = d_add(matrix_entry(job, map, 5u), d_mul(step, HALF));
        base += p.width;
    }
    let limit = d_from_i32(i32(count));
    for (var k = 0u; k < count; k++) {
        var source = OUTSIDE;
        if !d_less(at, d_zero(false)) && d_less(at, limit) {
            source = u32(d_floor(at));
        }
        pixels[base + k] = source;
        at = d_add(at, step);
    }
}

// Pixel i of ImagingScaleAffine: the pixel of its column's and its row's walks, or the fill.
fn walked(job: u32, map: u32, i: u32) -> u32 {
    let p = &jobs[job];
    let walks = p.pixels_base + 2u * p.pixels;
    let sx = pixels[walks + i % p.width];
    let sy = pixels[walks + p.width + i / p.width];
    if sx == OUTSIDE || sy == OUTSIDE {
        return u32(p.remaps[map + 6u]);
    }
    return pixels[p.pixels_base + sy * p.width + sx];
}

// Entry k of the remap's matrix.
fn matrix_entry(job: u32, map: u32, k: u32) -> vec2<u32> {
    let at = map + 8u + 2u * k;
    return vec2<u32>(u32(jobs[job].remaps[at]), u32(jobs[job].remaps[at + 1u]));
}

const HALF: vec2<u32> = vec2<u32>(0u, 0x3FE00000u);
const ONE: vec2<u32> = vec2<u32>(0u, 0x3FF00000u);

// Pixel i of Pillow's ImagingGenericTransform with affine_transform or perspective_transform
// and nearest_filter32, bilinear_filter32RGB or bicubic_filter32RGB: its centre through the
// matrix, in doubles (a perspective's divided by its third form), the fill outside the image
// (or where the divisor is zero: a point at infinity), else the image's pixel there or the image
// interpolated there.
fn generic(job: u32, map: u32, i: u32, sampling: u32) -> u32 {
    let p = &jobs[job];
    let width = i32(p.width);
    let height = i32(p.pixels / p.width);
    let xx = d_add(d_from_i32(i32(i % p.width)), HALF);
    let yy = d_add(d_from_i32(i32(i / p.width)), HALF);
    let m = array<vec2<u32>, 8>(
        matrix_entry(job, map, 0u),
        matrix_entry(job, map, 1u),
        matrix_entry(job, map, 2u),
        matrix_entry(job, map, 3u),
        matrix_entry(job, map, 4u),
        matrix_entry(job, map, 5u),
        matrix_entry(job, map, 6u),
        matrix_entry(job, map, 7u),
    );
    var xin = d_add(d_add(d_mul(m[0], xx), d_mul(m[1], yy)), m[2]);
    var yin = d_add(d_add(d_mul(m[3], xx), d_mul(m[4], yy)), m[5]);
    let zero = d_zero(false);
    if any((m[6] | m[7]) != vec2<u32>(0u, 0u)) {
        let divisor = d_add(d_add(d_mul(m[6], xx), d_mul(m[7], yy)), ONE);
        if u64_is_zero(d_unpack(divisor).significand) {
            return u32(p.remaps[map + 6u]);
        }
        xin = d_div(xin, divisor);
        yin = d_div(yin, divisor);
    }
    if d_less(xin, zero) || !d_less(xin, d_from_i32(width))
        || d_less(yin, zero) || !d_less(yin, d_from_i32(height)) {
        return u32(p.remaps[map + 6u]);
    }
    if sampling == NEAREST_POINT {
        return pixels[p.pixels_base + u32(d_floor(yin)) * p.width + u32(d_floor(xin))];
    }
    // The filters' _HEAD: the point less half a pixel, its whole part and fraction.
    let xs = d_sub(xin, HALF);
    let ys = d_sub(yin, HALF);
    let x = d_floor(xs);
    let y = d_floor(ys);
    let dx = d_sub(xs, d_from_i32(x));
    let dy = d_sub(ys, d_from_i32(y));
    if sampling == BILINEAR {
        return bilinear(job, vec2<i32>(x, y), dx, dy);
    }
    return bicubic(job, vec2<i32>(x, y), dx, dy);
}

// The image's pixel at `at`, the column and row each clipped to the image (XCLIP, YCLIP).
fn clipped_pixel(job: u32, at: vec2<i32>) -> u32 {
    let p = &jobs[job];
    let x = clamp(at.x, 0, i32(p.width) - 1);
    let y = clamp(at.y, 0, i32(p.pixels / p.width) - 1);
    return pixels[p.pixels_base + u32(y) * p.width + u32(x)];
}

fn sample(pixel: u32, c: u32) -> i32 {
    return i32((pixel >> (8u * c)) & 255u);
}

// BILINEAR_BODY per channel, truncated: `a + (b - a)·dx` along rows y and y + 1, then down.
fn bilinear(job: u32, at: vec2<i32>, dx: vec2<u32>, dy: vec2<u32>) -> u32 {
    let p00 = clipped_pixel(job, at);
    let p10 = clipped_pixel(job, at + vec2<i32>(1, 0));
    let p01 = clipped_pixel(job, at + vec2<i32>(0, 1));
    let p11 = clipped_pixel(job, at + vec2<i32>(1, 1));
    var out = 0u;
    for (var c = 0u; c < 3u; c++) {
        let top = lerp_samples(sample(p00, c), sample(p10, c), dx);
        let bottom = lerp_samples(sample(p01, c), sample(p11, c), dx);
        let v = d_add(top, d_mul(d_sub(bottom, top), dy));
        out |= u32(d_floor(v)) << (8u * c);
    }
    return out;
}

// The BILINEAR macro on two samples: their difference is an integer in C.
fn lerp_samples(a: i32, b: i32, d: vec2<u32>) -> vec2<u32> {
    return d_add(d_from_i32(a), d_mul(d_from_i32(b - a), d));
}

// BICUBIC_BODY per channel, clamped to 0..=255 and truncated: the cubic through four samples
// along each of rows y - 1 .. y + 2 from column x - 1, then through the four rows' values.
fn bicubic(job: u32, at: vec2<i32>, dx: vec2<u32>, dy: vec2<u32>) -> u32 {
    var window: array<u32, 16>;
    for (var k = 0; k < 16; k++) {
        window[k] = clipped_pixel(job, at + vec2<i32>(k % 4 - 1, k / 4 - 1));
    }
    var out = 0u;
    for (var c = 0u; c < 3u; c++) {
        var rows: array<vec2<u32>, 4>;
        for (var r = 0; r < 4; r++) {
            rows[r] = cubic_samples(
                sample(window[4 * r], c),
                sample(window[4 * r + 1], c),
                sample(window[4 * r + 2], c),
                sample(window[4 * r + 3], c),
                dx,
            );
        }
        let v = cubic(rows[0], rows[1], rows[2], rows[3], dy);
        var value = 0u;
        if !d_less(v, d_from_i32(255)) {
            value = 255u;
        } else if d_less(d_zero(false), v) {
            value = u32(d_floor(v));
        }
        out |= value << (8u * c);
    }
    return out;
}

// The BICUBIC macro on four samples: its p1..p4 are integers in C.
fn cubic_samples(v1: i32, v2: i32, v3: i32, v4: i32, d: vec2<u32>) -> vec2<u32> {
    return horner(
        d_from_i32(v2),
        d_from_i32(-v1 + v3),
        d_from_i32(2 * (v1 - v2) + v3 - v4),
        d_from_i32(-v1 + v2 - v3 + v4),
        d,
    );
}

// The BICUBIC macro on four doubles, each of its operations rounded in the C code's order.
fn cubic(v1: vec2<u32>, v2: vec2<u32>, v3: vec2<u32>, v4: vec2<u32>, d: vec2<u32>) -> vec2<u32> {
    let difference = d_sub(v1, v2);
    return horner(
        v2,
        d_add(d_neg(v1), v3),
        d_sub(d_add(d_add(difference, difference), v3), v4),
        d_add(d_sub(d_add(d_neg(v1), v2), v3), v4),
        d,
    );
}

// p1 + d·(p2 + d·(p3 + d·p4)).
fn horner(p1: vec2<u32>, p2: vec2<u32>, p3: vec2<u32>, p4: vec2<u32>, d: vec2<u32>) -> vec2<u32> {
    return d_add(p1, d_mul(d, d_add(p2, d_mul(d, d_add(p3, d_mul(d, p4))))));
}

// ImageOps' table of one value: posterize's and solarize's directly, else `table`'s.
fn through_table(pixel: u32, kind: u32, value: u32) -> u32 {
    var out = 0u;
    for (var c = 0u; c < 3u; c++) {
        let v = (pixel >> (8u * c)) & 255u;
        var mapped: u32;
        if kind == POSTERIZE {
            mapped = v & ((0xFFu << (8u - value)) & 255u);
        } else if kind == SOLARIZE {
            mapped = select(v, 255u - v, v >= value);
        } else if kind == SOLARIZE_ADD {
            mapped = select(v, min(v + value, 255u), v < 128u);
        } else {
            mapped = table[c * 256u + v];
        }
        out |= mapped << (8u * c);
    }
    return out;
}

// Entry v of channel c's autocontrast table: the stretch in integers, less the fix.
fn autocontrast_entry(c: u32, v: u32) -> u32 {
    let lo = extremes[2u * c];
    let hi = extremes[2u * c + 1u];
    if hi <= lo {
        return v;
    }
    if v <= lo {
        return 0u;
    }
    let stretched = min(255u * (v - lo) / (hi - lo), 255u);
    let fix = (autocontrast_fixes[(lo * 256u + hi) * 8u + v / 32u] >> (v % 32u)) & 1u;
    return stretched - fix;
}

// Entry v of channel c's equalize table: (step / 2 + the count below v) / step, clipped.
fn equalize_entry(c: u32, v: u32) -> u32 {
    let step = extremes[2u * c];
    if step == 0u {
        return v;
    }
    var below = step / 2u;
    for (var j = 0u; j < v; j++) {
        below += atomicLoad(&histogram[c * 256u + j]);
    }
    return min(below / step, 255u);
}

// Fills `table` from the image's histogram: each channel's extremes (autocontrast) or step
// (equalize; 0 for the identity) by three lanes, then the entries by all.
fn make_tables(job: u32, lane: u32, kind: u32) {
    let p = &jobs[job];
    for (var i = lane; i < 768u; i += LANES) {
        atomicStore(&histogram[i], 0u);
    }
    workgroupBarrier();
    for (var i = lane; i < p.pixels; i += LANES) {
        let pixel = pixels[p.pixels_base + i];
        for (var c = 0u; c < 3u; c++) {
            atomicAdd(&histogram[c * 256u + ((pixel >> (8u * c)) & 255u)], 1u);
        }
    }
    workgroupBarrier();
    if lane < 3u {
        var lo = 255u;
        var hi = 0u;
        var present = 0u;
        var last = 0u;
        for (var v = 0u; v < 256u; v++) {
            let n = atomicLoad(&histogram[lane * 256u + v]);
            if n > 0u {
                lo = min(lo, v);
                hi = v;
                present += 1u;
                last = n;
            }
        }
        if kind == AUTOCONTRAST {
            extremes[2u * lane] = lo;
            extremes[2u * lane + 1u] = hi;
        } else {
            extremes[2u * lane] = select((p.pixels - last) / 255u, 0u, present <= 1u);
        }
    }
    workgroupBarrier();
    for (var i = lane; i < 768u; i += LANES) {
        if kind == AUTOCONTRAST {
            table[i] = autocontrast_entry(i / 256u, i % 256u);
        } else {
            table[i] = equalize_entry(i / 256u, i % 256u);
        }
    }
    workgroupBarrier();
}

// torchvision's adjust_hue: to HSV, the H channel shifted (wrapping), back to RGB.
fn shift_hue(pixel: u32, shift: u32) -> u32 {
    let r = pixel & 255u;
    let g = (pixel >> 8u) & 255u;
    let b = (pixel >> 16u) & 255u;
    let rgb = (r << 16u) | (g << 8u) | b;
    let hs = (to_hsv[rgb >> 1u] >> (16u * (rgb & 1u))) & 0xFFFFu;
    let h = ((hs & 255u) + shift) & 255u;
    let s = hs >> 8u;
    return to_rgb[(h << 16u) | (s << 8u) | max(r, max(g, b))];
}

// ImageEnhance.Contrast's grey: int(mean + 0.5) of the image's luma, as (2 sum + n) / (2 n) in
// integers (src/reference/adjust.rs says why that equals Python's double arithmetic), written
// without overflow as q + (2 r >= n) for sum = q n + r.
fn mean_luma(job: u32, lane: u32) -> u32 {
    let p = &jobs[job];
    var sum = 0u;
    for (var i = lane; i < p.pixels; i += LANES) {
        sum += luma(pixels[p.pixels_base + i]);
    }
    partial[lane] = sum;
    workgroupBarrier();
    for (var step = LANES / 2u; step > 0u; step /= 2u) {
        if lane < step {
            partial[lane] += partial[lane + step];
        }
        workgroupBarrier();
    }
    let total = partial[0];
    // Every lane has read the total before `partial` is written again.
    workgroupBarrier();
    let n = max(p.pixels, 1u);
    return total / n + select(0u, 1u, 2u * (total % n) >= n);
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    // A workgroup per job: the index is the same for every lane, as the barriers need.
    let job = group.x + group.y * groups.x;
    if job + 1u >= arrayLength(&starts) {
        return;
    }
    let p = &jobs[job];
    for (var k = 0u; k < p.adjustments; k++) {
        let kind = p.kinds[k] & ((1u << KIND_BITS) - 1u);
        let alpha = p.factors[k];
        if kind == BOX_BLUR {
            box_blur(job, lane, p.kinds[k] >> KIND_BITS, u32(alpha));
            continue;
        }
        if kind == SHARPNESS {
            sharpen(job, lane, alpha);
            continue;
        }
        if kind == REMAP {
            remap(job, lane, u32(alpha));
            continue;
        }
        if kind == BLUR {
            blur(job, lane, u32(alpha));
            continue;
        }
        // KEEP_FOR_MIX to BLEND_LAST_CHAIN (BOX_BLUR among them went above).
        if kind >= KEEP_FOR_MIX {
            mix_step(job, lane, kind, alpha);
            continue;
        }
        var mean = 0u;
        if kind == CONTRAST {
            mean = mean_luma(job, lane);
        }
        if kind == AUTOCONTRAST || kind == EQUALIZE {
            make_tables(job, lane, kind);
        }
        for (var i = lane; i < p.pixels; i += LANES) {
            let at = p.pixels_base + i;
            let pixel = pixels[at];
            if kind == HUE {
                pixels[at] = shift_hue(pixel, u32(alpha));
                continue;
            }
            if kind == GRAYSCALE {
                pixels[at] = luma(pixel) * 0x010101u;
                continue;
            }
            if kind >= POSTERIZE {
                pixels[at] = through_table(pixel, kind, u32(alpha));
                continue;
            }
            var grey = vec3<u32>(0u);
            if kind == CONTRAST {
                grey = vec3<u32>(mean);
            } else if kind == SATURATION {
                grey = vec3<u32>(luma(pixel));
            }
            pixels[at] = blend_pixel(pixel, grey, alpha, p.zero);
        }
    }
}

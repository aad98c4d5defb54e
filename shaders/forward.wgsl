// JPEG's forward stages, as libjpeg-turbo's compressor computes them (src/encode/forward.rs is
// the CPU mirror): RGB to YCbCr (jccolor.c's 16-bit fixed point), the edges repeated and the
// chroma downsampled (jcsample.c's alternating bias), the slow-integer forward DCT (jfdctint.c)
// and quantisation (jcdctmgr.c's, which rounds as a division of the magnitude would). One job a
// component plane of an image, one invocation a block of it.

struct Plane {
    // The image's first word in `pixels`, its size and its channels (3: RGB, 1: grey).
    pixels: u32,
    width: u32,
    height: u32,
    channels: u32,
    // 0: Y (or grey), 1: Cb, 2: Cr.
    component: u32,
    // Downsampling factors across and down (1 or 2).
    down_h: u32,
    down_v: u32,
    // Downsampled rows holding image (those past them repeat the last).
    rows: u32,
    // Blocks across (the job's blocks run row after row).
    across: u32,
    // The quantisation table (0 or 1), and the job's first word in `coefficients`.
    table: u32,
    out: u32,
}

@group(0) @binding(1) var<storage, read> planes: array<Plane>;
@group(0) @binding(2) var<storage, read> pixels: array<u32>;
// Each table's 64 divisors (its entries times 8, the DCT's scale), natural order.
@group(0) @binding(3) var<storage, read> divisors: array<u32>;
// Each block's 64 coefficients as i16, two a word (the even one in the low half).
@group(0) @binding(4) var<storage, read_write> coefficients: array<u32>;

fn byte_at(p: Plane, index: u32) -> i32 {
    let word = pixels[p.pixels + index / 4u];
    return i32((word >> (8u * (index % 4u))) & 255u);
}

// Component `p.component` of the pixel at (x, y), as jccolor.c's rgb_ycc_convert gives it.
fn sample(p: Plane, x: u32, y: u32) -> i32 {
    let at = (y * p.width + x) * p.channels;
    if p.channels == 1u {
        return byte_at(p, at);
    }
    let r = byte_at(p, at);
    let g = byte_at(p, at + 1u);
    let b = byte_at(p, at + 2u);
    // FIX(0.29900), FIX(0.58700), ... in 16 fraction bits; chroma's offset folds in
    // ONE_HALF - 1 so that the largest input gives 255.
    if p.component == 0u {
        return (19595 * r + 38470 * g + 7471 * b + 32768) >> 16u;
    }
    let offset = (128 << 16u) + 32767;
    if p.component == 1u {
        return (-11059 * r - 21709 * g + 32768 * b + offset) >> 16u;
    }
    return (32768 * r - 27439 * g - 5329 * b + offset) >> 16u;
}

// The downsampled sample at (x, y) of the plane, edges repeated: columns and the row group
// before downsampling, rows after it.
fn downsampled(p: Plane, x: u32, y: u32) -> i32 {
    let row = min(y, p.rows - 1u);
    var sum = 0;
    for (var dy = 0u; dy < p.down_v; dy++) {
        for (var dx = 0u; dx < p.down_h; dx++) {
            let sx = min(x * p.down_h + dx, p.width - 1u);
            let sy = min(row * p.down_v + dy, p.height - 1u);
            sum += sample(p, sx, sy);
        }
    }
    let odd = i32(x & 1u);
    let count = p.down_h * p.down_v;
    if count == 4u {
        return (sum + 1 + odd) >> 2u;
    }
    if count == 2u {
        // Across, the bias alternates (h2v1_downsample); down only, it is 1 (int_downsample).
        return (sum + select(odd, 1, p.down_v == 2u)) >> 1u;
    }
    return sum;
}

fn descale(x: i32, n: u32) -> i32 {
    return (x + (1 << (n - 1u))) >> n;
}

// One 8-point pass of jpeg_fdct_islow over block[at + k * step]: the rows' pass keeps
// PASS1_BITS (2) more bits, the columns' pass takes them (CONST_BITS 13).
fn fdct_pass(block: ptr<function, array<i32, 64>>, at: u32, step: u32, row: bool) {
    var d: array<i32, 8>;
    for (var k = 0u; k < 8u; k++) {
        d[k] = (*block)[at + k * step];
    }
    let tmp0 = d[0] + d[7];
    let tmp7 = d[0] - d[7];
    let tmp1 = d[1] + d[6];
    let tmp6 = d[1] - d[6];
    let tmp2 = d[2] + d[5];
    let tmp5 = d[2] - d[5];
    let tmp3 = d[3] + d[4];
    let tmp4 = d[3] - d[4];
    let tmp10 = tmp0 + tmp3;
    let tmp13 = tmp0 - tmp3;
    let tmp11 = tmp1 + tmp2;
    let tmp12 = tmp1 - tmp2;
    var out: array<i32, 8>;
    var odd = 15u;
    if row {
        out[0] = (tmp10 + tmp11) << 2u;
        out[4] = (tmp10 - tmp11) << 2u;
        odd = 11u;
    } else {
        out[0] = descale(tmp10 + tmp11, 2u);
        out[4] = descale(tmp10 - tmp11, 2u);
    }
    let z1 = (tmp12 + tmp13) * 4433;
    out[2] = descale(z1 + tmp13 * 6270, odd);
    out[6] = descale(z1 - tmp12 * 15137, odd);
    let z5 = (tmp4 + tmp6 + tmp5 + tmp7) * 9633;
    let a1 = -(tmp4 + tmp7) * 7373;
    let a2 = -(tmp5 + tmp6) * 20995;
    let a3 = -(tmp4 + tmp6) * 16069 + z5;
    let a4 = -(tmp5 + tmp7) * 3196 + z5;
    out[7] = descale(tmp4 * 2446 + a1 + a3, odd);
    out[5] = descale(tmp5 * 16819 + a2 + a4, odd);
    out[3] = descale(tmp6 * 25172 + a2 + a3, odd);
    out[1] = descale(tmp7 * 12299 + a1 + a4, odd);
    for (var k = 0u; k < 8u; k++) {
        (*block)[at + k * step] = out[k];
    }
}

// The coefficient divided by its divisor: the magnitude rounded half up, the sign kept.
fn quantised(c: i32, divisor: u32) -> i32 {
    let magnitude = i32((u32(abs(c)) + divisor / 2u) / divisor);
    return select(magnitude, -magnitude, c < 0);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
    let index = invocation(id, groups);
    let job = find_job(index);
    if job >= arrayLength(&planes) {
        return;
    }
    let p = planes[job];
    let n = index - starts[job];
    let bx = n % p.across;
    let by = n / p.across;
    var block: array<i32, 64>;
    for (var i = 0u; i < 64u; i++) {
        block[i] = downsampled(p, bx * 8u + i % 8u, by * 8u + i / 8u) - 128;
    }
    for (var r = 0u; r < 8u; r++) {
        fdct_pass(&block, r * 8u, 1u, true);
    }
    for (var c = 0u; c < 8u; c++) {
        fdct_pass(&block, c, 8u, false);
    }
    let out = p.out + n * 32u;
    for (var k = 0u; k < 32u; k++) {
        let even = quantised(block[2u * k], divisors[p.table * 64u + 2u * k]);
        let odd = quantised(block[2u * k + 1u], divisors[p.table * 64u + 2u * k + 1u]);
        coefficients[out + k] = (u32(even) & 0xFFFFu) | (u32(odd) << 16u);
    }
}

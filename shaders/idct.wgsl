// Stage 1: dequantise + inverse DCT, one invocation per 8x8 block.
// Mirror of src/reference/idct.rs (`idct_islow`): libjpeg-turbo's ISLOW with the 16-bit lanes of
// its AVX2 version (what Pillow runs). i32 arithmetic wraps; every descale is an arithmetic shift.

// One component. Mirrored by `IdctParams` in src/gpu/params.rs.
struct Params {
    // Blocks per row in the coefficient storage (padded to whole MCUs).
    blocks_w: u32,
    // Blocks that hold image data.
    width_in_blocks: u32,
    height_in_blocks: u32,
    // Words per row of the output plane.
    sample_row_words: u32,
    // The quantisation table, natural order, as libjpeg's 16-bit multipliers sign-extended.
    quant: array<vec4<i32>, 16>,
}

@group(0) @binding(0) var<uniform> params: Params;
// Quantised coefficients, natural order, two i16 per word (low half first).
@group(0) @binding(1) var<storage, read> coefs: array<u32>;
// Output samples, four bytes per word (lowest byte first).
@group(0) @binding(2) var<storage, read_write> samples: array<u32>;

const CONST_BITS: u32 = 13u;
const PASS1_BITS: u32 = 2u;

const FIX_0_298631336: i32 = 2446;
const FIX_0_390180644: i32 = 3196;
const FIX_0_541196100: i32 = 4433;
const FIX_0_765366865: i32 = 6270;
const FIX_0_899976223: i32 = 7373;
const FIX_1_175875602: i32 = 9633;
const FIX_1_501321110: i32 = 12299;
const FIX_1_847759065: i32 = 15137;
const FIX_1_961570560: i32 = 16069;
const FIX_2_053119869: i32 = 16819;
const FIX_2_562915447: i32 = 20995;
const FIX_3_072711026: i32 = 25172;

// Wraps to a 16-bit lane.
fn wrap16(x: i32) -> i32 {
    return (x << 16u) >> 16u;
}

// Saturates to a 16-bit lane (packssdw).
fn sat16(x: i32) -> i32 {
    return clamp(x, -32768, 32767);
}

// a*x + b*y in 32 bits (pmaddwd).
fn madd(x: i32, a: i32, y: i32, b: i32) -> i32 {
    return x * a + y * b;
}

fn descale(x: i32, n: u32) -> i32 {
    return (x + (1 << (n - 1u))) >> n;
}

// The 1-D 8-point kernel on 16-bit inputs, descaled by `shift` and saturated to 16 bits.
fn kernel(x: array<i32, 8>, shift: u32) -> array<i32, 8> {
    // Even part.
    let tmp3 = madd(x[2], FIX_0_541196100 + FIX_0_765366865, x[6], FIX_0_541196100);
    let tmp2 = madd(x[2], FIX_0_541196100, x[6], FIX_0_541196100 - FIX_1_847759065);
    let tmp0 = wrap16(x[0] + x[4]) << CONST_BITS;
    let tmp1 = wrap16(x[0] - x[4]) << CONST_BITS;
    let e10 = tmp0 + tmp3;
    let e13 = tmp0 - tmp3;
    let e11 = tmp1 + tmp2;
    let e12 = tmp1 - tmp2;
    // Odd part.
    let z3 = wrap16(x[7] + x[3]);
    let z4 = wrap16(x[5] + x[1]);
    let z3w = madd(z3, FIX_1_175875602 - FIX_1_961570560, z4, FIX_1_175875602);
    let z4w = madd(z3, FIX_1_175875602, z4, FIX_1_175875602 - FIX_0_390180644);
    let o0 = madd(x[7], FIX_0_298631336 - FIX_0_899976223, x[1], -FIX_0_899976223) + z3w;
    let o1 = madd(x[5], FIX_2_053119869 - FIX_2_562915447, x[3], -FIX_2_562915447) + z4w;
    let o2 = madd(x[5], -FIX_2_562915447, x[3], FIX_3_072711026 - FIX_2_562915447) + z3w;
    let o3 = madd(x[7], -FIX_0_899976223, x[1], FIX_1_501321110 - FIX_0_899976223) + z4w;
    return array<i32, 8>(
        sat16(descale(e10 + o3, shift)),
        sat16(descale(e11 + o2, shift)),
        sat16(descale(e12 + o1, shift)),
        sat16(descale(e13 + o0, shift)),
        sat16(descale(e13 - o0, shift)),
        sat16(descale(e12 - o1, shift)),
        sat16(descale(e11 - o2, shift)),
        sat16(descale(e10 - o3, shift)),
    );
}

// Quantised coefficient i (natural order) of block `block`.
fn coef(block: u32, i: u32) -> i32 {
    let word = coefs[block * 32u + i / 2u];
    let half = bitcast<i32>(word << (16u * (1u - i % 2u)));
    return half >> 16u;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let index = id.x + id.y * groups.x * 64u;
    let bx = index % params.width_in_blocks;
    let by = index / params.width_in_blocks;
    if by >= params.height_in_blocks {
        return;
    }
    let block = by * params.blocks_w + bx;
    var d: array<i32, 64>;
    var rows_zero = true;
    for (var i = 0u; i < 64u; i++) {
        let c = coef(block, i);
        d[i] = wrap16(c * params.quant[i / 4u][i % 4u]);
        if i >= 8u && c != 0 {
            rows_zero = false;
        }
    }
    var ws: array<i32, 64>;
    // Pass 1: columns. When no coefficient below the first row is set, the SIMD code shifts the
    // first row in 16 bits instead.
    for (var u = 0u; u < 8u; u++) {
        if rows_zero {
            for (var k = 0u; k < 8u; k++) {
                ws[k * 8u + u] = wrap16(d[u] << PASS1_BITS);
            }
        } else {
            var column = kernel(
                array<i32, 8>(d[u], d[8u + u], d[16u + u], d[24u + u], d[32u + u], d[40u + u], d[48u + u], d[56u + u]),
                CONST_BITS - PASS1_BITS,
            );
            for (var k = 0u; k < 8u; k++) {
                ws[k * 8u + u] = column[k];
            }
        }
    }
    // Pass 2: rows, then the level shift with a clamp to 0..=255, packed four samples a word.
    for (var r = 0u; r < 8u; r++) {
        let b = r * 8u;
        var row = kernel(
            array<i32, 8>(ws[b], ws[b + 1u], ws[b + 2u], ws[b + 3u], ws[b + 4u], ws[b + 5u], ws[b + 6u], ws[b + 7u]),
            CONST_BITS + PASS1_BITS + 3u,
        );
        var words = vec2<u32>(0u, 0u);
        for (var k = 0u; k < 8u; k++) {
            let sample = u32(clamp(row[k], -128, 127) + 128);
            words[k / 4u] |= sample << (8u * (k % 4u));
        }
        let at = (by * 8u + r) * params.sample_row_words + bx * 2u;
        samples[at] = words.x;
        samples[at + 1u] = words.y;
    }
}

// Stage 1: dequantise + inverse DCT. Mirror of src/reference/idct.rs: libjpeg-turbo's ISLOW with
// the 16-bit lanes of its AVX2 version (what Pillow runs), and for draft decoding its reduced
// 4x4 and 2x2 IDCTs (SSE2 lanes) and 1x1. i32 arithmetic wraps; descales are arithmetic shifts.
// One invocation covers the blocks whose samples fill whole output words: one block for sizes 8
// and 4, two for size 2, four for size 1. A job is one component of one image.

// One component. Mirrored by `IdctJob` in src/gpu/jobs.rs.
struct Job {
    // Blocks per row in the coefficient storage (padded to whole MCUs).
    blocks_w: u32,
    // Blocks that hold image data.
    width_in_blocks: u32,
    height_in_blocks: u32,
    // Words per row of the output plane.
    sample_row_words: u32,
    // Samples per block side (8, 4, 2 or 1), and blocks per invocation.
    idct_size: u32,
    blocks_per_invocation: u32,
    // Where this component's compact coefficients start in `coefs`, and its plane in `samples`.
    coef_base: u32,
    sample_base: u32,
    // The order of the compact table's blocks: MCUs of table_mcu_w x table_mcu_h blocks,
    // table_mcus_per_row to a row (1 x 1: plain row-major), and the blocks in the table.
    table_mcu_w: u32,
    table_mcu_h: u32,
    table_mcus_per_row: u32,
    table_blocks: u32,
    // 1: the coefficients are dense in `decoded` (stage 0's output), 32 words a block in table
    // order from `coef_base`, two 16-bit values a word, natural order, the lower first.
    dense: u32,
    padding: array<u32, 3>,
    // The quantisation table, natural order, as libjpeg's 16-bit multipliers sign-extended.
    quant: array<vec4<i32>, 16>,
}

@group(0) @binding(1) var<storage, read> jobs: array<Job>;
// Quantised coefficients, compact, per job from `coef_base` (src/jpeg/compact.rs): a table word
// per block plus one, `start << 1 | wide`, the blocks in the order `table_index` gives, then a
// stream of 16-bit half-words (two per word, the lower first) from which block b's entries run
// from its start to block b + 1's. An entry is one non-zero coefficient: `index << 10 | value`
// (10-bit two's complement), or in a wide block two half-words, the index and the 16-bit value.
// Most coefficients are zero.
@group(0) @binding(2) var<storage, read> coefs: array<u32>;
// Output planes, four samples per word (lowest byte first).
@group(0) @binding(3) var<storage, read_write> samples: array<u32>;
// Dense coefficients that stage 0 decoded on the GPU.
@group(0) @binding(4) var<storage, read> decoded: array<u32>;

// This invocation's job.
var<private> job: u32;

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

// The current block's quantised coefficients, natural order.
var<private> block_coefs: array<i32, 64>;

// Where block (bx, by) is in the compact table. Mirror of `BlockOrder::position`.
fn table_index(bx: u32, by: u32) -> u32 {
    let w = jobs[job].table_mcu_w;
    let h = jobs[job].table_mcu_h;
    let mcu = (by / h) * jobs[job].table_mcus_per_row + bx / w;
    return mcu * w * h + (by % h) * w + bx % w;
}

// The table's block `block`, quantised, natural order. Dense blocks go straight to registers;
// compact ones are scattered through `block_coefs` first (indexed by what the stream says).
fn block_coefficients(block: u32) -> array<i32, 64> {
    if jobs[job].dense != 0u {
        var c: array<i32, 64>;
        let at = jobs[job].coef_base + block * 32u;
        for (var w = 0u; w < 32u; w++) {
            let pair = decoded[at + w];
            c[2u * w] = bitcast<i32>(pair << 16u) >> 16u;
            c[2u * w + 1u] = bitcast<i32>(pair) >> 16u;
        }
        return c;
    }
    load_compact(block);
    return block_coefs;
}

// Loads the table's block `block` into `block_coefs`.
fn load_block(block: u32) {
    block_coefs = block_coefficients(block);
}

// Scatters the compact table's block `block` into `block_coefs`.
fn load_compact(block: u32) {
    for (var i = 0u; i < 64u; i++) {
        block_coefs[i] = 0;
    }
    let base = jobs[job].coef_base;
    let stream = base + jobs[job].table_blocks + 1u;
    let first = coefs[base + block];
    let end = coefs[base + block + 1u] >> 1u;
    if (first & 1u) == 0u {
        for (var p = first >> 1u; p < end; p++) {
            let entry = half_word(stream, p);
            block_coefs[entry >> 10u] = bitcast<i32>(entry << 22u) >> 22u;
        }
    } else {
        for (var p = first >> 1u; p < end; p += 2u) {
            let value = half_word(stream, p + 1u);
            block_coefs[half_word(stream, p) & 63u] = bitcast<i32>(value << 16u) >> 16u;
        }
    }
}

// Half-word `p` of the entry stream that starts at word `stream`.
fn half_word(stream: u32, p: u32) -> u32 {
    return (coefs[stream + p / 2u] >> (16u * (p % 2u))) & 0xFFFFu;
}

// Quantised coefficient i (natural order) of the loaded block.
fn coef(block: u32, i: u32) -> i32 {
    return block_coefs[i];
}

// Sign-extends the 16-bit lane: the dequantised coefficient as pmullw leaves it.
fn dequantised(block: u32, i: u32) -> i32 {
    return wrap16(coef(block, i) * jobs[job].quant[i / 4u][i % 4u]);
}

// The reduced 4-point kernel (inputs 0, 1, 2, 3, 5, 6, 7), before descaling.
fn kernel_4(x: array<i32, 8>) -> vec4<i32> {
    let tmp0 = x[0] << (CONST_BITS + 1u);
    let tmp2 = madd(x[2], FIX_1_847759065, x[6], -FIX_0_765366865);
    let tmp10 = tmp0 + tmp2;
    let tmp12 = tmp0 - tmp2;
    let odd0 = madd(x[7], -1730, x[5], 11893) + madd(x[3], -17799, x[1], 8697);
    let odd2 = madd(x[7], -4176, x[5], -4926) + madd(x[3], FIX_0_899976223, x[1], FIX_2_562915447);
    return vec4<i32>(tmp10 + odd2, tmp12 + odd0, tmp12 - odd0, tmp10 - odd2);
}

// The reduced 2-point kernel (inputs 0, 1, 3, 5, 7), before descaling.
fn kernel_2(x: array<i32, 8>) -> vec2<i32> {
    let tmp10 = x[0] << (CONST_BITS + 2u);
    let tmp0 = madd(x[1], 29692, x[3], -10426) + madd(x[5], 6967, x[7], -5906);
    return vec2<i32>(tmp10 + tmp0, tmp10 - tmp0);
}

// libjpeg's range-limit table of the C 1x1 IDCT (wraps mod 1024).
fn range_limit(x: i32) -> u32 {
    let m = x & 1023;
    if m < 128 {
        return u32(m + 128);
    }
    if m < 512 {
        return 255u;
    }
    if m < 896 {
        return 0u;
    }
    return u32(m - 896);
}

fn level_shift(x: i32) -> u32 {
    return u32(clamp(x, -128, 127) + 128);
}

// The samples of one reduced block, row-major with `size` samples per row (4x4 at most).
var<private> out: array<u32, 16>;

// The 8x8 IDCT of `coefficients` (quantised, natural order): its rows of samples, two words
// each. Every index is a constant once the loops unroll, so the block stays in registers.
fn idct_8x8(coefficients: array<i32, 64>) -> array<u32, 16> {
    var c = coefficients;
    var d: array<i32, 64>;
    var rows_zero = true;
    for (var i = 0u; i < 64u; i++) {
        d[i] = wrap16(c[i] * jobs[job].quant[i / 4u][i % 4u]);
        if i >= 8u && c[i] != 0 {
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
    // Pass 2: rows, then the level shift with a clamp to 0..=255, four samples a word.
    var words: array<u32, 16>;
    for (var r = 0u; r < 8u; r++) {
        let b = r * 8u;
        var row = kernel(
            array<i32, 8>(ws[b], ws[b + 1u], ws[b + 2u], ws[b + 3u], ws[b + 4u], ws[b + 5u], ws[b + 6u], ws[b + 7u]),
            CONST_BITS + PASS1_BITS + 3u,
        );
        for (var w = 0u; w < 2u; w++) {
            var word = 0u;
            for (var k = 0u; k < 4u; k++) {
                word |= level_shift(row[4u * w + k]) << (8u * k);
            }
            words[2u * r + w] = word;
        }
    }
    return words;
}

fn idct_4x4(block: u32) {
    var d: array<i32, 64>;
    var rows_zero = true;
    for (var i = 0u; i < 64u; i++) {
        d[i] = dequantised(block, i);
        let row = i / 8u;
        if row != 0u && row != 4u && coef(block, i) != 0 {
            rows_zero = false;
        }
    }
    var ws: array<i32, 32>;
    for (var u = 0u; u < 8u; u++) {
        if rows_zero {
            for (var k = 0u; k < 4u; k++) {
                ws[k * 8u + u] = wrap16(d[u] << PASS1_BITS);
            }
        } else if u != 4u {
            let column = kernel_4(array<i32, 8>(d[u], d[8u + u], d[16u + u], d[24u + u], d[32u + u], d[40u + u], d[48u + u], d[56u + u]));
            for (var k = 0u; k < 4u; k++) {
                ws[k * 8u + u] = sat16(descale(column[k], CONST_BITS - PASS1_BITS + 1u));
            }
        }
    }
    for (var r = 0u; r < 4u; r++) {
        let b = r * 8u;
        let row = kernel_4(array<i32, 8>(ws[b], ws[b + 1u], ws[b + 2u], ws[b + 3u], ws[b + 4u], ws[b + 5u], ws[b + 6u], ws[b + 7u]));
        for (var k = 0u; k < 4u; k++) {
            out[r * 4u + k] = level_shift(descale(row[k], CONST_BITS + PASS1_BITS + 3u + 1u));
        }
    }
}

fn idct_2x2(block: u32) {
    var ws: array<i32, 16>;
    for (var u = 0u; u < 8u; u++) {
        if u == 0u || u % 2u == 1u {
            let column = kernel_2(array<i32, 8>(
                dequantised(block, u), dequantised(block, 8u + u), 0, dequantised(block, 24u + u),
                0, dequantised(block, 40u + u), 0, dequantised(block, 56u + u),
            ));
            ws[u] = descale(column.x, CONST_BITS - PASS1_BITS + 2u);
            ws[8u + u] = descale(column.y, CONST_BITS - PASS1_BITS + 2u);
        }
    }
    for (var r = 0u; r < 2u; r++) {
        let b = r * 8u;
        // Between the passes the odd inputs are saturated to 16 bits; the DC term stays 32-bit.
        let row = kernel_2(array<i32, 8>(ws[b], sat16(ws[b + 1u]), 0, sat16(ws[b + 3u]), 0, sat16(ws[b + 5u]), 0, sat16(ws[b + 7u])));
        out[r * 2u] = level_shift(descale(row.x, CONST_BITS + PASS1_BITS + 3u + 2u));
        out[r * 2u + 1u] = level_shift(descale(row.y, CONST_BITS + PASS1_BITS + 3u + 2u));
    }
}

fn idct_1x1(block: u32) {
    // The C code: the product in 32 bits (no 16-bit lane), then the range-limit table.
    let dc = coef(block, 0u) * jobs[job].quant[0][0];
    out[0] = range_limit(descale(dc, 3u));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let global = invocation(id, groups);
    job = find_job(global);
    if job >= arrayLength(&jobs) {
        return;
    }
    let index = global - starts[job];
    let per = jobs[job].blocks_per_invocation;
    let groups_per_row = (jobs[job].width_in_blocks + per - 1u) / per;
    let gx = index % groups_per_row;
    let by = index / groups_per_row;
    if by >= jobs[job].height_in_blocks {
        return;
    }
    let size = jobs[job].idct_size;
    let row_words = jobs[job].sample_row_words;
    if size == 8u {
        // One block an invocation: its eight rows of two words.
        let words = idct_8x8(block_coefficients(table_index(gx, by)));
        for (var r = 0u; r < 8u; r++) {
            let at = jobs[job].sample_base + (by * 8u + r) * row_words + gx * 2u;
            samples[at] = words[2u * r];
            samples[at + 1u] = words[2u * r + 1u];
        }
        return;
    }
    // Samples of this invocation's blocks (reduced sizes), row by row, packed four to a word.
    var words: array<u32, 16>;
    for (var j = 0u; j < per; j++) {
        let bx = gx * per + j;
        if bx >= jobs[job].width_in_blocks {
            break;
        }
        let block = table_index(bx, by);
        load_block(block);
        switch size {
            case 4u: { idct_4x4(block); }
            case 2u: { idct_2x2(block); }
            default: { idct_1x1(block); }
        }
        for (var r = 0u; r < size; r++) {
            for (var k = 0u; k < size; k++) {
                let byte = j * size + k;
                words[r * 2u + byte / 4u] |= out[r * size + k] << (8u * (byte % 4u));
            }
        }
    }
    let words_per_row = max(size * per / 4u, 1u);
    for (var r = 0u; r < size; r++) {
        for (var w = 0u; w < words_per_row; w++) {
            let at = (by * size + r) * row_words + gx * words_per_row + w;
            samples[jobs[job].sample_base + at] = words[r * 2u + w];
        }
    }
}

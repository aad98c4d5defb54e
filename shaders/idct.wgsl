// Stage 1: dequantise + inverse DCT. Mirror of src/reference/idct.rs: libjpeg-turbo's ISLOW with
// the 16-bit lanes of its AVX2 version (what Pillow runs), and for draft decoding its reduced
// 4x4 and 2x2 IDCTs (SSE2 lanes) and 1x1. i32 arithmetic wraps; descales are arithmetic shifts.
// Full size runs as `main_8x8`, eight invocations a block; the reduced sizes as `main`, where
// one invocation covers the blocks whose samples fill whole output words: one block for size 4,
// two for size 2, four for size 1. A job is one component of one image.

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
// Dense coefficients that stage 0 decoded on the GPU, a block's row (four words) an element:
// loads of whole rows, as neighbouring invocations read blocks far apart.
@group(0) @binding(4) var<storage, read> decoded: array<vec4<u32>>;

// This invocation's job, and where its coefficients are (`main`).
var<private> job: u32;
var<private> job_dense: bool;
var<private> job_coef_base: u32;

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

// The reduced sizes' current block when compact (`load_block`), laid out as a dense one.
var<private> block_rows: array<vec4<u32>, 8>;

// Where block (bx, by) is in the compact table. Mirror of `BlockOrder::position`.
fn table_index(bx: u32, by: u32) -> u32 {
    let w = jobs[job].table_mcu_w;
    let h = jobs[job].table_mcu_h;
    let mcu = (by / h) * jobs[job].table_mcus_per_row + bx / w;
    return mcu * w * h + (by % h) * w + bx % w;
}

// Makes the table's block `block` the one `quantised_row` reads (reduced sizes): a compact one
// is scattered into `block_rows`; a dense one is read where it lies, only the rows the reduced
// IDCT needs.
fn load_block(block: u32) {
    if job_dense {
        return;
    }
    for (var r = 0u; r < 8u; r++) {
        block_rows[r] = vec4<u32>(0u);
    }
    let entries = compact_entries(block);
    for (var p = entries.x; p < entries.y; p += entries.z) {
        let entry = compact_entry(p, entries.z);
        let i = u32(entry.x);
        block_rows[i / 8u][(i % 8u) / 2u] |= (bitcast<u32>(entry.y) & 0xFFFFu) << (16u * (i % 2u));
    }
}

// Where block `block`'s entries lie in the compact stream: its first half-word, the half-word
// after its last, and half-words an entry (1, or 2 in a wide block).
fn compact_entries(block: u32) -> vec3<u32> {
    let base = jobs[job].coef_base;
    let first = coefs[base + block];
    return vec3<u32>(first >> 1u, coefs[base + block + 1u] >> 1u, 1u + (first & 1u));
}

// The entry at half-word `p` of the compact stream, `size` half-words long: (natural index,
// value).
fn compact_entry(p: u32, size: u32) -> vec2<i32> {
    let stream = jobs[job].coef_base + jobs[job].table_blocks + 1u;
    let head = half_word(stream, p);
    if size == 1u {
        return vec2<i32>(i32(head >> 10u), bitcast<i32>(head << 22u) >> 22u);
    }
    let value = half_word(stream, p + 1u);
    return vec2<i32>(i32(head & 63u), bitcast<i32>(value << 16u) >> 16u);
}

// Half-word `p` of the entry stream that starts at word `stream`.
fn half_word(stream: u32, p: u32) -> u32 {
    return (coefs[stream + p / 2u] >> (16u * (p % 2u))) & 0xFFFFu;
}

// Row `r` of the loaded block's quantised coefficients: four words, two 16-bit values each.
fn quantised_row(block: u32, r: u32) -> vec4<u32> {
    if job_dense {
        return decoded[(job_coef_base + block * 32u) / 4u + r];
    }
    return block_rows[r];
}

// A quantised row dequantised as pmullw leaves it (16-bit lanes): columns 0..3, then 4..7.
fn dequantise_row(words: vec4<u32>, r: u32) -> array<vec4<i32>, 2> {
    let low = bitcast<vec4<i32>>(words << vec4<u32>(16u)) >> vec4<u32>(16u);
    let high = bitcast<vec4<i32>>(words) >> vec4<u32>(16u);
    return array<vec4<i32>, 2>(
        wrap16x4(vec4<i32>(low.x, high.x, low.y, high.y) * jobs[job].quant[2u * r]),
        wrap16x4(vec4<i32>(low.z, high.z, low.w, high.w) * jobs[job].quant[2u * r + 1u]),
    );
}

// Row `r`, dequantised.
fn dequantised_row(block: u32, r: u32) -> array<vec4<i32>, 2> {
    return dequantise_row(quantised_row(block, r), r);
}

// Column `u` of rows held as halves (`rows[k][u / 4]`), the rows as lanes.
fn column_of(rows: array<array<vec4<i32>, 2>, 4>, u: u32) -> vec4<i32> {
    let h = u / 4u;
    let c = u % 4u;
    return vec4<i32>(rows[0][h][c], rows[1][h][c], rows[2][h][c], rows[3][h][c]);
}

// The vector forms of the lane helpers, four lanes at a time.
fn wrap16x4(x: vec4<i32>) -> vec4<i32> {
    return (x << vec4<u32>(16u)) >> vec4<u32>(16u);
}

fn sat16x4(x: vec4<i32>) -> vec4<i32> {
    return clamp(x, vec4<i32>(-32768), vec4<i32>(32767));
}

fn descale4(x: vec4<i32>, n: u32) -> vec4<i32> {
    return (x + vec4<i32>(1 << (n - 1u))) >> vec4<u32>(n);
}

fn level_shift4(x: vec4<i32>) -> vec4<u32> {
    return vec4<u32>(clamp(x, vec4<i32>(-128), vec4<i32>(127)) + vec4<i32>(128));
}

// Four samples a lane packed into a word each, the first in the lowest byte.
fn pack_samples(s: array<vec4<u32>, 4>) -> vec4<u32> {
    return s[0] | (s[1] << vec4<u32>(8u)) | (s[2] << vec4<u32>(16u)) | (s[3] << vec4<u32>(24u));
}

// The reduced 4-point kernel (inputs 0, 1, 2, 3, 5, 6, 7), before descaling, on four lanes.
fn kernel_4(x: array<vec4<i32>, 8>) -> array<vec4<i32>, 4> {
    let tmp0 = x[0] << vec4<u32>(CONST_BITS + 1u);
    let tmp2 = x[2] * FIX_1_847759065 - x[6] * FIX_0_765366865;
    let tmp10 = tmp0 + tmp2;
    let tmp12 = tmp0 - tmp2;
    let odd0 = x[7] * -1730 + x[5] * 11893 + x[3] * -17799 + x[1] * 8697;
    let odd2 = x[7] * -4176 + x[5] * -4926 + x[3] * FIX_0_899976223 + x[1] * FIX_2_562915447;
    return array<vec4<i32>, 4>(tmp10 + odd2, tmp12 + odd0, tmp12 - odd0, tmp10 - odd2);
}

// The reduced 2-point kernel (inputs 0, 1, 3, 5, 7), before descaling, on four lanes.
fn kernel_2(x: array<vec4<i32>, 8>) -> array<vec4<i32>, 2> {
    let tmp10 = x[0] << vec4<u32>(CONST_BITS + 2u);
    let tmp0 = x[1] * 29692 + x[3] * -10426 + x[5] * 6967 + x[7] * -5906;
    return array<vec4<i32>, 2>(tmp10 + tmp0, tmp10 - tmp0);
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


// The 4x4 IDCT: its four rows of samples, a word each. Both passes run four lanes at a time:
// the column pass on columns 0..3 and 4..7 (column 4, which the row pass does not read, too),
// the row pass on the four rows.
fn idct_4x4(block: u32) -> vec4<u32> {
    var d: array<array<vec4<i32>, 2>, 8>;
    // When no coefficient is set outside rows 0 and 4, the SIMD code shifts the first row.
    var others = vec4<u32>(0u);
    for (var r = 0u; r < 8u; r++) {
        let words = quantised_row(block, r);
        d[r] = dequantise_row(words, r);
        if r != 0u && r != 4u {
            others |= words;
        }
    }
    var ws: array<array<vec4<i32>, 2>, 4>;
    for (var h = 0u; h < 2u; h++) {
        if all(others == vec4<u32>(0u)) {
            for (var k = 0u; k < 4u; k++) {
                ws[k][h] = wrap16x4(d[0][h] << vec4<u32>(PASS1_BITS));
            }
        } else {
            let column = kernel_4(array<vec4<i32>, 8>(d[0][h], d[1][h], d[2][h], d[3][h], d[4][h], d[5][h], d[6][h], d[7][h]));
            for (var k = 0u; k < 4u; k++) {
                ws[k][h] = sat16x4(descale4(column[k], CONST_BITS - PASS1_BITS + 1u));
            }
        }
    }
    let row = kernel_4(array<vec4<i32>, 8>(column_of(ws, 0u), column_of(ws, 1u), column_of(ws, 2u), column_of(ws, 3u), column_of(ws, 4u), column_of(ws, 5u), column_of(ws, 6u), column_of(ws, 7u)));
    var samples: array<vec4<u32>, 4>;
    for (var c = 0u; c < 4u; c++) {
        samples[c] = level_shift4(descale4(row[c], CONST_BITS + PASS1_BITS + 3u + 1u));
    }
    return pack_samples(samples);
}

// The 2x2 IDCT: its two rows of samples, in the low half of a word each. Rows 2, 4 and 6 do not
// count; both passes run four lanes at a time (columns, then the two rows).
fn idct_2x2(block: u32) -> vec2<u32> {
    var d: array<array<vec4<i32>, 2>, 8>;
    for (var r = 0u; r < 8u; r++) {
        if r == 0u || r % 2u == 1u {
            d[r] = dequantised_row(block, r);
        }
    }
    // Rows 0 and 1 of the column pass, as the first two of four.
    var ws: array<array<vec4<i32>, 2>, 4>;
    for (var h = 0u; h < 2u; h++) {
        let zero = vec4<i32>(0);
        let column = kernel_2(array<vec4<i32>, 8>(d[0][h], d[1][h], zero, d[3][h], zero, d[5][h], zero, d[7][h]));
        for (var k = 0u; k < 2u; k++) {
            ws[k][h] = descale4(column[k], CONST_BITS - PASS1_BITS + 2u);
        }
    }
    // Between the passes the odd inputs are saturated to 16 bits; the DC term stays 32-bit.
    let zero = vec4<i32>(0);
    let row = kernel_2(array<vec4<i32>, 8>(
        column_of(ws, 0u), sat16x4(column_of(ws, 1u)), zero, sat16x4(column_of(ws, 3u)),
        zero, sat16x4(column_of(ws, 5u)), zero, sat16x4(column_of(ws, 7u)),
    ));
    let left = level_shift4(descale4(row[0], CONST_BITS + PASS1_BITS + 3u + 2u));
    let right = level_shift4(descale4(row[1], CONST_BITS + PASS1_BITS + 3u + 2u));
    return (left | (right << vec4<u32>(8u))).xy;
}

// The 1x1 IDCT: its one sample.
fn idct_1x1(block: u32) -> u32 {
    // The C code: the product in 32 bits (no 16-bit lane), then the range-limit table.
    let dc = (bitcast<i32>(quantised_row(block, 0u).x << 16u) >> 16u) * jobs[job].quant[0][0];
    return range_limit(descale(dc, 3u));
}

// The full-size IDCT, eight invocations a block (a job's invocations are eight times its
// blocks, so a workgroup holds eight whole blocks): invocation `lane` of a block loads and
// dequantises its row, runs the column pass on its column and the row pass on its row, the
// block in workgroup memory between the steps.
var<workgroup> tiles: array<array<i32, 64>, 8>;
// Per block and lane: whether the lane's row holds a non-zero quantised coefficient.
var<workgroup> rows_set: array<array<u32, 8>, 8>;

@compute @workgroup_size(64)
fn main_8x8(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let global = invocation(id, groups);
    let lane = lid % 8u;
    let tile = lid / 8u;
    job = find_job(global);
    // Every invocation reaches every barrier; only those with a block do the work.
    var has_block = false;
    var bx = 0u;
    var by = 0u;
    var block = 0u;
    if job < arrayLength(&jobs) {
        let index = (global - starts[job]) / 8u;
        bx = index % jobs[job].width_in_blocks;
        by = index / jobs[job].width_in_blocks;
        has_block = by < jobs[job].height_in_blocks;
        block = table_index(bx, by);
    }
    let dense = has_block && jobs[job].dense != 0u;
    let compact = has_block && jobs[job].dense == 0u;
    // Row `lane` of the quantised block: dense from its four words, compact from zeros and then
    // the block's entries, eight lanes taking every eighth.
    if dense {
        let words = decoded[(jobs[job].coef_base + block * 32u) / 4u + lane];
        for (var w = 0u; w < 4u; w++) {
            let pair = words[w];
            tiles[tile][lane * 8u + 2u * w] = bitcast<i32>(pair << 16u) >> 16u;
            tiles[tile][lane * 8u + 2u * w + 1u] = bitcast<i32>(pair) >> 16u;
        }
    } else if compact {
        for (var k = 0u; k < 8u; k++) {
            tiles[tile][lane * 8u + k] = 0;
        }
    }
    workgroupBarrier();
    if compact {
        let entries = compact_entries(block);
        for (var p = entries.x + lane * entries.z; p < entries.y; p += 8u * entries.z) {
            let entry = compact_entry(p, entries.z);
            tiles[tile][entry.x] = entry.y;
        }
    }
    workgroupBarrier();
    // Dequantise the row in place (16-bit lanes, as pmullw leaves them).
    if has_block {
        var nonzero = 0u;
        for (var k = 0u; k < 8u; k++) {
            let i = lane * 8u + k;
            let c = tiles[tile][i];
            nonzero |= select(0u, 1u, c != 0);
            tiles[tile][i] = wrap16(c * jobs[job].quant[i / 4u][i % 4u]);
        }
        rows_set[tile][lane] = nonzero;
    }
    workgroupBarrier();
    // Pass 1: column `lane`, in place (no other lane touches it). When no coefficient below the
    // first row is set, the SIMD code shifts the first row in 16 bits instead.
    if has_block {
        var rows_zero = true;
        for (var r = 1u; r < 8u; r++) {
            rows_zero = rows_zero && rows_set[tile][r] == 0u;
        }
        let u = lane;
        if rows_zero {
            let value = wrap16(tiles[tile][u] << PASS1_BITS);
            for (var k = 0u; k < 8u; k++) {
                tiles[tile][k * 8u + u] = value;
            }
        } else {
            let t = &tiles[tile];
            let column = kernel(
                array<i32, 8>((*t)[u], (*t)[8u + u], (*t)[16u + u], (*t)[24u + u], (*t)[32u + u], (*t)[40u + u], (*t)[48u + u], (*t)[56u + u]),
                CONST_BITS - PASS1_BITS,
            );
            // Written out, as is pass 2's packing: an array indexed by a loop's counter may be
            // kept in memory rather than in registers (with both as loops, this stage took 45%
            // longer on an H100).
            tiles[tile][u] = column[0];
            tiles[tile][8u + u] = column[1];
            tiles[tile][16u + u] = column[2];
            tiles[tile][24u + u] = column[3];
            tiles[tile][32u + u] = column[4];
            tiles[tile][40u + u] = column[5];
            tiles[tile][48u + u] = column[6];
            tiles[tile][56u + u] = column[7];
        }
    }
    workgroupBarrier();
    // Pass 2: row `lane`, then the level shift with a clamp to 0..=255, four samples a word.
    if has_block {
        let b = lane * 8u;
        let t = &tiles[tile];
        let row = kernel(
            array<i32, 8>((*t)[b], (*t)[b + 1u], (*t)[b + 2u], (*t)[b + 3u], (*t)[b + 4u], (*t)[b + 5u], (*t)[b + 6u], (*t)[b + 7u]),
            CONST_BITS + PASS1_BITS + 3u,
        );
        let at = jobs[job].sample_base + (by * 8u + lane) * jobs[job].sample_row_words + bx * 2u;
        samples[at] = level_shift(row[0]) | (level_shift(row[1]) << 8u)
            | (level_shift(row[2]) << 16u) | (level_shift(row[3]) << 24u);
        samples[at + 1u] = level_shift(row[4]) | (level_shift(row[5]) << 8u)
            | (level_shift(row[6]) << 16u) | (level_shift(row[7]) << 24u);
    }
}

// The reduced sizes (4, 2, 1): one invocation covers the blocks whose samples fill whole output
// words.
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let global = invocation(id, groups);
    job = find_job(global);
    if job >= arrayLength(&jobs) {
        return;
    }
    job_dense = jobs[job].dense != 0u;
    job_coef_base = jobs[job].coef_base;
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
    // This invocation's word of each of its rows: its blocks' samples side by side.
    var rows = vec4<u32>(0u);
    for (var j = 0u; j < per; j++) {
        let bx = gx * per + j;
        if bx >= jobs[job].width_in_blocks {
            break;
        }
        let block = table_index(bx, by);
        load_block(block);
        switch size {
            case 4u: {
                rows = idct_4x4(block);
            }
            case 2u: {
                let pair = idct_2x2(block);
                rows.x |= pair.x << (16u * j);
                rows.y |= pair.y << (16u * j);
            }
            default: {
                rows.x |= idct_1x1(block) << (8u * j);
            }
        }
    }
    for (var r = 0u; r < size; r++) {
        samples[jobs[job].sample_base + (by * size + r) * row_words + gx] = rows[r];
    }
}

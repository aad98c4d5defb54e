// Stage 0: Huffman decoding of single-scan sequential JPEGs, by self-synchronising subsequences.
// Mirror of src/jpeg/parallel.rs (which explains the method): `sync_first` and then `sync` a few
// times find where each subsequence's first code starts, `prefix_local` and `prefix_groups`
// number the blocks and sum the DC differences before each subsequence (within its workgroup,
// then across a large job's workgroups), and `write` decodes each subsequence's blocks into
// dense coefficients. A job is one restart interval of an image (without restart markers, its
// whole scan): each starts afresh, as libjpeg does after a restart marker.

// One restart interval. Mirrored by `EntropyJob` in src/gpu/jobs.rs.
struct Job {
    // Where the interval's un-stuffed data starts in `data`, and its bits.
    data_base: u32,
    bit_len: u32,
    // Its first record in `spans`.
    first_span: u32,
    // Its place among its image's intervals.
    index: u32,
    // Its image in `images`, whose place picks its words in `flags`.
    image: u32,
}

// What an image's intervals share. Mirrored by `EntropyImage` in src/gpu/jobs.rs.
struct Image {
    // Where the Huffman tables start in `data`: scan component c's DC table is table 2c, its
    // AC table 2c + 1, TABLE_WORDS each.
    tables_base: u32,
    blocks_per_mcu: u32,
    // MCUs in the scan, and in each restart interval (the last may have fewer).
    mcus: u32,
    restart_mcus: u32,
    // Each block's scan component, two bits a block (block b at bit 2b).
    scan_comps: u32,
    // Each block of the MCU: scan_comp | comp << 4 | slot << 8 | per_mcu << 16.
    mcu_blocks: array<u32, 10>,
    // Where each frame component's dense coefficients start in `decoded`: 32 words a block,
    // blocks in the compact form's table order.
    out_base: array<u32, 4>,
}

@group(0) @binding(1) var<storage, read> jobs: array<Job>;
@group(0) @binding(7) var<storage, read> images: array<Image>;
// Every image's un-stuffed data (four bytes a word, the first byte highest) and tables.
@group(0) @binding(2) var<storage, read> data: array<u32>;
// Per subsequence, SPAN_WORDS words: the exit state (pos, block << 8 | k), the entry state it
// was decoded from, the blocks it owns and their DC differences per scan component, then the
// blocks and DC differences before it.
@group(0) @binding(3) var<storage, read_write> spans: array<u32>;
// Per image (`slot`), how many of its intervals were decoded (all: the image was; fewer: it must
// be decoded on the CPU); then per sync dispatch, each image's changes and the changes in all of
// them (`changes_word`). Cleared once before the stage, so a dispatch needs no clearing of its
// own.
@group(0) @binding(4) var<storage, read_write> flags: array<atomic<u32>>;
// Dense coefficients: two 16-bit values a word, natural order, the lower first. Cleared before
// the stage, so that `write` only sets the non-zero ones.
@group(0) @binding(5) var<storage, read_write> decoded: array<atomic<u32>>;
// The sync dispatch a pass belongs to (x; 0 is `sync_first`); for `write`, the last one.
@group(0) @binding(6) var<uniform> pass_dispatch: vec4<u32>;

// The word of `flags` that counts the changes of image `slot` in sync dispatch `dispatch`
// (with `slot` = the number of images: the changes in all of them).
fn changes_word(dispatch: u32, slot: u32) -> u32 {
    let count = arrayLength(&images);
    return count + dispatch * (count + 1u) + slot;
}

// Set when the pipeline is created, from the Rust constants of the same names: bits of data per
// thread (src/jpeg/parallel.rs), words of one Huffman table (src/jpeg/segment.rs) and of one
// subsequence's record (src/gpu/entropy.rs).
override SUBSEQUENCE_BITS: u32;
override TABLE_WORDS: u32;
override SPAN_WORDS: u32;
// No decoding reaches this position.
const NONE: u32 = 0xFFFFFFFFu;

// This invocation's job, and what decoding reads of it and of its image (loaded once).
var<private> job: u32;
var<private> job_image: u32;
var<private> job_data_base: u32;
var<private> job_data_words: u32;
var<private> job_bit_len: u32;
var<private> job_first_span: u32;
var<private> job_subsequences: u32;
var<private> job_first_mcu: u32;
var<private> job_mcus: u32;
var<private> job_tables_base: u32;
var<private> job_blocks_per_mcu: u32;
// Each block's scan component, two bits a block (a register, where an array would not be).
var<private> job_scan_comps: u32;

// Sets `job` to `j` and loads what decoding reads of it.
fn load_job(j: u32) {
    job = j;
    if j >= arrayLength(&jobs) {
        return;
    }
    let image = jobs[j].image;
    job_image = image;
    job_data_base = jobs[j].data_base;
    job_bit_len = jobs[j].bit_len;
    job_data_words = (job_bit_len + 31u) / 32u;
    job_first_span = jobs[j].first_span;
    job_subsequences = max((job_bit_len + SUBSEQUENCE_BITS - 1u) / SUBSEQUENCE_BITS, 1u);
    let restart_mcus = images[image].restart_mcus;
    job_first_mcu = jobs[j].index * restart_mcus;
    job_mcus = min(restart_mcus, images[image].mcus - job_first_mcu);
    job_tables_base = images[image].tables_base;
    job_blocks_per_mcu = images[image].blocks_per_mcu;
    job_scan_comps = images[image].scan_comps;
}

// A decoder's state: the next bit, and block << 8 | k (k: zigzag index of the next
// coefficient, 0 when the DC code comes next).
struct State {
    pos: u32,
    bk: u32,
}

// What `step` read.
const UNIT_DC: u32 = 0u;
const UNIT_AC: u32 = 1u;
const UNIT_RUN: u32 = 2u;
var<private> unit_kind: u32;
var<private> unit_scan_comp: u32;
var<private> unit_k: u32;
var<private> unit_value: i32;

fn data_word(i: u32) -> u32 {
    if i < job_data_words {
        return data[job_data_base + i];
    }
    return 0u;
}

// The data words from `reader_word` on, three of them, so that the next step's bits are in
// registers and the word after them is already on its way.
var<private> reader_word: u32;
var<private> reader_0: u32;
var<private> reader_1: u32;
var<private> reader_2: u32;

// Starts reading at bit `pos`.
fn seek(pos: u32) {
    reader_word = pos / 32u;
    reader_0 = data_word(reader_word);
    reader_1 = data_word(reader_word + 1u);
    reader_2 = data_word(reader_word + 2u);
}

// The 32 bits from bit `pos`, at or after the last `seek`/`peek32`; zeros past the data.
fn peek32(pos: u32) -> u32 {
    // A step reads at most 31 bits, so this moves one word at a time.
    while reader_word < pos / 32u {
        reader_word += 1u;
        reader_0 = reader_1;
        reader_1 = reader_2;
        reader_2 = data_word(reader_word + 2u);
    }
    let shift = pos % 32u;
    if shift == 0u {
        return reader_0;
    }
    return (reader_0 << shift) | (reader_1 >> (32u - shift));
}

// Decodes the symbol at the top of `bits` with table `t`: vec2(code length, symbol).
fn decode_symbol(t: u32, bits: u32) -> vec2<u32> {
    let base = job_tables_base + t * TABLE_WORDS;
    let entry = data[base + (bits >> 23u)];
    if entry != 0u {
        return vec2<u32>(entry >> 8u, entry & 0xFFu);
    }
    var len = 10u;
    loop {
        if len > 16u {
            break;
        }
        let max_code = bitcast<i32>(data[base + 512u + len]);
        if bitcast<i32>(bits >> (32u - len)) <= max_code {
            break;
        }
        len += 1u;
    }
    if len > 16u {
        return vec2<u32>(17u, 0u);
    }
    let code = bitcast<i32>(bits >> (32u - len));
    let index = u32((code + bitcast<i32>(data[base + 530u + len])) & 0xFF);
    return vec2<u32>(len, data[base + 548u + index]);
}

// JPEG's EXTEND of the `size` bits after the `len`-bit code at the top of `bits`.
fn extended(bits: u32, len: u32, size: u32) -> i32 {
    if size == 0u {
        return 0;
    }
    let raw = (bits << len) >> (32u - size);
    if raw < (1u << (size - 1u)) {
        return i32(raw) - i32(1u << size) + 1;
    }
    return i32(raw);
}

// Decodes one code and the bits after it from `state`; says what it read in the unit_ vars.
fn step(state: State) -> State {
    let block = state.bk >> 8u;
    let k = state.bk & 0xFFu;
    let scan_comp = (job_scan_comps >> (2u * block)) & 3u;
    let bits = peek32(state.pos);
    var next_k: u32;
    var pos = state.pos;
    if k == 0u {
        let symbol = decode_symbol(2u * scan_comp, bits);
        let size = symbol.y;
        unit_kind = UNIT_DC;
        unit_scan_comp = scan_comp;
        unit_value = extended(bits, symbol.x, size);
        pos += symbol.x + size;
        next_k = 1u;
    } else {
        let symbol = decode_symbol(2u * scan_comp + 1u, bits);
        let run = symbol.y >> 4u;
        let size = symbol.y & 15u;
        pos += symbol.x + size;
        if size != 0u {
            unit_kind = UNIT_AC;
            unit_k = k + run;
            unit_value = extended(bits, symbol.x, size);
            next_k = k + run + 1u;
        } else {
            unit_kind = UNIT_RUN;
            next_k = select(64u, k + 16u, run == 15u);
        }
    }
    if next_k >= 64u {
        let next_block = block + 1u;
        return State(pos, select(next_block, 0u, next_block == job_blocks_per_mcu) << 8u);
    }
    return State(pos, (block << 8u) | next_k);
}

var<private> zigzag: array<u32, 64> = array<u32, 64>(
    0u, 1u, 8u, 16u, 9u, 2u, 3u, 10u, 17u, 24u, 32u, 25u, 18u, 11u, 4u, 5u,
    12u, 19u, 26u, 33u, 40u, 48u, 41u, 34u, 27u, 20u, 13u, 6u, 7u, 14u, 21u, 28u,
    35u, 42u, 49u, 56u, 57u, 50u, 43u, 36u, 29u, 22u, 15u, 23u, 30u, 37u, 44u, 51u,
    58u, 59u, 52u, 45u, 38u, 31u, 39u, 46u, 53u, 60u, 61u, 54u, 47u, 55u, 62u, 63u,
);

// Natural index of zigzag index k (past 63: 63, as libjpeg's table has it).
fn natural(k: u32) -> u32 {
    return zigzag[min(k, 63u)];
}

// Scan components 0 to 3, to add to one lane of a vector (which, indexed, would live in memory).
const COMPONENTS: vec4<u32> = vec4<u32>(0u, 1u, 2u, 3u);

// What decoding one subsequence found (`sync_span`).
var<private> span_blocks: u32;
var<private> span_dc: vec4<u32>;

// Decodes from `entry` every code that starts before bit `end`; returns the state after them.
fn sync_span(entry: State, end: u32) -> State {
    span_blocks = 0u;
    span_dc = vec4<u32>(0u);
    var state = entry;
    seek(state.pos);
    while state.pos < end {
        state = step(state);
        if unit_kind == UNIT_DC {
            span_blocks += 1u;
            let component = COMPONENTS == vec4<u32>(unit_scan_comp);
            span_dc += select(vec4<u32>(0u), vec4<u32>(bitcast<u32>(unit_value)), component);
        }
    }
    return state;
}

fn span_at(i: u32) -> u32 {
    return (job_first_span + i) * SPAN_WORDS;
}

fn exit_of(i: u32) -> State {
    let at = span_at(i);
    return State(spans[at], spans[at + 1u]);
}

// What a sync pass iterates on, in workgroup memory rather than in variables: lavapipe loses
// values that a loop with barriers carries from one iteration to the next. Per invocation, the
// state where its subsequence's decoding ended and the entry it was decoded from;
var<workgroup> shared_exits: array<State, 64>;
var<workgroup> shared_used: array<State, 64>;
// the iterations done, and the changes in the current one by its parity (one is reset while
// the other counts).
var<workgroup> iterations_done: u32;
var<workgroup> iteration_changes: array<atomic<u32>, 2>;

fn sync_pass(id: vec3<u32>, groups: vec3<u32>, lid: u32, first: bool) {
    let global = invocation(id, groups);
    // A dispatch after one that changed nothing in any image has nothing to do: every state
    // is proven, and each image's change count stays 0.
    let dispatch = pass_dispatch.x;
    let all_images = arrayLength(&images);
    let idle = !first && atomicLoad(&flags[changes_word(dispatch - 1u, all_images)]) == 0u;
    var j = arrayLength(&jobs);
    if !idle {
        j = find_job(global);
    }
    load_job(j);
    var working = job < arrayLength(&jobs);
    var i = 0u;
    if working {
        i = global - starts[job];
        // A job shares its workgroup with others only when it fits in it whole, so that states
        // travel through it as the mirror's workgroups carry them; invocations past its
        // subsequences are idle.
        working = i < job_subsequences;
    }
    var entry_from_dispatch = State(0u, 0u);
    var exit = State(NONE, 0u);
    var used = State(NONE, 0u);
    if working {
        let at = span_at(i);
        if !first {
            exit = State(spans[at], spans[at + 1u]);
            used = State(spans[at + 2u], spans[at + 3u]);
        }
        if i > 0u {
            if first {
                entry_from_dispatch = State(i * SUBSEQUENCE_BITS, 0u);
            } else {
                entry_from_dispatch = exit_of(i - 1u);
            }
        }
    }
    shared_exits[lid] = exit;
    shared_used[lid] = used;
    loop {
        let iteration = workgroupUniformLoad(&iterations_done);
        if iteration > 64u {
            break;
        }
        // The predecessor's exit of the iteration before; at first, and for the first thread,
        // what the dispatch before left (the guess, in the first dispatch).
        var entry = entry_from_dispatch;
        if iteration > 0u && lid > 0u && i > 0u {
            entry = shared_exits[lid - 1u];
        }
        let last_entry = shared_used[lid];
        // Every invocation has read its predecessor's exit before any writes its own.
        workgroupBarrier();
        if working && (entry.pos != last_entry.pos || entry.bk != last_entry.bk) {
            let exit = sync_span(entry, (i + 1u) * SUBSEQUENCE_BITS);
            shared_exits[lid] = exit;
            shared_used[lid] = entry;
            let at = span_at(i);
            spans[at] = exit.pos;
            spans[at + 1u] = exit.bk;
            spans[at + 2u] = entry.pos;
            spans[at + 3u] = entry.bk;
            spans[at + 4u] = span_blocks;
            for (var c = 0u; c < 4u; c++) {
                spans[at + 5u + c] = span_dc[c];
            }
            if !first {
                atomicAdd(&flags[changes_word(dispatch, job_image)], 1u);
            }
            atomicAdd(&iteration_changes[iteration % 2u], 1u);
        }
        let changes = workgroupUniformLoad(&iteration_changes[iteration % 2u]);
        if changes == 0u {
            break;
        }
        if lid == 0u {
            atomicAdd(&flags[changes_word(dispatch, all_images)], 1u);
            // The other counter was last read before this iteration's barriers.
            atomicStore(&iteration_changes[(iteration + 1u) % 2u], 0u);
            iterations_done = iteration + 1u;
        }
    }
}

@compute @workgroup_size(64)
fn sync_first(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    sync_pass(id, groups, lid, true);
}

@compute @workgroup_size(64)
fn sync(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    sync_pass(id, groups, lid, false);
}

// Per invocation, the five counts a prefix pass sums: blocks, then DC differences per scan
// component.
var<workgroup> scan_sums: array<array<u32, 5>, 64>;

// The five counts of subsequence record `at`: the blocks it owns and their DC differences.
fn owned_counts(at: u32) -> array<u32, 5> {
    return array<u32, 5>(spans[at + 4u], spans[at + 5u], spans[at + 6u], spans[at + 7u],
                         spans[at + 8u]);
}

fn write_sums(at: u32, sums: array<u32, 5>) {
    for (var v = 0u; v < 5u; v++) {
        spans[at + 9u + v] = sums[v];
    }
}

// Each invocation's inclusive sums of `own` over the invocations of its workgroup from
// `segment_start` (a local index at or before its own) to itself: a segmented Hillis-Steele
// scan in workgroup memory. Every invocation of the workgroup must call it.
fn scan_in_workgroup(lid: u32, segment_start: u32, own: array<u32, 5>) -> array<u32, 5> {
    var sums = own;
    scan_sums[lid] = sums;
    workgroupBarrier();
    for (var d = 1u; d < 64u; d *= 2u) {
        var add = array<u32, 5>(0u, 0u, 0u, 0u, 0u);
        if lid >= segment_start + d {
            add = scan_sums[lid - d];
        }
        workgroupBarrier();
        for (var v = 0u; v < 5u; v++) {
            sums[v] += add[v];
        }
        scan_sums[lid] = sums;
        workgroupBarrier();
    }
    return sums;
}

// The prefix, first pass: within each workgroup, each subsequence's exclusive sums over those
// of its job before it in the workgroup. A job of up to 64 subsequences lies in one workgroup,
// so these are its prefix; a larger one starts a workgroup and spans several, and the first
// record of each of its workgroups (whose exclusive sums within it are zero) receives the workgroup's total
// instead, for `prefix_groups`.
@compute @workgroup_size(64)
fn prefix_local(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let global = invocation(id, groups);
    load_job(find_job(global));
    var working = job < arrayLength(&jobs);
    var i = 0u;
    if working {
        i = global - starts[job];
        working = i < job_subsequences;
    }
    var own = array<u32, 5>(0u, 0u, 0u, 0u, 0u);
    // Where the job's part of the workgroup starts (an idle invocation sums nothing but its own
    // zeros).
    var segment_start = lid;
    if working {
        own = owned_counts(span_at(i));
        segment_start = lid - min(lid, i);
    }
    let inclusive = scan_in_workgroup(lid, segment_start, own);
    if !working {
        return;
    }
    let large = job_subsequences > 64u;
    if !large || lid > 0u {
        var exclusive = inclusive;
        for (var v = 0u; v < 5u; v++) {
            exclusive[v] -= own[v];
        }
        write_sums(span_at(i), exclusive);
    }
    // A large job's workgroups start at its subsequences 0, 64, ...: its last invocation in this
    // one has the total.
    if large && (lid == 63u || i + 1u == job_subsequences) {
        write_sums(span_at(i - lid), inclusive);
    }
}

// The prefix, second pass: per job of more than 64 subsequences (one workgroup each), the
// exclusive sums over its workgroups' totals, written in their place: the sums before each
// workgroup's first subsequence, to which `write` adds the sums within the workgroup.
@compute @workgroup_size(64)
fn prefix_groups(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let global = invocation(id, groups);
    load_job(find_job(global));
    // A large job's workgroup is its alone; small jobs take an invocation each, idle here (a
    // workgroup of them meets the barriers all the same).
    let working = job < arrayLength(&jobs) && job_subsequences > 64u;
    var first = 0u;
    var last = 0u;
    if working {
        let totals = (job_subsequences + 63u) / 64u;
        let chunk = (totals + 63u) / 64u;
        first = min(lid * chunk, totals);
        last = min(first + chunk, totals);
    }
    var own = array<u32, 5>(0u, 0u, 0u, 0u, 0u);
    for (var g = first; g < last; g++) {
        let total = owned_group_total(g);
        for (var v = 0u; v < 5u; v++) {
            own[v] += total[v];
        }
    }
    let inclusive = scan_in_workgroup(lid, 0u, own);
    var running = inclusive;
    for (var v = 0u; v < 5u; v++) {
        running[v] -= own[v];
    }
    for (var g = first; g < last; g++) {
        let at = span_at(g * 64u);
        let total = owned_group_total(g);
        write_sums(at, running);
        for (var v = 0u; v < 5u; v++) {
            running[v] += total[v];
        }
    }
}

// Workgroup `g` of the current job's total, as `prefix_local` left it.
fn owned_group_total(g: u32) -> array<u32, 5> {
    let at = span_at(g * 64u);
    return array<u32, 5>(spans[at + 9u], spans[at + 10u], spans[at + 11u], spans[at + 12u],
                         spans[at + 13u]);
}

// Sets coefficient `index` (natural order) of the block whose words start at `out` to `value`,
// in 16 bits. The word was cleared, and a block sets each coefficient once at most (zigzag
// indices only grow, and one that reaches 63 ends the block), so an OR sets it; an atomic OR
// needs no round trip, as its result is not read.
fn set_coefficient(out: u32, index: u32, value: i32) {
    let half = (bitcast<u32>(value) & 0xFFFFu) << (16u * (index % 2u));
    if half != 0u {
        atomicOr(&decoded[out + index / 2u], half);
    }
}

@compute @workgroup_size(64)
fn write(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let global = invocation(id, groups);
    load_job(find_job(global));
    if job >= arrayLength(&jobs) {
        return;
    }
    // An image whose states were still changing is left to the CPU.
    if atomicLoad(&flags[changes_word(pass_dispatch.x, job_image)]) != 0u {
        return;
    }
    let i = global - starts[job];
    if i >= job_subsequences {
        return;
    }
    var state = State(0u, 0u);
    if i > 0u {
        state = exit_of(i - 1u);
    }
    let at = span_at(i);
    var g = spans[at + 9u];
    var dc_pred = vec4<u32>(spans[at + 10u], spans[at + 11u], spans[at + 12u], spans[at + 13u]);
    // In a job of several workgroups, the sums are within the workgroup; its first record holds
    // those before it.
    if job_subsequences > 64u && i % 64u != 0u {
        let first = span_at(i - i % 64u);
        g += spans[first + 9u];
        dc_pred += vec4<u32>(spans[first + 10u], spans[first + 11u], spans[first + 12u],
                             spans[first + 13u]);
    }
    seek(state.pos);
    // The end of a block begun in the subsequence before belongs to it.
    for (var n = 0u; n < 64u && (state.bk & 0xFFu) != 0u; n++) {
        state = step(state);
    }
    let end = (i + 1u) * SUBSEQUENCE_BITS;
    let total = job_mcus * job_blocks_per_mcu;
    while state.pos < end && g < total {
        let mcu_block = images[job_image].mcu_blocks[state.bk >> 8u];
        let comp = (mcu_block >> 4u) & 15u;
        let slot = (mcu_block >> 8u) & 255u;
        let per_mcu = mcu_block >> 16u;
        let in_component = (job_first_mcu + g / job_blocks_per_mcu) * per_mcu + slot;
        let out = images[job_image].out_base[comp] + in_component * 32u;
        for (var n = 0u; n < 64u; n++) {
            state = step(state);
            if unit_kind == UNIT_DC {
                let component = COMPONENTS == vec4<u32>(unit_scan_comp);
                dc_pred += select(vec4<u32>(0u), vec4<u32>(bitcast<u32>(unit_value)), component);
                let predictions = dc_pred;
                set_coefficient(out, 0u, bitcast<i32>(predictions[unit_scan_comp]));
            } else if unit_kind == UNIT_AC {
                set_coefficient(out, natural(unit_k), unit_value);
            }
            if (state.bk & 0xFFu) == 0u {
                break;
            }
        }
        g += 1u;
        if g == total && state.pos <= job_bit_len {
            atomicAdd(&flags[job_image], 1u);
        }
    }
}

//! Self-synchronising parallel Huffman decoding: the CPU mirror of shaders/entropy.wgsl.
//!
//! A scan without restart markers is one long bit string whose codes can only be found by
//! decoding it from the start (with restart markers, each restart interval is one, decoded on
//! its own as an image's would be: the functions below take an [`IntervalData`]). The GPU cuts
//! it into subsequences of [`SUBSEQUENCE_BITS`] and gives each to one thread, which must guess
//! where its first code starts and where in the MCU it is.
//! A wrong guess decodes garbage for a while, but Huffman codes fall back into step with the
//! true decoding after a few codes, and in JPEG the place in the block and the MCU then follows
//! at an end of block (Weißenberger and Schmidt, "Massively parallel Huffman decoding on GPUs",
//! ICPP 2018). So:
//!
//! 1. **Sync** (a few dispatches): each thread decodes its subsequence from the state where its
//!    predecessor's decoding left the previous one (its guess, at first) and records where its
//!    own ends. Within a workgroup the threads repeat this until nothing changes, so a corrected
//!    state travels up to 64 subsequences a dispatch. A dispatch in which no thread of an image
//!    changed anything proves the image's states right: the first subsequence starts at the true
//!    start, and each later one from the exit its predecessor computed.
//! 2. **Prefix**: per interval, exclusive sums over the subsequences of the blocks each owns (a block
//!    belongs to the subsequence in which its DC code starts) and of its DC differences, per
//!    scan component (on the GPU in two passes: within each workgroup of 64 subsequences, then
//!    over a large interval's workgroups; the sums wrap, so their order does not change them).
//! 3. **Write**: each thread decodes its own blocks again, now knowing their numbers and DC
//!    predictions, and writes them as dense coefficients.
//!
//! An image whose states do not settle within [`sync_dispatches`], or whose last block needs
//! bits past the data (the CPU decoder would have run out, which it handles its own way), is
//! reported as not decoded; the caller decodes it on the CPU instead. Decoding is otherwise
//! libjpeg's, bit for bit: a code that matches nothing decodes as 0 after 17 bits, runs past
//! coefficient 63 land on 63, and DC predictions wrap in 32 bits and are stored in 16.

use super::huffman::extend;
use super::markers::ZIGZAG_TO_NATURAL;
use super::segment::{EntropySegment, IntervalData, TABLE_WORDS};

/// Bits of data per thread.
pub(crate) const SUBSEQUENCE_BITS: u32 = 1024;

/// Threads per workgroup: how far a corrected state can travel in one sync dispatch.
pub(crate) const WORKGROUP: usize = 64;

/// Most sync dispatches for an image; one not settled after its own is decoded on the CPU.
pub(crate) const MAX_SYNC_DISPATCHES: usize = 48;

/// Sync dispatches for an image whose wrong guesses correct themselves. Its corrections travel
/// a few subsequences, within a workgroup: every image of the benchmark sets, the shared
/// corpus and the test files settles by its second or third dispatch.
const SELF_CORRECTING_DISPATCHES: usize = 4;

/// Sync dispatches for `interval`: where wrong guesses of the block never correct themselves
/// ([`IntervalData::corrects_wrong_blocks`]), the right state may have to travel from the
/// first workgroup to the last, one a dispatch, and one more dispatch must change nothing;
/// else [`SELF_CORRECTING_DISPATCHES`]. A batch runs the most any of its images needs (so an
/// image the mirror gives up on may still settle on the GPU: exact either way).
pub(crate) fn sync_dispatches(interval: &IntervalData) -> usize {
    let across = subsequences(interval).div_ceil(WORKGROUP) + 1;
    // Comparing the tables costs more than decoding a short restart interval: asked only where
    // the answer changes the count.
    let dispatches = if across <= SELF_CORRECTING_DISPATCHES || interval.corrects_wrong_blocks() {
        across.min(SELF_CORRECTING_DISPATCHES)
    } else {
        across
    };
    dispatches.clamp(2, MAX_SYNC_DISPATCHES)
}

/// Where a decoder is: the bit it reads next, the block of the MCU it is in, and the zigzag
/// index of the next coefficient (0: the DC code comes next).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct State {
    pub pos: u32,
    pub block: u32,
    pub k: u32,
}

impl State {
    /// The start of the scan.
    pub const START: Self = Self {
        pos: 0,
        block: 0,
        k: 0,
    };

    /// A state no decoding reaches (no data is 4 GiB of bits long).
    const NONE: Self = Self {
        pos: u32::MAX,
        block: 0,
        k: 0,
    };
}

/// What one step of decoding read.
enum Unit {
    /// A DC difference of the block's scan component.
    Dc { scan_comp: usize, diff: i32 },
    /// A non-zero AC coefficient at zigzag index `k` (up to 78: past 63 it lands on 63).
    Ac { k: usize, value: i32 },
    /// A zero run or an end of block.
    Run,
}

/// What decoding one subsequence found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span {
    /// The state at the first code that starts in the next subsequence.
    pub exit: Option<State>,
    /// Blocks whose DC code starts in this subsequence.
    pub blocks: u32,
    /// Their DC differences, summed per scan component (wrapping).
    pub dc_sums: [i32; 4],
}

/// The 32 bits from bit `pos` of the data; zeros past it.
fn peek32(words: &[u32], pos: u32) -> u32 {
    let word = |i: usize| words.get(i).copied().unwrap_or(0);
    let (i, shift) = ((pos / 32) as usize, pos % 32);
    if shift == 0 {
        word(i)
    } else {
        word(i) << shift | word(i + 1) >> (32 - shift)
    }
}

/// Decodes the symbol at the top of `bits` with table `t` of `tables`: (code length, symbol).
/// Mirrors `HuffmanTable::decode` on the table's words.
fn decode_symbol(tables: &[u32], t: usize, bits: u32) -> (u32, u32) {
    let table = &tables[t * TABLE_WORDS..(t + 1) * TABLE_WORDS];
    let entry = table[(bits >> 23) as usize];
    if entry != 0 {
        return (entry >> 8, entry & 0xFF);
    }
    let (max_code, value_offset, symbols) = (&table[512..530], &table[530..548], &table[548..]);
    let mut len = 10;
    while (bits >> (32 - len)) as i32 > max_code[len as usize] as i32 {
        len += 1;
    }
    if len > 16 {
        return (17, 0);
    }
    let code = (bits >> (32 - len)) as i32;
    let index = (code.wrapping_add(value_offset[len as usize] as i32) & 0xFF) as usize;
    (len, symbols[index])
}

/// Decodes one code and the bits that follow it from `state`.
fn step(interval: &IntervalData, state: State) -> (State, Unit) {
    let block = interval.blocks[state.block as usize];
    let bits = peek32(interval.words, state.pos);
    let mut next = state;
    let unit;
    if state.k == 0 {
        let (len, size) = decode_symbol(interval.tables, 2 * block.scan_comp, bits);
        let diff = extend(extra_bits(bits, len, size), size);
        next.pos += len + size;
        next.k = 1;
        unit = Unit::Dc {
            scan_comp: block.scan_comp,
            diff,
        };
    } else {
        let (len, symbol) = decode_symbol(interval.tables, 2 * block.scan_comp + 1, bits);
        let (run, size) = (symbol >> 4, symbol & 15);
        next.pos += len + size;
        if size != 0 {
            let k = (state.k + run) as usize;
            unit = Unit::Ac {
                k,
                value: extend(extra_bits(bits, len, size), size),
            };
            next.k = k as u32 + 1;
        } else {
            unit = Unit::Run;
            next.k = if run == 15 { state.k + 16 } else { 64 };
        }
    }
    if next.k >= 64 {
        next.k = 0;
        next.block = (state.block + 1) % interval.blocks.len() as u32;
    }
    (next, unit)
}

/// The `size` bits after the `len`-bit code at the top of `bits` (len + size ≤ 31).
fn extra_bits(bits: u32, len: u32, size: u32) -> i32 {
    if size == 0 {
        0
    } else {
        ((bits << len) >> (32 - size)) as i32
    }
}

/// Decodes from `entry` every code that starts before bit `end`.
pub(crate) fn sync_span(interval: &IntervalData, entry: State, end: u32) -> Span {
    let mut span = Span::default();
    let mut state = entry;
    while state.pos < end {
        let (next, unit) = step(interval, state);
        if let Unit::Dc { scan_comp, diff } = unit {
            span.blocks += 1;
            span.dc_sums[scan_comp] = span.dc_sums[scan_comp].wrapping_add(diff);
        }
        state = next;
    }
    span.exit = Some(state);
    span
}

/// Subsequences of `interval`'s data (at least one).
pub(crate) fn subsequences(interval: &IntervalData) -> usize {
    (interval.bit_len.div_ceil(u64::from(SUBSEQUENCE_BITS)) as usize).max(1)
}

/// Decodes `segment` as the GPU does, interval by interval; per frame component, its blocks in
/// table order (64 coefficients each, natural order). `None` when the GPU would report the image
/// as not decoded.
pub(crate) fn decode(segment: &EntropySegment) -> Option<Vec<Vec<i16>>> {
    let mut planes = empty_planes(segment);
    for i in 0..segment.intervals.len() {
        decode_interval(&segment.interval(i), &mut planes)?;
    }
    Some(planes)
}

/// Decodes one interval into `planes`; `None` when the GPU would give up on it.
fn decode_interval(interval: &IntervalData, planes: &mut [Vec<i16>]) -> Option<()> {
    let spans = sync(interval)?;
    // Prefix: the blocks and DC predictions before each subsequence.
    let (mut first_block, mut dc_pred) = (0u32, [0i32; 4]);
    let mut complete = false;
    for i in 0..spans.len() {
        let entry = if i == 0 {
            State::START
        } else {
            spans[i - 1].exit?
        };
        let span = (entry, end_of(i));
        complete |= write_span(interval, span, first_block, dc_pred, planes);
        first_block = first_block.wrapping_add(spans[i].blocks);
        for (pred, sum) in dc_pred.iter_mut().zip(spans[i].dc_sums) {
            *pred = pred.wrapping_add(sum);
        }
    }
    complete.then_some(())
}

/// Decodes `segment` one MCU after another, as the CPU decoder does (once an interval's data has
/// run out, its MCUs after the one being decoded keep zero coefficients; the next interval starts
/// afresh): what an image the GPU gave up on decodes to. Per frame component, its blocks in
/// table order.
pub(crate) fn decode_sequential(segment: &EntropySegment) -> Vec<Vec<i16>> {
    let mut planes = empty_planes(segment);
    for i in 0..segment.intervals.len() {
        let data = segment.interval(i);
        let mut state = State::START;
        let mut dc_pred = [0i32; 4];
        for mcu in data.first_mcu..data.first_mcu + data.mcus {
            if u64::from(state.pos) > data.bit_len {
                break;
            }
            for layout in &segment.blocks {
                let at = layout.in_component(mcu) * 64;
                let block = &mut planes[layout.comp][at..at + 64];
                state = decode_block(&data, state, &mut dc_pred, block.try_into().expect("64"));
            }
        }
    }
    planes
}

/// Each frame component's blocks, zero.
fn empty_planes(segment: &EntropySegment) -> Vec<Vec<i16>> {
    let components = segment.blocks.iter().map(|b| b.comp + 1).max().unwrap_or(0);
    (0..components)
        .map(|c| {
            let per_mcu = segment.blocks.iter().filter(|b| b.comp == c).count();
            vec![0; segment.mcus * per_mcu * 64]
        })
        .collect()
}

/// Decodes the block that starts at `state` into `block`; returns the state after it.
fn decode_block(
    interval: &IntervalData,
    mut state: State,
    dc_pred: &mut [i32; 4],
    block: &mut [i16; 64],
) -> State {
    loop {
        let (next, unit) = step(interval, state);
        match unit {
            Unit::Dc { scan_comp, diff } => {
                dc_pred[scan_comp] = dc_pred[scan_comp].wrapping_add(diff);
                block[0] = dc_pred[scan_comp] as i16;
            }
            Unit::Ac { k, value } => block[ZIGZAG_TO_NATURAL[k]] = value as i16,
            Unit::Run => {}
        }
        state = next;
        if state.k == 0 {
            return state;
        }
    }
}

/// The first bit after subsequence `i`.
fn end_of(i: usize) -> u32 {
    (i as u32 + 1) * SUBSEQUENCE_BITS
}

/// The sync dispatches, workgroup by workgroup, each reading the exits the dispatch before left.
/// The workgroups are the interval's subsequences 64 at a time from its first, as on the GPU
/// (which packs jobs of up to 64 subsequences into shared workgroups, never splitting one).
/// The GPU may read newer ones, and may settle an image a dispatch sooner or later (on lavapipe,
/// an image whose guesses cannot correct themselves took one more when alone in its batch); once
/// settled, the spans are the same. The spans, once settled.
fn sync(interval: &IntervalData) -> Option<Vec<Span>> {
    let n = subsequences(interval);
    let guess = |i: usize| State {
        pos: i as u32 * SUBSEQUENCE_BITS,
        ..State::START
    };
    let mut spans = vec![Span::default(); n];
    let mut used = vec![State::NONE; n];
    for dispatch in 0..sync_dispatches(interval) {
        let before: Vec<Option<State>> = spans.iter().map(|s| s.exit).collect();
        let mut changes = 0;
        for group in (0..n).step_by(WORKGROUP) {
            let threads = group..(group + WORKGROUP).min(n);
            let mut changed = vec![false; threads.len()];
            for iteration in 0.. {
                // Every thread reads the state its predecessor left in the iteration before
                // (the workgroup's shared memory); the first thread, and every thread at first,
                // reads what the dispatch before left (the guess, in the first dispatch).
                let entries: Vec<State> = threads
                    .clone()
                    .map(|i| match (i, iteration == 0 || i == group) {
                        (0, _) => State::START,
                        (_, true) if dispatch == 0 => guess(i),
                        (_, true) => before[i - 1].unwrap_or(guess(i)),
                        (_, false) => spans[i - 1].exit.unwrap_or(guess(i)),
                    })
                    .collect();
                let mut any = false;
                for (i, entry) in threads.clone().zip(entries) {
                    if entry != used[i] {
                        spans[i] = sync_span(interval, entry, end_of(i));
                        used[i] = entry;
                        changed[i - group] = true;
                        any = true;
                    }
                }
                if !any {
                    break;
                }
            }
            changes += changed.iter().filter(|&&c| c).count();
        }
        if dispatch > 0 && changes == 0 {
            return Some(spans);
        }
    }
    None
}

/// Decodes the blocks subsequence `(entry, end)` of `interval` owns, the first numbered
/// `first_block` within the interval, with `dc_pred` as the DC predictions, into `planes`.
/// Returns whether it wrote the interval's last block within the data.
fn write_span(
    interval: &IntervalData,
    (entry, end): (State, u32),
    first_block: u32,
    mut dc_pred: [i32; 4],
    planes: &mut [Vec<i16>],
) -> bool {
    let total = interval.total_blocks() as u32;
    let mut state = entry;
    // The end of a block begun in the subsequence before belongs to it.
    while state.k != 0 {
        state = step(interval, state).0;
    }
    let mut g = first_block;
    let mut complete = false;
    while state.pos < end && g < total {
        let layout = interval.blocks[state.block as usize];
        let mut coefficients = [0i16; 64];
        state = decode_block(interval, state, &mut dc_pred, &mut coefficients);
        let mcu = interval.first_mcu + g as usize / interval.blocks.len();
        let at = layout.in_component(mcu) * 64;
        planes[layout.comp][at..at + 64].copy_from_slice(&coefficients);
        g += 1;
        if g == total {
            complete = u64::from(state.pos) <= interval.bit_len;
        }
    }
    complete
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jpeg::compact::tests::test_jpegs;
    use crate::jpeg::compact::BlockOrder;
    use crate::jpeg::{decode_coefficients, decode_for_gpu, Coefficients, Limits};

    /// Whether decoding some interval from its start needs bits past its data.
    fn runs_out(segment: &EntropySegment) -> bool {
        (0..segment.intervals.len()).any(|i| {
            let interval = segment.interval(i);
            let mut state = State::START;
            for _ in 0..interval.total_blocks() {
                state = step(&interval, state).0;
                while state.k != 0 {
                    state = step(&interval, state).0;
                }
            }
            u64::from(state.pos) > interval.bit_len
        })
    }

    /// Decoding in parallel gives exactly the sequential decoder's coefficients on every test
    /// file, whole and cut short; the images it gives up on are those the CPU must decode (the
    /// data runs out) and none more.
    #[test]
    fn parallel_decoding_gives_the_sequential_coefficients() {
        let files = test_jpegs();
        let limits = Limits {
            load_truncated: true,
            ..Limits::default()
        };
        let (mut sequential, mut decoded, mut given_up, mut restarts) = (0, 0, 0, 0);
        for path in &files {
            let whole = std::fs::read(path).unwrap();
            for cut in [whole.len(), whole.len() * 2 / 3, whole.len() / 3] {
                let data = &whole[..cut];
                let name = format!("{} cut at {cut}", path.display());
                let Ok((image, Coefficients::Segment(segment))) = decode_for_gpu(data, &limits)
                else {
                    continue;
                };
                let dense = decode_coefficients(data, &limits).expect("decodes on the CPU");
                let cpu = decode_sequential(&segment);
                sequential += 1;
                assert_same_blocks(&image, &dense, &cpu, &name);
                let Some(planes) = decode(&segment) else {
                    given_up += 1;
                    assert!(runs_out(&segment), "{name} was given up");
                    continue;
                };
                decoded += 1;
                restarts += usize::from(segment.intervals.len() > 1);
                assert_same_blocks(&image, &dense, &planes, &name);
            }
        }
        assert!(
            sequential > 200 && decoded > 80 && given_up > 50 && restarts >= 10,
            "{sequential} sequential, {decoded} decoded ({restarts} with restart markers), \
             {given_up} given up"
        );
        eprintln!(
            "{decoded} decoded in parallel ({restarts} with restart markers), {given_up} given up"
        );
    }

    /// A scan with restart markers is decoded interval by interval; one whose markers are out
    /// of sequence is left to the CPU decoder (its resynchronisation is libjpeg's), which then
    /// decodes it as it decodes any file.
    #[test]
    fn restart_intervals_decode_alone_unless_a_marker_is_out_of_place() {
        let whole = std::fs::read("tests/data/conformance/jdec__restarts.jpg").unwrap();
        let limits = Limits::default();
        let Ok((image, Coefficients::Segment(segment))) = decode_for_gpu(&whole, &limits) else {
            panic!("a single-scan file with restart markers is a segment");
        };
        assert_eq!(
            segment.intervals.len(),
            5,
            "four RST markers, five intervals"
        );
        let dense = decode_coefficients(&whole, &limits).unwrap();
        assert_same_blocks(
            &image,
            &dense,
            &decode(&segment).unwrap(),
            "jdec__restarts.jpg",
        );
        // RST1 turned into RST3: the CPU decoder resynchronises.
        let at = whole.windows(2).position(|w| w == [0xFF, 0xD1]).unwrap();
        let mut damaged = whole.clone();
        damaged[at + 1] = 0xD3;
        let (_, coefficients) = decode_for_gpu(&damaged, &limits).unwrap();
        assert!(!matches!(coefficients, Coefficients::Segment(_)));
    }

    /// Wrong guesses of the block correct themselves unless the MCU's tables repeat within it:
    /// those images get dispatches enough for the right state to cross every workgroup.
    #[test]
    fn images_whose_guesses_never_correct_get_every_dispatch() {
        let segment = |name: &str| {
            let data = std::fs::read(format!("tests/data/{name}")).unwrap();
            match decode_for_gpu(&data, &Limits::default()) {
                Ok((_, Coefficients::Segment(segment))) => segment,
                _ => panic!("{name} is not a single-scan segment"),
            }
        };
        // Three components, one pair of tables: every block decodes alike.
        let shared = segment("conformance/jdec__rgb.jpg");
        assert!(!shared.interval(0).corrects_wrong_blocks());
        let across = subsequences(&shared.interval(0)).div_ceil(WORKGROUP) + 1;
        assert!(across > SELF_CORRECTING_DISPATCHES);
        assert_eq!(sync_dispatches(&shared.interval(0)), across);
        assert!(decode(&shared).is_some(), "settles within its dispatches");
        // Luma and chroma tables, and one block an MCU.
        for name in [
            "photos/mpl__grace_hopper.jpg",
            "conformance/jdec__grayscale_large.jpg",
        ] {
            let own = segment(name);
            assert!(own.interval(0).corrects_wrong_blocks(), "{name}");
            assert!(
                sync_dispatches(&own.interval(0)) <= SELF_CORRECTING_DISPATCHES,
                "{name}"
            );
            assert!(decode(&own).is_some(), "{name} settles");
        }
    }

    /// `planes` (table order) hold `dense`'s blocks.
    fn assert_same_blocks(
        image: &crate::jpeg::CoefficientImage,
        dense: &crate::jpeg::CoefficientImage,
        planes: &[Vec<i16>],
        name: &str,
    ) {
        let interleaved = image.components.len() > 1;
        for (ci, comp) in dense.components.iter().enumerate() {
            let order = if interleaved {
                BlockOrder {
                    mcu_w: comp.h,
                    mcu_h: comp.v,
                    mcus_per_row: image.mcus_x(),
                    blocks: comp.blocks_w * comp.blocks_h,
                }
            } else {
                BlockOrder::row_major(comp.width_in_blocks, comp.height_in_blocks)
            };
            for by in 0..comp.height_in_blocks {
                for bx in 0..comp.width_in_blocks {
                    let at = order.position(bx, by) * 64;
                    assert_eq!(
                        &planes[ci][at..at + 64],
                        comp.block(bx, by),
                        "{name}: ({ci}, {bx}, {by})"
                    );
                }
            }
        }
    }
}

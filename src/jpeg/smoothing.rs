//! Block smoothing: libjpeg-turbo's `decompress_smooth_data` (`jdcoefct.c`), which Pillow applies
//! to progressive images whose refinement scans are incomplete (PARITY §2e, trap 18).
//!
//! Before the IDCT, low-frequency coefficients that are still zero and not known to be exact are
//! estimated from the DC values of the 5×5 neighbouring blocks. When no AC data arrived at all,
//! the DC itself is re-estimated too. All arithmetic is integer, as in libjpeg.

use super::{CoefficientImage, Smoothing};

/// Natural-order position of zigzag coefficients 1..=9 (AC01, AC10, AC20, AC11, AC02, AC03,
/// AC12, AC21, AC30).
const AC_POSITIONS: [usize; 9] = [1, 8, 16, 9, 2, 3, 10, 17, 24];

/// Weights of the 5×5 DC window (rows top to bottom, columns left to right) for each estimate:
/// the first nine are the AC estimates when DC is re-estimated too, then the DC estimate.
#[rustfmt::skip]
const WITH_DC: [[i64; 25]; 10] = [
    [-1, -1, 0, 1, 1, -3, 13, 0, -13, 3, -3, 38, 0, -38, 3, -3, 13, 0, -13, 3, -1, -1, 0, 1, 1],
    [-1, -3, -3, -3, -1, -1, 13, 38, 13, -1, 0, 0, 0, 0, 0, 1, -13, -38, -13, 1, 1, 3, 3, 3, 1],
    [0, 0, 1, 0, 0, 0, 2, 7, 2, 0, 0, -5, -14, -5, 0, 0, 2, 7, 2, 0, 0, 0, 1, 0, 0],
    [-1, 0, 0, 0, 1, 0, 9, 0, -9, 0, 0, 0, 0, 0, 0, 0, -9, 0, 9, 0, 1, 0, 0, 0, -1],
    [0, 0, 0, 0, 0, 0, 2, -5, 2, 0, 1, 7, -14, 7, 1, 0, 2, -5, 2, 0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0, 1, 0, -1, 0, 0, 2, 0, -2, 0, 0, 1, 0, -1, 0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0, 1, -3, 1, 0, 0, 0, 0, 0, 0, 0, -1, 3, -1, 0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0, 1, 0, -1, 0, 0, -3, 0, 3, 0, 0, 1, 0, -1, 0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0, 1, 2, 1, 0, 0, 0, 0, 0, 0, 0, -1, -2, -1, 0, 0, 0, 0, 0, 0],
    [-2, -6, -8, -6, -2, -6, 6, 42, 6, -6, -8, 42, 152, 42, -8, -6, 6, 42, 6, -6, -2, -6, -8, -6, -2],
];

/// Weights for the five AC estimates when the DC is kept (JPEG K.8 widened to 5×5).
#[rustfmt::skip]
const AC_ONLY: [[i64; 25]; 5] = [
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -7, 50, 0, -50, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    [0, 0, -7, 0, 0, 0, 0, 50, 0, 0, 0, 0, 0, 0, 0, 0, 0, -50, 0, 0, 0, 0, 7, 0, 0],
    [0, 0, -1, 0, 0, 0, 0, 13, 0, 0, 0, 0, -24, 0, 0, 0, 0, 13, 0, 0, 0, 0, -1, 0, 0],
    [0, -1, 0, 1, 0, -1, 10, 0, -10, 1, 0, 0, 0, 0, 0, 1, -10, 0, 10, -1, 0, 1, 0, -1, 0],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, 13, -24, 13, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
];

/// The block (`bx`, `by`) of component `ci` with its missing coefficients estimated.
pub(crate) fn smoothed_block(
    image: &CoefficientImage,
    smoothing: &Smoothing,
    ci: usize,
    bx: usize,
    by: usize,
) -> [i16; 64] {
    let comp = &image.components[ci];
    let mut block = *comp.block(bx, by);
    let imcu_row = by / comp.v;
    let bits = if imcu_row > smoothing.last_good_imcu_row {
        &smoothing.previous[ci]
    } else {
        &smoothing.current[ci]
    };
    let change_dc = bits[1..].iter().all(|&b| b == -1);
    let window = dc_window(image, ci, bx, by);
    let q = |pos: usize| i64::from(comp.quant[pos]);
    let weights: &[[i64; 25]] = if change_dc { &WITH_DC[..9] } else { &AC_ONLY };
    for (k, w) in weights.iter().enumerate() {
        let (al, pos) = (bits[k + 1], AC_POSITIONS[k]);
        if al != 0 && block[pos] == 0 {
            block[pos] = estimate(q(0) * weighted(w, &window), q(pos), Some(al));
        }
    }
    if change_dc {
        block[0] = estimate(q(0) * weighted(&WITH_DC[9], &window), q(0), None);
    }
    block
}

/// The DC values of the 5×5 blocks around (`bx`, `by`), row-major, with libjpeg's edge rules.
fn dc_window(image: &CoefficientImage, ci: usize, bx: usize, by: usize) -> [i64; 25] {
    let comp = &image.components[ci];
    let rows = neighbour_rows(by, comp.v, image.mcus_y(), comp.height_in_blocks);
    let last_column = comp.width_in_blocks as isize - 1;
    std::array::from_fn(|i| {
        let column = (bx as isize + (i % 5) as isize - 2).clamp(0, last_column) as usize;
        i64::from(comp.block(column, rows[i / 5])[0])
    })
}

/// Block rows by−2..=by+2 as `decompress_smooth_data` picks them. It decides per iMCU row, and
/// in the last iMCU row it counts rows oddly; reproduced, not tidied.
fn neighbour_rows(by: usize, v: usize, imcu_rows: usize, height_in_blocks: usize) -> [usize; 5] {
    let (imcu_row, row_in_imcu) = (by / v, by % v);
    let block_rows = if imcu_row + 1 == imcu_rows {
        match height_in_blocks % v {
            0 => v,
            partial => partial,
        }
    } else {
        v
    };
    let image_block_rows = block_rows * imcu_rows;
    let image_block_row = imcu_row * block_rows + row_in_imcu;
    let prev = if image_block_row > 0 { by - 1 } else { by };
    let prev_prev = if image_block_row > 1 { by - 2 } else { prev };
    let next = if image_block_row + 1 < image_block_rows {
        by + 1
    } else {
        by
    };
    let next_next = if image_block_row + 2 < image_block_rows {
        by + 2
    } else {
        next
    };
    [prev_prev, prev, by, next, next_next]
}

fn weighted(weights: &[i64; 25], window: &[i64; 25]) -> i64 {
    weights.iter().zip(window).map(|(w, dc)| w * dc).sum()
}

/// libjpeg's rounded division of `num` by 256·`q`, capped below 2^Al when Al > 0.
fn estimate(num: i64, q: i64, al: Option<i8>) -> i16 {
    let mut pred = ((q << 7) + num.abs()) / (q << 8);
    if let Some(al) = al.filter(|&al| al > 0) {
        pred = pred.min((1 << al) - 1);
    }
    (if num < 0 { -pred } else { pred }) as i16
}

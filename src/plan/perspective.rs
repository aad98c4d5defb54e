//! `RandomPerspective`'s draw: its corners as torchvision's `get_params` draws them, and the
//! coefficients of the map that moves the image's corners there ([`Rotation::perspective`] makes
//! the map of them).

use super::random::Stream;
use super::Rotation;
use crate::transform::Filter;

/// The coefficients of a perspective drawn from `s` for an image of `size` (see [`corners`] and
/// [`coefficients`]).
pub(super) fn drawn(
    distortion_scale: f64,
    size: (usize, usize),
    s: &mut Stream,
) -> Option<[f64; 8]> {
    coefficients(size, &corners(distortion_scale, size, s))
}

/// `RandomPerspective.get_params` on an image of `width`×`height`: each corner moved inwards
/// by up to `distortion_scale` of half the side, the eight integers drawn as its
/// `torch.randint` calls are, in its order (top-left x and y, top-right, bottom-right,
/// bottom-left); the corners they give, in that order.
fn corners(
    distortion_scale: f64,
    (width, height): (usize, usize),
    s: &mut Stream,
) -> [(f64, f64); 4] {
    let (width, height) = (width as i64, height as i64);
    // int(distortion_scale * half) + 1 values from the side's start, or to its end.
    let reach = |side: i64| (distortion_scale * (side / 2) as f64) as i64 + 1;
    let (dx, dy) = (reach(width), reach(height));
    let mut between = |low: i64, high: i64| (low + s.below((high - low) as u64) as i64) as f64;
    let top_left = (between(0, dx), between(0, dy));
    let top_right = (between(width - dx, width), between(0, dy));
    let bottom_right = (between(width - dx, width), between(height - dy, height));
    let bottom_left = (between(0, dx), between(height - dy, height));
    [top_left, top_right, bottom_right, bottom_left]
}

/// torchvision's `_get_perspective_coeffs(startpoints, endpoints)` for an image of
/// `width`×`height` whose corners move to `corners`: the eight coefficients of the map from each
/// output point to the image point it shows, each rounded to float32 as torchvision rounds them.
/// Solved here by Gaussian elimination with partial pivoting in doubles (torchvision solves by
/// least squares through LAPACK, whose last bits differ from these and depend on the CPU's
/// library; rounded to float32, the two agree but where such a bit decides the rounding, in
/// every coefficient for 96–98% of maps on torch 2.11's x86-64 build: these are the parameters
/// drawn and recorded). `None` (no map applies, where torchvision would apply
/// its least-squares answer) where the corners leave the system singular (an image one pixel
/// wide or high), or so near it that the coefficients leave the range the GPU's doubles hold
/// ([`Rotation::in_double_range`]).
fn coefficients((width, height): (usize, usize), corners: &[(f64, f64); 4]) -> Option<[f64; 8]> {
    let (right, bottom) = (width as f64 - 1.0, height as f64 - 1.0);
    let start = [(0.0, 0.0), (right, 0.0), (right, bottom), (0.0, bottom)];
    // Rows [a | b] of torchvision's a_matrix and b_matrix.
    let mut rows = [[0.0f64; 9]; 8];
    for (i, (&(ex, ey), &(sx, sy))) in corners.iter().zip(&start).enumerate() {
        rows[2 * i] = [ex, ey, 1.0, 0.0, 0.0, 0.0, -sx * ex, -sx * ey, sx];
        rows[2 * i + 1] = [0.0, 0.0, 0.0, ex, ey, 1.0, -sy * ex, -sy * ey, sy];
    }
    for column in 0..8 {
        let pivot =
            (column..8).max_by(|&a, &b| rows[a][column].abs().total_cmp(&rows[b][column].abs()))?;
        rows.swap(column, pivot);
        if rows[column][column] == 0.0 {
            return None;
        }
        let pivot_row = rows[column];
        for row in &mut rows[column + 1..] {
            let factor = row[column] / pivot_row[column];
            for (value, &above) in row[column..].iter_mut().zip(&pivot_row[column..]) {
                *value -= factor * above;
            }
        }
    }
    let mut c = [0.0f64; 8];
    for row in (0..8).rev() {
        let mut known = 0.0;
        for (&value, &solved) in rows[row][row + 1..8].iter().zip(&c[row + 1..]) {
            known += value * solved;
        }
        c[row] = (rows[row][8] - known) / rows[row][row];
    }
    let c = c.map(|v| f64::from(v as f32));
    let map = Rotation::perspective(c, [0; 3], Filter::Bilinear);
    (c.iter().all(|v| v.is_finite()) && map.in_double_range()).then_some(c)
}

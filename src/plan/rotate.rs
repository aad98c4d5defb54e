//! `RandomRotation` as torchvision does it on a PIL image: `img.rotate(angle, interpolation,
//! center=center, fillcolor=fill)`, which inverts the rotation about that point (the image's
//! centre by default) into an affine map from each output pixel to the point it shows; the
//! augmentation policies' shears and translations are such maps too (`img.transform(size, AFFINE, matrix, interpolation, fillcolor=fill)`).
//! Pillow computes the map's matrix in double precision (rounding a rotation's entries to 15
//! decimals), which this file does once per image. For nearest-neighbour sampling Pillow then
//! walks the map in 16.16 fixed point (libImaging/Geometry.c, `affine_fixed`), which the plan
//! holds, so that both backends work in integers; bilinear and bicubic sampling evaluate the
//! matrix per pixel in doubles (`ImagingGenericTransform`), which the CPU computes in `f64` and
//! the GPU in shaders/double.wgsl. `RandomPerspective`'s maps (`img.transform(size,
//! PERSPECTIVE, coefficients, interpolation, fillcolor=fill)`) divide the affine part by a
//! third linear form, per pixel in doubles with any filter (`ImagingGenericTransform` with
//! `perspective_transform`; nearest-neighbour sampling there is `nearest_filter32`).

use crate::transform::Filter;

/// A map from each output pixel to the point of the image it shows, and its fill: with
/// nearest-neighbour sampling, output pixel (x, y) shows the image's pixel (`(x_map[2] +
/// x·x_map[0] + y·x_map[1]) >> 16`, `(y_map[2] + x·y_map[0] + y·y_map[1]) >> 16`) where that
/// lies inside it, `fill` elsewhere; with bilinear or bicubic sampling, the image interpolated at
/// (`m[0]·(x + ½) + m[1]·(y + ½) + m[2]`, `m[3]·(x + ½) + m[4]·(y + ½) + m[5]`) where that lies
/// inside it; with a perspective, both of those divided by (`p[0]·(x + ½) + p[1]·(y + ½) + 1`)
/// first.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rotation {
    /// Per column, per row, at the first pixel's centre.
    pub x_map: [i32; 3],
    /// Per column, per row, at the first pixel's centre.
    pub y_map: [i32; 3],
    /// The matrix `m` Pillow is given (a perspective's first six coefficients).
    pub matrix: [f64; 6],
    /// A perspective's last two coefficients `p`, which make the divisor; none for an affine
    /// map.
    pub perspective: Option<[f64; 2]>,
    /// `Filter::Nearest`, `Filter::Bilinear` or `Filter::Bicubic`.
    pub filter: Filter,
    /// RGB where no pixel maps.
    pub fill: [u8; 3],
}

/// The largest side a mapped image may have: Pillow's fixed-point walk holds positions below
/// 32768 (its `check_fixed`), which a rotation about the centre of an image of at most this side
/// keeps to (other fixed-point maps, rotations about a given point among them, are held to it by
/// [`Rotation::walks_in_fixed_point`]; maps Pillow walks in doubles have no such limit).
pub const MAX_ROTATED_SIDE: usize = 16384;

impl Rotation {
    /// `Image.rotate(angle, filter, expand=False, center, fillcolor=fill)` of an image of
    /// `width`×`height`, about `center` or the image's centre; `None` where that is the image
    /// itself (an angle that is a multiple of 360).
    ///
    /// Without a centre, Pillow returns a copy for such angles and takes other shortcuts (180°,
    /// and 90° or 270° for a square image, done by transposing); with one, it maps every angle.
    /// Both give what the map gives, pixel for pixel, with any filter (the goldens hold such
    /// angles: the map lands on pixel centres, and at 0° it is exactly the identity). Where the
    /// matrix has no shear (with entries rounded to 15 decimals, only at 0° and 180°), Pillow's
    /// C code walks it in doubles for nearest-neighbour sampling, which the plan does too where
    /// that walk differs from the fixed-point one ([`Rotation::is_scaling`]).
    pub fn new(
        angle: f64,
        (width, height): (usize, usize),
        center: Option<(f64, f64)>,
        fill: [u8; 3],
        filter: Filter,
    ) -> Option<Self> {
        let angle = python_mod(angle, 360.0);
        if angle == 0.0 {
            return None;
        }
        let theta = -angle.to_radians();
        let (cos, sin) = (round15(theta.cos()), round15(theta.sin()));
        let (a, b, d, e) = (cos, sin, round15(-theta.sin()), cos);
        let (cx, cy) = center.unwrap_or((width as f64 / 2.0, height as f64 / 2.0));
        // transform(-cx, -cy) as Python evaluates a * x + b * y + c, then the centre added.
        let c = a * -cx + b * -cy + 0.0 + cx;
        let f = d * -cx + e * -cy + 0.0 + cy;
        Some(Self::from_matrix([a, b, c, d, e, f], fill, filter))
    }

    /// `Image.transform(size, AFFINE, matrix, filter, fillcolor=fill)`: output pixel (x, y)
    /// shows the image at (`m[0]·x + m[1]·y + m[2]`, `m[3]·x + m[4]·y + m[5]`), taken at pixel
    /// centres; for nearest-neighbour sampling in `affine_fixed`'s 16.16 fixed point, or where
    /// the matrix has no rotation or shear, in Pillow's scaling walk ([`Rotation::is_scaling`]).
    pub fn from_matrix(m: [f64; 6], fill: [u8; 3], filter: Filter) -> Self {
        let [a, b, c, d, e, f] = m;
        Self {
            x_map: [fix(a), fix(b), fix(c + a * 0.5 + b * 0.5)],
            y_map: [fix(d), fix(e), fix(f + d * 0.5 + e * 0.5)],
            matrix: m,
            perspective: None,
            filter,
            fill,
        }
    }

    /// `Image.transform(size, PERSPECTIVE, coefficients, filter, fillcolor=fill)`: output
    /// pixel (x, y) shows the image at (`(c[0]·x + c[1]·y + c[2]) / (c[6]·x + c[7]·y + 1)`,
    /// `(c[3]·x + c[4]·y + c[5]) / (c[6]·x + c[7]·y + 1)`), taken at pixel centres, in doubles
    /// whatever the filter. Where the divisor is zero at a pixel, the point lies at infinity
    /// and the fill shows (Pillow's comparisons of an infinite coordinate). Where both
    /// dividends are zero there too (three lines through that very pixel centre, which no
    /// torchvision draw has been seen to make), Pillow's C code converts NaN to an integer,
    /// which C leaves undefined (x86-64 builds show the fill with nearest sampling and write 0
    /// with bilinear or bicubic): the fill shows here.
    pub fn perspective(c: [f64; 8], fill: [u8; 3], filter: Filter) -> Self {
        Self {
            x_map: [0; 3],
            y_map: [0; 3],
            matrix: [c[0], c[1], c[2], c[3], c[4], c[5]],
            perspective: Some([c[6], c[7]]),
            filter,
            fill,
        }
    }

    /// Whether stage 4 walks this map: nearest-neighbour sampling in `affine_fixed`'s fixed
    /// point (a scaling walk or a perspective is a step of stage 5 instead).
    pub fn is_fixed_point(&self) -> bool {
        self.filter == Filter::Nearest && !self.is_scaling() && self.perspective.is_none()
    }

    /// The image point output pixel (`x`, `y`) shows, in Pillow's double arithmetic
    /// (`affine_transform` or `perspective_transform`); `None` where a perspective's divisor is
    /// zero there (a point at infinity, which no image holds).
    pub fn point(&self, x: usize, y: usize) -> Option<(f64, f64)> {
        let m = &self.matrix;
        let (xx, yy) = (x as f64 + 0.5, y as f64 + 0.5);
        let (xin, yin) = (m[0] * xx + m[1] * yy + m[2], m[3] * xx + m[4] * yy + m[5]);
        match self.perspective {
            None => Some((xin, yin)),
            Some([g, h]) => {
                let divisor = g * xx + h * yy + 1.0;
                (divisor != 0.0).then(|| (xin / divisor, yin / divisor))
            }
        }
    }

    /// `RandomAffine`'s map of an image of `size` for its draw `a`: `F.affine(img, angle,
    /// translate, scale, shear, interpolation, fill, center)`, about the image's centre unless
    /// it names one; `None` for the identity.
    pub fn affine(
        affine: &crate::transform::RandomAffine,
        a: &super::AffineParams,
        (width, height): (usize, usize),
    ) -> Option<Self> {
        let center = affine
            .center
            .unwrap_or((width as f64 * 0.5, height as f64 * 0.5));
        let translate = (a.translate.0 as f64, a.translate.1 as f64);
        let m = if affine.v2 {
            inverse_affine_matrix_v2(center, a.angle, translate, a.scale, a.shear)
        } else {
            inverse_affine_matrix(center, a.angle, translate, a.scale, a.shear)
        };
        let identity = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0];
        (m != identity).then(|| Self::from_matrix(m, affine.fill, affine.interpolation))
    }

    /// Whether Pillow samples this map with `ImagingScaleAffine`: nearest-neighbour sampling of
    /// a matrix without rotation or shear (`m[1]` and `m[3]` zero), whose positions it walks
    /// in doubles from `m[2] + m[0]·½` and `m[5] + m[4]·½`, added up pixel by pixel and
    /// truncated. Where the steps are ±1 (translations, half turns) the fixed-point map stands
    /// for that walk if it starts in the same pixel, and near enough (within `MAX_ROTATED_SIDE`)
    /// that no position of an image of at most that side leaves its 16.16 range: its start,
    /// rounded to 1/65536, reaches the next pixel when the true start lies less than 2^-17 short
    /// of it (a half turn about a point 2^-18 short of a quarter pixel, a translation 2^-17
    /// short of a half pixel).
    pub fn is_scaling(&self) -> bool {
        let m = &self.matrix;
        let same_pixel = |start: f64, fixed: i32| {
            start.abs() < MAX_ROTATED_SIDE as f64 && f64::from(fixed >> 16) == start.floor()
        };
        let walks_as_fixed_point = m[0].abs() == 1.0
            && m[4].abs() == 1.0
            && same_pixel(m[2] + m[0] * 0.5, self.x_map[2])
            && same_pixel(m[5] + m[4] * 0.5, self.y_map[2]);
        self.filter == Filter::Nearest
            && self.perspective.is_none()
            && m[1] == 0.0
            && m[3] == 0.0
            && !walks_as_fixed_point
    }

    /// Whether Pillow walks this nearest-neighbour map in 16.16 fixed point on an image of
    /// `width`×`height`: its `check_fixed`, in its double arithmetic, on the four corners. Where
    /// a corner lies 32768 pixels or more away (a small scale, a steep shear, a distant centre)
    /// its C code walks the map in doubles instead, a path gpuprep does not offer.
    pub fn walks_in_fixed_point(&self, (width, height): (usize, usize)) -> bool {
        let m = &self.matrix;
        let (w, h) = (width as f64, height as f64);
        let near = |x: f64, y: f64| {
            (x * m[0] + y * m[1] + m[2]).abs() < 32768.0
                && (x * m[3] + y * m[4] + m[5]).abs() < 32768.0
        };
        !self.is_fixed_point() || (near(0.0, 0.0) && near(w, h) && near(0.0, h) && near(w, 0.0))
    }

    /// Whether the GPU's doubles hold the map's arithmetic: every matrix entry zero or of a
    /// magnitude in [2^-960, 2^60] (a perspective's coefficients in [2^-500, 2^30], its
    /// quotients being further from 1), so that its coordinates and interpolations stay normal
    /// numbers (shaders/double.wgsl reads a subnormal as zero).
    pub fn in_double_range(&self) -> bool {
        let (low, high) = match self.perspective {
            Some(_) => (-500, 30),
            None => (-960, 60),
        };
        let fits = |v: &f64| *v == 0.0 || (2f64.powi(low)..=2f64.powi(high)).contains(&v.abs());
        self.is_fixed_point()
            || (self.matrix.iter().all(fits) && self.perspective.iter().flatten().all(fits))
    }
}

/// torchvision's `_get_inverse_affine_matrix(center, angle, translate, scale, shear)` in its
/// double arithmetic, operation for operation: the matrix `F.affine` gives Pillow.
pub fn inverse_affine_matrix(
    (cx, cy): (f64, f64),
    angle: f64,
    (tx, ty): (f64, f64),
    scale: f64,
    shear: (f64, f64),
) -> [f64; 6] {
    let rot = angle.to_radians();
    let (sx, sy) = (shear.0.to_radians(), shear.1.to_radians());
    let a = (rot - sy).cos() / sy.cos();
    let b = -(rot - sy).cos() * sx.tan() / sy.cos() - rot.sin();
    let c = (rot - sy).sin() / sy.cos();
    let d = -(rot - sy).sin() * sx.tan() / sy.cos() + rot.cos();
    let mut m = [d, -b, 0.0, -c, a, 0.0].map(|v| v / scale);
    m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
    m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
    m[2] += cx;
    m[5] += cy;
    m
}

/// transforms.v2's `_get_inverse_affine_matrix(center, angle, translate, scale, shear)`: the
/// same matrix as [`inverse_affine_matrix`] in another order of operations (its cached cosine,
/// tangent and sums), operation for operation.
pub fn inverse_affine_matrix_v2(
    (cx, cy): (f64, f64),
    angle: f64,
    (tx, ty): (f64, f64),
    scale: f64,
    shear: (f64, f64),
) -> [f64; 6] {
    let rot = angle.to_radians();
    let (sx, sy) = (shear.0.to_radians(), shear.1.to_radians());
    let (cos_sy, tan_sx, rot_minus_sy) = (sy.cos(), sx.tan(), rot - sy);
    let (cx_plus_tx, cy_plus_ty) = (cx + tx, cy + ty);
    let a = rot_minus_sy.cos() / cos_sy;
    let b = -(a * tan_sx + rot.sin());
    let c = rot_minus_sy.sin() / cos_sy;
    let d = rot.cos() - c * tan_sx;
    let mut m = [d / scale, -b / scale, 0.0, -c / scale, a / scale, 0.0];
    m[2] += cx - m[0] * cx_plus_tx - m[1] * cy_plus_ty;
    m[5] += cy - m[3] * cx_plus_tx - m[4] * cy_plus_ty;
    m
}

/// Python's `x % m` for floats (the result takes the sign of `m`).
fn python_mod(x: f64, m: f64) -> f64 {
    let r = x % m;
    if r == 0.0 {
        0.0f64.copysign(m)
    } else if (r < 0.0) != (m < 0.0) {
        r + m
    } else {
        r
    }
}

/// Python's `round(x, 15)`: `x` rounded to 15 decimals, correctly (Rust's formatting with a
/// precision rounds the exact binary value, as Python's does, and parsing rounds correctly).
fn round15(x: f64) -> f64 {
    format!("{x:.15}").parse().unwrap_or(x)
}

/// Geometry.c's `FIX(v)`: `FLOOR(v * 65536.0 + 0.5)`, its `FLOOR` truncating non-negative values
/// and flooring negative ones.
fn fix(v: f64) -> i32 {
    let v = v * 65536.0 + 0.5;
    if v < 0.0 {
        v.floor() as i32
    } else {
        v as i32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both of torchvision's inverse matrices, bit for bit: the doubles torchvision 0.29.2's
    /// `transforms.functional._get_inverse_affine_matrix` and
    /// `transforms.v2.functional._geometry._get_inverse_affine_matrix` return for (centre,
    /// angle, translate, scale, shear), which differ in the last bits of some entries.
    #[test]
    fn affine_matrices_are_torchvisions_v1_and_v2_bit_for_bit() {
        type Case = (
            (f64, f64),
            f64,
            (f64, f64),
            f64,
            (f64, f64),
            [u64; 6],
            [u64; 6],
        );
        let cases: [Case; 2] = [
            (
                (28.0, 20.0),
                17.25,
                (3.0, -2.0),
                1.05,
                (7.5, -3.25),
                [
                    0x3febb2aedee2a76a,
                    0x3fd99a7722ba604a,
                    0xc018222ba6bff510,
                    0xbfd5615f4c3800be,
                    0x3fec97997b86633e,
                    0x402c8bc7a6df1112,
                ],
                [
                    0x3febb2aedee2a76a,
                    0x3fd99a7722ba604a,
                    0xc018222ba6bff50f,
                    0xbfd5615f4c3800be,
                    0x3fec97997b86633e,
                    0x402c8bc7a6df1112,
                ],
            ),
            (
                (33.0, 60.0),
                -18.75,
                (-1.0, -5.0),
                1.076,
                (19.2, -6.41),
                [
                    0x3fee6383718e2cf8,
                    0x3f93e1e395a5f58b,
                    0x3ff8b1a952829180,
                    0x3fc9953dd201d39c,
                    0x3fed3c46bbd468fa,
                    0x400ad8b7c553b560,
                ],
                [
                    0x3fee6383718e2cf8,
                    0x3f93e1e395a5f57d,
                    0x3ff8b1a952829189,
                    0x3fc9953dd201d39c,
                    0x3fed3c46bbd468fa,
                    0x400ad8b7c553b550,
                ],
            ),
        ];
        for (center, angle, translate, scale, shear, v1, v2) in cases {
            let bits = |m: [f64; 6]| m.map(f64::to_bits);
            let args = (center, angle, translate, scale, shear);
            assert_eq!(
                bits(inverse_affine_matrix(
                    args.0, args.1, args.2, args.3, args.4
                )),
                v1
            );
            assert_eq!(
                bits(inverse_affine_matrix_v2(
                    args.0, args.1, args.2, args.3, args.4
                )),
                v2
            );
        }
    }

    /// The map read per pixel, for the tests (the backends walk it in their own ways).
    impl Rotation {
        /// The pixel output pixel (`x`, `y`) shows in an image of `width`×`height`, `None` where
        /// the fill shows: the fixed-point walk of Pillow's `affine_fixed`, written per pixel.
        fn source(
            &self,
            x: usize,
            y: usize,
            (width, height): (usize, usize),
        ) -> Option<(usize, usize)> {
            let [x, y] = [x, y].map(|v| v as i64);
            let at = |map: [i32; 3]| {
                (i64::from(map[2]) + x * i64::from(map[0]) + y * i64::from(map[1])) >> 16
            };
            let (sx, sy) = (at(self.x_map), at(self.y_map));
            let inside = (0..width as i64).contains(&sx) && (0..height as i64).contains(&sy);
            inside.then_some((sx as usize, sy as usize))
        }
    }

    #[test]
    fn python_arithmetic() {
        assert_eq!(python_mod(-10.0, 360.0), 350.0);
        assert_eq!(python_mod(370.0, 360.0), 10.0);
        assert!(python_mod(-360.0, 360.0).is_sign_positive());
        // round(x, 15) of values whose 16th decimal decides.
        assert_eq!(round15(6.123233995736766e-17), 0.0);
        assert_eq!(round15(0.1234567890123456), 0.123456789012346);
        assert_eq!(round15(-0.9999999999999999), -1.0);
        assert_eq!(fix(-0.5 / 65536.0 - 1e-9), -1);
        assert_eq!(fix(1.0), 65536);
    }

    /// Pillow's `check_fixed`: a 45° turn at scale 0.02 of a 1000×1000 image puts a corner at
    /// 35855, which its C code walks in doubles; at scale 1 every corner is near.
    #[test]
    fn far_corners_leave_the_fixed_point_walk() {
        let map = |scale| {
            let m = inverse_affine_matrix((500.0, 500.0), 45.0, (0.0, 0.0), scale, (0.0, 0.0));
            Rotation::from_matrix(m, [0; 3], Filter::Nearest)
        };
        assert!(map(1.0).walks_in_fixed_point((1000, 1000)));
        assert!(!map(0.02).walks_in_fixed_point((1000, 1000)));
        let bilinear = Rotation {
            filter: Filter::Bilinear,
            ..map(0.02)
        };
        assert!(bilinear.walks_in_fixed_point((1000, 1000)));
    }

    /// A `RandomAffine` inside `RandomApply` that does not apply draws the identity: no map,
    /// about any centre, in v1's and v2's arithmetic (Pillow's map of it is a copy).
    #[test]
    fn the_identity_draw_maps_nothing() {
        for v2 in [false, true] {
            for center in [None, Some((3.0, 70.5))] {
                let affine = crate::transform::RandomAffine {
                    center,
                    v2,
                    interpolation: Filter::Bilinear,
                    ..crate::transform::RandomAffine::new(20.0)
                };
                let identity = super::super::AffineParams::IDENTITY;
                assert_eq!(Rotation::affine(&affine, &identity, (37, 23)), None);
            }
        }
        assert_eq!(
            Rotation::new(0.0, (37, 23), None, [0; 3], Filter::Bicubic),
            None
        );
    }

    #[test]
    fn quarter_turns_move_pixels_exactly() {
        // 90° counter-clockwise of a square: output (x, y) shows (w - 1 - y, x).
        let r = Rotation::new(90.0, (5, 5), None, [0; 3], Filter::Nearest).unwrap();
        for (x, y) in [(0, 0), (4, 0), (2, 3), (4, 4)] {
            assert_eq!(r.source(x, y, (5, 5)), Some((4 - y, x)));
        }
        let r = Rotation::new(180.0, (6, 3), None, [0; 3], Filter::Nearest).unwrap();
        assert_eq!(r.source(0, 0, (6, 3)), Some((5, 2)));
        assert_eq!(r.source(5, 1, (6, 3)), Some((0, 1)));
        assert_eq!(
            Rotation::new(-720.0, (6, 3), None, [0; 3], Filter::Nearest),
            None
        );
        // About (1, 1) instead: pixel centre (x + ½, y + ½) shows the point (2 - (y + ½), x +
        // ½), so output (x, y) shows pixel (1 - y, x); the third row comes from beyond the left.
        let r = Rotation::new(90.0, (5, 5), Some((1.0, 1.0)), [0; 3], Filter::Nearest).unwrap();
        assert_eq!(r.source(0, 0, (5, 5)), Some((1, 0)));
        assert_eq!(r.source(3, 1, (5, 5)), Some((0, 3)));
        assert_eq!(r.source(0, 2, (5, 5)), None);
    }

    /// A half turn about a point whose double (less ½) lies within 2^-17 below a whole pixel:
    /// the fixed-point start rounds up into the next pixel, Pillow's walk in doubles does not,
    /// so the map is that walk; about the image's centre or a whole point it is the fixed-point
    /// map.
    #[test]
    fn half_turns_starting_just_short_of_a_pixel_are_scaling_walks() {
        let half = |center| Rotation::new(180.0, (10, 8), center, [0; 3], Filter::Nearest);
        for center in [None, Some((10.0, 10.0)), Some((3.25, 4.0))] {
            assert!(half(center).unwrap().is_fixed_point(), "{center:?}");
        }
        // Far away (a corner 32768 pixels off), Pillow's walk in doubles has no limit either.
        for center in [
            Some((3.2499999, 4.0)),
            Some((2.0, 1.2499999)),
            Some((16384.0, 4.0)),
        ] {
            let map = half(center).unwrap();
            assert!(map.is_scaling() && !map.is_fixed_point(), "{center:?}");
        }
    }

    #[test]
    fn unsheared_matrices_are_the_identity_or_a_half_turn() {
        // Where Pillow's C code scales instead of walking the fixed-point map, the map is one
        // of these two, which the fixed-point walk reproduces (see `Rotation::new`).
        // (-1e-14 % 360 is 360.0 in Python: a full turn.)
        for angle in [1e-14, -1e-14, 2e-14, 1e-300, 180.0, -180.0, 540.0] {
            let theta = -python_mod(angle, 360.0).to_radians();
            assert_eq!(round15(theta.sin()), 0.0, "{angle}");
            assert_eq!(round15(theta.cos()).abs(), 1.0, "{angle}");
        }
    }
}

//! Pillow's HSV conversions (`rgb2hsv_row` and `hsv2rgb` in Convert.c), which mix float and
//! double arithmetic, and torchvision's hue shift. The CPU backend calls them per pixel; the GPU,
//! whose WGSL has no double, looks them up in [`HsvTables`] built from them once: a table of every
//! input, so the GPU computes exactly what they do. A test holds both functions to real Pillow
//! over all 2^24 inputs each.

/// The hue channel's shift for `factor`: `np.int32(factor * 255).astype(np.uint8)`, the
/// product in double.
pub fn hue_shift(factor: f32) -> u8 {
    (f64::from(factor) * 255.0) as i32 as u8
}

/// Pillow's `rgb2hsv_row` for one pixel, float and double where Pillow's C has them.
pub fn rgb_to_hsv(pixel: &[u8]) -> [u8; 3] {
    let (r, g, b) = (pixel[0], pixel[1], pixel[2]);
    let max = r.max(g).max(b);
    let min = r.min(g).min(b);
    if max == min {
        return [0, 0, max];
    }
    let cr = f32::from(max - min);
    let s = cr / f32::from(max);
    let rc = f32::from(max - r) / cr;
    let gc = f32::from(max - g) / cr;
    let bc = f32::from(max - b) / cr;
    // `2.0 + rc - bc` is double arithmetic stored in a float.
    let h: f32 = if r == max {
        bc - gc
    } else if g == max {
        (2.0 + f64::from(rc) - f64::from(bc)) as f32
    } else {
        (4.0 + f64::from(gc) - f64::from(rc)) as f32
    };
    let h = ((f64::from(h) / 6.0 + 1.0) % 1.0) as f32;
    let clip8 = |v: f64| (v as i32).clamp(0, 255) as u8;
    [
        clip8(f64::from(h) * 255.0),
        clip8(f64::from(s) * 255.0),
        max,
    ]
}

/// Pillow's `hsv2rgb` for one pixel.
pub fn hsv_to_rgb([h, s, v]: [u8; 3]) -> [u8; 3] {
    if s == 0 {
        return [v; 3];
    }
    let sector = (f64::from(h) * 6.0 / 255.0).floor() as i32;
    let f = (f64::from(h) * 6.0 / 255.0 - f64::from(sector as f32)) as f32;
    let fs = (f64::from(s) / 255.0) as f32;
    let v64 = f64::from(v);
    // C's round: halves away from zero, as Rust's.
    let clip8 = |x: f64| (x.round() as i32).clamp(0, 255) as u8;
    let p = clip8(v64 * (1.0 - f64::from(fs)));
    let q = clip8(v64 * (1.0 - f64::from(fs * f)));
    let t = clip8(v64 * (1.0 - f64::from(fs) * (1.0 - f64::from(f))));
    match sector % 6 {
        0 => [v, t, p],
        1 => [q, v, p],
        2 => [p, v, t],
        3 => [p, q, v],
        4 => [t, p, v],
        _ => [v, p, q],
    }
}

/// Both conversions for every input, as the GPU reads them: `to_hsv[i]` for RGB `i = r << 16 |
/// g << 8 | b` holds H | S << 8 (two to a word, the even input in the low half); `to_rgb[i]` for
/// HSV `i = h << 16 | s << 8 | v` holds R | G << 8 | B << 16. 96 MiB in all.
pub struct HsvTables {
    /// 2^23 words.
    pub to_hsv: Vec<u32>,
    /// 2^24 words.
    pub to_rgb: Vec<u32>,
}

impl HsvTables {
    /// Builds both tables (a few tenths of a second on a few cores).
    pub fn new() -> Self {
        use rayon::prelude::*;
        let hs = |i: u32| {
            let [h, s, _] = rgb_to_hsv(&[(i >> 16) as u8, (i >> 8) as u8, i as u8]);
            u32::from(h) | u32::from(s) << 8
        };
        let to_hsv = (0..1u32 << 23)
            .into_par_iter()
            .map(|w| hs(2 * w) | hs(2 * w + 1) << 16)
            .collect();
        let to_rgb = (0..1u32 << 24)
            .into_par_iter()
            .map(|i| {
                let [r, g, b] = hsv_to_rgb([(i >> 16) as u8, (i >> 8) as u8, i as u8]);
                u32::from(r) | u32::from(g) << 8 | u32::from(b) << 16
            })
            .collect();
        Self { to_hsv, to_rgb }
    }
}

impl Default for HsvTables {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    #[test]
    fn greys_keep_their_value_through_hsv() {
        for v in 0..=255u8 {
            assert_eq!(rgb_to_hsv(&[v, v, v]), [0, 0, v]);
            assert_eq!(hsv_to_rgb([17, 0, v]), [v; 3]);
        }
        assert_eq!(hue_shift(-0.1), (-25i32) as u8);
    }

    /// Both conversions of all 2^24 inputs, in tools/goldens.py's order, hash as real Pillow's
    /// (tests/goldens/hsv.tsv); and the tables hold them.
    #[test]
    fn conversions_equal_pillow_on_every_input() {
        let goldens = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/goldens/hsv.tsv"
        ))
        .unwrap();
        let golden = |name: &str| {
            goldens
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{name}\t")))
                .unwrap()
                .to_string()
        };
        let tables = HsvTables::new();
        let mut to_hsv = Sha256::new();
        let mut to_rgb = Sha256::new();
        for i in 0..1u32 << 24 {
            let (a, b, c) = ((i >> 16) as u8, (i >> 8) as u8, i as u8);
            let [h, s, v] = rgb_to_hsv(&[a, b, c]);
            to_hsv.update([h, s, v]);
            let packed = tables.to_hsv[(i / 2) as usize] >> (16 * (i % 2));
            assert_eq!(packed & 0xFFFF, u32::from(h) | u32::from(s) << 8);
            let rgb = hsv_to_rgb([a, b, c]);
            to_rgb.update(rgb);
            let [r, g, bl] = rgb.map(u32::from);
            assert_eq!(tables.to_rgb[i as usize], r | g << 8 | bl << 16);
        }
        let hex = |d: Sha256| format!("{:x}", d.finalize());
        assert_eq!(
            hex(to_hsv),
            golden("rgb_to_hsv"),
            "rgb2hsv differs from Pillow's"
        );
        assert_eq!(
            hex(to_rgb),
            golden("hsv_to_rgb"),
            "hsv2rgb differs from Pillow's"
        );
    }
}

//! The pictures `parity --diff-dir` writes: a heat map per differing image and a histogram of
//! all differences, as PNG, because people would rather look than read.

use gpuprep::drift::BIN_EDGES;
use gpuprep::{ChannelOrder, DType, Layout};
use gpuprep::{Tensor, TensorData, Transform};
use std::path::Path;

/// An RGB raster.
pub struct Canvas {
    width: usize,
    height: usize,
    rgb: Vec<u8>,
}

const WHITE: [u8; 3] = [255, 255, 255];
const GREY: [u8; 3] = [110, 110, 110];

impl Canvas {
    fn new(width: usize, height: usize, fill: [u8; 3]) -> Self {
        Self {
            width,
            height,
            rgb: fill.repeat(width * height),
        }
    }

    fn set(&mut self, x: usize, y: usize, colour: [u8; 3]) {
        if x < self.width && y < self.height {
            let at = (y * self.width + x) * 3;
            self.rgb[at..at + 3].copy_from_slice(&colour);
        }
    }

    fn fill(&mut self, x: usize, y: usize, width: usize, height: usize, colour: [u8; 3]) {
        for yy in y..y + height {
            for xx in x..x + width {
                self.set(xx, yy, colour);
            }
        }
    }

    /// Draws `text` (upper-cased) in the 3×5 font scaled by `scale`, from its top-left corner.
    fn text(&mut self, x: usize, y: usize, text: &str, scale: usize, colour: [u8; 3]) {
        for (i, c) in text.to_ascii_uppercase().chars().enumerate() {
            let rows = glyph(c);
            for (row, bits) in rows.iter().enumerate() {
                for col in 0..3 {
                    if bits & (0b100 >> col) != 0 {
                        let (gx, gy) = (x + (i * 4 + col) * scale, y + row * scale);
                        self.fill(gx, gy, scale, scale, colour);
                    }
                }
            }
        }
    }

    /// Writes the canvas as an 8-bit RGB PNG.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let file = std::io::BufWriter::new(std::fs::File::create(path)?);
        let mut encoder = png::Encoder::new(file, self.width as u32, self.height as u32);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(std::io::Error::other)?;
        writer
            .write_image_data(&self.rgb)
            .map_err(std::io::Error::other)?;
        writer.finish().map_err(std::io::Error::other)
    }
}

/// Where and how much two outputs differ: the reference image dimmed to grey where they agree,
/// coloured by the largest difference of the pixel's channels where they do not (blue: under
/// one grey level, through yellow, to red: 16 or more), over a legend.
pub fn heat_map(
    reference: &Tensor,
    transform: &Transform,
    (width, height, differences): (usize, usize, Vec<f64>),
    title: &str,
) -> Canvas {
    const LEGEND: usize = 34;
    let scale = if width.max(height) < 200 { 2 } else { 1 };
    let canvas_width = (width * scale).max(300);
    let mut canvas = Canvas::new(canvas_width, height * scale + LEGEND, [0, 0, 0]);
    let backdrop = display_rgb(reference, transform);
    for y in 0..height {
        for x in 0..width {
            let pixel = y * width + x;
            let colour = match differences[pixel] {
                d if d > 0.0 => heat(d),
                _ => {
                    let [r, g, b] = backdrop[pixel];
                    let luma = (u32::from(r) * 3 + u32::from(g) * 6 + u32::from(b)) / 10;
                    [(luma * 35 / 100) as u8; 3]
                }
            };
            canvas.fill(x * scale, y * scale, scale, scale, colour);
        }
    }
    let top = height * scale + 4;
    for x in 0..160 {
        let grey_levels = (2f64).powf(x as f64 / 160.0 * 5.0) - 1.0;
        canvas.fill(4 + x, top, 1, 8, heat(grey_levels.max(0.01)));
    }
    canvas.text(4, top + 12, "0", 2, WHITE);
    canvas.text(150, top + 12, "16+", 2, WHITE);
    canvas.text(176, top, title, 1, WHITE);
    canvas.text(176, top + 12, "GREY LEVELS", 1, GREY);
    canvas
}

/// Blue (a fraction of a grey level), yellow (about 4), red (16 or more).
fn heat(grey_levels: f64) -> [u8; 3] {
    let t = ((1.0 + grey_levels).log2() / 17f64.log2()).clamp(0.0, 1.0);
    let mix = |a: f64, b: f64, f: f64| (a + (b - a) * f).round() as u8;
    if t < 0.5 {
        let f = t * 2.0;
        [mix(40.0, 255.0, f), mix(90.0, 230.0, f), mix(255.0, 0.0, f)]
    } else {
        let f = (t - 0.5) * 2.0;
        [255, mix(230.0, 0.0, f), 0]
    }
}

/// One panel of the summary: a comparison's name and its histogram.
pub struct Panel {
    /// What was compared with what.
    pub title: String,
    /// Values per bin of [`BIN_EDGES`].
    pub histogram: [u64; BIN_EDGES.len()],
}

/// Bar charts of how many values differ by how much, one panel per comparison, counts on a
/// logarithmic scale.
pub fn histogram(panels: &[Panel]) -> Canvas {
    const PANEL: usize = 190;
    const BAR: usize = 70;
    let labels = ["0", "<1", "1-2", "2-4", "4-8", "8-16", "16+"];
    let mut canvas = Canvas::new(40 + BAR * labels.len(), PANEL * panels.len().max(1), WHITE);
    for (p, panel) in panels.iter().enumerate() {
        let top = p * PANEL;
        let total: u64 = panel.histogram.iter().sum();
        canvas.text(10, top + 8, &panel.title, 2, [0, 0, 0]);
        let most = (total.max(1) as f64 + 1.0).log10();
        let base = top + PANEL - 34;
        for (bin, (&count, label)) in panel.histogram.iter().zip(labels).enumerate() {
            let x = 30 + bin * BAR;
            let height = ((count as f64 + 1.0).log10() / most * 110.0) as usize;
            let colour = if bin == 0 {
                [60, 160, 90]
            } else {
                heat(BIN_EDGES[bin].max(0.5))
            };
            canvas.fill(x + 6, base - height, BAR - 12, height, colour);
            canvas.text(x + 8, base - height - 12, &count.to_string(), 1, [0, 0, 0]);
            canvas.text(x + 8, base + 6, label, 2, [0, 0, 0]);
        }
        canvas.fill(20, base, BAR * labels.len() + 10, 1, [0, 0, 0]);
        canvas.text(
            10,
            base + 22,
            "VALUES BY DIFFERENCE IN GREY LEVELS (LOG SCALE)",
            1,
            GREY,
        );
    }
    canvas
}

/// The 8-bit RGB image a tensor came from (undoing normalisation, layout and channel order).
fn display_rgb(tensor: &Tensor, transform: &Transform) -> Vec<[u8; 3]> {
    let (height, width) = match transform.layout {
        Layout::Hwc => (tensor.shape[0], tensor.shape[1]),
        Layout::Chw => (tensor.shape[1], tensor.shape[2]),
    };
    let pixels = width * height;
    let value = |channel: usize, pixel: usize| -> f64 {
        let i = match transform.layout {
            Layout::Hwc => pixel * 3 + channel,
            Layout::Chw => channel * pixels + pixel,
        };
        match &tensor.data {
            TensorData::U8(v) => f64::from(v[i]),
            TensorData::F32(v) => f64::from(v[i]),
            TensorData::F16(v) => v[i].to_f64(),
        }
    };
    let rgb_channel = |c: usize| match transform.channel_order {
        ChannelOrder::Rgb => c,
        ChannelOrder::Bgr => 2 - c,
    };
    (0..pixels)
        .map(|pixel| {
            std::array::from_fn(|c| {
                let channel = rgb_channel(c);
                let v = value(channel, pixel);
                let grey = match (transform.dtype, transform.normalize) {
                    (DType::U8, _) => v,
                    (_, Some(n)) => (v * f64::from(n.std[c]) + f64::from(n.mean[c])) * 255.0,
                    (_, None) => v * 255.0,
                };
                grey.round().clamp(0.0, 255.0) as u8
            })
        })
        .collect()
}

/// Rows of a 3×5 glyph, three bits each (left pixel is the high bit); unknown characters are
/// blank.
fn glyph(c: char) -> [u8; 5] {
    match c {
        '0' => [7, 5, 5, 5, 7],
        '1' => [2, 6, 2, 2, 7],
        '2' => [7, 1, 7, 4, 7],
        '3' => [7, 1, 7, 1, 7],
        '4' => [5, 5, 7, 1, 1],
        '5' => [7, 4, 7, 1, 7],
        '6' => [7, 4, 7, 5, 7],
        '7' => [7, 1, 1, 1, 1],
        '8' => [7, 5, 7, 5, 7],
        '9' => [7, 5, 7, 1, 7],
        'A' => [2, 5, 7, 5, 5],
        'B' => [6, 5, 6, 5, 6],
        'C' => [3, 4, 4, 4, 3],
        'D' => [6, 5, 5, 5, 6],
        'E' => [7, 4, 6, 4, 7],
        'F' => [7, 4, 6, 4, 4],
        'G' => [3, 4, 5, 5, 3],
        'H' => [5, 5, 7, 5, 5],
        'I' => [7, 2, 2, 2, 7],
        'J' => [1, 1, 1, 5, 2],
        'K' => [5, 5, 6, 5, 5],
        'L' => [4, 4, 4, 4, 7],
        'M' => [5, 7, 7, 5, 5],
        'N' => [6, 5, 5, 5, 5],
        'O' => [2, 5, 5, 5, 2],
        'P' => [6, 5, 6, 4, 4],
        'Q' => [2, 5, 5, 6, 3],
        'R' => [6, 5, 6, 5, 5],
        'S' => [3, 4, 2, 1, 6],
        'T' => [7, 2, 2, 2, 2],
        'U' => [5, 5, 5, 5, 7],
        'V' => [5, 5, 5, 5, 2],
        'W' => [5, 5, 7, 7, 5],
        'X' => [5, 5, 2, 5, 5],
        'Y' => [5, 5, 2, 2, 2],
        'Z' => [7, 1, 2, 4, 7],
        '.' => [0, 0, 0, 0, 2],
        ',' => [0, 0, 0, 2, 4],
        ':' => [0, 2, 0, 2, 0],
        '%' => [5, 1, 2, 4, 5],
        '-' => [0, 0, 7, 0, 0],
        '+' => [0, 2, 7, 2, 0],
        '<' => [1, 2, 4, 2, 1],
        '>' => [4, 2, 1, 2, 4],
        '=' => [0, 7, 0, 7, 0],
        '/' => [1, 1, 2, 4, 4],
        '(' => [2, 4, 4, 4, 2],
        ')' => [2, 1, 1, 1, 2],
        '_' => [0, 0, 0, 0, 7],
        _ => [0; 5],
    }
}

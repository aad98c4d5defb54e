//! Uniform blocks of the shaders, as the words the GPU reads. Each layout is written next to the
//! WGSL struct it mirrors; a test checks the sizes against the shaders.

/// `Params` of shaders/idct.wgsl: one component's block geometry and quantisation table.
pub struct IdctParams {
    /// Blocks per row in the coefficient storage.
    pub blocks_w: u32,
    /// Blocks per row that hold image data.
    pub width_in_blocks: u32,
    /// Block rows that hold image data.
    pub height_in_blocks: u32,
    /// Words per row of the output plane.
    pub sample_row_words: u32,
    /// Samples per block side: 8, 4, 2 or 1.
    pub idct_size: u32,
    /// Blocks per invocation, so that each writes whole words.
    pub blocks_per_invocation: u32,
    /// The table as libjpeg's 16-bit multipliers, sign-extended.
    pub quant: [i32; 64],
}

impl IdctParams {
    /// Bytes of the WGSL struct: 8 words, then `array<vec4<i32>, 16>`.
    pub const SIZE: usize = 32 + 256;

    /// The uniform's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let words = [
            self.blocks_w,
            self.width_in_blocks,
            self.height_in_blocks,
            self.sample_row_words,
            self.idct_size,
            self.blocks_per_invocation,
            0,
            0,
        ];
        let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        bytes.extend(self.quant.iter().flat_map(|q| q.to_le_bytes()));
        debug_assert_eq!(bytes.len(), Self::SIZE);
        bytes
    }
}

/// One component's plane as shaders/color.wgsl reads it.
#[derive(Clone, Copy, Default)]
pub struct PlaneParams {
    /// Bytes per plane row.
    pub stride: u32,
    /// Real samples per row.
    pub width: u32,
    /// Real rows.
    pub height: u32,
    /// Upsampling: 0 full, 1 h2v1 fancy, 2 h1v2 fancy, 3 h2v2 fancy, 4 box.
    pub method: u32,
    /// Box repeat factors.
    pub box_h: u32,
    /// Box repeat factors.
    pub box_v: u32,
}

/// `Params` of shaders/color.wgsl: one band of output rows.
pub struct ColorParams {
    /// Output width.
    pub width: u32,
    /// Rows in this band.
    pub rows: u32,
    /// Image row of the band's first row.
    pub first_row: u32,
    /// Index of the colour space (order of `ColorSpace`).
    pub color_space: u32,
    /// Components 0..3.
    pub planes: [PlaneParams; 4],
}

impl ColorParams {
    /// Bytes of the WGSL struct: 4 words, `array<vec4<u32>, 4>` twice.
    pub const SIZE: usize = 16 + 64 + 64;

    /// The uniform's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut words = vec![self.width, self.rows, self.first_row, self.color_space];
        words.extend(
            self.planes
                .iter()
                .flat_map(|p| [0, p.stride, p.width, p.height]),
        );
        words.extend(
            self.planes
                .iter()
                .flat_map(|p| [p.method, p.box_h, p.box_v, 0]),
        );
        debug_assert_eq!(words.len() * 4, Self::SIZE);
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }
}

/// `Params` of shaders/resample_h.wgsl.
pub struct ResampleParams {
    /// Output pixels per row.
    pub out_width: u32,
    /// Rows to produce.
    pub rows: u32,
    /// Source pixels per row.
    pub in_width: u32,
    /// Weights per output pixel.
    pub window: u32,
    /// Source row of output row 0.
    pub first_row: u32,
    /// Rows per source chunk.
    pub chunk_rows: u32,
}

impl ResampleParams {
    /// Bytes of the WGSL struct: 8 words.
    pub const SIZE: usize = 32;

    /// The uniform's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let words = [
            self.out_width,
            self.rows,
            self.in_width,
            self.window,
            self.first_row,
            self.chunk_rows,
            0,
            0,
        ];
        debug_assert_eq!(words.len() * 4, Self::SIZE);
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }
}

/// `Params` of shaders/tensor.wgsl.
pub struct TensorParams {
    /// Output (crop) width.
    pub out_width: u32,
    /// Output (crop) height.
    pub out_height: u32,
    /// Resized image width.
    pub width: u32,
    /// Resized image height.
    pub height: u32,
    /// Crop start in the resized image (negative: zero padding).
    pub crop_x: i32,
    /// Crop start in the resized image (negative: zero padding).
    pub crop_y: i32,
    /// Whether the vertical pass runs.
    pub vertical: bool,
    /// Vertical weights per output row.
    pub window: u32,
    /// C×H×W rather than H×W×C.
    pub chw: bool,
    /// Elements per output word.
    pub per_word: u32,
    /// Output words in all.
    pub words: u32,
    /// Rows per source chunk.
    pub chunk_rows: u32,
    /// First word this dispatch computes.
    pub word_offset: u32,
    /// Words this dispatch computes.
    pub band_words: u32,
    /// Source channel of each output channel.
    pub channel_map: [u32; 3],
}

impl TensorParams {
    /// Bytes of the WGSL struct: 16 words and a `vec4<u32>`.
    pub const SIZE: usize = 80;

    /// The uniform's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let words = [
            self.out_width,
            self.out_height,
            self.width,
            self.height,
            self.crop_x as u32,
            self.crop_y as u32,
            u32::from(self.vertical),
            self.window,
            u32::from(self.chw),
            self.per_word,
            self.words,
            self.chunk_rows,
            self.word_offset,
            self.band_words,
            0,
            0,
            self.channel_map[0],
            self.channel_map[1],
            self.channel_map[2],
            0,
        ];
        debug_assert_eq!(words.len() * 4, Self::SIZE);
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shader_uses_the_dispatch_workgroup_size() {
        let dir = format!("{}/shaders", env!("CARGO_MANIFEST_DIR"));
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let module =
                naga::front::wgsl::parse_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            for entry_point in &module.entry_points {
                assert_eq!(
                    entry_point.workgroup_size,
                    [super::super::dispatch::WORKGROUP, 1, 1],
                    "{}",
                    path.display()
                );
            }
        }
    }

    #[test]
    fn uniform_sizes_match_the_shaders() {
        for (file, size) in [
            ("idct.wgsl", IdctParams::SIZE),
            ("color.wgsl", ColorParams::SIZE),
        ] {
            let source =
                std::fs::read_to_string(format!("{}/shaders/{file}", env!("CARGO_MANIFEST_DIR")))
                    .unwrap();
            let module = naga::front::wgsl::parse_str(&source).unwrap();
            let params = module
                .types
                .iter()
                .find(|(_, t)| t.name.as_deref() == Some("Params"))
                .unwrap()
                .1;
            assert_eq!(params.inner.size(module.to_ctx()) as usize, size, "{file}");
        }
        let idct = IdctParams {
            blocks_w: 1,
            width_in_blocks: 1,
            height_in_blocks: 1,
            sample_row_words: 2,
            idct_size: 8,
            blocks_per_invocation: 1,
            quant: [1; 64],
        };
        assert_eq!(idct.to_bytes().len(), IdctParams::SIZE);
        let color = ColorParams {
            width: 1,
            rows: 1,
            first_row: 0,
            color_space: 1,
            planes: [PlaneParams::default(); 4],
        };
        assert_eq!(color.to_bytes().len(), ColorParams::SIZE);
    }
}

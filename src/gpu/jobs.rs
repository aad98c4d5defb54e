//! The per-job records the stage shaders read (`struct Job` of each shader), as the words the GPU
//! reads. Each layout is written next to the WGSL struct it mirrors; a test checks the sizes
//! against the shaders.

/// `Job` of shaders/idct.wgsl: one component of one image.
#[derive(Clone, Copy)]
pub(crate) struct IdctJob {
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
    /// Where the compact coefficients start in the coefficient arena.
    pub coef_base: u32,
    /// Where the plane starts in the sample arena.
    pub sample_base: u32,
    /// The order of the compact table's blocks (`BlockOrder` in src/jpeg/compact.rs): blocks
    /// per MCU across and down, MCUs per row, blocks in the table.
    pub table_mcu_w: u32,
    pub table_mcu_h: u32,
    pub table_mcus_per_row: u32,
    pub table_blocks: u32,
    /// 1 when the coefficients are dense, decoded on the GPU by stage 0 into the decoded arena
    /// (32 words a block, in table order), not compact in the upload.
    pub dense: u32,
    /// The table as libjpeg's 16-bit multipliers, sign-extended.
    pub quant: [i32; 64],
}

impl IdctJob {
    /// Words of the WGSL struct: 13 and 3 of padding, then `array<vec4<i32>, 16>`.
    pub const WORDS: usize = 16 + 64;

    pub fn words(&self) -> [u32; Self::WORDS] {
        let head = [
            self.blocks_w,
            self.width_in_blocks,
            self.height_in_blocks,
            self.sample_row_words,
            self.idct_size,
            self.blocks_per_invocation,
            self.coef_base,
            self.sample_base,
            self.table_mcu_w,
            self.table_mcu_h,
            self.table_mcus_per_row,
            self.table_blocks,
            self.dense,
            0,
            0,
            0,
        ];
        std::array::from_fn(|i| match i {
            0..16 => head[i],
            _ => self.quant[i - 16] as u32,
        })
    }
}

/// `Job` of shaders/entropy.wgsl: one image's entropy-coded segment.
#[derive(Clone, Copy, Default)]
pub(crate) struct EntropyJob {
    /// Where the un-stuffed data starts in the upload, its words and its bits.
    pub data_base: u32,
    pub data_words: u32,
    pub bit_len: u32,
    /// Where its Huffman tables start in the upload.
    pub tables_base: u32,
    /// Its first subsequence record, and how many it has.
    pub first_span: u32,
    pub subsequences: u32,
    /// MCUs in the scan, blocks per MCU.
    pub mcus: u32,
    pub blocks_per_mcu: u32,
    /// Its place among the batch's segments, which picks its words in the flags buffer.
    pub slot: u32,
    /// `McuBlock::word` of each block of the MCU.
    pub mcu_blocks: [u32; 10],
    /// Where each component's dense coefficients start in the decoded arena.
    pub out_base: [u32; 4],
}

impl EntropyJob {
    /// Words of the WGSL struct: 9, then `array<u32, 10>` and `array<u32, 4>`.
    pub const WORDS: usize = 9 + 10 + 4;

    pub fn words(&self) -> [u32; Self::WORDS] {
        let head = [
            self.data_base,
            self.data_words,
            self.bit_len,
            self.tables_base,
            self.first_span,
            self.subsequences,
            self.mcus,
            self.blocks_per_mcu,
            self.slot,
        ];
        std::array::from_fn(|i| match i {
            0..9 => head[i],
            9..19 => self.mcu_blocks[i - 9],
            _ => self.out_base[i - 19],
        })
    }
}

/// One component's plane as shaders/color.wgsl reads it.
#[derive(Clone, Copy, Default)]
pub(crate) struct PlaneParams {
    /// Where the plane starts in the sample arena.
    pub base: u32,
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

/// `Job` of shaders/color.wgsl: one image.
#[derive(Clone, Copy)]
pub(crate) struct ColorJob {
    /// Image width.
    pub width: u32,
    /// Image height.
    pub height: u32,
    /// Where the image's pixels start in the RGBX arena.
    pub rgbx_base: u32,
    /// Index of the colour space (order of `ColorSpace`).
    pub color_space: u32,
    /// Components 0..3.
    pub planes: [PlaneParams; 4],
    /// EXIF orientation to store the pixels in (1: as decoded).
    pub orientation: u32,
}

impl ColorJob {
    /// Words of the WGSL struct: 4, then `array<vec4<u32>, 4>` twice, then the orientation
    /// padded to the struct's 16-byte alignment.
    pub const WORDS: usize = 4 + 16 + 16 + 4;

    pub fn words(&self) -> [u32; Self::WORDS] {
        let mut words = [0; Self::WORDS];
        words[..4].copy_from_slice(&[self.width, self.height, self.rgbx_base, self.color_space]);
        for (c, p) in self.planes.iter().enumerate() {
            words[4 + 4 * c..8 + 4 * c].copy_from_slice(&[p.base, p.stride, p.width, p.height]);
            words[20 + 4 * c..24 + 4 * c].copy_from_slice(&[p.method, p.box_h, p.box_v, 0]);
        }
        words[36] = self.orientation;
        words
    }
}

/// `Job` of shaders/resample_h.wgsl: one image.
#[derive(Clone, Copy)]
pub(crate) struct HorizontalJob {
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
    /// Where the source image starts in the RGBX arena.
    pub source_base: u32,
    /// Where the output starts in the horizontal-pass arena.
    pub result_base: u32,
    /// Where the (start, count) pairs start in the tap arena.
    pub bounds_base: u32,
    /// Where the weights start in the tap arena.
    pub weights_base: u32,
}

impl HorizontalJob {
    /// Words of the WGSL struct.
    pub const WORDS: usize = 9;

    pub fn words(&self) -> [u32; Self::WORDS] {
        [
            self.out_width,
            self.rows,
            self.in_width,
            self.window,
            self.first_row,
            self.source_base,
            self.result_base,
            self.bounds_base,
            self.weights_base,
        ]
    }
}

/// `Job` of shaders/tensor.wgsl: the part of one image's output in one window of the output.
#[derive(Clone, Copy)]
pub(crate) struct TensorJob {
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
    /// Whether the source is the decoded image (no horizontal pass) rather than the pass's output.
    pub from_rgbx: bool,
    /// Where the source image starts in its arena.
    pub source_base: u32,
    /// Where the vertical (start, count) pairs start in the constants.
    pub bounds_base: u32,
    /// Where the vertical weights start in the constants.
    pub weights_base: u32,
    /// The image's first output word this job computes.
    pub first_word: u32,
    /// Where that word goes in the dispatch's output window.
    pub out_base: u32,
    /// Source channel of each output channel.
    pub channel_map: [u32; 3],
}

impl TensorJob {
    /// Words of the WGSL struct: 16 and a `vec4<u32>`.
    pub const WORDS: usize = 20;

    pub fn words(&self) -> [u32; Self::WORDS] {
        [
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
            u32::from(self.from_rgbx),
            self.source_base,
            self.bounds_base,
            self.weights_base,
            self.first_word,
            self.out_base,
            self.channel_map[0],
            self.channel_map[1],
            self.channel_map[2],
            0,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(file: &str) -> naga::Module {
        let dir = format!("{}/shaders", env!("CARGO_MANIFEST_DIR"));
        let jobs = std::fs::read_to_string(format!("{dir}/jobs.wgsl")).unwrap();
        let source = std::fs::read_to_string(format!("{dir}/{file}")).unwrap();
        naga::front::wgsl::parse_str(&(jobs + &source)).unwrap()
    }

    #[test]
    fn every_stage_uses_the_dispatch_workgroup_size() {
        for file in [
            "entropy.wgsl",
            "idct.wgsl",
            "color.wgsl",
            "resample_h.wgsl",
            "tensor.wgsl",
        ] {
            let module = stage(file);
            for entry_point in &module.entry_points {
                assert_eq!(
                    entry_point.workgroup_size,
                    [super::super::dispatch::WORKGROUP, 1, 1],
                    "{file}"
                );
            }
        }
    }

    #[test]
    fn job_sizes_match_the_shaders() {
        for (file, words) in [
            ("entropy.wgsl", EntropyJob::WORDS),
            ("idct.wgsl", IdctJob::WORDS),
            ("color.wgsl", ColorJob::WORDS),
            ("resample_h.wgsl", HorizontalJob::WORDS),
            ("tensor.wgsl", TensorJob::WORDS),
        ] {
            let module = stage(file);
            let job = module
                .types
                .iter()
                .find(|(_, t)| t.name.as_deref() == Some("Job"))
                .unwrap()
                .1;
            assert_eq!(
                job.inner.size(module.to_ctx()) as usize,
                words * 4,
                "{file}"
            );
        }
    }
}

//! The per-job records the stage shaders read (`struct Job` of each shader), as `#[repr(C)]`
//! plain-old-data structs laid out word for word like the WGSL struct each mirrors, and written
//! into the upload as they are (bytemuck). A test checks each size against its shader.

use bytemuck::{Pod, Zeroable};

use crate::plan::BoxBlur;

/// `Job` of shaders/idct.wgsl: one component of one image.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
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
    /// Where the coefficients start: compact ones in the upload's coefficient region, dense
    /// ones (`dense`) in the decoded arena.
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
    /// The WGSL struct aligns `quant` (vectors) to 16 bytes.
    pub padding: [u32; 3],
    /// The table as libjpeg's 16-bit multipliers, sign-extended.
    pub quant: [i32; 64],
}

/// `Job` of shaders/entropy.wgsl: one restart interval of an image's entropy-coded segment (the
/// whole scan, without restart markers). Small, as a 12 MP photo may have 24,000 of them; what
/// its intervals share is in its [`EntropyImage`].
#[repr(C)]
#[derive(Clone, Copy, Default, Pod, Zeroable)]
pub(crate) struct EntropyJob {
    /// Where the interval's un-stuffed data starts in the upload, and its bits (its words and
    /// subsequences follow from them).
    pub data_base: u32,
    pub bit_len: u32,
    /// Its first subsequence record.
    pub first_span: u32,
    /// Its place among its image's intervals (its first MCU follows).
    pub index: u32,
    /// Its image's place among the batch's, which picks its words in the flags buffer.
    pub image: u32,
}

/// `Image` of shaders/entropy.wgsl: what an image's restart intervals share.
#[repr(C)]
#[derive(Clone, Copy, Default, Pod, Zeroable)]
pub(crate) struct EntropyImage {
    /// Where its Huffman tables start in the upload.
    pub tables_base: u32,
    /// Blocks per MCU.
    pub blocks_per_mcu: u32,
    /// MCUs in the scan, and in each restart interval (the last may have fewer).
    pub mcus: u32,
    pub restart_mcus: u32,
    /// Each block's scan component, two bits a block (block b at bit 2b): what every decoding
    /// step reads, loaded once as one word.
    pub scan_comps: u32,
    /// `McuBlock::word` of each block of the MCU.
    pub mcu_blocks: [u32; 10],
    /// Where each component's dense coefficients start in the decoded arena.
    pub out_base: [u32; 4],
}

/// One component's plane as shaders/color.wgsl reads it (`planes[c]`).
#[repr(C)]
#[derive(Clone, Copy, Default, Pod, Zeroable)]
pub(crate) struct PlaneGeometry {
    /// Where the plane starts in the sample arena.
    pub base: u32,
    /// Bytes per plane row.
    pub stride: u32,
    /// Real samples per row.
    pub width: u32,
    /// Real rows.
    pub height: u32,
}

/// How one component is upsampled (`axes[c]` of shaders/color.wgsl): its
/// [`crate::plan::Upsampling::axes`].
#[repr(C)]
#[derive(Clone, Copy, Default, Pod, Zeroable)]
pub(crate) struct PlaneUpsampling {
    /// Output samples per source sample, horizontally and vertically.
    pub repeat_h: u32,
    pub repeat_v: u32,
    /// 1 where that axis is a fancy (triangle) filter.
    pub fancy_h: u32,
    pub fancy_v: u32,
}

/// `Job` of shaders/color.wgsl: one image.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
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
    pub planes: [PlaneGeometry; 4],
    pub axes: [PlaneUpsampling; 4],
    /// EXIF orientation to store the pixels in (1: as decoded).
    pub orientation: u32,
    /// The WGSL struct's size is a multiple of its 16-byte alignment.
    pub padding: [u32; 3],
}

/// `Job` of shaders/resample_h.wgsl: one image.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
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

/// `Job` of shaders/tensor.wgsl: the part of one image's output in one window of the output.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
pub(crate) struct TensorJob {
    /// Output (crop) width.
    pub out_width: u32,
    /// Output (crop) height.
    pub out_height: u32,
    /// Resized image width.
    pub width: u32,
    /// Resized image height.
    pub height: u32,
    /// Crop start in the padded image (the resized image without pads; negative: zero
    /// padding).
    pub crop_x: i32,
    /// The same for rows.
    pub crop_y: i32,
    /// 1 when the vertical pass runs.
    pub vertical: u32,
    /// Vertical weights per output row.
    pub window: u32,
    /// 1 for C×H×W, 0 for H×W×C.
    pub chw: u32,
    /// Elements per output word.
    pub per_word: u32,
    /// 1 when the source is the decoded image (no horizontal pass), 0 for the pass's output.
    pub from_rgbx: u32,
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
    /// Words per source row.
    pub stride: u32,
    /// Bit 0: mirror left to right; bit 1: top to bottom (the output position before the crop).
    pub flips: u32,
    /// 1 when the flipped image is rotated (`rotation_x`, `rotation_y`, `fill`).
    pub rotate: u32,
    /// The rotation's fill, R | G << 8 | B << 16.
    pub fill: u32,
    /// `RandomErasing`'s boxes: where their records start in the constants
    /// ([`super::work::erasure_words`]), how many there are, where the noise's table of
    /// element bits starts in the constants, and one unused word.
    pub erasures: [u32; 4],
    /// Source channel of each output channel (the fourth unused: the WGSL field is a `vec4`).
    pub channel_map: [u32; 4],
    /// The rotation's fixed-point map ([`crate::plan::Rotation`]): the source column per
    /// output column, per row, at the first pixel, then one unused word (a `vec4`).
    pub rotation_x: [i32; 4],
    /// The same for the source row.
    pub rotation_y: [i32; 4],
    /// The padded image's width and height (what the crop takes from) and how many pads
    /// ([`crate::plan::Padding`]) make it of the resized image, then one unused word.
    pub padded: [u32; 4],
    /// Per pad, outermost first: the columns it adds on the left, the rows on top, and the
    /// width and height of the image it pads.
    pub pads: [[i32; 4]; MAX_PADS],
    /// Per pad: [`PAD_CONSTANT`], [`PAD_EDGE`], [`PAD_REFLECT`] or [`PAD_SYMMETRIC`] (the last
    /// word unused).
    pub pad_modes: [u32; 4],
    /// Per pad: the constant mode's fill, R | G << 8 | B << 16 (the last word unused).
    pub pad_fills: [u32; 4],
}

/// The most pads of one image: `Pad`'s, `RandomCrop`'s padding and its `pad_if_needed`.
pub(crate) const MAX_PADS: usize = 3;

/// `TensorJob::pad_modes`, as shaders/tensor.wgsl numbers them.
pub(crate) const PAD_CONSTANT: u32 = 0;
pub(crate) const PAD_EDGE: u32 = 1;
pub(crate) const PAD_REFLECT: u32 = 2;
pub(crate) const PAD_SYMMETRIC: u32 = 3;

/// `Job` of shaders/adjust.wgsl: one image's colour adjustments.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
pub(crate) struct AdjustJob {
    /// Where the image's RGBX pixels start in the pixel arena, and how many there are.
    pub pixels_base: u32,
    pub pixels: u32,
    /// Adjustments in `kinds`/`factors`.
    pub adjustments: u32,
    /// Each adjustment: [`BRIGHTNESS`], [`CONTRAST`], ... [`GRAYSCALE`], or [`REMAP`].
    pub kinds: [u32; MAX_ADJUSTMENTS],
    /// Their factors, as the float32 values Pillow is given; for the hue, the shift of the H
    /// channel (0..=255, exact in a float); posterize's bits, solarize's first inverted value;
    /// a remap's index in `remaps`.
    pub factors: [f32; MAX_ADJUSTMENTS],
    /// The remaps ([`crate::plan::Rotation`]), [`REMAP_WORDS`] each: the fixed-point map (the
    /// source column per output column, per row, at the first pixel; the same for the source
    /// row); the fill, R | G << 8 | B << 16; the sampling ([`NEAREST`], [`SCALE`],
    /// [`BILINEAR`], [`BICUBIC`], [`NEAREST_POINT`]); the matrix's six doubles, low word first;
    /// a perspective's two more (zeros for an affine map).
    pub remaps: [i32; REMAP_WORDS * MAX_REMAPS],
    /// The blur's kernels ([`crate::plan::Blur`]): [`MAX_KERNEL`] weights across, then as many
    /// down (its sides are the [`BLUR`] step's factor, width | height << 8).
    pub blur: [f32; 2 * MAX_KERNEL],
    /// The image's width (sharpness and the blur read its neighbours).
    pub width: u32,
    /// Always 0, read at run time: XOR-ed into a product's bits so that the shader compiler
    /// cannot fuse the product into the sum after it (Pillow rounds both).
    pub zero: u32,
    /// Where AugMix's kept image starts, in words from `pixels_base` (its float32 sum follows,
    /// three words a pixel); 0 without AugMix.
    pub mix: u32,
}

impl Default for AdjustJob {
    fn default() -> Self {
        Self::zeroed()
    }
}

impl AdjustJob {
    /// Words the image takes in the pixel arena: its pixels, and as many again where it
    /// sharpens (the smoothed image), remaps (the remapped image) or blurs (the blurred one, or
    /// a box blur's every other pass),
    /// then a word per column and per row where a remap walks Pillow's scaling path (the walks).
    pub fn arena_words(&self) -> u64 {
        let mixes = self.mixes();
        // AugMix's kept image and its float32 sum (or running blend), after the rest.
        self.scratch_words() + if mixes { 4 * u64::from(self.pixels) } else { 0 }
    }

    /// The image's words in the pixel arena before AugMix's (see [`Self::arena_words`]).
    pub fn scratch_words(&self) -> u64 {
        let scratch = [SHARPNESS, REMAP, BLUR, BOX_BLUR]
            .iter()
            .any(|&k| self.has_step(k));
        let remaps = self.steps().filter(|&(k, _)| k == REMAP).count();
        let scales = (0..remaps).any(|r| self.remaps[r * REMAP_WORDS + 7] == SCALE as i32);
        let walks = if scales {
            u64::from(self.width) + u64::from(self.pixels / self.width.max(1))
        } else {
            0
        };
        u64::from(self.pixels) * (1 + u64::from(scratch)) + walks
    }

    /// The loop iterations one lane of shaders/adjust.wgsl runs for this job, counted as
    /// llvmpipe counts them (every loop's iterations and its exit test), at most: each step's
    /// passes over the image's pixels (256 lanes share them), the blur's rows and eight-tap runs,
    /// tables and walks. Loops of a few constant iterations (a pixel's three channels) are
    /// unrolled before llvmpipe counts (autocontrast and equalize of a 1600x1203 photo, which
    /// would count 76,491 with them, are exact there); the bicubic map's are counted anyway.
    pub fn lane_iterations(&self) -> u64 {
        let per_lane = u64::from(self.pixels).div_ceil(256);
        // A pass over the image with `inner` loop iterations per pixel.
        let pass = |inner: u64| per_lane * (1 + inner) + 1;
        let side = u64::from(self.width).max(u64::from(self.pixels / self.width.max(1)));
        let work: u64 = self
            .steps()
            .enumerate()
            .map(|(k, (kind, radius))| match kind {
                // Each sweep's box: 2·radius + 1 values and the loop's exit test.
                BOX_BLUR => 2 * u64::from(BoxBlur::PASSES) * pass(2 * u64::from(radius) + 2) + 7,
                BLUR => {
                    let sides = self.factors[k] as u64;
                    let (kx, ky) = (sides & 255, sides >> 8);
                    (kx * ky).div_ceil(256) + 1 + pass(ky + 1 + ky * (kx.div_ceil(8) + 1)) + pass(0)
                }
                REMAP => {
                    let sampling = self.remaps[self.factors[k] as usize * REMAP_WORDS + 7];
                    // A perspective's two divisions, seven turns each.
                    let at = self.factors[k] as usize * REMAP_WORDS;
                    let divides = self.remaps[at + 20..at + 24].iter().any(|&w| w != 0);
                    let division = if divides { 2 * 8 } else { 0 };
                    match sampling as u32 {
                        BICUBIC => pass(17 + 3 * 6 + 1 + division) + pass(0),
                        BILINEAR | NEAREST_POINT => pass(division) + pass(0),
                        _ => pass(0) + pass(0) + side + 1,
                    }
                }
                AUTOCONTRAST | EQUALIZE => 2 * 4 + pass(0) + 257 + 4 * 258 + pass(0),
                KEEP_FOR_MIX | ADD_TO_MIX | BLEND_MIX | KEEP_FOR_BLENDS | BLEND_CHAIN
                | BLEND_LAST_CHAIN => pass(3),
                SHARPNESS => pass(0) + pass(0),
                CONTRAST => 2 * pass(0) + 9,
                _ => pass(0),
            })
            .sum();
        work + u64::from(self.adjustments) + 1
    }

    /// Whether the job runs AugMix, which keeps the image and mixes (or blends) after the rest.
    pub fn mixes(&self) -> bool {
        self.has_step(KEEP_FOR_MIX) || self.has_step(KEEP_FOR_BLENDS)
    }

    /// Whether one of the job's steps is of `kind`.
    pub fn has_step(&self, kind: u32) -> bool {
        self.steps().any(|(k, _)| k == kind)
    }

    /// Each step's kind, and the radius a [`BOX_BLUR`]'s word holds (0 for the others).
    fn steps(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.kinds[..self.adjustments as usize]
            .iter()
            .map(|&word| (word & ((1 << KIND_BITS) - 1), word >> KIND_BITS))
    }

    /// Whether an adjustment reads the autocontrast fix table.
    pub fn autocontrasts(&self) -> bool {
        self.has_step(AUTOCONTRAST)
    }
}

/// The most steps of one image ([`crate::plan::MAX_STEPS`]); shaders/adjust.wgsl writes the
/// number again, and `job_sizes_match_the_shaders` holds the two alike.
pub(crate) const MAX_ADJUSTMENTS: usize = crate::plan::MAX_STEPS;

/// The most remaps of one image ([`crate::plan::MAX_REMAPS`]).
pub(crate) const MAX_REMAPS: usize = crate::plan::MAX_REMAPS;

/// The longest blur kernel ([`crate::transform::MAX_KERNEL`]).
pub(crate) const MAX_KERNEL: usize = crate::transform::MAX_KERNEL;

/// Words of one remap in [`AdjustJob::remaps`].
pub(crate) const REMAP_WORDS: usize = 24;

/// A remap's sampling, as shaders/adjust.wgsl numbers them: the fixed-point walk, bilinear,
/// bicubic, Pillow's scaling walk, the nearest pixel of each point in doubles (a perspective's).
pub(crate) const NEAREST: u32 = 0;
pub(crate) const BILINEAR: u32 = 1;
pub(crate) const BICUBIC: u32 = 2;
pub(crate) const SCALE: u32 = 3;
pub(crate) const NEAREST_POINT: u32 = 4;

/// `AdjustJob::kinds`, as shaders/adjust.wgsl numbers them.
pub(crate) const BRIGHTNESS: u32 = 0;
pub(crate) const CONTRAST: u32 = 1;
pub(crate) const SATURATION: u32 = 2;
pub(crate) const HUE: u32 = 3;
pub(crate) const SHARPNESS: u32 = 4;
pub(crate) const POSTERIZE: u32 = 5;
pub(crate) const SOLARIZE: u32 = 6;
pub(crate) const AUTOCONTRAST: u32 = 7;
pub(crate) const EQUALIZE: u32 = 8;
pub(crate) const GRAYSCALE: u32 = 9;
pub(crate) const REMAP: u32 = 10;
pub(crate) const BLUR: u32 = 11;
pub(crate) const SOLARIZE_ADD: u32 = 12;
pub(crate) const KEEP_FOR_MIX: u32 = 13;
pub(crate) const ADD_TO_MIX: u32 = 14;
pub(crate) const BLEND_MIX: u32 = 15;
/// Pillow's Gaussian blur: its word holds the box's whole radius above [`KIND_BITS`], its factor
/// the box's weight (an integer up to 2²⁴, exact in a float).
pub(crate) const BOX_BLUR: u32 = 16;
pub(crate) const KEEP_FOR_BLENDS: u32 = 17;
pub(crate) const BLEND_CHAIN: u32 = 18;
pub(crate) const BLEND_LAST_CHAIN: u32 = 19;
/// The bits of a `kinds` word that name the step.
pub(crate) const KIND_BITS: u32 = 8;

/// A job record as the words the upload holds.
pub(crate) fn words<J: Pod>(job: &J) -> &[u32] {
    bytemuck::cast_slice(std::slice::from_ref(job))
}

/// Words of a job record.
pub(crate) const fn word_count<J>() -> usize {
    std::mem::size_of::<J>() / 4
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(file: &str) -> naga::Module {
        naga::front::wgsl::parse_str(&super::super::shaders::stage_source(file)).unwrap()
    }

    #[test]
    fn every_stage_uses_the_dispatch_workgroup_size_stage_5_four_times_it() {
        for file in [
            "entropy.wgsl",
            "idct.wgsl",
            "color.wgsl",
            "resample_h.wgsl",
            "tensor.wgsl",
            "adjust.wgsl",
        ] {
            let module = stage(file);
            // Stage 5 runs a workgroup per image whatever its size (a job counts one
            // dispatch workgroup of invocations), and a wider one sums the luma faster.
            let lanes = if file == "adjust.wgsl" { 4 } else { 1 };
            for entry_point in &module.entry_points {
                assert_eq!(
                    entry_point.workgroup_size,
                    [super::super::dispatch::WORKGROUP * lanes, 1, 1],
                    "{file}"
                );
            }
        }
    }

    /// The adjustment kinds and the padding modes are numbered in Rust and again in
    /// shaders/adjust.wgsl and shaders/tensor.wgsl: the same numbers.
    #[test]
    fn kinds_are_numbered_alike_in_rust_and_wgsl() {
        let value = |file: &str, name: &str| -> u32 {
            let module = stage(file);
            let (_, constant) = module
                .constants
                .iter()
                .find(|(_, c)| c.name.as_deref() == Some(name))
                .unwrap_or_else(|| panic!("{file} declares no {name}"));
            match module.global_expressions[constant.init] {
                naga::Expression::Literal(naga::Literal::U32(v)) => v,
                ref other => panic!("{name} is {other:?}"),
            }
        };
        let kinds = [
            ("adjust.wgsl", "BRIGHTNESS", BRIGHTNESS),
            ("adjust.wgsl", "CONTRAST", CONTRAST),
            ("adjust.wgsl", "SATURATION", SATURATION),
            ("adjust.wgsl", "HUE", HUE),
            ("adjust.wgsl", "SHARPNESS", SHARPNESS),
            ("adjust.wgsl", "POSTERIZE", POSTERIZE),
            ("adjust.wgsl", "SOLARIZE", SOLARIZE),
            ("adjust.wgsl", "SOLARIZE_ADD", SOLARIZE_ADD),
            ("adjust.wgsl", "KEEP_FOR_MIX", KEEP_FOR_MIX),
            ("adjust.wgsl", "ADD_TO_MIX", ADD_TO_MIX),
            ("adjust.wgsl", "BLEND_MIX", BLEND_MIX),
            ("adjust.wgsl", "BOX_BLUR", BOX_BLUR),
            ("adjust.wgsl", "KEEP_FOR_BLENDS", KEEP_FOR_BLENDS),
            ("adjust.wgsl", "BLEND_CHAIN", BLEND_CHAIN),
            ("adjust.wgsl", "BLEND_LAST_CHAIN", BLEND_LAST_CHAIN),
            ("adjust.wgsl", "KIND_BITS", KIND_BITS),
            ("adjust.wgsl", "BOX_PASSES", BoxBlur::PASSES),
            ("adjust.wgsl", "AUTOCONTRAST", AUTOCONTRAST),
            ("adjust.wgsl", "EQUALIZE", EQUALIZE),
            ("adjust.wgsl", "GRAYSCALE", GRAYSCALE),
            ("adjust.wgsl", "REMAP", REMAP),
            ("adjust.wgsl", "REMAP_WORDS", REMAP_WORDS as u32),
            ("adjust.wgsl", "NEAREST", NEAREST),
            ("adjust.wgsl", "BILINEAR", BILINEAR),
            ("adjust.wgsl", "BICUBIC", BICUBIC),
            ("adjust.wgsl", "SCALE", SCALE),
            ("adjust.wgsl", "NEAREST_POINT", NEAREST_POINT),
            ("tensor.wgsl", "PAD_CONSTANT", PAD_CONSTANT),
            ("tensor.wgsl", "PAD_EDGE", PAD_EDGE),
            ("tensor.wgsl", "PAD_REFLECT", PAD_REFLECT),
            ("tensor.wgsl", "PAD_SYMMETRIC", PAD_SYMMETRIC),
        ];
        for (file, name, rust) in kinds {
            assert_eq!(value(file, name), rust, "{file}: {name}");
        }
    }

    /// Where each member of a shader's `Job` lies, as naga lays it out.
    fn member_offsets(file: &str) -> Vec<(String, u32)> {
        let module = stage(file);
        let job = module
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some("Job"))
            .unwrap()
            .1;
        let naga::TypeInner::Struct { members, .. } = &job.inner else {
            panic!("Job is a struct");
        };
        members
            .iter()
            .map(|m| (m.name.clone().unwrap_or_default(), m.offset))
            .collect()
    }

    /// The members after which WGSL aligns a vector: their offsets must agree too.
    #[test]
    fn vector_members_lie_where_the_shaders_read_them() {
        use std::mem::offset_of;
        let cases: [(&str, &[(&str, usize)]); 3] = [
            (
                "tensor.wgsl",
                &[
                    ("erasures", offset_of!(TensorJob, erasures)),
                    ("channel_map", offset_of!(TensorJob, channel_map)),
                    ("rotation_x", offset_of!(TensorJob, rotation_x)),
                    ("rotation_y", offset_of!(TensorJob, rotation_y)),
                    ("padded", offset_of!(TensorJob, padded)),
                    ("pads", offset_of!(TensorJob, pads)),
                    ("pad_modes", offset_of!(TensorJob, pad_modes)),
                    ("pad_fills", offset_of!(TensorJob, pad_fills)),
                ],
            ),
            (
                "adjust.wgsl",
                &[
                    ("kinds", offset_of!(AdjustJob, kinds)),
                    ("factors", offset_of!(AdjustJob, factors)),
                    ("remaps", offset_of!(AdjustJob, remaps)),
                    ("width", offset_of!(AdjustJob, width)),
                    ("zero", offset_of!(AdjustJob, zero)),
                ],
            ),
            ("idct.wgsl", &[("quant", offset_of!(IdctJob, quant))]),
        ];
        for (file, members) in cases {
            let offsets = member_offsets(file);
            for &(name, rust) in members {
                let wgsl = offsets.iter().find(|(n, _)| n == name).unwrap().1;
                assert_eq!(wgsl as usize, rust, "{file}: {name}");
            }
        }
    }

    #[test]
    fn job_sizes_match_the_shaders() {
        let entropy = stage("entropy.wgsl");
        let image = entropy
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some("Image"));
        let image = image.unwrap().1.inner.size(entropy.to_ctx()) as usize;
        assert_eq!(image, word_count::<EntropyImage>() * 4);
        for (file, words) in [
            ("entropy.wgsl", word_count::<EntropyJob>()),
            ("idct.wgsl", word_count::<IdctJob>()),
            ("color.wgsl", word_count::<ColorJob>()),
            ("resample_h.wgsl", word_count::<HorizontalJob>()),
            ("tensor.wgsl", word_count::<TensorJob>()),
            ("adjust.wgsl", word_count::<AdjustJob>()),
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

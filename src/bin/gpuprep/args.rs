//! Command-line spellings of the transform options and the input limits.

use crate::values::*;
use clap::{Arg, ArgMatches, Args, Command, FromArgMatches, ValueEnum};
use gpuprep::gpu::Batching;
use gpuprep::Filter;
use gpuprep::{ChannelOrder, DType, Layout, Resize};
use gpuprep::{ColorOp, ColorOperation, Limits, Transform, COLOR_OPERATIONS};

/// The input limits, as options.
#[derive(Args, Debug)]
pub struct LimitArgs {
    /// Refuse images, and outputs, with more pixels than this (decompression-bomb guard; at
    /// least 1: there is no unlimited setting).
    #[arg(long, default_value_t = Limits::default().max_pixels,
          value_parser = clap::value_parser!(u64).range(1..))]
    max_pixels: u64,
    /// Refuse files with more scans than this (progressive CPU-bomb guard; at least 1).
    #[arg(long, default_value_t = Limits::default().max_scans,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    max_scans: usize,
    /// Most bytes of prepared images in one GPU batch (the batch closes early rather than pass
    /// it).
    #[arg(long, default_value_t = Batching::default().max_bytes)]
    max_batch_bytes: u64,
    /// Most images one GPU submission carries: while decoded batches wait for the GPU,
    /// consecutive ones go to it together, each still a batch of its own (--batch or fewer:
    /// one batch per submission).
    #[arg(long, default_value_t = Batching::default().submission_images)]
    submission_images: usize,
    /// Decode files that end early as far as they go, like Pillow with
    /// `ImageFile.LOAD_TRUNCATED_IMAGES = True` (the rest is mid-grey); without it they fail.
    #[arg(long)]
    load_truncated: bool,
}

impl LimitArgs {
    /// GPU batches of up to `images` images within `--max-batch-bytes`.
    pub fn batching(&self, images: usize) -> Batching {
        Batching {
            images,
            max_bytes: self.max_batch_bytes,
            submission_images: self.submission_images,
        }
    }

    /// The limits these options describe.
    pub fn limits(&self) -> Limits {
        Limits {
            max_pixels: self.max_pixels,
            max_scans: self.max_scans,
            load_truncated: self.load_truncated,
        }
    }
}

/// The transform, as options.
#[derive(Args, Debug)]
pub struct TransformArgs {
    /// Start from a preset; the options below change it.
    #[arg(long, value_enum)]
    preset: Option<Preset>,
    /// Resize the shorter side to N (`N` or `short:N`, torchvision's Resize(N); `N,MAX` with
    /// its max_size), or to exactly WxH (torchvision's Resize((H, W))), or keeping the aspect
    /// ratio so that WxH fits inside the image (`keep:WxH`, timm's ResizeKeepRatio((H, W))) or
    /// the image inside WxH (`keep-longest:WxH`, its longest=1).
    #[arg(long, value_parser = parse_resize)]
    resize: Option<Resize>,
    /// v2's RandomResize(MIN, MAX), in place of --resize: the shorter side drawn from MIN to
    /// MAX - 1 for each image.
    #[arg(long, value_parser = parse_random_resize, value_name = "MIN,MAX")]
    random_resize: Option<gpuprep::RandomResize>,
    /// v2's RandomShortestSize(SIZES, MAX), in place of --resize: one of SIZES drawn for each
    /// image, the shorter side scaled to it (the longer kept within MAX).
    #[arg(long, value_parser = parse_random_shortest_size, value_name = "S1,S2,...[:MAX]")]
    random_shortest_size: Option<gpuprep::RandomShortestSize>,
    /// Centre crop to S×S or WxH, zero-padding smaller images (torchvision's CenterCrop).
    #[arg(long, value_parser = parse_size)]
    crop: Option<(usize, usize)>,
    /// Pad an image smaller than --crop with this fill instead (`V` or `R,G,B`): timm's
    /// CenterCropOrPad(size, fill).
    #[arg(long, value_parser = parse_fill, value_name = "V|R,G,B", requires = "crop")]
    crop_fill: Option<[u8; 3]>,
    /// torchvision's Pad(PADDING, fill, padding_mode) of the resized image: PADDING is P (every
    /// side), LR,TB or L,T,R,B; MODE constant (default), edge, reflect or symmetric; FILL `V` or
    /// `R,G,B` (default 0).
    #[arg(long, value_parser = parse_pad, value_name = "PADDING[:MODE[:FILL]]")]
    pad: Option<gpuprep::Pad>,
    /// torchvision's RandomCrop to S×S or WxH, in place of --crop: the resized image padded by
    /// PADDING (as --pad), then a box at a random place of it.
    #[arg(long, value_parser = parse_random_crop, value_name = "S|WxH[:PADDING[:MODE[:FILL]]]")]
    random_crop: Option<gpuprep::RandomCrop>,
    /// RandomCrop's pad_if_needed: a side shorter than the crop is padded to it first.
    #[arg(long)]
    pad_if_needed: bool,
    /// Resampling filter (Pillow's), default bilinear; `random`: bilinear or bicubic per sample
    /// (timm's interpolation='random', with a random resized crop).
    #[arg(long, value_enum)]
    filter: Option<FilterArg>,
    /// Decode with Pillow's draft() towards the resize target: faster, different pixels (does
    /// nothing without a resize).
    #[arg(long)]
    draft: bool,
    /// `none`, `imagenet`, or `mean=a,b,c:std=x,y,z`; implies float32 C×H×W unless
    /// --dtype/--layout say otherwise.
    #[arg(long, value_parser = parse_normalize)]
    normalize: Option<NormalizeArg>,
    /// Memory layout of each image (default: hwc for u8, chw for floats).
    #[arg(long, value_enum)]
    layout: Option<LayoutArg>,
    /// Element type (default: u8 without --normalize, f32 with it; torchvision's names work too).
    #[arg(long, value_enum)]
    dtype: Option<DTypeArg>,
    /// Output channel order (normalisation statistics stay in R, G, B order).
    #[arg(long, value_enum, default_value_t = ChannelsArg::Rgb)]
    channels: ChannelsArg,
    /// Turn each image upright by its EXIF orientation first (`ImageOps.exif_transpose`);
    /// without it images stay as stored, as `Image.open` and torchvision leave them.
    #[arg(long)]
    exif_transpose: bool,
    /// Float values as transforms.v2.ToDtype(torch.float32, scale=True) makes them, float32(v)
    /// × float32(1/255), in place of ToTensor's v / 255 (they differ in the last bit for some v).
    #[arg(long)]
    reciprocal_scale: bool,
    /// torchvision's RandomResizedCrop to S×S or WxH, in place of --resize: a random box of
    /// the image, cut out, then resized with --filter.
    #[arg(long, value_parser = parse_size)]
    random_resized_crop: Option<(usize, usize)>,
    /// RandomResizedCrop's bounds of the box's share of the image's area, `A,B`.
    #[arg(long, value_parser = parse_range, default_value = "0.08,1.0")]
    crop_scale: (f64, f64),
    /// RandomResizedCrop's bounds of the box's aspect ratio (width / height), `A,B`.
    #[arg(long, value_parser = parse_range, default_value = "0.75,1.3333333333333333")]
    crop_ratio: (f64, f64),
    /// RandomHorizontalFlip(P).
    #[arg(long, value_name = "P")]
    hflip: Option<f64>,
    /// RandomVerticalFlip(P).
    #[arg(long, value_name = "P")]
    vflip: Option<f64>,
    /// RandomRotation(D) (an angle in -D..D degrees) or of `MIN,MAX` degrees, by default after the
    /// flips, about the image's centre or `center=X,Y` (pixels); the pixels no source pixel maps
    /// to take `V` or `R,G,B` (default 0); sampled with `nearest` (default), `bilinear` or
    /// `bicubic` interpolation.
    #[arg(
        long,
        value_parser = parse_rotation,
        value_name = "D|MIN,MAX[:center=X,Y][:FILL][:INTERPOLATION]"
    )]
    random_rotation: Option<gpuprep::RandomRotation>,
    /// RandomApply([RandomRotation(...)], P): the rotation in that share of the samples.
    #[arg(long, value_name = "P")]
    random_rotation_p: Option<f64>,
    /// RandomAffine(D or MIN,MAX degrees), by default after the flips, with any of `translate=A,B`
    /// (fractions of the width and height), `scale=MIN,MAX`, `shear=S | MIN,MAX |
    /// XMIN,XMAX,YMIN,YMAX` (degrees), `center=X,Y`, a fill and an interpolation as for
    /// --random-rotation, and `v2` (transforms.v2's RandomAffine, whose matrix arithmetic differs
    /// in the last bit), each after a colon.
    #[arg(
        long,
        value_parser = parse_affine,
        value_name = "D|MIN,MAX[:translate=A,B][:scale=MIN,MAX][:shear=...][:FILL][:INTERPOLATION][:v2]"
    )]
    random_affine: Option<gpuprep::RandomAffine>,
    /// RandomApply([RandomAffine(...)], P): the map in that share of the samples.
    #[arg(long, value_name = "P")]
    random_affine_p: Option<f64>,
    /// RandomPerspective(distortion_scale=D, p=P (default 0.5)), by default after the rotation or
    /// augmentation policy; FILL as for --random-rotation; sampled with `bilinear` (default),
    /// `nearest` or `bicubic` interpolation.
    #[arg(
        long,
        value_parser = parse_perspective,
        value_name = "D[,P][:FILL][:INTERPOLATION]"
    )]
    random_perspective: Option<gpuprep::RandomPerspective>,
    /// TrivialAugmentWide(num_magnitude_bins=BINS), by default after the flips (default 31 bins);
    /// FILL and INTERPOLATION as for --random-rotation; `v2` for transforms.v2's (its Solarize
    /// threshold is 255 × linspace(1, 0), not linspace(255, 0)).
    #[arg(
        long,
        value_parser = parse_trivial_augment,
        value_name = "BINS[:FILL][:INTERPOLATION][:v2]"
    )]
    trivial_augment: Option<gpuprep::TrivialAugment>,
    /// RandAugment(num_ops=N, magnitude=M, num_magnitude_bins=BINS), by default after the flips
    /// (default 2,9,31); FILL, INTERPOLATION and `v2` as for --trivial-augment.
    #[arg(
        long,
        value_parser = parse_rand_augment,
        value_name = "N,M[,BINS][:FILL][:INTERPOLATION][:v2]"
    )]
    rand_augment: Option<gpuprep::RandAugment>,
    /// AutoAugment(policy=POLICY), by default after the flips: imagenet, cifar10 or svhn; FILL,
    /// INTERPOLATION and `v2` as for --trivial-augment.
    #[arg(
        long,
        value_parser = parse_auto_augment,
        value_name = "POLICY[:FILL][:INTERPOLATION][:v2]"
    )]
    auto_augment: Option<gpuprep::AutoAugment>,
    /// timm's RandAugment of a `rand-...` CONFIG (`rand-m9-mstd0.5-inc1`), by default after the
    /// flips: timm's own operations; FILL (default timm's 128; create_transform's is its mean,
    /// 124,116,104 for ImageNet's) and INTERPOLATION (default random: bilinear or bicubic per
    /// operation, as timm draws them; create_transform passes bilinear).
    #[arg(
        long,
        value_parser = parse_timm_rand_augment,
        value_name = "CONFIG[:FILL][:INTERPOLATION]"
    )]
    timm_rand_augment: Option<gpuprep::TimmRandAugment>,
    /// timm's AutoAugment of a CONFIG (`original`, `originalr`, `v0`, `v0r`, or `3a`, DeiT III's
    /// solarize, grey or Pillow's Gaussian blur; each with an optional `-mstdS`:
    /// `original-mstd0.5`), by default after the flips: timm's own policies and operations; FILL
    /// and INTERPOLATION as for --timm-rand-augment.
    #[arg(
        long,
        value_parser = parse_timm_auto_augment,
        value_name = "CONFIG[:FILL][:INTERPOLATION]"
    )]
    timm_auto_augment: Option<gpuprep::TimmAutoAugment>,
    /// timm's AugMix of an `augmix-...` CONFIG (`m` severity, default 3; `w` chains, 3; `d`
    /// depth, 1 to 3 drawn when absent; `a` alpha, 1; `mstd`, uniform magnitudes when absent;
    /// `b1` timm's blended form, one blend a chain), by default after the flips; FILL and
    /// INTERPOLATION as for --timm-rand-augment; `translate=P` the largest translation's share
    /// of the side (timm's 0.45; create_transform passes 0.3).
    #[arg(
        long,
        value_parser = parse_timm_aug_mix,
        value_name = "CONFIG[:FILL][:INTERPOLATION][:translate=P]"
    )]
    timm_aug_mix: Option<gpuprep::TimmAugMix>,
    /// ColorJitter(brightness, contrast, saturation[, hue]) as `B,C,S[,H]`.
    #[arg(long, value_parser = parse_jitter, value_name = "B,C,S[,H]")]
    color_jitter: Option<gpuprep::ColorJitter>,
    /// RandomApply([ColorJitter(...)], P): the colour jitter in that share of the samples.
    #[arg(long, value_name = "P")]
    color_jitter_p: Option<f64>,
    /// RandomGrayscale(P), by default after the colour jitter.
    #[arg(long, value_name = "P")]
    grayscale: Option<f64>,
    /// torchvision's single-operation transforms, one flag each, by default after --grayscale in
    /// the order given.
    #[command(flatten)]
    color_ops: ColorOpArgs,
    /// GaussianBlur(kernel_size=K or KXxKY, sigma=S or (SMIN, SMAX); default (0.1, 2.0)), after
    /// the colour operations; `:v2` for transforms.v2's (its kernels a softmax, whose float32
    /// weights are v1's Gaussian rounded otherwise).
    #[arg(long, value_parser = parse_blur, value_name = "K|KXxKY[,S|,SMIN,SMAX][:v2]")]
    gaussian_blur: Option<gpuprep::GaussianBlur>,
    /// RandomApply([GaussianBlur(...)], P): the blur in that share of the samples.
    #[arg(long, value_name = "P")]
    gaussian_blur_p: Option<f64>,
    /// RandomErasing(P) of the output tensor (torchvision's scale and ratio), writing `V` or
    /// `V1,V2,V3` per channel (default 0), `random` (a normal value per element, torchvision's
    /// value='random', timm's 'pixel') or `channel` (one per channel and box, timm's 'rand').
    #[arg(
        long,
        value_parser = parse_erasing,
        value_name = "P[:V[,V,V]|:random|:channel]"
    )]
    random_erasing: Option<gpuprep::RandomErasing>,
    /// RandomErasing's boxes per erased image, uniform in MIN..=MAX (timm's min_count and
    /// max_count; the area range is shared among them); default 1.
    #[arg(long, value_parser = parse_count, value_name = "MIN[,MAX]")]
    random_erasing_count: Option<(u32, u32)>,
    /// The order of the steps that keep the image's size, as a torchvision Compose lists them:
    /// their flags without `--`, every one given, e.g. `color-jitter,random-rotation`; default
    /// torchvision's usual order (the rotation or policy, --random-perspective,
    /// --color-jitter, --grayscale, the single-operation transforms, --gaussian-blur). The
    /// resize, pad, crops and flips run before them. `random-order(A+B)` is torchvision's
    /// RandomOrder of those steps (their order drawn per sample), `random-choice(A+B)` its
    /// RandomChoice (one drawn per sample; `A:W` weighs A by W, p's entry).
    #[arg(long, value_parser = parse_order, value_name = "FLAG,random-choice(FLAG+FLAG),...")]
    order: Option<gpuprep::StepOrder>,
    /// The seed each sample's random parameters are drawn from (with --epoch and the file's
    /// place among the inputs).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The epoch the random parameters are drawn for.
    #[arg(long, default_value_t = 0)]
    epoch: u64,
}

/// The flags of [`COLOR_OPERATIONS`], made from the table: `--random-posterize BITS[,P]`,
/// `--random-invert P`, ...; the operations in the order their flags are given.
#[derive(Debug)]
struct ColorOpArgs(Vec<ColorOp>);

impl Args for ColorOpArgs {
    fn augment_args(command: Command) -> Command {
        COLOR_OPERATIONS.iter().fold(command, |command, operation| {
            let value_name = operation
                .argument
                .map_or("P".into(), |a| format!("{}[,P]", a.name.to_uppercase()));
            let (call, p) = match operation.argument {
                Some(a) => (format!("{}, p", a.name), "; P defaults to 0.5"),
                None => ("p".into(), ""),
            };
            command.arg(
                Arg::new(operation.method)
                    .long(&operation.flag[2..])
                    .value_name(value_name)
                    .help(format!(
                        "torchvision's {}({call}): {}{p}. After --grayscale, in the order given",
                        operation.torchvision, operation.summary
                    ))
                    .value_parser(move |text: &str| parse_color_op(operation, text))
                    // A threshold or a factor may be negative: the value is read as numbers
                    // whatever it starts with.
                    .allow_hyphen_values(true),
            )
        })
    }

    fn augment_args_for_update(command: Command) -> Command {
        Self::augment_args(command)
    }
}

impl FromArgMatches for ColorOpArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut given: Vec<(usize, ColorOp)> = COLOR_OPERATIONS
            .iter()
            .filter_map(|o| Some((matches.index_of(o.method)?, *matches.get_one(o.method)?)))
            .collect();
        given.sort_by_key(|&(place, _)| place);
        Ok(Self(given.into_iter().map(|(_, op)| op).collect()))
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

/// `ARG[,P]`, or `P` for an operation without an argument; an integer argument written as one.
fn parse_color_op(operation: &ColorOperation, text: &str) -> Result<ColorOp, String> {
    let numbers = parse_numbers(text, 1..=1 + usize::from(operation.argument.is_some()))?;
    if let Some(a) = operation.argument.filter(|a| a.integer) {
        let first = text.split(',').next().unwrap_or("").trim();
        if first.parse::<i64>().is_err() {
            return Err(format!(
                "{}'s {} must be an integer, got {first:?}",
                operation.method, a.name
            ));
        }
    }
    let (argument, p) = match (operation.argument, numbers.as_slice()) {
        (None, &[p]) => (None, p),
        (Some(_), &[argument]) => (Some(argument), 0.5),
        (Some(_), &[argument, p]) => (Some(argument), p),
        _ => unreachable!("parse_numbers gives one or two"),
    };
    ColorOp::new(operation.method, argument, p).map_err(|e| e.to_string())
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Preset {
    /// Resize(256), CenterCrop(224), bilinear, ImageNet normalisation, float32 C×H×W.
    ImagenetEval,
    /// timm eval: Resize(256) bicubic (crop_pct 0.875), CenterCrop(224), ImageNet, float32.
    TimmEval,
    /// torchvision's ImageNet training preset: RandomResizedCrop(224) bilinear,
    /// RandomHorizontalFlip(0.5), ImageNet normalisation, float32 C×H×W.
    ImagenetTrain,
    /// timm's training defaults: RandomResizedCrop(224) bilinear or bicubic per sample,
    /// RandomHorizontalFlip(0.5), ColorJitter(0.4, 0.4, 0.4), ImageNet, float32 C×H×W.
    TimmTrain,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum FilterArg {
    Random,
    Nearest,
    Bilinear,
    Bicubic,
    Lanczos,
    Box,
    Hamming,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum LayoutArg {
    Hwc,
    Chw,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum DTypeArg {
    #[value(alias = "uint8")]
    U8,
    #[value(alias = "float32")]
    F32,
    #[value(alias = "float16")]
    F16,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ChannelsArg {
    Rgb,
    Bgr,
}

impl TransformArgs {
    /// A note on options that do nothing as given, for stderr.
    pub fn notes(&self) -> Option<&'static str> {
        let resized = self.resize.is_some() || self.preset.is_some();
        let cropped = self.random_resized_crop.is_some()
            || matches!(self.preset, Some(Preset::ImagenetTrain | Preset::TimmTrain));
        let jittered =
            self.color_jitter.is_some() || matches!(self.preset, Some(Preset::TimmTrain));
        if self.color_jitter_p.is_some() && !jittered {
            return Some("note: --color-jitter-p does nothing without --color-jitter");
        }
        if self.random_erasing_count.is_some() && self.random_erasing.is_none() {
            return Some("note: --random-erasing-count does nothing without --random-erasing");
        }
        if self.gaussian_blur_p.is_some() && self.gaussian_blur.is_none() {
            return Some("note: --gaussian-blur-p does nothing without --gaussian-blur");
        }
        if self.random_rotation_p.is_some() && self.random_rotation.is_none() {
            return Some("note: --random-rotation-p does nothing without --random-rotation");
        }
        if self.random_affine_p.is_some() && self.random_affine.is_none() {
            return Some("note: --random-affine-p does nothing without --random-affine");
        }
        if self.pad_if_needed && self.random_crop.is_none() {
            return Some("note: --pad-if-needed does nothing without --random-crop");
        }
        if matches!(self.filter, Some(FilterArg::Random)) && !cropped {
            return Some("note: --filter random needs --random-resized-crop; bilinear is used");
        }
        if !cropped && (self.crop_scale != (0.08, 1.0) || self.crop_ratio.0 != 0.75) {
            return Some(
                "note: --crop-scale and --crop-ratio do nothing without --random-resized-crop",
            );
        }
        (self.draft && !resized)
            .then_some("note: --draft does nothing without --resize or a preset")
    }

    /// The transform these options describe.
    pub fn transform(&self) -> Transform {
        let mut t = match self.preset {
            Some(Preset::ImagenetEval) => Transform::imagenet_eval(),
            Some(Preset::TimmEval) => Transform::timm_eval(224, 0.875),
            Some(Preset::ImagenetTrain) => Transform::imagenet_train(),
            Some(Preset::TimmTrain) => Transform::timm_train(),
            None => Transform::default(),
        };
        if let Some(size) = self.random_resized_crop {
            t.random_resized_crop = Some(gpuprep::RandomResizedCrop {
                size,
                scale: self.crop_scale,
                ratio: self.crop_ratio,
                filters: None,
            });
        }
        if let (Some(FilterArg::Random), Some(crop)) = (self.filter, &mut t.random_resized_crop) {
            crop.filters = Some([Filter::Bilinear, Filter::Bicubic]);
        }
        t.pad = self.pad.or(t.pad);
        t.random_crop = self.random_crop.or(t.random_crop);
        if let Some(crop) = &mut t.random_crop {
            crop.pad_if_needed |= self.pad_if_needed;
        }
        t.horizontal_flip = self.hflip.or(t.horizontal_flip);
        t.vertical_flip = self.vflip.or(t.vertical_flip);
        t.random_rotation = self.random_rotation.or(t.random_rotation);
        if let (Some(rotation), Some(p)) = (&mut t.random_rotation, self.random_rotation_p) {
            rotation.p = p;
        }
        t.random_affine = self.random_affine.or(t.random_affine);
        if let (Some(affine), Some(p)) = (&mut t.random_affine, self.random_affine_p) {
            affine.p = p;
        }
        t.random_perspective = self.random_perspective.or(t.random_perspective);
        t.trivial_augment = self.trivial_augment.or(t.trivial_augment);
        t.rand_augment = self.rand_augment.or(t.rand_augment);
        t.auto_augment = self.auto_augment.or(t.auto_augment);
        t.timm_rand_augment = self.timm_rand_augment.or(t.timm_rand_augment);
        t.timm_auto_augment = self.timm_auto_augment.or(t.timm_auto_augment);
        t.timm_aug_mix = self.timm_aug_mix.or(t.timm_aug_mix);
        t.color_jitter = self.color_jitter.or(t.color_jitter);
        if let (Some(jitter), Some(p)) = (&mut t.color_jitter, self.color_jitter_p) {
            jitter.p = p;
        }
        t.grayscale = self.grayscale.or(t.grayscale);
        t.gaussian_blur = self.gaussian_blur.or(t.gaussian_blur);
        if let (Some(blur), Some(p)) = (&mut t.gaussian_blur, self.gaussian_blur_p) {
            blur.p = p;
        }
        t.random_erasing = self.random_erasing.or(t.random_erasing);
        if let Some(count) = self.random_erasing_count {
            t.random_erasing = t
                .random_erasing
                .map(|e| gpuprep::RandomErasing { count, ..e });
        }
        for &op in &self.color_ops.0 {
            t.color_ops = t.color_ops.with(op);
        }
        t.order = self.order.unwrap_or(t.order);
        (t.seed, t.epoch) = (self.seed, self.epoch);
        t.resize = self.resize.or(t.resize);
        t.random_resize = self.random_resize.or(t.random_resize);
        t.random_shortest_size = self.random_shortest_size.or(t.random_shortest_size);
        t.center_crop = self.crop.or(t.center_crop);
        t.center_crop_fill = self.crop_fill.or(t.center_crop_fill);
        t.draft |= self.draft;
        if let Some(filter) = self.filter {
            t.filter = match filter {
                FilterArg::Random => t.filter,
                FilterArg::Nearest => Filter::Nearest,
                FilterArg::Bilinear => Filter::Bilinear,
                FilterArg::Bicubic => Filter::Bicubic,
                FilterArg::Lanczos => Filter::Lanczos,
                FilterArg::Box => Filter::Box,
                FilterArg::Hamming => Filter::Hamming,
            };
        }
        match self.normalize {
            Some(NormalizeArg::None) => t.normalize = None,
            Some(NormalizeArg::Stats(stats)) => {
                t.normalize = Some(stats);
                t.dtype = DType::F32;
                t.layout = Layout::Chw;
            }
            None => {}
        }
        if let Some(dtype) = self.dtype {
            t.dtype = match dtype {
                DTypeArg::U8 => DType::U8,
                DTypeArg::F32 => DType::F32,
                DTypeArg::F16 => DType::F16,
            };
            if self.layout.is_none() && self.normalize.is_none() && self.preset.is_none() {
                t.layout = if t.dtype == DType::U8 {
                    Layout::Hwc
                } else {
                    Layout::Chw
                };
            }
        }
        if let Some(layout) = self.layout {
            t.layout = match layout {
                LayoutArg::Hwc => Layout::Hwc,
                LayoutArg::Chw => Layout::Chw,
            };
        }
        t.exif_transpose |= self.exif_transpose;
        t.reciprocal_scale |= self.reciprocal_scale;
        t.channel_order = match self.channels {
            ChannelsArg::Rgb => ChannelOrder::Rgb,
            ChannelsArg::Bgr => ChannelOrder::Bgr,
        };
        t
    }
}

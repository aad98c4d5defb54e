//! Command-line spellings of the transform options and the input limits.

use clap::{Arg, ArgMatches, Args, Command, FromArgMatches, ValueEnum};
use gpuprep::gpu::Batching;
use gpuprep::Filter;
use gpuprep::{ChannelOrder, DType, Layout, Normalize, Resize};
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
    /// Resize the shorter side to N (`N` or `short:N`, torchvision's Resize(N)), or to exactly
    /// WxH (torchvision's Resize((H, W))).
    #[arg(long, value_parser = parse_resize)]
    resize: Option<Resize>,
    /// Centre crop to S×S or WxH, zero-padding smaller images (torchvision's CenterCrop).
    #[arg(long, value_parser = parse_size)]
    crop: Option<(usize, usize)>,
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
    /// RandomRotation(D) (an angle in -D..D degrees) or of `MIN,MAX` degrees, after the flips;
    /// the pixels no source pixel maps to take `V` or `R,G,B` (default 0); sampled with
    /// `nearest` (default), `bilinear` or `bicubic` interpolation.
    #[arg(long, value_parser = parse_rotation, value_name = "D|MIN,MAX[:FILL][:INTERPOLATION]")]
    random_rotation: Option<gpuprep::RandomRotation>,
    /// RandomAffine(D or MIN,MAX degrees), after the flips, with any of `translate=A,B`
    /// (fractions of the width and height), `scale=MIN,MAX`, `shear=S | MIN,MAX |
    /// XMIN,XMAX,YMIN,YMAX` (degrees), `center=X,Y`, a fill and an interpolation as for
    /// --random-rotation, each after a colon.
    #[arg(
        long,
        value_parser = parse_affine,
        value_name = "D|MIN,MAX[:translate=A,B][:scale=MIN,MAX][:shear=...][:FILL][:INTERPOLATION]"
    )]
    random_affine: Option<gpuprep::RandomAffine>,
    /// TrivialAugmentWide(num_magnitude_bins=BINS), after the flips (default 31 bins); FILL and
    /// INTERPOLATION as for --random-rotation.
    #[arg(long, value_parser = parse_trivial_augment, value_name = "BINS[:FILL][:INTERPOLATION]")]
    trivial_augment: Option<gpuprep::TrivialAugment>,
    /// RandAugment(num_ops=N, magnitude=M, num_magnitude_bins=BINS), after the flips (default
    /// 2,9,31); FILL and INTERPOLATION as for --random-rotation.
    #[arg(
        long,
        value_parser = parse_rand_augment,
        value_name = "N,M[,BINS][:FILL][:INTERPOLATION]"
    )]
    rand_augment: Option<gpuprep::RandAugment>,
    /// AutoAugment(policy=POLICY), after the flips: imagenet, cifar10 or svhn; FILL and
    /// INTERPOLATION as for --random-rotation.
    #[arg(long, value_parser = parse_auto_augment, value_name = "POLICY[:FILL][:INTERPOLATION]")]
    auto_augment: Option<gpuprep::AutoAugment>,
    /// timm's RandAugment of a `rand-...` CONFIG (`rand-m9-mstd0.5-inc1`), after the flips:
    /// timm's own operations; FILL (default timm's 128; create_transform's is its mean, 124,116,104
    /// for ImageNet's) and INTERPOLATION (default random: bilinear or bicubic per operation, as
    /// timm draws them; create_transform passes bilinear).
    #[arg(
        long,
        value_parser = parse_timm_rand_augment,
        value_name = "CONFIG[:FILL][:INTERPOLATION]"
    )]
    timm_rand_augment: Option<gpuprep::TimmRandAugment>,
    /// ColorJitter(brightness, contrast, saturation[, hue]) as `B,C,S[,H]`.
    #[arg(long, value_parser = parse_jitter, value_name = "B,C,S[,H]")]
    color_jitter: Option<gpuprep::ColorJitter>,
    /// RandomApply([ColorJitter(...)], P): the colour jitter in that share of the samples.
    #[arg(long, value_name = "P")]
    color_jitter_p: Option<f64>,
    /// RandomGrayscale(P), after the colour jitter.
    #[arg(long, value_name = "P")]
    grayscale: Option<f64>,
    /// torchvision's single-operation transforms, one flag each, after --grayscale in the
    /// order given.
    #[command(flatten)]
    color_ops: ColorOpArgs,
    /// GaussianBlur(kernel_size=K or KXxKY, sigma=S or (SMIN, SMAX); default (0.1, 2.0)), after
    /// the colour operations.
    #[arg(long, value_parser = parse_blur, value_name = "K|KXxKY[,S|,SMIN,SMAX]")]
    gaussian_blur: Option<gpuprep::GaussianBlur>,
    /// RandomApply([GaussianBlur(...)], P): the blur in that share of the samples.
    #[arg(long, value_name = "P")]
    gaussian_blur_p: Option<f64>,
    /// RandomErasing(P) of the output tensor (torchvision's scale and ratio), writing `V` or
    /// `V1,V2,V3` per channel (default 0).
    #[arg(long, value_parser = parse_erasing, value_name = "P[:V[,V,V]]")]
    random_erasing: Option<gpuprep::RandomErasing>,
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

#[derive(Clone, Copy, Debug)]
enum NormalizeArg {
    None,
    Stats(Normalize),
}

fn parse_size(text: &str) -> Result<(usize, usize), String> {
    let number = |t: &str| {
        t.trim()
            .parse::<usize>()
            .map_err(|_| format!("not a size: {text:?}"))
    };
    match text.split_once(['x', 'X']) {
        Some((w, h)) => Ok((number(w)?, number(h)?)),
        None => number(text).map(|s| (s, s)),
    }
}

fn parse_resize(text: &str) -> Result<Resize, String> {
    let shorter = text.strip_prefix("short:").unwrap_or(text);
    if !shorter.contains(['x', 'X']) {
        let number = |v: &str| {
            v.trim()
                .parse()
                .map_err(|_| format!("use N, N,MAX_SIZE, short:N or WxH, not {text:?}"))
        };
        return Ok(match shorter.split_once(',') {
            Some((size, max_size)) => Resize::ShorterSideAtMost {
                size: number(size)?,
                max_size: number(max_size)?,
            },
            None => Resize::ShorterSide(number(shorter)?),
        });
    }
    let (width, height) = parse_size(text)?;
    Ok(Resize::Exact { width, height })
}

fn parse_numbers(text: &str, count: std::ops::RangeInclusive<usize>) -> Result<Vec<f64>, String> {
    let values: Vec<f64> = text
        .split(',')
        .map(|v| {
            v.trim()
                .parse()
                .map_err(|_| format!("not a number list: {text:?}"))
        })
        .collect::<Result<_, _>>()?;
    if !count.contains(&values.len()) {
        return Err(format!("{text:?} needs {count:?} numbers"));
    }
    Ok(values)
}

fn parse_range(text: &str) -> Result<(f64, f64), String> {
    let v = parse_numbers(text, 2..=2)?;
    Ok((v[0], v[1]))
}

fn parse_jitter(text: &str) -> Result<gpuprep::ColorJitter, String> {
    let v = parse_numbers(text, 3..=4)?;
    if v.iter().any(|x| !x.is_finite() || *x < 0.0) {
        return Err(format!("jitter amounts are numbers >= 0, not {text:?}"));
    }
    Ok(gpuprep::ColorJitter::new(
        v[0],
        v[1],
        v[2],
        v.get(3).copied().unwrap_or(0.0),
    ))
}

fn parse_rotation(text: &str) -> Result<gpuprep::RandomRotation, String> {
    let (degrees, options) = text.split_once(':').unwrap_or((text, ""));
    let (fill, interpolation) = parse_map_options(options)?;
    let degrees = match parse_numbers(degrees, 1..=2)?[..] {
        [d] => (-d, d),
        [low, high] => (low, high),
        _ => unreachable!("one or two numbers"),
    };
    Ok(gpuprep::RandomRotation {
        degrees,
        fill,
        interpolation,
    })
}

fn parse_affine(text: &str) -> Result<gpuprep::RandomAffine, String> {
    let mut parts = text.split(':');
    let degrees = match parse_numbers(parts.next().unwrap_or(""), 1..=2)?[..] {
        [d] => (-d, d),
        [low, high] => (low, high),
        _ => unreachable!("one or two numbers"),
    };
    let mut affine = gpuprep::RandomAffine {
        degrees,
        ..gpuprep::RandomAffine::new(0.0)
    };
    let pair = |v: &str| parse_numbers(v, 2..=2).map(|n| (n[0], n[1]));
    let mut rest = Vec::new();
    for part in parts {
        match part.split_once('=') {
            Some(("translate", v)) => affine.translate = Some(pair(v)?),
            Some(("scale", v)) => affine.scale = Some(pair(v)?),
            Some(("center", v)) => affine.center = Some(pair(v)?),
            Some(("shear", v)) => {
                affine.shear = Some(match parse_numbers(v, 1..=4)?[..] {
                    [s] => ((-s, s), None),
                    [low, high] => ((low, high), None),
                    [x0, x1, y0, y1] => ((x0, x1), Some((y0, y1))),
                    _ => return Err("shear is S, MIN,MAX or XMIN,XMAX,YMIN,YMAX".into()),
                })
            }
            Some((key, _)) => {
                return Err(format!(
                    "{key:?} is none of translate, scale, shear and center"
                ))
            }
            None => rest.push(part),
        }
    }
    (affine.fill, affine.interpolation) = parse_map_options(&rest.join(":"))?;
    Ok(affine)
}

fn parse_trivial_augment(text: &str) -> Result<gpuprep::TrivialAugment, String> {
    let (bins, options) = text.split_once(':').unwrap_or((text, ""));
    let (fill, interpolation) = parse_map_options(options)?;
    let bins = bins
        .parse()
        .map_err(|_| format!("the bins are a whole number, got {bins:?}"))?;
    Ok(gpuprep::TrivialAugment {
        bins,
        fill,
        interpolation,
    })
}

fn parse_rand_augment(text: &str) -> Result<gpuprep::RandAugment, String> {
    let (numbers, options) = text.split_once(':').unwrap_or((text, ""));
    let (fill, interpolation) = parse_map_options(options)?;
    let whole = |v: &str| {
        v.trim()
            .parse::<u32>()
            .map_err(|_| format!("N, M and BINS are whole numbers, got {v:?}"))
    };
    let numbers = numbers
        .split(',')
        .map(whole)
        .collect::<Result<Vec<_>, _>>()?;
    let (num_ops, magnitude, bins) = match numbers[..] {
        [n, m] => (n, m, 31),
        [n, m, bins] => (n, m, bins),
        _ => return Err("give N,M or N,M,BINS".into()),
    };
    Ok(gpuprep::RandAugment {
        num_ops,
        magnitude,
        bins,
        fill,
        interpolation,
    })
}

fn parse_timm_rand_augment(text: &str) -> Result<gpuprep::TimmRandAugment, String> {
    let mut parts = text.split(':');
    let mut r = gpuprep::TimmRandAugment::parse(parts.next().unwrap_or(""))?;
    let (mut fill, mut interpolation) = (None, None);
    for part in parts {
        let filter = match part.trim() {
            "random" => Some(None),
            name => gpuprep::Filter::from_name(name).map(Some),
        };
        match filter {
            Some(f) if interpolation.is_none() => interpolation = Some(f),
            None if fill.is_none() => fill = Some(parse_fill(part)?),
            _ => {
                return Err(format!(
                    "give one fill and one interpolation at most, got {text:?}"
                ))
            }
        }
    }
    r.fill = fill.unwrap_or(r.fill);
    r.interpolation = interpolation.unwrap_or(None);
    Ok(r)
}

fn parse_auto_augment(text: &str) -> Result<gpuprep::AutoAugment, String> {
    let (name, options) = text.split_once(':').unwrap_or((text, ""));
    let (fill, interpolation) = parse_map_options(options)?;
    let policy = gpuprep::AutoAugmentPolicy::named(name)
        .ok_or_else(|| format!("the policy is imagenet, cifar10 or svhn, got {name:?}"))?;
    Ok(gpuprep::AutoAugment {
        policy,
        fill,
        interpolation,
    })
}

/// A map's `[FILL][:INTERPOLATION]`, in either order: the fill's `V` or `R,G,B` (default 0) and
/// `nearest` (default), `bilinear` or `bicubic`.
fn parse_map_options(text: &str) -> Result<([u8; 3], gpuprep::Filter), String> {
    let (mut fill, mut interpolation) = (None, None);
    for part in text.split(':').filter(|p| !p.is_empty()) {
        match gpuprep::Filter::from_name(part.trim()) {
            Some(filter) if interpolation.is_none() => interpolation = Some(filter),
            None if fill.is_none() => fill = Some(parse_fill(part)?),
            _ => {
                return Err(format!(
                    "give one fill and one interpolation at most, got {text:?}"
                ))
            }
        }
    }
    let interpolation = interpolation.unwrap_or(gpuprep::Filter::Nearest);
    if !interpolation.maps() {
        return Err(format!(
            "the interpolation is nearest, bilinear or bicubic, got {}",
            interpolation.name()
        ));
    }
    Ok((fill.unwrap_or([0; 3]), interpolation))
}

/// `PADDING[:MODE[:FILL]]` as torchvision's `Pad` takes them: one, two or four sizes.
fn parse_pad(text: &str) -> Result<gpuprep::Pad, String> {
    let mut parts = text.splitn(3, ':');
    let numbers = parse_numbers(parts.next().unwrap_or(""), 1..=4)?;
    if numbers.iter().any(|v| v.fract() != 0.0 || *v < 0.0) {
        return Err(format!(
            "paddings are whole numbers of pixels, got {numbers:?}"
        ));
    }
    let n: Vec<usize> = numbers.iter().map(|&v| v as usize).collect();
    let padding = match n[..] {
        [p] => [p; 4],
        [x, y] => [x, y, x, y],
        [l, t, r, b] => [l, t, r, b],
        _ => return Err("give one, two or four paddings".into()),
    };
    let mode = match parts.next() {
        None => gpuprep::PaddingMode::Constant,
        Some(name) => gpuprep::PaddingMode::named(name).ok_or_else(|| {
            format!("the mode is constant, edge, reflect or symmetric, got {name:?}")
        })?,
    };
    Ok(gpuprep::Pad {
        padding,
        mode,
        fill: parse_fill(parts.next().unwrap_or("0"))?,
    })
}

/// `S|WxH[:PADDING[:MODE[:FILL]]]`.
fn parse_random_crop(text: &str) -> Result<gpuprep::RandomCrop, String> {
    let (size, padding) = text.split_once(':').unwrap_or((text, "0"));
    let pad = parse_pad(padding)?;
    Ok(gpuprep::RandomCrop {
        padding: pad.padding,
        fill: pad.fill,
        mode: pad.mode,
        ..gpuprep::RandomCrop::new(parse_size(size)?)
    })
}

/// `V` or `R,G,B`: the RGB value of the pixels a geometric map leaves uncovered.
fn parse_fill(text: &str) -> Result<[u8; 3], String> {
    let fill = match parse_numbers(text, 1..=3)?[..] {
        [v] => [v; 3],
        [r, g, b] => [r, g, b],
        _ => return Err("give one fill value or three".into()),
    };
    if fill
        .iter()
        .any(|v| v.fract() != 0.0 || !(0.0..=255.0).contains(v))
    {
        return Err(format!("fill values are integers 0..=255, got {fill:?}"));
    }
    Ok(fill.map(|v| v as u8))
}

fn parse_blur(text: &str) -> Result<gpuprep::GaussianBlur, String> {
    let (size, sigma) = text.split_once(',').unwrap_or((text, ""));
    let side = |k: &str| {
        k.trim()
            .parse::<usize>()
            .map_err(|_| format!("not a kernel size: {k:?}"))
    };
    let kernel_size = match size.split_once('x') {
        Some((kx, ky)) => (side(kx)?, side(ky)?),
        None => (side(size)?, side(size)?),
    };
    let sigma = match (sigma.is_empty(), parse_numbers(sigma, 1..=2)) {
        (true, _) => (0.1, 2.0),
        (false, Ok(v)) if v.len() == 1 => (v[0], v[0]),
        (false, Ok(v)) => (v[0], v[1]),
        (false, Err(e)) => return Err(e),
    };
    Ok(gpuprep::GaussianBlur {
        kernel_size,
        sigma,
        p: 1.0,
    })
}

fn parse_erasing(text: &str) -> Result<gpuprep::RandomErasing, String> {
    let (p, value) = text.split_once(':').unwrap_or((text, "0"));
    let p: f64 = p
        .trim()
        .parse()
        .map_err(|_| format!("not a probability: {p:?}"))?;
    let v = parse_numbers(value, 1..=3)?;
    let value = if v.len() == 1 {
        [v[0]; 3]
    } else {
        [
            v[0],
            v.get(1).copied().unwrap_or(0.0),
            v.get(2).copied().unwrap_or(0.0),
        ]
    };
    if v.len() == 2 {
        return Err(format!("give one value or three, not {value:?}"));
    }
    Ok(gpuprep::RandomErasing {
        value: value.map(|x| x as f32),
        ..gpuprep::RandomErasing::new(p)
    })
}

fn parse_normalize(text: &str) -> Result<NormalizeArg, String> {
    match text {
        "none" => return Ok(NormalizeArg::None),
        "imagenet" => return Ok(NormalizeArg::Stats(Normalize::IMAGENET)),
        _ => {}
    }
    let bad = || format!("use none, imagenet or mean=a,b,c:std=x,y,z, not {text:?}");
    let triple = |t: &str| -> Result<[f64; 3], String> {
        let values: Vec<f64> = t
            .split(',')
            .map(|v| v.trim().parse().map_err(|_| bad()))
            .collect::<Result<_, _>>()?;
        values.try_into().map_err(|_| bad())
    };
    let (mean, std) = text.split_once(':').ok_or_else(bad)?;
    let mean = triple(mean.strip_prefix("mean=").ok_or_else(bad)?)?;
    let std = triple(std.strip_prefix("std=").ok_or_else(bad)?)?;
    Ok(NormalizeArg::Stats(Normalize::from_f64(mean, std)))
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
        if self.gaussian_blur_p.is_some() && self.gaussian_blur.is_none() {
            return Some("note: --gaussian-blur-p does nothing without --gaussian-blur");
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
        t.random_affine = self.random_affine.or(t.random_affine);
        t.trivial_augment = self.trivial_augment.or(t.trivial_augment);
        t.rand_augment = self.rand_augment.or(t.rand_augment);
        t.auto_augment = self.auto_augment.or(t.auto_augment);
        t.timm_rand_augment = self.timm_rand_augment.or(t.timm_rand_augment);
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
        for &op in &self.color_ops.0 {
            t.color_ops = t.color_ops.with(op);
        }
        (t.seed, t.epoch) = (self.seed, self.epoch);
        t.resize = self.resize.or(t.resize);
        t.center_crop = self.crop.or(t.center_crop);
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

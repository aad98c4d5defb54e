//! `gpuprep._gpuprep`: the Rust crate's transforms, backends and training loader for Python. The
//! package's `__init__.py` puts torchvision's names and torch's tensors on top; the arithmetic is
//! all the crate's. Every call that works releases the GIL while Rust works.

use gpuprep::loader::order::Split;
use gpuprep::loader::{self, LoaderOptions, Source};
use gpuprep::{
    Backend, ColorJitter, DType, ErasedValue, Filter, Layout, Limits, Normalize, Params,
    RandomErasing, RandomResizedCrop, RandomRotation, Resize, Sample, Samples, Stacked, Tensor,
    TensorData,
};
use numpy::{
    PyArray1, PyReadonlyArray1, PyReadonlyArrayDyn, PyReadwriteArray1, PyUntypedArrayMethods,
};
use pyo3::import_exception;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyDict, PyList, PyMemoryView};
use std::sync::Arc;

mod dlpack;

// The exception classes live in Python (gpuprep/_errors.py), where a class can also be a
// ValueError or an OSError; the extension raises those very classes.
import_exception!(gpuprep._errors, GpuprepError);
import_exception!(gpuprep._errors, DecodeError);
import_exception!(gpuprep._errors, TruncatedError);
import_exception!(gpuprep._errors, CorruptError);
import_exception!(gpuprep._errors, UnsupportedError);
import_exception!(gpuprep._errors, TooLargeError);
import_exception!(gpuprep._errors, OptionsError);
import_exception!(gpuprep._errors, GpuError);
import_exception!(gpuprep._errors, HandoffError);
import_exception!(gpuprep._errors, ReadError);

/// The Python exception of `e`, by its kind (the file it names, if any, in the message).
fn error(e: &gpuprep::Error) -> PyErr {
    use gpuprep::Error as E;
    let message = e.to_string();
    match e.kind() {
        E::Truncated(_) => TruncatedError::new_err(message),
        E::Corrupt { .. } | E::NotJpeg(_) | E::EmptyFile => CorruptError::new_err(message),
        E::UnknownFormat { .. } | E::UnsupportedImage { .. } | E::Unsupported(_) => {
            UnsupportedError::new_err(message)
        }
        E::TooLarge { .. }
        | E::OutputTooLarge { .. }
        | E::TooManyScans { .. }
        | E::MemoryTooLarge { .. } => TooLargeError::new_err(message),
        E::Options(_) => OptionsError::new_err(message),
        E::Gpu(gpuprep::GpuError::Handoff(_)) => HandoffError::new_err(message),
        E::NoGpu(_) | E::Gpu(_) => GpuError::new_err(message),
        E::Internal(_) | E::TooManyFailed { .. } => GpuprepError::new_err(message),
        _ => ReadError::new_err(message),
    }
}

fn filter(name: &str) -> PyResult<Filter> {
    Filter::from_name(name).ok_or_else(|| {
        OptionsError::new_err(format!(
            "unknown interpolation {name:?}: nearest, box, bilinear, hamming, bicubic, lanczos"
        ))
    })
}

/// A (low, high) pair from any sequence of two numbers, as torchvision takes lists and tuples.
fn number_pair(what: &str, value: &Bound<'_, PyAny>) -> PyResult<(f64, f64)> {
    match value.extract::<Vec<f64>>() {
        Ok(v) if v.len() == 2 => Ok((v[0], v[1])),
        _ => Err(OptionsError::new_err(format!(
            "{what} is a sequence of two numbers"
        ))),
    }
}

/// An angle range as torchvision's `_setup_angle` takes it: a number d for (-d, d), which must be
/// positive, or a sequence of two.
fn angle_range(what: &str, value: &Bound<'_, PyAny>) -> PyResult<(f64, f64)> {
    match value.extract::<f64>() {
        Ok(d) if d < 0.0 => Err(OptionsError::new_err(format!(
            "{what}, a single number, must be positive"
        ))),
        Ok(d) => Ok((-d, d)),
        Err(_) => number_pair(what, value),
    }
}

/// The interpolation `name` of an affine map (`operation`'s), one Pillow's transforms take.
fn map_filter(operation: &str, name: &str) -> PyResult<Filter> {
    let filter = filter(name)?;
    if !filter.maps() {
        return Err(OptionsError::new_err(format!(
            "{operation}'s interpolation is 'nearest', 'bilinear' or 'bicubic' (Pillow's affine \
             transforms sample with no other), not {name:?}"
        )));
    }
    Ok(filter)
}

/// `Ok` when `transform`'s options fit together, else the OptionsError every entry point
/// raises for them.
fn validated(transform: &gpuprep::Transform) -> PyResult<()> {
    transform.validate().map_err(|why| error(&why.into()))
}

/// torchvision's size argument: one positive number, or (height, width).
enum Size {
    One(usize),
    Pair { height: usize, width: usize },
}

impl Size {
    /// `size` as `name` takes it (an int, or a sequence of one or two), refused by name
    /// otherwise.
    fn of(name: &str, size: &Bound<'_, PyAny>) -> PyResult<Self> {
        let refused = || {
            let shown = size.repr().map_or_else(|_| "?".into(), |r| r.to_string());
            OptionsError::new_err(format!(
                "{name}'s size is a positive int or (height, width) of positive ints, got {shown}"
            ))
        };
        let positive = |v: Bound<'_, PyAny>| match v.extract::<i64>() {
            Ok(n) if n >= 1 => usize::try_from(n).map_err(|_| refused()),
            _ => Err(refused()),
        };
        if size.extract::<i64>().is_ok() {
            return positive(size.clone()).map(Self::One);
        }
        let items: Vec<Bound<'_, PyAny>> = size.extract().map_err(|_| refused())?;
        match <[Bound<'_, PyAny>; 2]>::try_from(items) {
            Ok([height, width]) => Ok(Self::Pair {
                height: positive(height)?,
                width: positive(width)?,
            }),
            Err(items) if items.len() == 1 => {
                let [one] = <[Bound<'_, PyAny>; 1]>::try_from(items).map_err(|_| refused())?;
                positive(one).map(Self::One)
            }
            Err(_) => Err(refused()),
        }
    }

    /// As (width, height), a single number standing for both.
    fn square(self) -> (usize, usize) {
        match self {
            Self::One(n) => (n, n),
            Self::Pair { height, width } => (width, height),
        }
    }
}

/// `, v2=True` for an operation of transforms.v2's, nothing for v1's.
fn v2_suffix(v2: bool) -> &'static str {
    if v2 {
        ", v2=True"
    } else {
        ""
    }
}

/// The transform as torchvision's steps, in the order gpuprep applies them.
/// `shown`, inside `RandomApply([...], p)` where `p` is below 1.
fn applied(shown: String, p: f64) -> String {
    if p < 1.0 {
        format!("RandomApply([{shown}], p={p})")
    } else {
        shown
    }
}

/// One entry of `Transform.order`: a method's name, `{"random_order": [names]}` or
/// `{"random_choice": [names], "p": [weights] or None}`; anything else is an OptionsError.
fn order_entry(entry: &Bound<'_, PyAny>) -> PyResult<gpuprep::OrderEntry<String>> {
    let wrong = || {
        OptionsError::new_err(format!(
            "an order's entry is a step's method name, {{'random_order': [names]}} or \
             {{'random_choice': [names], 'p': [weights]}}, not {entry}"
        ))
    };
    if let Ok(name) = entry.extract::<String>() {
        return Ok(gpuprep::OrderEntry::Step(name));
    }
    let group = entry
        .extract::<std::collections::HashMap<String, Bound<'_, PyAny>>>()
        .map_err(|_| wrong())?;
    let names = |v: &Bound<'_, PyAny>| -> PyResult<Vec<String>> {
        if v.extract::<String>().is_ok() {
            return Err(wrong()); // a string is a sequence of letters, not of names
        }
        v.extract().map_err(|_| wrong())
    };
    let keys: Vec<&str> = group.keys().map(String::as_str).collect();
    match (group.get("random_order"), group.get("random_choice")) {
        (Some(steps), None) if keys.len() == 1 => {
            Ok(gpuprep::OrderEntry::RandomOrder(names(steps)?))
        }
        (None, Some(steps)) if keys.iter().all(|k| ["random_choice", "p"].contains(k)) => {
            let steps = names(steps)?;
            let p: Vec<f64> = match group.get("p").filter(|p| !p.is_none()) {
                None => vec![1.0; steps.len()],
                Some(p) => p.extract().map_err(|_| wrong())?,
            };
            if p.len() != steps.len() {
                return Err(OptionsError::new_err(format!(
                    "RandomChoice of {} steps with {} weights in p",
                    steps.len(),
                    p.len()
                )));
            }
            Ok(gpuprep::OrderEntry::RandomChoice(
                steps.into_iter().zip(p).collect(),
            ))
        }
        _ => Err(wrong()),
    }
}

fn describe(t: &gpuprep::Transform) -> String {
    let pair = |(w, h): (usize, usize)| format!("({h}, {w})");
    let filter = if t.filter == Filter::Bilinear {
        String::new()
    } else {
        format!(", interpolation={}", t.filter.name())
    };
    let mut steps = Vec::new();
    if t.exif_transpose {
        steps.push("ExifTranspose()".to_string());
    }
    if t.draft {
        steps.push("Draft()".to_string());
    }
    match t.resize {
        Some(Resize::ShorterSide(n)) => steps.push(format!("Resize({n}{filter})")),
        Some(Resize::ShorterSideAtMost { size, max_size }) => {
            steps.push(format!("Resize({size}, max_size={max_size}{filter})"))
        }
        Some(Resize::Exact { width, height }) => {
            steps.push(format!("Resize({}{filter})", pair((width, height))))
        }
        Some(Resize::KeepRatio {
            width,
            height,
            longest,
        }) => steps.push(format!(
            "ResizeKeepRatio({}, longest={}{filter})",
            pair((width, height)),
            if longest { "1.0" } else { "0.0" }
        )),
        None => {}
    }
    if let Some(r) = t.random_resize {
        steps.push(format!(
            "RandomResize(min_size={}, max_size={}{filter})",
            r.min_size, r.max_size
        ));
    }
    if let Some(s) = t.random_shortest_size {
        let max_size = s.max_size.map_or("None".to_string(), |m| m.to_string());
        steps.push(format!(
            "RandomShortestSize(min_size={:?}, max_size={max_size}{filter})",
            s.sizes()
        ));
    }
    if let Some(c) = t.random_resized_crop {
        let filter = match c.filters {
            Some([a, b]) => format!(", interpolation=random({}, {})", a.name(), b.name()),
            None => filter.clone(),
        };
        steps.push(format!(
            "RandomResizedCrop({}, scale={:?}, ratio={:?}{filter})",
            pair(c.size),
            c.scale,
            c.ratio
        ));
    }
    if let Some(p) = t.pad {
        steps.push(format!(
            "Pad(padding={:?}, fill={:?}, padding_mode='{}')",
            p.padding,
            p.fill,
            p.mode.name()
        ));
    }
    match (t.center_crop, t.center_crop_fill) {
        (Some(c), None) => steps.push(format!("CenterCrop({})", pair(c))),
        (Some(c), Some(fill)) => steps.push(format!("CenterCropOrPad({}, fill={fill:?})", pair(c))),
        _ => {}
    }
    if let Some(c) = t.random_crop {
        steps.push(format!(
            "RandomCrop({}, padding={:?}, pad_if_needed={}, fill={:?}, padding_mode='{}')",
            pair(c.size),
            c.padding,
            if c.pad_if_needed { "True" } else { "False" },
            c.fill,
            c.mode.name()
        ));
    }
    if let Some(p) = t.horizontal_flip {
        steps.push(format!("RandomHorizontalFlip(p={p})"));
    }
    if let Some(p) = t.vertical_flip {
        steps.push(format!("RandomVerticalFlip(p={p})"));
    }
    // The steps that keep the image's size, described in the usual order, then put in theirs.
    let same_size = steps.len();
    if let Some(r) = t.random_rotation {
        let center = r
            .center
            .map_or(String::new(), |c| format!(", center={c:?}"));
        steps.push(applied(
            format!(
                "RandomRotation(degrees={:?}, interpolation={}, fill={:?}{center})",
                r.degrees,
                r.interpolation.name(),
                r.fill
            ),
            r.p,
        ));
    }
    if let Some(a) = t.random_affine {
        let mut args = vec![format!("degrees={:?}", a.degrees)];
        if let Some(v) = a.translate {
            args.push(format!("translate={v:?}"));
        }
        if let Some(v) = a.scale {
            args.push(format!("scale={v:?}"));
        }
        match a.shear {
            Some((x, Some(y))) => args.push(format!(
                "shear=({:?}, {:?}, {:?}, {:?})",
                x.0, x.1, y.0, y.1
            )),
            Some((x, None)) => args.push(format!("shear={x:?}")),
            None => {}
        }
        args.push(format!("interpolation={}", a.interpolation.name()));
        args.push(format!("fill={:?}", a.fill));
        if let Some(c) = a.center {
            args.push(format!("center={c:?}"));
        }
        if a.v2 {
            args.push("v2=True".into());
        }
        steps.push(applied(format!("RandomAffine({})", args.join(", ")), a.p));
    }
    if let Some(a) = t.trivial_augment {
        steps.push(format!(
            "TrivialAugmentWide(num_magnitude_bins={}, interpolation={}, fill={:?}{})",
            a.bins,
            a.interpolation.name(),
            a.fill,
            v2_suffix(a.v2)
        ));
    }
    if let Some(r) = t.rand_augment {
        steps.push(format!(
            "RandAugment(num_ops={}, magnitude={}, num_magnitude_bins={}, interpolation={}, \
             fill={:?}{})",
            r.num_ops,
            r.magnitude,
            r.bins,
            r.interpolation.name(),
            r.fill,
            v2_suffix(r.v2)
        ));
    }
    if let Some(r) = t.timm_rand_augment {
        steps.push(format!(
            "TimmRandAugment(num_ops={}, magnitude={}, magnitude_std={}, magnitude_max={:?}, \
             prob={}, increasing={}, translate_pct={}, fill={:?}, interpolation={})",
            r.num_ops,
            r.magnitude,
            r.magnitude_std,
            r.magnitude_max,
            r.prob,
            r.increasing,
            r.translate_pct,
            r.fill,
            r.interpolation.map_or("random", Filter::name),
        ));
    }
    if let Some(m) = t.timm_aug_mix {
        steps.push(format!(
            "TimmAugMix(magnitude={}, width={}, depth={}, alpha={}, magnitude_std={}, \
             translate_pct={}, fill={:?}, interpolation={}{})",
            m.magnitude,
            m.width,
            m.depth.map_or(-1, i64::from),
            m.alpha,
            m.magnitude_std,
            m.translate_pct,
            m.fill,
            m.interpolation.map_or("random", Filter::name),
            if m.blended { ", blended=True" } else { "" },
        ));
    }
    if let Some(a) = t.timm_auto_augment {
        steps.push(format!(
            "TimmAutoAugment(policy='{}', magnitude_std={}, translate_pct={}, fill={:?}, \
             interpolation={})",
            a.policy.name(),
            a.magnitude_std,
            a.translate_pct,
            a.fill,
            a.interpolation.map_or("random", Filter::name),
        ));
    }
    if let Some(a) = t.auto_augment {
        steps.push(format!(
            "AutoAugment(policy='{}', interpolation={}, fill={:?}{})",
            a.policy.name(),
            a.interpolation.name(),
            a.fill,
            v2_suffix(a.v2)
        ));
    }
    if let Some(r) = t.random_perspective {
        steps.push(format!(
            "RandomPerspective(distortion_scale={:?}, p={:?}, interpolation={}, fill={:?})",
            r.distortion_scale,
            r.p,
            r.interpolation.name(),
            r.fill
        ));
    }
    if let Some(j) = t.color_jitter {
        let ranges: Vec<String> = [
            ("brightness", j.brightness),
            ("contrast", j.contrast),
            ("saturation", j.saturation),
            ("hue", j.hue),
        ]
        .into_iter()
        .filter_map(|(name, range)| range.map(|r| format!("{name}={r:?}")))
        .collect();
        let jitter = format!("ColorJitter({})", ranges.join(", "));
        steps.push(if j.p < 1.0 {
            format!("RandomApply([{jitter}], p={})", j.p)
        } else {
            jitter
        });
    }
    if let Some(p) = t.grayscale {
        steps.push(format!("RandomGrayscale(p={p})"));
    }
    steps.extend(t.color_ops.iter().map(gpuprep::ColorOp::describe));
    if let Some(b) = t.gaussian_blur {
        let blur = format!(
            "GaussianBlur(kernel_size={:?}, sigma={:?}{})",
            b.kernel_size,
            b.sigma,
            v2_suffix(b.v2)
        );
        steps.push(if b.p < 1.0 {
            format!("RandomApply([{blur}], p={})", b.p)
        } else {
            blur
        });
    }
    let described = steps.split_off(same_size);
    let usual = gpuprep::Transform {
        order: gpuprep::StepOrder::default(),
        ..*t
    }
    .ordered_steps();
    // Those the order names (its RandomOrder and RandomChoice groups as such), then any it
    // leaves out (a transform that `validate` refuses).
    let shown = |method: &&str| {
        let at = usual.iter().position(|m| m == method);
        at.map_or_else(|| format!("<{method}: absent>"), |at| described[at].clone())
    };
    let entries = if t.order.is_empty() {
        usual
            .iter()
            .map(|&m| gpuprep::OrderEntry::Step(m))
            .collect()
    } else {
        t.order.entries()
    };
    for entry in entries {
        steps.push(match entry {
            gpuprep::OrderEntry::Step(m) => shown(&m),
            gpuprep::OrderEntry::RandomOrder(members) => {
                let members: Vec<String> = members.iter().map(shown).collect();
                format!("RandomOrder([{}])", members.join(", "))
            }
            gpuprep::OrderEntry::RandomChoice(members) => {
                let (methods, p): (Vec<&str>, Vec<f64>) = members.into_iter().unzip();
                let shown: Vec<String> = methods.iter().map(shown).collect();
                // p=None is weights of 1 each.
                let unweighted = p.iter().all(|&w| w == 1.0);
                let p = if unweighted {
                    String::new()
                } else {
                    format!(", p={p:?}")
                };
                format!("RandomChoice([{}]{p})", shown.join(", "))
            }
        });
    }
    let ordered = t.ordered_steps();
    steps.extend(usual.iter().filter(|m| !ordered.contains(m)).map(shown));
    if t.channel_order == gpuprep::ChannelOrder::Bgr {
        steps.push("ToBGR()".to_string());
    }
    let layout = layout_name(t.layout);
    match (t.dtype, t.layout) {
        (DType::F32, Layout::Chw) if t.reciprocal_scale => {
            steps.push("ToDtype(float32, scale=True)".to_string())
        }
        (DType::F32, Layout::Chw) => steps.push("ToTensor()".to_string()),
        (dtype, _) => steps.push(format!("To({}, {layout})", dtype_name(dtype))),
    }
    if let Some(n) = t.normalize {
        steps.push(format!("Normalize(mean={:?}, std={:?})", n.mean, n.std));
    }
    if let Some(e) = t.random_erasing {
        let value = match e.value {
            ErasedValue::Constant(value) => format!("{value:?}"),
            ErasedValue::NormalPerElement => "'random'".into(),
            ErasedValue::NormalPerChannel => "'random_per_channel'".into(),
        };
        let count = match e.count {
            (1, 1) => String::new(),
            (low, high) if low == high => format!(", count={low}"),
            (low, high) => format!(", count=({low}, {high})"),
        };
        steps.push(format!(
            "RandomErasing(p={}, scale={:?}, ratio={:?}, value={value}{count})",
            e.p, e.scale, e.ratio
        ));
    }
    if t.seed != 0 {
        steps.push(format!("seed={}", t.seed));
    }
    format!("Transform({})", steps.join(", "))
}

/// A layout as Python names it.
fn layout_name(layout: Layout) -> &'static str {
    match layout {
        Layout::Chw => "chw",
        Layout::Hwc => "hwc",
    }
}

fn dtype_name(dtype: DType) -> &'static str {
    match dtype {
        DType::U8 => "uint8",
        DType::F32 => "float32",
        DType::F16 => "float16",
    }
}

/// What Pillow + torchvision do between the decoded image and the tensor. Made from a preset or
/// `Transform()` (the decoded image itself, uint8 H×W×3), then changed by methods named as
/// torchvision's transforms, each returning a new Transform. It holds at most one of each
/// operation (a method called again replaces it) and applies them in torchvision's usual order,
/// whatever order the methods were called in: resize or random resized crop, pad, centre or
/// random crop, flips, then the steps that keep the image's size (the rotation, RandomAffine or
/// policy, RandomPerspective, ColorJitter, RandomGrayscale, the single-operation transforms
/// (RandomInvert, RandomPosterize, RandomSolarize, RandomAdjustSharpness, RandomAutocontrast,
/// RandomEqualize) in the order their methods were first called, GaussianBlur), ToTensor,
/// Normalize, RandomErasing; `order(...)` runs the steps that keep the size in another order.
/// Its repr lists them in the order they run; `from_torchvision` translates a Compose whose
/// order this can hold.
#[pyclass(module = "gpuprep._gpuprep", frozen)]
#[derive(Clone)]
struct Transform(gpuprep::Transform);

/// One of ColorJitter's arguments as torchvision's `_check_input` reads it: a number v,
/// [max(0, 1 - v), 1 + v] for a factor (`centre` 1) and [-v, v] for the hue (`centre` 0), or a
/// (min, max) pair; `None` where it leaves the adjustment out (0, or a range of the centre
/// alone). The transform's validation holds the ranges to torchvision's bounds.
fn jitter_range(
    name: &str,
    value: Option<Bound<'_, PyAny>>,
    centre: f64,
) -> PyResult<Option<(f32, f32)>> {
    let Some(value) = value else {
        return Ok(None);
    };
    let (low, high) = match value.extract::<f64>() {
        Ok(v) if centre == 1.0 => ((1.0 - v).max(0.0), 1.0 + v),
        Ok(v) => (-v, v),
        Err(_) => value.extract::<(f64, f64)>().map_err(|_| {
            OptionsError::new_err(format!(
                "ColorJitter's {name} is a number or a (min, max) pair, got {value}"
            ))
        })?,
    };
    Ok((low != centre || high != centre).then_some((low as f32, high as f32)))
}

/// torchvision's padding argument: an int (every side), one or two (left/right, top/bottom) or
/// four (left, top, right, bottom) non-negative ints.
fn paddings(name: &str, padding: &Bound<'_, PyAny>) -> PyResult<[usize; 4]> {
    let values: Vec<usize> = match padding.extract::<usize>() {
        Ok(p) => vec![p],
        Err(_) => padding.extract().unwrap_or_default(),
    };
    match values[..] {
        [p] => Ok([p; 4]),
        [x, y] => Ok([x, y, x, y]),
        [l, t, r, b] => Ok([l, t, r, b]),
        _ => Err(OptionsError::new_err(format!(
            "{name}'s padding is a non-negative int or a sequence of 1, 2 or 4 of them, got \
             {padding}"
        ))),
    }
}

fn padding_mode_named(name: &str) -> PyResult<gpuprep::PaddingMode> {
    gpuprep::PaddingMode::named(name).ok_or_else(|| {
        OptionsError::new_err(format!(
            "padding_mode is 'constant', 'edge', 'reflect' or 'symmetric', not {name:?}"
        ))
    })
}

/// A fill given as one number or one per channel (torchvision's); black when none is.
fn rgb_fill(fill: Option<Bound<'_, PyAny>>) -> PyResult<[u8; 3]> {
    let Some(v) = fill else {
        return Ok([0; 3]);
    };
    v.extract::<u8>()
        .map(|x| [x; 3])
        .or_else(|_| v.extract::<[u8; 3]>())
        .map_err(|_| {
            OptionsError::new_err(format!(
                "a fill is one number or three (R, G, B), each 0 to 255, got {v}"
            ))
        })
}

#[pymethods]
impl Transform {
    #[new]
    fn new() -> Self {
        Self(gpuprep::Transform::default())
    }

    /// torchvision's ImageNet evaluation: Resize(256), CenterCrop(224), ToTensor, Normalize.
    #[staticmethod]
    fn imagenet_eval() -> Self {
        Self(gpuprep::Transform::imagenet_eval())
    }

    /// torchvision's ClassificationPresetTrain defaults: RandomResizedCrop(224),
    /// RandomHorizontalFlip(0.5), ToTensor, Normalize.
    #[staticmethod]
    fn imagenet_train() -> Self {
        Self(gpuprep::Transform::imagenet_train())
    }

    /// timm's evaluation transform for a model whose config says bicubic (most of timm's):
    /// create_transform(size, crop_pct=crop_pct, interpolation='bicubic').
    #[staticmethod]
    #[pyo3(signature = (size=224, crop_pct=0.875))]
    fn timm_eval(size: usize, crop_pct: f64) -> PyResult<Self> {
        if !(crop_pct.is_finite() && crop_pct > 0.0) {
            return Err(OptionsError::new_err(format!(
                "crop_pct is a positive share of the resized image, got {crop_pct}"
            )));
        }
        let t = gpuprep::Transform::timm_eval(size, crop_pct);
        validated(&t)?;
        Ok(Self(t))
    }

    /// timm's train.py default training transform: create_transform(224, is_training=True,
    /// interpolation='random') (train.py's --train-interpolation random; create_transform's own
    /// default is bilinear).
    #[staticmethod]
    fn timm_train() -> Self {
        Self(gpuprep::Transform::timm_train())
    }

    /// Resize(size, max_size=None): an int resizes the shorter side (the longer to at most
    /// max_size); (h, w) resizes to exactly that.
    #[pyo3(signature = (size, max_size=None))]
    fn resize(&self, size: Bound<'_, PyAny>, max_size: Option<usize>) -> PyResult<Self> {
        let resize = match (Size::of("Resize", &size)?, max_size) {
            (Size::One(n), None) => Resize::ShorterSide(n),
            (Size::One(size), Some(max_size)) => Resize::ShorterSideAtMost { size, max_size },
            (Size::Pair { height, width }, None) => Resize::Exact { width, height },
            (Size::Pair { .. }, Some(_)) => {
                return Err(OptionsError::new_err(
                    "Resize's max_size goes with a single size (the shorter side's), as in \
                     torchvision",
                ))
            }
        };
        Ok(Self(gpuprep::Transform {
            resize: Some(resize),
            ..self.0
        }))
    }

    /// timm's ResizeKeepRatio(size, longest) as its eval transforms use it (no random scale or
    /// aspect): size (h, w) or an int; both sides divided by one ratio, the smaller of
    /// image_h / h and image_w / w (so that (h, w) fits inside the resized image), or with
    /// longest=True the larger (so that the resized image fits inside (h, w)); each side
    /// rounded half to even, as timm's round().
    #[pyo3(signature = (size, longest=false))]
    fn resize_keep_ratio(&self, size: Bound<'_, PyAny>, longest: bool) -> PyResult<Self> {
        let (width, height) = match Size::of("ResizeKeepRatio", &size)? {
            Size::One(n) => (n, n),
            Size::Pair { height, width } => (width, height),
        };
        let t = gpuprep::Transform {
            resize: Some(Resize::KeepRatio {
                width,
                height,
                longest,
            }),
            ..self.0
        };
        validated(&t)?;
        Ok(Self(t))
    }

    /// v2's RandomResize(min_size, max_size): the shorter side drawn from min_size to
    /// max_size - 1 for each image (torch.randint's range), in place of Resize.
    fn random_resize(&self, min_size: usize, max_size: usize) -> PyResult<Self> {
        Ok(Self(gpuprep::Transform {
            random_resize: Some(gpuprep::RandomResize { min_size, max_size }),
            ..self.0
        }))
    }

    /// v2's RandomShortestSize(min_size, max_size=None): one of min_size (an int or a sequence,
    /// up to 16) drawn for each image, the image scaled so that its shorter side has it (the
    /// longer at most max_size), in place of Resize.
    #[pyo3(signature = (min_size, max_size=None))]
    fn random_shortest_size(
        &self,
        min_size: Bound<'_, PyAny>,
        max_size: Option<usize>,
    ) -> PyResult<Self> {
        let sizes: Vec<usize> = match min_size.extract::<usize>() {
            Ok(one) => vec![one],
            Err(_) => min_size.extract().map_err(|_| {
                OptionsError::new_err(format!(
                    "RandomShortestSize(min_size={min_size}) is not supported: one size or a \
                     sequence of sizes in pixels"
                ))
            })?,
        };
        let sizes =
            gpuprep::RandomShortestSize::new(&sizes, max_size).map_err(|why| error(&why.into()))?;
        Ok(Self(gpuprep::Transform {
            random_shortest_size: Some(sizes),
            ..self.0
        }))
    }

    /// CenterCrop(size): an int or (h, w); a smaller image padded with zeros, or with fill (a
    /// number or one per channel) as timm's CenterCropOrPad(size, fill) pads it.
    #[pyo3(signature = (size, fill=None))]
    fn center_crop(
        &self,
        size: Bound<'_, PyAny>,
        fill: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let center_crop_fill = fill.map(|f| rgb_fill(Some(f))).transpose()?;
        Ok(Self(gpuprep::Transform {
            center_crop: Some(Size::of("CenterCrop", &size)?.square()),
            center_crop_fill,
            ..self.0
        }))
    }

    /// Pad(padding, fill, padding_mode): padding an int (every side), (left/right, top/bottom) or
    /// (left, top, right, bottom); fill a number or one per channel; padding_mode 'constant',
    /// 'edge', 'reflect' or 'symmetric'.
    #[pyo3(signature = (padding, fill=None, padding_mode="constant"))]
    fn pad(
        &self,
        padding: Bound<'_, PyAny>,
        fill: Option<Bound<'_, PyAny>>,
        padding_mode: &str,
    ) -> PyResult<Self> {
        let pad = gpuprep::Pad {
            padding: paddings("Pad", &padding)?,
            fill: rgb_fill(fill)?,
            mode: padding_mode_named(padding_mode)?,
        };
        Ok(Self(gpuprep::Transform {
            pad: Some(pad),
            ..self.0
        }))
    }

    /// RandomCrop(size, padding, pad_if_needed, fill, padding_mode): size an int or (h, w), the
    /// rest as `pad` takes them (padding None: none).
    #[pyo3(signature = (size, padding=None, pad_if_needed=false, fill=None, padding_mode="constant"))]
    fn random_crop(
        &self,
        size: Bound<'_, PyAny>,
        padding: Option<Bound<'_, PyAny>>,
        pad_if_needed: bool,
        fill: Option<Bound<'_, PyAny>>,
        padding_mode: &str,
    ) -> PyResult<Self> {
        let crop = gpuprep::RandomCrop {
            size: Size::of("RandomCrop", &size)?.square(),
            padding: padding.map_or(Ok([0; 4]), |p| paddings("RandomCrop", &p))?,
            pad_if_needed,
            fill: rgb_fill(fill)?,
            mode: padding_mode_named(padding_mode)?,
        };
        Ok(Self(gpuprep::Transform {
            random_crop: Some(crop),
            ..self.0
        }))
    }

    /// RandomResizedCrop(size, scale, ratio): size an int or (h, w); interpolation "random"
    /// draws bilinear or bicubic per sample (timm's RandomResizedCropAndInterpolation), a
    /// filter's name sets the resampling filter, None keeps it.
    #[pyo3(signature = (size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=None))]
    fn random_resized_crop(
        &self,
        size: Bound<'_, PyAny>,
        scale: (f64, f64),
        ratio: (f64, f64),
        interpolation: Option<&str>,
    ) -> PyResult<Self> {
        let random = interpolation == Some("random");
        let chosen = match interpolation {
            Some(name) if !random => filter(name)?,
            _ => self.0.filter,
        };
        Ok(Self(gpuprep::Transform {
            random_resized_crop: Some(RandomResizedCrop {
                size: Size::of("RandomResizedCrop", &size)?.square(),
                scale,
                ratio,
                filters: random.then_some([Filter::Bilinear, Filter::Bicubic]),
            }),
            filter: chosen,
            ..self.0
        }))
    }

    /// The resampling filter: nearest, box, bilinear, hamming, bicubic or lanczos.
    fn interpolation(&self, name: &str) -> PyResult<Self> {
        Ok(Self(gpuprep::Transform {
            filter: filter(name)?,
            ..self.0
        }))
    }

    /// RandomHorizontalFlip(p).
    #[pyo3(signature = (p=0.5))]
    fn horizontal_flip(&self, p: f64) -> Self {
        Self(gpuprep::Transform {
            horizontal_flip: Some(p),
            ..self.0
        })
    }

    /// RandomVerticalFlip(p).
    #[pyo3(signature = (p=0.5))]
    fn vertical_flip(&self, p: f64) -> Self {
        Self(gpuprep::Transform {
            vertical_flip: Some(p),
            ..self.0
        })
    }

    /// ColorJitter(brightness, contrast, saturation, hue), each as torchvision takes it: a
    /// number v (factors in [max(0, 1 - v), 1 + v], the hue's shift in [-v, v]) or a
    /// (min, max) range; with p below 1, RandomApply([ColorJitter(...)], p).
    #[pyo3(signature = (brightness=None, contrast=None, saturation=None, hue=None, p=1.0))]
    fn color_jitter(
        &self,
        brightness: Option<Bound<'_, PyAny>>,
        contrast: Option<Bound<'_, PyAny>>,
        saturation: Option<Bound<'_, PyAny>>,
        hue: Option<Bound<'_, PyAny>>,
        p: f64,
    ) -> PyResult<Self> {
        let jitter = ColorJitter {
            brightness: jitter_range("brightness", brightness, 1.0)?,
            contrast: jitter_range("contrast", contrast, 1.0)?,
            saturation: jitter_range("saturation", saturation, 1.0)?,
            hue: jitter_range("hue", hue, 0.0)?,
            p,
        };
        Ok(Self(gpuprep::Transform {
            color_jitter: Some(jitter),
            ..self.0
        }))
    }

    /// RandomGrayscale(p).
    #[pyo3(signature = (p=0.1))]
    fn grayscale(&self, p: f64) -> Self {
        Self(gpuprep::Transform {
            grayscale: Some(p),
            ..self.0
        })
    }

    /// RandomRotation(degrees, interpolation, fill, center): by default after the flips and
    /// before the colour adjustments; degrees a number d (-d..d) or (min, max), interpolation
    /// 'nearest', 'bilinear' or 'bicubic', fill a number or one per channel, center (x, y) in
    /// pixels (the image's centre if none); with p below 1, RandomApply([RandomRotation(...)],
    /// p).
    #[pyo3(signature = (degrees, interpolation="nearest", fill=None, center=None, p=1.0))]
    fn random_rotation(
        &self,
        degrees: Bound<'_, PyAny>,
        interpolation: &str,
        fill: Option<Bound<'_, PyAny>>,
        center: Option<Bound<'_, PyAny>>,
        p: f64,
    ) -> PyResult<Self> {
        let interpolation = map_filter("RandomRotation", interpolation)?;
        let degrees = angle_range("RandomRotation's degrees", &degrees)?;
        let fill = rgb_fill(fill)?;
        let center = center
            .map(|c| number_pair("RandomRotation's center", &c))
            .transpose()?;
        let t = gpuprep::Transform {
            random_rotation: Some(RandomRotation {
                degrees,
                fill,
                interpolation,
                center,
                p,
            }),
            ..self.0
        };
        validated(&t)?;
        Ok(Self(t))
    }

    /// RandomAffine(degrees, translate, scale, shear, interpolation, fill, center): by default
    /// after the flips and before the colour adjustments; degrees a number d (-d..d) or (min, max),
    /// translate the largest shifts as fractions of the width and height, scale (min, max),
    /// shear a number s (an x shear in -s..s), (min, max) or (x min, x max, y min, y max),
    /// interpolation 'nearest', 'bilinear' or 'bicubic', fill a number or one per channel,
    /// center (x, y) in pixels; v2 True for transforms.v2's RandomAffine, whose inverse matrix
    /// is computed in another order (its doubles differ in the last bit now and then); with p
    /// below 1, RandomApply([RandomAffine(...)], p).
    #[pyo3(signature = (
        degrees, translate=None, scale=None, shear=None, interpolation="nearest", fill=None,
        center=None, v2=false, p=1.0
    ))]
    #[allow(
        clippy::too_many_arguments,
        reason = "torchvision's RandomAffine takes these seven, v2 says which one, and p is \
                  RandomApply's around it"
    )]
    fn random_affine(
        &self,
        degrees: Bound<'_, PyAny>,
        translate: Option<Bound<'_, PyAny>>,
        scale: Option<Bound<'_, PyAny>>,
        shear: Option<Bound<'_, PyAny>>,
        interpolation: &str,
        fill: Option<Bound<'_, PyAny>>,
        center: Option<Bound<'_, PyAny>>,
        v2: bool,
        p: f64,
    ) -> PyResult<Self> {
        let pair = |what: &str, v: Option<Bound<'_, PyAny>>| {
            v.map(|v| number_pair(&format!("RandomAffine's {what}"), &v))
                .transpose()
        };
        let degrees = angle_range("RandomAffine's degrees", &degrees)?;
        let shear = match shear {
            None => None,
            Some(s) => Some(match s.extract::<f64>() {
                Ok(_) => (angle_range("RandomAffine's shear", &s)?, None),
                Err(_) => match s.extract::<Vec<f64>>()?[..] {
                    [low, high] => ((low, high), None),
                    [x0, x1, y0, y1] => ((x0, x1), Some((y0, y1))),
                    _ => {
                        return Err(OptionsError::new_err(
                            "RandomAffine's shear is a number or a sequence of 2 or 4 numbers",
                        ))
                    }
                },
            }),
        };
        let t = gpuprep::Transform {
            random_affine: Some(gpuprep::RandomAffine {
                degrees,
                translate: pair("translate", translate)?,
                scale: pair("scale", scale)?,
                shear,
                interpolation: map_filter("RandomAffine", interpolation)?,
                fill: rgb_fill(fill)?,
                center: pair("center", center)?,
                v2,
                p,
            }),
            ..self.0
        };
        validated(&t)?;
        Ok(Self(t))
    }

    /// RandomPerspective(distortion_scale, p, interpolation, fill), by default after the rotation
    /// or augmentation policy: in a share p of the samples, each corner moved inwards by up to
    /// distortion_scale of half the side and the image mapped onto them (Pillow's perspective
    /// transform); interpolation 'bilinear' (torchvision's default), 'nearest' or 'bicubic',
    /// fill a number or one per channel.
    #[pyo3(signature = (distortion_scale=0.5, p=0.5, interpolation="bilinear", fill=None))]
    fn random_perspective(
        &self,
        distortion_scale: f64,
        p: f64,
        interpolation: &str,
        fill: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let t = gpuprep::Transform {
            random_perspective: Some(gpuprep::RandomPerspective {
                distortion_scale,
                p,
                interpolation: map_filter("RandomPerspective", interpolation)?,
                fill: rgb_fill(fill)?,
            }),
            ..self.0
        };
        validated(&t)?;
        Ok(Self(t))
    }

    /// TrivialAugmentWide(num_magnitude_bins, interpolation, fill): one operation a sample,
    /// by default after the flips and before the colour adjustments; interpolation 'nearest',
    /// 'bilinear' or 'bicubic', fill a number or one per channel; v2 True for transforms.v2's (its
    /// Solarize threshold is 255 × linspace(1, 0), not linspace(255, 0)).
    #[pyo3(signature = (num_magnitude_bins=31, interpolation="nearest", fill=None, v2=false))]
    fn trivial_augment_wide(
        &self,
        num_magnitude_bins: u32,
        interpolation: &str,
        fill: Option<Bound<'_, PyAny>>,
        v2: bool,
    ) -> PyResult<Self> {
        let interpolation = map_filter("TrivialAugmentWide", interpolation)?;
        let fill = rgb_fill(fill)?;
        Ok(Self(gpuprep::Transform {
            trivial_augment: Some(gpuprep::TrivialAugment {
                bins: num_magnitude_bins,
                fill,
                interpolation,
                v2,
            }),
            ..self.0
        }))
    }

    /// RandAugment(num_ops, magnitude, num_magnitude_bins, interpolation, fill): `num_ops`
    /// operations a sample, each at the magnitude's bin, by default after the flips and before the
    /// colour adjustments; interpolation 'nearest', 'bilinear' or 'bicubic', fill a number or one
    /// per channel, v2 as for trivial_augment_wide.
    #[pyo3(signature = (
        num_ops=2, magnitude=9, num_magnitude_bins=31, interpolation="nearest", fill=None,
        v2=false
    ))]
    fn rand_augment(
        &self,
        num_ops: u32,
        magnitude: u32,
        num_magnitude_bins: u32,
        interpolation: &str,
        fill: Option<Bound<'_, PyAny>>,
        v2: bool,
    ) -> PyResult<Self> {
        let interpolation = map_filter("RandAugment", interpolation)?;
        let fill = rgb_fill(fill)?;
        Ok(Self(gpuprep::Transform {
            rand_augment: Some(gpuprep::RandAugment {
                num_ops,
                magnitude,
                bins: num_magnitude_bins,
                fill,
                interpolation,
                v2,
            }),
            ..self.0
        }))
    }

    /// AutoAugment(policy, interpolation, fill): one of the policy's sub-policies a sample
    /// ('imagenet', 'cifar10' or 'svhn', torchvision's `AutoAugmentPolicy` values), by default
    /// after the flips and before the colour adjustments; interpolation 'nearest', 'bilinear' or
    /// 'bicubic', fill a number or one per channel, v2 as for trivial_augment_wide.
    #[pyo3(signature = (policy="imagenet", interpolation="nearest", fill=None, v2=false))]
    fn auto_augment(
        &self,
        policy: &str,
        interpolation: &str,
        fill: Option<Bound<'_, PyAny>>,
        v2: bool,
    ) -> PyResult<Self> {
        let interpolation = map_filter("AutoAugment", interpolation)?;
        let policy = gpuprep::AutoAugmentPolicy::named(policy).ok_or_else(|| {
            OptionsError::new_err(format!(
                "AutoAugment's policy is 'imagenet', 'cifar10' or 'svhn', not {policy:?}"
            ))
        })?;
        let fill = rgb_fill(fill)?;
        Ok(Self(gpuprep::Transform {
            auto_augment: Some(gpuprep::AutoAugment {
                policy,
                fill,
                interpolation,
                v2,
            }),
            ..self.0
        }))
    }

    /// timm's RandAugment of a `rand-...` string (`rand-m9-mstd0.5-inc1`: magnitude 9 with
    /// noise 0.5, the increasing set; `n`, `p`, `mmax` too): timm's own operations and level
    /// rules, by default after the flips and before the colour adjustments. `fill` is timm's
    /// `img_mean` (create_transform passes its mean times 255, rounded; timm's default 128),
    /// interpolation 'random' (timm's default: bilinear or bicubic drawn per operation;
    /// create_transform passes its own, 'bilinear' by default), 'nearest', 'bilinear' or 'bicubic',
    /// and translate_pct the largest translation, a share of the side.
    #[pyo3(signature = (config="rand-m9-mstd0.5-inc1", fill=None, interpolation="random", translate_pct=0.45))]
    fn timm_rand_augment(
        &self,
        config: &str,
        fill: Option<Bound<'_, PyAny>>,
        interpolation: &str,
        translate_pct: f64,
    ) -> PyResult<Self> {
        let parsed = gpuprep::TimmRandAugment::parse(config).map_err(OptionsError::new_err)?;
        let interpolation = match interpolation {
            "random" => None,
            name => Some(map_filter("timm's RandAugment", name)?),
        };
        let fill = match fill {
            None => parsed.fill,
            given => rgb_fill(given)?,
        };
        Ok(Self(gpuprep::Transform {
            timm_rand_augment: Some(gpuprep::TimmRandAugment {
                fill,
                interpolation,
                translate_pct,
                ..parsed
            }),
            ..self.0
        }))
    }

    /// timm's AutoAugment of a policy string (`original`, `originalr`, `v0`, `v0r`, or `3a`:
    /// DeiT III's solarize, grey or Pillow's Gaussian blur; each with an optional `-mstdS`, the
    /// magnitudes' noise: `original-mstd0.5`): one of the policy's sub-policies a sample, timm's
    /// own operations and level rules, by default after the flips and before the colour
    /// adjustments. `fill`, `interpolation` and `translate_pct` as for `timm_rand_augment`.
    #[pyo3(signature = (config="v0", fill=None, interpolation="random", translate_pct=0.45))]
    fn timm_auto_augment(
        &self,
        config: &str,
        fill: Option<Bound<'_, PyAny>>,
        interpolation: &str,
        translate_pct: f64,
    ) -> PyResult<Self> {
        let parsed = gpuprep::TimmAutoAugment::parse(config).map_err(OptionsError::new_err)?;
        let interpolation = match interpolation {
            "random" => None,
            name => Some(map_filter("timm's AutoAugment", name)?),
        };
        let fill = match fill {
            None => parsed.fill,
            given => rgb_fill(given)?,
        };
        Ok(Self(gpuprep::Transform {
            timm_auto_augment: Some(gpuprep::TimmAutoAugment {
                fill,
                interpolation,
                translate_pct,
                ..parsed
            }),
            ..self.0
        }))
    }

    /// timm's AugMix of an `augmix-...` string (`augmix-m3-w3`: severity `m`, `w` chains of `d`
    /// operations, 1 to 3 drawn without `d`, Dirichlet and Beta parameter `a`, magnitude noise
    /// `mstd`, uniform without it): the chains run on the image, summed with their weights in
    /// float32, blended into it; by default after the flips and before the colour adjustments.
    /// `fill`, `interpolation` and `translate_pct` as for `timm_rand_augment` (create_transform
    /// passes 0.3). The blended form (`b1`) blends each chain into the image in turn, as timm's
    /// `_apply_blended`.
    #[pyo3(signature = (config="augmix-m3-w3", fill=None, interpolation="random", translate_pct=0.45))]
    fn timm_aug_mix(
        &self,
        config: &str,
        fill: Option<Bound<'_, PyAny>>,
        interpolation: &str,
        translate_pct: f64,
    ) -> PyResult<Self> {
        let parsed = gpuprep::TimmAugMix::parse(config).map_err(OptionsError::new_err)?;
        let interpolation = match interpolation {
            "random" => None,
            name => Some(map_filter("timm's AugMix", name)?),
        };
        let fill = match fill {
            None => parsed.fill,
            given => rgb_fill(given)?,
        };
        Ok(Self(gpuprep::Transform {
            timm_aug_mix: Some(gpuprep::TimmAugMix {
                fill,
                interpolation,
                translate_pct,
                ..parsed
            }),
            ..self.0
        }))
    }

    /// The single-operation transform whose method is `method` (see `color_operations`), with
    /// its `argument` (None for those without one) and probability `p`: after those given
    /// before, or in the place of the same one given before. The package's generated methods
    /// (`random_posterize`, ...) call this; the crate checks the values by name.
    fn _with_color_op(&self, method: &str, argument: Option<f64>, p: f64) -> PyResult<Self> {
        let op = gpuprep::ColorOp::new(method, argument, p).map_err(|why| error(&why.into()))?;
        Ok(Self(gpuprep::Transform {
            color_ops: self.0.color_ops.with(op),
            ..self.0
        }))
    }

    /// GaussianBlur(kernel_size, sigma): by default after the colour operations; kernel_size an odd
    /// number k or (kx, ky), at most 31; sigma a number or the (min, max) it is drawn from; with p
    /// below 1, RandomApply([GaussianBlur(...)], p). The kernels are torchvision's in float32
    /// with each exp correctly rounded, where torch's x86-64 builds take MKL's: replayed with
    /// torch's own kernels (`torchvision_params`) the blur is exact; drawn here, about one value
    /// in 4 to 11 million differs by one. v2=True: transforms.v2's GaussianBlur, whose kernels are
    /// a softmax, made as torch makes them on an AVX-512 CPU (SLEEF's exp, its sum over 16 lanes;
    /// an AVX2-only CPU sums over 8, and a kernel of 9 weights or more may differ by a few units in
    /// the last place), and whose blur is v1's.
    #[pyo3(signature = (kernel_size, sigma=None, p=1.0, v2=false))]
    fn gaussian_blur(
        &self,
        kernel_size: Bound<'_, PyAny>,
        sigma: Option<Bound<'_, PyAny>>,
        p: f64,
        v2: bool,
    ) -> PyResult<Self> {
        let kernel_size = match kernel_size.extract::<usize>() {
            Ok(k) => (k, k),
            Err(_) => match kernel_size.extract::<Vec<usize>>()?[..] {
                [kx, ky] => (kx, ky),
                _ => {
                    return Err(OptionsError::new_err(
                        "GaussianBlur's kernel_size is an int or a sequence of two ints",
                    ))
                }
            },
        };
        let sigma = match sigma {
            None => (0.1, 2.0),
            Some(s) => match s.extract::<f64>() {
                Ok(v) => (v, v),
                Err(_) => number_pair("GaussianBlur's sigma", &s)?,
            },
        };
        let t = gpuprep::Transform {
            gaussian_blur: Some(gpuprep::GaussianBlur {
                kernel_size,
                sigma,
                p,
                v2,
            }),
            ..self.0
        };
        validated(&t)?;
        Ok(Self(t))
    }

    /// The order of the steps that keep the image's size (the rotation, RandomAffine or
    /// policy, random_perspective, color_jitter, grayscale, the single-operation transforms,
    /// gaussian_blur), by their method names, every one the transform has, e.g.
    /// `order("color_jitter", "random_rotation")`: as a torchvision Compose that lists them so.
    /// An entry may also be `{"random_order": [methods]}` (torchvision's RandomOrder: their
    /// order drawn per sample) or `{"random_choice": [methods], "p": [weights]}` (its
    /// RandomChoice: one drawn per sample, equal weights without `p`). Without it (or with none
    /// named) they run in torchvision's usual order. Set it after adding the steps; the resize,
    /// pad, crops and flips run before them.
    #[pyo3(signature = (*entries))]
    fn order(&self, entries: Vec<Bound<'_, PyAny>>) -> PyResult<Self> {
        let entries = entries
            .iter()
            .map(order_entry)
            .collect::<PyResult<Vec<_>>>()?;
        let order = gpuprep::StepOrder::from_entries(&entries)
            .map_err(|e| OptionsError::new_err(e.to_string()))?;
        let mut t = gpuprep::Transform { order, ..self.0 };
        validated(&t)?;
        let usual = gpuprep::Transform {
            order: gpuprep::StepOrder::default(),
            ..t
        };
        if !order.is_random() && t.ordered_steps() == usual.ordered_steps() {
            t = usual; // the same transform, equal to one built without an order
        }
        Ok(Self(t))
    }

    /// RandomErasing(p, scale, ratio, value, count): value a number, one per channel,
    /// "random" (a normal value per element) or "random_per_channel" (one per channel and box);
    /// count a number of boxes or a (min, max) range of them.
    #[pyo3(signature = (p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=None, count=None))]
    fn random_erasing(
        &self,
        p: f64,
        scale: (f64, f64),
        ratio: (f64, f64),
        value: Option<Bound<'_, PyAny>>,
        count: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let value = match value {
            None => ErasedValue::Constant([0.0; 3]),
            Some(v) => match v.extract::<String>().ok().as_deref() {
                Some("random") => ErasedValue::NormalPerElement,
                Some("random_per_channel") => ErasedValue::NormalPerChannel,
                Some(other) => {
                    return Err(OptionsError::new_err(format!(
                        "RandomErasing's value must be a number, three numbers, 'random' or \
                         'random_per_channel', not {other:?}"
                    )))
                }
                None => ErasedValue::Constant(
                    v.extract::<f32>()
                        .map(|x| [x; 3])
                        .or_else(|_| v.extract::<[f32; 3]>())
                        .map_err(|_| {
                            OptionsError::new_err(format!(
                                "RandomErasing's value must be a number, three numbers, 'random' \
                                 or 'random_per_channel', not {v}"
                            ))
                        })?,
                ),
            },
        };
        let count = match count {
            None => (1, 1),
            // A bool is an int to Python, and never meant as a count.
            Some(c) if c.is_instance_of::<PyBool>() => return Err(count_error(&c)),
            Some(c) => c
                .extract::<u32>()
                .map(|n| (n, n))
                .or_else(|_| c.extract::<(u32, u32)>())
                .map_err(|_| count_error(&c))?,
        };
        // Checked where the transform is used: a later call may still change the element type.
        Ok(Self(gpuprep::Transform {
            random_erasing: Some(RandomErasing {
                p,
                scale,
                ratio,
                value,
                count,
            }),
            ..self.0
        }))
    }

    /// ToTensor() then Normalize(mean, std): float32 C×H×W.
    fn normalize(&self, mean: [f64; 3], std: [f64; 3]) -> Self {
        Self(gpuprep::Transform {
            normalize: Some(Normalize::from_f64(mean, std)),
            dtype: DType::F32,
            layout: Layout::Chw,
            ..self.0
        })
    }

    /// ToTensor(): float32 C×H×W in [0, 1] (then normalised, where `normalize` was given);
    /// scale "divide" is ToTensor's v / 255, "multiply" transforms.v2.ToDtype(torch.float32,
    /// scale=True)'s float32(v) × float32(1 / 255), which differs in the last bit for some v.
    #[pyo3(signature = (scale="divide"))]
    fn to_tensor(&self, scale: &str) -> PyResult<Self> {
        let reciprocal_scale = match scale {
            "divide" => false,
            "multiply" => true,
            other => {
                return Err(OptionsError::new_err(format!(
                    "to_tensor's scale is \"divide\" (ToTensor's) or \"multiply\" (v2 \
                     ToDtype's), got {other:?}"
                )))
            }
        };
        Ok(Self(gpuprep::Transform {
            dtype: DType::F32,
            layout: Layout::Chw,
            reciprocal_scale,
            ..self.0
        }))
    }

    /// The element type: "uint8", "float32" or "float16"; and the layout, "chw" or "hwc".
    #[pyo3(signature = (dtype, layout=None))]
    fn to(&self, dtype: &str, layout: Option<&str>) -> PyResult<Self> {
        let dtype = match dtype {
            "uint8" | "u8" => DType::U8,
            "float32" | "f32" => DType::F32,
            "float16" | "f16" => DType::F16,
            other => return Err(OptionsError::new_err(format!("unknown dtype {other:?}"))),
        };
        let layout = match layout {
            None => self.0.layout,
            Some("chw") => Layout::Chw,
            Some("hwc") => Layout::Hwc,
            Some(other) => return Err(OptionsError::new_err(format!("unknown layout {other:?}"))),
        };
        Ok(Self(gpuprep::Transform {
            dtype,
            layout,
            ..self.0
        }))
    }

    /// The seed the random parameters are drawn from.
    fn with_seed(&self, seed: u64) -> Self {
        Self(gpuprep::Transform { seed, ..self.0 })
    }

    /// Whether any operation draws random parameters.
    #[getter]
    fn is_random(&self) -> bool {
        self.0.is_random()
    }

    /// The output (height, width) when the transform fixes it, else None.
    #[getter]
    fn output_size(&self) -> Option<(usize, usize)> {
        self.0.fixed_output_size().map(|(w, h)| (h, w))
    }

    /// "float32", "float16" or "uint8".
    #[getter]
    fn dtype(&self) -> &'static str {
        dtype_name(self.0.dtype)
    }

    /// "chw" or "hwc".
    #[getter]
    fn layout(&self) -> &'static str {
        layout_name(self.0.layout)
    }

    /// Raises OptionsError naming what does not fit (every call that uses a transform checks
    /// it so too).
    fn validate(&self) -> PyResult<()> {
        validated(&self.0)
    }

    fn __repr__(&self) -> String {
        describe(&self.0)
    }

    fn __eq__(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

/// A backend by name: "auto" (a hardware GPU, else the CPU), "gpu" or "cpu"; with "auto", why
/// the CPU was chosen when it was.
fn backend(name: &str, adapter: Option<&str>) -> PyResult<(Backend, Option<String>)> {
    match name {
        "auto" => {
            let (backend, reason) = Backend::auto(adapter);
            let python = |why: String| why.replace("--backend gpu", "backend=\"gpu\"");
            Ok((backend, reason.map(python)))
        }
        "gpu" => Backend::gpu_on(adapter)
            .map(|b| (b, None))
            .map_err(|e| error(&e)),
        "cpu" if adapter.is_some() => Err(OptionsError::new_err(
            "an adapter names a GPU, and backend=\"cpu\" uses none",
        )),
        "cpu" => Ok((Backend::Cpu, None)),
        other => Err(OptionsError::new_err(format!(
            "unknown backend {other:?}: auto, gpu or cpu"
        ))),
    }
}

/// A numpy array owning `tensor`'s buffer (no copy), of shape `shape`.
fn array<'py>(py: Python<'py>, data: TensorData, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    let flat = match data {
        TensorData::U8(v) => PyArray1::from_vec(py, v).into_any(),
        TensorData::F32(v) => PyArray1::from_vec(py, v).into_any(),
        TensorData::F16(v) => PyArray1::from_vec(py, v).into_any(),
    };
    flat.call_method1("reshape", (shape.to_vec(),))
}

/// The memory of one loader batch's images, owned by the numpy array made of it: when the array
/// and every view of it are gone, it goes back to the loader's ring of arrays.
#[pyclass(module = "gpuprep._gpuprep", frozen)]
struct BatchMemory {
    _array: loader::BatchArray,
}

/// A numpy array over `data`'s elements in place (no copy, writeable), of shape `shape`, that
/// keeps `data` alive.
fn batch_array<'py>(
    py: Python<'py>,
    mut data: loader::BatchArray,
    shape: &[usize],
) -> PyResult<Bound<'py, PyAny>> {
    let (len, dtype) = (data.len_elements(), data.dtype());
    let start = data.bytes_mut().as_mut_ptr();
    let owner = Bound::new(py, BatchMemory { _array: data })?.into_any();
    /// The array of `len` `T`s at `start`, owned by `owner`.
    ///
    /// # Safety
    /// `start` is aligned for `T` and holds `len` of them, for as long as `owner` lives.
    unsafe fn view<'py, T: numpy::Element>(
        start: *mut u8,
        len: usize,
        owner: Bound<'py, PyAny>,
    ) -> Bound<'py, PyAny> {
        // SAFETY: the caller's contract; the view lives only for this call.
        let view = unsafe { numpy::ndarray::ArrayView1::from_shape_ptr(len, start.cast::<T>()) };
        // SAFETY: numpy keeps `owner` as the array's base, so the memory outlives the array.
        unsafe { PyArray1::borrow_from_array(&view, owner) }.into_any()
    }
    // SAFETY: `start` is the batch's own elements (a Vec of the dtype, so aligned), `len` of
    // them, and the BatchArray in `owner` never moves or frees them while it lives.
    let flat = unsafe {
        match dtype {
            DType::U8 => view::<u8>(start, len, owner),
            DType::F32 => view::<f32>(start, len, owner),
            DType::F16 => view::<half::f16>(start, len, owner),
        }
    };
    flat.call_method1("reshape", (shape.to_vec(),))
}

/// Each of `params` as report.json writes them, as Python dicts (parsed as one JSON text: a
/// batch's worth costs one call).
fn params_list<'py, 'a>(
    py: Python<'py>,
    params: impl Iterator<Item = &'a Params>,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let all: Vec<_> = params.map(gpuprep::plan::params_json).collect();
    let text = serde_json::Value::Array(all).to_string();
    py.import("json")?.call_method1("loads", (text,))?.extract()
}

/// RandomErasing's `count` that is neither a whole number nor a (min, max) pair of them.
fn count_error(count: &Bound<'_, PyAny>) -> PyErr {
    OptionsError::new_err(format!(
        "RandomErasing's count must be a whole number of boxes or a (min, max) pair of them, \
         not {count}"
    ))
}

/// A parameter dict (report.json's form) as the crate's parameters: numpy arrays and scalars in
/// it are taken as lists and numbers; a number that is not finite is refused.
fn given_params(py: Python<'_>, dict: &Bound<'_, PyAny>) -> PyResult<Params> {
    let kwargs = PyDict::new(py);
    kwargs.set_item("allow_nan", false)?;
    kwargs.set_item("default", py.eval(c"lambda o: o.tolist()", None, None)?)?;
    let text: String = py
        .import("json")?
        .call_method("dumps", (dict,), Some(&kwargs))
        .map_err(|e| {
            OptionsError::new_err(format!(
                "the parameters must hold dicts, lists and finite numbers (numpy arrays and \
                 scalars are taken): {e}"
            ))
        })?
        .extract()?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| OptionsError::new_err(e.to_string()))?;
    gpuprep::plan::params_from_json(&value).map_err(|e| error(&e))
}

/// One input as gpuprep decodes it: bytes or a path are files; an array is uint8 RGB pixels
/// (H×W×3, or H×W grey).
enum Input {
    Encoded(Vec<u8>),
    Pixels(gpuprep::RgbImage),
    /// A path that could not be read: its outcome.
    Unreadable(gpuprep::Error),
}

impl Input {
    fn encoded(&self) -> Option<&[u8]> {
        match self {
            Self::Encoded(bytes) => Some(bytes),
            Self::Pixels(_) | Self::Unreadable(_) => None,
        }
    }
}

/// What an input's errors name: its path, or its place in the call.
fn input_name(item: &Bound<'_, PyAny>, place: usize) -> std::path::PathBuf {
    let is_data = item.cast::<PyBytes>().is_ok()
        || item.cast::<PyByteArray>().is_ok()
        || item.cast::<PyMemoryView>().is_ok();
    match item.extract::<std::path::PathBuf>() {
        Ok(path) if !is_data => path,
        _ => format!("image {place} of the call").into(),
    }
}

fn input(item: &Bound<'_, PyAny>) -> PyResult<Input> {
    if let Ok(bytes) = item.cast::<PyBytes>() {
        return Ok(Input::Encoded(bytes.as_bytes().to_vec()));
    }
    // Other bytes-like objects: bytearray, memoryview, mmap (their bytes, copied).
    if item.cast::<PyByteArray>().is_ok() || item.cast::<PyMemoryView>().is_ok() {
        let bytes = item.py().get_type::<PyBytes>().call1((item,))?;
        return input(&bytes);
    }
    // A PIL image: its pixels as `convert('RGB')` gives them, as torchvision takes it.
    if item.hasattr("getbands")? && item.hasattr("convert")? {
        let rgb = item.call_method1("convert", ("RGB",))?;
        let array = item.py().import("numpy")?.call_method1("asarray", (rgb,))?;
        return input(&array);
    }
    if let Ok(array) = item.extract::<PyReadonlyArrayDyn<'_, u8>>() {
        let shape = array.shape().to_vec();
        let data: Vec<u8> = array.as_array().iter().copied().collect();
        let (height, width, data) = match shape[..] {
            [h, w, 3] => (h, w, data),
            [h, w] => (h, w, data.iter().flat_map(|&v| [v; 3]).collect()),
            _ => {
                return Err(OptionsError::new_err(format!(
                    "an image array is uint8 (H, W, 3) or (H, W), not {shape:?}"
                )))
            }
        };
        return Ok(Input::Pixels(gpuprep::RgbImage {
            width,
            height,
            data,
        }));
    }
    let Ok(path) = item.extract::<std::path::PathBuf>() else {
        let kind = item.get_type().name()?;
        return Err(OptionsError::new_err(format!(
            "an image is bytes (or bytearray, memoryview), a path, a uint8 array or a PIL image, \
             not {kind}"
        )));
    };
    Ok(std::fs::read(&path)
        .map(Input::Encoded)
        .unwrap_or_else(|e| Input::Unreadable(gpuprep::Error::from(e))))
}

/// Decodes and transforms images on a backend. `preprocess` returns the stacked array of the
/// images that converted and one outcome per input.
#[pyclass(module = "gpuprep._gpuprep", frozen)]
struct Pipeline {
    backend: Arc<Backend>,
    reason: Option<String>,
}

#[pymethods]
impl Pipeline {
    #[new]
    #[pyo3(signature = (backend="auto", adapter=None))]
    fn new(backend: &str, adapter: Option<&str>) -> PyResult<Self> {
        gpuprep::init_threads(None);
        let (backend, reason) = self::backend(backend, adapter)?;
        Ok(Self {
            backend: Arc::new(backend),
            reason,
        })
    }

    /// "cpu" or the GPU adapter's description.
    #[getter]
    fn backend(&self) -> String {
        self.backend.describe()
    }

    /// Why backend="auto" chose the CPU (no GPU, or only a software one), else None.
    #[getter]
    fn reason(&self) -> Option<String> {
        self.reason.clone()
    }

    /// `images` (bytes, paths, or uint8 arrays) through `transform`, image i being sample
    /// `indices[i]` (default i) of a random one, or with the random parameters `params[i]`
    /// (dicts in report.json's form, e.g. from `gpuprep.torchvision_params`). Returns (array
    /// (N, ...) of the images that converted, in order; a list with each input's outcome: a
    /// dict with "ok", "error", "kind" and "params"). With errors="raise" the first failure
    /// raises its DecodeError subclass instead.
    #[pyo3(signature = (images, transform, indices=None, params=None, errors="raise"))]
    fn preprocess<'py>(
        &self,
        py: Python<'py>,
        images: Bound<'py, PyList>,
        transform: &Transform,
        indices: Option<Vec<u64>>,
        params: Option<Bound<'py, PyList>>,
        errors: &str,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyList>)> {
        if errors != "raise" && errors != "skip" {
            return Err(OptionsError::new_err("errors is \"raise\" or \"skip\""));
        }
        let inputs: Vec<Input> = images.iter().map(|i| input(&i)).collect::<PyResult<_>>()?;
        let names: Vec<std::path::PathBuf> = (images.iter().enumerate())
            .map(|(place, item)| input_name(&item, place))
            .collect();
        let indices = indices.unwrap_or_else(|| (0..inputs.len() as u64).collect());
        if indices.len() != inputs.len() {
            return Err(OptionsError::new_err("one index per image"));
        }
        let given: Option<Vec<Params>> = params
            .map(|list| list.iter().map(|p| given_params(py, &p)).collect())
            .transpose()?;
        if given.as_ref().is_some_and(|g| g.len() != inputs.len()) {
            return Err(OptionsError::new_err("one parameter dict per image"));
        }
        let t = transform.0;
        validated(&t)?;
        let limits = Limits::default();
        let backend = Arc::clone(&self.backend);
        let stacked = interruptible(py, move || {
            let all_encoded = inputs.iter().all(|i| matches!(i, Input::Encoded(_)));
            let samples = |indices| match &given {
                Some(g) => Samples::Given(g),
                None => Samples::Indices(indices),
            };
            match t.fixed_output_shape() {
                // The fast path: each tensor read back straight into its place in the batch.
                Some(_) if all_encoded => {
                    let encoded: Vec<&[u8]> = inputs.iter().filter_map(Input::encoded).collect();
                    backend.preprocess_stacked(&encoded, &t, samples(&indices), &limits)
                }
                shape => {
                    let tensors = preprocess_each(&backend, inputs, &t, &indices, &given, &limits);
                    let first = tensors
                        .iter()
                        .find_map(|r| r.as_ref().ok().map(|t| t.shape));
                    let shape = shape.or(first).unwrap_or(match t.layout {
                        Layout::Chw => [3, 0, 0],
                        Layout::Hwc => [0, 0, 3],
                    });
                    Ok(Stacked::from_tensors(shape, t.dtype, tensors))
                }
            }
        })?;
        let mut stacked = stacked.map_err(|e| error(&e))?;
        // Each error names its input.
        for (outcome, name) in stacked.outcomes.iter_mut().zip(&names) {
            if let Err(e) = outcome {
                if !matches!(e, gpuprep::Error::InFile { .. }) {
                    *e = e.clone().in_file(name);
                }
            }
        }
        let outcomes = PyList::empty(py);
        let drawn = params_list(py, stacked.outcomes.iter().filter_map(|o| o.as_ref().ok()))?;
        let mut drawn = drawn.iter();
        for result in &stacked.outcomes {
            let outcome = pyo3::types::PyDict::new(py);
            match result {
                Ok(_) => {
                    outcome.set_item("ok", true)?;
                    outcome.set_item("error", py.None())?;
                    outcome.set_item("kind", py.None())?;
                    outcome.set_item("params", drawn.next())?;
                }
                Err(e) => {
                    let err = error(e);
                    if errors == "raise" {
                        return Err(err);
                    }
                    outcome.set_item("ok", false)?;
                    outcome.set_item("error", e.to_string())?;
                    outcome.set_item("kind", err.get_type(py).name()?)?;
                    outcome.set_item("params", py.None())?;
                }
            }
            outcomes.append(outcome)?;
        }
        let [a, b, c] = stacked.shape;
        let count = stacked.count();
        Ok((array(py, stacked.data, &[count, a, b, c])?, outcomes))
    }
}

/// How often a wait with the GIL released looks for an interrupt (Ctrl-C).
const SIGNAL_CHECK: std::time::Duration = std::time::Duration::from_millis(100);

/// `work`'s result, the work run on a thread of its own while this one waits with the GIL
/// released, looking for signals every [`SIGNAL_CHECK`]: Ctrl-C raises KeyboardInterrupt at
/// once (the work then runs to its end, its result dropped). A panic in it is a GpuprepError
/// naming an internal error, not a PanicException.
fn interruptible<T: Send + 'static>(
    py: Python<'_>,
    work: impl FnOnce() -> T + Send + 'static,
) -> PyResult<T> {
    use std::sync::mpsc::RecvTimeoutError;
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
        let _ = sender.send(done.map_err(|panic| gpuprep::Error::from_panic(&*panic)));
    });
    let mut receiver = receiver;
    loop {
        let (waited, back) = py.detach(move || (receiver.recv_timeout(SIGNAL_CHECK), receiver));
        receiver = back;
        match waited {
            Ok(done) => return done.map_err(|e| error(&e)),
            Err(RecvTimeoutError::Timeout) => py.check_signals()?,
            Err(RecvTimeoutError::Disconnected) => {
                let e = gpuprep::Error::Internal("the work's thread ended with no result".into());
                return Err(error(&e));
            }
        }
    }
}

/// Panics inside gpuprep's boundary, as a bug would: a test proves it reaches Python as a
/// GpuprepError and the interpreter goes on.
#[pyfunction]
fn _panic_inside(py: Python<'_>) -> PyResult<()> {
    interruptible(py, || panic!("planted by a test"))
}

/// Each input through `transform` on its own (encoded ones in one streaming call, arrays one
/// by one), in input order.
fn preprocess_each(
    backend: &Backend,
    inputs: Vec<Input>,
    t: &gpuprep::Transform,
    indices: &[u64],
    given: &Option<Vec<Params>>,
    limits: &Limits,
) -> Vec<gpuprep::Result<Tensor>> {
    let encoded: Vec<&[u8]> = inputs.iter().filter_map(Input::encoded).collect();
    let is_encoded: Vec<bool> = inputs.iter().map(|i| i.encoded().is_some()).collect();
    let encoded_indices: Vec<u64> = indices
        .iter()
        .zip(&is_encoded)
        .filter(|(_, &e)| e)
        .map(|(&k, _)| k)
        .collect();
    let encoded_given: Option<Vec<Params>> = given.as_ref().map(|g| {
        g.iter()
            .zip(&is_encoded)
            .filter(|(_, &e)| e)
            .map(|(p, _)| p.clone())
            .collect()
    });
    let samples = match &encoded_given {
        Some(g) => Samples::Given(g),
        None => Samples::Indices(&encoded_indices),
    };
    let mut from_bytes = backend
        .preprocess_samples(&encoded, t, samples, limits)
        .into_iter();
    inputs
        .into_iter()
        .enumerate()
        .map(|(i, input)| match input {
            Input::Encoded(_) => from_bytes.next().expect("one result per input"),
            Input::Pixels(rgb) => {
                let decoded = gpuprep::formats::Decoded::Pixels(gpuprep::formats::Pixels {
                    rgb,
                    orientation: 1,
                });
                let sample = match given {
                    Some(g) => Sample::Given(g[i].clone()),
                    None => Sample::Index(indices[i]),
                };
                backend.preprocess_decoded(decoded, t, &sample, limits)
            }
            Input::Unreadable(e) => Err(e),
        })
        .collect()
}

/// The training loader over `kind` ("folder", "files", "shards" or "index") `paths`; the package's
/// `gpuprep.Loader` is the documented front.
#[pyclass(module = "gpuprep._gpuprep", frozen)]
struct Loader {
    inner: Arc<loader::Loader>,
    dtype: DType,
    reason: Option<String>,
}

#[pymethods]
impl Loader {
    #[new]
    #[pyo3(signature = (kind, paths, transform, batch_size, shuffle, seed, rank, world_size,
                        drop_last, backend, adapter, prefetch, shuffle_buffer, wait_warning,
                        pin_memory, cuda=None, refill=false, retries=10, timeout=30.0,
                        resampled=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        kind: &str,
        paths: Vec<std::path::PathBuf>,
        transform: &Transform,
        batch_size: usize,
        shuffle: bool,
        seed: u64,
        rank: usize,
        world_size: usize,
        drop_last: bool,
        backend: &str,
        adapter: Option<&str>,
        prefetch: usize,
        shuffle_buffer: usize,
        wait_warning: f64,
        pin_memory: Option<u32>,
        cuda: Option<u32>,
        refill: bool,
        retries: u32,
        timeout: f64,
        resampled: bool,
    ) -> PyResult<Self> {
        let source = match kind {
            "folder" => Source::ImageFolder(paths.into_iter().next().unwrap_or_default()),
            "files" => Source::Files(paths),
            "shards" => Source::Shards(shard_urls(paths)?),
            "index" => match shard_urls(paths)?.as_slice() {
                [index] => Source::ShardIndex(index.clone()),
                _ => return Err(OptionsError::new_err("a loader reads one shard index")),
            },
            other => {
                return Err(OptionsError::new_err(format!(
                    "unknown source kind {other:?}"
                )))
            }
        };
        let options = LoaderOptions {
            batch_size,
            split: Split {
                shuffle,
                seed,
                rank,
                world_size,
                drop_last,
            },
            prefetch,
            shuffle_buffer,
            wait_warning,
            pin_memory,
            handoff: cuda.map_or(loader::Handoff::Host, loader::Handoff::Cuda),
            refill,
            fetch: fetch_options(retries, timeout)?,
            resampled,
            ..LoaderOptions::new(batch_size)
        };
        let (backend, reason) = self::backend(backend, adapter)?;
        // Counting shards' samples can take a while: Ctrl-C stops the wait.
        let transform_given = transform.0;
        let inner = interruptible(py, move || {
            loader::Loader::new(
                source,
                &transform_given,
                backend,
                &Limits::default(),
                options,
            )
        })?
        .map_err(|e| error(&e))?;
        Ok(Self {
            inner: Arc::new(inner),
            dtype: transform.0.dtype,
            reason,
        })
    }

    /// Batches each rank gets per epoch, the same on every rank.
    fn batches(&self) -> usize {
        self.inner.len()
    }

    /// Samples each rank reads per epoch, the same on every rank.
    fn samples(&self) -> usize {
        self.inner.samples_per_epoch()
    }

    /// Why backend="auto" chose the CPU, else None.
    fn reason(&self) -> Option<String> {
        self.reason.clone()
    }

    /// Samples of an epoch no rank reads (shards split unevenly, unshuffled), or None where it
    /// changes from epoch to epoch.
    fn unread(&self) -> Option<usize> {
        self.inner.unread_per_epoch()
    }

    /// How the batch arrays are held: pageable, or page-locked for a CUDA device (or why not).
    fn memory(&self) -> String {
        self.inner.memory().to_string()
    }

    /// Where batches are handed over: the CUDA device's ordinal when in CUDA memory, else
    /// None; and in words (host memory, and why, when CUDA was asked for).
    fn handed_over(&self) -> (Option<u32>, String) {
        let handed = self.inner.handed_over();
        let device = match handed {
            loader::HandedOver::Cuda { device } => Some(device),
            _ => None,
        };
        (device, handed.to_string())
    }

    /// Batch arrays allocated so far (every other batch reused one a dropped batch gave back).
    fn arrays_made(&self) -> usize {
        self.inner.arrays_made()
    }

    /// The class names of a folder source, in label order.
    fn classes(&self) -> Vec<String> {
        self.inner.classes().to_vec()
    }

    /// Epoch `epoch`'s batches from step `first` on (work starts at once): a run resumed
    /// after `first` batches.
    #[pyo3(signature = (epoch, first=0))]
    fn epoch(&self, epoch: u64, first: usize) -> PyResult<Epoch> {
        let inner = self.inner.epoch_from(epoch, first).map_err(|e| error(&e))?;
        Ok(Epoch {
            inner: std::sync::Mutex::new(inner),
            handed: self.inner.handed_over(),
            dtype: self.dtype,
        })
    }
}

/// One epoch's batches: each a tuple (images, labels, indices, params, failed, stats).
#[pyclass(module = "gpuprep._gpuprep", frozen)]
struct Epoch {
    inner: std::sync::Mutex<loader::Epoch>,
    handed: loader::HandedOver,
    dtype: DType,
}

#[pymethods]
impl Epoch {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[allow(clippy::type_complexity)]
    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        // Waits in slices, with the GIL released, looking for Ctrl-C between them.
        let batch = loop {
            let waited = py.detach(|| {
                let mut epoch = self.inner.lock().unwrap_or_else(|e| e.into_inner());
                epoch.wait(SIGNAL_CHECK)
            });
            match waited {
                loader::Waited::Batch(batch) => break batch,
                loader::Waited::End => return Ok(None),
                loader::Waited::TimedOut => py.check_signals()?,
            }
        };
        let mut batch = batch.map_err(|e| error(&e))?;
        let images = match batch.device.take() {
            Some(array) => {
                let device = match self.handed {
                    loader::HandedOver::Cuda { device } => device,
                    _ => return Err(GpuError::new_err("a device batch from a host loader")),
                };
                let dtype = self.dtype;
                let cuda = dlpack::CudaBatch::new(array, batch.shape, dtype, device);
                Bound::new(py, cuda)?.into_any()
            }
            None => batch_array(py, batch.data, &batch.shape)?,
        };
        let labels = PyArray1::from_vec(py, batch.labels).into_any();
        let indices = PyArray1::from_vec(py, batch.indices).into_any();
        let drawn = PyList::new(py, params_list(py, batch.params.iter())?)?;
        let failed = PyList::empty(py);
        for (index, e) in &batch.failed {
            failed.append((index, error(e).get_type(py).name()?, e.to_string()))?;
        }
        let s = &batch.stats;
        let stats = pyo3::types::PyDict::new(py);
        stats.set_item("step", s.step)?;
        stats.set_item("read_s", s.read.as_secs_f64())?;
        stats.set_item("prepared_s", s.prepared.as_secs_f64())?;
        stats.set_item("waited_s", s.waited.as_secs_f64())?;
        stats.set_item("step_s", s.step_time.as_secs_f64())?;
        stats.set_item("data_wait_share", s.data_wait_share)?;
        stats.set_item("warning", s.warning.clone())?;
        let epoch = self.inner.lock().unwrap_or_else(|e| e.into_inner()).stats();
        stats.set_item("images_per_second", epoch.images_per_second)?;
        stats.set_item("epoch_data_wait_share", epoch.data_wait_share)?;
        let waited = pyo3::types::PyDict::new(py);
        for (what, time) in epoch.stream.iter() {
            waited.set_item(what.name(), time.as_secs_f64())?;
        }
        stats.set_item("epoch_stream_waited_s", waited)?;
        stats.set_item("epoch_submissions", epoch.submissions)?;
        stats.set_item("epoch_packing_s", epoch.packing.as_secs_f64())?;
        stats.set_item("epoch_landing_s", epoch.landing.as_secs_f64())?;
        stats.set_item("handed_over", self.handed.to_string())?;
        let tuple = (images, labels, indices, drawn, failed, stats);
        Ok(Some(tuple.into_pyobject(py)?.into_any()))
    }
}

/// Copies the bytes of `src` into `dst` (one-dimensional uint8 views of the same length) on
/// all cores with the GIL released: a batch into page-locked memory in a few milliseconds,
/// where one thread takes several times that.
#[pyfunction]
fn copy_into(
    py: Python<'_>,
    mut dst: PyReadwriteArray1<'_, u8>,
    src: PyReadonlyArray1<'_, u8>,
) -> PyResult<()> {
    let (dst, src) = (dst.as_slice_mut()?, src.as_slice()?);
    if dst.len() != src.len() {
        return Err(OptionsError::new_err(format!(
            "copy_into: {} bytes into {}",
            src.len(),
            dst.len()
        )));
    }
    // Threads of its own: rayon's would take the copy after the decoding tasks queued there.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let part = dst.len().div_ceil(threads).max(1);
    py.detach(|| {
        std::thread::scope(|scope| {
            for (d, s) in dst.chunks_mut(part).zip(src.chunks(part)) {
                scope.spawn(move || d.copy_from_slice(s));
            }
        })
    });
    Ok(())
}

/// The shard addresses a pattern names: webdataset's `::` lists, each brace-expanded, every
/// scheme checked (a local path stays as given).
#[pyfunction]
fn expand_shards(pattern: &str) -> PyResult<Vec<String>> {
    let urls = loader::ShardUrl::expand(pattern).map_err(|e| error(&e))?;
    Ok(urls.iter().map(ToString::to_string).collect())
}

/// Counts the samples of the shards at `paths` and writes their index at `out` (see
/// `gpuprep index`); returns each shard's address and count. Ctrl-C stops the counting.
#[pyfunction]
#[pyo3(signature = (paths, out, retries=10, timeout=30.0))]
fn write_shard_index(
    py: Python<'_>,
    paths: Vec<std::path::PathBuf>,
    out: std::path::PathBuf,
    retries: u32,
    timeout: f64,
) -> PyResult<Vec<(String, u64)>> {
    let urls = shard_urls(paths)?;
    let fetch = fetch_options(retries, timeout)?;
    let shards = interruptible(py, move || loader::shard_index::save(&out, &urls, &fetch))?
        .map_err(|e| error(&e))?;
    Ok(shards
        .into_iter()
        .map(|s| (s.url.to_string(), s.samples))
        .collect())
}

/// What `write_shards` returns: shards written, complete shards kept, samples written,
/// (sample, source, error) of each input that failed, the stages' seconds, the GPU stream's
/// seconds, and the job's elapsed seconds.
type ShardsWritten = (
    Vec<String>,
    usize,
    usize,
    Vec<(usize, String, String)>,
    [(&'static str, f64); 6],
    [(&'static str, f64); 5],
    f64,
);

/// `gpuprep shard` from Python: the images at `paths` (an ImageFolder root where `folder`;
/// labelled by the file `labels` where given) resized to shorter side `resize` and written as
/// shards at `out` (see `gpuprep.write_shards`). Returns a [`ShardsWritten`].
/// Ctrl-C stops the job at its next chunk (its complete shards stay) and raises
/// KeyboardInterrupt.
#[pyfunction]
#[pyo3(signature = (paths, folder, out, resize, filter, draft, quality, subsampling, optimize,
                    shard_samples, shard_size, backend, adapter=None, labels=None,
                    recursive=false))]
#[allow(clippy::too_many_arguments)]
fn write_shards(
    py: Python<'_>,
    paths: Vec<std::path::PathBuf>,
    folder: bool,
    out: &str,
    resize: usize,
    filter: &str,
    draft: bool,
    quality: u8,
    subsampling: Option<&str>,
    optimize: bool,
    shard_samples: usize,
    shard_size: u64,
    backend: &str,
    adapter: Option<&str>,
    labels: Option<std::path::PathBuf>,
    recursive: bool,
) -> PyResult<ShardsWritten> {
    use gpuprep::encode::{JpegOptions, Subsampling};
    use gpuprep::shard::{self, ShardOptions, ShardPattern};
    let subsampling = match subsampling {
        None => None,
        Some("4:4:4") => Some(Subsampling::Full),
        Some("4:2:2") => Some(Subsampling::Half),
        Some("4:2:0") => Some(Subsampling::Quarter),
        Some(other) => {
            return Err(OptionsError::new_err(format!(
                "subsampling is \"4:4:4\", \"4:2:2\" or \"4:2:0\", got {other:?}"
            )))
        }
    };
    let filter = self::filter(filter)?;
    let options = ShardOptions {
        pattern: ShardPattern::parse(out).map_err(|e| error(&e))?,
        jpeg: JpegOptions {
            quality,
            subsampling,
            optimize,
        },
        max_samples: shard_samples,
        max_bytes: shard_size,
        // As `gpuprep shard`'s default: on CPU threads (see its --forward-stages).
        forward_on_gpu: false,
    };
    // Folders of images: those directly inside (or, `recursive`, below), in path order.
    let found = || gpuprep::convert::find_inputs(&paths, recursive).map_err(|e| error(&e));
    let inputs = if let Some(labels) = &labels {
        shard::labelled_inputs(found()?, labels).map_err(|e| error(&e))?
    } else if folder && !recursive {
        let root = paths.first().cloned().unwrap_or_default();
        shard::image_folder_inputs(&root).map_err(|e| error(&e))?
    } else {
        shard::unlabelled_inputs(found()?)
    };
    let (backend, _) = self::backend(backend, adapter)?;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop_job = Arc::clone(&stop);
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let job = gpuprep::convert::Job {
            transform: gpuprep::Transform {
                resize: Some(gpuprep::Resize::ShorterSide(resize)),
                filter,
                draft,
                ..gpuprep::Transform::default()
            },
            limits: gpuprep::Limits::default(),
            backend: &backend,
            progress: None,
            stop: Some(&stop_job),
        };
        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            gpuprep::shard::write_shards(&inputs, &options, &job)
        }));
        let _ = sender.send(done.unwrap_or_else(|panic| Err(gpuprep::Error::from_panic(&*panic))));
    });
    let mut receiver = receiver;
    let mut interrupted = None;
    let done = loop {
        let (waited, back) = py.detach(move || (receiver.recv_timeout(SIGNAL_CHECK), receiver));
        receiver = back;
        match waited {
            Ok(done) => break done,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if let Err(signal) = py.check_signals() {
                    // Stopped at the next chunk: the complete shards stay.
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    interrupted.get_or_insert(signal);
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                let e = gpuprep::Error::Internal("the job's thread ended with no result".into());
                return Err(error(&e));
            }
        }
    };
    if let Some(signal) = interrupted {
        return Err(signal);
    }
    let report = done.map_err(|e| error(&e))?;
    let lossy = |p: &std::path::Path| p.to_string_lossy().into_owned();
    Ok((
        report.written.iter().map(|p| lossy(p)).collect(),
        report.kept,
        report.samples,
        report
            .failed
            .into_iter()
            .map(|(n, source, e)| (n, lossy(&source), e))
            .collect(),
        stage_seconds(&report.times),
        stream_seconds(&report.times.stream),
        report.elapsed.as_secs_f64(),
    ))
}

/// A job's stage times as (name, seconds), the names `gpuprep shard` prints.
fn stage_seconds(t: &gpuprep::shard::StageTimes) -> [(&'static str, f64); 6] {
    [
        ("reading", t.reading),
        ("decoding", t.decoding),
        ("forward", t.forward),
        ("encoding", t.encoding),
        ("writing", t.writing),
        ("waiting", t.waiting),
    ]
    .map(|(name, d)| (name, d.as_secs_f64()))
}

/// Where a job's GPU stream spent its time as (name, seconds), the names `gpuprep shard` prints.
fn stream_seconds(s: &gpuprep::shard::StreamTimes) -> [(&'static str, f64); 5] {
    [
        ("preparing", s.preparing),
        ("starved", s.starved),
        ("submitting", s.submitting),
        ("executing", s.executing),
        ("reading_back", s.reading_back),
    ]
    .map(|(name, d)| (name, d.as_secs_f64()))
}

/// Shards at `paths`: URLs as [`loader::ShardUrl::parse`] reads them (a name that is not
/// text is a local path).
fn shard_urls(paths: Vec<std::path::PathBuf>) -> PyResult<Vec<loader::ShardUrl>> {
    paths
        .into_iter()
        .map(|p| match p.to_str() {
            Some(text) => loader::ShardUrl::parse(text).map_err(|e| error(&e)),
            None => Ok(loader::ShardUrl::Local(p)),
        })
        .collect()
}

/// Remote shards' retries, and their timeout in seconds.
fn fetch_options(retries: u32, timeout: f64) -> PyResult<loader::FetchOptions> {
    if !(timeout.is_finite() && timeout > 0.0 && timeout <= 86_400.0) {
        return Err(OptionsError::new_err(format!(
            "timeout is seconds, above 0 and at most a day, got {timeout}"
        )));
    }
    Ok(loader::FetchOptions {
        retries,
        timeout: std::time::Duration::from_secs_f64(timeout),
    })
}

/// Sizes the decoding threads once per process: `threads`, or the process's share of the cores
/// (all of them; under torchrun, cores / LOCAL_WORLD_SIZE; RAYON_NUM_THREADS overrides).
/// Returns how many there are: what an earlier call chose, once the threads run.
#[pyfunction]
#[pyo3(signature = (threads=None))]
fn init_threads(threads: Option<usize>) -> usize {
    gpuprep::init_threads(threads)
}

/// The operations a `Transform` holds, from the crate's one table: (torchvision's class, the
/// field, the command line's flag, the Python method, the place in torchvision's usual order).
#[pyfunction]
fn operations() -> Vec<(&'static str, &'static str, &'static str, &'static str, u8)> {
    gpuprep::OPERATIONS
        .iter()
        .map(|o| (o.torchvision, o.field, o.flag, o.method, o.stage))
        .collect()
}

/// A single-operation transform as `color_operations` gives it: (torchvision's class, the Python
/// method, what it does in Pillow's terms, its argument besides `p`: None or (name, whether it
/// is an integer, lowest, highest), the bounds inclusive and infinite for none).
type ColorOperationRow = (
    &'static str,
    &'static str,
    &'static str,
    Option<(&'static str, bool, f64, f64)>,
);

/// The single-operation transforms (RandomPosterize, ...), from the crate's one table of them, in
/// its order: the package makes a Transform method of each.
#[pyfunction]
fn color_operations() -> Vec<ColorOperationRow> {
    gpuprep::COLOR_OPERATIONS
        .iter()
        .map(|o| {
            let argument = o.argument.map(|a| (a.name, a.integer, a.low, a.high));
            (o.torchvision, o.method, o.summary, argument)
        })
        .collect()
}

#[pymodule]
fn _gpuprep(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Transform>()?;
    m.add_class::<Pipeline>()?;
    m.add_class::<Loader>()?;
    m.add_class::<Epoch>()?;
    m.add_class::<dlpack::CudaBatch>()?;
    m.add_function(wrap_pyfunction!(copy_into, m)?)?;
    m.add_function(wrap_pyfunction!(init_threads, m)?)?;
    m.add_function(wrap_pyfunction!(expand_shards, m)?)?;
    m.add_function(wrap_pyfunction!(write_shard_index, m)?)?;
    m.add_function(wrap_pyfunction!(write_shards, m)?)?;
    m.add_function(wrap_pyfunction!(operations, m)?)?;
    m.add_function(wrap_pyfunction!(color_operations, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_inside, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

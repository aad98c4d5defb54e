//! A transform's JSON form, every field of it: what report.json records of how its outputs were
//! made, and what reads back as the same transform. Sizes are `{"width", "height"}`, ranges
//! `[low, high]`, probabilities and factors the values used (float32 ones exactly), an operation
//! the transform lacks `null`.

use super::wire_geometry::{center_crop, pad, random_crop, random_resized_crop, resize};
use super::wire_timm::{
    random_resize, random_shortest_size, timm_aug_mix, timm_aug_mix_json, timm_auto_augment,
    timm_auto_augment_json, timm_rand_augment, timm_rand_augment_json,
};
use super::wire_values::{
    boolean, f64_of, fill_of, filter, interpolation_of, invalid, known, member, numbers, pair_of,
    range32_of, range_of, usize_of, Parsed,
};
use super::{
    AutoAugment, AutoAugmentPolicy, ChannelOrder, ColorJitter, ColorOp, ColorOps, DType,
    ErasedValue, Filter, GaussianBlur, InvalidTransform, Layout, Normalize, OrderEntry,
    RandAugment, RandomAffine, RandomErasing, RandomPerspective, RandomRotation, Resize, StepOrder,
    Transform, TrivialAugment,
};
use serde_json::{json, Map, Value};

impl Transform {
    /// Every field, as JSON (see the module's documentation).
    pub fn to_json(&self) -> Value {
        // Named one by one, without `..`: a field added to Transform fails to compile here
        // until it is recorded.
        let Transform {
            resize,
            center_crop,
            center_crop_fill,
            pad,
            random_crop,
            filter,
            draft,
            normalize,
            layout,
            dtype,
            channel_order,
            exif_transpose,
            reciprocal_scale,
            random_resized_crop,
            random_resize,
            random_shortest_size,
            horizontal_flip,
            vertical_flip,
            color_jitter,
            grayscale,
            random_rotation,
            random_affine,
            trivial_augment,
            rand_augment,
            auto_augment,
            timm_rand_augment,
            timm_auto_augment,
            timm_aug_mix,
            random_perspective,
            color_ops,
            gaussian_blur,
            order,
            random_erasing,
            seed,
            epoch,
        } = *self;
        let size = |(width, height): (usize, usize)| json!({ "width": width, "height": height });
        let range32 = |r: Option<(f32, f32)>| r.map(|(a, b)| json!([a, b]));
        json!({
            "resize": resize.map(|r| match r {
                Resize::ShorterSide(n) => json!({ "shorter_side": n }),
                Resize::ShorterSideAtMost { size, max_size } => {
                    json!({ "shorter_side": size, "max_size": max_size })
                }
                Resize::Exact { width, height } => size((width, height)),
                Resize::KeepRatio {
                    width,
                    height,
                    longest,
                } => json!({ "keep_ratio": size((width, height)), "longest": longest }),
            }),
            "center_crop": center_crop.map(|c| {
                let mut crop = size(c);
                if let Some(fill) = center_crop_fill {
                    crop["fill"] = json!(fill);
                }
                crop
            }),
            "pad": pad.map(|p| json!({
                "padding": p.padding,
                "fill": p.fill,
                "mode": p.mode.name(),
            })),
            "random_crop": random_crop.map(|c| json!({
                "width": c.size.0,
                "height": c.size.1,
                "padding": c.padding,
                "pad_if_needed": c.pad_if_needed,
                "fill": c.fill,
                "mode": c.mode.name(),
            })),
            "filter": filter.name(),
            "draft": draft,
            "exif_transpose": exif_transpose,
            "reciprocal_scale": reciprocal_scale,
            "normalize": normalize.map(|n| json!({ "mean": n.mean, "std": n.std })),
            "layout": layout_name(layout),
            "dtype": dtype_name(dtype),
            "channels": channels_name(channel_order),
            "random_resized_crop": random_resized_crop.map(|c| json!({
                "width": c.size.0,
                "height": c.size.1,
                "scale": [c.scale.0, c.scale.1],
                "ratio": [c.ratio.0, c.ratio.1],
                "filters": c.filters.map(|f| f.map(Filter::name)),
            })),
            "horizontal_flip": horizontal_flip,
            "vertical_flip": vertical_flip,
            "color_jitter": color_jitter.map(|j| json!({
                "brightness": range32(j.brightness),
                "contrast": range32(j.contrast),
                "saturation": range32(j.saturation),
                "hue": range32(j.hue),
                "p": j.p,
            })),
            "grayscale": grayscale,
            "random_rotation": random_rotation.map(|r| json!({
                "degrees": [r.degrees.0, r.degrees.1],
                "fill": r.fill,
                "interpolation": r.interpolation.name(),
                "center": r.center.map(|(x, y)| [x, y]),
                "p": r.p,
            })),
            "random_affine": random_affine.map(|a| affine_json(&a)),
            "random_perspective": random_perspective.map(|r| json!({
                "distortion_scale": r.distortion_scale,
                "p": r.p,
                "interpolation": r.interpolation.name(),
                "fill": r.fill,
            })),
            "trivial_augment": trivial_augment.map(|t| json!({
                "bins": t.bins,
                "fill": t.fill,
                "interpolation": t.interpolation.name(),
                "v2": t.v2,
            })),
            "rand_augment": rand_augment.map(|r| json!({
                "num_ops": r.num_ops,
                "magnitude": r.magnitude,
                "bins": r.bins,
                "fill": r.fill,
                "interpolation": r.interpolation.name(),
                "v2": r.v2,
            })),
            "auto_augment": auto_augment.map(|a| json!({
                "policy": a.policy.name(),
                "fill": a.fill,
                "interpolation": a.interpolation.name(),
                "v2": a.v2,
            })),
            "timm_rand_augment": timm_rand_augment.map(|r| timm_rand_augment_json(&r)),
            "timm_auto_augment": timm_auto_augment.map(|a| timm_auto_augment_json(&a)),
            "timm_aug_mix": timm_aug_mix.map(|m| timm_aug_mix_json(&m)),
            "random_resize": random_resize.map(|r| json!({
                "min_size": r.min_size,
                "max_size": r.max_size,
            })),
            "random_shortest_size": random_shortest_size.map(|s| json!({
                "min_size": s.sizes(),
                "max_size": s.max_size,
            })),
            "color_ops": (!color_ops.is_empty()).then(|| color_ops_json(&color_ops)),
            "gaussian_blur": gaussian_blur.map(|b| json!({
                "kernel_size": [b.kernel_size.0, b.kernel_size.1],
                "sigma": [b.sigma.0, b.sigma.1],
                "p": b.p,
                "v2": b.v2,
            })),
            "order": (!order.is_empty()).then(|| order.to_json()),
            "random_erasing": random_erasing.map(|e| json!({
                "p": e.p,
                "scale": [e.scale.0, e.scale.1],
                "ratio": [e.ratio.0, e.ratio.1],
                "value": erased_value_json(e.value),
                "count": [e.count.0, e.count.1],
            })),
            "seed": seed,
            "epoch": epoch,
        })
    }

    /// The transform [`Self::to_json`] wrote: a key left out is its default, a key it does not
    /// write is refused, and the result must pass [`Self::validate`].
    pub fn from_json(json: &Value) -> Parsed<Self> {
        let object = json
            .as_object()
            .ok_or_else(|| invalid("a transform is a JSON object".into()))?;
        let mut t = Transform::default();
        for (key, value) in object {
            let value = Some(value).filter(|v| !v.is_null());
            let field = Field { key, value };
            match key.as_str() {
                "resize" => t.resize = field.object_with(resize)?,
                "center_crop" => {
                    let crop = field.object_with(center_crop)?;
                    (t.center_crop, t.center_crop_fill) =
                        (crop.map(|c| c.0), crop.and_then(|c| c.1));
                }
                "pad" => t.pad = field.object_with(pad)?,
                "random_crop" => t.random_crop = field.object_with(random_crop)?,
                "filter" => t.filter = field.required("a filter name", filter)?,
                "draft" => t.draft = field.required("true or false", boolean)?,
                "exif_transpose" => t.exif_transpose = field.required("true or false", boolean)?,
                "reciprocal_scale" => {
                    t.reciprocal_scale = field.required("true or false", boolean)?
                }
                "normalize" => t.normalize = field.object_with(normalize)?,
                "layout" => t.layout = field.required("`hwc` or `chw`", layout)?,
                "dtype" => t.dtype = field.required("`u8`, `f32` or `f16`", dtype)?,
                "channels" => t.channel_order = field.required("`rgb` or `bgr`", channels)?,
                "random_resized_crop" => {
                    t.random_resized_crop = field.object_with(random_resized_crop)?
                }
                "horizontal_flip" => t.horizontal_flip = field.optional(number)?,
                "vertical_flip" => t.vertical_flip = field.optional(number)?,
                "color_jitter" => t.color_jitter = field.object_with(color_jitter)?,
                "grayscale" => t.grayscale = field.optional(number)?,
                "random_rotation" => t.random_rotation = field.object_with(random_rotation)?,
                "random_affine" => t.random_affine = field.object_with(random_affine)?,
                "random_perspective" => {
                    t.random_perspective = field.object_with(random_perspective)?
                }
                "trivial_augment" => t.trivial_augment = field.object_with(trivial_augment)?,
                "rand_augment" => t.rand_augment = field.object_with(rand_augment)?,
                "auto_augment" => t.auto_augment = field.object_with(auto_augment)?,
                "timm_rand_augment" => {
                    t.timm_rand_augment = field.object_with(timm_rand_augment)?
                }
                "timm_auto_augment" => {
                    t.timm_auto_augment = field.object_with(timm_auto_augment)?
                }
                "timm_aug_mix" => t.timm_aug_mix = field.object_with(timm_aug_mix)?,
                "random_resize" => t.random_resize = field.object_with(random_resize)?,
                "random_shortest_size" => {
                    t.random_shortest_size = field.object_with(random_shortest_size)?
                }
                "color_ops" => t.color_ops = field.list_with(color_op)?,
                "gaussian_blur" => t.gaussian_blur = field.object_with(gaussian_blur)?,
                "random_erasing" => t.random_erasing = field.object_with(random_erasing)?,
                "order" => t.order = field.order()?,
                "seed" => t.seed = field.required("a non-negative integer", integer)?,
                "epoch" => t.epoch = field.required("a non-negative integer", integer)?,
                _ => return Err(invalid(format!("unknown transform field `{key}`"))),
            }
        }
        t.validate()?;
        Ok(t)
    }
}

/// One key of the object being read, and its value (`None` for null).
struct Field<'a> {
    key: &'a str,
    value: Option<&'a Value>,
}

impl Field<'_> {
    fn wrong(&self, what: &str) -> InvalidTransform {
        invalid(format!("transform field `{}` must be {what}", self.key))
    }

    /// A value that may not be null: `what` it must be, as read by `read`.
    fn required<T>(&self, what: &str, read: impl Fn(&Value) -> Option<T>) -> Parsed<T> {
        self.value.and_then(read).ok_or_else(|| self.wrong(what))
    }

    /// An order ([`StepOrder::from_json`]), or null for the usual order.
    fn order(&self) -> Parsed<StepOrder> {
        self.value
            .map_or(Ok(StepOrder::default()), StepOrder::from_json)
            .map_err(|e| invalid(format!("transform field `{}`: {}", self.key, e.0)))
    }

    /// A value, or null for none.
    fn optional<T>(&self, read: impl Fn(&Value) -> Option<T>) -> Parsed<Option<T>> {
        match self.value {
            None => Ok(None),
            Some(v) => read(v)
                .map(Some)
                .ok_or_else(|| self.wrong("a number or null")),
        }
    }

    /// An object read by `read`, or null for none.
    fn object_with<T>(&self, read: impl Fn(&Map<String, Value>) -> Parsed<T>) -> Parsed<Option<T>> {
        match self.value {
            None => Ok(None),
            Some(v) => {
                let object = v
                    .as_object()
                    .ok_or_else(|| self.wrong("an object or null"))?;
                read(object)
                    .map(Some)
                    .map_err(|e| invalid(format!("transform field `{}`: {}", self.key, e.0)))
            }
        }
    }
}

impl Field<'_> {
    /// A list of objects each read by `read` into a [`ColorOps`], or null for none.
    fn list_with(&self, read: impl Fn(&Map<String, Value>) -> Parsed<ColorOp>) -> Parsed<ColorOps> {
        let Some(v) = self.value else {
            return Ok(ColorOps::default());
        };
        let list = v
            .as_array()
            .ok_or_else(|| self.wrong("a list of objects or null"))?;
        let mut ops = ColorOps::default();
        for item in list {
            let object = item
                .as_object()
                .ok_or_else(|| self.wrong("a list of objects or null"))?;
            let op = read(object)
                .map_err(|e| invalid(format!("transform field `{}`: {}", self.key, e.0)))?;
            if ops
                .iter()
                .any(|o| o.operation().method == op.operation().method)
            {
                return Err(invalid(format!(
                    "transform field `{}` lists {} twice",
                    self.key,
                    op.operation().method
                )));
            }
            ops = ops.with(op);
        }
        Ok(ops)
    }
}

/// `[{"op": method, <argument>: value, "p": p}, …]` in the order they run.
fn color_ops_json(ops: &ColorOps) -> Value {
    ops.iter()
        .map(|o| {
            let mut object = json!({ "op": o.operation().method, "p": o.p() });
            if let (Some(a), Some(value)) = (o.operation().argument, o.argument()) {
                object[a.name] = if a.integer {
                    json!(value as i64)
                } else {
                    json!(value)
                };
            }
            object
        })
        .collect()
}

fn color_op(object: &Map<String, Value>) -> Parsed<ColorOp> {
    let method = member(object, "op")?
        .as_str()
        .ok_or_else(|| invalid("`op` must be a name".into()))?;
    let Some(operation) = super::ColorOperation::named(method) else {
        // `new` names the operations there are.
        return ColorOp::new(method, None, 0.0);
    };
    let argument = operation.argument.map(|a| a.name);
    known(object, &[&["op", "p"][..], argument.as_slice()].concat())?;
    let argument = argument.map(|name| f64_of(object, name)).transpose()?;
    ColorOp::new(method, argument, f64_of(object, "p")?)
}

/// Whether an operation is transforms.v2's, in `"v2"` (absent: v1's).
fn v2_of(object: &Map<String, Value>) -> Parsed<bool> {
    match object.get("v2") {
        None => Ok(false),
        Some(v) => boolean(v).ok_or_else(|| invalid("`v2` is true or false".into())),
    }
}

fn number(v: &Value) -> Option<f64> {
    v.as_f64()
}

fn integer(v: &Value) -> Option<u64> {
    v.as_u64()
}

fn layout_name(layout: Layout) -> &'static str {
    match layout {
        Layout::Hwc => "hwc",
        Layout::Chw => "chw",
    }
}

fn layout(v: &Value) -> Option<Layout> {
    [Layout::Hwc, Layout::Chw]
        .into_iter()
        .find(|&l| v.as_str() == Some(layout_name(l)))
}

fn dtype_name(dtype: DType) -> &'static str {
    match dtype {
        DType::U8 => "u8",
        DType::F32 => "f32",
        DType::F16 => "f16",
    }
}

fn dtype(v: &Value) -> Option<DType> {
    [DType::U8, DType::F32, DType::F16]
        .into_iter()
        .find(|&d| v.as_str() == Some(dtype_name(d)))
}

impl StepOrder {
    /// The JSON form: a list of step names, `{"random_order": [names]}` and
    /// `{"random_choice": [names], "p": [weights]}`.
    pub fn to_json(&self) -> Value {
        let entries = self.entries().into_iter().map(|entry| match entry {
            OrderEntry::Step(method) => json!(method),
            OrderEntry::RandomOrder(steps) => json!({ "random_order": steps }),
            OrderEntry::RandomChoice(steps) => {
                let (names, p): (Vec<&str>, Vec<f64>) = steps.into_iter().unzip();
                json!({ "random_choice": names, "p": p })
            }
        });
        Value::Array(entries.collect())
    }

    /// [`Self::to_json`]'s form read back (`p` may be null or left out for equal weights); any
    /// other form is refused, saying what the form is.
    pub fn from_json(value: &Value) -> Parsed<Self> {
        let entries: Option<Vec<OrderEntry<&str>>> = value
            .as_array()
            .and_then(|list| list.iter().map(order_entry).collect());
        Self::from_entries(&entries.ok_or_else(|| {
            invalid(
                "an order is a list of step names, {\"random_order\": [names]} and \
                 {\"random_choice\": [names], \"p\": [weights]}"
                    .into(),
            )
        })?)
    }
}

/// The names of a list, if it is one of strings.
fn names(value: &Value) -> Option<Vec<&str>> {
    value.as_array()?.iter().map(Value::as_str).collect()
}

/// One entry of an order's list ([`StepOrder::from_json`]).
fn order_entry(value: &Value) -> Option<OrderEntry<&str>> {
    if let Some(name) = value.as_str() {
        return Some(OrderEntry::Step(name));
    }
    let object = value.as_object()?;
    match (object.get("random_order"), object.get("random_choice")) {
        (Some(steps), None) if object.len() == 1 => names(steps).map(OrderEntry::RandomOrder),
        (None, Some(steps)) if object.keys().all(|k| k == "random_choice" || k == "p") => {
            let steps = names(steps)?;
            let p: Vec<f64> = match object.get("p").filter(|p| !p.is_null()) {
                None => vec![1.0; steps.len()],
                Some(p) => p
                    .as_array()?
                    .iter()
                    .map(Value::as_f64)
                    .collect::<Option<_>>()?,
            };
            (p.len() == steps.len())
                .then(|| OrderEntry::RandomChoice(steps.into_iter().zip(p).collect()))
        }
        _ => None,
    }
}

fn channels_name(order: ChannelOrder) -> &'static str {
    match order {
        ChannelOrder::Rgb => "rgb",
        ChannelOrder::Bgr => "bgr",
    }
}

fn channels(v: &Value) -> Option<ChannelOrder> {
    [ChannelOrder::Rgb, ChannelOrder::Bgr]
        .into_iter()
        .find(|&c| v.as_str() == Some(channels_name(c)))
}

fn normalize(object: &Map<String, Value>) -> Parsed<Normalize> {
    known(object, &["mean", "std"])?;
    let [mean, std] = ["mean", "std"].map(|key| numbers::<3>(member(object, key)?, key));
    Ok(Normalize {
        mean: mean?.map(|v| v as f32),
        std: std?.map(|v| v as f32),
    })
}

fn color_jitter(object: &Map<String, Value>) -> Parsed<ColorJitter> {
    known(
        object,
        &["brightness", "contrast", "saturation", "hue", "p"],
    )?;
    Ok(ColorJitter {
        brightness: range32_of(object, "brightness")?,
        contrast: range32_of(object, "contrast")?,
        saturation: range32_of(object, "saturation")?,
        hue: range32_of(object, "hue")?,
        // RandomApply's probability; a form without it (as older reports have) applies always.
        p: match object.get("p") {
            Some(_) => f64_of(object, "p")?,
            None => 1.0,
        },
    })
}

fn random_rotation(object: &Map<String, Value>) -> Parsed<RandomRotation> {
    known(object, &["degrees", "fill", "interpolation", "center", "p"])?;
    Ok(RandomRotation {
        degrees: range_of(object, "degrees")?,
        fill: fill_of(object)?,
        interpolation: interpolation_of(object)?,
        center: pair_of(object, "center")?,
        p: applied_of(object)?,
    })
}

/// `RandomApply`'s probability around an operation: its `p`, 1 where the key is absent.
fn applied_of(object: &Map<String, Value>) -> Parsed<f64> {
    match object.get("p") {
        Some(_) => f64_of(object, "p"),
        None => Ok(1.0),
    }
}

/// `RandomAffine`'s JSON form: its ranges as pairs (the shear's two as four numbers), null where
/// torchvision's argument is None.
fn affine_json(a: &RandomAffine) -> Value {
    let pair = |r: Option<(f64, f64)>| r.map(|(x, y)| [x, y]);
    json!({
        "degrees": [a.degrees.0, a.degrees.1],
        "translate": pair(a.translate),
        "scale": pair(a.scale),
        "shear": a.shear.map(|(x, y)| match y {
            Some(y) => vec![x.0, x.1, y.0, y.1],
            None => vec![x.0, x.1],
        }),
        "interpolation": a.interpolation.name(),
        "fill": a.fill,
        "center": pair(a.center),
        "v2": a.v2,
        "p": a.p,
    })
}

fn random_affine(object: &Map<String, Value>) -> Parsed<RandomAffine> {
    known(
        object,
        &[
            "degrees",
            "translate",
            "scale",
            "shear",
            "interpolation",
            "fill",
            "center",
            "v2",
            "p",
        ],
    )?;
    let shear = match object.get("shear").filter(|v| !v.is_null()) {
        None => None,
        Some(v) => match v.as_array().map(Vec::len) {
            Some(4) => numbers(v, "shear").map(|[a, b, c, d]| Some(((a, b), Some((c, d)))))?,
            _ => numbers(v, "shear").map(|[a, b]| Some(((a, b), None)))?,
        },
    };
    Ok(RandomAffine {
        degrees: range_of(object, "degrees")?,
        translate: pair_of(object, "translate")?,
        scale: pair_of(object, "scale")?,
        shear,
        interpolation: interpolation_of(object)?,
        fill: fill_of(object)?,
        center: pair_of(object, "center")?,
        v2: v2_of(object)?,
        p: applied_of(object)?,
    })
}

fn random_perspective(object: &Map<String, Value>) -> Parsed<RandomPerspective> {
    known(object, &["distortion_scale", "p", "interpolation", "fill"])?;
    Ok(RandomPerspective {
        distortion_scale: f64_of(object, "distortion_scale")?,
        p: f64_of(object, "p")?,
        interpolation: interpolation_of(object)?,
        fill: fill_of(object)?,
    })
}

fn trivial_augment(object: &Map<String, Value>) -> Parsed<TrivialAugment> {
    known(object, &["bins", "fill", "interpolation", "v2"])?;
    let bins = usize_of(object, "bins")?;
    Ok(TrivialAugment {
        bins: u32::try_from(bins).map_err(|_| invalid("`bins` is too large".into()))?,
        fill: fill_of(object)?,
        interpolation: interpolation_of(object)?,
        v2: v2_of(object)?,
    })
}

fn rand_augment(object: &Map<String, Value>) -> Parsed<RandAugment> {
    known(
        object,
        &[
            "num_ops",
            "magnitude",
            "bins",
            "fill",
            "interpolation",
            "v2",
        ],
    )?;
    let count = |key| {
        usize_of(object, key)
            .and_then(|n| u32::try_from(n).map_err(|_| invalid(format!("`{key}` is too large"))))
    };
    Ok(RandAugment {
        num_ops: count("num_ops")?,
        magnitude: count("magnitude")?,
        bins: count("bins")?,
        fill: fill_of(object)?,
        interpolation: interpolation_of(object)?,
        v2: v2_of(object)?,
    })
}

fn auto_augment(object: &Map<String, Value>) -> Parsed<AutoAugment> {
    known(object, &["policy", "fill", "interpolation", "v2"])?;
    let name = member(object, "policy")?.as_str().unwrap_or("");
    let policy = AutoAugmentPolicy::named(name).ok_or_else(|| {
        invalid(format!(
            "`policy` is one of imagenet, cifar10 and svhn, not {name:?}"
        ))
    })?;
    Ok(AutoAugment {
        policy,
        fill: fill_of(object)?,
        interpolation: interpolation_of(object)?,
        v2: v2_of(object)?,
    })
}

fn gaussian_blur(object: &Map<String, Value>) -> Parsed<GaussianBlur> {
    known(object, &["kernel_size", "sigma", "p", "v2"])?;
    let [kx, ky] = numbers::<2>(member(object, "kernel_size")?, "kernel_size")?;
    let side = |k: f64| {
        (k >= 1.0 && k.fract() == 0.0 && k <= 1024.0)
            .then_some(k as usize)
            .ok_or_else(|| invalid("`kernel_size` must be two positive integers".into()))
    };
    Ok(GaussianBlur {
        kernel_size: (side(kx)?, side(ky)?),
        sigma: range_of(object, "sigma")?,
        p: f64_of(object, "p")?,
        v2: v2_of(object)?,
    })
}

fn random_erasing(object: &Map<String, Value>) -> Parsed<RandomErasing> {
    known(object, &["p", "scale", "ratio", "value", "count"])?;
    let value = match member(object, "value")? {
        Value::String(name) if name == NORMAL_PER_CHANNEL => ErasedValue::NormalPerChannel,
        Value::String(name) if name == NORMAL_PER_ELEMENT => ErasedValue::NormalPerElement,
        value => ErasedValue::Constant(
            numbers::<3>(value, "value")
                .map_err(|_| {
                    invalid(format!(
                        "`value` must be a list of 3 numbers, \"{NORMAL_PER_CHANNEL}\" or \
                         \"{NORMAL_PER_ELEMENT}\""
                    ))
                })?
                .map(|v| v as f32),
        ),
    };
    // One box unless a count is given (the form before timm's counts).
    let count = match object.get("count") {
        None => (1, 1),
        Some(v) => {
            let [low, high] = numbers::<2>(v, "count")?;
            let whole = |n: f64| {
                (n.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&n))
                    .then_some(n as u32)
                    .ok_or_else(|| invalid("`count` must be two whole numbers".into()))
            };
            (whole(low)?, whole(high)?)
        }
    };
    Ok(RandomErasing {
        p: f64_of(object, "p")?,
        scale: range_of(object, "scale")?,
        ratio: range_of(object, "ratio")?,
        value,
        count,
    })
}

/// `RandomErasing`'s value in the JSON form: three numbers, or the name of a noise mode.
const NORMAL_PER_CHANNEL: &str = "normal_per_channel";
const NORMAL_PER_ELEMENT: &str = "normal_per_element";

fn erased_value_json(value: ErasedValue) -> Value {
    match value {
        ErasedValue::Constant(value) => json!(value),
        ErasedValue::NormalPerChannel => NORMAL_PER_CHANNEL.into(),
        ErasedValue::NormalPerElement => NORMAL_PER_ELEMENT.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transform::{
        Pad, PaddingMode, RandomCrop, RandomResize, RandomResizedCrop, RandomShortestSize,
        TimmAugMix, TimmAutoAugment, TimmRandAugment,
    };

    /// A transform with most fields away from their defaults (the others, which do not
    /// combine with these, are changed in the test's variants).
    fn everything() -> Transform {
        Transform {
            resize: None,
            center_crop: Some((224, 200)),
            center_crop_fill: Some([3, 2, 1]),
            pad: Some(Pad {
                padding: [1, 2, 3, 4],
                fill: [5, 6, 7],
                mode: PaddingMode::Symmetric,
            }),
            random_crop: None,
            filter: Filter::Bicubic,
            draft: false,
            normalize: Some(Normalize::IMAGENET),
            layout: Layout::Chw,
            dtype: DType::F16,
            channel_order: ChannelOrder::Bgr,
            exif_transpose: true,
            reciprocal_scale: true,
            random_resized_crop: Some(RandomResizedCrop {
                filters: Some([Filter::Bilinear, Filter::Bicubic]),
                ..RandomResizedCrop::new(176)
            }),
            horizontal_flip: Some(0.5),
            vertical_flip: Some(0.25),
            color_jitter: Some(ColorJitter::new(0.4, 0.3, 0.2, 0.1)),
            grayscale: Some(0.2),
            random_affine: None,
            random_rotation: Some(RandomRotation {
                degrees: (-12.5, 30.0),
                fill: [1, 2, 3],
                interpolation: Filter::Bicubic,
                center: Some((3.5, -2.0)),
                p: 0.75,
            }),
            trivial_augment: None,
            rand_augment: None,
            auto_augment: None,
            timm_rand_augment: None,
            timm_auto_augment: None,
            timm_aug_mix: None,
            random_perspective: Some(RandomPerspective {
                interpolation: Filter::Bicubic,
                fill: [9, 8, 7],
                ..RandomPerspective::new(0.375, 0.75)
            }),
            random_resize: None,
            random_shortest_size: None,
            color_ops: ColorOps::default()
                .with(ColorOp::new("random_solarize", Some(127.5), 0.25).unwrap())
                .with(ColorOp::new("random_equalize", None, 1.0).unwrap())
                .with(ColorOp::new("random_adjust_sharpness", Some(0.1), 0.5).unwrap()),
            gaussian_blur: Some(GaussianBlur {
                kernel_size: (23, 5),
                sigma: (0.25, 3.5),
                p: 0.5,
                v2: true,
            }),
            random_erasing: Some(RandomErasing {
                value: ErasedValue::Constant([0.1, -0.2, 0.3]),
                count: (2, 5),
                ..RandomErasing::new(0.25)
            }),
            order: StepOrder::default(),
            seed: u64::MAX,
            epoch: 7,
        }
    }

    /// Every field is written and reads back as it was (float32 values exactly), through the
    /// text report.json holds; presets too.
    #[test]
    fn every_field_reads_back_from_its_json() {
        let with_trivial = Transform {
            random_rotation: None,
            trivial_augment: Some(TrivialAugment {
                bins: 15,
                fill: [255, 0, 9],
                interpolation: Filter::Bilinear,
                v2: false,
            }),
            exif_transpose: false,
            draft: true,
            resize: Some(Resize::Exact {
                width: 300,
                height: 200,
            }),
            random_resized_crop: None,
            ..everything()
        };
        let shorter_side = Transform {
            resize: Some(Resize::ShorterSide(256)),
            random_resized_crop: None,
            ..everything()
        };
        let capped = Transform {
            resize: Some(Resize::ShorterSideAtMost {
                size: 256,
                max_size: 300,
            }),
            ..shorter_side
        };
        let kept_ratio = Transform {
            resize: Some(Resize::KeepRatio {
                width: 365,
                height: 292,
                longest: true,
            }),
            center_crop: Some((320, 256)),
            center_crop_fill: Some([124, 116, 104]),
            ..shorter_side
        };
        let with_rand = Transform {
            random_rotation: None,
            rand_augment: Some(RandAugment {
                num_ops: 3,
                magnitude: 14,
                bins: 17,
                fill: [4, 5, 6],
                interpolation: Filter::Nearest,
                v2: true,
            }),
            ..everything()
        };
        let with_random_crop = Transform {
            center_crop: None,
            center_crop_fill: None,
            random_resized_crop: None,
            random_crop: Some(RandomCrop {
                padding: [4, 3, 2, 1],
                pad_if_needed: true,
                fill: [9, 8, 7],
                mode: PaddingMode::Reflect,
                ..RandomCrop::new((32, 24))
            }),
            ..everything()
        };
        let with_auto = Transform {
            random_rotation: None,
            auto_augment: Some(AutoAugment {
                policy: AutoAugmentPolicy::Svhn,
                fill: [7, 8, 9],
                interpolation: Filter::Bicubic,
                v2: false,
            }),
            ..everything()
        };
        let with_affine = Transform {
            random_rotation: None,
            random_affine: Some(RandomAffine {
                translate: Some((0.1, 0.25)),
                scale: Some((0.75, 1.5)),
                shear: Some(((-5.0, 10.0), Some((0.0, 2.5)))),
                interpolation: Filter::Bilinear,
                fill: [1, 2, 3],
                center: Some((3.5, 7.0)),
                v2: true,
                ..RandomAffine::new(15.0)
            }),
            ..everything()
        };
        let with_x_shear = Transform {
            random_affine: Some(RandomAffine {
                shear: Some(((-5.0, 10.0), None)),
                ..RandomAffine::new(0.0)
            }),
            ..with_affine
        };
        let with_timm = Transform {
            random_rotation: None,
            timm_rand_augment: Some(TimmRandAugment {
                magnitude_std: 0.5,
                magnitude_max: Some(12.0),
                increasing: true,
                fill: [124, 116, 104],
                interpolation: Some(Filter::Bilinear),
                ..TimmRandAugment::default()
            }),
            ..everything()
        };
        let with_uniform_timm = Transform {
            random_rotation: None,
            timm_rand_augment: TimmRandAugment::parse("rand-m7-n3-mstd101-p0.7").ok(),
            ..everything()
        };
        let with_timm_auto = Transform {
            random_rotation: None,
            timm_auto_augment: Some(TimmAutoAugment {
                magnitude_std: f64::INFINITY,
                fill: [124, 116, 104],
                interpolation: Some(Filter::Bicubic),
                ..TimmAutoAugment::parse("originalr").unwrap()
            }),
            ..everything()
        };
        let with_noisy_timm_auto = Transform {
            random_rotation: None,
            timm_auto_augment: TimmAutoAugment::parse("v0-mstd0.5").ok(),
            ..everything()
        };
        let with_aug_mix = Transform {
            random_rotation: None,
            timm_aug_mix: Some(TimmAugMix {
                fill: [124, 116, 104],
                translate_pct: 0.3,
                ..TimmAugMix::parse("augmix-m5-w2-d3-a0.5-mstd0.5").unwrap()
            }),
            ..everything()
        };
        let with_default_aug_mix = Transform {
            random_rotation: None,
            timm_aug_mix: TimmAugMix::parse("augmix").ok(),
            ..everything()
        };
        let with_blended_aug_mix = Transform {
            random_rotation: None,
            timm_aug_mix: TimmAugMix::parse("augmix-m3-w3-b1").ok(),
            ..everything()
        };
        let with_random_resize = Transform {
            random_resize: Some(RandomResize {
                min_size: 200,
                max_size: 321,
            }),
            random_resized_crop: None,
            ..everything()
        };
        let with_shortest_size = Transform {
            random_shortest_size: RandomShortestSize::new(&[480, 512, 800], Some(1333)).ok(),
            random_resized_crop: None,
            ..everything()
        };
        let mut reversed = everything().ordered_steps();
        reversed.reverse();
        let reordered = Transform {
            order: StepOrder::new(&reversed).unwrap(),
            ..everything()
        };
        let grouped = Transform {
            order: StepOrder::from_entries(&[
                OrderEntry::RandomChoice(vec![(reversed[0], 2.0), (reversed[1], 0.5)]),
                OrderEntry::Step(reversed[2]),
                OrderEntry::RandomOrder(reversed[3..].to_vec()),
            ])
            .unwrap(),
            ..everything()
        };
        let presets = [
            Transform::default(),
            Transform::imagenet_eval(),
            Transform::timm_train(),
        ];
        for t in [
            everything(),
            reordered,
            grouped,
            with_trivial,
            shorter_side,
            capped,
            kept_ratio,
            with_random_crop,
            with_rand,
            with_auto,
            with_affine,
            with_x_shear,
            with_timm,
            with_uniform_timm,
            with_timm_auto,
            with_noisy_timm_auto,
            with_aug_mix,
            with_default_aug_mix,
            with_blended_aug_mix,
            with_random_resize,
            with_shortest_size,
        ]
        .into_iter()
        .chain(presets)
        {
            assert_eq!(t.validate(), Ok(()), "{t:?}");
            let text = t.to_json().to_string();
            let parsed: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(Transform::from_json(&parsed), Ok(t), "{text}");
        }
        let written = everything().to_json();
        let keys = written.as_object().unwrap().len();
        assert_eq!(keys, 34, "one key per field of Transform: {written}");
    }

    #[test]
    fn a_field_it_does_not_write_or_a_wrong_value_is_refused() {
        let refused = |json: Value| Transform::from_json(&json).unwrap_err().to_string();
        assert_eq!(
            refused(json!({ "rotate": 3 })),
            "unknown transform field `rotate`"
        );
        assert_eq!(
            refused(json!({ "random_rotation": { "degrees": [0, 1], "fill": [0, 0, 256] } })),
            "transform field `random_rotation`: `fill` must be three integers 0..=255"
        );
        assert_eq!(
            refused(json!({ "dtype": "u8", "normalize": { "mean": [0, 0, 0], "std": [1, 1, 1] } })),
            "normalisation needs a float dtype (f32 or f16)"
        );
        assert_eq!(
            refused(json!({ "color_ops": [{ "op": "random_posterize", "bits": 9, "p": 0.5 }] })),
            "transform field `color_ops`: random_posterize's bits must be an integer from 0 to 8, \
             got 9"
        );
        assert_eq!(
            refused(json!({ "color_ops": [{ "op": "random_invert", "p": 0.5, "bits": 1 }] })),
            "transform field `color_ops`: unknown key `bits`"
        );
        assert_eq!(
            refused(json!({ "color_ops": [{ "op": "random_invert", "p": 0.5 },
                                          { "op": "random_invert", "p": 0.2 }] })),
            "transform field `color_ops` lists random_invert twice"
        );
        assert_eq!(
            refused(json!({ "layout": "nchw" })),
            "transform field `layout` must be `hwc` or `chw`"
        );
        let grey = |order: Value| json!({ "grayscale": 0.2, "color_jitter": { "brightness": [0.6, 1.4] }, "order": order });
        let malformed = "an order is a list of step names, {\"random_order\": [names]} and \
                         {\"random_choice\": [names], \"p\": [weights]}";
        for order in [
            json!("grayscale"),
            json!([{ "random_order": ["grayscale"], "p": [1] }, "color_jitter"]),
            json!([{ "random_choice": ["grayscale", "color_jitter"], "p": [1] }]),
            json!([{ "random_choice": "grayscale" }, "color_jitter"]),
            json!([{ "shuffle": ["grayscale", "color_jitter"] }]),
        ] {
            assert_eq!(
                refused(grey(order.clone())),
                format!("transform field `order`: {malformed}"),
                "{order}"
            );
        }
        assert_eq!(
            refused(grey(
                json!([{ "random_choice": [] }, "grayscale", "color_jitter"])
            )),
            "transform field `order`: order: a RandomOrder or RandomChoice of no steps"
        );
        let parsed = Transform::from_json(&grey(json!([
            { "random_choice": ["grayscale", "color_jitter"], "p": null }
        ])))
        .unwrap();
        assert_eq!(
            parsed.order.to_json(),
            json!([{ "random_choice": ["grayscale", "color_jitter"], "p": [1.0, 1.0] }])
        );
    }
}

//! The parameter record's JSON form: each image's random parameters as report.json and the
//! Python bindings write them, and as a caller gives them back to be replayed.

use super::{Adjustment, CropBox};
use crate::error::{Error, Result};
use std::collections::BTreeMap;

/// One image's random parameters as report.json writes them, to be replayed through Pillow and
/// torchvision: `{"resize": size (RandomResize's or RandomShortestSize's draw), "crop": {"top",
/// "left", "height", "width"}, "interpolation": filter,
/// "random_crop": {"top", "left", "height", "width"} (of the padded image), "flip":
/// bool, "vflip": bool, "rotation": degrees, "affine": {"angle": degrees, "translate": [x, y],
/// "scale": s, "shear": [x, y]}, "augment": [{"op": name, "magnitude": m}, …], "aug_mix":
/// {"weights": [w, …], "blend": m, "chains": [[{"op": name, "magnitude": m}, …], …]}, "color":
/// {"order": [names], "brightness": factor, …}, "grayscale": bool, "color_ops": {method: bool, …},
/// "perspective": [8 coefficients] or null, "blur": {"kernel_x": [weights], "kernel_y":
/// [weights]} or null, "erase": [box, …], "steps": [method, …]}` (each
/// erased box with `"noise"`, its key or its values, where the transform writes normal values), the
/// angle and the factors as the float32 values used (`augment`: the augmentation policy's
/// operations in the order they run, each in torchvision's name with the signed magnitude
/// `_apply_op` is given; `steps`: the steps that keep the size in the order they ran, where a
/// `RandomOrder` or `RandomChoice` drew them), a key only for an operation the transform has
/// and the sample ran.
pub fn params_json(params: &super::Params) -> serde_json::Value {
    let box_json = |b: super::CropBox| serde_json::json!({"top": b.top, "left": b.left, "height": b.height, "width": b.width});
    let mut json = serde_json::json!({});
    if let Some(size) = params.resize {
        json["resize"] = size.into();
    }
    if let Some(b) = params.crop {
        json["crop"] = box_json(b);
    }
    if let Some(filter) = params.interpolation {
        json["interpolation"] = filter.name().into();
    }
    if let Some(b) = params.random_crop {
        json["random_crop"] = box_json(b);
    }
    if let Some(flip) = params.horizontal_flip {
        json["flip"] = flip.into();
    }
    if let Some(flip) = params.vertical_flip {
        json["vflip"] = flip.into();
    }
    if let Some(angle) = params.rotation {
        json["rotation"] = angle.into();
    }
    if let Some(a) = params.affine {
        json["affine"] = serde_json::json!({
            "angle": a.angle,
            "translate": [a.translate.0, a.translate.1],
            "scale": a.scale,
            "shear": [a.shear.0, a.shear.1],
        });
    }
    if let Some(augment) = &params.augment {
        json["augment"] = augments_json(augment);
    }
    if let Some(mix) = &params.aug_mix {
        let chains: Vec<_> = mix.chains.iter().map(|c| augments_json(c)).collect();
        json["aug_mix"] = serde_json::json!({
            "weights": mix.weights.iter().map(|&w| f64::from(w)).collect::<Vec<_>>(),
            "blend": f64::from(mix.blend),
            "chains": chains,
        });
    }
    if let Some(adjustments) = &params.color {
        let order: Vec<&str> = adjustments.iter().map(|a| a.name()).collect();
        let mut color = serde_json::json!({ "order": order });
        for a in adjustments {
            color[a.name()] = f64::from(a.factor()).into();
        }
        json["color"] = color;
    }
    if let Some(grey) = params.grayscale {
        json["grayscale"] = grey.into();
    }
    if let Some(applied) = &params.color_ops {
        json["color_ops"] = serde_json::json!(applied);
    }
    if let Some(perspective) = params.perspective {
        json["perspective"] = serde_json::json!(perspective);
    }
    if let Some(blur) = params.blur {
        json["blur"] = blur.map_or(serde_json::Value::Null, |b| {
            let (kx, ky) = b.kernel_size;
            serde_json::json!({"kernel_x": &b.kernel_x[..kx], "kernel_y": &b.kernel_y[..ky]})
        });
    }
    if let Some(boxes) = &params.erase {
        let boxes: Vec<_> = boxes
            .iter()
            .map(|e| {
                let mut json = box_json(e.region);
                match &e.noise {
                    Some(super::Noise::Drawn(key)) => json["noise"] = (*key).into(),
                    Some(super::Noise::Given(values)) => json["noise"] = values.clone().into(),
                    None => {}
                }
                json
            })
            .collect();
        json["erase"] = boxes.into();
    }
    if let Some(steps) = &params.steps {
        json["steps"] = steps.clone().into();
    }
    json
}

/// [`params_json`]'s form read back: the parameters to give a transform (`Sample::Given`), for
/// instance drawn by torchvision's own `get_params` and written in this form. A form that is not
/// this one is `Error::Options`, saying what is wrong with it.
pub fn params_from_json(json: &serde_json::Value) -> Result<super::Params> {
    let object = json
        .as_object()
        .ok_or_else(|| Error::Options("the parameters must be a JSON object".into()))?;
    let int = |v: &serde_json::Value, key: &str| {
        v.get(key)
            .and_then(serde_json::Value::as_u64)
            .map(|n| n as usize)
            .ok_or_else(|| Error::Options(format!("`{key}` must be a non-negative integer")))
    };
    let get_box = |v: &serde_json::Value| -> Result<CropBox> {
        only(v, &["top", "left", "height", "width"], "a box")?;
        Ok(CropBox {
            top: int(v, "top")?,
            left: int(v, "left")?,
            height: int(v, "height")?,
            width: int(v, "width")?,
        })
    };
    let flag = |key: &str| -> Result<Option<bool>> {
        object
            .get(key)
            .map(|v| {
                v.as_bool()
                    .ok_or_else(|| Error::Options(format!("`{key}` must be true or false")))
            })
            .transpose()
    };
    for key in object.keys() {
        let known = [
            "resize",
            "crop",
            "interpolation",
            "random_crop",
            "flip",
            "vflip",
            "rotation",
            "affine",
            "augment",
            "aug_mix",
            "color",
            "grayscale",
            "color_ops",
            "perspective",
            "blur",
            "erase",
            "steps",
        ];
        if !known.contains(&key.as_str()) {
            return Err(Error::Options(format!("unknown parameter `{key}`")));
        }
    }
    let interpolation = object
        .get("interpolation")
        .map(|v| {
            let name = v.as_str().unwrap_or("");
            crate::Filter::from_name(name)
                .ok_or_else(|| Error::Options(format!("unknown interpolation {name:?}")))
        })
        .transpose()?;
    let color = match object.get("color") {
        None => None,
        Some(c) => {
            let order = c
                .get("order")
                .and_then(serde_json::Value::as_array)
                .ok_or_else(|| Error::Options("`color` needs an `order` list".into()))?;
            let named: Vec<&str> = order.iter().filter_map(serde_json::Value::as_str).collect();
            only(c, &[&["order"], named.as_slice()].concat(), "`color`")?;
            let mut adjustments = Vec::new();
            for name in order {
                let name = name.as_str().unwrap_or("");
                let factor = c
                    .get(name)
                    .and_then(serde_json::Value::as_f64)
                    .ok_or_else(|| {
                        Error::Options(format!("`color` lacks the factor of {name:?}"))
                    })? as f32;
                adjustments.push(match name {
                    "brightness" => Adjustment::Brightness(factor),
                    "contrast" => Adjustment::Contrast(factor),
                    "saturation" => Adjustment::Saturation(factor),
                    "hue" => Adjustment::Hue(factor),
                    other => {
                        return Err(Error::Options(format!(
                            "unknown colour adjustment {other:?}"
                        )))
                    }
                });
            }
            Some(adjustments)
        }
    };
    let resize = match object.get("resize") {
        None => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| {
                    Error::Options("`resize` must be a whole number of pixels".into())
                })?,
        ),
    };
    Ok(super::Params {
        resize,
        crop: object.get("crop").map(get_box).transpose()?,
        interpolation,
        random_crop: object.get("random_crop").map(get_box).transpose()?,
        horizontal_flip: flag("flip")?,
        vertical_flip: flag("vflip")?,
        rotation: object
            .get("rotation")
            .map(|v| {
                v.as_f64()
                    .ok_or_else(|| Error::Options("`rotation` must be a number of degrees".into()))
            })
            .transpose()?,
        affine: object.get("affine").map(affine_from_json).transpose()?,
        augment: object.get("augment").map(augments_from_json).transpose()?,
        aug_mix: object.get("aug_mix").map(aug_mix_from_json).transpose()?,
        color,
        grayscale: flag("grayscale")?,
        color_ops: object
            .get("color_ops")
            .map(color_ops_from_json)
            .transpose()?,
        perspective: object
            .get("perspective")
            .map(perspective_from_json)
            .transpose()?,
        blur: object.get("blur").map(blur_from_json).transpose()?,
        erase: object.get("erase").map(erasures_from_json).transpose()?,
        steps: object.get("steps").map(steps_from_json).transpose()?,
    })
}

/// The steps a sample ran, by method: each a step an order places, once.
fn steps_from_json(value: &serde_json::Value) -> Result<Vec<&'static str>> {
    let names: Option<Vec<&str>> = value
        .as_array()
        .and_then(|list| list.iter().map(serde_json::Value::as_str).collect());
    let names = names.ok_or_else(|| {
        Error::Options("`steps` must be a list of the methods of the steps run".into())
    })?;
    let order =
        crate::StepOrder::new(&names).map_err(|e| Error::Options(format!("`steps`: {e}")))?;
    Ok(order.iter().collect())
}

/// Eight finite coefficients, or null where `RandomPerspective` did not apply.
fn perspective_from_json(value: &serde_json::Value) -> Result<Option<[f64; 8]>> {
    if value.is_null() {
        return Ok(None);
    }
    let wrong = || {
        Error::Options(
            "`perspective` must be the eight coefficients Image.transform takes, or null".into(),
        )
    };
    let list = value
        .as_array()
        .filter(|l| l.len() == 8)
        .ok_or_else(wrong)?;
    let mut coefficients = [0.0; 8];
    for (slot, v) in coefficients.iter_mut().zip(list) {
        *slot = v.as_f64().filter(|v| v.is_finite()).ok_or_else(wrong)?;
    }
    Ok(Some(coefficients))
}

/// `[box, …]`, each box with `"noise"` (a key, or its values) where the transform writes
/// normal values; also one box as an object, or null for none.
fn erasures_from_json(value: &serde_json::Value) -> Result<Vec<super::Erasure>> {
    let boxes = match value {
        serde_json::Value::Null => return Ok(Vec::new()),
        serde_json::Value::Array(boxes) => boxes.iter().collect(),
        one => vec![one],
    };
    boxes.into_iter().map(erasure_from_json).collect()
}

/// The numbers of `value`, a number or nested lists of them (a (3, h, w) array as a list), in
/// order; `None` if something else is there.
fn flattened(value: &serde_json::Value, into: &mut Vec<f32>) -> Option<()> {
    match value {
        serde_json::Value::Array(items) => items.iter().try_for_each(|v| flattened(v, into)),
        number => {
            into.push(number.as_f64()? as f32);
            Some(())
        }
    }
}

/// One erased box: `{"top", "left", "height", "width"}` and, optionally, `"noise"`: its key,
/// or its values in C×H×W order (nested lists of them too).
fn erasure_from_json(value: &serde_json::Value) -> Result<super::Erasure> {
    let wrong = || {
        Error::Options(
            "an erased box must be {\"top\", \"left\", \"height\", \"width\"} with \
             non-negative integers, and optionally \"noise\": a key (an integer below 2^64) or \
             its values (a list of numbers, or nested lists of them)"
                .into(),
        )
    };
    let object = value.as_object().ok_or_else(wrong)?;
    let known = ["top", "left", "height", "width", "noise"];
    if let Some(key) = object.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(Error::Options(format!(
            "unknown key `{key}` in an erased box"
        )));
    }
    let int = |key: &str| {
        object
            .get(key)
            .and_then(serde_json::Value::as_u64)
            .map(|n| n as usize)
            .ok_or_else(wrong)
    };
    let noise = match object.get("noise") {
        None => None,
        Some(list @ serde_json::Value::Array(_)) => {
            let mut values = Vec::new();
            flattened(list, &mut values).ok_or_else(wrong)?;
            Some(super::Noise::Given(values))
        }
        Some(key) => Some(super::Noise::Drawn(key.as_u64().ok_or_else(wrong)?)),
    };
    Ok(super::Erasure {
        region: CropBox {
            top: int("top")?,
            left: int("left")?,
            height: int("height")?,
            width: int("width")?,
        },
        noise,
    })
}

/// `{"kernel_x": [weights], "kernel_y": [weights]}` (odd lengths up to 31), or null: a blur that
/// did not apply.
fn blur_from_json(value: &serde_json::Value) -> Result<Option<super::Blur>> {
    if value.is_null() {
        return Ok(None);
    }
    only(value, &["kernel_x", "kernel_y"], "`blur`")?;
    let weights = |key: &str| -> Option<Vec<f32>> {
        let list = value.get(key)?.as_array()?;
        list.iter().map(|w| w.as_f64().map(|w| w as f32)).collect()
    };
    weights("kernel_x")
        .zip(weights("kernel_y"))
        .and_then(|(x, y)| super::Blur::given(&x, &y))
        .map(Some)
        .ok_or_else(|| {
            Error::Options(format!(
                "`blur` must be {{\"kernel_x\": [weights], \"kernel_y\": [weights]}}, odd \
                 numbers of weights up to {}",
                crate::transform::MAX_KERNEL
            ))
        })
}

/// Refuses a key of the object `v` (`what`) that is not one of `keys`: a parameter given under a
/// misspelt name would otherwise be dropped in silence.
fn only(v: &serde_json::Value, keys: &[&str], what: &str) -> Result<()> {
    let unknown = v
        .as_object()
        .and_then(|o| o.keys().find(|k| !keys.contains(&k.as_str())));
    match unknown {
        Some(key) => Err(Error::Options(format!("unknown key `{key}` in {what}"))),
        None => Ok(()),
    }
}

/// `{method: bool, …}`: whether each single-operation transform applies.
fn color_ops_from_json(v: &serde_json::Value) -> Result<BTreeMap<&'static str, bool>> {
    let wrong = || Error::Options("`color_ops` maps operations to true or false".into());
    let object = v.as_object().ok_or_else(wrong)?;
    let mut applied = BTreeMap::new();
    for (method, value) in object {
        let operation = crate::transform::ColorOperation::named(method).ok_or_else(|| {
            Error::Options(format!(
                "unknown single-operation transform `{method}` in `color_ops`"
            ))
        })?;
        applied.insert(operation.method, value.as_bool().ok_or_else(wrong)?);
    }
    Ok(applied)
}

/// An augmentation policy's operations as `[{"op": name, "magnitude": m}, …]` (timm's geometric
/// ones with their own `"interpolation"`).
fn augments_json(augment: &[super::Augment]) -> serde_json::Value {
    let ops: Vec<_> = augment
        .iter()
        .map(|a| {
            let mut op = serde_json::json!({ "op": a.op.name(), "magnitude": a.magnitude });
            if let Some(filter) = a.filter {
                op["interpolation"] = filter.name().into();
            }
            op
        })
        .collect();
    ops.into()
}

/// `{"weights": [w, …], "blend": m, "chains": [[op, …], …]}`: timm's `AugMix` draws, the
/// weights and the factor as float32 values, each chain as `augment` lists its operations.
fn aug_mix_from_json(v: &serde_json::Value) -> Result<super::AugMix> {
    only(v, &["weights", "blend", "chains"], "`aug_mix`")?;
    let wrong = || {
        Error::Options(
            "`aug_mix` needs `weights` (a list of numbers), `blend` (a number) and `chains` (a \
             list of operation lists)"
                .into(),
        )
    };
    let weights = v
        .get("weights")
        .and_then(serde_json::Value::as_array)
        .ok_or_else(wrong)?
        .iter()
        .map(|w| w.as_f64().map(|w| w as f32).ok_or_else(wrong))
        .collect::<Result<Vec<f32>>>()?;
    let blend = v
        .get("blend")
        .and_then(serde_json::Value::as_f64)
        .ok_or_else(wrong)? as f32;
    let chains = v
        .get("chains")
        .and_then(serde_json::Value::as_array)
        .ok_or_else(wrong)?
        .iter()
        .map(|c| match c.as_array() {
            Some(ops) => ops.iter().map(augment_from_json).collect(),
            None => Err(wrong()),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(super::AugMix {
        weights,
        blend,
        chains,
    })
}

/// `[{"op": name, "magnitude": m}, …]`: an augmentation policy's operations (one such object
/// alone: `TrivialAugmentWide`'s one).
fn augments_from_json(v: &serde_json::Value) -> Result<Vec<super::Augment>> {
    match v.as_array() {
        Some(ops) => ops.iter().map(augment_from_json).collect(),
        None => augment_from_json(v).map(|a| vec![a]),
    }
}

/// `{"op": name, "magnitude": m}`: one operation of an augmentation policy (timm's geometric
/// ones with their own `"interpolation"`).
fn augment_from_json(v: &serde_json::Value) -> Result<super::Augment> {
    only(v, &["op", "magnitude", "interpolation"], "`augment`")?;
    let name = v
        .get("op")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("");
    let op = super::AugmentOp::from_name(name)
        .ok_or_else(|| Error::Options(format!("unknown augmentation operation {name:?}")))?;
    let magnitude = v
        .get("magnitude")
        .and_then(serde_json::Value::as_f64)
        .ok_or_else(|| Error::Options("`augment` needs a numeric `magnitude`".into()))?;
    let filter = match v.get("interpolation") {
        None => None,
        Some(name) => Some(
            name.as_str()
                .and_then(crate::transform::Filter::from_name)
                .filter(|f| f.maps())
                .ok_or_else(|| {
                    Error::Options(
                        "an operation's `interpolation` is nearest, bilinear or bicubic".into(),
                    )
                })?,
        ),
    };
    Ok(super::Augment {
        filter,
        ..super::Augment::new(op, magnitude)
    })
}

/// `{"angle": degrees, "translate": [x, y], "scale": s, "shear": [x, y]}`.
fn affine_from_json(value: &serde_json::Value) -> Result<super::AffineParams> {
    let wrong = || {
        Error::Options(
            "`affine` must be {\"angle\": degrees, \"translate\": [x, y] (whole pixels), \
             \"scale\": s, \"shear\": [x, y]}"
                .into(),
        )
    };
    let number = |key: &str| value.get(key).and_then(serde_json::Value::as_f64);
    let pair = |key: &str| {
        let list = value.get(key)?.as_array().filter(|l| l.len() == 2)?;
        Some((list[0].clone(), list[1].clone()))
    };
    let (tx, ty) = pair("translate").ok_or_else(wrong)?;
    let (sx, sy) = pair("shear").ok_or_else(wrong)?;
    let known = ["angle", "translate", "scale", "shear"];
    if value
        .as_object()
        .is_none_or(|o| o.keys().any(|k| !known.contains(&k.as_str())))
    {
        return Err(wrong());
    }
    Ok(super::AffineParams {
        angle: number("angle").ok_or_else(wrong)?,
        translate: (
            tx.as_i64().ok_or_else(wrong)?,
            ty.as_i64().ok_or_else(wrong)?,
        ),
        scale: number("scale").ok_or_else(wrong)?,
        shear: (
            sx.as_f64().ok_or_else(wrong)?,
            sy.as_f64().ok_or_else(wrong)?,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::random::SampleKey;
    use crate::Transform;

    /// What report.json writes reads back as the same parameters, for every operation.
    #[test]
    fn parameters_read_back_from_their_json() {
        let transform = Transform {
            color_jitter: Some(crate::ColorJitter::new(0.4, 0.4, 0.4, 0.1)),
            vertical_flip: Some(0.5),
            grayscale: Some(0.5),
            random_erasing: Some(crate::RandomErasing::new(1.0)),
            gaussian_blur: Some(crate::GaussianBlur {
                p: 0.5,
                ..crate::GaussianBlur::new(7)
            }),
            color_ops: crate::ColorOps::default()
                .with(crate::ColorOp::new("random_posterize", Some(3.0), 0.5).unwrap())
                .with(crate::ColorOp::new("random_invert", None, 0.5).unwrap()),
            ..Transform::timm_train()
        };
        for index in 0..20 {
            let key = SampleKey {
                seed: 1,
                epoch: 2,
                index,
            };
            let params = crate::Params::draw(&transform, key, (640, 480));
            let json = params_json(&params);
            let text = json.to_string();
            let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(params_from_json(&parsed).unwrap(), params, "{text}");
        }
        let refused = |json: serde_json::Value| match params_from_json(&json) {
            Err(Error::Options(why)) => why,
            other => panic!("not refused as options: {other:?}"),
        };
        assert_eq!(
            refused(serde_json::json!({"color_ops": {"random_blur": true}})),
            "unknown single-operation transform `random_blur` in `color_ops`"
        );
        assert_eq!(
            refused(serde_json::json!({"rotate": 3})),
            "unknown parameter `rotate`"
        );
        assert!(
            refused(serde_json::json!({"blur": {"kernel_x": [1.0, 0.0], "kernel_y": [1.0]}}))
                .starts_with("`blur` must be")
        );
        // A misspelt key inside an operation's object is refused, not dropped.
        assert_eq!(
            refused(
                serde_json::json!({"color": {"order": ["brightness"], "brightness": 1.2, "brigtness": 0.8}})
            ),
            "unknown key `brigtness` in `color`"
        );
        assert_eq!(
            refused(serde_json::json!({"color": {"order": [], "contrast": 1.2}})),
            "unknown key `contrast` in `color`"
        );
        assert_eq!(
            refused(
                serde_json::json!({"crop": {"top": 0, "left": 0, "height": 4, "width": 4, "x": 1}})
            ),
            "unknown key `x` in a box"
        );
        assert_eq!(
            refused(
                serde_json::json!({"augment": {"op": "Identity", "magnitude": 0.0, "sign": 1}})
            ),
            "unknown key `sign` in `augment`"
        );
    }
}

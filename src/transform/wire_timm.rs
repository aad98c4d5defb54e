//! The JSON form of timm's augmentation policies (`RandAugment`, `AutoAugment`, `AugMix`) and of
//! v2's random resizes: their settings as [`super::Transform::to_json`] writes them, read back.

use super::wire_values::{
    f64_of, fill_of, interpolation_of, invalid, known, member, usize_of, Parsed,
};
use super::{
    Filter, RandomResize, RandomShortestSize, TimmAugMix, TimmAutoAugment, TimmAutoAugmentPolicy,
    TimmRandAugment,
};
use serde_json::{json, Map, Value};

/// timm's `RandAugment`'s JSON form: its settings, an infinite `magnitude_std` as "inf" and a
/// drawn interpolation as "random".
pub(super) fn timm_rand_augment_json(r: &TimmRandAugment) -> Value {
    json!({
        "num_ops": r.num_ops,
        "magnitude": r.magnitude,
        "magnitude_std": if r.magnitude_std.is_infinite() { json!("inf") } else { json!(r.magnitude_std) },
        "magnitude_max": r.magnitude_max,
        "prob": r.prob,
        "increasing": r.increasing,
        "translate_pct": r.translate_pct,
        "fill": r.fill,
        "interpolation": r.interpolation.map_or("random", Filter::name),
    })
}

pub(super) fn timm_rand_augment(object: &Map<String, Value>) -> Parsed<TimmRandAugment> {
    known(
        object,
        &[
            "num_ops",
            "magnitude",
            "magnitude_std",
            "magnitude_max",
            "prob",
            "increasing",
            "translate_pct",
            "fill",
            "interpolation",
        ],
    )?;
    let defaults = TimmRandAugment::default();
    let or_default = |key, default: f64| match object.get(key) {
        None => Ok(default),
        Some(_) => f64_of(object, key),
    };
    let num_ops = match object.get("num_ops") {
        None => defaults.num_ops,
        Some(_) => u32::try_from(usize_of(object, "num_ops")?)
            .map_err(|_| invalid("`num_ops` is too large".into()))?,
    };
    let magnitude_std = match object.get("magnitude_std") {
        Some(Value::String(s)) if s == "inf" => f64::INFINITY,
        _ => or_default("magnitude_std", defaults.magnitude_std)?,
    };
    let magnitude_max = match object.get("magnitude_max") {
        None | Some(Value::Null) => None,
        Some(_) => Some(f64_of(object, "magnitude_max")?),
    };
    let increasing = match object.get("increasing") {
        None => false,
        Some(v) => v
            .as_bool()
            .ok_or_else(|| invalid("`increasing` is true or false".into()))?,
    };
    let interpolation = match object.get("interpolation") {
        None => None,
        Some(Value::String(s)) if s == "random" => None,
        Some(_) => Some(interpolation_of(object)?),
    };
    Ok(TimmRandAugment {
        num_ops,
        magnitude: or_default("magnitude", defaults.magnitude)?,
        magnitude_std,
        magnitude_max,
        prob: or_default("prob", defaults.prob)?,
        increasing,
        translate_pct: or_default("translate_pct", defaults.translate_pct)?,
        fill: match object.get("fill") {
            None => defaults.fill,
            Some(_) => fill_of(object)?,
        },
        interpolation,
    })
}

/// timm's `AutoAugment`'s JSON form: its policy's name and settings, an infinite
/// `magnitude_std` as "inf" and a drawn interpolation as "random".
pub(super) fn timm_auto_augment_json(a: &TimmAutoAugment) -> Value {
    json!({
        "policy": a.policy.name(),
        "magnitude_std": if a.magnitude_std.is_infinite() { json!("inf") } else { json!(a.magnitude_std) },
        "translate_pct": a.translate_pct,
        "fill": a.fill,
        "interpolation": a.interpolation.map_or("random", Filter::name),
    })
}

pub(super) fn timm_auto_augment(object: &Map<String, Value>) -> Parsed<TimmAutoAugment> {
    known(
        object,
        &[
            "policy",
            "magnitude_std",
            "translate_pct",
            "fill",
            "interpolation",
        ],
    )?;
    let defaults = TimmAutoAugment::default();
    let policy = match object.get("policy") {
        None => defaults.policy,
        Some(v) => v
            .as_str()
            .and_then(TimmAutoAugmentPolicy::named)
            .ok_or_else(|| {
                invalid(format!(
                    "`policy` is original, originalr, v0 or v0r, got {v}"
                ))
            })?,
    };
    let magnitude_std = match object.get("magnitude_std") {
        None => defaults.magnitude_std,
        Some(Value::String(s)) if s == "inf" => f64::INFINITY,
        Some(_) => f64_of(object, "magnitude_std")?,
    };
    let interpolation = match object.get("interpolation") {
        None => None,
        Some(Value::String(s)) if s == "random" => None,
        Some(_) => Some(interpolation_of(object)?),
    };
    Ok(TimmAutoAugment {
        policy,
        magnitude_std,
        translate_pct: match object.get("translate_pct") {
            None => defaults.translate_pct,
            Some(_) => f64_of(object, "translate_pct")?,
        },
        fill: match object.get("fill") {
            None => defaults.fill,
            Some(_) => fill_of(object)?,
        },
        interpolation,
    })
}

pub(super) fn random_resize(object: &Map<String, Value>) -> Parsed<RandomResize> {
    known(object, &["min_size", "max_size"])?;
    Ok(RandomResize {
        min_size: usize_of(object, "min_size")?,
        max_size: usize_of(object, "max_size")?,
    })
}

pub(super) fn random_shortest_size(object: &Map<String, Value>) -> Parsed<RandomShortestSize> {
    known(object, &["min_size", "max_size"])?;
    let sizes = match member(object, "min_size")? {
        Value::Array(sizes) => sizes
            .iter()
            .map(|s| {
                s.as_u64()
                    .and_then(|s| usize::try_from(s).ok())
                    .ok_or_else(|| invalid("`min_size` holds whole numbers".into()))
            })
            .collect::<Parsed<Vec<usize>>>()?,
        _ => vec![usize_of(object, "min_size")?],
    };
    let max_size = match object.get("max_size") {
        None | Some(Value::Null) => None,
        Some(_) => Some(usize_of(object, "max_size")?),
    };
    RandomShortestSize::new(&sizes, max_size)
}

/// timm's `AugMix`'s JSON form: its settings, a drawn depth as null, an infinite
/// `magnitude_std` as "inf", a drawn interpolation as "random", and `blended` where it is.
pub(super) fn timm_aug_mix_json(m: &TimmAugMix) -> Value {
    let mut value = json!({
        "magnitude": m.magnitude,
        "width": m.width,
        "depth": m.depth,
        "alpha": m.alpha,
        "magnitude_std": if m.magnitude_std.is_infinite() { json!("inf") } else { json!(m.magnitude_std) },
        "translate_pct": m.translate_pct,
        "fill": m.fill,
        "interpolation": m.interpolation.map_or("random", Filter::name),
    });
    if m.blended {
        value["blended"] = json!(true);
    }
    value
}

pub(super) fn timm_aug_mix(object: &Map<String, Value>) -> Parsed<TimmAugMix> {
    known(
        object,
        &[
            "magnitude",
            "width",
            "depth",
            "alpha",
            "magnitude_std",
            "translate_pct",
            "fill",
            "interpolation",
            "blended",
        ],
    )?;
    let defaults = TimmAugMix::default();
    let or_default = |key, default: f64| match object.get(key) {
        None => Ok(default),
        Some(_) => f64_of(object, key),
    };
    let count = |key: &str| {
        u32::try_from(usize_of(object, key)?).map_err(|_| invalid(format!("`{key}` is too large")))
    };
    let width = match object.get("width") {
        None => defaults.width,
        Some(_) => count("width")?,
    };
    let depth = match object.get("depth") {
        None | Some(Value::Null) => None,
        Some(_) => Some(count("depth")?).filter(|&d| d > 0),
    };
    let magnitude_std = match object.get("magnitude_std") {
        Some(Value::String(s)) if s == "inf" => f64::INFINITY,
        _ => or_default("magnitude_std", defaults.magnitude_std)?,
    };
    let interpolation = match object.get("interpolation") {
        None => None,
        Some(Value::String(s)) if s == "random" => None,
        Some(_) => Some(interpolation_of(object)?),
    };
    Ok(TimmAugMix {
        magnitude: or_default("magnitude", defaults.magnitude)?,
        width,
        depth,
        alpha: or_default("alpha", defaults.alpha)?,
        magnitude_std,
        translate_pct: or_default("translate_pct", defaults.translate_pct)?,
        fill: match object.get("fill") {
            None => defaults.fill,
            Some(_) => fill_of(object)?,
        },
        interpolation,
        blended: match object.get("blended") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => return Err(invalid(format!("`blended` is true or false, got {other}"))),
        },
    })
}

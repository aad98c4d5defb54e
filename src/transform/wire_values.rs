//! The values a transform's JSON form is made of, as its readers take them apart: members,
//! numbers, ranges, fills and filters, each refused with a message naming the key.

use super::{Filter, InvalidTransform};
use serde_json::{Map, Value};

pub(super) type Parsed<T> = Result<T, InvalidTransform>;

pub(super) fn invalid(why: String) -> InvalidTransform {
    InvalidTransform(why)
}

pub(super) fn boolean(v: &Value) -> Option<bool> {
    v.as_bool()
}

pub(super) fn filter(v: &Value) -> Option<Filter> {
    v.as_str().and_then(Filter::from_name)
}

/// The value of `key`, which the object must have.
pub(super) fn member<'a>(object: &'a Map<String, Value>, key: &str) -> Parsed<&'a Value> {
    object
        .get(key)
        .ok_or_else(|| invalid(format!("`{key}` is missing")))
}

pub(super) fn known(object: &Map<String, Value>, keys: &[&str]) -> Parsed<()> {
    match object.keys().find(|k| !keys.contains(&k.as_str())) {
        Some(key) => Err(invalid(format!("unknown key `{key}`"))),
        None => Ok(()),
    }
}

pub(super) fn usize_of(object: &Map<String, Value>, key: &str) -> Parsed<usize> {
    let v = member(object, key)?;
    v.as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| invalid(format!("`{key}` must be a non-negative integer")))
}

pub(super) fn f64_of(object: &Map<String, Value>, key: &str) -> Parsed<f64> {
    member(object, key)?
        .as_f64()
        .ok_or_else(|| invalid(format!("`{key}` must be a number")))
}

/// `[a, b, …]`, `N` numbers.
pub(super) fn numbers<const N: usize>(v: &Value, key: &str) -> Parsed<[f64; N]> {
    let wrong = || invalid(format!("`{key}` must be a list of {N} numbers"));
    let list = v.as_array().filter(|l| l.len() == N).ok_or_else(wrong)?;
    let mut out = [0.0; N];
    for (slot, item) in out.iter_mut().zip(list) {
        *slot = item.as_f64().ok_or_else(wrong)?;
    }
    Ok(out)
}

pub(super) fn range_of(object: &Map<String, Value>, key: &str) -> Parsed<(f64, f64)> {
    let [a, b] = numbers(member(object, key)?, key)?;
    Ok((a, b))
}

/// A pair of numbers or null (absent too): a map's `center`, translate or scale.
pub(super) fn pair_of(object: &Map<String, Value>, key: &str) -> Parsed<Option<(f64, f64)>> {
    match object.get(key).filter(|v| !v.is_null()) {
        None => Ok(None),
        Some(v) => numbers(v, key).map(|[a, b]| Some((a, b))),
    }
}

/// A float32 range or null (f32 → f64 → text → f64 → f32 is exact).
pub(super) fn range32_of(object: &Map<String, Value>, key: &str) -> Parsed<Option<(f32, f32)>> {
    match object.get(key).filter(|v| !v.is_null()) {
        None => Ok(None),
        Some(v) => numbers(v, key).map(|[a, b]| Some((a as f32, b as f32))),
    }
}

pub(super) fn fill_of(object: &Map<String, Value>) -> Parsed<[u8; 3]> {
    let wrong = || invalid("`fill` must be three integers 0..=255".into());
    let values = numbers::<3>(member(object, "fill")?, "fill").map_err(|_| wrong())?;
    let mut fill = [0u8; 3];
    for (slot, v) in fill.iter_mut().zip(values) {
        *slot = (v.fract() == 0.0 && (0.0..=255.0).contains(&v))
            .then_some(v as u8)
            .ok_or_else(wrong)?;
    }
    Ok(fill)
}

/// A map's `interpolation`: a filter's name, nearest where it is absent (as written before
/// maps had others).
pub(super) fn interpolation_of(object: &Map<String, Value>) -> Parsed<Filter> {
    match object.get("interpolation") {
        None => Ok(Filter::Nearest),
        Some(v) => filter(v).ok_or_else(|| {
            invalid("`interpolation` is one of nearest, bilinear and bicubic".into())
        }),
    }
}

//! The JSON form of the resize, the crops and the pads: sizes `{"width", "height"}`, each read
//! back as [`super::Transform::to_json`] writes it.

use super::wire_values::{
    boolean, fill_of, filter, invalid, known, member, numbers, range_of, usize_of, Parsed,
};
use super::{Pad, PaddingMode, RandomCrop, RandomResizedCrop, Resize, MAX_SIDE};
use serde_json::{Map, Value};

pub(super) fn size(object: &Map<String, Value>) -> Parsed<(usize, usize)> {
    known(object, &["width", "height"])?;
    Ok((usize_of(object, "width")?, usize_of(object, "height")?))
}

/// A centre crop's (width, height), and the fill of timm's `CenterCropOrPad` where it has one.
pub(super) type CenterCrop = ((usize, usize), Option<[u8; 3]>);

pub(super) fn center_crop(object: &Map<String, Value>) -> Parsed<CenterCrop> {
    known(object, &["width", "height", "fill"])?;
    let crop = (usize_of(object, "width")?, usize_of(object, "height")?);
    let fill = object
        .contains_key("fill")
        .then(|| fill_of(object))
        .transpose()?;
    Ok((crop, fill))
}

pub(super) fn resize(object: &Map<String, Value>) -> Parsed<Resize> {
    if object.contains_key("keep_ratio") {
        known(object, &["keep_ratio", "longest"])?;
        let (width, height) = member(object, "keep_ratio")?
            .as_object()
            .ok_or_else(|| invalid("`keep_ratio` is {\"width\": W, \"height\": H}".into()))
            .and_then(size)?;
        let longest = match object.get("longest") {
            None => false,
            Some(v) => boolean(v).ok_or_else(|| invalid("`longest` is true or false".into()))?,
        };
        return Ok(Resize::KeepRatio {
            width,
            height,
            longest,
        });
    }
    if object.contains_key("shorter_side") {
        known(object, &["shorter_side", "max_size"])?;
        let size = usize_of(object, "shorter_side")?;
        if !object.contains_key("max_size") {
            return Ok(Resize::ShorterSide(size));
        }
        let max_size = usize_of(object, "max_size")?;
        return Ok(Resize::ShorterSideAtMost { size, max_size });
    }
    let (width, height) = size(object)?;
    Ok(Resize::Exact { width, height })
}

pub(super) fn random_resized_crop(object: &Map<String, Value>) -> Parsed<RandomResizedCrop> {
    known(object, &["width", "height", "scale", "ratio", "filters"])?;
    let filters = match object.get("filters").filter(|v| !v.is_null()) {
        None => None,
        Some(v) => {
            let wrong = || invalid("`filters` must be two filter names or null".into());
            let list = v.as_array().filter(|l| l.len() == 2).ok_or_else(wrong)?;
            let [a, b] = [&list[0], &list[1]].map(filter);
            Some([a.ok_or_else(wrong)?, b.ok_or_else(wrong)?])
        }
    };
    Ok(RandomResizedCrop {
        size: (usize_of(object, "width")?, usize_of(object, "height")?),
        scale: range_of(object, "scale")?,
        ratio: range_of(object, "ratio")?,
        filters,
    })
}

pub(super) fn pad(object: &Map<String, Value>) -> Parsed<Pad> {
    known(object, &["padding", "fill", "mode"])?;
    Ok(Pad {
        padding: padding_of(object)?,
        fill: fill_of(object)?,
        mode: mode_of(object)?,
    })
}

pub(super) fn random_crop(object: &Map<String, Value>) -> Parsed<RandomCrop> {
    known(
        object,
        &[
            "width",
            "height",
            "padding",
            "pad_if_needed",
            "fill",
            "mode",
        ],
    )?;
    let pad_if_needed = boolean(member(object, "pad_if_needed")?)
        .ok_or_else(|| invalid("`pad_if_needed` must be true or false".into()))?;
    Ok(RandomCrop {
        size: (usize_of(object, "width")?, usize_of(object, "height")?),
        padding: padding_of(object)?,
        pad_if_needed,
        fill: fill_of(object)?,
        mode: mode_of(object)?,
    })
}

/// `padding`: the pixels added on the left, top, right and bottom.
fn padding_of(object: &Map<String, Value>) -> Parsed<[usize; 4]> {
    let wrong = || invalid("`padding` must be four non-negative integers".into());
    let values = numbers::<4>(member(object, "padding")?, "padding").map_err(|_| wrong())?;
    let mut padding = [0; 4];
    for (slot, v) in padding.iter_mut().zip(values) {
        *slot = (v.fract() == 0.0 && (0.0..=MAX_SIDE as f64).contains(&v))
            .then_some(v as usize)
            .ok_or_else(wrong)?;
    }
    Ok(padding)
}

fn mode_of(object: &Map<String, Value>) -> Parsed<PaddingMode> {
    let name = member(object, "mode")?.as_str().unwrap_or("");
    PaddingMode::named(name).ok_or_else(|| {
        invalid(format!(
            "`mode` is one of constant, edge, reflect and symmetric, not {name:?}"
        ))
    })
}

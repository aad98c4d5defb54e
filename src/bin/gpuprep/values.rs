//! The values of the transform flags, from their text to gpuprep's types (clap's value parsers
//! of [`super::args::TransformArgs`]).

use gpuprep::{Normalize, Resize};

#[derive(Clone, Copy, Debug)]
pub enum NormalizeArg {
    None,
    Stats(Normalize),
}

pub fn parse_size(text: &str) -> Result<(usize, usize), String> {
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

pub fn parse_resize(text: &str) -> Result<Resize, String> {
    for (prefix, longest) in [("keep:", false), ("keep-longest:", true)] {
        if let Some(size) = text.strip_prefix(prefix) {
            let (width, height) = parse_size(size)?;
            return Ok(Resize::KeepRatio {
                width,
                height,
                longest,
            });
        }
    }
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

pub fn parse_numbers(
    text: &str,
    count: std::ops::RangeInclusive<usize>,
) -> Result<Vec<f64>, String> {
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

pub fn parse_range(text: &str) -> Result<(f64, f64), String> {
    let v = parse_numbers(text, 2..=2)?;
    Ok((v[0], v[1]))
}

pub fn parse_jitter(text: &str) -> Result<gpuprep::ColorJitter, String> {
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

pub fn parse_rotation(text: &str) -> Result<gpuprep::RandomRotation, String> {
    let mut parts = text.split(':');
    let degrees = match parse_numbers(parts.next().unwrap_or(""), 1..=2)?[..] {
        [d] => (-d, d),
        [low, high] => (low, high),
        _ => unreachable!("one or two numbers"),
    };
    let mut center = None;
    let mut rest = Vec::new();
    for part in parts {
        match part.split_once('=') {
            Some(("center", v)) => center = Some(parse_range(v)?),
            Some((key, _)) => return Err(format!("{key:?} is not an option (center is)")),
            None => rest.push(part),
        }
    }
    let (fill, interpolation) = parse_map_options(&rest.join(":"))?;
    Ok(gpuprep::RandomRotation {
        degrees,
        fill,
        interpolation,
        center,
        p: 1.0,
    })
}

pub fn parse_affine(text: &str) -> Result<gpuprep::RandomAffine, String> {
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
            None if part == "v2" => affine.v2 = true,
            None => rest.push(part),
        }
    }
    (affine.fill, affine.interpolation) = parse_map_options(&rest.join(":"))?;
    Ok(affine)
}

/// `D[,P][:FILL][:INTERPOLATION]`: RandomPerspective(distortion_scale=D, p=P (default 0.5)),
/// bilinear unless another interpolation is named, as torchvision's default is.
pub fn parse_perspective(text: &str) -> Result<gpuprep::RandomPerspective, String> {
    let (numbers, options) = text.split_once(':').unwrap_or((text, ""));
    let (distortion_scale, p) = match parse_numbers(numbers, 1..=2)?[..] {
        [d] => (d, 0.5),
        [d, p] => (d, p),
        _ => unreachable!("one or two numbers"),
    };
    let named = options
        .split(':')
        .any(|o| gpuprep::Filter::from_name(o.trim()).is_some());
    let (fill, interpolation) = parse_map_options(options)?;
    Ok(gpuprep::RandomPerspective {
        distortion_scale,
        p,
        interpolation: if named {
            interpolation
        } else {
            gpuprep::Filter::Bilinear
        },
        fill,
    })
}

pub fn parse_trivial_augment(text: &str) -> Result<gpuprep::TrivialAugment, String> {
    let (bins, options) = text.split_once(':').unwrap_or((text, ""));
    let (options, v2) = without_v2(options);
    let (fill, interpolation) = parse_map_options(&options)?;
    let bins = bins
        .parse()
        .map_err(|_| format!("the bins are a whole number, got {bins:?}"))?;
    Ok(gpuprep::TrivialAugment {
        bins,
        fill,
        interpolation,
        v2,
    })
}

pub fn parse_rand_augment(text: &str) -> Result<gpuprep::RandAugment, String> {
    let (numbers, options) = text.split_once(':').unwrap_or((text, ""));
    let (options, v2) = without_v2(options);
    let (fill, interpolation) = parse_map_options(&options)?;
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
        v2,
    })
}

pub fn parse_timm_rand_augment(text: &str) -> Result<gpuprep::TimmRandAugment, String> {
    let (config, fill, interpolation) = timm_map_options(text)?;
    let r = gpuprep::TimmRandAugment::parse(config)?;
    Ok(gpuprep::TimmRandAugment {
        fill: fill.unwrap_or(r.fill),
        interpolation,
        ..r
    })
}

pub fn parse_timm_auto_augment(text: &str) -> Result<gpuprep::TimmAutoAugment, String> {
    let (config, fill, interpolation) = timm_map_options(text)?;
    let a = gpuprep::TimmAutoAugment::parse(config)?;
    Ok(gpuprep::TimmAutoAugment {
        fill: fill.unwrap_or(a.fill),
        interpolation,
        ..a
    })
}

pub fn parse_random_resize(text: &str) -> Result<gpuprep::RandomResize, String> {
    let sizes: Vec<usize> = text
        .split(',')
        .map(|s| s.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("give MIN,MAX in pixels, got {text:?}"))?;
    match sizes[..] {
        [min_size, max_size] => Ok(gpuprep::RandomResize { min_size, max_size }),
        _ => Err(format!("give MIN,MAX in pixels, got {text:?}")),
    }
}

pub fn parse_random_shortest_size(text: &str) -> Result<gpuprep::RandomShortestSize, String> {
    let wrong = || format!("give S1,S2,...[:MAX] in pixels, got {text:?}");
    let (sizes, max_size) = match text.split_once(':') {
        Some((sizes, max)) => (
            sizes,
            Some(max.trim().parse::<usize>().map_err(|_| wrong())?),
        ),
        None => (text, None),
    };
    let sizes: Vec<usize> = sizes
        .split(',')
        .map(|s| s.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| wrong())?;
    gpuprep::RandomShortestSize::new(&sizes, max_size).map_err(|e| e.to_string())
}

pub fn parse_timm_aug_mix(text: &str) -> Result<gpuprep::TimmAugMix, String> {
    // `translate=P` in any place after the config; the rest as for the other timm policies.
    let mut translate = None;
    let mut rest = Vec::new();
    for part in text.split(':') {
        match part.trim().strip_prefix("translate=") {
            Some(share) if translate.is_none() => {
                translate =
                    Some(share.parse::<f64>().map_err(|_| {
                        format!("translate= takes a share of the side, got {share:?}")
                    })?)
            }
            Some(_) => return Err(format!("give translate= once, got {text:?}")),
            None => rest.push(part),
        }
    }
    let rest = rest.join(":");
    let (config, fill, interpolation) = timm_map_options(&rest)?;
    let m = gpuprep::TimmAugMix::parse(config)?;
    Ok(gpuprep::TimmAugMix {
        fill: fill.unwrap_or(m.fill),
        interpolation,
        translate_pct: translate.unwrap_or(m.translate_pct),
        ..m
    })
}

/// A timm policy's `CONFIG[:FILL][:INTERPOLATION]`, each option once, in either order: the
/// config, the fill if given, the interpolation (`None` for random, timm's default).
type TimmOptions<'a> = (&'a str, Option<[u8; 3]>, Option<gpuprep::Filter>);

fn timm_map_options(text: &str) -> Result<TimmOptions<'_>, String> {
    let mut parts = text.split(':');
    let config = parts.next().unwrap_or("");
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
    Ok((config, fill, interpolation.unwrap_or(None)))
}

pub fn parse_auto_augment(text: &str) -> Result<gpuprep::AutoAugment, String> {
    let (name, options) = text.split_once(':').unwrap_or((text, ""));
    let (options, v2) = without_v2(options);
    let (fill, interpolation) = parse_map_options(&options)?;
    let policy = gpuprep::AutoAugmentPolicy::named(name)
        .ok_or_else(|| format!("the policy is imagenet, cifar10 or svhn, got {name:?}"))?;
    Ok(gpuprep::AutoAugment {
        policy,
        fill,
        interpolation,
        v2,
    })
}

/// Colon-separated options without a `v2` among them (transforms.v2's form of the operation),
/// and whether there was one.
fn without_v2(options: &str) -> (String, bool) {
    let parts: Vec<&str> = options.split(':').collect();
    let v2 = parts.contains(&"v2");
    let rest: Vec<&str> = parts.into_iter().filter(|&p| p != "v2").collect();
    (rest.join(":"), v2)
}

/// A map's `[FILL][:INTERPOLATION]`, in either order: the fill's `V` or `R,G,B` (default 0) and
/// `nearest` (default), `bilinear` or `bicubic`.
pub fn parse_map_options(text: &str) -> Result<([u8; 3], gpuprep::Filter), String> {
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
pub fn parse_pad(text: &str) -> Result<gpuprep::Pad, String> {
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
pub fn parse_random_crop(text: &str) -> Result<gpuprep::RandomCrop, String> {
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
pub fn parse_fill(text: &str) -> Result<[u8; 3], String> {
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

pub fn parse_blur(text: &str) -> Result<gpuprep::GaussianBlur, String> {
    let (text, v2) = without_v2(text);
    let (size, sigma) = text.split_once(',').unwrap_or((&text, ""));
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
        v2,
    })
}

/// `--order`: the steps that keep the image's size, named by their flags (with or without the
/// leading `--`), comma-separated, in the order they run; `random-order(A+B+...)` runs its steps
/// in an order drawn per sample, `random-choice(A+B+...)` one of them (`A:W` weighs it W;
/// equal weights by default).
pub fn parse_order(text: &str) -> Result<gpuprep::StepOrder, String> {
    let entries = split_top_level(text)?
        .into_iter()
        .map(|entry| {
            let entry = entry.trim();
            let group = |name: &str| {
                entry
                    .strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix('('))
                    .and_then(|rest| rest.strip_suffix(')'))
            };
            if let Some(inner) = group("random-order") {
                let steps: Result<Vec<_>, _> = inner.split('+').map(method_of_flag).collect();
                return Ok(gpuprep::OrderEntry::RandomOrder(steps?));
            }
            if let Some(inner) = group("random-choice") {
                let steps = inner.split('+').map(|member| {
                    let (flag, weight) = member.split_once(':').unwrap_or((member, "1"));
                    let weight: f64 = weight
                        .trim()
                        .parse()
                        .map_err(|_| format!("not a weight: {weight:?} (in {entry:?})"))?;
                    Ok((method_of_flag(flag)?, weight))
                });
                return Ok(gpuprep::OrderEntry::RandomChoice(
                    steps.collect::<Result<_, String>>()?,
                ));
            }
            method_of_flag(entry).map(gpuprep::OrderEntry::Step)
        })
        .collect::<Result<Vec<_>, String>>()?;
    gpuprep::StepOrder::from_entries(&entries).map_err(|e| e.to_string())
}

/// `text` split at its commas outside parentheses.
fn split_top_level(text: &str) -> Result<Vec<&str>, String> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (at, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err(format!("unbalanced or nested parentheses in {text:?}"));
        }
    }
    if depth != 0 {
        return Err(format!("unbalanced parentheses in {text:?}"));
    }
    parts.push(&text[start..]);
    Ok(parts)
}

/// The Python method of the operation of `flag` (with or without its leading `--`).
fn method_of_flag(flag: &str) -> Result<&'static str, String> {
    let name = flag.trim().trim_start_matches("--");
    if name.is_empty() {
        return Err("an empty step name (two commas or pluses together, or one at an end)".into());
    }
    let flag = format!("--{name}");
    gpuprep::OPERATIONS
        .iter()
        .find(|o| o.flag == flag)
        .map(|o| o.method)
        .ok_or_else(|| format!("{flag} is not a flag of an operation"))
}

pub fn parse_erasing(text: &str) -> Result<gpuprep::RandomErasing, String> {
    let (p, value) = text.split_once(':').unwrap_or((text, "0"));
    let p: f64 = p
        .trim()
        .parse()
        .map_err(|_| format!("not a probability: {p:?}"))?;
    let noise = match value.trim() {
        "random" => Some(gpuprep::ErasedValue::NormalPerElement),
        "channel" => Some(gpuprep::ErasedValue::NormalPerChannel),
        _ => None,
    };
    if let Some(value) = noise {
        return Ok(gpuprep::RandomErasing {
            value,
            ..gpuprep::RandomErasing::new(p)
        });
    }
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
        value: gpuprep::ErasedValue::Constant(value.map(|x| x as f32)),
        ..gpuprep::RandomErasing::new(p)
    })
}

pub fn parse_count(text: &str) -> Result<(u32, u32), String> {
    let whole = |t: &str| {
        t.trim()
            .parse::<u32>()
            .map_err(|_| format!("not a whole number: {t:?}"))
    };
    match text.split_once(',') {
        Some((low, high)) => Ok((whole(low)?, whole(high)?)),
        None => whole(text).map(|n| (n, n)),
    }
}

pub fn parse_normalize(text: &str) -> Result<NormalizeArg, String> {
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

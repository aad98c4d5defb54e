//! The checks of a transform's random operations' arguments, as torchvision's constructors make
//! them ([`Transform::validate`] runs them).

use super::{InvalidTransform, Transform, MAX_AUGMENT_OPS};

impl Transform {
    /// Checks the random operations' arguments as torchvision's constructors do.
    pub(super) fn validate_random(&self) -> Result<(), InvalidTransform> {
        let resizes = [
            ("resize", self.resize.is_some()),
            ("random_resized_crop", self.random_resized_crop.is_some()),
            ("random_resize", self.random_resize.is_some()),
            ("random_shortest_size", self.random_shortest_size.is_some()),
        ];
        let resizing: Vec<&str> = resizes.iter().filter(|r| r.1).map(|r| r.0).collect();
        if resizing.len() > 1 {
            return Err(InvalidTransform(format!(
                "{} are not offered together (one resize a transform)",
                resizing.join(" and ")
            )));
        }
        if self.draft && (self.random_resize.is_some() || self.random_shortest_size.is_some()) {
            return Err(InvalidTransform(
                "draft decoding needs a fixed resize, not random_resize or random_shortest_size"
                    .into(),
            ));
        }
        if let Some(r) = self.random_resize {
            r.check()?;
        }
        if let Some(r) = self.random_shortest_size {
            r.check()?;
        }
        if let Some(crop) = self.random_resized_crop {
            if self.resize.is_some() || self.draft {
                return Err(InvalidTransform(
                    "random_resized_crop replaces resize (and draft decoding)".into(),
                ));
            }
            let (s0, s1) = crop.scale;
            let (r0, r1) = crop.ratio;
            let positive = |v: f64| v.is_finite() && v > 0.0;
            if !(positive(s0) && positive(s1) && s0 <= s1 && positive(r0) && positive(r1))
                || r0 > r1
            {
                return Err(InvalidTransform(format!(
                    "random_resized_crop needs 0 < scale.0 <= scale.1 and 0 < ratio.0 <= ratio.1, \
                     got scale {:?}, ratio {:?}",
                    crop.scale, crop.ratio
                )));
            }
        }
        if let Some(r) = self.random_rotation {
            let (low, high) = r.degrees;
            if !(low.is_finite() && high.is_finite() && low <= high) {
                return Err(InvalidTransform(format!(
                    "random_rotation needs finite degrees with low <= high, got {:?}",
                    r.degrees
                )));
            }
            if let Some(c) = r.center.filter(|c| !(c.0.is_finite() && c.1.is_finite())) {
                return Err(InvalidTransform(format!(
                    "random_rotation needs a finite centre, got {c:?}"
                )));
            }
        }
        if let Some(t) = self.trivial_augment {
            if !(2..=1024).contains(&t.bins) {
                return Err(InvalidTransform(format!(
                    "trivial_augment needs 2..=1024 magnitude bins, got {}",
                    t.bins
                )));
            }
        }
        if let Some(r) = self.rand_augment {
            if !(2..=1024).contains(&r.bins) || r.magnitude >= r.bins {
                return Err(InvalidTransform(format!(
                    "rand_augment needs 2..=1024 magnitude bins and a magnitude below them, got \
                     magnitude {} of {} bins",
                    r.magnitude, r.bins
                )));
            }
            if r.num_ops > MAX_AUGMENT_OPS {
                return Err(InvalidTransform(format!(
                    "rand_augment applies at most {MAX_AUGMENT_OPS} operations an image, not {}",
                    r.num_ops
                )));
            }
        }
        if let Some(r) = self.timm_rand_augment {
            r.check()?;
        }
        if let Some(a) = self.timm_auto_augment {
            a.check()?;
        }
        if let Some(m) = self.timm_aug_mix {
            m.check()?;
        }
        if let Some(affine) = self.random_affine {
            affine.check()?;
        }
        if let Some(blur) = self.gaussian_blur {
            blur.check()?;
        }
        if let Some(perspective) = self.random_perspective {
            perspective.check()?;
            if !perspective.interpolation.maps() {
                return Err(InvalidTransform(format!(
                    "random_perspective's interpolation is nearest, bilinear or bicubic (Pillow's \
                     perspective transform samples with no other), got {}",
                    perspective.interpolation.name()
                )));
            }
        }
        let geometric = [
            ("random_rotation", self.random_rotation.is_some()),
            ("random_affine", self.random_affine.is_some()),
            ("trivial_augment", self.trivial_augment.is_some()),
            ("rand_augment", self.rand_augment.is_some()),
            ("auto_augment", self.auto_augment.is_some()),
            ("timm_rand_augment", self.timm_rand_augment.is_some()),
            ("timm_auto_augment", self.timm_auto_augment.is_some()),
            ("timm_aug_mix", self.timm_aug_mix.is_some()),
        ];
        let interpolations = [
            self.random_rotation.map(|r| r.interpolation),
            self.random_affine.map(|a| a.interpolation),
            self.trivial_augment.map(|t| t.interpolation),
            self.rand_augment.map(|r| r.interpolation),
            self.auto_augment.map(|a| a.interpolation),
            self.timm_rand_augment.and_then(|r| r.interpolation),
            self.timm_auto_augment.and_then(|a| a.interpolation),
            self.timm_aug_mix.and_then(|m| m.interpolation),
        ];
        for ((name, _), filter) in geometric.iter().zip(interpolations) {
            if let Some(filter) = filter.filter(|f| !f.maps()) {
                return Err(InvalidTransform(format!(
                    "{name}'s interpolation is nearest, bilinear or bicubic (Pillow's affine \
                     transforms sample with no other), got {}",
                    filter.name()
                )));
            }
        }
        let chosen: Vec<&str> = geometric.iter().filter(|g| g.1).map(|g| g.0).collect();
        if chosen.len() > 1 {
            return Err(InvalidTransform(format!(
                "{} are not offered together (one rotation or augmentation policy a transform)",
                chosen.join(" and ")
            )));
        }
        if let Some(e) = self.random_erasing {
            e.validate(self.dtype)?;
        }
        for (name, p) in [
            ("horizontal_flip", self.horizontal_flip),
            ("vertical_flip", self.vertical_flip),
            ("grayscale", self.grayscale),
            ("color_jitter", self.color_jitter.map(|j| j.p)),
            ("random_rotation", self.random_rotation.map(|r| r.p)),
            ("random_affine", self.random_affine.map(|a| a.p)),
        ] {
            if let Some(p) = p.filter(|p| !(0.0..=1.0).contains(p)) {
                return Err(InvalidTransform(format!(
                    "{name}'s probability must lie in [0, 1], got {p}"
                )));
            }
        }
        if let Some(jitter) = self.color_jitter {
            let factors = [jitter.brightness, jitter.contrast, jitter.saturation];
            for (low, high) in factors.into_iter().flatten() {
                if !(low.is_finite() && high.is_finite() && 0.0 <= low && low <= high) {
                    return Err(InvalidTransform(format!(
                        "color_jitter's factor ranges must satisfy 0 <= low <= high, got \
                         ({low}, {high})"
                    )));
                }
            }
            if let Some((low, high)) = jitter.hue {
                if !(-0.5 <= low && low <= high && high <= 0.5) {
                    return Err(InvalidTransform(format!(
                        "color_jitter's hue range must lie in [-0.5, 0.5], got ({low}, {high})"
                    )));
                }
            }
        }
        Ok(())
    }
}

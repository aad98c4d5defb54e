//! The order of a transform's steps that keep the image's size: the rotation, `RandomAffine` or
//! augmentation policy, `RandomPerspective`, `ColorJitter`, `RandomGrayscale`, the
//! single-operation transforms and `GaussianBlur`. By default they run in torchvision's usual
//! order ([`super::OPERATIONS`]); a [`StepOrder`] runs them as a torchvision Compose lists them.
//! The size-changing steps (resize, pad, crops) come before them and the flips first among them,
//! whatever the order: those are the places gpuprep computes them in.

use super::{InvalidTransform, Transform, OPERATIONS};

/// The steps a [`StepOrder`] may place, by their Python method names (the table's `method`).
fn orderable() -> impl Iterator<Item = &'static str> {
    const FLIPS: [&str; 2] = ["horizontal_flip", "vertical_flip"];
    OPERATIONS
        .iter()
        .filter(|o| (3..=6).contains(&o.stage) && !FLIPS.contains(&o.method))
        .map(|o| o.method)
}

/// How many steps an order may name: one of each kind.
const MAX_ORDERED: usize = OPERATIONS.len();

/// The order the steps that keep the image's size run in, each named by its Python method
/// (`"color_jitter"`, `"random_rotation"`, `"random_invert"`...); empty for torchvision's usual
/// order. A non-empty order names every such step of its transform, each once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepOrder([Option<&'static str>; MAX_ORDERED]);

impl StepOrder {
    /// The order of `methods`, refusing by name a method that is not one of the steps it
    /// places, or one given twice.
    pub fn new<S: AsRef<str>>(methods: &[S]) -> Result<Self, InvalidTransform> {
        let mut order = Self::default();
        for (slot, method) in methods.iter().map(AsRef::as_ref).enumerate() {
            let Some(known) = orderable().find(|&m| m == method) else {
                let all: Vec<&str> = orderable().collect();
                return Err(InvalidTransform(format!(
                    "order: {method:?} is not a step it places (it places {}; the resize, pad, \
                     crop and flips run before them, in that order)",
                    all.join(", ")
                )));
            };
            if order.iter().any(|m| m == known) {
                return Err(InvalidTransform(format!(
                    "order names {method} twice: a transform has one of each step"
                )));
            }
            order.0[slot] = Some(known);
        }
        Ok(order)
    }

    /// The methods named, in order.
    pub fn iter(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.0.iter().flatten().copied()
    }

    /// Whether it is the usual order.
    pub fn is_empty(&self) -> bool {
        self.0[0].is_none()
    }
}

impl Transform {
    /// The steps of this transform that keep the image's size, by method, in the order they run:
    /// its [`StepOrder`], or torchvision's usual order without one (the single-operation
    /// transforms in theirs).
    pub fn ordered_steps(&self) -> Vec<&'static str> {
        if !self.order.is_empty() {
            return self.order.iter().collect();
        }
        let singles: Vec<&'static str> = self
            .color_ops
            .iter()
            .map(|o| o.operation().method)
            .collect();
        let mut steps: Vec<&'static str> = orderable()
            .filter(|m| self.has_step(m) && !singles.contains(m))
            .collect();
        let grey = steps.iter().position(|&m| m == "grayscale");
        let after = grey.map_or_else(
            || steps.partition_point(|&m| m != "gaussian_blur"),
            |g| g + 1,
        );
        steps.splice(after..after, singles);
        steps
    }

    /// Whether the transform has the step of `method`.
    fn has_step(&self, method: &str) -> bool {
        match method {
            "random_rotation" => self.random_rotation.is_some(),
            "random_affine" => self.random_affine.is_some(),
            "trivial_augment_wide" => self.trivial_augment.is_some(),
            "rand_augment" => self.rand_augment.is_some(),
            "auto_augment" => self.auto_augment.is_some(),
            "timm_rand_augment" => self.timm_rand_augment.is_some(),
            "timm_auto_augment" => self.timm_auto_augment.is_some(),
            "timm_aug_mix" => self.timm_aug_mix.is_some(),
            "random_perspective" => self.random_perspective.is_some(),
            "color_jitter" => self.color_jitter.is_some(),
            "grayscale" => self.grayscale.is_some(),
            "gaussian_blur" => self.gaussian_blur.is_some(),
            single => self
                .color_ops
                .iter()
                .any(|o| o.operation().method == single),
        }
    }

    /// Checks that a non-empty order names exactly the transform's steps that keep its size.
    pub(super) fn validate_order(&self) -> Result<(), InvalidTransform> {
        if self.order.is_empty() {
            return Ok(());
        }
        if let Some(absent) = self.order.iter().find(|m| !self.has_step(m)) {
            return Err(InvalidTransform(format!(
                "order names {absent}, which the transform does not have"
            )));
        }
        let missing: Vec<&str> = orderable()
            .filter(|m| self.has_step(m) && !self.order.iter().any(|o| o == *m))
            .collect();
        if !missing.is_empty() {
            return Err(InvalidTransform(format!(
                "order names every step that keeps the image's size, once; it lacks {} (set \
                 the order after adding the steps)",
                missing.join(", ")
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ColorJitter, ColorOp, GaussianBlur, RandomRotation};

    fn jittered_rotation() -> Transform {
        Transform {
            random_rotation: Some(RandomRotation::new(10.0)),
            color_jitter: Some(ColorJitter::new(0.4, 0.0, 0.0, 0.0)),
            grayscale: Some(0.2),
            color_ops: crate::ColorOps::default()
                .with(ColorOp::new("random_equalize", None, 0.5).unwrap())
                .with(ColorOp::new("random_invert", None, 0.5).unwrap()),
            gaussian_blur: Some(GaussianBlur::new(3)),
            ..Transform::default()
        }
    }

    #[test]
    fn without_an_order_the_steps_run_in_torchvisions_usual_one() {
        let usual = [
            "random_rotation",
            "color_jitter",
            "grayscale",
            "random_equalize",
            "random_invert",
            "gaussian_blur",
        ];
        assert_eq!(jittered_rotation().ordered_steps(), usual);
        let without_grey = Transform {
            grayscale: None,
            ..jittered_rotation()
        };
        assert_eq!(
            without_grey.ordered_steps(),
            [
                "random_rotation",
                "color_jitter",
                "random_equalize",
                "random_invert",
                "gaussian_blur"
            ]
        );
        assert!(Transform::default().ordered_steps().is_empty());
    }

    #[test]
    fn an_order_is_the_steps_run_and_names_each_once() {
        let given = [
            "gaussian_blur",
            "random_invert",
            "color_jitter",
            "random_rotation",
            "grayscale",
            "random_equalize",
        ];
        let t = Transform {
            order: StepOrder::new(&given).unwrap(),
            ..jittered_rotation()
        };
        t.validate().unwrap();
        assert_eq!(t.ordered_steps(), given);
        let refused = |order: &[&str], words: &str| {
            let why = match StepOrder::new(order) {
                Err(e) => e.to_string(),
                Ok(order) => Transform {
                    order,
                    ..jittered_rotation()
                }
                .validate()
                .unwrap_err()
                .to_string(),
            };
            assert!(why.contains(words), "{why}");
        };
        refused(&["resize"], "\"resize\" is not a step it places");
        refused(&["horizontal_flip"], "flips run before");
        refused(&["grayscale", "grayscale"], "grayscale twice");
        refused(&given[1..], "it lacks gaussian_blur");
        let mut with_perspective = given.to_vec();
        with_perspective.push("random_perspective");
        refused(
            &with_perspective,
            "random_perspective, which the transform does not have",
        );
    }
}

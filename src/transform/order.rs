//! The order of a transform's steps that keep the image's size: the rotation, `RandomAffine` or
//! augmentation policy, `RandomPerspective`, `ColorJitter`, `RandomGrayscale`, the
//! single-operation transforms and `GaussianBlur`. By default they run in torchvision's usual
//! order ([`super::OPERATIONS`]); a [`StepOrder`] runs them as a torchvision Compose lists them,
//! `RandomOrder` and `RandomChoice` of them included: those draw, per sample, the order of their
//! steps or the one step that runs (the parameters record it as `steps`).
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

/// One entry of an order as a Compose lists it: a step, or a `RandomOrder` or `RandomChoice` of
/// steps, each step named by its Python method.
#[derive(Clone, Debug, PartialEq)]
pub enum OrderEntry<S> {
    /// A step that runs where it stands.
    Step(S),
    /// torchvision's `RandomOrder`: the steps all run, in an order drawn per sample (uniformly).
    RandomOrder(Vec<S>),
    /// torchvision's `RandomChoice`: one of the steps runs, drawn per sample with a probability
    /// proportional to its weight (`p`; equal weights without one); the others do not, and draw
    /// nothing.
    RandomChoice(Vec<(S, f64)>),
}

/// How a place of a [`StepOrder`] is drawn: where it stands, or as a member of the numbered
/// group.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
enum Place {
    #[default]
    Fixed,
    Shuffled(u8),
    /// With its weight.
    Chosen(u8, f64),
}

impl Place {
    fn group(self) -> Option<u8> {
        match self {
            Place::Fixed => None,
            Place::Shuffled(g) | Place::Chosen(g, _) => Some(g),
        }
    }
}

/// The order the steps that keep the image's size run in, each named by its Python method
/// (`"color_jitter"`, `"random_rotation"`, `"random_invert"`...), with the `RandomOrder` and
/// `RandomChoice` groups among them; empty for torchvision's usual order. A non-empty order
/// names every such step of its transform, each once.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepOrder([Option<(&'static str, Place)>; MAX_ORDERED]);

impl StepOrder {
    /// The order of `methods`, refusing by name a method that is not one of the steps it
    /// places, or one given twice.
    pub fn new<S: AsRef<str>>(methods: &[S]) -> Result<Self, InvalidTransform> {
        let entries: Vec<OrderEntry<&str>> = methods
            .iter()
            .map(|m| OrderEntry::Step(m.as_ref()))
            .collect();
        Self::from_entries(&entries)
    }

    /// The order of `entries`, as a Compose lists them: refused by name where a method is not
    /// one of the steps it places or is given twice, a group is empty, or a `RandomChoice`'s
    /// weights are not finite, non-negative numbers of a positive sum.
    pub fn from_entries<S: AsRef<str>>(
        entries: &[OrderEntry<S>],
    ) -> Result<Self, InvalidTransform> {
        let mut order = Self::default();
        let mut slot = 0;
        for (group, entry) in entries.iter().enumerate() {
            let group = u8::try_from(group).unwrap_or(u8::MAX);
            let members: Vec<(&str, Place)> = match entry {
                OrderEntry::Step(m) => vec![(m.as_ref(), Place::Fixed)],
                OrderEntry::RandomOrder(steps) => steps
                    .iter()
                    .map(|m| (m.as_ref(), Place::Shuffled(group)))
                    .collect(),
                OrderEntry::RandomChoice(steps) => steps
                    .iter()
                    .map(|(m, w)| (m.as_ref(), Place::Chosen(group, *w)))
                    .collect(),
            };
            if members.is_empty() {
                return Err(InvalidTransform(
                    "order: a RandomOrder or RandomChoice of no steps".into(),
                ));
            }
            if let OrderEntry::RandomChoice(steps) = entry {
                check_weights(steps.iter().map(|(_, w)| *w))?;
            }
            for (method, place) in members {
                let known = known_step(method)?;
                if order.iter().any(|m| m == known) {
                    return Err(InvalidTransform(format!(
                        "order names {} twice: a transform has one of each step",
                        named(method)
                    )));
                }
                order.0[slot] = Some((known, place));
                slot += 1;
            }
        }
        Ok(order)
    }

    /// The entries, as [`Self::from_entries`] took them.
    pub fn entries(&self) -> Vec<OrderEntry<&'static str>> {
        let mut entries: Vec<OrderEntry<&'static str>> = Vec::new();
        let mut last_group = None;
        for &(method, place) in self.0.iter().flatten() {
            let same = place.group().is_some() && place.group() == last_group;
            last_group = place.group();
            match (place, entries.last_mut()) {
                (Place::Shuffled(_), Some(OrderEntry::RandomOrder(steps))) if same => {
                    steps.push(method)
                }
                (Place::Chosen(_, w), Some(OrderEntry::RandomChoice(steps))) if same => {
                    steps.push((method, w))
                }
                (Place::Fixed, _) => entries.push(OrderEntry::Step(method)),
                (Place::Shuffled(_), _) => entries.push(OrderEntry::RandomOrder(vec![method])),
                (Place::Chosen(_, w), _) => {
                    entries.push(OrderEntry::RandomChoice(vec![(method, w)]))
                }
            }
        }
        entries
    }

    /// The methods named, in order (every member of a group, as listed).
    pub fn iter(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.0.iter().flatten().map(|&(m, _)| m)
    }

    /// Whether it is the usual order.
    pub fn is_empty(&self) -> bool {
        self.0[0].is_none()
    }

    /// Whether it has a `RandomOrder` or `RandomChoice`: then each sample draws the steps it
    /// runs.
    pub fn is_random(&self) -> bool {
        self.0.iter().flatten().any(|&(_, p)| p != Place::Fixed)
    }

    /// Whether `steps` is an order of steps a sample may run: each fixed step where it stands,
    /// each `RandomOrder`'s steps in some order, one step of each `RandomChoice` (of a positive
    /// weight).
    pub fn allows(&self, steps: &[&str]) -> bool {
        let mut rest = steps;
        for entry in self.entries() {
            let taken = match &entry {
                OrderEntry::Step(_) | OrderEntry::RandomChoice(_) => 1,
                OrderEntry::RandomOrder(members) => members.len(),
            };
            let Some((these, after)) = (rest.len() >= taken).then(|| rest.split_at(taken)) else {
                return false;
            };
            let fits = match &entry {
                OrderEntry::Step(m) => these[0] == *m,
                OrderEntry::RandomChoice(members) => {
                    members.iter().any(|&(m, w)| m == these[0] && w > 0.0)
                }
                OrderEntry::RandomOrder(members) => {
                    members.iter().all(|m| these.contains(m))
                        && these.iter().all(|m| members.contains(m))
                }
            };
            if !fits {
                return false;
            }
            rest = after;
        }
        rest.is_empty()
    }
}

/// A step's method, with its torchvision class and its flag for those who know it by them:
/// `random_invert (RandomInvert, --random-invert)`.
fn named(method: &str) -> String {
    match OPERATIONS.iter().find(|o| o.method == method) {
        Some(o) => format!("{method} ({}, {})", o.torchvision, o.flag),
        None => method.to_string(),
    }
}

/// The step of `method`, refused by name where it is not one an order places.
fn known_step(method: &str) -> Result<&'static str, InvalidTransform> {
    orderable().find(|&m| m == method).ok_or_else(|| {
        let all: Vec<&str> = orderable().collect();
        InvalidTransform(format!(
            "order: {method:?} is not a step it places (it places {}; the resize, pad, crop \
             and flips run before them, in that order)",
            all.join(", ")
        ))
    })
}

/// `RandomChoice`'s weights: finite, non-negative, of a positive sum (torchvision normalises
/// them, or `random.choices` takes them as they are: the same probabilities).
fn check_weights(weights: impl Iterator<Item = f64> + Clone) -> Result<(), InvalidTransform> {
    let sum: f64 = weights.clone().sum();
    if weights.clone().any(|w| !w.is_finite() || w < 0.0) || !(sum > 0.0 && sum.is_finite()) {
        let all: Vec<f64> = weights.collect();
        return Err(InvalidTransform(format!(
            "order: RandomChoice's p {all:?} must be finite, non-negative weights of a positive \
             sum"
        )));
    }
    Ok(())
}

impl Transform {
    /// The steps of this transform that keep the image's size, by method, in the order they run:
    /// its [`StepOrder`] (every step of its groups as listed: a sample runs the `steps` its
    /// parameters drew), or torchvision's usual order without one (the single-operation
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

    /// The transform one sample runs when it drew `steps` (an order its [`StepOrder`]
    /// [allows](StepOrder::allows)): without the steps a `RandomChoice` did not choose, and
    /// with `steps` as its fixed order.
    pub(crate) fn running(&self, steps: &[&'static str]) -> Transform {
        let mut t = *self;
        for method in self.order.iter().filter(|m| !steps.contains(m)) {
            t.remove_step(method);
        }
        t.order = StepOrder::new(steps).expect("steps an order allows are steps it places");
        t
    }

    /// Without the step of `method`.
    fn remove_step(&mut self, method: &str) {
        match method {
            "random_rotation" => self.random_rotation = None,
            "random_affine" => self.random_affine = None,
            "trivial_augment_wide" => self.trivial_augment = None,
            "rand_augment" => self.rand_augment = None,
            "auto_augment" => self.auto_augment = None,
            "timm_rand_augment" => self.timm_rand_augment = None,
            "timm_auto_augment" => self.timm_auto_augment = None,
            "timm_aug_mix" => self.timm_aug_mix = None,
            "random_perspective" => self.random_perspective = None,
            "color_jitter" => self.color_jitter = None,
            "grayscale" => self.grayscale = None,
            "gaussian_blur" => self.gaussian_blur = None,
            single => {
                let kept = self
                    .color_ops
                    .iter()
                    .filter(|o| o.operation().method != single);
                self.color_ops = kept.fold(crate::ColorOps::default(), |ops, o| ops.with(*o));
            }
        }
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
                "order names {}, which the transform does not have",
                named(absent)
            )));
        }
        let missing: Vec<String> = orderable()
            .filter(|m| self.has_step(m) && !self.order.iter().any(|o| o == *m))
            .map(named)
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
        refused(
            &["grayscale", "grayscale"],
            "grayscale (RandomGrayscale, --grayscale) twice",
        );
        refused(
            &given[1..],
            "it lacks gaussian_blur (GaussianBlur, --gaussian-blur)",
        );
        let mut with_perspective = given.to_vec();
        with_perspective.push("random_perspective");
        refused(
            &with_perspective,
            "random_perspective (RandomPerspective, --random-perspective), which the transform \
             does not have",
        );
    }
}

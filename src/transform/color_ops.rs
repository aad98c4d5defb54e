//! torchvision's single-operation transforms (`RandomInvert`, `RandomPosterize`, ...): each
//! applies one of Pillow's whole-image colour operations with probability `p`. Each is declared
//! here once, in [`COLOR_OPERATIONS`], with everything the front ends and the plan read: its
//! names, its argument and the [`Adjustment`] it makes. The command line's flags, the Python
//! methods, `from_torchvision`, the JSON forms and the random draws come from this table; the
//! arithmetic is the colour stage's (src/reference/adjust.rs, shaders/adjust.wgsl), and
//! tools/pillow_reference.py holds the Pillow side.
//!
//! They run after `RandomGrayscale`, in the order the transform lists them.

use super::{Adjustment, InvalidTransform};

/// The argument a single-operation transform takes besides `p`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ColorOpArgument {
    /// torchvision's name of it (the Python keyword and the JSON key).
    pub name: &'static str,
    /// Whether it must be an integer.
    pub integer: bool,
    /// Its lowest and highest values (inclusive; infinite for no bound).
    pub low: f64,
    /// See `low`.
    pub high: f64,
    /// A value it takes, for the tests that try every operation.
    pub example: f64,
}

impl ColorOpArgument {
    /// Whether `value` is one this argument takes.
    pub fn allows(&self, value: f64) -> bool {
        value.is_finite()
            && (self.low..=self.high).contains(&value)
            && (!self.integer || value.fract() == 0.0)
    }

    /// What `allows` accepts, in words.
    pub fn accepted(&self) -> String {
        let kind = if self.integer {
            "an integer"
        } else {
            "a number"
        };
        let (low, high) = (shown(self.low), shown(self.high));
        match (self.low.is_finite(), self.high.is_finite()) {
            (true, true) => format!("{kind} from {low} to {high}"),
            (true, false) => format!("{kind} of at least {low}"),
            (false, true) => format!("{kind} of at most {high}"),
            (false, false) if self.integer => "an integer".into(),
            (false, false) => "a finite number".into(),
        }
    }
}

/// A number in a message: large ones (float32's bounds) in exponent form.
fn shown(v: f64) -> String {
    if v.abs() < 1e9 || !v.is_finite() {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// One single-operation transform, declared once.
#[derive(Clone, Copy, Debug)]
pub struct ColorOperation {
    /// torchvision's class (`transforms` and `transforms.v2` spell it alike).
    pub torchvision: &'static str,
    /// The Python `Transform` method, and the name in the JSON forms.
    pub method: &'static str,
    /// The command line's flag.
    pub flag: &'static str,
    /// What it does, in Pillow's terms (help texts and docstrings).
    pub summary: &'static str,
    /// Its argument besides `p`, if any.
    pub argument: Option<ColorOpArgument>,
    /// The counter word of its random stream (`crate::plan::random`): fixed per operation, so
    /// that adding one leaves the others' draws alone.
    pub stream: u64,
    /// The Pillow operation it applies, made from its argument (0 without one).
    adjustment: fn(f64) -> Adjustment,
}

/// Every single-operation transform. A new one is an entry here (its Pillow arithmetic an
/// [`Adjustment`], new ones with their CPU stage and shader) and one in
/// tools/pillow_reference.py; tests then ask for its Python stub and the colour job's longer
/// arrays in shaders/adjust.wgsl (docs/ARCHITECTURE.md says where).
pub const COLOR_OPERATIONS: [ColorOperation; 6] = [
    ColorOperation {
        torchvision: "RandomInvert",
        method: "random_invert",
        flag: "--random-invert",
        summary: "ImageOps.invert: every value v becomes 255 - v",
        argument: None,
        stream: 11,
        // Solarizing from 0 inverts every value: the same table.
        adjustment: |_| Adjustment::Solarize(0),
    },
    ColorOperation {
        torchvision: "RandomPosterize",
        method: "random_posterize",
        flag: "--random-posterize",
        summary: "ImageOps.posterize: each value keeps its `bits` highest bits",
        argument: Some(ColorOpArgument {
            name: "bits",
            integer: true,
            low: 0.0,
            high: 8.0,
            example: 4.0,
        }),
        stream: 12,
        adjustment: |bits| Adjustment::Posterize(bits as u8),
    },
    ColorOperation {
        torchvision: "RandomSolarize",
        method: "random_solarize",
        flag: "--random-solarize",
        summary: "ImageOps.solarize: the values at or above `threshold` inverted",
        // NaN, which Pillow compares as inverting everything, is refused with the infinities.
        argument: Some(ColorOpArgument {
            name: "threshold",
            integer: false,
            low: f64::NEG_INFINITY,
            high: f64::INFINITY,
            example: 128.0,
        }),
        stream: 13,
        adjustment: Adjustment::solarize,
    },
    ColorOperation {
        torchvision: "RandomAdjustSharpness",
        method: "random_adjust_sharpness",
        flag: "--random-adjust-sharpness",
        summary: "ImageEnhance.Sharpness: blended with the image smoothed by `sharpness_factor` \
                  (0 smooths, 1 keeps, 2 sharpens)",
        // Any factor, as torchvision's PIL path takes it (below 0 Pillow extrapolates), that a
        // float32 holds: Pillow's blend works in float32.
        argument: Some(ColorOpArgument {
            name: "sharpness_factor",
            integer: false,
            low: f32::MIN as f64,
            high: f32::MAX as f64,
            example: 2.0,
        }),
        stream: 14,
        // Image.blend hands its alpha to ImagingBlend as a C float.
        adjustment: |factor| Adjustment::Sharpness(factor as f32),
    },
    ColorOperation {
        torchvision: "RandomAutocontrast",
        method: "random_autocontrast",
        flag: "--random-autocontrast",
        summary: "ImageOps.autocontrast: each channel's range stretched to 0..255",
        argument: None,
        stream: 15,
        adjustment: |_| Adjustment::AutoContrast,
    },
    ColorOperation {
        torchvision: "RandomEqualize",
        method: "random_equalize",
        flag: "--random-equalize",
        summary: "ImageOps.equalize: each channel's histogram equalised",
        argument: None,
        stream: 16,
        adjustment: |_| Adjustment::Equalize,
    },
];

impl ColorOperation {
    /// The operation whose Python method (and JSON name) is `method`.
    pub fn named(method: &str) -> Option<&'static Self> {
        COLOR_OPERATIONS.iter().find(|o| o.method == method)
    }

    /// Where it stands in [`COLOR_OPERATIONS`].
    fn index(&self) -> u8 {
        COLOR_OPERATIONS
            .iter()
            .position(|o| o.method == self.method)
            .expect("declared") as u8
    }
}

/// A single-operation transform with its argument and probability, as a [`super::Transform`]
/// holds it: made by [`ColorOp::new`], which checks both.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ColorOp {
    /// Its place in [`COLOR_OPERATIONS`].
    operation: u8,
    argument: f64,
    p: f64,
}

impl ColorOp {
    /// The operation whose method is `method`, with `argument` (`None` for the operations
    /// without one) and probability `p`, refused by name where torchvision's would not take
    /// them.
    pub fn new(method: &str, argument: Option<f64>, p: f64) -> Result<Self, InvalidTransform> {
        let operation = ColorOperation::named(method).ok_or_else(|| {
            let known: Vec<&str> = COLOR_OPERATIONS.iter().map(|o| o.method).collect();
            InvalidTransform(format!(
                "unknown single-operation transform `{method}` (known: {})",
                known.join(", ")
            ))
        })?;
        let argument = match (operation.argument, argument) {
            (None, None) => 0.0,
            (Some(a), Some(value)) if a.allows(value) => value,
            (Some(a), Some(value)) => {
                return Err(InvalidTransform(format!(
                    "{method}'s {} must be {}, got {}",
                    a.name,
                    a.accepted(),
                    shown(value)
                )));
            }
            (Some(a), None) => {
                return Err(InvalidTransform(format!("{method} needs its {}", a.name)))
            }
            (None, Some(_)) => {
                return Err(InvalidTransform(format!(
                    "{method} takes no argument besides p"
                )))
            }
        };
        if !(0.0..=1.0).contains(&p) {
            return Err(InvalidTransform(format!(
                "{method}'s probability must lie in [0, 1], got {p}"
            )));
        }
        Ok(Self {
            operation: operation.index(),
            argument,
            p,
        })
    }

    /// Its declaration.
    pub fn operation(&self) -> &'static ColorOperation {
        &COLOR_OPERATIONS[usize::from(self.operation)]
    }

    /// Its argument (`None` for the operations without one).
    pub fn argument(&self) -> Option<f64> {
        self.operation().argument.map(|_| self.argument)
    }

    /// The probability that it applies.
    pub fn p(&self) -> f64 {
        self.p
    }

    /// The Pillow operation it applies.
    pub fn adjustment(&self) -> Adjustment {
        (self.operation().adjustment)(self.argument)
    }

    /// torchvision's spelling: `RandomPosterize(bits=4, p=0.5)`.
    pub fn describe(&self) -> String {
        let operation = self.operation();
        let argument = operation
            .argument
            .map_or(String::new(), |a| format!("{}={}, ", a.name, self.argument));
        format!("{}({argument}p={})", operation.torchvision, self.p)
    }
}

/// The single-operation transforms of a transform, in the order they run; each operation at most
/// once.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ColorOps([Option<ColorOp>; COLOR_OPERATIONS.len()]);

impl ColorOps {
    /// With `op` last, or in the place of the same operation given before.
    pub fn with(mut self, op: ColorOp) -> Self {
        let slot = self
            .0
            .iter()
            .position(|o| o.is_none_or(|o| o.operation == op.operation))
            .expect("one slot per operation");
        self.0[slot] = Some(op);
        self
    }

    /// In the order they run.
    pub fn iter(&self) -> impl Iterator<Item = &ColorOp> {
        self.0.iter().flatten()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0[0].is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_streams_are_unique_and_spelt_alike() {
        for (i, o) in COLOR_OPERATIONS.iter().enumerate() {
            assert_eq!(o.flag, format!("--{}", o.method.replace('_', "-")));
            assert!(o.torchvision.starts_with("Random"));
            for other in &COLOR_OPERATIONS[i + 1..] {
                assert_ne!(o.method, other.method);
                assert_ne!(o.torchvision, other.torchvision);
                assert_ne!(o.stream, other.stream);
            }
            if let Some(a) = o.argument {
                assert!(a.allows(a.example), "{}", o.method);
            }
        }
    }

    #[test]
    fn arguments_and_probabilities_are_checked_by_name() {
        let refused = |method, argument, p| ColorOp::new(method, argument, p).unwrap_err().0;
        assert_eq!(
            refused("random_posterize", Some(9.0), 0.5),
            "random_posterize's bits must be an integer from 0 to 8, got 9"
        );
        assert_eq!(
            refused("random_posterize", Some(2.5), 0.5),
            "random_posterize's bits must be an integer from 0 to 8, got 2.5"
        );
        assert_eq!(
            refused("random_adjust_sharpness", Some(1e39), 0.5),
            "random_adjust_sharpness's sharpness_factor must be a number from \
             -3.4028234663852886e38 to 3.4028234663852886e38, got 1e39"
        );
        assert!(ColorOp::new("random_adjust_sharpness", Some(-1.5), 0.5).is_ok());
        assert_eq!(
            refused("random_solarize", Some(f64::NAN), 0.5),
            "random_solarize's threshold must be a finite number, got NaN"
        );
        assert_eq!(
            refused("random_solarize", None, 0.5),
            "random_solarize needs its threshold"
        );
        assert_eq!(
            refused("random_invert", Some(1.0), 0.5),
            "random_invert takes no argument besides p"
        );
        assert_eq!(
            refused("random_equalize", None, 1.5),
            "random_equalize's probability must lie in [0, 1], got 1.5"
        );
        assert!(refused("random_blur", None, 0.5).starts_with("unknown single-operation"));
    }

    #[test]
    fn a_list_keeps_its_order_and_replaces_an_operation_in_place() {
        let op = |method, argument| ColorOp::new(method, argument, 0.5).unwrap();
        let ops = ColorOps::default()
            .with(op("random_solarize", Some(100.0)))
            .with(op("random_invert", None))
            .with(op("random_solarize", Some(7.0)));
        let listed: Vec<String> = ops.iter().map(ColorOp::describe).collect();
        assert_eq!(
            listed,
            ["RandomSolarize(threshold=7, p=0.5)", "RandomInvert(p=0.5)"]
        );
        assert_eq!(
            ops.iter().map(ColorOp::adjustment).collect::<Vec<_>>(),
            [Adjustment::Solarize(7), Adjustment::Solarize(0)]
        );
        assert!(ColorOps::default().is_empty() && !ops.is_empty());
    }
}

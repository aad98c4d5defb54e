//! The steps one sample runs where its transform's order has a `RandomOrder` or `RandomChoice`
//! ([`StepOrder`]): drawn from the sample's stream, or checked when given.

use super::random::Stream;
use crate::transform::{OrderEntry, StepOrder, Transform};
use crate::{Error, Result};

/// The steps that keep the image's size in the order this sample runs them: the fixed ones
/// where they stand, each `RandomOrder`'s in an order drawn ([`Stream::shuffle`]), one of each
/// `RandomChoice`'s ([`Stream::weighted`]), the groups drawn in the order's order.
pub(crate) fn drawn(order: &StepOrder, s: &mut Stream) -> Vec<&'static str> {
    let mut steps = Vec::new();
    for entry in order.entries() {
        match entry {
            OrderEntry::Step(method) => steps.push(method),
            OrderEntry::RandomOrder(mut members) => {
                s.shuffle(&mut members);
                steps.extend(members);
            }
            OrderEntry::RandomChoice(members) => {
                let weights: Vec<f64> = members.iter().map(|&(_, w)| w).collect();
                steps.push(members[s.weighted(&weights)].0);
            }
        }
    }
    steps
}

/// The transform given parameters are checked against: where its order draws the steps, the
/// one running the given `steps` ([`Transform::running`]), which must be an order it allows;
/// otherwise `transform` itself, and `steps` must be absent.
pub(crate) fn check(transform: &Transform, steps: Option<&[&'static str]>) -> Result<Transform> {
    match (transform.order.is_random(), steps) {
        (false, None) => Ok(*transform),
        (false, Some(_)) => Err(Error::Options(
            "the given parameters have `steps`, which the transform does not draw (its order \
             has no RandomOrder or RandomChoice)"
                .into(),
        )),
        (true, None) => Err(Error::Options(
            "the given parameters lack `steps`, which the transform's RandomOrder or \
             RandomChoice draws"
                .into(),
        )),
        (true, Some(steps)) if transform.order.allows(steps) => Ok(transform.running(steps)),
        (true, Some(steps)) => Err(Error::Options(format!(
            "the given steps {steps:?} are not an order the transform's order {} runs",
            transform.order.to_json()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::random::{Op, SampleKey};

    fn order() -> StepOrder {
        StepOrder::from_entries(&[
            OrderEntry::Step("random_rotation"),
            OrderEntry::RandomChoice(vec![("color_jitter", 3.0), ("gaussian_blur", 1.0)]),
            OrderEntry::RandomOrder(vec!["grayscale", "random_invert", "random_equalize"]),
        ])
        .unwrap()
    }

    #[test]
    fn each_sample_runs_an_order_its_groups_allow_and_the_draws_vary() {
        let order = order();
        let mut orders = std::collections::BTreeSet::new();
        let mut jitters = 0;
        for index in 0..400 {
            let key = SampleKey {
                seed: 3,
                epoch: 1,
                index,
            };
            let steps = drawn(&order, &mut Stream::new(key, Op::Steps));
            assert!(order.allows(&steps), "{steps:?}");
            assert_eq!(steps.len(), 5);
            jitters += usize::from(steps[1] == "color_jitter");
            orders.insert(steps[2..].to_vec());
        }
        assert_eq!(orders.len(), 6, "all six orders of three steps");
        // Weights 3 : 1, so about 300 of 400 (the binomial's deviation is about 9).
        assert!((260..=340).contains(&jitters), "{jitters}");
    }

    #[test]
    fn orders_the_groups_do_not_allow_are_refused() {
        let order = order();
        let allowed = [
            "random_rotation",
            "gaussian_blur",
            "random_equalize",
            "grayscale",
            "random_invert",
        ];
        assert!(order.allows(&allowed));
        let mut both = allowed.to_vec();
        both.insert(2, "color_jitter");
        assert!(!order.allows(&both), "both of a RandomChoice");
        assert!(!order.allows(&allowed[..4]), "a RandomOrder's step missing");
        let mut moved = allowed.to_vec();
        moved.swap(0, 1);
        assert!(!order.allows(&moved), "a fixed step moved");
        let never = StepOrder::from_entries(&[OrderEntry::RandomChoice(vec![
            ("color_jitter", 0.0),
            ("gaussian_blur", 1.0),
        ])])
        .unwrap();
        assert!(!never.allows(&["color_jitter"]), "a choice of weight 0");
        assert!(never.allows(&["gaussian_blur"]));
    }

    #[test]
    fn weights_must_be_finite_non_negative_and_of_a_positive_sum() {
        for weights in [
            [0.0, 0.0],
            [-1.0, 2.0],
            [f64::NAN, 1.0],
            [f64::INFINITY, 1.0],
        ] {
            let entry = OrderEntry::RandomChoice(vec![
                ("color_jitter", weights[0]),
                ("gaussian_blur", weights[1]),
            ]);
            let why = StepOrder::from_entries(&[entry]).unwrap_err().to_string();
            assert!(why.contains("RandomChoice's p"), "{why}");
        }
        let empty = OrderEntry::<&str>::RandomOrder(vec![]);
        assert!(StepOrder::from_entries(&[empty]).is_err());
    }

    #[test]
    fn entries_read_back_as_given() {
        let order = order();
        let again = StepOrder::from_entries(&order.entries()).unwrap();
        assert_eq!(again, order);
        assert!(order.is_random());
        assert!(!StepOrder::new(&["color_jitter"]).unwrap().is_random());
    }
}

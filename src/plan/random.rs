//! The random numbers of the augmentations: a counter-based generator, so that a sample's
//! parameters depend on (seed, epoch, sample index) alone, never on threads, batch size, order
//! of completion or backend.
//!
//! Each random operation of sample `index` in `epoch` reads its own stream: the 64-bit words of
//! Philox4x64-10 keyed with `[seed, 0]` over the counters `[n, index, epoch, op]`, n = 1, 2, …,
//! four words a block, in order. That is exactly what
//! `numpy.random.Philox(key=[seed, 0], counter=[0, index, epoch, op]).random_raw()` returns
//! (numpy steps the counter before each block), so anyone can replay a draw in Python. `op`
//! numbers the operation ([`Op`]), so adding one to a transform leaves the others' draws alone.
//!
//! From the words: a uniform double in [0, 1) is `(w >> 11) · 2⁻⁵³` (numpy's `random()`), a
//! uniform float32 `(w >> 40) · 2⁻²⁴`, and an integer in [0, n) `(w · n) >> 64`.

/// The random operations, each with a stream of its own (the counter's fourth word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `RandomResizedCrop`'s box.
    Crop = 1,
    /// `RandomHorizontalFlip`.
    HorizontalFlip = 2,
    /// `RandomVerticalFlip`.
    VerticalFlip = 3,
    /// `ColorJitter`'s order and factors.
    ColorJitter = 4,
    /// `RandomGrayscale`.
    Grayscale = 5,
    /// A loader's order of an epoch (drawn for sample index 0: one permutation for all ranks),
    /// or of a rank's shuffle buffer (drawn for the rank).
    Shuffle = 6,
    /// `RandomErasing`.
    Erase = 7,
    /// `RandomResizedCrop`'s filter, when it draws one.
    Interpolation = 8,
    /// `RandomRotation`'s angle.
    Rotation = 9,
    /// `TrivialAugmentWide`'s operation, magnitude and sign.
    TrivialAugment = 10,
    // 11 to 16 are the single-operation transforms' (`ColorOperation::stream`): a new operation
    // here takes a number none of them has.
    /// `RandAugment`'s operations and signs.
    RandAugment = 17,
    /// `AutoAugment`'s sub-policy, probabilities and signs.
    AutoAugment = 18,
    /// `RandomCrop`'s box.
    RandomCrop = 19,
    /// Whether a `ColorJitter` inside `RandomApply` applies.
    ColorJitterApply = 20,
    /// `RandomAffine`'s angle, translation, scale and shears.
    Affine = 21,
    /// `GaussianBlur`'s sigma.
    GaussianBlur = 22,
    /// Whether a `GaussianBlur` inside `RandomApply` applies.
    GaussianBlurApply = 23,
    /// timm's `RandAugment`'s operations, probabilities, magnitudes, signs and filters.
    TimmRandAugment = 24,
    /// timm's `AutoAugment`'s sub-policy, probabilities, magnitudes, signs and filters.
    TimmAutoAugment = 25,
    /// timm's `AugMix`'s weights, chains, magnitudes, signs and filters.
    TimmAugMix = 26,
    /// `RandomResize`'s or `RandomShortestSize`'s size.
    RandomResize = 27,
    /// Whether `RandomPerspective` applies.
    PerspectiveApply = 28,
    /// `RandomPerspective`'s corners.
    Perspective = 29,
    /// Whether a `RandomRotation` inside `RandomApply` applies.
    RotationApply = 30,
    /// Whether a `RandomAffine` inside `RandomApply` applies.
    AffineApply = 31,
    /// The order of a `RandomOrder`'s steps and the step a `RandomChoice` runs, in the order's
    /// order.
    Steps = 32,
}

/// Which sample a stream belongs to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SampleKey {
    /// The run's seed.
    pub seed: u64,
    /// The epoch.
    pub epoch: u64,
    /// The sample's index in the dataset.
    pub index: u64,
}

/// One operation's stream of random words for one sample.
pub struct Stream {
    key: [u64; 2],
    counter: [u64; 4],
    block: [u64; 4],
    used: usize,
}

impl Stream {
    /// The stream of `op` for `sample`.
    pub fn new(sample: SampleKey, op: Op) -> Self {
        Self::numbered(sample, op as u64)
    }

    /// The stream numbered `op` (the counter's fourth word) for `sample`.
    pub fn numbered(sample: SampleKey, op: u64) -> Self {
        Self {
            key: [sample.seed, 0],
            counter: [0, sample.index, sample.epoch, op],
            block: [0; 4],
            used: 4,
        }
    }

    /// The next 64-bit word.
    pub fn next_u64(&mut self) -> u64 {
        if self.used == 4 {
            self.counter[0] = self.counter[0].wrapping_add(1);
            self.block = philox4x64(self.counter, self.key);
            self.used = 0;
        }
        self.used += 1;
        self.block[self.used - 1]
    }

    /// A uniform double in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform float32 in [`low`, `high`): `low + (high − low) · u` in float32, as
    /// `torch.empty(1).uniform_(low, high)` scales its float.
    pub fn uniform_f32(&mut self, low: f32, high: f32) -> f32 {
        let u = (self.next_u64() >> 40) as f32 * (1.0 / (1u32 << 24) as f32);
        low + (high - low) * u
    }

    /// A uniform integer in [0, `n`) (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A uniform permutation of 0..N (Fisher–Yates from the last place down: place `i` swaps
    /// with place `below(i + 1)`).
    pub fn permutation<const N: usize>(&mut self) -> [usize; N] {
        let mut order: [usize; N] = std::array::from_fn(|i| i);
        self.shuffle(&mut order);
        order
    }

    /// `items` in a uniformly drawn order: Fisher–Yates from the last place down, place `i`
    /// swapping with place `below(i + 1)`.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }

    /// The index of one of `weights` (non-negative, of a positive sum), drawn with a probability
    /// proportional to its weight: the first whose running sum exceeds a uniform double times
    /// the sum (both sums in doubles, left to right).
    pub fn weighted(&mut self, weights: &[f64]) -> usize {
        let total: f64 = weights.iter().sum();
        let x = self.uniform() * total;
        let mut sum = 0.0;
        let last = weights.iter().rposition(|&w| w > 0.0).unwrap_or(0);
        weights[..last]
            .iter()
            .position(|&w| {
                sum += w;
                x < sum
            })
            .unwrap_or(last)
    }
}

/// One try of torchvision's box `get_params` (RandomResizedCrop's and RandomErasing's): an area,
/// `area` times a share uniform in `scale`, and an aspect ratio log-uniform in `ratio`.
pub(super) fn area_and_aspect(
    area: f64,
    scale: (f64, f64),
    ratio: (f64, f64),
    s: &mut Stream,
) -> (f64, f64) {
    let (log_low, log_high) = (ratio.0.ln(), ratio.1.ln());
    let target = area * (scale.0 + (scale.1 - scale.0) * s.uniform());
    let aspect = (log_low + (log_high - log_low) * s.uniform()).exp();
    (target, aspect)
}

/// Philox4x64 with ten rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
/// 2011), the generator of numpy's `Philox`.
fn philox4x64(mut counter: [u64; 4], mut key: [u64; 2]) -> [u64; 4] {
    const M0: u64 = 0xD2E7_470E_E14C_6C93;
    const M1: u64 = 0xCA5A_8263_9512_1157;
    const W0: u64 = 0x9E37_79B9_7F4A_7C15;
    const W1: u64 = 0xBB67_AE85_84CA_A73B;
    let mul = |a: u64, b: u64| {
        let product = u128::from(a) * u128::from(b);
        ((product >> 64) as u64, product as u64)
    };
    for round in 0..10 {
        if round > 0 {
            key = [key[0].wrapping_add(W0), key[1].wrapping_add(W1)];
        }
        let (hi0, lo0) = mul(M0, counter[0]);
        let (hi1, lo1) = mul(M1, counter[2]);
        counter = [
            hi1 ^ counter[1] ^ key[0],
            lo1,
            hi0 ^ counter[3] ^ key[1],
            lo0,
        ];
    }
    counter
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each single-operation transform's stream is its own, past the numbers of [`Op`].
    #[test]
    fn single_operation_streams_are_their_own() {
        let mut streams: Vec<u64> = crate::transform::COLOR_OPERATIONS
            .iter()
            .map(|o| o.stream)
            .collect();
        assert!(streams
            .iter()
            .all(|&s| s > Op::TrivialAugment as u64 && s < Op::RandAugment as u64));
        streams.sort_unstable();
        streams.dedup();
        assert_eq!(streams.len(), crate::transform::COLOR_OPERATIONS.len());
    }

    /// numpy 2's `Philox(key=[0, 0], counter=[0, 0, 0, 0]).random_raw(4)` and
    /// `Philox(key=[7, 0], counter=[0, 5, 2, 1]).random_raw(5)`.
    #[test]
    fn streams_equal_numpys_philox() {
        let words = |sample, op, n| {
            let mut stream = Stream::new(sample, op);
            (0..n).map(|_| stream.next_u64()).collect::<Vec<_>>()
        };
        let mut zero = Stream {
            key: [0; 2],
            counter: [0; 4],
            block: [0; 4],
            used: 4,
        };
        let first: Vec<u64> = (0..4).map(|_| zero.next_u64()).collect();
        assert_eq!(
            first,
            [
                0x02f4_ba64_08e4_d89b,
                0x3dd6_2b0b_9ca8_c5b2,
                0x1c86_67a5_5d90_2e79,
                0x907d_7a05_2fd5_b4dc
            ]
        );
        let key = SampleKey {
            seed: 7,
            epoch: 2,
            index: 5,
        };
        assert_eq!(
            words(key, Op::Crop, 5),
            [
                0x97f4_1f64_4c0b_4872,
                0x774b_afbc_67d6_0796,
                0x0ff0_d9bd_4f1f_1a02,
                0x69eb_c021_7fa7_006c,
                0x73df_2ee3_d073_2071
            ]
        );
    }

    #[test]
    fn permutations_are_permutations_and_vary() {
        let mut seen = std::collections::BTreeSet::new();
        for index in 0..200 {
            let key = SampleKey {
                seed: 1,
                epoch: 0,
                index,
            };
            let order = Stream::new(key, Op::ColorJitter).permutation::<4>();
            let mut sorted = order;
            sorted.sort_unstable();
            assert_eq!(sorted, [0, 1, 2, 3]);
            seen.insert(order);
        }
        assert_eq!(seen.len(), 24, "all 24 orders of four in 200 draws");
    }

    #[test]
    fn uniforms_stay_in_range() {
        let mut s = Stream::new(SampleKey::default(), Op::Crop);
        for _ in 0..1000 {
            let u = s.uniform();
            assert!((0.0..1.0).contains(&u));
            let f = s.uniform_f32(0.6, 1.4);
            assert!((0.6..1.4).contains(&f));
            assert!(s.below(7) < 7);
        }
    }
}

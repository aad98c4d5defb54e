//! timm's AugMix over an image's chains, as stage 5's mix steps compute it
//! (shaders/adjust.wgsl `mix_step`): numpy's float32 `mixed += w * np.asarray(chain)` in the
//! order of the chains, `np.clip(mixed, 0, 255).astype(np.uint8)` (truncation), then
//! `Image.blend(image, mixed, m)` in ImagingBlend's float32 arithmetic ([`Mixing`]); or, blended,
//! `img = Image.blend(img, chain, w)` chain by chain ([`Blending`]).

use super::resample::Image8;

/// The image AugMix started from and the float32 sum of its chains so far.
pub struct Mixing {
    kept: Vec<u8>,
    sum: Vec<f32>,
}

impl Mixing {
    /// AugMix's start: `image` kept, the sum at zero.
    pub fn keep(image: &Image8) -> Self {
        Self {
            kept: image.data.clone(),
            sum: vec![0.0; image.data.len()],
        }
    }

    /// The end of a chain: `image` (the chain's output) times `weight` added to the sum, each
    /// product and sum rounded to float32 as numpy rounds them; `image` becomes the kept one
    /// again for the next chain.
    pub fn add(&mut self, image: &mut Image8, weight: f32) {
        for (sum, &v) in self.sum.iter_mut().zip(&image.data) {
            *sum += weight * f32::from(v);
        }
        image.data.copy_from_slice(&self.kept);
    }

    /// AugMix's end: `image` becomes the kept image blended with the sum, clipped and truncated,
    /// by `factor`.
    pub fn blend(&self, image: &mut Image8, factor: f32) {
        for ((out, &sum), &kept) in image.data.iter_mut().zip(&self.sum).zip(&self.kept) {
            // np.clip then astype(uint8): the sum is never below 0; `as` truncates.
            let mixed = sum.min(255.0) as u8;
            *out = super::adjust::blend(kept, mixed, factor);
        }
    }
}

/// Blended AugMix's kept image and its running blend.
pub struct Blending {
    kept: Vec<u8>,
    running: Vec<u8>,
}

impl Blending {
    /// Its start: `image` kept, and the running blend starts as it.
    pub fn keep(image: &Image8) -> Self {
        Self {
            kept: image.data.clone(),
            running: image.data.clone(),
        }
    }

    /// The end of a chain but the last: the running blend blended with `image` (the chain's
    /// output) by `factor`; `image` becomes the kept one again for the next chain.
    pub fn chain(&mut self, image: &mut Image8, factor: f32) {
        for (running, &v) in self.running.iter_mut().zip(&image.data) {
            *running = super::adjust::blend(*running, v, factor);
        }
        image.data.copy_from_slice(&self.kept);
    }

    /// The end of the last chain: `image` becomes the running blend blended with it.
    pub fn last(&self, image: &mut Image8, factor: f32) {
        for (v, &running) in image.data.iter_mut().zip(&self.running) {
            *v = super::adjust::blend(running, *v, factor);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_is_numpys_float32_sum_truncated_then_blended() {
        let image = |data: Vec<u8>| Image8 {
            width: data.len() / 3,
            height: 1,
            channels: 3,
            data,
        };
        let mut rgb = image(vec![10, 200, 255]);
        let mut mixing = Mixing::keep(&rgb);
        rgb.data.copy_from_slice(&[20, 100, 255]);
        mixing.add(&mut rgb, 0.6);
        assert_eq!(rgb.data, [10, 200, 255], "the kept image again");
        rgb.data.copy_from_slice(&[0, 50, 255]);
        mixing.add(&mut rgb, 0.45);
        // 12 + 0; 60 + 22.5 = 82.5 -> 82; 153 + 114.75 = 267.75, clipped to 255.
        mixing.blend(&mut rgb, 0.5);
        // ImagingBlend: 10 + 0.5 * (12 - 10) = 11; 200 + 0.5 * (82 - 200) = 141; 255.
        assert_eq!(rgb.data, [11, 141, 255]);
    }

    #[test]
    fn blended_chains_go_into_the_running_blend_in_turn() {
        let image = |data: Vec<u8>| Image8 {
            width: 1,
            height: 1,
            channels: 3,
            data,
        };
        let mut rgb = image(vec![10, 200, 255]);
        let mut blending = Blending::keep(&rgb);
        rgb.data.copy_from_slice(&[20, 100, 0]);
        blending.chain(&mut rgb, 0.5);
        assert_eq!(rgb.data, [10, 200, 255], "the kept image again");
        // Running: 10 + 0.5 * 10 = 15; 200 - 50 = 150; 255 - 127.5 = 127.5 -> 127.
        rgb.data.copy_from_slice(&[115, 150, 27]);
        blending.last(&mut rgb, 0.25);
        // 15 + 0.25 * 100 = 40; 150; 127 - 25 = 102.
        assert_eq!(rgb.data, [40, 150, 102]);
    }
}

//! torchvision's `GaussianBlur` (`crate::plan::Blur` holds one image's kernels; `crate::plan::
//! augment` draws its sigma).

use super::InvalidTransform;

/// The largest kernel side gpuprep blurs with (torchvision takes any odd size; a side of 31
/// already covers sigma 5, past the ranges recipes draw from).
pub const MAX_KERNEL: usize = 31;

/// The smallest sigma of a transforms.v2 blur gpuprep takes.
const V2_MIN_SIGMA: f32 = 1e-20;

/// torchvision `GaussianBlur(kernel_size, sigma)` of the image after its colour operations,
/// before the tensor conversion: per sample a sigma drawn from the range, the image convolved
/// with torchvision's Gaussian kernel of it (reflect padding), as torch computes it on the CPU.
/// `RandomApply([GaussianBlur(...)], p)` blurs a share `p` of the samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GaussianBlur {
    /// Kernel width and height: odd, 1..=31 (torchvision's `kernel_size`, `(w, h)`).
    pub kernel_size: (usize, usize),
    /// The range sigma is drawn from, positive, low <= high: torchvision's `(0.1, 2.0)` by
    /// default, `(s, s)` for a number `s`.
    pub sigma: (f64, f64),
    /// The share of samples blurred: 1 unless inside `RandomApply`.
    pub p: f64,
    /// `transforms.v2.GaussianBlur`: its kernels a softmax over another linspace
    /// (`crate::plan::blur::kernel1d_v2`): v1's Gaussian, rounded otherwise (its float32 weights
    /// are v1's for some sigmas only); its blur is v1's.
    pub v2: bool,
}

impl GaussianBlur {
    /// `GaussianBlur(kernel_size)`: a square kernel, sigma in torchvision's default (0.1, 2.0).
    pub fn new(kernel_size: usize) -> Self {
        Self {
            kernel_size: (kernel_size, kernel_size),
            sigma: (0.1, 2.0),
            p: 1.0,
            v2: false,
        }
    }

    /// Checks the arguments as torchvision's constructor does, and that gpuprep has room for
    /// the kernel.
    pub(crate) fn check(&self) -> Result<(), InvalidTransform> {
        let refused = |what: String| Err(InvalidTransform(format!("gaussian_blur {what}")));
        let (kx, ky) = self.kernel_size;
        if [kx, ky].iter().any(|&k| k % 2 == 0 || k > MAX_KERNEL) {
            return refused(format!(
                "needs odd kernel sides of at most {MAX_KERNEL}, got ({kx}, {ky})"
            ));
        }
        // Drawn in float32, as torch draws it: the range must hold there.
        let (low, high) = (self.sigma.0 as f32, self.sigma.1 as f32);
        if !(low > 0.0 && low <= high && high.is_finite()) {
            return refused(format!(
                "needs a sigma range of positive float32 numbers, low <= high, got {:?}",
                self.sigma
            ));
        }
        if !(0.0..=1.0).contains(&self.p) {
            return refused(format!("needs p in [0, 1], got {}", self.p));
        }
        // v2's linspace need not hold 0 in the middle (-5.96e-8 at size 7): below about 3e-27
        // every tap's square overflows and torch's kernel is NaN.
        if self.v2 && low < V2_MIN_SIGMA {
            return refused(format!(
                "of transforms.v2 needs sigma of at least {V2_MIN_SIGMA:e}, got {low:e}: below \
                 about 3e-27 torch's kernel overflows to NaN"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// torchvision's constructor's refusals, and sigmas that float32 (torch's draw) cannot hold.
    #[test]
    fn kernels_and_sigmas_torch_refuses_are_refused() {
        let blur = |kernel_size, sigma| GaussianBlur {
            kernel_size,
            sigma,
            p: 1.0,
            v2: false,
        };
        assert!(blur((23, 5), (0.1, 2.0)).check().is_ok());
        assert!(blur((1, 31), (1.0, 1.0)).check().is_ok());
        // v1's middle tap is 0: its kernel of a tiny sigma is finite.
        assert!(blur((7, 7), (1e-30, 1.0)).check().is_ok());
        for refused in [
            blur((4, 3), (0.1, 2.0)),
            blur((33, 3), (0.1, 2.0)),
            blur((3, 0), (0.1, 2.0)),
            blur((3, 3), (2.0, 1.0)),
            blur((3, 3), (0.0, 1.0)),
            blur((3, 3), (1e-50, 1e-50)),
            blur((3, 3), (0.1, 1e300)),
            blur((3, 3), (f64::NAN, 1.0)),
            GaussianBlur {
                p: 1.5,
                ..GaussianBlur::new(3)
            },
            GaussianBlur {
                v2: true,
                ..blur((7, 7), (1e-30, 1.0))
            },
        ] {
            assert!(refused.check().is_err(), "{refused:?}");
        }
    }
}

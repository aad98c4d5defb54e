//! torchvision v2's resizes of a size drawn per sample: `RandomResize` and
//! `RandomShortestSize`. Each sample's drawn size (`crate::plan::Params::resize`) makes the
//! transform's resize a fixed one for that image ([`super::Transform::resolved`]).

use super::{InvalidTransform, Resize, MAX_SIDE};

/// The most sizes a [`RandomShortestSize`] draws from.
pub const MAX_SHORTEST_SIZES: usize = 16;

/// v2 `RandomResize(min_size, max_size)`: `Resize(size)` (the shorter side becomes `size`) with
/// `size` drawn uniformly from `min_size..max_size` for each sample (`max_size` left out, as
/// `torch.randint` leaves it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RandomResize {
    /// The least shorter side.
    pub min_size: usize,
    /// One more than the largest shorter side.
    pub max_size: usize,
}

impl RandomResize {
    /// The fixed resize of a sample that drew `size`.
    pub fn resize(&self, size: usize) -> Resize {
        Resize::ShorterSide(size)
    }

    /// Whether a sample may draw `size`.
    pub fn draws(&self, size: usize) -> bool {
        (self.min_size..self.max_size).contains(&size)
    }

    pub(super) fn check(&self) -> Result<(), InvalidTransform> {
        if self.min_size == 0 || self.min_size >= self.max_size || self.max_size > MAX_SIDE {
            return Err(InvalidTransform(format!(
                "random_resize needs 1 <= min_size < max_size <= {MAX_SIDE} (torch.randint \
                 draws below max_size), got {}..{}",
                self.min_size, self.max_size
            )));
        }
        Ok(())
    }
}

/// v2 `RandomShortestSize(min_size, max_size)`: one of `sizes` drawn for each sample, the image
/// scaled by `size / shorter side` (less where the longer side would pass `max_size`: by
/// `max_size / longer side`), each side `int(side * r)` in doubles, as torchvision computes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RandomShortestSize {
    /// The sizes drawn from: the first `count`.
    pub sizes: [usize; MAX_SHORTEST_SIZES],
    /// How many of `sizes` there are.
    pub count: usize,
    /// The most the longer side may have.
    pub max_size: Option<usize>,
}

impl RandomShortestSize {
    /// Of the sizes in `sizes` (at most [`MAX_SHORTEST_SIZES`]).
    pub fn new(sizes: &[usize], max_size: Option<usize>) -> Result<Self, InvalidTransform> {
        if sizes.is_empty() || sizes.len() > MAX_SHORTEST_SIZES {
            return Err(InvalidTransform(format!(
                "random_shortest_size draws from 1 to {MAX_SHORTEST_SIZES} sizes, got {}",
                sizes.len()
            )));
        }
        let mut all = [0; MAX_SHORTEST_SIZES];
        all[..sizes.len()].copy_from_slice(sizes);
        let s = Self {
            sizes: all,
            count: sizes.len(),
            max_size,
        };
        s.check()?;
        Ok(s)
    }

    /// The sizes drawn from.
    pub fn sizes(&self) -> &[usize] {
        &self.sizes[..self.count.min(MAX_SHORTEST_SIZES)]
    }

    /// The fixed resize of an image of `width`×`height` whose sample drew `size`:
    /// `make_params`' double arithmetic.
    pub fn resize(&self, size: usize, (width, height): (usize, usize)) -> Resize {
        let (w, h) = (width as f64, height as f64);
        let mut r = size as f64 / w.min(h);
        if let Some(max_size) = self.max_size {
            r = r.min(max_size as f64 / w.max(h));
        }
        // int() of a non-negative double; the sides fit MAX_SIDE, so no saturation.
        Resize::Exact {
            width: (w * r) as usize,
            height: (h * r) as usize,
        }
    }

    /// Whether a sample may draw `size`.
    pub fn draws(&self, size: usize) -> bool {
        self.sizes().contains(&size)
    }

    pub(super) fn check(&self) -> Result<(), InvalidTransform> {
        let sizes = self.sizes();
        if self.count == 0 || self.count > MAX_SHORTEST_SIZES {
            return Err(InvalidTransform(format!(
                "random_shortest_size draws from 1 to {MAX_SHORTEST_SIZES} sizes, got {}",
                self.count
            )));
        }
        let fits = |s: &usize| (1..=MAX_SIDE).contains(s);
        if !sizes.iter().all(fits) || !self.max_size.iter().all(fits) {
            return Err(InvalidTransform(format!(
                "random_shortest_size's sizes and max_size are 1 to {MAX_SIDE}, got {sizes:?} \
                 and {:?}",
                self.max_size
            )));
        }
        Ok(())
    }
}

impl super::Transform {
    /// This transform as it applies to one sample that drew `size` for its `RandomResize` or
    /// `RandomShortestSize`, on an image of `oriented` (width, height): that random resize
    /// replaced by the fixed [`Resize`] it makes. A transform without one is itself.
    pub fn resolved(&self, size: Option<usize>, oriented: (usize, usize)) -> Self {
        let resize = match (size, self.random_resize, self.random_shortest_size) {
            (Some(n), Some(r), _) => r.resize(n),
            (Some(n), None, Some(s)) => s.resize(n, oriented),
            _ => return *self,
        };
        Self {
            resize: Some(resize),
            random_resize: None,
            random_shortest_size: None,
            ..*self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// torchvision's `int(side * r)` in doubles: 480 / 103 scales 103 to 479.99999999999994,
    /// which truncates to 479, where `Resize(480)`'s integer rule gives 480.
    #[test]
    fn shortest_size_truncates_as_torchvision_does() {
        let s = RandomShortestSize::new(&[480], None).unwrap();
        assert_eq!(
            s.resize(480, (200, 103)),
            Resize::Exact {
                width: 932,
                height: 479
            }
        );
        let capped = RandomShortestSize::new(&[800], Some(1000)).unwrap();
        assert_eq!(
            capped.resize(800, (1600, 400)),
            Resize::Exact {
                width: 1000,
                height: 250
            }
        );
        assert!(RandomShortestSize::new(&[], None).is_err());
        assert!(RandomShortestSize::new(&[0], None).is_err());
        assert!(RandomResize {
            min_size: 5,
            max_size: 5
        }
        .check()
        .is_err());
    }
}

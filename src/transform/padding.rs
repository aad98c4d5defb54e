//! `Pad` and `RandomCrop`: the border torchvision's `F.pad` adds to the resized image, and the
//! crop that takes a box of it (`crate::plan::padding` maps its positions).

/// How torchvision's `F.pad` fills the border it adds to a PIL image: a constant (Pillow's
/// `ImageOps.expand`), or `np.pad`'s edge, reflect and symmetric modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PaddingMode {
    /// The fill value.
    Constant,
    /// The edge pixel repeated.
    Edge,
    /// Mirrored about the edge pixel, which is not repeated.
    Reflect,
    /// Mirrored about the edge, whose pixel is repeated.
    Symmetric,
}

impl PaddingMode {
    /// Every mode.
    pub const ALL: [Self; 4] = [Self::Constant, Self::Edge, Self::Reflect, Self::Symmetric];

    /// torchvision's name of the mode (`padding_mode`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Constant => "constant",
            Self::Edge => "edge",
            Self::Reflect => "reflect",
            Self::Symmetric => "symmetric",
        }
    }

    /// The mode torchvision names `name`.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// torchvision `Pad(padding, fill, padding_mode)` of the resized image: `padding` pixels added
/// on its left, top, right and bottom.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pad {
    /// Pixels added on the left, top, right and bottom.
    pub padding: [usize; 4],
    /// The RGB value of the border in the constant mode; default black.
    pub fill: [u8; 3],
    /// How the border is filled.
    pub mode: PaddingMode,
}

/// torchvision `RandomCrop(size, padding, pad_if_needed, fill, padding_mode)` of the resized
/// (and padded) image, in place of `CenterCrop`: the image padded by `padding`, then, with
/// `pad_if_needed`, by the width and height it lacks on both sides, then a box of `size` at a
/// random place of it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RandomCrop {
    /// Output (width, height).
    pub size: (usize, usize),
    /// Pixels added on the left, top, right and bottom first; default none.
    pub padding: [usize; 4],
    /// Whether a side shorter than the crop is padded to it; default off.
    pub pad_if_needed: bool,
    /// The RGB value of the border in the constant mode; default black.
    pub fill: [u8; 3],
    /// How the border is filled; default constant.
    pub mode: PaddingMode,
}

impl RandomCrop {
    /// `RandomCrop(size)`: no padding.
    pub fn new(size: (usize, usize)) -> Self {
        Self {
            size,
            padding: [0; 4],
            pad_if_needed: false,
            fill: [0; 3],
            mode: PaddingMode::Constant,
        }
    }
}

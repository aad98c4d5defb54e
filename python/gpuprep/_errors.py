"""The exceptions gpuprep raises: one class per kind of failure, each a GpuprepError. The Rust
extension raises these very classes, so that a bad option is also a ValueError and an unreadable
file also an OSError, as Python's own are, and tracebacks name them `gpuprep.OptionsError`."""


class GpuprepError(Exception):
    """Every error gpuprep raises."""


class DecodeError(GpuprepError):
    """An image that could not be turned into a tensor."""


class TruncatedError(DecodeError):
    """The file ends early."""


class CorruptError(DecodeError):
    """The file's data is invalid."""


class UnsupportedError(DecodeError):
    """A format or variant gpuprep does not decode."""


class TooLargeError(DecodeError):
    """The image, or what the transform makes of it, passes a limit."""


class OptionsError(GpuprepError, ValueError):
    """Options that do not fit together (a ValueError, as a bad argument to Python's own
    functions is)."""


class LabelError(GpuprepError, ValueError):
    """A sample's label that a batch transform cannot use (MixUp and CutMix need each sample's
    class index)."""


class GpuError(GpuprepError):
    """No GPU, or the GPU failed."""


class HandoffError(GpuError):
    """A batch handed over on the device failed once under way: a CUDA or Vulkan call that
    failed, or a wait that timed out. (Where CUDA or exportable memory is missing, the loader
    hands batches over in host memory instead and says why.)"""


class ReadError(GpuprepError, OSError):
    """A file that could not be read (an OSError, as open()'s are)."""


for _class in (GpuprepError, DecodeError, TruncatedError, CorruptError, UnsupportedError,
               TooLargeError, OptionsError, LabelError, GpuError, HandoffError, ReadError):
    _class.__module__ = "gpuprep"
del _class

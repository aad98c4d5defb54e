//! What each batch of the stream cost, filled in as it is decoded, submitted and landed.

use super::GpuTimings;
use std::time::Duration;

/// What one batch cost.
#[derive(Clone, Debug, Default)]
pub struct BatchStats {
    /// Images in the batch.
    pub images: usize,
    /// Their encoded bytes (the files as given).
    pub bytes_in: u64,
    /// Of them, non-JPEG images, uploaded as pixels: the slower path.
    pub pixel_images: usize,
    /// Bytes uploaded to the GPU (compact coefficients, job records, taps).
    pub bytes_uploaded: u64,
    /// What the same coefficients take as dense 16-bit blocks, for comparison.
    pub dense_coefficient_bytes: u64,
    /// CPU time of entropy decoding and preparing its images, summed over the threads.
    pub decode: Duration,
    /// From packing the batch to its tensors being read back (with a batch in flight, this
    /// overlaps the next batch's packing).
    pub gpu: Duration,
    /// How long the GPU side waited for this batch's images to be decoded (the decoding the
    /// previous batches' GPU work did not hide).
    pub waited: Duration,
    /// How long the consumer of [`super::GpuPipeline::preprocess_on_device`] waited for this batch:
    /// from when it returned from the batch before (or the call began) until it was handed
    /// this one. Zero for [`super::GpuPipeline::preprocess_many`], whose caller gets every result when
    /// the call returns.
    pub consumer_waited: Duration,
    /// From the start of its decoding to its tensors being on the CPU.
    pub latency: Duration,
    /// The loader's timeline, from the start of the call: when the batch's images were all
    /// decoded and gathered,
    pub gathered_at: Duration,
    /// when it was submitted to the GPU (packed, uploaded and recorded),
    pub submitted_at: Duration,
    /// and when it landed (its tensors ready).
    pub landed_at: Duration,
    /// The GPU side's time, phase by phase: the submission's, which the first of the batches
    /// that went together carries (the others' are zero).
    pub gpu_timings: GpuTimings,
    /// How many batches went to the GPU in one submission with this one (itself included).
    pub submitted_with: usize,
}

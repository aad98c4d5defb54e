//! Off Linux a loader hands its batches over in host memory: exported GPU memory (Vulkan's
//! opaque file descriptors) is implemented on Linux only, so no device ring is ever made and
//! these types have no values.

/// A batch in a GPU buffer of its loader's: never made off Linux.
#[derive(Debug)]
pub enum DeviceArray {}

impl DeviceArray {
    /// The buffer.
    pub fn buffer(&self) -> &wgpu::Buffer {
        match *self {}
    }

    /// The batch's bytes.
    pub fn len_bytes(&self) -> u64 {
        match *self {}
    }

    /// The CUDA device pointer.
    pub fn cuda_pointer(&self) -> Option<u64> {
        match *self {}
    }

    /// Makes a CUDA stream wait for the batch.
    pub fn wait_on(&self, _stream: usize) -> Result<(), crate::HandoffError> {
        match *self {}
    }

    /// Lets go of the batch once a CUDA stream's work so far has run.
    pub fn release_after(&mut self, _stream: usize) -> Result<(), crate::HandoffError> {
        match *self {}
    }

    /// The batch's bytes, copied to the host.
    pub fn to_host(&self) -> crate::Result<Vec<u8>> {
        match *self {}
    }

    pub(crate) fn set_ready(&mut self, _value: u64) {
        match *self {}
    }

    pub(crate) fn set_len(&mut self, _len: u64) {
        match *self {}
    }
}

/// A loader's ring of device arrays: never made off Linux.
pub(crate) enum DeviceRing {}

impl DeviceRing {
    pub(crate) fn made(&self) -> usize {
        match *self {}
    }

    pub(crate) fn take(
        self: &std::sync::Arc<Self>,
        _capacity: u64,
        _len: u64,
    ) -> Result<DeviceArray, crate::HandoffError> {
        match **self {}
    }

    pub(crate) fn submit(&self, _commands: wgpu::CommandBuffer) -> u64 {
        match *self {}
    }
}

//! Every submission gpuprep makes goes through here, one at a time in the process: a CUDA
//! hand-off's timeline signal is staged on the queue for its next submission (Vulkan adds it to
//! that `vkQueueSubmit`), so no other of gpuprep's threads may submit between the staging and
//! the submission it was staged for (a loader's stream running on while another loader, or a
//! batch read back, submits on the same device).

use std::sync::{Mutex, MutexGuard};

static SUBMITTING: Mutex<()> = Mutex::new(());

/// Holds every other submission of gpuprep's back while it lives.
pub(crate) fn submitting() -> MutexGuard<'static, ()> {
    SUBMITTING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Submits `commands` on `queue`, no other submission of gpuprep's beside it.
pub(crate) fn submit(
    queue: &wgpu::Queue,
    commands: impl IntoIterator<Item = wgpu::CommandBuffer>,
) -> wgpu::SubmissionIndex {
    let _alone = submitting();
    queue.submit(commands)
}

//! Upload staging buffers kept mapped between batches.
//!
//! A buffer created mapped for a one-off upload costs a fresh host allocation that wgpu fills
//! with zeros before the caller writes a byte, on the thread that feeds the GPU; with Huffman
//! decoding on the GPU that thread is on the critical path. Instead, each batch writes into a
//! `MAP_WRITE | COPY_SRC` buffer of this ring, whose pages are already there, and the GPU copies
//! it into a pooled device buffer; once that copy is submitted, the buffer is mapped again in
//! the background (the mapping completes when the copy has run).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The ring. `Send + Sync`: the GPU side may run on any thread.
#[derive(Default)]
pub(crate) struct StagingRing {
    buffers: Mutex<Vec<Staging>>,
}

/// A kept staging buffer, and whether its mapping has completed (it is then free to write).
struct Staging {
    buffer: wgpu::Buffer,
    mapped: Arc<AtomicBool>,
}

impl StagingRing {
    /// Buffers kept at most (two batches are in flight at a time); the smallest go first.
    const KEEP: usize = 4;

    /// A mapped staging buffer of at least `size` bytes: a kept one whose mapping has
    /// completed, or a new one, mapped at creation, its size rounded up to a power of two so
    /// that it can serve later batches.
    pub fn take(&self, device: &wgpu::Device, size: u64) -> wgpu::Buffer {
        let size = size.next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT).max(4);
        {
            let mut buffers = self.buffers.lock().unwrap_or_else(|e| e.into_inner());
            let ready = buffers
                .iter()
                .enumerate()
                .filter(|(_, s)| s.mapped.load(Ordering::Acquire) && s.buffer.size() >= size)
                .min_by_key(|(_, s)| s.buffer.size())
                .map(|(i, _)| i);
            if let Some(i) = ready {
                return buffers.swap_remove(i).buffer;
            }
        }
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("upload staging"),
            size: size
                .next_power_of_two()
                .min(device.limits().max_buffer_size)
                .max(size),
            usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: true,
        })
    }

    /// Takes `buffer` back, unmapped, once the submission that copies out of it is submitted:
    /// maps it again in the background for a later [`StagingRing::take`].
    pub fn put(&self, buffer: wgpu::Buffer) {
        let mapped = Arc::new(AtomicBool::new(false));
        let done = mapped.clone();
        buffer
            .slice(..)
            .map_async(wgpu::MapMode::Write, move |result| {
                done.store(result.is_ok(), Ordering::Release);
            });
        let mut buffers = self.buffers.lock().unwrap_or_else(|e| e.into_inner());
        buffers.push(Staging { buffer, mapped });
        if buffers.len() > Self::KEEP {
            let smallest = (0..buffers.len())
                .min_by_key(|&i| buffers[i].buffer.size())
                .unwrap_or(0);
            buffers.swap_remove(smallest);
        }
    }

    /// Bytes of the buffers kept now.
    pub fn bytes(&self) -> u64 {
        let buffers = self.buffers.lock().unwrap_or_else(|e| e.into_inner());
        buffers.iter().map(|s| s.buffer.size()).sum()
    }
}

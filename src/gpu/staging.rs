//! Upload staging buffers kept mapped between batches.
//!
//! A buffer created mapped for a one-off upload costs a fresh host allocation that wgpu fills
//! with zeros before the caller writes a byte, on the thread that feeds the GPU; with Huffman
//! decoding on the GPU that thread is on the critical path. Instead, each batch writes into a
//! `MAP_WRITE | COPY_SRC` buffer of this ring, whose pages are already there, and the GPU copies
//! it into a pooled device buffer; once that copy is submitted, the buffer is mapped again in
//! the background (the mapping completes when the copy has run).

use crate::error::{Error, GpuError, Result};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    /// Buffers kept at most (one being written while the submissions in flight run, see
    /// `stream::IN_FLIGHT`); the smallest go first.
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

/// An upload's parts written into a mapped staging buffer side by side, by the copy threads
/// and by the thread that records the batch once it has recorded: at the start of a call the
/// copy threads compete with every decoding thread for the cores, and the recording thread
/// need not wait for them to be scheduled.
pub(crate) struct UploadWrite<'a> {
    staging: &'a wgpu::Buffer,
    /// Each part's first byte in `staging` and its words, largest first.
    parts: Vec<(u64, &'a [u32])>,
    /// The next part to take.
    next: AtomicUsize,
    failed: Mutex<Option<Error>>,
    started: Instant,
    /// When the last part written so far was done.
    done: Mutex<Instant>,
}

impl<'a> UploadWrite<'a> {
    /// Writes `parts` (first byte, words) into `staging`.
    pub fn new(staging: &'a wgpu::Buffer, mut parts: Vec<(u64, &'a [u32])>) -> Self {
        parts.retain(|(_, words)| !words.is_empty());
        parts.sort_unstable_by_key(|(_, words)| std::cmp::Reverse(words.len()));
        let started = Instant::now();
        Self {
            staging,
            parts,
            next: AtomicUsize::new(0),
            failed: Mutex::new(None),
            started,
            done: Mutex::new(started),
        }
    }

    /// Runs `meanwhile` on this thread while `copiers` write, then helps them with the parts
    /// left; returns once every part is written, with `meanwhile`'s result.
    pub fn run<R>(&self, copiers: &rayon::ThreadPool, meanwhile: impl FnOnce() -> R) -> R {
        copiers.in_place_scope(|scope| {
            for _ in 0..copiers.current_num_threads().min(self.parts.len()) {
                scope.spawn(|_| self.help());
            }
            let result = meanwhile();
            self.help();
            result
        })
    }

    /// How long writing took, from [`Self::new`] to the last part; or why it failed.
    pub fn finish(self) -> Result<Duration> {
        let failed = self.failed.into_inner().unwrap_or_else(|e| e.into_inner());
        let done = self.done.into_inner().unwrap_or_else(|e| e.into_inner());
        failed.map_or(Ok(done - self.started), Err)
    }

    /// Takes parts and writes them until none is left.
    fn help(&self) {
        while let Some(&(at, words)) = self.parts.get(self.next.fetch_add(1, Ordering::Relaxed)) {
            let written = self
                .staging
                .slice(at..at + words.len() as u64 * 4)
                .get_mapped_range_mut()
                .map(|mut range| range.copy_from_slice(bytemuck::cast_slice(words)));
            if let Err(e) = written {
                let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
                failed.get_or_insert(GpuError::from(e).into());
            }
            let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
            *done = (*done).max(Instant::now());
        }
    }
}

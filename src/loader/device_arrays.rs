//! The GPU-resident batch arrays of a loader that hands its batches over on the device: each
//! step's tensors are copied, GPU to GPU, into one buffer of the loader's ring, in sample
//! order, and the batch is that buffer. Handed to CUDA, the buffer's memory was allocated
//! exportable and is imported once into CUDA (a device pointer), and the loader's timeline
//! semaphore, imported too, tells a consumer's stream when a batch's copies have run.
//!
//! The lifetime rules are the host ring's: a batch held keeps its buffer; a dropped one goes
//! back to the ring and a later step lands in it. A CUDA consumer says when it let go with an
//! event on its stream ([`DeviceArray::release_after`]); the buffer is written again only once
//! that event has completed, so work queued on the tensor before it was dropped still reads
//! the batch it was given.

use super::lock;
use crate::cuda::{Cuda, CudaEvent, CudaMemory, CudaTimeline, Stream};
use crate::error::{HandoffError, Result};
use crate::gpu::external::{Exporter, Timeline};
use crate::gpu::read_buffer;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The CUDA side of a ring: the device, and gpuprep's timeline as both APIs see it.
pub(crate) struct CudaLink {
    cuda: Arc<Cuda>,
    /// Raised by the submissions that fill batches.
    pub(crate) timeline: Timeline,
    imported: CudaTimeline,
}

impl CudaLink {
    /// CUDA device `device` linked to `exporter`'s device: the same GPU (by UUID), and the
    /// timeline imported; or why not.
    pub(crate) fn new(exporter: &Exporter, device: u32) -> Result<Self, HandoffError> {
        let cuda = Cuda::open(device)?;
        let uuid = cuda.uuid()?;
        if uuid != exporter.uuid() {
            return Err(HandoffError::OtherGpu {
                device,
                cuda_uuid: uuid,
                vulkan_uuid: exporter.uuid(),
            });
        }
        let mut timeline = exporter.timeline()?;
        let fd = timeline
            .fd
            .take()
            .ok_or(HandoffError::NoFileDescriptor("timeline"))?;
        let imported = cuda.import_timeline(fd)?;
        Ok(Self {
            cuda,
            timeline,
            imported,
        })
    }

    /// The CUDA device's ordinal.
    pub(crate) fn device(&self) -> u32 {
        self.cuda.device()
    }
}

/// One loader's free device arrays.
pub(crate) struct DeviceRing {
    device: wgpu::Device,
    queue: wgpu::Queue,
    /// Exportable buffers where the device can make them; plain wgpu buffers otherwise.
    exporter: Option<Exporter>,
    /// Where the arrays are imported into CUDA.
    cuda: Option<CudaLink>,
    /// Oldest given back first: the consumer's work on it is the likeliest to have run.
    free: Mutex<VecDeque<Slab>>,
    /// Arrays alive at most (free or handed out) while a free one must still be waited for.
    keep: usize,
    made: AtomicUsize,
    alive: AtomicUsize,
}

/// A buffer of the ring, with its CUDA mapping and the event its last reader let go at.
struct Slab {
    /// Before `buffer`: the CUDA mapping goes first.
    cuda: Option<CudaMemory>,
    buffer: wgpu::Buffer,
    released: Option<CudaEvent>,
}

impl DeviceRing {
    /// A ring of `keep` free arrays on `device`, imported into CUDA through `cuda`.
    pub(crate) fn new(
        (device, queue): (&wgpu::Device, &wgpu::Queue),
        exporter: Option<Exporter>,
        cuda: Option<CudaLink>,
        keep: usize,
    ) -> Arc<Self> {
        Arc::new(Self {
            device: device.clone(),
            queue: queue.clone(),
            exporter,
            cuda,
            free: Mutex::default(),
            keep,
            made: AtomicUsize::new(0),
            alive: AtomicUsize::new(0),
        })
    }

    /// Arrays made so far.
    pub(crate) fn made(&self) -> usize {
        self.made.load(Ordering::Relaxed)
    }

    /// An array of `capacity` bytes, `len` of them the batch's: a free one of that capacity
    /// whose last reader is done with it; else, while fewer than `keep` are alive, a new one;
    /// else the one given back first, once its last reader is done. The thread that takes
    /// arrays feeds the GPU: it waits for a consumer's work only when the ring is full.
    pub(crate) fn take(
        self: &Arc<Self>,
        capacity: u64,
        len: u64,
    ) -> Result<DeviceArray, HandoffError> {
        let reused = {
            let mut free = lock(&self.free);
            let fits = |s: &Slab| s.buffer.size() == capacity;
            let done = free.iter().position(|s| fits(s) && s.released_done());
            let full = self.alive.load(Ordering::Relaxed) >= self.keep;
            match done {
                Some(i) => free.remove(i),
                None if full => free.iter().position(fits).and_then(|i| free.remove(i)),
                None => None,
            }
        };
        let mut slab = match reused {
            Some(slab) => slab,
            None => {
                let slab = self.make(capacity)?;
                self.alive.fetch_add(1, Ordering::Relaxed);
                slab
            }
        };
        if let Some(event) = slab.released.take() {
            event.synchronize()?;
        }
        Ok(DeviceArray {
            slab: Some(slab),
            len,
            ready: 0,
            ring: Arc::clone(self),
        })
    }

    fn make(&self, capacity: u64) -> Result<Slab, HandoffError> {
        self.made.fetch_add(1, Ordering::Relaxed);
        let Some(exporter) = &self.exporter else {
            return Ok(Slab {
                cuda: None,
                buffer: self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("batch"),
                    size: capacity,
                    usage: wgpu::BufferUsages::STORAGE
                        | wgpu::BufferUsages::COPY_SRC
                        | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                }),
                released: None,
            });
        };
        let mut exported = exporter.buffer(capacity)?;
        let cuda = match &self.cuda {
            Some(link) => {
                let fd = exported
                    .fd
                    .take()
                    .ok_or(HandoffError::NoFileDescriptor("buffer"))?;
                Some(link.cuda.import_memory(fd, exported.allocation, capacity)?)
            }
            None => None,
        };
        Ok(Slab {
            cuda,
            buffer: exported.buffer,
            released: None,
        })
    }

    /// Submits `commands` (copies into this ring's arrays); the timeline value they signal
    /// (0 where the arrays are not handed to CUDA: a consumer on this device's queue needs
    /// none).
    pub(crate) fn submit(&self, commands: wgpu::CommandBuffer) -> u64 {
        match &self.cuda {
            Some(link) => link.timeline.submit(&self.queue, commands),
            None => {
                crate::gpu::submit(&self.queue, [commands]);
                0
            }
        }
    }

    fn give_back(&self, slab: Slab) {
        let mut free = lock(&self.free);
        if free.len() < self.keep {
            free.push_back(slab);
        } else {
            self.alive.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// A batch's elements, C order, in a GPU buffer of its loader's ring; dropped, it goes back to
/// the ring (or, past the ring's room, is freed). The ring outlives the loader while any of its
/// arrays does.
pub struct DeviceArray {
    slab: Option<Slab>,
    len: u64,
    ready: u64,
    /// Its ring, which lives as long as any of its arrays (a batch may outlive its loader).
    ring: Arc<DeviceRing>,
}

impl DeviceArray {
    fn slab(&self) -> &Slab {
        self.slab.as_ref().expect("a live array has its buffer")
    }

    /// The buffer, on the loader's wgpu device (`STORAGE | COPY_SRC | COPY_DST`); work
    /// submitted on that device's queue after the batch was handed over sees its elements.
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.slab().buffer
    }

    /// The batch's bytes, from the buffer's start.
    pub fn len_bytes(&self) -> u64 {
        self.len
    }

    /// The CUDA device pointer of its first byte, where the loader hands over to CUDA.
    pub fn cuda_pointer(&self) -> Option<u64> {
        self.slab().cuda.as_ref().map(CudaMemory::pointer)
    }

    /// Makes CUDA `stream`'s later work wait until the batch's copies have run (what a
    /// consumer does before reading it: DLPack's `__dlpack__(stream)`).
    pub fn wait_on(&self, stream: Stream) -> Result<(), HandoffError> {
        let link = self.ring.cuda.as_ref().ok_or(HandoffError::NotInCuda)?;
        link.imported.wait_on(stream, self.ready)
    }

    /// Records that the consumer lets go of the batch once the work queued on `stream` so far
    /// has run: the buffer is not written again before that.
    pub fn release_after(&mut self, stream: Stream) -> Result<(), HandoffError> {
        let link = self.ring.cuda.as_ref().ok_or(HandoffError::NotInCuda)?;
        let event = link.cuda.record_event(stream)?;
        if let Some(slab) = self.slab.as_mut() {
            slab.released = Some(event);
        }
        Ok(())
    }

    /// The batch's bytes, copied back to the host (for checking: a consumer on the device reads
    /// the buffer in place).
    pub fn to_host(&self) -> Result<Vec<u8>> {
        let ring = &self.ring;
        let size = self.len.max(4).next_multiple_of(4);
        let readback = ring.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("batch read back"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = ring.device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(self.buffer(), 0, &readback, 0, size);
        let submission = crate::gpu::submit(&ring.queue, [encoder.finish()]);
        let len = self.len as usize;
        read_buffer(&ring.device, &readback, size, submission, |b| {
            b[..len].to_vec()
        })
    }

    /// The timeline value the batch's copies signal (0 where there is no timeline).
    pub(crate) fn set_ready(&mut self, value: u64) {
        self.ready = value;
    }

    pub(crate) fn set_len(&mut self, len: u64) {
        self.len = len;
    }
}

impl std::fmt::Debug for DeviceArray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceArray")
            .field("bytes", &self.len)
            .field("cuda_pointer", &self.cuda_pointer())
            .finish()
    }
}

impl Drop for DeviceArray {
    fn drop(&mut self) {
        if let Some(slab) = self.slab.take() {
            self.ring.give_back(slab);
        }
    }
}

impl Slab {
    /// Whether its last reader is done with it (a failed query counts as done: waiting on the
    /// event then says why).
    fn released_done(&self) -> bool {
        self.released
            .as_ref()
            .is_none_or(|event| event.is_done().unwrap_or(true))
    }
}

impl Drop for Slab {
    fn drop(&mut self) {
        // Freed (unmapped from CUDA first): not before its last reader is done.
        if let Some(event) = &self.released {
            let _ = event.synchronize();
        }
    }
}

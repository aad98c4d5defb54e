//! The arrays the GPU loader's batches land in, reused: a batch's array goes back to its
//! loader's ring when the batch (or the tensor a binding made of it) is dropped, and the next
//! step lands in it. Its pages are faulted in once instead of at every step (a batch of 256
//! training tensors is 154 MB), and, when the loader was asked to pin memory, page-locked for a
//! CUDA device once ([`Cuda::lock`]: tens of milliseconds per array), so that the batch is
//! handed over pinned without a copy.

use super::lock;
use crate::cuda::Cuda;
use crate::tensor::TensorData;
use crate::transform::DType;
use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// How a loader's batch arrays are held in memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostMemory {
    /// Ordinary pageable memory, as asked.
    Pageable,
    /// Page-locked for this CUDA device.
    PageLocked {
        /// The device's ordinal.
        device: u32,
    },
    /// Page-locking was asked for but cannot be had (no CUDA driver, no such device, the
    /// driver refused): pageable, and why.
    PageableBecause(crate::HandoffError),
}

impl std::fmt::Display for HostMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Pageable => write!(f, "pageable host memory"),
            Self::PageLocked { device } => {
                write!(f, "host memory page-locked for CUDA device {device}")
            }
            Self::PageableBecause(why) => write!(f, "pageable host memory ({why})"),
        }
    }
}

/// One loader's free batch arrays.
pub(crate) struct Ring {
    free: Mutex<Vec<Free>>,
    /// The device arrays are page-locked for, while that works.
    cuda: Option<Arc<Cuda>>,
    /// What became of the page-locking asked for: `PageableBecause` once a lock fails (and no
    /// array is locked after that).
    memory: Mutex<HostMemory>,
    /// Free arrays kept; one returned past that is freed.
    keep: usize,
    /// Arrays allocated so far (every other take reused one).
    made: AtomicUsize,
}

/// A free array, and whether it is page-locked (for the ring's device).
struct Free {
    data: TensorData,
    locked: bool,
}

impl Ring {
    /// A ring keeping up to `keep` free arrays, page-locked for CUDA device `pin` when given
    /// and it can be had.
    pub(crate) fn new(keep: usize, pin: Option<u32>) -> Arc<Self> {
        let (cuda, memory) = match pin.map(Cuda::open) {
            None => (None, HostMemory::Pageable),
            Some(Ok(cuda)) => {
                let device = cuda.device();
                (Some(cuda), HostMemory::PageLocked { device })
            }
            Some(Err(why)) => (None, HostMemory::PageableBecause(why)),
        };
        Arc::new(Self {
            free: Mutex::default(),
            cuda,
            memory: Mutex::new(memory),
            keep,
            made: AtomicUsize::new(0),
        })
    }

    /// How the arrays are held.
    pub(crate) fn memory(&self) -> HostMemory {
        lock(&self.memory).clone()
    }

    /// Arrays allocated so far.
    pub(crate) fn made(&self) -> usize {
        self.made.load(Ordering::Relaxed)
    }

    /// An array of `len` elements of `dtype` with room for `capacity`: a free one of that
    /// dtype and capacity when there is one (its elements are what its last batch left), else a
    /// new zeroed one, page-locked if the ring pins.
    pub(crate) fn take(self: &Arc<Self>, dtype: DType, capacity: usize, len: usize) -> BatchArray {
        let reused = {
            let mut free = lock(&self.free);
            let fits = free
                .iter()
                .position(|f| f.data.dtype() == dtype && f.data.capacity() == capacity);
            fits.map(|i| free.swap_remove(i))
        };
        let Free { mut data, locked } = reused.unwrap_or_else(|| {
            self.made.fetch_add(1, Ordering::Relaxed);
            Free {
                data: TensorData::zeroed(dtype, capacity),
                locked: false,
            }
        });
        data.resize(capacity);
        let mut array = BatchArray {
            data,
            home: Arc::downgrade(self),
            locked: None,
        };
        array.locked = match &self.cuda {
            Some(cuda) if locked => Some(cuda.clone()),
            Some(cuda) => self.lock_all_of(cuda, &mut array.data),
            None => None,
        };
        array.data.truncate(len);
        array
    }

    /// Page-locks the whole of `data` (its length is its capacity), unless an earlier lock
    /// failed; a failure is the ring's [`HostMemory::PageableBecause`].
    fn lock_all_of(&self, cuda: &Arc<Cuda>, data: &mut TensorData) -> Option<Arc<Cuda>> {
        let mut memory = lock(&self.memory);
        if !matches!(*memory, HostMemory::PageLocked { .. }) {
            return None;
        }
        match cuda.lock(data.bytes_mut()) {
            Ok(()) => Some(cuda.clone()),
            Err(why) => {
                *memory = HostMemory::PageableBecause(why);
                None
            }
        }
    }

    /// Takes `data` back while there is room.
    fn give_back(&self, data: TensorData, locked: bool) -> Result<(), TensorData> {
        let mut free = lock(&self.free);
        if free.len() < self.keep {
            free.push(Free { data, locked });
            Ok(())
        } else {
            Err(data)
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        let free = std::mem::take(self.free.get_mut().unwrap_or_else(|e| e.into_inner()));
        for Free { data, locked } in free {
            release(data, self.cuda.as_ref().filter(|_| locked));
        }
    }
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Ring({})", self.memory())
    }
}

/// A batch's elements, C order, in an array of its loader's ring (or of its own, for batches
/// made on the CPU); dropped, it goes back to the ring (or, past the ring's room or after the
/// loader, is freed).
pub struct BatchArray {
    data: TensorData,
    home: Weak<Ring>,
    /// The device the array is page-locked for: its whole capacity, at its address.
    locked: Option<Arc<Cuda>>,
}

impl BatchArray {
    /// An array of no ring's: freed when dropped.
    pub(crate) fn own(data: TensorData) -> Self {
        Self {
            data,
            home: Weak::new(),
            locked: None,
        }
    }

    /// Whether it is page-locked for a CUDA device.
    pub fn is_page_locked(&self) -> bool {
        self.locked.is_some()
    }

    /// The elements as native-endian bytes, to write in place (the array's length and place
    /// stay fixed: page-locking is tied to its address).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.data.bytes_mut()
    }

    /// The elements, as an array of their own: moved out of an array that is not page-locked,
    /// copied out of one that is (its memory stays the ring's).
    pub fn into_data(mut self) -> TensorData {
        if self.locked.is_some() {
            return self.data.clone();
        }
        self.home = Weak::new();
        std::mem::replace(&mut self.data, TensorData::U8(Vec::new()))
    }

    /// Elements it holds now.
    pub fn len_elements(&self) -> usize {
        self.data.as_bytes().len() / self.data.dtype().size()
    }

    /// The elements, to close up or truncate (never to grow: that could move them; see
    /// [`Self::resize`]).
    pub(crate) fn data_mut(&mut self) -> &mut TensorData {
        &mut self.data
    }

    /// Cuts or grows it to `len` elements: `false` (and unchanged) where a page-locked array
    /// would grow past its capacity, which would move its elements out of the locked pages.
    pub(crate) fn resize(&mut self, len: usize) -> bool {
        if self.is_page_locked() && len > self.data.capacity() {
            return false;
        }
        self.data.resize(len);
        true
    }
}

impl Deref for BatchArray {
    type Target = TensorData;
    fn deref(&self) -> &TensorData {
        &self.data
    }
}

impl std::fmt::Debug for BatchArray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchArray")
            .field("dtype", &self.data.dtype())
            .field("bytes", &self.data.as_bytes().len())
            .field("page_locked", &self.is_page_locked())
            .finish()
    }
}

impl Drop for BatchArray {
    fn drop(&mut self) {
        let data = std::mem::replace(&mut self.data, TensorData::U8(Vec::new()));
        let locked = self.locked.take();
        let Some(ring) = self.home.upgrade() else {
            return release(data, locked.as_ref());
        };
        if let Err(data) = ring.give_back(data, locked.is_some()) {
            release(data, locked.as_ref());
        }
    }
}

/// Frees `data`, unlocking it first when it is locked for `locked`.
fn release(data: TensorData, locked: Option<&Arc<Cuda>>) {
    if let Some(cuda) = locked {
        let address = data.as_bytes().as_ptr().cast_mut();
        if cuda.unlock(address).is_err() {
            // Memory the driver may still hold locked must not go back to the allocator, which
            // could hand it to anything: it stays allocated.
            std::mem::forget(data);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(array: &BatchArray) -> usize {
        array.as_bytes().as_ptr() as usize
    }

    #[test]
    fn a_dropped_array_is_the_next_one_taken() {
        let ring = Ring::new(2, None);
        let mut first = ring.take(DType::F32, 8, 8);
        first.bytes_mut()[..4].copy_from_slice(&1.5f32.to_ne_bytes());
        let at = address(&first);
        drop(first);
        let again = ring.take(DType::F32, 8, 6);
        assert_eq!(address(&again), at, "the array came back");
        assert_eq!(again.len_elements(), 6);
        // What the last batch left stays until the next one writes it.
        assert_eq!(again.as_bytes()[..4], 1.5f32.to_ne_bytes());
        assert_eq!(ring.memory(), HostMemory::Pageable);
    }

    #[test]
    fn an_array_held_keeps_its_memory() {
        let ring = Ring::new(2, None);
        let mut held = ring.take(DType::U8, 16, 16);
        held.bytes_mut().fill(7);
        let next = ring.take(DType::U8, 16, 16);
        assert_ne!(
            address(&next),
            address(&held),
            "a held array is not handed out again"
        );
        drop(next);
        let mut after = ring.take(DType::U8, 16, 16);
        after.bytes_mut().fill(9);
        assert_eq!(held.as_bytes(), &[7u8; 16][..]);
        // Another dtype or size is never given an array that does not fit.
        let other = ring.take(DType::F16, 16, 16);
        assert_ne!(address(&other), address(&after));
        assert_eq!(other.dtype(), DType::F16);
    }

    #[test]
    fn the_ring_keeps_only_its_room_and_outlives_nothing() {
        let ring = Ring::new(1, None);
        let (a, b) = (ring.take(DType::U8, 4, 4), ring.take(DType::U8, 4, 4));
        let at_a = address(&a);
        drop(a);
        drop(b); // no room: freed
        assert_eq!(lock(&ring.free).len(), 1);
        let c = ring.take(DType::U8, 4, 4);
        assert_eq!(address(&c), at_a);
        assert_eq!(ring.made(), 2);
        assert!(lock(&ring.free).is_empty());
        // An array dropped after its ring is freed, not returned.
        drop(ring);
        drop(c);
        // An array of its own moves its elements out.
        let own = BatchArray::own(TensorData::U8(vec![1, 2, 3]));
        assert_eq!(own.into_data(), TensorData::U8(vec![1, 2, 3]));
    }

    /// Without a CUDA driver (CI's machines) page-locking falls back to pageable memory and
    /// says why; with one (an NVIDIA machine) every array taken is page-locked.
    #[test]
    fn pinning_locks_each_array_or_says_why_not() {
        let ring = Ring::new(2, Some(0));
        let mut array = ring.take(DType::F32, 1 << 16, 1 << 16);
        array.bytes_mut().fill(1);
        match Cuda::open(0) {
            Err(why) => {
                assert_eq!(ring.memory(), HostMemory::PageableBecause(why.clone()));
                assert!(!array.is_page_locked());
                assert!(ring.memory().to_string().contains(&why.to_string()));
            }
            Ok(_) => {
                assert_eq!(ring.memory(), HostMemory::PageLocked { device: 0 });
                assert!(array.is_page_locked());
                let at = address(&array);
                drop(array);
                let again = ring.take(DType::F32, 1 << 16, 100);
                assert_eq!(address(&again), at);
                assert!(again.is_page_locked(), "locked once, for good");
                // Copied out of a locked array, not moved: its memory stays locked.
                assert_eq!(
                    again.into_data(),
                    TensorData::F32(vec![f32::from_ne_bytes([1; 4]); 100])
                );
            }
        }
    }
}

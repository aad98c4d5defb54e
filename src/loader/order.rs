//! Which samples a rank reads in an epoch, and in what order: torch's `DistributedSampler`
//! semantics over a permutation drawn from the run's seed and the epoch.

use crate::plan::random::{Op, SampleKey, Stream};

/// How an epoch's samples are ordered and split between ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    /// Draw a permutation per epoch (else the dataset's order).
    pub shuffle: bool,
    /// The seed of the permutation (the transform's parameters use their own streams).
    pub seed: u64,
    /// This process's rank, below `world_size`.
    pub rank: usize,
    /// Processes sharing the dataset.
    pub world_size: usize,
    /// Drop the tail that does not divide evenly between ranks (else pad with the first
    /// samples again), as `DistributedSampler(drop_last=...)` does.
    pub drop_last: bool,
}

impl Split {
    /// The samples one process reads alone, in order.
    pub fn single(shuffle: bool, seed: u64) -> Self {
        Self {
            shuffle,
            seed,
            rank: 0,
            world_size: 1,
            drop_last: false,
        }
    }

    /// Samples each rank reads in an epoch of a dataset of `n` (`DistributedSampler.num_samples`).
    pub fn per_rank(&self, n: usize) -> usize {
        let world = self.world_size.max(1);
        if self.drop_last && !n.is_multiple_of(world) {
            // torch's ceil((n - world) / world), which is this when world does not divide n.
            n / world
        } else {
            n.div_ceil(world)
        }
    }

    /// The dataset indices this rank reads in `epoch`, for a dataset of `n` samples:
    /// `DistributedSampler.__iter__` with our permutation in place of torch's `randperm`
    /// (padding repeats the list's head, as often as needed; then every `world_size`-th index
    /// from `rank`).
    pub fn indices(&self, n: usize, epoch: u64) -> Vec<u64> {
        let world = self.world_size.max(1);
        let mut order: Vec<u64> = (0..n as u64).collect();
        if self.shuffle {
            shuffle(&mut order, &mut self.stream(epoch));
        }
        let total = self.per_rank(n) * world;
        if total <= order.len() {
            order.truncate(total);
        } else if !order.is_empty() {
            let head = order.clone();
            while order.len() < total {
                let more = (total - order.len()).min(head.len());
                order.extend_from_slice(&head[..more]);
            }
        }
        order.into_iter().skip(self.rank).step_by(world).collect()
    }

    /// The stream an epoch's orders are drawn from (shared by every rank, so that they split
    /// one permutation).
    pub(crate) fn stream(&self, epoch: u64) -> Stream {
        let key = SampleKey {
            seed: self.seed,
            epoch,
            index: 0,
        };
        Stream::new(key, Op::Shuffle)
    }
}

impl Split {
    /// The stream of this rank's shuffle buffer in `epoch` (a stream of its own per rank).
    pub(crate) fn buffer_stream(&self, epoch: u64) -> Stream {
        let key = SampleKey {
            seed: self.seed,
            epoch,
            index: self.rank as u64 + 1,
        };
        Stream::new(key, Op::Shuffle)
    }
}

impl Split {
    /// The stream this rank draws resampled shards from in `epoch` (a stream of its own per
    /// rank, apart from the buffers' streams).
    pub(crate) fn resample_stream(&self, epoch: u64) -> Stream {
        let key = SampleKey {
            seed: self.seed,
            epoch,
            index: (1 << 63) | self.rank as u64,
        };
        Stream::new(key, Op::Shuffle)
    }
}

/// A uniform shuffle of `items` (Fisher–Yates from the last place down, as
/// `Stream::permutation`).
pub(crate) fn shuffle<T>(items: &mut [T], stream: &mut Stream) {
    for i in (1..items.len()).rev() {
        let j = stream.below(i as u64 + 1) as usize;
        items.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A few of `DistributedSampler(range(n), num_replicas=w, rank=r, shuffle=False,
    /// drop_last=d)`'s lists; tests/loader.rs holds the split to 96 cases recorded from torch.
    #[test]
    fn unshuffled_splits_equal_distributed_sampler() {
        let split = |rank, world_size, drop_last| Split {
            shuffle: false,
            seed: 0,
            rank,
            world_size,
            drop_last,
        };
        assert_eq!(split(0, 3, false).indices(10, 0), [0, 3, 6, 9]);
        assert_eq!(split(1, 3, false).indices(10, 0), [1, 4, 7, 0]);
        assert_eq!(split(2, 3, false).indices(10, 0), [2, 5, 8, 1]);
        assert_eq!(split(2, 3, true).indices(10, 0), [2, 5, 8]);
        // More ranks than samples: the list repeats.
        assert_eq!(split(3, 4, false).indices(2, 0), [1]);
    }

    #[test]
    fn shuffled_ranks_cover_every_index_once_per_epoch() {
        for n in [1, 7, 100, 101] {
            for world_size in [1, 2, 3, 8] {
                for epoch in 0..3 {
                    let mut all: Vec<u64> = (0..world_size)
                        .flat_map(|rank| {
                            Split {
                                shuffle: true,
                                seed: 42,
                                rank,
                                world_size,
                                drop_last: false,
                            }
                            .indices(n, epoch)
                        })
                        .collect();
                    let total = all.len();
                    all.sort_unstable();
                    all.dedup();
                    assert_eq!(all.len(), n, "n {n}, world {world_size}");
                    assert_eq!(total, n.div_ceil(world_size) * world_size);
                }
            }
        }
        let one = Split::single(true, 42);
        assert_ne!(
            one.indices(100, 0),
            one.indices(100, 1),
            "a new order each epoch"
        );
        assert_eq!(one.indices(100, 3), one.indices(100, 3));
    }
}

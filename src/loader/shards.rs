//! WebDataset shards as a loader's samples: each epoch the rank's shards (its split of the
//! epoch's shard order, as webdataset's `split_by_node`, or resampled), read as streams a few
//! ahead, their samples through the shuffle buffer, up to the samples every rank reads.
//!
//! Each shard gives exactly the samples it was counted (or indexed) to hold, failures standing
//! for those it does not give, so that a pass's order rests on the counts alone: a resumed
//! epoch works out from them which shards' samples all came before the step it resumes at, and
//! does not read those shards again.

use super::feeder::{Batcher, Dataset, Feeder, RawSample, ShuffleBuffer};
use super::order::{self, Split};
use super::shard_index::Shard;
use super::{fetch, webdataset};
use crate::error::{Error, Result};
use std::collections::{HashMap, VecDeque};
use std::ops::ControlFlow;

/// Shards opened ahead of the one being read (a remote one holds at most 24 MiB ahead).
const SHARDS_AHEAD: usize = 3;

/// WebDataset shards, each read as a stream, their samples counted up front.
pub(super) struct Shards(pub Vec<Shard>);

/// Where a pass's samples go: to the batcher, or (working out what a resumed epoch need not
/// read) to a tally.
type Out<'a> = &'a mut dyn FnMut(RawSample) -> ControlFlow<()>;

impl Dataset for Shards {
    fn samples(&self) -> usize {
        self.0.iter().map(|s| s.samples as usize).sum()
    }

    /// A rank whose shards hold more than `per_rank` stops there (see
    /// [`super::Loader::unread_per_epoch`]); with shards shuffled, which rank that is changes
    /// from epoch to epoch.
    fn unread(&self, split: Split, per_rank: usize) -> Option<usize> {
        if split.shuffle {
            return None;
        }
        let rank_samples = |rank: usize| -> usize {
            let mine = self.0.iter().skip(rank).step_by(split.world_size.max(1));
            mine.map(|s| s.samples as usize).sum()
        };
        let ranks = 0..split.world_size;
        Some(
            ranks
                .map(|r| rank_samples(r).saturating_sub(per_rank))
                .sum(),
        )
    }

    /// The rank's pass (see [`Shards::pass`]); a resumed epoch's samples before its first
    /// step are dropped by the batcher, and the shards that hold only such samples are not
    /// read.
    fn read_epoch(&self, feeder: &Feeder, epoch: u64, batcher: &mut Batcher) {
        let unread = match batcher.skip {
            0 => Vec::new(),
            skip => self.read_before(feeder, epoch, skip as u64),
        };
        let replay = |occurrence: usize| unread.get(occurrence).copied().unwrap_or(false);
        self.pass(feeder, epoch, &replay, &mut |sample| batcher.push(sample));
    }
}

impl Shards {
    /// Of the pass's shard occurrences (see [`Shards::pass`]), those whose samples all come
    /// among its first `skip`: a pass in which every occurrence is stood for by placeholders
    /// that carry it, tallied.
    fn read_before(&self, feeder: &Feeder, epoch: u64, skip: u64) -> Vec<bool> {
        let mut given: HashMap<i64, u64> = HashMap::new();
        let mut left = skip;
        let shards = self.pass(feeder, epoch, &|_| true, &mut |sample| {
            *given.entry(sample.label).or_default() += 1;
            left -= 1;
            if left == 0 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        let all_given = |(occurrence, &shard): (usize, &usize)| {
            given.get(&(occurrence as i64)).copied() == Some(self.0[shard].samples)
        };
        shards.iter().enumerate().map(all_given).collect()
    }

    /// The epoch's shard order (shuffled when asked, then every `world_size`-th shard from the
    /// rank's, as webdataset's `split_by_node`), samples through the shuffle buffer to `out`,
    /// up to the samples every rank reads ([`super::order::Split::per_rank`]): a rank whose
    /// shards hold more stops there (its last samples are not read this epoch: see
    /// [`super::Loader::unread_per_epoch`]), one whose shards hold fewer reads them again from
    /// the first (`DistributedSampler` pads likewise), so that every rank makes the same
    /// number of batches. Each shard read is an occurrence, numbered through the pass; one for
    /// which `replay` holds is not read: placeholders that carry its number (as their label)
    /// stand for its samples. Returns the shard of each occurrence.
    fn pass(
        &self,
        feeder: &Feeder,
        epoch: u64,
        replay: &dyn Fn(usize) -> bool,
        out: Out,
    ) -> Vec<usize> {
        let shards = &self.0;
        let split = feeder.options.split;
        let per_rank = (split.per_rank(self.samples()) + feeder.options.spare()) as u64;
        let mut order: Vec<usize> = (0..shards.len()).collect();
        if split.shuffle {
            order::shuffle(&mut order, &mut split.stream(epoch));
        }
        let split_shards: Vec<usize> = order
            .into_iter()
            .skip(split.rank)
            .step_by(split.world_size.max(1))
            .collect();
        // Resampled: each round draws as many shards as there are, with replacement, from
        // the rank's own stream (webdataset's `resampled=True`).
        let mut resample = split.resample_stream(epoch);
        let mut round = || -> Vec<usize> {
            if !feeder.options.resampled {
                return split_shards.clone();
            }
            let n = shards.len() as u64;
            (0..n).map(|_| resample.below(n) as usize).collect()
        };
        let mut buffer = ShuffleBuffer {
            held: Vec::new(),
            capacity: if split.shuffle {
                feeder.options.shuffle_buffer
            } else {
                0
            },
            stream: split.buffer_stream(epoch),
        };
        let mut quota = Quota {
            left: per_rank,
            out,
        };
        let mut occurrences = Vec::new();
        while quota.left > 0 {
            let mine = round();
            let first = occurrences.len();
            occurrences.extend(&mine);
            let mut read_any = false;
            let mut take = |sample| {
                read_any = true;
                match buffer.push(sample) {
                    Some(out) => quota.send(out),
                    None => ControlFlow::Continue(()),
                }
            };
            let flow = self.read_round(feeder, &mine, &|i| replay(first + i), first, &mut take);
            if flow.is_break() {
                return occurrences;
            }
            while let Some(sample) = buffer.pop() {
                if quota.send(sample).is_break() {
                    return occurrences;
                }
            }
            if !read_any {
                let e = Error::Options(format!(
                    "rank {}'s shards hold no sample in epoch {epoch}, and every rank reads \
                     {per_rank}",
                    split.rank
                ));
                let failed = RawSample {
                    index: u64::MAX,
                    label: -1,
                    name: shards[mine[0]].url.name(),
                    bytes: Err(e),
                };
                let _ = quota.send(failed);
                return occurrences;
            }
        }
        occurrences
    }

    /// The samples of the shards `mine` (occurrences `first` on) to `take`, the next shards
    /// opened as one is read (remote ones arrive meanwhile); placeholders for those that
    /// `replay` names (by their place in `mine`).
    fn read_round(
        &self,
        feeder: &Feeder,
        mine: &[usize],
        replay: &dyn Fn(usize) -> bool,
        first: usize,
        take: Out,
    ) -> ControlFlow<()> {
        let shards = &self.0;
        let fetch = &feeder.options.fetch;
        let open = |i: usize| fetch::open(&shards[mine[i]].url, fetch);
        let mut opened_ahead = VecDeque::new();
        let mut next = 0;
        for (i, &number) in mine.iter().enumerate() {
            let shard = &shards[number];
            if replay(i) {
                placeholders(number, shard, first + i, take)?;
                continue;
            }
            next = next.max(i);
            while opened_ahead.len() <= SHARDS_AHEAD && next < mine.len() {
                if !replay(next) {
                    opened_ahead.push_back((next, open(next)));
                }
                next += 1;
            }
            let opened = match opened_ahead.pop_front() {
                Some((at, opened)) if at == i => opened,
                _ => open(i),
            };
            let max_member = feeder.options.max_member;
            read_shard(number, shard, opened, max_member, take)?;
        }
        ControlFlow::Continue(())
    }
}

/// A sample's index: its shard's number and its position there.
fn sample_index(number: usize, position: u64) -> u64 {
    (number as u64) << 32 | position
}

/// Stand-ins for the samples of `shard` (number `number`), not read: each carries the shard's
/// `occurrence` in the pass as its label, and fails if it is ever decoded.
fn placeholders(number: usize, shard: &Shard, occurrence: usize, take: Out) -> ControlFlow<()> {
    for position in 0..shard.samples {
        take(RawSample {
            index: sample_index(number, position),
            label: occurrence as i64,
            name: shard.url.name(),
            bytes: Err(Error::Internal(
                "a sample of a resumed epoch replayed unread was decoded".into(),
            )),
        })?;
    }
    ControlFlow::Continue(())
}

/// The samples of `shard` (number `number`; `opened`: its bytes, or why not) to `take`, until
/// it says `Break`: exactly as many as it was counted to hold. Where it cannot be opened or
/// breaks off, each of its samples not read fails with that error; where it holds fewer than
/// counted, each one missing fails, and where it holds more, or breaks off only after all its
/// counted samples, its last counted one fails instead (each sample is held back until the
/// next shows whether the shard goes on). No member larger than `max_member` bytes is read.
fn read_shard(
    number: usize,
    shard: &Shard,
    opened: Result<Box<dyn std::io::Read + Send>>,
    max_member: u64,
    take: Out,
) -> ControlFlow<()> {
    let name = shard.url.name();
    let (mut held, mut given) = (None::<RawSample>, 0);
    let mut broken = None;
    let mut flow = ControlFlow::Continue(());
    match opened {
        Ok(reader) => webdataset::for_each_sample(reader, &name, max_member, |sample| {
            let s = match sample {
                Ok(_) if given == shard.samples => {
                    broken = Some(miscounted(shard, "more than"));
                    return ControlFlow::Break(());
                }
                Ok(s) => s,
                Err(e) => {
                    broken = Some(e);
                    return ControlFlow::Break(());
                }
            };
            if let Some(previous) = held.take() {
                flow = take(previous);
                flow?;
            }
            held = Some(RawSample {
                index: sample_index(number, s.position),
                label: s.label,
                name: name.join(&s.key),
                bytes: s.image,
            });
            given += 1;
            ControlFlow::Continue(())
        }),
        Err(e) => broken = Some(e),
    }
    flow?;
    if broken.is_none() && given < shard.samples {
        broken = Some(miscounted(shard, &format!("only {given} of")));
    }
    let Some(e) = broken else {
        return held.map_or(ControlFlow::Continue(()), take);
    };
    let mut failed_from = given;
    if let Some(last) = held {
        if given < shard.samples {
            take(last)?;
        } else {
            failed_from -= 1;
        }
    }
    for position in failed_from..shard.samples {
        take(RawSample {
            index: sample_index(number, position),
            label: -1,
            name: name.clone(),
            bytes: Err(e.clone()),
        })?;
    }
    ControlFlow::Continue(())
}

/// The error of a shard that holds `how` the samples it was counted to hold (or its index
/// lists): every rank's split of the epoch rests on the counts.
fn miscounted(shard: &Shard, how: &str) -> Error {
    let why = format!(
        "the shard holds {how} the {} samples it was counted to hold (it changed since, or its \
         index is wrong)",
        shard.samples
    );
    Error::from(std::io::Error::new(std::io::ErrorKind::InvalidData, why)).in_file(shard.url.name())
}

/// The samples a rank still sends in a pass, and where they go.
struct Quota<'a> {
    left: u64,
    out: Out<'a>,
}

impl Quota<'_> {
    /// `sample` out, unless the rank sent all it reads (`Break`, as when the consumer is
    /// gone).
    fn send(&mut self, sample: RawSample) -> ControlFlow<()> {
        if self.left == 0 {
            return ControlFlow::Break(());
        }
        self.left -= 1;
        (self.out)(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shard of `samples` samples (key.jpg, not decoded here, and key.cls), cut to `keep`
    /// bytes when given.
    fn shard_bytes(samples: usize, keep: Option<usize>) -> Vec<u8> {
        let mut tar = tar::Builder::new(Vec::new());
        for k in 0..samples {
            let members = [
                ("jpg", b"stand-in".to_vec()),
                ("cls", k.to_string().into_bytes()),
            ];
            for (extension, bytes) in members {
                let mut header = tar::Header::new_gnu();
                header.set_size(bytes.len() as u64);
                header.set_mode(0o644);
                header.set_cksum();
                let name = format!("k{k:03}.{extension}");
                tar.append_data(&mut header, name, bytes.as_slice())
                    .unwrap();
            }
        }
        let mut bytes = tar.into_inner().unwrap();
        if let Some(keep) = keep {
            bytes.truncate(keep);
        }
        bytes
    }

    /// (position, label, its error) of each entry `read_shard` gives for a shard counted to
    /// hold `counted`, and whether it went on.
    fn entries(bytes: Result<Vec<u8>>, counted: u64) -> Vec<(u64, i64, Option<String>)> {
        let shard = Shard {
            url: ShardUrl::Local("s.tar".into()),
            samples: counted,
        };
        let opened =
            bytes.map(|b| Box::new(std::io::Cursor::new(b)) as Box<dyn std::io::Read + Send>);
        let mut got = Vec::new();
        let flow = read_shard(0, &shard, opened, 1 << 20, &mut |s| {
            got.push((s.index, s.label, s.bytes.err().map(|e| e.to_string())));
            ControlFlow::Continue(())
        });
        assert!(flow.is_continue());
        got
    }

    use super::super::shard_url::ShardUrl;

    #[test]
    fn a_shard_gives_exactly_its_counted_samples() {
        let positions =
            |got: &[(u64, i64, Option<String>)]| -> Vec<u64> { got.iter().map(|e| e.0).collect() };
        let failed =
            |got: &[(u64, i64, Option<String>)]| got.iter().filter(|e| e.2.is_some()).count();
        // As counted: every sample, none failed.
        let exact = entries(Ok(shard_bytes(3, None)), 3);
        assert_eq!((positions(&exact), failed(&exact)), (vec![0, 1, 2], 0));
        // Fewer than counted: the missing ones fail, by name.
        let fewer = entries(Ok(shard_bytes(3, None)), 5);
        assert_eq!(
            (positions(&fewer), failed(&fewer)),
            (vec![0, 1, 2, 3, 4], 2)
        );
        assert!(fewer[4]
            .2
            .as_ref()
            .unwrap()
            .contains("holds only 3 of the 5 samples"));
        // More than counted: the last counted one fails in its place.
        let more = entries(Ok(shard_bytes(4, None)), 2);
        assert_eq!((positions(&more), failed(&more)), (vec![0, 1], 1));
        assert!(more[1]
            .2
            .as_ref()
            .unwrap()
            .contains("holds more than the 2 samples"));
        // Not opened: each counted sample fails with why.
        let why = Error::Options("refused".into());
        let unopened = entries(Err(why), 3);
        assert_eq!(
            (positions(&unopened), failed(&unopened)),
            (vec![0, 1, 2], 3)
        );
        // Broken off in its second sample: the first comes, then the rest fail.
        let whole = shard_bytes(3, None);
        let cut = entries(Ok(shard_bytes(3, Some(2048 + 700))), 3);
        assert_eq!((positions(&cut), failed(&cut)), (vec![0, 1, 2], 2));
        assert_eq!(cut[0].1, 0);
        assert!(whole.len() > 2048 + 700);
    }

    #[test]
    fn a_consumer_that_stops_stops_the_shard() {
        let shard = Shard {
            url: ShardUrl::Local("s.tar".into()),
            samples: 5,
        };
        let opened: Result<Box<dyn std::io::Read + Send>> =
            Ok(Box::new(std::io::Cursor::new(shard_bytes(5, None))));
        let mut taken = 0;
        let flow = read_shard(0, &shard, opened, 1 << 20, &mut |_| {
            taken += 1;
            if taken == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert!(flow.is_break());
        assert_eq!(taken, 2);
    }
}

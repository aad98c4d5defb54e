//! Full batches whatever fails: with [`LoaderOptions::refill`](super::LoaderOptions::refill)
//! (Python's `errors="skip"` with `drop_last=True`), a batch short of the samples that failed
//! takes the last samples of the batch after it, which then takes from the one after it, and so
//! on. Only the shortfall moves (a few tensors a batch), the order is fixed by the samples that
//! failed, and the feeder reads a batch of spare samples past the epoch's end for the last one.

use super::Batch;
use crate::error::{Error, Result};

/// The batch waiting to be topped up, if any.
pub(super) struct Refill {
    /// Samples in a full batch.
    size: usize,
    short: Option<Batch>,
}

impl Refill {
    pub(super) fn new(size: usize) -> Self {
        Self { size, short: None }
    }

    /// Takes the next batch as made; returns the batch that is now full, if one is.
    pub(super) fn push(&mut self, mut batch: Batch) -> Result<Option<Batch>> {
        let Some(mut short) = self.short.take() else {
            if batch.indices.len() == self.size {
                return Ok(Some(batch));
            }
            self.short = Some(batch);
            return Ok(None);
        };
        let wanted = self.size - short.indices.len();
        move_tail(&mut batch, &mut short, wanted)?;
        if short.indices.len() == self.size {
            self.short = Some(batch);
            return Ok(Some(short));
        }
        // The batch gave all it had: its failures go with the one it gave to.
        short.failed.append(&mut batch.failed);
        self.short = Some(short);
        Ok(None)
    }
}

/// Moves up to `wanted` of `from`'s last samples (tensors, labels, indices, parameters) to the
/// end of `to`.
fn move_tail(from: &mut Batch, to: &mut Batch, wanted: usize) -> Result<()> {
    if from.device.is_some() || to.device.is_some() {
        return Err(Error::Internal(
            "batches on the device are not topped up".into(),
        ));
    }
    let [had, a, b, c] = from.shape;
    let [kept, ..] = to.shape;
    let moved = wanted.min(had);
    let elements = a * b * c;
    let slot = elements * from.data.dtype().size();
    // A ring's array holds a full batch without moving; an array of the CPU backend's grows.
    if !to.data.resize((kept + moved) * elements) {
        return Err(Error::Internal(
            "a page-locked batch array without room for a full batch".into(),
        ));
    }
    let source = &from.data.as_bytes()[(had - moved) * slot..had * slot];
    to.data.bytes_mut()[kept * slot..].copy_from_slice(source);
    from.data.resize((had - moved) * elements);
    let at = had - moved;
    to.labels.extend(from.labels.drain(at..));
    to.indices.extend(from.indices.drain(at..));
    to.params.extend(from.params.drain(at..));
    from.shape[0] = at;
    to.shape = [kept + moved, a, b, c];
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loader::{BatchArray, StepStats};
    use crate::{Params, TensorData};

    /// A batch of the samples `indices`, each tensor two bytes holding its index.
    fn batch(indices: &[u64], failed: &[u64]) -> Batch {
        let bytes: Vec<u8> = indices.iter().flat_map(|&i| [i as u8; 2]).collect();
        Batch {
            shape: [indices.len(), 1, 1, 2],
            data: BatchArray::own(TensorData::U8(bytes)),
            device: None,
            labels: indices.iter().map(|&i| i as i64 + 100).collect(),
            indices: indices.to_vec(),
            params: indices.iter().map(|_| Params::default()).collect(),
            failed: failed.iter().map(|&i| (i, Error::EmptyFile)).collect(),
            stats: StepStats::default(),
        }
    }

    fn contents(batch: &Batch) -> (Vec<u64>, Vec<i64>, Vec<u8>, Vec<u64>) {
        let failed = batch.failed.iter().map(|f| f.0).collect();
        let bytes = batch.data.as_bytes().to_vec();
        (batch.indices.clone(), batch.labels.clone(), bytes, failed)
    }

    #[test]
    fn short_batches_take_the_next_ones_last_samples() {
        let mut refill = Refill::new(3);
        let mut out = Vec::new();
        // Samples 1 and 4 failed; 9..=11 are the spare batch past the epoch's end.
        let made = [
            batch(&[0, 2], &[1]),
            batch(&[3, 5], &[4]),
            batch(&[6, 7, 8], &[]),
            batch(&[9, 10, 11], &[]),
        ];
        for b in made {
            out.extend(refill.push(b).unwrap());
        }
        let got: Vec<_> = out.iter().map(contents).collect();
        let want = |indices: [u64; 3], failed: Vec<u64>| {
            let labels = indices.iter().map(|&i| i as i64 + 100).collect();
            let bytes = indices.iter().flat_map(|&i| [i as u8; 2]).collect();
            (indices.to_vec(), labels, bytes, failed)
        };
        assert_eq!(
            got,
            [
                want([0, 2, 5], vec![1]),
                want([3, 7, 8], vec![4]),
                want([6, 10, 11], vec![]),
            ]
        );
        assert!(out.iter().all(|b| b.shape[0] == 3));
    }

    #[test]
    fn a_batch_with_nothing_left_passes_its_failures_on() {
        let mut refill = Refill::new(2);
        assert!(refill.push(batch(&[0], &[1])).unwrap().is_none());
        assert!(refill.push(batch(&[], &[2, 3])).unwrap().is_none());
        let full = refill.push(batch(&[4, 5], &[])).unwrap().expect("full");
        assert_eq!(
            contents(&full),
            (vec![0, 5], vec![100, 105], vec![0, 0, 5, 5], vec![1, 2, 3])
        );
    }
}

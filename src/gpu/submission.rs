//! What goes to the GPU in the stream's next submission: the first batch of the decoded images
//! waiting, then whole batches that wait too, within a budget of upload and output bytes.
//! Pure bookkeeping, tested without a GPU.

use std::collections::VecDeque;
use std::sync::mpsc::Receiver;

/// What one waiting image takes of a submission's budget: bytes of uploads, bytes of output.
pub(super) trait Cost {
    fn cost(&self) -> (u64, u64);
}

/// What one submission may hold: bytes of uploads, bytes of output.
#[derive(Clone, Copy, Debug)]
pub(super) struct Budget {
    /// [`super::Batching::max_bytes`]: one image alone may pass it.
    pub upload: u64,
    /// The device's largest buffer, which holds a submission's tensors: an image whose output
    /// passes it alone runs, and fails, in a submission of its own.
    pub output: u64,
}

/// Decoded images in the order they arrived, waiting for a batch.
pub(super) struct Ready<T> {
    receiver: Receiver<T>,
    queue: VecDeque<T>,
}

impl<T: Cost> Ready<T> {
    /// The images the decoding threads send on `receiver`.
    pub fn new(receiver: Receiver<T>) -> Self {
        Self {
            receiver,
            queue: VecDeque::new(),
        }
    }

    /// The next submission's batches of up to `batch` images: the first of what waits, then
    /// whole batches that wait too, up to `most` images in all, within `budget`. `left`: how
    /// many images were handed to the decoders and not yet taken, and whether those are all the
    /// call's (then its last batch may be short).
    pub fn submission(
        &mut self,
        budget: Budget,
        batch: usize,
        most: usize,
        (left, exhausted): (usize, bool),
    ) -> Vec<Vec<T>> {
        let mut filling = Filling::new(budget);
        let mut batches = vec![filling.first_batch(&mut self.queue, batch)];
        let mut images = batches[0].len();
        while images + batch <= most {
            self.wait_for(0);
            let rest = left - images;
            if rest < batch && !exhausted {
                break;
            }
            let Some(more) = filling.whole_batch(&mut self.queue, batch.min(rest)) else {
                break;
            };
            images += more.len();
            batches.push(more);
        }
        batches
    }

    /// Blocks until `n` images wait (the caller knows that many are coming), then takes in
    /// whatever else has arrived.
    pub fn wait_for(&mut self, n: usize) {
        while self.queue.len() < n {
            match self.receiver.recv() {
                Ok(decoded) => self.queue.push_back(decoded),
                Err(_) => break,
            }
        }
        self.queue.extend(self.receiver.try_iter());
    }
}

/// One submission's batches as they are taken, against its budget.
#[derive(Clone, Copy)]
struct Filling {
    budget: Budget,
    upload: u64,
    output: u64,
}

impl Filling {
    fn new(budget: Budget) -> Self {
        Self {
            budget,
            upload: 0,
            output: 0,
        }
    }

    fn fits(&self, (upload, output): (u64, u64)) -> bool {
        self.upload + upload <= self.budget.upload && self.output + output <= self.budget.output
    }

    fn add(&mut self, (upload, output): (u64, u64)) {
        self.upload += upload;
        self.output += output;
    }

    /// The submission's first batch: up to `size` of the waiting images, closing early at one
    /// that would pass the budget (it waits for the next); its first image whatever it costs.
    fn first_batch<T: Cost>(&mut self, queue: &mut VecDeque<T>, size: usize) -> Vec<T> {
        let mut batch = Vec::with_capacity(size);
        while let Some(image) = queue.front() {
            let cost = image.cost();
            if batch.len() == size || (!batch.is_empty() && !self.fits(cost)) {
                break;
            }
            self.add(cost);
            batch.extend(queue.pop_front());
        }
        batch
    }

    /// Another batch of `size` of the waiting images, or `None` when fewer wait or they would
    /// pass the budget: a later batch goes whole or waits for a submission of its own.
    fn whole_batch<T: Cost>(&mut self, queue: &mut VecDeque<T>, size: usize) -> Option<Vec<T>> {
        if size == 0 || queue.len() < size {
            return None;
        }
        let mut after = *self;
        for image in queue.iter().take(size) {
            let cost = image.cost();
            if !after.fits(cost) {
                return None;
            }
            after.add(cost);
        }
        *self = after;
        Some(queue.drain(..size).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A waiting image: its name, and its upload and output bytes.
    #[derive(Debug, PartialEq)]
    struct Image(usize, u64, u64);

    impl Cost for Image {
        fn cost(&self) -> (u64, u64) {
            (self.1, self.2)
        }
    }

    /// `Ready` holding `costs` (upload, output) as images 0, 1, …, all arrived, and the
    /// sender more would come on: while it is held, a wait for more blocks.
    fn arrived(costs: &[(u64, u64)]) -> (Ready<Image>, std::sync::mpsc::Sender<Image>) {
        let (sender, receiver) = std::sync::mpsc::channel();
        for (i, &(upload, output)) in costs.iter().enumerate() {
            sender.send(Image(i, upload, output)).unwrap();
        }
        let mut ready = Ready::new(receiver);
        ready.wait_for(costs.len());
        (ready, sender)
    }

    /// [`arrived`], with no more to come.
    fn waiting(costs: &[(u64, u64)]) -> Ready<Image> {
        arrived(costs).0
    }

    fn names(batches: &[Vec<Image>]) -> Vec<Vec<usize>> {
        batches
            .iter()
            .map(|b| b.iter().map(|i| i.0).collect())
            .collect()
    }

    const ROOMY: Budget = Budget {
        upload: 1 << 40,
        output: 1 << 40,
    };

    #[test]
    fn whole_batches_that_wait_go_together_up_to_the_most_images() {
        let mut ready = waiting(&[(1, 1); 10]);
        // 10 handed out, all the call's: batches of 3, at most 7 images a submission.
        let first = ready.submission(ROOMY, 3, 7, (10, true));
        assert_eq!(names(&first), [vec![0, 1, 2], vec![3, 4, 5]]);
        let second = ready.submission(ROOMY, 3, 7, (4, true));
        // The call's last batch may be short.
        assert_eq!(names(&second), [vec![6, 7, 8], vec![9]]);
    }

    #[test]
    fn a_short_batch_goes_along_only_when_no_more_images_are_coming() {
        // All five handed out wait; batches of 3. While the source may give more, the last two
        // wait for a third to make their batch whole.
        let mut ready = waiting(&[(1, 1); 5]);
        let taken = ready.submission(ROOMY, 3, 12, (5, false));
        assert_eq!(names(&taken), [vec![0, 1, 2]]);
        // When the source has ended, they go along as the call's last, short batch.
        let mut ready = waiting(&[(1, 1); 5]);
        let taken = ready.submission(ROOMY, 3, 12, (5, true));
        assert_eq!(names(&taken), [vec![0, 1, 2], vec![3, 4]]);
        // Images handed out but not yet decoded are not waited for past the first batch (the
        // sender is held: a wait for the five still decoding would block for ever).
        let (mut ready, _decoding) = arrived(&[(1, 1); 4]);
        let taken = ready.submission(ROOMY, 3, 12, (9, true));
        assert_eq!(names(&taken), [vec![0, 1, 2]]);
    }

    #[test]
    fn the_first_batch_closes_before_an_image_past_the_budget() {
        let budget = Budget {
            upload: 100,
            output: 1000,
        };
        // 40 + 40 fit; the third (40) would pass 100 and waits for the next submission.
        let mut ready = waiting(&[(40, 1), (40, 1), (40, 1), (40, 1)]);
        let taken = ready.submission(budget, 4, 4, (4, true));
        assert_eq!(names(&taken), [vec![0, 1]]);
        // Output bytes count alike.
        let mut ready = waiting(&[(1, 600), (1, 600)]);
        let taken = ready.submission(budget, 4, 4, (2, true));
        assert_eq!(names(&taken), [vec![0]]);
    }

    #[test]
    fn an_image_past_the_budget_alone_still_goes_alone() {
        let budget = Budget {
            upload: 100,
            output: 100,
        };
        let mut ready = waiting(&[(500, 500), (1, 1)]);
        let taken = ready.submission(budget, 4, 8, (2, true));
        assert_eq!(names(&taken), [vec![0]]);
        let taken = ready.submission(budget, 4, 8, (1, true));
        assert_eq!(names(&taken), [vec![1]]);
    }

    #[test]
    fn a_later_batch_goes_whole_or_not_at_all() {
        let budget = Budget {
            upload: 13,
            output: 1 << 20,
        };
        // The first two batches take 2 + 2 and 3 + 3; the third (3 + 3) would pass 13 on top
        // of them, so it waits for a submission of its own although its first image fits.
        let mut ready = waiting(&[(2, 1), (2, 1), (3, 1), (3, 1), (3, 1), (3, 1)]);
        let taken = ready.submission(budget, 2, 6, (6, true));
        assert_eq!(names(&taken), [vec![0, 1], vec![2, 3]]);
        let taken = ready.submission(budget, 2, 6, (2, true));
        assert_eq!(names(&taken), [vec![4, 5]]);
    }

    #[test]
    fn nothing_waiting_and_nothing_coming_is_an_empty_submission() {
        let (sender, receiver) = std::sync::mpsc::channel::<Image>();
        drop(sender);
        let mut ready = Ready::new(receiver);
        ready.wait_for(3);
        let taken = ready.submission(ROOMY, 3, 9, (0, true));
        assert_eq!(names(&taken), [Vec::<usize>::new()]);
    }
}

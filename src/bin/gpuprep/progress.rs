//! A one-line progress report on stderr for long runs: only when stderr is a terminal (logs
//! and pipes get nothing), and never with `--quiet`.

use std::io::{IsTerminal, Write};
use std::time::Instant;

/// The line, rewritten in place.
pub struct Line {
    started: Instant,
}

impl Line {
    /// A progress line if stderr is a terminal and the user did not ask for quiet.
    pub fn on_terminal(quiet: bool) -> Option<Self> {
        (!quiet && std::io::stderr().is_terminal()).then(|| Self {
            started: Instant::now(),
        })
    }

    /// Rewrites the line: images done of all, rate, time left.
    pub fn report(&self, done: usize, total: usize) {
        let seconds = self.started.elapsed().as_secs_f64();
        let rate = done as f64 / seconds.max(1e-9);
        let left = (total - done.min(total)) as f64 / rate.max(1e-9);
        let mut stderr = std::io::stderr().lock();
        let _ = write!(
            stderr,
            "\r\x1b[2K{done} of {total} images, {rate:.0} img/s, {left:.0} s left"
        );
        let _ = stderr.flush();
    }

    /// Clears the line, so that what follows starts on a clean one.
    pub fn finish(&self) {
        eprint!("\r\x1b[2K");
    }
}

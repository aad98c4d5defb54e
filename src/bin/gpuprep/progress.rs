//! A one-line progress report on stderr for long runs: only when stderr is a terminal (logs
//! and pipes get nothing), and never with `--quiet`. It is rewritten at most every 100 ms,
//! whatever the rate at which work is done (and always at the end).

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often the line is rewritten at most.
const EVERY: Duration = Duration::from_millis(100);

/// The line, rewritten in place.
pub struct Line {
    started: Instant,
    /// When the line was last written.
    written: Mutex<Option<Instant>>,
}

impl Line {
    /// A progress line if stderr is a terminal and the user did not ask for quiet.
    pub fn on_terminal(quiet: bool) -> Option<Self> {
        (!quiet && std::io::stderr().is_terminal()).then(Self::new)
    }

    fn new() -> Self {
        Self {
            started: Instant::now(),
            written: Mutex::new(None),
        }
    }

    /// Rewrites the line (images done of all, rate, time left), unless it was written less than
    /// 100 ms ago and work remains.
    pub fn report(&self, done: usize, total: usize) {
        if !self.due(done >= total) {
            return;
        }
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

    /// Whether the line is to be written now (`last`: the work is done), noting it if so.
    fn due(&self, last: bool) -> bool {
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if !last && written.is_some_and(|at| now - at < EVERY) {
            return false;
        }
        *written = Some(now);
        true
    }

    /// Clears the line, so that what follows starts on a clean one.
    pub fn finish(&self) {
        let _ = write!(std::io::stderr(), "\r\x1b[2K");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_is_rewritten_by_time_not_by_count() {
        let line = Line::new();
        assert!(line.due(false), "the first report is written at once");
        assert!(!line.due(false), "not again within 100 ms");
        assert!(line.due(true), "the last one always");
        std::thread::sleep(EVERY);
        assert!(line.due(false), "again once 100 ms have passed");
    }
}

//! Printing that survives its reader going away: `gpuprep bench … | head -3` closes stdout
//! early, and `println!` would then panic. A closed stdout ends the program quietly; a closed
//! stderr only loses the message.

use std::io::Write;

/// A line on stdout; if stdout is closed (a pipe whose reader ended), the program ends here,
/// quietly, with exit code 0.
pub fn line(args: std::fmt::Arguments) {
    let mut stdout = std::io::stdout().lock();
    if writeln!(stdout, "{args}")
        .and_then(|()| stdout.flush())
        .is_err()
    {
        std::process::exit(0);
    }
}

/// A line on stdout; false if stdout is closed (the caller goes on: its exit code still says
/// what happened).
pub fn try_line(args: std::fmt::Arguments) -> bool {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{args}")
        .and_then(|()| stdout.flush())
        .is_ok()
}

/// A line on stderr, or nothing if stderr is closed.
pub fn error_line(args: std::fmt::Arguments) {
    let _ = writeln!(std::io::stderr().lock(), "{args}");
}

/// `println!` for the command line: see [`line`].
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::line(format_args!($($arg)*)) };
}

/// `eprintln!` for the command line: see [`error_line`].
macro_rules! err {
    ($($arg:tt)*) => { $crate::output::error_line(format_args!($($arg)*)) };
}

//! Progress lines on standard error for long CPU work (examples, tests, benchmarks).

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Prints `label: done/total (p %), t s` to standard error at most every two seconds, and only
/// once the work has run for two seconds, so that short runs stay quiet.
pub struct Reporter {
    label: String,
    start: Instant,
    last: Mutex<Instant>,
}

const INTERVAL: Duration = Duration::from_secs(2);

impl Reporter {
    /// A reporter for work called `label`, starting now.
    pub fn new(label: impl Into<String>) -> Self {
        let start = Instant::now();
        Self {
            label: label.into(),
            start,
            last: Mutex::new(start),
        }
    }

    /// Records that `done` of `total` units are finished; callable from any thread.
    pub fn update(&self, done: usize, total: usize) {
        let now = Instant::now();
        let Ok(mut last) = self.last.lock() else { return };
        if now.duration_since(*last) >= INTERVAL && done < total {
            *last = now;
            let percent = 100.0 * done as f64 / total.max(1) as f64;
            eprintln!(
                "  {}: {done}/{total} ({percent:.0} %), {:.1} s",
                self.label,
                now.duration_since(self.start).as_secs_f64()
            );
        }
    }
}

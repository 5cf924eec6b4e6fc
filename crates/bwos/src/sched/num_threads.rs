//! How many workers a pool may have: the bound, the environment variables
//! that set the default, and the machine's parallelism. The builder
//! resolves the number (`ThreadPoolBuilder::resolved_num_threads`), and
//! its errors name these.

use std::thread;

/// The environment variable that sets the default number of threads.
pub const NUM_THREADS_ENV: &str = "BWOS_NUM_THREADS";

/// The variable read when [`NUM_THREADS_ENV`] is not set, with rayon's
/// rules (a value that is not a positive number means the default), so
/// that programs moved from rayon keep their configuration.
pub const RAYON_NUM_THREADS_ENV: &str = "RAYON_NUM_THREADS";

/// The largest number of threads a pool may have.
pub const MAX_THREADS: usize = 1 << 16;

/// The threads the machine runs at once (1 if it cannot tell).
pub(crate) fn default_parallelism() -> usize {
    thread::available_parallelism().map_or(1, usize::from)
}

//! Queue geometry: how many blocks, how many entries per block.

use std::fmt;

/// Largest accepted number of entries per block.
///
/// Block indices share a 64-bit word with a 40-bit round number (wide
/// rounds keep a stalled thief from mistaking a recycled block for the one
/// it looked at; see the crate docs), leaving 24 bits for an index that can
/// reach twice the block size, so the block size must stay at or below
/// `2^22` (4,194,304 entries; the paper recommends 64 to 1024).
pub const MAX_BLOCK_SIZE: usize = 1 << 22;

/// Largest accepted number of blocks.
///
/// Far above any sensible queue; the limit exists so that block numbers and
/// round arithmetic never wrap.
pub const MAX_NUM_BLOCKS: usize = 1 << 31;

/// Smallest number of blocks: the owner always keeps one block to itself
/// while thieves steal from the others.
pub const MIN_NUM_BLOCKS: usize = 2;

/// The geometry of a BWoS queue: `num_blocks` blocks of `block_size` entries.
///
/// The owner works inside one block without synchronising; it meets the
/// thieves only when it moves to another block. Bigger blocks make that
/// rarer; more blocks let thieves steal from more places at once. The paper
/// recommends at least 8 blocks of 64 entries (its microbenchmarks use 8 of
/// 1024, the [`Default`]); small geometries such as 2 blocks of 2 entries are
/// accepted and useful for tests, because they make every block boundary
/// and wrap-around happen after a handful of operations.
///
/// ```
/// use bwos_queue::Config;
///
/// let config = Config::new(8, 64)?;
/// assert_eq!(config.capacity(), 512);
/// assert!(Config::new(0, 64).is_err());
/// # Ok::<(), bwos_queue::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Config {
    num_blocks: usize,
    block_size: usize,
    /// The round the queue starts in (0): tests start near the wrap of the
    /// 40-bit round counter to exercise it.
    first_round: u64,
}

impl Config {
    /// A queue of `num_blocks` blocks holding `block_size` entries each.
    ///
    /// # Errors
    /// [`ConfigError`] when `num_blocks` is below [`MIN_NUM_BLOCKS`] or above
    /// [`MAX_NUM_BLOCKS`], when `block_size` is zero or above
    /// [`MAX_BLOCK_SIZE`], or when the total capacity does not fit in `usize`.
    pub fn new(num_blocks: usize, block_size: usize) -> Result<Config, ConfigError> {
        if num_blocks < MIN_NUM_BLOCKS {
            return Err(ConfigError::TooFewBlocks { num_blocks });
        }
        if num_blocks > MAX_NUM_BLOCKS {
            return Err(ConfigError::TooManyBlocks { num_blocks });
        }
        if block_size == 0 {
            return Err(ConfigError::EmptyBlocks);
        }
        if block_size > MAX_BLOCK_SIZE {
            return Err(ConfigError::BlockTooLarge { block_size });
        }
        if num_blocks.checked_mul(block_size).is_none() {
            return Err(ConfigError::CapacityOverflow {
                num_blocks,
                block_size,
            });
        }
        Ok(Config {
            num_blocks,
            block_size,
            first_round: 0,
        })
    }

    /// Starts the queue's rounds at `round` (taken modulo `2^40`) instead
    /// of 0, so that a few laps through the blocks make the round counter
    /// wrap: for testing code that keeps a queue for a long time (this
    /// crate's model tests and loom models use it). Behaviour is otherwise
    /// the same.
    ///
    /// ```
    /// use bwos_queue::{lifo, Config};
    ///
    /// // Two blocks of two: the rounds wrap after a few pushes and pops.
    /// let config = Config::new(2, 2)?.with_first_round((1 << 40) - 1);
    /// let (worker, _stealer) = lifo::new::<u32>(config);
    /// for i in 0..100 {
    ///     worker.push(i).unwrap();
    ///     worker.push(i + 1).unwrap();
    ///     worker.push(i + 2).unwrap();
    ///     assert_eq!(worker.pop(), Some(i + 2));
    ///     assert_eq!(worker.pop(), Some(i + 1));
    ///     assert_eq!(worker.pop(), Some(i));
    /// }
    /// # Ok::<(), bwos_queue::ConfigError>(())
    /// ```
    pub fn with_first_round(mut self, round: u64) -> Config {
        self.first_round = round & crate::packed::ROUND_MASK;
        self
    }

    /// The round the queue starts in.
    pub(crate) fn first_round(&self) -> u64 {
        self.first_round
    }

    /// The number of blocks.
    pub fn num_blocks(&self) -> usize {
        self.num_blocks
    }

    /// The number of entries in each block.
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    /// `num_blocks * block_size`: how many items a fresh queue accepts
    /// before `push` hands them back.
    pub fn capacity(&self) -> usize {
        self.num_blocks * self.block_size
    }
}

impl Default for Config {
    /// 8 blocks of 1024 entries, the geometry of the paper's microbenchmarks.
    fn default() -> Self {
        Config {
            num_blocks: 8,
            block_size: 1024,
            first_round: 0,
        }
    }
}

/// Why [`Config::new`] rejected a geometry.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// Fewer than [`MIN_NUM_BLOCKS`] blocks.
    TooFewBlocks {
        /// The rejected value.
        num_blocks: usize,
    },
    /// More than [`MAX_NUM_BLOCKS`] blocks.
    TooManyBlocks {
        /// The rejected value.
        num_blocks: usize,
    },
    /// A block size of zero.
    EmptyBlocks,
    /// More than [`MAX_BLOCK_SIZE`] entries per block.
    BlockTooLarge {
        /// The rejected value.
        block_size: usize,
    },
    /// `num_blocks * block_size` does not fit in `usize`.
    CapacityOverflow {
        /// The requested number of blocks.
        num_blocks: usize,
        /// The requested block size.
        block_size: usize,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::TooFewBlocks { num_blocks } => write!(
                f,
                "num_blocks is {num_blocks}, but a BWoS queue needs at least {MIN_NUM_BLOCKS} \
                 blocks (the owner keeps one while thieves steal from the others; 8 or more is recommended)"
            ),
            ConfigError::TooManyBlocks { num_blocks } => write!(
                f,
                "num_blocks is {num_blocks}, but at most {MAX_NUM_BLOCKS} blocks are allowed"
            ),
            ConfigError::EmptyBlocks => write!(
                f,
                "block_size is 0, but each block needs at least 1 entry (64 or more is recommended)"
            ),
            ConfigError::BlockTooLarge { block_size } => write!(
                f,
                "block_size is {block_size}, but at most {MAX_BLOCK_SIZE} entries per block fit \
                 the packed (round, index) word"
            ),
            ConfigError::CapacityOverflow {
                num_blocks,
                block_size,
            } => write!(
                f,
                "{num_blocks} blocks of {block_size} entries overflow usize; \
                 num_blocks * block_size must be at most {}",
                usize::MAX
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_the_papers_microbenchmark_geometry() {
        let c = Config::default();
        assert_eq!(
            (c.num_blocks(), c.block_size(), c.capacity()),
            (8, 1024, 8192)
        );
    }

    #[test]
    fn small_geometries_are_allowed() {
        let c = Config::new(2, 2).unwrap();
        assert_eq!(c.capacity(), 4);
        assert_eq!(Config::new(2, 1).unwrap().capacity(), 2);
    }

    #[test]
    fn bad_geometries_are_rejected_with_the_limit_in_the_message() {
        let cases: [(usize, usize, &str); 5] = [
            (0, 64, "at least 2 blocks"),
            (1, 64, "at least 2 blocks"),
            (8, 0, "at least 1 entry"),
            (8, MAX_BLOCK_SIZE + 1, "at most 4194304 entries"),
            (MAX_NUM_BLOCKS + 1, 1, "at most 2147483648 blocks"),
        ];
        for (blocks, size, expected) in cases {
            let err = Config::new(blocks, size).unwrap_err();
            let message = err.to_string();
            assert!(message.contains(expected), "{blocks}x{size}: {message}");
        }
    }

    #[test]
    #[cfg(target_pointer_width = "32")]
    fn capacity_overflow_is_rejected() {
        let err = Config::new(1 << 20, 1 << 20).unwrap_err();
        assert!(err.to_string().contains("overflow usize"), "{err}");
    }

    #[test]
    fn config_error_is_a_std_error() {
        let err: Box<dyn std::error::Error> = Box::new(Config::new(0, 1).unwrap_err());
        assert!(!err.to_string().is_empty());
    }
}

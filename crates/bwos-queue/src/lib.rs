//! Block-based bounded work-stealing queues: BWoS (Wang et al., OSDI 2023).
//!
//! A work-stealing queue has one owner, which pushes and pops its own work,
//! and any number of thieves, which steal work when they run out. In the
//! classic designs (Chase-Lev, crossbeam-deque, Tokio's queue) every owner
//! operation touches metadata the thieves also write, so a single thief
//! slows the owner down. BWoS splits the queue into blocks with their own
//! metadata: the owner works inside one block that thieves never enter, with
//! plain loads and stores, and meets the thieves only when it moves to
//! another block. Round numbers in every position word prevent ABA when
//! blocks are reused.
//!
//! # The one remaining bound: 2^40 laps
//! Rounds are 40-bit counters compared for equality, so they wrap. A thief
//! that reads a block's positions and then stalls, before its
//! compare-and-swap, while the owner cycles the same block through exactly
//! a multiple of 2^40 rounds and leaves it in the same state, could reserve
//! an entry on a stale view. That needs the owner to pass through the whole
//! queue about 1.1 * 10^12 times during one stall of one thread between two
//! of its instructions: with the tiniest queue (2 blocks of 1 entry) and a
//! block move every few nanoseconds, hours; with realistic queues, years.
//! 32-bit rounds (the paper's choice) made this a minute for the tiniest
//! queue, hence the width. Block sizes are therefore limited to
//! [`MAX_BLOCK_SIZE`] = 2^22 entries, far beyond useful sizes.
//!
//! Two variants with the same shape:
//! * [`lifo`]: the owner pushes and pops at the top, thieves take the oldest
//!   items (fork/join, graph traversal, GC marking).
//! * [`fifo`]: the owner pushes at the back and pops at the front, thieves
//!   steal from any block in between (task schedulers).
//!
//! Both are bounded: `push` returns the item when the queue is full, and the
//! owner never waits for a thief. Thieves can steal one item, a batch (up to
//! one block, into their own queue), or sample one block, the building block
//! of the paper's probabilistic victim selection.
//!
//! # Memory
//! A queue allocates once, when it is made: two cache-padded groups of
//! metadata per block (`CachePadded`: 2 x 128 bytes on x86_64; written
//! then, so resident at once) and `capacity` entries in one
//! allocation that nothing writes until items go there, so an entry's page
//! becomes resident only when the queue first reaches it. The owner moves
//! through the blocks in a ring, so a queue in long use (a LIFO owner that
//! shares blocks often, a FIFO queue cycling) eventually touches all its
//! entries: `capacity * size_of::<T>()` bytes plus the metadata. With the
//! 32 blocks of 32 two-word entries the runtime uses, that is 8 KiB of
//! metadata and up to 16 KiB of entries.
//!
//! ```
//! use bwos_queue::{fifo, Config, Steal};
//! use std::thread;
//!
//! let (worker, stealer) = fifo::new::<u64>(Config::default());
//! for i in 0..1000 {
//!     worker.push(i).expect("the queue holds 8192 items");
//! }
//! let thief = thread::spawn(move || {
//!     let mut sum = 0;
//!     loop {
//!         match stealer.steal() {
//!             Steal::Success(i) => sum += i,
//!             Steal::Retry => continue,
//!             Steal::Empty => break sum,
//!         }
//!     }
//! });
//! let mut sum = 0;
//! while let Some(i) = worker.pop() {
//!     sum += i;
//! }
//! assert_eq!(sum + thief.join().unwrap(), 999 * 1000 / 2);
//! ```
//!
//! # Verification
//! The protocol is model-checked with [loom](https://docs.rs/loom) on the
//! paper's verification client (its Figure 9) and on batch steals, a
//! stalled thief across a wrap-around and the owners' `share` (a LIFO
//! owner opening its block, a FIFO owner giving its consumer block back
//! and retaking it): run the tests with
//! `RUSTFLAGS="--cfg bwos_loom"`. The single-threaded tests also run under Miri.

#![warn(missing_docs)]
// docs.rs: mark what each feature adds (none yet; kept with the metadata).
#![cfg_attr(docsrs, feature(doc_cfg))]

mod block;
mod config;
pub mod fifo;
pub mod lifo;
mod packed;
mod ring;
mod steal;
mod sync;

pub use config::{Config, ConfigError, MAX_BLOCK_SIZE, MAX_NUM_BLOCKS, MIN_NUM_BLOCKS};
pub use steal::Steal;

/// The crate README's example, compiled and run as a doc test.
#[cfg(all(doctest, not(bwos_loom)))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

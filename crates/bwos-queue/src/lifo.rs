//! The LIFO BWoS queue: the owner pushes and pops at the top, thieves steal
//! the oldest items from granted blocks below it.
//!
//! Suited to fork/join and graph traversal (the paper's GC marking use),
//! where the owner wants its most recent, cache-hot work and thieves want
//! the big, old pieces.
//!
//! # When thieves see an item
//! **Not when it is pushed.** The owner's current block is private: a
//! pushed item becomes stealable only when the owner fills that block and
//! moves up (with the default [`Config`], after 1024 pushes) or calls
//! [`Worker::share`]. This is what makes the owner's `push` and `pop`
//! plain loads and stores, and it differs from crossbeam-deque, where
//! every pushed item is stealable at once: a program that pushes a few
//! items and waits for thieves must `share` them (a scheduler does so when
//! it learns that other workers are idle), or use a small block size.
//! [`Stealer::len`] counts only what thieves can see; [`Worker::len`]
//! counts everything.
//!
//! ```
//! use bwos_queue::{lifo, Config};
//!
//! let (worker, stealer) = lifo::new::<u32>(Config::default());
//! worker.push(1).unwrap();
//! worker.push(2).unwrap();
//! assert!(stealer.steal().is_empty()); // both are in the owner's block
//! assert_eq!((worker.len(), stealer.len()), (2, 0));
//!
//! assert!(worker.share()); // open them to thieves now
//! assert_eq!(stealer.len(), 2);
//! assert_eq!(stealer.steal().success(), Some(1)); // the oldest
//! assert_eq!(worker.pop(), Some(2)); // the owner still takes the newest
//! ```
//!
//! [`fifo`](crate::fifo) queues have no such delay: an item is stealable as
//! soon as it is pushed, unless it is in the block the owner pops from
//! (which [`fifo::Worker::share`](crate::fifo::Worker::share) gives back to
//! thieves).
//!
//! # Protocol
//! The owner walks *virtual* blocks `v = n, n+1, ...` (block `v % n` in
//! round `v / n`, `n` blocks) and keeps privately the block it works in
//! (`top`) and the lowest block it may still take back (`low`).
//!
//! * In the top block the owner pushes at `back` and pops below `back`
//!   down to `front`, with plain loads and stores: thieves never enter the
//!   owner's block, so nothing is shared there.
//! * **Grant.** When the top block is full, the owner moves up one block
//!   and opens the block it leaves to thieves by storing its `front` into
//!   the block's `steal` position (Release). Thieves reserve entries from
//!   `steal` upwards with a CAS.
//! * **Takeover.** When the top block is empty, the owner moves down one
//!   block and swaps that block's `steal` position with the margin: the old
//!   value separates the entries thieves reserved from those the owner now
//!   takes back as its new `front`. The owner never waits for thieves.
//! * **Round control and reset.** Moving up into a block last used in the
//!   previous lap needs every entry of that lap to be stolen and read
//!   (`stolen` equals the margin, Acquire); otherwise the queue is full and
//!   `push` hands the item back. The owner, not the thieves, then resets
//!   all four positions to the new round (paper section 5.2). Moving up into
//!   a block already used in the current lap (after a takeover) needs no
//!   check: the owner left it empty and closed.
//!
//! Within a round, `front` only grows and each grant reopens the block at
//! `front`, so thieves reserve every entry of a block at most once per
//! round and `stolen` reaches the margin exactly when the block has been
//! drained by thieves.

use std::cell::Cell;
use std::fmt;
use std::ops::Range;
use std::ptr::NonNull;

use crate::block::{Block, Positions, Slot, read_slot, write_slot};
use crate::config::Config;
use crate::packed::{index, pack, previous_round, round, round_after};
use crate::ring::{Flavor, Reserve, Ring};
use crate::steal::Steal;
use crate::sync::{Arc, Ordering, OwnedLoad};

/// Thief-side rules of the LIFO variant.
pub(crate) enum Lifo {}

impl Flavor for Lifo {
    fn stealable<T>(block: &Block<T>, block_size: u32) -> Range<u32> {
        // Relaxed: a snapshot for estimates and for dropping with `&mut`
        // access; nothing is read through it concurrently.
        let steal = index(block.thief.steal.load(Ordering::Relaxed));
        // A granted block is always full: the owner only leaves it upward
        // when `back` reached the margin.
        steal.min(block_size)..block_size
    }

    fn reserve<T>(block: &Block<T>, block_size: u32, max: u32) -> Reserve {
        // Relaxed: the CAS below re-validates the value and acquires.
        let steal = block.thief.steal.load(Ordering::Relaxed);
        let start = index(steal);
        if start >= block_size {
            return Reserve::Empty;
        }
        let count = (block_size - start).min(max);
        // Acquire on success: pairs with the owner's Release grant store of
        // `steal` (possibly through other thieves' CASes, which continue its
        // release sequence), so the entries written before the grant are
        // visible. A stale value fails: the takeover swap and every reset
        // change the word.
        match block.thief.steal.compare_exchange(
            steal,
            steal + u64::from(count),
            Ordering::Acquire,
            Ordering::Relaxed,
        ) {
            Ok(_) => Reserve::Got { start, count },
            Err(_) => Reserve::Contended,
        }
    }
}

/// Creates a LIFO queue: the owner's [`Worker`] and a [`Stealer`] for thieves.
///
/// ```
/// use bwos_queue::{lifo, Config};
///
/// let (worker, stealer) = lifo::new::<u32>(Config::new(8, 64)?);
/// for i in 0..200 {
///     worker.push(i).unwrap();
/// }
/// // Thieves take the oldest items from blocks the owner has filled ...
/// assert_eq!(stealer.steal().success(), Some(0));
/// // ... while the owner takes the newest.
/// assert_eq!(worker.pop(), Some(199));
/// # Ok::<(), bwos_queue::ConfigError>(())
/// ```
pub fn new<T>(config: Config) -> (Worker<T>, Stealer<T>) {
    let n = config.num_blocks() as u64;
    let margin = config.block_size() as u32;
    // Rounds 0 and 1, counted from the configured first round.
    let (round_0, round_1) = (config.first_round(), round_after(config.first_round(), 1));
    let ring = Arc::new(Ring::new(&config, |i| {
        if i == 0 {
            // Round 1, empty, closed to thieves: the owner starts here.
            Positions {
                steal: pack(round_1, margin),
                ..Positions::all(pack(round_1, 0))
            }
        } else {
            // Round 0, completely stolen: ready to be reset for round 1.
            Positions::all(pack(round_0, margin))
        }
    }));
    let worker = Worker {
        ring: ring.clone(),
        top: Cell::new(n),
        top_block: Cell::new(0),
        top_ptr: Cell::new(ring.block_ptr(0)),
        top_slots: Cell::new(ring.block(0).slots_ptr()),
        low: Cell::new(n),
        front: Cell::new(0),
        back: Cell::new(0),
        granted: Cell::new(0),
        margin,
    };
    (worker, Stealer { ring })
}

/// The owner's end of a LIFO queue: push and pop at the top.
///
/// There is one worker per queue; it is [`Send`] but not [`Sync`], so only
/// one thread at a time can use it, which is what lets its fast path go
/// without atomic read-modify-write operations and fences.
///
/// The auto traits are part of the contract: `Worker<T>` is `Send` (for
/// `T: Send`) and `Stealer<T>` is `Send + Sync`,
///
/// ```
/// fn send<T: Send>() {}
/// fn sync<T: Sync>() {}
/// send::<bwos_queue::lifo::Worker<u32>>();
/// send::<bwos_queue::lifo::Stealer<u32>>();
/// sync::<bwos_queue::lifo::Stealer<u32>>();
/// ```
///
/// but a `Worker` is never `Sync` (two threads could push at once),
///
/// ```compile_fail
/// fn sync<T: Sync>() {}
/// sync::<bwos_queue::lifo::Worker<u32>>();
/// ```
///
/// and items that must stay on their thread cannot be stolen:
///
/// ```compile_fail
/// fn send<T: Send>() {}
/// send::<bwos_queue::lifo::Stealer<std::rc::Rc<u32>>>();
/// ```
pub struct Worker<T> {
    ring: Arc<Ring<T, Lifo>>,
    /// The virtual block the owner works in.
    top: Cell<u64>,
    /// `top % num_blocks`, kept to spare the fast path a division.
    top_block: Cell<usize>,
    /// Block `top_block` of `ring`, cached for the fast path.
    top_ptr: Cell<NonNull<Block<T>>>,
    /// The entries of that block, cached for the fast path.
    top_slots: Cell<NonNull<Slot<T>>>,
    /// The lowest virtual block the owner may take back: blocks below it
    /// belong to an earlier lap.
    low: Cell<u64>,
    /// The owner block's front and back indices. Thieves never look at the
    /// owner's block, so while the owner works in a block its positions
    /// live here, in plain memory; the owner parks them in the block's
    /// shared words when it leaves the block and picks them up when it
    /// comes back.
    front: Cell<u32>,
    back: Cell<u32>,
    /// How many blocks below `top` the owner granted with items and has
    /// not taken back: only those can hold items for it. With none, an
    /// empty owner block means an empty queue (for the owner), and `pop`
    /// does not walk down through blocks that hold nothing.
    granted: Cell<u64>,
    /// The block size, kept here to spare the fast path a load.
    margin: u32,
}

impl<T> Worker<T> {
    /// Pushes `item` on top; when the queue is full the item comes back as
    /// `Err(item)`.
    ///
    /// The queue is full when the owner's block is full and the next block
    /// still holds items from the previous lap that thieves have not taken
    /// (or are still reading): the owner never waits for thieves.
    ///
    /// ```
    /// use bwos_queue::{lifo, Config};
    ///
    /// let (worker, _stealer) = lifo::new(Config::new(2, 2)?);
    /// for i in 0..4 {
    ///     worker.push(i).unwrap();
    /// }
    /// assert_eq!(worker.push(4), Err(4));
    /// # Ok::<(), bwos_queue::ConfigError>(())
    /// ```
    #[inline]
    pub fn push(&self, item: T) -> Result<(), T> {
        let back = self.back.get();
        if back < self.margin {
            // SAFETY: entries at and above `back` in the owner's block are
            // empty and closed to thieves (the block is not granted), and
            // `back` is below the block size.
            unsafe { write_slot(self.top_slots.get(), back, item) };
            self.back.set(back + 1);
            return Ok(());
        }
        self.push_slow(item)
    }

    #[cold]
    fn push_slow(&self, item: T) -> Result<(), T> {
        if !self.advance() {
            return Err(item);
        }
        self.push(item)
    }

    /// Moves the owner one block up, granting the block it leaves. Returns
    /// `false`, changing nothing, when round control forbids it (full).
    fn advance(&self) -> bool {
        let ring = &*self.ring;
        let margin = self.margin;
        debug_assert_eq!(self.back.get(), margin, "the owner leaves full blocks only");
        let current_round = ring.locate(self.top.get()).1;
        let next = self.top.get() + 1;
        let (next_block, next_round) = ring.locate(next);
        let target = ring.block(next_block);
        // `back` is written only by this thread.
        // SAFETY: only the owner stores a block's `front` and `back`, and
        // this is the owner's thread (`Worker` is `!Sync`).
        let target_back = unsafe { target.owner.back.load_owned() };
        if round(target_back) == next_round {
            // The owner has been here in this lap and left the block empty
            // and closed when it took over the block below: pick up its
            // parked positions.
            self.leave(current_round);
            // SAFETY: only the owner stores a block's `front` and `back`, and
            // this is the owner's thread (`Worker` is `!Sync`).
            self.front
                .set(index(unsafe { target.owner.front.load_owned() }));
            self.back.set(index(target_back));
        } else {
            // A new lap. Acquire: pairs with the Release `fetch_add` of
            // every thief that read an entry of this block in the previous
            // lap, so those reads happen before the writes of the new lap.
            let stolen = target.thief.stolen.load(Ordering::Acquire);
            if stolen != pack(previous_round(next_round), margin) {
                return false;
            }
            // The block's previous-lap use leaves the owner's reach: if the
            // owner left it granted with items, thieves have taken them all
            // (checked above), and it no longer counts.
            // SAFETY: only the owner stores a block's `front` and `back`, and
            // this is the owner's thread (`Worker` is `!Sync`).
            if index(unsafe { target.owner.front.load_owned() }) < index(target_back) {
                self.granted.set(self.granted.get() - 1);
            }
            // Reset by the owner (paper section 5.2). Relaxed: thieves
            // can reserve nothing here until the Release grant that follows
            // the owner's writes; a thief holding a word of the previous
            // round fails its CAS because the round changed. `front` and
            // `back` live in the worker while the owner is in the block.
            target
                .thief
                .stolen
                .store(pack(next_round, 0), Ordering::Relaxed);
            target
                .thief
                .steal
                .store(pack(next_round, margin), Ordering::Relaxed);
            self.leave(current_round);
            self.front.set(0);
            self.back.set(0);
            // Blocks a whole lap below the new top are the previous lap's.
            let lowest = next + 1 - ring.num_blocks() as u64;
            self.low.set(self.low.get().max(lowest));
        }
        self.top.set(next);
        self.top_block.set(next_block);
        self.top_ptr.set(ring.block_ptr(next_block));
        self.top_slots.set(ring.block(next_block).slots_ptr());
        true
    }

    /// Parks the owner block's positions in its shared words and, if it
    /// holds items, grants it to thieves.
    fn leave(&self, round: u64) {
        let block = self.own_block();
        let (front, back) = (self.front.get(), self.back.get());
        // Relaxed: these words are read only by this thread (and by the
        // last handle's drop, ordered by the reference count).
        block
            .owner
            .front
            .store(pack(round, front), Ordering::Relaxed);
        block.owner.back.store(pack(round, back), Ordering::Relaxed);
        if front < back {
            debug_assert_eq!(back, self.margin, "only full blocks are granted");
            self.granted.set(self.granted.get() + 1);
            // Grant. Release: pairs with the thieves' Acquire CAS on
            // `steal`; the entries written in this block become visible.
            block
                .thief
                .steal
                .store(pack(round, front), Ordering::Release);
        }
    }

    /// Pops the most recently pushed item still in the queue.
    ///
    /// Returns `None` when the queue holds nothing the owner can reach; the
    /// owner takes back granted blocks below its own (takeover) before
    /// giving up, so `None` means thieves took or are taking everything.
    #[inline]
    pub fn pop(&self) -> Option<T> {
        let back = self.back.get();
        if back > self.front.get() {
            let back = back - 1;
            self.back.set(back);
            // SAFETY: `front..back` of the owner's block hold items written
            // by this thread, closed to thieves.
            return Some(unsafe { read_slot(self.top_slots.get(), back) });
        }
        self.pop_slow()
    }

    #[cold]
    fn pop_slow(&self) -> Option<T> {
        let ring = &*self.ring;
        let margin = self.margin;
        // Walk down while some block below holds items granted to thieves
        // that the owner may take back; blocks without are skipped over
        // without touching the words thieves read.
        while self.granted.get() > 0 {
            debug_assert!(
                self.top.get() > self.low.get(),
                "granted blocks lie in this lap"
            );
            let current_round = ring.locate(self.top.get()).1;
            let below = self.top.get() - 1;
            let (below_block, below_round) = ring.locate(below);
            let block = ring.block(below_block);
            // Every block below the owner's was left upwards, full.
            // SAFETY: only the owner stores a block's `front` and `back`, and
            // this is the owner's thread (`Worker` is `!Sync`).
            debug_assert_eq!(index(unsafe { block.owner.back.load_owned() }), margin);
            // SAFETY: only the owner stores a block's `front` and `back`, and
            // this is the owner's thread (`Worker` is `!Sync`).
            let front = if index(unsafe { block.owner.front.load_owned() }) < margin {
                // The owner granted it with items and has not been back.
                // Takeover. Relaxed: thieves that reserved entries below
                // the old steal position never touch entries at or above
                // it, and those were written by this thread; no data flows
                // between us here. The swap is atomic, so the split is
                // exact.
                self.granted.set(self.granted.get() - 1);
                let old = block
                    .thief
                    .steal
                    .swap(pack(below_round, margin), Ordering::Relaxed);
                index(old)
            } else {
                // Left without items: closed to thieves since its last
                // takeover or reset, nothing to take back.
                debug_assert_eq!(
                    index(block.thief.steal.load(Ordering::Relaxed)),
                    margin,
                    "a block left without items is closed"
                );
                margin
            };
            // The block being left is empty: nothing to grant.
            self.leave(current_round);
            self.front.set(front);
            self.back.set(margin);
            self.top.set(below);
            self.top_block.set(below_block);
            self.top_ptr.set(ring.block_ptr(below_block));
            self.top_slots.set(block.slots_ptr());
            if front < margin {
                // `front..margin` is ours again.
                return self.pop();
            }
        }
        None
    }

    /// Opens the items in the owner's block to thieves now instead of when
    /// the block fills up; returns `false`, changing nothing, when the block
    /// holds no item or the next block is not free (the queue is full).
    ///
    /// Thieves never see the owner's current block, so a runtime whose
    /// queues stay shallow (fork/join keeps one entry per pending join)
    /// calls this when it learns that other workers are hungry. The items
    /// move to the top of the block, the entries below them count as
    /// stolen for this round, the block is granted and the owner moves up
    /// one block. It costs one read-modify-write and a copy of at most one
    /// block; the owner takes the items back with `pop` as usual.
    ///
    /// ```
    /// use bwos_queue::{lifo, Config};
    ///
    /// let (worker, stealer) = lifo::new::<u32>(Config::new(4, 8)?);
    /// worker.push(1).unwrap();
    /// worker.push(2).unwrap();
    /// assert!(stealer.steal().is_empty()); // private to the owner
    /// assert!(worker.share());
    /// assert_eq!(stealer.steal().success(), Some(1));
    /// assert_eq!(worker.pop(), Some(2));
    /// assert_eq!(worker.pop(), None);
    /// # Ok::<(), bwos_queue::ConfigError>(())
    /// ```
    pub fn share(&self) -> bool {
        let (front, back) = (self.front.get(), self.back.get());
        if front == back || !self.next_block_free() {
            return false;
        }
        let gap = self.margin - back;
        if gap > 0 {
            let block = self.own_block();
            // Top down: the destination lies above the source and the two
            // ranges may overlap.
            for index in (front..back).rev() {
                // SAFETY: `front..back` hold the owner's items and
                // `back..margin` is empty; the block is closed to thieves,
                // so this thread alone accesses these entries, and both
                // indices are below the block size.
                unsafe { block.write(index + gap, block.read(index)) };
            }
            // The `gap` entries now below the items will never hold an item
            // this round: count them as stolen so that round control sees
            // the block drained when thieves have taken the items. Relaxed:
            // no data is published; the RMW keeps the thieves' Release
            // increments a single release sequence for the owner's Acquire.
            block
                .thief
                .stolen
                .fetch_add(u64::from(gap), Ordering::Relaxed);
            self.front.set(front + gap);
            self.back.set(self.margin);
        }
        let moved = self.advance();
        debug_assert!(moved, "the next block was checked to be free");
        moved
    }

    /// Whether `advance` would succeed: the next block is either one the
    /// owner already used in this lap or fully drained from the last lap.
    fn next_block_free(&self) -> bool {
        let ring = &*self.ring;
        let (next_block, next_round) = ring.locate(self.top.get() + 1);
        let target = ring.block(next_block);
        // `back` is written only by this thread. Relaxed `stolen`: a hint;
        // `advance` loads it again with Acquire before reusing the block,
        // and `stolen` only grows towards the margin within a round.
        // SAFETY: only the owner stores a block's `front` and `back`, and
        // this is the owner's thread (`Worker` is `!Sync`).
        round(unsafe { target.owner.back.load_owned() }) == next_round
            || target.thief.stolen.load(Ordering::Relaxed)
                == pack(previous_round(next_round), self.margin)
    }

    /// A [`Stealer`] for this queue.
    pub fn stealer(&self) -> Stealer<T> {
        Stealer {
            ring: self.ring.clone(),
        }
    }

    /// How many items a fresh queue accepts before `push` hands them back:
    /// `num_blocks * block_size`.
    pub fn capacity(&self) -> usize {
        self.ring.capacity()
    }

    /// The items in the owner's block: thieves cannot see them until the
    /// block fills up or [`share`](Self::share) opens it. Two plain loads,
    /// exact.
    ///
    /// A runtime uses it to decide cheaply whether it already holds enough
    /// work to share, or whether a fresh item is worth queueing at all.
    ///
    /// ```
    /// use bwos_queue::{lifo, Config};
    ///
    /// let (worker, _stealer) = lifo::new::<u32>(Config::new(4, 2)?);
    /// worker.push(1).unwrap();
    /// worker.push(2).unwrap();
    /// assert_eq!(worker.private_len(), 2);
    /// worker.push(3).unwrap(); // the first block was full and is granted
    /// assert_eq!(worker.private_len(), 1);
    /// assert!(worker.share());
    /// assert_eq!(worker.private_len(), 0);
    /// # Ok::<(), bwos_queue::ConfigError>(())
    /// ```
    #[inline]
    pub fn private_len(&self) -> usize {
        (self.back.get() - self.front.get()) as usize
    }

    /// Whether the block just below the owner's, the one it granted last
    /// (by filling it or with [`share`](Self::share)), still holds items no
    /// thief has reserved. One relaxed load of a word thieves write.
    ///
    /// A runtime that shares when other workers are hungry uses it to
    /// share once per hunger rather than at every push: while its last
    /// offer is still there, sharing more only fragments the queue.
    ///
    /// ```
    /// use bwos_queue::{lifo, Config};
    ///
    /// let (worker, stealer) = lifo::new::<u32>(Config::new(4, 8)?);
    /// worker.push(1).unwrap();
    /// assert!(!worker.granted_pending());
    /// assert!(worker.share());
    /// assert!(worker.granted_pending());
    /// assert_eq!(stealer.steal().success(), Some(1));
    /// assert!(!worker.granted_pending());
    /// # Ok::<(), bwos_queue::ConfigError>(())
    /// ```
    pub fn granted_pending(&self) -> bool {
        self.pending_below(1)
    }

    /// How many of the `blocks` blocks just below the owner's still hold
    /// items no thief has reserved ([`granted_pending`] for each). One
    /// relaxed load per block looked at.
    ///
    /// A runtime that keeps a job in sight of each of two thieves shares
    /// again while one offer is still there, but not while two are.
    ///
    /// [`granted_pending`]: Self::granted_pending
    ///
    /// ```
    /// use bwos_queue::{lifo, Config};
    ///
    /// let (worker, stealer) = lifo::new::<u32>(Config::new(4, 8)?);
    /// worker.push(1).unwrap();
    /// assert!(worker.share());
    /// worker.push(2).unwrap();
    /// assert!(worker.share());
    /// assert_eq!(worker.granted_pending_blocks(2), 2);
    /// assert_eq!(stealer.steal().success(), Some(1));
    /// assert_eq!(worker.granted_pending_blocks(2), 1);
    /// # Ok::<(), bwos_queue::ConfigError>(())
    /// ```
    pub fn granted_pending_blocks(&self, blocks: usize) -> usize {
        // Deeper than `top - low` lie blocks of earlier laps: none pending.
        let used = self.top.get() - self.low.get();
        (1..=(blocks as u64).min(used))
            .filter(|&depth| self.pending_below(depth))
            .count()
    }

    /// Whether the block `depth` below the owner's holds items no thief
    /// has reserved. `depth` is 1, or at most `top - low`: `top` starts at
    /// the block count and never falls below `low`, so this never wraps.
    fn pending_below(&self, depth: u64) -> bool {
        let below = self.top.get() - depth;
        if below < self.low.get() {
            // The block belongs to an earlier lap, or was never used.
            return false;
        }
        let (block, block_round) = self.ring.locate(below);
        // Relaxed: a hint; no item is read on its strength.
        let steal = self.ring.block(block).thief.steal.load(Ordering::Relaxed);
        round(steal) == block_round && index(steal) < self.margin
    }

    /// The items in the queue: the owner's private ones plus those thieves
    /// could steal. Exact when no thief is active; reads every block's
    /// steal position.
    pub fn len(&self) -> usize {
        self.private_len() + self.ring.estimated_len()
    }

    /// `true` when neither the owner nor a thief could take an item now.
    ///
    /// Exact when no thief is active; reads every block's steal position.
    pub fn is_empty(&self) -> bool {
        self.back.get() == self.front.get() && self.ring.estimated_len() == 0
    }

    #[inline(always)]
    fn own_block(&self) -> &Block<T> {
        // SAFETY: `top_ptr` points into the blocks of `self.ring`, which
        // live as long as the `Arc` this worker holds; only shared
        // references to blocks are ever made.
        unsafe { self.top_ptr.get().as_ref() }
    }

    /// Free entries in the owner's block, moving up a block first if it is
    /// full and round control allows; used to size batch steals.
    fn room(&self) -> u32 {
        if self.back.get() == self.margin && !self.advance() {
            return 0;
        }
        self.margin - self.back.get()
    }
}

// SAFETY: the cached block pointer points into the ring the worker co-owns
// through its `Arc`, so sending the worker sends that co-ownership along;
// as for the ring itself, the items cross threads, hence `T: Send`.
unsafe impl<T: Send> Send for Worker<T> {}

impl<T> Drop for Worker<T> {
    fn drop(&mut self) {
        // The owner's block is closed to thieves, so its items die with the
        // worker; the ring drops what is left in granted blocks.
        // SAFETY: the owner's items, closed to thieves, dropped once here.
        unsafe {
            self.own_block()
                .drop_range(self.front.get(), self.back.get())
        };
    }
}

impl<T> fmt::Debug for Worker<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("lifo::Worker")
            .field("capacity", &self.capacity())
            .finish_non_exhaustive()
    }
}

/// A thief's handle to a LIFO queue: steals the oldest items.
///
/// Clone it freely; every clone steals from the same queue.
pub struct Stealer<T> {
    ring: Arc<Ring<T, Lifo>>,
}

impl<T> Stealer<T> {
    /// Steals one item, the oldest of the first block with stealable items.
    ///
    /// [`Steal::Retry`] means the attempt lost a race and the queue may
    /// still hold stealable items.
    pub fn steal(&self) -> Steal<T> {
        self.ring.steal()
    }

    /// Steals up to one block's stealable items, as many as fit in the
    /// current block of `dest` plus one: pushes them into `dest` and returns
    /// the oldest (the one that does not need to go into `dest`).
    ///
    /// ```
    /// use bwos_queue::{lifo, Config};
    ///
    /// let (victim, stealer) = lifo::new::<u32>(Config::new(4, 8)?);
    /// let (thief, _) = lifo::new::<u32>(Config::new(4, 8)?);
    /// for i in 0..16 {
    ///     victim.push(i).unwrap();
    /// }
    /// assert_eq!(stealer.steal_batch_and_pop(&thief).success(), Some(0));
    /// assert_eq!(thief.pop(), Some(7)); // the rest of the first block
    /// # Ok::<(), bwos_queue::ConfigError>(())
    /// ```
    pub fn steal_batch_and_pop(&self, dest: &Worker<T>) -> Steal<T> {
        self.steal_batch_and_pop_counted(dest).0
    }

    /// [`steal_batch_and_pop`](Self::steal_batch_and_pop), and how many
    /// items it took (the one returned included; 0 unless it succeeded),
    /// for a runtime that counts what is stolen from each queue.
    ///
    /// ```
    /// use bwos_queue::{lifo, Config};
    ///
    /// let (victim, stealer) = lifo::new::<u32>(Config::new(4, 8)?);
    /// let (thief, _) = lifo::new::<u32>(Config::new(4, 8)?);
    /// for i in 0..5 {
    ///     victim.push(i).unwrap();
    /// }
    /// assert!(victim.share()); // the owner's block is private until shared
    /// let (stolen, count) = stealer.steal_batch_and_pop_counted(&thief);
    /// assert_eq!(stolen.success(), Some(0));
    /// assert_eq!(count, 5); // the one returned, and four pushed into `thief`
    /// assert_eq!(thief.len(), 4);
    /// # Ok::<(), bwos_queue::ConfigError>(())
    /// ```
    pub fn steal_batch_and_pop_counted(&self, dest: &Worker<T>) -> (Steal<T>, usize) {
        let room = dest.room();
        let mut pushed = 0;
        let stolen = self.ring.steal_batch(room, |item| {
            if dest.push(item).is_err() {
                unreachable!("the batch was sized to the room in the destination block");
            }
            pushed += 1;
        });
        let count = if stolen.is_success() { pushed + 1 } else { 0 };
        (stolen, count)
    }

    /// Steals up to one block's stealable items into `dest`, as many as fit
    /// in its current block (moving it up a block first if that one is
    /// full), oldest first: crossbeam-deque's `steal_batch`. `Empty` when
    /// there is nothing to steal or `dest` is full.
    ///
    /// ```
    /// use bwos_queue::{lifo, Config};
    ///
    /// let (victim, stealer) = lifo::new::<u32>(Config::new(4, 8)?);
    /// let (thief, _) = lifo::new::<u32>(Config::new(4, 8)?);
    /// for i in 0..16 {
    ///     victim.push(i).unwrap();
    /// }
    /// assert!(stealer.steal_batch(&thief).is_success());
    /// assert_eq!(thief.len(), 8); // one block
    /// # Ok::<(), bwos_queue::ConfigError>(())
    /// ```
    pub fn steal_batch(&self, dest: &Worker<T>) -> Steal<()> {
        let room = dest.room();
        self.ring.steal_batch_into(room, |item| {
            if dest.push(item).is_err() {
                unreachable!("the batch was sized to the room in the destination block");
            }
        })
    }

    /// How many items thieves could steal now: the sum over all blocks of
    /// their stealable entries (one relaxed load per block), racy when the
    /// owner or thieves are active. **Items in the owner's own block are
    /// not counted**: they are invisible to thieves until the block fills
    /// up or [`Worker::share`] opens it (see the module docs).
    pub fn len(&self) -> usize {
        self.ring.estimated_len()
    }

    /// Whether thieves could steal nothing now ([`len`](Self::len) is 0).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The old name of [`len`](Self::len).
    #[deprecated(since = "0.1.0", note = "use `Stealer::len` (crossbeam-deque's name)")]
    pub fn estimated_len(&self) -> usize {
        self.len()
    }

    /// The probabilistic probe of the paper (section 3.4): looks at block
    /// `sample % num_blocks` only and reports whether it holds stealable
    /// items. Feed it a random number; it answers `true` with probability
    /// about (stealable items) / capacity, which a victim-selection policy
    /// uses to prefer fuller victims with one cache-line read.
    pub fn probe(&self, sample: usize) -> bool {
        self.ring.probe(sample)
    }

    /// Steals one item from block `sample % num_blocks` only.
    pub fn steal_sampled(&self, sample: usize) -> Steal<T> {
        self.ring.steal_sampled(sample)
    }

    /// How many items the queue holds at most.
    pub fn capacity(&self) -> usize {
        self.ring.capacity()
    }
}

impl<T> Clone for Stealer<T> {
    fn clone(&self) -> Self {
        Stealer {
            ring: self.ring.clone(),
        }
    }
}

impl<T> fmt::Debug for Stealer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("lifo::Stealer")
            .field("capacity", &self.capacity())
            .finish_non_exhaustive()
    }
}

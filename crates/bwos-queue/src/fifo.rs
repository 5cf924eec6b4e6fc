//! The FIFO BWoS queue: the owner pushes at the back and pops at the front,
//! thieves steal from any block in between (stealing from the middle).
//!
//! Suited to task schedulers that want fairness (the paper's Go and Tokio
//! uses): the oldest task runs first, whoever runs it.
//!
//! # Protocol
//! The owner plays two roles, producer and consumer, each walking virtual
//! blocks `v` (block `v % n` in round `v / n`, `n` blocks) with a private
//! position.
//!
//! * The producer writes at `back` in its block and publishes each entry
//!   with a Release store of `back`: thieves may steal from the producer's
//!   block while it is being filled, so this is the one synchronisation on
//!   the fast path, and it is a plain store on x86 and `stlr` on Arm, never
//!   a read-modify-write or a fence.
//! * The consumer reads at `front` in its block. Thieves never enter the
//!   consumer's block (unless the owner shares it, below): the consumer
//!   **takes over** each block as it enters it by swapping the block's
//!   `steal` position with the margin, and adds the entries it took over
//!   to the block's `stolen` count, so that count reaches the margin once
//!   thieves finished the entries they reserved.
//! * **Round control and reset.** The producer enters a block for a new lap
//!   only when the consumer finished the previous lap there (`front` is the
//!   margin of the previous round) and every thief finished reading
//!   (`stolen` is the margin, Acquire); otherwise `push` reports full. The
//!   producer then resets `stolen` and `back` and finally opens the block to
//!   thieves by resetting `steal` (Release): the owner, not the thieves,
//!   resets the steal position (paper section 5.2). The consumer enters a
//!   block only once the producer has reached it in the same round.
//! * Each block is **granted** from its first entry: thieves may steal any
//!   published entry of any block except the consumer's (unless the owner
//!   shares it, below), which is what lets them steal from the middle of
//!   the queue.
//! * **Hand-back ([`Worker::share`]).** The entries of the consumer block
//!   from the private front `f` on (published, or still to be pushed if the
//!   producer is in the block) stay private until the consumer pops them;
//!   a runtime whose worker is about to run a task that may block gives
//!   them back to thieves. Of the `margin - taken` entries the takeover
//!   counted as the consumer's in `stolen`, the `margin - f` from `f` on are
//!   not the consumer's any more, so `share` first subtracts them (a
//!   `fetch_sub`: a read-modify-write, so it continues the release sequence
//!   of the thieves' increments, which the producer acquires), and then
//!   stores `steal = (consumer round, f)` with Release, pairing with the
//!   thieves' Acquire load in `reserve`. Only the owner reads `stolen`,
//!   and it reads it after its own `fetch_sub`: the count then is the
//!   entries finished by thieves plus those the consumer popped
//!   (`f - taken`), at least 0 and equal to the margin only once every
//!   entry of the block has been popped or stolen and read, exactly the
//!   condition for reuse. So exactly-once does not depend on the order of
//!   the two steps or on the Release; what they buy is this. A plain store
//!   ends the release sequence of the reset's Release store of `steal`, so
//!   a thief that read a Relaxed shared position could load a `back` of
//!   the previous round and report `Retry` for a block full of stealable
//!   entries; the Release store starts a new sequence (the thieves' CASes
//!   continue it), and a thief that sees the shared position sees this
//!   round's `back` at least as far as it was when shared. And the thieves'
//!   increments for entries from `f` on then follow the subtraction in
//!   `stolen`'s modification order, so `stolen` never exceeds the margin
//!   even transiently (it would stay below twice the margin, which the
//!   packed index can hold).
//! * **Retake.** While the block is shared the owner keeps its private
//!   `front` at the margin, so `pop`'s fast path (`front < back`) fails
//!   with no extra branch and `pop_slow` retakes the block exactly as it
//!   takes over a block it enters: a Relaxed swap of `steal` to the margin
//!   (the entries below the old position are the thieves', the ones above
//!   were written by this thread), `fetch_add(margin - taken)` on `stolen`
//!   (an RMW, for the release sequence), `front = taken`. `len`,
//!   `is_empty` and `Drop` need no retake: a shared block's entries are in
//!   its stealable range (`steal..back`, same round), which
//!   [`Stealer::len`] counts and the ring's drop drops, while the owner's
//!   own range is empty. If the producer wraps around to the shared
//!   consumer block, its checks hold only when they are genuine: the
//!   private front reads as finished (the margin) and `stolen` reaches the
//!   margin only when thieves have taken and read every shared entry; then
//!   the block is reset as usual and the worker forgets it was shared (the
//!   consumer is done with it: front at the margin of the old round).
//! * **A stale steal word may come back.** Without sharing, `steal` only
//!   grows within a round until the takeover sets it to the margin. With
//!   it, the positions below the margin a block goes through in a round are
//!   still non-decreasing (thieves add to it, a share stores the private
//!   front, which is at least the position the takeover or retake before
//!   it found), but a share may store exactly that position. A thief that
//!   loaded it before the takeover or retake then succeeds with its CAS:
//!   harmless, as the owner popped nothing in between (the value would
//!   have grown) and no thief reserved anything (likewise), so the entries
//!   from there on are untouched and the thief's count is bounded by the
//!   `back` it acquired.

use std::cell::Cell;
use std::fmt;
use std::ops::Range;
use std::ptr::NonNull;

use crate::block::{Block, Positions};
use crate::config::Config;
use crate::packed::{index, pack, previous_round, round, round_after};
use crate::ring::{Flavor, Reserve, Ring};
use crate::steal::Steal;
use crate::sync::{Arc, Ordering, OwnedLoad};

/// Thief-side rules of the FIFO variant.
pub(crate) enum Fifo {}

impl Flavor for Fifo {
    fn stealable<T>(block: &Block<T>, block_size: u32) -> Range<u32> {
        // Relaxed: a snapshot for estimates and for dropping with `&mut`
        // access; nothing is read through it concurrently.
        let steal = block.thief.steal.load(Ordering::Relaxed);
        let back = block.owner.back.load(Ordering::Relaxed);
        if index(steal) >= block_size || round(steal) != round(back) {
            return 0..0;
        }
        index(steal)..index(back).max(index(steal))
    }

    fn reserve<T>(block: &Block<T>, block_size: u32, max: u32) -> Reserve {
        // Acquire: pairs with the producer's Release reset of `steal`, so a
        // thief that sees the new round also sees the reset `back` below,
        // and with `share`'s Release store of the consumer's front, for the
        // same reason and to order the owner's `fetch_sub` on `stolen`
        // before this thief's `fetch_add`.
        let steal = block.thief.steal.load(Ordering::Acquire);
        let start = index(steal);
        if start >= block_size {
            return Reserve::Empty;
        }
        // Acquire: pairs with the producer's Release store of `back` in
        // `push`; the entries below it are written and visible.
        let back = block.owner.back.load(Ordering::Acquire);
        if round(back) != round(steal) {
            // The producer is recycling the block for a new round.
            return Reserve::Contended;
        }
        if start >= index(back) {
            return Reserve::Empty;
        }
        let count = (index(back) - start).min(max);
        // Relaxed: the entries' visibility comes from the `back` load; the
        // CAS only has to be exact. It fails on a takeover or retake (the
        // consumer swapped in the margin) and on a reset (the round
        // changed). Within a round `steal` returns to a value it had only
        // when a share stores the position a retake found, with nothing
        // popped or reserved in between: the entries from there on are
        // still untouched, so the stale reservation is a valid one (see the
        // module docs).
        match block.thief.steal.compare_exchange(
            steal,
            steal + u64::from(count),
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) {
            Ok(_) => Reserve::Got { start, count },
            Err(_) => Reserve::Contended,
        }
    }
}

/// Creates a FIFO queue: the owner's [`Worker`] and a [`Stealer`] for thieves.
///
/// ```
/// use bwos_queue::{fifo, Config};
///
/// let (worker, stealer) = fifo::new::<u32>(Config::new(8, 4)?);
/// for i in 0..10 {
///     worker.push(i).unwrap(); // blocks: [0 1 2 3] [4 5 6 7] [8 9]
/// }
/// // The owner pops the oldest item and, with it, takes over the first block.
/// assert_eq!(worker.pop(), Some(0));
/// // Thieves steal from the other blocks, here the next one.
/// assert_eq!(stealer.steal().success(), Some(4));
/// assert_eq!(worker.pop(), Some(1));
/// # Ok::<(), bwos_queue::ConfigError>(())
/// ```
pub fn new<T>(config: Config) -> (Worker<T>, Stealer<T>) {
    let n = config.num_blocks() as u64;
    let margin = config.block_size() as u32;
    // Rounds 0 and 1, counted from the configured first round.
    let (round_0, round_1) = (config.first_round(), round_after(config.first_round(), 1));
    let ring = Arc::new(Ring::new(&config, |i| {
        if i == 0 {
            // The producer starts here in round 1, open to thieves from the
            // first entry. `front` still says "round 0 consumed".
            Positions {
                front: pack(round_0, margin),
                ..Positions::all(pack(round_1, 0))
            }
        } else {
            // Round 0, consumed and stolen: ready for round 1.
            Positions::all(pack(round_0, margin))
        }
    }));
    let worker = Worker {
        ring: ring.clone(),
        producer: Cell::new(n),
        producer_block: Cell::new(0),
        producer_ptr: Cell::new(ring.block_ptr(0)),
        back: Cell::new(pack(round_1, 0)),
        // The consumer starts on the block before, finished with round 0,
        // and takes over block 0 on its first `pop`.
        consumer: Cell::new(n - 1),
        consumer_block: Cell::new(config.num_blocks() - 1),
        consumer_ptr: Cell::new(ring.block_ptr(config.num_blocks() - 1)),
        front: Cell::new(margin),
        shared: Cell::new(false),
        margin,
    };
    (worker, Stealer { ring })
}

/// The owner's end of a FIFO queue: push at the back, pop at the front.
///
/// There is one worker per queue; it is [`Send`] but not [`Sync`], so only
/// one thread at a time can use it.
///
/// The auto traits are part of the contract: `Worker<T>` is `Send` (for
/// `T: Send`) and `Stealer<T>` is `Send + Sync`,
///
/// ```
/// fn send<T: Send>() {}
/// fn sync<T: Sync>() {}
/// send::<bwos_queue::fifo::Worker<u32>>();
/// send::<bwos_queue::fifo::Stealer<u32>>();
/// sync::<bwos_queue::fifo::Stealer<u32>>();
/// ```
///
/// but a `Worker` is never `Sync` (two threads could push at once),
///
/// ```compile_fail
/// fn sync<T: Sync>() {}
/// sync::<bwos_queue::fifo::Worker<u32>>();
/// ```
///
/// and items that must stay on their thread cannot be stolen:
///
/// ```compile_fail
/// fn send<T: Send>() {}
/// send::<bwos_queue::fifo::Stealer<std::rc::Rc<u32>>>();
/// ```
pub struct Worker<T> {
    ring: Arc<Ring<T, Fifo>>,
    /// The virtual block the producer writes to.
    producer: Cell<u64>,
    /// `producer % num_blocks`, kept to spare the fast path a division.
    producer_block: Cell<usize>,
    /// Block `producer_block` of `ring`, cached for the fast path.
    producer_ptr: Cell<NonNull<Block<T>>>,
    /// The producer block's `back` word. The block's shared word is kept
    /// equal to it (thieves read it); this copy spares the fast path a load
    /// from the shared cache line.
    back: Cell<u64>,
    /// The virtual block the consumer reads from.
    consumer: Cell<u64>,
    /// `consumer % num_blocks`.
    consumer_block: Cell<usize>,
    /// Block `consumer_block` of `ring`, cached for the fast path.
    consumer_ptr: Cell<NonNull<Block<T>>>,
    /// The consumer block's front index. Nobody else reads it while the
    /// consumer is in the block: the consumer parks it in the block's
    /// shared `front` word when it moves on. The margin while the block is
    /// shared, so that `pop`'s fast path finds nothing and `pop_slow`
    /// retakes the block.
    front: Cell<u32>,
    /// Whether the consumer block was given back to thieves (`share`) and
    /// not taken back yet.
    shared: Cell<bool>,
    /// The block size, kept here to spare the fast path a load.
    margin: u32,
}

impl<T> Worker<T> {
    /// Pushes `item` at the back; when the queue is full the item comes back
    /// as `Err(item)`.
    ///
    /// The queue is full when the producer's block is full and the next
    /// block still holds items of the previous lap (not yet popped, or
    /// still being read by a thief): so between `capacity - block_size + 1`
    /// and `capacity` items may be enough to fill it. The owner never waits
    /// for thieves.
    #[inline]
    pub fn push(&self, item: T) -> Result<(), T> {
        let back = self.back.get();
        if index(back) < self.margin {
            // SAFETY: `producer_ptr` points into the blocks of `self.ring`,
            // which live as long as the `Arc` this worker holds.
            let block = unsafe { self.producer_ptr.get().as_ref() };
            // SAFETY: entries at and above `back` are empty: the block was
            // reset for this round after every reader of the previous round
            // finished, and thieves and the consumer read only below `back`,
            // which is below the block size.
            unsafe { block.write(index(back), item) };
            // Release: pairs with the thieves' Acquire load of `back`; the
            // entry just written becomes visible with it.
            block.owner.back.store(back + 1, Ordering::Release);
            self.back.set(back + 1);
            return Ok(());
        }
        self.push_slow(item)
    }

    #[cold]
    fn push_slow(&self, item: T) -> Result<(), T> {
        if !self.advance_producer() {
            return Err(item);
        }
        self.push(item)
    }

    /// Moves the producer to the next block. Returns `false`, changing
    /// nothing, when round control forbids it (full).
    fn advance_producer(&self) -> bool {
        let ring = &*self.ring;
        let margin = self.margin;
        let next = self.producer.get() + 1;
        let (next_block, next_round) = ring.locate(next);
        let target = ring.block(next_block);
        let finished = pack(previous_round(next_round), margin);
        // The consumer's front: private while it is in the block, parked
        // in the shared word (written only by this thread) otherwise. A
        // shared consumer block has its private front at the margin, so
        // only the `stolen` check below decides, and it passes only once
        // thieves have taken and read every shared entry.
        let front = if next_block == self.consumer_block.get() {
            pack(ring.locate(self.consumer.get()).1, self.front.get())
        } else {
            // SAFETY: only the owner stores a block's `front` and `back`, and
            // this is the owner's thread (`Worker` is `!Sync`).
            unsafe { target.owner.front.load_owned() }
        };
        if front != finished {
            return false;
        }
        // Acquire: pairs with the Release `fetch_add` of every thief that
        // read an entry of this block in the previous round, so those reads
        // happen before the writes of the new round.
        if target.thief.stolen.load(Ordering::Acquire) != finished {
            return false;
        }
        // Relaxed: thieves do not look at `stolen`, and they read `back`
        // only after acquiring the new `steal` below.
        target
            .thief
            .stolen
            .store(pack(next_round, 0), Ordering::Relaxed);
        target
            .owner
            .back
            .store(pack(next_round, 0), Ordering::Relaxed);
        // Release: pairs with the thieves' Acquire load of `steal`: whoever
        // sees the new round sees the reset `back`. Thieves holding a word
        // of the previous round fail their CAS.
        target
            .thief
            .steal
            .store(pack(next_round, 0), Ordering::Release);
        if next_block == self.consumer_block.get() {
            // The consumer is done with the block's previous round (its
            // front is at the margin); if it had shared the block, there
            // is nothing left to retake, and retaking would swap the new
            // round's `steal`.
            self.shared.set(false);
        }
        self.producer.set(next);
        self.producer_block.set(next_block);
        self.producer_ptr.set(ring.block_ptr(next_block));
        self.back.set(pack(next_round, 0));
        true
    }

    /// Pops the oldest item the owner can reach: items are popped in push
    /// order, minus those thieves took.
    #[inline]
    pub fn pop(&self) -> Option<T> {
        let block = self.consumer_block();
        let front = self.front.get();
        // `back` is written only by this thread. Compare indices: once the
        // front is at the margin the producer may already have reset `back`
        // for a newer round.
        // SAFETY: only the owner stores a block's `front` and `back`, and
        // this is the owner's thread (`Worker` is `!Sync`).
        if front < index(unsafe { block.owner.back.load_owned() }) {
            self.front.set(front + 1);
            // SAFETY: the consumer took the block over, so entries from
            // `front` up to `back` are its own, written by this thread.
            return Some(unsafe { block.read(front) });
        }
        self.pop_slow()
    }

    #[cold]
    fn pop_slow(&self) -> Option<T> {
        let ring = &*self.ring;
        let margin = self.margin;
        if self.shared.get() {
            self.retake();
        }
        loop {
            let block = self.consumer_block();
            let front = self.front.get();
            // SAFETY: only the owner stores a block's `front` and `back`, and
            // this is the owner's thread (`Worker` is `!Sync`).
            if front < index(unsafe { block.owner.back.load_owned() }) {
                return self.pop();
            }
            if front < margin {
                // The producer is still in this block: nothing more yet.
                return None;
            }
            let next = self.consumer.get() + 1;
            let (next_block, next_round) = ring.locate(next);
            let target = ring.block(next_block);
            // Written only by this thread (the producer).
            // SAFETY: only the owner stores a block's `front` and `back`, and
            // this is the owner's thread (`Worker` is `!Sync`).
            if round(unsafe { target.owner.back.load_owned() }) != next_round {
                // The producer has not reached the block in this round.
                return None;
            }
            // Park the finished block's front for the producer's round
            // check. Relaxed: read only by this thread.
            let current_round = ring.locate(self.consumer.get()).1;
            block
                .owner
                .front
                .store(pack(current_round, margin), Ordering::Relaxed);
            // Takeover. Relaxed: the entries thieves reserved (below the old
            // steal position) are not touched by the consumer, and the ones
            // it takes were written by this thread.
            let old = target
                .thief
                .steal
                .swap(pack(next_round, margin), Ordering::Relaxed);
            let taken = index(old);
            // Count the taken-over entries as "finished" so `stolen` reaches
            // the margin when the thieves are done. Relaxed: an RMW, so it
            // continues the release sequence of the thieves' increments.
            target
                .thief
                .stolen
                .fetch_add(u64::from(margin - taken), Ordering::Relaxed);
            self.consumer.set(next);
            self.consumer_block.set(next_block);
            self.consumer_ptr.set(ring.block_ptr(next_block));
            self.front.set(taken);
        }
    }

    /// Gives the entries of the consumer block that the owner has not
    /// popped back to thieves: those published and, if the producer is
    /// still filling the block, those it will push there. Returns whether
    /// it changed anything: `false` when the block is already shared or
    /// the consumer has nothing left in it.
    ///
    /// Thieves never enter the block the owner pops from, so while the
    /// owner runs one item for long (a task that blocks), the items queued
    /// behind it in that block (up to a block, and every item pushed while
    /// the consumer is in the producer's block) wait for it. A runtime
    /// calls `share` before running an item when other workers are idle.
    /// It costs a read-modify-write and a store, and the owner's next `pop`
    /// takes the block back (a swap and a read-modify-write) and pops the
    /// oldest item thieves have not taken; `push` and `pop` keep their fast
    /// paths. Calling it again before that is a check of a private flag.
    ///
    /// ```
    /// use bwos_queue::{fifo, Config};
    ///
    /// let (worker, stealer) = fifo::new::<u32>(Config::new(4, 4)?);
    /// for i in 0..6 {
    ///     worker.push(i).unwrap(); // blocks: [0 1 2 3] [4 5]
    /// }
    /// assert_eq!(worker.pop(), Some(0)); // takes the first block over
    /// assert_eq!((worker.private_len(), stealer.len()), (3, 2));
    ///
    /// assert!(worker.share()); // 1, 2 and 3 are stealable again
    /// assert!(!worker.share()); // already shared
    /// assert_eq!((worker.private_len(), stealer.len()), (0, 5));
    /// assert_eq!(stealer.steal().success(), Some(1));
    ///
    /// assert_eq!(worker.pop(), Some(2)); // takes the rest back
    /// assert!(!worker.is_shared());
    /// assert_eq!((worker.private_len(), stealer.len()), (1, 2));
    /// # Ok::<(), bwos_queue::ConfigError>(())
    /// ```
    pub fn share(&self) -> bool {
        let front = self.front.get();
        // While shared, the private front is the margin too.
        if front == self.margin {
            return false;
        }
        let ring = &*self.ring;
        let block = self.consumer_block();
        let consumer_round = ring.locate(self.consumer.get()).1;
        // The entries from `front` on stop counting as the consumer's: the
        // takeover (or retake) added them, thieves will add them as they
        // finish them. Relaxed: an RMW, so it continues the release
        // sequence of the thieves' Release increments that the producer
        // acquires; the Release store below orders it before the
        // increments of thieves that reserve from `front` on. It cannot
        // go below the round's 0: `stolen` holds at least the
        // `margin - taken` that the takeover (or the last retake) added,
        // and `front >= taken`.
        block
            .thief
            .stolen
            .fetch_sub(u64::from(self.margin - front), Ordering::Relaxed);
        // Release: pairs with the thieves' Acquire load of `steal` in
        // `Fifo::reserve`: a thief that reserves from `front` on sees this
        // round's `back` and the subtraction above.
        block
            .thief
            .steal
            .store(pack(consumer_round, front), Ordering::Release);
        self.front.set(self.margin);
        self.shared.set(true);
        true
    }

    /// Takes a shared consumer block back from thieves, as the consumer
    /// takes over a block it enters: the entries no thief reserved are the
    /// owner's again.
    fn retake(&self) {
        let margin = self.margin;
        let block = self.consumer_block();
        let consumer_round = self.ring.locate(self.consumer.get()).1;
        // Relaxed, as in the takeover: the entries below the old position
        // are the thieves' and not touched here, the ones from it on were
        // written by this thread; the swap is atomic, so the split is exact.
        // The block is still in the consumer's round: the producer resets
        // it only after clearing `shared` (`advance_producer`).
        let old = block
            .thief
            .steal
            .swap(pack(consumer_round, margin), Ordering::Relaxed);
        debug_assert_eq!(round(old), consumer_round, "a shared block keeps its round");
        let taken = index(old);
        if taken < margin {
            // Count them as the consumer's again. Relaxed: an RMW, so it
            // continues the release sequence of the thieves' increments.
            block
                .thief
                .stolen
                .fetch_add(u64::from(margin - taken), Ordering::Relaxed);
        }
        self.front.set(taken);
        self.shared.set(false);
    }

    /// Whether the consumer block is shared: [`share`](Self::share) gave it
    /// back to thieves and no `pop` has taken it back yet.
    ///
    /// ```
    /// use bwos_queue::{fifo, Config};
    ///
    /// let (worker, _stealer) = fifo::new::<u32>(Config::new(4, 4)?);
    /// worker.push(1).unwrap();
    /// worker.push(2).unwrap();
    /// assert_eq!(worker.pop(), Some(1));
    /// assert!(!worker.is_shared());
    /// assert!(worker.share());
    /// assert!(worker.is_shared());
    /// assert_eq!(worker.pop(), Some(2));
    /// assert!(!worker.is_shared());
    /// # Ok::<(), bwos_queue::ConfigError>(())
    /// ```
    #[inline]
    pub fn is_shared(&self) -> bool {
        self.shared.get()
    }

    /// The items only the owner can take now: those in the consumer block
    /// it has not popped, or 0 while the block is
    /// [shared](Self::share). Two plain loads, exact.
    ///
    /// ```
    /// use bwos_queue::{fifo, Config};
    ///
    /// let (worker, stealer) = fifo::new::<u32>(Config::new(4, 2)?);
    /// for i in 0..4 {
    ///     worker.push(i).unwrap(); // blocks: [0 1] [2 3]
    /// }
    /// assert_eq!(worker.private_len(), 0); // the consumer is in no block yet
    /// assert_eq!(worker.pop(), Some(0));
    /// assert_eq!(worker.private_len(), 1);
    /// assert!(worker.share());
    /// assert_eq!(worker.private_len(), 0);
    /// assert_eq!(stealer.len(), 3);
    /// # Ok::<(), bwos_queue::ConfigError>(())
    /// ```
    #[inline]
    pub fn private_len(&self) -> usize {
        self.own_items().len()
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

    /// The items in the queue: those in the owner's consumer block
    /// ([`private_len`](Self::private_len)) plus those thieves could steal.
    /// Exact when no thief is active; reads every block's positions.
    pub fn len(&self) -> usize {
        self.own_items().len() + self.ring.estimated_len()
    }

    /// `true` when neither the owner nor a thief could take an item now.
    ///
    /// Exact when no thief is active; reads every block's positions.
    pub fn is_empty(&self) -> bool {
        self.own_items().is_empty() && self.ring.estimated_len() == 0
    }

    #[inline(always)]
    fn consumer_block(&self) -> &Block<T> {
        // SAFETY: `consumer_ptr` points into the blocks of `self.ring`,
        // which live as long as the `Arc` this worker holds.
        unsafe { self.consumer_ptr.get().as_ref() }
    }

    /// The entries of the consumer's block holding items only the owner
    /// can take: none while the block is shared (the private front is at
    /// the margin then).
    fn own_items(&self) -> Range<u32> {
        let front = self.front.get();
        // SAFETY: only the owner stores a block's `front` and `back`, and
        // this is the owner's thread (`Worker` is `!Sync`).
        let back = index(unsafe { self.consumer_block().owner.back.load_owned() });
        front..back.max(front)
    }

    /// Free entries in the producer's block, moving to the next block first
    /// if it is full and round control allows; used to size batch steals.
    fn room(&self) -> u32 {
        if index(self.back.get()) == self.margin && !self.advance_producer() {
            return 0;
        }
        self.margin - index(self.back.get())
    }
}

// SAFETY: the cached block pointers point into the ring the worker co-owns
// through its `Arc`, so sending the worker sends that co-ownership along;
// as for the ring itself, the items cross threads, hence `T: Send`.
unsafe impl<T: Send> Send for Worker<T> {}

impl<T> Drop for Worker<T> {
    fn drop(&mut self) {
        // The consumer's block is closed to thieves unless shared, so its
        // items die with the worker; the ring drops what is left in the
        // other blocks and in a shared consumer block (its stealable range;
        // the worker's own range is empty then).
        let own = self.own_items();
        // SAFETY: the consumer's items, closed to thieves, dropped once here.
        unsafe { self.consumer_block().drop_range(own.start, own.end) };
    }
}

impl<T> fmt::Debug for Worker<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("fifo::Worker")
            .field("capacity", &self.capacity())
            .finish_non_exhaustive()
    }
}

/// A thief's handle to a FIFO queue: steals from any block but the
/// owner's consumer block, and from that one too while the owner
/// [shares](Worker::share) it.
///
/// Clone it freely; every clone steals from the same queue.
pub struct Stealer<T> {
    ring: Arc<Ring<T, Fifo>>,
}

impl<T> Stealer<T> {
    /// Steals one item, the oldest of the first block with stealable items
    /// (starting where the last successful steal happened).
    ///
    /// [`Steal::Retry`] means the attempt lost a race and the queue may
    /// still hold stealable items.
    pub fn steal(&self) -> Steal<T> {
        self.ring.steal()
    }

    /// Steals up to one block's stealable items, as many as fit in the
    /// producer block of `dest` plus one: pushes them into `dest` (oldest
    /// first) and returns the oldest.
    ///
    /// ```
    /// use bwos_queue::{fifo, Config};
    ///
    /// let (victim, stealer) = fifo::new::<u32>(Config::new(4, 8)?);
    /// let (thief, _) = fifo::new::<u32>(Config::new(4, 8)?);
    /// for i in 0..5 {
    ///     victim.push(i).unwrap();
    /// }
    /// assert_eq!(stealer.steal_batch_and_pop(&thief).success(), Some(0));
    /// assert_eq!(thief.pop(), Some(1));
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
    /// use bwos_queue::{fifo, Config};
    ///
    /// let (victim, stealer) = fifo::new::<u32>(Config::new(4, 8)?);
    /// let (thief, _) = fifo::new::<u32>(Config::new(4, 8)?);
    /// for i in 0..5 {
    ///     victim.push(i).unwrap();
    /// }
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
    /// use bwos_queue::{fifo, Config};
    ///
    /// let (victim, stealer) = fifo::new::<u32>(Config::new(4, 8)?);
    /// let (thief, _) = fifo::new::<u32>(Config::new(4, 8)?);
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
    /// their published, unreserved entries (two relaxed loads per block),
    /// racy when the owner or thieves are active. Items in the owner's
    /// consumer block are not counted unless the owner
    /// [shared](Worker::share) it.
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
    /// about (stealable items) / capacity.
    pub fn probe(&self, sample: usize) -> bool {
        self.ring.probe(sample)
    }

    /// Steals one item from block `sample % num_blocks` only: with a random
    /// `sample`, thieves spread over the blocks instead of contending on the
    /// oldest one (the paper's stealing from the middle).
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
        f.debug_struct("fifo::Stealer")
            .field("capacity", &self.capacity())
            .finish_non_exhaustive()
    }
}

//! One block of a BWoS queue: its four packed positions and where its
//! entries are.

use std::mem::MaybeUninit;
use std::ptr::NonNull;

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicU64, Ordering, UnsafeCell};

/// The positions the owner writes, and where the block's entries are.
/// They share a cache line: the owner touches the positions on every
/// operation and thieves (FIFO only) merely read `back`. The entries'
/// address rides along in the same line (the owner reads it on every
/// operation of a FIFO queue), so a block is two `CachePadded` units
/// (256 bytes on x86_64).
pub(crate) struct OwnerSide<T> {
    /// Where the owner gets from (LIFO: the lowest index the owner may pop;
    /// FIFO: the consumer position).
    pub(crate) front: AtomicU64,
    /// Where the owner puts to (one past the last written entry).
    pub(crate) back: AtomicU64,
    /// The block's first entry, in the ring's one allocation of entries
    /// ([`crate::ring`]); never changes.
    slots: NonNull<Slot<T>>,
    /// The number of entries, for debug assertions.
    len: u32,
}

/// The positions thieves write, on a cache line of their own so that
/// thieves stealing from a block do not evict the owner's metadata.
#[derive(Debug)]
pub(crate) struct ThiefSide {
    /// The next entry a thief may reserve; the block margin (the block size)
    /// means "not open to thieves".
    pub(crate) steal: AtomicU64,
    /// How many entries of this round thieves have finished reading (the
    /// FIFO consumer adds the entries it took over, too).
    pub(crate) stolen: AtomicU64,
}

/// The four initial positions of a block, as packed words.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Positions {
    pub(crate) front: u64,
    pub(crate) back: u64,
    pub(crate) steal: u64,
    pub(crate) stolen: u64,
}

impl Positions {
    /// Every position at `word`.
    pub(crate) const fn all(word: u64) -> Self {
        Positions {
            front: word,
            back: word,
            steal: word,
            stolen: word,
        }
    }
}

/// One entry of a block.
pub(crate) type Slot<T> = UnsafeCell<MaybeUninit<T>>;

/// A block: its metadata, in two `CachePadded` units; its `block_size` entries
/// live in the ring's allocation.
pub(crate) struct Block<T> {
    pub(crate) owner: CachePadded<OwnerSide<T>>,
    pub(crate) thief: CachePadded<ThiefSide>,
}

impl<T> Block<T> {
    /// A block whose entries are the `block_size` entries from `slots` on.
    ///
    /// # Safety
    /// `slots` points to `block_size` entries that outlive the block and
    /// that no other block uses, through a pointer that may reach all of
    /// them.
    pub(crate) unsafe fn new(slots: NonNull<Slot<T>>, block_size: u32, init: Positions) -> Self {
        Block {
            owner: CachePadded::new(OwnerSide {
                front: AtomicU64::new(init.front),
                back: AtomicU64::new(init.back),
                slots,
                len: block_size,
            }),
            thief: CachePadded::new(ThiefSide {
                steal: AtomicU64::new(init.steal),
                stolen: AtomicU64::new(init.stolen),
            }),
        }
    }

    /// The first entry: owners cache it to index entries without loading
    /// it from the block on every operation.
    pub(crate) fn slots_ptr(&self) -> NonNull<Slot<T>> {
        self.owner.slots
    }

    /// Stores `item` in entry `index`.
    ///
    /// # Safety
    /// `index` is below the block size, the caller has exclusive access to
    /// the entry (nobody reads or writes it concurrently) and the entry
    /// holds no live item.
    #[inline(always)]
    pub(crate) unsafe fn write(&self, index: u32, item: T) {
        debug_assert!(index < self.owner.len);
        // SAFETY: the caller's contract, and `slots` reaches every entry of
        // the block (`Block::new`'s contract).
        unsafe { write_slot(self.owner.slots, index, item) }
    }

    /// Moves the item out of entry `index`, leaving the entry logically empty.
    ///
    /// # Safety
    /// `index` is below the block size, the entry holds a live item whose
    /// writing happens-before this call, and the caller is the only one
    /// reading it (it owns the entry or has reserved it).
    #[inline(always)]
    pub(crate) unsafe fn read(&self, index: u32) -> T {
        debug_assert!(index < self.owner.len);
        // SAFETY: as in `write`.
        unsafe { read_slot(self.owner.slots, index) }
    }

    /// Drops the items in entries `from..to`.
    ///
    /// # Safety
    /// As for [`Block::read`], for every entry in the range.
    pub(crate) unsafe fn drop_range(&self, from: u32, to: u32) {
        for index in from..to {
            // SAFETY: forwarded from the caller.
            drop(unsafe { self.read(index) });
        }
    }

    /// Records that thieves finished reading `count` entries.
    #[inline]
    pub(crate) fn finish_steal(&self, count: u32) {
        // Release: pairs with the owner's Acquire load of `stolen` before it
        // reuses the block in a new round; our reads of the entries happen
        // before its writes. Thieves' increments form one release sequence,
        // so the owner's single load synchronises with all of them.
        self.thief
            .stolen
            .fetch_add(u64::from(count), Ordering::Release);
    }
}

/// [`Block::write`] through a cached [`Block::slots_ptr`].
///
/// # Safety
/// As for [`Block::write`]; `slots` is the `slots_ptr` of a live block.
#[inline(always)]
pub(crate) unsafe fn write_slot<T>(slots: std::ptr::NonNull<Slot<T>>, index: u32, item: T) {
    // SAFETY: the caller guarantees `index` is within the block's entries.
    let slot = unsafe { slots.add(index as usize).as_ref() };
    // SAFETY: the caller guarantees exclusive access to an empty entry.
    slot.with_mut(|slot| unsafe { (*slot).write(item) });
}

/// [`Block::read`] through a cached [`Block::slots_ptr`].
///
/// # Safety
/// As for [`Block::read`]; `slots` is the `slots_ptr` of a live block.
#[inline(always)]
pub(crate) unsafe fn read_slot<T>(slots: std::ptr::NonNull<Slot<T>>, index: u32) -> T {
    // SAFETY: the caller guarantees `index` is within the block's entries.
    let slot = unsafe { slots.add(index as usize).as_ref() };
    // SAFETY: the caller guarantees the entry is initialised, published to
    // this thread, and read by nobody else.
    slot.with(|slot| unsafe { (*slot).assume_init_read() })
}

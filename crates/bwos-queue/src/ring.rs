//! The ring of blocks shared by the owner and the thieves, and the thief
//! side of the protocol that LIFO and FIFO have in common: finding a block
//! to steal from, reading the reserved entries out, and reporting the
//! stealable state for victim-selection policies.

use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ops::Range;
use std::ptr::NonNull;

use crossbeam_utils::CachePadded;

use crate::block::{Block, Positions, Slot, read_slot};
use crate::config::Config;
use crate::packed::round_after;
use crate::steal::Steal;
#[cfg(bwos_loom)]
use crate::sync::UnsafeCell;
use crate::sync::{AtomicUsize, Ordering};

/// What a thief's reservation attempt on one block produced.
pub(crate) enum Reserve {
    /// Entries `start..start + count` now belong to the thief.
    Got { start: u32, count: u32 },
    /// The block holds nothing a thief may take.
    Empty,
    /// The block changed under the thief (another thief or the owner won a
    /// race); it may hold items.
    Contended,
}

/// The part of the protocol where LIFO and FIFO differ on the thief side.
pub(crate) trait Flavor {
    /// The entries of `block` thieves could take right now: a racy
    /// snapshot, exact when nobody else touches the queue.
    fn stealable<T>(block: &Block<T>, block_size: u32) -> Range<u32>;

    /// Tries to reserve up to `max` (at least 1) entries of `block`.
    fn reserve<T>(block: &Block<T>, block_size: u32, max: u32) -> Reserve;
}

/// Entries reserved by a thief, not yet read.
pub(crate) struct Reserved {
    block: usize,
    start: u32,
    count: u32,
}

/// The blocks of one queue.
pub(crate) struct Ring<T, F: Flavor> {
    blocks: Box<[Block<T>]>,
    /// Every block's entries, block `i`'s from entry `i * block_size` on:
    /// one allocation, which the ring frees when it is dropped. A raw
    /// pointer (from `Box::leak`), so that the blocks' pointers into it
    /// stay valid when the ring moves. One allocation instead of one per
    /// block: the entries are never written before they are used, so the
    /// pages the queue never reaches stay untouched, where separate
    /// allocations had the allocator write a header next to each block's
    /// entries (the runtime's geometry, 32 blocks of 32 two-word entries:
    /// a new queue was 29 KiB resident, now 13 KiB; `tests/memory.rs`).
    slots: NonNull<[Slot<T>]>,
    block_size: u32,
    /// `log2(num_blocks)` when the block count is a power of two: the
    /// owner's block moves then locate blocks with a mask and a shift
    /// instead of a 64-bit division.
    block_shift: Option<u32>,
    /// The block where the last successful steal happened: thieves start
    /// looking there, so they do not rescan drained blocks.
    hint: CachePadded<AtomicUsize>,
    /// The round of virtual block 0 (see [`Config::with_first_round`]).
    first_round: u64,
    _flavor: PhantomData<F>,
}

// SAFETY: the ring owns values of type `T` and hands them from one thread to
// another (owner to thieves), which needs `T: Send`. Shared access to the
// entries is governed by the block protocol: an entry is read by exactly one
// thread, after its write happened-before that read.
unsafe impl<T: Send, F: Flavor> Send for Ring<T, F> {}
// SAFETY: as above; `&Ring` only offers the protocol's operations.
unsafe impl<T: Send, F: Flavor> Sync for Ring<T, F> {}

impl<T, F: Flavor> Ring<T, F> {
    /// A ring of `config.num_blocks()` blocks, block `i` starting at `init(i)`.
    pub(crate) fn new(config: &Config, init: impl Fn(usize) -> Positions) -> Self {
        // `Config` caps the block size at 2^31.
        let block_size = u32::try_from(config.block_size()).expect("Config bounds the block size");
        let slots = NonNull::from(Box::leak(unused_slots::<T>(config.capacity())));
        let first: NonNull<Slot<T>> = slots.cast();
        Ring {
            blocks: (0..config.num_blocks())
                .map(|i| {
                    // SAFETY: block `i`'s entries are `i * block_size ..
                    // (i + 1) * block_size` of the allocation, in bounds
                    // (it holds `num_blocks * block_size` entries), used by
                    // no other block, and freed only when the ring (which
                    // owns the blocks) is dropped; `first` comes from the
                    // whole slice, so it may reach all of them.
                    unsafe { Block::new(first.add(i * block_size as usize), block_size, init(i)) }
                })
                .collect(),
            slots,
            block_size,
            block_shift: config
                .num_blocks()
                .is_power_of_two()
                .then(|| config.num_blocks().trailing_zeros()),
            hint: CachePadded::new(AtomicUsize::new(0)),
            first_round: config.first_round(),
            _flavor: PhantomData,
        }
    }

    pub(crate) fn num_blocks(&self) -> usize {
        self.blocks.len()
    }

    pub(crate) fn capacity(&self) -> usize {
        self.blocks.len() * self.block_size as usize
    }

    #[inline(always)]
    pub(crate) fn block(&self, index: usize) -> &Block<T> {
        &self.blocks[index]
    }

    /// A pointer to block `index`, valid as long as the ring lives: the
    /// owner caches the one it works in, to spare its fast path the lookup.
    pub(crate) fn block_ptr(&self, index: usize) -> NonNull<Block<T>> {
        NonNull::from(&self.blocks[index])
    }

    /// The block index and round of virtual block number `virtual_block`:
    /// the owner walks virtual blocks 0, 1, 2, ... and block `v` is the
    /// physical block `v % num_blocks` in round `v / num_blocks`.
    pub(crate) fn locate(&self, virtual_block: u64) -> (usize, u64) {
        let n = self.blocks.len() as u64;
        let (block, lap) = match self.block_shift {
            Some(shift) => (virtual_block & (n - 1), virtual_block >> shift),
            None => (virtual_block % n, virtual_block / n),
        };
        // Rounds are compared for equality only, so they wrap modulo
        // 2^40 (see `packed`).
        (block as usize, round_after(self.first_round, lap))
    }

    /// Reserves up to `max` entries from the first block with stealable
    /// entries, starting at the hint.
    pub(crate) fn reserve_any(&self, max: u32) -> Steal<Reserved> {
        let n = self.blocks.len();
        // Relaxed: the hint only steers the search; no data is published
        // through it, and any value below `n` is a valid starting point.
        let first = self.hint.load(Ordering::Relaxed);
        let mut contended = false;
        for offset in 0..n {
            let mut index = first + offset;
            if index >= n {
                index -= n;
            }
            match F::reserve(&self.blocks[index], self.block_size, max) {
                Reserve::Got { start, count } => {
                    if offset != 0 {
                        // Relaxed: see the load above.
                        self.hint.store(index, Ordering::Relaxed);
                    }
                    return Steal::Success(Reserved {
                        block: index,
                        start,
                        count,
                    });
                }
                Reserve::Empty => {}
                Reserve::Contended => contended = true,
            }
        }
        if contended {
            Steal::Retry
        } else {
            Steal::Empty
        }
    }

    /// Reserves up to `max` entries from block `sample % num_blocks` only.
    pub(crate) fn reserve_sampled(&self, sample: usize, max: u32) -> Steal<Reserved> {
        let index = sample % self.blocks.len();
        match F::reserve(&self.blocks[index], self.block_size, max) {
            Reserve::Got { start, count } => Steal::Success(Reserved {
                block: index,
                start,
                count,
            }),
            Reserve::Empty => Steal::Empty,
            Reserve::Contended => Steal::Retry,
        }
    }

    /// Reads the reserved entries out: returns the first (the oldest) and
    /// hands the others, oldest first, to `rest`; then reports the steal
    /// finished so the owner may reuse the entries.
    ///
    /// `rest` must not panic: a panic would leave the steal unfinished and
    /// the block unusable.
    pub(crate) fn take(&self, reserved: Reserved, mut rest: impl FnMut(T)) -> T {
        let slots = self.block_slots(reserved.block);
        let end = reserved.start + reserved.count;
        // SAFETY: `reserve` gave this thread exclusive ownership of the
        // entries `start..end`, which lie within the block; they were
        // written before the Acquire operation in `reserve` that made them
        // stealable, and the owner does not touch them until
        // `finish_steal` below.
        let first = unsafe { read_slot(slots, reserved.start) };
        for index in reserved.start + 1..end {
            // SAFETY: as above.
            rest(unsafe { read_slot(slots, index) });
        }
        self.blocks[reserved.block].finish_steal(reserved.count);
        first
    }

    /// [`take`](Self::take) that hands every entry, oldest first, to
    /// `each` (which must not panic either).
    fn take_all(&self, reserved: Reserved, mut each: impl FnMut(T)) {
        let slots = self.block_slots(reserved.block);
        for index in reserved.start..reserved.start + reserved.count {
            // SAFETY: as in `take`: the reservation owns these entries of
            // the block until `finish_steal`.
            each(unsafe { read_slot(slots, index) });
        }
        self.blocks[reserved.block].finish_steal(reserved.count);
    }

    /// The entries of block `block`. Their address comes from the ring,
    /// not from the block: in the block it shares the owner's cache line,
    /// which thieves of a LIFO queue never read otherwise.
    #[inline(always)]
    fn block_slots(&self, block: usize) -> NonNull<Slot<T>> {
        // SAFETY: the block's entries start there (`Ring::new`), within
        // the allocation, through a pointer that may reach all of it.
        unsafe {
            self.slots
                .cast::<Slot<T>>()
                .add(block * self.block_size as usize)
        }
    }

    /// A racy count of the entries thieves could take now, summed over all
    /// blocks.
    pub(crate) fn estimated_len(&self) -> usize {
        self.blocks
            .iter()
            .map(|block| F::stealable(block, self.block_size).len())
            .sum()
    }

    /// Whether block `sample % num_blocks` holds stealable entries.
    pub(crate) fn probe(&self, sample: usize) -> bool {
        let block = &self.blocks[sample % self.blocks.len()];
        !F::stealable(block, self.block_size).is_empty()
    }
}

/// `count` empty entries, allocated without writing to them (in debug
/// builds too), so that their pages become resident only when used.
#[cfg(not(bwos_loom))]
fn unused_slots<T>(count: usize) -> Box<[Slot<T>]> {
    let slots: Box<[MaybeUninit<Slot<T>>]> = Box::new_uninit_slice(count);
    // SAFETY: a `Slot<T>` is an `UnsafeCell<MaybeUninit<T>>`, for which any
    // bytes, initialised or not, are a valid value.
    unsafe { slots.assume_init() }
}

/// `count` empty entries: loom's cells carry state of their own, which
/// must be built.
#[cfg(bwos_loom)]
fn unused_slots<T>(count: usize) -> Box<[Slot<T>]> {
    (0..count)
        .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
        .collect()
}

impl<T, F: Flavor> Drop for Ring<T, F> {
    fn drop(&mut self) {
        // The worker dropped the items only it could reach (its own block)
        // when it was dropped; what remains is what thieves could still
        // have taken. With every handle gone, no reservation is in flight,
        // so the stealable ranges are exact.
        for block in self.blocks.iter() {
            let range = F::stealable(block, self.block_size);
            // SAFETY: the entries in a block's stealable range hold live
            // items that nobody else can reach any more (`&mut self`).
            unsafe { block.drop_range(range.start, range.end) };
        }
        // SAFETY: the allocation came from `Box::leak` in `Ring::new` and
        // is freed once, here; the blocks that point into it are not used
        // again (they go with the ring). Its entries are `MaybeUninit`, so
        // freeing it drops no item.
        drop(unsafe { Box::from_raw(self.slots.as_ptr()) });
    }
}

impl<T, F: Flavor> Ring<T, F> {
    /// Steals one item from any block.
    pub(crate) fn steal(&self) -> Steal<T> {
        self.finish(self.reserve_any(1), |_| unreachable!("one entry reserved"))
    }

    /// Steals one item from block `sample % num_blocks`.
    pub(crate) fn steal_sampled(&self, sample: usize) -> Steal<T> {
        self.finish(self.reserve_sampled(sample, 1), |_| {
            unreachable!("one entry reserved")
        })
    }

    /// Steals up to `room + 1` items from one block: returns the oldest and
    /// hands the others to `push`, which must accept `room` items without
    /// failing or panicking.
    pub(crate) fn steal_batch(&self, room: u32, push: impl FnMut(T)) -> Steal<T> {
        let max = room.saturating_add(1);
        self.finish(self.reserve_any(max), push)
    }

    /// Steals up to `room` items from one block and hands every one,
    /// oldest first, to `push`, which must accept `room` items without
    /// failing or panicking. `Empty` when `room` is 0.
    pub(crate) fn steal_batch_into(&self, room: u32, push: impl FnMut(T)) -> Steal<()> {
        if room == 0 {
            return Steal::Empty;
        }
        match self.reserve_any(room) {
            Steal::Success(reserved) => {
                self.take_all(reserved, push);
                Steal::Success(())
            }
            Steal::Empty => Steal::Empty,
            Steal::Retry => Steal::Retry,
        }
    }

    fn finish(&self, reserved: Steal<Reserved>, rest: impl FnMut(T)) -> Steal<T> {
        match reserved {
            Steal::Success(reserved) => Steal::Success(self.take(reserved, rest)),
            Steal::Empty => Steal::Empty,
            Steal::Retry => Steal::Retry,
        }
    }
}

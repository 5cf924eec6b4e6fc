//! The queues under test behind one interface, so that every experiment
//! runs the same monomorphised loop for each of them.
//!
//! Items are 8-byte values (`u64`). Every queue holds [`CAPACITY`] items;
//! BWoS uses 8 blocks of 1024 entries.

use std::collections::VecDeque;

use bwos_queue::{Config, Steal};

/// Capacity of every queue, as in the paper's microbenchmarks.
pub const CAPACITY: usize = 8192;
/// BWoS geometry: 8 blocks of `CAPACITY / 8` entries.
pub const BWOS_BLOCKS: usize = 8;

/// The owner's side of a queue: enough for the no-thief experiment.
pub trait Owner: Send + 'static {
    /// Name in tables and plots.
    const NAME: &'static str;
    /// A fresh, empty queue of [`CAPACITY`] items.
    fn create() -> Self;
    /// Pushes `value`; `false` when full.
    fn push(&mut self, value: u64) -> bool;
    /// Pops one item.
    fn pop(&mut self) -> Option<u64>;
}

/// A queue thieves can steal from.
pub trait Stealable: Owner {
    /// A thief's handle: a stealer plus whatever the thief needs to keep
    /// (st3 steals into a queue of the thief's own).
    type Thief: Send + 'static;
    /// A new thief for this queue.
    fn thief(&self) -> Self::Thief;
    /// Steals one item; `None` when nothing was stolen (empty or lost race).
    fn steal(thief: &mut Self::Thief) -> Option<u64>;
    /// The victim's size as the thief can estimate it, for size-based
    /// victim selection; `None` when the queue offers no estimate.
    fn size_hint(thief: &Self::Thief) -> Option<usize>;
    /// The BWoS probe: whether a randomly sampled part of the victim holds
    /// stealable items, true with probability about size / capacity. Peers
    /// derive it from their size estimate.
    fn probe(thief: &Self::Thief, random: usize) -> Option<bool> {
        Self::size_hint(thief).map(|len| random % CAPACITY < len)
    }
}

fn bwos_config() -> Config {
    Config::new(BWOS_BLOCKS, CAPACITY / BWOS_BLOCKS).expect("8 x 1024 is a valid geometry")
}

macro_rules! bwos_adapter {
    ($name:ident, $module:ident, $label:literal) => {
        /// bwos-queue, this variant.
        pub struct $name(bwos_queue::$module::Worker<u64>);

        impl Owner for $name {
            const NAME: &'static str = $label;
            fn create() -> Self {
                $name(bwos_queue::$module::new(bwos_config()).0)
            }
            #[inline]
            fn push(&mut self, value: u64) -> bool {
                self.0.push(value).is_ok()
            }
            #[inline]
            fn pop(&mut self) -> Option<u64> {
                self.0.pop()
            }
        }

        impl Stealable for $name {
            type Thief = bwos_queue::$module::Stealer<u64>;
            fn thief(&self) -> Self::Thief {
                self.0.stealer()
            }
            #[inline]
            fn steal(thief: &mut Self::Thief) -> Option<u64> {
                match thief.steal() {
                    Steal::Success(value) => Some(value),
                    Steal::Empty | Steal::Retry => None,
                }
            }
            fn size_hint(thief: &Self::Thief) -> Option<usize> {
                Some(thief.len())
            }
            fn probe(thief: &Self::Thief, random: usize) -> Option<bool> {
                Some(thief.probe(random))
            }
        }
    };
}

bwos_adapter!(BwosLifo, lifo, "bwos-lifo");
bwos_adapter!(BwosFifo, fifo, "bwos-fifo");

macro_rules! crossbeam_adapter {
    ($name:ident, $constructor:ident, $label:literal) => {
        /// crossbeam-deque (Chase-Lev, unbounded), bounded to [`CAPACITY`]
        /// by an owner-side count so that "push until full" means the same.
        pub struct $name {
            worker: crossbeam_deque::Worker<u64>,
            /// Items pushed since the owner last saw the queue empty: an
            /// upper bound on its length, kept without touching shared state.
            held: usize,
        }

        impl Owner for $name {
            const NAME: &'static str = $label;
            fn create() -> Self {
                $name {
                    worker: crossbeam_deque::Worker::$constructor(),
                    held: 0,
                }
            }
            #[inline]
            fn push(&mut self, value: u64) -> bool {
                if self.held == CAPACITY {
                    return false;
                }
                self.held += 1;
                self.worker.push(value);
                true
            }
            #[inline]
            fn pop(&mut self) -> Option<u64> {
                let popped = self.worker.pop();
                match popped {
                    Some(_) => self.held -= 1,
                    None => self.held = 0,
                }
                popped
            }
        }

        impl Stealable for $name {
            type Thief = crossbeam_deque::Stealer<u64>;
            fn thief(&self) -> Self::Thief {
                self.worker.stealer()
            }
            #[inline]
            fn steal(thief: &mut Self::Thief) -> Option<u64> {
                thief.steal().success()
            }
            fn size_hint(thief: &Self::Thief) -> Option<usize> {
                Some(thief.len())
            }
        }
    };
}

crossbeam_adapter!(CrossbeamLifo, new_lifo, "crossbeam-lifo");
crossbeam_adapter!(CrossbeamFifo, new_fifo, "crossbeam-fifo");

macro_rules! st3_adapter {
    ($name:ident, $module:ident, $label:literal) => {
        /// st3 (derived from Tokio's run queue).
        pub struct $name(st3::$module::Worker<u64>);

        impl Owner for $name {
            const NAME: &'static str = $label;
            fn create() -> Self {
                $name(st3::$module::Worker::new(CAPACITY))
            }
            #[inline]
            fn push(&mut self, value: u64) -> bool {
                self.0.push(value).is_ok()
            }
            #[inline]
            fn pop(&mut self) -> Option<u64> {
                self.0.pop()
            }
        }

        impl Stealable for $name {
            /// st3 steals into a queue of the thief's own; a one-item steal
            /// returns the item directly and moves nothing.
            type Thief = (st3::$module::Stealer<u64>, st3::$module::Worker<u64>);
            fn thief(&self) -> Self::Thief {
                (self.0.stealer(), st3::$module::Worker::new(CAPACITY))
            }
            #[inline]
            fn steal(thief: &mut Self::Thief) -> Option<u64> {
                thief
                    .0
                    .steal_and_pop(&thief.1, |_| 1)
                    .ok()
                    .map(|(value, _)| value)
            }
            /// st3's stealer offers no size estimate.
            fn size_hint(_: &Self::Thief) -> Option<usize> {
                None
            }
        }
    };
}

st3_adapter!(St3Lifo, lifo, "st3-lifo");
st3_adapter!(St3Fifo, fifo, "st3-fifo");

/// The sequential upper bound for LIFO: a stack in a fixed array, no
/// support for thieves (the paper's LIFO_seq).
pub struct SeqStack {
    items: Vec<u64>,
}

impl Owner for SeqStack {
    const NAME: &'static str = "seq-lifo";
    fn create() -> Self {
        SeqStack {
            items: Vec::with_capacity(CAPACITY),
        }
    }
    #[inline]
    fn push(&mut self, value: u64) -> bool {
        if self.items.len() == CAPACITY {
            return false;
        }
        self.items.push(value);
        true
    }
    #[inline]
    fn pop(&mut self) -> Option<u64> {
        self.items.pop()
    }
}

/// The sequential upper bound for FIFO: a ring buffer of fixed capacity
/// (the paper's FIFO_seq).
pub struct SeqRing {
    items: VecDeque<u64>,
}

impl Owner for SeqRing {
    const NAME: &'static str = "seq-fifo";
    fn create() -> Self {
        SeqRing {
            items: VecDeque::with_capacity(CAPACITY),
        }
    }
    #[inline]
    fn push(&mut self, value: u64) -> bool {
        if self.items.len() == CAPACITY {
            return false;
        }
        self.items.push_back(value);
        true
    }
    #[inline]
    fn pop(&mut self) -> Option<u64> {
        self.items.pop_front()
    }
}

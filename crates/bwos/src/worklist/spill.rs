//! The part of a work-list run that the loom model checks: where a
//! participant takes its next item from, where an item goes when the
//! participant's queue is full, and why a participant that finds nothing
//! may leave without losing an item (see "Termination" in the module
//! docs of `worklist`).

use bwos_queue::lifo;

use crate::sched::sync::{AtomicUsize, Mutex, Ordering};

/// Items moved to the spill at once when a participant's queue is full,
/// and at most this many come back at once: the spill's lock is taken
/// once per chunk, not once per item.
pub(crate) const SPILL_CHUNK: usize = 256;

/// Where items go when their participant's queue is full: chunks of items
/// under a lock, shared by every participant of one run. Unbounded:
/// `Sink::push` never fails.
pub(crate) struct Spill<T> {
    chunks: Mutex<Vec<Vec<T>>>,
    /// How many chunks `chunks` holds: lets a participant skip the lock
    /// when the spill is empty, the common case.
    len: AtomicUsize,
}

impl<T> Spill<T> {
    pub(crate) fn new() -> Self {
        Spill {
            chunks: Mutex::new(Vec::new()),
            len: AtomicUsize::new(0),
        }
    }

    fn lock(&self) -> crate::sched::sync::MutexGuard<'_, Vec<Vec<T>>> {
        // A panic while the lock was held cannot leave a chunk half moved
        // (pushing and popping a `Vec` do not unwind midway).
        self.chunks
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    fn push_chunk(&self, chunk: Vec<T>) {
        let mut chunks = self.lock();
        chunks.push(chunk);
        // Relaxed: a hint read outside the lock. The participant that
        // spilled reads its own store (program order), which is what the
        // termination argument needs; others may see it late and only take
        // the chunk later.
        self.len.store(chunks.len(), Ordering::Relaxed);
    }

    fn take_chunk(&self) -> Option<Vec<T>> {
        // Relaxed: see `push_chunk`.
        if self.len.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut chunks = self.lock();
        let chunk = chunks.pop();
        // Relaxed: see `push_chunk`.
        self.len.store(chunks.len(), Ordering::Relaxed);
        chunk
    }

    /// Moves `items` to the spill, in chunks.
    pub(crate) fn push_all(&self, items: impl IntoIterator<Item = T>) {
        let mut items = items.into_iter().peekable();
        while items.peek().is_some() {
            self.push_chunk(items.by_ref().take(SPILL_CHUNK).collect());
        }
    }

    /// Whether the spill holds items (a hint).
    #[cfg(bwos_loom)]
    pub(crate) fn is_empty(&self) -> bool {
        // Relaxed: see `push_chunk`.
        self.len.load(Ordering::Relaxed) == 0
    }
}

/// Pushes `item` on `queue`, or, if it is full, moves it with up to
/// [`SPILL_CHUNK`]` - 1` of the queue's newest items to `spill`. Returns
/// how many items went to the spill (0 almost always).
#[inline]
pub(crate) fn push_or_spill<T>(queue: &lifo::Worker<T>, spill: &Spill<T>, item: T) -> usize {
    match queue.push(item) {
        Ok(()) => 0,
        Err(item) => spill_with_newest(queue, spill, item),
    }
}

#[cold]
#[inline(never)]
fn spill_with_newest<T>(queue: &lifo::Worker<T>, spill: &Spill<T>, item: T) -> usize {
    let mut chunk = Vec::with_capacity(SPILL_CHUNK);
    chunk.push(item);
    while chunk.len() < SPILL_CHUNK {
        match queue.pop() {
            Some(item) => chunk.push(item),
            None => break,
        }
    }
    let spilled = chunk.len();
    spill.push_chunk(chunk);
    spilled
}

/// The next item for the participant owning `queue`: its newest own item,
/// else a chunk from the spill (the rest of which goes to `queue`), else
/// whatever `steal` finds (it steals into `queue` and returns one item).
///
/// `None` means that at the moment of each look, `queue` held no item its
/// owner could take, the spill looked empty and `steal` found nothing.
pub(crate) fn next_item<T>(
    queue: &lifo::Worker<T>,
    spill: &Spill<T>,
    steal: impl FnOnce(&lifo::Worker<T>) -> Option<T>,
) -> Option<T> {
    if let Some(item) = queue.pop() {
        return Some(item);
    }
    if let Some(item) = unspill_into(queue, spill) {
        return Some(item);
    }
    steal(queue)
}

/// Takes a chunk from `spill`: returns one item and pushes the others on
/// `queue` (any that do not fit go back to the spill).
fn unspill_into<T>(queue: &lifo::Worker<T>, spill: &Spill<T>) -> Option<T> {
    let mut chunk = spill.take_chunk()?;
    let first = chunk.pop();
    let mut rest = chunk.into_iter();
    for item in rest.by_ref() {
        if let Err(item) = queue.push(item) {
            let mut back: Vec<T> = Vec::with_capacity(SPILL_CHUNK);
            back.push(item);
            back.extend(rest);
            spill.push_chunk(back);
            break;
        }
    }
    // A chunk is never empty: `push_or_spill` starts each with an item.
    first
}

/// The item storage path on its own, small enough for Miri (run by
/// `scripts/test-all.sh`): items are heap strings, so a lost, duplicated
/// or double-dropped item shows up as a leak, a wrong multiset, or
/// undefined behaviour.
#[cfg(all(test, not(bwos_loom)))]
mod tests {
    use bwos_queue::{Config, Steal};

    use super::*;

    fn small_queue() -> (lifo::Worker<String>, lifo::Stealer<String>) {
        lifo::new(Config::new(2, 4).unwrap())
    }

    fn drain(queue: &lifo::Worker<String>, spill: &Spill<String>) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(item) = next_item(queue, spill, |_| None) {
            out.push(item);
        }
        out
    }

    #[test]
    fn a_full_queue_spills_in_chunks_and_everything_comes_back_once() {
        let (queue, _stealer) = small_queue();
        let spill = Spill::new();
        let mut spilled = 0;
        for i in 0..40 {
            spilled += push_or_spill(&queue, &spill, i.to_string());
        }
        assert!(spilled > 0);
        let mut out: Vec<u32> = drain(&queue, &spill)
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        out.sort_unstable();
        assert_eq!(out, (0..40).collect::<Vec<_>>());
        assert!(spill.take_chunk().is_none());
    }

    #[test]
    fn seeds_pushed_to_the_spill_come_back_in_chunks() {
        let (queue, _stealer) = small_queue();
        let spill = Spill::new();
        spill.push_all((0..(SPILL_CHUNK as u32 + 3)).map(|i| i.to_string()));
        let out = drain(&queue, &spill);
        assert_eq!(out.len(), SPILL_CHUNK + 3);
    }

    #[test]
    fn a_thief_steals_a_block_while_the_owner_pushes_and_pops() {
        let (owner, stealer) = small_queue();
        let spill = Spill::new();
        for i in 0..6 {
            push_or_spill(&owner, &spill, i.to_string());
        }
        let stolen = std::thread::scope(|scope| {
            let thief = scope.spawn(move || {
                let (mine, _) = small_queue();
                let mut got = Vec::new();
                if let Steal::Success(item) = stealer.steal_batch_and_pop(&mine) {
                    got.push(item);
                    while let Some(item) = mine.pop() {
                        got.push(item);
                    }
                }
                got
            });
            push_or_spill(&owner, &spill, "6".to_owned());
            thief.join().unwrap()
        });
        let mut all: Vec<u32> = stolen
            .into_iter()
            .chain(drain(&owner, &spill))
            .map(|s| s.parse().unwrap())
            .collect();
        all.sort_unstable();
        assert_eq!(all, (0..7).collect::<Vec<_>>());
    }

    #[test]
    fn items_left_behind_are_dropped_with_their_queue_and_spill() {
        let (queue, stealer) = small_queue();
        let spill = Spill::new();
        for i in 0..30 {
            push_or_spill(&queue, &spill, i.to_string());
        }
        // Dropped here with items in both (Miri reports a leak otherwise).
        drop((queue, stealer, spill));
    }
}

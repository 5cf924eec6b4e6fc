//! The frame cache: the memory of the work the pools run that lives on
//! the heap, taken through [`allocate`] and given back through [`free`]: a
//! per-thread cache of free frames instead of the global allocator. Its
//! users are the forked futures of `fork` (`Boxed`) and the spawned jobs
//! of `scope` and `spawn` ([`HeapJob`](super::job::HeapJob)).
//!
//! A recursive `async fn` must box its recursive calls (a future cannot
//! contain itself), and `Box::pin` pays a `malloc` and a `free` per call;
//! a scope's loop of spawns pays them per spawn. Every call of a recursion
//! and every spawn of a loop allocates frames of the same few sizes, and
//! work stealing frees them as fast as it allocates them, so a free list
//! per size class and thread serves nearly every allocation with two loads
//! and a store. With glibc's allocator a job allocated on one worker and
//! freed on another (a stolen spawn) takes its slow paths: a million tiny
//! spawns in a scope spent half their time in `malloc` and `free`
//! (`bwos-bench small --workload spawn-tiny`).
//!
//! # Memory
//! * Sizes are rounded up to a multiple of [`GRANULE`] bytes, one cache
//!   line, and cached frames are aligned to it; futures and jobs up to
//!   [`MAX_CACHED_SIZE`] bytes with an alignment of at most [`GRANULE`] use
//!   the cache, bigger or more aligned ones go to the global allocator
//!   directly (they behave exactly like `Box`).
//! * A live frame costs its rounded size: up to 63 bytes more than `Box`
//!   would take. Whole lines are what keep stolen work fast: frames move
//!   between threads with the work that frees them, so with `Box`'s dense
//!   packing two threads soon recurse in frames that share a cache line,
//!   and every write of one invalidates the other's. With 16-byte granules,
//!   `fib(40)` on two workers took 0.75x the time of one worker; with
//!   cache lines 0.52x (`bwos-bench forkjoin-child --kernel fib --runtime
//!   fork`), and one worker is as fast as before. Two lines (128 bytes,
//!   the adjacent-line prefetcher's pair) measured no better.
//! * Frames are carved, one after the other, out of [`CHUNK_BYTES`] chunks
//!   that the thread takes from the global allocator. Asking it for each
//!   line-aligned frame instead costs what its aligned allocation costs:
//!   with glibc, about 200 bytes of heap per 64-byte frame and 256 per
//!   128-byte one (measured), which on the suite's binomial UTS tree (a
//!   deep recursion with many frames alive) made the anonymous peak of
//!   `bwos::fork` 7.1 MiB against 4.6 MiB with `Box::pin` and 4.7 MiB for
//!   rayon; carved from chunks, 4.4-4.6 MiB (`bwos-bench forkjoin-child
//!   --kernel uts-bin --scale default --threads 2`).
//! * A frame is freed by the poll in which its future finishes (or by the
//!   drop of an unfinished one) and goes to the cache of the thread that
//!   freed it (frames migrate with stolen work; that is fine, every frame
//!   of a class has the same layout). Freeing at the last poll, rather than
//!   when the parent drops the finished child, returns the frame while it
//!   is hot in the cache and saves an indirect call per future: on one
//!   worker, `fib(32)` went from 111 ms to 64 ms with it (together with
//!   the two-word `Boxed`).
//! * Each thread keeps at most [`MAX_CACHED_BYTES_PER_CLASS`] bytes of free
//!   frames per size class. A full cache hands all its frames, as one
//!   batch, to the process's depot, where a thread whose cache is empty
//!   takes a batch before it carves new frames; an exiting thread hands
//!   over its cache and the uncarved rest of its chunks. Frame memory is
//!   kept for reuse and never returned to the global allocator: the
//!   process holds, per size class, chunks for the most frames it ever had
//!   at once (in use, or free in a thread's cache), and each thread's cache
//!   holds at most 64 KiB per class.

use std::alloc::{self, Layout};
use std::cell::Cell;
use std::ptr::{self, NonNull};
use std::sync::{Mutex, PoisonError};

/// Frame sizes are multiples of this, and cached frames are aligned to it:
/// a cache line, so that frames of different threads never share one (see
/// "Memory" in the module docs).
pub const GRANULE: usize = 64;

/// The largest frame (a future or a job, in bytes) that the cache serves.
pub const MAX_CACHED_SIZE: usize = 1024;

/// Free frames a thread keeps per size class, in bytes.
pub const MAX_CACHED_BYTES_PER_CLASS: usize = 64 * 1024;

/// The size of the chunks that frames are carved from, in bytes: 16
/// frames of the largest class, 256 of the smallest.
pub const CHUNK_BYTES: usize = 16 * 1024;

const CLASSES: usize = MAX_CACHED_SIZE / GRANULE;

/// Frames a thread carves from its chunk at once when its list of the
/// class is empty and the depot has none: one trip through [`refill`]
/// (and the depot's lock) per this many frames instead of per frame. The
/// spares wait in the thread's list; they are carved from a chunk the
/// thread holds anyway, so the memory held is the same.
const CARVED_AT_ONCE: usize = 16;

/// A free frame: its first word links the next one.
struct FreeFrame {
    next: *mut FreeFrame,
}

/// One size class of a thread's cache: an intrusive stack of free frames.
struct FreeList {
    head: Cell<*mut FreeFrame>,
    len: Cell<usize>,
}

impl FreeList {
    /// Pushes a free frame.
    ///
    /// # Safety
    /// The frame is free and the caller's (the list's from now on), at
    /// least one granule big and granule-aligned (so it holds the link).
    #[inline(always)]
    unsafe fn push(&self, frame: NonNull<FreeFrame>) {
        // SAFETY: the caller's contract: the frame is ours and holds the
        // link.
        unsafe {
            frame.write(FreeFrame {
                next: self.head.get(),
            })
        };
        self.head.set(frame.as_ptr());
        self.len.set(self.len.get() + 1);
    }

    /// Empties the list into a batch (`None` if it was empty).
    fn take_all(&self) -> Option<Batch> {
        let head = self.head.replace(ptr::null_mut());
        let len = self.len.replace(0);
        NonNull::new(head).map(|head| Batch { head, len })
    }
}

/// A thread's free frames, one list per size class, and the chunks it
/// carves new frames from.
///
/// The thread-local has no destructor, so reaching it is a plain
/// thread-relative load (a thread-local with a destructor checks its
/// registration at every access). A second thread-local, [`CacheOwner`],
/// registered by the first frame the cache keeps or carves, hands the
/// cached frames and the rest of the chunks to the [`DEPOT`] when the
/// thread exits.
struct FrameCache {
    lists: [FreeList; CLASSES],
    /// Whether the cache may keep frames: one flag, so that a free checks
    /// one byte.
    status: Cell<CacheStatus>,
    /// Per class, the part of the current chunk not carved yet.
    uncarved: [Uncarved; CLASSES],
}

/// The part of a chunk that no frame was carved from yet.
struct Uncarved {
    next: Cell<*mut u8>,
    end: Cell<*mut u8>,
}

/// Whether a thread's [`FrameCache`] keeps the frames freed on it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum CacheStatus {
    /// No frame kept yet: [`CacheOwner`] is not registered.
    Unowned,
    /// [`CacheOwner`] is registered: frames are kept, and freed when the
    /// thread exits.
    Owned,
    /// The thread is exiting and the cache was emptied: keep no more frames.
    Closed,
}

impl FrameCache {
    const fn new() -> Self {
        FrameCache {
            lists: [const {
                FreeList {
                    head: Cell::new(ptr::null_mut()),
                    len: Cell::new(0),
                }
            }; CLASSES],
            status: Cell::new(CacheStatus::Unowned),
            uncarved: [const {
                Uncarved {
                    next: Cell::new(ptr::null_mut()),
                    end: Cell::new(ptr::null_mut()),
                }
            }; CLASSES],
        }
    }

    /// Hands every cached frame and the uncarved rest of every chunk to
    /// the depot.
    fn release(&self) {
        for (class, list) in self.lists.iter().enumerate() {
            if let Some(batch) = list.take_all() {
                deposit(class, batch);
            }
            let uncarved = &self.uncarved[class];
            let next = uncarved.next.replace(ptr::null_mut());
            let end = uncarved.end.replace(ptr::null_mut());
            if let Some(batch) = Batch::carve(next, end, class_size(class)) {
                deposit(class, batch);
            }
        }
    }
}

/// Free frames of one class linked through their first word: what a full
/// cache hands to the depot and an empty one takes from it.
struct Batch {
    head: NonNull<FreeFrame>,
    len: usize,
}

// SAFETY: a batch owns its frames (free memory that no thread uses) and
// its links; whichever thread holds the batch may use them.
unsafe impl Send for Batch {}

impl Batch {
    /// Links the frames that fit in `next..end` (part of a chunk nobody
    /// uses) into a batch, or `None` if not even one fits.
    fn carve(next: *mut u8, end: *mut u8, size: usize) -> Option<Batch> {
        if next.is_null() {
            return None;
        }
        let count = (end as usize - next as usize) / size;
        let mut head = ptr::null_mut::<FreeFrame>();
        for index in (0..count).rev() {
            // SAFETY: `index < count` keeps the frame inside `next..end`,
            // free memory of a chunk, aligned to a granule (chunks are, and
            // `size` is a multiple of it) and big enough for the link.
            unsafe {
                let frame = next.add(index * size).cast::<FreeFrame>();
                frame.write(FreeFrame { next: head });
                head = frame;
            }
        }
        NonNull::new(head).map(|head| Batch { head, len: count })
    }

    /// Takes the first frame off the batch; the rest, if any, stays a
    /// batch.
    fn split_first(self) -> (NonNull<u8>, Option<Batch>) {
        // SAFETY: the batch owns its frames; the first word of each is the
        // link to the next.
        let next = unsafe { (*self.head.as_ptr()).next };
        let rest = NonNull::new(next).map(|head| Batch {
            head,
            len: self.len - 1,
        });
        (self.head.cast(), rest)
    }
}

/// The process's free frames beyond the threads' caches: batches, per size
/// class. Taken under a lock once per batch (up to 64 KiB of frames), never
/// per frame.
static DEPOT: [Mutex<Vec<Batch>>; CLASSES] = [const { Mutex::new(Vec::new()) }; CLASSES];

/// Hands a batch of free frames of `class` to the depot.
fn deposit(class: usize, batch: Batch) {
    // A panic while the lock was held left the vector consistent (pushes
    // and pops are single steps), so a poisoned lock is still good.
    DEPOT[class]
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(batch);
}

/// Takes a batch of free frames of `class` from the depot, if it has one.
fn withdraw(class: usize) -> Option<Batch> {
    DEPOT[class]
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .pop()
}

/// Hands the thread's cached and uncarved frames to the depot when the
/// thread exits.
struct CacheOwner;

impl Drop for CacheOwner {
    fn drop(&mut self) {
        // Frames freed after this (by later thread-local destructors) go
        // to the depot one by one, and frames allocated after it come from
        // the depot or from a chunk whose rest goes there at once.
        CACHE.with(|cache| {
            cache.status.set(CacheStatus::Closed);
            cache.release();
        });
    }
}

thread_local! {
    static CACHE: FrameCache = const { FrameCache::new() };
    static OWNER: CacheOwner = const { CacheOwner };
}

/// Whether a cache that is not [`CacheStatus::Owned`] may keep frames (or
/// the rest of a chunk): registers [`CacheOwner`] on the first one;
/// `false` once the thread is exiting (the cache must not keep frames any
/// more).
#[cold]
fn register_owner(cache: &FrameCache) -> bool {
    if cache.status.get() == CacheStatus::Closed || OWNER.try_with(|_| ()).is_err() {
        return false;
    }
    cache.status.set(CacheStatus::Owned);
    true
}

/// The size of every frame of size class `class`.
const fn class_size(class: usize) -> usize {
    (class + 1) * GRANULE
}

/// How many free frames of class `class` a thread keeps: as many as fit in
/// [`MAX_CACHED_BYTES_PER_CLASS`], rounded up. A constant wherever the class
/// is (the class of a future type is).
#[inline]
const fn class_capacity(class: usize) -> usize {
    MAX_CACHED_BYTES_PER_CLASS.div_ceil(class_size(class))
}

/// The size class of `layout`, or `None` when the cache does not serve it.
#[inline]
const fn class_of(layout: Layout) -> Option<usize> {
    if layout.size() == 0 || layout.size() > MAX_CACHED_SIZE || layout.align() > GRANULE {
        None
    } else {
        Some((layout.size() - 1) / GRANULE)
    }
}

/// A frame for `layout`: from the calling thread's cache when it has one.
#[inline]
pub(crate) fn allocate(layout: Layout) -> NonNull<u8> {
    let Some(class) = class_of(layout) else {
        return allocate_global(layout);
    };
    CACHE.with(|cache| {
        let list = &cache.lists[class];
        let Some(frame) = NonNull::new(list.head.get()) else {
            return refill(cache, class);
        };
        // SAFETY: a non-null head is a free frame owned by this list; its
        // first word holds the link.
        list.head.set(unsafe { (*frame.as_ptr()).next });
        list.len.set(list.len.get() - 1);
        frame.cast()
    })
}

/// A frame of `class` for a thread whose list of that class is empty: a
/// batch from the depot (its first frame, the rest into the list), else
/// a frame carved from the thread's chunk.
#[cold]
#[inline(never)]
fn refill(cache: &FrameCache, class: usize) -> NonNull<u8> {
    let keeps = cache.status.get() == CacheStatus::Owned || register_owner(cache);
    if let Some(batch) = withdraw(class) {
        let (frame, rest) = batch.split_first();
        if let Some(rest) = rest {
            if keeps {
                let list = &cache.lists[class];
                list.head.set(rest.head.as_ptr());
                list.len.set(rest.len);
            } else {
                deposit(class, rest);
            }
        }
        return frame;
    }
    let size = class_size(class);
    if !keeps {
        // An exiting thread: a chunk of its own, all but one frame to the
        // depot.
        let chunk = allocate_chunk();
        // SAFETY: the chunk is `CHUNK_BYTES` long.
        let end = unsafe { chunk.as_ptr().add(CHUNK_BYTES) };
        let batch = Batch::carve(chunk.as_ptr(), end, size).expect("a chunk holds frames");
        let (frame, rest) = batch.split_first();
        if let Some(rest) = rest {
            deposit(class, rest);
        }
        return frame;
    }
    let uncarved = &cache.uncarved[class];
    let mut next = uncarved.next.get();
    if next.is_null() || uncarved.end.get() as usize - (next as usize) < size {
        // The rest of the old chunk (less than a frame) stays unused.
        let chunk = allocate_chunk();
        next = chunk.as_ptr();
        // SAFETY: the chunk is `CHUNK_BYTES` long.
        uncarved.end.set(unsafe { next.add(CHUNK_BYTES) });
    }
    // Carve a few frames at once, the first for the caller and the rest
    // into the (empty) list: a thread that allocates faster than frames
    // come back to it (the owner of a loop of spawns, whose jobs thieves
    // free) would otherwise come here, and take the depot's lock, for
    // every frame.
    let count = ((uncarved.end.get() as usize - next as usize) / size).min(CARVED_AT_ONCE);
    // SAFETY: `count` frames of `size` bytes fit in the chunk after `next`.
    let stop = unsafe { next.add(count * size) };
    uncarved.next.set(stop);
    let batch = Batch::carve(next, stop, size).expect("at least one frame fits");
    let (frame, rest) = batch.split_first();
    if let Some(rest) = rest {
        let list = &cache.lists[class];
        debug_assert!(list.head.get().is_null(), "refill runs on an empty list");
        list.head.set(rest.head.as_ptr());
        list.len.set(rest.len);
    }
    frame
}

/// A chunk of [`CHUNK_BYTES`] bytes, aligned to a granule, from the global
/// allocator; never freed (see "Memory" in the module docs).
fn allocate_chunk() -> NonNull<u8> {
    const { assert!(CHUNK_BYTES >= MAX_CACHED_SIZE && CHUNK_BYTES.is_multiple_of(GRANULE)) };
    let layout = Layout::from_size_align(CHUNK_BYTES, GRANULE).expect("the chunk layout");
    allocate_global(layout)
}

/// Frees a frame that [`allocate`] returned for `layout`.
///
/// # Safety
/// `frame` came from `allocate(layout)` and is not used afterwards.
#[inline]
pub(crate) unsafe fn free(frame: NonNull<u8>, layout: Layout) {
    let Some(class) = class_of(layout) else {
        // SAFETY: uncached frames come from the global allocator with
        // exactly this layout (see `allocate`).
        unsafe { alloc::dealloc(frame.as_ptr(), layout) };
        return;
    };
    let frame = frame.cast::<FreeFrame>();
    CACHE.with(|cache| {
        let list = &cache.lists[class];
        if list.len.get() >= class_capacity(class) || cache.status.get() != CacheStatus::Owned {
            return free_slow(cache, class, frame);
        }
        // SAFETY: the frame is ours now (the caller's contract), a cached
        // class's frame: at least one granule big and granule-aligned.
        unsafe { list.push(frame) };
    })
}

/// [`free`] into a full list (which goes to the depot first) or a cache
/// that does not keep frames yet (or any more).
#[cold]
#[inline(never)]
fn free_slow(cache: &FrameCache, class: usize, frame: NonNull<FreeFrame>) {
    if cache.status.get() != CacheStatus::Owned && !register_owner(cache) {
        // SAFETY: as in `free`: the frame is ours and holds the link.
        unsafe {
            frame.write(FreeFrame {
                next: ptr::null_mut(),
            })
        };
        deposit(
            class,
            Batch {
                head: frame,
                len: 1,
            },
        );
        return;
    }
    let list = &cache.lists[class];
    if list.len.get() >= class_capacity(class)
        && let Some(batch) = list.take_all()
    {
        deposit(class, batch);
    }
    // SAFETY: as in `free`.
    unsafe { list.push(frame) };
}

#[cold]
fn allocate_global(layout: Layout) -> NonNull<u8> {
    // SAFETY: `layout` has a nonzero size (zero-sized values never reach
    // here: `Boxed` and `HeapJob` store them without a frame).
    let frame = unsafe { alloc::alloc(layout) };
    NonNull::new(frame).unwrap_or_else(|| alloc::handle_alloc_error(layout))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// A frame of `size` bytes (a multiple of 8) for `u64`s.
    fn layout(size: usize) -> Layout {
        Layout::from_size_align(size, 8).expect("a layout")
    }

    fn take(size: usize) -> NonNull<u8> {
        let frame = allocate(layout(size));
        // The frame is writable over its whole layout.
        // SAFETY: `allocate` returned at least `size` bytes, aligned to 8.
        unsafe { frame.as_ptr().write_bytes(0xA5, size) };
        frame
    }

    /// Takes `count` frames of `size` bytes at once, gives them all back
    /// and returns their addresses.
    fn take_and_give_back(count: usize, size: usize) -> Vec<usize> {
        let frames: Vec<_> = (0..count).map(|_| take(size)).collect();
        let addresses = frames.iter().map(|f| f.as_ptr() as usize).collect();
        for frame in frames {
            give(frame, size);
        }
        addresses
    }

    fn give(frame: NonNull<u8>, size: usize) {
        // SAFETY: every frame of these tests came from `take(size)`.
        unsafe { free(frame, layout(size)) }
    }

    #[test]
    fn frames_are_reused_within_a_class() {
        let first = take(40);
        give(first, 40);
        let second = take(48);
        assert_eq!(second, first, "a freed frame of the class is reused");
        let other_class = take(200);
        assert_ne!(other_class, first);
        give(second, 48);
        give(other_class, 200);
    }

    #[test]
    fn the_cache_is_bounded() {
        let size = 24;
        let class = class_of(layout(size)).expect("a cached class");
        let frames: Vec<_> = (0..10_000).map(|_| take(size)).collect();
        for frame in frames {
            give(frame, size);
        }
        let cached = CACHE.with(|cache| cache.lists[class].len.get());
        assert!(cached * class_size(class) <= MAX_CACHED_BYTES_PER_CLASS);
        assert!(cached > 0);
    }

    /// Catches, among others: `refill` carving its spares without moving
    /// the uncarved mark past them (frames handed out twice).
    #[test]
    fn a_full_cache_hands_its_frames_to_the_depot_for_reuse() {
        // A class no other test uses (the depot is the process's).
        const SIZE: usize = 12 * GRANULE + 8;
        let capacity = class_capacity(SIZE / GRANULE);
        // A thread of its own, whose cache of this class starts empty.
        std::thread::spawn(move || {
            let count = 4 * capacity;
            let first: Vec<_> = (0..count).map(|_| take(SIZE)).collect();
            let carved: HashSet<NonNull<u8>> = first.iter().copied().collect();
            assert_eq!(carved.len(), count, "no frame is handed out twice");
            for frame in first {
                give(frame, SIZE);
            }
            let cached = CACHE.with(|cache| cache.lists[SIZE / GRANULE].len.get());
            assert!(cached <= capacity, "the cache keeps at most its capacity");
            // Everything beyond the cache went to the depot, from where the
            // same thread takes it back before it carves anything new.
            let second: Vec<_> = (0..count).map(|_| take(SIZE)).collect();
            let reused: HashSet<NonNull<u8>> = second.iter().copied().collect();
            assert_eq!(reused.len(), count, "no frame is handed out twice");
            // The frames came back through the cache or the depot, besides
            // the spares carved with the last frames of the first round
            // (`CARVED_AT_ONCE`), which were never handed out.
            assert!(
                reused.difference(&carved).count() < CARVED_AT_ONCE,
                "frames were carved anew instead of reused"
            );
            for frame in second {
                give(frame, SIZE);
            }
        })
        .join()
        .expect("the thread finishes");
    }

    #[test]
    fn an_exiting_thread_hands_its_frames_and_its_chunk_to_the_depot() {
        // A class no other test uses.
        const SIZE: usize = 14 * GRANULE + 8;
        let size = class_size(SIZE / GRANULE);
        let first = std::thread::spawn(|| take_and_give_back(10, SIZE))
            .join()
            .expect("the thread finishes");
        let chunk = *first.iter().min().expect("frames");
        // The other thread's ten cached frames and the rest of its chunk.
        let reused = std::thread::spawn(move || take_and_give_back(CHUNK_BYTES / size, SIZE))
            .join()
            .expect("the thread finishes");
        let distinct: HashSet<usize> = reused.iter().copied().collect();
        assert_eq!(distinct.len(), reused.len(), "no frame is handed out twice");
        for address in reused {
            assert!(
                (chunk..chunk + CHUNK_BYTES).contains(&address),
                "frame {address:#x} is not from the exited thread's chunk at {chunk:#x}"
            );
        }
    }

    #[test]
    fn cached_frames_never_share_a_cache_line() {
        // Frames of several sizes, as a recursion's or a loop's: each
        // starts a line of its own and no other frame reaches into it.
        let sizes = [8, 16, 56, 64, 72, 120, 200];
        let frames: Vec<_> = (0..16)
            .flat_map(|_| sizes.iter().map(|&size| (take(size), size)))
            .collect();
        let mut lines = HashSet::new();
        for &(frame, size) in &frames {
            let address = frame.as_ptr() as usize;
            assert_eq!(
                address % GRANULE,
                0,
                "frame {address:#x} is not line-aligned"
            );
            for line in (address..address + size).step_by(GRANULE) {
                assert!(
                    lines.insert(line / GRANULE),
                    "two frames share line {line:#x}"
                );
            }
        }
        for (frame, size) in frames {
            give(frame, size);
        }
    }

    #[test]
    fn frames_freed_on_another_thread() {
        let frames: Vec<_> = (0..100).map(|_| take(32)).collect();
        let addresses: Vec<usize> = frames.iter().map(|f| f.as_ptr() as usize).collect();
        let sent = addresses.clone();
        std::thread::spawn(move || {
            for address in sent {
                let frame = NonNull::new(address as *mut u8).expect("not null");
                give(frame, 32);
            }
        })
        .join()
        .expect("the thread finishes");
        assert_eq!(addresses.len(), 100);
    }

    #[test]
    fn uncached_layouts_go_to_the_global_allocator() {
        let big = Layout::from_size_align(MAX_CACHED_SIZE + 1, 8).expect("a layout");
        let over_aligned = Layout::from_size_align(64, 128).expect("a layout");
        for layout in [big, over_aligned] {
            assert_eq!(class_of(layout), None);
            let frame = allocate(layout);
            assert_eq!(frame.as_ptr() as usize % layout.align(), 0);
            // SAFETY: just allocated with this layout.
            unsafe { free(frame, layout) };
        }
    }
}

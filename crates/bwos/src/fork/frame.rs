//! Frames for forked futures: [`boxed`] and [`Boxed`], a `Pin<Box<dyn
//! Future>>` whose memory comes from a per-thread cache of free frames
//! instead of the global allocator.
//!
//! A recursive `async fn` must box its recursive calls (a future cannot
//! contain itself), and `Box::pin` pays a `malloc` and a `free` per call.
//! Every call of a recursion allocates frames of the same few sizes, and
//! fork/join frees them as fast as it allocates them, so a free list per
//! size class and thread serves nearly every allocation with two loads and
//! a store.
//!
//! # Memory
//! * Sizes are rounded up to a multiple of [`GRANULE`] bytes, one cache
//!   line, and cached frames are aligned to it; futures up to
//!   [`MAX_CACHED_SIZE`] bytes with an alignment of at most [`GRANULE`] use
//!   the cache, bigger or more aligned ones go to the global allocator
//!   directly (they behave exactly like `Box::pin`).
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
use std::future::Future;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::ptr::{self, NonNull};
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll};

/// Frame sizes are multiples of this, and cached frames are aligned to it:
/// a cache line, so that frames of different threads never share one (see
/// "Memory" in the module docs).
pub const GRANULE: usize = 64;

/// The largest future (in bytes) that the frame cache serves.
pub const MAX_CACHED_SIZE: usize = 1024;

/// Free frames a thread keeps per size class, in bytes.
pub const MAX_CACHED_BYTES_PER_CLASS: usize = 64 * 1024;

/// The size of the chunks that frames are carved from, in bytes: 16
/// frames of the largest class, 256 of the smallest.
pub const CHUNK_BYTES: usize = 16 * 1024;

const CLASSES: usize = MAX_CACHED_SIZE / GRANULE;

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
fn allocate(layout: Layout) -> NonNull<u8> {
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
    // SAFETY: at least `size` bytes of the chunk are left after `next`.
    uncarved.next.set(unsafe { next.add(size) });
    // SAFETY: `next` points into a chunk, not null.
    unsafe { NonNull::new_unchecked(next) }
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
unsafe fn free(frame: NonNull<u8>, layout: Layout) {
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
    // SAFETY: `layout` has a nonzero size (zero-sized futures never reach
    // here: `Boxed` stores them without a frame).
    let frame = unsafe { alloc::alloc(layout) };
    NonNull::new(frame).unwrap_or_else(|| alloc::handle_alloc_error(layout))
}

/// Monomorphized frame operations of a future type `F`.
struct FrameOps<F>(PhantomData<F>);

/// What [`Boxed`] calls to reach its erased future: one `'static` table
/// per future type (a promoted constant), so a `Boxed` is two words.
///
/// The functions receive the `Boxed`'s data word, a frame's address. (A
/// [`ready`] value in the word itself has no table: see [`Boxed::READY`].)
struct FrameVTable<T> {
    /// Polls the future behind a data word; on `Ready`, drops the future
    /// and frees its frame before returning.
    // SAFETY (for callers): the word belongs to a live `Boxed` made with
    // this table, whose future never moves; after `Ready` the word is dead
    // and must not be used again (`FrameOps::poll`).
    poll: unsafe fn(Word, &mut Context<'_>) -> Poll<T>,
    /// Drops the future behind a data word and frees its frame.
    // SAFETY (for callers): the word belongs to a live, unfinished `Boxed`
    // made with this table, which nobody uses afterwards.
    drop: unsafe fn(Word),
}

/// A [`Boxed`]'s data: a frame's address, or the bytes of a value of at
/// most a word (pointer-typed so that copies keep provenance, which a value
/// holding a reference needs).
type Word = MaybeUninit<*mut u8>;

impl<F: Future> FrameOps<F> {
    const VTABLE: FrameVTable<F::Output> = FrameVTable {
        poll: Self::poll,
        drop: Self::drop,
    };

    /// # Safety
    /// `word` holds the address of a frame with a live `F` that never
    /// moves. When this returns `Ready`, the future is dropped and the
    /// frame freed: the caller must not use `word` again.
    unsafe fn poll(word: Word, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: frame-backed `Boxed`es store their frame's address.
        let frame = unsafe { word.assume_init() };
        // SAFETY: the future stays at this address until it is dropped
        // (the frame is freed only after `drop`), which is the pinning
        // guarantee.
        let future = unsafe { Pin::new_unchecked(&mut *frame.cast::<F>()) };
        let poll = future.poll(cx);
        if poll.is_ready() {
            // Released at once, while the frame is hot in the cache, and
            // without a second indirect call when the `Boxed` is dropped.
            // SAFETY: the future finished; the caller forgets the word
            // (this function's contract).
            unsafe { Self::drop(word) };
        }
        poll
    }

    /// # Safety
    /// `word` holds the address of a frame with a live `F`, used by nobody
    /// afterwards.
    #[inline]
    unsafe fn drop(word: Word) {
        let layout = Layout::new::<F>();
        // SAFETY: the caller hands the future over; we drop it in place
        // and free its frame (zero-sized futures have no frame, and their
        // word is a dangling, aligned, non-null address).
        unsafe {
            let frame = word.assume_init();
            ptr::drop_in_place(frame.cast::<F>());
            if layout.size() != 0 {
                free(NonNull::new_unchecked(frame), layout);
            }
        }
    }
}

/// Whether a [`ready`] value of type `T` fits in the data word.
const fn fits_in_word<T>() -> bool {
    size_of::<T>() <= size_of::<Word>() && align_of::<T>() <= align_of::<Word>()
}

/// A pinned, type-erased future in a frame of the worker's frame cache:
/// what `Pin<Box<dyn Future<Output = T> + Send + 'a>>` is, without the
/// global allocator on the common path. Made by [`boxed_with`], [`boxed`]
/// and [`ready`] (which needs no frame for values of up to a word).
///
/// The frame goes back to the polling thread's cache as soon as the future
/// finishes (the poll that returns `Ready` frees it), or to the dropping
/// thread's cache when it is dropped unfinished. It is `Unpin` (the future
/// inside never moves) and `Send`. Polling it again after it returned
/// `Ready` panics, as polling a finished `async` block does.
#[must_use = "futures do nothing unless polled"]
pub struct Boxed<'a, T> {
    /// The future's frame address, or a [`ready`] value that fits in a
    /// word; dead once the future finished (its frame is freed then).
    word: Word,
    /// The operations on `word`: a promoted constant, valid for the whole
    /// program (a raw pointer, as a reference would require `T: 'static`);
    /// [`Self::READY`] for a ready value in the word; `None` once the
    /// future finished.
    vtable: Option<NonNull<FrameVTable<T>>>,
    /// Owns a `dyn Future + Send + 'a`: carries its lifetime and keeps
    /// `Boxed` from being `Sync`.
    _future: PhantomData<Pin<Box<dyn Future<Output = T> + Send + 'a>>>,
}

// SAFETY: `boxed_with` accepts only `Send` futures and `ready` only `Send`
// values, and `Boxed` gives access to either only through `&mut self`
// (poll) and drop.
unsafe impl<T> Send for Boxed<'_, T> {}

impl<T> Unpin for Boxed<'_, T> {}

/// Moves `future` into a frame from the calling thread's frame cache: the
/// way to box a future you already hold without paying the global
/// allocator (see the [module docs](crate::fork) and "Memory" in
/// [`Boxed`]'s module). For the recursive calls of fork/join code prefer
/// [`boxed_with`], which builds the future in its frame instead of moving
/// it there.
///
/// ```
/// use bwos::fork::{self, Boxed};
///
/// fn fib(n: u64) -> Boxed<'static, u64> {
///     fork::boxed(async move {
///         if n < 2 {
///             return n;
///         }
///         let (a, b) = fork::join(fib(n - 1), fib(n - 2)).await;
///         a + b
///     })
/// }
/// assert_eq!(bwos::block_on(fib(20)), 6765);
/// ```
#[inline]
pub fn boxed<'a, F>(future: F) -> Boxed<'a, F::Output>
where
    F: Future + Send + 'a,
{
    boxed_with(move || future)
}

/// Takes a frame from the calling thread's frame cache and builds the
/// future that `make` returns directly in it: the way to write recursive
/// fork/join code (see the [module docs](crate::fork)).
///
/// `fork::boxed_with(|| async move { .. })` does what
/// `fork::boxed(async move { .. })` does, but the future's captured values
/// are written once, into the frame. [`boxed`] receives a future already
/// built on the stack and copies it, and that copy reads wide words back
/// right after the caller wrote them in narrow pieces, which stalls the
/// CPU's store forwarding: n-queens in this form took 0.79x the time
/// (`bwos-bench forkjoin --only nqueens`, one worker). It is never slower
/// than [`boxed`].
///
/// # Panics
/// A panic in `make` propagates; the frame goes back to the cache.
///
/// ```
/// use bwos::fork::{self, Boxed};
///
/// // Borrows its slice: the frame holds the future, the future the slice.
/// fn sum(values: &[u64]) -> Boxed<'_, u64> {
///     fork::boxed_with(move || async move {
///         if values.len() <= 1024 {
///             return values.iter().sum();
///         }
///         let (left, right) = values.split_at(values.len() / 2);
///         let (a, b) = fork::join(sum(left), sum(right)).await;
///         a + b
///     })
/// }
/// let values: Vec<u64> = (0..100_000).collect();
/// assert_eq!(bwos::block_on(sum(&values)), 4_999_950_000);
/// ```
#[inline(always)]
pub fn boxed_with<'a, F, C>(make: C) -> Boxed<'a, F::Output>
where
    C: FnOnce() -> F,
    F: Future + Send + 'a,
{
    let layout = Layout::new::<F>();
    let frame = if layout.size() == 0 {
        NonNull::<F>::dangling().cast::<u8>()
    } else {
        allocate(layout)
    };
    // Gives the frame back if `make` panics.
    let guard = FrameGuard { frame, layout };
    let future = make();
    std::mem::forget(guard);
    // SAFETY: the frame is fresh, big and aligned enough for `F` (its
    // class layout is at least `layout`, or it is exactly `layout`), and
    // dangling-but-aligned for a zero-sized `F`.
    unsafe { frame.as_ptr().cast::<F>().write(future) };
    Boxed {
        word: MaybeUninit::new(frame.as_ptr()),
        vtable: Some(NonNull::from(&FrameOps::<F>::VTABLE)),
        _future: PhantomData,
    }
}

/// A [`Boxed`] that is ready at once with `value`: the base case of a
/// recursion (`fib(0)`, an empty range, a leaf) without a frame. A value
/// of at most a word (a `u64`, a pointer, a small struct) is kept in the
/// `Boxed` itself, so the call costs no allocation at all; a bigger one is
/// moved into a frame, as [`boxed`] would.
///
/// The documented way to write a recursion's base case: take it before
/// [`boxed_with`], so the calls that end at once never take a frame. In
/// `fib`, half the calls are such leaves; returning them with `ready`
/// took `fib(25)` on one worker from 1.78 ms to 1.45 ms (`bwos-bench
/// joinpath fork fib 1 300`).
///
/// ```
/// use bwos::fork::{self, Boxed};
///
/// fn fib(n: u64) -> Boxed<'static, u64> {
///     if n < 2 {
///         return fork::ready(n);
///     }
///     fork::boxed_with(move || async move {
///         let (a, b) = fork::join(fib(n - 1), fib(n - 2)).await;
///         a + b
///     })
/// }
/// assert_eq!(bwos::block_on(fib(20)), 6765);
/// ```
#[inline(always)]
pub fn ready<'a, T: Send + 'a>(value: T) -> Boxed<'a, T> {
    if !fits_in_word::<T>() {
        return boxed_with(move || std::future::ready(value));
    }
    let mut word = Word::uninit();
    // SAFETY: `T` fits in the word (`fits_in_word`); the word owns the
    // value from here on, read once by `Boxed`'s `poll` or `drop`.
    unsafe { (&raw mut word).cast::<T>().write(value) };
    Boxed {
        word,
        vtable: Some(Boxed::<T>::READY),
        _future: PhantomData,
    }
}

/// A frame without a future yet: freed if dropped (by a panic in
/// [`boxed_with`]'s `make`).
struct FrameGuard {
    frame: NonNull<u8>,
    layout: Layout,
}

impl Drop for FrameGuard {
    #[cold]
    fn drop(&mut self) {
        if self.layout.size() != 0 {
            // SAFETY: the frame came from `allocate(self.layout)` and holds
            // nothing; nobody uses it after this.
            unsafe { free(self.frame, self.layout) };
        }
    }
}

impl<T> Future for Boxed<'_, T> {
    type Output = T;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let Some(vtable) = self.vtable else {
            finished_boxed_polled();
        };
        if vtable == Self::READY {
            self.vtable = None;
            // SAFETY: marked `READY` until just now, and never read again:
            // `vtable` is `None`.
            return Poll::Ready(unsafe { self.take_ready() });
        }
        // SAFETY: the word belongs to this live `Boxed` and the table to
        // the way it was made (a promoted constant, not `READY`); the
        // future behind it never moves (`Boxed` owns the frame, not the
        // future's bytes).
        let poll = unsafe { (vtable.as_ref().poll)(self.word, cx) };
        if poll.is_ready() {
            // The poll freed the frame.
            self.vtable = None;
        }
        poll
    }
}

#[cold]
#[inline(never)]
fn finished_boxed_polled() -> ! {
    panic!("bwos::fork::Boxed polled after it returned `Ready`")
}

impl<T> Drop for Boxed<'_, T> {
    #[inline]
    fn drop(&mut self) {
        match self.vtable {
            None => {}
            // SAFETY: still marked `READY` (`poll` resets the mark when it
            // takes the value), and the `Boxed` goes away.
            Some(vtable) if vtable == Self::READY => drop(unsafe { self.take_ready() }),
            // SAFETY: the word holds the live, unfinished future, dropped
            // only here; the table is a promoted constant.
            Some(vtable) => unsafe { (vtable.as_ref().drop)(self.word) },
        }
    }
}

impl<T> Boxed<'_, T> {
    /// The `vtable` of a [`ready`] value kept in the word: no table at all,
    /// so that polling a recursion's leaf is a comparison instead of an
    /// indirect call (fib's leaves are half its calls). A dangling address
    /// is never a promoted constant's.
    const READY: NonNull<FrameVTable<T>> = NonNull::dangling();

    /// Moves the [`ready`] value out of the word.
    ///
    /// # Safety
    /// `vtable` is [`Self::READY`] (`ready` wrote a `T` that fits into the
    /// word), and the value is taken at most once.
    #[inline(always)]
    unsafe fn take_ready(&self) -> T {
        // SAFETY: the caller's contract.
        unsafe { ptr::read((&raw const self.word).cast::<T>()) }
    }

    /// The future's frame, while it has one.
    fn frame(&self) -> Option<NonNull<u8>> {
        self.vtable
            .filter(|&vtable| vtable != Self::READY)
            // SAFETY: a frame-backed `Boxed`'s word is its frame's address,
            // which is not null.
            .map(|_| unsafe { NonNull::new_unchecked(self.word.assume_init()) })
    }
}

impl<T> std::fmt::Debug for Boxed<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Boxed")
            .field("finished", &self.vtable.is_none())
            .field("frame", &self.frame())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn poll_ready<F: Future + Unpin>(mut future: F) -> F::Output {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        match Pin::new(&mut future).poll(&mut cx) {
            Poll::Ready(value) => value,
            Poll::Pending => panic!("the future was not ready"),
        }
    }

    #[test]
    fn frames_are_reused_within_a_class() {
        let first = boxed(async { [7u64; 4] });
        let address = first.frame();
        drop(first);
        let mut second = boxed(async { [8u64; 4] });
        assert_eq!(second.frame(), address, "the freed frame is reused");
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert_eq!(Pin::new(&mut second).poll(&mut cx), Poll::Ready([8; 4]));
        assert_eq!(second.frame(), None, "a finished future's frame is freed");
        let third = boxed(async { [9u64; 4] });
        assert_eq!(
            third.frame(),
            address,
            "the frame freed by the poll is reused"
        );
        drop(third);
    }

    #[test]
    fn boxed_with_builds_in_a_cached_frame_and_returns_it_if_make_panics() {
        let make = |i: u64| move || async move { i + 1 };
        let first = boxed_with(make(1));
        let address = first.frame();
        assert_eq!(poll_ready(first), 2);
        let panic = std::panic::catch_unwind(|| {
            boxed_with(|| {
                if address.is_some() {
                    panic!("make failed");
                }
                make(2)()
            })
        })
        .expect_err("make panics");
        assert_eq!(panic.downcast_ref::<&str>().copied(), Some("make failed"));
        let third = boxed_with(make(3));
        assert_eq!(
            third.frame(),
            address,
            "the frame taken before the panic went back to the cache"
        );
        assert_eq!(poll_ready(third), 4);
    }

    #[test]
    fn polling_a_finished_boxed_says_so() {
        let mut future = boxed(async { 5u32 });
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert_eq!(Pin::new(&mut future).poll(&mut cx), Poll::Ready(5));
        let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = Pin::new(&mut future).poll(&mut cx);
        }))
        .expect_err("a second poll panics");
        let message = panic.downcast_ref::<&str>().copied().unwrap_or_default();
        assert!(
            message.contains("polled after it returned `Ready`"),
            "{message}"
        );
    }

    #[test]
    fn drop_without_poll_drops_the_future() {
        struct Counted(Arc<AtomicUsize>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        let drops = Arc::new(AtomicUsize::new(0));
        let counted = Counted(Arc::clone(&drops));
        let future = boxed(async move {
            let _keep = &counted;
        });
        assert_eq!(drops.load(Ordering::Relaxed), 0);
        drop(future);
        assert_eq!(drops.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn big_zero_sized_and_aligned_futures() {
        assert_eq!(poll_ready(boxed(async { 1 })), 1);
        let big = [3u8; 4096];
        assert_eq!(poll_ready(boxed(async move { big.len() })), 4096);
        #[repr(align(64))]
        #[derive(Clone, Copy)]
        struct Aligned(u8);
        let aligned = Aligned(9);
        assert_eq!(poll_ready(boxed(async move { aligned.0 })), 9);
    }

    #[test]
    fn the_cache_is_bounded() {
        fn layout_of<F>(_: &F) -> Layout {
            Layout::new::<F>()
        }
        let make = |i: u64| async move { i };
        let class = class_of(layout_of(&make(0))).expect("a cached class");
        let frames: Vec<_> = (0..10_000u64).map(|i| boxed(make(i))).collect();
        drop(frames);
        let cached = CACHE.with(|cache| cache.lists[class].len.get());
        assert!(cached * (class + 1) * GRANULE <= MAX_CACHED_BYTES_PER_CLASS);
        assert!(cached > 0);
    }

    /// A ready future of `N` bytes and one more for its state: a frame of
    /// class `N / GRANULE` for the `N` the depot tests use, which no other
    /// test uses (the depot is the process's).
    fn frame_of<const N: usize>() -> Boxed<'static, [u8; N]> {
        let boxed = boxed(std::future::ready([0u8; N]));
        assert_eq!(
            class_of(Layout::new::<std::future::Ready<[u8; N]>>()),
            Some(N / GRANULE)
        );
        boxed
    }

    fn address<T>(boxed: &Boxed<'_, T>) -> usize {
        boxed.frame().expect("a frame").as_ptr() as usize
    }

    #[test]
    fn a_full_cache_hands_its_frames_to_the_depot_for_reuse() {
        const N: usize = 12 * GRANULE + 10;
        let capacity = class_capacity(N / GRANULE);
        // A thread of its own, whose cache of this class starts empty.
        std::thread::spawn(move || {
            let count = 4 * capacity;
            let first: Vec<_> = (0..count).map(|_| frame_of::<N>()).collect();
            let carved: std::collections::HashSet<usize> = first.iter().map(address).collect();
            assert_eq!(carved.len(), count, "no frame is handed out twice");
            drop(first);
            let cached = CACHE.with(|cache| cache.lists[N / GRANULE].len.get());
            assert!(cached <= capacity, "the cache keeps at most its capacity");
            // Everything beyond the cache went to the depot, from where the
            // same thread takes it back before it carves anything new.
            let second: Vec<_> = (0..count).map(|_| frame_of::<N>()).collect();
            let reused: std::collections::HashSet<usize> = second.iter().map(address).collect();
            assert_eq!(reused.len(), count, "no frame is handed out twice");
            assert_eq!(
                reused, carved,
                "every frame came back through the cache or the depot"
            );
            assert_eq!(second.into_iter().map(poll_ready).count(), count);
        })
        .join()
        .expect("the thread finishes");
    }

    #[test]
    fn an_exiting_thread_hands_its_frames_and_its_chunk_to_the_depot() {
        const N: usize = 14 * GRANULE + 3;
        let size = class_size(N / GRANULE);
        let first = std::thread::spawn(|| {
            let frames: Vec<_> = (0..10).map(|_| frame_of::<N>()).collect();
            let addresses: Vec<usize> = frames.iter().map(address).collect();
            drop(frames);
            addresses
        })
        .join()
        .expect("the thread finishes");
        let chunk = *first.iter().min().expect("frames");
        let reused = std::thread::spawn(move || {
            // The other thread's ten cached frames and the rest of its chunk.
            let frames: Vec<_> = (0..CHUNK_BYTES / size).map(|_| frame_of::<N>()).collect();
            frames.iter().map(address).collect::<Vec<_>>()
        })
        .join()
        .expect("the thread finishes");
        let distinct: std::collections::HashSet<usize> = reused.iter().copied().collect();
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
        // Small futures of several sizes, as a recursion's frames: each
        // starts a line of its own and no other frame reaches into it.
        let small: Vec<_> = (0..64u64).map(|i| boxed(async move { i })).collect();
        let medium: Vec<_> = (0..64u64)
            .map(|i| {
                let words = [i; 9];
                boxed(async move { words.iter().sum::<u64>() })
            })
            .collect();
        let mut lines = std::collections::HashSet::new();
        for frame in small
            .iter()
            .map(|f| f.frame())
            .chain(medium.iter().map(|f| f.frame()))
        {
            let address = frame.expect("a live frame").as_ptr() as usize;
            assert_eq!(address % 64, 0, "frame {address:#x} is not line-aligned");
            assert!(
                lines.insert(address / 64),
                "two frames share line {address:#x}"
            );
        }
        assert_eq!(small.into_iter().map(poll_ready).sum::<u64>(), 2016);
        assert_eq!(medium.into_iter().map(poll_ready).sum::<u64>(), 9 * 2016);
    }

    #[test]
    fn ready_values_need_no_frame_and_are_dropped_once() {
        // A word-sized value lives in the `Boxed`: no frame.
        let word = ready(42u64);
        assert_eq!(word.frame(), None, "a word-sized value takes no frame");
        assert_eq!(poll_ready(word), 42);
        // Smaller, zero-sized and borrowed values too.
        assert_eq!(poll_ready(ready((1u8, 2u16))), (1, 2));
        assert_eq!(poll_ready(ready(())), ());
        let text = String::from("borrowed");
        assert_eq!(poll_ready(ready(text.as_str())), "borrowed");
        // A bigger one is moved into a frame, and comes back whole.
        let big = ready([5u64; 3]);
        assert!(big.frame().is_some(), "a three-word value takes a frame");
        assert_eq!(poll_ready(big), [5; 3]);
        // An owning value is dropped exactly once: by the poll's caller, or
        // by the `Boxed` if it is never polled.
        let shared = Arc::new(());
        let polled = ready(Arc::clone(&shared));
        let unpolled = ready(Arc::clone(&shared));
        assert_eq!(Arc::strong_count(&shared), 3);
        drop(poll_ready(polled));
        assert_eq!(
            Arc::strong_count(&shared),
            2,
            "the polled value is dropped once"
        );
        drop(unpolled);
        assert_eq!(
            Arc::strong_count(&shared),
            1,
            "an unpolled value is dropped"
        );
        // Polled twice, it says so (the value was handed out already).
        let mut once = ready(Arc::clone(&shared));
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(Pin::new(&mut once).poll(&mut cx).is_ready());
        let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = Pin::new(&mut once).poll(&mut cx);
        }))
        .expect_err("a second poll panics");
        assert!(
            panic
                .downcast_ref::<&str>()
                .is_some_and(|m| m.contains("after it returned"))
        );
        drop(once);
        assert_eq!(Arc::strong_count(&shared), 1, "nothing dropped twice");
    }

    #[test]
    fn frames_freed_on_another_thread() {
        let frames: Vec<_> = (0..100u64).map(|i| boxed(async move { i * 2 })).collect();
        let sum = std::thread::spawn(move || frames.into_iter().map(poll_ready).sum::<u64>())
            .join()
            .expect("the thread finishes");
        assert_eq!(sum, 9900);
    }
}

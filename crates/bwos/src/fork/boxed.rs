//! [`Boxed`], a `Pin<Box<dyn Future>>` in a frame of the [frame cache]
//! (`sched/frame_cache.rs`), and the three ways to make one: [`boxed`],
//! [`boxed_with`] and [`ready`].
//!
//! A `Boxed` is two words: the frame's address (or a [`ready`] value that
//! fits in a word) and a pointer to a `'static` table of the erased
//! future's `poll` and `drop`, one per future type. Its frame goes back to
//! the cache in the poll that finishes the future.
//!
//! [frame cache]: crate::sched::frame_cache

use std::alloc::Layout;
use std::future::Future;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::ptr::{self, NonNull};
use std::task::{Context, Poll};

use crate::sched::frame_cache::{allocate, free};

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

/// Moves `future` into a frame from the calling thread's frame cache: for
/// a future you already hold (one handed to you, of a type you cannot
/// name), without paying the global allocator (see the
/// [module docs](crate::fork) and "Memory" in [`Boxed`]'s module). Code
/// that builds the future itself, recursive fork/join code above all,
/// uses [`boxed_with`], which builds it in the frame instead of moving it
/// there.
///
/// ```
/// use bwos::fork::{self, Boxed};
/// use std::future::Future;
///
/// // Any caller's future, stored under one type.
/// fn erase<F: Future<Output = u64> + Send + 'static>(future: F) -> Boxed<'static, u64> {
///     fork::boxed(future)
/// }
/// let futures = vec![erase(async { 1 }), erase(std::future::ready(2))];
/// let total: u64 = futures.into_iter().map(bwos::block_on).sum();
/// assert_eq!(total, 3);
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
    pub(super) fn frame(&self) -> Option<NonNull<u8>> {
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
pub(super) mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Polls `future` once with a no-op waker; it must be ready.
    fn poll_ready<F: Future + Unpin>(mut future: F) -> F::Output {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        match Pin::new(&mut future).poll(&mut cx) {
            Poll::Ready(value) => value,
            Poll::Pending => panic!("the future was not ready"),
        }
    }

    #[test]
    fn the_poll_that_finishes_a_future_frees_its_frame_for_the_next() {
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
}

//! The async fork/join trait the suite's async kernels are written against,
//! and its three implementations: `bwos::fork` with frames from its frame
//! cache (`fork`, the documented way), `bwos::fork` with `Box::pin`
//! (`fork-box-pin`), and the same `Box::pin` code run serially by a
//! trivial executor (`async-serial`: what boxing alone costs).
//!
//! An async kernel is a function generic over `A: AsyncFork` that returns
//! its cheap base cases with `A::ready(value)`, boxes its recursive calls
//! with `A::boxed_with(|| async move { .. })` (for `fork`,
//! `bwos::fork::ready` and `bwos::fork::boxed_with`: the documented way)
//! and forks with `A::join(fa, fb)`; the algorithms and cut-offs are the
//! synchronous kernels'. A base case with real work (a leaf's sum, an
//! insertion sort) stays inside the box: taken before it, the work would
//! run in the parent when it builds the join's children, not in a child
//! that a thief can take.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// An async fork/join runtime: a pool, a way to run a future on it, a box
/// for recursive calls and a two-way join.
pub trait AsyncFork: 'static {
    /// A boxed future (the recursive calls).
    type Boxed<'a, T: 'a>: Future<Output = T> + Send + 'a;
    /// The pool a measurement runs on (built outside the timed region).
    type Pool;
    /// Short name, as in the tables.
    const NAME: &'static str;

    /// Builds a pool of `threads` workers.
    fn build(threads: usize) -> Self::Pool;

    /// Runs `future` on `pool` and returns its output.
    fn block_on<T: Send>(pool: &Self::Pool, future: impl Future<Output = T> + Send) -> T;

    /// Boxes the future `make` builds: a recursive call (`bwos::fork`
    /// builds it in its frame, see `bwos::fork::boxed_with`).
    fn boxed_with<'a, F, C>(make: C) -> Self::Boxed<'a, F::Output>
    where
        C: FnOnce() -> F,
        F: Future + Send + 'a,
        F::Output: 'a;

    /// A box that is ready at once with `value`: a recursion's base case
    /// (`bwos::fork::ready`, no frame for a word-sized value).
    fn ready<'a, T: Send + 'a>(value: T) -> Self::Boxed<'a, T>;

    /// Runs `fa` and `fb`, potentially in parallel; both outputs.
    fn join<FA, FB>(fa: FA, fb: FB) -> impl Future<Output = (FA::Output, FB::Output)> + Send
    where
        FA: Future + Send,
        FB: Future + Send,
        FA::Output: Send,
        FB::Output: Send;

    /// The pool's counters, where the runtime keeps them.
    fn stats(_pool: &Self::Pool) -> Option<bwos::PoolStats> {
        None
    }
}

/// How a runtime boxes recursive calls: the only difference between
/// `fork` and `fork-box-pin`.
pub trait BoxStrategy: 'static {
    /// A boxed future.
    type Boxed<'a, T: 'a>: Future<Output = T> + Send + 'a;
    /// The name of `bwos::fork` with this strategy, as in the tables.
    const FORK_NAME: &'static str;

    /// Boxes the future `make` builds.
    fn boxed_with<'a, F, C>(make: C) -> Self::Boxed<'a, F::Output>
    where
        C: FnOnce() -> F,
        F: Future + Send + 'a,
        F::Output: 'a;

    /// A box that is ready at once with `value`.
    fn ready<'a, T: Send + 'a>(value: T) -> Self::Boxed<'a, T>;
}

/// `bwos::fork::boxed_with`: frames from the worker's frame cache.
pub struct FrameCache;

impl BoxStrategy for FrameCache {
    type Boxed<'a, T: 'a> = bwos::fork::Boxed<'a, T>;
    const FORK_NAME: &'static str = "fork";

    #[inline(always)]
    fn boxed_with<'a, F, C>(make: C) -> Self::Boxed<'a, F::Output>
    where
        C: FnOnce() -> F,
        F: Future + Send + 'a,
        F::Output: 'a,
    {
        bwos::fork::boxed_with(make)
    }

    #[inline(always)]
    fn ready<'a, T: Send + 'a>(value: T) -> Self::Boxed<'a, T> {
        bwos::fork::ready(value)
    }
}

/// A `Box::pin`ned recursive call.
pub type PinBox<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// `Box::pin`: the global allocator per call.
pub struct PinBoxes;

impl BoxStrategy for PinBoxes {
    type Boxed<'a, T: 'a> = PinBox<'a, T>;
    const FORK_NAME: &'static str = "fork-box-pin";

    #[inline(always)]
    fn boxed_with<'a, F, C>(make: C) -> PinBox<'a, F::Output>
    where
        C: FnOnce() -> F,
        F: Future + Send + 'a,
        F::Output: 'a,
    {
        Box::pin(make())
    }

    /// `Box::pin(std::future::ready(value))`: what code written with
    /// `Box::pin` pays for a base case.
    #[inline(always)]
    fn ready<'a, T: Send + 'a>(value: T) -> PinBox<'a, T> {
        Box::pin(std::future::ready(value))
    }
}

/// `bwos::fork::join` in `ThreadPool::block_on`, boxing with `S`.
pub struct BwosFork<S>(PhantomData<S>);

/// `bwos::fork` with `fork::boxed_with` frames: the documented way.
pub type Fork = BwosFork<FrameCache>;

/// `bwos::fork` with `Box::pin` frames.
pub type ForkBoxPin = BwosFork<PinBoxes>;

impl<S: BoxStrategy> AsyncFork for BwosFork<S> {
    type Boxed<'a, T: 'a> = S::Boxed<'a, T>;
    type Pool = bwos::ThreadPool;
    const NAME: &'static str = S::FORK_NAME;

    #[inline(always)]
    fn boxed_with<'a, F, C>(make: C) -> Self::Boxed<'a, F::Output>
    where
        C: FnOnce() -> F,
        F: Future + Send + 'a,
        F::Output: 'a,
    {
        S::boxed_with(make)
    }

    #[inline(always)]
    fn ready<'a, T: Send + 'a>(value: T) -> Self::Boxed<'a, T> {
        S::ready(value)
    }

    fn build(threads: usize) -> bwos::ThreadPool {
        bwos::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a bwos pool")
    }

    fn block_on<T: Send>(pool: &bwos::ThreadPool, future: impl Future<Output = T> + Send) -> T {
        pool.block_on(future)
    }

    #[inline]
    fn join<FA, FB>(fa: FA, fb: FB) -> impl Future<Output = (FA::Output, FB::Output)> + Send
    where
        FA: Future + Send,
        FB: Future + Send,
        FA::Output: Send,
        FB::Output: Send,
    {
        bwos::fork::join(fa, fb)
    }

    fn stats(pool: &bwos::ThreadPool) -> Option<bwos::PoolStats> {
        Some(pool.stats())
    }
}

/// The `Box::pin` code run serially: `join` awaits `fa`, then `fb`, and a
/// trivial executor polls the root on the calling thread. What the boxed
/// async code costs without any runtime.
pub struct AsyncSerial;

impl AsyncFork for AsyncSerial {
    type Boxed<'a, T: 'a> = PinBox<'a, T>;
    type Pool = ();
    const NAME: &'static str = "async-serial";

    fn build(_threads: usize) {}

    fn block_on<T: Send>(_pool: &(), future: impl Future<Output = T> + Send) -> T {
        trivial_block_on(future)
    }

    #[inline(always)]
    fn boxed_with<'a, F, C>(make: C) -> PinBox<'a, F::Output>
    where
        C: FnOnce() -> F,
        F: Future + Send + 'a,
        F::Output: 'a,
    {
        PinBoxes::boxed_with(make)
    }

    #[inline(always)]
    fn ready<'a, T: Send + 'a>(value: T) -> PinBox<'a, T> {
        PinBoxes::ready(value)
    }

    #[inline]
    async fn join<FA, FB>(fa: FA, fb: FB) -> (FA::Output, FB::Output)
    where
        FA: Future + Send,
        FB: Future + Send,
        FA::Output: Send,
        FB::Output: Send,
    {
        (fa.await, fb.await)
    }
}

/// Polls `future` on the calling thread, parking between polls.
pub fn trivial_block_on<T>(future: impl Future<Output = T>) -> T {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park();
    }
}

//! The fork/join trait every kernel is written against, and its four
//! implementations: serial elision, bwos, rayon and chili.
//!
//! A kernel is a function generic over `R: ForkJoin` that takes a
//! `&mut R::Ctx<'_>` and forks with `R::join(ctx, |ctx| .., |ctx| ..)`.
//! The context is what chili threads through its closures (`Scope`); the
//! other runtimes find their worker in thread-local state and use `()`.
//! Every runtime therefore runs exactly the same algorithm with the same
//! cut-offs: only `join` differs.

use std::num::NonZero;

/// A fork/join runtime: a pool type, a way to run a closure on it, and a
/// two-way `join`.
pub trait ForkJoin: 'static {
    /// What the kernels thread through their closures.
    type Ctx<'s>;
    /// The pool a measurement runs on (built outside the timed region).
    type Pool;
    /// Short name, as in the tables.
    const NAME: &'static str;

    /// Builds a pool of `threads` workers.
    fn build(threads: usize) -> Self::Pool;

    /// Runs `f` on `pool` (inside the pool, for runtimes that have one)
    /// and returns its result.
    fn run<T: Send>(pool: &Self::Pool, f: impl FnOnce(&mut Self::Ctx<'_>) -> T + Send) -> T;

    /// Runs `a` and `b`, potentially in parallel, and returns both results.
    fn join<A, B, RA, RB>(ctx: &mut Self::Ctx<'_>, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce(&mut Self::Ctx<'_>) -> RA + Send,
        B: FnOnce(&mut Self::Ctx<'_>) -> RB + Send,
        RA: Send,
        RB: Send;

    /// The pool's counters, where the runtime keeps them.
    fn stats(_pool: &Self::Pool) -> Option<bwos::PoolStats> {
        None
    }
}

/// The serial elision: `join(a, b)` is `(a(), b())`.
pub struct Serial;

impl ForkJoin for Serial {
    type Ctx<'s> = ();
    type Pool = ();
    const NAME: &'static str = "serial";

    fn build(_threads: usize) {}

    fn run<T: Send>(_pool: &(), f: impl FnOnce(&mut ()) -> T + Send) -> T {
        f(&mut ())
    }

    #[inline]
    fn join<A, B, RA, RB>(ctx: &mut (), a: A, b: B) -> (RA, RB)
    where
        A: FnOnce(&mut ()) -> RA + Send,
        B: FnOnce(&mut ()) -> RB + Send,
        RA: Send,
        RB: Send,
    {
        let ra = a(ctx);
        (ra, b(ctx))
    }
}

/// bwos: `bwos::join` inside `ThreadPool::install`.
pub struct Bwos;

impl ForkJoin for Bwos {
    type Ctx<'s> = ();
    type Pool = bwos::ThreadPool;
    const NAME: &'static str = "bwos";

    fn build(threads: usize) -> bwos::ThreadPool {
        bwos::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a bwos pool")
    }

    fn run<T: Send>(pool: &bwos::ThreadPool, f: impl FnOnce(&mut ()) -> T + Send) -> T {
        pool.install(|| f(&mut ()))
    }

    #[inline]
    fn join<A, B, RA, RB>(_ctx: &mut (), a: A, b: B) -> (RA, RB)
    where
        A: FnOnce(&mut ()) -> RA + Send,
        B: FnOnce(&mut ()) -> RB + Send,
        RA: Send,
        RB: Send,
    {
        bwos::join(|| a(&mut ()), || b(&mut ()))
    }

    fn stats(pool: &bwos::ThreadPool) -> Option<bwos::PoolStats> {
        Some(pool.stats())
    }
}

/// rayon: `rayon::join` inside `ThreadPool::install`.
pub struct Rayon;

impl ForkJoin for Rayon {
    type Ctx<'s> = ();
    type Pool = rayon::ThreadPool;
    const NAME: &'static str = "rayon";

    fn build(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            // The main thread's usual 8 MiB, as bwos's workers get by
            // default: with rayon's default (std's 2 MiB) the binomial UTS
            // tree overflows its workers' stacks.
            .stack_size(8 << 20)
            .build()
            .expect("a rayon pool")
    }

    fn run<T: Send>(pool: &rayon::ThreadPool, f: impl FnOnce(&mut ()) -> T + Send) -> T {
        pool.install(|| f(&mut ()))
    }

    #[inline]
    fn join<A, B, RA, RB>(_ctx: &mut (), a: A, b: B) -> (RA, RB)
    where
        A: FnOnce(&mut ()) -> RA + Send,
        B: FnOnce(&mut ()) -> RB + Send,
        RA: Send,
        RB: Send,
    {
        rayon::join(|| a(&mut ()), || b(&mut ()))
    }
}

/// chili: `Scope::join`, on the calling thread's scope of the pool.
pub struct Chili;

impl ForkJoin for Chili {
    type Ctx<'s> = chili::Scope<'s>;
    type Pool = chili::ThreadPool;
    const NAME: &'static str = "chili";

    fn build(threads: usize) -> chili::ThreadPool {
        chili::ThreadPool::with_config(chili::Config {
            thread_count: NonZero::new(threads),
            ..chili::Config::default()
        })
    }

    fn run<T: Send>(
        pool: &chili::ThreadPool,
        f: impl FnOnce(&mut chili::Scope<'_>) -> T + Send,
    ) -> T {
        f(&mut pool.scope())
    }

    #[inline]
    fn join<A, B, RA, RB>(ctx: &mut chili::Scope<'_>, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce(&mut chili::Scope<'_>) -> RA + Send,
        B: FnOnce(&mut chili::Scope<'_>) -> RB + Send,
        RA: Send,
        RB: Send,
    {
        ctx.join(a, b)
    }
}

/// Splits `range` in halves with joins down to single indices and sums
/// `leaf(i)` over it: the n-way fan-out of skynet and UTS, the same binary
/// splitting on every runtime.
pub fn fan_out<R, F>(range: std::ops::Range<usize>, ctx: &mut R::Ctx<'_>, leaf: &F) -> u64
where
    R: ForkJoin,
    F: Fn(usize, &mut R::Ctx<'_>) -> u64 + Sync,
{
    match range.len() {
        0 => 0,
        1 => leaf(range.start, ctx),
        len => {
            let middle = range.start + len / 2;
            let (a, b) = R::join(
                ctx,
                |ctx| fan_out::<R, F>(range.start..middle, ctx, leaf),
                |ctx| fan_out::<R, F>(middle..range.end, ctx, leaf),
            );
            a + b
        }
    }
}

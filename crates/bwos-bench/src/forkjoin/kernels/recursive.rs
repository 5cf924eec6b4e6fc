//! The small-grain recursive kernels: fib, nqueens, integrate, knapsack,
//! skynet, a divide-and-conquer sum, and the tree sum of the co-runs.
//! Their tasks do almost no work, so the runtime is what they measure.

use std::sync::atomic::{AtomicI64, Ordering};

use super::{Kernel, SplitMix};
use crate::forkjoin::asyncfork::AsyncFork;
use crate::forkjoin::runtime::{ForkJoin, fan_out};

/// Naive recursive Fibonacci: one join per call, no cut-off (as in Cilk).
pub struct Fib {
    pub n: u64,
}

impl Kernel for Fib {
    type Scratch = ();

    fn scratch(&self) {}

    fn run<R: ForkJoin>(&self, _: &mut (), ctx: &mut R::Ctx<'_>) -> u64 {
        fib::<R>(std::hint::black_box(self.n), ctx)
    }

    fn run_async<'a, A: AsyncFork>(&'a self, _: &'a mut ()) -> A::Boxed<'a, u64> {
        fib_async::<A>(std::hint::black_box(self.n))
    }
}

/// The n-th Fibonacci number, one join per call.
pub fn fib<R: ForkJoin>(n: u64, ctx: &mut R::Ctx<'_>) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = R::join(ctx, |ctx| fib::<R>(n - 1, ctx), |ctx| fib::<R>(n - 2, ctx));
    a + b
}

/// [`fib`] in async form.
pub fn fib_async<'a, A: AsyncFork>(n: u64) -> A::Boxed<'a, u64> {
    if n < 2 {
        return A::ready(n);
    }
    A::boxed_with(move || async move {
        let (a, b) = A::join(fib_async::<A>(n - 1), fib_async::<A>(n - 2)).await;
        a + b
    })
}

/// The n-th Fibonacci number, computed in a loop (to check results).
#[cfg(test)]
pub fn fib_value(n: u64) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a.wrapping_add(b));
    }
    a
}

/// Counts the n-queens solutions. Every free column of a row is a branch;
/// the free columns are split in halves with joins (bit masks, no
/// allocation).
pub struct Nqueens {
    pub n: u32,
}

impl Kernel for Nqueens {
    type Scratch = ();

    fn scratch(&self) {}

    fn run<R: ForkJoin>(&self, _: &mut (), ctx: &mut R::Ctx<'_>) -> u64 {
        let all = (1u32 << std::hint::black_box(self.n)) - 1;
        branches::<R>(all, all, [0, 0, 0], ctx)
    }

    fn run_async<'a, A: AsyncFork>(&'a self, _: &'a mut ()) -> A::Boxed<'a, u64> {
        let all = (1u32 << std::hint::black_box(self.n)) - 1;
        branches_async::<A>(all, all, [0, 0, 0])
    }
}

/// The queen of the next row placed in the single column `free`.
#[inline(always)]
fn place(all: u32, free: u32, [columns, left, right]: [u32; 3]) -> [u32; 3] {
    [
        columns | free,
        ((left | free) << 1) & all,
        (right | free) >> 1,
    ]
}

/// Where the branches `free` of the next row on `board` lead before the
/// search must choose: a row with a single free column places its queen
/// and goes on with the row after it (a loop: a forced move costs neither
/// a join nor a frame, in both forms), until every queen is placed
/// (`Err(1)`), a row has no free column (`Err(0)`) or a row has a choice:
/// `Ok` with its free columns (at least two) and its board.
#[inline(always)]
fn next_choice(all: u32, mut free: u32, mut board: [u32; 3]) -> Result<(u32, [u32; 3]), u64> {
    loop {
        if board[0] == all {
            return Err(1);
        }
        match free.count_ones() {
            0 => return Err(0),
            1 => {
                board = place(all, free, board);
                free = all & !(board[0] | board[1] | board[2]);
            }
            _ => return Ok((free, board)),
        }
    }
}

/// Splits `free` (at least two columns) into its lowest half and the rest.
#[inline(always)]
fn split_columns(free: u32) -> (u32, u32) {
    let mut high = free;
    for _ in 0..free.count_ones() / 2 {
        high &= high - 1;
    }
    (free & !high, high)
}

/// Counts the solutions below the branches `free` of the next row on
/// `board`: a choice splits its columns in halves with a join.
fn branches<R: ForkJoin>(all: u32, free: u32, board: [u32; 3], ctx: &mut R::Ctx<'_>) -> u64 {
    let (free, board) = match next_choice(all, free, board) {
        Ok(choice) => choice,
        Err(count) => return count,
    };
    let (low, high) = split_columns(free);
    let (a, b) = R::join(
        ctx,
        |ctx| branches::<R>(all, low, board, ctx),
        |ctx| branches::<R>(all, high, board, ctx),
    );
    a + b
}

/// [`branches`] in async form: one frame per call, as [`branches`] is one
/// call per join child.
fn branches_async<'a, A: AsyncFork>(all: u32, free: u32, board: [u32; 3]) -> A::Boxed<'a, u64> {
    let (free, board) = match next_choice(all, free, board) {
        Ok(choice) => choice,
        Err(count) => return A::ready(count),
    };
    A::boxed_with(move || async move {
        let (low, high) = split_columns(free);
        let (a, b) = A::join(
            branches_async::<A>(all, low, board),
            branches_async::<A>(all, high, board),
        )
        .await;
        a + b
    })
}

/// The number of n-queens solutions for small `n`, to check results.
#[cfg(test)]
pub fn nqueens_solutions(n: u32) -> Option<u64> {
    [
        1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14_200, 73_712, 365_596,
    ]
    .get(n as usize)
    .copied()
}

/// Adaptive trapezoid quadrature of `(x² + 1) x` over `[0, upper]` (the
/// Cilk benchmark): an interval is halved, in parallel, until the two
/// halves' areas agree with the whole's within `epsilon`.
pub struct Integrate {
    pub upper: f64,
    pub epsilon: f64,
}

fn curve(x: f64) -> f64 {
    (x * x + 1.0) * x
}

impl Kernel for Integrate {
    type Scratch = ();

    fn scratch(&self) {}

    fn run<R: ForkJoin>(&self, _: &mut (), ctx: &mut R::Ctx<'_>) -> u64 {
        let upper = std::hint::black_box(self.upper);
        let (y0, y1) = (curve(0.0), curve(upper));
        let area = integrate::<R>(
            (0.0, y0),
            (upper, y1),
            (y0 + y1) / 2.0 * upper,
            self.epsilon,
            ctx,
        );
        area.to_bits()
    }

    fn run_async<'a, A: AsyncFork>(&'a self, _: &'a mut ()) -> A::Boxed<'a, u64> {
        let upper = std::hint::black_box(self.upper);
        let epsilon = self.epsilon;
        A::boxed_with(move || async move {
            let (y0, y1) = (curve(0.0), curve(upper));
            let area = (y0 + y1) / 2.0 * upper;
            integrate_async::<A>((0.0, y0), (upper, y1), area, epsilon)
                .await
                .to_bits()
        })
    }
}

/// One step of the adaptive quadrature of [`curve`] on `[x1, x2]`, whose
/// trapezoid estimate is `area`: `Ok` with the two halves' sum if it agrees
/// with `area` within `epsilon`, else `Err` with the midpoint `(x0, y0)`
/// and the halves' estimates `(left, right)` to refine. Shared by both
/// forms; inlined, so the values stay in registers.
#[inline(always)]
fn refine(
    (x1, y1): (f64, f64),
    (x2, y2): (f64, f64),
    area: f64,
    epsilon: f64,
) -> Result<f64, (f64, f64, f64, f64)> {
    let half = (x2 - x1) / 2.0;
    let x0 = x1 + half;
    let y0 = curve(x0);
    let left = (y1 + y0) / 2.0 * half;
    let right = (y0 + y2) / 2.0 * half;
    let whole = left + right;
    if (whole - area).abs() < epsilon {
        Ok(whole)
    } else {
        Err((x0, y0, left, right))
    }
}

// The end points are separate scalars, not an array: an array is passed
// through memory, written by the caller as 8-byte halves and read back as
// 16-byte vectors, and that store-forwarding stall made the serial elision
// twice as slow as one bwos worker (perf annotate: 40% of its samples on
// the two loads).
fn integrate<R: ForkJoin>(
    (x1, y1): (f64, f64),
    (x2, y2): (f64, f64),
    area: f64,
    epsilon: f64,
    ctx: &mut R::Ctx<'_>,
) -> f64 {
    let (x0, y0, left, right) = match refine((x1, y1), (x2, y2), area, epsilon) {
        Ok(whole) => return whole,
        Err(halves) => halves,
    };
    let (left, right) = R::join(
        ctx,
        |ctx| integrate::<R>((x1, y1), (x0, y0), left, epsilon, ctx),
        |ctx| integrate::<R>((x0, y0), (x2, y2), right, epsilon, ctx),
    );
    left + right
}

fn integrate_async<'a, A: AsyncFork>(
    (x1, y1): (f64, f64),
    (x2, y2): (f64, f64),
    area: f64,
    epsilon: f64,
) -> A::Boxed<'a, f64> {
    // The convergence test is the base case, a curve evaluation: taken
    // before the box, a converged interval (half the calls) needs no frame.
    let (x0, y0, left, right) = match refine((x1, y1), (x2, y2), area, epsilon) {
        Ok(whole) => return A::ready(whole),
        Err(halves) => halves,
    };
    A::boxed_with(move || async move {
        let (left, right) = A::join(
            integrate_async::<A>((x1, y1), (x0, y0), left, epsilon),
            integrate_async::<A>((x0, y0), (x2, y2), right, epsilon),
        )
        .await;
        left + right
    })
}

/// 0/1 knapsack by branch and bound (the Cilk benchmark): every item is a
/// join of "take it" and "leave it"; a branch whose fractional upper bound
/// cannot beat the best value found so far is cut. The best value is
/// shared, so the work depends on the order in which branches run.
pub struct Knapsack {
    /// (weight, value), sorted by value density, densest first.
    pub items: Vec<(i64, i64)>,
    pub capacity: i64,
}

impl Knapsack {
    /// `count` random items (seeded) and a capacity of half their weight.
    pub fn random(count: usize, seed: u64) -> Knapsack {
        let mut rng = SplitMix(seed);
        let mut items: Vec<(i64, i64)> = (0..count)
            .map(|_| {
                // Strongly correlated (value = weight + 10): the bounds
                // prune little, the hard case for branch and bound.
                let weight = 1 + (rng.next() % 100) as i64;
                let value = weight + 10;
                (weight, value)
            })
            .collect();
        // Densest first: value / weight descending, compared exactly.
        items.sort_by(|a, b| (b.1 * a.0).cmp(&(a.1 * b.0)));
        let capacity = items.iter().map(|item| item.0).sum::<i64>() / 2;
        Knapsack { items, capacity }
    }
}

impl Kernel for Knapsack {
    type Scratch = ();

    fn scratch(&self) {}

    fn run<R: ForkJoin>(&self, _: &mut (), ctx: &mut R::Ctx<'_>) -> u64 {
        let best = AtomicI64::new(i64::MIN);
        let value = knapsack::<R>(&self.items, self.capacity, 0, &best, ctx);
        value as u64
    }

    fn run_async<'a, A: AsyncFork>(&'a self, _: &'a mut ()) -> A::Boxed<'a, u64> {
        A::boxed_with(move || async move {
            let best = AtomicI64::new(i64::MIN);
            let value = knapsack_async::<A>(&self.items, self.capacity, 0, &best).await;
            value as u64
        })
    }
}

fn knapsack<R: ForkJoin>(
    items: &[(i64, i64)],
    capacity: i64,
    value: i64,
    best: &AtomicI64,
    ctx: &mut R::Ctx<'_>,
) -> i64 {
    if capacity < 0 {
        return i64::MIN;
    }
    let Some((&(weight, item_value), rest)) = items.split_first() else {
        return value;
    };
    if capacity == 0 {
        return value;
    }
    // The fractional bound: fill the rest of the capacity at this item's
    // density (the densest left). Relaxed: the best value is only a hint
    // for pruning; the result does not depend on when it is seen.
    let bound = value as f64 + capacity as f64 * item_value as f64 / weight as f64;
    if bound < best.load(Ordering::Relaxed) as f64 {
        return i64::MIN;
    }
    let (with, without) = R::join(
        ctx,
        |ctx| knapsack::<R>(rest, capacity - weight, value + item_value, best, ctx),
        |ctx| knapsack::<R>(rest, capacity, value, best, ctx),
    );
    let result = with.max(without);
    best.fetch_max(result, Ordering::Relaxed);
    result
}

fn knapsack_async<'a, A: AsyncFork>(
    items: &'a [(i64, i64)],
    capacity: i64,
    value: i64,
    best: &'a AtomicI64,
) -> A::Boxed<'a, i64> {
    // The base cases that depend on the arguments alone need no frame; the
    // bound reads the best value found so far, so it is checked when the
    // branch runs, as in `knapsack`.
    if capacity < 0 {
        return A::ready(i64::MIN);
    }
    let Some((&(weight, item_value), rest)) = items.split_first() else {
        return A::ready(value);
    };
    if capacity == 0 {
        return A::ready(value);
    }
    A::boxed_with(move || async move {
        let bound = value as f64 + capacity as f64 * item_value as f64 / weight as f64;
        // Relaxed: a pruning hint, as in the synchronous kernel.
        if bound < best.load(Ordering::Relaxed) as f64 {
            return i64::MIN;
        }
        let (with, without) = A::join(
            knapsack_async::<A>(rest, capacity - weight, value + item_value, best),
            knapsack_async::<A>(rest, capacity, value, best),
        )
        .await;
        let result = with.max(without);
        best.fetch_max(result, Ordering::Relaxed);
        result
    })
}

/// Skynet: a 10-way fan-out over six levels to 1M leaves, each returning
/// its index; the sum is checked.
pub struct Skynet {
    pub leaves: u64,
}

impl Kernel for Skynet {
    type Scratch = ();

    fn scratch(&self) {}

    fn run<R: ForkJoin>(&self, _: &mut (), ctx: &mut R::Ctx<'_>) -> u64 {
        skynet::<R>(0, std::hint::black_box(self.leaves), ctx)
    }

    fn run_async<'a, A: AsyncFork>(&'a self, _: &'a mut ()) -> A::Boxed<'a, u64> {
        skynet_async::<A>(0, std::hint::black_box(self.leaves))
    }
}

fn skynet<R: ForkJoin>(number: u64, size: u64, ctx: &mut R::Ctx<'_>) -> u64 {
    if size <= 1 {
        return number;
    }
    let child = size.div_ceil(10);
    let children = size.div_ceil(child) as usize;
    fan_out::<R, _>(0..children, ctx, &|i, ctx: &mut R::Ctx<'_>| {
        let start = i as u64 * child;
        skynet::<R>(number + start, child.min(size - start), ctx)
    })
}

fn skynet_async<'a, A: AsyncFork>(number: u64, size: u64) -> A::Boxed<'a, u64> {
    if size <= 1 {
        return A::ready(number);
    }
    A::boxed_with(move || async move {
        let child = size.div_ceil(10);
        let children = size.div_ceil(child) as usize;
        fan_out_async::<A, _>(0..children, &move |i| {
            let start = i as u64 * child;
            skynet_async::<A>(number + start, child.min(size - start))
        })
        .await
    })
}

/// [`fan_out`] in async form: binary splitting of `range` with joins down
/// to single indices, summing `leaf(i)`.
pub fn fan_out_async<'a, A, F>(range: std::ops::Range<usize>, leaf: &'a F) -> A::Boxed<'a, u64>
where
    A: AsyncFork,
    F: Fn(usize) -> A::Boxed<'a, u64> + Sync,
{
    // A half of one index is that leaf's own future: a frame for a split
    // that only awaits it would cost a box per leaf that `fan_out` (a
    // closure call) does not pay.
    let half = |range: std::ops::Range<usize>| {
        if range.len() == 1 {
            leaf(range.start)
        } else {
            fan_out_async::<A, F>(range, leaf)
        }
    };
    match range.len() {
        0 => A::ready(0),
        1 => leaf(range.start),
        len => A::boxed_with(move || async move {
            let middle = range.start + len / 2;
            let (a, b) = A::join(half(range.start..middle), half(middle..range.end)).await;
            a + b
        }),
    }
}

/// A divide-and-conquer sum of `u64`s, leaves of `leaf` elements (the
/// issue's first known symptom).
pub struct Sum {
    pub values: Vec<u64>,
    pub leaf: usize,
}

impl Kernel for Sum {
    type Scratch = ();

    fn scratch(&self) {}

    fn run<R: ForkJoin>(&self, _: &mut (), ctx: &mut R::Ctx<'_>) -> u64 {
        sum::<R>(std::hint::black_box(&self.values), self.leaf, ctx)
    }

    fn run_async<'a, A: AsyncFork>(&'a self, _: &'a mut ()) -> A::Boxed<'a, u64> {
        sum_async::<A>(std::hint::black_box(&self.values), self.leaf)
    }
}

fn sum<R: ForkJoin>(values: &[u64], leaf: usize, ctx: &mut R::Ctx<'_>) -> u64 {
    if values.len() <= leaf {
        return values.iter().copied().fold(0, u64::wrapping_add);
    }
    let (left, right) = values.split_at(values.len() / 2);
    let (a, b) = R::join(
        ctx,
        |ctx| sum::<R>(left, leaf, ctx),
        |ctx| sum::<R>(right, leaf, ctx),
    );
    a.wrapping_add(b)
}

fn sum_async<A: AsyncFork>(values: &[u64], leaf: usize) -> A::Boxed<'_, u64> {
    A::boxed_with(move || async move {
        if values.len() <= leaf {
            return values.iter().copied().fold(0, u64::wrapping_add);
        }
        let (left, right) = values.split_at(values.len() / 2);
        let (a, b) = A::join(sum_async::<A>(left, leaf), sum_async::<A>(right, leaf)).await;
        a.wrapping_add(b)
    })
}

/// Sums a balanced binary tree of `values.len()` nodes in breadth-first
/// order (node `i` has children `2i + 1` and `2i + 2`), one join per node:
/// the co-runs' memory-bound program. The layout treats left-first and
/// right-first traversals alike (a pointer tree allocated depth-first
/// would favour whichever order matches the allocation).
pub struct TreeSum {
    pub values: Vec<u64>,
}

impl TreeSum {
    /// A tree of `nodes` nodes, all of value 1 (the sum is the node count).
    pub fn balanced(nodes: usize) -> TreeSum {
        TreeSum {
            values: vec![1; nodes],
        }
    }
}

impl Kernel for TreeSum {
    type Scratch = ();

    fn scratch(&self) {}

    fn run<R: ForkJoin>(&self, _: &mut (), ctx: &mut R::Ctx<'_>) -> u64 {
        tree_sum::<R>(std::hint::black_box(&self.values), 0, ctx)
    }

    fn run_async<'a, A: AsyncFork>(&'a self, _: &'a mut ()) -> A::Boxed<'a, u64> {
        tree_sum_async::<A>(std::hint::black_box(&self.values), 0)
    }
}

fn tree_sum_async<A: AsyncFork>(tree: &[u64], index: usize) -> A::Boxed<'_, u64> {
    A::boxed_with(move || async move {
        let child = |child: usize| {
            if child < tree.len() {
                tree_sum_async::<A>(tree, child)
            } else {
                A::ready(0)
            }
        };
        let (left, right) = A::join(child(2 * index + 1), child(2 * index + 2)).await;
        tree[index] + left + right
    })
}

fn tree_sum<R: ForkJoin>(tree: &[u64], index: usize, ctx: &mut R::Ctx<'_>) -> u64 {
    let child = |child: usize, ctx: &mut R::Ctx<'_>| {
        if child < tree.len() {
            tree_sum::<R>(tree, child, ctx)
        } else {
            0
        }
    };
    let (left, right) = R::join(
        ctx,
        |ctx| child(2 * index + 1, ctx),
        |ctx| child(2 * index + 2, ctx),
    );
    tree[index] + left + right
}

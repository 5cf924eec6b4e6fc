//! The unbalanced tree search (UTS): count the nodes of an implicit random
//! tree whose shape is known only by exploring it. Every node's state is a
//! hash of its parent's state and its index, so the tree is the same on
//! every run and runtime. The trees are irregular and deep: the case where
//! lazy queueing in `join` could lose parallelism.

use super::recursive::fan_out_async;
use super::{Kernel, mix};
use crate::forkjoin::asyncfork::AsyncFork;
use crate::forkjoin::runtime::{ForkJoin, fan_out};

/// The tree shapes of the UTS benchmark.
#[derive(Debug, Clone, Copy)]
pub enum Shape {
    /// Every node above `depth` has a geometrically distributed number of
    /// children with mean `mean` (UTS T1's "fixed" geometric shape).
    Geometric { mean: f64, depth: u32 },
    /// The root has `root` children; every other node has `children`
    /// children with probability `probability`, else none (UTS T3). The
    /// expected branching `children × probability` is just below 1, so the
    /// tree is deep and lopsided.
    Binomial {
        root: u32,
        children: u32,
        probability: f64,
    },
}

/// Counts the nodes of the tree of `shape` grown from `seed`.
pub struct Uts {
    pub shape: Shape,
    pub seed: u64,
}

/// A uniform draw in [0, 1) from a node state.
fn unit(state: u64) -> f64 {
    (state >> 11) as f64 / (1u64 << 53) as f64
}

impl Uts {
    fn children(&self, state: u64, depth: u32) -> u32 {
        match self.shape {
            Shape::Geometric { mean, depth: limit } => {
                if depth >= limit {
                    return 0;
                }
                // Inverse transform of a geometric distribution on
                // {0, 1, ...} with mean `mean`.
                let p = 1.0 / (1.0 + mean);
                let u = unit(state);
                ((1.0 - u).ln() / (1.0 - p).ln()).floor() as u32
            }
            Shape::Binomial {
                root,
                children,
                probability,
            } => {
                if depth == 0 {
                    root
                } else if unit(state) < probability {
                    children
                } else {
                    0
                }
            }
        }
    }

    fn count<R: ForkJoin>(&self, state: u64, depth: u32, ctx: &mut R::Ctx<'_>) -> u64 {
        let children = self.children(state, depth) as usize;
        1 + fan_out::<R, _>(0..children, ctx, &|i, ctx: &mut R::Ctx<'_>| {
            self.count::<R>(mix(state ^ (i as u64 + 1)), depth + 1, ctx)
        })
    }

    fn count_async<A: AsyncFork>(&self, state: u64, depth: u32) -> A::Boxed<'_, u64> {
        let children = self.children(state, depth) as usize;
        // Most nodes are leaves: their count needs no frame (as `count`
        // needs no join for them).
        if children == 0 {
            return A::ready(1);
        }
        A::boxed_with(move || async move {
            let leaf =
                move |i: usize| self.count_async::<A>(mix(state ^ (i as u64 + 1)), depth + 1);
            1 + fan_out_async::<A, _>(0..children, &leaf).await
        })
    }
}

impl Kernel for Uts {
    type Scratch = ();

    fn scratch(&self) {}

    fn run<R: ForkJoin>(&self, _: &mut (), ctx: &mut R::Ctx<'_>) -> u64 {
        self.count::<R>(mix(std::hint::black_box(self.seed)), 0, ctx)
    }

    fn run_async<'a, A: AsyncFork>(&'a self, _: &'a mut ()) -> A::Boxed<'a, u64> {
        self.count_async::<A>(mix(std::hint::black_box(self.seed)), 0)
    }
}

#[cfg(test)]
impl Uts {
    /// The node count by an explicit stack, without joins (tests).
    pub fn count_iteratively(&self) -> u64 {
        let mut stack = vec![(mix(self.seed), 0u32)];
        let mut count = 0;
        while let Some((state, depth)) = stack.pop() {
            count += 1;
            for i in 0..self.children(state, depth) {
                stack.push((mix(state ^ (u64::from(i) + 1)), depth + 1));
            }
        }
        count
    }
}

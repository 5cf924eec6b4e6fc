//! The kernels of the Nowa paper's suite (Table I: the Cilk/Fibril
//! benchmarks), plus skynet, the unbalanced tree search and a
//! divide-and-conquer sum. Each is written once, generic over
//! [`ForkJoin`], so every runtime runs exactly the same algorithm with the
//! same cut-offs.
//!
//! A kernel builds its input once ([`Suite::visit`]), makes the per-run
//! state outside the timed region ([`Kernel::scratch`]: the array to sort,
//! the matrix to factor in place) and returns a digest of its result
//! ([`Kernel::run`]), which must equal the serial elision's.

pub mod cholesky;
pub mod dense;
pub mod fft;
pub mod heat;
pub mod quicksort;
pub mod recursive;
pub mod uts;
pub mod view;

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use crate::forkjoin::asyncfork::AsyncFork;
use crate::forkjoin::runtime::ForkJoin;

/// A benchmark kernel.
pub trait Kernel: Sync {
    /// The state one run consumes, made outside the timed region.
    type Scratch: Send;

    /// Fresh state for one run.
    fn scratch(&self) -> Self::Scratch;

    /// Runs the kernel on `R`; returns a digest of the result (equal on
    /// every runtime, bit for bit).
    fn run<R: ForkJoin>(&self, scratch: &mut Self::Scratch, ctx: &mut R::Ctx<'_>) -> u64;

    /// The kernel in async form on `A`: the same algorithm and cut-offs,
    /// cheap base cases returned with `A::ready`, recursive calls boxed
    /// with `A::boxed_with`. The future returns the digest `run` does.
    fn run_async<'a, A: AsyncFork>(&'a self, scratch: &'a mut Self::Scratch) -> A::Boxed<'a, u64>;
}

/// The kernels of the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Suite {
    /// Recursive Fibonacci, one join per call.
    Fib,
    /// Counting n-queens placements.
    Nqueens,
    /// Adaptive quadrature.
    Integrate,
    /// 0/1 knapsack by branch and bound (work depends on execution order).
    Knapsack,
    /// Recursive matrix multiply on quadrants.
    Matmul,
    /// Rectangular matrix multiply, splitting the largest dimension.
    Rectmul,
    /// Strassen's matrix multiply.
    Strassen,
    /// Recursive LU factorization.
    Lu,
    /// Sparse Cholesky factorization on a quad-tree.
    Cholesky,
    /// Radix-2 fast Fourier transform.
    Fft,
    /// Jacobi heat diffusion.
    Heat,
    /// Parallel quicksort.
    Quicksort,
    /// 10-way fan-out to 1M leaves.
    Skynet,
    /// Unbalanced tree search, geometric tree.
    UtsGeo,
    /// Unbalanced tree search, binomial tree.
    UtsBin,
    /// Divide-and-conquer sum of 4M `u64`s, leaves of 512.
    Sum,
}

/// Input sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scale {
    /// Tiny inputs, milliseconds each (CI smoke runs).
    Quick,
    /// Small inputs, tens of milliseconds serially (`bwos-bench report`).
    Small,
    /// Inputs whose serial run takes about half a second on the 2-core
    /// development machine (the default of `forkjoin`).
    Default,
    /// The paper's inputs where they fit in memory and time (Table I).
    Paper,
}

/// Something to do with a kernel instance, whatever its type.
pub trait Visitor {
    type Output;

    /// Called with the instance's description and the instance.
    fn visit<K: Kernel>(self, label: String, kernel: &K) -> Self::Output;
}

impl Suite {
    /// Every kernel, in table order.
    pub const ALL: [Suite; 16] = [
        Suite::Fib,
        Suite::Nqueens,
        Suite::Integrate,
        Suite::Knapsack,
        Suite::Matmul,
        Suite::Rectmul,
        Suite::Strassen,
        Suite::Lu,
        Suite::Cholesky,
        Suite::Fft,
        Suite::Heat,
        Suite::Quicksort,
        Suite::Skynet,
        Suite::UtsGeo,
        Suite::UtsBin,
        Suite::Sum,
    ];

    /// The kernel's name on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            Suite::Fib => "fib",
            Suite::Nqueens => "nqueens",
            Suite::Integrate => "integrate",
            Suite::Knapsack => "knapsack",
            Suite::Matmul => "matmul",
            Suite::Rectmul => "rectmul",
            Suite::Strassen => "strassen",
            Suite::Lu => "lu",
            Suite::Cholesky => "cholesky",
            Suite::Fft => "fft",
            Suite::Heat => "heat",
            Suite::Quicksort => "quicksort",
            Suite::Skynet => "skynet",
            Suite::UtsGeo => "uts-geo",
            Suite::UtsBin => "uts-bin",
            Suite::Sum => "sum",
        }
    }

    /// Builds this kernel's input at `scale` and hands it to `visitor`.
    pub fn visit<V: Visitor>(self, scale: Scale, visitor: V) -> V::Output {
        use Scale::{Default, Paper, Quick, Small};
        let pick = |sizes: [usize; 4]| match scale {
            Quick => sizes[0],
            Small => sizes[1],
            Default => sizes[2],
            Paper => sizes[3],
        };
        const SEED: u64 = 0x5eed;
        match self {
            Suite::Fib => {
                let n = pick([20, 34, 40, 42]) as u64;
                visitor.visit(format!("fib({n})"), &recursive::Fib { n })
            }
            Suite::Nqueens => {
                let n = pick([8, 12, 14, 14]) as u32;
                visitor.visit(format!("nqueens({n})"), &recursive::Nqueens { n })
            }
            Suite::Integrate => {
                let upper = pick([100, 600, 3_000, 10_000]) as f64;
                let epsilon = 1e-9;
                let label = format!("integrate(0..{upper}, ε = {epsilon:e})");
                visitor.visit(label, &recursive::Integrate { upper, epsilon })
            }
            Suite::Knapsack => {
                let count = pick([24, 44, 52, 56]);
                let kernel = recursive::Knapsack::random(count, SEED);
                visitor.visit(format!("knapsack({count} items)"), &kernel)
            }
            Suite::Matmul => {
                let n = pick([64, 512, 1024, 2048]);
                let kernel = dense::Product::random(dense::Algorithm::Quadrants, [n; 3], 32, SEED);
                visitor.visit(format!("matmul({n}², leaf 32²)"), &kernel)
            }
            Suite::Rectmul => {
                let m = pick([96, 480, 1152, 4096]);
                let shape = [m, m * 3 / 4, m * 5 / 4];
                let kernel =
                    dense::Product::random(dense::Algorithm::LargestDimension, shape, 32, SEED);
                let [m, k, n] = shape;
                visitor.visit(format!("rectmul({m}×{k} by {k}×{n}, leaf 32)"), &kernel)
            }
            Suite::Strassen => {
                let n = pick([128, 512, 1024, 4096]);
                let kernel = dense::Product::random(dense::Algorithm::Strassen, [n; 3], 64, SEED);
                visitor.visit(format!("strassen({n}², leaf 64²)"), &kernel)
            }
            Suite::Lu => {
                let n = pick([64, 512, 1024, 4096]);
                let kernel = dense::Lu::random(n, 32, SEED);
                visitor.visit(format!("lu({n}², leaf 32²)"), &kernel)
            }
            Suite::Cholesky => {
                let n = pick([128, 1024, 2048, 4096]);
                let nonzeros = pick([400, 2_500, 10_000, 40_000]);
                let kernel = cholesky::Cholesky::random(n, 16, nonzeros, SEED);
                let label = format!("cholesky({n}², {nonzeros} nonzeros, leaf 16²)");
                visitor.visit(label, &kernel)
            }
            Suite::Fft => {
                let log = pick([12, 18, 21, 26]);
                let kernel = fft::Fft::random(1 << log, SEED);
                visitor.visit(format!("fft(2^{log})"), &kernel)
            }
            Suite::Heat => {
                let rows = pick([64, 1024, 2048, 4096]);
                let columns = pick([64, 512, 1024, 1024]);
                let steps = pick([10, 50, 150, 100]);
                let kernel = heat::Heat {
                    rows,
                    columns,
                    steps,
                    leaf_rows: 8,
                };
                visitor.visit(format!("heat({rows}×{columns}, {steps} steps)"), &kernel)
            }
            Suite::Quicksort => {
                let len = pick([10_000, 500_000, 5_000_000, 100_000_000]);
                let kernel = quicksort::Quicksort::random(len, SEED);
                visitor.visit(format!("quicksort({len})"), &kernel)
            }
            Suite::Skynet => {
                let leaves = pick([10_000, 1_000_000, 1_000_000, 1_000_000]) as u64;
                visitor.visit(
                    format!("skynet({leaves} leaves)"),
                    &recursive::Skynet { leaves },
                )
            }
            Suite::UtsGeo => {
                let depth = pick([5, 9, 11, 13]) as u32;
                let shape = uts::Shape::Geometric { mean: 4.0, depth };
                let kernel = uts::Uts { shape, seed: SEED };
                visitor.visit(format!("uts geometric(mean 4, depth {depth})"), &kernel)
            }
            Suite::UtsBin => {
                let root = pick([200, 2_000, 20_000, 100_000]) as u32;
                // UTS T3's branching: 8 × 0.124875 = 0.999 expected children.
                let probability = 0.124_875;
                let shape = uts::Shape::Binomial {
                    root,
                    children: 8,
                    probability,
                };
                let kernel = uts::Uts { shape, seed: SEED };
                let label = format!("uts binomial(root {root}, 8 children at p = {probability})");
                visitor.visit(label, &kernel)
            }
            Suite::Sum => {
                let len = pick([65_536, 4 << 20, 4 << 20, 4 << 20]);
                let kernel = recursive::Sum {
                    values: (0..len as u64).collect(),
                    leaf: 512,
                };
                visitor.visit(format!("sum({len} u64, leaf 512)"), &kernel)
            }
        }
    }
}

/// SplitMix64: a small seeded generator for inputs (not for the
/// scheduler; the inputs must be the same on every run).
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }

    /// A uniform draw in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// SplitMix64's finalizer: a bijective 64-bit hash.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A digest of integers, order-sensitive.
pub fn digest_u64(values: &[u64]) -> u64 {
    values
        .iter()
        .fold(0x51_7cc1_b727_220a, |hash, &v| mix(hash ^ v))
}

/// A digest of floating-point results, bit for bit (the kernels' reduction
/// orders are fixed by their recursion, not by the schedule).
pub fn digest_f64(values: &[f64]) -> u64 {
    digest_f64_iter(values.iter().copied())
}

/// [`digest_f64`] of values that are not in one slice (the digest is part
/// of the timed run, so it should not allocate a copy).
pub fn digest_f64_iter(values: impl IntoIterator<Item = f64>) -> u64 {
    values
        .into_iter()
        .fold(0x51_7cc1_b727_220a, |hash, v| mix(hash ^ v.to_bits()))
}

//! The fork/join workloads, written once and instantiated per runtime.
//!
//! Each runtime gives a context type and a two-closure join: `()` and a
//! sequential join for the serial baseline, `()` and `bwos::join` /
//! `rayon::join`, `chili::Scope` and `Scope::join` (chili threads its scope
//! through the closures). The bodies are the same tokens in every module,
//! so the comparison measures the runtimes, not the code.

/// A balanced binary tree of `values.len()` nodes in breadth-first order
/// (node `i` has children `2i + 1` and `2i + 2`). The layout treats
/// left-first and right-first traversals alike: a pointer tree allocated
/// depth-first favours whichever order matches the allocation (chili runs
/// the second closure first when it does not share), which would measure
/// the memory layout instead of the runtime.
pub struct Tree {
    pub values: Vec<u64>,
}

impl Tree {
    /// A tree of `nodes` nodes, all of value 1 (the sum is the node count).
    pub fn balanced(nodes: usize) -> Tree {
        Tree {
            values: vec![1; nodes],
        }
    }
}

/// The number of n-queens solutions for small `n`, to check results.
pub fn nqueens_solutions(n: u32) -> Option<u64> {
    [
        1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14_200, 73_712, 365_596,
    ]
    .get(n as usize)
    .copied()
}

/// The n-th Fibonacci number, for checking results.
pub fn fib_value(n: u64) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a.wrapping_add(b));
    }
    a
}

macro_rules! workloads {
    ($module:ident, $ctx:ty, $join:ident) => {
        pub mod $module {
            #[allow(unused_imports)]
            use super::*;

            /// Naive recursive Fibonacci: one join per call, almost no work.
            pub fn fib(n: u64, s: &mut $ctx) -> u64 {
                if n < 2 {
                    return n;
                }
                let (a, b) = $join!(s, |s| fib(n - 1, s), |s| fib(n - 2, s));
                a + b
            }

            /// Counts the n-queens solutions: every free column of a row
            /// is a branch, and the free columns are split in halves with
            /// joins (bit masks, no allocation).
            pub fn nqueens(n: u32, s: &mut $ctx) -> u64 {
                let all = (1u32 << n) - 1;
                place(all, 0, 0, 0, s)
            }

            fn place(all: u32, columns: u32, left: u32, right: u32, s: &mut $ctx) -> u64 {
                if columns == all {
                    return 1;
                }
                let free = all & !(columns | left | right);
                branches(all, free, columns, left, right, s)
            }

            fn branches(
                all: u32,
                free: u32,
                columns: u32,
                left: u32,
                right: u32,
                s: &mut $ctx,
            ) -> u64 {
                match free.count_ones() {
                    0 => 0,
                    1 => place(
                        all,
                        columns | free,
                        ((left | free) << 1) & all,
                        (right | free) >> 1,
                        s,
                    ),
                    ones => {
                        // The lowest half of the free columns, and the rest.
                        let mut low = free;
                        for _ in 0..ones / 2 {
                            low &= low - 1;
                        }
                        let high = low;
                        let low = free & !high;
                        let (a, b) =
                            $join!(s, |s| branches(all, low, columns, left, right, s), |s| {
                                branches(all, high, columns, left, right, s)
                            });
                        a + b
                    }
                }
            }

            /// Sums the subtree rooted at node `index`, one join per node.
            pub fn tree_sum(tree: &[u64], index: usize, s: &mut $ctx) -> u64 {
                let (left, right) = $join!(
                    s,
                    |s| if 2 * index + 1 < tree.len() {
                        tree_sum(tree, 2 * index + 1, s)
                    } else {
                        0
                    },
                    |s| if 2 * index + 2 < tree.len() {
                        tree_sum(tree, 2 * index + 2, s)
                    } else {
                        0
                    }
                );
                tree[index] + left + right
            }
        }
    };
}

macro_rules! serial_join {
    ($s:ident, |$x:ident| $a:expr, |$y:ident| $b:expr) => {{
        let ra = {
            let $x = &mut *$s;
            $a
        };
        let rb = {
            let $y = &mut *$s;
            $b
        };
        (ra, rb)
    }};
}

macro_rules! bwos_join {
    ($s:ident, |$x:ident| $a:expr, |$y:ident| $b:expr) => {{
        let _ = $s;
        bwos::join(
            || {
                let $x = &mut ();
                $a
            },
            || {
                let $y = &mut ();
                $b
            },
        )
    }};
}

macro_rules! rayon_join {
    ($s:ident, |$x:ident| $a:expr, |$y:ident| $b:expr) => {{
        let _ = $s;
        rayon::join(
            || {
                let $x = &mut ();
                $a
            },
            || {
                let $y = &mut ();
                $b
            },
        )
    }};
}

macro_rules! chili_join {
    ($s:ident, |$x:ident| $a:expr, |$y:ident| $b:expr) => {
        $s.join(|$x| $a, |$y| $b)
    };
}

workloads!(serial, (), serial_join);
workloads!(with_bwos, (), bwos_join);
workloads!(with_rayon, (), rayon_join);
workloads!(with_chili, chili::Scope<'_>, chili_join);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_workloads_compute_the_known_values() {
        assert_eq!(serial::fib(20, &mut ()), fib_value(20));
        for n in 1..=10 {
            assert_eq!(
                Some(serial::nqueens(n, &mut ())),
                nqueens_solutions(n),
                "n = {n}"
            );
        }
        for nodes in [1, 2, 3, 1000, 4097] {
            let tree = Tree::balanced(nodes);
            assert_eq!(serial::tree_sum(&tree.values, 0, &mut ()), nodes as u64);
        }
    }

    #[test]
    fn runtimes_compute_the_same_values() {
        let pool = bwos::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        assert_eq!(pool.install(|| with_bwos::nqueens(8, &mut ())), 92);
        let rayon_pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        assert_eq!(rayon_pool.install(|| with_rayon::fib(15, &mut ())), 610);
        let chili_pool = chili::ThreadPool::with_config(chili::Config {
            thread_count: std::num::NonZero::new(2),
            ..chili::Config::default()
        });
        let tree = Tree::balanced(1000);
        assert_eq!(
            with_chili::tree_sum(&tree.values, 0, &mut chili_pool.scope()),
            1000
        );
    }
}

//! Every kernel against a reference computed another way (serial elision),
//! and every runtime against the serial elision (quick inputs).

use super::*;
use crate::forkjoin::asyncfork::{AsyncFork, AsyncSerial, Fork, ForkBoxPin};
use crate::forkjoin::runtime::{Bwos, Chili, Rayon, Serial};

fn serial<K: Kernel>(kernel: &K) -> u64 {
    kernel.run::<Serial>(&mut kernel.scratch(), &mut ())
}

fn close(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs())),
        "{what}: {a} against {b}"
    );
}

#[test]
fn counting_kernels_compute_the_known_values() {
    for n in [0, 1, 2, 10, 20] {
        assert_eq!(
            serial(&recursive::Fib { n }),
            recursive::fib_value(n),
            "fib({n})"
        );
    }
    for n in 0..=10 {
        assert_eq!(
            Some(serial(&recursive::Nqueens { n })),
            recursive::nqueens_solutions(n),
            "nqueens({n})"
        );
    }
    for leaves in [1, 7, 10, 1000, 12_345] {
        assert_eq!(
            serial(&recursive::Skynet { leaves }),
            leaves * (leaves - 1) / 2,
            "skynet({leaves})"
        );
    }
    let values: Vec<u64> = (0..100_000).collect();
    assert_eq!(
        serial(&recursive::Sum { values, leaf: 512 }),
        99_999 * 100_000 / 2
    );
    assert_eq!(serial(&recursive::TreeSum::balanced(1000)), 1000);
}

#[test]
fn integrate_matches_the_closed_form() {
    let upper = 100.0;
    let area = f64::from_bits(serial(&recursive::Integrate {
        upper,
        epsilon: 1e-9,
    }));
    // ∫₀ᵘ (x² + 1) x dx = u⁴/4 + u²/2.
    let exact = upper.powi(4) / 4.0 + upper * upper / 2.0;
    assert!(
        (area - exact).abs() / exact < 1e-9,
        "{area} against {exact}"
    );
}

#[test]
fn knapsack_matches_dynamic_programming() {
    for (count, seed) in [(12, 1), (20, 2), (24, 3)] {
        let kernel = recursive::Knapsack::random(count, seed);
        let capacity = kernel.capacity as usize;
        let mut best = vec![0i64; capacity + 1];
        for &(weight, value) in &kernel.items {
            for c in (weight as usize..=capacity).rev() {
                best[c] = best[c].max(best[c - weight as usize] + value);
            }
        }
        assert_eq!(serial(&kernel) as i64, best[capacity], "{count} items");
    }
}

fn naive_product(a: &[f64], b: &[f64], [m, k, n]: [usize; 3]) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|l| a[i * k + l] * b[l * n + j]).sum();
        }
    }
    c
}

/// Runs a kernel serially and returns its output buffer.
fn output<K: Kernel<Scratch = Vec<f64>>>(kernel: &K) -> Vec<f64> {
    let mut scratch = kernel.scratch();
    kernel.run::<Serial>(&mut scratch, &mut ());
    scratch
}

#[test]
fn matrix_products_match_the_definition() {
    let random = |rows, cols, seed| {
        let mut rng = SplitMix(seed);
        (0..rows * cols)
            .map(|_| 2.0 * rng.unit() - 1.0)
            .collect::<Vec<f64>>()
    };
    for (algorithm, shape) in [
        (dense::Algorithm::Quadrants, [128; 3]),
        (dense::Algorithm::Strassen, [128; 3]),
        (dense::Algorithm::LargestDimension, [100, 70, 130]),
    ] {
        let [m, k, n] = shape;
        let (a, b) = (random(m, k, 7), random(k, n, 8));
        let expected = naive_product(&a, &b, shape);
        let got = output(&dense::Product::random(algorithm, shape, 16, 7));
        assert_eq!(got.len(), expected.len());
        for (x, y) in got.iter().zip(&expected) {
            close(*x, *y, &format!("{algorithm:?}"));
        }
    }
}

#[test]
fn lu_factors_multiply_back_to_the_input() {
    let n = 128;
    let kernel = dense::Lu::random(n, 16, 9);
    let factors = output(&kernel);
    for i in 0..n {
        for j in 0..n {
            // (L U)_ij with L unit lower and U upper, both in `factors`.
            let product: f64 = (0..=i.min(j))
                .map(|k| if k == i { 1.0 } else { factors[i * n + k] } * factors[k * n + j])
                .sum();
            close(product, kernel.input()[i * n + j], "lu");
        }
    }
}

#[test]
fn cholesky_factor_multiplies_back_to_the_input() {
    let n = 128;
    let kernel = cholesky::Cholesky::random(n, 8, 600, 11);
    let (a, l) = (kernel.dense_input(), kernel.dense_factor());
    for i in 0..n {
        for j in 0..=i {
            let product: f64 = (0..=j).map(|k| l[i * n + k] * l[j * n + k]).sum();
            close(product, a[i * n + j], "cholesky");
        }
    }
}

#[test]
fn fft_matches_the_discrete_fourier_transform() {
    // Larger than the serial cut-off, so the joined path runs.
    let kernel = fft::Fft::random(4096, 5);
    let mut out = kernel.scratch();
    kernel.run::<Serial>(&mut out, &mut ());
    for (got, want) in out.iter().zip(kernel.naive()) {
        assert!((got.re - want.re).abs() < 1e-8 && (got.im - want.im).abs() < 1e-8);
    }
}

#[test]
fn heat_matches_a_plain_stencil_loop() {
    let kernel = heat::Heat {
        rows: 40,
        columns: 24,
        steps: 7,
        leaf_rows: 3,
    };
    let (mut grid, _) = kernel.scratch();
    for _ in 0..kernel.steps {
        let old = grid.clone();
        for r in 1..kernel.rows - 1 {
            for c in 1..kernel.columns - 1 {
                let at = |r: usize, c: usize| old[r * kernel.columns + c];
                grid[r * kernel.columns + c] = at(r, c)
                    + 0.2
                        * (at(r - 1, c) + at(r + 1, c) + at(r, c - 1) + at(r, c + 1)
                            - 4.0 * at(r, c));
            }
        }
    }
    assert_eq!(serial(&kernel), digest_f64(&grid));
}

#[test]
fn quicksort_sorts() {
    for len in [0, 1, 2, 3, 33, 1000, 100_000] {
        let kernel = quicksort::Quicksort::random(len, len as u64);
        let mut sorted = kernel.values.clone();
        sorted.sort_unstable();
        let mut values = kernel.scratch();
        kernel.run::<Serial>(&mut values, &mut ());
        assert_eq!(values, sorted, "length {len}");
    }
    // Many duplicates.
    let kernel = quicksort::Quicksort {
        values: (0..10_000).map(|i| i % 3).collect(),
    };
    let mut values = kernel.scratch();
    kernel.run::<Serial>(&mut values, &mut ());
    assert!(values.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn uts_counts_every_node_once() {
    for shape in [
        uts::Shape::Geometric {
            mean: 3.0,
            depth: 6,
        },
        uts::Shape::Binomial {
            root: 50,
            children: 4,
            probability: 0.2,
        },
    ] {
        let kernel = uts::Uts { shape, seed: 3 };
        assert_eq!(serial(&kernel), kernel.count_iteratively(), "{shape:?}");
    }
}

/// Every kernel, quick inputs: the parallel runtimes compute the serial
/// elision's digest, on 1 and 2 threads.
#[test]
fn every_runtime_agrees_with_the_serial_elision() {
    struct Check(usize);
    impl Visitor for Check {
        type Output = ();
        fn visit<K: Kernel>(self, label: String, kernel: &K) {
            let expected = serial(kernel);
            let threads = self.0;
            let bwos = Bwos::build(threads);
            let got = Bwos::run(&bwos, |ctx| kernel.run::<Bwos>(&mut kernel.scratch(), ctx));
            assert_eq!(got, expected, "bwos, {label}, {threads} threads");
            let rayon = Rayon::build(threads);
            let got = Rayon::run(&rayon, |ctx| {
                kernel.run::<Rayon>(&mut kernel.scratch(), ctx)
            });
            assert_eq!(got, expected, "rayon, {label}, {threads} threads");
            let chili = Chili::build(threads);
            let got = Chili::run(&chili, |ctx| {
                kernel.run::<Chili>(&mut kernel.scratch(), ctx)
            });
            assert_eq!(got, expected, "chili, {label}, {threads} threads");
            check_async::<K, Fork>(kernel, expected, &label, threads);
            check_async::<K, ForkBoxPin>(kernel, expected, &label, threads);
            check_async::<K, AsyncSerial>(kernel, expected, &label, threads);
        }
    }
    /// The kernel's async form on `A`.
    fn check_async<K: Kernel, A: AsyncFork>(
        kernel: &K,
        expected: u64,
        label: &str,
        threads: usize,
    ) {
        let pool = A::build(threads);
        let got = A::block_on(&pool, async {
            let mut scratch = kernel.scratch();
            kernel.run_async::<A>(&mut scratch).await
        });
        assert_eq!(got, expected, "{}, {label}, {threads} threads", A::NAME);
    }
    bwos_testkit::watchdog("every_runtime_agrees_with_the_serial_elision", || {
        for kernel in Suite::ALL {
            for threads in [1, 2] {
                kernel.visit(Scale::Quick, Check(threads));
            }
        }
    });
}

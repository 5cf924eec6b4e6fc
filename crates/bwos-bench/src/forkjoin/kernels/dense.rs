//! The dense matrix kernels of the Cilk suite: matmul (recursive divide
//! and conquer on quadrants), rectmul (rectangular, splitting the largest
//! dimension), strassen, and lu (blocked, recursive, no pivoting, on a
//! diagonally dominant matrix).

use super::view::{MatMut, MatRef, mul_add_leaf};
use super::{Kernel, SplitMix, digest_f64};
use crate::forkjoin::asyncfork::AsyncFork;
use crate::forkjoin::runtime::ForkJoin;

/// `rows × cols` random values in [-1, 1) (seeded).
fn random_matrix(rows: usize, cols: usize, seed: u64) -> Vec<f64> {
    let mut rng = SplitMix(seed);
    (0..rows * cols).map(|_| 2.0 * rng.unit() - 1.0).collect()
}

/// Four-way join, as two levels of `join`.
fn join4<R, A, B, C, D>(ctx: &mut R::Ctx<'_>, a: A, b: B, c: C, d: D)
where
    R: ForkJoin,
    A: FnOnce(&mut R::Ctx<'_>) + Send,
    B: FnOnce(&mut R::Ctx<'_>) + Send,
    C: FnOnce(&mut R::Ctx<'_>) + Send,
    D: FnOnce(&mut R::Ctx<'_>) + Send,
{
    R::join(ctx, |ctx| R::join(ctx, a, b), |ctx| R::join(ctx, c, d));
}

/// [`join4`] in async form: four futures, as two levels of `join`.
async fn join4_async<A, FA, FB, FC, FD>(a: FA, b: FB, c: FC, d: FD)
where
    A: AsyncFork,
    FA: Future<Output = ()> + Send,
    FB: Future<Output = ()> + Send,
    FC: Future<Output = ()> + Send,
    FD: Future<Output = ()> + Send,
{
    A::join(A::join(a, b), A::join(c, d)).await;
}

/// `C = A B` for random `m × k` and `k × n` factors, by one of three
/// algorithms (the matmul, strassen and rectmul kernels).
pub struct Product {
    pub algorithm: Algorithm,
    /// `[m, k, n]`.
    pub shape: [usize; 3],
    pub leaf: usize,
    a: Vec<f64>,
    b: Vec<f64>,
}

/// How [`Product`] multiplies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// Square factors of a power-of-two order: eight half-size products
    /// in two rounds of four parallel ones, down to `leaf × leaf` blocks
    /// (Cilk's matmul).
    Quadrants,
    /// Square factors of a power-of-two order: Strassen's seven half-size
    /// products, computed in parallel, each into a buffer of its own, down
    /// to `leaf × leaf` blocks multiplied directly.
    Strassen,
    /// Any shape: the largest dimension is halved until all three are at
    /// most `leaf`. Halving `m` or `n` splits `C` in parallel; halving `k`
    /// adds two products into the same `C`, one after the other (Cilk's
    /// rectmul).
    LargestDimension,
}

impl Product {
    /// Random factors of `shape` (`[m, k, n]`; square of a power-of-two
    /// order for `Quadrants` and `Strassen`).
    pub fn random(algorithm: Algorithm, shape: [usize; 3], leaf: usize, seed: u64) -> Product {
        let [m, k, n] = shape;
        if algorithm != Algorithm::LargestDimension {
            assert!(
                m == k && k == n && n.is_power_of_two(),
                "{algorithm:?} multiplies square matrices of a power-of-two order, not {m}×{k} by {k}×{n}"
            );
        }
        Product {
            algorithm,
            shape,
            leaf,
            a: random_matrix(m, k, seed),
            b: random_matrix(k, n, seed + 1),
        }
    }
}

impl Kernel for Product {
    type Scratch = Vec<f64>;

    fn scratch(&self) -> Vec<f64> {
        vec![0.0; self.shape[0] * self.shape[2]]
    }

    fn run<R: ForkJoin>(&self, c: &mut Vec<f64>, ctx: &mut R::Ctx<'_>) -> u64 {
        let [m, k, n] = self.shape;
        let (a, b) = (MatRef::new(&self.a, m, k), MatRef::new(&self.b, k, n));
        let c_view = MatMut::new(c, m, n);
        match self.algorithm {
            Algorithm::Quadrants => matmul::<R>(a, b, c_view, self.leaf, ctx),
            Algorithm::Strassen => strassen::<R>(a, b, c_view, self.leaf, ctx),
            Algorithm::LargestDimension => rectmul::<R>(a, b, c_view, 1.0, self.leaf, ctx),
        }
        digest_f64(c)
    }

    fn run_async<'a, A: AsyncFork>(&'a self, c: &'a mut Vec<f64>) -> A::Boxed<'a, u64> {
        A::boxed_with(move || async move {
            let [m, k, n] = self.shape;
            let (a, b) = (MatRef::new(&self.a, m, k), MatRef::new(&self.b, k, n));
            let c_view = MatMut::new(c, m, n);
            let leaf = self.leaf;
            match self.algorithm {
                Algorithm::Quadrants => matmul_async::<A>(a, b, c_view, leaf).await,
                Algorithm::Strassen => strassen_async::<A>(a, b, c_view, leaf).await,
                Algorithm::LargestDimension => rectmul_async::<A>(a, b, c_view, 1.0, leaf).await,
            }
            digest_f64(c)
        })
    }
}

/// `c += a b`.
fn matmul<R: ForkJoin>(
    a: MatRef<'_>,
    b: MatRef<'_>,
    mut c: MatMut<'_>,
    leaf: usize,
    ctx: &mut R::Ctx<'_>,
) {
    if c.rows <= leaf {
        mul_add_leaf(a, b, &mut c, 1.0);
        return;
    }
    let [a00, a01, a10, a11] = a.quadrants();
    let [b00, b01, b10, b11] = b.quadrants();
    {
        let [c00, c01, c10, c11] = c.reborrow().quadrants();
        join4::<R, _, _, _, _>(
            ctx,
            |ctx| matmul::<R>(a00, b00, c00, leaf, ctx),
            |ctx| matmul::<R>(a00, b01, c01, leaf, ctx),
            |ctx| matmul::<R>(a10, b00, c10, leaf, ctx),
            |ctx| matmul::<R>(a10, b01, c11, leaf, ctx),
        );
    }
    let [c00, c01, c10, c11] = c.quadrants();
    join4::<R, _, _, _, _>(
        ctx,
        |ctx| matmul::<R>(a01, b10, c00, leaf, ctx),
        |ctx| matmul::<R>(a01, b11, c01, leaf, ctx),
        |ctx| matmul::<R>(a11, b10, c10, leaf, ctx),
        |ctx| matmul::<R>(a11, b11, c11, leaf, ctx),
    );
}

/// [`matmul`] in async form.
fn matmul_async<'a, A: AsyncFork>(
    a: MatRef<'a>,
    b: MatRef<'a>,
    mut c: MatMut<'a>,
    leaf: usize,
) -> A::Boxed<'a, ()> {
    A::boxed_with(move || async move {
        if c.rows <= leaf {
            mul_add_leaf(a, b, &mut c, 1.0);
            return;
        }
        let [a00, a01, a10, a11] = a.quadrants();
        let [b00, b01, b10, b11] = b.quadrants();
        {
            let [c00, c01, c10, c11] = c.reborrow().quadrants();
            join4_async::<A, _, _, _, _>(
                matmul_async::<A>(a00, b00, c00, leaf),
                matmul_async::<A>(a00, b01, c01, leaf),
                matmul_async::<A>(a10, b00, c10, leaf),
                matmul_async::<A>(a10, b01, c11, leaf),
            )
            .await;
        }
        let [c00, c01, c10, c11] = c.quadrants();
        join4_async::<A, _, _, _, _>(
            matmul_async::<A>(a01, b10, c00, leaf),
            matmul_async::<A>(a01, b11, c01, leaf),
            matmul_async::<A>(a11, b10, c10, leaf),
            matmul_async::<A>(a11, b11, c11, leaf),
        )
        .await;
    })
}

/// `c += sign × a b`, any shapes.
fn rectmul<R: ForkJoin>(
    a: MatRef<'_>,
    b: MatRef<'_>,
    mut c: MatMut<'_>,
    sign: f64,
    leaf: usize,
    ctx: &mut R::Ctx<'_>,
) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    if m.max(k).max(n) <= leaf {
        mul_add_leaf(a, b, &mut c, sign);
    } else if m >= n && m >= k {
        let (a0, a1) = a.split_rows(m / 2);
        let (c0, c1) = c.split_rows(m / 2);
        R::join(
            ctx,
            |ctx| rectmul::<R>(a0, b, c0, sign, leaf, ctx),
            |ctx| rectmul::<R>(a1, b, c1, sign, leaf, ctx),
        );
    } else if n >= k {
        let (b0, b1) = b.split_cols(n / 2);
        let (c0, c1) = c.split_cols(n / 2);
        R::join(
            ctx,
            |ctx| rectmul::<R>(a, b0, c0, sign, leaf, ctx),
            |ctx| rectmul::<R>(a, b1, c1, sign, leaf, ctx),
        );
    } else {
        let (a0, a1) = a.split_cols(k / 2);
        let (b0, b1) = b.split_rows(k / 2);
        rectmul::<R>(a0, b0, c.reborrow(), sign, leaf, ctx);
        rectmul::<R>(a1, b1, c, sign, leaf, ctx);
    }
}

/// [`rectmul`] in async form.
fn rectmul_async<'a, A: AsyncFork>(
    a: MatRef<'a>,
    b: MatRef<'a>,
    mut c: MatMut<'a>,
    sign: f64,
    leaf: usize,
) -> A::Boxed<'a, ()> {
    A::boxed_with(move || async move {
        let (m, k, n) = (a.rows, a.cols, b.cols);
        if m.max(k).max(n) <= leaf {
            mul_add_leaf(a, b, &mut c, sign);
        } else if m >= n && m >= k {
            let (a0, a1) = a.split_rows(m / 2);
            let (c0, c1) = c.split_rows(m / 2);
            A::join(
                rectmul_async::<A>(a0, b, c0, sign, leaf),
                rectmul_async::<A>(a1, b, c1, sign, leaf),
            )
            .await;
        } else if n >= k {
            let (b0, b1) = b.split_cols(n / 2);
            let (c0, c1) = c.split_cols(n / 2);
            A::join(
                rectmul_async::<A>(a, b0, c0, sign, leaf),
                rectmul_async::<A>(a, b1, c1, sign, leaf),
            )
            .await;
        } else {
            let (a0, a1) = a.split_cols(k / 2);
            let (b0, b1) = b.split_rows(k / 2);
            rectmul_async::<A>(a0, b0, c.reborrow(), sign, leaf).await;
            rectmul_async::<A>(a1, b1, c, sign, leaf).await;
        }
    })
}

/// `x + sign × y` (or `x` alone) into a fresh `h × h` buffer.
fn operand(x: MatRef<'_>, y: Option<(f64, MatRef<'_>)>) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.rows * x.cols);
    for r in 0..x.rows {
        match y {
            None => out.extend_from_slice(x.row(r)),
            Some((sign, y)) => out.extend(x.row(r).iter().zip(y.row(r)).map(|(p, q)| p + sign * q)),
        }
    }
    out
}

/// `out = (x0 ± x1)(y0 ± y1)`, one of Strassen's seven products.
type Sum<'a> = (MatRef<'a>, Option<(f64, MatRef<'a>)>);

fn product<R: ForkJoin>(
    x: Sum<'_>,
    y: Sum<'_>,
    out: &mut [f64],
    leaf: usize,
    ctx: &mut R::Ctx<'_>,
) {
    let h = x.0.rows;
    let (x, y) = (operand(x.0, x.1), operand(y.0, y.1));
    strassen::<R>(
        MatRef::new(&x, h, h),
        MatRef::new(&y, h, h),
        MatMut::new(out, h, h),
        leaf,
        ctx,
    );
}

/// [`product`] in async form.
fn product_async<'a, A: AsyncFork>(
    x: Sum<'a>,
    y: Sum<'a>,
    out: &'a mut [f64],
    leaf: usize,
) -> A::Boxed<'a, ()> {
    A::boxed_with(move || async move {
        let h = x.0.rows;
        let (x, y) = (operand(x.0, x.1), operand(y.0, y.1));
        strassen_async::<A>(
            MatRef::new(&x, h, h),
            MatRef::new(&y, h, h),
            MatMut::new(out, h, h),
            leaf,
        )
        .await;
    })
}

/// `c = a b` (overwrites `c`).
fn strassen<R: ForkJoin>(
    a: MatRef<'_>,
    b: MatRef<'_>,
    mut c: MatMut<'_>,
    leaf: usize,
    ctx: &mut R::Ctx<'_>,
) {
    let n = a.rows;
    if n <= leaf {
        for r in 0..n {
            c.row_mut(r).fill(0.0);
        }
        mul_add_leaf(a, b, &mut c, 1.0);
        return;
    }
    let h = n / 2;
    let [a00, a01, a10, a11] = a.quadrants();
    let [b00, b01, b10, b11] = b.quadrants();
    let mut m = vec![0.0; 7 * h * h];
    {
        let parts: Vec<&mut [f64]> = m.chunks_exact_mut(h * h).collect();
        let [m1, m2, m3, m4, m5, m6, m7]: [&mut [f64]; 7] =
            parts.try_into().expect("seven products");
        let (plus, minus) = (1.0, -1.0);
        R::join(
            ctx,
            |ctx| {
                join4::<R, _, _, _, _>(
                    ctx,
                    |ctx| {
                        product::<R>(
                            (a00, Some((plus, a11))),
                            (b00, Some((plus, b11))),
                            m1,
                            leaf,
                            ctx,
                        )
                    },
                    |ctx| product::<R>((a10, Some((plus, a11))), (b00, None), m2, leaf, ctx),
                    |ctx| product::<R>((a00, None), (b01, Some((minus, b11))), m3, leaf, ctx),
                    |ctx| product::<R>((a11, None), (b10, Some((minus, b00))), m4, leaf, ctx),
                )
            },
            |ctx| {
                R::join(
                    ctx,
                    |ctx| {
                        R::join(
                            ctx,
                            |ctx| {
                                product::<R>((a00, Some((plus, a01))), (b11, None), m5, leaf, ctx)
                            },
                            |ctx| {
                                product::<R>(
                                    (a10, Some((minus, a00))),
                                    (b00, Some((plus, b01))),
                                    m6,
                                    leaf,
                                    ctx,
                                )
                            },
                        )
                    },
                    |ctx| {
                        product::<R>(
                            (a01, Some((minus, a11))),
                            (b10, Some((plus, b11))),
                            m7,
                            leaf,
                            ctx,
                        )
                    },
                )
            },
        );
    }
    combine_products(&m, c);
}

/// Strassen's sums of the seven products `m` (each `h × h`) into the
/// quadrants of `c`.
#[inline(never)]
fn combine_products(m: &[f64], c: MatMut<'_>) {
    let h = c.rows / 2;
    let blocks: Vec<&[f64]> = m.chunks_exact(h * h).collect();
    let [m1, m2, m3, m4, m5, m6, m7]: [&[f64]; 7] = blocks.try_into().expect("seven products");
    let [mut c00, mut c01, mut c10, mut c11] = c.quadrants();
    for r in 0..h {
        let row = r * h..(r + 1) * h;
        let [m1, m2, m3, m4, m5, m6, m7] = [m1, m2, m3, m4, m5, m6, m7].map(|m| &m[row.clone()]);
        for (j, x) in c00.row_mut(r).iter_mut().enumerate() {
            *x = m1[j] + m4[j] - m5[j] + m7[j];
        }
        for (j, x) in c01.row_mut(r).iter_mut().enumerate() {
            *x = m3[j] + m5[j];
        }
        for (j, x) in c10.row_mut(r).iter_mut().enumerate() {
            *x = m2[j] + m4[j];
        }
        for (j, x) in c11.row_mut(r).iter_mut().enumerate() {
            *x = m1[j] - m2[j] + m3[j] + m6[j];
        }
    }
}

/// [`strassen`] in async form.
fn strassen_async<'a, A: AsyncFork>(
    a: MatRef<'a>,
    b: MatRef<'a>,
    mut c: MatMut<'a>,
    leaf: usize,
) -> A::Boxed<'a, ()> {
    A::boxed_with(move || async move {
        let n = a.rows;
        if n <= leaf {
            for r in 0..n {
                c.row_mut(r).fill(0.0);
            }
            mul_add_leaf(a, b, &mut c, 1.0);
            return;
        }
        let h = n / 2;
        let [a00, a01, a10, a11] = a.quadrants();
        let [b00, b01, b10, b11] = b.quadrants();
        let mut m = vec![0.0; 7 * h * h];
        {
            let parts: Vec<&mut [f64]> = m.chunks_exact_mut(h * h).collect();
            let [m1, m2, m3, m4, m5, m6, m7]: [&mut [f64]; 7] =
                parts.try_into().expect("seven products");
            let (plus, minus) = (1.0, -1.0);
            A::join(
                join4_async::<A, _, _, _, _>(
                    product_async::<A>(
                        (a00, Some((plus, a11))),
                        (b00, Some((plus, b11))),
                        m1,
                        leaf,
                    ),
                    product_async::<A>((a10, Some((plus, a11))), (b00, None), m2, leaf),
                    product_async::<A>((a00, None), (b01, Some((minus, b11))), m3, leaf),
                    product_async::<A>((a11, None), (b10, Some((minus, b00))), m4, leaf),
                ),
                A::join(
                    A::join(
                        product_async::<A>((a00, Some((plus, a01))), (b11, None), m5, leaf),
                        product_async::<A>(
                            (a10, Some((minus, a00))),
                            (b00, Some((plus, b01))),
                            m6,
                            leaf,
                        ),
                    ),
                    product_async::<A>(
                        (a01, Some((minus, a11))),
                        (b10, Some((plus, b11))),
                        m7,
                        leaf,
                    ),
                ),
            )
            .await;
        }
        combine_products(&m, c);
    })
}

/// In-place LU factorization without pivoting of a diagonally dominant
/// `n × n` matrix (`n` a power of two), recursive on quadrants:
/// factor `A00`, then solve for `U01` and `L10` in parallel, update
/// `A11 -= L10 U01`, factor `A11`.
pub struct Lu {
    pub n: usize,
    pub leaf: usize,
    a: Vec<f64>,
}

impl Lu {
    /// A random diagonally dominant matrix (seeded).
    pub fn random(n: usize, leaf: usize, seed: u64) -> Lu {
        assert!(n.is_power_of_two(), "lu's order must be a power of two");
        let mut a = random_matrix(n, n, seed);
        for i in 0..n {
            a[i * n + i] += n as f64;
        }
        Lu { n, leaf, a }
    }

    /// The input matrix.
    #[cfg(test)]
    pub fn input(&self) -> &[f64] {
        &self.a
    }
}

impl Kernel for Lu {
    type Scratch = Vec<f64>;

    fn scratch(&self) -> Vec<f64> {
        self.a.clone()
    }

    fn run<R: ForkJoin>(&self, a: &mut Vec<f64>, ctx: &mut R::Ctx<'_>) -> u64 {
        lu::<R>(MatMut::new(a, self.n, self.n), self.leaf, ctx);
        digest_f64(a)
    }

    fn run_async<'a, A: AsyncFork>(&'a self, a: &'a mut Vec<f64>) -> A::Boxed<'a, u64> {
        A::boxed_with(move || async move {
            lu_async::<A>(MatMut::new(a, self.n, self.n), self.leaf).await;
            digest_f64(a)
        })
    }
}

fn lu<R: ForkJoin>(a: MatMut<'_>, leaf: usize, ctx: &mut R::Ctx<'_>) {
    let n = a.rows;
    if n <= leaf {
        lu_leaf(a);
        return;
    }
    let [mut a00, mut a01, mut a10, a11] = a.quadrants();
    lu::<R>(a00.reborrow(), leaf, ctx);
    let (l00, u00) = (a00.rb(), a00.rb());
    R::join(
        ctx,
        |ctx| lower_solve::<R>(l00, a01.reborrow(), leaf, ctx),
        |ctx| upper_solve::<R>(u00, a10.reborrow(), leaf, ctx),
    );
    let mut a11 = a11;
    rectmul::<R>(a10.rb(), a01.rb(), a11.reborrow(), -1.0, leaf, ctx);
    lu::<R>(a11, leaf, ctx);
}

/// [`lu`] in async form.
fn lu_async<'a, A: AsyncFork>(a: MatMut<'a>, leaf: usize) -> A::Boxed<'a, ()> {
    A::boxed_with(move || async move {
        let n = a.rows;
        if n <= leaf {
            lu_leaf(a);
            return;
        }
        let [mut a00, mut a01, mut a10, a11] = a.quadrants();
        lu_async::<A>(a00.reborrow(), leaf).await;
        let (l00, u00) = (a00.rb(), a00.rb());
        A::join(
            lower_solve_async::<A>(l00, a01.reborrow(), leaf),
            upper_solve_async::<A>(u00, a10.reborrow(), leaf),
        )
        .await;
        let mut a11 = a11;
        rectmul_async::<A>(a10.rb(), a01.rb(), a11.reborrow(), -1.0, leaf).await;
        lu_async::<A>(a11, leaf).await;
    })
}

/// `b = L⁻¹ b`, with `L` the unit lower triangle of `l`.
fn lower_solve<R: ForkJoin>(l: MatRef<'_>, b: MatMut<'_>, leaf: usize, ctx: &mut R::Ctx<'_>) {
    let n = l.rows;
    if b.cols > leaf {
        let cols = b.cols;
        let (b0, b1) = b.split_cols(cols / 2);
        R::join(
            ctx,
            |ctx| lower_solve::<R>(l, b0, leaf, ctx),
            |ctx| lower_solve::<R>(l, b1, leaf, ctx),
        );
    } else if n <= leaf {
        lower_solve_leaf(l, b);
    } else {
        let [l00, _, l10, l11] = l.quadrants();
        let (mut b0, b1) = b.split_rows(n / 2);
        let mut b1 = b1;
        lower_solve::<R>(l00, b0.reborrow(), leaf, ctx);
        rectmul::<R>(l10, b0.rb(), b1.reborrow(), -1.0, leaf, ctx);
        lower_solve::<R>(l11, b1, leaf, ctx);
    }
}

/// [`lower_solve`] in async form.
fn lower_solve_async<'a, A: AsyncFork>(
    l: MatRef<'a>,
    b: MatMut<'a>,
    leaf: usize,
) -> A::Boxed<'a, ()> {
    A::boxed_with(move || async move {
        let n = l.rows;
        if b.cols > leaf {
            let cols = b.cols;
            let (b0, b1) = b.split_cols(cols / 2);
            A::join(
                lower_solve_async::<A>(l, b0, leaf),
                lower_solve_async::<A>(l, b1, leaf),
            )
            .await;
        } else if n <= leaf {
            lower_solve_leaf(l, b);
        } else {
            let [l00, _, l10, l11] = l.quadrants();
            let (mut b0, b1) = b.split_rows(n / 2);
            let mut b1 = b1;
            lower_solve_async::<A>(l00, b0.reborrow(), leaf).await;
            rectmul_async::<A>(l10, b0.rb(), b1.reborrow(), -1.0, leaf).await;
            lower_solve_async::<A>(l11, b1, leaf).await;
        }
    })
}

/// `b = b U⁻¹`, with `U` the upper triangle (with diagonal) of `u`.
fn upper_solve<R: ForkJoin>(u: MatRef<'_>, b: MatMut<'_>, leaf: usize, ctx: &mut R::Ctx<'_>) {
    let n = u.rows;
    if b.rows > leaf {
        let rows = b.rows;
        let (b0, b1) = b.split_rows(rows / 2);
        R::join(
            ctx,
            |ctx| upper_solve::<R>(u, b0, leaf, ctx),
            |ctx| upper_solve::<R>(u, b1, leaf, ctx),
        );
    } else if n <= leaf {
        upper_solve_leaf(u, b);
    } else {
        let [u00, u01, _, u11] = u.quadrants();
        let (mut b0, b1) = b.split_cols(n / 2);
        let mut b1 = b1;
        upper_solve::<R>(u00, b0.reborrow(), leaf, ctx);
        rectmul::<R>(b0.rb(), u01, b1.reborrow(), -1.0, leaf, ctx);
        upper_solve::<R>(u11, b1, leaf, ctx);
    }
}

/// [`upper_solve`] in async form.
fn upper_solve_async<'a, A: AsyncFork>(
    u: MatRef<'a>,
    b: MatMut<'a>,
    leaf: usize,
) -> A::Boxed<'a, ()> {
    A::boxed_with(move || async move {
        let n = u.rows;
        if b.rows > leaf {
            let rows = b.rows;
            let (b0, b1) = b.split_rows(rows / 2);
            A::join(
                upper_solve_async::<A>(u, b0, leaf),
                upper_solve_async::<A>(u, b1, leaf),
            )
            .await;
        } else if n <= leaf {
            upper_solve_leaf(u, b);
        } else {
            let [u00, u01, _, u11] = u.quadrants();
            let (mut b0, b1) = b.split_cols(n / 2);
            let mut b1 = b1;
            upper_solve_async::<A>(u00, b0.reborrow(), leaf).await;
            rectmul_async::<A>(b0.rb(), u01, b1.reborrow(), -1.0, leaf).await;
            upper_solve_async::<A>(u11, b1, leaf).await;
        }
    })
}

// The leaves are not generic and never inlined, so that every runtime runs
// the same machine code (see `cholesky.rs`).

/// Factors a leaf in place without pivoting.
#[inline(never)]
fn lu_leaf(mut a: MatMut<'_>) {
    let n = a.rows;
    for k in 0..n {
        for i in k + 1..n {
            let (pivot_row, row) = a.two_rows(k, i);
            row[k] /= pivot_row[k];
            let factor = row[k];
            for (x, &p) in row[k + 1..].iter_mut().zip(&pivot_row[k + 1..]) {
                *x -= factor * p;
            }
        }
    }
}

/// `b = L⁻¹ b` for a leaf `l`.
#[inline(never)]
fn lower_solve_leaf(l: MatRef<'_>, mut b: MatMut<'_>) {
    for i in 0..l.rows {
        for k in 0..i {
            let factor = l.row(i)[k];
            let (above, row) = b.two_rows(k, i);
            for (x, &y) in row.iter_mut().zip(above) {
                *x -= factor * y;
            }
        }
    }
}

/// `b = b U⁻¹` for a leaf `u`.
#[inline(never)]
fn upper_solve_leaf(u: MatRef<'_>, mut b: MatMut<'_>) {
    let n = u.rows;
    for r in 0..b.rows {
        let row = b.row_mut(r);
        for j in 0..n {
            let dot: f64 = (0..j).map(|k| row[k] * u.row(k)[j]).sum();
            row[j] = (row[j] - dot) / u.row(j)[j];
        }
    }
}

//! Sparse Cholesky factorization on a quad-tree (the Cilk benchmark):
//! the matrix is a tree of quadrants in which an all-zero quadrant is a
//! leaf without data, so the work follows the nonzeros; fill-in creates
//! quadrants as the factorization needs them. Only the lower triangle is
//! stored and factored: `A = L Lᵀ`.

use super::{Kernel, SplitMix, digest_f64};
use crate::forkjoin::asyncfork::AsyncFork;
use crate::forkjoin::runtime::ForkJoin;

/// A square quadrant of the matrix.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// All zeros.
    Zero,
    /// A dense `leaf × leaf` block, row-major.
    Leaf(Box<[f64]>),
    /// Four quadrants: `[top left, top right, bottom left, bottom right]`.
    Node(Box<[Block; 4]>),
}

/// Factors the lower triangle of a sparse symmetric positive definite
/// `n × n` matrix (a copy, made outside the timed region).
pub struct Cholesky {
    pub n: usize,
    pub leaf: usize,
    matrix: Block,
}

impl Cholesky {
    /// A random sparse matrix with `nonzeros` off-diagonal entries below
    /// the diagonal (and their mirror images), made diagonally dominant so
    /// that it is positive definite. `n / leaf` must be a power of two.
    pub fn random(n: usize, leaf: usize, nonzeros: usize, seed: u64) -> Cholesky {
        assert!(
            n.is_multiple_of(leaf) && (n / leaf).is_power_of_two(),
            "n / leaf must be a power of two"
        );
        let entries = Cholesky::entries(n, nonzeros, seed);
        let matrix = build(&entries, n, leaf, 0, 0);
        Cholesky { n, leaf, matrix }
    }

    /// The lower-triangle entries `(row, column, value)`, diagonal included.
    fn entries(n: usize, nonzeros: usize, seed: u64) -> Vec<(usize, usize, f64)> {
        let mut rng = SplitMix(seed);
        let mut entries = Vec::with_capacity(nonzeros + n);
        let mut row_sums = vec![0.0; n];
        for _ in 0..nonzeros {
            let (a, b) = (
                (rng.next() % n as u64) as usize,
                (rng.next() % n as u64) as usize,
            );
            if a == b {
                continue;
            }
            let value = 2.0 * rng.unit() - 1.0;
            entries.push((a.max(b), a.min(b), value));
            row_sums[a] += value.abs();
            row_sums[b] += value.abs();
        }
        entries.extend(
            row_sums
                .iter()
                .enumerate()
                .map(|(i, sum)| (i, i, sum + 1.0)),
        );
        entries
    }

    /// The input as a dense lower triangle (tests).
    #[cfg(test)]
    pub fn dense_input(&self) -> Vec<f64> {
        let mut dense = vec![0.0; self.n * self.n];
        to_dense(&self.matrix, self.n, self.leaf, 0, 0, &mut dense, self.n);
        dense
    }

    /// Runs the serial factorization and returns the dense factor (tests).
    #[cfg(test)]
    pub fn dense_factor(&self) -> Vec<f64> {
        let mut block = self.matrix.clone();
        cholesky::<crate::forkjoin::runtime::Serial>(&mut block, self.n, self.leaf, &mut ());
        let mut dense = vec![0.0; self.n * self.n];
        to_dense(&block, self.n, self.leaf, 0, 0, &mut dense, self.n);
        dense
    }
}

/// The block of `size` at (`row`, `column`) holding `entries`.
fn build(
    entries: &[(usize, usize, f64)],
    size: usize,
    leaf: usize,
    row: usize,
    column: usize,
) -> Block {
    if entries.is_empty() {
        return Block::Zero;
    }
    if size == leaf {
        let mut data = vec![0.0; leaf * leaf].into_boxed_slice();
        for &(r, c, value) in entries {
            data[(r - row) * leaf + (c - column)] += value;
        }
        return Block::Leaf(data);
    }
    let half = size / 2;
    let quadrant = |q: usize| {
        let (r0, c0) = (row + (q / 2) * half, column + (q % 2) * half);
        let inside: Vec<_> = entries
            .iter()
            .copied()
            .filter(|&(r, c, _)| (r0..r0 + half).contains(&r) && (c0..c0 + half).contains(&c))
            .collect();
        build(&inside, half, leaf, r0, c0)
    };
    Block::Node(Box::new([0, 1, 2, 3].map(quadrant)))
}

#[cfg(test)]
fn to_dense(
    block: &Block,
    size: usize,
    leaf: usize,
    row: usize,
    column: usize,
    out: &mut [f64],
    n: usize,
) {
    match block {
        Block::Zero => {}
        Block::Leaf(data) => {
            for r in 0..leaf {
                out[(row + r) * n + column..][..leaf].copy_from_slice(&data[r * leaf..][..leaf]);
            }
        }
        Block::Node(children) => {
            let half = size / 2;
            for (q, child) in children.iter().enumerate() {
                to_dense(
                    child,
                    half,
                    leaf,
                    row + (q / 2) * half,
                    column + (q % 2) * half,
                    out,
                    n,
                );
            }
        }
    }
}

impl Kernel for Cholesky {
    type Scratch = Block;

    fn scratch(&self) -> Block {
        self.matrix.clone()
    }

    fn run<R: ForkJoin>(&self, block: &mut Block, ctx: &mut R::Ctx<'_>) -> u64 {
        cholesky::<R>(block, self.n, self.leaf, ctx);
        let mut values = Vec::new();
        flatten(block, &mut values);
        digest_f64(&values)
    }

    fn run_async<'a, A: AsyncFork>(&'a self, block: &'a mut Block) -> A::Boxed<'a, u64> {
        A::boxed_with(move || async move {
            cholesky_async::<A>(block, self.n, self.leaf).await;
            let mut values = Vec::new();
            flatten(block, &mut values);
            digest_f64(&values)
        })
    }
}

/// The values of every leaf in tree order, a NaN per zero block.
fn flatten(block: &Block, out: &mut Vec<f64>) {
    match block {
        Block::Zero => out.push(f64::NAN),
        Block::Leaf(data) => out.extend_from_slice(data),
        Block::Node(children) => children.iter().for_each(|child| flatten(child, out)),
    }
}

/// `a = L` with `L Lᵀ = a` (lower triangles; `a` is a diagonal block).
fn cholesky<R: ForkJoin>(a: &mut Block, size: usize, leaf: usize, ctx: &mut R::Ctx<'_>) {
    match a {
        Block::Zero => panic!("a diagonal block of a positive definite matrix is not zero"),
        Block::Leaf(data) => factor_leaf(data, leaf),
        Block::Node(children) => {
            let half = size / 2;
            let [a00, _, a10, a11] = &mut **children;
            cholesky::<R>(a00, half, leaf, ctx);
            back_substitute::<R>(a10, a00, half, leaf, ctx);
            multiply_subtract::<R>(a11, a10, a10, true, half, leaf, ctx);
            cholesky::<R>(a11, half, leaf, ctx);
        }
    }
}

/// [`cholesky`] in async form.
fn cholesky_async<A: AsyncFork>(a: &mut Block, size: usize, leaf: usize) -> A::Boxed<'_, ()> {
    A::boxed_with(move || async move {
        match a {
            Block::Zero => panic!("a diagonal block of a positive definite matrix is not zero"),
            Block::Leaf(data) => factor_leaf(data, leaf),
            Block::Node(children) => {
                let half = size / 2;
                let [a00, _, a10, a11] = &mut **children;
                cholesky_async::<A>(a00, half, leaf).await;
                back_substitute_async::<A>(a10, a00, half, leaf).await;
                multiply_subtract_async::<A>(a11, a10, a10, true, half, leaf).await;
                cholesky_async::<A>(a11, half, leaf).await;
            }
        }
    })
}

/// `x = x L⁻ᵀ`, with `L` the lower triangle of the diagonal block `l`.
fn back_substitute<R: ForkJoin>(
    x: &mut Block,
    l: &Block,
    size: usize,
    leaf: usize,
    ctx: &mut R::Ctx<'_>,
) {
    match (x, l) {
        (Block::Zero, _) => {}
        (Block::Leaf(x), Block::Leaf(l)) => back_substitute_leaf(x, l, leaf),
        (Block::Node(x), Block::Node(l)) => {
            let half = size / 2;
            let [x00, x01, x10, x11] = &mut **x;
            let [l00, _, l10, l11] = &**l;
            // Each block row of x independently: x_i0 L00ᵀ = x_i0,
            // x_i1 -= x_i0 L10ᵀ, x_i1 L11ᵀ = x_i1.
            let row = |left: &mut Block, right: &mut Block, ctx: &mut R::Ctx<'_>| {
                back_substitute::<R>(left, l00, half, leaf, ctx);
                multiply_subtract::<R>(right, left, l10, false, half, leaf, ctx);
                back_substitute::<R>(right, l11, half, leaf, ctx);
            };
            R::join(ctx, |ctx| row(x00, x01, ctx), |ctx| row(x10, x11, ctx));
        }
        _ => panic!("the diagonal block of a positive definite matrix is not zero"),
    }
}

/// [`back_substitute`] in async form.
fn back_substitute_async<'a, A: AsyncFork>(
    x: &'a mut Block,
    l: &'a Block,
    size: usize,
    leaf: usize,
) -> A::Boxed<'a, ()> {
    A::boxed_with(move || async move {
        match (x, l) {
            (Block::Zero, _) => {}
            (Block::Leaf(x), Block::Leaf(l)) => back_substitute_leaf(x, l, leaf),
            (Block::Node(x), Block::Node(l)) => {
                let half = size / 2;
                let [x00, x01, x10, x11] = &mut **x;
                let [l00, _, l10, l11] = &**l;
                let row = |left: &'a mut Block, right: &'a mut Block| async move {
                    back_substitute_async::<A>(left, l00, half, leaf).await;
                    multiply_subtract_async::<A>(right, left, l10, false, half, leaf).await;
                    back_substitute_async::<A>(right, l11, half, leaf).await;
                };
                A::join(row(x00, x01), row(x10, x11)).await;
            }
            _ => panic!("the diagonal block of a positive definite matrix is not zero"),
        }
    })
}

/// `c -= a bᵀ`; with `lower`, `c` is a diagonal block and only its lower
/// triangle is computed. A zero `c` that receives a product is created
/// (fill-in).
fn multiply_subtract<R: ForkJoin>(
    c: &mut Block,
    a: &Block,
    b: &Block,
    lower: bool,
    size: usize,
    leaf: usize,
    ctx: &mut R::Ctx<'_>,
) {
    if matches!(a, Block::Zero) || matches!(b, Block::Zero) {
        return;
    }
    if matches!(c, Block::Zero) {
        *c = fill_in(size, leaf);
    }
    match (c, a, b) {
        (Block::Leaf(c), Block::Leaf(a), Block::Leaf(b)) => {
            multiply_subtract_leaf(c, a, b, lower, leaf)
        }
        (Block::Node(c), Block::Node(a), Block::Node(b)) => {
            let half = size / 2;
            let [c00, c01, c10, c11] = &mut **c;
            // c_ij -= a_i0 b_j0ᵀ + a_i1 b_j1ᵀ, the two terms in order.
            let quadrant =
                |c: &mut Block, i: usize, j: usize, lower: bool, ctx: &mut R::Ctx<'_>| {
                    multiply_subtract::<R>(c, &a[2 * i], &b[2 * j], lower, half, leaf, ctx);
                    multiply_subtract::<R>(c, &a[2 * i + 1], &b[2 * j + 1], lower, half, leaf, ctx);
                };
            R::join(
                ctx,
                |ctx| {
                    R::join(
                        ctx,
                        |ctx| quadrant(c00, 0, 0, lower, ctx),
                        |ctx| quadrant(c10, 1, 0, false, ctx),
                    )
                },
                |ctx| {
                    R::join(
                        ctx,
                        |ctx| {
                            if !lower {
                                quadrant(c01, 0, 1, false, ctx);
                            }
                        },
                        |ctx| quadrant(c11, 1, 1, lower, ctx),
                    )
                },
            );
        }
        _ => unreachable!("blocks of the same size have the same kind"),
    }
}

/// [`multiply_subtract`] in async form.
fn multiply_subtract_async<'a, A: AsyncFork>(
    c: &'a mut Block,
    a: &'a Block,
    b: &'a Block,
    lower: bool,
    size: usize,
    leaf: usize,
) -> A::Boxed<'a, ()> {
    A::boxed_with(move || async move {
        if matches!(a, Block::Zero) || matches!(b, Block::Zero) {
            return;
        }
        if matches!(c, Block::Zero) {
            *c = fill_in(size, leaf);
        }
        match (c, a, b) {
            (Block::Leaf(c), Block::Leaf(a), Block::Leaf(b)) => {
                multiply_subtract_leaf(c, a, b, lower, leaf)
            }
            (Block::Node(c), Block::Node(a), Block::Node(b)) => {
                let half = size / 2;
                let [c00, c01, c10, c11] = &mut **c;
                let quadrant = |c: &'a mut Block, i: usize, j: usize, lower: bool| async move {
                    multiply_subtract_async::<A>(c, &a[2 * i], &b[2 * j], lower, half, leaf).await;
                    multiply_subtract_async::<A>(
                        c,
                        &a[2 * i + 1],
                        &b[2 * j + 1],
                        lower,
                        half,
                        leaf,
                    )
                    .await;
                };
                A::join(
                    A::join(quadrant(c00, 0, 0, lower), quadrant(c10, 1, 0, false)),
                    A::join(
                        async {
                            if !lower {
                                quadrant(c01, 0, 1, false).await;
                            }
                        },
                        quadrant(c11, 1, 1, lower),
                    ),
                )
                .await;
            }
            _ => unreachable!("blocks of the same size have the same kind"),
        }
    })
}

/// A zero block of `size` about to receive a product (fill-in).
fn fill_in(size: usize, leaf: usize) -> Block {
    if size == leaf {
        Block::Leaf(vec![0.0; leaf * leaf].into_boxed_slice())
    } else {
        Block::Node(Box::new([
            Block::Zero,
            Block::Zero,
            Block::Zero,
            Block::Zero,
        ]))
    }
}

// The leaves are not generic and never inlined, so that every runtime runs
// the same machine code: inlined into each runtime's instance of the
// recursion, they were compiled differently enough to move one-thread
// times by 15% (perf: 91% of cholesky's samples are in the leaf product).

/// Factors a dense leaf in place: its lower triangle becomes `L`.
#[inline(never)]
fn factor_leaf(data: &mut [f64], leaf: usize) {
    for j in 0..leaf {
        let row_j = &mut data[j * leaf..][..leaf];
        row_j[j] = (row_j[j] - row_j[..j].iter().map(|x| x * x).sum::<f64>()).sqrt();
        for i in j + 1..leaf {
            let (upper, lower) = data.split_at_mut(i * leaf);
            let (row_j, row_i) = (&upper[j * leaf..][..leaf], &mut lower[..leaf]);
            let dot: f64 = row_i[..j].iter().zip(&row_j[..j]).map(|(x, y)| x * y).sum();
            row_i[j] = (row_i[j] - dot) / row_j[j];
        }
    }
}

/// `x = x L⁻ᵀ` on dense leaves.
#[inline(never)]
fn back_substitute_leaf(x: &mut [f64], l: &[f64], leaf: usize) {
    for row in x.chunks_exact_mut(leaf) {
        for j in 0..leaf {
            let l_row = &l[j * leaf..][..leaf];
            let dot: f64 = row[..j].iter().zip(&l_row[..j]).map(|(a, b)| a * b).sum();
            row[j] = (row[j] - dot) / l_row[j];
        }
    }
}

/// `c -= a bᵀ` on dense leaves (only the lower triangle with `lower`).
#[inline(never)]
fn multiply_subtract_leaf(c: &mut [f64], a: &[f64], b: &[f64], lower: bool, leaf: usize) {
    for i in 0..leaf {
        let a_row = &a[i * leaf..][..leaf];
        let columns = if lower { i + 1 } else { leaf };
        for j in 0..columns {
            let b_row = &b[j * leaf..][..leaf];
            let dot: f64 = a_row.iter().zip(b_row).map(|(x, y)| x * y).sum();
            c[i * leaf + j] -= dot;
        }
    }
}

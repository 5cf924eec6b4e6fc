//! Jacobi heat diffusion (the Cilk benchmark): a grid of `rows × columns`
//! cells, `steps` time steps, every step computing each interior cell from
//! its four neighbours in the previous grid. Rows are split in halves with
//! joins down to blocks of `leaf_rows`; the boundary stays fixed.

use super::{Kernel, digest_f64};
use crate::forkjoin::asyncfork::AsyncFork;
use crate::forkjoin::runtime::ForkJoin;

/// The diffusion problem.
pub struct Heat {
    pub rows: usize,
    pub columns: usize,
    pub steps: usize,
    pub leaf_rows: usize,
}

/// The diffusion coefficient times the time step (stable below 0.25).
const ALPHA: f64 = 0.2;

impl Heat {
    /// The initial grid: hot left and top edges, a hot square inside.
    fn initial(&self) -> Vec<f64> {
        let mut grid = vec![0.0; self.rows * self.columns];
        for (index, cell) in grid.iter_mut().enumerate() {
            let (row, column) = (index / self.columns, index % self.columns);
            if row == 0 || column == 0 {
                *cell = 100.0;
            } else if (self.rows / 4..self.rows / 2).contains(&row)
                && (self.columns / 4..self.columns / 2).contains(&column)
            {
                *cell = 50.0;
            }
        }
        grid
    }
}

impl Kernel for Heat {
    /// The two grids (current and next).
    type Scratch = (Vec<f64>, Vec<f64>);

    fn scratch(&self) -> (Vec<f64>, Vec<f64>) {
        let grid = self.initial();
        (grid.clone(), grid)
    }

    fn run<R: ForkJoin>(&self, grids: &mut Self::Scratch, ctx: &mut R::Ctx<'_>) -> u64 {
        let (current, next) = grids;
        for _ in 0..self.steps {
            let interior = &mut next[self.columns..(self.rows - 1) * self.columns];
            step::<R>(current, interior, 1, self, ctx);
            std::mem::swap(current, next);
        }
        digest_f64(current)
    }

    fn run_async<'a, A: AsyncFork>(&'a self, grids: &'a mut Self::Scratch) -> A::Boxed<'a, u64> {
        A::boxed_with(move || async move {
            let (current, next) = grids;
            for _ in 0..self.steps {
                let interior = &mut next[self.columns..(self.rows - 1) * self.columns];
                step_async::<A>(current, interior, 1, self).await;
                std::mem::swap(current, next);
            }
            digest_f64(current)
        })
    }
}

/// Computes rows `first..first + out.len() / columns` of the next grid
/// into `out` from `grid`.
fn step<R: ForkJoin>(
    grid: &[f64],
    out: &mut [f64],
    first: usize,
    heat: &Heat,
    ctx: &mut R::Ctx<'_>,
) {
    let columns = heat.columns;
    let rows = out.len() / columns;
    if rows > heat.leaf_rows {
        let (top, bottom) = out.split_at_mut(rows / 2 * columns);
        R::join(
            ctx,
            |ctx| step::<R>(grid, top, first, heat, ctx),
            |ctx| step::<R>(grid, bottom, first + rows / 2, heat, ctx),
        );
        return;
    }
    step_leaf(grid, out, first, columns);
}

/// [`step`] in async form.
fn step_async<'a, A: AsyncFork>(
    grid: &'a [f64],
    out: &'a mut [f64],
    first: usize,
    heat: &'a Heat,
) -> A::Boxed<'a, ()> {
    A::boxed_with(move || async move {
        let columns = heat.columns;
        let rows = out.len() / columns;
        if rows > heat.leaf_rows {
            let (top, bottom) = out.split_at_mut(rows / 2 * columns);
            A::join(
                step_async::<A>(grid, top, first, heat),
                step_async::<A>(grid, bottom, first + rows / 2, heat),
            )
            .await;
            return;
        }
        step_leaf(grid, out, first, columns);
    })
}

/// The serial leaf of [`step`]; not generic and never inlined, so that
/// every runtime runs the same machine code (see `cholesky.rs`).
#[inline(never)]
fn step_leaf(grid: &[f64], out: &mut [f64], first: usize, columns: usize) {
    for (r, out_row) in out.chunks_exact_mut(columns).enumerate() {
        let row = first + r;
        let above = &grid[(row - 1) * columns..row * columns];
        let here = &grid[row * columns..(row + 1) * columns];
        let below = &grid[(row + 1) * columns..(row + 2) * columns];
        out_row[0] = here[0];
        out_row[columns - 1] = here[columns - 1];
        for c in 1..columns - 1 {
            out_row[c] =
                here[c] + ALPHA * (above[c] + below[c] + here[c - 1] + here[c + 1] - 4.0 * here[c]);
        }
    }
}

//! Strided views of row-major `f64` matrices, split into disjoint parts
//! for the dense matrix kernels (matmul, rectmul, strassen, lu).
//!
//! A view is a pointer, a shape and a row stride. The invariant every
//! method keeps: each element `(r, c)` with `r < rows` and `c < cols`, at
//! `ptr + r * stride + c`, lies inside the slice the view was made from,
//! and for [`MatMut`] no other live view reaches it. Splitting consumes a
//! `MatMut` and returns views of disjoint rows or columns, so the
//! exclusive views of a matrix never overlap, as with `split_at_mut`.

use std::marker::PhantomData;

/// A shared view of a matrix, like `&[f64]`.
#[derive(Clone, Copy)]
pub struct MatRef<'a> {
    ptr: *const f64,
    pub rows: usize,
    pub cols: usize,
    stride: usize,
    _data: PhantomData<&'a [f64]>,
}

// SAFETY: a `MatRef` only reads its elements, like the `&[f64]` it was
// made from, which is `Send` and `Sync`.
unsafe impl Send for MatRef<'_> {}
// SAFETY: as above.
unsafe impl Sync for MatRef<'_> {}

/// An exclusive view of a matrix, like `&mut [f64]`.
pub struct MatMut<'a> {
    ptr: *mut f64,
    pub rows: usize,
    pub cols: usize,
    stride: usize,
    _data: PhantomData<&'a mut [f64]>,
}

// SAFETY: a `MatMut` is the only view of its elements (the module
// invariant), like the `&mut [f64]` it was made from, which is `Send`.
unsafe impl Send for MatMut<'_> {}

impl<'a> MatRef<'a> {
    /// Views `data` as a `rows × cols` row-major matrix.
    pub fn new(data: &'a [f64], rows: usize, cols: usize) -> MatRef<'a> {
        assert_eq!(data.len(), rows * cols, "the data is not rows × cols");
        MatRef {
            ptr: data.as_ptr(),
            rows,
            cols,
            stride: cols,
            _data: PhantomData,
        }
    }

    /// Row `r`.
    #[inline]
    pub fn row(&self, r: usize) -> &'a [f64] {
        assert!(r < self.rows, "row {r} of {}", self.rows);
        // SAFETY: row `r < rows` spans `ptr + r * stride ..+ cols`, inside
        // the borrowed data (module invariant), which lives for `'a`.
        unsafe { std::slice::from_raw_parts(self.ptr.add(r * self.stride), self.cols) }
    }

    /// Rows `..at` and `at..`.
    pub fn split_rows(self, at: usize) -> (MatRef<'a>, MatRef<'a>) {
        assert!(at <= self.rows);
        let bottom = MatRef {
            // Wrapping: with `at == rows` the pointer may pass the end of
            // the data; a view without rows never reads it.
            ptr: self.ptr.wrapping_add(at * self.stride),
            rows: self.rows - at,
            ..self
        };
        (MatRef { rows: at, ..self }, bottom)
    }

    /// Columns `..at` and `at..`.
    pub fn split_cols(self, at: usize) -> (MatRef<'a>, MatRef<'a>) {
        assert!(at <= self.cols);
        let right = MatRef {
            ptr: self.ptr.wrapping_add(at),
            cols: self.cols - at,
            ..self
        };
        (MatRef { cols: at, ..self }, right)
    }

    /// The four quadrants, split at half the rows and half the columns:
    /// `[top left, top right, bottom left, bottom right]`.
    pub fn quadrants(self) -> [MatRef<'a>; 4] {
        let (top, bottom) = self.split_rows(self.rows / 2);
        let (q00, q01) = top.split_cols(self.cols / 2);
        let (q10, q11) = bottom.split_cols(self.cols / 2);
        [q00, q01, q10, q11]
    }
}

impl<'a> MatMut<'a> {
    /// Views `data` as a `rows × cols` row-major matrix.
    pub fn new(data: &'a mut [f64], rows: usize, cols: usize) -> MatMut<'a> {
        assert_eq!(data.len(), rows * cols, "the data is not rows × cols");
        MatMut {
            ptr: data.as_mut_ptr(),
            rows,
            cols,
            stride: cols,
            _data: PhantomData,
        }
    }

    /// A shared view of the same elements, for as long as `self` is borrowed.
    pub fn rb(&self) -> MatRef<'_> {
        MatRef {
            ptr: self.ptr,
            rows: self.rows,
            cols: self.cols,
            stride: self.stride,
            _data: PhantomData,
        }
    }

    /// A shorter-lived exclusive view of the same elements.
    pub fn reborrow(&mut self) -> MatMut<'_> {
        MatMut {
            _data: PhantomData,
            ..*self
        }
    }

    /// Row `r`.
    #[inline]
    pub fn row_mut(&mut self, r: usize) -> &mut [f64] {
        assert!(r < self.rows, "row {r} of {}", self.rows);
        // SAFETY: row `r < rows` lies inside the borrowed data and only
        // this view reaches it (module invariant); `&mut self` keeps the
        // row the only live reference for its lifetime.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(r * self.stride), self.cols) }
    }

    /// Row `above` to read and row `below` to write, `above < below`.
    #[inline]
    pub fn two_rows(&mut self, above: usize, below: usize) -> (&[f64], &mut [f64]) {
        assert!(
            above < below && below < self.rows,
            "rows {above}, {below} of {}",
            self.rows
        );
        // SAFETY: both rows lie inside the borrowed data (module
        // invariant) and are different rows, so the shared and the
        // exclusive slice do not overlap.
        unsafe {
            (
                std::slice::from_raw_parts(self.ptr.add(above * self.stride), self.cols),
                std::slice::from_raw_parts_mut(self.ptr.add(below * self.stride), self.cols),
            )
        }
    }

    /// Rows `..at` and `at..`.
    pub fn split_rows(self, at: usize) -> (MatMut<'a>, MatMut<'a>) {
        assert!(at <= self.rows);
        let bottom = MatMut {
            // Wrapping: see `MatRef::split_rows`.
            ptr: self.ptr.wrapping_add(at * self.stride),
            rows: self.rows - at,
            ..self
        };
        (MatMut { rows: at, ..self }, bottom)
    }

    /// Columns `..at` and `at..`.
    pub fn split_cols(self, at: usize) -> (MatMut<'a>, MatMut<'a>) {
        assert!(at <= self.cols);
        let right = MatMut {
            ptr: self.ptr.wrapping_add(at),
            cols: self.cols - at,
            ..self
        };
        (MatMut { cols: at, ..self }, right)
    }

    /// The four quadrants, as [`MatRef::quadrants`].
    pub fn quadrants(self) -> [MatMut<'a>; 4] {
        let (rows, cols) = (self.rows, self.cols);
        let (top, bottom) = self.split_rows(rows / 2);
        let (q00, q01) = top.split_cols(cols / 2);
        let (q10, q11) = bottom.split_cols(cols / 2);
        [q00, q01, q10, q11]
    }
}

/// `c += sign × a b`, the serial leaf of every multiplication (i-k-j
/// order, so the inner loop runs along rows and vectorizes).
#[inline(never)]
pub fn mul_add_leaf(a: MatRef<'_>, b: MatRef<'_>, c: &mut MatMut<'_>, sign: f64) {
    debug_assert!(a.cols == b.rows && c.rows == a.rows && c.cols == b.cols);
    for i in 0..a.rows {
        let a_row = a.row(i);
        let c_row = c.row_mut(i);
        for (k, &a_ik) in a_row.iter().enumerate() {
            let factor = sign * a_ik;
            for (c_ij, &b_kj) in c_row.iter_mut().zip(b.row(k)) {
                *c_ij += factor * b_kj;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quadrants_are_disjoint_and_cover_the_matrix() {
        let mut data: Vec<f64> = (0..30).map(f64::from).collect();
        let [mut q00, mut q01, mut q10, mut q11] = MatMut::new(&mut data, 5, 6).quadrants();
        assert_eq!((q00.rows, q00.cols, q11.rows, q11.cols), (2, 3, 3, 3));
        for (mark, q) in [&mut q00, &mut q01, &mut q10, &mut q11]
            .into_iter()
            .enumerate()
        {
            for r in 0..q.rows {
                for x in q.row_mut(r) {
                    *x = mark as f64;
                }
            }
        }
        let expected = [
            0., 0., 0., 1., 1., 1., //
            0., 0., 0., 1., 1., 1., //
            2., 2., 2., 3., 3., 3., //
            2., 2., 2., 3., 3., 3., //
            2., 2., 2., 3., 3., 3.,
        ];
        assert_eq!(data, expected);
    }

    #[test]
    fn leaf_multiplication_matches_the_definition() {
        let a: Vec<f64> = (0..6).map(f64::from).collect(); // 2 × 3
        let b: Vec<f64> = (0..12).map(|x| f64::from(x) - 3.0).collect(); // 3 × 4
        let mut c = vec![1.0; 8];
        mul_add_leaf(
            MatRef::new(&a, 2, 3),
            MatRef::new(&b, 3, 4),
            &mut MatMut::new(&mut c, 2, 4),
            -1.0,
        );
        for i in 0..2 {
            for j in 0..4 {
                let product: f64 = (0..3).map(|k| a[i * 3 + k] * b[k * 4 + j]).sum();
                assert_eq!(c[i * 4 + j], 1.0 - product);
            }
        }
    }
}

//! Parallel quicksort (the Cilk benchmark): partition around a
//! median-of-three pivot, sort both sides in parallel, insertion sort
//! below a cut-off.

use super::{Kernel, SplitMix, digest_u64};
use crate::forkjoin::asyncfork::AsyncFork;
use crate::forkjoin::runtime::ForkJoin;

/// Sorts a copy of `values` (the copy is made outside the timed region).
pub struct Quicksort {
    pub values: Vec<u64>,
}

/// Below this many elements, insertion sort.
const CUT_OFF: usize = 32;

impl Quicksort {
    /// `len` random values (seeded).
    pub fn random(len: usize, seed: u64) -> Quicksort {
        let mut rng = SplitMix(seed);
        Quicksort {
            values: (0..len).map(|_| rng.next()).collect(),
        }
    }
}

impl Kernel for Quicksort {
    type Scratch = Vec<u64>;

    fn scratch(&self) -> Vec<u64> {
        self.values.clone()
    }

    fn run<R: ForkJoin>(&self, values: &mut Vec<u64>, ctx: &mut R::Ctx<'_>) -> u64 {
        quicksort::<R>(values, ctx);
        digest_u64(values)
    }

    fn run_async<'a, A: AsyncFork>(&'a self, values: &'a mut Vec<u64>) -> A::Boxed<'a, u64> {
        A::boxed_with(move || async move {
            quicksort_async::<A>(values).await;
            digest_u64(values)
        })
    }
}

fn quicksort_async<A: AsyncFork>(values: &mut [u64]) -> A::Boxed<'_, ()> {
    A::boxed_with(move || async move {
        if values.len() <= CUT_OFF {
            insertion_sort(values);
            return;
        }
        let split = partition(values);
        let (low, high) = values.split_at_mut(split);
        A::join(quicksort_async::<A>(low), quicksort_async::<A>(high)).await;
    })
}

fn quicksort<R: ForkJoin>(values: &mut [u64], ctx: &mut R::Ctx<'_>) {
    if values.len() <= CUT_OFF {
        insertion_sort(values);
        return;
    }
    let split = partition(values);
    let (low, high) = values.split_at_mut(split);
    R::join(
        ctx,
        |ctx| quicksort::<R>(low, ctx),
        |ctx| quicksort::<R>(high, ctx),
    );
}

#[inline(never)]
fn insertion_sort(values: &mut [u64]) {
    for i in 1..values.len() {
        let mut j = i;
        while j > 0 && values[j - 1] > values[j] {
            values.swap(j - 1, j);
            j -= 1;
        }
    }
}

/// Hoare partition around the median of the first, middle and last
/// element; returns `k` with `values[..k] <= pivot <= values[k..]` and
/// both sides non-empty (`values` has more than two elements: the median
/// of three guarantees an element on each side, which also stops both
/// scans without bounds checks failing).
#[inline(never)]
fn partition(values: &mut [u64]) -> usize {
    let last = values.len() - 1;
    let middle = last / 2;
    let (a, b, c) = (values[0], values[middle], values[last]);
    let pivot = a.max(b).min(a.min(b).max(c));
    let (mut i, mut j) = (0, last);
    loop {
        while values[i] < pivot {
            i += 1;
        }
        while values[j] > pivot {
            j -= 1;
        }
        if i >= j {
            return j + 1;
        }
        values.swap(i, j);
        i += 1;
        j -= 1;
    }
}

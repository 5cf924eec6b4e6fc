//! Parallel quicksort with `bwos::join`: each partition sorts its two
//! halves in parallel; an idle worker steals the second half.
//!
//! ```text
//! cargo run --release -p bwos --example join -- 1000000
//! ```

fn quicksort<T: Ord + Send>(values: &mut [T]) {
    if values.len() <= 2048 {
        values.sort_unstable();
        return;
    }
    let pivot = partition(values);
    let (left, right) = values.split_at_mut(pivot);
    bwos::join(|| quicksort(left), || quicksort(&mut right[1..]));
}

/// Lomuto partition around the middle element; returns the pivot's index.
fn partition<T: Ord>(values: &mut [T]) -> usize {
    let last = values.len() - 1;
    values.swap(values.len() / 2, last);
    let mut store = 0;
    for i in 0..last {
        if values[i] <= values[last] {
            values.swap(i, store);
            store += 1;
        }
    }
    values.swap(store, last);
    store
}

fn main() {
    let len: usize = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(1_000_000);
    // A cheap pseudo-random sequence (xorshift), the same on every run.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut values: Vec<u64> = (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        })
        .collect();
    let start = std::time::Instant::now();
    quicksort(&mut values);
    let elapsed = start.elapsed();
    assert!(values.windows(2).all(|pair| pair[0] <= pair[1]));
    println!(
        "sorted {len} numbers on {} threads in {elapsed:?}",
        bwos::current_num_threads()
    );
}

//! `bwos::fork`: fork/join over futures (continuation stealing, after
//! Nowa). A recursive sum whose halves are futures: `fork::join` polls the
//! first at once and leaves the second for a thief; `fork::boxed_with`
//! takes each recursive call's frame from a per-worker cache; `fork::ready`
//! returns a base case without any frame. Awaiting inside works: here a
//! timer between the two levels.
//!
//! ```text
//! cargo run --release -p bwos --example fork
//! ```

use std::time::Duration;

use bwos::fork::{self, Boxed};

/// The sum of `values`, split in halves down to 4096 elements.
fn sum(values: &[u64]) -> Boxed<'_, u64> {
    if values.len() <= 4096 {
        return fork::ready(values.iter().sum());
    }
    fork::boxed_with(move || async move {
        let (left, right) = values.split_at(values.len() / 2);
        let (a, b) = fork::join(sum(left), sum(right)).await;
        a + b
    })
}

fn main() {
    let values: Vec<u64> = (0..10_000_000).collect();
    let total = bwos::block_on(async {
        let first = sum(&values[..5_000_000]).await;
        // A task may await anything between forks: a timer, a socket.
        bwos::time::sleep(Duration::from_millis(1)).await;
        first + sum(&values[5_000_000..]).await
    });
    assert_eq!(total, 9_999_999 * 10_000_000 / 2);
    println!("sum {total}");
}

//! A queue's entries cost resident memory only where they are used: a new
//! queue touches its blocks' metadata, not its entries.
//!
//! Resident memory is read from `/proc/self/status` (Linux). This file
//! holds one test, so no other test of the process allocates meanwhile.
#![cfg(all(target_os = "linux", not(bwos_loom), not(miri)))]

use bwos_queue::{Config, fifo, lifo};

/// The anonymous resident memory of this process, in KiB.
fn resident_anonymous_kib() -> u64 {
    bwos_testkit::proc::status_kib("RssAnon").unwrap()
}

/// The runtime's geometry (32 blocks of 32 entries) with items of two
/// words: 16 KiB of entries and 8 KiB of block metadata per queue. Before
/// the entries were one allocation per queue, each block's entries were an
/// allocation of their own and a new queue was about 29 KiB resident; now
/// it is the metadata and a few pages more (about 13 KiB). The bound sits
/// between the two.
#[test]
fn a_new_queue_does_not_touch_its_entries() {
    const QUEUES: usize = 128;
    const BOUND_KIB: f64 = 20.0;
    let config = Config::new(32, 32).unwrap();
    let before = resident_anonymous_kib();
    let lifo_queues: Vec<_> = (0..QUEUES)
        .map(|_| lifo::new::<[usize; 2]>(config))
        .collect();
    let lifo_kib = (resident_anonymous_kib() - before) as f64 / QUEUES as f64;
    let before = resident_anonymous_kib();
    let fifo_queues: Vec<_> = (0..QUEUES)
        .map(|_| fifo::new::<[usize; 2]>(config))
        .collect();
    let fifo_kib = (resident_anonymous_kib() - before) as f64 / QUEUES as f64;
    assert!(
        lifo_kib < BOUND_KIB,
        "a new LIFO queue of 32 x 32 two-word entries is {lifo_kib:.1} KiB resident (bound {BOUND_KIB} KiB)"
    );
    assert!(
        fifo_kib < BOUND_KIB,
        "a new FIFO queue of 32 x 32 two-word entries is {fifo_kib:.1} KiB resident (bound {BOUND_KIB} KiB)"
    );
    // The queues work: an item goes in and comes out of each.
    for (index, (worker, _)) in lifo_queues.iter().enumerate() {
        worker.push([index, 1]).unwrap();
        assert_eq!(worker.pop(), Some([index, 1]));
    }
    for (index, (worker, _)) in fifo_queues.iter().enumerate() {
        worker.push([index, 2]).unwrap();
        assert_eq!(worker.pop(), Some([index, 2]));
    }
}

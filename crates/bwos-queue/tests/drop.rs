//! Items left in a queue are dropped exactly once when the last handle
//! goes, whichever handle that is; zero-sized items work too.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bwos_queue::Config;

/// Counts its drops per id in a shared ledger.
struct Tracked {
    id: usize,
    ledger: Arc<std::sync::Mutex<BTreeMap<usize, usize>>>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        *self.ledger.lock().unwrap().entry(self.id).or_default() += 1;
    }
}

/// The three ways a queue's handles can end.
#[derive(Clone, Copy, Debug)]
enum LastHandle {
    Worker,
    Stealer,
    BatchDestination,
}

impl LastHandle {
    /// Drops the three handles of a test, `self` last.
    fn drop_last<W, S, D>(self, worker: W, stealer: S, dest: D) {
        match self {
            LastHandle::Worker => {
                drop(stealer);
                drop(dest);
                drop(worker);
            }
            LastHandle::Stealer => {
                drop(worker);
                drop(dest);
                drop(stealer);
            }
            LastHandle::BatchDestination => {
                drop(worker);
                drop(stealer);
                drop(dest);
            }
        }
    }
}

macro_rules! drop_tests {
    ($variant:ident) => {
        mod $variant {
            use super::*;
            use bwos_queue::$variant;

            /// Pushes `pushed` items, pops `popped`, steals `stolen` (those
            /// are dropped by the test), then drops the handles in the given
            /// order: every item must be dropped exactly once.
            fn check(pushed: usize, popped: usize, stolen: usize, last: LastHandle) {
                let ledger = Arc::new(std::sync::Mutex::new(BTreeMap::new()));
                let config = Config::new(3, 4).unwrap();
                let (worker, stealer) = $variant::new(config);
                let (dest, _) = $variant::new(config);
                let mut accepted = 0;
                for id in 0..pushed {
                    let item = Tracked {
                        id,
                        ledger: ledger.clone(),
                    };
                    match worker.push(item) {
                        Ok(()) => accepted += 1,
                        // Handed back: dropping it here counts it once.
                        Err(item) => drop(item),
                    }
                }
                for _ in 0..popped {
                    drop(worker.pop());
                }
                for _ in 0..stolen {
                    drop(stealer.steal_batch_and_pop(&dest).success());
                }
                last.drop_last(worker, stealer, dest);
                let ledger = ledger.lock().unwrap();
                assert!(accepted <= config.capacity());
                assert_eq!(ledger.len(), pushed, "some items were never dropped");
                assert!(
                    ledger.values().all(|&n| n == 1),
                    "dropped twice: {ledger:?}"
                );
            }

            #[test]
            fn every_item_is_dropped_exactly_once() {
                for last in [
                    LastHandle::Worker,
                    LastHandle::Stealer,
                    LastHandle::BatchDestination,
                ] {
                    for pushed in [0, 1, 4, 5, 11, 12, 13, 20] {
                        for popped in [0, 1, 5] {
                            for stolen in [0, 1, 3] {
                                check(pushed, popped, stolen, last);
                            }
                        }
                    }
                }
            }

            #[test]
            fn zero_sized_items_are_counted() {
                let (worker, stealer) = $variant::new::<()>(Config::new(2, 3).unwrap());
                let mut accepted = 0;
                while worker.push(()).is_ok() {
                    accepted += 1;
                }
                assert_eq!(accepted, worker.capacity());
                let mut taken = 0;
                while stealer.steal().is_success() {
                    taken += 1;
                }
                while worker.pop().is_some() {
                    taken += 1;
                }
                assert_eq!(taken, accepted);
            }

            #[test]
            fn zero_sized_items_with_drop_are_dropped_once() {
                static DROPS: AtomicUsize = AtomicUsize::new(0);
                struct Marker;
                impl Drop for Marker {
                    fn drop(&mut self) {
                        DROPS.fetch_add(1, Ordering::Relaxed);
                    }
                }
                let (worker, stealer) = $variant::new::<Marker>(Config::new(2, 3).unwrap());
                for _ in 0..5 {
                    assert!(worker.push(Marker).is_ok());
                }
                drop(stealer.steal());
                assert_eq!(DROPS.load(Ordering::Relaxed), 1);
                drop(worker);
                drop(stealer);
                assert_eq!(DROPS.load(Ordering::Relaxed), 5);
            }

            #[test]
            fn heap_owning_items_do_not_leak() {
                // Miri reports any leak of these allocations.
                let (worker, stealer) = $variant::new::<Vec<u8>>(Config::new(2, 2).unwrap());
                for i in 0..4 {
                    worker.push(vec![i; 16]).unwrap();
                }
                assert_eq!(stealer.steal().success().map(|v| v[0]), Some(0));
                drop(worker);
                drop(stealer);
            }
        }
    };
}

drop_tests!(lifo);
drop_tests!(fifo);

/// Workers move between threads, stealers are shared between them.
#[test]
fn handles_have_the_documented_auto_traits() {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<bwos_queue::lifo::Worker<String>>();
    send::<bwos_queue::fifo::Worker<String>>();
    send::<bwos_queue::lifo::Stealer<String>>();
    sync::<bwos_queue::lifo::Stealer<String>>();
    send::<bwos_queue::fifo::Stealer<String>>();
    sync::<bwos_queue::fifo::Stealer<String>>();
}

/// Items in a FIFO consumer block that the owner shared are the thieves'
/// until a pop takes them back: whichever handle goes last, they are
/// dropped exactly once, also those the producer pushed into the shared
/// block after the share.
#[test]
fn fifo_shared_consumer_block_items_are_dropped_exactly_once() {
    use bwos_queue::fifo;
    for last in [
        LastHandle::Worker,
        LastHandle::Stealer,
        LastHandle::BatchDestination,
    ] {
        // (pushed before the share, popped, pushed after, stolen)
        for (before, popped, after, stolen) in [
            (3, 1, 0, 0),
            (3, 1, 1, 0),
            (3, 1, 1, 1),
            (6, 1, 0, 2),
            (6, 2, 3, 1),
            (4, 1, 5, 4),
        ] {
            let ledger = Arc::new(std::sync::Mutex::new(BTreeMap::new()));
            let tracked = |id| Tracked {
                id,
                ledger: ledger.clone(),
            };
            let config = Config::new(3, 4).unwrap();
            let (worker, stealer) = fifo::new(config);
            let (dest, _) = fifo::new(config);
            for id in 0..before {
                assert!(worker.push(tracked(id)).is_ok());
            }
            for _ in 0..popped {
                drop(worker.pop());
            }
            assert!(worker.share());
            for id in before..before + after {
                assert!(worker.push(tracked(id)).is_ok());
            }
            // The first steal moves a batch into `dest`, whose drop must
            // then drop it.
            if stolen > 0 {
                assert!(stealer.steal_batch(&dest).is_success());
            }
            for _ in 1..stolen {
                drop(stealer.steal().success());
            }
            assert!(worker.is_shared());
            last.drop_last(worker, stealer, dest);
            let ledger = ledger.lock().unwrap();
            assert_eq!(
                ledger.len(),
                before + after,
                "{last:?} {before} {popped} {after} {stolen}: some items were never dropped"
            );
            assert!(
                ledger.values().all(|&n| n == 1),
                "{last:?} {before} {popped} {after} {stolen}: dropped twice: {ledger:?}"
            );
        }
    }
}

//! Work lists: every item processed exactly once (unique ids, fan-outs of
//! 0 to 8, 1 to 8 workers), items pushed at the last moment, spills of a
//! full queue, panics (the rest dropped exactly once, the pool usable
//! afterwards), nesting inside `join` and inside another run.
#![cfg(not(bwos_loom))]

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};

use bwos::ThreadPoolBuilder;
use bwos::worklist::Sink;
use bwos_testkit::watchdog;
use proptest::prelude::*;

/// Hands out unique item ids below a cap and counts, per id, how often an
/// item was processed and how often it was dropped.
struct Ledger {
    next: AtomicU64,
    processed: Vec<AtomicU8>,
    dropped: Vec<AtomicU8>,
}

impl Ledger {
    fn new(cap: usize) -> Self {
        Ledger {
            next: AtomicU64::new(0),
            processed: (0..cap).map(|_| AtomicU8::new(0)).collect(),
            dropped: (0..cap).map(|_| AtomicU8::new(0)).collect(),
        }
    }

    /// A new item, or `None` once the cap is reached.
    fn item(&self) -> Option<Item<'_>> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        if id as usize >= self.processed.len() {
            return None;
        }
        Some(Item { id, ledger: self })
    }

    fn created(&self) -> usize {
        (self.next.load(Ordering::Relaxed) as usize).min(self.processed.len())
    }

    /// Every created item was dropped exactly once, and processed exactly
    /// once (`all_processed`) or at most once.
    fn check(&self, all_processed: bool) {
        let created = self.created();
        for id in 0..created {
            let processed = self.processed[id].load(Ordering::Relaxed);
            let dropped = self.dropped[id].load(Ordering::Relaxed);
            assert_eq!(dropped, 1, "item {id} dropped {dropped} times");
            if all_processed {
                assert_eq!(processed, 1, "item {id} processed {processed} times");
            } else {
                assert!(processed <= 1, "item {id} processed {processed} times");
            }
        }
        for id in created..self.processed.len() {
            assert_eq!(self.processed[id].load(Ordering::Relaxed), 0);
        }
    }
}

/// An item with a unique id that reports its drop to the ledger.
struct Item<'a> {
    id: u64,
    ledger: &'a Ledger,
}

impl Drop for Item<'_> {
    fn drop(&mut self) {
        self.ledger.dropped[self.id as usize].fetch_add(1, Ordering::Relaxed);
    }
}

/// 0 to 8 children, decided by the id (a fixed pseudo-random function).
fn fan_out(id: u64, salt: u64) -> u64 {
    let mut x = id ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 33;
    x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    x ^= x >> 29;
    x % 9
}

/// Processes `item`: marks it and pushes its children (while ids last).
fn process<'a>(ledger: &'a Ledger, item: Item<'a>, sink: &Sink<'_, Item<'a>>, salt: u64) {
    ledger.processed[item.id as usize].fetch_add(1, Ordering::Relaxed);
    for _ in 0..fan_out(item.id, salt) {
        match ledger.item() {
            Some(child) => sink.push(child),
            None => break,
        }
    }
}

fn seeds(ledger: &Ledger, count: usize) -> Vec<Item<'_>> {
    (0..count).filter_map(|_| ledger.item()).collect()
}

#[test]
fn every_item_is_processed_exactly_once_on_1_to_8_workers() {
    watchdog(
        "every_item_is_processed_exactly_once_on_1_to_8_workers",
        || {
            for threads in [1, 2, 3, 8] {
                let pool = ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let ledger = Ledger::new(1_000_000);
                pool.worklist(seeds(&ledger, 16), |item, sink| {
                    process(&ledger, item, sink, threads as u64)
                });
                // A mean fan-out of 4 reaches the cap.
                assert_eq!(ledger.created(), 1_000_000, "{threads} threads");
                ledger.check(true);
            }
        },
    );
}

#[test]
fn a_full_queue_spills_and_nothing_is_lost() {
    watchdog("a_full_queue_spills_and_nothing_is_lost", || {
        // One worker, breadth first in effect: every item pushes two, so
        // the queue holds far more than its capacity at the peak.
        let pool = ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let ledger = Ledger::new(200_000);
        pool.worklist(seeds(&ledger, 1), |item, sink| {
            ledger.processed[item.id as usize].fetch_add(1, Ordering::Relaxed);
            // Children are pushed before the item's own drop, so the queue
            // grows: first 100_000 items push two each.
            if item.id < 100_000 {
                for _ in 0..2 {
                    if let Some(child) = ledger.item() {
                        sink.push(child);
                    }
                }
            }
        });
        ledger.check(true);
        assert!(pool.stats().worklist_spilled > 0, "{}", pool.stats());
    });
}

#[test]
fn items_pushed_at_the_last_moment_are_processed() {
    watchdog("items_pushed_at_the_last_moment_are_processed", || {
        let pool = ThreadPoolBuilder::new().num_threads(4).build().unwrap();
        for round in 0..20 {
            // A chain: each item works a while, then pushes the next one
            // as its very last action, while the other workers have run
            // dry and are deciding to leave.
            let ledger = Ledger::new(64);
            pool.worklist(seeds(&ledger, 1), |item, sink| {
                ledger.processed[item.id as usize].fetch_add(1, Ordering::Relaxed);
                let mut spin = 0u64;
                for i in 0..(item.id * 500 + round) {
                    spin = std::hint::black_box(spin.wrapping_add(i));
                }
                if let Some(next) = ledger.item() {
                    sink.push(next);
                }
            });
            ledger.check(true);
            assert_eq!(ledger.created(), 64);
        }
    });
}

#[test]
fn a_panic_stops_the_run_drops_the_rest_once_and_resumes_in_the_caller() {
    watchdog(
        "a_panic_stops_the_run_drops_the_rest_once_and_resumes_in_the_caller",
        || {
            for threads in [1, 2, 4] {
                let pool = ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let ledger = Ledger::new(100_000);
                let processed = AtomicUsize::new(0);
                let result = panic::catch_unwind(AssertUnwindSafe(|| {
                    pool.worklist(seeds(&ledger, 8), |item, sink| {
                        process(&ledger, item, sink, 7);
                        // The 1000th item panics, with thousands queued.
                        if processed.fetch_add(1, Ordering::Relaxed) == 999 {
                            panic!("item 1000");
                        }
                    });
                }));
                let payload = result.expect_err("the panic reaches the caller");
                assert_eq!(payload.downcast_ref::<&str>(), Some(&"item 1000"));
                ledger.check(false);
                // The run stopped early: items were dropped unprocessed.
                let processed = processed.into_inner();
                assert!(
                    processed < ledger.created(),
                    "{processed} of {}",
                    ledger.created()
                );
                // The pool is still usable.
                let again = Ledger::new(10_000);
                pool.worklist(seeds(&again, 4), |item, sink| {
                    process(&again, item, sink, 3)
                });
                again.check(true);
            }
        },
    );
}

#[test]
fn runs_nest_inside_join_and_inside_other_runs() {
    watchdog("runs_nest_inside_join_and_inside_other_runs", || {
        let pool = ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let (a, b) = (Ledger::new(50_000), Ledger::new(50_000));
        pool.install(|| {
            bwos::join(
                || bwos::worklist::run(seeds(&a, 4), |item, sink| process(&a, item, sink, 1)),
                || bwos::worklist::run(seeds(&b, 4), |item, sink| process(&b, item, sink, 2)),
            )
        });
        a.check(true);
        b.check(true);
        // Each outer item runs an inner work list of its own.
        let inner_items = AtomicUsize::new(0);
        let outer = Ledger::new(200);
        pool.worklist(seeds(&outer, 2), |item, sink| {
            let inner = Ledger::new(500);
            bwos::worklist::run(seeds(&inner, 1), |item, sink| {
                process(&inner, item, sink, 9)
            });
            inner.check(true);
            inner_items.fetch_add(inner.created(), Ordering::Relaxed);
            process(&outer, item, sink, 5);
        });
        outer.check(true);
        assert!(inner_items.into_inner() > 0);
    });
}

#[test]
fn a_run_from_outside_every_pool_uses_the_global_pool() {
    watchdog("a_run_from_outside_every_pool_uses_the_global_pool", || {
        let ledger = Ledger::new(20_000);
        bwos::worklist::run(seeds(&ledger, 3), |item, sink| {
            assert!(bwos::current_thread_index().is_some());
            process(&ledger, item, sink, 11)
        });
        ledger.check(true);
        // No seeds: returns at once.
        bwos::worklist::run(Vec::<u32>::new(), |_, _| unreachable!());
    });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random pools, seed counts, fan-out functions and panic points:
    /// without a panic every item is processed once; with one, the panic
    /// reaches the caller and every item is dropped once and processed at
    /// most once.
    #[test]
    fn random_runs_process_or_drop_every_item_exactly_once(
        threads in 1usize..5,
        seed_count in 0usize..20,
        salt in any::<u64>(),
        cap in 1usize..30_000,
        panic_at in proptest::option::of(0u64..30_000),
    ) {
        watchdog("random_runs_process_or_drop_every_item_exactly_once", || {
            let pool = ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let ledger = Ledger::new(cap);
            let result = panic::catch_unwind(AssertUnwindSafe(|| {
                pool.worklist(seeds(&ledger, seed_count), |item, sink: &Sink<'_, Item<'_>>| {
                    let id = item.id;
                    process(&ledger, item, sink, salt);
                    if Some(id) == panic_at {
                        panic!("planned");
                    }
                });
            }));
            let panicked = panic_at.is_some_and(|at| (at as usize) < ledger.created());
            assert_eq!(result.is_err(), panicked);
            ledger.check(!panicked);
        });
    }
}

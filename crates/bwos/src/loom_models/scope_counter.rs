//! loom model: The Nowa scope counter (`scope/counter.rs`).

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use super::{Slot, ThreadLatch, builder, thread_latch};
use crate::sched::latch::Latch;
use crate::scope::counter::NowaCounter;

/// The Nowa counter: two spawns on the owner's path (plain counting), one
/// of whose tasks spawns a third from its own thread (atomic counting);
/// tasks complete in any order relative to the end of the body. The owner
/// must be released exactly once, after every task, and see their results.
#[test]
fn nowa_counter_releases_owner_once() {
    builder(3).check(|| {
        struct Shared {
            counter: NowaCounter,
            latch: ThreadLatch,
            results: [Slot; 3],
            releases: AtomicUsize,
        }
        fn complete(shared: &Shared) {
            if shared.counter.complete() {
                shared.releases.fetch_add(1, Ordering::Relaxed);
                // SAFETY: the latch is alive (the `Arc`).
                unsafe { Latch::set(&shared.latch) };
            }
        }
        let owner = thread::spawn(|| {
            let shared = Arc::new(Shared {
                counter: NowaCounter::new(),
                latch: thread_latch(),
                results: [Slot::new(), Slot::new(), Slot::new()],
                releases: AtomicUsize::new(0),
            });

            shared.counter.spawn_on_owner_thread();
            let first = {
                let shared = shared.clone();
                thread::spawn(move || {
                    shared.results[0].write(1);
                    complete(&shared);
                })
            };
            shared.counter.spawn_on_owner_thread();
            let second = {
                let shared = shared.clone();
                thread::spawn(move || {
                    shared.counter.spawn_elsewhere();
                    let nested = {
                        let shared = shared.clone();
                        thread::spawn(move || {
                            shared.results[2].write(3);
                            complete(&shared);
                        })
                    };
                    shared.results[1].write(2);
                    complete(&shared);
                    nested
                })
            };

            let all_done_at_end = shared.counter.end_of_body();
            if !all_done_at_end {
                shared.latch.core().wait_blocking();
            }
            let values: Vec<u32> = shared.results.iter().map(Slot::read).collect();
            assert_eq!(values, [1, 2, 3]);
            (shared, all_done_at_end, first, second)
        });
        // The main thread joins the task threads (see the module docs).
        let (shared, all_done_at_end, first, second) = owner.join().unwrap();
        first.join().unwrap();
        second.join().unwrap().join().unwrap();
        let releases = shared.releases.load(Ordering::Relaxed);
        assert_eq!(
            releases,
            usize::from(!all_done_at_end),
            "released {releases} times"
        );
    });
}

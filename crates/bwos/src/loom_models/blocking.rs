//! loom model: the blocking pool's queue (`sched/blocking/queue.rs`):
//! every closure pushed is run by a blocking thread or handed back at
//! shutdown, exactly once, and an idle thread never sleeps through one;
//! an entry pushed once the previous one's result is seen waits for the
//! thread that ran it (arriving or idle) instead of starting another;
//! after shutdown, a waiter for the threads' exits is woken by the last.
//! (loom's condition variable never times out: the keep-alive exit is not
//! explored, the claims between pushers and idle threads are.)

use std::time::Duration;

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use super::builder;
use crate::sched::blocking::queue::{BlockingQueue, Pushed};

/// Pushes `items` (bits of a mask) from the main thread into a queue of at
/// most `max_threads` threads, while the threads run, then shuts the
/// queue down: each item is run once or returned once. With
/// `one_at_a_time`, each push waits for the previous item's result (a
/// task awaiting one blocking closure after another): one thread serves
/// them all.
fn pushed_items_run_or_return_once(
    max_threads: usize,
    items: usize,
    shut_down_early: bool,
    one_at_a_time: bool,
) {
    builder(2).check(move || {
        let queue = Arc::new(BlockingQueue::new(max_threads));
        let ran = Arc::new(AtomicUsize::new(0));
        let mut threads = Vec::new();
        for item in 0..items {
            if one_at_a_time {
                while ran.load(Ordering::SeqCst) != (1 << item) - 1 {
                    thread::yield_now();
                }
            }
            match queue.push(1usize << item) {
                Pushed::Queued => {}
                Pushed::Refused(_) => panic!("refused before shutdown"),
                Pushed::StartThread => {
                    let (queue, ran) = (queue.clone(), ran.clone());
                    threads.push(thread::spawn(move || {
                        let waiter = queue.waiter();
                        while let Some(bit) = queue.next(&waiter, Duration::from_secs(10)) {
                            // As a blocking task: the thread announces its
                            // return before the result is seen.
                            queue.returning(&waiter);
                            let before = ran.fetch_or(bit, Ordering::SeqCst);
                            assert_eq!(before & bit, 0, "an item ran twice");
                        }
                    }));
                }
            }
        }
        assert!(threads.len() <= max_threads);
        if one_at_a_time {
            assert_eq!(
                threads.len(),
                1,
                "a thread started for an entry the first could take"
            );
        }
        if !shut_down_early {
            // Wait until every item ran (a lost claim would hang here and
            // loom reports the deadlock).
            while ran.load(Ordering::SeqCst) != (1 << items) - 1 {
                thread::yield_now();
            }
        }
        let orphans = queue.shut_down();
        // `ThreadPool::shutdown_timeout`'s wait: every exit is signalled
        // (a lost one would hang here and loom reports the deadlock).
        assert!(queue.wait_for_threads(0, None));
        for thread in threads {
            thread.join().unwrap();
        }
        let returned = orphans.iter().fold(0, |mask, bit| mask | bit);
        let ran = ran.load(Ordering::SeqCst);
        assert_eq!(ran & returned, 0, "an item both ran and came back");
        assert_eq!(ran | returned, (1 << items) - 1, "an item was lost");
        assert_eq!(queue.threads(), 0, "a thread did not exit");
        assert!(matches!(queue.push(1), Pushed::Refused(1)));
    });
}

#[test]
fn blocking_one_thread_runs_every_item() {
    pushed_items_run_or_return_once(1, 2, false, false);
}

#[test]
fn blocking_two_threads_run_every_item() {
    pushed_items_run_or_return_once(2, 3, false, false);
}

#[test]
fn blocking_shutdown_returns_what_did_not_run() {
    pushed_items_run_or_return_once(1, 2, true, false);
}

#[test]
fn blocking_entries_pushed_after_each_result_need_one_thread() {
    pushed_items_run_or_return_once(2, 3, false, true);
}

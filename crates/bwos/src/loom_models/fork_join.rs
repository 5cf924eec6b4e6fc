//! loom model: `fork::join`'s suspension and resumption (`fork/join.rs`, `fork/child.rs`) on the real task state word and latch.

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;

use super::builder;
use crate::sched::latch::CoreLatch;

/// `fork::join`'s protocol: the parent's worker polls `a` while `b`'s poll
/// waits in its queue; a thief takes it (or the parent takes it back: the
/// queue hands each entry out once, modeled by a swap), polls `b` with the
/// parent task's waker, and sets the job's latch (the real `CoreLatch`);
/// `b` waits on a channel that a third thread fills and wakes the parent
/// task through the real task state word. The parent's poll returns only
/// after `b`'s poll is over (the latch), so `b` is never polled twice at
/// once (loom checks the accesses to its cell); the join suspends
/// (`Pending`) and the channel's wake-up resumes the task exactly once
/// more: it completes with the sent value, with no lost and no double
/// resumption.
#[test]
fn fork_join_suspends_and_resumes_exactly_once() {
    use crate::sched::task::state::{EndPoll, StartPoll, State, Wake};
    use loom::sync::Mutex;

    /// `b`: not started, waiting for the channel, or done with its value.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum B {
        Start,
        Waiting,
        Done(u32),
    }

    struct Join {
        task: State,
        /// The queue entry of `b`'s first poll exists (pushed during the
        /// parent's first poll), and was taken, once, by the parent or by
        /// the thief.
        pushed: AtomicBool,
        taken: AtomicBool,
        latch: CoreLatch,
        b: UnsafeCell<B>,
        /// The channel: its value, and whether a waker (the task's) waits.
        channel: Mutex<(Option<u32>, bool)>,
        /// Run-queue entries made by wake-ups (`Wake::Submit`).
        submitted: AtomicUsize,
        completed: AtomicUsize,
    }

    impl Join {
        /// One poll of `b` (by whoever holds it).
        fn poll_b(&self) {
            // SAFETY: the caller holds `b` (it took the queue entry, or it
            // is the parent after the latch); loom checks it.
            self.b.with_mut(|b| unsafe {
                if let B::Done(_) = *b {
                    return;
                }
                let mut channel = self.channel.lock().unwrap();
                *b = match channel.0 {
                    Some(value) => B::Done(value),
                    None => {
                        channel.1 = true;
                        B::Waiting
                    }
                };
            });
        }

        /// The parent task's poll of the join: `true` when it completed.
        fn poll_join(&self, first: bool) -> bool {
            // `b`'s first poll goes to the queue; `a` is ready at once;
            // then `b`'s poll is taken back, or it was stolen and the
            // parent waits for the thief's poll.
            if first {
                // Release: a push publishes the entry (the queue's own
                // Release); the thief's Acquire pairs with it.
                self.pushed.store(true, Ordering::Release);
            }
            if first && self.taken.swap(true, Ordering::Relaxed) {
                while !self.latch.probe() {
                    thread::yield_now();
                }
            } else {
                self.poll_b();
            }
            // SAFETY: `b`'s poll is over (inline, or the latch was seen
            // set): the parent holds it.
            self.b.with(|b| unsafe { matches!(*b, B::Done(_)) })
        }

        /// Runs the task from one run-queue entry until it is idle or
        /// complete.
        fn run(&self, first: &mut bool) {
            assert_eq!(self.task.start_poll(), StartPoll::Poll);
            loop {
                let done = self.poll_join(std::mem::take(first));
                if done {
                    self.task.complete();
                    self.completed.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                match self.task.end_poll() {
                    EndPoll::Idle { .. } => return,
                    EndPoll::Requeue => assert_eq!(self.task.start_poll(), StartPoll::Poll),
                    EndPoll::Cancel => unreachable!("nobody aborts"),
                }
            }
        }
    }

    builder(3).check(|| {
        let join = Arc::new(Join {
            task: State::new(),
            pushed: AtomicBool::new(false),
            taken: AtomicBool::new(false),
            latch: CoreLatch::new(),
            b: UnsafeCell::new(B::Start),
            channel: Mutex::new((None, false)),
            submitted: AtomicUsize::new(0),
            completed: AtomicUsize::new(0),
        });
        let thief = {
            let join = join.clone();
            thread::spawn(move || {
                // Acquire: pairs with the push. The swap is Relaxed: the
                // queue's exactly-once hand-off is the model's assumption
                // (checked by bwos-queue's own models).
                while !join.pushed.load(Ordering::Acquire) {
                    thread::yield_now();
                }
                if !join.taken.swap(true, Ordering::Relaxed) {
                    join.poll_b();
                    join.latch.set();
                }
            })
        };
        let sender = {
            let join = join.clone();
            thread::spawn(move || {
                let waiting = {
                    let mut channel = join.channel.lock().unwrap();
                    channel.0 = Some(5);
                    std::mem::take(&mut channel.1)
                };
                if waiting && join.task.wake_by_ref() == Wake::Submit {
                    join.submitted.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let mut first = true;
        join.run(&mut first);
        thief.join().unwrap();
        sender.join().unwrap();
        let mut runs = 0;
        while runs < join.submitted.load(Ordering::Relaxed) {
            runs += 1;
            join.run(&mut first);
        }
        assert_eq!(
            join.completed.load(Ordering::Relaxed),
            1,
            "the join completes exactly once: no lost or double resumption"
        );
        assert!(join.submitted.load(Ordering::Relaxed) <= 1, "resumed twice");
        // SAFETY: every thread is done.
        assert_eq!(join.b.with(|b| unsafe { *b }), B::Done(5));
    });
}

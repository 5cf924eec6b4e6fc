//! loom models of the BWoS protocol, run with
//! `RUSTFLAGS="--cfg bwos_loom" cargo test -p bwos-queue --release --test loom_models`.
//!
//! The client is the paper's verification client (Figure 9): two blocks of
//! two entries, an owner doing three rounds of puts and gets (3/2, 4/3,
//! 5/4), one thief stealing once and another twice; afterwards everything
//! left is drained. Values are distinct powers of two, so a bit mask
//! records exactly which items went where: every item put must come out
//! exactly once, from the owner or a thief. loom explores the interleavings
//! (with a bounded number of preemptions, `LOOM_MAX_PREEMPTIONS`, default
//! below) and checks every slot access for data races and every atomic
//! access under the C11 memory model.
#![cfg(bwos_loom)]

use loom::thread;

/// One step of the owner's script.
#[derive(Clone, Copy, Debug)]
enum Step {
    Put(usize),
    Get(usize),
    /// `lifo::Worker::share` (LIFO models only).
    Share,
}
use Step::{Get, Put, Share};

/// The owner of Figure 9: three rounds of puts and gets.
const FIGURE_9: &[Step] = &[Put(3), Get(2), Put(4), Get(3), Put(5), Get(4)];

/// How a thief steals.
#[derive(Clone, Copy, Debug)]
enum Thief {
    /// `steal()` this many times.
    Single(usize),
    /// One `steal_batch_and_pop` into its own queue, which it then drains.
    Batch,
}

/// A model checker bounded to `preemptions` preemptions per execution,
/// unless `LOOM_MAX_PREEMPTIONS` overrides it. Each model's bound is the
/// largest that keeps it to a few minutes on a 2-core machine; the closing
/// note of the issue lists bounds and durations.
fn builder(preemptions: usize) -> loom::model::Builder {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(preemptions);
    }
    builder
}

/// Adds `item` to `seen`, failing if it was already there.
fn record(seen: &mut u64, item: u64) {
    assert_eq!(item.count_ones(), 1, "{item:#x} was never put");
    assert_eq!(*seen & item, 0, "{item:#x} came out twice");
    *seen |= item;
}

macro_rules! models {
    ($variant:ident, figure_9: $fig9:expr, batch: $batch:expr, stalled: $stalled:expr
        $(, share: $share:expr)? $(, paused_thief: $paused:expr)?) => {
        mod $variant {
            use super::*;
            use bwos_queue::{Config, Steal, $variant};

            /// Runs the model on a queue of 2 blocks of 2 entries whose
            /// rounds start at `first_round`.
            fn run(
                owner: &'static [Step],
                thieves: &'static [Thief],
                preemptions: usize,
                first_round: u64,
            ) {
                builder(preemptions).check(move || {
                    let config = Config::new(2, 2).unwrap().with_first_round(first_round);
                    let (worker, stealer) = $variant::new::<u64>(config);
                    let handles: Vec<_> = thieves
                        .iter()
                        .map(|&thief| {
                            let stealer = stealer.clone();
                            thread::spawn(move || {
                                let mut seen = 0;
                                match thief {
                                    Thief::Single(times) => {
                                        for _ in 0..times {
                                            if let Steal::Success(item) = stealer.steal() {
                                                record(&mut seen, item);
                                            }
                                        }
                                    }
                                    Thief::Batch => {
                                        let (own, _) = $variant::new::<u64>(config);
                                        if let Steal::Success(item) =
                                            stealer.steal_batch_and_pop(&own)
                                        {
                                            record(&mut seen, item);
                                        }
                                        while let Some(item) = own.pop() {
                                            record(&mut seen, item);
                                        }
                                    }
                                }
                                seen
                            })
                        })
                        .collect();

                    let mut put = 0u64;
                    let mut got = 0u64;
                    let mut next = 1u64;
                    for &step in owner {
                        match step {
                            Put(n) => {
                                for _ in 0..n {
                                    match worker.push(next) {
                                        Ok(()) => put |= next,
                                        Err(back) => assert_eq!(back, next),
                                    }
                                    next <<= 1;
                                }
                            }
                            Get(n) => {
                                for _ in 0..n {
                                    if let Some(item) = worker.pop() {
                                        record(&mut got, item);
                                    }
                                }
                            }
                            Share => share(&worker),
                        }
                    }

                    for handle in handles {
                        let stolen = handle.join().unwrap();
                        assert_eq!(got & stolen, 0, "{:#x} both got and stolen", got & stolen);
                        got |= stolen;
                    }
                    // Drain: the owner first, then what only thieves can reach.
                    while let Some(item) = worker.pop() {
                        record(&mut got, item);
                    }
                    loop {
                        match stealer.steal() {
                            Steal::Success(item) => record(&mut got, item),
                            Steal::Retry => continue,
                            Steal::Empty => break,
                        }
                    }
                    assert!(worker.is_empty());
                    assert_eq!(put, got, "put {put:#x}, came out {got:#x}");
                });
            }

            /// The paper's Figure 9 client.
            #[test]
            fn figure_9_client() {
                run(FIGURE_9, &[Thief::Single(1), Thief::Single(2)], $fig9, 0);
            }

            /// A batch steal racing a single steal and the owner's puts, gets
            /// and block moves.
            #[test]
            fn batch_steal() {
                run(
                    &[Put(4), Get(1), Put(2), Get(4)],
                    &[Thief::Batch, Thief::Single(1)],
                    $batch,
                    0,
                );
            }

            /// A thief that stalls between reading a steal position and
            /// reserving it while the other thief drains the block and the
            /// owner wraps around into it: the stale reservation must fail.
            /// The queue starts in the last round before the 40-bit round
            /// counter wraps, so the owner's wrap-around is also the
            /// counter's (round 2^40 - 1, then round 0).
            #[test]
            fn stalled_thief_across_wraparound() {
                run(
                    &[Put(4), Put(2), Get(2), Put(2), Get(5)],
                    &[Thief::Single(1), Thief::Single(2)],
                    $stalled,
                    (1 << 40) - 1,
                );
            }

            $(
            /// A smaller client that affords a deeper bound: one thief, so
            /// at bound 2 it can be paused after its reservation (between
            /// the CAS and reading the entry or reporting the steal) while
            /// the owner takes the block over, drains and refills the queue
            /// and asks to reuse the thief's block in the next round.
            #[test]
            fn paused_thief_deep() {
                run(
                    &[Put(3), Get(1), Put(2), Get(4)],
                    &[Thief::Single(1)],
                    $paused,
                    0,
                );
            }
            )?

            $(
            /// The owner opens a partly filled block to thieves twice, the
            /// second time into a block of the previous lap that is free
            /// only if a thief drained it, while two thieves steal.
            #[test]
            fn share_partial_block() {
                run(
                    &[Put(1), Share, Put(2), Get(1), Share, Put(1), Get(4)],
                    &[Thief::Single(1), Thief::Single(1)],
                    $share,
                    0,
                );
            }
            )?
        }
    };
}

/// The owner's share step; only the LIFO worker has one.
fn share<W: Shareable>(worker: &W) {
    worker.share_now();
}

trait Shareable {
    fn share_now(&self);
}

impl Shareable for bwos_queue::lifo::Worker<u64> {
    fn share_now(&self) {
        self.share();
    }
}

impl Shareable for bwos_queue::fifo::Worker<u64> {
    fn share_now(&self) {
        unreachable!("FIFO models have no share step");
    }
}

// Preemption bounds per model, chosen so the nine models take about four
// minutes in total on a 2-core machine (run one at a time: two loom models
// side by side on two cores run several times slower each). The FIFO
// thieves can steal from the block the producer is filling, so every push
// is a point of interaction and the FIFO state space is far larger than the
// LIFO one at the same bound; `paused_thief_deep` is the FIFO client small
// enough for bound 2 (a thief paused after its CAS while the owner goes on).
// Deeper runs: `LOOM_MAX_PREEMPTIONS=3`.
models!(lifo, figure_9: 2, batch: 4, stalled: 3, share: 3);
models!(fifo, figure_9: 1, batch: 2, stalled: 1, paused_thief: 2);

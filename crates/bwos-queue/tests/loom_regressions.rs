//! Regression models for bugs found in other work-stealing queues, replayed
//! on ours under loom. Run with
//! `RUSTFLAGS="--cfg bwos_loom" cargo test -p bwos-queue --release --test loom_regressions -- --test-threads 1`.
//!
//! Each test is named after the peer's bug and describes it, says which of
//! our positions and rounds play the part of the peer's counters, and why
//! our protocol should not have the bug; then it model-checks the peer's
//! scenario on both flavors where it applies. Every model checks the same
//! thing: every item put comes out exactly once, from the owner or from a
//! thief; none twice (a double pop or a shared steal) and none never (a
//! lost task). Items are distinct powers of two, so one bit mask per thread
//! records exactly which items it got.
//!
//! Every model also names the situations of the peer's scenario that some
//! execution must reach (its *witnesses*: say, "a thief's stale reservation
//! failed while the owner reused the block in round 0"), and fails if none
//! does, so a model cannot pass by never getting there.
//!
//! After the threads are joined the queue is drained **thieves first**: a
//! stealer steals until it reports `Empty`, and then nothing may be left
//! that a thief could take (`Stealer::len() == 0`): a block that thieves
//! skip for good (the stdexec bug) fails there even though the owner could
//! still pop its items. Then the owner pops what is left in its own block.
//!
//! Bounds: each model's preemption bound (in its `Scenario`) keeps each
//! test under a minute in `--release` on a 2-core machine and the file
//! under two (about 80 to 100 s with other work on the machine): stdexec
//! #1967 LIFO 3, FIFO 4; stdexec #2130 LIFO 5, FIFO 3; Tokio #5041
//! unbounded (all executions, one thief); crossbeam LIFO 5 and 4, FIFO 2.
//! The FIFO models are the costly ones: their thieves can steal from the
//! block being filled, so every push is a point of interaction;
//! `LOOM_MAX_PREEMPTIONS` overrides all of them (below 2, some witnesses
//! are out of reach and the tests say so), and `BWOS_LOOM_FLAVOR=lifo` (or
//! `fifo`) runs one flavor's models only. Scenarios that loom cannot
//! reach (the 2^40-lap ABA of Tokio's bug) have stress tests in
//! `stress_regressions.rs`.
#![cfg(bwos_loom)]

use loom::thread;

/// One step of the owner's script.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// `push` this many new items (an item the full queue hands back is
    /// not counted as put).
    Put(usize),
    /// `pop` this many times.
    Get(usize),
    /// `Worker::share` (no script uses it on FIFO queues yet).
    Share,
}
use Step::{Get, Put, Share};

/// What a thief does.
#[derive(Clone, Copy, Debug)]
enum Thief {
    /// `steal()` this many times.
    Single(usize),
    /// One `steal_batch_and_pop` into a queue of its own, which it then
    /// drains.
    Batch,
}

/// What one steal attempt of a thief produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Attempt {
    /// The items it took: one for `steal`, the whole batch (the returned
    /// item and those pushed into the thief's own queue) for
    /// `steal_batch_and_pop`.
    Got(u64),
    /// `Steal::Empty`.
    Empty,
    /// `Steal::Retry`: the thief lost a race (its reservation CAS failed,
    /// or, FIFO, it found the block being recycled).
    Retry,
}

/// What one execution did, for the witnesses.
#[derive(Debug)]
struct Outcome {
    /// The items the queue accepted.
    put: u64,
    /// The items the full queue handed back.
    refused: u64,
    /// The items the owner popped during its script.
    popped: u64,
    /// Every thief's attempts, in order.
    thieves: Vec<Vec<Attempt>>,
}

impl Outcome {
    /// Whether some thief came back without an item and later, in a later
    /// attempt, took an item from `items`.
    fn thief_missed_then_took(&self, items: u64) -> bool {
        self.thieves.iter().any(|attempts| {
            attempts.iter().enumerate().any(|(i, a)| {
                !matches!(a, Attempt::Got(_))
                    && attempts[i + 1..]
                        .iter()
                        .any(|later| matches!(later, Attempt::Got(got) if got & items != 0))
            })
        })
    }

    /// Whether some thief took one of `items`.
    fn stolen(&self, items: u64) -> bool {
        self.thieves
            .iter()
            .flatten()
            .any(|a| matches!(a, Attempt::Got(got) if got & items != 0))
    }

    /// Whether some thief's attempt came back `Retry`.
    fn retried(&self) -> bool {
        self.thieves.iter().flatten().any(|a| *a == Attempt::Retry)
    }

    /// How many thieves took at least one item.
    fn successful_thieves(&self) -> usize {
        self.thieves
            .iter()
            .filter(|attempts| attempts.iter().any(|a| matches!(a, Attempt::Got(_))))
            .count()
    }
}

/// A description of a situation the model must reach, and the test for it.
type Witness = (&'static str, fn(&Outcome) -> bool);

/// One model: a queue of `blocks` blocks of `block_size` entries whose
/// rounds start at `first_round`, the owner's script, the thieves; and the
/// situations some execution must reach (so that the model provably
/// exercises the peer's scenario rather than passing vacuously).
struct Scenario {
    blocks: usize,
    block_size: usize,
    first_round: u64,
    owner: &'static [Step],
    thieves: &'static [Thief],
    /// The preemption bound; `None` explores every execution.
    preemptions: Option<usize>,
    witnesses: &'static [Witness],
}

/// The last round before the 40-bit round counter wraps to 0.
const LAST_ROUND: u64 = (1 << 40) - 1;

/// A model checker bounded to `preemptions` preemptions per execution
/// (`None`: unbounded), unless `LOOM_MAX_PREEMPTIONS` overrides it.
fn builder(preemptions: Option<usize>) -> loom::model::Builder {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = preemptions;
    }
    builder
}

/// Adds `item` to `seen`, failing if it was never put or already seen.
fn record(seen: &mut u64, item: u64) {
    assert_eq!(item.count_ones(), 1, "{item:#x} was never put");
    assert_eq!(*seen & item, 0, "{item:#x} came out twice");
    *seen |= item;
}

/// The owner's `share` step.
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
        self.share();
    }
}

macro_rules! flavor {
    ($variant:ident) => {
        mod $variant {
            use super::*;
            use bwos_queue::{Config, Steal, $variant};
            use std::sync::{Arc, Mutex};

            /// Model-checks `s`: in every execution every item put comes
            /// out exactly once; and every witness holds in at least one
            /// execution.
            pub(super) fn check(s: &'static Scenario) {
                if let Ok(only) = std::env::var("BWOS_LOOM_FLAVOR") {
                    if only != stringify!($variant) {
                        return;
                    }
                }
                // Which witnesses some execution reached: a plain std
                // mutex, recording across executions, outside the model.
                let reached = Arc::new(Mutex::new(vec![false; s.witnesses.len()]));
                let record_reached = reached.clone();
                builder(s.preemptions).check(move || {
                    let outcome = execution(s);
                    let mut reached = record_reached.lock().unwrap();
                    for (flag, (_, witness)) in reached.iter_mut().zip(s.witnesses) {
                        *flag |= witness(&outcome);
                    }
                });
                let reached = reached.lock().unwrap();
                for (flag, (what, _)) in reached.iter().zip(s.witnesses) {
                    assert!(
                        *flag,
                        "{}: no execution reached the scenario: {what}",
                        stringify!($variant)
                    );
                }
            }

            /// One execution of `s`, checked.
            fn execution(s: &'static Scenario) -> Outcome {
                let config = Config::new(s.blocks, s.block_size)
                    .unwrap()
                    .with_first_round(s.first_round);
                let (worker, stealer) = $variant::new::<u64>(config);
                let handles: Vec<_> = s
                    .thieves
                    .iter()
                    .map(|&thief| {
                        let stealer = stealer.clone();
                        thread::spawn(move || run_thief(&stealer, thief, config))
                    })
                    .collect();

                let mut put = 0u64;
                let mut refused = 0u64;
                let mut popped = 0u64;
                let mut next = 1u64;
                for &step in s.owner {
                    match step {
                        Put(n) => {
                            for _ in 0..n {
                                match worker.push(next) {
                                    Ok(()) => put |= next,
                                    Err(back) => {
                                        assert_eq!(back, next);
                                        refused |= next;
                                    }
                                }
                                next <<= 1;
                            }
                        }
                        Get(n) => {
                            for _ in 0..n {
                                if let Some(item) = worker.pop() {
                                    record(&mut popped, item);
                                }
                            }
                        }
                        Share => worker.share_now(),
                    }
                }

                let mut got = popped;
                let mut thieves = Vec::new();
                for handle in handles {
                    let attempts: Vec<Attempt> = handle.join().unwrap();
                    for attempt in &attempts {
                        if let Attempt::Got(items) = *attempt {
                            assert_eq!(got & items, 0, "{:#x} came out twice", got & items);
                            got |= items;
                        }
                    }
                    thieves.push(attempts);
                }
                // Thieves first: whatever was granted to them must be
                // reachable by a steal, not only by the owner's pop.
                loop {
                    match stealer.steal() {
                        Steal::Success(item) => record(&mut got, item),
                        Steal::Retry => continue,
                        Steal::Empty => break,
                    }
                }
                assert_eq!(
                    stealer.len(),
                    0,
                    "a steal reported Empty while items were stealable"
                );
                while let Some(item) = worker.pop() {
                    record(&mut got, item);
                }
                assert!(worker.is_empty());
                assert_eq!(put, got, "put {put:#x}, came out {got:#x}");
                Outcome {
                    put,
                    refused,
                    popped,
                    thieves,
                }
            }

            /// A thief's attempts; every item it takes is recorded once.
            fn run_thief(
                stealer: &$variant::Stealer<u64>,
                thief: Thief,
                config: Config,
            ) -> Vec<Attempt> {
                let mut seen = 0;
                let mut attempts = Vec::new();
                match thief {
                    Thief::Single(times) => {
                        for _ in 0..times {
                            attempts.push(match stealer.steal() {
                                Steal::Success(item) => {
                                    record(&mut seen, item);
                                    Attempt::Got(item)
                                }
                                Steal::Empty => Attempt::Empty,
                                Steal::Retry => Attempt::Retry,
                            });
                        }
                    }
                    Thief::Batch => {
                        let (own, _) = $variant::new::<u64>(config);
                        attempts.push(match stealer.steal_batch_and_pop(&own) {
                            Steal::Success(item) => {
                                record(&mut seen, item);
                                while let Some(item) = own.pop() {
                                    record(&mut seen, item);
                                }
                                Attempt::Got(seen)
                            }
                            Steal::Empty => Attempt::Empty,
                            Steal::Retry => Attempt::Retry,
                        });
                        assert!(own.is_empty());
                    }
                }
                attempts
            }
        }
    };
}

flavor!(lifo);
flavor!(fifo);

/// NVIDIA/stdexec PR #1967 (issue #1755, fixed March 2026): tasks lost
/// across block wrap-around.
///
/// **Their bug.** stdexec's BWoS (LIFO) had no rounds in its block
/// positions, and thieves shared one block cursor (`thief_block_`). As
/// the issue lays it out: a thief about to move to block `a` checked that
/// `a` was stealable and paused; the owner took `a` over (its steal
/// position became the block size, which also meant "done"); the thief
/// entered `a`, saw "done", and moved the shared cursor on; the owner then
/// pushed many tasks into `a` and moved past it, granting it, but the
/// thieves' cursor was already beyond `a` and nothing brought it back, so
/// the tasks of `a` were never run. PR #1967 tagged block positions and
/// block counters with rounds, so that a stale "done" is told from a
/// current one, and made each steal start from the oldest block
/// (`start_block_`) instead of a shared cursor.
///
/// **In BWoS here.** The "done" marker is our steal position at the margin
/// (the block size), set by the owner's takeover swap (LIFO `pop`, FIFO
/// consumer); it always carries the block's 40-bit round (every position
/// is a packed (round, index) word), and the round of the next lap is
/// stamped by the owner's reset. There is no shared thief cursor: every
/// steal scans all blocks (starting at a hint that only steers the
/// search), so a block a thief once found "done" is looked at again on the
/// next steal, and a re-granted block (the LIFO re-grant after a takeover,
/// the FIFO producer's reset for the next round) is open to the next steal.
///
/// **Model.** 2 blocks of 1 entry starting one round before the 40-bit
/// counter wraps: the owner grants block 0, pops (taking block 0 over while
/// the thieves may be looking at it), refills the queue so that block 0 is
/// re-granted in the same round or reused in the next round, which is
/// round 0 after the wrap. One thief steals twice (it can see the taken-over
/// block as empty, then find it granted again); in the LIFO model another
/// steals once (the FIFO model, whose thieves also interact with every
/// push, keeps to one thief to afford a deeper bound).
#[test]
fn stdexec_1967_block_wraparound_loses_no_task() {
    static LIFO: Scenario = Scenario {
        blocks: 2,
        block_size: 1,
        first_round: LAST_ROUND - 1,
        owner: &[Put(2), Get(2), Put(3), Get(1)],
        thieves: &[Thief::Single(2), Thief::Single(1)],
        preemptions: Some(3),
        witnesses: &[
            (
                "a thief came back empty-handed, then took an item pushed after the takeover",
                |o| o.thief_missed_then_took(!0b11),
            ),
            (
                "the owner reused block 0 in round 0, after the wrap, with item 8",
                |o| o.stolen(1) && o.put & 8 != 0,
            ),
        ],
    };
    static FIFO: Scenario = Scenario {
        blocks: 2,
        block_size: 1,
        first_round: LAST_ROUND - 1,
        owner: &[Put(2), Get(2), Put(3), Get(1)],
        thieves: &[Thief::Single(2)],
        preemptions: Some(4),
        witnesses: &[(
            "a thief came back empty-handed, then took the item the producer put into \
                 block 0 in round 0, after the wrap",
            |o| o.thief_missed_then_took(4),
        )],
    };
    lifo::check(&LIFO);
    fifo::check(&FIFO);
}

/// NVIDIA/stdexec issue #2130 (July 2026): "when the owner is pushing,
/// multiple thieves can steal at the same time, which may lead to them
/// stealing the same task" (found with ThreadSanitizer on a stripped-down
/// `static_thread_pool`; the reporter's workaround was a lock between
/// pushing and stealing).
///
/// **Their bug.** The report gives no interleaving. Our reading of the
/// queue as it then was (after #1967): a thief claims an entry with a
/// *relaxed* CAS on the block's `steal_tail_` and then reads it; the
/// owner's takeover (an exchange) and its next grant (a plain store of the
/// old head) can put the very same (round, index) word back after the
/// owner has popped entries of the block and pushed new ones into them. A
/// thief that loaded the word before the takeover then claims an entry
/// after the re-grant without having synchronised with the owner's writes
/// to it: a race ThreadSanitizer reports, and on weakly ordered hardware a
/// read of the task the owner had already popped there, which so runs
/// twice.
///
/// **In BWoS here.** Thieves of both flavors reserve with one CAS on the
/// packed (round, index) `steal` word and read entries only after it
/// succeeds, so of two thieves that read the same word only one CAS
/// succeeds. The LIFO re-grant may indeed restore a word a stalled thief
/// holds (within a round `front` only grows and a re-grant reopens the
/// block at `front`, full), so the LIFO CAS acquires: it reads from the
/// owner's Release grant and sees the entries as rewritten. The FIFO
/// thieves steal from the block the producer is filling; each push
/// publishes its entry with a Release store of `back`, which they acquire
/// before reserving below it.
///
/// **Model.** Two thieves, one steal each, against an owner pushing across
/// block boundaries: LIFO on 2 blocks of 1 (grant, takeover, refill and
/// re-grant of the same word, then a push the full queue may refuse), FIFO on
/// 2 blocks of 2 (the thieves steal from the block being pushed, the
/// consumer takes it over, the producer moves on).
#[test]
fn stdexec_2130_two_thieves_never_steal_the_same_task() {
    static LIFO: Scenario = Scenario {
        blocks: 2,
        block_size: 1,
        first_round: 0,
        owner: &[Put(2), Get(2), Put(3)],
        thieves: &[Thief::Single(1), Thief::Single(1)],
        preemptions: Some(5),
        witnesses: &[
            ("both thieves stole an item", |o| {
                o.successful_thieves() == 2
            }),
            ("a thief lost its reservation race", |o| o.retried()),
            (
                "a thief stole the item written into the taken-over block and re-granted \
                 with the same steal word",
                |o| o.popped & 1 != 0 && o.stolen(4),
            ),
        ],
    };
    static FIFO: Scenario = Scenario {
        blocks: 2,
        block_size: 2,
        first_round: 0,
        owner: &[Put(3), Get(1), Put(1)],
        thieves: &[Thief::Single(1), Thief::Single(1)],
        preemptions: Some(3),
        witnesses: &[
            ("both thieves stole an item", |o| {
                o.successful_thieves() == 2
            }),
            ("a thief lost its reservation race", |o| o.retried()),
        ],
    };
    lifo::check(&LIFO);
    fifo::check(&FIFO);
}

/// tokio-rs/tokio issue #5041 (2022, mitigated by PR #5042): ABA on the
/// local run queue's head.
///
/// **Their bug.** Tokio's queue packs a 16-bit "real head" and "steal
/// head" into one word. A stealer loads the head and the tail, computes
/// how many tasks to take (half), and stalls before its CAS; meanwhile the
/// worker pops exactly 2^16 tasks and pushes fewer than that, so the head
/// wraps back to the very value the stealer holds: the CAS succeeds and the
/// stealer takes more tasks than the queue holds, reading slots nobody
/// wrote (undefined behaviour). The mitigation widened the indices to 32
/// bits, making the wrap need 2^32 pops during one stall.
///
/// **In BWoS here.** The stealer's CAS is on a block's packed `steal`
/// word: a 40-bit round and a 24-bit index. Within a round the index only
/// grows (thieves' CAS, FIFO consumer's swap to the margin) or is reset to
/// a grant position (LIFO) below which nothing is taken and above which
/// the block is full; the count a thief reserves is computed against the
/// block it read (LIFO: a granted block is full from its steal position;
/// FIFO: below the `back` it acquired, which only grows within a round).
/// Every reuse of a block is a new round, so for the stale CAS to succeed
/// the block must come back to the same round and index: 2^40 laps of the
/// owner through the queue during one stall (hours for the tiniest queue;
/// see the crate docs). That wrap is beyond loom and beyond any test;
/// these models check the short version (the stall spans one block reuse
/// across the counter's wrap from 2^40 - 1 to 0, with fewer items than
/// the thief planned for), and `stress_regressions.rs` runs it on real
/// threads many times.
///
/// **Model.** One batch thief (it plans to take a whole block) against an
/// owner that pops everything and puts back fewer items. FIFO on 2 blocks
/// of 2 starting one round before the wrap: the producer fills block 0,
/// the consumer takes it over and empties it, and the producer comes back
/// to block 0 in round 0 with one item. LIFO on 2 blocks of 2 starting at
/// the last round (the round control of the first lap compares across the
/// wrap): the owner grants block 0, takes it back, and shares one item
/// from it (a partial grant at a higher index) instead of two.
#[test]
fn tokio_5041_stalled_batch_thief_takes_no_more_than_is_there() {
    static LIFO: Scenario = Scenario {
        blocks: 2,
        block_size: 2,
        first_round: LAST_ROUND,
        owner: &[Put(3), Get(3), Put(1), Share, Get(1)],
        thieves: &[Thief::Batch],
        preemptions: None,
        witnesses: &[
            ("the batch thief took a whole block", |o| {
                o.thieves[0][0] == Attempt::Got(0b11)
            }),
            ("the batch thief's stale reservation failed", |o| {
                o.retried()
            }),
            (
                "the batch thief took the one item shared in place of two",
                |o| o.stolen(8),
            ),
        ],
    };
    static FIFO: Scenario = Scenario {
        blocks: 2,
        block_size: 2,
        first_round: LAST_ROUND - 1,
        owner: &[Put(2), Get(2), Put(3), Get(1)],
        thieves: &[Thief::Batch],
        preemptions: None,
        witnesses: &[
            ("the batch thief took a whole block", |o| {
                o.thieves[0][0] == Attempt::Got(0b11)
            }),
            (
                "the batch thief's stale reservation failed while the producer reused \
                 block 0 in round 0 with one item",
                |o| o.retried() && o.put & 16 != 0,
            ),
            (
                "the batch thief took the one item of block 0 in round 0",
                |o| o.stolen(16),
            ),
        ],
    };
    lifo::check(&LIFO);
    fifo::check(&FIFO);
}

/// crossbeam-rs/crossbeam advisory GHSA-pqqp-xmhj-wgcw (CVE-2021-32810,
/// RUSTSEC-2021-0093; fixed in crossbeam-deque 0.7.4 / 0.8.1 by PR #726):
/// a task popped twice, another never.
///
/// **Their bug.** crossbeam-deque's stealers read a task *before* claiming
/// it, from the buffer they loaded, and claimed it with a CAS on the
/// `front` index alone; the worker may meanwhile replace the buffer
/// (`resize`, on a push that grows it or a pop that shrinks it). The
/// clearest case is the LIFO path of `steal_batch_and_pop`, which loaded
/// the buffer once for a loop of one-by-one claims: the worker pops the
/// task at `front + 1` (not the last one, so it takes it without a CAS),
/// the buffer is replaced, and the worker pushes a new task at that index
/// into the new buffer; the stealer, still reading the old buffer, reads
/// the popped task there, its CAS on the unchanged index succeeds, and it
/// returns that task a second time (a double free for boxed tasks) while
/// the new task is never returned. The fix re-checks the buffer pointer
/// before every claim, in `steal`, `steal_batch` and
/// `steal_batch_and_pop` (the advisory's discussion is not public; the
/// scenario is our reading of the code and the fix).
///
/// **In BWoS here.** Entries never move: one allocation for the queue's
/// life, each block's entries at a fixed place, so there is no buffer to go
/// stale; what changes is which round a block's entries belong to, and that
/// round is in the word the thief's CAS validates. A thief reads entries
/// only *after* its CAS has reserved them (a batch is one CAS for all its
/// entries), and the owner pops entries a thief could reach only after an
/// atomic swap of that same word (LIFO takeover, FIFO consumer takeover),
/// so each entry goes to exactly one side. A LIFO owner may pop an entry of
/// a taken-over block, push a new item into it and grant the block again
/// with the word a stalled thief holds: that thief's CAS then succeeds, and
/// it acquires the grant, so it reads the new item, which nobody else gets.
/// Across rounds the owner rewrites an entry a thief reserved only after
/// that thief's Release count of finished reads (`stolen`), which it
/// acquires.
///
/// **Model.** Three scenarios, a batch thief and a single thief in each.
/// LIFO, 2 blocks of 2: the owner grants block 0, pops it down to one item
/// (taking it over), pushes a new item into the popped entry and grants
/// the block again, the crossbeam pattern. LIFO and FIFO, 2 blocks of 1:
/// the owner's pop races the thieves for the one item of a block, and the
/// owner then writes that entry again in the next round.
#[test]
fn crossbeam_ghsa_pqqp_pop_racing_steal_returns_each_item_once() {
    static LIFO_REGRANT: Scenario = Scenario {
        blocks: 2,
        block_size: 2,
        first_round: 0,
        owner: &[Put(3), Get(2), Put(2), Get(1)],
        thieves: &[Thief::Batch, Thief::Single(1)],
        preemptions: Some(5),
        witnesses: &[
            (
                "the owner's pop took item 2 back while a thief's reservation of the block failed",
                |o| o.popped & 2 != 0 && o.retried(),
            ),
            (
                "the batch thief took item 1 and item 8, written into the entry of the popped \
                 item 2, with one reservation of the re-granted block",
                |o| o.thieves[0][0] == Attempt::Got(0b1001),
            ),
        ],
    };
    static LIFO_REUSE: Scenario = Scenario {
        blocks: 2,
        block_size: 1,
        first_round: 0,
        owner: &[Put(2), Get(2), Put(2), Get(1)],
        thieves: &[Thief::Batch, Thief::Single(1)],
        preemptions: Some(4),
        witnesses: &[
            (
                "the owner's pop took item 1 back while a thief's reservation of it failed",
                |o| o.popped & 1 != 0 && o.retried(),
            ),
            (
                "a thief won item 1 and the owner then wrote its entry again in the next round",
                |o| o.stolen(1) && o.put & 8 != 0,
            ),
            (
                "the owner's reuse of that entry was refused while the thief was reading it",
                |o| o.stolen(1) && o.refused & 8 != 0,
            ),
        ],
    };
    static FIFO_REUSE: Scenario = Scenario {
        blocks: 2,
        block_size: 1,
        first_round: 0,
        owner: &[Put(2), Get(1), Put(1), Get(2)],
        thieves: &[Thief::Batch, Thief::Single(1)],
        preemptions: Some(2),
        witnesses: &[
            (
                "the owner's pop took item 1 back while a thief's reservation of it failed",
                |o| o.popped & 1 != 0 && o.retried(),
            ),
            (
                "a thief won item 1 and the owner then wrote its entry again in the next round",
                |o| o.stolen(1) && o.put & 4 != 0,
            ),
            (
                "the owner's reuse of that entry was refused while the thief was reading it",
                |o| o.stolen(1) && o.refused & 4 != 0,
            ),
        ],
    };
    lifo::check(&LIFO_REGRANT);
    lifo::check(&LIFO_REUSE);
    fifo::check(&FIFO_REUSE);
}

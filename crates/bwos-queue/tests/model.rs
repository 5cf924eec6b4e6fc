//! Single-threaded operation sequences checked against simple models:
//! `Vec` for LIFO, `VecDeque` for FIFO, capacity behaviour included.

use std::collections::VecDeque;

use bwos_queue::{Config, Steal, fifo, lifo};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Push,
    Pop,
    Steal,
    StealBatch,
    StealSampled(usize),
    /// `Worker::share` of either flavour.
    Share,
}

fn ops(with_thieves: bool) -> impl Strategy<Value = Vec<Op>> {
    let op = if with_thieves {
        prop_oneof![
            6 => Just(Op::Push),
            3 => Just(Op::Pop),
            2 => Just(Op::Steal),
            1 => Just(Op::StealBatch),
            1 => any::<usize>().prop_map(Op::StealSampled),
            1 => Just(Op::Share),
        ]
        .boxed()
    } else {
        prop_oneof![3 => Just(Op::Push), 2 => Just(Op::Pop)].boxed()
    };
    proptest::collection::vec(op, 0..if cfg!(miri) { 40 } else { 400 })
}

/// Small geometries; half of them start a few laps before the 40-bit round
/// counter wraps, so the sequences run the wrap-around paths (previous
/// round of round 0, round numbers past the top).
fn geometry() -> impl Strategy<Value = Config> {
    (
        2usize..5,
        1usize..5,
        prop_oneof![Just(0u64), (1u64..4).prop_map(|laps| (1 << 40) - laps)],
    )
        .prop_map(|(blocks, size, first_round)| {
            Config::new(blocks, size)
                .unwrap()
                .with_first_round(first_round)
        })
}

fn proptest_config() -> ProptestConfig {
    ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 300 },
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Removes `item` from `model`, failing if it is not there.
fn remove_from(model: &mut Vec<u32>, item: u32) -> Result<(), TestCaseError> {
    let at = model.iter().position(|&x| x == item);
    prop_assert!(at.is_some(), "{item} was not in the queue");
    model.remove(at.unwrap());
    Ok(())
}

proptest! {
    #![proptest_config(proptest_config())]

    /// Without thieves the LIFO queue is a stack of exactly `capacity` items.
    #[test]
    fn lifo_owner_alone_is_a_bounded_stack(config in geometry(), ops in ops(false)) {
        let (worker, _stealer) = lifo::new::<u32>(config);
        let mut model = Vec::new();
        for (next, op) in (0u32..).zip(ops) {
            match op {
                Op::Push => {
                    let pushed = worker.push(next);
                    if model.len() < config.capacity() {
                        prop_assert_eq!(pushed, Ok(()));
                        model.push(next);
                    } else {
                        prop_assert_eq!(pushed, Err(next));
                    }
                }
                _ => prop_assert_eq!(worker.pop(), model.pop()),
            }
            prop_assert_eq!(worker.is_empty(), model.is_empty());
        }
    }

    /// Without thieves the FIFO queue is a ring of blocks: a push fails only
    /// at a block boundary when the next block was not consumed yet.
    #[test]
    fn fifo_owner_alone_is_a_bounded_queue(config in geometry(), ops in ops(false)) {
        let (worker, _stealer) = fifo::new::<u32>(config);
        let mut model = VecDeque::new();
        let mut pushed_total = 0usize;
        let block = config.block_size();
        for (next, op) in (0u32..).zip(ops) {
            match op {
                Op::Push => {
                    let at_boundary = pushed_total > 0 && pushed_total.is_multiple_of(block);
                    let refused = at_boundary && model.len() > config.capacity() - block;
                    let pushed = worker.push(next);
                    if refused {
                        prop_assert_eq!(pushed, Err(next));
                    } else {
                        prop_assert_eq!(pushed, Ok(()));
                        model.push_back(next);
                        pushed_total += 1;
                    }
                }
                _ => prop_assert_eq!(worker.pop(), model.pop_front()),
            }
            prop_assert_eq!(worker.is_empty(), model.is_empty());
        }
    }

    /// With steals mixed in, the owner still pops the newest remaining item,
    /// thieves only get items that are in the queue, and nothing is lost.
    #[test]
    fn lifo_with_thieves_loses_nothing(config in geometry(), ops in ops(true)) {
        let (worker, stealer) = lifo::new::<u32>(config);
        let (thief, _) = lifo::new::<u32>(config);
        let mut model = Vec::new();
        let mut shared = false;
        for (next, op) in (0u32..).zip(ops) {
            match op {
                Op::Push => match worker.push(next) {
                    Ok(()) => model.push(next),
                    Err(back) => {
                        prop_assert_eq!(back, next);
                        // Sharing leaves entries unused for the rest of the
                        // round, so after a share only a non-empty queue is
                        // promised; otherwise the next block holds an item and
                        // the owner's block is full.
                        let least = if shared { 1 } else { config.block_size() + 1 };
                        prop_assert!(model.len() >= least, "refused with {} items", model.len());
                    }
                },
                Op::Pop => prop_assert_eq!(worker.pop(), model.pop()),
                Op::Share => {
                    let before = stealer.len();
                    shared = true;
                    if worker.share() {
                        prop_assert!(stealer.len() > before, "share opened nothing");
                        prop_assert_eq!(worker.private_len(), 0);
                        prop_assert!(worker.granted_pending(), "the shared items are pending");
                    }
                }
                Op::Steal => check_steal(stealer.steal(), &mut model)?,
                Op::StealSampled(sample) => check_steal(stealer.steal_sampled(sample), &mut model)?,
                Op::StealBatch if next % 2 == 0 => {
                    check_steal(stealer.steal_batch_and_pop(&thief), &mut model)?;
                    let mut moved = 0;
                    while let Some(item) = thief.pop() {
                        remove_from(&mut model, item)?;
                        moved += 1;
                    }
                    prop_assert!(moved < config.block_size());
                }
                Op::StealBatch => {
                    let before = stealer.len();
                    let stolen = stealer.steal_batch(&thief);
                    prop_assert_eq!(stolen.is_success(), before > 0);
                    prop_assert_eq!(thief.len(), before - stealer.len());
                    let mut moved = 0;
                    while let Some(item) = thief.pop() {
                        remove_from(&mut model, item)?;
                        moved += 1;
                    }
                    prop_assert!(moved <= config.block_size());
                }
            }
            prop_assert_eq!(worker.is_empty(), model.is_empty());
            prop_assert_eq!(worker.len(), model.len());
            prop_assert!(stealer.len() <= model.len());
            prop_assert!(worker.private_len() <= model.len().min(config.block_size()));
            if worker.granted_pending() {
                prop_assert!(!stealer.is_empty(), "pending items are stealable");
            }
        }
        while let Some(item) = worker.pop() {
            remove_from(&mut model, item)?;
        }
        prop_assert!(model.is_empty(), "left behind: {:?}", model);
    }

    /// With steals and shares mixed in, the owner still pops the oldest
    /// remaining item, a share makes exactly the owner's private items
    /// stealable, and nothing is lost: after a last share, thieves alone
    /// can take everything.
    #[test]
    fn fifo_with_thieves_loses_nothing(config in geometry(), ops in ops(true)) {
        let (worker, stealer) = fifo::new::<u32>(config);
        let (thief, _) = fifo::new::<u32>(config);
        let mut model = Vec::new();
        let mut pushed_total = 0usize;
        for (next, op) in (0u32..).zip(ops) {
            match op {
                Op::Push => match worker.push(next) {
                    Ok(()) => {
                        model.push(next);
                        pushed_total += 1;
                    }
                    Err(back) => {
                        prop_assert_eq!(back, next);
                        prop_assert!(pushed_total.is_multiple_of(config.block_size()), "refused inside a block");
                    }
                },
                Op::Share => {
                    let was_shared = worker.is_shared();
                    let private = worker.private_len();
                    let before = stealer.len();
                    let changed = worker.share();
                    prop_assert!(!(was_shared && changed), "shared twice");
                    prop_assert!(changed || private == 0, "kept {} items private", private);
                    prop_assert_eq!(worker.is_shared(), was_shared || changed);
                    prop_assert_eq!(worker.private_len(), 0);
                    prop_assert_eq!(stealer.len(), before + private);
                }
                Op::Pop => {
                    let oldest = (!model.is_empty()).then(|| model.remove(0));
                    prop_assert_eq!(worker.pop(), oldest);
                    prop_assert!(!worker.is_shared(), "a pop takes the block back");
                }
                Op::Steal => check_steal(stealer.steal(), &mut model)?,
                Op::StealSampled(sample) => check_steal(stealer.steal_sampled(sample), &mut model)?,
                Op::StealBatch if next % 2 == 0 => {
                    check_steal(stealer.steal_batch_and_pop(&thief), &mut model)?;
                    let mut moved = 0;
                    while let Some(item) = thief.pop() {
                        remove_from(&mut model, item)?;
                        moved += 1;
                    }
                    prop_assert!(moved < config.block_size());
                }
                Op::StealBatch => {
                    let before = stealer.len();
                    let stolen = stealer.steal_batch(&thief);
                    prop_assert_eq!(stolen.is_success(), before > 0);
                    prop_assert_eq!(thief.len(), before - stealer.len());
                    let mut moved = 0;
                    while let Some(item) = thief.pop() {
                        remove_from(&mut model, item)?;
                        moved += 1;
                    }
                    prop_assert!(moved <= config.block_size());
                }
            }
            prop_assert_eq!(worker.is_empty(), model.is_empty());
            prop_assert_eq!(worker.len(), model.len());
            prop_assert_eq!(stealer.len() + worker.private_len(), model.len());
            if worker.is_shared() {
                prop_assert_eq!(stealer.len(), model.len());
            }
        }
        // Thieves first: once shared, the owner's items are theirs too.
        worker.share();
        prop_assert_eq!(worker.private_len(), 0);
        loop {
            match stealer.steal() {
                Steal::Success(item) => remove_from(&mut model, item)?,
                Steal::Retry => return Err(TestCaseError::fail("Retry without contention")),
                Steal::Empty => break,
            }
        }
        prop_assert!(model.is_empty(), "thieves left behind: {:?}", model);
        prop_assert_eq!(worker.pop(), None);
        prop_assert!(worker.is_empty());
    }
}

fn check_steal(result: Steal<u32>, model: &mut Vec<u32>) -> Result<(), TestCaseError> {
    match result {
        Steal::Success(item) => remove_from(model, item),
        // Single-threaded, nobody can win a race against the thief.
        Steal::Retry => Err(TestCaseError::fail("Retry without contention")),
        Steal::Empty => Ok(()),
    }
}

/// A runtime shares one item at a time whenever a worker is hungry, and the
/// thief takes it: every cycle leaves a block partly unused for the round,
/// so the owner keeps moving up. Round control must see those blocks drained
/// and the queue must never report itself full.
#[test]
fn lifo_sharing_single_items_to_thieves_never_fills_up() {
    let config = Config::new(4, 8).unwrap();
    let (worker, stealer) = lifo::new::<u32>(config);
    for item in 0..20 * config.capacity() as u32 {
        assert_eq!(worker.push(item), Ok(()), "refused at item {item}");
        assert!(worker.share());
        assert!(worker.granted_pending());
        assert_eq!(stealer.steal().success(), Some(item));
        assert!(!worker.granted_pending());
        assert_eq!(worker.pop(), None);
        assert!(worker.is_empty());
    }
}

/// The owner shares and takes everything back itself, cycle after cycle:
/// it must find its items below and never report the queue full.
#[test]
fn lifo_sharing_and_taking_back_never_fills_up() {
    let config = Config::new(4, 8).unwrap();
    let (worker, stealer) = lifo::new::<u32>(config);
    for cycle in 0..20 * config.capacity() as u32 {
        let (first, second) = (2 * cycle, 2 * cycle + 1);
        assert_eq!(worker.push(first), Ok(()), "refused in cycle {cycle}");
        assert_eq!(worker.push(second), Ok(()), "refused in cycle {cycle}");
        assert!(worker.share());
        assert_eq!(worker.private_len(), 0);
        assert_eq!(worker.pop(), Some(second));
        assert_eq!(worker.pop(), Some(first));
        assert_eq!(worker.pop(), None);
        assert!(stealer.steal().is_empty());
    }
}

/// The geometries of the FIFO share tests: small, and starting in the last
/// rounds before the 40-bit round counter wraps.
fn fifo_share_configs() -> Vec<Config> {
    let mut configs = Vec::new();
    for (blocks, size) in [(2, 2), (2, 3), (3, 4), (4, 8)] {
        for first_round in [0, (1 << 40) - 2, (1 << 40) - 1] {
            configs.push(
                Config::new(blocks, size)
                    .unwrap()
                    .with_first_round(first_round),
            );
        }
    }
    configs
}

/// A runtime shares its consumer block before every poll and thieves take
/// what it shared: each cycle the owner pops one item and a thief the
/// other, across every block boundary and round wrap. The shared entries
/// must count as taken when the thief has them (or the producer could
/// never reuse the block: full) and thieves must get the items pushed into
/// a shared block the producer is still filling.
#[test]
fn fifo_sharing_to_thieves_never_fills_up() {
    for config in fifo_share_configs() {
        let (worker, stealer) = fifo::new::<u32>(config);
        let cycles = if cfg!(miri) { 3 } else { 20 } * config.capacity() as u32;
        for cycle in 0..cycles {
            let (first, second) = (2 * cycle, 2 * cycle + 1);
            assert_eq!(
                worker.push(first),
                Ok(()),
                "{config:?}: refused in cycle {cycle}"
            );
            assert_eq!(
                worker.push(second),
                Ok(()),
                "{config:?}: refused in cycle {cycle}"
            );
            assert_eq!(worker.pop(), Some(first), "{config:?}, cycle {cycle}");
            // `false` when `first` was the last entry of its block: then
            // `second` is in the producer's block, stealable anyway.
            worker.share();
            assert_eq!(worker.private_len(), 0, "{config:?}, cycle {cycle}");
            assert_eq!(stealer.len(), 1, "{config:?}, cycle {cycle}");
            assert_eq!(
                stealer.steal().success(),
                Some(second),
                "{config:?}, cycle {cycle}"
            );
            assert_eq!(worker.pop(), None, "{config:?}, cycle {cycle}");
            assert!(worker.is_empty(), "{config:?}, cycle {cycle}");
        }
    }
}

/// The owner shares and takes everything back itself, cycle after cycle:
/// the retake must restore exactly the owner's items, in order, and the
/// queue must never report itself full.
#[test]
fn fifo_sharing_and_taking_back_never_fills_up() {
    for config in fifo_share_configs() {
        let (worker, stealer) = fifo::new::<u32>(config);
        let cycles = if cfg!(miri) { 3 } else { 20 } * config.capacity() as u32;
        for cycle in 0..cycles {
            let items = [3 * cycle, 3 * cycle + 1, 3 * cycle + 2];
            for item in items {
                assert_eq!(
                    worker.push(item),
                    Ok(()),
                    "{config:?}: refused in cycle {cycle}"
                );
            }
            assert_eq!(worker.pop(), Some(items[0]), "{config:?}, cycle {cycle}");
            worker.share();
            assert_eq!(worker.private_len(), 0);
            assert_eq!(worker.len(), 2);
            assert_eq!(worker.pop(), Some(items[1]), "{config:?}, cycle {cycle}");
            assert!(!worker.is_shared());
            assert_eq!(worker.pop(), Some(items[2]), "{config:?}, cycle {cycle}");
            assert_eq!(worker.pop(), None, "{config:?}, cycle {cycle}");
            assert!(stealer.steal().is_empty());
        }
    }
}

/// The producer wraps around into the consumer block while it is shared:
/// it may reuse the block only once thieves took every shared item, and
/// then the consumer must not retake the block's new round.
#[test]
fn fifo_producer_reuses_a_shared_consumer_block_only_when_drained() {
    for first_round in [0, (1 << 40) - 2, (1 << 40) - 1] {
        let config = Config::new(2, 2).unwrap().with_first_round(first_round);
        let (worker, stealer) = fifo::new::<u32>(config);
        for item in 0..4 {
            worker.push(item).unwrap(); // [0 1] [2 3]
        }
        assert_eq!(worker.pop(), Some(0));
        assert!(worker.share()); // 1 goes back to thieves
        // Block 0 still holds 1: the producer may not reuse it.
        assert_eq!(worker.push(4), Err(4));
        assert!(worker.is_shared(), "a refused push changes nothing");
        assert_eq!(stealer.steal_sampled(0).success(), Some(1));
        // Now every entry of block 0 is accounted for.
        assert_eq!(worker.push(4), Ok(()));
        assert_eq!(worker.push(5), Ok(()));
        assert!(
            !worker.is_shared(),
            "the reset block is no longer the consumer's"
        );
        assert_eq!(worker.len(), 4);
        for item in 2..6 {
            assert_eq!(worker.pop(), Some(item), "first round {first_round}");
        }
        assert_eq!(worker.pop(), None);
        assert!(stealer.steal().is_empty());
    }
}

//! loom model: Work lists (`worklist/spill.rs`): no item is lost when a participant leaves.

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use super::builder;

/// Work lists (`worklist/spill.rs`): two participants, each with its own
/// LIFO queue of two one-item blocks (so pushes grant blocks at once and
/// the third item overflows to the spill); the owner seeds three items,
/// item 1 makes item 4, and each participant takes items (own queue, then
/// the spill, then one steal attempt on the other) until a look finds
/// nothing, then leaves — the thief possibly while the owner still pushes
/// or spills. Every item must have been processed exactly once when both
/// have left: none is stranded in a queue or in the spill.
#[test]
fn worklist_no_item_is_lost_when_a_participant_leaves() {
    use bwos_queue::{Config, Steal, lifo};

    use crate::worklist::spill::{Spill, next_item, push_or_spill};

    type Counts = Arc<[AtomicUsize; 5]>;

    fn process(item: u32, queue: &lifo::Worker<u32>, spill: &Spill<u32>, counts: &Counts) {
        counts[item as usize].fetch_add(1, Ordering::Relaxed);
        if item == 1 {
            push_or_spill(queue, spill, 4);
        }
    }

    fn participate(
        queue: &lifo::Worker<u32>,
        victim: &lifo::Stealer<u32>,
        spill: &Spill<u32>,
        counts: &Counts,
    ) {
        // A lost race counts as finding nothing: leaving then is allowed.
        let steal = |thief: &lifo::Worker<u32>| match victim.steal_batch_and_pop(thief) {
            Steal::Success(item) => Some(item),
            Steal::Empty | Steal::Retry => None,
        };
        while let Some(item) = next_item(queue, spill, steal) {
            process(item, queue, spill, counts);
        }
    }

    builder(3).check(|| {
        let config = Config::new(2, 1).unwrap();
        let (owner_queue, owner_stealer) = lifo::new::<u32>(config);
        let (thief_queue, thief_stealer) = lifo::new::<u32>(config);
        let spill = Arc::new(Spill::new());
        let counts: Counts = Arc::new(std::array::from_fn(|_| AtomicUsize::new(0)));
        for seed in 1..=3 {
            push_or_spill(&owner_queue, &spill, seed);
        }
        let thief = {
            let (spill, counts) = (spill.clone(), counts.clone());
            thread::spawn(move || participate(&thief_queue, &owner_stealer, &spill, &counts))
        };
        participate(&owner_queue, &thief_stealer, &spill, &counts);
        thief.join().unwrap();
        for item in 1..=4 {
            assert_eq!(
                counts[item].load(Ordering::Relaxed),
                1,
                "item {item} processed a wrong number of times"
            );
        }
        assert!(spill.is_empty());
        assert_eq!(owner_queue.pop(), None);
    });
}

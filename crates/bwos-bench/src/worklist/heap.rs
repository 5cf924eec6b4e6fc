//! The synthetic heaps of `bwos-bench worklist`: objects and their
//! references in compressed sparse rows, in four shapes.

use serde::Serialize;

/// The heap shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Shape {
    RandomGraph,
    WideTree,
    DeepTree,
    LinkedList,
}

impl Shape {
    pub const ALL: [Shape; 4] = [
        Shape::RandomGraph,
        Shape::WideTree,
        Shape::DeepTree,
        Shape::LinkedList,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Shape::RandomGraph => "random-graph",
            Shape::WideTree => "wide-tree",
            Shape::DeepTree => "deep-tree",
            Shape::LinkedList => "linked-list",
        }
    }
}

/// Objects and their references, in compressed sparse rows.
pub struct Heap {
    offsets: Vec<u32>,
    references: Vec<u32>,
    pub(super) roots: Vec<u32>,
}

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// A random permutation of `0..n` (Fisher-Yates).
fn permutation(n: usize, state: &mut u64) -> Vec<u32> {
    let mut ids: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        ids.swap(i, (xorshift(state) % (i as u64 + 1)) as usize);
    }
    ids
}

impl Heap {
    /// A heap of `objects` objects of `shape`.
    pub fn new(shape: Shape, objects: usize) -> Heap {
        let mut state = 0x2545_F491_4F6C_DD1D_u64;
        // Children lists by object, in the order objects are built.
        let mut children: Vec<Vec<u32>> = vec![Vec::new(); objects];
        let roots: Vec<u32> = match shape {
            Shape::RandomGraph => {
                for list in &mut children {
                    let count = 2 + xorshift(&mut state) % 3;
                    for _ in 0..count {
                        list.push((xorshift(&mut state) % objects as u64) as u32);
                    }
                }
                (0..16)
                    .map(|_| (xorshift(&mut state) % objects as u64) as u32)
                    .collect()
            }
            Shape::WideTree | Shape::DeepTree => {
                // Breadth-first numbering: node `next` is the next child.
                let mut next = 1usize;
                for (node, list) in children.iter_mut().enumerate() {
                    let fan_out = match shape {
                        Shape::WideTree => 64,
                        // A binary tree of depth 6, then one chain per leaf.
                        _ if node < 63 => 2,
                        _ => 1,
                    };
                    for _ in 0..fan_out {
                        if next >= objects {
                            break;
                        }
                        list.push(next as u32);
                        next += 1;
                    }
                }
                vec![0]
            }
            Shape::LinkedList => {
                for (node, list) in children.iter_mut().enumerate().take(objects - 1) {
                    list.push(node as u32 + 1);
                }
                vec![0]
            }
        };
        // Shuffle the ids of graphs and lists: no locality to lean on.
        let rename: Vec<u32> = if matches!(shape, Shape::RandomGraph | Shape::LinkedList) {
            permutation(objects, &mut state)
        } else {
            (0..objects as u32).collect()
        };
        let mut by_new_id: Vec<Vec<u32>> = vec![Vec::new(); objects];
        for (old, list) in children.into_iter().enumerate() {
            by_new_id[rename[old] as usize] =
                list.into_iter().map(|c| rename[c as usize]).collect();
        }
        let mut offsets = Vec::with_capacity(objects + 1);
        let mut references = Vec::new();
        offsets.push(0);
        for list in by_new_id {
            references.extend(list);
            offsets.push(references.len() as u32);
        }
        Heap {
            offsets,
            references,
            roots: roots.into_iter().map(|r| rename[r as usize]).collect(),
        }
    }

    pub fn objects(&self) -> usize {
        self.offsets.len() - 1
    }

    pub(super) fn references(&self, object: u32) -> &[u32] {
        let o = object as usize;
        &self.references[self.offsets[o] as usize..self.offsets[o + 1] as usize]
    }
}

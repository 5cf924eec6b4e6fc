//! The trees `bwos-bench small` sums: array-backed (nodes in one `Vec`,
//! children by index) and boxed (each node its own allocation, children
//! behind `Option<Box<..>>`, as a program's pointer tree), balanced or
//! skewed. Every sum forks with one `join` per node, leaves included (their
//! two halves are empty), as a recursive program written against `join`
//! does: the work per node is an addition, so what is measured is the
//! runtime's cost of a `join` against the serial call.

use std::hint::black_box;

use serde::Serialize;

use crate::forkjoin::runtime::ForkJoin;

/// How the nodes of a tree are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Storage {
    /// One `Vec` of nodes in preorder, children by index.
    Array,
    /// One heap allocation per node, children behind `Option<Box<..>>`.
    Boxed,
}

/// How the nodes of a tree are split between the subtrees of each node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// Halves (a perfect tree for 2^k - 1 nodes).
    Balanced,
    /// Seven eighths of the nodes below each node on the left, one eighth
    /// on the right: a thief that takes a right half gets little work,
    /// and the tree is about 4x deeper than a balanced one.
    Skewed,
}

impl Storage {
    pub const ALL: [Storage; 2] = [Storage::Array, Storage::Boxed];

    pub fn name(self) -> &'static str {
        match self {
            Storage::Array => "array",
            Storage::Boxed => "boxed",
        }
    }
}

impl Shape {
    pub const ALL: [Shape; 2] = [Shape::Balanced, Shape::Skewed];

    pub fn name(self) -> &'static str {
        match self {
            Shape::Balanced => "balanced",
            Shape::Skewed => "skewed",
        }
    }

    /// The nodes of the left subtree of a node with `below` nodes under it.
    fn left_size(self, below: usize) -> usize {
        match self {
            Shape::Balanced => below / 2,
            Shape::Skewed => below - below / 8,
        }
    }
}

/// Index of a missing child in an [`ArrayTree`].
const NONE: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct ArrayNode {
    value: u64,
    left: u32,
    right: u32,
}

/// A tree whose nodes sit in one `Vec`, in preorder; node 0 is the root.
pub struct ArrayTree {
    nodes: Vec<ArrayNode>,
}

/// A node of a boxed tree.
pub struct BoxNode {
    value: u64,
    left: Option<Box<BoxNode>>,
    right: Option<Box<BoxNode>>,
}

/// A tree to sum, in either storage.
pub enum Tree {
    Array(ArrayTree),
    Boxed(Option<Box<BoxNode>>),
}

impl Tree {
    /// A tree of `nodes` nodes in `storage` and `shape`; node `i` in
    /// preorder holds `i`, so the sum is `nodes * (nodes - 1) / 2`.
    pub fn new(storage: Storage, shape: Shape, nodes: usize) -> Tree {
        let mut next = 0;
        match storage {
            Storage::Array => {
                let mut tree = ArrayTree {
                    nodes: Vec::with_capacity(nodes),
                };
                build_array(&mut tree.nodes, shape, nodes);
                Tree::Array(tree)
            }
            Storage::Boxed => Tree::Boxed(build_boxed(&mut next, shape, nodes)),
        }
    }

    /// The sum every runtime must return.
    pub fn expected(&self) -> u64 {
        let nodes = match self {
            Tree::Array(tree) => tree.nodes.len() as u64,
            Tree::Boxed(root) => count_boxed(root.as_deref()),
        };
        nodes * nodes.saturating_sub(1) / 2
    }

    /// The sum on `R`, one `join` per node.
    pub fn sum<R: ForkJoin>(&self, ctx: &mut R::Ctx<'_>) -> u64 {
        match self {
            Tree::Array(tree) if tree.nodes.is_empty() => 0,
            Tree::Array(tree) => sum_array::<R>(black_box(&tree.nodes), 0, ctx),
            Tree::Boxed(root) => black_box(root.as_deref()).map_or(0, |n| sum_boxed::<R>(n, ctx)),
        }
    }

    /// The deepest path's node count.
    #[cfg(test)]
    pub fn depth(&self) -> usize {
        fn array(nodes: &[ArrayNode], i: u32) -> usize {
            if i == NONE {
                return 0;
            }
            let node = nodes[i as usize];
            1 + array(nodes, node.left).max(array(nodes, node.right))
        }
        fn boxed(node: Option<&BoxNode>) -> usize {
            node.map_or(0, |n| {
                1 + boxed(n.left.as_deref()).max(boxed(n.right.as_deref()))
            })
        }
        match self {
            Tree::Array(tree) if tree.nodes.is_empty() => 0,
            Tree::Array(tree) => array(&tree.nodes, 0),
            Tree::Boxed(root) => boxed(root.as_deref()),
        }
    }
}

/// Appends a subtree of `nodes` nodes in preorder; returns its root's
/// index ([`NONE`] if empty).
fn build_array(out: &mut Vec<ArrayNode>, shape: Shape, nodes: usize) -> u32 {
    if nodes == 0 {
        return NONE;
    }
    let index = out.len();
    out.push(ArrayNode {
        value: index as u64,
        left: NONE,
        right: NONE,
    });
    let left_size = shape.left_size(nodes - 1);
    let left = build_array(out, shape, left_size);
    let right = build_array(out, shape, nodes - 1 - left_size);
    out[index].left = left;
    out[index].right = right;
    index as u32
}

/// A boxed subtree of `nodes` nodes, allocated in preorder from `next`.
fn build_boxed(next: &mut u64, shape: Shape, nodes: usize) -> Option<Box<BoxNode>> {
    if nodes == 0 {
        return None;
    }
    let value = *next;
    *next += 1;
    let left_size = shape.left_size(nodes - 1);
    let left = build_boxed(next, shape, left_size);
    let right = build_boxed(next, shape, nodes - 1 - left_size);
    Some(Box::new(BoxNode { value, left, right }))
}

fn count_boxed(node: Option<&BoxNode>) -> u64 {
    node.map_or(0, |n| {
        1 + count_boxed(n.left.as_deref()) + count_boxed(n.right.as_deref())
    })
}

fn sum_array<R: ForkJoin>(nodes: &[ArrayNode], index: u32, ctx: &mut R::Ctx<'_>) -> u64 {
    let node = nodes[index as usize];
    let child = |child: u32, ctx: &mut R::Ctx<'_>| {
        if child == NONE {
            0
        } else {
            sum_array::<R>(nodes, child, ctx)
        }
    };
    let (left, right) = R::join(
        ctx,
        |ctx| child(node.left, ctx),
        |ctx| child(node.right, ctx),
    );
    node.value + left + right
}

fn sum_boxed<R: ForkJoin>(node: &BoxNode, ctx: &mut R::Ctx<'_>) -> u64 {
    let child = |child: Option<&BoxNode>, ctx: &mut R::Ctx<'_>| {
        child.map_or(0, |child| sum_boxed::<R>(child, ctx))
    };
    let (left, right) = R::join(
        ctx,
        |ctx| child(node.left.as_deref(), ctx),
        |ctx| child(node.right.as_deref(), ctx),
    );
    node.value + left + right
}

impl Drop for BoxNode {
    /// Iterative, so that dropping a deep tree cannot overflow the stack.
    fn drop(&mut self) {
        let mut pending: Vec<Box<BoxNode>> = self.left.take().into_iter().collect();
        pending.extend(self.right.take());
        while let Some(mut node) = pending.pop() {
            pending.extend(node.left.take());
            pending.extend(node.right.take());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forkjoin::runtime::{Bwos, Chili, Rayon, Serial};

    #[test]
    fn every_tree_has_its_nodes_and_sums_to_the_same_on_every_runtime() {
        for storage in Storage::ALL {
            for shape in Shape::ALL {
                for nodes in [0, 1, 2, 255, 1_023] {
                    let tree = Tree::new(storage, shape, nodes);
                    let expected = (nodes * nodes.saturating_sub(1) / 2) as u64;
                    assert_eq!(tree.expected(), expected);
                    let what = format!("{} {} {nodes}", storage.name(), shape.name());
                    assert_eq!(
                        Serial::run(&(), |ctx| tree.sum::<Serial>(ctx)),
                        expected,
                        "{what}"
                    );
                    let bwos = Bwos::build(2);
                    assert_eq!(
                        Bwos::run(&bwos, |ctx| tree.sum::<Bwos>(ctx)),
                        expected,
                        "{what}"
                    );
                    let rayon = Rayon::build(2);
                    assert_eq!(
                        Rayon::run(&rayon, |ctx| tree.sum::<Rayon>(ctx)),
                        expected,
                        "{what}"
                    );
                    let chili = Chili::build(2);
                    assert_eq!(
                        Chili::run(&chili, |ctx| tree.sum::<Chili>(ctx)),
                        expected,
                        "{what}"
                    );
                }
            }
        }
    }

    #[test]
    fn balanced_trees_are_perfect_and_skewed_ones_deeper() {
        for storage in Storage::ALL {
            assert_eq!(Tree::new(storage, Shape::Balanced, 1_023).depth(), 10);
            let skewed = Tree::new(storage, Shape::Skewed, 1_023).depth();
            assert!((30..=80).contains(&skewed), "skewed depth {skewed}");
        }
    }
}

//! A randomized test of the async executor: proptest generates programs
//! over its whole surface, runs each on a fresh pool, and checks every
//! outcome against a sequential reference interpreter.
//!
//! # Programs
//! A program ([`Program`]) is a tree of task bodies ([`Task`]): each body
//! runs a list of [`Step`]s, then returns its output or panics ([`End`]).
//! Steps yield, sleep (`bwos::time::sleep`), wait for a gate that a plain
//! thread opens (a wake-up from outside the pool, by value, by reference or
//! twice), wait for a gate under `bwos::time::timeout`, spawn and abort a
//! task that never finishes on its own, spawn a child task
//! (`task::spawn`), run a closure with `task::spawn_blocking` (whose
//! closure may itself `block_on` child tasks), spawn a `JoinSet` and drain,
//! abort, shut down or drop it, `block_on` children inside the task (a
//! worker runs pool work while it waits: allowed and documented), or await
//! the handles kept so far. What a spawner does with a `JoinHandle` is its
//! [`Fate`]: await it, abort it (at once or later), keep it for later, or
//! drop it (the task is detached). The test thread spawns root tasks with
//! `ThreadPool::spawn_task`, runs the main body with `ThreadPool::block_on`
//! (it resolves the roots' handles at its end), checks that the pool still
//! runs a trivial task, then spawns the leftovers, drops the pool while
//! they are pending (the gates they wait for stay closed until 1 ms after
//! the drop began), and awaits their handles from the test thread.
//! Pools have 1 to 4 workers, with random idle and steal policies and
//! blocking-thread limits.
//!
//! # What is allowed ([`reference`])
//! Every task and blocking closure gets an id (pre-order: the main body is
//! #0; failure messages print the numbered program). Its natural outcome
//! is its output (`Value(id)`) or, if its body panics, a `JoinError` that
//! `is_panic` with the task's own payload (`Panic(id)`). A handle may
//! instead report `is_cancelled` only if it was aborted (`Abort`,
//! `AbortLater`, a `JoinSet` that was aborted, shut down or dropped) or the
//! task belongs to the leftovers (its pool was dropped): an aborted task
//! that finished first, or whose running poll completed it, returns its
//! natural outcome. A task that is spawned in every run and nothing may
//! cancel (no abort on its edge, not a leftover, and for `JoinSet` members
//! a parent that cannot be cancelled either) must run to its end. A task
//! that waits forever (`Step::Forever`, aborted right after its spawn)
//! must report cancellation: only the abort can end it.
//!
//! # What is checked
//! * Each handle resolves to an allowed outcome, carrying the right id
//!   (outputs and panic payloads are tagged), exactly once; a `JoinSet`
//!   returns each member once; a handle that reported cancellation belongs
//!   to a task that did not finish.
//! * Drop counting: every future (and blocking closure), every output and
//!   every panic payload is dropped exactly once (per-case counters, read
//!   after the pool is gone and the counters have settled).
//! * No hang: each case runs under `bwos_testkit::watchdog`, and on a
//!   thread of its own that must not stand still for [`hang_limit`] (a
//!   hang is a proptest failure, shrunk like any other, with a list of the
//!   tasks still alive).
//! * The pool runs a trivial task after each main program.
//! * No panic other than the programs' own (a panic hook collects them).
//!
//! # Running it
//! `cargo test -p bwos --test executor_fuzz` runs [`DEFAULT_CASES`] random
//! programs (35 s in the debug profile on a loaded 2-core machine). Set
//! `BWOS_FUZZ_CASES` for more (or fewer), e.g.
//! `BWOS_FUZZ_CASES=20000 cargo test -p bwos --release --test
//! executor_fuzz`. A failure is shrunk to a small program, printed by
//! proptest (`Debug`) and, numbered, in the failure message; no
//! regression file is written (add the shrunk program as a plain `#[test]`
//! below, as [`regression_cases`] does). A failure that depends on timing
//! may stop reproducing while it shrinks: `BWOS_FUZZ_REPEAT=20` runs each
//! program 20 times, so that it keeps failing and shrinks further. A hang
//! is detected after `BWOS_FUZZ_HANG_SECS` (default 60) without progress;
//! on a quiet machine `BWOS_FUZZ_HANG_SECS=5` shrinks a hang much faster.

#![cfg(not(bwos_loom))]

use std::any::Any;
use std::fmt::Write as _;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once, PoisonError, mpsc};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use bwos::task::{self, JoinError, JoinHandle, JoinSet};
use bwos::{IdlePolicy, StealBatch, StealPolicy, ThreadPool, ThreadPoolBuilder};
use bwos_testkit::watchdog;
use proptest::prelude::*;
use proptest::strategy::Union;
use proptest::test_runner::TestCaseError;

/// Random programs per run unless `BWOS_FUZZ_CASES` says otherwise.
const DEFAULT_CASES: u32 = 6000;

/// The environment variable that sets the number of random programs.
const CASES_ENV: &str = "BWOS_FUZZ_CASES";

/// The environment variable that runs each program this many times
/// (default 1): a failure that depends on timing then reproduces while
/// proptest shrinks it, so it shrinks further.
const REPEAT_ENV: &str = "BWOS_FUZZ_REPEAT";

/// The environment variable that sets [`hang_limit`] in seconds (default
/// [`DEFAULT_HANG_SECS`]). A hung case costs this much per shrinking
/// step: on a quiet machine, 5 shrinks a hang within minutes.
const HANG_ENV: &str = "BWOS_FUZZ_HANG_SECS";

/// A whole case takes milliseconds, but on a 2-core machine overloaded by
/// spinning benchmarks a thread was seen to wait 3 to 5 s for a core (or
/// to start): the default leaves a wide margin above that.
const DEFAULT_HANG_SECS: u32 = 60;

/// How long a case may make no progress (no future or output made or
/// dropped, no handle resolved, no new phase) before it counts as hung.
fn hang_limit() -> Duration {
    Duration::from_secs(env_number(HANG_ENV, DEFAULT_HANG_SECS).into())
}

/// How long the counters may stand still, not yet balanced, after a
/// phase before the case fails: the runtime finishes detached tasks and
/// drops outputs concurrently, but never pauses this long. Shorter than
/// [`hang_limit`], so that its more precise message comes first.
fn settle_limit() -> Duration {
    hang_limit() / 2
}

// ---------------------------------------------------------------------
// Programs, as proptest generates (and shrinks) them.
// ---------------------------------------------------------------------

/// What a spawner does with the `JoinHandle` it gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    /// Await it at once.
    Await,
    /// Await it through `&mut`, then check `is_finished` and `abort` the
    /// finished task (no effect), then drop the handle.
    AwaitThenAbort,
    /// Drop it at once: the task is detached and runs to its end.
    Detach,
    /// Abort, then await it.
    Abort,
    /// Keep it; await it at the next `Resolve` step or the body's end.
    Later,
    /// Keep it; abort and await it at the next `Resolve` or the end.
    AbortLater,
}

impl Fate {
    fn aborts(self) -> bool {
        matches!(self, Fate::Abort | Fate::AbortLater)
    }
}

/// What a body does with its `JoinSet` after spawning the members.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SetMode {
    /// `join_next` until `None`.
    Drain,
    /// `abort_all`, then drain.
    AbortAll,
    /// `shutdown().await`.
    Shutdown,
    /// One `join_next`, then drop the set (aborting the rest).
    DrainOneThenDrop,
    /// Drop the set at once (aborting every member).
    Drop,
}

/// How the plain thread opens a gate.
#[derive(Clone, Copy, Debug)]
enum Fire {
    /// `Waker::wake`.
    Wake,
    /// `Waker::wake_by_ref`, then drop the waker.
    WakeByRef,
    /// Two wake-ups: a clone's `wake_by_ref`, then `wake`.
    Twice,
    /// `thread::yield_now`, then `wake`.
    AfterYield,
    /// Sleep a little, then `wake`.
    AfterPause { micros: u16 },
}

/// How a body ends, once its steps ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// Await the kept handles, return the output.
    Return,
    /// Await the kept handles, panic (the output is the payload).
    Panic,
    /// Panic at once: the kept handles are dropped (detached) unawaited.
    PanicEarly,
}

/// One step of a body.
#[derive(Clone, Debug)]
enum Step {
    /// `task::yield_now`.
    Yield,
    /// `time::sleep`.
    Sleep { ms: u8 },
    /// Wait for a gate that the plain thread opens.
    Gate(Fire),
    /// Wait for a gate under `time::timeout` (either may win).
    Timeout { ms: u8, fire: Fire },
    /// `task::spawn` a child.
    Spawn(Task, Fate),
    /// `task::spawn_blocking` a closure that `block_on`s `nested` (if
    /// any), then returns or panics.
    Blocking {
        panics: bool,
        nested: Vec<(Task, Fate)>,
        fate: Fate,
    },
    /// Spawn the tasks into a `JoinSet`.
    Set(Vec<Task>, SetMode),
    /// `bwos::block_on` inside the poll: spawn the children, dispose of
    /// their handles, await the kept ones.
    BlockOn(Vec<(Task, Fate)>),
    /// Await (or abort and await) the handles kept so far.
    Resolve,
    /// Spawn a task that never finishes on its own, abort it at once and
    /// await it: only the abort can end it.
    Forever,
}

/// A task body.
#[derive(Clone, Debug)]
struct Task {
    steps: Vec<Step>,
    end: End,
}

/// What the test thread does with a leftover's handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LeftFate {
    /// Await it after the pool is gone.
    Keep,
    /// Drop it at once.
    Detach,
    /// Abort it at once, await it after the pool is gone.
    Abort,
}

/// The pool a program runs on.
#[derive(Clone, Debug)]
struct PoolConfig {
    threads: usize,
    idle: IdlePolicy,
    steal: StealPolicy,
    batch: StealBatch,
    detach_on_drop: bool,
    /// Ignored (the default, 512, is used) if a blocking closure's nested
    /// program spawns blocking closures itself: with a small limit those
    /// could wait for a thread that their own ancestor holds.
    max_blocking: usize,
}

/// A whole case.
#[derive(Clone, Debug)]
struct Program {
    pool: PoolConfig,
    /// Spawned with `ThreadPool::spawn_task` before `main` runs; `main`
    /// disposes of their handles after its steps.
    roots: Vec<(Task, Fate)>,
    /// Run with `ThreadPool::block_on` on the test thread.
    main: Task,
    /// Spawned after the main phase; the pool is dropped while they run.
    leftovers: Vec<(Task, LeftFate)>,
    /// Yield the test thread before dropping the pool (lets some
    /// leftovers start).
    settle: bool,
}

// ---------------------------------------------------------------------
// Strategies.
// ---------------------------------------------------------------------

fn fate() -> impl Strategy<Value = Fate> {
    prop_oneof![
        3 => Just(Fate::Await),
        1 => Just(Fate::AwaitThenAbort),
        2 => Just(Fate::Detach),
        2 => Just(Fate::Abort),
        2 => Just(Fate::Later),
        1 => Just(Fate::AbortLater),
    ]
}

fn set_mode() -> impl Strategy<Value = SetMode> {
    prop_oneof![
        Just(SetMode::Drain),
        Just(SetMode::AbortAll),
        Just(SetMode::Shutdown),
        Just(SetMode::DrainOneThenDrop),
        Just(SetMode::Drop),
    ]
}

fn fire() -> impl Strategy<Value = Fire> {
    prop_oneof![
        Just(Fire::Wake),
        Just(Fire::WakeByRef),
        Just(Fire::Twice),
        Just(Fire::AfterYield),
        (10u16..300).prop_map(|micros| Fire::AfterPause { micros }),
    ]
}

fn end() -> impl Strategy<Value = End> {
    prop_oneof![
        6 => Just(End::Return),
        2 => Just(End::Panic),
        1 => Just(End::PanicEarly),
    ]
}

fn leaf_step() -> BoxedStrategy<Step> {
    prop_oneof![
        3 => Just(Step::Yield),
        1 => (0u8..=2).prop_map(|ms| Step::Sleep { ms }),
        3 => fire().prop_map(Step::Gate),
        1 => (0u8..=2, fire()).prop_map(|(ms, fire)| Step::Timeout { ms, fire }),
        1 => (any::<bool>(), fate()).prop_map(|(panics, fate)| Step::Blocking {
            panics,
            nested: Vec::new(),
            fate,
        }),
        1 => Just(Step::Forever),
    ]
    .boxed()
}

/// Task bodies up to three levels of spawning deep. `nested_blocking`:
/// whether blocking closures may `block_on` child tasks.
fn task(nested_blocking: bool) -> BoxedStrategy<Task> {
    let leaf = (prop::collection::vec(leaf_step(), 0..3), end())
        .prop_map(|(steps, end)| Task { steps, end });
    leaf.prop_recursive(4, 128, 6, move |inner| {
        let children = || prop::collection::vec((inner.clone(), fate()), 1..3);
        let mut arms: Vec<(u32, BoxedStrategy<Step>)> = vec![
            (5, leaf_step()),
            (
                5,
                (inner.clone(), fate())
                    .prop_map(|(task, fate)| Step::Spawn(task, fate))
                    .boxed(),
            ),
            (
                1,
                (prop::collection::vec(inner.clone(), 1..4), set_mode())
                    .prop_map(|(tasks, mode)| Step::Set(tasks, mode))
                    .boxed(),
            ),
            (1, children().prop_map(Step::BlockOn).boxed()),
            (1, Just(Step::Resolve).boxed()),
        ];
        if nested_blocking {
            arms.push((
                1,
                (any::<bool>(), children(), fate())
                    .prop_map(|(panics, nested, fate)| Step::Blocking {
                        panics,
                        nested,
                        fate,
                    })
                    .boxed(),
            ));
        }
        (
            prop::collection::vec(Union::new_weighted(arms), 0..5),
            end(),
        )
            .prop_map(|(steps, end)| Task { steps, end })
    })
    .boxed()
}

fn pool_config() -> impl Strategy<Value = PoolConfig> {
    (
        1usize..=4,
        prop_oneof![Just(IdlePolicy::Park), Just(IdlePolicy::Balanced)],
        prop_oneof![
            Just(StealPolicy::Random),
            Just(StealPolicy::Sequential),
            Just(StealPolicy::LastVictim),
            Just(StealPolicy::BestOfTwo),
        ],
        prop_oneof![Just(StealBatch::One), Just(StealBatch::Block)],
        any::<bool>(),
        1usize..=3,
    )
        .prop_map(
            |(threads, idle, steal, batch, detach_on_drop, max_blocking)| PoolConfig {
                threads,
                idle,
                steal,
                batch,
                detach_on_drop,
                max_blocking,
            },
        )
}

fn left_fate() -> impl Strategy<Value = LeftFate> {
    prop_oneof![
        Just(LeftFate::Keep),
        Just(LeftFate::Detach),
        Just(LeftFate::Abort)
    ]
}

fn program() -> impl Strategy<Value = Program> {
    (
        pool_config(),
        prop::collection::vec((task(true), fate()), 0..4),
        task(true),
        // Leftovers' blocking closures spawn nothing: a `block_on` on a
        // blocking thread of a dropped pool would wait for timers that
        // nobody drives any more (documented: a `Sleep` of a dropped pool
        // only ends when polled).
        prop::collection::vec((task(false), left_fate()), 0..4),
        any::<bool>(),
    )
        .prop_map(|(pool, roots, main, leftovers, settle)| Program {
            pool,
            roots,
            main,
            leftovers,
            settle,
        })
}

// ---------------------------------------------------------------------
// The numbered program: what runs.
// ---------------------------------------------------------------------

/// A task body with its id.
struct Node {
    id: usize,
    steps: Vec<NStep>,
    end: End,
}

/// A blocking closure with its id.
struct BlockingNode {
    id: usize,
    panics: bool,
    nested: Vec<(Arc<Node>, Fate)>,
}

/// [`Step`] with ids.
enum NStep {
    Yield,
    Sleep(u8),
    Gate(Fire),
    Timeout(u8, Fire),
    Spawn(Arc<Node>, Fate),
    Blocking(Arc<BlockingNode>, Fate),
    Set(Vec<Arc<Node>>, SetMode),
    BlockOn(Vec<(Arc<Node>, Fate)>),
    Resolve,
    /// The id of the task that never finishes.
    Forever(usize),
}

struct Tree {
    main: Arc<Node>,
    roots: Vec<(Arc<Node>, Fate)>,
    leftovers: Vec<(Arc<Node>, LeftFate)>,
    /// How many ids.
    len: usize,
}

/// Numbers the program's tasks and closures in pre-order: main, roots,
/// leftovers.
fn number(program: &Program) -> Tree {
    fn number_task(task: &Task, next: &mut usize) -> Arc<Node> {
        let id = *next;
        *next += 1;
        let steps = task
            .steps
            .iter()
            .map(|step| number_step(step, next))
            .collect();
        Arc::new(Node {
            id,
            steps,
            end: task.end,
        })
    }
    fn number_children(list: &[(Task, Fate)], next: &mut usize) -> Vec<(Arc<Node>, Fate)> {
        list.iter()
            .map(|(child, fate)| (number_task(child, next), *fate))
            .collect()
    }
    fn number_step(step: &Step, next: &mut usize) -> NStep {
        match step {
            Step::Yield => NStep::Yield,
            Step::Sleep { ms } => NStep::Sleep(*ms),
            Step::Gate(fire) => NStep::Gate(*fire),
            Step::Timeout { ms, fire } => NStep::Timeout(*ms, *fire),
            Step::Spawn(child, fate) => NStep::Spawn(number_task(child, next), *fate),
            Step::Blocking {
                panics,
                nested,
                fate,
            } => {
                let id = *next;
                *next += 1;
                let nested = number_children(nested, next);
                NStep::Blocking(
                    Arc::new(BlockingNode {
                        id,
                        panics: *panics,
                        nested,
                    }),
                    *fate,
                )
            }
            Step::Set(members, mode) => NStep::Set(
                members
                    .iter()
                    .map(|member| number_task(member, next))
                    .collect(),
                *mode,
            ),
            Step::BlockOn(list) => NStep::BlockOn(number_children(list, next)),
            Step::Resolve => NStep::Resolve,
            Step::Forever => {
                let id = *next;
                *next += 1;
                NStep::Forever(id)
            }
        }
    }
    let mut next = 0;
    let main = number_task(&program.main, &mut next);
    let roots = number_children(&program.roots, &mut next);
    let leftovers = program
        .leftovers
        .iter()
        .map(|(left, fate)| (number_task(left, &mut next), *fate))
        .collect();
    Tree {
        main,
        roots,
        leftovers,
        len: next,
    }
}

/// Whether a blocking closure's nested program spawns blocking closures.
fn nests_blocking(program: &Program) -> bool {
    fn has_blocking(task: &Task) -> bool {
        task.steps.iter().any(|step| match step {
            Step::Blocking { .. } => true,
            Step::Spawn(child, _) => has_blocking(child),
            Step::Set(members, _) => members.iter().any(has_blocking),
            Step::BlockOn(list) => list.iter().any(|(child, _)| has_blocking(child)),
            _ => false,
        })
    }
    fn nests(task: &Task) -> bool {
        task.steps.iter().any(|step| match step {
            Step::Blocking { nested, .. } => nested
                .iter()
                .any(|(child, _)| has_blocking(child) || nests(child)),
            Step::Spawn(child, _) => nests(child),
            Step::Set(members, _) => members.iter().any(nests),
            Step::BlockOn(list) => list.iter().any(|(child, _)| nests(child)),
            _ => false,
        })
    }
    nests(&program.main)
        || program.roots.iter().any(|(root, _)| nests(root))
        || program.leftovers.iter().any(|(left, _)| nests(left))
}

/// The numbered program, one line per step, for failure messages.
fn dump(tree: &Tree) -> String {
    fn write_node(out: &mut String, node: &Node, depth: usize, how: &str) {
        let _ = writeln!(
            out,
            "{:indent$}#{} {how}-> {:?}",
            "",
            node.id,
            node.end,
            indent = depth * 2
        );
        for step in &node.steps {
            let pad = (depth + 1) * 2;
            match step {
                NStep::Yield => {
                    let _ = writeln!(out, "{:pad$}yield", "");
                }
                NStep::Sleep(ms) => {
                    let _ = writeln!(out, "{:pad$}sleep {ms} ms", "");
                }
                NStep::Gate(fire) => {
                    let _ = writeln!(out, "{:pad$}gate {fire:?}", "");
                }
                NStep::Timeout(ms, fire) => {
                    let _ = writeln!(out, "{:pad$}timeout {ms} ms (gate {fire:?})", "");
                }
                NStep::Spawn(child, fate) => {
                    write_node(out, child, depth + 1, &format!("spawn {fate:?} "));
                }
                NStep::Blocking(closure, fate) => {
                    let _ = writeln!(
                        out,
                        "{:pad$}#{} spawn_blocking {fate:?} -> {}",
                        "",
                        closure.id,
                        if closure.panics { "Panic" } else { "Return" }
                    );
                    for (child, fate) in &closure.nested {
                        write_node(out, child, depth + 2, &format!("block_on spawn {fate:?} "));
                    }
                }
                NStep::Set(members, mode) => {
                    let _ = writeln!(out, "{:pad$}join set {mode:?}:", "");
                    for member in members {
                        write_node(out, member, depth + 2, "member ");
                    }
                }
                NStep::BlockOn(children) => {
                    let _ = writeln!(out, "{:pad$}block_on:", "");
                    for (child, fate) in children {
                        write_node(out, child, depth + 2, &format!("spawn {fate:?} "));
                    }
                }
                NStep::Resolve => {
                    let _ = writeln!(out, "{:pad$}resolve kept handles", "");
                }
                NStep::Forever(id) => {
                    let _ = writeln!(out, "{:pad$}#{id} spawn (pending forever) Abort", "");
                }
            }
        }
    }
    let mut out = String::new();
    write_node(&mut out, &tree.main, 0, "main (block_on) ");
    for (root, fate) in &tree.roots {
        write_node(&mut out, root, 0, &format!("root spawn_task {fate:?} "));
    }
    for (left, fate) in &tree.leftovers {
        write_node(&mut out, left, 0, &format!("leftover {fate:?} "));
    }
    out
}

// ---------------------------------------------------------------------
// The reference interpreter.
// ---------------------------------------------------------------------

/// What a handle returns, by the task's id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Value(usize),
    Panic(usize),
    Cancelled,
}

/// What the reference allows for one id.
#[derive(Clone, Debug)]
struct Expect {
    /// The outcome of running the body to its end (`Cancelled` for a task
    /// that never ends on its own).
    natural: Outcome,
    /// Whether the handle (or `JoinSet`) that resolves it may report
    /// cancellation instead.
    handle_may_cancel: bool,
    /// Whether the task is spawned in every run.
    must_spawn: bool,
    /// Whether it runs to its end in every run (spawned, and nothing may
    /// cancel it).
    must_finish: bool,
}

/// The edge through which a task is spawned.
#[derive(Clone, Copy)]
struct Edge {
    must_spawn: bool,
    /// Something may cancel the task (an abort, a set dropped with its
    /// cancelled parent, the pool's drop).
    cancellable: bool,
    /// The handle that resolves it may see the cancellation: at that
    /// point the resolving parent runs, so only its own aborts count.
    handle_may_cancel: bool,
    leftover: bool,
}

/// Walks the program sequentially and says, for every id, which
/// outcomes its handle may return and whether it must run to its end.
fn reference(tree: &Tree) -> Vec<Expect> {
    fn put(expect: &mut [Option<Expect>], id: usize, natural: Outcome, edge: Edge) -> bool {
        let must_finish = edge.must_spawn && !edge.cancellable;
        assert!(expect[id].is_none(), "id {id} numbered twice");
        expect[id] = Some(Expect {
            natural,
            handle_may_cancel: edge.handle_may_cancel,
            must_spawn: edge.must_spawn,
            must_finish,
        });
        must_finish
    }
    fn child_edge(parent_finishes: bool, aborts: bool, leftover: bool) -> Edge {
        Edge {
            must_spawn: parent_finishes,
            cancellable: aborts || leftover,
            handle_may_cancel: aborts || leftover,
            leftover,
        }
    }
    fn visit(node: &Node, edge: Edge, expect: &mut [Option<Expect>]) {
        let natural = if node.end == End::Return {
            Outcome::Value(node.id)
        } else {
            Outcome::Panic(node.id)
        };
        // Every step runs before the body ends (a `PanicEarly` panics
        // after the last step), so a body that runs to its end spawns all
        // of its children.
        let finishes = put(expect, node.id, natural, edge);
        let leftover = edge.leftover;
        for step in &node.steps {
            match step {
                NStep::Spawn(child, fate) => {
                    visit(child, child_edge(finishes, fate.aborts(), leftover), expect);
                }
                NStep::Blocking(closure, fate) => {
                    let natural = if closure.panics {
                        Outcome::Panic(closure.id)
                    } else {
                        Outcome::Value(closure.id)
                    };
                    let closure_edge = child_edge(finishes, fate.aborts(), leftover);
                    let closure_finishes = put(expect, closure.id, natural, closure_edge);
                    for (child, fate) in &closure.nested {
                        let edge = child_edge(closure_finishes, fate.aborts(), leftover);
                        visit(child, edge, expect);
                    }
                }
                NStep::Set(members, mode) => {
                    let aborts = *mode != SetMode::Drain;
                    for member in members {
                        let edge = Edge {
                            must_spawn: finishes,
                            // A cancelled parent drops its set, which
                            // aborts the members.
                            cancellable: aborts || edge.cancellable || leftover,
                            handle_may_cancel: aborts || leftover,
                            leftover,
                        };
                        visit(member, edge, expect);
                    }
                }
                NStep::BlockOn(children) => {
                    // Spawned and resolved within one poll: an abort of
                    // this task cannot interrupt it.
                    for (child, fate) in children {
                        visit(child, child_edge(finishes, fate.aborts(), leftover), expect);
                    }
                }
                NStep::Forever(id) => {
                    // Aborted right after its spawn: it ends cancelled,
                    // whatever happens to its spawner.
                    put(
                        expect,
                        *id,
                        Outcome::Cancelled,
                        child_edge(finishes, true, leftover),
                    );
                }
                NStep::Yield
                | NStep::Sleep(_)
                | NStep::Gate(_)
                | NStep::Timeout(..)
                | NStep::Resolve => {}
            }
        }
    }
    let mut expect = vec![None; tree.len];
    // `block_on` runs main to its end: nothing cancels it.
    let sure = Edge {
        must_spawn: true,
        cancellable: false,
        handle_may_cancel: false,
        leftover: false,
    };
    visit(&tree.main, sure, &mut expect);
    for (root, fate) in &tree.roots {
        visit(root, child_edge(true, fate.aborts(), false), &mut expect);
    }
    for (left, _) in &tree.leftovers {
        visit(left, child_edge(true, true, true), &mut expect);
    }
    expect
        .into_iter()
        .map(|expect| expect.expect("every id is numbered"))
        .collect()
}

// ---------------------------------------------------------------------
// Running a program.
// ---------------------------------------------------------------------

/// What happened to one id.
#[derive(Default)]
struct Counts {
    futures_made: AtomicUsize,
    futures_dropped: AtomicUsize,
    /// Outputs and panic payloads.
    outputs_made: AtomicUsize,
    outputs_dropped: AtomicUsize,
    /// Its handle (or set) returned its output or panic.
    delivered: AtomicUsize,
    /// Its handle (or set) reported cancellation.
    cancelled_seen: AtomicUsize,
    /// The phase in which its future was dropped before it made an
    /// output (it was cancelled), for the failure message.
    cancelled_in: Mutex<Option<&'static str>>,
}

/// The state of one case, shared by its tasks.
struct Case {
    expect: Vec<Expect>,
    counts: Vec<Counts>,
    violations: Mutex<Vec<String>>,
    firer: mpsc::Sender<FireMsg>,
    phase: Mutex<&'static str>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock means a panic elsewhere, reported on its own.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Case {
    fn violation(&self, message: String) {
        lock(&self.violations).push(message);
    }

    fn set_phase(&self, phase: &'static str) {
        *lock(&self.phase) = phase;
    }

    /// What a handle returned, by id (a panic's payload is dropped here).
    fn classify(&self, outcome: Result<Tracked, JoinError>) -> Outcome {
        match outcome {
            Ok(output) => Outcome::Value(output.id),
            Err(error) if error.is_cancelled() => Outcome::Cancelled,
            Err(error) => self.panic_outcome(error.into_panic()),
        }
    }

    /// Checks what the handle of `id` returned.
    fn check(&self, id: usize, outcome: Result<Tracked, JoinError>) {
        let got = self.classify(outcome);
        self.check_outcome(id, got);
    }

    fn check_outcome(&self, id: usize, got: Outcome) {
        let expect = &self.expect[id];
        match got {
            Outcome::Cancelled => {
                self.counts[id]
                    .cancelled_seen
                    .fetch_add(1, Ordering::SeqCst);
                if !expect.handle_may_cancel {
                    self.violation(format!(
                        "#{id}: handle reported cancellation, but nothing aborted it \
                         (expected {:?})",
                        expect.natural
                    ));
                }
            }
            got => {
                self.counts[id].delivered.fetch_add(1, Ordering::SeqCst);
                if got != expect.natural {
                    self.violation(format!(
                        "#{id}: handle returned {got:?}, expected {:?}{}",
                        expect.natural,
                        if expect.handle_may_cancel {
                            " or Cancelled"
                        } else {
                            ""
                        }
                    ));
                }
            }
        }
    }

    /// The id in a panic's payload (dropped here), or a violation.
    fn panic_outcome(&self, payload: Box<dyn Any + Send>) -> Outcome {
        match payload.downcast::<Tracked>() {
            Ok(payload) => Outcome::Panic(payload.id),
            Err(other) => {
                let message = bwos_testkit::panic_message(&other).to_owned();
                self.violation(format!("a handle returned a foreign panic: {message}"));
                Outcome::Panic(usize::MAX)
            }
        }
    }

    /// Checks one outcome of a `JoinSet` of `members`; returns the
    /// member it belongs to, unless cancelled.
    fn check_member(
        &self,
        members: &[usize],
        seen: &[usize],
        outcome: Result<Tracked, JoinError>,
    ) -> Option<usize> {
        let got = self.classify(outcome);
        let id = match got {
            Outcome::Value(id) | Outcome::Panic(id) => id,
            Outcome::Cancelled => {
                if !self.expect[members[0]].handle_may_cancel {
                    self.violation(format!(
                        "join set {members:?}: a member reported cancellation, but \
                         nothing aborted the set"
                    ));
                }
                return None;
            }
        };
        if !members.contains(&id) {
            self.violation(format!(
                "join set {members:?} returned {got:?}, not a member's"
            ));
            return None;
        }
        if seen.contains(&id) {
            self.violation(format!(
                "join set {members:?} returned #{id}'s outcome twice"
            ));
        }
        self.counts[id].delivered.fetch_add(1, Ordering::SeqCst);
        if got != self.expect[id].natural {
            self.violation(format!(
                "join set {members:?}: #{id} returned {got:?}, expected {:?}",
                self.expect[id].natural
            ));
        }
        Some(id)
    }

    /// Opens a gate on the plain thread: the returned future waits for it.
    fn gate(&self, fire: Fire) -> GateWait {
        let gate = Arc::new(Mutex::new(GateState::default()));
        self.firer
            .send(FireMsg::Gate(Arc::clone(&gate), fire))
            .expect("the firer runs until the case ends");
        GateWait(gate)
    }

    /// Everything that moves while a case makes progress.
    fn progress(&self) -> ([usize; 4], usize, &'static str) {
        let resolved = self
            .counts
            .iter()
            .map(|counts| {
                counts.delivered.load(Ordering::SeqCst)
                    + counts.cancelled_seen.load(Ordering::SeqCst)
            })
            .sum();
        (self.totals(), resolved, *lock(&self.phase))
    }

    /// The sums of the counters: futures made, futures dropped, outputs
    /// made, outputs dropped ([`balanced`] says whether they match).
    fn totals(&self) -> [usize; 4] {
        self.totals_observed(&mut || {})
    }

    /// [`Case::totals`], calling `after_load` after each counter load (a
    /// test runs a task's events there).
    ///
    /// The sums are not one snapshot: tasks make and drop children while
    /// the loads go by. So the drop counters are read first, all of them,
    /// then the make counters. Each counter only grows, and an id's drop
    /// follows its making; for any instant T between the last drop load
    /// and the first make load, dropped(loaded) <= dropped(T) <= made(T)
    /// <= made(loaded) for every id. Equal sums thus mean that at T every
    /// id was balanced: no tracked future was alive, so none could make
    /// another afterwards.
    ///
    /// This test first read the make counters first, and then the sums
    /// could balance while a task still ran: the made sum passed child #c
    /// before the task spawned it, the dropped sum reached #c after the
    /// child had ended, and that drop stood in for the drop of the
    /// running task's own future. `settle` returned, the test dropped the
    /// pool, the drop cancelled the running task, and the case failed
    /// with "did not run to its end ... though nothing could cancel it"
    /// (seen once, for a detached task that spawned children, under a
    /// load of 8 on 2 cores; a 200 us pause between the two sums made it
    /// fail within a few hundred cases).
    fn totals_observed(&self, after_load: &mut dyn FnMut()) -> [usize; 4] {
        let mut sum = |f: fn(&Counts) -> &AtomicUsize| {
            let mut total = 0;
            for counts in &self.counts {
                total += f(counts).load(Ordering::SeqCst);
                after_load();
            }
            total
        };
        let futures_dropped = sum(|c| &c.futures_dropped);
        let outputs_dropped = sum(|c| &c.outputs_dropped);
        let futures_made = sum(|c| &c.futures_made);
        let outputs_made = sum(|c| &c.outputs_made);
        [futures_made, futures_dropped, outputs_made, outputs_dropped]
    }

    /// Waits until every future made is dropped and every output made is
    /// dropped: the runtime finishes detached and cancelled tasks
    /// concurrently. Fails if the counters stop moving first.
    fn settle(&self, after: &str) -> Result<(), String> {
        let mut last = self.totals();
        let mut since = Instant::now();
        loop {
            let now = self.totals();
            if balanced(now) {
                return Ok(());
            }
            if now != last {
                last = now;
                since = Instant::now();
            } else if since.elapsed() > settle_limit() {
                return Err(format!(
                    "{after}: the counters stopped short of balancing \
                     (futures made/dropped, outputs made/dropped: {now:?}); alive: {}",
                    self.alive()
                ));
            }
            thread::sleep(Duration::from_micros(100));
        }
    }

    /// The ids whose future or output is not dropped yet.
    fn alive(&self) -> String {
        let mut out = String::new();
        for (id, counts) in self.counts.iter().enumerate() {
            let futures = counts
                .futures_made
                .load(Ordering::SeqCst)
                .saturating_sub(counts.futures_dropped.load(Ordering::SeqCst));
            let outputs = counts
                .outputs_made
                .load(Ordering::SeqCst)
                .saturating_sub(counts.outputs_dropped.load(Ordering::SeqCst));
            if futures > 0 {
                let _ = write!(out, "#{id} (future) ");
            }
            if outputs > 0 {
                let _ = write!(out, "#{id} (output) ");
            }
        }
        out
    }

    /// The checks on the counters once everything has settled.
    fn final_checks(&self) {
        for (id, (counts, expect)) in self.counts.iter().zip(&self.expect).enumerate() {
            let load = |counter: &AtomicUsize| counter.load(Ordering::SeqCst);
            let made = load(&counts.futures_made);
            let dropped = load(&counts.futures_dropped);
            let outputs = load(&counts.outputs_made);
            let outputs_dropped = load(&counts.outputs_dropped);
            let delivered = load(&counts.delivered);
            let cancelled = load(&counts.cancelled_seen);
            let mut problems = Vec::new();
            if made > 1 || outputs > 1 {
                problems.push(format!("made {made} futures and {outputs} outputs"));
            }
            if dropped != made {
                problems.push(format!("future made {made}x, dropped {dropped}x"));
            }
            if outputs_dropped != outputs {
                problems.push(format!(
                    "output (or panic payload) made {outputs}x, dropped {outputs_dropped}x"
                ));
            }
            if expect.must_spawn && made != 1 {
                problems.push("never spawned, though its spawner ran to its end".into());
            }
            if expect.must_finish && outputs != 1 {
                let when = match *lock(&counts.cancelled_in) {
                    Some(phase) => format!("its future was dropped in phase `{phase}`"),
                    None => "its future was not dropped".to_owned(),
                };
                problems.push(format!(
                    "did not run to its end ({:?}), though nothing could cancel it \
                     ({when})",
                    expect.natural
                ));
            }
            if made == 0 && outputs > 0 {
                problems.push("finished without being spawned".into());
            }
            if delivered + cancelled > 1 {
                problems.push(format!(
                    "resolved {} times ({delivered} outcomes, {cancelled} cancellations)",
                    delivered + cancelled
                ));
            }
            if delivered == 1 && outputs != 1 {
                problems.push("an outcome was delivered, but the task did not finish".into());
            }
            if cancelled == 1 && outputs != 0 {
                problems.push("reported cancelled, but it ran to its end".into());
            }
            for problem in problems {
                self.violation(format!("#{id}: {problem}"));
            }
        }
    }
}

/// Whether [`Case::totals`] found every future and every output made
/// also dropped.
fn balanced(totals: [usize; 4]) -> bool {
    totals[0] == totals[1] && totals[2] == totals[3]
}

/// Counts its making and its drop: a task's future (or closure), or its
/// output (or panic payload).
struct Tracked {
    id: usize,
    output: bool,
    case: Arc<Case>,
}

impl Tracked {
    fn future(case: &Arc<Case>, id: usize) -> Tracked {
        case.counts[id].futures_made.fetch_add(1, Ordering::SeqCst);
        Tracked {
            id,
            output: false,
            case: Arc::clone(case),
        }
    }

    fn output(case: &Arc<Case>, id: usize) -> Tracked {
        case.counts[id].outputs_made.fetch_add(1, Ordering::SeqCst);
        Tracked {
            id,
            output: true,
            case: Arc::clone(case),
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let counts = &self.case.counts[self.id];
        if self.output {
            counts.outputs_dropped.fetch_add(1, Ordering::SeqCst);
        } else {
            // A body makes its output before its future is dropped;
            // recorded before the count, so `final_checks` sees it.
            if counts.outputs_made.load(Ordering::SeqCst) == 0 {
                *lock(&counts.cancelled_in) = Some(*lock(&self.case.phase));
            }
            counts.futures_dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// A task's future with its drop counter: the counter goes when the
/// runtime drops the future (not when the body returns).
struct Guarded {
    _guard: Tracked,
    body: Pin<Box<dyn Future<Output = Tracked> + Send>>,
}

impl Future for Guarded {
    type Output = Tracked;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Tracked> {
        self.body.as_mut().poll(cx)
    }
}

fn task_future(node: Arc<Node>, case: Arc<Case>, roots: Vec<Spawned>) -> Guarded {
    Guarded {
        _guard: Tracked::future(&case, node.id),
        body: Box::pin(run_body(node, case, roots)),
    }
}

/// A handle and what to do with it.
struct Spawned {
    id: usize,
    handle: JoinHandle<Tracked>,
    fate: Fate,
}

fn spawn_child(case: &Arc<Case>, child: &Arc<Node>, fate: Fate) -> Spawned {
    let future = task_future(Arc::clone(child), Arc::clone(case), Vec::new());
    Spawned {
        id: child.id,
        handle: task::spawn(future),
        fate,
    }
}

async fn run_body(node: Arc<Node>, case: Arc<Case>, roots: Vec<Spawned>) -> Tracked {
    let mut kept = Vec::new();
    for step in &node.steps {
        match step {
            NStep::Yield => task::yield_now().await,
            NStep::Sleep(ms) => bwos::time::sleep(Duration::from_millis(u64::from(*ms))).await,
            NStep::Gate(fire) => case.gate(*fire).await,
            NStep::Timeout(ms, fire) => {
                let limit = Duration::from_millis(u64::from(*ms));
                // Either may win.
                let _ = bwos::time::timeout(limit, case.gate(*fire)).await;
            }
            NStep::Spawn(child, fate) => {
                let spawned = spawn_child(&case, child, *fate);
                dispose(&case, spawned, &mut kept).await;
            }
            NStep::Blocking(closure, fate) => {
                let handle = task::spawn_blocking(blocking_closure(closure, &case));
                let spawned = Spawned {
                    id: closure.id,
                    handle,
                    fate: *fate,
                };
                dispose(&case, spawned, &mut kept).await;
            }
            NStep::Set(members, mode) => run_set(&case, members, *mode).await,
            NStep::BlockOn(children) => {
                bwos::block_on(spawn_and_resolve(Arc::clone(&case), children));
            }
            NStep::Resolve => resolve(&case, &mut kept).await,
            NStep::Forever(id) => {
                let forever = Guarded {
                    _guard: Tracked::future(&case, *id),
                    body: Box::pin(std::future::pending()),
                };
                let handle = task::spawn(forever);
                handle.abort();
                case.check(*id, handle.await);
            }
        }
    }
    for spawned in roots {
        dispose(&case, spawned, &mut kept).await;
    }
    if node.end == End::PanicEarly {
        panic::panic_any(Tracked::output(&case, node.id));
    }
    resolve(&case, &mut kept).await;
    let output = Tracked::output(&case, node.id);
    if node.end == End::Panic {
        panic::panic_any(output);
    }
    output
}

fn blocking_closure(
    closure: &Arc<BlockingNode>,
    case: &Arc<Case>,
) -> impl FnOnce() -> Tracked + Send + 'static {
    let guard = Tracked::future(case, closure.id);
    let (closure, case) = (Arc::clone(closure), Arc::clone(case));
    move || {
        // Dropped after the output is made (or during the panic).
        let _guard = guard;
        if !closure.nested.is_empty() {
            bwos::block_on(spawn_and_resolve(Arc::clone(&case), &closure.nested));
        }
        let output = Tracked::output(&case, closure.id);
        if closure.panics {
            panic::panic_any(output);
        }
        output
    }
}

/// Spawns `children`, disposes of their handles, awaits the kept ones:
/// what a `block_on` step runs.
async fn spawn_and_resolve(case: Arc<Case>, children: &[(Arc<Node>, Fate)]) {
    let mut kept = Vec::new();
    for (child, fate) in children {
        let spawned = spawn_child(&case, child, *fate);
        dispose(&case, spawned, &mut kept).await;
    }
    resolve(&case, &mut kept).await;
}

async fn dispose(case: &Arc<Case>, spawned: Spawned, kept: &mut Vec<Spawned>) {
    let Spawned {
        id,
        mut handle,
        fate,
    } = spawned;
    match fate {
        Fate::Await => case.check(id, handle.await),
        Fate::AwaitThenAbort => {
            let outcome = (&mut handle).await;
            case.check(id, outcome);
            if !handle.is_finished() {
                case.violation(format!(
                    "#{id}: is_finished() is false after the handle returned"
                ));
            }
            handle.abort();
        }
        Fate::Detach => drop(handle),
        Fate::Abort => {
            handle.abort();
            case.check(id, handle.await);
        }
        Fate::Later | Fate::AbortLater => kept.push(Spawned { id, handle, fate }),
    }
}

async fn resolve(case: &Arc<Case>, kept: &mut Vec<Spawned>) {
    for Spawned { id, handle, fate } in std::mem::take(kept) {
        if fate == Fate::AbortLater {
            handle.abort();
        }
        case.check(id, handle.await);
    }
}

async fn run_set(case: &Arc<Case>, members: &[Arc<Node>], mode: SetMode) {
    let ids: Vec<usize> = members.iter().map(|member| member.id).collect();
    let mut set = JoinSet::new();
    for member in members {
        set.spawn(task_future(
            Arc::clone(member),
            Arc::clone(case),
            Vec::new(),
        ));
    }
    if set.len() != members.len() {
        case.violation(format!(
            "join set {ids:?}: len {} after spawning",
            set.len()
        ));
    }
    match mode {
        SetMode::Drain | SetMode::AbortAll => {
            if mode == SetMode::AbortAll {
                set.abort_all();
            }
            let mut seen = Vec::new();
            let mut outcomes = 0;
            while let Some(outcome) = set.join_next().await {
                outcomes += 1;
                if let Some(id) = case.check_member(&ids, &seen, outcome) {
                    seen.push(id);
                }
            }
            if outcomes != members.len() || !set.is_empty() {
                case.violation(format!(
                    "join set {ids:?}: {outcomes} outcomes, len {} after draining",
                    set.len()
                ));
            }
            // Every outcome came back: the members not seen were the
            // cancelled ones.
            for id in ids.iter().filter(|id| !seen.contains(id)) {
                case.counts[*id]
                    .cancelled_seen
                    .fetch_add(1, Ordering::SeqCst);
            }
        }
        SetMode::Shutdown => {
            set.shutdown().await;
            if !set.is_empty() || set.join_next().await.is_some() {
                case.violation(format!("join set {ids:?}: not empty after shutdown"));
            }
        }
        SetMode::DrainOneThenDrop => match set.join_next().await {
            Some(outcome) => {
                case.check_member(&ids, &[], outcome);
            }
            None => case.violation(format!("join set {ids:?}: empty at once")),
        },
        SetMode::Drop => drop(set),
    }
}

// ---------------------------------------------------------------------
// Gates, opened by a plain thread.
// ---------------------------------------------------------------------

#[derive(Default)]
struct GateState {
    open: bool,
    waker: Option<Waker>,
}

/// Waits until the firer opens the gate.
struct GateWait(Arc<Mutex<GateState>>);

impl Future for GateWait {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = lock(&self.0);
        if state.open {
            Poll::Ready(())
        } else {
            state.waker = Some(cx.waker().clone());
            Poll::Pending
        }
    }
}

enum FireMsg {
    Gate(Arc<Mutex<GateState>>, Fire),
    /// Keep the gates that come from now on closed.
    Hold,
    /// Wait this long, then open the held gates and the later ones.
    Release(Duration),
    Stop,
}

fn open(gate: &Mutex<GateState>, fire: Fire) {
    match fire {
        Fire::AfterYield => thread::yield_now(),
        Fire::AfterPause { micros } => thread::sleep(Duration::from_micros(u64::from(micros))),
        Fire::Wake | Fire::WakeByRef | Fire::Twice => {}
    }
    let waker = {
        let mut state = lock(gate);
        state.open = true;
        state.waker.take()
    };
    let Some(waker) = waker else {
        return;
    };
    match fire {
        Fire::WakeByRef => waker.wake_by_ref(),
        Fire::Twice => {
            let clone = waker.clone();
            clone.wake_by_ref();
            waker.wake();
        }
        Fire::Wake | Fire::AfterYield | Fire::AfterPause { .. } => waker.wake(),
    }
}

/// The plain thread that opens the gates, in the order they come.
fn firer(messages: mpsc::Receiver<FireMsg>) {
    let mut held = Vec::new();
    let mut hold = false;
    while let Ok(message) = messages.recv() {
        match message {
            FireMsg::Gate(gate, fire) if hold => held.push((gate, fire)),
            FireMsg::Gate(gate, fire) => open(&gate, fire),
            FireMsg::Hold => hold = true,
            FireMsg::Release(after) => {
                thread::sleep(after);
                hold = false;
                for (gate, fire) in held.drain(..) {
                    open(&gate, fire);
                }
            }
            FireMsg::Stop => break,
        }
    }
}

// ---------------------------------------------------------------------
// A case.
// ---------------------------------------------------------------------

/// Panics other than the programs' own (their payloads are `Tracked`) on
/// the threads of a case: its pool's, its plain threads.
static FOREIGN_PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Runs the tests of this file one at a time, so that each case sees only
/// its own foreign panics (and has the machine to itself).
static SERIAL: Mutex<()> = Mutex::new(());

/// Keeps the programs' panics off stderr and records the others of a
/// case's threads (the pool's are named `bwos-*`, the case's `fuzz-*`; a
/// test thread's failure is reported by the harness).
fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if info.payload().is::<Tracked>() {
                return;
            }
            let name = thread::current().name().unwrap_or_default().to_owned();
            if name.starts_with("bwos-") || name.starts_with("fuzz-") {
                lock(&FOREIGN_PANICS).push(format!("on thread {name}: {info}"));
            }
            default(info);
        }));
    });
}

fn build_pool(program: &Program) -> ThreadPool {
    let config = &program.pool;
    let max_blocking = if nests_blocking(program) {
        512
    } else {
        config.max_blocking
    };
    ThreadPoolBuilder::new()
        .num_threads(config.threads)
        .idle_policy(config.idle)
        .steal_policy(config.steal.clone())
        .steal_batch(config.batch)
        .detach_threads_on_drop(config.detach_on_drop)
        .max_blocking_threads(max_blocking)
        // Idle blocking threads of a dropped pool exit anyway; this keeps
        // them from piling up while a pool lives.
        .blocking_keep_alive(Duration::from_millis(50))
        .build()
        .expect("a pool")
}

/// Runs `program` on a fresh pool; violations are collected in `case`.
fn run_case(program: &Program, tree: &Tree, case: &Arc<Case>) -> Result<(), String> {
    let pool = build_pool(program);

    case.set_phase("main");
    let roots: Vec<Spawned> = tree
        .roots
        .iter()
        .map(|(root, fate)| Spawned {
            id: root.id,
            handle: pool.spawn_task(task_future(Arc::clone(root), Arc::clone(case), Vec::new())),
            fate: *fate,
        })
        .collect();
    let main = task_future(Arc::clone(&tree.main), Arc::clone(case), roots);
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| pool.block_on(main)));
    // `block_on` returns main's output or resumes its panic.
    let got = match outcome {
        Ok(output) => Outcome::Value(output.id),
        Err(payload) => case.panic_outcome(payload),
    };
    case.check_outcome(0, got);
    case.set_phase("settle after main");
    case.settle("after the main program")?;

    case.set_phase("pool reuse");
    let trivial = pool.block_on(pool.spawn_task(async { 7 }));
    if trivial.as_ref().ok() != Some(&7) {
        case.violation(format!(
            "the pool no longer runs a trivial task: {trivial:?}"
        ));
    }

    case.set_phase("leftovers");
    case.firer.send(FireMsg::Hold).expect("the firer runs");
    let mut kept = Vec::new();
    for (left, fate) in &tree.leftovers {
        let future = task_future(Arc::clone(left), Arc::clone(case), Vec::new());
        let handle = pool.spawn_task(future);
        match fate {
            LeftFate::Keep => kept.push((left.id, handle)),
            LeftFate::Detach => drop(handle),
            LeftFate::Abort => {
                handle.abort();
                kept.push((left.id, handle));
            }
        }
    }
    if program.settle {
        thread::yield_now();
    }
    // The held gates open shortly after the drop begins: a worker that
    // waits in a `block_on` for one of them stops only then.
    case.firer
        .send(FireMsg::Release(Duration::from_millis(1)))
        .expect("the firer runs");
    case.set_phase("pool drop");
    drop(pool);
    case.set_phase("leftover handles");
    for (id, handle) in kept {
        case.check(id, futures_lite::future::block_on(handle));
    }
    case.set_phase("settle after drop");
    case.settle("after the pool was dropped")
}

/// One case under the watchdog, on a thread of its own that must not
/// stand still for [`hang_limit`].
fn check_program(program: &Program) -> Result<(), TestCaseError> {
    install_panic_hook();
    let _serial = lock(&SERIAL);
    watchdog("executor_fuzz case", || {
        let tree = Arc::new(number(program));
        let expect = reference(&tree);
        let (fire_tx, fire_rx) = mpsc::channel();
        let firer = thread::Builder::new()
            .name("fuzz-firer".into())
            .spawn(move || firer(fire_rx))
            .expect("the firer starts");
        let case = Arc::new(Case {
            counts: (0..expect.len()).map(|_| Counts::default()).collect(),
            expect,
            violations: Mutex::new(Vec::new()),
            firer: fire_tx,
            phase: Mutex::new("start"),
        });
        let (done_tx, done_rx) = mpsc::channel();
        let runner = {
            let (program, tree, case) = (program.clone(), Arc::clone(&tree), Arc::clone(&case));
            thread::Builder::new()
                .name("fuzz-case".into())
                .spawn(move || {
                    let result = run_case(&program, &tree, &case);
                    let _ = done_tx.send(result);
                })
                .expect("the case thread starts")
        };
        let (mut last, mut since) = (case.progress(), Instant::now());
        let result = loop {
            match done_rx.recv_timeout(Duration::from_millis(20)) {
                Ok(result) => {
                    runner.join().expect("the case thread returned");
                    case.firer.send(FireMsg::Stop).expect("the firer runs");
                    firer.join().expect("the firer returned");
                    break result;
                }
                // The case thread panicked (a bug in this test or a
                // foreign panic, which the hook recorded).
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    break Err("the case thread panicked".to_owned());
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let now = case.progress();
                    if now != last {
                        (last, since) = (now, Instant::now());
                    } else if since.elapsed() > hang_limit() {
                        // Leaked: a hung case cannot be stopped.
                        break Err(format!(
                            "hung: no progress for {:?} in phase `{}`; alive: {}",
                            hang_limit(),
                            now.2,
                            case.alive()
                        ));
                    }
                }
            }
        };
        let mut problems = match result {
            Ok(()) => {
                case.final_checks();
                std::mem::take(&mut *lock(&case.violations))
            }
            Err(error) => {
                let mut problems = vec![error];
                problems.append(&mut lock(&case.violations));
                problems
            }
        };
        problems.extend(
            std::mem::take(&mut *lock(&FOREIGN_PANICS))
                .into_iter()
                .map(|panic| format!("foreign panic: {panic}")),
        );
        if problems.is_empty() {
            Ok(())
        } else {
            Err(TestCaseError::fail(format!(
                "{}\nprogram (ids in pre-order):\n{}",
                problems.join("\n"),
                dump(&tree)
            )))
        }
    })
}

/// A whole number from environment variable `name`, else `default`.
fn env_number(name: &str, default: u32) -> u32 {
    match std::env::var(name) {
        Ok(value) => value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a whole number")),
        Err(_) => default,
    }
}

fn cases() -> u32 {
    env_number(CASES_ENV, DEFAULT_CASES)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        // Regressions become plain tests below instead of a file.
        failure_persistence: None,
        // A hung case costs `hang_limit()` per shrinking step: stop
        // shrinking after 10 minutes, with the smallest program so far.
        max_shrink_time: 600_000,
        ..ProptestConfig::default()
    })]

    /// Random programs over spawn, spawn_task, wake-ups from a plain
    /// thread, abort, detached handles, panics, nested spawns and
    /// `block_on`s, timers, `spawn_blocking`, `JoinSet` and a pool dropped
    /// with tasks pending: every handle returns what the reference allows,
    /// everything is dropped exactly once, nothing hangs.
    #[test]
    fn random_programs_match_the_reference(program in program()) {
        for _ in 0..env_number(REPEAT_ENV, 1) {
            check_program(&program)?;
        }
    }
}

/// Fixed programs: they check the test itself (the reference and the
/// counters on programs whose outcomes are known), and keep the shrunk
/// programs of past failures.
mod regression_cases {
    use super::*;

    fn leaf(end: End) -> Task {
        Task {
            steps: vec![Step::Gate(Fire::Wake), Step::Yield],
            end,
        }
    }

    fn config(threads: usize) -> PoolConfig {
        PoolConfig {
            threads,
            idle: IdlePolicy::Park,
            steal: StealPolicy::Random,
            batch: StealBatch::One,
            detach_on_drop: false,
            max_blocking: 1,
        }
    }

    /// Found by this fuzzer after `block_on` on a worker started to move
    /// the worker to a replacement thread: one worker, tasks that
    /// `block_on` inside tasks, and the pool dropped. The worker's own
    /// thread, draining the threads that had lent the worker before it
    /// exits, itself lent and took back the worker (a `block_on` in a task
    /// it ran) and missed that the count of lenders had reached zero: the
    /// pool's drop waited for it forever. It failed in the first of these
    /// rounds.
    #[test]
    fn a_worker_that_drains_its_lenders_exits_when_they_are_back() {
        for _ in 0..50 {
            let program = Program {
                pool: PoolConfig {
                    threads: 1,
                    idle: IdlePolicy::Park,
                    steal: StealPolicy::LastVictim,
                    batch: StealBatch::One,
                    detach_on_drop: false,
                    max_blocking: 3,
                },
                roots: vec![(
                    Task {
                        steps: vec![Step::Resolve],
                        end: End::Return,
                    },
                    Fate::Later,
                )],
                main: Task {
                    steps: vec![
                        Step::Forever,
                        Step::Spawn(
                            Task {
                                steps: vec![],
                                end: End::Panic,
                            },
                            Fate::Later,
                        ),
                    ],
                    end: End::Return,
                },
                leftovers: vec![
                    (
                        Task {
                            steps: vec![Step::Timeout {
                                ms: 0,
                                fire: Fire::WakeByRef,
                            }],
                            end: End::Return,
                        },
                        LeftFate::Detach,
                    ),
                    (
                        Task {
                            steps: vec![
                                Step::Spawn(
                                    Task {
                                        steps: vec![],
                                        end: End::Return,
                                    },
                                    Fate::Await,
                                ),
                                Step::BlockOn(vec![
                                    (
                                        Task {
                                            steps: vec![Step::Sleep { ms: 0 }],
                                            end: End::Return,
                                        },
                                        Fate::Await,
                                    ),
                                    (
                                        Task {
                                            steps: vec![
                                                Step::BlockOn(vec![
                                                    (
                                                        Task {
                                                            steps: vec![],
                                                            end: End::Return,
                                                        },
                                                        Fate::Abort,
                                                    ),
                                                    (
                                                        Task {
                                                            steps: vec![Step::Sleep { ms: 2 }],
                                                            end: End::Return,
                                                        },
                                                        Fate::Await,
                                                    ),
                                                ]),
                                                Step::Gate(Fire::WakeByRef),
                                                Step::Spawn(
                                                    Task {
                                                        steps: vec![],
                                                        end: End::Return,
                                                    },
                                                    Fate::Detach,
                                                ),
                                            ],
                                            end: End::Return,
                                        },
                                        Fate::Detach,
                                    ),
                                ]),
                                Step::Spawn(
                                    Task {
                                        steps: vec![],
                                        end: End::Return,
                                    },
                                    Fate::Await,
                                ),
                                Step::Timeout {
                                    ms: 0,
                                    fire: Fire::AfterPause { micros: 131 },
                                },
                            ],
                            end: End::Panic,
                        },
                        LeftFate::Detach,
                    ),
                    (
                        Task {
                            steps: vec![
                                Step::Set(
                                    vec![
                                        Task {
                                            steps: vec![
                                                Step::Spawn(
                                                    Task {
                                                        steps: vec![
                                                            Step::Gate(Fire::WakeByRef),
                                                            Step::Forever,
                                                        ],
                                                        end: End::Panic,
                                                    },
                                                    Fate::Abort,
                                                ),
                                                Step::BlockOn(vec![(
                                                    Task {
                                                        steps: vec![
                                                            Step::Gate(Fire::Twice),
                                                            Step::Sleep { ms: 0 },
                                                        ],
                                                        end: End::Return,
                                                    },
                                                    Fate::Later,
                                                )]),
                                                Step::Resolve,
                                            ],
                                            end: End::Panic,
                                        },
                                        Task {
                                            steps: vec![],
                                            end: End::Return,
                                        },
                                        Task {
                                            steps: vec![Step::Spawn(
                                                Task {
                                                    steps: vec![Step::Forever, Step::Forever],
                                                    end: End::PanicEarly,
                                                },
                                                Fate::Detach,
                                            )],
                                            end: End::Return,
                                        },
                                    ],
                                    SetMode::Drain,
                                ),
                                Step::Forever,
                                Step::Spawn(
                                    Task {
                                        steps: vec![Step::Spawn(
                                            Task {
                                                steps: vec![],
                                                end: End::Return,
                                            },
                                            Fate::AbortLater,
                                        )],
                                        end: End::Return,
                                    },
                                    Fate::Abort,
                                ),
                            ],
                            end: End::Panic,
                        },
                        LeftFate::Keep,
                    ),
                ],
                settle: true,
            };
            check_program(&program).unwrap();
        }
    }

    /// Found right after the case above was fixed: one worker, tasks
    /// that `block_on` inside tasks, the pool dropped. The worker's own
    /// thread drained its lenders until their count reached zero, but the
    /// last one, holding the worker, lent it again (a second `block_on` in
    /// the same task) and passed it to the worker's thread, which then
    /// exited: the lender waited for the worker forever, on a stack that
    /// was gone. The worker's thread now exits only holding the worker
    /// with no lender left and nobody waiting for it.
    #[test]
    fn a_worker_exits_only_once_no_thread_needs_it() {
        for _ in 0..50 {
            let program = Program {
                pool: PoolConfig {
                    threads: 1,
                    idle: IdlePolicy::Balanced,
                    steal: StealPolicy::Sequential,
                    batch: StealBatch::One,
                    detach_on_drop: true,
                    max_blocking: 1,
                },
                roots: vec![
                    (
                        Task {
                            steps: vec![Step::Yield, Step::Forever],
                            end: End::Panic,
                        },
                        Fate::Later,
                    ),
                    (
                        Task {
                            steps: vec![
                                Step::Spawn(
                                    Task {
                                        steps: vec![],
                                        end: End::Panic,
                                    },
                                    Fate::Detach,
                                ),
                                Step::BlockOn(vec![(
                                    Task {
                                        steps: vec![],
                                        end: End::Return,
                                    },
                                    Fate::Later,
                                )]),
                                Step::Forever,
                                Step::Sleep { ms: 0 },
                            ],
                            end: End::Panic,
                        },
                        Fate::AbortLater,
                    ),
                ],
                main: Task {
                    steps: vec![],
                    end: End::Return,
                },
                leftovers: vec![
                    (
                        Task {
                            steps: vec![
                                Step::Spawn(
                                    Task {
                                        steps: vec![Step::Gate(Fire::AfterYield)],
                                        end: End::Return,
                                    },
                                    Fate::Detach,
                                ),
                                Step::BlockOn(vec![
                                    (
                                        Task {
                                            steps: vec![
                                                Step::Resolve,
                                                Step::Set(
                                                    vec![
                                                        Task {
                                                            steps: vec![],
                                                            end: End::Return,
                                                        },
                                                        Task {
                                                            steps: vec![
                                                                Step::Yield,
                                                                Step::Blocking {
                                                                    panics: false,
                                                                    nested: vec![],
                                                                    fate: Fate::Detach,
                                                                },
                                                            ],
                                                            end: End::Return,
                                                        },
                                                    ],
                                                    SetMode::Shutdown,
                                                ),
                                                Step::Spawn(
                                                    Task {
                                                        steps: vec![Step::Gate(Fire::AfterYield)],
                                                        end: End::Panic,
                                                    },
                                                    Fate::AbortLater,
                                                ),
                                            ],
                                            end: End::Panic,
                                        },
                                        Fate::AbortLater,
                                    ),
                                    (
                                        Task {
                                            steps: vec![],
                                            end: End::Return,
                                        },
                                        Fate::Detach,
                                    ),
                                ]),
                            ],
                            end: End::PanicEarly,
                        },
                        LeftFate::Keep,
                    ),
                    (
                        Task {
                            steps: vec![
                                Step::Gate(Fire::Wake),
                                Step::Gate(Fire::WakeByRef),
                                Step::Blocking {
                                    panics: false,
                                    nested: vec![],
                                    fate: Fate::AbortLater,
                                },
                                Step::Gate(Fire::AfterYield),
                            ],
                            end: End::Return,
                        },
                        LeftFate::Abort,
                    ),
                    (
                        Task {
                            steps: vec![
                                Step::BlockOn(vec![(
                                    Task {
                                        steps: vec![Step::Spawn(
                                            Task {
                                                steps: vec![Step::Gate(Fire::AfterYield)],
                                                end: End::Return,
                                            },
                                            Fate::Abort,
                                        )],
                                        end: End::Return,
                                    },
                                    Fate::AbortLater,
                                )]),
                                Step::BlockOn(vec![(
                                    Task {
                                        steps: vec![Step::Gate(Fire::Wake)],
                                        end: End::Panic,
                                    },
                                    Fate::AwaitThenAbort,
                                )]),
                                Step::Spawn(
                                    Task {
                                        steps: vec![Step::BlockOn(vec![
                                            (
                                                Task {
                                                    steps: vec![],
                                                    end: End::Return,
                                                },
                                                Fate::Abort,
                                            ),
                                            (
                                                Task {
                                                    steps: vec![],
                                                    end: End::Return,
                                                },
                                                Fate::Later,
                                            ),
                                        ])],
                                        end: End::Panic,
                                    },
                                    Fate::AwaitThenAbort,
                                ),
                            ],
                            end: End::PanicEarly,
                        },
                        LeftFate::Keep,
                    ),
                ],
                settle: true,
            };
            check_program(&program).unwrap();
        }
    }

    #[test]
    fn a_program_with_every_step_passes() {
        let program = Program {
            pool: config(2),
            roots: vec![
                (leaf(End::Panic), Fate::Abort),
                (leaf(End::Return), Fate::Later),
            ],
            main: Task {
                steps: vec![
                    Step::Sleep { ms: 1 },
                    Step::Timeout {
                        ms: 1,
                        fire: Fire::AfterPause { micros: 100 },
                    },
                    Step::Spawn(leaf(End::Return), Fate::Detach),
                    Step::Blocking {
                        panics: false,
                        nested: vec![(leaf(End::Panic), Fate::Await)],
                        fate: Fate::AwaitThenAbort,
                    },
                    Step::Set(vec![leaf(End::Return), leaf(End::Panic)], SetMode::Drain),
                    Step::BlockOn(vec![(leaf(End::PanicEarly), Fate::AbortLater)]),
                    Step::Forever,
                    Step::Resolve,
                ],
                end: End::Return,
            },
            leftovers: vec![
                (leaf(End::Return), LeftFate::Keep),
                (leaf(End::Panic), LeftFate::Abort),
            ],
            settle: true,
        };
        check_program(&program).unwrap();
    }

    #[test]
    fn the_reference_requires_unaborted_tasks_to_finish() {
        let program = Program {
            pool: config(1),
            roots: vec![(leaf(End::Return), Fate::Abort)],
            main: Task {
                steps: vec![
                    Step::Spawn(leaf(End::Return), Fate::Detach),
                    Step::Set(vec![leaf(End::Return)], SetMode::Drain),
                    Step::Set(vec![leaf(End::Return)], SetMode::Drop),
                ],
                end: End::Panic,
            },
            leftovers: vec![(leaf(End::Return), LeftFate::Keep)],
            settle: false,
        };
        let tree = number(&program);
        let expect = reference(&tree);
        // main, detached child, drained member, dropped member, root, leftover.
        let finish: Vec<bool> = expect.iter().map(|e| e.must_finish).collect();
        assert_eq!(finish, [true, true, true, false, false, false]);
        let may_cancel: Vec<bool> = expect.iter().map(|e| e.handle_may_cancel).collect();
        assert_eq!(may_cancel, [false, false, false, true, true, true]);
        assert_eq!(expect[0].natural, Outcome::Panic(0));
        check_program(&program).unwrap();
    }

    /// A failure of the fuzz test that was the test's own race (see
    /// `Case::totals_observed`): task #0 runs, and while `settle` loads
    /// the counters it spawns child #1, which runs to its end. Whichever
    /// load the child's whole life falls after, the sums must not balance
    /// while #0's future is alive, or the case would drop the pool under
    /// it. Mutation caught: loading the make counters before the drop
    /// counters in `Case::totals_observed` (the first order) balances
    /// them when the child lives between its made and its dropped load.
    #[test]
    fn settle_does_not_balance_while_a_task_spawns_children() {
        let (firer, _unused) = mpsc::channel();
        let case = Case {
            expect: Vec::new(),
            counts: (0..2).map(|_| Counts::default()).collect(),
            violations: Mutex::new(Vec::new()),
            firer,
            phase: Mutex::new("main"),
        };
        let bump = |counter: &AtomicUsize| counter.fetch_add(1, Ordering::SeqCst);
        // #0 runs: its future is made, not dropped.
        bump(&case.counts[0].futures_made);
        let mut balanced_after = Vec::new();
        // Two ids, four counters each.
        for at in 0..8 {
            let child = &case.counts[1];
            for counter in [
                &child.futures_made,
                &child.futures_dropped,
                &child.outputs_made,
                &child.outputs_dropped,
            ] {
                counter.store(0, Ordering::SeqCst);
            }
            let mut loads = 0;
            let totals = case.totals_observed(&mut || {
                if loads == at {
                    // #0 spawns #1; #1 returns, its output and future
                    // are dropped.
                    bump(&child.futures_made);
                    bump(&child.outputs_made);
                    bump(&child.outputs_dropped);
                    bump(&child.futures_dropped);
                }
                loads += 1;
            });
            if balanced(totals) {
                balanced_after.push((at, totals));
            }
        }
        assert!(
            balanced_after.is_empty(),
            "the sums balanced while #0 ran (child's life after load, totals): \
             {balanced_after:?}"
        );
    }

    /// Found by the fuzz test (shrunk by hand from its failure): a
    /// leftover task `block_on`s a child that sleeps, and the pool is
    /// dropped. The other worker, the timers' watcher, stopped; the worker
    /// in the `block_on` slept without a deadline and never fired the
    /// timer, so the task never ended (and a joining drop hung). Fixed by
    /// waking a sleeper when a worker stops (`WorkerThread::main`).
    #[test]
    fn a_block_on_in_a_dropped_pool_still_gets_its_timers() {
        let sleeper = Task {
            steps: vec![Step::Sleep { ms: 1 }, Step::Yield],
            end: End::Return,
        };
        for detach_on_drop in [true, false] {
            let program = Program {
                pool: PoolConfig {
                    idle: IdlePolicy::Balanced,
                    detach_on_drop,
                    ..config(2)
                },
                roots: Vec::new(),
                main: Task {
                    steps: Vec::new(),
                    end: End::Return,
                },
                leftovers: vec![(
                    Task {
                        steps: vec![Step::BlockOn(vec![(sleeper.clone(), Fate::Await)])],
                        end: End::Return,
                    },
                    LeftFate::Keep,
                )],
                settle: true,
            };
            for _ in 0..25 {
                check_program(&program).unwrap();
            }
        }
    }
}

/// The bug behind `a_block_on_in_a_dropped_pool_still_gets_its_timers`,
/// without the fuzz machinery: a task waits in a `block_on` for a child
/// that sleeps, and the pool is dropped meanwhile. Its worker runs on
/// after the other one stopped; the child's timer must still fire, or the
/// joining drop never returns.
#[test]
fn a_worker_left_in_a_block_on_fires_timers_after_the_others_stopped() {
    let _serial = lock(&SERIAL);
    watchdog("block_on_timers_after_drop", || {
        for policy in [IdlePolicy::Balanced, IdlePolicy::Park] {
            for _ in 0..20 {
                let pool = ThreadPoolBuilder::new()
                    .num_threads(2)
                    .idle_policy(policy)
                    .build()
                    .expect("a pool");
                let (started, wait_started) = mpsc::channel();
                let handle = pool.spawn_task(async move {
                    bwos::block_on(async move {
                        let child = task::spawn(async move {
                            let _ = started.send(());
                            bwos::time::sleep(Duration::from_millis(5)).await;
                        });
                        // Cancelled if the stopping worker held it in its
                        // queue; either way the `block_on` returns.
                        child.await.is_ok()
                    })
                });
                wait_started.recv().expect("the child starts");
                // Dropping joins the workers: the one in the `block_on`
                // stops once the child's sleep has ended.
                let (dropped, wait_dropped) = mpsc::channel();
                thread::spawn(move || {
                    drop(pool);
                    let _ = dropped.send(());
                });
                assert!(
                    wait_dropped.recv_timeout(hang_limit()).is_ok(),
                    "{policy:?}: the pool's drop waits for a timer that nobody fires"
                );
                // The task was running when the drop began: it finishes.
                let outcome = futures_lite::future::block_on(handle);
                assert!(outcome.is_ok(), "{policy:?}: {outcome:?}");
            }
        }
    });
}

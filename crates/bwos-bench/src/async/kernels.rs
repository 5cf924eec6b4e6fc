//! The scheduler microbenchmarks of tokio's `benches/rt_multi_threaded.rs`,
//! written once over [`AsyncRuntime`]: spawning many tasks from inside a
//! task and from outside (idle and busy runtime), ping-pong between tasks,
//! yielding many times, chained spawns. The sizes are tokio's (10,000
//! spawns, 1,000 ping-pongs, 200 tasks yielding 1,000 times, a chain of
//! 1,000), divided by ten for `--quick`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};

use super::runtime::AsyncRuntime;

/// One workload: its name and its body, run once per timed iteration.
pub struct Kernel<R> {
    pub name: &'static str,
    pub run: fn(&R, Scale),
}

/// Sizes divided by `divisor` (1 normally, 10 for `--quick`), and the
/// runtime's worker count.
#[derive(Clone, Copy, Debug)]
pub struct Scale {
    pub divisor: usize,
    pub workers: usize,
}

impl Scale {
    fn of(self, size: usize) -> usize {
        (size / self.divisor).max(1)
    }
}

const NUM_SPAWN: usize = 10_000;
const NUM_PINGS: usize = 1_000;
const YIELD_TASKS: usize = 200;
const NUM_YIELD: usize = 1_000;
const CHAIN: usize = 1_000;

/// All kernels, in table order.
pub fn all<R: AsyncRuntime>() -> Vec<Kernel<R>> {
    vec![
        Kernel {
            name: "spawn_many_local",
            run: spawn_many_local::<R>,
        },
        Kernel {
            name: "spawn_many_remote_idle",
            run: spawn_many_remote_idle::<R>,
        },
        Kernel {
            name: "spawn_many_remote_busy",
            run: spawn_many_remote_busy::<R>,
        },
        Kernel {
            name: "ping_pong",
            run: ping_pong::<R>,
        },
        Kernel {
            name: "yield_many",
            run: yield_many::<R>,
        },
        Kernel {
            name: "chained_spawn",
            run: chained_spawn::<R>,
        },
    ]
}

/// Counts down from `n`; the task that reaches zero signals `done`.
#[derive(Clone)]
struct Countdown {
    left: Arc<AtomicUsize>,
    done: mpsc::SyncSender<()>,
}

impl Countdown {
    fn new(n: usize) -> (Countdown, mpsc::Receiver<()>) {
        let (done, finished) = mpsc::sync_channel(1);
        let countdown = Countdown {
            left: Arc::new(AtomicUsize::new(n)),
            done,
        };
        (countdown, finished)
    }

    fn tick(&self) {
        // AcqRel: the last tick sees the others' work.
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.done
                .send(())
                .expect("the benchmark waits for the signal");
        }
    }
}

/// A task spawns `NUM_SPAWN` tiny tasks (from inside the runtime).
fn spawn_many_local<R: AsyncRuntime>(rt: &R, scale: Scale) {
    let n = scale.of(NUM_SPAWN);
    let (countdown, finished) = Countdown::new(n);
    let inner = rt.clone();
    rt.block_on(async move {
        for _ in 0..n {
            let countdown = countdown.clone();
            inner.spawn_detached(async move { countdown.tick() });
        }
    });
    finished.recv().expect("all tasks ran");
}

/// A thread outside the (idle) runtime spawns `NUM_SPAWN` tasks, then
/// awaits their handles.
fn spawn_many_remote_idle<R: AsyncRuntime>(rt: &R, scale: Scale) {
    let handles: Vec<_> = (0..scale.of(NUM_SPAWN))
        .map(|i| rt.spawn(async move { i }))
        .collect();
    let sum = rt.block_on(async move {
        let mut sum = 0;
        for handle in handles {
            sum += handle.await;
        }
        sum
    });
    std::hint::black_box(sum);
}

/// As `spawn_many_remote_idle`, while one task per worker keeps yielding:
/// the spawned tasks compete with always-ready ones.
fn spawn_many_remote_busy<R: AsyncRuntime>(rt: &R, scale: Scale) {
    let stop = Arc::new(AtomicBool::new(false));
    let busy: Vec<_> = (0..scale.workers)
        .map(|_| {
            let stop = Arc::clone(&stop);
            rt.spawn(async move {
                // Relaxed: a flag; the handles below order the rest.
                while !stop.load(Ordering::Relaxed) {
                    R::yield_now().await;
                }
            })
        })
        .collect();
    spawn_many_remote_idle(rt, scale);
    stop.store(true, Ordering::Relaxed);
    rt.block_on(async move {
        for handle in busy {
            handle.await;
        }
    });
}

/// `NUM_PINGS` tasks each spawn a partner and exchange a message with it
/// through two oneshot channels.
fn ping_pong<R: AsyncRuntime>(rt: &R, scale: Scale) {
    let n = scale.of(NUM_PINGS);
    let (countdown, finished) = Countdown::new(n);
    let inner = rt.clone();
    rt.block_on(async move {
        for _ in 0..n {
            let countdown = countdown.clone();
            let partner_rt = inner.clone();
            inner.spawn_detached(async move {
                let (ping, pinged) = futures_channel::oneshot::channel::<()>();
                let (pong, ponged) = futures_channel::oneshot::channel::<()>();
                partner_rt.spawn_detached(async move {
                    pinged.await.expect("pinged");
                    pong.send(()).expect("the pinger waits");
                });
                // Let go before the signal that lets the benchmark drop
                // its own handle, so that the benchmark's is usually the
                // last (a runtime whose last handle goes in a task shuts
                // down without waiting for its threads: `TokioRuntime`).
                drop(partner_rt);
                ping.send(()).expect("the partner waits");
                ponged.await.expect("ponged");
                countdown.tick();
            });
        }
    });
    finished.recv().expect("all pings answered");
}

/// `YIELD_TASKS` tasks yield `NUM_YIELD` times each.
fn yield_many<R: AsyncRuntime>(rt: &R, scale: Scale) {
    let (tasks, yields) = (YIELD_TASKS, scale.of(NUM_YIELD));
    let (countdown, finished) = Countdown::new(tasks);
    for _ in 0..tasks {
        let countdown = countdown.clone();
        rt.spawn_detached(async move {
            for _ in 0..yields {
                R::yield_now().await;
            }
            countdown.tick();
        });
    }
    finished.recv().expect("all tasks finished yielding");
}

/// Each task spawns the next, `CHAIN` deep.
fn chained_spawn<R: AsyncRuntime>(rt: &R, scale: Scale) {
    fn link<R: AsyncRuntime>(rt: R, left: usize, done: mpsc::SyncSender<()>) {
        if left == 0 {
            // Drop the runtime handle before the signal (see `ping_pong`).
            drop(rt);
            done.send(()).expect("the benchmark waits");
        } else {
            let next = rt.clone();
            rt.spawn_detached(async move { link(next, left - 1, done) });
        }
    }
    let (done, finished) = mpsc::sync_channel(1);
    let first = rt.clone();
    let depth = scale.of(CHAIN);
    rt.block_on(async move { link(first, depth, done) });
    finished.recv().expect("the chain ended");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::r#async::runtime::{Bwos, Smol, Tokio};

    fn run_all<R: AsyncRuntime>() {
        let rt = R::start(2);
        for kernel in all::<R>() {
            (kernel.run)(
                &rt,
                Scale {
                    divisor: 100,
                    workers: 2,
                },
            );
        }
    }

    #[test]
    fn every_kernel_finishes_on_every_runtime() {
        bwos_testkit::watchdog("every_kernel_finishes_on_every_runtime", || {
            run_all::<Bwos>();
            run_all::<Tokio>();
            run_all::<Smol>();
        });
    }
}

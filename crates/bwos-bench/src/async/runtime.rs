//! One small trait per async runtime, so that every kernel and the HTTP
//! server are written once: bwos (its pool's async tasks), tokio (the
//! multi-thread runtime) and smol (`async-executor`, one runner thread per
//! worker). All three use the same worker count.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::thread;

/// An async runtime with `threads` workers.
pub trait AsyncRuntime: Clone + Send + Sync + 'static {
    /// The name in tables.
    const NAME: &'static str;
    /// A spawned task's handle: awaiting it gives the task's output (a
    /// panicked task panics the awaiting one).
    type Handle<T: Send + 'static>: Future<Output = T> + Send + 'static;

    /// Starts the runtime.
    fn start(threads: usize) -> Self;
    /// Spawns `future` on the runtime (from inside or outside it).
    fn spawn<F>(&self, future: F) -> Self::Handle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static;
    /// Spawns `future` and forgets its handle (the task keeps running).
    fn spawn_detached<F>(&self, future: F)
    where
        F: Future<Output = ()> + Send + 'static;
    /// Runs `future` as a task of the runtime and waits for it on the
    /// calling thread (the same way for every runtime: the root task runs
    /// on a worker).
    fn block_on<F>(&self, future: F) -> F::Output
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static;
    /// The runtime's own `yield_now`.
    fn yield_now() -> impl Future<Output = ()> + Send;
}

/// A `Result`-returning join handle seen as its value (a panic in the task
/// resumes in the awaiting task).
pub struct Unwrapped<H>(H);

impl<H, T, E> Future for Unwrapped<H>
where
    H: Future<Output = Result<T, E>> + Unpin,
    E: std::fmt::Debug,
{
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        Pin::new(&mut self.0)
            .poll(cx)
            .map(|outcome| outcome.expect("a benchmark task failed"))
    }
}

/// bwos: one pool serves fork/join and async tasks.
#[derive(Clone)]
pub struct Bwos(Arc<bwos::ThreadPool>);

impl AsyncRuntime for Bwos {
    const NAME: &'static str = "bwos";
    type Handle<T: Send + 'static> = Unwrapped<bwos::task::JoinHandle<T>>;

    fn start(threads: usize) -> Self {
        let pool = bwos::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a bwos pool");
        Bwos(Arc::new(pool))
    }

    fn spawn<F>(&self, future: F) -> Self::Handle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        Unwrapped(self.0.spawn_task(future))
    }

    fn spawn_detached<F>(&self, future: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        drop(self.0.spawn_task(future));
    }

    fn block_on<F>(&self, future: F) -> F::Output
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        // `ThreadPool::block_on` polls `future` on this thread; spawning it
        // runs it on a worker, as the other runtimes do.
        let root = self.0.spawn_task(future);
        self.0.block_on(root).expect("the root task failed")
    }

    fn yield_now() -> impl Future<Output = ()> + Send {
        bwos::task::yield_now()
    }
}

/// tokio's multi-thread runtime.
#[derive(Clone)]
pub struct Tokio(Arc<TokioRuntime>);

/// The runtime behind [`Tokio`]'s handles. A task may hold the last handle
/// (a kernel's task can still be finishing when the benchmark, signalled,
/// drops its own), and tokio panics when a runtime is dropped on one of its
/// threads: there it is shut down without waiting for its threads.
pub struct TokioRuntime(Option<tokio::runtime::Runtime>);

impl TokioRuntime {
    fn get(&self) -> &tokio::runtime::Runtime {
        self.0
            .as_ref()
            .expect("the runtime lives until its last handle goes")
    }
}

impl Drop for TokioRuntime {
    fn drop(&mut self) {
        let Some(runtime) = self.0.take() else {
            return;
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            runtime.shutdown_background();
        }
        // Elsewhere `runtime` drops here, waiting for its threads.
    }
}

impl AsyncRuntime for Tokio {
    const NAME: &'static str = "tokio";
    type Handle<T: Send + 'static> = Unwrapped<tokio::task::JoinHandle<T>>;

    fn start(threads: usize) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        Tokio(Arc::new(TokioRuntime(Some(runtime))))
    }

    fn spawn<F>(&self, future: F) -> Self::Handle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        Unwrapped(self.0.get().spawn(future))
    }

    fn spawn_detached<F>(&self, future: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        drop(self.0.get().spawn(future));
    }

    fn block_on<F>(&self, future: F) -> F::Output
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        // `Runtime::block_on` would poll `future` on this thread; spawning
        // it runs it on a worker, as the other runtimes do.
        let handle = self.0.get().spawn(future);
        self.0.get().block_on(handle).expect("the root task failed")
    }

    fn yield_now() -> impl Future<Output = ()> + Send {
        tokio::task::yield_now()
    }
}

/// smol: an `async-executor` run by `threads` threads (its I/O and timers
/// come from `async-io`'s reactor).
#[derive(Clone)]
pub struct Smol(Arc<SmolInner>);

pub struct SmolInner {
    executor: Arc<async_executor::Executor<'static>>,
    /// One per runner; dropping them (with the last clone of the runtime)
    /// stops the runners.
    stop: Vec<futures_channel::oneshot::Sender<()>>,
    runners: Vec<thread::JoinHandle<()>>,
}

impl Drop for SmolInner {
    fn drop(&mut self) {
        self.stop.clear();
        let current = thread::current().id();
        for runner in self.runners.drain(..) {
            // A task may hold the last handle (see `TokioRuntime`): its
            // runner stops once the task returns, and joining itself would
            // fail.
            if runner.thread().id() != current {
                let _ = runner.join();
            }
        }
    }
}

impl AsyncRuntime for Smol {
    const NAME: &'static str = "smol";
    type Handle<T: Send + 'static> = async_executor::Task<T>;

    fn start(threads: usize) -> Self {
        let executor = Arc::new(async_executor::Executor::new());
        let mut stop = Vec::with_capacity(threads);
        let runners = (0..threads)
            .map(|i| {
                let (stop_runner, stopped) = futures_channel::oneshot::channel::<()>();
                stop.push(stop_runner);
                let executor = Arc::clone(&executor);
                thread::Builder::new()
                    .name(format!("smol-{i}"))
                    .spawn(move || {
                        futures_lite::future::block_on(executor.run(async move {
                            let _ = stopped.await;
                        }));
                    })
                    .expect("a smol runner thread")
            })
            .collect();
        Smol(Arc::new(SmolInner {
            executor,
            stop,
            runners,
        }))
    }

    fn spawn<F>(&self, future: F) -> Self::Handle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.0.executor.spawn(future)
    }

    fn spawn_detached<F>(&self, future: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.0.executor.spawn(future).detach();
    }

    fn block_on<F>(&self, future: F) -> F::Output
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        futures_lite::future::block_on(self.0.executor.spawn(future))
    }

    fn yield_now() -> impl Future<Output = ()> + Send {
        futures_lite::future::yield_now()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A task drops the last handle of its runtime, on one of the
    /// runtime's threads, and goes on.
    fn the_last_handle_goes_in_a_task<R: AsyncRuntime>() {
        let rt = R::start(2);
        let inside = rt.clone();
        let (go, wait_for_go) = mpsc::channel::<()>();
        let (done, finished) = mpsc::channel::<()>();
        rt.spawn_detached(async move {
            // Blocks this worker until the test dropped its own handle.
            wait_for_go.recv().expect("the test signals");
            drop(inside);
            done.send(()).expect("the test waits");
        });
        drop(rt);
        go.send(()).expect("the task waits");
        finished
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| {
                panic!(
                    "{}: the task that dropped the last handle did not go on",
                    R::NAME
                )
            });
    }

    #[test]
    fn the_last_handle_of_a_runtime_may_go_on_its_own_thread() {
        bwos_testkit::watchdog(
            "the_last_handle_of_a_runtime_may_go_on_its_own_thread",
            || {
                the_last_handle_goes_in_a_task::<Bwos>();
                the_last_handle_goes_in_a_task::<Tokio>();
                the_last_handle_goes_in_a_task::<Smol>();
            },
        );
    }
}

#[bwos::test(worker_threads = "4")]
async fn threads_as_a_string() {}

#[bwos::test(start_paused = 1)]
async fn paused_as_a_number() {}

#[bwos::test(worker_threads)]
async fn no_value() {}

#[bwos::test(worker_threads = 2, worker_threads = 3)]
async fn twice() {}

fn main() {}

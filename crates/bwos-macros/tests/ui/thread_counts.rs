#[bwos::test(worker_threads = 0)]
async fn none() {}

#[bwos::main(worker_threads = 1000000)]
async fn main() {}

#[bwos::test(flavor = "multi_thread")]
async fn flavor() {}

#[bwos::main(start_paused = true)]
async fn main() {}

// Every accepted form compiles (the `#[test]` functions are left out of a
// non-test build; `main` runs).
#[bwos::test]
async fn no_arguments() {}

#[bwos::test(worker_threads = 2)]
async fn threads() {}

#[bwos::test(start_paused = false, worker_threads = 1,)]
async fn not_paused() -> Result<(), String> {
    Ok(())
}

#[bwos::main(worker_threads = 2)]
async fn main() {
    assert_eq!(bwos::current_num_threads(), 2);
}

//! Runs in a `RUSTFLAGS="--cfg loom"` build: the user's own loom model and
//! bwos's API in one test binary.

#[cfg(loom)]
#[test]
fn the_users_model_runs_under_loom() {
    loom::model(|| {
        let hits = loom::sync::Arc::new(downstream_loom::Hits::default());
        let other = hits.clone();
        let thread = loom::thread::spawn(move || other.hit());
        hits.hit();
        thread.join().unwrap();
        assert_eq!(hits.get(), 2);
    });
}

#[test]
fn bwos_works_in_the_same_build() {
    let values: Vec<u64> = (0..10_000).collect();
    assert_eq!(downstream_loom::sum(&values), 49_995_000);
    let pool = bwos::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let doubled = pool.block_on(async { bwos::task::spawn(async { 21 * 2 }).await.unwrap() });
    assert_eq!(doubled, 42);
}

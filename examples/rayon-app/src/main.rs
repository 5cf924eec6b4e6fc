//! An ordinary rayon program: nothing here mentions bwos. Its Cargo.toml
//! patches rayon-core onto the drop-in, so these parallel iterators run on
//! bwos workers, which this program checks by their thread names.

use rayon::prelude::*;

fn main() {
    let numbers: Vec<u64> = (1..=1_000_000).collect();

    let sum_of_squares: u64 = numbers.par_iter().map(|n| n * n).sum();
    assert_eq!(sum_of_squares, 333_333_833_333_500_000);

    let mut words: Vec<String> = (0..100_000)
        .map(|i| format!("w{}", (i * 7919) % 100_000))
        .collect();
    words.par_sort_unstable();
    assert!(words.windows(2).all(|pair| pair[0] <= pair[1]));

    let evens = numbers.par_iter().filter(|n| *n % 2 == 0).count();
    assert_eq!(evens, 500_000);

    // The proof that the patch took: rayon's workers are bwos's.
    let names: Vec<String> =
        rayon::broadcast(|_| std::thread::current().name().unwrap_or("").to_owned());
    assert!(
        names.iter().all(|name| name.starts_with("bwos-worker-")),
        "rayon's workers are not bwos's: {names:?}"
    );
    println!(
        "sum of squares {sum_of_squares}, {} words sorted, {evens} evens, on {} threads: {}",
        words.len(),
        names.len(),
        names.join(", ")
    );
}

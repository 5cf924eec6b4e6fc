//! `bwos::scope`: spawned jobs that borrow from the caller. Counts the
//! words of a text in chunks, one job per chunk, each writing its own slot
//! of a results vector that lives on the caller's stack.
//!
//! ```text
//! cargo run --release -p bwos --example scope
//! ```

fn main() {
    let text = "the quick brown fox jumps over the lazy dog ".repeat(50_000);
    let chunks: Vec<&str> = split_at_spaces(&text, 64);
    let mut counts = vec![0usize; chunks.len()];
    bwos::scope(|s| {
        for (chunk, count) in chunks.iter().zip(counts.iter_mut()) {
            // Borrows `chunk` and `count`: the scope waits for every job.
            s.spawn(move |_| *count = chunk.split_whitespace().count());
        }
    });
    let words: usize = counts.iter().sum();
    assert_eq!(words, 9 * 50_000);
    println!("{words} words in {} chunks", chunks.len());
}

/// About `parts` pieces of `text`, each ending at a space, so that no word
/// is cut in two.
fn split_at_spaces(text: &str, parts: usize) -> Vec<&str> {
    let target = text.len().div_ceil(parts).max(1);
    let mut pieces = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let cut = rest[target.min(rest.len())..]
            .find(' ')
            .map_or(rest.len(), |at| target + at + 1);
        let (piece, tail) = rest.split_at(cut.min(rest.len()));
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

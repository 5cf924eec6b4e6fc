//! (round, index) pairs packed into one 64-bit word.
//!
//! Every position in a block's metadata (front, back, steal position and
//! finished-steal count) is such a pair, so the round and the index change
//! together in one atomic access. The round lives in the high 32 bits, the
//! index in the low 32 bits. Indices never exceed twice the block size
//! (the finished-steal count can be bumped by a whole block at once), and
//! [`MAX_BLOCK_SIZE`](crate::MAX_BLOCK_SIZE) keeps that below `2^32`, so
//! index arithmetic never carries into the round.

/// Packs `round` and `index` into one word.
#[inline(always)]
pub(crate) const fn pack(round: u32, index: u32) -> u64 {
    ((round as u64) << 32) | index as u64
}

/// The round of a packed word.
#[inline(always)]
pub(crate) const fn round(word: u64) -> u32 {
    (word >> 32) as u32
}

/// The index of a packed word.
#[inline(always)]
pub(crate) const fn index(word: u64) -> u32 {
    word as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_and_index_survive_packing() {
        for (r, i) in [
            (0, 0),
            (1, 2),
            (u32::MAX, 0),
            (7, u32::MAX),
            (u32::MAX, u32::MAX),
        ] {
            let w = pack(r, i);
            assert_eq!((round(w), index(w)), (r, i));
        }
    }

    #[test]
    fn index_arithmetic_stays_inside_the_word() {
        let w = pack(3, 10);
        assert_eq!(w + 5, pack(3, 15));
        assert_eq!(round(w + 5), 3);
    }
}

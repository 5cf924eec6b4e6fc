//! (round, index) pairs packed into one 64-bit word.
//!
//! Every position in a block's metadata (front, back, steal position and
//! finished-steal count) is such a pair, so the round and the index change
//! together in one atomic access. The round takes the high
//! [`ROUND_BITS`] = 40 bits, the index the low [`INDEX_BITS`] = 24 bits.
//! Indices never exceed twice the block size (the finished-steal count can
//! be bumped by a whole block at once), and
//! [`MAX_BLOCK_SIZE`](crate::MAX_BLOCK_SIZE) = 2^22 keeps that below
//! `2^24`, so index arithmetic on a packed word never carries into the
//! round.
//!
//! # Why 40-bit rounds
//! Rounds are compared for equality only, so they may wrap; what must not
//! happen is a thief that read a word of round `r` and stalled while the
//! owner made so many laps that the block is back in round `r` in the same
//! state: its CAS would then succeed on a stale view (an ABA). With 32-bit
//! rounds that took 2^32 laps, about a minute for a queue of 2 blocks of 1
//! entry; 40 bits make it 2^40 laps of one block (the owner moves through
//! all blocks once per lap), 256 times as many: hours of a thief stalled
//! between two of its instructions while the owner does nothing but move
//! blocks.

/// Bits of the round number.
pub(crate) const ROUND_BITS: u32 = 40;
/// Bits of the index.
pub(crate) const INDEX_BITS: u32 = 24;
/// Rounds are counted modulo `2^ROUND_BITS`.
pub(crate) const ROUND_MASK: u64 = (1 << ROUND_BITS) - 1;
const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;

/// Packs `round` (below `2^ROUND_BITS`) and `index` (below `2^INDEX_BITS`)
/// into one word.
#[inline(always)]
pub(crate) const fn pack(round: u64, index: u32) -> u64 {
    debug_assert!(round <= ROUND_MASK);
    debug_assert!(index as u64 <= INDEX_MASK);
    (round << INDEX_BITS) | index as u64
}

/// The round of a packed word.
#[inline(always)]
pub(crate) const fn round(word: u64) -> u64 {
    word >> INDEX_BITS
}

/// The index of a packed word.
#[inline(always)]
pub(crate) const fn index(word: u64) -> u32 {
    (word & INDEX_MASK) as u32
}

/// The round before `round`, modulo `2^ROUND_BITS`.
#[inline(always)]
pub(crate) const fn previous_round(round: u64) -> u64 {
    round.wrapping_sub(1) & ROUND_MASK
}

/// The round `laps` after `round`, modulo `2^ROUND_BITS`.
#[inline(always)]
pub(crate) const fn round_after(round: u64, laps: u64) -> u64 {
    round.wrapping_add(laps) & ROUND_MASK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_and_index_survive_packing() {
        for (r, i) in [
            (0, 0),
            (1, 2),
            (ROUND_MASK, 0),
            (7, INDEX_MASK as u32),
            (ROUND_MASK, INDEX_MASK as u32),
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
        // Twice the largest block size still fits the index.
        let top = pack(ROUND_MASK, 0) + 2 * crate::MAX_BLOCK_SIZE as u64;
        assert_eq!(round(top), ROUND_MASK);
    }

    #[test]
    fn rounds_wrap_modulo_2_to_the_40() {
        assert_eq!(previous_round(0), ROUND_MASK);
        assert_eq!(round_after(ROUND_MASK, 1), 0);
        assert_eq!(round_after(ROUND_MASK - 1, 3), 1);
        assert_eq!(previous_round(round_after(ROUND_MASK, 1)), ROUND_MASK);
    }
}

//! Medians, spreads and pairwise ratios of repeated measurements.

use serde::Serialize;

/// The median, minimum and maximum of a set of samples.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Summary {
    /// Summarises `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mid = sorted.len() / 2;
        let median = if sorted.len() % 2 == 1 {
            sorted[mid]
        } else {
            (sorted[mid - 1] + sorted[mid]) / 2.0
        };
        Some(Summary {
            median,
            min: sorted[0],
            max: sorted[sorted.len() - 1],
        })
    }

    /// Ratios `a[i] / b[i]` of two series measured pair by pair (the same
    /// repetition, back to back), summarised.
    pub fn of_ratios(a: &[f64], b: &[f64]) -> Option<Summary> {
        let ratios: Vec<f64> = a
            .iter()
            .zip(b)
            .filter(|(_, b)| **b > 0.0)
            .map(|(a, b)| a / b)
            .collect();
        Summary::of(&ratios)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(Summary::of(&[3.0, 1.0, 2.0]).unwrap().median, 2.0);
        let even = Summary::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((even.median, even.min, even.max), (2.5, 1.0, 4.0));
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn ratios_are_taken_pair_by_pair() {
        let r = Summary::of_ratios(&[2.0, 9.0, 4.0], &[1.0, 3.0, 4.0]).unwrap();
        assert_eq!((r.median, r.min, r.max), (2.0, 1.0, 3.0));
        assert!(Summary::of_ratios(&[1.0], &[0.0]).is_none());
    }
}

//! `slicer`: each chunk is cut into pieces of about `average_size` bytes (± `size_variation`),
//! written `delay` µs apart (Toxiproxy's `toxics/slicer.go`). Every byte is delivered.

use std::time::Duration;

use rand::Rng;
use serde::{Deserialize, Serialize};

use super::AttrError;

/// The largest accepted piece size, bytes.
const MAX_SIZE: i64 = 1 << 20;
/// The largest accepted delay between pieces, µs (10 s).
const MAX_DELAY_US: i64 = 10_000_000;

/// The attributes of a `slicer` toxic.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Slicer {
    /// The average piece, bytes (at least 1).
    pub average_size: i64,
    /// The largest deviation of a piece from `average_size`, bytes (below `average_size`).
    pub size_variation: i64,
    /// The pause after each piece, µs.
    pub delay: i64,
}

impl Slicer {
    pub(super) fn check(&self) -> Result<(), AttrError> {
        if !(1..=MAX_SIZE).contains(&self.average_size) {
            return Err(AttrError::range("average_size", 1, MAX_SIZE, "bytes"));
        }
        if !(0..self.average_size).contains(&self.size_variation) {
            return Err(AttrError(format!(
                "size_variation must be at least 0 and below average_size ({}), got {}",
                self.average_size, self.size_variation
            )));
        }
        if !(0..=MAX_DELAY_US).contains(&self.delay) {
            return Err(AttrError::range("delay", 0, MAX_DELAY_US, "µs"));
        }
        Ok(())
    }

    /// The pause after each piece.
    pub(crate) fn delay(&self) -> Duration {
        Duration::from_micros(self.delay as u64)
    }

    /// The ends of the pieces of a chunk of `len` bytes, ascending, the last one `len`: halves
    /// are split (the middle moved by up to `size_variation`) until a piece is within
    /// `size_variation` of `average_size` or smaller.
    pub(crate) fn cuts(&self, len: usize, rng: &mut impl Rng) -> Vec<usize> {
        let mut ends = Vec::new();
        self.split(0, len, rng, &mut ends);
        ends
    }

    fn split(&self, start: usize, end: usize, rng: &mut impl Rng, ends: &mut Vec<usize>) {
        let (average, variation) = (self.average_size as usize, self.size_variation as usize);
        if end - start <= average + variation {
            if end > start {
                ends.push(end);
            }
            return;
        }
        let mut mid = start + (end - start) / 2;
        if variation > 0 {
            // Half a piece is more than the variation, so the middle stays inside.
            mid = mid + rng.gen_range(0..2 * variation) - variation;
        }
        self.split(start, mid, rng, ends);
        self.split(mid, end, rng, ends);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_chunk_and_keep_near_the_average() {
        let slicer = Slicer {
            average_size: 10,
            size_variation: 3,
            delay: 0,
        };
        let mut rng = rand::thread_rng();
        for len in [0usize, 1, 9, 13, 14, 100, 16_384] {
            let cuts = slicer.cuts(len, &mut rng);
            assert_eq!(cuts.last().copied().unwrap_or(0), len);
            let mut prev = 0;
            for &end in &cuts {
                assert!(end > prev, "pieces are never empty: {cuts:?}");
                assert!(
                    end - prev <= 13,
                    "{len}: a piece of {} in {cuts:?}",
                    end - prev
                );
                prev = end;
            }
            if len >= 100 {
                assert!(cuts.len() >= len / 13, "{len}: {} pieces", cuts.len());
            }
        }
    }
}

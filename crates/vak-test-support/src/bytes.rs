//! Reproducible random bytes: xorshift32, the same sequence for the same seed on every run.

/// A xorshift32 generator (Marsaglia's 13/17/5): cheap, reproducible, not for secrets.
#[derive(Debug, Clone)]
pub struct XorShift(u32);

impl XorShift {
    /// A generator from a nonzero seed (zero would stay zero; it is taken as 1).
    #[must_use]
    pub fn new(seed: u32) -> Self {
        Self(seed.max(1))
    }

    /// The next 32 bits.
    pub fn next_u32(&mut self) -> u32 {
        let mut seed = self.0;
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        self.0 = seed;
        seed
    }
}

/// `len` random bytes from `seed`: the low byte of each step of [`XorShift`].
#[must_use]
pub fn random_bytes(seed: u32, len: usize) -> Vec<u8> {
    let mut generator = XorShift::new(seed);
    (0..len).map(|_| generator.next_u32() as u8).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_bytes() {
        assert_eq!(random_bytes(7, 100), random_bytes(7, 100));
        assert_ne!(random_bytes(7, 100), random_bytes(8, 100));
        let bytes = random_bytes(0x9e37_79b9, 4096);
        let distinct: std::collections::BTreeSet<u8> = bytes.iter().copied().collect();
        assert!(distinct.len() > 200, "{}", distinct.len());
    }
}

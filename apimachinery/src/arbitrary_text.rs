//! Test support: arbitrary UTF-8 text for the property tests of the parsers that read a
//! caller's free text (selectors, names, quantities). A small deterministic generator
//! (xorshift64*) instead of a crate: the texts lean towards the characters each parser
//! treats specially, multi-byte characters right next to them, and any Unicode scalar value;
//! and quantities written in Kubernetes' grammar.

/// How many texts each property sees.
pub const CASES: usize = 4000;

/// Characters of every UTF-8 width, and ones that are easy to get wrong: a combining mark, the
/// replacement character, a byte-order mark, NUL, a non-breaking space.
const MULTI_BYTE: &[char] = &[
    'é', 'ß', 'µ', 'μ', '中', '文', '😀', '\u{301}', '\u{fffd}', '\u{feff}', '\0', '\u{a0}', 'İ',
];

/// A seeded generator of texts.
pub struct TextGen(u64);

impl TextGen {
    /// A generator; the same seed gives the same texts.
    pub fn new(seed: u64) -> TextGen {
        TextGen(seed | 1)
    }

    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    fn pick(&mut self, from: &[char]) -> char {
        from[self.below(from.len())]
    }

    /// One character: from `special`, ASCII alphanumeric, multi-byte, or any scalar value.
    pub fn char(&mut self, special: &[char]) -> char {
        match self.below(8) {
            0..=2 if !special.is_empty() => self.pick(special),
            0..=4 => {
                const ALNUM: &[u8] =
                    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
                char::from(ALNUM[self.below(ALNUM.len())])
            }
            5 | 6 => self.pick(MULTI_BYTE),
            _ => loop {
                if let Some(c) = char::from_u32((self.next_u64() % 0x11_0000) as u32) {
                    break c;
                }
            },
        }
    }

    /// A text of up to `max_chars` characters drawn by [`TextGen::char`].
    pub fn text(&mut self, special: &[char], max_chars: usize) -> String {
        let n = self.below(max_chars + 1);
        (0..n).map(|_| self.char(special)).collect()
    }

    /// A quantity written in Kubernetes' grammar (`[+-]digits[.digits]suffix`), with every
    /// decimal, binary and exponent suffix.
    pub fn quantity(&mut self) -> String {
        const SUFFIXES: &[&str] = &[
            "", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
            "e3", "E-2", "e+1",
        ];
        let sign = ["", "+", "-"][self.below(3)];
        let int: String = (0..1 + self.below(4))
            .map(|_| char::from(b'0' + self.below(10) as u8))
            .collect();
        let frac: String = (0..self.below(4))
            .map(|_| char::from(b'0' + self.below(10) as u8))
            .collect();
        let dot = if frac.is_empty() { "" } else { "." };
        let suffix = SUFFIXES[self.below(SUFFIXES.len())];
        format!("{sign}{int}{dot}{frac}{suffix}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_cover_every_width_and_the_special_characters() {
        let mut g = TextGen::new(7);
        let mut widths = [false; 5];
        let mut special = false;
        for _ in 0..CASES {
            let t = g.text(&['='], 16);
            for c in t.chars() {
                widths[c.len_utf8()] = true;
                special |= c == '=';
            }
        }
        assert!(widths[1..].iter().all(|w| *w), "{widths:?}");
        assert!(special);
        let again: Vec<String> = {
            let mut g = TextGen::new(7);
            (0..3).map(|_| g.text(&['='], 16)).collect()
        };
        let mut g = TextGen::new(7);
        assert_eq!(
            again,
            (0..3).map(|_| g.text(&['='], 16)).collect::<Vec<_>>()
        );
    }
}

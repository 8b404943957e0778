//! JSON text the caches hold. Tens of thousands of Works and templates are cached and their
//! text is most of what the caches hold: text that LZ4 shrinks is kept packed (about half the
//! size) and unpacked by the few readers of the whole text.

use std::borrow::Cow;
use std::sync::Arc;

/// Text shorter than this stays plain: packing saves little on it.
const MIN_PACKED: usize = 512;

/// JSON text, plain or packed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Text {
    /// The text itself.
    Plain(Arc<str>),
    /// The LZ4 block of the text, its length in front.
    Packed(Arc<[u8]>),
}

impl Text {
    /// The text, packed when that saves at least an eighth.
    pub fn packed(text: &str) -> Text {
        if text.len() >= MIN_PACKED {
            let packed = lz4_flex::block::compress_prepend_size(text.as_bytes());
            if packed.len() <= text.len() - text.len() / 8 {
                return Text::Packed(Arc::from(packed));
            }
        }
        Text::Plain(Arc::from(text))
    }

    /// The same text, packed when that saves memory.
    pub fn pack(self) -> Text {
        match self {
            Text::Plain(text) => Text::packed(&text),
            packed => packed,
        }
    }

    /// The text.
    pub fn get(&self) -> Cow<'_, str> {
        match self {
            Text::Plain(text) => Cow::Borrowed(text),
            // Packed here from a `str`, so it unpacks to UTF-8; anything else would be memory
            // corruption, answered with empty text that fails to parse.
            Text::Packed(packed) => lz4_flex::block::decompress_size_prepended(packed)
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .map_or(Cow::Borrowed(""), Cow::Owned),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_packed_and_read_whole_short_text_stays_plain() {
        let long = format!(
            r#"{{"kind":"ConfigMap","data":{{"k":"{}"}}}}"#,
            "abc ".repeat(300)
        );
        let t = Text::packed(&long);
        assert!(matches!(t, Text::Packed(_)));
        assert_eq!(t.get(), long);
        assert_eq!(Text::Plain(Arc::from(long.as_str())).pack(), t);
        let short = r#"{"kind":"ConfigMap"}"#;
        assert_eq!(Text::packed(short), Text::Plain(Arc::from(short)));
        assert_eq!(Text::packed(short).get(), short);
    }

    #[test]
    fn corrupt_packed_text_reads_as_nothing() {
        let t = Text::Packed(Arc::from(&[200u8, 1, 0, 0, 7][..]));
        assert_eq!(t.get(), "");
    }
}

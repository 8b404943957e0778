//! JSON as Go's `encoding/json` writes it, which is how kube-apiserver stores custom resources
//! (apimachinery's `unstructured.UnstructuredJSONScheme`: `json.NewEncoder(w).Encode(object)`)
//! and how its JSON serializer writes every object (`runtime/serializer/json`).
//!
//! serde_json's compact output is already most of it (a `Value`'s maps are sorted, as Go sorts
//! a map's keys); what differs is fixed here:
//! - `<`, `>` and `&` are written `\u003c`, `\u003e`, `\u0026`, and U+2028 and U+2029 as
//!   `\u2028`, `\u2029` (Go's HTML-safe escaping, on by default);
//! - floating-point numbers are written as Go's `floatEncoder` writes them: no `.0` on whole
//!   numbers, plain notation from 1e-6 to 1e21, beyond it `1e+21` and `1e-7`;
//! - [`encode`] ends the text with a newline, as `Encoder.Encode` does.

use std::io;

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter};

/// serde_json's compact formatter with Go's escaping and number format.
#[derive(Clone, Copy, Debug, Default)]
pub struct GoFormatter;

impl Formatter for GoFormatter {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let bytes = fragment.as_bytes();
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            let escape: &[u8] = match c {
                '<' => b"\\u003c",
                '>' => b"\\u003e",
                '&' => b"\\u0026",
                '\u{2028}' => b"\\u2028",
                '\u{2029}' => b"\\u2029",
                _ => continue,
            };
            writer.write_all(&bytes[start..i])?;
            writer.write_all(escape)?;
            start = i + c.len_utf8();
        }
        writer.write_all(&bytes[start..])
    }

    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        writer.write_all(crate::gofloat::go_json_float(value).as_bytes())
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        self.write_f64(writer, f64::from(value))
    }

    fn write_null<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        CompactFormatter.write_null(writer)
    }
}

/// Writes `value` as Go's `json.Marshal` would, with no trailing newline.
pub fn write<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<(), serde_json::Error> {
    let mut ser = serde_json::Serializer::with_formatter(out, GoFormatter);
    value.serialize(&mut ser)
}

/// `value` as Go's `json.NewEncoder(w).Encode(value)` writes it: [`write`] and a newline.
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(256);
    write(&mut out, value)?;
    out.push(b'\n');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn go(v: &serde_json::Value) -> String {
        let mut out = Vec::new();
        write(&mut out, v).expect("writes");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn html_characters_and_line_separators_are_escaped_as_go_does() {
        // Expected text as Go 1.23's json.Marshal(map[string]interface{}{...}) prints it.
        let v = json!({"cmd": "a && b > c < d", "ls": "x\u{2028}y\u{2029}z", "k<": "é\"\\\n\t\u{1}\u{8}\u{c}"});
        assert_eq!(
            go(&v),
            r#"{"cmd":"a \u0026\u0026 b \u003e c \u003c d","k\u003c":"é\"\\\n\t\u0001\b\f","ls":"x\u2028y\u2029z"}"#
        );
    }

    #[test]
    fn numbers_are_written_as_go_writes_float64() {
        let cases: &[(f64, &str)] = &[
            (100.0, "100"),
            (1.5, "1.5"),
            (-0.25, "-0.25"),
            (0.000001, "0.000001"),
            (0.0000001, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1.2345e300, "1.2345e+300"),
            (0.0, "0"),
        ];
        for (f, want) in cases {
            assert_eq!(go(&json!(f)), *want, "{f}");
        }
        // Integers stay integers.
        assert_eq!(
            go(&json!({"a": 7, "b": -3, "c": u64::MAX})),
            r#"{"a":7,"b":-3,"c":18446744073709551615}"#
        );
    }

    #[test]
    fn encode_ends_with_a_newline_and_keys_are_sorted() {
        let v = json!({"z": 1, "a": {"y": null, "b": [true, "s"]}});
        assert_eq!(
            encode(&v).expect("encodes"),
            b"{\"a\":{\"b\":[true,\"s\"],\"y\":null},\"z\":1}\n"
        );
    }
}

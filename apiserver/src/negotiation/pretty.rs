//! Indented JSON, as kube's pretty JSON serializer writes it (`json.MarshalIndent(obj, "", "  ")`,
//! whose layout is Go's `json.Indent`): two spaces per level, `": "` after keys, and empty objects
//! and arrays kept as `{}` and `[]`. Works on the compact bytes, so key order is kept.

/// Re-indents compact JSON. Whitespace between tokens is dropped first; strings are copied as
/// they are.
pub fn indent(json: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len() + json.len() / 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    // An opening bracket waits for the next token: `{}` and `[]` stay on one line.
    let mut pending_open = false;
    let newline = |out: &mut Vec<u8>, depth: usize| {
        out.push(b'\n');
        out.extend(std::iter::repeat_n(b' ', depth * 2));
    };
    for &b in json {
        if in_string {
            out.push(b);
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        if b.is_ascii_whitespace() {
            continue;
        }
        if pending_open {
            pending_open = false;
            if b == b'}' || b == b']' {
                depth -= 1;
                out.push(b);
                continue;
            }
            newline(&mut out, depth);
        }
        match b {
            b'{' | b'[' => {
                out.push(b);
                depth += 1;
                pending_open = true;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(b);
            }
            b',' => {
                out.push(b);
                newline(&mut out, depth);
            }
            b':' => out.extend_from_slice(b": "),
            b'"' => {
                in_string = true;
                out.push(b);
            }
            _ => out.push(b),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_indent_layout() {
        let compact =
            br#"{"kind":"List","metadata":{},"items":[{"a":[1,2],"b":"x, y: {z}"},[]],"e":"\"}"}"#;
        let want = r#"{
  "kind": "List",
  "metadata": {},
  "items": [
    {
      "a": [
        1,
        2
      ],
      "b": "x, y: {z}"
    },
    []
  ],
  "e": "\"}"
}"#;
        assert_eq!(String::from_utf8(indent(compact)).unwrap(), want);
        assert_eq!(indent(b" { } "), b"{}");
        assert_eq!(indent(b"12"), b"12");
        let v: serde_json::Value = serde_json::from_slice(&indent(compact)).unwrap();
        assert_eq!(
            v,
            serde_json::from_slice::<serde_json::Value>(compact).unwrap()
        );
    }
}

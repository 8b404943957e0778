//! Edits of serialized JSON without parsing it into a tree: stamping
//! `metadata.resourceVersion` into stored objects is on the path of every write and every
//! watch event, and a full parse + serialize there costs more than the rest of the event.
//!
//! The scanner only walks structure (strings, nesting) and never allocates; anything it does
//! not understand makes it give up (`None`), and callers then take the slow, general path.

/// Skips JSON whitespace from `pos`.
fn skip_ws(json: &[u8], mut pos: usize) -> usize {
    while pos < json.len() && matches!(json[pos], b' ' | b'\t' | b'\n' | b'\r') {
        pos += 1;
    }
    pos
}

/// At a `"`, returns the position after the closing quote.
fn skip_string(json: &[u8], pos: usize) -> Option<usize> {
    if json.get(pos) != Some(&b'"') {
        return None;
    }
    let mut i = pos + 1;
    while i < json.len() {
        match json[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// Skips one JSON value starting at `pos`; returns the position after it.
fn skip_value(json: &[u8], pos: usize) -> Option<usize> {
    match *json.get(pos)? {
        b'"' => skip_string(json, pos),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = pos;
            while i < json.len() {
                match json[i] {
                    b'"' => {
                        i = skip_string(json, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            // A number, true, false or null: up to the next delimiter.
            let mut i = pos;
            while i < json.len()
                && !matches!(json[i], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                i += 1;
            }
            (i > pos).then_some(i)
        }
    }
}

/// Where one member of an object is.
struct Member {
    /// Its key's opening quote.
    key_start: usize,
    /// Its value.
    value: (usize, usize),
    /// The end of the previous member's value, if there is one.
    prev_end: Option<usize>,
}

/// Walks the members of the object starting at `obj` (a `{`) in order, calling `visit` with
/// each one's key as written (between its quotes, escapes left as they are) until it returns
/// true; returns the member it stopped at. `None` when it did not stop (or cannot scan).
fn walk_members<'a>(
    json: &'a [u8],
    obj: usize,
    mut visit: impl FnMut(&'a [u8], &Member) -> bool,
) -> Option<Member> {
    if json.get(obj) != Some(&b'{') {
        return None;
    }
    let mut pos = skip_ws(json, obj + 1);
    if json.get(pos) == Some(&b'}') {
        return None;
    }
    let mut prev_end = None;
    loop {
        let key_start = pos;
        let key_end = skip_string(json, pos)?;
        pos = skip_ws(json, key_end);
        if json.get(pos) != Some(&b':') {
            return None;
        }
        let value_start = skip_ws(json, pos + 1);
        let value_end = skip_value(json, value_start)?;
        let member = Member {
            key_start,
            value: (value_start, value_end),
            prev_end,
        };
        if visit(&json[key_start + 1..key_end - 1], &member) {
            return Some(member);
        }
        pos = skip_ws(json, value_end);
        match json.get(pos) {
            Some(b',') => pos = skip_ws(json, pos + 1),
            _ => return None,
        }
        prev_end = Some(value_end);
    }
}

/// Finds member `key` of the object starting at `obj` (a `{`). Keys are compared as written
/// (a key with escapes never matches).
fn find_member(json: &[u8], obj: usize, key: &str) -> Option<Member> {
    walk_members(json, obj, |k, _| k == key.as_bytes())
}

/// Every member of the object starting at `obj` (a `{`), in order: its key (as written,
/// without quotes) and the byte range of its value. `None` when `json` cannot be scanned
/// there, or a key has escapes (callers would have to unescape it to compare it).
pub fn members(json: &[u8], obj: usize) -> Option<Vec<(&str, (usize, usize))>> {
    let mut out = Vec::new();
    let mut clean = true;
    // The walk ends at the closing brace without stopping; a malformed object stops it early.
    let mut complete = false;
    walk_members(json, obj, |k, m| {
        match std::str::from_utf8(k) {
            Ok(k) if !k.contains('\\') => out.push((k, m.value)),
            _ => clean = false,
        }
        let after = skip_ws(json, m.value.1);
        complete = json.get(after) == Some(&b'}');
        !clean
    });
    let empty = json.get(obj) == Some(&b'{') && json.get(skip_ws(json, obj + 1)) == Some(&b'}');
    (clean && (complete || empty)).then_some(out)
}

/// Finds member `key` of the object starting at `obj` (a `{`); returns the byte range of its
/// value. Keys are compared as written (a key with escapes never matches).
pub fn object_member(json: &[u8], obj: usize, key: &str) -> Option<(usize, usize)> {
    find_member(json, obj, key).map(|m| m.value)
}

/// The bytes to cut to remove member `key` from the object starting at `obj` (a `{`): the
/// member and one comma next to it, so what is left is still valid JSON. `None` when the object
/// has no such member (or cannot be scanned).
pub fn member_span(json: &[u8], obj: usize, key: &str) -> Option<(usize, usize)> {
    let m = find_member(json, obj, key)?;
    let value_end = m.value.1;
    let after = skip_ws(json, value_end);
    match json.get(after) {
        // `"k":v,` up to the next key.
        Some(b',') => Some((m.key_start, skip_ws(json, after + 1))),
        // The last member: from the end of the previous value (its comma) or, when it is the
        // only member, just the member.
        Some(b'}') => Some((m.prev_end.unwrap_or(m.key_start), value_end)),
        _ => None,
    }
}

/// The object without `metadata.managedFields`, which no controller reads and which is often
/// a third of a stored object. Borrowed when there is nothing to remove.
pub fn without_managed_fields(json: &str) -> std::borrow::Cow<'_, str> {
    let bytes = json.as_bytes();
    let start = skip_ws(bytes, 0);
    let cut = object_member(bytes, start, "metadata")
        .and_then(|(meta, _)| member_span(bytes, meta, "managedFields"));
    cut_out(json, cut)
}

/// An object's `metadata` without its `managedFields` (the metadata object's own text).
pub fn metadata_without_managed_fields(json: &str) -> std::borrow::Cow<'_, str> {
    let bytes = json.as_bytes();
    cut_out(json, member_span(bytes, skip_ws(bytes, 0), "managedFields"))
}

fn cut_out(json: &str, cut: Option<(usize, usize)>) -> std::borrow::Cow<'_, str> {
    match cut {
        Some((from, to)) => {
            let mut out = String::with_capacity(json.len() - (to - from));
            out.push_str(&json[..from]);
            out.push_str(&json[to..]);
            std::borrow::Cow::Owned(out)
        }
        None => std::borrow::Cow::Borrowed(json),
    }
}

/// Where and how a resourceVersion goes into a serialized object, computed once so the
/// stamped JSON can be written many times (for any revision) without scanning again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Splice {
    /// Bytes kept before the resourceVersion value (or the inserted member).
    start: usize,
    /// Bytes from here on are kept after it.
    end: usize,
    /// True when a whole `"resourceVersion":` member is inserted (with `comma` after it).
    insert: bool,
    comma: bool,
}

impl Splice {
    /// Finds the splice point of `json`; `None` when it is not an object with a metadata object.
    pub fn find(json: &[u8]) -> Option<Splice> {
        Splice::find_with_metadata(json).map(|(splice, _)| splice)
    }

    /// [`Splice::find`], also returning where the metadata object is in `json`, so that a
    /// reader of metadata need not scan the rest of the object again.
    pub fn find_with_metadata(json: &[u8]) -> Option<(Splice, std::ops::Range<usize>)> {
        let top = skip_ws(json, 0);
        let (meta_start, meta_end) = object_member(json, top, "metadata")?;
        if json.get(meta_start) != Some(&b'{') {
            return None;
        }
        let splice = match object_member(json, meta_start, "resourceVersion") {
            Some((vs, ve)) => Splice {
                start: vs,
                end: ve,
                insert: false,
                comma: false,
            },
            None => {
                let inner = meta_start + 1;
                Splice {
                    start: inner,
                    end: inner,
                    insert: true,
                    comma: json.get(skip_ws(json, inner)) != Some(&b'}'),
                }
            }
        };
        Some((splice, meta_start..meta_end))
    }

    /// Appends `json` stamped with `rv` to `out`.
    pub fn write(&self, json: &[u8], rv: i64, out: &mut Vec<u8>) {
        out.extend_from_slice(&json[..self.start]);
        self.write_stamp(rv, out);
        out.extend_from_slice(&json[self.end..]);
    }

    /// Stamps with `rv` the JSON that `out` holds from `at` on (the `json` this splice was
    /// found in), in place.
    pub fn write_in_place(&self, out: &mut Vec<u8>, at: usize, rv: i64) {
        let mut stamp = Vec::with_capacity(40);
        self.write_stamp(rv, &mut stamp);
        out.splice(at + self.start..at + self.end, stamp);
    }

    /// What replaces `start..end`: the resourceVersion (with its member name when inserted).
    fn write_stamp(&self, rv: i64, out: &mut Vec<u8>) {
        if self.insert {
            out.extend_from_slice(b"\"resourceVersion\":");
        }
        out.push(b'"');
        out.extend_from_slice(rv.to_string().as_bytes());
        out.push(b'"');
        if self.comma {
            out.push(b',');
        }
    }

    /// The length of `json` stamped with `rv`.
    pub fn stamped_len(&self, json_len: usize, rv: i64) -> usize {
        let digits = rv.to_string().len() + 2;
        json_len - (self.end - self.start)
            + digits
            + if self.insert { 18 } else { 0 }
            + usize::from(self.comma)
    }
}

/// The top-level object with `metadata.resourceVersion` set to `rv` (replaced when present,
/// inserted when not). `None` when the input is not an object with a `metadata` object.
pub fn with_resource_version(json: &[u8], rv: i64) -> Option<Vec<u8>> {
    let splice = Splice::find(json)?;
    let mut out = Vec::with_capacity(json.len() + 32);
    splice.write(json, rv, &mut out);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn members_in_order_with_value_ranges() {
        let json = br#" {"a":1, "b" : {"c":[1,"}"]},"d":"x\"y"} "#;
        let found = members(json, 1).expect("scanned");
        let texts: Vec<(&str, &[u8])> = found
            .iter()
            .map(|(k, (from, to))| (*k, &json[*from..*to]))
            .collect();
        assert_eq!(
            texts,
            vec![
                ("a", &b"1"[..]),
                ("b", &br#"{"c":[1,"}"]}"#[..]),
                ("d", &br#""x\"y""#[..])
            ]
        );
        assert_eq!(members(b"{}", 0), Some(vec![]));
        assert_eq!(members(b" { } ", 1), Some(vec![]));
        // Escaped keys, truncated or malformed objects: the caller must parse instead.
        assert_eq!(members(br#"{"a\u0062":1}"#, 0), None);
        assert_eq!(members(br#"{"a":1,"b":2"#, 0), None);
        assert_eq!(members(br#"{"a":1 "b":2}"#, 0), None);
        assert_eq!(members(b"[1]", 0), None);
    }

    fn stamped(input: &str, rv: i64) -> Value {
        let out = with_resource_version(input.as_bytes(), rv).expect("stamped");
        serde_json::from_slice(&out).expect("valid JSON")
    }

    #[test]
    fn inserts_and_replaces() {
        let v = stamped(
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"metadata":{"x":"}{\"]["}}}"#,
            7,
        );
        assert_eq!(v["metadata"]["resourceVersion"], "7");
        assert_eq!(v["metadata"]["name"], "a");
        assert!(v["data"]["metadata"].get("resourceVersion").is_none());
        let v = stamped(r#"{"metadata":{}}"#, 1);
        assert_eq!(v, json!({"metadata": {"resourceVersion": "1"}}));
        let v = stamped(
            r#" { "metadata" : { "resourceVersion" : "3" , "name":"b" } } "#,
            9,
        );
        assert_eq!(v["metadata"]["resourceVersion"], "9");
        assert_eq!(v["metadata"]["name"], "b");
        // Nested structures before metadata are skipped correctly.
        let v = stamped(
            r#"{"a":[1,{"b":"\\\"}"},[true,null,-1.5e3]],"metadata":{"name":"c"}}"#,
            2,
        );
        assert_eq!(v["metadata"]["resourceVersion"], "2");
        assert_eq!(v["a"][1]["b"], "\\\"}");
    }

    #[test]
    fn metadata_is_located_with_the_splice() {
        let json =
            br#"{"apiVersion":"v1","metadata":{"name":"a","labels":{"k":"v"}},"spec":{"x":1}}"#;
        let (splice, meta) = Splice::find_with_metadata(json).expect("found");
        assert_eq!(&json[meta], br#"{"name":"a","labels":{"k":"v"}}"#);
        assert_eq!(Some(splice), Splice::find(json));
        assert!(Splice::find_with_metadata(br#"{"metadata":null}"#).is_none());
    }

    #[test]
    fn managed_fields_are_cut_out() {
        let mf = r#"[{"manager":"m","fieldsV1":{"f:a":{}},"time":"t\"]}"}]"#;
        for (input, want) in [
            (
                format!(
                    r#"{{"kind":"K","metadata":{{"name":"a","managedFields":{mf},"uid":"u"}},"spec":{{}}}}"#
                ),
                json!({"kind": "K", "metadata": {"name": "a", "uid": "u"}, "spec": {}}),
            ),
            (
                format!(r#"{{"metadata":{{"name":"a","managedFields":{mf}}}}}"#),
                json!({"metadata": {"name": "a"}}),
            ),
            (
                format!(r#"{{"metadata":{{"managedFields":{mf}}}}}"#),
                json!({"metadata": {}}),
            ),
            (
                format!(r#" {{ "metadata" : {{ "managedFields" : {mf} , "name" : "b" }} }}"#),
                json!({"metadata": {"name": "b"}}),
            ),
        ] {
            let out = without_managed_fields(&input);
            assert!(matches!(out, std::borrow::Cow::Owned(_)), "{input}");
            let got: Value = serde_json::from_str(&out).expect("valid JSON");
            assert_eq!(got, want, "{input}");
        }
        let meta = metadata_without_managed_fields(r#"{"managedFields":[{"a":1}],"name":"n"}"#);
        assert_eq!(meta, r#"{"name":"n"}"#);
        // Nothing to cut: the text is borrowed, not copied.
        for input in [
            r#"{"metadata":{"name":"a"},"spec":{"managedFields":[]}}"#,
            r#"{"kind":"K"}"#,
            "not json",
        ] {
            assert!(matches!(
                without_managed_fields(input),
                std::borrow::Cow::Borrowed(_)
            ));
        }
    }

    #[test]
    fn splice_lengths_are_exact() {
        for input in [
            r#"{"metadata":{}}"#,
            r#"{"metadata":{"name":"a"}}"#,
            r#"{"metadata":{"resourceVersion":"12345","name":"a"}}"#,
        ] {
            let sp = Splice::find(input.as_bytes()).expect("splice");
            for rv in [1, 99, 1234567] {
                let mut out = Vec::new();
                sp.write(input.as_bytes(), rv, &mut out);
                assert_eq!(out.len(), sp.stamped_len(input.len(), rv), "{input} {rv}");
                // In place after other bytes: the same result.
                let mut in_place = b"[".to_vec();
                in_place.extend_from_slice(input.as_bytes());
                sp.write_in_place(&mut in_place, 1, rv);
                assert_eq!(&in_place[1..], &out[..], "{input} {rv}");
            }
        }
    }

    #[test]
    fn gives_up_on_what_it_cannot_handle() {
        for bad in [
            r#"[]"#,
            r#"{"metadata":[]}"#,
            r#"{"kind":"x"}"#,
            r#"{"metadata":{"name":"a""#,
            "",
            "{",
            r#"{"a" 1}"#,
        ] {
            assert!(with_resource_version(bad.as_bytes(), 1).is_none(), "{bad}");
        }
    }

    #[test]
    fn agrees_with_a_full_parse() {
        let objects = [
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"a": "b"}, "annotations": {"x": "{\"y\": [1]}"}}, "spec": {"template": {"metadata": {"labels": {"a": "b"}}}}}),
            json!({"metadata": {"name": "ünïcödé", "resourceVersion": "5"}, "data": {"k": "line\nbreak"}}),
        ];
        for o in objects {
            let text = serde_json::to_vec(&o).expect("json");
            let fast: Value =
                serde_json::from_slice(&with_resource_version(&text, 42).expect("stamped"))
                    .expect("json");
            let mut slow = o.clone();
            slow["metadata"]["resourceVersion"] = json!("42");
            assert_eq!(fast, slow);
        }
    }
}

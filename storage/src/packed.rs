//! Values as the embedded store keeps them in memory: stored objects are JSON, which LZ4
//! shrinks to about half (Works and ResourceBindings to 43-45%). The log and snapshots keep
//! the JSON itself; only memory holds the packed form, and a reader that shares it (the API
//! server's watch cache) keeps no second copy.
//!
//! A packed value is the LZ4 block of the JSON with its length in front (4 bytes, little
//! endian), as `lz4_flex`'s size-prepended block format.

use bytes::Bytes;

/// Values shorter than this stay as they are: what packing saves on them is less than the
/// time unpacking costs each reader.
const MIN_PACKED_INPUT: usize = 512;

/// The packed form of `json`, when it saves at least an eighth.
pub fn pack(json: &[u8]) -> Option<Bytes> {
    if json.len() < MIN_PACKED_INPUT {
        return None;
    }
    let packed = lz4_flex::block::compress_prepend_size(json);
    (packed.len() <= json.len() - json.len() / 8).then(|| Bytes::from(packed))
}

/// The length of the value a packed one unpacks to.
pub fn unpacked_len(packed: &[u8]) -> usize {
    lz4_flex::block::uncompressed_size(packed).map_or(0, |(n, _)| n)
}

/// Appends the unpacked value to `out`. Packed values are only ever made by [`pack`] in this
/// process (never read from disk), so a failure means memory corruption; it is logged and
/// nothing is appended rather than serving garbage.
pub fn unpack_into(packed: &[u8], out: &mut Vec<u8>) {
    let Ok((len, block)) = lz4_flex::block::uncompressed_size(packed) else {
        tracing::error!("a packed value has no length; dropped");
        return;
    };
    let start = out.len();
    out.resize(start + len, 0);
    match lz4_flex::block::decompress_into(block, &mut out[start..]) {
        Ok(n) if n == len => {}
        other => {
            tracing::error!(?other, "a packed value does not unpack; dropped");
            out.truncate(start);
        }
    }
}

/// The unpacked value.
pub fn unpack(packed: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(unpacked_len(packed));
    unpack_into(packed, &mut out);
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trips_and_small_or_incompressible_values_stay_plain() {
        let json = format!(
            r#"{{"kind":"ConfigMap","metadata":{{"name":"c","labels":{{"a":"b"}}}},"data":{{"k":"{}"}}}}"#,
            "value ".repeat(200)
        );
        let packed = pack(json.as_bytes()).expect("repetitive JSON packs");
        assert!(packed.len() < json.len() / 2);
        assert_eq!(unpacked_len(&packed), json.len());
        assert_eq!(&unpack(&packed)[..], json.as_bytes());
        let mut out = b"prefix:".to_vec();
        unpack_into(&packed, &mut out);
        assert_eq!(&out[7..], json.as_bytes());

        assert!(pack(br#"{"kind":"ConfigMap"}"#).is_none(), "too small");
        // Bytes with no repetition do not shrink.
        let noise = crate::testing::incompressible(4096, 0x9E37_79B9_7F4A_7C15);
        assert!(pack(&noise).is_none());
    }

    #[test]
    fn a_corrupt_packed_value_unpacks_to_nothing() {
        let json = "x".repeat(4096);
        let packed = pack(json.as_bytes()).expect("packs");
        let mut broken = packed.to_vec();
        broken.truncate(broken.len() / 2);
        let mut out = b"keep".to_vec();
        unpack_into(&broken, &mut out);
        assert_eq!(out, b"keep");
    }
}

//! Test support: fully populated messages and protobuf envelopes.

use std::collections::BTreeMap;

use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    Json, JsonSchemaProps, JsonSchemaPropsOrArray, JsonSchemaPropsOrBool,
    JsonSchemaPropsOrStringArray,
};
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1::{FieldsV1, MicroTime, Time};
use k8s_pb::apimachinery::pkg::runtime::{RawExtension, TypeMeta, Unknown};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use prost::Message;

use super::MAGIC;

/// Wraps a message the way client-go's protobuf serializer does.
pub(crate) fn envelope(api_version: &str, kind: &str, message: &impl Message) -> Vec<u8> {
    envelope_raw(api_version, kind, message.encode_to_vec())
}

/// Wraps an already-encoded message the way client-go's protobuf serializer does.
pub(crate) fn envelope_raw(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut body = MAGIC.to_vec();
    body.extend(unknown.encode_to_vec());
    body
}

/// Hands out distinct values and bounds recursion.
#[derive(Default)]
pub(crate) struct Gen {
    counter: u64,
    stack: Vec<&'static str>,
}

impl Gen {
    fn next(&mut self) -> u64 {
        self.counter += 1;
        self.counter
    }

    pub(crate) fn enter(&mut self, ty: &'static str) {
        self.stack.push(ty);
    }

    pub(crate) fn leave(&mut self) {
        self.stack.pop();
    }

    /// Recursive types (a CRD schema) are filled two levels deep.
    fn too_deep(&self, ty: &'static str) -> bool {
        self.stack.iter().filter(|t| **t == ty).count() >= 2
    }
}

/// Builds a value with every field set to a non-zero value.
pub(crate) trait Populate: Sized {
    fn populate(g: &mut Gen) -> Self;

    /// The type whose recursion depth limits this one.
    fn key() -> &'static str {
        std::any::type_name::<Self>()
    }
}

impl<T: Populate> Populate for Option<T> {
    fn populate(g: &mut Gen) -> Self {
        (!g.too_deep(T::key())).then(|| T::populate(g))
    }
}

impl<T: Populate> Populate for Box<T> {
    fn populate(g: &mut Gen) -> Self {
        Box::new(T::populate(g))
    }

    fn key() -> &'static str {
        T::key()
    }
}

impl<T: Populate> Populate for Vec<T> {
    fn populate(g: &mut Gen) -> Self {
        if g.too_deep(T::key()) {
            return Vec::new();
        }
        vec![T::populate(g)]
    }
}

impl<T: Populate> Populate for BTreeMap<String, T> {
    fn populate(g: &mut Gen) -> Self {
        if g.too_deep(T::key()) {
            return BTreeMap::new();
        }
        let key = format!("key{}", g.next());
        BTreeMap::from([(key, T::populate(g))])
    }
}

impl Populate for String {
    fn populate(g: &mut Gen) -> Self {
        format!("s{}", g.next())
    }
}

impl Populate for bool {
    fn populate(_g: &mut Gen) -> Self {
        true
    }
}

impl Populate for i32 {
    fn populate(g: &mut Gen) -> Self {
        i32::try_from(g.next()).unwrap()
    }
}

impl Populate for i64 {
    fn populate(g: &mut Gen) -> Self {
        i64::try_from(g.next()).unwrap() * 1000
    }
}

impl Populate for f64 {
    fn populate(g: &mut Gen) -> Self {
        g.next() as f64 + 0.25
    }
}

impl Populate for Vec<u8> {
    fn populate(g: &mut Gen) -> Self {
        format!("bytes-{}\u{1}\u{ff}", g.next()).into_bytes()
    }
}

impl Populate for Time {
    fn populate(g: &mut Gen) -> Self {
        Time {
            seconds: Some(1_700_000_000 + i64::try_from(g.next()).unwrap() * 3_661),
            nanos: None,
        }
    }
}

impl Populate for MicroTime {
    fn populate(g: &mut Gen) -> Self {
        MicroTime {
            seconds: Some(1_700_000_000 + i64::try_from(g.next()).unwrap() * 3_661),
            nanos: Some(123_456_000),
        }
    }
}

impl Populate for IntOrString {
    fn populate(g: &mut Gen) -> Self {
        let n = g.next();
        if n.is_multiple_of(2) {
            IntOrString {
                r#type: Some(0),
                int_val: Some(i32::try_from(n).unwrap()),
                str_val: None,
            }
        } else {
            IntOrString {
                r#type: Some(1),
                int_val: None,
                str_val: Some(format!("port{n}")),
            }
        }
    }
}

impl Populate for Quantity {
    fn populate(g: &mut Gen) -> Self {
        Quantity {
            string: Some(format!("{}Mi", g.next())),
        }
    }
}

impl Populate for RawExtension {
    fn populate(g: &mut Gen) -> Self {
        let raw = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","data":{{"n":"{}"}}}}"#,
            g.next()
        );
        RawExtension {
            raw: Some(raw.into_bytes()),
        }
    }
}

impl Populate for FieldsV1 {
    fn populate(g: &mut Gen) -> Self {
        let raw = format!(
            r#"{{"f:metadata":{{"f:labels":{{"f:l{}":{{}}}}}}}}"#,
            g.next()
        );
        FieldsV1 {
            raw: Some(raw.into_bytes()),
        }
    }
}

impl Populate for Json {
    fn populate(g: &mut Gen) -> Self {
        Json {
            raw: Some(format!(r#"{{"n":{}}}"#, g.next()).into_bytes()),
        }
    }
}

impl Populate for JsonSchemaPropsOrArray {
    fn populate(g: &mut Gen) -> Self {
        if g.next().is_multiple_of(2) {
            JsonSchemaPropsOrArray {
                schema: Some(Box::populate(g)),
                j_son_schemas: Vec::new(),
            }
        } else {
            JsonSchemaPropsOrArray {
                schema: None,
                j_son_schemas: vec![JsonSchemaProps::populate(g), JsonSchemaProps::populate(g)],
            }
        }
    }

    fn key() -> &'static str {
        JsonSchemaProps::key()
    }
}

impl Populate for JsonSchemaPropsOrBool {
    fn populate(g: &mut Gen) -> Self {
        if g.next().is_multiple_of(2) {
            JsonSchemaPropsOrBool {
                allows: Some(true),
                schema: Some(Box::populate(g)),
            }
        } else {
            JsonSchemaPropsOrBool {
                allows: Some(true),
                schema: None,
            }
        }
    }

    fn key() -> &'static str {
        JsonSchemaProps::key()
    }
}

impl Populate for JsonSchemaPropsOrStringArray {
    fn populate(g: &mut Gen) -> Self {
        if g.next().is_multiple_of(2) {
            JsonSchemaPropsOrStringArray {
                schema: Some(JsonSchemaProps::populate(g)),
                property: Vec::new(),
            }
        } else {
            JsonSchemaPropsOrStringArray {
                schema: None,
                property: vec![String::populate(g), String::populate(g)],
            }
        }
    }

    fn key() -> &'static str {
        JsonSchemaProps::key()
    }
}

macro_rules! populate_extra_value {
    ($($ty:path),*) => {$(
        impl Populate for $ty {
            fn populate(g: &mut Gen) -> Self {
                Self { items: vec![String::populate(g), String::populate(g)] }
            }
        }
    )*};
}

populate_extra_value!(
    k8s_pb::api::authentication::v1::ExtraValue,
    k8s_pb::api::authorization::v1::ExtraValue,
    k8s_pb::api::certificates::v1::ExtraValue,
    k8s_pb::apimachinery::pkg::apis::meta::v1::Verbs
);

//! The union types of a CRD's OpenAPI v3 schema, which Go marshals by hand
//! (apiextensions-apiserver `pkg/apis/apiextensions/v1/marshal.go`); encoding follows their
//! `UnmarshalJSON` (an object is a schema, an array a list, a boolean `allows`).

use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JsonSchemaPropsOrArray, JsonSchemaPropsOrBool, JsonSchemaPropsOrStringArray,
};
use serde_json::Value;

use super::ProtobufError;
use super::json::{Ctx, Enc, FromJson, ToJson, list_from_json, mistyped};

fn array<T: ToJson>(items: &[T], ctx: Ctx) -> Result<Value, ProtobufError> {
    items
        .iter()
        .map(|item| item.to_json(ctx))
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

/// `items`: a list of schemas when there are any, else the single schema (or null).
impl ToJson for JsonSchemaPropsOrArray {
    fn to_json(&self, ctx: Ctx) -> Result<Value, ProtobufError> {
        if !self.j_son_schemas.is_empty() {
            return array(&self.j_son_schemas, ctx);
        }
        match &self.schema {
            Some(schema) => schema.to_json(ctx),
            None => Ok(Value::Null),
        }
    }

    fn absent(_omitempty: bool, _ctx: Ctx) -> Result<Option<Value>, ProtobufError> {
        Ok(Some(Value::Null))
    }
}

/// `additionalProperties`/`additionalItems`: the schema when present, else the boolean.
impl ToJson for JsonSchemaPropsOrBool {
    fn to_json(&self, ctx: Ctx) -> Result<Value, ProtobufError> {
        match &self.schema {
            Some(schema) => schema.to_json(ctx),
            None => Ok(Value::Bool(self.allows.unwrap_or(false))),
        }
    }

    fn absent(_omitempty: bool, _ctx: Ctx) -> Result<Option<Value>, ProtobufError> {
        Ok(Some(Value::Bool(false)))
    }
}

/// `dependencies` values: the property list when non-empty, else the schema (or null).
impl ToJson for JsonSchemaPropsOrStringArray {
    fn to_json(&self, ctx: Ctx) -> Result<Value, ProtobufError> {
        if !self.property.is_empty() {
            return array(&self.property, ctx);
        }
        match &self.schema {
            Some(schema) => schema.to_json(ctx),
            None => Ok(Value::Null),
        }
    }

    fn absent(_omitempty: bool, _ctx: Ctx) -> Result<Option<Value>, ProtobufError> {
        Ok(Some(Value::Null))
    }
}

impl FromJson for JsonSchemaPropsOrArray {
    fn from_json(v: &Value, enc: Enc) -> Result<Self, ProtobufError> {
        match v {
            Value::Array(items) => Ok(JsonSchemaPropsOrArray {
                schema: None,
                j_son_schemas: list_from_json(items, enc)?,
            }),
            Value::Object(_) => Ok(JsonSchemaPropsOrArray {
                schema: Some(Box::new(FromJson::from_json(v, enc)?)),
                j_son_schemas: Vec::new(),
            }),
            other => Err(mistyped("a schema or an array of schemas", other)),
        }
    }

    fn zero() -> Option<Self> {
        Some(Self::default())
    }
}

impl FromJson for JsonSchemaPropsOrBool {
    fn from_json(v: &Value, enc: Enc) -> Result<Self, ProtobufError> {
        match v {
            Value::Bool(allows) => Ok(JsonSchemaPropsOrBool {
                allows: Some(*allows),
                schema: None,
            }),
            // A schema allows: JSONSchemaPropsOrBool.UnmarshalJSON sets Allows with it.
            Value::Object(_) => Ok(JsonSchemaPropsOrBool {
                allows: Some(true),
                schema: Some(Box::new(FromJson::from_json(v, enc)?)),
            }),
            other => Err(mistyped("a schema or a boolean", other)),
        }
    }

    fn zero() -> Option<Self> {
        Some(JsonSchemaPropsOrBool {
            allows: Some(false),
            schema: None,
        })
    }
}

impl FromJson for JsonSchemaPropsOrStringArray {
    fn from_json(v: &Value, enc: Enc) -> Result<Self, ProtobufError> {
        match v {
            Value::Array(items) => Ok(JsonSchemaPropsOrStringArray {
                schema: None,
                property: list_from_json(items, enc)?,
            }),
            Value::Object(_) => Ok(JsonSchemaPropsOrStringArray {
                schema: Some(FromJson::from_json(v, enc)?),
                property: Vec::new(),
            }),
            other => Err(mistyped("a schema or an array of strings", other)),
        }
    }

    fn zero() -> Option<Self> {
        Some(Self::default())
    }
}

#[cfg(test)]
mod tests {
    use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1::JsonSchemaProps;
    use serde_json::json;

    use super::*;

    fn schema(ty: &str) -> JsonSchemaProps {
        JsonSchemaProps {
            r#type: Some(ty.into()),
            ..Default::default()
        }
    }

    #[test]
    fn or_array() {
        let ctx = Ctx::default();
        let both = JsonSchemaPropsOrArray {
            schema: Some(Box::new(schema("string"))),
            j_son_schemas: vec![schema("integer"), schema("boolean")],
        };
        assert_eq!(
            both.to_json(ctx).unwrap(),
            json!([{"type": "integer"}, {"type": "boolean"}])
        );
        let one = JsonSchemaPropsOrArray {
            schema: Some(Box::new(schema("string"))),
            j_son_schemas: vec![],
        };
        assert_eq!(one.to_json(ctx).unwrap(), json!({"type": "string"}));
        assert_eq!(
            JsonSchemaPropsOrArray::default().to_json(ctx).unwrap(),
            Value::Null
        );
    }

    #[test]
    fn or_bool() {
        let ctx = Ctx::default();
        let cases = [
            (None, None, json!(false)),
            (Some(true), None, json!(true)),
            (Some(false), None, json!(false)),
            (
                Some(false),
                Some(schema("object")),
                json!({"type": "object"}),
            ),
            (None, Some(schema("object")), json!({"type": "object"})),
        ];
        for (allows, schema, want) in cases {
            let v = JsonSchemaPropsOrBool {
                allows,
                schema: schema.map(Box::new),
            };
            assert_eq!(v.to_json(ctx).unwrap(), want, "{v:?}");
        }
    }

    #[test]
    fn or_string_array() {
        let ctx = Ctx::default();
        let both = JsonSchemaPropsOrStringArray {
            schema: Some(schema("object")),
            property: vec!["a".into(), "b".into()],
        };
        assert_eq!(both.to_json(ctx).unwrap(), json!(["a", "b"]));
        let one = JsonSchemaPropsOrStringArray {
            schema: Some(schema("object")),
            property: vec![],
        };
        assert_eq!(one.to_json(ctx).unwrap(), json!({"type": "object"}));
        assert_eq!(
            JsonSchemaPropsOrStringArray::default()
                .to_json(ctx)
                .unwrap(),
            Value::Null
        );
    }
}

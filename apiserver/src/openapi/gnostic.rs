//! The protobuf form of an OpenAPI v2 document: gnostic's `openapi.v2.Document`
//! (github.com/google/gnostic-models, `openapiv2/OpenAPIv2.proto`), which kubectl asks
//! `/openapi/v2` for and decodes before anything else (validation of `kind: List`,
//! `kubectl explain --output plaintext-openapiv2`, apply patches of built-in kinds).
//!
//! The messages are declared with prost's derive, by hand, with the proto's names and field
//! numbers; only those a Swagger 2.0 document served by an API server uses are declared (no
//! OAuth2 security schemes). [`document`] converts the JSON document the way gnostic's
//! compiler (`openapi_v2.ParseDocument`, which kube-openapi's handler runs) reads it: every
//! value of a free-form field (`default`, `enum`, `example`, `x-` extensions) becomes an `Any`
//! holding its YAML text, which kube-openapi's readers parse with a YAML decoder (we write
//! JSON, which is YAML).

use serde_json::{Map, Value};

/// `openapi.v2.Document`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Document {
    #[prost(string, tag = "1")]
    pub swagger: String,
    #[prost(message, optional, tag = "2")]
    pub info: Option<Info>,
    #[prost(string, tag = "3")]
    pub host: String,
    #[prost(string, tag = "4")]
    pub base_path: String,
    #[prost(string, repeated, tag = "5")]
    pub schemes: Vec<String>,
    #[prost(string, repeated, tag = "6")]
    pub consumes: Vec<String>,
    #[prost(string, repeated, tag = "7")]
    pub produces: Vec<String>,
    #[prost(message, optional, tag = "8")]
    pub paths: Option<Paths>,
    #[prost(message, optional, tag = "9")]
    pub definitions: Option<Definitions>,
    #[prost(message, optional, tag = "10")]
    pub parameters: Option<ParameterDefinitions>,
    #[prost(message, optional, tag = "11")]
    pub responses: Option<ResponseDefinitions>,
    #[prost(message, repeated, tag = "12")]
    pub security: Vec<SecurityRequirement>,
    #[prost(message, optional, tag = "13")]
    pub security_definitions: Option<SecurityDefinitions>,
    #[prost(message, repeated, tag = "14")]
    pub tags: Vec<Tag>,
    #[prost(message, optional, tag = "15")]
    pub external_docs: Option<ExternalDocs>,
    #[prost(message, repeated, tag = "16")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.Any`: a free-form value as YAML text.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Any {
    #[prost(string, tag = "2")]
    pub yaml: String,
}

/// `openapi.v2.NamedAny`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedAny {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Any>,
}

/// `openapi.v2.Info`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Info {
    #[prost(string, tag = "1")]
    pub title: String,
    #[prost(string, tag = "2")]
    pub version: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(string, tag = "4")]
    pub terms_of_service: String,
    #[prost(message, repeated, tag = "7")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.ExternalDocs`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExternalDocs {
    #[prost(string, tag = "1")]
    pub description: String,
    #[prost(string, tag = "2")]
    pub url: String,
    #[prost(message, repeated, tag = "3")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.Tag`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Tag {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub description: String,
    #[prost(message, optional, tag = "3")]
    pub external_docs: Option<ExternalDocs>,
    #[prost(message, repeated, tag = "4")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.Paths`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Paths {
    #[prost(message, repeated, tag = "1")]
    pub vendor_extension: Vec<NamedAny>,
    #[prost(message, repeated, tag = "2")]
    pub path: Vec<NamedPathItem>,
}

/// `openapi.v2.NamedPathItem`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedPathItem {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<PathItem>,
}

/// `openapi.v2.PathItem`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PathItem {
    #[prost(string, tag = "1")]
    pub _ref: String,
    #[prost(message, optional, tag = "2")]
    pub get: Option<Operation>,
    #[prost(message, optional, tag = "3")]
    pub put: Option<Operation>,
    #[prost(message, optional, tag = "4")]
    pub post: Option<Operation>,
    #[prost(message, optional, tag = "5")]
    pub delete: Option<Operation>,
    #[prost(message, optional, tag = "6")]
    pub options: Option<Operation>,
    #[prost(message, optional, tag = "7")]
    pub head: Option<Operation>,
    #[prost(message, optional, tag = "8")]
    pub patch: Option<Operation>,
    #[prost(message, repeated, tag = "9")]
    pub parameters: Vec<ParametersItem>,
    #[prost(message, repeated, tag = "10")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.Operation`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Operation {
    #[prost(string, repeated, tag = "1")]
    pub tags: Vec<String>,
    #[prost(string, tag = "2")]
    pub summary: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(message, optional, tag = "4")]
    pub external_docs: Option<ExternalDocs>,
    #[prost(string, tag = "5")]
    pub operation_id: String,
    #[prost(string, repeated, tag = "6")]
    pub produces: Vec<String>,
    #[prost(string, repeated, tag = "7")]
    pub consumes: Vec<String>,
    #[prost(message, repeated, tag = "8")]
    pub parameters: Vec<ParametersItem>,
    #[prost(message, optional, tag = "9")]
    pub responses: Option<Responses>,
    #[prost(string, repeated, tag = "10")]
    pub schemes: Vec<String>,
    #[prost(bool, tag = "11")]
    pub deprecated: bool,
    #[prost(message, repeated, tag = "12")]
    pub security: Vec<SecurityRequirement>,
    #[prost(message, repeated, tag = "13")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.ParametersItem`: a parameter or a reference to a shared one.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ParametersItem {
    #[prost(oneof = "ParametersItemOneof", tags = "1, 2")]
    pub oneof: Option<ParametersItemOneof>,
}

/// The choice of [`ParametersItem`].
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum ParametersItemOneof {
    /// An inline parameter.
    #[prost(message, boxed, tag = "1")]
    Parameter(Box<Parameter>),
    /// `$ref`.
    #[prost(message, tag = "2")]
    JsonReference(JsonReference),
}

/// `openapi.v2.JsonReference`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct JsonReference {
    #[prost(string, tag = "1")]
    pub _ref: String,
    #[prost(string, tag = "2")]
    pub description: String,
}

/// `openapi.v2.Parameter`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Parameter {
    #[prost(oneof = "ParameterOneof", tags = "1, 2")]
    pub oneof: Option<ParameterOneof>,
}

/// The choice of [`Parameter`].
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum ParameterOneof {
    /// `in: body`.
    #[prost(message, boxed, tag = "1")]
    BodyParameter(Box<BodyParameter>),
    /// Any other `in`.
    #[prost(message, boxed, tag = "2")]
    NonBodyParameter(Box<NonBodyParameter>),
}

/// `openapi.v2.BodyParameter`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BodyParameter {
    #[prost(string, tag = "1")]
    pub description: String,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub r#in: String,
    #[prost(bool, tag = "4")]
    pub required: bool,
    #[prost(message, optional, tag = "5")]
    pub schema: Option<Schema>,
    #[prost(message, repeated, tag = "6")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.NonBodyParameter`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NonBodyParameter {
    #[prost(oneof = "NonBodyParameterOneof", tags = "1, 2, 3, 4")]
    pub oneof: Option<NonBodyParameterOneof>,
}

/// The choice of [`NonBodyParameter`], by `in`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum NonBodyParameterOneof {
    /// `in: header`.
    #[prost(message, tag = "1")]
    HeaderParameterSubSchema(SimpleParameter),
    /// `in: formData`.
    #[prost(message, tag = "2")]
    FormDataParameterSubSchema(FormDataParameter),
    /// `in: query`.
    #[prost(message, tag = "3")]
    QueryParameterSubSchema(FormDataParameter),
    /// `in: path`.
    #[prost(message, tag = "4")]
    PathParameterSubSchema(SimpleParameter),
}

/// `openapi.v2.HeaderParameterSubSchema` and `PathParameterSubSchema`, which share their
/// fields and numbers.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SimpleParameter {
    #[prost(bool, tag = "1")]
    pub required: bool,
    #[prost(string, tag = "2")]
    pub r#in: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(string, tag = "4")]
    pub name: String,
    #[prost(string, tag = "5")]
    pub r#type: String,
    #[prost(string, tag = "6")]
    pub format: String,
    #[prost(message, optional, tag = "7")]
    pub items: Option<PrimitivesItems>,
    #[prost(string, tag = "8")]
    pub collection_format: String,
    #[prost(message, optional, tag = "9")]
    pub default: Option<Any>,
    #[prost(bool, tag = "19")]
    pub unique_items: bool,
    #[prost(message, repeated, tag = "20")]
    pub r#enum: Vec<Any>,
    #[prost(message, repeated, tag = "22")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.QueryParameterSubSchema` and `FormDataParameterSubSchema`, which share their
/// fields and numbers.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FormDataParameter {
    #[prost(bool, tag = "1")]
    pub required: bool,
    #[prost(string, tag = "2")]
    pub r#in: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(string, tag = "4")]
    pub name: String,
    #[prost(bool, tag = "5")]
    pub allow_empty_value: bool,
    #[prost(string, tag = "6")]
    pub r#type: String,
    #[prost(string, tag = "7")]
    pub format: String,
    #[prost(message, optional, tag = "8")]
    pub items: Option<PrimitivesItems>,
    #[prost(string, tag = "9")]
    pub collection_format: String,
    #[prost(message, optional, tag = "10")]
    pub default: Option<Any>,
    #[prost(bool, tag = "20")]
    pub unique_items: bool,
    #[prost(message, repeated, tag = "21")]
    pub r#enum: Vec<Any>,
    #[prost(message, repeated, tag = "23")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.PrimitivesItems`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PrimitivesItems {
    #[prost(string, tag = "1")]
    pub r#type: String,
    #[prost(string, tag = "2")]
    pub format: String,
    #[prost(message, optional, boxed, tag = "3")]
    pub items: Option<Box<PrimitivesItems>>,
    #[prost(string, tag = "4")]
    pub collection_format: String,
    #[prost(message, optional, tag = "5")]
    pub default: Option<Any>,
    #[prost(bool, tag = "15")]
    pub unique_items: bool,
    #[prost(message, repeated, tag = "16")]
    pub r#enum: Vec<Any>,
    #[prost(message, repeated, tag = "18")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.Responses`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Responses {
    #[prost(message, repeated, tag = "1")]
    pub response_code: Vec<NamedResponseValue>,
    #[prost(message, repeated, tag = "2")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.NamedResponseValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedResponseValue {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<ResponseValue>,
}

/// `openapi.v2.ResponseValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResponseValue {
    #[prost(oneof = "ResponseValueOneof", tags = "1, 2")]
    pub oneof: Option<ResponseValueOneof>,
}

/// The choice of [`ResponseValue`].
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum ResponseValueOneof {
    /// An inline response.
    #[prost(message, boxed, tag = "1")]
    Response(Box<Response>),
    /// `$ref`.
    #[prost(message, tag = "2")]
    JsonReference(JsonReference),
}

/// `openapi.v2.Response`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Response {
    #[prost(string, tag = "1")]
    pub description: String,
    #[prost(message, optional, tag = "2")]
    pub schema: Option<SchemaItem>,
    #[prost(message, repeated, tag = "5")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.SchemaItem` (only its `schema` choice: a file schema is for form uploads).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SchemaItem {
    #[prost(message, optional, tag = "1")]
    pub schema: Option<Schema>,
}

/// `openapi.v2.Schema`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Schema {
    #[prost(string, tag = "1")]
    pub _ref: String,
    #[prost(string, tag = "2")]
    pub format: String,
    #[prost(string, tag = "3")]
    pub title: String,
    #[prost(string, tag = "4")]
    pub description: String,
    #[prost(message, optional, tag = "5")]
    pub default: Option<Any>,
    #[prost(double, tag = "6")]
    pub multiple_of: f64,
    #[prost(double, tag = "7")]
    pub maximum: f64,
    #[prost(bool, tag = "8")]
    pub exclusive_maximum: bool,
    #[prost(double, tag = "9")]
    pub minimum: f64,
    #[prost(bool, tag = "10")]
    pub exclusive_minimum: bool,
    #[prost(int64, tag = "11")]
    pub max_length: i64,
    #[prost(int64, tag = "12")]
    pub min_length: i64,
    #[prost(string, tag = "13")]
    pub pattern: String,
    #[prost(int64, tag = "14")]
    pub max_items: i64,
    #[prost(int64, tag = "15")]
    pub min_items: i64,
    #[prost(bool, tag = "16")]
    pub unique_items: bool,
    #[prost(int64, tag = "17")]
    pub max_properties: i64,
    #[prost(int64, tag = "18")]
    pub min_properties: i64,
    #[prost(string, repeated, tag = "19")]
    pub required: Vec<String>,
    #[prost(message, repeated, tag = "20")]
    pub r#enum: Vec<Any>,
    #[prost(message, optional, boxed, tag = "21")]
    pub additional_properties: Option<Box<AdditionalPropertiesItem>>,
    #[prost(message, optional, tag = "22")]
    pub r#type: Option<TypeItem>,
    #[prost(message, optional, tag = "23")]
    pub items: Option<ItemsItem>,
    #[prost(message, repeated, tag = "24")]
    pub all_of: Vec<Schema>,
    #[prost(message, optional, tag = "25")]
    pub properties: Option<Properties>,
    #[prost(string, tag = "26")]
    pub discriminator: String,
    #[prost(bool, tag = "27")]
    pub read_only: bool,
    #[prost(message, optional, tag = "29")]
    pub external_docs: Option<ExternalDocs>,
    #[prost(message, optional, tag = "30")]
    pub example: Option<Any>,
    #[prost(message, repeated, tag = "31")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.AdditionalPropertiesItem`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AdditionalPropertiesItem {
    #[prost(oneof = "AdditionalPropertiesOneof", tags = "1, 2")]
    pub oneof: Option<AdditionalPropertiesOneof>,
}

/// The choice of [`AdditionalPropertiesItem`].
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum AdditionalPropertiesOneof {
    /// A schema for the values.
    #[prost(message, boxed, tag = "1")]
    Schema(Box<Schema>),
    /// `true` or `false`.
    #[prost(bool, tag = "2")]
    Boolean(bool),
}

/// `openapi.v2.TypeItem`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeItem {
    #[prost(string, repeated, tag = "1")]
    pub value: Vec<String>,
}

/// `openapi.v2.ItemsItem`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ItemsItem {
    #[prost(message, repeated, tag = "1")]
    pub schema: Vec<Schema>,
}

/// `openapi.v2.Properties`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Properties {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

/// `openapi.v2.NamedSchema`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedSchema {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Schema>,
}

/// `openapi.v2.Definitions`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Definitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

/// `openapi.v2.ParameterDefinitions`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ParameterDefinitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedParameter>,
}

/// `openapi.v2.NamedParameter`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedParameter {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Parameter>,
}

/// `openapi.v2.ResponseDefinitions`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResponseDefinitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedResponse>,
}

/// `openapi.v2.NamedResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedResponse {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Response>,
}

/// `openapi.v2.SecurityRequirement`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SecurityRequirement {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedStringArray>,
}

/// `openapi.v2.NamedStringArray`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedStringArray {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<StringArray>,
}

/// `openapi.v2.StringArray`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StringArray {
    #[prost(string, repeated, tag = "1")]
    pub value: Vec<String>,
}

/// `openapi.v2.SecurityDefinitions`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SecurityDefinitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSecurityDefinitionsItem>,
}

/// `openapi.v2.NamedSecurityDefinitionsItem`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedSecurityDefinitionsItem {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<SecurityDefinitionsItem>,
}

/// `openapi.v2.SecurityDefinitionsItem` (the basic and API-key schemes).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SecurityDefinitionsItem {
    #[prost(oneof = "SecurityDefinitionsOneof", tags = "1, 2")]
    pub oneof: Option<SecurityDefinitionsOneof>,
}

/// The choice of [`SecurityDefinitionsItem`].
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum SecurityDefinitionsOneof {
    /// `type: basic`.
    #[prost(message, tag = "1")]
    BasicAuthenticationSecurity(BasicAuthenticationSecurity),
    /// `type: apiKey`.
    #[prost(message, tag = "2")]
    ApiKeySecurity(ApiKeySecurity),
}

/// `openapi.v2.BasicAuthenticationSecurity`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BasicAuthenticationSecurity {
    #[prost(string, tag = "1")]
    pub r#type: String,
    #[prost(string, tag = "2")]
    pub description: String,
    #[prost(message, repeated, tag = "3")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.ApiKeySecurity`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ApiKeySecurity {
    #[prost(string, tag = "1")]
    pub r#type: String,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub r#in: String,
    #[prost(string, tag = "4")]
    pub description: String,
    #[prost(message, repeated, tag = "5")]
    pub vendor_extension: Vec<NamedAny>,
}

fn string(m: &Map<String, Value>, key: &str) -> String {
    m.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn boolean(m: &Map<String, Value>, key: &str) -> bool {
    m.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn number(m: &Map<String, Value>, key: &str) -> f64 {
    m.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

fn integer(m: &Map<String, Value>, key: &str) -> i64 {
    m.get(key).and_then(Value::as_i64).unwrap_or(0)
}

fn string_list(v: &Value) -> Vec<String> {
    match v {
        Value::Array(a) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        // gnostic accepts a single string where a list of strings is expected (`type`).
        Value::String(s) => vec![s.clone()],
        _ => Vec::new(),
    }
}

fn strings(m: &Map<String, Value>, key: &str) -> Vec<String> {
    m.get(key).map(string_list).unwrap_or_default()
}

fn any(v: &Value) -> Any {
    Any {
        yaml: serde_json::to_string(v).unwrap_or_default(),
    }
}

fn any_at(m: &Map<String, Value>, key: &str) -> Option<Any> {
    m.get(key).map(any)
}

fn anys(m: &Map<String, Value>, key: &str) -> Vec<Any> {
    m.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().map(any).collect())
        .unwrap_or_default()
}

/// The `x-` keys of an object, in order.
fn extensions(m: &Map<String, Value>) -> Vec<NamedAny> {
    m.iter()
        .filter(|(k, _)| k.starts_with("x-"))
        .map(|(k, v)| NamedAny {
            name: k.clone(),
            value: Some(any(v)),
        })
        .collect()
}

fn object<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a Map<String, Value>> {
    m.get(key).and_then(Value::as_object)
}

/// A JSON Schema object of the document.
pub fn schema(v: &Value) -> Schema {
    let Some(m) = v.as_object() else {
        return Schema::default();
    };
    Schema {
        _ref: string(m, "$ref"),
        format: string(m, "format"),
        title: string(m, "title"),
        description: string(m, "description"),
        default: any_at(m, "default"),
        multiple_of: number(m, "multipleOf"),
        maximum: number(m, "maximum"),
        exclusive_maximum: boolean(m, "exclusiveMaximum"),
        minimum: number(m, "minimum"),
        exclusive_minimum: boolean(m, "exclusiveMinimum"),
        max_length: integer(m, "maxLength"),
        min_length: integer(m, "minLength"),
        pattern: string(m, "pattern"),
        max_items: integer(m, "maxItems"),
        min_items: integer(m, "minItems"),
        unique_items: boolean(m, "uniqueItems"),
        max_properties: integer(m, "maxProperties"),
        min_properties: integer(m, "minProperties"),
        required: strings(m, "required"),
        r#enum: anys(m, "enum"),
        additional_properties: m.get("additionalProperties").and_then(|a| {
            let oneof = match a {
                Value::Bool(b) => AdditionalPropertiesOneof::Boolean(*b),
                Value::Object(_) => AdditionalPropertiesOneof::Schema(Box::new(schema(a))),
                _ => return None,
            };
            Some(Box::new(AdditionalPropertiesItem { oneof: Some(oneof) }))
        }),
        r#type: m.get("type").map(|_| TypeItem {
            value: strings(m, "type"),
        }),
        items: m.get("items").map(|items| ItemsItem {
            schema: match items {
                Value::Array(a) => a.iter().map(schema).collect(),
                one => vec![schema(one)],
            },
        }),
        all_of: m
            .get("allOf")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(schema).collect())
            .unwrap_or_default(),
        properties: object(m, "properties").map(|p| Properties {
            additional_properties: named_schemas(p),
        }),
        discriminator: string(m, "discriminator"),
        read_only: boolean(m, "readOnly"),
        external_docs: object(m, "externalDocs").map(external_docs),
        example: any_at(m, "example"),
        vendor_extension: extensions(m),
    }
}

fn named_schemas(m: &Map<String, Value>) -> Vec<NamedSchema> {
    m.iter()
        .map(|(name, v)| NamedSchema {
            name: name.clone(),
            value: Some(schema(v)),
        })
        .collect()
}

fn external_docs(m: &Map<String, Value>) -> ExternalDocs {
    ExternalDocs {
        description: string(m, "description"),
        url: string(m, "url"),
        vendor_extension: extensions(m),
    }
}

fn primitives_items(m: &Map<String, Value>) -> PrimitivesItems {
    PrimitivesItems {
        r#type: string(m, "type"),
        format: string(m, "format"),
        items: object(m, "items").map(|i| Box::new(primitives_items(i))),
        collection_format: string(m, "collectionFormat"),
        default: any_at(m, "default"),
        unique_items: boolean(m, "uniqueItems"),
        r#enum: anys(m, "enum"),
        vendor_extension: extensions(m),
    }
}

fn parameter(m: &Map<String, Value>) -> Parameter {
    let simple = || SimpleParameter {
        required: boolean(m, "required"),
        r#in: string(m, "in"),
        description: string(m, "description"),
        name: string(m, "name"),
        r#type: string(m, "type"),
        format: string(m, "format"),
        items: object(m, "items").map(primitives_items),
        collection_format: string(m, "collectionFormat"),
        default: any_at(m, "default"),
        unique_items: boolean(m, "uniqueItems"),
        r#enum: anys(m, "enum"),
        vendor_extension: extensions(m),
    };
    let form = || FormDataParameter {
        required: boolean(m, "required"),
        r#in: string(m, "in"),
        description: string(m, "description"),
        name: string(m, "name"),
        allow_empty_value: boolean(m, "allowEmptyValue"),
        r#type: string(m, "type"),
        format: string(m, "format"),
        items: object(m, "items").map(primitives_items),
        collection_format: string(m, "collectionFormat"),
        default: any_at(m, "default"),
        unique_items: boolean(m, "uniqueItems"),
        r#enum: anys(m, "enum"),
        vendor_extension: extensions(m),
    };
    let non_body =
        |oneof| ParameterOneof::NonBodyParameter(Box::new(NonBodyParameter { oneof: Some(oneof) }));
    let oneof = match m.get("in").and_then(Value::as_str).unwrap_or_default() {
        "body" => ParameterOneof::BodyParameter(Box::new(BodyParameter {
            description: string(m, "description"),
            name: string(m, "name"),
            r#in: string(m, "in"),
            required: boolean(m, "required"),
            schema: m.get("schema").map(schema),
            vendor_extension: extensions(m),
        })),
        "header" => non_body(NonBodyParameterOneof::HeaderParameterSubSchema(simple())),
        "formData" => non_body(NonBodyParameterOneof::FormDataParameterSubSchema(form())),
        "path" => non_body(NonBodyParameterOneof::PathParameterSubSchema(simple())),
        _ => non_body(NonBodyParameterOneof::QueryParameterSubSchema(form())),
    };
    Parameter { oneof: Some(oneof) }
}

fn parameters_item(v: &Value) -> Option<ParametersItem> {
    let m = v.as_object()?;
    let oneof = match m.get("$ref").and_then(Value::as_str) {
        Some(r) => ParametersItemOneof::JsonReference(JsonReference {
            _ref: r.to_string(),
            description: string(m, "description"),
        }),
        None => ParametersItemOneof::Parameter(Box::new(parameter(m))),
    };
    Some(ParametersItem { oneof: Some(oneof) })
}

fn parameters(m: &Map<String, Value>) -> Vec<ParametersItem> {
    m.get("parameters")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(parameters_item).collect())
        .unwrap_or_default()
}

fn response(m: &Map<String, Value>) -> Response {
    Response {
        description: string(m, "description"),
        schema: m.get("schema").map(|s| SchemaItem {
            schema: Some(schema(s)),
        }),
        vendor_extension: extensions(m),
    }
}

fn operation(m: &Map<String, Value>) -> Operation {
    Operation {
        tags: strings(m, "tags"),
        summary: string(m, "summary"),
        description: string(m, "description"),
        external_docs: object(m, "externalDocs").map(external_docs),
        operation_id: string(m, "operationId"),
        produces: strings(m, "produces"),
        consumes: strings(m, "consumes"),
        parameters: parameters(m),
        responses: object(m, "responses").map(|r| Responses {
            response_code: r
                .iter()
                .filter(|(k, _)| !k.starts_with("x-"))
                .filter_map(|(code, v)| {
                    let v = v.as_object()?;
                    let oneof = match v.get("$ref").and_then(Value::as_str) {
                        Some(r) => ResponseValueOneof::JsonReference(JsonReference {
                            _ref: r.to_string(),
                            description: string(v, "description"),
                        }),
                        None => ResponseValueOneof::Response(Box::new(response(v))),
                    };
                    Some(NamedResponseValue {
                        name: code.clone(),
                        value: Some(ResponseValue { oneof: Some(oneof) }),
                    })
                })
                .collect(),
            vendor_extension: extensions(r),
        }),
        schemes: strings(m, "schemes"),
        deprecated: boolean(m, "deprecated"),
        security: m
            .get("security")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(security_requirement).collect())
            .unwrap_or_default(),
        vendor_extension: extensions(m),
    }
}

fn path_item(m: &Map<String, Value>) -> PathItem {
    let op = |k: &str| object(m, k).map(operation);
    PathItem {
        _ref: string(m, "$ref"),
        get: op("get"),
        put: op("put"),
        post: op("post"),
        delete: op("delete"),
        options: op("options"),
        head: op("head"),
        patch: op("patch"),
        parameters: parameters(m),
        vendor_extension: extensions(m),
    }
}

fn security_requirement(v: &Value) -> Option<SecurityRequirement> {
    let m = v.as_object()?;
    Some(SecurityRequirement {
        additional_properties: m
            .iter()
            .map(|(name, scopes)| NamedStringArray {
                name: name.clone(),
                value: Some(StringArray {
                    value: string_list(scopes),
                }),
            })
            .collect(),
    })
}

fn security_definition(m: &Map<String, Value>) -> Option<SecurityDefinitionsItem> {
    let oneof = match m.get("type").and_then(Value::as_str)? {
        "basic" => {
            SecurityDefinitionsOneof::BasicAuthenticationSecurity(BasicAuthenticationSecurity {
                r#type: string(m, "type"),
                description: string(m, "description"),
                vendor_extension: extensions(m),
            })
        }
        "apiKey" => SecurityDefinitionsOneof::ApiKeySecurity(ApiKeySecurity {
            r#type: string(m, "type"),
            name: string(m, "name"),
            r#in: string(m, "in"),
            description: string(m, "description"),
            vendor_extension: extensions(m),
        }),
        _ => return None,
    };
    Some(SecurityDefinitionsItem { oneof: Some(oneof) })
}

/// Converts a Swagger 2.0 JSON document into gnostic's message.
pub fn document(v: &Value) -> Document {
    let empty = Map::new();
    let m = v.as_object().unwrap_or(&empty);
    Document {
        swagger: string(m, "swagger"),
        info: object(m, "info").map(|i| Info {
            title: string(i, "title"),
            version: string(i, "version"),
            description: string(i, "description"),
            terms_of_service: string(i, "termsOfService"),
            vendor_extension: extensions(i),
        }),
        host: string(m, "host"),
        base_path: string(m, "basePath"),
        schemes: strings(m, "schemes"),
        consumes: strings(m, "consumes"),
        produces: strings(m, "produces"),
        paths: object(m, "paths").map(|p| Paths {
            vendor_extension: extensions(p),
            path: p
                .iter()
                .filter(|(k, _)| !k.starts_with("x-"))
                .filter_map(|(name, item)| {
                    Some(NamedPathItem {
                        name: name.clone(),
                        value: Some(path_item(item.as_object()?)),
                    })
                })
                .collect(),
        }),
        definitions: object(m, "definitions").map(|d| Definitions {
            additional_properties: named_schemas(d),
        }),
        parameters: object(m, "parameters").map(|p| ParameterDefinitions {
            additional_properties: p
                .iter()
                .filter_map(|(name, v)| {
                    Some(NamedParameter {
                        name: name.clone(),
                        value: Some(parameter(v.as_object()?)),
                    })
                })
                .collect(),
        }),
        responses: object(m, "responses").map(|r| ResponseDefinitions {
            additional_properties: r
                .iter()
                .filter_map(|(name, v)| {
                    Some(NamedResponse {
                        name: name.clone(),
                        value: Some(response(v.as_object()?)),
                    })
                })
                .collect(),
        }),
        security: m
            .get("security")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(security_requirement).collect())
            .unwrap_or_default(),
        security_definitions: object(m, "securityDefinitions").map(|s| SecurityDefinitions {
            additional_properties: s
                .iter()
                .filter_map(|(name, v)| {
                    Some(NamedSecurityDefinitionsItem {
                        name: name.clone(),
                        value: Some(security_definition(v.as_object()?)?),
                    })
                })
                .collect(),
        }),
        tags: m
            .get("tags")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_object)
                    .map(|t| Tag {
                        name: string(t, "name"),
                        description: string(t, "description"),
                        external_docs: object(t, "externalDocs").map(external_docs),
                        vendor_extension: extensions(t),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        external_docs: object(m, "externalDocs").map(external_docs),
        vendor_extension: extensions(m),
    }
}

/// The protobuf bytes of a Swagger 2.0 JSON document.
pub fn encode(v: &Value) -> Vec<u8> {
    prost::Message::encode_to_vec(&document(v))
}

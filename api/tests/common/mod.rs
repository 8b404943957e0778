//! Helpers shared by the integration tests.
#![allow(dead_code)]

use serde_json::Value;

/// Reads a YAML fixture (one document) as JSON.
pub fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Reads every document of a multi-document YAML fixture.
pub fn fixture_docs(name: &str) -> Vec<Value> {
    use serde::Deserialize;
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).unwrap_or_else(|e| panic!("{path}: {e}")))
        .collect()
}

/// Parses inline YAML.
pub fn yaml(text: &str) -> Value {
    serde_yaml::from_str(text).expect("valid YAML")
}

/// Renders every field error of an admission failure as kube prints them.
pub fn messages(err: &api::AdmissionError) -> Vec<String> {
    err.field_errors().iter().map(|e| e.to_string()).collect()
}

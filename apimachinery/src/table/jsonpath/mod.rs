//! The Kubernetes JSONPath dialect (k8s.io/client-go/util/jsonpath), as CRD
//! `additionalPrinterColumns` use it.
//!
//! Supported: `.field`, `['key']` (dots escaped as `\.`), `[i]`, `[start:end:step]`, `[*]`,
//! `.*`, `..`, unions `[a,b]`, filters `[?(@.k=="v")]` with `== != < <= > >=` or existence, and
//! literal strings, numbers and booleans. `range`/`end` are refused at evaluation.

mod eval;
mod parser;

use std::borrow::Cow;

use serde_json::Value;

use self::eval::Evaluator;
use self::parser::Node;
use super::TableError;
use super::format::{go_float_v, go_json};

/// A parsed JSONPath template.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    nodes: Vec<Node>,
    allow_missing_keys: bool,
}

impl JsonPath {
    /// Parses a template such as `{.metadata.name}` or `name: {.metadata.name}`.
    pub fn parse(template: &str) -> Result<Self, TableError> {
        let nodes = parser::parse(template).map_err(TableError::JsonPath)?;
        Ok(JsonPath {
            nodes,
            allow_missing_keys: false,
        })
    }

    /// Parses a bare path such as `.status.replicas`, as printer columns write it
    /// (wrapped in braces like the apiextensions table convertor does).
    pub fn parse_path(path: &str) -> Result<Self, TableError> {
        Self::parse(&format!("{{{path}}}"))
    }

    /// When set, a missing key yields no result instead of an error (printer columns set it).
    pub fn allow_missing_keys(mut self, allow: bool) -> Self {
        self.allow_missing_keys = allow;
        self
    }

    /// Evaluates every top-level part of the template on `data`: one list of values per part.
    pub fn find_results<'a>(
        &self,
        data: &'a Value,
    ) -> Result<Vec<Vec<Cow<'a, Value>>>, TableError> {
        let evaluator = Evaluator {
            allow_missing_keys: self.allow_missing_keys,
        };
        self.nodes
            .iter()
            .map(|node| {
                evaluator
                    .walk(vec![Cow::Borrowed(data)], node)
                    .map_err(|failure| TableError::JsonPath(failure.message))
            })
            .collect()
    }

    /// The first value of the first part, as printer columns use it; `None` when there is no
    /// result or evaluation failed.
    pub fn first<'a>(&self, data: &'a Value) -> Option<Cow<'a, Value>> {
        let mut results = self.find_results(data).ok()?;
        let first = results.first_mut()?;
        if first.is_empty() {
            return None;
        }
        Some(first.swap_remove(0))
    }

    /// Renders the whole template as `kubectl -o jsonpath` would (values of one part separated
    /// by spaces).
    pub fn execute(&self, data: &Value) -> Result<String, TableError> {
        let mut out = String::new();
        for part in self.find_results(data)? {
            let texts: Vec<String> = part.iter().map(|v| print_value(v)).collect();
            out.push_str(&texts.join(" "));
        }
        Ok(out)
    }
}

/// The text JSONPath's `PrintResults` writes for one value: strings as-is, numbers and booleans
/// as Go prints them, objects and arrays as JSON, null as `<no value>`.
pub fn print_value(value: &Value) -> String {
    match value {
        Value::Null => "<no value>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => n.as_f64().map(go_float_v).unwrap_or_else(|| n.to_string()),
        },
        Value::String(s) => s.clone(),
        Value::Array(_) | Value::Object(_) => go_json(value),
    }
}

#[cfg(test)]
mod tests;

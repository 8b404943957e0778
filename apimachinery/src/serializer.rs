//! Serializers other than protobuf, as apimachinery's `runtime/serializer` provides them: JSON
//! as Go writes it (what kube-apiserver stores for custom resources), YAML in the form
//! kube-apiserver writes (sigs.k8s.io/yaml over the JSON serializer) and JSON indented as
//! `?pretty=true` asks.

pub mod json;
pub mod pretty;
pub mod yaml;

//! Serializers other than protobuf, as apimachinery's `runtime/serializer` provides them: YAML
//! in the form kube-apiserver writes (sigs.k8s.io/yaml over the JSON serializer) and JSON
//! indented as `?pretty=true` asks.

pub mod pretty;
pub mod yaml;

//! A Kubernetes-compatible API server: HTTPS, authentication, request info, the generic
//! registry over [`storage::Store`], the watch cache, discovery, OpenAPI and tables.

pub mod builtin;
pub mod error;
pub mod fields;
pub mod object;
pub mod options;
pub mod request_info;
pub mod resources;
pub mod selectors;
pub mod state;
pub mod watch_cache;

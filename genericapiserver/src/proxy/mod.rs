//! The generic proxy machinery (k8s.io/apimachinery's `pkg/util/proxy` and the transports
//! k8s.io/apiserver's proxying builds): a [`transport`] that dials a backend over
//! TLS (directly or through an HTTP(S) CONNECT or SOCKS5 proxy), and [`forward`]ing of a
//! request to it as the caller (`Impersonate-*` headers, hop-by-hop headers dropped, upgrades
//! spliced). kube-aggregator's APIService proxying ([`crate::aggregator`]) is built on it here;
//! Karmada's cluster proxy is built on it by the server above.

pub mod forward;
pub mod transport;

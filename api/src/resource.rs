//! Glue shared by every top-level Karmada kind: `apiVersion`/`kind` on the wire and the
//! `k8s_openapi` traits that give each kind `kube::Resource` (so `kube::Api<T>` works).

/// `skip_serializing_if` predicates mirroring Go's `omitempty` for scalar fields.
pub(crate) mod omit {
    pub(crate) fn is_false(v: &bool) -> bool {
        !*v
    }
    pub(crate) fn is_zero_i32(v: &i32) -> bool {
        *v == 0
    }
    pub(crate) fn is_zero_i64(v: &i64) -> bool {
        *v == 0
    }
}

/// Implements the wire form and the `k8s_openapi` resource traits for a top-level kind.
///
/// Serialization always writes `apiVersion` and `kind` first, like Go's `TypeMeta`, so a typed
/// object round-trips to the same JSON a Karmada server returns. The status field is written
/// when `status_always` says so (a Go struct without `omitempty` effect) or when it is not empty.
macro_rules! karmada_resource {
    (
        $ty:ident,
        group: $group:literal,
        version: $version:literal,
        plural: $plural:literal,
        scope: $scope:ty,
        status: $status:ident
    ) => {
        impl k8s_openapi::Resource for $ty {
            const API_VERSION: &'static str = concat!($group, "/", $version);
            const GROUP: &'static str = $group;
            const KIND: &'static str = stringify!($ty);
            const VERSION: &'static str = $version;
            const URL_PATH_SEGMENT: &'static str = $plural;
            type Scope = $scope;
        }

        impl k8s_openapi::ListableResource for $ty {
            const LIST_KIND: &'static str = concat!(stringify!($ty), "List");
        }

        impl k8s_openapi::Metadata for $ty {
            type Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

            fn metadata(&self) -> &Self::Ty {
                &self.metadata
            }

            fn metadata_mut(&mut self) -> &mut Self::Ty {
                &mut self.metadata
            }
        }

        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeStruct;
                let mut state = serializer.serialize_struct(stringify!($ty), 5)?;
                state.serialize_field(
                    "apiVersion",
                    <$ty as k8s_openapi::Resource>::API_VERSION,
                )?;
                state.serialize_field("kind", <$ty as k8s_openapi::Resource>::KIND)?;
                state.serialize_field("metadata", &self.metadata)?;
                state.serialize_field("spec", &self.spec)?;
                karmada_resource!(@status state, self, $status);
                state.end()
            }
        }
    };
    (@status $state:ident, $self:ident, none) => {};
    (@status $state:ident, $self:ident, always) => {
        $state.serialize_field("status", &$self.status)?;
    };
    (@status $state:ident, $self:ident, unless_empty) => {
        if !$self.status.is_empty() {
            $state.serialize_field("status", &$self.status)?;
        }
    };
}

pub(crate) use karmada_resource;

/// Declares a Go-style string enum: serde and schema use the wire spelling, `as_str` returns it.
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident = $value:literal
            ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord,
            serde::Serialize, serde::Deserialize, schemars::JsonSchema,
        )]
        pub enum $name {
            $(
                $(#[$vmeta])*
                #[serde(rename = $value)]
                $variant,
            )+
        }

        impl $name {
            /// Every value, in the order the API declares them.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The spelling used on the wire.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $value,)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = crate::UnknownValue;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($value => Ok($name::$variant),)+
                    other => Err(crate::UnknownValue {
                        type_name: stringify!($name),
                        value: other.to_owned(),
                    }),
                }
            }
        }
    };
}

pub(crate) use string_enum;

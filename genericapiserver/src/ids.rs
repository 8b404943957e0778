//! Random identifiers: object uids, audit ids, generated name suffixes.
//!
//! `uuid::Uuid::new_v4` asks the kernel for 16 bytes (a `getrandom` system call) every
//! time; a server mints one per request (the Audit-Id) and one per create, so the bytes
//! come from the thread's cryptographically secure generator instead (seeded from the
//! kernel and reseeded periodically).

use rand::Rng;

/// A random (version 4) UUID.
pub fn uuid_v4() -> uuid::Uuid {
    uuid::Builder::from_random_bytes(rand::rng().random()).into_uuid()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_4_and_distinct() {
        let a = uuid_v4();
        let b = uuid_v4();
        assert_eq!(a.get_version(), Some(uuid::Version::Random));
        assert_eq!(a.get_variant(), uuid::Variant::RFC4122);
        assert_ne!(a, b);
    }
}

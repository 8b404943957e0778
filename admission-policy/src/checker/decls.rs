//! The function declarations of kube's CEL environment, as cel-go's checker knows them: the
//! standard library (with kube's cross-type numeric comparisons), optional types, the strings
//! extension (version 2), sets, and kube's libraries (k8s.io/apiserver pkg/cel/library).
//! Each line is `[member] name(param, ...) -> result`; `A`, `B`, `K`, `V` are type parameters.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::types::Ty;

/// One overload.
#[derive(Debug)]
pub struct Overload {
    pub member: bool,
    /// For a member overload, the receiver first.
    pub params: Vec<Ty>,
    pub result: Ty,
}

const STANDARD: &str = "
_+_(int, int) -> int
_+_(uint, uint) -> uint
_+_(double, double) -> double
_+_(string, string) -> string
_+_(bytes, bytes) -> bytes
_+_(list(A), list(A)) -> list(A)
_+_(google.protobuf.Timestamp, google.protobuf.Duration) -> google.protobuf.Timestamp
_+_(google.protobuf.Duration, google.protobuf.Timestamp) -> google.protobuf.Timestamp
_+_(google.protobuf.Duration, google.protobuf.Duration) -> google.protobuf.Duration
_-_(int, int) -> int
_-_(uint, uint) -> uint
_-_(double, double) -> double
_-_(google.protobuf.Timestamp, google.protobuf.Timestamp) -> google.protobuf.Duration
_-_(google.protobuf.Timestamp, google.protobuf.Duration) -> google.protobuf.Timestamp
_-_(google.protobuf.Duration, google.protobuf.Duration) -> google.protobuf.Duration
_*_(int, int) -> int
_*_(uint, uint) -> uint
_*_(double, double) -> double
_/_(int, int) -> int
_/_(uint, uint) -> uint
_/_(double, double) -> double
_%_(int, int) -> int
_%_(uint, uint) -> uint
-_(int) -> int
-_(double) -> double
!_(bool) -> bool
_&&_(bool, bool) -> bool
_||_(bool, bool) -> bool
_?_:_(bool, A, A) -> A
_==_(A, A) -> bool
_!=_(A, A) -> bool
_[_](list(A), int) -> A
_[_](map(K, V), K) -> V
@in(A, list(A)) -> bool
@in(A, map(A, B)) -> bool
@not_strictly_false(bool) -> bool
size(string) -> int
size(bytes) -> int
size(list(A)) -> int
size(map(K, V)) -> int
member size(string) -> int
member size(bytes) -> int
member size(list(A)) -> int
member size(map(K, V)) -> int
int(int) -> int
int(uint) -> int
int(double) -> int
int(string) -> int
int(google.protobuf.Timestamp) -> int
uint(int) -> uint
uint(uint) -> uint
uint(double) -> uint
uint(string) -> uint
double(int) -> double
double(uint) -> double
double(double) -> double
double(string) -> double
string(int) -> string
string(uint) -> string
string(double) -> string
string(string) -> string
string(bytes) -> string
string(bool) -> string
string(google.protobuf.Timestamp) -> string
string(google.protobuf.Duration) -> string
bytes(string) -> bytes
bytes(bytes) -> bytes
bool(bool) -> bool
bool(string) -> bool
dyn(A) -> dyn
type(A) -> type(A)
duration(string) -> google.protobuf.Duration
timestamp(string) -> google.protobuf.Timestamp
timestamp(int) -> google.protobuf.Timestamp
matches(string, string) -> bool
member matches(string, string) -> bool
member contains(string, string) -> bool
member startsWith(string, string) -> bool
member endsWith(string, string) -> bool
optional.of(A) -> optional(A)
optional.ofNonZeroValue(A) -> optional(A)
optional.none() -> optional(dyn)
member hasValue(optional(A)) -> bool
member value(optional(A)) -> A
member orValue(optional(A), A) -> A
member or(optional(A), optional(A)) -> optional(A)
_?._(map(K, V), string) -> optional(V)
_?._(dyn, string) -> optional(dyn)
_[?_](list(A), int) -> optional(A)
_[?_](map(K, V), K) -> optional(V)
member charAt(string, int) -> string
member indexOf(string, string) -> int
member indexOf(string, string, int) -> int
member lastIndexOf(string, string) -> int
member lastIndexOf(string, string, int) -> int
member lowerAscii(string) -> string
member upperAscii(string) -> string
member replace(string, string, string) -> string
member replace(string, string, string, int) -> string
member split(string, string) -> list(string)
member split(string, string, int) -> list(string)
member substring(string, int) -> string
member substring(string, int, int) -> string
member trim(string) -> string
member join(list(string)) -> string
member join(list(string), string) -> string
member format(string, list(dyn)) -> string
strings.quote(string) -> string
sets.contains(list(A), list(A)) -> bool
sets.equivalent(list(A), list(A)) -> bool
sets.intersects(list(A), list(A)) -> bool
";

const TIME: &str = "
getFullYear getMonth getDayOfYear getDayOfMonth getDate getDayOfWeek getHours getMinutes getSeconds getMilliseconds
";

const KUBE: &str = "
member isSorted(list(int)) -> bool
member isSorted(list(uint)) -> bool
member isSorted(list(double)) -> bool
member isSorted(list(bool)) -> bool
member isSorted(list(google.protobuf.Duration)) -> bool
member isSorted(list(google.protobuf.Timestamp)) -> bool
member isSorted(list(string)) -> bool
member isSorted(list(bytes)) -> bool
member sum(list(int)) -> int
member sum(list(uint)) -> uint
member sum(list(double)) -> double
member sum(list(google.protobuf.Duration)) -> google.protobuf.Duration
member min(list(A)) -> A
member max(list(A)) -> A
member indexOf(list(A), A) -> int
member lastIndexOf(list(A), A) -> int
member find(string, string) -> string
member findAll(string, string) -> list(string)
member findAll(string, string, int) -> list(string)
url(string) -> net.URL
isURL(string) -> bool
member getScheme(net.URL) -> string
member getHost(net.URL) -> string
member getHostname(net.URL) -> string
member getPort(net.URL) -> string
member getEscapedPath(net.URL) -> string
member getQuery(net.URL) -> map(string, list(string))
quantity(string) -> kubernetes.Quantity
isQuantity(string) -> bool
member sign(kubernetes.Quantity) -> int
member isGreaterThan(kubernetes.Quantity, kubernetes.Quantity) -> bool
member isLessThan(kubernetes.Quantity, kubernetes.Quantity) -> bool
member compareTo(kubernetes.Quantity, kubernetes.Quantity) -> int
member add(kubernetes.Quantity, kubernetes.Quantity) -> kubernetes.Quantity
member add(kubernetes.Quantity, int) -> kubernetes.Quantity
member sub(kubernetes.Quantity, kubernetes.Quantity) -> kubernetes.Quantity
member sub(kubernetes.Quantity, int) -> kubernetes.Quantity
member asInteger(kubernetes.Quantity) -> int
member isInteger(kubernetes.Quantity) -> bool
member asApproximateFloat(kubernetes.Quantity) -> double
ip(string) -> net.IP
isIP(string) -> bool
ip.isCanonical(string) -> bool
member family(net.IP) -> int
member isUnspecified(net.IP) -> bool
member isLoopback(net.IP) -> bool
member isLinkLocalMulticast(net.IP) -> bool
member isLinkLocalUnicast(net.IP) -> bool
member isGlobalUnicast(net.IP) -> bool
string(net.IP) -> string
cidr(string) -> net.CIDR
isCIDR(string) -> bool
member containsIP(net.CIDR, net.IP) -> bool
member containsIP(net.CIDR, string) -> bool
member containsCIDR(net.CIDR, net.CIDR) -> bool
member containsCIDR(net.CIDR, string) -> bool
member ip(net.CIDR) -> net.IP
member masked(net.CIDR) -> net.CIDR
member prefixLength(net.CIDR) -> int
string(net.CIDR) -> string
format.named(string) -> optional(kubernetes.NamedFormat)
format.dns1123Label() -> kubernetes.NamedFormat
format.dns1123Subdomain() -> kubernetes.NamedFormat
format.dns1035Label() -> kubernetes.NamedFormat
format.qualifiedName() -> kubernetes.NamedFormat
format.dns1123LabelPrefix() -> kubernetes.NamedFormat
format.dns1123SubdomainPrefix() -> kubernetes.NamedFormat
format.dns1035LabelPrefix() -> kubernetes.NamedFormat
format.labelValue() -> kubernetes.NamedFormat
member validate(kubernetes.NamedFormat, string) -> optional(list(string))
member path(kubernetes.authorization.Authorizer, string) -> kubernetes.authorization.PathCheck
member group(kubernetes.authorization.Authorizer, string) -> kubernetes.authorization.GroupCheck
member serviceAccount(kubernetes.authorization.Authorizer, string, string) -> kubernetes.authorization.Authorizer
member resource(kubernetes.authorization.GroupCheck, string) -> kubernetes.authorization.ResourceCheck
member subresource(kubernetes.authorization.ResourceCheck, string) -> kubernetes.authorization.ResourceCheck
member namespace(kubernetes.authorization.ResourceCheck, string) -> kubernetes.authorization.ResourceCheck
member name(kubernetes.authorization.ResourceCheck, string) -> kubernetes.authorization.ResourceCheck
member check(kubernetes.authorization.PathCheck, string) -> kubernetes.authorization.Decision
member check(kubernetes.authorization.ResourceCheck, string) -> kubernetes.authorization.Decision
member allowed(kubernetes.authorization.Decision) -> bool
member reason(kubernetes.authorization.Decision) -> string
member errored(kubernetes.authorization.Decision) -> bool
member error(kubernetes.authorization.Decision) -> string
";

/// The library types expressions may name.
const OPAQUE: &[&str] = &[
    "net.URL",
    "net.IP",
    "net.CIDR",
    "kubernetes.Quantity",
    "kubernetes.NamedFormat",
    "kubernetes.authorization.Authorizer",
    "kubernetes.authorization.PathCheck",
    "kubernetes.authorization.GroupCheck",
    "kubernetes.authorization.ResourceCheck",
    "kubernetes.authorization.Decision",
];

/// Every declared function's overloads, by name.
pub fn functions() -> &'static HashMap<String, Vec<Overload>> {
    static FUNCTIONS: OnceLock<HashMap<String, Vec<Overload>>> = OnceLock::new();
    FUNCTIONS.get_or_init(|| {
        let mut out: HashMap<String, Vec<Overload>> = HashMap::new();
        for line in STANDARD.lines().chain(KUBE.lines()) {
            if let Some((name, o)) = parse_decl(line) {
                out.entry(name).or_default().push(o);
            }
        }
        let numeric = [Ty::Int, Ty::Uint, Ty::Double];
        for op in ["_<_", "_<=_", "_>_", "_>=_"] {
            let same = [Ty::Bool, Ty::String, Ty::Bytes, Ty::Timestamp, Ty::Duration];
            let entry = out.entry(op.to_owned()).or_default();
            for t in same {
                entry.push(Overload {
                    member: false,
                    params: vec![t.clone(), t],
                    result: Ty::Bool,
                });
            }
            // Cross-type numeric comparisons, which kube's environment enables.
            for a in &numeric {
                for b in &numeric {
                    entry.push(Overload {
                        member: false,
                        params: vec![a.clone(), b.clone()],
                        result: Ty::Bool,
                    });
                }
            }
        }
        for name in TIME.split_whitespace() {
            let entry = out.entry(name.to_owned()).or_default();
            entry.push(Overload {
                member: true,
                params: vec![Ty::Timestamp],
                result: Ty::Int,
            });
            entry.push(Overload {
                member: true,
                params: vec![Ty::Timestamp, Ty::String],
                result: Ty::Int,
            });
            if matches!(
                name,
                "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds"
            ) {
                entry.push(Overload {
                    member: true,
                    params: vec![Ty::Duration],
                    result: Ty::Int,
                });
            }
        }
        out
    })
}

/// Names that resolve to type values (`int`, `net.IP`).
pub fn type_ident(name: &str) -> Option<Ty> {
    Some(match name {
        "int" => Ty::Int,
        "uint" => Ty::Uint,
        "double" => Ty::Double,
        "bool" => Ty::Bool,
        "string" => Ty::String,
        "bytes" => Ty::Bytes,
        "list" => Ty::list(Ty::Dyn),
        "map" => Ty::map(Ty::Dyn, Ty::Dyn),
        "null_type" => Ty::Null,
        "type" => Ty::Type(Box::new(Ty::Dyn)),
        "google.protobuf.Duration" => Ty::Duration,
        "google.protobuf.Timestamp" => Ty::Timestamp,
        _ => {
            let name = OPAQUE.iter().find(|o| **o == name)?;
            Ty::opaque(name)
        }
    })
}

fn parse_decl(line: &str) -> Option<(String, Overload)> {
    let line = line.trim();
    if line.is_empty() {
        return None;
    }
    let (member, rest) = match line.strip_prefix("member ") {
        Some(rest) => (true, rest),
        None => (false, line),
    };
    let open = rest.find('(')?;
    let name = rest[..open].to_owned();
    let (args, result) = rest[open + 1..].rsplit_once(") -> ")?;
    let params = split_top(args)
        .into_iter()
        .filter(|a| !a.is_empty())
        .map(parse_type)
        .collect();
    Some((
        name,
        Overload {
            member,
            params,
            result: parse_type(result),
        },
    ))
}

/// Splits `a, list(b, c), d` at its top-level commas.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s[start..].trim());
    out
}

fn parse_type(s: &str) -> Ty {
    let s = s.trim();
    if let Some(open) = s.find('(') {
        let inner = split_top(&s[open + 1..s.len() - 1]);
        let args: Vec<Ty> = inner.into_iter().map(parse_type).collect();
        return match &s[..open] {
            "list" => Ty::list(args[0].clone()),
            "map" => Ty::map(args[0].clone(), args[1].clone()),
            "optional" => Ty::optional(args[0].clone()),
            "type" => Ty::Type(Box::new(args[0].clone())),
            other => unreachable_type(other),
        };
    }
    match s {
        "A" => Ty::Param("A"),
        "B" => Ty::Param("B"),
        "K" => Ty::Param("K"),
        "V" => Ty::Param("V"),
        "dyn" => Ty::Dyn,
        other => type_ident(other).unwrap_or_else(|| unreachable_type(other)),
    }
}

fn unreachable_type(name: &str) -> Ty {
    // The tables above are fixed text; a typo in them must fail the tests, not a request.
    panic!("unknown type '{name}' in the declaration tables")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_parse() {
        let f = functions();
        assert!(
            f["_+_"]
                .iter()
                .any(|o| o.params == vec![Ty::list(Ty::Param("A")); 2])
        );
        assert!(f["getQuery"][0].member);
        assert_eq!(
            f["getQuery"][0].result,
            Ty::map(Ty::String, Ty::list(Ty::String))
        );
        assert_eq!(f["_<_"].len(), 14);
    }
}

//! Accept headers as kube-apiserver reads them: `github.com/munnerz/goautoneg`'s `ParseAccept`
//! (the version Kubernetes 1.32 vendors), then `NegotiateMediaTypeOptions` and
//! `acceptMediaTypeOptions` of apiserver's `endpoints/handlers/negotiation`.
//!
//! The quirks are kept on purpose: media types are case-sensitive, only spaces are trimmed,
//! parameter values are not unquoted, a `q` that does not parse is 0 and `q=0` still matches
//! (it only sorts last), and clauses are ordered by goautoneg's comparison, which Go's
//! `sort.Sort` applies as an insertion sort for the dozen clauses a header holds.

/// One clause of an Accept header.
#[derive(Clone, Debug, PartialEq)]
pub struct Clause<'a> {
    /// `application` in `application/json`.
    pub ty: &'a str,
    /// `json` in `application/json`.
    pub sub: &'a str,
    /// The `q` parameter (1 when absent).
    pub q: f64,
    /// The other parameters, as given; a repeated key keeps its last value.
    pub params: Vec<(&'a str, &'a str)>,
}

impl Clause<'_> {
    /// A parameter's value.
    pub fn param(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }
}

/// Go's `nextSplitElement`: the text before the first `sep` and the rest after it.
fn split_once(s: &str, sep: char) -> (&str, &str) {
    s.split_once(sep).unwrap_or((s, ""))
}

fn trim(s: &str) -> &str {
    s.trim_matches(' ')
}

/// `goautoneg.ParseAccept`: the clauses of an Accept header, best first.
pub fn parse(header: &str) -> Vec<Clause<'_>> {
    let mut clauses = Vec::new();
    let mut remaining = header;
    while !remaining.is_empty() {
        let (part, rest) = split_once(remaining, ',');
        remaining = rest;
        let part = trim(part);
        let (media, mut params_text) = split_once(part, ';');
        let (ty, subtype) = split_once(media, '/');
        let ty = trim(ty);
        let sub = if subtype.is_empty() {
            // A bare `*` is `*/*`; any other type without a subtype is skipped.
            if ty != "*" {
                continue;
            }
            "*"
        } else {
            let (sub, extra) = split_once(subtype, '/');
            if !extra.is_empty() {
                continue;
            }
            trim(sub)
        };
        let mut clause = Clause {
            ty,
            sub,
            q: 1.0,
            params: Vec::new(),
        };
        while !params_text.is_empty() {
            let (param, rest) = split_once(params_text, ';');
            params_text = rest;
            let (key, value) = split_once(param, '=');
            if value.is_empty() {
                continue;
            }
            let (value, extra) = split_once(value, '=');
            if !extra.is_empty() {
                continue;
            }
            let key = trim(key);
            if key == "q" {
                // strconv.ParseFloat(value, 32), errors ignored (0).
                clause.q = value.parse::<f32>().map(f64::from).unwrap_or(0.0);
            } else {
                clause.params.push((key, trim(value)));
            }
        }
        clauses.push(clause);
    }
    insertion_sort(&mut clauses);
    clauses
}

/// goautoneg's `Less`: a higher q first, then a specific type before `*`, then a specific
/// subtype before `*` (not a strict order, hence the exact sort matters).
fn less(a: &Clause<'_>, b: &Clause<'_>) -> bool {
    if a.q > b.q {
        return true;
    }
    if a.ty != "*" && b.ty == "*" {
        return true;
    }
    a.sub != "*" && b.sub == "*"
}

/// Go's `insertionSort`, which `sort.Sort` uses for up to 12 elements.
fn insertion_sort(clauses: &mut [Clause<'_>]) {
    for i in 1..clauses.len() {
        let mut j = i;
        while j > 0 && less(&clauses[j], &clauses[j - 1]) {
            clauses.swap(j, j - 1);
            j -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn media(header: &str) -> Vec<String> {
        parse(header)
            .iter()
            .map(|c| format!("{}/{}", c.ty, c.sub))
            .collect()
    }

    #[test]
    fn goautoneg_parsing() {
        let c = parse("application/json; pretty=1;q=0.5 ,*");
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].ty, c[0].sub), ("*", "*"));
        assert_eq!((c[1].ty, c[1].sub, c[1].q), ("application", "json", 0.5));
        assert_eq!(c[1].param("pretty"), Some("1"));
        // Skipped: no subtype, two slashes, empty parts.
        assert_eq!(media("application, a/b/c, , text/html"), vec!["text/html"]);
        // Case and quotes are kept; only spaces are trimmed.
        let c = parse("Application/JSON;as=\"Table\"");
        assert_eq!((c[0].ty, c[0].sub), ("Application", "JSON"));
        assert_eq!(c[0].param("as"), Some("\"Table\""));
        // Parameters without a value or with two `=` are dropped; q that does not parse is 0.
        let c = parse("a/b;x;y=1=2;z=3;q=high");
        assert_eq!(c[0].params, vec![("z", "3")]);
        assert_eq!(c[0].q, 0.0);
        assert!(parse("").is_empty());
        assert!(parse(" ").is_empty());
    }

    #[test]
    fn goautoneg_order() {
        // Specificity outranks q when the two disagree: Go's comparison is not a strict order.
        assert_eq!(
            media("*/*;q=0.9,application/json;q=0.5,application/*,text/html"),
            vec!["text/html", "application/*", "application/json", "*/*"]
        );
        // Equal clauses keep their order; specific types go before wildcards of equal q.
        assert_eq!(
            media("*/*,application/vnd.kubernetes.protobuf,application/json"),
            vec![
                "application/vnd.kubernetes.protobuf",
                "application/json",
                "*/*"
            ]
        );
        // q=0 only sorts last.
        assert_eq!(media("a/b;q=0,c/d"), vec!["c/d", "a/b"]);
    }
}

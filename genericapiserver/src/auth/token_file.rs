//! Static bearer tokens from a CSV file, as kube-apiserver's `--token-auth-file`
//! (k8s.io/apiserver/pkg/authentication/token/tokenfile): each record is
//! `token,user,uid[,"group1,group2"]`.

use std::collections::HashMap;
use std::path::Path;

use super::{AuthError, UserInfo};

/// Token → user.
pub type StaticTokens = HashMap<String, UserInfo>;

/// Reads a token file.
pub fn load(path: &Path) -> Result<StaticTokens, AuthError> {
    let text = std::fs::read_to_string(path).map_err(|source| AuthError::Io {
        path: path.display().to_string(),
        source,
    })?;
    parse(&text).map_err(|message| AuthError::TokenFile {
        path: path.display().to_string(),
        message,
    })
}

/// Parses token-file text. Records with an empty token are skipped (kube warns and goes on);
/// a later duplicate token replaces an earlier one, as kube's map does.
pub fn parse(text: &str) -> Result<StaticTokens, String> {
    let mut tokens = StaticTokens::new();
    for (n, record) in csv_records(text)?.into_iter().enumerate() {
        if record.len() < 3 {
            return Err(format!(
                "record {} must have at least 3 columns (token, user name, user uid), found {}",
                n + 1,
                record.len()
            ));
        }
        if record[0].is_empty() {
            tracing::warn!(record = n + 1, "empty token in the token file");
            continue;
        }
        let groups = record
            .get(3)
            .map(|g| g.split(',').map(str::to_string).collect())
            .unwrap_or_default();
        let user = super::authenticator::with_authenticated_group(UserInfo {
            name: record[1].clone(),
            uid: record[2].clone(),
            groups,
            ..Default::default()
        });
        tokens.insert(record[0].clone(), user);
    }
    Ok(tokens)
}

/// Splits CSV text into records as Go's `encoding/csv` reader does (RFC 4180 quoting, `""`
/// inside quotes, blank lines skipped, spaces kept).
fn csv_records(text: &str) -> Result<Vec<Vec<String>>, String> {
    let mut records = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1;
    while chars.peek().is_some() {
        // Blank lines are not records.
        if matches!(chars.peek(), Some('\n')) {
            chars.next();
            line += 1;
            continue;
        }
        if matches!(chars.peek(), Some('\r')) {
            chars.next();
            continue;
        }
        let mut record = Vec::new();
        let mut field = String::new();
        loop {
            match chars.next() {
                None => {
                    record.push(std::mem::take(&mut field));
                    break;
                }
                Some('\n') => {
                    record.push(std::mem::take(&mut field));
                    line += 1;
                    break;
                }
                Some('\r') if matches!(chars.peek(), Some('\n') | None) => {}
                Some(',') => record.push(std::mem::take(&mut field)),
                Some('"') if field.is_empty() => loop {
                    match chars.next() {
                        None => {
                            return Err(format!(
                                "line {line}: extraneous or missing \" in quoted-field"
                            ));
                        }
                        Some('"') if matches!(chars.peek(), Some('"')) => {
                            chars.next();
                            field.push('"');
                        }
                        Some('"') => {
                            if !matches!(chars.peek(), Some(',') | Some('\n') | Some('\r') | None) {
                                return Err(format!(
                                    "line {line}: extraneous or missing \" in quoted-field"
                                ));
                            }
                            break;
                        }
                        Some('\n') => {
                            line += 1;
                            field.push('\n');
                        }
                        Some(c) => field.push(c),
                    }
                },
                Some('"') => return Err(format!("line {line}: bare \" in non-quoted-field")),
                Some(c) => field.push(c),
            }
        }
        records.push(record);
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::type_complexity)]
    fn records() {
        let cases: &[(&str, Result<Vec<Vec<&str>>, ()>)] = &[
            ("a,b,c\n", Ok(vec![vec!["a", "b", "c"]])),
            ("a,b,c", Ok(vec![vec!["a", "b", "c"]])),
            (
                "a,b,c\r\n\nd,e,f\n",
                Ok(vec![vec!["a", "b", "c"], vec!["d", "e", "f"]]),
            ),
            ("t,u,1,\"g1,g2\"\n", Ok(vec![vec!["t", "u", "1", "g1,g2"]])),
            ("\"a\"\"b\",c\n", Ok(vec![vec!["a\"b", "c"]])),
            (" a , b ", Ok(vec![vec![" a ", " b "]])),
            ("a,\"b\nc\",d", Ok(vec![vec!["a", "b\nc", "d"]])),
            ("a\"b,c", Err(())),
            ("\"abc", Err(())),
            ("\"a\"b,c", Err(())),
            ("", Ok(vec![])),
        ];
        for (text, want) in cases {
            let got = csv_records(text);
            match want {
                Ok(w) => {
                    let w: Vec<Vec<String>> = w
                        .iter()
                        .map(|r| r.iter().map(|s| s.to_string()).collect())
                        .collect();
                    assert_eq!(got, Ok(w), "{text:?}");
                }
                Err(()) => assert!(got.is_err(), "{text:?}"),
            }
        }
    }

    #[test]
    fn tokens() {
        let t = parse(
            "s3cret,alice,1001,\"dev,ops\"\nother,bob,1002\n,nobody,0\nx,sys,3,system:unauthenticated\n",
        )
        .unwrap();
        assert_eq!(t.len(), 3);
        let alice = &t["s3cret"];
        assert_eq!(alice.name, "alice");
        assert_eq!(alice.uid, "1001");
        assert_eq!(alice.groups, vec!["dev", "ops", "system:authenticated"]);
        assert_eq!(t["other"].groups, vec!["system:authenticated"]);
        assert_eq!(t["x"].groups, vec!["system:unauthenticated"]);
        assert!(parse("only,two\n").is_err());
    }
}

//! Output of the fleet commands as kubectl prints it (k8s.io/cli-runtime/pkg/printers): the
//! human-readable table of a server-side `meta.k8s.io/v1` Table (tableprinter.go) laid out by
//! Go's text/tabwriter with kubectl's settings, and the `json`, `yaml`, `name` and `jsonpath`
//! printers.

use anyhow::{Context, bail};
use serde_json::Value;

/// Go's `text/tabwriter` as kubectl's printers configure it (minimum width 6, padding 3,
/// spaces).
pub fn tabwriter(text: &str) -> String {
    tabwriter_with(text, 6, 3)
}

/// Go's `text/tabwriter` with spaces: tab-terminated cells of consecutive lines form columns
/// padded to their widest cell plus `padding`, at least `min_width` wide.
pub fn tabwriter_with(text: &str, min_width: usize, padding: usize) -> String {
    let lines: Vec<Vec<&str>> = text
        .split_inclusive('\n')
        .map(|l| l.strip_suffix('\n').unwrap_or(l).split('\t').collect())
        .collect();
    let mut widths: Vec<Vec<usize>> = vec![Vec::new(); lines.len()];
    // `format`: a column block is a run of lines having a terminated cell in that column.
    fn format(
        lines: &[Vec<&str>],
        widths: &mut [Vec<usize>],
        (from, to, column): (usize, usize, usize),
        (min_width, padding): (usize, usize),
    ) {
        let mut this = from;
        while this < to {
            if column + 1 >= lines[this].len() {
                this += 1;
                continue;
            }
            let start = this;
            let mut width = min_width;
            while this < to && column + 1 < lines[this].len() {
                width = width.max(lines[this][column].chars().count() + padding);
                this += 1;
            }
            for w in &mut widths[start..this] {
                w.push(width);
            }
            format(
                lines,
                widths,
                (start, this, column + 1),
                (min_width, padding),
            );
        }
    }
    format(
        &lines,
        &mut widths,
        (0, lines.len(), 0),
        (min_width, padding),
    );
    let mut out = String::new();
    for (cells, w) in lines.iter().zip(&widths) {
        for (j, cell) in cells.iter().enumerate() {
            out.push_str(cell);
            if j + 1 < cells.len() {
                let width = w.get(j).copied().unwrap_or(0);
                let pad = width.saturating_sub(cell.chars().count());
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push('\n');
    }
    if !text.ends_with('\n') {
        out.pop();
    }
    out
}

/// Lays rows of cells out as kubectl does (cells joined by tabs through [`tabwriter`]).
pub fn tabulate(rows: &[Vec<String>]) -> String {
    let text: String = rows.iter().map(|r| r.join("\t") + "\n").collect();
    tabwriter(&text)
}

/// One column of a Table.
#[derive(Clone, Debug)]
pub struct Column {
    pub name: String,
    pub priority: i64,
}

/// One row: its cells and the object (metadata) it was made from.
#[derive(Clone, Debug)]
pub struct Row {
    pub cells: Vec<Value>,
    pub object: Value,
}

/// A `meta.k8s.io/v1` Table as the server answers it.
#[derive(Clone, Debug, Default)]
pub struct Table {
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
}

impl Table {
    /// Reads a Table response; anything else is refused with what came instead.
    pub fn from_json(v: &Value) -> anyhow::Result<Table> {
        if v["kind"] != "Table" {
            bail!(
                "the server answered {} where a Table was asked for",
                v["kind"].as_str().unwrap_or("an untyped object")
            );
        }
        let columns = v["columnDefinitions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| Column {
                name: c["name"].as_str().unwrap_or_default().to_owned(),
                priority: c["priority"].as_i64().unwrap_or(0),
            })
            .collect();
        let rows = v["rows"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| Row {
                cells: r["cells"].as_array().cloned().unwrap_or_default(),
                object: r["object"].clone(),
            })
            .collect();
        Ok(Table { columns, rows })
    }
}

/// How a table is printed (printers.PrintOptions).
#[derive(Clone, Debug, Default)]
pub struct TableOptions {
    pub wide: bool,
    pub no_headers: bool,
    pub with_namespace: bool,
    pub show_labels: bool,
    /// `kind.group` put before each name (several kinds printed together).
    pub with_kind: Option<String>,
}

/// tableprinter's cell rendering: strings cut at their first line break (with `...`), other
/// values as Go's `fmt.Sprint` shows them.
fn cell_text(v: &Value) -> String {
    match v {
        Value::String(s) => match s.find(['\n', '\r', '\u{c}']) {
            Some(at) => format!("{}...", &s[..at]),
            None => s.clone(),
        },
        Value::Null => "<nil>".into(),
        other => other.to_string(),
    }
}

/// The `k=v,...` of `--show-labels`, sorted as Go's labels.Set.String sorts them.
fn labels_text(object: &Value) -> String {
    let Some(labels) = object["metadata"]["labels"]
        .as_object()
        .filter(|l| !l.is_empty())
    else {
        return "<none>".into();
    };
    let mut pairs: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    pairs.join(",")
}

/// The rows of a table as kubectl's human-readable printer writes them (header first).
pub fn table_rows(table: &Table, options: &TableOptions) -> Vec<Vec<String>> {
    let shown: Vec<usize> = (0..table.columns.len())
        .filter(|&i| options.wide || table.columns[i].priority == 0)
        .collect();
    let mut out = Vec::with_capacity(table.rows.len() + 1);
    if !options.no_headers {
        let mut header = Vec::new();
        if options.with_namespace {
            header.push("NAMESPACE".to_owned());
        }
        header.extend(shown.iter().map(|&i| table.columns[i].name.to_uppercase()));
        if options.show_labels {
            header.push("LABELS".into());
        }
        out.push(header);
    }
    for row in &table.rows {
        let mut line = Vec::new();
        if options.with_namespace {
            line.push(
                row.object["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            );
        }
        for &i in &shown {
            let text = row.cells.get(i).map(cell_text).unwrap_or_default();
            match (&options.with_kind, i) {
                (Some(kind), 0) => line.push(format!("{kind}/{text}")),
                _ => line.push(text),
            }
        }
        if options.show_labels {
            line.push(labels_text(&row.object));
        }
        out.push(line);
    }
    out
}

/// `-o` of the commands that print objects.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    Table { wide: bool },
    Json,
    Yaml,
    Name,
    JsonPath(String),
}

impl Output {
    /// Parses `-o` as kubectl's PrintFlags accept it (the formats implemented here).
    pub fn parse(s: &str) -> anyhow::Result<Output> {
        Ok(match s {
            "" => Output::Table { wide: false },
            "wide" => Output::Table { wide: true },
            "json" => Output::Json,
            "yaml" => Output::Yaml,
            "name" => Output::Name,
            _ => match s.split_once('=') {
                Some(("jsonpath", t)) if !t.is_empty() => Output::JsonPath(t.to_owned()),
                Some(("jsonpath", _)) => bail!("template format specified but no template given"),
                _ => bail!(
                    "unable to match a printer suitable for the output format \"{s}\", allowed formats are: json,jsonpath,name,wide,yaml"
                ),
            },
        })
    }

    pub fn is_table(&self) -> bool {
        matches!(self, Output::Table { .. })
    }
}

/// Go's encoding/json escapes these in strings; kubectl's JSON printer shows them so.
fn go_json(v: &Value) -> anyhow::Result<String> {
    let mut buf = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, formatter);
    serde::Serialize::serialize(v, &mut ser)?;
    let text = String::from_utf8(buf)?;
    Ok(text
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026"))
}

/// `kind.group/name` (printers.NamePrinter): the kind lowercased, the group after a dot.
pub fn object_name(object: &Value) -> String {
    let kind = object["kind"].as_str().unwrap_or_default().to_lowercase();
    let group = object["apiVersion"]
        .as_str()
        .and_then(|v| v.split_once('/'))
        .map(|(g, _)| g)
        .unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    if group.is_empty() {
        format!("{kind}/{name}")
    } else {
        format!("{kind}.{group}/{name}")
    }
}

/// A list's items with the list's type, as a decoded list gives them (a list's items carry
/// none of their own).
pub fn list_items(list: &Value) -> impl Iterator<Item = Value> + '_ {
    let kind = list["kind"].as_str().unwrap_or_default();
    let item_kind = kind.strip_suffix("List").unwrap_or(kind);
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(move |i| {
            let mut i = i.clone();
            if i["kind"].is_null() {
                i["kind"] = Value::from(item_kind);
                i["apiVersion"] = list["apiVersion"].clone();
            }
            i
        })
}

/// Prints an object (or a `List`) with a non-table printer.
pub fn print_object(output: &Output, object: &Value) -> anyhow::Result<String> {
    Ok(match output {
        Output::Json => go_json(object)? + "\n",
        Output::Yaml => serde_yaml::to_string(object)?,
        Output::Name => {
            let items = match object["items"].as_array() {
                Some(items) if object["kind"] == "List" => items.iter().collect(),
                _ => vec![object],
            };
            items.into_iter().map(|o| object_name(o) + "\n").collect()
        }
        Output::JsonPath(template) => crate::cmd::jsonpath::execute(template, object)
            .with_context(|| format!("error executing jsonpath {template:?}"))?,
        Output::Table { .. } => bail!("a table is printed from the server's Table"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn strings(rows: &[&[&str]]) -> Vec<Vec<String>> {
        rows.iter()
            .map(|r| r.iter().map(|c| c.to_string()).collect())
            .collect()
    }

    #[test]
    fn tab_writer_aligns_runs_of_cells_as_go() {
        let text = "TARGET: apps/v1 Deployment\t\nRULERS:\n    Retain:\tUNSET\n    InterpretReplica:\tERROR: bad\t\n    X:\tPASS\n";
        assert_eq!(
            tabwriter(text),
            "TARGET: apps/v1 Deployment   \nRULERS:\n    Retain:             UNSET\n    InterpretReplica:   ERROR: bad   \n    X:                  PASS\n"
        );
    }

    #[test]
    fn cells_are_laid_out_as_gos_tabwriter_with_kubectls_settings() {
        let text = tabulate(&strings(&[
            &["NAME", "READY", "AGE"],
            &["a", "1/1", "5s"],
            &["a-longer-name", "10/10", "3m"],
        ]));
        assert_eq!(
            text,
            "NAME            READY   AGE\na               1/1     5s\na-longer-name   10/10   3m\n"
        );
        // The minimum width applies even to short columns.
        assert_eq!(tabulate(&strings(&[&["A", "B"]])), "A     B\n");
    }

    #[test]
    fn tables_print_priority_columns_only_when_wide() {
        let table = Table::from_json(&json!({
            "kind": "Table",
            "columnDefinitions": [{"name": "Name", "priority": 0}, {"name": "Node", "priority": 1},
                {"name": "Note", "priority": 0}],
            "rows": [{"cells": ["p", "n1", "line\nmore"],
                "object": {"metadata": {"namespace": "ns", "labels": {"b": "2", "a": "1"}}}}]
        }))
        .expect("table");
        let narrow = table_rows(&table, &TableOptions::default());
        assert_eq!(narrow, strings(&[&["NAME", "NOTE"], &["p", "line..."]]));
        let wide = table_rows(
            &table,
            &TableOptions {
                wide: true,
                with_namespace: true,
                show_labels: true,
                with_kind: Some("pod".into()),
                ..Default::default()
            },
        );
        assert_eq!(
            wide,
            strings(&[
                &["NAMESPACE", "NAME", "NODE", "NOTE", "LABELS"],
                &["ns", "pod/p", "n1", "line...", "a=1,b=2"]
            ])
        );
        assert!(Table::from_json(&json!({"kind": "PodList"})).is_err());
    }

    #[test]
    fn outputs_parse_and_print_as_kubectls() {
        assert_eq!(
            Output::parse("wide").expect("wide"),
            Output::Table { wide: true }
        );
        assert!(
            Output::parse("xml")
                .expect_err("xml")
                .to_string()
                .starts_with("unable to match a printer suitable for the output format \"xml\"")
        );
        let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "annotations": {"a": "<&>"}}});
        assert_eq!(
            print_object(&Output::Name, &deploy).expect("name"),
            "deployment.apps/web\n"
        );
        let list = json!({"kind": "List", "apiVersion": "v1",
            "items": [deploy, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}]});
        assert_eq!(
            print_object(&Output::Name, &list).expect("name"),
            "deployment.apps/web\npod/p\n"
        );
        let json = print_object(&Output::Json, &deploy).expect("json");
        assert!(json.contains("\"a\": \"\\u003c\\u0026\\u003e\""), "{json}");
        assert!(
            json.starts_with("{\n    \"apiVersion\": \"apps/v1\",\n"),
            "{json}"
        );
    }
}

//! rbac.authorization.k8s.io/v1 RoleBinding and ClusterRoleBinding.

use jiff::Timestamp;
use serde_json::Value;

use super::{AGE, ColumnDefinition, NAME, age, array_at, cells, col, name, str_at, wide};
use crate::table::column::Row;

/// Shared by RoleBinding and ClusterRoleBinding.
pub(super) static ROLE_BINDING_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col("Role", "string", "The role granted, as Kind/name."),
    AGE,
    wide("Users", "string", "Users the role is granted to."),
    wide("Groups", "string", "Groups the role is granted to."),
    wide(
        "ServiceAccounts",
        "string",
        "Service accounts the role is granted to, as namespace/name.",
    ),
];

/// `printRoleBinding` / `printClusterRoleBinding`, with `rbac.SubjectsStrings`.
pub(super) fn binding(obj: &Value, now: Timestamp) -> Row {
    let role = format!(
        "{}/{}",
        str_at(obj, "/roleRef/kind"),
        str_at(obj, "/roleRef/name")
    );
    let mut users = Vec::new();
    let mut groups = Vec::new();
    let mut service_accounts = Vec::new();
    for subject in array_at(obj, "/subjects") {
        let subject_name = str_at(subject, "/name");
        match str_at(subject, "/kind") {
            "ServiceAccount" => {
                service_accounts.push(format!("{}/{subject_name}", str_at(subject, "/namespace")));
            }
            "User" => users.push(subject_name.to_string()),
            "Group" => groups.push(subject_name.to_string()),
            _ => {}
        }
    }
    cells![
        name(obj),
        role,
        age(obj, now),
        users.join(", "),
        groups.join(", "),
        service_accounts.join(", "),
    ]
}

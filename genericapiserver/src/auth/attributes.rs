//! Authorization attributes (k8s.io/apiserver/pkg/authorization/authorizer.Attributes) and
//! kube-apiserver's Forbidden message built from them.

use super::UserInfo;
use crate::error::ApiError;
use crate::request_info::RequestInfo;

/// What a request wants to do, as the authorizer sees it.
#[derive(Clone, Copy, Debug)]
pub struct Attributes<'a> {
    /// Who.
    pub user: &'a UserInfo,
    /// The verb (get, list, ..., impersonate, bind, escalate; or the lower-cased HTTP method
    /// of a non-resource request).
    pub verb: &'a str,
    /// A resource request (else a non-resource path).
    pub resource_request: bool,
    /// The path of a non-resource request.
    pub path: &'a str,
    /// API group.
    pub api_group: &'a str,
    /// API version.
    pub api_version: &'a str,
    /// Resource.
    pub resource: &'a str,
    /// Subresource.
    pub subresource: &'a str,
    /// Namespace (`""` for cluster scope).
    pub namespace: &'a str,
    /// Object name.
    pub name: &'a str,
}

impl<'a> Attributes<'a> {
    /// The attributes of an API request.
    pub fn from_request(user: &'a UserInfo, info: &'a RequestInfo) -> Attributes<'a> {
        Attributes {
            user,
            verb: &info.verb,
            resource_request: info.is_resource_request,
            path: &info.path,
            api_group: &info.api_group,
            api_version: &info.api_version,
            resource: &info.resource,
            subresource: &info.subresource,
            namespace: &info.namespace,
            name: &info.name,
        }
    }

    /// A resource check (for reviews, escalation and impersonation checks).
    #[allow(clippy::too_many_arguments)]
    pub fn resource(
        user: &'a UserInfo,
        verb: &'a str,
        api_group: &'a str,
        resource: &'a str,
        subresource: &'a str,
        namespace: &'a str,
        name: &'a str,
    ) -> Attributes<'a> {
        Attributes {
            user,
            verb,
            resource_request: true,
            path: "",
            api_group,
            api_version: "",
            resource,
            subresource,
            namespace,
            name,
        }
    }

    /// A non-resource check.
    pub fn non_resource(user: &'a UserInfo, verb: &'a str, path: &'a str) -> Attributes<'a> {
        Attributes {
            user,
            verb,
            resource_request: false,
            path,
            api_group: "",
            api_version: "",
            resource: "",
            subresource: "",
            namespace: "",
            name: "",
        }
    }

    /// kube's `forbiddenMessage`: `User "alice" cannot list resource "works" in API group
    /// "work.karmada.io" in the namespace "ns"`, or `... cannot get path "/foo"`.
    pub fn forbidden_message(&self) -> String {
        if !self.resource_request {
            return format!(
                "User {:?} cannot {} path {:?}",
                self.user.name, self.verb, self.path
            );
        }
        let resource = if self.subresource.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        };
        let scope = if self.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace {:?}", self.namespace)
        };
        format!(
            "User {:?} cannot {} resource {:?} in API group {:?} {scope}",
            self.user.name, self.verb, resource, self.api_group
        )
    }

    /// The 403 kube-apiserver returns for these attributes (responsewriters.Forbidden with
    /// apierrors.NewForbidden): `<resource>.<group> "<name>" is forbidden: <message>[: <reason>]`.
    pub fn forbidden(&self, reason: &str) -> ApiError {
        let mut detail = self.forbidden_message();
        if !reason.is_empty() {
            detail.push_str(": ");
            detail.push_str(reason);
        }
        forbidden_error(
            self.api_group,
            if self.resource_request {
                self.resource
            } else {
                ""
            },
            self.name,
            &detail,
        )
    }
}

/// apierrors.NewForbidden: `forbidden: D` without a resource, `R is forbidden: D` without a
/// name, `R "N" is forbidden: D` otherwise.
pub fn forbidden_error(group: &str, resource: &str, name: &str, detail: &str) -> ApiError {
    let message = if resource.is_empty() && group.is_empty() {
        format!("forbidden: {detail}")
    } else {
        let qualified = crate::error::qualified_resource(group, resource);
        if name.is_empty() {
            format!("{qualified} is forbidden: {detail}")
        } else {
            format!("{qualified} {name:?} is forbidden: {detail}")
        }
    };
    ApiError::forbidden_message(group, resource, name, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages() {
        let alice = UserInfo::new("alice", vec![]);
        let a = Attributes::resource(
            &alice,
            "list",
            "work.karmada.io",
            "works",
            "",
            "karmada-es-member1",
            "",
        );
        assert_eq!(
            a.forbidden("").message,
            r#"works.work.karmada.io is forbidden: User "alice" cannot list resource "works" in API group "work.karmada.io" in the namespace "karmada-es-member1""#
        );
        let a = Attributes::resource(&alice, "get", "", "pods", "log", "default", "p1");
        assert_eq!(
            a.forbidden("").message,
            r#"pods "p1" is forbidden: User "alice" cannot get resource "pods/log" in API group "" in the namespace "default""#
        );
        let a = Attributes::resource(&alice, "impersonate", "", "users", "", "", "bob");
        let e = a.forbidden("");
        assert_eq!(
            e.message,
            r#"users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
        );
        assert_eq!(e.code, 403);
        let a = Attributes::non_resource(&alice, "get", "/metrics");
        assert_eq!(
            a.forbidden("RBAC: clusterrole.rbac.authorization.k8s.io \"x\" not found")
                .message,
            r#"forbidden: User "alice" cannot get path "/metrics": RBAC: clusterrole.rbac.authorization.k8s.io "x" not found"#
        );
    }
}

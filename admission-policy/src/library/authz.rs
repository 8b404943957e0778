//! kube's authorizer library (pkg/cel/library/authz.go): `authorizer.path(p)`,
//! `authorizer.group(g).resource(r).subresource(s).namespace(n).name(n)`,
//! `authorizer.serviceAccount(ns, name)`, `.check(verb)` and the decision's `allowed()`,
//! `reason()`, `errored()`, `error()`; `authorizer.requestResource` is the request's own
//! resource. Checks go to the caller's [`Authorizer`], once per distinct question in a request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cel::common::types::{CelBool, STRING_TYPE, Type};
use cel::common::value::{CowVal, StaticVal, Val};
use cel::{Env, ExecutionError};

use super::{arg, str_arg, string_val};
use crate::request::UserInfo;

pub static AUTHORIZER_TYPE: Type =
    Type::new_unspecified_type("kubernetes.authorization.Authorizer");
pub static PATH_CHECK_TYPE: Type = Type::new_unspecified_type("kubernetes.authorization.PathCheck");
pub static GROUP_CHECK_TYPE: Type =
    Type::new_unspecified_type("kubernetes.authorization.GroupCheck");
pub static RESOURCE_CHECK_TYPE: Type =
    Type::new_unspecified_type("kubernetes.authorization.ResourceCheck");
pub static DECISION_TYPE: Type = Type::new_unspecified_type("kubernetes.authorization.Decision");

/// What is asked of the authorizer: kube's `authorizer.Attributes`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct AuthorizationAttributes {
    pub user: UserInfo,
    pub verb: String,
    /// A resource request (group/resource/...) rather than a non-resource path.
    pub resource_request: bool,
    pub path: String,
    pub api_group: String,
    pub api_version: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

/// The authorizer's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Deny,
    NoOpinion,
}

/// A decision with its reason and, when the authorizer failed, its error.
#[derive(Clone, Debug, PartialEq)]
pub struct AuthorizationDecision {
    pub verdict: Verdict,
    pub reason: String,
    pub error: Option<String>,
}

/// The server's authorizer (RBAC), asked by `check()`.
pub trait Authorizer: Send + Sync {
    fn authorize(&self, attributes: &AuthorizationAttributes) -> AuthorizationDecision;
}

/// An authorizer that remembers its answers for one request, as kube's caching authorizer.
pub struct CachingAuthorizer {
    inner: Arc<dyn Authorizer>,
    answers: Mutex<HashMap<AuthorizationAttributes, AuthorizationDecision>>,
}

impl CachingAuthorizer {
    pub fn new(inner: Arc<dyn Authorizer>) -> CachingAuthorizer {
        CachingAuthorizer {
            inner,
            answers: Mutex::new(HashMap::new()),
        }
    }
}

impl Authorizer for CachingAuthorizer {
    fn authorize(&self, attributes: &AuthorizationAttributes) -> AuthorizationDecision {
        let cached = self
            .answers
            .lock()
            .ok()
            .and_then(|a| a.get(attributes).cloned());
        if let Some(d) = cached {
            return d;
        }
        let d = self.inner.authorize(attributes);
        if let Ok(mut a) = self.answers.lock() {
            a.insert(attributes.clone(), d.clone());
        }
        d
    }
}

macro_rules! authz_val {
    ($ty:ty, $t:expr) => {
        impl Val for $ty {
            fn get_type(&self) -> &Type {
                $t
            }
            fn cel_type() -> &'static Type {
                $t
            }
            fn clone_as_boxed<'w>(&self) -> Box<dyn Val + 'w> {
                Box::new(self.clone())
            }
            fn as_any(&self) -> Option<&dyn std::any::Any> {
                Some(self)
            }
        }
        impl StaticVal for $ty {}
    };
}

/// The `authorizer` variable: the requesting user's view of the authorizer.
#[derive(Clone)]
pub struct AuthorizerVal {
    pub authz: Arc<dyn Authorizer>,
    pub user: UserInfo,
}
authz_val!(AuthorizerVal, &AUTHORIZER_TYPE);

impl std::fmt::Debug for AuthorizerVal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "authorizer({})", self.user.username)
    }
}

#[derive(Clone, Debug)]
pub struct PathCheck {
    who: AuthorizerVal,
    path: String,
}
authz_val!(PathCheck, &PATH_CHECK_TYPE);

#[derive(Clone, Debug)]
pub struct GroupCheck {
    who: AuthorizerVal,
    group: String,
}
authz_val!(GroupCheck, &GROUP_CHECK_TYPE);

/// A resource check being built.
#[derive(Clone, Debug)]
pub struct ResourceCheck {
    who: AuthorizerVal,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    namespace: String,
    name: String,
}
authz_val!(ResourceCheck, &RESOURCE_CHECK_TYPE);

impl ResourceCheck {
    /// `authorizer.requestResource`: the request's group, version, resource, subresource,
    /// namespace and name.
    #[allow(clippy::too_many_arguments)]
    pub fn for_request(
        who: AuthorizerVal,
        group: &str,
        version: &str,
        resource: &str,
        subresource: &str,
        namespace: &str,
        name: &str,
    ) -> ResourceCheck {
        ResourceCheck {
            who,
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
            subresource: subresource.into(),
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Decision(AuthorizationDecision);
authz_val!(Decision, &DECISION_TYPE);

pub fn register(env: &mut Env) -> Result<(), cel::DeclarationError> {
    let a = || AUTHORIZER_TYPE.to_owned();
    let r = || RESOURCE_CHECK_TYPE.to_owned();
    let d = || DECISION_TYPE.to_owned();
    env.add_member_overload("path", "authorizer_path", a(), vec![STRING_TYPE], path)?;
    env.add_member_overload("group", "authorizer_group", a(), vec![STRING_TYPE], group)?;
    env.add_member_overload(
        "serviceAccount",
        "authorizer_serviceaccount",
        a(),
        vec![STRING_TYPE, STRING_TYPE],
        service_account,
    )?;
    env.add_member_overload(
        "resource",
        "groupcheck_resource",
        GROUP_CHECK_TYPE.to_owned(),
        vec![STRING_TYPE],
        resource,
    )?;
    env.add_member_overload(
        "subresource",
        "resourcecheck_subresource",
        r(),
        vec![STRING_TYPE],
        subresource,
    )?;
    env.add_member_overload(
        "namespace",
        "resourcecheck_namespace",
        r(),
        vec![STRING_TYPE],
        namespace,
    )?;
    env.add_member_overload("name", "resourcecheck_name", r(), vec![STRING_TYPE], name)?;
    env.add_member_overload(
        "check",
        "pathcheck_check",
        PATH_CHECK_TYPE.to_owned(),
        vec![STRING_TYPE],
        path_check,
    )?;
    env.add_member_overload(
        "check",
        "resourcecheck_check",
        r(),
        vec![STRING_TYPE],
        resource_check,
    )?;
    env.add_member_overload("allowed", "decision_allowed", d(), vec![], allowed)?;
    env.add_member_overload("reason", "decision_reason", d(), vec![], reason)?;
    env.add_member_overload("errored", "decision_errored", d(), vec![], errored)?;
    env.add_member_overload("error", "decision_error", d(), vec![], error)?;
    Ok(())
}

pub fn to_static(v: &dyn Val) -> Option<Box<dyn Val + 'static>> {
    let any = v.as_any()?;
    if let Some(x) = any.downcast_ref::<AuthorizerVal>() {
        return Some(Box::new(x.clone()));
    }
    if let Some(x) = any.downcast_ref::<PathCheck>() {
        return Some(Box::new(x.clone()));
    }
    if let Some(x) = any.downcast_ref::<GroupCheck>() {
        return Some(Box::new(x.clone()));
    }
    if let Some(x) = any.downcast_ref::<ResourceCheck>() {
        return Some(Box::new(x.clone()));
    }
    any.downcast_ref::<Decision>()
        .map(|x| Box::new(x.clone()) as Box<dyn Val>)
}

fn path<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let who = arg::<AuthorizerVal>(&args, 0, "path")?.clone();
    let path = str_arg(&args, 1, "path")?.to_owned();
    Ok(CowVal::owned(PathCheck { who, path }))
}

fn group<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let who = arg::<AuthorizerVal>(&args, 0, "group")?.clone();
    let group = str_arg(&args, 1, "group")?.to_owned();
    Ok(CowVal::owned(GroupCheck { who, group }))
}

fn service_account<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let who = arg::<AuthorizerVal>(&args, 0, "serviceAccount")?;
    let ns = str_arg(&args, 1, "serviceAccount")?;
    let name = str_arg(&args, 2, "serviceAccount")?;
    let user = UserInfo {
        username: format!("system:serviceaccount:{ns}:{name}"),
        uid: String::new(),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{ns}"),
        ],
        extra: Default::default(),
    };
    Ok(CowVal::owned(AuthorizerVal {
        authz: who.authz.clone(),
        user,
    }))
}

fn resource<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let g = arg::<GroupCheck>(&args, 0, "resource")?;
    Ok(CowVal::owned(ResourceCheck {
        who: g.who.clone(),
        group: g.group.clone(),
        version: "*".into(),
        resource: str_arg(&args, 1, "resource")?.to_owned(),
        subresource: String::new(),
        namespace: String::new(),
        name: String::new(),
    }))
}

fn with<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    f: &str,
    set: fn(&mut ResourceCheck, String),
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let mut r = arg::<ResourceCheck>(&args, 0, f)?.clone();
    set(&mut r, str_arg(&args, 1, f)?.to_owned());
    Ok(CowVal::owned(r))
}

fn subresource<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with(args, "subresource", |r, v| r.subresource = v)
}

fn namespace<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with(args, "namespace", |r, v| r.namespace = v)
}

fn name<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with(args, "name", |r, v| r.name = v)
}

fn path_check<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let p = arg::<PathCheck>(&args, 0, "check")?;
    let attributes = AuthorizationAttributes {
        user: p.who.user.clone(),
        verb: str_arg(&args, 1, "check")?.to_owned(),
        resource_request: false,
        path: p.path.clone(),
        ..Default::default()
    };
    Ok(CowVal::owned(Decision(p.who.authz.authorize(&attributes))))
}

fn resource_check<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let r = arg::<ResourceCheck>(&args, 0, "check")?;
    let attributes = AuthorizationAttributes {
        user: r.who.user.clone(),
        verb: str_arg(&args, 1, "check")?.to_owned(),
        resource_request: true,
        path: String::new(),
        api_group: r.group.clone(),
        api_version: r.version.clone(),
        resource: r.resource.clone(),
        subresource: r.subresource.clone(),
        namespace: r.namespace.clone(),
        name: r.name.clone(),
    };
    Ok(CowVal::owned(Decision(r.who.authz.authorize(&attributes))))
}

fn decision<'a>(
    args: &'a [CowVal<'_, '_>],
    f: &str,
) -> Result<&'a AuthorizationDecision, ExecutionError> {
    Ok(&arg::<Decision>(args, 0, f)?.0)
}

fn allowed<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let d = decision(&args, "allowed")?;
    Ok(CowVal::owned(CelBool::from(d.verdict == Verdict::Allow)))
}

fn reason<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(string_val(decision(&args, "reason")?.reason.clone()))
}

fn errored<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(CowVal::owned(CelBool::from(
        decision(&args, "errored")?.error.is_some(),
    )))
}

fn error<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(string_val(
        decision(&args, "error")?.error.clone().unwrap_or_default(),
    ))
}

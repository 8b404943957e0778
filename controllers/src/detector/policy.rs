//! Matching resource templates to propagation policies (pkg/util/selector.go and
//! pkg/detector/compare.go): a selector's implicit priority, and the choice of the highest
//! priority policy among many.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use karmada_api::policy::v1alpha1::{
    ClusterPropagationPolicy, PropagationPolicy, ResourceSelector,
};

use crate::runtime::selector;

/// How specifically a selector matches a template (util.ImplicitPriority).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ImplicitPriority {
    /// No match.
    Mismatch = 0,
    /// Matched by apiVersion and kind alone.
    MatchAll = 1,
    /// Matched by label selector.
    LabelSelector = 2,
    /// Matched by name.
    Name = 3,
}

/// What a selector sees of a template.
#[derive(Clone, Copy, Debug)]
pub struct TemplateView<'a> {
    /// apiVersion.
    pub api_version: &'a str,
    /// Kind.
    pub kind: &'a str,
    /// Namespace.
    pub namespace: &'a str,
    /// Name.
    pub name: &'a str,
    /// Labels.
    pub labels: Option<&'a BTreeMap<String, String>>,
}

/// The priority with which one selector matches (util.ResourceSelectorPriority).
pub fn selector_priority(t: &TemplateView<'_>, rs: &ResourceSelector) -> ImplicitPriority {
    if t.api_version != rs.api_version
        || t.kind != rs.kind
        || (!rs.namespace.is_empty() && t.namespace != rs.namespace)
    {
        return ImplicitPriority::Mismatch;
    }
    if !rs.name.is_empty() {
        return if rs.name == t.name {
            ImplicitPriority::Name
        } else {
            ImplicitPriority::Mismatch
        };
    }
    match &rs.label_selector {
        None => ImplicitPriority::MatchAll,
        Some(s) if selector::matches(s, t.labels) => ImplicitPriority::LabelSelector,
        Some(_) => ImplicitPriority::Mismatch,
    }
}

/// The best priority among selectors (util.ResourceMatchSelectorsPriority).
pub fn selectors_priority(
    t: &TemplateView<'_>,
    selectors: &[ResourceSelector],
) -> ImplicitPriority {
    selectors
        .iter()
        .map(|rs| selector_priority(t, rs))
        .max()
        .unwrap_or(ImplicitPriority::Mismatch)
}

/// Whether any selector matches (util.ResourceMatchSelectors).
pub fn matches_any(t: &TemplateView<'_>, selectors: &[ResourceSelector]) -> bool {
    selectors_priority(t, selectors) > ImplicitPriority::Mismatch
}

/// A candidate policy for [`highest_priority`].
pub trait Candidate {
    /// The policy's name.
    fn name(&self) -> &str;
    /// spec.priority.
    fn explicit_priority(&self) -> i32;
    /// spec.resourceSelectors.
    fn selectors(&self) -> &[ResourceSelector];
    /// True when being deleted.
    fn deleting(&self) -> bool;
}

impl Candidate for PropagationPolicy {
    fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or("")
    }
    fn explicit_priority(&self) -> i32 {
        self.spec.explicit_priority()
    }
    fn selectors(&self) -> &[ResourceSelector] {
        &self.spec.resource_selectors
    }
    fn deleting(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }
}

impl Candidate for ClusterPropagationPolicy {
    fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or("")
    }
    fn explicit_priority(&self) -> i32 {
        self.spec.explicit_priority()
    }
    fn selectors(&self) -> &[ResourceSelector] {
        &self.spec.resource_selectors
    }
    fn deleting(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }
}

/// The policy that claims a template: the highest explicit priority, then the most specific
/// selector match, then the alphabetically first name (getHighestPriorityPropagationPolicy).
pub fn highest_priority<'a, P>(
    t: &TemplateView<'_>,
    policies: impl IntoIterator<Item = &'a Arc<P>>,
) -> Option<Arc<P>>
where
    P: Candidate + 'a,
{
    let mut best: Option<(&Arc<P>, i32, ImplicitPriority)> = None;
    for p in policies {
        if p.deleting() {
            continue;
        }
        let implicit = selectors_priority(t, p.selectors());
        if implicit == ImplicitPriority::Mismatch {
            continue;
        }
        let explicit = p.explicit_priority();
        best = match best {
            None => Some((p, explicit, implicit)),
            Some((b, be, bi)) => {
                if explicit > be
                    || (explicit == be && implicit > bi)
                    || (explicit == be && implicit == bi && p.name() < b.name())
                {
                    Some((p, explicit, implicit))
                } else {
                    Some((b, be, bi))
                }
            }
        };
    }
    best.map(|(p, _, _)| p.clone())
}

/// Policies filed by the apiVersion and kind their selectors name, so that matching a template
/// looks only at policies that can select its kind.
#[derive(Default)]
pub struct PolicyIndex {
    /// PropagationPolicies by (namespace, apiVersion, kind).
    pub pps: HashMap<(String, String, String), Vec<Arc<PropagationPolicy>>>,
    /// ClusterPropagationPolicies by (apiVersion, kind).
    pub cpps: HashMap<(String, String), Vec<Arc<ClusterPropagationPolicy>>>,
}

impl PolicyIndex {
    /// Builds the index.
    pub fn build(
        pps: impl IntoIterator<Item = Arc<PropagationPolicy>>,
        cpps: impl IntoIterator<Item = Arc<ClusterPropagationPolicy>>,
    ) -> PolicyIndex {
        let mut idx = PolicyIndex::default();
        for p in pps {
            let ns = p.metadata.namespace.clone().unwrap_or_default();
            let mut seen = Vec::new();
            for rs in &p.spec.resource_selectors {
                let k = (ns.clone(), rs.api_version.clone(), rs.kind.clone());
                if !seen.contains(&k) {
                    seen.push(k.clone());
                    idx.pps.entry(k).or_default().push(p.clone());
                }
            }
        }
        for p in cpps {
            let mut seen = Vec::new();
            for rs in &p.spec.resource_selectors {
                let k = (rs.api_version.clone(), rs.kind.clone());
                if !seen.contains(&k) {
                    seen.push(k.clone());
                    idx.cpps.entry(k).or_default().push(p.clone());
                }
            }
        }
        idx
    }

    /// The PropagationPolicy that claims a template (LookForMatchedPolicy).
    pub fn match_pp(&self, t: &TemplateView<'_>) -> Option<Arc<PropagationPolicy>> {
        if t.namespace.is_empty() {
            return None;
        }
        let k = (
            t.namespace.to_owned(),
            t.api_version.to_owned(),
            t.kind.to_owned(),
        );
        highest_priority(t, self.pps.get(&k).into_iter().flatten())
    }

    /// The ClusterPropagationPolicy that claims a template (LookForMatchedClusterPolicy).
    pub fn match_cpp(&self, t: &TemplateView<'_>) -> Option<Arc<ClusterPropagationPolicy>> {
        let k = (t.api_version.to_owned(), t.kind.to_owned());
        highest_priority(t, self.cpps.get(&k).into_iter().flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

    fn rs(kind: &str, name: &str, labels: Option<(&str, &str)>) -> ResourceSelector {
        ResourceSelector {
            api_version: "apps/v1".into(),
            kind: kind.into(),
            name: name.into(),
            label_selector: labels.map(|(k, v)| LabelSelector {
                match_labels: Some([(k.to_owned(), v.to_owned())].into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn pp(name: &str, priority: i32, selectors: Vec<ResourceSelector>) -> Arc<PropagationPolicy> {
        let mut p = PropagationPolicy {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        p.spec.priority = Some(priority);
        p.spec.resource_selectors = selectors;
        Arc::new(p)
    }

    #[test]
    fn selector_priority_table() {
        let labels: BTreeMap<String, String> = [("app".to_string(), "web".to_string())].into();
        let t = TemplateView {
            api_version: "apps/v1",
            kind: "Deployment",
            namespace: "default",
            name: "nginx",
            labels: Some(&labels),
        };
        let cases = [
            (rs("Deployment", "", None), ImplicitPriority::MatchAll),
            (rs("Deployment", "nginx", None), ImplicitPriority::Name),
            (rs("Deployment", "other", None), ImplicitPriority::Mismatch),
            (
                rs("Deployment", "", Some(("app", "web"))),
                ImplicitPriority::LabelSelector,
            ),
            (
                rs("Deployment", "", Some(("app", "db"))),
                ImplicitPriority::Mismatch,
            ),
            // a name wins over (and ignores) a label selector
            (
                rs("Deployment", "nginx", Some(("app", "db"))),
                ImplicitPriority::Name,
            ),
            (rs("StatefulSet", "", None), ImplicitPriority::Mismatch),
            (
                ResourceSelector {
                    namespace: "other".into(),
                    ..rs("Deployment", "", None)
                },
                ImplicitPriority::Mismatch,
            ),
            (
                ResourceSelector {
                    api_version: "apps/v1beta1".into(),
                    ..rs("Deployment", "", None)
                },
                ImplicitPriority::Mismatch,
            ),
        ];
        for (i, (sel, want)) in cases.iter().enumerate() {
            assert_eq!(selector_priority(&t, sel), *want, "case {i}");
        }
    }

    #[test]
    fn highest_priority_table() {
        let labels: BTreeMap<String, String> = [("app".to_string(), "web".to_string())].into();
        let t = TemplateView {
            api_version: "apps/v1",
            kind: "Deployment",
            namespace: "default",
            name: "nginx",
            labels: Some(&labels),
        };
        let cases: Vec<(Vec<Arc<PropagationPolicy>>, Option<&str>)> = vec![
            (vec![], None),
            (vec![pp("a", 0, vec![rs("StatefulSet", "", None)])], None),
            // name match beats label match beats kind match at equal explicit priority
            (
                vec![
                    pp("kind", 0, vec![rs("Deployment", "", None)]),
                    pp("label", 0, vec![rs("Deployment", "", Some(("app", "web")))]),
                    pp("name", 0, vec![rs("Deployment", "nginx", None)]),
                ],
                Some("name"),
            ),
            (
                vec![
                    pp("kind", 0, vec![rs("Deployment", "", None)]),
                    pp("label", 0, vec![rs("Deployment", "", Some(("app", "web")))]),
                ],
                Some("label"),
            ),
            // explicit priority first
            (
                vec![
                    pp("name", 0, vec![rs("Deployment", "nginx", None)]),
                    pp("kind", 5, vec![rs("Deployment", "", None)]),
                ],
                Some("kind"),
            ),
            // then alphabetical
            (
                vec![
                    pp("b", 1, vec![rs("Deployment", "", None)]),
                    pp("a", 1, vec![rs("Deployment", "", None)]),
                    pp("c", 1, vec![rs("Deployment", "", None)]),
                ],
                Some("a"),
            ),
            // negative priorities still match
            (
                vec![pp("neg", -3, vec![rs("Deployment", "", None)])],
                Some("neg"),
            ),
        ];
        for (i, (policies, want)) in cases.iter().enumerate() {
            let got = highest_priority(&t, policies.iter());
            assert_eq!(got.as_ref().map(|p| p.name()), *want, "case {i}");
        }
    }
}

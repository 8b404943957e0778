#!/usr/bin/env python3
"""Generates fields.rs: the JSON name and Go encoding mode of every k8s-pb message field.

prost renames Kubernetes' proto fields to snake_case and drops what Go's encoding/json needs
(pointer or value, `omitempty`, `,inline`). This script joins the two sources of truth by the
protobuf field number:

  * the k8s-pb crate sources (`#[prost(..., tag = "N")] pub field: Type`), and
  * the Go API types (`Field Type `json:"name,omitempty" protobuf:"bytes,N,opt,name=x"``),
    read with `git show TAG:path` from local clones of kubernetes/api, kubernetes/apimachinery,
    kubernetes/apiextensions-apiserver and kubernetes/kube-aggregator.

Go tags are taken from the oldest tag that has the field (the server emulates 1.32), so that
fields present in 1.32 keep 1.32's JSON behaviour and newer fields still get theirs.

Only messages reachable from the root kinds in ROOTS are emitted. Messages with a hand-written
JSON form (SPECIAL) are referenced but not emitted. Any field that cannot be joined aborts the run.

Usage:
  gen_fields.py --k8s-pb ~/.cargo/registry/src/*/k8s-pb-0.9.0 \
      --repos /path/to/clones --tags v0.32.0,v0.35.0 > fields.rs
where /path/to/clones/{api,apimachinery,apiextensions-apiserver,kube-aggregator} are git dirs.
"""

import argparse
import os
import re
import subprocess
import sys

# Rust module path (under k8s_pb::) -> (repo, Go package dir).
PACKAGES = {
    "apimachinery::pkg::apis::meta::v1": ("apimachinery", "pkg/apis/meta/v1"),
    "apimachinery::pkg::apis::meta::v1beta1": ("apimachinery", "pkg/apis/meta/v1beta1"),
    "apimachinery::pkg::runtime": ("apimachinery", "pkg/runtime"),
    "apimachinery::pkg::util::intstr": ("apimachinery", "pkg/util/intstr"),
    "apimachinery::pkg::api::resource": ("apimachinery", "pkg/api/resource"),
    "apiextensions_apiserver::pkg::apis::apiextensions::v1": (
        "apiextensions-apiserver",
        "pkg/apis/apiextensions/v1",
    ),
    "kube_aggregator::pkg::apis::apiregistration::v1": (
        "kube-aggregator",
        "pkg/apis/apiregistration/v1",
    ),
}
API_GROUPS = [
    "core/v1",
    "apps/v1",
    "batch/v1",
    "coordination/v1",
    "rbac/v1",
    "authentication/v1",
    "authorization/v1",
    "autoscaling/v1",
    "autoscaling/v2",
    "events/v1",
    "networking/v1",
    "policy/v1",
    "admissionregistration/v1",
    "certificates/v1",
    "scheduling/v1",
    "discovery/v1",
    "node/v1",
    "flowcontrol/v1",
    "storage/v1",
    "apidiscovery/v2",
    "apidiscovery/v2beta1",
]
for gv in API_GROUPS:
    PACKAGES["api::" + gv.replace("/", "::")] = ("api", gv)

# Messages whose JSON form is written by hand in the Rust module.
SPECIAL = {
    "apimachinery::pkg::apis::meta::v1::Time",
    "apimachinery::pkg::apis::meta::v1::MicroTime",
    "apimachinery::pkg::apis::meta::v1::Duration",
    "apimachinery::pkg::apis::meta::v1::FieldsV1",
    "apimachinery::pkg::runtime::RawExtension",
    "apimachinery::pkg::util::intstr::IntOrString",
    "apimachinery::pkg::api::resource::Quantity",
    "apiextensions_apiserver::pkg::apis::apiextensions::v1::Json",
    "apiextensions_apiserver::pkg::apis::apiextensions::v1::JsonSchemaPropsOrArray",
    "apiextensions_apiserver::pkg::apis::apiextensions::v1::JsonSchemaPropsOrBool",
    "apiextensions_apiserver::pkg::apis::apiextensions::v1::JsonSchemaPropsOrStringArray",
    "api::authentication::v1::ExtraValue",
    "api::authorization::v1::ExtraValue",
    "api::certificates::v1::ExtraValue",
    "apimachinery::pkg::apis::meta::v1::Verbs",
}

# Top-level kinds; keep in sync with the dispatch tables in mod.rs (KINDS and META_KINDS).
ROOTS = [
    "api::core::v1::Namespace",
    "api::core::v1::ConfigMap",
    "api::core::v1::Secret",
    "api::core::v1::Service",
    "api::core::v1::ServiceAccount",
    "api::core::v1::Event",
    "api::core::v1::PersistentVolumeClaim",
    "api::core::v1::PersistentVolume",
    "api::core::v1::Pod",
    "api::core::v1::PodTemplate",
    "api::core::v1::ReplicationController",
    "api::core::v1::Node",
    "api::core::v1::Endpoints",
    "api::core::v1::ResourceQuota",
    "api::core::v1::LimitRange",
    "api::core::v1::Binding",
    "api::core::v1::ComponentStatus",
    "api::apps::v1::Deployment",
    "api::apps::v1::StatefulSet",
    "api::apps::v1::DaemonSet",
    "api::apps::v1::ReplicaSet",
    "api::apps::v1::ControllerRevision",
    "api::batch::v1::Job",
    "api::batch::v1::CronJob",
    "api::coordination::v1::Lease",
    "api::rbac::v1::Role",
    "api::rbac::v1::ClusterRole",
    "api::rbac::v1::RoleBinding",
    "api::rbac::v1::ClusterRoleBinding",
    "api::authentication::v1::TokenRequest",
    "api::authentication::v1::TokenReview",
    "api::authentication::v1::SelfSubjectReview",
    "api::authorization::v1::SelfSubjectAccessReview",
    "api::authorization::v1::SelfSubjectRulesReview",
    "api::authorization::v1::SubjectAccessReview",
    "api::authorization::v1::LocalSubjectAccessReview",
    "api::autoscaling::v1::Scale",
    "api::autoscaling::v1::HorizontalPodAutoscaler",
    "api::autoscaling::v2::HorizontalPodAutoscaler",
    "apimachinery::pkg::apis::meta::v1::DeleteOptions",
    "api::events::v1::Event",
    "api::networking::v1::Ingress",
    "api::networking::v1::IngressClass",
    "api::networking::v1::NetworkPolicy",
    "api::policy::v1::PodDisruptionBudget",
    "api::policy::v1::Eviction",
    "api::admissionregistration::v1::MutatingWebhookConfiguration",
    "api::admissionregistration::v1::ValidatingWebhookConfiguration",
    "api::admissionregistration::v1::ValidatingAdmissionPolicy",
    "api::admissionregistration::v1::ValidatingAdmissionPolicyBinding",
    "api::certificates::v1::CertificateSigningRequest",
    "api::scheduling::v1::PriorityClass",
    "api::discovery::v1::EndpointSlice",
    "apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition",
    "kube_aggregator::pkg::apis::apiregistration::v1::APIService",
    "api::storage::v1::StorageClass",
    "api::storage::v1::CSIDriver",
    "api::storage::v1::CSINode",
    "api::storage::v1::CSIStorageCapacity",
    "api::storage::v1::VolumeAttachment",
    "api::node::v1::RuntimeClass",
    "api::flowcontrol::v1::FlowSchema",
    "api::flowcontrol::v1::PriorityLevelConfiguration",
    # Kinds of responses rather than stored objects: errors, metadata-only views, discovery.
    "apimachinery::pkg::apis::meta::v1::Status",
    "apimachinery::pkg::apis::meta::v1::PartialObjectMetadata",
    "apimachinery::pkg::apis::meta::v1::PartialObjectMetadataList",
    "apimachinery::pkg::apis::meta::v1beta1::PartialObjectMetadataList",
    "apimachinery::pkg::apis::meta::v1::APIVersions",
    "apimachinery::pkg::apis::meta::v1::APIGroupList",
    "apimachinery::pkg::apis::meta::v1::APIGroup",
    "apimachinery::pkg::apis::meta::v1::APIResourceList",
    "api::apidiscovery::v2::APIGroupDiscoveryList",
    "api::apidiscovery::v2beta1::APIGroupDiscoveryList",
]

PROST_ATTR = re.compile(r'#\[prost\((.*)\)\]')
STRUCT_START = re.compile(r'^pub struct (\w+) \{')
FIELD_START = re.compile(r'^\s*pub (r#)?(\w+):\s*(.*)$')


def parse_prost_module(path):
    """Returns {message: [(rust_field, tag, attr, rust_type)]} for one k8s-pb mod.rs."""
    messages = {}
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    current = None
    attr = None
    while i < len(lines):
        line = lines[i]
        m = STRUCT_START.match(line)
        if m:
            current = m.group(1)
            messages[current] = []
        elif line.startswith("pub struct ") and line.rstrip().endswith("{}"):
            messages[line.split()[2]] = []
        elif current is not None and line.startswith("}"):
            current = None
        elif current is not None:
            a = PROST_ATTR.search(line)
            if a:
                attr = a.group(1)
            else:
                f = FIELD_START.match(line)
                if f and attr is not None:
                    ty = f.group(3)
                    while not ty.rstrip().endswith(","):
                        i += 1
                        ty += lines[i].strip()
                    tag = int(re.search(r'tag = "(\d+)"', attr).group(1))
                    name = (f.group(1) or "") + f.group(2)
                    messages[current].append((name, tag, attr, ty.rstrip().rstrip(",")))
                    attr = None
        i += 1
    return messages


def resolve_rust_path(module, ty):
    """Turns a prost field type into the k8s_pb-relative paths of the messages it names."""
    out = []
    for ref in re.findall(r'((?:super::)*(?:[a-z_0-9]+::)*[A-Z]\w*)', ty):
        parts = ref.split("::")
        # Standard library and prost paths (`::core::option::Option`, `::prost::alloc::...`).
        if len(parts) > 1 and parts[0] in ("core", "prost", "alloc"):
            continue
        mod = module.split("::")
        while parts[0] == "super":
            parts.pop(0)
            mod.pop()
        out.append("::".join(mod + parts))
    return out


def git_show(repo_dir, tag, path):
    return subprocess.run(
        ["git", "--git-dir", repo_dir, "show", f"{tag}:{path}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def go_files(repo_dir, tag, pkg):
    out = subprocess.run(
        ["git", "--git-dir", repo_dir, "ls-tree", "--name-only", f"{tag}:{pkg}"],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        return []
    return [
        f"{pkg}/{name}"
        for name in out.stdout.split()
        if name.endswith(".go") and not name.endswith("_test.go") and not name.endswith(".pb.go")
    ]


GO_STRUCT = re.compile(r'^type (\w+) struct\s*\{(\})?')
GO_FIELD = re.compile(r'^\s*(?:(\w+)\s+)?(\S+)\s+`([^`]*)`\s*(//.*)?$')


def parse_go_package(repo_dir, tag, pkg):
    """Returns {lowercased struct name: (GoName, {proto tag: (json name, opts, go type)})}."""
    structs = {}
    for path in go_files(repo_dir, tag, pkg):
        text = git_show(repo_dir, tag, path)
        current = None
        for line in text.split("\n"):
            m = GO_STRUCT.match(line)
            if m:
                current = m.group(1)
                if current.lower() in structs:
                    raise SystemExit(f"{pkg}: two Go types named {current} (case-insensitively)")
                structs[current.lower()] = (current, {})
                if m.group(2):
                    current = None
                continue
            if current is None:
                continue
            if line.startswith("}"):
                current = None
                continue
            stripped = line.strip()
            if stripped.startswith("//") or not stripped:
                continue
            f = GO_FIELD.match(line)
            if not f:
                continue
            go_type = f.group(2)
            tags = dict(re.findall(r'(\w+):"([^"]*)"', f.group(3)))
            if "protobuf" not in tags or tags["protobuf"] == "-":
                continue
            pb = tags["protobuf"].split(",")
            number = int(pb[1])
            json_parts = tags.get("json", "").split(",")
            structs[current.lower()][1][number] = (json_parts[0], json_parts[1:], go_type)
    return structs


def mode_for(json_opts, go_type):
    opts = set(json_opts)
    unknown = opts - {"omitempty", "inline"}
    if unknown:
        raise SystemExit(f"unsupported json options {unknown}")
    if "inline" in opts:
        return "Inline"
    pointer = go_type.startswith("*")
    if pointer:
        return "Ptr" if "omitempty" in opts else "PtrNull"
    return "Omit" if "omitempty" in opts else "Always"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k8s-pb", required=True)
    ap.add_argument("--repos", required=True)
    ap.add_argument("--tags", required=True)
    args = ap.parse_args()
    tags = args.tags.split(",")

    prost = {}
    for module in PACKAGES:
        path = os.path.join(args.k8s_pb, "src", *module.split("::"), "mod.rs")
        for name, fields in parse_prost_module(path).items():
            prost[f"{module}::{name}"] = (module, name, fields)

    go_cache = {}

    def go_struct(module, name):
        repo, pkg = PACKAGES[module]
        found = []
        for tag in tags:
            key = (repo, tag, pkg)
            if key not in go_cache:
                go_cache[key] = parse_go_package(os.path.join(args.repos, repo), tag, pkg)
            s = go_cache[key].get(name.lower())
            if s is not None:
                found.append(s)
        if not found:
            raise SystemExit(f"no Go struct for {module}::{name}")
        return found

    # Reachability from the roots.
    todo = list(ROOTS)
    seen = set()
    order = []
    while todo:
        full = todo.pop(0)
        if full in seen:
            continue
        seen.add(full)
        if full not in prost:
            raise SystemExit(f"unknown message {full}")
        if full in SPECIAL:
            continue
        order.append(full)
        module, _, fields = prost[full]
        for _, _, _, ty in fields:
            for ref in resolve_rust_path(module, ty):
                if ref not in seen:
                    todo.append(ref)

    out = []
    out.append("//! JSON name and Go encoding of every field of the supported messages.")
    out.append("//!")
    out.append("//! @generated by gen_fields.py from k8s-pb 0.9.0 and the Go API types at")
    out.append(f"//! {', '.join(tags)} (the oldest tag holding a field decides its JSON encoding).")
    out.append("//! Do not edit by hand: regenerate.")
    out.append("")
    out.append("super::json::messages! {")
    for full in sorted(order):
        module, name, fields = prost[full]
        versions = go_struct(module, name)
        out.append(f"    k8s_pb::{full} {{")
        for rust_field, tag, attr, ty in fields:
            entry = None
            for go_name, go_fields in versions:
                if tag in go_fields:
                    entry = go_fields[tag]
                    break
            if entry is None:
                raise SystemExit(f"{full}.{rust_field}: no Go field with protobuf tag {tag}")
            json_name, opts, go_type = entry
            mode = mode_for(opts, go_type)
            if mode == "Inline":
                json_name = ""
            out.append(f'        {rust_field}: "{json_name}" {mode},')
        out.append("    }")
    out.append("}")
    sys.stdout.write("\n".join(out) + "\n")
    print(f"{len(order)} messages", file=sys.stderr)


if __name__ == "__main__":
    main()

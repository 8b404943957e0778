//! kube's CEL environment, function by function, with expectations from kube's library tests
//! (k8s.io/apiserver pkg/cel/library/*_test.go) and cel-go's semantics.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::{Value, json};

use super::{EvalError, compile};
use crate::checker::types::Ty;
use crate::library::authz::{
    AuthorizationAttributes, AuthorizationDecision, Authorizer, AuthorizerVal, ResourceCheck,
    Verdict,
};
use crate::request::UserInfo;
use crate::validator::Bindings;
use crate::validator::declarations;
use crate::{cost, value};

/// Allows `get` and `list` of apps/deployments in namespace `ns`, and `get` on `/healthz`.
struct TestAuthorizer;

impl Authorizer for TestAuthorizer {
    fn authorize(&self, a: &AuthorizationAttributes) -> AuthorizationDecision {
        let allowed = if a.resource_request {
            a.api_group == "apps"
                && a.resource == "deployments"
                && a.namespace == "ns"
                && ["get", "list"].contains(&a.verb.as_str())
                && a.user.username == "alice"
        } else {
            a.path == "/healthz" && a.verb == "get"
        };
        let sa_pods = a.user.username == "system:serviceaccount:ns:sa" && a.resource == "pods";
        AuthorizationDecision {
            verdict: if allowed || sa_pods {
                Verdict::Allow
            } else {
                Verdict::NoOpinion
            },
            reason: if allowed {
                "allowed by test".into()
            } else {
                String::new()
            },
            error: None,
        }
    }
}

fn object() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns", "labels": {"app": "web"}},
        "spec": {"replicas": 3, "list": [1, 2], "names": ["b", "a"], "ratio": 0.5, "nested": {"k": "v"}}
    })
}

/// Evaluates `expr` with `object` bound (and an authorizer for alice); the result as JSON.
fn eval(expr: &str) -> Result<Value, String> {
    let vars = declarations(&Ty::Dyn, Some(&Ty::Dyn), true, &BTreeMap::new());
    let c = compile(expr, &vars)?;
    let obj = object();
    let who = AuthorizerVal {
        authz: Arc::new(TestAuthorizer),
        user: UserInfo {
            username: "alice".into(),
            ..Default::default()
        },
    };
    let mut vals: HashMap<&'static str, Box<dyn cel::common::value::Val>> = HashMap::new();
    vals.insert("object", value::json_to_val(&obj));
    vals.insert(
        "authorizer.requestResource",
        Box::new(ResourceCheck::for_request(
            who.clone(),
            "apps",
            "v1",
            "deployments",
            "",
            "ns",
            "web",
        )),
    );
    vals.insert("authorizer", Box::new(who));
    let bindings = Bindings {
        vals,
        variables: None,
    };
    let (out, _) = c.evaluate(&bindings, cost::RUNTIME_BUDGET, |v| {
        value::val_to_json(v).ok_or_else(|| format!("not JSON: {}", v.get_type().name()))
    });
    match out {
        Ok(v) => v,
        Err(EvalError::Failed(e)) => Err(e),
        Err(EvalError::OutOfBudget) => Err("out of budget".into()),
    }
}

#[track_caller]
fn table(cases: &[(&str, Result<Value, &str>)]) {
    for (expr, want) in cases {
        let got = eval(expr);
        match want {
            Ok(v) => assert_eq!(got.as_ref(), Ok(v), "{expr}"),
            Err(e) => {
                let err = got.expect_err(expr);
                assert!(err.contains(e), "{expr}: {err:?} does not contain {e:?}");
            }
        }
    }
}

#[test]
fn lists_library() {
    table(&[
        ("[1, 2, 3].isSorted()", Ok(json!(true))),
        ("[3, 1].isSorted()", Ok(json!(false))),
        ("['a', 'b', 'b'].isSorted()", Ok(json!(true))),
        ("[1, 2, 3].sum()", Ok(json!(6))),
        ("[1.5, 2.5].sum()", Ok(json!(4.0))),
        ("[1, 3, 2].min()", Ok(json!(1))),
        ("['b', 'c', 'a'].max()", Ok(json!("c"))),
        ("[1, 2, 3, 2].indexOf(2)", Ok(json!(1))),
        ("[1, 2, 3, 2].lastIndexOf(2)", Ok(json!(3))),
        ("[1].indexOf(5)", Ok(json!(-1))),
        ("object.spec.names.isSorted()", Ok(json!(false))),
        ("object.spec.list.sum()", Ok(json!(3))),
        ("object.spec.list.min() == 1", Ok(json!(true))),
        (
            "[0].filter(x, x > 1).min()",
            Err("min called on empty list"),
        ),
    ]);
}

#[test]
fn strings_library() {
    table(&[
        ("'hello'.charAt(1)", Ok(json!("e"))),
        ("'hello'.indexOf('l')", Ok(json!(2))),
        ("'hello'.lastIndexOf('l')", Ok(json!(3))),
        ("'hello'.indexOf('l', 3)", Ok(json!(3))),
        ("'HeLLo'.lowerAscii()", Ok(json!("hello"))),
        ("'HeLLo'.upperAscii()", Ok(json!("HELLO"))),
        ("'aaa'.replace('a', 'b')", Ok(json!("bbb"))),
        ("'aaa'.replace('a', 'b', 2)", Ok(json!("bba"))),
        ("'a,b,c'.split(',')", Ok(json!(["a", "b", "c"]))),
        ("'a,b,c'.split(',', 2)", Ok(json!(["a", "b,c"]))),
        ("'hello'.substring(1)", Ok(json!("ello"))),
        ("'hello'.substring(1, 3)", Ok(json!("el"))),
        ("'  x  '.trim()", Ok(json!("x"))),
        ("['a', 'b'].join()", Ok(json!("ab"))),
        ("['a', 'b'].join('-')", Ok(json!("a-b"))),
        ("object.spec.names.join(',')", Ok(json!("b,a"))),
        ("'hello'.charAt(10)", Err("index out of range")),
    ]);
}

#[test]
fn regex_library() {
    table(&[
        ("'abc 123'.find('[0-9]+')", Ok(json!("123"))),
        ("'abc'.find('[0-9]+')", Ok(json!(""))),
        ("'1 2 3'.findAll('[0-9]')", Ok(json!(["1", "2", "3"]))),
        ("'1 2 3'.findAll('[0-9]', 2)", Ok(json!(["1", "2"]))),
        ("'1 2 3'.findAll('[0-9]', 0)", Ok(json!([]))),
        ("'abc'.find('[')", Err("error parsing regexp")),
        ("'abc'.matches('^a')", Ok(json!(true))),
        ("'abc'.matches('^b')", Ok(json!(false))),
        ("'xabcx'.matches('b')", Ok(json!(true))),
        ("matches('abc', 'c$')", Ok(json!(true))),
        (
            "['a1', 'bb'].all(k, k.matches('^[a-z]+$'))",
            Ok(json!(false)),
        ),
        ("'abc'.matches('(')", Err("error parsing regexp")),
    ]);
}

#[test]
fn url_library() {
    table(&[
        (
            "url('https://example.com:80/path?x=1').getScheme()",
            Ok(json!("https")),
        ),
        (
            "url('https://example.com:80/path').getHost()",
            Ok(json!("example.com:80")),
        ),
        (
            "url('https://example.com:80/path').getHostname()",
            Ok(json!("example.com")),
        ),
        (
            "url('https://example.com:80/path').getPort()",
            Ok(json!("80")),
        ),
        ("url('https://example.com/').getPort()", Ok(json!(""))),
        ("url('https://[::1]:80/').getHostname()", Ok(json!("::1"))),
        (
            "url('https://example.com/a%20b').getEscapedPath()",
            Ok(json!("/a%20b")),
        ),
        (
            "url('https://e.com/?k=v&k=w&x=%21').getQuery()",
            Ok(json!({"k": ["v", "w"], "x": ["!"]})),
        ),
        ("isURL('https://example.com')", Ok(json!(true))),
        ("isURL('/absolute/path')", Ok(json!(true))),
        ("isURL('not a url')", Ok(json!(false))),
        ("isURL('relative/path')", Ok(json!(false))),
        ("url('relative')", Err("URL parse error")),
    ]);
}

#[test]
fn quantity_library() {
    table(&[
        (
            "quantity('1').isGreaterThan(quantity('500m'))",
            Ok(json!(true)),
        ),
        (
            "quantity('500m').isLessThan(quantity('1'))",
            Ok(json!(true)),
        ),
        ("quantity('200M').compareTo(quantity('0.2G'))", Ok(json!(0))),
        ("quantity('1Gi').asInteger()", Ok(json!(1073741824))),
        ("quantity('1.5').isInteger()", Ok(json!(false))),
        (
            "quantity('50k').add(quantity('20')).asInteger()",
            Ok(json!(50020)),
        ),
        ("quantity('50k').sub(20).asInteger()", Ok(json!(49980))),
        (
            "quantity('50k').add(20) == quantity('50020')",
            Ok(json!(true)),
        ),
        ("quantity('-1').sign()", Ok(json!(-1))),
        ("quantity('1') == quantity('1000m')", Ok(json!(true))),
        ("quantity('5.5').asApproximateFloat()", Ok(json!(5.5))),
        ("isQuantity('20')", Ok(json!(true))),
        ("isQuantity('20ZiB')", Ok(json!(false))),
        (
            "quantity('1.5').asInteger()",
            Err("cannot convert value to integer"),
        ),
        (
            "quantity('x')",
            Err("quantities must match the regular expression"),
        ),
    ]);
}

#[test]
fn ip_and_cidr_libraries() {
    table(&[
        ("ip('127.0.0.1').isLoopback()", Ok(json!(true))),
        ("ip('::1').family()", Ok(json!(6))),
        ("ip('10.0.0.1').family()", Ok(json!(4))),
        ("isIP('1.2.3')", Ok(json!(false))),
        ("isIP('::ffff:1.2.3.4')", Ok(json!(false))),
        ("ip.isCanonical('2001:db8::abcd')", Ok(json!(true))),
        ("ip.isCanonical('2001:DB8::ABCD')", Ok(json!(false))),
        ("string(ip('1.2.3.4'))", Ok(json!("1.2.3.4"))),
        ("ip('192.168.0.1').isGlobalUnicast()", Ok(json!(true))),
        ("ip('0.0.0.0').isUnspecified()", Ok(json!(true))),
        ("ip('fe80::1').isLinkLocalUnicast()", Ok(json!(true))),
        ("ip('224.0.0.1').isLinkLocalMulticast()", Ok(json!(true))),
        ("ip('1.2.3.4') == ip('1.2.3.4')", Ok(json!(true))),
        ("cidr('10.0.0.0/8').containsIP('10.1.2.3')", Ok(json!(true))),
        (
            "cidr('10.0.0.0/8').containsIP(ip('11.0.0.0'))",
            Ok(json!(false)),
        ),
        (
            "cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')",
            Ok(json!(true)),
        ),
        (
            "cidr('10.1.0.0/16').containsCIDR(cidr('10.0.0.0/8'))",
            Ok(json!(false)),
        ),
        (
            "cidr('192.168.1.5/24').masked() == cidr('192.168.1.0/24')",
            Ok(json!(true)),
        ),
        ("cidr('10.0.0.0/8').prefixLength()", Ok(json!(8))),
        ("string(cidr('10.0.0.0/8').ip())", Ok(json!("10.0.0.0"))),
        ("string(cidr('::1/128'))", Ok(json!("::1/128"))),
        ("isCIDR('10.0.0.0/33')", Ok(json!(false))),
        ("ip('1.2.3')", Err("parse error")),
    ]);
}

#[test]
fn format_and_sets_libraries() {
    table(&[
        (
            "format.dns1123Label().validate('my-name').hasValue()",
            Ok(json!(false)),
        ),
        (
            "format.named('dns1123Label').value().validate('My_Name').hasValue()",
            Ok(json!(true)),
        ),
        ("format.named('nope').hasValue()", Ok(json!(false))),
        (
            "format.dns1123Subdomain().validate('a.b').hasValue()",
            Ok(json!(false)),
        ),
        (
            "format.labelValue().validate('a'.repeat(1)).hasValue()",
            Err("undeclared reference to 'repeat'"),
        ),
        (
            "size(format.dns1123Label().validate('x'.upperAscii()).value())",
            Ok(json!(1)),
        ),
        ("sets.contains([1, 2, 3], [2, 3])", Ok(json!(true))),
        ("sets.contains([1, 2], [3])", Ok(json!(false))),
        ("sets.equivalent([1, 2], [2, 1, 1])", Ok(json!(true))),
        ("sets.intersects([1], [2])", Ok(json!(false))),
        ("sets.intersects(object.spec.list, [2, 5])", Ok(json!(true))),
    ]);
}

#[test]
fn authorizer_library() {
    table(&[
        (
            "authorizer.group('apps').resource('deployments').namespace('ns').check('get').allowed()",
            Ok(json!(true)),
        ),
        (
            "authorizer.group('apps').resource('deployments').namespace('ns').check('delete').allowed()",
            Ok(json!(false)),
        ),
        (
            "authorizer.group('apps').resource('deployments').namespace('ns').check('get').reason()",
            Ok(json!("allowed by test")),
        ),
        (
            "authorizer.path('/healthz').check('get').allowed()",
            Ok(json!(true)),
        ),
        (
            "authorizer.path('/metrics').check('get').errored()",
            Ok(json!(false)),
        ),
        (
            "authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('list').allowed()",
            Ok(json!(true)),
        ),
        (
            "authorizer.requestResource.check('list').allowed()",
            Ok(json!(true)),
        ),
        (
            "authorizer.requestResource.check('patch').allowed()",
            Ok(json!(false)),
        ),
        (
            "authorizer.allowed()",
            Err(
                "found no matching overload for 'allowed' applied to 'kubernetes.authorization.Authorizer.()'",
            ),
        ),
    ]);
}

#[test]
fn core_semantics_on_kube_json() {
    table(&[
        ("object.spec.replicas", Ok(json!(3))),
        ("object.spec.ratio", Ok(json!(0.5))),
        ("has(object.spec.replicas)", Ok(json!(true))),
        ("has(object.spec.missing)", Ok(json!(false))),
        ("object.spec.missing == 1", Err("no such key: missing")),
        ("object.spec.list == [1, 2]", Ok(json!(true))),
        ("[1, 2] == object.spec.list", Ok(json!(true))),
        ("{'k': 'v'} == object.spec.nested", Ok(json!(true))),
        ("object.spec.nested != {'k': 'x'}", Ok(json!(true))),
        ("2 in object.spec.list", Ok(json!(true))),
        ("'k' in object.spec.nested", Ok(json!(true))),
        ("object.spec.list + [3]", Ok(json!([1, 2, 3]))),
        ("object.spec.list[1]", Ok(json!(2))),
        (
            "object.spec.list[5]",
            Err("index '5' out of range in list size '2'"),
        ),
        ("object.spec.list.map(x, x * 2)", Ok(json!([2, 4]))),
        ("object.spec.names.exists(n, n == 'a')", Ok(json!(true))),
        ("object.spec.names.all(n, n.size() == 1)", Ok(json!(true))),
        (
            "object.metadata.labels.exists_one(k, k == 'app')",
            Ok(json!(true)),
        ),
        ("object.?spec.?missing.orValue('d')", Ok(json!("d"))),
        ("object.?spec.?replicas.orValue(0)", Ok(json!(3))),
        ("cel.bind(x, object.spec.replicas, x * x)", Ok(json!(9))),
        ("object.spec.replicas > 2.5", Ok(json!(true))),
        ("1 / 0", Err("division by zero")),
        ("object.spec.replicas == 'three'", Ok(json!(false))),
        (
            "1 == 1.0",
            Err("found no matching overload for '_==_' applied to '(int, double)'"),
        ),
        (
            "undeclared == 1",
            Err("undeclared reference to 'undeclared' (in container '')"),
        ),
        ("request.foo", Err("undefined field 'foo'")),
        ("'a' +", Err("Syntax error")),
    ]);
}

#[test]
fn compile_errors_are_cel_gos_text() {
    let vars = declarations(&Ty::Dyn, None, true, &BTreeMap::new());
    let err = compile("object.x == params.y", &vars).unwrap_err();
    assert_eq!(
        err,
        "ERROR: <input>:1:13: undeclared reference to 'params' (in container '')\n | object.x == params.y\n | ............^"
    );
    let err = compile("request.nope", &vars).unwrap_err();
    assert_eq!(
        err,
        "ERROR: <input>:1:8: undefined field 'nope'\n | request.nope\n | .......^"
    );
}

#[test]
fn cost_limits_stop_runaway_expressions() {
    let items: Vec<i64> = (0..1000).collect();
    let obj = json!({"items": items});
    let vars = declarations(&Ty::Dyn, None, true, &BTreeMap::new());
    let c = compile("object.items.all(a, object.items.all(b, a >= 0))", &vars).unwrap();
    let mut vals: HashMap<&'static str, Box<dyn cel::common::value::Val>> = HashMap::new();
    vals.insert("object", value::json_to_val(&obj));
    let bindings = Bindings {
        vals,
        variables: None,
    };
    let (out, spent) = c.evaluate(&bindings, cost::RUNTIME_BUDGET, |_| ());
    assert_eq!(out, Err(EvalError::Failed(cost::LIMIT_EXCEEDED.into())));
    assert!(spent > cost::PER_CALL_LIMIT);
    // With less budget left than the per-expression limit, running out is the budget's.
    let (out, _) = c.evaluate(&bindings, 1000, |_| ());
    assert_eq!(out, Err(EvalError::OutOfBudget));
    // A small one fits.
    let small = compile("object.items.exists(a, a == 3)", &vars).unwrap();
    let (out, spent) = small.evaluate(&bindings, 1000, |_| ());
    assert_eq!(out, Ok(()));
    assert!(spent < 100, "{spent}");
}

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::operations::{self, Operation};
use crate::{Limits, LuaError, PodLibrary, Runtime, Script};

/// A pod library that answers from the template so the plumbing can be checked; the real
/// answers are the built-in interpreter's, tested in the controllers.
struct EchoPods;

impl PodLibrary for EchoPods {
    fn replica_requirements(&self, template: &Value) -> Result<Value, String> {
        let sel = template.pointer("/spec/nodeSelector").cloned();
        Ok(match sel {
            Some(s) => json!({"nodeClaim": {"nodeSelector": s}}),
            None => Value::Null,
        })
    }

    fn dependencies(&self, template: &Value, namespace: &str) -> Result<Value, String> {
        let sa = template
            .pointer("/spec/serviceAccountName")
            .and_then(Value::as_str)
            .ok_or("no service account")?;
        Ok(
            json!([{"apiVersion": "v1", "kind": "ServiceAccount", "namespace": namespace, "name": sa}]),
        )
    }
}

fn runtime() -> Runtime {
    Runtime::new(Arc::new(EchoPods), Limits::default())
}

fn quick_runtime() -> Runtime {
    Runtime::new(
        Arc::new(EchoPods),
        Limits {
            timeout: Duration::from_millis(200),
            memory: 16 * 1024 * 1024,
            strikes: 2,
            idle_states: 4,
        },
    )
}

fn script(op: Operation, source: &str) -> Script {
    Script::new(source, op.function())
}

fn workload() -> Value {
    json!({
        "apiVersion": "apps.example.io/v1",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ns", "labels": {}},
        "spec": {
            "replicas": 3,
            "selector": {},
            "ports": [],
            "template": {"spec": {"nodeSelector": {"disk": "ssd"}, "serviceAccountName": "runner"}}
        },
        "status": {"readyReplicas": 2}
    })
}

#[test]
fn get_replicas_returns_count_and_requirements() {
    let rt = runtime();
    let s = script(
        Operation::InterpretReplica,
        r#"
        local kube = require("kube")
        function GetReplicas(obj)
          local requires = kube.accuratePodRequirements(obj.spec.template)
          return obj.spec.replicas, requires
        end"#,
    );
    let (n, req) = operations::get_replicas(&rt, &s, &workload()).expect("get replicas");
    assert_eq!(n, 3);
    assert_eq!(
        req,
        Some(json!({"nodeClaim": {"nodeSelector": {"disk": "ssd"}}}))
    );

    let none = script(
        Operation::InterpretReplica,
        "function GetReplicas(obj) return 2.9 end",
    );
    assert_eq!(
        operations::get_replicas(&rt, &none, &workload()),
        Ok((2, None))
    );
    let bad = script(
        Operation::InterpretReplica,
        "function GetReplicas(obj) return 'three' end",
    );
    assert_eq!(
        operations::get_replicas(&rt, &bad, &workload()),
        Err(LuaError::Result("result type string is not number".into()))
    );
}

#[test]
fn revise_and_retain_keep_empty_maps_as_maps() {
    let rt = runtime();
    let revise = script(
        Operation::ReviseReplica,
        "function ReviseReplica(obj, n) obj.spec.replicas = n return obj end",
    );
    let revised = operations::revise_replica(&rt, &revise, &workload(), 2).expect("revise");
    assert_eq!(revised["spec"]["replicas"], json!(2));
    assert_eq!(revised["spec"]["selector"], json!({}), "empty map repaired");
    assert_eq!(revised["spec"]["ports"], json!([]), "empty list kept");
    assert_eq!(revised["metadata"]["labels"], json!({}));

    let retain = script(
        Operation::Retain,
        r#"function Retain(desired, observed)
             desired.spec.paused = observed.spec.paused
             desired.spec.extra = {}
             return desired
           end"#,
    );
    let mut observed = workload();
    observed["spec"]["paused"] = json!(true);
    let retained = operations::retain(&rt, &retain, &workload(), &observed).expect("retain");
    assert_eq!(retained["spec"]["paused"], json!(true));
    assert!(
        retained["spec"].get("extra").is_none(),
        "unknown empty table dropped"
    );

    let kindless = script(
        Operation::Retain,
        "function Retain(desired, observed) return {spec = {}} end",
    );
    let err = operations::retain(&rt, &kindless, &workload(), &observed).expect_err("no kind");
    assert!(
        err.to_string().starts_with("Object 'Kind' is missing"),
        "{err}"
    );
}

#[test]
fn status_health_aggregation_and_dependencies() {
    let rt = runtime();
    let reflect = script(
        Operation::InterpretStatus,
        "function ReflectStatus(obj) return {readyReplicas = obj.status.readyReplicas} end",
    );
    assert_eq!(
        operations::reflect_status(&rt, &reflect, &workload()),
        Ok(json!({"readyReplicas": 2}))
    );
    let health = script(
        Operation::InterpretHealth,
        "function InterpretHealth(obj) return obj.status.readyReplicas == obj.spec.replicas end",
    );
    assert_eq!(
        operations::interpret_health(&rt, &health, &workload()),
        Ok(false)
    );
    let nil_health = script(
        Operation::InterpretHealth,
        "function InterpretHealth(obj) end",
    );
    assert_eq!(
        operations::interpret_health(&rt, &nil_health, &workload()),
        Err(LuaError::Result("result type nil is not bool".into()))
    );

    let aggregate = script(
        Operation::AggregateStatus,
        r#"function AggregateStatus(desired, items)
             local ready = 0
             for i = 1, #items do
               if items[i].status ~= nil then ready = ready + items[i].status.readyReplicas end
             end
             desired.status = {readyReplicas = ready, clusters = #items}
             return desired
           end"#,
    );
    let items = json!([
        {"clusterName": "member1", "status": {"readyReplicas": 2}, "applied": true},
        {"clusterName": "member2", "status": {"readyReplicas": 1}, "applied": true},
        {"clusterName": "member3", "applied": false}
    ]);
    let out = operations::aggregate_status(&rt, &aggregate, &workload(), &items).expect("agg");
    assert_eq!(out["status"], json!({"readyReplicas": 3, "clusters": 3}));

    let deps = script(
        Operation::InterpretDependency,
        r#"local kube = require("kube")
           function GetDependencies(obj)
             return kube.getPodDependencies(obj.spec.template, obj.metadata.namespace)
           end"#,
    );
    assert_eq!(
        operations::get_dependencies(&rt, &deps, &workload()),
        Ok(vec![
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "namespace": "ns", "name": "runner"})
        ])
    );
    let components = script(
        Operation::InterpretComponent,
        r#"function GetComponents(obj)
             return {{name = "main", replicas = obj.spec.replicas}, {name = "side", replicas = 1}}
           end"#,
    );
    assert_eq!(
        operations::get_components(&rt, &components, &workload()),
        Ok(vec![
            json!({"name": "main", "replicas": 3}),
            json!({"name": "side", "replicas": 1})
        ])
    );
}

fn eval(rt: &Runtime, body: &str) -> Result<Value, LuaError> {
    let s = Script::new(
        format!("function ReflectStatus(obj) {body} end"),
        "ReflectStatus",
    );
    operations::reflect_status(rt, &s, &json!({}))
}

#[test]
fn resource_add_sums_quantities_canonically() {
    let rt = runtime();
    let add = |args: &str| {
        eval(
            &rt,
            &format!("local kube = require('kube') return {{v = kube.resourceAdd({args})}}"),
        )
        .map(|v| v["v"].clone())
    };
    assert_eq!(add("'1', '500m'"), Ok(json!("1500m")));
    assert_eq!(add("'1Gi', '512Mi', nil"), Ok(json!("1536Mi")));
    assert_eq!(add("'250m', '250m', '500m'"), Ok(json!("1")));
    assert_eq!(add(""), Ok(json!("0")));
    let err = add("'1', 2").expect_err("number argument");
    assert!(
        err.to_string()
            .contains("bad argument #2 to 'resourceAdd' (string expected, got number)"),
        "{err}"
    );
    let err = add("'1x'").expect_err("bad quantity");
    assert!(err.to_string().contains("quantities must match"), "{err}");

    let quantity = |args: &str| {
        eval(
            &rt,
            &format!(
                "local kube = require('kube') return {{v = kube.getResourceQuantity({args})}}"
            ),
        )
        .map(|v| v["v"].clone())
    };
    assert_eq!(quantity("'1500m'"), Ok(json!(1.5)));
    assert_eq!(quantity("'2Ki'"), Ok(json!(2048)));
    assert_eq!(quantity("nil"), Ok(json!(0)));
    assert!(
        quantity("'-1'")
            .expect_err("negative")
            .to_string()
            .contains("negative value")
    );
    assert!(
        quantity("'1', '2'")
            .expect_err("two")
            .to_string()
            .contains("getResourceQuantity only accepts one argument")
    );
}

#[test]
fn pod_helpers_check_their_arguments() {
    let rt = runtime();
    let call = |expr: &str| {
        eval(
            &rt,
            &format!("local kube = require('kube') return {{v = {expr}}}"),
        )
        .map(|v| v.get("v").cloned().unwrap_or(Value::Null))
    };
    assert_eq!(
        call("kube.accuratePodRequirements({spec = {nodeSelector = {a = 'b'}}})"),
        Ok(json!({"nodeClaim": {"nodeSelector": {"a": "b"}}}))
    );
    assert_eq!(
        call("kube.accuratePodRequirements({spec = {}})"),
        Ok(Value::Null)
    );
    for (expr, message) in [
        (
            "kube.accuratePodRequirements()",
            "getPodRequirements only accepts one argument",
        ),
        (
            "kube.accuratePodRequirements({}, {})",
            "getPodRequirements only accepts one argument",
        ),
        (
            "kube.accuratePodRequirements('x')",
            "bad argument #1 to 'accuratePodRequirements' (table expected, got string)",
        ),
        (
            "kube.getPodDependencies({})",
            "getPodDependencies only accepts two argument",
        ),
        (
            "kube.getPodDependencies({spec = {serviceAccountName = 'a'}}, {})",
            "bad argument #2 to 'getPodDependencies' (string expected, got table)",
        ),
    ] {
        let err = call(expr).expect_err(expr);
        assert!(err.to_string().contains(message), "{expr}: {err}");
    }
    assert_eq!(
        call("kube.getPodDependencies({spec = {serviceAccountName = 'a'}}, nil)"),
        Ok(
            json!([{"apiVersion": "v1", "kind": "ServiceAccount", "namespace": "default", "name": "a"}])
        )
    );
}

#[test]
fn sandbox_refuses_what_karmada_refuses() {
    let rt = runtime();
    for (body, message) in [
        (
            "os.execute('true')",
            "attempt to call field 'execute' (a nil value)",
        ),
        (
            "return io.open('/etc/passwd')",
            "attempt to index global 'io' (a nil value)",
        ),
        ("require('os')", "module 'os' not found"),
        ("require('io')", "module 'io' not found"),
        (
            "dofile('/etc/passwd')",
            "call function dofile is not supported in karmada customized resourceinterpreter.",
        ),
        (
            "loadstring('return 1')",
            "call function loadstring is not supported",
        ),
        (
            "setmetatable({}, {})",
            "call function setmetatable is not supported",
        ),
        ("rawset({}, 1, 1)", "call function rawset is not supported"),
        ("getfenv(1)", "call function getfenv is not supported"),
        (
            "collectgarbage()",
            "call function collectgarbage is not supported",
        ),
        (
            "return string.rep('x', 10)",
            "The Lua function string.rep is not supported by Karmada",
        ),
        (
            "return ('x'):gsub('x', 'y')",
            "The Lua function string.gsub is not supported by Karmada",
        ),
        (
            "return string.dump(print)",
            "The Lua function string.dump is not supported by Karmada",
        ),
        (
            "return debug.traceback()",
            "attempt to index global 'debug' (a nil value)",
        ),
        (
            "return coroutine.create(print)",
            "attempt to index global 'coroutine' (a nil value)",
        ),
        (
            "package.loadlib('x', 'y')",
            "attempt to call field 'loadlib' (a nil value)",
        ),
    ] {
        let err = eval(&rt, body).expect_err(body);
        assert!(err.to_string().contains(message), "{body}: {err}");
    }
    // What scripts use works.
    assert_eq!(
        eval(
            &rt,
            "return {t = type(os.time()), d = type(os.date('%Y')), u = string.upper('a'), f = string.find('abc', 'b'), m = math.max(1, 3), c = table.concat({'a', 'b'}, ',')}"
        ),
        Ok(json!({"t": "number", "d": "string", "u": "A", "f": 2, "m": 3, "c": "a,b"}))
    );
}

#[test]
fn an_endless_loop_times_out_and_does_not_stall() {
    let rt = quick_runtime();
    let started = Instant::now();
    let err = eval(&rt, "while true do end").expect_err("loop");
    assert_eq!(err, LuaError::Timeout(Duration::from_millis(200)));
    assert!(started.elapsed() < Duration::from_secs(5));
    // pcall cannot swallow the deadline.
    let err = eval(
        &rt,
        "while true do pcall(function() while true do end end) end",
    )
    .expect_err("pcall loop");
    assert_eq!(err, LuaError::Timeout(Duration::from_millis(200)));
    // The runtime still serves other scripts.
    assert_eq!(eval(&rt, "return {ok = true}"), Ok(json!({"ok": true})));
}

#[test]
fn endless_allocation_hits_the_memory_limit() {
    // A generous deadline, so the memory limit is what stops the script on a busy machine.
    let rt = Runtime::new(
        Arc::new(EchoPods),
        Limits {
            timeout: Duration::from_secs(30),
            memory: 16 * 1024 * 1024,
            ..Limits::default()
        },
    );
    let err = eval(
        &rt,
        "local t = {} local i = 0 while true do i = i + 1 t[i] = {i, i, i} end",
    )
    .expect_err("tables");
    assert_eq!(err, LuaError::Memory(16 * 1024 * 1024));
    let err = eval(&rt, "local s = 'x' while true do s = s .. s end").expect_err("strings");
    assert_eq!(err, LuaError::Memory(16 * 1024 * 1024));
    assert_eq!(eval(&rt, "return {ok = true}"), Ok(json!({"ok": true})));
}

#[test]
fn the_memory_limit_holds_around_unlimited_argument_conversion() {
    // Arguments are converted with the limit lifted (objects are bounded by the store's size);
    // everything the script itself does, and a chunk checked after such calls, stays bounded.
    let memory = 8 * 1024 * 1024;
    let rt = Runtime::new(
        Arc::new(EchoPods),
        Limits {
            timeout: Duration::from_secs(30),
            memory,
            idle_states: 1,
            ..Limits::default()
        },
    );
    let health = script(
        Operation::InterpretHealth,
        "function InterpretHealth(o) return o.spec.replicas == 3 end",
    );
    for _ in 0..3 {
        assert_eq!(
            operations::interpret_health(&rt, &health, &workload()),
            Ok(true)
        );
    }
    let endless = Script::new(
        "local t = {} local i = 0 while true do i = i + 1 t[i] = {i, i, i} end",
        "InterpretHealth",
    );
    assert_eq!(rt.check_defines(&endless), Err(LuaError::Memory(memory)));
    let mut big = workload();
    big["spec"]["blob"] = json!("x".repeat(12 * 1024 * 1024));
    assert_eq!(operations::interpret_health(&rt, &health, &big), Ok(true));
    let hungry = script(
        Operation::InterpretHealth,
        "function InterpretHealth(o) local t = {} while true do t[#t + 1] = {o} end end",
    );
    assert_eq!(
        operations::interpret_health(&rt, &hungry, &big),
        Err(LuaError::Memory(memory))
    );
    assert_eq!(
        operations::interpret_health(&rt, &health, &workload()),
        Ok(true)
    );
}

#[test]
fn a_script_that_keeps_hitting_its_limits_is_suspended_until_replaced() {
    let rt = quick_runtime();
    let looping = Script::new(
        "function InterpretHealth(obj) while true do end end",
        "InterpretHealth",
    );
    for _ in 0..2 {
        assert!(matches!(
            operations::interpret_health(&rt, &looping, &json!({})),
            Err(LuaError::Timeout(_))
        ));
    }
    let started = Instant::now();
    let err = operations::interpret_health(&rt, &looping, &json!({})).expect_err("suspended");
    assert!(
        matches!(err, LuaError::Suspended { strikes: 2, .. }),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(100),
        "fails at once"
    );
    // The fixed customization is a new script.
    let fixed = Script::new(
        "function InterpretHealth(obj) return true end",
        "InterpretHealth",
    );
    assert_eq!(
        operations::interpret_health(&rt, &fixed, &json!({})),
        Ok(true)
    );
}

#[test]
fn compile_errors_name_the_line_and_missing_functions_are_reported() {
    let rt = runtime();
    let err = rt
        .check_syntax("function InterpretHealth(obj)\n  return obj.x ==\nend")
        .expect_err("syntax");
    assert!(
        matches!(&err, LuaError::Compile(m) if m.starts_with("<string>:3:")),
        "{err}"
    );
    let s = Script::new("function Other() end", "InterpretHealth");
    assert_eq!(
        rt.check_defines(&s),
        Err(LuaError::FunctionNotFound("InterpretHealth".into()))
    );
    assert_eq!(
        operations::interpret_health(&rt, &s, &json!({})),
        Err(LuaError::FunctionNotFound("InterpretHealth".into()))
    );
    let err = eval(&rt, "local x = nil return x.y").expect_err("runtime");
    assert!(err.to_string().starts_with("<string>:1:"), "{err}");
    assert!(!err.to_string().contains("stack traceback"), "{err}");
}

#[test]
fn scripts_are_isolated_from_each_other() {
    let rt = Runtime::new(
        Arc::new(EchoPods),
        Limits {
            idle_states: 1,
            ..Limits::default()
        },
    );
    let a = Script::new(
        "shared = 'a' string.upper = nil function ReflectStatus(o) return {v = shared} end",
        "ReflectStatus",
    );
    let b = Script::new(
        "function ReflectStatus(o) return {v = tostring(shared), u = string.upper('x')} end",
        "ReflectStatus",
    );
    assert_eq!(
        operations::reflect_status(&rt, &a, &json!({})),
        Ok(json!({"v": "a"}))
    );
    assert_eq!(
        operations::reflect_status(&rt, &b, &json!({})),
        Ok(json!({"v": "nil", "u": "X"}))
    );
    // Each call runs the script's chunk again, as Karmada runs the whole script every call.
    let counter = Script::new(
        "local n = 0 function ReflectStatus(o) n = n + 1 return {n = n} end",
        "ReflectStatus",
    );
    for _ in 0..3 {
        assert_eq!(
            operations::reflect_status(&rt, &counter, &json!({})),
            Ok(json!({"n": 1}))
        );
    }
}

#[test]
fn print_goes_to_the_sink_and_states_are_shared_across_threads() {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let l = lines.clone();
    let rt = Runtime::with_print(
        Arc::new(EchoPods),
        Limits::default(),
        Arc::new(move |s: &str| l.lock().expect("lock").push(s.to_owned())),
    );
    let s = Script::new(
        "function InterpretHealth(o) print('replicas', o.spec.replicas) return o.spec.replicas > 1 end",
        "InterpretHealth",
    );
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (rt, s) = (rt.clone(), s.clone());
            std::thread::spawn(move || {
                for _ in 0..50 {
                    assert_eq!(operations::interpret_health(&rt, &s, &workload()), Ok(true));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("thread");
    }
    let lines = lines.lock().expect("lock");
    assert_eq!(lines.len(), 200);
    assert_eq!(lines[0], "replicas\t3");
}

#[test]
fn operations_parse_case_insensitively() {
    assert_eq!(
        Operation::parse("interpretHealth"),
        Some(Operation::InterpretHealth)
    );
    assert_eq!(Operation::parse("RETAIN"), Some(Operation::Retain));
    assert_eq!(Operation::parse("prune"), None);
    assert_eq!(Operation::InterpretReplica.function(), "GetReplicas");
    assert_eq!(
        Operation::InterpretDependency.field(),
        "dependencyInterpretation"
    );
}

/// A script that reads a few fields gets a pruned object (see `projection`); whatever it
/// reads, and however, it sees what the whole object holds.
#[test]
fn a_script_sees_every_field_it_reads_however_it_reads_them() {
    let rt = runtime();
    let obj = json!({
        "apiVersion": "apps.example.io/v1", "kind": "Workload",
        "metadata": {"name": "web", "namespace": "ns", "labels": {"a": "1", "b": "2"}},
        "spec": {"replicas": 4, "paused": false, "template": {"spec": {"nodeSelector": {"d": "ssd"}}}},
        "status": {"readyReplicas": 4}
    });
    let cases = [
        // Field chains: only these subtrees are converted.
        (
            "function GetReplicas(obj) if obj == nil or not obj then return 0 end \
             return obj.spec.replicas + obj.status.readyReplicas, nil end",
            8,
        ),
        // Iterated whole: every top-level field is there.
        (
            "function GetReplicas(obj) local n = 0 for _ in pairs(obj) do n = n + 1 end return n end",
            5,
        ),
        // A subtree handed to a helper arrives whole.
        (
            "local function count(t) local n = 0 for _ in pairs(t) do n = n + 1 end return n end \
             function GetReplicas(obj) return count(obj.spec) + count(obj.metadata.labels) end",
            5,
        ),
        // An alias of the object: converted whole.
        (
            "function GetReplicas(obj) local o = obj return o.spec.replicas + #o.metadata.name end",
            7,
        ),
        // A false value is a field like any other.
        (
            "function GetReplicas(obj) if obj.spec.paused == false then return 1 end return 2 end",
            1,
        ),
    ];
    for (source, want) in cases {
        let (n, _) =
            operations::get_replicas(&rt, &script(Operation::InterpretReplica, source), &obj)
                .unwrap_or_else(|e| panic!("{source}: {e}"));
        assert_eq!(n, want, "{source}");
    }
    // A missing field reads as nil, as it would from the whole object.
    let health = script(
        Operation::InterpretHealth,
        "function InterpretHealth(o) return o.status.observedGeneration == nil and o.spec.template.spec.nodeSelector.d == 'ssd' end",
    );
    assert_eq!(operations::interpret_health(&rt, &health, &obj), Ok(true));
}

fn eval_on(rt: &Runtime, body: &str, obj: &Value) -> Result<Value, LuaError> {
    let s = Script::new(
        format!("function ReflectStatus(obj) return {{r = (function() {body} end)()}} end"),
        "ReflectStatus",
    );
    operations::reflect_status(rt, &s, obj).map(|v| v["r"].clone())
}

/// The order gopher-lua's `pairs` and `next` give (each expectation is what Karmada's VM
/// returns for the same script).
#[test]
fn pairs_and_next_iterate_as_gopher_lua() {
    let rt = runtime();
    let cases = [
        (
            "keys in first-insertion order; one deleted and set again keeps its place",
            json!({}),
            r#"local m = {}
            m.zeta = 1; m.alpha = 2; m.mid = 3; m[0] = 4; m[-1] = 5; m[1.5] = 6; m.beta = 7
            m.alpha = nil; m.alpha = 8
            local out = {}
            for k in pairs(m) do out[#out + 1] = tostring(k) end
            return table.concat(out, ",")"#,
            "zeta,alpha,mid,0,-1,1.5,beta",
        ),
        (
            "a constructor's keyed fields in source order, then later insertions",
            json!({}),
            r#"local k = "dyn"
            local t = {b = 1, "first", a = 2, [k] = 3, c = {y = 1, x = 2}, "second"}
            t.z = 5; t.d = 6
            local out = {}
            for key in pairs(t) do out[#out + 1] = tostring(key) end
            for key in pairs(t.c) do out[#out + 1] = key end
            return table.concat(out, ",")"#,
            "1,2,b,a,dyn,c,z,d,y,x",
        ),
        (
            "positive integer keys first and ascending, however inserted",
            json!({}),
            r#"local t = {}
            t.x = 1; t[3] = "c"; t[1] = "a"; t.y = 2; t[2] = "b"
            local out = {}
            for k, v in pairs(t) do out[#out + 1] = tostring(k) .. "=" .. tostring(v) end
            return table.concat(out, ",")"#,
            "1=a,2=b,3=c,x=1,y=2",
        ),
        (
            "keys a script adds to an argument come after the argument's own",
            json!({"spec": {"a": 1}}),
            r#"local s = obj.spec
            s.z = 2; s.b = 3
            local out = {}
            for k in pairs(s) do out[#out + 1] = k end
            return table.concat(out, ",")"#,
            "a,z,b",
        ),
        (
            "next walks as pairs does",
            json!({}),
            r#"local t = {q = 1, p = 2}
            t.o = 3
            local out = {tostring(next({}))}
            local k = next(t)
            while k do out[#out + 1] = k; k = next(t, k) end
            return table.concat(out, ",")"#,
            "nil,q,p,o",
        ),
        (
            "conditions merged by type come back in first-seen order",
            json!({"items": [
                {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Progressing", "status": "True"}]},
                {"conditions": [{"type": "Available", "status": "False"}, {"type": "Ready", "status": "False"}]}
            ]}),
            r#"local byType = {}
            for _, item in ipairs(obj.items) do
              for _, c in ipairs(item.conditions) do byType[c.type] = c end
            end
            local out = {}
            for _, c in pairs(byType) do out[#out + 1] = c.type .. "=" .. c.status end
            return table.concat(out, ",")"#,
            "Ready=False,Progressing=True,Available=False",
        ),
    ];
    for (name, obj, body, want) in cases {
        assert_eq!(eval_on(&rt, body, &obj), Ok(json!(want)), "{name}");
    }
}

/// `table.sort` is Go's `sort.Sort`: insertion sort (stable) up to 12 elements, pdqsort
/// beyond, which leaves equal elements in its own order (expectations from Karmada's VM).
#[test]
fn table_sort_orders_equal_elements_as_go() {
    let rt = runtime();
    let cases = [
        (5, "3,1,4,2,5"),
        (12, "3,6,9,12,1,4,7,10,2,5,8,11"),
        (13, "6,12,3,9,7,1,4,10,13,5,8,11,2"),
        (20, "9,18,3,15,12,6,16,4,7,10,19,1,13,14,8,5,17,2,11,20"),
        (
            33,
            "12,33,3,30,27,6,24,21,9,18,15,25,28,31,4,16,13,10,19,1,7,22,23,8,20,26,5,17,29,11,14,32,2",
        ),
    ];
    for (n, want) in cases {
        let body = format!(
            r#"local t = {{}}
            for i = 1, {n} do t[#t + 1] = {{k = i % 3, i = i}} end
            table.sort(t, function(a, b) return a.k < b.k end)
            local out = {{}}
            for _, e in ipairs(t) do out[#out + 1] = e.i end
            return table.concat(out, ",")"#
        );
        assert_eq!(
            eval_on(&rt, &body, &json!({})),
            Ok(json!(want)),
            "{n} elements"
        );
    }
    // Without a comparison, `<`; wrong arguments are refused as Lua refuses them.
    assert_eq!(
        eval_on(
            &rt,
            "local t = {'b', 'c', 'a'} table.sort(t) return table.concat(t)",
            &json!({})
        ),
        Ok(json!("abc"))
    );
    for (body, message) in [
        (
            "table.sort(nil)",
            "bad argument #1 to 'sort' (table expected, got nil)",
        ),
        (
            "table.sort({}, 1)",
            "bad argument #2 to 'sort' (function expected, got number)",
        ),
        ("table.sort({1, 'a'})", "attempt to compare"),
        (
            "table.foreach({}, print)",
            "attempt to call field 'foreach' (a nil value)",
        ),
        (
            "for k in pairs(nil) do end",
            "bad argument #1 to 'pairs' (table expected, got nil)",
        ),
        ("local t = {} t[nil] = 1", "<string>:1: table index is nil"),
    ] {
        let err = eval_on(&rt, body, &json!({})).expect_err(body);
        assert!(err.to_string().contains(message), "{body}: {err}");
    }
}

/// AggregateStatus gets nil for no status items and a table for an empty list, as Karmada's
/// VM gets a nil slice and an empty one.
#[test]
fn status_items_reach_lua_as_nil_or_a_list() {
    let rt = runtime();
    let s = script(
        Operation::AggregateStatus,
        r#"function AggregateStatus(desired, statusItems)
          desired.status = {isNil = statusItems == nil, type = type(statusItems)}
          if statusItems ~= nil then desired.status.count = #statusItems end
          return desired
        end"#,
    );
    let desired = json!({"apiVersion": "v1", "kind": "Thing", "metadata": {"name": "t"}});
    for (items, status) in [
        (Value::Null, json!({"isNil": true, "type": "nil"})),
        (
            json!([]),
            json!({"isNil": false, "type": "table", "count": 0}),
        ),
        (
            json!([{"clusterName": "m1"}]),
            json!({"isNil": false, "type": "table", "count": 1}),
        ),
    ] {
        let out = operations::aggregate_status(&rt, &s, &desired, &items).expect("aggregate");
        assert_eq!(out["status"], status, "{items}");
    }
}

//! pgbench's expressions on arbitrary text: parsed, then evaluated with
//! a few variables set (an int, a text, the largest bigint, one unset).
//! Overflow, division by zero and the like must be errors.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rand::SeedableRng;
use rand::rngs::SmallRng;
use ysql_bench::workload::pgbench::script::eval::{Env, Value, eval};
use ysql_bench::workload::pgbench::script::exec::Var;
use ysql_bench::workload::pgbench::script::expr::parse_expr;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut names: Vec<String> = ["x", "s", "big", "nothing", "default_seed"]
        .map(String::from)
        .to_vec();
    let mut intern = |n: &str, _at: usize| match names.iter().position(|x| x == n) {
        Some(i) => i,
        None => {
            names.push(n.to_string());
            names.len() - 1
        }
    };
    let mut sites = 0;
    let Ok(e) = parse_expr(&text, 0, text.len(), &mut intern, &mut sites) else {
        return;
    };
    let mut vars = vec![
        Var::Value(Value::Int(5)),
        Var::Text("abc".to_string()),
        Var::Value(Value::Int(i64::MAX)),
        Var::Unset,
        Var::Value(Value::Int(0)),
    ];
    vars.resize_with(names.len(), || Var::Unset);
    let mut rng = SmallRng::seed_from_u64(1);
    let mut zipf = vec![None; sites];
    let mut env = Env {
        vars: &vars,
        names: &names,
        rng: &mut rng,
        zipf: &mut zipf,
        debug_at: "fuzz",
    };
    let _ = eval(&e, &mut env);
});

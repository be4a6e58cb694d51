//! pgbench's script compiler on arbitrary text: a program, or an error
//! that names a line and column of the text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ysql_bench::workload::pgbench::script::parse::Compiler;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut c = Compiler::new();
    c.define("d");
    let r = c
        .add("s", "s.sql", &text, 1)
        .and_then(|()| c.finish().map(drop));
    if let Err(e) = r {
        let lines = text.split('\n').count();
        assert!((1..=lines).contains(&e.line), "{e}");
        assert!(e.column >= 1, "{e}");
    }
});

//! The lean driver's decoder on arbitrary server bytes: framing over a
//! stream cut into reads of arbitrary sizes, and the body parsers on
//! every message framed (`ysql_bench::db::wire::frame_stream`, which
//! panics only on a decoder bug). The first byte says how many of the
//! next bytes are read sizes; the rest is the stream.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let n = usize::from(n % 8).min(rest.len());
    let (sizes, stream) = rest.split_at(n);
    // Sizes 1..=256, and large reads now and then (0 stands for 64 KiB).
    let mut cuts: Vec<usize> = sizes
        .iter()
        .map(|&s| if s == 0 { 64 * 1024 } else { usize::from(s) })
        .collect();
    if cuts.is_empty() {
        cuts.push(64 * 1024);
    }
    let one = ysql_bench::db::wire::frame_stream(stream, &cuts);
    // However the stream is cut, the same messages and the same end.
    let whole = ysql_bench::db::wire::frame_stream(stream, &[usize::MAX]);
    assert_eq!(one, whole, "the split changed what was framed");
});

//! The decoder on arbitrary input: framing over byte streams split at
//! arbitrary points (the same messages whatever the split, no body past
//! what was read, no allocation ahead of the bytes), and the body parsers
//! on arbitrary bodies. Property tests with proptest (shrinking gives the
//! smallest failing stream), plus the regressions they found.

use proptest::prelude::*;

use super::*;

/// Every type a server may send.
const TAGS: &[u8] = b"RKSZTDCENAI123nstGHWdcVv";

/// A well-formed message of type `tag`, with a body of `len` bytes
/// drawn from `fill` (clamped to what the type allows).
fn message(tag: u8, len: usize, fill: &[u8]) -> Vec<u8> {
    let (_, least, most) = kind(tag).expect("a known type");
    let len = len.clamp(least - 4, most.min(4000) - 4);
    let mut body: Vec<u8> = fill.iter().copied().cycle().take(len).collect();
    body.resize(len, b'x');
    let letters = |body: &mut Vec<u8>| body.iter_mut().for_each(|b| *b = b'A' + *b % 26);
    match tag {
        b'Z' => body = vec![b"ITE"[len % 3]],
        b'C' => {
            letters(&mut body);
            if let Some(last) = body.last_mut() {
                *last = 0;
            }
        }
        // The types whose bodies framing checks: built as they must be.
        b'E' | b'N' => {
            letters(&mut body);
            let mut fields = b"SERROR\0C42000\0M".to_vec();
            fields.extend_from_slice(&body);
            fields.extend_from_slice(b"\0\0");
            body = fields;
        }
        b'T' => {
            letters(&mut body);
            let columns = len % 4;
            let mut t = (columns as u16).to_be_bytes().to_vec();
            for c in 0..columns {
                t.extend_from_slice(&body[..c.min(body.len())]);
                t.push(0);
                t.extend_from_slice(&[7; 18]);
            }
            body = t;
        }
        b't' => {
            let n = len % 50;
            body = (n as u16).to_be_bytes().to_vec();
            body.extend((0..4 * n).map(|i| i as u8));
        }
        _ => {}
    }
    let mut m = vec![tag];
    m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    m.extend_from_slice(&body);
    m
}

fn messages() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(
        (
            prop::sample::select(TAGS),
            0usize..600,
            prop::collection::vec(any::<u8>(), 1..16),
        )
            .prop_map(|(tag, len, fill)| message(tag, len, &fill)),
        0..40,
    )
}

/// The sizes of the reads: small ones cut headers and bodies anywhere.
fn cuts() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(prop_oneof![1usize..8, 1usize..700, 1usize..70_000], 1..20)
}

/// What framing `stream` gave: the messages, and the error it stopped on.
type Framed = (Vec<(u8, Vec<u8>)>, Option<String>);

fn feed(stream: &[u8], cuts: &[usize]) -> Framed {
    frame_stream(stream, cuts)
}

fn framed(ms: &[Vec<u8>]) -> Vec<(u8, Vec<u8>)> {
    ms.iter().map(|m| (m[0], m[5..].to_vec())).collect()
}

proptest! {
    #[test]
    fn messages_come_out_whole_however_the_stream_is_split(ms in messages(), c in cuts()) {
        let (out, err) = feed(&ms.concat(), &c);
        prop_assert_eq!(err, None);
        prop_assert_eq!(out, framed(&ms));
    }

    #[test]
    fn garbage_after_messages_frames_the_same_whatever_the_split(
        ms in messages(),
        garbage in prop::collection::vec(any::<u8>(), 0..300),
        c1 in cuts(),
        c2 in cuts(),
    ) {
        let mut stream = ms.concat();
        stream.extend_from_slice(&garbage);
        let one = feed(&stream, &c1);
        let two = feed(&stream, &c2);
        prop_assert_eq!(&one, &two);
        prop_assert!(one.0.starts_with(&framed(&ms)));
    }

    #[test]
    fn arbitrary_bytes_frame_the_same_whatever_the_split(
        stream in prop::collection::vec(any::<u8>(), 0..2000),
        c1 in cuts(),
        c2 in cuts(),
    ) {
        prop_assert_eq!(feed(&stream, &c1), feed(&stream, &c2));
    }

    #[test]
    fn a_message_larger_than_the_buffer_comes_out_whole(
        len in MOST_READ..3 * MOST_READ,
        before in messages(),
        c in cuts(),
    ) {
        let mut row = vec![b'D'];
        row.extend_from_slice(&(len as u32 + 4).to_be_bytes());
        row.extend((0..len).map(|i| i as u8));
        let mut ms = before;
        ms.push(row);
        let (out, err) = feed(&ms.concat(), &c);
        prop_assert_eq!(err, None);
        prop_assert_eq!(out, framed(&ms));
    }

    #[test]
    fn error_responses_of_arbitrary_bytes_parse_or_fail_cleanly(
        body in prop::collection::vec(any::<u8>(), 0..300),
    ) {
        if let Ok(e) = parse_error(&body) {
            prop_assert!(!e.code.is_empty());
        }
    }

    #[test]
    fn error_responses_give_back_their_fields(
        fields in prop::collection::vec(
            (prop::sample::select(b"SVCMDHPWqx".as_slice()), "[^\u{0}]{0,20}"),
            0..10,
        ),
    ) {
        let mut body = Vec::new();
        for (k, v) in &fields {
            body.push(*k);
            body.extend_from_slice(v.as_bytes());
            body.push(0);
        }
        body.push(0);
        let last = |k: u8| fields.iter().rev().find(|f| f.0 == k).map(|f| f.1.clone());
        match parse_error(&body) {
            Ok(e) => {
                prop_assert_eq!(Some(e.code), last(b'C'));
                prop_assert_eq!(e.message, last(b'M').unwrap_or_default());
                prop_assert_eq!(e.detail, last(b'D'));
                prop_assert_eq!(e.hint, last(b'H'));
            }
            Err(_) => prop_assert!(last(b'C').unwrap_or_default().is_empty()),
        }
    }

    #[test]
    fn command_tags_of_arbitrary_bytes_give_a_count(
        body in prop::collection::vec(any::<u8>(), 0..100),
    ) {
        let _ = tag_rows(&body);
    }

    #[test]
    fn command_tags_give_their_count(word in "[A-Z]{1,10}", oid in 0u32..3, n: u64) {
        let tag = if word == "INSERT" {
            format!("{word} {oid} {n}\0")
        } else {
            format!("{word} {n}\0")
        };
        prop_assert_eq!(tag_rows(tag.as_bytes()), n);
    }

    #[test]
    fn body_fields_read_from_arbitrary_bytes_fail_cleanly(
        body in prop::collection::vec(any::<u8>(), 0..64),
        reads in prop::collection::vec(0u8..3, 0..20),
    ) {
        let mut b = Body(&body);
        for r in reads {
            let before = b.0.len();
            let ok = match r {
                0 => b.i16().is_ok(),
                1 => b.i32().is_ok(),
                _ => b.cstr().is_ok(),
            };
            prop_assert!(b.0.len() <= before);
            prop_assert!(ok || b.0.len() == before, "a failed read consumed bytes");
        }
    }
}

/// Bug: a length below 4 was read as 4, so that `Z` with length 0 was a
/// ReadyForQuery and the answer ended there, on garbage.
#[test]
fn a_length_below_four_is_refused_not_read_as_an_empty_message() {
    for len in 0u32..4 {
        let mut r = ReadBuf::new();
        r.buf[..5].copy_from_slice(&[b'Z', 0, 0, 0, len as u8]);
        r.end = 5;
        assert!(matches!(r.next(), Err(WireError::Protocol(_))), "{len}");
    }
}

/// Bug: the buffer grew at once to the next power of two of whatever
/// length a header claimed: a DataRow of 2^31 - 1 bytes, then silence,
/// made it allocate (and zero) 2 GiB.
#[test]
fn a_long_length_is_not_allocated_before_its_bytes_arrive() {
    let mut r = ReadBuf::new();
    r.buf[..5].copy_from_slice(&[b'D', 0x7f, 0xff, 0xff, 0xff]);
    r.end = 5;
    assert!(
        matches!(r.next(), Ok(None)),
        "a long DataRow may be that long"
    );
    r.make_room();
    assert!(r.buf.len() <= MOST_READ, "{}", r.buf.len());
}

/// Every type at every interesting length: accepted as far as the header
/// goes exactly when the protocol allows that length for it, refused at
/// once (before its body) otherwise.
#[test]
fn headers_are_refused_at_once_when_their_type_or_length_is_not_the_protocol() {
    let lengths = [0u32, 3, 4, 5, 6, 12, 30_000, 30_001, 1 << 31, u32::MAX];
    for tag in 0..=255u8 {
        for len in lengths {
            let mut r = ReadBuf::new();
            r.buf[0] = tag;
            r.buf[1..5].copy_from_slice(&len.to_be_bytes());
            r.end = 5;
            let allowed =
                kind(tag).is_some_and(|(_, least, most)| (least..=most).contains(&(len as usize)));
            let got = r.next();
            if allowed {
                assert!(got.is_ok(), "{} of {len}", describe(tag));
            } else {
                let Err(WireError::Protocol(why)) = got else {
                    panic!("{} of {len} is taken", describe(tag));
                };
                assert!(!why.is_empty());
            }
        }
    }
}

/// Bug: a CommandComplete without its NUL, or with one inside, was taken
/// (the count read from whatever text there was).
#[test]
fn a_command_complete_that_is_not_one_string_is_refused() {
    for body in [&b"UPDATE 1"[..], b"UPDATE\x001\x00", b"\x00\x00"] {
        let mut r = ReadBuf::new();
        r.buf[0] = b'C';
        r.buf[1..5].copy_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        r.buf[5..5 + body.len()].copy_from_slice(body);
        r.end = 5 + body.len();
        assert!(matches!(r.next(), Err(WireError::Protocol(_))), "{body:?}");
    }
}

/// A ReadyForQuery's status is I, T or E; anything else is not the
/// protocol.
#[test]
fn a_ready_for_query_with_another_status_is_refused() {
    for status in [b'I', b'T', b'E', b'X', 0] {
        let mut r = ReadBuf::new();
        r.buf[..6].copy_from_slice(&[b'Z', 0, 0, 0, 5, status]);
        r.end = 6;
        assert_eq!(r.next().is_ok(), b"ITE".contains(&status), "{status}");
    }
}

/// A body in the shape of an ErrorResponse, a RowDescription or a
/// ParameterDescription, give or take a byte: where the checks' corners
/// are.
fn near_body() -> impl Strategy<Value = (u8, Vec<u8>)> {
    let field = (
        prop::sample::select(b"SCMDHx".as_slice()),
        "[a-zA-Z0-9 ]{0,8}",
    );
    let column = ("[a-z]{0,6}", prop::collection::vec(any::<u8>(), 18));
    prop_oneof![
        prop::collection::vec(field, 0..6).prop_map(|fs| {
            let mut b = Vec::new();
            for (k, v) in fs {
                b.push(k);
                b.extend_from_slice(v.as_bytes());
                b.push(0);
            }
            b.push(0);
            (b'E', b)
        }),
        prop::collection::vec(column, 0..4).prop_map(|cs| {
            let mut b = (cs.len() as u16).to_be_bytes().to_vec();
            for (name, rest) in cs {
                b.extend_from_slice(name.as_bytes());
                b.push(0);
                b.extend_from_slice(&rest);
            }
            (b'T', b)
        }),
        (0u16..5).prop_map(|n| {
            let mut b = n.to_be_bytes().to_vec();
            b.extend(std::iter::repeat_n(0, 4 * n as usize));
            (b't', b)
        }),
    ]
    .prop_flat_map(|(tag, body)| {
        let len = body.len();
        (
            Just(tag),
            Just(body),
            0..len + 1,
            any::<u8>(),
            any::<bool>(),
        )
    })
    .prop_map(|(tag, mut body, at, byte, change)| {
        if change {
            if at < body.len() {
                body[at] = byte;
            } else {
                body.push(byte);
            }
        }
        (tag, body)
    })
}

proptest! {
    /// What framing lets through, the parsers of `query.rs` take: so a
    /// body cannot fail half-way through an answer.
    #[test]
    fn bodies_that_framing_takes_the_parsers_take(
        (tag, body) in prop_oneof![
            near_body(),
            (prop::sample::select(b"ETt".as_slice()), prop::collection::vec(any::<u8>(), 0..64)),
        ],
    ) {
        if check_body(tag, &body).is_ok() {
            match tag {
                b'E' => prop_assert!(parse_error(&body).is_ok()),
                b'T' => prop_assert!(row_names(&body).is_ok()),
                _ => prop_assert!(parameter_types(&body).is_ok()),
            }
        }
    }
}

/// Bodies that are not what their type says, each refused by framing.
#[test]
fn bodies_that_are_not_what_their_type_says_are_refused() {
    let cases: [(u8, &[u8]); 9] = [
        (b'E', b"SERROR\0C42000\0"),
        // A second, empty SQLSTATE: the parser keeps the last one.
        (b'E', b"CA\0C\0\0"),
        (b'E', b"SERROR\0Mno code\0\0"),
        (b'E', b"C42000\0\0x"),
        (b'N', b"C\xff\0\0"),
        (b'T', &[0, 1, b'a', 0, 1, 2]),
        (b'T', &[0xff, 0xff]),
        (b't', &[0, 1, 0, 0]),
        (b't', &[0, 0, 0, 0, 0, 23]),
    ];
    for (tag, body) in cases {
        assert!(check_body(tag, body).is_err(), "{} {body:?}", describe(tag));
    }
    assert!(
        check_body(b'N', b"SNOTICE\0Mno code\0\0").is_ok(),
        "a notice needs no SQLSTATE"
    );
    assert!(check_body(b'T', &[0, 0]).is_ok());
}

/// A statement of more than 32,767 parameters (PostgreSQL takes up to
/// 65,535): framing and the parser both read the count unsigned, so its
/// types are all there, not none.
#[test]
fn a_parameter_description_past_32767_keeps_every_type() {
    let n: u16 = 40_000;
    let mut body = n.to_be_bytes().to_vec();
    for i in 0..u32::from(n) {
        body.extend_from_slice(&(i % 3 + 20).to_be_bytes());
    }
    assert!(check_body(b't', &body).is_ok());
    let types = parameter_types(&body).expect("parses");
    assert_eq!(types.len(), 40_000);
    assert_eq!(&types[..4], &[20, 21, 22, 20]);
    // One type short: refused by both.
    let short = &body[..body.len() - 4];
    assert!(check_body(b't', short).is_err());
    assert!(parameter_types(short).is_err());
}

/// The table `kind` reads (it replaced a `match`) gives every byte what
/// the match gave: the same name and lengths for each of the protocol's
/// types, None for every other byte, those of 128 and up included.
#[test]
fn the_kinds_table_is_the_match_it_replaced() {
    fn matched(tag: u8) -> Option<(&'static str, usize, usize)> {
        Some(match tag {
            b'R' => ("Authentication", 8, SHORT_MESSAGE),
            b'K' => ("BackendKeyData", 12, 8 + 256),
            b'S' => ("ParameterStatus", 6, SHORT_MESSAGE),
            b'Z' => ("ReadyForQuery", 5, 5),
            b'T' => ("RowDescription", 6, LONG_MESSAGE),
            b'D' => ("DataRow", 6, LONG_MESSAGE),
            b'C' => ("CommandComplete", 5, SHORT_MESSAGE),
            b'E' => ("ErrorResponse", 5, LONG_MESSAGE),
            b'N' => ("NoticeResponse", 5, LONG_MESSAGE),
            b'A' => ("NotificationResponse", 10, LONG_MESSAGE),
            b'I' => ("EmptyQueryResponse", 4, 4),
            b'1' => ("ParseComplete", 4, 4),
            b'2' => ("BindComplete", 4, 4),
            b'3' => ("CloseComplete", 4, 4),
            b'n' => ("NoData", 4, 4),
            b's' => ("PortalSuspended", 4, 4),
            b't' => ("ParameterDescription", 6, 6 + 4 * 65_535),
            b'G' => ("CopyInResponse", 7, SHORT_MESSAGE),
            b'H' => ("CopyOutResponse", 7, SHORT_MESSAGE),
            b'W' => ("CopyBothResponse", 7, SHORT_MESSAGE),
            b'd' => ("CopyData", 4, LONG_MESSAGE),
            b'c' => ("CopyDone", 4, 4),
            b'V' => ("FunctionCallResponse", 8, LONG_MESSAGE),
            b'v' => ("NegotiateProtocolVersion", 12, SHORT_MESSAGE),
            _ => return None,
        })
    }
    for tag in 0..=255u8 {
        assert_eq!(kind(tag), matched(tag), "{tag:#04x}");
    }
    let known: Vec<u8> = (0..=255u8).filter(|&t| kind(t).is_some()).collect();
    let mut tags = TAGS.to_vec();
    tags.sort_unstable();
    assert_eq!(known, tags);
}

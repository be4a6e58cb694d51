//! Writing parameters as the statement's declared types want them.

use bytes::BytesMut;
use postgres_protocol::IsNull;

/// Type OIDs the driver can encode parameters for.
pub(super) const INT2: u32 = 21;
pub(super) const INT4: u32 = 23;
pub(super) const INT8: u32 = 20;
pub(super) const TEXT: u32 = 25;
pub(super) const VARCHAR: u32 = 1043;
pub(super) const BPCHAR: u32 = 1042;
pub(super) const NAME: u32 = 19;
pub(super) const UNKNOWN: u32 = 705;

/// A parameter of a unit, as the operation has it; encoded as the
/// statement's declared type says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param<'a> {
    Int(i64),
    Text(&'a str),
}

/// Whether a parameter of type `oid` can be encoded.
pub fn type_supported(oid: u32) -> bool {
    matches!(
        oid,
        INT2 | INT4 | INT8 | TEXT | VARCHAR | BPCHAR | NAME | UNKNOWN
    )
}

/// Writes `p` in binary as type `oid` wants it.
pub fn encode_param(
    p: Param<'_>,
    oid: u32,
    buf: &mut BytesMut,
) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
    use bytes::BufMut;
    match (p, oid) {
        (Param::Int(v), INT2) => buf.put_i16(i16::try_from(v)?),
        (Param::Int(v), INT4) => buf.put_i32(i32::try_from(v)?),
        (Param::Int(v), INT8) => buf.put_i64(v),
        (Param::Text(s), TEXT | VARCHAR | BPCHAR | NAME | UNKNOWN) => {
            buf.extend_from_slice(s.as_bytes())
        }
        (p, oid) => return Err(format!("cannot send {p:?} as a value of type {oid}").into()),
    }
    Ok(IsNull::No)
}

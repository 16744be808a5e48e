//! The HyperLogLog value (Redis's `hyperloglog.c` format), kept as the bytes of a string so that
//! `GET`, `SET`, `DUMP` and `APPEND` see what they see on Redis.
//!
//! Written from the documentation (<https://redis.io/docs/data-types/probabilistic/hyperloglogs/>,
//! <https://redis.io/commands/pfadd/>, <https://redis.io/commands/pfdebug/>), the format described
//! in antirez's "Redis new data structure: the HyperLogLog" (<http://antirez.com/news/75>), the
//! papers (Flajolet et al., "HyperLogLog: the analysis of a near-optimal cardinality estimation
//! algorithm", 2007; Ertl, "New cardinality estimation algorithms for HyperLogLog sketches",
//! arXiv:1702.01284, 2017, whose improved raw estimator Redis 7.0 uses) and Austin Appleby's
//! MurmurHash64A, and checked byte for byte against redis-server 7.0:
//!
//! * a 16-byte header: `HYLL`, the encoding (0 dense, 1 sparse), three zero bytes, and the cached
//!   cardinality (8 bytes little-endian; the top bit of the last one set when it is stale);
//! * 16,384 registers (the element's MurmurHash64A with seed `0xadc83b19`: its low 14 bits pick the
//!   register, the number of trailing zeros of the rest plus one, at most 51, is the candidate);
//! * dense: 6 bits a register, least significant bits first, 12,288 bytes;
//! * sparse: runs — `00xxxxxx` (1..64 zero registers), `01xxxxxx yyyyyyyy` (1..16,384 zero
//!   registers), `1vvvvvxx` (1..4 registers of value 1..32). A new key is sparse; it turns dense
//!   when a register needs a value above 32 or the value would grow past
//!   `hll-sparse-max-bytes` (3,000). A register is set by splitting the run that holds it and then
//!   merging equal neighbouring value runs around it, so the bytes follow the history of adds as
//!   Redis's do.

/// The number of registers (2^14).
pub(crate) const REGISTERS: usize = 1 << P;
const P: u32 = 14;
/// The bits of the hash left for the run of zeros.
const Q: u32 = 64 - P;
/// The header's size.
pub(crate) const HDR: usize = 16;
/// A dense value's size: the header and 16,384 registers of 6 bits.
pub(crate) const DENSE_SIZE: usize = HDR + (REGISTERS * 6).div_ceil(8);
pub(crate) const DENSE: u8 = 0;
pub(crate) const SPARSE: u8 = 1;
/// `hll-sparse-max-bytes`'s default (header included).
pub(crate) const SPARSE_MAX_BYTES: usize = 3000;
const VAL_MAX_VALUE: u8 = 32;
const VAL_MAX_LEN: usize = 4;
const ZERO_MAX_LEN: usize = 64;
const SEED: u64 = 0xadc8_3b19;

/// The value is not a well-formed HyperLogLog (Redis's `INVALIDOBJ`).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Corrupt;

/// MurmurHash64A (Austin Appleby, public domain), reading blocks little-endian as Redis does.
pub(crate) fn murmur64a(data: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (data.len() as u64).wrapping_mul(M);
    let mut blocks = data.chunks_exact(8);
    for block in &mut blocks {
        let mut k = u64::from_le_bytes(block.try_into().unwrap_or([0; 8]));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        for (i, b) in tail.iter().enumerate() {
            h ^= u64::from(*b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element falls in and its candidate value (1..=51).
pub(crate) fn register_of(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element, SEED);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// Whether `bytes` passes Redis's checks for a HyperLogLog string (magic, encoding, and a dense
/// value's length); a sparse value's runs are checked when read.
pub(crate) fn is_hll(bytes: &[u8]) -> bool {
    bytes.len() >= HDR
        && &bytes[..4] == b"HYLL"
        && bytes[4] <= SPARSE
        && (bytes[4] != DENSE || bytes.len() == DENSE_SIZE)
}

/// An empty HyperLogLog, sparse as Redis makes it: one run of 16,384 zero registers.
pub(crate) fn new_sparse() -> Vec<u8> {
    let mut v = header(SPARSE);
    push_zeros(&mut v, REGISTERS);
    v
}

fn header(encoding: u8) -> Vec<u8> {
    let mut v = Vec::with_capacity(DENSE_SIZE);
    v.extend_from_slice(b"HYLL");
    v.push(encoding);
    v.extend_from_slice(&[0; 11]);
    v
}

/// The cached cardinality, if valid.
pub(crate) fn cached(bytes: &[u8]) -> Option<u64> {
    if bytes[15] & 0x80 != 0 {
        return None;
    }
    Some(u64::from_le_bytes(bytes[8..16].try_into().unwrap_or([0; 8])))
}

pub(crate) fn set_cache(bytes: &mut [u8], card: u64) {
    bytes[8..16].copy_from_slice(&card.to_le_bytes());
}

pub(crate) fn invalidate_cache(bytes: &mut [u8]) {
    bytes[15] |= 0x80;
}

fn dense_get(regs: &[u8], i: usize) -> u8 {
    let bit = i * 6;
    let (byte, shift) = (bit / 8, bit % 8);
    let lo = regs[byte] >> shift;
    let hi = if shift > 2 { regs[byte + 1] << (8 - shift) } else { 0 };
    (lo | hi) & 63
}

fn dense_set(regs: &mut [u8], i: usize, v: u8) {
    let bit = i * 6;
    let (byte, shift) = (bit / 8, bit % 8);
    regs[byte] &= !(63u8 << shift);
    regs[byte] |= v << shift;
    if shift > 2 {
        regs[byte + 1] &= !(63u8 >> (8 - shift));
        regs[byte + 1] |= v >> (8 - shift);
    }
}

/// A sparse run: its length in registers, its value (0 for the zero runs), its size in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    len: usize,
    value: u8,
    size: usize,
}

/// The run at `p` (a long zero run cut short reads its missing byte as 0, as Redis reads the
/// string's terminator).
fn run_at(b: &[u8], p: usize) -> Run {
    let op = b[p];
    if op & 0x80 != 0 {
        Run {
            len: usize::from(op & 3) + 1,
            value: ((op >> 2) & 0x1f) + 1,
            size: 1,
        }
    } else if op & 0x40 != 0 {
        let low = b.get(p + 1).copied().unwrap_or(0);
        Run {
            len: ((usize::from(op & 0x3f) << 8) | usize::from(low)) + 1,
            value: 0,
            size: 2,
        }
    } else {
        Run {
            len: usize::from(op & 0x3f) + 1,
            value: 0,
            size: 1,
        }
    }
}

fn val_op(value: u8, len: usize) -> u8 {
    0x80 | ((value - 1) << 2) | (len as u8 - 1)
}

fn push_zeros(out: &mut Vec<u8>, len: usize) {
    if len <= ZERO_MAX_LEN {
        out.push(len as u8 - 1);
    } else {
        out.push(0x40 | ((len - 1) >> 8) as u8);
        out.push(((len - 1) & 0xff) as u8);
    }
}

/// The registers of a HyperLogLog that passed [`is_hll`].
pub(crate) fn registers(bytes: &[u8]) -> Result<Vec<u8>, Corrupt> {
    let mut regs = vec![0u8; REGISTERS];
    max_into(bytes, &mut regs)?;
    Ok(regs)
}

/// Raises each of `regs` (16,384) to the register of a HyperLogLog that passed [`is_hll`].
pub(crate) fn max_into(bytes: &[u8], regs: &mut [u8]) -> Result<(), Corrupt> {
    if bytes[4] == DENSE {
        // Three bytes hold four registers, least significant bits first.
        for (b, r) in bytes[HDR..].chunks_exact(3).zip(regs.chunks_exact_mut(4)) {
            let four = [
                b[0] & 63,
                (b[0] >> 6) | ((b[1] & 15) << 2),
                (b[1] >> 4) | ((b[2] & 3) << 4),
                b[2] >> 2,
            ];
            for (r, v) in r.iter_mut().zip(four) {
                *r = (*r).max(v);
            }
        }
        return Ok(());
    }
    let mut p = HDR;
    let mut i = 0usize;
    while p < bytes.len() {
        let run = run_at(bytes, p);
        if run.value > 0 {
            if i + run.len > REGISTERS {
                return Err(Corrupt);
            }
            for r in &mut regs[i..i + run.len] {
                *r = (*r).max(run.value);
            }
        }
        i += run.len;
        if i > REGISTERS {
            return Err(Corrupt);
        }
        p += run.size;
    }
    if i != REGISTERS {
        return Err(Corrupt);
    }
    Ok(())
}

/// Makes a sparse value dense (the header, cache included, is kept).
pub(crate) fn to_dense(bytes: &mut Vec<u8>) -> Result<(), Corrupt> {
    let regs = registers(bytes)?;
    let mut dense = bytes[..HDR].to_vec();
    dense[4] = DENSE;
    dense.resize(DENSE_SIZE, 0);
    for (i, r) in regs.iter().enumerate() {
        if *r != 0 {
            dense_set(&mut dense[HDR..], i, *r);
        }
    }
    *bytes = dense;
    Ok(())
}

/// Raises register `index` to `value`: whether it changed.
pub(crate) fn set_register(bytes: &mut Vec<u8>, index: usize, value: u8) -> Result<bool, Corrupt> {
    if bytes[4] == DENSE {
        let regs = &mut bytes[HDR..];
        if dense_get(regs, index) >= value {
            return Ok(false);
        }
        dense_set(regs, index, value);
        return Ok(true);
    }
    match sparse_set(bytes, index, value)? {
        Some(changed) => Ok(changed),
        None => {
            to_dense(bytes)?;
            let regs = &mut bytes[HDR..];
            let changed = dense_get(regs, index) < value;
            if changed {
                dense_set(regs, index, value);
            }
            Ok(changed)
        }
    }
}

/// Adds an element: whether a register changed.
pub(crate) fn add(bytes: &mut Vec<u8>, element: &[u8]) -> Result<bool, Corrupt> {
    let (index, value) = register_of(element);
    set_register(bytes, index, value)
}

/// Sets a register of a sparse value in place: `Some(changed)`, or `None` when the value must
/// turn dense first.
fn sparse_set(bytes: &mut Vec<u8>, index: usize, value: u8) -> Result<Option<bool>, Corrupt> {
    if value > VAL_MAX_VALUE {
        return Ok(None);
    }
    // The run holding the register, and the one before it (where merging starts).
    let (mut p, mut first, mut prev) = (HDR, 0usize, None);
    let mut run = None;
    while p < bytes.len() {
        let r = run_at(bytes, p);
        if index < first + r.len {
            run = Some(r);
            break;
        }
        prev = Some(p);
        p += r.size;
        first += r.len;
    }
    let Some(run) = run else {
        return Err(Corrupt);
    };
    if run.value >= value && run.value > 0 {
        return Ok(Some(false));
    }
    if run.len == 1 && run.size == 1 {
        bytes[p] = val_op(value, 1);
    } else {
        let last = first + run.len - 1;
        let mut seq = Vec::with_capacity(5);
        let rest = |seq: &mut Vec<u8>, len: usize| {
            if run.value == 0 {
                push_zeros(seq, len);
            } else {
                seq.push(val_op(run.value, len));
            }
        };
        if index != first {
            rest(&mut seq, index - first);
        }
        seq.push(val_op(value, 1));
        if index != last {
            rest(&mut seq, last - index);
        }
        if seq.len() > run.size && bytes.len() + seq.len() - run.size > SPARSE_MAX_BYTES {
            return Ok(None);
        }
        // A two-byte run cut short by the string's end: Redis still counts two bytes replaced.
        let (before, seq_len) = (bytes.len(), seq.len());
        bytes.splice(p..(p + run.size).min(before), seq);
        if p + run.size > before {
            bytes.truncate(before + seq_len - run.size);
        }
    }
    // Merge equal neighbouring value runs, scanning at most five runs from the one before.
    let mut p = prev.unwrap_or(HDR);
    let mut budget = 5;
    while p < bytes.len() && budget > 0 {
        budget -= 1;
        let op = bytes[p];
        if op & 0x80 == 0 {
            p += if op & 0x40 != 0 { 2 } else { 1 };
            continue;
        }
        if let Some(&next) = bytes.get(p + 1) {
            if next & 0x80 != 0 {
                let (a, b) = (run_at(bytes, p), run_at(bytes, p + 1));
                if a.value == b.value && a.len + b.len <= VAL_MAX_LEN {
                    bytes[p + 1] = val_op(a.value, a.len + b.len);
                    bytes.remove(p);
                    continue;
                }
            }
        }
        p += 1;
    }
    Ok(Some(true))
}

/// The estimate for these registers (Ertl's improved raw estimator, as Redis 7.0).
pub(crate) fn estimate(regs: &[u8]) -> u64 {
    let mut histo = [0u32; 64];
    for r in regs {
        histo[usize::from(*r & 63)] += 1;
    }
    let m = REGISTERS as f64;
    let mut z = m * tau((m - f64::from(histo[Q as usize + 1])) / m);
    for j in (1..=Q as usize).rev() {
        z += f64::from(histo[j]);
        z *= 0.5;
    }
    z += m * sigma(f64::from(histo[0]) / m);
    const ALPHA_INF: f64 = 0.721_347_520_444_481_7; // 1 / (2 ln 2)
    (ALPHA_INF * m * m / z).round() as u64
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let (mut y, mut z) = (1.0, x);
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if before == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let (mut y, mut z) = (1.0, 1.0 - x);
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        z -= (1.0 - x) * (1.0 - x) * y;
        if before == z {
            return z / 3.0;
        }
    }
}

/// The cardinality of a value that passed [`is_hll`].
pub(crate) fn count(bytes: &[u8]) -> Result<u64, Corrupt> {
    Ok(estimate(&registers(bytes)?))
}

/// `PFDEBUG DECODE`'s text of a sparse value (`z:LEN`, `Z:LEN`, `v:VALUE,LEN`).
pub(crate) fn decode_sparse(bytes: &[u8]) -> String {
    let mut out = Vec::new();
    let mut p = HDR;
    while p < bytes.len() {
        let r = run_at(bytes, p);
        out.push(if r.value > 0 {
            format!("v:{},{}", r.value, r.len)
        } else if r.size == 2 {
            format!("Z:{}", r.len)
        } else {
            format!("z:{}", r.len)
        });
        p += r.size;
    }
    out.join(" ")
}

/// The registers of a dense value (`PFDEBUG GETREG`).
pub(crate) fn dense_registers(bytes: &[u8]) -> Vec<u8> {
    let mut regs = vec![0u8; REGISTERS];
    let _ = max_into(bytes, &mut regs);
    regs
}

/// `PFSELFTEST`: the dense register access, and sparse and dense values agreeing on registers
/// and counts while elements are added. `Err` names what failed.
pub(crate) fn self_test() -> Result<(), String> {
    let mut dense = vec![0u8; DENSE_SIZE - HDR];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut want = vec![0u8; REGISTERS];
    for _ in 0..20 {
        for (i, w) in want.iter_mut().enumerate() {
            let v = (next() & 63) as u8;
            dense_set(&mut dense, i, v);
            *w = v;
        }
        if (0..REGISTERS).any(|i| dense_get(&dense, i) != want[i]) {
            return Err("TESTFAILED Register error".into());
        }
        if dense.len() != DENSE_SIZE - HDR {
            return Err("TESTFAILED Register error".into());
        }
    }
    let mut sparse = new_sparse();
    let mut full = new_sparse();
    to_dense(&mut full).map_err(|_| "TESTFAILED sparse to dense".to_string())?;
    for i in 0..20_000u64 {
        let e = next().to_le_bytes();
        let a = add(&mut sparse, &e).map_err(|_| "TESTFAILED corrupted sparse".to_string())?;
        let b = add(&mut full, &e).map_err(|_| "TESTFAILED corrupted dense".to_string())?;
        if a != b || (i % 997 == 0 && count(&sparse) != count(&full)) {
            return Err(format!("TESTFAILED sparse and dense disagree after {i} adds"));
        }
    }
    let n = count(&full).map_err(|_| "TESTFAILED count".to_string())?;
    // 1.04 / sqrt(16384) is 0.8%; 5 standard errors.
    if n.abs_diff(20_000) > 800 {
        return Err(format!(
            "TESTFAILED Too big error. card:20000 abserr:{}",
            n.abs_diff(20_000)
        ));
    }
    Ok(())
}

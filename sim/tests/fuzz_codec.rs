//! Fuzzing the RESP codec on stable Rust (proptest): `decode_command` on random bytes and on
//! mutations of valid frames never panics, never consumes bytes it reports as incomplete, and
//! always makes progress or stops. Bounded: a fixed number of cases, well under ten seconds.

use bytes::BytesMut;
use lockstep_sim::redis::decode_command;
use proptest::prelude::*;

/// Decodes `input` until it needs more bytes or fails; panics only if the codec misbehaves.
fn drain(input: &[u8]) {
    let mut buf = BytesMut::from(input);
    // Each successful decode consumes at least one byte: the loop is bounded by the input length.
    for _ in 0..=input.len() {
        let before = buf.len();
        match decode_command(&mut buf) {
            Ok(Some(args)) => {
                assert!(buf.len() < before, "a decoded command consumed nothing");
                assert!(!args.is_empty());
            }
            Ok(None) => {
                // Nothing consumed beyond skipped empty/nil arrays.
                assert!(buf.len() <= before);
                return;
            }
            Err(message) => {
                assert!(message.starts_with("ERR Protocol error"), "{message}");
                return;
            }
        }
    }
    panic!("decoding did not stop");
}

/// A valid command frame of `args`.
fn frame(args: &[Vec<u8>]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend(format!("${}\r\n", arg.len()).bytes());
        out.extend(arg);
        out.extend(b"\r\n");
    }
    out
}

/// A mutation: flip, insert, delete or truncate at a position.
#[derive(Debug, Clone)]
enum Mutation {
    Set(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let interesting = prop_oneof![
        Just(b'*'),
        Just(b'$'),
        Just(b'-'),
        Just(b'\r'),
        Just(b'\n'),
        Just(b'9'),
        Just(b':'),
        Just(b'_'),
        any::<u8>()
    ];
    prop_oneof![
        (any::<usize>(), interesting.clone()).prop_map(|(i, b)| Mutation::Set(i, b)),
        (any::<usize>(), interesting).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<usize>().prop_map(Mutation::Delete),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    let n = bytes.len().max(1);
    match *m {
        Mutation::Set(i, b) if !bytes.is_empty() => bytes[i % n] = b,
        Mutation::Insert(i, b) => bytes.insert(i % (bytes.len() + 1), b),
        Mutation::Delete(i) if !bytes.is_empty() => {
            bytes.remove(i % n);
        }
        Mutation::Truncate(i) => bytes.truncate(i % (bytes.len() + 1)),
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(input in proptest::collection::vec(any::<u8>(), 0..256)) {
        drain(&input);
    }

    #[test]
    fn resp_shaped_noise_never_panics(
        input in proptest::collection::vec(
            prop_oneof![Just(b"*".to_vec()), Just(b"$".to_vec()), Just(b"\r\n".to_vec()),
                        Just(b"-1".to_vec()), Just(b"0".to_vec()), Just(b"3".to_vec()),
                        Just(b"99999999999999999999".to_vec()), Just(b"abc".to_vec()),
                        Just(b":".to_vec()), Just(b"+".to_vec()), Just(b"%".to_vec()),
                        Just(b"~".to_vec()), Just(b"|".to_vec())],
            0..40,
        )
    ) {
        drain(&input.concat());
    }

    #[test]
    fn mutated_valid_frames_never_panic(
        commands in proptest::collection::vec(
            proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..12), 1..5),
            1..4,
        ),
        mutations in proptest::collection::vec(mutation(), 0..6),
    ) {
        let mut bytes: Vec<u8> = commands.iter().flat_map(|c| frame(c)).collect();
        // Unmutated, every command decodes.
        let mut buf = BytesMut::from(&bytes[..]);
        for command in &commands {
            let decoded = decode_command(&mut buf).unwrap().unwrap();
            prop_assert_eq!(decoded.iter().map(|b| b.to_vec()).collect::<Vec<_>>(), command.clone());
        }
        for m in &mutations {
            apply(&mut bytes, m);
        }
        drain(&bytes);
    }
}

//! Bad input gets a typed error and nothing else: no panic, no unbounded allocation.

mod common;

use gpuprep::{Error, Limits, Unsupported};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

fn decode(bytes: &[u8]) -> gpuprep::Result<gpuprep::RgbImage> {
    gpuprep::decode_rgb(bytes, &Limits::default())
}

fn data(rel: &str) -> Vec<u8> {
    std::fs::read(common::manifest_dir().join("tests/data").join(rel)).expect("test file")
}

/// Decodes every file of `dir`, returning the ones that panicked.
fn panics_in(dir: &Path) -> Vec<String> {
    let mut panicked = Vec::new();
    for entry in std::fs::read_dir(dir).expect("folder") {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        if catch_unwind(AssertUnwindSafe(|| decode(&bytes))).is_err() {
            panicked.push(path.display().to_string());
        }
    }
    panicked
}

#[test]
fn no_malformed_file_panics() {
    let mut dirs = vec![common::manifest_dir().join("tests/data/malformed")];
    dirs.extend(common::shared_corpus().map(|c| c.join("malformed")));
    for dir in dirs {
        assert_eq!(panics_in(&dir), Vec::<String>::new());
    }
}

#[test]
fn unsupported_processes_are_named() {
    let cases = [
        (
            "conformance/ljt__testimgari.jpg",
            Unsupported::ArithmeticCoding,
        ),
        (
            "conformance/jsuite__lossless_huffman__2x2x8_grayscale.jpg",
            Unsupported::Lossless,
        ),
        (
            "conformance/jsuite__extended_huffman__8x8x12_grayscale_check.jpg",
            Unsupported::Precision(12),
        ),
    ];
    for (file, expected) in cases {
        match decode(&data(file)) {
            Err(Error::Unsupported(what)) => assert_eq!(what, expected, "{file}"),
            other => panic!("{file}: expected unsupported {expected}, got {other:?}"),
        }
    }
}

#[test]
fn unknown_formats_are_named_and_the_jpeg_decoder_refuses_others() {
    assert!(
        matches!(decode(b""), Err(Error::EmptyFile)),
        "an empty file says so"
    );
    for bytes in [&b"GIF"[..], b"hello, world"] {
        assert!(
            matches!(decode(bytes), Err(Error::UnknownFormat { .. })),
            "{bytes:?}"
        );
    }
    // A JPEG 2000 signature alone is a JPEG 2000 file that ends before its header.
    let jp2 = decode(b"\x00\x00\x00\x0cjP  \r\n\x87\n");
    assert!(matches!(jp2, Err(Error::Corrupt { .. })), "{:?}", jp2.err());
    let png = data("malformed/pillow__hopper.png");
    let err = gpuprep::jpeg::decode_coefficients(&png, &Limits::default()).unwrap_err();
    assert!(matches!(err, Error::NotJpeg(_)), "{err}");
}

#[test]
fn broken_files_of_other_formats_are_errors() {
    // Every 7th truncation and a flipped byte of each format: a typed error or an image, and
    // never a panic; the pixel limit holds before the pixels are allocated.
    for entry in std::fs::read_dir(common::manifest_dir().join("tests/data/formats")).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        for len in (0..bytes.len()).step_by(bytes.len() / 7 + 1) {
            let _ = catch_unwind(AssertUnwindSafe(|| decode(&bytes[..len])))
                .unwrap_or_else(|_| panic!("panic at length {len}"));
        }
        for at in (0..bytes.len()).step_by(101) {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0x55;
            let _ = catch_unwind(AssertUnwindSafe(|| decode(&flipped)))
                .unwrap_or_else(|_| panic!("panic with byte {at} flipped"));
        }
        let small = Limits {
            max_pixels: 157 * 123 - 1,
            ..Limits::default()
        };
        let err = gpuprep::decode_rgb(&bytes, &small).unwrap_err();
        assert!(
            matches!(
                err,
                Error::TooLarge {
                    width: 157,
                    height: 123,
                    ..
                }
            ),
            "{err}"
        );
    }
}

#[test]
fn every_truncation_of_a_photo_is_an_error_or_an_image() {
    let bytes = data("photos/mpl__grace_hopper.jpg");
    let whole = decode(&bytes).expect("the whole file decodes");
    for len in (0..bytes.len()).step_by(97) {
        match catch_unwind(AssertUnwindSafe(|| decode(&bytes[..len]))) {
            Err(_) => panic!("panic at length {len}"),
            // Cut inside the scan: Pillow calls that truncated, and so do we.
            Ok(Ok(image)) => panic!("length {len} decoded to {}x{}", image.width, image.height),
            Ok(Err(e)) => assert!(
                matches!(
                    e,
                    Error::Truncated(_) | Error::UnknownFormat { .. } | Error::EmptyFile
                ),
                "length {len}: {e}"
            ),
        }
    }
    assert_eq!(whole.width * whole.height * 3, whole.data.len());
}

#[test]
fn flipped_bytes_never_panic() {
    // A deterministic sweep of single-byte corruptions over a progressive and a baseline file.
    for file in [
        "conformance/jdec__mozilla__jpg-progressive.jpg",
        "conformance/jdec__mozilla__jpg-size-33x33.jpg",
    ] {
        let original = data(file);
        let step = (original.len() / 400).max(1);
        for pos in (2..original.len()).step_by(step) {
            for value in [0x00, 0xFF, original[pos] ^ 0x10] {
                let mut bytes = original.clone();
                bytes[pos] = value;
                let outcome = catch_unwind(AssertUnwindSafe(|| decode(&bytes)));
                assert!(
                    outcome.is_ok(),
                    "{file}: panic with byte {pos} = {value:#04x}"
                );
            }
        }
    }
}

#[test]
fn pixel_limit_is_checked_before_allocating() {
    // A 4-byte SOF can declare 65500x65500: the default limit refuses it up front.
    let mut bytes = data("conformance/jdec__mozilla__jpg-size-8x8.jpg");
    let sof = bytes
        .windows(2)
        .position(|w| w == [0xFF, 0xC0])
        .expect("SOF0");
    bytes[sof + 5..sof + 9].copy_from_slice(&[0xFF, 0xDC, 0xFF, 0xDC]);
    let err = decode(&bytes).unwrap_err();
    assert!(
        matches!(
            err,
            Error::TooLarge {
                width: 65500,
                height: 65500,
                ..
            }
        ),
        "{err}"
    );

    // 65535x65535, past libjpeg's largest side: still the pixel limit first, as Pillow's
    // DecompressionBombError comes first; with the limit raised, the side is refused by name.
    bytes[sof + 5..sof + 9].copy_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF]);
    assert!(matches!(decode(&bytes), Err(Error::TooLarge { .. })));
    let roomy = Limits {
        max_pixels: u64::MAX,
        ..Limits::default()
    };
    let err = gpuprep::jpeg::decode_coefficients(&bytes, &roomy).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Unsupported(gpuprep::Unsupported::Dimension(65535))
        ),
        "{err}"
    );

    let small = Limits {
        max_pixels: 63,
        ..Limits::default()
    };
    let err = gpuprep::decode_rgb(&data("conformance/jdec__mozilla__jpg-size-8x8.jpg"), &small)
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::TooLarge {
                width: 8,
                height: 8,
                limit: 63
            }
        ),
        "{err}"
    );
}

#[test]
fn scan_limit_stops_many_scan_files() {
    // A progressive file of 64 scans: within the default limit, refused under a lower one.
    let bytes = data("conformance/jsuite__progressive_huffman__32x32x8_grayscale_spectral_all.jpg");
    assert!(decode(&bytes).is_ok());
    let few = Limits {
        max_scans: 10,
        ..Limits::default()
    };
    let err = gpuprep::decode_rgb(&bytes, &few).unwrap_err();
    assert!(matches!(err, Error::TooManyScans { limit: 10 }), "{err}");
}

#[test]
fn marker_lengths_are_checked_against_the_file() {
    // Each segment's 16-bit length is checked against the bytes there before it is read, and
    // nothing is allocated from it: a length past the end is a truncation, one below the length
    // field itself is corruption.
    let original = data("conformance/jdec__mozilla__jpg-size-8x8.jpg");
    let dqt = original
        .windows(2)
        .position(|w| w == [0xFF, 0xDB])
        .expect("DQT");
    let with_length = |length: u16| {
        let mut bytes = original.clone();
        bytes[dqt + 2..dqt + 4].copy_from_slice(&length.to_be_bytes());
        bytes
    };
    let err = decode(&with_length(u16::MAX)).unwrap_err();
    assert!(matches!(err, Error::Truncated(_)), "{err}");
    let err = decode(&with_length(1)).unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    // The same segment cut off at its length field.
    let err = decode(&original[..dqt + 3]).unwrap_err();
    assert!(matches!(err, Error::Truncated(_)), "{err}");
    assert!(decode(&with_length(u16::from_be_bytes([
        original[dqt + 2],
        original[dqt + 3]
    ])))
    .is_ok());
}

/// JPEG 2000 goes through OpenJPEG: every truncation of a file, lossless or not, is an error or
/// an image, never a panic.
#[test]
fn every_truncation_of_a_jpeg_2000_file_is_an_error_or_an_image() {
    for name in [
        "formats/made__rgb.jp2",
        "formats/made__rgb_irreversible.j2k",
    ] {
        let bytes = data(name);
        assert!(decode(&bytes).is_ok(), "{name} whole");
        for len in (0..bytes.len()).step_by(61) {
            let result = catch_unwind(AssertUnwindSafe(|| decode(&bytes[..len])));
            assert!(result.is_ok(), "{name}: panic at length {len}");
        }
    }
}

//! Single-thread JPEG encoding speed: the CPU encoder's forward stages (colour, downsampling,
//! DCT, quantisation) and its Huffman coding, on each JPEG of a folder decoded and resized to
//! shorter side 320 (as `gpuprep shard --resize 320` encodes them).
//!
//! `cargo run --release --example encode_speed -- DIR [QUALITY] [REPEAT]`

use gpuprep::encode::{self, JpegOptions, Pixels};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .expect("usage: encode_speed DIR [QUALITY] [REPEAT]");
    let quality: u8 = args
        .next()
        .map_or(90, |q| q.parse().expect("QUALITY is 1 to 100"));
    let repeat: usize = args
        .next()
        .map_or(3, |r| r.parse().expect("REPEAT is a number"));
    let inputs = gpuprep::convert::expand_inputs(&[dir.into()]).expect("a folder of images");
    let limits = gpuprep::Limits::default();
    let transform = gpuprep::Transform {
        resize: Some(gpuprep::Resize::ShorterSide(320)),
        ..gpuprep::Transform::default()
    };
    let images: Vec<_> = inputs
        .iter()
        .filter_map(|p| {
            let bytes = std::fs::read(p).ok()?;
            gpuprep::preprocess(&bytes, &transform, &limits).ok()
        })
        .collect();
    let options = JpegOptions {
        quality,
        ..JpegOptions::default()
    };
    let pixels: Vec<Pixels> = images
        .iter()
        .map(|t| {
            let gpuprep::TensorData::U8(data) = &t.data else {
                panic!("8-bit output")
            };
            let [height, width, channels] = t.shape;
            Pixels {
                width,
                height,
                channels,
                data,
            }
        })
        .collect();
    let best = |f: &dyn Fn(&Pixels)| {
        (0..repeat)
            .map(|_| {
                let start = Instant::now();
                pixels.iter().for_each(f);
                start.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    let forward = best(&|p| {
        encode::forward_stages(p, &options).expect("encodes");
    });
    let coefficients: Vec<_> = pixels
        .iter()
        .map(|p| encode::forward_stages(p, &options).expect("encodes"))
        .collect();
    let huffman = (0..repeat)
        .map(|_| {
            let start = Instant::now();
            for c in &coefficients {
                encode::write(c, &options, None).expect("writes");
            }
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min);
    let n = pixels.len() as f64;
    let megapixels: f64 = pixels
        .iter()
        .map(|p| (p.width * p.height) as f64)
        .sum::<f64>()
        / 1e6;
    println!(
        "{} images, {megapixels:.1} MP: forward stages {:.3} ms an image ({:.0} MP/s), Huffman \
         coding {:.3} ms ({:.0} MP/s)",
        pixels.len(),
        forward / n * 1e3,
        megapixels / forward,
        huffman / n * 1e3,
        megapixels / huffman
    );
}

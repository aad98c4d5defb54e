// Stage 5: ColorJitter's brightness, contrast, saturation and hue in the drawn order, then
// RandomGrayscale, on the cropped, flipped pixels stage 4 wrote (RGB in a word's low bytes), in
// place. Mirror of src/reference/adjust.rs: Pillow's ImageEnhance blends with a degenerate image
// in ImagingBlend's float32 arithmetic, and the hue goes through Pillow's HSV conversions, looked
// up in tables of every input (src/plan/hsv.rs: their float and double arithmetic runs on the
// CPU). One workgroup per image, so that its lanes can sum the luma that contrast's grey is the
// mean of; each lane keeps to the same pixels throughout. Its workgroups are four times the other
// stages' (a dispatch still counts 64 invocations a job): an image's 50,176 pixels in 256 lanes.

// Mirrored by `AdjustJob` in src/gpu/jobs.rs.
struct Job {
    // Where the image's pixels start in `pixels`, and how many.
    pixels_base: u32,
    pixels: u32,
    // Adjustments in `kinds` / `factors`, and 1 to turn grey after them.
    adjustments: u32,
    grayscale: u32,
    // BRIGHTNESS (blended with black), CONTRAST, SATURATION or HUE.
    kinds: vec4<u32>,
    // The factors; for the hue, the H channel's shift (an integer 0..=255).
    factors: vec4<f32>,
    // Always 0 (see `blend`).
    zero: u32,
}

@group(0) @binding(1) var<storage, read> jobs: array<Job>;
@group(0) @binding(2) var<storage, read_write> pixels: array<u32>;
// `HsvTables`: H | S << 8 for RGB i = r << 16 | g << 8 | b, two to a word; R | G << 8 | B << 16
// for HSV i = h << 16 | s << 8 | v.
@group(0) @binding(3) var<storage, read> to_hsv: array<u32>;
@group(0) @binding(4) var<storage, read> to_rgb: array<u32>;

const LANES: u32 = 256u;
// `Job::kinds`, as src/gpu/jobs.rs names them.
const BRIGHTNESS: u32 = 0u;
const CONTRAST: u32 = 1u;
const SATURATION: u32 = 2u;
const HUE: u32 = 3u;
var<workgroup> partial: array<u32, LANES>;

// Pillow's convert('L'): ITU-R 601-2 luma in 16-bit fixed point.
fn luma(pixel: u32) -> u32 {
    let r = pixel & 255u;
    let g = (pixel >> 8u) & 255u;
    let b = (pixel >> 16u) & 255u;
    return (r * 19595u + g * 38470u + b * 7471u + 0x8000u) >> 16u;
}

// ImagingBlend for one sample: in1 + alpha * (in2 - in1) in float32, truncated and clipped. Pillow
// rounds the product and the sum each; XOR-ing the product's bits with a zero the compiler cannot
// see keeps it from fusing the two into one multiply-add, which rounds once.
fn blend(in1: u32, in2: u32, alpha: f32, zero: u32) -> u32 {
    let product = alpha * f32(i32(in2) - i32(in1));
    let kept = bitcast<f32>(bitcast<u32>(product) ^ zero);
    let value = f32(in1) + kept;
    return u32(clamp(value, 0.0, 255.0));
}

fn blend_pixel(pixel: u32, grey: vec3<u32>, alpha: f32, zero: u32) -> u32 {
    let r = blend(grey.x, pixel & 255u, alpha, zero);
    let g = blend(grey.y, (pixel >> 8u) & 255u, alpha, zero);
    let b = blend(grey.z, (pixel >> 16u) & 255u, alpha, zero);
    return r | (g << 8u) | (b << 16u);
}

// torchvision's adjust_hue: to HSV, the H channel shifted (wrapping), back to RGB.
fn shift_hue(pixel: u32, shift: u32) -> u32 {
    let r = pixel & 255u;
    let g = (pixel >> 8u) & 255u;
    let b = (pixel >> 16u) & 255u;
    let rgb = (r << 16u) | (g << 8u) | b;
    let hs = (to_hsv[rgb >> 1u] >> (16u * (rgb & 1u))) & 0xFFFFu;
    let h = ((hs & 255u) + shift) & 255u;
    let s = hs >> 8u;
    return to_rgb[(h << 16u) | (s << 8u) | max(r, max(g, b))];
}

// ImageEnhance.Contrast's grey: int(mean + 0.5) of the image's luma, as (2 sum + n) / (2 n) in
// integers (src/reference/adjust.rs says why that equals Python's double arithmetic), written
// without overflow as q + (2 r >= n) for sum = q n + r.
fn mean_luma(job: u32, lane: u32) -> u32 {
    let p = jobs[job];
    var sum = 0u;
    for (var i = lane; i < p.pixels; i += LANES) {
        sum += luma(pixels[p.pixels_base + i]);
    }
    partial[lane] = sum;
    workgroupBarrier();
    for (var step = LANES / 2u; step > 0u; step /= 2u) {
        if lane < step {
            partial[lane] += partial[lane + step];
        }
        workgroupBarrier();
    }
    let total = partial[0];
    // Every lane has read the total before `partial` is written again.
    workgroupBarrier();
    let n = max(p.pixels, 1u);
    return total / n + select(0u, 1u, 2u * (total % n) >= n);
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    // A workgroup per job: the index is the same for every lane, as the barriers need.
    let job = group.x + group.y * groups.x;
    if job + 1u >= arrayLength(&starts) {
        return;
    }
    let p = jobs[job];
    for (var k = 0u; k < p.adjustments; k++) {
        let kind = p.kinds[k];
        let alpha = p.factors[k];
        var mean = 0u;
        if kind == CONTRAST {
            mean = mean_luma(job, lane);
        }
        for (var i = lane; i < p.pixels; i += LANES) {
            let at = p.pixels_base + i;
            let pixel = pixels[at];
            if kind == HUE {
                pixels[at] = shift_hue(pixel, u32(alpha));
                continue;
            }
            var grey = vec3<u32>(0u);
            if kind == CONTRAST {
                grey = vec3<u32>(mean);
            } else if kind == SATURATION {
                grey = vec3<u32>(luma(pixel));
            }
            pixels[at] = blend_pixel(pixel, grey, alpha, p.zero);
        }
    }
    if p.grayscale == 1u {
        for (var i = lane; i < p.pixels; i += LANES) {
            let at = p.pixels_base + i;
            pixels[at] = luma(pixels[at]) * 0x010101u;
        }
    }
}

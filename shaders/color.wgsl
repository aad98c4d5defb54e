// Stage 2: chroma upsampling (libjpeg "fancy" filters and box fallbacks) and colour
// conversion to RGB, one invocation per four pixels of a row. Mirror of src/reference/upsample.rs
// (`upsample_at`) and src/reference/color.rs. Output pixels are RGBX words (X = 255), stored
// in the image's EXIF orientation when the transform asks for it (src/reference/orient.rs). A
// job is one image.

// Mirrored by `ColorJob` in src/gpu/jobs.rs.
struct Job {
    width: u32,
    height: u32,
    // Where the image's pixels start in the `rgbx` arena.
    rgbx_base: u32,
    // 0 grayscale, 1 YCbCr, 2 RGB, 3 CMYK, 4 YCCK (the order of `ColorSpace`).
    color_space: u32,
    // Per component: first word in `samples`, bytes per plane row, real samples per row, real
    // rows.
    planes: array<vec4<u32>, 4>,
    // Per component: method (0 full, 1 h2v1 fancy, 2 h1v2 fancy, 3 h2v2 fancy, 4 box) and the
    // box repeat factors.
    methods: array<vec4<u32>, 4>,
    // 1 as decoded; 2 to 8 the EXIF orientations.
    orientation: u32,
}

@group(0) @binding(1) var<storage, read> jobs: array<Job>;
// The IDCT's planes, four samples a word.
@group(0) @binding(2) var<storage, read> samples: array<u32>;
// The decoded images, one RGBX word per pixel, through two binding windows of the same buffer
// (one binding may be smaller than the arena); rgbx1 starts where rgbx0 ends.
@group(0) @binding(3) var<storage, read_write> rgbx0: array<u32>;
@group(0) @binding(4) var<storage, read_write> rgbx1: array<u32>;

// This invocation's job, and what it reads of it at every sample (loaded once).
var<private> job: u32;
var<private> job_planes: array<vec4<u32>, 4>;
var<private> job_methods: array<vec4<u32>, 4>;

fn store_rgbx(i: u32, pixel: u32) {
    let window = arrayLength(&rgbx0);
    if i < window {
        rgbx0[i] = pixel;
    } else {
        rgbx1[i - window] = pixel;
    }
}

const FIX_1_40200: i32 = 91881;
const FIX_1_77200: i32 = 116130;
const FIX_0_71414: i32 = 46802;
const FIX_0_34414: i32 = 22554;
const ONE_HALF: i32 = 32768;

// Sample (x, y) of component c, both indices clamped to the real samples.
fn at(c: u32, x: i32, y: i32) -> i32 {
    let plane = job_planes[c];
    let cx = u32(clamp(x, 0, i32(plane.z) - 1));
    let cy = u32(clamp(y, 0, i32(plane.w) - 1));
    let byte = cy * plane.y + cx;
    let word = samples[plane.x + byte / 4u];
    return i32((word >> (8u * (byte % 4u))) & 255u);
}

// The full-resolution sample of component c at (x, y): `upsample_at`.
fn upsample_at(c: u32, x: u32, y: u32) -> i32 {
    let method = job_methods[c];
    let i = i32(x / 2u);
    let j = i32(y / 2u);
    let xi = i32(x);
    let yi = i32(y);
    switch method.x {
        case 1u: {
            if x % 2u == 0u {
                return (3 * at(c, i, yi) + at(c, i - 1, yi) + 1) >> 2u;
            }
            return (3 * at(c, i, yi) + at(c, i + 1, yi) + 2) >> 2u;
        }
        case 2u: {
            if y % 2u == 0u {
                return (3 * at(c, xi, j) + at(c, xi, j - 1) + 1) >> 2u;
            }
            return (3 * at(c, xi, j) + at(c, xi, j + 1) + 2) >> 2u;
        }
        case 3u: {
            // Column sums over this row and its nearer neighbour row, kept unrounded.
            var near = j + 1;
            if y % 2u == 0u {
                near = j - 1;
            }
            let centre = 3 * at(c, i, j) + at(c, i, near);
            if x % 2u == 0u {
                let left = 3 * at(c, i - 1, j) + at(c, i - 1, near);
                return (3 * centre + left + 8) >> 4u;
            }
            let right = 3 * at(c, i + 1, j) + at(c, i + 1, near);
            return (3 * centre + right + 7) >> 4u;
        }
        case 4u: {
            return at(c, i32(x / method.y), i32(y / method.z));
        }
        default: {
            return at(c, xi, yi);
        }
    }
}

fn ycc_to_rgb(y: i32, cb: i32, cr: i32) -> vec3<i32> {
    let cbc = cb - 128;
    let crc = cr - 128;
    let cr_r = (FIX_1_40200 * crc + ONE_HALF) >> 16u;
    let cb_b = (FIX_1_77200 * cbc + ONE_HALF) >> 16u;
    let g_term = (-FIX_0_34414 * cbc + ONE_HALF - FIX_0_71414 * crc) >> 16u;
    return clamp(vec3<i32>(y + cr_r, y + g_term, y + cb_b), vec3<i32>(0), vec3<i32>(255));
}

// Pillow's MULDIV255(a, b).
fn muldiv255(a: i32, b: i32) -> i32 {
    let t = a * b + 128;
    return ((t >> 8u) + t) >> 8u;
}

// libjpeg's CMYK bytes → RGB as Pillow converts them ("CMYK;I", then cmyk2rgb).
fn cmyk_to_rgb(ink: vec3<i32>, k: i32) -> vec3<i32> {
    let inverted = vec3<i32>(255) - ink;
    let out = vec3<i32>(
        k - muldiv255(inverted.x, k),
        k - muldiv255(inverted.y, k),
        k - muldiv255(inverted.z, k),
    );
    return clamp(out, vec3<i32>(0), vec3<i32>(255));
}

// Index of pixel (x, y) in the oriented image: `oriented_index`.
fn oriented_index(x: u32, y: u32, width: u32, height: u32, orientation: u32) -> u32 {
    let right = width - 1u - x;
    let bottom = height - 1u - y;
    // (x, y, width) in the oriented image.
    var to = vec3<u32>(x, y, width);
    switch orientation {
        case 2u: { to = vec3<u32>(right, y, width); }
        case 3u: { to = vec3<u32>(right, bottom, width); }
        case 4u: { to = vec3<u32>(x, bottom, width); }
        case 5u: { to = vec3<u32>(y, x, height); }
        case 6u: { to = vec3<u32>(bottom, x, height); }
        case 7u: { to = vec3<u32>(bottom, right, height); }
        case 8u: { to = vec3<u32>(y, right, height); }
        default: {}
    }
    return to.y * to.z + to.x;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let global = invocation(id, groups);
    job = find_job(global);
    if job >= arrayLength(&jobs) {
        return;
    }
    let width = jobs[job].width;
    let height = jobs[job].height;
    let color_space = jobs[job].color_space;
    let orientation = jobs[job].orientation;
    let base = jobs[job].rgbx_base;
    job_planes = jobs[job].planes;
    job_methods = jobs[job].methods;
    let index = global - starts[job];
    let groups_per_row = (width + 3u) / 4u;
    let y = index / groups_per_row;
    let x0 = (index % groups_per_row) * 4u;
    for (var x = x0; x < min(x0 + 4u, width); x++) {
        let at = oriented_index(x, y, width, height, orientation);
        store_rgbx(base + at, rgbx_at(x, y, color_space));
    }
}

// The RGBX word of pixel (x, y).
fn rgbx_at(x: u32, y: u32, color_space: u32) -> u32 {
    let s0 = upsample_at(0u, x, y);
    var rgb = vec3<i32>(s0);
    switch color_space {
        case 1u: {
            rgb = ycc_to_rgb(s0, upsample_at(1u, x, y), upsample_at(2u, x, y));
        }
        case 2u: {
            rgb = vec3<i32>(s0, upsample_at(1u, x, y), upsample_at(2u, x, y));
        }
        case 3u: {
            let ink = vec3<i32>(s0, upsample_at(1u, x, y), upsample_at(2u, x, y));
            rgb = cmyk_to_rgb(ink, upsample_at(3u, x, y));
        }
        case 4u: {
            let k = upsample_at(3u, x, y);
            let inverted = vec3<i32>(255) - ycc_to_rgb(s0, upsample_at(1u, x, y), upsample_at(2u, x, y));
            rgb = cmyk_to_rgb(inverted, k);
        }
        default: {}
    }
    let p = vec3<u32>(rgb);
    return p.x | (p.y << 8u) | (p.z << 16u) | (255u << 24u);
}

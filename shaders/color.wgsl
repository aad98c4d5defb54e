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
    // Per component, its upsampling's two axes (`Upsampling::axes`): output samples per source
    // sample horizontally and vertically, then whether each axis is a fancy (triangle) filter.
    axes: array<vec4<u32>, 4>,
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
var<private> job_axes: array<vec4<u32>, 4>;

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

// `i / repeat`. Repeats are 1, 2 or 4 (shifts: an integer division costs a GPU tens of
// instructions, six a pixel) or, with sampling factors of 3, 3.
fn divided(i: u32, repeat: u32) -> u32 {
    if repeat == 3u {
        return i / 3u;
    }
    return i >> (repeat >> 1u);
}

// The two source samples output index `i` reads along one axis and their weights:
// vec4(source, neighbour, weight, the neighbour's weight). `taps` of the mirror.
fn taps(i: u32, repeat: u32, fancy: bool) -> vec4<i32> {
    let source = i32(divided(i, repeat));
    let near = select(source + 1, source - 1, i % 2u == 0u);
    return select(vec4<i32>(source, source, 1, 0), vec4<i32>(source, near, 3, 1), fancy);
}

// The full-resolution sample of component c at (x, y): `upsample_at`, one weighted sum for
// every method rather than a switch on it (a CPU adapter such as lavapipe runs every branch a
// vector of invocations may take, and five methods cost it five).
fn upsample_at(c: u32, x: u32, y: u32) -> i32 {
    let axes = job_axes[c];
    let fancy_h = axes.z != 0u;
    let fancy_v = axes.w != 0u;
    let h = taps(x, axes.x, fancy_h);
    let v = taps(y, axes.y, fancy_v);
    // A plain axis's second tap weighs nothing and is not read: the branches are the same for a
    // whole image, so a GPU takes one side of each (a CPU adapter reads what either would).
    var sum = h.z * at(c, h.x, v.x);
    if fancy_h {
        sum += h.w * at(c, h.y, v.x);
    }
    if fancy_v {
        var next_row = h.z * at(c, h.x, v.y);
        if fancy_h {
            next_row += h.w * at(c, h.y, v.y);
        }
        sum = v.z * sum + v.w * next_row;
    }
    // One fancy axis adds 1 at even and 2 at odd samples, two add 8 or 7 by column.
    let odd_x = i32(x % 2u);
    let odd_y = i32(y % 2u);
    var bias = select(0, 1 + odd_y, fancy_v);
    bias = select(bias, 1 + odd_x, fancy_h);
    bias = select(bias, 8 - odd_x, fancy_h && fancy_v);
    let shift = select(0u, 2u, fancy_h) + select(0u, 2u, fancy_v);
    return (sum + bias) >> shift;
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

// Pixels of a row an invocation: finding the invocation's job and loading it cost about as much
// as four pixels, so eight spread it thinner (src/gpu/packing.rs counts invocations with the
// same number).
const PIXELS_PER_INVOCATION: u32 = 8u;

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
    job_axes = jobs[job].axes;
    let index = global - starts[job];
    let groups_per_row = (width + PIXELS_PER_INVOCATION - 1u) / PIXELS_PER_INVOCATION;
    let y = index / groups_per_row;
    let x0 = (index % groups_per_row) * PIXELS_PER_INVOCATION;
    if is_fancy_420(color_space) {
        fancy_420_run(x0, y, width, height, orientation, base);
        return;
    }
    for (var x = x0; x < min(x0 + PIXELS_PER_INVOCATION, width); x++) {
        let at = oriented_index(x, y, width, height, orientation);
        store_rgbx(base + at, rgbx_at(x, y, color_space));
    }
}

// YCbCr with both chroma planes at half resolution each way and libjpeg's fancy (triangle)
// filter on both axes: most photos, and the case worth its own path.
fn is_fancy_420(color_space: u32) -> bool {
    let full = vec4<u32>(1u, 1u, 0u, 0u);
    let half = vec4<u32>(2u, 2u, 1u, 1u);
    return color_space == 1u && all(job_axes[0] == full) && all(job_axes[1] == half)
        && all(job_axes[2] == half);
}

// `upsample_at` of both chroma planes for the run of pixels x0.. of row y (x0 even), with each
// chroma column's vertical sum (3 × the near row + the far row) made once for the two output
// columns on either side that read it, rather than once for each of their four reads. Mirror of
// the reference's row path for h2v2: `column_sums_scalar`, then `fancy_row_scalar::<4>` over
// each window of three sums (src/reference/upsample.rs; `at`'s clamp is its padded ends).
fn fancy_420_run(x0: u32, y: u32, width: u32, height: u32, orientation: u32, base: u32) {
    let row = i32(y >> 1u);
    let far = select(row + 1, row - 1, y % 2u == 0u);
    // Source columns x0 / 2 − 1 … x0 / 2 + PIXELS_PER_INVOCATION / 2.
    let first = i32(x0 >> 1u) - 1;
    var cb: array<i32, 6>;
    var cr: array<i32, 6>;
    for (var k = 0; k < 6; k++) {
        let cx = first + k;
        cb[k] = 3 * at(1u, cx, row) + at(1u, cx, far);
        cr[k] = 3 * at(2u, cx, row) + at(2u, cx, far);
    }
    // Output column 2j (even) weighs source column j against j − 1, column 2j + 1 against j + 1:
    // 3 × this + that, + 8 even / 7 odd, >> 4.
    for (var pair = 0u; pair < PIXELS_PER_INVOCATION / 2u; pair++) {
        let j = i32(pair) + 1;
        let x = x0 + 2u * pair;
        if x >= width {
            break;
        }
        let even_cb = (3 * cb[j] + cb[j - 1] + 8) >> 4u;
        let even_cr = (3 * cr[j] + cr[j - 1] + 8) >> 4u;
        store_rgbx(base + oriented_index(x, y, width, height, orientation),
                   ycc_word(at(0u, i32(x), i32(y)), even_cb, even_cr));
        if x + 1u >= width {
            break;
        }
        let odd_cb = (3 * cb[j] + cb[j + 1] + 7) >> 4u;
        let odd_cr = (3 * cr[j] + cr[j + 1] + 7) >> 4u;
        store_rgbx(base + oriented_index(x + 1u, y, width, height, orientation),
                   ycc_word(at(0u, i32(x + 1u), i32(y)), odd_cb, odd_cr));
    }
}

fn ycc_word(y: i32, cb: i32, cr: i32) -> u32 {
    let p = vec3<u32>(ycc_to_rgb(y, cb, cr));
    return p.x | (p.y << 8u) | (p.z << 16u) | (255u << 24u);
}

// The RGBX word of pixel (x, y). Each component is upsampled once, and the conversions are
// selected rather than branched to (see `upsample_at`).
fn rgbx_at(x: u32, y: u32, color_space: u32) -> u32 {
    let s0 = upsample_at(0u, x, y);
    var s = vec4<i32>(s0, s0, s0, 0);
    if color_space != 0u {
        s.y = upsample_at(1u, x, y);
        s.z = upsample_at(2u, x, y);
    }
    let ycc = ycc_to_rgb(s.x, s.y, s.z);
    // Grayscale repeats its sample, RGB is as decoded.
    var rgb = select(s.xyz, ycc, color_space == 1u);
    if color_space >= 3u {
        // CMYK's inks as decoded; YCCK's are the inverted conversion of its YCC.
        let ink = select(s.xyz, vec3<i32>(255) - ycc, color_space == 4u);
        rgb = cmyk_to_rgb(ink, upsample_at(3u, x, y));
    }
    let p = vec3<u32>(rgb);
    return p.x | (p.y << 8u) | (p.z << 16u) | (255u << 24u);
}

// Prepended to every stage shader. One dispatch covers a whole batch: many jobs (an image, or
// one plane of an image), each a contiguous range of invocations. `starts[j]` is job j's first
// invocation, ascending; the last entry is the total.
@group(0) @binding(0) var<storage, read> starts: array<u32>;

// The linear invocation index of a 2-D dispatch grid (one dimension holds at most 65535
// workgroups of 64).
fn invocation(id: vec3<u32>, groups: vec3<u32>) -> u32 {
    return id.x + id.y * groups.x * 64u;
}

// The job that invocation `index` belongs to (the number of jobs when past the end): the last
// job whose start is at or before `index`, so empty jobs are skipped.
fn find_job(index: u32) -> u32 {
    let jobs = arrayLength(&starts) - 1u;
    if index >= starts[jobs] {
        return jobs;
    }
    var lo = 0u;
    var hi = jobs;
    // starts[lo] <= index < starts[hi]
    while hi - lo > 1u {
        let mid = (lo + hi) / 2u;
        if starts[mid] <= index {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

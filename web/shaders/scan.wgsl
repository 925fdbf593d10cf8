// Exclusive prefix sum in place over `data`, in blocks of 1024 elements (256 threads, 4 each): scan_blocks
// scans each block and writes its total to `sums`; once `sums` is scanned (the next level), scan_add adds each
// block's offset. The element count is sizes[level] (written by the host or by the setup pass).

@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@group(0) @binding(1) var<storage, read_write> sums: array<u32>;
@group(0) @binding(2) var<storage, read> sizes: array<u32>;
@group(0) @binding(3) var<uniform> level: vec4<u32>;  // x: index into sizes

var<workgroup> partial: array<u32, 256>;

@compute @workgroup_size(256)
fn scan_blocks(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let n = sizes[level.x];
  let base = wid.x * 1024u + lid * 4u;
  var v: array<u32, 4>;
  var total = 0u;
  for (var k = 0u; k < 4u; k++) {
    let idx = base + k;
    v[k] = select(0u, data[min(idx, n - 1u)], idx < n);
    total += v[k];
  }
  partial[lid] = total;
  workgroupBarrier();
  // Hillis-Steele inclusive scan of the 256 thread totals.
  for (var off = 1u; off < 256u; off = off << 1u) {
    var add = 0u;
    if (lid >= off) { add = partial[lid - off]; }
    workgroupBarrier();
    partial[lid] += add;
    workgroupBarrier();
  }
  var running = partial[lid] - total;
  for (var k = 0u; k < 4u; k++) {
    let idx = base + k;
    if (idx < n) { data[idx] = running; }
    running += v[k];
  }
  if (lid == 255u) { sums[wid.x] = partial[255]; }
}

@compute @workgroup_size(256)
fn scan_add(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let n = sizes[level.x];
  let offset = sums[wid.x];
  for (var k = 0u; k < 4u; k++) {
    let idx = wid.x * 1024u + lid * 4u + k;
    if (idx < n) { data[idx] += offset; }
  }
}

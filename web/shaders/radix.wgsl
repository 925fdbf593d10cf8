// One pass of the global stable LSD radix sort of the (tile, depth) keys (radixSortPairs in
// render/radix_sort.cpp): 8 bits at `pass.shift` of the low word (shift < 32) or the high word. Blocks of 1024
// keys (256 threads, 4 each). histogram: per block, the count of each digit, written digit-major
// (hist[digit * blocks + block]) so that one exclusive scan gives every block's first destination per digit.
// scatter: each block sorts its keys by the digit in shared memory, stably (eight 1-bit splits), and writes
// each key to its digit's destination plus its rank among the block's keys of that digit.

@group(0) @binding(0) var<storage, read> control: array<u32>;
@group(0) @binding(1) var<uniform> pass_info: vec4<u32>;  // x: shift (0..63)
@group(0) @binding(2) var<storage, read> src_hi: array<u32>;
@group(0) @binding(3) var<storage, read> src_lo: array<u32>;
@group(0) @binding(4) var<storage, read> src_val: array<u32>;
@group(0) @binding(5) var<storage, read_write> hist: array<u32>;
@group(0) @binding(6) var<storage, read_write> dst_hi: array<u32>;
@group(0) @binding(7) var<storage, read_write> dst_lo: array<u32>;
@group(0) @binding(8) var<storage, read_write> dst_val: array<u32>;

const BLOCK: u32 = 1024u;
var<workgroup> counts: array<atomic<u32>, 256>;
var<workgroup> digit_start: array<u32, 256>;
var<workgroup> order: array<u32, 1024>;      // local indices, being sorted by digit
var<workgroup> order_next: array<u32, 1024>;
var<workgroup> digits: array<u32, 1024>;     // digit of each local index (256: past the end)
var<workgroup> partial: array<u32, 256>;

fn digitOf(k: u32) -> u32 {
  let shift = pass_info.x;
  let word = select(src_hi[k], src_lo[k], shift < 32u);
  return (word >> (shift & 31u)) & 255u;
}

// Inclusive scan of partial[] over the workgroup; every thread must call it.
fn scan256(lid: u32) {
  for (var off = 1u; off < 256u; off = off << 1u) {
    var add = 0u;
    if (lid >= off) { add = partial[lid - off]; }
    workgroupBarrier();
    partial[lid] += add;
    workgroupBarrier();
  }
}

@compute @workgroup_size(256)
fn histogram(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let keys = control[1];
  let blocks = control[2];
  atomicStore(&counts[lid], 0u);
  workgroupBarrier();
  for (var j = 0u; j < 4u; j++) {
    let k = wid.x * BLOCK + lid * 4u + j;
    if (k < keys) { atomicAdd(&counts[digitOf(k)], 1u); }
  }
  workgroupBarrier();
  hist[lid * blocks + wid.x] = atomicLoad(&counts[lid]);
}

@compute @workgroup_size(256)
fn scatter(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let keys = control[1];
  let blocks = control[2];
  let base = wid.x * BLOCK;
  atomicStore(&counts[lid], 0u);
  workgroupBarrier();
  for (var j = 0u; j < 4u; j++) {
    let local = lid * 4u + j;
    let k = base + local;
    var d = 256u;  // past the end: sorts after every digit
    if (k < keys) {
      d = digitOf(k);
      atomicAdd(&counts[d], 1u);
    }
    digits[local] = d;
    order[local] = local;
  }
  workgroupBarrier();
  // Where each digit's keys start in the block's sorted order.
  let own = atomicLoad(&counts[lid]);
  partial[lid] = own;
  workgroupBarrier();
  scan256(lid);
  digit_start[lid] = partial[lid] - own;
  workgroupBarrier();
  // Eight stable 1-bit splits (bit 8 of an end marker's 256 keeps it after the rest: its low bits are 0).
  for (var bit = 0u; bit < 9u; bit++) {
    var flags: array<u32, 4>;
    var ones = 0u;
    for (var j = 0u; j < 4u; j++) {
      flags[j] = (digits[order[lid * 4u + j]] >> bit) & 1u;
      ones += flags[j];
    }
    partial[lid] = ones;
    workgroupBarrier();
    scan256(lid);
    let total_ones = partial[255];
    let ones_before = partial[lid] - ones;
    let zeros_total = BLOCK - total_ones;
    var o = ones_before;
    for (var j = 0u; j < 4u; j++) {
      let at = lid * 4u + j;
      let z = at - o;  // zeros before this element
      var dest = z;
      if (flags[j] == 1u) { dest = zeros_total + o; }
      order_next[dest] = order[at];
      o += flags[j];
    }
    workgroupBarrier();
    for (var j = 0u; j < 4u; j++) { order[lid * 4u + j] = order_next[lid * 4u + j]; }
    workgroupBarrier();
  }
  for (var j = 0u; j < 4u; j++) {
    let pos = lid * 4u + j;
    let local = order[pos];
    let d = digits[local];
    if (d < 256u) {
      let dest = hist[d * blocks + wid.x] + (pos - digit_start[d]);
      let k = base + local;
      dst_hi[dest] = src_hi[k];
      dst_lo[dest] = src_lo[k];
      dst_val[dest] = src_val[k];
    }
  }
}

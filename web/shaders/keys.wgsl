// After the scan of the touched counts: the setup pass (one thread) takes the key count, clamps it to the
// capacity, and writes the sizes and indirect dispatch arguments of the sort and the tile ranges; the emit
// pass writes one (tile, depth) key per tile each splat reaches (buildTileLists in render/cpu_renderer.cpp:
// rows of the rect in order, tested where the rect has at most 1024 tiles), its value the splat.

@group(0) @binding(0) var<uniform> frame: Frame;
@group(0) @binding(1) var<storage, read> proj: array<Proj>;
@group(0) @binding(2) var<storage, read> touched: array<u32>;
@group(0) @binding(3) var<storage, read> offsets: array<u32>;
@group(0) @binding(4) var<storage, read_write> keys_hi: array<u32>;
@group(0) @binding(5) var<storage, read_write> keys_lo: array<u32>;
@group(0) @binding(6) var<storage, read_write> values: array<u32>;
@group(0) @binding(7) var<storage, read_write> control: array<u32>;

// control[]: 0 keys wanted, 1 keys sorted (min(wanted, capacity)), 2 sort blocks, 4.. sizes of the histogram
// scan's three levels, 8.. indirect args (3 words each): 8 sort blocks, 11/14/17 histogram scan levels 0-2,
// 20 one thread per key (ranges).
const KEYS_WANTED: u32 = 0u;
const KEYS: u32 = 1u;
const BLOCKS: u32 = 2u;

fn args(at: u32, groups: u32) {
  control[at] = groups;
  control[at + 1u] = 1u;
  control[at + 2u] = 1u;
}

@compute @workgroup_size(1)
fn setup() {
  let n = frame.count;
  let wanted = offsets[n - 1u] + touched[n - 1u];
  let keys = min(wanted, frame.key_capacity);
  let blocks = (keys + 1023u) / 1024u;
  let h0 = 256u * blocks;
  let h1 = (h0 + 1023u) / 1024u;
  let h2 = (h1 + 1023u) / 1024u;
  control[KEYS_WANTED] = wanted;
  control[KEYS] = keys;
  control[BLOCKS] = blocks;
  control[4] = h0;
  control[5] = h1;
  control[6] = h2;
  args(8u, blocks);
  args(11u, h1);
  args(14u, h2);
  args(17u, (h2 + 1023u) / 1024u);
  args(20u, (keys + 255u) / 256u);
}

@compute @workgroup_size(256)
fn emit(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= frame.count) { return; }
  let count = touched[i];
  if (count == 0u) { return; }
  let s = proj[i];
  let x0 = s.rect.x & 0xffffu;
  let y0 = s.rect.x >> 16u;
  let x1 = s.rect.y & 0xffffu;
  let y1 = s.rect.y >> 16u;
  let test = i32((x1 - x0) * (y1 - y0)) <= MAX_TESTED_TILE_AREA;
  let depth_bits = bitcast<u32>(s.color_depth.w);
  let first = offsets[i];
  let end = min(first + count, frame.key_capacity);
  var k = first;
  for (var y = y0; y < y1 && k < end; y++) {
    for (var x = x0; x < x1 && k < end; x++) {
      if (test && !splatReachesTile(s.mean, s.conic_opacity, x, y)) { continue; }
      keys_hi[k] = y * frame.tiles_x + x;
      keys_lo[k] = depth_bits;
      values[k] = i;
      k++;
    }
  }
  // Should this pass decide a tile differently from preprocess's count (another rounding of the same test), the
  // splat's unused keys sort past every tile and are ignored; no other splat's keys are touched.
  for (; k < end; k++) {
    keys_hi[k] = 0xffffffffu;
    keys_lo[k] = depth_bits;
    values[k] = i;
  }
}

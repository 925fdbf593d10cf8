#version 460
// Chunk sort: one workgroup per chunk of a tile list (tile_setup.comp lists them), its up to CAPACITY
// (depth bits, slot) pairs sorted in shared memory and written back in place. Pairs compare by depth, then
// slot: a total order (a slot reaches a tile once), so the result is the one order whatever the method, and
// equal depths keep slot order as on the CPU. The chunk is padded to a power of two n (padding pairs sort
// last); each thread owns E = max(1, n / WG) consecutive places, held in registers: it sorts its pairs
// itself, then runs of doubling width are merged, each thread filling its own places of the merged run
// (a merge-path search for where they start, then a sequential merge), all read before any is written
// back. log2(n / E) merge steps, two barriers each: O(n log n) work.
// The "small" variant sorts the lists of at most SF_SEG_SMALL pairs (listed from the chunk table's front),
// the plain one the chunks of longer lists (listed from its back).
#include "common.glsl"

#ifdef SF_VARIANT_SMALL
#define WG SF_SEG_SMALL_WG
#define CAPACITY SF_SEG_SMALL
#else
#define WG SF_SEG_WG
#define CAPACITY SF_SEG_BLOCK
#endif
#define E (CAPACITY / WG)  // the most pairs a thread owns

// Shared-memory places are swizzled within each 32-word row (the XOR of the row's low 4 index bits):
// threads that own E consecutive places (E = 2..16) reach 32 different banks when they touch their k-th
// place together, where the plain layout would put all of a subgroup's accesses in E-fold bank conflicts.
#define SW(i) ((i) ^ (((i) >> 5) & 15u))
layout(local_size_x = WG) in;
shared uint s_key[CAPACITY], s_val[CAPACITY];

bool pairLess(uint ka, uint va, uint kb, uint vb) { return ka < kb || (ka == kb && va < vb); }

void main() {
  FrameRef fr = pc.frame;
  const uint index = gl_WorkGroupID.y * SF_DISPATCH_ROW + gl_WorkGroupID.x;
#ifdef SF_VARIANT_SMALL
  if (index >= fr.f.counters.v[SF_COUNTER_SMALL_CHUNKS]) return;  // past the last row's chunks
  uvec2 chunk = fr.f.chunks.v[index];
#else
  if (index >= fr.f.counters.v[SF_COUNTER_CHUNKS]) return;
  uvec2 chunk = fr.f.chunks.v[fr.f.chunk_capacity - 1u - index];
#endif
  uvec2 range = fr.f.tile_ranges.v[chunk.x];
  uint start = range.x + chunk.y * SF_SEG_BLOCK;
  uint len = min(uint(CAPACITY), range.y - start);
  if (len < 2u) return;  // uniform across the workgroup
  uint n = 1u << (findMSB(len - 1u) + 1);
  uint own = max(1u, n / WG);              // pairs per thread (a power of two)
  uint tid = gl_LocalInvocationIndex;
  bool holds = tid * own < n;             // threads past n / own hold nothing
  uint first = tid * own;
  // Staged through shared memory so that the global reads are coalesced; each thread then takes its places.
  for (uint i = tid; i < n; i += WG) {
    bool real = i < len;
    s_key[SW(i)] = real ? fr.f.keys_lo.v[start + i] : 0xffffffffu;
    s_val[SW(i)] = real ? fr.f.values.v[start + i] : 0xffffffffu;
  }
  barrier();
  uint key[E], val[E];
  for (uint k = 0u; k < E; ++k) {
    bool mine = holds && k < own;  // (a thread reads and then writes only its own places: no barrier between)
    key[k] = mine ? s_key[SW(first + k)] : 0xffffffffu;
    val[k] = mine ? s_val[SW(first + k)] : 0xffffffffu;
  }
  // The thread's own run: insertion sort in registers (padding stays last: it is the largest pair).
  if (own > 1u)  // uniform: the unrolled network is skipped where each thread holds one pair
    for (uint k = 1u; k < E; ++k)
      for (uint j = k; j > 0u; --j)
        if (j < own && pairLess(key[j], val[j], key[j - 1u], val[j - 1u])) {
          uint tk = key[j], tv = val[j];
          key[j] = key[j - 1u], val[j] = val[j - 1u];
          key[j - 1u] = tk, val[j - 1u] = tv;
        }
  if (holds)
    for (uint k = 0u; k < E; ++k)
      if (k < own) s_key[SW(first + k)] = key[k], s_val[SW(first + k)] = val[k];
  barrier();
  for (uint w = own; w < n; w <<= 1) {
    // Merge path: this thread's `own` places of the merged run of 2w start at diagonal d; a binary search
    // finds how many of them come from the left run, then they are merged one by one (the left run first
    // on ties: only padding ties, with padding).
    if (holds) {
      uint base = first & ~(2u * w - 1u), d = first - base, a_end = base + w, b_end = base + 2u * w;
      uint lo = d > w ? d - w : 0u, hi = min(d, w);
      while (lo < hi) {
        uint mid = (lo + hi) >> 1, ai = base + mid, bi = a_end + d - mid - 1u;
        if (!pairLess(s_key[SW(bi)], s_val[SW(bi)], s_key[SW(ai)], s_val[SW(ai)])) lo = mid + 1u;
        else hi = mid;
      }
      uint i = base + lo, j = a_end + d - lo;
      for (uint k = 0u; k < E; ++k) {
        if (k >= own) break;
        bool take_a = j >= b_end || (i < a_end && !pairLess(s_key[SW(j)], s_val[SW(j)], s_key[SW(i)], s_val[SW(i)]));
        uint at = take_a ? i : j;
        key[k] = s_key[SW(at)], val[k] = s_val[SW(at)];
        if (take_a) ++i;
        else ++j;
      }
    }
    barrier();  // every place read before any is overwritten
    if (holds)
      for (uint k = 0u; k < E; ++k)
        if (k < own) s_key[SW(first + k)] = key[k], s_val[SW(first + k)] = val[k];
    barrier();
  }
  for (uint i = tid; i < len; i += WG) {
    fr.f.keys_lo.v[start + i] = s_key[SW(i)];
    fr.f.values.v[start + i] = s_val[SW(i)];
  }
}

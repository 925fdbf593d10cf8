#version 460
// Tile raster: SF_TILE / SF_RASTER_ROWS workgroups per 16x16 tile, each blending SF_RASTER_ROWS of its rows,
// one thread per pixel, front to back over the tile's sorted splats in batches staged through shared
// memory. Same per-pixel math as blendPixel(): with a mesh layer, blending stops at the first splat not in
// front of the mesh and ends on the mesh colour.
//
// Per batch, each subgroup first culls the batch against the rectangle of its own pixels that are still
// blending: a splat whose alpha >= 1/255 ellipse misses that rectangle cannot change any of them (its
// alpha test fails for every one), so the subgroup's pixels walk only the splats that can reach them, in
// the same order. Skipping splats that contribute nothing leaves every pixel's result unchanged, the
// stop at a mesh included (depths ascend, so the next splat a pixel does walk stops it just the same).
// The k-th active lane of a subgroup tests batch entries k, k + active lanes, ..., so any subgroup size and
// layout works (full subgroups are not required: a 16-wide workgroup row is narrower than NVIDIA's 32).
//
// Slices (GpuFrame::raster_slice = K, not 0): a workgroup never walks more than K entries of its tile's list
// in one dispatch, so that no dispatch outlasts a driver's watchdog however deep a tile is. The frame's own
// raster (pc.shift 0) draws every tile of at most K entries as described above and leaves the deeper ones;
// the host then dispatches slice s = 0, 1, ... (pc.shift s + 1), each in a submission of its own, over
// entries [sK, (s + 1)K) of the deep tiles only. Between slices a pixel's state is carried exactly: the
// colour so far and the transmittance in the image itself, the depth sum and the done / mesh-passed flags
// in GpuFrame::raster_carry; a tile's last slice writes the pixel as the frame's raster would have. The
// blending is the same code over the same entries in the same order, so the image is bit-identical to the
// unsplit frame's (the subgroup cull skips only entries that change nothing, whichever batch holds them).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require
#include "common.glsl"

layout(local_size_x = SF_TILE, local_size_y = SF_RASTER_ROWS) in;
#if SF_TILE != 16 || SF_RASTER_ROWS != 8
#error "the pixel map below is written for 16x8 workgroups"
#endif
const uint kBatch = SF_TILE * SF_RASTER_ROWS;
const uint kParts = SF_TILE / SF_RASTER_ROWS;  // workgroups per tile, stacked along y
shared vec2 s_mean[kBatch];
shared vec4 s_conic[kBatch];
shared vec4 s_color_depth[kBatch];
shared uint s_done[2];
const uint kWords = kBatch / 32u;  // one bit per batch entry

#include "raster_cull.glsl"

// Whether splat j of the batch can reach a pixel of [lo, hi] (pixel positions, as in the blending below):
// a pixel is blended only where opacity * exp(power) >= 1/255, i.e. inside the ellipse
// d^T Q d <= r2 = 2 ln(255 opacity) of the conic Q. First its bounding box, half extents sqrt(r2 * Q^-1_xx)
// and sqrt(r2 * Q^-1_yy), widened by 2% and half a pixel against rounding; then, where the box meets the
// rectangle and the mean lies outside it, the least of d^T Q d over the rectangle (on its edges, each at the
// point where Q's derivative along the edge vanishes, clamped to the edge) against r2 widened by 2% and 0.05:
// on the headline scene (H100) a quarter of the entries the box let through reach none of the subgroup's pixels.
// Ill-conditioned conics (det below 1e-3 of a*c, where cancellation could shrink the extents) always pass.
bool reaches(uint j, vec2 lo, vec2 hi) {
  vec4 co = s_conic[j];
  if (co.w < 1.0 / 255.0) return false;  // alpha <= opacity < 1/255 everywhere
  float det = co.x * co.z - co.y * co.y;
  if (!(det > 1e-3 * co.x * co.z)) return true;
  float r2 = max(2.0 * log(255.0 * co.w), 0.0);  // log may round below 0 for opacity at 1/255
  vec2 half_extent = sqrt(vec2(co.z, co.x) * (r2 / det)) * 1.02 + 0.5;
  vec2 m = s_mean[j];
  // Written so that a NaN keeps the splat: it is culled only when a comparison says it misses.
  if (any(lessThan(m + half_extent, lo)) || any(greaterThan(m - half_extent, hi))) return false;
  return ellipseReachesRect(co.xyz, r2, m, lo, hi);
}

// The variant for frames without a mesh layer (SF_VARIANT_NOMESH; the host picks it) leaves out the test of
// every entry against the mesh fragment's depth; the plain variant (SF_VARIANT_PLAIN), for the frame's own raster
// when nothing reads the depth sum or the last splat blended, also leaves out their sums.
// The counted variant (SF_VARIANT_COUNTED: RenderSettings::count_raster; the plain variant that also counts its
// work): per frame, the batch entries its subgroups walk (those that passed the subgroup's cull, up to the one
// where its last pixel still blending stops), the pixel-entries its threads evaluate and those they blend,
// added as 64-bit counters (SF_COUNTER_RASTER_*, lo and hi words) once per subgroup at the end; and per
// workgroup the batches it staged, added, and their most (SF_COUNTER_RASTER_LONGEST_WALK: the longest serial
// walk, which bounds the raster's time however many tiles run beside it).
#ifdef SF_VARIANT_COUNTED
#define SF_VARIANT_PLAIN
void addCounter64(FrameRef fr, uint at, uint value) {
  uint old = atomicAdd(fr.f.counters.v[at], value);
  if (old + value < old) atomicAdd(fr.f.counters.v[at + 1u], 1u);  // the low word wrapped: carry
}
#endif
#ifdef SF_VARIANT_PLAIN
#define SF_VARIANT_NOMESH
#endif

#ifdef SF_VARIANT_SHAPES
// The variant for frames with shaped splats (the host picks it): their words (GpuFrame::shapes) staged
// with each batch. The plain variant has none of it (its code and shared memory cost the frames without
// shapes about 6% of the raster on the H200).
shared uint s_shape[kBatch];

// Coverage of shape `word` (class bits not 0) at offset d = mean - pixel for the conic co.xyz:
// splatShapeCoverage (render/splat_shape.cpp), the same maths.
float shapeCoverage(uint word, vec2 d, vec3 co) {
  const float kPi = 3.14159265358979;
  float radius = SF_SHAPE_RADIUS;
  float sa = sqrt(co.x);
  vec2 u = vec2(sa * d.x + (co.y / sa) * d.y, sqrt(max(co.z - co.y * co.y / co.x, 0.0)) * d.y);
  float r = length(u);
  if (!(r > 0.0)) return 1.0;  // the centre lies inside every shape (and atan(0, 0) is undefined)
  uint cls = word & 3u;
  float sd;
  if (cls == SF_SHAPE_DISC) {
    sd = r - radius;
  } else {
    uint sides = cls == SF_SHAPE_ROUNDED_HEX ? 6u : min(5u + ((word >> 2) & 3u), 7u);
    float sector = 2.0 * kPi / float(sides);
    float t = atan(u.y, u.x) - float((word >> 4) & 255u) * (2.0 * kPi / 256.0);
    t -= sector * floor(t / sector) + 0.5 * sector;  // the angle from the nearest edge's normal
    float x = r * cos(t), y = abs(r * sin(t));
    float corner = cls == SF_SHAPE_ROUNDED_HEX ? SF_SHAPE_CORNER * radius : 0.0;
    float apothem = radius * cos(0.5 * sector) - corner, half_edge = apothem * tan(0.5 * sector);
    sd = (y <= half_edge ? x - apothem : length(vec2(x - apothem, y - half_edge))) - corner;
  }
  return clamp(0.5 - sd / SF_SHAPE_EDGE, 0.0, 1.0);
}
#endif

void main() {
  FrameRef fr = pc.frame;
  uvec2 wg = rasterWorkgroup(fr, kParts);  // (tile x, tile y * kParts + part)
  uint tile = (wg.y / kParts) * fr.f.tiles_x + wg.x;
  uvec2 range = fr.f.tile_ranges.v[tile];
  uint len = range.y - range.x;
  Uints values = (sfMergePasses(len) & 1u) != 0u ? fr.f.values_alt : fr.f.values;
  // The entries this dispatch walks (whole workgroups return together: the tile decides).
  uint begin = range.x, end = range.y, slice_entries = fr.f.raster_slice;
  bool resume = false, finish = true;
  if (slice_entries != 0u && len > slice_entries) {
    if (pc.shift == 0u || pc.shift - 1u > (len - 1u) / slice_entries) return;  // left to the slices / past its last
    begin = range.x + (pc.shift - 1u) * slice_entries;
    end = begin + min(slice_entries, range.y - begin);
    resume = begin != range.x;
    finish = end == range.y;
  } else if (pc.shift != 0u) {
    return;  // drawn whole by the frame's raster
  }
  // Each run of 32 invocations (a subgroup on NVIDIA) blends an 8x4 block of the workgroup's 16x8 pixels, not
  // two 16-pixel rows: the subgroup's cull rectangle is squarer, so fewer splats reach it. Any subgroup size
  // works (the map is a permutation of the pixels; 8 lanes take an 8x1 row, 64 a 16x4 block).
  uint t = gl_LocalInvocationIndex;
  uint px = wg.x * SF_TILE + ((t & 7u) | ((t >> 2) & 8u));
  uint py = wg.y * SF_RASTER_ROWS + (((t >> 3) & 3u) | ((t >> 4) & 4u));
  bool inside = px < fr.f.width && py < fr.f.height;
  bool done = !inside;
  vec2 pixf = vec2(float(px), float(py));
  float T = 1.0, D = 0.0;
  uint last = 0u;  // 1 + the list position of the last splat blended (training)
  // Whether the frame reads the depth sum or the last splat blended (the depth plane, training, the carry of a
  // tile drawn in raster slices): frames and tiles that read neither skip both per splat.
#ifdef SF_VARIANT_PLAIN
  const bool track = false;  // (the host never picks it for a frame that reads them, nor for slices)
#else
  const bool track = fr.f.write_depth != 0u || fr.f.write_train != 0u || (slice_entries != 0u && len > slice_entries);
#endif
  vec3 C = vec3(0.0);
  const bool linear = fr.f.blend_linear != 0u;  // the background and mesh colours decoded, the pixel encoded
  // The mesh layer's fragment at this pixel: blending stops at it when it is opaque (and ends on its
  // colour); a translucent one (coverage < 1) is composited where its depth falls and the splats behind
  // it go on blending (blendPixel's MeshPixel). The variants for frames without a mesh layer have none of
  // it (nothing of the mesh is then held through the blend loop: registers, and with them the workgroups an
  // SM holds).
  float stop_depth = SF_NO_MESH_DEPTH;
  bool opaque_mesh = false;
  vec4 mesh_color = vec4(0.0);
#ifndef SF_VARIANT_NOMESH
  if (inside && fr.f.has_mesh != 0u) {
    uint pix = py * fr.f.width + px;
    stop_depth = fr.f.mesh_depth.v[pix];
    if (stop_depth < SF_NO_MESH_DEPTH) {
      mesh_color = fr.f.mesh_color.v[pix];
      if (linear) mesh_color.xyz = srgbDecode(mesh_color.xyz);
      opaque_mesh = !(mesh_color.w < 1.0);
    }
  }
#endif
  const float fragment_depth = stop_depth;  // the mesh fragment's depth (SF_NO_MESH_DEPTH: none)
  if (resume && inside) {  // the state the tile's previous slice left
    uint pix = py * fr.f.width + px;
    vec4 ct = fr.f.image.v[pix];
    uvec2 carry = fr.f.raster_carry.v[pix];
    C = ct.xyz;
    T = ct.w;
    D = uintBitsToFloat(carry.x);
    done = (carry.y & SF_CARRY_DONE) != 0u;
    if ((carry.y & SF_CARRY_MESH_PASSED) != 0u) stop_depth = SF_NO_MESH_DEPTH;
  }
  uint tid = gl_LocalInvocationIndex;
  // Done-pixel counts alternate between two counters so that each batch needs two barriers (as
  // __syncthreads_count does in the INRIA rasterizer): one after counting, one after staging.
  if (tid == 0u) {
    s_done[0] = 0u;
    s_done[1] = 0u;
  }
  barrier();
  uint parity = 0u;
  // Each thread's entry of the next batch is loaded into registers while the current batch blends (the
  // loads gather through the slot index, and their latency would otherwise stall every thread at the
  // staging barrier), then stored to shared memory at the next batch's start.
  vec2 next_mean = vec2(0.0);
  vec4 next_conic = vec4(0.0), next_color_depth = vec4(0.0);
#ifdef SF_VARIANT_SHAPES
  uint next_shape = 0u;
#endif
  if (begin + tid < end) {
    uint slot = values.v[begin + tid];
    next_mean = fr.f.means.v[slot];
    next_conic = fr.f.conic_opacity.v[slot];
    next_color_depth = fr.f.color_depth.v[slot];
#ifdef SF_VARIANT_SHAPES
    next_shape = fr.f.shapes.v[slot];
#endif
  }
#ifdef SF_VARIANT_COUNTED
  uint n_entries = 0u, n_evaluated = 0u, n_blended = 0u;  // (n_entries: the subgroup's, the same in every lane)
  uint n_batches = 0u;                                      // (the workgroup's, the same in every thread)
#endif
  for (uint start = begin; start < end; start += kBatch, parity ^= 1u) {
#ifdef SF_VARIANT_COUNTED
    uint batch_evaluated = 0u;
#endif
    if (done) atomicAdd(s_done[parity], 1u);
    barrier();  // counts complete; every thread has finished reading the previous batch
    if (s_done[parity] == kBatch) break;
#ifdef SF_VARIANT_COUNTED
    ++n_batches;
#endif
    if (tid == 0u) s_done[parity ^ 1u] = 0u;
    if (start + tid < end) {
      s_mean[tid] = next_mean;
      s_conic[tid] = next_conic;
      s_color_depth[tid] = next_color_depth;
#ifdef SF_VARIANT_SHAPES
      s_shape[tid] = next_shape;
#endif
    }
    barrier();
    uint k = start + kBatch + tid;
    if (k < end) {
      uint slot = values.v[k];
      next_mean = fr.f.means.v[slot];
      next_conic = fr.f.conic_opacity.v[slot];
      next_color_depth = fr.f.color_depth.v[slot];
#ifdef SF_VARIANT_SHAPES
      next_shape = fr.f.shapes.v[slot];
#endif
    }
    uint count = min(kBatch, end - start);
    // This subgroup's pixels still blending (an empty rectangle when all are done), and the batch entries
    // that reach them: one bit per entry, the same words in every lane.
    vec2 lo = vec2(subgroupMin(done ? 1e30 : pixf.x), subgroupMin(done ? 1e30 : pixf.y));
    vec2 hi = vec2(subgroupMax(done ? -1e30 : pixf.x), subgroupMax(done ? -1e30 : pixf.y));
    uvec4 lanes = subgroupBallot(true);
    uint lane = subgroupBallotExclusiveBitCount(lanes), lane_count = subgroupBallotBitCount(lanes);
    uint reach[kWords];
    for (uint w = 0u; w < kWords; ++w) {
      uint bits = 0u;
      for (uint e = lane; e < 32u; e += lane_count)
        if (w * 32u + e < count && reaches(w * 32u + e, lo, hi)) bits |= 1u << e;
      reach[w] = subgroupOr(bits);
    }
    for (uint w = 0u; w < kWords && !done; ++w) {
      for (uint bits = reach[w]; bits != 0u; bits &= bits - 1u) {
        uint j = w * 32u + uint(findLSB(bits));
#ifdef SF_VARIANT_COUNTED
        ++batch_evaluated;
#endif
#ifndef SF_VARIANT_NOMESH
        if (!(s_color_depth[j].w < stop_depth)) {  // this splat and every later one lie behind the mesh
          if (opaque_mesh) {
            done = true;
            break;
          }
          C += mesh_color.xyz * (mesh_color.w * T);
          D += stop_depth * (mesh_color.w * T);
          T *= 1.0 - mesh_color.w;
          stop_depth = SF_NO_MESH_DEPTH;
          if (T < 0.0001) {
            done = true;
            break;
          }
        }
#endif
        vec2 d = s_mean[j] - pixf;
        vec4 co = s_conic[j];
        float power = -0.5 * (co.x * d.x * d.x + co.z * d.y * d.y) - co.y * d.x * d.y;
        if (power > 0.0) continue;
#ifdef SF_VARIANT_SHAPES
        float falloff = exp(power);
        float alpha = min(0.99, co.w * falloff);
        if (alpha < 1.0 / 255.0) continue;
        if ((s_shape[j] & 3u) != 0u)  // the shape over the gaussian: never less than its falloff
          alpha = min(0.99, co.w * max(falloff, shapeCoverage(s_shape[j], d, co.xyz)));
#else
        float alpha = min(0.99, co.w * exp(power));
        if (alpha < 1.0 / 255.0) continue;
#endif
        float test_t = T * (1.0 - alpha);
        if (test_t < 0.0001) {
          done = true;
          break;
        }
        C += s_color_depth[j].xyz * (alpha * T);
        if (track) {
          D += s_color_depth[j].w * (alpha * T);
          last = start + j - range.x + 1u;
        }
        T = test_t;
#ifdef SF_VARIANT_COUNTED
        ++n_blended;
#endif
      }
    }
#ifdef SF_VARIANT_COUNTED
    n_evaluated += batch_evaluated;
    n_entries += subgroupMax(batch_evaluated);  // the entries of its list the subgroup walked this batch
#endif
  }
#ifdef SF_VARIANT_COUNTED
  uint sg_evaluated = subgroupAdd(n_evaluated), sg_blended = subgroupAdd(n_blended);
  if (subgroupElect()) {
    addCounter64(fr, SF_COUNTER_RASTER_ENTRIES, n_entries);
    addCounter64(fr, SF_COUNTER_RASTER_EVALUATED, sg_evaluated);
    addCounter64(fr, SF_COUNTER_RASTER_BLENDED, sg_blended);
  }
  if (tid == 0u && n_batches != 0u) {
    addCounter64(fr, SF_COUNTER_RASTER_BATCHES, n_batches);
    atomicMax(fr.f.counters.v[SF_COUNTER_RASTER_LONGEST_WALK], n_batches);
  }
#endif
  if (inside && !finish) {  // the next slice goes on from here
    uint pix = py * fr.f.width + px;
    fr.f.image.v[pix] = vec4(C, T);
    uint flags = (done ? SF_CARRY_DONE : 0u) | (stop_depth != fragment_depth ? SF_CARRY_MESH_PASSED : 0u);
    fr.f.raster_carry.v[pix] = uvec2(floatBitsToUint(D), flags);
  } else if (inside) {
    // What shows behind the splats: the opaque mesh fragment, else the background (read after the loop, so
    // that it is not held through it).
    vec3 behind = vec3(fr.f.background[0], fr.f.background[1], fr.f.background[2]);
    if (linear) behind = srgbDecode(behind);
    if (opaque_mesh) behind = mesh_color.xyz;
    if (!opaque_mesh && stop_depth < SF_NO_MESH_DEPTH) {  // a translucent mesh behind every splat blended
      C += mesh_color.xyz * (mesh_color.w * T);
      D += stop_depth * (mesh_color.w * T);
      T *= 1.0 - mesh_color.w;
    }
    vec3 color = C + T * behind;
    if (linear) color = srgbEncode(color);
    fr.f.image.v[py * fr.f.width + px] = vec4(color, opaque_mesh ? 1.0 : 1.0 - T);
    // The depth plane counts a mesh fragment as one more layer: an opaque one ends it (blendPixel).
    if (fr.f.write_depth != 0u)
      fr.f.depth_out.v[py * fr.f.width + px] = opaque_mesh ? vec2(D + stop_depth * T, 0.0) : vec2(D, T);
    if (fr.f.write_train != 0u) {
      fr.f.train_final_t.v[py * fr.f.width + px] = T;
      fr.f.train_last.v[py * fr.f.width + px] = last;
    }
  }
}

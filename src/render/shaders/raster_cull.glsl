// The rasters' exact cull (raster.comp, raster_half.comp): the second step of a subgroup's test of a batch entry
// against the rectangle of its pixels still blending, after the entry's bounding box met that rectangle. And
// the rasters' order of tiles.

// The tile a raster workgroup draws, as the workgroup id it would have in row-major order: (tile x, tile y *
// parts + part). The rasters are dispatched as (tiles_x, tiles_y * parts) workgroups, which GPUs start in about
// the order of their linear index; workgroup w draws part w % parts of the tile at place w / parts of the
// order tile_setup.comp made: the tiles by the length class of their lists (SF_TILE_CLASSES: the batches a
// walk of the whole list stages, by powers of two), the longest first. A workgroup walks its tile's list
// serially, so the deepest tiles, started first, run beside the others instead of after them (a tile deep in
// the middle of the image used to start half-way through the dispatch).
uvec2 rasterWorkgroup(FrameRef fr, uint parts) {
  uint w = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  uint place = w / parts, part = w - place * parts;
  // (No early exit: the class counts are loaded together, not one round trip a class.)
  uint tiles = fr.f.tiles_x * fr.f.tiles_y, before = 0u, at = place;
  for (uint c = SF_TILE_CLASSES; c-- > 0u;) {
    uint n = fr.f.counters.v[SF_COUNTER_TILE_CLASSES + c];
    if (place >= before && place < before + n) at = c * tiles + (place - before);
    before += n;
  }
  uint tile = min(fr.f.tile_order.v[at], tiles - 1u);  // (every tile is listed once: the bound never binds)
  return uvec2(tile % fr.f.tiles_x, (tile / fr.f.tiles_x) * parts + part);
}

// d^T Q d for the conic Q = (a, b; b, c), con = (a, b, c).
float conicQ(vec3 con, float dx, float dy) { return con.x * dx * dx + 2.0 * con.y * dx * dy + con.z * dy * dy; }

// Whether the ellipse d^T Q d <= r2 around m (pixel positions) can reach a pixel of [lo, hi]: true where m lies
// inside the rectangle, else the least of d^T Q d over the rectangle (on its edges, each at the point where
// Q's derivative along the edge vanishes, clamped to the edge) against r2 widened by 2% and 0.05. Each edge is
// compared on its own, so that a NaN keeps the splat.
bool ellipseReachesRect(vec3 con, float r2, vec2 m, vec2 lo, vec2 hi) {
  vec2 a = lo - m, b = hi - m;  // the rectangle, from the mean
  if (a.x <= 0.0 && b.x >= 0.0 && a.y <= 0.0 && b.y >= 0.0) return true;
  float bound = r2 * 1.02 + 0.05;
  return !(conicQ(con, a.x, clamp(-con.y * a.x / con.z, a.y, b.y)) > bound &&
           conicQ(con, b.x, clamp(-con.y * b.x / con.z, a.y, b.y)) > bound &&
           conicQ(con, clamp(-con.y * a.y / con.x, a.x, b.x), a.y) > bound &&
           conicQ(con, clamp(-con.y * b.y / con.x, a.x, b.x), b.y) > bound);
}

// Whether a splat can reach alpha >= 1/255 in tile (tx, ty): splatReachesTile() of cpu_renderer.cpp.
// `precise` (no contraction into fused operations): the binning's counting and emitting runs must decide
// every tile alike, whatever code the compiler makes of each.
#define SF_MAX_TESTED_TILE_AREA 1024
// Rects of more tiles than this are binned by a whole workgroup (bin_tiles.comp); preprocess.comp counts the
// tiles of the others (all of them tested: SF_COOP_TILES <= SF_MAX_TESTED_TILE_AREA).
#define SF_COOP_TILES 64

float conicQ(vec3 con, float dx, float dy) {
  precise float q = con.x * dx * dx + 2.0 * con.y * dx * dy + con.z * dy * dy;
  return q;
}

bool splatReachesTile(vec2 mean, vec4 co, uint tx, uint ty) {
  precise float limit = 2.0 * log(255.0 * co.w);
  precise float x0 = float(tx * SF_TILE) - mean.x, x1 = x0 + float(SF_TILE - 1);
  precise float y0 = float(ty * SF_TILE) - mean.y, y1 = y0 + float(SF_TILE - 1);
  if (x0 <= 0.0 && x1 >= 0.0 && y0 <= 0.0 && y1 >= 0.0) return limit >= 0.0;
  vec3 con = co.xyz;
  precise float best = conicQ(con, x0, clamp(-con.y * x0 / con.z, y0, y1));
  best = min(best, conicQ(con, x1, clamp(-con.y * x1 / con.z, y0, y1)));
  best = min(best, conicQ(con, clamp(-con.y * y0 / con.x, x0, x1), y0));
  best = min(best, conicQ(con, clamp(-con.y * y1 / con.x, x0, x1), y1));
  precise float bound = limit * 1.001 + 0.01;
  return best <= bound;
}

#ifdef SF_AGGREGATED_BINNING
#define SF_NO_TILE 0xffffffffu

// One step of the binning's lock-step walk: the next tile of the rect [x0, x1) x [y0, y1) from (x, y) on that the
// splat reaches (every tile where `test` is false), or SF_NO_TILE past the rect's end; (x, y) moves past it.
uint nextReachedTile(vec2 mean, vec4 co, bool test, uvec4 rect, inout uint x, inout uint y, uint tiles_x) {
  uint tile = SF_NO_TILE;
  while (y < rect.w && tile == SF_NO_TILE) {
    if (!test || splatReachesTile(mean, co, x, y)) tile = y * tiles_x + x;
    if (++x == rect.z) x = rect.x, ++y;
  }
  return tile;
}

// The lanes of this subgroup whose `tile` equals this lane's, as a ballot (called in uniform control flow).
uvec4 lanesOnTile(uint tile) {
#ifdef SF_VARIANT_PARTITIONED
  return subgroupPartitionNV(tile);
#else
  uvec4 mine = uvec4(0u), left = subgroupBallot(true);
  while (true) {  // uniform: `left` is the same in every lane
    uint value = subgroupShuffle(tile, subgroupBallotFindLSB(left));
    uvec4 same = subgroupBallot(tile == value);
    if (tile == value) mine = same;
    left &= ~same;
    if (left == uvec4(0u)) break;
  }
  return mine;
#endif
}
#endif

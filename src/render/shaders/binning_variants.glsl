// The binning's variants (bin_tiles.comp and preprocess.comp, compiled as name@partitioned and name@aggregated):
// the lanes of a subgroup walk their rects in lock step and the lanes on one tile at a step count or take their
// places with one atomic. SF_VARIANT_PARTITIONED groups them with one instruction (GL_NV_shader_subgroup_partitioned,
// where the device has it), SF_VARIANT_AGGREGATED with a ballot per distinct tile (the portable path, which tests
// the same walk on any device). Included before anything else (the extensions come first).
#if defined(SF_VARIANT_PARTITIONED) || defined(SF_VARIANT_AGGREGATED)
#define SF_AGGREGATED_BINNING
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_vote : require
#endif
#ifdef SF_VARIANT_PARTITIONED
#extension GL_NV_shader_subgroup_partitioned : require
#endif

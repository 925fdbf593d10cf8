#version 460
// The article's loss per pixel against this step's view over this step's grey background:
// L = mean |rgb - (target_rgb + (1 - target_alpha) bg)| + alpha_weight mean |alpha - target_alpha|
// (photometricLoss, train/raster_grad.cpp). Writes dL/d(rgb, alpha) times the pixel count, and one partial
// sum of L per workgroup.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "train_common.glsl"

layout(local_size_x = SF_TRAIN_WG) in;
shared float s_sum[SF_TRAIN_WG];

void main() {
  if (frameOverflowed()) return;
  FrameRef fr = FrameRef(pc.frame);
  uint pix = linearIndex(), npix = fr.f.width * fr.f.height;
  float l = 0.0;
  if (pix < npix) {
    vec4 img = fr.f.image.v[pix], t = pc.target.v[pix];
    vec3 d = img.xyz - (t.xyz + (1.0 - t.w) * vec3(pc.background));
    float da = img.w - t.w;
    l = (abs(d.x) + abs(d.y) + abs(d.z)) / (3.0 * float(npix)) + pc.alpha_weight * abs(da) / float(npix);
    pc.pixel_grads.v[pix] = vec4(sign(d) / 3.0, pc.alpha_weight * sign(da));
  }
  l = subgroupAdd(l);
  if (subgroupElect()) s_sum[gl_SubgroupID] = l;
  barrier();
  uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (gl_LocalInvocationIndex == 0u && group * SF_TRAIN_WG < npix) {  // the last row may hold workgroups past the image
    float total = 0.0;
    for (uint k = 0u; k < gl_NumSubgroups; ++k) total += s_sum[k];
    pc.partials.v[group] = total;
  }
}

#version 460
// Mesh pass, vertex stage: pulls the vertex of index buffer entry gl_VertexIndex through device addresses,
// transforms it to view space and projects it with the camera's pinhole intrinsics. Reversed depth:
// z_ndc = near / z, so the depth test keeps the greatest value (the nearest surface).
#include "mesh_common.glsl"

layout(location = 0) out vec3 out_view_pos;
layout(location = 1) out vec3 out_normal;
layout(location = 2) out vec2 out_uv;
layout(location = 3) out vec4 out_color;

vec3 rowsTimes(float m[12], vec3 p, float w) {
  return vec3(m[0] * p.x + m[1] * p.y + m[2] * p.z + m[3] * w, m[4] * p.x + m[5] * p.y + m[6] * p.z + m[7] * w,
              m[8] * p.x + m[9] * p.y + m[10] * p.z + m[11] * w);
}

void main() {
  GpuMeshDraw d = pc.draws.d[pc.draw_index];
  uint v = d.indices.v[gl_VertexIndex];
  vec3 p = vec3(d.positions.v[3 * v], d.positions.v[3 * v + 1], d.positions.v[3 * v + 2]);
  vec3 view = rowsTimes(d.object_to_view, p, 1.0);
  out_view_pos = view;
  out_normal = vec3(0.0);
  if ((d.flags & SF_MESH_HAS_NORMALS) != 0u)
    out_normal = rowsTimes(d.normal_to_view, vec3(d.normals.v[3 * v], d.normals.v[3 * v + 1], d.normals.v[3 * v + 2]), 0.0);
  out_uv = (d.flags & SF_MESH_HAS_UVS) != 0u ? vec2(d.uvs.v[2 * v], d.uvs.v[2 * v + 1]) : vec2(0.0);
  out_color = (d.flags & SF_MESH_HAS_COLORS) != 0u
                  ? vec4(d.colors.v[4 * v], d.colors.v[4 * v + 1], d.colors.v[4 * v + 2], d.colors.v[4 * v + 3])
                  : vec4(1.0);
  // Pixel coordinate u = fx x / z + cx maps to NDC 2 u / width - 1 (Vulkan's y already points down).
  float z = view.z;
  gl_Position = vec4(2.0 * (pc.fx * view.x + pc.cx * z) / pc.width - z, 2.0 * (pc.fy * view.y + pc.cy * z) / pc.height - z,
                     SF_MESH_NEAR, z);
}

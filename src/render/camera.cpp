#include "render/camera.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sf {

Vec3 Camera::position() const {
  Mat3 r = world_to_camera.linear();
  return -(transpose(r) * world_to_camera.translation());
}

const char* Camera::validate() const {
  if (width <= 0 || height <= 0) return "image width and height must be positive";
  if (width > 16384 || height > 16384) return "image width and height must be at most 16384";
  if (!(fx > 0) || !(fy > 0) || !std::isfinite(fx) || !std::isfinite(fy)) return "fx and fy must be positive";
  if (!std::isfinite(cx) || !std::isfinite(cy)) return "cx and cy must be finite";
  Mat3 r = world_to_camera.linear();
  Mat3 rrt = r * transpose(r);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      if (std::abs(rrt.m[i][j] - (i == j ? 1.0f : 0.0f)) > 1e-3f)
        return "world_to_camera rotation is not orthonormal";
  if (determinant(r) < 0) return "world_to_camera rotation is a reflection";
  const Mat4& m = world_to_camera;
  if (m.m[3][0] != 0 || m.m[3][1] != 0 || m.m[3][2] != 0 || m.m[3][3] != 1)
    return "world_to_camera last row must be 0 0 0 1";
  return nullptr;
}

Camera lookAtCamera(Vec3 eye, Vec3 target, Vec3 up, float fov_y_deg, int width, int height) {
  Vec3 forward = normalize(target - eye);
  Vec3 right = normalize(cross(forward, up));
  Vec3 down = cross(forward, right);
  Mat3 r;
  for (int j = 0; j < 3; ++j) {
    r.m[0][j] = right[j];
    r.m[1][j] = down[j];
    r.m[2][j] = forward[j];
  }
  Camera cam;
  cam.width = width;
  cam.height = height;
  float f = 0.5f * static_cast<float>(height) / std::tan(0.5f * fov_y_deg * 3.14159265358979f / 180.0f);
  cam.fx = cam.fy = f;
  cam.cx = 0.5f * static_cast<float>(width);
  cam.cy = 0.5f * static_cast<float>(height);
  cam.world_to_camera = Mat4::fromLinearTranslation(r, -(r * eye));
  return cam;
}

Camera frameBox(Vec3 lo, Vec3 hi, Vec3 view_dir, Vec3 up, int width, int height) {
  constexpr float kFovY = 50.0f;
  Vec3 centre = 0.5f * (lo + hi);
  float radius = std::max(0.5f * length(hi - lo), 1e-3f);
  float half_fov = 0.5f * kFovY * 3.14159265358979f / 180.0f;
  float aspect = static_cast<float>(width) / static_cast<float>(height);
  float half_fov_min = aspect < 1 ? std::atan(std::tan(half_fov) * aspect) : half_fov;
  float distance = 1.1f * radius / std::sin(half_fov_min);  // 10% margin
  Vec3 eye = centre - normalize(view_dir) * distance;
  return lookAtCamera(eye, centre, up, kFovY, width, height);
}

Camera frameBoxTight(Vec3 lo, Vec3 hi, Vec3 view_dir, Vec3 up, int width, int height, float margin,
                     const Mat3& box_axes) {
  constexpr float kFovY = 50.0f;
  const Vec3 forward = normalize(view_dir);
  const Camera axes =
      lookAtCamera(Vec3{0, 0, 0}, forward, up, kFovY, width, height);  // the orientation and focal length
  const Mat3 r = axes.world_to_camera.linear();
  margin = std::clamp(margin, 0.0f, 0.45f);
  // A corner p at camera coordinates c = r (p - eye) lands inside the margins when |c.x| <= tx c.z and
  // |c.y| <= ty c.z. With the corners' and the eye's coordinates in the camera's axes (P = r p, E = r eye),
  // each bound is linear in E: per axis the two sides' tightest constraints meet at the closest eye depth,
  // and the eye's offset across is their midpoint (which centres the projection).
  const float t[2] = {(0.5f - margin) * static_cast<float>(width) / axes.fx,
                      (0.5f - margin) * static_cast<float>(height) / axes.fy};
  float plus[2], minus[2], nearest = std::numeric_limits<float>::max();
  for (int k = 0; k < 2; ++k) plus[k] = minus[k] = -std::numeric_limits<float>::max();
  for (int corner = 0; corner < 8; ++corner) {
    const Vec3 p{corner & 1 ? hi.x : lo.x, corner & 2 ? hi.y : lo.y, corner & 4 ? hi.z : lo.z};
    const Vec3 c = r * (transpose(box_axes) * p);
    for (int k = 0; k < 2; ++k) {
      plus[k] = std::max(plus[k], c[k] - t[k] * c.z);
      minus[k] = std::max(minus[k], -c[k] - t[k] * c.z);
    }
    nearest = std::min(nearest, c.z);
  }
  Vec3 e;
  e.z = nearest - 0.25f;  // the renderer culls splats closer than 0.2
  for (int k = 0; k < 2; ++k) e.z = std::min(e.z, -(plus[k] + minus[k]) / (2.0f * t[k]));
  e.x = 0.5f * (plus[0] - minus[0]);
  e.y = 0.5f * (plus[1] - minus[1]);
  const Vec3 eye = transpose(r) * e;
  return lookAtCamera(eye, eye + forward, up, kFovY, width, height);
}

}  // namespace sf

#include "view/camera_control.h"

#include <algorithm>
#include <cmath>

namespace sf::view {

namespace {

constexpr float kDeg = 3.14159265358979f / 180.0f;
// Pitch stops short of the up axis, where the view's right axis (dir x up) is undefined.
constexpr float kMaxPitch = 89.0f * kDeg;
constexpr float kMinDistance = 1e-4f;

Vec3 forwardOf(const Camera& c) {
  return normalize(c.world_to_camera.linear().row(2));
}
Vec3 rightOf(const Camera& c) {
  return normalize(c.world_to_camera.linear().row(0));
}

}  // namespace

Camera poseCamera(const Camera& intrinsics, Vec3 eye, Vec3 dir, Vec3 up) {
  const Vec3 forward = normalize(dir);
  const Vec3 right = normalize(cross(forward, up));
  const Vec3 down = cross(forward, right);
  Mat3 r;
  for (int j = 0; j < 3; ++j) {
    r.m[0][j] = right[j];
    r.m[1][j] = down[j];
    r.m[2][j] = forward[j];
  }
  Camera cam = intrinsics;
  cam.world_to_camera = Mat4::fromLinearTranslation(r, -(r * eye));
  return cam;
}

Camera resizeCamera(const Camera& cam, int width, int height) {
  if (cam.width == width && cam.height == height) return cam;
  const float sx = static_cast<float>(width) / static_cast<float>(cam.width);
  const float sy = static_cast<float>(height) / static_cast<float>(cam.height);
  Camera out = cam;
  out.width = width, out.height = height;
  out.fx = cam.fx * sy, out.fy = cam.fy * sy;
  out.cx = cam.cx * sx, out.cy = cam.cy * sy;
  return out;
}

CameraControl::CameraControl(const Camera& home, Vec3 target, Vec3 up, float fallback_distance)
    : home_(home) {
  up_ = normalize(up);
  const Vec3 fwd = forwardOf(home);
  Vec3 flat = fwd - up_ * dot(fwd, up_);
  // Looking straight along the up axis: the home right axis fixes the frame instead.
  f0_ = length(flat) > 1e-4f ? normalize(flat) : normalize(cross(up_, rightOf(home)));
  r0_ = cross(f0_, up_);
  const Vec3 eye = home.position();
  const float along = dot(target - eye, fwd);
  home_distance_ = along > kMinDistance ? along : std::max(fallback_distance, kMinDistance);
  home_target_ = eye + fwd * home_distance_;
  reset();
}

void CameraControl::reset() {
  target_ = home_target_;
  distance_ = home_distance_;
  fromDirection(forwardOf(home_));
  exact_ = intrinsics_ = home_;
  has_exact_ = true;
}

void CameraControl::setCamera(const Camera& camera) {
  const Vec3 fwd = forwardOf(camera);
  target_ = camera.position() + fwd * distance_;
  fromDirection(fwd);
  exact_ = intrinsics_ = camera;
  has_exact_ = true;
}

void CameraControl::fromDirection(Vec3 dir) {
  pitch_ = std::clamp(std::asin(std::clamp(-dot(dir, up_), -1.0f, 1.0f)), -kMaxPitch, kMaxPitch);
  yaw_ = std::atan2(dot(dir, r0_), dot(dir, f0_));
}

Vec3 CameraControl::direction() const {
  const float cp = std::cos(pitch_);
  return normalize(cp * (std::cos(yaw_) * f0_ + std::sin(yaw_) * r0_) - std::sin(pitch_) * up_);
}

float CameraControl::yawDeg() const {
  return yaw_ / kDeg;
}
float CameraControl::pitchDeg() const {
  return pitch_ / kDeg;
}

void CameraControl::setOrbit(float yaw_deg, float pitch_deg, float distance) {
  mode_ = Mode::kOrbit;
  target_ = home_target_;
  yaw_ = yaw_deg * kDeg;
  pitch_ = std::clamp(pitch_deg * kDeg, -kMaxPitch, kMaxPitch);
  distance_ = std::max(distance, kMinDistance);
  has_exact_ = false;
}

void CameraControl::rotate(float dyaw_deg, float dpitch_deg) {
  const Vec3 eye_before = eye();
  yaw_ = std::remainder(yaw_ + dyaw_deg * kDeg, 2.0f * 3.14159265358979f);
  pitch_ = std::clamp(pitch_ + dpitch_deg * kDeg, -kMaxPitch, kMaxPitch);
  if (mode_ == Mode::kFly) target_ = eye_before + direction() * distance_;  // turn in place
  has_exact_ = false;
}

void CameraControl::turn(float dyaw_deg, Vec3 pivot) {
  const float a = dyaw_deg * kDeg, c = std::cos(a), s = std::sin(a);
  // The same rotation as a change of yaw: F0 turns towards R0.
  const Vec3 w = target_ - pivot;
  const float f = dot(w, f0_), r = dot(w, r0_), u = dot(w, up_);
  target_ = pivot + f0_ * (f * c - r * s) + r0_ * (f * s + r * c) + up_ * u;
  yaw_ = std::remainder(yaw_ + a, 2.0f * 3.14159265358979f);
  has_exact_ = false;
}

void CameraControl::pan(float dx_px, float dy_px, int height) {
  const float fy = intrinsics_.fy * static_cast<float>(height) / static_cast<float>(intrinsics_.height);
  const float scale = distance_ / std::max(fy, 1e-6f);  // world units per pixel at the target's depth
  const Vec3 dir = direction();
  const Vec3 right = normalize(cross(dir, up_));
  const Vec3 down = cross(dir, right);
  target_ = target_ - right * (dx_px * scale) - down * (dy_px * scale);
  has_exact_ = false;
}

void CameraControl::zoom(float steps) {
  if (mode_ == Mode::kOrbit)
    distance_ = std::max(distance_ * std::pow(0.9f, steps), kMinDistance);
  else
    target_ = target_ + direction() * (0.1f * distance_ * steps);
  has_exact_ = false;
}

void CameraControl::move(float right, float up, float forward) {
  const Vec3 dir = direction();
  const Vec3 r = normalize(cross(dir, up_));
  target_ = target_ + r * right + up_ * up + dir * forward;
  has_exact_ = false;
}

Camera CameraControl::camera(int width, int height) const {
  if (has_exact_) return resizeCamera(exact_, width, height);
  return poseCamera(resizeCamera(intrinsics_, width, height), eye(), direction(), up_);
}

}  // namespace sf::view

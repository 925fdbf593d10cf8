// The viewer's camera controls: an orbit camera (rotate about a target, zoom, pan) and a fly camera (look
// around, move), both over one state, so switching between them keeps the view. Pure math, no window.
//
// Angles are measured in the home frame, the frame of the view the viewer started with: `up` is the world's
// up axis (captures are y-down, glTF models y-up), yaw 0 / pitch 0 looks along the home view direction
// (flattened onto the plane normal to up). The view direction is
//   dir(yaw, pitch) = cos(pitch) (cos(yaw) F0 + sin(yaw) R0) - sin(pitch) U
// with U = up, F0 = home forward, R0 = F0 x U (the home view's right): positive yaw turns the view to the
// right, positive pitch looks down (in orbit: the camera rises above the target).
#pragma once

#include "render/camera.h"

namespace sf::view {

class CameraControl {
 public:
  enum class Mode { kOrbit, kFly };

  CameraControl() = default;
  // Starts at `home` (intrinsics and pose), orbiting `target` (projected onto the home view ray when it is
  // in front of the camera; otherwise a point `fallback_distance` ahead). `up`: the world's up axis.
  CameraControl(const Camera& home, Vec3 target, Vec3 up, float fallback_distance);

  // An exact camera (a camera JSON): drawn as given, bit for bit, until a control moves it; the orbit
  // target is put on its view ray at the current orbit distance.
  void setCamera(const Camera& camera);
  // Back to the home camera.
  void reset();

  // Orbit about the home target at yaw / pitch degrees (home frame) and `distance` from it.
  void setOrbit(float yaw_deg, float pitch_deg, float distance);
  // Rotation by a drag: degrees of yaw and pitch. Orbit mode moves the camera about the target; fly mode
  // turns the view in place.
  void rotate(float dyaw_deg, float dpitch_deg);
  // Pan by a drag of (dx, dy) pixels at image height `height`: the target moves with the cursor.
  void pan(float dx_px, float dy_px, int height);
  // Turntable: turns the camera (eye, view and orbit target) by `dyaw_deg` about the world's up axis through
  // `pivot`, in the direction of positive yaw; the pitch, the distance and the eye's height above the pivot
  // stay.
  void turn(float dyaw_deg, Vec3 pivot);
  // Mouse wheel: orbit mode scales the distance by 0.9 per step in (positive steps), fly mode moves along
  // the view direction by a tenth of the distance per step.
  void zoom(float steps);
  // Fly: moves by `right`, `up` and `forward` (the view's axes; up is the world's up), in world units.
  void move(float right, float up, float forward);

  Mode mode() const { return mode_; }
  void setMode(Mode m) { mode_ = m; }

  float yawDeg() const;
  float pitchDeg() const;
  float distance() const { return distance_; }
  Vec3 target() const { return target_; }
  Vec3 eye() const { return target_ - direction() * distance_; }
  Vec3 direction() const;  // unit view direction
  Vec3 up() const { return up_; }

  // The camera at an image size: the intrinsics (the home camera's, or the last exact camera's) scaled to it
  // (vertical field of view and principal point kept; the focal lengths keep their ratio), posed by the
  // controls; or the exact camera as given (rescaled the same way when its size differs).
  Camera camera(int width, int height) const;

 private:
  void fromDirection(Vec3 dir);

  Camera home_;
  Camera intrinsics_;  // the intrinsics posed cameras use: the home camera's, or the last exact camera's
  Camera exact_;       // drawn as is while has_exact_
  bool has_exact_ = false;
  Mode mode_ = Mode::kOrbit;
  Vec3 up_{0, 1, 0}, f0_{0, 0, 1}, r0_{1, 0, 0};
  Vec3 target_{0, 0, 0}, home_target_{0, 0, 0};
  float yaw_ = 0, pitch_ = 0;  // radians
  float distance_ = 1, home_distance_ = 1;
};

// The camera as a world-to-camera pose looking along `dir` from `eye` with `up` up on screen (OpenCV axes:
// x right, y down, z forward), with the intrinsics of `intrinsics`.
Camera poseCamera(const Camera& intrinsics, Vec3 eye, Vec3 dir, Vec3 up);

// The intrinsics of `cam` at another image size: principal point scaled with the size, fy scaled with the
// height and fx keeping its ratio to fy (the vertical field of view is kept).
Camera resizeCamera(const Camera& cam, int width, int height);

}  // namespace sf::view

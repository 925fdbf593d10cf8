// The viewer's camera controls (view/camera_control.h) against closed-form placements: the home camera is
// drawn bit for bit, an orbit at (yaw, pitch, distance) puts the eye where the documented formula says, drags
// keep the orbit target (orbit) or the eye (fly) fixed, a pan keeps the target under the cursor, and resizing
// keeps the vertical field of view.
#include "view/camera_control.h"

#include <gtest/gtest.h>

#include <cmath>

#include "render/camera.h"

namespace sf {
namespace {

constexpr float kPi = 3.14159265358979f;

void expectNear(Vec3 a, Vec3 b, float tol, const char* what) {
  EXPECT_NEAR(a.x, b.x, tol) << what;
  EXPECT_NEAR(a.y, b.y, tol) << what;
  EXPECT_NEAR(a.z, b.z, tol) << what;
}

// Pixel coordinates of a world point (OpenCV pinhole).
std::pair<float, float> project(const Camera& c, Vec3 p) {
  const Vec3 q = transformPoint(c.world_to_camera, p);
  return {c.fx * q.x / q.z + c.cx, c.fy * q.y / q.z + c.cy};
}

// A capture-like setting: y down, home view along +z onto a target, from off-axis.
struct Orbit {
  Vec3 target{0.5f, -1.0f, 2.0f};
  Vec3 up{0, -1, 0};
  Camera home = lookAtCamera(Vec3{0.5f, -1.0f, 2.0f} - Vec3{0, 0, 4}, Vec3{0.5f, -1.0f, 2.0f}, Vec3{0, -1, 0},
                             50, 320, 240);
};

TEST(CameraControl, HomeIsDrawnExactlyAndOrbitZeroIsTheHomeView) {
  Orbit s;
  view::CameraControl c(s.home, s.target, s.up, 1);
  const Camera same = c.camera(320, 240);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(same.world_to_camera.m[i][j], s.home.world_to_camera.m[i][j]);
  EXPECT_EQ(same.fx, s.home.fx);
  EXPECT_FLOAT_EQ(c.distance(), 4.0f);
  expectNear(c.target(), s.target, 1e-5f, "target");
  // Orbit (0, 0, 4) is the home view, now posed by the controls.
  c.setOrbit(0, 0, 4);
  const Camera posed = c.camera(320, 240);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      EXPECT_NEAR(posed.world_to_camera.m[i][j], s.home.world_to_camera.m[i][j], 1e-5f) << i << "," << j;
}

TEST(CameraControl, OrbitFollowsTheDocumentedFormula) {
  Orbit s;
  view::CameraControl c(s.home, s.target, s.up, 1);
  const Vec3 f0{0, 0, 1}, u{0, -1, 0}, r0 = cross(f0, u);  // r0 = (1, 0, 0): the home view's right
  EXPECT_NEAR(r0.x, 1.0f, 1e-6f);
  for (float yaw : {0.0f, 90.0f, -135.0f})
    for (float pitch : {0.0f, 30.0f, -60.0f}) {
      c.setOrbit(yaw, pitch, 3);
      const float y = yaw * kPi / 180, p = pitch * kPi / 180;
      const Vec3 dir = std::cos(p) * (std::cos(y) * f0 + std::sin(y) * r0) - std::sin(p) * u;
      const Vec3 eye = s.target - dir * 3.0f;
      const Camera got = c.camera(320, 240);
      const Camera want = lookAtCamera(eye, s.target, s.up, 50, 320, 240);
      expectNear(got.position(), eye, 1e-4f, "eye");
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j)
          EXPECT_NEAR(got.world_to_camera.m[i][j], want.world_to_camera.m[i][j], 1e-4f)
              << yaw << " " << pitch;
      // The target stays at the principal point.
      const auto [px, py] = project(got, s.target);
      EXPECT_NEAR(px, got.cx, 1e-3f);
      EXPECT_NEAR(py, got.cy, 1e-3f);
    }
  // Positive pitch raises the camera above the target (against y-down: smaller y).
  c.setOrbit(0, 30, 3);
  EXPECT_LT(c.eye().y, s.target.y);
}

TEST(CameraControl, DragsKeepTargetInOrbitAndEyeInFly) {
  Orbit s;
  view::CameraControl c(s.home, s.target, s.up, 1);
  c.rotate(40, 10);
  expectNear(c.target(), s.target, 1e-5f, "orbit keeps the target");
  EXPECT_NEAR(length(c.eye() - c.target()), 4.0f, 1e-4f);
  EXPECT_NEAR(c.yawDeg(), 40.0f, 1e-3f);
  EXPECT_NEAR(c.pitchDeg(), 10.0f, 1e-3f);
  c.setMode(view::CameraControl::Mode::kFly);
  const Vec3 eye = c.eye();
  c.rotate(-70, 5);
  expectNear(c.eye(), eye, 1e-4f, "fly keeps the eye");
  // Fly moves along the view axes; up is the world's up.
  const Vec3 dir = c.direction(), right = normalize(cross(dir, s.up));
  c.move(0.5f, 0.25f, 1.0f);
  expectNear(c.eye(), eye + right * 0.5f + s.up * 0.25f + dir * 1.0f, 1e-4f, "move");
  // Orbit zoom scales the distance by 0.9 per step; fly zoom moves by a tenth of it.
  c.setMode(view::CameraControl::Mode::kOrbit);
  const float d = c.distance();
  c.zoom(2);
  EXPECT_NEAR(c.distance(), d * 0.81f, 1e-5f);
  // Reset returns to the home camera exactly.
  c.reset();
  const Camera back = c.camera(320, 240);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(back.world_to_camera.m[i][j], s.home.world_to_camera.m[i][j]);
}

// The turntable turns eye, view and target about the vertical axis through a pivot off the target: the yaw
// grows by the angle, the pitch and the orbit distance stay, the eye keeps its height and its distance from
// the axis, and the eye's bearing about the axis turns by the angle (towards the home view's right).
TEST(CameraControl, TurntableTurnsAboutTheVerticalAxisThroughThePivot) {
  Orbit s;
  view::CameraControl c(s.home, s.target, s.up, 1);
  c.setOrbit(10, 20, 3);
  const Vec3 pivot = s.target + Vec3{0.3f, 0.5f, -0.2f};
  const Vec3 eye0 = c.eye();
  const float yaw0 = c.yawDeg(), pitch0 = c.pitchDeg();
  auto flat = [&](Vec3 p) {  // p - pivot in the plane normal to up
    const Vec3 d = p - pivot;
    return d - s.up * dot(d, s.up);
  };
  for (int step = 1; step <= 3; ++step) {
    c.turn(11, pivot);
    EXPECT_NEAR(c.yawDeg(), yaw0 + 11.0f * static_cast<float>(step), 1e-3f);
    EXPECT_NEAR(c.pitchDeg(), pitch0, 1e-3f);
    EXPECT_NEAR(c.distance(), 3.0f, 1e-5f);
    EXPECT_NEAR(dot(c.eye() - pivot, s.up), dot(eye0 - pivot, s.up), 1e-4f);
    EXPECT_NEAR(length(flat(c.eye())), length(flat(eye0)), 1e-4f);
    const Vec3 a = normalize(flat(eye0)), b = normalize(flat(c.eye()));
    const float angle = std::atan2(dot(cross(a, b), s.up), dot(a, b)) * 180.0f / kPi;
    EXPECT_NEAR(std::abs(angle), 11.0f * static_cast<float>(step), 1e-2f);
  }
  // A full turn comes back; the opposite speed undoes it.
  const Vec3 eye3 = c.eye();
  c.turn(360, pivot);
  expectNear(c.eye(), eye3, 1e-4f, "a full turn");
  c.turn(-33, pivot);
  expectNear(c.eye(), eye0, 1e-4f, "turned back");
  expectNear(c.target(), s.target, 1e-4f, "the target turned back");
}

TEST(CameraControl, PanKeepsTheTargetUnderTheCursor) {
  Orbit s;
  view::CameraControl c(s.home, s.target, s.up, 1);
  c.rotate(25, -15);
  const Vec3 old_target = c.target();
  c.pan(30, -12, 240);
  const Camera cam = c.camera(320, 240);
  const auto [px, py] = project(cam, old_target);
  EXPECT_NEAR(px, cam.cx + 30, 1e-2f);
  EXPECT_NEAR(py, cam.cy - 12, 1e-2f);
}

TEST(CameraControl, ExactCamerasAndResizing) {
  Orbit s;
  view::CameraControl c(s.home, s.target, s.up, 1);
  Camera exact = lookAtCamera(Vec3{3, -2, 1}, Vec3{0, 0, 5}, Vec3{0.2f, -1, 0}, 40, 320, 240);
  exact.cx = 150;  // off-centre principal point
  c.setCamera(exact);
  const Camera got = c.camera(320, 240);
  EXPECT_EQ(got.cx, 150.0f);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(got.world_to_camera.m[i][j], exact.world_to_camera.m[i][j]);
  // Twice the size: the vertical field of view and the principal point's place are kept.
  const Camera big = c.camera(640, 480);
  EXPECT_FLOAT_EQ(big.fy / 480.0f, exact.fy / 240.0f);
  EXPECT_FLOAT_EQ(big.fx / big.fy, exact.fx / exact.fy);
  EXPECT_FLOAT_EQ(big.cx / 640.0f, 150.0f / 320.0f);
  // A wider window keeps fy (the vertical field of view) and widens the view.
  const Camera wide = view::resizeCamera(exact, 640, 240);
  EXPECT_EQ(wide.fy, exact.fy);
  EXPECT_EQ(wide.fx, exact.fx);
  // Moving from an exact camera starts from where it looks and keeps its intrinsics.
  c.rotate(0, 0);
  const Camera moved = c.camera(320, 240);
  EXPECT_EQ(moved.cx, 150.0f);
  expectNear(moved.position(), exact.position(), 1e-4f, "eye after a null drag");
}

}  // namespace
}  // namespace sf

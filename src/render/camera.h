// Pinhole camera in the OpenCV/COLMAP convention: camera space is x right, y down, z forward; a
// camera-space point (x, y, z) lands at continuous pixel coordinates u = fx x / z + cx,
// v = fy y / z + cy, where pixel (i, j) covers [i, i+1) x [j, j+1) and its centre is (i + 0.5, j + 0.5).
#pragma once

#include "core/math.h"

namespace sf {

struct Camera {
  int width = 0;
  int height = 0;
  float fx = 0, fy = 0, cx = 0, cy = 0;
  Mat4 world_to_camera;  // rigid transform (rotation + translation)

  // Camera centre in world space.
  Vec3 position() const;
  // Empty when usable; otherwise what is wrong (non-positive size or focal length, non-rigid matrix).
  const char* validate() const;
};

// Camera at `eye` looking at `target`, with `up` pointing up on screen, vertical field of view
// fov_y_deg and the principal point on the image centre. up must not be parallel to target - eye.
Camera lookAtCamera(Vec3 eye, Vec3 target, Vec3 up, float fov_y_deg, int width, int height);

// Camera looking along `view_dir` at the centre of the box [lo, hi] (e.g. a cloud's 1-99 percentile
// bounds), far enough back that the box's bounding sphere fits the 50 degree vertical field of view,
// with `up` up on screen.
Camera frameBox(Vec3 lo, Vec3 hi, Vec3 view_dir, Vec3 up, int width, int height);

// Camera looking along `view_dir` with `up` up on screen and the 50 degree vertical field of view, placed so
// that the 8 corners of the box [lo, hi] project into the image with `margin` (a fraction of the image's
// width and height) free on every side: the corners' projection is centred and touches the margin on the
// tighter axis (the closest such camera; never closer than 0.25 to the box's nearest corner). The box's axes
// are the rows of the rotation `box_axes` (a corner c of the box is the world point transpose(box_axes) * c).
Camera frameBoxTight(Vec3 lo, Vec3 hi, Vec3 view_dir, Vec3 up, int width, int height, float margin = 0.08f,
                     const Mat3& box_axes = Mat3{});

}  // namespace sf

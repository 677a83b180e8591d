#include "augment/ada_matrices.h"

#include <cmath>

namespace gantry::augment {

Matrix3 translate2d(double tx, double ty) {
  Matrix3 r = Matrix3::identity();
  r(0, 2) = tx;
  r(1, 2) = ty;
  return r;
}

Matrix3 scale2d(double sx, double sy) {
  Matrix3 r = Matrix3::identity();
  r(0, 0) = sx;
  r(1, 1) = sy;
  return r;
}

Matrix3 rotate2d(double theta) {
  Matrix3 r = Matrix3::identity();
  const double c = std::cos(theta), s = std::sin(theta);
  r(0, 0) = c;
  r(0, 1) = -s;
  r(1, 0) = s;
  r(1, 1) = c;
  return r;
}

Matrix4 translate3d(double tx, double ty, double tz) {
  Matrix4 r = Matrix4::identity();
  r(0, 3) = tx;
  r(1, 3) = ty;
  r(2, 3) = tz;
  return r;
}

Matrix4 scale3d(double sx, double sy, double sz) {
  Matrix4 r = Matrix4::identity();
  r(0, 0) = sx;
  r(1, 1) = sy;
  r(2, 2) = sz;
  return r;
}

Matrix4 rotate3d(const std::array<double, 3>& v, double theta) {
  const double s = std::sin(theta), c = std::cos(theta), cc = 1.0 - c;
  const double x = v[0], y = v[1], z = v[2];
  Matrix4 r = Matrix4::identity();
  r(0, 0) = x * x * cc + c;
  r(0, 1) = x * y * cc - z * s;
  r(0, 2) = x * z * cc + y * s;
  r(1, 0) = y * x * cc + z * s;
  r(1, 1) = y * y * cc + c;
  r(1, 2) = y * z * cc - x * s;
  r(2, 0) = z * x * cc - y * s;
  r(2, 1) = z * y * cc + x * s;
  r(2, 2) = z * z * cc + c;
  return r;
}

std::array<double, 3> luma_axis() {
  const double k = 1.0 / std::sqrt(3.0);
  return {k, k, k};
}

Matrix4 reflect3d(const std::array<double, 3>& v) {
  Matrix4 r = Matrix4::identity();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) r(i, j) -= 2.0 * v[static_cast<size_t>(i)] * v[static_cast<size_t>(j)];
  return r;
}

Matrix4 scale_off_axis3d(const std::array<double, 3>& v, double s) {
  Matrix4 r = Matrix4::identity();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const double vv = v[static_cast<size_t>(i)] * v[static_cast<size_t>(j)];
      r(i, j) = vv + ((i == j ? 1.0 : 0.0) - vv) * s;
    }
  return r;
}

}  // namespace gantry::augment

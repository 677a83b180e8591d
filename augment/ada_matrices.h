// The elementary matrices of ADA's pipeline (StyleGAN2-ADA's augment.py, our own code): 2-D
// homogeneous 3x3 maps of pixel coordinates centred on the image, and 4x4 maps of homogeneous
// colours (r, g, b, 1). Host doubles: one matrix per example, composed before anything touches
// the images.
#pragma once

#include <array>
#include <cstddef>

namespace gantry::augment {

template <int N>
struct Matrix {
  std::array<double, static_cast<size_t>(N * N)> m{};  // row major

  static Matrix identity() {
    Matrix r;
    for (int i = 0; i < N; ++i) r(i, i) = 1.0;
    return r;
  }
  double& operator()(int row, int col) { return m[static_cast<size_t>(row * N + col)]; }
  double operator()(int row, int col) const { return m[static_cast<size_t>(row * N + col)]; }
  Matrix operator*(const Matrix& o) const {
    Matrix r;
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) {
        double s = 0.0;
        for (int k = 0; k < N; ++k) s += (*this)(i, k) * o(k, j);
        r(i, j) = s;
      }
    return r;
  }
};
using Matrix3 = Matrix<3>;
using Matrix4 = Matrix<4>;

// 2-D: x' = M x on (x, y, 1).
Matrix3 translate2d(double tx, double ty);
Matrix3 scale2d(double sx, double sy);
Matrix3 rotate2d(double theta);  // counter-clockwise by theta radians

// 3-D colour maps on (r, g, b, 1).
Matrix4 translate3d(double tx, double ty, double tz);
Matrix4 scale3d(double sx, double sy, double sz);
// Rotation by theta about the unit axis v (Rodrigues).
Matrix4 rotate3d(const std::array<double, 3>& v, double theta);
// The luma axis (1, 1, 1) / sqrt(3) as ADA uses it for luma flip, hue and saturation.
std::array<double, 3> luma_axis();
// I - 2 v v^T on the colour part: reflects colours through the plane orthogonal to v.
Matrix4 reflect3d(const std::array<double, 3>& v);
// v v^T + (I - v v^T) s: keeps the component along v, scales the rest by s.
Matrix4 scale_off_axis3d(const std::array<double, 3>& v, double s);

}  // namespace gantry::augment

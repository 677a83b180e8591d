#include "backend/conv_roofline.h"

#include "base/threads.h"

namespace gantry {

namespace {

bool same_params(const ConvParams& a, const ConvParams& b) {
  for (int i = 0; i < 2; ++i) {
    if (a.stride[i] != b.stride[i] || a.padding[i] != b.padding[i] ||
        a.dilation[i] != b.dilation[i]) {
      return false;
    }
  }
  return true;
}

Device first_device(DeviceKind kind) { return kind == DeviceKind::CPU ? Device::cpu() : Device::cuda(0); }

}  // namespace

double ConvCall::flops() const {
  return 2.0 * static_cast<double>(dst[0]) * static_cast<double>(weights.numel()) *
         static_cast<double>(dst[2] * dst[3]);
}

bool ConvCall::operator==(const ConvCall& other) const {
  return direction == other.direction && src == other.src && weights == other.weights &&
         dst == other.dst && same_params(params, other.params) && threads == other.threads;
}

ConvRecorder::ConvRecorder(DeviceKind kind)
    : ForwardingBackend(backend_for(first_device(kind))), layer_(kind, *this) {}

std::vector<RecordedConv> ConvRecorder::recorded() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return calls_;
}

void ConvRecorder::record(ConvDirection direction, const Shape& src, const Shape& weights,
                          const Shape& dst, const ConvParams& params) {
  const ConvCall call{direction, src, weights, dst, params, num_threads()};
  std::lock_guard<std::mutex> lock(mutex_);
  for (RecordedConv& c : calls_) {
    if (c.call == call) {
      ++c.count;
      return;
    }
  }
  calls_.push_back({call, 1});
}

Layout ConvRecorder::conv2d_forward(const View& x, const View& w, const View* bias, const ConvParams& p,
                                    const View& y) {
  record(ConvDirection::Forward, x.shape, w.shape, y.shape, p);
  return inner().conv2d_forward(x, w, bias, p, y);
}

Layout ConvRecorder::conv2d_backward_data(const View& gy, const View& w, const ConvParams& p, const View& gx) {
  record(ConvDirection::BackwardData, gx.shape, w.shape, gy.shape, p);
  return inner().conv2d_backward_data(gy, w, p, gx);
}

Layout ConvRecorder::conv2d_backward_weights(const View& x, const View& gy, const ConvParams& p,
                                             const View& gw) {
  record(ConvDirection::BackwardWeights, x.shape, gw.shape, gy.shape, p);
  return inner().conv2d_backward_weights(x, gy, p, gw);
}

}  // namespace gantry

#include "metrics/inception_blocks.h"

#include "base/error.h"
#include "core/autograd/grad_mode.h"

namespace gantry::metrics {

namespace {

constexpr float kBatchNormEps = 0.001f;  // torchvision's BasicConv2d

InceptionConvSpec spec_of(const std::string& block, const char* branch, int64_t in, int64_t out, int kh, int kw,
                       int stride = 1, int pad_h = 0, int pad_w = 0) {
  return {block + "." + branch, in, out, kh, kw, stride, pad_h, pad_w};
}

const Tensor& tensor_at(const std::map<std::string, Tensor>& tensors, const std::string& name) {
  auto it = tensors.find(name);
  GANTRY_CHECK(it != tensors.end(), "Inception-v3: expected the tensor ", name, ", found none");
  return it->second;
}

// The branch name inside its block: "Mixed_5b.branch1x1" -> "branch1x1".
std::string branch_of(const std::string& conv_name) { return conv_name.substr(conv_name.rfind('.') + 1); }

}  // namespace

std::vector<std::pair<std::string, Shape>> inception_conv_tensors(const InceptionConvSpec& s) {
  return {{s.name + ".conv.weight", Shape{s.out, s.in, s.kh, s.kw}},
          {s.name + ".bn.weight", Shape{s.out}},
          {s.name + ".bn.bias", Shape{s.out}},
          {s.name + ".bn.running_mean", Shape{s.out}},
          {s.name + ".bn.running_var", Shape{s.out}}};
}

FoldedConv::FoldedConv(const InceptionConvSpec& spec, const std::map<std::string, Tensor>& tensors, Device device) {
  NoGradGuard no_grad;
  const auto cpu = [&](const char* suffix) { return tensor_at(tensors, spec.name + suffix).to(Device::cpu()); };
  const Tensor w = cpu(".conv.weight");  // (out, in, kh, kw)
  const Tensor gamma = cpu(".bn.weight"), beta = cpu(".bn.bias");
  const Tensor mean = cpu(".bn.running_mean"), var = cpu(".bn.running_var");
  const Tensor scale = ops::mul(gamma, ops::rsqrt(ops::add(var, kBatchNormEps)));  // (out)
  weight_ = ops::mul(w, ops::reshape(scale, Shape{spec.out, 1, 1, 1})).to(device);
  bias_ = ops::sub(beta, ops::mul(mean, scale)).to(device);
  options_.stride[0] = options_.stride[1] = spec.stride;
  options_.padding[0] = spec.pad_h;
  options_.padding[1] = spec.pad_w;
}

Tensor FoldedConv::operator()(const Tensor& x) const { return ops::relu(ops::conv2d(x, weight_, bias_, options_)); }

FoldedConv FoldedConv::to(Device device) const {
  FoldedConv copy = *this;
  copy.weight_ = weight_.to(device).clone();
  copy.bias_ = bias_.to(device).clone();
  return copy;
}

std::vector<InceptionConvSpec> InceptionBlock::conv_specs(InceptionBlockKind kind, const std::string& b, int64_t in,
                                                          int64_t extra) {
  switch (kind) {
    case InceptionBlockKind::A:
      return {spec_of(b, "branch1x1", in, 64, 1, 1),
              spec_of(b, "branch5x5_1", in, 48, 1, 1),
              spec_of(b, "branch5x5_2", 48, 64, 5, 5, 1, 2, 2),
              spec_of(b, "branch3x3dbl_1", in, 64, 1, 1),
              spec_of(b, "branch3x3dbl_2", 64, 96, 3, 3, 1, 1, 1),
              spec_of(b, "branch3x3dbl_3", 96, 96, 3, 3, 1, 1, 1),
              spec_of(b, "branch_pool", in, extra, 1, 1)};
    case InceptionBlockKind::B:
      return {spec_of(b, "branch3x3", in, 384, 3, 3, 2),
              spec_of(b, "branch3x3dbl_1", in, 64, 1, 1),
              spec_of(b, "branch3x3dbl_2", 64, 96, 3, 3, 1, 1, 1),
              spec_of(b, "branch3x3dbl_3", 96, 96, 3, 3, 2)};
    case InceptionBlockKind::C:
      return {spec_of(b, "branch1x1", in, 192, 1, 1),
              spec_of(b, "branch7x7_1", in, extra, 1, 1),
              spec_of(b, "branch7x7_2", extra, extra, 1, 7, 1, 0, 3),
              spec_of(b, "branch7x7_3", extra, 192, 7, 1, 1, 3, 0),
              spec_of(b, "branch7x7dbl_1", in, extra, 1, 1),
              spec_of(b, "branch7x7dbl_2", extra, extra, 7, 1, 1, 3, 0),
              spec_of(b, "branch7x7dbl_3", extra, extra, 1, 7, 1, 0, 3),
              spec_of(b, "branch7x7dbl_4", extra, extra, 7, 1, 1, 3, 0),
              spec_of(b, "branch7x7dbl_5", extra, 192, 1, 7, 1, 0, 3),
              spec_of(b, "branch_pool", in, 192, 1, 1)};
    case InceptionBlockKind::D:
      return {spec_of(b, "branch3x3_1", in, 192, 1, 1),
              spec_of(b, "branch3x3_2", 192, 320, 3, 3, 2),
              spec_of(b, "branch7x7x3_1", in, 192, 1, 1),
              spec_of(b, "branch7x7x3_2", 192, 192, 1, 7, 1, 0, 3),
              spec_of(b, "branch7x7x3_3", 192, 192, 7, 1, 1, 3, 0),
              spec_of(b, "branch7x7x3_4", 192, 192, 3, 3, 2)};
    case InceptionBlockKind::E1:
    case InceptionBlockKind::E2:
      return {spec_of(b, "branch1x1", in, 320, 1, 1),
              spec_of(b, "branch3x3_1", in, 384, 1, 1),
              spec_of(b, "branch3x3_2a", 384, 384, 1, 3, 1, 0, 1),
              spec_of(b, "branch3x3_2b", 384, 384, 3, 1, 1, 1, 0),
              spec_of(b, "branch3x3dbl_1", in, 448, 1, 1),
              spec_of(b, "branch3x3dbl_2", 448, 384, 3, 3, 1, 1, 1),
              spec_of(b, "branch3x3dbl_3a", 384, 384, 1, 3, 1, 0, 1),
              spec_of(b, "branch3x3dbl_3b", 384, 384, 3, 1, 1, 1, 0),
              spec_of(b, "branch_pool", in, 192, 1, 1)};
  }
  GANTRY_FAIL("Inception-v3: unknown block kind ", static_cast<int>(kind));
}

int64_t InceptionBlock::out_channels(InceptionBlockKind kind, int64_t in, int64_t extra) {
  switch (kind) {
    case InceptionBlockKind::A: return 64 + 64 + 96 + extra;
    case InceptionBlockKind::B: return 384 + 96 + in;
    case InceptionBlockKind::C: return 4 * 192;
    case InceptionBlockKind::D: return 320 + 192 + in;
    case InceptionBlockKind::E1:
    case InceptionBlockKind::E2: return 320 + 2 * 384 + 2 * 384 + 192;
  }
  GANTRY_FAIL("Inception-v3: unknown block kind ", static_cast<int>(kind));
}

InceptionBlock::InceptionBlock(InceptionBlockKind kind, const std::string& name, int64_t in, int64_t extra,
                               const std::map<std::string, Tensor>& tensors, Device device)
    : kind_(kind), name_(name) {
  for (const InceptionConvSpec& spec : conv_specs(kind, name, in, extra))
    convs_.emplace(branch_of(spec.name), FoldedConv(spec, tensors, device));
}

const FoldedConv& InceptionBlock::conv(const char* branch) const {
  auto it = convs_.find(branch);
  GANTRY_CHECK(it != convs_.end(), "Inception-v3 ", name_, ": no convolution ", branch);
  return it->second;
}

Tensor InceptionBlock::operator()(const Tensor& x) const {
  // pytorch-fid's pool branches: avg without counting padding, except Mixed_7c's max pool.
  const auto fid_avg_pool = [](const Tensor& t) { return ops::avg_pool2d(t, 3, 1, 1, /*count_include_pad=*/false); };
  switch (kind_) {
    case InceptionBlockKind::A: {
      Tensor b1 = conv("branch1x1")(x);
      Tensor b5 = conv("branch5x5_2")(conv("branch5x5_1")(x));
      Tensor b3 = conv("branch3x3dbl_3")(conv("branch3x3dbl_2")(conv("branch3x3dbl_1")(x)));
      Tensor bp = conv("branch_pool")(fid_avg_pool(x));
      return ops::concat({b1, b5, b3, bp}, 1);
    }
    case InceptionBlockKind::B: {
      Tensor b3 = conv("branch3x3")(x);
      Tensor bd = conv("branch3x3dbl_3")(conv("branch3x3dbl_2")(conv("branch3x3dbl_1")(x)));
      return ops::concat({b3, bd, ops::max_pool2d(x, 3, 2)}, 1);
    }
    case InceptionBlockKind::C: {
      Tensor b1 = conv("branch1x1")(x);
      Tensor b7 = conv("branch7x7_3")(conv("branch7x7_2")(conv("branch7x7_1")(x)));
      Tensor bd = conv("branch7x7dbl_1")(x);
      for (const char* next : {"branch7x7dbl_2", "branch7x7dbl_3", "branch7x7dbl_4", "branch7x7dbl_5"})
        bd = conv(next)(bd);
      Tensor bp = conv("branch_pool")(fid_avg_pool(x));
      return ops::concat({b1, b7, bd, bp}, 1);
    }
    case InceptionBlockKind::D: {
      Tensor b3 = conv("branch3x3_2")(conv("branch3x3_1")(x));
      Tensor b7 = conv("branch7x7x3_1")(x);
      for (const char* next : {"branch7x7x3_2", "branch7x7x3_3", "branch7x7x3_4"}) b7 = conv(next)(b7);
      return ops::concat({b3, b7, ops::max_pool2d(x, 3, 2)}, 1);
    }
    case InceptionBlockKind::E1:
    case InceptionBlockKind::E2: {
      Tensor b1 = conv("branch1x1")(x);
      Tensor b3 = conv("branch3x3_1")(x);
      b3 = ops::concat({conv("branch3x3_2a")(b3), conv("branch3x3_2b")(b3)}, 1);
      Tensor bd = conv("branch3x3dbl_2")(conv("branch3x3dbl_1")(x));
      bd = ops::concat({conv("branch3x3dbl_3a")(bd), conv("branch3x3dbl_3b")(bd)}, 1);
      Tensor pooled = kind_ == InceptionBlockKind::E1 ? fid_avg_pool(x) : ops::max_pool2d(x, 3, 1, 1);
      Tensor bp = conv("branch_pool")(pooled);
      return ops::concat({b1, b3, bd, bp}, 1);
    }
  }
  GANTRY_FAIL("Inception-v3: unknown block kind ", static_cast<int>(kind_));
}

InceptionBlock InceptionBlock::to(Device device) const {
  InceptionBlock copy = *this;
  for (auto& [branch, c] : copy.convs_) c = c.to(device);
  return copy;
}

}  // namespace gantry::metrics

#include "distribute/gradient_reducer.h"

#include <algorithm>
#include <chrono>

#include "backend/backend.h"
#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/ops/in_place.h"
#include "core/ops/ops.h"

namespace gantry::distribute {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::vector<int64_t> numels_of(const std::vector<Shape>& shapes) {
  std::vector<int64_t> n;
  n.reserve(shapes.size());
  for (const Shape& s : shapes) n.push_back(s.numel());
  return n;
}

}  // namespace

bool all_finite(ArrayRef<Tensor> tensors) {
  NoGradGuard no_grad;
  Tensor acc;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    Tensor s = ops::sum(ops::mul(t, 0.f));
    acc = acc.defined() ? ops::add(acc, s) : s;
  }
  return !acc.defined() || acc.item() == 0.f;
}

GradientReducer::GradientReducer(const std::vector<Tensor>& params, Device device, size_t bucket_cap_bytes)
    : params_(params), device_(device) {
  for (const Tensor& p : params) {
    GANTRY_CHECK(p.dtype() == DType::F32 && p.device() == device, "gradient reducer: expected f32 "
                 "parameters on ", device.str(), ", found ", p.str());
    shapes_.push_back(p.shape());
  }
  plan_ = plan_gradient_buckets(numels_of(shapes_), bucket_cap_bytes);
}

void GradientReducer::begin(Communicator& comm) {
  comm_ = &comm;
  ready_.assign(shapes_.size(), false);
  missing_.resize(plan_.buckets.size());
  for (size_t b = 0; b < plan_.buckets.size(); ++b) missing_[b] = plan_.buckets[b].params.size();
  pending_.assign(plan_.buckets.size(), PendingCollective{});  // a failed step's are abandoned
  next_ = 0;
  seconds_ = 0;
  const bool was_flat = summed_into_flat_;
  summed_into_flat_ = reducing();
  if (!summed_into_flat_) {
    grads_.assign(shapes_.size(), Tensor());  // autograd's gradients go here
    return;
  }
  if (!flat_.defined()) flat_ = Tensor::empty(Shape{static_cast<int64_t>(plan_.numel)}, DType::F32, device_);
  if (was_flat && grads_.size() == shapes_.size()) return;  // the views exist
  NoGradGuard no_grad;
  grads_.clear();
  for (size_t i = 0; i < shapes_.size(); ++i) {  // views into flat_, made once
    const auto begin = static_cast<int64_t>(plan_.offset[i]);
    grads_.push_back(ops::reshape(ops::slice(flat_, 0, begin, begin + shapes_[i].numel()), shapes_[i]));
  }
}

void GradientReducer::backward(const Tensor& loss, const ReplicaContext& ctx) {
  begin(*ctx.communicator);
  if (!accumulated_.empty()) {
    backward_with_accumulated(loss);
    return;
  }
  if (loss.defined()) {
    if (summed_into_flat_) {
      autograd::grad_into(local_, {loss}, params_, {}, false, false, /*allow_unused=*/true,
                          [this](size_t i, const Tensor& grad) { mark_ready(i, grad); });
    } else {  // one replica: autograd's gradients are the sums
      autograd::grad_into(grads_, {loss}, params_, {}, false, false, /*allow_unused=*/true);
    }
  }
  finish_backward();
}

void GradientReducer::accumulate(const Tensor& loss) {
  GANTRY_CHECK(!active(), "gradient reducer: accumulate during a reduction (call wait first)");
  if (!loss.defined()) return;
  autograd::grad_into(micro_, {loss}, params_, {}, false, false, /*allow_unused=*/true);
  NoGradGuard no_grad;
  accumulated_.resize(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!micro_[i].defined()) continue;
    accumulated_[i] = accumulated_[i].defined() ? ops::add(accumulated_[i], micro_[i]) : micro_[i];
    micro_[i] = Tensor();
  }
}

// The last micro-batch's backward (Note [accumulated gradients] in gradient_reducer.h): each
// gradient plus the sum of the earlier ones; a parameter only the earlier micro-batches reached
// gets that sum alone.
void GradientReducer::backward_with_accumulated(const Tensor& loss) {
  std::vector<Tensor> held = std::move(accumulated_);
  accumulated_.clear();
  auto with_held = [&held](size_t i, const Tensor& grad) {
    NoGradGuard no_grad;
    return held[i].defined() ? ops::add(held[i], grad) : grad;
  };
  if (summed_into_flat_) {
    if (loss.defined())
      autograd::grad_into(local_, {loss}, params_, {}, false, false, /*allow_unused=*/true,
                          [&](size_t i, const Tensor& grad) { mark_ready(i, with_held(i, grad)); });
    for (size_t i = 0; i < params_.size(); ++i)
      if (!ready_[i] && held[i].defined()) mark_ready(i, held[i]);
  } else {
    if (loss.defined()) autograd::grad_into(grads_, {loss}, params_, {}, false, false, /*allow_unused=*/true);
    grads_.resize(params_.size());
    for (size_t i = 0; i < params_.size(); ++i)
      if (held[i].defined()) grads_[i] = grads_[i].defined() ? with_held(i, grads_[i]) : held[i];
  }
  finish_backward();
}

void GradientReducer::mark_ready(size_t index, const Tensor& gradient) {
  GANTRY_CHECK(active(), "gradient reducer: mark_ready(", index, ") outside a reduction (call begin first)");
  GANTRY_CHECK(index < shapes_.size(), "gradient reducer: expected a parameter index below ", shapes_.size(),
               ", found ", index);
  GANTRY_CHECK(!ready_[index], "gradient reducer: parameter ", index, "'s gradient was reported twice");
  GANTRY_CHECK(gradient.dtype() == DType::F32 && gradient.device() == device_ &&
                   gradient.shape() == shapes_[index],
               "gradient reducer: parameter ", index, " expected an f32 gradient of shape ",
               shapes_[index].str(), " on ", device_.str(), ", found ", gradient.str());
  ready_[index] = true;
  if (!summed_into_flat_) {  // one replica: the gradients are already the sums
    grads_[index] = gradient;
    return;
  }
  ops::copy_(grads_[index], gradient);
  --missing_[plan_.bucket_of[index]];
  start_ready_buckets();
}

void GradientReducer::finish_backward() {
  GANTRY_CHECK(active(), "gradient reducer: finish_backward outside a reduction (call begin first)");
  if (!reducing()) return;
  for (size_t i = 0; i < shapes_.size(); ++i)
    if (!ready_[i]) {
      ops::fill_(grads_[i], 0.0);
      ready_[i] = true;
      --missing_[plan_.bucket_of[i]];
    }
  start_ready_buckets();
}

// Note [finite check]: with one replica there is no flat buffer: the gradients are the engine's
// own tensors. all_finite(grads) would run three ops per parameter (x * 0, its sum, adding it to
// the running total), each making a tensor. Instead each gradient times 0 goes into one scratch
// buffer (as large as the largest parameter) and its sum into the parameter's slot of a
// (parameters,) buffer, straight through the backend; one sum of that buffer is read back. The
// verdict is the same as all_finite's: every term is 0 (or -0) for finite values and NaN for NaN
// or Inf, so the total is 0 exactly when every value is finite, whatever the summation order.
bool GradientReducer::local_gradients_finite() {
  const std::vector<Tensor>& grads = grads_;
  NoGradGuard no_grad;
  if (!sums_scratch_.defined()) {
    int64_t largest = 1;
    for (const Shape& s : shapes_) largest = std::max(largest, s.numel());
    zeros_scratch_ = Tensor::empty(Shape{largest}, DType::F32, device_);
    sums_scratch_ = Tensor::empty(Shape{static_cast<int64_t>(std::max<size_t>(1, shapes_.size()))}, DType::F32,
                                  device_);
    total_scratch_ = Tensor::empty(Shape{1}, DType::F32, device_);
  }
  Backend& backend = backend_for(device_);
  const UnaryFn times_zero{UnaryOp::MulScalar, 0.f, 0.f};
  float* sums = static_cast<float*>(sums_scratch_.raw_data());
  backend.fill(sums_scratch_.view(), 0.0);
  for (size_t i = 0; i < grads.size(); ++i) {
    const Tensor& g = grads[i];
    GANTRY_CHECK(g.dtype() == DType::F32 && g.device() == device_ && g.shape() == shapes_[i],
                 "gradient reducer: parameter ", i, " expected an f32 gradient of shape ",
                 shapes_[i].str(), " on ", device_.str(), ", found ", g.str());
    const int64_t n = shapes_[i].numel();
    if (n == 0) continue;
    const View flat_gradient{g.raw_data(), Shape{n}, DType::F32, device_};
    const View zeros{zeros_scratch_.raw_data(), Shape{n}, DType::F32, device_};
    backend.unary(times_zero, flat_gradient, zeros);
    backend.reduce(ReduceFn{ReduceOp::Sum}, zeros, 1u, View{sums + i, Shape{1}, DType::F32, device_});
  }
  backend.reduce(ReduceFn{ReduceOp::Sum}, sums_scratch_.view(), 1u, total_scratch_.view());
  return total_scratch_.item() == 0.f;
}

void GradientReducer::start_ready_buckets() {
  while (next_ < plan_.buckets.size() && missing_[next_] == 0) {
    const GradientBucket& b = plan_.buckets[next_];
    std::span<float> data(static_cast<float*>(flat_.raw_data()) + b.begin, b.end - b.begin);
    auto t0 = Clock::now();
    pending_[next_] = comm_->start_all_reduce(data, ReduceKind::Sum);
    seconds_ += seconds_since(t0);
    ++next_;
  }
}

bool GradientReducer::wait() {
  GANTRY_CHECK(active(), "gradient reducer: wait outside a reduction (call backward first)");
  Communicator& comm = *comm_;
  comm_ = nullptr;  // ends the reduction, also when a wait throws
  local_.assign(local_.size(), Tensor());  // autograd's gradients were copied into the buckets
  if (!summed_into_flat_) {
    grads_.resize(shapes_.size());
    for (size_t i = 0; i < grads_.size(); ++i)
      if (!grads_[i].defined()) grads_[i] = ops::zeros(shapes_[i], device_);  // unused or empty shard
    return local_gradients_finite();
  }
  GANTRY_CHECK(next_ == plan_.buckets.size(), "gradient reducer: ", plan_.buckets.size() - next_,
               " of ", plan_.buckets.size(), " buckets were never started (call finish_backward first)");
  auto t0 = Clock::now();
  for (PendingCollective& p : pending_) p.wait();
  seconds_ += seconds_since(t0);
  flat_.bump_version();
  // Checked once on the summed buffer, which every rank holds alike (Note [non-finite updates] in
  // gan/step/trained_network.cpp).
  const bool finite = all_finite({flat_});  // a braced list: a view, no vector
  comm.check_async_errors("all_reduce");  // the read-back above saw every bucket's result
  return finite;
}

void GradientReducer::scale_gradients(float factor) {
  GANTRY_CHECK(!active(), "gradient reducer: scale_gradients during a reduction (call wait first)");
  NoGradGuard no_grad;
  if (summed_into_flat_) {
    ops::mul_(flat_, factor);
    return;
  }
  for (const Tensor& g : grads_) ops::mul_(g, factor);
}

}  // namespace gantry::distribute

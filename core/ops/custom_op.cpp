#include "core/ops/custom_op.h"

#include "core/ops/op_support.h"

namespace gantry::ops {

std::vector<Tensor> custom_op(const char* name, const std::vector<Tensor>& inputs, const CustomForward& forward,
                              CustomBackward backward) {
  CustomOpContext ctx;
  std::vector<Tensor> outputs;
  {
    NoGradGuard no_grad;
    outputs = forward(ctx, inputs);
  }
  for (const Tensor& out : outputs)
    GANTRY_CHECK(out.defined(), name, ": the forward of a custom op returned an undefined output");
  if (!autograd::GradMode::enabled() || !autograd::any_requires_grad(inputs)) return outputs;
  std::vector<Tensor*> outs;
  for (Tensor& out : outputs) outs.push_back(&out);
  std::vector<detail::Save> saves;
  for (const Tensor& t : ctx.saved()) saves.push_back({t, false});
  const size_t num_inputs = inputs.size();
  detail::record(name, outs, inputs, saves,
                 [name, num_inputs, backward = std::move(backward)](const GradList& grads, const GradList& saved,
                                                                    const autograd::Node&) -> GradList {
                   std::vector<Tensor> g = backward(std::vector<Tensor>(grads.begin(), grads.end()),
                                                    std::vector<Tensor>(saved.begin(), saved.end()));
                   GANTRY_CHECK(g.size() == num_inputs, name, ": the backward of a custom op must return one "
                                "gradient per input (", num_inputs, "), found ", g.size());
                   return GradList(g.begin(), g.end());
                 });
  return outputs;
}

}  // namespace gantry::ops

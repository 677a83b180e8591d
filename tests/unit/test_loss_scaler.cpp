// Loss scaling (gan/spec/loss_scaler.h, Note [dynamic loss scale]).
#include <gtest/gtest.h>

#include "base/error.h"
#include "gan/spec/loss_scaler.h"

namespace gantry::gan {
namespace {

LossScaleConfig dynamic(double scale, int64_t growth_interval) {
  return {LossScaleConfig::Mode::Dynamic, scale, growth_interval};
}

TEST(LossScaler, DisabledScaleIsOne) {
  LossScaler s;
  EXPECT_FALSE(s.enabled());
  EXPECT_EQ(s.scale(), 1.f);
  s.update(false);
  EXPECT_EQ(s.scale(), 1.f);
}

TEST(LossScaler, StaticScaleNeverChanges) {
  LossScaler s({LossScaleConfig::Mode::Static, 1024.0, 1});
  s.update(false);
  s.update(true);
  EXPECT_EQ(s.scale(), 1024.f);
}

TEST(LossScaler, DynamicHalvesOnOverflowAndDoublesAfterTheGrowthInterval) {
  LossScaler s(dynamic(65536.0, 3));
  s.update(false);
  EXPECT_EQ(s.scale(), 32768.f);
  s.update(true);
  s.update(true);
  EXPECT_EQ(s.scale(), 32768.f);
  EXPECT_EQ(s.finite_in_a_row(), 2);
  s.update(false);  // resets the run of finite updates
  EXPECT_EQ(s.scale(), 16384.f);
  for (int i = 0; i < 3; ++i) s.update(true);
  EXPECT_EQ(s.scale(), 32768.f);
  EXPECT_EQ(s.finite_in_a_row(), 0);
}

TEST(LossScaler, ScaleStaysWithinBounds) {
  LossScaler s(dynamic(1.0 / (1 << 24), 1));
  s.update(false);
  EXPECT_EQ(s.scale(), 1.f / (1 << 24));
}

TEST(LossScaler, RestoreContinuesWhereTheCheckpointLeft) {
  LossScaler a(dynamic(65536.0, 4)), b(dynamic(65536.0, 4));
  a.update(false);
  a.update(true);
  a.update(true);
  b.restore(a.scale(), a.finite_in_a_row());
  for (LossScaler* s : {&a, &b}) {
    s->update(true);
    s->update(true);
  }
  EXPECT_EQ(a.scale(), 65536.f);
  EXPECT_EQ(b.scale(), a.scale());
  EXPECT_THROW(b.restore(3.0, 0), Error);
}

TEST(LossScaler, ConfigErrorsNameTheKey) {
  try {
    validate(dynamic(1000.0, 2000), "train.loss_scale.scale");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("train.loss_scale.scale: expected a power of two"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("found 1000"), std::string::npos) << e.what();
  }
  EXPECT_THROW(validate(dynamic(1024.0, 0), "x"), Error);
  EXPECT_NO_THROW(validate({LossScaleConfig::Mode::None, 3.0, 0}, "x"));
}

}  // namespace
}  // namespace gantry::gan

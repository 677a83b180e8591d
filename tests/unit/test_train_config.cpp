// The "train" section's gradient accumulation key: default, written back, and errors that name
// the key and both numbers when the per-replica batch does not split.
#include <gtest/gtest.h>

#include "gan/config/train_config.h"

namespace gantry::gan {
namespace {

std::string error_of(nlohmann::json section, int64_t replicas) {
  try {
    resolve_train_config(section, replicas, {Device::cpu()});
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TrainConfig, MicroBatchesDefaultToOneAndAreWrittenBack) {
  nlohmann::json section = {{"global_batch_size", 16}};
  TrainConfig c = resolve_train_config(section, 2, {Device::cpu()});
  EXPECT_EQ(c.settings.micro_batches, 1);
  EXPECT_EQ(section["micro_batches"], 1);
  section = {{"global_batch_size", 16}, {"micro_batches", 4}};
  EXPECT_EQ(resolve_train_config(section, 2, {Device::cpu()}).settings.micro_batches, 4);
}

TEST(TrainConfig, MicroBatchesMustDivideThePerReplicaBatch) {
  const std::string e = error_of({{"global_batch_size", 16}, {"micro_batches", 3}}, 2);
  EXPECT_NE(e.find("train.micro_batches"), std::string::npos) << e;
  EXPECT_NE(e.find("per-replica batch 8"), std::string::npos) << e;
  EXPECT_NE(e.find("found 3"), std::string::npos) << e;
  const std::string uneven = error_of({{"global_batch_size", 15}, {"micro_batches", 2}}, 2);
  EXPECT_NE(uneven.find("train.micro_batches"), std::string::npos) << uneven;
  EXPECT_NE(uneven.find("global batch 15"), std::string::npos) << uneven;
  EXPECT_NE(error_of({{"global_batch_size", 16}, {"micro_batches", 0}}, 2).find("micro_batches"), std::string::npos);
  EXPECT_EQ(error_of({{"per_replica_batch_size", 6}, {"micro_batches", 3}}, 2), "(no error)");
}

}  // namespace
}  // namespace gantry::gan

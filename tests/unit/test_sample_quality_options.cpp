// hooks.metrics entries (hooks/sample_quality_hook.h): the per-type keys, their checks, and the
// grouping of entries that share one generated set.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "hooks/sample_quality_hook.h"
#include "support/temp_dir.h"

namespace gantry {
namespace {

hooks::SampleQualityOptions parse(nlohmann::json entry) { return hooks::parse_sample_quality_options(entry, "hooks.metrics[0]"); }

std::string error_of(nlohmann::json entry) {
  try {
    (void)parse(std::move(entry));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const nlohmann::json kNetwork = {{"file", "net.json"}};

TEST(SampleQualityOptions, TypesAndTheirKeys) {
  const hooks::SampleQualityOptions kid = parse({{"type", "kid"}, {"kid_subsets", 7}, {"kid_subset_size", 50}, {"network", kNetwork}});
  EXPECT_EQ(kid.name, "kid");
  EXPECT_EQ(kid.kid_subsets, 7);
  EXPECT_EQ(kid.kid_subset_size, 50);
  EXPECT_EQ(parse({{"type", "pr"}, {"k", 5}, {"network", kNetwork}}).pr_k, 5);
  EXPECT_EQ(parse({{"type", "is"}, {"splits", 4}, {"network", kNetwork}}).is_splits, 4);
  // density/coverage: "dc" or "density_coverage", its own k (default 5, the paper's), no best
  const hooks::SampleQualityOptions dc = parse({{"type", "density_coverage"}, {"network", kNetwork}});
  EXPECT_EQ(dc.type, "dc");
  EXPECT_EQ(dc.name, "density_coverage");
  EXPECT_EQ(dc.dc_k, 5);
  EXPECT_EQ(dc.pr_k, 3);
  EXPECT_EQ(parse({{"type", "dc"}, {"k", 7}, {"network", kNetwork}}).dc_k, 7);
  EXPECT_NE(error_of({{"type", "dc"}, {"keep_best", true}, {"network", kNetwork}}).find("density and coverage"),
            std::string::npos);
  EXPECT_NE(error_of({{"type", "dc"}, {"k", 0}, {"network", kNetwork}}).find("hooks.metrics[0].k"), std::string::npos);
  // intra-class FID: keep_best allowed (lower is better), no k
  const hooks::SampleQualityOptions intra = parse({{"type", "intra_fid"}, {"keep_best", true}, {"network", kNetwork}});
  EXPECT_EQ(intra.name, "intra_fid");
  EXPECT_TRUE(intra.keep_best);
  EXPECT_NE(error_of({{"type", "intra_fid"}, {"k", 3}, {"network", kNetwork}}).find("hooks.metrics[0].k"),
            std::string::npos);
  // a key of another type is unknown here
  EXPECT_NE(error_of({{"type", "fid"}, {"splits", 4}, {"network", kNetwork}}).find("hooks.metrics[0].splits"),
            std::string::npos);
  EXPECT_NE(error_of({{"type", "lpips"}, {"network", kNetwork}}).find("hooks.metrics[0].type"), std::string::npos);
  EXPECT_NE(error_of({{"type", "pr"}, {"keep_best", true}, {"network", kNetwork}}).find("keep_best"), std::string::npos);
  EXPECT_NE(error_of({{"type", "is"}, {"splits", 20}, {"num_fake", 10}, {"network", kNetwork}}).find("splits"),
            std::string::npos);
  EXPECT_NE(error_of({{"type", "kid"}, {"kid_subset_size", 1}, {"network", kNetwork}}).find("kid_subset_size"),
            std::string::npos);
}

TEST(SampleQualityOptions, AtStepsAddEvaluationsAndEveryStepsZeroLeavesOnlyThem) {
  const hooks::SampleQualityOptions rungs =
      parse({{"type", "fid"}, {"every_steps", 0}, {"at_steps", {4, 12, 36}}, {"network", kNetwork}});
  EXPECT_EQ(rungs.every_steps, 0);
  EXPECT_EQ(rungs.at_steps, (std::vector<int64_t>{4, 12, 36}));
  EXPECT_TRUE(parse({{"type", "fid"}, {"network", kNetwork}}).at_steps.empty());
  EXPECT_NE(error_of({{"type", "fid"}, {"every_steps", 0}, {"network", kNetwork}})
                .find("hooks.metrics[0].every_steps: expected an interval >= 1, or at_steps to name the steps, found 0"),
            std::string::npos);
  EXPECT_NE(error_of({{"type", "fid"}, {"at_steps", {4, 0}}, {"network", kNetwork}})
                .find("hooks.metrics[0].at_steps[1]: expected a step >= 1, found 0"),
            std::string::npos);
  EXPECT_NE(error_of({{"type", "fid"}, {"at_steps", {4, "x"}}, {"network", kNetwork}}).find("at_steps[1]"),
            std::string::npos);
  EXPECT_NE(error_of({{"type", "fid"}, {"at_steps", 4}, {"network", kNetwork}}).find("hooks.metrics[0].at_steps"),
            std::string::npos);
  // evaluated at other steps, so sampled by another hook
  EXPECT_FALSE(hooks::shares_samples(rungs, parse({{"type", "kid"}, {"every_steps", 0}, {"at_steps", {4}},
                                                   {"network", kNetwork}})));
}

TEST(SampleQualityOptions, EntriesWithTheSameSamplingShareOneHook) {
  const auto fid = parse({{"type", "fid"}, {"network", kNetwork}});
  const auto kid = parse({{"type", "kid"}, {"network", kNetwork}});
  const auto is_other_seed = parse({{"type", "is"}, {"seed", 3}, {"network", kNetwork}});
  const auto pr_other_net = parse({{"type", "pr"}, {"network", {{"file", "other.json"}}}});
  EXPECT_TRUE(hooks::shares_samples(fid, kid));
  EXPECT_FALSE(hooks::shares_samples(fid, is_other_seed));
  EXPECT_FALSE(hooks::shares_samples(fid, pr_other_net));
  testing::TempDir dir;
  const auto made = hooks::make_sample_quality_hooks({fid, is_other_seed, kid, pr_other_net}, dir.path(), {}, nullptr);
  ASSERT_EQ(made.size(), 3u);
  EXPECT_EQ(made[0]->num_metrics(), 2u);  // fid and kid
  EXPECT_EQ(made[0]->jsonl_path(1).filename(), "metric-kid.jsonl");
  EXPECT_EQ(made[1]->num_metrics(), 1u);
  EXPECT_EQ(made[2]->num_metrics(), 1u);
  // two entries of one group writing the same file are refused
  EXPECT_THROW(hooks::make_sample_quality_hooks({fid, fid}, dir.path(), {}, nullptr), Error);
}

}  // namespace
}  // namespace gantry

// The real-statistics cache (metrics/statistics_cache.h): the key changes with every input, a
// stored entry (moments, features, moments per class) loads back bit for bit, and a corrupt or
// truncated file is rebuilt.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "core/ops/ops.h"
#include "metrics/statistics_cache.h"
#include "support/temp_dir.h"

namespace gantry {
namespace {

metrics::RealStatisticsKey base_key() {
  return {"fashion-mnist train (47040016 bytes)", "source(60000) -> shuffle -> batch(64)", "{\"weights\":\"abc\"}", 100};
}

metrics::FeatureMoments some_moments(int64_t n, uint64_t seed) {
  metrics::FeatureMoments m;
  m.add(ops::randn(Shape{n, 5}, RngKey{seed, 1}));
  return m;
}

TEST(StatisticsCache, KeyChangesWhenAnyInputChanges) {
  const metrics::RealStatisticsKey k = base_key();
  EXPECT_EQ(k.hash(), base_key().hash());
  EXPECT_EQ(k.hash().size(), 16u);
  metrics::RealStatisticsKey other = k;
  other.dataset += "x";
  EXPECT_NE(other.hash(), k.hash());
  other = k;
  other.transforms = "source(60000) -> batch(64)";
  EXPECT_NE(other.hash(), k.hash());
  other = k;
  other.network = "{\"weights\":\"abd\"}";
  EXPECT_NE(other.hash(), k.hash());
  other = k;
  other.sample_count = 101;
  EXPECT_NE(other.hash(), k.hash());
}

TEST(StatisticsCache, DescribeFilesChangesWithTheFile) {
  testing::TempDir dir;
  const std::string file = dir.file("data.bin");
  std::ofstream(file) << "abc";
  const std::string before = metrics::describe_files({file});
  std::ofstream(file) << "abcd";
  EXPECT_NE(metrics::describe_files({file}), before);
  EXPECT_NE(before.find("3 bytes"), std::string::npos);
}

TEST(StatisticsCache, StoredMomentsLoadBackExactly) {
  testing::TempDir dir;
  const metrics::StatisticsCache cache(dir.path());
  EXPECT_FALSE(cache.load(base_key()).has_value());
  const metrics::FeatureMoments m = some_moments(100, 2);
  cache.store(base_key(), m);
  std::optional<metrics::FeatureMoments> back = cache.load(base_key());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->serialize(), m.serialize());
  metrics::RealStatisticsKey other = base_key();
  other.sample_count = 100;
  other.network = "another";
  EXPECT_FALSE(cache.load(other).has_value());  // another file name
}

TEST(StatisticsCache, CorruptOrTruncatedFilesAreRebuilt) {
  testing::TempDir dir;
  std::ostringstream log;
  const metrics::StatisticsCache cache(dir.path(), &log);
  const metrics::FeatureMoments m = some_moments(100, 3);
  cache.store(base_key(), m);
  const std::filesystem::path file = cache.file_for(base_key());
  {  // flip one byte of the data section (the last byte of the file)
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-1, std::ios::end);
    char c = 0;
    f.read(&c, 1);
    f.seekp(-1, std::ios::end);
    c = static_cast<char>(c ^ 0x5a);
    f.write(&c, 1);
  }
  EXPECT_FALSE(cache.load(base_key()).has_value());
  EXPECT_NE(log.str().find("checksum"), std::string::npos) << log.str();
  int computed = 0;
  const metrics::FeatureMoments rebuilt = cache.get_or_compute(base_key(), [&] {
    ++computed;
    return m;
  });
  EXPECT_EQ(computed, 1);
  EXPECT_EQ(rebuilt.serialize(), m.serialize());
  ASSERT_TRUE(cache.load(base_key()).has_value());  // the rebuilt file is valid
  cache.get_or_compute(base_key(), [&] {
    ++computed;
    return m;
  });
  EXPECT_EQ(computed, 1);  // served from the cache

  std::filesystem::resize_file(file, std::filesystem::file_size(file) / 2);
  EXPECT_FALSE(cache.load(base_key()).has_value());
  EXPECT_EQ(cache.get_or_compute(base_key(), [&] { ++computed; return m; }).count(), 100);
  EXPECT_EQ(computed, 2);
}

// KID and precision/recall need the real features themselves: cached next to the moments, with
// the same checks (wrong row count, corruption, other key).
TEST(StatisticsCache, RealFeaturesLoadBackExactlyAndCorruptOnesAreRebuilt) {
  testing::TempDir dir;
  std::ostringstream log;
  const metrics::StatisticsCache cache(dir.path(), &log);
  const Tensor features = ops::randn(Shape{100, 7}, RngKey{4, 1});
  int computed = 0;
  const auto compute = [&] {
    ++computed;
    return features;
  };
  EXPECT_EQ(cache.features_or_compute(base_key(), compute).to_vector(), features.to_vector());
  EXPECT_EQ(cache.features_or_compute(base_key(), compute).to_vector(), features.to_vector());
  EXPECT_EQ(computed, 1);  // the second came from the file
  EXPECT_NE(cache.features_file_for(base_key()), cache.file_for(base_key()));
  metrics::RealStatisticsKey other = base_key();
  other.transforms = "other";
  EXPECT_FALSE(cache.load_features(other).has_value());
  EXPECT_THROW(cache.store_features(other, ops::randn(Shape{99, 7}, RngKey{5, 1})), Error);  // 99 rows for 100

  const std::filesystem::path file = cache.features_file_for(base_key());
  {  // flip one byte of the data section
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    const char c = 0x11;
    f.write(&c, 1);
  }
  EXPECT_FALSE(cache.load_features(base_key()).has_value());
  EXPECT_NE(log.str().find("checksum"), std::string::npos) << log.str();
  EXPECT_EQ(cache.features_or_compute(base_key(), compute).to_vector(), features.to_vector());
  EXPECT_EQ(computed, 2);
  ASSERT_TRUE(cache.load_features(base_key()).has_value());
}

// Intra-class FID's real moments per class: one file beside the others, the class count and the
// total sample count checked, corruption rebuilt.
TEST(StatisticsCache, ClassMomentsLoadBackExactlyAndBadOnesAreRebuilt) {
  testing::TempDir dir;
  std::ostringstream log;
  const metrics::StatisticsCache cache(dir.path(), &log);
  const std::vector<metrics::FeatureMoments> classes = {some_moments(30, 6), some_moments(45, 7), some_moments(25, 8)};
  int computed = 0;
  const auto compute = [&] {
    ++computed;
    return classes;
  };
  EXPECT_FALSE(cache.load_class_moments(base_key(), 3).has_value());
  const auto first = cache.class_moments_or_compute(base_key(), 3, compute);
  const auto second = cache.class_moments_or_compute(base_key(), 3, compute);
  EXPECT_EQ(computed, 1);  // the second came from the file
  ASSERT_EQ(second.size(), 3u);
  for (size_t c = 0; c < 3; ++c) EXPECT_EQ(second[c].serialize(), classes[c].serialize()) << "class " << c;
  EXPECT_NE(log.str().find("real class statistics cached in"), std::string::npos) << log.str();
  const std::filesystem::path file = cache.class_moments_file_for(base_key());
  EXPECT_NE(file, cache.file_for(base_key()));
  EXPECT_NE(file, cache.features_file_for(base_key()));
  EXPECT_TRUE(std::filesystem::exists(file));

  EXPECT_FALSE(cache.load_class_moments(base_key(), 4).has_value());  // another class count
  EXPECT_NE(log.str().find("expected 4 classes, found 3"), std::string::npos) << log.str();
  metrics::RealStatisticsKey other = base_key();
  other.sample_count = 100;
  cache.store_class_moments(other, {some_moments(30, 6), some_moments(30, 7)});  // 60 samples for 100
  EXPECT_FALSE(cache.load_class_moments(other, 2).has_value());
  EXPECT_NE(log.str().find("expected 100 samples over the classes, found 60"), std::string::npos) << log.str();

  {  // flip one byte of the data section
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-5, std::ios::end);
    char c = 0;
    f.read(&c, 1);
    f.seekp(-5, std::ios::end);
    c = static_cast<char>(c ^ 0x33);
    f.write(&c, 1);
  }
  EXPECT_FALSE(cache.load_class_moments(base_key(), 3).has_value());
  EXPECT_NE(log.str().find("checksum"), std::string::npos) << log.str();
  cache.class_moments_or_compute(base_key(), 3, compute);
  EXPECT_EQ(computed, 2);
  ASSERT_TRUE(cache.load_class_moments(base_key(), 3).has_value());
}

}  // namespace
}  // namespace gantry

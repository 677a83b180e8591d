// SubsetDataset (data.max_examples): a fixed random subset in source order, the same every time,
// drawn from the whole source, so a class-ordered source keeps every class.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "base/error.h"
#include "data/subset_dataset.h"

namespace gantry::data {
namespace {

// n examples in class order: image (1, 1, 1) f32 = i, label i / (n / classes).
DatasetPtr class_ordered(int64_t n, int64_t classes) {
  Tensor images = Tensor::empty(Shape{n, 1, 1, 1}, DType::F32);
  Tensor labels = Tensor::empty(Shape{n}, DType::I64);
  for (int64_t i = 0; i < n; ++i) {
    images.data<float>()[i] = static_cast<float>(i);
    labels.data<int64_t>()[i] = i / (n / classes);
  }
  return std::make_shared<TensorDataset>(images, labels, "class-ordered");
}

TEST(SubsetDataset, RandomSortedDistinctAndTheSameEveryTime) {
  const DatasetPtr source = class_ordered(1000, 10);
  SubsetDataset subset(source, 100);
  ASSERT_EQ(subset.size(), 100);
  const std::vector<int64_t>& picked = subset.source_indices();
  EXPECT_TRUE(std::is_sorted(picked.begin(), picked.end()));
  EXPECT_EQ(std::set<int64_t>(picked.begin(), picked.end()).size(), 100u);
  EXPECT_GE(picked.front(), 0);
  EXPECT_LT(picked.back(), 1000);
  EXPECT_GT(picked.back(), 99) << "the first 100 examples, not a random subset";
  EXPECT_EQ(SubsetDataset(source, 100).source_indices(), picked);

  std::set<int64_t> classes;
  for (int64_t i = 0; i < subset.size(); ++i) {
    const Example ex = subset.get(i);
    EXPECT_EQ(ex.index, i);  // the position in the subset, which random transforms key by
    EXPECT_EQ(ex.image.data<float>()[0], static_cast<float>(picked[static_cast<size_t>(i)]));
    classes.insert(*ex.label);
  }
  EXPECT_EQ(classes.size(), 10u);
  EXPECT_EQ(SubsetDataset(source, 1000).source_indices().back(), 999);  // all of them
}

TEST(SubsetDataset, CountAndIndexErrorsNameTheSource) {
  const DatasetPtr source = class_ordered(10, 2);
  for (int64_t count : {0, 11}) {
    try {
      SubsetDataset subset(source, count);
      ADD_FAILURE() << "count " << count << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("class-ordered"), std::string::npos) << e.what();
    }
  }
  SubsetDataset subset(source, 3);
  EXPECT_THROW(subset.get(3), Error);
}

}  // namespace
}  // namespace gantry::data

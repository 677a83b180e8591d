// SmallVector, ArrayRef and InlineFunction: the inline containers of the autograd hot path.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "base/array_ref.h"
#include "base/inline_function.h"
#include "base/small_vector.h"

namespace gantry {
namespace {

TEST(SmallVector, StaysInlineUpToNAndSpillsBeyond) {
  SmallVector<std::string, 2> v;
  v.push_back("a");
  v.emplace_back("b");
  EXPECT_EQ(v.capacity(), 2u);
  const std::string* inline_data = v.data();
  v.push_back("a string long enough to live on the heap itself");
  EXPECT_NE(v.data(), inline_data);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], "a");
  EXPECT_EQ(v[1], "b");
  EXPECT_EQ(v.back(), "a string long enough to live on the heap itself");
  v.pop_back();
  EXPECT_EQ(v.size(), 2u);
}

TEST(SmallVector, CopiesAndMovesInlineAndHeapContents) {
  for (size_t n : {1u, 3u, 9u}) {
    SmallVector<std::shared_ptr<int>, 3> a;
    for (size_t i = 0; i < n; ++i) a.push_back(std::make_shared<int>(static_cast<int>(i)));
    SmallVector<std::shared_ptr<int>, 3> copy(a);
    ASSERT_EQ(copy.size(), n);
    EXPECT_EQ(copy[0], a[0]);
    EXPECT_EQ(a[0].use_count(), 2);
    SmallVector<std::shared_ptr<int>, 3> moved(std::move(a));
    EXPECT_TRUE(a.empty());
    ASSERT_EQ(moved.size(), n);
    EXPECT_EQ(*moved[n - 1], static_cast<int>(n - 1));
    EXPECT_EQ(moved[0].use_count(), 2);  // moved, not copied
    copy = std::move(moved);
    EXPECT_EQ(copy[0].use_count(), 1);  // the old copies were released
    moved = copy;
    EXPECT_EQ(moved.size(), n);
  }
}

TEST(SmallVector, PushingAnOwnElementWhileGrowingCopiesItFirst) {
  SmallVector<std::string, 1> v{"an element longer than the small string buffer"};
  for (int i = 0; i < 5; ++i) v.push_back(v[0]);
  ASSERT_EQ(v.size(), 6u);
  EXPECT_EQ(v[5], "an element longer than the small string buffer");
}

TEST(SmallVector, ResizeAssignAndClear) {
  SmallVector<int, 4> v(3);
  EXPECT_EQ(v.size(), 3u);
  EXPECT_EQ(v[2], 0);  // value-initialised
  v.assign(6, 7);
  ASSERT_EQ(v.size(), 6u);
  EXPECT_EQ(v[5], 7);
  v.resize(2);
  EXPECT_EQ(v.size(), 2u);
  v.clear();
  EXPECT_TRUE(v.empty());
  SmallVector<bool, 4> flags;
  flags.assign(3, false);
  flags[1] = true;
  EXPECT_FALSE(flags[0]);
  EXPECT_TRUE(flags[1]);
}

int total(ArrayRef<int> values) {
  int t = 0;
  for (int v : values) t += v;
  return t;
}

TEST(ArrayRef, ViewsBracedListsVectorsAndSmallVectors) {
  EXPECT_EQ(total({}), 0);
  EXPECT_EQ(total({1, 2, 3}), 6);
  std::vector<int> v{4, 5};
  EXPECT_EQ(total(v), 9);
  SmallVector<int, 2> s{6, 7, 8};
  EXPECT_EQ(total(s), 21);
  ArrayRef<int> r(v);
  EXPECT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1], 5);
  EXPECT_EQ(r.data(), v.data());
}

TEST(InlineFunction, CallsStoresCapturesAndDestroysThem) {
  auto token = std::make_shared<int>(5);
  {
    InlineFunction<int(int), 64> f([token, offset = 10](int x) { return x + offset + *token; });
    EXPECT_EQ(f(1), 16);
    EXPECT_EQ(token.use_count(), 2);
  }
  EXPECT_EQ(token.use_count(), 1);  // the capture was destroyed with the function
}

}  // namespace
}  // namespace gantry

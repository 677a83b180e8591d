#include "data/input_order.h"

#include <algorithm>

#include "base/error.h"
#include "base/philox.h"

namespace gantry::data::detail {

namespace {

constexpr uint64_t kShufflePurpose = 0x73687566666c65ULL;  // "shuffle"

class SourceIter final : public OrderIter {
 public:
  SourceIter(int64_t size, int64_t epoch) : size_(size), epoch_(epoch) {}
  std::optional<Item> next() override {
    if (next_ >= size_) return std::nullopt;
    return Item{next_++, epoch_};
  }
  void save(std::vector<StageState>& out) const override {
    out.push_back({StageKind::Source, next_, 0});
  }
  void restore(const std::vector<StageState>& states) override {
    const StageState& s = states[0];
    GANTRY_CHECK(s.a >= 0 && s.a <= size_, "input state: source: expected a next index in [0, ",
                 size_, "], found ", s.a);
    next_ = s.a;
  }

 private:
  int64_t size_;
  int64_t epoch_;
  int64_t next_ = 0;
};

class ShuffleIter final : public OrderIter {
 public:
  ShuffleIter(std::unique_ptr<OrderIter> input, size_t level, int64_t buffer, uint64_t seed,
              int64_t epoch)
      : input_(std::move(input)),
        level_(level),
        capacity_(buffer),
        key_{seed, stream_id(kShufflePurpose, static_cast<uint64_t>(epoch))} {}

  std::optional<Item> next() override {
    if (!filled_) {
      filled_ = true;
      buffer_.reserve(static_cast<size_t>(std::min<int64_t>(capacity_, 1 << 20)));
      while (static_cast<int64_t>(buffer_.size()) < capacity_) {
        auto item = input_->next();
        if (!item) break;
        buffer_.push_back(*item);
      }
    }
    if (buffer_.empty()) return std::nullopt;
    Philox4 r = philox_block(key_, static_cast<uint64_t>(drawn_++));
    uint64_t x = (uint64_t{r.v[1]} << 32) | r.v[0];
    size_t j = static_cast<size_t>(x % buffer_.size());
    Item out = buffer_[j];
    if (auto refill = input_->next()) {
      buffer_[j] = *refill;
    } else {
      buffer_[j] = buffer_.back();
      buffer_.pop_back();
    }
    return out;
  }
  void save(std::vector<StageState>& out) const override {
    input_->save(out);
    out.push_back({StageKind::Shuffle, drawn_, 0});
  }
  // The input is as opened (start of this shuffle's epoch): replay the draws, then check that
  // the input arrived where the saved state says.
  void restore(const std::vector<StageState>& states) override {
    const int64_t draws = states[level_].a;
    GANTRY_CHECK(draws >= 0, "input state: shuffle: expected a non-negative draw count, found ",
                 draws);
    for (int64_t k = 0; k < draws; ++k)
      GANTRY_CHECK(next().has_value(), "input state: shuffle: expected ", draws,
                   " draws from its input, found only ", k);
    std::vector<StageState> replayed;
    input_->save(replayed);
    GANTRY_CHECK(std::equal(replayed.begin(), replayed.end(), states.begin()),
                 "input state: the stages below shuffle at level ", level_,
                 " do not match the replayed shuffle (was the state saved for another dataset "
                 "or seed?)");
  }

 private:
  std::unique_ptr<OrderIter> input_;
  size_t level_;
  int64_t capacity_;
  RngKey key_;
  std::vector<Item> buffer_;
  bool filled_ = false;
  int64_t drawn_ = 0;
};

class ShardIter final : public OrderIter {
 public:
  ShardIter(std::unique_ptr<OrderIter> input, size_t level, int64_t shards, int64_t index)
      : input_(std::move(input)), level_(level), shards_(shards), index_(index) {}
  std::optional<Item> next() override {
    while (auto item = input_->next()) {
      if (consumed_++ % shards_ == index_) return item;
    }
    return std::nullopt;
  }
  void save(std::vector<StageState>& out) const override {
    input_->save(out);
    out.push_back({StageKind::Shard, consumed_, 0});
  }
  void restore(const std::vector<StageState>& states) override {
    input_->restore(states);
    consumed_ = states[level_].a;
    GANTRY_CHECK(consumed_ >= 0, "input state: shard: expected a non-negative count, found ",
                 consumed_);
  }

 private:
  std::unique_ptr<OrderIter> input_;
  size_t level_;
  int64_t shards_, index_;
  int64_t consumed_ = 0;
};

class RepeatIter final : public OrderIter {
 public:
  RepeatIter(const Plan& plan, size_t level, int64_t count, int64_t outer_epoch)
      : plan_(plan), level_(level), count_(count), outer_epoch_(outer_epoch) {
    open(0);
  }
  std::optional<Item> next() override {
    while (count_ < 0 || epoch_ < count_) {
      if (auto item = input_->next()) {
        ++emitted_;
        return item;
      }
      if (emitted_ == 0) {  // an empty input would repeat forever
        epoch_ = count_ < 0 ? epoch_ : count_;
        return std::nullopt;
      }
      open(epoch_ + 1);
    }
    return std::nullopt;
  }
  void save(std::vector<StageState>& out) const override {
    input_->save(out);
    out.push_back({StageKind::Repeat, epoch_, emitted_});
  }
  void restore(const std::vector<StageState>& states) override {
    const StageState& s = states[level_];
    GANTRY_CHECK(s.a >= 0 && (count_ < 0 || s.a <= count_) && s.b >= 0, "input state: repeat(",
                 count_, "): expected an epoch in [0, ", count_,
                 "] and a non-negative element count, found epoch ", s.a, ", count ", s.b);
    open(s.a);
    input_->restore(states);
    emitted_ = s.b;
  }

 private:
  void open(int64_t epoch) {
    epoch_ = epoch;
    emitted_ = 0;
    // Nested finite repeats number the inner epochs consecutively.
    int64_t inner = count_ >= 0 ? outer_epoch_ * count_ + epoch : epoch;
    input_ = open_chain(plan_, level_ - 1, inner);
  }

  const Plan& plan_;
  size_t level_;
  int64_t count_;
  int64_t outer_epoch_;
  int64_t epoch_ = 0;
  int64_t emitted_ = 0;
  std::unique_ptr<OrderIter> input_;
};

}  // namespace

std::unique_ptr<OrderIter> open_chain(const Plan& plan, size_t level, int64_t epoch) {
  if (level == 0) return std::make_unique<SourceIter>(plan.dataset->size(), epoch);
  const StageSpec& s = plan.order[level - 1];
  switch (s.kind) {
    case StageKind::Shuffle:
      return std::make_unique<ShuffleIter>(open_chain(plan, level - 1, epoch), level, s.n, s.seed,
                                           epoch);
    case StageKind::Shard:
      return std::make_unique<ShardIter>(open_chain(plan, level - 1, epoch), level, s.n, s.index);
    case StageKind::Repeat:
      return std::make_unique<RepeatIter>(plan, level, s.n, epoch);
    default:
      break;
  }
  GANTRY_FAIL("pipeline: internal: ", kind_name(s.kind), " is not an order stage");
}

}  // namespace gantry::data::detail

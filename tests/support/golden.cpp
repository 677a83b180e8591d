#include "support/golden.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/autograd/engine.h"
#include "support/test_paths.h"

namespace gantry::testing {

namespace {

// Next line that is neither empty nor a comment; false at end of file.
bool next_line(std::istream& in, std::string& line, int& line_no) {
  while (std::getline(in, line)) {
    ++line_no;
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    return true;
  }
  return false;
}

int64_t parse_int(const std::string& token, const std::string& where) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(token.c_str(), &end, 10);
  GANTRY_CHECK(errno == 0 && end != token.c_str() && *end == '\0', where,
               ": expected an integer, found '", token, "'");
  return static_cast<int64_t>(v);
}

float parse_float(const std::string& token, const std::string& where) {
  char* end = nullptr;
  errno = 0;
  float v = std::strtof(token.c_str(), &end);
  GANTRY_CHECK(errno == 0 && end != token.c_str() && *end == '\0' && std::isfinite(v), where,
               ": expected a finite float, found '", token, "'");
  return v;
}

}  // namespace

GoldenFile::GoldenFile(const std::string& path) : path_(path) {
  std::ifstream in(path);
  GANTRY_CHECK(in.good(), "golden file ", path,
               ": cannot open (regenerate with /usr/bin/python3 tests/golden/make_golden.py)");
  std::string line;
  int line_no = 0;
  while (next_line(in, line, line_no)) {
    std::istringstream header(line);
    GoldenArray a;
    std::string rank_token;
    header >> a.name >> rank_token;
    std::string where = detail::concat("golden file ", path, " line ", line_no, " entry '",
                                       a.name, "'");
    GANTRY_CHECK(!rank_token.empty(), where, ": expected '<name> <rank> <dims...>', found '",
                 line, "'");
    int64_t rank = parse_int(rank_token, where + " rank");
    GANTRY_CHECK(rank >= 0 && rank <= kMaxRank, where, ": rank ", rank, " out of range");
    int64_t numel = 1;
    for (int64_t d = 0; d < rank; ++d) {
      std::string token;
      GANTRY_CHECK(static_cast<bool>(header >> token), where, ": expected ", rank,
                   " dimensions, found ", d);
      int64_t size = parse_int(token, where + " dimension");
      GANTRY_CHECK(size >= 0, where, ": negative dimension ", size);
      a.shape.push_back(size);
      numel *= size;
    }
    std::string extra;
    GANTRY_CHECK(!(header >> extra), where, ": unexpected '", extra, "' after the shape");
    GANTRY_CHECK(arrays_.count(a.name) == 0, where, ": duplicate entry");

    GANTRY_CHECK(next_line(in, line, line_no), where, ": missing the line of values");
    std::istringstream values(line);
    std::string token;
    a.values.reserve(static_cast<size_t>(numel));
    while (values >> token) a.values.push_back(parse_float(token, where));
    GANTRY_CHECK(static_cast<int64_t>(a.values.size()) == numel, where, ": expected ", numel,
                 " values for its shape, found ", a.values.size());
    arrays_.emplace(a.name, std::move(a));
  }
  GANTRY_CHECK(!arrays_.empty(), "golden file ", path, ": no entries");
}

GoldenFile GoldenFile::load(const std::string& case_name) {
  return GoldenFile(golden_dir() + "/" + case_name + ".txt");
}

const GoldenArray& GoldenFile::get(const std::string& name) const {
  auto it = arrays_.find(name);
  GANTRY_CHECK(it != arrays_.end(), "golden file ", path_, ": no entry '", name, "'");
  return it->second;
}

std::vector<std::string> GoldenFile::names() const {
  std::vector<std::string> out;
  for (const auto& [name, array] : arrays_) out.push_back(name);
  return out;
}

Tensor GoldenFile::tensor(const std::string& name, bool requires_grad) const {
  const GoldenArray& a = get(name);
  Tensor t = ops::from_vector(a.values, Shape(a.shape));
  if (requires_grad) t.set_requires_grad(true);
  return t;
}

Tensor GoldenFile::index_tensor(const std::string& name) const {
  const GoldenArray& a = get(name);
  std::vector<int64_t> idx;
  for (float v : a.values) {
    GANTRY_CHECK(v == std::floor(v), "golden file ", path_, " entry '", name,
                 "': expected integer values, found ", v);
    idx.push_back(static_cast<int64_t>(v));
  }
  return ops::from_vector(idx, Shape(a.shape));
}

::testing::AssertionResult golden_close(const Tensor& got, const GoldenFile& file,
                                        const std::string& name, Tolerance tol) {
  const GoldenArray& ref = file.get(name);
  const std::string what = detail::concat(file.path(), " entry '", name, "'");
  if (!got.defined())
    return ::testing::AssertionFailure() << what << ": the computed tensor is undefined";
  Shape ref_shape(ref.shape);
  if (got.shape() != ref_shape)
    return ::testing::AssertionFailure()
           << what << ": shape " << got.shape().str() << ", reference " << ref_shape.str();
  std::vector<float> g = got.to_vector();
  int64_t failures = 0, worst = -1;
  double worst_excess = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    double r = ref.values[i];
    double err = std::fabs(static_cast<double>(g[i]) - r);
    double allowed = tol.atol + tol.rtol * std::fabs(r);
    if (!(err <= allowed)) {  // NaN fails
      ++failures;
      double excess = std::isnan(err) ? INFINITY : err / allowed;
      if (worst < 0 || excess > worst_excess) {
        worst = static_cast<int64_t>(i);
        worst_excess = excess;
      }
    }
  }
  if (failures == 0) return ::testing::AssertionSuccess();
  double r = ref.values[static_cast<size_t>(worst)];
  std::ostringstream msg;
  msg.precision(9);
  msg << what << ": " << failures << " of " << g.size() << " elements differ; worst element "
      << worst << ": got " << g[static_cast<size_t>(worst)] << ", reference " << r << ", |diff| "
      << std::fabs(g[static_cast<size_t>(worst)] - r) << " > allowed "
      << tol.atol + tol.rtol * std::fabs(r) << " (atol " << tol.atol << ", rtol " << tol.rtol
      << ")";
  return ::testing::AssertionFailure() << msg.str();
}

void expect_forward_and_grads(const GoldenFile& f, const Tensor& out, const NamedInputs& inputs, Tolerance tol) {
  EXPECT_TRUE(golden_close(out, f, "out", tol));
  Tensor loss = ops::sum(ops::mul(out, f.tensor("w_out")));
  std::vector<Tensor> leaves;
  for (const auto& [name, t] : inputs) leaves.push_back(t);
  std::vector<Tensor> grads = autograd::grad({loss}, leaves);
  ASSERT_EQ(grads.size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    EXPECT_TRUE(golden_close(grads[i], f, "grad_" + inputs[i].first, tol));
}

Tensor golden_wave(const Shape& shape, double freq, bool cosine) {
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) {
    const double a = freq * static_cast<double>(i);
    v[i] = static_cast<float>(cosine ? std::cos(a) : std::sin(a));
  }
  return ops::from_vector(v, shape);
}

}  // namespace gantry::testing

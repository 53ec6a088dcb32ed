// A C++ program whose hot path is made of always_inline helpers in
// namespaces and a template, so -O2 -g gives nested DW_TAG_inlined_subroutine
// chains (what "Show inline frames" displays).
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace geometry {
namespace detail {

__attribute__((always_inline)) inline int Scale(int v, int k) { return v * k + (v >> 3); }

}  // namespace detail

template <typename T>
__attribute__((always_inline)) inline T Accumulate(const std::vector<T>& values, int k) {
  T total = 0;
  for (const T& v : values) total += detail::Scale(static_cast<int>(v), k);
  return total;
}

struct Shape {
  std::vector<int> sides;
  __attribute__((noinline)) long Perimeter(int k) const { return Accumulate(sides, k); }
};

}  // namespace geometry

namespace render {

__attribute__((always_inline)) inline long DrawOne(const geometry::Shape& s, int k) {
  return s.Perimeter(k) + geometry::Accumulate(s.sides, k + 1);
}

__attribute__((noinline)) long DrawAll(const std::vector<geometry::Shape>& shapes, int k) {
  long sum = 0;
  for (const auto& s : shapes) sum += DrawOne(s, k);
  return sum;
}

}  // namespace render

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 5;
  std::vector<geometry::Shape> shapes(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) shapes[static_cast<size_t>(i)].sides.push_back(i + j);
  std::printf("%ld\n", render::DrawAll(shapes, n));
  return 0;
}

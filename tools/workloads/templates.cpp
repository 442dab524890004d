/* SPDX-License-Identifier: MIT */
// g++ workload for bench/traces/gxx.ltrace.xz: a template-heavy translation
// unit (standard containers, algorithms, variant/visit, recursive templates).
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <variant>
#include <vector>

template <int N> struct Fib { static constexpr long value = Fib<N - 1>::value + Fib<N - 2>::value; };
template <> struct Fib<1> { static constexpr long value = 1; };
template <> struct Fib<0> { static constexpr long value = 0; };

template <typename... Ts> struct TypeList {};
template <typename L, template <typename> class F> struct Map;
template <typename... Ts, template <typename> class F> struct Map<TypeList<Ts...>, F> { using type = TypeList<typename F<Ts>::type...>; };
template <typename T> struct AddPtr { using type = T *; };

template <int I> struct Node {
  std::map<std::string, std::vector<std::tuple<int, double, std::string>>> m;
  std::unordered_map<int, std::optional<std::set<long>>> u;
  std::variant<int, double, std::string, std::vector<int>> v;
  long work() const {
    long s = Fib<(I % 40) + 5>::value;
    for (auto &kv : m) s += (long)kv.first.size() + (long)kv.second.size();
    for (auto &kv : u) s += kv.first + (kv.second ? (long)kv.second->size() : 0);
    s += std::visit([](auto &&x) -> long {
      using X = std::decay_t<decltype(x)>;
      if constexpr (std::is_same_v<X, std::string>) return (long)x.size();
      else if constexpr (std::is_same_v<X, std::vector<int>>) return std::accumulate(x.begin(), x.end(), 0L);
      else return (long)x;
    }, v);
    return s;
  }
};

template <int... Is> long run_all(std::integer_sequence<int, Is...>) {
  long s = 0;
  ((s += Node<Is>{}.work()), ...);
  std::vector<std::function<long()>> fs;
  ((fs.push_back([] { return Node<Is * 3>{}.work(); })), ...);
  for (auto &f : fs) s += f();
  return s;
}

using L = Map<TypeList<int, long, double, char, float, short>, AddPtr>::type;

int main(int argc, char **argv) {
  std::regex re("(\\w+)@(\\w+)\\.com");
  std::smatch m;
  std::string s(argv[0]);
  long r = std::regex_search(s, m, re) ? 1 : 0;
  std::vector<std::pair<std::string, int>> v;
  for (int i = 0; i < argc; i++) v.emplace_back(argv[i], i);
  std::sort(v.begin(), v.end());
  auto p = std::make_shared<std::map<int, std::string>>();
  return (int)(r + run_all(std::make_integer_sequence<int, 24>{}) + (long)v.size() + (long)p->size());
}

/* SPDX-License-Identifier: MIT */
// program_gxx: compiled by g++ under lithe, then run under lithe. Uses the
// STL's allocating containers on 4 threads; every figure is checked here and
// printed, and the driver compares the output with the expected lines.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#define CHECK(c) \
  do { if (!(c)) { std::fprintf(stderr, "stl.cpp:%d: CHECK failed: %s\n", __LINE__, #c); return 1; } } while (0)

static uint64_t lcg(uint64_t &s) { return s = s * 6364136223846793005ULL + 1442695040888963407ULL; }

int main() {
  // vector + sort
  std::vector<uint32_t> v;
  uint64_t s = 1;
  for (int i = 0; i < 1000000; i++) v.push_back((uint32_t)(lcg(s) >> 40));
  std::sort(v.begin(), v.end());
  CHECK(std::is_sorted(v.begin(), v.end()));
  uint64_t cs = 0;
  for (size_t i = 0; i < v.size(); i++) cs = cs * 31 + v[i];
  std::printf("vector %zu %u %u %llu\n", v.size(), v.front(), v.back(), (unsigned long long)cs);

  // map<string, int>
  std::map<std::string, int> m;
  for (int i = 0; i < 100000; i++) m["key" + std::to_string((i * 7919) % 100003)] += i % 10;
  long msum = 0;
  for (auto &kv : m) msum += kv.second;
  CHECK(m.size() == 100000 && msum == 450000);
  std::printf("map %zu %ld %s %s\n", m.size(), msum, m.begin()->first.c_str(), m.rbegin()->first.c_str());

  // unordered_map<int, vector<int>> and string building
  std::unordered_map<int, std::vector<int>> um;
  for (int i = 0; i < 200000; i++) um[i % 1009].push_back(i);
  size_t total = 0;
  for (auto &kv : um) total += kv.second.size();
  CHECK(um.size() == 1009 && total == 200000);
  std::ostringstream os;
  for (int i = 0; i < 50000; i++) os << i << (i % 2 ? ';' : ',');
  std::string big = os.str();
  std::string rev(big.rbegin(), big.rend());
  CHECK(rev.size() == big.size());
  std::printf("unordered_map %zu %zu string %zu %zu\n", um.size(), total, big.size(),
              (size_t)std::count(big.begin(), big.end(), ';'));

  // list, deque, set, shared_ptr
  std::list<std::string> l;
  std::deque<int> dq;
  std::set<int> st;
  std::vector<std::shared_ptr<std::vector<int>>> sp;
  for (int i = 0; i < 100000; i++) {
    l.push_back(std::string(i % 50, 'x'));
    if (i % 2) dq.push_front(i); else dq.push_back(i);
    st.insert((i * 13) % 5000);
    if (i % 100 == 0) sp.push_back(std::make_shared<std::vector<int>>(i % 1000, i));
  }
  l.sort();
  size_t lsum = 0;
  for (auto &x : l) lsum += x.size();
  long dsum = 0;
  for (int x : dq) dsum += x;
  CHECK(lsum == 2450000 && dsum == 4999950000L && st.size() == 5000 && sp.size() == 1000);
  std::printf("list %zu deque %ld set %zu shared %zu\n", lsum, dsum, st.size(), sp.size());

  // 4 threads, each with its own containers; results handed back
  std::vector<long> res(4);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; t++)
    ts.emplace_back([t, &res] {
      std::map<int, std::string> tm;
      for (int i = 0; i < 50000; i++) tm[i * 4 + t] = std::to_string(i);
      long r = 0;
      for (auto &kv : tm) r += (long)kv.second.size();
      res[t] = r;
    });
  for (auto &t : ts) t.join();
  for (int t = 0; t < 4; t++) CHECK(res[t] == res[0]);
  std::printf("threads %ld\n", res[0] * 4);
  std::printf("stl OK\n");
  return 0;
}

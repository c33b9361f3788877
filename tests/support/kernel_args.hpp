// Test helper: a library kernel instantiated for sm_90a, its arguments by name, an i32 / f32 data argument's values,
// and the inputs its reference sees (what the worker fills), for tests that check a spec's problem and reference
// without a GPU.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "library/library.hpp"

namespace tl::test {

// Library kernel `kernel` for problem p and config c on sm_90a (a failure is the test's).
inline KernelInstance sm90a_instance(const std::string& kernel, const std::map<std::string, std::string>& p,
                                     const std::map<std::string, std::string>& c = {}) {
  auto k = instantiate(*library_registry().find(kernel).value(), p, c, limits_for_arch("sm_90a"));
  EXPECT_TRUE(k.ok()) << k.status().message();
  return *k;
}

inline const ArgSpec& arg(const KernelInstance& k, const std::string& name) {
  for (const auto& a : k.args)
    if (a.name == name) return a;
  throw std::runtime_error("no argument " + name);
}

template <class T>
std::vector<T> data_of(const KernelInstance& k, const std::string& name) {
  const ArgSpec& a = arg(k, name);
  std::vector<T> v(a.data.size() / sizeof(T));
  std::memcpy(v.data(), a.data.data(), v.size() * sizeof(T));
  return v;
}

inline ReferenceInputs inputs_of(const KernelInstance& k) {
  ReferenceInputs in;
  for (const auto& a : k.args) {
    if (a.kind == ArgSpec::Kind::scalar) in.scalars[a.name] = a.value;
    else if (a.kind == ArgSpec::Kind::tensor && a.role == ArgRole::in) in.tensors[a.name] = make_host_tensor(a);
  }
  return in;
}

}  // namespace tl::test

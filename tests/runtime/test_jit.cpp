// NVRTC JIT and kernel cache: resources match the source, keys track every input, corrupt entries recompile.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "runtime/core/hash.hpp"
#include "runtime/jit/cache.hpp"
#include "runtime/jit/jit.hpp"

namespace tl {
namespace {
namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
struct TempDir {
  fs::path path;
  TempDir() {
    static int n = 0;
    path = fs::temp_directory_path() / ("tl_test_jit_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

const char* kHeader = R"(#pragma once
template <int N> struct Twice { static constexpr int value = 2 * N; };
)";

// 100 floats of static shared memory, and a local array indexed by loaded data (so it must live on the stack).
const char* kKernel = R"(#include "util/twice.hpp"
template <int N>
__global__ void probe(float* out, int i) {
  __shared__ float s[100];
  float local[Twice<N>::value];
  for (int k = 0; k < Twice<N>::value; ++k) local[k] = 0.f;
  for (int k = 0; k < Twice<N>::value; ++k) local[static_cast<int>(out[k]) & (Twice<N>::value - 1)] += k;
  s[threadIdx.x % 100] = local[i & (Twice<N>::value - 1)];
  __syncthreads();
  out[threadIdx.x] = s[(threadIdx.x + 1) % 100];
}
)";

SourceSet test_sources() {
  SourceSet s;
  s.add("util/twice.hpp", kHeader);
  s.add("probe.cuh", kKernel);
  return s;
}

CompileRequest probe_request(const std::string& arch = "sm_90a") {
  CompileRequest r;
  r.source = "probe.cuh";
  r.name_expression = "probe<16>";
  r.options.arch = arch;
  r.context = "probe test";
  return r;
}

TEST(Hash, DistinguishesFieldBoundariesAndLengths) {
  EXPECT_NE(Hasher128().field("ab").field("c").hex(), Hasher128().field("a").field("bc").hex());
  EXPECT_NE(hash128_hex(std::string(7, '\0')), hash128_hex(std::string(8, '\0')));
  EXPECT_EQ(hash128_hex("kernel"), hash128_hex("kernel"));
  // Streaming in pieces equals hashing at once.
  std::string text = "the quick brown fox jumps over the lazy dog, twice over";
  Hasher128 h;
  h.bytes(text.data(), 5).bytes(text.data() + 5, 13).bytes(text.data() + 18, text.size() - 18);
  EXPECT_EQ(h.hex(), hash128_hex(text));
  // Single-bit changes anywhere give different keys, and no two of these collide.
  std::set<std::string> seen;
  for (std::size_t i = 0; i < text.size(); ++i) {
    std::string t = text;
    t[i] ^= 1;
    seen.insert(hash128_hex(t));
  }
  EXPECT_EQ(seen.size(), text.size());
  EXPECT_EQ(hash128_hex("x").size(), 32u);
}

TEST(Jit, CompilesAndReportsResourcesThatMatchTheSource) {
  Jit jit(test_sources());
  for (const char* arch : {"sm_90a", "sm_80"}) {
    auto k = jit.compile(probe_request(arch));
    ASSERT_TRUE(k.ok()) << k.status().message();
    EXPECT_EQ(k->arch, arch);
    EXPECT_EQ(k->lowered_name, "_Z5probeILi16EEvPfi");  // Itanium mangling of probe<16>(float*, int)
    EXPECT_FALSE(k->from_cache);
    ASSERT_GT(k->cubin.size(), 64u);
    EXPECT_EQ(std::string(k->cubin.data(), 4), "\x7f" "ELF");
    EXPECT_NE(k->ptx.find(".entry " + k->lowered_name), std::string::npos);
    const auto& r = k->resources;
    EXPECT_EQ(r.source, "ptxas");
    EXPECT_EQ(r.shared_static_bytes, 400);  // float s[100]
    EXPECT_GT(r.registers, 0);
    EXPECT_GE(r.stack_frame_bytes, 32 * 4);  // local[32], indexed at run time
    EXPECT_EQ(r.spill_store_bytes, 0);
    EXPECT_EQ(r.barriers, 1);
    // The cubin's own records agree with the ptxas report.
    ResourceUsage elf = parse_cubin_resources(k->cubin, k->lowered_name);
    EXPECT_EQ(elf.registers, r.registers) << arch;
    EXPECT_EQ(elf.stack_frame_bytes, r.stack_frame_bytes) << arch;
    EXPECT_GE(elf.shared_static_bytes, 400) << arch;  // sm_90's section also holds 1 KiB reserved by the system
  }
}

// Parameter sizes from the PTX entry, as nvcc/NVRTC write them: pointers (with or without .ptr), scalars, a struct
// and a __grid_constant__ CUtensorMap as .b8 arrays, a byte; an entry without parameters; a longer name not matched.
TEST(Jit, PtxEntryParameterSizes) {
  const std::string ptx =
      ".visible .entry _Z4kernILi3EEvPKfPfi(\n\t.param .u64 _Z4k_param_0\n)\n{\n}\n"
      ".visible .entry _Z4kern(\n"
      "\t.param .u64 .ptr .align 1 _Z4kern_param_0,\n"
      "\t.param .u32 _Z4kern_param_1,\n"
      "\t.param .f64 _Z4kern_param_2,\n"
      "\t.param .align 4 .b8 _Z4kern_param_3[8],\n"
      "\t.param .align 128 .b8 _Z4kern_param_4[128],\n"
      "\t.param .u8 _Z4kern_param_5\n"
      ")\n{\n}\n"
      ".visible .entry noparams()\n{\n}\n";
  auto k = ptx_entry_param_sizes(ptx, "_Z4kern");
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(*k, (std::vector<std::size_t>{8, 4, 8, 8, 128, 1}));
  auto none = ptx_entry_param_sizes(ptx, "noparams");
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(ptx_entry_param_sizes(ptx, "_Z4ker").status().code(), ErrorCode::not_found);
  EXPECT_EQ(ptx_entry_param_sizes(".visible .entry f(\n\t.param .v9 f_param_0\n)", "f").status().code(), ErrorCode::parse);
  // NVRTC's own output: probe<16>(float*, int)
  Jit jit(test_sources());
  auto c = jit.compile(probe_request("sm_90a"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(ptx_entry_param_sizes(c->ptx, c->lowered_name).value(), (std::vector<std::size_t>{8, 4}));
}

TEST(Jit, SpillsAreReportedWhenRegistersAreCapped) {
  SourceSet s;
  // 64 live accumulators under a 32-register cap must spill.
  s.add("spill.cuh", R"(
__global__ void spill(const float* in, float* out, int n) {
  float acc[64];
  for (int k = 0; k < 64; ++k) acc[k] = in[k];
  for (int it = 0; it < n; ++it)
#pragma unroll
    for (int k = 0; k < 64; ++k) acc[k] = acc[k] * acc[(k + 1) % 64] + in[it + k];
  float t = 0;
#pragma unroll
  for (int k = 0; k < 64; ++k) t += acc[k] * k;
  out[threadIdx.x] = t;
})");
  CompileRequest r;
  r.source = "spill.cuh";
  r.name_expression = "spill";
  r.options.extra = {"--maxrregcount=32"};
  auto k = Jit(s).compile(r);
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_LE(k->resources.registers, 32);
  EXPECT_GT(k->resources.spill_store_bytes, 0);
  EXPECT_GT(k->resources.spill_load_bytes, 0);
}

TEST(Jit, CompileErrorsNameFileLineKernelAndArch) {
  SourceSet s = test_sources();
  s.add("bad.cuh", "#include \"util/twice.hpp\"\n\n__global__ void bad(float* o) {\n  o[0] = undefined_thing;\n}\n");
  CompileRequest r;
  r.source = "bad.cuh";
  r.name_expression = "bad";
  r.context = "bad.kernel [x=1]";
  auto k = Jit(s).compile(r);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), ErrorCode::compile);
  const std::string& m = k.status().message();
  EXPECT_NE(m.find("bad.cuh:4: error"), std::string::npos) << m;
  EXPECT_NE(m.find("undefined_thing"), std::string::npos) << m;
  EXPECT_NE(m.find("bad.kernel [x=1]"), std::string::npos) << m;
  EXPECT_NE(m.find("sm_90a"), std::string::npos) << m;

  // An error inside an included header points at the header.
  s.add("util/broken.hpp", "#pragma once\nint f() { return nope; }\n");
  s.add("uses_broken.cuh", "#include \"util/broken.hpp\"\n__global__ void k() {}\n");
  r.source = "uses_broken.cuh";
  r.name_expression = "k";
  auto k2 = Jit(s).compile(r);
  ASSERT_FALSE(k2.ok());
  EXPECT_NE(k2.status().message().find("util/broken.hpp:2: error"), std::string::npos) << k2.status().message();
}

TEST(Jit, RejectsUnknownArchAndMissingSource) {
  Jit jit(test_sources());
  auto r = probe_request("sm_12345");
  auto k = jit.compile(r);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), ErrorCode::invalid_argument);
  EXPECT_NE(k.status().message().find("sm_90"), std::string::npos) << k.status().message();
  EXPECT_FALSE(check_arch("compute_90").ok());
  EXPECT_TRUE(check_arch("sm_80").ok());

  r = probe_request();
  r.source = "nope.cuh";
  auto k2 = jit.compile(r);
  ASSERT_FALSE(k2.ok());
  EXPECT_EQ(k2.status().code(), ErrorCode::not_found);
}

TEST(JitCache, KeyChangesWithEveryInputAndOnlyThen) {
  Jit jit(test_sources());
  const std::string base = jit.cache_key(probe_request()).value();
  EXPECT_EQ(base, jit.cache_key(probe_request()).value());
  std::set<std::string> keys = {base};

  auto changed = [&](const std::string& why, const Jit& j, const CompileRequest& r) {
    auto key = j.cache_key(r);
    ASSERT_TRUE(key.ok()) << key.status().message();
    EXPECT_TRUE(keys.insert(*key).second) << why << " did not change the key";
  };
  {  // the kernel source text
    SourceSet s = test_sources();
    s.add("probe.cuh", std::string(kKernel) + "\n// edit\n");
    changed("source text", Jit(s), probe_request());
  }
  {  // an included header's text
    SourceSet s = test_sources();
    s.add("util/twice.hpp", std::string(kHeader) + "// edit\n");
    changed("header text", Jit(s), probe_request());
  }
  {
    auto r = probe_request();
    r.name_expression = "probe<8>";
    changed("name expression", jit, r);
  }
  changed("arch", jit, probe_request("sm_80"));
  {
    auto r = probe_request();
    r.options.fast_math = true;
    changed("fast math", jit, r);
  }
  {
    auto r = probe_request();
    r.options.defines = {"TL_PROBES=1"};
    changed("a define", jit, r);
  }
  {  // a header the kernel does not include cannot change its output, and must not change its key
    SourceSet s = test_sources();
    s.add("util/unrelated.hpp", "int unrelated;\n");
    EXPECT_EQ(Jit(s).cache_key(probe_request()).value(), base);
  }
  {  // the context is only for messages
    auto r = probe_request();
    r.context = "something else";
    EXPECT_EQ(jit.cache_key(r).value(), base);
  }
}

TEST(JitCache, HitReturnsIdenticalBytesAndCorruptEntriesRecompile) {
  TempDir dir;
  KernelCache cache(dir.path.string());
  Jit jit(test_sources(), &cache);
  auto cold = jit.compile(probe_request());
  ASSERT_TRUE(cold.ok()) << cold.status().message();
  EXPECT_FALSE(cold->from_cache);
  EXPECT_TRUE(fs::exists(cache.entry_path(cold->key, ".json")));

  auto hit = jit.compile(probe_request());
  ASSERT_TRUE(hit.ok());
  EXPECT_TRUE(hit->from_cache);
  EXPECT_EQ(hit->cubin, cold->cubin);
  EXPECT_EQ(hit->ptx, cold->ptx);
  EXPECT_EQ(hit->lowered_name, cold->lowered_name);
  EXPECT_EQ(hit->resources.registers, cold->resources.registers);
  EXPECT_EQ(hit->resources.shared_static_bytes, cold->resources.shared_static_bytes);
  EXPECT_EQ(hit->log, cold->log);

  // Flip one byte of the stored cubin: detected, recompiled, rewritten.
  {
    std::fstream f(cache.entry_path(cold->key, ".cubin"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    char c = static_cast<char>(cold->cubin[100] ^ 0x5a);
    f.write(&c, 1);
  }
  auto again = jit.compile(probe_request());
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->from_cache);
  EXPECT_EQ(again->cubin, cold->cubin);
  EXPECT_TRUE(jit.compile(probe_request())->from_cache);

  // A truncated metadata file, and a missing PTX file, likewise.
  std::ofstream(cache.entry_path(cold->key, ".json"), std::ios::trunc) << "{\"key\": ";
  EXPECT_FALSE(jit.compile(probe_request())->from_cache);
  fs::remove(cache.entry_path(cold->key, ".ptx"));
  auto after = jit.compile(probe_request());
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(after->from_cache);
  EXPECT_EQ(after->ptx, cold->ptx);
  // No temporary files are left behind.
  for (auto& e : fs::recursive_directory_iterator(dir.path))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
}

TEST(Sources, DirectoryIsReadOnEveryCompile) {
  TempDir dir;
  fs::create_directories(dir.path / "util");
  std::ofstream(dir.path / "util/twice.hpp") << kHeader;
  std::ofstream(dir.path / "probe.cuh") << kKernel;
  TempDir cache_dir;
  KernelCache cache(cache_dir.path.string());
  Jit jit(SourceSet::from_directory(dir.path.string()), &cache);
  auto first = jit.compile(probe_request());
  ASSERT_TRUE(first.ok()) << first.status().message();
  // Edit the header on disk: the same Jit sees it (new key, fresh compile, different code).
  std::ofstream(dir.path / "util/twice.hpp", std::ios::trunc)
      << "#pragma once\ntemplate <int N> struct Twice { static constexpr int value = 3 * N; };\n";
  auto second = jit.compile(probe_request());
  ASSERT_TRUE(second.ok());
  EXPECT_NE(second->key, first->key);
  EXPECT_FALSE(second->from_cache);
  EXPECT_NE(second->ptx, first->ptx);
  // Errors point at the file on disk, so an editor can jump there.
  std::ofstream(dir.path / "probe.cuh", std::ios::trunc) << "__global__ void probe() { oops; }\n";
  auto bad = jit.compile(probe_request());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find((dir.path / "probe.cuh").string() + ":1: error"), std::string::npos)
      << bad.status().message();
}

TEST(Sources, IncludeClosureFollowsIncludesTransitively) {
  SourceSet s;
  s.add("a.cuh", "#include \"b.hpp\"\n#include <system_header>\n");
  s.add("b.hpp", "  #  include \"c.hpp\"\n");
  s.add("c.hpp", "// leaf\n");
  s.add("d.hpp", "// not included\n");
  auto files = include_closure(s, "a.cuh");
  ASSERT_TRUE(files.ok());
  std::vector<std::string> names;
  for (auto& [n, t] : *files) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"a.cuh", "b.hpp", "c.hpp"}));
}

}  // namespace
}  // namespace tl

// Jit: include closure -> cache key -> cache hit, or NVRTC (cubin, PTX, lowered name, log) -> resources -> cache.
#include "runtime/jit/jit.hpp"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>
#include <nvrtc.h>

#include "runtime/core/hash.hpp"
#include "runtime/core/log.hpp"

namespace tl {

// Bumped whenever what we store for a key changes meaning, so old entries are never misread.
static constexpr const char* kCacheFormat = "tilelab-jit-1";

std::vector<std::string> JitOptions::nvrtc_args() const {
  std::vector<std::string> a;
  a.push_back("--gpu-architecture=" + arch);
  a.push_back("-std=" + cpp_std);
  a.push_back("-default-device");
  if (lineinfo) a.push_back("-lineinfo");
  if (fast_math) a.push_back("--use_fast_math");
  for (const auto& d : include_dirs) a.push_back("-I" + d);
  for (const auto& d : defines) a.push_back("-D" + d);
  a.push_back("--ptxas-options=-v");  // the resource report lands in the program log
  for (const auto& e : extra) a.push_back(e);
  return a;
}

std::string nvrtc_version_string() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

Status check_arch(const std::string& arch) {
  static const std::regex form(R"(sm_(\d+)([af]?))");
  std::smatch m;
  int num = 0;
  if (std::regex_match(arch, m, form)) num = std::stoi(m[1].str());
  int n = 0;
  std::vector<int> supported;
  if (nvrtcGetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0) {
    supported.resize(n);
    nvrtcGetSupportedArchs(supported.data());
  }
  bool ok = num > 0;
  if (ok && !supported.empty()) {
    ok = false;
    for (int s : supported) ok = ok || s == num;
  }
  if (ok) return Status::success();
  std::string list;
  for (int s : supported) list += (list.empty() ? "sm_" : ", sm_") + std::to_string(s);
  return make_error(ErrorCode::invalid_argument, "unknown arch '" + arch + "': expected sm_NN, sm_NNa or sm_NNf with NN one of " +
                                                     list + " (NVRTC " + nvrtc_version_string() + ")");
}

// [SECTION] resource reports

namespace {

int match_int(const std::string& line, const std::regex& re) {
  std::smatch m;
  return std::regex_search(line, m, re) ? std::stoi(m[1].str()) : -1;
}

}  // namespace

ResourceUsage parse_ptxas_report(const std::string& log, const std::string& lowered) {
  static const std::regex re_regs(R"(Used (\d+) registers)"), re_bar(R"(used (\d+) barriers)"),
      re_smem(R"((\d+) bytes smem)"), re_cmem(R"((\d+) bytes cmem\[0\])"), re_stack(R"((\d+) bytes stack frame)"),
      re_st(R"((\d+) bytes spill stores)"), re_ld(R"((\d+) bytes spill loads)");
  ResourceUsage r;
  std::istringstream in(log);
  bool in_entry = false, in_props = false;
  for (std::string line; std::getline(in, line);) {
    if (line.find("Compiling entry function") != std::string::npos) {
      in_entry = line.find("'" + lowered + "'") != std::string::npos;
      in_props = false;
      continue;
    }
    if (line.find("Function properties for") != std::string::npos) {
      // Properties of callees follow the entry's; take only the entry's own.
      auto pos = line.find("Function properties for ");
      in_props = line.compare(pos + 24, std::string::npos, lowered) == 0;
      continue;
    }
    if (!in_entry) continue;
    if (in_props && line.find("stack frame") != std::string::npos) {
      r.stack_frame_bytes = match_int(line, re_stack);
      r.spill_store_bytes = match_int(line, re_st);
      r.spill_load_bytes = match_int(line, re_ld);
      in_props = false;
    } else if (line.find("Used ") != std::string::npos && line.find(" registers") != std::string::npos) {
      r.registers = match_int(line, re_regs);
      r.barriers = std::max(0, match_int(line, re_bar));
      r.shared_static_bytes = std::max(0, match_int(line, re_smem));  // ptxas omits "smem" when there is none
      r.const_bytes = match_int(line, re_cmem);
      r.source = "ptxas";
    }
  }
  return r;
}

namespace {

template <class T>
bool read_at(const std::vector<char>& b, std::uint64_t off, T& out) {
  if (off + sizeof(T) > b.size() || off + sizeof(T) < off) return false;
  std::memcpy(&out, b.data() + off, sizeof(T));
  return true;
}

struct Section {
  std::string name;
  std::uint32_t name_off = 0, type = 0, link = 0, info = 0;
  std::uint64_t offset = 0, size = 0, entsize = 0;
};

}  // namespace

// The cubin is an ELF64 file. Registers and the frame size are EIATTR records in the global .nv.info section,
// keyed by the kernel's symbol index; static shared memory is the size of .nv.shared.<kernel>.
ResourceUsage parse_cubin_resources(const std::vector<char>& b, const std::string& lowered) {
  ResourceUsage r;
  if (b.size() < 64 || std::memcmp(b.data(), "\x7f" "ELF", 4) != 0 || b[4] != 2) return r;
  std::uint64_t shoff = 0;
  std::uint16_t shentsize = 0, shnum = 0, shstrndx = 0;
  if (!read_at(b, 0x28, shoff) || !read_at(b, 0x3a, shentsize) || !read_at(b, 0x3c, shnum) ||
      !read_at(b, 0x3e, shstrndx) || shentsize < 64 || shstrndx >= shnum)
    return r;
  std::vector<Section> secs(shnum);
  for (std::uint16_t i = 0; i < shnum; ++i) {
    std::uint64_t h = shoff + std::uint64_t(i) * shentsize;
    if (!read_at(b, h, secs[i].name_off) || !read_at(b, h + 4, secs[i].type) || !read_at(b, h + 0x18, secs[i].offset) ||
        !read_at(b, h + 0x20, secs[i].size) || !read_at(b, h + 0x28, secs[i].link) ||
        !read_at(b, h + 0x2c, secs[i].info) || !read_at(b, h + 0x38, secs[i].entsize))
      return r;
  }
  auto cstr = [&](const Section& tab, std::uint64_t off) -> std::string {
    if (off >= tab.size || tab.offset + tab.size > b.size()) return {};
    const char* s = b.data() + tab.offset + off;
    return std::string(s, strnlen(s, tab.size - off));
  };
  for (auto& s : secs) s.name = cstr(secs[shstrndx], s.name_off);

  // Symbol index of the kernel.
  std::int64_t sym = -1;
  for (const auto& s : secs) {
    if (s.type != 2 /* SHT_SYMTAB */ || s.link >= secs.size()) continue;
    for (std::uint64_t o = 0; o + 24 <= s.size; o += 24) {
      std::uint32_t st_name = 0;
      if (!read_at(b, s.offset + o, st_name)) break;
      if (cstr(secs[s.link], st_name) == lowered) sym = static_cast<std::int64_t>(o / 24);
    }
  }
  for (const auto& s : secs) {
    if (s.name == ".nv.shared." + lowered) r.shared_static_bytes = static_cast<int>(s.size);
    if (s.name != ".nv.info" || sym < 0) continue;
    for (std::uint64_t o = s.offset; o + 4 <= s.offset + s.size;) {
      std::uint8_t fmt = 0, attr = 0;
      std::uint16_t val = 0;
      read_at(b, o, fmt);
      read_at(b, o + 1, attr);
      read_at(b, o + 2, val);
      if (fmt == 0x04) {  // EIFMT_SVAL: u16 size, then that many bytes
        std::uint32_t idx = 0, v = 0;
        if (val >= 8 && read_at(b, o + 4, idx) && read_at(b, o + 8, v) && idx == sym) {
          if (attr == 0x2f) r.registers = static_cast<int>(v);          // EIATTR_REGCOUNT
          if (attr == 0x11) r.stack_frame_bytes = static_cast<int>(v);  // EIATTR_FRAME_SIZE
        }
        o += 4 + val;
      } else {
        o += 4;
      }
    }
  }
  if (r.registers >= 0) r.source = "elf";
  return r;
}

Result<std::vector<std::size_t>> ptx_entry_param_sizes(const std::string& ptx, const std::string& lowered) {
  // ".entry NAME(" with optional space before '('; a longer name that starts with NAME does not match
  std::size_t at = 0, open = std::string::npos;
  while ((at = ptx.find(".entry " + lowered, at)) != std::string::npos) {
    std::size_t p = at + 7 + lowered.size();
    while (p < ptx.size() && (ptx[p] == ' ' || ptx[p] == '\t')) ++p;
    if (p < ptx.size() && ptx[p] == '(') {
      open = p;
      break;
    }
    at = p;
  }
  if (open == std::string::npos) return make_error(ErrorCode::not_found, "the PTX has no entry '" + lowered + "'");
  const std::size_t close = ptx.find(')', open);
  if (close == std::string::npos) return make_error(ErrorCode::parse, "the PTX entry '" + lowered + "' is not closed");
  std::vector<std::size_t> sizes;
  std::istringstream list(ptx.substr(open + 1, close - open - 1));
  for (std::string decl; std::getline(list, decl, ',');) {
    // .param .TYPE [.ptr [state space] .align N] NAME[COUNT], or .param .align N .b8 NAME[COUNT]
    static const std::pair<const char*, std::size_t> kTypes[] = {
        {".b8", 1},  {".u8", 1},  {".s8", 1},  {".b16", 2}, {".u16", 2}, {".s16", 2}, {".f16", 2}, {".bf16", 2},
        {".b32", 4}, {".u32", 4}, {".s32", 4}, {".f32", 4}, {".b64", 8}, {".u64", 8}, {".s64", 8}, {".f64", 8}};
    std::istringstream tokens(decl);
    std::string tok, name;
    std::size_t bytes = 0;
    while (tokens >> tok) {
      if (tok == ".align") tokens >> tok;  // its number
      else if (tok[0] != '.') name = tok;
      for (const auto& [t, b] : kTypes)
        if (tok == t) bytes = b;
    }
    if (bytes == 0 && name.empty() && decl.find(".param") == std::string::npos) continue;  // "()": no parameters
    std::size_t count = 1;
    if (const std::size_t br = name.find('['); br != std::string::npos) count = std::strtoull(name.c_str() + br + 1, nullptr, 10);
    if (bytes == 0 || name.empty() || count == 0)
      return make_error(ErrorCode::parse, "PTX parameter of '" + lowered + "' not understood: " + decl);
    sizes.push_back(bytes * count);
  }
  return sizes;
}

std::string format_nvrtc_log(const std::string& log, const SourceSet& sources) {
  static const std::regex loc(R"(^([^\s()][^()]*)\((\d+)\): (.*)$)");
  std::ostringstream out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, loc))
      out << sources.display_path(m[1].str()) << ':' << m[2].str() << ": " << m[3].str() << '\n';
    else
      out << line << '\n';
  }
  return out.str();
}

// [SECTION] compiling

namespace {

struct Prepared {
  std::vector<std::pair<std::string, std::string>> files;  // main first
  std::vector<std::string> args;
  std::string key;
};

Result<Prepared> prepare(const SourceSet& sources, const CompileRequest& req) {
  TL_RETURN_IF_ERROR(check_arch(req.options.arch));
  if (req.name_expression.empty())
    return make_error(ErrorCode::invalid_argument, "empty name expression for " + req.source);
  Prepared p;
  auto files = include_closure(sources, req.source);
  if (!files) return files.status();
  p.files = std::move(*files);
  p.args = req.options.nvrtc_args();
  Hasher128 h;
  h.field(kCacheFormat).field(nvrtc_version_string()).field(req.name_expression);
  h.field(std::uint64_t(p.args.size()));
  for (const auto& a : p.args) h.field(a);
  h.field(std::uint64_t(p.files.size()));
  for (const auto& [name, text] : p.files) h.field(name).field(text);
  p.key = h.hex();
  return p;
}

std::string program_log(nvrtcProgram prog) {
  std::size_t n = 0;
  if (nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n <= 1) return {};
  std::string log(n, '\0');
  nvrtcGetProgramLog(prog, log.data());
  log.resize(n - 1);
  return log;
}

std::string describe(const CompileRequest& req) {
  std::string who = req.context.empty() ? req.source : req.context;
  return who + " (" + req.name_expression + ") for " + req.options.arch;
}

}  // namespace

Result<std::string> Jit::cache_key(const CompileRequest& req) const {
  auto p = prepare(m_sources, req);
  if (!p) return p.status();
  return p->key;
}

Result<CompiledKernel> Jit::compile(const CompileRequest& req) const {
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(); };
  auto prep = prepare(m_sources, req);
  if (!prep) return prep.status().with_context("compiling " + describe(req));

  if (m_cache) {
    if (auto hit = m_cache->load(prep->key)) {
      if (hit->name_expression == req.name_expression && hit->arch == req.options.arch) {
        hit->from_cache = true;
        hit->compile_ms = elapsed();
        return std::move(*hit);
      }
      log::warn("kernel cache: entry ", prep->key, " belongs to another kernel (hash collision?); recompiling");
    }
  }

  std::vector<const char*> header_text, header_names;
  for (std::size_t i = 1; i < prep->files.size(); ++i) {
    header_text.push_back(prep->files[i].second.c_str());
    header_names.push_back(prep->files[i].first.c_str());
  }
  nvrtcProgram prog = nullptr;
  nvrtcResult rc = nvrtcCreateProgram(&prog, prep->files[0].second.c_str(), prep->files[0].first.c_str(),
                                      static_cast<int>(header_text.size()), header_text.data(), header_names.data());
  if (rc != NVRTC_SUCCESS)
    return make_error(ErrorCode::internal, std::string("nvrtcCreateProgram: ") + nvrtcGetErrorString(rc));
  struct Guard {
    nvrtcProgram& p;
    ~Guard() { nvrtcDestroyProgram(&p); }
  } guard{prog};

  rc = nvrtcAddNameExpression(prog, req.name_expression.c_str());
  if (rc != NVRTC_SUCCESS)
    return make_error(ErrorCode::internal, std::string("nvrtcAddNameExpression: ") + nvrtcGetErrorString(rc));
  std::vector<const char*> argv;
  for (const auto& a : prep->args) argv.push_back(a.c_str());
  rc = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  std::string log = program_log(prog);
  if (rc != NVRTC_SUCCESS) {
    std::string msg = "compiling " + describe(req) + " failed (" + nvrtcGetErrorString(rc) + "):\n" +
                      format_nvrtc_log(log, m_sources);
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    return make_error(ErrorCode::compile, msg);
  }

  CompiledKernel k;
  k.name_expression = req.name_expression;
  k.arch = req.options.arch;
  k.key = prep->key;
  k.log = log;
  const char* lowered = nullptr;
  if (nvrtcGetLoweredName(prog, req.name_expression.c_str(), &lowered) != NVRTC_SUCCESS || !lowered)
    return make_error(ErrorCode::compile, "compiling " + describe(req) + ": NVRTC has no lowered name for the "
                                          "expression (is it a __global__ function template instance?)");
  k.lowered_name = lowered;
  std::size_t size = 0;
  if (nvrtcGetCUBINSize(prog, &size) != NVRTC_SUCCESS || size == 0)
    return make_error(ErrorCode::compile, "compiling " + describe(req) + ": NVRTC produced no cubin (arch " +
                                              req.options.arch + " must be a real sm_ arch)");
  k.cubin.resize(size);
  nvrtcGetCUBIN(prog, k.cubin.data());
  if (nvrtcGetPTXSize(prog, &size) == NVRTC_SUCCESS && size > 1) {
    k.ptx.resize(size);
    nvrtcGetPTX(prog, k.ptx.data());
    k.ptx.resize(size - 1);
  }

  k.resources = parse_ptxas_report(log, k.lowered_name);
  if (k.resources.registers < 0) {
    ResourceUsage elf = parse_cubin_resources(k.cubin, k.lowered_name);
    if (elf.registers >= 0) k.resources = elf;
  }
  if (m_cache) {
    Status st = m_cache->store(k);
    if (!st) log::warn("kernel cache: ", st.message());
  }
  k.compile_ms = elapsed();
  return k;
}

}  // namespace tl

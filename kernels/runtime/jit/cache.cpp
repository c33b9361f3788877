// KernelCache: one entry = cubin + PTX + JSON metadata; each file written to a temporary name and renamed into place.
#include "runtime/jit/cache.hpp"


#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/core/files.hpp"
#include "runtime/core/hash.hpp"
#include "runtime/core/log.hpp"

namespace tl {
namespace fs = std::filesystem;

std::string default_cache_dir() {
  if (const char* d = std::getenv("TILELAB_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/tilelab";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/tilelab";
  return (fs::temp_directory_path() / "tilelab-cache").string();
}

std::string KernelCache::entry_path(const std::string& key, const char* ext) const {
  return m_dir + "/kernels/" + key.substr(0, 2) + "/" + key + ext;
}

namespace {

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::optional<CompiledKernel> KernelCache::load(const std::string& key) const {
  auto meta_text = read_file(entry_path(key, ".json"));
  if (!meta_text) return std::nullopt;
  auto corrupt = [&](const std::string& why) -> std::optional<CompiledKernel> {
    log::warn("kernel cache: entry ", key, " is corrupt (", why, "); recompiling");
    std::error_code ec;
    fs::remove(entry_path(key, ".json"), ec);  // the JSON is the commit marker: without it the entry is absent
    return std::nullopt;
  };
  try {
    auto meta = nlohmann::json::parse(*meta_text);
    if (meta.at("key").get<std::string>() != key) return corrupt("key mismatch");
    auto cubin = read_file(entry_path(key, ".cubin"));
    auto ptx = read_file(entry_path(key, ".ptx"));
    if (!cubin || !ptx) return corrupt("missing cubin or ptx");
    if (cubin->size() != meta.at("cubin_bytes").get<std::size_t>() ||
        hash128_hex(*cubin) != meta.at("cubin_hash").get<std::string>())
      return corrupt("cubin does not match its recorded hash");
    if (ptx->size() != meta.at("ptx_bytes").get<std::size_t>() ||
        hash128_hex(*ptx) != meta.at("ptx_hash").get<std::string>())
      return corrupt("ptx does not match its recorded hash");
    CompiledKernel k;
    k.key = key;
    k.name_expression = meta.at("name_expression").get<std::string>();
    k.lowered_name = meta.at("lowered_name").get<std::string>();
    k.arch = meta.at("arch").get<std::string>();
    k.log = meta.at("log").get<std::string>();
    k.resources = meta.at("resources").get<ResourceUsage>();
    k.cubin.assign(cubin->begin(), cubin->end());
    k.ptx = std::move(*ptx);
    return k;
  } catch (const std::exception& e) {
    return corrupt(e.what());
  }
}

Status KernelCache::store(const CompiledKernel& k) const {
  std::error_code ec;
  fs::create_directories(fs::path(entry_path(k.key, ".json")).parent_path(), ec);
  if (ec) return make_error(ErrorCode::io, "cannot create the kernel cache directory under " + m_dir + ": " + ec.message());
  TL_RETURN_IF_ERROR(write_file_atomic(entry_path(k.key, ".cubin"), std::string_view(k.cubin.data(), k.cubin.size())));
  TL_RETURN_IF_ERROR(write_file_atomic(entry_path(k.key, ".ptx"), k.ptx));
  std::string cubin_view(k.cubin.begin(), k.cubin.end());
  nlohmann::json meta = {{"key", k.key},
                         {"name_expression", k.name_expression},
                         {"lowered_name", k.lowered_name},
                         {"arch", k.arch},
                         {"resources", k.resources},
                         {"log", k.log},
                         {"cubin_bytes", k.cubin.size()},
                         {"cubin_hash", hash128_hex(cubin_view)},
                         {"ptx_bytes", k.ptx.size()},
                         {"ptx_hash", hash128_hex(k.ptx)}};
  return write_file_atomic(entry_path(k.key, ".json"), meta.dump(2));
}

}  // namespace tl

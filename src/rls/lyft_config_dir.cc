// Reading lyft's config directory from disk: which files, in what order, and the digest the
// watcher compares. Turning their text into a LyftConfig is lyft_config.cc's.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "policy/yaml_fields.h"
#include "rls/lyft_config.h"
#include "sluice/result.h"

namespace sluice::rls {
namespace {

// Names starting with '.' are what a Kubernetes ConfigMap mount keeps beside its files (`..data`,
// a symlink to `..2024_01_01_...`, which hold the same files again) and what editors leave
// (`.config.yaml.swp`); lyft is run with dot files ignored for the same reason.
bool isHidden(const std::filesystem::path& path) {
  return path.filename().string().starts_with('.');
}

// Every regular file under `dir`, recursively, as lyft's runtime loader reads the tree: any
// name, not only *.yaml. Symlinks to files are followed (a ConfigMap's files are symlinks into
// `..data`); symlinks to directories are not entered. Sorted by path, read; or the error.
Result<std::vector<LyftSource>> readConfigDir(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> paths;
  for (std::filesystem::recursive_directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (isHidden(it->path())) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec)) paths.push_back(it->path().string());
  }
  if (ec) return Error{dir + ": cannot read the directory: " + ec.message()};
  std::sort(paths.begin(), paths.end());
  std::vector<LyftSource> sources;
  for (const std::string& path : paths) {
    Result<std::string> text = policy::readFile(path);
    if (!text.ok()) return Error{text.error()};
    sources.push_back({path, std::move(text).value()});
  }
  return sources;
}

std::size_t digestOf(const std::vector<LyftSource>& sources) {
  std::string all;
  for (const LyftSource& source : sources) {
    // Length-prefixed, so that no split of the same bytes between files reads the same.
    all += std::to_string(source.name.size()) + ':' + source.name;
    all += std::to_string(source.yaml.size()) + ':' + source.yaml;
  }
  return std::hash<std::string>{}(all);
}

}  // namespace

LyftLoadResult loadLyftConfigDir(const std::string& dir) {
  try {
    Result<std::vector<LyftSource>> sources = readConfigDir(dir);
    if (!sources.ok()) return {nullptr, {sources.error()}, std::nullopt};
    LyftLoadResult loaded = loadLyftConfigTexts(sources.value());
    loaded.digest = digestOf(sources.value());
    return loaded;
  } catch (const std::exception& error) {  // reading the files ran out of memory, say
    return {nullptr, {dir + ": cannot be loaded: " + error.what()}, std::nullopt};
  }
}

std::optional<std::size_t> lyftConfigDirDigest(const std::string& dir) {
  try {
    const Result<std::vector<LyftSource>> sources = readConfigDir(dir);
    if (!sources.ok()) return std::nullopt;
    return digestOf(sources.value());
  } catch (const std::exception&) {  // as unreadable: the watcher looks again next time
    return std::nullopt;
  }
}

}  // namespace sluice::rls

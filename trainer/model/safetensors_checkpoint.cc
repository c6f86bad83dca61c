#include "trainer/model/safetensors_checkpoint.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/file_util.h"

namespace skrull::model {

namespace fs = std::filesystem;

StatusOr<std::unique_ptr<SafetensorsCheckpoint>> SafetensorsCheckpoint::Open(
    const std::string& path) {
  auto ckpt = std::make_unique<SafetensorsCheckpoint>();
  ckpt->origin_ = path;
  std::error_code ec;
  if (!fs::exists(path, ec)) return NotFoundError(path + ": no such file or folder");

  if (!fs::is_directory(path, ec)) {
    SKRULL_ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(path));
    for (const auto& t : file->tensors()) ckpt->entries_[t.name] = Entry{file.get(), &t};
    ckpt->files_.push_back(std::move(file));
    return ckpt;
  }

  const fs::path dir(path);
  const fs::path index_path = dir / kSafetensorsIndexFile;
  if (!fs::exists(index_path, ec)) {
    const fs::path single = dir / kSafetensorsSingleFile;
    if (!fs::exists(single, ec)) {
      return NotFoundError(path + ": folder has neither " + kSafetensorsIndexFile + " nor " +
                           kSafetensorsSingleFile);
    }
    SKRULL_ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(single.string()));
    for (const auto& t : file->tensors()) ckpt->entries_[t.name] = Entry{file.get(), &t};
    ckpt->files_.push_back(std::move(file));
    return ckpt;
  }

  SKRULL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(index_path.string()));
  nlohmann::json index;
  try {
    index = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return InvalidArgumentError(index_path.string() + ": not valid JSON: " + e.what());
  }
  auto wm = index.is_object() ? index.find("weight_map") : index.end();
  if (!index.is_object() || wm == index.end() || !wm->is_object()) {
    return InvalidArgumentError(index_path.string() +
                                ": missing object 'weight_map' (tensor name -> shard file)");
  }
  std::map<std::string, std::string> weight_map;  // tensor -> shard file name
  std::map<std::string, SafetensorsFile*> shards;
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    if (!it.value().is_string()) {
      return InvalidArgumentError(index_path.string() + ": weight_map." + it.key() +
                                  " is not a file name");
    }
    const std::string shard = it.value().get<std::string>();
    if (shard.find('/') != std::string::npos || shard == ".." || shard.empty()) {
      return InvalidArgumentError(index_path.string() + ": weight_map." + it.key() + ": shard '" +
                                  shard + "' must be a file name in the folder");
    }
    weight_map[it.key()] = shard;
    if (shards.count(shard)) continue;
    auto file = SafetensorsFile::Open((dir / shard).string());
    if (!file.ok()) {
      return file.status().WithContext(index_path.string() + ": shard for tensor '" + it.key() +
                                       "'");
    }
    shards[shard] = file->get();
    ckpt->files_.push_back(std::move(file).value());
  }
  for (const auto& [name, shard] : weight_map) {
    const SafetensorsFile* file = shards[shard];
    const TensorInfo* info = file->Find(name);
    if (info == nullptr) {
      return InvalidArgumentError(index_path.string() + ": tensor '" + name + "' is mapped to " +
                                  file->origin() + ", which does not hold it");
    }
    ckpt->entries_[name] = Entry{file, info};
  }
  for (const auto& file : ckpt->files_) {
    for (const auto& t : file->tensors()) {
      auto it = weight_map.find(t.name);
      if (it == weight_map.end()) {
        return InvalidArgumentError(file->origin() + ": tensor '" + t.name + "' is not listed in " +
                                    index_path.string());
      }
      if (shards[it->second] != file.get()) {
        return InvalidArgumentError(file->origin() + ": tensor '" + t.name + "' is also in " +
                                    shards[it->second]->origin() + " (the index maps it there)");
      }
    }
  }
  return ckpt;
}

const SafetensorsCheckpoint::Entry* SafetensorsCheckpoint::Find(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

std::vector<std::string> SafetensorsCheckpoint::Names() const {
  std::vector<std::string> names;
  names.reserve(entries_.size());
  for (const auto& [name, e] : entries_) names.push_back(name);
  return names;
}

}  // namespace skrull::model

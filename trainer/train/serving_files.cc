#include "trainer/train/serving_files.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/file_util.h"

namespace skrull::train {

namespace fs = std::filesystem;

namespace {

// The folder a tokenizer setting names: itself, or the folder of a file.
std::string FolderOf(const std::string& path) {
  if (path.empty()) return "";
  std::error_code ec;
  return fs::is_directory(path, ec) ? path : fs::path(path).parent_path().string();
}

bool IsFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

StatusOr<std::vector<std::string>> WriteServingFiles(const scheduler::ModelConfig& config,
                                                     const ServingSources& sources,
                                                     const std::string& dir) {
  std::vector<std::string> written;
  const fs::path out(dir);
  const fs::path gen = fs::path(sources.model_dir) / kGenerationConfigFile;
  std::string gen_text;
  if (!sources.model_dir.empty() && IsFile(gen)) {
    SKRULL_ASSIGN_OR_RETURN(gen_text, ReadFileToString(gen.string()));
  } else {
    gen_text = scheduler::ToHfGenerationConfigJson(config);
  }
  SKRULL_RETURN_IF_ERROR(WriteFileAtomically((out / kGenerationConfigFile).string(), gen_text));
  written.push_back(kGenerationConfigFile);

  // The tokenizer's folder wins; the model's fills what it lacks.
  for (const std::string& folder : {FolderOf(sources.tokenizer), sources.model_dir}) {
    if (folder.empty()) continue;
    for (const char* name : kTokenizerFiles) {
      const fs::path from = fs::path(folder) / name;
      if (!IsFile(from) || IsFile(out / name)) continue;
      if (!sources.chat_template.empty() && std::string(name) == "chat_template.jinja") continue;
      SKRULL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(from.string()));
      if (!sources.chat_template.empty() && std::string(name) == "tokenizer_config.json") {
        nlohmann::json j;
        try {
          j = nlohmann::json::parse(text);
        } catch (const nlohmann::json::parse_error& e) {
          return InvalidArgumentError(from.string() + ": not valid JSON: " + e.what());
        }
        j["chat_template"] = sources.chat_template;
        text = j.dump(2) + "\n";
      }
      SKRULL_RETURN_IF_ERROR(WriteFileAtomically((out / name).string(), text));
      written.push_back(name);
    }
  }
  return written;
}

}  // namespace skrull::train

// StyleGAN's dataset.json labels convention, in ZIP archives and image folders:
//   {"labels": [["00000/img00000000.png", 6], ["00000/img00000001.png", 9], ...]}
// Names are paths relative to the dataset's root with '/' separators; a null "labels" (or every
// label null) means the dataset is unlabelled. Only integer class labels are read (StyleGAN also
// allows float vectors, which Gantry's conditional networks do not take).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gantry::data {

inline constexpr const char* kDatasetJsonName = "dataset.json";

// The label of each of `members` (relative names) from the text of a dataset.json; nullopt when
// the dataset is unlabelled. Errors name `where` (e.g. "archive faces.zip, member dataset.json"),
// the entry and what was expected: invalid JSON, a label for a name that is not one of the
// members, a duplicate, a label that is not a non-negative integer, or a member without a label
// when others have one.
std::optional<std::vector<int64_t>> labels_from_dataset_json(std::string_view text,
                                                             const std::vector<std::string>& members,
                                                             const std::string& where);

// The dataset.json text for `members` with `labels` (same length), or with "labels": null.
std::string dataset_json_text(const std::vector<std::string>& members,
                              const std::optional<std::vector<int64_t>>& labels);

// Class sub-folder labels for relative member names, as torchvision's ImageFolder: the class of
// "cats/x/1.png" is "cats", classes are sorted and a label is its class's index. Empty classes and
// labels when every member is at the top level; members both at the top level and in sub-folders
// are an error naming `where` and one top-level member.
struct ClassFolders {
  std::vector<std::string> classes;
  std::vector<int64_t> labels;  // per member; empty when classes is
};
ClassFolders class_folders_of(const std::vector<std::string>& members, const std::string& where);

}  // namespace gantry::data

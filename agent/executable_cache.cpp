#include "executable_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "file_id.h"

namespace kiln::agent {

Result<std::shared_ptr<const ExecutableEntry>> ExecutableCache::Identify(const std::string& open_path,
                                                                         const std::string& maps_path) {
  using R = Result<std::shared_ptr<const ExecutableEntry>>;
  int fd = open(open_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return R::Error(open_path + ": " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    close(fd);
    return R::Error(open_path + ": fstat: " + std::strerror(errno));
  }
  Key key{st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec};
  if (auto it = entries_.find(key); it != entries_.end()) {
    close(fd);
    it->second->open_path = open_path;
    return std::shared_ptr<const ExecutableEntry>(it->second);
  }
  auto htl = ComputeHtlHash(fd);
  if (!htl) {
    close(fd);
    return R::Error(open_path + ": " + htl.error());
  }
  auto entry = std::make_shared<ExecutableEntry>();
  auto file = std::make_shared<ExecutableFile>();
  file->path = maps_path;
  std::size_t slash = maps_path.rfind('/');
  file->file_name = slash == std::string::npos ? maps_path : maps_path.substr(slash + 1);
  file->htlhash = std::move(htl).value();
  if (auto elf = ReadElfInfo(fd, open_path); elf) {
    file->gnu_build_id = elf->gnu_build_id;
    entry->elf = std::move(elf).value();
  }
  close(fd);
  entry->file = std::move(file);
  entry->open_path = open_path;
  entries_.emplace(key, entry);
  return std::shared_ptr<const ExecutableEntry>(entry);
}

void ExecutableCache::Sweep() {
  for (auto it = entries_.begin(); it != entries_.end();) {
    // Only the cache holds the entry and the file: no Mapping uses it.
    if (it->second.use_count() == 1 && it->second->file.use_count() == 1)
      it = entries_.erase(it);
    else
      ++it;
  }
}

}  // namespace kiln::agent

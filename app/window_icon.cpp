#include "app/window_icon.h"

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include <vector>

// stb_image from Debian's libstb-dev (Homebrew has no stb library), private
// to this file like stb_image_write in gui_screenshot.cpp.
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#include <stb/stb_image.h>

// From kiln_embed_files (app/CMakeLists.txt).
extern const unsigned char kIcon32[], kIcon48[], kIcon64[], kIcon128[], kIcon256[];
extern const unsigned long kIcon32_size, kIcon48_size, kIcon64_size, kIcon128_size, kIcon256_size;

namespace kiln::app {

bool SetWindowIcon(GLFWwindow* window) {
  const struct {
    const unsigned char* png;
    unsigned long size;
  } pngs[] = {{kIcon32, kIcon32_size},
              {kIcon48, kIcon48_size},
              {kIcon64, kIcon64_size},
              {kIcon128, kIcon128_size},
              {kIcon256, kIcon256_size}};
  std::vector<GLFWimage> images;
  std::vector<stbi_uc*> pixels;
  bool ok = true;
  for (const auto& png : pngs) {
    int w = 0, h = 0, channels = 0;
    stbi_uc* data = stbi_load_from_memory(png.png, static_cast<int>(png.size), &w, &h, &channels, 4);
    if (!data) {
      ok = false;
      continue;
    }
    pixels.push_back(data);
    images.push_back(GLFWimage{w, h, data});
  }
  // The window manager picks the size it needs from the set.
  if (!images.empty()) glfwSetWindowIcon(window, static_cast<int>(images.size()), images.data());
  for (stbi_uc* p : pixels) stbi_image_free(p);
  return ok;
}

}  // namespace kiln::app

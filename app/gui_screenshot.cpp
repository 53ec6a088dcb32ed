#include "app/gui_screenshot.h"

#include <cerrno>
#include <cstring>
#include <vector>

// The GL entry points come from the ImGui OpenGL3 backend's own loader
// (initialized by ImGui_ImplOpenGL3_Init), so kiln links no GL library.
#include <backends/imgui_impl_opengl3_loader.h>

// stb_image_write comes from Debian's libstb-dev. STATIC keeps its
// functions private to this file so they cannot clash with libstb.so,
// which ImGui already links for stb_truetype.
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

namespace kiln::app {

std::vector<unsigned char> ReadFramebufferRgba(int width, int height) {
  if (width <= 0 || height <= 0) return {};
  const size_t row = static_cast<size_t>(width) * 4;
  std::vector<unsigned char> pixels(row * height);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  // GL's origin is bottom-left, PNG's top-left. Flipping here rather than
  // with stbi_flip_vertically_on_write keeps stb's global flag out of it,
  // so encoding can run on any thread.
  std::vector<unsigned char> tmp(row);
  for (int y = 0; y < height / 2; ++y) {
    unsigned char* a = pixels.data() + row * y;
    unsigned char* b = pixels.data() + row * (height - 1 - y);
    std::memcpy(tmp.data(), a, row);
    std::memcpy(a, b, row);
    std::memcpy(b, tmp.data(), row);
  }
  // Opaque: the window has no meaningful alpha.
  for (size_t i = 3; i < pixels.size(); i += 4) pixels[i] = 255;
  return pixels;
}

bool WriteRgbaPng(const std::string& path, int width, int height, const std::vector<unsigned char>& rgba,
                  std::string* error) {
  if (width <= 0 || height <= 0 || rgba.size() != static_cast<size_t>(width) * height * 4) {
    *error = "empty framebuffer";
    return false;
  }
  if (!stbi_write_png(path.c_str(), width, height, 4, rgba.data(), width * 4)) {
    *error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

bool WriteFramebufferPng(const std::string& path, int width, int height, std::string* error) {
  return WriteRgbaPng(path, width, height, ReadFramebufferRgba(width, height), error);
}

}  // namespace kiln::app

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

bool WriteFramebufferPng(const std::string& path, int width, int height, std::string* error) {
  if (width <= 0 || height <= 0) {
    *error = "empty framebuffer";
    return false;
  }
  std::vector<unsigned char> pixels(static_cast<size_t>(width) * height * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  // Opaque: the window has no meaningful alpha.
  for (size_t i = 3; i < pixels.size(); i += 4) pixels[i] = 255;
  stbi_flip_vertically_on_write(1);  // GL's origin is bottom-left, PNG's top-left
  if (!stbi_write_png(path.c_str(), width, height, 4, pixels.data(), width * 4)) {
    *error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace kiln::app

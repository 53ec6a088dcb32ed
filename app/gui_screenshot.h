// Reads the current OpenGL framebuffer and writes it as a PNG, for
// `kiln --screenshot`. Call on the UI thread with the GL context current,
// after rendering and before swapping buffers.
#pragma once

#include <string>

namespace kiln::app {

// Returns false and fills *error (naming the file) when it cannot write.
[[nodiscard]] bool WriteFramebufferPng(const std::string& path, int width, int height, std::string* error);

}  // namespace kiln::app
